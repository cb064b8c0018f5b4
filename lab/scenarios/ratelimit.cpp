// Rate limiters side by side (seed 004): no limiter, std::mutex, the kernel's
// trylock shape (___ratelimit up to 6.15), the seed's atomic + refreshing-
// flag design, doorbell::RateLimiter (`ours`: the adaptive lease), the
// one-shared-word design it replaced (`oneword`) and ShardedRateLimiter;
// threads 1, 2, 4, 8, 16; per-call work 0, ~30, ~300 ns and ~3 us (a packet
// path: the regime of seed 004's 32-CPU figure); a limit never reached and a
// limit that denies almost every call.
//
// Every thread loops: W dependent multiply-add steps (the "packet work"), one
// CLOCK_MONOTONIC_COARSE read, one limiter call, and the attribution
// checker's tally of the decision (a local array increment). The baseline
// `none` does exactly the same with a limiter that always says yes, so
// none / design is the limiter-on / limiter-off throughput ratio, the seed's
// 20% -> 95% figure. The checker's findings are counters of each row:
// windows over burst, double refreshes, and false suppressions (denials
// charged to a window that admitted fewer than burst).
#include <time.h>

#include <atomic>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "lab/common/deadline.h"
#include "lab/common/time.h"
#include "lab/harness/scenario.h"
#include "lab/scenarios/ratelimit_designs.h"

namespace doorbell::lab {
namespace {

using namespace doorbell::ratelimit_lab;

enum class Design { none, mutex, trylock, seed, ours, oneword, sharded };
enum class Regime { never, limited };

constexpr uint64_t kIntervalNs = 4000000;   // 4 ms: one kernel tick at HZ=250
constexpr uint32_t kLimitedBurst = 100;     // per 4 ms: almost every call denied
constexpr uint32_t kNeverBurst = 1u << 30;  // never reached
constexpr uint32_t kLease = 64;             // sharded: tokens per lease
constexpr int kBatch = 256;                 // calls between progress stores
constexpr uint64_t kSliceNs = 2000000;      // one sample = one 2 ms slice (1 ms --quick)

const char* design_name(Design d) {
  switch (d) {
    case Design::none:
      return "none";
    case Design::mutex:
      return "mutex";
    case Design::trylock:
      return "trylock";
    case Design::seed:
      return "seed";
    case Design::ours:
      return "ours";
    case Design::oneword:
      return "oneword";
    case Design::sharded:
      return "sharded";
  }
  return "?";
}

const char* design_title(Design d) {
  switch (d) {
    case Design::none:
      return "no limiter (baseline)";
    case Design::mutex:
      return "std::mutex around ratelimit_state";
    case Design::trylock:
      return "kernel trylock (<= 6.15)";
    case Design::seed:
      return "seed 004: atomics + refreshing flag";
    case Design::ours:
      return "doorbell::RateLimiter (adaptive lease)";
    case Design::oneword:
      return "one shared word (RateLimiter before issue 31)";
    case Design::sharded:
      return "doorbell::ShardedRateLimiter";
  }
  return "?";
}

// Per-call work regimes, nominal ns: none, a log call, a heavier call, a
// packet path (seed 004's forwarding path: a few microseconds a packet).
constexpr int kWorkNs[] = {0, 30, 300, 3000};

int work_iterations(int work_ns) {
  return work_ns * 5 / 6;  // ~1.2 ns per dependent multiply-add: 30 ns = 25
}

uint64_t thread_cpu_ns() {
  timespec ts;
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
  return static_cast<uint64_t>(ts.tv_sec) * 1000000000u + static_cast<uint64_t>(ts.tv_nsec);
}

uint64_t coarse_ns() {
  timespec ts;
  clock_gettime(CLOCK_MONOTONIC_COARSE, &ts);
  return static_cast<uint64_t>(ts.tv_sec) * 1000000000u + static_cast<uint64_t>(ts.tv_nsec);
}

// The "packet work": `iterations` dependent multiply-adds. Out of line, so
// that every design and the baseline run this very code. Inlined, its chain
// was compiled per design: where the inlined limiter left too few registers,
// the compiler kept x in memory, one store and load per step (the sharded
// row then read 0.75-0.90 on/off at T = 1, its limiter costing nothing of
// that).
[[gnu::noinline]] uint64_t work(uint64_t x, int iterations) {
  for (int k = 0; k < iterations; ++k) x = x * 6364136223846793005ull + 1442695040888963407ull;
  asm volatile("" : "+r"(x));
  return x;
}

// One worker's loop body: kBatch calls of the work, a coarse clock read and
// design.call(), each decision tallied.
template <typename D>
inline uint64_t run_batch(D& design, Tally& tally, uint64_t x, int iterations) {
  for (int i = 0; i < kBatch; ++i) {
    x = work(x, iterations);
    tally.add(design.call(coarse_ns()));
  }
  return x;
}

// The two loops a design row alternates between: the design's, and the same
// loop with no limiter (the baseline of its on/off ratio).
enum Phase : int { kDesign = 0, kBaseline = 1 };

struct alignas(64) Worker {
  std::atomic<uint64_t> calls[2] = {0, 0};  // completed, by phase
  uint64_t cpu_ns[2] = {0, 0};              // thread CPU time, by phase
  uint64_t sink = 0;
};

// Runs `threads` workers and samples aggregate ns per call every slice.
// Slices alternate between the design's loop and the no-limiter loop, so the
// row's on/off ratio compares the two on the same threads, 2 ms apart: a
// development VM's speed drifted by up to 1.7x between rows run seconds
// apart (load on its host), which drowned a 5% goal when on/off divided two
// rows. Metric "latency": the design's slices; "baseline": the no-limiter
// slices in between. A worker switches loops between batches of kBatch calls
// (~10 us), so a slice's first microseconds finish the other loop's batch:
// the same for both loops, under 1% of a slice.
template <typename D>
void measure(Context& ctx, D& design, int threads, int iterations, uint32_t burst,
             const WindowLog* starts) {
  std::atomic<bool> stop{false};
  std::atomic<int> phase{kDesign};
  std::atomic<int> ready{0};
  std::vector<Tally> tallies(threads);
  std::unique_ptr<Worker[]> state(new Worker[threads]);
  std::vector<PeerThread> workers;
  workers.reserve(threads);
  auto tell_stop = [&] { stop.store(true); };
  for (int id = 0; id < threads; ++id) {
    workers.emplace_back(
        [&, id] {
          Worker& me = state[id];
          Tally& tally = tallies[id];
          Tally baseline_tally;  // the no-limiter loop's decisions: all "yes", not checked
          NoLimiter none;
          uint64_t x = 0x9e3779b97f4a7c15ull + static_cast<uint64_t>(id);
          uint64_t calls[2] = {0, 0};
          ready.fetch_add(1);
          int current = phase.load(std::memory_order_relaxed);
          uint64_t cpu_mark = thread_cpu_ns();
          while (!stop.load(std::memory_order_relaxed)) {
            if (current == kBaseline) {
              x = run_batch(none, baseline_tally, x, iterations);
            } else {
              x = run_batch(design, tally, x, iterations);
            }
            calls[current] += kBatch;
            me.calls[current].store(calls[current], std::memory_order_relaxed);
            // The thread's CPU clock is read only when the loop changes (once a
            // slice), not per batch.
            if (const int next = phase.load(std::memory_order_relaxed); next != current) {
              const uint64_t now = thread_cpu_ns();
              me.cpu_ns[current] += now - cpu_mark;
              cpu_mark = now;
              current = next;
            }
          }
          me.cpu_ns[current] += thread_cpu_ns() - cpu_mark;
          me.sink = x;
        },
        tell_stop);
  }
  const Deadline deadline(ctx.wait_deadline_ns());
  ctx.phase("waiting for the worker threads to start");
  wait_until(deadline, "the worker threads to start", [&] { return ready.load() >= threads; });
  ctx.phase("slices of the design's loop and the baseline's");
  auto total_calls = [&](int which) {
    uint64_t sum = 0;
    for (int i = 0; i < threads; ++i) sum += state[i].calls[which].load(std::memory_order_relaxed);
    return sum;
  };
  const uint64_t slice_ns = ctx.quick() ? kSliceNs / 2 : kSliceNs;
  sleep_ns(slice_ns / 4);  // let every worker get going
  Histogram* slices[2] = {&ctx.metric(), &ctx.metric("baseline")};
  const uint64_t start_ns = monotonic_ns();
  uint64_t t0 = start_ns;
  int current = kDesign;
  uint64_t c0 = total_calls(current);
  std::size_t n = 0;  // design slices with calls
  uint64_t design_slice_ns = 0, design_slice_calls = 0;
  // Slices alternate design, baseline, design, ...; the run ends after a
  // baseline slice, so both loops count the same number of slices.
  // keep_going() reads the clock only every 64 samples; a slice is 2 ms, so
  // the budget is checked on every slice too. At least one design sample,
  // even when the workers starve the measuring thread (16 threads on 2
  // cores): up to 1 s over the budget, then none.
  const uint64_t give_up_ns = start_ns + 1000000000;
  for (;;) {
    sleep_ns(slice_ns);
    const uint64_t t1 = monotonic_ns(), c1 = total_calls(current);
    if (c1 > c0) {
      slices[current]->record(static_cast<double>(t1 - t0) / static_cast<double>(c1 - c0));
      if (current == kDesign) {
        ++n;
        design_slice_ns += t1 - t0;
        design_slice_calls += c1 - c0;
      }
    }
    if (n == 0 && t1 >= give_up_ns) break;
    if (current == kBaseline && n > 0 && !(ctx.keep_going(n) && ctx.time_left())) break;
    current = current == kDesign ? kBaseline : kDesign;
    phase.store(current, std::memory_order_relaxed);
    t0 = monotonic_ns();
    c0 = total_calls(current);
  }
  stop.store(true);
  ctx.phase("waiting for the worker threads to end");
  for (auto& w : workers) w.join(deadline, "the worker threads to end");
  const CheckResult r = check(tallies, burst, kIntervalNs, starts);
  uint64_t design_calls = 0, design_cpu = 0, baseline_calls = 0, baseline_cpu = 0;
  for (int i = 0; i < threads; ++i) {
    design_calls += state[i].calls[kDesign].load(std::memory_order_relaxed);
    design_cpu += state[i].cpu_ns[kDesign];
    baseline_calls += state[i].calls[kBaseline].load(std::memory_order_relaxed);
    baseline_cpu += state[i].cpu_ns[kBaseline];
  }
  // Throughput: the design's calls in its slices.
  ctx.counter("calls_per_s", design_slice_ns == 0 ? 0.0
                                                  : static_cast<double>(design_slice_calls) * 1e9 /
                                                        static_cast<double>(design_slice_ns));
  // CPU time per call of the workers (thread CPU clock, by loop): unlike the
  // wall-clock p50, it does not count time the workers spent off the CPU, so
  // it still compares designs when the machine is loaded (at T = 1; with more
  // threads than free cores, threads seldom run at once and contention is
  // under-counted).
  auto per_call = [](uint64_t cpu, uint64_t calls) {
    return calls == 0 ? 0.0 : static_cast<double>(cpu) / static_cast<double>(calls);
  };
  ctx.counter("cpu_ns_per_call", per_call(design_cpu, design_calls));
  ctx.counter("baseline_cpu_ns_per_call", per_call(baseline_cpu, baseline_calls));
  ctx.counter("admitted_pct",
              r.admitted + r.denied == 0 ? 0.0 : 100.0 * r.admitted / (r.admitted + r.denied));
  ctx.counter("denied", static_cast<double>(r.denied));
  ctx.counter("windows", static_cast<double>(r.windows));
  ctx.counter("max_admitted_per_window", static_cast<double>(r.max_admitted));
  ctx.counter("violations", static_cast<double>(r.violations()));
  ctx.counter("over_burst_windows", static_cast<double>(r.over_burst));
  ctx.counter("double_refreshes", static_cast<double>(r.early_refreshes));
  ctx.counter("false_suppressions", static_cast<double>(r.denied_below_burst));
  ctx.counter("underfilled_windows", static_cast<double>(r.underfilled_windows));
  uint64_t sink = 0;
  for (int i = 0; i < threads; ++i) sink ^= state[i].sink;
  asm volatile("" : : "r"(sink));
}

void run_scenario(Context& ctx, Design design, int threads, int work_ns, Regime regime) {
  const int iterations = work_iterations(work_ns);
  const uint32_t burst = regime == Regime::never ? kNeverBurst : kLimitedBurst;
  WindowLog log(1 << 16);
  switch (design) {
    case Design::none: {
      NoLimiter d;
      measure(ctx, d, threads, iterations, kNeverBurst, nullptr);
      break;
    }
    case Design::mutex: {
      MutexLimiter d(kIntervalNs, burst, &log);
      measure(ctx, d, threads, iterations, burst, &log);
      break;
    }
    case Design::trylock: {
      TrylockLimiter<> d(kIntervalNs, burst, &log);
      measure(ctx, d, threads, iterations, burst, &log);
      break;
    }
    case Design::seed: {
      SeedLimiter<> d(kIntervalNs, burst, &log);
      measure(ctx, d, threads, iterations, burst, &log);
      break;
    }
    case Design::ours: {
      OurLimiter<NoRateLimitHooks, detail::kAdaptiveLease> d(kIntervalNs, burst, 0, coarse_ns());
      measure(ctx, d, threads, iterations, burst, nullptr);
      break;
    }
    case Design::oneword: {
      OurLimiter<NoRateLimitHooks, detail::kOneWord> d(kIntervalNs, burst, 0, coarse_ns());
      measure(ctx, d, threads, iterations, burst, nullptr);
      break;
    }
    case Design::sharded: {
      OurLimiter<NoRateLimitHooks, detail::kFixedLease> d(kIntervalNs, burst, kLease, coarse_ns());
      measure(ctx, d, threads, iterations, burst, nullptr);
      break;
    }
  }
  if (design == Design::sharded && regime == Regime::limited) {
    ctx.note(
        "sharded: false_suppressions here are the documented lease slack (tokens stranded "
        "in other threads' cells, at most 2 x 16 x (lease-1) per window)");
  }
  if (design == Design::ours && regime == Regime::limited) {
    ctx.note(
        "ours: burst 100 < 2048, so every lease is one token: no false_suppressions expected "
        "(the adaptive lease's slack is at most cells x min(burst/1024, 4095))");
  }
}

std::string scenario_name(Design d, int threads, int work_ns, Regime regime) {
  std::string name = std::string("ratelimit/") + design_name(d) +
                     ":threads=" + std::to_string(threads) + ",work_ns=" + std::to_string(work_ns);
  if (d != Design::none) name += regime == Regime::never ? ",regime=never" : ",regime=limited";
  return name;
}

std::vector<Scenario> make_scenarios() {
  std::vector<Scenario> out;
  for (int work_ns : kWorkNs) {
    for (int threads : {1, 2, 4, 8, 16}) {
      for (Design d : {Design::none, Design::mutex, Design::trylock, Design::seed, Design::ours,
                       Design::oneword, Design::sharded}) {
        for (Regime regime : {Regime::never, Regime::limited}) {
          if (d == Design::none && regime == Regime::limited) continue;
          Scenario s;
          s.name = scenario_name(d, threads, work_ns, regime);
          s.group = "ratelimit";
          s.title = std::string(design_title(d)) + ", " + std::to_string(threads) +
                    (threads == 1 ? " thread" : " threads") + ", ~" + std::to_string(work_ns) +
                    " ns work" +
                    (d == Design::none
                         ? ""
                         : (regime == Regime::never ? ", never limits" : ", denies almost all"));
          s.description =
              "one sample = the wall time of a ~2 ms slice (1 ms with --quick) divided by the "
              "limiter calls all "
              "threads completed in it (aggregate ns per call, the inverse of throughput); one "
              "call = " +
              std::to_string(work_iterations(work_ns)) + " dependent 64-bit multiply-adds (~" +
              std::to_string(work_ns) +
              " ns nominal), one CLOCK_MONOTONIC_COARSE read, the limiter, and the attribution "
              "checker's tally; interval 4 ms, burst " +
              (d == Design::none ? std::string("-")
                                 : (regime == Regime::never ? std::string("2^30 (never reached)")
                                                            : std::string("100"))) +
              "; slices timed with CLOCK_MONOTONIC; the slices alternate with slices of the "
              "same loop without a limiter (metric 'baseline'), the numerator of the row's "
              "on/off ratio";
          s.params = {{"threads", std::to_string(threads)},
                      {"work_ns", std::to_string(work_ns)},
                      {"method", design_name(d)}};
          if (d != Design::none)
            s.params.push_back({"regime", regime == Regime::never ? "never" : "limited"});
          s.clock = ClockKind::monotonic;
          s.primary_metric = "latency";
          // 0.1 s: --quick's fifth (20 ms) still leaves room for starting
          // the threads on a loaded machine (10 ms often did not: rows with
          // no sample).
          s.budget_s = 0.1;
          s.samples = 100000;  // the time budget ends each repetition
          s.in_default_suite = work_ns == 30 && threads <= 2;
          s.run = [d, threads, work_ns, regime](Context& ctx) {
            run_scenario(ctx, d, threads, work_ns, regime);
          };
          out.push_back(std::move(s));
        }
      }
    }
  }
  return out;
}

const Registrar kRegistrar{make_scenarios()};

std::vector<Ratio> make_ratios() {
  std::vector<Ratio> out;
  const char* seed_source =
      "seed 004 (blog, 2026-04-10): kernel forwarding path on 32 CPUs, limiter configured but "
      "never limiting; throughput with the limiter / without";
  // T = 4 .. 16 are full-suite rows (./run scale-bench on a machine with
  // many cores; on 2 cores they measure oversubscription).
  // The 300 ns and ~3 us ratios (issue 31: the packet path, and the
  // crossover plot's data) come from full-suite rows.
  for (int work_ns : {30, 300, 3000}) {
    for (int threads : {1, 2, 4, 8, 16}) {
      for (Regime regime : {Regime::never, Regime::limited}) {
        for (Design d : {Design::mutex, Design::trylock, Design::seed, Design::ours,
                         Design::oneword, Design::sharded}) {
          Ratio r;
          r.name = std::string("ratelimit on/off: ") + design_name(d) +
                   ", T=" + std::to_string(threads) + ", " + std::to_string(work_ns) + " ns, " +
                   (regime == Regime::never ? "never limits" : "limiting");
          // Both from the design's row: its no-limiter slices over its own,
          // interleaved (see measure()).
          r.numerator = scenario_name(d, threads, work_ns, regime);
          r.numerator_metric = "baseline";
          r.denominator = r.numerator;
          r.statistic = "p50";
          r.meaning =
              "limiter-on / limiter-off throughput (1.0 = the limiter costs nothing), from slices "
              "of the two loops interleaved in one row";
          if (work_ns == 3000 && threads == 16 && regime == Regime::never && d == Design::seed) {
            r.reference = 0.95;
            r.reference_source = std::string(seed_source) +
                                 ", atomics + refreshing flag: 95% (a forwarding path: a few "
                                 "microseconds a packet; this row: ~3 us a call, 16 threads)";
          } else if (work_ns != 30) {
          } else if (threads == 2 && regime == Regime::never && d == Design::mutex) {
            r.reference = 0.20;
            r.reference_source = std::string(seed_source) + ", spin locks per packet: 20%";
          } else if (threads == 2 && regime == Regime::never && d == Design::seed) {
            r.reference = 0.95;
            r.reference_source = std::string(seed_source) + ", atomics + refreshing flag: 95%";
          }
          out.push_back(std::move(r));
        }
      }
    }
  }
  return out;
}

const RatioRegistrar kRatios{make_ratios()};

}  // namespace
}  // namespace doorbell::lab
