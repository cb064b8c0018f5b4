#include "doorbell/timer.h"

#include <poll.h>
#include <sys/timerfd.h>
#include <unistd.h>

#include <cerrno>
#include <stdexcept>

#include "sys/error.h"
#include "sys/syscalls.h"

namespace doorbell {
namespace {

timespec to_timespec(std::chrono::nanoseconds d) {
  const auto ns = d.count();
  return timespec{static_cast<time_t>(ns / 1000000000), static_cast<long>(ns % 1000000000)};
}

void settime(int fd, timespec first, timespec period) {
  itimerspec spec{};
  spec.it_value = first;
  spec.it_interval = period;
  if (sys::timerfd_settime(fd, 0, &spec, nullptr) != 0) sys::throw_errno("Timer: timerfd_settime");
}

}  // namespace

Timer::Timer() {
  fd_ = sys::timerfd_create(CLOCK_MONOTONIC, TFD_NONBLOCK | TFD_CLOEXEC);
  if (fd_ < 0) sys::throw_errno("Timer: timerfd_create");
}

Timer::~Timer() {
  sys::close(fd_);
}

void Timer::arm_once(std::chrono::nanoseconds delay) {
  if (delay.count() <= 0) throw std::invalid_argument("Timer::arm_once: delay must be positive");
  settime(fd_, to_timespec(delay), timespec{});
}

void Timer::arm_periodic(std::chrono::nanoseconds period, std::chrono::nanoseconds first) {
  if (period.count() <= 0)
    throw std::invalid_argument("Timer::arm_periodic: period must be positive");
  if (first.count() < 0)
    throw std::invalid_argument("Timer::arm_periodic: first must not be negative");
  if (first.count() == 0) first = period;
  settime(fd_, to_timespec(first), to_timespec(period));
}

void Timer::disarm() {
  settime(fd_, timespec{}, timespec{});
}

uint64_t Timer::read() noexcept {
  uint64_t n = 0;
  ssize_t rc;
  do {
    rc = sys::timerfd_read(fd_, &n);
  } while (rc < 0 && errno == EINTR);
  if (rc < 0) {
    // EAGAIN: nothing expired. ECANCELED only with TFD_TIMER_CANCEL_ON_SET,
    // which we never set.
    if (errno == EAGAIN) return 0;
    sys::fatal("Timer: timerfd read", errno);
  }
  expirations_ += n;
  if (n > 1) missed_ += n - 1;
  return n;
}

uint64_t Timer::wait() noexcept {
  for (;;) {
    pollfd pfd{fd_, POLLIN, 0};
    int rc;
    do {
      rc = sys::poll(&pfd, 1, -1);
    } while (rc < 0 && errno == EINTR);
    if (rc < 0) sys::fatal("Timer: poll", errno);
    if (const uint64_t n = read(); n > 0) return n;
  }
}

}  // namespace doorbell
