// The e2e lab group through the CLI, as a user runs it: every signal is
// accounted for, the broadcast reaches every thread, and nothing is left
// behind (no target process, no tracefs instance).
#include <dirent.h>
#include <sys/stat.h>
#include <unistd.h>

#include <gtest/gtest.h>

#include <chrono>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>
#include <string>
#include <vector>

#include "sys/tracefs.h"
#include "tests/support/run_program.h"

namespace {

std::string slurp(const std::string& path) {
  std::ifstream in(path);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

double total(const nlohmann::json& scenario, const std::string& counter) {
  double sum = 0;
  for (const auto& v : scenario["counters"][counter]["per_repetition"]) sum += v.get<double>();
  return sum;
}

// Processes still named like the lab's target.
int targets_alive() {
  int count = 0;
  DIR* proc = opendir("/proc");
  while (const dirent* e = readdir(proc)) {
    if (e->d_name[0] < '0' || e->d_name[0] > '9') continue;
    if (slurp(std::string("/proc/") + e->d_name + "/comm") == "db-e2e-target\n") ++count;
  }
  closedir(proc);
  return count;
}

int host_tracefs_mounts() {
  return doorbell::sys::tracefs::count_mounts_in(slurp("/proc/1/mountinfo"));
}

TEST(E2eLab, EverySignalAccountedForAndNothingLeftBehind) {
  const int host_mounts_before = host_tracefs_mounts();
  const std::string json_path = testing::TempDir() + "/e2e_" + std::to_string(getpid()) + ".json";
  const int before = targets_alive();
  const doorbell::test::RunResult r = doorbell::test::run_doorbell(
      {"bench", "--quick", "--repeat", "2", "--no-progress", "--filter",
       "e2e/signal:threads=2,policy=receiver-fifo,main=busy", "--filter",
       "e2e/signal:threads=2,policy=every-thread,main=busy", "--json", json_path},
      {.timeout = std::chrono::seconds(240)});
  ASSERT_EQ(r.exit_code(), 0) << r.describe();
  const auto j = nlohmann::json::parse(slurp(json_path));
  ASSERT_EQ(j["scenarios"].size(), 2u);
  for (const auto& s : j["scenarios"]) {
    SCOPED_TRACE(s["name"].get<std::string>());
    ASSERT_EQ(s["status"], "ok") << s["reason"];
    const double sent = total(s, "sent"), handled = total(s, "handled"), lost = total(s, "lost");
    const double distinct = total(s, "distinct_handled");
    EXPECT_GT(sent, 0);
    // Both rows are remedies, and the sender waits for each signal to be
    // handled before the next: a correct lab handles every signal it sent,
    // each once. 'handled' counts handlings, 'distinct_handled' the signals
    // (slots) handled: a duplicate let through, a handling recorded under a
    // wrong index, or a dropped signal each break one of these equalities.
    EXPECT_EQ(lost, 0) << "signals sent but never handled";
    EXPECT_EQ(distinct, sent) << "not every signal sent was handled";
    EXPECT_EQ(handled, distinct) << "some signal was handled more than once";
    // Every handled signal became one sample; none vanished between them.
    EXPECT_EQ(s["metrics"]["e2e"]["count"].get<double>(), handled);
    EXPECT_EQ(s["metrics"]["send"]["count"].get<double>(), handled);
    EXPECT_TRUE(s["metrics"].contains("delay"));
    // send + delay, the quantity that compares policies, for every policy
    // and every handled signal (every-thread's delay alone is 0 by the
    // split's definition: its wait is in send).
    ASSERT_TRUE(s["metrics"].contains("send_delay")) << s["name"];
    EXPECT_EQ(s["primary_metric"], "send_delay");
    if (s["metrics"].contains("recv")) {
      EXPECT_EQ(s["metrics"]["send_delay"]["count"], s["metrics"]["recv"]["count"]);
    }
    EXPECT_GE(s["metrics"]["send_delay"]["p50"].get<double>(),
              s["metrics"]["send"]["min"].get<double>());
    if (geteuid() == 0) {
      // As root the lab has the kernel's tracepoints (tracefs is mounted
      // privately when absent): the split must include the traced 'recv'.
      // Without it the lab fell back to user-space stamps silently.
      ASSERT_TRUE(s["metrics"].contains("recv")) << "no traced split as root: " << s["notes"];
      EXPECT_GT(s["metrics"]["recv"]["count"].get<double>(), 0);
      EXPECT_TRUE(s["counters"].contains("trace_unpaired"));
    }
    if (s["params"]["policy"] == "every-thread") {
      // main + 2 workers reached by each broadcast; the copies not claimed
      // are duplicates, never second handlings.
#if defined(__SANITIZE_THREAD__)
      // ThreadSanitizer adds a thread of its own to every process.
      EXPECT_GE(total(s, "threads_reached"), 3 * sent);
#else
      EXPECT_EQ(total(s, "threads_reached"), 3 * sent);
#endif
      // Each copy runs the handler at most once (copies still pending when
      // the target was killed never ran it).
      EXPECT_LE(total(s, "handler_runs"), total(s, "threads_reached"));
      EXPECT_EQ(total(s, "duplicates"), total(s, "handler_runs") - handled);
    } else {
      EXPECT_EQ(total(s, "handler_runs"), handled);
    }
  }
  // The targets were killed and reaped; the tracefs instance was removed
  // (looked up through the binding: tracefs where it is mounted, else
  // mounted privately for this test, so the check always runs as root); the
  // system's mount table gained no tracefs.
  EXPECT_LE(targets_alive(), before);
  EXPECT_EQ(host_tracefs_mounts(), host_mounts_before);
  if (geteuid() == 0) {
    struct stat st;
    const std::string instance = doorbell::sys::tracefs::tracing_dir().path +
                                 "/instances/doorbell-e2e-" + std::to_string(r.pid);
    EXPECT_NE(stat(instance.c_str(), &st), 0) << instance << " left behind";
  }
}

}  // namespace
