// The HTML report: one self-contained file that a browser opens offline.
//
// It shows results read by lab/harness/results_reader.h and embeds every
// plot (plots.h, drawn by gnuplot.h) as an SVG data: URI, so the file needs
// no network, no fonts and no other file.
//
// For one run it shows, per scenario group, a table of every scenario (p50,
// p90, p99, max, samples, counters, notes, skip reasons) and the group's
// plots; then the ratios beside their published figures, the reference
// figures and the environment block. For two runs (A then B) the plots are
// overlaid and the tables show A, B and B/A (compare.h), so two kernels,
// machines or settings compare. Durations and ratios are written by
// lab/common/format.h, as everywhere in the lab.
//
// When gnuplot is not installed, the report is written with its tables and a
// note saying which package draws the plots; nothing fails.
#pragma once

#include <string>
#include <vector>

#include "lab/harness/results_reader.h"
#include "lab/report/gnuplot.h"

namespace doorbell::report {

struct ReportOptions {
  // Names for the runs, in order ("A", "B" by default; compare.h's
  // run_labels gives the file names).
  std::vector<std::string> labels;
  // When not empty, every plot's .svg and its gnuplot script are also kept
  // in this directory (created if missing), named as the report names them.
  std::string plots_dir;
  // The gnuplot executable.
  std::string gnuplot = "gnuplot";
  // How long gnuplot may take over one plot before it is killed.
  std::chrono::milliseconds plot_timeout{std::chrono::seconds(60)};
};

// What was written, for callers and tests.
struct ReportSummary {
  std::vector<std::string> plots;         // file names of the plots embedded, in order
  std::vector<std::string> failed_plots;  // plots gnuplot could not draw, with its message
  bool gnuplot_found = true;
};

// The page for one run, or the comparison of two (runs[0] = A, runs[1] = B),
// as text; draws the plots. Throws std::invalid_argument when runs is empty
// or has more than two entries; std::system_error when plots_dir cannot be
// written.
std::string html_report(const std::vector<lab::ResultsFile>& runs, const ReportOptions& options,
                        ReportSummary& summary);

// html_report written to out_path. Also throws std::system_error when
// out_path cannot be written.
ReportSummary write_html_report(const std::vector<lab::ResultsFile>& runs,
                                const std::string& out_path, const ReportOptions& options = {});

}  // namespace doorbell::report
