// Schedule validation: the library's validate(); the schedule file reader
// (lab/partition/schedule_file.h), which must name the file and line of every
// problem; and `doorbell partition check`, which prints them and exits 2.
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <string>
#include <string_view>

#include "doorbell/partition.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#ifndef DOORBELL_NO_CLI
#include "lab/partition/schedule_file.h"
#include "tests/support/run_program.h"
#endif

namespace doorbell::partition {
namespace {

using ::testing::HasSubstr;

Schedule valid() {
  Schedule s;
  s.major_frame_ns = 20'000'000;
  s.partitions.push_back({"A", {"true"}, {}, {}, {}, 10});
  s.partitions.push_back({"B", {"true"}, {}, {}, {}, 14});
  s.windows.push_back({"B", 10'000'000, 10'000'000, 22});
  s.windows.push_back({"A", 0, 10'000'000, 18});
  return s;
}

int error_line(Schedule s, std::string* message = nullptr) {
  try {
    validate(s);
  } catch (const ScheduleError& e) {
    if (message) *message = e.what();
    return e.line();
  }
  return -1;
}

TEST(PartitionSchedule, Valid_SortsWindowsAndIndexesPartitions) {
  Schedule s = valid();
  validate(s);
  ASSERT_EQ(s.windows.size(), 2u);
  EXPECT_EQ(s.windows[0].partition, "A");
  EXPECT_EQ(s.windows[0].partition_index, 0u);
  EXPECT_EQ(s.windows[1].partition_index, 1u);
}

TEST(PartitionSchedule, OverlappingWindows_NameTheLaterLine) {
  Schedule s = valid();
  s.windows[0].offset_ns = 9'000'000;  // B at 9 ms overlaps A [0, 10)
  s.windows[0].duration_ns = 5'000'000;
  std::string message;
  EXPECT_EQ(error_line(s, &message), 22);
  EXPECT_THAT(message, HasSubstr("overlaps"));
  EXPECT_THAT(message, HasSubstr("line 18"));
}

TEST(PartitionSchedule, WindowPastFrameEnd) {
  Schedule s = valid();
  s.windows[0].duration_ns = 10'000'001;
  std::string message;
  EXPECT_EQ(error_line(s, &message), 22);
  EXPECT_THAT(message, HasSubstr("past the end of the major frame"));
}

TEST(PartitionSchedule, UnknownPartition) {
  Schedule s = valid();
  s.windows[0].partition = "C";
  std::string message;
  EXPECT_EQ(error_line(s, &message), 22);
  EXPECT_THAT(message, HasSubstr("unknown partition 'C'"));
}

TEST(PartitionSchedule, MissingCommand) {
  Schedule s = valid();
  s.partitions[1].command.clear();
  std::string message;
  EXPECT_EQ(error_line(s, &message), 14);
  EXPECT_THAT(message, HasSubstr("no command"));
}

TEST(PartitionSchedule, ZeroDurationAndZeroFrame) {
  Schedule s = valid();
  s.windows[1].duration_ns = 0;
  EXPECT_EQ(error_line(s), 18);
  Schedule f = valid();
  f.major_frame_ns = 0;
  f.major_frame_line = 3;
  EXPECT_EQ(error_line(f), 3);
}

TEST(PartitionSchedule, TouchingWindowsOfOnePartition_IncludingAcrossTheFrame) {
  Schedule s = valid();
  s.windows[0].partition = "A";  // A [0,10) and A [10,20): merge them
  std::string message;
  EXPECT_EQ(error_line(s, &message), 22);
  EXPECT_THAT(message, HasSubstr("merge"));
  Schedule wrap = valid();
  wrap.partitions.push_back({"C", {"true"}, {}, {}, {}, 30});
  wrap.windows = {{"A", 0, 5'000'000, 40},
                  {"C", 5'000'000, 5'000'000, 41},
                  {"B", 10'000'000, 5'000'000, 42},
                  {"A", 15'000'000, 5'000'000, 43}};
  EXPECT_EQ(error_line(wrap), 40);
}

// Issue 36: one partition owning the whole frame was refused as "windows
// ... at lines 6 and 6 touch": a window does not touch itself.
TEST(PartitionSchedule, OneWindowOwningTheWholeFrame_Accepted) {
  Schedule s;
  s.major_frame_ns = 20'000'000;
  s.partitions.push_back({"A", {"true"}, {}, {}, {}, 3});
  s.windows.push_back({"A", 0, 20'000'000, 6});
  std::string message;
  EXPECT_EQ(error_line(s, &message), -1) << message;
}

// Issue 36: env = { "BAD=NAME" = "x" } was accepted (the child's environment
// would have had "BAD=NAME=x", a variable BAD).
TEST(PartitionSchedule, EnvNameWithEqualsOrEmpty_Refused) {
  for (const char* name : {"BAD=NAME", ""}) {
    Schedule s = valid();
    s.partitions[1].environment = {{"GOOD", "1"}, {name, "x"}};
    std::string message;
    EXPECT_EQ(error_line(s, &message), 14) << name;
    EXPECT_THAT(message, HasSubstr("env name '" + std::string(name) + "'"));
  }
}

// Issue 36: a 20 us frame (error 2509%) was accepted without a word.
TEST(PartitionSchedule, WindowsShorterThanTheFloor_Warned) {
  Schedule s = valid();
  validate(s);
  EXPECT_TRUE(schedule_warnings(s).empty());
  Schedule tiny;
  tiny.major_frame_ns = 20'000;
  tiny.partitions.push_back({"A", {"true"}, {}, {}, {}, 3});
  tiny.partitions.push_back({"B", {"true"}, {}, {}, {}, 4});
  tiny.windows.push_back({"A", 0, 10'000, 7});
  tiny.windows.push_back({"B", 10'000, 10'000, 8});
  validate(tiny);
  const auto warnings = schedule_warnings(tiny);
  ASSERT_EQ(warnings.size(), 1u);
  EXPECT_THAT(warnings[0], HasSubstr("2 windows shorter than"));
  EXPECT_THAT(warnings[0], HasSubstr("line 7"));
}

TEST(PartitionSchedule, DuplicateAndBadNames_PartitionWithoutWindow) {
  Schedule dup = valid();
  dup.partitions[1].name = "A";
  EXPECT_EQ(error_line(dup), 14);
  Schedule bad = valid();
  bad.partitions[0].name = "a/b";
  EXPECT_EQ(error_line(bad), 10);
  Schedule idle = valid();
  idle.partitions.push_back({"C", {"true"}, {}, {}, {}, 30});
  std::string message;
  EXPECT_EQ(error_line(idle, &message), 30);
  EXPECT_THAT(message, HasSubstr("no window"));
}

// Issue 25, item 7: the guardian holds the pidfds of 256 partitions (and 260
// cgroups); it dropped the rest silently, so on a scheduler crash those
// partitions stayed stopped or running. A schedule with more partitions than
// the guardian holds is refused before anything starts.
TEST(PartitionSchedule, MorePartitionsThanTheGuardianHolds_Refused) {
  Schedule s;
  s.major_frame_ns = 1'000'000'000;
  const std::size_t count = kMaxPartitions + 1;
  for (std::size_t i = 0; i < count; ++i) {
    const std::string name = "p" + std::to_string(i);
    s.partitions.push_back({name, {"true"}, {}, {}, {}, static_cast<int>(i + 1)});
    s.windows.push_back({name, static_cast<int64_t>(i) * 1'000'000, 500'000, 0});
  }
  std::string message;
  EXPECT_EQ(error_line(s, &message), 0) << "accepted " << count << " partitions";
  EXPECT_THAT(message, HasSubstr(std::to_string(kMaxPartitions)));
  s.partitions.pop_back();
  s.windows.pop_back();
  EXPECT_EQ(error_line(s), -1) << "refused " << kMaxPartitions << " partitions";
}

// --- the schedule file reader ---------------------------------------------------
// Built with the lab (DOORBELL_BUILD_LAB=ON), as the CLI is; the build, not
// this test, decides whether they exist.
#ifndef DOORBELL_NO_CLI

using lab::load_schedule_file;
using lab::parse_schedule_toml;
using lab::ScheduleFileError;

const char* kValid = R"(major_frame_ms = 20
method = "sigstop-all-threads"

[[partition]]
name = "A"
command = ["true"]

[[partition]]
name = "B"
command = "true"

[[window]]
partition = "A"
offset_ms = 0
duration_ms = 10

[[window]]
partition = "B"
offset_ms = 10
duration_ms = 10
)";

// The text with the first `from` replaced by `to`; `from` must occur.
std::string replace(std::string text, const std::string& from, const std::string& to) {
  const auto at = text.find(from);
  if (at == std::string::npos) throw std::logic_error("test text has no '" + from + "'");
  text.replace(at, from.size(), to);
  return text;
}

// Parses `text` as "s.toml" and returns the error it must raise.
ScheduleFileError error_of(const std::string& text) {
  try {
    parse_schedule_toml(text, "s.toml");
  } catch (const ScheduleFileError& e) {
    return e;
  }
  throw std::logic_error("no ScheduleFileError for:\n" + text);
}

// Expects "s.toml:LINE: ..." containing `message`.
void expect_error(const std::string& text, int line, const std::string& message) {
  SCOPED_TRACE(text);
  const ScheduleFileError e = error_of(text);
  EXPECT_EQ(e.file(), "s.toml");
  EXPECT_EQ(e.line(), line) << e.what();
  EXPECT_THAT(e.message(), HasSubstr(message));
  EXPECT_EQ(std::string(e.what()), "s.toml:" + std::to_string(line) + ": " + e.message());
}

TEST(ScheduleFile, Valid_ParsedWithLines) {
  const Schedule s = parse_schedule_toml(kValid, "s.toml");
  EXPECT_EQ(s.major_frame_ns, 20'000'000);
  EXPECT_EQ(s.major_frame_line, 1);
  EXPECT_EQ(s.method, SuspendMethod::sigstop_all_threads);
  ASSERT_EQ(s.partitions.size(), 2u);
  EXPECT_EQ(s.partitions[0].name, "A");
  EXPECT_EQ(s.partitions[0].command, std::vector<std::string>{"true"});
  EXPECT_EQ(s.partitions[0].line, 4);
  EXPECT_EQ(s.partitions[1].command, std::vector<std::string>{"true"});  // a string: argv[0]
  EXPECT_EQ(s.partitions[1].line, 8);
  ASSERT_EQ(s.windows.size(), 2u);
  EXPECT_EQ(s.windows[1].partition, "B");
  EXPECT_EQ(s.windows[1].offset_ns, 10'000'000);
  EXPECT_EQ(s.windows[1].duration_ns, 10'000'000);
  EXPECT_EQ(s.windows[1].line, 17);
  EXPECT_EQ(s.windows[1].partition_index, 1u);  // validated
}

TEST(ScheduleFile, EveryOptionalSetting) {
  const Schedule s = parse_schedule_toml(R"(major_frame_ms = 2.5
method = "freezer"
freezer = "v1"
on_partition_exit = "stop"
on_scheduler_exit = "resume"
overrun_threshold_ms = 0.25
[[partition]]
name = "A"
command = ["prog", "--flag", "x"]
cpus = [0, 3]
nice = -5
env = { ONE = "1", TWO = "2" }
[[window]]
partition = "A"
offset_ms = 0.5
duration_ms = 1.000001
)",
                                         "s.toml");
  EXPECT_EQ(s.major_frame_ns, 2'500'000);
  EXPECT_EQ(s.method, SuspendMethod::freezer);
  EXPECT_EQ(s.freezer.preference, FreezerPreference::v1_only);
  EXPECT_EQ(s.on_partition_exit, OnPartitionExit::stop_schedule);
  EXPECT_EQ(s.on_scheduler_exit, OnSchedulerExit::resume);
  EXPECT_EQ(s.overrun_threshold_ns, 250'000);
  ASSERT_EQ(s.partitions.size(), 1u);
  const PartitionSpec& p = s.partitions[0];
  EXPECT_EQ(p.command, (std::vector<std::string>{"prog", "--flag", "x"}));
  EXPECT_EQ(p.cpus, (std::vector<int>{0, 3}));
  EXPECT_EQ(p.nice, -5);
  EXPECT_EQ(p.environment,
            (std::vector<std::pair<std::string, std::string>>{{"ONE", "1"}, {"TWO", "2"}}));
  ASSERT_EQ(s.windows.size(), 1u);
  EXPECT_EQ(s.windows[0].offset_ns, 500'000);
  EXPECT_EQ(s.windows[0].duration_ns, 1'000'001);
}

TEST(ScheduleFile, Defaults) {
  const Schedule s =
      parse_schedule_toml(replace(kValid, "method = \"sigstop-all-threads\"\n", ""), "s.toml");
  const Schedule defaults;
  EXPECT_EQ(s.method, defaults.method);
  EXPECT_EQ(s.freezer.preference, FreezerPreference::automatic);
  EXPECT_EQ(s.on_partition_exit, OnPartitionExit::continue_schedule);
  EXPECT_EQ(s.on_scheduler_exit, OnSchedulerExit::kill);
  EXPECT_EQ(s.overrun_threshold_ns, defaults.overrun_threshold_ns);
  EXPECT_EQ(s.max_stop_lead_ns, 0);  // no stop lead
  EXPECT_TRUE(s.partitions[0].cpus.empty());
  EXPECT_FALSE(s.partitions[0].nice.has_value());
}

TEST(ScheduleFile, MaxStopLead_WholeMicrosecondsInRange) {
  const std::string with = "method = \"sigstop-all-threads\"\nmax_stop_lead_us = 250\n";
  const Schedule s =
      parse_schedule_toml(replace(kValid, "method = \"sigstop-all-threads\"\n", with), "s.toml");
  EXPECT_EQ(s.max_stop_lead_ns, 250'000);
  auto set = [](const std::string& value) {
    return replace(kValid, "method = \"sigstop-all-threads\"\n",
                   "method = \"sigstop-all-threads\"\nmax_stop_lead_us = " + value + "\n");
  };
  expect_error(set("-1"), 3, "max_stop_lead_us = -1 is outside 0..1000000");
  expect_error(set("2000000"), 3, "is outside 0..1000000");
  expect_error(set("1.5"), 3, "max_stop_lead_us must be a whole number of microseconds");
  expect_error(set("\"10\""), 3, "max_stop_lead_us must be a whole number of microseconds");
}

// The health monitor's table (partition_health.h): [health] for the
// schedule, [partition.health] per partition.
TEST(ScheduleFile, HealthTable_ScheduleAndPartitionEntries) {
  std::string text = replace(kValid, "[[partition]]\nname = \"A\"",
                             "[health]\nprocess_died = \"restart\"\noverrun = \"log\"\n"
                             "heartbeat_frames = 5\n\n[[partition]]\nname = \"A\"");
  text = replace(text, "command = \"true\"\n",
                 "command = \"true\"\n[partition.health]\napplication_error = "
                 "\"stop_partition\"\nheartbeat_frames = 0\n");
  const Schedule s = parse_schedule_toml(text, "s.toml");
  using partition::HealthAction;
  using partition::HealthError;
  EXPECT_EQ(partition::health_action(s, 0, HealthError::process_died), HealthAction::restart);
  EXPECT_EQ(partition::health_action(s, 0, HealthError::overrun), HealthAction::log);
  EXPECT_EQ(partition::health_action(s, 0, HealthError::application_error), HealthAction::log);
  EXPECT_EQ(partition::health_action(s, 1, HealthError::application_error),
            HealthAction::stop_partition);
  EXPECT_EQ(partition::health_action(s, 1, HealthError::process_died), HealthAction::restart);
  EXPECT_EQ(partition::heartbeat_frames(s, 0), 5);
  EXPECT_EQ(partition::heartbeat_frames(s, 1), 0);
}

TEST(ScheduleFile, HealthTable_Defaults_FollowOnPartitionExit) {
  using partition::HealthAction;
  using partition::HealthError;
  Schedule s = parse_schedule_toml(kValid, "s.toml");
  EXPECT_EQ(partition::health_action(s, 0, HealthError::process_died), HealthAction::log);
  s = parse_schedule_toml(replace(kValid, "method =", "on_partition_exit = \"stop\"\nmethod ="),
                          "s.toml");
  EXPECT_EQ(partition::health_action(s, 0, HealthError::process_died), HealthAction::stop_schedule);
}

TEST(ScheduleFile, HealthTable_BadNamesAndValues_NameTheLine) {
  const std::string at = "[[partition]]\nname = \"A\"";
  expect_error(replace(kValid, at, "[health]\nprocess_dead = \"log\"\n" + at), 5,
               "unknown error 'process_dead' in [health] (process_died, overrun");
  expect_error(replace(kValid, at, "[health]\noverrun = \"reboot\"\n" + at), 5,
               "unknown action 'reboot' for overrun in [health] (ignore, log, restart, "
               "stop_partition, stop_schedule)");
  expect_error(replace(kValid, at, "[health]\noverrun = 3\n" + at), 5, "overrun must be a string");
  expect_error(replace(kValid, at, "[health]\nheartbeat_frames = -2\n" + at), 5,
               "heartbeat_frames in [health] must be a whole number 0..");
  expect_error(replace(kValid, at, "health = \"log\"\n" + at), 4,
               "[health] must be a table of error = \"action\"");
  expect_error(replace(kValid, "command = [\"true\"]",
                       "command = [\"true\"]\nhealth = { no_heartbeat = \"panic\" }"),
               7, "unknown action 'panic' for no_heartbeat in partition 'A' health");
}

TEST(ScheduleFile, SyntaxError_NamesLine) {
  const ScheduleFileError e = error_of(replace(kValid, "offset_ms = 10", "offset_ms = = 10"));
  EXPECT_EQ(e.line(), 19);
  EXPECT_THAT(e.what(), HasSubstr("s.toml:19: "));
}

TEST(ScheduleFile, ValidateErrors_NameTheirLines) {
  expect_error(replace(kValid, "offset_ms = 10", "offset_ms = 9"), 17, "window of 'B'");
  expect_error(replace(kValid, "offset_ms = 10", "offset_ms = 9"), 17, "overlaps");
  expect_error(replace(kValid, "duration_ms = 10\n", "duration_ms = 30\n"), 12, "past the end");
  expect_error(replace(kValid, "partition = \"B\"", "partition = \"X\""), 17,
               "window names unknown partition 'X'");
  expect_error(replace(kValid, "duration_ms = 10\n", "duration_ms = 0\n"), 12,
               "window duration must be longer than zero");
}

TEST(ScheduleFile, Durations_MillisecondsAsWholeNanoseconds) {
  expect_error(replace(kValid, "duration_ms = 10\n", "duration_ms = 0.0000001\n"), 15,
               "duration_ms = 1e-07 ms is not a whole number of nanoseconds");
  expect_error(replace(kValid, "major_frame_ms = 20", "major_frame_ms = 1e300"), 1,
               "major_frame_ms = 1e+300 ms is not representable in 64-bit nanoseconds");
  expect_error(replace(kValid, "major_frame_ms = 20", "major_frame_ms = nan"), 1,
               "not representable");
  expect_error(replace(kValid, "offset_ms = 0", "offset_ms = \"soon\""), 14,
               "offset_ms must be a number of milliseconds");
  expect_error(
      replace(kValid, "major_frame_ms = 20", "overrun_threshold_ms = true\nmajor_frame_ms = 20"), 1,
      "overrun_threshold_ms must be a number of milliseconds");
  expect_error(replace(kValid, "major_frame_ms = 20\n", ""), 1, "major_frame_ms is missing");
}

TEST(ScheduleFile, UnknownKeys_NameLine) {
  expect_error(replace(kValid, "method = \"sigstop-all-threads\"", "mehtod = \"sigstop\""), 2,
               "unknown key 'mehtod' in the schedule");
  expect_error(replace(kValid, "name = \"A\"", "name = \"A\"\ncommnd = \"x\""), 6,
               "unknown key 'commnd' in a [[partition]]");
  expect_error(replace(kValid, "offset_ms = 0", "offset_ms = 0\nlength_ms = 3"), 15,
               "unknown key 'length_ms' in a [[window]]");
}

TEST(ScheduleFile, ScheduleSettings_BadValuesNameLine) {
  expect_error(replace(kValid, "sigstop-all-threads", "sigkill"), 2,
               "unknown method 'sigkill' (sigstop, sigstop-all-threads, freezer)");
  expect_error(replace(kValid, "\"sigstop-all-threads\"", "3"), 2, "method must be a string");
  expect_error(replace(kValid, "major_frame_ms = 20", "major_frame_ms = 20\nfreezer = \"v3\""), 2,
               "freezer must be auto, v2 or v1, not 'v3'");
  expect_error(
      replace(kValid, "major_frame_ms = 20", "major_frame_ms = 20\non_partition_exit = \"halt\""),
      2, "on_partition_exit must be continue or stop");
  expect_error(
      replace(kValid, "major_frame_ms = 20", "major_frame_ms = 20\non_scheduler_exit = \"stop\""),
      2, "on_scheduler_exit must be kill or resume");
  expect_error("major_frame_ms = 20\npartition = 3\n", 2,
               "partition must be an array of tables ([[partition]])");
  expect_error("major_frame_ms = 20\nwindow = [1, 2]\n", 2,
               "window must be an array of tables ([[window]])");
}

TEST(ScheduleFile, PartitionErrors_NameLine) {
  expect_error(replace(kValid, "name = \"A\"\n", ""), 4, "partition has no name");
  expect_error(replace(kValid, "name = \"A\"", "name = 1"), 5, "name must be a string");
  expect_error(replace(kValid, "command = \"true\"\n", ""), 8, "partition 'B' has no command");
  expect_error(replace(kValid, "command = \"true\"", "command = []"), 8,
               "partition 'B' has no command");
  expect_error(replace(kValid, "command = \"true\"", "command = [\"\"]"), 8,
               "partition 'B' has no command");
  expect_error(replace(kValid, "command = [\"true\"]", "command = [\"true\", 2]"), 6,
               "command must be a string");
  expect_error(replace(kValid, "name = \"A\"", "name = \"A\"\ncpus = 1"), 6,
               "cpus must be an array of integers");
  expect_error(replace(kValid, "name = \"A\"", "name = \"A\"\ncpus = [0, \"1\"]"), 6,
               "cpus must be an array of integers");
  expect_error(replace(kValid, "name = \"A\"", "name = \"A\"\ncpus = [0, 1024]"), 6,
               "CPU 1024 is out of range");
  expect_error(replace(kValid, "name = \"A\"", "name = \"A\"\ncpus = [-1]"), 6,
               "CPU -1 is out of range");
  expect_error(replace(kValid, "name = \"A\"", "name = \"A\"\nnice = \"low\""), 6,
               "nice must be an integer -20..19");
  expect_error(replace(kValid, "name = \"A\"", "name = \"A\"\nenv = \"X=1\""), 6,
               "env must be a table of strings");
  expect_error(replace(kValid, "name = \"A\"", "name = \"A\"\nenv = { X = 1 }"), 6,
               "env value must be a string");
}

TEST(ScheduleFile, WindowErrors_NameLine) {
  expect_error(replace(kValid, "partition = \"A\"\n", ""), 12, "window names no partition");
  expect_error(replace(kValid, "partition = \"A\"", "partition = 1"), 13,
               "partition must be a string");
  expect_error(replace(kValid, "offset_ms = 0\n", ""), 12, "window has no offset_ms");
  expect_error(replace(kValid, "duration_ms = 10\n", ""), 12, "window has no duration_ms");
}

TEST(ScheduleFile, ErrorWithoutALine_NamesTheFileAlone) {
  // validate() has no single line for a schedule without partitions.
  const ScheduleFileError e = error_of("major_frame_ms = 20\n");
  EXPECT_EQ(e.line(), 0);
  EXPECT_STREQ(e.what(), "s.toml: the schedule has no partitions");
}

// A temporary file, removed at the end of the test.
struct TempFile {
  std::string path;
  explicit TempFile(const std::string& text) {
    char pattern[] = "/tmp/doorbell-schedule-XXXXXX";
    const int fd = ::mkstemp(pattern);
    if (fd < 0) throw std::runtime_error("mkstemp");
    ::close(fd);
    path = pattern;
    std::ofstream(path) << text;
  }
  ~TempFile() { ::unlink(path.c_str()); }
};

TEST(ScheduleFile, Load_ReadsTheFileAndNamesItInErrors) {
  const TempFile good(kValid);
  EXPECT_EQ(load_schedule_file(good.path).partitions.size(), 2u);
  const TempFile bad(replace(kValid, "offset_ms = 10", "offset_ms = 9"));
  try {
    load_schedule_file(bad.path);
    FAIL() << "expected ScheduleFileError";
  } catch (const ScheduleFileError& e) {
    EXPECT_EQ(e.file(), bad.path);
    EXPECT_THAT(e.what(), HasSubstr(bad.path + ":17: window of 'B'"));
  }
}

TEST(ScheduleFile, Load_MissingFile) {
  try {
    load_schedule_file("/nonexistent/schedule.toml");
    FAIL() << "expected ScheduleFileError";
  } catch (const ScheduleFileError& e) {
    EXPECT_STREQ(
        e.what(),
        "cannot read schedule file '/nonexistent/schedule.toml': No such file or directory");
  }
}

// Issue 35: [[channel]] tables (ports).
const char* kChannels = R"(
[[channel]]
name = "tm"
kind = "sampling"
source = "A.tm"
destinations = ["B.tm"]
message_size = 64
refresh_ms = 40

[[channel]]
name = "cmd"
kind = "queuing"
source = "B.cmd"
destinations = ["A.cmd"]
message_size = 32
depth = 16
)";

TEST(ScheduleFile, Channels_Parsed) {
  const Schedule s = parse_schedule_toml(std::string(kValid) + kChannels, "s.toml");
  ASSERT_EQ(s.channels.size(), 2u);
  EXPECT_EQ(s.channels[0].kind, PortKind::sampling);
  EXPECT_EQ(s.channels[0].source, "A.tm");
  EXPECT_EQ(s.channels[0].destinations, std::vector<std::string>{"B.tm"});
  EXPECT_EQ(s.channels[0].refresh_ns, 40'000'000);
  EXPECT_EQ(s.channels[0].line, 22);
  EXPECT_EQ(s.channels[1].kind, PortKind::queuing);
  EXPECT_EQ(s.channels[1].depth, 16u);
  EXPECT_EQ(s.channels[1].message_size, 32u);
}

TEST(ScheduleFile, Channels_BadOnesNamedWithTheirLine) {
  const std::string all = std::string(kValid) + kChannels;
  expect_error(replace(all, "source = \"A.tm\"", "source = \"X.tm\""), 22,
               "port 'X.tm' names unknown partition 'X'");
  expect_error(replace(all, "source = \"A.tm\"", "source = \"Atm\""), 22, "must be PARTITION.PORT");
  expect_error(replace(all, "message_size = 64", "message_size = 0"), 27,
               "message_size = 0 is outside 1..65536");
  expect_error(replace(all, "message_size = 64", "message_size = 65537"), 27,
               "message_size = 65537 is outside 1..65536");
  expect_error(replace(all, "depth = 16", "depth = 65537"), 36, "depth = 65537 is outside");
  expect_error(replace(all, "depth = 16", "depth = 0"), 36, "depth = 0 is outside");
  expect_error(replace(all, "refresh_ms = 40", "refresh_ms = 0"), 22,
               "refresh_ms must be longer than zero");
  expect_error(replace(all, "kind = \"sampling\"", "kind = \"mailbox\""), 24,
               "kind must be sampling or queuing");
  expect_error(replace(all, "name = \"cmd\"", "name = \"tm\""), 30,
               "channel 'tm' is defined twice");
  // A port that is a source and a destination (or used twice).
  expect_error(replace(all, "destinations = [\"A.cmd\"]", "destinations = [\"A.tm\"]"), 30,
               "port 'A.tm' is already used (line 22)");
  expect_error(replace(all, "destinations = [\"B.tm\"]", "destinations = [\"B.tm\", \"B.tm\"]"), 22,
               "port 'B.tm' is already used");
  expect_error(replace(all, "destinations = [\"B.tm\"]", "destinations = []"), 22,
               "has no destinations");
  expect_error(replace(all, "depth = 16", "depth = 16\nbogus = 1"), 37,
               "unknown key 'bogus' in a [[channel]]");
  expect_error(replace(all, "refresh_ms = 40", "refresh_ms = 40\ndepth = 3"), 29,
               "depth is for queuing channels");
  // The whole port memory is bounded: 64 destinations x 65536 x 64 KiB is not.
  std::string big = replace(all, "message_size = 32", "message_size = 65536");
  big = replace(big, "depth = 16", "depth = 8192");
  expect_error(big, 30, "MiB of shared memory");
}

TEST(ScheduleFile, ShippedExamples_AreValid) {
  int examples = 0;
  for (const auto& entry : std::filesystem::directory_iterator(std::string(DOORBELL_SOURCE_DIR) +
                                                               "/examples/schedules")) {
    ++examples;
    EXPECT_NO_THROW(load_schedule_file(entry.path().string())) << entry.path();
  }
  EXPECT_GT(examples, 0);
}

// --- `doorbell partition check`: what a user sees --------------------------------

TEST(PartitionCheckCli, Valid_ExitsZeroAndPrintsTheSchedule) {
  const TempFile file(kValid);
  const test::RunResult r = test::run_doorbell({"partition", "check", file.path});
  EXPECT_EQ(r.exit_code(), 0) << r.describe();
  EXPECT_THAT(r.out, HasSubstr(file.path + ": major frame 20 ms, method sigstop-all-threads, "
                                           "2 partitions, 2 windows"));
  EXPECT_THAT(r.out, HasSubstr("[    10.000,     20.000) ms  B"));
  EXPECT_THAT(r.out, HasSubstr("  health A: process_died=log overrun=ignore deadline_missed=log "
                               "application_error=log no_heartbeat=log heartbeat off"));
}

TEST(PartitionCheckCli, BadHealthAction_ExitsTwoNamingTheLine) {
  const TempFile file(replace(kValid, "[[partition]]\nname = \"A\"",
                              "[health]\nno_heartbeat = \"explode\"\n[[partition]]\nname = \"A\""));
  const test::RunResult r = test::run_doorbell({"partition", "check", file.path});
  EXPECT_EQ(r.exit_code(), 2) << r.describe();
  EXPECT_THAT(r.err, HasSubstr(file.path + ":5: unknown action 'explode' for no_heartbeat"));
  EXPECT_EQ(r.out, "");
}

TEST(PartitionCheckCli, BadFile_ExitsTwoNamingFileAndLineOnStderr) {
  const TempFile file(replace(kValid, "partition = \"B\"", "partition = \"X\""));
  const test::RunResult r = test::run_doorbell({"partition", "check", file.path});
  EXPECT_EQ(r.exit_code(), 2) << r.describe();
  EXPECT_THAT(r.err,
              HasSubstr("partition: " + file.path + ":17: window names unknown partition 'X'"));
  EXPECT_EQ(r.out, "");
}

// Issue 36: `check` warns about a frame that cannot be met, and still
// exits 0 (the schedule is valid).
TEST(PartitionCheckCli, ShortWindows_WarnOnStderr) {
  std::string text = replace(kValid, "major_frame_ms = 20", "major_frame_ms = 0.02");
  text = replace(text, "duration_ms = 10", "duration_ms = 0.01");
  text = replace(text, "offset_ms = 10", "offset_ms = 0.01");
  text = replace(text, "duration_ms = 10", "duration_ms = 0.01");
  const TempFile file(text);
  const test::RunResult r = test::run_doorbell({"partition", "check", file.path});
  EXPECT_EQ(r.exit_code(), 0) << r.describe();
  EXPECT_THAT(r.err, HasSubstr("warning: 2 windows shorter than"));
}

TEST(PartitionCheckCli, Channels_PrintedAndBadOnesExitTwo) {
  const TempFile good(std::string(kValid) + kChannels);
  test::RunResult r = test::run_doorbell({"partition", "check", good.path});
  EXPECT_EQ(r.exit_code(), 0) << r.describe();
  EXPECT_THAT(r.out, HasSubstr("2 channels, "));
  EXPECT_THAT(r.out, HasSubstr("tm: sampling A.tm -> B.tm, 64 bytes, refresh 40 ms"));
  EXPECT_THAT(r.out, HasSubstr("cmd: queuing B.cmd -> A.cmd, 16 x 32 bytes"));
  const TempFile bad(
      replace(std::string(kValid) + kChannels, "source = \"A.tm\"", "source = \"Q.tm\""));
  r = test::run_doorbell({"partition", "check", bad.path});
  EXPECT_EQ(r.exit_code(), 2) << r.describe();
  EXPECT_THAT(r.err, HasSubstr(bad.path + ":22: channel 'tm': port 'Q.tm' names unknown "
                                          "partition 'Q'"));
  EXPECT_EQ(r.out, "");
}

TEST(PartitionCheckCli, MissingFile_ExitsTwo) {
  const test::RunResult r =
      test::run_doorbell({"partition", "check", "/nonexistent/schedule.toml"});
  EXPECT_EQ(r.exit_code(), 2) << r.describe();
  EXPECT_THAT(r.err, HasSubstr("cannot read schedule file '/nonexistent/schedule.toml'"));
}

#endif  // DOORBELL_NO_CLI

}  // namespace
}  // namespace doorbell::partition
