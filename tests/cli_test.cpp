// The doorbell CLI as a user runs it: exit codes, messages, output files.
#include <unistd.h>

#include <gtest/gtest.h>

#include <algorithm>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>
#include <string>
#include <vector>

#include "tests/support/run_program.h"

namespace {

using doorbell::test::run_doorbell;

std::string slurp(const std::string& path) {
  std::ifstream in(path);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

TEST(Cli, VersionAndHelp) {
  auto r = run_doorbell({"--version"});
  EXPECT_EQ(r.exit_code(), 0);
  EXPECT_NE(r.out.find("doorbell "), std::string::npos);
  r = run_doorbell({"bench", "--help"});
  EXPECT_EQ(r.exit_code(), 0);
  EXPECT_NE(r.out.find("--filter"), std::string::npos);
}

TEST(Cli, NoCommandIsAUsageError) {
  const auto r = run_doorbell({});
  EXPECT_EQ(r.exit_code(), 2);
  EXPECT_FALSE(r.err.empty());
}

TEST(Cli, UnknownFlagIsAUsageError) {
  const auto r = run_doorbell({"bench", "--no-such-flag"});
  EXPECT_EQ(r.exit_code(), 2);
  EXPECT_NE(r.err.find("no-such-flag"), std::string::npos);
}

TEST(Cli, BadRepeatValueIsAUsageError) {
  for (const char* value : {"0", "-3", "abc", "100000"}) {
    const auto r = run_doorbell({"bench", "--repeat", value, "--list"});
    EXPECT_EQ(r.exit_code(), 2) << value;
    EXPECT_NE(r.err.find("repeat"), std::string::npos) << r.err;
  }
}

TEST(Cli, BadSuiteIsAUsageError) {
  const auto r = run_doorbell({"bench", "--suite", "huge", "--list"});
  EXPECT_EQ(r.exit_code(), 2);
}

TEST(Cli, FilterMatchingNothingIsAUsageError) {
  const auto r = run_doorbell({"bench", "--filter", "no-such-scenario/*"});
  EXPECT_EQ(r.exit_code(), 2);
  EXPECT_NE(r.err.find("no scenario matches"), std::string::npos) << r.err;
}

TEST(Cli, UnwritableJsonPathFailsClearly) {
  const auto r = run_doorbell({"bench", "--quick", "--filter", "ladder/atomic_store_load_seq_cst",
                               "--json", "/nonexistent-dir/x.json"});
  EXPECT_EQ(r.exit_code(), 1) << r.describe();  // a run-time error, not a crash
  EXPECT_NE(r.err.find("/nonexistent-dir/x.json"), std::string::npos) << r.err;
}

TEST(Cli, ListShowsTheLadder) {
  const auto r = run_doorbell({"bench", "--list", "--filter", "ladder/*"});
  EXPECT_EQ(r.exit_code(), 0);
  EXPECT_NE(r.out.find("ladder/signal_kill_handler"), std::string::npos);
  EXPECT_NE(r.out.find("ladder/syscall_getpid"), std::string::npos);
}

TEST(Cli, QuickLadderWritesParsableJsonAndCsv) {
  const std::string dir = testing::TempDir();
  const std::string stem = dir + "/ladder_" + std::to_string(getpid());
  const std::string json_path = stem + ".json", csv_path = stem + ".csv";
  const auto r = run_doorbell({"bench", "--quick", "--repeat", "2", "--filter", "ladder/*",
                               "--json", json_path, "--csv", csv_path});
  ASSERT_EQ(r.exit_code(), 0) << r.err;
  EXPECT_NE(r.out.find("self-signal / atomic store+load"), std::string::npos);
  EXPECT_NE(r.out.find("1646x"), std::string::npos);  // the published figure stands beside ours
  const auto j = nlohmann::json::parse(slurp(json_path));
  EXPECT_EQ(j["schema"], "doorbell-results");
  EXPECT_TRUE(j["environment"].contains("kernel"));
  std::vector<std::string> names;
  for (const auto& s : j["scenarios"]) {
    names.push_back(s["name"]);
    EXPECT_EQ(s["status"], "ok") << s["name"] << ": " << s["reason"];
    EXPECT_EQ(s["repetitions"], 2);
    EXPECT_GT(s["metrics"]["latency"]["count"].get<int>(), 0);
  }
  for (const char* want :
       {"ladder/atomic_store_load_acq_rel", "ladder/atomic_store_load_seq_cst",
        "ladder/clock_gettime_monotonic", "ladder/syscall_getpid",
        "ladder/sigprocmask_block_restore", "ladder/futex_wake_no_waiter",
        "ladder/eventfd_write_read", "ladder/signal_kill_handler", "ladder/signal_raise_handler",
        "ladder/signal_tgkill_handler", "ladder/signal_pthread_kill_handler",
        "ladder/signal_sigqueue_rt_handler"})
    EXPECT_NE(std::find(names.begin(), names.end(), want), names.end()) << want;
  // Every handled self-signal was counted as handled.
  for (const auto& s : j["scenarios"]) {
    if (s["counters"].contains("sent")) {
      EXPECT_EQ(s["counters"]["sent"]["median"], s["counters"]["handled"]["median"]);
    }
  }
  const std::string csv = slurp(csv_path);
  EXPECT_EQ(csv.rfind("scenario,group,params,clock,status,metric", 0), 0u);
  EXPECT_NE(csv.find("ladder/syscall_getpid"), std::string::npos);
}

}  // namespace
