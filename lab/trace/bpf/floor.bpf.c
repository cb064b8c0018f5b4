/* The floor of `doorbell trace --measure-overhead` (lab/trace/overhead.h):
 * one program on each end of a signal, signal_generate and signal_deliver,
 * the attach points of signals.bpf.c (BTF-typed tracepoints, tp_btf), that
 * only read the clock (bpf_ktime_get_ns) and keep nothing. What any tracer
 * that timestamps both ends of a signal pays before its first map
 * operation.
 *
 * Compiled by clang -target bpf at build time and embedded in the CLI as a
 * libbpf skeleton, like signals.bpf.c. */
#include "lab/trace/bpf/kernel_types.bpf.h"

#include <bpf/bpf_helpers.h>
#include <bpf/bpf_tracing.h>

char LICENSE[] SEC("license") = "Dual BSD/GPL";

SEC("tp_btf/signal_generate")
int BPF_PROG(floor_signal_generate) {
  bpf_ktime_get_ns();
  return 0;
}

SEC("tp_btf/signal_deliver")
int BPF_PROG(floor_signal_deliver) {
  bpf_ktime_get_ns();
  return 0;
}

/* The floor with the system-call exits (FloorPrograms's with_syscall_exits):
 * an empty program on each exit the bpf backend watches for takes by
 * sigwait and signalfd and for discards by sigaction. Attached, a
 * system-call tracepoint makes every system call of every task take the
 * kernel's slower path: the cost of seeing those takes at all. One program,
 * attached by the loader to the per-call tracepoints (perf events with the
 * ids tracefs gives); without them, the exit of every system call, as the
 * backend does. */
SEC("tracepoint/syscalls/sys_exit_read")
int floor_sys_exit_call(void* ctx) {
  return 0;
}

SEC("tp_btf/sys_exit")
int BPF_PROG(floor_sys_exit_every) {
  return 0;
}
