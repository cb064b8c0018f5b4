// Instruction counts of RateLimiter paths, for tests/rate_limiter_callgrind.cmake.
//
//   valgrind --tool=callgrind --collect-atstart=no rate_limiter_callgrind_driver PATH N
//
// Runs one path N times between CALLGRIND_TOGGLE_COLLECT marks. Each call goes
// through a noinline wrapper taking the timestamp as an argument, so the clock
// is excluded; the `baseline` path is the same loop around a wrapper that
// returns true, and the check subtracts it. Set-up calls (opening the window,
// the thread's first call) happen before collection starts.
#include <valgrind/callgrind.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>

#include "doorbell/rate_limiter.h"

using doorbell::RateLimiter;
using doorbell::RateLimitOptions;
using doorbell::ShardedRateLimiter;
using doorbell::detail::OneWordRateLimiter;

namespace {

constexpr uint64_t kNow = 123456789012345;  // a fixed timestamp: one window

__attribute__((noinline)) bool baseline(RateLimiter& limiter, uint64_t now) {
  asm volatile("" : : "r"(&limiter), "r"(now) : "memory");
  return true;
}
__attribute__((noinline)) bool call(RateLimiter& limiter, uint64_t now) {
  return limiter.allow_at(now);
}
__attribute__((noinline)) bool call_sharded(ShardedRateLimiter& limiter, uint64_t now) {
  return limiter.allow_at(now);
}
__attribute__((noinline)) bool call_one_word(OneWordRateLimiter& limiter, uint64_t now) {
  return limiter.allow_at(now);
}

}  // namespace

int main(int argc, char** argv) {
  if (argc != 3) {
    std::fprintf(stderr,
                 "usage: %s baseline|disabled|admit|deny|sharded_admit|sharded_deny|"
                 "oneword_admit|oneword_deny N\n",
                 argv[0]);
    return 2;
  }
  const char* path = argv[1];
  const long n = std::strtol(argv[2], nullptr, 10);
  if (n <= 0) {
    std::fprintf(stderr, "N must be a positive number\n");
    return 2;
  }
  using std::chrono::milliseconds;
  RateLimiter disabled;
  RateLimiter admitting{milliseconds(1), RateLimitOptions::kMaxBurst};
  RateLimiter denying{milliseconds(1), 1};
  ShardedRateLimiter sharded_admitting{
      RateLimitOptions{milliseconds(1), RateLimitOptions::kMaxBurst, 64}};
  ShardedRateLimiter sharded_denying{RateLimitOptions{milliseconds(1), 1, 64}};
  OneWordRateLimiter one_word_admitting{milliseconds(1), RateLimitOptions::kMaxBurst};
  OneWordRateLimiter one_word_denying{milliseconds(1), 1};
  RateLimiter* limiter = nullptr;
  ShardedRateLimiter* sharded = nullptr;
  OneWordRateLimiter* one_word = nullptr;
  bool use_baseline = false;
  if (std::strcmp(path, "baseline") == 0) {
    limiter = &disabled;
    use_baseline = true;
  } else if (std::strcmp(path, "disabled") == 0) {
    limiter = &disabled;
  } else if (std::strcmp(path, "admit") == 0) {
    limiter = &admitting;
  } else if (std::strcmp(path, "deny") == 0) {
    limiter = &denying;
  } else if (std::strcmp(path, "sharded_admit") == 0) {
    sharded = &sharded_admitting;
  } else if (std::strcmp(path, "sharded_deny") == 0) {
    sharded = &sharded_denying;
  } else if (std::strcmp(path, "oneword_admit") == 0) {
    one_word = &one_word_admitting;
  } else if (std::strcmp(path, "oneword_deny") == 0) {
    one_word = &one_word_denying;
  } else {
    std::fprintf(stderr, "unknown path '%s'\n", path);
    return 2;
  }
  // Set-up outside the measurement: open the window, number the thread.
  long admitted = 0;
  if (one_word != nullptr) {
    call_one_word(*one_word, kNow);
    CALLGRIND_TOGGLE_COLLECT;
    for (long i = 0; i < n; ++i) admitted += call_one_word(*one_word, kNow);
    CALLGRIND_TOGGLE_COLLECT;
  } else if (sharded != nullptr) {
    call_sharded(*sharded, kNow);
    CALLGRIND_TOGGLE_COLLECT;
    for (long i = 0; i < n; ++i) admitted += call_sharded(*sharded, kNow);
    CALLGRIND_TOGGLE_COLLECT;
  } else if (use_baseline) {
    call(*limiter, kNow);
    CALLGRIND_TOGGLE_COLLECT;
    for (long i = 0; i < n; ++i) admitted += baseline(*limiter, kNow);
    CALLGRIND_TOGGLE_COLLECT;
  } else {
    call(*limiter, kNow);
    CALLGRIND_TOGGLE_COLLECT;
    for (long i = 0; i < n; ++i) admitted += call(*limiter, kNow);
    CALLGRIND_TOGGLE_COLLECT;
  }
  std::printf("%s: %ld of %ld admitted\n", path, admitted, n);
  const bool expect_admit = std::strstr(path, "deny") == nullptr;
  if ((expect_admit && admitted != n) || (!expect_admit && admitted != 0)) {
    std::fprintf(stderr, "path %s did not take the expected branch\n", path);
    return 1;
  }
  return 0;
}
