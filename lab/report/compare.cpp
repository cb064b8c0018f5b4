#include "lab/report/compare.h"

#include <cmath>
#include <cstdlib>
#include <filesystem>

#include <fmt/format.h>

#include "lab/common/format.h"
#include "lab/harness/histogram.h"
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

namespace {

// A percentile of a metric as a cell: '*' when its count cannot support it
// (histogram.h, samples_needed).
std::string percentile_cell(const lab::MetricRecord* m, const char* statistic) {
  if (m == nullptr) return num_cell("–");
  return num_cell(lab::format_duration(m->summary.statistic(statistic)) +
                  (lab::supported_by(statistic, m->summary.count) ? "" : "*"));
}

// Whether a change built from this row's statistic must be marked: the row
// is flagged, or the percentile rests on too few samples.
bool marks_change(const lab::ScenarioRecord* s, const lab::MetricRecord* m, const char* statistic) {
  return m != nullptr && (s->flagged() || !lab::supported_by(statistic, m->summary.count));
}

}  // namespace

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
    h += percentile_cell(ma, "p50") + percentile_cell(mb, "p50") +
         change_cell(a50, b50, marks_change(a, ma, "p50") || marks_change(b, mb, "p50"));
    h += percentile_cell(ma, "p99") + percentile_cell(mb, "p99") +
         change_cell(a99, b99, marks_change(a, ma, "p99") || marks_change(b, mb, "p99")) +
         "</tr>\n";
  }
  return h + "</table>\n";
}

namespace {

double number_of(const std::string& text) {
  if (text.empty()) return lab::kNotMeasured;
  char* end = nullptr;
  const double v = std::strtod(text.c_str(), &end);
  return end != text.c_str() && std::isfinite(v) && v > 0 ? v : lab::kNotMeasured;
}

// "KVM/PTI on": what the environment block says about kernel entries.
std::string entry_kind(const lab::ResultsFile& f) {
  std::string hypervisor = f.environment_value("hypervisor");
  if (hypervisor.empty()) hypervisor = f.environment_value("virtualization");
  if (hypervisor.empty() || hypervisor == "none") hypervisor = "bare metal";
  const std::string pti = f.environment_value("pti");
  return hypervisor + "/PTI " + (pti.empty() ? "unknown" : pti);
}

// B/A of the p50 of one scenario's primary metric; NaN unless both ran.
double row_change(const LabeledRun& a, const LabeledRun& b, const std::string& name) {
  const lab::ScenarioRecord* x = a.find(name);
  const lab::ScenarioRecord* y = b.find(name);
  const lab::MetricRecord* mx = x && x->ok() ? x->primary() : nullptr;
  const lab::MetricRecord* my = y && y->ok() ? y->primary() : nullptr;
  if (!mx || !my || !(mx->summary.p50 > 0) || !(my->summary.p50 > 0)) return lab::kNotMeasured;
  return my->summary.p50 / mx->summary.p50;
}

// B/A as which run is slower and by how much ("A 5.10x slower"), "about
// equal" within 10%.
std::string change_text(double b_over_a, const std::string& la, const std::string& lb) {
  if (!std::isfinite(b_over_a)) return "not in both runs";
  if (b_over_a < 1.1 && b_over_a > 1 / 1.1) return "about equal";
  return b_over_a >= 1 ? lb + " " + lab::format_ratio(b_over_a) + " slower"
                       : la + " " + lab::format_ratio(1 / b_over_a) + " slower";
}

}  // namespace

std::string explain_machines(const LabeledRun& a, const LabeledRun& b) {
  const lab::ResultsFile& fa = *a.results;
  const lab::ResultsFile& fb = *b.results;
  // The cost of a kernel entry in each run: the ladder's getpid row (many
  // samples, every repetition) where both ran it; the start-up probe of the
  // environment block otherwise. Never one of each: the sentence compares
  // like with like, and the row it rests on is not quoted again as evidence.
  const lab::ScenarioRecord* ra = a.find("ladder/syscall_getpid");
  const lab::ScenarioRecord* rb = b.find("ladder/syscall_getpid");
  const lab::MetricRecord* ma = ra && ra->ok() ? ra->primary() : nullptr;
  const lab::MetricRecord* mb = rb && rb->ok() ? rb->primary() : nullptr;
  const bool rows = ma && mb && ma->summary.p50 > 0 && mb->summary.p50 > 0;
  const double sa = rows ? ma->summary.p50 : number_of(fa.environment_value("syscall_ns"));
  const double sb = rows ? mb->summary.p50 : number_of(fb.environment_value("syscall_ns"));
  if (!std::isfinite(sa) || !std::isfinite(sb)) {
    std::string which = !std::isfinite(sa) && !std::isfinite(sb)
                            ? "Neither file records"
                            : (!std::isfinite(sa) ? a.label : b.label) + " does not record";
    return which +
           " the cost of a kernel entry (the ladder/syscall_getpid row, or syscall_ns, written "
           "by doorbell from 0.2 on): compare ratios measured within each run, not absolute "
           "times";
  }
  const std::string source = rows ? "getpid row p50" : "syscall probe at start-up";
  std::string evidence;
  const double sig = row_change(a, b, "ladder/signal_kill_handler");
  const double atom = row_change(a, b, "ladder/atomic_store_load_seq_cst");
  if (std::isfinite(sig) || std::isfinite(atom))
    evidence = fmt::format(" (here: signal row {}, atomic row {})",
                           change_text(sig, a.label, b.label), change_text(atom, a.label, b.label));
  const double factor = sa > sb ? sa / sb : sb / sa;
  const std::string cheaper = sa > sb ? b.label : a.label;
  const std::string costs =
      fmt::format("{} {} vs {}: {} vs {}", source, lab::format_duration(sa > sb ? sb : sa),
                  lab::format_duration(sa > sb ? sa : sb), entry_kind(sa > sb ? fb : fa),
                  entry_kind(sa > sb ? fa : fb));
  if (factor < 1.1)
    return fmt::format(
        "{} and {} enter the kernel at about the same cost ({} {} vs {}: {} vs {}): differences "
        "between them come from the CPU, the clock or the load, not from kernel entries{}",
        a.label, b.label, source, lab::format_duration(sa), lab::format_duration(sb),
        entry_kind(fa), entry_kind(fb), evidence);
  return fmt::format(
      "{}'s kernel entry is {} cheaper ({}): syscall- and signal-bound rows differ by that, "
      "atomics do not{}",
      cheaper, lab::format_ratio(factor), costs, evidence);
}

}  // namespace doorbell::report
