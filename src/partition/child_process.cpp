// ChildProcess: posix_spawn with a clean signal state, then a pidfd.
#include "doorbell/child_process.h"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <stdexcept>
#include <string>

#include "doorbell/signal_channel.h"
#include "sys/deadline.h"
#include "sys/error.h"
#include "sys/pidfd.h"
#include "sys/reap.h"
#include "sys/syscalls.h"

#ifndef P_PIDFD
#define P_PIDFD 3
#endif

extern char** environ;

namespace doorbell {

namespace {

ExitStatus from_siginfo(const siginfo_t& info) {
  ExitStatus status;
  switch (info.si_code) {
    case CLD_EXITED:
      status.kind = ExitStatus::Kind::exited;
      break;
    case CLD_DUMPED:
      status.kind = ExitStatus::Kind::dumped;
      break;
    default:
      status.kind = ExitStatus::Kind::killed;
      break;
  }
  status.value = info.si_status;
  return status;
}

// RAII for the spawn attributes and our copies of the redirection sources.
struct SpawnSetup {
  posix_spawnattr_t attr;
  posix_spawn_file_actions_t actions;
  int copies[3] = {-1, -1, -1};
  SpawnSetup() {
    posix_spawnattr_init(&attr);
    posix_spawn_file_actions_init(&actions);
  }
  ~SpawnSetup() {
    for (int fd : copies)
      if (fd >= 0) sys::close(fd);
    posix_spawn_file_actions_destroy(&actions);
    posix_spawnattr_destroy(&attr);
  }
};

}  // namespace

std::string ExitStatus::describe() const {
  switch (kind) {
    case Kind::exited:
      return "exited with " + std::to_string(value);
    case Kind::killed:
      return "killed by " + signal_name(value);
    case Kind::dumped:
      return "killed by " + signal_name(value) + " (core dumped)";
  }
  return "?";
}

ChildProcess ChildProcess::spawn(const std::vector<std::string>& argv,
                                 const SpawnOptions& options) {
  if (argv.empty()) throw std::invalid_argument("ChildProcess::spawn: empty argv");
  SpawnSetup setup;
  // An empty mask and the default disposition for every signal. SETSIGDEF
  // with a full set: the kernel ignores SIGKILL/SIGSTOP there anyway.
  sigset_t empty;
  sigemptyset(&empty);
  sigset_t all;
  sigfillset(&all);
  short flags = POSIX_SPAWN_SETSIGMASK | POSIX_SPAWN_SETSIGDEF;
  posix_spawnattr_setsigmask(&setup.attr, &empty);
  posix_spawnattr_setsigdefault(&setup.attr, &all);
  if (options.new_process_group) {
    flags |= POSIX_SPAWN_SETPGROUP;
    posix_spawnattr_setpgroup(&setup.attr, 0);
  }
  posix_spawnattr_setflags(&setup.attr, flags);
  // The redirections apply as if at once: each source names one of OUR
  // descriptors. Applied one by one, a dup2 onto 1 changes what a later
  // "stderr from 1" reads (stdout to a pipe, stderr to 1 would put stderr in
  // the pipe; swapping 1 and 2 would send both to one place). So first copy
  // every source to a fresh number >= 3, which no target can overwrite, and
  // dup2 the copies. The copies are close-on-exec (atomically, so a fork in
  // another thread cannot leak them) and vanish at exec; dup2 clears the
  // flag on the targets. We close our copies once the child is started.
  const int sources[3] = {options.stdin_fd, options.stdout_fd, options.stderr_fd};
  static constexpr const char* kNames[3] = {"stdin_fd", "stdout_fd", "stderr_fd"};
  for (int target = 0; target < 3; ++target) {
    if (sources[target] < 0) continue;
    const int copy = sys::dup_cloexec(sources[target], 3);
    if (copy < 0) {
      sys::throw_errno("ChildProcess::spawn: " + std::string(kNames[target]) + " " +
                       std::to_string(sources[target]));
    }
    setup.copies[target] = copy;
    posix_spawn_file_actions_adddup2(&setup.actions, copy, target);
  }

  std::vector<char*> args;
  for (const auto& a : argv) args.push_back(const_cast<char*>(a.c_str()));
  args.push_back(nullptr);
  std::vector<char*> env;
  if (options.environment) {
    for (const auto& e : *options.environment) env.push_back(const_cast<char*>(e.c_str()));
    env.push_back(nullptr);
  }
  char* const* envp = options.environment ? env.data() : environ;

  pid_t pid = -1;
  const int rc = sys::posix_spawn(&pid, args[0], &setup.actions, &setup.attr, args.data(), envp,
                                  options.search_path);
  if (rc != 0) sys::throw_errno(rc, "ChildProcess::spawn " + argv[0]);

  // The child cannot be reaped by anyone but us yet, so its PID is still
  // its own: the pidfd refers to the right process.
  int pidfd = -1;
  try {
    pidfd = sys::pidfd_open(pid).release();
  } catch (const std::system_error& e) {
    if (e.code().value() != ENOSYS) {
      // Killed and reaped as the destructor does it: a kill the kernel
      // refuses leaves the child running with a warning, never a wait for
      // it to end by itself.
      { ChildProcess doomed(pid, -1); }
      throw;
    }
  }
  return ChildProcess(pid, pidfd);
}

ChildProcess::ChildProcess(ChildProcess&& other) noexcept
    : pid_(other.pid_), pidfd_(other.pidfd_), owner_(other.owner_), status_(other.status_) {
  other.pid_ = -1;
  other.pidfd_ = -1;
  other.status_.reset();
}

ChildProcess& ChildProcess::operator=(ChildProcess&& other) noexcept {
  if (this != &other) {
    release();
    pid_ = other.pid_;
    pidfd_ = other.pidfd_;
    owner_ = other.owner_;
    status_ = other.status_;
    other.pid_ = -1;
    other.pidfd_ = -1;
    other.status_.reset();
  }
  return *this;
}

ChildProcess::~ChildProcess() {
  release();
}

void ChildProcess::check_owner(const char* what) const {
  if (owner_ != ::getpid())
    throw std::logic_error(std::string("ChildProcess::") + what +
                           ": used in a forked child; the child process belongs to (and can be "
                           "reaped only by) the process that spawned it");
}

void ChildProcess::release() noexcept {
  // A forked child's copy: the child process is the parent's. Close our
  // copy of the pidfd, nothing else (it once SIGKILLed the parent's child).
  if (owner_ != ::getpid()) {
    if (pidfd_ >= 0) sys::close(pidfd_);
    pidfd_ = -1;
    pid_ = -1;
    return;
  }
  if (pid_ > 0 && !status_) {
    // Through the pidfd only. ESRCH from it normally means the process is
    // gone, reaped by someone else (waitpid(-1), SIGCHLD ignored), and its
    // PID free for anyone: a kill(pid) then would hit whatever process got
    // the PID next, and a waitpid(pid) one of our other children. So the
    // PID is never used then; the pidfd says what became of the child: no
    // child of ours any more (ECHILD: reaped elsewhere, nothing to do), a
    // zombie (reaped now), or still running (the ESRCH was wrong: one more
    // SIGKILL through the pidfd). Only without a pidfd does the PID stand
    // for the child, which is unreaped as far as we know.
    int rc = pidfd_ >= 0 ? sys::pidfd_send_signal(pidfd_, SIGKILL)
                         : (sys::kill(pid_, SIGKILL) == 0 ? 0 : -errno);
    // Another failure of the pidfd (ENOMEM): once more through it, never
    // the PID (which stands for the child only while nobody else reaped it).
    if (rc != 0 && rc != -ESRCH && pidfd_ >= 0) rc = sys::pidfd_send_signal(pidfd_, SIGKILL);
    bool gone = false;
    if (rc == -ESRCH && pidfd_ >= 0) {
      siginfo_t info{};
      int r;
      do
        r = sys::waitid(static_cast<idtype_t>(P_PIDFD), static_cast<id_t>(pidfd_), &info,
                        WEXITED | WNOHANG);
      while (r != 0 && errno == EINTR);
      if (r != 0 || info.si_pid != 0) {
        gone = true;  // reaped elsewhere (or a waitid we cannot trust), or reaped now
      } else {
        rc = sys::pidfd_send_signal(pidfd_, SIGKILL);
        if (rc == -ESRCH) rc = 0;  // it exited meanwhile: reaped below
      }
    }
    if (gone) {
    } else if (rc != 0 && rc != -ESRCH) {
      // A kill that fails otherwise (EPERM: a set-user-ID child we may not
      // signal) must not turn into a wait for the child to end by itself.
      const std::string warning = "doorbell: warning: ChildProcess: cannot kill child " +
                                  std::to_string(pid_) + " (" + std::strerror(-rc) +
                                  "); left running, unreaped\n";
      sys::write_stderr(warning.c_str());
    } else {
      // A failed waitid() is not "reaped by someone else" (only ECHILD is):
      // sys::reap() falls back to waitpid() on our PID.
      sys::reap(pidfd_, pid_);
    }
  }
  if (pidfd_ >= 0) sys::close(pidfd_);
  pidfd_ = -1;
  pid_ = -1;
}

bool ChildProcess::send_signal(int signo) {
  if (signo <= 0 || signo > SIGRTMAX) {
    throw std::invalid_argument("ChildProcess::send_signal: bad signal " + std::to_string(signo));
  }
  if (pid_ <= 0 || status_) return false;
  check_owner("send_signal");
  const int rc = pidfd_ >= 0 ? sys::pidfd_send_signal(pidfd_, signo)
                             : (sys::kill(pid_, signo) == 0 ? 0 : -errno);
  if (rc == 0) return true;
  if (rc == -ESRCH) return false;
  sys::throw_errno(-rc, "ChildProcess::send_signal " + signal_name(signo));
}

std::optional<ExitStatus> ChildProcess::try_wait() {
  if (status_) return status_;
  if (pid_ <= 0) throw std::logic_error("ChildProcess::try_wait: no child");
  check_owner("try_wait");
  siginfo_t info{};
  int rc;
  do {
    rc = pidfd_ >= 0 ? sys::waitid(static_cast<idtype_t>(P_PIDFD), static_cast<id_t>(pidfd_), &info,
                                   WEXITED | WNOHANG)
                     : sys::waitid(P_PID, static_cast<id_t>(pid_), &info, WEXITED | WNOHANG);
  } while (rc < 0 && errno == EINTR);
  if (rc < 0) sys::throw_errno("ChildProcess::try_wait: waitid");
  if (info.si_pid == 0) return std::nullopt;  // still running
  status_ = from_siginfo(info);
  return status_;
}

ExitStatus ChildProcess::wait() {
  if (status_) return *status_;
  if (pid_ <= 0) throw std::logic_error("ChildProcess::wait: no child");
  check_owner("wait");
  siginfo_t info{};
  int rc;
  do {
    rc = pidfd_ >= 0 ? sys::waitid(static_cast<idtype_t>(P_PIDFD), static_cast<id_t>(pidfd_), &info,
                                   WEXITED)
                     : sys::waitid(P_PID, static_cast<id_t>(pid_), &info, WEXITED);
  } while (rc < 0 && errno == EINTR);
  if (rc < 0) sys::throw_errno("ChildProcess::wait: waitid");
  status_ = from_siginfo(info);
  return *status_;
}

std::optional<ExitStatus> ChildProcess::wait_for(std::chrono::nanoseconds timeout) {
  if (auto status = try_wait()) return status;
  // Saturated: a timeout past the clock's range waits without a limit.
  const auto deadline = detail::deadline_after(timeout);
  for (;;) {
    // -1: no limit; 0: the deadline has passed; else capped at INT_MAX ms.
    const int wait_ms = detail::poll_timeout_ms(deadline);
    if (wait_ms == 0) return try_wait();
    if (pidfd_ >= 0) {
      pollfd p{pidfd_, POLLIN, 0};
      if (sys::poll(&p, 1, wait_ms) < 0 && errno != EINTR) {
        sys::throw_errno("ChildProcess::wait_for: poll");
      }
    } else {
      sys::usleep(1000);  // no pidfd: poll the status every millisecond
    }
    if (auto status = try_wait()) return status;
  }
}

}  // namespace doorbell
