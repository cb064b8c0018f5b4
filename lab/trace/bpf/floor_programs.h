// The floor programs of `doorbell trace --measure-overhead` (floor.bpf.c):
// an empty program that reads the clock on signal_generate and one on
// signal_deliver, attached for the lifetime of a FloorPrograms. They count
// nothing; their cost is what any tracer that timestamps both ends pays.
//
// Needs what the bpf backend needs (kernel BTF, root or CAP_BPF with
// CAP_PERFMON); throws BpfUnavailable with a one-line reason otherwise. The
// destructor detaches and unloads; the kernel detaches them when the process
// dies. Nothing is pinned.
#pragma once

#include "lab/trace/bpf/loading.h"

struct doorbell_floor;  // the skeleton (floor.skel.h)

namespace doorbell::lab::trace::bpf {

class FloorPrograms {
 public:
  // Loads and attaches both programs. Throws BpfUnavailable.
  FloorPrograms();
  ~FloorPrograms();
  FloorPrograms(const FloorPrograms&) = delete;
  FloorPrograms& operator=(const FloorPrograms&) = delete;

 private:
  doorbell_floor* skeleton_ = nullptr;
};

}  // namespace doorbell::lab::trace::bpf
