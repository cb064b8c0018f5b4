// The e2e lab's kernel events (lab/scenarios/e2e_trace.h) from each source,
// as known answers, against a small target forked here: a process named
// like the lab's target, with a second thread that blocks the signal, whose
// main thread sleeps in pause() until each signal wakes it. For every signal
// sent, each source must give exactly one signal_generate (to the leader)
// and one signal_deliver (in the main thread), and between the send and the
// deliver the main thread's wake-up and its switch onto a CPU, in that
// order: the events the split needs. The target is asleep before each send
// (its voluntary context switches have grown since its last handler ran,
// and it is in state S), so the wake-up and the switch-in must happen;
// nothing here depends on timing.
//
// The sending thread and the target share one CPU: the target then gets it
// from the sender (or whoever ran there), never from the idle task. On this
// VM a switch from idle onto a woken thread is sometimes missing from
// sched_switch in both sources alike (18 signals of 6,400 unpinned; the
// lab's split falls back to the wake-up there, trace_wakeup_fallback).
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <memory>
#include <new>
#include <sstream>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

#include "lab/common/time.h"
#include "lab/scenarios/e2e_trace.h"
#include "lab/trace/bpf/e2e_events.h"
#include "sys/proc.h"
#include "tests/support/files.h"

namespace doorbell::lab::e2e {
namespace {

constexpr int kSignals = 8;
constexpr uint64_t kPatienceNs = 10'000'000'000ull;  // every wait's deadline

// In a MAP_SHARED mapping, shared by the test and its target.
struct TargetShared {
  std::atomic<int> ready{0};
  std::atomic<int> handled{0};
  // The main thread's voluntary context switches when it last handled a
  // signal (or became ready): once /proc shows more, it has slept since.
  std::atomic<long> switches_when_handled{0};
};

TargetShared* g_target = nullptr;  // in the target

long own_voluntary_switches() {
  rusage usage{};
  ::getrusage(RUSAGE_THREAD, &usage);
  return usage.ru_nvcsw;
}

void on_signal(int) {
  const int saved_errno = errno;
  g_target->switches_when_handled.store(own_voluntary_switches());
  g_target->handled.fetch_add(1);
  errno = saved_errno;
}

[[noreturn]] void target_main(TargetShared* shared, int signo) {
  ::prctl(PR_SET_PDEATHSIG, SIGKILL);
  ::prctl(PR_SET_NAME, kTargetComm);
  g_target = shared;
  sigset_t only, previous;
  sigemptyset(&only);
  sigaddset(&only, signo);
  ::pthread_sigmask(SIG_BLOCK, &only, &previous);
  std::thread([] {
    for (;;) ::pause();
  }).detach();  // blocks signo: the kernel picks the main thread
  ::pthread_sigmask(SIG_SETMASK, &previous, nullptr);
  struct sigaction action {};
  action.sa_handler = on_signal;
  sigemptyset(&action.sa_mask);
  if (::sigaction(signo, &action, nullptr) != 0) ::_exit(2);
  shared->switches_when_handled.store(own_voluntary_switches());
  shared->ready.store(1);
  for (;;) ::pause();
}

using doorbell::test::slurp;

// A target process and its shared block; killed and reaped on every path.
class Target {
 public:
  explicit Target(int signo) : signo_(signo) {
    void* memory = ::mmap(nullptr, sizeof(TargetShared), PROT_READ | PROT_WRITE,
                          MAP_SHARED | MAP_ANONYMOUS, -1, 0);
    if (memory == MAP_FAILED) throw std::runtime_error("mmap");
    shared_ = new (memory) TargetShared();
    pid_ = ::fork();
    if (pid_ < 0) throw std::runtime_error("fork");
    if (pid_ == 0) target_main(shared_, signo);
  }
  ~Target() {
    if (pid_ > 0) {
      ::kill(pid_, SIGKILL);
      while (::waitpid(pid_, nullptr, 0) < 0 && errno == EINTR) {
      }
    }
    ::munmap(shared_, sizeof(TargetShared));
  }
  Target(const Target&) = delete;
  Target& operator=(const Target&) = delete;

  pid_t pid() const { return pid_; }

  // Both threads exist and the handler is installed.
  bool wait_ready() const {
    const uint64_t until = monotonic_ns() + kPatienceNs;
    while (shared_->ready.load() == 0 || sys::list_threads(pid_).size() < 2) {
      if (monotonic_ns() >= until) return false;
      sleep_ns(1'000'000);
    }
    return true;
  }

  // The main thread has gone to sleep since it last handled a signal.
  bool wait_asleep() const {
    const std::string task = "/proc/" + std::to_string(pid_) + "/task/" + std::to_string(pid_);
    const uint64_t until = monotonic_ns() + kPatienceNs;
    while (monotonic_ns() < until) {
      const std::string status = slurp(task + "/status");
      const std::string key = "\nvoluntary_ctxt_switches:";
      const std::size_t at = status.find(key);
      const long switches =
          at == std::string::npos ? -1 : std::atol(status.c_str() + at + key.size());
      const std::string stat = slurp(task + "/stat");
      const std::size_t paren = stat.rfind(')');
      const char state =
          paren == std::string::npos || paren + 2 >= stat.size() ? '?' : stat[paren + 2];
      if (switches > shared_->switches_when_handled.load() && state == 'S') return true;
      sleep_ns(1'000'000);
    }
    return false;
  }

  // Sends the signal to the process (sigqueue) once the main thread sleeps,
  // and waits until it was handled. *sent: CLOCK_MONOTONIC before the send.
  ::testing::AssertionResult send_one(uint64_t* sent = nullptr) const {
    if (!wait_asleep()) return ::testing::AssertionFailure() << "the target never went to sleep";
    const int before = shared_->handled.load();
    if (sent != nullptr) *sent = monotonic_ns();
    if (::sigqueue(pid_, signo_, sigval{}) != 0)
      return ::testing::AssertionFailure() << "sigqueue: " << std::strerror(errno);
    const uint64_t until = monotonic_ns() + kPatienceNs;
    while (shared_->handled.load() == before) {
      if (monotonic_ns() >= until)
        return ::testing::AssertionFailure() << "the signal was not handled in 10 s";
      sleep_ns(200'000);
    }
    return ::testing::AssertionSuccess();
  }

 private:
  int signo_;
  TargetShared* shared_ = nullptr;
  pid_t pid_ = -1;
};

void force_source(const char* source) {
  ::setenv(kSourceVariable, source, 1);
}

bool has_kernel_btf() {
  return ::access("/sys/kernel/btf/vmlinux", R_OK) == 0;
}

#define SKIP_UNLESS_ROOT()                               \
  if (::geteuid() != 0) {                                \
    GTEST_SKIP() << "kernel events need root; not root"; \
  }                                                      \
  static_assert(true)

// Pins the calling thread to the CPU it runs on, for its lifetime (a
// process forked meanwhile inherits the pinning); restores the mask after.
class PinnedToThisCpu {
 public:
  PinnedToThisCpu() {
    ok_ = ::pthread_getaffinity_np(::pthread_self(), sizeof previous_, &previous_) == 0;
    cpu_set_t one;
    CPU_ZERO(&one);
    CPU_SET(::sched_getcpu(), &one);
    ok_ = ok_ && ::pthread_setaffinity_np(::pthread_self(), sizeof one, &one) == 0;
  }
  ~PinnedToThisCpu() { ::pthread_setaffinity_np(::pthread_self(), sizeof previous_, &previous_); }
  PinnedToThisCpu(const PinnedToThisCpu&) = delete;
  PinnedToThisCpu& operator=(const PinnedToThisCpu&) = delete;
  bool ok() const { return ok_; }

 private:
  cpu_set_t previous_;
  bool ok_ = false;
};

// Sends kSignals signals to a fresh target traced by the source forced, and
// checks every signal's events (see the file comment).
void every_signal_has_its_events(const char* source, TraceSource expected) {
  const int signo = SIGRTMIN + 4;
  const PinnedToThisCpu pinned;
  ASSERT_TRUE(pinned.ok()) << "sched_setaffinity: " << std::strerror(errno);
  Target target(signo);
  ASSERT_TRUE(target.wait_ready()) << "the target did not start";
  const std::vector<pid_t> tids = sys::list_threads(target.pid());
#if defined(__SANITIZE_THREAD__)
  ASSERT_GE(tids.size(), 2u);  // ThreadSanitizer adds a thread of its own
#else
  ASSERT_EQ(tids.size(), 2u);
#endif
  force_source(source);
  std::string why_not;
  std::unique_ptr<SignalTrace> trace = SignalTrace::start(target.pid(), why_not);
  ASSERT_NE(trace, nullptr) << why_not;
  EXPECT_EQ(trace->source(), expected);
  EXPECT_NE(trace->description().find(std::string("DOORBELL_E2E_TRACE=") + source),
            std::string::npos)
      << trace->description();
  uint64_t sent[kSignals];
  for (int i = 0; i < kSignals; ++i) ASSERT_TRUE(target.send_one(&sent[i])) << "signal " << i;
  const std::vector<TraceEvent> events = trace->stop_and_collect(tids);
  EXPECT_EQ(trace->lost(), 0u);

  const pid_t main_tid = target.pid();
  std::vector<const TraceEvent*> generates, delivers;
  for (const TraceEvent& e : events) {
    EXPECT_NE(std::find(tids.begin(), tids.end(), e.tid), tids.end())
        << "an event of thread " << e.tid;
    if (e.kind == EventKind::generate && e.sig == signo) generates.push_back(&e);
    if (e.kind == EventKind::deliver && e.sig == signo) delivers.push_back(&e);
  }
  // sigqueue(pid) names the leader; the kernel hands it to the main thread,
  // the one thread that does not block it.
  ASSERT_EQ(generates.size(), static_cast<std::size_t>(kSignals));
  ASSERT_EQ(delivers.size(), static_cast<std::size_t>(kSignals));
  int switched_in = 0;
  for (int i = 0; i < kSignals; ++i) {
    SCOPED_TRACE("signal " + std::to_string(i));
    const TraceEvent& generate = *generates[i];
    const TraceEvent& deliver = *delivers[i];
    EXPECT_EQ(generate.tid, main_tid);
    EXPECT_EQ(deliver.tid, main_tid);
    // One clock: the kernel's stamps fall between the send's start and
    // the next send.
    EXPECT_LE(sent[i], generate.ts_ns);
    EXPECT_LE(generate.ts_ns, deliver.ts_ns);
    if (i + 1 < kSignals) {
      EXPECT_LE(deliver.ts_ns, sent[i + 1]);
    }
    // The sleeping main thread was woken, then switched in, between the
    // send's start and the deliver (the kernel wakes the thread before it
    // fires signal_generate, so the wake-up, even the switch-in, may come
    // before the generate).
    const TraceEvent* wakeup = nullptr;
    const TraceEvent* switch_in = nullptr;
    for (const TraceEvent& e : events) {
      if (e.tid != main_tid || e.ts_ns < sent[i] || e.ts_ns > deliver.ts_ns) continue;
      if (e.kind == EventKind::wakeup && wakeup == nullptr) wakeup = &e;
      if (e.kind == EventKind::switch_in && wakeup != nullptr && e.ts_ns >= wakeup->ts_ns)
        switch_in = &e;
    }
    EXPECT_NE(wakeup, nullptr) << "no sched_wakeup of the main thread between send and deliver";
    if (switch_in != nullptr) {
      EXPECT_GE(switch_in->cpu, 0);
      ++switched_in;
    }
  }
  // The switch-in is not certain (see BpfRingBufferFullIsCountedNeverSilent):
  // /proc can show the main thread asleep before it has left its CPU, and the
  // signal then wakes it where it is, with no switch. Seen for one signal of
  // the run in a TSan build under ./run test (about 1 signal in 300 under
  // ASan+UBSan before). Every other signal must show its switch-in.
  EXPECT_GE(switched_in, kSignals - 1) << "switch-ins of the main thread after its wake-ups";
}

TEST(E2eTrace, BpfSourceGivesEverySignalsGenerateWakeupSwitchInAndDeliver) {
  SKIP_UNLESS_ROOT();
  if (!has_kernel_btf()) {
    GTEST_SKIP() << "no /sys/kernel/btf/vmlinux: the BPF source cannot run";
  }
  every_signal_has_its_events("bpf", TraceSource::bpf);
}

TEST(E2eTrace, TracefsSourceGivesEverySignalsGenerateWakeupSwitchInAndDeliver) {
  SKIP_UNLESS_ROOT();
  every_signal_has_its_events("tracefs", TraceSource::tracefs);
}

// The BPF programs filter by tgid in the kernel: a second process with the
// same name, signalled while the first is traced, leaves no event (the
// tracefs source filters by name and would record it).
TEST(E2eTrace, BpfSourceRecordsOnlyTheWatchedProcess) {
  SKIP_UNLESS_ROOT();
  if (!has_kernel_btf()) {
    GTEST_SKIP() << "no /sys/kernel/btf/vmlinux: the BPF source cannot run";
  }
  const int signo = SIGRTMIN + 4;
  Target watched(signo), other(signo);
  ASSERT_TRUE(watched.wait_ready());
  ASSERT_TRUE(other.wait_ready());
  std::vector<pid_t> tids = sys::list_threads(watched.pid());
  const std::vector<pid_t> other_tids = sys::list_threads(other.pid());
  tids.insert(tids.end(), other_tids.begin(), other_tids.end());
  force_source("bpf");
  std::string why_not;
  std::unique_ptr<SignalTrace> trace = SignalTrace::start(watched.pid(), why_not);
  ASSERT_NE(trace, nullptr) << why_not;
  for (int i = 0; i < 3; ++i) ASSERT_TRUE(other.send_one());
  ASSERT_TRUE(watched.send_one());
  const std::vector<TraceEvent> events = trace->stop_and_collect(tids);
  int watched_delivers = 0;
  for (const TraceEvent& e : events) {
    const bool of_other =
        std::find(other_tids.begin(), other_tids.end(), e.tid) != other_tids.end();
    EXPECT_FALSE(of_other) << "an event of the other process's thread " << e.tid;
    if (e.kind == EventKind::deliver && e.sig == signo && e.tid == watched.pid())
      ++watched_delivers;
  }
  EXPECT_EQ(watched_delivers, 1);
}

// The loss counter, with a ring buffer of one page (127 records of 32
// bytes: the kernel keeps one byte free): every signal to the sleeping
// target makes a generate, a wake-up and a deliver record, and nearly always
// a switch-in (the tests above), so 64 signals overflow it; what did not fit
// is counted, and what was read plus what was lost covers every record made.
// The switch-in is not certain: /proc can show the target asleep (State S,
// one more voluntary switch, from another sleep) before it has left its CPU,
// and a signal then wakes it where it is, with no switch. Seen under
// ASan+UBSan in about 1 of 300 runs, with a ring large enough to lose
// nothing: wake-up, generate, deliver, and no switch-in for one signal.
TEST(E2eTrace, BpfRingBufferFullIsCountedNeverSilent) {
  SKIP_UNLESS_ROOT();
  if (!has_kernel_btf()) {
    GTEST_SKIP() << "no /sys/kernel/btf/vmlinux: the BPF source cannot run";
  }
  constexpr int kMany = 64;
  const uint32_t page = static_cast<uint32_t>(::sysconf(_SC_PAGESIZE));
  const int signo = SIGRTMIN + 4;
  Target target(signo);
  ASSERT_TRUE(target.wait_ready());
  trace::bpf::E2eEventPrograms programs(page);
  programs.attach();
  programs.watch(target.pid());
  for (int i = 0; i < kMany; ++i) ASSERT_TRUE(target.send_one()) << "signal " << i;
  programs.watch(0);
  std::size_t generates = 0;
  const std::size_t read = programs.drain([&](const doorbell_e2e_event& e) {
    if (e.kind == DOORBELL_E2E_GENERATE) ++generates;
  });
  const uint64_t lost = programs.take_lost();
  EXPECT_LE(read, page / sizeof(doorbell_e2e_event));
  EXPECT_GT(lost, 0u);
  EXPECT_GE(read + lost, 3u * kMany);
  EXPECT_LT(generates, static_cast<std::size_t>(kMany));
  EXPECT_EQ(programs.take_lost(), 0u) << "take_lost() zeroes the count";
}

TEST(E2eTrace, UnknownSourceIsRefusedNamingTheVariable) {
  force_source("perf");
  std::string why_not;
  try {
    SignalTrace::start(::getpid(), why_not);
    FAIL() << "DOORBELL_E2E_TRACE=perf was accepted";
  } catch (const std::invalid_argument& e) {
    const std::string what = e.what();
    EXPECT_NE(what.find("DOORBELL_E2E_TRACE=perf"), std::string::npos) << what;
    EXPECT_NE(what.find("tracefs, bpf or auto"), std::string::npos) << what;
  }
}

}  // namespace
}  // namespace doorbell::lab::e2e
