#include "tests/support/run_program.h"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdlib>
#include <system_error>

namespace doorbell::test {
namespace {

void close_fd(int& fd) {
  if (fd >= 0) ::close(fd);
  fd = -1;
}

// Both ends of a pipe, closed unless released.
struct Pipe {
  int read_end = -1;
  int write_end = -1;
  Pipe() {
    int fds[2];
    if (::pipe2(fds, O_CLOEXEC) != 0)
      throw std::system_error(errno, std::generic_category(), "pipe2");
    read_end = fds[0];
    write_end = fds[1];
  }
  ~Pipe() {
    close_fd(read_end);
    close_fd(write_end);
  }
  Pipe(const Pipe&) = delete;
  Pipe& operator=(const Pipe&) = delete;
};

int take(int& fd) {
  const int taken = fd;
  fd = -1;
  return taken;
}

// Opens /dev/null, closed unless released.
struct DevNull {
  int fd = ::open("/dev/null", O_RDONLY | O_CLOEXEC);
  ~DevNull() { close_fd(fd); }
};

}  // namespace

// The descriptors made before the spawn: a failed spawn closes them all.
struct RunningProgram::Setup {
  Pipe out, err, in;
  DevNull devnull;
};

namespace {

ChildProcess spawn_with(const std::vector<std::string>& argv, const RunOptions& options,
                        RunningProgram::Setup& setup) {
  SpawnOptions spawn;
  spawn.environment = options.environment;
  spawn.new_process_group = options.new_process_group;
  spawn.stdout_fd = setup.out.write_end;
  spawn.stderr_fd = setup.err.write_end;
  spawn.stdin_fd = options.input ? setup.in.read_end : setup.devnull.fd;
  return ChildProcess::spawn(argv, spawn);
}

// write(2) without a SIGPIPE for the test when the reader has gone: the
// signal is blocked in this thread for the call and, when the write raised
// it, taken back (unless one was already pending). The EPIPE remains.
ssize_t write_without_sigpipe(int fd, const char* data, std::size_t size) {
  sigset_t sigpipe, old, pending;
  sigemptyset(&sigpipe);
  sigaddset(&sigpipe, SIGPIPE);
  sigpending(&pending);
  const bool was_pending = sigismember(&pending, SIGPIPE) == 1;
  pthread_sigmask(SIG_BLOCK, &sigpipe, &old);
  const ssize_t n = ::write(fd, data, size);
  const int saved = errno;
  if (n < 0 && saved == EPIPE && !was_pending) {
    const timespec zero{};
    while (sigtimedwait(&sigpipe, nullptr, &zero) < 0 && errno == EINTR) {
    }
  }
  pthread_sigmask(SIG_SETMASK, &old, nullptr);
  errno = saved;
  return n;
}

}  // namespace

std::string RunResult::describe() const {
  std::string s = timed_out ? "timed out and was killed" : status.describe();
  if (!err.empty()) s += "; stderr:\n" + err;
  return s;
}

RunningProgram::RunningProgram(const std::vector<std::string>& argv, const RunOptions& options)
    : RunningProgram(argv, options, Setup{}) {}

RunningProgram::RunningProgram(const std::vector<std::string>& argv, const RunOptions& options,
                               Setup&& setup)
    : options_(options),
      deadline_(std::chrono::steady_clock::now() + options.timeout),
      child_(spawn_with(argv, options, setup)) {
  out_ = take(setup.out.read_end);
  err_ = take(setup.err.read_end);
  if (options.input) in_ = take(setup.in.write_end);
}

RunningProgram::~RunningProgram() {
  close_fd(out_);
  close_fd(err_);
  close_fd(in_);
  // ~ChildProcess kills and reaps a child still running.
}

RunResult RunningProgram::finish() {
  RunResult result;
  result.pid = child_.pid();
  // Feed stdin without blocking: a program that never reads must not hold us.
  const std::string input = options_.input.value_or("");
  std::size_t written = 0;
  if (in_ >= 0) ::fcntl(in_, F_SETFL, O_NONBLOCK);
  if (in_ >= 0 && input.empty()) close_fd(in_);

  // Read until both pipes close, or until the program has exited and its
  // pipes are empty: everything it wrote is in them once it has exited, and
  // a process it left behind may hold them open for a long time.
  bool exited = false;
  char buffer[65536];
  while (out_ >= 0 || err_ >= 0) {
    const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(
        deadline_ - std::chrono::steady_clock::now());
    if (left.count() <= 0) {
      result.timed_out = !exited;
      break;
    }
    pollfd fds[4] = {{out_, POLLIN, 0},
                     {err_, POLLIN, 0},
                     {in_, POLLOUT, 0},
                     {exited ? -1 : child_.fd(), POLLIN, 0}};
    const int ready = ::poll(fds, 4, exited ? 0 : static_cast<int>(left.count()) + 1);
    if (ready < 0) {
      if (errno == EINTR) continue;
      throw std::system_error(errno, std::generic_category(), "poll");
    }
    if (ready == 0 && exited) break;  // exited, and nothing left to read
    if (fds[3].revents != 0) exited = true;
    if (fds[2].revents & (POLLOUT | POLLERR | POLLHUP)) {
      const ssize_t n = write_without_sigpipe(in_, input.data() + written, input.size() - written);
      if (n > 0) written += static_cast<std::size_t>(n);
      if (n < 0 && errno != EAGAIN && errno != EINTR)
        written = input.size();  // EPIPE: it closed stdin
      if (written == input.size()) close_fd(in_);
    }
    int* pipes[2] = {&out_, &err_};
    std::string* sinks[2] = {&result.out, &result.err};
    for (int i = 0; i < 2; ++i) {
      if (!(fds[i].revents & (POLLIN | POLLHUP | POLLERR))) continue;
      const ssize_t n = ::read(*pipes[i], buffer, sizeof buffer);
      if (n > 0) {
        sinks[i]->append(buffer, static_cast<std::size_t>(n));
      } else if (n == 0 || (errno != EINTR && errno != EAGAIN)) {
        close_fd(*pipes[i]);
      }
    }
  }
  close_fd(in_);
  close_fd(out_);
  close_fd(err_);
  if (result.timed_out) {
    child_.send_signal(SIGKILL);
    result.status = child_.wait();
    return result;
  }
  // Both pipes closed (or it exited): give it the rest of the timeout to exit.
  const auto left = deadline_ - std::chrono::steady_clock::now();
  if (auto status = child_.wait_for(left.count() > 0 ? left : std::chrono::nanoseconds(0))) {
    result.status = *status;
  } else {
    result.timed_out = true;
    child_.send_signal(SIGKILL);
    result.status = child_.wait();
  }
  return result;
}

RunResult run_program(const std::vector<std::string>& argv, const RunOptions& options) {
  return RunningProgram(argv, options).finish();
}

std::string doorbell_binary() {
  // DOORBELL_TEST_CLI runs the CLI tests against another build of doorbell
  // (an older one, to see a new test fail before its fix).
  if (const char* other = std::getenv("DOORBELL_TEST_CLI"); other != nullptr && *other != '\0')
    return other;
  return std::string(DOORBELL_BINARY_DIR) + "/doorbell";
}

RunResult run_doorbell(const std::vector<std::string>& args, const RunOptions& options) {
  return start_doorbell(args, options).finish();
}

RunningProgram start_doorbell(const std::vector<std::string>& args, const RunOptions& options) {
  std::vector<std::string> argv{doorbell_binary()};
  argv.insert(argv.end(), args.begin(), args.end());
  return RunningProgram(argv, options);
}

FullStdoutRun signal_while_stdout_full(const std::vector<std::string>& args, int sig,
                                       std::chrono::seconds within) {
  FullStdoutRun run;
  Pipe out;
  const int size = ::fcntl(out.write_end, F_SETPIPE_SZ, 4096);
  if (size <= 0) throw std::system_error(errno, std::generic_category(), "F_SETPIPE_SZ");
  const std::string filler = std::string(static_cast<std::size_t>(size) - 1, '#') + "\n";
  ::fcntl(out.write_end, F_SETFL, O_NONBLOCK);
  if (::write(out.write_end, filler.data(), filler.size()) != static_cast<ssize_t>(filler.size()))
    throw std::system_error(errno, std::generic_category(), "filling the pipe");
  ::fcntl(out.write_end, F_SETFL, 0);
  std::vector<std::string> argv{doorbell_binary()};
  argv.insert(argv.end(), args.begin(), args.end());
  std::vector<char*> c_argv;
  for (auto& a : argv) c_argv.push_back(a.data());
  c_argv.push_back(nullptr);
  const pid_t pid = ::fork();
  if (pid < 0) throw std::system_error(errno, std::generic_category(), "fork");
  if (pid == 0) {
    ::dup2(out.write_end, STDOUT_FILENO);
    const int null = ::open("/dev/null", O_RDWR);
    ::dup2(null, STDIN_FILENO);
    ::dup2(null, STDERR_FILENO);
    ::execv(c_argv[0], c_argv.data());
    ::_exit(127);
  }
  close_fd(out.write_end);
  // Blocked in write(1, ...): /proc/PID/syscall reads "1 0x1 ..." (x86-64's
  // number; 64 in the generic table); the fd is the first argument.
  const std::string syscall_file = "/proc/" + std::to_string(pid) + "/syscall";
  const auto deadline = std::chrono::steady_clock::now() + within;
  while (!run.blocked && std::chrono::steady_clock::now() < deadline) {
    char text[64] = {};
    const int fd = ::open(syscall_file.c_str(), O_RDONLY | O_CLOEXEC);
    if (fd >= 0) {
      const ssize_t n = ::read(fd, text, sizeof text - 1);
      ::close(fd);
      const std::string call(text, n > 0 ? static_cast<std::size_t>(n) : 0);
      run.blocked = call.rfind("1 0x1 ", 0) == 0 || call.rfind("64 0x1 ", 0) == 0;
    }
    if (!run.blocked) ::usleep(5000);
  }
  ::kill(pid, run.blocked ? sig : SIGKILL);
  if (run.blocked) ::usleep(200000);  // the handler has run before the drain
  // Drained to its end, which comes within `within` or after a SIGKILL.
  std::string text;
  char buffer[65536];
  const auto drained_by = std::chrono::steady_clock::now() + within;
  bool killed = !run.blocked;
  for (;;) {
    const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(
        drained_by - std::chrono::steady_clock::now());
    pollfd p{out.read_end, POLLIN, 0};
    const int wait_ms = killed ? 5000 : static_cast<int>(std::max<long long>(0, left.count()));
    const int ready = ::poll(&p, 1, wait_ms);
    if (ready < 0 && errno == EINTR) continue;
    if (ready == 0) {
      if (killed) break;  // a descendant holds the pipe open: stop reading
      ::kill(pid, SIGKILL);
      killed = true;
      continue;
    }
    const ssize_t n = ::read(out.read_end, buffer, sizeof buffer);
    if (n > 0) text.append(buffer, static_cast<std::size_t>(n));
    if (n == 0 || (n < 0 && errno != EINTR)) break;
  }
  while (::waitpid(pid, &run.status, 0) < 0 && errno == EINTR) {
  }
  run.filler_intact = text.rfind(filler, 0) == 0;
  run.out = run.filler_intact ? text.substr(filler.size()) : text;
  return run;
}

}  // namespace doorbell::test
