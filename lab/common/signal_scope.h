// Scopes that change process-wide or thread-wide signal state and put it back:
// the lab's scenarios, `doorbell trace` and `doorbell partition` use these and
// nothing else, so "no mask or disposition left changed" is written once.
//
// Both throw std::system_error when the change cannot be made (nothing has
// changed then). Restoring cannot fail for a disposition or mask that was
// read successfully, so the destructors do not report.
//
// Threads: ScopedDisposition changes a process-wide setting; two threads that
// both change the same signal's disposition must nest their scopes in time.
// ScopedMask changes the calling thread's mask and must be destroyed on the
// thread that made it.
#pragma once

#include <signal.h>

#include <initializer_list>

namespace doorbell::lab {

class ScopedDisposition {
 public:
  using Handler = void (*)(int);
  using InfoHandler = void (*)(int, siginfo_t*, void*);

  // Installs `handler` (a plain handler, or SIG_IGN / SIG_DFL) for signo with
  // `flags` and an empty sa_mask.
  ScopedDisposition(int signo, Handler handler, int flags = SA_RESTART);
  // Installs an SA_SIGINFO handler for signo with `flags` | SA_SIGINFO.
  ScopedDisposition(int signo, InfoHandler handler, int flags = SA_RESTART);
  // Installs `action` as given.
  ScopedDisposition(int signo, const struct sigaction& action);
  ~ScopedDisposition();
  ScopedDisposition(const ScopedDisposition&) = delete;
  ScopedDisposition& operator=(const ScopedDisposition&) = delete;

  // The disposition in force before this scope.
  const struct sigaction& previous() const noexcept { return old_; }

 private:
  int signo_;
  struct sigaction old_;
};

class ScopedMask {
 public:
  // how is SIG_BLOCK, SIG_UNBLOCK or SIG_SETMASK, applied with `signals`.
  ScopedMask(int how, std::initializer_list<int> signals);
  ScopedMask(int how, const sigset_t& signals);
  ~ScopedMask();
  ScopedMask(const ScopedMask&) = delete;
  ScopedMask& operator=(const ScopedMask&) = delete;

  const sigset_t& previous() const noexcept { return old_; }

 private:
  sigset_t old_;
};

// Takes every pending instance of signo (which the caller blocks) without
// running a handler, so that restoring a disposition or a mask cannot run a
// handler or a default action on a leftover. Returns how many it took.
// Async-signal-safe.
long drain_pending(int signo) noexcept;

// drain_pending(signo) on destruction. Declare it after the ScopedMask that
// blocks signo and after the ScopedDisposition it protects, so it runs
// before either is undone.
class ScopedDrain {
 public:
  explicit ScopedDrain(int signo) noexcept : signo_(signo) {}
  ~ScopedDrain() { drain_pending(signo_); }
  ScopedDrain(const ScopedDrain&) = delete;
  ScopedDrain& operator=(const ScopedDrain&) = delete;

 private:
  int signo_;
};

}  // namespace doorbell::lab
