// pidfd_open(2) and pidfd_send_signal(2) through syscall(2): glibc 2.36 has
// wrappers only in <sys/pidfd.h>, which older systems lack.
#pragma once

#include <signal.h>
#include <sys/types.h>

#include "sys/fd.h"

namespace doorbell::sys {

// Opens a pidfd for pid. Throws std::system_error (ESRCH when it is gone,
// ENOSYS before Linux 5.3).
UniqueFd pidfd_open(pid_t pid, unsigned flags = 0);

// Sends signo through the pidfd; returns 0 or -errno. info may be null.
int pidfd_send_signal(int pidfd, int signo, siginfo_t* info = nullptr, unsigned flags = 0) noexcept;

}  // namespace doorbell::sys
