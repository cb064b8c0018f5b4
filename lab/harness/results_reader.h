// Reading results: the "doorbell-results" v1 JSON (written by results.h,
// whose top comment is the schema) back into plain structs.
//
// This is the one place that interprets a results file. The report
// (lab/report/) and the guide checker read results through it and nothing
// else, so a default (a scenario without "status" is "ok") is decided here
// once.
//
// What the reader accepts:
//   - "schema" must be "doorbell-results" and "schema_version" must be 1;
//     "scenarios" must be an array, and each scenario must have a string
//     "name". Everything else may be absent and takes the default below.
//   - A field that is present must have its schema type. A number field
//     also accepts null, read as NaN: the writer writes a statistic that
//     does not exist (a ratio whose scenarios did not run, a NaN) as null.
//   - Fields the schema does not name are ignored, so a newer writer that
//     only adds fields stays readable.
// Anything else throws ResultsError, whose message names the field ("scenario
// 3 (\"ladder/x\"): metrics.latency.p50: expected a number, got a string")
// and, for read_results_file, the file. Nothing else escapes: no
// nlohmann::json exception, no crash, for any input.
//
// Order: scenarios, ratios and references keep the file's order. Objects
// (params, metrics, counters, environment) come in the order the JSON
// library stores them, which is sorted by name: that is also the order the
// writer's output has.
//
// Threads: the functions share no state; call them from any thread.
#pragma once

#include <cmath>
#include <limits>
#include <stdexcept>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include <nlohmann/json_fwd.hpp>

namespace doorbell::lab {

// Bad input: not JSON, not the schema, or a field of the wrong type.
class ResultsError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

inline constexpr double kNotMeasured = std::numeric_limits<double>::quiet_NaN();

// min / median / max of one statistic across repetitions; NaN when absent.
struct SpreadRecord {
  double min = kNotMeasured, median = kNotMeasured, max = kNotMeasured;
};

// One summary of samples. Every field is NaN when absent or null.
struct SummaryRecord {
  double count = kNotMeasured;
  double min = kNotMeasured, max = kNotMeasured, mean = kNotMeasured, stddev = kNotMeasured;
  double p50 = kNotMeasured, p90 = kNotMeasured, p99 = kNotMeasured, p999 = kNotMeasured;

  // A statistic by the name the guide and the references use: "p50", "p90",
  // "p99", "p99.9", "mean", "max", "min", "stddev", "count". NaN for any
  // other name.
  double statistic(std::string_view name) const noexcept;
};

struct HistogramBucket {
  double lower_ns = 0, upper_ns = 0;
  double count = 0;
};

struct MetricRecord {
  std::string name;
  std::string unit = "ns";
  SummaryRecord summary;  // of every repetition's samples merged
  SpreadRecord p50_across_reps, mean_across_reps;
  std::vector<SummaryRecord> per_repetition;
  std::vector<HistogramBucket> histogram;  // as written (the writer skips empty buckets)
  std::vector<double> raw;                 // only where the scenario kept raw samples

  // The percentiles ("p50", "p90", "p99", "p99.9") summary.count cannot
  // support (histogram.h, samples_needed): derived from the count, so files
  // written before the writer listed them ("unsupported_percentiles") read
  // the same.
  std::vector<std::string> unsupported_percentiles() const;
};

struct CounterRecord {
  std::string name;
  std::vector<double> per_repetition;
  SpreadRecord spread;
};

enum class ScenarioStatus { ok, skipped, failed };
// "ok", "skipped", "failed".
const char* status_name(ScenarioStatus status) noexcept;

struct ScenarioRecord {
  std::string name;
  std::string group;  // default: the part of name before the first '/'
  std::string title, description;
  // Each param's value as text: strings as written, numbers and booleans as
  // JSON writes them, arrays joined with ", ".
  std::vector<std::pair<std::string, std::string>> params;
  std::string clock, pinning;
  double clock_read_ns = kNotMeasured;
  ScenarioStatus status = ScenarioStatus::ok;  // default: ok
  std::string reason;                          // why skipped or failed
  double repetitions = kNotMeasured;
  double wall_s = kNotMeasured;
  std::string primary_metric = "latency";  // default: latency
  std::vector<MetricRecord> metrics;
  std::vector<CounterRecord> counters;
  std::vector<std::string> notes;
  // Why its figures should not be trusted (samples longer than the budget);
  // a row with any is flagged. Empty in files written before warnings.
  std::vector<std::string> warnings;
  double budget_s = kNotMeasured;  // of one repetition, as run
  double limit_s = kNotMeasured;   // the watchdog's limit of one repetition
  // For a failed row (files from this version on): "error", "watchdog" or
  // "died", where it was, and how long that repetition had run.
  std::string failure_kind, failure_phase;
  double failure_elapsed_s = kNotMeasured;

  bool ok() const noexcept { return status == ScenarioStatus::ok; }
  bool flagged() const noexcept { return !warnings.empty(); }
  const MetricRecord* metric(std::string_view metric_name) const noexcept;
  // The metric named primary_metric; nullptr when the scenario has none
  // (a skipped or failed scenario has no metrics at all).
  const MetricRecord* primary() const noexcept;
  // A param's value; empty when the scenario has no such param.
  std::string param(std::string_view param_name) const;
};

struct RatioRecord {
  std::string name, numerator, denominator, statistic;
  bool available = false;  // default: whether value is a number
  double value = kNotMeasured;
  double reference = kNotMeasured;  // the published figure, NaN without one
  std::string reference_source;
  double versus_reference = kNotMeasured;
  std::string meaning;
  std::string why;     // when not available: why (written from this version on; may be empty)
  std::string metric;  // the metric compared; empty: each scenario's primary one
  std::string numerator_metric;  // the numerator's, when not `metric` (may be empty)
  // Why the value must not be quoted bare (a side flagged, a percentile its
  // count cannot support), one line each. Files without "flags" get them
  // derived from their scenarios by the writer's rule (figure_flags).
  std::vector<std::string> flags;
  bool has_flags = false;  // the file had "flags"
};

// A published figure beside our scenario.
struct ReferenceRecord {
  std::string scenario, what, statistic, source;
  double value_ns = kNotMeasured;
  double ours_ns = kNotMeasured;  // our figure when the results were written
  std::string metric;             // the metric ours is of; empty: the scenario's primary one
  std::string why;                // when ours_ns is null: why (may be empty in older files)
  // Why ours must not be quoted bare; derived for older files, as a ratio's.
  std::vector<std::string> flags;
  bool has_flags = false;
};

// "options" of the run that wrote the file.
struct RunOptionsRecord {
  std::string suite;
  bool quick = false;
  double repetitions = kNotMeasured;
  std::vector<std::string> filters;
  // The whole object as compact JSON, for display; empty when absent.
  std::string json;
};

struct ResultsFile {
  int schema_version = 1;
  std::string doorbell_version;  // empty when absent
  double wall_s = kNotMeasured;
  // Each environment field with its value as text (as ScenarioRecord::params).
  std::vector<std::pair<std::string, std::string>> environment;
  RunOptionsRecord options;
  bool has_options = false;
  std::vector<ScenarioRecord> scenarios;
  std::vector<RatioRecord> ratios;
  std::vector<ReferenceRecord> references;

  // The scenario of that name, nullptr when absent (the first one when a
  // name repeats).
  const ScenarioRecord* find(std::string_view name) const noexcept;
  // An environment field's text; empty when absent.
  std::string environment_value(std::string_view key) const;
  const RatioRecord* ratio(std::string_view name) const noexcept;
};

// Parses a results document from its text. Throws ResultsError.
ResultsFile parse_results(std::string_view json_text);
// The same, from a document already parsed (what to_json returns).
ResultsFile results_from_json(const nlohmann::json& document);
// Reads and parses a file. Throws ResultsError whose message starts with the
// path, also when the file cannot be opened.
ResultsFile read_results_file(const std::string& path);

}  // namespace doorbell::lab
