// Wake-up channels for the `wakeup` lab group: one direction of a
// notification, with send() on one side and a blocking recv() on the other.
// Every channel's recv() returns only once the notification really reached
// the receiving thread (for signals: the handler ran, or sigwaitinfo/signalfd
// returned it). Channels coalesce exactly as their mechanism does; the
// throughput rows count deliveries, not sends.
#pragma once

#include <signal.h>
#include <sys/types.h>

#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "lab/common/signal_scope.h"

namespace doorbell::lab {
class Context;
}

namespace doorbell::lab::wakeup {

class Channel {
 public:
  virtual ~Channel() = default;
  // On the receiving thread (or process), before the first recv().
  virtual void attach_receiver() {}
  // Tells a signal channel whom to signal: a thread (tid) and its process.
  virtual void set_target(pid_t /*pid*/, pid_t /*tid*/) {}
  virtual void send() = 0;
  virtual void recv() = 0;
  // Wakes a receiver asleep in recv() whatever state the channel is in (one
  // more notification, every sleeper woken where the mechanism can), from
  // any thread, concurrently with send() and recv(). For the bounded waits
  // of a failing row (lab/common/deadline.h's Rescuer): recv() itself stays
  // untimed, as users call it. Never fails: a peer that is gone is fine.
  virtual void rescue() = 0;
};

enum class Where { threads, processes };

// Memory shared across fork (MAP_SHARED); channels that need shared words
// carve them out of it.
struct SharedArena {
  explicit SharedArena(std::size_t bytes);
  ~SharedArena();
  void* take(std::size_t bytes, std::size_t align = 64);
  unsigned char* base;
  std::size_t size;
  std::size_t used = 0;
};

// Makes one direction of `method` (see methods()). `direction` (0 or 1)
// picks the signal for signal methods (SIGUSR1 / SIGUSR2).
std::unique_ptr<Channel> make_channel(const std::string& method, Where where, int direction,
                                      SharedArena& arena);

// Process-wide set-up a method needs (blocked signals, handlers), restored
// on destruction after what is left pending is taken. Create it on the
// measuring thread before starting peers.
class MethodEnvironment {
 public:
  explicit MethodEnvironment(const std::string& method);
  ~MethodEnvironment();
  MethodEnvironment(const MethodEnvironment&) = delete;
  MethodEnvironment& operator=(const MethodEnvironment&) = delete;

 private:
  // Undone in reverse order: the handlers, then the mask.
  std::optional<ScopedMask> blocked_;
  std::optional<ScopedDisposition> usr1_, usr2_;
};

struct MethodInfo {
  std::string name;
  std::string what;  // a short description for titles
  bool threads;      // available across threads
  bool processes;    // available across processes
};
const std::vector<MethodInfo>& methods();

// The bodies of the wakeup/rtt (threads) and wakeup/throughput rows, for a
// test that brings a channel of its own (one that loses a wake-up on
// purpose): `make` makes one direction (0 forward, 1 back); `method` names
// the process-wide set-up (MethodEnvironment) it needs.
using ChannelMaker = std::function<std::unique_ptr<Channel>(int direction, SharedArena& arena)>;
void run_rtt_threads(Context& ctx, const std::string& method, const ChannelMaker& make);
void run_throughput_threads(Context& ctx, const std::string& method, const ChannelMaker& make);

}  // namespace doorbell::lab::wakeup
