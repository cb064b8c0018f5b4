#include "lab/harness/runner.h"

#include <sched.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <unistd.h>

#include <fcntl.h>
#include <signal.h>

#include <algorithm>
#include <atomic>
#include <cmath>
#include <cstdio>
#include <exception>
#include <fstream>
#include <new>
#include <system_error>

#include <fmt/format.h>

#include "doorbell/signal_channel.h"
#include "lab/common/format.h"
#include "lab/common/time.h"
#include "lab/harness/clock.h"
#include "lab/harness/isolation.h"

namespace doorbell::lab {

std::vector<const Scenario*> select_scenarios(const RunOptions& options) {
  std::vector<const Scenario*> selected;
  for (const Scenario& s : all_scenarios()) {
    bool take = false;
    if (options.filters.empty()) {
      take = options.suite == "full" || s.in_default_suite;
    } else {
      // A glob takes the suite's scenarios only; a full-suite-only scenario
      // also needs --suite full, or a filter that names it exactly.
      for (const auto& pattern : options.filters) {
        const bool exact = pattern.find_first_of("*?[") == std::string::npos;
        if (!glob_match(pattern, s.name)) continue;
        take = take || exact || options.suite == "full" || s.in_default_suite;
      }
    }
    if (take) selected.push_back(&s);
  }
  // Groups in the order a reader follows: the ladder first, then wake-ups,
  // signals as events, delivery delay, the cost drivers, rate limiters and
  // partitions. Unknown groups keep their registration order, last.
  static const std::vector<std::string> kGroupOrder = {
      "ladder",   "wakeup",   "signalchannel", "e2e",       "siglock",  "fpu",
      "queueing", "directed", "timers",        "ratelimit", "partition"};
  auto rank = [](const Scenario* s) {
    const auto it = std::find(kGroupOrder.begin(), kGroupOrder.end(), s->group);
    return static_cast<std::size_t>(it - kGroupOrder.begin());
  };
  std::stable_sort(selected.begin(), selected.end(),
                   [&](const Scenario* a, const Scenario* b) { return rank(a) < rank(b); });
  return selected;
}

Spread spread_of(std::vector<double> values) {
  Spread s;
  if (values.empty()) return s;
  std::sort(values.begin(), values.end());
  s.min = values.front();
  s.max = values.back();
  const std::size_t n = values.size();
  s.median = n % 2 ? values[n / 2] : (values[n / 2 - 1] + values[n / 2]) / 2.0;
  return s;
}

const MetricResult* ScenarioResult::metric(const std::string& name) const {
  for (const auto& m : metrics)
    if (m.name == name) return &m;
  return nullptr;
}

const MetricResult* ScenarioResult::primary() const {
  if (scenario == nullptr) return nullptr;
  return metric(scenario->primary_metric);
}

const ScenarioResult* RunResults::find(const std::string& name) const {
  for (const auto& s : scenarios)
    if (s.scenario != nullptr && s.scenario->name == name) return &s;
  return nullptr;
}

namespace {

class Progress {
 public:
  explicit Progress(bool enabled) : enabled_(enabled && ::isatty(STDERR_FILENO)) {}
  ~Progress() { clear(); }
  void show(std::size_t index, std::size_t total, const std::string& name, double elapsed_s) {
    // Only for runs longer than a few seconds: short runs print nothing.
    if (!enabled_ || elapsed_s < 2.0) return;
    std::fprintf(stderr, "\r\033[K[%zu/%zu %5.1fs] %s", index + 1, total, elapsed_s, name.c_str());
    std::fflush(stderr);
    shown_ = true;
  }
  void clear() {
    if (shown_) std::fprintf(stderr, "\r\033[K");
    shown_ = false;
  }

 private:
  bool enabled_;
  bool shown_ = false;
};

// The one PhaseBoard of a run, in memory the scenarios' processes share
// with the runner (isolation.h), mapped once.
PhaseBoard* shared_phase_board() {
  static PhaseBoard* board = [] {
    void* p = ::mmap(nullptr, sizeof(PhaseBoard), PROT_READ | PROT_WRITE,
                     MAP_SHARED | MAP_ANONYMOUS, -1, 0);
    if (p == MAP_FAILED) throw std::system_error(errno, std::generic_category(), "mmap");
    return new (p) PhaseBoard();
  }();
  return board;
}

std::vector<std::function<void(pid_t)>>& after_process_hooks() {
  static std::vector<std::function<void(pid_t)>> hooks;
  return hooks;
}

// A repetition's budget: the scenario's, a fifth of it under --quick.
double repetition_budget_s(const Scenario& scenario, const RunOptions& options) {
  return options.quick ? scenario.budget_s / 5.0 : scenario.budget_s;
}

// Samples longer than the repetition's budget: a sample that outlasts the
// whole repetition it belongs to is a stall, not a measurement (a lost
// wake-up, a machine that stopped the process), and the row says so.
//
// A sample records one value in each metric of its row (an e2e sample:
// send, delay, send_delay, recv, e2e), so one stall shows in several
// metrics. The histograms keep no sample index, so a repetition's count is
// the largest count of any one of its metrics: the fewest samples that
// explain what every metric shows, each counted once (issue 34 item 6: one
// 0.3 s stop read "3 samples").
void flag_long_samples(const std::vector<Repetition>& reps, ScenarioResult& result) {
  // The repetition's budget as run (a fifth under --quick), as the warning
  // says.
  const double budget_ns = result.budget_s * 1e9;
  uint64_t total = 0;
  double longest = 0.0;
  std::string where;
  std::vector<std::string> metrics_over;
  std::vector<double> per_rep;
  for (const auto& rep : reps) {
    uint64_t over = 0;
    for (const auto& [name, h] : rep.metrics) {
      if (h.max() <= budget_ns) continue;
      uint64_t n = 0;
      h.for_each_bucket([&](double lower, double, uint64_t count) {
        if (lower > budget_ns) n += count;
      });
      // The bucket that holds the budget holds the max too when nothing
      // else is beyond it: the max is exact, so count at least it.
      over = std::max<uint64_t>(over, std::max<uint64_t>(n, 1));
      if (std::find(metrics_over.begin(), metrics_over.end(), name) == metrics_over.end())
        metrics_over.push_back(name);
      if (h.max() > longest) {
        longest = h.max();
        where = name;
      }
    }
    per_rep.push_back(static_cast<double>(over));
    total += over;
  }
  if (total == 0) return;
  result.counters["samples_over_budget"] = per_rep;
  std::string seen_in;
  if (metrics_over.size() > 1) {
    seen_in = " (a sample is counted once, however many of its metrics show it: here ";
    for (std::size_t i = 0; i < metrics_over.size(); ++i)
      seen_in += (i ? ", '" : "'") + metrics_over[i] + "'";
    seen_in += ")";
  }
  result.warnings.push_back(fmt::format(
      "{} sample{} longer than the repetition's budget of {}{} (the longest: {}, '{}'): a stall "
      "(a loaded machine, a stopped process, a lost wake-up) or a cost the budget did not allow "
      "for, not the mechanism's typical cost; the summary does not quote this row",
      total, total == 1 ? "" : "s", format_duration(budget_ns), seen_in, format_duration(longest),
      where));
}

ScenarioResult run_one(const Scenario& scenario, const RunOptions& options) {
  ScenarioResult result;
  result.scenario = &scenario;
  const uint64_t start = monotonic_ns();
  detail::Plan plan;
  plan.quick = options.quick;
  plan.budget_s = repetition_budget_s(scenario, options);
  plan.samples = options.quick ? std::max<std::size_t>(scenario.samples / 10, 1) : scenario.samples;
  plan.repetitions = std::max(1, options.repetitions);
  plan.limit_s = repetition_limit_s(scenario, options);
  plan.limit_given = options.scenario_timeout_s > 0.0;
  result.budget_s = plan.budget_s;
  result.limit_s = plan.limit_s;
  detail::Outcome outcome;
  if (options.isolate) {
    outcome = detail::run_isolated(scenario, plan, *shared_phase_board());
  } else {
    PhaseBoard board;
    outcome = detail::run_here(scenario, plan, board);
  }
  result.status = outcome.status;
  result.reason = std::move(outcome.reason);
  result.failure = std::move(outcome.failure);
  result.wall_s = static_cast<double>(monotonic_ns() - start) / 1e9;
  if (result.status != ScenarioResult::Status::ok) return result;
  std::vector<Repetition>& reps = outcome.reps;
  result.repetitions = static_cast<int>(reps.size());

  // Metrics in order of first appearance, the primary one first.
  std::vector<std::string> names{scenario.primary_metric};
  for (const auto& rep : reps)
    for (const auto& [name, h] : rep.metrics)
      if (std::find(names.begin(), names.end(), name) == names.end()) names.push_back(name);
  for (const auto& name : names) {
    MetricResult m;
    m.name = name;
    std::vector<double> p50s, means;
    bool any = false;
    for (const auto& rep : reps) {
      auto it = rep.metrics.find(name);
      if (it == rep.metrics.end()) continue;
      any = true;
      m.merged.merge(it->second);
      Summary s = summarize(it->second);
      m.per_rep.push_back(s);
      if (s.count > 0) {
        p50s.push_back(s.p50);
        means.push_back(s.mean);
      }
      auto raw = rep.raw.find(name);
      if (raw != rep.raw.end())
        for (double v : raw->second)
          if (m.raw.size() < Context::kMaxRawSamples) m.raw.push_back(v);
    }
    if (!any) continue;
    m.summary = summarize(m.merged);
    m.p50_across_reps = spread_of(p50s);
    m.mean_across_reps = spread_of(means);
    result.metrics.push_back(std::move(m));
  }
  for (const auto& rep : reps) {
    for (const auto& [name, value] : rep.counters) result.counters[name].push_back(value);
    for (const auto& note : rep.notes)
      if (std::find(result.notes.begin(), result.notes.end(), note) == result.notes.end())
        result.notes.push_back(note);
  }
  flag_long_samples(reps, result);
  for (const auto& [name, values] : result.counters)
    result.counter_spread[name] = spread_of(values);
  return result;
}

// Makes this process the subreaper of what the scenarios' processes start,
// for the length of a run, and puts the setting back.
class SubreaperScope {
 public:
  explicit SubreaperScope(bool on) {
    if (!on) return;
    int was = 0;
    if (::prctl(PR_GET_CHILD_SUBREAPER, &was) != 0) return;
    previous_ = was;
    if (!was) ::prctl(PR_SET_CHILD_SUBREAPER, 1);
  }
  ~SubreaperScope() {
    if (previous_ == 0) ::prctl(PR_SET_CHILD_SUBREAPER, 0);
  }
  SubreaperScope(const SubreaperScope&) = delete;
  SubreaperScope& operator=(const SubreaperScope&) = delete;

 private:
  int previous_ = -1;  // -1: not changed
};

}  // namespace

double repetition_limit_s(const Scenario& scenario, const RunOptions& options) {
  if (options.scenario_timeout_s > 0.0) return options.scenario_timeout_s;
  return 10.0 * repetition_budget_s(scenario, options) + 10.0;
}

namespace {
std::atomic<int> g_stop_signal{0};
std::atomic<int> g_wake_read{-1};
std::atomic<int> g_wake_write{-1};
// The dispositions StopOnSignals replaced (a forked scenario's process gets
// them back); valid while g_stop_installed.
struct sigaction g_previous_int, g_previous_term;
bool g_int_installed = false, g_term_installed = false;

extern "C" void on_stop_request(int signo) {
  request_stop(signo);
}

void make_wake_pipe() {
  if (g_wake_read.load() >= 0) return;
  int fds[2];
  if (::pipe2(fds, O_CLOEXEC | O_NONBLOCK) != 0) return;  // the poll's 1 s tick still sees it
  g_wake_write.store(fds[1]);
  g_wake_read.store(fds[0]);
}
}  // namespace

void request_stop(int signo) noexcept {
  const int saved = errno;
  int expected = 0;
  g_stop_signal.compare_exchange_strong(expected, signo);
  const int fd = g_wake_write.load();
  if (fd >= 0) {
    const char byte = 1;
    [[maybe_unused]] const ssize_t n = ::write(fd, &byte, 1);  // full pipe: already awake
  }
  errno = saved;
}

int stop_signal() noexcept {
  return g_stop_signal.load();
}

void clear_stop_request() noexcept {
  g_stop_signal.store(0);
  const int fd = g_wake_read.load();
  char drain[64];
  if (fd >= 0)
    while (::read(fd, drain, sizeof drain) > 0) {
    }
}

StopOnSignals::StopOnSignals() {
  make_wake_pipe();
  struct sigaction sa {};
  sa.sa_handler = on_stop_request;
  sigemptyset(&sa.sa_mask);
  sa.sa_flags = 0;  // no SA_RESTART: a blocking call returns EINTR and looks
  struct sigaction old {};
  if (::sigaction(SIGINT, nullptr, &old) == 0 && old.sa_handler != SIG_IGN &&
      ::sigaction(SIGINT, &sa, &g_previous_int) == 0)
    g_int_installed = true;
  if (::sigaction(SIGTERM, nullptr, &old) == 0 && old.sa_handler != SIG_IGN &&
      ::sigaction(SIGTERM, &sa, &g_previous_term) == 0)
    g_term_installed = true;
}

void StopOnSignals::restart_interrupted_calls() const {
  struct sigaction sa {};
  sa.sa_handler = on_stop_request;
  sigemptyset(&sa.sa_mask);
  sa.sa_flags = SA_RESTART;
  if (g_int_installed) ::sigaction(SIGINT, &sa, nullptr);
  if (g_term_installed) ::sigaction(SIGTERM, &sa, nullptr);
}

StopOnSignals::~StopOnSignals() {
  if (g_int_installed) ::sigaction(SIGINT, &g_previous_int, nullptr);
  if (g_term_installed) ::sigaction(SIGTERM, &g_previous_term, nullptr);
  g_int_installed = g_term_installed = false;
}

namespace detail {
int stop_wake_fd() noexcept {
  return g_wake_read.load();
}

void forget_stop_signals_in_child() noexcept {
  if (g_int_installed) ::sigaction(SIGINT, &g_previous_int, nullptr);
  if (g_term_installed) ::sigaction(SIGTERM, &g_previous_term, nullptr);
  const int r = g_wake_read.exchange(-1), w = g_wake_write.exchange(-1);
  if (r >= 0) ::close(r);
  if (w >= 0) ::close(w);
}
}  // namespace detail

void register_after_scenario_process(std::function<void(pid_t)> hook) {
  after_process_hooks().push_back(std::move(hook));
}

namespace {
std::vector<std::function<void()>>& process_exit_hooks() {
  static std::vector<std::function<void()>> hooks;
  return hooks;
}
}  // namespace

void register_scenario_process_exit(std::function<void()> hook) {
  process_exit_hooks().push_back(std::move(hook));
}

namespace detail {
void run_scenario_process_exit_hooks() {
  for (const auto& hook : process_exit_hooks()) {
    try {
      hook();
    } catch (const std::exception&) {
    }
  }
  process_exit_hooks().clear();
}

void run_after_scenario_process_hooks(pid_t pid) {
  for (const auto& hook : after_process_hooks()) {
    try {
      hook(pid);
    } catch (const std::exception&) {
      // Clean-up is best effort; the row's result stands.
    }
  }
}
}  // namespace detail

std::string why_not_measured(const ScenarioResult& s, const std::string& metric_name) {
  const std::string name = s.scenario->name;
  if (s.status == ScenarioResult::Status::skipped) return name + " was skipped: " + s.reason;
  if (s.status == ScenarioResult::Status::failed) return name + " failed: " + s.reason;
  const MetricResult* m = metric_name.empty() ? s.primary() : s.metric(metric_name);
  if (m == nullptr || m->summary.count == 0)
    return name + " recorded no '" +
           (metric_name.empty() ? s.scenario->primary_metric : metric_name) + "' samples" +
           (s.notes.empty() ? std::string() : " (its note: " + s.notes.front() + ")");
  return {};
}

std::vector<RatioResult> compute_ratios(const std::vector<ScenarioResult>& scenarios,
                                        const std::vector<Ratio>& ratios) {
  auto find = [&](const std::string& name) -> const ScenarioResult* {
    for (const auto& s : scenarios)
      if (s.scenario != nullptr && s.scenario->name == name) return &s;
    return nullptr;
  };
  std::vector<RatioResult> out;
  for (const Ratio& ratio : ratios) {
    RatioResult r;
    r.ratio = &ratio;
    const ScenarioResult* num = find(ratio.numerator);
    const ScenarioResult* den = find(ratio.denominator);
    if (num == nullptr || den == nullptr) continue;  // not selected in this run
    const std::string& num_metric =
        ratio.numerator_metric.empty() ? ratio.metric : ratio.numerator_metric;
    const MetricResult* a = num_metric.empty() ? num->primary() : num->metric(num_metric);
    const MetricResult* b = ratio.metric.empty() ? den->primary() : den->metric(ratio.metric);
    r.why = why_not_measured(*num, num_metric);
    if (r.why.empty()) r.why = why_not_measured(*den, ratio.metric);
    if (r.why.empty()) {
      const double x = statistic(a->summary, ratio.statistic);
      const double y = statistic(b->summary, ratio.statistic);
      const std::string metric_name =
          ratio.metric.empty() ? den->scenario->primary_metric : ratio.metric;
      if (!std::isfinite(x) || !std::isfinite(y)) {
        r.why = "no " + ratio.statistic + " of '" + metric_name + "' (not a number)";
      } else if (y <= 0.0) {
        r.why = "the denominator (" + ratio.statistic + " of '" + metric_name + "' of " +
                den->scenario->name + ") is 0: " +
                (ratio.zero_denominator.empty()
                     ? std::string("below the clock's resolution, or nothing was waited for")
                     : ratio.zero_denominator);
      } else {
        r.available = true;
        r.value = x / y;
        if (ratio.reference > 0.0) r.versus_reference = r.value / ratio.reference;
        const std::string num_name =
            num_metric.empty() ? num->scenario->primary_metric : num_metric;
        r.flags = figure_flags(num->scenario->name, num_name, ratio.statistic,
                               static_cast<double>(a->summary.count), num->warnings);
        for (auto& flag : figure_flags(den->scenario->name, metric_name, ratio.statistic,
                                       static_cast<double>(b->summary.count), den->warnings))
          if (std::find(r.flags.begin(), r.flags.end(), flag) == r.flags.end())
            r.flags.push_back(std::move(flag));
      }
    }
    out.push_back(std::move(r));
  }
  return out;
}

std::vector<RatioResult> compute_ratios(const std::vector<ScenarioResult>& scenarios) {
  return compute_ratios(scenarios, all_ratios());
}

const MetricResult* reference_metric(const ScenarioResult& scenario,
                                     const ReferenceFigure& figure) {
  return figure.metric.empty() ? scenario.primary() : scenario.metric(figure.metric);
}

RunResults run_scenarios(const RunOptions& options, const std::vector<const Scenario*>& selected) {
  RunResults results;
  results.options = options;
  results.environment = probe_environment();
  // Calibrated once here, not again in every scenario's process.
  (void)IntervalClock::get();
  SubreaperScope subreaper(options.isolate);
  const uint64_t start = monotonic_ns();
  Progress progress(options.progress);
  for (std::size_t i = 0; i < selected.size(); ++i) {
    if (stop_signal() != 0) {
      results.interrupted.signal = stop_signal();
      for (std::size_t j = i; j < selected.size(); ++j)
        results.interrupted.not_run.push_back(selected[j]->name);
      break;
    }
    progress.show(i, selected.size(), selected[i]->name,
                  static_cast<double>(monotonic_ns() - start) / 1e9);
    results.scenarios.push_back(run_one(*selected[i], options));
    ScenarioResult& row = results.scenarios.back();
    if (stop_signal() != 0 && row.status == ScenarioResult::Status::failed &&
        row.failure.kind != "interrupted" &&
        (row.failure.kind == "died" || row.failure.kind == "error")) {
      // The terminal's Ctrl-C reached the scenario's process too (it is in
      // the foreground process group): it died of it, or its wait failed.
      row.failure.kind = "interrupted";
      row.reason =
          fmt::format("interrupted by {} in {}", signal_name(stop_signal()), row.failure.phase);
    }
    if (row.status == ScenarioResult::Status::failed && row.failure.kind == "interrupted") {
      results.interrupted.signal = stop_signal();
      results.interrupted.during = selected[i]->name;
      for (std::size_t j = i + 1; j < selected.size(); ++j)
        results.interrupted.not_run.push_back(selected[j]->name);
      break;
    }
  }
  progress.clear();
  results.wall_s = static_cast<double>(monotonic_ns() - start) / 1e9;
  {
    std::ifstream loadavg("/proc/loadavg");
    std::getline(loadavg, results.environment.load_average_after);
  }
  results.ratios = compute_ratios(results.scenarios);
  return results;
}

}  // namespace doorbell::lab
