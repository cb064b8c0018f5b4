#include "doorbell/event_loop.h"

#include <sys/epoll.h>
#include <unistd.h>

#include <cerrno>
#include <stdexcept>
#include <string>

#include "doorbell/timer.h"
#include "sys/deadline.h"
#include "sys/error.h"
#include "sys/fd.h"
#include "sys/syscalls.h"

namespace doorbell {

struct EventLoop::TimerEntry {
  TimerId id = 0;
  bool periodic = false;
  Timer timer;
  TimerCallback callback;
};

namespace {

constexpr uint64_t kNotifierSerial = 0;
constexpr int kMaxEvents = 64;

[[noreturn]] void throw_closed_under_loop(int fd, const char* what) {
  throw std::system_error(EBADF, std::generic_category(),
                          std::string("EventLoop::") + what + ": fd " + std::to_string(fd) +
                              " was closed while registered with the loop (remove() it before "
                              "closing it)");
}

// A new epoll instance with the loop's notifier registered; `create_what`
// and `add_what` name the step in the error.
sys::UniqueFd epoll_with_notifier(int notifier_fd, const char* create_what, const char* add_what) {
  sys::UniqueFd epoll(sys::epoll_create1(EPOLL_CLOEXEC));
  if (!epoll) sys::throw_errno(create_what);
  epoll_event ev{};
  ev.events = EPOLLIN;
  ev.data.u64 = kNotifierSerial;
  if (sys::epoll_ctl(epoll.get(), EPOLL_CTL_ADD, notifier_fd, &ev) != 0) sys::throw_errno(add_what);
  return epoll;
}

}  // namespace

// In the body: notifier_ is declared after epoll_fd_, so it exists only here.
EventLoop::EventLoop() {
  epoll_fd_ = epoll_with_notifier(notifier_.fd(), "EventLoop: epoll_create1",
                                  "EventLoop: epoll_ctl(ADD, notifier)")
                  .release();
}

EventLoop::~EventLoop() {
  // Timers own their fds; remove them from epoll by closing the epoll fd
  // first, then let the entries close their timerfds.
  sys::close(epoll_fd_);
}

uint32_t EventLoop::to_epoll(uint32_t events) const {
  if ((events & (kReadable | kWritable)) == 0 ||
      (events & ~(kReadable | kWritable | kError | kHangup)))
    throw std::invalid_argument("EventLoop: events must be kReadable and/or kWritable");
  uint32_t out = 0;
  if (events & kReadable) out |= EPOLLIN | EPOLLRDHUP;
  if (events & kWritable) out |= EPOLLOUT;
  return out;
}

// Why a fresh epoll instance. The kernel keys a registration by (fd number,
// open file) and drops it only when the file's LAST descriptor closes. An fd
// closed under the loop while a duplicate of it stays open (a dup(), a copy
// in a child) leaves a registration that no epoll_ctl can reach any more
// (EPOLL_CTL_DEL needs the number to name that file) and that keeps
// reporting, under a serial the loop has dropped, whatever the file has
// ready: every round would return at once. A fresh instance holds only what
// the loop knows. A registration is carried over when the old instance still
// has it under its number (EPOLL_CTL_MOD with its own events succeeds: the
// number names the registered file); one whose fd was closed, or whose
// number now names another file, is not, and stays in the tables to be
// reported at its next remove(), modify() or add(), as before.
void EventLoop::rebuild_epoll() {
  sys::UniqueFd fresh = epoll_with_notifier(
      notifier_.fd(), "EventLoop: epoll_create1 (rebuilding after an fd closed under it)",
      "EventLoop: epoll_ctl(ADD, notifier) (rebuilding)");
  epoll_event ev{};
  for (const auto& [fd, registration] : by_fd_) {
    ev.events = registration->events;
    ev.data.u64 = registration->serial;
    if (sys::epoll_ctl(epoll_fd_, EPOLL_CTL_MOD, fd, &ev) != 0) {
      // Closed under the loop: ENOENT, EBADF, or EPERM when the number now
      // names a file epoll cannot watch (a regular file).
      if (errno == ENOENT || errno == EBADF || errno == EPERM) continue;
      sys::throw_errno("EventLoop: epoll_ctl(MOD) (rebuilding)");
    }
    if (sys::epoll_ctl(fresh.get(), EPOLL_CTL_ADD, fd, &ev) != 0)
      sys::throw_errno("EventLoop: epoll_ctl(ADD) (rebuilding)");
  }
  sys::close(epoll_fd_);
  epoll_fd_ = fresh.release();
  rebuild_pending_ = false;
}

void EventLoop::forget_closed(int fd) noexcept {
  if (auto it = by_fd_.find(fd); it != by_fd_.end()) {
    by_serial_.erase(it->second->serial);
    by_fd_.erase(it);
  }
  // Its file may live on in a duplicate, registered for ever in this epoll
  // instance: change instances. A failure (EMFILE, ENOMEM) leaves the
  // rebuild pending: the next run_once() tries again first, and throws if
  // it fails again, rather than spin on the stale registration.
  rebuild_pending_ = true;
  try {
    rebuild_epoll();
  } catch (const std::exception&) {
  }
}

void EventLoop::add(int fd, uint32_t events, Callback callback) {
  if (fd < 0) throw std::invalid_argument("EventLoop::add: negative fd");
  if (!callback) throw std::invalid_argument("EventLoop::add: empty callback");
  // A registration forgotten as closed may still sit in the old instance
  // (its file alive in a duplicate): the pending rebuild drops it first, or
  // the add below would meet it (EEXIST) and refuse a new fd as a double add.
  if (rebuild_pending_) rebuild_epoll();
  epoll_event ev{};
  ev.events = to_epoll(events);
  if (auto it = by_fd_.find(fd); it != by_fd_.end()) {
    // Either a real double add, or the old fd was closed under the loop and
    // this number names another file now. epoll tells which without
    // touching the registration: adding the same (number, file) again fails
    // with EEXIST. (A probe with EPOLL_CTL_MOD would have to change the
    // registration's events.)
    epoll_event probe{};
    probe.events = ev.events;
    probe.data.u64 = it->second->serial;
    if (sys::epoll_ctl(epoll_fd_, EPOLL_CTL_ADD, fd, &probe) != 0) {
      const int error = errno;
      if (error == EEXIST)
        throw std::invalid_argument("EventLoop::add: fd " + std::to_string(fd) +
                                    " is already registered");
      if (error == EBADF) {
        forget_closed(fd);
        throw std::system_error(EBADF, std::generic_category(),
                                "EventLoop::add: fd " + std::to_string(fd) + " is not open");
      }
      // EPERM: the number names a file epoll cannot watch, so another file.
      if (error != EPERM)
        sys::throw_errno(error, "EventLoop::add: epoll_ctl(ADD) of fd " + std::to_string(fd));
    } else {
      // The number names another file, which the probe registered: undo.
      sys::epoll_ctl(epoll_fd_, EPOLL_CTL_DEL, fd, nullptr);
    }
    forget_closed(fd);
    throw_closed_under_loop(fd, "add");
  }
  auto registration = std::make_shared<Registration>(
      Registration{fd, next_serial_++, ev.events, std::move(callback)});
  ev.data.u64 = registration->serial;
  if (sys::epoll_ctl(epoll_fd_, EPOLL_CTL_ADD, fd, &ev) != 0) {
    const int error = errno;
    if (error == EBADF)
      throw std::system_error(EBADF, std::generic_category(),
                              "EventLoop::add: fd " + std::to_string(fd) + " is not open");
    sys::throw_errno(error, "EventLoop::add: epoll_ctl(ADD) of fd " + std::to_string(fd));
  }
  by_serial_.emplace(registration->serial, registration);
  by_fd_.emplace(fd, std::move(registration));
}

void EventLoop::modify(int fd, uint32_t events) {
  auto it = by_fd_.find(fd);
  if (it == by_fd_.end())
    throw std::invalid_argument("EventLoop::modify: fd " + std::to_string(fd) +
                                " is not registered");
  epoll_event ev{};
  ev.events = to_epoll(events);
  ev.data.u64 = it->second->serial;
  if (sys::epoll_ctl(epoll_fd_, EPOLL_CTL_MOD, fd, &ev) != 0) {
    const int error = errno;
    // EPERM: the number names a file epoll cannot watch, so another file.
    if (error == ENOENT || error == EBADF || error == EPERM) {
      forget_closed(fd);
      throw_closed_under_loop(fd, "modify");
    }
    sys::throw_errno(error, "EventLoop::modify: epoll_ctl(MOD)");
  }
  it->second->events = ev.events;
}

bool EventLoop::remove(int fd) {
  auto it = by_fd_.find(fd);
  if (it == by_fd_.end()) return false;
  // Drop our record first: the registration is gone (a callback still
  // running keeps its own reference), unless epoll refuses for a reason
  // other than a closed fd (then the kernel still has it, and so do we).
  std::shared_ptr<Registration> registration = std::move(it->second);
  by_serial_.erase(registration->serial);
  by_fd_.erase(it);
  if (sys::epoll_ctl(epoll_fd_, EPOLL_CTL_DEL, fd, nullptr) != 0) {
    const int error = errno;
    // EBADF: closed. ENOENT: closed and the number reused by another file.
    // EPERM: reused by a file epoll cannot watch (a regular file).
    if (error == EBADF || error == ENOENT || error == EPERM) {
      forget_closed(fd);
      throw_closed_under_loop(fd, "remove");
    }
    by_serial_.emplace(registration->serial, registration);
    by_fd_.emplace(fd, std::move(registration));
    sys::throw_errno(error, "EventLoop::remove: epoll_ctl(DEL)");
  }
  return true;
}

EventLoop::TimerId EventLoop::add_timer(std::chrono::nanoseconds first,
                                        std::chrono::nanoseconds period, TimerCallback callback) {
  if (!callback) throw std::invalid_argument("EventLoop::add_timer: empty callback");
  if (first.count() <= 0)
    throw std::invalid_argument("EventLoop::add_timer: first must be positive");
  if (period.count() < 0) throw std::invalid_argument("EventLoop::add_timer: negative period");
  auto entry = std::make_unique<TimerEntry>();
  entry->id = next_serial_;  // unique: shares the serial space
  entry->periodic = period.count() > 0;
  entry->callback = std::move(callback);
  TimerEntry* raw = entry.get();
  const TimerId id = entry->id;
  // Armed before it is registered: a failure of either leaves nothing behind
  // (the entry, its timerfd and no registration go with the exception; a
  // registration added first outlived a failed arm, its callback pointing
  // at the freed entry). An expiration before the add() waits, readable.
  if (entry->periodic)
    entry->timer.arm_periodic(period, first);
  else
    entry->timer.arm_once(first);
  add(raw->timer.fd(), kReadable, [this, raw, id](uint32_t) {
    const uint64_t n = raw->timer.read();
    if (n == 0) return;                    // raced with a re-arm; nothing expired
    if (!raw->periodic) cancel_timer(id);  // retired, stays alive until the round ends
    raw->callback(n);
  });
  timers_.emplace(id, std::move(entry));
  return id;
}

bool EventLoop::cancel_timer(TimerId id) {
  auto it = timers_.find(id);
  if (it == timers_.end()) return false;
  remove(it->second->timer.fd());
  // The timer's callback may be the one running: keep the entry (and its
  // fd, so the number is not reused this round) until the round ends.
  retired_timers_.push_back(std::move(it->second));
  timers_.erase(it);
  if (!running_) retired_timers_.clear();
  return true;
}

void EventLoop::stop() noexcept {
  // release: pairs with take_stop()'s acquire.
  stop_.store(true, std::memory_order_release);
  notifier_.notify();
}

bool EventLoop::take_stop() noexcept {
  return stop_.exchange(false, std::memory_order_acq_rel);
}

std::size_t EventLoop::run() {
  if (running_) throw std::logic_error("EventLoop::run: called from a callback (re-entry)");
  // run() owns the stop flag: this is the only place that clears it, and it
  // clears it exactly when it decides to return. A stop() that lands after
  // the check is not lost: rounds never clear the flag, and the round below
  // either sees it before arming (and does not sleep), or its notify() finds
  // the notifier pending or armed (arm() refuses, or the eventfd wakes
  // epoll_wait). The next check then returns.
  std::size_t total = 0;
  while (!take_stop()) {
    if (race_hook_) race_hook_(EventLoopRacePoint::after_stop_check, race_hook_context_);
    total += run_once(std::nullopt);
  }
  return total;
}

std::size_t EventLoop::run_once(std::optional<std::chrono::milliseconds> timeout) {
  if (running_) throw std::logic_error("EventLoop::run_once: called from a callback (re-entry)");
  const bool poll_only = timeout && timeout->count() <= 0;
  // Saturated: a timeout too large for the clock means no limit.
  const auto deadline = !timeout || poll_only ? detail::DeadlineClock::time_point::max()
                                              : detail::deadline_after(*timeout);
  // Sleep only when no stop is pending. The flag is read before arm(): a
  // stop() after the read either set the notifier pending first (arm()
  // refuses) or finds it armed and writes the eventfd, which ends the wait.
  // A pending notify() also means "don't sleep".
  // A stale registration (forget_closed()) must not make this round spin.
  if (rebuild_pending_) rebuild_epoll();
  bool armed = false;
  if (!poll_only && !stop_requested()) armed = notifier_.arm();
  int timeout_ms = armed ? detail::poll_timeout_ms(deadline) : 0;
  epoll_event events[kMaxEvents];
  int n;
  for (;;) {
    n = sys::epoll_wait(epoll_fd_, events, kMaxEvents, timeout_ms);
    if (n > 0) break;
    if (n < 0 && errno != EINTR) sys::fatal("EventLoop: epoll_wait", errno);
    // Nothing yet: EINTR, the deadline, or a wait capped at INT_MAX ms
    // (~24.8 days) that ended before a longer deadline. Wait again for the
    // time left; stay armed (nothing consumed the notifier).
    n = 0;
    if (timeout_ms == 0) break;
    timeout_ms = detail::poll_timeout_ms(deadline);
    if (timeout_ms == 0) break;
  }

  bool notifier_readable = false;
  bool stale = false;
  for (int i = 0; i < n; ++i) {
    if (events[i].data.u64 == kNotifierSerial)
      notifier_readable = true;
    else if (by_serial_.count(events[i].data.u64) == 0)
      stale = true;  // nothing ran yet this round: not removed by a callback
  }
  notifier_.consume(notifier_readable);
  // A serial the loop does not know before any callback ran: a registration
  // whose fd was closed under the loop while its file stayed open elsewhere
  // (see rebuild_epoll()). Its events are dropped below; a fresh instance
  // keeps it from firing again.
  if (stale) rebuild_epoll();

  running_ = true;
  std::size_t dispatched = 0;
  struct Reset {
    EventLoop* loop;
    ~Reset() {
      loop->running_ = false;
      loop->retired_timers_.clear();
    }
  } reset{this};
  for (int i = 0; i < n; ++i) {
    const uint64_t serial = events[i].data.u64;
    if (serial == kNotifierSerial) continue;
    auto it = by_serial_.find(serial);
    if (it == by_serial_.end()) continue;             // removed earlier in this round
    std::shared_ptr<Registration> keep = it->second;  // survives its own remove()
    uint32_t got = 0;
    if (events[i].events & EPOLLIN) got |= kReadable;
    if (events[i].events & EPOLLOUT) got |= kWritable;
    if (events[i].events & EPOLLERR) got |= kError;
    if (events[i].events & (EPOLLHUP | EPOLLRDHUP)) got |= kHangup;
    keep->callback(got);
    ++dispatched;
  }
  return dispatched;
}

}  // namespace doorbell
