// The handler mechanism: a minimal SA_SIGINFO handler records each signal
// in a lock-free queue and rings an EventNotifier; the consumer reads the
// queue.
//
// Process-wide registry (one per process, guarded by g_mutex except where
// the handler reads it):
//
//   g_cores[64]     the live channels; the handler walks them lock-free.
//   g_slots[signo]  per signal: how many channels watch it, the disposition
//                   that was in place before the first one.
//   g_active        handlers currently inside our code (not counting a
//                   chained previous handler, which runs after the handler
//                   has left the count: it may never return).
//
// stop() of the last channel of a signal, in this order:
//   1. restore the previous disposition: a signal that arrives later goes
//      there, not to us;
//   2. unlink the core from g_cores (seq_cst store);
//   3. wait until g_active is 0. A handler increments g_active (seq_cst)
//      BEFORE it loads g_cores, so any handler still able to see the core
//      is counted; one that starts later finds the slot empty.
// A handler the kernel started before step 1 that finds no channel (it
// loaded g_cores after step 2) re-sends the signal to its own thread with
// the same siginfo, so the restored disposition acts on it: the signal is
// never lost (golang/go#14571).
//
// Chaining is decided by the cores that recorded the instance: each core
// carries its channel's chain_previous, fixed for its life. A handler that
// recorded in a chaining core chains, however far stop() (or another
// channel's constructor) has got meanwhile, so every instance a chaining
// channel records also reaches the previous handler. (A per-signal "chain"
// flag that stop() cleared before unlinking the core lost exactly those
// instances that were recorded in between.)
//
// Queue: Vyukov's bounded MPMC array queue (one CAS per push and pop). It
// never blocks, so it is safe in handlers. Standard signals have at most one
// record each in the queue (pending[signo] counts the merged ones), so they
// never overflow; real-time ones are bounded by realtime_capacity and
// counted when dropped. The wake-up is an EventNotifier (armed handshake):
// a handler writes the eventfd only when the consumer has found the queue
// empty and re-armed, so a flood costs one write per drain, not per signal.
// Records are published with a release store of the
// cell's sequence and read after an acquire load of it.
#include <sys/eventfd.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <sched.h>
#include <atomic>
#include <bit>
#include <cerrno>
#include <cstring>
#include <memory>
#include <mutex>
#include <new>
#include <string>

#include "doorbell/event_notifier.h"
#include "signals/signal_channel_backend.h"
#include "signals/signal_channel_hooks.h"
#include "sys/cpu_relax.h"
#include "sys/error.h"
#include "sys/fd.h"
#include "sys/syscalls.h"
#include "sys/tgkill.h"

namespace doorbell::detail {
namespace {

static_assert(SignalChannel::kMaxRealtimeCapacity + 32 <= (std::size_t{1} << 20),
              "the queue's cell count stays small and cannot wrap");

constexpr int kMaxCores = 64;
constexpr int kMaxSignal = 64;  // SIGRTMAX on Linux

std::uint64_t bit_of(int signo) {
  return std::uint64_t{1} << (signo - 1);
}

class HandlerCore {
 public:
  // realtime_capacity: 1..SignalChannel::kMaxRealtimeCapacity (checked by
  // SignalChannel), so the cell count below cannot wrap.
  HandlerCore(const std::vector<int>& signals, std::size_t realtime_capacity, bool chain)
      : chain_(chain),
        realtime_capacity_(realtime_capacity),
        capacity_(std::bit_ceil(realtime_capacity + 32)),
        cells_(new Cell[capacity_]) {
    for (int signo : signals) mask_ |= bit_of(signo);
    for (std::size_t i = 0; i < capacity_; ++i)
      cells_[i].sequence.store(i, std::memory_order_relaxed);
    // Armed from the start: nobody has read fd() yet, so the first event
    // must write it.
    notifier_.arm();
  }

  std::uint64_t mask() const noexcept { return mask_; }
  // Whether the channel asked to chain the previous handler (constant).
  bool chain() const noexcept { return chain_; }
  int fd() const noexcept { return notifier_.fd(); }

  // In a handler.
  void record(int signo, const siginfo_t* info) noexcept {
    signals_.fetch_add(1, std::memory_order_relaxed);
    if (signo < SIGRTMIN) {
      // acq_rel: the winner of 0 -> 1 pushes the record; the consumer's
      // exchange(0) after popping it must see every increment before it.
      if (pending_[signo].fetch_add(1, std::memory_order_acq_rel) != 0) return;  // merged
    } else if (realtime_outstanding_.fetch_add(1, std::memory_order_relaxed) >=
               realtime_capacity_) {
      realtime_outstanding_.fetch_sub(1, std::memory_order_relaxed);
      overflowed_.fetch_add(1, std::memory_order_relaxed);
      return;
    }
    SignalEvent event;
    fill_event(event, signo, info);
    if (!push(event)) overflowed_.fetch_add(1, std::memory_order_relaxed);  // cannot happen
    wake();
  }

  // Consumer. Whether pop() would find a record now: the two loads pop()
  // starts with, no write and no syscall, so a spinning consumer touches the
  // producers' cache lines only to read them. acquire on the sequence, as in
  // pop(); a true answer is followed by try_receive(), whose pop() takes it.
  bool has_record() const noexcept {
    const std::size_t pos = dequeue_.load(std::memory_order_relaxed);
    const Cell& cell = cells_[pos & (capacity_ - 1)];
    return cell.sequence.load(std::memory_order_acquire) == pos + 1;
  }

  // Writes the eventfd only when the consumer is armed (it found the queue
  // empty and went back to its poller); otherwise one atomic.
  void wake() noexcept { notifier_.notify(); }

  // Consumer.
  std::optional<SignalEvent> try_receive() noexcept {
    SignalEvent event;
    // While events remain, fd() stays readable: it was written when the
    // first of them arrived (we were armed) and is drained only below, on
    // the way to reporting "empty".
    if (!pop(event)) {
      for (;;) {
        // Empty: drain the eventfd (consume(true) reads it whatever the
        // state, which also clears a late write from a notifier that saw us
        // armed earlier), then look once more.
        notifier_.consume(true);
        if (pop(event)) {
          // A push raced the drain. More may follow it while nobody is
          // armed, so make fd() readable again until a later call finds the
          // queue empty. Rare: one write per such race.
          const std::uint64_t one = 1;
          ssize_t n;
          do n = sys::eventfd_write(notifier_.fd(), one);
          while (n < 0 && errno == EINTR);
          break;
        }
        // Arm for the next event; false: a notify() slipped in between, so
        // look again instead of going to sleep.
        if (notifier_.arm()) return std::nullopt;
      }
    }
    if (event.signal < SIGRTMIN) {
      const std::uint64_t merged = pending_[event.signal].exchange(0, std::memory_order_acq_rel);
      event.coalesced = merged > 0 ? merged - 1 : 0;
      coalesced_.fetch_add(event.coalesced, std::memory_order_relaxed);
    } else {
      realtime_outstanding_.fetch_sub(1, std::memory_order_relaxed);
    }
    events_.fetch_add(1, std::memory_order_relaxed);
    return event;
  }

  SignalChannelStats stats() const noexcept {
    return {signals_.load(std::memory_order_relaxed), events_.load(std::memory_order_relaxed),
            coalesced_.load(std::memory_order_relaxed),
            overflowed_.load(std::memory_order_relaxed)};
  }

 private:
  struct Cell {
    std::atomic<std::size_t> sequence;
    SignalEvent event;
  };

  bool push(const SignalEvent& event) noexcept {
    std::size_t pos = enqueue_.load(std::memory_order_relaxed);
    Cell* cell;
    for (;;) {
      cell = &cells_[pos & (capacity_ - 1)];
      const std::size_t seq = cell->sequence.load(std::memory_order_acquire);
      const auto diff = static_cast<std::ptrdiff_t>(seq) - static_cast<std::ptrdiff_t>(pos);
      if (diff == 0) {
        // relaxed: the cell's sequence store below publishes the data.
        if (enqueue_.compare_exchange_weak(pos, pos + 1, std::memory_order_relaxed)) break;
      } else if (diff < 0) {
        return false;
      } else {
        pos = enqueue_.load(std::memory_order_relaxed);
      }
    }
    cell->event = event;
    cell->sequence.store(pos + 1, std::memory_order_release);
    return true;
  }

  bool pop(SignalEvent& out) noexcept {
    std::size_t pos = dequeue_.load(std::memory_order_relaxed);
    Cell* cell;
    for (;;) {
      cell = &cells_[pos & (capacity_ - 1)];
      const std::size_t seq = cell->sequence.load(std::memory_order_acquire);
      const auto diff = static_cast<std::ptrdiff_t>(seq) - static_cast<std::ptrdiff_t>(pos + 1);
      if (diff == 0) {
        if (dequeue_.compare_exchange_weak(pos, pos + 1, std::memory_order_relaxed)) break;
      } else if (diff < 0) {
        return false;  // empty, or a producer has claimed the cell but not published yet
      } else {
        pos = dequeue_.load(std::memory_order_relaxed);
      }
    }
    out = cell->event;
    // release: the producer that reuses this cell must not overwrite the
    // event before we copied it.
    cell->sequence.store(pos + capacity_, std::memory_order_release);
    return true;
  }

  std::uint64_t mask_ = 0;
  const bool chain_;
  const std::size_t realtime_capacity_;
  const std::size_t capacity_;
  std::unique_ptr<Cell[]> cells_;
  alignas(64) std::atomic<std::size_t> enqueue_{0};
  alignas(64) std::atomic<std::size_t> dequeue_{0};
  std::atomic<std::uint64_t> pending_[32] = {};  // standard signals 1..31
  std::atomic<std::size_t> realtime_outstanding_{0};
  std::atomic<std::uint64_t> signals_{0}, events_{0}, coalesced_{0}, overflowed_{0};
  EventNotifier notifier_;
};

struct SignalSlot {
  int watchers = 0;  // under g_mutex
  // The disposition before the first watcher, allocated by install(). One
  // per signal at most: it stays after the last channel stopped (a handler
  // of ours that other code puts back restores it, see on_signal), and a
  // constructor that finds another previous disposition replaces it and
  // frees the old copy once no handler can read it. A handler reads it only
  // while counted in g_active (it copies what it chains to before it leaves
  // the count), so the replacement is: store the new pointer (seq_cst), wait
  // until g_active is 0 (seq_cst), free the old one. A handler counted
  // after that wait loads the new pointer (both sides seq_cst).
  std::atomic<const struct sigaction*> previous{nullptr};
};

std::atomic<HandlerCore*> g_cores[kMaxCores];
SignalSlot g_slots[kMaxSignal + 1];
std::atomic<int> g_active{0};
std::mutex g_mutex;
// Test seam (signal_channel_hooks.h). Relaxed: a test installs the hook
// before it provokes the race, and the hook synchronises on its own.
std::atomic<SignalChannelHook> g_hook{nullptr};
// Copies of previous dispositions alive (kept_disposition_count()).
std::atomic<std::size_t> g_kept_count{0};

void race_point(SignalChannelRacePoint point, int signo) noexcept {
  if (const SignalChannelHook hook = g_hook.load(std::memory_order_relaxed)) hook(point, signo);
}

void resend_to_self(int signo, siginfo_t* info) noexcept {
  // The signal is blocked while we run (sa_mask is full), so it stays
  // pending on this thread until the handler returns, then meets the
  // restored disposition. rt_tgsigqueueinfo keeps si_code and si_value;
  // sending to oneself with any code is allowed.
  siginfo_t copy = *info;
  if (sys::rt_tgsigqueueinfo(::getpid(), ::gettid(), signo, &copy) != 0) {
    sys::tgkill(::getpid(), ::gettid(), signo);
  }
}

void on_signal(int signo, siginfo_t* info, void* context);

bool is_ours(const struct sigaction& action) noexcept {
  return (action.sa_flags & SA_SIGINFO) != 0 && action.sa_sigaction == on_signal;
}

struct sigaction our_action() noexcept {
  struct sigaction ours {};
  ours.sa_sigaction = on_signal;
  ours.sa_flags = SA_SIGINFO | SA_RESTART | SA_ONSTACK;
  sigfillset(&ours.sa_mask);
  return ours;
}

// The disposition to restore for signo: the one kept before its first
// channel, or SIG_DFL when none was ever kept (our handler put on a signal
// no channel watched, by code that copied it from another signal).
const struct sigaction* previous_of(int signo) noexcept {
  static const struct sigaction kDefault = [] {
    struct sigaction action {};
    action.sa_handler = SIG_DFL;
    return action;
  }();
  const struct sigaction* kept = g_slots[signo].previous.load(std::memory_order_seq_cst);
  return kept != nullptr ? kept : &kDefault;
}

bool watched_by_a_channel(int signo) noexcept {
  for (auto& slot : g_cores) {
    const HandlerCore* core = slot.load(std::memory_order_seq_cst);
    if (core != nullptr && (core->mask() & bit_of(signo)) != 0) return true;
  }
  return false;
}

// When the current disposition of signo is ours, swaps the previous one in;
// if the swap replaced someone else's (a sigaction() slipped in after the
// read), puts theirs back. Returns false when a sigaction() failed (it
// cannot with a disposition we read before). Async-signal-safe. The limit
// (signal_channel.h): between the swap and the putting back a signal meets
// the previous disposition, and a third sigaction() landing exactly there is
// undone.
bool restore_previous_if_ours(int signo, bool announce = false) noexcept {
  struct sigaction current;
  if (sys::sigaction(signo, nullptr, &current) != 0) return false;
  if (!is_ours(current)) return true;
  if (announce) race_point(SignalChannelRacePoint::stop_before_restore, signo);
  struct sigaction replaced;
  if (sys::sigaction(signo, previous_of(signo), &replaced) != 0) return false;
  if (!is_ours(replaced) && sys::sigaction(signo, &replaced, nullptr) != 0) return false;
  return true;
}

void on_signal(int signo, siginfo_t* info, void* context) {
  const int saved_errno = errno;
  // seq_cst: ordered before the loads of g_cores (see the essay above).
  g_active.fetch_add(1, std::memory_order_seq_cst);
  race_point(SignalChannelRacePoint::handler_counted, signo);
  bool taken = false;
  bool chain = false;  // a core that recorded the instance asked to chain
  // A copy: the kept disposition may be freed once we leave the count.
  struct sigaction chain_to {};
  bool chain_previous = false;
  bool resend = false;
  if (signo > 0 && signo <= kMaxSignal) {
    for (auto& slot : g_cores) {
      HandlerCore* core = slot.load(std::memory_order_seq_cst);
      if (core != nullptr && (core->mask() & bit_of(signo)) != 0) {
        core->record(signo, info);
        taken = true;
        chain = chain || core->chain();
      }
    }
    race_point(SignalChannelRacePoint::handler_recorded, signo);
    if (!taken) {
      // No channel takes it. When the disposition is still ours, nobody
      // will ever take it: other code put our handler back after the last
      // channel stopped (a library restoring what it had saved), or a
      // channel's stop() is under way. Restore the previous disposition
      // first, so that the re-send below meets it instead of us (which
      // bounced a SIG_DFL signal back and forth for ever). A channel that
      // a constructor published meanwhile gets our handler back: its
      // install() read the disposition before or after our swap, and either
      // way the check below sees its core (published before it installs).
      // A stop() that raced us re-checks after it waited for handlers.
      restore_previous_if_ours(signo);
      if (watched_by_a_channel(signo)) {
        const struct sigaction ours = our_action();
        sys::sigaction(signo, &ours, nullptr);
      }
    }
    const struct sigaction* previous = previous_of(signo);
    const bool has_handler = (previous->sa_flags & SA_SIGINFO) != 0 ||
                             (previous->sa_handler != SIG_DFL && previous->sa_handler != SIG_IGN);
    if (has_handler && (!taken || chain)) {
      chain_to = *previous;
      chain_previous = true;
    } else if (!has_handler && !taken && previous->sa_handler == SIG_DFL) {
      resend = true;
    }
  }
  // Leave the count BEFORE running the previous handler: it is not ours and
  // may never return (a shell's SIGINT handler siglongjmps to its prompt),
  // which would leave the count raised and every later stop() spinning.
  // Nothing below touches a core or a kept disposition (chain_to is our
  // copy, see SignalSlot), and the resend uses only this frame's siginfo.
  // stop() thus waits for our
  // code only; a chained handler may still run when stop() returns, as it
  // could run at any time before the channel existed.
  g_active.fetch_sub(1, std::memory_order_seq_cst);
  if (chain_previous) {
    if ((chain_to.sa_flags & SA_SIGINFO) != 0) {
      chain_to.sa_sigaction(signo, info, context);
    } else {
      chain_to.sa_handler(signo);
    }
  } else if (resend) {
    resend_to_self(signo, info);
  }
  errno = saved_errno;
}

bool same_action(const struct sigaction& a, const struct sigaction& b) {
  if (a.sa_flags != b.sa_flags) return false;
  if ((a.sa_flags & SA_SIGINFO) != 0 ? a.sa_sigaction != b.sa_sigaction
                                     : a.sa_handler != b.sa_handler) {
    return false;
  }
  for (int s = 1; s < NSIG; ++s) {
    if (sigismember(&a.sa_mask, s) != sigismember(&b.sa_mask, s)) return false;
  }
  return true;
}

void wait_for_handlers() noexcept {
  // Handlers are short (a few hundred ns); spinning with a yield is enough.
  while (g_active.load(std::memory_order_seq_cst) != 0) sched_yield();
}

class HandlerBackend final : public SignalBackend {
 public:
  HandlerBackend(const std::vector<int>& signals, const SignalChannel::Options& options)
      : signals_(signals),
        core_(std::make_unique<HandlerCore>(signals, options.realtime_capacity,
                                            options.chain_previous)) {
    if (const std::string problem = check_unblocked_in_some_thread(signals); !problem.empty()) {
      throw std::invalid_argument("SignalChannel (handler mechanism): " + problem +
                                  "; unblock it in a thread, or use the signalfd mechanism");
    }
    std::lock_guard lock(g_mutex);
    for (int i = 0; i < kMaxCores; ++i) {
      if (g_cores[i].load(std::memory_order_relaxed) == nullptr) {
        index_ = i;
        break;
      }
    }
    if (index_ < 0) sys::throw_errno(EMFILE, "SignalChannel: more than 64 handler channels");
    // Publish the core before installing the handler, so that the first
    // signal after sigaction() finds it.
    g_cores[index_].store(core_.get(), std::memory_order_seq_cst);
    std::size_t installed = 0;
    try {
      for (const int signo : signals_) {
        install(signo);
        ++installed;
      }
    } catch (...) {
      for (std::size_t i = 0; i < installed; ++i) uninstall(signals_[i]);
      g_cores[index_].store(nullptr, std::memory_order_seq_cst);
      wait_for_handlers();
      throw;
    }
  }

  ~HandlerBackend() override { stop(); }

  int fd() const noexcept override { return core_->fd(); }
  SignalMechanism mechanism() const noexcept override { return SignalMechanism::handler; }
  std::optional<SignalEvent> try_receive() noexcept override { return core_->try_receive(); }
  std::optional<SignalEvent> spin_receive(std::uint32_t iterations) noexcept override {
    // The queue is our own memory: watch it, and go through try_receive()
    // (one pop, the eventfd left alone while records remain) only when it
    // holds something. The consumer stays armed meanwhile, so the handler
    // still writes the eventfd; fd() then stays readable until a later
    // try_receive() finds the queue empty and drains it, as without a spin.
    for (std::uint32_t i = 0; i < iterations; ++i) {
      if (core_->has_record()) return core_->try_receive();
      cpu_relax();
    }
    return std::nullopt;
  }
  SignalChannelStats stats() const noexcept override { return core_->stats(); }

  void stop() noexcept override {
    if (index_ < 0) return;
    if (generation_ != fork_generation()) {
      index_ = -1;  // a forked child: the fork hook already cleaned up here
      return;
    }
    std::lock_guard lock(g_mutex);
    for (const int signo : signals_) uninstall(signo);
    g_cores[index_].store(nullptr, std::memory_order_seq_cst);
    index_ = -1;
    wait_for_handlers();
    // A handler that found no channel, restored the previous disposition
    // and then still saw our core (unlinked only after the restore above)
    // put our handler back. Handlers that start from now on find no core
    // and never do: the last look is ours.
    for (const int signo : signals_) {
      if (g_slots[signo].watchers == 0 && !restore_previous_if_ours(signo))
        sys::fatal("sigaction(restore)", errno);
    }
  }

 private:
  void install(int signo) {  // under g_mutex
    SignalSlot& slot = g_slots[signo];
    if (slot.watchers == 0) {
      struct sigaction previous;
      if (sys::sigaction(signo, nullptr, &previous) != 0) sys::throw_errno("sigaction");
      // Our own handler is never kept as "previous": chaining to it would
      // recurse for ever. It is there without a channel when other code put
      // it back after the last channel stopped; the disposition before that
      // channel (kept, or SIG_DFL when none was) is still the previous one.
      if (is_ours(previous)) previous = *previous_of(signo);
      const struct sigaction* kept = slot.previous.load(std::memory_order_relaxed);
      if (kept == nullptr || !same_action(*kept, previous)) {
        // Replace the kept copy, and free the old one once no handler can
        // be reading it (SignalSlot).
        const auto* copy = new struct sigaction(previous);
        g_kept_count.fetch_add(1, std::memory_order_relaxed);
        slot.previous.store(copy, std::memory_order_seq_cst);
        if (kept != nullptr) {
          wait_for_handlers();
          delete kept;
          g_kept_count.fetch_sub(1, std::memory_order_relaxed);
        }
      }
      const struct sigaction ours = our_action();
      if (sys::sigaction(signo, &ours, nullptr) != 0) sys::throw_errno("sigaction");
      race_point(SignalChannelRacePoint::install_after_sigaction, signo);
    }
    ++slot.watchers;
  }

  void uninstall(int signo) noexcept {  // under g_mutex
    SignalSlot& slot = g_slots[signo];
    --slot.watchers;
    if (slot.watchers > 0) return;
    // Someone replaced our handler meanwhile: theirs stays. "Ours" means our
    // function, whatever flags and mask: someone who re-installed on_signal
    // with other flags still wants the channel's handler, and leaving it in
    // place with no channel would bounce every SIG_DFL signal back to itself
    // (resend_to_self) forever.
    // No compare-and-swap of a disposition exists; sigaction() is an atomic
    // swap that reports what it replaced. If that is no longer ours, another
    // sigaction() ran since the read: put theirs back (restore_previous_if_ours).
    if (!restore_previous_if_ours(signo, true)) sys::fatal("sigaction(restore)", errno);
  }

  std::vector<int> signals_;
  std::unique_ptr<HandlerCore> core_;
  int index_ = -1;
  std::uint64_t generation_ = fork_generation();
};

}  // namespace

std::unique_ptr<SignalBackend> make_handler_backend(const std::vector<int>& signals,
                                                    const SignalChannel::Options& options) {
  return std::make_unique<HandlerBackend>(signals, options);
}

void signal_channel_race_point(SignalChannelRacePoint point, int signo) noexcept {
  race_point(point, signo);
}

std::size_t kept_disposition_count() noexcept {
  return g_kept_count.load(std::memory_order_relaxed);
}

void set_signal_channel_hook(SignalChannelHook hook) noexcept {
  g_hook.store(hook, std::memory_order_relaxed);
}

void handler_backend_before_fork() noexcept {
  // Held across fork(): no constructor or stop() is half-way through a
  // disposition change in the child (between installing our handler and
  // counting the watcher, or between counting down and restoring).
  g_mutex.lock();
}

void handler_backend_after_fork_in_parent() noexcept {
  g_mutex.unlock();
}

void handler_backend_after_fork_in_child() noexcept {
  // One thread, every signal blocked, and the lock taken by this thread in
  // the prepare hook: start with a fresh one.
  new (&g_mutex) std::mutex;
  // Wherever the disposition is ours, whatever the counts say: the child has
  // no channel (our handler there would bounce every SIG_DFL signal), and
  // other code may have put our handler back on a signal no channel watches
  // now. Only signals a channel ever watched can have it (else a handler
  // that finds no channel restores SIG_DFL itself, see on_signal).
  for (int signo = 1; signo <= kMaxSignal; ++signo) {
    if (g_slots[signo].previous.load(std::memory_order_relaxed) != nullptr)
      restore_previous_if_ours(signo);
    g_slots[signo].watchers = 0;
  }
  for (auto& core : g_cores) core.store(nullptr, std::memory_order_relaxed);
  // Handlers that ran on other threads of the parent at the fork were
  // counted, and those threads do not exist here: nobody would ever lower
  // the count, and the child's first stop() would spin forever. The forking
  // thread itself is never inside the counted part: that part calls no
  // foreign code (chained handlers run after it, see on_signal), and the
  // fork hook blocked every signal in this thread before fork(). So no
  // handler of ours runs in the child.
  g_active.store(0, std::memory_order_relaxed);
}

}  // namespace doorbell::detail
