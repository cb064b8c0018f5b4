#include "lab/common/signal_scope.h"

#include <pthread.h>

#include <cerrno>
#include <cstring>

#include "sys/error.h"

namespace doorbell::lab {
namespace {

struct sigaction make_action(int flags) {
  struct sigaction sa;
  std::memset(&sa, 0, sizeof sa);
  sa.sa_flags = flags;
  sigemptyset(&sa.sa_mask);
  return sa;
}

}  // namespace

ScopedDisposition::ScopedDisposition(int signo, Handler handler, int flags) : signo_(signo) {
  struct sigaction sa = make_action(flags & ~SA_SIGINFO);
  sa.sa_handler = handler;
  if (::sigaction(signo, &sa, &old_) != 0) sys::throw_errno("sigaction");
}

ScopedDisposition::ScopedDisposition(int signo, InfoHandler handler, int flags) : signo_(signo) {
  struct sigaction sa = make_action(flags | SA_SIGINFO);
  sa.sa_sigaction = handler;
  if (::sigaction(signo, &sa, &old_) != 0) sys::throw_errno("sigaction");
}

ScopedDisposition::ScopedDisposition(int signo, const struct sigaction& action) : signo_(signo) {
  if (::sigaction(signo, &action, &old_) != 0) sys::throw_errno("sigaction");
}

ScopedDisposition::~ScopedDisposition() {
  ::sigaction(signo_, &old_, nullptr);
}

ScopedMask::ScopedMask(int how, std::initializer_list<int> signals) {
  sigset_t set;
  sigemptyset(&set);
  for (int s : signals) sigaddset(&set, s);
  const int rc = ::pthread_sigmask(how, &set, &old_);
  if (rc != 0) sys::throw_errno(rc, "pthread_sigmask");
}

ScopedMask::ScopedMask(int how, const sigset_t& signals) {
  const int rc = ::pthread_sigmask(how, &signals, &old_);
  if (rc != 0) sys::throw_errno(rc, "pthread_sigmask");
}

ScopedMask::~ScopedMask() {
  ::pthread_sigmask(SIG_SETMASK, &old_, nullptr);
}

long drain_pending(int signo) noexcept {
  sigset_t set;
  sigemptyset(&set);
  sigaddset(&set, signo);
  const timespec zero{0, 0};
  long taken = 0;
  for (;;) {
    const int rc = ::sigtimedwait(&set, nullptr, &zero);
    if (rc == signo) {
      ++taken;
      continue;
    }
    if (rc < 0 && errno == EINTR) continue;
    return taken;
  }
}

}  // namespace doorbell::lab
