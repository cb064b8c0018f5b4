// The floor programs of `doorbell trace --measure-overhead` (floor.bpf.c):
// an empty program that reads the clock on signal_generate and one on
// signal_deliver, attached for the lifetime of a FloorPrograms. They count
// nothing; their cost is what any tracer that timestamps both ends pays.
// With the system-call exits, an empty program also hangs on each exit the
// bpf backend watches (rt_sigtimedwait, read, rt_sigaction; the exit of
// every system call where tracefs has no per-call tracepoints): what any
// tracer that also sees sigwait and signalfd takes pays, on every system
// call of every task.
//
// Needs what the bpf backend needs (kernel BTF, root or CAP_BPF with
// CAP_PERFMON); throws BpfUnavailable with a one-line reason otherwise. The
// destructor detaches and unloads; the kernel detaches them when the process
// dies. Nothing is pinned.
#pragma once

#include <vector>

#include "lab/trace/bpf/loading.h"

struct bpf_link;
struct doorbell_floor;  // the skeleton (floor.skel.h)

namespace doorbell::lab::trace::bpf {

class FloorPrograms {
 public:
  // Loads and attaches the programs. Throws BpfUnavailable.
  explicit FloorPrograms(bool with_syscall_exits = false);
  ~FloorPrograms();
  FloorPrograms(const FloorPrograms&) = delete;
  FloorPrograms& operator=(const FloorPrograms&) = delete;

  // What the kernel's run-time statistics say of each loaded program
  // (SignalPrograms::costs).
  std::vector<ProgramCost> costs() const;

 private:
  doorbell_floor* skeleton_ = nullptr;
  std::vector<bpf_link*> perf_links_;  // the per-call system-call exits
};

}  // namespace doorbell::lab::trace::bpf
