// Bell's state word (see bell.h for the layout):
//
//   state (rung, waiters)   ring()                         wait()
//   (0, 0)                  -> (1, 0), no syscall          register: (0, 1), sleep
//   (0, n>0)                -> (1, n), FUTEX_WAKE 1        register: (0, n+1), sleep
//   (1, n)                  unchanged (rings merge)        take: (0, n)  [or (0, n-1)
//                                                          when this waiter was registered]
//
// The no-lost-wake-up argument: a waiter sleeps only through
// futex_wait(word, v) where v has rung clear and counts it. The kernel
// compares *word with v under the futex bucket lock, so either a ring()
// came first (the word differs, the wait returns EAGAIN and the waiter
// rechecks) or the waiter is queued before ring()'s fetch_or, which then
// sees a nonzero waiter count and issues FUTEX_WAKE, which finds it. A woken
// waiter that finds the ring already taken by another waiter sleeps again:
// the ring was consumed once, as promised. tests/models/bell.pml checks
// this protocol with spin.
#include "doorbell/bell.h"

#include <linux/futex.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <cerrno>
#include <cstdint>
#include <ctime>
#include <new>
#include <stdexcept>
#include <type_traits>

#include "sys/cpu_relax.h"
#include "sys/deadline.h"
#include "sys/error.h"
#include "sys/futex.h"

namespace doorbell {
namespace {

inline sys::FutexScope scope_of(uint32_t word) noexcept {
  return (word & Bell::kPrivate) ? sys::FutexScope::process_private : sys::FutexScope::shared;
}

void check_address(void* memory, const char* what) {
  if (memory == nullptr) throw std::invalid_argument(std::string(what) + ": null address");
  if (reinterpret_cast<uintptr_t>(memory) % alignof(Bell) != 0)
    throw std::invalid_argument(std::string(what) +
                                ": address is not 4-byte aligned (a futex word must be)");
}

}  // namespace

Bell* Bell::create_at(void* memory, Scope scope) {
  check_address(memory, "Bell::create_at");
  return new (memory) Bell(scope);
}

Bell* Bell::attach(void* memory) {
  check_address(memory, "Bell::attach");
  Bell* bell = std::launder(reinterpret_cast<Bell*>(memory));
  if (bell->word_.load(std::memory_order_relaxed) & kReserved)
    throw std::invalid_argument("Bell::attach: the word has the reserved bit set: not a Bell");
  return bell;
}

void Bell::ring() noexcept {
  // release: publishes the ringer's writes to the waiter that takes the
  // ring (its CAS is an acquire). The RMW also reads the waiter count
  // atomically with setting rung: that is what makes the wake decision
  // race-free. After this line the word is not touched again (lifetime).
  const uint32_t old = word_.fetch_or(kRung, std::memory_order_release);
  // Wake whenever waiters are counted, rung or not: the waiter an earlier
  // ring() woke may have been killed before it took the ring, and then only
  // this wake reaches the live sleepers (bell.h, "Dead waiters"). When the
  // Bell was already rung by a live waiter's wake, this one is spurious for
  // whoever it wakes, who finds the ring taken and sleeps again.
  if ((old & kWaiterMask) != 0) {
    const int saved_errno = errno;
    const int rc = sys::futex_wake(reinterpret_cast<const uint32_t*>(this), 1, scope_of(old));
    // EFAULT: the waiter already unmapped the Bell (allowed, see bell.h).
    if (rc < 0 && rc != -EFAULT) sys::fatal("Bell::ring: futex wake", -rc);
    errno = saved_errno;
  }
}

bool Bell::try_wait() noexcept {
  uint32_t v = word_.load(std::memory_order_relaxed);
  while (v & kRung) {
    // acquire: pairs with ring()'s release.
    if (word_.compare_exchange_weak(v, v & ~kRung, std::memory_order_acquire,
                                    std::memory_order_relaxed))
      return true;
  }
  return false;
}

void Bell::wait(Spin spin) noexcept {
  wait_impl(nullptr, spin);
}

bool Bell::wait_for(std::chrono::nanoseconds timeout, Spin spin) noexcept {
  if (timeout.count() <= 0) return try_wait();
  // Saturated: now() + timeout past the clock's range is time_point::max().
  return wait_until(detail::deadline_after(timeout), spin);
}

bool Bell::wait_until(Clock::time_point deadline, Spin spin) noexcept {
  static_assert(std::is_same_v<Clock, detail::DeadlineClock>);
  // time_point::max() (what a saturated deadline is) means no limit.
  if (deadline == Clock::time_point::max()) return wait_impl(nullptr, spin);
  // steady_clock is CLOCK_MONOTONIC on Linux (libstdc++), the futex's clock.
  const auto ns = std::chrono::duration_cast<std::chrono::nanoseconds>(deadline.time_since_epoch());
  if (ns.count() < 0) return try_wait();
  timespec ts{static_cast<time_t>(ns.count() / 1000000000),
              static_cast<long>(ns.count() % 1000000000)};
  return wait_impl(&ts, spin);
}

bool Bell::wait_impl(const void* deadline_ptr, Spin spin) noexcept {
  const auto* deadline = static_cast<const timespec*>(deadline_ptr);
  if (try_wait()) return true;
  // The spin ends at the deadline too: one clock read (vDSO, tens of ns)
  // per kSpinChunk iterations is noise beside the spin itself, and a
  // Spin{UINT32_MAX} with a 10 ms timeout returns after about 10 ms.
  constexpr uint32_t kSpinChunk = 64;
  const auto spin_until = deadline == nullptr
                              ? Clock::time_point::max()
                              : Clock::time_point(std::chrono::duration_cast<Clock::duration>(
                                    std::chrono::seconds(deadline->tv_sec) +
                                    std::chrono::nanoseconds(deadline->tv_nsec)));
  for (uint32_t i = 0; i < spin.iterations; ++i) {
    detail::cpu_relax();
    if ((word_.load(std::memory_order_relaxed) & kRung) && try_wait()) return true;
    if (i % kSpinChunk == kSpinChunk - 1 && deadline != nullptr && Clock::now() >= spin_until)
      break;
  }
  // Register as a waiter, unless a ring arrives meanwhile (then take it).
  uint32_t v = word_.load(std::memory_order_relaxed);
  for (;;) {
    if (v & kRung) {
      // acquire: pairs with ring()'s release.
      if (word_.compare_exchange_weak(v, v & ~kRung, std::memory_order_acquire,
                                      std::memory_order_relaxed))
        return true;
      continue;
    }
    // relaxed is enough here: the registration's ordering against ring()
    // comes from the kernel's compare in futex_wait and from ring()'s RMW
    // reading the latest value of the word (RMWs see the modification order).
    if (word_.compare_exchange_weak(v, v + kOneWaiter, std::memory_order_relaxed,
                                    std::memory_order_relaxed)) {
      v += kOneWaiter;
      break;
    }
  }
  for (;;) {
    const int rc =
        sys::futex_wait(reinterpret_cast<const uint32_t*>(this), v, deadline, scope_of(v));
    if (rc != 0 && rc != -EAGAIN && rc != -EINTR && rc != -ETIMEDOUT)
      sys::fatal("Bell::wait: futex wait", -rc);
    v = word_.load(std::memory_order_relaxed);
    for (;;) {
      if (v & kRung) {
        // Take the ring and unregister in one CAS. acquire: pairs with ring().
        if (word_.compare_exchange_weak(v, (v & ~kRung) - kOneWaiter, std::memory_order_acquire,
                                        std::memory_order_relaxed))
          return true;
        continue;
      }
      if (rc != -ETIMEDOUT) break;  // not rung: sleep again with the new v
      // Timed out and not rung: unregister.
      if (word_.compare_exchange_weak(v, v - kOneWaiter, std::memory_order_relaxed,
                                      std::memory_order_relaxed))
        return false;
    }
  }
}

}  // namespace doorbell
