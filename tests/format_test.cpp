// The lab's one spelling of a duration and a ratio (lab/common/format.h), and
// the terminal table that prints them (issue 36 item 12): a ratio keeps its
// three figures (1.0046 is "1.00x", not "1x"), a duration that rounds into
// the next unit is written in it (a watchdog limit of 0.001 s is "1.00 ms",
// never "0.0 s"), a ratio of two times reads right on either side of 1, and
// a title too long for its column is printed whole.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include <sstream>
#include <string>

#include "lab/common/format.h"
#include "lab/harness/results.h"
#include "lab/harness/runner.h"

namespace doorbell::lab {
namespace {

TEST(Format, RatioKeepsThreeFigures) {
  EXPECT_EQ(format_ratio(1.0046), "1.00x");
  EXPECT_EQ(format_ratio(5.0), "5.00x");
  EXPECT_EQ(format_ratio(0.683), "0.683x");
  EXPECT_EQ(format_ratio(3.31), "3.31x");
  EXPECT_EQ(format_ratio(10.8), "10.8x");
  EXPECT_EQ(format_ratio(99.96), "100x");
  EXPECT_EQ(format_ratio(552.3), "552x");
}

TEST(Format, DurationRoundsIntoTheNextUnit) {
  EXPECT_EQ(format_duration(0.31), "0.31 ns");
  EXPECT_EQ(format_duration(9.999), "10 ns");
  EXPECT_EQ(format_duration(812), "812 ns");
  EXPECT_EQ(format_duration(999.7), "1.00 µs");
  EXPECT_EQ(format_duration(3100), "3.10 µs");
  EXPECT_EQ(format_duration(9999.7), "10.0 µs");
  EXPECT_EQ(format_duration(120.8e3), "120.8 µs");
  EXPECT_EQ(format_duration(999.97e3), "1.00 ms");
  EXPECT_EQ(format_duration(15.2e6), "15.2 ms");
  // A watchdog's limit (seconds * 1e9): --scenario-timeout 0.001 and 0.05.
  EXPECT_EQ(format_duration(0.001 * 1e9), "1.00 ms");
  EXPECT_EQ(format_duration(0.05 * 1e9), "50.0 ms");
  EXPECT_EQ(format_duration(999.97e6), "1.00 s");
  EXPECT_EQ(format_duration(10.2e9), "10.2 s");
  EXPECT_EQ(format_duration(150e9), "150 s");
}

TEST(Format, RatioOfTimesInWordsReadsRightOnBothSides) {
  EXPECT_EQ(format_ratio_words(0.683, "Asio", "our signalfd channel"),
            "Asio 1.46x faster than our signalfd channel");
  EXPECT_EQ(format_ratio_words(1.46, "Asio", "our signalfd channel"),
            "Asio 1.46x slower than our signalfd channel");
  EXPECT_EQ(format_ratio_words(1.004, "Asio", "X"), "Asio about as fast as X");
  EXPECT_EQ(format_ratio_words(0.0, "Asio", "X"), "-");
}

Scenario long_title(const std::string& name, const std::string& title) {
  Scenario s;
  s.name = name;
  s.group = "wakeup";
  s.title = title;
  return s;
}

ScenarioResult ok_row(const Scenario& s, double p50) {
  ScenarioResult r;
  r.scenario = &s;
  MetricResult m;
  m.name = "latency";
  m.summary.count = 100;
  m.summary.p50 = m.summary.p90 = m.summary.p99 = m.summary.p999 = m.summary.max = p50;
  m.p50_across_reps = {p50, p50, p50};
  r.metrics.push_back(m);
  r.repetitions = 1;
  return r;
}

// Titles that differ only after the column's 44 characters were cut to the
// same prefix ("round trip, threads, other core: pthread_ki…" three times).
TEST(Table, LongTitlesArePrintedWhole) {
  const Scenario a = long_title("wakeup/rtt:method=pthread_kill_handler,pin=other",
                                "round trip, threads, other core: pthread_kill + handler");
  const Scenario b = long_title("wakeup/rtt:method=pthread_kill_sigwait,pin=other",
                                "round trip, threads, other core: pthread_kill + sigwaitinfo");
  RunResults results;
  results.scenarios.push_back(ok_row(a, 5000));
  results.scenarios.push_back(ok_row(b, 6000));
  std::ostringstream out;
  print_table(results, out);
  const std::string text = out.str();
  EXPECT_NE(text.find(a.title), std::string::npos) << text;
  EXPECT_NE(text.find(b.title), std::string::npos) << text;
  EXPECT_EQ(text.find("…"), std::string::npos) << text;
  // The figures follow on the next line.
  const std::size_t at = text.find(b.title);
  ASSERT_NE(at, std::string::npos);
  const std::size_t next = text.find('\n', at) + 1;
  EXPECT_NE(text.substr(next, text.find('\n', next) - next).find("6.00 µs"), std::string::npos)
      << text;
}

// "asio / SignalChannel 0.683x — how much slower Asio is": below 1 Asio was
// the faster one; the table says which, by how much.
TEST(Table, RatioOfTimesSaysWhichSideIsFaster) {
  const Scenario a = long_title("test/asio", "asio");
  const Scenario b = long_title("test/signalfd", "signalfd");
  Ratio ratio{.name = "asio / SignalChannel(signalfd)",
              .numerator = "test/asio",
              .denominator = "test/signalfd",
              .meaning = "Asio's self-pipe against our signalfd channel",
              .numerator_words = "Asio",
              .denominator_words = "our signalfd channel"};
  RunResults results;
  results.scenarios.push_back(ok_row(a, 683));
  results.scenarios.push_back(ok_row(b, 1000));
  results.ratios.push_back({.ratio = &ratio, .available = true, .value = 0.683});
  std::ostringstream out;
  print_table(results, out);
  EXPECT_NE(out.str().find("Asio 1.46x faster than our signalfd channel"), std::string::npos)
      << out.str();
  const nlohmann::json j = to_json(results, "test");
  EXPECT_EQ(j["ratios"][0]["in_words"], "Asio 1.46x faster than our signalfd channel");
}

// Issue 36 item 5: an e2e row of count 9 showed p90 = p99 = p99.9 = max
// without a word. A percentile its count cannot support is marked in the
// table, with a FEW SAMPLES line, and listed in the JSON.
TEST(Table, PercentilesTheCountCannotSupportAreMarked) {
  const Scenario few = long_title("test/few", "nine samples");
  const Scenario many = long_title("test/many", "a thousand samples");
  RunResults results;
  results.scenarios.push_back(ok_row(few, 7000));
  results.scenarios.back().metrics[0].summary.count = 9;
  results.scenarios.back().metrics[0].summary.p50 = 5000;
  results.scenarios.push_back(ok_row(many, 3000));
  results.scenarios.back().metrics[0].summary.count = 1000;
  std::ostringstream out;
  print_table(results, out);
  const std::string text = out.str();
  const auto line_of = [&](const std::string& title) {
    const std::size_t at = text.find(title);
    return at == std::string::npos ? std::string() : text.substr(at, text.find('\n', at) - at);
  };
  // p50 stands; p90, p99 and p99.9 carry the mark; max does not.
  EXPECT_NE(line_of("nine samples").find("5.00 µs  7.00 µs*  7.00 µs*  7.00 µs*   7.00 µs "),
            std::string::npos)
      << text;
  EXPECT_EQ(line_of("a thousand samples").find('*'), std::string::npos) << text;
  EXPECT_NE(text.find("FEW SAMPLES"), std::string::npos) << text;
  const nlohmann::json j = to_json(results, "test");
  EXPECT_EQ(j["scenarios"][0]["metrics"]["latency"]["unsupported_percentiles"],
            nlohmann::json::array({"p90", "p99", "p99.9"}));
  EXPECT_EQ(j["scenarios"][1]["metrics"]["latency"]["unsupported_percentiles"],
            nlohmann::json::array());
}

// Issue 34 item 9: a ratio built from a flagged row, or from a percentile its
// count cannot support, says so in the table and the JSON.
TEST(Table, RatioFromAFlaggedOrThinRowIsMarked) {
  const Scenario a = long_title("test/flagged", "flagged");
  const Scenario b = long_title("test/thin", "thin");
  const Scenario c = long_title("test/plain", "plain");
  RunResults results;
  results.scenarios.push_back(ok_row(a, 3000));
  results.scenarios.back().metrics[0].summary.count = 5000;
  results.scenarios.back().warnings.push_back("1 sample longer than the repetition's budget");
  results.scenarios.push_back(ok_row(b, 2000));
  results.scenarios.back().metrics[0].summary.count = 9;
  results.scenarios.push_back(ok_row(c, 1000));
  results.scenarios.back().metrics[0].summary.count = 5000;
  const std::vector<Ratio> ratios = {
      {.name = "flagged / plain", .numerator = "test/flagged", .denominator = "test/plain"},
      {.name = "plain / thin, p99",
       .numerator = "test/plain",
       .denominator = "test/thin",
       .statistic = "p99"},
      {.name = "plain / plain", .numerator = "test/plain", .denominator = "test/plain"}};
  results.ratios = compute_ratios(results.scenarios, ratios);
  ASSERT_EQ(results.ratios.size(), 3u);
  const nlohmann::json j = to_json(results, "test");
  ASSERT_TRUE(j["ratios"][0].contains("flags")) << j["ratios"].dump(1);
  EXPECT_NE(j["ratios"][0]["flags"].dump().find("test/flagged is flagged: 1 sample longer"),
            std::string::npos)
      << j["ratios"][0].dump(1);
  ASSERT_TRUE(j["ratios"][1].contains("flags")) << j["ratios"].dump(1);
  EXPECT_NE(j["ratios"][1]["flags"].dump().find("p99 of 'latency' of test/thin rests on 9 "
                                                "samples (it needs 100)"),
            std::string::npos)
      << j["ratios"][1].dump(1);
  EXPECT_EQ(j["ratios"][2]["flags"], nlohmann::json::array());
  std::ostringstream out;
  print_table(results, out);
  const std::string text = out.str();
  EXPECT_NE(text.find("FLAGGED: test/flagged is flagged"), std::string::npos) << text;
  EXPECT_NE(text.find("FLAGGED: p99 of 'latency' of test/thin rests on 9 samples"),
            std::string::npos)
      << text;
  EXPECT_NE(text.find("3.00x!"), std::string::npos) << text;
  EXPECT_EQ(text.find("1.00x!"), std::string::npos) << text;
}

// "published figures beside ours" from a flagged row says so.
TEST(Table, PublishedFigureBesideAFlaggedRowIsMarked) {
  register_reference({.scenario = "test/reference_flagged",
                      .what = "a figure from a paper",
                      .value_ns = 2000,
                      .statistic = "p99",
                      .source = "a paper"});
  const Scenario a = long_title("test/reference_flagged", "flagged");
  RunResults results;
  results.scenarios.push_back(ok_row(a, 3000));
  results.scenarios.back().metrics[0].summary.count = 50;
  results.scenarios.back().warnings.push_back("1 sample longer than the repetition's budget");
  std::ostringstream out;
  print_table(results, out);
  const std::string text = out.str();
  const std::size_t at = text.find("a figure from a paper");
  ASSERT_NE(at, std::string::npos) << text;
  const std::string after = text.substr(at, 600);
  EXPECT_NE(after.find("3.00 µs!"), std::string::npos) << text;
  EXPECT_NE(after.find("FLAGGED: test/reference_flagged is flagged"), std::string::npos) << text;
  EXPECT_NE(after.find("p99 of 'latency' of test/reference_flagged rests on 50 samples"),
            std::string::npos)
      << text;
  const nlohmann::json j = to_json(results, "test");
  bool found = false;
  for (const auto& r : j["references"])
    if (r["scenario"] == "test/reference_flagged") {
      found = true;
      EXPECT_EQ(r["flags"].size(), 2u) << r.dump(1);
    }
  EXPECT_TRUE(found) << j["references"].dump(1);
}

}  // namespace
}  // namespace doorbell::lab
