#include "sys/futex.h"

#include <linux/futex.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <cerrno>
#include <climits>

#include "sys/fault.h"

namespace doorbell::sys {

namespace {
// The time left until an absolute CLOCK_MONOTONIC deadline (-1: none), for
// the injector's record of a timed wait (only computed while it is armed).
int64_t left_ns(const timespec* deadline) noexcept {
  if (deadline == nullptr) return -1;
  timespec now;
  ::clock_gettime(CLOCK_MONOTONIC, &now);
  const int64_t left =
      (deadline->tv_sec - now.tv_sec) * 1'000'000'000LL + (deadline->tv_nsec - now.tv_nsec);
  return left < 0 ? 0 : left;
}
}  // namespace

int futex_wait(const uint32_t* word, uint32_t expected, const timespec* deadline, FutexScope scope,
               const std::source_location& where) noexcept {
  if (fault::g_armed.load(std::memory_order_relaxed)) [[unlikely]] {
    if (const int e = fault::check_timed(fault::Call::futex_wait, left_ns(deadline), where))
      return -e;
  }
  // FUTEX_WAIT_BITSET takes an absolute timeout; with FUTEX_CLOCK_REALTIME
  // absent the clock is CLOCK_MONOTONIC.
  int op = FUTEX_WAIT_BITSET;
  if (scope == FutexScope::process_private) op |= FUTEX_PRIVATE_FLAG;
  const long rc =
      ::syscall(SYS_futex, word, op, expected, deadline, nullptr, FUTEX_BITSET_MATCH_ANY);
  return rc == 0 ? 0 : -errno;
}

int futex_wake(const uint32_t* word, int count, FutexScope scope,
               const std::source_location& where) noexcept {
  if (const int e = fault::injected(fault::Call::futex_wake, where)) return -e;
  int op = FUTEX_WAKE;
  if (scope == FutexScope::process_private) op |= FUTEX_PRIVATE_FLAG;
  const long rc = ::syscall(SYS_futex, word, op, count, nullptr, nullptr, 0);
  return rc >= 0 ? static_cast<int>(rc) : -errno;
}

}  // namespace doorbell::sys
