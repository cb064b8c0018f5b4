// doorbell_torture: the racy paths of the library, looped for a given time
// under whatever sanitizer the build has (./run torture uses TSan).
//
// Structure. main() is the orchestrator: single-threaded, it runs each
// selected path in a forked child of its own (signal state, shared memory
// and killed processes never leak between paths) for an equal share of the
// time. The child runs rounds until its share is over; every round starts
// with a seed derived from (--seed, path name, round number), so a failure
// names the seed and round that reproduce its choices.
//
// Deadlines. Every wait inside a round has a deadline (Context::wait_ms());
// a round that misses one records a FAILURE and carries on. Calls that take
// no timeout (EventLoop::run(), SignalReceiver::stop(), joins) are covered
// by the orchestrator: the child publishes its round's deadline in shared
// memory, and a round still running one wait_ms() after it is a hang: the
// orchestrator records it with what the round was doing (Context::phase()),
// kills the child (SIGKILL) and starts a new one at the next round.
//
// Results live in that shared memory too, so a child that is killed or
// crashes (a sanitizer report exits 66) loses nothing it counted.
#pragma once

#include <sched.h>
#include <time.h>

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <mutex>

namespace doorbell::torture {

// CLOCK_MONOTONIC in nanoseconds.
inline int64_t now_ns() {
  timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return int64_t{ts.tv_sec} * 1000000000 + ts.tv_nsec;
}

void sleep_ns(int64_t ns);

inline void cpu_relax() {
#if defined(__x86_64__) || defined(__i386__)
  __builtin_ia32_pause();
#elif defined(__aarch64__)
  asm volatile("yield");
#endif
}

inline uint64_t splitmix64(uint64_t x) {
  x += 0x9e3779b97f4a7c15ull;
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ull;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebull;
  return x ^ (x >> 31);
}

// xorshift64*, seeded through splitmix64 (never zero).
class Rng {
 public:
  explicit Rng(uint64_t seed = 1) : state_(splitmix64(seed) | 1) {}
  uint64_t next() {
    state_ ^= state_ >> 12;
    state_ ^= state_ << 25;
    state_ ^= state_ >> 27;
    return state_ * 0x2545f4914f6cdd1dull;
  }
  // Uniform in [0, n) (n > 0; the bias is irrelevant here).
  uint64_t below(uint64_t n) { return next() % n; }
  bool chance(uint64_t one_in) { return below(one_in) == 0; }

 private:
  uint64_t state_;
};

// A random short delay: nothing, a spin of up to `max_spins` pauses, a
// yield, or a sleep of up to `max_sleep_us`.
void random_delay(Rng& rng, uint32_t max_spins = 2000, uint32_t max_sleep_us = 200);

// A one-shot flag one thread sets and another waits for with a deadline.
class Latch {
 public:
  void set() {
    std::lock_guard<std::mutex> lock(mutex_);
    set_ = true;
    cv_.notify_all();
  }
  // True when set before `deadline_ns` (CLOCK_MONOTONIC).
  bool wait_until_ns(int64_t deadline_ns) {
    std::unique_lock<std::mutex> lock(mutex_);
    while (!set_) {
      const int64_t left = deadline_ns - now_ns();
      if (left <= 0) return false;
      cv_.wait_for(lock, std::chrono::nanoseconds(left < 10000000 ? left : 10000000));
    }
    return true;
  }

 private:
  std::mutex mutex_;
  std::condition_variable cv_;
  bool set_ = false;
};

inline constexpr int kMaxStoredFailures = 16;
inline constexpr int kMaxNotes = 4;

struct FailureRecord {
  uint64_t round;
  uint64_t round_seed;
  double at_s;  // seconds into the path's run
  char what[240];
};

// One path's results and watchdog state, in MAP_SHARED memory.
struct PathShared {
  std::atomic<uint64_t> rounds_done;  // completed rounds (the next round's number)
  std::atomic<uint64_t> failures;     // all failures (stored ones are the first 16)
  std::atomic<uint32_t> stored;
  FailureRecord records[kMaxStoredFailures];
  std::atomic<uint64_t> round;             // the round in progress
  std::atomic<uint64_t> round_seed;        // its seed
  std::atomic<int64_t> round_deadline_ns;  // 0: between rounds
  std::atomic<int64_t> path_start_ns;
  char phase[160];  // what the round is doing; read by the orchestrator after a kill
  std::atomic<uint64_t> notes[kMaxNotes];
  char note_names[kMaxNotes][40];
};

// What a path's round sees.
class Context {
 public:
  Context(PathShared* shared, uint64_t path_seed, int64_t end_ns, int64_t wait_ns)
      : shared_(shared), path_seed_(path_seed), end_ns_(end_ns), wait_ns_(wait_ns) {}

  // Starts the next round when time is left: picks its seed and publishes
  // its deadline (3 waits). Counts the previous round as done.
  bool next_round();
  // Ends the round in progress (counted as done).
  void end_round();

  Rng& rng() { return rng_; }
  uint64_t round() const { return round_; }
  uint64_t round_seed() const { return round_seed_; }
  // The deadline of one wait in a round, in ns and ms.
  int64_t wait_ns() const { return wait_ns_; }
  int64_t wait_ms() const { return wait_ns_ / 1000000; }
  // An absolute deadline one wait from now.
  int64_t deadline() const { return now_ns() + wait_ns_; }
  // Whether the path's time is over (rounds may check it to end early).
  bool time_over() const { return now_ns() >= end_ns_; }

  // Says what the round does now; the orchestrator prints it for a hang.
  void phase(const char* format, ...) __attribute__((format(printf, 2, 3)));
  // Records a failure of this round (printed with how to reproduce it).
  void fail(const char* format, ...) __attribute__((format(printf, 2, 3)));
  bool failed_this_round() const { return failed_this_round_; }
  // Counts something worth reporting that is not a failure.
  void note(int index, const char* name, uint64_t add = 1);

 private:
  PathShared* shared_;
  uint64_t path_seed_;
  int64_t end_ns_;
  int64_t wait_ns_;
  Rng rng_;
  uint64_t round_ = 0;
  uint64_t round_seed_ = 0;
  bool in_round_ = false;
  bool failed_this_round_ = false;
};

// Records a failure into `shared` (the orchestrator uses it for hangs and
// crashes, the Context for everything else).
void record_failure(PathShared* shared, uint64_t round, uint64_t round_seed, const char* what);

struct Path {
  const char* name;
  const char* summary;
  // Once per child process, before the first round (may be null).
  void (*setup)(Context& ctx);
  // One round.
  void (*round)(Context& ctx);
};

// The paths, defined in path_*.cpp.
extern const Path kEventLoopPath;
extern const Path kSignalChannelPath;
extern const Path kSignalReceiverPath;
extern const Path kBellRingPath;
extern const Path kRateLimiterPath;

}  // namespace doorbell::torture
