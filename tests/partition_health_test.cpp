// The health monitor (include/doorbell/partition_health.h) with faults
// injected into real partition processes: each error, each action. The
// partitions are functions run in forked children (PartitionSpec::entry)
// that record their own truth (when they killed themselves, which
// incarnation they are) in a shared anonymous mapping; one is a program
// that reports across its exec. Each TEST is its own process.
#include <signal.h>
#include <sys/mman.h>
#include <time.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <cstdint>
#include <string>
#include <thread>

#include "doorbell/partition.h"
#include "doorbell/partition_health.h"
#include "gtest/gtest.h"

namespace doorbell::partition {
namespace {

int64_t monotonic_ns() {
  timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return static_cast<int64_t>(ts.tv_sec) * 1'000'000'000 + ts.tv_nsec;
}

// What the partitions write (shared with the test through fork).
struct Truth {
  std::atomic<int> incarnations{0};
  std::atomic<int64_t> killed_at_ns{0};
  std::atomic<pid_t> pids[8]{};
};

Truth* shared_truth() {
  void* map =
      ::mmap(nullptr, sizeof(Truth), PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
  if (map == MAP_FAILED) throw std::runtime_error("mmap");
  return new (map) Truth();
}

// Two partitions: "a" in [0, 8) ms and "b" in [10, 18) ms of a 20 ms frame,
// both waiting for ever unless a test gives "a" another function.
Schedule two_partitions() {
  Schedule s;
  s.major_frame_ns = 20'000'000;
  s.method = SuspendMethod::sigstop_all_threads;
  for (const char* name : {"a", "b"}) {
    PartitionSpec p;
    p.name = name;
    p.entry = []() -> int {
      for (;;) ::pause();
    };
    if (::geteuid() == 0) p.nice = -10;  // ahead of a loaded machine's compilers
    s.partitions.push_back(p);
  }
  s.windows.push_back({"a", 0, 8'000'000, 0});
  s.windows.push_back({"b", 10'000'000, 8'000'000, 0});
  return s;
}

RunReport run_frames(Schedule s, int64_t frames) {
  Scheduler scheduler(std::move(s));
  RunOptions options;
  options.frames = frames;
  return scheduler.run(options);
}

std::size_t count_events(const RunReport& r, HealthError error) {
  std::size_t n = 0;
  for (const auto& e : r.health_events) n += e.error == error;
  return n;
}

// The first incarnation of "a" kills itself 1 ms into its first window; the
// later ones wait. Records each incarnation's pid and the kill time.
std::function<int()> dies_once(Truth* truth) {
  return [truth]() -> int {
    const int n = truth->incarnations.fetch_add(1) + 1;
    if (n <= 8) truth->pids[n - 1].store(::getpid());
    if (n == 1) {
      const int64_t until = monotonic_ns() + 1'000'000;
      while (monotonic_ns() < until) {
      }
      truth->killed_at_ns.store(monotonic_ns());
      ::raise(SIGKILL);
    }
    for (;;) ::pause();
  };
}

TEST(PartitionHealth, KilledMidWindow_DetectedInWindow_RestartedColdAtNextWindow) {
  Truth* truth = shared_truth();
  Schedule s = two_partitions();
  s.partitions[0].entry = dies_once(truth);
  s.health[HealthError::process_died] = HealthAction::restart;
  const RunReport r = run_frames(s, 6);
  ASSERT_EQ(truth->incarnations.load(), 2) << "killed once, restarted once, ran again";
  EXPECT_EQ(r.restarts, 1u);
  ASSERT_EQ(count_events(r, HealthError::process_died), 1u);
  const HealthEvent& e = r.health_events.front();
  EXPECT_EQ(e.action, HealthAction::restart);
  // Frame 0 as a rule; a loaded machine may give it no CPU in its first
  // window(s).
  EXPECT_LT(e.frame, 5);
  EXPECT_EQ(e.pid, truth->pids[0].load());
  EXPECT_NE(e.detail.find("SIGKILL"), std::string::npos) << e.detail;
  // Detected after the kill. When it was detected in its window (the usual
  // case; a loaded machine can start the partition late in its window, and
  // the exit itself takes time: the lab's partition/fault_detection row
  // measures how often), the event names that window.
  EXPECT_GE(e.detected_ns, truth->killed_at_ns.load());
  if (e.window_start_ns != 0) {
    EXPECT_EQ(e.window_start_ns, r.start_ns + e.frame * 20'000'000);
    EXPECT_LT(e.detected_ns, e.window_start_ns + 8'000'000);
  }
  // Restarted cold at its next window, as a new process.
  EXPECT_EQ(e.new_pid, truth->pids[1].load());
  EXPECT_NE(e.new_pid, e.pid);
  // The restart's resume is the resume of a later window of "a": its next
  // one (the new process is forked at the detection, before that window).
  const WindowRecord* resumed = nullptr;
  for (const WindowRecord& w : r.windows)
    if (w.partition == 0 && w.resume_requested_ns == e.restarted_ns) resumed = &w;
  ASSERT_NE(resumed, nullptr);
  EXPECT_EQ(resumed->frame, e.frame + 1);
  EXPECT_EQ(r.pids[0], e.new_pid);
  // The new process ran in its windows: the later windows of "a" are not
  // gone.
  for (const WindowRecord& w : r.windows)
    if (w.partition == 0 && w.frame > e.frame) {
      EXPECT_FALSE(w.partition_gone) << "frame " << w.frame;
    }
}

TEST(PartitionHealth, ProcessDied_StopPartition_NeverStartedAgain) {
  Truth* truth = shared_truth();
  Schedule s = two_partitions();
  s.partitions[0].entry = dies_once(truth);
  s.partitions[0].health[HealthError::process_died] = HealthAction::stop_partition;
  const RunReport r = run_frames(s, 4);
  EXPECT_EQ(truth->incarnations.load(), 1);
  EXPECT_EQ(r.restarts, 0u);
  EXPECT_EQ(r.frames, 4) << "the schedule went on";
  ASSERT_EQ(count_events(r, HealthError::process_died), 1u);
  EXPECT_EQ(r.health_events.front().action, HealthAction::stop_partition);
  EXPECT_EQ(r.health_events.front().new_pid, 0);
  for (const WindowRecord& w : r.windows)
    if (w.partition == 0 && w.frame > r.health_events.front().frame) {
      EXPECT_TRUE(w.partition_gone);
    }
}

TEST(PartitionHealth, ApplicationError_StopPartition_KillsTheLiveProcess) {
  Schedule s = two_partitions();
  s.partitions[0].entry = []() -> int {
    report_error(42);
    for (;;) ::pause();
  };
  s.health[HealthError::application_error] = HealthAction::stop_partition;
  const int64_t before = monotonic_ns();
  const RunReport r = run_frames(s, 3);
  EXPECT_EQ(r.frames, 3);
  ASSERT_EQ(count_events(r, HealthError::application_error), 1u);
  const HealthEvent& e = r.health_events.front();
  EXPECT_EQ(e.code, 42);
  EXPECT_EQ(e.count, 1u);
  // Read at the end of the window it ran in (frame 0 unless a loaded
  // machine gave it no CPU there).
  EXPECT_LT(e.frame, r.frames);
  EXPECT_GT(e.fault_ns, before);
  EXPECT_GE(e.detected_ns, e.fault_ns);
  bool killed = false;
  for (const auto& x : r.exits)
    killed |= x.partition == 0 && x.reason.find("stop_partition") != std::string::npos;
  EXPECT_TRUE(killed);
  EXPECT_EQ(count_events(r, HealthError::process_died), 0u) << "its own kill is no death event";
  for (const WindowRecord& w : r.windows)
    if (w.partition == 0 && w.frame > r.health_events.front().frame) {
      EXPECT_TRUE(w.partition_gone);
    }
}

TEST(PartitionHealth, DeadlineMissed_StopSchedule_EndsTheRun) {
  Schedule s = two_partitions();
  s.partitions[1].entry = []() -> int {
    deadline_missed();
    for (;;) ::pause();
  };
  s.health[HealthError::deadline_missed] = HealthAction::stop_schedule;
  const RunReport r = run_frames(s, 50);
  EXPECT_TRUE(r.stopped_early);
  ASSERT_EQ(count_events(r, HealthError::deadline_missed), 1u);
  EXPECT_LE(r.frames, r.health_events.front().frame + 1) << "no frame after the next began";
  EXPECT_EQ(r.health_events.front().action, HealthAction::stop_schedule);
  EXPECT_EQ(r.health_events.front().partition, 1u);
}

TEST(PartitionHealth, LogRecords_IgnoreOnlyCounts) {
  Schedule s = two_partitions();
  s.partitions[0].entry = []() -> int {
    report_error(7);
    report_error(8);
    deadline_missed();
    for (;;) ::pause();
  };
  s.health[HealthError::application_error] = HealthAction::log;
  s.health[HealthError::deadline_missed] = HealthAction::ignore;
  const RunReport r = run_frames(s, 3);
  EXPECT_EQ(r.frames, 3);
  EXPECT_EQ(r.health_counts[static_cast<std::size_t>(HealthError::deadline_missed)], 1u);
  EXPECT_EQ(r.health_counts[static_cast<std::size_t>(HealthError::application_error)], 1u);
  EXPECT_EQ(count_events(r, HealthError::deadline_missed), 0u);
  ASSERT_EQ(count_events(r, HealthError::application_error), 1u);
  EXPECT_EQ(r.health_events.front().count, 2u) << "two reports merged";
  EXPECT_EQ(r.health_events.front().code, 8) << "the last code";
  EXPECT_TRUE(r.exits.empty()) << "log kills nothing";
}

TEST(PartitionHealth, NoHeartbeatForKFrames_OnlyTheSilentOne) {
  Schedule s = two_partitions();
  // "a" is silent; "b" beats in each of its windows.
  s.partitions[1].entry = []() -> int {
    for (;;) {
      heartbeat();
      ::usleep(1000);
    }
  };
  s.health.heartbeat_frames = 3;
  const RunReport r = run_frames(s, 6);
  ASSERT_EQ(count_events(r, HealthError::no_heartbeat), 1u) << "one event per silence";
  const HealthEvent& e = r.health_events.front();
  EXPECT_EQ(e.partition, 0u);
  EXPECT_EQ(e.frame, 2) << "at the end of its third silent frame";
  EXPECT_EQ(e.action, HealthAction::log);
  EXPECT_GT(e.fault_ns, 0);
}

TEST(PartitionHealth, NoHeartbeat_Restart_ForksANewProcess) {
  Truth* truth = shared_truth();
  Schedule s = two_partitions();
  s.partitions[0].entry = [truth]() -> int {
    const int n = truth->incarnations.fetch_add(1) + 1;
    if (n <= 8) truth->pids[n - 1].store(::getpid());
    for (;;) ::pause();
  };
  s.partitions[0].health.heartbeat_frames = 2;
  s.partitions[0].health[HealthError::no_heartbeat] = HealthAction::restart;
  const RunReport r = run_frames(s, 4);
  // Silent frames 0-1: killed at the end of frame 1 and forked again at once,
  // suspended; it runs from frame 2's window. Silent again in 2-3: killed at
  // the end of frame 3 and forked again, but the run ends before that
  // process's first window: it never runs its code.
  ASSERT_EQ(count_events(r, HealthError::no_heartbeat), 2u);
  EXPECT_EQ(r.health_events[0].frame, 1);
  EXPECT_EQ(r.health_events[1].frame, 3);
  EXPECT_EQ(r.health_events[1].new_pid, 0) << "never resumed";
  EXPECT_EQ(r.restarts, 2u);
  EXPECT_NE(r.health_events[0].new_pid, 0);
  EXPECT_NE(r.health_events[0].new_pid, r.health_events[0].pid);
  // The second process ran its code in frame 2's window, unless a loaded
  // machine gave it no CPU there (its window was then empty of it).
  EXPECT_LE(truth->incarnations.load(), 2);
  if (truth->incarnations.load() == 2) {
    EXPECT_EQ(r.health_events[0].new_pid, truth->pids[1].load());
  }
}

TEST(PartitionHealth, Overrun_PastTheThreshold_Logged) {
  Schedule s = two_partitions();
  // 1 ns: every suspension completes after its window's end, so every
  // measured window is an overrun.
  s.overrun_threshold_ns = 1;
  s.health[HealthError::overrun] = HealthAction::log;
  const RunReport r = run_frames(s, 3);
  std::size_t measured = 0;
  for (const WindowRecord& w : r.windows) measured += w.stopped_ns != 0 && !w.never_stopped;
  EXPECT_GT(measured, 0u);
  EXPECT_GE(count_events(r, HealthError::overrun), measured);
  for (const auto& e : r.health_events) {
    EXPECT_EQ(e.error, HealthError::overrun);
    EXPECT_GE(e.detected_ns, e.fault_ns);
  }
}

TEST(PartitionHealth, DefaultTable_OldSchedulesBehaveAsBefore) {
  Schedule s = two_partitions();
  EXPECT_EQ(health_action(s, 0, HealthError::process_died), HealthAction::log);
  EXPECT_EQ(health_action(s, 0, HealthError::overrun), HealthAction::ignore);
  EXPECT_EQ(heartbeat_frames(s, 0), 0);
  s.on_partition_exit = OnPartitionExit::stop_schedule;
  EXPECT_EQ(health_action(s, 0, HealthError::process_died), HealthAction::stop_schedule);
  s.partitions[1].health[HealthError::process_died] = HealthAction::restart;
  EXPECT_EQ(health_action(s, 1, HealthError::process_died), HealthAction::restart);
  EXPECT_EQ(health_action(s, 0, HealthError::process_died), HealthAction::stop_schedule);

  Truth* truth = shared_truth();
  s = two_partitions();
  s.partitions[0].entry = dies_once(truth);
  s.on_partition_exit = OnPartitionExit::stop_schedule;
  const RunReport r = run_frames(s, 20);
  EXPECT_TRUE(r.stopped_early);
  EXPECT_EQ(truth->incarnations.load(), 1);
  ASSERT_EQ(r.exits.size(), 1u);
  ASSERT_EQ(count_events(r, HealthError::process_died), 1u);
  EXPECT_EQ(r.health_events.front().action, HealthAction::stop_schedule);
}

TEST(PartitionHealth, CommandPartition_ReportsThroughTheInheritedDescriptor) {
  Schedule s = two_partitions();
  s.partitions[0].entry = nullptr;
  s.partitions[0].command = {DOORBELL_HEALTH_PROG, "1234"};
  const RunReport r = run_frames(s, 3);
  EXPECT_TRUE(r.exits.empty()) << "exit 3: it could not attach";
  ASSERT_EQ(count_events(r, HealthError::application_error), 1u);
  EXPECT_EQ(r.health_events.front().code, 1234);
  EXPECT_EQ(r.health_events.front().action, HealthAction::log);
}

// Restarts are not bounded by the guardian's table: it forgets each
// reaped process (before, the 257th partition process of a run was refused,
// "the guardian holds 256 partitions at most", and the partition stayed
// stopped with a warning).
TEST(PartitionHealth, RestartsPastTheGuardiansTableKeepRestarting) {
  Truth* truth = shared_truth();
  Schedule s = two_partitions();
  s.major_frame_ns = 4'000'000;
  s.windows[0] = {"a", 0, 2'000'000, 0};
  s.windows[1] = {"b", 2'000'000, 2'000'000, 0};
  s.partitions[0].entry = [truth]() -> int {
    truth->incarnations.fetch_add(1);
    return 0;  // exits at once: restarted at its next window
  };
  s.health[HealthError::process_died] = HealthAction::restart;
  // The run ends once the table's size plus 20 incarnations have run,
  // however slowly this build forks; 10,000 frames (40 s) is the deadline.
  constexpr int kEnough = static_cast<int>(kMaxPartitions) + 20;
  Scheduler scheduler(std::move(s));
  std::atomic<bool> done{false};
  std::thread watcher([&] {
    while (!done.load() && truth->incarnations.load() < kEnough)
      std::this_thread::sleep_for(std::chrono::milliseconds(5));
    scheduler.request_stop();
  });
  RunOptions options;
  options.frames = 10'000;
  const RunReport r = scheduler.run(options);
  done.store(true);
  watcher.join();
  for (const std::string& w : r.warnings) ADD_FAILURE() << w;
  EXPECT_GE(truth->incarnations.load(), kEnough) << "the run ended after " << r.frames << " frames";
  EXPECT_GE(r.restarts, static_cast<uint64_t>(kEnough - 1));
}

// A partition that shrinks its health block (a defect, or a hostile
// program: it holds the descriptor) must not take the scheduler down with a
// SIGBUS at its next read of the block: the block's size is sealed.
TEST(PartitionHealth, APartitionCannotShrinkItsHealthBlockUnderTheScheduler) {
  Schedule s = two_partitions();
  s.partitions[0].entry = nullptr;
  // It tries, then lives on (so the scheduler keeps reading its block).
  s.partitions[0].command = {
      "/bin/sh", "-c",
      "truncate -s 0 /proc/self/fd/$DOORBELL_HEALTH_FD 2>/dev/null; exec sleep 100"};
  const RunReport r = run_frames(s, 3);
  EXPECT_EQ(r.frames, 3);
  EXPECT_TRUE(r.exits.empty());
}

TEST(PartitionHealth, Validate_RefusesAHeartbeatLimitOutOfRange) {
  Schedule s = two_partitions();
  s.health.heartbeat_frames = -1;
  EXPECT_THROW(validate(s), ScheduleError);
  s = two_partitions();
  s.partitions[0].health.heartbeat_frames = kMaxHeartbeatFrames + 1;
  EXPECT_THROW(validate(s), ScheduleError);
}

TEST(PartitionHealth, Api_WithoutAScheduler_DoesNothing) {
  EXPECT_FALSE(attach_health());
  heartbeat();
  deadline_missed();
  report_error(1);
}

}  // namespace
}  // namespace doorbell::partition
