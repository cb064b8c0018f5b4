// Bounded waits for the lab: every wait of a scenario ends by a deadline.
//
// A scenario waits for many things besides the operation it measures: a
// peer's "ready", an acknowledgement, a child's exit, a helper thread's end,
// a retry that may never succeed. Each of them can wait forever when
// something is wrong (a lost wake-up, a peer that died before it answered),
// and a wait that never ends hangs the whole run. So each one here takes a
// Deadline (Context::wait_deadline_ns(), well past the repetition's budget)
// and, past it, throws WaitTimedOut with what it was waiting for: the row
// fails with that reason and the run goes on. Behind these, the runner's
// watchdog stops a repetition that runs past its hard limit whatever it is
// blocked in (lab/harness/runner.h).
//
// The operation a row measures stays as users call it: a timeout inside a
// measured futex wait or read() would change what is measured (the kernel
// arms a timer). Threads asleep in such an untimed wait are woken by a
// Rescuer instead, which calls the channel's own wake-up again once the
// deadline has passed.
#pragma once

#include <sched.h>
#include <sys/types.h>
#include <time.h>

#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <exception>
#include <functional>
#include <memory>
#include <mutex>
#include <stdexcept>
#include <string>
#include <string_view>
#include <thread>

#include "lab/common/time.h"

namespace doorbell::lab {

// A bounded wait ran past its deadline; what() names what it waited for.
class WaitTimedOut : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

// A point on CLOCK_MONOTONIC by which a wait must end.
class Deadline {
 public:
  constexpr explicit Deadline(uint64_t at_ns) noexcept : at_ns_(at_ns) {}
  // `seconds` from now.
  static Deadline after(double seconds) noexcept;

  uint64_t at_ns() const noexcept { return at_ns_; }
  bool passed() const noexcept { return monotonic_ns() >= at_ns_; }
  // What is left: 0 once passed.
  uint64_t left_ns() const noexcept;
  // For poll(2) and epoll_wait(2): rounded up, 0 once passed.
  int left_ms() const noexcept;
  // For futex, sigtimedwait, ppoll: a relative timespec, zero once passed.
  timespec left() const noexcept;
  // The earlier of the two.
  Deadline earlier(Deadline other) const noexcept {
    return Deadline(other.at_ns_ < at_ns_ ? other.at_ns_ : at_ns_);
  }

  // Throws WaitTimedOut: "timed out waiting for <what>".
  [[noreturn]] void fail(std::string_view what) const;

 private:
  uint64_t at_ns_;
};

// Waits until done() returns true: spins briefly (cpu_relax), then yields
// the CPU between looks; throws WaitTimedOut naming `what` once the deadline
// has passed and done() is still false.
template <typename Done>
void wait_until(const Deadline& deadline, std::string_view what, Done&& done) {
  for (uint32_t looks = 0; !done(); ++looks) {
    if (looks < 64) {
      cpu_relax();
      continue;
    }
    ::sched_yield();
    if (deadline.passed()) {
      if (done()) return;
      deadline.fail(what);
    }
  }
}

// Waits for child `pid` to end and reaps it; returns its wait status. Past
// the deadline the child is killed (SIGKILL), reaped, and WaitTimedOut
// thrown naming `what`. Throws std::system_error when waitpid fails.
int reap_child(pid_t pid, const Deadline& deadline, std::string_view what);

// The same, never throwing WaitTimedOut: past the deadline the child is
// killed and reaped, and the result says so. For destructors and clean-up
// paths; waitpid errors count as "ended" (status 0).
struct ReapResult {
  int status = 0;
  bool killed = false;  // it ran past the deadline and was killed
};
ReapResult reap_child_or_kill(pid_t pid, const Deadline& deadline) noexcept;

// Kills (SIGKILL) and reaps a forked child on the way out of a scenario that
// leaves by an exception; the normal path reaps the child itself (with
// reap_child) and then calls release().
class ChildGuard {
 public:
  explicit ChildGuard(pid_t pid) noexcept : pid_(pid) {}
  ~ChildGuard() {
    if (pid_ > 0) (void)reap_child_or_kill(pid_, Deadline(0));
  }
  void release() noexcept { pid_ = -1; }
  ChildGuard(const ChildGuard&) = delete;
  ChildGuard& operator=(const ChildGuard&) = delete;

 private:
  pid_t pid_;
};

// A helper thread whose end can be waited for with a deadline. std::thread
// can only be joined without one; a scenario whose peer is stuck must still
// return, so join() waits for the body to return by a deadline and, past it,
// leaves the thread detached and throws WaitTimedOut. A scenario runs in a
// process of its own (the runner's), which ends right after a failed row, so
// a detached thread dies with it; the body must not use what the scenario
// destroys after a failed join, and reports failures by throwing (rethrown
// by join()).
//
// `stop` (optional) tells the body to return: a flag and a channel's
// rescue(). A PeerThread destroyed before join() (a scenario leaving by an
// exception) calls it every 10 ms until the body returns, for at most a
// second, then joins; a body still running then is left detached.
class PeerThread {
 public:
  PeerThread() = default;
  explicit PeerThread(std::function<void()> body, std::function<void()> stop = {});
  PeerThread(PeerThread&&) noexcept = default;
  PeerThread& operator=(PeerThread&&) noexcept;
  ~PeerThread();

  bool joinable() const noexcept { return thread_.joinable(); }
  bool finished() const noexcept;
  // Waits for the body to return, joins, and rethrows what the body threw.
  void join(const Deadline& deadline, std::string_view what);

 private:
  struct State {
    std::mutex mutex;
    std::condition_variable changed;
    bool finished = false;
    std::exception_ptr error;
  };
  void release() noexcept;
  std::shared_ptr<State> state_;
  std::function<void()> stop_;
  std::thread thread_;
};

// Calls `rescue` from a thread of its own every 10 ms once the deadline has
// passed, until destroyed. For threads asleep in the untimed wait of a
// measured path (a lost wake-up, a peer that died): `rescue` wakes them
// (a channel's rescue(), which notifies again), and the scenario, finding
// fired() true, fails its row. Costs one sleeping thread until then.
class Rescuer {
 public:
  Rescuer(const Deadline& deadline, std::function<void()> rescue);
  ~Rescuer();
  Rescuer(const Rescuer&) = delete;
  Rescuer& operator=(const Rescuer&) = delete;

  // True once the deadline passed and rescue ran at least once.
  bool fired() const noexcept { return fired_.load(std::memory_order_acquire); }

 private:
  std::mutex mutex_;
  std::condition_variable changed_;
  bool stop_ = false;
  std::atomic<bool> fired_{false};
  std::thread thread_;
};

}  // namespace doorbell::lab
