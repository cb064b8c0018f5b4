#include "doorbell/timer.h"

#include <gtest/gtest.h>
#include <poll.h>

#include <chrono>
#include <stdexcept>
#include <thread>

using namespace std::chrono_literals;

TEST(Timer, OneShotFiresOnceAfterAtLeastTheDelay) {
  doorbell::Timer t;
  const auto start = std::chrono::steady_clock::now();
  t.arm_once(20ms);
  const uint64_t early = t.read();
  // "Not yet" is a claim only when the read really came before the delay
  // was up; a loaded machine may stall us past it, and then 1 is right.
  if (std::chrono::steady_clock::now() - start < 20ms) {
    EXPECT_EQ(early, 0u) << "fired early";
  }
  EXPECT_LE(early, 1u);
  EXPECT_EQ(early + t.wait(), 1u);  // exactly one expiration in all
  EXPECT_GE(std::chrono::steady_clock::now() - start, 20ms);
  std::this_thread::sleep_for(30ms);
  EXPECT_EQ(t.read(), 0u);  // one-shot: no more
  EXPECT_EQ(t.missed(), 0u);
}

TEST(Timer, PeriodicCountsMissedExpirations) {
  doorbell::Timer t;
  t.arm_periodic(5ms);
  std::this_thread::sleep_for(60ms);  // at least 11 periods go by unread
  const uint64_t n = t.read();
  EXPECT_GE(n, 10u);
  EXPECT_EQ(t.missed(), n - 1);
  EXPECT_EQ(t.expirations(), n);
  EXPECT_GE(t.wait(), 1u);
  t.disarm();
  t.read();
  std::this_thread::sleep_for(15ms);
  EXPECT_EQ(t.read(), 0u);
}

TEST(Timer, PeriodicWaitsTheFirstDelayThenEveryPeriod) {
  doorbell::Timer t;
  const auto start = std::chrono::steady_clock::now();
  t.arm_periodic(5ms, 60ms);  // first after 60 ms, not after one period
  EXPECT_GE(t.wait(), 1u);
  const auto first = std::chrono::steady_clock::now();
  EXPECT_GE(first - start, 60ms) << "the first expiration did not wait for `first`";
  // Then it keeps firing every period: three more expirations after the
  // first come at least three periods after it (so 75 ms after arming).
  uint64_t more = 0;
  while (more < 3) more += t.wait();
  EXPECT_GE(std::chrono::steady_clock::now() - start, 75ms);
  t.disarm();
}

TEST(Timer, FdPollsReadableOnExpiry) {
  doorbell::Timer t;
  t.arm_once(1ms);
  pollfd pfd{t.fd(), POLLIN, 0};
  ASSERT_EQ(::poll(&pfd, 1, 5000), 1);
  EXPECT_EQ(t.read(), 1u);
}

TEST(Timer, RejectsNonPositiveDurations) {
  doorbell::Timer t;
  EXPECT_THROW(t.arm_once(0ns), std::invalid_argument);
  EXPECT_THROW(t.arm_periodic(-1ms), std::invalid_argument);
}
