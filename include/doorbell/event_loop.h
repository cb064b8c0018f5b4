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
//    rather than tolerates: remove() and modify() of it, and add() of a new
//    fd that got the same number, throw std::system_error(EBADF) saying so,
//    and drop the registration, also when the number now names a file
//    epoll cannot watch (a regular file: epoll_ctl says EPERM for it, which
//    the loop takes as "closed under it"). The loop can tell only at the next
//    add()/modify()/remove() of that number. epoll forgets a registration
//    only when the file's LAST descriptor closes: while a duplicate of the
//    fd stays open (a dup(), a copy inherited by a child) the kernel's
//    registration lives on and no epoll_ctl can reach it. So whenever the
//    loop drops a registration closed under it, or a round sees events of a
//    registration it no longer knows, it moves to a fresh epoll instance
//    holding only its live registrations (a few epoll_ctl calls per
//    registration, on this error path only): the loop stays consistent and
//    a round never returns early because of a closed fd. Until then, the
//    callback of an fd closed under the loop may still run.
//  - stop() makes the current or next run() return after the callbacks of
//    the current round; it is sticky until run() returns because of it.
//    Only run() clears it (run() owns the flag), so a stop() from another
//    thread is never lost, whenever it lands. run_once() never clears it:
//    while a stop is pending, run_once() does not sleep (it dispatches what
//    is ready and returns), and a loop of your own ends on
//    stop_requested():
//        while (!loop.stop_requested()) loop.run_once();
//    The stop then stays pending, and the next run() returns at once
//    (clearing it). stop() wakes a sleeping loop through an EventNotifier,
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

// The points inside run() where another thread may act between two steps;
// a test installs a hook (EventLoop::set_race_hook_for_testing) to act there
// deterministically. Production code installs none.
enum class EventLoopRacePoint {
  after_stop_check,  // run() found no stop pending; the round has not begun
};

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
  // empty or fd is already registered (that registration is left as it
  // was); std::system_error(EBADF) when fd is not open, or when fd's number
  // belongs to a registration whose fd was closed under the loop (which is
  // then dropped); std::system_error for other epoll_ctl failures (EPERM:
  // the file does not support epoll, e.g. a regular file; ENOMEM; ENOSPC:
  // fs.epoll.max_user_watches reached).
  void add(int fd, uint32_t events, Callback callback);

  // Changes the events watched. Throws std::invalid_argument when fd is not
  // registered, std::system_error(EBADF) when it was closed under the loop,
  // std::system_error for another epoll_ctl failure (the registration then
  // keeps its events).
  void modify(int fd, uint32_t events);

  // Stops watching fd; safe from any callback, the fd's own included.
  // Returns false when fd is not registered. Throws std::system_error(EBADF)
  // when fd was closed while registered (the registration is dropped first
  // and the loop moves to a fresh epoll instance, so it stays consistent);
  // std::system_error for another epoll_ctl failure, with the registration
  // kept (epoll still has it).
  bool remove(int fd);

  bool contains(int fd) const noexcept { return by_fd_.count(fd) != 0; }
  std::size_t size() const noexcept { return by_fd_.size(); }

  // A timer owned by the loop: fires after `first`, then every `period`
  // when period > 0. Throws std::invalid_argument when first <= 0 or
  // period < 0 or the callback is empty; std::system_error when
  // timerfd_create(2), timerfd_settime(2) or the add() fails (then nothing
  // of the timer is left).
  TimerId add_timer(std::chrono::nanoseconds first, std::chrono::nanoseconds period,
                    TimerCallback callback);
  // Cancels a timer; safe from any callback, its own included. Returns false
  // when the id is unknown (already cancelled, or a one-shot that fired).
  bool cancel_timer(TimerId id);

  // Runs rounds until stop(), then clears the stop and returns the number
  // of callbacks run. Returns at once (0) when a stop is already pending.
  // Throws std::logic_error when called from a callback.
  std::size_t run();

  // One round: waits up to `timeout` for events (nullopt: no limit; zero or
  // negative: just poll), then runs their callbacks. Throws
  // std::system_error when the loop needs a fresh epoll instance (see "The
  // loop does not own registered fds") and cannot make one (EMFILE, ENOMEM). Returns the number of
  // callbacks run (0: timed out, woken by wakeup() or stop(), or events
  // removed meanwhile). A timeout of any size is honoured: one too large
  // for the clock counts as no limit, and one beyond epoll's int
  // milliseconds (~24.8 days) is waited out in several epoll_wait calls.
  // While stop() is pending (before the call, or arriving during the wait)
  // it does not sleep. It never clears the stop: check stop_requested().
  // Throws std::logic_error when called from a callback.
  std::size_t run_once(std::optional<std::chrono::milliseconds> timeout = std::nullopt);

  // Any thread, and signal handlers (async-signal-safe): makes run() return.
  void stop() noexcept;
  // Any thread, and signal handlers: makes a sleeping round return without
  // stopping run().
  void wakeup() noexcept { notifier_.notify(); }

  // True between a stop() and the run() that honours it.
  bool stop_requested() const noexcept { return stop_.load(std::memory_order_acquire); }

  // Tests only. Calls hook(point, context) on the loop's thread at each
  // EventLoopRacePoint; nullptr removes it. Not thread-safe: set it while the
  // loop is not running.
  using RaceHook = void (*)(EventLoopRacePoint point, void* context);
  void set_race_hook_for_testing(RaceHook hook, void* context) noexcept {
    race_hook_ = hook;
    race_hook_context_ = context;
  }

 private:
  struct Registration {
    int fd;
    uint64_t serial;
    uint32_t events;  // as given to epoll_ctl
    Callback callback;
  };
  struct TimerEntry;
  uint32_t to_epoll(uint32_t events) const;
  // Drops fd's registration (its fd was closed under the loop) and moves to
  // a fresh epoll instance (see event_loop.cpp).
  void forget_closed(int fd) noexcept;
  void rebuild_epoll();
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
  bool rebuild_pending_ = false;  // forget_closed() could not rebuild
  RaceHook race_hook_ = nullptr;
  void* race_hook_context_ = nullptr;
};

}  // namespace doorbell
