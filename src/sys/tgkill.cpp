#include "sys/tgkill.h"

#include <sys/syscall.h>
#include <unistd.h>

#include <cerrno>

#include "sys/fault.h"

namespace doorbell::sys {

int tgkill(pid_t tgid, pid_t tid, int signo, const std::source_location& where) noexcept {
  if (const int e = fault::injected(fault::Call::tgkill, where)) return -e;
  if (::syscall(SYS_tgkill, tgid, tid, signo) == 0) return 0;
  return -errno;
}

int rt_tgsigqueueinfo(pid_t tgid, pid_t tid, int signo, siginfo_t* info,
                      const std::source_location& where) noexcept {
  if (const int e = fault::injected(fault::Call::rt_tgsigqueueinfo, where)) return -e;
  if (::syscall(SYS_rt_tgsigqueueinfo, tgid, tid, signo, info) == 0) return 0;
  return -errno;
}

}  // namespace doorbell::sys
