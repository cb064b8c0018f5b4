// The BPF backend of doorbell trace (lab/trace/bpf/, lab/trace/backend.h),
// with known answers:
//  - the programs load and pass the verifier, on both system-call routes;
//  - a controlled sender's signals of every kind (standard merged,
//    real-time queued, thread-directed, to a handler, to sigwaitinfo, to a
//    signalfd) are counted exactly by both backends at once, with nothing
//    lost and every take paired;
//  - the cause of a delay: a target kept off its CPU by a SCHED_FIFO hog is
//    "runnable" (and the hog is who ran instead), one that blocks the signal
//    is "blocked", one busy in user space is "on CPU";
//  - the CLI names the backend and counts exactly (--json), and falls back to
//    tracefs in one line when bpf(2) is refused (a seccomp filter, in a
//    child).
// Timings are asserted as lower bounds only. Every child is killed and
// reaped on every path (Child's destructor), and every wait has a deadline.
// Needs root; skips, saying so, otherwise.
#include <fcntl.h>
#include <gtest/gtest.h>
#include <linux/filter.h>
#include <linux/seccomp.h>
#include <poll.h>
#include <sched.h>
#include <signal.h>
#include <stddef.h>
#include <sys/mman.h>
#include <sys/mount.h>
#include <sys/prctl.h>
#include <sys/signalfd.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdarg>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <future>
#include <memory>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include <bpf/libbpf.h>
#include <nlohmann/json.hpp>

#include "lab/common/time.h"
#include "lab/trace/backend.h"
#include "lab/trace/bpf/loading.h"
#include "lab/trace/bpf/signal_programs.h"
#include "lab/trace/render.h"
#include "lab/trace/tracker.h"
#include "tests/support/files.h"
#include "tests/support/run_program.h"

namespace fs = std::filesystem;
namespace trace = doorbell::lab::trace;
using doorbell::test::run_doorbell;
using doorbell::test::RunResult;
using doorbell::test::start_doorbell;

namespace {

#define SKIP_UNLESS_ROOT()                                                                 \
  do {                                                                                     \
    if (::geteuid() != 0) GTEST_SKIP() << "the BPF backend needs root (bpf(2)); not root"; \
  } while (0)

uint64_t now_ns() {
  timespec ts;
  ::clock_gettime(CLOCK_MONOTONIC, &ts);
  return static_cast<uint64_t>(ts.tv_sec) * 1000000000ull + static_cast<uint64_t>(ts.tv_nsec);
}

void sleep_ms(int ms) {
  std::this_thread::sleep_for(std::chrono::milliseconds(ms));
}

// A forked child, killed and reaped by the destructor unless reaped before.
class Child {
 public:
  explicit Child(pid_t pid) : pid_(pid) {}
  ~Child() {
    if (pid_ <= 0) return;
    ::kill(pid_, SIGKILL);
    int status;
    while (::waitpid(pid_, &status, 0) < 0 && errno == EINTR) {
    }
  }
  Child(const Child&) = delete;
  Child& operator=(const Child&) = delete;
  pid_t pid() const { return pid_; }

  // Its exit code (128 + signal when killed); -1 after `seconds` (then it is
  // killed and reaped). `meanwhile` runs every 10 ms while waiting.
  int wait(double seconds, const std::function<void()>& meanwhile = {}) {
    const uint64_t deadline = now_ns() + static_cast<uint64_t>(seconds * 1e9);
    while (true) {
      int status = 0;
      const pid_t got = ::waitpid(pid_, &status, WNOHANG);
      if (got == pid_) {
        pid_ = -1;
        return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
      }
      if (got < 0 && errno != EINTR) return -1;
      if (now_ns() >= deadline) {
        ::kill(pid_, SIGKILL);
        while (::waitpid(pid_, &status, 0) < 0 && errno == EINTR) {
        }
        pid_ = -1;
        return -1;
      }
      if (meanwhile) meanwhile();
      sleep_ms(10);
    }
  }

 private:
  pid_t pid_;
};

// One byte from fd within `ms`; false on timeout or end of file.
bool read_byte(int fd, int ms, char* byte = nullptr) {
  pollfd p{fd, POLLIN, 0};
  if (::poll(&p, 1, ms) != 1) return false;
  char c;
  if (::read(fd, &c, 1) != 1) return false;
  if (byte) *byte = c;
  return true;
}

void write_byte(int fd, char c = 'x') {
  ASSERT_EQ(::write(fd, &c, 1), 1);
}

struct Pipe {
  int read_end = -1, write_end = -1;
  Pipe() {
    int fds[2];
    if (::pipe2(fds, O_CLOEXEC) == 0) {
      read_end = fds[0];
      write_end = fds[1];
    }
  }
  ~Pipe() {
    if (read_end >= 0) ::close(read_end);
    if (write_end >= 0) ::close(write_end);
  }
};

// Sets a handler that counts into `counter` (a child's own). With
// g_linger_ns, the handler stays that long after counting, the signal still
// blocked (the kernel blocks it while its handler runs).
std::atomic<int>* g_handled = nullptr;
uint64_t g_linger_ns = 0;
extern "C" void count_signal(int) {
  if (g_handled) g_handled->fetch_add(1, std::memory_order_relaxed);
  if (g_linger_ns > 0) {
    const uint64_t until = now_ns() + g_linger_ns;
    while (now_ns() < until) {
    }
  }
}

void handle(int sig) {
  struct sigaction sa {};
  sa.sa_handler = count_signal;
  sigemptyset(&sa.sa_mask);
  ::sigaction(sig, &sa, nullptr);
}

void set_blocked(int sig, bool blocked) {
  sigset_t set;
  sigemptyset(&set);
  sigaddset(&set, sig);
  ::sigprocmask(blocked ? SIG_BLOCK : SIG_UNBLOCK, &set, nullptr);
}

bool pin_to(int cpu) {
  cpu_set_t set;
  CPU_ZERO(&set);
  CPU_SET(cpu, &set);
  return ::sched_setaffinity(0, sizeof set, &set) == 0;
}

bool fifo(int priority) {
  sched_param param{};
  param.sched_priority = priority;
  return ::sched_setscheduler(0, SCHED_FIFO, &param) == 0;
}

// ---------------------------------------------------------------- the sender

// What the controlled sender sends itself, and what each backend must count.
struct Expected {
  int sig;
  const char* what;
  uint64_t generated, queued, merged, delivered, sigwait, signalfd;
};

std::vector<Expected> expected_signals() {
  return {
      {SIGUSR1, "standard, one at a time, to a handler", 200, 200, 0, 200, 0, 0},
      {SIGUSR2, "standard, 50 while blocked (merged), to a handler", 50, 1, 49, 1, 0, 0},
      {SIGRTMIN, "real-time, 40 queued while blocked, to a handler", 40, 40, 0, 40, 0, 0},
      {SIGRTMIN + 1, "real-time, 30 queued, to sigwaitinfo", 30, 30, 0, 0, 30, 0},
      {SIGRTMIN + 2, "real-time, 20 queued, to a signalfd", 20, 20, 0, 0, 0, 20},
      {SIGRTMIN + 3, "real-time, 25 thread-directed (tgkill), to a handler", 25, 25, 0, 25, 0, 0},
      {SIGHUP, "standard, 10 while blocked (merged), to a signalfd", 10, 1, 9, 0, 0, 1},
      {SIGALRM, "standard, 5 while blocked (merged), to sigwaitinfo", 5, 1, 4, 0, 1, 0},
  };
}

// The sender, in a forked child: waits for a byte on `go`, then sends itself
// everything expected_signals() lists, each taken the way it says. Returns
// its exit code (0: all sent and taken).
int controlled_sender(int go) {
  std::atomic<int> handled{0};
  g_handled = &handled;
  const int rt = SIGRTMIN;
  for (int sig : {SIGUSR1, SIGUSR2, rt, rt + 3}) handle(sig);
  if (!read_byte(go, 30000)) return 3;
  const pid_t self = ::getpid();
  const pid_t tid = static_cast<pid_t>(::syscall(SYS_gettid));
  union sigval value {};
  // To a handler, one at a time: each delivered before kill() returns.
  for (int i = 0; i < 200; ++i) ::kill(self, SIGUSR1);
  // Merged while blocked.
  set_blocked(SIGUSR2, true);
  for (int i = 0; i < 50; ++i) ::kill(self, SIGUSR2);
  set_blocked(SIGUSR2, false);
  // Queued while blocked.
  set_blocked(rt, true);
  for (int i = 0; i < 40; ++i) ::sigqueue(self, rt, value);
  set_blocked(rt, false);
  // To sigwaitinfo: real-time queued, then standard merged.
  sigset_t waited;
  sigemptyset(&waited);
  sigaddset(&waited, rt + 1);
  sigaddset(&waited, SIGALRM);
  ::sigprocmask(SIG_BLOCK, &waited, nullptr);
  for (int i = 0; i < 30; ++i) ::sigqueue(self, rt + 1, value);
  for (int i = 0; i < 5; ++i) ::kill(self, SIGALRM);
  const timespec five_seconds{5, 0};
  for (int i = 0; i < 31; ++i)
    if (::sigtimedwait(&waited, nullptr, &five_seconds) < 0) return 4;
  // To a signalfd: real-time queued, then standard merged; read 8 at most
  // at a time.
  sigset_t read_set;
  sigemptyset(&read_set);
  sigaddset(&read_set, rt + 2);
  sigaddset(&read_set, SIGHUP);
  ::sigprocmask(SIG_BLOCK, &read_set, nullptr);
  const int sfd = ::signalfd(-1, &read_set, SFD_CLOEXEC);
  if (sfd < 0) return 5;
  for (int i = 0; i < 20; ++i) ::sigqueue(self, rt + 2, value);
  for (int i = 0; i < 10; ++i) ::kill(self, SIGHUP);
  int got = 0;
  signalfd_siginfo records[8];
  while (got < 21) {
    pollfd p{sfd, POLLIN, 0};
    if (::poll(&p, 1, 5000) != 1) return 6;
    const ssize_t n = ::read(sfd, records, sizeof records);
    if (n <= 0 || n % sizeof(signalfd_siginfo) != 0) return 7;
    got += static_cast<int>(n / sizeof(signalfd_siginfo));
  }
  // Thread-directed, to a handler.
  for (int i = 0; i < 25; ++i) ::syscall(SYS_tgkill, self, tid, rt + 3);
    // Every handler has run by now. Not under ThreadSanitizer: it takes each
    // signal in a handler of its own and runs ours later, once per signal
    // number pending (queued real-time signals merge there). The kernel's
    // counts, which the test checks, are the same either way.
#if defined(__SANITIZE_THREAD__)
  return handled.load() > 0 ? 0 : 8;
#else
  return handled.load() == 200 + 1 + 40 + 25 ? 0 : 8;
#endif
}

pid_t start_sender(Pipe& go) {
  const pid_t pid = ::fork();
  if (pid == 0) {
    ::close(go.write_end);
    ::_exit(controlled_sender(go.read_end));
  }
  return pid;
}

// Compares one backend's totals for the sender with expected_signals().
void expect_exact(const trace::Tracker& tracker, pid_t sender, bool sees_takes,
                  const std::string& backend) {
  for (const Expected& e : expected_signals()) {
    SCOPED_TRACE(backend + ": " + trace::signal_name(e.sig) + ", " + e.what);
    auto it = tracker.streams().find(trace::Key{sender, e.sig});
    ASSERT_NE(it, tracker.streams().end()) << "no row";
    const trace::Counts& c = it->second.total;
    EXPECT_EQ(c.generated, e.generated);
    EXPECT_EQ(c.queued, e.queued);
    EXPECT_EQ(c.coalesced, e.merged);
    EXPECT_EQ(c.ignored, 0u);
    EXPECT_EQ(c.failed, 0u);
    EXPECT_EQ(c.delivered, e.delivered);
    EXPECT_EQ(c.unpaired, 0u);
    if (sees_takes) {
      EXPECT_EQ(c.taken_sigwait, e.sigwait);
      EXPECT_EQ(c.taken_signalfd, e.signalfd);
      EXPECT_EQ(c.discarded, 0u);
      // Every take paired with its generate, and its delay recorded.
      EXPECT_EQ(c.delay.count(), e.delivered + e.sigwait + e.signalfd);
      uint64_t by_cause = 0;
      for (uint64_t n : c.causes.count) by_cause += n;
      EXPECT_EQ(by_cause, e.delivered + e.sigwait + e.signalfd);
    } else {
      EXPECT_EQ(c.taken_sigwait, 0u);  // tracefs cannot see them
      EXPECT_EQ(c.taken_signalfd, 0u);
      EXPECT_EQ(c.delay.count(), e.delivered);
    }
    ASSERT_EQ(c.senders.size(), 1u);
    EXPECT_EQ(c.senders.begin()->first, sender);
    EXPECT_EQ(c.senders.begin()->second.count, e.generated);
  }
}

void run_exact_counts(bool every_syscall) {
  Pipe go;
  ASSERT_GE(go.write_end, 0);
  Child child(start_sender(go));
  ASSERT_GT(child.pid(), 0);
  trace::BackendOptions options;
  options.only = child.pid();
  options.every_syscall = every_syscall;
  std::unique_ptr<trace::Backend> bpf, tracefs;
  try {
    bpf = trace::open_backend(trace::BackendKind::bpf, options);
  } catch (const trace::BackendUnavailable& e) {
    FAIL() << "the BPF backend does not load here: " << e.what();
  }
  try {
    tracefs = trace::open_backend(trace::BackendKind::tracefs, options);
  } catch (const trace::BackendUnavailable& e) {
    FAIL() << "the tracefs backend does not open here: " << e.what();
  }
  trace::Tracker bpf_tracker(child.pid()), tracefs_tracker(child.pid());
  write_byte(go.write_end);
  const pid_t sender = child.pid();
  EXPECT_EQ(child.wait(60, [&] { tracefs->collect(tracefs_tracker, nullptr); }), 0)
      << "the sender failed";
  bpf->collect(bpf_tracker, nullptr);
  tracefs->collect(tracefs_tracker, nullptr);
  EXPECT_EQ(bpf->lost_events(), 0);
  EXPECT_EQ(tracefs->lost_events(), 0);
  expect_exact(bpf_tracker, sender, true, "bpf");
  expect_exact(tracefs_tracker, sender, false, "tracefs");
}

// ---------------------------------------------------------------- loading

int print_through(libbpf_print_fn_t print, const char* format, ...) {
  va_list args;
  va_start(args, format);
  const int result = print(LIBBPF_WARN, format, args);
  va_end(args);
  return result;
}

// A program the verifier refuses: libbpf prints its whole log in one
// message, the verifier's reason at the end, after thousands of lines. The
// capture cut each message at 512 bytes, so the one-line failure said "BPF
// program load failed: Permission denied" and never why.
TEST(BpfPrograms, AVerifierRefusalSaysWhatTheVerifierRefusedInOneLine) {
  std::string log;
  for (int i = 0; i < 5000; ++i)
    log +=
        std::to_string(i) + ": (b7) r" + std::to_string(i % 10) + " = " + std::to_string(i) + "\n";
  log += "R2 invalid mem access 'scalar'\n";
  log +=
      "processed 5001 insns (limit 1000000) max_states_per_insn 0 total_states 0 "
      "peak_states 0 mark_read 0\n";
  std::string failure;
  {
    trace::bpf::CapturedMessages messages;
    const libbpf_print_fn_t print = libbpf_set_print(nullptr);  // the capture's
    libbpf_set_print(print);
    ASSERT_NE(print, nullptr);
    print_through(print, "libbpf: prog '%s': BPF program load failed: %s\n", "on_signal_generate",
                  "Permission denied");
    print_through(print,
                  "libbpf: prog '%s': -- BEGIN PROG LOAD LOG --\n%s-- END PROG LOAD LOG --\n",
                  "on_signal_generate", log.c_str());
    print_through(print, "libbpf: prog '%s': failed to load: %d\n", "on_signal_generate", -13);
    failure = trace::bpf::load_failure("loading the BPF programs", EACCES, messages);
  }
  EXPECT_NE(failure.find("BPF program load failed: Permission denied"), std::string::npos)
      << failure;
  EXPECT_NE(failure.find("the verifier: R2 invalid mem access 'scalar'"), std::string::npos)
      << failure;
  EXPECT_EQ(failure.find('\n'), std::string::npos) << "not one line: " << failure;
}

TEST(BpfPrograms, LoadAndPassTheVerifierOnBothSystemCallRoutes) {
  SKIP_UNLESS_ROOT();
  for (const bool every_syscall : {false, true}) {
    SCOPED_TRACE(every_syscall ? "tp_btf/sys_exit" : "syscalls:sys_exit_*");
    std::unique_ptr<trace::bpf::SignalPrograms> programs;
    try {
      programs = std::make_unique<trace::bpf::SignalPrograms>(
          trace::bpf::SignalPrograms::Options{0, 1'000'000, every_syscall});
    } catch (const trace::bpf::BpfUnavailable& e) {
      FAIL() << "the programs do not load: " << e.what();
    }
    // Seven programs on the signal, scheduler and process tracepoints, plus
    // the system-call exits: three per-call tracepoints (rt_sigtimedwait,
    // read, rt_sigaction), or one for every call.
    EXPECT_EQ(programs->attached(), every_syscall ? 8 : 10);
    const std::string route = programs->syscall_route();
    EXPECT_NE(route.find(every_syscall ? "tp_btf/sys_exit" : "sys_exit_rt_sigtimedwait"),
              std::string::npos)
        << route;
    // Each loaded program went through the verifier: it says how far.
    const std::string summary = programs->verifier_summary();
    EXPECT_NE(summary.find("on_signal_generate"), std::string::npos) << summary;
    // Nothing lost while loaded (the state log may miss a change of some
    // other process's thread: not a loss of counts).
    const auto losses = programs->losses();
    for (int i = 0; i < DOORBELL_LOSSES; ++i) {
      if (i != DOORBELL_LOSS_STATE_LOG) {
        EXPECT_EQ(losses[i], 0u) << "loss " << i;
      }
    }
    // The verifier's counts are positive numbers, each after a space.
    std::istringstream words(summary);
    std::string name, count;
    while (words >> name >> count) EXPECT_GT(std::stoull(count), 0u) << name << " in " << summary;
  }
}

// ---------------------------------------------------------------- exact counts

TEST(BpfCounts, ExactForEveryKindOfSignalInBothBackends) {
  SKIP_UNLESS_ROOT();
  run_exact_counts(false);
}

TEST(BpfCounts, ExactOnTheEverySystemCallRouteToo) {
  SKIP_UNLESS_ROOT();
  run_exact_counts(true);
}

// A child that sends itself `count` SIGUSR1 (handled), then, when `hold` is
// a pipe's read end, stays until that pipe closes (`hold_writer`, its write
// end, is closed in the child). Exit 0 when every one was handled.
pid_t self_signaller_on(pid_t wanted, int count, int hold, int hold_writer = -1) {
  if (wanted > 0) {
    // The next PID is last + 1 (the whole system's: the BPF programs see
    // global ids); another fork on the machine may take it first.
    const int fd = ::open("/proc/sys/kernel/ns_last_pid", O_WRONLY | O_CLOEXEC);
    const std::string last = std::to_string(wanted - 1);
    const bool set =
        fd >= 0 && ::write(fd, last.data(), last.size()) == static_cast<ssize_t>(last.size());
    if (fd >= 0) ::close(fd);
    if (!set) return -1;
  }
  const pid_t pid = ::fork();
  if (pid != 0) return pid;
  if (hold_writer >= 0) ::close(hold_writer);
  std::atomic<int> handled{0};
  g_handled = &handled;
  handle(SIGUSR1);
  for (int i = 0; i < count; ++i) ::kill(::getpid(), SIGUSR1);
  if (hold >= 0) {
    char c;
    while (::read(hold, &c, 1) < 0 && errno == EINTR) {
    }
  }
  ::_exit(handled.load() == count ? 0 : 1);
}

// Recycled PIDs: A sends itself 3 SIGUSR1 and exits, B is forked on A's PID
// (ns_last_pid), sends itself 5 and stays; then the tracer reads: B's row
// holds B's 5, A's 3 are retired. Deterministic, run for each backend.
void recycled_pid_counted_apart(trace::BackendKind kind) {
  std::unique_ptr<trace::Backend> backend;
  try {
    backend = trace::open_backend(kind, trace::BackendOptions{});
  } catch (const trace::BackendUnavailable& e) {
    FAIL() << "the backend does not load here: " << e.what();
  }
  trace::Tracker tracker(0);
  pid_t a = -1;
  std::unique_ptr<Child> b;
  Pipe hold;
  ASSERT_GE(hold.read_end, 0);
  for (int attempt = 0; attempt < 50 && !b; ++attempt) {
    Child first(self_signaller_on(0, 3, -1));
    ASSERT_GT(first.pid(), 0);
    a = first.pid();
    ASSERT_EQ(first.wait(30), 0) << "A did not handle its 3 signals";
    const pid_t again = self_signaller_on(a, 5, hold.read_end, hold.write_end);
    if (again == a) {
      b = std::make_unique<Child>(again);
    } else if (again > 0) {
      Child other(again);  // another process took the PID first: killed, again
    } else {
      GTEST_SKIP() << "cannot set /proc/sys/kernel/ns_last_pid";
    }
  }
  if (!b) GTEST_SKIP() << "PID " << a << " was taken by another process 50 times";
  // B's signals are handled before it reads the pipe; it is alive until the
  // write end closes. Poll until its 5 were generated (or 10 s).
  const trace::Key key{a, SIGUSR1};
  const uint64_t deadline = now_ns() + 10'000'000'000ull;
  bool settled = false;
  while (!settled && now_ns() < deadline) {
    backend->collect(tracker, nullptr);
    tracker.end_interval();
    const auto it = tracker.streams().find(key);
    settled = it != tracker.streams().end() && it->second.total.generated >= 5 &&
              it->second.total.delivered >= 5;
    if (!settled) sleep_ms(20);
  }
  const auto it = tracker.streams().find(key);
  ASSERT_NE(it, tracker.streams().end()) << "no stream for PID " << a << " SIGUSR1";
  EXPECT_EQ(it->second.total.generated, 5u) << "B's stream holds A's signals too";
  EXPECT_EQ(it->second.total.delivered, 5u);
  const auto retired = tracker.streams().find(trace::Key{trace::kRetired, SIGUSR1});
  ASSERT_NE(retired, tracker.streams().end()) << "A's stream was not retired";
  EXPECT_GE(retired->second.total.generated, 3u) << "A's 3 signals were lost";
  EXPECT_EQ(backend->lost_events(), 0);
  ::close(hold.write_end);
  hold.write_end = -1;
  EXPECT_EQ(b->wait(30), 0) << "B did not handle its 5 signals";
}

// bpf: the kernel's counters were keyed by (process id, signal) alone, so a
// process that got the PID of one that had exited since the last read added
// to the dead one's counters (its totals, its name), and were deleted with
// them when the PID was found gone.
TEST(BpfCounts, AProcessOnARecycledPidIsCountedApartFromTheOneBefore) {
  SKIP_UNLESS_ROOT();
  recycled_pid_counted_apart(trace::BackendKind::bpf);
}

// tracefs: events carry the PID alone, and a PID reused within one interval
// added to the row of the process before it (8 generated for B's 5; nothing
// retired, kill(pid, 0) finding B alive). B's task_newtask now retires A's
// rows (Tracker::on_new_task).
TEST(TracefsCounts, AProcessOnARecycledPidIsCountedApartFromTheOneBefore) {
  SKIP_UNLESS_ROOT();
  recycled_pid_counted_apart(trace::BackendKind::tracefs);
}

// ---------------------------------------------------------------- causes

// A target in a child, traced alone by the BPF backend. The target gets two
// pipe ends: `to_test` (its first byte says it is ready) and `from_test`
// (the first byte from the test says go). After go, `drive(target pid,
// from_target, to_target)` runs in the test with the other ends.
struct Traced {
  trace::Counts usr1;
  std::vector<trace::SlowDelivery> slow;
  int exit_code = -1;
  long long unlogged = 0;  // state changes the cause log missed
};

void trace_target(const std::function<int(int to_test, int from_test)>& target,
                  const std::function<void(pid_t, int from_target, int to_target)>& drive,
                  Traced& out) {
  Pipe up, down;
  ASSERT_GE(up.write_end, 0);
  ASSERT_GE(down.write_end, 0);
  const pid_t pid = ::fork();
  if (pid == 0) {
    ::close(up.read_end);
    ::close(down.write_end);
    ::_exit(target(up.write_end, down.read_end));
  }
  Child child(pid);
  ASSERT_GT(pid, 0);
  trace::BackendOptions options;
  options.only = pid;
  options.slow_ns = 1'000'000;
  std::unique_ptr<trace::Backend> bpf;
  try {
    bpf = trace::open_backend(trace::BackendKind::bpf, options);
  } catch (const trace::BackendUnavailable& e) {
    FAIL() << "the BPF backend does not load here: " << e.what();
  }
  ASSERT_TRUE(read_byte(up.read_end, 30000)) << "the target did not get ready";
  write_byte(down.write_end);
  drive(pid, up.read_end, down.write_end);
  trace::Tracker tracker(pid);
  out.exit_code = child.wait(30, [&] { bpf->collect(tracker, &out.slow); });
  bpf->collect(tracker, &out.slow);
  EXPECT_EQ(bpf->lost_events(), 0);
  out.unlogged = bpf->unlogged_state_changes();
  auto it = tracker.streams().find(trace::Key{pid, SIGUSR1});
  ASSERT_NE(it, tracker.streams().end()) << "no SIGUSR1 row for the target";
  out.usr1 = it->second.total;
}

trace::Cause dominant(const trace::Counts& c) {
  int best = 0;
  for (int i = 1; i < trace::kCauses; ++i)
    if (c.causes.ns[i] > c.causes.ns[best]) best = i;
  return static_cast<trace::Cause>(best);
}

std::string causes_text(const trace::Counts& c) {
  std::ostringstream s;
  for (int i = 0; i < trace::kCauses; ++i)
    s << trace::cause_name(static_cast<trace::Cause>(i)) << " " << c.causes.ns[i] << " ns ("
      << c.causes.count[i] << " signals); ";
  return s.str();
}

std::vector<int> allowed_cpus() {
  std::vector<int> cpus;
  cpu_set_t set;
  CPU_ZERO(&set);
  if (::sched_getaffinity(0, sizeof set, &set) != 0) return cpus;
  for (int i = 0; i < CPU_SETSIZE; ++i)
    if (CPU_ISSET(i, &set)) cpus.push_back(i);
  return cpus;
}

// Spins until `handled` reaches `count` or `seconds` pass; the exit code of
// a target: 0 when all came.
// With `returned`, the count as seen here, outside the handler: a signal
// counted there has had its handler return (and its mask restored).
int spin_until_handled(const std::atomic<int>& handled, int count, double seconds,
                       std::atomic<int>* returned = nullptr) {
  const uint64_t deadline = now_ns() + static_cast<uint64_t>(seconds * 1e9);
  while (handled.load(std::memory_order_relaxed) < count && now_ns() < deadline) {
    if (returned) returned->store(handled.load(std::memory_order_relaxed));
  }
  if (returned) returned->store(handled.load());
  return handled.load() == count ? 0 : 12;
}

// Spins until `done` is set (by the test) or `seconds` pass; a target's
// exit code: 0 when it was told it is done.
int spin_until_done(const std::atomic<int>& done, double seconds) {
  const uint64_t deadline = now_ns() + static_cast<uint64_t>(seconds * 1e9);
  while (done.load(std::memory_order_relaxed) == 0 && now_ns() < deadline) {
  }
  return done.load() ? 0 : 12;
}

// A word a child and the test share.
struct SharedWord {
  std::atomic<int>* word;
  SharedWord() {
    void* p = ::mmap(nullptr, sizeof(std::atomic<int>), PROT_READ | PROT_WRITE,
                     MAP_SHARED | MAP_ANONYMOUS, -1, 0);
    word = p == MAP_FAILED ? nullptr : new (p) std::atomic<int>(0);
  }
  ~SharedWord() {
    if (word) ::munmap(word, sizeof(std::atomic<int>));
  }
};

// The target's main thread spins on one CPU at SCHED_OTHER; a SCHED_FIFO hog
// pinned to the same CPU sends it SIGUSR1 and keeps the CPU 3 ms before it
// sleeps 5 ms: each signal waits for the hog, runnable. (Under load a signal
// may merge into the previous one still pending: the test counts what was
// generated, merged and taken, not a fixed number.)
TEST(BpfCause, RunnableWhenASchedFifoHogHoldsTheTargetsCpu) {
  SKIP_UNLESS_ROOT();
  constexpr int kSignals = 8;
  const std::vector<int> cpus = allowed_cpus();
  ASSERT_FALSE(cpus.empty());
  const int cpu = cpus.back();
  SharedWord done;
  ASSERT_NE(done.word, nullptr);
  pid_t hog_pid = 0;
  Traced traced;
  trace_target(
      [&](int to_test, int from_test) {
        handle(SIGUSR1);
        if (!pin_to(cpu)) return 10;
        write_byte(to_test);
        if (!read_byte(from_test, 30000)) return 11;
        return spin_until_done(*done.word, 20);
      },
      [&](pid_t target, int, int) {
        hog_pid = ::fork();
        if (hog_pid == 0) {
          if (!pin_to(cpu) || !fifo(10)) ::_exit(20);
          for (int i = 0; i < kSignals; ++i) {
            sleep_ms(5);  // the target runs
            ::kill(target, SIGUSR1);
            const uint64_t until = now_ns() + 3'000'000;
            while (now_ns() < until) {
            }
          }
          sleep_ms(20);  // the last signal is taken
          ::_exit(0);
        }
        Child hog(hog_pid);
        EXPECT_EQ(hog.wait(30), 0) << "the hog failed (SCHED_FIFO refused?)";
        done.word->store(1);
      },
      traced);
  const trace::Counts& c = traced.usr1;
  ASSERT_EQ(traced.exit_code, 0) << "the target was not told it is done";
  EXPECT_EQ(c.generated, static_cast<uint64_t>(kSignals));
  EXPECT_EQ(c.delivered, c.generated - c.coalesced);
  EXPECT_GE(c.delivered, 1u);
  EXPECT_EQ(dominant(c), trace::Cause::runnable) << causes_text(c);
  EXPECT_GE(2 * c.causes.count[static_cast<int>(trace::Cause::runnable)], c.delivered)
      << causes_text(c);
  // Each wait lasts about the hog's 3 ms: a lower bound, with slack.
  EXPECT_GE(c.causes.longest_runnable_ns, 1'000'000u) << causes_text(c);
  EXPECT_EQ(c.causes.ran_instead_tid, hog_pid) << c.causes.ran_instead_comm;
  // The slow deliveries name the cause and the hog that held the CPU: most
  // of them (on a machine loaded by other work, one of the waits may end up
  // split otherwise: seen once in about 40 runs of the whole suite beside
  // this test, with no record kept of it; the message now keeps one).
  ASSERT_FALSE(traced.slow.empty());
  std::size_t runnable = 0;
  std::string all;
  for (const auto& d : traced.slow) {
    all += trace::slow_text(d) + "\n";
    EXPECT_EQ(d.how, trace::TakenBy::handler);
    EXPECT_GE(d.delay_ns(), 1'000'000u);
    if (d.cause != trace::Cause::runnable) continue;
    ++runnable;
    EXPECT_EQ(d.held_by_tid, hog_pid) << d.held_by_comm;
  }
  EXPECT_GE(2 * runnable, traced.slow.size() + 1)
      << all << "unlogged state changes " << traced.unlogged;
}

// The target blocks SIGUSR1, the test sends it, the target keeps it blocked
// 20 ms, then unblocks it and the handler runs.
TEST(BpfCause, BlockedWhenEveryThreadBlocksTheSignal) {
  SKIP_UNLESS_ROOT();
  constexpr int kSignals = 4;
  Traced traced;
  trace_target(
      [&](int to_test, int from_test) {
        std::atomic<int> handled{0};
        g_handled = &handled;
        handle(SIGUSR1);
        write_byte(to_test);
        if (!read_byte(from_test, 30000)) return 11;
        for (int i = 0; i < kSignals; ++i) {
          set_blocked(SIGUSR1, true);
          write_byte(to_test);  // blocked: send it
          if (!read_byte(from_test, 30000)) return 12;
          sleep_ms(20);
          set_blocked(SIGUSR1, false);  // the handler runs here
        }
        return handled.load() == kSignals ? 0 : 13;
      },
      [&](pid_t target, int from_target, int to_target) {
        for (int i = 0; i < kSignals; ++i) {
          ASSERT_TRUE(read_byte(from_target, 30000));
          ASSERT_EQ(::kill(target, SIGUSR1), 0);
          write_byte(to_target);
        }
      },
      traced);
  ASSERT_EQ(traced.exit_code, 0) << "the target did not take its signals";
  const trace::Counts& c = traced.usr1;
  EXPECT_EQ(c.delivered, static_cast<uint64_t>(kSignals));
  EXPECT_EQ(dominant(c), trace::Cause::blocked) << causes_text(c);
  EXPECT_EQ(c.causes.count[static_cast<int>(trace::Cause::blocked)],
            static_cast<uint64_t>(kSignals))
      << causes_text(c);
  // Blocked for the target's 20 ms at least, each.
  EXPECT_GE(c.causes.ns[static_cast<int>(trace::Cause::blocked)], kSignals * 20'000'000ull);
  EXPECT_EQ(traced.slow.size(), static_cast<std::size_t>(kSignals));
}

// The target spins in user space at SCHED_FIFO 80 on one CPU (so nothing
// else preempts it); the test sends from another CPU, one signal at a time: each
// is noticed when the spinning thread next returns to user space (the
// interrupt of the send), so it waits on its CPU. The test sends only once
// the target says it runs at SCHED_FIFO: a fixed 20 ms pause before the
// first send failed in CI's TSan run (the target not yet spinning, asleep or
// runnable when signalled; seen again with the target held back 100 ms).
TEST(BpfCause, OnCpuWhenTheTargetIsBusyInUserSpace) {
  SKIP_UNLESS_ROOT();
  const std::vector<int> cpus = allowed_cpus();
  if (cpus.size() < 2) GTEST_SKIP() << "needs two CPUs: the spinning target holds one";
  constexpr int kSignals = 10;
  // The target counts in memory the test can see.
  SharedWord counted, spinning, back;
  ASSERT_NE(counted.word, nullptr);
  ASSERT_NE(spinning.word, nullptr);
  ASSERT_NE(back.word, nullptr);
  std::atomic<int>* shared = counted.word;
  std::atomic<int>* at_fifo = spinning.word;
  // The signals whose handler has returned. The sender waits for it, not
  // for the count: a signal sent while the handler of the one before still
  // runs is blocked at its generate, and the tracer rightly says "blocked"
  // (seen once in five release runs of the suite, the window being the
  // handler's return; held open 3 ms by g_linger_ns, waiting for the count
  // failed every run).
  std::atomic<int>* returned = back.word;
  const int target_cpu = cpus.back(), sender_cpu = cpus.front();
  Traced traced;
  trace_target(
      [&](int to_test, int from_test) {
        g_handled = shared;
        g_linger_ns = 3'000'000;  // the window below, held open
        handle(SIGUSR1);
        if (!pin_to(target_cpu)) return 10;
        write_byte(to_test);
        if (!read_byte(from_test, 30000)) return 11;
        // Above the lab's SCHED_FIFO senders (60) and receivers, so no test
        // running beside this one preempts it.
        if (!fifo(80)) return 14;
        at_fifo->store(1);
        return spin_until_handled(*shared, kSignals, 10, returned);
      },
      [&](pid_t target, int, int) {
        doorbell::lab::AffinityGuard keep;  // the test's own thread, put back after
        (void)keep;
        pin_to(sender_cpu);
        const uint64_t ready_by = now_ns() + 10'000'000'000ull;
        while (at_fifo->load() == 0 && now_ns() < ready_by) sleep_ms(1);
        ASSERT_EQ(at_fifo->load(), 1) << "the target did not reach SCHED_FIFO within 10 s";
        for (int i = 0; i < kSignals; ++i) {
          ASSERT_EQ(::kill(target, SIGUSR1), 0);
          const uint64_t deadline = now_ns() + 5'000'000'000ull;
          while (returned->load() <= i && now_ns() < deadline) sleep_ms(1);
          ASSERT_GT(returned->load(), i) << "the target did not take signal " << i;
        }
      },
      traced);
  ASSERT_EQ(traced.exit_code, 0) << "the target did not take its signals";
  const trace::Counts& c = traced.usr1;
  EXPECT_EQ(c.delivered, static_cast<uint64_t>(kSignals));
  EXPECT_EQ(dominant(c), trace::Cause::on_cpu) << causes_text(c);
  EXPECT_EQ(c.causes.count[static_cast<int>(trace::Cause::on_cpu)], static_cast<uint64_t>(kSignals))
      << causes_text(c);
}

// ---------------------------------------------------------------- the CLI

std::vector<nlohmann::json> json_lines(const std::string& out) {
  std::vector<nlohmann::json> lines;
  std::istringstream in(out);
  std::string line;
  while (std::getline(in, line)) {
    auto j = nlohmann::json::parse(line, nullptr, false);
    if (!j.is_discarded()) lines.push_back(j);
  }
  return lines;
}

nlohmann::json line_of_type(const std::vector<nlohmann::json>& lines, const std::string& type) {
  for (const auto& l : lines)
    if (l.value("type", "") == type) return l;
  return {};
}

using doorbell::test::slurp;

// Whether a tracer has attached all its programs: its fdinfo lists the BPF
// links, seven raw tracepoints and the system calls' three perf events
// (attached last), or, without per-call tracepoints, an eighth raw
// tracepoint (tp_btf/sys_exit). It said "6 raw and 3 perf, or 7 raw" from
// before sched_process_exec was watched: 7 raw links alone passed, so the
// sender could start before the system-call exits were attached, and its
// sigwait and signalfd takes were missed (counted discarded; one failure in
// a release run of the suite here).
bool tracer_attached(pid_t pid) {
  int raw = 0, perf = 0;
  std::error_code ec;
  for (const auto& entry : fs::directory_iterator("/proc/" + std::to_string(pid) + "/fdinfo", ec)) {
    const std::string info = slurp(entry.path());
    if (info.find("link_type:\traw_tracepoint") != std::string::npos) ++raw;
    if (info.find("link_type:\tperf") != std::string::npos) ++perf;
  }
  return (raw == 7 && perf == 3) || raw == 8;
}

// Runs `doorbell trace -p SENDER ARGS...` around the controlled sender, once
// the tracer has attached its programs.
RunResult trace_the_sender(const std::vector<std::string>& args, pid_t& sender_pid) {
  Pipe go;
  Child child(start_sender(go));
  sender_pid = child.pid();
  std::vector<std::string> argv{
      "trace", "-p", std::to_string(child.pid()), "--interval", "0.2", "--duration", "60"};
  argv.insert(argv.end(), args.begin(), args.end());
  auto tracer = start_doorbell(argv);
  const uint64_t deadline = now_ns() + 30'000'000'000ull;
  while (!tracer_attached(tracer.pid()) && now_ns() < deadline) sleep_ms(20);
  EXPECT_TRUE(tracer_attached(tracer.pid())) << "the tracer did not attach its programs";
  write_byte(go.write_end);
  EXPECT_EQ(child.wait(60), 0) << "the sender failed";
  return tracer.finish();  // it ends by itself: its target exited
}

TEST(BpfCli, JsonNamesTheBackendAndCountsEveryKindExactly) {
  SKIP_UNLESS_ROOT();
  pid_t sender = 0;
  const RunResult r = trace_the_sender({"--json"}, sender);
  ASSERT_TRUE(r.success()) << r.describe();
  EXPECT_NE(r.err.find("backend bpf ("), std::string::npos) << r.err;
  const auto lines = json_lines(r.out);
  const nlohmann::json start = line_of_type(lines, "start");
  ASSERT_TRUE(start.is_object()) << r.out;
  EXPECT_EQ(start["backend"], "bpf");
  EXPECT_FALSE(start.contains("instance"));
  const nlohmann::json summary = line_of_type(lines, "summary");
  ASSERT_TRUE(summary.is_object()) << r.out;
  EXPECT_EQ(summary["backend"], "bpf");
  EXPECT_EQ(summary["end"], "target exited");
  EXPECT_EQ(summary["lost_events"], 0);
  // Every bpf counter of what the tracer could not keep is in the summary,
  // 0 here (docs/trace.md, the table of bounds).
  for (const char* counter : {"slow_dropped", "unlogged_state_changes", "unremembered_signals"})
    EXPECT_EQ(summary.value(counter, nlohmann::json(-1)), 0) << counter << ": " << summary.dump();
  for (const Expected& e : expected_signals()) {
    SCOPED_TRACE(trace::signal_name(e.sig) + ", " + e.what);
    const nlohmann::json* row = nullptr;
    for (const auto& s : summary["signals"])
      if (s["signal"] == e.sig) row = &s;
    ASSERT_NE(row, nullptr) << summary.dump();
    EXPECT_EQ((*row)["pid"], sender);
    EXPECT_EQ((*row)["generated"], e.generated);
    EXPECT_EQ((*row)["queued"], e.queued);
    EXPECT_EQ((*row)["coalesced"], e.merged);
    EXPECT_EQ((*row)["delivered"], e.delivered);
    EXPECT_EQ((*row)["taken_by_sigwait"], e.sigwait);
    EXPECT_EQ((*row)["taken_by_signalfd"], e.signalfd);
    EXPECT_EQ((*row)["taken"], e.delivered + e.sigwait + e.signalfd);
    EXPECT_EQ((*row)["unpaired_deliveries"], 0);
    EXPECT_EQ((*row)["discarded"], 0);
    EXPECT_EQ((*row)["delay_ns"]["count"], e.delivered + e.sigwait + e.signalfd);
    uint64_t in_histogram = 0;
    for (const auto& bucket : (*row)["delay_log2_ns"]) in_histogram += bucket[1].get<uint64_t>();
    EXPECT_EQ(in_histogram, e.delivered + e.sigwait + e.signalfd);
    ASSERT_TRUE((*row)["causes"].is_object());
    uint64_t signals_by_cause = 0;
    for (const char* cause : {"on_cpu", "runnable", "asleep", "blocked"})
      signals_by_cause += (*row)["causes"][cause]["signals"].get<uint64_t>();
    EXPECT_EQ(signals_by_cause, e.delivered + e.sigwait + e.signalfd);
  }
}

TEST(BpfCli, TextShowsTheBackendTheCausesAndTheHistograms) {
  SKIP_UNLESS_ROOT();
  pid_t sender = 0;
  const RunResult r = trace_the_sender({}, sender);
  ASSERT_TRUE(r.success()) << r.describe();
  EXPECT_NE(r.err.find("backend bpf ("), std::string::npos) << r.err;
  EXPECT_NE(r.out.find("(target exited, bpf)"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("Why they waited"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("Delay from generate to take, " + std::to_string(sender)), std::string::npos)
      << r.out;
}

// ---------------------------------------------------------------- fallback

// In a forked child: a seccomp filter that fails bpf(2) with EPERM (as a
// kernel without CAP_BPF for us would), then `body`; what body writes to
// the pipe comes back. The child is killed and reaped after 60 s at most.
std::string with_bpf_refused(const std::function<std::string()>& body, int& exit_code) {
  Pipe result;
  const pid_t pid = ::fork();
  if (pid == 0) {
    ::close(result.read_end);
    sock_filter filter[] = {
        BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(struct seccomp_data, nr)),
        BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, __NR_bpf, 0, 1),
        BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ERRNO | (EPERM & SECCOMP_RET_DATA)),
        BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW),
    };
    sock_fprog program{static_cast<unsigned short>(sizeof filter / sizeof filter[0]), filter};
    if (::prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != 0) ::_exit(30);
    if (::syscall(SYS_seccomp, SECCOMP_SET_MODE_FILTER, 0, &program) != 0) ::_exit(31);
    if (::syscall(SYS_bpf, 0, nullptr, 0) != -1 || errno != EPERM) ::_exit(32);
    const std::string text = body();
    std::size_t done = 0;
    while (done < text.size()) {
      const ssize_t n = ::write(result.write_end, text.data() + done, text.size() - done);
      if (n <= 0) ::_exit(33);
      done += static_cast<std::size_t>(n);
    }
    ::_exit(0);
  }
  Child child(pid);
  ::close(result.write_end);
  result.write_end = -1;
  std::string text;
  const uint64_t deadline = now_ns() + 60'000'000'000ull;
  while (now_ns() < deadline) {
    pollfd p{result.read_end, POLLIN, 0};
    if (::poll(&p, 1, 100) != 1) continue;
    char buffer[4096];
    const ssize_t n = ::read(result.read_end, buffer, sizeof buffer);
    if (n <= 0) break;
    text.append(buffer, static_cast<std::size_t>(n));
  }
  exit_code = child.wait(5);
  return text;
}

TEST(BpfFallback, TheBackendSaysWhyInOneLineWhenBpfIsRefused) {
  SKIP_UNLESS_ROOT();
  int code = -1;
  const std::string why = with_bpf_refused(
      [] {
        try {
          trace::open_backend(trace::BackendKind::bpf, trace::BackendOptions{});
          return std::string("loaded");
        } catch (const trace::BackendUnavailable& e) {
          return std::string(e.what());
        }
      },
      code);
  ASSERT_EQ(code, 0) << why;
  EXPECT_NE(why.find("Operation not permitted"), std::string::npos) << why;
  EXPECT_NE(why.find("CAP_BPF"), std::string::npos) << why;
  EXPECT_EQ(why.find('\n'), std::string::npos) << "not one line: " << why;
}

TEST(BpfFallback, TraceFallsBackToTracefsWithOneLineWhenBpfIsRefused) {
  SKIP_UNLESS_ROOT();
  int code = -1;
  const std::string text = with_bpf_refused(
      [] {
        const RunResult r =
            run_doorbell({"trace", "--json", "--duration", "0.3", "--interval", "0.1"});
        return nlohmann::json{{"code", r.exit_code()}, {"out", r.out}, {"err", r.err}}.dump();
      },
      code);
  ASSERT_EQ(code, 0) << text;
  const auto result = nlohmann::json::parse(text, nullptr, false);
  ASSERT_FALSE(result.is_discarded()) << text;
  EXPECT_EQ(result["code"], 0) << result["err"];
  const std::string err = result["err"];
  EXPECT_NE(err.find("backend tracefs"), std::string::npos) << err;
  EXPECT_NE(err.find("BPF is unavailable"), std::string::npos) << err;
  EXPECT_NE(err.find("Operation not permitted"), std::string::npos) << err;
  const nlohmann::json start = line_of_type(json_lines(result["out"]), "start");
  ASSERT_TRUE(start.is_object()) << result["out"];
  EXPECT_EQ(start["backend"], "tracefs");
  EXPECT_TRUE(start.contains("instance"));
  EXPECT_TRUE(line_of_type(json_lines(result["out"]), "summary").is_object());
}

TEST(BpfFallback, BackendBpfWhenBpfIsRefusedIsAnErrorNamingTheOption) {
  SKIP_UNLESS_ROOT();
  int code = -1;
  const std::string text = with_bpf_refused(
      [] {
        const RunResult r =
            run_doorbell({"trace", "--backend", "bpf", "--duration", "0.3", "--interval", "0.1"});
        return nlohmann::json{{"code", r.exit_code()}, {"err", r.err}}.dump();
      },
      code);
  ASSERT_EQ(code, 0) << text;
  const auto result = nlohmann::json::parse(text, nullptr, false);
  ASSERT_FALSE(result.is_discarded()) << text;
  EXPECT_EQ(result["code"], 2);
  EXPECT_NE(result["err"].get<std::string>().find("--backend bpf"), std::string::npos)
      << result["err"];
}

TEST(BpfCli, BadBackendAndSlowUsAreRefusedNamingTheOption) {
  for (const std::vector<std::string>& args : {std::vector<std::string>{"--backend", "ebpf"},
                                               {"--backend", ""},
                                               {"--slow-us", "-1"},
                                               {"--slow-us", "nan"},
                                               {"--slow-us", "inf"},
                                               {"--slow-us", "1e12"},
                                               {"--slow-us", "x"}}) {
    std::vector<std::string> argv{"trace", "--duration", "0.1"};
    argv.insert(argv.end(), args.begin(), args.end());
    const RunResult r = run_doorbell(argv);
    EXPECT_EQ(r.exit_code(), 2) << args[0] << " " << args[1] << ": " << r.describe();
    EXPECT_NE(r.err.find(args[0]), std::string::npos) << r.err;
  }
}

// ---------------------------------------------------------------- inspect --watch

// A process whose main thread and a peer spin on one CPU (so inspect's
// verdict for SIGUSR1 is "at risk"), and a SCHED_FIFO hog on that CPU that
// sends it SIGUSR1 and keeps the CPU 3 ms each time: the measured watch
// confirms the verdict with runnable waits.
TEST(BpfInspect, WatchConfirmsAtRiskWithMeasuredRunnableWaits) {
  SKIP_UNLESS_ROOT();
  const std::vector<int> cpus = allowed_cpus();
  ASSERT_FALSE(cpus.empty());
  const int cpu = cpus.back();
  SharedWord stop;
  ASSERT_NE(stop.word, nullptr);
  Pipe ready;
  const pid_t target = ::fork();
  if (target == 0) {
    handle(SIGUSR1);
    if (!pin_to(cpu)) ::_exit(10);
    std::thread peer([&] {
      while (stop.word->load(std::memory_order_relaxed) == 0) {
      }
    });
    write_byte(ready.write_end);
    const int code = spin_until_done(*stop.word, 30);
    peer.join();
    ::_exit(code);
  }
  Child child(target);
  ASSERT_TRUE(read_byte(ready.read_end, 30000));
  const pid_t hog_pid = ::fork();
  if (hog_pid == 0) {
    if (!pin_to(cpu) || !fifo(10)) ::_exit(20);
    // Until the test says stop (after inspect returned), 60 s at most.
    const uint64_t end = now_ns() + 60'000'000'000ull;
    while (now_ns() < end && stop.word->load() == 0) {
      sleep_ms(5);
      ::kill(target, SIGUSR1);
      const uint64_t until = now_ns() + 3'000'000;
      while (now_ns() < until) {
      }
    }
    ::_exit(0);
  }
  Child hog(hog_pid);
  const RunResult r = run_doorbell({"inspect", std::to_string(target), "--watch", "1", "--json"});
  stop.word->store(1);
  EXPECT_EQ(hog.wait(10), 0);
  EXPECT_EQ(child.wait(10), 0);
  ASSERT_TRUE(r.success()) << r.describe();
  const auto j = nlohmann::json::parse(r.out, nullptr, false);
  ASSERT_FALSE(j.is_discarded()) << r.out;
  const auto& measured = j["watch"]["measured"];
  ASSERT_EQ(measured["ran"], true) << measured.dump();
  EXPECT_NE(measured["how"].get<std::string>().find("BPF programs attached"), std::string::npos);
  const nlohmann::json* usr1 = nullptr;
  for (const auto& s : measured["signals"])
    if (s["signal"] == SIGUSR1) usr1 = &s;
  ASSERT_NE(usr1, nullptr) << measured.dump();
  EXPECT_EQ((*usr1)["verdict"], "at_risk") << j["signals"].dump();
  EXPECT_EQ((*usr1)["check"].get<std::string>().rfind("confirmed", 0), 0u) << usr1->dump();
  EXPECT_GT((*usr1)["slow"].get<uint64_t>(), 0u);
  EXPECT_GT((*usr1)["causes_ns"]["runnable"].get<uint64_t>(),
            (*usr1)["causes_ns"]["on_cpu"].get<uint64_t>());
  EXPECT_FALSE((*usr1)["slowest"].empty());
}

TEST(BpfFallback, InspectWatchSamplesOnlyAndSaysWhyWhenBpfIsRefused) {
  SKIP_UNLESS_ROOT();
  const pid_t sleeper = ::fork();
  if (sleeper == 0) {
    ::pause();
    ::_exit(0);
  }
  Child child(sleeper);
  int code = -1;
  const std::string text = with_bpf_refused(
      [&] {
        const RunResult r =
            run_doorbell({"inspect", std::to_string(sleeper), "--watch", "0.3", "--json"});
        return nlohmann::json{{"code", r.exit_code()}, {"out", r.out}, {"err", r.err}}.dump();
      },
      code);
  ASSERT_EQ(code, 0) << text;
  const auto result = nlohmann::json::parse(text, nullptr, false);
  ASSERT_FALSE(result.is_discarded()) << text;
  ASSERT_EQ(result["code"], 0) << result["err"];
  const auto j = nlohmann::json::parse(result["out"].get<std::string>(), nullptr, false);
  ASSERT_FALSE(j.is_discarded()) << result["out"];
  EXPECT_EQ(j["watch"]["measured"]["ran"], false);
  EXPECT_NE(j["watch"]["measured"]["how"].get<std::string>().find("Operation not permitted"),
            std::string::npos)
      << j["watch"].dump();
  EXPECT_GT(j["watch"]["samples"].get<int>(), 0);
}

// In a child with a mount namespace of its own where /sys/kernel/btf is an
// empty tmpfs (the system's mounts are untouched): a kernel without BTF, as
// the programs see it.
TEST(BpfFallback, WithoutKernelBtfTraceFallsBackWithOneLine) {
  SKIP_UNLESS_ROOT();
  Pipe result;
  const pid_t pid = ::fork();
  if (pid == 0) {
    ::close(result.read_end);
    if (::unshare(CLONE_NEWNS) != 0) ::_exit(30);
    if (::mount(nullptr, "/", nullptr, MS_REC | MS_PRIVATE, nullptr) != 0) ::_exit(31);
    if (::mount("none", "/sys/kernel/btf", "tmpfs", 0, nullptr) != 0) ::_exit(32);
    std::string why;
    try {
      trace::open_backend(trace::BackendKind::bpf, trace::BackendOptions{});
      why = "loaded";
    } catch (const trace::BackendUnavailable& e) {
      why = e.what();
    }
    const RunResult r = run_doorbell({"trace", "--json", "--duration", "0.2", "--interval", "0.1"});
    const std::string text = nlohmann::json{
        {"why", why},
        {"code", r.exit_code()},
        {"out", r.out},
        {"err", r.err}}.dump();
    ::_exit(::write(result.write_end, text.data(), text.size()) == static_cast<ssize_t>(text.size())
                ? 0
                : 33);
  }
  Child child(pid);
  ::close(result.write_end);
  result.write_end = -1;
  std::string text;
  char buffer[4096];
  while (read_byte(result.read_end, 60000, buffer)) {
    text.push_back(buffer[0]);
    const ssize_t n = ::read(result.read_end, buffer, sizeof buffer);
    if (n > 0) text.append(buffer, static_cast<std::size_t>(n));
  }
  ASSERT_EQ(child.wait(10), 0) << text;
  const auto j = nlohmann::json::parse(text, nullptr, false);
  ASSERT_FALSE(j.is_discarded()) << text;
  EXPECT_NE(j["why"].get<std::string>().find("no BTF"), std::string::npos) << j["why"];
  EXPECT_EQ(j["code"], 0) << j["err"];
  const std::string err = j["err"];
  EXPECT_NE(err.find("backend tracefs"), std::string::npos) << err;
  EXPECT_NE(err.find("this kernel has no BTF"), std::string::npos) << err;
  EXPECT_EQ(line_of_type(json_lines(j["out"]), "start")["backend"], "tracefs");
}

}  // namespace
