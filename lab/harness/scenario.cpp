#include "lab/harness/scenario.h"

#include <fnmatch.h>
#include <sched.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>

namespace doorbell::lab {

std::string_view pinning_name(Pinning p) noexcept {
  switch (p) {
    case Pinning::same_core:
      return "same";
    case Pinning::other_core:
      return "other";
    case Pinning::none:
      break;
  }
  return "none";
}

Context::Context(bool quick, bool warmup, int repetition, double budget_s, std::size_t samples,
                 Pinning pinning, Repetition& out, uint64_t wait_deadline_ns, PhaseBoard* board)
    : quick_(quick),
      warmup_(warmup),
      repetition_(repetition),
      budget_s_(budget_s),
      samples_(samples == 0 ? 1 : samples),
      pinning_(pinning),
      deadline_ns_(monotonic_ns() + static_cast<uint64_t>(budget_s * 1e9)),
      wait_deadline_ns_(wait_deadline_ns != 0 ? wait_deadline_ns
                                              : deadline_ns_ + 60'000'000'000ull),
      out_(out),
      board_(board) {}

void Context::phase(const char* text) noexcept {
  if (board_ == nullptr) return;
  std::size_t n = 0;
  for (; text[n] != '\0' && n + 1 < sizeof board_->text; ++n) board_->text[n] = text[n];
  board_->text[n] = '\0';
}

int Context::cpu_for_role(int role) const {
  if (pinning_ == Pinning::none) return -1;
  const std::vector<int> cpus = allowed_cpus();
  if (cpus.empty()) return -1;
  if (pinning_ == Pinning::other_core && role > 0 && cpus.size() > 1)
    return cpus[1 + (role - 1) % (cpus.size() - 1)];
  return cpus[0];
}

void Context::pin_thread(int role) {
  const int cpu = cpu_for_role(role);
  if (cpu < 0) return;
  if (pinning_ == Pinning::other_core && role > 0 && allowed_cpus().size() < 2)
    note("other-core pinning impossible: this process may use one CPU; both roles share it");
  // Pinning is best effort: a cpuset may forbid it, and the note says so.
  if (!pin_to_cpu(cpu)) note("sched_setaffinity failed: not pinned");
}

void Context::raw_sample(const std::string& metric, double ns) {
  auto& samples = out_.raw[metric];
  if (samples.size() < kMaxRawSamples) samples.push_back(ns);
}

void Context::note(std::string text) {
  for (const auto& existing : out_.notes)
    if (existing == text) return;
  out_.notes.push_back(std::move(text));
}

namespace {
std::vector<Scenario>& scenario_list() {
  static std::vector<Scenario> list;
  return list;
}
std::vector<Ratio>& ratio_list() {
  static std::vector<Ratio> list;
  return list;
}
std::vector<ReferenceFigure>& reference_list() {
  static std::vector<ReferenceFigure> list;
  return list;
}
}  // namespace

void register_scenario(Scenario scenario) {
  for (const auto& existing : scenario_list()) {
    if (existing.name == scenario.name) {
      std::fprintf(stderr, "doorbell: two scenarios are named '%s'\n", scenario.name.c_str());
      std::abort();
    }
  }
  if (!scenario.run) {
    std::fprintf(stderr, "doorbell: scenario '%s' has no run()\n", scenario.name.c_str());
    std::abort();
  }
  scenario_list().push_back(std::move(scenario));
}

const std::vector<Scenario>& all_scenarios() {
  return scenario_list();
}
void register_ratio(Ratio ratio) {
  ratio_list().push_back(std::move(ratio));
}
const std::vector<Ratio>& all_ratios() {
  return ratio_list();
}
void register_reference(ReferenceFigure figure) {
  reference_list().push_back(std::move(figure));
}
const std::vector<ReferenceFigure>& all_references() {
  return reference_list();
}

bool glob_match(const std::string& pattern, const std::string& text) {
  return ::fnmatch(pattern.c_str(), text.c_str(), 0) == 0;
}

std::vector<int> allowed_cpus() {
  cpu_set_t set;
  CPU_ZERO(&set);
  std::vector<int> cpus;
  if (sched_getaffinity(0, sizeof set, &set) != 0) return cpus;
  for (int cpu = 0; cpu < CPU_SETSIZE; ++cpu)
    if (CPU_ISSET(cpu, &set)) cpus.push_back(cpu);
  return cpus;
}

bool pin_to_cpu(int cpu) noexcept {
  if (cpu < 0) return true;
  cpu_set_t set;
  CPU_ZERO(&set);
  CPU_SET(cpu, &set);
  return sched_setaffinity(0, sizeof set, &set) == 0;
}

}  // namespace doorbell::lab
