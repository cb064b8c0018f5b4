#include "doorbell/event_notifier.h"

#include <gtest/gtest.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <cstdint>
#include <thread>

namespace {

bool readable(int fd) {
  pollfd pfd{fd, POLLIN, 0};
  return ::poll(&pfd, 1, 0) == 1 && (pfd.revents & POLLIN);
}

TEST(EventNotifier, NotifyWithoutArmedConsumerDoesNotWriteTheFd) {
  doorbell::EventNotifier n;
  n.notify();
  n.notify();
  EXPECT_FALSE(readable(n.fd()));  // the handshake: nobody sleeps, no write
  EXPECT_FALSE(n.arm());           // pending: must not sleep
  EXPECT_TRUE(n.consume(false));
  EXPECT_FALSE(n.consume(false));  // consumed; notifications coalesced into one
}

TEST(EventNotifier, NotifyAfterArmWritesTheFdOnce) {
  doorbell::EventNotifier n;
  ASSERT_TRUE(n.arm());
  n.notify();
  n.notify();  // already pending: no second write
  ASSERT_TRUE(readable(n.fd()));
  EXPECT_TRUE(n.consume(true));
  EXPECT_FALSE(readable(n.fd()));  // drained
}

TEST(EventNotifier, ConsumeWithoutReadabilityDrainsWhenStateSaysWritten) {
  doorbell::EventNotifier n;
  ASSERT_TRUE(n.arm());
  n.notify();
  EXPECT_TRUE(n.consume(false));  // {armed, pending}: the write happened
  EXPECT_FALSE(readable(n.fd()));
}

TEST(EventNotifier, WaitTimesOutAfterAtLeastTheTimeout) {
  doorbell::EventNotifier n;
  const auto start = std::chrono::steady_clock::now();
  EXPECT_FALSE(n.wait(30));
  EXPECT_GE(std::chrono::steady_clock::now() - start, std::chrono::milliseconds(30));
}

TEST(EventNotifier, CrossThreadNoLostWakeups) {
  // The consumer sleeps in wait(-1) each round; the producer notifies once
  // per round after seeing the consumer's round number. A lost wake-up
  // leaves the consumer asleep: a watchdog that sees no progress for 20 s
  // writes the eventfd itself (the one way to wake a wait(-1) from outside),
  // both sides stop, and the test fails saying at which round.
  doorbell::EventNotifier n;
  std::atomic<int> round{0};
  std::atomic<bool> hung{false};
  std::atomic<bool> finished{false};
  constexpr int kRounds = 20000;
  std::thread producer([&] {
    for (int r = 1; r <= kRounds && !hung.load(); ++r) {
      while (round.load(std::memory_order_acquire) != r - 1 && !hung.load())
        std::this_thread::yield();
      n.notify();
      while (round.load(std::memory_order_acquire) == r - 1 && !hung.load())
        std::this_thread::yield();
    }
  });
  std::thread watchdog([&] {
    int seen = -1;
    auto last_progress = std::chrono::steady_clock::now();
    while (!finished.load()) {
      std::this_thread::sleep_for(std::chrono::milliseconds(50));
      const int now_round = round.load();
      if (now_round != seen) {
        seen = now_round;
        last_progress = std::chrono::steady_clock::now();
      } else if (std::chrono::steady_clock::now() - last_progress > std::chrono::seconds(20)) {
        hung.store(true);
        const uint64_t one = 1;
        (void)!::write(n.fd(), &one, sizeof one);
        return;
      }
    }
  });
  int completed = 0;
  for (int r = 1; r <= kRounds && !hung.load(); ++r) {
    while (!n.wait(-1) && !hung.load()) {
    }
    if (hung.load()) break;
    round.store(r, std::memory_order_release);
    completed = r;
  }
  finished.store(true);
  producer.join();
  watchdog.join();
  EXPECT_FALSE(hung.load()) << "lost wake-up: the consumer slept through the notify() of round "
                            << completed + 1 << " for 20 s";
  EXPECT_EQ(completed, kRounds);
}

doorbell::EventNotifier* g_notifier = nullptr;
void on_usr1(int) {
  g_notifier->notify();
}

TEST(EventNotifier, NotifyFromSignalHandlerWakesWaiter) {
  doorbell::EventNotifier n;
  g_notifier = &n;
  struct sigaction sa {};
  sa.sa_handler = on_usr1;
  struct sigaction old {};
  ASSERT_EQ(sigaction(SIGUSR1, &sa, &old), 0);
  const pthread_t self = pthread_self();
  std::thread sender([self] {
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
    pthread_kill(self, SIGUSR1);
  });
  EXPECT_TRUE(n.wait(5000));
  sender.join();
  sigaction(SIGUSR1, &old, nullptr);
}

}  // namespace
