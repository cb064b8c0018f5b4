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

}  // namespace
}  // namespace doorbell::lab
