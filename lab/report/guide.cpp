#include "lab/report/guide.h"

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <optional>
#include <regex>

#include <fmt/format.h>

#include "lab/common/format.h"

namespace doorbell::report {

std::vector<GuideMarker> parse_guide_markers(std::string_view text) {
  // The kind is a word ("p50", "p99.9", "ratio"), so a literal "<!--m:...-->" in
  // prose (the guide explains its markers) never starts a marker.
  static const std::regex marker(R"(<!--m:([a-z0-9.]+) ([^>]+?)-->(.*?)<!--/m-->)");
  std::vector<GuideMarker> out;
  using Iterator = std::regex_iterator<std::string_view::const_iterator>;
  for (auto it = Iterator(text.begin(), text.end(), marker); it != Iterator(); ++it) {
    const auto& m = *it;
    out.push_back({m[1].str(), m[2].str(), m[3].str(), static_cast<std::size_t>(m.position(0)),
                   static_cast<std::size_t>(m.length(0))});
  }
  return out;
}

namespace {

// A counter's median across repetitions: whole numbers as such, others with
// three significant figures ("1.33", "0.142").
std::string format_count(double value) {
  if (std::nearbyint(value) == value && std::fabs(value) < 1e15)
    return fmt::format("{:.0f}", value);
  return fmt::format("{:.3g}", value);
}

}  // namespace

std::string guide_figure(const lab::ResultsFile& results, const std::string& kind,
                         const std::string& source) {
  const char* const not_measured = "not measured";
  if (kind == "ratio") {
    for (const auto& r : results.ratios)
      if (r.name == source && std::isfinite(r.value)) return lab::format_ratio(r.value);
    return not_measured;
  }
  // "SCENARIO#NAME": a metric (or, for "counter", a counter) other than the
  // scenario's primary one.
  const std::size_t hash = source.rfind('#');
  const std::string scenario = hash == std::string::npos ? source : source.substr(0, hash);
  const std::string name = hash == std::string::npos ? "" : source.substr(hash + 1);
  const lab::ScenarioRecord* s = results.find(scenario);
  if (!s || !s->ok()) return not_measured;
  if (kind == "counter") {
    for (const auto& c : s->counters)
      if (c.name == name && std::isfinite(c.spread.median)) return format_count(c.spread.median);
    return not_measured;
  }
  const lab::MetricRecord* m = name.empty() ? s->primary() : s->metric(name);
  if (!m) return not_measured;
  const double value = m->summary.statistic(kind);
  if (!std::isfinite(value)) return not_measured;
  if (m->unit != "ns") return format_count(value) + (m->unit.empty() ? "" : " " + m->unit);
  return lab::format_duration(value);
}

namespace {

std::optional<double> figure_value(const std::string& figure, std::string& unit) {
  // A number, then an optional unit: "3.10 µs", "10.8x", "0.956 x", "2".
  static const std::regex number(R"(^\s*(-?[0-9]+(\.[0-9]*)?([eE][+-]?[0-9]+)?)\s*(\S*)\s*$)");
  std::smatch m;
  if (!std::regex_match(figure, m, number)) return std::nullopt;
  double v = std::strtod(m[1].str().c_str(), nullptr);
  unit = m[4].str();
  if (unit == "µs" || unit == "us") v *= 1e3, unit = "ns";
  if (unit == "ms") v *= 1e6, unit = "ns";
  if (unit == "s") v *= 1e9, unit = "ns";
  if (!std::isfinite(v)) return std::nullopt;
  return v;
}

}  // namespace

double figure_factor(const std::string& a, const std::string& b) {
  std::string ua, ub;
  const std::optional<double> va = figure_value(a, ua);
  const std::optional<double> vb = figure_value(b, ub);
  if (!va || !vb || ua != ub) return lab::kNotMeasured;
  if (*va == *vb) return 1.0;
  if (*va == 0 || *vb == 0 || (*va < 0) != (*vb < 0)) return lab::kNotMeasured;
  return std::max(*va / *vb, *vb / *va);
}

GuideCheck check_guide(std::string_view text, const lab::ResultsFile& results) {
  GuideCheck check;
  std::size_t last = 0;
  for (const auto& marker : parse_guide_markers(text)) {
    ++check.figures;
    const std::string want = guide_figure(results, marker.kind, marker.source);
    const bool measured = want != "not measured";
    const std::string where = marker.kind + " " + marker.source;
    if (!measured) {
      check.not_measured.push_back(where);
    } else if (marker.figure == want) {
      ++check.same;
    } else {
      const double factor = figure_factor(marker.figure, want);
      const std::string said = fmt::format("{}: the guide says \"{}\", the results give \"{}\"",
                                           where, marker.figure, want);
      if (factor <= kGuideTolerance)
        check.agree.push_back(
            said + fmt::format(" (within {:.0f}%: agrees)", (kGuideTolerance - 1) * 100));
      else if (std::isfinite(factor))
        check.differences.push_back(said + fmt::format(" ({} apart)", lab::format_ratio(factor)));
      else
        check.differences.push_back(said);
    }
    check.updated += text.substr(last, marker.offset - last);
    check.updated += "<!--m:" + marker.kind + " " + marker.source + "-->" +
                     (measured ? want : marker.figure) + "<!--/m-->";
    last = marker.offset + marker.length;
  }
  check.updated += text.substr(last);
  return check;
}

}  // namespace doorbell::report
