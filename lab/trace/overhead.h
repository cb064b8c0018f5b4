// What `doorbell trace` costs the traced: a child sends itself `count`
// SIGUSR1 (kill + empty handler, each delivered before kill returns), timed
// without and with a SignalTracing of the whole system read live every
// 50 ms; best of `rounds` alternating runs each (`doorbell trace
// --measure-overhead`).
#pragma once

#include <cstdint>
#include <functional>

namespace doorbell::lab::trace {

struct OverheadResult {
  int signals_per_run = 0;
  int rounds = 0;
  double untraced_ns_per_signal = 0;
  double traced_ns_per_signal = 0;
  uint64_t events_read = 0;
  long long lost_events = 0;
};

// Throws sys::tracefs::TracefsError when tracing is not possible, and
// std::runtime_error when a storm child fails. `stop` is asked between
// rounds; a stop ends the measurement early with the rounds done so far.
OverheadResult measure_overhead(int count, int rounds, const std::function<bool()>& stop);

}  // namespace doorbell::lab::trace
