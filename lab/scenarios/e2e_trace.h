// Kernel events for the e2e group: signal_generate, signal_deliver,
// sched_switch (switch-in of a target thread), sched_wakeup and
// reschedule_entry (a reschedule IPI), for the threads of the target
// process, handed back sorted by time (CLOCK_MONOTONIC), so the scenario can
// find when each target thread got a CPU.
//
// Two sources record the same events:
//  - tracefs (the default, and what the committed results used): a private
//    tracefs instance (doorbell-e2e-<pid>, trace_clock mono, the same clock
//    as CLOCK_MONOTONIC), through the one binding (src/sys/tracefs.h):
//    tracefs where it is mounted, else mounted privately; the system's mount
//    table never changes. Filtered in the kernel by comm (kTargetComm), then
//    by thread when read. Needs root.
//  - bpf: the programs of lab/trace/bpf/e2e_events.bpf.c (tp_btf, no
//    tracefs), filtered in the kernel by the target's tgid, through a BPF
//    ring buffer with bpf_ktime_get_ns() stamps. Needs kernel BTF and root
//    (or CAP_BPF with CAP_PERFMON).
// Which one: DOORBELL_E2E_TRACE=tracefs or =bpf forces one (only that one is
// tried); unset, empty or =auto, tracefs where it works (it is mounted or
// mountable, and its instance can be made), else bpf. The choice is read at
// every start(), so one process may use both in turn.
//
// Lost events are counted, never silent: tracefs's overruns (the ring buffer
// overwrote events before they were read) or the BPF records that found the
// ring buffer full; lost() says how many, for the trace's lifetime.
//
// Not on the library: tracing is a lab concern. Each source is opened once
// per lab process, on first use, and closed at its exit (the tracefs
// instance removed, the BPF programs unloaded; register_scenario_process_exit
// in the runner's scenario process). Recording is on only while a
// SignalTrace exists, but the events stay enabled (tracefs) or the programs
// attached (bpf) until 1.5 s after the last one ends: enabling the tracefs
// events costs 0.2-0.4 s of kernel text patching here, too slow per
// repetition, and attaching the programs turns on the same tracepoints. An
// instance left by a lab process that was killed is removed by the next one
// (the binding's stale-instance cleaner); BPF programs go with their process.
//
// Threads: one SignalTrace at a time per process (the e2e scenarios run one
// repetition at a time). Fork: a child must not destroy its parent's
// SignalTrace.
#pragma once

#include <sys/types.h>

#include <cstdint>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

namespace doorbell::lab::e2e {

// The name (comm) the e2e target process gives itself before it starts its
// threads, so they all carry it; the tracefs filters use it.
inline constexpr const char* kTargetComm = "db-e2e-target";

// Selects the source (above): "tracefs", "bpf", or "auto" (also unset/empty).
inline constexpr const char* kSourceVariable = "DOORBELL_E2E_TRACE";

enum class EventKind : uint8_t { generate, deliver, switch_in, wakeup, ipi };

struct TraceEvent {
  uint64_t ts_ns;  // CLOCK_MONOTONIC
  EventKind kind;
  pid_t tid;  // generate: target tid; deliver/ipi: current; switch_in: next; wakeup: woken
  int sig;    // generate/deliver only
  int cpu;
};

enum class TraceSource : uint8_t { tracefs, bpf };

// Held across a fork() of the e2e rows' target and sender: the trace
// session's one thread (it turns idle sources off) waits meanwhile, so that
// it holds no allocator lock at the fork. The children allocate (threads, the
// sender's /proc listings), and the ASan runtime of g++ 12 does not lock its
// allocator around fork(): a child forked while that thread allocated could
// hang in its first malloc. Not held while starting or stopping a trace.
std::unique_lock<std::mutex> quiesce_tracing_for_fork();

class SignalTrace {
 public:
  // Starts recording the events of process `target` (its threads named
  // kTargetComm). Returns null and sets why_not (one line, naming each
  // source tried and why it cannot run) when no source can run here.
  // Throws std::invalid_argument when DOORBELL_E2E_TRACE has another value.
  static std::unique_ptr<SignalTrace> start(pid_t target, std::string& why_not);
  ~SignalTrace();
  SignalTrace(const SignalTrace&) = delete;
  SignalTrace& operator=(const SignalTrace&) = delete;

  // Stops recording and returns the events of the given threads, by time.
  // Call once.
  std::vector<TraceEvent> stop_and_collect(const std::vector<pid_t>& tids);

  TraceSource source() const noexcept { return source_; }
  // One line for the results: which source ran, and why that one.
  const std::string& description() const noexcept { return description_; }
  // Events the source lost while this trace recorded (after
  // stop_and_collect; 0 before).
  uint64_t lost() const noexcept { return lost_; }
  // tracefs was not mounted here and the binding mounted it privately.
  bool mounted_by_us() const noexcept { return mounted_by_us_; }

 private:
  SignalTrace() = default;
  TraceSource source_ = TraceSource::tracefs;
  std::string description_;
  uint64_t lost_ = 0;
  bool mounted_by_us_ = false;
  bool collected_ = false;
};

}  // namespace doorbell::lab::e2e
