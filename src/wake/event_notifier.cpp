#include "doorbell/event_notifier.h"

#include <poll.h>
#include <sys/eventfd.h>
#include <unistd.h>

#include <cerrno>

#include "sys/deadline.h"
#include "sys/error.h"
#include "sys/syscalls.h"

namespace doorbell {

EventNotifier::EventNotifier() {
  fd_ = sys::eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
  if (fd_ < 0) sys::throw_errno("EventNotifier: eventfd");
}

EventNotifier::~EventNotifier() {
  sys::close(fd_);
}

void EventNotifier::notify() noexcept {
  // acq_rel: release publishes the notifier's prior writes to the consumer's
  // acquire in consume(); acquire orders our read of the armed bit.
  const uint32_t old = state_.fetch_or(kPending, std::memory_order_acq_rel);
  if (old != kArmed) return;  // not sleeping, or someone already wrote
  const int saved_errno = errno;
  const uint64_t one = 1;
  ssize_t n;
  do {
    n = sys::eventfd_write(fd_, one);
  } while (n < 0 && errno == EINTR);
  // EAGAIN would need 2^64-2 unread writes: impossible with the handshake.
  if (n != static_cast<ssize_t>(sizeof one)) sys::fatal("EventNotifier: eventfd write", errno);
  errno = saved_errno;
}

bool EventNotifier::arm() noexcept {
  // acq_rel: pairs with notify(); if a notify() came first we see pending
  // and must not sleep; if it comes after, it sees armed and writes.
  const uint32_t old = state_.fetch_or(kArmed, std::memory_order_acq_rel);
  return (old & kPending) == 0;
}

bool EventNotifier::consume(bool fd_readable) noexcept {
  // acquire: makes the notifiers' writes before notify() visible to us.
  const uint32_t old = state_.exchange(0, std::memory_order_acq_rel);
  // {armed, pending} means a notifier saw armed and wrote (or is about to
  // write) the eventfd. A write that lands after this read is drained by a
  // later consume(true) when the poller reports it readable.
  if (fd_readable || old == (kArmed | kPending)) {
    uint64_t value;
    ssize_t n;
    do {
      n = sys::eventfd_read(fd_, &value);
    } while (n < 0 && errno == EINTR);
    if (n < 0 && errno != EAGAIN) sys::fatal("EventNotifier: eventfd read", errno);
  }
  return (old & kPending) != 0;
}

bool EventNotifier::wait(int timeout_ms) noexcept {
  // EINTR is retried with the time left until this deadline, never with the
  // whole timeout again (a signal every 40 ms would otherwise keep a
  // wait(100) going for ever).
  const auto deadline = timeout_ms < 0
                            ? detail::DeadlineClock::time_point::max()
                            : detail::deadline_after(std::chrono::milliseconds(timeout_ms));
  for (;;) {
    if (!arm()) return consume(false);
    pollfd pfd{fd_, POLLIN, 0};
    int rc;
    do {
      rc = sys::poll(&pfd, 1, detail::poll_timeout_ms(deadline));
    } while (rc < 0 && errno == EINTR);
    if (rc < 0) sys::fatal("EventNotifier: poll", errno);
    // A stale write (see the header) can make the fd readable with nothing
    // pending: sleep again until the deadline (or without a limit).
    const bool pending = consume(rc > 0);
    if (pending || (timeout_ms >= 0 && detail::DeadlineClock::now() >= deadline)) return pending;
  }
}

}  // namespace doorbell
