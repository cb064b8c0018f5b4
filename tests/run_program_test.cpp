// tests/support/run_program: the one way tests run programs. Real programs
// (sh, cat, head) in real child processes; time is bounded below only.
#include "tests/support/run_program.h"

#include <dirent.h>
#include <signal.h>
#include <unistd.h>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <chrono>
#include <string>
#include <system_error>
#include <thread>

namespace doorbell::test {
namespace {

using namespace std::chrono_literals;
using ::testing::HasSubstr;

int open_fds() {
  int count = 0;
  DIR* dir = ::opendir("/proc/self/fd");
  while (const dirent* entry = ::readdir(dir))
    if (entry->d_name[0] != '.') ++count;
  ::closedir(dir);
  return count;
}

TEST(RunProgram, StdoutAndStderrCapturedApart) {
  const RunResult r = run_program({"sh", "-c", "echo out; echo err >&2; echo more"});
  EXPECT_TRUE(r.success()) << r.describe();
  EXPECT_EQ(r.out, "out\nmore\n");
  EXPECT_EQ(r.err, "err\n");
}

TEST(RunProgram, StdinIsPassedAndClosed) {
  RunOptions options;
  options.input = "hello\nworld";
  const RunResult r = run_program({"cat"}, options);
  EXPECT_TRUE(r.success()) << r.describe();
  EXPECT_EQ(r.out, "hello\nworld");
}

TEST(RunProgram, WithoutInputStdinIsEmpty) {
  const RunResult r = run_program({"wc", "-c"});
  EXPECT_TRUE(r.success()) << r.describe();
  EXPECT_EQ(r.out, "0\n");
}

TEST(RunProgram, ExitCodeReported) {
  const RunResult r = run_program({"sh", "-c", "echo bad >&2; exit 3"});
  EXPECT_FALSE(r.success());
  EXPECT_FALSE(r.timed_out);
  EXPECT_EQ(r.exit_code(), 3);
  EXPECT_THAT(r.describe(), HasSubstr("exited with 3"));
  EXPECT_THAT(r.describe(), HasSubstr("bad"));
}

TEST(RunProgram, DeathBySignalReported) {
  const RunResult r = run_program({"sh", "-c", "kill -TERM $$"});
  EXPECT_FALSE(r.success());
  EXPECT_FALSE(r.timed_out);
  EXPECT_FALSE(r.status.exited());
  EXPECT_EQ(r.status.signal(), SIGTERM);
  EXPECT_EQ(r.exit_code(), -1);
}

TEST(RunProgram, EnvironmentReplacedWhenGiven) {
  RunOptions options;
  options.environment = std::vector<std::string>{"DOORBELL_RUN_PROGRAM_TEST=42"};
  const RunResult r = run_program({"/usr/bin/env"}, options);
  EXPECT_TRUE(r.success()) << r.describe();
  EXPECT_EQ(r.out, "DOORBELL_RUN_PROGRAM_TEST=42\n");
}

TEST(RunProgram, SleeperPastTheTimeout_KilledAndReportedTimedOut) {
  RunOptions options;
  options.timeout = 300ms;
  const auto start = std::chrono::steady_clock::now();
  const RunResult r = run_program({"sleep", "60"}, options);
  EXPECT_GE(std::chrono::steady_clock::now() - start, 300ms);
  EXPECT_TRUE(r.timed_out);
  EXPECT_FALSE(r.success());
  EXPECT_EQ(r.status.signal(), SIGKILL);
  EXPECT_THAT(r.describe(), HasSubstr("timed out"));
}

// Output pipes closed, program still running: the timeout still holds.
TEST(RunProgram, SleeperWithItsOutputClosed_KilledAtTheTimeout) {
  RunOptions options;
  options.timeout = 300ms;
  const auto start = std::chrono::steady_clock::now();
  const RunResult r = run_program({"sh", "-c", "exec >&- 2>&-; sleep 60"}, options);
  EXPECT_GE(std::chrono::steady_clock::now() - start, 300ms);
  EXPECT_TRUE(r.timed_out);
  EXPECT_EQ(r.status.signal(), SIGKILL);
}

// More than a pipe buffer on both streams at once: read while it writes.
TEST(RunProgram, MegabytesOnStdoutAndStderr_NoDeadlock) {
  RunOptions options;
  options.timeout = 60s;
  const RunResult r = run_program(
      {"sh", "-c", "head -c 3000000 /dev/zero >&2; head -c 4194304 /dev/zero; echo end >&2"},
      options);
  ASSERT_TRUE(r.success()) << (r.timed_out ? "timed out" : r.status.describe());
  EXPECT_EQ(r.out.size(), 4194304u);
  EXPECT_EQ(r.err.size(), 3000004u);
  EXPECT_EQ(r.err.substr(r.err.size() - 4), "end\n");
}

// cat writes while we still write its input: both directions at once.
TEST(RunProgram, MegabytesThroughCat_NoDeadlock) {
  RunOptions options;
  options.timeout = 60s;
  std::string input(3 << 20, '\0');
  for (std::size_t i = 0; i < input.size(); ++i) input[i] = static_cast<char>('a' + i % 26);
  options.input = input;
  const RunResult r = run_program({"cat"}, options);
  ASSERT_TRUE(r.success()) << r.describe();
  EXPECT_TRUE(r.out == input) << "output differs: " << r.out.size() << " bytes";
}

// A program that closes stdin while we still have input for it: the write
// fails with EPIPE; the test process must not get the SIGPIPE.
TEST(RunProgram, ProgramClosesStdinEarly_TestNotKilledBySigpipe) {
  RunOptions options;
  options.timeout = 60s;
  options.input = std::string(4 << 20, 'x');
  const RunResult r = run_program({"sh", "-c", "exec 0<&-; sleep 0.5; echo done"}, options);
  EXPECT_TRUE(r.success()) << r.describe();
  EXPECT_EQ(r.out, "done\n");
}

// A program that exits leaving a background process with its stdout: its
// output is complete when it exits; we do not wait for the straggler.
TEST(RunProgram, BackgroundProcessHoldingStdout_DoesNotHoldTheRun) {
  RunOptions options;
  options.timeout = 5s;
  const RunResult r = run_program({"sh", "-c", "sleep 60 & echo $!"}, options);
  const pid_t straggler = static_cast<pid_t>(std::atoi(r.out.c_str()));
  if (straggler > 0) ::kill(straggler, SIGKILL);
  EXPECT_FALSE(r.timed_out);
  EXPECT_TRUE(r.success()) << r.describe();
  EXPECT_GT(straggler, 0) << r.out;
}

TEST(RunProgram, MissingProgram_ThrowsAndLeaksNoDescriptor) {
  const int before = open_fds();
  EXPECT_THROW(run_program({"/nonexistent/doorbell-no-such-program"}), std::system_error);
  EXPECT_EQ(open_fds(), before);
}

// start_program: act on the program while it runs, then finish() it.
TEST(StartProgram, SignalWhileRunning_ThenFinish) {
  RunningProgram program = start_program({"sh", "-c", "echo ready; exec sleep 60"});
  ASSERT_GT(program.pid(), 0);
  ASSERT_TRUE(program.process().send_signal(SIGTERM));
  const RunResult r = program.finish();
  EXPECT_FALSE(r.timed_out);
  EXPECT_EQ(r.status.signal(), SIGTERM);
  EXPECT_EQ(r.pid, program.pid());
}

// The timeout counts from the start, not from finish().
TEST(StartProgram, TimeoutCountsFromTheStart) {
  RunOptions options;
  options.timeout = 200ms;
  RunningProgram program = start_program({"sleep", "60"}, options);
  std::this_thread::sleep_for(300ms);
  const RunResult r = program.finish();
  EXPECT_TRUE(r.timed_out);
  EXPECT_EQ(r.status.signal(), SIGKILL);
}

// An unfinished program is killed and reaped by the destructor.
TEST(StartProgram, DestructorKillsAndReaps) {
  pid_t pid = -1;
  {
    RunningProgram program = start_program({"sleep", "60"});
    pid = program.pid();
    ASSERT_EQ(::kill(pid, 0), 0);
  }
  EXPECT_NE(::kill(pid, 0), 0) << "pid " << pid << " still exists";
}

}  // namespace
}  // namespace doorbell::test
