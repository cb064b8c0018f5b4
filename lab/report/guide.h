// The guide checker: keeps the figures in the guide (docs/guide.md) equal
// to a results file, so the advice cannot drift from what was measured.
//
// A figure in the guide is written between two markers naming where it
// comes from:
//
//   <!--m:p50 ladder/signal_kill_handler-->4.44 µs<!--/m-->
//   <!--m:ratio self-signal / syscall-->3.83x<!--/m-->
//
// "p50", "p90", "p99", "p99.9", "mean", "max" or "min" take that statistic
// of the scenario's primary metric, written by lab::format_duration (a
// metric whose unit is not "ns": the number and its unit);
// "SCENARIO#METRIC" names another metric of the scenario:
//
//   <!--m:p99 e2e/signal:threads=8,policy=stock,main=busy#delay-->...<!--/m-->
//
// "counter" takes the median across repetitions of a counter, named the same
// way ("<!--m:counter partition/case_study:...#over_1ms-->"), as a number;
// "ratio" takes a registered ratio's value, written by lab::format_ratio. A
// figure whose scenario or ratio is not in the results (or did not run)
// reads "not measured". A marker's kind is lowercase letters, digits and
// dots (so "<!--m:...-->" in prose is not a marker); its source has no '>';
// its figure ends at the first "<!--/m-->" on the same line.
#pragma once

#include <cstddef>
#include <string>
#include <string_view>
#include <vector>

#include "lab/harness/results_reader.h"

namespace doorbell::report {

struct GuideMarker {
  std::string kind;    // "p50", ..., "ratio"
  std::string source;  // the scenario or ratio name
  std::string figure;  // the text between the markers, as the guide has it
  std::size_t offset;  // where the opening marker starts in the text
  std::size_t length;  // of the whole marker, opening to closing
};

// Every marker in the text, in order.
std::vector<GuideMarker> parse_guide_markers(std::string_view text);

// The text a marker of that kind and source should hold, from the results.
std::string guide_figure(const lab::ResultsFile& results, const std::string& kind,
                         const std::string& source);

struct GuideCheck {
  std::size_t figures = 0;
  // One line per figure that differs: `p50 ladder/x: the guide says "1.00
  // ns", the results give "4.44 µs"`.
  std::vector<std::string> differences;
  // Of those, the figures the results do not measure ("not measured"): a
  // difference to a check, but --update keeps them as the guide has them.
  std::size_t kept = 0;
  // The text with every figure the results measure replaced by what they
  // give; the others as they were (a results file of one group updates
  // that group's figures and leaves the rest alone).
  std::string updated;
};

// Compares every figure of the guide's text with the results.
GuideCheck check_guide(std::string_view text, const lab::ResultsFile& results);

}  // namespace doorbell::report
