// Test seam of the RateLimiter's slot assignment (internal), in the spirit of
// signal_channel_hooks.h: the places where another thread may act between
// two steps of assign_rate_limit_slot(). A test installs a hook to hold a
// thread at one of them, which turns a race with a tiny window into a
// deterministic one. Production code installs none; each point then costs
// one relaxed load of a null pointer, once per thread (the assignment runs
// on a thread's first call only).
#pragma once

namespace doorbell::detail {

enum class RateLimitSlotRacePoint {
  // The slot's owner was found to have exited (tgkill(pid, tid, 0): ESRCH);
  // the claim (a CAS of the owner word) is not made yet. slot: its index.
  owner_exited,
};

using RateLimitSlotHook = void (*)(RateLimitSlotRacePoint point, unsigned slot) noexcept;

// Installs `hook` (nullptr: none) for every thread of the process.
void set_rate_limit_slot_hook(RateLimitSlotHook hook) noexcept;

}  // namespace doorbell::detail
