// The injector behind the seam (fault.h). Everything the seam calls while
// armed is async-signal-safe: atomics, raw getpid(2) and nanosleep(2).
#include "sys/fault.h"

#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include "sys/fault_sweep.h"

namespace doorbell::sys::fault {

std::atomic<bool> g_armed{false};
constinit thread_local uint64_t t_impossible = 0;

namespace {

constexpr int kNoPlan = -1;

std::atomic<long> g_pid{0};  // the arming process
std::atomic<uint32_t> g_counts[kCalls];
std::atomic<int> g_fail_call{kNoPlan};
std::atomic<uint32_t> g_fail_nth{0};
std::atomic<int> g_fail_error{0};
// The injection record. Written by the one call that fires (its count is
// the unique nth), read by the test after disarm().
std::atomic<bool> g_fired{false};
std::atomic<int> g_report_fd{-1};
std::atomic<const char*> g_fired_file{nullptr};
std::atomic<unsigned> g_fired_line{0};
std::atomic<int64_t> g_fired_timeout_ns{-1};
std::atomic<int64_t> g_slept_ns{0};
std::atomic<bool> g_retried{false};
std::atomic<int64_t> g_retry_timeout_ns{-1};
std::atomic<bool> g_declared{false};
// The second failure (fault_sweep.h): counted among the calls made after
// the first one fired.
std::atomic<uint32_t> g_after_counts[kCalls];
std::atomic<int> g_second_call{kNoPlan};
std::atomic<uint32_t> g_second_nth{0};
std::atomic<int> g_second_error{0};
std::atomic<bool> g_second_fired{false};
std::atomic<const char*> g_second_file{nullptr};
std::atomic<unsigned> g_second_line{0};
std::atomic<bool> g_second_declared{false};

struct SiteSlot {
  std::atomic<const char*> file{nullptr};
  std::atomic<unsigned> line{0};
  std::atomic<int> call{0};
};
SiteSlot g_sites[kMaxSites];

bool in_arming_process() noexcept {
  return ::syscall(SYS_getpid) == g_pid.load(std::memory_order_relaxed);
}

// Lock-free insert of a (file, line) site: claim a slot by CAS of its file
// pointer on an empty slot after a linear scan. Sites are few (a few
// hundred in the library); a full table just stops recording.
void record_site(Call call, const std::source_location& where) noexcept {
  const char* file = where.file_name();
  const unsigned line = where.line();
  for (SiteSlot& slot : g_sites) {
    const char* seen = slot.file.load(std::memory_order_acquire);
    if (seen == nullptr) {
      if (slot.file.compare_exchange_strong(seen, file, std::memory_order_acq_rel)) {
        slot.line.store(line, std::memory_order_release);
        slot.call.store(static_cast<int>(call), std::memory_order_release);
        return;
      }
    }
    // Same file pointer and line: seen already (a slot just claimed by
    // another thread may show line 0 for a moment: then it is recorded
    // twice at worst, which only inflates a statistic).
    if (seen == file && slot.line.load(std::memory_order_acquire) == line) return;
  }
}

// Formats without snprintf (async-signal-safe).
void append(char*& out, const char* end, const char* text) noexcept {
  while (*text != '\0' && out < end) *out++ = *text++;
}
void append_number(char*& out, const char* end, unsigned long value) noexcept {
  char digits[24];
  int n = 0;
  do digits[n++] = static_cast<char>('0' + value % 10);
  while ((value /= 10) != 0 && n < 24);
  while (n > 0 && out < end) *out++ = digits[--n];
}
void report(int fd, Call call, uint32_t nth, int error, bool declared,
            const std::source_location& where) noexcept {
  char line[512];
  char* out = line;
  const char* end = line + sizeof line - 1;
  append(out, end, "doorbell-fault: ");
  append(out, end, call_name(call));
  append(out, end, " #");
  append_number(out, end, nth);
  append(out, end, " errno ");
  append_number(out, end, static_cast<unsigned long>(error));
  append(out, end, " at ");
  const char* file = where.file_name();
  for (const char* p = file; *p != '\0'; ++p)
    if (*p == '/') file = p + 1;
  append(out, end, file);
  append(out, end, ":");
  append_number(out, end, where.line());
  if (declared) append(out, end, " (declared impossible)");
  *out++ = '\n';
  const int saved_errno = errno;
  ::write(fd, line, static_cast<size_t>(out - line));
  errno = saved_errno;
}

bool same_site(const std::source_location& where) noexcept {
  return g_fired_file.load(std::memory_order_relaxed) == where.file_name() &&
         g_fired_line.load(std::memory_order_relaxed) == where.line();
}

int decide(Call call, int64_t timeout_ns, const std::source_location& where, bool timed) noexcept {
  if (!in_arming_process()) return 0;
  record_site(call, where);
  const uint32_t nth =
      g_counts[static_cast<std::size_t>(call)].fetch_add(1, std::memory_order_relaxed) + 1;
  if (g_fired.load(std::memory_order_acquire)) {
    // The call after the injected one, from the same site: a retry.
    if (timed && same_site(where) && !g_retried.exchange(true, std::memory_order_acq_rel))
      g_retry_timeout_ns.store(timeout_ns, std::memory_order_relaxed);
    const uint32_t after =
        g_after_counts[static_cast<std::size_t>(call)].fetch_add(1, std::memory_order_relaxed) + 1;
    if (g_second_call.load(std::memory_order_relaxed) != static_cast<int>(call) ||
        g_second_nth.load(std::memory_order_relaxed) != after ||
        g_second_fired.exchange(true, std::memory_order_acq_rel))
      return 0;
    const int second = g_second_error.load(std::memory_order_relaxed);
    const bool declared = second < 64 && ((t_impossible >> second) & 1) != 0;
    g_second_file.store(where.file_name(), std::memory_order_relaxed);
    g_second_line.store(where.line(), std::memory_order_relaxed);
    g_second_declared.store(declared, std::memory_order_relaxed);
    if (const int fd = g_report_fd.load(std::memory_order_relaxed); fd >= 0)
      report(fd, call, after, second, declared, where);
    return second;
  }
  if (g_fail_call.load(std::memory_order_relaxed) != static_cast<int>(call) ||
      g_fail_nth.load(std::memory_order_relaxed) != nth)
    return 0;
  const int error = g_fail_error.load(std::memory_order_relaxed);
  int64_t slept = 0;
  if (timed && error == EINTR && timeout_ns != 0) {
    // A signal in the middle of the wait: half the timeout, at most 20 ms.
    constexpr int64_t kMaxSleepNs = 20'000'000;
    slept = timeout_ns < 0 ? kMaxSleepNs : timeout_ns / 2;
    if (slept > kMaxSleepNs) slept = kMaxSleepNs;
    timespec pause{static_cast<time_t>(slept / 1'000'000'000),
                   static_cast<long>(slept % 1'000'000'000)};
    const int saved_errno = errno;
    while (::syscall(SYS_nanosleep, &pause, &pause) != 0 && errno == EINTR) {
    }
    errno = saved_errno;
  }
  const bool declared = error < 64 && ((t_impossible >> error) & 1) != 0;
  g_fired_file.store(where.file_name(), std::memory_order_relaxed);
  g_fired_line.store(where.line(), std::memory_order_relaxed);
  g_declared.store(declared, std::memory_order_relaxed);
  if (const int fd = g_report_fd.load(std::memory_order_relaxed); fd >= 0)
    report(fd, call, nth, error, declared, where);
  g_fired_timeout_ns.store(timeout_ns, std::memory_order_relaxed);
  g_slept_ns.store(slept, std::memory_order_relaxed);
  g_fired.store(true, std::memory_order_release);
  return error;
}

void arm(int call, uint32_t nth, int error, int second_call = kNoPlan, uint32_t second_nth = 0,
         int second_error = 0) noexcept {
  g_armed.store(false, std::memory_order_relaxed);
  for (auto& count : g_counts) count.store(0, std::memory_order_relaxed);
  for (auto& count : g_after_counts) count.store(0, std::memory_order_relaxed);
  g_second_call.store(second_call, std::memory_order_relaxed);
  g_second_nth.store(second_nth, std::memory_order_relaxed);
  g_second_error.store(second_error, std::memory_order_relaxed);
  g_second_fired.store(false, std::memory_order_relaxed);
  g_second_file.store(nullptr, std::memory_order_relaxed);
  g_second_line.store(0, std::memory_order_relaxed);
  g_second_declared.store(false, std::memory_order_relaxed);
  for (SiteSlot& slot : g_sites) {
    slot.file.store(nullptr, std::memory_order_relaxed);
    slot.line.store(0, std::memory_order_relaxed);
  }
  g_fired.store(false, std::memory_order_relaxed);
  g_fired_file.store(nullptr, std::memory_order_relaxed);
  g_fired_line.store(0, std::memory_order_relaxed);
  g_fired_timeout_ns.store(-1, std::memory_order_relaxed);
  g_slept_ns.store(0, std::memory_order_relaxed);
  g_retried.store(false, std::memory_order_relaxed);
  g_retry_timeout_ns.store(-1, std::memory_order_relaxed);
  g_declared.store(false, std::memory_order_relaxed);
  g_fail_call.store(call, std::memory_order_relaxed);
  g_fail_nth.store(nth, std::memory_order_relaxed);
  g_fail_error.store(error, std::memory_order_relaxed);
  g_pid.store(::syscall(SYS_getpid), std::memory_order_relaxed);
  // seq_cst: the plan above is visible to every thread that sees the flag
  // (threads the operation starts later see it anyway).
  g_armed.store(true, std::memory_order_seq_cst);
}

}  // namespace

int check(Call call, const std::source_location& where) noexcept {
  return decide(call, 0, where, false);
}

int check_timed(Call call, int64_t timeout_ns, const std::source_location& where) noexcept {
  return decide(call, timeout_ns, where, true);
}

void count_calls() noexcept {
  arm(kNoPlan, 0, 0);
}

void fail_nth_call(Call call, uint32_t nth, int error) noexcept {
  arm(static_cast<int>(call), nth, error);
}

void fail_nth_call_then(Call first, uint32_t nth, int error, Call second, uint32_t second_nth,
                        int second_error) noexcept {
  arm(static_cast<int>(first), nth, error, static_cast<int>(second), second_nth, second_error);
}

uint32_t calls_after_injection(Call call) noexcept {
  return g_after_counts[static_cast<std::size_t>(call)].load(std::memory_order_relaxed);
}

Injection second_injection() noexcept {
  Injection result;
  result.fired = g_second_fired.load(std::memory_order_acquire);
  const int call = g_second_call.load(std::memory_order_relaxed);
  result.call = call == kNoPlan ? Call::count_ : static_cast<Call>(call);
  result.nth = g_second_nth.load(std::memory_order_relaxed);
  result.error = g_second_error.load(std::memory_order_relaxed);
  result.file = g_second_file.load(std::memory_order_relaxed);
  result.line = g_second_line.load(std::memory_order_relaxed);
  result.declared_impossible = g_second_declared.load(std::memory_order_relaxed);
  return result;
}

void disarm() noexcept {
  g_armed.store(false, std::memory_order_seq_cst);
}

void set_report_fd(int fd) noexcept {
  g_report_fd.store(fd, std::memory_order_relaxed);
}

uint32_t calls(Call call) noexcept {
  return g_counts[static_cast<std::size_t>(call)].load(std::memory_order_relaxed);
}

Injection injection() noexcept {
  Injection result;
  result.fired = g_fired.load(std::memory_order_acquire);
  const int call = g_fail_call.load(std::memory_order_relaxed);
  result.call = call == kNoPlan ? Call::count_ : static_cast<Call>(call);
  result.nth = g_fail_nth.load(std::memory_order_relaxed);
  result.error = g_fail_error.load(std::memory_order_relaxed);
  result.file = g_fired_file.load(std::memory_order_relaxed);
  result.line = g_fired_line.load(std::memory_order_relaxed);
  result.timeout_ns = g_fired_timeout_ns.load(std::memory_order_relaxed);
  result.slept_ns = g_slept_ns.load(std::memory_order_relaxed);
  result.retried = g_retried.load(std::memory_order_relaxed);
  result.retry_timeout_ns = g_retry_timeout_ns.load(std::memory_order_relaxed);
  result.declared_impossible = g_declared.load(std::memory_order_relaxed);
  return result;
}

std::size_t sites(Site* out, std::size_t capacity) noexcept {
  std::size_t n = 0;
  for (const SiteSlot& slot : g_sites) {
    const char* file = slot.file.load(std::memory_order_acquire);
    if (file == nullptr) continue;
    if (n < capacity)
      out[n] = Site{file, slot.line.load(std::memory_order_acquire),
                    static_cast<Call>(slot.call.load(std::memory_order_acquire))};
    ++n;
  }
  return n < capacity ? n : capacity;
}

const char* call_name(Call call) noexcept {
  switch (call) {
#define DOORBELL_CALL_NAME(x) \
  case Call::x:               \
    return #x;
    DOORBELL_CALL_NAME(open)
    DOORBELL_CALL_NAME(close)
    DOORBELL_CALL_NAME(read)
    DOORBELL_CALL_NAME(write)
    DOORBELL_CALL_NAME(file_read)
    DOORBELL_CALL_NAME(eventfd_read)
    DOORBELL_CALL_NAME(eventfd_write)
    DOORBELL_CALL_NAME(timerfd_read)
    DOORBELL_CALL_NAME(pread)
    DOORBELL_CALL_NAME(pwrite)
    DOORBELL_CALL_NAME(poll)
    DOORBELL_CALL_NAME(ppoll)
    DOORBELL_CALL_NAME(epoll_create1)
    DOORBELL_CALL_NAME(epoll_ctl)
    DOORBELL_CALL_NAME(epoll_wait)
    DOORBELL_CALL_NAME(eventfd)
    DOORBELL_CALL_NAME(timerfd_create)
    DOORBELL_CALL_NAME(timerfd_settime)
    DOORBELL_CALL_NAME(signalfd)
    DOORBELL_CALL_NAME(signalfd_mask)
    DOORBELL_CALL_NAME(sigaction)
    DOORBELL_CALL_NAME(sigprocmask)
    DOORBELL_CALL_NAME(futex_wait)
    DOORBELL_CALL_NAME(futex_wake)
    DOORBELL_CALL_NAME(kill)
    DOORBELL_CALL_NAME(tgkill)
    DOORBELL_CALL_NAME(rt_tgsigqueueinfo)
    DOORBELL_CALL_NAME(pidfd_open)
    DOORBELL_CALL_NAME(pidfd_send_signal)
    DOORBELL_CALL_NAME(waitid)
    DOORBELL_CALL_NAME(waitpid)
    DOORBELL_CALL_NAME(fork)
    DOORBELL_CALL_NAME(pipe2)
    DOORBELL_CALL_NAME(socketpair)
    DOORBELL_CALL_NAME(send)
    DOORBELL_CALL_NAME(sendmsg)
    DOORBELL_CALL_NAME(recvmsg)
    DOORBELL_CALL_NAME(mkdir)
    DOORBELL_CALL_NAME(rmdir)
    DOORBELL_CALL_NAME(access)
    DOORBELL_CALL_NAME(stat)
    DOORBELL_CALL_NAME(opendir)
    DOORBELL_CALL_NAME(dup)
    DOORBELL_CALL_NAME(prctl)
    DOORBELL_CALL_NAME(setpgid)
    DOORBELL_CALL_NAME(setsid)
    DOORBELL_CALL_NAME(sched_setscheduler)
    DOORBELL_CALL_NAME(sched_getscheduler)
    DOORBELL_CALL_NAME(sched_setaffinity)
    DOORBELL_CALL_NAME(sched_setparam)
    DOORBELL_CALL_NAME(setpriority)
    DOORBELL_CALL_NAME(getrlimit)
    DOORBELL_CALL_NAME(posix_spawn)
    DOORBELL_CALL_NAME(sigwaitinfo)
    DOORBELL_CALL_NAME(sigtimedwait)
    DOORBELL_CALL_NAME(nanosleep)
    DOORBELL_CALL_NAME(clock_getcpuclockid)
    DOORBELL_CALL_NAME(thread_create)
    DOORBELL_CALL_NAME(close_range)
    DOORBELL_CALL_NAME(execve)
    DOORBELL_CALL_NAME(memfd_create)
    DOORBELL_CALL_NAME(ftruncate)
    DOORBELL_CALL_NAME(mmap)
    DOORBELL_CALL_NAME(add_seals)
#undef DOORBELL_CALL_NAME
    case Call::count_:
      break;
  }
  return "?";
}

std::span<const int> manual_errnos(Call call) noexcept {
  // From the manual pages (section 2, and 3 for posix_spawn and
  // pthread_create), narrowed to the errors of the call as the library makes
  // it, with EPERM, EBADF and EINVAL wherever the kernel can return them for
  // the call at all. EINTR first: the sweep gives every kind EINTR.
  switch (call) {
    case Call::open:
    case Call::opendir: {
      static constexpr int e[] = {EINTR,  EACCES, EBADF,  EINVAL,  EISDIR, ELOOP, EMFILE, ENFILE,
                                  ENODEV, ENOENT, ENOMEM, ENOTDIR, ENXIO,  EPERM, EROFS};
      return e;
    }
    case Call::close: {
      static constexpr int e[] = {EINTR, EBADF, EIO, ENOSPC, EDQUOT};
      return e;
    }
    case Call::read:
    case Call::file_read:
    case Call::pread: {
      // /proc and cgroupfs files: ENOMEM (seq_file), ESRCH (/proc/PID of a
      // process that exited), ENODEV (a cgroup removed meanwhile).
      static constexpr int e[] = {EINTR,  EAGAIN, EBADF, EFAULT, EINVAL, EIO,
                                  EISDIR, ENOMEM, ESRCH, ENODEV, ESPIPE};
      return e;
    }
    case Call::eventfd_read:
    case Call::eventfd_write:
    case Call::timerfd_read: {
      static constexpr int e[] = {EINTR, EAGAIN, EBADF, EFAULT, EINVAL, ECANCELED};
      return e;
    }
    case Call::write:
    case Call::pwrite: {
      // Pipes and sockets (EPIPE), cgroupfs files (EBUSY, ENODEV, ENOENT,
      // ESRCH, EINVAL, EOPNOTSUPP, EACCES).
      static constexpr int e[] = {EINTR, EAGAIN, EBADF,  EFAULT, EFBIG,      EINVAL,
                                  EIO,   ENOSPC, EPERM,  EPIPE,  ENOMEM,     ESRCH,
                                  EBUSY, ENODEV, ENOENT, EACCES, EOPNOTSUPP, EDQUOT};
      return e;
    }
    case Call::poll:
    case Call::ppoll: {
      static constexpr int e[] = {EINTR, EFAULT, EINVAL, ENOMEM};
      return e;
    }
    case Call::epoll_create1:
    case Call::eventfd:
    case Call::timerfd_create:
    case Call::signalfd:
    case Call::pidfd_open: {
      static constexpr int e[] = {EINTR, EINVAL, EMFILE, ENFILE, ENODEV, ENOMEM, EBADF, ESRCH};
      return e;
    }
    case Call::epoll_ctl: {
      static constexpr int e[] = {EINTR,  EBADF,  EEXIST, EINVAL, ELOOP,
                                  ENOENT, ENOMEM, ENOSPC, EPERM};
      return e;
    }
    case Call::epoll_wait: {
      static constexpr int e[] = {EINTR, EBADF, EFAULT, EINVAL};
      return e;
    }
    case Call::timerfd_settime:
    case Call::signalfd_mask: {
      static constexpr int e[] = {EINTR, EBADF, EFAULT, EINVAL, ECANCELED};
      return e;
    }
    case Call::sigaction:
    case Call::sigprocmask:
    case Call::getrlimit: {
      static constexpr int e[] = {EINTR, EFAULT, EINVAL};
      return e;
    }
    case Call::futex_wait: {
      // (ETIMEDOUT is the timeout itself, not a failure: the kernel says it
      // at the deadline only, which an injection before it would misstate.)
      static constexpr int e[] = {EINTR, EAGAIN, EFAULT, EINVAL, ENOSYS};
      return e;
    }
    case Call::futex_wake: {
      static constexpr int e[] = {EINTR, EFAULT, EINVAL, ENOSYS};
      return e;
    }
    case Call::kill:
    case Call::tgkill:
    case Call::rt_tgsigqueueinfo:
    case Call::pidfd_send_signal: {
      static constexpr int e[] = {EINTR, EAGAIN, EBADF, EINVAL, EPERM, ESRCH};
      return e;
    }
    case Call::waitid:
    case Call::waitpid: {
      static constexpr int e[] = {EINTR, EAGAIN, ECHILD, EINVAL, EBADF};
      return e;
    }
    case Call::fork:
    case Call::thread_create: {
      static constexpr int e[] = {EINTR, EAGAIN, ENOMEM, ENOSYS, EINVAL, EPERM};
      return e;
    }
    case Call::pipe2:
    case Call::socketpair: {
      static constexpr int e[] = {EINTR, EFAULT, EINVAL, EMFILE, ENFILE, EOPNOTSUPP, ENOMEM};
      return e;
    }
    case Call::send:
    case Call::sendmsg:
    case Call::recvmsg: {
      static constexpr int e[] = {EINTR,    EAGAIN,  EBADF,  ECONNRESET, EFAULT,   EINVAL,
                                  EMSGSIZE, ENOBUFS, ENOMEM, ENOTCONN,   ENOTSOCK, EPIPE};
      return e;
    }
    case Call::mkdir: {
      static constexpr int e[] = {EINTR,  EACCES, EAGAIN, EDQUOT,  EEXIST, EINVAL, ELOOP, EMLINK,
                                  ENOENT, ENOMEM, ENOSPC, ENOTDIR, EPERM,  EROFS,  EBADF};
      return e;
    }
    case Call::rmdir: {
      static constexpr int e[] = {EINTR,  EACCES,  EBUSY,     EINVAL, ELOOP, ENOENT,
                                  ENOMEM, ENOTDIR, ENOTEMPTY, EPERM,  EROFS};
      return e;
    }
    case Call::access:
    case Call::stat: {
      static constexpr int e[] = {EINTR, EACCES, EBADF,  EFAULT,  EINVAL,   EIO,
                                  ELOOP, ENOENT, ENOMEM, ENOTDIR, EOVERFLOW};
      return e;
    }
    case Call::dup: {
      static constexpr int e[] = {EINTR, EBADF, EBUSY, EINVAL, EMFILE};
      return e;
    }
    case Call::prctl:
    case Call::setsid: {
      static constexpr int e[] = {EINTR, EFAULT, EINVAL, EPERM};
      return e;
    }
    case Call::setpgid:
    case Call::sched_setscheduler:
    case Call::sched_getscheduler:
    case Call::sched_setaffinity:
    case Call::sched_setparam:
    case Call::setpriority:
    case Call::clock_getcpuclockid: {
      static constexpr int e[] = {EINTR, EACCES, EFAULT, EINVAL, EPERM, ESRCH, ENOSYS};
      return e;
    }
    case Call::posix_spawn:
    case Call::execve: {
      static constexpr int e[] = {EINTR,   E2BIG,   EACCES,  EAGAIN, EFAULT,       EINVAL, EIO,
                                  EISDIR,  ELIBBAD, ELOOP,   EMFILE, ENAMETOOLONG, ENFILE, ENOENT,
                                  ENOEXEC, ENOMEM,  ENOTDIR, EPERM,  ETXTBSY};
      return e;
    }
    case Call::sigwaitinfo:
    case Call::sigtimedwait:
    case Call::nanosleep: {
      static constexpr int e[] = {EINTR, EAGAIN, EFAULT, EINVAL};
      return e;
    }
    case Call::close_range: {
      static constexpr int e[] = {EINTR, EINVAL, EMFILE, ENOMEM};
      return e;
    }
    case Call::memfd_create: {
      static constexpr int e[] = {EINTR, EFAULT, EINVAL, EMFILE, ENFILE, ENOMEM, EPERM};
      return e;
    }
    case Call::ftruncate: {
      // A memfd: EFBIG past the file size limit (RLIMIT_FSIZE), EPERM once
      // sealed.
      static constexpr int e[] = {EINTR, EBADF, EFBIG, EINVAL, EIO, EPERM, ENOMEM};
      return e;
    }
    case Call::mmap: {
      static constexpr int e[] = {EINTR,  EAGAIN, EACCES, EBADF,     EINVAL,
                                  ENFILE, ENODEV, ENOMEM, EOVERFLOW, EPERM};
      return e;
    }
    case Call::add_seals: {
      // fcntl(2): EBUSY (F_SEAL_WRITE over a writable mapping), EINVAL (no
      // MFD_ALLOW_SEALING), EPERM (F_SEAL_SEAL set already).
      static constexpr int e[] = {EBADF, EBUSY, EINVAL, EPERM};
      return e;
    }
    case Call::count_:
      break;
  }
  return {};
}

bool kernel_can_return(Call call, int error) noexcept {
  // From the manual pages, narrowed to how the library makes the call (a
  // non-blocking eventfd read can say EAGAIN, a poll of one descriptor
  // cannot run out of memory: the kernel uses its stack for small sets).
  // Reads and writes of /proc and cgroupfs files (seq_file) may fail with
  // ENOMEM; writes of cgroup.procs with EPERM and ESRCH.
  switch (call) {
    case Call::open:
    case Call::opendir:
      // /proc, cgroupfs and /dev/null: no FIFO or device that would make
      // open() wait (EINTR), no lease (EAGAIN).
      // ENFILE: the system-wide limit; ENOENT: a /proc/PID of a process
      // that exited, a cgroup removed meanwhile.
      return error == ENOMEM || error == EMFILE || error == EPERM || error == ENFILE ||
             error == ENOENT;
    case Call::close:
      return error == EINTR;
    case Call::read:
      // Pipes, sockets, signalfds.
      return error == EINTR || error == EAGAIN;
    case Call::file_read:
    case Call::pread:
      // /proc and cgroupfs files (seq_file: an allocation may fail; ESRCH:
      // the process of a /proc/PID file exited; ENODEV: the cgroup was
      // removed).
      return error == EINTR || error == EAGAIN || error == ENOMEM || error == ESRCH ||
             error == ENODEV;
    case Call::eventfd_read:
    case Call::timerfd_read:
      // Non-blocking: EAGAIN when nothing is there; nothing else but EINVAL
      // (a short buffer) and EBADF.
      return error == EAGAIN;
    case Call::eventfd_write:
      // Non-blocking: EAGAIN only when the counter would pass 2^64 - 2,
      // which the library's writers never reach (EventNotifier writes once
      // per arm; request_stop() takes EAGAIN as "already requested").
      return false;
    case Call::write:
    case Call::pwrite:
      // Pipes and sockets: EPIPE; cgroupfs files: EBUSY, ENODEV (the cgroup
      // was removed), ENOENT.
      return error == EINTR || error == EAGAIN || error == ENOMEM || error == EPERM ||
             error == ESRCH || error == EPIPE || error == EBUSY || error == ENODEV ||
             error == ENOENT;
    case Call::poll:
    case Call::ppoll:
      return error == EINTR;
    case Call::signalfd_mask:
      // signalfd() on an existing descriptor changes its mask: EINVAL or
      // EBADF only.
      return false;
    case Call::epoll_create1:
    case Call::eventfd:
    case Call::timerfd_create:
    case Call::signalfd:
    case Call::pipe2:
    case Call::socketpair:
      return error == EMFILE || error == ENOMEM || error == ENFILE;
    case Call::epoll_ctl:
      // ENOSPC: fs.epoll.max_user_watches reached.
      return error == ENOMEM || error == EPERM || error == ENOSPC;
    case Call::waitid:
    case Call::waitpid:
      // ECHILD: reaped by someone else (waitpid(-1) elsewhere, SIGCHLD
      // ignored).
      return error == EINTR || error == ECHILD;
    case Call::epoll_wait:
    case Call::sigwaitinfo:
    case Call::nanosleep:
      return error == EINTR;
    case Call::timerfd_settime:
    case Call::sigaction:
    case Call::sigprocmask:
    case Call::futex_wake:
    case Call::getrlimit:
    case Call::close_range:
      return false;
    case Call::futex_wait:
      return error == EINTR || error == EAGAIN;
    case Call::kill:
    case Call::setpgid:
    case Call::sched_setscheduler:
    case Call::sched_setaffinity:
    case Call::sched_setparam:
    case Call::setpriority:
    case Call::clock_getcpuclockid:
      return error == EPERM || error == ESRCH;
    case Call::tgkill:
    case Call::rt_tgsigqueueinfo:
    case Call::pidfd_send_signal:
      return error == EPERM || error == ESRCH || error == EAGAIN;
    case Call::pidfd_open:
      return error == EMFILE || error == ENOMEM || error == ESRCH || error == ENFILE;
    case Call::fork:
    case Call::thread_create:
      return error == EAGAIN || error == ENOMEM;
    case Call::send:
    case Call::sendmsg:
      // EPIPE, ECONNRESET: the peer (the guardian) died.
      return error == EINTR || error == EAGAIN || error == ENOMEM || error == EPIPE ||
             error == ECONNRESET || error == ENOBUFS;
    case Call::recvmsg:
      return error == EINTR || error == EAGAIN || error == ENOMEM || error == ECONNRESET;
    case Call::mkdir:
      // cgroupfs: EEXIST, ENOENT (the parent removed), ENOSPC/EAGAIN
      // (cgroup.max.descendants, max.depth).
      return error == ENOMEM || error == EPERM || error == EEXIST || error == ENOENT ||
             error == ENOSPC || error == EAGAIN;
    case Call::rmdir:
      // EBUSY: a process still inside; ENOENT: removed by someone else.
      return error == ENOMEM || error == EPERM || error == EBUSY || error == ENOENT ||
             error == ENOTEMPTY;
    case Call::access:
    case Call::stat:
      return error == ENOMEM || error == ENOENT;
    case Call::dup:
      // fcntl(F_DUPFD_CLOEXEC) and dup2(): EMFILE (dup2 of an fd in the
      // middle of an open() elsewhere: EBUSY, not ours).
      return error == EMFILE;
    case Call::prctl:
    case Call::setsid:
      return error == EPERM;
    case Call::sched_getscheduler:
      return error == ESRCH;
    case Call::posix_spawn:
    case Call::execve:
      // The program: missing, not executable, too many arguments, busy.
      return error == EAGAIN || error == ENOMEM || error == EMFILE || error == EPERM ||
             error == ENOENT || error == EACCES || error == E2BIG || error == ENOEXEC ||
             error == ETXTBSY || error == ENFILE || error == ELOOP || error == ENOTDIR ||
             error == EISDIR || error == EIO || error == ENAMETOOLONG || error == ELIBBAD;
    case Call::sigtimedwait:
      return error == EINTR || error == EAGAIN;
    case Call::memfd_create:
      return error == EMFILE || error == ENFILE || error == ENOMEM;
    case Call::ftruncate:
      // A fresh memfd: the space is only reserved (shmem), but RLIMIT_FSIZE
      // applies (EFBIG, and SIGXFSZ unless ignored).
      return error == EINTR || error == EFBIG || error == ENOMEM;
    case Call::mmap:
      // vm.max_map_count, RLIMIT_AS, overcommit: ENOMEM; a locked-memory
      // limit: EAGAIN.
      return error == ENOMEM || error == EAGAIN;
    case Call::add_seals:
      // A fresh memfd made with MFD_ALLOW_SEALING, unmapped, sealed once:
      // none of its errors can happen.
      return false;
    case Call::count_:
      break;
  }
  return false;
}

}  // namespace doorbell::sys::fault
