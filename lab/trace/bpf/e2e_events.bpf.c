/* The e2e lab's second source of kernel events (lab/scenarios/e2e_trace.h):
 * where tracefs is unavailable, these programs record what the lab's tracefs
 * instance records, for the one process the lab watches, and hand each event
 * to user space through a ring buffer, which the lab reads at the end of each
 * repetition.
 *
 * Compiled by clang -target bpf at build time and embedded in the CLI as a
 * libbpf skeleton; CO-RE against the running kernel's BTF through the
 * minimal declarations of kernel_types.bpf.h, like signals.bpf.c.
 *
 * Programs (BTF-typed raw tracepoints, tp_btf: no tracefs needed):
 *   signal_generate   a signal sent to a thread of the target (the thread
 *                     the kernel was handed: the leader for kill/sigqueue)
 *   signal_deliver    a thread of the target takes a signal (handler or
 *                     default action)
 *   sched_switch      a thread of the target gets a CPU
 *   sched_wakeup      a thread of the target is woken
 *   reschedule_entry  a reschedule IPI lands while a thread of the target
 *                     runs (x86's irq_vectors; the loader leaves it out where
 *                     the kernel has no such BTF tracepoint)
 *
 * Filter. Only the process whose tgid user space wrote to target_tgid is
 * recorded; 0 (between repetitions) records nothing. Each program reads it
 * once and compares one field of a trusted task pointer, so the cost for
 * every other process is a load and a compare.
 *
 * Losses. A record that finds the ring buffer full is counted in `lost`
 * (user space reads and zeroes it with each repetition), never dropped in
 * silence. */
#include "lab/trace/bpf/kernel_types.bpf.h"

#include <bpf/bpf_helpers.h>
#include <bpf/bpf_tracing.h>

#include "lab/trace/bpf/e2e_events_abi.h"

char LICENSE[] SEC("license") = "Dual BSD/GPL";

/* Written by user space through the mmap of .bss: the process recorded (0:
 * none), and the records lost since user space last took the count. */
volatile __u32 target_tgid = 0;
__u64 lost = 0;

struct {
  __uint(type, BPF_MAP_TYPE_RINGBUF);
  __uint(max_entries, DOORBELL_E2E_RING_BYTES);
} events SEC(".maps");

static __always_inline bool watched(u32 tgid) {
  u32 target = target_tgid;
  return target != 0 && tgid == target;
}

static __always_inline void emit(u32 kind, s32 tid, s32 sig) {
  u64 now = bpf_ktime_get_ns();
  struct doorbell_e2e_event* e = bpf_ringbuf_reserve(&events, sizeof(*e), 0);
  if (!e) {
    __sync_fetch_and_add(&lost, 1);
    return;
  }
  e->ts_ns = now;
  e->kind = kind;
  e->tid = tid;
  e->sig = sig;
  e->cpu = (s32)bpf_get_smp_processor_id();
  bpf_ringbuf_submit(e, 0);
}

/* The current thread, when it belongs to the target: its tid, else 0. */
static __always_inline s32 current_target_thread(void) {
  u64 id = bpf_get_current_pid_tgid();
  return watched((u32)(id >> 32)) ? (s32)(u32)id : 0;
}

SEC("tp_btf/signal_generate")
int BPF_PROG(on_signal_generate, int sig, struct kernel_siginfo* info, struct task_struct* task,
             int group, int result) {
  if (watched(task->tgid)) emit(DOORBELL_E2E_GENERATE, task->pid, sig);
  return 0;
}

SEC("tp_btf/signal_deliver")
int BPF_PROG(on_signal_deliver, int sig, struct kernel_siginfo* info, struct k_sigaction* ka) {
  s32 tid = current_target_thread();
  if (tid) emit(DOORBELL_E2E_DELIVER, tid, sig);
  return 0;
}

SEC("tp_btf/sched_switch")
int BPF_PROG(on_sched_switch, bool preempt, struct task_struct* prev, struct task_struct* next) {
  if (watched(next->tgid)) emit(DOORBELL_E2E_SWITCH_IN, next->pid, 0);
  return 0;
}

SEC("tp_btf/sched_wakeup")
int BPF_PROG(on_sched_wakeup, struct task_struct* p) {
  if (watched(p->tgid)) emit(DOORBELL_E2E_WAKEUP, p->pid, 0);
  return 0;
}

SEC("tp_btf/reschedule_entry")
int BPF_PROG(on_reschedule_entry, int vector) {
  s32 tid = current_target_thread();
  if (tid) emit(DOORBELL_E2E_IPI, tid, 0);
  return 0;
}
