// The RateLimiter's default clock. Everything else is inline in the header
// (the hot paths must inline into the caller).
#include "doorbell/rate_limiter.h"

#include <time.h>

#include "sys/error.h"

namespace doorbell {
namespace detail {

uint64_t coarse_now_ns() noexcept {
  // CLOCK_MONOTONIC_COARSE is answered by the vDSO from the last tick's
  // timestamp: no syscall, no TSC read. It cannot fail for a valid clock id.
  timespec ts;
  if (clock_gettime(CLOCK_MONOTONIC_COARSE, &ts) != 0) sys::fatal("clock_gettime(COARSE)", errno);
  return static_cast<uint64_t>(ts.tv_sec) * 1000000000u + static_cast<uint64_t>(ts.tv_nsec);
}

}  // namespace detail

uint64_t coarse_clock_resolution_ns() noexcept {
  timespec ts;
  if (clock_getres(CLOCK_MONOTONIC_COARSE, &ts) != 0) sys::fatal("clock_getres(COARSE)", errno);
  return static_cast<uint64_t>(ts.tv_sec) * 1000000000u + static_cast<uint64_t>(ts.tv_nsec);
}

}  // namespace doorbell
