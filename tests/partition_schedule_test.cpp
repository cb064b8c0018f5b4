// Schedule validation: the library's validate(), and the CLI's TOML reader
// (`doorbell partition check`), which must name the line of every problem
// and exit 2.
#include <sys/wait.h>
#include <unistd.h>

#include <array>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <string>

#include "doorbell/partition.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

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

// --- the CLI's TOML reader -----------------------------------------------------

const std::string kCli = std::string(DOORBELL_BINARY_DIR) + "/doorbell";

struct Outcome {
  int exit_code = -1;
  std::string output;
};

Outcome check(const std::string& toml) {
  char path[] = "/tmp/doorbell-schedule-XXXXXX";
  const int fd = ::mkstemp(path);
  if (fd < 0) return {};
  ::close(fd);
  std::ofstream(path) << toml;
  const std::string command = kCli + " partition check " + path + " 2>&1";
  Outcome outcome;
  FILE* pipe = ::popen(command.c_str(), "r");
  std::array<char, 512> buffer;
  while (pipe && std::fgets(buffer.data(), buffer.size(), pipe)) outcome.output += buffer.data();
  const int status = pipe ? ::pclose(pipe) : -1;
  outcome.exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  ::unlink(path);
  return outcome;
}

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

class PartitionScheduleFile : public ::testing::Test {
 protected:
  void SetUp() override {
    if (!std::filesystem::exists(kCli)) GTEST_SKIP() << "no CLI built (DOORBELL_BUILD_LAB=OFF)";
  }
};

std::string replace(std::string text, const std::string& from, const std::string& to) {
  const auto at = text.find(from);
  if (at != std::string::npos) text.replace(at, from.size(), to);
  return text;
}

TEST_F(PartitionScheduleFile, Valid_ExitsZero) {
  const Outcome o = check(kValid);
  EXPECT_EQ(o.exit_code, 0) << o.output;
  EXPECT_THAT(o.output, HasSubstr("2 partitions, 2 windows"));
}

TEST_F(PartitionScheduleFile, SyntaxError_NamesLine) {
  const Outcome o = check(replace(kValid, "offset_ms = 10", "offset_ms = = 10"));
  EXPECT_EQ(o.exit_code, 2);
  EXPECT_THAT(o.output, HasSubstr(":19:"));
}

TEST_F(PartitionScheduleFile, Overlap_NamesLine) {
  const Outcome o = check(replace(kValid, "offset_ms = 10", "offset_ms = 9"));
  EXPECT_EQ(o.exit_code, 2);
  EXPECT_THAT(o.output, HasSubstr(":17: window of 'B'"));
  EXPECT_THAT(o.output, HasSubstr("overlaps"));
}

TEST_F(PartitionScheduleFile, PastFrameEnd_NamesLine) {
  const Outcome o = check(replace(kValid, "duration_ms = 10\n", "duration_ms = 30\n"));
  EXPECT_EQ(o.exit_code, 2);
  EXPECT_THAT(o.output, HasSubstr(":12:"));
  EXPECT_THAT(o.output, HasSubstr("past the end"));
}

TEST_F(PartitionScheduleFile, UnknownPartition_NamesLine) {
  const Outcome o = check(replace(kValid, "partition = \"B\"", "partition = \"X\""));
  EXPECT_EQ(o.exit_code, 2);
  EXPECT_THAT(o.output, HasSubstr(":17: window names unknown partition 'X'"));
}

TEST_F(PartitionScheduleFile, MissingCommand_NamesLine) {
  const Outcome o = check(replace(kValid, "command = \"true\"\n", ""));
  EXPECT_EQ(o.exit_code, 2);
  EXPECT_THAT(o.output, HasSubstr(":8: partition 'B' has no command"));
}

TEST_F(PartitionScheduleFile, ZeroDuration_NamesLine) {
  const Outcome o = check(replace(kValid, "duration_ms = 10\n", "duration_ms = 0\n"));
  EXPECT_EQ(o.exit_code, 2);
  EXPECT_THAT(o.output, HasSubstr(":12: window duration must be longer than zero"));
}

TEST_F(PartitionScheduleFile, UnrepresentableDurations_NameLine) {
  Outcome o = check(replace(kValid, "duration_ms = 10\n", "duration_ms = 0.0000001\n"));
  EXPECT_EQ(o.exit_code, 2);
  EXPECT_THAT(o.output, HasSubstr(":15: duration_ms = "));
  EXPECT_THAT(o.output, HasSubstr("whole number of nanoseconds"));
  o = check(replace(kValid, "major_frame_ms = 20", "major_frame_ms = 1e300"));
  EXPECT_EQ(o.exit_code, 2);
  EXPECT_THAT(o.output, HasSubstr(":1: major_frame_ms"));
  EXPECT_THAT(o.output, HasSubstr("not representable"));
  o = check(replace(kValid, "offset_ms = 0", "offset_ms = \"soon\""));
  EXPECT_EQ(o.exit_code, 2);
  EXPECT_THAT(o.output, HasSubstr(":14: offset_ms must be a number of milliseconds"));
}

TEST_F(PartitionScheduleFile, UnknownKeyAndMethod_NameLine) {
  Outcome o = check(replace(kValid, "method = \"sigstop-all-threads\"", "mehtod = \"sigstop\""));
  EXPECT_EQ(o.exit_code, 2);
  EXPECT_THAT(o.output, HasSubstr(":2: unknown key 'mehtod'"));
  o = check(replace(kValid, "sigstop-all-threads", "sigkill"));
  EXPECT_EQ(o.exit_code, 2);
  EXPECT_THAT(o.output, HasSubstr(":2: unknown method 'sigkill'"));
}

TEST_F(PartitionScheduleFile, MissingFile_ExitsTwo) {
  const std::string command = kCli + " partition check /nonexistent/schedule.toml 2>/dev/null";
  const int status = std::system(command.c_str());
  EXPECT_TRUE(WIFEXITED(status));
  EXPECT_EQ(WEXITSTATUS(status), 2);
}

TEST_F(PartitionScheduleFile, ShippedExamples_AreValid) {
  for (const auto& entry : std::filesystem::directory_iterator(std::string(DOORBELL_SOURCE_DIR) +
                                                               "/examples/schedules")) {
    const std::string command = kCli + " partition check " + entry.path().string() + " >/dev/null";
    const int status = std::system(command.c_str());
    EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0) << entry.path();
  }
}

}  // namespace
}  // namespace doorbell::partition
