// Helpers shared by the signal and child-process tests: run code in a
// forked child and get its wait status; count our zombies; wait for a
// condition with a generous limit (a failure, not a timing assertion).
#pragma once

#include <dirent.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstdlib>
#include <fstream>
#include <functional>
#include <string>
#include <thread>

namespace doorbell::testing {

// Forks; the child runs body() and exits with its return value (100 on an
// exception). Returns the child's wait status.
inline int run_in_child(const std::function<int()>& body) {
  const pid_t pid = ::fork();
  if (pid < 0) std::abort();
  if (pid == 0) {
    int code = 100;
    try {
      code = body();
    } catch (...) {
    }
    ::_exit(code);
  }
  int status = 0;
  while (::waitpid(pid, &status, 0) < 0) {
  }
  return status;
}

// What run_in_child_with_deadline saw.
struct ChildOutcome {
  int status = 0;          // the wait status (SIGKILL when timed out)
  bool timed_out = false;  // the child was still running at the deadline and was killed
};

// Like run_in_child, with a watchdog: a child still running after `limit`
// is killed (SIGKILL) and reported as timed out, so that a hang becomes a
// clean failure. The child also dies with the parent.
inline ChildOutcome run_in_child_with_deadline(const std::function<int()>& body,
                                               std::chrono::milliseconds limit) {
  const pid_t pid = ::fork();
  if (pid < 0) std::abort();
  if (pid == 0) {
    ::prctl(PR_SET_PDEATHSIG, SIGKILL);
    int code = 100;
    try {
      code = body();
    } catch (...) {
    }
    ::_exit(code);
  }
  ChildOutcome outcome;
  const auto deadline = std::chrono::steady_clock::now() + limit;
  for (;;) {
    const pid_t done = ::waitpid(pid, &outcome.status, WNOHANG);
    if (done == pid) return outcome;
    if (done < 0 && errno != EINTR) std::abort();
    if (std::chrono::steady_clock::now() >= deadline) break;
    std::this_thread::sleep_for(std::chrono::milliseconds(2));
  }
  outcome.timed_out = true;
  ::kill(pid, SIGKILL);
  while (::waitpid(pid, &outcome.status, 0) < 0) {
  }
  return outcome;
}

inline std::string describe_wait_status(int status) {
  if (WIFEXITED(status)) return "exited with " + std::to_string(WEXITSTATUS(status));
  if (WIFSIGNALED(status)) return "killed by signal " + std::to_string(WTERMSIG(status));
  return "status " + std::to_string(status);
}

// Zombie children of this process, from /proc/<pid>/stat.
inline int count_zombie_children() {
  const pid_t self = ::getpid();
  int zombies = 0;
  DIR* dir = ::opendir("/proc");
  if (dir == nullptr) return -1;
  while (const dirent* entry = ::readdir(dir)) {
    if (entry->d_name[0] < '0' || entry->d_name[0] > '9') continue;
    std::ifstream in(std::string("/proc/") + entry->d_name + "/stat");
    std::string line;
    if (!std::getline(in, line)) continue;
    const auto close = line.rfind(')');
    if (close == std::string::npos || close + 4 >= line.size()) continue;
    const char state = line[close + 2];
    const long ppid = std::strtol(line.c_str() + close + 4, nullptr, 10);
    if (ppid == self && state == 'Z') ++zombies;
  }
  ::closedir(dir);
  return zombies;
}

// ThreadSanitizer runs a program's handlers later, from its own handler,
// and keeps ONE pending slot per signal number and thread: queued real-time
// instances merge before our handler ever sees them. Tests that count
// real-time instances through the handler mechanism skip under TSan (the
// signalfd mechanism reads the kernel's queue and is still tested).
#if defined(__SANITIZE_THREAD__)
inline constexpr bool kSanitizerMergesQueuedSignals = true;
#else
inline constexpr bool kSanitizerMergesQueuedSignals = false;
#endif
#define DOORBELL_SKIP_IF_SANITIZER_MERGES_SIGNALS(handler_mechanism)                        \
  do {                                                                                      \
    if ((handler_mechanism) && ::doorbell::testing::kSanitizerMergesQueuedSignals) {        \
      GTEST_SKIP() << "ThreadSanitizer merges queued real-time signals before any handler"; \
    }                                                                                       \
  } while (0)

// True when DOORBELL_STRESS=long.
inline bool long_stress() {
  const char* v = std::getenv("DOORBELL_STRESS");
  return v != nullptr && std::string(v) == "long";
}

}  // namespace doorbell::testing
