// `doorbell partition` at the edges (issue 26): results never lost or
// silently wrong, bad values refused before anything runs, nothing left
// behind when the scheduler is SIGKILLed. Every run goes through
// tests/support/run_program.h with a timeout; partitions are
// tests/partition_progs/progress.cpp, whose progress file says whether
// (and that) they ran.
#include <sched.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <gtest/gtest.h>

#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "sys/tracefs.h"
#include "tests/partition_progs/progress.h"
#include "tests/support/run_program.h"

namespace {

namespace fs = std::filesystem;
using namespace std::chrono_literals;
using doorbell::test::run_doorbell;

std::string temp_dir() {
  char pattern[] = "/tmp/doorbell-partition-cli-XXXXXX";
  const char* dir = ::mkdtemp(pattern);
  if (dir == nullptr) std::abort();
  return dir;
}

// A schedule of two progress partitions, A then B, 10 ms each in a 20 ms
// frame; `extra` goes at the top (keys of the schedule).
std::string schedule(const std::string& dir, const std::string& extra = "",
                     const std::string& b_command = "") {
  const std::string path = dir + "/s.toml";
  std::ofstream out(path);
  out << extra << "major_frame_ms = 20\n"
      << "[[partition]]\nname = \"A\"\ncommand = [\"" DOORBELL_PARTITION_PROG "\", \"" << dir
      << "/A\", \"1\"]\n"
      << "[[partition]]\nname = \"B\"\ncommand = "
      << (b_command.empty() ? "[\"" DOORBELL_PARTITION_PROG "\", \"" + dir + "/B\", \"1\"]"
                            : b_command)
      << "\n"
      << "[[window]]\npartition = \"A\"\noffset_ms = 0\nduration_ms = 10\n"
      << "[[window]]\npartition = \"B\"\noffset_ms = 10\nduration_ms = 10\n";
  return path;
}

bool ran(const std::string& progress_file) {
  return ::access(progress_file.c_str(), F_OK) == 0;
}

// stderr is one line that names `option`.
void expect_one_line_naming(const doorbell::test::RunResult& r, const std::string& option) {
  std::string err = r.err;
  while (!err.empty() && err.back() == '\n') err.pop_back();
  EXPECT_EQ(err.find('\n'), std::string::npos) << "one line: " << r.err;
  EXPECT_NE(err.find(option), std::string::npos) << "names " << option << ": " << r.err;
}

// A bad --json path is refused before the schedule runs (it used to run the
// whole schedule, then say "cannot write" and lose the table).
TEST(PartitionRunCli, BadJsonPathIsRefusedBeforeAnythingRuns) {
  const std::string dir = temp_dir();
  const std::string s = schedule(dir);
  for (const std::string& path : {std::string("/nonexistent/dir/x.json"),
                                  std::string("/proc/x.json"), dir, std::string("")}) {
    const auto r =
        run_doorbell({"partition", "run", s, "--frames", "100", "--json", path}, {.timeout = 60s});
    EXPECT_EQ(r.exit_code(), 2) << path << ": " << r.describe();
    expect_one_line_naming(r, "--json");
    EXPECT_FALSE(ran(dir + "/A")) << path << ": the schedule ran";
  }
  fs::remove_all(dir);
}

// The JSON cannot be written at the end (its directory went away during
// the run): the summary is still printed, the failure said, exit 1.
TEST(PartitionRunCli, JsonWriteFailureKeepsTheSummary) {
  const std::string dir = temp_dir();
  const std::string s = schedule(dir);
  fs::create_directory(dir + "/out");
  auto cli = doorbell::test::start_doorbell(
      {"partition", "run", s, "--frames", "60", "--json", dir + "/out/r.json"}, {.timeout = 60s});
  for (int i = 0; i < 1000 && doorbell::test::read_progress(dir + "/A", false).count == 0; ++i)
    std::this_thread::sleep_for(10ms);
  fs::remove(dir + "/out");  // empty until the report is written
  const auto r = cli.finish();
  EXPECT_EQ(r.exit_code(), 1) << r.describe();
  EXPECT_NE(r.out.find("partition    windows"), std::string::npos) << r.out;
  EXPECT_NE(r.err.find("not written"), std::string::npos) << r.err;
  fs::remove_all(dir);
}

// Zero, NaN, infinity, huge and negative values: refused at once, naming
// the option, before any partition starts (--frames 0 and --duration 0/nan
// used to run until killed; --max-stop-lead-us -5 silently meant 0).
TEST(PartitionRunCli, ZeroNanInfHugeAndNegativeAreRefused) {
  const std::string dir = temp_dir();
  const std::string s = schedule(dir);
  const std::vector<std::pair<std::string, std::string>> cases = {
      {"--frames", "0"},
      {"--frames", "-1"},
      {"--frames", "9223372036854775808"},
      {"--duration", "0"},
      {"--duration", "nan"},
      {"--duration", "inf"},
      {"--duration", "1e300"},
      {"--duration", "-1"},
      {"--max-stop-lead-us", "-5"},
      {"--threshold-us", "nan"},
      {"--threshold-us", "-1"},
      {"--boundary-spin-us", "-1"},
      {"--max-handover-us", "1e18"},
      {"--method", "bogus"}};
  for (const auto& [option, value] : cases) {
    const auto r = run_doorbell({"partition", "run", s, option, value}, {.timeout = 20s});
    EXPECT_EQ(r.exit_code(), 2) << option << " " << value << ": " << r.describe();
    expect_one_line_naming(r, option);
  }
  EXPECT_FALSE(ran(dir + "/A")) << "a partition ran";
  fs::remove_all(dir);
}

// A duration shorter than one (huge) frame would run the whole frame.
TEST(PartitionRunCli, DurationShorterThanOneFrameIsRefused) {
  const std::string dir = temp_dir();
  const std::string path = dir + "/huge.toml";
  std::ofstream(path) << "major_frame_ms = 100000000000\n"
                      << "[[partition]]\nname = \"A\"\ncommand = [\"" DOORBELL_PARTITION_PROG
                         "\", \""
                      << dir << "/A\", \"1\"]\n"
                      << "[[window]]\npartition = \"A\"\noffset_ms = 0\nduration_ms = 10\n";
  const auto r = run_doorbell({"partition", "run", path, "--duration", "2"}, {.timeout = 20s});
  EXPECT_EQ(r.exit_code(), 2) << r.describe();
  expect_one_line_naming(r, "--duration");
  EXPECT_FALSE(ran(dir + "/A"));
  fs::remove_all(dir);
}

// on_partition_exit = "stop": B exits in its first window, the run ends
// early. That is a failure (exit 1, saying why), and A, which never had a
// window measured... here B's exit stops the run before A's second window:
// a partition without a measured window reads "not measured", never as
// zeros (a perfect result).
TEST(PartitionRunCli, RunEndedByAPartitionExitFails) {
  const std::string dir = temp_dir();
  // B first (offset 0) and exiting at once: A never runs.
  const std::string path = dir + "/s.toml";
  std::ofstream(path)
      << "major_frame_ms = 20\non_partition_exit = \"stop\"\n"
      << "[[partition]]\nname = \"A\"\ncommand = [\"" DOORBELL_PARTITION_PROG "\", \"" << dir
      << "/A\", \"1\"]\n"
      << "[[partition]]\nname = \"B\"\ncommand = [\"/bin/sh\", \"-c\", \"exit 3\"]\n"
      << "[[window]]\npartition = \"B\"\noffset_ms = 0\nduration_ms = 10\n"
      << "[[window]]\npartition = \"A\"\noffset_ms = 10\nduration_ms = 10\n";
  const auto r = run_doorbell(
      {"partition", "run", path, "--frames", "50", "--json", dir + "/r.json"}, {.timeout = 60s});
  EXPECT_EQ(r.exit_code(), 1) << r.describe();
  EXPECT_NE(r.err.find("partition B exited 3"), std::string::npos) << r.err;
  std::ifstream in(dir + "/r.json");
  std::stringstream text;
  text << in.rdbuf();
  const auto report = nlohmann::json::parse(text.str(), nullptr, false);
  ASSERT_TRUE(report.is_object()) << text.str();
  for (const auto& summary : report["summaries"]) {
    if (summary["windows"] != 0) continue;
    EXPECT_EQ(summary["measured"], false) << summary.dump();
    EXPECT_TRUE(summary["overrun_p99_ns"].is_null()) << summary.dump();
    EXPECT_TRUE(summary["error_percent"].is_null()) << summary.dump();
    EXPECT_NE(r.out.find(summary["partition"].get<std::string>() + "  "), std::string::npos);
  }
  EXPECT_NE(r.out.find("not measured"), std::string::npos) << r.out;
  fs::remove_all(dir);
}

// The health monitor (partition_health.h) in `partition run`: B kills itself
// in each of its windows and process_died = "restart" forks it again; each
// death is an event in the JSON and a "health:" line in the summary.
TEST(PartitionRunCli, HealthRestart_EventsInJsonAndSummary) {
  const std::string dir = temp_dir();
  const std::string path = schedule(dir, "", "[\"/bin/sh\", \"-c\", \"kill -9 $$\"]");
  std::stringstream text;
  text << std::ifstream(path).rdbuf();
  std::string toml = text.str();
  const std::string frame = "major_frame_ms = 20\n";
  toml.insert(toml.find(frame) + frame.size(), "[health]\nprocess_died = \"restart\"\n");
  std::ofstream(path) << toml;
  const auto r = run_doorbell(
      {"partition", "run", path, "--frames", "6", "--no-trace", "--json", dir + "/r.json"},
      {.timeout = 60s});
  EXPECT_EQ(r.exit_code(), 0) << r.describe();
  std::ifstream in(dir + "/r.json");
  const auto j = nlohmann::json::parse(in, nullptr, false);
  ASSERT_TRUE(j.is_object());
  const auto& health = j["health"];
  ASSERT_TRUE(health.is_object()) << j.dump();
  EXPECT_GE(health["counts"]["process_died"].get<int>(), 2) << health.dump();
  EXPECT_GE(health["restarts"].get<int>(), 2) << health.dump();
  ASSERT_FALSE(health["events"].empty());
  const auto& e = health["events"][0];
  EXPECT_EQ(e["partition"], "B");
  EXPECT_EQ(e["error"], "process_died");
  EXPECT_EQ(e["action"], "restart");
  EXPECT_NE(e["new_pid"], 0);
  EXPECT_NE(e["new_pid"], e["pid"]);
  EXPECT_EQ(health["tables"][1]["process_died"], "restart");
  EXPECT_NE(r.out.find("health: partition B process_died (killed by SIGKILL)"), std::string::npos)
      << r.out;
  fs::remove_all(dir);
}

// A SIGKILLed `partition run` leaves no tracing instance recording: the
// scheduler's guardian removes it (it used to stay, sched_switch on, 8 MB a
// CPU, until the next run).
TEST(PartitionRunCli, SigkillLeavesNoTracingInstance) {
  if (::geteuid() != 0) GTEST_SKIP() << "the sched_switch trace needs root";
  std::string tracing;
  try {
    tracing = doorbell::sys::tracefs::tracing_dir().path;
  } catch (const std::exception& e) {
    GTEST_SKIP() << "no tracefs: " << e.what();
  }
  // Orphans (the partitions, the guardian) come to us, to be reaped.
  ASSERT_EQ(::prctl(PR_SET_CHILD_SUBREAPER, 1), 0);
  const std::string dir = temp_dir();
  const std::string s = schedule(dir);
  auto cli = doorbell::test::start_doorbell({"partition", "run", s}, {.timeout = 60s});
  const std::string instance =
      tracing + "/instances/doorbell-partition-" + std::to_string(cli.pid());
  for (int i = 0; i < 1000 && !(ran(dir + "/A") && fs::exists(instance)); ++i)
    std::this_thread::sleep_for(10ms);
  ASSERT_TRUE(fs::exists(instance)) << "the run did not trace: " << instance;
  ASSERT_TRUE(cli.process().send_signal(SIGKILL));
  const auto r = cli.finish();
  EXPECT_EQ(r.status.signal(), SIGKILL) << r.describe();
  bool left = true;
  for (int i = 0; i < 500 && (left = fs::exists(instance)); ++i) std::this_thread::sleep_for(10ms);
  EXPECT_FALSE(left) << instance << " is still there";
  if (left) ::rmdir(instance.c_str());  // leave nothing recording
  // Reap what the guardian killed, and the guardian (bounded).
  for (int i = 0; i < 500; ++i) {
    const pid_t pid = ::waitpid(-1, nullptr, WNOHANG);
    if (pid < 0) break;
    if (pid == 0) std::this_thread::sleep_for(10ms);
  }
  fs::remove_all(dir);
}

// Issue 36: a 10-minute run wrote a 37 MB JSON. The per-window records are
// capped (--max-window-records), with the number left out said; the
// summaries cover every window.
TEST(PartitionRunCli, WindowRecordsCappedWithOmittedCount) {
  const std::string dir = temp_dir();
  const std::string s = schedule(dir);
  const auto r = run_doorbell({"partition", "run", s, "--frames", "4", "--max-window-records", "3",
                               "--json", dir + "/r.json", "--no-trace"},
                              {.timeout = 60s});
  ASSERT_EQ(r.exit_code(), 0) << r.describe();
  std::ifstream in(dir + "/r.json");
  const auto j = nlohmann::json::parse(in);
  EXPECT_EQ(j["windows"].size(), 3u);
  EXPECT_EQ(j["windows_omitted"], 5);
  EXPECT_EQ(j["summaries"][0]["windows"].get<int>() + j["summaries"][0]["unmeasured"].get<int>(),
            4);
  fs::remove_all(dir);
}

// Schedule files: a directory, a missing file, a CPU this machine lacks.
TEST(PartitionRunCli, ScheduleFileMessages) {
  const std::string dir = temp_dir();
  auto r = run_doorbell({"partition", "check", dir});
  EXPECT_EQ(r.exit_code(), 2) << r.describe();
  EXPECT_NE(r.err.find("is a directory"), std::string::npos) << r.err;
  EXPECT_EQ(r.err.find("major_frame_ms"), std::string::npos) << r.err;
  r = run_doorbell({"partition", "run", dir + "/missing.toml"});
  EXPECT_EQ(r.exit_code(), 2) << r.describe();
  EXPECT_NE(r.err.find("No such file or directory"), std::string::npos) << r.err;
  // cpus = [N] with N a CPU this process may not use: refused with its line
  // (it used to be accepted and ignored).
  cpu_set_t set;
  ASSERT_EQ(::sched_getaffinity(0, sizeof set, &set), 0);
  int missing = 0;
  while (CPU_ISSET(missing, &set)) ++missing;
  const std::string path = dir + "/cpus.toml";
  std::ofstream(path) << "major_frame_ms = 20\n[[partition]]\nname = \"A\"\ncommand = \"true\"\n"
                      << "cpus = [" << missing << "]\n"
                      << "[[window]]\npartition = \"A\"\noffset_ms = 0\nduration_ms = 10\n";
  r = run_doorbell({"partition", "check", path});
  EXPECT_EQ(r.exit_code(), 2) << r.describe();
  EXPECT_NE(r.err.find(path + ":2: partition 'A'"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("CPU " + std::to_string(missing) + " is not available"), std::string::npos)
      << r.err;
  fs::remove_all(dir);
}

}  // namespace
