#include "sys/reap.h"

#include <cstring>

#include "sys/error.h"
#include "sys/syscalls.h"

#ifndef P_PIDFD
#define P_PIDFD 3
#endif

namespace doorbell::sys {

std::optional<siginfo_t> reap(int pidfd, pid_t pid) noexcept {
  siginfo_t info;
  std::memset(&info, 0, sizeof info);
  if (pidfd >= 0) {
    int rc;
    do rc = sys::waitid(static_cast<idtype_t>(P_PIDFD), static_cast<id_t>(pidfd), &info, WEXITED);
    while (rc != 0 && errno == EINTR);
    if (rc == 0) return info;
    if (errno == ECHILD) return std::nullopt;
  }
  int status = 0;
  pid_t rc;
  do rc = sys::waitpid(pid, &status, 0);
  while (rc < 0 && errno == EINTR);
  if (rc < 0) {
    if (errno == ECHILD) return std::nullopt;
    sys::fatal("waitpid(a child of ours)", errno);
  }
  std::memset(&info, 0, sizeof info);
  info.si_pid = pid;
  info.si_signo = SIGCHLD;
  if (WIFEXITED(status)) {
    info.si_code = CLD_EXITED;
    info.si_status = WEXITSTATUS(status);
  } else {
    info.si_code = WCOREDUMP(status) ? CLD_DUMPED : CLD_KILLED;
    info.si_status = WTERMSIG(status);
  }
  return info;
}

}  // namespace doorbell::sys
