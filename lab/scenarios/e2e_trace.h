// Kernel tracepoints for the e2e group: records signal:signal_generate,
// signal:signal_deliver, sched:sched_switch, sched:sched_wakeup and
// irq_vectors:reschedule_entry into a private tracefs instance (trace_clock
// mono, the same clock as CLOCK_MONOTONIC), then hands the events back
// sorted by time, so the scenario can find when each target thread got a CPU.
//
// Not on the library: tracing is a lab concern. Needs root and tracefs,
// through the one binding (src/sys/tracefs.h): tracefs where it is mounted,
// else mounted privately; the system's mount table never changes. One
// instance per lab process (doorbell-e2e-<pid>), created on first use and
// removed at exit; tracing is on only while a SignalTrace exists, and the
// events are disabled 1.5 s after the last one ends (enabling them costs
// 0.2-0.4 s of kernel text patching, too slow per repetition).
// An instance left by a lab process that was killed is removed by the next
// one (the binding's stale-instance cleaner).
#pragma once

#include <sys/types.h>

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

namespace doorbell::lab::e2e {

// The name (comm) the e2e target process gives itself before it starts its
// threads, so they all carry it; the tracepoint filters use it.
inline constexpr const char* kTargetComm = "db-e2e-target";

enum class EventKind : uint8_t { generate, deliver, switch_in, wakeup, ipi };

struct TraceEvent {
  uint64_t ts_ns;  // CLOCK_MONOTONIC
  EventKind kind;
  pid_t tid;  // generate: target tid; deliver/ipi: current; switch_in: next; wakeup: woken
  int sig;    // generate/deliver only
  int cpu;
};

class SignalTrace {
 public:
  // Returns null and sets why_not when tracing is not possible here.
  static std::unique_ptr<SignalTrace> start(std::string& why_not);
  ~SignalTrace();
  SignalTrace(const SignalTrace&) = delete;
  SignalTrace& operator=(const SignalTrace&) = delete;

  // Stops recording and returns the events of the given threads, by time.
  std::vector<TraceEvent> stop_and_collect(const std::vector<pid_t>& tids);
  // tracefs was not mounted here and the binding mounted it privately.
  bool mounted_by_us() const noexcept { return mounted_by_us_; }

 private:
  SignalTrace() = default;
  bool mounted_by_us_ = false;
};

}  // namespace doorbell::lab::e2e
