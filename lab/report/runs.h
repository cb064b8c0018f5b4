// The runs a report shows, and what every part of the report says the same
// way about them: scenario groups, file-name-safe names, numeric params.
#pragma once

#include <map>
#include <string>
#include <vector>

#include "lab/harness/results_reader.h"

namespace doorbell::report {

// One results file under the name the report gives it ("A", a file name).
struct LabeledRun {
  std::string label;
  const lab::ResultsFile* results = nullptr;  // not owned; outlives the report

  const lab::ScenarioRecord* find(const std::string& name) const noexcept {
    return results->find(name);
  }
};

// The scenario groups of all runs in order of first appearance (the first
// run first), and each group's scenario names, in the same order.
struct ScenarioGroups {
  std::vector<std::string> order;
  std::map<std::string, std::vector<std::string>> names;
};
ScenarioGroups group_scenarios(const std::vector<LabeledRun>& runs);

// A file-name-safe form of a name: letters, digits, '-' and '.', other runs
// of characters as one '_'; "x" when nothing is left.
std::string slug(const std::string& name);

// The part of a scenario name after "group/".
std::string short_name(const std::string& name);

// Finite and above zero: a value a log scale can show.
bool positive(double value) noexcept;

// A whole string read as a number; NaN when it is not one.
double numeric_param(const std::string& text) noexcept;

}  // namespace doorbell::report
