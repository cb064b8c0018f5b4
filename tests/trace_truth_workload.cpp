// The workload of tests/trace_truth_test.cpp: one shape of signal traffic
// that a tracer finds hard, with the truth of it printed as one JSON line on
// stdout. Each signal it sends and takes is stamped with its own
// CLOCK_MONOTONIC (the clock of signal_generate's and signal_deliver's
// timestamps): before the send and at the take, so the truth's delay bounds
// the tracer's generate-to-take delay from above.
//
//   trace_truth_workload SHAPE [N]
//
// It waits for one byte on stdin before it starts (the test attaches the
// tracers to its pid first), and exits 0 when every signal came as planned.
// Shapes:
//   discards   a SIGUSR1 made pending (blocked) and discarded by SIG_IGN, and
//              a SIGUSR2 blocked, ignored then unblocked; then N (20) of each
//              sent 20 ms apart, each taken at once by a handler
//   threads    N threads one after the other, each sends itself SIGUSR1
//              (tgkill) once, takes it in a handler and exits
//   rt         N SIGRTMIN queued while blocked, then taken by sigtimedwait
//   group_exit three threads asleep in pause(); the process exits (exit_group)
//   signalfd   N SIGUSR2, each sent while blocked and read from a signalfd
//   thread_exit_pending
//              N threads one after the other, each blocks SIGUSR1, sends it
//              to itself (tgkill: thread-directed, pending) and exits with it
//              pending: discarded, never taken
//   churn      for N seconds (the soak, tests/trace_soak_test.cpp): a thread
//              that sends itself SIGUSR1 (tgkill, taken by a handler) and
//              exits, then a child process that sends itself SIGRTMIN+9
//              (taken by a handler) and exits, over and over; then it
//              writes the truth to the file named by a third argument and
//              waits (at most 60 s) to be killed, so that its row is still
//              live when the tracer stops. The truth's SIGRTMIN+9 is the
//              children's, one each.
//
// The JSON: {"shape", "signals": [{"sig", "sent", "taken", "discarded",
// "max_delay_ns"}]}. Not a test by itself; no gtest.
#include <pthread.h>
#include <signal.h>
#include <sys/resource.h>
#include <sys/signalfd.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <atomic>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <thread>
#include <vector>

namespace {

uint64_t now_ns() {
  timespec ts;
  ::clock_gettime(CLOCK_MONOTONIC, &ts);
  return static_cast<uint64_t>(ts.tv_sec) * 1000000000ull + static_cast<uint64_t>(ts.tv_nsec);
}

struct Truth {
  int sig = 0;
  uint64_t sent = 0, taken = 0, discarded = 0, max_delay_ns = 0;
};

std::string json_of(const char* shape, const std::vector<Truth>& truths) {
  std::string s = std::string("{\"shape\":\"") + shape + "\",\"signals\":[";
  for (std::size_t i = 0; i < truths.size(); ++i) {
    const Truth& t = truths[i];
    char line[256];
    std::snprintf(line, sizeof line,
                  "%s{\"sig\":%d,\"sent\":%llu,\"taken\":%llu,\"discarded\":%llu,"
                  "\"max_delay_ns\":%llu}",
                  i ? "," : "", t.sig, static_cast<unsigned long long>(t.sent),
                  static_cast<unsigned long long>(t.taken),
                  static_cast<unsigned long long>(t.discarded),
                  static_cast<unsigned long long>(t.max_delay_ns));
    s += line;
  }
  return s + "]}";
}

// The handler's stamp: the time and the count of takes, per signal.
std::atomic<uint64_t> g_taken_at[65];
std::atomic<uint64_t> g_taken[65];

extern "C" void stamp(int sig) {
  g_taken_at[sig].store(now_ns(), std::memory_order_relaxed);
  g_taken[sig].fetch_add(1, std::memory_order_relaxed);
}

void set_action(int sig, void (*handler)(int)) {
  struct sigaction sa {};
  sa.sa_handler = handler;
  sigemptyset(&sa.sa_mask);
  ::sigaction(sig, &sa, nullptr);
}

void set_blocked(int sig, bool blocked) {
  sigset_t set;
  sigemptyset(&set);
  sigaddset(&set, sig);
  ::pthread_sigmask(blocked ? SIG_BLOCK : SIG_UNBLOCK, &set, nullptr);
}

// Sends `sig` to this thread and returns the delay until the handler ran
// (the handler runs before tgkill returns: the signal is for this thread,
// which does not block it).
uint64_t send_and_take(int sig) {
  const uint64_t before = now_ns();
  ::syscall(SYS_tgkill, ::getpid(), ::syscall(SYS_gettid), sig);
  return g_taken_at[sig].load(std::memory_order_relaxed) - before;
}

int discards(int n, std::vector<Truth>& out) {
  for (int sig : {SIGUSR1, SIGUSR2}) {
    Truth t{sig};
    set_action(sig, stamp);
    set_blocked(sig, true);
    ::kill(::getpid(), sig);  // pending, process-directed
    ++t.sent;
    if (sig == SIGUSR1) {
      set_action(sig, SIG_IGN);  // discards the pending one
      set_blocked(sig, false);
      set_action(sig, stamp);
    } else {
      set_action(sig, SIG_IGN);  // discards it, blocked as it is
      set_action(sig, stamp);
      set_blocked(sig, false);
    }
    ++t.discarded;
    if (g_taken[sig].load() != 0) return 3;
    for (int i = 0; i < n; ++i) {
      ::usleep(20000);
      const uint64_t d = send_and_take(sig);
      ++t.sent;
      t.max_delay_ns = std::max(t.max_delay_ns, d);
    }
    t.taken = g_taken[sig].load();
    if (t.taken != static_cast<uint64_t>(n)) return 4;
    out.push_back(t);
  }
  return 0;
}

int threads(int n, std::vector<Truth>& out) {
  Truth t{SIGUSR1};
  set_action(SIGUSR1, stamp);
  std::atomic<uint64_t> max_delay{0};
  for (int i = 0; i < n; ++i) {
    std::thread th([&] {
      const uint64_t d = send_and_take(SIGUSR1);
      if (d > max_delay.load()) max_delay.store(d);
    });
    th.join();
    ++t.sent;
  }
  t.taken = g_taken[SIGUSR1].load();
  t.max_delay_ns = max_delay.load();
  out.push_back(t);
  return t.taken == t.sent ? 0 : 5;
}

int rt(int n, std::vector<Truth>& out) {
  const int sig = SIGRTMIN;
  rlimit limit{static_cast<rlim_t>(n) + 1024, static_cast<rlim_t>(n) + 1024};
  ::setrlimit(RLIMIT_SIGPENDING, &limit);  // root may raise it; else the burst fails below
  set_blocked(sig, true);
  Truth t{sig};
  std::vector<uint64_t> sent_at(n);
  const union sigval value {};
  for (int i = 0; i < n; ++i) {
    sent_at[i] = now_ns();
    if (::sigqueue(::getpid(), sig, value) != 0) return 6;
    ++t.sent;
  }
  sigset_t set;
  sigemptyset(&set);
  sigaddset(&set, sig);
  const timespec five_seconds{5, 0};
  for (int i = 0; i < n; ++i) {
    if (::sigtimedwait(&set, nullptr, &five_seconds) != sig) return 7;
    const uint64_t d = now_ns() - sent_at[i];  // real-time signals come in order
    t.max_delay_ns = std::max(t.max_delay_ns, d);
    ++t.taken;
  }
  out.push_back(t);
  return 0;
}

int churn(int seconds, std::vector<Truth>& out) {
  Truth threads{SIGUSR1}, children{SIGRTMIN + 9};
  set_action(SIGUSR1, stamp);
  set_action(SIGRTMIN + 9, stamp);
  const uint64_t end = now_ns() + static_cast<uint64_t>(seconds) * 1000000000ull;
  std::atomic<uint64_t> max_delay{0};
  while (now_ns() < end) {
    std::thread th([&] {
      const uint64_t d = send_and_take(SIGUSR1);
      if (d > max_delay.load()) max_delay.store(d);
    });
    th.join();
    ++threads.sent;
    const pid_t child = ::fork();
    if (child < 0) return 8;
    if (child == 0) {
      ::kill(::getpid(), SIGRTMIN + 9);
      ::_exit(g_taken[SIGRTMIN + 9].load() == 1 ? 0 : 1);
    }
    int status = 0;
    while (::waitpid(child, &status, 0) < 0) {
    }
    if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) return 9;
    ++children.sent;
    ++children.taken;
  }
  threads.taken = g_taken[SIGUSR1].load();
  threads.max_delay_ns = max_delay.load();
  out.push_back(threads);
  out.push_back(children);
  return threads.taken == threads.sent ? 0 : 10;
}

int signalfd_takes(int n, std::vector<Truth>& out) {
  const int sig = SIGUSR2;
  set_blocked(sig, true);
  sigset_t set;
  sigemptyset(&set);
  sigaddset(&set, sig);
  const int fd = ::signalfd(-1, &set, SFD_CLOEXEC);
  if (fd < 0) return 11;
  Truth t{sig};
  for (int i = 0; i < n; ++i) {
    const uint64_t before = now_ns();
    ::kill(::getpid(), sig);
    ++t.sent;
    signalfd_siginfo info;
    if (::read(fd, &info, sizeof info) != static_cast<ssize_t>(sizeof info)) return 12;
    t.max_delay_ns = std::max(t.max_delay_ns, now_ns() - before);
    ++t.taken;
  }
  ::close(fd);
  out.push_back(t);
  return 0;
}

int thread_exit_pending(int n, std::vector<Truth>& out) {
  Truth t{SIGUSR1};
  set_action(SIGUSR1, stamp);
  for (int i = 0; i < n; ++i) {
    std::thread th([] {
      set_blocked(SIGUSR1, true);
      ::syscall(SYS_tgkill, ::getpid(), ::syscall(SYS_gettid), SIGUSR1);
    });
    th.join();
    ++t.sent;
    ++t.discarded;
  }
  t.taken = g_taken[SIGUSR1].load();
  out.push_back(t);
  return t.taken == 0 ? 0 : 13;
}

int group_exit(std::vector<Truth>& out) {
  for (int i = 0; i < 3; ++i) std::thread([] { ::pause(); }).detach();
  ::usleep(20000);
  out.clear();  // sent nothing, took nothing
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 2) {
    std::fprintf(stderr,
                 "usage: trace_truth_workload "
                 "discards|threads|rt|group_exit|signalfd|thread_exit_pending|churn [N] [FILE]\n");
    return 2;
  }
  const std::string shape = argv[1];
  const int n = argc > 2 ? std::atoi(argv[2]) : 20;
  char go;
  if (::read(STDIN_FILENO, &go, 1) != 1) return 2;
  std::vector<Truth> truths;
  int rc = 2;
  if (shape == "discards") rc = discards(n, truths);
  if (shape == "threads") rc = threads(n, truths);
  if (shape == "rt") rc = rt(n, truths);
  if (shape == "group_exit") rc = group_exit(truths);
  if (shape == "signalfd") rc = signalfd_takes(n, truths);
  if (shape == "thread_exit_pending") rc = thread_exit_pending(n, truths);
  if (shape == "churn") {
    rc = churn(n, truths);
    if (argc < 4) return 2;
    FILE* f = std::fopen(argv[3], "w");
    if (f == nullptr) return 2;
    std::fprintf(f, "%s\n", json_of(shape.c_str(), truths).c_str());
    std::fclose(f);
    ::sleep(60);  // killed before: its row stays live while the tracer stops
    return rc;
  }
  std::printf("%s\n", json_of(shape.c_str(), truths).c_str());
  std::fflush(stdout);
  return rc;
}
