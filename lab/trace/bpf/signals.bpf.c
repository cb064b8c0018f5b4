/* The kernel half of `doorbell trace`'s BPF backend: it pairs each signal's
 * generate with its take and aggregates per (process, signal) in maps that
 * user space reads once per interval; only deliveries slower than a
 * threshold travel through a ring buffer, one record each.
 *
 * Compiled by clang -target bpf at build time and embedded in the CLI as a
 * libbpf skeleton; CO-RE against the running kernel's BTF through the
 * minimal declarations of kernel_types.bpf.h (why not vmlinux.h: there).
 *
 * Programs (all BTF-typed raw tracepoints, tp_btf: no tracefs needed):
 *   signal_generate   in the sender: count by result; remember a queued one
 *   signal_deliver    in the taker: a handler or the default action took it
 *   the exits of rt_sigtimedwait and read
 *                     rt_sigtimedwait returned a signal, or a read of a
 *                     signalfd returned some (the file behind the fd is
 *                     checked at the read, so signalfds made before tracing
 *                     began, inherited or dup'ed count too). Through the
 *                     per-system-call tracepoints syscalls:sys_exit_* where
 *                     tracefs gives their ids (attached as perf events: the
 *                     kernel skips every other system call before any BPF
 *                     runs), else through tp_btf/sys_exit, which runs on every
 *                     system call (about 35 ns each here).
 *   sched_switch, sched_waking, sched_wakeup
 *                     the state changes of the threads of processes that
 *                     have a signal outstanding, from which the cause of
 *                     each delay is read at the take
 *   sched_process_exit
 *                     queued signals of an exiting thread or process are
 *                     counted as discarded and forgotten
 *   sched_process_exec
 *                     an exec from a thread that is not the leader: that
 *                     thread takes over the process's pid, and its own
 *                     FIFOs move to its new tid
 *
 * Pairing. Each queued signal gets a sequence number in a FIFO per
 * (thread, signal) for thread-directed signals (tgkill) and per (process,
 * signal) for process-directed ones (kill). A take pops the thread's own
 * FIFO first, then the process's: the order in which dequeue_signal()
 * looks (the thread's private queue, then the shared one). Within a
 * FIFO the oldest instance is taken first, as the kernel does. The shared
 * FIFOs live in the group leader's task storage with one instance inline
 * (a standard signal is pending at most once); the private ones in a hash
 * with four inline; more instances (queued real-time signals) spill to an
 * LRU map.
 *
 * Cost. The hot path (a signal generated and taken at once, the storm of
 * `doorbell trace --measure-overhead`) takes one clock read, one per-CPU
 * hash lookup and one task-storage lookup in each of generate and take, and
 * four atomic operations (the count of outstanding signals up and down, the
 * head of the FIFO, the freeing of its slot); the counters are per CPU and
 * need none, the tail moves under the siglock. The cause walk is skipped when no thread of the
 * process changed state since the generate (an epoch in the process's storage).
 *
 * Races. signal_generate and signal_deliver of one process run under its
 * siglock, so they are serialized. The system-call takes run after the
 * dequeue, outside the lock, and may race with a generate: the FIFO indices
 * are moved with atomic operations (head by compare-and-swap), so each
 * instance is popped once. Counters are per CPU; a tracepoint program does
 * not nest on its CPU. The per-thread transition ring is written by the thread's
 * CPU and by wakers: a torn entry can misplace a few microseconds of one
 * delay, never a count.
 *
 * Causes. When a process has a signal outstanding, every state change of
 * its threads is logged in the thread's task storage (16 entries): switched
 * in, preempted (still runnable), went to sleep, woken. At the take, the
 * log of the taking thread since the generate splits the delay: on a CPU,
 * runnable but waiting for one (and who was switched out when it got the
 * CPU), asleep. A signal that every thread blocked when it was generated
 * (and no sigwait was waiting for it) is "blocked" for its whole delay,
 * unless a signalfd took it: blocking is how a signalfd is used, so there
 * the causes describe the reading thread. */
#include "lab/trace/bpf/kernel_types.bpf.h"

#include <bpf/bpf_core_read.h>
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_tracing.h>

#include "lab/trace/bpf/signals_abi.h"

/* GPL-only helpers (bpf_probe_read_kernel, the task storage) need a
 * GPL-compatible program license. */
char LICENSE[] SEC("license") = "Dual BSD/GPL";

/* ------------------------------------------------------------ settings */

/* Set by the loader before load (read-only to the programs). The __u types:
 * the skeleton names them, and C++ knows them from <linux/types.h>. */
const volatile __u32 only_tgid = 0; /* 0: every process */
const volatile __u64 slow_ns = 1000000;
/* Tests only: behave as on a kernel without the bpf_task_from_pid kfunc
 * (before Linux 6.2), which this one has (BackendOptions). */
const volatile bool without_task_from_pid = false;
const volatile __s32 nr_read = -1; /* the system call numbers of this architecture */
const volatile __s32 nr_rt_sigtimedwait = -1;
const volatile __s32 nr_rt_sigaction = -1;

/* ------------------------------------------------------------ maps */

struct {
  __uint(type, BPF_MAP_TYPE_PERCPU_HASH);
  __uint(map_flags, BPF_F_NO_PREALLOC);
  __uint(max_entries, 8192);
  __type(key, struct doorbell_stats_key);
  __type(value, struct doorbell_stats);
} stats SEC(".maps");

#define PRIVATE_SLOTS 4
#define STATE_LOG 16
#define MAX_THREADS_WALKED 256
#define MAX_SIGNALFD_RECORDS 64
#define SIGNALFD_RECORD_SIZE 128 /* sizeof(struct signalfd_siginfo) */

#define INSTANCE_BLOCKED 1u /* every thread blocked it when it was generated */

struct instance {
  u64 ts;
  u32 seq; /* index + 1 while the slot holds instance `index`; 0: free */
  u32 sender_tgid;
  u32 target_tid;
  u32 flags;
  u32 epoch;      /* the process's epoch at the generate */
  u32 holder_tid; /* the target was runnable, not running: the task on its CPU */
  char holder_comm[DOORBELL_COMM_LEN];
};

struct shared_queue {
  u32 head; /* instances [head, tail) are outstanding */
  u32 tail;
  struct instance slot[1];
};

struct private_key {
  u32 tid;
  u32 sig;
};

struct private_queue {
  u32 head;
  u32 tail;
  struct instance slot[PRIVATE_SLOTS];
};

struct overflow_key {
  u32 id; /* a tid (private FIFO) or a tgid (shared FIFO) */
  u16 sig;
  u16 shared;
  u32 index;
  u32 pad;
};

struct {
  __uint(type, BPF_MAP_TYPE_HASH);
  __uint(map_flags, BPF_F_NO_PREALLOC);
  __uint(max_entries, 16384);
  __type(key, struct private_key);
  __type(value, struct private_queue);
} private_queues SEC(".maps");

/* Not an LRU: an entry is never evicted in silence. A push that finds it
 * full is counted (DOORBELL_LOSS_QUEUE_FULL) and its take counted as
 * unmeasured; entries are deleted when taken, discarded or left by an exit. */
struct {
  __uint(type, BPF_MAP_TYPE_HASH);
  __uint(map_flags, BPF_F_NO_PREALLOC);
  __uint(max_entries, 16384);
  __type(key, struct overflow_key);
  __type(value, struct instance);
} overflow SEC(".maps");

enum transition_kind {
  SWITCHED_IN = 1, /* -> on a CPU (was runnable) */
  PREEMPTED = 2,   /* -> runnable (was on a CPU) */
  SLEPT = 3,       /* -> asleep (was on a CPU) */
  WOKEN = 4,       /* -> runnable (was asleep) */
};

struct transition {
  u64 ts;
  u32 kind;
  u32 other_tid; /* SWITCHED_IN: the task switched out */
  char other_comm[DOORBELL_COMM_LEN];
};

struct thread_state {
  u64 private_queues; /* bit sig-1: a private FIFO may hold instances */
  u32 next;           /* log[next % STATE_LOG] is the next entry written */
  u32 pad;
  struct transition log[STATE_LOG];
};

/* Kept on the group leader. */
struct proc_state {
  s64 outstanding;         /* queued instances not yet taken: > 0 opens the state log */
  s64 private_outstanding; /* of those, in private FIFOs */
  u32 epoch;               /* state changes logged for the process's threads */
  u32 pad;
  struct shared_queue shared[DOORBELL_MAX_SIGNAL];
  /* Thread-directed signals queued when the table of per-thread FIFOs was
   * full: not remembered, their takes are counted as unmeasured. */
  u32 private_lost[DOORBELL_MAX_SIGNAL];
};

struct {
  __uint(type, BPF_MAP_TYPE_TASK_STORAGE);
  __uint(map_flags, BPF_F_NO_PREALLOC);
  __type(key, int);
  __type(value, struct thread_state);
} threads SEC(".maps");

struct {
  __uint(type, BPF_MAP_TYPE_TASK_STORAGE);
  __uint(map_flags, BPF_F_NO_PREALLOC);
  __type(key, int);
  __type(value, struct proc_state);
} procs SEC(".maps");

/* A task by its global pid, referenced (Linux 6.2+; null where the kernel
 * lacks the kfunc: the load still succeeds, see on_sched_process_exit). */
extern struct task_struct* bpf_task_from_pid(s32 pid) __ksym __weak;
extern void bpf_task_release(struct task_struct* p) __ksym __weak;

struct {
  __uint(type, BPF_MAP_TYPE_RINGBUF);
  __uint(max_entries, 256 * 1024);
} slow SEC(".maps");

struct {
  __uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
  __uint(max_entries, DOORBELL_LOSSES);
  __type(key, u32);
  __type(value, u64);
} losses SEC(".maps");

/* What each CPU runs now, written at every context switch (a plain array
 * indexed by CPU: the generate reads another CPU's entry). The loader sizes
 * it to the possible CPUs. */
struct running {
  u32 tid;
  u32 pad;
  char comm[DOORBELL_COMM_LEN];
};

struct {
  __uint(type, BPF_MAP_TYPE_ARRAY);
  __uint(max_entries, 1024);
  __type(key, u32);
  __type(value, struct running);
} cpu_current SEC(".maps");

/* Zeroed values to create entries from (too large for the 512-byte stack);
 * never written. */
struct zeroes {
  struct doorbell_stats stats;
  struct private_queue queue;
};

struct {
  __uint(type, BPF_MAP_TYPE_ARRAY);
  __uint(max_entries, 1);
  __type(key, u32);
  __type(value, struct zeroes);
} zero SEC(".maps");

/* ------------------------------------------------------------ helpers */

static __always_inline void lose(u32 what) {
  u64* n = bpf_map_lookup_elem(&losses, &what);
  if (n) *n += 1; /* per-CPU: no atomic needed */
}

static __always_inline u32 delay_bucket(u64 v) {
  if (v < 4) return (u32)v;
  u32 b = 0;
  u64 x = v;
  if (x >> 32) {
    b += 32;
    x >>= 32;
  }
  if (x >> 16) {
    b += 16;
    x >>= 16;
  }
  if (x >> 8) {
    b += 8;
    x >>= 8;
  }
  if (x >> 4) {
    b += 4;
    x >>= 4;
  }
  if (x >> 2) {
    b += 2;
    x >>= 2;
  }
  if (x >> 1) {
    b += 1;
  }
  if (b > 40) return DOORBELL_DELAY_BUCKETS - 1;
  u32 sub = (u32)(v >> (b - 2)) & 3;
  return 4 * (b - 1) + sub;
}

/* A process's start, which with its id names it (doorbell_stats_key). */
static __always_inline u64 start_of(struct task_struct* leader) {
  return leader ? leader->start_boottime : 0;
}

/* This CPU's copy of the (process, signal) counters, made on first use. */
static __always_inline struct doorbell_stats* stats_of(u32 tgid, u32 sig,
                                                       struct task_struct* leader) {
  struct doorbell_stats_key key = {.tgid = tgid, .sig = sig, .start = start_of(leader)};
  struct doorbell_stats* s = bpf_map_lookup_elem(&stats, &key);
  if (s) return s;
  u32 zero_key = 0;
  struct zeroes* z = bpf_map_lookup_elem(&zero, &zero_key);
  if (!z) return 0;
  /* From a program, an update sets this CPU's copy and zeroes the others. */
  if (bpf_map_update_elem(&stats, &key, &z->stats, BPF_NOEXIST) != 0) {
    s = bpf_map_lookup_elem(&stats, &key); /* made by another CPU meanwhile? */
    if (!s) lose(DOORBELL_LOSS_STATS_FULL);
    return s;
  }
  s = bpf_map_lookup_elem(&stats, &key);
  if (s && leader) bpf_probe_read_kernel_str(s->comm, sizeof(s->comm), leader->comm);
  return s;
}

/* `t` is a trusted pointer (a tracepoint argument or the current task):
 * its fields are loaded directly, with no helper call. */
static __always_inline unsigned int task_state(struct task_struct* t) {
  if (bpf_core_field_exists(t->__state)) return t->__state;
  struct task_struct___pre_5_14* old = (void*)t;
  return (unsigned int)BPF_CORE_READ(old, state);
}

static __always_inline u32 task_cpu(struct task_struct* t) {
  if (bpf_core_field_exists(t->thread_info.cpu)) return t->thread_info.cpu;
  struct task_struct___pre_5_16* old = (void*)t;
  return BPF_CORE_READ(old, cpu);
}

/* When `t` is runnable but not on a CPU: who holds its CPU now. */
static __always_inline void cpu_holder(struct task_struct* t, struct instance* inst) {
  if (t->on_cpu || task_state(t) != 0) return;
  u32 cpu = task_cpu(t);
  if (cpu == bpf_get_smp_processor_id()) {
    inst->holder_tid = (u32)bpf_get_current_pid_tgid();
    bpf_get_current_comm(inst->holder_comm, sizeof(inst->holder_comm));
    return;
  }
  struct running* r = bpf_map_lookup_elem(&cpu_current, &cpu);
  if (!r) return;
  inst->holder_tid = r->tid;
  __builtin_memcpy(inst->holder_comm, r->comm, DOORBELL_COMM_LEN);
}

static __always_inline bool sig_in(unsigned long mask, int sig) {
  return (mask >> (sig - 1)) & 1;
}

/* Whether no thread could take `sig` now: the named thread blocks it and,
 * for a process-directed signal, so does every other thread that is not
 * exiting. A thread in sigwaitinfo has the waited set unblocked while it
 * waits, so it counts as able to take it. Runs under the siglock, which
 * keeps the thread list still. */
static __always_inline bool blocked_everywhere(struct task_struct* t, int sig, int group) {
  if (!sig_in(t->blocked.sig[0], sig)) return false; /* t is trusted: a direct load */
  if (!group) return true;
  struct signal_struct* signal = BPF_CORE_READ(t, signal);
  u64 head = (u64)signal + bpf_core_field_offset(struct signal_struct, thread_head);
  u64 node_offset = bpf_core_field_offset(struct task_struct, thread_node);
  struct list_head* pos = BPF_CORE_READ(signal, thread_head.next);
  for (int i = 0; i < MAX_THREADS_WALKED; i++) {
    if ((u64)pos == head || !pos) return true;
    struct task_struct* thread = (void*)((u64)pos - node_offset);
    unsigned int flags = BPF_CORE_READ(thread, flags);
    unsigned long mask = BPF_CORE_READ(thread, blocked.sig[0]);
    if (!(flags & PF_EXITING) && !sig_in(mask, sig)) return false;
    pos = BPF_CORE_READ(pos, next);
  }
  return false; /* more threads than walked: assume one can take it */
}

/* The thread's state, made when missing; a failure counts as `loss`. */
static __always_inline struct thread_state* thread_state_of(struct task_struct* t, u32 loss) {
  struct thread_state* ts = bpf_task_storage_get(&threads, t, 0, BPF_LOCAL_STORAGE_GET_F_CREATE);
  if (!ts) lose(loss);
  return ts;
}

/* The state of the process of `t` when it has a signal outstanding (its
 * state log is open), else null. */
static __always_inline struct proc_state* watched(struct task_struct* t) {
  struct task_struct* leader = t->group_leader;
  if (!leader) return 0;
  struct proc_state* ps = bpf_task_storage_get(&procs, leader, 0, 0);
  return ps && ps->outstanding > 0 ? ps : 0;
}

static __always_inline void log_transition(struct task_struct* t, u32 kind,
                                           struct task_struct* other, u64 now,
                                           struct proc_state* ps) {
  struct thread_state* ts = thread_state_of(t, DOORBELL_LOSS_STATE_LOG);
  if (!ts) return;
  if (kind == WOKEN) {
    /* sched_waking and sched_wakeup both report one wake-up: log it once. */
    u32 last = (ts->next - 1) % STATE_LOG;
    if (ts->next && ts->log[last].kind == WOKEN) return;
  }
  u32 index = __sync_fetch_and_add(&ts->next, 1) % STATE_LOG;
  struct transition* e = &ts->log[index];
  e->ts = now;
  e->kind = kind;
  if (other) {
    e->other_tid = BPF_CORE_READ(other, pid);
    bpf_probe_read_kernel_str(e->other_comm, sizeof(e->other_comm), other->comm);
  } else {
    e->other_tid = 0;
  }
  __sync_fetch_and_add(&ps->epoch, 1);
}

/* Appends an instance to a FIFO: its slot when free, else the overflow map.
 * Only signal_generate pushes, and it runs under the process's siglock: the
 * tail and the slot need no atomic operation, and a take that pops the
 * instance runs after the lock's release (signal_deliver under the same
 * lock, the system-call exits after the dequeue), which orders the fields
 * before it. When the overflow map is full the index is used all the same:
 * its take finds no record and counts the delay as unmeasured (POP_LOST),
 * so no later take pairs with the wrong instance. */
static __always_inline void push(u32* tail, struct instance* slots, u32 mask,
                                 struct overflow_key* ok, struct instance* inst) {
  u32 index = *tail;
  *tail = index + 1;
  struct instance* slot = &slots[index & mask];
  if (slot->seq == 0) {
    slot->ts = inst->ts;
    slot->sender_tgid = inst->sender_tgid;
    slot->target_tid = inst->target_tid;
    slot->flags = inst->flags;
    slot->epoch = inst->epoch;
    slot->holder_tid = inst->holder_tid;
    __builtin_memcpy(slot->holder_comm, inst->holder_comm, DOORBELL_COMM_LEN);
    slot->seq = index + 1;
    return;
  }
  ok->index = index;
  inst->seq = index + 1;
  if (bpf_map_update_elem(&overflow, ok, inst, BPF_NOEXIST) != 0) lose(DOORBELL_LOSS_QUEUE_FULL);
}

#define POP_EMPTY 0  /* nothing outstanding */
#define POP_PAIRED 1 /* *out holds the oldest instance */
#define POP_LOST 2   /* the oldest was queued but not remembered (a full table) */

/* Pops the oldest instance of a FIFO into *out. Takes from the system-call
 * exits run outside the siglock and may race each other (the
 * compare-and-swap of head: the loser tries the next index) and a generate
 * that reuses the slot (the exchange that frees it comes after the reads,
 * on every architecture). */
static __always_inline int pop(u32* head, u32* tail, struct instance* slots, u32 mask,
                               struct overflow_key* ok, struct instance* out) {
  u32 h = 0;
  bool won = false;
  for (int attempt = 0; attempt < 4; attempt++) {
    h = *(volatile u32*)head;
    if (h == *(volatile u32*)tail) return POP_EMPTY;
    if (__sync_val_compare_and_swap(head, h, h + 1) == h) {
      won = true;
      break;
    }
  }
  if (!won) return POP_EMPTY;
  struct instance* slot = &slots[h & mask];
  if (slot->seq == h + 1) {
    out->ts = slot->ts;
    out->sender_tgid = slot->sender_tgid;
    out->target_tid = slot->target_tid;
    out->flags = slot->flags;
    out->epoch = slot->epoch;
    out->holder_tid = slot->holder_tid;
    __builtin_memcpy(out->holder_comm, slot->holder_comm, DOORBELL_COMM_LEN);
    __sync_lock_test_and_set(&slot->seq, 0);
    return POP_PAIRED;
  }
  ok->index = h;
  struct instance* spilled = bpf_map_lookup_elem(&overflow, ok);
  if (!spilled) return POP_LOST;
  *out = *spilled;
  bpf_map_delete_elem(&overflow, ok);
  return POP_PAIRED;
}

struct spill_range {
  struct overflow_key ok;
  u32 from;
};

static long delete_spilled(u64 i, void* context) {
  struct spill_range* r = context;
  r->ok.index = r->from + (u32)i;
  bpf_map_delete_elem(&overflow, &r->ok);
  return 0;
}

/* Drops the instances of a FIFO that the kernel no longer holds, all but
 * the newest `keep`, freeing their slots and overflow entries; returns how
 * many. For an exit (the thread or process is gone) and a flush (sigaction
 * to SIG_IGN, which discards what is pending). */
static __always_inline u32 drop_fifo(u32* head, u32* tail, struct instance* slots, u32 mask,
                                     struct overflow_key* ok, u32 keep) {
  for (int attempt = 0; attempt < 4; attempt++) {
    u32 h = *(volatile u32*)head, t = *(volatile u32*)tail;
    if (t - h <= keep) return 0;
    u32 end = t - keep;
    if (__sync_val_compare_and_swap(head, h, end) != h) continue;
    for (u32 k = 0; k < PRIVATE_SLOTS; k++) {
      if (k > mask) break;
      u32 seq = slots[k].seq;
      if (seq && seq - 1 - h < end - h) __sync_lock_test_and_set(&slots[k].seq, 0);
    }
    struct spill_range r = {.ok = *ok, .from = h};
    bpf_loop(end - h, delete_spilled, &r, 0);
    return end - h;
  }
  return 0;
}

/* ------------------------------------------------------------ generate */

SEC("tp_btf/signal_generate")
int BPF_PROG(on_signal_generate, int sig, struct kernel_siginfo* info, struct task_struct* task,
             int group, int result) {
  if (sig < 1 || sig > DOORBELL_MAX_SIGNAL) return 0;
  bool queued = result == 0 || result == 4;
  u64 now = queued ? bpf_ktime_get_ns() : 0;
  u32 tgid = task->tgid;
  if (only_tgid && tgid != only_tgid) return 0;
  struct task_struct* leader = task->group_leader;
  struct doorbell_stats* s = stats_of(tgid, sig, leader);
  if (!s) return 0;
  s->generated++;
  switch (result) {
    case 0:
    case 4:
      s->queued++;
      break;
    case 1:
      s->ignored++;
      break;
    case 2:
      s->merged++;
      break;
    default:
      s->failed++;
      break;
  }

  /* Who sent it: the process of the thread this runs in (the interrupted
   * one for a signal sent from an interrupt, as with tracefs). */
  u32 sender = bpf_get_current_pid_tgid() >> 32;
  u32 tag = sender + 1;
  bool counted = false;
  for (int i = 0; i < DOORBELL_SENDER_SLOTS; i++) {
    struct doorbell_sender* slot = &s->senders[i];
    if (slot->tgid_plus_one == 0) {
      slot->tgid_plus_one = tag;
      struct task_struct* current = bpf_get_current_task_btf();
      bpf_probe_read_kernel_str(slot->comm, sizeof(slot->comm), current->group_leader->comm);
    }
    if (slot->tgid_plus_one == tag) {
      slot->count++;
      counted = true;
      break;
    }
  }
  if (!counted) s->senders_other++;

  if (!queued || !leader) return 0;

  /* Queued: remember it until it is taken. */
  struct proc_state* ps = bpf_task_storage_get(&procs, leader, 0, BPF_LOCAL_STORAGE_GET_F_CREATE);
  if (!ps) {
    lose(DOORBELL_LOSS_STORAGE);
    return 0;
  }
  struct instance inst = {.ts = now,
                          .sender_tgid = sender,
                          .target_tid = task->pid,
                          .flags = blocked_everywhere(task, sig, group) ? INSTANCE_BLOCKED : 0,
                          .epoch = ps->epoch};
  cpu_holder(task, &inst);
  u32 i = (u32)(sig - 1) & (DOORBELL_MAX_SIGNAL - 1);
  if (group) {
    struct overflow_key ok = {.id = tgid, .sig = sig, .shared = 1};
    push(&ps->shared[i].tail, ps->shared[i].slot, 0, &ok, &inst);
  } else {
    struct private_key pk = {.tid = task->pid, .sig = sig};
    struct private_queue* q = bpf_map_lookup_elem(&private_queues, &pk);
    if (!q) {
      u32 zero_key = 0;
      struct zeroes* z = bpf_map_lookup_elem(&zero, &zero_key);
      if (z) bpf_map_update_elem(&private_queues, &pk, &z->queue, BPF_NOEXIST);
      q = bpf_map_lookup_elem(&private_queues, &pk);
    }
    if (!q) {
      /* The table of per-thread FIFOs is full: counted, and its take is
       * counted as unmeasured. */
      lose(DOORBELL_LOSS_QUEUE_FULL);
      __sync_fetch_and_add(&ps->private_lost[i], 1);
      return 0;
    }
    struct overflow_key ok = {.id = task->pid, .sig = sig, .shared = 0};
    push(&q->tail, q->slot, PRIVATE_SLOTS - 1, &ok, &inst);
    struct thread_state* ts = thread_state_of(task, DOORBELL_LOSS_STORAGE);
    if (ts) __sync_fetch_and_or(&ts->private_queues, 1ull << i);
    __sync_fetch_and_add(&ps->private_outstanding, 1);
  }
  __sync_fetch_and_add(&ps->outstanding, 1);
  return 0;
}

/* ------------------------------------------------------------ take */

/* The split of one delay into causes, from the taker's log. */
struct split {
  u64 ns[DOORBELL_CAUSES];
  u64 longest_runnable;
  u32 last_before_tid; /* switched out when the longest wait ended */
  u32 unseen_switch_in;
  char last_before_comm[DOORBELL_COMM_LEN];
};

static __always_inline u32 cause_after(u32 kind) {
  return kind == SWITCHED_IN ? DOORBELL_CAUSE_ON_CPU
         : kind == SLEPT     ? DOORBELL_CAUSE_ASLEEP
                             : DOORBELL_CAUSE_RUNNABLE;
}

static __always_inline u32 cause_before(u32 kind) {
  return kind == SWITCHED_IN ? DOORBELL_CAUSE_RUNNABLE
         : kind == WOKEN     ? DOORBELL_CAUSE_ASLEEP
                             : DOORBELL_CAUSE_ON_CPU;
}

static __always_inline void add_segment(struct split* sp, u32 cause, u64 ns) {
  if (cause < DOORBELL_CAUSES) sp->ns[cause] += ns;
}

/* Walks the log back from now to the generate. The log is complete after
 * the generate (the process had a signal outstanding all along), so the
 * state before the earliest entry after it follows from that entry's kind.
 * With no entry after it, the thread stayed as it is now: on a CPU. */
static __always_inline void split_delay(struct thread_state* ts, u64 generated, u64 now,
                                        struct split* sp) {
  u64 end = now;
  u32 earliest_kind = 0;
  if (!ts) {
    add_segment(sp, DOORBELL_CAUSE_ON_CPU, now - generated);
    return;
  }
  u32 next = ts->next;
  for (int k = 1; k <= STATE_LOG; k++) {
    if ((u32)k > next) break;
    struct transition* e = &ts->log[(next - k) % STATE_LOG];
    u64 at = e->ts;
    if (at <= generated || at > end) break;
    u32 cause = cause_after(e->kind);
    if (k == 1 && e->kind == WOKEN) {
      /* Woken, then taken without a switch-in seen (a CPU leaving idle
       * may not report it): it ran from about the wake-up. */
      cause = DOORBELL_CAUSE_ON_CPU;
      sp->unseen_switch_in = 1;
    }
    add_segment(sp, cause, end - at);
    if (e->kind == SWITCHED_IN) {
      /* What ran before it: the runnable stretch that ended here. */
      u32 prior = (next - k - 1) % STATE_LOG;
      u64 from = generated;
      if ((u32)k < next && ts->log[prior].ts > generated) from = ts->log[prior].ts;
      u64 waited = at - from;
      if (waited > sp->longest_runnable) {
        sp->longest_runnable = waited;
        sp->last_before_tid = e->other_tid;
        __builtin_memcpy(sp->last_before_comm, e->other_comm, DOORBELL_COMM_LEN);
      }
    }
    end = at;
    earliest_kind = e->kind;
  }
  if (end > generated)
    add_segment(sp, earliest_kind ? cause_before(earliest_kind) : DOORBELL_CAUSE_ON_CPU,
                end - generated);
}

/* A signal `sig` taken by the current thread, `how`. `kernel_kill`: the
 * kernel's own SIGKILL of a thread at a group exit (`sig` is then the fatal
 * signal that caused it, if any): counted only when it pairs with a
 * generate, never as an unpaired delivery. A global function: the verifier
 * checks it once, not at each call site. */
__noinline int take_signal(u32 sig, u32 how, u32 kernel_kill) {
  if (sig < 1 || sig > DOORBELL_MAX_SIGNAL) return 0;
  u64 now = bpf_ktime_get_ns();
  struct task_struct* current = bpf_get_current_task_btf();
  u32 tgid = current->tgid, tid = current->pid;
  if (only_tgid && tgid != only_tgid) return 0;
  struct task_struct* leader = current->group_leader;
  struct proc_state* ps = leader ? bpf_task_storage_get(&procs, leader, 0, 0) : 0;
  /* The thread's own FIFO first, as dequeue_signal() does. */
  struct instance inst = {};
  int got = POP_EMPTY;
  u32 i = (sig - 1) & (DOORBELL_MAX_SIGNAL - 1);
  if (ps) {
    if (ps->private_outstanding > 0) {
      struct private_key pk = {.tid = tid, .sig = sig};
      struct private_queue* q = bpf_map_lookup_elem(&private_queues, &pk);
      if (q) {
        struct overflow_key ok = {.id = tid, .sig = sig, .shared = 0};
        got = pop(&q->head, &q->tail, q->slot, PRIVATE_SLOTS - 1, &ok, &inst);
        if (got != POP_EMPTY) __sync_fetch_and_add(&ps->private_outstanding, -1);
      }
    }
    if (got == POP_EMPTY) {
      struct overflow_key ok = {.id = tgid, .sig = sig, .shared = 1};
      got = pop(&ps->shared[i].head, &ps->shared[i].tail, ps->shared[i].slot, 0, &ok, &inst);
    }
    if (got != POP_EMPTY) __sync_fetch_and_add(&ps->outstanding, -1);
    if (got == POP_EMPTY) {
      u32 lost = ps->private_lost[i];
      if (lost && __sync_val_compare_and_swap(&ps->private_lost[i], lost, lost - 1) == lost)
        got = POP_LOST;
    }
  } else {
    /* No state for the process: on a kernel without bpf_task_from_pid an
     * exec from a second thread leaves it with the old leader. The thread's
     * own FIFO, keyed by its tid, is still there: taken from, so that its
     * instances are paired, not left to be counted as discarded at its exit. */
    struct private_key pk = {.tid = tid, .sig = sig};
    struct private_queue* q = bpf_map_lookup_elem(&private_queues, &pk);
    if (q) {
      struct overflow_key ok = {.id = tid, .sig = sig, .shared = 0};
      got = pop(&q->head, &q->tail, q->slot, PRIVATE_SLOTS - 1, &ok, &inst);
    }
  }
  if (kernel_kill && got != POP_PAIRED) return 0;
  struct doorbell_stats* s = stats_of(tgid, sig, leader);
  if (!s) return 0;
  if (how == DOORBELL_TAKE_DELIVER)
    s->delivered++;
  else if (how == DOORBELL_TAKE_SIGWAIT)
    s->taken_sigwait++;
  else
    s->taken_signalfd++;
  if (got == POP_EMPTY) {
    s->unpaired++;
    return 0;
  }
  if (got == POP_LOST) {
    s->unmeasured++;
    return 0;
  }

  u64 delay = now > inst.ts ? now - inst.ts : 0;
  u32 bucket = delay_bucket(delay);
  if (bucket >= DOORBELL_DELAY_BUCKETS) bucket = DOORBELL_DELAY_BUCKETS - 1;
  s->delay_buckets[bucket]++;
  s->delay_sum_ns += delay;
  if (delay > s->delay_max_ns) s->delay_max_ns = delay;

  struct split sp = {};
  u32 dominant = DOORBELL_CAUSE_ON_CPU;
  if ((inst.flags & INSTANCE_BLOCKED) && how != DOORBELL_TAKE_SIGNALFD) {
    dominant = DOORBELL_CAUSE_BLOCKED;
    sp.ns[DOORBELL_CAUSE_BLOCKED] = delay;
  } else if (ps && ps->epoch == inst.epoch) {
    /* No thread of the process changed state since the generate: the taker
     * ran all along. */
    sp.ns[DOORBELL_CAUSE_ON_CPU] = delay;
  } else {
    split_delay(bpf_task_storage_get(&threads, current, 0, 0), inst.ts, now, &sp);
    u64 most = 0;
    for (u32 c = 0; c < DOORBELL_CAUSES; c++)
      if (sp.ns[c] > most) {
        most = sp.ns[c];
        dominant = c;
      }
  }
  for (u32 c = 0; c < DOORBELL_CAUSES; c++) s->cause_ns[c] += sp.ns[c];
  s->cause_count[dominant & (DOORBELL_CAUSES - 1)]++;
  if (sp.unseen_switch_in) s->switch_in_unseen++;
  /* Who ran instead: the holder of its CPU when the signal came, when the
   * taker is the thread that was then waiting; else the last one before. */
  bool held = inst.holder_tid && tid == inst.target_tid;
  if (sp.longest_runnable > s->longest_runnable_ns) {
    s->longest_runnable_ns = sp.longest_runnable;
    s->ran_instead_tid = held ? inst.holder_tid : sp.last_before_tid;
    __builtin_memcpy(s->ran_instead_comm, held ? inst.holder_comm : sp.last_before_comm,
                     DOORBELL_COMM_LEN);
  }

  if (delay < slow_ns) return 0;
  struct doorbell_slow* r = bpf_ringbuf_reserve(&slow, sizeof(*r), 0);
  if (!r) {
    lose(DOORBELL_LOSS_SLOW_DROPPED);
    return 0;
  }
  r->ts_generate = inst.ts;
  r->ts_take = now;
  for (u32 c = 0; c < DOORBELL_CAUSES; c++) r->cause_ns[c] = sp.ns[c];
  r->tgid = tgid;
  r->taker_tid = tid;
  r->target_tid = inst.target_tid;
  r->sender_tgid = inst.sender_tgid;
  r->sig = sig;
  r->how = how;
  r->cause = dominant;
  r->held_by_tid = held ? inst.holder_tid : 0;
  r->last_before_tid = sp.last_before_tid;
  r->pad = 0;
  r->longest_runnable_ns = sp.longest_runnable;
  bpf_get_current_comm(r->comm, sizeof(r->comm));
  __builtin_memcpy(r->held_by_comm, inst.holder_comm, DOORBELL_COMM_LEN);
  __builtin_memcpy(r->last_before_comm, sp.last_before_comm, DOORBELL_COMM_LEN);
  bpf_ringbuf_submit(r, 0);
  return 0;
}

/* A SIGKILL with no siginfo is the kernel's own kill of a thread: at a
 * group exit (exit_group, a fatal signal: the group's exit code is then
 * that signal's number) or an exec. Not a delivery, unless it is the take of
 * the fatal signal (a kill -9 or a default action that kills). */
SEC("tp_btf/signal_deliver")
int BPF_PROG(on_signal_deliver, int sig, struct kernel_siginfo* info, struct k_sigaction* ka) {
  if (sig == 9 && !info) {
    struct task_struct* current = bpf_get_current_task_btf();
    int code = BPF_CORE_READ(current, signal, group_exit_code);
    if (code >= 1 && code <= DOORBELL_MAX_SIGNAL) take_signal(code, DOORBELL_TAKE_DELIVER, 1);
    return 0;
  }
  take_signal(sig, DOORBELL_TAKE_DELIVER, 0);
  return 0;
}

/* ------------------------------------------------------------ system calls */

/* Whether fd of the current process is a signalfd: its file is the
 * anonymous inode "[signalfd]". */
static __always_inline bool is_signalfd(u64 fd) {
  struct task_struct* current = bpf_get_current_task_btf();
  struct fdtable* fdt = BPF_CORE_READ(current, files, fdt);
  if (!fdt || fd >= BPF_CORE_READ(fdt, max_fds)) return false;
  struct file** fds = BPF_CORE_READ(fdt, fd);
  struct file* file = 0;
  if (bpf_probe_read_kernel(&file, sizeof(file), &fds[fd]) != 0 || !file) return false;
  const unsigned char* name = BPF_CORE_READ(file, f_path.dentry, d_name.name);
  char text[12] = {};
  if (bpf_probe_read_kernel(text, 11, name) != 0) return false;
  return text[0] == '[' && text[1] == 's' && text[2] == 'i' && text[3] == 'g' && text[4] == 'n' &&
         text[5] == 'a' && text[6] == 'l' && text[7] == 'f' && text[8] == 'd' && text[9] == ']' &&
         text[10] == 0;
}

/* A read(fd, buffer, ...) returned `ret` bytes: when fd is a signalfd, each
 * 128-byte record is a signal taken. */
static __always_inline void read_returned(u64 fd, u64 buffer, long ret) {
  if (ret < SIGNALFD_RECORD_SIZE || (ret % SIGNALFD_RECORD_SIZE) != 0) return;
  if (only_tgid && (bpf_get_current_pid_tgid() >> 32) != only_tgid) return;
  if (!is_signalfd(fd)) return;
  long records = ret / SIGNALFD_RECORD_SIZE;
  if (records > MAX_SIGNALFD_RECORDS) lose(DOORBELL_LOSS_SIGNALFD_READ);
  for (int i = 0; i < MAX_SIGNALFD_RECORDS; i++) {
    if (i >= records) break;
    u32 signo = 0; /* ssi_signo, the first field of struct signalfd_siginfo */
    if (bpf_probe_read_user(&signo, sizeof(signo),
                            (void*)(buffer + (u64)i * SIGNALFD_RECORD_SIZE)) != 0)
      break;
    take_signal(signo, DOORBELL_TAKE_SIGNALFD, 0);
  }
}

#if defined(__TARGET_ARCH_x86)
#define SYSCALL_NR(regs) ((regs)->orig_ax)
#define SYSCALL_ARG1(regs) ((regs)->di)
#define SYSCALL_ARG2(regs) ((regs)->si)
#else
#define SYSCALL_NR(regs) ((regs)->syscallno)
#define SYSCALL_ARG1(regs) ((regs)->orig_x0) /* regs[0] holds the return value */
#define SYSCALL_ARG2(regs) ((regs)->regs[1])
#endif

/* The per-system-call tracepoints (attached by the loader as perf events,
 * with the ids tracefs gives): the kernel runs these for their system call
 * only. The record: the common fields, the call's number, its return. */
struct syscall_exit {
  u64 common;
  s32 nr;
  s32 pad;
  s64 ret;
};

SEC("tracepoint/syscalls/sys_exit_rt_sigtimedwait")
int on_exit_rt_sigtimedwait(struct syscall_exit* args) {
  if (args->ret > 0) take_signal((u32)args->ret, DOORBELL_TAKE_SIGWAIT, 0);
  return 0;
}

SEC("tracepoint/syscalls/sys_exit_read")
int on_exit_read(struct syscall_exit* args) {
  long ret = args->ret;
  if (ret < SIGNALFD_RECORD_SIZE) return 0;
  struct pt_regs* regs = (struct pt_regs*)bpf_task_pt_regs(bpf_get_current_task_btf());
  read_returned(SYSCALL_ARG1(regs), SYSCALL_ARG2(regs), ret);
  return 0;
}

static __always_inline void count_discarded(u32 tgid, struct task_struct* leader, u32 sig,
                                            u32 left) {
  struct doorbell_stats_key key = {.tgid = tgid, .sig = sig, .start = start_of(leader)};
  struct doorbell_stats* s = bpf_map_lookup_elem(&stats, &key);
  if (s) s->discarded += left;
}

/* How many of a FIFO's instances the kernel may still hold, from its
 * pending set: none when the signal is not pending there; one for a
 * standard signal (never queued twice); all for a real-time one. */
static __always_inline u32 still_pending(unsigned long mask, u32 sig) {
  if (!sig_in(mask, sig)) return 0;
  return sig < 32 ? 1 : 0xffffffffu;
}

/* sigaction(sig, SIG_IGN) (or SIG_DFL where the default is to ignore)
 * returned (a global function: verified once, not inside each caller): the kernel discarded every
 * pending `sig` of the process, with no tracepoint. Its FIFOs are cut to what the pending sets
 * still hold (a `sig` generated since, while blocked, stays) and the rest counted as discarded:
 * otherwise each later take would pair with an earlier generate. Not seen: a sigwait in another
 * thread that dequeued `sig` just before the flush and had not returned (its take is then
 * unpaired). */
__noinline int sigaction_returned(u64 sig, u64 act) {
  if (sig < 1 || sig > DOORBELL_MAX_SIGNAL || !act) return 0;
  struct task_struct* current = bpf_get_current_task_btf();
  u32 tgid = current->tgid;
  if (only_tgid && tgid != only_tgid) return 0;
  u64 handler = 0;
  if (bpf_probe_read_user(&handler, sizeof(handler), (void*)act) != 0) return 0;
  /* SIG_IGN, or SIG_DFL of SIGCHLD, SIGCONT, SIGURG, SIGWINCH */
  bool ignored =
      handler == 1 || (handler == 0 && (sig == 17 || sig == 18 || sig == 23 || sig == 28));
  if (!ignored) return 0;
  struct task_struct* leader = current->group_leader;
  struct proc_state* ps = leader ? bpf_task_storage_get(&procs, leader, 0, 0) : 0;
  if (!ps || ps->outstanding <= 0) return 0;
  u32 i = (u32)(sig - 1) & (DOORBELL_MAX_SIGNAL - 1);
  struct signal_struct* signal = BPF_CORE_READ(current, signal);
  unsigned long shared_mask = BPF_CORE_READ(signal, shared_pending.signal.sig[0]);
  struct overflow_key ok = {.id = tgid, .sig = (u16)sig, .shared = 1};
  u32 dropped = drop_fifo(&ps->shared[i].head, &ps->shared[i].tail, ps->shared[i].slot, 0, &ok,
                          still_pending(shared_mask, (u32)sig));
  if (dropped) {
    count_discarded(tgid, leader, (u32)sig, dropped);
    __sync_fetch_and_add(&ps->outstanding, -(s64)dropped);
  }
  if (ps->private_outstanding <= 0) return 0;
  /* Each thread's own FIFO of `sig`. */
  u64 head = (u64)signal + bpf_core_field_offset(struct signal_struct, thread_head);
  u64 node_offset = bpf_core_field_offset(struct task_struct, thread_node);
  struct list_head* pos = BPF_CORE_READ(signal, thread_head.next);
  for (int k = 0; k < MAX_THREADS_WALKED; k++) {
    if ((u64)pos == head || !pos) break;
    struct task_struct* thread = (void*)((u64)pos - node_offset);
    struct private_key pk = {.tid = (u32)BPF_CORE_READ(thread, pid), .sig = (u32)sig};
    struct private_queue* q = bpf_map_lookup_elem(&private_queues, &pk);
    if (q) {
      unsigned long mask = BPF_CORE_READ(thread, pending.signal.sig[0]);
      struct overflow_key pok = {.id = pk.tid, .sig = (u16)sig, .shared = 0};
      u32 n = drop_fifo(&q->head, &q->tail, q->slot, PRIVATE_SLOTS - 1, &pok,
                        still_pending(mask, (u32)sig));
      if (n) {
        count_discarded(tgid, leader, (u32)sig, n);
        __sync_fetch_and_add(&ps->outstanding, -(s64)n);
        __sync_fetch_and_add(&ps->private_outstanding, -(s64)n);
      }
    }
    pos = BPF_CORE_READ(pos, next);
  }
  return 0;
}

SEC("tracepoint/syscalls/sys_exit_rt_sigaction")
int on_exit_rt_sigaction(struct syscall_exit* args) {
  if (args->ret != 0) return 0;
  struct pt_regs* regs = (struct pt_regs*)bpf_task_pt_regs(bpf_get_current_task_btf());
  sigaction_returned(SYSCALL_ARG1(regs), SYSCALL_ARG2(regs));
  return 0;
}

/* Without tracefs: every system call's exit, sorted here. */
SEC("tp_btf/sys_exit")
int BPF_PROG(on_sys_exit, struct pt_regs* regs, long ret) {
  long nr = SYSCALL_NR(regs);
  if (nr == nr_rt_sigaction && ret == 0) sigaction_returned(SYSCALL_ARG1(regs), SYSCALL_ARG2(regs));
  if (ret <= 0) return 0;
  if (nr == nr_rt_sigtimedwait)
    take_signal((u32)ret, DOORBELL_TAKE_SIGWAIT, 0);
  else if (nr == nr_read)
    read_returned(SYSCALL_ARG1(regs), SYSCALL_ARG2(regs), ret);
  return 0;
}

/* ------------------------------------------------------------ scheduler */

SEC("tp_btf/sched_switch")
int BPF_PROG(on_sched_switch, bool preempt, struct task_struct* prev, struct task_struct* next) {
  u32 cpu = bpf_get_smp_processor_id();
  struct running* r = bpf_map_lookup_elem(&cpu_current, &cpu);
  if (r) {
    r->tid = next->pid;
    __builtin_memcpy(r->comm, next->comm, DOORBELL_COMM_LEN);
  }
  u64 now = 0;
  struct proc_state* ps = watched(prev);
  if (ps) {
    now = bpf_ktime_get_ns();
    /* prev->__state is read here, not the tracepoint's prev_state: when a
     * signal was pending, __schedule() puts a task that meant to sleep back
     * to running (it stays runnable) after taking prev_state. */
    bool runnable = preempt || task_state(prev) == 0;
    log_transition(prev, runnable ? PREEMPTED : SLEPT, 0, now, ps);
  }
  ps = watched(next);
  if (ps) {
    if (!now) now = bpf_ktime_get_ns();
    log_transition(next, SWITCHED_IN, prev, now, ps);
  }
  return 0;
}

SEC("tp_btf/sched_waking")
int BPF_PROG(on_sched_waking, struct task_struct* p) {
  struct proc_state* ps = watched(p);
  if (ps) log_transition(p, WOKEN, 0, bpf_ktime_get_ns(), ps);
  return 0;
}

SEC("tp_btf/sched_wakeup")
int BPF_PROG(on_sched_wakeup, struct task_struct* p) {
  struct proc_state* ps = watched(p);
  if (ps) log_transition(p, WOKEN, 0, bpf_ktime_get_ns(), ps);
  return 0;
}

/* ------------------------------------------------------------ exit */

/* Queued signals never taken: counted as discarded. A thread's own FIFOs
 * are deleted with it (whether or not anything is left in them: a table of
 * FIFOs of dead threads would fill); the process's shared FIFOs go with its
 * leader's task storage, their spilled instances deleted here. */
SEC("tp_btf/sched_process_exit")
int BPF_PROG(on_sched_process_exit, struct task_struct* p) {
  u32 tgid = p->tgid;
  if (only_tgid && tgid != only_tgid) return 0;
  struct thread_state* ts = bpf_task_storage_get(&threads, p, 0, 0);
  u64 private_mask = ts ? ts->private_queues : 0;
  struct task_struct* leader = p->group_leader;
  struct proc_state* ps = leader ? bpf_task_storage_get(&procs, leader, 0, 0) : 0;
  /* The leader killed by an exec in another thread (de_thread): that thread
   * becomes the leader once this one is gone, and the process's state (its
   * shared FIFOs, what is outstanding), kept in the leader's task storage,
   * would go with this task: copied to the exec'ing thread's storage now,
   * before the swap, so that a signal sent during the exec finds it there.
   * Without bpf_task_from_pid (before Linux 6.2) it is not copied, and the
   * takes after such an exec count as unpaired. */
  if (ps && p->pid == tgid && bpf_core_field_exists(p->signal->group_exec_task) &&
      bpf_task_from_pid && !without_task_from_pid) {
    struct task_struct* exec_task = BPF_CORE_READ(p, signal, group_exec_task);
    int exec_tid = exec_task ? BPF_CORE_READ(exec_task, pid) : 0;
    struct task_struct* heir = exec_tid && exec_tid != p->pid ? bpf_task_from_pid(exec_tid) : 0;
    if (heir) {
      if (!bpf_task_storage_get(&procs, heir, ps, BPF_LOCAL_STORAGE_GET_F_CREATE))
        lose(DOORBELL_LOSS_STORAGE);
      bpf_task_release(heir);
    }
  }
  /* The last thread out: live is decremented before this tracepoint. */
  bool group_dead = ps && ps->outstanding > 0 && BPF_CORE_READ(p, signal, live.counter) == 0;
  if (!private_mask && !group_dead) return 0;
  for (int sig = 1; sig <= DOORBELL_MAX_SIGNAL; sig++) {
    u32 i = (u32)(sig - 1) & (DOORBELL_MAX_SIGNAL - 1);
    if (private_mask & (1ull << i)) {
      struct private_key pk = {.tid = p->pid, .sig = sig};
      struct private_queue* q = bpf_map_lookup_elem(&private_queues, &pk);
      if (q) {
        struct overflow_key ok = {.id = p->pid, .sig = sig, .shared = 0};
        u32 left = drop_fifo(&q->head, &q->tail, q->slot, PRIVATE_SLOTS - 1, &ok, 0);
        if (left) {
          count_discarded(tgid, leader, sig, left);
          if (ps) {
            __sync_fetch_and_add(&ps->private_outstanding, -(s64)left);
            __sync_fetch_and_add(&ps->outstanding, -(s64)left);
          }
        }
        bpf_map_delete_elem(&private_queues, &pk);
      }
    }
    if (group_dead && ps) {
      struct overflow_key ok = {.id = tgid, .sig = sig, .shared = 1};
      u32 left = drop_fifo(&ps->shared[i].head, &ps->shared[i].tail, ps->shared[i].slot, 0, &ok, 0);
      if (left) count_discarded(tgid, leader, sig, left);
    }
  }
  return 0;
}

/* ------------------------------------------------------------ exec */

struct linux_binprm;

struct rekey {
  struct overflow_key from;
  u32 to_tid;
  u32 first;
};

/* Moves one spilled instance of a FIFO to the FIFO's new key. */
static long rekey_spilled(u64 i, void* context) {
  struct rekey* r = context;
  r->from.index = r->first + (u32)i;
  struct instance* inst = bpf_map_lookup_elem(&overflow, &r->from);
  if (!inst) return 0;
  struct overflow_key to = r->from;
  to.id = r->to_tid;
  if (bpf_map_update_elem(&overflow, &to, inst, BPF_NOEXIST) != 0) lose(DOORBELL_LOSS_QUEUE_FULL);
  bpf_map_delete_elem(&overflow, &r->from);
  return 0;
}

/* Moves the current thread's FIFO of `sig` from its old tid to its new one.
 * A global function: the verifier checks it once, not per signal. */
__noinline int move_private_fifo(u32 old_pid, u32 tid, u32 sig) {
  if (sig < 1 || sig > DOORBELL_MAX_SIGNAL) return 0;
  struct task_struct* current = bpf_get_current_task_btf();
  u32 tgid = current->tgid;
  struct task_struct* leader = current->group_leader; /* current, after the exec */
  struct proc_state* ps = bpf_task_storage_get(&procs, current, 0, 0);
  struct private_key from = {.tid = old_pid, .sig = sig};
  struct private_queue* q = bpf_map_lookup_elem(&private_queues, &from);
  if (!q) return 0;
  struct private_key to = {.tid = tid, .sig = sig};
  if (bpf_map_update_elem(&private_queues, &to, q, BPF_NOEXIST) != 0) {
    /* No room (or a FIFO under the new tid already): what it held is
     * counted as discarded, as at an exit, rather than paired wrong. */
    struct overflow_key ok = {.id = old_pid, .sig = sig, .shared = 0};
    u32 left = drop_fifo(&q->head, &q->tail, q->slot, PRIVATE_SLOTS - 1, &ok, 0);
    if (left) {
      count_discarded(tgid, leader, sig, left);
      if (ps) {
        __sync_fetch_and_add(&ps->private_outstanding, -(s64)left);
        __sync_fetch_and_add(&ps->outstanding, -(s64)left);
      }
    }
    lose(DOORBELL_LOSS_QUEUE_FULL);
  } else {
    struct private_queue* moved = bpf_map_lookup_elem(&private_queues, &to);
    u32 h = moved ? moved->head : 0, t = moved ? moved->tail : 0;
    if (t != h) {
      struct rekey r = {
          .from = {.id = old_pid, .sig = sig, .shared = 0}, .to_tid = tid, .first = h};
      bpf_loop(t - h, rekey_spilled, &r, 0);
    }
  }
  bpf_map_delete_elem(&private_queues, &from);
  return 0;
}

/* An exec from a thread that is not the leader: the thread now has the
 * process's pid as its tid (old_pid was its own). Its pending signals stay
 * with it, so its FIFOs, keyed by tid, move to the new tid (the process's
 * state moved to it when the old leader exited: on_sched_process_exit). */
SEC("tp_btf/sched_process_exec")
int BPF_PROG(on_sched_process_exec, struct task_struct* p, int old_pid, struct linux_binprm* bprm) {
  u32 tid = p->pid;
  if ((u32)old_pid == tid) return 0;
  if (only_tgid && p->tgid != only_tgid) return 0;
  struct thread_state* ts = bpf_task_storage_get(&threads, p, 0, 0);
  u64 mask = ts ? ts->private_queues : 0;
  if (!mask) return 0;
  for (int sig = 1; sig <= DOORBELL_MAX_SIGNAL; sig++) {
    u32 i = (u32)(sig - 1) & (DOORBELL_MAX_SIGNAL - 1);
    if (mask & (1ull << i)) move_private_fifo((u32)old_pid, tid, (u32)sig);
  }
  return 0;
}
