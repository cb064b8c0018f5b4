// queueing: standard signals merge, real-time signals queue, and queued ones
// are bounded by RLIMIT_SIGPENDING.
//
//  - burst: the receiver (this thread) blocks the signal, receives a burst of
//    thread-directed sends, then unblocks: a standard signal is delivered
//    once however many were sent (the rest merge into one pending bit); a
//    real-time signal allocates a sigqueue entry per send and is delivered
//    once per send.
//  - rlimit_sigpending: in a forked child with a small RLIMIT_SIGPENDING, the
//    send that finds the per-user quota full fails with EAGAIN. The count at
//    which it fails is reported, never silent.
//  - stream: high-rate notification of another thread, real-time signal to a
//    sigwaitinfo() loop against eventfd write to a blocking read() loop: the
//    seed's "eventfd ~10x" claim, timed to consumption, with merged eventfd
//    wake-ups counted.
#include <sys/eventfd.h>

#include <pthread.h>
#include <signal.h>
#include <time.h>
#include <unistd.h>

#include <atomic>
#include <cstring>
#include <string>
#include <thread>

#include "lab/common/costs_probes.h"
#include "lab/common/deadline.h"
#include "lab/common/signal_scope.h"
#include "lab/common/time.h"
#include "lab/harness/scenario.h"
#include "sys/error.h"
#include "sys/fd.h"
#include "sys/proc.h"
#include "sys/tgkill.h"

namespace doorbell::lab {
namespace {

namespace costs = doorbell::lab::costs;

std::atomic<uint64_t> g_handled{0};
void counting_handler(int, siginfo_t*, void*) {
  g_handled.fetch_add(1, std::memory_order_relaxed);
}

int rt_signal() {
  return SIGRTMIN + 4;
}

// ---------------------------------------------------------------- burst

void run_burst(Context& ctx, bool realtime, int burst) {
  const int signo = realtime ? rt_signal() : SIGUSR1;
  const auto& clock = IntervalClock::get();
  ScopedDisposition handler(signo, &counting_handler, 0);
  const pid_t pid = getpid();
  const pid_t tid = sys::current_tid();
  Histogram& send = ctx.metric();
  Histogram& drain = ctx.metric("drain_per_delivered");
  uint64_t sent = 0, delivered = 0, eagain = 0, rounds = 0;
  std::size_t n = 0;
  // One round is a whole burst: check the clock before each.
  while (n < ctx.samples() && ctx.time_left()) {
    const uint64_t before = g_handled.load(std::memory_order_relaxed);
    uint64_t t_drain0 = 0;
    {
      ScopedMask block(SIG_BLOCK, {signo});
      for (int i = 0; i < burst; ++i) {
        const uint64_t t0 = clock.read();
        const int rc = sys::tgkill(pid, tid, signo);
        const uint64_t t1 = clock.read();
        if (rc != 0) {
          if (rc != -EAGAIN) sys::fatal("tgkill to self", -rc);
          ++eagain;  // RLIMIT_SIGPENDING reached: the signal is lost to this sender
          continue;
        }
        send.record(clock.to_ns(t1 - t0));
        ++sent;
        ++n;
      }
      t_drain0 = clock.read();
    }  // unblocked: every pending instance is delivered before this returns
    const uint64_t t_drain1 = clock.read();
    const uint64_t got = g_handled.load(std::memory_order_relaxed) - before;
    delivered += got;
    if (got > 0) drain.record(clock.to_ns(t_drain1 - t_drain0) / static_cast<double>(got));
    ++rounds;
  }
  ctx.counter("sent", static_cast<double>(sent));
  ctx.counter("delivered", static_cast<double>(delivered));
  ctx.counter("coalesced", static_cast<double>(sent - delivered));
  ctx.counter("eagain", static_cast<double>(eagain));
  ctx.counter("rounds", static_cast<double>(rounds));
  if (eagain > 0)
    ctx.note(std::to_string(eagain) + " sends failed with EAGAIN (RLIMIT_SIGPENDING)");
}

Scenario burst(bool realtime, int size) {
  const std::string kind = realtime ? "realtime" : "standard";
  Scenario sc;
  sc.name = "queueing/burst:kind=" + kind + ",burst=" + std::to_string(size);
  sc.group = "queueing";
  sc.title = std::string(realtime ? "real-time" : "standard") + " signal, burst of " +
             std::to_string(size) + " while blocked";
  sc.description =
      "latency: one tgkill(self, " + std::string(realtime ? "SIGRTMIN+4" : "SIGUSR1") +
      ") while the thread blocks it (no delivery yet; a real-time send allocates a sigqueue "
      "entry, a standard one only sets a bit after the first). drain_per_delivered: from the "
      "unblock call until it returns, all pending instances handled, divided by the handler runs. "
      "Bursts of " +
      std::to_string(size) + "; interval clock on one thread. coalesced = sent - delivered.";
  sc.params = {{"kind", kind}, {"burst", std::to_string(size)}};
  sc.clock = IntervalClock::get().kind();
  sc.budget_s = 0.05;
  sc.samples = 10000;
  sc.run = [realtime, size](Context& ctx) { run_burst(ctx, realtime, size); };
  return sc;
}

// ----------------------------------------------------- RLIMIT_SIGPENDING

void run_rlimit(Context& ctx, long limit) {
  Histogram& send = ctx.metric();
  Histogram& failed = ctx.metric("failed_send");
  std::size_t n = 0;
  uint64_t probes = 0, reached = 0;
  long min_queued = limit + 1, max_queued = 0;
  // One probe is a fork: check the clock before each, and run at least one.
  while (probes == 0 || (n < ctx.samples() && ctx.time_left())) {
    const auto r = costs::probe_sigpending_limit(limit, rt_signal());
    if (!r.child_ran) throw std::runtime_error("RLIMIT_SIGPENDING probe: " + r.error);
    ++probes;
    for (uint32_t ns : r.send_ns) send.record(ns);
    n += r.send_ns.size() + 1;
    if (r.failure_errno == EAGAIN) {
      ++reached;
      failed.record(r.failed_send_ns);
    } else if (ctx.repetition() <= 0) {
      ctx.note(r.failure_errno == 0 ? "no EAGAIN within " + std::to_string(r.attempts) + " sends"
                                    : std::string("first failure was not EAGAIN: ") +
                                          std::strerror(r.failure_errno));
    }
    min_queued = std::min(min_queued, r.queued);
    max_queued = std::max(max_queued, r.queued);
  }
  ctx.counter("limit", static_cast<double>(limit));
  ctx.counter("probes", static_cast<double>(probes));
  ctx.counter("eagain", static_cast<double>(reached));
  ctx.counter("queued_at_eagain_min", static_cast<double>(min_queued));
  ctx.counter("queued_at_eagain_max", static_cast<double>(max_queued));
  if (min_queued < limit)
    ctx.note("EAGAIN came after " + std::to_string(min_queued) + " < " + std::to_string(limit) +
             " sends: other processes of this user hold queued signals");
}

Scenario rlimit(long limit, bool in_default) {
  Scenario sc;
  sc.name = "queueing/rlimit_sigpending:limit=" + std::to_string(limit);
  sc.group = "queueing";
  sc.title = "sigqueue until EAGAIN, RLIMIT_SIGPENDING " + std::to_string(limit) + " (child)";
  sc.description =
      "latency: one sigqueue(self, SIGRTMIN+4) in a forked child that set RLIMIT_SIGPENDING to " +
      std::to_string(limit) +
      " and blocks the signal, CLOCK_MONOTONIC around the call; the child sends until the first "
      "failure. failed_send: the failing call. Counters: queued_at_eagain (the count the kernel "
      "accepted), eagain (probes that ended in EAGAIN), probes (one fork each).";
  sc.params = {{"limit", std::to_string(limit)}, {"kind", "realtime"}};
  sc.clock = ClockKind::monotonic;
  sc.budget_s = 0.04;
  sc.samples = static_cast<std::size_t>(limit + 1) * 10;
  sc.in_default_suite = in_default;
  sc.run = [limit](Context& ctx) { run_rlimit(ctx, limit); };
  return sc;
}

// ---------------------------------------------------------------- stream

constexpr int kStreamBatch = 64;

void run_stream(Context& ctx, bool use_eventfd) {
  const int signo = SIGRTMIN + 6;
  const auto& clock = IntervalClock::get();
  // Blocked here before the receiver starts, so it inherits the mask and
  // sigwaitinfo() can take the signal; no handler is involved.
  ScopedMask block(SIG_BLOCK, {signo});
  sys::UniqueFd efd;
  if (use_eventfd) {
    efd.reset(eventfd(0, EFD_CLOEXEC));
    if (!efd) sys::throw_errno("eventfd");
  }
  std::atomic<uint64_t> consumed{0};
  std::atomic<uint64_t> wakeups{0};
  std::atomic<bool> stop{false};
  std::atomic<pid_t> receiver_tid{0};
  // What tells the receiver to return: the flag, then one more notification
  // (an eventfd write or a signal to its thread), from any thread.
  auto tell_stop = [&] {
    stop.store(true, std::memory_order_release);
    if (use_eventfd) {
      const uint64_t one = 1;
      (void)!write(efd.get(), &one, sizeof one);
    } else if (const pid_t tid = receiver_tid.load(std::memory_order_acquire); tid != 0) {
      (void)sys::tgkill(getpid(), tid, signo);
    }
  };
  PeerThread receiver(
      [&] {
        receiver_tid.store(sys::current_tid(), std::memory_order_release);
        sigset_t set;
        sigemptyset(&set);
        sigaddset(&set, signo);
        while (!stop.load(std::memory_order_acquire)) {
          uint64_t got = 0;
          if (use_eventfd) {
            uint64_t value = 0;
            const ssize_t r = read(efd.get(), &value, sizeof value);
            if (r != sizeof value) {
              if (r < 0 && errno == EINTR) continue;
              sys::fatal("eventfd read", errno);
            }
            got = value;
          } else {
            siginfo_t info;
            const int r = sigwaitinfo(&set, &info);
            if (r < 0) {
              if (errno == EINTR) continue;
              sys::fatal("sigwaitinfo", errno);
            }
            got = 1;
          }
          wakeups.fetch_add(1, std::memory_order_relaxed);
          // Release: the sender's acquire load sees the notifications consumed.
          consumed.fetch_add(got, std::memory_order_release);
        }
      },
      tell_stop);
  const Deadline deadline(ctx.wait_deadline_ns());
  ctx.phase("waiting for the receiver thread to start");
  wait_until(deadline, "the receiver thread to start",
             [&] { return receiver_tid.load(std::memory_order_acquire) != 0; });
  const pid_t rtid = receiver_tid.load(std::memory_order_acquire);
  const pid_t pid = getpid();
  auto notify = [&]() -> bool {
    if (use_eventfd) {
      const uint64_t one = 1;
      return write(efd.get(), &one, sizeof one) == sizeof one;
    }
    return sys::tgkill(pid, rtid, signo) == 0;
  };

  Histogram& h = ctx.metric();
  uint64_t sent = 0, failed = 0, stalled = 0;
  std::size_t n = 0;
  const uint64_t start = monotonic_ns();
  while (ctx.keep_going(n)) {
    const uint64_t t0 = clock.read();
    for (int i = 0; i < kStreamBatch; ++i) {
      if (notify())
        ++sent;
      else
        ++failed;
    }
    const uint64_t give_up = monotonic_ns() + 100000000u;
    while (consumed.load(std::memory_order_acquire) < sent && monotonic_ns() < give_up)
      sched_yield();
    const uint64_t t1 = clock.read();
    if (consumed.load(std::memory_order_acquire) < sent) ++stalled;
    h.record(clock.to_ns(t1 - t0) / kStreamBatch);
    n += kStreamBatch;
  }
  const double wall_s = static_cast<double>(monotonic_ns() - start) / 1e9;
  stop.store(true, std::memory_order_release);
  // Wake the receiver once more so it sees stop.
  if (!notify()) sys::fatal("final notification", errno);
  ctx.phase("waiting for the receiver thread to end");
  receiver.join(deadline, "the receiver thread to end");
  if (!use_eventfd) drain_pending(signo);
  const uint64_t total_consumed = consumed.load();
  ctx.counter("sent", static_cast<double>(sent));
  ctx.counter("delivered", static_cast<double>(wakeups.load()) - 1);  // minus the final one
  ctx.counter("coalesced", static_cast<double>(sent) - (static_cast<double>(wakeups.load()) - 1));
  ctx.counter("consumed", static_cast<double>(total_consumed) - 1);
  ctx.counter("send_failed", static_cast<double>(failed));
  ctx.counter("stalled_batches", static_cast<double>(stalled));
  ctx.counter("ops_per_s", static_cast<double>(sent) / wall_s);
}

Scenario stream(bool use_eventfd) {
  const std::string kind = use_eventfd ? "eventfd" : "rt_signal";
  Scenario sc;
  sc.name = "queueing/stream:kind=" + kind;
  sc.group = "queueing";
  sc.title = use_eventfd ? "notification stream: eventfd write -> read()"
                         : "notification stream: tgkill(SIGRTMIN+6) -> sigwaitinfo()";
  sc.description =
      "latency: per notification, a batch of 64 " +
      std::string(use_eventfd ? "eventfd writes" : "tgkill sends of a real-time signal") +
      " to a receiver thread blocked in " + std::string(use_eventfd ? "read()" : "sigwaitinfo()") +
      ", timed from before the first send until the sender sees all 64 consumed (interval clock "
      "on the sending thread), divided by 64. delivered counts receiver wake-ups; eventfd adds "
      "counts, so several writes can merge into one wake-up (coalesced).";
  sc.params = {{"kind", kind}, {"method", kind}};
  sc.clock = IntervalClock::get().kind();
  sc.budget_s = 0.05;
  sc.samples = 64 * 400;
  sc.run = [use_eventfd](Context& ctx) { run_stream(ctx, use_eventfd); };
  return sc;
}

const Registrar kRegistrar{std::vector<Scenario>{
    burst(false, 1000),
    burst(true, 1000),
    rlimit(64, true),
    rlimit(4096, false),
    stream(false),
    stream(true),
}};

const RatioRegistrar kRatios{{
    {.name = "real-time / standard send while blocked",
     .numerator = "queueing/burst:kind=realtime,burst=1000",
     .denominator = "queueing/burst:kind=standard,burst=1000",
     .meaning = "the sigqueue allocation of a real-time send (seed 000: RT signals allocate, "
                "standard ones reuse one bit)"},
    {.name = "RT signal / eventfd, high-rate notification",
     .numerator = "queueing/stream:kind=rt_signal",
     .denominator = "queueing/stream:kind=eventfd",
     .reference = 10.0,
     .reference_source = "seed 000 claim (no machine stated); its own benchmark, sender-only "
                         "timing, showed 3.7x",
     .meaning = "per-notification cost timed to consumption; below 10 means this machine "
                "does not reproduce the seed's ~10x"},
}};

}  // namespace
}  // namespace doorbell::lab
