#include "lab/harness/clock.h"

#include <algorithm>
#include <fstream>
#include <mutex>
#include <sstream>
#include <vector>

namespace doorbell::lab {

std::string_view clock_name(ClockKind kind) noexcept {
  return kind == ClockKind::tsc ? "tsc" : "monotonic";
}

timespec to_timespec(uint64_t ns) noexcept {
  timespec ts;
  ts.tv_sec = static_cast<time_t>(ns / 1000000000u);
  ts.tv_nsec = static_cast<long>(ns % 1000000000u);
  return ts;
}

namespace {

bool cpu_has_flag(const std::string& flag) {
  std::ifstream in("/proc/cpuinfo");
  std::string line;
  while (std::getline(in, line)) {
    if (line.rfind("flags", 0) != 0) continue;
    std::istringstream words(line.substr(line.find(':') + 1));
    std::string word;
    while (words >> word)
      if (word == flag) return true;
    return false;
  }
  return false;
}

TscCalibration calibrate() {
  TscCalibration c;
#if !defined(__x86_64__)
  c.why_not = "not an x86-64 machine";
  return c;
#else
  if (!cpu_has_flag("constant_tsc") || !cpu_has_flag("nonstop_tsc")) {
    c.why_not = "the TSC is not invariant (constant_tsc/nonstop_tsc missing)";
    return c;
  }
  c.invariant = true;
  // Three rounds of 5 ms; keep the median rate.
  std::vector<double> rates;
  for (int round = 0; round < 3; ++round) {
    const uint64_t m0 = monotonic_ns();
    const uint64_t t0 = tsc_read();
    while (monotonic_ns() - m0 < 5000000) {
    }
    const uint64_t t1 = tsc_read();
    const uint64_t m1 = monotonic_ns();
    rates.push_back(static_cast<double>(t1 - t0) / static_cast<double>(m1 - m0));
  }
  std::sort(rates.begin(), rates.end());
  c.ticks_per_ns = rates[1];
  if (c.ticks_per_ns <= 0.01) {
    c.invariant = false;
    c.why_not = "TSC calibration gave an implausible rate";
  }
  return c;
#endif
}

}  // namespace

const TscCalibration& tsc_calibration() {
  static const TscCalibration calibration = calibrate();
  return calibration;
}

IntervalClock::IntervalClock() {
  const TscCalibration& c = tsc_calibration();
  if (c.invariant) {
    kind_ = ClockKind::tsc;
    ns_per_tick_ = 1.0 / c.ticks_per_ns;
  }
}

const IntervalClock& IntervalClock::get() {
  static const IntervalClock clock;
  return clock;
}

double clock_read_cost_ns(ClockKind kind) {
  static std::once_flag once;
  static double costs[2];
  std::call_once(once, [] {
    for (ClockKind k : {ClockKind::monotonic, ClockKind::tsc}) {
      std::vector<double> per_read;
      constexpr int kBatch = 1000;
      for (int round = 0; round < 21; ++round) {
        const uint64_t start = monotonic_ns();
        volatile uint64_t sink = 0;
        for (int i = 0; i < kBatch; ++i) sink = k == ClockKind::tsc ? tsc_read() : monotonic_ns();
        (void)sink;
        per_read.push_back(static_cast<double>(monotonic_ns() - start) / kBatch);
      }
      std::sort(per_read.begin(), per_read.end());
      costs[static_cast<int>(k)] = per_read[per_read.size() / 2];
    }
  });
  return costs[static_cast<int>(kind)];
}

}  // namespace doorbell::lab
