// The results reader (lab/harness/results_reader.h) against the writer
// (results.h): what to_json writes, parse_results reads back field for field;
// what is not a results file is a ResultsError that says which field is
// wrong, never a crash or a JSON library exception.
#include "lab/harness/results_reader.h"

#include <gtest/gtest.h>

#include <cmath>
#include <filesystem>
#include <fstream>
#include <string>

#include <nlohmann/json.hpp>

#include "lab/harness/results.h"
#include "lab/harness/scenario.h"

namespace doorbell::lab {
namespace {

const Scenario& ladder_scenario() {
  static const Scenario s = [] {
    Scenario sc;
    sc.name = "ladder/self_kill:mode=handler";
    sc.group = "ladder";
    sc.title = "kill(self) with a handler";
    sc.description = "from kill() to the handler's return";
    sc.params = {{"mode", "handler"}, {"threads", "4"}};
    sc.clock = ClockKind::monotonic;
    sc.primary_metric = "e2e";
    sc.pinning = Pinning::same_core;
    return sc;
  }();
  return s;
}

const Scenario& skipped_scenario() {
  static const Scenario s = [] {
    Scenario sc;
    sc.name = "costs/avx512";
    sc.group = "costs";
    sc.title = "AVX-512 state";
    return sc;
  }();
  return s;
}

const Ratio& the_ratio() {
  static const Ratio r = [] {
    Ratio ratio;
    ratio.name = "kill / itself";
    ratio.numerator = ladder_scenario().name;
    ratio.denominator = ladder_scenario().name;
    ratio.statistic = "p50";
    ratio.reference = 2.5;
    ratio.reference_source = "seed 001";
    ratio.meaning = "one over one";
    return ratio;
  }();
  return r;
}

const Ratio& unavailable_ratio() {
  static const Ratio r = [] {
    Ratio ratio;
    ratio.name = "avx / kill";
    ratio.numerator = skipped_scenario().name;
    ratio.denominator = ladder_scenario().name;
    return ratio;
  }();
  return r;
}

MetricResult metric(const std::string& name, double base) {
  MetricResult m;
  m.name = name;
  for (int rep = 0; rep < 2; ++rep) {
    Histogram h;
    for (int i = 1; i <= 100; ++i) h.record(base * i);
    m.per_rep.push_back(summarize(h));
    m.merged.merge(h);
  }
  m.summary = summarize(m.merged);
  m.p50_across_reps = {base * 49, base * 50, base * 51};
  m.mean_across_reps = {base * 48, base * 50.5, base * 52};
  m.raw = {base, base * 2, base * 3};
  return m;
}

RunResults sample_run() {
  static const bool registered = [] {
    register_reference(
        {ladder_scenario().name, "kill+handler elsewhere", 1500.0, "mean", "seed 001, somewhere"});
    return true;
  }();
  (void)registered;
  RunResults run;
  run.environment.hostname = "testhost";
  run.environment.kernel = "6.1.0-test";
  run.environment.cpus_online = 2;
  run.environment.root = true;
  run.environment.tsc_ghz = 2.5;
  run.environment.timestamp_utc = "2024-01-01T00:00:00Z";
  run.options.suite = "default";
  run.options.quick = true;
  run.options.repetitions = 2;
  run.options.filters = {"ladder/*", "costs/*"};
  run.wall_s = 12.5;

  ScenarioResult ok;
  ok.scenario = &ladder_scenario();
  ok.metrics = {metric("e2e", 1000.0), metric("send", 100.0)};
  ok.counters["signals"] = {10, 12};
  ok.counter_spread["signals"] = {10, 11, 12};
  ok.notes = {"first note", "second note"};
  ok.repetitions = 2;
  ok.wall_s = 1.25;
  run.scenarios.push_back(ok);

  ScenarioResult skipped;
  skipped.scenario = &skipped_scenario();
  skipped.status = ScenarioResult::Status::skipped;
  skipped.reason = "no avx512f on this CPU";
  run.scenarios.push_back(skipped);

  run.ratios.push_back({&the_ratio(), true, 1.0, 0.4});
  run.ratios.push_back({&unavailable_ratio(), false, 0.0, 0.0});
  return run;
}

void expect_summary(const SummaryRecord& got, const Summary& want) {
  EXPECT_EQ(got.count, static_cast<double>(want.count));
  EXPECT_EQ(got.min, want.min);
  EXPECT_EQ(got.max, want.max);
  EXPECT_EQ(got.mean, want.mean);
  EXPECT_EQ(got.stddev, want.stddev);
  EXPECT_EQ(got.p50, want.p50);
  EXPECT_EQ(got.p90, want.p90);
  EXPECT_EQ(got.p99, want.p99);
  EXPECT_EQ(got.p999, want.p999);
}

TEST(ResultsReader, ReadsBackWhatTheWriterWrote) {
  const RunResults run = sample_run();
  const ResultsFile f = parse_results(to_json(run, "9.9.9").dump(1));

  EXPECT_EQ(f.schema_version, 1);
  EXPECT_EQ(f.doorbell_version, "9.9.9");
  EXPECT_EQ(f.wall_s, 12.5);
  EXPECT_EQ(f.environment_value("hostname"), "testhost");
  EXPECT_EQ(f.environment_value("kernel"), "6.1.0-test");
  EXPECT_EQ(f.environment_value("cpus_online"), "2");
  EXPECT_EQ(f.environment_value("root"), "true");
  EXPECT_EQ(f.environment_value("tsc_ghz"), "2.5");
  EXPECT_EQ(f.environment_value("timestamp_utc"), "2024-01-01T00:00:00Z");
  EXPECT_EQ(f.environment.size(), to_json(run.environment).size());
  ASSERT_TRUE(f.has_options);
  EXPECT_EQ(f.options.suite, "default");
  EXPECT_TRUE(f.options.quick);
  EXPECT_EQ(f.options.repetitions, 2);
  EXPECT_EQ(f.options.filters, (std::vector<std::string>{"ladder/*", "costs/*"}));
  EXPECT_EQ(nlohmann::json::parse(f.options.json), to_json(run, "x")["options"]);

  ASSERT_EQ(f.scenarios.size(), 2u);
  const ScenarioRecord& s = f.scenarios[0];
  const Scenario& sc = ladder_scenario();
  EXPECT_EQ(s.name, sc.name);
  EXPECT_EQ(s.group, "ladder");
  EXPECT_EQ(s.title, sc.title);
  EXPECT_EQ(s.description, sc.description);
  EXPECT_EQ(s.params, (std::vector<std::pair<std::string, std::string>>{{"mode", "handler"},
                                                                        {"threads", "4"}}));
  EXPECT_EQ(s.param("threads"), "4");
  EXPECT_EQ(s.clock, clock_name(sc.clock));
  EXPECT_EQ(s.clock_read_ns, clock_read_cost_ns(sc.clock));
  EXPECT_EQ(s.pinning, pinning_name(sc.pinning));
  EXPECT_EQ(s.status, ScenarioStatus::ok);
  EXPECT_TRUE(s.ok());
  EXPECT_EQ(s.reason, "");
  EXPECT_EQ(s.repetitions, 2);
  EXPECT_EQ(s.wall_s, 1.25);
  EXPECT_EQ(s.primary_metric, "e2e");
  ASSERT_EQ(s.metrics.size(), 2u);
  ASSERT_NE(s.primary(), nullptr);
  EXPECT_EQ(s.primary()->name, "e2e");
  for (const MetricResult& want : run.scenarios[0].metrics) {
    const MetricRecord* got = s.metric(want.name);
    ASSERT_NE(got, nullptr) << want.name;
    EXPECT_EQ(got->unit, "ns");
    expect_summary(got->summary, want.summary);
    EXPECT_EQ(got->p50_across_reps.min, want.p50_across_reps.min);
    EXPECT_EQ(got->p50_across_reps.median, want.p50_across_reps.median);
    EXPECT_EQ(got->p50_across_reps.max, want.p50_across_reps.max);
    EXPECT_EQ(got->mean_across_reps.median, want.mean_across_reps.median);
    ASSERT_EQ(got->per_repetition.size(), want.per_rep.size());
    for (std::size_t i = 0; i < want.per_rep.size(); ++i)
      expect_summary(got->per_repetition[i], want.per_rep[i]);
    std::vector<HistogramBucket> buckets;
    want.merged.for_each_bucket([&](double lo, double hi, uint64_t n) {
      buckets.push_back({lo, hi, double(n)});
    });
    ASSERT_EQ(got->histogram.size(), buckets.size());
    ASSERT_FALSE(buckets.empty());
    for (std::size_t i = 0; i < buckets.size(); ++i) {
      EXPECT_EQ(got->histogram[i].lower_ns, buckets[i].lower_ns);
      EXPECT_EQ(got->histogram[i].upper_ns, buckets[i].upper_ns);
      EXPECT_EQ(got->histogram[i].count, buckets[i].count);
    }
    EXPECT_EQ(got->raw, want.raw);
    EXPECT_EQ(got->summary.statistic("p99.9"), want.summary.p999);
  }
  ASSERT_EQ(s.counters.size(), 1u);
  EXPECT_EQ(s.counters[0].name, "signals");
  EXPECT_EQ(s.counters[0].per_repetition, (std::vector<double>{10, 12}));
  EXPECT_EQ(s.counters[0].spread.median, 11);
  EXPECT_EQ(s.notes, (std::vector<std::string>{"first note", "second note"}));

  const ScenarioRecord& k = f.scenarios[1];
  EXPECT_EQ(k.status, ScenarioStatus::skipped);
  EXPECT_EQ(k.reason, "no avx512f on this CPU");
  EXPECT_TRUE(k.metrics.empty());
  EXPECT_EQ(k.primary(), nullptr);
  EXPECT_EQ(f.find("costs/avx512"), &k);
  EXPECT_EQ(f.find("nope"), nullptr);

  ASSERT_EQ(f.ratios.size(), 2u);
  EXPECT_EQ(f.ratios[0].name, "kill / itself");
  EXPECT_EQ(f.ratios[0].numerator, sc.name);
  EXPECT_EQ(f.ratios[0].statistic, "p50");
  EXPECT_TRUE(f.ratios[0].available);
  EXPECT_EQ(f.ratios[0].value, 1.0);
  EXPECT_EQ(f.ratios[0].reference, 2.5);
  EXPECT_EQ(f.ratios[0].reference_source, "seed 001");
  EXPECT_EQ(f.ratios[0].versus_reference, 0.4);
  EXPECT_EQ(f.ratios[0].meaning, "one over one");
  // Not available: the writer writes null, the reader says NaN.
  EXPECT_FALSE(f.ratios[1].available);
  EXPECT_TRUE(std::isnan(f.ratios[1].value));
  EXPECT_TRUE(std::isnan(f.ratios[1].reference));
  EXPECT_EQ(f.ratio("avx / kill"), &f.ratios[1]);

  ASSERT_EQ(f.references.size(), 1u);
  EXPECT_EQ(f.references[0].scenario, sc.name);
  EXPECT_EQ(f.references[0].what, "kill+handler elsewhere");
  EXPECT_EQ(f.references[0].value_ns, 1500.0);
  EXPECT_EQ(f.references[0].statistic, "mean");
  EXPECT_EQ(f.references[0].ours_ns, run.scenarios[0].metrics[0].summary.mean);
}

TEST(ResultsReader, ReadsTheWritersFileFromDisk) {
  const auto path = std::filesystem::path(::testing::TempDir()) / "results_reader_test.json";
  write_json(sample_run(), "1.2.3", path.string());
  const ResultsFile f = read_results_file(path.string());
  EXPECT_EQ(f.doorbell_version, "1.2.3");
  EXPECT_EQ(f.scenarios.size(), 2u);
  std::filesystem::remove(path);
}

TEST(ResultsReader, ReadsTheCommittedResults) {
  for (const char* file : {"/docs/results/kvm-firecracker-intel-xeon-2vcpu.json",
                           "/tests/data/small_results.json", "/tests/data/small_results_b.json"}) {
    const ResultsFile f = read_results_file(std::string(DOORBELL_SOURCE_DIR) + file);
    EXPECT_FALSE(f.scenarios.empty()) << file;
  }
}

TEST(ResultsReader, DefaultsForAbsentFields) {
  const ResultsFile f = parse_results(
      R"({"schema": "doorbell-results", "schema_version": 1,
          "scenarios": [{"name": "wakeup/rtt:pin=same"}]})");
  ASSERT_EQ(f.scenarios.size(), 1u);
  const ScenarioRecord& s = f.scenarios[0];
  EXPECT_EQ(s.group, "wakeup");
  EXPECT_EQ(s.status, ScenarioStatus::ok);
  EXPECT_EQ(s.primary_metric, "latency");
  EXPECT_EQ(s.primary(), nullptr);
  EXPECT_FALSE(f.has_options);
  EXPECT_TRUE(std::isnan(f.wall_s));
  EXPECT_TRUE(f.ratios.empty());
}

// Files written before the row flags travelled (issue 36 item 5, issue 34
// item 9) have no "unsupported_percentiles" and no ratio or reference
// "flags": the reader derives them from the counts and warnings the file
// has, by the same rule as the writer.
TEST(ResultsReader, OldFilesGetTheirFlagsFromCountsAndWarnings) {
  const ResultsFile f = parse_results(
      R"({"schema": "doorbell-results", "schema_version": 1,
          "scenarios": [{"name": "e2e/few", "primary_metric": "e2e",
                         "metrics": {"e2e": {"count": 9, "p50": 5, "p99": 9}}},
                        {"name": "e2e/many", "primary_metric": "e2e",
                         "warnings": ["1 sample longer than the repetition's budget"],
                         "metrics": {"e2e": {"count": 5000, "p50": 5, "p99": 9}}}],
          "ratios": [{"name": "few / many", "numerator": "e2e/few", "denominator": "e2e/many",
                      "statistic": "p99", "value": 1.0}],
          "references": [{"scenario": "e2e/few", "what": "a paper", "value_ns": 3,
                          "statistic": "p99", "source": "there", "ours_ns": 9}]})");
  ASSERT_EQ(f.scenarios.size(), 2u);
  EXPECT_EQ(f.scenarios[0].primary()->unsupported_percentiles(),
            (std::vector<std::string>{"p90", "p99", "p99.9"}));
  EXPECT_TRUE(f.scenarios[1].primary()->unsupported_percentiles().empty());
  ASSERT_EQ(f.ratios.size(), 1u);
  ASSERT_EQ(f.ratios[0].flags.size(), 2u);
  EXPECT_EQ(f.ratios[0].flags[0], "p99 of 'e2e' of e2e/few rests on 9 samples (it needs 100)");
  EXPECT_NE(f.ratios[0].flags[1].find("e2e/many is flagged: 1 sample longer"), std::string::npos)
      << f.ratios[0].flags[1];
  ASSERT_EQ(f.references.size(), 1u);
  ASSERT_EQ(f.references[0].flags.size(), 1u);
  // A file that has the fields is taken at its word.
  nlohmann::json j = to_json(sample_run(), "1");
  j["ratios"][0]["flags"] = {"written by the writer"};
  const ResultsFile g = results_from_json(j);
  EXPECT_EQ(g.ratios[0].flags, std::vector<std::string>{"written by the writer"});
}

// The message of the ResultsError that parsing `text` throws ("" if none).
std::string error_of(const std::string& text) {
  try {
    parse_results(text);
  } catch (const ResultsError& e) {
    return e.what();
  }
  return "";
}

std::string valid_text() {
  return to_json(sample_run(), "1").dump();
}

// The valid document with one field replaced.
std::string with(const nlohmann::json::json_pointer& where, const nlohmann::json& value) {
  nlohmann::json j = to_json(sample_run(), "1");
  j[where] = value;
  return j.dump();
}

TEST(ResultsReader, TruncatedJsonIsAResultsError) {
  const std::string text = valid_text();
  for (std::size_t cut :
       {std::size_t{0}, std::size_t{1}, text.size() / 3, text.size() / 2, text.size() - 1}) {
    const std::string message = error_of(text.substr(0, cut));
    EXPECT_NE(message.find("not valid JSON"), std::string::npos) << cut << ": " << message;
  }
}

TEST(ResultsReader, WrongSchemaIsAResultsError) {
  EXPECT_NE(error_of("[]").find("not a JSON object"), std::string::npos);
  EXPECT_NE(error_of(R"({"schema": "something-else", "schema_version": 1, "scenarios": []})")
                .find("not a doorbell results file"),
            std::string::npos);
  EXPECT_NE(error_of(R"({"scenarios": []})").find("not a doorbell results file"),
            std::string::npos);
  EXPECT_NE(error_of(with(nlohmann::json::json_pointer("/schema_version"), 2))
                .find("unsupported schema_version 2"),
            std::string::npos);
  EXPECT_NE(error_of(with(nlohmann::json::json_pointer("/schema_version"), "1"))
                .find("unsupported schema_version"),
            std::string::npos);
  EXPECT_NE(error_of(R"({"schema": "doorbell-results", "schema_version": 1})").find("scenarios"),
            std::string::npos);
}

TEST(ResultsReader, WrongTypesNameTheField) {
  using P = nlohmann::json::json_pointer;
  struct Case {
    const char* pointer;
    nlohmann::json value;
    const char* expected;
  };
  const Case cases[] = {
      {"/scenarios", nlohmann::json::object(), "\"scenarios\" array"},
      {"/scenarios/0", "x", "scenarios[0]: expected an object, got a string"},
      {"/scenarios/0/name", 7, "scenarios[0].name: expected a string, got a number"},
      {"/scenarios/1/status", "maybe", "scenarios[1] (\"costs/avx512\").status: expected \"ok\""},
      {"/scenarios/0/metrics/e2e/p50", "fast",
       "scenarios[0] (\"ladder/self_kill:mode=handler\").metrics.e2e.p50: expected a number, got "
       "a string"},
      {"/scenarios/0/metrics/e2e/histogram/0", nlohmann::json::array({1, 2}),
       "metrics.e2e.histogram[0]: expected [lower_ns, upper_ns, count]"},
      {"/scenarios/0/metrics/e2e/histogram/0/2", "many",
       "metrics.e2e.histogram[0][2]: expected a number, got a string"},
      {"/scenarios/0/metrics", nlohmann::json::array(),
       ".metrics: expected an object, got an "
       "array"},
      {"/scenarios/0/params/mode", nlohmann::json::object(), ".params.mode: expected a string"},
      {"/scenarios/0/notes/0", 1, ".notes[0]: expected a string, got a number"},
      {"/scenarios/0/counters/signals/median", true, ".counters.signals.median: expected a number"},
      {"/ratios/0/value", "1", "ratios[0].value: expected a number, got a string"},
      {"/ratios/0/available", 1, "ratios[0].available: expected true or false"},
      {"/references/0/value_ns", nlohmann::json::array(),
       "references[0].value_ns: expected a "
       "number, got an array"},
      {"/environment", "x", "environment: expected an object, got a string"},
      {"/options/filters/0", 3, "options.filters[0]: expected a string, got a number"},
      {"/wall_s", "long", "wall_s: expected a number, got a string"},
  };
  for (const auto& c : cases) {
    const std::string message = error_of(with(P(c.pointer), c.value));
    EXPECT_NE(message.find(c.expected), std::string::npos)
        << c.pointer << ": got \"" << message << "\"";
  }
  // A scenario without a name.
  nlohmann::json j = to_json(sample_run(), "1");
  j["scenarios"][0].erase("name");
  EXPECT_NE(error_of(j.dump()).find("scenarios[0].name: missing"), std::string::npos);
}

TEST(ResultsReader, AMissingFileNamesThePath) {
  const std::string path = std::string(::testing::TempDir()) + "/no_such_results.json";
  try {
    read_results_file(path);
    FAIL() << "no ResultsError";
  } catch (const ResultsError& e) {
    EXPECT_NE(std::string(e.what()).find(path + ": cannot open"), std::string::npos) << e.what();
  }
}

TEST(ResultsReader, AFileWithBadContentNamesThePathAndTheField) {
  const auto path = std::filesystem::path(::testing::TempDir()) / "bad_results.json";
  std::ofstream(path) << with(nlohmann::json::json_pointer("/wall_s"), "long");
  try {
    read_results_file(path.string());
    FAIL() << "no ResultsError";
  } catch (const ResultsError& e) {
    EXPECT_NE(std::string(e.what()).find(path.string() + ": wall_s: expected a number"),
              std::string::npos)
        << e.what();
  }
  std::filesystem::remove(path);
}

}  // namespace
}  // namespace doorbell::lab
