#include "lab/report/compare.h"

#include <filesystem>

#include <fmt/format.h>

#include "lab/common/format.h"
#include "lab/report/cells.h"

namespace doorbell::report {

std::vector<std::string> run_labels(const std::vector<std::string>& files) {
  namespace fs = std::filesystem;
  std::vector<std::string> labels;
  for (const auto& f : files) labels.push_back(fs::path(f).filename().string());
  if (labels.size() == 2 && labels[0] == labels[1]) {
    for (std::size_t i = 0; i < 2; ++i) {
      fs::path p(files[i]);
      std::string parent = p.parent_path().filename().string();
      labels[i] = parent.empty() ? files[i] : parent + "/" + labels[i];
    }
    if (labels[0] == labels[1]) labels = {"A: " + files[0], "B: " + files[1]};
  }
  return labels;
}

std::string comparison_table(const std::vector<std::string>& names,
                             const std::vector<LabeledRun>& runs) {
  std::string h = "<table><tr><th>scenario</th>";
  h += fmt::format(
      "<th>status {0}</th><th>status {1}</th><th>p50 {0}</th><th>p50 {1}</th><th>p50 "
      "{1}/{0}</th><th>p99 {0}</th><th>p99 {1}</th><th>p99 {1}/{0}</th></tr>\n",
      escape_html(runs[0].label), escape_html(runs[1].label));
  for (const auto& n : names) {
    const lab::ScenarioRecord* a = runs[0].find(n);
    const lab::ScenarioRecord* b = runs[1].find(n);
    const lab::MetricRecord* ma = a && a->ok() ? a->primary() : nullptr;
    const lab::MetricRecord* mb = b && b->ok() ? b->primary() : nullptr;
    const double a50 = ma ? ma->summary.p50 : lab::kNotMeasured;
    const double b50 = mb ? mb->summary.p50 : lab::kNotMeasured;
    const double a99 = ma ? ma->summary.p99 : lab::kNotMeasured;
    const double b99 = mb ? mb->summary.p99 : lab::kNotMeasured;
    h += "<tr><td><code>" + escape_html(n) + "</code></td>" + status_cell(a) + status_cell(b);
    h += num_cell(ma ? lab::format_duration(a50) : "–") +
         num_cell(mb ? lab::format_duration(b50) : "–") + change_cell(a50, b50);
    h += num_cell(ma ? lab::format_duration(a99) : "–") +
         num_cell(mb ? lab::format_duration(b99) : "–") + change_cell(a99, b99) + "</tr>\n";
  }
  return h + "</table>\n";
}

}  // namespace doorbell::report
