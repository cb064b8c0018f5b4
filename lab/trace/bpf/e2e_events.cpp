#include "lab/trace/bpf/e2e_events.h"

#include <bpf/bpf.h>
#include <bpf/libbpf.h>

#include <cerrno>
#include <cstring>

#include "e2e_events.skel.h"

namespace doorbell::lab::trace::bpf {

E2eEventPrograms::E2eEventPrograms(uint32_t ring_bytes) {
  require_kernel_btf();
  CapturedMessages messages;
  skeleton_ = doorbell_e2e_events__open();
  if (skeleton_ == nullptr)
    throw BpfUnavailable(load_failure("opening the embedded BPF programs", errno, messages));
  // reschedule_entry is x86's (irq_vectors), and a kernel may lack it: the
  // lab's tracefs source goes without it too (the split then has no IPI
  // to fall back on for a thread that was running).
  reschedule_ = libbpf_find_vmlinux_btf_id("reschedule_entry", BPF_TRACE_RAW_TP) > 0;
  bpf_program__set_autoload(skeleton_->progs.on_reschedule_entry, reschedule_);
  bpf_map__set_max_entries(skeleton_->maps.events, ring_bytes);
  const int error = doorbell_e2e_events__load(skeleton_);
  if (error != 0) {
    doorbell_e2e_events__destroy(skeleton_);
    throw BpfUnavailable(load_failure("loading the BPF programs", -error, messages));
  }
  ring_ = ring_buffer__new(bpf_map__fd(skeleton_->maps.events), on_record, this, nullptr);
  if (ring_ == nullptr) {
    const int ring_error = errno;
    doorbell_e2e_events__destroy(skeleton_);
    throw BpfUnavailable(load_failure("opening the ring buffer", ring_error, messages));
  }
}

E2eEventPrograms::~E2eEventPrograms() {
  ring_buffer__free(ring_);
  doorbell_e2e_events__destroy(skeleton_);  // detaches too
}

void E2eEventPrograms::attach() {
  if (attached_) return;
  CapturedMessages messages;
  const int error = doorbell_e2e_events__attach(skeleton_);
  if (error != 0) {
    doorbell_e2e_events__detach(skeleton_);
    throw BpfUnavailable(load_failure("attaching the BPF programs", -error, messages));
  }
  attached_ = true;
}

void E2eEventPrograms::detach() noexcept {
  if (!attached_) return;
  doorbell_e2e_events__detach(skeleton_);
  attached_ = false;
}

void E2eEventPrograms::watch(pid_t tgid) noexcept {
  // release: what this thread did before (draining the buffer, zeroing the
  // count) comes before any record of the new process.
  __atomic_store_n(&skeleton_->bss->target_tgid, static_cast<__u32>(tgid), __ATOMIC_RELEASE);
}

int E2eEventPrograms::on_record(void* context, void* data, std::size_t size) {
  auto* self = static_cast<E2eEventPrograms*>(context);
  if (size < sizeof(doorbell_e2e_event) || self->visiting_ == nullptr) return 0;
  doorbell_e2e_event record;
  std::memcpy(&record, data, sizeof record);
  (*self->visiting_)(record);
  return 0;
}

std::size_t E2eEventPrograms::drain(const std::function<void(const doorbell_e2e_event&)>& visit) {
  visiting_ = &visit;
  const int n = ring_buffer__consume(ring_);
  visiting_ = nullptr;
  return n < 0 ? 0 : static_cast<std::size_t>(n);
}

uint64_t E2eEventPrograms::take_lost() noexcept {
  // The programs add with an atomic instruction on the same word.
  return __atomic_exchange_n(&skeleton_->bss->lost, 0, __ATOMIC_ACQ_REL);
}

}  // namespace doorbell::lab::trace::bpf
