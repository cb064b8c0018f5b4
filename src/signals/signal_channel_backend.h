// The seam between SignalChannel and its two mechanisms (internal).
//
// signal_channel.cpp          validation, mechanism choice, fork hooks, names
// signal_channel_signalfd.cpp signalfd(2), for signals blocked in every thread
// signal_channel_handler.cpp  SA_SIGINFO handler + lock-free queue + eventfd
#pragma once

#include <signal.h>

#include <cstdint>
#include <memory>
#include <optional>
#include <vector>

#include "doorbell/signal_channel.h"

namespace doorbell::detail {

class SignalBackend {
 public:
  virtual ~SignalBackend() = default;
  virtual int fd() const noexcept = 0;
  virtual SignalMechanism mechanism() const noexcept = 0;
  // Consumer only. Never blocks.
  virtual std::optional<SignalEvent> try_receive() noexcept = 0;
  // Consumer only, not after stop(). Polls for an event up to `iterations`
  // times without sleeping and takes the first one found (SignalChannel's
  // spin: see "Spinning" in signal_channel.h for what one iteration costs).
  virtual std::optional<SignalEvent> spin_receive(std::uint32_t iterations) noexcept = 0;
  // Idempotent. After it returns nothing new is recorded; what was recorded
  // stays readable through try_receive().
  virtual void stop() noexcept = 0;
  virtual SignalChannelStats stats() const noexcept = 0;
};

// Both throw std::invalid_argument when the masks of the process's threads
// do not suit the mechanism, std::system_error when a kernel call fails.
std::unique_ptr<SignalBackend> make_signalfd_backend(const std::vector<int>& signals);
std::unique_ptr<SignalBackend> make_handler_backend(const std::vector<int>& signals,
                                                    const SignalChannel::Options& options);

// Mask checks over every thread of this process (from /proc). Each returns
// an empty string when the condition holds, else a message naming the first
// thread and signal that break it.
std::string check_blocked_in_every_thread(const std::vector<int>& signals);
std::string check_unblocked_in_some_thread(const std::vector<int>& signals);

// Incremented in every child created by fork(); a channel compares it with
// the value it was created under. Installs the fork hooks on first use.
std::uint64_t fork_generation() noexcept;
void install_fork_hooks();

// Called by the fork hooks: before fork (every signal blocked in the forking
// thread) takes the handler mechanism's lock, so that no constructor or
// stop() is half-way through a disposition change at the fork; after it the
// parent releases the lock, and the child (one thread, all signals blocked)
// puts back the previous disposition wherever ours is installed.
void handler_backend_before_fork() noexcept;
void handler_backend_after_fork_in_parent() noexcept;
void handler_backend_after_fork_in_child() noexcept;

// Converts a kernel siginfo into an event (async-signal-safe).
inline void fill_event(SignalEvent& event, int signo, const siginfo_t* info) noexcept {
  event.signal = signo;
  event.code = info->si_code;
  event.sender_pid = info->si_pid;
  event.sender_uid = info->si_uid;
  event.error = info->si_errno;
  event.status = signo == SIGCHLD ? info->si_status : 0;
  // For SIGCHLD the union holds the status where si_value would be.
  event.value = signo == SIGCHLD ? 0 : reinterpret_cast<std::uintptr_t>(info->si_value.sival_ptr);
  event.coalesced = 0;
}

}  // namespace doorbell::detail
