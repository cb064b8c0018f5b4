// The runner: selects scenarios, warms up, repeats, and gathers results.
#pragma once

#include <sys/types.h>

#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "lab/harness/environment.h"
#include "lab/harness/scenario.h"

namespace doorbell::lab {

struct RunOptions {
  std::vector<std::string> filters;  // globs over scenario names; empty: the suite
  std::string suite = "default";     // "default" or "full"
  bool quick = false;                // 1/5 of the budget, 1/10 of the samples
  int repetitions = 5;               // after one warm-up
  bool progress = true;              // a progress line on a terminal
  // The hard limit of one repetition (the warm-up counts as one), in
  // seconds; 0: derived from the scenario's budget (repetition_limit_s).
  double scenario_timeout_s = 0.0;
  // Each scenario runs in a process of its own under the watchdog (the
  // default, and what `doorbell bench` does). false: in this process, with
  // no watchdog: a scenario that never returns hangs the run (for tests that
  // look at what a scenario did to the process).
  bool isolate = true;
};

// The watchdog's limit for one repetition of `scenario`: the override when
// options.scenario_timeout_s > 0, else 10 x its budget (as scaled by
// --quick) + 10 s. Its waits give up at 3/4 of it (Context::wait_deadline_ns),
// so that they report their own reason first.
double repetition_limit_s(const Scenario& scenario, const RunOptions& options);

// Scenarios selected by the options, in order of registration: without a
// filter, the suite's scenarios; with filters (globs), the suite's scenarios
// that match one, plus full-suite-only scenarios named exactly by a filter.
std::vector<const Scenario*> select_scenarios(const RunOptions& options);

// min / median / max of one statistic across repetitions.
struct Spread {
  double min = 0, median = 0, max = 0;
};

struct MetricResult {
  std::string name;
  Histogram merged;              // every repetition's samples together
  Summary summary;               // of merged
  std::vector<Summary> per_rep;  // each repetition's own
  Spread p50_across_reps;
  Spread mean_across_reps;
  std::vector<double> raw;  // bounded raw samples (all repetitions)
};

struct ScenarioResult {
  const Scenario* scenario = nullptr;
  enum class Status { ok, skipped, failed } status = Status::ok;
  std::string reason;  // for skipped and failed
  // How a failed row failed: "error" (it threw: a wait timed out, a call
  // failed), "watchdog" (stopped past its hard limit) or "died" (its process
  // ended by a signal or an exit of its own); empty unless failed.
  struct Failure {
    std::string kind;
    std::string phase;       // where it was: "repetition 2 of 5 (waiting for ...)"
    double elapsed_s = 0.0;  // how long that repetition had run
  } failure;
  double budget_s = 0.0;  // of one repetition, as run (scaled by --quick)
  double limit_s = 0.0;   // the watchdog's limit of one repetition
  // Why its figures should not be trusted, one line each; a row with any is
  // "flagged": the table and the report show the warnings, and the summary
  // quotes no flagged row. Today: samples longer than the repetition's budget
  // (counted in the counter samples_over_budget).
  std::vector<std::string> warnings;
  std::vector<MetricResult> metrics;
  std::map<std::string, std::vector<double>> counters;  // per repetition
  std::map<std::string, Spread> counter_spread;
  std::vector<std::string> notes;
  int repetitions = 0;
  double wall_s = 0.0;

  const MetricResult* metric(const std::string& name) const;
  const MetricResult* primary() const;
};

struct RatioResult {
  const Ratio* ratio = nullptr;
  bool available = false;  // both scenarios ran and the denominator is not zero
  double value = 0.0;
  // value / reference, when a reference exists
  double versus_reference = 0.0;
  // When not available: why, in one line ("the denominator (p99 of 'delay'
  // of ...) is 0: ..."); empty when available.
  std::string why;
  // When available: why the value must not be quoted bare, one line each
  // (figure_flags, histogram.h: a side is flagged, or its statistic is a
  // percentile its count cannot support); the table marks the value with
  // '!' and prints each line; the JSON writes them as "flags".
  std::vector<std::string> flags;
};

// A run stopped early by request_stop() (Ctrl-C, SIGTERM).
struct Interruption {
  int signal = 0;                    // 0: the run was not interrupted
  std::string during;                // the row that was running ("" : between rows)
  std::vector<std::string> not_run;  // the rows never started
};

struct RunResults {
  Environment environment;
  RunOptions options;
  std::vector<ScenarioResult> scenarios;
  std::vector<RatioResult> ratios;
  double wall_s = 0.0;
  Interruption interrupted;

  const ScenarioResult* find(const std::string& name) const;
};

// Runs the scenarios in order; a scenario that throws, dies or runs past
// its limit is recorded as failed and the run goes on (isolation.h says how).
RunResults run_scenarios(const RunOptions& options, const std::vector<const Scenario*>& selected);

// Stopping a run early (what `doorbell bench` does on SIGINT and SIGTERM).
// request_stop(signo) records the signal and wakes the runner; it is
// async-signal-safe (an atomic store and a write(2) to a pipe), for a signal
// handler. The running scenario's process is then killed (SIGKILL), reaped
// and cleaned up after exactly as after a watchdog stop (its leftovers
// killed, register_after_scenario_process hooks run); its row is kept as
// failed, failure kind "interrupted"; the rows not yet started are not run;
// RunResults::interrupted says so. The rows completed before stand.
// Without isolation (RunOptions::isolate false) the run stops between rows.
void request_stop(int signo) noexcept;
// The signal of the first request_stop(), 0 when none.
int stop_signal() noexcept;
// Forgets a request (a new run in the same process; tests).
void clear_stop_request() noexcept;

// For the length of a command: SIGINT and SIGTERM call request_stop()
// (each signal left alone when it was ignored, as a shell's background job
// has it). The previous dispositions come back at destruction, and a
// scenario's process gets them back at once (it is forked with them).
class StopOnSignals {
 public:
  StopOnSignals();
  ~StopOnSignals();
  // Once the run is over: the handlers stay, with SA_RESTART, so that a
  // signal while the results are written (a write to stdout waiting on a
  // slow reader) lets the write go on instead of failing it with EINTR.
  // During the run they have none: a blocking call returns EINTR and looks.
  void restart_interrupted_calls() const;
  StopOnSignals(const StopOnSignals&) = delete;
  StopOnSignals& operator=(const StopOnSignals&) = delete;
};

// Called in the runner after a scenario's process was killed or died, once
// it is reaped, with its pid: for what such a process leaves that the
// runner's reaping does not (the lab's scenarios register the removal of
// tracefs instances named after a pid that no longer exists).
void register_after_scenario_process(std::function<void(pid_t)> hook);

// Called in a scenario's own process after its last repetition, before it
// ends (it ends with _exit, which runs no destructor of a static): for what
// the lab keeps for a whole process and removes at exit (a tracing instance
// created on first use). A scenario registers it when it creates such a
// thing; run in this process (RunOptions::isolate false), the static's own
// destructor does the work at exit instead. The watchdog's limit covers it.
void register_scenario_process_exit(std::function<void()> hook);

// Computes the registered ratios from the results (run_scenarios calls it).
// A ratio is left out only when one of its scenarios was not selected; one
// that cannot be computed is kept, unavailable, with its reason in `why`.
std::vector<RatioResult> compute_ratios(const std::vector<ScenarioResult>& scenarios);
// The same for any list of ratios (what the tests use).
std::vector<RatioResult> compute_ratios(const std::vector<ScenarioResult>& scenarios,
                                        const std::vector<Ratio>& ratios);

// Why a scenario has no figure for a metric (empty: its primary one): "X was
// skipped: ...", "X failed: ...", "X recorded no 'm' samples (its note:
// ...)"; empty when it has one.
std::string why_not_measured(const ScenarioResult& scenario, const std::string& metric = {});

// The metric a reference figure compares with (its `metric`, else the
// primary one); nullptr when the scenario did not record it.
const MetricResult* reference_metric(const ScenarioResult& scenario, const ReferenceFigure& figure);

Spread spread_of(std::vector<double> values);

}  // namespace doorbell::lab
