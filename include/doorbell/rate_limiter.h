// RateLimiter: "at most `burst` events per `interval`", exact, lock-free,
// and never waiting.
//
// A RateLimiter answers one question per call: may this event go ahead now?
// It is the user-space counterpart of Linux's `struct ratelimit_state`
// (kernel `printk_ratelimited()` style: allowed events per window, and a
// "N callbacks suppressed" report when a new window begins), built for hot
// paths: a packet path, a log call in a tight loop, a signal handler.
//
//   doorbell::RateLimiter limiter{std::chrono::seconds(1), 10};
//   ...
//   if (auto v = limiter.check()) {
//     if (v.suppressed) log("%llu callbacks suppressed", v.suppressed);
//     log("the event");
//   }
//
// Windows
//   Time is cut into fixed windows of `interval` aligned to the clock's zero
//   (window number = now / interval, computed with one multiply). Every call
//   is charged to one window, and at most `burst` events are admitted per
//   window. Like every fixed-window limiter, up to 2 * burst can pass in an
//   `interval`-long span that straddles a window boundary. A window is never
//   shorter than `interval` (the multiply rounds the window length up by at
//   most a fraction of a nanosecond).
//
// Guarantees (under any interleaving of any number of threads and signal
// handlers, with any timestamps):
//  - Exact: never more than `burst` events admitted in one window.
//  - Bounded under-admission, never because of contention: a call is
//    denied only when the shared word has handed out all `burst` tokens of
//    the window it is charged to (or, for allow(n), fewer than n are left
//    there), and of those at most the lease slack sits unspent in other
//    threads' slots: under 1/64 of burst with up to 16 threads (see
//    "Adaptive lease" for the exact bound; ShardedRateLimiter's is its
//    own). A single thread (and its signal handlers) gets exactly `burst`
//    per window. Contention never denies a call. A caller whose
//    timestamp is older than the newest window opened by another caller is
//    charged to that newest window (its own window is over), and never
//    moves the shared word back to its own window.
//  - Never waits: no lock, no spin-wait, no syscall (except the clock read
//    of allow()/check(), a vDSO call). allow()/allow_at() for one event and
//    every denial are wait-free in practice: they retry a compare-and-swap
//    only when another caller opened a newer window in between. allow(n)
//    with n > 1 is lock-free (it retries a CAS when another caller changed
//    the count in between, i.e. when someone else made progress).
//  - Denials do no write to the shared word and execute no locked
//    instruction: a denied call loads the shared word and adds one to this
//    thread's own miss counter with a plain (unlocked) add, on a cache line
//    only this thread writes (see "Slots"). The exceptions: threads beyond
//    the 16 that own a slot, and the ProcessShared types, use an atomic add
//    on their own line.
//  - Exact suppression accounting: every denied event is counted once. The
//    count of events denied since the last report is handed, once, to the
//    check()/check_at() caller that opens a new window (Verdict::suppressed,
//    kernel style); flush() returns what was not yet reported. At
//    quiescence: sum of reported + flush() == events denied, exactly.
//    allow() never reports; its denials are reported by the next check() or
//    flush(). Denials that race with a window opening are reported at the
//    next one.
//
// States
//  - Disabled: interval == 0. This is the zero-initialised state: a
//    default-constructed RateLimiter, or one in zero-filled static storage,
//    is valid and never limits. allow() then costs one load and one branch
//    and touches no shared memory (the lesson of the 2025 kernel regression
//    where zero-filled `ratelimit_state`s suppressed everything, and of seed
//    004, where an unconfigured limiter still took two locks per packet).
//  - Limiting: interval > 0, burst > 0.
//  - Always limiting: interval > 0, burst == 0 (every event is denied and
//    counted; windows still roll over so the suppressed count is reported).
//
// Slots
//  Each limiter has kSlots (16) slots, each on its own cache line, each with
//  two cells {denied count, sharded lease}: the owner's and the sharers'.
//  On its first call to any limiter a thread claims one of 16 process-wide
//  slot numbers for good (until it exits): one never claimed, one whose
//  owner has exited (checked with tgkill(pid, tid, 0)), in every limiter.
//  Every claim is a compare-and-swap of an owner word that holds the tid
//  and a claim number, so a thread that was given an exited owner's tid
//  and a thread that found that owner gone never both own the slot.
//  Only the owner, and signal handlers running on it, write the owner cell,
//  so the owner updates it with single unlocked instructions (x86-64 `add`
//  and `cmpxchg` without `lock`; a signal arrives between instructions,
//  never inside one, so a handler's update is never lost or doubled; other
//  architectures use the atomic operations). A locked instruction costs a
//  store-buffer drain even on a line no other core holds: that was most of
//  the cost of a denial. Threads that find all 16 slots owned by live
//  threads share the second cells (slot = arrival order % 16), with atomic
//  read-modify-writes: still exact, a locked add per denial. After fork()
//  the child's thread keeps its slot (pthread_atfork; a child of a raw
//  clone() or _Fork() that calls a limiter is not covered). A limiter
//  occupies 1152 bytes. For very many limiters (one per flow), prefer a few
//  limiters keyed by class.
//
// Adaptive lease (RateLimiter)
//  One type for every regime: no need to predict whether the limiter will
//  be hot, limiting or idle. A thread's slot leases tokens from the shared
//  word and admits from the slot without touching the shared word. How
//  many it leases follows what the window has left, like the batch of the
//  kernel's percpu_counter: a refill asks for left / 1024
//  (kAdaptiveLeaseDivisor = 64 * kSlots), at least 1, at most 4096
//  (kAdaptiveLeaseCap). So:
//   - far from the limit (the hot, never-limiting case), a thread writes
//     the shared word once per up to 4096 calls and otherwise only its own
//     slot's line: nothing shared is written on the hot path;
//   - near the limit (fewer than 2048 left) every lease is one token: an
//     admission is one fetch_add on the shared word, as in a one-word
//     limiter, and little can be stranded;
//   - when limiting (window full), a denial loads the slot and the shared
//     word and writes only this thread's own slot, as before.
//  Exactness is untouched: tokens leave the shared word at most `burst` per
//  window whatever the lease sizes (each refill's range is cut at burst by
//  the count its RMW returns). Under-admission bound: a refill that asks
//  when `left` tokens are left keeps at most lease_for(left) - 1 <=
//  min(burst / 1024, 4095) in its cell, so when a call is denied, the
//  tokens of its window not yet spent, all in other threads' cells, are at
//  most cells * min(burst / 1024, 4095), where cells is the number of cells
//  refilled in that window: at most 16 with up to 16 threads (< burst / 64,
//  i.e. at least 98.4% of burst admitted in a window that denies), 32 with
//  more threads (the sharers' cells lease too), plus min(burst / 1024,
//  4095) per refill of a cell that overlaps another refill of the same
//  cell (an owner and its signal handler, or sharers of a cell). With
//  burst < 2048 every lease is one token and nothing is ever stranded
//  except by such an overlap. Unspent tokens of a window are never carried
//  into the next. The first call of each window of each thread refills (a
//  fetch_add on the shared word); allow(n) with n > 1 always goes to the
//  shared word.
//  Costs, single thread, clock excluded (tests/rate_limiter_callgrind.cmake):
//  an admission at most 26 instructions and no locked one (amortised: one
//  per lease), a denial at most 30 and no locked one.
//
// ShardedRateLimiter (same interface; RateLimitOptions::lease)
//  A fixed lease: pick it only when you want to set the lease yourself,
//  e.g. a known absolute bound on the slack (kSlots * (lease - 1) whatever
//  the burst) or a lease smaller than RateLimiter's for a huge burst. For
//  everything else RateLimiter is as fast on the hot path (the same inline
//  path) and strands less near the limit. A thread's slot leases
//  `lease` tokens at a time from the shared word and then admits from its
//  slot without touching the shared word. Exactness is kept (tokens are
//  handed out from the shared word at most `burst` per window). The price is
//  bounded under-admission: tokens leased to a cell whose threads stop
//  calling are stranded until the window ends, so a window may deny calls
//  while up to kSlots * (lease - 1) of its `burst` tokens sit unused in other
//  owners' cells (2 * kSlots * (lease - 1) with more than 16 threads, whose
//  shared cells lease too). Each refill of a cell that overlaps another
//  refill of the same cell (an owner and a signal handler interrupting it,
//  or sharers of a cell) may strand up to lease - 1 more: the bound is
//  (lease - 1) per refill under way at once. An owner takes a leased token with one unlocked
//  cmpxchg. allow(n) with n > 1 always goes to the shared word.
//
// Timestamps and the default clock
//  allow()/check() read detail::coarse_now_ns(): CLOCK_MONOTONIC_COARSE
//  through the vDSO, about 3 ns here, versus about 26 ns for
//  CLOCK_MONOTONIC / std::chrono::steady_clock on the same VM (a precise
//  clock would cost several times the limiter itself). Its resolution is
//  the kernel tick (1-4 ms; see coarse_clock_resolution_ns()): windows
//  roll over on tick boundaries, so an interval shorter than about ten
//  ticks is not honoured precisely (still never more than `burst` per
//  window, but windows then last a whole number of ticks). For short
//  intervals, or when the caller already has a timestamp, use allow_at() /
//  check_at() with any monotonic nanosecond clock; all callers of one
//  limiter must use the same clock. Non-monotonic timestamps are safe (see
//  "No false suppression"), just charged to the newest window.
//  The shared word keeps the low 32 bits of the window number, which wrap
//  after 2^32 intervals (49.7 days at 1 ms, 71 minutes at 1 us); the limiter
//  also keeps the newest full 64-bit window number ever opened, its first
//  window included (whatever its number: 2^31 and more, or 0 modulo 2^32). A timestamp
//  older than the newest opened window, however old (a caller that stalled
//  after reading the clock, or a stale timestamp passed in), is charged to
//  the newest window: the shared word never moves back to an older window,
//  so exactness holds for any staleness. A limiter left idle for any time
//  opens a new window on its next call, except when the idle time is, to
//  the window, a multiple of 2^32 windows: that call counts on in the old
//  window's count (and may be denied) for that one window. One more limit
//  of a 32-bit window in a 64-bit CAS (tests/models/rate_limiter_wrap.pml
//  checks the rest under it): a call that spans 2^32 windows between its
//  clock read (or the window of the word it loaded, if older) and its CAS
//  could find the word holding the same value again and move it back. In the lease modes
//  a slot's leased tokens are likewise taken for current when the slot was
//  idle for 2^32 - 2^20 to 2^32 windows (mod 2^32); a caller more than
//  2^20 windows stale does not spend its slot's lease. The lease path and
//  allow(n), without the wrap: tests/models/rate_limiter_{lease,allow_n}.pml.
//
// Memory ordering
//  The limiter hands out decisions, not data: admissions and denials are
//  relaxed. (Opening a window is a release CAS paired with an acquire fence
//  on the path that may open one, for the limiter's own bookkeeping of the
//  newest window; it orders nothing for the caller.)
//  Exactness rests only on the shared word's modification order (every
//  admission is a read-modify-write whose returned value is distinct).
//  A caller that needs "the event I admitted happens after X" must order X
//  itself.
//
// Async-signal-safety
//  Every member function except the constructors is async-signal-safe and
//  noexcept: no allocation, no lock, no errno change (clock_gettime on the
//  vDSO does not fail). The first call on a thread claims its slot with
//  gettid, at most 16 tgkill(.., 0) and a CAS (async-signal-safe, errno
//  preserved). A signal handler that interrupts an outer call on the same
//  thread and calls the same limiter is counted exactly (tests:
//  SignalHandlerMidCall_*).
//
// Lifetime, fork, processes
//  Not copyable or movable. Destroy it only when no thread can call it.
//  fork(): the child gets a copy with the same counts; nothing to re-arm.
//  Across processes (a limiter in shared memory) use
//  ProcessSharedRateLimiter / ProcessSharedShardedRateLimiter: slot owners
//  are per process, so threads of two processes may own the same slot, and
//  these types update every cell atomically (exact; a locked add per
//  denial). A plain RateLimiter in shared memory still admits exactly, but
//  may lose denied counts. Either way, only with allow_at() and a clock both
//  processes share (CLOCK_MONOTONIC is).
#pragma once

#include <atomic>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <stdexcept>

namespace doorbell {

// Options for a RateLimiter. A value-initialised RateLimitOptions{} means
// "never limit".
struct RateLimitOptions {
  // Window length; 0 disables the limiter. Negative is invalid.
  std::chrono::nanoseconds interval{0};
  // Events admitted per window; at most RateLimitOptions::kMaxBurst.
  uint32_t burst = 0;
  // ShardedRateLimiter only: each slot leases this many tokens at a time
  // (0: burst / 64 clamped to 1..64); at most kMaxLease. Must be 0 for
  // RateLimiter.
  uint32_t lease = 0;

  static constexpr uint32_t kMaxBurst = 1u << 31;
  static constexpr uint32_t kMaxLease = 1u << 16;
};

// One decision, with the suppression report of check()/check_at().
struct RateLimitVerdict {
  bool allowed = true;
  // > 0 only for the caller that opened a new window (check()/check_at()):
  // the events denied since the previous report. Reported exactly once.
  uint64_t suppressed = 0;
  // The window number this call was charged to (low 32 bits of
  // now / interval). For audits and tests; 0 when the limiter is disabled.
  uint32_t window = 0;

  explicit operator bool() const noexcept { return allowed; }
};

// The points where another thread may act between two steps of a call; the
// stress test injects delays there. Production code uses NoRateLimitHooks.
enum class RateLimitRacePoint {
  after_load,          // the shared word was loaded, nothing decided yet
  before_open,         // about to CAS a newer window into the shared word
  after_open,          // this caller opened a window, report not yet taken
  before_add,          // about to fetch_add an admission
  before_lease_take,   // about to take a token from the slot's lease
  before_lease_store,  // leased tokens obtained, about to store them in the slot
  before_miss          // denied, about to add the denial to this thread's slot
};

struct NoRateLimitHooks {
  static void point(RateLimitRacePoint) noexcept {}
};

namespace detail {

// CLOCK_MONOTONIC_COARSE in nanoseconds (vDSO; async-signal-safe).
uint64_t coarse_now_ns() noexcept;

inline constexpr unsigned kRateLimitSlots = 16;
inline constexpr unsigned kRateLimitSlotSize = 64;
// A slot holds two cells {missed, lease}: the owner's at offset 0, the
// sharers' at this offset.
inline constexpr unsigned kRateLimitSharedCell = 16;

// This thread's cell: the byte offset of its slot plus one slot size, plus
// kRateLimitSharedCell when the thread does not own the slot; before the
// thread's first call, kRateLimitSharedCell alone. One bit test tells the
// hot paths "owned cell" from "shared cell or not yet assigned" (both rare,
// out of line). See assign_rate_limit_slot().
inline constexpr uint32_t kRateLimitUnassigned = kRateLimitSharedCell;
inline constinit thread_local uint32_t tl_rate_limit_slot = kRateLimitUnassigned;

// Assigns this thread's slot on its first call to any limiter (out of line:
// two syscalls at most once per thread and slot owner checked; async-signal-
// safe, errno preserved). A thread owns one of the kRateLimitSlots slots
// when one is free: never assigned, or assigned to a thread that has exited
// (tgkill(pid, tid, 0) fails with ESRCH), or to this thread already (a
// signal handler on this thread claimed it during this very assignment).
// At most one live thread owns a slot, also when a tid is reused (each claim
// is a CAS of (tid, claim number)); fork() hands the forking thread's slot
// to the child's thread (pthread_atfork). Threads that find no free
// slot share one slot's second cell (slot = n % kRateLimitSlots in order of
// arrival), updated with atomic read-modify-writes.
uint32_t assign_rate_limit_slot() noexcept;

inline uint32_t rate_limit_slot_offset() noexcept {
  const uint32_t offset = tl_rate_limit_slot;
  if (offset == kRateLimitUnassigned) [[unlikely]]
    return assign_rate_limit_slot();
  return offset;
}
// For tests: the slot index and ownership an offset encodes.
constexpr unsigned rate_limit_slot_index(uint32_t offset) noexcept {
  return offset / kRateLimitSlotSize - 1;
}
constexpr bool rate_limit_slot_owned(uint32_t offset) noexcept {
  return (offset & kRateLimitSharedCell) == 0;
}

// Read-modify-writes of a cell that only this thread and its signal
// handlers write (the thread owns the slot). On x86-64 they are single
// instructions without the lock prefix: a signal is delivered between
// instructions, never inside one, so a handler's update on this thread is
// never lost; no other thread writes the cell, so the bus lock (and the
// store-buffer drain that comes with it, the cost of a locked instruction
// even on a line no other core holds) buys nothing. Other threads only
// read the cell (aligned 8-byte accesses are single-copy atomic). Elsewhere
// they are the atomic operations.
inline void owner_add(std::atomic<uint64_t>& cell, uint64_t n) noexcept {
#if defined(__x86_64__)
  asm volatile("addq %1, %0" : "+m"(*reinterpret_cast<uint64_t*>(&cell)) : "er"(n) : "cc");
#else
  cell.fetch_add(n, std::memory_order_relaxed);
#endif
}
inline bool owner_cas(std::atomic<uint64_t>& cell, uint64_t& expected, uint64_t desired) noexcept {
#if defined(__x86_64__)
  bool done;
  asm volatile("cmpxchgq %3, %1"
               : "=@ccz"(done), "+m"(*reinterpret_cast<uint64_t*>(&cell)), "+a"(expected)
               : "r"(desired));
  return done;
#else
  return cell.compare_exchange_strong(expected, desired, std::memory_order_relaxed);
#endif
}
// owner_cas(cell, expected, expected - 1) for the sharded hot path, which
// re-reads the cell when it fails: the jump is in the asm, so the compiler
// need not materialise the flag.
inline bool owner_take(std::atomic<uint64_t>& cell, uint64_t expected) noexcept {
#if defined(__x86_64__)
  asm goto("cmpxchgq %[desired], %[cell]\n\tjne %l[changed]"
           : [cell] "+m"(*reinterpret_cast<uint64_t*>(&cell)), "+a"(expected)
           : [desired] "r"(expected - 1)
           : "cc"
           : changed);
  return true;
changed:
  return false;
#else
  return cell.compare_exchange_strong(expected, expected - 1, std::memory_order_relaxed);
#endif
}

// BasicRateLimiter's ways of handing out tokens (its second template
// argument; `false` and `true` are kOneWord and kFixedLease).
//  - kOneWord: every admission is a fetch_add on the shared word
//    (detail::OneWordRateLimiter; the lab's `oneword` row).
//  - kFixedLease: a slot leases a fixed number of tokens at a time
//    (ShardedRateLimiter).
//  - kAdaptiveLease: the lease follows the tokens left in the window
//    (RateLimiter; see "Adaptive lease" at the top of this file).
inline constexpr unsigned kOneWord = 0;
inline constexpr unsigned kFixedLease = 1;
inline constexpr unsigned kAdaptiveLease = 2;
// Adaptive lease: a refill takes (tokens left in the window) / this, at
// least 1 and at most kAdaptiveLeaseCap.
inline constexpr uint32_t kAdaptiveLeaseDivisor = 64 * kRateLimitSlots;
inline constexpr uint32_t kAdaptiveLeaseCap = 4096;

template <typename Hooks, unsigned kMode, bool kProcessShared = false>
class BasicRateLimiter {
  static_assert(kMode <= kAdaptiveLease, "BasicRateLimiter: unknown lease mode");
  // The leased path (slot leases): both lease modes.
  static constexpr bool kSharded = kMode != kOneWord;
  static constexpr bool kAdaptive = kMode == kAdaptiveLease;

 public:
  static constexpr unsigned kSlots = kRateLimitSlots;
  // Process-shared limiters never use the unlocked owner updates: threads of
  // two processes may own the same slot index.
  static constexpr uint32_t kCellMask = kProcessShared ? kRateLimitSharedCell : 0;

  // Disabled: never limits. Same as a zero-filled object.
  constexpr BasicRateLimiter() noexcept = default;

  // Throws std::invalid_argument for a negative interval, burst > kMaxBurst,
  // lease > kMaxLease, or a lease given to the single-word RateLimiter.
  // ShardedRateLimiter with lease 0 picks burst / 64, clamped to 1..64.
  explicit BasicRateLimiter(RateLimitOptions options) {
    if (options.interval.count() < 0) throw std::invalid_argument("RateLimiter: negative interval");
    if (options.burst > RateLimitOptions::kMaxBurst)
      throw std::invalid_argument("RateLimiter: burst above 2^31");
    if (options.lease > RateLimitOptions::kMaxLease)
      throw std::invalid_argument("RateLimiter: lease above 2^16");
    if (kMode != kFixedLease && options.lease != 0)
      throw std::invalid_argument("RateLimiter: a fixed lease needs ShardedRateLimiter");
    if (kMode == kFixedLease && options.lease == 0) {
      const uint32_t auto_lease = options.burst / (4 * kSlots);
      options.lease = auto_lease < 1 ? 1 : (auto_lease > 64 ? 64 : auto_lease);
    }
    interval_ns_ = static_cast<uint64_t>(options.interval.count());
    // window = mulhi(now, inverse): monotone in now, one multiply, and each
    // window is 2^64 / inverse >= interval nanoseconds long.
    inverse_ = interval_ns_ == 0 ? 0 : ~uint64_t{0} / interval_ns_;
    burst_ = options.burst;
    lease_ = options.lease;
  }
  BasicRateLimiter(std::chrono::nanoseconds interval, uint32_t burst)
      : BasicRateLimiter(RateLimitOptions{interval, burst, 0}) {}

  BasicRateLimiter(const BasicRateLimiter&) = delete;
  BasicRateLimiter& operator=(const BasicRateLimiter&) = delete;

  // allow / allow(n)
  //   May n events (default 1) go ahead now, on the default coarse clock?
  //   All or nothing: either n are admitted or none (and n are counted as
  //   suppressed). n == 0 is always admitted. n > burst is always denied.
  bool allow() noexcept {
    if (interval_ns_ == 0) return true;
    return decide<false>(coarse_now_ns(), 1).allowed;
  }
  bool allow(uint32_t n) noexcept {
    if (interval_ns_ == 0) return true;
    return decide<false>(coarse_now_ns(), n).allowed;
  }

  // allow_at
  //   Same, at the caller's timestamp now_ns (any monotonic nanosecond
  //   clock, the same for all callers of this limiter).
  bool allow_at(uint64_t now_ns, uint32_t n = 1) noexcept {
    if (interval_ns_ == 0) return true;
    return decide<false>(now_ns, n).allowed;
  }

  // check / check_at
  //   Like allow()/allow_at(), and when this call opens a new window, also
  //   takes the "events suppressed since the last report" count.
  RateLimitVerdict check(uint32_t n = 1) noexcept {
    if (interval_ns_ == 0) return {};
    return decide<true>(coarse_now_ns(), n).verdict();
  }
  RateLimitVerdict check_at(uint64_t now_ns, uint32_t n = 1) noexcept {
    if (interval_ns_ == 0) return {};
    return decide<true>(now_ns, n).verdict();
  }

  // flush
  //   Returns the suppressed events not yet reported, and marks them
  //   reported (call it at shutdown, like the kernel's
  //   RATELIMIT_MSG_ON_RELEASE). Exact when no call is in flight.
  uint64_t flush() noexcept { return take_report(); }

  // suppressed_total
  //   All events denied so far (reported or not). Exact at quiescence.
  uint64_t suppressed_total() const noexcept {
    uint64_t total = 0;
    for (const Slot& s : slots_)
      total += s.owner.missed.load(std::memory_order_relaxed) +
               s.shared.missed.load(std::memory_order_relaxed);
    return total;
  }

  std::chrono::nanoseconds interval() const noexcept {
    return std::chrono::nanoseconds(static_cast<int64_t>(interval_ns_));
  }
  uint32_t burst() const noexcept { return burst_; }
  // The fixed lease of ShardedRateLimiter; 0 for RateLimiter (its lease
  // adapts: see "Adaptive lease") and for the one-word limiter.
  uint32_t lease() const noexcept { return kAdaptive ? 0 : lease_; }
  // True for ShardedRateLimiter (a fixed lease).
  static constexpr bool sharded() noexcept { return kMode == kFixedLease; }
  // True for RateLimiter (the adaptive lease).
  static constexpr bool adaptive() noexcept { return kAdaptive; }
  // The most tokens one refill of a slot's lease takes from the shared word
  // in a window with `left` tokens left (left > 0): lease() for
  // ShardedRateLimiter; for RateLimiter left / kAdaptiveLeaseDivisor,
  // clamped to 1..kAdaptiveLeaseCap; 1 for the one-word limiter. (A refill
  // gets fewer when other callers take the rest first.)
  uint32_t lease_for(uint32_t left) const noexcept {
    if constexpr (kAdaptive) {
      const uint32_t ask = left / kAdaptiveLeaseDivisor;
      return ask < 1 ? 1 : (ask > kAdaptiveLeaseCap ? kAdaptiveLeaseCap : ask);
    } else if constexpr (kSharded) {
      return lease_;
    } else {
      return 1;
    }
  }
  bool enabled() const noexcept { return interval_ns_ != 0; }

  // For tests: where the hot fields lie, in bytes from the limiter's start.
  // `config` is interval, inverse, burst and lease (read by every call),
  // `word` the shared word (written by admissions, leases and openings),
  // `slots` the first slot.
  struct Layout {
    std::size_t config, word, slots, size;
  };
  static constexpr Layout layout() noexcept {
    return {offsetof(BasicRateLimiter, interval_ns_), offsetof(BasicRateLimiter, word_),
            offsetof(BasicRateLimiter, slots_), sizeof(BasicRateLimiter)};
  }

  // The window number a timestamp falls in (the low 32 bits of
  // full_window_of(), as kept in the shared word and in verdicts).
  uint32_t window_of(uint64_t now_ns) const noexcept {
    return static_cast<uint32_t>(full_window_of(now_ns));
  }
  // The full 64-bit window number: now_ns / interval, rounded down (one
  // multiply; never wraps).
  uint64_t full_window_of(uint64_t now_ns) const noexcept {
    return static_cast<uint64_t>(static_cast<unsigned __int128>(now_ns) * inverse_ >> 64);
  }

 private:
  // Shared word: window:32 | count:32. `count` is the number of events
  // charged to `window`, plus the overshoot of denied fetch_adds (at most
  // one per caller in flight, so it never carries into `window` for
  // burst <= 2^31).
  static constexpr uint64_t pack(uint32_t window, uint32_t count) noexcept {
    return static_cast<uint64_t>(window) << 32 | count;
  }
  static constexpr uint32_t window_part(uint64_t w) noexcept {
    return static_cast<uint32_t>(w >> 32);
  }
  static constexpr uint32_t count_part(uint64_t w) noexcept { return static_cast<uint32_t>(w); }
  // Wrap-aware "window a is newer than window b".
  static constexpr bool newer(uint32_t a, uint32_t b) noexcept {
    return static_cast<int32_t>(a - b) > 0;
  }
  // Lease modes: may a call whose timestamp falls in `window` spend tokens
  // of a slot lease for window `current`? Yes when `current` is the same
  // window or a newer one, by at most kStaleWindows (a caller whose clock
  // read is behind). A lease further ahead than that is treated as one from
  // 2^32 windows ago (wrapped) and is not spent; the caller then goes to
  // the shared word, where claim_open() decides with the full window number.
  static constexpr uint32_t kStaleWindows = 1u << 20;
  static constexpr bool charged_to(uint32_t window, uint32_t current) noexcept {
    return current - window <= kStaleWindows;
  }
  // Must a call in full window `full` open it on shared word w (whose
  // 32-bit window differs from the caller's)? If so, claims it: raises
  // newest_ to `full` before the caller's CAS. newest_ is the newest full
  // (64-bit, never wrapping) window any caller decided to open.
  //  - Never open when the caller's window is older than newest_: its clock
  //    read is stale (it stalled after reading it, or passed an old
  //    timestamp), and opening would move the word back to an old window,
  //    after which the next caller would reopen the newer window with a
  //    fresh count: up to 2 * burst in one window (issue 12, item 6). The
  //    caller is charged to the word's window instead.
  //  - Otherwise open when the word was never opened (zero; a window opened
  //    with count 0 may be reopened: nothing was admitted in it), when the
  //    word's window is older than the caller's (wrap-aware), or when
  //    newest_ is half a wrap (2^31 windows) or more behind the caller: the
  //    word's 32-bit window number is then that old and only looks newer
  //    because it wrapped (an idle limiter).
  // Why raise newest_ before the CAS: every window in the word was claimed
  // in newest_ first, so newest_ >= the word's full window, and an open by
  // a caller with full >= newest_ always moves the word forward. (Raised
  // after the CAS, a caller stalled half a wrap could read an old newest_
  // between another caller's CAS and its raise, and move the word back;
  // tests/models/rate_limiter_wrap.pml -DRAISE_AFTER shows it.) A claim
  // whose CAS then fails only makes callers with an older clock read
  // (racing the boundary) be charged to the word's window.
  // Ordering: the opening CAS is a release and this fence an acquire, so a
  // caller that loaded a word value written by (or, through fetch_adds,
  // after) an opening CAS sees that opener's raise of newest_.
  bool claim_open(uint64_t full, uint64_t w) noexcept {
    std::atomic_thread_fence(std::memory_order_acquire);
    uint64_t newest = newest_.load(std::memory_order_relaxed);
    if (full < newest) return false;
    const bool open =
        w == 0 || newer(static_cast<uint32_t>(full), window_part(w)) || full - newest >= kHalfWrap;
    // A max: never lowers newest_.
    while (open && newest < full &&
           !newest_.compare_exchange_weak(newest, full, std::memory_order_relaxed)) {
    }
    return open;
  }
  static constexpr uint64_t kHalfWrap = uint64_t{1} << 31;

  struct Cell {
    std::atomic<uint64_t> missed{0};  // events denied by this cell's threads
    std::atomic<uint64_t> lease{0};   // lease modes: window:32 | tokens left:32
  };
  struct alignas(64) Slot {
    Cell owner;   // written only by the thread that owns the slot
    Cell shared;  // written by threads without a slot of their own (RMWs)
  };

  // The cell address is the TLS offset added to the slot array (one load,
  // one add).
  Cell& cell_at(uint32_t offset) noexcept {
    static_assert(sizeof(Slot) == kRateLimitSlotSize);
    static_assert(offsetof(Slot, shared) == kRateLimitSharedCell);
    return *reinterpret_cast<Cell*>(reinterpret_cast<char*>(slots_) +
                                    (offset - kRateLimitSlotSize));
  }

  // Counts n denied events in this thread's cell. In an owned cell one
  // unlocked add (see owner_add): a signal handler on this thread that
  // counts too runs wholly before or after it, and no other thread writes
  // the cell. In a shared cell an atomic RMW: exact against the sharers.
  // Either way no write to the shared word's line.
  // Returns false (the verdict of a denial). The shared-cell and first-
  // call cases are out of line, and their verdict is the call's result, so
  // that nothing is live across the call and the hot paths need no saved
  // register (the disabled path included).
  bool count_miss(uint32_t n) noexcept {
    // Process-shared limiters set the "shared cell" bit here (kCellMask):
    // every denial takes the atomic path.
    const uint32_t offset = tl_rate_limit_slot | kCellMask;
    if (!rate_limit_slot_owned(offset)) [[unlikely]]
      return count_shared_miss(n);
    Hooks::point(RateLimitRacePoint::before_miss);
    owner_add(cell_at(offset).missed, n);
    return false;
  }
  [[gnu::noinline, gnu::cold]] bool count_shared_miss(uint32_t n) noexcept {
    const uint32_t offset = rate_limit_slot_offset();
    Hooks::point(RateLimitRacePoint::before_miss);
    if (rate_limit_slot_owned(offset) && !kProcessShared) {
      owner_add(cell_at(offset).missed, n);
    } else {
      cell_at(offset).missed.fetch_add(n, std::memory_order_relaxed);
    }
    return false;
  }
  // Compare-and-swap of this thread's lease: unlocked in an owned cell (see
  // owner_cas), atomic in a shared one.
  static bool lease_cas(Cell& cell, bool owned, uint64_t& expected, uint64_t desired) noexcept {
    if (owned) [[likely]]
      return owner_cas(cell.lease, expected, desired);
    return cell.lease.compare_exchange_weak(expected, desired, std::memory_order_relaxed);
  }

  // Sums the slots and advances `reported_` to that sum; returns the part
  // this caller reports. reported_ only grows (a max), so each denied event
  // is reported at most once, and whatever one caller's loads missed is
  // reported by a later one.
  uint64_t take_report() noexcept {
    const uint64_t total = suppressed_total();
    uint64_t reported = reported_.load(std::memory_order_relaxed);
    while (total > reported) {
      if (reported_.compare_exchange_weak(reported, total, std::memory_order_relaxed))
        return total - reported;
    }
    return 0;
  }

  // A verdict in two registers (RateLimitVerdict is returned in memory):
  // the out-of-line refill() then needs no stack slot in its callers.
  struct Decision {
    uint64_t suppressed;
    uint32_t window;
    bool allowed;
    RateLimitVerdict verdict() const noexcept { return {allowed, suppressed, window}; }
  };
  static Decision verdict(bool allowed, uint64_t suppressed, uint32_t window) noexcept {
    return {suppressed, window, allowed};
  }

  // Opens `window` with the first n events (or none, denied, when n does
  // not fit) by one CAS from w, after claim_open(). The CAS is the whole
  // reset (new window and its first count in one store), so there is no
  // moment where one is visible without the other. False when the CAS
  // failed (w is then the word's value); else the call's decision.
  template <bool kReport>
  bool open(uint64_t& w, uint32_t window, uint32_t n, Decision& decision) noexcept {
    const bool fits = n <= burst_;
    Hooks::point(RateLimitRacePoint::before_open);
    // release: publishes this caller's raise of newest_ (claim_open).
    if (!word_.compare_exchange_weak(w, pack(window, fits ? n : 0), std::memory_order_release,
                                     std::memory_order_relaxed))
      return false;
    Hooks::point(RateLimitRacePoint::after_open);
    // The opener's own denial is counted before the report is taken, so
    // that it is in this window's report.
    const bool allowed = fits || count_miss(n);
    decision = verdict(allowed, kReport ? take_report() : 0, window);
    return true;
  }

  template <bool kReport>
  Decision decide(uint64_t now_ns, uint32_t n) noexcept {
    const uint64_t full = full_window_of(now_ns);
    const uint32_t window = static_cast<uint32_t>(full);
    if (n == 0) [[unlikely]]
      return verdict(true, 0, window);
    if (kSharded && n == 1) return decide_leased<kReport>(full);
    Decision decision;
    uint64_t w = word_.load(std::memory_order_relaxed);
    Hooks::point(RateLimitRacePoint::after_load);
    for (;;) {
      // Fast test: the word is in the caller's window. Otherwise open the
      // caller's window if the word's is older, or the word was never
      // opened (zero). See claim_open().
      if (window_part(w) != window) [[unlikely]] {
        if (claim_open(full, w)) {
          if (open<kReport>(w, window, n, decision)) return decision;
          continue;  // someone else changed the word: re-decide on it
        }
      }
      // The word's window is the caller's, or newer (the caller's clock is
      // behind): the call is charged to the word's window.
      const uint32_t count = count_part(w);
      if (count >= burst_ || n > burst_ - count) {
        // Full: no write to the shared word.
        return verdict(count_miss(n), 0, window_part(w));
      }
      // The never-opened word, which the fast test took for the caller's
      // window because the caller's window number has its low 32 bits 0
      // (full = k * 2^32): opened through claim_open() like any other, so
      // that newest_ knows the window (issue 25, item 6: counted on
      // unclaimed, newest_ stayed 0, and a caller one window stale then saw
      // it half a wrap behind and moved the word back). Here, after the
      // denial test, so that a denial pays nothing for it.
      if (w == 0) [[unlikely]] {
        if (claim_open(full, w)) {
          if (open<kReport>(w, window, n, decision)) return decision;
          continue;
        }
      }
      if (n == 1) {
        Hooks::point(RateLimitRacePoint::before_add);
        // One RMW, no retry. Admitted iff the count it returns is below
        // burst; the returned counts of one window are distinct, so at most
        // burst are admitted. The returned window may be newer than w's (a
        // window opened meanwhile): the call is charged to that one.
        const uint64_t old = word_.fetch_add(1, std::memory_order_relaxed);
        if (count_part(old) < burst_) [[likely]]
          return verdict(true, 0, window_part(old));
        return verdict(count_miss(1), 0, window_part(old));
      }
      // n > 1: CAS, so that a request that does not fit consumes nothing.
      if (word_.compare_exchange_weak(w, w + n, std::memory_order_relaxed))
        return verdict(true, 0, window_part(w));
    }
  }

  // Lease modes, one event. The common cases are inline: a token from the
  // slot's lease for this window, or a denial when the slot is empty and the
  // shared word's window (the caller's) is full. Everything else refills.
  template <bool kReport>
  Decision decide_leased(uint64_t full) noexcept {
    const uint32_t window = static_cast<uint32_t>(full);
    // Threads that share a cell, and a thread's first call, take the
    // refill path (out of line, atomic RMWs on the shared cell).
    const uint32_t offset = tl_rate_limit_slot | kCellMask;
    if (!rate_limit_slot_owned(offset)) [[unlikely]]
      return refill<kReport>(full);
    Cell& cell = cell_at(offset);
    uint64_t l = cell.lease.load(std::memory_order_relaxed);
    if (window_part(l) == window && count_part(l) > 0) [[likely]] {
      Hooks::point(RateLimitRacePoint::before_lease_take);
      // A CAS, not a store: a signal handler on this thread may have taken
      // a token since the load. It fails only then; the refill path
      // re-decides.
      if (owner_take(cell.lease, l)) return verdict(true, 0, window);
    }
    if (count_part(l) == 0) {
      const uint64_t w = word_.load(std::memory_order_relaxed);
      if (window_part(w) == window && count_part(w) >= burst_) {
        Hooks::point(RateLimitRacePoint::before_miss);
        owner_add(cell.missed, 1);
        return verdict(false, 0, window);
      }
    }
    return refill<kReport>(full);
  }

  template <bool kReport>
  [[gnu::noinline]] Decision refill(uint64_t full) noexcept {
    const uint32_t window = static_cast<uint32_t>(full);
    const uint32_t offset = rate_limit_slot_offset();
    Cell& cell = cell_at(offset);
    const bool owned = rate_limit_slot_owned(offset) && !kProcessShared;
    uint64_t l = cell.lease.load(std::memory_order_relaxed);
    // Tokens leased for the caller's window or a newer one can be spent.
    while (count_part(l) > 0 && charged_to(window, window_part(l))) {
      Hooks::point(RateLimitRacePoint::before_lease_take);
      if (lease_cas(cell, owned, l, l - 1)) return verdict(true, 0, window_part(l));
    }
    // Lease empty or stale: take up to lease_ tokens from the shared word.
    uint64_t w = word_.load(std::memory_order_relaxed);
    Hooks::point(RateLimitRacePoint::after_load);
    uint32_t granted = 0;
    uint32_t granted_window = 0;
    uint64_t report = 0;
    for (;;) {
      // The never-opened word is opened through claim_open() like any other:
      // an open that did not raise newest_ (issue 25, item 6) left it at 0,
      // and once window numbers reach 2^31 a caller one window stale then
      // saw newest_ half a wrap behind and moved the word back.
      if ((w == 0 || window_part(w) != window) && claim_open(full, w)) {
        // The first lease of the window: cut at burst (0 with burst 0).
        const uint32_t ask = lease_for(burst_);
        const uint32_t grant = ask < burst_ ? ask : burst_;
        Hooks::point(RateLimitRacePoint::before_open);
        // release: publishes this caller's raise of newest_ (claim_open).
        if (word_.compare_exchange_weak(w, pack(window, grant), std::memory_order_release,
                                        std::memory_order_relaxed)) {
          Hooks::point(RateLimitRacePoint::after_open);
          // With burst 0 the opener is denied: its denial is counted before
          // the report is taken, so that it is in this window's report (as
          // in decide()).
          if (grant == 0) {
            count_miss(1);
            return verdict(false, kReport ? take_report() : 0, window);
          }
          granted = grant;
          granted_window = window;
          if (kReport) report = take_report();
          break;
        }
        continue;
      }
      if (count_part(w) >= burst_) {
        count_miss(1);
        return verdict(false, 0, window_part(w));
      }
      // How many to ask for: the fixed lease, or (adaptive) a share of what
      // the loaded word says is left, so that the leases shrink to one
      // token as the window fills. The ask only sizes the request; the
      // grant is cut by the count the RMW returns, never by this load.
      const uint32_t ask = lease_for(burst_ - count_part(w));
      Hooks::point(RateLimitRacePoint::before_add);
      // Lease with one RMW: the range [count, count + ask) is ours, cut at
      // burst. Ranges of one window are disjoint, so at most burst tokens
      // are handed out per window.
      const uint64_t old = word_.fetch_add(ask, std::memory_order_relaxed);
      const uint32_t count = count_part(old);
      granted = count < burst_ ? (burst_ - count < ask ? burst_ - count : ask) : 0;
      granted_window = window_part(old);
      break;
    }
    if (granted == 0) {
      count_miss(1);
      return verdict(false, report, granted_window);
    }
    // Spend one token now, keep the rest in the slot.
    if (granted > 1) {
      Hooks::point(RateLimitRacePoint::before_lease_store);
      const uint64_t fresh = pack(granted_window, granted - 1);
      l = cell.lease.load(std::memory_order_relaxed);
      for (;;) {
        uint64_t desired;
        if (count_part(l) > 0 && window_part(l) == granted_window) {
          desired = l + (granted - 1);  // a slot-mate leased too: add ours
        } else if (count_part(l) == 0 || newer(granted_window, window_part(l))) {
          desired = fresh;  // empty or older lease: replace
        } else {
          break;  // the slot holds tokens of a newer window: ours are stranded
        }
        if (lease_cas(cell, owned, l, desired)) break;
      }
    }
    return verdict(true, report, granted_window);
  }

  // Line 1: the shared word, and what changes with it: `reported_` (once
  // per window at most) and `newest_`, the newest full (64-bit) window a
  // caller claimed to open (see claim_open(); written once per window
  // opening, read only when the word's window is not the caller's).
  alignas(64) std::atomic<uint64_t> word_{0};
  std::atomic<uint64_t> reported_{0};
  std::atomic<uint64_t> newest_{0};
  // Line 2: the configuration, read by every call and never written after
  // construction, so that it stays in every core's cache. (On the shared
  // word's line, each admission or lease by one core cost every other core
  // a miss on its next call, even a call that never needs the word.)
  alignas(64) uint64_t interval_ns_ = 0;  // 0: disabled
  uint64_t inverse_ = 0;                  // floor((2^64 - 1) / interval)
  uint32_t burst_ = 0;
  uint32_t lease_ = 0;  // ShardedRateLimiter's fixed lease (else unused)
  // Lines 3-18: per-thread slots.
  Slot slots_[kSlots];
};

}  // namespace detail

// The limiter (adaptive lease). See the top of this file.
using RateLimiter = detail::BasicRateLimiter<NoRateLimitHooks, detail::kAdaptiveLease>;
// Per-slot leases of a fixed RateLimitOptions::lease tokens; see
// "ShardedRateLimiter" at the top of this file for when to prefer it.
using ShardedRateLimiter = detail::BasicRateLimiter<NoRateLimitHooks, detail::kFixedLease>;
// For a limiter in memory shared by several processes (see "Lifetime, fork,
// processes"): every cell update is an atomic read-modify-write.
using ProcessSharedRateLimiter =
    detail::BasicRateLimiter<NoRateLimitHooks, detail::kAdaptiveLease, true>;
using ProcessSharedShardedRateLimiter =
    detail::BasicRateLimiter<NoRateLimitHooks, detail::kFixedLease, true>;

namespace detail {
// Every admission one fetch_add on the shared word, no lease: never
// suppresses a call while the window has tokens left (no under-admission
// at all), but each admission writes the shared line (0.03 of no-limiter
// throughput at 16 threads that never hit the limit, issue 31). For the
// lab's `oneword` row and the tests; not part of the public API.
using OneWordRateLimiter = BasicRateLimiter<NoRateLimitHooks, kOneWord>;
}  // namespace detail

// The default clock's resolution (clock_getres(CLOCK_MONOTONIC_COARSE)), in
// nanoseconds. Intervals much shorter than this need allow_at().
uint64_t coarse_clock_resolution_ns() noexcept;

}  // namespace doorbell
