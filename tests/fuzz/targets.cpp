#include "tests/fuzz/targets.h"

#include <string>

#include "lab/harness/results_reader.h"
#include "lab/partition/schedule_file.h"
#include "lab/report/guide.h"

namespace doorbell::fuzz {
namespace {

// `doorbell partition check FILE`: a schedule is accepted or refused with a
// ScheduleFileError naming FILE:LINE.
void schedule_input(std::string_view input) {
  try {
    (void)lab::parse_schedule_toml(input, "fuzz.toml");
  } catch (const lab::ScheduleFileError&) {
  }
}

// `doorbell report` and `doorbell guide` read results files: accepted, or a
// ResultsError naming the field.
void results_input(std::string_view input) {
  try {
    const lab::ResultsFile results = lab::parse_results(input);
    // What the guide does with an accepted file: every figure it can ask for.
    for (const auto& scenario : results.scenarios)
      for (const char* kind : {"p50", "p99", "p99.9", "max", "mean"})
        (void)report::guide_figure(results, kind, scenario.name);
    for (const auto& ratio : results.ratios)
      (void)report::guide_figure(results, "ratio", ratio.name);
  } catch (const lab::ResultsError&) {
  }
}

// `doorbell guide RESULTS GUIDE`: any text is a guide; markers are parsed,
// checked against a small fixed results file, and rewritten. Nothing throws.
void guide_input(std::string_view input) {
  static const lab::ResultsFile results = lab::parse_results(R"({
    "schema": "doorbell-results", "schema_version": 1, "doorbell_version": "fuzz",
    "environment": {}, "ratios": [{"name": "self-signal / syscall", "value": 3.3}],
    "scenarios": [{"name": "ladder/syscall_getpid", "status": "ok", "primary_metric": "latency",
                   "metrics": {"latency": {"p50": 1000, "p90": 1100, "p99": 1200, "p99.9": 1300,
                                           "max": 2000, "min": 900, "mean": 1010}}}]})");
  const report::GuideCheck check = report::check_guide(input, results);
  // The rewrite must be a fixed point: checking the updated text finds every
  // measured figure the same (the others, not measured, --update keeps as
  // they are).
  const report::GuideCheck again = report::check_guide(check.updated, results);
  if (!again.differences.empty() || !again.agree.empty() ||
      again.not_measured.size() != check.not_measured.size() || again.updated != check.updated)
    __builtin_trap();
}

}  // namespace

const std::vector<Target>& targets() {
  static const std::vector<Target> all = {
      {"schedule", "the schedule loader (doorbell partition run|check)", schedule_input},
      {"results", "the results reader (doorbell report, doorbell guide)", results_input},
      {"guide", "the guide's markers (doorbell guide)", guide_input},
  };
  return all;
}

const Target* find_target(std::string_view name) {
  for (const auto& t : targets())
    if (name == t.name) return &t;
  return nullptr;
}

}  // namespace doorbell::fuzz
