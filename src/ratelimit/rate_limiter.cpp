// The RateLimiter's default clock and the assignment of threads to slots.
// Everything else is inline in the header (the hot paths must inline into
// the caller).
#include "doorbell/rate_limiter.h"

#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include "ratelimit/rate_limiter_hooks.h"
#include "sys/error.h"
#include "sys/syscalls.h"
#include "sys/tgkill.h"

namespace doorbell {
namespace detail {

uint64_t coarse_now_ns() noexcept {
  // CLOCK_MONOTONIC_COARSE is answered by the vDSO from the last tick's
  // timestamp: no syscall, no TSC read. It cannot fail for a valid clock id.
  timespec ts;
  if (clock_gettime(CLOCK_MONOTONIC_COARSE, &ts) != 0) sys::fatal("clock_gettime(COARSE)", errno);
  return static_cast<uint64_t>(ts.tv_sec) * 1000000000u + static_cast<uint64_t>(ts.tv_nsec);
}

namespace {

// Slot owners (0: never owned): a claim, tid in the low 32 bits and a claim
// number, unique in the process and never 0, in the high 32 bits. A slot's
// owner is the only thread that writes the slot's owner cell in any
// limiter. Every claim is a CAS that changes the word, also a claim by a
// thread whose tid is the recorded one: so a thread that found the recorded
// owner exited and the thread born since with that tid (a reused tid) cannot
// both win (with the bare tid as the word, the latter took the slot without
// a CAS and the former's CAS still succeeded: two live owners).
std::atomic<uint64_t> g_slot_owner[kRateLimitSlots];
std::atomic<uint32_t> g_claims{0};
static_assert(std::atomic<uint64_t>::is_always_lock_free, "claims are made in signal handlers");

uint64_t new_claim(uint32_t tid) noexcept {
  uint32_t number = g_claims.fetch_add(1, std::memory_order_relaxed) + 1;
  if (number == 0) number = g_claims.fetch_add(1, std::memory_order_relaxed) + 1;  // wrapped
  return static_cast<uint64_t>(number) << 32 | tid;
}

uint32_t owner_tid(uint64_t claim) noexcept {
  return static_cast<uint32_t>(claim);
}

// Threads that found no free slot, in order of arrival: they share cells.
std::atomic<uint32_t> g_sharing_threads{0};
// Test seam (rate_limiter_hooks.h). Relaxed: a test installs the hook
// before it provokes the race, and the hook synchronises on its own.
std::atomic<RateLimitSlotHook> g_slot_hook{nullptr};

void slot_race_point(RateLimitSlotRacePoint point, unsigned slot) noexcept {
  if (const RateLimitSlotHook hook = g_slot_hook.load(std::memory_order_relaxed)) hook(point, slot);
}

uint32_t this_thread_id() noexcept {
  return static_cast<uint32_t>(syscall(SYS_gettid));
}

// Has thread `tid` of this process exited? tgkill with signal 0 checks the
// thread exists without sending anything. A tid is not reused while its
// thread runs, so "exists" is never wrong about a live owner; a reused tid
// only keeps a slot owned a little longer (by the claim of the exited
// thread, until the new holder of the tid claims it anew, or exits).
bool thread_exited(uint32_t tid) noexcept {
  return sys::tgkill(getpid(), static_cast<pid_t>(tid), 0) == -ESRCH;
}

// In the child of fork() only the forking thread lives, under a new tid:
// it keeps its slot (its cells hold its counts), every other slot is free.
void after_fork_in_child() noexcept {
  const uint32_t offset = tl_rate_limit_slot;
  for (auto& owner : g_slot_owner) owner.store(0, std::memory_order_relaxed);
  if (rate_limit_slot_owned(offset))
    g_slot_owner[rate_limit_slot_index(offset)].store(new_claim(this_thread_id()),
                                                      std::memory_order_relaxed);
}

const int g_at_fork = [] {
  if (int rc = pthread_atfork(nullptr, nullptr, after_fork_in_child); rc != 0)
    sys::fatal("pthread_atfork(rate limiter slots)", rc);
  return 0;
}();

}  // namespace

void set_rate_limit_slot_hook(RateLimitSlotHook hook) noexcept {
  g_slot_hook.store(hook, std::memory_order_relaxed);
}

uint32_t assign_rate_limit_slot() noexcept {
  const int saved_errno = errno;
  const uint32_t tid = this_thread_id();
  uint32_t offset = 0;
  for (unsigned i = 0; i < kRateLimitSlots && offset == 0; ++i) {
    // acquire: the cells' last values written by an exited owner (its
    // unlocked adds) happen before this thread's own.
    uint64_t owner = g_slot_owner[i].load(std::memory_order_acquire);
    for (;;) {
      // A signal handler on this thread that ran this function meanwhile
      // has assigned us a slot (its claim is in some owner word): use it.
      if (tl_rate_limit_slot != kRateLimitUnassigned) {
        errno = saved_errno;
        return tl_rate_limit_slot;
      }
      // Free when never owned, when its owner exited, or when the recorded
      // tid is ours: a tid names one live thread at a time and we are it,
      // so that claim is an exited thread's (a handler of ours would have
      // assigned us, seen above). Otherwise owned by a live thread.
      if (owner != 0 && owner_tid(owner) != tid) {
        if (!thread_exited(owner_tid(owner))) break;
        slot_race_point(RateLimitSlotRacePoint::owner_exited, i);
      }
      // The CAS elects one claimant among threads that found the slot free
      // at the same time (a new claim number each time, so even a thread
      // with the recorded tid changes the word); on failure, look again at
      // the winner.
      if (g_slot_owner[i].compare_exchange_strong(owner, new_claim(tid),
                                                  std::memory_order_acq_rel)) {
        offset = (i + 1) * kRateLimitSlotSize;
        break;
      }
    }
  }
  if (offset == 0) {
    // No free slot: share one, with atomic updates.
    const uint32_t n = g_sharing_threads.fetch_add(1, std::memory_order_relaxed);
    offset = (n % kRateLimitSlots + 1) * kRateLimitSlotSize + kRateLimitSharedCell;
  }
  // A signal handler that ran this function during ours assigned a slot
  // too; ours wins (a slot a handler claimed for this thread stays owned by
  // it, unused, until the thread exits).
  tl_rate_limit_slot = offset;
  (void)g_at_fork;
  errno = saved_errno;
  return offset;
}

}  // namespace detail

uint64_t coarse_clock_resolution_ns() noexcept {
  timespec ts;
  if (clock_getres(CLOCK_MONOTONIC_COARSE, &ts) != 0) sys::fatal("clock_getres(COARSE)", errno);
  return static_cast<uint64_t>(ts.tv_sec) * 1000000000u + static_cast<uint64_t>(ts.tv_nsec);
}

}  // namespace doorbell
