// The doorbell CLI as a user runs it: exit codes, messages, output files.
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <gtest/gtest.h>

#include <algorithm>
#include <chrono>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "tests/support/files.h"
#include "tests/support/run_program.h"

namespace {

using doorbell::test::run_doorbell;
using doorbell::test::run_program;

using doorbell::test::slurp;

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
  // Refused before the lab runs (issue 26): bad usage, not a run-time error.
  EXPECT_EQ(r.exit_code(), 2) << r.describe();
  EXPECT_NE(r.err.find("/nonexistent-dir/x.json"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("does not exist"), std::string::npos) << r.err;
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

// ---------------------------------------------------------------- conventions
// help, --version everywhere, --json -, the man page, the bash completion
// (apps/doorbell/command.h).

// Every command, at every depth, as the words that name it.
const std::vector<std::vector<std::string>> kCommands = {
    {},          {"bench"},     {"report"},           {"guide"},
    {"trace"},   {"partition"}, {"partition", "run"}, {"partition", "check"},
    {"inspect"}, {"help"},      {"completion"}};

TEST(Cli, HelpCommandPrintsWhatHelpFlagPrints) {
  for (const auto& words : kCommands) {
    std::vector<std::string> help{"help"}, flag = words;
    help.insert(help.end(), words.begin(), words.end());
    flag.push_back("--help");
    const auto by_command = run_doorbell(help);
    const auto by_flag = run_doorbell(flag);
    ASSERT_EQ(by_command.exit_code(), 0) << by_command.describe();
    ASSERT_EQ(by_flag.exit_code(), 0) << by_flag.describe();
    EXPECT_EQ(by_command.out, by_flag.out) << testing::PrintToString(words);
    EXPECT_NE(by_command.out.find("Usage: doorbell"), std::string::npos) << by_command.out;
    EXPECT_TRUE(by_command.err.empty()) << by_command.err;
  }
  const auto top = run_doorbell({"help"});
  for (const char* command :
       {"bench", "report", "guide", "trace", "partition", "inspect", "help", "completion"})
    EXPECT_NE(top.out.find(command), std::string::npos) << command;
  EXPECT_NE(run_doorbell({"help", "bench"}).out.find("--filter"), std::string::npos);
  EXPECT_NE(run_doorbell({"help", "partition", "run"}).out.find("--frames"), std::string::npos);
}

TEST(Cli, HelpAllShowsEveryCommandUnderItsHeading) {
  const auto r = run_doorbell({"--help-all"});
  ASSERT_EQ(r.exit_code(), 0) << r.describe();
  EXPECT_EQ(r.out.rfind(run_doorbell({"--help"}).out, 0), 0u) << "starts with the top help";
  for (const char* heading : {"\ndoorbell bench:\n", "\ndoorbell partition:\n",
                              "\ndoorbell partition run:\n", "\ndoorbell completion:\n"})
    EXPECT_NE(r.out.find(heading), std::string::npos) << heading;
  EXPECT_NE(r.out.find("--frames"), std::string::npos);
}

TEST(Cli, HelpOfAnUnknownCommandIsAUsageError) {
  auto r = run_doorbell({"help", "no-such-command"});
  EXPECT_EQ(r.exit_code(), 2) << r.describe();
  EXPECT_NE(r.err.find("no command 'no-such-command'"), std::string::npos) << r.err;
  EXPECT_TRUE(r.out.empty()) << r.out;
  r = run_doorbell({"help", "partition", "stop"});
  EXPECT_EQ(r.exit_code(), 2) << r.describe();
  EXPECT_NE(r.err.find("no command 'partition stop'"), std::string::npos) << r.err;
}

TEST(Cli, VersionOnEveryCommand) {
  const auto top = run_doorbell({"--version"});
  ASSERT_EQ(top.exit_code(), 0) << top.describe();
  ASSERT_EQ(top.out.rfind("doorbell ", 0), 0u) << top.out;
  for (const auto& words : kCommands) {
    // Before and after the required arguments a command has: --version wins.
    for (const auto& tail :
         std::vector<std::vector<std::string>>{{"--version"}, {"x.toml", "--version"}}) {
      if (words.empty() && tail.size() > 1) continue;
      std::vector<std::string> args = words;
      args.insert(args.end(), tail.begin(), tail.end());
      const auto r = run_doorbell(args);
      if (tail.size() > 1 && r.exit_code() == 2) continue;  // takes no such argument
      EXPECT_EQ(r.exit_code(), 0) << testing::PrintToString(args) << ": " << r.describe();
      EXPECT_EQ(r.out, top.out) << testing::PrintToString(args);
    }
  }
}

TEST(Cli, BadFlagOnASubcommandStillFailsClearly) {
  for (const auto& words : kCommands) {
    std::vector<std::string> args = words;
    args.push_back("--no-such-flag");
    const auto r = run_doorbell(args);
    EXPECT_EQ(r.exit_code(), 2) << testing::PrintToString(args) << ": " << r.describe();
    EXPECT_NE(r.err.find("no-such-flag"), std::string::npos) << r.err;
  }
}

// Each scenario runs in a process of its own: a bench killed mid-run
// (SIGKILL, nothing it can catch) takes its scenario's process with it
// (PR_SET_PDEATHSIG), at once, not at its next report to the dead runner
// (a write to the pipe, SIGPIPE): this row's repetitions last 6 s.
TEST(Cli, KilledBenchLeavesNoScenarioRunning) {
  auto bench = doorbell::test::start_doorbell(
      {"bench", "--no-progress", "--repeat", "1", "--suite", "full", "--filter",
       "partition/case_study_long:threads=8,method=sigstop", "--json", "/dev/null"});
  const pid_t pid = bench.pid();
  std::vector<pid_t> scenario;
  for (int i = 0; i < 1000 && scenario.empty(); ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
    std::ifstream children("/proc/" + std::to_string(pid) + "/task/" + std::to_string(pid) +
                           "/children");
    for (pid_t child; children >> child;) scenario.push_back(child);
  }
  ASSERT_FALSE(scenario.empty()) << "no scenario process appeared under the bench";
  std::this_thread::sleep_for(std::chrono::milliseconds(500));
  ASSERT_EQ(::kill(pid, SIGKILL), 0);
  const auto r = bench.finish();
  EXPECT_EQ(r.status.signal(), SIGKILL) << r.describe();
  for (pid_t child : scenario) {
    // Gone (or a zombie) within 3 s, half of what the repetition has left.
    bool gone = false;
    for (int i = 0; i < 300 && !gone; ++i) {
      gone = ::kill(child, 0) != 0 ||
             slurp("/proc/" + std::to_string(child) + "/stat").find(") Z ") != std::string::npos;
      if (!gone) std::this_thread::sleep_for(std::chrono::milliseconds(10));
    }
    EXPECT_TRUE(gone) << "the scenario's process " << child << " outlived the bench";
    if (!gone) ::kill(child, SIGKILL);
  }
}

TEST(Cli, BenchJsonDashWritesOnlyJsonToStdout) {
  const auto before = std::filesystem::exists("-");
  const auto r = run_doorbell(
      {"bench", "--quick", "--repeat", "1", "--filter", "ladder/syscall_getpid", "--json", "-"});
  ASSERT_EQ(r.exit_code(), 0) << r.describe();
  // All of stdout is one JSON document (parse throws on anything beside it).
  nlohmann::json j;
  ASSERT_NO_THROW(j = nlohmann::json::parse(r.out)) << r.out;
  EXPECT_EQ(j["schema"], "doorbell-results");
  ASSERT_EQ(j["scenarios"].size(), 1u);
  EXPECT_EQ(j["scenarios"][0]["name"], "ladder/syscall_getpid");
  // The table went to stderr, and no file named "-" was written.
  EXPECT_NE(r.err.find("getpid"), std::string::npos) << r.err;
  EXPECT_EQ(r.err.find("results (JSON)"), std::string::npos) << r.err;
  EXPECT_EQ(std::filesystem::exists("-"), before);
}

// A Ctrl-C while the table is written to a slow reader (a pipe already
// full) costs none of it: the write goes on once the pipe is drained, and
// the exit says the signal came after the run (130). Without SA_RESTART
// once the run was over, the write failed with EINTR and the table was lost.
TEST(Cli, BenchInterruptedWhileStdoutIsFullLosesNoTable) {
  const std::string dir = testing::TempDir() + "/bench_full_" + std::to_string(::getpid());
  const auto run = doorbell::test::signal_while_stdout_full(
      {"bench", "--quick", "--repeat", "1", "--filter", "ladder/syscall_getpid", "--out", dir},
      SIGINT, std::chrono::seconds(60));
  std::filesystem::remove_all(dir);
  ASSERT_TRUE(run.blocked) << "bench never blocked writing to its full stdout within 60 s";
  ASSERT_TRUE(run.filler_intact) << run.out;
  EXPECT_TRUE(WIFEXITED(run.status) && WEXITSTATUS(run.status) == 128 + SIGINT)
      << "status " << run.status;
  EXPECT_NE(run.out.find("getpid via syscall(2)"), std::string::npos) << run.out;
  EXPECT_NE(run.out.find("1 scenarios in"), std::string::npos) << run.out;
}

TEST(Cli, PartitionRunJsonDashWritesOnlyJsonToStdout) {
  // SIGSTOP windows without SCHED_FIFO: needs neither root nor a cgroup.
  const auto r =
      run_doorbell({"partition", "run",
                    std::string(DOORBELL_SOURCE_DIR) + "/examples/schedules/two_partitions.toml",
                    "--frames", "2", "--method", "sigstop", "--no-fifo", "--json", "-"});
  ASSERT_EQ(r.exit_code(), 0) << r.describe();
  nlohmann::json j;
  ASSERT_NO_THROW(j = nlohmann::json::parse(r.out)) << r.out;
  EXPECT_EQ(j["frames"], 2);
  // The summary table went to stderr.
  EXPECT_NE(r.err.find("overrun50"), std::string::npos) << r.err;
}

// A Ctrl-C once the schedule has run, while its JSON is written to a slow
// reader (a pipe already full): the report is written whole and the run
// exits 0 (it ran as asked). Before, the handlers were gone by then and the
// signal killed it mid-report.
TEST(Cli, PartitionRunInterruptedWhileStdoutIsFullWritesTheWholeReport) {
  const auto run = doorbell::test::signal_while_stdout_full(
      {"partition", "run",
       std::string(DOORBELL_SOURCE_DIR) + "/examples/schedules/two_partitions.toml", "--frames",
       "2", "--method", "sigstop", "--no-fifo", "--json", "-"},
      SIGINT, std::chrono::seconds(60));
  ASSERT_TRUE(run.blocked) << "partition run never blocked writing to its full stdout in 60 s";
  ASSERT_TRUE(run.filler_intact) << run.out;
  EXPECT_TRUE(WIFEXITED(run.status) && WEXITSTATUS(run.status) == 0) << "status " << run.status;
  nlohmann::json j;
  ASSERT_NO_THROW(j = nlohmann::json::parse(run.out)) << run.out;
  EXPECT_EQ(j["frames"], 2);
}

TEST(Cli, CsvDashIsAUsageError) {
  const auto r =
      run_doorbell({"bench", "--quick", "--filter", "ladder/syscall_getpid", "--csv", "-"});
  EXPECT_EQ(r.exit_code(), 2) << r.describe();
  EXPECT_NE(r.err.find("--json -"), std::string::npos) << r.err;
  EXPECT_TRUE(r.out.empty()) << r.out;
}

TEST(Cli, ManPageRenders) {
#ifndef DOORBELL_MAN_PAGE
  GTEST_SKIP() << "help2man was not found when this tree was configured: no man page";
#else
  ASSERT_TRUE(std::filesystem::exists(DOORBELL_MAN_PAGE)) << DOORBELL_MAN_PAGE;
  const auto r =
      run_program({"man", "-l", DOORBELL_MAN_PAGE},
                  {.environment = std::vector<std::string>{"PATH=/usr/bin:/bin", "MANPAGER=cat",
                                                           "MANWIDTH=100", "LANG=C.UTF-8"}});
  ASSERT_EQ(r.exit_code(), 0) << r.describe();
  for (const char* want :
       {"NAME", "doorbell", "SYNOPSIS", "bench", "--json", "partition", "--version", "completion"})
    EXPECT_NE(r.out.find(want), std::string::npos) << want << "\n" << r.out;
#endif
}

#ifdef DOORBELL_BASH_COMPLETION
// What the bash completion offers for COMP_WORDS = words, the cursor on the last.
std::string complete(const std::vector<std::string>& words) {
  std::string array;
  for (const auto& w : words) array += " '" + w + "'";
  const std::string script = std::string("source '") + DOORBELL_BASH_COMPLETION +
                             "' && COMP_WORDS=(" + array +
                             ") && COMP_CWORD=" + std::to_string(words.size() - 1) +
                             " && _doorbell && echo \"${COMPREPLY[*]}\"";
  const auto r = run_program({"bash", "--norc", "-c", script});
  EXPECT_EQ(r.exit_code(), 0) << r.describe();
  EXPECT_TRUE(r.err.empty()) << r.err;
  return r.out;
}
#endif

TEST(Cli, BashCompletionCompletesTheCommandTree) {
#ifndef DOORBELL_BASH_COMPLETION
  GTEST_SKIP() << "no doorbell CLI in this build";
#else
  EXPECT_EQ(complete({"doorbell", "be"}), "bench\n");
  EXPECT_EQ(complete({"doorbell", "p"}), "partition\n");
  EXPECT_EQ(complete({"doorbell", "partition", "r"}), "run\n");
  EXPECT_EQ(complete({"doorbell", "--ver"}), "--version\n");
  EXPECT_EQ(complete({"doorbell", "bench", "--su"}), "--suite\n");
  EXPECT_EQ(complete({"doorbell", "bench", "--suite", ""}), "default full\n");
  // A value is not a subcommand: after --filter comes a glob, then options again.
  EXPECT_EQ(complete({"doorbell", "bench", "--filter", "x", "--qu"}), "--quick\n");
  EXPECT_EQ(complete({"doorbell", "partition", "run", "--no-"}),
            "--no-fifo --no-trace --no-verify\n");
  EXPECT_EQ(complete({"doorbell", "help", "part"}), "partition\n");
  EXPECT_EQ(complete({"doorbell", "help", "partition", "c"}), "check\n");
  EXPECT_EQ(complete({"doorbell", "completion", "b"}), "bash\n");
  // Every command the CLI has is offered at the top.
  const std::string top = complete({"doorbell", ""});
  for (const char* command :
       {"bench", "report", "guide", "trace", "partition", "inspect", "help", "completion"})
    EXPECT_NE(top.find(command), std::string::npos) << command << ": " << top;
  // The installed script is what `doorbell completion bash` prints.
  EXPECT_EQ(slurp(DOORBELL_BASH_COMPLETION), run_doorbell({"completion", "bash"}).out);
#endif
}

}  // namespace
