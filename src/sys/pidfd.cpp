#include "sys/pidfd.h"

#include <sys/syscall.h>
#include <unistd.h>

#include <cerrno>
#include <string>

#include "sys/error.h"
#include "sys/fault.h"

#ifndef SYS_pidfd_open
#define SYS_pidfd_open 434
#endif
#ifndef SYS_pidfd_send_signal
#define SYS_pidfd_send_signal 424
#endif

namespace doorbell::sys {

UniqueFd pidfd_open(pid_t pid, unsigned flags, const std::source_location& where) {
  if (const int e = fault::injected(fault::Call::pidfd_open, where))
    throw_errno(e, "pidfd_open(" + std::to_string(pid) + ")");
  const long fd = ::syscall(SYS_pidfd_open, pid, flags);
  if (fd < 0) throw_errno("pidfd_open(" + std::to_string(pid) + ")");
  return UniqueFd(static_cast<int>(fd));
}

int pidfd_send_signal(int pidfd, int signo, siginfo_t* info, unsigned flags,
                      const std::source_location& where) noexcept {
  if (const int e = fault::injected(fault::Call::pidfd_send_signal, where)) return -e;
  if (::syscall(SYS_pidfd_send_signal, pidfd, signo, info, flags) == 0) return 0;
  return -errno;
}

}  // namespace doorbell::sys
