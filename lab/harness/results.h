// Writing results: the terminal table, JSON (versioned schema) and CSV.
//
// JSON schema "doorbell-results", version 1:
// {
//   "schema": "doorbell-results", "schema_version": 1,
//   "doorbell_version": "...", "environment": {...},
//   "options": {"suite", "quick", "repetitions", "filters"},
//   "wall_s": ...,
//   "interrupted": {"signal": "SIGINT"|"SIGTERM", "during" (the row stopped, or ""),
//                   "not_run": [names]} (only when the run was stopped early: the
//                   rows listed are what ran),
//   "scenarios": [{
//     "name", "group", "title", "description", "params": {name: value},
//     "clock": "tsc"|"monotonic", "clock_read_ns", "pinning",
//     "status": "ok"|"skipped"|"failed", "reason", "repetitions", "wall_s",
//     "budget_s" (of one repetition, as run), "limit_s" (the watchdog's limit of
//     one repetition), "failure": {"kind": "error"|"watchdog"|"died"|"interrupted", "phase",
//     "elapsed_s"} (only when failed), "warnings": [...] (a row with any is
//     flagged: its figures should not be trusted), "primary_metric",
//     "metrics": {name: {"unit": "ns", "count", "min", "max", "mean", "stddev",
//                        "p50", "p90", "p99", "p99.9",
//                        "unsupported_percentiles": [names] (those the count cannot
//                        support: histogram.h, samples_needed; derived from "count"
//                        by the reader for older files),
//                        "p50_across_reps": {"min","median","max"},
//                        "mean_across_reps": {"min","median","max"},
//                        "per_repetition": [{summary}...],
//                        "histogram": [[lower_ns, upper_ns, count], ...],
//                        "raw": [...] (only where the scenario kept raw samples)}},
//     "counters": {name: {"per_repetition": [...], "min", "median", "max"}},
//     "notes": [...]}],
//   "ratios": [{"name", "numerator", "denominator", "statistic", "available", "value",
//               "why" (only when value is null: the reason), "metric" (only when not the
//               primary), "numerator_metric" (only when the numerator's differs),
//               "reference", "reference_source", "versus_reference", "meaning",
//               "flags": [why the value must not be quoted bare: a side flagged, a
//               percentile its count cannot support]}],
//   "references": [{"scenario", "what", "value_ns", "statistic", "source", "ours_ns",
//                   "metric" (only when not the primary), "flags" (as a ratio's)}]
// }
#pragma once

#include <iosfwd>
#include <string>

#include <nlohmann/json_fwd.hpp>

#include "lab/common/format.h"
#include "lab/harness/runner.h"

namespace doorbell::lab {

inline constexpr const char* kResultsSchema = "doorbell-results";
inline constexpr int kResultsSchemaVersion = 1;

nlohmann::json to_json(const RunResults& results, const std::string& doorbell_version);
nlohmann::json to_json(const Environment& environment);

// Writes to path; throws std::system_error when the file cannot be written.
void write_json(const RunResults& results, const std::string& doorbell_version,
                const std::string& path);
// One row per (scenario, metric): summary columns and the spread across
// repetitions; counters as one row each with metric "counter:<name>".
void write_csv(const RunResults& results, const std::string& path);

// The human table: the machine and the "on this machine" summary
// (summary.h) first, then one line per scenario's primary metric, grouped,
// then the ratios beside their published figures (a ratio not computed says
// why), then the reference figures.
void print_table(const RunResults& results, std::ostream& out);

}  // namespace doorbell::lab
