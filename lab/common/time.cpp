#include "lab/common/time.h"

#include <time.h>

#include <cerrno>

namespace doorbell::lab {

void sleep_ns(uint64_t ns) {
  timespec ts{static_cast<time_t>(ns / 1000000000u), static_cast<long>(ns % 1000000000u)};
  // clock_nanosleep returns the error number; it leaves the rest in ts.
  while (::clock_nanosleep(CLOCK_MONOTONIC, 0, &ts, &ts) == EINTR) {
  }
}

AffinityGuard::AffinityGuard() noexcept {
  saved_ok_ = ::sched_getaffinity(0, sizeof saved_, &saved_) == 0;
}

AffinityGuard::~AffinityGuard() {
  if (saved_ok_) ::sched_setaffinity(0, sizeof saved_, &saved_);
}

}  // namespace doorbell::lab
