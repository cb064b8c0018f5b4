// One way for every test to run a program and read what it printed: the
// doorbell CLI (run_doorbell) or any other program (run_program). Built on
// doorbell::ChildProcess, so the child starts with a clean signal state
// whatever the test blocks or ignores, and every run has a timeout: a program
// that hangs is killed (SIGKILL) and reported as timed out instead of holding
// the test until ctest's own limit.
//
// Output: stdout and stderr are read through pipes, apart, while stdin is fed,
// so a program that writes megabytes (or reads megabytes before writing) does
// not deadlock against the test. Reading ends when the program has exited and
// its pipes are empty; output that processes it left behind write later (a
// partition left running, `cmd &` in a shell) is not waited for.
//
// Stdin: written without blocking; a program that never reads it or closes
// it early only loses the rest (EPIPE, never a SIGPIPE in the test).
//
// A test that must act while the program runs (send it SIGINT, watch a file
// it writes) uses start_program()/start_doorbell() and then finish(). Until
// finish() the output waits in the pipes (64 KiB each on Linux): a program
// that writes more blocks until finish() is called.
#pragma once

#include <sys/types.h>

#include <chrono>
#include <optional>
#include <string>
#include <vector>

#include "doorbell/child_process.h"

namespace doorbell::test {

struct RunResult {
  ExitStatus status;       // how the program ended (killed by SIGKILL when it timed out)
  bool timed_out = false;  // it ran past the timeout and was killed
  std::string out;         // everything it wrote to stdout
  std::string err;         // everything it wrote to stderr
  pid_t pid = -1;          // its process ID (reaped: for names derived from it)

  bool success() const noexcept { return !timed_out && status.success(); }
  int exit_code() const noexcept { return timed_out ? -1 : status.exit_code(); }
  // A line for a failed assertion: the command's end, and its stderr.
  std::string describe() const;
};

struct RunOptions {
  // From the start of the program to the end of finish().
  std::chrono::milliseconds timeout{std::chrono::seconds(120)};
  // Written to the program's stdin, then closed. Without it stdin is /dev/null.
  std::optional<std::string> input;
  // The environment, "NAME=value" each; nullopt inherits the test's.
  std::optional<std::vector<std::string>> environment;
  // The program leads a process group of its own (its PID): a test can then
  // signal the group as a terminal's Ctrl-C does (kill(-pid, SIGINT)).
  bool new_process_group = false;
};

// A started program: act on it through process(), then finish() it. The
// destructor of an unfinished one kills (SIGKILL) and reaps the program.
// Neither copyable nor movable: hold it where start_program() returns it.
class RunningProgram {
 public:
  // Starts argv (argv[0] looked up in PATH when it has no slash). Throws
  // std::system_error when it cannot be started (ChildProcess::spawn).
  RunningProgram(const std::vector<std::string>& argv, const RunOptions& options);
  ~RunningProgram();
  RunningProgram(const RunningProgram&) = delete;
  RunningProgram& operator=(const RunningProgram&) = delete;

  ChildProcess& process() noexcept { return child_; }
  pid_t pid() const noexcept { return child_.pid(); }

  // Feeds stdin and reads stdout and stderr until the program has ended or
  // the timeout (counted from the start) has passed, then reaps it. Call once.
  RunResult finish();

  struct Setup;  // the pipes, while the program starts

 private:
  RunningProgram(const std::vector<std::string>& argv, const RunOptions& options, Setup&& setup);

  RunOptions options_;
  std::chrono::steady_clock::time_point deadline_;
  int out_ = -1, err_ = -1, in_ = -1;  // our ends of the pipes
  ChildProcess child_;
};

// Runs argv to its end or the timeout.
RunResult run_program(const std::vector<std::string>& argv, const RunOptions& options = {});
// The doorbell CLI of this build tree, or $DOORBELL_TEST_CLI when set (to
// run the CLI tests against another build: an older one, to see a new test
// fail first).
std::string doorbell_binary();
// Runs `doorbell ARGS...` from this build tree.
RunResult run_doorbell(const std::vector<std::string>& args, const RunOptions& options = {});

// Starts a program or the CLI for a test that acts while it runs.
inline RunningProgram start_program(const std::vector<std::string>& argv,
                                    const RunOptions& options = {}) {
  return RunningProgram(argv, options);
}
RunningProgram start_doorbell(const std::vector<std::string>& args, const RunOptions& options = {});

// `doorbell ARGS...` whose stdout is a pipe already full (4 KiB, one line of
// '#' written by the test) and not read: once /proc shows the program
// blocked in write(1, ...), `sig` is sent, and 200 ms later the pipe is
// drained to its end and the program reaped. Deterministic injection of "a
// stop signal while a slow reader holds the output up". stdin and stderr are
// /dev/null.
struct FullStdoutRun {
  bool blocked = false;  // it was seen blocked writing before `within` passed
  int status = 0;        // waitpid's status
  std::string out;       // what it wrote after the filler line
  bool filler_intact = false;
};
FullStdoutRun signal_while_stdout_full(const std::vector<std::string>& args, int sig,
                                       std::chrono::seconds within);

}  // namespace doorbell::test
