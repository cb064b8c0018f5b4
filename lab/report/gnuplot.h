// Drawing plots (plots.h) with gnuplot, one gnuplot process per plot.
//
// Each plot's script and SVG are written in a scratch directory under
// $TMPDIR (else /tmp), removed afterwards. gnuplot runs through
// doorbell::ChildProcess (clean signal state, stdin /dev/null, stdout and
// stderr to a log whose text becomes the plot's error) and gets `timeout`
// per plot: one that runs past it is killed and marked failed, so a stuck
// gnuplot never holds the report.
#pragma once

#include <chrono>
#include <string>
#include <vector>

#include "lab/report/plots.h"

namespace doorbell::report {

struct GnuplotOptions {
  // The gnuplot executable (looked up in PATH when it has no slash).
  std::string gnuplot = "gnuplot";
  // When not empty, every plot's .svg and its script (.svg.gp) are also
  // kept in this directory (created if missing).
  std::string plots_dir;
  // How long one plot may take.
  std::chrono::milliseconds timeout{std::chrono::seconds(60)};
};

// Fills each plot's svg, or its error when gnuplot failed on it. Returns
// false, drawing nothing, when the gnuplot executable does not exist.
// Throws std::system_error when the scratch directory or plots_dir cannot
// be made.
bool render_plots(std::vector<Plot>& plots, const GnuplotOptions& options);

}  // namespace doorbell::report
