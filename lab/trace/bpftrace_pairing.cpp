#include "lab/trace/bpftrace_pairing.h"

#include <fcntl.h>
#include <poll.h>
#include <sched.h>
#include <signal.h>
#include <sys/mount.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdlib>
#include <sstream>

#include <fmt/format.h>

#include "lab/common/time.h"
#include "sys/error.h"

namespace doorbell::lab::trace {
namespace {

constexpr const char* kReady = "doorbell-bpftrace-ready";

// BEGIN runs once every probe is attached.
constexpr const char* kProgram =
    "tracepoint:signal:signal_generate { @start[args->pid, args->sig] = nsecs; }\n"
    "tracepoint:signal:signal_deliver /@start[tid, args->sig]/ {\n"
    "  @delay_ns = hist(nsecs - @start[tid, args->sig]); delete(@start[tid, args->sig]); }\n"
    "BEGIN { printf(\"doorbell-bpftrace-ready\\n\"); }\n"
    "END { clear(@start); }\n";

// The last line of bpftrace's output that says ERROR, else its last line.
std::string error_of(const std::string& output) {
  std::istringstream in(output);
  std::string last, error;
  for (std::string line; std::getline(in, line);) {
    if (line.empty()) continue;
    last = line;
    // A warning it prints on kernels that account BPF memory to the cgroup.
    if (line.rfind("ERROR", 0) == 0 && line.find("RLIMIT_MEMLOCK") == std::string::npos)
      error = line;
  }
  return error.empty() ? last : error;
}

}  // namespace

std::string find_bpftrace() {
  const char* path = std::getenv("PATH");
  std::istringstream dirs(path ? path : "");
  for (std::string dir; std::getline(dirs, dir, ':');) {
    if (dir.empty()) continue;
    const std::string candidate = dir + "/bpftrace";
    struct stat st {};
    if (::stat(candidate.c_str(), &st) == 0 && S_ISREG(st.st_mode) &&
        ::access(candidate.c_str(), X_OK) == 0)
      return candidate;
  }
  return {};
}

BpftracePairing::BpftracePairing(const std::string& bpftrace, const std::function<bool()>& stop,
                                 uint64_t deadline_ns) {
  int pipe_fds[2];
  if (::pipe2(pipe_fds, O_CLOEXEC) != 0) sys::throw_errno("pipe");
  // Everything the child needs, made before fork (it only makes system calls).
  const char* argv[] = {"bpftrace", "-B", "line", "-e", kProgram, nullptr};
  const pid_t parent = ::getpid();
  const pid_t pid = ::fork();
  if (pid < 0) {
    const int error = errno;
    ::close(pipe_fds[0]);
    ::close(pipe_fds[1]);
    sys::throw_errno(error, "fork");
  }
  if (pid == 0) {
    ::setpgid(0, 0);
    ::prctl(PR_SET_PDEATHSIG, SIGKILL);
    if (::getppid() != parent) ::_exit(127);
    ::dup2(pipe_fds[1], STDOUT_FILENO);
    ::dup2(pipe_fds[1], STDERR_FILENO);
    const int null = ::open("/dev/null", O_RDONLY | O_CLOEXEC);
    if (null >= 0) ::dup2(null, STDIN_FILENO);
    // tracefs, where the system has it nowhere: in a mount namespace of
    // this child only.
    struct stat st {};
    if (::stat("/sys/kernel/tracing/events", &st) != 0 && ::unshare(CLONE_NEWNS) == 0 &&
        ::mount(nullptr, "/", nullptr, MS_REC | MS_PRIVATE, nullptr) == 0)
      ::mount("tracefs", "/sys/kernel/tracing", "tracefs", 0, nullptr);
    ::execv(bpftrace.c_str(), const_cast<char* const*>(argv));
    static const char message[] = "ERROR: could not execute bpftrace\n";
    (void)!::write(STDOUT_FILENO, message, sizeof message - 1);
    ::_exit(127);
  }
  ::close(pipe_fds[1]);
  pid_ = pid;
  out_ = pipe_fds[0];
  ::fcntl(out_, F_SETFL, O_NONBLOCK);
  const uint64_t deadline = monotonic_ns() + deadline_ns;
  bool stopped = false;
  const bool ready = read_until(
      [&] {
        if (stop()) stopped = true;
        return stopped || output_.find(kReady) != std::string::npos;
      },
      deadline);
  if (ready && !stopped) {
    ready_ = true;
    return;
  }
  if (stopped) return;  // the destructor kills it
  const bool timed_out = monotonic_ns() >= deadline;
  kill_and_reap();
  if (timed_out)
    throw BpftraceUnavailable(
        fmt::format("bpftrace had not attached its probes after {:.0f} s", deadline_ns / 1e9));
  throw BpftraceUnavailable("bpftrace failed: " + error_of(output_));
}

BpftracePairing::~BpftracePairing() {
  kill_and_reap();
}

bool BpftracePairing::read_until(const std::function<bool()>& until, uint64_t deadline) {
  char buffer[4096];
  while (!until()) {
    const uint64_t now = monotonic_ns();
    if (now >= deadline) return false;
    // At most 100 ms a wait: `until` is asked again (a stop request).
    pollfd p{out_, POLLIN, 0};
    const int ms = static_cast<int>(std::min<uint64_t>((deadline - now) / 1'000'000 + 1, 100));
    if (::poll(&p, 1, ms) < 0 && errno != EINTR) return false;
    const ssize_t n = ::read(out_, buffer, sizeof buffer);
    if (n > 0) {
      // Bounded: a bpftrace that writes without end is cut at 1 MiB.
      if (output_.size() < (1u << 20)) output_.append(buffer, static_cast<std::size_t>(n));
      continue;
    }
    if (n == 0) return false;  // EOF: it exited
    if (errno != EAGAIN && errno != EINTR) return false;
  }
  return true;
}

uint64_t BpftracePairing::finish() {
  if (pid_ <= 0) return 0;
  ::kill(pid_, SIGINT);
  // It prints its maps and exits: read to EOF.
  read_until([] { return false; }, monotonic_ns() + 10'000'000'000ull);
  kill_and_reap();
  // The histogram's lines: "[1K, 2K)   285 |@@@@   |".
  uint64_t count = 0;
  std::istringstream in(output_);
  for (std::string line; std::getline(in, line);) {
    if (line.empty() || line[0] != '[') continue;
    const auto close = line.find(')');
    if (close == std::string::npos) continue;
    count += std::strtoull(line.c_str() + close + 1, nullptr, 10);
  }
  return count;
}

void BpftracePairing::kill_and_reap() noexcept {
  if (pid_ > 0) {
    ::kill(pid_, SIGKILL);
    int status = 0;
    while (::waitpid(pid_, &status, 0) < 0 && errno == EINTR) {
    }
    pid_ = -1;
  }
  if (out_ >= 0) {
    ::close(out_);
    out_ = -1;
  }
}

}  // namespace doorbell::lab::trace
