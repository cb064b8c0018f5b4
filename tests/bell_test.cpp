#include "doorbell/bell.h"

#include <gtest/gtest.h>
#include <linux/filter.h>
#include <linux/seccomp.h>
#include <signal.h>
#include <stddef.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdint>
#include <cstring>
#include <new>
#include <stdexcept>
#include <thread>

#include "tests/signal_test_support.h"

using namespace std::chrono_literals;
using doorbell::Bell;

namespace {

TEST(Bell, RingBeforeWaitIsKeptAndRingsMerge) {
  Bell bell;
  bell.ring();
  bell.ring();
  EXPECT_TRUE(bell.rung());
  EXPECT_TRUE(bell.try_wait());
  EXPECT_FALSE(bell.try_wait());  // two rings, one wake-up: they merged
  bell.ring();
  bell.wait();  // returns at once
  EXPECT_FALSE(bell.rung());
}

TEST(Bell, WaitForTimesOutAfterAtLeastTheDuration) {
  for (auto scope : {Bell::Scope::shared, Bell::Scope::process_private}) {
    Bell bell(scope);
    const auto start = std::chrono::steady_clock::now();
    EXPECT_FALSE(bell.wait_for(20ms));
    EXPECT_GE(std::chrono::steady_clock::now() - start, 20ms);
    EXPECT_EQ(bell.waiters(), 0u);  // the timed-out waiter unregistered
    EXPECT_FALSE(bell.wait_until(Bell::Clock::now() - 1s));
    EXPECT_FALSE(bell.wait_for(5ms, Bell::Spin{1000}));
  }
}

// Issue 36: the spin ignored the deadline, so wait_for(10ms, Spin{UINT32_MAX})
// spun for minutes. The spin checks the deadline too. Run in a child with a
// generous limit (a hang is a failure, not a timing assertion).
TEST(Bell, SpinEndsAtTheDeadline) {
  const auto outcome = doorbell::testing::run_in_child_with_deadline(
      [] {
        for (auto scope : {Bell::Scope::shared, Bell::Scope::process_private}) {
          Bell bell(scope);
          if (bell.wait_for(10ms, Bell::Spin{UINT32_MAX})) return 1;
          if (bell.wait_until(Bell::Clock::now() + 10ms, Bell::Spin{UINT32_MAX})) return 2;
          if (bell.waiters() != 0) return 3;
          // A ring during a long spin is still taken.
          bell.ring();
          if (!bell.wait_for(10ms, Bell::Spin{UINT32_MAX})) return 4;
        }
        return 0;
      },
      10s);
  EXPECT_FALSE(outcome.timed_out) << "wait_for(10ms, Spin{UINT32_MAX}) still spinning after 10 s";
  EXPECT_TRUE(WIFEXITED(outcome.status) && WEXITSTATUS(outcome.status) == 0)
      << doorbell::testing::describe_wait_status(outcome.status);
}

TEST(Bell, WaitUntilAFutureDeadline) {
  for (auto scope : {Bell::Scope::shared, Bell::Scope::process_private}) {
    Bell bell(scope);
    // Nobody rings: it times out, no earlier than the deadline.
    const auto deadline = Bell::Clock::now() + 20ms;
    EXPECT_FALSE(bell.wait_until(deadline));
    EXPECT_GE(Bell::Clock::now(), deadline);
    EXPECT_EQ(bell.waiters(), 0u);
    // A ring before the deadline ends the wait with true.
    std::thread ringer([&] {
      while (bell.waiters() == 0) std::this_thread::yield();
      bell.ring();
    });
    EXPECT_TRUE(bell.wait_until(Bell::Clock::now() + 60s));
    ringer.join();
    EXPECT_FALSE(bell.rung()) << "the wait consumed the ring";
  }
}

TEST(Bell, RingWakesSleepingWaiterAcrossThreads) {
  Bell bell;
  int payload = 0;
  std::thread waiter([&] {
    bell.wait();
    EXPECT_EQ(payload, 42);  // ring() released, wait() acquired
  });
  while (bell.waiters() == 0) std::this_thread::yield();
  payload = 42;
  bell.ring();
  waiter.join();
  EXPECT_EQ(bell.waiters(), 0u);
}

TEST(Bell, ScopeIsRecordedInTheWord) {
  Bell shared_bell;
  Bell private_bell(Bell::Scope::process_private);
  EXPECT_EQ(shared_bell.scope(), Bell::Scope::shared);
  EXPECT_EQ(private_bell.scope(), Bell::Scope::process_private);
  private_bell.ring();
  EXPECT_EQ(private_bell.scope(), Bell::Scope::process_private);
  EXPECT_TRUE(private_bell.try_wait());
  EXPECT_EQ(private_bell.scope(), Bell::Scope::process_private);
}

TEST(Bell, MisalignedAddressIsRejected) {
  alignas(8) unsigned char buffer[16] = {};
  EXPECT_THROW(Bell::create_at(buffer + 1, Bell::Scope::shared), std::invalid_argument);
  EXPECT_THROW(Bell::attach(buffer + 2), std::invalid_argument);
  EXPECT_THROW(Bell::attach(nullptr), std::invalid_argument);
  try {
    Bell::attach(buffer + 3);
    FAIL() << "attach() of a misaligned address did not throw";
  } catch (const std::invalid_argument& e) {
    EXPECT_NE(std::string(e.what()).find("4-byte aligned"), std::string::npos);
  }
  Bell* bell = Bell::create_at(buffer + 4);
  bell->ring();
  EXPECT_TRUE(Bell::attach(buffer + 4)->try_wait());
  uint32_t bad = Bell::kReserved;
  EXPECT_THROW(Bell::attach(&bad), std::invalid_argument);
}

TEST(Bell, ZeroFilledSharedPageHoldsBells) {
  void* page = ::mmap(nullptr, 4096, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
  ASSERT_NE(page, MAP_FAILED);
  Bell* bell = Bell::attach(page);
  EXPECT_FALSE(bell->rung());
  EXPECT_EQ(bell->scope(), Bell::Scope::shared);
  ::munmap(page, 4096);
}

// Installs a seccomp filter that kills the process on any syscall except
// exit_group, then rings a Bell nobody waits on a million times. If ring()
// made a single syscall (futex, write, anything), the child dies of SIGSYS.
void ring_under_seccomp(Bell* bell, int rings) {
  struct sock_filter filter[] = {
      BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(struct seccomp_data, nr)),
      BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, __NR_exit_group, 0, 1),
      BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW),
      BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_KILL_PROCESS),
  };
  struct sock_fprog prog = {static_cast<unsigned short>(sizeof filter / sizeof filter[0]), filter};
  if (::prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != 0) ::_exit(10);
  if (::syscall(SYS_seccomp, SECCOMP_SET_MODE_FILTER, 0, &prog) != 0) ::_exit(11);
  for (int i = 0; i < rings; ++i) bell->ring();
  ::syscall(SYS_exit_group, 0);
}

int run_child(Bell* bell, int rings) {
  const pid_t pid = ::fork();
  if (pid == 0) ring_under_seccomp(bell, rings);
  int status = 0;
  ::waitpid(pid, &status, 0);
  return status;
}

TEST(Bell, RingWithNoWaiterMakesNoSyscall) {
  Bell bell;
  const int status = run_child(&bell, 1000000);
  ASSERT_TRUE(WIFEXITED(status)) << "child died of signal " << WTERMSIG(status)
                                 << " (SIGSYS means ring() made a syscall)";
  EXPECT_EQ(WEXITSTATUS(status), 0);
}

TEST(Bell, SeccompControl_RingWithRegisteredWaiterIsKilled) {
  // The control for the test above: with a waiter counted in the word,
  // ring() must call futex(2), and the same filter must catch it.
  alignas(4) uint32_t word = Bell::kOneWaiter;
  Bell* bell = Bell::attach(&word);
  const int status = run_child(bell, 1);
  ASSERT_TRUE(WIFSIGNALED(status));
  EXPECT_EQ(WTERMSIG(status), SIGSYS);
}

TEST(Bell, PingPongAcrossProcessesInSharedMemory) {
  void* page = ::mmap(nullptr, 4096, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
  ASSERT_NE(page, MAP_FAILED);
  Bell* ping = Bell::create_at(page);
  Bell* pong = Bell::create_at(static_cast<char*>(page) + 4);
  auto* counter = reinterpret_cast<volatile int*>(static_cast<char*>(page) + 64);
  constexpr int kRounds = 2000;
  const pid_t pid = ::fork();
  if (pid == 0) {
    for (int i = 0; i < kRounds; ++i) {
      if (!ping->wait_for(10s)) ::_exit(1);
      *counter = *counter + 1;
      pong->ring();
    }
    ::_exit(0);
  }
  bool ok = true;
  for (int i = 0; i < kRounds && ok; ++i) {
    ping->ring();
    ok = pong->wait_for(10s);
    if (ok) ok = (*counter == i + 1);
  }
  if (!ok) ::kill(pid, SIGKILL);
  int status = 0;
  ::waitpid(pid, &status, 0);
  EXPECT_TRUE(ok);
  EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0);
  ::munmap(page, 4096);
}

TEST(Bell, RingIsAsyncSignalSafeFromHandler) {
  static Bell* bell_for_handler;
  Bell bell;
  bell_for_handler = &bell;
  struct sigaction sa {
  }, old{};
  sa.sa_handler = [](int) { bell_for_handler->ring(); };
  ASSERT_EQ(::sigaction(SIGUSR1, &sa, &old), 0);
  const pthread_t self = ::pthread_self();
  std::thread t([self] {
    std::this_thread::sleep_for(10ms);
    ::pthread_kill(self, SIGUSR1);
  });
  EXPECT_TRUE(bell.wait_for(10s));
  t.join();
  ::sigaction(SIGUSR1, &old, nullptr);
}

}  // namespace
