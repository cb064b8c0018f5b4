// Scenarios: the unit of measurement in the lab.
//
// A scenario is one row of the lab: a named measurement with the factors it
// varies (params), the clock it reads, and a run() that performs ONE
// repetition, recording into the Context. The runner calls run() once for
// warm-up (results discarded), then `repetitions` times, and reports each
// metric's merged distribution plus min/median/max across repetitions.
//
// Scenarios register themselves from a static object in their .cpp:
//
//   static const doorbell::lab::Registrar kRegistrar{{
//       .name = "ladder/syscall_getpid",
//       .group = "ladder",
//       .title = "getpid via syscall(2)",
//       .description = "one syscall(SYS_getpid); TSC read before and after a batch of 64",
//       .clock = ClockKind::tsc,
//       .run = [](Context& ctx) { ... ctx.metric().record(ns); ... },
//   }};
//
// Rules for run():
//  - Loop while ctx.keep_going(n): it stops at ctx.samples() samples or when
//    the repetition's time budget is spent, whichever comes first.
//  - Every thread or process it starts is joined or reaped before it
//    returns, and every process-wide state it changes (dispositions, masks,
//    limits, scheduling) is restored, also on the exception path.
//  - Throw SkipScenario("reason") when the machine cannot run it (no
//    AVX-512, no permission): the result says "skipped: reason".
//  - Counters (ctx.counter) report what was sent, delivered and coalesced.
//  - Every wait is bounded by ctx.wait_deadline() (lab/common/deadline.h has
//    the bounded waits): a wait that runs past it throws WaitTimedOut, and the
//    row fails with that reason. Behind that, the runner's watchdog stops a
//    repetition that runs past its hard limit (runner.h) whatever it waits in.
//  - ctx.phase("...") says what the repetition is doing now, in a few words;
//    the watchdog's report quotes the last one.
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

#include "lab/harness/clock.h"
#include "lab/harness/histogram.h"

namespace doorbell::lab {

// Where the scenario's threads run. same_core: every role on one CPU;
// other_core: role 0 on one CPU, role 1 (and up) on another.
enum class Pinning { none, same_core, other_core };
std::string_view pinning_name(Pinning p) noexcept;

struct Param {
  std::string name;   // the factor, e.g. "threads"
  std::string value;  // its value as text, e.g. "8"
};

class SkipScenario : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

// What a repetition recorded.
struct Repetition {
  std::map<std::string, Histogram> metrics;        // ns distributions by name
  std::map<std::string, double> counters;          // sent, delivered, coalesced, ops_per_s ...
  std::map<std::string, std::vector<double>> raw;  // bounded raw samples, by metric name
  std::vector<std::string> notes;
  double wall_s = 0.0;
};

// Where a repetition says what it is doing, for the watchdog's report. The
// runner places it in memory shared with the scenario's process and reads it
// only once that process has ended (or been killed), so it needs no lock.
struct PhaseBoard {
  int repetition = -1;  // -1: the warm-up; else the repetition's index
  int repetitions = 0;  // how many the run has after the warm-up
  char text[240] = {};  // the scenario's own words (Context::phase), NUL-terminated
};

class Context {
 public:
  // wait_deadline_ns: when a wait of this repetition becomes a failure
  // (0: the budget's end plus a minute); board: where phase() writes, or
  // nullptr.
  Context(bool quick, bool warmup, int repetition, double budget_s, std::size_t samples,
          Pinning pinning, Repetition& out, uint64_t wait_deadline_ns = 0,
          PhaseBoard* board = nullptr);

  bool quick() const noexcept { return quick_; }
  bool warmup() const noexcept { return warmup_; }
  int repetition() const noexcept { return repetition_; }  // -1 during warm-up
  Pinning pinning() const noexcept { return pinning_; }

  // The sample target and the time budget of this repetition.
  std::size_t samples() const noexcept { return samples_; }
  double budget_s() const noexcept { return budget_s_; }
  uint64_t deadline_ns() const noexcept { return deadline_ns_; }
  bool time_left() const noexcept { return monotonic_ns() < deadline_ns_; }
  // True while fewer than samples() samples were taken and time is left.
  // Reads the clock on every call (~25 ns): samples that take milliseconds
  // must not overrun the budget, and cheap operations are timed in batches.
  bool keep_going(std::size_t taken) const noexcept { return taken < samples_ && time_left(); }

  // When a wait of this repetition stops being a wait and becomes a failure:
  // well past the budget (the runner puts it at 3/4 of the repetition's hard
  // limit), so that a row on a loaded machine still finishes, and early
  // enough that the scenario reports its own reason before the watchdog
  // stops it. The bounded waits of lab/common/deadline.h take it.
  uint64_t wait_deadline_ns() const noexcept { return wait_deadline_ns_; }

  // Says what the repetition is doing now ("waiting for the peer's ready"),
  // for the watchdog's report; the text is cut at 239 bytes. Cheap (a copy
  // into memory), but not for a per-sample path.
  void phase(const char* text) noexcept;

  // Pins the calling thread for its role (0 = the measuring/sending thread,
  // 1 = the peer). Does nothing for Pinning::none, or when the process may
  // use only one CPU (then other_core is noted as impossible once).
  void pin_thread(int role);

  // The CPU pin_thread(role) would choose now, or -1 for Pinning::none or no
  // allowed CPU. For a role that runs in a forked child: read it before this
  // thread is pinned, since the child inherits its parent's affinity; the
  // child then calls pin_to_cpu().
  int cpu_for_role(int role) const;

  // The distribution named `name` ("latency" is the scenario's primary one
  // unless it says otherwise).
  Histogram& metric(const std::string& name = "latency") { return out_.metrics[name]; }
  void counter(const std::string& name, double value) { out_.counters[name] = value; }
  void add_counter(const std::string& name, double delta) { out_.counters[name] += delta; }
  // Keeps raw samples, at most kMaxRawSamples per metric.
  static constexpr std::size_t kMaxRawSamples = 100000;
  void raw_sample(const std::string& metric, double ns);
  void note(std::string text);

 private:
  bool quick_;
  bool warmup_;
  int repetition_;
  double budget_s_;
  std::size_t samples_;
  Pinning pinning_;
  uint64_t deadline_ns_;
  uint64_t wait_deadline_ns_;
  Repetition& out_;
  PhaseBoard* board_;
};

struct Scenario {
  std::string name;         // unique, "group/what[:param=value,...]"
  std::string group;        // "ladder", "wakeup", "e2e", ...
  std::string title;        // the row label in the table
  std::string description;  // exactly what one sample times: where it starts and ends
  std::vector<Param> params;
  ClockKind clock = ClockKind::monotonic;
  std::string primary_metric = "latency";
  Pinning pinning = Pinning::none;
  double budget_s = 0.25;        // per repetition in the default suite; --quick takes 1/5
  std::size_t samples = 20000;   // sample target per repetition; --quick takes 1/10
  bool in_default_suite = true;  // false: only with --suite full or a --filter naming it
  std::function<void(Context&)> run;
};

// Registers a scenario; names must be unique (a duplicate aborts at start-up
// with a message, since it is a programming error).
void register_scenario(Scenario scenario);
const std::vector<Scenario>& all_scenarios();

struct Registrar {
  explicit Registrar(Scenario scenario) { register_scenario(std::move(scenario)); }
  // Several at once, e.g. one per parameter value.
  explicit Registrar(std::vector<Scenario> scenarios) {
    for (auto& s : scenarios) register_scenario(std::move(s));
  }
};

// A ratio the table prints: numerator / denominator of one statistic of two
// scenarios' primary metric (or the named metric), beside a published figure
// where there is one. Numerator and denominator may be one scenario with two
// metrics (numerator_metric).
//
// A ratio that cannot be computed is never a bare "n/a": compute_ratios()
// says why (a scenario skipped or failed, a metric not recorded, a
// denominator of zero), and the table and the JSON carry that reason. A
// ratio whose denominator can legitimately be zero says what a zero means in
// zero_denominator (e.g. "the wait moved into the send").
struct Ratio {
  std::string name;         // "signal / atomic"
  std::string numerator;    // scenario name
  std::string denominator;  // scenario name
  std::string statistic = "p50";
  std::string metric;  // the metric of both scenarios; empty: each one's primary
  // The numerator's metric when it differs from `metric` (e.g. a baseline
  // measured in the same scenario, interleaved with the primary metric).
  std::string numerator_metric;
  double reference = 0.0;        // the published ratio; 0 when none
  std::string reference_source;  // where the published figure comes from, and its machine
  std::string meaning;           // one line: what the ratio tells
  std::string zero_denominator;  // what a zero denominator means here; empty: a generic reason
  // A ratio of two times may name its two sides in words ("Asio", "our
  // signalfd channel"): the table then says which is faster and by how much,
  // right on either side of 1 (format_ratio_words: "Asio 1.46x faster than
  // our signalfd channel" for 0.683), so `meaning` need not assume a side.
  std::string numerator_words;
  std::string denominator_words;
};
void register_ratio(Ratio ratio);
const std::vector<Ratio>& all_ratios();

// A published absolute figure shown beside a scenario's own.
// Ours is `statistic` of `metric` of `scenario` (metric empty: the
// scenario's primary one): the metric must measure what the publication
// measured, so that the row compares like with like.
struct ReferenceFigure {
  std::string scenario;  // our comparable scenario
  std::string what;      // "self-signal kill+handler"
  double value_ns = 0.0;
  std::string statistic = "mean";
  std::string source;  // "seed 001, gcc:13 container on ARM64"
  std::string metric;  // our comparable metric; empty: the scenario's primary one
};
void register_reference(ReferenceFigure figure);
const std::vector<ReferenceFigure>& all_references();

struct RatioRegistrar {
  explicit RatioRegistrar(std::vector<Ratio> ratios) {
    for (auto& r : ratios) register_ratio(std::move(r));
  }
};
struct ReferenceRegistrar {
  explicit ReferenceRegistrar(std::vector<ReferenceFigure> figures) {
    for (auto& f : figures) register_reference(std::move(f));
  }
};

// Glob match with * and ? (fnmatch without flags).
bool glob_match(const std::string& pattern, const std::string& text);

// The CPUs this process may run on (sched_getaffinity).
std::vector<int> allowed_cpus();

// Pins the calling thread to `cpu` (nothing for cpu < 0). Best effort: false
// when the kernel refused (a cpuset may forbid it).
bool pin_to_cpu(int cpu) noexcept;

}  // namespace doorbell::lab
