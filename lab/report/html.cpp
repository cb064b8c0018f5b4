#include "lab/report/html.h"

#include <algorithm>
#include <cerrno>
#include <cmath>
#include <cstdint>
#include <fstream>
#include <stdexcept>
#include <system_error>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "lab/common/format.h"
#include "lab/harness/histogram.h"
#include "lab/harness/summary.h"
#include "lab/report/cells.h"
#include "lab/report/compare.h"
#include "lab/report/plots.h"
#include "lab/report/runs.h"

namespace doorbell::report {
namespace {

using lab::format_duration;
using lab::format_ratio;
using lab::MetricRecord;
using lab::ScenarioRecord;

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

const char* kStyle = R"(
.summary{background:#f4f7fb;border:1px solid #cdd8e6;padding:.4em 1em;margin:.8em 0}.machine{margin:.3em 0}
body{font-family:sans-serif;margin:1.5em auto;max-width:1200px;padding:0 1em;color:#222}
h1{font-size:1.6em}h2{border-bottom:1px solid #ccc;padding-bottom:.2em;margin-top:2em}
table{border-collapse:collapse;margin:.6em 0;font-size:.9em}
th,td{border:1px solid #ccc;padding:.25em .5em;text-align:left;vertical-align:top}
th{background:#f0f0f0}td.n{text-align:right;font-variant-numeric:tabular-nums;white-space:nowrap}
figure{margin:1em 0}figcaption{font-size:.85em;color:#555;max-width:60em}
img.plot{max-width:100%;height:auto;border:1px solid #eee}
.skip{color:#8a6d00}.fail{color:#b00}.flag{color:#b35900}.few{color:#b35900}.worse{color:#b00}.better{color:#080}
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

// A counter as "median (min–max)" over the repetitions.
std::string counter_text(const lab::CounterRecord& c) {
  const lab::SpreadRecord& s = c.spread;
  std::string shown = std::isfinite(s.median) ? fmt::format("{:.4g}", s.median) : "-";
  if (std::isfinite(s.min) && std::isfinite(s.max) && s.min != s.max)
    shown += fmt::format(" ({:.4g}–{:.4g})", s.min, s.max);
  return shown;
}

// A percentile cell: marked '*' (class few) when the metric's count cannot
// support it (histogram.h, samples_needed); the FEW SAMPLES line below the
// table says what the mark means.
std::string percentile_cell(const MetricRecord* m, const char* name, bool& marked) {
  if (m == nullptr) return num_cell("–");
  const std::string value = format_duration(m->summary.statistic(name));
  if (lab::supported_by(name, m->summary.count)) return num_cell(value);
  marked = true;
  return fmt::format(
      "<td class=\"n few\" title=\"{}\">{}*</td>",
      escape_html(lab::few_samples_text(name, m->name, "this row", m->summary.count)), value);
}

std::string few_samples_legend() {
  return fmt::format(
      "<p class=\"note few\">FEW SAMPLES: a percentile marked * rests on fewer samples than it "
      "needs (p50 {}, p90 {}, p99 {}, p99.9 {}): it is the largest sample, not a tail; the "
      "summary, the ratios and the published figures do not quote it bare.</p>\n",
      lab::samples_needed(50), lab::samples_needed(90), lab::samples_needed(99),
      lab::samples_needed(99.9));
}

// "<br><span class=\"flag\">FLAGGED: ...</span>" per flag.
std::string flag_lines(const std::vector<std::string>& flags) {
  std::string h;
  for (const auto& flag : flags)
    h += "<br><span class=\"flag\">FLAGGED: " + escape_html(flag) + "</span>";
  return h;
}

std::string single_run_table(const std::vector<std::string>& names, const LabeledRun& run) {
  bool marked = false;
  std::string h =
      "<table><tr><th>scenario</th><th>status</th><th>metric</th><th>p50</th><th>p90</th><th>"
      "p99</th><th>max</th><th>samples</th><th>counters (median, min–max over repetitions)</th>"
      "<th>what one sample times, notes</th></tr>\n";
  for (const auto& n : names) {
    const ScenarioRecord* s = run.find(n);
    const MetricRecord* m = s ? s->primary() : nullptr;
    h += "<tr><td><code>" + escape_html(n) + "</code>" +
         (s && !s->title.empty() ? "<br>" + escape_html(s->title) : "") + "</td>" + status_cell(s);
    if (m && m->summary.count == 0) m = nullptr;  // empty: shown as "–", never zeros
    h += "<td>" + (m ? escape_html(m->name) : "") + "</td>";
    h += percentile_cell(m, "p50", marked) + percentile_cell(m, "p90", marked) +
         percentile_cell(m, "p99", marked) + num_cell(m ? format_duration(m->summary.max) : "–") +
         num_cell(m && std::isfinite(m->summary.count) ? fmt::format("{:.0f}", m->summary.count)
                                                       : "–");
    std::string counters;
    if (s)
      for (const auto& c : s->counters)
        counters += escape_html(c.name) + "=" + escape_html(counter_text(c)) + "<br>";
    h += "<td>" + counters + "</td><td>";
    if (s) {
      h += escape_html(s->description);
      for (const auto& note : s->notes)
        h += "<br><span class=\"note\">" + escape_html(note) + "</span>";
      if (s->metrics.size() > 1) {
        h += "<br><span class=\"note\">other metrics: ";
        for (const auto& o : s->metrics) {
          if (m && o.name == m->name) continue;
          if (o.summary.count == 0) {  // empty: no percentiles, never zeros
            h += escape_html(o.name) + " no samples; ";
            continue;
          }
          const bool p50_few = !lab::supported_by("p50", o.summary.count);
          const bool p99_few = !lab::supported_by("p99", o.summary.count);
          marked = marked || p50_few || p99_few;
          h += escape_html(o.name) + " p50 " + format_duration(o.summary.p50) +
               (p50_few ? "*" : "") + ", p99 " + format_duration(o.summary.p99) +
               (p99_few ? "*" : "") + "; ";
        }
        h += "</span>";
      }
    }
    h += "</td></tr>\n";
  }
  return h + "</table>\n" + (marked ? few_samples_legend() : std::string());
}

std::string ratios_section(const std::vector<LabeledRun>& runs) {
  std::string h = "<h2 id=\"ratios\">Ratios that matter, beside the published figures</h2>\n";
  // Union of ratio names in order.
  std::vector<std::string> names;
  std::vector<std::vector<const lab::RatioRecord*>> found;
  for (std::size_t r = 0; r < runs.size(); ++r)
    for (const auto& ratio : runs[r].results->ratios) {
      auto pos = std::find(names.begin(), names.end(), ratio.name);
      std::size_t idx = pos - names.begin();
      if (pos == names.end()) {
        names.push_back(ratio.name);
        found.emplace_back(runs.size(), nullptr);
      }
      found[idx][r] = &ratio;
    }
  if (names.empty()) return h + "<p>No ratios in these results.</p>\n";
  h += "<table><tr><th>ratio</th><th>statistic</th>";
  for (const auto& run : runs)
    h += "<th>" + escape_html(runs.size() > 1 ? run.label : "this machine") + "</th>";
  if (runs.size() > 1) h += "<th>" + escape_html(runs[1].label + "/" + runs[0].label) + "</th>";
  h += "<th>published</th><th>ours / published</th><th>source</th><th>meaning</th></tr>\n";
  for (std::size_t i = 0; i < names.size(); ++i) {
    const lab::RatioRecord* any = nullptr;
    for (auto* f : found[i])
      if (f && !any) any = f;
    h += "<tr><td>" + escape_html(names[i]) + "<br><span class=\"note\">" +
         escape_html(any->numerator) +
         (any->numerator_metric.empty() ? std::string()
                                        : " (" + escape_html(any->numerator_metric) + ")") +
         " / " + escape_html(any->denominator) + "</span></td><td>" + escape_html(any->statistic) +
         "</td>";
    std::vector<double> values;
    for (std::size_t r = 0; r < runs.size(); ++r) {
      const lab::RatioRecord* rec = found[i][r];
      double v = rec ? rec->value : lab::kNotMeasured;
      values.push_back(v);
      if (rec != nullptr && std::isfinite(v) && !rec->flags.empty())
        // Built from a flagged row or a thin percentile: marked, and why.
        h += "<td class=\"n flag\">" + format_ratio(v) + "!" + flag_lines(rec->flags) + "</td>";
      else if (std::isfinite(v) || rec == nullptr)
        h += num_cell(rec ? format_ratio(v) : "not in this run");
      else  // a ratio not computed says why (files before "why" say so too)
        h += "<td class=\"note\">not computed: " +
             escape_html(rec->why.empty() ? std::string("no reason recorded (an older results "
                                                        "file)")
                                          : rec->why) +
             "</td>";
    }
    if (runs.size() > 1) h += change_cell(values[0], values[1]);
    const double ref = any->reference;
    const lab::RatioRecord* last = found[i].back() ? found[i].back() : any;
    double vs = last->versus_reference;
    if (!std::isfinite(vs) && positive(ref) && std::isfinite(values.back()))
      vs = values.back() / ref;
    h += num_cell(positive(ref) ? format_ratio(ref) : "–") +
         num_cell(positive(ref) ? format_ratio(vs) : "–") + "<td>" +
         escape_html(any->reference_source) + "</td><td>" + escape_html(any->meaning) +
         "</td></tr>\n";
  }
  return h + "</table>\n";
}

std::string references_section(const std::vector<LabeledRun>& runs) {
  std::string h = "<h2 id=\"references\">Published figures beside ours</h2>\n";
  std::string rows;
  for (const auto& ref : runs.back().results->references) {
    rows += "<tr><td>" + escape_html(ref.what) + "</td><td>" + escape_html(ref.statistic) +
            "</td>" + num_cell(format_duration(ref.value_ns));
    for (const auto& r : runs) {
      double ours = lab::kNotMeasured;
      std::vector<std::string> flags;  // the writer's rule, for each run's own row
      if (const ScenarioRecord* s = r.find(ref.scenario); s && s->ok())
        if (const MetricRecord* m = ref.metric.empty() ? s->primary() : s->metric(ref.metric)) {
          ours = m->summary.statistic(ref.statistic);
          flags = lab::figure_flags(s->name, m->name, ref.statistic, m->summary.count, s->warnings);
        }
      if (&r == &runs.back() && !std::isfinite(ours)) {
        ours = ref.ours_ns;
        flags = ref.flags;
      }
      const bool why = !std::isfinite(ours) && &r == &runs.back() && !ref.why.empty();
      rows +=
          (why ? "<td class=\"note\">not measured: " + escape_html(ref.why) + "</td>"
           : std::isfinite(ours) && !flags.empty()
               ? "<td class=\"n flag\">" + format_duration(ours) + "!" + flag_lines(flags) + "</td>"
               : num_cell(format_duration(ours))) +
          num_cell(positive(ref.value_ns) && std::isfinite(ours) ? format_ratio(ours / ref.value_ns)
                                                                 : "–");
    }
    rows += "<td><code>" + escape_html(ref.scenario) + "</code>" +
            (ref.metric.empty() ? std::string() : " (" + escape_html(ref.metric) + ")") +
            "</td><td>" + escape_html(ref.source) + "</td></tr>\n";
  }
  if (rows.empty()) return h + "<p>No reference figures in these results.</p>\n";
  h += "<table><tr><th>what</th><th>statistic</th><th>published</th>";
  for (const auto& r : runs) {
    std::string l = runs.size() > 1 ? " (" + r.label + ")" : "";
    h += "<th>ours" + escape_html(l) + "</th><th>ours / published" + escape_html(l) + "</th>";
  }
  return h + "<th>our scenario</th><th>source</th></tr>\n" + rows + "</table>\n";
}

std::string environment_section(const std::vector<LabeledRun>& runs) {
  std::string h =
      "<h2 id=\"environment\">Environment</h2>\n<p class=\"note\">Absolute times "
      "belong to their machine; ratios measured in one run are what travel.</p>\n";
  std::vector<std::string> keys;
  for (const auto& r : runs)
    for (const auto& [k, v] : r.results->environment)
      if (std::find(keys.begin(), keys.end(), k) == keys.end()) keys.push_back(k);
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
  auto row_of = [&](const std::string& key, auto value_of) {
    std::vector<std::string> values;
    for (const auto& r : runs) values.push_back(value_of(*r.results));
    add_row(key, values);
  };
  for (const auto& k : keys)
    row_of(k, [&](const lab::ResultsFile& f) { return f.environment_value(k); });
  row_of("doorbell_version", [](const lab::ResultsFile& f) { return f.doorbell_version; });
  // As JSON writes the number, the way the file has it.
  row_of("wall_s", [](const lab::ResultsFile& f) {
    return std::isfinite(f.wall_s) ? nlohmann::json(f.wall_s).dump() : std::string();
  });
  row_of("options", [](const lab::ResultsFile& f) { return f.options.json; });
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

std::string html_report(const std::vector<lab::ResultsFile>& files, const ReportOptions& options,
                        ReportSummary& summary) {
  if (files.empty() || files.size() > 2)
    throw std::invalid_argument("a report takes one results file, or two to compare");
  std::vector<LabeledRun> runs;
  for (std::size_t i = 0; i < files.size(); ++i) {
    std::string label =
        i < options.labels.size() ? options.labels[i] : std::string(1, static_cast<char>('A' + i));
    runs.push_back({label, &files[i]});
  }
  const ScenarioGroups groups = group_scenarios(runs);

  std::vector<Plot> plots;
  std::map<std::string, std::pair<std::size_t, std::size_t>> group_range;  // [first, last)
  for (const auto& g : groups.order) {
    std::size_t first = plots.size();
    for (auto& p : group_plots(g, groups.names.at(g), runs)) plots.push_back(std::move(p));
    group_range[g] = {first, plots.size()};
  }
  summary = ReportSummary{};
  summary.gnuplot_found =
      plots.empty() ||
      render_plots(plots, GnuplotOptions{options.gnuplot, options.plots_dir, options.plot_timeout});

  std::string title = runs.size() == 1
                          ? "doorbell lab report"
                          : "doorbell lab comparison: " + runs[0].label + " vs " + runs[1].label;
  std::string h = "<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">\n<title>" +
                  escape_html(title) + "</title>\n<style>" + kStyle + "</style>\n</head>\n<body>\n";
  h += "<h1>" + escape_html(title) + "</h1>\n";
  for (const auto& run : runs) {
    const lab::ResultsFile& f = *run.results;
    std::size_t ok = 0, skipped = 0, failed = 0, flagged = 0;
    for (const auto& s : f.scenarios) {
      (s.status == lab::ScenarioStatus::ok        ? ok
       : s.status == lab::ScenarioStatus::skipped ? skipped
                                                  : failed)++;
      if (s.flagged()) ++flagged;
    }
    h += fmt::format(
        "<p><b>{}</b>: {} scenarios ({} ok{}, {} skipped, {} failed), measured {} on {} ({}, "
        "kernel {}, {} CPUs).</p>\n",
        escape_html(run.label), f.scenarios.size(), ok,
        flagged > 0 ? fmt::format(" of which {} flagged: samples longer than their budget", flagged)
                    : std::string(),
        skipped, failed, escape_html(f.environment_value("timestamp_utc")),
        escape_html(f.environment_value("hostname")),
        escape_html(f.environment_value("virtualization")),
        escape_html(f.environment_value("kernel")),
        escape_html(f.environment_value("cpus_online")));
  }
  // The first screen: each machine in one line, what separates two machines
  // in one line, and what each run says (summary.h).
  for (const auto& run : runs) {
    const std::string machine = run.results->environment_value("machine_summary");
    h += "<p class=\"machine\"><b>" +
         escape_html(runs.size() > 1 ? run.label + "'s machine" : "machine") + "</b>: " +
         escape_html(machine.empty() ? std::string("not recorded (a results file written before "
                                                   "doorbell recorded it)")
                                     : machine) +
         "</p>\n";
  }
  if (runs.size() == 2)
    h += "<p class=\"machine\" id=\"machines\"><b>" + escape_html(runs[0].label) + " vs " +
         escape_html(runs[1].label) + "</b>: " + escape_html(explain_machines(runs[0], runs[1])) +
         "</p>\n";
  for (const auto& run : runs) {
    h += "<div class=\"summary\" id=\"summary-" + slug(run.label) + "\"><b>On " +
         escape_html(runs.size() > 1 ? run.label + "'s machine" : "this machine") + "</b><ul>\n";
    for (const auto& line : lab::summarize_run(*run.results)) {
      h += "<li" + std::string(line.measured ? "" : " class=\"note\"") + "><b>" +
           escape_html(line.topic) + "</b>: " + escape_html(line.text);
      for (std::size_t i = 0; i < line.scenarios.size(); ++i)
        h += std::string(i ? ", " : " — ") + "<code>" + escape_html(line.scenarios[i]) + "</code>";
      h += "</li>\n";
    }
    h += "</ul></div>\n";
  }
  if (!summary.gnuplot_found)
    h += "<p class=\"fail\">gnuplot was not found, so this report has tables only. Install it "
         "(Debian: <code>apt-get install gnuplot-nox</code>) and run <code>doorbell report</code> "
         "on the results file again.</p>\n";
  h += "<p id=\"plot-check\" class=\"note\">Plots: checking...</p>\n<nav>";
  for (const auto& g : groups.order)
    h += "<a href=\"#group-" + slug(g) + "\">" + escape_html(g) + "</a>";
  h += "<a href=\"#ratios\">ratios</a><a href=\"#references\">references</a><a "
       "href=\"#environment\">environment</a></nav>\n";
  for (const auto& g : groups.order) {
    const auto& names = groups.names.at(g);
    h += "<h2 id=\"group-" + slug(g) + "\">" + escape_html(g) + "</h2>\n";
    h += runs.size() == 1 ? single_run_table(names, runs[0]) : comparison_table(names, runs);
    auto [first, last] = group_range[g];
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
  return h;
}

ReportSummary write_html_report(const std::vector<lab::ResultsFile>& runs,
                                const std::string& out_path, const ReportOptions& options) {
  ReportSummary summary;
  const std::string page = html_report(runs, options, summary);
  write_file(out_path, page);
  return summary;
}

}  // namespace doorbell::report
