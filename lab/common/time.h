// Time and CPU helpers the lab's parts share.
#pragma once

#include <sched.h>
#include <time.h>

#include <cstdint>

#include "src/sys/cpu_relax.h"

namespace doorbell::lab {

// CLOCK_MONOTONIC in nanoseconds. Async-signal-safe.
inline uint64_t monotonic_ns() noexcept {
  timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return static_cast<uint64_t>(ts.tv_sec) * 1000000000u + static_cast<uint64_t>(ts.tv_nsec);
}

// Sleeps ns nanoseconds on CLOCK_MONOTONIC, resuming after EINTR.
void sleep_ns(uint64_t ns);

// The spin-wait hint (PAUSE on x86, YIELD on arm64): the library's own.
using doorbell::detail::cpu_relax;

// Saves the calling thread's CPU affinity and puts it back on destruction.
class AffinityGuard {
 public:
  AffinityGuard() noexcept;
  ~AffinityGuard();
  AffinityGuard(const AffinityGuard&) = delete;
  AffinityGuard& operator=(const AffinityGuard&) = delete;

 private:
  cpu_set_t saved_;
  bool saved_ok_ = false;
};

}  // namespace doorbell::lab
