// SignalReceiver: real signals, real threads. Each TEST runs in its own
// process (ctest), since masks and dispositions are process-wide.
#include "doorbell/signal_receiver.h"

#include <gtest/gtest.h>
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <cstring>
#include <memory>
#include <mutex>
#include <stdexcept>
#include <system_error>
#include <thread>
#include <vector>

#include "doorbell/bell.h"
#include "doorbell/signal_channel.h"
#include "signals/signal_receiver_hooks.h"
#include "sys/proc.h"
#include "tests/signal_test_support.h"

namespace {

using doorbell::SignalReceiver;
using Method = SignalReceiver::Method;

void spin(int iterations) {
  for (int i = 0; i < iterations; ++i) asm volatile("" ::: "memory");
}

// Waits (bounded) until pred() holds.
template <typename Pred>
bool wait_until(Pred pred, std::chrono::milliseconds limit = std::chrono::seconds(10)) {
  const auto deadline = std::chrono::steady_clock::now() + limit;
  while (!pred()) {
    if (std::chrono::steady_clock::now() > deadline) return false;
    std::this_thread::sleep_for(std::chrono::microseconds(200));
  }
  return true;
}

struct Received {
  std::mutex mutex;
  std::vector<int> signals;
  std::vector<intptr_t> values;
  std::vector<pid_t> tids;
  void add(const siginfo_t& info) {
    std::lock_guard lock(mutex);
    signals.push_back(info.si_signo);
    values.push_back(reinterpret_cast<intptr_t>(info.si_value.sival_ptr));
    tids.push_back(doorbell::sys::current_tid());
  }
  std::size_t size() {
    std::lock_guard lock(mutex);
    return signals.size();
  }
};

std::atomic<int> g_handler_runs{0};
void stray_handler(int) {
  g_handler_runs.fetch_add(1, std::memory_order_relaxed);
}

// The receiver gets every process-directed signal while busy and sleeping
// threads block the set; no other thread ever runs a handler for it.
void receives_every_signal(Method method) {
  const int rt = SIGRTMIN + 1;
  // A handler that must never run: it would mean a thread other than the
  // receiver took the signal.
  struct sigaction action {};
  action.sa_handler = stray_handler;
  sigemptyset(&action.sa_mask);
  struct sigaction old_usr1 {
  }, old_rt{};
  ASSERT_EQ(::sigaction(SIGUSR1, &action, &old_usr1), 0);
  ASSERT_EQ(::sigaction(rt, &action, &old_rt), 0);

  const sigset_t previous = doorbell::block_signals_in_this_thread({SIGUSR1, rt});
  std::atomic<bool> stop{false};
  std::vector<std::thread> workers;
  for (int i = 0; i < 3; ++i) {
    workers.emplace_back([&stop, i] {
      while (!stop.load(std::memory_order_relaxed)) {
        if (i == 0) std::this_thread::sleep_for(std::chrono::microseconds(100));
        spin(50000);
      }
    });
  }

  Received received;
  SignalReceiver::Options options;
  options.method = method;
  SignalReceiver receiver(
      {SIGUSR1, rt}, [&](const siginfo_t& info) { received.add(info); }, options);
  EXPECT_TRUE(receiver.verify().empty());

  constexpr int kQueued = 300;
  for (int i = 0; i < kQueued; ++i) {
    sigval value{};
    value.sival_ptr = reinterpret_cast<void*>(static_cast<intptr_t>(i));
    ASSERT_EQ(::sigqueue(::getpid(), rt, value), 0);
  }
  ASSERT_TRUE(wait_until([&] { return received.size() == kQueued; }))
      << "received " << received.size();
  // Standard signals coalesce while pending: send the next only after the
  // previous one arrived, so each must arrive.
  constexpr int kPlain = 20;
  for (int i = 0; i < kPlain; ++i) {
    ASSERT_EQ(::kill(::getpid(), SIGUSR1), 0);
    ASSERT_TRUE(wait_until([&] { return received.size() == kQueued + i + 1u; })) << i;
  }
  receiver.stop();
  stop.store(true);
  for (auto& w : workers) w.join();

  EXPECT_EQ(receiver.received(), static_cast<uint64_t>(kQueued + kPlain));
  EXPECT_EQ(g_handler_runs.load(), 0);
  // Real-time signals queue in order, and one receiver dequeues them in order.
  for (int i = 0; i < kQueued; ++i) {
    EXPECT_EQ(received.signals[i], rt);
    EXPECT_EQ(received.values[i], i);
  }
  for (int i = kQueued; i < kQueued + kPlain; ++i) EXPECT_EQ(received.signals[i], SIGUSR1);
  for (const pid_t tid : received.tids) EXPECT_EQ(tid, receiver.placement().tid);

  doorbell::restore_signal_mask(previous);
  ::sigaction(SIGUSR1, &old_usr1, nullptr);
  ::sigaction(rt, &old_rt, nullptr);
}

TEST(SignalReceiver, SigwaitinfoReceivesEverySignalWhileOtherThreadsBlock) {
  receives_every_signal(Method::sigwaitinfo);
}

TEST(SignalReceiver, SignalfdReceivesEverySignalWhileOtherThreadsBlock) {
  receives_every_signal(Method::signalfd);
}

TEST(SignalReceiver, ReportsThreadsThatDoNotBlockTheSet) {
  const sigset_t previous = doorbell::block_signals_in_this_thread({SIGUSR2});
  std::atomic<pid_t> rogue_tid{0};
  std::atomic<bool> stop{false};
  std::thread rogue([&] {
    sigset_t set;
    sigemptyset(&set);
    sigaddset(&set, SIGUSR2);
    ::pthread_sigmask(SIG_UNBLOCK, &set, nullptr);
    rogue_tid.store(doorbell::sys::current_tid());
    while (!stop.load()) std::this_thread::sleep_for(std::chrono::milliseconds(1));
  });
  std::thread good([&] {
    while (!stop.load()) std::this_thread::sleep_for(std::chrono::milliseconds(1));
  });
  ASSERT_TRUE(wait_until([&] { return rogue_tid.load() != 0; }));

  SignalReceiver receiver({SIGUSR2}, [](const siginfo_t&) {});
  const std::vector<pid_t> offenders = receiver.verify();
  ASSERT_EQ(offenders.size(), 1u);
  EXPECT_EQ(offenders[0], rogue_tid.load());
  stop.store(true);
  rogue.join();
  good.join();
  receiver.stop();
  doorbell::restore_signal_mask(previous);
}

TEST(SignalReceiver, MainThreadThatForgotToBlockIsReportedAndMaskUntouched) {
  sigset_t before;
  ASSERT_EQ(::pthread_sigmask(SIG_SETMASK, nullptr, &before), 0);
  {
    SignalReceiver receiver({SIGUSR1}, [](const siginfo_t&) {});
    const std::vector<pid_t> offenders = receiver.verify();
    ASSERT_EQ(offenders.size(), 1u);
    EXPECT_EQ(offenders[0], ::getpid());  // the main thread's TID is the PID
  }
  sigset_t after;
  ASSERT_EQ(::pthread_sigmask(SIG_SETMASK, nullptr, &after), 0);
  for (int signo = 1; signo < NSIG; ++signo)
    EXPECT_EQ(sigismember(&before, signo), sigismember(&after, signo)) << signo;
}

TEST(SignalReceiver, SignalsAfterStopStayPendingForTheNextReceiver) {
  const int rt = SIGRTMIN + 2;
  const sigset_t previous = doorbell::block_signals_in_this_thread({rt});
  std::atomic<int> first{0};
  SignalReceiver receiver({rt}, [&](const siginfo_t&) { first.fetch_add(1); });
  receiver.stop();
  receiver.stop();  // idempotent
  sigval value{};
  value.sival_int = 7;
  ASSERT_EQ(::sigqueue(::getpid(), rt, value), 0);
  sigset_t pending;
  ASSERT_EQ(::sigpending(&pending), 0);
  EXPECT_EQ(sigismember(&pending, rt), 1);

  std::atomic<int> second_value{-1};
  SignalReceiver next({rt}, [&](const siginfo_t& info) { second_value = info.si_value.sival_int; });
  ASSERT_TRUE(wait_until([&] { return second_value.load() == 7; }));
  next.stop();
  EXPECT_EQ(first.load(), 0);
  doorbell::restore_signal_mask(previous);
}

TEST(SignalReceiver, RingsABellForEachSignal) {
  const sigset_t previous = doorbell::block_signals_in_this_thread({SIGUSR2});
  doorbell::Bell bell(doorbell::Bell::Scope::process_private);
  SignalReceiver::Options options;
  options.bell = &bell;
  SignalReceiver receiver({SIGUSR2}, nullptr, options);  // no callback: the bell alone
  for (int i = 0; i < 5; ++i) {
    ASSERT_EQ(::kill(::getpid(), SIGUSR2), 0);
    ASSERT_TRUE(bell.wait_for(std::chrono::seconds(10))) << i;
    EXPECT_EQ(receiver.received(), static_cast<uint64_t>(i + 1));
  }
  receiver.stop();
  doorbell::restore_signal_mask(previous);
}

TEST(SignalReceiver, RejectsBadArguments) {
  const auto nothing = [](const siginfo_t&) {};
  EXPECT_THROW(SignalReceiver({}, nothing), std::invalid_argument);
  EXPECT_THROW(SignalReceiver({SIGKILL}, nothing), std::invalid_argument);
  EXPECT_THROW(SignalReceiver({SIGSTOP}, nothing), std::invalid_argument);
  EXPECT_THROW(SignalReceiver({SIGSEGV}, nothing), std::invalid_argument);
  EXPECT_THROW(SignalReceiver({0}, nothing), std::invalid_argument);
  EXPECT_THROW(SignalReceiver({NSIG}, nothing), std::invalid_argument);
  EXPECT_THROW(SignalReceiver({32}, nothing), std::invalid_argument);  // glibc's own
  EXPECT_THROW(SignalReceiver({SIGUSR1}, nullptr), std::invalid_argument);
  SignalReceiver::Options options;
  options.fifo_priority = 100;
  EXPECT_THROW(SignalReceiver({SIGUSR1}, nothing, options), std::invalid_argument);
  options.fifo_priority = 0;
  options.cpu = -2;
  EXPECT_THROW(SignalReceiver({SIGUSR1}, nothing, options), std::invalid_argument);
  EXPECT_THROW(doorbell::block_signals_in_this_thread({SIGKILL}), std::invalid_argument);
}

// Issue 36: SIGSYS was refused by SignalReceiver and accepted by
// SignalChannel. One rule for both (refused_signal_reason): SIGSYS is a
// synchronous fault (seccomp's SECCOMP_RET_TRAP, a bad system call), like
// SIGSEGV; and block_signals_in_this_thread is block_signals_before_threads.
TEST(SignalReceiverSetup, RefusesWhatTheChannelRefuses) {
  const auto nothing = [](const siginfo_t&) {};
  for (const int signo : {0, SIGKILL, SIGSTOP, SIGSEGV, SIGBUS, SIGFPE, SIGILL, SIGTRAP, SIGSYS, 32,
                          33, SIGRTMAX + 1}) {
    EXPECT_NE(doorbell::refused_signal_reason(signo), nullptr) << signo;
    EXPECT_THROW(SignalReceiver({signo}, nothing), std::invalid_argument) << signo;
    EXPECT_THROW(doorbell::block_signals_in_this_thread({signo}), std::invalid_argument) << signo;
    EXPECT_THROW(doorbell::block_signals_before_threads({signo}), std::invalid_argument) << signo;
  }
  for (const int signo : {SIGTERM, SIGUSR1, SIGCHLD, SIGRTMIN, SIGRTMAX}) {
    EXPECT_EQ(doorbell::refused_signal_reason(signo), nullptr) << signo;
    const sigset_t previous = doorbell::block_signals_in_this_thread({signo});
    doorbell::restore_signal_mask(previous);
  }
}

// Whether a new thread of this process may switch itself to SCHED_FIFO at
// `priority`, found without the code under test; 0 or the errno.
int fifo_permission(int priority) {
  int result = 0;
  std::thread probe([&] {
    sched_param param{};
    param.sched_priority = priority;
    result = ::pthread_setschedparam(::pthread_self(), SCHED_FIFO, &param);
  });
  probe.join();
  return result;
}

TEST(SignalReceiver, FifoAndPinningWhenPermitted) {
  // The skip's condition comes from our own probe, never from the receiver:
  // where SCHED_FIFO is permitted, a receiver that fails to set it fails.
  if (const int denied = fifo_permission(10); denied != 0)
    GTEST_SKIP() << "SCHED_FIFO not permitted here (probe: " << std::strerror(denied) << ")";
  cpu_set_t allowed;
  ASSERT_EQ(::sched_getaffinity(0, sizeof allowed, &allowed), 0);
  if (!CPU_ISSET(0, &allowed)) GTEST_SKIP() << "CPU 0 is not in this process's affinity mask";
  const sigset_t previous = doorbell::block_signals_in_this_thread({SIGUSR1});
  SignalReceiver::Options options;
  options.fifo_priority = 10;
  options.cpu = 0;
  options.warn_on_stderr = false;
  std::atomic<int> count{0};
  SignalReceiver receiver(
      {SIGUSR1}, [&](const siginfo_t&) { count.fetch_add(1); }, options);
  const auto& placement = receiver.placement();
  ASSERT_TRUE(placement.fifo)
      << "SCHED_FIFO is permitted (probed) but the receiver did not get it: " << placement.warning;
  EXPECT_TRUE(placement.warning.empty()) << placement.warning;
  EXPECT_EQ(placement.priority, 10);
  EXPECT_EQ(placement.cpu, 0);
  EXPECT_EQ(::sched_getscheduler(placement.tid), SCHED_FIFO);
  cpu_set_t cpus;
  ASSERT_EQ(::sched_getaffinity(placement.tid, sizeof cpus, &cpus), 0);
  EXPECT_EQ(CPU_COUNT(&cpus), 1);
  EXPECT_TRUE(CPU_ISSET(0, &cpus));
  ASSERT_EQ(::kill(::getpid(), SIGUSR1), 0);
  EXPECT_TRUE(wait_until([&] { return count.load() == 1; }));
  receiver.stop();
  doorbell::restore_signal_mask(previous);
}

TEST(SignalReceiver, AbsentCpuIsAWarningNotAFailure) {
  SignalReceiver::Options options;
  options.cpu = CPU_SETSIZE + 5;  // never in the allowed set
  options.warn_on_stderr = false;
  SignalReceiver receiver(
      {SIGUSR1}, [](const siginfo_t&) {}, options);
  EXPECT_EQ(receiver.placement().cpu, -1);
  EXPECT_NE(receiver.placement().warning.find("pinning"), std::string::npos);
}

// Without permission for SCHED_FIFO (RLIMIT_RTPRIO 0 and, when root, the
// uid of nobody, which drops CAP_SYS_NICE), the receiver falls back to
// SCHED_OTHER with a warning and still receives; require_fifo throws.
TEST(SignalReceiver, FallsBackWithoutRealtimePermission) {
  const pid_t child = ::fork();
  ASSERT_GE(child, 0);
  if (child == 0) {
    int failures = 0;
    const rlimit zero{0, 0};
    if (::setrlimit(RLIMIT_RTPRIO, &zero) != 0) ::_exit(100);
    if (::geteuid() == 0) {
      if (::setgid(65534) != 0 || ::setuid(65534) != 0) ::_exit(101);
    }
    sched_param probe{};
    probe.sched_priority = 1;
    if (::sched_setscheduler(0, SCHED_FIFO, &probe) == 0) ::_exit(102);  // still permitted
    const sigset_t previous = doorbell::block_signals_in_this_thread({SIGUSR1});
    (void)previous;
    SignalReceiver::Options options;
    options.fifo_priority = 50;
    options.warn_on_stderr = false;
    std::atomic<int> count{0};
    {
      SignalReceiver receiver(
          {SIGUSR1}, [&](const siginfo_t&) { count.fetch_add(1); }, options);
      if (receiver.placement().fifo) failures |= 1;
      if (receiver.placement().warning.find("SCHED_FIFO") == std::string::npos) failures |= 2;
      if (::sched_getscheduler(receiver.placement().tid) != SCHED_OTHER) failures |= 4;
      for (int i = 0; i < 5; ++i) {
        ::kill(::getpid(), SIGUSR1);
        if (!wait_until([&] { return count.load() == i + 1; })) failures |= 8;
      }
    }
    options.require_fifo = true;
    try {
      SignalReceiver strict(
          {SIGUSR1}, [](const siginfo_t&) {}, options);
      failures |= 16;
    } catch (const std::system_error&) {
    }
    ::_exit(failures);
  }
  int status = 0;
  ASSERT_EQ(::waitpid(child, &status, 0), child);
  ASSERT_TRUE(WIFEXITED(status)) << status;
  EXPECT_EQ(WEXITSTATUS(status), 0)
      << "1: fifo granted, 2: no warning, 4: policy not OTHER, "
         "8: signal not received, 16: require_fifo did not throw, "
         "100/101: could not drop permission, 102: FIFO still allowed";
}

// A real signal that wakes the sigwaitinfo receiver after stop() began but
// before stop() sent its wake-up: the thread used to take it, see the stop
// flag and exit, and stop() then aborted on ESRCH from rt_tgsigqueueinfo (or,
// with the TID reused, signalled a stranger). The hook holds stop() at that
// point, sends a process-directed SIGUSR1 and waits until the receiver has
// taken it and either gone back to waiting or exited for good; stop() must
// then return, the signal must reach the callback once, and no wake-up may be
// left pending anywhere.
//
// The hook waits for the callback, not for the next wait: a receiver thread
// still on its way to its first wait when stop() began (a slow start: seen in
// a TSan run of the whole suite) counts that wait before it takes anything,
// and a hook that returned then let stop() queue its wake-up beside the
// real signal; the thread takes thread-directed signals first, left on the
// wake-up, and the real one stayed pending (exit 3). The late-start case
// below holds the thread back from its first wait to make that order certain.
std::atomic<pid_t> g_receiver_tid{0};
std::atomic<int> g_receiver_waits{0};
std::atomic<bool> g_receiver_left{false};
std::atomic<bool> g_hook_timed_out{false};
std::atomic<int> g_receiver_callbacks{0};
std::atomic<int> g_waits_at_callback{0};
std::atomic<bool> g_receiver_late_start{false};

void signal_arrives_before_wake(doorbell::detail::SignalReceiverRacePoint point) noexcept {
  using doorbell::detail::SignalReceiverRacePoint;
  if (point == SignalReceiverRacePoint::receiver_waiting) {
    // Late start: the thread reaches its first wait 100 ms after the
    // constructor returned, counts it, then takes another 100 ms to reach
    // the system call (as a thread preempted on its way would).
    const bool first = g_receiver_waits.load() == 0 && g_receiver_late_start.load();
    if (first) std::this_thread::sleep_for(std::chrono::milliseconds(100));
    g_receiver_waits.fetch_add(1);
    if (first) std::this_thread::sleep_for(std::chrono::milliseconds(100));
  }
  if (point == SignalReceiverRacePoint::receiver_leaving) g_receiver_left.store(true);
  if (point != SignalReceiverRacePoint::stop_before_wake) return;
  ::kill(::getpid(), SIGUSR1);
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(5);
  const auto timed_out = [&] {
    if (std::chrono::steady_clock::now() < deadline) return false;
    g_hook_timed_out.store(true);
    return true;
  };
  // Taken (the callback ran), then either waiting again (it wants the
  // wake-up) or leaving.
  while (g_receiver_callbacks.load() == 0 && !g_receiver_left.load() && !timed_out())
    ::sched_yield();
  while (g_receiver_waits.load() == g_waits_at_callback.load() && !g_receiver_left.load() &&
         !timed_out())
    ::sched_yield();
  if (!g_receiver_left.load()) return;
  // Leaving: wait until the thread is gone from the kernel.
  while (::syscall(SYS_tgkill, ::getpid(), g_receiver_tid.load(), 0) == 0 && !timed_out())
    ::sched_yield();
}

void expect_stop_while_signal_arrives(bool late_start) {
  const auto outcome = doorbell::testing::run_in_child_with_deadline(
      [late_start] {
        const sigset_t previous = doorbell::block_signals_in_this_thread({SIGUSR1});
        (void)previous;
        g_receiver_late_start.store(late_start);
        doorbell::detail::set_signal_receiver_hook(signal_arrives_before_wake);
        std::atomic<int> odd{0};
        SignalReceiver::Options options;
        options.method = Method::sigwaitinfo;
        SignalReceiver receiver(
            {SIGUSR1},
            [&](const siginfo_t& info) {
              g_waits_at_callback.store(g_receiver_waits.load());
              g_receiver_callbacks.fetch_add(1);
              if (info.si_code != SI_USER || info.si_pid != ::getpid()) odd.fetch_add(1);
            },
            options);
        g_receiver_tid.store(receiver.placement().tid);
        receiver.stop();  // aborted here: "rt_tgsigqueueinfo(stop receiver): errno 3"
        doorbell::detail::set_signal_receiver_hook(nullptr);
        if (g_hook_timed_out.load()) return 2;
        if (g_receiver_callbacks.load() != 1 || receiver.received() != 1) return 3;
        if (odd.load() != 0) return 4;  // the wake-up reached the callback
        sigset_t pending;
        if (::sigpending(&pending) != 0 || sigismember(&pending, SIGUSR1) == 1) return 5;
        return 0;
      },
      std::chrono::seconds(20));
  EXPECT_FALSE(outcome.timed_out) << "stop() did not return within 20 s";
  EXPECT_TRUE(WIFEXITED(outcome.status) && WEXITSTATUS(outcome.status) == 0)
      << doorbell::testing::describe_wait_status(outcome.status)
      << " (SIGABRT: stop() aborted on the exited receiver thread; 2: the receiver neither "
         "took the signal nor left; 3: the signal was not received exactly once; 4: the "
         "callback saw something else; 5: a SIGUSR1 was left pending)";
}

TEST(SignalReceiver, StopWhileSignalsArrive_NoAbort) {
  expect_stop_while_signal_arrives(false);
}

TEST(SignalReceiver, StopWhileSignalsArrive_ReceiverLateToItsFirstWait_NoAbortNoneLeft) {
  expect_stop_while_signal_arrives(true);
}

// Issue 33, defect 7: a SignalReceiver destroyed in a forked child (static
// destructors, a scope left before _exit). With sigwaitinfo the child
// aborted (rt_tgsigqueueinfo to the parent's receiver thread: ESRCH); with
// signalfd it wrote the eventfd it shares with the parent, whose receiver
// thread then spun: the fd stayed readable and `stopping` false. Now the
// child's copy is inert; the parent's receiver goes on. In a fresh process
// (the "parent") with a deadline.
// The receiver thread was seen asleep ('S') at least once in 20 looks over
// about 2 s: a spinning thread is always running or runnable ('R').
bool seen_asleep(pid_t tid) {
  for (int look = 0; look < 20; ++look) {
    const auto state = doorbell::sys::read_thread_signal_state(::getpid(), tid);
    if (state && state->state == 'S') return true;
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
  }
  return false;
}

int destroyed_in_forked_child_scenario(Method method) {
  (void)doorbell::block_signals_in_this_thread({SIGUSR1});
  std::atomic<int> callbacks{0};
  SignalReceiver::Options options;
  options.method = method;
  auto receiver = std::make_unique<SignalReceiver>(
      std::vector<int>{SIGUSR1}, [&](const siginfo_t&) { callbacks.fetch_add(1); }, options);
  const pid_t tid = receiver->placement().tid;
  const pid_t child = ::fork();
  if (child < 0) return 10;
  if (child == 0) {
    receiver->stop();  // harmless: the receiver thread is the parent's
    receiver.reset();  // likewise the destructor
    ::_exit(0);
  }
  int status = 0;
  while (::waitpid(child, &status, 0) < 0) {
  }
  if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) return 1;  // the child aborted
  if (!seen_asleep(tid)) return 2;                               // the parent's thread spins
  if (::kill(::getpid(), SIGUSR1) != 0) return 11;
  if (!wait_until([&] { return callbacks.load() == 1; })) return 3;
  receiver->stop();
  return 0;
}

TEST(SignalReceiver, DestroyedInForkedChild_HarmlessParentKeepsReceiving) {
  for (const Method method : {Method::sigwaitinfo, Method::signalfd}) {
    const auto outcome = doorbell::testing::run_in_child_with_deadline(
        [method] { return destroyed_in_forked_child_scenario(method); }, std::chrono::seconds(30));
    const char* name = method == Method::sigwaitinfo ? "sigwaitinfo" : "signalfd";
    EXPECT_FALSE(outcome.timed_out) << name << ": hung";
    EXPECT_TRUE(WIFEXITED(outcome.status) && WEXITSTATUS(outcome.status) == 0)
        << name << ": " << doorbell::testing::describe_wait_status(outcome.status)
        << " (1: the child's destructor aborted; 2: the parent's receiver thread spins; 3: the "
           "parent's receiver no longer receives)";
  }
}

}  // namespace
