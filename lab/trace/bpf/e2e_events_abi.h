/* What the e2e lab's BPF programs (e2e_events.bpf.c) and their loader
 * (e2e_events.cpp) share: the record of one kernel event of the target
 * process, as it travels through the ring buffer. Plain C with fixed-width
 * types, read by clang -target bpf and by the C++ compiler alike. */
#ifndef DOORBELL_LAB_TRACE_BPF_E2E_EVENTS_ABI_H
#define DOORBELL_LAB_TRACE_BPF_E2E_EVENTS_ABI_H

#include <linux/types.h>

/* The ring buffer's size: 8 MiB, 262,144 records of 32 bytes (with the
 * ring buffer's 8-byte header). A repetition of the e2e lab with 33 busy
 * threads on 2 CPUs makes about 1,500 a second; the buffer is read once, at
 * the end of each repetition. */
#define DOORBELL_E2E_RING_BYTES (8u << 20)

/* The tracepoint each record comes from. */
enum doorbell_e2e_kind {
  DOORBELL_E2E_GENERATE = 0,  /* signal_generate to a thread of the target; tid: that thread */
  DOORBELL_E2E_DELIVER = 1,   /* signal_deliver in a thread of the target; tid: current */
  DOORBELL_E2E_SWITCH_IN = 2, /* sched_switch onto a thread of the target; tid: next */
  DOORBELL_E2E_WAKEUP = 3,    /* sched_wakeup of a thread of the target; tid: the woken */
  DOORBELL_E2E_IPI = 4,       /* reschedule_entry while a thread of the target ran; tid: current */
};

struct doorbell_e2e_event {
  __u64 ts_ns; /* bpf_ktime_get_ns(): CLOCK_MONOTONIC */
  __u32 kind;  /* enum doorbell_e2e_kind */
  __s32 tid;
  __s32 sig; /* generate and deliver only; 0 otherwise */
  __s32 cpu;
};

#endif
