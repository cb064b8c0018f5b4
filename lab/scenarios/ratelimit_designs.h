// Rate-limiter designs compared by the lab (group `ratelimit`) and checked by
// tests/rate_limiter_stress_test.cpp, with the attribution checker both use.
//
// Every design answers call(now) with a Decision: allowed or not, and the
// window the call was charged to. The checker adds up, per window, what was
// admitted and denied, and from the windows' start times finds:
//  - over_burst: windows that admitted more than burst;
//  - span violations: a window that started less than one interval after the
//    previous one (a double refresh) where the two together admitted more
//    than burst, i.e. more than burst in an interval-long span;
//  - denied_below_burst: denials charged to a window that ended with fewer
//    than burst admissions (a false suppression; in sharded mode, the
//    documented lease slack).
//
// The designs (research: /work/shared/research/rate-limiter-study.md):
//  - NoLimiter: baseline, admits everything, same bookkeeping.
//  - MutexLimiter: Linux `ratelimit_state` fields under a std::mutex.
//  - TrylockLimiter: Linux `___ratelimit()` up to 6.15: a test-and-test-and-
//    set trylock; contention means "suppress", silently (not in `missed`).
//  - SeedLimiter: seed 004's fix: atomic counters and a cmpxchg-elected
//    `refreshing` flag, admission by inc_return <= burst. Kept as the thing
//    under test: its refresher never re-checks `begin`, so a second CPU with
//    a stale `begin` refreshes again (double refresh, > burst per interval);
//    `missed` is zeroed unreported; waiters spin on the flag.
//  - OurLimiter: doorbell::RateLimiter (single word, or sharded with a lease).
//
// Begin-anchored designs (mutex, trylock, seed) number their windows by a
// generation counter bumped at each reset and log each window's start; the
// seed keeps its generation in the high half of its 64-bit `printed`
// counter, which does not change its behaviour.
#pragma once

#include <sched.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cstdint>
#include <cstdlib>
#include <memory>
#include <mutex>
#include <vector>

#include "doorbell/rate_limiter.h"
#include "lab/common/time.h"

namespace doorbell::ratelimit_lab {

struct Decision {
  bool allowed;
  uint64_t window;  // generation (begin-anchored) or window number (ours)
};

using lab::cpu_relax;

// Start times of begin-anchored windows, by generation.
class WindowLog {
 public:
  explicit WindowLog(std::size_t capacity)
      : starts_(new std::atomic<uint64_t>[capacity]), cap_(capacity) {
    for (std::size_t i = 0; i < capacity; ++i) starts_[i].store(0, std::memory_order_relaxed);
  }
  void record(uint64_t generation, uint64_t start) noexcept {
    if (generation < cap_) starts_[generation].store(start, std::memory_order_relaxed);
  }
  uint64_t start(uint64_t generation) const noexcept {
    return generation < cap_ ? starts_[generation].load(std::memory_order_relaxed) : 0;
  }
  std::size_t capacity() const noexcept { return cap_; }

 private:
  std::unique_ptr<std::atomic<uint64_t>[]> starts_;
  std::size_t cap_;
};

// --- the designs -------------------------------------------------------------

struct NoLimiter {
  Decision call(uint64_t) noexcept { return {true, 0}; }
};

// Linux ratelimit_state's fields under a std::mutex.
class MutexLimiter {
 public:
  MutexLimiter(uint64_t interval, uint32_t burst, WindowLog* log)
      : interval_(interval), burst_(burst), log_(log) {}
  Decision call(uint64_t now) noexcept {
    std::lock_guard<std::mutex> guard(mutex_);
    if (begin_ == 0) {
      begin_ = now;
      log_->record(generation_, now);
    }
    if (now >= begin_ + interval_) {
      ++generation_;
      log_->record(generation_, now);
      begin_ = now;
      printed_ = 0;
      missed_ = 0;
    }
    if (printed_ < burst_) {
      ++printed_;
      return {true, generation_};
    }
    ++missed_;
    return {false, generation_};
  }

 private:
  std::mutex mutex_;
  uint64_t interval_;
  uint32_t burst_;
  WindowLog* log_;
  uint64_t begin_ = 0;
  uint64_t generation_ = 0;
  uint32_t printed_ = 0;
  uint64_t missed_ = 0;
};

// Linux ___ratelimit() up to 6.15: raw_spin_trylock or suppress.
template <typename Hooks = NoRateLimitHooks>
class TrylockLimiter {
 public:
  TrylockLimiter(uint64_t interval, uint32_t burst, WindowLog* log)
      : interval_(interval), burst_(burst), log_(log) {}
  Decision call(uint64_t now) noexcept {
    // queued_spin_trylock: read first, then cmpxchg (acquire).
    int expected = 0;
    if (lock_.load(std::memory_order_relaxed) != 0 ||
        !lock_.compare_exchange_strong(expected, 1, std::memory_order_acquire)) {
      ++contention_drops_local();
      return {false, generation_.load(std::memory_order_relaxed)};
    }
    Hooks::point(RateLimitRacePoint::after_load);
    uint64_t generation = generation_.load(std::memory_order_relaxed);
    if (begin_ == 0) {
      begin_ = now;
      log_->record(generation, now);
    }
    if (now >= begin_ + interval_) {
      ++generation;
      generation_.store(generation, std::memory_order_relaxed);
      log_->record(generation, now);
      begin_ = now;
      printed_ = 0;
      missed_ = 0;
    }
    Decision d{false, generation};
    if (printed_ < burst_) {
      ++printed_;
      d.allowed = true;
    } else {
      ++missed_;
    }
    lock_.store(0, std::memory_order_release);
    return d;
  }
  // Calls dropped because the lock was held, counted per thread by the
  // caller of contention_drops_local() (not part of the kernel design).
  static uint64_t& contention_drops_local() noexcept {
    static thread_local uint64_t drops = 0;
    return drops;
  }

 private:
  alignas(64) std::atomic<int> lock_{0};
  uint64_t interval_;
  uint32_t burst_;
  WindowLog* log_;
  uint64_t begin_ = 0;
  std::atomic<uint64_t> generation_{0};
  uint32_t printed_ = 0;
  uint64_t missed_ = 0;
};

// Seed 004's design (the blog's fix), admission by inc_return.
template <typename Hooks = NoRateLimitHooks>
class SeedLimiter {
 public:
  SeedLimiter(uint64_t interval, uint32_t burst, WindowLog* log)
      : interval_(interval), burst_(burst), log_(log) {}
  Decision call(uint64_t now) noexcept {
    for (;;) {
      const uint64_t start = begin_.load(std::memory_order_relaxed);  // READ_ONCE
      if (start != 0 && now < start + interval_) break;               // window current
      Hooks::point(RateLimitRacePoint::after_load);
      int expected = 0;
      if (!refreshing_.compare_exchange_strong(expected, 1, std::memory_order_acquire)) {
        cpu_relax();  // the blog's spin-wait at the window boundary
        continue;
      }
      Hooks::point(RateLimitRacePoint::before_open);
      // The winner does not re-check begin: the fault (R1).
      const uint64_t generation = generation_.load(std::memory_order_relaxed) + 1;
      generation_.store(generation, std::memory_order_relaxed);
      log_->record(generation, now);
      printed_.store(generation << 32, std::memory_order_relaxed);  // atomic64_set(printed, 0)
      missed_.store(0, std::memory_order_relaxed);                  // zeroed, never reported (R5)
      begin_.store(now, std::memory_order_relaxed);                 // WRITE_ONCE(begin, jiffies)
      refreshing_.store(0, std::memory_order_release);
    }
    Hooks::point(RateLimitRacePoint::before_add);
    const uint64_t v = printed_.fetch_add(1, std::memory_order_relaxed) + 1;  // inc_return
    if (static_cast<uint32_t>(v) <= burst_) return {true, v >> 32};
    missed_.fetch_add(1, std::memory_order_relaxed);
    return {false, v >> 32};
  }

 private:
  alignas(64) std::atomic<uint64_t> begin_{0};
  std::atomic<int> refreshing_{0};
  std::atomic<uint64_t> printed_{0};  // generation:32 | printed:32
  std::atomic<uint64_t> missed_{0};
  std::atomic<uint64_t> generation_{0};
  uint64_t interval_;
  uint32_t burst_;
  WindowLog* log_;
};

// doorbell::RateLimiter (kMode detail::kAdaptiveLease), ShardedRateLimiter
// (detail::kFixedLease, `lease` tokens a lease) or the one-word limiter
// (detail::kOneWord).
template <typename Hooks = NoRateLimitHooks, unsigned kMode = detail::kAdaptiveLease>
class OurLimiter {
 public:
  OurLimiter(uint64_t interval, uint32_t burst, uint32_t lease, uint64_t first_now)
      : limiter_(RateLimitOptions{std::chrono::nanoseconds(interval), burst,
                                  kMode == detail::kFixedLease ? lease : 0}),
        base_(limiter_.window_of(first_now)) {}
  Decision call(uint64_t now) noexcept {
    const RateLimitVerdict v = limiter_.check_at(now);
    if (v.suppressed != 0) reported_.fetch_add(v.suppressed, std::memory_order_relaxed);
    return {v.allowed, static_cast<uint32_t>(v.window - base_)};
  }
  detail::BasicRateLimiter<Hooks, kMode>& limiter() noexcept { return limiter_; }
  uint64_t reported() const noexcept { return reported_.load(std::memory_order_relaxed); }

 private:
  detail::BasicRateLimiter<Hooks, kMode> limiter_;
  uint32_t base_;
  alignas(64) std::atomic<uint64_t> reported_{0};
};

// --- the attribution checker -------------------------------------------------

// One thread's admissions and denials per window (index = window id).
class Tally {
 public:
  void add(const Decision& d) {
    if (d.window >= admitted_.size()) grow(d.window);
    if (d.allowed) {
      ++admitted_[d.window];
    } else {
      ++denied_[d.window];
    }
  }
  const std::vector<uint64_t>& admitted() const noexcept { return admitted_; }
  const std::vector<uint64_t>& denied() const noexcept { return denied_; }

 private:
  void grow(uint64_t window) {
    // Window ids are small and dense (relative numbers); a wild id is a bug
    // in the design under test, so cap the growth.
    const std::size_t size =
        std::min<uint64_t>(std::max<uint64_t>(window + 1, 2 * admitted_.size()), uint64_t{1} << 24);
    admitted_.resize(size);
    denied_.resize(size);
    if (window >= size) fatal_window();
  }
  [[noreturn]] static void fatal_window();
  std::vector<uint64_t> admitted_;
  std::vector<uint64_t> denied_;
};

inline void Tally::fatal_window() {
  static const char msg[] = "ratelimit checker: window id out of range\n";
  (void)!::write(2, msg, sizeof msg - 1);
  std::abort();
}

struct CheckResult {
  uint64_t windows = 0;  // windows that saw a call
  uint64_t admitted = 0;
  uint64_t denied = 0;
  uint64_t max_admitted = 0;         // in one window
  uint64_t over_burst = 0;           // windows with > burst admitted
  uint64_t early_refreshes = 0;      // windows started < interval after the previous one
  uint64_t span_violations = 0;      // early refreshes where the pair admitted > burst
  uint64_t max_span = 0;             // most admitted by a window and the early ones after it
  uint64_t denied_below_burst = 0;   // denials charged to windows that admitted < burst
  uint64_t underfilled_windows = 0;  // windows with denials and < burst admitted
  uint64_t min_admitted_when_denied = UINT64_MAX;  // over windows with denials
  uint64_t violations() const noexcept { return over_burst + span_violations; }
};

// starts: nullptr for aligned windows (never early); else the log of window
// starts by generation.
inline CheckResult check(const std::vector<Tally>& tallies, uint32_t burst, uint64_t interval,
                         const WindowLog* starts) {
  std::size_t n = 0;
  for (const Tally& t : tallies) n = std::max(n, t.admitted().size());
  std::vector<uint64_t> admitted(n), denied(n);
  for (const Tally& t : tallies) {
    for (std::size_t i = 0; i < t.admitted().size(); ++i) {
      admitted[i] += t.admitted()[i];
      denied[i] += t.denied()[i];
    }
  }
  CheckResult r;
  uint64_t span = 0;  // admitted since the last on-time window start
  for (std::size_t i = 0; i < n; ++i) {
    if (admitted[i] + denied[i] != 0) ++r.windows;
    r.admitted += admitted[i];
    r.denied += denied[i];
    r.max_admitted = std::max(r.max_admitted, admitted[i]);
    if (admitted[i] > burst) ++r.over_burst;
    if (denied[i] != 0)
      r.min_admitted_when_denied = std::min(r.min_admitted_when_denied, admitted[i]);
    if (denied[i] != 0 && admitted[i] < burst) {
      r.denied_below_burst += denied[i];
      ++r.underfilled_windows;
    }
    bool early = false;
    if (starts != nullptr && i > 0 && i < starts->capacity()) {
      const uint64_t prev = starts->start(i - 1), cur = starts->start(i);
      early = prev != 0 && cur != 0 && cur - prev < interval;
    }
    if (early) {
      ++r.early_refreshes;
      span += admitted[i];
      if (span > burst) ++r.span_violations;
    } else {
      span = admitted[i];
    }
    r.max_span = std::max(r.max_span, span);
  }
  return r;
}

}  // namespace doorbell::ratelimit_lab
