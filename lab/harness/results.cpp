#include "lab/harness/results.h"

#include "doorbell/signal_channel.h"

#include "lab/harness/results_reader.h"
#include "lab/harness/summary.h"

#include <algorithm>
#include <cmath>
#include <fstream>
#include <iostream>
#include <nlohmann/json.hpp>
#include <system_error>

#include <fmt/format.h>

namespace doorbell::lab {

using nlohmann::json;

namespace {

json summary_json(const Summary& s) {
  return json{{"count", s.count}, {"min", s.min},       {"max", s.max},
              {"mean", s.mean},   {"stddev", s.stddev}, {"p50", s.p50},
              {"p90", s.p90},     {"p99", s.p99},       {"p99.9", s.p999}};
}

json spread_json(const Spread& s) {
  return json{{"min", s.min}, {"median", s.median}, {"max", s.max}};
}

const char* status_name(ScenarioResult::Status s) {
  switch (s) {
    case ScenarioResult::Status::ok:
      return "ok";
    case ScenarioResult::Status::skipped:
      return "skipped";
    case ScenarioResult::Status::failed:
      return "failed";
  }
  return "failed";
}

// Why our figure beside a published one must not be quoted bare.
std::vector<std::string> reference_flags(const ScenarioResult& ours, const MetricResult& m,
                                         const ReferenceFigure& f) {
  return figure_flags(f.scenario, m.name, f.statistic, static_cast<double>(m.summary.count),
                      ours.warnings);
}

// A percentile cell of the table: the duration, marked '*' when the row's
// count cannot support it (the FEW SAMPLES line says what the mark means).
std::string percentile_cell(const char* name, double value, uint64_t count) {
  return format_duration(value) + (supported_by(name, static_cast<double>(count)) ? "" : "*");
}

json scenario_json(const ScenarioResult& r) {
  const Scenario& sc = *r.scenario;
  json params = json::object();
  for (const auto& p : sc.params) params[p.name] = p.value;
  json j{{"name", sc.name},
         {"group", sc.group},
         {"title", sc.title},
         {"description", sc.description},
         {"params", params},
         {"clock", std::string(clock_name(sc.clock))},
         {"clock_read_ns", clock_read_cost_ns(sc.clock)},
         {"pinning", std::string(pinning_name(sc.pinning))},
         {"status", status_name(r.status)},
         {"reason", r.reason},
         {"repetitions", r.repetitions},
         {"wall_s", r.wall_s},
         {"budget_s", r.budget_s},
         {"limit_s", r.limit_s},
         {"primary_metric", sc.primary_metric}};
  if (r.status == ScenarioResult::Status::failed)
    j["failure"] = json{
        {"kind", r.failure.kind}, {"phase", r.failure.phase}, {"elapsed_s", r.failure.elapsed_s}};
  j["warnings"] = r.warnings;
  json metrics = json::object();
  for (const auto& m : r.metrics) {
    json mj = summary_json(m.summary);
    mj["unit"] = "ns";
    mj["unsupported_percentiles"] = unsupported_percentiles(static_cast<double>(m.summary.count));
    mj["p50_across_reps"] = spread_json(m.p50_across_reps);
    mj["mean_across_reps"] = spread_json(m.mean_across_reps);
    json reps = json::array();
    for (const auto& s : m.per_rep) reps.push_back(summary_json(s));
    mj["per_repetition"] = reps;
    json buckets = json::array();
    m.merged.for_each_bucket([&](double lo, double hi, uint64_t n) {
      buckets.push_back(json::array({lo, hi, n}));
    });
    mj["histogram"] = buckets;
    if (!m.raw.empty()) mj["raw"] = m.raw;
    metrics[m.name] = mj;
  }
  j["metrics"] = metrics;
  json counters = json::object();
  for (const auto& [name, values] : r.counters) {
    const Spread& s = r.counter_spread.at(name);
    counters[name] =
        json{{"per_repetition", values}, {"min", s.min}, {"median", s.median}, {"max", s.max}};
  }
  j["counters"] = counters;
  j["notes"] = r.notes;
  return j;
}

}  // namespace

json to_json(const Environment& e) {
  return json{{"hostname", e.hostname},
              {"kernel", e.kernel},
              {"kernel_version", e.kernel_version},
              {"machine", e.machine},
              {"cpu_model", e.cpu_model},
              {"cpus_online", e.cpus_online},
              {"cpus_allowed", e.cpus_allowed},
              {"virtualization", e.virtualization},
              {"hypervisor", e.hypervisor},
              {"pti", e.pti},
              {"syscall_ns", e.syscall_ns},
              {"syscall_ns_probes", e.syscall_ns_probes},
              {"machine_summary", e.machine_summary},
              {"clocksource", e.clocksource},
              {"signal_cost_features", e.signal_cost_features},
              {"min_signal_stack_bytes", e.min_signal_stack},
              {"mitigations", e.mitigations},
              {"preemption", e.preemption},
              {"load_average", e.load_average},
              {"load_average_after", e.load_average_after},
              {"root", e.root},
              {"tsc_invariant", e.tsc_invariant},
              {"tsc_ghz", e.tsc_ghz},
              {"interval_clock", e.interval_clock},
              {"monotonic_read_ns", e.monotonic_read_ns},
              {"tsc_read_ns", e.tsc_read_ns},
              {"compiler", e.compiler},
              {"build_type", e.build_type},
              {"timestamp_utc", e.timestamp_utc}};
}

json to_json(const RunResults& results, const std::string& doorbell_version) {
  json j;
  j["schema"] = kResultsSchema;
  j["schema_version"] = kResultsSchemaVersion;
  j["doorbell_version"] = doorbell_version;
  j["environment"] = to_json(results.environment);
  j["options"] = json{{"suite", results.options.suite},
                      {"quick", results.options.quick},
                      {"repetitions", results.options.repetitions},
                      {"filters", results.options.filters}};
  j["wall_s"] = results.wall_s;
  if (results.interrupted.signal != 0)
    j["interrupted"] = json{{"signal", signal_name(results.interrupted.signal)},
                            {"during", results.interrupted.during},
                            {"not_run", results.interrupted.not_run}};
  json scenarios = json::array();
  for (const auto& r : results.scenarios) scenarios.push_back(scenario_json(r));
  j["scenarios"] = scenarios;
  json ratios = json::array();
  for (const auto& r : results.ratios) {
    json rj{{"name", r.ratio->name},
            {"numerator", r.ratio->numerator},
            {"denominator", r.ratio->denominator},
            {"statistic", r.ratio->statistic},
            {"available", r.available},
            {"meaning", r.ratio->meaning}};
    if (r.available && !r.ratio->numerator_words.empty())
      rj["in_words"] =
          format_ratio_words(r.value, r.ratio->numerator_words, r.ratio->denominator_words);
    rj["value"] = r.available ? json(r.value) : json(nullptr);
    if (!r.available) rj["why"] = r.why;  // the reason beside the null value
    rj["flags"] = r.flags;
    if (!r.ratio->metric.empty()) rj["metric"] = r.ratio->metric;
    if (!r.ratio->numerator_metric.empty()) rj["numerator_metric"] = r.ratio->numerator_metric;
    rj["reference"] = r.ratio->reference > 0 ? json(r.ratio->reference) : json(nullptr);
    rj["reference_source"] = r.ratio->reference_source;
    rj["versus_reference"] =
        r.available && r.ratio->reference > 0 ? json(r.versus_reference) : json(nullptr);
    ratios.push_back(rj);
  }
  j["ratios"] = ratios;
  json refs = json::array();
  for (const auto& f : all_references()) {
    const ScenarioResult* ours = results.find(f.scenario);
    if (ours == nullptr) continue;
    json fj{{"scenario", f.scenario},
            {"what", f.what},
            {"value_ns", f.value_ns},
            {"statistic", f.statistic},
            {"source", f.source}};
    if (!f.metric.empty()) fj["metric"] = f.metric;
    const MetricResult* m = reference_metric(*ours, f);
    const bool measured = m != nullptr && m->summary.count > 0;
    fj["ours_ns"] = measured ? json(statistic(m->summary, f.statistic)) : json(nullptr);
    if (!measured) fj["why"] = why_not_measured(*ours, f.metric);
    fj["flags"] = measured ? reference_flags(*ours, *m, f) : std::vector<std::string>{};
    refs.push_back(fj);
  }
  j["references"] = refs;
  return j;
}

void write_json(const RunResults& results, const std::string& doorbell_version,
                const std::string& path) {
  std::ofstream out(path);
  if (!out) throw std::system_error(errno, std::generic_category(), "cannot write " + path);
  out << to_json(results, doorbell_version).dump(1) << "\n";
  if (!out) throw std::system_error(errno, std::generic_category(), "cannot write " + path);
}

namespace {
std::string csv_field(const std::string& s) {
  if (s.find_first_of(",\"\n") == std::string::npos) return s;
  std::string out = "\"";
  for (char c : s) {
    if (c == '"') out += '"';
    out += c;
  }
  return out + "\"";
}
std::string params_text(const Scenario& sc) {
  std::string out;
  for (const auto& p : sc.params) {
    if (!out.empty()) out += ';';
    out += p.name + "=" + p.value;
  }
  return out;
}
}  // namespace

void write_csv(const RunResults& results, const std::string& path) {
  std::ofstream out(path);
  if (!out) throw std::system_error(errno, std::generic_category(), "cannot write " + path);
  out << "scenario,group,params,clock,status,metric,unit,count,min,p50,p90,p99,p99.9,max,mean,"
         "stddev,p50_rep_min,p50_rep_median,p50_rep_max,repetitions\n";
  for (const auto& r : results.scenarios) {
    const Scenario& sc = *r.scenario;
    const std::string head = csv_field(sc.name) + "," + csv_field(sc.group) + "," +
                             csv_field(params_text(sc)) + "," + std::string(clock_name(sc.clock)) +
                             "," + status_name(r.status) + ",";
    if (r.status != ScenarioResult::Status::ok) {
      // head ends with the 6th field's comma: 14 more make the 20 of the header.
      out << head << ",,,,,,,,,,,,,," << r.repetitions << "\n";
      continue;
    }
    for (const auto& m : r.metrics) {
      const Summary& s = m.summary;
      out << head << csv_field(m.name) << ",ns,"
          << fmt::format("{},{},{},{},{},{},{},{},{},{},{},{}", s.count, s.min, s.p50, s.p90, s.p99,
                         s.p999, s.max, s.mean, s.stddev, m.p50_across_reps.min,
                         m.p50_across_reps.median, m.p50_across_reps.max)
          << "," << r.repetitions << "\n";
    }
    for (const auto& [name, sp] : r.counter_spread) {
      out << head << csv_field("counter:" + name) << ",count,"
          << fmt::format(",{},{},,,,{},,,{},{},{}", sp.min, sp.median, sp.max, sp.min, sp.median,
                         sp.max)
          << "," << r.repetitions << "\n";
    }
  }
  if (!out) throw std::system_error(errno, std::generic_category(), "cannot write " + path);
}

void print_table(const RunResults& results, std::ostream& out) {
  const Environment& e = results.environment;
  out << fmt::format(
      "doorbell bench: {} · {} cpus · kernel {} · virtualization {} · clocksource {}\n",
      e.cpu_model, e.cpus_online, e.kernel, e.virtualization, e.clocksource);
  out << fmt::format(
      "interval clock {} (one read {:.1f} ns; monotonic read {:.1f} ns) · signal frame "
      "AT_MINSIGSTKSZ {} B · build {}\n",
      e.interval_clock, e.interval_clock == "tsc" ? e.tsc_read_ns : e.monotonic_read_ns,
      e.monotonic_read_ns, e.min_signal_stack, e.build_type);
  out << "machine: " << e.machine_summary << " · load " << e.load_average << " → "
      << e.load_average_after << "\n";
  // The first screen: what this run says, computed from the same figures
  // the report reads (the results as a file would hold them).
  out << "\n" << format_summary(summarize_run(results_from_json(to_json(results, "")))) << "\n";
  out << "Absolute times are for this machine only; the ratios are what travels. p50 spread = "
         "min/median/max of each repetition's p50.\n";
  std::string group;
  bool few_samples = false;  // some percentile cell carries the mark
  for (const auto& r : results.scenarios) {
    const Scenario& sc = *r.scenario;
    if (sc.group != group) {
      group = sc.group;
      out << fmt::format("\n{:<46} {:>5} {:>9} {:>9} {:>9} {:>9} {:>9} {:>8}  {}\n", group, "clock",
                         "p50", "p90", "p99", "p99.9", "max", "count", "p50 spread over reps");
    }
    std::string title = sc.title.empty() ? sc.name : sc.title;
    // A title longer than its column gets a line of its own, whole: cut to
    // the column, rows that differ only at the end ("round trip, threads,
    // other core: pthread_ki…") read the same.
    const auto characters =
        std::count_if(title.begin(), title.end(), [](char c) { return (c & 0xC0) != 0x80; });
    if (characters > 44) {
      out << "  " << title << "\n";
      title.clear();
    }
    if (r.status != ScenarioResult::Status::ok) {
      out << fmt::format("  {:<44} {}: {}\n", title,
                         r.status == ScenarioResult::Status::skipped ? "skipped" : "FAILED",
                         r.reason);
      continue;
    }
    for (const auto& m : r.metrics) {
      const Summary& s = m.summary;
      const std::string label = m.name == sc.primary_metric ? title : std::string("    ") + m.name;
      if (s.count == 0) {
        // An empty distribution has no percentiles: never print it as zeros.
        out << fmt::format("  {:<44} {:>5} no samples in this run{}\n", label, clock_name(sc.clock),
                           sc.primary_metric == m.name ? "" : " (nothing of this kind happened)");
        continue;
      }
      if (!unsupported_percentiles(static_cast<double>(s.count)).empty()) few_samples = true;
      out << fmt::format(
          "  {:<44} {:>5} {:>9} {:>9} {:>9} {:>9} {:>9} {:>8}  {} / {} / {}\n", label,
          clock_name(sc.clock), percentile_cell("p50", s.p50, s.count),
          percentile_cell("p90", s.p90, s.count), percentile_cell("p99", s.p99, s.count),
          percentile_cell("p99.9", s.p999, s.count), format_duration(s.max), s.count,
          format_duration(m.p50_across_reps.min), format_duration(m.p50_across_reps.median),
          format_duration(m.p50_across_reps.max));
    }
    if (!r.counter_spread.empty()) {
      std::string line;
      for (const auto& [name, sp] : r.counter_spread)
        line += fmt::format("{}{}={:.4g}", line.empty() ? "" : "  ", name, sp.median);
      // The count column is every repetition's samples together; a counter
      // is the median of the repetitions' own: a stop_latency row with count
      // 3 showed samples=0 (most repetitions took none). Say both.
      out << fmt::format("      counters (median of {} reps; count is all reps together): ",
                         r.repetitions)
          << line << "\n";
    }
    for (const auto& note : r.notes) out << "      note: " << note << "\n";
    for (const auto& warning : r.warnings) out << "      WARNING: " << warning << "\n";
  }
  if (few_samples)
    out << fmt::format(
        "\nFEW SAMPLES: a percentile marked * rests on fewer samples than it needs (p50 {}, p90 "
        "{}, p99 {}, p99.9 {}): it is the largest sample, not a tail; the summary, the ratios "
        "and the published figures do not quote it bare\n",
        samples_needed(50), samples_needed(90), samples_needed(99), samples_needed(99.9));
  if (!results.ratios.empty()) {
    out << fmt::format("\n{:<40} {:>10} {:>10} {:>8}  {}\n", "ratios (this run)", "ours",
                       "published", "ours/pub", "source of the published figure");
    for (const auto& r : results.ratios) {
      const Ratio& ratio = *r.ratio;
      // '!': built from a flagged row or a percentile its count cannot
      // support; the FLAGGED lines below say which.
      const std::string ours =
          r.available ? format_ratio(r.value) + (r.flags.empty() ? "" : "!") : "-";
      const std::string pub = ratio.reference > 0 ? format_ratio(ratio.reference) : "-";
      const std::string vs =
          r.available && ratio.reference > 0 ? fmt::format("{:.2f}", r.versus_reference) : "-";
      out << fmt::format("  {:<38} {:>10} {:>10} {:>8}  {}\n", ratio.name, ours, pub, vs,
                         ratio.reference_source.empty() ? "-" : ratio.reference_source);
      if (!r.available) out << "      not computed: " << r.why << "\n";
      for (const auto& flag : r.flags) out << "      FLAGGED: " << flag << "\n";
      if (r.available && !ratio.numerator_words.empty())
        out << "      "
            << format_ratio_words(r.value, ratio.numerator_words, ratio.denominator_words) << "\n";
      if (!ratio.meaning.empty()) out << "      " << ratio.meaning << "\n";
    }
  }
  bool header = false;
  for (const auto& f : all_references()) {
    const ScenarioResult* ours = results.find(f.scenario);
    if (ours == nullptr) continue;  // not selected in this run
    const MetricResult* m = reference_metric(*ours, f);
    if (!header) {
      out << fmt::format("\n{:<40} {:>10} {:>10}  {}\n", "published figures beside ours",
                         "published", "ours", "source");
      header = true;
    }
    if (m == nullptr || m->summary.count == 0) {
      out << fmt::format("  {:<38} {:>10} {:>10}  {}\n      not measured: {}\n", f.what,
                         format_duration(f.value_ns), "-", f.source,
                         why_not_measured(*ours, f.metric));
      continue;
    }
    const std::vector<std::string> flags = reference_flags(*ours, *m, f);
    out << fmt::format(
        "  {:<38} {:>10} {:>10}  {} ({} of {} of {})\n", f.what, format_duration(f.value_ns),
        format_duration(statistic(m->summary, f.statistic)) + (flags.empty() ? "" : "!"), f.source,
        f.statistic, m->name, f.scenario);
    for (const auto& flag : flags) out << "      FLAGGED: " << flag << "\n";
  }
  std::size_t failed = 0, flagged = 0;
  for (const auto& r : results.scenarios) {
    if (r.status == ScenarioResult::Status::failed) ++failed;
    if (!r.warnings.empty()) ++flagged;
  }
  out << fmt::format("\n{} scenarios in {:.1f} s", results.scenarios.size(), results.wall_s);
  if (failed > 0) out << fmt::format(", {} FAILED", failed);
  if (flagged > 0) out << fmt::format(", {} flagged (WARNING above)", flagged);
  out << "\n";
  const Interruption& stop = results.interrupted;
  if (stop.signal != 0)
    out << fmt::format(
        "INTERRUPTED by {}{}: the rows above are what ran{}\n", signal_name(stop.signal),
        stop.during.empty() ? std::string() : " during " + stop.during,
        stop.not_run.empty()
            ? std::string()
            : fmt::format("; {} not run (first: {})", stop.not_run.size(), stop.not_run.front()));
}

}  // namespace doorbell::lab
