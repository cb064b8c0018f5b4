// Test seam of SignalChannel (internal; mostly the handler mechanism), in the spirit of
// RateLimiter's Hooks::point: the places where another thread, a fork or
// another library's sigaction() may act between two steps. A test installs
// a hook to hold a thread at one of them, which turns a race with a tiny
// window into a deterministic one. Production code installs none; each
// point then costs one relaxed load of a null pointer.
#pragma once

#include <cstddef>

namespace doorbell::detail {

enum class SignalChannelRacePoint {
  // In the handler, after it counted itself in g_active and before it read
  // the channels. Runs inside a signal handler: the hook must be
  // async-signal-safe.
  handler_counted,
  // In the handler, after it recorded the signal in every channel that
  // watches it and before it decided whether to chain the previous handler.
  // Async-signal-safe hooks only, as above.
  handler_recorded,
  // In stop() of the last channel of a signal: the current disposition was
  // read and is ours; the previous one is not restored yet.
  stop_before_restore,
  // In the constructor of the first channel of a signal: our handler is
  // installed (sigaction returned), the signal's watcher count not yet
  // raised.
  install_after_sigaction,
  // In the fork hook's prepare step (pthread_atfork), on the forking thread,
  // before it takes the channels' lock. signo is 0.
  fork_prepare,
  // In SignalChannel::receive() (either mechanism), on the consumer thread:
  // nothing was pending and a spin is about to start. signo is 0.
  receive_spin_start,
  // In SignalChannel::receive() (either mechanism), on the consumer thread:
  // about to sleep in poll(2) (after the spin, if any). signo is 0.
  receive_before_sleep,
  // In the mask check of the constructor (check_blocked_in_every_thread /
  // check_unblocked_in_some_thread), on the constructing thread: a thread
  // was seen in glibc's all-blocked window (not started yet, or ending), so
  // its own mask is unknown; the check reads it again after this point.
  // signo is the thread's ID.
  mask_check_thread_unsettled,
};

using SignalChannelHook = void (*)(SignalChannelRacePoint point, int signo) noexcept;

// Installs `hook` (nullptr: none) for every channel of the process.
void set_signal_channel_hook(SignalChannelHook hook) noexcept;

// How many copies of previous dispositions the handler mechanism keeps now
// (all signals together), for tests that check they stay bounded.
std::size_t kept_disposition_count() noexcept;

// Calls the installed hook, if any (for the points outside the handler
// mechanism's file).
void signal_channel_race_point(SignalChannelRacePoint point, int signo) noexcept;

}  // namespace doorbell::detail
