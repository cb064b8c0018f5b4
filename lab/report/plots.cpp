#include "lab/report/plots.h"

#include <algorithm>
#include <array>
#include <cmath>
#include <limits>
#include <map>

#include <fmt/format.h>

namespace doorbell::report {
namespace {

// The buckets with samples in them (the writer leaves out empty ones; a
// file written by hand may not).
std::vector<lab::HistogramBucket> filled_buckets(const lab::MetricRecord& m) {
  std::vector<lab::HistogramBucket> out;
  for (const auto& b : m.histogram)
    if (b.count > 0) out.push_back(b);
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
const char* const kColors[] = {"#1f77b4", "#d62728", "#2ca02c", "#ff7f0e",
                               "#9467bd", "#8c564b", "#e377c2", "#17becf"};
constexpr std::size_t kNumColors = sizeof(kColors) / sizeof(kColors[0]);
const char* const kRunColors[] = {"#4477aa", "#ee6677"};

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

std::string run_label_suffix(const std::vector<LabeledRun>& runs, std::size_t r) {
  return runs.size() > 1 ? " (" + runs[r].label + ")" : "";
}

// p50 bars with p99 whiskers, one bar per scenario (two side by side when
// comparing), log scale.
void bar_plot(const std::string& group, const std::vector<std::string>& names,
              const std::vector<LabeledRun>& runs, std::vector<Plot>& plots) {
  std::vector<std::string> shown;
  double lo = std::numeric_limits<double>::infinity(), hi = 0;
  for (const auto& n : names)
    for (const auto& run : runs)
      if (const lab::ScenarioRecord* s = run.find(n); s && s->ok())
        if (const lab::MetricRecord* m = s->primary(); m && positive(m->summary.p50)) {
          if (shown.empty() || shown.back() != n) shown.push_back(n);
          lo = std::min(lo, m->summary.p50);
          hi = std::max(
              {hi, m->summary.p50, positive(m->summary.p99) ? m->summary.p99 : m->summary.p50});
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
      const lab::ScenarioRecord* sc = runs[r].find(shown[i]);
      if (!sc || !sc->ok()) continue;
      const lab::MetricRecord* m = sc->primary();
      if (!m || !positive(m->summary.p50)) continue;
      double p99 = positive(m->summary.p99) ? m->summary.p99 : m->summary.p50;
      rows += fmt::format("{} {:.6g} {:.6g} {:.6g} {:.6g} {:.6g}\n", i + offset, m->summary.p50,
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
                      const std::vector<LabeledRun>& runs, std::vector<Plot>& plots) {
  // Metric names in order of first appearance.
  std::vector<std::string> metric_names;
  for (const auto& n : names)
    for (const auto& run : runs)
      if (const lab::ScenarioRecord* s = run.find(n); s && s->ok())
        for (const auto& m : s->metrics)
          if (std::find(metric_names.begin(), metric_names.end(), m.name) == metric_names.end())
            metric_names.push_back(m.name);
  for (const auto& metric : metric_names) {
    std::vector<std::string> with;
    for (const auto& n : names)
      for (const auto& run : runs)
        if (const lab::ScenarioRecord* s = run.find(n); s && s->ok())
          if (const lab::MetricRecord* m = s->metric(metric); m && !filled_buckets(*m).empty()) {
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
          const lab::ScenarioRecord* sc = runs[r].find(with[i]);
          if (!sc || !sc->ok()) continue;
          const lab::MetricRecord* m = sc->metric(metric);
          if (!m) continue;
          const std::vector<lab::HistogramBucket> buckets = filled_buckets(*m);
          if (buckets.empty()) continue;
          double total = 0;
          for (const auto& b : buckets) total += b.count;
          if (total <= 0) continue;
          std::string rows;
          double cum = 0;
          double first_value = std::max(buckets.front().lower_ns, 1e-3);
          rows += fmt::format("1 {:.6g}\n", first_value * 1e-9);
          ylo = std::min(ylo, first_value);
          for (const auto& b : buckets) {
            cum += b.count;
            double pr = cum / total;
            if (pr >= 1.0) pr = 1.0 - 0.5 / total;
            double value = b.upper_ns;
            if (positive(m->summary.max)) value = std::min(value, m->summary.max);
            value = std::max(value, 1e-3);
            rows += fmt::format("{:.6g} {:.6g}\n", 1.0 / (1.0 - pr), value * 1e-9);
            yhi = std::max(yhi, value);
          }
          std::string name = "p" + std::to_string(block++);
          datablock(s, name, rows);
          // One legend entry per scenario: the second run is the same colour
          // dashed, and the caption says which run is which (a legend entry
          // per run and long run labels took half the plot's width).
          plot_cmd += fmt::format("{}${} using 1:2 with steps lw 2 dt {} lc rgb \"{}\" {}",
                                  plot_cmd.empty() ? "" : ", ", name, r == 0 ? 1 : 2,
                                  kColors[(i - first) % kNumColors],
                                  r == 0 ? "title " + gp_string(short_name(with[i])) : "notitle");
        }
      }
      if (plot_cmd.empty()) continue;
      s += "set logscale x\nset logscale y\nset format y \"%.0s%cs\"\n";
      // Tic labels are format strings to gnuplot: a percent sign is "%%".
      // The axis starts at 0% (x = 1) unlabelled: "0%" and "50%" (x = 2) are
      // a third of a decade apart and their labels overlapped.
      s += "set xrange [1:*]\n";
      s += "set xtics (\"50%%\" 2, \"90%%\" 10, \"99%%\" 100, \"99.9%%\" 1000, "
           "\"99.99%%\" 10000, \"99.999%%\" 100000, \"99.9999%%\" 1000000)\n";
      s += "set xlabel \"percentile\"\nset ylabel " + gp_string(metric + " (log scale)") + "\n";
      s += fmt::format("set yrange [{:.6g}:{:.6g}]\n", ylo * 0.5e-9, yhi * 2e-9);
      // Two runs: the legend below the plot, so the plot keeps its width.
      s += runs.size() > 1 ? "set key outside bottom center horizontal\n"
                           : "set key outside right top\n";
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
                   const std::vector<LabeledRun>& runs, std::vector<Plot>& plots) {
  std::vector<std::string> param_names;
  for (const auto& n : names)
    for (const auto& run : runs)
      if (const lab::ScenarioRecord* s = run.find(n))
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
        const lab::ScenarioRecord* s = runs[r].find(n);
        if (!s || !s->ok()) continue;
        double x = numeric_param(s->param(param));
        if (!std::isfinite(x)) continue;
        const lab::MetricRecord* m = s->primary();
        if (!m || !positive(m->summary.p50)) continue;
        std::string key = n.substr(0, n.find(':'));
        for (const auto& [k, v] : s->params)
          if (k != param) key += " " + k + "=" + v;
        auto& entry = series[key];
        if (entry.empty()) {
          entry.resize(runs.size());
          order.push_back(key);
        }
        entry[r].push_back(
            {x, m->summary.p50, positive(m->summary.p99) ? m->summary.p99 : m->summary.p50});
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
                     const std::vector<LabeledRun>& runs, std::vector<Plot>& plots) {
  static const std::vector<std::string> kParts = {"send", "delay", "recv", "hndl"};
  for (std::size_t r = 0; r < runs.size(); ++r) {
    // key (other params) -> threads -> scenario
    std::map<std::string, std::map<double, const lab::ScenarioRecord*>> by_key;
    std::vector<std::string> order;
    for (const auto& n : names) {
      const lab::ScenarioRecord* s = runs[r].find(n);
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
          const lab::MetricRecord* m = s->metric(part);
          rows += fmt::format(" {:.6g}",
                              m && std::isfinite(m->summary.p50) ? m->summary.p50 / 1e3 : 0.0);
        }
        const lab::MetricRecord* e2e = s->metric("e2e");
        rows +=
            fmt::format(" {:.6g}\n", e2e && std::isfinite(e2e->summary.p50) ? e2e->summary.p50 / 1e3
                                                                            : lab::kNotMeasured);
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

// The rate limiter's crossover (issue 31): for each design and thread
// count, the least per-call work, of the work regimes the run has, at which
// the design keeps >= 95% of the no-limiter throughput (its row's baseline
// p50 / its p50) in the never-limiting regime. One line per design (per
// run); a design that stays below 95% at every work regime of the run is
// drawn on the top row, "beyond".
void crossover_plot(const std::string& group, const std::vector<std::string>& names,
                    const std::vector<LabeledRun>& runs, std::vector<Plot>& plots) {
  if (group != "ratelimit") return;
  constexpr double kGoal = 0.95;
  // per run: method -> threads -> work -> on/off
  std::vector<std::map<std::string, std::map<double, std::map<double, double>>>> ratios(
      runs.size());
  std::vector<double> levels;
  std::vector<std::string> methods;
  for (std::size_t r = 0; r < runs.size(); ++r) {
    for (const auto& n : names) {
      const lab::ScenarioRecord* s = runs[r].find(n);
      if (!s || !s->ok() || s->param("regime") != "never") continue;
      const std::string method = s->param("method");
      const double threads = numeric_param(s->param("threads"));
      const double work = numeric_param(s->param("work_ns"));
      const lab::MetricRecord* on = s->primary();
      const lab::MetricRecord* off = s->metric("baseline");
      if (method.empty() || !std::isfinite(threads) || !std::isfinite(work) || !on || !off ||
          !positive(on->summary.p50) || !positive(off->summary.p50))
        continue;
      ratios[r][method][threads][work] = off->summary.p50 / on->summary.p50;
      if (std::find(levels.begin(), levels.end(), work) == levels.end()) levels.push_back(work);
      if (std::find(methods.begin(), methods.end(), method) == methods.end())
        methods.push_back(method);
    }
  }
  if (levels.size() < 2) return;  // one work regime: no crossover to show
  std::sort(levels.begin(), levels.end());
  Plot p;
  p.file = slug(group) + "_crossover.svg";
  p.title = group + ": per-call work needed to keep 95% of the no-limiter throughput";
  std::string table;
  std::string s, cmd;
  int block = 0;
  for (std::size_t m = 0; m < methods.size(); ++m) {
    for (std::size_t r = 0; r < runs.size(); ++r) {
      const auto found = ratios[r].find(methods[m]);
      if (found == ratios[r].end()) continue;
      std::string rows;
      for (const auto& [threads, by_work] : found->second) {
        // The least work at which this design reaches the goal.
        std::size_t level = levels.size();
        for (std::size_t i = 0; i < levels.size() && level == levels.size(); ++i)
          if (const auto it = by_work.find(levels[i]); it != by_work.end() && it->second >= kGoal)
            level = i;
        rows += fmt::format("{:g} {}\n", threads, level);
        table += fmt::format("{}{} T={:g}: {}", table.empty() ? "" : "; ", methods[m], threads,
                             level == levels.size() ? fmt::format("> {:g} ns", levels.back())
                                                    : fmt::format("{:g} ns", levels[level]));
        if (runs.size() > 1) table += " (" + runs[r].label + ")";
      }
      if (rows.empty()) continue;
      const std::string name = "c" + std::to_string(block++);
      datablock(s, name, rows);
      cmd += fmt::format("{}${} using 1:2 with linespoints lw {} pt 7 dt {} lc rgb \"{}\" {}",
                         cmd.empty() ? "" : ", ", name, r == 0 ? 2 : 1, r == 0 ? 1 : 2,
                         kColors[m % kNumColors],
                         r == 0 ? "title " + gp_string(methods[m]) : "notitle");
    }
  }
  if (cmd.empty()) return;
  p.caption =
      "For each design (never-limiting regime) and thread count T: the least per-call work of "
      "this run's work regimes at which the design's limiter-on / limiter-off throughput (its "
      "row's baseline p50 / its p50) is at least 0.95; \"beyond\" when no regime reaches it. "
      "Lower is better: the design costs little even on a short path." +
      std::string(runs.size() > 1 ? " Solid: " + runs[0].label + "; dashed: " + runs[1].label + "."
                                  : "") +
      " Values: " + table + ".";
  s += "set logscale x 2\nset xlabel \"threads\"\nset ylabel \"work per call needed\"\n";
  s += fmt::format("set yrange [-0.5:{}.5]\nset ytics (", levels.size());
  for (std::size_t i = 0; i < levels.size(); ++i)
    s += fmt::format("{}{} {}", i ? ", " : "", gp_tic(fmt::format("{:g} ns", levels[i])), i);
  s += fmt::format(", {} {})\n", gp_tic(fmt::format("beyond {:g} ns", levels.back())),
                   levels.size());
  s += "set offsets graph 0.05, graph 0.05, 0, 0\nset key outside right top\n";
  s += "plot " + cmd + "\n";
  p.script = s;
  p.width = 1000;
  plots.push_back(std::move(p));
}

}  // namespace

std::vector<Plot> group_plots(const std::string& group, const std::vector<std::string>& names,
                              const std::vector<LabeledRun>& runs) {
  std::vector<Plot> plots;
  bar_plot(group, names, runs, plots);
  crossover_plot(group, names, runs, plots);
  breakdown_plots(group, names, runs, plots);
  scaling_plots(group, names, runs, plots);
  percentile_plots(group, names, runs, plots);
  return plots;
}

std::string gnuplot_script(const Plot& plot, const std::string& output_path) {
  return terminal(plot, output_path) + plot.script;
}

}  // namespace doorbell::report
