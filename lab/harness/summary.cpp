#include "lab/harness/summary.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <limits>
#include <map>
#include <string_view>

#include "lab/common/format.h"
#include "lab/harness/histogram.h"

namespace doorbell::lab {
namespace {

bool starts_with(std::string_view s, std::string_view prefix) {
  return s.substr(0, prefix.size()) == prefix;
}

// statistic of metric (or the primary one) of an ok scenario that is not
// flagged; NaN otherwise: the summary quotes no figure its row warns about,
// and no percentile its count cannot support (histogram.h, samples_needed).
double figure(const ScenarioRecord* s, std::string_view stat, std::string_view metric = {}) {
  if (s == nullptr || !s->ok() || s->flagged()) return kNotMeasured;
  const MetricRecord* m = metric.empty() ? s->primary() : s->metric(metric);
  if (m == nullptr || !supported_by(stat, m->summary.count)) return kNotMeasured;
  return m->summary.statistic(stat);
}

// Whether the row ran, is not flagged and has the metric, but too few
// samples for the percentile `stat`.
bool too_few_for(const ScenarioRecord& s, std::string_view stat, std::string_view metric = {}) {
  if (!s.ok() || s.flagged()) return false;
  const MetricRecord* m = metric.empty() ? s.primary() : s.metric(metric);
  return m != nullptr && m->summary.count > 0 && !supported_by(stat, m->summary.count);
}

// "; left out, too few samples for a p99 (it needs 100): 2 rows" or "".
std::string left_out(std::size_t rows, std::string_view stat, double percent) {
  if (rows == 0) return {};
  return fmt::format("; left out, too few samples for a {} (it needs {}): {} row{}", stat,
                     samples_needed(percent), rows, rows == 1 ? "" : "s");
}

bool usable(double v) {
  return std::isfinite(v) && v > 0.0;
}

// "ladder/x did not run" / "ladder/x was skipped: why".
std::string absent(const ResultsFile& r, const std::string& name) {
  const ScenarioRecord* s = r.find(name);
  if (s == nullptr) return name + " did not run";
  if (!s->ok()) return name + " " + status_name(s->status) + ": " + s->reason;
  if (s->flagged()) return name + " is flagged: " + s->warnings.front();
  if (const MetricRecord* m = s->primary(); m != nullptr && too_few_for(*s, "p50"))
    return few_samples_text("p50", m->name, name, m->summary.count);
  return name + " has no figure";
}

SummaryLine signal_cost(const ResultsFile& r) {
  SummaryLine line{.topic = "a signal costs"};
  const std::string signal = "ladder/signal_kill_handler";
  const std::string atomic = "ladder/atomic_store_load_seq_cst";
  const std::string syscall = "ladder/syscall_getpid";
  const double s = figure(r.find(signal), "p50");
  const double a = figure(r.find(atomic), "p50");
  const double c = figure(r.find(syscall), "p50");
  if (!usable(s)) {
    line.text = "not measured (" + absent(r, signal) + ")";
    return line;
  }
  line.measured = true;
  line.scenarios.push_back(signal);
  std::vector<std::string> parts;
  if (usable(a)) {
    parts.push_back(format_ratio(s / a) + " an atomic store+load");
    line.scenarios.push_back(atomic);
  } else {
    parts.push_back("? atomics (" + absent(r, atomic) + ")");
  }
  if (usable(c)) {
    parts.push_back(format_ratio(s / c) + " a syscall");
    line.scenarios.push_back(syscall);
  } else {
    parts.push_back("? syscalls (" + absent(r, syscall) + ")");
  }
  line.text =
      fmt::format("{} and {} (kill + handler {} p50)", parts[0], parts[1], format_duration(s));
  return line;
}

SummaryLine cheapest_wakeup(const ResultsFile& r) {
  SummaryLine line{.topic = "cheapest cross-thread wake-up"};
  const ScenarioRecord* best = nullptr;
  double best_ns = std::numeric_limits<double>::infinity();
  for (const auto& s : r.scenarios) {
    if (!starts_with(s.name, "wakeup/rtt:") || s.param("pin") != "other") continue;
    const std::string method = s.param("method");
    // Rows that may never sleep: the busy poll, Bell's spin, and libstdc++'s
    // std::atomic::wait (and binary_semaphore, built on it), which spins and
    // yields before it sleeps on a futex: on a quiet machine the peer's
    // answer arrives during that spin, so its round trip is a spinning
    // thread's, not a sleeping one's.
    if (method == "busy_poll" || method.find("spin") != std::string::npos ||
        method == "atomic_wait" || method == "binary_semaphore")
      continue;
    const double v = figure(&s, "p50");
    if (usable(v) && v < best_ns) best_ns = v, best = &s;
  }
  if (best == nullptr) {
    line.text = "not measured (no wakeup/rtt:*,pin=other row ran)";
    return line;
  }
  line.measured = true;
  line.scenarios.push_back(best->name);
  line.text = fmt::format("{}, round trip {} p50 (a sleeping thread on another core)",
                          best->param("method"), format_duration(best_ns));
  return line;
}

// The metric delivery_p99 reads: send_delay, or delay in files written
// before send_delay.
std::string_view delivery_metric(const ScenarioRecord& s) {
  return s.metric("send_delay") != nullptr ? "send_delay" : "delay";
}

// p99 of send_delay (or delay); NaN when the row cannot support a p99.
double delivery_p99(const ScenarioRecord& s) {
  return figure(&s, "p99", delivery_metric(s));
}

SummaryLine delivery_delay(const ResultsFile& r) {
  SummaryLine line{.topic = "signal delivery, stock vs remedied"};
  // The largest K with a stock row and at least one remedy row that ran.
  std::map<int, std::pair<const ScenarioRecord*, std::vector<const ScenarioRecord*>>> by_k;
  std::size_t thin = 0;  // rows left out: too few samples for a p99
  for (const auto& s : r.scenarios) {
    if (!starts_with(s.name, "e2e/signal:") || !s.ok() || s.param("main") != "busy") continue;
    if (too_few_for(s, "p99", delivery_metric(s))) ++thin;
    if (!std::isfinite(delivery_p99(s))) continue;
    const int k = std::atoi(s.param("threads").c_str());
    if (s.param("policy") == "stock")
      by_k[k].first = &s;
    else
      by_k[k].second.push_back(&s);
  }
  for (auto it = by_k.rbegin(); it != by_k.rend(); ++it) {
    const auto& [stock, remedies] = it->second;
    if (stock == nullptr || remedies.empty()) continue;
    const ScenarioRecord* best = remedies.front();
    for (const auto* s : remedies)
      if (delivery_p99(*s) < delivery_p99(*best)) best = s;
    const double a = delivery_p99(*stock), b = delivery_p99(*best);
    line.measured = true;
    line.scenarios = {stock->name, best->name};
    line.text =
        fmt::format("at K={} busy threads, send+delay p99: stock {} vs {} {} ({})", it->first,
                    format_duration(a), best->param("policy"), format_duration(b),
                    b > 0 ? format_ratio(a / b) + " shorter"
                          : std::string("the remedy's p99 is 0: below the clock"));
    line.text += left_out(thin, "p99", 99);
    return line;
  }
  line.text = "not measured (no e2e/signal stock row beside a remedy row, main busy, ran" +
              left_out(thin, "p99", 99) + ")";
  return line;
}

SummaryLine best_partition(const ResultsFile& r) {
  SummaryLine line{.topic = "best partition method"};
  std::size_t thin = 0;  // rows left out: too few samples for a p99
  for (const auto& s : r.scenarios)
    if ((starts_with(s.name, "partition/case_study:") ||
         starts_with(s.name, "partition/stop_latency:")) &&
        too_few_for(s, "p99"))
      ++thin;
  for (const char* prefix : {"partition/case_study:", "partition/stop_latency:"}) {
    int best_k = -1;
    for (const auto& s : r.scenarios)
      if (starts_with(s.name, prefix) && std::isfinite(figure(&s, "p99")))
        best_k = std::max(best_k, std::atoi(s.param("threads").c_str()));
    if (best_k < 0) continue;
    const ScenarioRecord* best = nullptr;
    for (const auto& s : r.scenarios) {
      if (!starts_with(s.name, prefix) || std::atoi(s.param("threads").c_str()) != best_k) continue;
      const double v = figure(&s, "p99");
      if (!std::isfinite(v)) continue;
      if (best == nullptr || v < figure(best, "p99")) best = &s;
    }
    if (best == nullptr) continue;
    const bool case_study = starts_with(prefix, "partition/case_study");
    line.measured = true;
    line.scenarios.push_back(best->name);
    line.text = fmt::format("{}, {} p99 {} at K={} threads", best->param("method"),
                            case_study ? "window overrun" : "stop latency",
                            format_duration(figure(best, "p99")), best_k);
    line.text += left_out(thin, "p99", 99);
    return line;
  }
  line.text = "not measured (no partition/case_study or partition/stop_latency row ran" +
              left_out(thin, "p99", 99) + ")";
  return line;
}

}  // namespace

std::vector<SummaryLine> summarize_run(const ResultsFile& results) {
  return {signal_cost(results), cheapest_wakeup(results), delivery_delay(results),
          best_partition(results)};
}

std::string format_summary(const std::vector<SummaryLine>& lines) {
  std::string out = "on this machine:\n";
  for (const auto& line : lines) {
    out += "  " + line.topic + ": " + line.text;
    if (!line.scenarios.empty()) {
      out += "  [";
      for (std::size_t i = 0; i < line.scenarios.size(); ++i)
        out += (i ? ", " : "") + line.scenarios[i];
      out += "]";
    }
    out += "\n";
  }
  return out;
}

}  // namespace doorbell::lab
