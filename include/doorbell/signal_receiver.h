// SignalReceiver: one dedicated thread takes every process-directed signal of
// a set, at once, and hands each on to ordinary code. The receiver-side remedy
// for late delivery in multi-threaded processes.
//
// Why. For a process-directed signal Linux picks one thread at send time,
// preferring the main thread when it does not block the signal, even when
// that thread is only waiting for a CPU; handling then waits for it to run
// (milliseconds to tens of milliseconds with more busy threads than CPUs).
// If every thread blocks the signals except one thread waiting for them in
// sigwaitinfo(2) (or reading a signalfd), the kernel has exactly one choice,
// and that thread is asleep, so the send wakes it. Give it SCHED_FIFO and it
// runs at once, whatever the other threads do. This is the user-space
// equivalent of the "confident signal receiver" of "Real-Time Signaling in
// Linux for Multi-Threaded Processes" (IEEE ESL); docs/delivery.md says when
// it applies (handled signals of your own process) and when it does not
// (stop signals, processes you do not control: see thread_broadcast.h).
//
// Set-up, in this order:
//   1. In main(), before any thread exists:
//        doorbell::block_signals_before_threads({SIGTERM, SIGUSR1});
//      Threads inherit the mask, so every later thread blocks the set too.
//      Threads created before this call (by libraries) do not: verify().
//   2. doorbell::SignalReceiver receiver({SIGTERM, SIGUSR1}, on_signal, options);
//   3. Optionally receiver.verify(): the threads that do NOT block the set.
//      A process-directed signal can still land on such a thread and run its
//      disposition there (for SIGUSR1 by default: terminate the process).
//
// Dispositions. The receiver installs no handler and changes no
// disposition: a blocked signal is queued whatever its disposition (even
// SIG_IGN or a default "ignore", the kernel does not discard blocked
// signals), and the receiver dequeues it. Standard signals coalesce while
// pending (at most one instance each); real-time signals queue (up to
// RLIMIT_SIGPENDING). received() counts what the receiver dequeued; counting
// what was sent is the sender's business.
//
// The callback runs on the receiver thread, one signal at a time, in
// dequeue order, NOT in a signal handler: any code may run there. While it
// runs, further signals wait (queued or coalesced): keep it short, or hand
// the work to another thread. It must not throw (the thread would call
// std::terminate). Instead of (or after) the callback, the receiver can ring
// a doorbell::Bell (Options::bell) so that a waiting thread wakes.
//
// Real-time priority and affinity. Options::fifo_priority (1..99) asks for
// SCHED_FIFO, Options::cpu pins the thread. Where the process may not use
// them (no CAP_SYS_NICE and RLIMIT_RTPRIO below the priority; a CPU outside
// the allowed set), the receiver stays SCHED_OTHER / unpinned, records why
// in placement().warning and, with Options::warn_on_stderr, writes it to
// stderr once. It still receives every signal, but its delay then depends
// on the fair scheduler: the lab (group e2e, policy receiver-other) measures
// that fallback; on a loaded 2-CPU VM its p99 was in milliseconds where the
// SCHED_FIFO receiver stayed in the low hundreds of µs. With
// Options::require_fifo the constructor throws instead of falling back.
//
// Lifetime. The constructor starts the thread and returns once it is placed
// and about to wait. stop() (and the destructor) wakes it, joins it and
// returns; when stop() returns, the callback is not running and will not run
// again. Signals that arrive while stop() runs may still reach the callback
// (before stop() returns) or stay pending; none is lost. With
// Method::sigwaitinfo the wake-up is a thread-directed instance of a signal
// of the set (the lowest real-time one, else the first), queued to the
// receiver thread and consumed by it: the thread stays alive until stop()
// has sent it, so it never goes to another thread, is never left pending,
// and never reaches the callback. The limit: a real-time wake-up needs a
// slot of the user's real-time queue (RLIMIT_SIGPENDING, shared by all the
// user's processes); while that is full, stop() tries again every
// millisecond. A standard-signal wake-up (a set without real-time signals)
// is never refused, but when that queue is full its siginfo is lost, and the
// callback then sees one extra instance of that signal (si_code SI_USER,
// si_pid 0). Signals of the set that arrive after stop() stay pending in the
// process (still blocked everywhere): restoring the mask with
// restore_signal_mask() or exiting is the caller's choice. The
// receiver never changes the mask of any thread but its own. Do not call
// stop() from the callback.
//
// Thread safety: received(), placement(), verify() may be called from any
// thread; stop() from any thread but the receiver's, once at a time (not
// concurrently with itself or the destructor).
//
// Fork. A receiver belongs to the process that created it. A forked child
// has no receiver thread (only the forking thread survives) and inherits
// the blocked mask: in the child nothing receives the set. The child's copy
// of the object is inert and harmless to stop() or destroy (static
// destructors, a scope left before _exit): it closes the child's copies of
// its descriptors and touches nothing of the parent's (no wake-up is sent,
// the parent's receiver goes on). received() and placement() report the
// state at the fork. It uses the fork hooks of SignalChannel (pthread_atfork;
// a child of a raw clone() or _Fork() is not recognised). Create a new
// receiver in the child if it wants the signals. exec() ends it all anyway
// (its descriptors are close-on-exec).
#pragma once

#include <signal.h>
#include <sys/types.h>

#include <atomic>
#include <cstdint>
#include <functional>
#include <initializer_list>
#include <memory>
#include <string>
#include <vector>

namespace doorbell {

class Bell;

// The same function as block_signals_before_threads() (doorbell/
// signal_channel.h), which is the documented name: blocks the signals in the
// calling thread (pthread_sigmask SIG_BLOCK) and returns the previous mask.
// Call it in main() before creating threads. Throws std::invalid_argument
// for a refused signal (refused_signal_reason(): the receiver and the
// channel refuse the same signals). Kept for existing callers.
sigset_t block_signals_in_this_thread(const std::vector<int>& signals);
// See block_signals_in_this_thread; declared in doorbell/signal_channel.h.
sigset_t block_signals_before_threads(const std::vector<int>& signals);
// Whether the receiver (and SignalChannel) would refuse `signo`, and why
// (nullptr when not). Declared in doorbell/signal_channel.h too.
const char* refused_signal_reason(int signo) noexcept;
// Restores a mask returned by block_signals_in_this_thread.
void restore_signal_mask(const sigset_t& previous);

class SignalReceiver {
 public:
  enum class Method {
    sigwaitinfo,  // sigwaitinfo(2); the receiver counts as the one unblocked thread
    signalfd,     // signalfd(2) + poll(2); every thread blocks, the fd reader is woken
  };

  struct Options {
    Method method = Method::sigwaitinfo;
    int fifo_priority = 0;       // 0: SCHED_OTHER; 1..99: SCHED_FIFO at that priority
    int cpu = -1;                // -1: no pinning; else the CPU to pin the receiver to
    bool require_fifo = false;   // throw instead of falling back to SCHED_OTHER
    bool warn_on_stderr = true;  // write placement().warning to stderr
    // Rung after each signal, after the callback (if any) returned: another
    // thread (or process, for a Bell in shared memory) that waits on it
    // learns that signals arrived. Rings merge like the Bell says; count
    // with received(). Must outlive the receiver. May be null.
    Bell* bell = nullptr;
  };

  // Where the receiver thread ended up.
  struct Placement {
    pid_t tid = 0;
    bool fifo = false;    // SCHED_FIFO in effect
    int priority = 0;     // its SCHED_FIFO priority, 0 for SCHED_OTHER
    int cpu = -1;         // the CPU it is pinned to, -1 if not pinned
    std::string warning;  // empty, or what was asked and not granted, and why
  };

  using Callback = std::function<void(const siginfo_t&)>;

  // Starts the receiver for `signals`. The callback may be empty when
  // Options::bell is set. Throws std::invalid_argument for an empty set, no
  // callback and no bell, SIGKILL, SIGSTOP, the synchronous fault
  // signals (SIGSEGV, SIGBUS, SIGFPE, SIGILL, SIGTRAP, SIGSYS: they go to the
  // faulting thread and cannot be waited for), the C library's reserved
  // real-time signals (below SIGRTMIN), a priority outside 0..99 or a
  // negative CPU other than -1; std::system_error when the thread or the
  // signalfd cannot be created, or, with require_fifo, SCHED_FIFO or the
  // pinning is refused.
  SignalReceiver(const std::vector<int>& signals, Callback callback);
  SignalReceiver(const std::vector<int>& signals, Callback callback, Options options);
  ~SignalReceiver();
  SignalReceiver(const SignalReceiver&) = delete;
  SignalReceiver& operator=(const SignalReceiver&) = delete;

  // Stops and joins the receiver thread (idempotent).
  void stop();

  // Signals dequeued so far (relaxed: a statistic).
  uint64_t received() const noexcept;
  const Placement& placement() const noexcept;

  // The threads of this process, other than the receiver, that do not block
  // every signal of the set (read from /proc/self/task/*/status). Empty when
  // the set-up is right. A snapshot: threads may start or exit meanwhile.
  std::vector<pid_t> verify() const;

 private:
  struct State;
  std::unique_ptr<State> state_;
};

}  // namespace doorbell
