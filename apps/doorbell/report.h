// The HTML report: one self-contained file that a browser opens offline.
//
// It reads results in the "doorbell-results" v1 schema (lab/harness/results.h)
// and draws every plot with gnuplot (the svg terminal), embedding each SVG as
// a data: URI, so the file needs no network, no fonts and no other file.
//
// For one run it shows, per scenario group:
//  - a bar chart of each scenario's primary metric, p50 with a p99 whisker,
//    on a log scale;
//  - percentile plots (HdrHistogram style: the x axis is 1/(1-p), so p50,
//    p90, p99 and p99.9 are evenly spaced) from each metric's sparse
//    histogram buckets;
//  - for scenarios with a numeric param (threads, rate_hz, work_ns ...), a
//    scaling curve of p50 and p99 against it;
//  - for the "e2e" group, stacked O_send / O_delay / O_recv / O_hndl bars
//    against threads, one chart per delivery policy;
//  - a table of every scenario (p50, p99, max, counters, notes, skip reasons).
// Then the ratios beside their published figures, the reference figures and
// the environment block.
//
// For two runs (A then B) the same plots are overlaid, and the tables show
// A, B and B/A per scenario, so two kernels, machines or settings compare.
//
// When gnuplot is not installed, the report is written with its tables and a
// note saying which package draws the plots; nothing fails.
#pragma once

#include <string>
#include <vector>

#include <nlohmann/json.hpp>

namespace doorbell::report {

struct ReportOptions {
  // Names for the runs, in order ("A", "B" by default; the file names when
  // the CLI has them).
  std::vector<std::string> labels;
  // When not empty, every plot's .svg and its gnuplot script are also kept
  // in this directory (created if missing), named as the report names them.
  std::string plots_dir;
  // The gnuplot executable.
  std::string gnuplot = "gnuplot";
};

// What was written, for callers and tests.
struct ReportSummary {
  std::vector<std::string> plots;         // file names of the plots embedded, in order
  std::vector<std::string> failed_plots;  // plots gnuplot could not draw, with its message
  bool gnuplot_found = true;
};

// Reads and checks a results file. Throws std::invalid_argument (with the
// path in the message) when the file cannot be read, is not JSON, or is not
// schema "doorbell-results" version 1.
nlohmann::json load_results(const std::string& path);

// Checks that `run` has the "doorbell-results" v1 shape the report needs;
// throws std::invalid_argument saying what is wrong.
void validate_results(const nlohmann::json& run);

// Writes the report of one run, or the comparison of two (runs[0] = A,
// runs[1] = B), to out_path. Throws std::invalid_argument when runs is empty,
// has more than two entries or one fails validate_results;
// std::system_error when out_path or plots_dir cannot be written.
ReportSummary write_html_report(const std::vector<nlohmann::json>& runs,
                                const std::string& out_path, const ReportOptions& options = {});

}  // namespace doorbell::report
