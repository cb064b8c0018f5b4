// pidfd_open(2) and pidfd_send_signal(2) through syscall(2): glibc 2.36 has
// wrappers only in <sys/pidfd.h>, which older systems lack. Both pass the
// fault injection seam (sys/fault.h).
#pragma once

#include <signal.h>
#include <sys/types.h>

#include <source_location>

#include "sys/fd.h"

namespace doorbell::sys {

// Opens a pidfd for pid. Throws std::system_error (ESRCH when it is gone,
// ENOSYS before Linux 5.3).
UniqueFd pidfd_open(pid_t pid, unsigned flags = 0,
                    const std::source_location& where = std::source_location::current());

// Sends signo through the pidfd; returns 0 or -errno. info may be null.
int pidfd_send_signal(int pidfd, int signo, siginfo_t* info = nullptr, unsigned flags = 0,
                      const std::source_location& where = std::source_location::current()) noexcept;

}  // namespace doorbell::sys
