#include "sys/futex.h"

#include <linux/futex.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <cerrno>
#include <climits>

namespace doorbell::sys {

int futex_wait(const uint32_t* word, uint32_t expected, const timespec* deadline,
               FutexScope scope) noexcept {
  // FUTEX_WAIT_BITSET takes an absolute timeout; with FUTEX_CLOCK_REALTIME
  // absent the clock is CLOCK_MONOTONIC.
  int op = FUTEX_WAIT_BITSET;
  if (scope == FutexScope::process_private) op |= FUTEX_PRIVATE_FLAG;
  const long rc =
      ::syscall(SYS_futex, word, op, expected, deadline, nullptr, FUTEX_BITSET_MATCH_ANY);
  return rc == 0 ? 0 : -errno;
}

int futex_wake(const uint32_t* word, int count, FutexScope scope) noexcept {
  int op = FUTEX_WAKE;
  if (scope == FutexScope::process_private) op |= FUTEX_PRIVATE_FLAG;
  const long rc = ::syscall(SYS_futex, word, op, count, nullptr, nullptr, 0);
  return rc >= 0 ? static_cast<int>(rc) : -errno;
}

}  // namespace doorbell::sys
