// The HTML report (report.h). Layout of this file: reading the results into
// plain structs, building one gnuplot script per plot, running gnuplot, and
// writing the page around the SVGs it drew.
#include "apps/doorbell/report.h"

#include <fcntl.h>
#include <spawn.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <limits>
#include <map>
#include <set>
#include <sstream>
#include <stdexcept>
#include <system_error>
#include <utility>

#include <fmt/format.h>

extern char** environ;

namespace doorbell::report {
namespace {

namespace fs = std::filesystem;

constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();

// ------------------------------------------------------------- the data

struct Bucket {
  double lower = 0, upper = 0;
  double count = 0;
};

struct Metric {
  std::string name;
  double count = 0, min = kNaN, max = kNaN, mean = kNaN;
  double p50 = kNaN, p90 = kNaN, p99 = kNaN, p999 = kNaN;
  std::vector<Bucket> histogram;
};

struct Scenario {
  std::string name, group, title, description, status, reason, primary;
  std::vector<std::pair<std::string, std::string>> params;
  std::map<std::string, Metric> metrics;
  std::vector<std::string> metric_order;
  std::vector<std::pair<std::string, std::string>> counters;  // name, "median (min–max)"
  std::vector<std::string> notes;

  const Metric* metric(const std::string& n) const {
    auto it = metrics.find(n);
    return it == metrics.end() ? nullptr : &it->second;
  }
  const Metric* primary_metric() const {
    if (const Metric* m = metric(primary)) return m;
    return metric_order.empty() ? nullptr : metric(metric_order.front());
  }
  bool ok() const { return status == "ok"; }
  std::string param(const std::string& n) const {
    for (const auto& [k, v] : params)
      if (k == n) return v;
    return {};
  }
};

struct Run {
  std::string label;
  const nlohmann::json* json = nullptr;
  std::vector<Scenario> scenarios;
  std::map<std::string, std::size_t> by_name;

  const Scenario* find(const std::string& name) const {
    auto it = by_name.find(name);
    return it == by_name.end() ? nullptr : &scenarios[it->second];
  }
};

double number(const nlohmann::json& j, const char* key) {
  if (!j.is_object()) return kNaN;
  auto it = j.find(key);
  if (it == j.end() || !it->is_number()) return kNaN;
  return it->get<double>();
}

std::string text(const nlohmann::json& j, const char* key) {
  if (!j.is_object()) return {};
  auto it = j.find(key);
  if (it == j.end() || it->is_null()) return {};
  if (it->is_string()) return it->get<std::string>();
  return it->dump();
}

std::string value_text(const nlohmann::json& v) {
  if (v.is_string()) return v.get<std::string>();
  if (v.is_array()) {
    std::string out;
    for (const auto& e : v) {
      if (!out.empty()) out += ", ";
      out += value_text(e);
    }
    return out;
  }
  if (v.is_null()) return "";
  return v.dump();
}

bool positive(double v) {
  return std::isfinite(v) && v > 0;
}

// Parses a whole string as a number; nullopt-like NaN otherwise.
double numeric_param(const std::string& s) {
  if (s.empty()) return kNaN;
  char* end = nullptr;
  errno = 0;
  double v = std::strtod(s.c_str(), &end);
  if (errno != 0 || end == s.c_str() || *end != '\0' || !std::isfinite(v)) return kNaN;
  return v;
}

Metric read_metric(const std::string& name, const nlohmann::json& j) {
  Metric m;
  m.name = name;
  m.count = number(j, "count");
  m.min = number(j, "min");
  m.max = number(j, "max");
  m.mean = number(j, "mean");
  m.p50 = number(j, "p50");
  m.p90 = number(j, "p90");
  m.p99 = number(j, "p99");
  m.p999 = number(j, "p99.9");
  auto h = j.find("histogram");
  if (h != j.end() && h->is_array()) {
    for (const auto& b : *h) {
      if (!b.is_array() || b.size() < 3 || !b[0].is_number() || !b[1].is_number() ||
          !b[2].is_number())
        continue;
      Bucket bucket{b[0].get<double>(), b[1].get<double>(), b[2].get<double>()};
      if (bucket.count > 0) m.histogram.push_back(bucket);
    }
  }
  return m;
}

Run read_run(const nlohmann::json& j, std::string label) {
  Run run;
  run.label = std::move(label);
  run.json = &j;
  for (const auto& s : j.at("scenarios")) {
    Scenario sc;
    sc.name = text(s, "name");
    sc.group = text(s, "group");
    if (sc.group.empty()) sc.group = sc.name.substr(0, sc.name.find('/'));
    sc.title = text(s, "title");
    sc.description = text(s, "description");
    sc.status = text(s, "status");
    if (sc.status.empty()) sc.status = "ok";
    sc.reason = text(s, "reason");
    sc.primary = text(s, "primary_metric");
    if (sc.primary.empty()) sc.primary = "latency";
    if (auto p = s.find("params"); p != s.end() && p->is_object())
      for (const auto& [k, v] : p->items()) sc.params.emplace_back(k, value_text(v));
    if (auto ms = s.find("metrics"); ms != s.end() && ms->is_object())
      for (const auto& [k, v] : ms->items()) {
        sc.metrics[k] = read_metric(k, v);
        sc.metric_order.push_back(k);
      }
    if (auto cs = s.find("counters"); cs != s.end() && cs->is_object())
      for (const auto& [k, v] : cs->items()) {
        double med = number(v, "median"), lo = number(v, "min"), hi = number(v, "max");
        std::string shown = std::isfinite(med) ? fmt::format("{:.4g}", med) : value_text(v);
        if (std::isfinite(lo) && std::isfinite(hi) && lo != hi)
          shown += fmt::format(" ({:.4g}–{:.4g})", lo, hi);
        sc.counters.emplace_back(k, shown);
      }
    if (auto ns = s.find("notes"); ns != s.end() && ns->is_array())
      for (const auto& n : *ns) sc.notes.push_back(value_text(n));
    run.by_name[sc.name] = run.scenarios.size();
    run.scenarios.push_back(std::move(sc));
  }
  return run;
}

// ------------------------------------------------------------- formatting

std::string duration(double ns) {
  if (!std::isfinite(ns)) return "–";
  double a = std::fabs(ns);
  if (a < 10) return fmt::format("{:.2f} ns", ns);
  if (a < 1e3) return fmt::format("{:.0f} ns", ns);
  if (a < 1e6) return fmt::format("{:.3g} µs", ns / 1e3);
  if (a < 1e9) return fmt::format("{:.3g} ms", ns / 1e6);
  return fmt::format("{:.3g} s", ns / 1e9);
}

std::string ratio_text(double r) {
  if (!std::isfinite(r)) return "–";
  if (r >= 100) return fmt::format("{:.0f}x", r);
  return fmt::format("{:.3g}x", r);
}

std::string escape_html(const std::string& s) {
  std::string out;
  out.reserve(s.size());
  for (char c : s) {
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

// A gnuplot double-quoted string.
std::string gp_string(const std::string& s) {
  std::string out = "\"";
  for (char c : s) {
    if (c == '"' || c == '\\') out += '\\';
    if (c == '\n') {
      out += "\\n";
      continue;
    }
    out += c;
  }
  return out + "\"";
}

// A tic label: a gnuplot string that is also a format, so '%' doubles.
std::string gp_tic(const std::string& s) {
  std::string doubled;
  for (char c : s) {
    doubled += c;
    if (c == '%') doubled += '%';
  }
  return gp_string(doubled);
}

std::string base64(const std::string& in) {
  static const char* table = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
  std::string out;
  out.reserve((in.size() + 2) / 3 * 4);
  std::size_t i = 0;
  for (; i + 2 < in.size(); i += 3) {
    uint32_t v = (uint8_t(in[i]) << 16) | (uint8_t(in[i + 1]) << 8) | uint8_t(in[i + 2]);
    out += table[v >> 18];
    out += table[(v >> 12) & 63];
    out += table[(v >> 6) & 63];
    out += table[v & 63];
  }
  if (i + 1 == in.size()) {
    uint32_t v = uint8_t(in[i]) << 16;
    out += table[v >> 18];
    out += table[(v >> 12) & 63];
    out += "==";
  } else if (i + 2 == in.size()) {
    uint32_t v = (uint8_t(in[i]) << 16) | (uint8_t(in[i + 1]) << 8);
    out += table[v >> 18];
    out += table[(v >> 12) & 63];
    out += table[(v >> 6) & 63];
    out += '=';
  }
  return out;
}

// A file-name-safe form of a name.
std::string slug(const std::string& s) {
  std::string out;
  for (char c : s) {
    if (std::isalnum(static_cast<unsigned char>(c)) || c == '-' || c == '.')
      out += c;
    else if (!out.empty() && out.back() != '_')
      out += '_';
  }
  while (!out.empty() && (out.back() == '_' || out.back() == '.')) out.pop_back();
  return out.empty() ? "x" : out;
}

// The part of a scenario name after "group/".
std::string short_name(const std::string& name) {
  auto slash = name.find('/');
  return slash == std::string::npos ? name : name.substr(slash + 1);
}

// ------------------------------------------------------------- plots

const char* const kColors[] = {"#1f77b4", "#d62728", "#2ca02c", "#ff7f0e",
                               "#9467bd", "#8c564b", "#e377c2", "#17becf"};
constexpr std::size_t kNumColors = sizeof(kColors) / sizeof(kColors[0]);
const char* const kRunColors[] = {"#4477aa", "#ee6677"};

struct Plot {
  std::string file;     // "ladder_bars.svg"
  std::string title;    // shown above the image
  std::string caption;  // what it shows, how to read it
  std::string script;   // the gnuplot commands after "set output"
  int width = 900, height = 480;
  std::string svg;    // filled by render
  std::string error;  // filled by render on failure
};

std::string terminal(const Plot& p, const std::string& output) {
  return fmt::format(
      "set terminal svg size {},{} noenhanced font \"sans,11\" background rgb \"white\"\n"
      "set output '{}'\nset encoding utf8\nset key outside right top\nset grid ytics mytics lc "
      "rgb \"#dddddd\"\n",
      p.width, p.height, output);
}

void datablock(std::string& script, const std::string& name, const std::string& rows) {
  script += "$" + name + " << EOD\n" + rows + "EOD\n";
}

std::string run_label_suffix(const std::vector<Run>& runs, std::size_t r) {
  return runs.size() > 1 ? " (" + runs[r].label + ")" : "";
}

// p50 bars with p99 whiskers, one bar per scenario (two side by side when
// comparing), log scale.
void bar_plot(const std::string& group, const std::vector<std::string>& names,
              const std::vector<Run>& runs, std::vector<Plot>& plots) {
  std::vector<std::string> shown;
  double lo = std::numeric_limits<double>::infinity(), hi = 0;
  for (const auto& n : names)
    for (const auto& run : runs)
      if (const Scenario* s = run.find(n); s && s->ok())
        if (const Metric* m = s->primary_metric(); m && positive(m->p50)) {
          if (shown.empty() || shown.back() != n) shown.push_back(n);
          lo = std::min(lo, m->p50);
          hi = std::max({hi, m->p50, positive(m->p99) ? m->p99 : m->p50});
        }
  if (shown.empty()) return;
  Plot p;
  p.file = slug(group) + "_p50_bars.svg";
  p.title = group + ": p50 of each scenario's primary metric, p99 whisker";
  p.caption =
      "Bar: the median (p50) of the scenario's primary metric over all repetitions; whisker: up "
      "to p99. Log scale: each grid step is 10x." +
      std::string(runs.size() > 1
                      ? " Left bar: " + runs[0].label + ", right bar: " + runs[1].label + "."
                      : "");
  p.width = std::max(900, 60 * static_cast<int>(shown.size()) + 300);
  p.height = 560;
  double floor = std::pow(10.0, std::floor(std::log10(lo / 2)));
  double top = std::pow(10.0, std::ceil(std::log10(hi * 1.5)));
  std::string s;
  double width = runs.size() > 1 ? 0.18 : 0.3;
  for (std::size_t r = 0; r < runs.size(); ++r) {
    std::string rows;
    double offset = runs.size() > 1 ? (r == 0 ? -0.2 : 0.2) : 0.0;
    for (std::size_t i = 0; i < shown.size(); ++i) {
      const Scenario* sc = runs[r].find(shown[i]);
      if (!sc || !sc->ok()) continue;
      const Metric* m = sc->primary_metric();
      if (!m || !positive(m->p50)) continue;
      double p99 = positive(m->p99) ? m->p99 : m->p50;
      rows += fmt::format("{} {:.6g} {:.6g} {:.6g} {:.6g} {:.6g}\n", i + offset, m->p50,
                          i + offset - width, i + offset + width, floor, p99);
    }
    datablock(s, "bars" + std::to_string(r), rows.empty() ? "-100 1 -100 -100 1 1\n" : rows);
  }
  s += "set logscale y\nset format y \"%.0s%cs\"\n";
  s += fmt::format("set yrange [{:.6g}:{:.6g}]\nset xrange [-0.7:{}]\n", floor * 1e-9, top * 1e-9,
                   shown.size() - 0.3);
  // The y values are seconds so that gnuplot's %c prefix prints ns, µs, ms.
  s += "set ylabel \"time (log scale)\"\nset style fill solid 0.75 border rgb \"#333333\"\n";
  s += "set key inside left top\nset xtics rotate by 90 right nomirror (";
  for (std::size_t i = 0; i < shown.size(); ++i)
    s += (i ? ", " : "") + gp_tic(short_name(shown[i])) + " " + std::to_string(i);
  s += ")\nset grid noxtics\n";
  s += "plot ";
  for (std::size_t r = 0; r < runs.size(); ++r) {
    std::string t = runs.size() > 1 ? runs[r].label + " p50" : std::string("p50");
    s += fmt::format(
        "{}$bars{} using 1:($2*1e-9):3:4:($5*1e-9):($2*1e-9) with boxxyerror lc rgb \"{}\" title "
        "{}, $bars{} using 1:($2*1e-9):($2*1e-9):($6*1e-9) with yerrorbars lc rgb \"#222222\" pt 0 "
        "{}",
        r ? ", " : "", r, kRunColors[r], gp_string(t), r, r ? "notitle" : "title \"p99 whisker\"");
  }
  s += "\n";
  p.script = s;
  plots.push_back(std::move(p));
}

// Percentile curves of one metric across the scenarios of a group, in
// chunks so that each chart stays readable.
void percentile_plots(const std::string& group, const std::vector<std::string>& names,
                      const std::vector<Run>& runs, std::vector<Plot>& plots) {
  // Metric names in order of first appearance.
  std::vector<std::string> metric_names;
  for (const auto& n : names)
    for (const auto& run : runs)
      if (const Scenario* s = run.find(n); s && s->ok())
        for (const auto& m : s->metric_order)
          if (std::find(metric_names.begin(), metric_names.end(), m) == metric_names.end())
            metric_names.push_back(m);
  for (const auto& metric : metric_names) {
    std::vector<std::string> with;
    for (const auto& n : names)
      for (const auto& run : runs)
        if (const Scenario* s = run.find(n); s && s->ok())
          if (const Metric* m = s->metric(metric); m && !m->histogram.empty()) {
            with.push_back(n);
            break;
          }
    const std::size_t chunk = runs.size() > 1 ? 4 : 8;
    for (std::size_t first = 0; first < with.size(); first += chunk) {
      std::size_t last = std::min(with.size(), first + chunk);
      Plot p;
      std::size_t part = first / chunk + 1, parts = (with.size() + chunk - 1) / chunk;
      p.file = slug(group) + "_percentiles_" + slug(metric) +
               (parts > 1 ? "_" + std::to_string(part) : "") + ".svg";
      p.title = group + ": percentiles of \"" + metric + "\"" +
                (parts > 1 ? fmt::format(" ({} of {})", part, parts) : "");
      p.caption =
          "From each scenario's histogram buckets (all repetitions merged). x: the percentile, "
          "spaced as 1/(1-p) so the tail spreads out; y: the value at that percentile (the upper "
          "edge of its bucket), log scale." +
          std::string(runs.size() > 1
                          ? " Solid: " + runs[0].label + "; dashed: " + runs[1].label + "."
                          : "");
      std::string s;
      std::string plot_cmd;
      double ylo = std::numeric_limits<double>::infinity(), yhi = 0;
      int block = 0;
      for (std::size_t i = first; i < last; ++i) {
        for (std::size_t r = 0; r < runs.size(); ++r) {
          const Scenario* sc = runs[r].find(with[i]);
          if (!sc || !sc->ok()) continue;
          const Metric* m = sc->metric(metric);
          if (!m || m->histogram.empty()) continue;
          double total = 0;
          for (const auto& b : m->histogram) total += b.count;
          if (total <= 0) continue;
          std::string rows;
          double cum = 0;
          double first_value = std::max(m->histogram.front().lower, 1e-3);
          rows += fmt::format("1 {:.6g}\n", first_value * 1e-9);
          ylo = std::min(ylo, first_value);
          for (const auto& b : m->histogram) {
            cum += b.count;
            double pr = cum / total;
            if (pr >= 1.0) pr = 1.0 - 0.5 / total;
            double value = b.upper;
            if (positive(m->max)) value = std::min(value, m->max);
            value = std::max(value, 1e-3);
            rows += fmt::format("{:.6g} {:.6g}\n", 1.0 / (1.0 - pr), value * 1e-9);
            yhi = std::max(yhi, value);
          }
          std::string name = "p" + std::to_string(block++);
          datablock(s, name, rows);
          plot_cmd += fmt::format("{}${} using 1:2 with steps lw 2 dt {} lc rgb \"{}\" title {}",
                                  plot_cmd.empty() ? "" : ", ", name, r == 0 ? 1 : 2,
                                  kColors[(i - first) % kNumColors],
                                  gp_string(short_name(with[i]) + run_label_suffix(runs, r)));
        }
      }
      if (plot_cmd.empty()) continue;
      s += "set logscale x\nset logscale y\nset format y \"%.0s%cs\"\n";
      // Tic labels are format strings to gnuplot: a percent sign is "%%".
      s += "set xtics (\"0%%\" 1, \"50%%\" 2, \"90%%\" 10, \"99%%\" 100, \"99.9%%\" 1000, "
           "\"99.99%%\" 10000, \"99.999%%\" 100000, \"99.9999%%\" 1000000)\n";
      s += "set xlabel \"percentile\"\nset ylabel " + gp_string(metric + " (log scale)") + "\n";
      s += fmt::format("set yrange [{:.6g}:{:.6g}]\n", ylo * 0.5e-9, yhi * 2e-9);
      s += "set key outside right top\n";
      s += "plot " + plot_cmd + "\n";
      p.script = s;
      p.width = 1000;
      plots.push_back(std::move(p));
    }
  }
}

// A scaling curve: p50 and p99 of the primary metric against each numeric
// param, one series per combination of the other params.
void scaling_plots(const std::string& group, const std::vector<std::string>& names,
                   const std::vector<Run>& runs, std::vector<Plot>& plots) {
  std::vector<std::string> param_names;
  for (const auto& n : names)
    for (const auto& run : runs)
      if (const Scenario* s = run.find(n))
        for (const auto& [k, v] : s->params)
          if (std::isfinite(numeric_param(v)) &&
              std::find(param_names.begin(), param_names.end(), k) == param_names.end())
            param_names.push_back(k);
  for (const auto& param : param_names) {
    // series key -> per run -> (x, p50, p99)
    std::map<std::string, std::vector<std::vector<std::array<double, 3>>>> series;
    std::vector<std::string> order;
    for (const auto& n : names) {
      for (std::size_t r = 0; r < runs.size(); ++r) {
        const Scenario* s = runs[r].find(n);
        if (!s || !s->ok()) continue;
        double x = numeric_param(s->param(param));
        if (!std::isfinite(x)) continue;
        const Metric* m = s->primary_metric();
        if (!m || !positive(m->p50)) continue;
        std::string key = n.substr(0, n.find(':'));
        for (const auto& [k, v] : s->params)
          if (k != param) key += " " + k + "=" + v;
        auto& entry = series[key];
        if (entry.empty()) {
          entry.resize(runs.size());
          order.push_back(key);
        }
        entry[r].push_back({x, m->p50, positive(m->p99) ? m->p99 : m->p50});
      }
    }
    std::vector<std::string> keep;
    for (const auto& key : order) {
      std::size_t most = 0;
      for (auto& pts : series[key]) {
        std::sort(pts.begin(), pts.end());
        most = std::max(most, pts.size());
      }
      if (most >= 2) keep.push_back(key);
    }
    const std::size_t chunk = runs.size() > 1 ? 3 : 6;
    for (std::size_t first = 0; first < keep.size(); first += chunk) {
      std::size_t last = std::min(keep.size(), first + chunk);
      std::size_t part = first / chunk + 1, parts = (keep.size() + chunk - 1) / chunk;
      Plot p;
      p.file = slug(group) + "_scaling_" + slug(param) +
               (parts > 1 ? "_" + std::to_string(part) : "") + ".svg";
      p.title = group + ": primary metric against " + param +
                (parts > 1 ? fmt::format(" ({} of {})", part, parts) : "");
      p.caption =
          "Solid with circles: p50; dashed with triangles: p99, per combination of the "
          "other params." +
          std::string(runs.size() > 1 ? " Thick lines: " + runs[0].label +
                                            "; thin lines: " + runs[1].label + "."
                                      : "");
      p.width = 1000;
      std::string s, cmd;
      double xlo = std::numeric_limits<double>::infinity(), xhi = 0;
      int block = 0;
      for (std::size_t i = first; i < last; ++i) {
        for (std::size_t r = 0; r < runs.size(); ++r) {
          const auto& pts = series[keep[i]][r];
          if (pts.empty()) continue;
          std::string rows;
          for (const auto& pt : pts) {
            rows += fmt::format("{:.6g} {:.6g} {:.6g}\n", pt[0], pt[1] * 1e-9, pt[2] * 1e-9);
            xlo = std::min(xlo, pt[0]);
            xhi = std::max(xhi, pt[0]);
          }
          std::string name = "s" + std::to_string(block++);
          datablock(s, name, rows);
          const char* color = kColors[(i - first) % kNumColors];
          std::string label = keep[i] + run_label_suffix(runs, r);
          cmd += fmt::format(
              "{}${} using 1:2 with linespoints lw {} pt 7 dt 1 lc rgb \"{}\" title {}, ${} using "
              "1:3 with linespoints lw {} pt 9 dt 2 lc rgb \"{}\" notitle",
              cmd.empty() ? "" : ", ", name, r == 0 ? 2 : 1, color, gp_string(label + " p50"), name,
              r == 0 ? 2 : 1, color);
        }
      }
      if (cmd.empty()) continue;
      if (xlo > 0 && xhi / xlo >= 8) s += "set logscale x 2\n";
      s += "set logscale y\nset format y \"%.0s%cs\"\n";
      s += "set xlabel " + gp_string(param) + "\nset ylabel \"time (log scale)\"\n";
      s += "set key outside right top\nset offsets graph 0.05, graph 0.05, 0, 0\n";
      s += "plot " + cmd + "\n";
      p.script = s;
      plots.push_back(std::move(p));
    }
  }
}

// O_e2e broken into its parts, stacked, against threads; one chart per
// policy (and per other param combination), per run.
void breakdown_plots(const std::string& group, const std::vector<std::string>& names,
                     const std::vector<Run>& runs, std::vector<Plot>& plots) {
  static const std::vector<std::string> kParts = {"send", "delay", "recv", "hndl"};
  for (std::size_t r = 0; r < runs.size(); ++r) {
    // key (other params) -> threads -> scenario
    std::map<std::string, std::map<double, const Scenario*>> by_key;
    std::vector<std::string> order;
    for (const auto& n : names) {
      const Scenario* s = runs[r].find(n);
      if (!s || !s->ok()) continue;
      double threads = numeric_param(s->param("threads"));
      if (!std::isfinite(threads)) continue;
      int parts = 0;
      for (const auto& part : kParts)
        if (s->metric(part)) ++parts;
      if (parts < 2) continue;
      std::string key;
      for (const auto& [k, v] : s->params)
        if (k != "threads") key += (key.empty() ? "" : " ") + k + "=" + v;
      std::string what = short_name(n.substr(0, n.find(':')));
      key = what + (key.empty() ? "" : " " + key);
      if (!by_key.count(key)) order.push_back(key);
      by_key[key][threads] = s;
    }
    for (const auto& key : order) {
      const auto& rows_by_threads = by_key[key];
      Plot p;
      p.file = slug(group) + "_breakdown_" + slug(key) +
               (runs.size() > 1 ? "_" + slug(runs[r].label) : "") + ".svg";
      p.title =
          group + ": O_e2e split into send, delay, recv, hndl — " + key + run_label_suffix(runs, r);
      p.caption =
          "Stacked p50 of each part (µs, linear scale) against the number of threads; the black "
          "line is the p50 of the measured end-to-end time, which need not equal the sum of "
          "medians.";
      std::string rows;
      for (const auto& [threads, s] : rows_by_threads) {
        rows += fmt::format("{:g}", threads);
        for (const auto& part : kParts) {
          const Metric* m = s->metric(part);
          rows += fmt::format(" {:.6g}", m && std::isfinite(m->p50) ? m->p50 / 1e3 : 0.0);
        }
        const Metric* e2e = s->metric("e2e");
        rows += fmt::format(" {:.6g}\n", e2e && std::isfinite(e2e->p50) ? e2e->p50 / 1e3 : kNaN);
      }
      std::string s;
      datablock(s, "b", rows);
      s += "set style data histograms\nset style histogram rowstacked\nset boxwidth 0.6\n";
      s += "set style fill solid 0.8 border rgb \"#333333\"\nset yrange [0:*]\n";
      s += "set xlabel \"threads\"\nset ylabel \"µs (p50)\"\nset grid noxtics\n";
      s += fmt::format(
          "plot $b using 2:xtic(1) lc rgb \"{}\" title \"send\", $b using 3 lc rgb \"{}\" title "
          "\"delay\", $b using 4 lc rgb \"{}\" title \"recv\", $b using 5 lc rgb \"{}\" title "
          "\"hndl\", $b using 0:6 with linespoints lc rgb \"black\" lw 2 pt 7 title \"e2e p50\"\n",
          kColors[0], kColors[1], kColors[2], kColors[3]);
      p.script = s;
      plots.push_back(std::move(p));
    }
  }
}

// Runs gnuplot on each plot's script in a scratch directory. Returns false
// when gnuplot is not installed.
bool render(std::vector<Plot>& plots, const ReportOptions& options) {
  const char* tmp = std::getenv("TMPDIR");
  std::string pattern = std::string(tmp && *tmp ? tmp : "/tmp") + "/doorbell-report-XXXXXX";
  std::vector<char> buf(pattern.begin(), pattern.end());
  buf.push_back('\0');
  if (!::mkdtemp(buf.data())) throw std::system_error(errno, std::generic_category(), "mkdtemp");
  fs::path dir(buf.data());
  bool found = true;
  for (auto& p : plots) {
    fs::path script = dir / (p.file + ".gp");
    {
      std::ofstream out(script);
      out << terminal(p, (dir / p.file).string()) << p.script;
    }
    fs::path log = dir / (p.file + ".log");
    posix_spawn_file_actions_t actions;
    posix_spawn_file_actions_init(&actions);
    posix_spawn_file_actions_addopen(&actions, 0, "/dev/null", O_RDONLY, 0);
    posix_spawn_file_actions_addopen(&actions, 1, log.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
    posix_spawn_file_actions_adddup2(&actions, 1, 2);
    std::string gp = options.gnuplot;
    std::string script_path = script.string();
    std::vector<char*> argv = {gp.data(), script_path.data(), nullptr};
    pid_t pid = -1;
    int rc = ::posix_spawnp(&pid, gp.c_str(), &actions, nullptr, argv.data(), environ);
    posix_spawn_file_actions_destroy(&actions);
    if (rc == ENOENT) {
      found = false;
      break;
    }
    if (rc != 0) {
      p.error = std::string("cannot start gnuplot: ") + std::strerror(rc);
      continue;
    }
    int status = 0;
    while (::waitpid(pid, &status, 0) < 0) {
      if (errno != EINTR) throw std::system_error(errno, std::generic_category(), "waitpid");
    }
    std::ifstream in(dir / p.file, std::ios::binary);
    std::stringstream content;
    if (in) content << in.rdbuf();
    p.svg = content.str();
    if (!WIFEXITED(status) || WEXITSTATUS(status) != 0 || p.svg.find("<svg") == std::string::npos) {
      std::ifstream lf(log);
      std::stringstream msg;
      msg << lf.rdbuf();
      std::string m = msg.str();
      while (!m.empty() && (m.back() == '\n' || m.back() == ' ')) m.pop_back();
      p.error = "gnuplot failed: " + m;
      p.svg.clear();
    }
  }
  if (!options.plots_dir.empty() && found) {
    std::error_code ec;
    fs::create_directories(options.plots_dir, ec);
    if (ec) throw std::system_error(ec, "cannot create " + options.plots_dir);
    for (auto& p : plots) {
      if (!p.svg.empty())
        fs::copy_file(dir / p.file, fs::path(options.plots_dir) / p.file,
                      fs::copy_options::overwrite_existing);
      fs::copy_file(dir / (p.file + ".gp"), fs::path(options.plots_dir) / (p.file + ".gp"),
                    fs::copy_options::overwrite_existing);
    }
  }
  std::error_code ec;
  fs::remove_all(dir, ec);
  return found;
}

// ------------------------------------------------------------- the page

const char* kStyle = R"(
body{font-family:sans-serif;margin:1.5em auto;max-width:1200px;padding:0 1em;color:#222}
h1{font-size:1.6em}h2{border-bottom:1px solid #ccc;padding-bottom:.2em;margin-top:2em}
table{border-collapse:collapse;margin:.6em 0;font-size:.9em}
th,td{border:1px solid #ccc;padding:.25em .5em;text-align:left;vertical-align:top}
th{background:#f0f0f0}td.n{text-align:right;font-variant-numeric:tabular-nums;white-space:nowrap}
figure{margin:1em 0}figcaption{font-size:.85em;color:#555;max-width:60em}
img.plot{max-width:100%;height:auto;border:1px solid #eee}
.skip{color:#8a6d00}.fail{color:#b00}.worse{color:#b00}.better{color:#080}
.note{font-size:.85em;color:#555}code{background:#f4f4f4;padding:0 .2em}
nav a{margin-right:.8em}
)";

// Marks every plot image as loaded or not once the page has loaded, so a
// headless browser's DOM dump says whether each plot rendered.
const char* kCheckScript = R"(
window.addEventListener('load', function () {
  var imgs = document.querySelectorAll('img.plot'), ok = 0, bad = [];
  imgs.forEach(function (i) {
    var loaded = i.complete && i.naturalWidth > 0;
    i.setAttribute('data-loaded', loaded ? '1' : '0');
    if (loaded) ok++; else bad.push(i.getAttribute('data-plot'));
  });
  document.body.setAttribute('data-plots-total', String(imgs.length));
  document.body.setAttribute('data-plots-loaded', String(ok));
  document.body.setAttribute('data-plots-failed', bad.join(' '));
  var s = document.getElementById('plot-check');
  if (s) s.textContent = ok + ' of ' + imgs.length + ' plots loaded' +
                         (bad.length ? '; not loaded: ' + bad.join(', ') : '') + '.';
});
)";

std::string figure(const Plot& p) {
  if (p.svg.empty())
    return fmt::format("<p class=\"fail\">Plot {} could not be drawn: {}</p>\n",
                       escape_html(p.file), escape_html(p.error));
  return fmt::format(
      "<figure><figcaption><b>{}</b></figcaption>\n<img class=\"plot\" data-plot=\"{}\" "
      "alt=\"{}\" width=\"{}\" height=\"{}\" src=\"data:image/svg+xml;base64,{}\">\n"
      "<figcaption>{}</figcaption></figure>\n",
      escape_html(p.title), escape_html(p.file), escape_html(p.title), p.width, p.height,
      base64(p.svg), escape_html(p.caption));
}

std::string status_cell(const Scenario* s) {
  if (!s) return "<td>not in this run</td>";
  if (s->status == "ok") return "<td>ok</td>";
  std::string cls = s->status == "skipped" ? "skip" : "fail";
  return "<td class=\"" + cls + "\">" + escape_html(s->status) +
         (s->reason.empty() ? "" : ": " + escape_html(s->reason)) + "</td>";
}

std::string num_cell(const std::string& v) {
  return "<td class=\"n\">" + v + "</td>";
}

// B/A with a colour: for times, above 1 means B is slower.
std::string change_cell(double a, double b) {
  if (!positive(a) || !std::isfinite(b)) return num_cell("–");
  double r = b / a;
  const char* cls = r > 1.1 ? "worse" : r < 0.9 ? "better" : "";
  return fmt::format("<td class=\"n {}\">{}</td>", cls, ratio_text(r));
}

std::string scenario_table(const std::vector<std::string>& names, const std::vector<Run>& runs) {
  std::string h = "<table><tr><th>scenario</th>";
  if (runs.size() == 1) {
    h += "<th>status</th><th>metric</th><th>p50</th><th>p90</th><th>p99</th><th>max</th><th>"
         "samples</th><th>counters (median, min–max over repetitions)</th><th>what one sample "
         "times, notes</th></tr>\n";
    for (const auto& n : names) {
      const Scenario* s = runs[0].find(n);
      const Metric* m = s ? s->primary_metric() : nullptr;
      h += "<tr><td><code>" + escape_html(n) + "</code>" +
           (s && !s->title.empty() ? "<br>" + escape_html(s->title) : "") + "</td>" +
           status_cell(s);
      h += "<td>" + (m ? escape_html(m->name) : "") + "</td>";
      h += num_cell(m ? duration(m->p50) : "–") + num_cell(m ? duration(m->p90) : "–") +
           num_cell(m ? duration(m->p99) : "–") + num_cell(m ? duration(m->max) : "–") +
           num_cell(m && std::isfinite(m->count) ? fmt::format("{:.0f}", m->count) : "–");
      std::string counters;
      if (s)
        for (const auto& [k, v] : s->counters)
          counters += escape_html(k) + "=" + escape_html(v) + "<br>";
      h += "<td>" + counters + "</td><td>";
      if (s) {
        h += escape_html(s->description);
        for (const auto& note : s->notes)
          h += "<br><span class=\"note\">" + escape_html(note) + "</span>";
        if (s->metric_order.size() > 1) {
          h += "<br><span class=\"note\">other metrics: ";
          for (const auto& mn : s->metric_order) {
            if (m && mn == m->name) continue;
            const Metric* o = s->metric(mn);
            h += escape_html(mn) + " p50 " + duration(o->p50) + ", p99 " + duration(o->p99) + "; ";
          }
          h += "</span>";
        }
      }
      h += "</td></tr>\n";
    }
  } else {
    h += fmt::format(
        "<th>status {0}</th><th>status {1}</th><th>p50 {0}</th><th>p50 {1}</th><th>p50 "
        "{1}/{0}</th><th>p99 {0}</th><th>p99 {1}</th><th>p99 {1}/{0}</th></tr>\n",
        escape_html(runs[0].label), escape_html(runs[1].label));
    for (const auto& n : names) {
      const Scenario* a = runs[0].find(n);
      const Scenario* b = runs[1].find(n);
      const Metric* ma = a && a->ok() ? a->primary_metric() : nullptr;
      const Metric* mb = b && b->ok() ? b->primary_metric() : nullptr;
      h += "<tr><td><code>" + escape_html(n) + "</code></td>" + status_cell(a) + status_cell(b);
      h += num_cell(ma ? duration(ma->p50) : "–") + num_cell(mb ? duration(mb->p50) : "–") +
           change_cell(ma ? ma->p50 : kNaN, mb ? mb->p50 : kNaN);
      h += num_cell(ma ? duration(ma->p99) : "–") + num_cell(mb ? duration(mb->p99) : "–") +
           change_cell(ma ? ma->p99 : kNaN, mb ? mb->p99 : kNaN) + "</tr>\n";
    }
  }
  return h + "</table>\n";
}

std::string ratios_section(const std::vector<Run>& runs) {
  std::string h = "<h2 id=\"ratios\">Ratios that matter, beside the published figures</h2>\n";
  // Union of ratio names in order.
  std::vector<std::string> names;
  std::vector<std::vector<const nlohmann::json*>> found;
  for (std::size_t r = 0; r < runs.size(); ++r) {
    auto it = runs[r].json->find("ratios");
    if (it == runs[r].json->end() || !it->is_array()) continue;
    for (const auto& ratio : *it) {
      std::string n = text(ratio, "name");
      auto pos = std::find(names.begin(), names.end(), n);
      std::size_t idx = pos - names.begin();
      if (pos == names.end()) {
        names.push_back(n);
        found.emplace_back(runs.size(), nullptr);
      }
      found[idx][r] = &ratio;
    }
  }
  if (names.empty()) return h + "<p>No ratios in these results.</p>\n";
  h += "<table><tr><th>ratio</th><th>statistic</th>";
  for (const auto& run : runs)
    h += "<th>" + escape_html(runs.size() > 1 ? run.label : "this machine") + "</th>";
  if (runs.size() > 1) h += "<th>" + escape_html(runs[1].label + "/" + runs[0].label) + "</th>";
  h += "<th>published</th><th>ours / published</th><th>source</th><th>meaning</th></tr>\n";
  for (std::size_t i = 0; i < names.size(); ++i) {
    const nlohmann::json* any = nullptr;
    for (auto* f : found[i])
      if (f && !any) any = f;
    h += "<tr><td>" + escape_html(names[i]) + "<br><span class=\"note\">" +
         escape_html(text(*any, "numerator")) + " / " + escape_html(text(*any, "denominator")) +
         "</span></td><td>" + escape_html(text(*any, "statistic")) + "</td>";
    std::vector<double> values;
    for (std::size_t r = 0; r < runs.size(); ++r) {
      double v = found[i][r] ? number(*found[i][r], "value") : kNaN;
      values.push_back(v);
      h += num_cell(ratio_text(v));
    }
    if (runs.size() > 1) h += change_cell(values[0], values[1]);
    double ref = number(*any, "reference");
    const nlohmann::json* last = found[i].back() ? found[i].back() : any;
    double vs = number(*last, "versus_reference");
    if (!std::isfinite(vs) && positive(ref) && std::isfinite(values.back()))
      vs = values.back() / ref;
    h += num_cell(positive(ref) ? ratio_text(ref) : "–") +
         num_cell(positive(ref) ? ratio_text(vs) : "–") + "<td>" +
         escape_html(text(*any, "reference_source")) + "</td><td>" +
         escape_html(text(*any, "meaning")) + "</td></tr>\n";
  }
  return h + "</table>\n";
}

std::string references_section(const std::vector<Run>& runs) {
  std::string h = "<h2 id=\"references\">Published figures beside ours</h2>\n";
  std::string rows;
  const Run& run = runs.back();
  auto it = run.json->find("references");
  if (it != run.json->end() && it->is_array())
    for (const auto& ref : *it) {
      std::string scenario = text(ref, "scenario");
      double value = number(ref, "value_ns");
      std::string stat = text(ref, "statistic");
      rows += "<tr><td>" + escape_html(text(ref, "what")) + "</td><td>" + escape_html(stat) +
              "</td>" + num_cell(duration(value));
      for (const auto& r : runs) {
        double ours = kNaN;
        if (const Scenario* s = r.find(scenario); s && s->ok())
          if (const Metric* m = s->primary_metric()) {
            if (stat == "mean")
              ours = m->mean;
            else if (stat == "p99")
              ours = m->p99;
            else if (stat == "max")
              ours = m->max;
            else if (stat == "min")
              ours = m->min;
            else
              ours = m->p50;
          }
        if (&r == &runs.back() && !std::isfinite(ours)) ours = number(ref, "ours_ns");
        rows += num_cell(duration(ours)) +
                num_cell(positive(value) && std::isfinite(ours) ? ratio_text(ours / value) : "–");
      }
      rows += "<td><code>" + escape_html(scenario) + "</code></td><td>" +
              escape_html(text(ref, "source")) + "</td></tr>\n";
    }
  if (rows.empty()) return h + "<p>No reference figures in these results.</p>\n";
  h += "<table><tr><th>what</th><th>statistic</th><th>published</th>";
  for (const auto& r : runs) {
    std::string l = runs.size() > 1 ? " (" + r.label + ")" : "";
    h += "<th>ours" + escape_html(l) + "</th><th>ours / published" + escape_html(l) + "</th>";
  }
  return h + "<th>our scenario</th><th>source</th></tr>\n" + rows + "</table>\n";
}

std::string environment_section(const std::vector<Run>& runs) {
  std::string h =
      "<h2 id=\"environment\">Environment</h2>\n<p class=\"note\">Absolute times "
      "belong to their machine; ratios measured in one run are what travel.</p>\n";
  std::vector<std::string> keys;
  for (const auto& r : runs) {
    auto it = r.json->find("environment");
    if (it == r.json->end() || !it->is_object()) continue;
    for (const auto& [k, v] : it->items())
      if (std::find(keys.begin(), keys.end(), k) == keys.end()) keys.push_back(k);
  }
  h += "<table><tr><th>field</th>";
  for (const auto& r : runs) h += "<th>" + escape_html(r.label) + "</th>";
  h += "</tr>\n";
  auto add_row = [&](const std::string& key, const std::vector<std::string>& values) {
    bool differs = values.size() > 1 && values[0] != values[1];
    h += "<tr><td>" + escape_html(key) + "</td>";
    for (const auto& v : values)
      h +=
          std::string("<td") + (differs ? " class=\"worse\"" : "") + ">" + escape_html(v) + "</td>";
    h += "</tr>\n";
  };
  for (const auto& k : keys) {
    std::vector<std::string> values;
    for (const auto& r : runs) {
      auto it = r.json->find("environment");
      values.push_back(it != r.json->end() && it->contains(k) ? value_text((*it)[k]) : "");
    }
    add_row(k, values);
  }
  for (const char* k : {"doorbell_version", "wall_s"}) {
    std::vector<std::string> values;
    for (const auto& r : runs)
      values.push_back(r.json->contains(k) ? value_text((*r.json)[k]) : "");
    add_row(k, values);
  }
  {
    std::vector<std::string> values;
    for (const auto& r : runs)
      values.push_back(r.json->contains("options") ? (*r.json)["options"].dump() : "");
    add_row("options", values);
  }
  return h + "</table>\n";
}

void write_file(const std::string& path, const std::string& content) {
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  if (!out)
    throw std::system_error(errno ? errno : EIO, std::generic_category(), "cannot write " + path);
  out << content;
  out.flush();
  if (!out)
    throw std::system_error(errno ? errno : EIO, std::generic_category(), "cannot write " + path);
}

}  // namespace

void validate_results(const nlohmann::json& run) {
  if (!run.is_object()) throw std::invalid_argument("results are not a JSON object");
  if (run.value("schema", std::string()) != "doorbell-results")
    throw std::invalid_argument("not a doorbell results file (schema is not \"doorbell-results\")");
  if (!run.contains("schema_version") || !run["schema_version"].is_number_integer() ||
      run["schema_version"].get<int>() != 1)
    throw std::invalid_argument("unsupported schema_version (this doorbell reads version 1)");
  if (!run.contains("scenarios") || !run["scenarios"].is_array())
    throw std::invalid_argument("results have no \"scenarios\" array");
  for (const auto& s : run["scenarios"])
    if (!s.is_object() || !s.contains("name") || !s["name"].is_string())
      throw std::invalid_argument("a scenario has no \"name\"");
}

nlohmann::json load_results(const std::string& path) {
  std::ifstream in(path);
  if (!in) throw std::invalid_argument(path + ": cannot open: " + std::strerror(errno));
  nlohmann::json j;
  try {
    j = nlohmann::json::parse(in);
  } catch (const nlohmann::json::exception& e) {
    throw std::invalid_argument(path + ": not valid JSON: " + e.what());
  }
  try {
    validate_results(j);
  } catch (const std::invalid_argument& e) {
    throw std::invalid_argument(path + ": " + e.what());
  }
  return j;
}

ReportSummary write_html_report(const std::vector<nlohmann::json>& jsons,
                                const std::string& out_path, const ReportOptions& options) {
  if (jsons.empty() || jsons.size() > 2)
    throw std::invalid_argument("a report takes one results file, or two to compare");
  std::vector<Run> runs;
  for (std::size_t i = 0; i < jsons.size(); ++i) {
    validate_results(jsons[i]);
    std::string label =
        i < options.labels.size() ? options.labels[i] : std::string(1, static_cast<char>('A' + i));
    runs.push_back(read_run(jsons[i], label));
  }

  // Groups and their scenario names, in order of first appearance (A first).
  std::vector<std::string> groups;
  std::map<std::string, std::vector<std::string>> names;
  for (const auto& run : runs)
    for (const auto& s : run.scenarios) {
      if (!names.count(s.group)) groups.push_back(s.group);
      auto& list = names[s.group];
      if (std::find(list.begin(), list.end(), s.name) == list.end()) list.push_back(s.name);
    }

  std::vector<Plot> plots;
  std::map<std::string, std::pair<std::size_t, std::size_t>> group_plots;  // [first, last)
  for (const auto& g : groups) {
    std::size_t first = plots.size();
    bar_plot(g, names[g], runs, plots);
    breakdown_plots(g, names[g], runs, plots);
    scaling_plots(g, names[g], runs, plots);
    percentile_plots(g, names[g], runs, plots);
    group_plots[g] = {first, plots.size()};
  }
  ReportSummary summary;
  summary.gnuplot_found = plots.empty() || render(plots, options);

  std::string title = runs.size() == 1
                          ? "doorbell lab report"
                          : "doorbell lab comparison: " + runs[0].label + " vs " + runs[1].label;
  std::string h = "<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">\n<title>" +
                  escape_html(title) + "</title>\n<style>" + kStyle + "</style>\n</head>\n<body>\n";
  h += "<h1>" + escape_html(title) + "</h1>\n";
  for (const auto& run : runs) {
    const auto& env = (*run.json).value("environment", nlohmann::json::object());
    std::size_t ok = 0, skipped = 0, failed = 0;
    for (const auto& s : run.scenarios)
      (s.status == "ok" ? ok : s.status == "skipped" ? skipped : failed)++;
    h += fmt::format(
        "<p><b>{}</b>: {} scenarios ({} ok, {} skipped, {} failed), measured {} on {} ({}, "
        "kernel {}, {} CPUs).</p>\n",
        escape_html(run.label), run.scenarios.size(), ok, skipped, failed,
        escape_html(text(env, "timestamp_utc")), escape_html(text(env, "hostname")),
        escape_html(text(env, "virtualization")), escape_html(text(env, "kernel")),
        escape_html(text(env, "cpus_online")));
  }
  if (!summary.gnuplot_found)
    h += "<p class=\"fail\">gnuplot was not found, so this report has tables only. Install it "
         "(Debian: <code>apt-get install gnuplot-nox</code>) and run <code>doorbell report</code> "
         "on the results file again.</p>\n";
  h += "<p id=\"plot-check\" class=\"note\">Plots: checking...</p>\n<nav>";
  for (const auto& g : groups) h += "<a href=\"#group-" + slug(g) + "\">" + escape_html(g) + "</a>";
  h += "<a href=\"#ratios\">ratios</a><a href=\"#references\">references</a><a "
       "href=\"#environment\">environment</a></nav>\n";
  for (const auto& g : groups) {
    h += "<h2 id=\"group-" + slug(g) + "\">" + escape_html(g) + "</h2>\n";
    h += scenario_table(names[g], runs);
    auto [first, last] = group_plots[g];
    if (summary.gnuplot_found)
      for (std::size_t i = first; i < last; ++i) h += figure(plots[i]);
  }
  h += ratios_section(runs);
  h += references_section(runs);
  h += environment_section(runs);
  h += "<p class=\"note\">Written by doorbell report; plots drawn by gnuplot.</p>\n";
  h += std::string("<script>") + kCheckScript + "</script>\n</body></html>\n";

  if (summary.gnuplot_found)
    for (const auto& p : plots) {
      if (p.svg.empty())
        summary.failed_plots.push_back(p.file + ": " + p.error);
      else
        summary.plots.push_back(p.file);
    }
  write_file(out_path, h);
  return summary;
}

}  // namespace doorbell::report
