#include "doorbell/event_loop.h"

#include <fcntl.h>
#include <gtest/gtest.h>
#include <unistd.h>

#include <chrono>
#include <stdexcept>
#include <system_error>
#include <thread>

using namespace std::chrono_literals;
using doorbell::EventLoop;

namespace {

struct Pipe {
  int r = -1, w = -1;
  Pipe() {
    int fds[2];
    if (::pipe2(fds, O_CLOEXEC | O_NONBLOCK) != 0) throw std::runtime_error("pipe");
    r = fds[0];
    w = fds[1];
  }
  ~Pipe() {
    if (r >= 0) ::close(r);
    if (w >= 0) ::close(w);
  }
  void put() { ASSERT_EQ(::write(w, "x", 1), 1); }
  void drain() {
    char buf[64];
    while (::read(r, buf, sizeof buf) > 0) {
    }
  }
};

TEST(EventLoop, DispatchesReadableFd) {
  EventLoop loop;
  Pipe p;
  int calls = 0;
  loop.add(p.r, EventLoop::kReadable, [&](uint32_t ev) {
    EXPECT_TRUE(ev & EventLoop::kReadable);
    p.drain();
    ++calls;
  });
  EXPECT_EQ(loop.run_once(0ms), 0u);
  p.put();
  EXPECT_EQ(loop.run_once(1000ms), 1u);
  EXPECT_EQ(calls, 1);
  EXPECT_TRUE(loop.remove(p.r));
  EXPECT_FALSE(loop.remove(p.r));
}

TEST(EventLoop, CallbackRemovingItselfAndOthersDuringDispatchIsSafe) {
  EventLoop loop;
  Pipe a, b;
  int a_calls = 0, b_calls = 0;
  // Whichever runs first removes both; the other must not be called.
  loop.add(a.r, EventLoop::kReadable, [&](uint32_t) {
    ++a_calls;
    loop.remove(a.r);
    loop.remove(b.r);
  });
  loop.add(b.r, EventLoop::kReadable, [&](uint32_t) {
    ++b_calls;
    loop.remove(b.r);
    loop.remove(a.r);
  });
  a.put();
  b.put();
  EXPECT_EQ(loop.run_once(1000ms), 1u);
  EXPECT_EQ(a_calls + b_calls, 1);
  EXPECT_EQ(loop.size(), 0u);
}

TEST(EventLoop, StopFromAnotherThreadEndsRun) {
  EventLoop loop;
  std::thread stopper([&] {
    std::this_thread::sleep_for(20ms);
    loop.stop();
  });
  loop.run();  // returns: otherwise the test hangs
  stopper.join();
  EXPECT_FALSE(loop.stop_requested());
}

TEST(EventLoop, StopBeforeRunIsSticky) {
  EventLoop loop;
  loop.stop();
  EXPECT_EQ(loop.run(), 0u);
}

TEST(EventLoop, PeriodicAndOneShotTimers) {
  EventLoop loop;
  int ticks = 0;
  bool once = false;
  const auto start = std::chrono::steady_clock::now();
  EventLoop::TimerId periodic = 0;
  periodic = loop.add_timer(2ms, 2ms, [&](uint64_t n) {
    ticks += static_cast<int>(n);
    if (ticks >= 5) loop.cancel_timer(periodic);  // cancels itself mid-callback
  });
  loop.add_timer(30ms, 0ns, [&](uint64_t n) {
    EXPECT_EQ(n, 1u);
    once = true;
    loop.stop();
  });
  loop.run();
  EXPECT_TRUE(once);
  EXPECT_GE(ticks, 5);
  EXPECT_GE(std::chrono::steady_clock::now() - start, 30ms);
  EXPECT_FALSE(loop.cancel_timer(periodic));
  EXPECT_EQ(loop.size(), 0u);
}

TEST(EventLoop, FdClosedUnderTheLoopIsReportedOnRemove) {
  EventLoop loop;
  Pipe p;
  loop.add(p.r, EventLoop::kReadable, [](uint32_t) {});
  ::close(p.r);
  const int number = p.r;
  p.r = -1;
  try {
    loop.remove(number);
    FAIL() << "no error";
  } catch (const std::system_error& e) {
    EXPECT_EQ(e.code().value(), EBADF);
    EXPECT_NE(std::string(e.what()).find("closed while registered"), std::string::npos);
  }
  EXPECT_FALSE(loop.contains(number));
}

TEST(EventLoop, ReusedNumberOfFdClosedUnderTheLoopIsReportedOnAdd) {
  EventLoop loop;
  Pipe p;
  loop.add(p.r, EventLoop::kReadable, [](uint32_t) {});
  const int number = p.r;
  ::close(p.r);
  p.r = -1;
  Pipe q;  // likely reuses the number; force it with dup2
  ASSERT_EQ(::dup2(q.r, number), number);
  EXPECT_THROW(loop.add(number, EventLoop::kReadable, [](uint32_t) {}), std::system_error);
  // The stale registration is gone: now the add works.
  loop.add(number, EventLoop::kReadable, [](uint32_t) {});
  EXPECT_TRUE(loop.remove(number));
  ::close(number);
}

TEST(EventLoop, BadArgumentsAreRejected) {
  EventLoop loop;
  Pipe p;
  EXPECT_THROW(loop.add(-1, EventLoop::kReadable, [](uint32_t) {}), std::invalid_argument);
  EXPECT_THROW(loop.add(p.r, 0, [](uint32_t) {}), std::invalid_argument);
  EXPECT_THROW(loop.add(p.r, EventLoop::kReadable, nullptr), std::invalid_argument);
  loop.add(p.r, EventLoop::kReadable, [](uint32_t) {});
  EXPECT_THROW(loop.add(p.r, EventLoop::kReadable, [](uint32_t) {}), std::invalid_argument);
  EXPECT_THROW(loop.modify(12345, EventLoop::kReadable), std::invalid_argument);
  int closed = ::dup(p.w);
  ::close(closed);
  try {
    loop.add(closed, EventLoop::kReadable, [](uint32_t) {});
    FAIL();
  } catch (const std::system_error& e) {
    EXPECT_EQ(e.code().value(), EBADF);
  }
}

TEST(EventLoop, ReentrantRunOnceIsRefused) {
  EventLoop loop;
  Pipe p;
  bool threw = false;
  loop.add(p.r, EventLoop::kReadable, [&](uint32_t) {
    p.drain();
    try {
      loop.run_once(0ms);
    } catch (const std::logic_error&) {
      threw = true;
    }
  });
  p.put();
  loop.run_once(1000ms);
  EXPECT_TRUE(threw);
}

TEST(EventLoop, WakeupFromAnotherThreadEndsARound) {
  EventLoop loop;
  std::thread t([&] {
    std::this_thread::sleep_for(20ms);
    loop.wakeup();
  });
  const auto start = std::chrono::steady_clock::now();
  EXPECT_EQ(loop.run_once(10s), 0u);
  EXPECT_LT(std::chrono::steady_clock::now() - start, 10s);
  t.join();
}

}  // namespace
