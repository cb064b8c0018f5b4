// Test seam of SignalReceiver (internal), the twin of signal_channel_hooks.h:
// the places where a signal, or stop() on another thread, may act between
// two steps. A test installs a hook to hold a thread at one of them, which
// turns a race with a tiny window into a deterministic one. Production code
// installs none; each point then costs one relaxed load of a null pointer.
#pragma once

namespace doorbell::detail {

enum class SignalReceiverRacePoint {
  // On the receiver thread (sigwaitinfo method): about to wait for the next
  // signal, the first time and after each one it handled.
  receiver_waiting,
  // On the receiver thread: its loop is over; the thread is about to exit.
  receiver_leaving,
  // In stop() (sigwaitinfo method): stop() has announced itself to the
  // receiver thread and has not sent the wake-up yet.
  stop_before_wake,
};

using SignalReceiverHook = void (*)(SignalReceiverRacePoint point) noexcept;

// Installs `hook` (nullptr: none) for every receiver of the process.
void set_signal_receiver_hook(SignalReceiverHook hook) noexcept;

}  // namespace doorbell::detail
