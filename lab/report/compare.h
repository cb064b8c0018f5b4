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

// One line (plain text) that explains what separates the two machines, from
// their environment blocks (syscall_ns, hypervisor, pti) and, where both ran
// them, the ladder's signal, syscall and atomic rows:
//   "B's kernel entry is 5.2x cheaper (syscall 195 ns vs 1.02 µs: KVM/PTI on
//    vs KVM/PTI not affected): syscall- and signal-bound rows differ by that,
//    atomics do not (here: syscall row 5.1x, signal row 4.8x, atomic row
//    1.05x)"
// Within 20% it says the kernel entry costs the same; a file without a
// syscall cost (written before it was recorded) is named as such.
std::string explain_machines(const LabeledRun& a, const LabeledRun& b);

}  // namespace doorbell::report
