// The user-space half of the e2e lab's BPF source of kernel events: loads
// the programs of e2e_events.bpf.c (embedded as a libbpf skeleton), attaches
// and detaches them, chooses the one process they record, and reads their
// ring buffer. lab/scenarios/e2e_trace.h uses it where tracefs is
// unavailable, or where DOORBELL_E2E_TRACE=bpf asks for it.
//
// Requirements, each checked with a one-line reason when missing (the
// exception BpfUnavailable): kernel BTF (/sys/kernel/btf/vmlinux), and
// permission to load and attach BPF tracing programs (root, or CAP_BPF with
// CAP_PERFMON). irq_vectors:reschedule_entry is watched only where the kernel
// has it as a BTF tracepoint (x86); watches_reschedule() says whether.
//
// Contract: every event of the watched process from watch(tgid) on is in
// the ring buffer, or counted by take_lost(); none is dropped in silence.
// Events of other processes are never recorded. Timestamps are
// CLOCK_MONOTONIC (bpf_ktime_get_ns).
//
// Lifetime: the constructor loads (the verifier runs) and attaches nothing;
// attach() and detach() may alternate (attaching patches kernel text, so a
// caller keeps the programs attached across short gaps); the destructor
// detaches and unloads. The kernel detaches everything when the process dies,
// so no exit path (SIGKILL included) leaves a program attached. Nothing is
// pinned in /sys/fs/bpf.
//
// Threads: one E2eEventPrograms is used from one thread at a time. Memory
// ordering: watch() stores the tgid with release semantics into the
// programs' .bss (shared memory with the kernel); a program that runs after
// the store on any CPU sees it. Fork: a child shares the loaded programs and
// the ring buffer's descriptor until it exits or execs; it must not destroy
// its parent's E2eEventPrograms.
#pragma once

#include <sys/types.h>

#include <cstddef>
#include <cstdint>
#include <functional>

#include "lab/trace/bpf/e2e_events_abi.h"
#include "lab/trace/bpf/loading.h"

struct doorbell_e2e_events;  // the skeleton (e2e_events.skel.h)
struct ring_buffer;          // libbpf

namespace doorbell::lab::trace::bpf {

class E2eEventPrograms {
 public:
  // Opens and loads the programs, and opens the ring buffer of ring_bytes
  // (a power of two, at least the page size; the tests make it small to
  // fill it); attaches nothing. Throws BpfUnavailable.
  explicit E2eEventPrograms(uint32_t ring_bytes = DOORBELL_E2E_RING_BYTES);
  ~E2eEventPrograms();
  E2eEventPrograms(const E2eEventPrograms&) = delete;
  E2eEventPrograms& operator=(const E2eEventPrograms&) = delete;

  // Attaches every loaded program (no-op when attached). Throws
  // BpfUnavailable, with everything detached again.
  void attach();
  // Detaches every program (no-op when detached).
  void detach() noexcept;
  bool attached() const noexcept { return attached_; }
  // Whether irq_vectors:reschedule_entry is among the programs.
  bool watches_reschedule() const noexcept { return reschedule_; }

  // Records the events of process `tgid` from now on; 0 records nothing.
  void watch(pid_t tgid) noexcept;
  // Consumes every record waiting in the ring buffer; returns how many.
  std::size_t drain(const std::function<void(const doorbell_e2e_event&)>& visit);
  // The records that found the ring buffer full since the last call, and
  // zeroes the count.
  uint64_t take_lost() noexcept;

 private:
  static int on_record(void* context, void* data, std::size_t size);

  doorbell_e2e_events* skeleton_ = nullptr;
  ring_buffer* ring_ = nullptr;
  bool attached_ = false;
  bool reschedule_ = false;
  const std::function<void(const doorbell_e2e_event&)>* visiting_ = nullptr;
};

}  // namespace doorbell::lab::trace::bpf
