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

// One line (plain text) that explains what separates the two machines:
//   "B's kernel entry is 5.23x cheaper (getpid row p50 195 ns vs 1.02 µs:
//    KVM/PTI not affected vs KVM/PTI on): syscall- and signal-bound rows
//    differ by that, atomics do not (here: signal row A 5.00x slower, atomic
//    row about equal)"
// The cost of a kernel entry is the p50 of the ladder's getpid row where
// both runs have it, else the environment's start-up probe (syscall_ns) of
// both; hypervisor and PTI come from the environment blocks. Within 10% (as
// the rows' "about equal") it says the kernel entry costs the same; a file
// with neither the row nor syscall_ns is named as such.
std::string explain_machines(const LabeledRun& a, const LabeledRun& b);

}  // namespace doorbell::report
