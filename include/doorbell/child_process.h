// ChildProcess: a child started with a clean signal state, watched and
// signalled through a pidfd.
//
// spawn() starts a program with posix_spawn(3) and gives the child:
//   - an empty signal mask, whatever the spawning thread blocks (a server
//     that blocks SIGTERM for its signalfd must not hand that to children:
//     swaywm/swayidle#113);
//   - the default disposition for every signal, including ones the parent
//     ignores (SIG_IGN survives exec otherwise: a child of nohup ignores
//     SIGHUP, a child of a SIGPIPE-ignoring server ignores SIGPIPE).
// Then it opens a pidfd for the child. fd() becomes readable when the child
// exits, so any event loop can watch it; with one pidfd per child, many
// children exiting at once cannot be missed the way coalesced SIGCHLDs can
// (neovim/neovim#8740), and send_signal() cannot hit a recycled PID.
//
// Reaping: try_wait()/wait() reap this child only (waitid P_PIDFD). The
// pidfd is opened right after posix_spawn returns; that is race-free as long
// as nothing else in the process reaps children it does not own (waitpid(-1)
// or SIGCHLD set to SIG_IGN / SA_NOCLDWAIT): until we reap it the child's
// PID cannot be reused. When the kernel has no pidfd_open (before Linux
// 5.3), spawn() falls back to plain PIDs (fd() is -1, signals go through
// kill(2)) and says so in has_pidfd().
//
// Lifetime: the destructor of a child that is still running sends it
// SIGKILL and reaps it, so no child outlives its owner unnoticed and no
// zombie is left. Call wait() first for a graceful end. A child the kernel
// does not let us kill (EPERM: a set-user-ID program, as another user) is
// left running and unreaped, with a warning on stderr, rather than waited
// for.
//
// Threads: one object, one thread at a time. Different objects are
// independent. Async-signal-safety: none. Fork: the object belongs to the
// process that spawned the child (only the parent can reap it). In a forked
// child, send_signal(), try_wait(), wait() and wait_for() throw
// std::logic_error, and the destructor only closes the child's copy of the
// pidfd (it once SIGKILLed the parent's child).
#pragma once

#include <sys/types.h>
#include <unistd.h>

#include <chrono>
#include <optional>
#include <string>
#include <vector>

namespace doorbell {

// How a child ended.
struct ExitStatus {
  enum class Kind { exited, killed, dumped };
  Kind kind = Kind::exited;
  int value = 0;  // the exit code (exited) or the signal number (killed, dumped)

  bool exited() const noexcept { return kind == Kind::exited; }
  bool success() const noexcept { return kind == Kind::exited && value == 0; }
  int exit_code() const noexcept { return kind == Kind::exited ? value : -1; }
  int signal() const noexcept { return kind == Kind::exited ? 0 : value; }
  // "exited with 3", "killed by SIGTERM", "killed by SIGSEGV (core dumped)".
  std::string describe() const;
};

struct SpawnOptions {
  // The environment, "NAME=value" each; nullopt inherits ours.
  std::optional<std::vector<std::string>> environment;
  // Descriptors for the child's stdin/stdout/stderr; -1 (any negative)
  // inherits ours.
  // Each names one of OUR (the caller's) descriptors at the time of
  // spawn(), and the child gets exactly those, as if the three dup2s
  // happened at once: with stdout_fd = a pipe and stderr_fd = 1 the child's
  // stderr is our fd 1 (not the pipe), and stdout_fd = 2, stderr_fd = 1
  // swaps them. Our descriptors are left as they are; the child's 0/1/2
  // are not close-on-exec. spawn() throws std::system_error (EBADF) when
  // one is not open.
  int stdin_fd = -1;
  int stdout_fd = -1;
  int stderr_fd = -1;
  // Put the child in a new process group (so a terminal's Ctrl-C, sent to
  // the foreground group, does not reach it).
  bool new_process_group = false;
  // Look argv[0] up in PATH when it has no slash.
  bool search_path = true;
};

class ChildProcess {
 public:
  // Starts argv[0] with arguments argv. Throws std::invalid_argument when
  // argv is empty, std::system_error when the program cannot be started
  // (the code is exec's: ENOENT, EACCES, ...) or pidfd_open fails with
  // anything but ENOSYS.
  static ChildProcess spawn(const std::vector<std::string>& argv, const SpawnOptions& options = {});

  ChildProcess(ChildProcess&& other) noexcept;
  ChildProcess& operator=(ChildProcess&& other) noexcept;
  ChildProcess(const ChildProcess&) = delete;
  ChildProcess& operator=(const ChildProcess&) = delete;
  ~ChildProcess();

  pid_t pid() const noexcept { return pid_; }
  // The pidfd: readable once the child has exited (poll/epoll). -1 without
  // pidfd support or after the object was moved from.
  int fd() const noexcept { return pidfd_; }
  bool has_pidfd() const noexcept { return pidfd_ >= 0; }

  // Sends signo through the pidfd. Returns false when the child has already
  // exited (reaped, or a zombie the kernel no longer signals); throws
  // std::invalid_argument for a bad signal number, std::system_error for
  // other failures (EPERM).
  bool send_signal(int signo);

  // Reaps the child if it has exited; nullopt while it runs. Once reaped,
  // returns the same status again.
  std::optional<ExitStatus> try_wait();
  // Waits until the child exits and reaps it (EINTR retried).
  ExitStatus wait();
  // Waits up to `timeout`; nullopt when it is still running then. Any
  // timeout is honoured: one too large for the clock (nanoseconds::max())
  // means no limit, and one beyond poll's int milliseconds (~24.8 days) is
  // waited out in several polls.
  std::optional<ExitStatus> wait_for(std::chrono::nanoseconds timeout);

  // The status once reaped.
  const std::optional<ExitStatus>& status() const noexcept { return status_; }

 private:
  ChildProcess(pid_t pid, int pidfd) noexcept : pid_(pid), pidfd_(pidfd) {}
  void release() noexcept;
  void check_owner(const char* what) const;
  pid_t pid_ = -1;
  int pidfd_ = -1;
  pid_t owner_ = ::getpid();  // the process that spawned the child
  std::optional<ExitStatus> status_;
};

}  // namespace doorbell
