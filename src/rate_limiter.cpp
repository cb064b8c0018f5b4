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

#include "sys/error.h"

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

// Slot owners, by thread id (0: never owned). A slot's owner is the only
// thread that writes the slot's owner cell in any limiter.
std::atomic<uint32_t> g_slot_owner[kRateLimitSlots];
// Threads that found no free slot, in order of arrival: they share cells.
std::atomic<uint32_t> g_sharing_threads{0};

uint32_t this_thread_id() noexcept {
  return static_cast<uint32_t>(syscall(SYS_gettid));
}

// Has thread `tid` of this process exited? tgkill with signal 0 checks the
// thread exists without sending anything. A tid is not reused while its
// thread runs, so "exists" is never wrong about a live owner; a reused tid
// only keeps a slot owned a little longer.
bool thread_exited(uint32_t tid) noexcept {
  return syscall(SYS_tgkill, getpid(), static_cast<pid_t>(tid), 0) != 0 && errno == ESRCH;
}

// In the child of fork() only the forking thread lives, under a new tid:
// it keeps its slot (its cells hold its counts), every other slot is free.
void after_fork_in_child() noexcept {
  const uint32_t offset = tl_rate_limit_slot;
  for (auto& owner : g_slot_owner) owner.store(0, std::memory_order_relaxed);
  if (rate_limit_slot_owned(offset))
    g_slot_owner[rate_limit_slot_index(offset)].store(this_thread_id(), std::memory_order_relaxed);
}

const int g_at_fork = [] {
  if (int rc = pthread_atfork(nullptr, nullptr, after_fork_in_child); rc != 0)
    sys::fatal("pthread_atfork(rate limiter slots)", rc);
  return 0;
}();

}  // namespace

uint32_t assign_rate_limit_slot() noexcept {
  const int saved_errno = errno;
  const uint32_t tid = this_thread_id();
  uint32_t offset = 0;
  for (unsigned i = 0; i < kRateLimitSlots && offset == 0; ++i) {
    // acquire: the cells' last values written by an exited owner (its
    // unlocked adds) happen before this thread's own.
    uint32_t owner = g_slot_owner[i].load(std::memory_order_acquire);
    for (;;) {
      if (owner == tid) {
        // Ours: a signal handler on this thread claimed it while this
        // assignment ran (or a previous thread with our tid exited).
        offset = (i + 1) * kRateLimitSlotSize;
        break;
      }
      if (owner != 0 && !thread_exited(owner)) break;
      // Free. The CAS elects one claimant among threads that found the
      // slot free at the same time; on failure, look again at the winner.
      if (g_slot_owner[i].compare_exchange_strong(owner, tid, std::memory_order_acq_rel)) {
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
