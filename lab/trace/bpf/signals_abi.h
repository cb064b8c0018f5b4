/* What the BPF programs of `doorbell trace` (signals.bpf.c) and their loader
 * (signal_bpf.cpp) share: the keys and values of the maps user space reads
 * and the record of a slow delivery. Plain C with fixed-width types, read by
 * clang -target bpf and by the C++ compiler alike; nothing here may depend
 * on the kernel's own headers beyond <linux/types.h>.
 *
 * Every counter is cumulative since the programs were loaded: user space
 * reads the maps once per interval and takes differences. */
#ifndef DOORBELL_LAB_TRACE_BPF_SIGNALS_ABI_H
#define DOORBELL_LAB_TRACE_BPF_SIGNALS_ABI_H

#include <linux/types.h>

#define DOORBELL_COMM_LEN 16
#define DOORBELL_MAX_SIGNAL 64

/* The delay histogram: 4 buckets per power of two of nanoseconds. Values
 * 0..3 ns have a bucket each; a value v >= 4 with its highest set bit at
 * position b (2 <= b <= 40) goes to 4 * (b - 1) + the two bits below b.
 * Larger values (> 2^41 ns, 36 minutes) land in the last bucket. */
#define DOORBELL_DELAY_BUCKETS 160

/* Why a signal waited, from the scheduler state of the thread that took it
 * between the generate and the take (docs/trace.md, "Causes"). */
enum doorbell_cause {
  DOORBELL_CAUSE_ON_CPU = 0,   /* running; noticed at its next return to user space */
  DOORBELL_CAUSE_RUNNABLE = 1, /* runnable, waiting for a CPU */
  DOORBELL_CAUSE_ASLEEP = 2,   /* asleep, and the signal did not wake it */
  DOORBELL_CAUSE_BLOCKED = 3,  /* blocked in every thread until one unblocked or waited for it */
  DOORBELL_CAUSES = 4,
};

/* How a signal was taken. */
enum doorbell_take {
  DOORBELL_TAKE_DELIVER = 0,  /* signal_deliver: a handler or the default action */
  DOORBELL_TAKE_SIGWAIT = 1,  /* rt_sigtimedwait returned it (sigwait, sigwaitinfo, sigtimedwait) */
  DOORBELL_TAKE_SIGNALFD = 2, /* a read of a signalfd returned it */
};

/* Counters of what the programs could not account (never silent). Only
 * STATS_FULL and SIGNALFD_READ lose events (a generate or a take not
 * counted): user space reports their sum as lost events. QUEUE_FULL and
 * STORAGE lose the memory of a queued signal: its take is counted, its delay
 * not measured (per signal: doorbell_stats.unmeasured). SLOW_DROPPED loses a
 * slow-delivery line (its counts and delay are kept). STATE_LOG loses a
 * state change of the cause log (a delay's split may be off; no count is). */
enum doorbell_loss {
  DOORBELL_LOSS_STATS_FULL = 0,    /* no room for a new (process, signal) entry */
  DOORBELL_LOSS_QUEUE_FULL = 1,    /* no room to remember a queued signal: its delay unmeasured */
  DOORBELL_LOSS_SLOW_DROPPED = 2,  /* the slow-delivery ring buffer was full */
  DOORBELL_LOSS_STORAGE = 3,       /* no per-process or per-thread state for a queued signal */
  DOORBELL_LOSS_SIGNALFD_READ = 4, /* signalfd records beyond the 64 read per read(2) */
  DOORBELL_LOSS_STATE_LOG = 5,     /* a state change not logged (no per-thread state) */
  DOORBELL_LOSSES = 6,
};

/* A process is its id and its start: a PID reused by a later process is
 * another key, never added to the counters of the one before (whose key,
 * older, says it is gone and final). */
struct doorbell_stats_key {
  __u32 tgid;
  __u32 sig;
  __u64 start; /* the group leader's start_boottime (ns since boot); 0: not known */
};

struct doorbell_sender {
  __u32 tgid_plus_one; /* 0: free slot; the kernel (tgid 0) is stored as 1 */
  __u32 pad;
  __u64 count;
  char comm[DOORBELL_COMM_LEN];
};

#define DOORBELL_SENDER_SLOTS 8

/* Per (process, signal), one copy per CPU (a per-CPU hash: the programs
 * count without atomic operations); user space adds the copies. */
struct doorbell_stats {
  __u64 generated;      /* signal_generate, any result */
  __u64 queued;         /* result 0 or 4: put in a queue */
  __u64 merged;         /* result 2: the same standard signal was pending already */
  __u64 ignored;        /* result 1 */
  __u64 failed;         /* result 3: the real-time queue was full (RLIMIT_SIGPENDING) */
  __u64 delivered;      /* taken by a handler or the default action (signal_deliver) */
  __u64 taken_sigwait;  /* taken by rt_sigtimedwait */
  __u64 taken_signalfd; /* taken by a read of a signalfd */
  __u64 unpaired;       /* takes with no generate seen (sent before tracing began) */
  __u64 discarded;      /* queued, never taken: its thread or process exited first, or it
                           was flushed (sigaction to SIG_IGN while pending) */
  __u64 unmeasured;     /* taken, but its generate was not remembered (a table was full) */
  __u64 delay_sum_ns;   /* generate -> take, paired takes only */
  __u64 delay_max_ns;   /* of this CPU's takes: user space takes the largest */
  __u64 delay_buckets[DOORBELL_DELAY_BUCKETS];
  __u64 cause_ns[DOORBELL_CAUSES];    /* the delay of paired takes, split by cause */
  __u64 cause_count[DOORBELL_CAUSES]; /* paired takes whose largest part was this cause */
  __u64 switch_in_unseen;             /* takes whose thread was seen woken but not switched in */
  __u64 senders_other;                /* generates from senders beyond the slots */
  struct doorbell_sender senders[DOORBELL_SENDER_SLOTS];
  /* The longest single wait for a CPU, and who ran instead: the task that
   * held the taker's CPU when the signal came, else the one switched out
   * when the wait ended. */
  __u64 longest_runnable_ns;
  __u32 ran_instead_tid;
  __u32 pad;
  char ran_instead_comm[DOORBELL_COMM_LEN];
  char comm[DOORBELL_COMM_LEN]; /* the process (its group leader's name); in one CPU's copy */
};

/* One delivery slower than the --slow-us threshold, through the ring buffer. */
struct doorbell_slow {
  __u64 ts_generate; /* CLOCK_MONOTONIC ns */
  __u64 ts_take;
  __u64 cause_ns[DOORBELL_CAUSES];
  __u32 tgid;
  __u32 taker_tid;   /* the thread that took it */
  __u32 target_tid;  /* the thread signal_generate named (the leader for kill()) */
  __u32 sender_tgid; /* 0: the kernel */
  __u32 sig;
  __u32 how;             /* enum doorbell_take */
  __u32 cause;           /* enum doorbell_cause: the largest part */
  __u32 held_by_tid;     /* runnable when sent: the task on its CPU then (0: unknown) */
  __u32 last_before_tid; /* the task switched out when it got its CPU (0: none) */
  __u32 pad;
  __u64 longest_runnable_ns;
  char comm[DOORBELL_COMM_LEN]; /* the taking thread */
  char held_by_comm[DOORBELL_COMM_LEN];
  char last_before_comm[DOORBELL_COMM_LEN];
};

#endif
