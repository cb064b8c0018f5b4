// EventLoop: a small epoll(7) loop: file descriptors with callbacks, timers,
// and a stop() that other threads may call.
//
// Contract:
//  - Single-threaded. add(), modify(), remove(), add_timer(), cancel_timer(),
//    run() and run_once() are called from one thread at a time: the thread
//    that runs the loop, or any one thread while the loop is not running.
//    Only stop() and wakeup() may be called from other threads (and from
//    signal handlers).
//  - Callbacks run on the loop's thread, inside run()/run_once(), one at a
//    time. A callback may add, modify and remove any registration, its own
//    included; a registration removed during a dispatch round gets no
//    further callback in that round, and the callback being run stays alive
//    until it returns. A callback that throws ends run()/run_once() with
//    that exception; the loop stays usable.
//  - Level-triggered: a callback that leaves data unread is called again on
//    the next round.
//  - The loop does not own registered fds. Remove an fd BEFORE closing it.
//    An fd closed while registered is a caller bug that the loop reports
//    rather than tolerates: remove() of it, and add() of a new fd that got
//    the same number, throw std::system_error(EBADF) saying so. (epoll
//    itself forgets a closed fd silently, so the loop can only tell at the
//    next add()/modify()/remove() of that number.)
//  - stop() makes the current or next run() return after the callbacks of
//    the current round; it is sticky until run() or run_once() returns
//    because of it. It wakes a sleeping loop through an EventNotifier,
//    which writes its eventfd only when the loop is about to sleep.
//  - Timers are Timer objects (timerfd, CLOCK_MONOTONIC) owned by the loop.
//    A timer callback gets the number of expirations since its last call
//    (more than 1 means the loop was late and ticks merged).
//
// Fork: the child inherits the epoll fd, which still refers to the parent's
// interest list; do not use the loop in the child.
#pragma once

#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <unordered_map>
#include <vector>

#include "doorbell/event_notifier.h"

namespace doorbell {

class Timer;

class EventLoop {
 public:
  // Event bits, passed to add()/modify() and to callbacks.
  enum : uint32_t {
    kReadable = 1u << 0,  // EPOLLIN
    kWritable = 1u << 1,  // EPOLLOUT
    kError = 1u << 2,     // EPOLLERR (always reported)
    kHangup = 1u << 3,    // EPOLLHUP or EPOLLRDHUP (always reported)
  };
  using Callback = std::function<void(uint32_t events)>;
  using TimerCallback = std::function<void(uint64_t expirations)>;
  using TimerId = uint64_t;

  // Creates the epoll instance and the stop notifier. Throws
  // std::system_error when epoll_create1(2) or eventfd(2) fails.
  EventLoop();
  ~EventLoop();
  EventLoop(const EventLoop&) = delete;
  EventLoop& operator=(const EventLoop&) = delete;

  // Watches fd for `events` (kReadable and/or kWritable). Throws
  // std::invalid_argument when fd < 0, events is empty, the callback is
  // empty or fd is already registered; std::system_error(EBADF) when fd is
  // not open, or when fd's number belongs to a registration whose fd was
  // closed under the loop; std::system_error for other epoll_ctl failures
  // (EPERM: the file does not support epoll, e.g. a regular file).
  void add(int fd, uint32_t events, Callback callback);

  // Changes the events watched. Throws std::invalid_argument when fd is not
  // registered, std::system_error(EBADF) when it was closed under the loop.
  void modify(int fd, uint32_t events);

  // Stops watching fd; safe from any callback, the fd's own included.
  // Returns false when fd is not registered. Throws std::system_error(EBADF)
  // when fd was closed while registered (the registration is dropped first,
  // so the loop stays consistent).
  bool remove(int fd);

  bool contains(int fd) const noexcept { return by_fd_.count(fd) != 0; }
  std::size_t size() const noexcept { return by_fd_.size(); }

  // A timer owned by the loop: fires after `first`, then every `period`
  // when period > 0. Throws std::invalid_argument when first <= 0 or
  // period < 0 or the callback is empty.
  TimerId add_timer(std::chrono::nanoseconds first, std::chrono::nanoseconds period,
                    TimerCallback callback);
  // Cancels a timer; safe from any callback, its own included. Returns false
  // when the id is unknown (already cancelled, or a one-shot that fired).
  bool cancel_timer(TimerId id);

  // Runs rounds until stop(). Returns the number of callbacks run.
  std::size_t run();

  // One round: waits up to `timeout` for events (nullopt: no limit; zero:
  // just poll), then runs their callbacks. Returns the number of callbacks
  // run. Returns early, without waiting, when stop() is pending (and clears
  // it).
  std::size_t run_once(std::optional<std::chrono::milliseconds> timeout = std::nullopt);

  // Any thread, and signal handlers (async-signal-safe): makes run() return.
  void stop() noexcept;
  // Any thread, and signal handlers: makes a sleeping round return without
  // stopping run().
  void wakeup() noexcept { notifier_.notify(); }

  // True between a stop() and the run()/run_once() that honours it.
  bool stop_requested() const noexcept { return stop_.load(std::memory_order_acquire); }

 private:
  struct Registration {
    int fd;
    uint64_t serial;
    Callback callback;
  };
  struct TimerEntry;
  uint32_t to_epoll(uint32_t events) const;
  void check_stale(int fd, const char* what);
  bool take_stop() noexcept;

  int epoll_fd_ = -1;
  EventNotifier notifier_;
  std::atomic<bool> stop_{false};
  uint64_t next_serial_ = 1;  // 0 is the notifier
  std::unordered_map<int, std::shared_ptr<Registration>> by_fd_;
  std::unordered_map<uint64_t, std::shared_ptr<Registration>> by_serial_;
  std::unordered_map<TimerId, std::unique_ptr<TimerEntry>> timers_;
  std::vector<std::unique_ptr<TimerEntry>> retired_timers_;  // freed after the round
  bool running_ = false;
};

}  // namespace doorbell
