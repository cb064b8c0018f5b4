// One way for every test to run a program and read what it printed: the
// doorbell CLI (run_doorbell) or any other program (run_program). Built on
// doorbell::ChildProcess, so the child starts with a clean signal state
// whatever the test blocks or ignores, and every run has a timeout: a program
// that hangs is killed (SIGKILL) and reported as timed out instead of holding
// the test until ctest's own limit.
#pragma once

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

  bool success() const noexcept { return !timed_out && status.success(); }
  int exit_code() const noexcept { return status.exit_code(); }
  // A line for a failed assertion: the command's end, and its stderr.
  std::string describe() const;
};

struct RunOptions {
  std::chrono::milliseconds timeout{std::chrono::seconds(120)};
  // Written to the program's stdin, then closed. Without it stdin is /dev/null.
  std::optional<std::string> input;
  // The environment, "NAME=value" each; nullopt inherits the test's.
  std::optional<std::vector<std::string>> environment;
};

// Runs argv (argv[0] looked up in PATH when it has no slash) to its end or
// the timeout.
RunResult run_program(const std::vector<std::string>& argv, const RunOptions& options = {});

// The doorbell CLI of this build tree.
std::string doorbell_binary();

// Runs `doorbell ARGS...` from this build tree.
RunResult run_doorbell(const std::vector<std::string>& args, const RunOptions& options = {});

}  // namespace doorbell::test
