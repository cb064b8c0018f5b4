// Lost wake-up stress for Bell: many ring/wait races, bounded in time and
// count. Short by default; DOORBELL_STRESS=long runs ten times longer.
// A lost wake-up shows as a wait_for() that times out (10 s): the test fails
// instead of hanging.
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <random>
#include <thread>
#include <vector>

#include "doorbell/bell.h"

using namespace std::chrono_literals;
using doorbell::Bell;

namespace {

int scaled(int rounds) {
  const char* env = std::getenv("DOORBELL_STRESS");
  return (env && std::strcmp(env, "long") == 0) ? rounds * 10 : rounds;
}

// A random short delay, so that ring() lands before, during and after the
// waiter's registration and futex_wait.
void jitter(std::minstd_rand& rng) {
  const unsigned k = rng() % 64;
  if (k < 40) return;
  if (k < 60) {
    for (unsigned i = 0; i < (rng() % 200); ++i) asm volatile("" ::: "memory");
    return;
  }
  std::this_thread::yield();
}

void ping_pong(Bell& ping, Bell& pong, int rounds, Bell::Spin spin) {
  std::atomic<int> seen{0};
  std::atomic<bool> failed{false};
  std::thread peer([&] {
    std::minstd_rand rng(7);
    for (int i = 0; i < rounds; ++i) {
      if (!ping.wait_for(10s, spin)) {
        failed = true;
        return;
      }
      seen.store(i + 1, std::memory_order_relaxed);
      jitter(rng);
      pong.ring();
    }
  });
  std::minstd_rand rng(11);
  for (int i = 0; i < rounds && !failed; ++i) {
    jitter(rng);
    ping.ring();
    ASSERT_TRUE(pong.wait_for(10s, spin)) << "lost wake-up at round " << i;
    ASSERT_EQ(seen.load(std::memory_order_relaxed), i + 1);
  }
  peer.join();
  EXPECT_FALSE(failed.load());
  EXPECT_EQ(ping.waiters(), 0u);
  EXPECT_EQ(pong.waiters(), 0u);
}

TEST(BellStress, PingPongThreads_NoLostWakeup) {
  Bell ping, pong;
  ping_pong(ping, pong, scaled(20000), {});
}

TEST(BellStress, PingPongThreadsPrivateWithSpin_NoLostWakeup) {
  Bell ping(Bell::Scope::process_private), pong(Bell::Scope::process_private);
  ping_pong(ping, pong, scaled(20000), Bell::Spin{200});
}

// Several waiters on one Bell: every ring must be taken by exactly one of
// them. The ringer rings only after the previous ring was taken, so rings
// never merge, and the count of takes must equal the count of rings.
// The waiters wait without a timeout (a timed wait would take a pending ring
// when it times out, hiding a lost futex wake-up behind a short delay), so a
// lost wake-up leaves the ring untaken: the run happens in a forked child
// and the parent's watchdog fails the test when the child does not finish.
TEST(BellStress, ManyWaitersEachRingTakenOnce_NoLostWakeup) {
  void* page = ::mmap(nullptr, 4096, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
  ASSERT_NE(page, MAP_FAILED);
  auto* progress = static_cast<std::atomic<int>*>(page);  // rings taken, seen by the parent
  const int rings = scaled(5000);
  const pid_t pid = ::fork();
  ASSERT_NE(pid, -1);
  if (pid == 0) {
    Bell bell;
    constexpr int kWaiters = 4;
    std::atomic<int> taken{0};
    std::atomic<bool> done{false};
    std::vector<std::thread> waiters;
    for (int w = 0; w < kWaiters; ++w)
      waiters.emplace_back([&] {
        for (;;) {
          bell.wait();
          if (done.load()) return;
          taken.fetch_add(1);
        }
      });
    std::minstd_rand rng(3);
    for (int i = 0; i < rings; ++i) {
      jitter(rng);
      bell.ring();
      // No deadline here: a lost wake-up hangs, and the parent kills us.
      while (taken.load() != i + 1) std::this_thread::yield();
      progress->store(i + 1);
    }
    done = true;
    for (int w = 0; w < kWaiters; ++w) {
      bell.ring();
      while (bell.rung()) std::this_thread::yield();  // taken by one exiting waiter
    }
    for (auto& t : waiters) t.join();
    const bool ok = taken.load() == rings && !bell.rung() && bell.waiters() == 0;
    ::_exit(ok ? 0 : 1);
  }
  // Watchdog: generous, and reset by progress, so only a stuck ring fails.
  int status = 0;
  int last = -1;
  auto deadline = std::chrono::steady_clock::now() + 20s;
  for (;;) {
    const pid_t r = ::waitpid(pid, &status, WNOHANG);
    ASSERT_NE(r, -1);
    if (r == pid) break;
    const int now = progress->load();
    if (now != last) {
      last = now;
      deadline = std::chrono::steady_clock::now() + 20s;
    }
    if (std::chrono::steady_clock::now() > deadline) {
      ::kill(pid, SIGKILL);
      ::waitpid(pid, &status, 0);
      ::munmap(page, 4096);
      FAIL() << "ring " << now << " of " << rings << " never taken within 20 s: lost wake-up";
    }
    std::this_thread::sleep_for(5ms);
  }
  ::munmap(page, 4096);
  ASSERT_TRUE(WIFEXITED(status)) << "child died of signal " << WTERMSIG(status);
  EXPECT_EQ(WEXITSTATUS(status), 0) << "takes != rings, or the Bell did not end clean";
}

// The timeout path races with ring(): a waiter that times out while a ring
// arrives must either take it or leave it set, never lose it.
TEST(BellStress, TimeoutRacesRing_NoLostRing) {
  Bell bell;
  const int rounds = scaled(3000);
  std::atomic<int> phase{0};
  std::thread ringer([&] {
    for (int i = 0; i < rounds; ++i) {
      while (phase.load() != 2 * i + 1) std::this_thread::yield();
      std::this_thread::sleep_for(std::chrono::microseconds(i % 50));
      bell.ring();
      phase.store(2 * i + 2);
    }
  });
  int taken = 0;
  for (int i = 0; i < rounds; ++i) {
    phase.store(2 * i + 1);
    // A timeout around the ringer's delay: sometimes it wins, sometimes not.
    if (bell.wait_for(std::chrono::microseconds(i % 60))) ++taken;
    while (phase.load() != 2 * i + 2) std::this_thread::yield();
    if (bell.try_wait()) ++taken;  // a ring that arrived after the timeout is still there
  }
  ringer.join();
  EXPECT_EQ(taken, rounds);
  EXPECT_EQ(bell.waiters(), 0u);
}

TEST(BellStress, PingPongProcesses_NoLostWakeup) {
  const int rounds = scaled(10000);
  void* page = ::mmap(nullptr, 4096, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
  ASSERT_NE(page, MAP_FAILED);
  Bell* ping = Bell::create_at(page);
  Bell* pong = Bell::create_at(static_cast<char*>(page) + 64);
  auto* seen = reinterpret_cast<std::atomic<int>*>(static_cast<char*>(page) + 128);
  new (seen) std::atomic<int>(0);
  const pid_t pid = ::fork();
  if (pid == 0) {
    std::minstd_rand rng(5);
    for (int i = 0; i < rounds; ++i) {
      if (!ping->wait_for(10s)) ::_exit(1);
      seen->store(i + 1, std::memory_order_relaxed);
      jitter(rng);
      pong->ring();
    }
    ::_exit(0);
  }
  std::minstd_rand rng(9);
  bool ok = true;
  int i = 0;
  for (; i < rounds && ok; ++i) {
    jitter(rng);
    ping->ring();
    ok = pong->wait_for(10s) && seen->load(std::memory_order_relaxed) == i + 1;
  }
  if (!ok) ::kill(pid, SIGKILL);
  int status = 0;
  ::waitpid(pid, &status, 0);
  EXPECT_TRUE(ok) << "lost wake-up at round " << i - 1;
  EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0);
  ::munmap(page, 4096);
}

}  // namespace
