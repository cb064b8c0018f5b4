// siglock: every signal operation of a thread group (send, sigaction,
// sigprocmask, dequeue) takes the group's one sighand->siglock. N threads
// that guard a critical section with sigprocmask block/unblock therefore
// serialize on it, and so does concurrent signal traffic to the process.
//
// Two ways to keep a signal handler out of the same critical section:
//  - sigprocmask: block SIGUSR2, do the work, unblock: two syscalls, each
//    taking the siglock;
//  - atomic_flag: a per-thread "in critical section" flag (an atomic store
//    and a compiler-only signal fence); a handler that arrives while it is
//    set leaves the work for the thread to do on leaving.
// With traffic=on, the caller's thread (which blocks SIGUSR2) sends SIGUSR2 to
// the process with kill(), waits until a handler ran, and sends the next: a
// closed loop, so every signal is delivered and none merges.
#include <pthread.h>
#include <signal.h>
#include <time.h>
#include <unistd.h>

#include <atomic>
#include <string>
#include <thread>
#include <vector>

#include "lab/common/costs_probes.h"
#include "lab/common/deadline.h"
#include "lab/common/signal_scope.h"
#include "lab/common/time.h"
#include "lab/harness/scenario.h"
#include "sys/error.h"
#include "sys/futex.h"

namespace doorbell::lab {
namespace {

namespace costs = doorbell::lab::costs;

constexpr int kTrafficSignal = SIGUSR2;
constexpr int kBatch = 64;

enum class Guard { sigprocmask, atomic_flag };

// The handler's work: publish the time it ran. Async-signal-safe.
std::atomic<uint64_t> g_work_ns{0};
std::atomic<uint32_t> g_work_count{0};  // also a futex word: the sender sleeps on it
std::atomic<uint64_t> g_deferred{0};
thread_local volatile sig_atomic_t t_in_critical = 0;
thread_local volatile sig_atomic_t t_work_pending = 0;

void do_work() noexcept {
  g_work_ns.store(monotonic_ns(), std::memory_order_relaxed);
  // Release: the sender reads g_work_ns after seeing the count change.
  g_work_count.fetch_add(1, std::memory_order_release);
  // The sender sleeps rather than spins: with more busy workers than CPUs a
  // spinning sender would hardly run. futex(2) is async-signal-safe.
  sys::futex_wake(reinterpret_cast<const uint32_t*>(&g_work_count), 1,
                  sys::FutexScope::process_private);
}

void traffic_handler(int, siginfo_t*, void*) {
  if (t_in_critical) {
    // The interrupted thread is inside the critical section: leave the work
    // to it (it checks t_work_pending when it leaves).
    t_work_pending = 1;
    g_deferred.fetch_add(1, std::memory_order_relaxed);
    return;
  }
  do_work();
}

struct Worker {
  Histogram per_op;
  uint64_t ops = 0;
};

void worker_loop(Guard guard, const std::atomic<bool>& stop, Worker& out) {
  const auto& clock = IntervalClock::get();
  sigset_t set;
  sigemptyset(&set);
  sigaddset(&set, kTrafficSignal);
  pthread_sigmask(SIG_UNBLOCK, &set, nullptr);
  volatile uint64_t shared_work = 0;  // the critical section's work
  while (!stop.load(std::memory_order_relaxed)) {
    const uint64_t t0 = clock.read();
    for (int i = 0; i < kBatch; ++i) {
      if (guard == Guard::sigprocmask) {
        pthread_sigmask(SIG_BLOCK, &set, nullptr);
        shared_work = shared_work + 1;
        pthread_sigmask(SIG_UNBLOCK, &set, nullptr);
      } else {
        t_in_critical = 1;
        // A handler on this thread sees the flag set before the work starts:
        // only the compiler can reorder here, so a signal fence suffices.
        std::atomic_signal_fence(std::memory_order_seq_cst);
        shared_work = shared_work + 1;
        std::atomic_signal_fence(std::memory_order_seq_cst);
        t_in_critical = 0;
        std::atomic_signal_fence(std::memory_order_seq_cst);
        if (t_work_pending) {
          t_work_pending = 0;
          do_work();
        }
      }
    }
    const uint64_t t1 = clock.read();
    out.per_op.record(clock.to_ns(t1 - t0) / kBatch);
    out.ops += kBatch;
  }
  pthread_sigmask(SIG_BLOCK, &set, nullptr);
}

void run_siglock(Context& ctx, Guard guard, int threads, bool traffic) {
  // The caller blocks the traffic signal so that kill() must pick a worker.
  ScopedMask block(SIG_BLOCK, {kTrafficSignal});
  ScopedDisposition handler(kTrafficSignal, &traffic_handler, SA_RESTART);
  std::atomic<bool> stop{false};
  std::vector<Worker> workers(static_cast<std::size_t>(threads));
  std::vector<PeerThread> pool;
  const uint64_t deferred_before = g_deferred.load();
  const uint64_t start = monotonic_ns();
  for (int i = 0; i < threads; ++i)
    pool.emplace_back([&, i] { worker_loop(guard, stop, workers[static_cast<std::size_t>(i)]); },
                      [&] { stop.store(true, std::memory_order_relaxed); });
  const Deadline deadline(ctx.wait_deadline_ns());

  uint64_t sent = 0, delivered = 0, lost = 0;
  Histogram& delivery = ctx.metric("delivery");
  // The time budget governs; with traffic, the sample target bounds the
  // number of signals sent.
  while (ctx.time_left() && (!traffic || sent < ctx.samples())) {
    if (!traffic) {
      const timespec ms{0, 1000000};
      nanosleep(&ms, nullptr);
      continue;
    }
    const uint32_t before = g_work_count.load(std::memory_order_acquire);
    const uint64_t t0 = monotonic_ns();
    if (kill(getpid(), kTrafficSignal) != 0) sys::fatal("kill", errno);
    ++sent;
    const timespec give_up = to_timespec(t0 + 100000000u);  // 100 ms
    uint32_t count = before;
    while ((count = g_work_count.load(std::memory_order_acquire)) == before) {
      const int rc = sys::futex_wait(reinterpret_cast<const uint32_t*>(&g_work_count), before,
                                     &give_up, sys::FutexScope::process_private);
      if (rc == -ETIMEDOUT) break;
    }
    if (count == before) {
      ++lost;  // not handled within 100 ms: counted, never silent
      continue;
    }
    delivered += static_cast<uint32_t>(count - before);
    const uint64_t t1 = g_work_ns.load(std::memory_order_relaxed);
    delivery.record(t1 > t0 ? static_cast<double>(t1 - t0) : 0.0);
  }
  stop.store(true, std::memory_order_relaxed);
  ctx.phase("waiting for the worker threads to end");
  for (auto& t : pool) t.join(deadline, "the worker threads to end");
  const double wall_s = static_cast<double>(monotonic_ns() - start) / 1e9;
  // A signal still pending (sent after the workers blocked it) goes away here,
  // before the disposition is restored.
  const long leftover = drain_pending(kTrafficSignal);

  uint64_t ops = 0;
  Histogram& h = ctx.metric();
  for (auto& w : workers) {
    h.merge(w.per_op);
    ops += w.ops;
  }
  ctx.counter("threads", threads);
  ctx.counter("ops_per_s", static_cast<double>(ops) / wall_s);
  ctx.counter("ops_per_s_per_thread", static_cast<double>(ops) / wall_s / threads);
  ctx.counter("sent", static_cast<double>(sent));
  ctx.counter("delivered", static_cast<double>(delivered));
  ctx.counter("lost", static_cast<double>(lost));
  ctx.counter("drained_at_end", static_cast<double>(leftover));
  ctx.counter("deferred", static_cast<double>(g_deferred.load() - deferred_before));
  if (traffic) ctx.counter("traffic_per_s", static_cast<double>(sent) / wall_s);
}

Scenario make(Guard guard, int threads, bool traffic, bool in_default) {
  const std::string g = guard == Guard::sigprocmask ? "sigprocmask" : "atomic_flag";
  const std::string t = traffic ? "on" : "off";
  Scenario sc;
  sc.name = "siglock/" + g + ":threads=" + std::to_string(threads) + ",traffic=" + t;
  sc.group = "siglock";
  sc.title =
      (guard == Guard::sigprocmask ? "sigprocmask block/unblock" : "atomic in-section flag") +
      std::string(", ") + std::to_string(threads) + " threads, signal traffic " + t;
  sc.description =
      "latency: one guarded critical section per thread (" +
      std::string(guard == Guard::sigprocmask
                      ? "pthread_sigmask block SIGUSR2, increment, unblock"
                      : "flag store, signal fence, increment, flag clear, pending-work check") +
      "), the mean of a batch of 64 timed with the interval clock on the worker thread; " +
      std::to_string(threads) +
      " worker threads loop for the whole budget. delivery (traffic=on): from before "
      "kill(getpid(), "
      "SIGUSR2) on the sending thread to the handler's work (CLOCK_MONOTONIC read in the handler, "
      "or when the worker leaves the section for a deferred one); one signal in flight at a time.";
  sc.params = {{"threads", std::to_string(threads)}, {"traffic", t}, {"method", g}};
  sc.clock = IntervalClock::get().kind();
  sc.budget_s = 0.03;
  sc.in_default_suite = in_default;
  sc.samples = 20000;
  sc.run = [guard, threads, traffic](Context& ctx) { run_siglock(ctx, guard, threads, traffic); };
  return sc;
}

std::vector<Scenario> all() {
  std::vector<Scenario> v;
  for (Guard g : {Guard::sigprocmask, Guard::atomic_flag})
    for (bool traffic : {false, true})
      for (int n : {1, 2, 4, 8, 12, 16}) {
        // The default suite keeps the ends of each curve and the full mask
        // curve without traffic; the full suite has every point (12 and 16
        // threads for machines with many cores: ./run scale-bench).
        const bool in_default =
            n <= 8 && ((g == Guard::sigprocmask && !traffic) || n == 1 || n == 8);
        v.push_back(make(g, n, traffic, in_default));
      }
  return v;
}

const Registrar kRegistrar{all()};

const RatioRegistrar kRatios{{
    {.name = "sigprocmask pair / atomic flag, 8 threads",
     .numerator = "siglock/sigprocmask:threads=8,traffic=off",
     .denominator = "siglock/atomic_flag:threads=8,traffic=off",
     .meaning = "what guarding a critical section with the signal mask costs over a per-thread "
                "flag; seed 000's advice: no mask changes on hot paths"},
    {.name = "sigprocmask pair, 8 threads / 1 thread",
     .numerator = "siglock/sigprocmask:threads=8,traffic=off",
     .denominator = "siglock/sigprocmask:threads=1,traffic=off",
     .meaning = "contention on the one siglock of the thread group (at most as many threads "
                "contend as there are CPUs)"},
    {.name = "sigprocmask pair with / without signal traffic, 8 threads",
     .numerator = "siglock/sigprocmask:threads=8,traffic=on",
     .denominator = "siglock/sigprocmask:threads=8,traffic=off",
     .meaning = "what concurrent kill() traffic to the process does to the mask calls"},
}};

}  // namespace
}  // namespace doorbell::lab
