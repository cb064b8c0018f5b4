#include "lab/trace/bpf/floor_programs.h"

#include <bpf/libbpf.h>

#include <cerrno>
#include <string>

#include "floor.skel.h"

namespace doorbell::lab::trace::bpf {

FloorPrograms::FloorPrograms(bool with_syscall_exits) {
  require_kernel_btf();
  CapturedMessages messages;
  // The route the bpf backend takes (signal_programs.cpp): the per-call
  // tracepoints where tracefs gives their ids, else every call's exit.
  std::string why;
  int ids[3] = {-1, -1, -1};
  if (with_syscall_exits) {
    ids[0] = syscall_event_id("sys_exit_rt_sigtimedwait", why);
    ids[1] = ids[0] < 0 ? -1 : syscall_event_id("sys_exit_read", why);
    ids[2] = ids[1] < 0 ? -1 : syscall_event_id("sys_exit_rt_sigaction", why);
  }
  const bool per_call = with_syscall_exits && ids[2] >= 0;
  skeleton_ = doorbell_floor__open();
  if (skeleton_ == nullptr)
    throw BpfUnavailable(load_failure("opening the embedded BPF programs", errno, messages));
  bpf_program__set_autoload(skeleton_->progs.floor_sys_exit_call, per_call);
  bpf_program__set_autoattach(skeleton_->progs.floor_sys_exit_call, false);
  bpf_program__set_autoload(skeleton_->progs.floor_sys_exit_every, with_syscall_exits && !per_call);
  auto give_up = [&](const char* step, int error) {
    const std::string reason = load_failure(step, error, messages);
    for (bpf_link* link : perf_links_) bpf_link__destroy(link);
    perf_links_.clear();
    doorbell_floor__destroy(skeleton_);
    skeleton_ = nullptr;
    throw BpfUnavailable(reason);
  };
  int error = doorbell_floor__load(skeleton_);
  if (error != 0) give_up("loading the BPF programs", -error);
  error = doorbell_floor__attach(skeleton_);
  if (error != 0) give_up("attaching the BPF programs", -error);
  if (per_call)
    for (const int id : ids) {
      bpf_link* link = attach_to_tracepoint(skeleton_->progs.floor_sys_exit_call, id);
      if (link == nullptr) give_up("attaching to the system-call tracepoints", errno);
      perf_links_.push_back(link);
    }
}

FloorPrograms::~FloorPrograms() {
  for (bpf_link* link : perf_links_) bpf_link__destroy(link);
  doorbell_floor__destroy(skeleton_);  // detaches the rest too
}

std::vector<ProgramCost> FloorPrograms::costs() const {
  return program_costs(skeleton_->obj);
}

}  // namespace doorbell::lab::trace::bpf
