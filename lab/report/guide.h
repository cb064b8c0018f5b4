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

// How far a measured figure may be from the guide's and still agree: a
// factor of 1.25 either way (10.4x vs 10.8x agrees; 115x vs 1413x differs).
// Machines and runs differ by a few percent, which is no disagreement with
// the guide; a figure a quarter off or more is. Compared as numbers in the
// same unit (times in any of ns, µs, ms, s); a figure that is not a number
// agrees only when it reads the same.
inline constexpr double kGuideTolerance = 1.25;

struct GuideCheck {
  std::size_t figures = 0;
  // Figures the results give exactly as the guide writes them.
  std::size_t same = 0;
  // One line per figure that reads otherwise but within kGuideTolerance:
  // `p50 ladder/x: the guide says "10.4x", the results give "10.8x" (within
  // 25%: agrees)`.
  std::vector<std::string> agree;
  // One line per measured figure beyond kGuideTolerance (or not a number):
  // `p50 ladder/x: the guide says "115x", the results give "1413x" (12.3x
  // apart)`.
  std::vector<std::string> differences;
  // "KIND SOURCE" of each figure the results do not measure (a partial run):
  // neither agrees nor differs; --update keeps them as the guide has them.
  std::vector<std::string> not_measured;
  // The text with every figure the results measure replaced by what they
  // give; the others as they were (a results file of one group updates
  // that group's figures and leaves the rest alone).
  std::string updated;
};

// The factor between two figures ("10.4x" and "10.8x": 1.04), >= 1; NaN
// when they are not numbers in the same unit.
double figure_factor(const std::string& a, const std::string& b);

// Compares every figure of the guide's text with the results.
GuideCheck check_guide(std::string_view text, const lab::ResultsFile& results);

}  // namespace doorbell::report
