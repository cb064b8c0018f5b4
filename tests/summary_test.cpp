// The "on this machine" summary (lab/harness/summary.h) from synthetic
// results: each line's figure and scenarios, the fallbacks, and a line whose
// scenarios did not run saying so. Also: the terminal table opens with it.
#include "lab/harness/summary.h"

#include <gtest/gtest.h>

#include <nlohmann/json.hpp>
#include <sstream>

#include "lab/harness/results.h"

namespace doorbell::lab {
namespace {

using nlohmann::json;

json scenario(const std::string& name, json params, const std::string& primary, json metrics,
              const std::string& status = "ok") {
  return json{{"name", name},       {"params", params}, {"primary_metric", primary},
              {"metrics", metrics}, {"status", status}, {"reason", status == "ok" ? "" : "why"}};
}
json metric(double p50, double p99, double count = 1000) {
  return json{{"p50", p50}, {"p99", p99}, {"count", count}};
}

ResultsFile synthetic() {
  json scenarios = json::array();
  scenarios.push_back(scenario("ladder/signal_kill_handler", json::object(), "latency",
                               {{"latency", metric(1000, 2000)}}));
  scenarios.push_back(scenario("ladder/atomic_store_load_seq_cst", json::object(), "latency",
                               {{"latency", metric(2, 3)}}));
  scenarios.push_back(scenario("ladder/syscall_getpid", json::object(), "latency",
                               {{"latency", metric(250, 300)}}));
  for (const auto& [method, rtt] :
       std::vector<std::pair<std::string, double>>{{"futex", 9000},
                                                   {"busy_poll", 100},
                                                   {"bell_spin", 200},
                                                   {"eventfd", 12000},
                                                   {"atomic_wait", 280},
                                                   {"binary_semaphore", 300}})
    scenarios.push_back(scenario("wakeup/rtt:method=" + method + ",pin=other",
                                 {{"method", method}, {"pin", "other"}}, "rtt",
                                 {{"rtt", metric(rtt, rtt * 2)}}));
  scenarios.push_back(scenario("wakeup/rtt:method=pipe,pin=same",
                               {{"method", "pipe"}, {"pin", "same"}}, "rtt",
                               {{"rtt", metric(10, 20)}}));
  auto e2e = [&](int k, const std::string& policy, double send_delay_p99) {
    scenarios.push_back(scenario(
        "e2e/signal:threads=" + std::to_string(k) + ",policy=" + policy + ",main=busy",
        {{"threads", std::to_string(k)}, {"policy", policy}, {"main", "busy"}}, "send_delay",
        {{"send_delay", metric(send_delay_p99 / 2, send_delay_p99)}, {"delay", metric(0, 0)}}));
  };
  e2e(8, "stock", 5e6);
  e2e(8, "receiver-fifo", 50e3);
  e2e(32, "stock", 9e6);
  e2e(32, "receiver-fifo", 90e3);
  e2e(32, "every-thread", 300e3);
  for (const auto& [method, p99] : std::vector<std::pair<std::string, double>>{
           {"sigstop", 4e6}, {"freezer", 1e6}, {"every_thread", 2e6}})
    scenarios.push_back(scenario("partition/case_study:threads=8,method=" + method,
                                 {{"threads", "8"}, {"method", method}}, "overrun",
                                 {{"overrun", metric(p99 / 2, p99)}}));
  scenarios.push_back(scenario("partition/case_study:threads=2,method=kill",
                               {{"threads", "2"}, {"method", "kill"}}, "overrun",
                               {{"overrun", metric(1, 2)}}));
  return results_from_json(
      json{{"schema", "doorbell-results"}, {"schema_version", 1}, {"scenarios", scenarios}});
}

TEST(Summary, EachLineHasItsFigureAndItsScenarios) {
  const auto lines = summarize_run(synthetic());
  ASSERT_EQ(lines.size(), 4u);
  for (const auto& l : lines) EXPECT_TRUE(l.measured) << l.topic << ": " << l.text;

  EXPECT_EQ(lines[0].text,
            "500x an atomic store+load and 4.00x a syscall (kill + handler 1.00 µs p50)");
  EXPECT_EQ(lines[0].scenarios.size(), 3u);

  // busy_poll and spinning methods do not sleep (std::atomic::wait and
  // binary_semaphore spin in libstdc++ first); same-core rows are not
  // cross-core.
  EXPECT_NE(lines[1].text.find("futex, round trip 9.00 µs p50"), std::string::npos)
      << lines[1].text;
  EXPECT_EQ(lines[1].scenarios, std::vector<std::string>{"wakeup/rtt:method=futex,pin=other"});

  // The largest K, the best remedy, on send_delay.
  EXPECT_NE(lines[2].text.find("K=32"), std::string::npos) << lines[2].text;
  EXPECT_NE(lines[2].text.find("stock 9.00 ms vs receiver-fifo 90.0 µs (100x shorter)"),
            std::string::npos)
      << lines[2].text;
  EXPECT_EQ(lines[2].scenarios.at(1), "e2e/signal:threads=32,policy=receiver-fifo,main=busy");

  EXPECT_NE(lines[3].text.find("freezer, window overrun p99 1.00 ms at K=8"), std::string::npos)
      << lines[3].text;
  EXPECT_EQ(lines[3].scenarios,
            std::vector<std::string>{"partition/case_study:threads=8,method=freezer"});

  const std::string text = format_summary(lines);
  EXPECT_EQ(text.rfind("on this machine:\n", 0), 0u);
  EXPECT_NE(text.find("[wakeup/rtt:method=futex,pin=other]"), std::string::npos);
}

TEST(Summary, LinesWhoseScenariosDidNotRunSaySo) {
  json scenarios = json::array();
  scenarios.push_back(
      scenario("ladder/signal_kill_handler", json::object(), "latency", json::object(), "skipped"));
  const auto lines = summarize_run(results_from_json(
      json{{"schema", "doorbell-results"}, {"schema_version", 1}, {"scenarios", scenarios}}));
  ASSERT_EQ(lines.size(), 4u);
  for (const auto& l : lines) {
    EXPECT_FALSE(l.measured);
    EXPECT_EQ(l.text.rfind("not measured (", 0), 0u) << l.text;
    EXPECT_TRUE(l.scenarios.empty());
  }
  EXPECT_NE(lines[0].text.find("ladder/signal_kill_handler skipped: why"), std::string::npos)
      << lines[0].text;
  EXPECT_NE(lines[1].text.find("no wakeup/rtt"), std::string::npos);
}

// A flagged row (samples longer than its budget) is never quoted: the line
// falls back to the next row, or says why it has no figure.
TEST(Summary, FlaggedRowsAreNotQuoted) {
  ResultsFile r = synthetic();
  for (auto& s : r.scenarios)
    if (s.name == "ladder/signal_kill_handler" || s.name == "wakeup/rtt:method=futex,pin=other" ||
        s.name == "e2e/signal:threads=32,policy=receiver-fifo,main=busy" ||
        s.name == "partition/case_study:threads=8,method=freezer")
      s.warnings.push_back("1 sample longer than the repetition's budget");
  const auto lines = summarize_run(r);
  ASSERT_EQ(lines.size(), 4u);
  EXPECT_FALSE(lines[0].measured);
  EXPECT_NE(lines[0].text.find("ladder/signal_kill_handler is flagged: 1 sample longer"),
            std::string::npos)
      << lines[0].text;
  EXPECT_NE(lines[1].text.find("eventfd, round trip 12.0 µs"), std::string::npos) << lines[1].text;
  EXPECT_NE(lines[2].text.find("every-thread"), std::string::npos) << lines[2].text;
  EXPECT_NE(lines[3].text.find("every_thread"), std::string::npos) << lines[3].text;
  for (const auto& l : lines)
    for (const auto& name : l.scenarios)
      EXPECT_FALSE(r.find(name)->flagged()) << l.topic << " quotes " << name;
}

// Issue 36 item 5: an e2e row of count 9 (p99 = max) was quoted as "149x
// shorter". A p99 from fewer than 100 samples is not quoted: the line falls
// back to the next K, and says which rows it left out and why.
TEST(Summary, PercentilesFromTooFewSamplesAreNotQuoted) {
  ResultsFile r = synthetic();
  for (auto& s : r.scenarios)
    if (s.name == "e2e/signal:threads=32,policy=receiver-fifo,main=busy" ||
        s.name == "e2e/signal:threads=32,policy=every-thread,main=busy" ||
        s.name == "partition/case_study:threads=8,method=freezer")
      for (auto& m : s.metrics) m.summary.count = 9;
  const auto lines = summarize_run(r);
  ASSERT_EQ(lines.size(), 4u);
  EXPECT_TRUE(lines[2].measured) << lines[2].text;
  EXPECT_NE(lines[2].text.find("K=8"), std::string::npos) << lines[2].text;
  EXPECT_NE(lines[2].text.find("too few samples for a p99"), std::string::npos) << lines[2].text;
  EXPECT_NE(lines[3].text.find("every_thread"), std::string::npos) << lines[3].text;
  // Nothing else of those rows is quoted either.
  for (const auto& l : lines)
    for (const auto& name : l.scenarios)
      EXPECT_NE(name, "e2e/signal:threads=32,policy=receiver-fifo,main=busy") << l.text;
  // With every remedy row thin, the line says why it has no figure.
  for (auto& s : r.scenarios)
    if (s.name.rfind("e2e/", 0) == 0)
      for (auto& m : s.metrics) m.summary.count = 50;
  const auto thin = summarize_run(r);
  EXPECT_FALSE(thin[2].measured) << thin[2].text;
  EXPECT_NE(thin[2].text.find("too few samples for a p99"), std::string::npos) << thin[2].text;
}

TEST(Summary, TheTableOpensWithIt) {
  RunResults results;
  std::ostringstream out;
  print_table(results, out);
  const std::string text = out.str();
  const auto at = text.find("on this machine:");
  ASSERT_NE(at, std::string::npos) << text;
  EXPECT_LT(at, text.find("Absolute times")) << text;
  EXPECT_NE(text.find("a signal costs: not measured (ladder/signal_kill_handler did not run)"),
            std::string::npos)
      << text;
}

}  // namespace
}  // namespace doorbell::lab
