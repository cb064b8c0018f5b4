#include "sys/pidfd.h"

#include <sys/syscall.h>
#include <unistd.h>

#include <cerrno>
#include <string>

#include "sys/error.h"

#ifndef SYS_pidfd_open
#define SYS_pidfd_open 434
#endif
#ifndef SYS_pidfd_send_signal
#define SYS_pidfd_send_signal 424
#endif

namespace doorbell::sys {

UniqueFd pidfd_open(pid_t pid, unsigned flags) {
  const long fd = ::syscall(SYS_pidfd_open, pid, flags);
  if (fd < 0) throw_errno("pidfd_open(" + std::to_string(pid) + ")");
  return UniqueFd(static_cast<int>(fd));
}

int pidfd_send_signal(int pidfd, int signo, siginfo_t* info, unsigned flags) noexcept {
  if (::syscall(SYS_pidfd_send_signal, pidfd, signo, info, flags) == 0) return 0;
  return -errno;
}

}  // namespace doorbell::sys
