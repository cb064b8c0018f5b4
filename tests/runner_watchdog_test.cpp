// The runner's watchdog: a scenario that never returns is stopped, reported
// failed with its name, its phase and how long it ran, and the run goes on;
// nothing it started is left behind.
//
// The run itself happens in a forked child of the test with a deadline of its
// own, so that where the runner has no watchdog this test fails (the run did
// not finish) instead of hanging until ctest's limit.
#include <fcntl.h>
#include <linux/futex.h>
#include <poll.h>
#include <signal.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <chrono>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <optional>
#include <set>
#include <sstream>
#include <string>
#include <thread>

#include "lab/common/deadline.h"
#include "lab/harness/results.h"
#include "lab/harness/runner.h"
#include "tests/support/threads.h"

namespace doorbell::lab {
namespace {

using nlohmann::json;

// What the hanging scenario started, in memory shared with the test (mapped
// before any fork).
struct Started {
  std::atomic<pid_t> grandchild{0};
  std::atomic<int> hangs{0};
};
Started* started() {
  static Started* s = [] {
    void* p =
        ::mmap(nullptr, sizeof(Started), PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
    if (p == MAP_FAILED) std::abort();
    return new (p) Started();
  }();
  return s;
}
// Mapped now, before the test forks, so that every process of the run shares it.
Started* const kStartedAtLoad = started();

void sleep_on_futex_forever() {
  static uint32_t word = 0;
  for (;;) ::syscall(SYS_futex, &word, FUTEX_WAIT_PRIVATE, 0, nullptr, nullptr, 0);
}

// Test-only registrations: never in a suite (in_default_suite false, and the
// lab's binary does not link this file).
const Registrar kWatchdogScenarios{std::vector<Scenario>{
    {.name = "watchdogtest/first",
     .group = "watchdogtest",
     .title = "a short row before the others",
     .budget_s = 0.01,
     .samples = 5,
     .in_default_suite = false,
     .run = [](Context& ctx) { ctx.metric().record(3.0); }},
    {.name = "watchdogtest/hangs_forever",
     .group = "watchdogtest",
     .title = "blocks forever on purpose",
     .budget_s = 0.05,
     .samples = 10,
     .in_default_suite = false,
     .run =
         [](Context& ctx) {
           // The warm-up completes; the first measured repetition hangs, with
           // a helper thread and a grandchild process asleep beside it.
           if (ctx.warmup()) {
             ctx.metric().record(1.0);
             return;
           }
           started()->hangs.fetch_add(1);
           const pid_t grandchild = ::fork();
           if (grandchild == 0) {
             for (;;) ::pause();
           }
           started()->grandchild.store(grandchild);
           std::thread(sleep_on_futex_forever).detach();
           sleep_on_futex_forever();
         }},
    {.name = "watchdogtest/aborts",
     .group = "watchdogtest",
     .title = "dies in its second repetition",
     .budget_s = 0.01,
     .samples = 5,
     .in_default_suite = false,
     .run =
         [](Context& ctx) {
           ctx.metric().record(1.0);
           if (ctx.repetition() == 1) {
             ctx.phase("about to abort");
             std::abort();
           }
         }},
    {.name = "watchdogtest/gives_up",
     .group = "watchdogtest",
     .title = "a bounded wait that times out",
     .budget_s = 0.01,
     .samples = 5,
     .in_default_suite = false,
     .run =
         [](Context& ctx) {
           ctx.metric().record(1.0);
           std::atomic<bool> never{false};
           wait_until(Deadline(ctx.wait_deadline_ns()), "an answer that never comes",
                      [&] { return never.load(); });
         }},
    {.name = "watchdogtest/stalls",
     .group = "watchdogtest",
     .title = "one sample longer than the budget",
     .budget_s = 0.01,
     .samples = 5,
     .in_default_suite = false,
     .run =
         [](Context& ctx) {
           ctx.metric().record(1000.0);
           if (ctx.repetition() == 0) ctx.metric().record(0.5e9);  // 50x the budget
         }},
    {.name = "watchdogtest/stalls_in_three_metrics",
     .group = "watchdogtest",
     .title = "one stalled sample, seen in three metrics (as an e2e row's send_delay, e2e, recv)",
     .budget_s = 0.01,
     .samples = 5,
     .in_default_suite = false,
     .run =
         [](Context& ctx) {
           for (const char* name : {"latency", "e2e", "recv"}) ctx.metric(name).record(1000.0);
           if (ctx.repetition() == 0)
             for (const char* name : {"latency", "e2e", "recv"}) ctx.metric(name).record(0.3e9);
         }},
    {.name = "watchdogtest/stalls_quick",
     .group = "watchdogtest",
     .title = "one sample between a fifth of the budget and the budget",
     .budget_s = 0.01,
     .samples = 5,
     .in_default_suite = false,
     .run =
         [](Context& ctx) {
           ctx.metric().record(1000.0);
           if (ctx.repetition() == 0) ctx.metric().record(5e6);  // 5 ms: over 2 ms (--quick)
         }},
    {.name = "watchdogtest/after",
     .group = "watchdogtest",
     .title = "runs after the hang",
     .budget_s = 0.01,
     .samples = 5,
     .in_default_suite = false,
     .run =
         [](Context& ctx) {
           std::size_t n = 0;
           while (ctx.keep_going(n)) {
             ctx.metric().record(2.0);
             ++n;
           }
         }},
}};

// The children of every thread of this process, as /proc lists them.
std::string children_of_self() {
  std::string all;
  std::error_code ec;
  for (auto it = std::filesystem::directory_iterator("/proc/self/task", ec);
       !ec && it != std::filesystem::directory_iterator(); it.increment(ec)) {
    std::ifstream in(it->path() / "children");
    std::string line;
    std::getline(in, line);
    all += line;
  }
  return all;
}

// Runs `options` in a forked child; returns what it reported (the results
// and what it saw of itself afterwards), or a null json when the run did
// not finish within `deadline`.
// interrupt: the run has StopOnSignals, and a thread sends the process
// SIGINT once the hanging scenario has started its grandchild (a user's
// Ctrl-C).
json run_in_child(const RunOptions& options, std::chrono::seconds deadline, std::string* why,
                  bool interrupt = false) {
  int fds[2];
  if (::pipe2(fds, O_CLOEXEC) != 0) {
    *why = std::string("pipe2: ") + std::strerror(errno);
    return nullptr;
  }
  const pid_t pid = ::fork();
  if (pid == 0) {
    ::close(fds[0]);
    // A sanitizer's runtime (TSan) starts a thread of its own with the
    // process's first thread: start it now, so that it is in the baseline.
    test::start_runtime_threads();
    const std::set<pid_t> threads_before = test::thread_ids();
    std::optional<StopOnSignals> stop_on_signals;
    std::thread interrupter;
    if (interrupt) {
      stop_on_signals.emplace();
      interrupter = std::thread([] {
        const auto until = std::chrono::steady_clock::now() + std::chrono::seconds(20);
        while (started()->grandchild.load() == 0 && std::chrono::steady_clock::now() < until)
          std::this_thread::sleep_for(std::chrono::milliseconds(5));
        ::kill(::getpid(), SIGINT);
      });
    }
    const RunResults results = run_scenarios(options, select_scenarios(options));
    if (interrupter.joinable()) interrupter.join();
    stop_on_signals.reset();
    json report;
    for (const auto& s : results.scenarios)
      report["scenarios"].push_back(
          {{"name", s.scenario->name},
           {"status", s.status == ScenarioResult::Status::ok       ? "ok"
                      : s.status == ScenarioResult::Status::failed ? "failed"
                                                                   : "skipped"},
           {"reason", s.reason},
           {"wall_s", s.wall_s},
           {"kind", s.failure.kind},
           {"phase", s.failure.phase},
           {"warnings", s.warnings},
           {"counters", s.counters}});
    report["json"] = to_json(results, "test");
    {
      char csv_path[] = "/tmp/doorbell-runner-csv-XXXXXX";
      const int fd = ::mkstemp(csv_path);
      if (fd >= 0) {
        ::close(fd);
        write_csv(results, csv_path);
        std::ifstream in(csv_path);
        std::stringstream csv;
        csv << in.rdbuf();
        report["csv"] = csv.str();
        ::unlink(csv_path);
      }
    }
    report["stop_signal"] = stop_signal();
    std::ostringstream table;
    print_table(results, table);
    report["table"] = table.str();
    report["threads"] = test::threads_settled_to(threads_before);
    report["threads_before"] = threads_before;
    report["children"] = children_of_self();
    const std::string text = report.dump();
    const char* p = text.data();
    std::size_t left = text.size();
    while (left > 0) {
      const ssize_t n = ::write(fds[1], p, left);
      if (n <= 0) ::_exit(3);
      p += n;
      left -= static_cast<std::size_t>(n);
    }
    ::_exit(0);
  }
  ::close(fds[1]);
  std::string text;
  const auto until = std::chrono::steady_clock::now() + deadline;
  bool finished = false;
  while (std::chrono::steady_clock::now() < until) {
    pollfd pfd{fds[0], POLLIN, 0};
    const int rc = ::poll(&pfd, 1, 100);
    if (rc < 0 && errno != EINTR) break;
    if (rc <= 0) continue;
    char buffer[4096];
    const ssize_t n = ::read(fds[0], buffer, sizeof buffer);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) {
      finished = true;
      break;
    }
    text.append(buffer, static_cast<std::size_t>(n));
  }
  ::close(fds[0]);
  if (!finished) ::kill(pid, SIGKILL);
  int status = 0;
  while (::waitpid(pid, &status, 0) < 0 && errno == EINTR) {
  }
  if (!finished) {
    *why = "the run did not finish in " + std::to_string(deadline.count()) + " s";
    // What the hang left: the grandchild is ours to remove now.
    if (const pid_t g = started()->grandchild.load(); g > 0) ::kill(g, SIGKILL);
    return nullptr;
  }
  if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) {
    *why = "the run's process ended with status " + std::to_string(status);
    return nullptr;
  }
  return json::parse(text);
}

bool gone_within(pid_t pid, std::chrono::seconds limit) {
  const auto until = std::chrono::steady_clock::now() + limit;
  while (std::chrono::steady_clock::now() < until) {
    if (::kill(pid, 0) != 0 && errno == ESRCH) return true;
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  return false;
}

TEST(Runner, HangingScenarioIsStoppedAndReported) {
  RunOptions options;
  options.filters = {"watchdogtest/hangs_forever", "watchdogtest/after"};
  options.repetitions = 2;
  options.progress = false;
  options.scenario_timeout_s = 1.0;
  std::string why;
  const json report = run_in_child(options, std::chrono::seconds(60), &why);
  ASSERT_FALSE(report.is_null()) << why;
  EXPECT_EQ(started()->hangs.load(), 1);

  ASSERT_EQ(report["scenarios"].size(), 2u) << report.dump(1);
  const json& hung = report["scenarios"][0];
  EXPECT_EQ(hung["name"], "watchdogtest/hangs_forever");
  EXPECT_EQ(hung["status"], "failed");
  const std::string reason = hung["reason"];
  EXPECT_NE(reason.find("stopped by the watchdog"), std::string::npos) << reason;
  EXPECT_NE(reason.find("repetition 1 of 2"), std::string::npos) << reason;
  EXPECT_NE(reason.find(" s"), std::string::npos) << reason;
  // The run went on with the next scenario.
  EXPECT_EQ(report["scenarios"][1]["name"], "watchdogtest/after");
  EXPECT_EQ(report["scenarios"][1]["status"], "ok") << report["scenarios"][1]["reason"];

  // Nothing left behind: no thread beside the runner's own, no child, and
  // the grandchild the scenario forked is gone.
  EXPECT_EQ(report["threads"], report["threads_before"]) << report.dump(1);
  EXPECT_EQ(report["children"], "") << report.dump(1);
  const pid_t grandchild = started()->grandchild.load();
  ASSERT_GT(grandchild, 0);
  EXPECT_TRUE(gone_within(grandchild, std::chrono::seconds(5)))
      << "the scenario's grandchild " << grandchild << " is still there";
  if (::kill(grandchild, 0) == 0) ::kill(grandchild, SIGKILL);
}

// A scenario whose process dies (an abort), one whose bounded wait gives
// up, and one with a stall: the first two fail with where they were, the
// third is flagged (counter, warning in the table and the JSON), and each
// row after them runs.
TEST(Runner, DeathsTimeoutsAndStallsAreReportedWithWhereTheyHappened) {
  RunOptions options;
  options.filters = {"watchdogtest/aborts", "watchdogtest/gives_up", "watchdogtest/stalls",
                     "watchdogtest/after"};
  options.repetitions = 3;
  options.progress = false;
  options.scenario_timeout_s = 2.0;  // waits give up at 3/4 of it
  std::string why;
  const json report = run_in_child(options, std::chrono::seconds(60), &why);
  ASSERT_FALSE(report.is_null()) << why;
  ASSERT_EQ(report["scenarios"].size(), 4u) << report.dump(1);

  const json& aborts = report["scenarios"][0];
  EXPECT_EQ(aborts["status"], "failed");
  EXPECT_EQ(aborts["kind"], "died");
  EXPECT_EQ(aborts["phase"], "repetition 2 of 3 (about to abort)");
  EXPECT_NE(aborts["reason"].get<std::string>().find("died of signal 6"), std::string::npos)
      << aborts["reason"];

  const json& gives_up = report["scenarios"][1];
  EXPECT_EQ(gives_up["status"], "failed");
  EXPECT_EQ(gives_up["kind"], "error");
  EXPECT_EQ(gives_up["phase"], "warm-up");
  EXPECT_EQ(gives_up["reason"], "timed out waiting for an answer that never comes");
  EXPECT_GE(gives_up["wall_s"].get<double>(), 1.5 * 0.99);  // 3/4 of the 2 s limit

  const json& stalls = report["scenarios"][2];
  EXPECT_EQ(stalls["status"], "ok");
  ASSERT_EQ(stalls["warnings"].size(), 1u) << stalls.dump(1);
  EXPECT_NE(stalls["warnings"][0].get<std::string>().find("1 sample longer than the "
                                                          "repetition's budget of 10.0 ms"),
            std::string::npos)
      << stalls["warnings"][0];
  EXPECT_EQ(stalls["counters"]["samples_over_budget"], json::array({1.0, 0.0, 0.0}));
  EXPECT_EQ(report["json"]["scenarios"][2]["warnings"], stalls["warnings"]);
  EXPECT_EQ(report["json"]["scenarios"][0]["failure"]["kind"], "died");
  const std::string table = report["table"];
  EXPECT_NE(table.find("WARNING: 1 sample longer"), std::string::npos) << table;
  EXPECT_NE(table.find("2 FAILED, 1 flagged"), std::string::npos) << table;

  EXPECT_EQ(report["scenarios"][3]["status"], "ok");
  EXPECT_EQ(report["threads"], report["threads_before"]);
  EXPECT_EQ(report["children"], "");
}

// One stall of one sample shows in each metric the sample records (issue 34
// item 6: one 0.3 s stop of an e2e target read "3 samples longer than the
// repetition's budget"): it counts once.
TEST(Runner, OneStallInThreeMetricsCountsOnce) {
  RunOptions options;
  options.filters = {"watchdogtest/stalls_in_three_metrics"};
  options.repetitions = 3;
  options.progress = false;
  options.scenario_timeout_s = 2.0;
  std::string why;
  const json report = run_in_child(options, std::chrono::seconds(60), &why);
  ASSERT_FALSE(report.is_null()) << why;
  ASSERT_EQ(report["scenarios"].size(), 1u) << report.dump(1);
  const json& stalls = report["scenarios"][0];
  EXPECT_EQ(stalls["counters"]["samples_over_budget"], json::array({1.0, 0.0, 0.0}))
      << stalls.dump(1);
  ASSERT_EQ(stalls["warnings"].size(), 1u) << stalls.dump(1);
  const std::string warning = stalls["warnings"][0];
  EXPECT_NE(warning.find("1 sample longer than the repetition's budget"), std::string::npos)
      << warning;
  // It says what it counts.
  EXPECT_NE(warning.find("counted once"), std::string::npos) << warning;
}

// Ctrl-C during a run (issue 34 item 2): the running row's process is
// killed and its row kept as "interrupted", the rows completed before stand,
// the rows after are not run, and the results say so.
TEST(Runner, StopRequestKeepsCompletedRowsAndRunsNoMore) {
  RunOptions options;
  options.filters = {"watchdogtest/first", "watchdogtest/hangs_forever", "watchdogtest/after"};
  options.repetitions = 2;
  options.progress = false;
  options.scenario_timeout_s = 60.0;  // the watchdog must not be what stops it
  started()->hangs.store(0);
  started()->grandchild.store(0);
  std::string why;
  const json report = run_in_child(options, std::chrono::seconds(30), &why, /*interrupt=*/true);
  ASSERT_FALSE(report.is_null()) << why;
  EXPECT_EQ(report["stop_signal"], SIGINT);
  ASSERT_EQ(report["scenarios"].size(), 2u) << report.dump(1);
  EXPECT_EQ(report["scenarios"][0]["name"], "watchdogtest/first");
  EXPECT_EQ(report["scenarios"][0]["status"], "ok");
  const json& hung = report["scenarios"][1];
  EXPECT_EQ(hung["status"], "failed");
  EXPECT_EQ(hung["kind"], "interrupted") << hung.dump(1);
  EXPECT_NE(hung["reason"].get<std::string>().find("interrupted by SIGINT in repetition 1 of 2"),
            std::string::npos)
      << hung["reason"];
  const json& doc = report["json"];
  ASSERT_TRUE(doc.contains("interrupted")) << doc.dump(1).substr(0, 2000);
  EXPECT_EQ(doc["interrupted"]["signal"], "SIGINT");
  EXPECT_EQ(doc["interrupted"]["during"], "watchdogtest/hangs_forever");
  EXPECT_EQ(doc["interrupted"]["not_run"], json::array({"watchdogtest/after"}));
  const std::string table = report["table"];
  EXPECT_NE(table.find("INTERRUPTED by SIGINT during watchdogtest/hangs_forever"),
            std::string::npos)
      << table;
  // Nothing left: the scenario's process, its thread and its grandchild.
  EXPECT_EQ(report["children"], "") << report.dump(1);
  const pid_t grandchild = started()->grandchild.load();
  ASSERT_GT(grandchild, 0);
  EXPECT_TRUE(gone_within(grandchild, std::chrono::seconds(5)));
  if (::kill(grandchild, 0) == 0) ::kill(grandchild, SIGKILL);
}

// Issue 34 items 5, 7, 8: under --quick a stall is a sample over the
// repetition's budget as run (a fifth); a failed row's CSV line has the
// header's 20 fields; the watchdog says its limit unrounded.
TEST(Runner, QuickBudgetCsvFieldsAndWatchdogLimit) {
  RunOptions options;
  options.filters = {"watchdogtest/hangs_forever", "watchdogtest/aborts",
                     "watchdogtest/stalls_quick"};
  options.repetitions = 3;
  options.quick = true;
  options.progress = false;
  options.scenario_timeout_s = 0.25;
  std::string why;
  const json report = run_in_child(options, std::chrono::seconds(60), &why);
  ASSERT_FALSE(report.is_null()) << why;
  ASSERT_EQ(report["scenarios"].size(), 3u) << report.dump(1);
  const json& hung = report["scenarios"][0];
  EXPECT_NE(hung["reason"].get<std::string>().find("may take at most 250.0 ms"), std::string::npos)
      << hung["reason"];
  const json& stalls = report["scenarios"][2];
  EXPECT_EQ(stalls["name"], "watchdogtest/stalls_quick");
  ASSERT_EQ(stalls["warnings"].size(), 1u) << stalls.dump(1);
  EXPECT_NE(stalls["warnings"][0].get<std::string>().find("budget of 2.00 ms"), std::string::npos)
      << stalls["warnings"][0];
  std::istringstream csv(report["csv"].get<std::string>());
  std::string line;
  int lines = 0;
  while (std::getline(csv, line)) {
    ++lines;
    EXPECT_EQ(std::count(line.begin(), line.end(), ','), 19) << line;
  }
  EXPECT_GT(lines, 3);
  if (const pid_t g = started()->grandchild.load(); g > 0) ::kill(g, SIGKILL);
}

}  // namespace
}  // namespace doorbell::lab
