// The runner: selects scenarios, warms up, repeats, and gathers results.
#pragma once

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
};

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
};

struct RunResults {
  Environment environment;
  RunOptions options;
  std::vector<ScenarioResult> scenarios;
  std::vector<RatioResult> ratios;
  double wall_s = 0.0;

  const ScenarioResult* find(const std::string& name) const;
};

// Runs the scenarios in order; a scenario that throws is recorded as failed
// and the run goes on.
RunResults run_scenarios(const RunOptions& options, const std::vector<const Scenario*>& selected);

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
