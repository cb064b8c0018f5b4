#include "tests/support/run_program.h"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <unistd.h>

#include <cerrno>
#include <system_error>

namespace doorbell::test {
namespace {

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
    close_read();
    close_write();
  }
  void close_read() {
    if (read_end >= 0) ::close(read_end);
    read_end = -1;
  }
  void close_write() {
    if (write_end >= 0) ::close(write_end);
    write_end = -1;
  }
};

}  // namespace

std::string RunResult::describe() const {
  std::string s = timed_out ? "timed out and was killed" : status.describe();
  if (!err.empty()) s += "; stderr:\n" + err;
  return s;
}

RunResult run_program(const std::vector<std::string>& argv, const RunOptions& options) {
  Pipe out, err, in;
  const int devnull = ::open("/dev/null", O_RDONLY | O_CLOEXEC);
  SpawnOptions spawn;
  spawn.environment = options.environment;
  spawn.stdout_fd = out.write_end;
  spawn.stderr_fd = err.write_end;
  spawn.stdin_fd = options.input ? in.read_end : devnull;
  ChildProcess child = ChildProcess::spawn(argv, spawn);
  ::close(devnull);
  out.close_write();
  err.close_write();
  in.close_read();

  // Feed stdin without blocking: a program that never reads must not hold us.
  std::string input = options.input.value_or("");
  size_t written = 0;
  if (!options.input) in.close_write();
  if (in.write_end >= 0) ::fcntl(in.write_end, F_SETFL, O_NONBLOCK);

  RunResult result;
  const auto deadline = std::chrono::steady_clock::now() + options.timeout;
  char buffer[4096];
  while (out.read_end >= 0 || err.read_end >= 0) {
    const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(
        deadline - std::chrono::steady_clock::now());
    if (left.count() <= 0) {
      result.timed_out = true;
      break;
    }
    pollfd fds[3] = {
        {out.read_end, POLLIN, 0}, {err.read_end, POLLIN, 0}, {in.write_end, POLLOUT, 0}};
    const int ready = ::poll(fds, 3, static_cast<int>(left.count()));
    if (ready < 0) {
      if (errno == EINTR) continue;
      throw std::system_error(errno, std::generic_category(), "poll");
    }
    if (fds[2].revents & (POLLOUT | POLLERR | POLLHUP)) {
      const ssize_t n = ::write(in.write_end, input.data() + written, input.size() - written);
      if (n > 0) written += static_cast<size_t>(n);
      if (n < 0 && errno != EAGAIN && errno != EINTR)
        written = input.size();  // EPIPE: it closed stdin
      if (written == input.size()) in.close_write();
    }
    Pipe* pipes[2] = {&out, &err};
    std::string* sinks[2] = {&result.out, &result.err};
    for (int i = 0; i < 2; ++i) {
      if (!(fds[i].revents & (POLLIN | POLLHUP | POLLERR))) continue;
      const ssize_t n = ::read(pipes[i]->read_end, buffer, sizeof buffer);
      if (n > 0) {
        sinks[i]->append(buffer, static_cast<size_t>(n));
      } else if (n == 0 || (errno != EINTR && errno != EAGAIN)) {
        pipes[i]->close_read();
      }
    }
  }
  in.close_write();
  if (result.timed_out) {
    child.send_signal(SIGKILL);
    result.status = child.wait();
    return result;
  }
  // Both pipes closed: the program has ended or closed them; give it the
  // rest of the timeout to exit.
  const auto left = deadline - std::chrono::steady_clock::now();
  if (auto status = child.wait_for(left.count() > 0 ? left : std::chrono::nanoseconds(0))) {
    result.status = *status;
  } else {
    result.timed_out = true;
    child.send_signal(SIGKILL);
    result.status = child.wait();
  }
  return result;
}

std::string doorbell_binary() {
  return std::string(DOORBELL_BINARY_DIR) + "/doorbell";
}

RunResult run_doorbell(const std::vector<std::string>& args, const RunOptions& options) {
  std::vector<std::string> argv{doorbell_binary()};
  argv.insert(argv.end(), args.begin(), args.end());
  return run_program(argv, options);
}

}  // namespace doorbell::test
