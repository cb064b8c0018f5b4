// The one way the library reaps a child of its own (ChildProcess, the
// partition scheduler's partitions and guardian), through the seam.
#pragma once

#include <signal.h>
#include <sys/types.h>

#include <optional>

namespace doorbell::sys {

// Waits for child `pid` (pidfd: its pidfd, or -1) to exit and reaps it:
// waitid(P_PIDFD), EINTR retried; should it fail otherwise, waitpid() on the
// PID, which stays ours until reaped (a failure of one call must not leave
// a zombie, nor be taken for "reaped elsewhere"). Returns how it ended
// (si_code CLD_EXITED, CLD_KILLED or CLD_DUMPED, and si_status), or nullopt
// when it is no child of ours any more (ECHILD: reaped by someone else,
// waitpid(-1) or SIGCHLD ignored). Any other failure of both cannot happen
// and ends the process (sys::fatal). Blocks until the child exits.
std::optional<siginfo_t> reap(int pidfd, pid_t pid) noexcept;

}  // namespace doorbell::sys
