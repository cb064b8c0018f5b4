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
//   sigwait    N SIGUSR1 taken by sigwait, all threads blocking it: the
//              first half sent to itself (tgkill) before sigtimedwait (no
//              sigwait waiting: cause blocked), the second half sent to
//              the process (kill) by a second thread while the first waits
//              in sigwaitinfo
//   stopped    a child stops the workload with SIGSTOP, sends it SIGUSR1
//              (a handler) while it is stopped, waits N ms (50) and sends
//              SIGCONT (ignored by default: generated, never taken)
//   kill_stop  N (10) children of three threads each asleep in pause():
//              every other one gets SIGSTOP and is seen stopped (waitpid
//              WUNTRACED); each then gets SIGKILL and is reaped; their
//              entries carry "pid"
//   exec_pending
//              SIGUSR1 blocked and made pending (kill), then execve of
//              /proc/self/exe (comm "exe"): the new image finds it pending
//              and blocked, sets a handler and unblocks it: one generate,
//              one take, the delay spans the exec
//   exec_pending_thread
//              the same, the exec from a second thread, which also has a
//              SIGUSR2 of its own pending (tgkill) and six SIGRTMIN+1
//              (pthread_sigqueue): after the exec it is the process's only
//              thread, with the pid as its tid
//   processes  N (6000) child processes one after the other, each sends
//              itself SIGRTMIN+11 (kill, taken by a handler) and exits;
//              the entry carries "processes": N
//
// The JSON: {"shape", "signals": [{"sig", "sent", "taken", "discarded",
// "max_delay_ns", "min_delay_ns", "pid"}]} ("pid" 0: the workload's;
// "min_delay_ns": a lower bound of every delay, 0 when none is known). Not a
// test by itself; no gtest.
#include <pthread.h>
#include <signal.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <sys/signalfd.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <new>
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
  uint64_t sent = 0, taken = 0, discarded = 0, max_delay_ns = 0, min_delay_ns = 0;
  pid_t pid = 0;  // the receiving process; 0: the workload
};

std::string json_of(const char* shape, const std::vector<Truth>& truths) {
  std::string s = std::string("{\"shape\":\"") + shape + "\",\"signals\":[";
  for (std::size_t i = 0; i < truths.size(); ++i) {
    const Truth& t = truths[i];
    char line[320];
    std::snprintf(line, sizeof line,
                  "%s{\"sig\":%d,\"sent\":%llu,\"taken\":%llu,\"discarded\":%llu,"
                  "\"max_delay_ns\":%llu,\"min_delay_ns\":%llu,\"pid\":%d}",
                  i ? "," : "", t.sig, static_cast<unsigned long long>(t.sent),
                  static_cast<unsigned long long>(t.taken),
                  static_cast<unsigned long long>(t.discarded),
                  static_cast<unsigned long long>(t.max_delay_ns),
                  static_cast<unsigned long long>(t.min_delay_ns), static_cast<int>(t.pid));
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

// Waits (5 s at most) until `sig`'s handler has run `count` times: under
// TSan a handler runs at the runtime's next safe point, not before
// sigprocmask returns (exec_pending_thread exited 27 in the TSan build).
void wait_taken(int sig, uint64_t count) {
  for (int i = 0; i < 5000 && g_taken[sig].load() < count; ++i) ::usleep(1000);
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

// The state letter of a thread ("R", "S", "T", ...) from
// /proc/<pid>/task/<tid>/stat; 0 when it cannot be read.
char state_of(pid_t pid, pid_t tid) {
  std::ifstream in("/proc/" + std::to_string(pid) + "/task/" + std::to_string(tid) + "/stat");
  std::string stat;
  std::getline(in, stat);
  const auto paren = stat.rfind(')');
  return paren == std::string::npos || paren + 2 >= stat.size() ? 0 : stat[paren + 2];
}

// Waits (at most 5 s) until the thread's state is `state`.
bool wait_state(pid_t pid, pid_t tid, char state) {
  const uint64_t deadline = now_ns() + 5000000000ull;
  while (state_of(pid, tid) != state)
    if (now_ns() > deadline)
      return false;
    else
      ::usleep(100);
  return true;
}

int sigwait_takes(int n, std::vector<Truth>& out) {
  const int sig = SIGUSR1;
  set_blocked(sig, true);  // before the second thread starts: it blocks it too
  sigset_t set;
  sigemptyset(&set);
  sigaddset(&set, sig);
  Truth t{sig};
  const pid_t pid = ::getpid();
  const pid_t main_tid = static_cast<pid_t>(::syscall(SYS_gettid));
  const timespec five_seconds{5, 0};
  // Pending before the call: sigtimedwait finds it at once.
  for (int i = 0; i < n / 2; ++i) {
    const uint64_t before = now_ns();
    ::syscall(SYS_tgkill, pid, main_tid, sig);
    ++t.sent;
    if (::sigtimedwait(&set, nullptr, &five_seconds) != sig) return 14;
    t.max_delay_ns = std::max(t.max_delay_ns, now_ns() - before);
    ++t.taken;
  }
  // Sent while the main thread waits in sigwaitinfo.
  std::atomic<int> round{-1};
  std::atomic<uint64_t> sent_at{0};
  std::atomic<bool> failed{false};
  const int rest = n - n / 2;
  std::thread sender([&] {
    for (int i = 0; i < rest; ++i) {
      const uint64_t deadline = now_ns() + 5000000000ull;
      while (round.load() != i && now_ns() < deadline) ::usleep(50);
      if (round.load() != i || !wait_state(pid, main_tid, 'S')) {
        failed = true;
        ::kill(pid, sig);  // wakes the main thread, which then fails
        return;
      }
      sent_at.store(now_ns());
      ::kill(pid, sig);
    }
  });
  for (int i = 0; i < rest; ++i) {
    round.store(i);
    siginfo_t info;
    if (::sigwaitinfo(&set, &info) != sig || failed.load()) {
      sender.join();
      return 15;
    }
    t.max_delay_ns = std::max(t.max_delay_ns, now_ns() - sent_at.load());
    ++t.sent;
    ++t.taken;
  }
  sender.join();
  out.push_back(t);
  return 0;
}

// Shared with a child (MAP_SHARED): a page both write.
template <typename T>
T* shared_page() {
  void* p = ::mmap(nullptr, sizeof(T), PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
  return p == MAP_FAILED ? nullptr : new (p) T{};
}

int stopped(int stop_ms, std::vector<Truth>& out) {
  struct Stamps {
    std::atomic<uint64_t> stop_delay{0}, usr1_before{0}, usr1_after{0}, cont_at{0};
  };
  Stamps* st = shared_page<Stamps>();
  if (st == nullptr) return 16;
  set_action(SIGUSR1, stamp);
  const pid_t parent = ::getpid();
  const pid_t child = ::fork();
  if (child < 0) return 17;
  if (child == 0) {
    const uint64_t before = now_ns();
    ::kill(parent, SIGSTOP);
    if (!wait_state(parent, parent, 'T')) ::_exit(1);
    st->stop_delay = now_ns() - before;
    st->usr1_before = now_ns();
    ::kill(parent, SIGUSR1);
    st->usr1_after = now_ns();
    ::usleep(static_cast<useconds_t>(stop_ms) * 1000);
    st->cont_at = now_ns();
    ::kill(parent, SIGCONT);
    ::_exit(0);
  }
  // Stopped meanwhile; the handler runs after SIGCONT.
  const uint64_t deadline = now_ns() + 10000000000ull;
  while (g_taken[SIGUSR1].load() == 0 && now_ns() < deadline) ::usleep(1000);
  int status = 0;
  while (::waitpid(child, &status, 0) < 0) {
  }
  if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) return 18;
  if (g_taken[SIGUSR1].load() != 1) return 19;
  Truth stop{SIGSTOP, 1, 1, 0, st->stop_delay.load()};
  Truth usr1{SIGUSR1,
             1,
             1,
             0,
             g_taken_at[SIGUSR1].load() - st->usr1_before.load(),
             st->cont_at.load() - st->usr1_after.load()};
  Truth cont{SIGCONT, 1, 0, 0, 0};
  out.push_back(stop);
  out.push_back(usr1);
  out.push_back(cont);
  return 0;
}

int kill_stop(int n, std::vector<Truth>& out) {
  for (int i = 0; i < n; ++i) {
    int ready[2];
    if (::pipe(ready) != 0) return 20;
    const pid_t child = ::fork();
    if (child < 0) return 21;
    if (child == 0) {
      // The two other threads asleep in pause() before the parent sends:
      // the main thread, which kill() names, takes the SIGSTOP (a thread
      // still starting could take it first).
      static std::atomic<pid_t> tids[2];
      for (int k = 0; k < 2; ++k)
        std::thread([k] {
          tids[k] = static_cast<pid_t>(::syscall(SYS_gettid));
          for (;;) ::pause();
        }).detach();
      for (int k = 0; k < 2; ++k) {
        const uint64_t deadline = now_ns() + 5000000000ull;
        while (tids[k].load() == 0 && now_ns() < deadline) ::usleep(100);
        if (!wait_state(::getpid(), tids[k].load(), 'S')) ::_exit(1);
      }
      char one = 1;
      if (::write(ready[1], &one, 1) != 1) ::_exit(1);
      for (;;) ::pause();
    }
    ::close(ready[1]);
    char one;
    const bool up = ::read(ready[0], &one, 1) == 1;
    ::close(ready[0]);
    if (!up) return 22;
    Truth stop{SIGSTOP, 1, 1}, kill{SIGKILL, 1, 1};
    stop.pid = kill.pid = child;
    int status = 0;
    const bool stop_first = i % 2 == 0;  // the others are killed asleep
    if (stop_first) {
      const uint64_t before = now_ns();
      ::kill(child, SIGSTOP);
      while (::waitpid(child, &status, WUNTRACED) < 0) {
      }
      if (!WIFSTOPPED(status)) return 23;
      stop.max_delay_ns = now_ns() - before;
      out.push_back(stop);
    }
    const uint64_t before = now_ns();
    ::kill(child, SIGKILL);
    while (::waitpid(child, &status, 0) < 0) {
    }
    if (!WIFSIGNALED(status) || WTERMSIG(status) != SIGKILL) return 24;
    kill.max_delay_ns = now_ns() - before;
    out.push_back(kill);
  }
  return 0;
}

// The first image of exec_pending: SIGUSR1 blocked and pending, then exec.
int exec_pending(char* argv0) {
  set_blocked(SIGUSR1, true);
  const uint64_t before = now_ns();
  ::kill(::getpid(), SIGUSR1);
  const std::string at = std::to_string(before);
  char after[] = "exec_pending_after";
  char* const args[] = {argv0, after, const_cast<char*>(at.c_str()), nullptr};
  ::execv("/proc/self/exe", args);
  return 25;
}

constexpr int kExecQueued = 6;  // SIGRTMIN+1 queued to the exec'ing thread

// exec_pending_thread: the same from a second thread, with a second signal
// for it alone: SIGUSR1 to the process (kill) and SIGUSR2 to the thread
// (tgkill), both blocked everywhere, then that thread calls execve. The
// kernel kills the main thread, and the thread takes over the process's pid
// (its own tid becomes the pid): both signals survive, SIGUSR2 in its own
// queue.
int exec_pending_thread(char* argv0) {
  const int rt = SIGRTMIN + 1;
  for (int sig : {SIGUSR1, SIGUSR2, rt}) set_blocked(sig, true);
  const uint64_t before = now_ns();
  ::kill(::getpid(), SIGUSR1);
  std::thread([argv0, before, rt] {
    const long tid = ::syscall(SYS_gettid);
    ::syscall(SYS_tgkill, ::getpid(), tid, SIGUSR2);
    // More than the BPF programs keep inline per thread (4): the rest spill.
    const union sigval value {};
    for (int i = 0; i < kExecQueued; ++i)
      if (::pthread_sigqueue(::pthread_self(), rt, value) != 0) ::_exit(25);
    const std::string at = std::to_string(before);
    char after[] = "exec_pending_thread_after";
    char* const args[] = {argv0, after, const_cast<char*>(at.c_str()), nullptr};
    ::execv("/proc/self/exe", args);
    ::_exit(25);
  }).detach();
  for (;;) ::pause();  // killed by the exec
}

// The image after the exec: the signal is still pending and blocked.
int exec_pending_after(uint64_t before, std::vector<Truth>& out) {
  sigset_t pending, blocked;
  ::sigpending(&pending);
  ::pthread_sigmask(SIG_BLOCK, nullptr, &blocked);
  if (!sigismember(&pending, SIGUSR1) || !sigismember(&blocked, SIGUSR1)) return 26;
  set_action(SIGUSR1, stamp);
  set_blocked(SIGUSR1, false);  // taken here, by the handler
  wait_taken(SIGUSR1, 1);
  if (g_taken[SIGUSR1].load() != 1) return 27;
  out.push_back(Truth{SIGUSR1, 1, 1, 0, g_taken_at[SIGUSR1].load() - before});
  return 0;
}

// After exec_pending_thread's exec: SIGUSR1 (the process's) and SIGUSR2 (the
// thread's, sent after `before`) pending and blocked; both taken.
int exec_pending_thread_after(uint64_t before, std::vector<Truth>& out) {
  sigset_t pending, blocked;
  ::sigpending(&pending);
  ::pthread_sigmask(SIG_BLOCK, nullptr, &blocked);
  const int rt = SIGRTMIN + 1;
  for (int sig : {SIGUSR1, SIGUSR2, rt})
    if (!sigismember(&pending, sig) || !sigismember(&blocked, sig)) return 26;
  for (int sig : {SIGUSR1, SIGUSR2, rt}) {
    const uint64_t count = sig == rt ? kExecQueued : 1;
    set_action(sig, stamp);
    set_blocked(sig, false);  // all of them taken before this returns
    wait_taken(sig, count);
    if (g_taken[sig].load() != count) {
      std::fprintf(stderr, "signal %d: taken %llu times, sent %llu\n", sig,
                   static_cast<unsigned long long>(g_taken[sig].load()),
                   static_cast<unsigned long long>(count));
      return 27;
    }
    out.push_back(Truth{sig, count, count, 0, g_taken_at[sig].load() - before});
  }
  return 0;
}

int processes(int n, std::vector<Truth>& out) {
  const int sig = SIGRTMIN + 11;
  auto* max_delay = shared_page<std::atomic<uint64_t>>();
  if (max_delay == nullptr) return 28;
  set_action(sig, stamp);
  Truth t{sig};
  for (int i = 0; i < n; ++i) {
    const pid_t child = ::fork();
    if (child < 0) return 29;
    if (child == 0) {
      const uint64_t d = send_and_take(sig);
      uint64_t seen = max_delay->load();
      while (d > seen && !max_delay->compare_exchange_weak(seen, d)) {
      }
      ::_exit(g_taken[sig].load() == 1 ? 0 : 1);
    }
    int status = 0;
    while (::waitpid(child, &status, 0) < 0) {
    }
    if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) return 30;
    ++t.sent;
    ++t.taken;
  }
  t.max_delay_ns = max_delay->load();
  out.push_back(t);
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 2) {
    std::fprintf(stderr,
                 "usage: trace_truth_workload "
                 "discards|threads|rt|group_exit|signalfd|thread_exit_pending|sigwait|stopped|"
                 "kill_stop|exec_pending|exec_pending_thread|processes|churn [N] [FILE]\n");
    return 2;
  }
  const std::string shape = argv[1];
  std::vector<Truth> truths;
  if (shape == "exec_pending_after") {  // after the exec: no go byte
    const int rc = argc > 2 ? exec_pending_after(std::strtoull(argv[2], nullptr, 10), truths) : 2;
    std::printf("%s\n", json_of("exec_pending", truths).c_str());
    std::fflush(stdout);
    return rc;
  }
  if (shape == "exec_pending_thread_after") {
    const int rc =
        argc > 2 ? exec_pending_thread_after(std::strtoull(argv[2], nullptr, 10), truths) : 2;
    std::printf("%s\n", json_of("exec_pending_thread", truths).c_str());
    std::fflush(stdout);
    return rc;
  }
  const int n = argc > 2 ? std::atoi(argv[2]) : 20;
  char go;
  if (::read(STDIN_FILENO, &go, 1) != 1) return 2;
  int rc = 2;
  if (shape == "discards") rc = discards(n, truths);
  if (shape == "threads") rc = threads(n, truths);
  if (shape == "rt") rc = rt(n, truths);
  if (shape == "group_exit") rc = group_exit(truths);
  if (shape == "signalfd") rc = signalfd_takes(n, truths);
  if (shape == "thread_exit_pending") rc = thread_exit_pending(n, truths);
  if (shape == "sigwait") rc = sigwait_takes(n, truths);
  if (shape == "stopped") rc = stopped(argc > 2 ? n : 50, truths);
  if (shape == "kill_stop") rc = kill_stop(argc > 2 ? n : 10, truths);
  if (shape == "exec_pending") return exec_pending(argv[0]);  // returns only when exec failed
  if (shape == "exec_pending_thread") return exec_pending_thread(argv[0]);
  if (shape == "processes") rc = processes(argc > 2 ? n : 6000, truths);
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
