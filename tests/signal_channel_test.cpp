// SignalChannel: one typed suite, run against both mechanisms, plus tests of
// what only one mechanism does. ctest runs every TEST in its own process, so
// each starts single-threaded with default dispositions and an empty mask.
#include "doorbell/signal_channel.h"

#include <gtest/gtest.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <limits>
#include <memory>
#include <thread>
#include <vector>

#include "signals/signal_channel_hooks.h"
#include "sys/proc.h"
#include "tests/signal_test_support.h"

using namespace std::chrono_literals;
using doorbell::SignalChannel;
using doorbell::SignalEvent;
using doorbell::SignalMechanism;
using doorbell::testing::run_in_child;

namespace {

// signalfd needs the signals blocked in every thread: the test process is
// single-threaded when a TEST starts, so blocking here is "before threads".
struct SignalfdMechanism {
  static constexpr SignalMechanism kMechanism = SignalMechanism::signalfd;
  static void prepare(const std::vector<int>& signals) {
    doorbell::block_signals_before_threads(signals);
  }
};
struct HandlerMechanism {
  static constexpr SignalMechanism kMechanism = SignalMechanism::handler;
  static void prepare(const std::vector<int>&) {}
};

template <class M>
class SignalChannelTest : public ::testing::Test {
 protected:
  SignalChannel make(const std::vector<int>& signals, SignalChannel::Options options = {}) {
    M::prepare(signals);
    options.mechanism = M::kMechanism;
    return SignalChannel(signals, options);
  }
  static constexpr bool handler() { return M::kMechanism == SignalMechanism::handler; }
};

using Mechanisms = ::testing::Types<SignalfdMechanism, HandlerMechanism>;
class MechanismNames {
 public:
  template <class T>
  static std::string GetName(int) {
    return T::kMechanism == SignalMechanism::signalfd ? "signalfd" : "handler";
  }
};
TYPED_TEST_SUITE(SignalChannelTest, Mechanisms, MechanismNames);

bool readable(int fd, int timeout_ms) {
  pollfd p{fd, POLLIN, 0};
  return ::poll(&p, 1, timeout_ms) == 1 && (p.revents & POLLIN) != 0;
}

int sigqueue_value(int signo, int value) {
  sigval v{};
  v.sival_int = value;
  return ::sigqueue(::getpid(), signo, v);
}

TYPED_TEST(SignalChannelTest, SelfSignalArrivesWithSiginfo) {
  auto channel = this->make({SIGUSR1});
  EXPECT_EQ(channel.mechanism(), TypeParam::kMechanism);
  ASSERT_EQ(::kill(::getpid(), SIGUSR1), 0);
  const auto event = channel.receive(5s);
  ASSERT_TRUE(event.has_value());
  EXPECT_EQ(event->signal, SIGUSR1);
  EXPECT_EQ(event->code, SI_USER);
  EXPECT_EQ(event->sender_pid, ::getpid());
  EXPECT_EQ(event->sender_uid, ::getuid());
  EXPECT_FALSE(event->realtime());
  EXPECT_NE(event->describe().find("SIGUSR1"), std::string::npos);
  EXPECT_FALSE(channel.try_receive().has_value());
}

TYPED_TEST(SignalChannelTest, SigqueueCarriesCodeAndValue) {
  auto channel = this->make({SIGUSR2});
  ASSERT_EQ(sigqueue_value(SIGUSR2, 4242), 0);
  const auto event = channel.receive(5s);
  ASSERT_TRUE(event.has_value());
  EXPECT_EQ(event->code, SI_QUEUE);
  EXPECT_EQ(static_cast<int>(event->value), 4242);
}

TYPED_TEST(SignalChannelTest, RealtimeInstancesAreOneEventEachInOrder) {
  DOORBELL_SKIP_IF_SANITIZER_MERGES_SIGNALS(this->handler());
  const int signo = SIGRTMIN + 1;
  auto channel = this->make({signo});
  constexpr int kCount = 200;
  for (int i = 0; i < kCount; ++i) ASSERT_EQ(sigqueue_value(signo, i), 0) << i;
  for (int i = 0; i < kCount; ++i) {
    const auto event = channel.receive(5s);
    ASSERT_TRUE(event.has_value()) << "instance " << i << " missing";
    EXPECT_TRUE(event->realtime());
    EXPECT_EQ(static_cast<int>(event->value), i);
    EXPECT_EQ(event->coalesced, 0u);
  }
  EXPECT_FALSE(channel.try_receive().has_value());
  const auto stats = channel.stats();
  EXPECT_EQ(stats.signals, static_cast<uint64_t>(kCount));
  EXPECT_EQ(stats.events, static_cast<uint64_t>(kCount));
  EXPECT_EQ(stats.overflowed, 0u);
}

TYPED_TEST(SignalChannelTest, StandardSignalsCoalesceAtLeastOnePerBurst) {
  auto channel = this->make({SIGUSR1});
  constexpr int kBurst = 10;
  for (int i = 0; i < kBurst; ++i) ASSERT_EQ(::kill(::getpid(), SIGUSR1), 0);
  std::vector<SignalEvent> events;
  while (auto e = channel.receive(events.empty() ? 5s : 0s)) events.push_back(*e);
  ASSERT_GE(events.size(), 1u);
  uint64_t accounted = 0;
  for (const auto& e : events) accounted += 1 + e.coalesced;
  EXPECT_LE(accounted, static_cast<uint64_t>(kBurst));
  if (this->handler()) {
    // Each kill to ourselves runs the handler before kill returns, so the
    // channel saw all ten and merged nine into the first event.
    EXPECT_EQ(events.size(), 1u);
    EXPECT_EQ(accounted, static_cast<uint64_t>(kBurst));
    EXPECT_EQ(channel.stats().coalesced, static_cast<uint64_t>(kBurst - 1));
  } else {
    // The signal is blocked: the kernel keeps one pending, merges the rest.
    EXPECT_EQ(events.size(), 1u);
  }
}

TYPED_TEST(SignalChannelTest, FdIsLevelTriggered) {
  auto channel = this->make({SIGUSR1, SIGUSR2});
  EXPECT_FALSE(readable(channel.fd(), 0));
  ASSERT_EQ(::kill(::getpid(), SIGUSR1), 0);
  ASSERT_EQ(::kill(::getpid(), SIGUSR2), 0);
  EXPECT_TRUE(readable(channel.fd(), 5000));
  ASSERT_TRUE(channel.try_receive().has_value());
  EXPECT_TRUE(readable(channel.fd(), 0)) << "one event still pending";
  ASSERT_TRUE(channel.try_receive().has_value());
  EXPECT_FALSE(channel.try_receive().has_value());
  EXPECT_FALSE(readable(channel.fd(), 0));
}

TYPED_TEST(SignalChannelTest, DispatchRunsCallbackOnCallingThread) {
  DOORBELL_SKIP_IF_SANITIZER_MERGES_SIGNALS(this->handler());
  auto channel = this->make({SIGRTMIN + 3});
  for (int i = 0; i < 5; ++i) ASSERT_EQ(sigqueue_value(SIGRTMIN + 3, i), 0);
  ASSERT_TRUE(readable(channel.fd(), 5000));
  const auto caller = std::this_thread::get_id();
  std::vector<int> seen;
  const std::size_t n = channel.dispatch([&](const SignalEvent& e) {
    EXPECT_EQ(std::this_thread::get_id(), caller);
    seen.push_back(static_cast<int>(e.value));
  });
  EXPECT_EQ(n, 5u);
  EXPECT_EQ(seen, (std::vector<int>{0, 1, 2, 3, 4}));
}

TYPED_TEST(SignalChannelTest, EventsFromAnotherThreadAllArrive) {
  DOORBELL_SKIP_IF_SANITIZER_MERGES_SIGNALS(this->handler());
  const int signo = SIGRTMIN + 4;
  auto channel = this->make({signo});
  constexpr int kCount = 500;
  std::thread sender([&] {
    for (int i = 0; i < kCount; ++i) {
      while (sigqueue_value(signo, i) != 0) std::this_thread::yield();  // EAGAIN: queue full
    }
  });
  std::vector<int> values;
  while (static_cast<int>(values.size()) < kCount) {
    const auto event = channel.receive(10s);
    if (!event) break;
    values.push_back(static_cast<int>(event->value));
  }
  sender.join();
  ASSERT_EQ(static_cast<int>(values.size()), kCount) << "stalled";
  // With the handler, the sender's and this thread may both run handlers and
  // swap neighbours; signalfd reads the kernel's queue in order.
  if (!this->handler()) {
    for (int i = 0; i < kCount; ++i) EXPECT_EQ(values[i], i);
  }
  std::sort(values.begin(), values.end());
  for (int i = 0; i < kCount; ++i) EXPECT_EQ(values[i], i) << "missing or doubled";
}

TYPED_TEST(SignalChannelTest, SigchldCarriesChildStatus) {
  auto channel = this->make({SIGCHLD});
  const pid_t child = ::fork();
  ASSERT_GE(child, 0);
  if (child == 0) ::_exit(7);
  const auto event = channel.receive(10s);
  ASSERT_TRUE(event.has_value());
  EXPECT_EQ(event->signal, SIGCHLD);
  EXPECT_EQ(event->code, CLD_EXITED);
  EXPECT_EQ(event->sender_pid, child);
  EXPECT_EQ(event->status, 7);
  EXPECT_EQ(event->value, 0u);
  int status;
  ASSERT_EQ(::waitpid(child, &status, 0), child);
}

TYPED_TEST(SignalChannelTest, StopKeepsEarlierEventsAndTakesNoMore) {
  const int signo = SIGRTMIN + 5;
  // Ignore the signal before the channel, so that what arrives after stop()
  // is dropped by the restored disposition instead of killing us.
  ::signal(signo, SIG_IGN);
  auto channel = this->make({signo});
  // Positive control for the check after stop(): the same 50 ms wait sees a
  // signal sent the same way. A signal sent to oneself is recorded (or
  // pending in the kernel) before sigqueue() returns, so the wait's length
  // is not what makes the later check pass.
  ASSERT_EQ(sigqueue_value(signo, 0), 0);
  const auto control = channel.receive(50ms);
  ASSERT_TRUE(control.has_value()) << "the wait used below misses a signal that did arrive";
  EXPECT_EQ(control->value, 0u);
  ASSERT_EQ(sigqueue_value(signo, 1), 0);
  ASSERT_TRUE(readable(channel.fd(), 5000));
  channel.stop();
  EXPECT_TRUE(channel.stopped());
  ASSERT_EQ(sigqueue_value(signo, 2), 0);
  const auto first = channel.try_receive();
  ASSERT_TRUE(first.has_value()) << "an event recorded before stop() must stay readable";
  EXPECT_EQ(first->value, 1u);
  EXPECT_FALSE(channel.receive(50ms).has_value()) << "no event may be recorded after stop()";
  if (!this->handler()) {
    // signalfd: the later signal waits in the kernel, still blocked.
    sigset_t pending;
    sigpending(&pending);
    EXPECT_EQ(sigismember(&pending, signo), 1);
  }
}

TYPED_TEST(SignalChannelTest, StopRestoresDispositionExactly) {
  struct sigaction before {};
  before.sa_handler = [](int) {};
  before.sa_flags = SA_RESTART | SA_NODEFER;
  sigemptyset(&before.sa_mask);
  sigaddset(&before.sa_mask, SIGQUIT);
  sigaddset(&before.sa_mask, SIGRTMIN + 7);
  ASSERT_EQ(::sigaction(SIGHUP, &before, nullptr), 0);
  struct sigaction reported_before;
  ASSERT_EQ(::sigaction(SIGHUP, nullptr, &reported_before), 0);
  {
    auto channel = this->make({SIGHUP});
    struct sigaction during;
    ASSERT_EQ(::sigaction(SIGHUP, nullptr, &during), 0);
    if (this->handler()) {
      EXPECT_NE(during.sa_handler, reported_before.sa_handler);
    }
    channel.stop();
  }
  struct sigaction after;
  ASSERT_EQ(::sigaction(SIGHUP, nullptr, &after), 0);
  EXPECT_EQ(after.sa_handler, reported_before.sa_handler);
  EXPECT_EQ(after.sa_flags, reported_before.sa_flags);
  for (int s = 1; s < NSIG; ++s) {
    EXPECT_EQ(sigismember(&after.sa_mask, s), sigismember(&reported_before.sa_mask, s)) << s;
  }
}

TYPED_TEST(SignalChannelTest, MasksOfEveryThreadUnchanged) {
  TypeParam::prepare({SIGTERM, SIGUSR1});
  std::atomic<bool> done{false};
  std::atomic<bool> started{false};
  std::thread helper([&] {
    started = true;
    while (!done.load()) std::this_thread::sleep_for(1ms);
  });
  while (!started.load()) std::this_thread::yield();  // its real mask is set by now
  auto read_masks = [] {
    std::vector<std::pair<pid_t, std::string>> masks;
    for (pid_t tid : doorbell::sys::list_threads(::getpid())) {
      const auto state = doorbell::sys::read_thread_signal_state(::getpid(), tid);
      if (!state) continue;
      std::string bits;
      for (int s = 1; s < NSIG; ++s) bits += sigismember(&state->blocked, s) ? '1' : '0';
      masks.emplace_back(tid, bits);
    }
    return masks;
  };
  const auto before = read_masks();
  {
    auto channel = this->make({SIGTERM, SIGUSR1});
    EXPECT_EQ(read_masks(), before);
    channel.stop();
  }
  EXPECT_EQ(read_masks(), before);
  done = true;
  helper.join();
}

TYPED_TEST(SignalChannelTest, UseInForkedChildIsReported) {
  auto channel = this->make({SIGUSR1});
  const int status = run_in_child([&] {
    try {
      (void)channel.try_receive();
    } catch (const doorbell::ForkedChannelError&) {
      return 0;
    }
    return 1;
  });
  ASSERT_TRUE(WIFEXITED(status)) << doorbell::testing::describe_wait_status(status);
  EXPECT_EQ(WEXITSTATUS(status), 0) << "the child used the parent's channel unnoticed";
  // The parent's channel still works.
  ASSERT_EQ(::kill(::getpid(), SIGUSR1), 0);
  EXPECT_TRUE(channel.receive(5s).has_value());
}

TYPED_TEST(SignalChannelTest, RefusedSignalsThrow) {
  for (const int signo :
       {0, SIGKILL, SIGSTOP, SIGSEGV, SIGBUS, SIGFPE, SIGILL, SIGTRAP, SIGSYS, 32, 33, SIGRTMAX + 1,
        -1}) {
    SignalChannel::Options options;
    options.mechanism = TypeParam::kMechanism;
    EXPECT_THROW(SignalChannel({signo}, options), std::invalid_argument) << signo;
    EXPECT_NE(doorbell::refused_signal_reason(signo), nullptr) << signo;
  }
  EXPECT_EQ(doorbell::refused_signal_reason(SIGRTMIN), nullptr);
  EXPECT_EQ(doorbell::refused_signal_reason(SIGTERM), nullptr);
  SignalChannel::Options options;
  options.mechanism = TypeParam::kMechanism;
  EXPECT_THROW(SignalChannel(std::vector<int>{}, options), std::invalid_argument);
}

// ---------------------------------------------------------------- spinning

// The spin tests run the receiver on this thread and a sender thread that
// sends SIGUSR1 with kill(getpid()) when the receiver reaches a point of
// SignalChannel::receive() (signal_channel_hooks.h): the start of the spin,
// or the poll(2) it sleeps in. So "sent during the spin" and "sent after the
// spin gave up" are facts of the test, not hopes about timing.
using doorbell::detail::SignalChannelRacePoint;

std::atomic<int> g_spin_starts{0};
std::atomic<int> g_sleeps{0};
std::atomic<SignalChannelRacePoint> g_send_at{SignalChannelRacePoint::receive_spin_start};
std::atomic<bool> g_go{false};

void count_receive_points(SignalChannelRacePoint point, int) noexcept {
  if (point == SignalChannelRacePoint::receive_spin_start) g_spin_starts.fetch_add(1);
  if (point == SignalChannelRacePoint::receive_before_sleep) g_sleeps.fetch_add(1);
  if (point == g_send_at.load() && !g_go.exchange(true)) g_go.notify_one();
}

// The sender thread and the masks. signalfd: SIGUSR1 blocked in every thread
// (before the sender starts). handler: the sender leaves it unblocked and this
// thread blocks it, so the kernel runs the handler on the sender thread, on
// another CPU when there is one: the case a spin is for.
class SpinRig {
 public:
  SpinRig(SignalMechanism mechanism, SignalChannelRacePoint send_at,
          std::chrono::milliseconds delay) {
    g_send_at.store(send_at);
    if (mechanism == SignalMechanism::signalfd) doorbell::block_signals_before_threads({kSignal});
    sender_ = std::thread([this, delay] {
      started_.store(true);
      started_.notify_one();
      g_go.wait(false);
      if (cancelled_.load()) return;
      std::this_thread::sleep_for(delay);
      ASSERT_EQ(::kill(::getpid(), kSignal), 0);
    });
    // glibc starts a thread with every signal blocked and sets its mask
    // inside the new thread: until then the handler mechanism's check would
    // see no thread that takes the signal.
    started_.wait(false);
    if (mechanism == SignalMechanism::handler) {
      sigset_t set;
      sigemptyset(&set);
      sigaddset(&set, kSignal);
      ::pthread_sigmask(SIG_BLOCK, &set, nullptr);
    }
    doorbell::detail::set_signal_channel_hook(count_receive_points);
  }
  // Joins the sender; one that was never released sends nothing.
  void finish() {
    if (!sender_.joinable()) return;
    doorbell::detail::set_signal_channel_hook(nullptr);
    if (!g_go.exchange(true)) {
      cancelled_.store(true);
      g_go.notify_one();
    }
    sender_.join();
  }
  ~SpinRig() { finish(); }

  static constexpr int kSignal = SIGUSR1;

 private:
  std::atomic<bool> started_{false};
  std::atomic<bool> cancelled_{false};
  std::thread sender_;
};

constexpr SignalChannel::Spin kSpinUntilDeadline{UINT32_MAX};

TYPED_TEST(SignalChannelTest, SpinTakesAnEventSentDuringTheSpin) {
  SpinRig rig(TypeParam::kMechanism, SignalChannelRacePoint::receive_spin_start, 20ms);
  auto channel = this->make({SpinRig::kSignal});
  const auto start = std::chrono::steady_clock::now();
  const auto event = channel.receive(10s, kSpinUntilDeadline);
  const auto elapsed = std::chrono::steady_clock::now() - start;
  rig.finish();
  ASSERT_TRUE(event.has_value()) << "the spin missed the event and the sleep timed out";
  EXPECT_EQ(event->signal, SIGUSR1);
  EXPECT_EQ(g_spin_starts.load(), 1);
  EXPECT_EQ(g_sleeps.load(), 0) << "took the event after sleeping, not in the spin";
  EXPECT_GE(elapsed, 20ms);  // the sender waited that long after the spin started
}

TYPED_TEST(SignalChannelTest, OptionsSpinIsTheBudgetOfReceive) {
  SpinRig rig(TypeParam::kMechanism, SignalChannelRacePoint::receive_spin_start, 0ms);
  SignalChannel::Options options;
  options.spin = kSpinUntilDeadline;
  auto channel = this->make({SpinRig::kSignal}, options);
  const auto event = channel.receive(10s);
  rig.finish();
  ASSERT_TRUE(event.has_value());
  EXPECT_EQ(g_spin_starts.load(), 1);
  EXPECT_EQ(g_sleeps.load(), 0);
}

TYPED_TEST(SignalChannelTest, ZeroSpinSleepsAsBefore) {
  SpinRig rig(TypeParam::kMechanism, SignalChannelRacePoint::receive_before_sleep, 20ms);
  auto channel = this->make({SpinRig::kSignal});
  const auto start = std::chrono::steady_clock::now();
  const auto event = channel.receive(10s, SignalChannel::Spin{0});
  const auto elapsed = std::chrono::steady_clock::now() - start;
  rig.finish();
  ASSERT_TRUE(event.has_value());
  EXPECT_EQ(event->signal, SIGUSR1);
  EXPECT_EQ(g_spin_starts.load(), 0) << "Spin{0} spun";
  EXPECT_GE(g_sleeps.load(), 1);
  EXPECT_GE(elapsed, 20ms);
  // The default options spin neither.
  EXPECT_FALSE(channel.receive(1ms).has_value());
  EXPECT_EQ(g_spin_starts.load(), 0);
}

TYPED_TEST(SignalChannelTest, SpinThatSeesNothingFallsBackToSleep) {
  SpinRig rig(TypeParam::kMechanism, SignalChannelRacePoint::receive_before_sleep, 50ms);
  auto channel = this->make({SpinRig::kSignal});
  const auto start = std::chrono::steady_clock::now();
  const auto event = channel.receive(10s, SignalChannel::Spin{1000});
  const auto elapsed = std::chrono::steady_clock::now() - start;
  rig.finish();
  ASSERT_TRUE(event.has_value()) << "lost the event sent after the spin";
  EXPECT_EQ(event->signal, SIGUSR1);
  EXPECT_EQ(g_spin_starts.load(), 1);
  EXPECT_GE(g_sleeps.load(), 1);
  EXPECT_GE(elapsed, 50ms);
}

TYPED_TEST(SignalChannelTest, SpinEndsAtTheDeadline) {
  // UINT32_MAX iterations would spin for minutes (hours with signalfd):
  // the deadline must end it. In a child with a watchdog, so that a spin
  // that ignores it fails instead of hanging.
  const auto outcome = doorbell::testing::run_in_child_with_deadline(
      [&] {
        auto channel = this->make({SIGUSR1});  // a channel belongs to its process
        const auto start = std::chrono::steady_clock::now();
        if (channel.receive(50ms, kSpinUntilDeadline).has_value()) return 1;
        return std::chrono::steady_clock::now() - start >= 50ms ? 0 : 2;
      },
      5s);
  ASSERT_FALSE(outcome.timed_out) << "the spin ignored receive()'s deadline";
  ASSERT_TRUE(WIFEXITED(outcome.status)) << doorbell::testing::describe_wait_status(outcome.status);
  EXPECT_EQ(WEXITSTATUS(outcome.status), 0);
}

TYPED_TEST(SignalChannelTest, StoppedChannelDoesNotSpin) {
  auto channel = this->make({SIGUSR1});
  doorbell::detail::set_signal_channel_hook(count_receive_points);
  channel.stop();
  EXPECT_FALSE(channel.receive(10s, kSpinUntilDeadline).has_value());
  doorbell::detail::set_signal_channel_hook(nullptr);
  EXPECT_EQ(g_spin_starts.load(), 0);
}

// ---------------------------------------------------------------- mechanism-specific

TEST(SignalChannelAutomatic, ChoosesSignalfdWhenBlockedEverywhereElseHandler) {
  {
    SignalChannel channel({SIGUSR1});
    EXPECT_EQ(channel.mechanism(), SignalMechanism::handler);
  }
  doorbell::block_signals_before_threads({SIGUSR2});
  SignalChannel channel({SIGUSR2});
  EXPECT_EQ(channel.mechanism(), SignalMechanism::signalfd);
}

TEST(SignalChannelSignalfd, RefusesWhenAThreadLeavesTheSignalUnblocked) {
  std::atomic<bool> done{false};
  std::atomic<bool> started{false};
  std::thread unblocked([&] {
    started = true;
    while (!done.load()) std::this_thread::sleep_for(1ms);
  });
  // glibc creates a thread with every signal blocked and sets its real mask
  // when it starts running: wait for that.
  while (!started.load()) std::this_thread::yield();
  doorbell::block_signals_before_threads({SIGUSR1});  // too late: the thread leaves it open
  SignalChannel::Options options;
  options.mechanism = SignalMechanism::signalfd;
  try {
    SignalChannel channel({SIGUSR1}, options);
    ADD_FAILURE() << "accepted a signal that a thread leaves unblocked";
  } catch (const std::invalid_argument& e) {
    EXPECT_NE(std::string(e.what()).find("does not block SIGUSR1"), std::string::npos) << e.what();
  }
  done = true;
  unblocked.join();
}

TEST(SignalChannelHandler, RefusesWhenEveryThreadBlocksTheSignal) {
  doorbell::block_signals_before_threads({SIGUSR1});
  SignalChannel::Options options;
  options.mechanism = SignalMechanism::handler;
  EXPECT_THROW(SignalChannel({SIGUSR1}, options), std::invalid_argument);
}

std::atomic<int> g_previous_runs{0};

TEST(SignalChannelHandler, ChainedPreviousHandlerKeepsWorking) {
  struct sigaction previous {};
  previous.sa_handler = [](int) { g_previous_runs.fetch_add(1); };
  sigemptyset(&previous.sa_mask);
  ASSERT_EQ(::sigaction(SIGUSR1, &previous, nullptr), 0);
  SignalChannel::Options options;
  options.mechanism = SignalMechanism::handler;
  SignalChannel channel({SIGUSR1}, options);
  ASSERT_EQ(::kill(::getpid(), SIGUSR1), 0);
  EXPECT_TRUE(channel.receive(5s).has_value());
  EXPECT_EQ(g_previous_runs.load(), 1);
  channel.stop();
  ASSERT_EQ(::kill(::getpid(), SIGUSR1), 0);
  EXPECT_EQ(g_previous_runs.load(), 2);
  EXPECT_FALSE(channel.try_receive().has_value());
}

TEST(SignalChannelHandler, NoChainWhenAsked) {
  struct sigaction previous {};
  previous.sa_handler = [](int) { g_previous_runs.fetch_add(1); };
  sigemptyset(&previous.sa_mask);
  ASSERT_EQ(::sigaction(SIGUSR1, &previous, nullptr), 0);
  SignalChannel::Options options;
  options.mechanism = SignalMechanism::handler;
  options.chain_previous = false;
  SignalChannel channel({SIGUSR1}, options);
  ASSERT_EQ(::kill(::getpid(), SIGUSR1), 0);
  EXPECT_TRUE(channel.receive(5s).has_value());
  EXPECT_EQ(g_previous_runs.load(), 0);
}

TEST(SignalChannelHandler, TwoChannelsOnOneSignalBothReceive) {
  SignalChannel::Options options;
  options.mechanism = SignalMechanism::handler;
  SignalChannel a({SIGUSR1, SIGUSR2}, options);
  SignalChannel b({SIGUSR1}, options);
  ASSERT_EQ(::kill(::getpid(), SIGUSR1), 0);
  EXPECT_TRUE(a.receive(5s).has_value());
  EXPECT_TRUE(b.receive(5s).has_value());
  b.stop();
  // a still watches SIGUSR1: our handler must still be installed.
  ASSERT_EQ(::kill(::getpid(), SIGUSR1), 0);
  EXPECT_TRUE(a.receive(5s).has_value());
  a.stop();
  struct sigaction after;
  ::sigaction(SIGUSR1, nullptr, &after);
  EXPECT_EQ(after.sa_handler, SIG_DFL);
}

TEST(SignalChannelHandler, ForeignHandlerInstalledMeanwhileIsLeftAlone) {
  SignalChannel::Options options;
  options.mechanism = SignalMechanism::handler;
  SignalChannel channel({SIGUSR2}, options);
  struct sigaction theirs {};
  theirs.sa_handler = [](int) { g_previous_runs.fetch_add(1); };
  sigemptyset(&theirs.sa_mask);
  ASSERT_EQ(::sigaction(SIGUSR2, &theirs, nullptr), 0);
  channel.stop();
  struct sigaction after;
  ::sigaction(SIGUSR2, nullptr, &after);
  EXPECT_EQ(after.sa_handler, theirs.sa_handler);
}

// No atomic compare-and-swap of a disposition exists: stop() reads the
// current one, finds it ours, then restores the previous one. Another
// library's sigaction() in between must not be undone. The hook installs the
// foreign handler exactly there.
std::atomic<int> g_foreign_runs{0};
void foreign_handler(int) {
  g_foreign_runs.fetch_add(1);
}
void install_foreign_during_stop(doorbell::detail::SignalChannelRacePoint point,
                                 int signo) noexcept {
  if (point != doorbell::detail::SignalChannelRacePoint::stop_before_restore) return;
  struct sigaction theirs {};
  theirs.sa_handler = foreign_handler;
  theirs.sa_flags = SA_RESTART;
  sigemptyset(&theirs.sa_mask);
  ::sigaction(signo, &theirs, nullptr);
}

TEST(SignalChannelHandler, StopLeavesForeignDispositionAlone) {
  SignalChannel::Options options;
  options.mechanism = SignalMechanism::handler;
  SignalChannel channel({SIGUSR2}, options);
  doorbell::detail::set_signal_channel_hook(install_foreign_during_stop);
  channel.stop();
  doorbell::detail::set_signal_channel_hook(nullptr);
  struct sigaction after;
  ASSERT_EQ(::sigaction(SIGUSR2, nullptr, &after), 0);
  EXPECT_EQ(after.sa_handler, foreign_handler)
      << "stop() overwrote a disposition installed after it had read its own";
  EXPECT_EQ(after.sa_flags & SA_RESTART, SA_RESTART);
  // The foreign handler gets the signal (the default would kill us instead).
  const int status = run_in_child([] {
    ::kill(::getpid(), SIGUSR2);
    return g_foreign_runs.load() == 1 ? 0 : 1;
  });
  EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0)
      << doorbell::testing::describe_wait_status(status);
}

TEST(SignalChannelHandler, RealtimeOverflowIsCounted) {
  DOORBELL_SKIP_IF_SANITIZER_MERGES_SIGNALS(true);
  const int signo = SIGRTMIN + 6;
  SignalChannel::Options options;
  options.mechanism = SignalMechanism::handler;
  options.realtime_capacity = 8;
  SignalChannel channel({signo}, options);
  for (int i = 0; i < 50; ++i) ASSERT_EQ(sigqueue_value(signo, i), 0);
  int delivered = 0;
  while (channel.try_receive()) ++delivered;
  const auto stats = channel.stats();
  EXPECT_EQ(delivered, 8);
  EXPECT_EQ(stats.signals, 50u);
  EXPECT_EQ(stats.overflowed, 42u);
  EXPECT_EQ(stats.events + stats.overflowed, 50u) << "every instance is delivered or counted";
}

// Issue 33, defect 1: the queue was sized bit_ceil(realtime_capacity + 32)
// without an overflow check. SIZE_MAX ("keep everything") wrapped to 32
// cells: once real-time instances filled them, a standard signal's record
// was never pushed and its pending mark stayed set, so every later instance
// was merged into nothing. SIZE_MAX - 31 (and anything above 2^63) gave one
// cell, and try_receive() looped for ever. Each value must either be refused
// (std::invalid_argument) or work: every SIGUSR1 arrives. In a child with a
// deadline, since the old code hangs.
int huge_capacity_scenario(std::size_t capacity) {
  const int rt = SIGRTMIN + 5;
  SignalChannel::Options options;
  options.mechanism = SignalMechanism::handler;
  options.realtime_capacity = capacity;
  std::unique_ptr<SignalChannel> channel;
  try {
    channel = std::make_unique<SignalChannel>(std::vector<int>{SIGUSR1, rt}, options);
  } catch (const std::invalid_argument&) {
    return 0;  // refused: as documented
  }
  for (int round = 0; round < 3; ++round) {
    for (int i = 0; i < 40; ++i)
      if (sigqueue_value(rt, i) != 0) return 10;
    if (::kill(::getpid(), SIGUSR1) != 0) return 11;
    int usr1 = 0;
    for (int i = 0; i < 1000; ++i) {
      const auto event = channel->try_receive();
      if (!event) break;
      usr1 += event->signal == SIGUSR1;
    }
    if (usr1 != 1) return 1;
  }
  const auto stats = channel->stats();
  if (stats.events + stats.overflowed + stats.coalesced != stats.signals) return 2;
  return 0;
}

TEST(SignalChannelHandler, HugeRealtimeCapacity_RefusedOrLosesNothing) {
  DOORBELL_SKIP_IF_SANITIZER_MERGES_SIGNALS(true);
  const std::size_t max = std::numeric_limits<std::size_t>::max();
  // The documented maximum (65,536) works; the rest are refused or work.
  for (const std::size_t capacity :
       {std::size_t{65536}, max, max - 31, max - 32, (std::size_t{1} << 63) + 1}) {
    const auto outcome = doorbell::testing::run_in_child_with_deadline(
        [capacity] { return huge_capacity_scenario(capacity); }, std::chrono::seconds(10));
    EXPECT_FALSE(outcome.timed_out) << "capacity " << capacity << ": hung (try_receive loops)";
    EXPECT_TRUE(WIFEXITED(outcome.status) && WEXITSTATUS(outcome.status) == 0)
        << "capacity " << capacity << ": "
        << doorbell::testing::describe_wait_status(outcome.status)
        << " (1: a SIGUSR1 was lost, 2: an instance neither delivered nor counted)";
  }
  SignalChannel::Options options;
  options.mechanism = SignalMechanism::handler;
  options.realtime_capacity = 65536;
  EXPECT_NO_THROW(SignalChannel({SIGRTMIN + 5}, options));
}

TEST(SignalNames, AreReadable) {
  EXPECT_EQ(doorbell::signal_name(SIGTERM), "SIGTERM");
  EXPECT_EQ(doorbell::signal_name(SIGRTMIN), "SIGRTMIN");
  EXPECT_EQ(doorbell::signal_name(SIGRTMIN + 3), "SIGRTMIN+3");
}

}  // namespace
