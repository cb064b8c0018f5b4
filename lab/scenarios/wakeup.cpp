// The `wakeup` group: what it costs to wake another thread or process, per
// mechanism, as round-trip latency (ping-pong: every notification is really
// received before the next is sent) and one-way throughput (deliveries
// counted, coalesced ones reported), plus the cost of a notification nobody
// waits for and data passing (sigqueue+si_value vs Ring).
#include <sched.h>
#include <signal.h>
#include <sys/eventfd.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <cstring>
#include <thread>

#include "doorbell/bell.h"
#include "doorbell/ring.h"
#include "lab/common/deadline.h"
#include "lab/common/signal_scope.h"
#include "lab/common/time.h"
#include "lab/harness/scenario.h"
#include "lab/scenarios/wakeup_channels.h"
#include "sys/error.h"
#include "sys/fd.h"
#include "sys/futex.h"
#include "sys/proc.h"

namespace doorbell::lab {
namespace {

using wakeup::Channel;
using wakeup::Where;

struct Control {
  std::atomic<uint32_t> stop{0};
  std::atomic<uint64_t> delivered{0};
  std::atomic<uint64_t> round_flag{0};
  std::atomic<uint64_t> acked{0};
};

// --- round trip -------------------------------------------------------------------

// A round trip answered only because the rescuer woke this side: the row
// fails with the round it was in.
void check_rescued(const Rescuer& rescuer, std::size_t round) {
  if (rescuer.fired())
    throw WaitTimedOut("timed out waiting for the answer to round trip " +
                       std::to_string(round + 1) +
                       " (a lost wake-up, or a peer that stopped; both sides were woken "
                       "by the rescuer)");
}

void rtt_measure(Context& ctx, Channel& forward, Channel& back, Control& control,
                 const Rescuer& rescuer) {
  const IntervalClock& clock = IntervalClock::get();
  Histogram& h = ctx.metric();
  ctx.phase("round trips (warming the path)");
  // Warm the path: 64 round trips or a tenth of the budget, whichever first.
  const uint64_t warm_until = monotonic_ns() + static_cast<uint64_t>(ctx.budget_s() * 1e8);
  for (int i = 0; i < 64 && monotonic_ns() < warm_until; ++i) {
    forward.send();
    back.recv();
    check_rescued(rescuer, 0);
  }
  ctx.phase("round trips");
  std::size_t n = 0;
  // At least 8 samples even on a machine too loaded for the budget.
  while (n < 8 || (ctx.keep_going(n) && ctx.time_left())) {
    const uint64_t t0 = clock.read();
    forward.send();
    back.recv();
    const uint64_t t1 = clock.read();
    check_rescued(rescuer, n);
    h.record(clock.to_ns(t1 - t0));
    ++n;
  }
  control.stop.store(1, std::memory_order_release);
  forward.send();
  ctx.counter("round_trips", static_cast<double>(n));
}

void rtt_peer(Channel& forward, Channel& back, Control& control) {
  for (;;) {
    forward.recv();
    if (control.stop.load(std::memory_order_acquire)) return;
    back.send();
  }
}

// Tells the peer to return: the stop flag, then a notification it cannot
// miss in either direction.
auto stopper(Control& control, Channel& forward, Channel& back) {
  return [&control, &forward, &back] {
    control.stop.store(1, std::memory_order_release);
    forward.rescue();
    back.rescue();
  };
}

}  // namespace

void wakeup::run_rtt_threads(Context& ctx, const std::string& method, const ChannelMaker& make) {
  AffinityGuard affinity;
  wakeup::MethodEnvironment env(method);
  wakeup::SharedArena arena(4096);
  auto forward = make(0, arena);
  auto back = make(1, arena);
  Control control;
  back->attach_receiver();
  back->set_target(::getpid(), sys::current_tid());
  std::atomic<int> ready{0};
  const Deadline deadline(ctx.wait_deadline_ns());
  PeerThread peer(
      [&] {
        ctx.pin_thread(1);
        forward->attach_receiver();
        forward->set_target(::getpid(), sys::current_tid());
        ready.store(1, std::memory_order_release);
        rtt_peer(*forward, *back, control);
      },
      stopper(control, *forward, *back));
  // Wakes both sides of a round trip that lost its wake-up (or a peer that
  // stopped answering) once the deadline has passed.
  Rescuer rescuer(deadline, stopper(control, *forward, *back));
  ctx.phase("waiting for the peer thread to be ready");
  wait_until(deadline, "the peer thread to be ready",
             [&] { return ready.load(std::memory_order_acquire) != 0; });
  // Pinned after the peer pinned itself: a thread inherits its creator's
  // affinity, and role 1 must choose from all allowed CPUs.
  ctx.pin_thread(0);
  rtt_measure(ctx, *forward, *back, control, rescuer);
  ctx.phase("waiting for the peer thread to end");
  peer.join(deadline, "the peer thread to end");
}

namespace {

void run_rtt_processes(Context& ctx, const std::string& method) {
  AffinityGuard affinity;
  wakeup::MethodEnvironment env(method);  // blocked signals are inherited by the child
  wakeup::SharedArena arena(8192);
  auto forward = wakeup::make_channel(method, Where::processes, 0, arena);
  auto back = wakeup::make_channel(method, Where::processes, 1, arena);
  auto* control = new (arena.take(sizeof(Control))) Control();
  auto* ready = new (arena.take(sizeof(std::atomic<int>))) std::atomic<int>(0);
  const int cpu = ctx.cpu_for_role(1);
  ctx.pin_thread(0);
  back->attach_receiver();
  back->set_target(::getpid(), ::getpid());
  const pid_t parent = ::getpid();
  const pid_t child = ::fork();
  if (child < 0) sys::throw_errno("fork");
  if (child == 0) {
    ::prctl(PR_SET_PDEATHSIG, SIGKILL);
    if (::getppid() != parent) ::_exit(1);
    pin_to_cpu(cpu);
    forward->attach_receiver();
    ready->store(1, std::memory_order_release);
    rtt_peer(*forward, *back, *control);
    ::_exit(0);
  }
  ChildGuard guard(child);
  forward->set_target(child, child);
  const Deadline deadline(ctx.wait_deadline_ns());
  {
    Rescuer rescuer(deadline, stopper(*control, *forward, *back));
    ctx.phase("waiting for the peer process to be ready");
    wait_until(deadline, "the peer process to be ready",
               [&] { return ready->load(std::memory_order_acquire) != 0; });
    rtt_measure(ctx, *forward, *back, *control, rescuer);
    ctx.phase("waiting for the peer process to end");
    const int status = reap_child(child, deadline, "the peer process to end");
    guard.release();
    if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) ctx.note("peer process failed");
  }
}

// --- one-way throughput -------------------------------------------------------------

constexpr uint64_t kRoundSends = 256;

// The sender sends kRoundSends notifications back to back, the last one
// after raising round_flag; the receiver counts every recv() that returns
// and acknowledges the round once it sees the flag. One sample = the
// round's time / kRoundSends, from the first send to the acknowledgement.
}  // namespace

void wakeup::run_throughput_threads(Context& ctx, const std::string& method,
                                    const ChannelMaker& make) {
  AffinityGuard affinity;
  wakeup::MethodEnvironment env(method);
  wakeup::SharedArena arena(4096);
  auto channel = make(0, arena);
  Control control;
  std::atomic<int> ready{0};
  auto stop = [&] {
    control.stop.store(1, std::memory_order_release);
    channel->rescue();
  };
  PeerThread receiver(
      [&] {
        ctx.pin_thread(1);
        channel->attach_receiver();
        channel->set_target(::getpid(), sys::current_tid());
        ready.store(1, std::memory_order_release);
        uint64_t delivered = 0;
        for (;;) {
          channel->recv();
          ++delivered;
          control.delivered.store(delivered, std::memory_order_relaxed);
          const uint64_t flag = control.round_flag.load(std::memory_order_acquire);
          if (flag != control.acked.load(std::memory_order_relaxed))
            control.acked.store(flag, std::memory_order_release);
          if (control.stop.load(std::memory_order_acquire)) return;
        }
      },
      stop);
  const Deadline deadline(ctx.wait_deadline_ns());
  ctx.phase("waiting for the receiver thread to be ready");
  wait_until(deadline, "the receiver thread to be ready",
             [&] { return ready.load(std::memory_order_acquire) != 0; });
  ctx.pin_thread(0);  // after the peer: see run_rtt_threads
  const IntervalClock& clock = IntervalClock::get();
  Histogram& h = ctx.metric();
  std::size_t n = 0;
  uint64_t sent = 0;
  const uint64_t start_ns = monotonic_ns();
  ctx.phase("rounds of 256 sends, each waiting for the receiver's acknowledgement");
  while (n < 4 || (ctx.keep_going(n) && ctx.time_left())) {
    const uint64_t round = n + 1;
    const uint64_t t0 = clock.read();
    for (uint64_t i = 0; i + 1 < kRoundSends; ++i) channel->send();
    control.round_flag.store(round, std::memory_order_release);
    channel->send();
    // The receiver acknowledges once it has seen the flag after a receive:
    // a round whose last send it slept through (a lost wake-up) is never
    // acknowledged, and this wait says so.
    try {
      wait_until(deadline, "the receiver's acknowledgement",
                 [&] { return control.acked.load(std::memory_order_acquire) == round; });
    } catch (const WaitTimedOut&) {
      throw WaitTimedOut("timed out waiting for the receiver's acknowledgement of round " +
                         std::to_string(round) +
                         ": the round's last send went unanswered (a lost wake-up, or a "
                         "receiver that stopped)");
    }
    const uint64_t t1 = clock.read();
    sent += kRoundSends;
    h.record(clock.to_ns(t1 - t0) / kRoundSends);
    ++n;
  }
  const double elapsed_s = static_cast<double>(monotonic_ns() - start_ns) / 1e9;
  const uint64_t delivered = control.delivered.load();
  control.stop.store(1, std::memory_order_release);
  channel->send();
  ctx.phase("waiting for the receiver thread to end");
  {
    // A lost wake-up of the stop message is rescued too.
    Rescuer rescuer(deadline, stop);
    receiver.join(deadline, "the receiver thread to end");
  }
  ctx.counter("sent", static_cast<double>(sent));
  ctx.counter("delivered", static_cast<double>(delivered));
  ctx.counter("coalesced", static_cast<double>(sent - delivered));
  ctx.counter("ops_per_s", static_cast<double>(delivered) / elapsed_s);
  ctx.counter("sends_per_s", static_cast<double>(sent) / elapsed_s);
}

namespace {

wakeup::ChannelMaker threads_of(const std::string& method) {
  return [method](int direction, wakeup::SharedArena& arena) {
    return wakeup::make_channel(method, Where::threads, direction, arena);
  };
}

// --- no-waiter cost ---------------------------------------------------------------

template <typename Op>
void run_batched(Context& ctx, Op&& op) {
  constexpr std::size_t kBatch = 256;
  const IntervalClock& clock = IntervalClock::get();
  Histogram& h = ctx.metric();
  std::size_t n = 0;
  while (ctx.keep_going(n)) {
    const uint64_t t0 = clock.read();
    for (std::size_t i = 0; i < kBatch; ++i) op();
    const uint64_t t1 = clock.read();
    h.record(clock.to_ns(t1 - t0) / kBatch);
    ++n;
  }
}

// --- data passing -----------------------------------------------------------------

struct DataShared {
  std::atomic<uint32_t> ready{0};
  std::atomic<uint64_t> received{0};
  std::atomic<uint64_t> latency_sum_ns{0};
  std::atomic<uint64_t> latency_max_ns{0};
  std::atomic<uint64_t> bad{0};
  Bell ack;
};

constexpr uint64_t kDataRound = 64;

// Streams messages (a sequence number and a send timestamp) to a child
// process in rounds of kDataRound; the child checks the sequence, keeps the
// one-way latency (send timestamp to receipt, CLOCK_MONOTONIC) and rings
// `ack` after each round. One sample = round time / kDataRound.
void run_data(Context& ctx, bool use_ring) {
  AffinityGuard affinity;
  wakeup::SharedArena arena(1 << 20);
  auto* shared = new (arena.take(sizeof(DataShared))) DataShared();
  const uint32_t slots = 256;
  const std::size_t ring_bytes = Ring::bytes_needed(slots, 16);
  void* ring_memory = arena.take(ring_bytes, 4096);
  Ring::create(ring_memory, ring_bytes, slots, 16);
  const int signo = SIGRTMIN + 2;
  sigset_t set;
  sigemptyset(&set);
  sigaddset(&set, signo);
  // Blocked for the child's sigwaitinfo (it inherits the mask); on the way
  // out, what is left pending is taken before the mask comes back.
  ScopedMask block(SIG_BLOCK, set);
  ScopedDrain drain(signo);
  const int cpu = ctx.cpu_for_role(1);
  ctx.pin_thread(0);
  const pid_t parent = ::getpid();
  const pid_t child = ::fork();
  if (child < 0) sys::throw_errno("fork");
  if (child == 0) {
    ::prctl(PR_SET_PDEATHSIG, SIGKILL);
    if (::getppid() != parent) ::_exit(1);
    pin_to_cpu(cpu);
    Ring ring = Ring::attach(ring_memory, ring_bytes);
    shared->ready.store(1, std::memory_order_release);
    uint64_t expected = 0;
    for (;;) {
      uint64_t message[2];
      if (use_ring) {
        auto r = ring.pop(message, sizeof message, std::chrono::seconds(30));
        if (r.status != Ring::Status::ok) ::_exit(1);
      } else {
        siginfo_t info;
        while (sigwaitinfo(&set, &info) < 0) {
        }
        message[0] = static_cast<uint64_t>(reinterpret_cast<uintptr_t>(info.si_value.sival_ptr));
        message[1] = 0;  // si_value has room for one 8-byte word only
      }
      const uint64_t now = monotonic_ns();
      if (message[0] == UINT64_MAX) ::_exit(0);
      if (message[0] != expected) shared->bad.fetch_add(1);
      expected = message[0] + 1;
      if (use_ring) {
        const uint64_t lat = now - message[1];
        shared->latency_sum_ns.fetch_add(lat, std::memory_order_relaxed);
        if (lat > shared->latency_max_ns.load(std::memory_order_relaxed))
          shared->latency_max_ns.store(lat, std::memory_order_relaxed);
      }
      const uint64_t got = shared->received.fetch_add(1) + 1;
      if (got % kDataRound == 0) shared->ack.ring();
    }
  }
  ChildGuard guard(child);
  Ring ring = Ring::attach(ring_memory, ring_bytes);
  const Deadline deadline(ctx.wait_deadline_ns());
  ctx.phase("waiting for the receiving process to be ready");
  wait_until(deadline, "the receiving process to be ready",
             [&] { return shared->ready.load(std::memory_order_acquire) != 0; });
  const IntervalClock& clock = IntervalClock::get();
  Histogram& h = ctx.metric();
  std::size_t n = 0;
  uint64_t seq = 0, full = 0, eagain = 0;
  const uint64_t start_ns = monotonic_ns();
  // Retries (a full ring, a full signal queue) are counted, and bounded: a
  // receiver that stopped taking leaves them failing forever.
  auto send = [&](uint64_t value) {
    if (use_ring) {
      uint64_t message[2] = {value, monotonic_ns()};
      while (ring.try_push(message, sizeof message) == Ring::Status::full) {
        ++full;
        if ((full & 63) == 0 && deadline.passed())
          deadline.fail("room in the ring (the receiving process stopped taking)");
        std::this_thread::yield();
      }
    } else {
      union sigval v;
      v.sival_ptr = reinterpret_cast<void*>(static_cast<uintptr_t>(value));
      while (::sigqueue(child, signo, v) != 0) {
        if (errno != EAGAIN) sys::fatal("sigqueue", errno);
        ++eagain;  // RLIMIT_SIGPENDING or the queue is full: counted, retried
        if ((eagain & 63) == 0 && deadline.passed())
          deadline.fail("room in the signal queue (the receiving process stopped taking)");
        std::this_thread::yield();
      }
    }
  };
  ctx.phase("rounds of 64 messages, each waiting for the receiver's acknowledgement");
  while (ctx.keep_going(n) && ctx.time_left()) {
    const uint64_t t0 = clock.read();
    for (uint64_t i = 0; i < kDataRound; ++i) send(seq++);
    while (shared->received.load(std::memory_order_acquire) < seq) {
      const uint64_t left = deadline.left_ns();  // one clock read inside the timed round
      if (left == 0)
        throw WaitTimedOut(
            "timed out waiting for the receiving process to acknowledge "
            "message " +
            std::to_string(seq) + " (it received " + std::to_string(shared->received.load()) + ")");
      (void)shared->ack.wait_for(std::chrono::nanoseconds(left));
    }
    const uint64_t t1 = clock.read();
    h.record(clock.to_ns(t1 - t0) / kDataRound);
    ++n;
  }
  const double elapsed_s = static_cast<double>(monotonic_ns() - start_ns) / 1e9;
  ctx.phase("waiting for the receiving process to end");
  send(UINT64_MAX);
  const int status = reap_child(child, deadline, "the receiving process to end");
  guard.release();
  if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) ctx.note("receiving process failed");
  const uint64_t received = shared->received.load();
  ctx.counter("sent", static_cast<double>(seq));
  ctx.counter("delivered", static_cast<double>(received));
  ctx.counter("lost", static_cast<double>(seq - received));
  ctx.counter("out_of_order", static_cast<double>(shared->bad.load()));
  ctx.counter("ops_per_s", static_cast<double>(received) / elapsed_s);
  ctx.counter("payload_bytes", use_ring ? 16 : 8);
  if (use_ring) {
    ctx.counter("full_retries", static_cast<double>(full));
    if (received)
      ctx.counter("one_way_mean_ns", static_cast<double>(shared->latency_sum_ns.load()) /
                                         static_cast<double>(received));
    ctx.counter("one_way_max_ns", static_cast<double>(shared->latency_max_ns.load()));
  } else {
    ctx.counter("eagain_retries", static_cast<double>(eagain));
  }
}

// --- registration -----------------------------------------------------------------

std::string pin_name(Pinning p) {
  return p == Pinning::same_core ? "same" : "other";
}

std::vector<Scenario> wakeup_scenarios() {
  std::vector<Scenario> out;
  const ClockKind interval = IntervalClock::get().kind();
  // Same-core rows in the default suite only for the headline mechanisms.
  auto default_same_core = [](const std::string& m) {
    return m == "bell" || m == "futex" || m == "eventfd" || m == "sigwaitinfo";
  };
  for (const auto& info : wakeup::methods()) {
    if (!info.threads) continue;
    for (Pinning pin : {Pinning::other_core, Pinning::same_core}) {
      if (info.name == "busy_poll" && pin == Pinning::same_core) continue;  // would only yield
      Scenario s;
      s.name = "wakeup/rtt:method=" + info.name + ",pin=" + pin_name(pin);
      s.group = "wakeup";
      s.title = "round trip, threads, " + pin_name(pin) + " core: " + info.what;
      s.description =
          "ping-pong between two threads: thread A notifies B, B's receive returns, B "
          "notifies A, A's receive returns; one sample = one round trip, timed on A with the "
          "interval clock from before A's send to after A's receive";
      s.params = {{"method", info.name}, {"pin", pin_name(pin)}};
      s.clock = interval;
      s.pinning = pin;
      s.budget_s = 0.04;
      s.samples = 20000;
      s.in_default_suite = pin == Pinning::other_core || default_same_core(info.name);
      const std::string method = info.name;
      s.run = [method](Context& ctx) { wakeup::run_rtt_threads(ctx, method, threads_of(method)); };
      out.push_back(std::move(s));
    }
    Scenario t;
    t.name = "wakeup/throughput:method=" + info.name + ",pin=other";
    t.group = "wakeup";
    t.title = "one-way throughput, threads: " + info.what;
    t.description =
        "thread A sends 256 notifications back to back; B counts every receive that returns "
        "(delivered) and acknowledges the round after the last send; one sample = round time "
        "(first send to acknowledgement, interval clock on A) / 256 sends. coalesced = sent - "
        "delivered; ops_per_s = deliveries per second";
    t.params = {{"method", info.name}, {"pin", "other"}};
    t.clock = interval;
    t.pinning = Pinning::other_core;
    t.budget_s = 0.02;
    t.samples = 2000;
    const std::string method = info.name;
    t.run = [method](Context& ctx) {
      wakeup::run_throughput_threads(ctx, method, threads_of(method));
    };
    out.push_back(std::move(t));
  }
  for (const auto& info : wakeup::methods()) {
    if (!info.processes) continue;
    Scenario s;
    s.name = "wakeup/process_rtt:method=" + info.name + ",pin=other";
    s.group = "wakeup";
    s.title = "round trip, processes: " + info.what;
    s.description =
        "ping-pong between a process and its forked child (shared state in a MAP_SHARED page, "
        "fds inherited, signals process-directed with kill); one sample = one round trip, "
        "timed in the parent with the interval clock";
    s.params = {{"method", info.name}, {"pin", "other"}};
    s.clock = interval;
    s.pinning = Pinning::other_core;
    s.budget_s = 0.04;
    s.samples = 20000;
    const std::string method = info.name;
    s.run = [method](Context& ctx) { run_rtt_processes(ctx, method); };
    out.push_back(std::move(s));
  }
  for (bool ring : {false, true}) {
    Scenario s;
    s.name = std::string("wakeup/data:method=") + (ring ? "ring" : "sigqueue") + ",pin=other";
    s.group = "wakeup";
    s.title = ring ? "data to a process: Ring (16-byte records) + Bell"
                   : "data to a process: sigqueue + si_value (8 bytes) + sigwaitinfo";
    s.description =
        "the parent streams numbered messages to its child in rounds of 64 and waits until "
        "the child has received all of them (the child rings a Bell per round); one sample = "
        "round time / 64 (interval clock in the parent); the child checks the order (lost, "
        "out_of_order counters) and, for Ring, the one-way latency from a send timestamp";
    s.params = {{"method", ring ? "ring" : "sigqueue"}, {"pin", "other"}};
    s.clock = interval;
    s.pinning = Pinning::other_core;
    s.budget_s = 0.08;
    s.samples = 5000;
    s.run = [ring](Context& ctx) { run_data(ctx, ring); };
    out.push_back(std::move(s));
  }
  auto cost = [&](std::string what, std::string title, std::string description,
                  std::function<void(Context&)> run) {
    Scenario s;
    s.name = "wakeup/no_waiter:method=" + what;
    s.group = "wakeup";
    s.title = std::move(title);
    s.description = std::move(description);
    s.params = {{"method", what}};
    s.clock = interval;
    s.budget_s = 0.04;
    s.samples = 5000;
    s.run = std::move(run);
    out.push_back(std::move(s));
  };
  cost("bell_ring", "Bell::ring(), nobody waits",
       "ring() on a shared-scope Bell no one waits on: one atomic fetch_or, no syscall; "
       "batches of 256 on one thread, sample = batch time / 256",
       [](Context& ctx) {
         Bell bell;
         run_batched(ctx, [&] { bell.ring(); });
       });
  cost("eventfd_write", "eventfd write, nobody reads",
       "write(efd, 1) on a non-blocking eventfd no one waits on (the counter only grows); "
       "batches of 256, sample = batch time / 256",
       [](Context& ctx) {
         sys::UniqueFd fd(::eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK));
         if (!fd) sys::throw_errno("eventfd");
         run_batched(ctx, [&] {
           const uint64_t one = 1;
           if (::write(fd.get(), &one, sizeof one) != sizeof one) sys::fatal("eventfd", errno);
         });
       });
  cost("futex_wake", "FUTEX_WAKE (shared), nobody waits",
       "futex(FUTEX_WAKE) without FUTEX_PRIVATE_FLAG (the op a shared Bell would use) on a "
       "word no one waits on; batches of 256, sample = batch time / 256",
       [](Context& ctx) {
         uint32_t word = 0;
         run_batched(ctx, [&] { sys::futex_wake(&word, 1, sys::FutexScope::shared); });
       });
  return out;
}

const Registrar kWakeup{wakeup_scenarios()};

const RatioRegistrar kWakeupRatios{{
    {.name = "eventfd write / Bell ring (no waiter)",
     .numerator = "wakeup/no_waiter:method=eventfd_write",
     .denominator = "wakeup/no_waiter:method=bell_ring",
     .meaning = "goal >= 100: a Bell nobody waits on costs an atomic, an eventfd a syscall"},
    {.name = "futex wake / Bell ring (no waiter)",
     .numerator = "wakeup/no_waiter:method=futex_wake",
     .denominator = "wakeup/no_waiter:method=bell_ring",
     .meaning = "goal >= 100: the syscall Bell skips when nobody waits"},
    {.name = "Bell RTT / raw futex RTT (threads, other core)",
     .numerator = "wakeup/rtt:method=bell,pin=other",
     .denominator = "wakeup/rtt:method=futex,pin=other",
     .meaning = "goal <= 1.10: Bell's bookkeeping adds nothing visible to a real wake-up"},
    {.name = "Bell spin RTT / busy-poll RTT (threads, other core)",
     .numerator = "wakeup/rtt:method=bell_spin,pin=other",
     .denominator = "wakeup/rtt:method=busy_poll,pin=other",
     .meaning = "goal <= 3: with the peer answering inside the spin budget"},
    {.name = "shared Bell RTT / shared futex RTT (processes)",
     .numerator = "wakeup/process_rtt:method=bell,pin=other",
     .denominator = "wakeup/process_rtt:method=futex,pin=other",
     .meaning = "goal <= 1.10 across processes"},
    {.name = "shared Bell spin RTT / busy-poll RTT (processes)",
     .numerator = "wakeup/process_rtt:method=bell_spin,pin=other",
     .denominator = "wakeup/process_rtt:method=busy_poll,pin=other",
     .meaning = "goal <= 3 across processes"},
    {.name = "pthread_kill+sigwaitinfo / eventfd (one-way, per send)",
     .numerator = "wakeup/throughput:method=sigwaitinfo,pin=other",
     .denominator = "wakeup/throughput:method=eventfd,pin=other",
     .statistic = "mean",
     .reference = 3.7,
     .reference_source = "seed 000: 3,121 ms vs 842 ms for 1e6 notifications (sender-side "
                         "timing, coalesced receives not counted)",
     .meaning = "signal vs eventfd for frequent notification; ours counts deliveries"},
    {.name = "pthread_kill+sigwaitinfo RTT / eventfd+epoll RTT",
     .numerator = "wakeup/rtt:method=sigwaitinfo,pin=other",
     .denominator = "wakeup/rtt:method=eventfd_epoll,pin=other",
     .reference = 10.0,
     .reference_source = "seed 000: claimed ~10x for eventfd+epoll over kill/sigqueue "
                         "(no measurement given)",
     .meaning = "the seed's headline claim, measured as a delivered round trip"},
    {.name = "sigqueue / Ring (per message, processes)",
     .numerator = "wakeup/data:method=sigqueue,pin=other",
     .denominator = "wakeup/data:method=ring,pin=other",
     .statistic = "mean",
     .reference = 5.0,
     .reference_source = "seed 000: claimed ~5x for shared memory + eventfd over RT signals",
     .meaning = "passing data: RT signal per 8 bytes vs a shared-memory ring"},
}};

const ReferenceRegistrar kWakeupReferences{{
    {.scenario = "wakeup/throughput:method=sigwaitinfo,pin=other",
     .what = "pthread_kill + sigwait, per notification (sender-side only)",
     .value_ns = 3120.0,
     .statistic = "mean",
     .source = "seed 000, 1e6 notifications, machine not stated"},
    {.scenario = "wakeup/throughput:method=eventfd,pin=other",
     .what = "eventfd write/read, per notification (sender-side only)",
     .value_ns = 840.0,
     .statistic = "mean",
     .source = "seed 000, 1e6 notifications, machine not stated"},
}};

}  // namespace
}  // namespace doorbell::lab
