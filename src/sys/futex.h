// Raw futex(2) operations on a 32-bit word. Shared (non-private) operations
// work across processes when the word lives in shared memory; private ones
// are cheaper but only match waiters of the same process. Both pass the
// fault injection seam (sys/fault.h).
#pragma once

#include <cstdint>
#include <ctime>
#include <source_location>

namespace doorbell::sys {

enum class FutexScope { process_private, shared };

// Sleeps while *word == expected. deadline is an absolute CLOCK_MONOTONIC
// time, or null for no limit. Returns 0 when woken (or spuriously), or
// -errno: -EAGAIN (value changed), -ETIMEDOUT, -EINTR.
int futex_wait(const uint32_t* word, uint32_t expected, const timespec* deadline, FutexScope scope,
               const std::source_location& where = std::source_location::current()) noexcept;

// Wakes up to count waiters; returns the number woken, or -errno.
int futex_wake(const uint32_t* word, int count, FutexScope scope,
               const std::source_location& where = std::source_location::current()) noexcept;

}  // namespace doorbell::sys
