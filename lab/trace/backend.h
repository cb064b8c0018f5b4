// The two ways `doorbell trace` reads the kernel, behind one interface, and
// the one place that chooses between them.
//
//  - bpf: programs on the signal, scheduler and system-call tracepoints pair
//    and count in the kernel (lab/trace/bpf/); user space reads their maps
//    once per interval. Sees signals taken by sigwait and signalfd, the cause
//    of each delay, and every slow delivery in detail. Needs root (or
//    CAP_BPF with CAP_PERFMON), kernel BTF and Linux 6.1 or later.
//  - tracefs: a tracing instance of its own with the two signal events,
//    every event read in user space (lab/trace/signal_tracing.h). Needs root
//    (or write access to tracefs); sees handler and default-action
//    deliveries only, and no causes.
//
// choose_backend() takes BPF where it loads and tracefs otherwise, and says
// in one line which ran and why the other did not. Both feed the same
// Tracker, so the table and the JSON have one shape.
//
// Not thread-safe: one thread drives a Backend. Destroying it detaches
// everything (the BPF programs, the tracefs instance).
#pragma once

#include <sys/types.h>

#include <array>
#include <cstdint>
#include <memory>
#include <optional>
#include <stdexcept>
#include <string>
#include <vector>

#include "lab/trace/tracker.h"

namespace doorbell::lab::trace {

enum class BackendKind { bpf, tracefs };
const char* backend_name(BackendKind kind);  // "bpf", "tracefs"

struct BackendOptions {
  pid_t only = 0;                // 0: every process
  uint64_t slow_ns = 1'000'000;  // bpf: deliveries at least this slow are reported one by one
  // bpf: watch system-call exits through tp_btf/sys_exit even where the
  // per-call tracepoints are available (lab/trace/bpf/signal_programs.h).
  bool every_syscall = false;
  // bpf, tests only: behave as on a kernel without the bpf_task_from_pid
  // kfunc (before Linux 6.2), so that the fallback runs here too.
  bool without_task_from_pid = false;
};

// How a signal was taken.
enum class TakenBy { handler = 0, sigwait = 1, signalfd = 2 };
const char* taken_by_name(TakenBy how);  // "handler", "sigwait", "signalfd"

// One delivery at least BackendOptions::slow_ns slow (bpf only).
struct SlowDelivery {
  uint64_t generated_ns = 0;  // CLOCK_MONOTONIC
  uint64_t taken_ns = 0;
  pid_t tgid = 0;
  pid_t taker_tid = 0;   // the thread that took it
  pid_t target_tid = 0;  // the thread signal_generate named (the main thread for kill())
  pid_t sender_tgid = 0;
  int sig = 0;
  TakenBy how = TakenBy::handler;
  Cause cause = Cause::on_cpu;  // the largest part
  std::array<uint64_t, kCauses> cause_ns{};
  uint64_t longest_runnable_ns = 0;  // its longest wait for a CPU
  // Who ran instead: the task on its CPU when the signal came (when the
  // thread that took it was then runnable, not running), and the task
  // switched out when it got the CPU at the end of its longest wait. 0: none.
  pid_t held_by_tid = 0;
  std::string held_by_comm;
  pid_t last_before_tid = 0;
  std::string last_before_comm;
  std::string comm;  // the taking thread's name

  uint64_t delay_ns() const noexcept { return taken_ns - generated_ns; }
};

// A backend cannot run here; what() says why, in one line.
class BackendUnavailable : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

class Backend {
 public:
  virtual ~Backend() = default;
  virtual BackendKind kind() const noexcept = 0;
  // What it reads from, for the start line ("7 BPF programs attached",
  // "tracefs instance doorbell-trace-123").
  virtual std::string source() const = 0;
  // The tracefs instance's name; empty for bpf.
  virtual std::string instance() const { return {}; }
  // Lines worth telling the user once, at the start (a private tracefs
  // mount, stale instances removed).
  virtual std::vector<std::string> notes() const { return {}; }
  // Whether it sees sigwait and signalfd takes, causes and slow deliveries.
  virtual bool sees_causes() const noexcept = 0;
  // Brings `tracker` up to date with what the kernel saw; appends the slow
  // deliveries seen since the last call to `slow` when given. The bpf
  // backend reads its maps here: call it once per interval.
  virtual void collect(Tracker& tracker, std::vector<SlowDelivery>* slow) = 0;
  // What must be read often between two collect() calls so that nothing
  // overflows: tracefs drains its ring buffers into `tracker` (the same as
  // collect()); bpf only takes the slow deliveries from its ring buffer.
  virtual void poll(Tracker& tracker, std::vector<SlowDelivery>* slow) { collect(tracker, slow); }
  // Events it could not count since the start (ring buffers overrun, maps
  // full): only events; a delay not measured is counted per stream
  // (Counts::unmeasured()), a slow-delivery line dropped in slow_dropped().
  // 0 is the normal case, and the tests insist on it.
  virtual long long lost_events() const = 0;
  // bpf: slow-delivery lines the ring buffer had no room for (their counts
  // and delays are kept).
  virtual long long slow_dropped() const { return 0; }
  // bpf: state changes its cause log missed (no per-thread state could be
  // made): a delay's split may be off by them, no count is.
  virtual long long unlogged_state_changes() const { return 0; }
  // bpf: queued signals not remembered because no per-process state (task
  // storage) could be made for them: their takes count as unpaired.
  virtual long long unremembered_signals() const { return 0; }
};

// Opens one backend; throws BackendUnavailable.
std::unique_ptr<Backend> open_backend(BackendKind kind, const BackendOptions& options);
// The two implementations (tracefs_backend.cpp, bpf_backend.cpp).
std::unique_ptr<Backend> open_tracefs_backend(const BackendOptions& options);
std::unique_ptr<Backend> open_bpf_backend(const BackendOptions& options);

struct BackendChoice {
  std::unique_ptr<Backend> backend;
  std::string why;  // one line: which ran, and why the other did not
};

// `wanted`: nullopt takes bpf where it loads, else tracefs; a kind takes
// that one only. Throws BackendUnavailable (with every reason) when none
// can run.
BackendChoice choose_backend(std::optional<BackendKind> wanted, const BackendOptions& options);

}  // namespace doorbell::lab::trace
