// What `doorbell inspect` reads about a process, as plain structs, and the
// functions that read it from /proc. Nothing here changes the target: every
// read is of a /proc file, and a process the caller may not read gives a
// clear error instead of a partial picture.
//
// Sources, per thread (list order of /proc/PID/task, which is the kernel's
// thread list: the main thread first):
//   task/TID/status     State, SigPnd, SigBlk, SigIgn, SigCgt, Cpus_allowed_list
//   task/TID/stat       flags (PF_EXITING), nice, processor, rt_priority, policy
//   task/TID/schedstat  time on a CPU and time waiting in a run queue (ns);
//                       two reads `window` apart give how busy each thread is
//   task/TID/syscall    the system call it sleeps in (needs ptrace-read access;
//                       else task/TID/wchan, the kernel function it sleeps in)
// and per process: status Tgid, NSpid, ShdPnd and SigQ, stat (state, parent,
// the CPU time of every thread it ever had), limits "Max pending signals",
// fdinfo/* "sigmask:" of every signalfd.
//
// A thread id is accepted for its process: /proc/TID works for any thread,
// so read_process(TID) reads the process Tgid and says which thread was
// asked for (ProcessSnapshot::asked_tid).
//
// Masks are 64-bit words in /proc's layout: bit (n-1) is signal n.
#pragma once

#include <sys/types.h>

#include <chrono>
#include <cstdint>
#include <optional>
#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

namespace doorbell::lab::inspect {

// The process does not exist, exited while it was read, or is a zombie
// (exited, not yet reaped: a signal to it is discarded).
class ProcessGone : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

// The process exists but could not be read (permissions, unexpected format).
class InspectError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

inline bool mask_has(std::uint64_t mask, int signo) noexcept {
  return signo >= 1 && signo <= 64 && (mask >> (signo - 1)) & 1u;
}
inline std::uint64_t mask_of(int signo) noexcept {
  return signo >= 1 && signo <= 64 ? std::uint64_t{1} << (signo - 1) : 0;
}

struct ThreadSnapshot {
  pid_t tid = 0;
  std::string name;           // comm
  char state = '?';           // State: R, S, D, T, t, Z, X, I
  bool exiting = false;       // PF_EXITING set: the kernel no longer picks it
  std::uint64_t blocked = 0;  // SigBlk (a thread in sigtimedwait shows the waited set unblocked)
  std::uint64_t ignored = 0;  // SigIgn (process-wide)
  std::uint64_t caught = 0;   // SigCgt (process-wide)
  std::uint64_t pending = 0;  // SigPnd: pending for this thread (thread-directed)
  int policy = 0;             // SCHED_OTHER, SCHED_FIFO, SCHED_RR, SCHED_BATCH, SCHED_IDLE, ...
  int rt_priority = 0;        // 1..99 for SCHED_FIFO/RR, else 0
  int nice = 0;
  int processor = -1;             // the CPU it last ran on
  std::vector<int> cpus_allowed;  // sorted CPU numbers
  std::string cpus_allowed_list;  // as /proc writes it ("0-1")
  // The system call it is in ("rt_sigtimedwait", "epoll_wait", "nanosleep",
  // "running" when on a CPU in user space), or the kernel function from
  // wchan; empty when neither could be read.
  std::string wait_site;
  // In rt_sigtimedwait: the set it waits for (read from its memory), which
  // /proc's SigBlk shows unblocked for the length of the call; only these
  // signals are its to take by waiting (the others it takes as any thread
  // does, when it does not block them). nullopt: not waiting, or the set
  // could not be read (then every signal it does not block counts as
  // waited for, as before).
  std::optional<std::uint64_t> sigwait_set;
  // Over the sampling window: share of wall time on a CPU, and waiting for
  // a CPU in a run queue. Negative when not measured (one read only, or no
  // schedstat).
  double run_share = -1;
  double wait_share = -1;
  // Cumulative schedstat values at the read, for computing the shares.
  std::uint64_t run_ns = 0;
  std::uint64_t wait_ns = 0;
  bool has_schedstat = false;
  std::uint64_t read_ns = 0;     // CLOCK_MONOTONIC when schedstat was read
  std::uint64_t start_time = 0;  // stat field 22: tells a reused TID from the thread before
  // It was not there at the first of two reads (born during the window, or
  // its TID reused): no share is known for it.
  bool new_in_window = false;

  bool realtime() const noexcept;  // SCHED_FIFO or SCHED_RR
  bool blocks(int signo) const noexcept { return mask_has(blocked, signo); }
};

struct SignalfdSnapshot {
  int fd = -1;
  std::uint64_t mask = 0;  // the signals it reads
};

struct ProcessSnapshot {
  pid_t pid = 0;
  pid_t asked_tid = 0;  // the thread id asked for, when it was not the process id
  std::string name;
  char state = '?';  // stat State of the process: R, S, D, T, t, Z, ...
  pid_t parent = 0;  // PPid
  // NSpid: its id in each PID namespace from ours to its own; empty when
  // the kernel does not say (before 4.1).
  std::vector<pid_t> namespace_pids;
  // PID 1 of its PID namespace (NSpid ends in 1): the kernel marks it
  // SIGNAL_UNKILLABLE. With no NSpid line, pid 1 in ours.
  bool namespace_init = false;
  // PID 1 of the initial PID namespace: namespace_init, and ours is the
  // initial namespace (kthreadd, PID 2, is visible: kernel threads live only
  // there).
  bool global_init = false;
  // stat's pgrp and session, and whether the process group is orphaned as
  // the kernel judges it when a stop signal is taken (will_become_orphaned_pgrp):
  // no live member has a parent, other than the global init, in another group
  // of the same session. The kernel then discards SIGTSTP, SIGTTIN and
  // SIGTTOU whose action would be the default, since nobody would be there
  // to continue the process. 0 when stat could not be read.
  pid_t process_group = 0;
  pid_t session = 0;
  bool orphaned_process_group = false;
  std::vector<ThreadSnapshot> threads;  // list order; the main thread first when alive
  std::uint64_t shared_pending = 0;     // ShdPnd: pending for the process
  std::vector<SignalfdSnapshot> signalfds;
  // False when /proc/PID/fdinfo could not be listed (another user's process
  // without ptrace-read access): signalfds is then unknown, not empty.
  bool fdinfo_readable = true;
  // SigQ: signals queued for the process's real user (all of that user's
  // processes) / the limit that applies; -1 when absent.
  long queued = -1;
  long queue_limit = -1;
  long rlimit_sigpending = -1;  // soft "Max pending signals"; -1 unlimited or unreadable
  std::uint64_t window_ns = 0;  // the sampling window of run/wait shares; 0: one read
  int online_cpus = 0;
  // The CPU time of the whole process, every thread it ever had (stat
  // utime + stime, in clock ticks turned to ns), and over the window the
  // share of one CPU used by threads that were not there for the whole
  // window (born or died in it: short-lived threads); -1 not measured.
  std::uint64_t cpu_ns = 0;
  double short_lived_share = -1;
  int short_lived_seen = 0;  // threads new in the window and still there at its end
  // Why fdinfo could not be read (errno) and whether this process is root:
  // root is refused only by the kernel's ptrace-read check (a non-dumpable
  // target, one with capabilities we lack, a security module).
  int fdinfo_error = 0;
  bool reader_is_root = false;

  const ThreadSnapshot* main_thread() const noexcept;
};

// Reads the process once (no shares). Throws ProcessGone when it does not
// exist, exits meanwhile or is a zombie, InspectError when it cannot be read.
ProcessSnapshot read_process(pid_t pid);

// Reads it twice, `window` apart, and fills run_share/wait_share from the
// difference, per thread over the time between its own two reads (threads
// that appeared in between, or whose TID was reused, have none: they are
// new_in_window), and short_lived_share from the process's CPU time that
// no thread present at both reads used.
ProcessSnapshot sample_process(pid_t pid, std::chrono::nanoseconds window);

// Pending signals only (ShdPnd and every thread's SigPnd), for --watch.
struct PendingSnapshot {
  std::uint64_t shared = 0;
  std::vector<std::pair<pid_t, std::uint64_t>> threads;
};
PendingSnapshot read_pending(pid_t pid);

// Parsers, exposed for the tests.
std::uint64_t parse_mask(std::string_view hex);          // "0000000000000200" -> 1<<9
std::vector<int> parse_cpu_list(std::string_view list);  // "0-2,5" -> {0,1,2,5}
// Fills state, masks and Cpus_allowed_list from a task status file's text.
void parse_task_status(std::string_view text, ThreadSnapshot& thread);
// Fills exiting, nice, processor, rt_priority, policy and start_time from a
// stat line; false when the line is not a stat line.
bool parse_task_stat(std::string_view text, ThreadSnapshot& thread);
// The NSpid line of a status file ("NSpid:\t4242\t1" -> {4242, 1}); empty
// when there is none.
std::vector<pid_t> parse_namespace_pids(std::string_view status);
// The soft "Max pending signals" of a limits file; -1 for unlimited or absent.
long parse_limits_sigpending(std::string_view text);
// The "sigmask:" of a signalfd's fdinfo; nullopt for any other kind of fd.
std::optional<std::uint64_t> parse_signalfd_fdinfo(std::string_view text);

}  // namespace doorbell::lab::inspect
