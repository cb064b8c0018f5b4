// Thread-directed signals through syscall(2): tgkill(2) and
// rt_tgsigqueueinfo(2). glibc has tgkill since 2.30 but no wrapper for
// rt_tgsigqueueinfo, so both go through syscall(2) here for one calling
// convention: 0 on success or -errno, never a thrown exception (these sit on
// the sending hot path). Both pass the fault injection seam (sys/fault.h).
#pragma once

#include <signal.h>
#include <sys/types.h>

#include <source_location>

namespace doorbell::sys {

// tgkill(tgid, tid, signo). -ESRCH when tid is not (or no longer) a thread of
// tgid. Async-signal-safe.
int tgkill(pid_t tgid, pid_t tid, int signo,
           const std::source_location& where = std::source_location::current()) noexcept;

// rt_tgsigqueueinfo(tgid, tid, signo, info). The kernel refuses (-EPERM) a
// non-negative si_code or SI_TKILL when the target is another process, so
// callers sending to others use SI_QUEUE. Async-signal-safe.
int rt_tgsigqueueinfo(pid_t tgid, pid_t tid, int signo, siginfo_t* info,
                      const std::source_location& where = std::source_location::current()) noexcept;

}  // namespace doorbell::sys
