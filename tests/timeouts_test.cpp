// Timed waits with huge timeouts: every type that takes a timeout must treat
// one too large for the clock (nanoseconds::max(), anything beyond ~292
// years) or for poll/epoll's int milliseconds (beyond ~24.8 days) as "wait
// that long", not as a deadline in the past. One typed test runs against
// each type; ctest runs each type in its own process.
#include <fcntl.h>
#include <gtest/gtest.h>
#include <signal.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <memory>
#include <stdexcept>
#include <string>
#include <thread>

#include "doorbell/bell.h"
#include "doorbell/child_process.h"
#include "doorbell/event_loop.h"
#include "doorbell/ring.h"
#include "doorbell/signal_channel.h"

using namespace std::chrono_literals;
using std::chrono::milliseconds;
using std::chrono::nanoseconds;

namespace {

constexpr auto kThirtyDays = std::chrono::hours(24 * 30);

struct Pipe {
  int r = -1, w = -1;
  Pipe() {
    int fds[2];
    if (::pipe2(fds, O_CLOEXEC) != 0) throw std::runtime_error("pipe2");
    r = fds[0];
    w = fds[1];
  }
  ~Pipe() {
    close_read();
    close_write();
  }
  void close_read() {
    if (r >= 0) ::close(r);
    r = -1;
  }
  void close_write() {
    if (w >= 0) ::close(w);
    w = -1;
  }
};

// Each case: kTimeouts waits, wait(which) blocks with the which-th huge
// timeout and returns whether it got the event; deliver(which) makes the
// event happen (from another thread than the waiter's).

struct BellCase {
  static constexpr int kTimeouts = 2;
  static std::string describe(int which) {
    return which == 0 ? "Bell::wait_for(nanoseconds::max())"
                      : "Bell::wait_until(time_point::max())";
  }
  doorbell::Bell bell{doorbell::Bell::Scope::process_private};
  bool wait(int which) {
    return which == 0 ? bell.wait_for(nanoseconds::max())
                      : bell.wait_until(doorbell::Bell::Clock::time_point::max());
  }
  void deliver(int) { bell.ring(); }
};

struct RingCase {
  static constexpr int kTimeouts = 2;
  static std::string describe(int which) {
    return which == 0 ? "Ring::pop(nanoseconds::max()) on an empty ring"
                      : "Ring::push(nanoseconds::max()) on a full ring";
  }
  static constexpr uint32_t kSlots = 2;
  static constexpr uint32_t kSlotBytes = 8;
  struct Free {
    void operator()(void* p) const { std::free(p); }
  };
  std::size_t bytes = doorbell::Ring::bytes_needed(kSlots, kSlotBytes);
  std::unique_ptr<void, Free> memory{std::aligned_alloc(64, (bytes + 63) / 64 * 64)};
  doorbell::Ring ring = doorbell::Ring::create(memory.get(), bytes, kSlots, kSlotBytes);
  bool wait(int which) {
    char record[kSlotBytes] = "x";
    if (which == 0) {
      return ring.pop(record, sizeof record, nanoseconds::max()).status ==
             doorbell::Ring::Status::ok;
    }
    for (uint32_t i = 0; i < kSlots; ++i)
      if (ring.try_push(record, 1) != doorbell::Ring::Status::ok) return false;
    return ring.push(record, 1, nanoseconds::max()) == doorbell::Ring::Status::ok;
  }
  void deliver(int which) {
    char record[kSlotBytes] = "y";
    if (which == 0) {
      ring.try_push(record, 1);
    } else {
      // Frees a slot once the waiter has filled the ring.
      while (ring.try_pop(record, sizeof record).status != doorbell::Ring::Status::ok)
        std::this_thread::yield();
    }
  }
};

struct SignalChannelCase {
  static constexpr int kTimeouts = 2;
  static std::string describe(int which) {
    return which == 0 ? "SignalChannel::receive(nanoseconds::max())"
                      : "SignalChannel::receive(30 days)";
  }
  static doorbell::SignalChannel::Options handler_mechanism() {
    doorbell::SignalChannel::Options options;
    options.mechanism = doorbell::SignalMechanism::handler;
    return options;
  }
  // One channel for the whole test: each channel installs and restores the
  // handler, and the process-wide state that leaves is not under test here.
  static doorbell::SignalChannel& channel() {
    static doorbell::SignalChannel the_channel{{SIGUSR1}, handler_mechanism()};
    return the_channel;
  }
  SignalChannelCase() { channel(); }  // created before the waiter thread
  bool wait(int which) {
    const auto event =
        which == 0 ? channel().receive(nanoseconds::max()) : channel().receive(kThirtyDays);
    return event && event->signal == SIGUSR1;
  }
  void deliver(int) { ::kill(::getpid(), SIGUSR1); }
};

struct ChildProcessCase {
  static constexpr int kTimeouts = 2;
  static std::string describe(int which) {
    return which == 0 ? "ChildProcess::wait_for(nanoseconds::max())"
                      : "ChildProcess::wait_for(30 days)";
  }
  // The child runs until its stdin reaches end of file.
  Pipe input;
  doorbell::ChildProcess child = spawn_reader(input);
  static doorbell::ChildProcess spawn_reader(Pipe& input) {
    doorbell::SpawnOptions options;
    options.stdin_fd = input.r;
    auto child = doorbell::ChildProcess::spawn({"/bin/sh", "-c", "cat >/dev/null"}, options);
    input.close_read();
    return child;
  }
  bool wait(int which) {
    const auto status =
        which == 0 ? child.wait_for(nanoseconds::max()) : child.wait_for(kThirtyDays);
    return status && status->success();
  }
  void deliver(int) { input.close_write(); }
};

struct EventLoopCase {
  static constexpr int kTimeouts = 3;
  static std::string describe(int which) {
    switch (which) {
      case 0:
        return "EventLoop::run_once(milliseconds::max())";
      case 1:
        return "EventLoop::run_once(30 days)";
      default:
        return "EventLoop::run_once(2^32 ms, ~49.7 days: 0 in an int)";
    }
  }
  Pipe pipe;
  doorbell::EventLoop loop;
  bool readable = false;
  EventLoopCase() {
    loop.add(pipe.r, doorbell::EventLoop::kReadable, [this](uint32_t) {
      char c;
      readable = ::read(pipe.r, &c, 1) == 1;
    });
  }
  ~EventLoopCase() { loop.remove(pipe.r); }
  bool wait(int which) {
    const milliseconds timeout = which == 0   ? milliseconds::max()
                                 : which == 1 ? milliseconds(kThirtyDays)
                                              : milliseconds(int64_t{1} << 32);
    return loop.run_once(timeout) == 1 && readable;
  }
  void deliver(int) { (void)!::write(pipe.w, "x", 1); }
};

template <class Case>
class HugeTimeout : public ::testing::Test {};

using Cases =
    ::testing::Types<BellCase, RingCase, SignalChannelCase, ChildProcessCase, EventLoopCase>;
class CaseNames {
 public:
  template <class T>
  static std::string GetName(int) {
    if (std::is_same_v<T, BellCase>) return "Bell";
    if (std::is_same_v<T, RingCase>) return "Ring";
    if (std::is_same_v<T, SignalChannelCase>) return "SignalChannel";
    if (std::is_same_v<T, ChildProcessCase>) return "ChildProcess";
    return "EventLoop";
  }
};
TYPED_TEST_SUITE(HugeTimeout, Cases, CaseNames);

TYPED_TEST(HugeTimeout, HugeTimeoutWaitsInsteadOfExpiring) {
  for (int which = 0; which < TypeParam::kTimeouts; ++which) {
    const std::string what = TypeParam::describe(which);
    SCOPED_TRACE(what);
    TypeParam the_case;
    std::atomic<bool> done{false};
    bool got_event = false;
    std::thread waiter([&] {
      got_event = the_case.wait(which);
      done.store(true, std::memory_order_release);
    });
    // Lower bound only: after 50 ms the wait must still be waiting.
    std::this_thread::sleep_for(50ms);
    EXPECT_FALSE(done.load(std::memory_order_acquire))
        << what << " returned within 50 ms, before the event (the deadline overflowed)";
    the_case.deliver(which);
    // Watchdog: a wait that misses the event would hang; fail clearly.
    const auto give_up = std::chrono::steady_clock::now() + 30s;
    while (!done.load(std::memory_order_acquire)) {
      if (std::chrono::steady_clock::now() > give_up) {
        ADD_FAILURE() << what << " still waiting 30 s after the event was delivered";
        std::fflush(stdout);
        std::_Exit(1);
      }
      std::this_thread::sleep_for(1ms);
    }
    waiter.join();
    EXPECT_TRUE(got_event) << what << " did not report the event";
  }
}

}  // namespace
