// Timer: a CLOCK_MONOTONIC timer over timerfd(2), one-shot or periodic, with
// its fd exposed so any poller can wait on it.
//
// Expirations are counted by the kernel and returned by read(); a read that
// returns n > 1 means n - 1 expirations were missed (the consumer was late
// by at least one period). missed() totals those across reads: never silent.
//
// Threads: one thread owns a Timer; its members are not synchronized.
// Async-signal-safety: none of the members.
// Fork: the child shares the timerfd with the parent (same timer, same
// expirations); use it in one process only.
// Clock: CLOCK_MONOTONIC, relative arming (TFD_TIMER_ABSTIME is not used).
#pragma once

#include <chrono>
#include <cstdint>

namespace doorbell {

class Timer {
 public:
  // Creates a disarmed timerfd (TFD_NONBLOCK | TFD_CLOEXEC). Throws
  // std::system_error when timerfd_create(2) fails.
  Timer();
  ~Timer();
  Timer(const Timer&) = delete;
  Timer& operator=(const Timer&) = delete;

  // Poll for readability (EPOLLIN): readable once at least one expiration
  // is unread.
  int fd() const noexcept { return fd_; }

  // Fires once after `delay`. Throws std::invalid_argument when delay <= 0,
  // std::system_error when timerfd_settime(2) fails. Re-arming replaces the
  // previous setting; unread expirations of the previous setting are lost
  // (timerfd_settime resets the count).
  // Any positive delay is accepted.
  void arm_once(std::chrono::nanoseconds delay);

  // Fires every `period`, first after `first` (0, the default: one period).
  // Throws std::invalid_argument when period <= 0 or first < 0. Any positive
  // duration is accepted (nanoseconds::max() is about 292 years).
  void arm_periodic(std::chrono::nanoseconds period, std::chrono::nanoseconds first = {});

  // Stops the timer; unread expirations are discarded.
  void disarm();

  // Expirations since the last read; 0 when none (never blocks). Adds
  // n - 1 to missed() when n > 1.
  uint64_t read() noexcept;

  // Blocks in poll(2) until at least one expiration, then read()s.
  uint64_t wait() noexcept;

  // Total expirations that arrived beyond one per read: ticks the consumer
  // was too late to see one by one.
  uint64_t missed() const noexcept { return missed_; }
  // Total expirations read.
  uint64_t expirations() const noexcept { return expirations_; }

 private:
  int fd_ = -1;
  uint64_t missed_ = 0;
  uint64_t expirations_ = 0;
};

}  // namespace doorbell
