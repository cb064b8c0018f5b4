#include "lab/report/runs.h"

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <cmath>
#include <cstdlib>

namespace doorbell::report {

ScenarioGroups group_scenarios(const std::vector<LabeledRun>& runs) {
  ScenarioGroups groups;
  for (const auto& run : runs)
    for (const auto& s : run.results->scenarios) {
      if (!groups.names.count(s.group)) groups.order.push_back(s.group);
      auto& list = groups.names[s.group];
      if (std::find(list.begin(), list.end(), s.name) == list.end()) list.push_back(s.name);
    }
  return groups;
}

std::string slug(const std::string& name) {
  std::string out;
  for (char c : name) {
    if (std::isalnum(static_cast<unsigned char>(c)) || c == '-' || c == '.')
      out += c;
    else if (!out.empty() && out.back() != '_')
      out += '_';
  }
  while (!out.empty() && (out.back() == '_' || out.back() == '.')) out.pop_back();
  return out.empty() ? "x" : out;
}

std::string short_name(const std::string& name) {
  auto slash = name.find('/');
  return slash == std::string::npos ? name : name.substr(slash + 1);
}

bool positive(double value) noexcept {
  return std::isfinite(value) && value > 0;
}

double numeric_param(const std::string& text) noexcept {
  if (text.empty()) return lab::kNotMeasured;
  char* end = nullptr;
  errno = 0;
  double v = std::strtod(text.c_str(), &end);
  if (errno != 0 || end == text.c_str() || *end != '\0' || !std::isfinite(v))
    return lab::kNotMeasured;
  return v;
}

}  // namespace doorbell::report
