// Reading /proc: the threads of a process and each thread's signal masks.
// These are snapshots: a thread may start or exit right after the read, which
// the callers must tolerate (a tgkill to a thread that exited gives ESRCH).
#pragma once

#include <signal.h>
#include <sys/types.h>

#include <optional>
#include <string>
#include <vector>

namespace doorbell::sys {

// The thread ids listed in /proc/<pid>/task. Throws std::system_error when
// the process does not exist or cannot be read.
std::vector<pid_t> list_threads(pid_t pid);

// The masks of one thread from /proc/<pid>/task/<tid>/status (SigBlk, SigPnd,
// ShdPnd, SigIgn, SigCgt); nullopt when the thread is gone. Throws
// std::system_error when the file cannot be read for another reason
// (EMFILE, ENOMEM): that is not "gone".
struct ThreadSignalState {
  sigset_t blocked;
  sigset_t pending;         // thread-directed pending (SigPnd)
  sigset_t shared_pending;  // process-directed pending (ShdPnd)
  sigset_t ignored;
  sigset_t caught;
  char state = '?';  // the State: letter (R, S, T, t, D, Z, ...)
  // SigBlk has SIGCANCEL and SIGSETXID (32, 33) set. glibc never lets a
  // program block those (pthread_sigmask, sigprocmask and sigaddset drop
  // them): the thread is inside glibc's own all-blocked window, which is how
  // a thread starts (clone() under an all-blocked mask; the thread sets its
  // own mask when it first runs) and how it ends. Its mask is about to
  // change (or it is about to go): `blocked` says nothing about the signals
  // it will take. `blocked` cannot show these two (a sigset_t filled by
  // sigaddset), hence this flag.
  bool in_glibc_all_blocked_window = false;
};
std::optional<ThreadSignalState> read_thread_signal_state(pid_t pid, pid_t tid);

// Parses the hexadecimal mask format of /proc/.../status into a sigset_t.
sigset_t parse_proc_sigmask(const std::string& hex);

// The calling thread's kernel thread id.
pid_t current_tid() noexcept;

}  // namespace doorbell::sys
