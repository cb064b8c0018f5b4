// The cost ladder (seeds 000 and 001): what one operation costs on the same
// thread, from an atomic store up to a handled self-signal.
//
// Cheap operations (under ~100 ns) are timed in batches with the interval
// clock and each sample is the batch time divided by the batch size, so the
// clock read does not swamp them. Expensive ones are timed one by one; their
// samples include one clock read (its cost is in the environment block).
// A self-signal sample ends only once the handler has run: the sender checks
// the handler's counter and waits for it if the kernel has not delivered yet.
#include <pthread.h>
#include <signal.h>
#include <sys/eventfd.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <csignal>
#include <stdexcept>

#include "lab/common/signal_scope.h"
#include "lab/harness/scenario.h"
#include "sys/error.h"
#include "sys/fd.h"
#include "sys/futex.h"
#include "sys/proc.h"
#include "sys/tgkill.h"

namespace doorbell::lab {
namespace {

constexpr std::size_t kBatch = 256;

// Times `op` in batches of kBatch; records batch time / kBatch per sample.
template <typename Op>
void run_batched(Context& ctx, Op&& op) {
  const IntervalClock& clock = IntervalClock::get();
  Histogram& h = ctx.metric();
  std::size_t n = 0;
  while (ctx.keep_going(n)) {
    const uint64_t t0 = clock.read();
    for (std::size_t i = 0; i < kBatch; ++i) op(i);
    const uint64_t t1 = clock.read();
    h.record(clock.to_ns(t1 - t0) / kBatch);
    ++n;
  }
}

// Times `op` one call at a time.
template <typename Op>
void run_single(Context& ctx, Op&& op) {
  const IntervalClock& clock = IntervalClock::get();
  Histogram& h = ctx.metric();
  std::size_t n = 0;
  while (ctx.keep_going(n)) {
    const uint64_t t0 = clock.read();
    op();
    const uint64_t t1 = clock.read();
    h.record(clock.to_ns(t1 - t0));
    ++n;
  }
}

// --- self-signals -----------------------------------------------------------

volatile sig_atomic_t g_handled = 0;

void count_handler(int) {
  g_handled = g_handled + 1;
}

// Waits until the handler has counted past `before`; gives up after 2 s with
// an error, so a signal that never arrives fails the scenario, not the run.
void wait_for_handler(sig_atomic_t before) {
  const uint64_t give_up = monotonic_ns() + 2000000000u;
  while (g_handled == before) {
#if defined(__SANITIZE_THREAD__)
    // TSan defers handlers to its interceptors; a pure spin would never
    // let it run one.
    ::usleep(0);
#endif
    if (monotonic_ns() > give_up) throw std::runtime_error("the handler did not run within 2 s");
  }
}

template <typename Send>
void run_self_signal(Context& ctx, int signo, Send&& send) {
  // count_handler for signo, unblocked for the repetition; the previous
  // mask, then the previous disposition, come back on every path.
  ScopedDisposition handler(signo, count_handler, 0);
  ScopedMask unblock(SIG_UNBLOCK, {signo});
  const sig_atomic_t handled_before = g_handled;
  const IntervalClock& clock = IntervalClock::get();
  Histogram& h = ctx.metric();
  std::size_t n = 0;
  uint64_t sent = 0, late = 0, failed = 0;
  while (ctx.keep_going(n)) {
    const sig_atomic_t before = g_handled;
    const uint64_t t0 = clock.read();
    if (send() != 0) {
      ++failed;
      ++n;
      continue;
    }
    if (g_handled == before) {
      // Not yet handled on return from the send (another thread took it, or
      // the kernel deferred it): wait for the handler, and count the case.
      ++late;
      wait_for_handler(before);
    }
    const uint64_t t1 = clock.read();
    h.record(clock.to_ns(t1 - t0));
    ++sent;
    ++n;
  }
  // Counted apart: the sender counts its successful sends, the handler its
  // runs. A handler run nobody here asked for shows as handled > sent; a send
  // whose handler never ran fails the scenario in wait_for_handler.
  const sig_atomic_t handled = g_handled - handled_before;
  ctx.counter("sent", static_cast<double>(sent));
  ctx.counter("handled", static_cast<double>(handled));
  ctx.counter("handled_after_return", static_cast<double>(late));
  if (failed) ctx.counter("send_failed", static_cast<double>(failed));
}

Scenario ladder(std::string name, std::string title, std::string description,
                std::function<void(Context&)> run) {
  Scenario s;
  s.name = "ladder/" + name;
  s.group = "ladder";
  s.title = std::move(title);
  s.description = std::move(description);
  s.clock = IntervalClock::get().kind();
  s.budget_s = 0.12;
  s.samples = 20000;
  s.run = std::move(run);
  return s;
}

std::vector<Scenario> ladder_scenarios() {
  return {
      ladder("atomic_store_load_acq_rel", "atomic store+load (release/acquire)",
             "one std::atomic<uint64_t> store(release) + load(acquire) on the same thread; "
             "batches of 256 timed together, sample = batch time / 256",
             [](Context& ctx) {
               std::atomic<uint64_t> flag{0};
               uint64_t sink = 0;
               run_batched(ctx, [&](std::size_t i) {
                 flag.store(i, std::memory_order_release);
                 sink += flag.load(std::memory_order_acquire);
               });
               if (sink == 1) ctx.note("checksum");
             }),
      ladder("atomic_store_load_seq_cst", "atomic store+load (seq_cst)",
             "one std::atomic<uint64_t> store + load, both seq_cst (the store is an xchg on "
             "x86); batches of 256, sample = batch time / 256",
             [](Context& ctx) {
               std::atomic<uint64_t> flag{0};
               uint64_t sink = 0;
               run_batched(ctx, [&](std::size_t i) {
                 flag.store(i);
                 sink += flag.load();
               });
               if (sink == 1) ctx.note("checksum");
             }),
      ladder("clock_gettime_monotonic", "clock_gettime(CLOCK_MONOTONIC) (vDSO)",
             "one clock_gettime(CLOCK_MONOTONIC); batches of 256, sample = batch time / 256",
             [](Context& ctx) {
               timespec ts;
               run_batched(ctx, [&](std::size_t) { clock_gettime(CLOCK_MONOTONIC, &ts); });
             }),
      ladder("syscall_getpid", "getpid via syscall(2) (one kernel entry)",
             "one syscall(SYS_getpid), never cached by the C library; timed one by one "
             "(includes one interval-clock read)",
             [](Context& ctx) { run_single(ctx, [] { ::syscall(SYS_getpid); }); }),
      ladder("sigprocmask_block_restore", "sigprocmask block + restore",
             "pthread_sigmask(SIG_BLOCK, {SIGUSR2}) then pthread_sigmask(SIG_SETMASK, old): "
             "two syscalls that take the siglock; timed one pair at a time",
             [](Context& ctx) {
               sigset_t block, old;
               sigemptyset(&block);
               sigaddset(&block, SIGUSR2);
               run_single(ctx, [&] {
                 pthread_sigmask(SIG_BLOCK, &block, &old);
                 pthread_sigmask(SIG_SETMASK, &old, nullptr);
               });
             }),
      ladder("futex_wake_no_waiter", "futex wake, no waiter",
             "one FUTEX_WAKE (private) on a word nobody waits on; timed one by one",
             [](Context& ctx) {
               uint32_t word = 0;
               run_single(ctx,
                          [&] { sys::futex_wake(&word, 1, sys::FutexScope::process_private); });
             }),
      ladder("eventfd_write_read", "eventfd write + read",
             "write(efd, 1) then read(efd) on the same thread (never blocks); timed one pair at "
             "a time",
             [](Context& ctx) {
               sys::UniqueFd fd(::eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK));
               if (!fd) sys::throw_errno("eventfd");
               run_single(ctx, [&] {
                 uint64_t v = 1;
                 if (::write(fd.get(), &v, sizeof v) != sizeof v)
                   sys::fatal("eventfd write", errno);
                 if (::read(fd.get(), &v, sizeof v) != sizeof v) sys::fatal("eventfd read", errno);
               });
             }),
      ladder("signal_kill_handler", "self-signal: kill(getpid()) + handler",
             "kill(getpid(), SIGUSR1) with an empty counting handler; ends when the handler has "
             "run (checked on return; waited for otherwise, counted as handled_after_return)",
             [](Context& ctx) {
               const pid_t pid = ::getpid();
               run_self_signal(ctx, SIGUSR1, [pid] { return ::kill(pid, SIGUSR1); });
             }),
      ladder("signal_raise_handler", "self-signal: raise() + handler",
             "raise(SIGUSR1) (glibc: tgkill to the calling thread) with an empty counting "
             "handler; ends when the handler has run",
             [](Context& ctx) { run_self_signal(ctx, SIGUSR1, [] { return ::raise(SIGUSR1); }); }),
      ladder("signal_tgkill_handler", "self-signal: tgkill() + handler",
             "tgkill(getpid(), gettid(), SIGUSR1) through syscall(2), empty counting handler; "
             "ends when the handler has run",
             [](Context& ctx) {
               const pid_t pid = ::getpid();
               const pid_t tid = sys::current_tid();
               run_self_signal(ctx, SIGUSR1, [pid, tid] { return sys::tgkill(pid, tid, SIGUSR1); });
             }),
      ladder("signal_pthread_kill_handler", "self-signal: pthread_kill() + handler",
             "pthread_kill(pthread_self(), SIGUSR1), empty counting handler; ends when the "
             "handler has run",
             [](Context& ctx) {
               const pthread_t self = pthread_self();
               run_self_signal(ctx, SIGUSR1, [self] { return pthread_kill(self, SIGUSR1); });
             }),
      ladder("signal_sigqueue_rt_handler", "self-signal: sigqueue(SIGRTMIN) + handler",
             "sigqueue(getpid(), SIGRTMIN, value): a real-time signal, so the kernel allocates "
             "a sigqueue entry per send; empty counting handler; ends when the handler has run",
             [](Context& ctx) {
               const pid_t pid = ::getpid();
               run_self_signal(ctx, SIGRTMIN, [pid] {
                 union sigval value;
                 value.sival_int = 42;
                 return ::sigqueue(pid, SIGRTMIN, value);
               });
             }),
  };
}

const Registrar kLadder{ladder_scenarios()};

const RatioRegistrar kLadderRatios{{
    {.name = "self-signal / atomic store+load",
     .numerator = "ladder/signal_kill_handler",
     .denominator = "ladder/atomic_store_load_seq_cst",
     .reference = 1646.0,
     .reference_source = "seed 001: 489 ns / 0.3 ns, gcc:13 container on ARM64",
     .meaning = "how many atomic flag updates one handled signal costs"},
    {.name = "self-signal / syscall",
     .numerator = "ladder/signal_kill_handler",
     .denominator = "ladder/syscall_getpid",
     .reference = 4.9,
     .reference_source = "seed 001: 489 ns / 100 ns, gcc:13 container on ARM64",
     .meaning = "a delivery is several kernel crossings where getpid is one"},
    {.name = "syscall / atomic store+load",
     .numerator = "ladder/syscall_getpid",
     .denominator = "ladder/atomic_store_load_seq_cst",
     .reference = 100.0 / 0.3,
     .reference_source = "seed 001: 100 ns / 0.3 ns, gcc:13 container on ARM64",
     .meaning = "one kernel entry against a cache-hot atomic"},
    {.name = "sigqueue (RT) / kill (standard)",
     .numerator = "ladder/signal_sigqueue_rt_handler",
     .denominator = "ladder/signal_kill_handler",
     .meaning = "what the per-signal sigqueue allocation of a real-time signal adds"},
    {.name = "eventfd write+read / futex wake",
     .numerator = "ladder/eventfd_write_read",
     .denominator = "ladder/futex_wake_no_waiter",
     .meaning = "two syscalls on a file against one bare syscall"},
}};

const ReferenceRegistrar kLadderReferences{{
    {.scenario = "ladder/signal_kill_handler",
     .what = "kill self-signal + handler",
     .value_ns = 489.0,
     .statistic = "mean",
     .source = "seed 001, gcc:13 container on ARM64"},
    {.scenario = "ladder/atomic_store_load_seq_cst",
     .what = "atomic flag store + load",
     .value_ns = 0.3,
     .statistic = "mean",
     .source = "seed 001, gcc:13 container on ARM64"},
    {.scenario = "ladder/syscall_getpid",
     .what = "getpid syscall",
     .value_ns = 100.0,
     .statistic = "mean",
     .source = "seed 001, gcc:13 container on ARM64"},
}};

}  // namespace
}  // namespace doorbell::lab
