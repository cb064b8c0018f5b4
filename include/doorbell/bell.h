// Bell: a wake-up word. ring() costs one atomic operation when nobody waits,
// and one FUTEX_WAKE when someone does; wait() may spin briefly, then sleeps
// on the futex.
//
// Semantics: a Bell is a binary, auto-reset event. ring() sets it; a wait()
// that returns true has consumed it (reset it). Rings that no waiter has
// consumed yet merge: n rings before one wait() release one wait(). Each
// ring() releases at most one wait(). So "at least one wake-up after the
// last ring()", the same contract as an eventfd or a standard signal; keep
// your own queue or count (Ring does) for the events themselves.
//
// Layout (for shared memory; stable, part of the contract):
//   one 32-bit word, 4-byte aligned, sizeof(Bell) == 4, standard layout;
//   bit 0          rung: set by ring(), cleared by the wait() that takes it
//   bits 1..29     the number of waiters registered to sleep
//   bit 30         reserved (0)
//   bit 31         process-private: set at construction for
//                  Scope::process_private; never changes afterwards
// A zero-filled word is a valid, unrung, shared Bell, so a fresh
// MAP_SHARED|MAP_ANONYMOUS page or a ftruncate()d shm file holds Bells
// without construction. Any process that maps the word may ring and wait;
// there is no process-local state anywhere.
//
// Memory ordering: ring() is a release and a successful wait() an acquire
// on the word: what the ringer wrote before ring() is visible to the waiter
// after wait() returns true.
//
// Async-signal-safety: ring() is async-signal-safe (an atomic RMW and
// possibly futex(2); errno is preserved). The waits are not meant for
// handlers.
//
// Lifetime: ring() never reads or writes the word after its atomic
// operation, but it may pass the word's address to FUTEX_WAKE after it. So
// a waiter may destroy or unmap the Bell as soon as its wait() returned true
// (the ringer's late FUTEX_WAKE then finds no waiter, or fails with EFAULT,
// which ring() ignores; a futex word later placed at the same address may see
// one spurious wake-up, which every futex user must tolerate). The
// ringer must not touch the Bell after ring() unless it knows it is alive.
// Nobody may destroy a Bell while a wait() on it is in progress.
//
// Fork: a Bell in MAP_SHARED memory is shared with the child, and works
// between them (Scope::shared). A Bell in private memory is copied: the
// child gets its own Bell with the parent's state at fork, which may count
// waiters (threads) that do not exist in the child; such a count only costs
// the child's ring() a futile FUTEX_WAKE. A process_private Bell must not be
// used across processes (its futex ops do not match other processes).
//
// Dead waiters (a limit, not healed): a process killed (SIGKILL, a crash)
// while asleep in wait() on a shared Bell stays counted in the word. The
// Bell keeps every promise to live waiters (the kernel dropped the dead
// one from its queue, so FUTEX_WAKE finds the live ones), but every later
// ring() then makes one futile FUTEX_WAKE: "no syscall
// when nobody waits" no longer holds for that Bell (measured here: about
// 1.3 us per ring() instead of 7 ns; tests/bell_dead_waiter_test.cpp).
// The count cannot heal itself safely: when FUTEX_WAKE wakes nobody, the
// counted waiters may be dead, or alive between their registration and
// futex_wait(), or just woken and not yet unregistered; the word does not
// say which, so a ringer that cleared the count would let such a live
// waiter later remove another waiter's registration (or sleep uncounted),
// and that waiter's wake-up would be lost. Telling them apart needs a
// per-registration generation in the word, which this stable layout has no
// room for. Repair: once you know no wait() on the Bell is in progress
// (e.g. every peer that waits has exited or is known to be outside wait()),
// re-create it with create_at() at the same address; a pending ring is
// lost then, so ring() again if one may be pending.
//
// A waiter killed after a ring() woke it and before it took the ring
// leaves the Bell rung with that wake-up spent. So ring() wakes whenever a
// waiter is counted, rung or not: the next ring() reaches the live sleepers.
// Until that next ring() they sleep on (a pending ring wakes nobody by
// itself): peers that may be killed should wait with a timeout, or ring
// again when they see a peer die.
//
// Spin: wait() may spin, checking the word, for a bounded number of
// iterations before it registers as a waiter (Spin{0}: the default, no
// spin). Spinning only helps when the ringer answers within the budget and
// the two run on different CPUs; on one CPU it wastes the budget. The
// timed waits also end the spin at their deadline (the clock is read every
// 64 iterations), so wait_for(1ms, Spin{UINT32_MAX}) returns after about
// 1 ms, as without a spin.
#pragma once

#include <atomic>
#include <chrono>
#include <cstdint>

namespace doorbell {

// How long Bell's waits spin before they sleep.
struct BellSpin {
  uint32_t iterations = 0;  // pause-instruction loops before sleeping; 0: none
};

class Bell {
 public:
  enum class Scope : uint8_t {
    shared,           // futex ops without FUTEX_PRIVATE_FLAG: works across processes
    process_private,  // FUTEX_PRIVATE_FLAG: one process only, slightly cheaper wake-ups
  };
  using Spin = BellSpin;
  using Clock = std::chrono::steady_clock;  // CLOCK_MONOTONIC

  explicit Bell(Scope scope = Scope::shared) noexcept
      : word_(scope == Scope::process_private ? kPrivate : 0) {}
  Bell(const Bell&) = delete;
  Bell& operator=(const Bell&) = delete;

  // Constructs an unrung Bell at `memory` (e.g. in a MAP_SHARED mapping).
  // Throws std::invalid_argument when memory is null or not 4-byte aligned.
  static Bell* create_at(void* memory, Scope scope = Scope::shared);
  // Uses an existing Bell at `memory` that another process created (or a
  // zero-filled word). Throws std::invalid_argument when memory is null or
  // not 4-byte aligned, or when the word has the reserved bit set (not a
  // Bell).
  static Bell* attach(void* memory);

  // Sets the Bell and wakes one sleeping waiter if there is one. One atomic
  // fetch_or; FUTEX_WAKE whenever the word counts a waiter, rung or not (a
  // waiter woken by an earlier ring may have died before taking it: see
  // "Dead waiters"), and no syscall when it counts none. Async-signal-safe.
  void ring() noexcept;

  // Waits until rung and consumes it. Retries EINTR.
  void wait(Spin spin = {}) noexcept;
  // Like wait(), giving up after `timeout` (at least that long); returns
  // whether it consumed a ring.
  bool wait_for(std::chrono::nanoseconds timeout, Spin spin = {}) noexcept;
  // Like wait(), giving up at `deadline` (steady_clock, CLOCK_MONOTONIC).
  bool wait_until(Clock::time_point deadline, Spin spin = {}) noexcept;
  // Consumes a ring if there is one, without waiting.
  bool try_wait() noexcept;

  // Snapshots, for tests and diagnostics.
  bool rung() const noexcept { return word_.load(std::memory_order_relaxed) & kRung; }
  uint32_t waiters() const noexcept {
    return (word_.load(std::memory_order_relaxed) & kWaiterMask) >> 1;
  }
  Scope scope() const noexcept {
    return (word_.load(std::memory_order_relaxed) & kPrivate) ? Scope::process_private
                                                              : Scope::shared;
  }

  static constexpr uint32_t kRung = 1u;
  static constexpr uint32_t kOneWaiter = 2u;
  static constexpr uint32_t kWaiterMask = 0x3ffffffeu;
  static constexpr uint32_t kReserved = 1u << 30;
  static constexpr uint32_t kPrivate = 1u << 31;

 private:
  bool wait_impl(const void* deadline, Spin spin) noexcept;
  std::atomic<uint32_t> word_;
};

static_assert(sizeof(Bell) == 4, "the shared-memory layout is one 32-bit word");
static_assert(alignof(Bell) == 4, "the shared-memory layout is 4-byte aligned");
static_assert(std::atomic<uint32_t>::is_always_lock_free, "futex words must be lock-free");

}  // namespace doorbell
