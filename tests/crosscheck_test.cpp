// The crosscheck group (lab/scenarios/crosscheck.cpp), run in-process through
// the harness: rt-tests' sigwaittest, ptsematest and pmqtest beside our own
// implementation of their protocol. Each TEST is its own process (ctest), so
// the PATH changes below stay in their test.
#include <sys/stat.h>
#include <unistd.h>

#include <gtest/gtest.h>

#include <chrono>
#include <cmath>
#include <cstdlib>
#include <fstream>
#include <string>

#include "lab/harness/runner.h"

namespace doorbell::lab {
namespace {

// Our own PATH lookup, independent of the code under test.
bool on_path(const std::string& program) {
  const char* path = std::getenv("PATH");
  if (path == nullptr) return false;
  const std::string list = path;
  std::size_t start = 0;
  while (start <= list.size()) {
    std::size_t end = list.find(':', start);
    if (end == std::string::npos) end = list.size();
    const std::string dir = list.substr(start, end - start);
    if (!dir.empty() && ::access((dir + "/" + program).c_str(), X_OK) == 0) return true;
    start = end + 1;
  }
  return false;
}

RunOptions crosscheck_options(const std::string& filter = "crosscheck/*") {
  RunOptions options;
  options.suite = "full";
  options.filters = {filter};
  options.quick = true;  // 100 loops a run
  options.repetitions = 1;
  options.progress = false;
  return options;
}

const char* const kTools[] = {"sigwaittest", "ptsematest", "pmqtest"};

TEST(Crosscheck, NotInTheDefaultSuite) {
  RunOptions options;
  options.progress = false;
  for (const Scenario* s : select_scenarios(options)) EXPECT_NE(s->group, "crosscheck") << s->name;
  RunOptions full = crosscheck_options();
  EXPECT_EQ(select_scenarios(full).size(), 6u);
}

TEST(Crosscheck, BothSidesMeasureAndTheRatioIsFinite) {
  if (!on_path("sigwaittest"))
    GTEST_SKIP() << "sigwaittest is not on PATH (apt-get install rt-tests)";
  const RunOptions options = crosscheck_options();
  const RunResults results = run_scenarios(options, select_scenarios(options));
  ASSERT_EQ(results.scenarios.size(), 6u);
  for (const char* tool : kTools) {
    const std::string theirs_name = std::string("crosscheck/") + tool + ":impl=rt-tests";
    const std::string ours_name = std::string("crosscheck/") + tool + ":impl=doorbell";
    const ScenarioResult* theirs = results.find(theirs_name);
    const ScenarioResult* ours = results.find(ours_name);
    ASSERT_NE(theirs, nullptr) << theirs_name;
    ASSERT_NE(ours, nullptr) << ours_name;
    ASSERT_EQ(theirs->status, ScenarioResult::Status::ok) << theirs_name << ": " << theirs->reason;
    ASSERT_EQ(ours->status, ScenarioResult::Status::ok) << ours_name << ": " << ours->reason;

    // Theirs: one sample per run, the tool's average over its 100 sends.
    ASSERT_NE(theirs->primary(), nullptr);
    EXPECT_EQ(theirs->primary()->name, "run_mean");
    EXPECT_EQ(theirs->primary()->summary.count, 1u) << theirs_name;
    EXPECT_GT(theirs->primary()->summary.mean, 0.0) << theirs_name;
    EXPECT_EQ(theirs->counters.at("loops").at(0), 100.0) << theirs_name;

    // Ours: run_mean like theirs, and every send as one_way.
    ASSERT_NE(ours->primary(), nullptr);
    EXPECT_EQ(ours->primary()->name, "run_mean");
    EXPECT_EQ(ours->primary()->summary.count, 1u) << ours_name;
    const MetricResult* one_way = ours->metric("one_way");
    ASSERT_NE(one_way, nullptr) << ours_name;
    EXPECT_EQ(one_way->summary.count, 100u) << ours_name;
    EXPECT_GT(one_way->summary.min, 0.0) << ours_name;
    EXPECT_EQ(ours->counters.at("loops").at(0), 100.0) << ours_name;
    // The paired run of the tool in the same repetition, and the ratio.
    EXPECT_EQ(ours->counters.at("rt_tests_loops").at(0), 100.0) << ours_name;
    const double paired = ours->counters.at("ratio_to_rt_tests").at(0);
    EXPECT_TRUE(std::isfinite(paired) && paired > 0.0) << ours_name << ": " << paired;

    // The registered ratio: ours / theirs on the per-run means.
    bool found = false;
    for (const RatioResult& r : results.ratios) {
      if (r.ratio->numerator != ours_name) continue;
      found = true;
      EXPECT_EQ(r.ratio->denominator, theirs_name);
      EXPECT_TRUE(r.available) << r.ratio->name;
      EXPECT_TRUE(std::isfinite(r.value) && r.value > 0.0) << r.ratio->name << ": " << r.value;
    }
    EXPECT_TRUE(found) << "no registered ratio for " << ours_name;
  }
}

TEST(Crosscheck, WithoutRtTestsEveryRowIsSkippedWithTheReason) {
  const std::string empty = ::testing::TempDir() + "crosscheck-empty-path";
  ::mkdir(empty.c_str(), 0700);
  ASSERT_EQ(::setenv("PATH", empty.c_str(), 1), 0);
  const RunOptions options = crosscheck_options();
  const RunResults results = run_scenarios(options, select_scenarios(options));
  ASSERT_EQ(results.scenarios.size(), 6u);
  for (const ScenarioResult& r : results.scenarios) {
    EXPECT_EQ(r.status, ScenarioResult::Status::skipped) << r.scenario->name;
    EXPECT_EQ(r.reason, "rt-tests not installed (apt-get install rt-tests)") << r.scenario->name;
  }
  for (const RatioResult& r : results.ratios) {
    if (r.ratio->name.find("doorbell / rt-tests") != std::string::npos) {
      EXPECT_FALSE(r.available) << r.ratio->name;
    }
  }
}

// An rt-tests older than 2.0 has no --json (and its getopt answers an unknown
// option with the help text): the quiet summary line is read instead.
TEST(Crosscheck, ReadsTheQuietSummaryLineWithoutJson) {
  const std::string dir = ::testing::TempDir() + "crosscheck-fake-tool";
  ::mkdir(dir.c_str(), 0700);
  const std::string tool = dir + "/sigwaittest";
  {
    std::ofstream script(tool);
    script << "#!/bin/sh\n"
              "echo '#0: ID1, P80, CPU0, I1000; #1: ID2, P80, CPU1, Cycles 100'\n"
              "echo '#1 -> #0, Min   16, Cur   23, Avg   32, Max  543'\n";
  }
  ASSERT_EQ(::chmod(tool.c_str(), 0700), 0);
  ASSERT_EQ(::setenv("PATH", dir.c_str(), 1), 0);
  const RunOptions options = crosscheck_options("crosscheck/sigwaittest:impl=rt-tests");
  const RunResults results = run_scenarios(options, select_scenarios(options));
  ASSERT_EQ(results.scenarios.size(), 1u);
  const ScenarioResult& r = results.scenarios[0];
  ASSERT_EQ(r.status, ScenarioResult::Status::ok) << r.reason;
  EXPECT_EQ(r.counters.at("min_ns").at(0), 16000.0);
  EXPECT_EQ(r.counters.at("avg_ns").at(0), 32000.0);
  EXPECT_EQ(r.counters.at("max_ns").at(0), 543000.0);
  EXPECT_EQ(r.primary()->summary.count, 1u);
}

// A tool that fails is a failed row with its status and output, not a hang.
TEST(Crosscheck, AToolThatFailsFailsTheRowWithItsOutput) {
  const std::string dir = ::testing::TempDir() + "crosscheck-failing-tool";
  ::mkdir(dir.c_str(), 0700);
  const std::string tool = dir + "/pmqtest";
  {
    std::ofstream script(tool);
    script << "#!/bin/sh\necho 'could not open POSIX message queue #1'\nexit 1\n";
  }
  ASSERT_EQ(::chmod(tool.c_str(), 0700), 0);
  ASSERT_EQ(::setenv("PATH", dir.c_str(), 1), 0);
  const RunOptions options = crosscheck_options("crosscheck/pmqtest:impl=rt-tests");
  const RunResults results = run_scenarios(options, select_scenarios(options));
  ASSERT_EQ(results.scenarios.size(), 1u);
  const ScenarioResult& r = results.scenarios[0];
  EXPECT_EQ(r.status, ScenarioResult::Status::failed);
  EXPECT_NE(r.reason.find("pmqtest exited with 1"), std::string::npos) << r.reason;
  EXPECT_NE(r.reason.find("could not open POSIX message queue"), std::string::npos) << r.reason;
}

// A tool that never finishes is stopped at its time limit (100 loops of
// 1 ms: 10.2 s), and the row fails saying so: the run never hangs.
TEST(Crosscheck, AToolThatHangsIsStoppedAtItsTimeLimit) {
  const std::string dir = ::testing::TempDir() + "crosscheck-hanging-tool";
  ::mkdir(dir.c_str(), 0700);
  const std::string tool = dir + "/ptsematest";
  {
    std::ofstream script(tool);
    script << "#!/bin/sh\nexec sleep 120\n";
  }
  ASSERT_EQ(::chmod(tool.c_str(), 0700), 0);
  const std::string path = dir + ":/usr/bin:/bin";  // sleep
  ASSERT_EQ(::setenv("PATH", path.c_str(), 1), 0);
  RunOptions options = crosscheck_options("crosscheck/ptsematest:impl=rt-tests");
  const auto start = std::chrono::steady_clock::now();
  const RunResults results = run_scenarios(options, select_scenarios(options));
  const double took =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  ASSERT_EQ(results.scenarios.size(), 1u);
  const ScenarioResult& r = results.scenarios[0];
  EXPECT_EQ(r.status, ScenarioResult::Status::failed);
  EXPECT_NE(r.reason.find("ptsematest did not finish within 10.2 s"), std::string::npos)
      << r.reason;
  EXPECT_GE(took, 10.0);  // the limit, then the row fails: no retry of the repetitions
  EXPECT_LT(took, 60.0);
}

}  // namespace
}  // namespace doorbell::lab
