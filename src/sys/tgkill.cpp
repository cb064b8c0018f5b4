#include "sys/tgkill.h"

#include <sys/syscall.h>
#include <unistd.h>

#include <cerrno>

namespace doorbell::sys {

int tgkill(pid_t tgid, pid_t tid, int signo) noexcept {
  if (::syscall(SYS_tgkill, tgid, tid, signo) == 0) return 0;
  return -errno;
}

int rt_tgsigqueueinfo(pid_t tgid, pid_t tid, int signo, siginfo_t* info) noexcept {
  if (::syscall(SYS_rt_tgsigqueueinfo, tgid, tid, signo, info) == 0) return 0;
  return -errno;
}

}  // namespace doorbell::sys
