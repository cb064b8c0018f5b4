// What the CLI says (issue 36 items 7 and 12): a number out of range is
// said to be out of range ("0 is out of range: it must be in [1, 10^12]",
// not "0 is not a number in [1, 1e+12]"); the help writes every range one
// way ("INT:in [1, 1000]", never "INT:INT in [1 - 1000]"); the watchdog's
// limit has enough digits ("at most 1.00 ms", not "at most 0.0 s"); the
// timer rows' CPU counters do not contradict their total.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "tests/support/files.h"
#include "tests/support/run_program.h"

namespace fs = std::filesystem;

#ifndef DOORBELL_NO_CLI
namespace {

using doorbell::test::run_doorbell;
using doorbell::test::slurp;

fs::path work_dir(const std::string& name) {
  return doorbell::test::work_dir("cli_wording", name);
}

std::string one_line(const doorbell::test::RunResult& r) {
  std::string err = r.err;
  while (!err.empty() && err.back() == '\n') err.pop_back();
  EXPECT_EQ(err.find('\n'), std::string::npos) << "one line: " << r.err;
  return err;
}

TEST(CliWording, AnOutOfRangeNumberIsSaidToBeOutOfRange) {
  const fs::path dir = work_dir("range");
  auto r = run_doorbell({"partition", "run", "--frames", "0", (dir / "none.toml").string()});
  EXPECT_EQ(r.exit_code(), 2) << r.describe();
  std::string err = one_line(r);
  EXPECT_NE(err.find("--frames: 0 is out of range: it must be in [1, 10^12]"), std::string::npos)
      << err;
  EXPECT_EQ(err.find("not a number"), std::string::npos) << err;
  r = run_doorbell({"bench", "--repeat", "abc", "--list"});
  EXPECT_EQ(r.exit_code(), 2) << r.describe();
  err = one_line(r);
  EXPECT_NE(err.find("--repeat: 'abc' is not a number; it must be in [1, 1000]"), std::string::npos)
      << err;
  r = run_doorbell({"bench", "--repeat", "1001", "--list"});
  EXPECT_EQ(r.exit_code(), 2) << r.describe();
  err = one_line(r);
  EXPECT_NE(err.find("--repeat: 1001 is out of range: it must be in [1, 1000]"), std::string::npos)
      << err;
}

TEST(CliWording, TheHelpWritesEveryRangeOneWay) {
  for (const std::vector<std::string>& command :
       {std::vector<std::string>{"bench"}, {"trace"}, {"inspect"}, {"partition", "run"}}) {
    std::vector<std::string> args = command;
    args.push_back("--help");
    const auto r = run_doorbell(args);
    EXPECT_EQ(r.exit_code(), 0) << r.describe();
    EXPECT_EQ(r.out.find("INT:INT"), std::string::npos) << r.out;
    EXPECT_EQ(r.out.find("in [1 - "), std::string::npos) << r.out;
    EXPECT_EQ(r.out.find("e+"), std::string::npos) << r.out;
  }
  const auto r = run_doorbell({"bench", "--help"});
  EXPECT_NE(r.out.find("INT:in [1, 1000]"), std::string::npos) << r.out;
}

// --scenario-timeout 0.001: the row fails by the watchdog, and its reason
// says the limit in a unit that shows it.
TEST(CliWording, TheWatchdogSaysItsLimitWithEnoughDigits) {
  const fs::path dir = work_dir("watchdog");
  const auto r = run_doorbell({"bench", "--filter", "ladder/syscall_getpid", "--quick", "--repeat",
                               "1", "--no-progress", "--scenario-timeout", "0.001", "--json",
                               (dir / "r.json").string()});
  const auto results = nlohmann::json::parse(slurp(dir / "r.json"));
  ASSERT_EQ(results["scenarios"].size(), 1u) << r.describe();
  const std::string reason = results["scenarios"][0]["reason"];
  EXPECT_NE(reason.find("stopped by the watchdog after "), std::string::npos) << reason;
  EXPECT_NE(reason.find("a repetition may take at most 1.00 ms"), std::string::npos) << reason;
  EXPECT_EQ(reason.find("0.0 s"), std::string::npos) << reason;
}

// The timer rows' CPU counters: the total is the thread's exact CPU clock;
// a user/system split, where one is given, adds up to it and has both parts
// (every method enters the kernel each tick). getrusage's tick-sampled split
// read user above the total and sys 0 for clock_nanosleep.
TEST(CliWording, TimerCpuCountersDoNotContradictTheirTotal) {
  const fs::path dir = work_dir("timers");
  const auto r = run_doorbell({"bench", "--filter", "timers/*", "--quick", "--repeat", "1",
                               "--no-progress", "--json", (dir / "r.json").string()});
  ASSERT_EQ(r.exit_code(), 0) << r.describe();
  const auto results = nlohmann::json::parse(slurp(dir / "r.json"));
  std::size_t rows = 0;
  for (const auto& s : results["scenarios"]) {
    if (s["status"] != "ok") continue;
    ++rows;
    const std::string name = s["name"];
    const auto& c = s["counters"];
    ASSERT_TRUE(c.contains("cpu_ns_per_tick")) << name;
    const double total = c["cpu_ns_per_tick"]["per_repetition"][0];
    EXPECT_GT(total, 0.0) << name;
    if (!c.contains("user_ns_per_tick") && !c.contains("sys_ns_per_tick")) continue;
    const double user = c["user_ns_per_tick"]["per_repetition"][0];
    const double sys = c["sys_ns_per_tick"]["per_repetition"][0];
    EXPECT_GT(sys, 0.0) << name << ": a tick without a kernel entry";
    EXPECT_GT(user, 0.0) << name;
    EXPECT_LE(user, total) << name;
    EXPECT_LE(sys, total) << name;
    EXPECT_NEAR(user + sys, total, total * 0.01) << name << ": the parts do not add up";
  }
  EXPECT_GE(rows, 8u) << r.describe();
}

}  // namespace
#else
TEST(CliWording, NeedsTheLab) {
  GTEST_SKIP() << "built without the lab (DOORBELL_BUILD_LAB=OFF)";
}
#endif
