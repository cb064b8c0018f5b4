// Clocks for the lab.
//
// Two clocks, chosen per scenario and named in its results:
//  - monotonic: clock_gettime(CLOCK_MONOTONIC) through the vDSO. Comparable
//    across threads and processes; use it whenever the start and the end of a
//    sample are read on different threads or in different processes.
//  - tsc: lfence;rdtsc, converted with a calibrated rate. Only for short
//    intervals started and ended on the same thread, and only where the TSC
//    is invariant (constant_tsc and nonstop_tsc). Elsewhere interval_clock()
//    falls back to monotonic and says why.
#pragma once

#include <cstdint>
#include <ctime>
#include <string>
#include <string_view>

#if defined(__x86_64__)
#include <x86intrin.h>
#endif

#include "lab/common/time.h"  // monotonic_ns

namespace doorbell::lab {

enum class ClockKind { monotonic, tsc };

std::string_view clock_name(ClockKind kind) noexcept;

// lfence;rdtsc: the lfence keeps earlier instructions from drifting past the
// read. Returns 0 on machines without a TSC.
inline uint64_t tsc_read() noexcept {
#if defined(__x86_64__)
  _mm_lfence();
  const uint64_t t = __rdtsc();
  _mm_lfence();
  return t;
#else
  return 0;
#endif
}

struct TscCalibration {
  bool invariant = false;     // constant_tsc and nonstop_tsc in /proc/cpuinfo
  double ticks_per_ns = 0.0;  // measured against CLOCK_MONOTONIC
  std::string why_not;        // set when the TSC is not used
};

// Calibrates once (about 20 ms against CLOCK_MONOTONIC), then returns the
// cached result. Thread-safe.
const TscCalibration& tsc_calibration();

// The clock for same-thread intervals: the TSC where invariant, else
// monotonic. read() returns ticks; to_ns() converts a difference.
class IntervalClock {
 public:
  static const IntervalClock& get();

  ClockKind kind() const noexcept { return kind_; }
  uint64_t read() const noexcept { return kind_ == ClockKind::tsc ? tsc_read() : monotonic_ns(); }
  double to_ns(uint64_t ticks) const noexcept { return static_cast<double>(ticks) * ns_per_tick_; }

 private:
  IntervalClock();
  ClockKind kind_ = ClockKind::monotonic;
  double ns_per_tick_ = 1.0;
};

// What one reading of the clock costs here, in ns (median of many batches;
// measured once, cached).
double clock_read_cost_ns(ClockKind kind);

// Absolute CLOCK_MONOTONIC time as a timespec.
timespec to_timespec(uint64_t ns) noexcept;

}  // namespace doorbell::lab
