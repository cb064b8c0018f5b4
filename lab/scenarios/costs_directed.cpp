// directed: a process-directed signal (kill) against a thread-directed one
// (tgkill, what pthread_kill does) to a process of N threads.
//
// kill() queues on the group's shared pending list and complete_signal()
// chooses a thread: the main thread if it does not block the signal, else a
// walk of the thread list from the last chosen thread. tgkill() queues on
// the named thread's private list and wakes that thread. Here the sending
// thread (the caller) blocks SIGUSR2 and N threads sleep in poll() with it
// unblocked, so every signal is handled by one of them.
#include <pthread.h>
#include <signal.h>
#include <time.h>
#include <unistd.h>

#include <atomic>
#include <set>
#include <string>

#include "lab/common/costs_probes.h"
#include "lab/common/signal_scope.h"
#include "lab/common/time.h"
#include "lab/harness/scenario.h"
#include "sys/error.h"
#include "sys/proc.h"
#include "sys/tgkill.h"

namespace doorbell::lab {
namespace {

namespace costs = doorbell::lab::costs;

constexpr int kSignal = SIGUSR2;

std::atomic<uint64_t> g_recv_ns{0};
std::atomic<pid_t> g_recv_tid{0};
std::atomic<uint64_t> g_recv_count{0};

void directed_handler(int, siginfo_t*, void*) {
  g_recv_ns.store(monotonic_ns(), std::memory_order_relaxed);
  g_recv_tid.store(sys::current_tid(), std::memory_order_relaxed);
  // Release: the sender reads the time and tid after seeing the count change.
  g_recv_count.fetch_add(1, std::memory_order_release);
}

void run_directed(Context& ctx, bool thread_directed, int threads) {
  ScopedMask block(SIG_BLOCK, {kSignal});
  ScopedDisposition handler(kSignal, &directed_handler, SA_RESTART);
  costs::SleepingThreads group(threads, kSignal);
  const pid_t pid = getpid();
  const pid_t target = group.tids().back();
  const auto& clock = IntervalClock::get();
  Histogram& latency = ctx.metric();
  Histogram& send = ctx.metric("send");
  std::set<pid_t> receivers;
  uint64_t sent = 0, delivered = 0, lost = 0, wrong_thread = 0;
  std::size_t n = 0;
  // Creating the threads may eat the repetition's budget on a loaded machine
  // or with many threads: take at least kMinSamples anyway, within 2 s.
  constexpr std::size_t kMinSamples = 10;
  const uint64_t hard_stop = monotonic_ns() + 2000000000u;
  while (ctx.keep_going(n) || (n < kMinSamples && monotonic_ns() < hard_stop)) {
    const uint64_t before = g_recv_count.load(std::memory_order_acquire);
    const uint64_t t0 = monotonic_ns();
    const uint64_t s0 = clock.read();
    // 0 or -errno, like sys::tgkill.
    const int rc = thread_directed ? sys::tgkill(pid, target, kSignal)
                                   : (kill(pid, kSignal) == 0 ? 0 : -errno);
    const uint64_t s1 = clock.read();
    if (rc != 0) sys::fatal(thread_directed ? "tgkill" : "kill", -rc);
    ++sent;
    send.record(clock.to_ns(s1 - s0));
    const uint64_t give_up = t0 + 100000000u;  // 100 ms
    uint64_t count = before;
    while ((count = g_recv_count.load(std::memory_order_acquire)) == before &&
           monotonic_ns() < give_up) {
      // Spin briefly, then give the CPU to the receiver (2 CPUs are common).
      for (int i = 0; i < 64; ++i) asm volatile("" ::: "memory");
      sched_yield();
    }
    if (count == before) {
      ++lost;
      ++n;  // a lost signal still counts against the sample target
      continue;
    }
    ++delivered;
    const uint64_t t1 = g_recv_ns.load(std::memory_order_relaxed);
    const pid_t who = g_recv_tid.load(std::memory_order_relaxed);
    receivers.insert(who);
    if (thread_directed && who != target) ++wrong_thread;
    latency.record(t1 > t0 ? static_cast<double>(t1 - t0) : 0.0);
    ++n;
  }
  group.stop();
  const long leftover = drain_pending(kSignal);
  ctx.counter("threads", threads);
  ctx.counter("sent", static_cast<double>(sent));
  ctx.counter("delivered", static_cast<double>(delivered));
  ctx.counter("lost", static_cast<double>(lost));
  ctx.counter("drained_at_end", static_cast<double>(leftover));
  ctx.counter("distinct_receivers", static_cast<double>(receivers.size()));
  ctx.counter("wrong_thread", static_cast<double>(wrong_thread));
}

Scenario make(bool thread_directed, int threads, bool in_default) {
  const std::string m = thread_directed ? "tgkill" : "kill";
  Scenario sc;
  sc.name = "directed/" + m + ":threads=" + std::to_string(threads);
  sc.group = "directed";
  sc.title = std::string(thread_directed ? "thread-directed tgkill" : "process-directed kill") +
             " to " + std::to_string(threads) + " sleeping threads";
  sc.description =
      "latency: from before " +
      std::string(thread_directed ? "tgkill(getpid(), last thread, SIGUSR2)"
                                  : "kill(getpid(), SIGUSR2)") +
      " on the sending thread (which blocks SIGUSR2) to CLOCK_MONOTONIC read in the handler, "
      "on whichever of the " +
      std::to_string(threads) +
      " threads sleeping in poll() the kernel woke; one signal in flight. send: the send call "
      "alone, interval clock on the sender.";
  sc.params = {{"threads", std::to_string(threads)}, {"method", m}};
  sc.clock = ClockKind::monotonic;
  sc.budget_s = 0.05;
  sc.samples = 5000;
  sc.in_default_suite = in_default;
  sc.run = [thread_directed, threads](Context& ctx) {
    run_directed(ctx, thread_directed, threads);
  };
  return sc;
}

std::vector<Scenario> all() {
  std::vector<Scenario> v;
  for (bool td : {false, true})
    for (int n : {1, 4, 16, 64}) v.push_back(make(td, n, n == 1 || n == 64));
  for (bool td : {false, true}) v.push_back(make(td, 256, false));
  return v;
}

const Registrar kRegistrar{all()};

const RatioRegistrar kRatios{{
    {.name = "process-directed / thread-directed at 64 threads",
     .numerator = "directed/kill:threads=64",
     .denominator = "directed/tgkill:threads=64",
     .meaning = "delivery latency of kill() over tgkill() to a 64-thread process; seed 000 "
                "says thread-directed is lighter (no thread choice); near 1 means the choice "
                "costs little here while threads sleep"},
    {.name = "process-directed delivery, 64 threads / 1 thread",
     .numerator = "directed/kill:threads=64",
     .denominator = "directed/kill:threads=1",
     .meaning = "does the thread choice grow with the thread count (seed 000: O(threads))"},
}};

}  // namespace
}  // namespace doorbell::lab
