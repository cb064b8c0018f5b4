#include "lab/report/cells.h"

#include <cmath>

#include <fmt/format.h>

#include "lab/common/format.h"
#include "lab/report/runs.h"

namespace doorbell::report {

std::string escape_html(const std::string& text) {
  std::string out;
  out.reserve(text.size());
  for (char c : text) {
    switch (c) {
      case '&':
        out += "&amp;";
        break;
      case '<':
        out += "&lt;";
        break;
      case '>':
        out += "&gt;";
        break;
      case '"':
        out += "&quot;";
        break;
      default:
        out += c;
    }
  }
  return out;
}

std::string num_cell(const std::string& html) {
  return "<td class=\"n\">" + html + "</td>";
}

std::string status_cell(const lab::ScenarioRecord* scenario) {
  if (!scenario) return "<td>not in this run</td>";
  if (scenario->ok() && scenario->flagged()) {
    std::string warnings;
    for (const auto& w : scenario->warnings) warnings += "<br>WARNING: " + escape_html(w);
    return "<td class=\"flag\">ok, flagged" + warnings + "</td>";
  }
  if (scenario->ok()) return "<td>ok</td>";
  const std::string status = lab::status_name(scenario->status);
  const std::string cls = scenario->status == lab::ScenarioStatus::skipped ? "skip" : "fail";
  return "<td class=\"" + cls + "\">" + escape_html(status) +
         (scenario->reason.empty() ? "" : ": " + escape_html(scenario->reason)) + "</td>";
}

std::string change_cell(double a, double b, bool flagged) {
  if (!positive(a) || !std::isfinite(b)) return num_cell("–");
  double r = b / a;
  const char* cls = r > 1.1 ? "worse" : r < 0.9 ? "better" : "";
  if (flagged)
    return fmt::format(
        "<td class=\"n {} flag\" title=\"built from a flagged row, or from a percentile its "
        "count cannot support\">{}!</td>",
        cls, lab::format_ratio(r));
  return fmt::format("<td class=\"n {}\">{}</td>", cls, lab::format_ratio(r));
}

}  // namespace doorbell::report
