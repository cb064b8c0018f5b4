// The report's plots as gnuplot scripts (gnuplot.h draws them).
//
// For each scenario group, in this order:
//  - a bar chart of each scenario's primary metric, p50 with a p99 whisker,
//    on a log scale;
//  - for the "ratelimit" group, the crossover: per design and thread count,
//    the least per-call work at which the limiter keeps 95% of the
//    no-limiter throughput (with two or more work regimes in the run);
//  - for the "e2e" group, stacked O_send / O_delay / O_recv / O_hndl bars
//    against threads, one chart per delivery policy (and per run);
//  - for scenarios with a numeric param (threads, rate_hz, work_ns ...), a
//    scaling curve of p50 and p99 against it;
//  - percentile plots (HdrHistogram style: the x axis is 1/(1-p), so p50,
//    p90, p99 and p99.9 are evenly spaced) from each metric's histogram.
// With two runs the same plots overlay both (A solid or thick, B dashed or
// thin). Building a script runs nothing: it is text, testable as text.
#pragma once

#include <string>
#include <vector>

#include "lab/report/runs.h"

namespace doorbell::report {

struct Plot {
  std::string file;     // "ladder_p50_bars.svg"
  std::string title;    // shown above the image
  std::string caption;  // what it shows, how to read it
  std::string script;   // the gnuplot commands after "set output"
  int width = 900, height = 480;
  std::string svg;    // filled by render_plots
  std::string error;  // filled by render_plots when gnuplot could not draw it
};

// Every plot of one group, in the order above. names: the group's scenarios
// (ScenarioGroups::names). A plot with nothing to show is left out.
std::vector<Plot> group_plots(const std::string& group, const std::vector<std::string>& names,
                              const std::vector<LabeledRun>& runs);

// The whole script for gnuplot: an SVG terminal of the plot's size writing
// to output_path, then the plot's own commands.
std::string gnuplot_script(const Plot& plot, const std::string& output_path);

}  // namespace doorbell::report
