// Comparing two runs (A, then B): their names, and the scenario table with
// A, B and B/A side by side. The plots overlay both runs (plots.h) and the
// other sections add a column per run (html.h).
#pragma once

#include <string>
#include <vector>

#include "lab/report/runs.h"

namespace doorbell::report {

// A name for each results file: its file name, or "<dir>/<file name>" when
// the two file names alone are equal, or "A: path", "B: path" when even
// those are.
std::vector<std::string> run_labels(const std::vector<std::string>& files);

// One row per scenario name: status, p50 and p99 of the primary metric in
// A and in B, and B/A of each.
std::string comparison_table(const std::vector<std::string>& names,
                             const std::vector<LabeledRun>& runs);

}  // namespace doorbell::report
