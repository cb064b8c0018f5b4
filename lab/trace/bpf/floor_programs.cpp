#include "lab/trace/bpf/floor_programs.h"

#include <bpf/libbpf.h>

#include <cerrno>

#include "floor.skel.h"

namespace doorbell::lab::trace::bpf {

FloorPrograms::FloorPrograms() {
  require_kernel_btf();
  CapturedMessages messages;
  skeleton_ = doorbell_floor__open();
  if (skeleton_ == nullptr)
    throw BpfUnavailable(load_failure("opening the embedded BPF programs", errno, messages));
  int error = doorbell_floor__load(skeleton_);
  if (error == 0) {
    error = doorbell_floor__attach(skeleton_);
    if (error == 0) return;
    doorbell_floor__destroy(skeleton_);
    throw BpfUnavailable(load_failure("attaching the BPF programs", -error, messages));
  }
  doorbell_floor__destroy(skeleton_);
  throw BpfUnavailable(load_failure("loading the BPF programs", -error, messages));
}

FloorPrograms::~FloorPrograms() {
  doorbell_floor__destroy(skeleton_);  // detaches too
}

}  // namespace doorbell::lab::trace::bpf
