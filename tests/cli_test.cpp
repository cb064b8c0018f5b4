// The doorbell CLI as a user runs it: exit codes, messages, output files.
#include <fcntl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <gtest/gtest.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>
#include <string>
#include <vector>

namespace {

struct CliResult {
  int exit_code = -1;
  std::string out;
  std::string err;
};

std::string slurp(const std::string& path) {
  std::ifstream in(path);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

CliResult run_cli(const std::vector<std::string>& args) {
  const std::string dir = testing::TempDir();
  // Unique names: ctest may run several of these tests at once.
  const std::string stem = dir + "/cli_" + std::to_string(getpid());
  const std::string out_path = stem + "_out.txt", err_path = stem + "_err.txt";
  const pid_t pid = fork();
  if (pid == 0) {
    const int out = open(out_path.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
    const int err = open(err_path.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
    dup2(out, 1);
    dup2(err, 2);
    std::vector<char*> argv;
    std::string binary = std::string(DOORBELL_BINARY_DIR) + "/doorbell";
    argv.push_back(binary.data());
    std::vector<std::string> copy = args;
    for (auto& a : copy) argv.push_back(a.data());
    argv.push_back(nullptr);
    execv(binary.c_str(), argv.data());
    _exit(127);
  }
  int status = 0;
  while (waitpid(pid, &status, 0) < 0 && errno == EINTR) {
  }
  CliResult r;
  r.exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
  r.out = slurp(out_path);
  r.err = slurp(err_path);
  return r;
}

TEST(Cli, VersionAndHelp) {
  auto r = run_cli({"--version"});
  EXPECT_EQ(r.exit_code, 0);
  EXPECT_NE(r.out.find("doorbell "), std::string::npos);
  r = run_cli({"bench", "--help"});
  EXPECT_EQ(r.exit_code, 0);
  EXPECT_NE(r.out.find("--filter"), std::string::npos);
}

TEST(Cli, NoCommandIsAUsageError) {
  const auto r = run_cli({});
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_FALSE(r.err.empty());
}

TEST(Cli, UnknownFlagIsAUsageError) {
  const auto r = run_cli({"bench", "--no-such-flag"});
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(r.err.find("no-such-flag"), std::string::npos);
}

TEST(Cli, BadRepeatValueIsAUsageError) {
  for (const char* value : {"0", "-3", "abc", "100000"}) {
    const auto r = run_cli({"bench", "--repeat", value, "--list"});
    EXPECT_EQ(r.exit_code, 2) << value;
    EXPECT_NE(r.err.find("repeat"), std::string::npos) << r.err;
  }
}

TEST(Cli, BadSuiteIsAUsageError) {
  const auto r = run_cli({"bench", "--suite", "huge", "--list"});
  EXPECT_EQ(r.exit_code, 2);
}

TEST(Cli, FilterMatchingNothingIsAUsageError) {
  const auto r = run_cli({"bench", "--filter", "no-such-scenario/*"});
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(r.err.find("no scenario matches"), std::string::npos) << r.err;
}

TEST(Cli, UnwritableJsonPathFailsClearly) {
  const auto r = run_cli({"bench", "--quick", "--filter", "ladder/atomic_store_load_seq_cst",
                          "--json", "/nonexistent-dir/x.json"});
  EXPECT_NE(r.exit_code, 0);
  EXPECT_NE(r.err.find("/nonexistent-dir/x.json"), std::string::npos) << r.err;
}

TEST(Cli, ListShowsTheLadder) {
  const auto r = run_cli({"bench", "--list", "--filter", "ladder/*"});
  EXPECT_EQ(r.exit_code, 0);
  EXPECT_NE(r.out.find("ladder/signal_kill_handler"), std::string::npos);
  EXPECT_NE(r.out.find("ladder/syscall_getpid"), std::string::npos);
}

TEST(Cli, QuickLadderWritesParsableJsonAndCsv) {
  const std::string dir = testing::TempDir();
  const std::string stem = dir + "/ladder_" + std::to_string(getpid());
  const std::string json_path = stem + ".json", csv_path = stem + ".csv";
  const auto r = run_cli({"bench", "--quick", "--repeat", "2", "--filter", "ladder/*", "--json",
                          json_path, "--csv", csv_path});
  ASSERT_EQ(r.exit_code, 0) << r.err;
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
