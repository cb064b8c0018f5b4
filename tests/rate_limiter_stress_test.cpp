// RateLimiter under contention, with random delays injected at its race
// windows, checked window by window by the attribution checker
// (lab/scenarios/ratelimit_designs.h). The same checker runs the seed's
// design and the old kernel trylock and must find their faults.
//
// Clock: a logical tick counter that thread 0 advances every kCallsPerTick of
// its own calls; a window is kIntervalTicks ticks. So the number of windows is
// bounded by a target (not by time), and every thread sees the same clock.
// Each configuration also stops at a time cap, so sanitizer builds stay
// bounded. DOORBELL_STRESS=long runs ten times the windows.
#include <gtest/gtest.h>
#include <sched.h>
#include <time.h>

#include <atomic>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <thread>
#include <vector>

#include "doorbell/rate_limiter.h"
#include "lab/scenarios/ratelimit_designs.h"

namespace doorbell::ratelimit_lab {
namespace {

constexpr uint64_t kIntervalTicks = 4;
constexpr uint64_t kCallsPerTick = 64;

bool long_mode() {
  const char* v = std::getenv("DOORBELL_STRESS");
  return v != nullptr && std::strcmp(v, "long") == 0;
}

uint64_t now_ns() {
  timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return static_cast<uint64_t>(ts.tv_sec) * 1000000000u + static_cast<uint64_t>(ts.tv_nsec);
}

// Random delays at the race windows: 1 call in 64 spins 0-1023 pauses,
// 1 in 4096 yields the CPU.
struct ChaosHooks {
  static void point(RateLimitRacePoint) noexcept {
    thread_local uint64_t state = 0x9e3779b97f4a7c15ull ^ reinterpret_cast<uintptr_t>(&state);
    state ^= state << 13;
    state ^= state >> 7;
    state ^= state << 17;
    if ((state & 63) == 0) {
      for (uint64_t i = (state >> 8) & 1023; i > 0; --i) cpu_relax();
    } else if ((state & 4095) == 1) {
      sched_yield();
    }
  }
};

struct StressRun {
  CheckResult result;
  uint64_t calls = 0;
  // The run covered all its target windows (false: the watchdog stopped it).
  bool reached_target = false;
};

// Runs `threads` threads calling call(thread, now) -> Decision-or-events
// until target_windows windows have passed. The run is count-based: cap_s
// is only a generous watchdog (a stuck run is a failure, reported by
// reached_target), never a speed floor on a loaded machine.
StressRun run_stress(int threads, uint64_t target_windows, double cap_s,
                     const std::function<void(int, uint64_t, Tally&)>& call, uint32_t burst,
                     const WindowLog* starts, uint64_t calls_per_tick = kCallsPerTick) {
  std::atomic<uint64_t> ticks{1};  // 0 is the seed's "never started" sentinel
  std::atomic<bool> stop{false};
  std::atomic<bool> reached{false};
  std::atomic<int> ready{0};
  std::vector<Tally> tallies(threads);
  std::vector<uint64_t> calls(threads);
  const uint64_t end_tick = 1 + target_windows * kIntervalTicks;
  const uint64_t deadline = now_ns() + static_cast<uint64_t>(cap_s * 1e9);
  std::vector<std::thread> workers;
  for (int id = 0; id < threads; ++id) {
    workers.emplace_back([&, id] {
      ready.fetch_add(1);
      while (ready.load() < threads) std::this_thread::yield();
      uint64_t n = 0;
      while (!stop.load(std::memory_order_relaxed)) {
        if (id == 0 && ++n % calls_per_tick == 0) {
          const uint64_t t = ticks.fetch_add(1, std::memory_order_relaxed) + 1;
          if (t >= end_tick) {
            reached.store(true, std::memory_order_relaxed);
            stop.store(true, std::memory_order_relaxed);
          } else if ((t & 63) == 0 && now_ns() > deadline) {
            stop.store(true, std::memory_order_relaxed);  // watchdog
          }
        }
        call(id, ticks.load(std::memory_order_relaxed), tallies[id]);
        ++calls[id];
      }
    });
  }
  for (auto& w : workers) w.join();
  StressRun run;
  run.result = check(tallies, burst, kIntervalTicks, starts);
  for (uint64_t c : calls) run.calls += c;
  run.reached_target = reached.load();
  EXPECT_TRUE(run.reached_target) << "watchdog: " << target_windows << " windows not done in "
                                  << cap_s << " s at T=" << threads;
  return run;
}

uint64_t target_windows() {
  return long_mode() ? 30000 : 3000;
}
// The watchdog per run: generous (a run takes well under a second unloaded);
// several runs per test stay within ctest's 300 s.
double cap_s() {
  return long_mode() ? 600.0 : 60.0;
}

void print(const char* what, int threads, const StressRun& r) {
  std::printf(
      "%-26s T=%d calls=%llu windows=%llu admitted=%llu denied=%llu max/window=%llu "
      "over_burst=%llu early_refresh=%llu span_violations=%llu max_span=%llu "
      "denied_below_burst=%llu\n",
      what, threads, (unsigned long long)r.calls, (unsigned long long)r.result.windows,
      (unsigned long long)r.result.admitted, (unsigned long long)r.result.denied,
      (unsigned long long)r.result.max_admitted, (unsigned long long)r.result.over_burst,
      (unsigned long long)r.result.early_refreshes, (unsigned long long)r.result.span_violations,
      (unsigned long long)r.result.max_span, (unsigned long long)r.result.denied_below_burst);
}

// Ours (kMode: detail::kOneWord, kFixedLease with `lease`, kAdaptiveLease),
// n = 1 per call.
template <unsigned kMode>
StressRun run_ours_impl(int threads, uint32_t burst, uint32_t lease, uint64_t windows,
                        uint64_t calls_per_tick = kCallsPerTick) {
  OurLimiter<ChaosHooks, kMode> ours(kIntervalTicks, burst, lease, 1);
  StressRun r = run_stress(
      threads, windows, cap_s(),
      [&](int, uint64_t now, Tally& tally) { tally.add(ours.call(now)); }, burst, nullptr,
      calls_per_tick);
  // Reported + unreported suppressed == denials, exactly, at quiescence.
  const uint64_t flushed = ours.limiter().flush();
  EXPECT_EQ(ours.reported() + flushed, r.result.denied) << "threads " << threads;
  EXPECT_EQ(ours.limiter().suppressed_total(), r.result.denied);
  return r;
}
StressRun run_ours(int threads, uint32_t burst, uint32_t lease, uint64_t windows) {
  return lease == 0 ? run_ours_impl<detail::kOneWord>(threads, burst, 0, windows)
                    : run_ours_impl<detail::kFixedLease>(threads, burst, lease, windows);
}
StressRun run_adaptive(int threads, uint32_t burst, uint64_t windows,
                       uint64_t calls_per_tick = kCallsPerTick) {
  return run_ours_impl<detail::kAdaptiveLease>(threads, burst, 0, windows, calls_per_tick);
}

// RateLimiter (adaptive lease) with burst < 2048: every lease is one token,
// so nothing is ever stranded: no call is denied while its window has
// tokens left, like the one-word limiter.
TEST(RateLimiterStress, Adaptive_SmallBurst_WithDelays_NeverOverBurst_NoFalseSuppression) {
  uint64_t windows = 0;
  for (int threads : {1, 2, 4, 8}) {
    const StressRun r = run_adaptive(threads, 16, target_windows());
    print("ours adaptive heavy", threads, r);
    windows += r.result.windows;
    EXPECT_EQ(r.result.over_burst, 0u);
    EXPECT_LE(r.result.max_admitted, 16u);
    EXPECT_EQ(r.result.denied_below_burst, 0u);
    EXPECT_GT(r.result.denied, 0u);  // the regime did limit
  }
  EXPECT_GE(windows, 10000u);
}

// Burst 4096 with ~8192 calls of thread 0 alone per window: the leases start
// at 4 tokens (4096 / 1024) and shrink to 1 as the window fills. Exact, and
// a window that denies admitted at least burst minus the header's bound,
// kSlots * min(burst / 1024, 4095) = 64.
TEST(RateLimiterStress, Adaptive_LargeBurst_WithDelays_NeverOverBurst_SlackBounded) {
  constexpr uint32_t kBurst = 4096;
  for (int threads : {1, 2, 4}) {
    const StressRun r = run_adaptive(threads, kBurst, target_windows() / 30, 2048);
    print("ours adaptive large burst", threads, r);
    EXPECT_EQ(r.result.over_burst, 0u);
    EXPECT_LE(r.result.max_admitted, kBurst);
    EXPECT_GT(r.result.denied, 0u);
    const uint64_t slack = RateLimiter::kSlots * (kBurst / detail::kAdaptiveLeaseDivisor);
    EXPECT_GE(r.result.min_admitted_when_denied + slack, kBurst);
    if (threads == 1) {
      EXPECT_EQ(r.result.denied_below_burst, 0u);  // one thread: exact
    }
  }
}

TEST(RateLimiterStress, Adaptive_NeverLimits_WithDelays_NoDenials) {
  for (int threads : {1, 2, 4, 8}) {
    const StressRun r = run_adaptive(threads, 1u << 30, target_windows() / 3);
    print("ours adaptive never", threads, r);
    EXPECT_EQ(r.result.denied, 0u);
    EXPECT_GT(r.result.admitted, 0u);
  }
}

TEST(RateLimiterStress, SingleWord_Heavy_WithDelays_NeverOverBurst_NoFalseSuppression) {
  uint64_t windows = 0;
  for (int threads : {1, 2, 4, 8}) {
    const StressRun r = run_ours(threads, 16, 0, target_windows());
    print("ours single-word heavy", threads, r);
    windows += r.result.windows;
    EXPECT_EQ(r.result.over_burst, 0u);
    EXPECT_LE(r.result.max_admitted, 16u);
    EXPECT_EQ(r.result.denied_below_burst, 0u);
    EXPECT_GT(r.result.denied, 0u);  // the regime did limit
  }
  // Count-based: four runs of target_windows() each, whatever the speed.
  EXPECT_GE(windows, 10000u);
}

TEST(RateLimiterStress, SingleWord_NeverLimits_WithDelays_NoDenials) {
  for (int threads : {1, 2, 4, 8}) {
    const StressRun r = run_ours(threads, 1u << 30, 0, target_windows() / 3);
    print("ours single-word never", threads, r);
    EXPECT_EQ(r.result.denied, 0u);
    EXPECT_GT(r.result.admitted, 0u);
  }
}

TEST(RateLimiterStress, Sharded_Heavy_WithDelays_NeverOverBurst_SlackBounded) {
  constexpr uint32_t kBurst = 64, kLease = 4;
  uint64_t windows = 0;
  for (int threads : {1, 2, 4, 8}) {
    const StressRun r = run_ours(threads, kBurst, kLease, target_windows());
    print("ours sharded heavy", threads, r);
    windows += r.result.windows;
    EXPECT_EQ(r.result.over_burst, 0u);
    EXPECT_LE(r.result.max_admitted, kBurst);
    // Stranded leases: at most kSlots * (lease - 1) tokens per window.
    const uint64_t slack = RateLimiter::kSlots * (kLease - 1);
    EXPECT_GE(r.result.min_admitted_when_denied + slack, kBurst);
  }
  // Count-based: four runs of target_windows() each, whatever the speed.
  EXPECT_GE(windows, 10000u);
}

TEST(RateLimiterStress, Sharded_NeverLimits_WithDelays_NoDenials) {
  for (int threads : {1, 2, 4, 8}) {
    const StressRun r = run_ours(threads, 1u << 30, 64, target_windows() / 3);
    print("ours sharded never", threads, r);
    EXPECT_EQ(r.result.denied, 0u);
  }
}

// allow(n): all or nothing, never more than burst events per window.
TEST(RateLimiterStress, AllowN_WithDelays_NeverOverBurstEvents) {
  constexpr uint32_t kBurst = 32;
  for (int threads : {2, 4}) {
    detail::BasicRateLimiter<ChaosHooks, detail::kAdaptiveLease> limiter{
        std::chrono::nanoseconds(kIntervalTicks), kBurst};
    const uint32_t base = limiter.window_of(1);
    std::atomic<uint64_t> denied_events{0};
    const StressRun r = run_stress(
        threads, target_windows() / 2, cap_s(),
        [&](int id, uint64_t now, Tally& tally) {
          const uint32_t n = 1 + static_cast<uint32_t>((now * 7 + static_cast<uint64_t>(id)) % 4);
          const RateLimitVerdict v = limiter.check_at(now, n);
          // Each admitted event counts as one admission in the window.
          for (uint32_t i = 0; i < n; ++i) tally.add({v.allowed, v.window - base});
          if (!v.allowed) denied_events.fetch_add(n, std::memory_order_relaxed);
        },
        kBurst, nullptr);
    print("ours allow(n) heavy", threads, r);
    EXPECT_EQ(r.result.over_burst, 0u);
    EXPECT_EQ(limiter.suppressed_total(), denied_events.load());
  }
}

// Control: the mutex design is exact; the begin-anchored checker must not
// flag it.
TEST(RateLimiterStress, Checker_Mutex_IsExact) {
  for (int threads : {2, 4}) {
    WindowLog log(1 << 20);
    MutexLimiter mutex(kIntervalTicks, 16, &log);
    const StressRun r = run_stress(
        threads, target_windows() / 3, cap_s(),
        [&](int, uint64_t now, Tally& tally) { tally.add(mutex.call(now)); }, 16, &log);
    print("mutex heavy", threads, r);
    EXPECT_EQ(r.result.violations(), 0u);
    EXPECT_EQ(r.result.denied_below_burst, 0u);
  }
}

// The seed's design: the refresher never re-checks `begin`, so a thread that
// read the old `begin` refreshes again right after another did (R1). The
// checker sees a window that started less than an interval after the
// previous one, and the two together admitting more than burst.
TEST(RateLimiterStress, Checker_SeedDesign_DoubleRefresh_OverBurst) {
  uint64_t violations = 0, max_span = 0;
  for (int threads : {2, 4, 8}) {
    WindowLog log(1 << 20);
    SeedLimiter<ChaosHooks> seed(kIntervalTicks, 16, &log);
    const StressRun r = run_stress(
        threads, target_windows() / 3, cap_s(),
        [&](int, uint64_t now, Tally& tally) { tally.add(seed.call(now)); }, 16, &log);
    print("seed heavy", threads, r);
    violations += r.result.violations();
    max_span = std::max(max_span, r.result.max_span);
  }
  EXPECT_GT(violations, 0u) << "the checker found no double refresh in the seed's design";
  EXPECT_GT(max_span, 16u);
}

// The kernel's trylock design up to 6.15 suppresses calls merely because
// another CPU holds the lock: denials with a limit that is never reached.
TEST(RateLimiterStress, Checker_KernelTrylock_FalseSuppression) {
  WindowLog log(1 << 20);
  TrylockLimiter<ChaosHooks> trylock(kIntervalTicks, 1u << 30, &log);
  const StressRun r = run_stress(
      2, target_windows() / 3, cap_s(),
      [&](int, uint64_t now, Tally& tally) { tally.add(trylock.call(now)); }, 1u << 30, &log);
  print("trylock never", 2, r);
  EXPECT_EQ(r.result.violations(), 0u);
  EXPECT_GT(r.result.denied_below_burst, 0u);
}

}  // namespace
}  // namespace doorbell::ratelimit_lab
