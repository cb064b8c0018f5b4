// The soak of doorbell trace (issue 32): a whole-system `doorbell trace
// --json` over a workload of thread and process churn with signals
// (tests/trace_truth_workload.cpp, shape churn) for DOORBELL_SOAK_SECONDS
// (`./run soak [SECONDS]`, 600 by default there). The trace's resident
// memory (VmRSS, sampled every second) must stay at or under 64 MiB, and its
// counts must be exact against the workload's truth: the workload's own
// SIGUSR1 (one per thread, each thread gone after it) and the SIGRTMIN+9 of
// its children (one per process, each gone after it: counted in the row of
// exited processes). At the default --interval (1 s): the streams of the
// processes gone are retired, their memory freed, at the end of each interval.
//
// Both backends: bpf, and tracefs, which maps a short-lived thread to its
// process by the task_newtask event of its creation (without it, 3 of 12,869
// of the workload's SIGUSR1 were counted in rows of their own).
// DOORBELL_SOAK_KEEP_SUMMARY=FILE keeps the trace's summary line there.
//
// Long tier: ctest label `soak`, excluded by the presets (CMakePresets.json),
// and without DOORBELL_SOAK_SECONDS it skips, saying so. Needs root.
#include <gtest/gtest.h>
#include <signal.h>
#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <future>
#include <sstream>
#include <string>
#include <thread>

#include <nlohmann/json.hpp>

#include "tests/support/files.h"
#include "tests/support/run_program.h"

namespace fs = std::filesystem;
using doorbell::test::RunOptions;
using doorbell::test::RunResult;
using doorbell::test::slurp;

namespace {

constexpr long kRssBoundKiB = 64 * 1024;

// VmRSS of `pid` in KiB; 0 when it is gone.
long rss_kib(pid_t pid) {
  std::istringstream in(slurp("/proc/" + std::to_string(pid) + "/status"));
  for (std::string line; std::getline(in, line);)
    if (line.rfind("VmRSS:", 0) == 0) return std::atol(line.c_str() + 6);
  return 0;
}

void soak(const std::string& backend) {
  if (::geteuid() != 0) GTEST_SKIP() << "tracing needs root (bpf(2), tracefs); not root";
  const char* env = std::getenv("DOORBELL_SOAK_SECONDS");
  if (env == nullptr)
    GTEST_SKIP() << "the soak runs with DOORBELL_SOAK_SECONDS set (./run soak [SECONDS])";
  const int seconds = std::atoi(env);
  ASSERT_GE(seconds, 5) << "DOORBELL_SOAK_SECONDS must be at least 5";
  const fs::path truth_file =
      fs::temp_directory_path() / ("doorbell-soak-" + std::to_string(::getpid()) + ".json");
  fs::remove(truth_file);

  RunOptions trace_options;
  trace_options.timeout = std::chrono::seconds(seconds + 180);
  auto tracer = doorbell::test::start_doorbell(
      {"trace", "--json", "--backend", backend, "--interval", "1"}, trace_options);
  // Its output is read all along (finish(), in a thread, until the SIGINT
  // below ends it): a trace blocked on a full pipe reads no maps, and the
  // BPF programs' table of (process, signal) fills.
  std::future<RunResult> traced = std::async(std::launch::async, [&] { return tracer.finish(); });
  // The tracer is attached once it has written its start line; give it
  // time (it loads and attaches programs) before the workload starts.
  std::this_thread::sleep_for(std::chrono::seconds(5));

  RunOptions work_options;
  work_options.input = "g";
  work_options.timeout = std::chrono::seconds(seconds + 120);
  auto work = doorbell::test::start_program(
      {std::string(DOORBELL_BINARY_DIR) + "/tests/trace_truth_workload", "churn",
       std::to_string(seconds), truth_file.string()},
      work_options);
  // finish() feeds the go byte; the workload then waits (killed below).
  std::thread feeder([&] {
    // The go byte: written by finish(), which returns when we kill it.
    (void)work.finish();
  });
  long rss_max = 0, samples = 0;
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(seconds + 60);
  while (!fs::exists(truth_file) && std::chrono::steady_clock::now() < deadline) {
    rss_max = std::max(rss_max, rss_kib(tracer.pid()));
    ++samples;
    std::this_thread::sleep_for(std::chrono::seconds(1));
  }
  // One more interval, so that every child's row is retired into the
  // exited row before the summary.
  std::this_thread::sleep_for(std::chrono::milliseconds(2500));
  rss_max = std::max(rss_max, rss_kib(tracer.pid()));
  ::kill(tracer.pid(), SIGINT);
  const RunResult r = traced.get();
  ::kill(work.pid(), SIGKILL);
  feeder.join();
  ASSERT_TRUE(fs::exists(truth_file)) << "the workload wrote no truth in time";
  const nlohmann::json truth = nlohmann::json::parse(slurp(truth_file));
  fs::remove(truth_file);
  ASSERT_TRUE(r.success()) << r.describe().substr(0, 4000);

  nlohmann::json summary;
  std::istringstream lines(r.out);
  for (std::string line; std::getline(lines, line);) {
    auto j = nlohmann::json::parse(line, nullptr, false);
    if (!j.is_discarded() && j["type"] == "summary") summary = j;
  }
  ASSERT_TRUE(summary.is_object()) << "no summary line";
  if (const char* keep = std::getenv("DOORBELL_SOAK_KEEP_SUMMARY"))
    std::ofstream(keep) << summary.dump(1);
  const int usr1 = truth["signals"][0]["sig"], rt = truth["signals"][1]["sig"];
  const uint64_t threads = truth["signals"][0]["sent"], children = truth["signals"][1]["sent"];
  EXPECT_EQ(truth["signals"][0]["taken"], threads);
  uint64_t own_generated = 0, own_taken = 0, exited_generated = 0, exited_taken = 0;
  for (const auto& s : summary["signals"]) {
    if (s["pid"] == work.pid() && s["signal"] == usr1) {
      own_generated = s["generated"];
      own_taken = s["taken"].is_null() ? s["delivered"] : s["taken"];
    }
    // The children's: in the row of exited processes, or (gone since the
    // last interval) in rows of their own.
    if (s["signal"] == rt) {
      exited_generated += s["generated"].get<uint64_t>();
      exited_taken += (s["taken"].is_null() ? s["delivered"] : s["taken"]).get<uint64_t>();
    }
  }
  std::printf(
      "soak (%s, %d s): trace VmRSS max %ld KiB over %ld samples; threads %llu (trace: %llu "
      "generated, %llu taken), processes %llu (trace: %llu generated, %llu taken), lost_events "
      "%lld\n",
      backend.c_str(), seconds, rss_max, samples, static_cast<unsigned long long>(threads),
      static_cast<unsigned long long>(own_generated), static_cast<unsigned long long>(own_taken),
      static_cast<unsigned long long>(children), static_cast<unsigned long long>(exited_generated),
      static_cast<unsigned long long>(exited_taken), summary["lost_events"].get<long long>());
  EXPECT_LE(rss_max, kRssBoundKiB) << "the trace's memory grew past 64 MiB";
  EXPECT_EQ(summary["lost_events"], 0);
  EXPECT_EQ(own_generated, threads);
  EXPECT_EQ(own_taken, threads);
  EXPECT_EQ(exited_generated, children);
  EXPECT_EQ(exited_taken, children);
}

TEST(TraceSoak, BpfWholeSystemUnderChurnStaysBoundedAndExact) {
  soak("bpf");
}

// The tracefs backend pairs in user space from the events it reads: its
// streams, queues and histograms are the tracker's, bounded the same way.
TEST(TraceSoak, TracefsWholeSystemUnderChurnStaysBoundedAndExact) {
  soak("tracefs");
}

}  // namespace
