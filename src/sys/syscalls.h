// The seam: thin inline wrappers over the raw system calls the library makes
// (and the C library calls that stand for one: opendir, posix_spawn, thread
// creation). Every call of the library's code goes through one of these, or
// through the other src/sys/ wrappers (futex, pidfd, tgkill), which pass the
// same check. Each wrapper has the call's own signature and result
// convention (-1 and errno, or the error number for the pthread and spawn
// calls), plus a defaulted source location: the call site, which the fault
// injector (fault.h) records and reports. Unarmed, a wrapper costs one
// relaxed load and one predictable branch before the call.
//
// Not wrapped, because they cannot fail: getpid, gettid, getppid, getuid,
// _exit, and clock_gettime of CLOCK_MONOTONIC(_COARSE) (the vDSO). The
// library calls them directly.
#pragma once

#include <dirent.h>
#include <fcntl.h>
#include <poll.h>
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <spawn.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/signalfd.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/timerfd.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <cerrno>
#include <cstdint>
#include <source_location>

#include "sys/fault.h"

namespace doorbell::sys {

using Where = std::source_location;
#define DOORBELL_WHERE const ::doorbell::sys::Where& where = ::doorbell::sys::Where::current()

namespace detail_seam {
[[gnu::always_inline]] inline int fail(int error) noexcept {
  errno = error;
  return -1;
}
constexpr int64_t ms_to_ns(int ms) noexcept {
  return ms < 0 ? -1 : static_cast<int64_t>(ms) * 1'000'000;
}
inline int64_t timespec_ns(const timespec* ts) noexcept {
  return ts == nullptr ? -1 : static_cast<int64_t>(ts->tv_sec) * 1'000'000'000 + ts->tv_nsec;
}
}  // namespace detail_seam

using fault::Call;

// ---------------------------------------------------------------- files

inline int open(const char* path, int flags, mode_t mode = 0, DOORBELL_WHERE) noexcept {
  if (const int e = fault::injected(Call::open, where)) return detail_seam::fail(e);
  return ::open(path, flags, mode);
}

// Linux releases the descriptor whatever close() reports (EINTR included),
// so an injected failure closes it too.
inline int close(int fd, DOORBELL_WHERE) noexcept {
  if (const int e = fault::injected(Call::close, where)) {
    ::close(fd);
    return detail_seam::fail(e);
  }
  return ::close(fd);
}

inline ssize_t read(int fd, void* buffer, size_t size, DOORBELL_WHERE) noexcept {
  if (const int e = fault::injected(Call::read, where)) return detail_seam::fail(e);
  return ::read(fd, buffer, size);
}

// read(2) of a /proc or cgroupfs file (sys::read_file).
inline ssize_t file_read(int fd, void* buffer, size_t size, DOORBELL_WHERE) noexcept {
  if (const int e = fault::injected(Call::file_read, where)) return detail_seam::fail(e);
  return ::read(fd, buffer, size);
}

// The library's eventfds (non-blocking) and timerfds: their own kinds, since
// the errors the kernel can return for them differ from a pipe's.
inline ssize_t eventfd_read(int fd, uint64_t* value, DOORBELL_WHERE) noexcept {
  if (const int e = fault::injected(Call::eventfd_read, where)) return detail_seam::fail(e);
  return ::read(fd, value, sizeof *value);
}

inline ssize_t eventfd_write(int fd, uint64_t value, DOORBELL_WHERE) noexcept {
  if (const int e = fault::injected(Call::eventfd_write, where)) return detail_seam::fail(e);
  return ::write(fd, &value, sizeof value);
}

inline ssize_t timerfd_read(int fd, uint64_t* expirations, DOORBELL_WHERE) noexcept {
  if (const int e = fault::injected(Call::timerfd_read, where)) return detail_seam::fail(e);
  return ::read(fd, expirations, sizeof *expirations);
}

inline ssize_t write(int fd, const void* buffer, size_t size, DOORBELL_WHERE) noexcept {
  if (const int e = fault::injected(Call::write, where)) return detail_seam::fail(e);
  return ::write(fd, buffer, size);
}

inline ssize_t pread(int fd, void* buffer, size_t size, off_t offset, DOORBELL_WHERE) noexcept {
  if (const int e = fault::injected(Call::pread, where)) return detail_seam::fail(e);
  return ::pread(fd, buffer, size, offset);
}

inline ssize_t pwrite(int fd, const void* buffer, size_t size, off_t offset,
                      DOORBELL_WHERE) noexcept {
  if (const int e = fault::injected(Call::pwrite, where)) return detail_seam::fail(e);
  return ::pwrite(fd, buffer, size, offset);
}

inline int pipe2(int fds[2], int flags, DOORBELL_WHERE) noexcept {
  if (const int e = fault::injected(Call::pipe2, where)) return detail_seam::fail(e);
  return ::pipe2(fds, flags);
}

inline int memfd_create(const char* name, unsigned flags, DOORBELL_WHERE) noexcept {
  if (const int e = fault::injected(Call::memfd_create, where)) return detail_seam::fail(e);
  return static_cast<int>(::syscall(SYS_memfd_create, name, flags));
}

inline int ftruncate(int fd, off_t length, DOORBELL_WHERE) noexcept {
  if (const int e = fault::injected(Call::ftruncate, where)) return detail_seam::fail(e);
  return ::ftruncate(fd, length);
}

// MAP_FAILED and errno on failure.
inline void* mmap(void* address, size_t length, int protection, int flags, int fd, off_t offset,
                  DOORBELL_WHERE) noexcept {
  if (const int e = fault::injected(Call::mmap, where)) {
    errno = e;
    return MAP_FAILED;
  }
  return ::mmap(address, length, protection, flags, fd, offset);
}

// fcntl(fd, F_ADD_SEALS, seals).
inline int add_seals(int fd, int seals, DOORBELL_WHERE) noexcept {
  if (const int e = fault::injected(Call::add_seals, where)) return detail_seam::fail(e);
  return ::fcntl(fd, F_ADD_SEALS, seals);
}

inline int dup2(int from, int to, DOORBELL_WHERE) noexcept {
  if (const int e = fault::injected(Call::dup, where)) return detail_seam::fail(e);
  return ::dup2(from, to);
}

// fcntl(fd, F_DUPFD_CLOEXEC, lowest).
inline int dup_cloexec(int fd, int lowest, DOORBELL_WHERE) noexcept {
  if (const int e = fault::injected(Call::dup, where)) return detail_seam::fail(e);
  return ::fcntl(fd, F_DUPFD_CLOEXEC, lowest);
}

inline int close_range(unsigned first, unsigned last, unsigned flags, DOORBELL_WHERE) noexcept {
  if (const int e = fault::injected(Call::close_range, where)) return detail_seam::fail(e);
  return static_cast<int>(::syscall(SYS_close_range, first, last, flags));
}

inline int mkdir(const char* path, mode_t mode, DOORBELL_WHERE) noexcept {
  if (const int e = fault::injected(Call::mkdir, where)) return detail_seam::fail(e);
  return ::mkdir(path, mode);
}

inline int rmdir(const char* path, DOORBELL_WHERE) noexcept {
  if (const int e = fault::injected(Call::rmdir, where)) return detail_seam::fail(e);
  return ::rmdir(path);
}

// unlinkat(AT_REMOVEDIR) counts as rmdir: the same removal, relative to a
// directory descriptor.
inline int unlinkat(int dir_fd, const char* path, int flags, DOORBELL_WHERE) noexcept {
  if (const int e = fault::injected(Call::rmdir, where)) return detail_seam::fail(e);
  return ::unlinkat(dir_fd, path, flags);
}

inline int access(const char* path, int mode, DOORBELL_WHERE) noexcept {
  if (const int e = fault::injected(Call::access, where)) return detail_seam::fail(e);
  return ::access(path, mode);
}

inline int stat(const char* path, struct stat* out, DOORBELL_WHERE) noexcept {
  if (const int e = fault::injected(Call::stat, where)) return detail_seam::fail(e);
  return ::stat(path, out);
}

// opendir(3): open(2) and fstat(2) of a directory; null and errno on failure.
inline DIR* opendir(const char* path, DOORBELL_WHERE) noexcept {
  if (const int e = fault::injected(Call::opendir, where)) {
    errno = e;
    return nullptr;
  }
  return ::opendir(path);
}

// ---------------------------------------------------------------- waiting

inline int poll(pollfd* fds, nfds_t count, int timeout_ms, DOORBELL_WHERE) noexcept {
  if (const int e = fault::injected_timed(Call::poll, detail_seam::ms_to_ns(timeout_ms), where))
    return detail_seam::fail(e);
  return ::poll(fds, count, timeout_ms);
}

inline int ppoll(pollfd* fds, nfds_t count, const timespec* timeout, const sigset_t* mask,
                 DOORBELL_WHERE) noexcept {
  if (const int e = fault::injected_timed(Call::ppoll, detail_seam::timespec_ns(timeout), where))
    return detail_seam::fail(e);
  return ::ppoll(fds, count, timeout, mask);
}

inline int epoll_create1(int flags, DOORBELL_WHERE) noexcept {
  if (const int e = fault::injected(Call::epoll_create1, where)) return detail_seam::fail(e);
  return ::epoll_create1(flags);
}

inline int epoll_ctl(int epfd, int op, int fd, epoll_event* event, DOORBELL_WHERE) noexcept {
  if (const int e = fault::injected(Call::epoll_ctl, where)) return detail_seam::fail(e);
  return ::epoll_ctl(epfd, op, fd, event);
}

inline int epoll_wait(int epfd, epoll_event* events, int max, int timeout_ms,
                      DOORBELL_WHERE) noexcept {
  if (const int e =
          fault::injected_timed(Call::epoll_wait, detail_seam::ms_to_ns(timeout_ms), where))
    return detail_seam::fail(e);
  return ::epoll_wait(epfd, events, max, timeout_ms);
}

inline int nanosleep(const timespec* duration, timespec* left, DOORBELL_WHERE) noexcept {
  if (const int e =
          fault::injected_timed(Call::nanosleep, detail_seam::timespec_ns(duration), where))
    return detail_seam::fail(e);
  return ::nanosleep(duration, left);
}

inline int usleep(useconds_t us, DOORBELL_WHERE) noexcept {
  if (const int e = fault::injected_timed(Call::nanosleep, static_cast<int64_t>(us) * 1000, where))
    return detail_seam::fail(e);
  return ::usleep(us);
}

// ---------------------------------------------------------------- descriptors of events

inline int eventfd(unsigned initial, int flags, DOORBELL_WHERE) noexcept {
  if (const int e = fault::injected(Call::eventfd, where)) return detail_seam::fail(e);
  return ::eventfd(initial, flags);
}

inline int timerfd_create(clockid_t clock, int flags, DOORBELL_WHERE) noexcept {
  if (const int e = fault::injected(Call::timerfd_create, where)) return detail_seam::fail(e);
  return ::timerfd_create(clock, flags);
}

inline int timerfd_settime(int fd, int flags, const itimerspec* value, itimerspec* old,
                           DOORBELL_WHERE) noexcept {
  if (const int e = fault::injected(Call::timerfd_settime, where)) return detail_seam::fail(e);
  return ::timerfd_settime(fd, flags, value, old);
}

inline int signalfd(int fd, const sigset_t* mask, int flags, DOORBELL_WHERE) noexcept {
  if (const int e = fault::injected(fd < 0 ? Call::signalfd : Call::signalfd_mask, where))
    return detail_seam::fail(e);
  return ::signalfd(fd, mask, flags);
}

// ---------------------------------------------------------------- signals

inline int sigaction(int signo, const struct sigaction* action, struct sigaction* old,
                     DOORBELL_WHERE) noexcept {
  if (const int e = fault::injected(Call::sigaction, where)) return detail_seam::fail(e);
  return ::sigaction(signo, action, old);
}

// Returns 0 or the error number (pthread convention).
inline int pthread_sigmask(int how, const sigset_t* set, sigset_t* old, DOORBELL_WHERE) noexcept {
  if (const int e = fault::injected(Call::sigprocmask, where)) return e;
  return ::pthread_sigmask(how, set, old);
}

inline int sigprocmask(int how, const sigset_t* set, sigset_t* old, DOORBELL_WHERE) noexcept {
  if (const int e = fault::injected(Call::sigprocmask, where)) return detail_seam::fail(e);
  return ::sigprocmask(how, set, old);
}

inline int kill(pid_t pid, int signo, DOORBELL_WHERE) noexcept {
  if (const int e = fault::injected(Call::kill, where)) return detail_seam::fail(e);
  return ::kill(pid, signo);
}

inline int sigwaitinfo(const sigset_t* set, siginfo_t* info, DOORBELL_WHERE) noexcept {
  if (const int e = fault::injected_timed(Call::sigwaitinfo, -1, where))
    return detail_seam::fail(e);
  return ::sigwaitinfo(set, info);
}

inline int sigtimedwait(const sigset_t* set, siginfo_t* info, const timespec* timeout,
                        DOORBELL_WHERE) noexcept {
  if (const int e =
          fault::injected_timed(Call::sigtimedwait, detail_seam::timespec_ns(timeout), where))
    return detail_seam::fail(e);
  return ::sigtimedwait(set, info, timeout);
}

// ---------------------------------------------------------------- processes

inline pid_t fork(DOORBELL_WHERE) noexcept {
  if (const int e = fault::injected(Call::fork, where)) return detail_seam::fail(e);
  return ::fork();
}

inline int waitid(idtype_t type, id_t id, siginfo_t* info, int options, DOORBELL_WHERE) noexcept {
  if (const int e = fault::injected(Call::waitid, where)) return detail_seam::fail(e);
  return ::waitid(type, id, info, options);
}

inline pid_t waitpid(pid_t pid, int* status, int options, DOORBELL_WHERE) noexcept {
  if (const int e = fault::injected(Call::waitpid, where)) return detail_seam::fail(e);
  return ::waitpid(pid, status, options);
}

// Returns 0 or the error number (posix_spawn convention).
inline int posix_spawn(pid_t* pid, const char* path, const posix_spawn_file_actions_t* actions,
                       const posix_spawnattr_t* attr, char* const argv[], char* const envp[],
                       bool search_path, DOORBELL_WHERE) noexcept {
  if (const int e = fault::injected(Call::posix_spawn, where)) return e;
  return search_path ? ::posix_spawnp(pid, path, actions, attr, argv, envp)
                     : ::posix_spawn(pid, path, actions, attr, argv, envp);
}

inline int execve(const char* path, char* const argv[], char* const envp[],
                  DOORBELL_WHERE) noexcept {
  if (const int e = fault::injected(Call::execve, where)) return detail_seam::fail(e);
  return ::execve(path, argv, envp);
}

inline int prctl(int option, unsigned long a, unsigned long b = 0, unsigned long c = 0,
                 unsigned long d = 0, DOORBELL_WHERE) noexcept {
  if (const int e = fault::injected(Call::prctl, where)) return detail_seam::fail(e);
  return ::prctl(option, a, b, c, d);
}

inline int setpgid(pid_t pid, pid_t group, DOORBELL_WHERE) noexcept {
  if (const int e = fault::injected(Call::setpgid, where)) return detail_seam::fail(e);
  return ::setpgid(pid, group);
}

inline pid_t setsid(DOORBELL_WHERE) noexcept {
  if (const int e = fault::injected(Call::setsid, where)) return detail_seam::fail(e);
  return ::setsid();
}

inline int setpriority(int which, id_t who, int priority, DOORBELL_WHERE) noexcept {
  if (const int e = fault::injected(Call::setpriority, where)) return detail_seam::fail(e);
  return ::setpriority(static_cast<__priority_which_t>(which), who, priority);
}

inline int getrlimit(int resource, rlimit* limit, DOORBELL_WHERE) noexcept {
  if (const int e = fault::injected(Call::getrlimit, where)) return detail_seam::fail(e);
  return ::getrlimit(static_cast<__rlimit_resource_t>(resource), limit);
}

// Returns 0 or the error number (the clock_getcpuclockid convention).
inline int clock_getcpuclockid(pid_t pid, clockid_t* clock, DOORBELL_WHERE) noexcept {
  if (const int e = fault::injected(Call::clock_getcpuclockid, where)) return e;
  return ::clock_getcpuclockid(pid, clock);
}

// ---------------------------------------------------------------- scheduling

inline int sched_setscheduler(pid_t pid, int policy, const sched_param* param,
                              DOORBELL_WHERE) noexcept {
  if (const int e = fault::injected(Call::sched_setscheduler, where)) return detail_seam::fail(e);
  return ::sched_setscheduler(pid, policy, param);
}

inline int sched_getscheduler(pid_t pid, DOORBELL_WHERE) noexcept {
  if (const int e = fault::injected(Call::sched_getscheduler, where)) return detail_seam::fail(e);
  return ::sched_getscheduler(pid);
}

inline int sched_getparam(pid_t pid, sched_param* param, DOORBELL_WHERE) noexcept {
  if (const int e = fault::injected(Call::sched_getscheduler, where)) return detail_seam::fail(e);
  return ::sched_getparam(pid, param);
}

inline int sched_setaffinity(pid_t pid, size_t size, const cpu_set_t* cpus,
                             DOORBELL_WHERE) noexcept {
  if (const int e = fault::injected(Call::sched_setaffinity, where)) return detail_seam::fail(e);
  return ::sched_setaffinity(pid, size, cpus);
}

// Both return 0 or the error number (pthread convention).
inline int pthread_setaffinity_np(pthread_t thread, size_t size, const cpu_set_t* cpus,
                                  DOORBELL_WHERE) noexcept {
  if (const int e = fault::injected(Call::sched_setaffinity, where)) return e;
  return ::pthread_setaffinity_np(thread, size, cpus);
}

inline int pthread_setschedparam(pthread_t thread, int policy, const sched_param* param,
                                 DOORBELL_WHERE) noexcept {
  if (const int e = fault::injected(Call::sched_setparam, where)) return e;
  return ::pthread_setschedparam(thread, policy, param);
}

// ---------------------------------------------------------------- sockets

inline int socketpair(int domain, int type, int protocol, int fds[2], DOORBELL_WHERE) noexcept {
  if (const int e = fault::injected(Call::socketpair, where)) return detail_seam::fail(e);
  return ::socketpair(domain, type, protocol, fds);
}

inline ssize_t send(int fd, const void* buffer, size_t size, int flags, DOORBELL_WHERE) noexcept {
  if (const int e = fault::injected(Call::send, where)) return detail_seam::fail(e);
  return ::send(fd, buffer, size, flags);
}

inline ssize_t sendmsg(int fd, const msghdr* message, int flags, DOORBELL_WHERE) noexcept {
  if (const int e = fault::injected(Call::sendmsg, where)) return detail_seam::fail(e);
  return ::sendmsg(fd, message, flags);
}

inline ssize_t recvmsg(int fd, msghdr* message, int flags, DOORBELL_WHERE) noexcept {
  if (const int e = fault::injected(Call::recvmsg, where)) return detail_seam::fail(e);
  return ::recvmsg(fd, message, flags);
}

// ---------------------------------------------------------------- threads

// Before std::thread's constructor (pthread_create): 0, or the error number
// the constructor's std::system_error would carry.
inline int thread_create_fails(DOORBELL_WHERE) noexcept {
  return fault::injected(Call::thread_create, where);
}

}  // namespace doorbell::sys
