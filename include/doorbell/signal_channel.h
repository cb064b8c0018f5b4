// SignalChannel: signals as ordinary events.
//
// A SignalChannel turns a set of signals into events that user code reads
// from a file descriptor, in the spirit of Go's os/signal.Notify: no user
// code ever runs inside a signal handler. fd() becomes readable when events
// are pending, so the channel plugs into any event loop (doorbell's
// EventLoop, epoll, poll, libuv, Asio); dispatch() hands the pending events
// to a callback on whichever thread calls it.
//
//   doorbell::SignalChannel channel({SIGTERM, SIGHUP});
//   loop.add(channel.fd(), EventLoop::kReadable, [&](uint32_t) {
//     channel.dispatch([&](const doorbell::SignalEvent& e) { ... });
//   });
//
// Each event carries the whole siginfo that matters: number, si_code, the
// sender's pid and uid, si_value, and for SIGCHLD the child's status.
//
// Mechanisms. Two, behind this one interface (see docs/signals.md):
//
//   signalfd  signalfd(2). Requires the signals to be blocked in EVERY
//             thread of the process, which only works when they are blocked
//             before any thread starts: call block_signals_before_threads()
//             first thing in main(). The constructor reads every thread's
//             mask from /proc and refuses (std::invalid_argument naming the
//             thread) when one of them leaves a signal unblocked. A thread
//             that has not started running yet shows glibc's all-blocked
//             start-up mask (SIGCANCEL and SIGSETXID included, which no
//             program can block) and takes its creator's mask when it
//             first runs: the check waits for such a thread (up to 5 s) and
//             judges the mask it then has, so a thread started just before
//             cannot pass the check and then take the signal (issue 36).
//             What no check can see: a thread started after the check from
//             a thread that had unblocked the signal, a thread that changes
//             its own mask later, and threads made without glibc (a raw
//             clone()). Such a thread takes the signal and runs its
//             disposition (SIGTERM, SIGUSR1: the default terminates).
//   handler   a minimal SA_SIGINFO handler that records the siginfo in a
//             lock-free queue and writes an eventfd. Works whatever the
//             other threads' masks, as long as at least one thread leaves
//             each signal unblocked (also checked, also refused otherwise).
//   automatic signalfd when every thread blocks every signal of the set,
//             else handler.
//
// Coalescing and loss, counted (stats()):
//   - Standard signals (1..31) coalesce: at least one event per burst. The
//     kernel merges instances that arrive while one is pending; neither
//     mechanism can see those. The handler mechanism also merges instances
//     that arrive before the consumer reads the first one, and counts them
//     in SignalEvent::coalesced and SignalChannelStats::coalesced.
//   - Real-time signals (SIGRTMIN..SIGRTMAX) are one event per instance,
//     each with its si_value. signalfd reads them in the kernel's queue
//     order. With the handler mechanism they come in the order the handlers
//     recorded them: when several threads leave the signal unblocked, two
//     instances handled at once on two threads may swap places; leave it
//     unblocked in one thread only if order matters. The kernel's limit
//     (RLIMIT_SIGPENDING) shows at the sender as EAGAIN from sigqueue(3);
//     the handler mechanism's own queue (Options::realtime_capacity) counts
//     what it could not keep in SignalChannelStats::overflowed. Nothing is
//     dropped silently.
//
// stop(). When stop() returns:
//   - no further signal is recorded in the channel; events recorded before
//     remain readable through try_receive()/dispatch(), so a signal that
//     races stop() is either an event or handled by the restored
//     disposition, never lost (golang/go#14571);
//   - the handler mechanism has restored each signal's previous disposition
//     exactly (handler, flags and mask, as sigaction(2) reported it), unless
//     someone installed another one meanwhile, which is left alone; no
//     handler of ours is running any more. So a second Ctrl-C after stop()
//     does what it did before the channel existed: the default kills the
//     process (tokio-rs/tokio#7905). A chained previous handler (below)
//     started by a signal before stop() may still be running: it is not
//     ours, and it may never return;
//   - the limit of the restore: the kernel has no compare-and-swap for a
//     disposition. stop() reads the current one and leaves it alone when it
//     is not ours (another handler function; ours re-installed with other
//     flags still counts as ours). When it is ours, stop() swaps the
//     previous one in with sigaction(2), which reports what it replaced; if
//     another thread's sigaction() slipped in between the read and the
//     swap, stop() puts that one back. What remains: a signal that arrives
//     between that swap and the putting back meets the previous disposition,
//     and a sigaction() by other code that lands in that same window (about
//     a microsecond) is undone. Code that installs handlers concurrently
//     with stop() must order itself with it;
//   - other code that later puts our handler back (a library that saved it
//     while the channel lived and restores it after stop()) leaves a
//     handler of ours with no channel behind it. The first signal that no
//     channel takes then restores the previous disposition (from before the
//     first channel) and is re-sent to meet it, as if stop() had done it. A
//     new channel never records our own handler as the "previous" one: it
//     keeps the disposition from before the first channel;
//   - masks are never changed by a channel. With signalfd the signals stay
//     blocked after stop() (the caller blocked them); a signal sent then
//     stays pending until the caller restores its mask, and then acts as
//     its disposition says.
//
// Chaining. With the handler mechanism, a handler that was installed before
// the channel keeps running after the channel recorded the event
// (Options::chain_previous, on by default): every instance that a channel
// with chain_previous records is also passed to that handler, once, with the
// same siginfo, including an instance that races the channel's constructor
// or stop() (then the previous handler may run after stop() returned, see
// above). An instance that no channel records (it arrived after stop()
// unlinked the channel) reaches the previous disposition anyway. With
// several channels on one signal, an instance is chained when at least one
// channel that recorded it asked for chaining. SIG_DFL and SIG_IGN are not
// chained: the channel takes the signal instead. The previous handler runs
// after the channel's own part of the handler has finished, so it may leave
// by siglongjmp (a shell's SIGINT handler returning to its prompt) without
// breaking a later stop().
//
// Refused signals (std::invalid_argument): SIGKILL and SIGSTOP (cannot be
// caught), the synchronous faults SIGSEGV, SIGBUS, SIGFPE, SIGILL, SIGTRAP,
// SIGSYS
// (a fault must be handled on the faulting thread, not as an event), the C
// library's reserved real-time signals below SIGRTMIN (32 and 33 with
// glibc), and numbers outside 1..SIGRTMAX.
//
// Threads. fd(), stats() and mechanism() may be called from any thread.
// try_receive(), receive() and dispatch() are for one consumer thread at a
// time. stop() may be called from any thread, once or many times, but not
// concurrently with the consumer functions of the same channel. With the
// handler mechanism several channels may watch the same signal and each gets
// every event; with signalfd the kernel hands each instance to whichever
// signalfd reads it first, so watch a signal with one channel only.
//
// Spinning. receive() may poll the channel for a bounded number of
// iterations before it sleeps in poll(2) (SignalChannel::Spin; the default
// budget is Options::spin, which is no spin). It is for users who trade a
// CPU for latency: an event that arrives during the spin is taken without
// the receiver's wake-up (a sleep in poll(2), the scheduler's wake-up of
// this thread, and for an idle CPU its exit from the idle state). What it
// costs and when it helps (measured: docs/signals.md, "What we measured"):
//   - it burns the receiving CPU for the whole budget, also when nothing
//     comes: a budget is a bet that an event follows soon after the
//     previous one (or after the caller entered receive());
//   - it helps only when the sender (for the handler mechanism: the thread
//     that runs the handler) is on another CPU. On the receiver's CPU the
//     sender cannot run while we spin, and the budget is pure loss;
//   - one iteration: handler mechanism, a pause instruction and two loads of
//     the channel's queue (tens of ns; no syscall, and the thread that runs
//     the handler still writes the eventfd); signalfd, one non-blocking
//     read(2) of the signalfd (a syscall, several hundred ns on a virtual
//     machine, and it takes the kernel's siglock, which the sender's kill(2)
//     needs too). Size the budget per mechanism;
//   - the spin ends early at receive()'s deadline (checked every 16
//     iterations), so a short timeout bounds it; after the spin, receive()
//     sleeps as without one, and nothing else about events changes (same
//     order, coalescing and counts).
// dispatch() and try_receive() never spin.
//
// Memory ordering: everything the signal sender did before sending is
// visible to the consumer that reads the event (the kernel's siglock and
// the queue's release/acquire pair order it).
//
// Async-signal-safety: none of the members may be called from a signal
// handler.
//
// Fork. A channel belongs to the process that created it. In a child made
// with fork(), the consumer functions throw ForkedChannelError; the handler
// mechanism restores the previous dispositions in the child at fork (signals
// blocked around the fork so none slips through), so the child's signals
// reach neither the parent's fd nor a dead channel (chriskohlhoff/asio#1069).
// The fork hook holds the channels' lock across fork(), so a fork that races
// a constructor or stop() on another thread waits until that one has
// finished changing the disposition, and the child restores every signal
// whose disposition is ours. So do not fork() from a signal handler that
// may interrupt a channel's constructor or stop() on its own thread (the
// hook would wait for a lock that thread holds; _Fork() runs no hooks).
// A fork while other threads are inside the channel's handler is safe: those
// threads do not exist in the child, and the child's own channels stop
// without waiting for them.
// Create a new channel in the child if it wants events. exec() drops
// handlers anyway; signalfd descriptors are close-on-exec.
//
// Lifetime: the destructor calls stop() and closes fd(). Remove fd() from
// any poller before destroying the channel.
//
// Cross-process: no; a channel describes signals sent to this process.
#pragma once

#include <signal.h>
#include <sys/types.h>

#include <chrono>
#include <cstdint>
#include <functional>
#include <initializer_list>
#include <memory>
#include <optional>
#include <stdexcept>
#include <string>
#include <vector>

#include "doorbell/signal_receiver.h"  // restore_signal_mask

namespace doorbell {

namespace detail {
class SignalBackend;
}

// One signal, as the channel saw it.
struct SignalEvent {
  int signal = 0;           // the number, e.g. SIGTERM
  int code = 0;             // si_code: SI_USER (kill), SI_QUEUE (sigqueue), SI_TKILL,
                            // SI_KERNEL, CLD_EXITED/CLD_KILLED/... for SIGCHLD
  pid_t sender_pid = 0;     // si_pid (for SIGCHLD: the child)
  uid_t sender_uid = 0;     // si_uid
  int status = 0;           // SIGCHLD: exit code (CLD_EXITED) or signal (CLD_KILLED, ...)
  int error = 0;            // si_errno
  std::uint64_t value = 0;  // si_value (sival_ptr; sival_int in the low bits)
  // Further instances of this standard signal merged into this event, as far
  // as the channel knows (handler mechanism). 0 with signalfd, where the
  // kernel merges without telling. Always 0 for real-time signals.
  std::uint64_t coalesced = 0;

  bool realtime() const noexcept { return signal >= SIGRTMIN && signal <= SIGRTMAX; }
  // "SIGTERM from pid 12 (uid 0, SI_USER)", for logs.
  std::string describe() const;
};

enum class SignalMechanism { automatic, signalfd, handler };
const char* mechanism_name(SignalMechanism mechanism) noexcept;

struct SignalChannelStats {
  std::uint64_t signals = 0;     // instances recorded (handler runs, or signalfd records)
  std::uint64_t events = 0;      // events handed to the user
  std::uint64_t coalesced = 0;   // instances merged into an earlier event (known ones)
  std::uint64_t overflowed = 0;  // real-time instances dropped: the queue was full
};

// Thrown by the consumer functions of a channel used in a forked child.
class ForkedChannelError : public std::logic_error {
 public:
  using std::logic_error::logic_error;
};

// How long SignalChannel::receive() polls before it sleeps (see "Spinning").
struct SignalChannelSpin {
  std::uint32_t iterations = 0;  // polls of the channel before sleeping; 0: none
};

class SignalChannel {
 public:
  using Spin = SignalChannelSpin;

  // The largest Options::realtime_capacity (65,536). More than the kernel
  // usually queues for a user anyway (RLIMIT_SIGPENDING); SIZE_MAX as "keep
  // everything" is refused rather than wrapped.
  static constexpr std::size_t kMaxRealtimeCapacity = std::size_t{1} << 16;

  struct Options {
    SignalMechanism mechanism = SignalMechanism::automatic;
    // Handler mechanism: call a handler that was installed before the
    // channel, after recording the event.
    bool chain_previous = true;
    // Handler mechanism: real-time instances kept until read; more are
    // counted in stats().overflowed. 1..kMaxRealtimeCapacity. The queue is
    // allocated up front: bit_ceil(realtime_capacity + 32) cells of under
    // 64 bytes (8 MB at the maximum).
    std::size_t realtime_capacity = 4096;
    // The spin budget of receive(timeout) (see "Spinning"); none by default.
    Spin spin{};
  };

  // Watches `signals`. Throws std::invalid_argument for an empty set, a
  // refused signal (see above), a realtime_capacity of 0 or above
  // kMaxRealtimeCapacity (whatever the mechanism), or masks that the
  // mechanism cannot work with (the message names the thread and signal);
  // std::system_error when a kernel call fails (signalfd, eventfd,
  // sigaction), or when more than 64 handler-mechanism channels exist.
  explicit SignalChannel(std::initializer_list<int> signals) : SignalChannel(signals, Options{}) {}
  SignalChannel(std::initializer_list<int> signals, const Options& options)
      : SignalChannel(std::vector<int>(signals), options) {}
  SignalChannel(const std::vector<int>& signals, const Options& options);
  ~SignalChannel();
  SignalChannel(const SignalChannel&) = delete;
  SignalChannel& operator=(const SignalChannel&) = delete;

  // SignalChannel::fd()
  //
  // Readable while events may be pending (level-triggered: it stays readable
  // until try_receive() or dispatch() has taken them all). After stop() it
  // may no longer become readable: drain leftovers with try_receive().
  int fd() const noexcept;

  SignalMechanism mechanism() const noexcept;
  const std::vector<int>& signals() const noexcept { return signals_; }

  // SignalChannel::try_receive()
  //
  // The next event, or nullopt when none is pending. Never blocks. Throws
  // ForkedChannelError in a forked child.
  std::optional<SignalEvent> try_receive();

  // SignalChannel::receive()
  //
  // Waits up to `timeout` (poll(2) on fd(), EINTR retried with the time
  // left) for the next event. nullopt on timeout, or at once when stopped
  // and empty. Throws ForkedChannelError in a forked child. Spins first with
  // the budget of Options::spin (none by default).
  std::optional<SignalEvent> receive(std::chrono::nanoseconds timeout);
  // Like receive(timeout), spinning with `spin` instead of Options::spin:
  // when nothing is pending, polls the channel up to spin.iterations times
  // (or until the deadline) and returns the first event it finds; then
  // sleeps as above. Spin{0} is exactly receive(timeout) without a spin.
  // Never spins when the channel is stopped. See "Spinning" for the cost.
  std::optional<SignalEvent> receive(std::chrono::nanoseconds timeout, Spin spin);

  // SignalChannel::dispatch()
  //
  // Calls `handler` on the calling thread for every pending event, in
  // order; returns how many. Does not wait. Exceptions from the handler
  // propagate (the event that threw is consumed). Throws ForkedChannelError
  // in a forked child.
  std::size_t dispatch(const std::function<void(const SignalEvent&)>& handler);

  // SignalChannel::stop()
  //
  // See the contract above. Idempotent; noexcept (a failure to restore a
  // disposition is impossible with a sigaction we read before, and aborts).
  void stop() noexcept;
  bool stopped() const noexcept { return stopped_; }

  SignalChannelStats stats() const noexcept;

 private:
  void check_fork() const;
  std::vector<int> signals_;
  std::unique_ptr<detail::SignalBackend> backend_;
  std::uint64_t fork_generation_ = 0;
  Spin spin_{};
  bool stopped_ = false;
};

// block_signals_before_threads()
//
// Blocks `signals` in the calling thread and returns the previous mask. Call
// it in main() before any thread starts: threads inherit the mask, so the
// signals are then blocked in every thread, which is what the signalfd
// mechanism needs. Pass the returned mask to restore_signal_mask() when the
// threads are gone, to get the original behaviour back (for example: a
// second SIGINT after shutdown then kills as the default does). Throws
// std::invalid_argument for a refused signal (see above), std::system_error
// when pthread_sigmask(3) fails (the mask is then unchanged).
sigset_t block_signals_before_threads(const std::vector<int>& signals);

// restore_signal_mask(mask), declared in doorbell/signal_receiver.h (shared
// with SignalReceiver), sets the calling thread's mask back.

// Whether the channel would refuse `signo`, and why (nullptr when not).
const char* refused_signal_reason(int signo) noexcept;

// The name of a signal ("SIGTERM", "SIGRTMIN+3"), or "signal N".
std::string signal_name(int signo);

}  // namespace doorbell
