// The verdict of `doorbell inspect`: from a ProcessSnapshot (plain data, so
// tests feed it synthetic processes) to one verdict per signal and advice.
//
// The kernel's choice for a process-directed signal (kernel/signal.c,
// complete_signal() and wants_signal(); research/kernel-signal-delivery.md
// §2): the main thread when it wants the signal, else the first thread that
// does, walking the thread list round-robin from signal->curr_target. A
// thread wants a signal when it does not block it, is not exiting, is not
// stopped or traced, and is on a CPU or has no signal pending already.
// /proc shows neither curr_target nor "on a CPU" as opposed to "runnable":
// we walk in list order from the main thread and take State R as "may be on
// a CPU". The choice is a snapshot: the next send may pick another thread,
// so the verdict weighs every thread that can take the signal, not only the
// one picked now.
//
// Verdicts, for signals with a handler or taken by sigwait/signalfd:
//   bounded      every thread that can take it runs at SCHED_FIFO/RR (one
//                dedicated receiver thread, or a signalfd whose reader is
//                such a thread): it is woken and runs at once.
//   at_risk      it can land on a SCHED_OTHER (or BATCH/IDLE) thread that is
//                busy itself or shares CPUs with busy threads (runnable at
//                least half of the sampling window): the signal then waits
//                for that thread's next time slice, milliseconds under load.
//   fair_share   it lands on a SCHED_OTHER thread, but no busy thread shares
//                its CPUs now: quick today, not bounded under load.
//   stays_pending  blocked in every thread and no signalfd reads it: it
//                stays pending until a thread unblocks it or waits for it;
//                also every signal but SIGCONT to a stopped process (State
//                T), until SIGCONT, and an ignored signal the main thread
//                blocks (the kernel queues a blocked signal whatever its
//                disposition).
// and for the others:
//   ignored      SIG_IGN, or a default action of "ignore" (SIGCHLD, ...),
//                and the main thread does not block it: discarded at send.
//   discarded    a default action the kernel refuses to run: the process is
//                PID 1 of its PID namespace (SIGNAL_UNKILLABLE), and the
//                signal is dropped at send time (kernel/signal.c
//                sig_task_ignored) or by the thread that takes it
//                (get_signal). From any namespace: only SIGKILL and SIGSTOP
//                depend on the sender's (an ancestor's are forced), and
//                those are not listed (InspectReport::namespace_init).
//                Also SIGTSTP, SIGTTIN and SIGTTOU with no handler in an
//                orphaned process group: the thread that takes one drops it
//                rather than stop a process nobody would continue
//                (get_signal, is_current_pgrp_orphaned).
//   default_action  no handler: the default action (terminate, core dump,
//                stop) runs; a fatal one wakes every thread (group exit).
//
// Which thread's mask decides: the main thread's, for a blocked-and-ignored
// signal (the kernel checks the task kill() names, the thread-group leader,
// in sig_ignored()), and for an init's default action.
#pragma once

#include <string>
#include <vector>

#include "lab/inspect/snapshot.h"

namespace doorbell::lab::inspect {

enum class Verdict {
  bounded,
  at_risk,
  fair_share,
  stays_pending,
  ignored,
  discarded,
  default_action
};
const char* verdict_name(Verdict verdict) noexcept;  // "bounded", "at risk", ...
const char* verdict_key(Verdict verdict) noexcept;   // "bounded", "at_risk", ... (JSON)

// The default action of a signal: "terminate", "core", "stop", "continue",
// "ignore".
const char* default_action_name(int signo) noexcept;

struct SignalVerdict {
  int signal = 0;
  std::string name;         // "SIGUSR1"
  std::string disposition;  // "handler", "ignored", "default"
  Verdict verdict = Verdict::default_action;
  std::string default_action;     // default_action_name()
  std::vector<pid_t> can_take;    // threads that do not block it (eligible), list order
  pid_t kernel_choice = 0;        // the thread complete_signal() picks now; 0: none
  std::vector<int> signalfds;     // fds of the signalfds that read it
  pid_t sigwait_receiver = 0;     // a thread in rt_sigtimedwait that can take it; 0: none
  pid_t risky_thread = 0;         // at_risk: the thread it can wait for
  std::vector<pid_t> busy_peers;  // at_risk: busy threads sharing that thread's CPUs
  std::string reason;             // one sentence, names the threads
  // The reason says no more than the verdict does (a default action, or
  // discarded at send as ignored): the text's "Why:" leaves it out. An
  // ignored signal the main thread blocks (queued, then dropped by another
  // thread) is not plain.
  bool plain = false;
};

struct ThreadSummary {
  pid_t tid = 0;
  std::string name;
  std::string policy;  // "SCHED_OTHER", "SCHED_FIFO 50", ...
  bool busy = false;   // runnable at least half of the window (or State R without a window)
  // Born during the window (or its TID reused): its share is unknown, and
  // it is never counted busy (ProcessSnapshot::short_lived_share counts it).
  bool new_in_window = false;
  char state = '?';
  // Exited (State Z/X, or exiting): a main thread that called pthread_exit
  // stays listed while the others run. The text marks it "exited".
  bool exited = false;
};

struct InspectReport {
  pid_t pid = 0;
  pid_t asked_tid = 0;  // the thread id asked for, when it was not the process id
  std::string name;
  // Every live thread is stopped (State T: a group stop) or traced (t):
  // signals other than SIGKILL and SIGCONT wait until it is continued.
  bool stopped = false;
  char stop_state = 0;  // 'T' or 't' when stopped
  // PID 1 of its PID namespace (see Verdict::discarded), the system's init
  // when global_init; namespace_pids as in ProcessSnapshot.
  bool namespace_init = false;
  bool global_init = false;
  std::vector<pid_t> namespace_pids;
  // Its process group and session, and whether the group is orphaned (see
  // ProcessSnapshot::orphaned_process_group).
  pid_t process_group = 0;
  pid_t session = 0;
  bool orphaned_process_group = false;
  // Short-lived threads: the share of a CPU used in the window by threads
  // not there for all of it (-1 not measured), and how many new ones were
  // seen. At kBusyShare or more they count as one busy peer.
  double short_lived_share = -1;
  int short_lived_seen = 0;
  std::vector<ThreadSummary> threads;
  std::vector<SignalVerdict> signals;  // in signal order
  // Queue pressure.
  long queued = -1;
  long queue_limit = -1;
  long rlimit_sigpending = -1;
  std::uint64_t shared_pending = 0;
  std::vector<std::pair<pid_t, std::uint64_t>> thread_pending;  // threads with something pending
  std::vector<std::string> advice;
  std::uint64_t window_ns = 0;
  bool fdinfo_readable = true;  // false: signalfds unknown (see ProcessSnapshot)
  bool reader_is_root = false;  // ... and whether root was refused
};

// Signals reported: every caught, ignored, pending, signalfd-read or
// blocked (in any thread) signal, and always SIGHUP, SIGINT, SIGQUIT,
// SIGTERM, SIGUSR1, SIGUSR2 (the ones users send), and SIGTSTP, SIGTTIN,
// SIGTTOU in an orphaned process group. Never SIGKILL and
// SIGSTOP, nor the C library's reserved signals below SIGRTMIN. A signal not
// reported has no handler, is not ignored, blocked or pending: its default
// action runs (an init discards it).
InspectReport analyze(const ProcessSnapshot& process);

// "SCHED_FIFO 50", "SCHED_OTHER", "SCHED_BATCH", ...
std::string policy_name(int policy, int rt_priority);

// CPU time as a share of one CPU: "95% of a CPU", "1.9 CPUs".
std::string cpu_share_text(double share);

// Whether a thread counts as busy (see ThreadSummary::busy).
bool is_busy(const ThreadSnapshot& thread) noexcept;

}  // namespace doorbell::lab::inspect
