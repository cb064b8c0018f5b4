#include "lab/harness/runner.h"

#include <gtest/gtest.h>

#include <nlohmann/json.hpp>
#include <sstream>

#include "lab/harness/results.h"

namespace doorbell::lab {
namespace {

int g_calls = 0;
int g_warmup_calls = 0;

// Records the repetition number + 1 as every sample, so each repetition's
// p50 differs and the spread across repetitions is known.
const Registrar kTestScenarios{std::vector<Scenario>{
    {.name = "test/known_values",
     .group = "test",
     .title = "known values",
     .description = "records rep+1 ns",
     .params = {{"threads", "4"}},
     .budget_s = 5.0,
     .samples = 100,
     .run =
         [](Context& ctx) {
           ++g_calls;
           if (ctx.warmup()) {
             ++g_warmup_calls;
             ctx.metric().record(1e9);  // must be discarded
             return;
           }
           std::size_t n = 0;
           while (ctx.keep_going(n)) {
             ctx.metric().record(ctx.repetition() + 1.0);
             ctx.metric("other").record(7.0);
             (void)ctx.metric("never");  // a distribution nothing went into
             ++n;
           }
           ctx.counter("sent", 100);
           ctx.add_counter("delivered", 60);
           ctx.add_counter("delivered", 40);
           ctx.raw_sample("latency", 1.0);
           ctx.note("a note");
         }},
    {.name = "test/skips",
     .group = "test",
     .title = "skips",
     .run = [](Context&) { throw SkipScenario("no such hardware"); }},
    {.name = "test/fails",
     .group = "test",
     .title = "fails",
     .run = [](Context&) { throw std::runtime_error("broken"); }},
    {.name = "test/time_bound",
     .group = "test",
     .title = "time bound",
     .budget_s = 0.05,
     .samples = 1000000000,
     .in_default_suite = false,
     .run =
         [](Context& ctx) {
           std::size_t n = 0;
           const uint64_t start = monotonic_ns();
           while (ctx.keep_going(n)) ++n;
           ctx.metric().record(static_cast<double>(monotonic_ns() - start));
         }},
}};

const RatioRegistrar kRatios{{{.name = "known / other",
                               .numerator = "test/known_values",
                               .denominator = "test/time_bound",
                               .reference = 2.0,
                               .reference_source = "made up"}}};

RunOptions options_for(std::vector<std::string> filters, int reps = 3) {
  RunOptions o;
  o.filters = std::move(filters);
  o.repetitions = reps;
  o.progress = false;
  return o;
}

TEST(Runner, WarmUpIsDiscardedAndRepetitionsAreCounted) {
  // In this process, to count the calls; the isolated run (the default) is
  // compared with it below.
  auto options = options_for({"test/known_values"});
  options.isolate = false;
  const auto results = run_scenarios(options, select_scenarios(options));
  ASSERT_EQ(results.scenarios.size(), 1u);
  const ScenarioResult& r = results.scenarios[0];
  EXPECT_EQ(r.status, ScenarioResult::Status::ok);
  EXPECT_EQ(g_warmup_calls, 1);
  EXPECT_EQ(g_calls, 4);
  EXPECT_EQ(r.repetitions, 3);
  const MetricResult* m = r.primary();
  ASSERT_NE(m, nullptr);
  EXPECT_EQ(m->summary.count, 300u);
  EXPECT_LT(m->summary.max, 10.0);  // the warm-up's 1 s sample is gone
  EXPECT_NEAR(m->p50_across_reps.min, 1.0, 0.01);
  EXPECT_NEAR(m->p50_across_reps.median, 2.0, 0.02);
  EXPECT_NEAR(m->p50_across_reps.max, 3.0, 0.03);
  ASSERT_NE(r.metric("other"), nullptr);
  EXPECT_EQ(r.counter_spread.at("delivered").median, 100.0);
  EXPECT_EQ(r.counters.at("sent").size(), 3u);
  EXPECT_EQ(m->raw.size(), 3u);
  EXPECT_EQ(r.notes, std::vector<std::string>{"a note"});
}

// Each scenario runs in a process of its own by default: what comes back
// over the pipe is what the same run gives in this process, to the bucket.
TEST(Runner, IsolatedRunGivesWhatAnInProcessRunGives) {
  auto here = options_for({"test/known_values"});
  here.isolate = false;
  const int calls_before = g_calls;
  const auto a = run_scenarios(here, select_scenarios(here));
  const auto isolated = options_for({"test/known_values"});
  const auto b = run_scenarios(isolated, select_scenarios(isolated));
  EXPECT_EQ(g_calls - calls_before, 4);  // this process ran only the in-process run
  ASSERT_EQ(a.scenarios.size(), 1u);
  ASSERT_EQ(b.scenarios.size(), 1u);
  const ScenarioResult& x = a.scenarios[0];
  const ScenarioResult& y = b.scenarios[0];
  ASSERT_EQ(y.status, ScenarioResult::Status::ok) << y.reason;
  EXPECT_EQ(x.repetitions, y.repetitions);
  ASSERT_EQ(x.metrics.size(), y.metrics.size());
  for (std::size_t i = 0; i < x.metrics.size(); ++i) {
    SCOPED_TRACE(x.metrics[i].name);
    EXPECT_EQ(x.metrics[i].name, y.metrics[i].name);
    EXPECT_EQ(x.metrics[i].summary.count, y.metrics[i].summary.count);
    EXPECT_EQ(x.metrics[i].summary.p50, y.metrics[i].summary.p50);
    EXPECT_EQ(x.metrics[i].summary.max, y.metrics[i].summary.max);
    EXPECT_EQ(x.metrics[i].summary.mean, y.metrics[i].summary.mean);
    EXPECT_EQ(x.metrics[i].p50_across_reps.min, y.metrics[i].p50_across_reps.min);
    EXPECT_EQ(x.metrics[i].p50_across_reps.max, y.metrics[i].p50_across_reps.max);
    EXPECT_EQ(x.metrics[i].raw, y.metrics[i].raw);
  }
  EXPECT_EQ(x.counters, y.counters);
  EXPECT_EQ(x.notes, y.notes);
  EXPECT_TRUE(y.warnings.empty());
}

TEST(Runner, SkipAndFailureAreRecordedAndTheRunGoesOn) {
  const auto options = options_for({"test/skips", "test/fails", "test/known_values"}, 1);
  const auto results = run_scenarios(options, select_scenarios(options));
  ASSERT_EQ(results.scenarios.size(), 3u);
  EXPECT_EQ(results.find("test/skips")->status, ScenarioResult::Status::skipped);
  EXPECT_EQ(results.find("test/skips")->reason, "no such hardware");
  EXPECT_EQ(results.find("test/fails")->status, ScenarioResult::Status::failed);
  EXPECT_EQ(results.find("test/fails")->reason, "broken");
  EXPECT_EQ(results.find("test/known_values")->status, ScenarioResult::Status::ok);
}

TEST(Runner, FilterGlobsAndSuites) {
  EXPECT_EQ(select_scenarios(options_for({"test/*"})).size(), 3u);           // the default suite's
  EXPECT_EQ(select_scenarios(options_for({"test/time_bound"})).size(), 1u);  // named exactly
  RunOptions full_glob = options_for({"test/*"});
  full_glob.suite = "full";
  EXPECT_EQ(select_scenarios(full_glob).size(), 4u);
  EXPECT_EQ(select_scenarios(options_for({"test/s*"})).size(), 1u);
  EXPECT_TRUE(select_scenarios(options_for({"nothing/*"})).empty());
  RunOptions suite = options_for({});
  EXPECT_EQ(select_scenarios(suite).size(), 3u);  // time_bound is full-suite only
  suite.suite = "full";
  EXPECT_EQ(select_scenarios(suite).size(), 4u);
}

TEST(Runner, TimeBudgetEndsARepetitionNoEarlierThanItsBudget) {
  const auto options = options_for({"test/time_bound"}, 1);
  const auto results = run_scenarios(options, select_scenarios(options));
  const MetricResult* m = results.scenarios.at(0).primary();
  ASSERT_NE(m, nullptr);
  EXPECT_GE(m->summary.max, 0.05e9 * 0.99);  // lower bound only
}

TEST(Runner, QuickModeShrinksSamples) {
  auto options = options_for({"test/known_values"}, 1);
  options.quick = true;
  const auto results = run_scenarios(options, select_scenarios(options));
  EXPECT_EQ(results.scenarios.at(0).primary()->summary.count, 10u);
}

TEST(Runner, RatiosUseTheNamedStatistic) {
  const auto options = options_for({"test/known_values", "test/time_bound"}, 1);
  const auto results = run_scenarios(options, select_scenarios(options));
  ASSERT_EQ(results.ratios.size(), 1u);
  const RatioResult& r = results.ratios[0];
  ASSERT_TRUE(r.available);
  const double expected = 1.0 / results.find("test/time_bound")->primary()->summary.p50;
  EXPECT_NEAR(r.value, expected, expected * 0.01);
  EXPECT_NEAR(r.versus_reference, r.value / 2.0, 1e-12);
}

// A ratio that cannot be computed says why, in the result, the JSON (a "why"
// beside the null value) and the table; never a bare n/a.
ScenarioResult result_of(const Scenario& scenario,
                         std::vector<std::pair<std::string, double>> samples) {
  ScenarioResult r;
  r.scenario = &scenario;
  r.repetitions = 1;
  for (const auto& [name, value] : samples) {
    MetricResult m;
    m.name = name;
    m.merged.record(value);
    m.summary = summarize(m.merged);
    r.metrics.push_back(std::move(m));
  }
  return r;
}

TEST(Runner, RatioWithZeroOrMissingDenominatorSaysWhy) {
  const Scenario known{.name = "ratiotest/known", .group = "ratiotest"};
  const Scenario zero{.name = "ratiotest/zero", .group = "ratiotest"};
  const Scenario skips{.name = "test/skips", .group = "ratiotest"};
  RunResults results;
  results.scenarios.push_back(result_of(known, {{"latency", 5.0}, {"other", 6.0}}));
  results.scenarios.push_back(result_of(zero, {{"latency", 0.0}, {"other", 3.0}}));
  results.scenarios.push_back(result_of(skips, {}));
  results.scenarios.back().status = ScenarioResult::Status::skipped;
  results.scenarios.back().reason = "no such hardware";
  const std::vector<Ratio> ratios = {
      {.name = "known / zero",
       .numerator = "ratiotest/known",
       .denominator = "ratiotest/zero",
       .zero_denominator = "the wait moved into the send"},
      {.name = "known / zero, generic",
       .numerator = "ratiotest/known",
       .denominator = "ratiotest/zero"},
      {.name = "known / skips", .numerator = "ratiotest/known", .denominator = "test/skips"},
      {.name = "known / zero's other",
       .numerator = "ratiotest/known",
       .denominator = "ratiotest/zero",
       .metric = "other"},
      {.name = "known / not selected",
       .numerator = "ratiotest/known",
       .denominator = "ratiotest/absent"}};
  results.ratios = compute_ratios(results.scenarios, ratios);
  ASSERT_EQ(results.ratios.size(), 4u);  // the unselected one is left out
  EXPECT_FALSE(results.ratios[0].available);
  EXPECT_NE(results.ratios[0].why.find("p50 of 'latency' of ratiotest/zero) is 0"),
            std::string::npos)
      << results.ratios[0].why;
  EXPECT_NE(results.ratios[0].why.find("the wait moved into the send"), std::string::npos);
  EXPECT_FALSE(results.ratios[1].available);
  EXPECT_NE(results.ratios[1].why.find("is 0: "), std::string::npos) << results.ratios[1].why;
  EXPECT_FALSE(results.ratios[2].available);
  EXPECT_NE(results.ratios[2].why.find("test/skips was skipped: no such hardware"),
            std::string::npos)
      << results.ratios[2].why;
  ASSERT_TRUE(results.ratios[3].available) << results.ratios[3].why;
  EXPECT_DOUBLE_EQ(results.ratios[3].value, 2.0);
  EXPECT_TRUE(results.ratios[3].why.empty());

  const nlohmann::json j = to_json(results, "9.9");
  EXPECT_TRUE(j["ratios"][0]["value"].is_null());
  EXPECT_EQ(j["ratios"][0]["why"], results.ratios[0].why);
  EXPECT_FALSE(j["ratios"][3].contains("why"));
  EXPECT_EQ(j["ratios"][3]["metric"], "other");

  std::ostringstream out;
  print_table(results, out);
  EXPECT_NE(out.str().find("not computed: " + results.ratios[0].why), std::string::npos)
      << out.str();
  EXPECT_EQ(out.str().find("n/a"), std::string::npos) << out.str();
}

// One scenario's two metrics: a baseline measured interleaved with the
// primary metric (the rate limiter's on/off), and a numerator metric the
// scenario did not record, which says so.
TEST(Runner, RatioOfTwoMetricsOfOneScenario) {
  const Scenario both{.name = "ratiotest/both", .group = "ratiotest"};
  RunResults results;
  results.scenarios.push_back(result_of(both, {{"latency", 8.0}, {"baseline", 6.0}}));
  const std::vector<Ratio> ratios = {{.name = "baseline / latency",
                                      .numerator = "ratiotest/both",
                                      .denominator = "ratiotest/both",
                                      .numerator_metric = "baseline"},
                                     {.name = "absent / latency",
                                      .numerator = "ratiotest/both",
                                      .denominator = "ratiotest/both",
                                      .numerator_metric = "absent"}};
  results.ratios = compute_ratios(results.scenarios, ratios);
  ASSERT_EQ(results.ratios.size(), 2u);
  ASSERT_TRUE(results.ratios[0].available) << results.ratios[0].why;
  EXPECT_NEAR(results.ratios[0].value, 0.75, 0.75 / 64);
  EXPECT_FALSE(results.ratios[1].available);
  EXPECT_NE(results.ratios[1].why.find("absent"), std::string::npos) << results.ratios[1].why;

  const nlohmann::json j = to_json(results, "9.9");
  EXPECT_EQ(j["ratios"][0]["numerator_metric"], "baseline");
  EXPECT_FALSE(j["ratios"][0].contains("metric"));
}

TEST(Results, JsonCarriesSchemaEnvironmentAndEveryScenario) {
  auto options = options_for({"test/*"}, 2);
  options.suite = "full";
  const auto results = run_scenarios(options, select_scenarios(options));
  const nlohmann::json j = nlohmann::json::parse(to_json(results, "9.9").dump());
  EXPECT_EQ(j["schema"], "doorbell-results");
  EXPECT_EQ(j["schema_version"], 1);
  for (const char* key : {"kernel", "cpu_model", "cpus_online", "virtualization", "clocksource",
                          "signal_cost_features", "min_signal_stack_bytes", "mitigations"})
    EXPECT_TRUE(j["environment"].contains(key)) << key;
  ASSERT_EQ(j["scenarios"].size(), 4u);
  const auto& known = j["scenarios"][0];
  EXPECT_EQ(known["name"], "test/known_values");
  EXPECT_EQ(known["params"]["threads"], "4");
  EXPECT_EQ(known["status"], "ok");
  EXPECT_EQ(known["metrics"]["latency"]["count"], 200);
  EXPECT_EQ(known["metrics"]["latency"]["per_repetition"].size(), 2u);
  EXPECT_FALSE(known["metrics"]["latency"]["histogram"].empty());
  EXPECT_EQ(known["counters"]["sent"]["per_repetition"].size(), 2u);
  EXPECT_EQ(j["scenarios"][1]["status"], "skipped");
  EXPECT_EQ(j["scenarios"][2]["status"], "failed");
  EXPECT_EQ(j["ratios"].size(), 1u);
}

TEST(Results, TableNamesSkipsFailuresAndRatios) {
  auto options = options_for({"test/*"}, 1);
  options.suite = "full";
  const auto results = run_scenarios(options, select_scenarios(options));
  std::ostringstream out;
  print_table(results, out);
  const std::string text = out.str();
  EXPECT_NE(text.find("skipped: no such hardware"), std::string::npos);
  EXPECT_NE(text.find("FAILED: broken"), std::string::npos);
  EXPECT_NE(text.find("known / other"), std::string::npos);
  EXPECT_NE(text.find("made up"), std::string::npos);
  // An empty distribution says so instead of printing zeros.
  const std::size_t never = text.find("    never");
  ASSERT_NE(never, std::string::npos) << text;
  EXPECT_NE(text.substr(never, text.find('\n', never) - never).find("no samples"),
            std::string::npos)
      << text;
}

TEST(Results, FormatDuration) {
  EXPECT_EQ(format_duration(0.31), "0.31 ns");
  EXPECT_EQ(format_duration(812), "812 ns");
  EXPECT_EQ(format_duration(3100), "3.10 µs");
  EXPECT_EQ(format_duration(15.2e6), "15.2 ms");
}

}  // namespace
}  // namespace doorbell::lab
