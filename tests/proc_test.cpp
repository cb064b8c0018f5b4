#include "sys/proc.h"

#include <gtest/gtest.h>
#include <pthread.h>
#include <signal.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <thread>

namespace doorbell::sys {
namespace {

TEST(Proc, ParseMaskMapsBitsToSignals) {
  // Bit n-1 is signal n: 0x...0200 is SIGUSR1 (10), 0x...0001 is SIGHUP.
  const sigset_t set = parse_proc_sigmask("0000000000000201");
  EXPECT_TRUE(sigismember(&set, SIGUSR1));
  EXPECT_TRUE(sigismember(&set, SIGHUP));
  EXPECT_FALSE(sigismember(&set, SIGUSR2));
}

TEST(Proc, ListsOurThreadsAndReadsEachMask) {
  std::atomic<bool> ready{false}, done{false};
  std::atomic<pid_t> tid{0};
  std::thread t([&] {
    sigset_t block;
    sigemptyset(&block);
    sigaddset(&block, SIGUSR2);
    pthread_sigmask(SIG_BLOCK, &block, nullptr);
    tid = current_tid();
    ready = true;
    while (!done) std::this_thread::yield();
  });
  while (!ready) std::this_thread::yield();
  const auto tids = list_threads(getpid());
  EXPECT_NE(std::find(tids.begin(), tids.end(), getpid()), tids.end());
  EXPECT_NE(std::find(tids.begin(), tids.end(), tid.load()), tids.end());
  const auto state = read_thread_signal_state(getpid(), tid);
  ASSERT_TRUE(state.has_value());
  EXPECT_TRUE(sigismember(&state->blocked, SIGUSR2));
  const auto main_state = read_thread_signal_state(getpid(), getpid());
  ASSERT_TRUE(main_state.has_value());
  EXPECT_FALSE(sigismember(&main_state->blocked, SIGUSR2));
  done = true;
  t.join();
}

TEST(Proc, MissingProcessThrowsAndMissingThreadIsEmpty) {
  EXPECT_THROW(list_threads(0x3ffffff0), std::system_error);
  EXPECT_FALSE(read_thread_signal_state(getpid(), 0x3ffffff0).has_value());
}

}  // namespace
}  // namespace doorbell::sys
