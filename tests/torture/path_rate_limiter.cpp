// rate_limiter: RateLimiter (single word) under three threads, with stalls
// injected at its race points through Hooks::point.
//
// Clock: a logical nanosecond counter (check_at), so windows pass by count,
// not by time, and every thread reads the same clock. Thread 0 moves it one
// window forward every few calls. Each round also plans one long stall: one
// thread, at one race point of one of its calls, stops as if preempted,
// moves the clock 2^20+ windows ahead (the time that passed while it slept)
// and waits until the others have made calls in the new window (bounded by
// a deadline), then carries on with its stale view. Small random stalls
// (spins, yields) happen at every point too.
//
// Checked after each round, from the verdicts (each admitted call is charged
// to verdict.window):
//  - never more than burst admitted in one window;
//  - exact suppression accounting: the sum of check_at()'s reports plus
//    flush() equals the events denied, and so does suppressed_total().
#include <atomic>
#include <map>
#include <thread>
#include <vector>

#include "doorbell/rate_limiter.h"
#include "tests/torture/torture.h"

namespace doorbell::torture {
namespace {

constexpr uint64_t kInterval = 1000;  // logical ns per window
constexpr int kThreads = 3;

struct Round;
thread_local Round* tl_round = nullptr;
thread_local int tl_thread = -1;
thread_local uint64_t tl_call = 0;
thread_local Rng* tl_rng = nullptr;

struct StallHooks {
  static void point(RateLimitRacePoint point) noexcept;
};
using Limiter = detail::BasicRateLimiter<StallHooks, false>;

struct Round {
  std::atomic<uint64_t> clock{kInterval};
  std::atomic<uint64_t> calls{0};  // all threads' calls, for the stall's wait
  std::atomic<int> finished{0};
  // The planned long stall.
  int stall_thread = 0;
  uint64_t stall_call = 0;
  RateLimitRacePoint stall_point = RateLimitRacePoint::before_open;
  uint64_t stall_windows = 0;
  std::atomic<bool> stall_done{false};
  std::atomic<bool> stall_timed_out{false};
  int64_t stall_deadline_ns = 0;
};

const char* point_name(RateLimitRacePoint p) {
  switch (p) {
    case RateLimitRacePoint::after_load:
      return "after_load";
    case RateLimitRacePoint::before_open:
      return "before_open";
    case RateLimitRacePoint::after_open:
      return "after_open";
    case RateLimitRacePoint::before_add:
      return "before_add";
    case RateLimitRacePoint::before_lease_take:
      return "before_lease_take";
    case RateLimitRacePoint::before_lease_store:
      return "before_lease_store";
    case RateLimitRacePoint::before_miss:
      return "before_miss";
  }
  return "?";
}

void StallHooks::point(RateLimitRacePoint point) noexcept {
  Round* r = tl_round;
  if (r == nullptr) return;
  if (tl_thread == r->stall_thread && tl_call >= r->stall_call && point == r->stall_point &&
      !r->stall_done.exchange(true)) {
    // The long stall: time passes (the clock jumps), the others go on.
    r->clock.fetch_add(r->stall_windows * kInterval);
    const uint64_t target = r->calls.load() + 64;
    while (r->calls.load() < target && r->finished.load() < kThreads - 1) {
      if (now_ns() > r->stall_deadline_ns) {
        r->stall_timed_out.store(true);
        break;
      }
      sched_yield();
    }
    return;
  }
  Rng& rng = *tl_rng;
  const uint64_t x = rng.next();
  if ((x & 31) == 0) {
    for (uint64_t i = (x >> 8) & 511; i > 0; --i) cpu_relax();
  } else if ((x & 1023) == 1) {
    sched_yield();
  }
}

struct Tally {
  std::map<uint32_t, uint64_t> admitted;  // window -> events
  uint64_t denied = 0;
  uint64_t reported = 0;
};

void rate_limiter_round(Context& ctx) {
  Rng& rng = ctx.rng();
  const uint32_t burst = 1 + static_cast<uint32_t>(rng.below(8));
  const uint64_t calls_per_thread = 500 + rng.below(1500);
  const uint64_t calls_per_window = 1 + rng.below(3 * burst + 4);
  Limiter limiter{std::chrono::nanoseconds(kInterval), burst};
  Round round;
  round.stall_thread = static_cast<int>(rng.below(kThreads));
  round.stall_call = rng.below(calls_per_thread);
  static constexpr RateLimitRacePoint kStallPoints[] = {
      RateLimitRacePoint::before_open, RateLimitRacePoint::before_open,
      RateLimitRacePoint::after_load, RateLimitRacePoint::before_add};
  round.stall_point = kStallPoints[rng.below(4)];
  round.stall_windows = rng.chance(4) ? 1 + rng.below(1000) : (1u << 20) + 1 + rng.below(1000);
  round.stall_deadline_ns = ctx.deadline();
  std::vector<Tally> tallies(kThreads);
  std::vector<uint64_t> seeds(kThreads);
  for (auto& s : seeds) s = rng.next();

  ctx.phase("%d threads x %llu calls, burst %u, stall at %s of thread %d call %llu (%llu windows)",
            kThreads, static_cast<unsigned long long>(calls_per_thread), burst,
            point_name(round.stall_point), round.stall_thread,
            static_cast<unsigned long long>(round.stall_call),
            static_cast<unsigned long long>(round.stall_windows));
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&, t] {
      Rng trng(seeds[t]);
      tl_round = &round;
      tl_thread = t;
      tl_rng = &trng;
      Tally& tally = tallies[t];
      for (uint64_t i = 0; i < calls_per_thread; ++i) {
        tl_call = i;
        if (t == 0 && i % calls_per_window == 0) round.clock.fetch_add(kInterval);
        const uint32_t n = trng.chance(8) ? 1 + static_cast<uint32_t>(trng.below(3)) : 1;
        const RateLimitVerdict v = limiter.check_at(round.clock.load(), n);
        if (v.allowed)
          tally.admitted[v.window] += n;
        else
          tally.denied += n;
        tally.reported += v.suppressed;
        round.calls.fetch_add(1);
      }
      round.finished.fetch_add(1);
      tl_round = nullptr;
    });
  }
  for (auto& th : threads) th.join();

  std::map<uint32_t, uint64_t> admitted;
  uint64_t denied = 0;
  uint64_t reported = 0;
  for (const Tally& t : tallies) {
    for (const auto& [window, count] : t.admitted) admitted[window] += count;
    denied += t.denied;
    reported += t.reported;
  }
  const char* stall = round.stall_done.load() ? (round.stall_windows > (1u << 20) ? "a stall of "
                                                                                    "2^20+ windows"
                                                                                  : "a short stall")
                                              : "no stall (its point was not reached)";
  for (const auto& [window, count] : admitted) {
    if (count > burst) {
      ctx.fail("window %u admitted %llu events, burst is %u (%s at %s, thread %d, call %llu)",
               window, static_cast<unsigned long long>(count), burst, stall,
               point_name(round.stall_point), round.stall_thread,
               static_cast<unsigned long long>(round.stall_call));
      break;
    }
  }
  const uint64_t flushed = limiter.flush();
  if (reported + flushed != denied)
    ctx.fail("suppression accounting: reported %llu + flush() %llu != denied %llu (%s)",
             static_cast<unsigned long long>(reported), static_cast<unsigned long long>(flushed),
             static_cast<unsigned long long>(denied), stall);
  if (limiter.suppressed_total() != denied)
    ctx.fail("suppressed_total() %llu != denied %llu",
             static_cast<unsigned long long>(limiter.suppressed_total()),
             static_cast<unsigned long long>(denied));
  if (round.stall_done.load() && round.stall_windows > (1u << 20)) ctx.note(0, "long_stalls");
  if (round.stall_timed_out.load()) ctx.note(1, "stalls_cut_by_deadline");
}

}  // namespace

const Path kRateLimiterPath{"rate_limiter",
                            "RateLimiter with stalls injected at its race points (Hooks::point)",
                            nullptr, rate_limiter_round};

}  // namespace doorbell::torture
