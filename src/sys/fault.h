// Fault injection: the test side of the one seam every raw system call of
// the library passes (src/sys/syscalls.h and the other src/sys/ wrappers).
// Internal and test-only in effect: nothing in include/doorbell/ mentions it,
// and a program that never arms it pays one relaxed load of a process-wide
// flag and one predictable branch per system call (the wrappers are inline;
// the check is taken out of line only while armed).
//
// In the style of SQLite's test harness (which fails every allocation and
// every I/O call in turn): a test arms the injector, runs one operation of
// the library, and disarms it. Armed, the seam counts every call by kind
// (Call) and, when asked, makes the Nth call of one kind fail with a chosen
// errno without entering the kernel (close() excepted: Linux releases the
// descriptor whatever close() reports, so an injected close() closes it and
// then reports the error). tests/fault_injection_test.cpp sweeps every
// operation of every type through every call it makes.
//
//   fault::count_calls();                      // arm, count only
//   operation();
//   fault::disarm();
//   for each kind k, for n in 1..calls(k), for each errno e:
//     fault::fail_nth_call(k, n, e); operation(); fault::disarm(); check...
//
// Timed waits (poll, ppoll, epoll_wait, sigtimedwait, nanosleep): an
// injected EINTR first sleeps for half the call's timeout (at most 20 ms)
// and only then fails, like a signal that arrives in the middle of the
// wait; the injection records the timeout, the time slept and the timeout
// of the next call from the same site (the retry), so a test can check that
// EINTR is retried with the time left, never with the whole timeout again.
//
// Scope: only the process that armed the injector (children forked while it
// is armed inherit the flag, but the seam compares getpid() with the
// arming process's pid and neither counts nor fails their calls). Calls on
// every thread of that process count, signal handlers included: every
// function here that the seam calls is async-signal-safe (atomics and raw
// system calls only).
//
// Threads: arm and disarm while no other thread of the library runs an
// operation whose calls should not count, or accept that they do.
#pragma once

#include <atomic>
#include <cerrno>
#include <cstddef>
#include <cstdint>
#include <source_location>

namespace doorbell::sys::fault {

// Every kind of call that passes the seam.
enum class Call : uint8_t {
  open,
  close,
  read,
  write,
  file_read,      // read(2) of a /proc or cgroupfs file (sys::read_file)
  eventfd_read,   // read(2) of one of the library's (non-blocking) eventfds
  eventfd_write,  // write(2) to one
  timerfd_read,   // read(2) of a (non-blocking) timerfd
  pread,
  pwrite,
  poll,
  ppoll,
  epoll_create1,
  epoll_ctl,
  epoll_wait,
  eventfd,
  timerfd_create,
  timerfd_settime,
  signalfd,
  signalfd_mask,  // signalfd() on an existing descriptor: a new mask
  sigaction,
  sigprocmask,  // pthread_sigmask and sigprocmask
  futex_wait,
  futex_wake,
  kill,
  tgkill,
  rt_tgsigqueueinfo,
  pidfd_open,
  pidfd_send_signal,
  waitid,
  waitpid,
  fork,
  pipe2,
  socketpair,
  send,
  sendmsg,
  recvmsg,
  mkdir,
  rmdir,
  access,
  stat,
  opendir,
  dup,  // dup2 and fcntl(F_DUPFD_CLOEXEC)
  prctl,
  setpgid,
  setsid,
  sched_setscheduler,
  sched_getscheduler,  // and sched_getparam
  sched_setaffinity,   // and pthread_setaffinity_np
  sched_setparam,      // pthread_setschedparam
  setpriority,
  getrlimit,
  posix_spawn,
  sigwaitinfo,
  sigtimedwait,
  nanosleep,  // and usleep
  clock_getcpuclockid,
  thread_create,  // std::thread (pthread_create)
  close_range,
  execve,
  memfd_create,
  ftruncate,
  mmap,
  add_seals,  // fcntl(F_ADD_SEALS)
  count_      // the number of kinds
};
inline constexpr std::size_t kCalls = static_cast<std::size_t>(Call::count_);

// "read", "epoll_ctl", ...
const char* call_name(Call call) noexcept;

// The errnos a sweep injects: the four every call gets, and the two that
// only some calls can return.
inline constexpr int kSweepErrnos[] = {EINTR, EAGAIN, ENOMEM, EMFILE, EPERM, ESRCH};

// Whether the kernel (or the C library, for posix_spawn and thread
// creation) can make `call` fail with `error`, as the library uses the call
// (flags, file types), per the manual pages and the kernel's code. For a
// sweep's verdict: an error the kernel cannot return may be treated as
// "cannot happen" (the library aborts after a message: sys::fatal), one it
// can return must be handled.
bool kernel_can_return(Call call, int error) noexcept;

// ---------------------------------------------------------------- the seam

// Armed: a test has called count_calls() or fail_nth_call(). Relaxed: the
// test arms before it starts the operation (and its threads), and the flag
// only routes calls to check().
extern std::atomic<bool> g_armed;

// Out of line, while armed: counts the call, records its site, and returns
// the errno to fail it with (0: go on).
int check(Call call, const std::source_location& where) noexcept;
// The same for a timed wait; timeout_ns < 0: no limit. An injected EINTR
// sleeps first (see the top).
int check_timed(Call call, int64_t timeout_ns, const std::source_location& where) noexcept;

// A call site whose own protocol rules out errors the kernel could return
// for that call in general (stop() of a SignalReceiver queues the wake-up
// to a thread that cannot have exited yet: ESRCH cannot happen there) says
// so for the calls this thread makes while the object lives, next to the
// sys::fatal that handles "cannot happen". A sweep then accepts the abort
// there; everywhere else an errno kernel_can_return() must be handled. One
// store to a thread-local word each way; async-signal-safe.
extern constinit thread_local uint64_t t_impossible;  // bit e: errno e
class ImpossibleHere {
 public:
  template <class... Errors>
  explicit ImpossibleHere(Errors... errors) noexcept : saved_(t_impossible) {
    ((t_impossible |= uint64_t{1} << errors), ...);
  }
  ~ImpossibleHere() { t_impossible = saved_; }
  ImpossibleHere(const ImpossibleHere&) = delete;
  ImpossibleHere& operator=(const ImpossibleHere&) = delete;

 private:
  uint64_t saved_;
};

// 0 when the call must go on, else the errno to fail it with.
[[gnu::always_inline]] inline int injected(Call call, const std::source_location& where) noexcept {
  if (!g_armed.load(std::memory_order_relaxed)) [[likely]]
    return 0;
  return check(call, where);
}
[[gnu::always_inline]] inline int injected_timed(Call call, int64_t timeout_ns,
                                                 const std::source_location& where) noexcept {
  if (!g_armed.load(std::memory_order_relaxed)) [[likely]]
    return 0;
  return check_timed(call, timeout_ns, where);
}

// ---------------------------------------------------------------- tests

// Arms the injector to count calls only (counts and sites start from zero).
void count_calls() noexcept;
// Arms it to count calls and to fail the nth (1-based) call of `call` with
// `error`, once.
void fail_nth_call(Call call, uint32_t nth, int error) noexcept;
// Disarms it; counts and the injection record stay readable.
void disarm() noexcept;

// When fd >= 0, the call that fires writes one line to fd first:
// "doorbell-fault: <call> #<n> errno <e> at <file>:<line>", followed by
// " (declared impossible)" when the site said so (so that a test knows
// where, and what the site promised, even when the operation then aborts).
// -1: none.
void set_report_fd(int fd) noexcept;

// Calls of one kind since the last arm.
uint32_t calls(Call call) noexcept;

// What the armed plan did.
struct Injection {
  bool fired = false;  // the nth call happened and was failed
  Call call = Call::count_;
  uint32_t nth = 0;
  int error = 0;
  const char* file = nullptr;  // the failed call's site
  unsigned line = 0;
  // Timed waits: the failed call's timeout (-1: none), how long the
  // injection slept, and the timeout of the next call from the same site.
  int64_t timeout_ns = -1;
  int64_t slept_ns = 0;
  bool retried = false;
  int64_t retry_timeout_ns = -1;
  // The site declared the error impossible (ImpossibleHere).
  bool declared_impossible = false;
};
Injection injection() noexcept;

// The distinct call sites seen since the last arm (at most kMaxSites).
struct Site {
  const char* file = nullptr;
  unsigned line = 0;
  Call call = Call::count_;
};
inline constexpr std::size_t kMaxSites = 256;
std::size_t sites(Site* out, std::size_t capacity) noexcept;

}  // namespace doorbell::sys::fault
