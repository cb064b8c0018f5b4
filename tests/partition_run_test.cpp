// Real runs of the partition scheduler with real programs as partitions
// (tests/partition_progs/progress.cpp). Each TEST is its own process.
#include <fcntl.h>
#include <poll.h>
#include <sched.h>
#include <signal.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/time.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <optional>
#include <sstream>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

#include "doorbell/child_process.h"
#include "doorbell/partition.h"
#include "doorbell/signal_channel.h"
#include "gtest/gtest.h"
#include "sys/proc.h"
#include "tests/partition_progs/progress.h"
#include "tests/support/cgroup_probe.h"
#include "tests/support/run_program.h"

namespace doorbell::partition {
namespace {

namespace fs = std::filesystem;
using namespace std::chrono_literals;

std::string temp_dir() {
  char pattern[] = "/tmp/doorbell-partition-test-XXXXXX";
  const char* dir = ::mkdtemp(pattern);
  if (dir == nullptr) throw std::runtime_error("mkdtemp");
  return dir;
}

using test::Progress;

Progress read_progress(const std::string& path) {
  return test::read_progress(path, true);
}

Schedule two_partitions(const std::string& dir, SuspendMethod method, int threads_a) {
  Schedule s;
  s.major_frame_ns = 20'000'000;
  s.method = method;
  s.partitions.push_back(
      {"A", {DOORBELL_PARTITION_PROG, dir + "/A", std::to_string(threads_a)}, {}, {}, {}, 1});
  s.partitions.push_back({"B", {DOORBELL_PARTITION_PROG, dir + "/B", "1"}, {}, {}, {}, 2});
  s.windows.push_back({"A", 0, 8'000'000, 3});
  s.windows.push_back({"B", 10'000'000, 8'000'000, 4});
  // The machine these tests run on is shared and often loaded: nice -10
  // gives the partitions ten times the CPU share of a nice-0 compiler, so
  // they run in their windows (we are root; elsewhere run() reports EPERM).
  if (::geteuid() == 0)
    for (auto& p : s.partitions) p.nice = -10;
  return s;
}

// Every stamp of partition p lies inside one of its measured windows: after
// the resume was issued and before every thread was seen stopped. Returns how
// many of its windows saw progress.
std::size_t expect_progress_only_inside_windows(const RunReport& report, std::size_t p,
                                                const Progress& progress) {
  std::vector<std::pair<int64_t, int64_t>> inside;
  for (const WindowRecord& w : report.windows)
    if (w.partition == p && w.resume_requested_ns != 0)
      inside.push_back({w.resume_requested_ns, w.stopped_ns ? w.stopped_ns : INT64_MAX});
  EXPECT_FALSE(progress.stamps.empty()) << "partition " << p << " never ran";
  std::size_t outside = 0;
  std::vector<bool> window_saw_progress(inside.size(), false);
  for (uint64_t t : progress.stamps) {
    bool found = false;
    for (std::size_t i = 0; i < inside.size(); ++i) {
      if (static_cast<int64_t>(t) >= inside[i].first &&
          static_cast<int64_t>(t) <= inside[i].second) {
        found = true;
        window_saw_progress[i] = true;
        break;
      }
    }
    if (!found) ++outside;
  }
  EXPECT_EQ(outside, 0u) << "stamps outside partition " << p << "'s windows";
  std::size_t with_progress = 0;
  for (bool b : window_saw_progress) with_progress += b;
  return with_progress;
}

// --- stopping a run once the partitions have run in enough windows ---------
//
// A partition on a loaded machine may wait several of its windows for a CPU,
// so "ran in N% of a fixed number of windows" fails for the wrong reason.
// Instead the run goes on until every partition has made progress in
// kWindowsWithProgress of its windows, with the frame limit as a watchdog.
// The count is taken from the progress files in a SIGALRM handler (no second
// thread: run() forks, and TSan does not support fork after threads): the
// stamps of one window are at most a window (8 ms) plus its overrun apart,
// those of two windows of one partition at least 12 ms minus the overrun, so
// a gap over kBurstGapNs starts a new window.
constexpr std::size_t kWindowsWithProgress = 10;
constexpr int64_t kBurstGapNs = 10'000'000;

struct ProgressWatch {
  static constexpr int kFiles = 2;
  char paths[kFiles][256] = {};
  const test::ProgressHeader* maps[kFiles] = {};
  Scheduler* scheduler = nullptr;
};
ProgressWatch g_watch;

// Windows with progress in a progress file: bursts of stamps. Async-signal-safe.
std::size_t bursts(const test::ProgressHeader* header) {
  const auto* stamps = reinterpret_cast<const uint64_t*>(header + 1);
  const uint64_t n =
      std::min<uint64_t>(header->count.load(std::memory_order_relaxed), header->capacity);
  std::size_t count = 0;
  int64_t last = 0;
  for (uint64_t i = 0; i < n; ++i) {
    const auto t = static_cast<int64_t>(stamps[i]);
    if (t == 0) continue;  // taken, not yet written
    if (last == 0 || t - last > kBurstGapNs) ++count;
    last = std::max(last, t);
  }
  return count;
}

// SIGALRM: map the files once they exist, stop the run when all have enough.
void watch_progress(int) {
  const int saved_errno = errno;
  bool enough = true;
  for (int i = 0; i < ProgressWatch::kFiles; ++i) {
    if (g_watch.maps[i] == nullptr) {
      const int fd = ::open(g_watch.paths[i], O_RDONLY | O_CLOEXEC);
      struct stat st;
      if (fd >= 0 && ::fstat(fd, &st) == 0 &&
          static_cast<size_t>(st.st_size) >= test::kProgressFileSize) {
        void* map = ::mmap(nullptr, test::kProgressFileSize, PROT_READ, MAP_SHARED, fd, 0);
        if (map != MAP_FAILED) g_watch.maps[i] = static_cast<const test::ProgressHeader*>(map);
      }
      if (fd >= 0) ::close(fd);
    }
    enough =
        enough && g_watch.maps[i] != nullptr && bursts(g_watch.maps[i]) >= kWindowsWithProgress;
  }
  if (enough) g_watch.scheduler->request_stop();
  errno = saved_errno;
}

// Runs `scheduler` (partitions A and B writing DIR/A and DIR/B) until both
// ran in kWindowsWithProgress windows or `watchdog_frames` passed.
RunReport run_until_progress(Scheduler& scheduler, const std::string& dir,
                             int64_t watchdog_frames) {
  g_watch = ProgressWatch{};
  g_watch.scheduler = &scheduler;
  std::snprintf(g_watch.paths[0], sizeof g_watch.paths[0], "%s/A", dir.c_str());
  std::snprintf(g_watch.paths[1], sizeof g_watch.paths[1], "%s/B", dir.c_str());
  struct sigaction action {};
  action.sa_handler = watch_progress;
  sigemptyset(&action.sa_mask);
  action.sa_flags = SA_RESTART;
  if (::sigaction(SIGALRM, &action, nullptr) != 0) throw std::runtime_error("sigaction");
  itimerval every_10ms{};
  every_10ms.it_interval.tv_usec = 10'000;
  every_10ms.it_value.tv_usec = 10'000;
  if (::setitimer(ITIMER_REAL, &every_10ms, nullptr) != 0) throw std::runtime_error("setitimer");
  RunOptions options;
  options.frames = watchdog_frames;
  RunReport report = scheduler.run(options);
  const itimerval off{};
  ::setitimer(ITIMER_REAL, &off, nullptr);
  for (const test::ProgressHeader* map : g_watch.maps)
    if (map != nullptr) ::munmap(const_cast<test::ProgressHeader*>(map), test::kProgressFileSize);
  return report;
}

void run_two_partitions(SuspendMethod method) {
  const std::string dir = temp_dir();
  Scheduler scheduler(two_partitions(dir, method, 2));
  // 1000 frames (20 s): the watchdog; an idle machine needs about 12.
  const RunReport report = run_until_progress(scheduler, dir, 1000);
  // The method asked for is the method that ran (no silent fall-back).
  EXPECT_EQ(report.method, method_name(method));
  if (method == SuspendMethod::freezer) {
    EXPECT_EQ(report.freezer_version, "cgroup-v2");
  }
  ASSERT_TRUE(report.stopped_early) << "the partitions did not both run in " << kWindowsWithProgress
                                    << " of their windows within 1000 frames";
  EXPECT_LT(report.frames, 1000);
  EXPECT_TRUE(report.exits.empty());
  // Every window before the last completed frame was measured. (After
  // request_stop() run() does not wait for the last suspension, so the last
  // frame's final window may be unmeasured: run() ends at once on a stop.)
  ASSERT_GE(report.windows.size(), 2u * static_cast<std::size_t>(report.frames));
  std::size_t checked = 0;
  for (const WindowRecord& w : report.windows) {
    if (w.frame + 1 >= report.frames) continue;
    EXPECT_GT(w.stopped_ns, 0) << "window of frame " << w.frame << " never measured stopped";
    EXPECT_GE(w.suspend_requested_ns, w.nominal_end_ns);  // lower bound only
    EXPECT_GE(w.stopped_ns, w.suspend_requested_ns);
    if (!w.never_stopped && w.checked) {
      EXPECT_TRUE(w.verified);
    }
    checked += w.checked;
  }
  // The /proc check runs while at least 1 ms is left before the next
  // wake-up: with 10 ms windows, for (nearly) every window.
  EXPECT_GE(checked * 2, report.windows.size());
  ASSERT_EQ(report.summaries.size(), 2u);
  EXPECT_GE(report.summaries[0].windows + 1, static_cast<std::size_t>(report.frames));
  EXPECT_EQ(report.summaries[0].verify_failures + report.summaries[1].verify_failures, 0u);
  // The watch counted bursts of stamps; the windows agree.
  EXPECT_GE(expect_progress_only_inside_windows(report, 0, read_progress(dir + "/A")),
            kWindowsWithProgress);
  EXPECT_GE(expect_progress_only_inside_windows(report, 1, read_progress(dir + "/B")),
            kWindowsWithProgress);
  // The partitions were killed and reaped by run().
  for (pid_t pid : report.pids) EXPECT_NE(::kill(pid, 0), 0);
  fs::remove_all(dir);
}

TEST(PartitionRun, Sigstop_ProgressOnlyInsideWindows) {
  run_two_partitions(SuspendMethod::sigstop);
}

TEST(PartitionRun, SigstopAllThreads_ProgressOnlyInsideWindows) {
  run_two_partitions(SuspendMethod::sigstop_all_threads);
}

TEST(PartitionRun, Freezer_ProgressOnlyInsideWindows) {
  DOORBELL_REQUIRE_V2_FREEZER();
  run_two_partitions(SuspendMethod::freezer);
}

TEST(PartitionRun, FreezerV1Fallback_UsedWhenV2Unusable) {
  DOORBELL_REQUIRE_V1_FREEZER(v1);
  const std::string dir = temp_dir();
  Schedule s = two_partitions(dir, SuspendMethod::freezer, 2);
  s.freezer.v2_parent = "/nonexistent/doorbell";
  Scheduler scheduler(s);
  const RunReport report = run_until_progress(scheduler, dir, 1000);
  ASSERT_TRUE(report.stopped_early) << "partitions did not run in enough windows (watchdog)";
  EXPECT_EQ(report.freezer_version, "cgroup-v1");
  EXPECT_EQ(report.method, "freezer");
  ASSERT_FALSE(report.warnings.empty());
  EXPECT_NE(report.warnings[0].find("v2"), std::string::npos) << report.warnings[0];
  for (const WindowRecord& w : report.windows) {
    if (w.frame + 1 < report.frames) {  // (the last one: see run_two_partitions)
      EXPECT_GT(w.stopped_ns, 0);
    }
  }
  EXPECT_GE(expect_progress_only_inside_windows(report, 0, read_progress(dir + "/A")),
            kWindowsWithProgress);
  // The keeper and the partition cgroups are gone.
  const std::string prefix = "doorbell-" + std::to_string(::getpid()) + "-";
  for (const auto& entry : fs::directory_iterator(v1.dir()))
    EXPECT_NE(entry.path().filename().string().rfind(prefix, 0), 0u) << entry.path();
  fs::remove_all(dir);
}

TEST(PartitionRun, NoFreezerAtAll_FallsBackToSigstopAllThreads) {
  const std::string dir = temp_dir();
  Schedule s = two_partitions(dir, SuspendMethod::freezer, 2);
  s.freezer.v2_parent = "/nonexistent/v2";
  s.freezer.v1_parent = "/nonexistent/v1";
  Scheduler scheduler(s);
  RunOptions options;
  options.frames = 3;
  const RunReport report = scheduler.run(options);
  EXPECT_EQ(report.method, "sigstop-all-threads");
  ASSERT_FALSE(report.warnings.empty());
  EXPECT_NE(report.warnings[0].find("falling back"), std::string::npos);
  for (const WindowRecord& w : report.windows) EXPECT_GT(w.stopped_ns, 0);
  fs::remove_all(dir);
}

TEST(PartitionRun, PartitionExit_ReportedAndScheduleGoesOn) {
  const std::string dir = temp_dir();
  Schedule s = two_partitions(dir, SuspendMethod::sigstop_all_threads, 1);
  s.partitions[1].command.push_back("3");  // B exits with status 3 after 3 ms of its own time
  Scheduler scheduler(s);
  RunOptions options;
  options.frames = 15;
  const RunReport report = scheduler.run(options);
  EXPECT_EQ(report.frames, 15);
  ASSERT_EQ(report.exits.size(), 1u);
  EXPECT_EQ(report.exits[0].partition, 1u);
  EXPECT_EQ(report.exits[0].code, CLD_EXITED);
  EXPECT_EQ(report.exits[0].status, 3);
  EXPECT_EQ(report.exits[0].reason, "exited 3");
  fs::remove_all(dir);
}

TEST(PartitionRun, PartitionExit_StopsScheduleWhenConfigured) {
  const std::string dir = temp_dir();
  Schedule s = two_partitions(dir, SuspendMethod::sigstop, 1);
  s.partitions[1].command.push_back("3");
  s.on_partition_exit = OnPartitionExit::stop_schedule;
  Scheduler scheduler(s);
  RunOptions options;
  options.frames = 50;
  const RunReport report = scheduler.run(options);
  EXPECT_TRUE(report.stopped_early);
  EXPECT_LT(report.frames, 50);
  ASSERT_EQ(report.exits.size(), 1u);
  fs::remove_all(dir);
}

TEST(PartitionRun, MissingCommand_IsAScheduleErrorNamingTheLine) {
  Schedule s = two_partitions("/tmp", SuspendMethod::sigstop, 1);
  s.partitions[1].command = {"/nonexistent/doorbell-no-such-program"};
  s.partitions[1].line = 17;
  Scheduler scheduler(s);
  try {
    scheduler.run(RunOptions{});
    FAIL() << "expected ScheduleError";
  } catch (const ScheduleError& e) {
    EXPECT_EQ(e.line(), 17);
    EXPECT_NE(std::string(e.what()).find("not found"), std::string::npos);
  }
}

// Issue 36: after a long run the analysis (the observer's refine()) took
// minutes while the partitions stayed half-scheduled (one running, the
// others frozen). Every partition is released (here killed and reaped:
// OnSchedulerExit::kill) before refine() is called.
struct SeesPartitionsAtRefine final : WindowObserver {
  std::vector<pid_t> pids;
  std::vector<bool> alive_at_refine;
  bool refined = false;
  void partitions_started(const std::vector<pid_t>& started) override { pids = started; }
  void refine(RunReport&) override {
    refined = true;
    for (pid_t pid : pids) alive_at_refine.push_back(::kill(pid, 0) == 0);
  }
};

TEST(PartitionRun, PartitionsReleasedBeforeTheObserverRefines) {
  const std::string dir = temp_dir();
  Scheduler scheduler(two_partitions(dir, SuspendMethod::sigstop_all_threads, 1));
  SeesPartitionsAtRefine observer;
  RunOptions options;
  options.frames = 3;
  options.observer = &observer;
  scheduler.run(options);
  ASSERT_TRUE(observer.refined);
  ASSERT_EQ(observer.alive_at_refine.size(), 2u);
  for (std::size_t i = 0; i < 2; ++i)
    EXPECT_FALSE(observer.alive_at_refine[i]) << "partition " << i << " still held at refine()";
  fs::remove_all(dir);
}

Scheduler* g_stop_target = nullptr;

void request_stop_from_handler(int) {
  g_stop_target->request_stop();
}

// request_stop() from a signal handler (what the CLI's Ctrl-C does): no
// second thread, so the fork()s inside run() happen in a single-threaded
// process (TSan does not support fork after threads).
TEST(PartitionRun, RequestStopFromSignalHandler_EndsAtNextBoundary) {
  const std::string dir = temp_dir();
  Scheduler scheduler(two_partitions(dir, SuspendMethod::sigstop_all_threads, 1));
  g_stop_target = &scheduler;
  struct sigaction action {};
  action.sa_handler = request_stop_from_handler;
  sigemptyset(&action.sa_mask);
  ASSERT_EQ(::sigaction(SIGALRM, &action, nullptr), 0);
  itimerval timer{};
  timer.it_value.tv_usec = 150'000;
  ASSERT_EQ(::setitimer(ITIMER_REAL, &timer, nullptr), 0);
  RunOptions options;
  options.frames = 1000;  // 20 s unless stopped
  const RunReport report = scheduler.run(options);
  EXPECT_TRUE(report.stopped_early);
  EXPECT_LT(report.frames, 1000);
  for (pid_t pid : report.pids) EXPECT_NE(::kill(pid, 0), 0);
  fs::remove_all(dir);
}

// Issue 25, item 8, in the scheduler: a partition's cgroup that cannot be
// removed (here the partition made a cgroup inside its own, so rmdir says
// EBUSY) is reported once, in the report's warnings. The scheduler's clean-up
// called remove(), which threw after ~100 ms of attempts and left the object
// naming the cgroup; the object's destructor then tried all over again and
// wrote a second warning to stderr.
TEST(PartitionRun, CgroupThatCannotBeRemoved_ReportedOnceNotRetried) {
  DOORBELL_REQUIRE_V2_FREEZER();
  Schedule s;
  s.major_frame_ns = 20'000'000;
  s.method = SuspendMethod::freezer;
  s.freezer.preference = FreezerPreference::v2_only;
  PartitionSpec a;
  a.name = "A";
  a.entry = [] {
    // In the partition: its own cgroup, as it sees it.
    if (::mkdir((test::cgroup2_own_dir() + "/inner").c_str(), 0755) != 0) return 3;
    for (;;) ::pause();
  };
  s.partitions.push_back(a);
  s.windows.push_back({"A", 0, 8'000'000, 0});
  const std::string cgroup =
      test::cgroup2_own_dir() + "/doorbell-" + std::to_string(::getpid()) + "-A";
  // stderr to a file while the scheduler runs.
  char log[] = "/tmp/doorbell-cgroup-warning-XXXXXX";
  const int log_fd = ::mkstemp(log);
  ASSERT_GE(log_fd, 0);
  const int saved_stderr = ::dup(STDERR_FILENO);
  ::dup2(log_fd, STDERR_FILENO);
  RunReport report;
  {
    Scheduler scheduler(s);
    RunOptions options;
    options.frames = 10;
    report = scheduler.run(options);
  }
  ::dup2(saved_stderr, STDERR_FILENO);
  ::close(saved_stderr);
  ::close(log_fd);
  std::ifstream in(log);
  const std::string written((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  ::unlink(log);
  const bool inner_made = fs::exists(cgroup + "/inner");
  ::rmdir((cgroup + "/inner").c_str());
  ::rmdir(cgroup.c_str());
  ASSERT_TRUE(inner_made) << "the partition did not make its inner cgroup";
  std::size_t reported = 0;
  for (const std::string& w : report.warnings)
    reported += w.find("rmdir " + cgroup) != std::string::npos;
  EXPECT_EQ(reported, 1u) << "the cgroup left behind is not reported once in the warnings";
  EXPECT_EQ(written.find("doorbell: warning"), std::string::npos)
      << "the removal was tried again after run() reported it:\n"
      << written;
  EXPECT_FALSE(fs::exists(cgroup));
}

// Issue 25, item 9: the stop lead learns from measured stops only. A
// partition whose suspension never completes before its next window (here
// it waits, uninterruptibly, for a CLONE_VFORK child that the stop stops
// too) has no stop latency: its "latency" was the gap to its next window,
// and two such windows in the last 32 pinned the lead at its cap.
alignas(64) char g_vfork_stack[64 * 1024];

int pause_for_ever(void*) {
  for (;;) ::syscall(SYS_pause);
}

TEST(PartitionRun, StopsThatNeverCompleted_TeachTheStopLeadNothing) {
  Schedule s;
  s.major_frame_ns = 20'000'000;
  s.method = SuspendMethod::sigstop;
  s.max_stop_lead_ns = 4'000'000;
  PartitionSpec a;
  a.name = "A";
  a.entry = [] {
    // The parent sleeps (TASK_KILLABLE) until the child execs or exits: no
    // stop signal stops it; the child, in the same process group, is stopped.
    return ::clone(pause_for_ever, g_vfork_stack + sizeof g_vfork_stack,
                   CLONE_VM | CLONE_VFORK | SIGCHLD, nullptr) < 0
               ? 3
               : 0;
  };
  s.partitions.push_back(a);
  s.windows.push_back({"A", 0, 8'000'000, 0});
  Scheduler scheduler(s);
  RunOptions options;
  options.frames = 8;
  const RunReport report = scheduler.run(options);
  ASSERT_TRUE(report.exits.empty()) << report.exits[0].reason;
  std::size_t never_stopped = 0;
  for (const WindowRecord& w : report.windows) {
    never_stopped += w.never_stopped;
    EXPECT_EQ(w.stop_lead_ns, 0) << "frame " << w.frame << ": a lead learned from windows that "
                                 << "never stopped";
  }
  EXPECT_GE(never_stopped, 4u) << "the partition stopped: the test's premise does not hold";
}

// --- issue 33: process boundaries ----------------------------------------------

// A schedule of one entry partition that only waits.
Schedule one_waiting_partition(SuspendMethod method) {
  Schedule s;
  s.major_frame_ns = 20'000'000;
  s.method = method;
  PartitionSpec a;
  a.name = "A";
  a.entry = [] {
    for (;;) ::pause();
    return 0;
  };
  s.partitions.push_back(a);
  s.windows.push_back({"A", 0, 8'000'000, 0});
  return s;
}

// request_stop() from SIGALRM, `after` from now: a watchdog for runs that
// the old code did not end.
Scheduler* g_alarm_target = nullptr;
void stop_on_alarm(int) {
  if (g_alarm_target != nullptr) g_alarm_target->request_stop();
}
void request_stop_after(Scheduler& scheduler, std::chrono::milliseconds after) {
  g_alarm_target = &scheduler;
  struct sigaction action {};
  action.sa_handler = stop_on_alarm;
  sigemptyset(&action.sa_mask);
  action.sa_flags = SA_RESTART;
  ASSERT_EQ(::sigaction(SIGALRM, &action, nullptr), 0);
  itimerval once{};
  once.it_value.tv_sec = after.count() / 1000;
  once.it_value.tv_usec = (after.count() % 1000) * 1000;
  ASSERT_EQ(::setitimer(ITIMER_REAL, &once, nullptr), 0);
}

// Issue 33, defect 6: duration_ns = INT64_MAX overflowed in the frame count
// (duration + frame - 1): the run lasted one frame. duration_ns <= 0 gave
// one frame and frames = 0 meant "for ever", neither said nor checked. Now
// the count saturates, and a count or duration below 1 is refused before
// anything starts.
TEST(PartitionRun, ExtremeFramesAndDuration_SaturateOrAreRefused) {
  for (const auto& [frames, duration] :
       std::vector<std::pair<std::optional<int64_t>, std::optional<int64_t>>>{
           {0, std::nullopt},
           {-1, std::nullopt},
           {INT64_MIN, std::nullopt},
           {std::nullopt, 0},
           {std::nullopt, -1},
           {std::nullopt, INT64_MIN}}) {
    Scheduler scheduler(one_waiting_partition(SuspendMethod::sigstop));
    request_stop_after(scheduler, 300ms);  // the old code ran for ever on frames = 0
    RunOptions options;
    options.frames = frames;
    options.duration_ns = duration;
    EXPECT_THROW(scheduler.run(options), std::invalid_argument)
        << "frames " << frames.value_or(999) << ", duration_ns " << duration.value_or(999);
    const itimerval off{};
    ::setitimer(ITIMER_REAL, &off, nullptr);
  }
  for (const int64_t duration : {INT64_MAX, INT64_MAX - 1, INT64_MAX - 20'000'000}) {
    Scheduler scheduler(one_waiting_partition(SuspendMethod::sigstop));
    request_stop_after(scheduler, 200ms);
    RunOptions options;
    options.duration_ns = duration;
    const RunReport report = scheduler.run(options);
    EXPECT_TRUE(report.stopped_early)
        << "duration " << duration << ": ended by itself after " << report.frames << " frame(s)";
    EXPECT_GE(report.frames, 2) << "duration " << duration;
  }
  // The same for frames near the type's maximum.
  Scheduler scheduler(one_waiting_partition(SuspendMethod::sigstop));
  request_stop_after(scheduler, 200ms);
  RunOptions options;
  options.frames = INT64_MAX;
  const RunReport report = scheduler.run(options);
  EXPECT_TRUE(report.stopped_early);
  EXPECT_GE(report.frames, 2);
}

// Forks, once the partitions are started, a child that holds every
// descriptor of the scheduler's process (a fork without exec, as another
// thread of the program might make) and lives `seconds` unless killed.
class ForkStrayChild : public WindowObserver {
 public:
  explicit ForkStrayChild(int seconds, std::string pid_file = {})
      : seconds_(seconds), pid_file_(std::move(pid_file)) {}
  void partitions_started(const std::vector<pid_t>&) override {
    stray_ = ::fork();
    if (stray_ == 0) {
      const auto end = std::chrono::steady_clock::now() + std::chrono::seconds(seconds_);
      while (std::chrono::steady_clock::now() < end) ::usleep(100'000);
      ::_exit(0);
    }
    if (!pid_file_.empty()) std::ofstream(pid_file_) << stray_ << "\n";
  }
  void refine(RunReport&) override {}
  pid_t stray() const noexcept { return stray_; }

 private:
  int seconds_;
  std::string pid_file_;
  pid_t stray_ = -1;
};

// Issue 33, defect 4 (first half): the guardian's socket was inherited by a
// child forked without exec during run(); the guardian waited for
// end-of-file, which came only when that unrelated child exited, and
// run()'s clean-up waited for the guardian: 10 frames took 3,103 ms instead
// of ~220. Now run() returns while the stray child still lives.
TEST(PartitionSafety, StrayForkHoldingDescriptors_RunEndsWithoutWaitingForIt) {
  Scheduler scheduler(one_waiting_partition(SuspendMethod::sigstop));
  ForkStrayChild stray(20);
  RunOptions options;
  options.frames = 5;
  options.observer = &stray;
  const RunReport report = scheduler.run(options);
  EXPECT_EQ(report.frames, 5);
  ASSERT_GT(stray.stray(), 0);
  siginfo_t info{};
  ASSERT_EQ(::waitid(P_PID, static_cast<id_t>(stray.stray()), &info, WEXITED | WNOHANG), 0);
  EXPECT_EQ(info.si_pid, 0) << "run() returned only after the unrelated child had exited";
  ::kill(stray.stray(), SIGKILL);
  ::waitpid(stray.stray(), nullptr, 0);
}

// Issue 33, defect 5: run() read every SIGCHLD of the process from its
// signalfd, so the caller's own child's exit notice never reached the
// caller's SignalChannel (11 of 11 runs). Now run() reads no SIGCHLD: the
// caller's child exits during the frames (the freezer makes no SIGCHLD of
// its own then) and the caller's channel has the event.
class OwnChildDuringRun : public WindowObserver {
 public:
  explicit OwnChildDuringRun(SignalChannel& channel) : channel_(channel) {}
  void partitions_started(const std::vector<pid_t>&) override {
    channel_.dispatch([](const SignalEvent&) {});  // the partitions' start-up
    own_.emplace(ChildProcess::spawn({"true"}));
  }
  void refine(RunReport&) override {
    pollfd exited{own_->fd(), POLLIN, 0};
    ::poll(&exited, 1, 5000);  // the caller's child has exited (its SIGCHLD is sent)
    const auto give_up = std::chrono::steady_clock::now() + 5s;
    while (!seen_ && std::chrono::steady_clock::now() < give_up) {
      const auto event = channel_.receive(100ms);
      if (event) seen_events_ += event->describe() + "; ";
      // Its own event, or merged into a partition's pending one (standard
      // signals coalesce: the channel counts it in `coalesced`).
      if (event && event->signal == SIGCHLD &&
          (event->sender_pid == own_->pid() || event->coalesced > 0))
        seen_ = true;
    }
  }
  bool seen() const noexcept { return seen_; }
  const std::string& seen_events() const noexcept { return seen_events_; }
  ChildProcess& own() { return *own_; }

 private:
  SignalChannel& channel_;
  std::optional<ChildProcess> own_;
  bool seen_ = false;
  std::string seen_events_;
};

TEST(PartitionRun, CallersOwnChild_ItsSigchldReachesTheCallersChannel) {
  DOORBELL_REQUIRE_V2_FREEZER();
  SignalChannel::Options channel_options;
  channel_options.mechanism = SignalMechanism::handler;
  SignalChannel channel({SIGCHLD}, channel_options);
  Scheduler scheduler(one_waiting_partition(SuspendMethod::freezer));
  OwnChildDuringRun observer(channel);
  RunOptions options;
  options.frames = 10;
  options.observer = &observer;
  const RunReport report = scheduler.run(options);
  EXPECT_EQ(report.method, "freezer");
  EXPECT_TRUE(observer.seen()) << "the caller's child's SIGCHLD did not reach the caller's channel "
                               << "(child " << observer.own().pid()
                               << "; events: " << observer.seen_events() << ")";
  const auto status = observer.own().wait_for(5s);
  ASSERT_TRUE(status.has_value()) << "the caller's child was reaped by someone else";
  EXPECT_TRUE(status->success()) << status->describe();
}

// --- the scheduler SIGKILLed mid-window: the guardian must clean up ----------

char process_state(pid_t pid) {
  std::ifstream in("/proc/" + std::to_string(pid) + "/stat");
  std::string line;
  if (!std::getline(in, line)) return '\0';
  const auto paren = line.rfind(')');
  return paren == std::string::npos || paren + 2 >= line.size() ? '?' : line[paren + 2];
}

// The cgroups a scheduler left behind, found without the code under test.
std::vector<std::string> leftover_cgroups(pid_t scheduler_pid) {
  return test::cgroups_with_prefix("doorbell-" + std::to_string(scheduler_pid) + "-");
}

// stray: the scheduler's process forks a child without exec once the
// partitions are started (issue 33, defect 4), which holds its descriptors
// and outlives it.
void kill_scheduler_mid_window(SuspendMethod method, OnSchedulerExit on_exit, bool stray = false) {
  // Orphans (the partitions, the guardian) come to us, so we can reap them
  // and see how they died.
  ASSERT_EQ(::prctl(PR_SET_CHILD_SUBREAPER, 1), 0);
  const std::string dir = temp_dir();
  Schedule s = two_partitions(dir, method, 4);
  s.on_scheduler_exit = on_exit;
  const pid_t scheduler_pid = ::fork();
  ASSERT_GE(scheduler_pid, 0);
  if (scheduler_pid == 0) {
    try {
      Scheduler scheduler(s);
      RunOptions options;
      options.frames = 1000;
      ForkStrayChild stray_child(60, dir + "/stray");
      if (stray) options.observer = &stray_child;
      scheduler.run(options);
    } catch (...) {
      ::_exit(1);
    }
    ::_exit(0);
  }
  // Wait until both partitions have run, then kill the scheduler at a moment
  // when one partition is stopped and the other inside its window.
  Progress a, b;
  for (int i = 0; i < 400; ++i) {
    std::this_thread::sleep_for(10ms);
    a = read_progress(dir + "/A");
    b = read_progress(dir + "/B");
    if (!a.stamps.empty() && !b.stamps.empty()) break;
  }
  ASSERT_FALSE(a.stamps.empty());
  ASSERT_FALSE(b.stamps.empty());
  if (method == SuspendMethod::freezer) {
    EXPECT_FALSE(leftover_cgroups(scheduler_pid).empty());
  }
  ASSERT_EQ(::kill(scheduler_pid, SIGKILL), 0);
  int status = 0;
  ASSERT_EQ(::waitpid(scheduler_pid, &status, 0), scheduler_pid);
  ASSERT_TRUE(WIFSIGNALED(status));

  // Within 5 s: no cgroup left behind, partitions killed or running.
  const auto give_up = std::chrono::steady_clock::now() + 5s;
  std::vector<std::string> left;
  do {
    left = leftover_cgroups(scheduler_pid);
    if (left.empty()) break;
    std::this_thread::sleep_for(10ms);
  } while (std::chrono::steady_clock::now() < give_up);
  EXPECT_TRUE(left.empty()) << left.front();

  if (on_exit == OnSchedulerExit::kill) {
    for (pid_t pid : {a.pid, b.pid}) {
      siginfo_t info{};
      ASSERT_EQ(::waitid(P_PID, pid, &info, WEXITED), 0) << "partition " << pid;
      EXPECT_EQ(info.si_code, CLD_KILLED);
      EXPECT_EQ(info.si_status, SIGKILL);
    }
  } else {
    // Left running: neither stopped nor frozen, so both make progress. On a
    // loaded machine that may take a while: wait for it, up to 10 s (a
    // stopped or frozen partition never makes any).
    const size_t before_a = read_progress(dir + "/A").stamps.size();
    const size_t before_b = read_progress(dir + "/B").stamps.size();
    bool a_ran = false, b_ran = false;
    const auto watchdog = std::chrono::steady_clock::now() + 10s;
    while (!(a_ran && b_ran) && std::chrono::steady_clock::now() < watchdog) {
      std::this_thread::sleep_for(10ms);
      a_ran = a_ran || read_progress(dir + "/A").stamps.size() > before_a;
      b_ran = b_ran || read_progress(dir + "/B").stamps.size() > before_b;
    }
    EXPECT_TRUE(a_ran) << "partition A made no progress in 10 s after the scheduler died";
    EXPECT_TRUE(b_ran) << "partition B made no progress in 10 s after the scheduler died";
    for (pid_t pid : {a.pid, b.pid}) {
      EXPECT_NE(process_state(pid), 'T');
      ::kill(pid, SIGKILL);  // our orphans now (subreaper): the PID is safe
      siginfo_t info{};
      EXPECT_EQ(::waitid(P_PID, pid, &info, WEXITED), 0);
    }
  }
  if (stray) {
    // Our orphan now (subreaper): still alive, the PID is safe.
    pid_t stray_pid = 0;
    std::ifstream(dir + "/stray") >> stray_pid;
    EXPECT_GT(stray_pid, 0) << "the stray child was not made";
    if (stray_pid > 0) {
      EXPECT_NE(process_state(stray_pid), '\0')
          << "the stray child is gone: the test proves nothing";
      ::kill(stray_pid, SIGKILL);
      ::waitpid(stray_pid, nullptr, 0);
    }
  }
  // The guardian exits cleanly once it is done.
  for (;;) {
    siginfo_t info{};
    if (::waitid(P_ALL, 0, &info, WEXITED) != 0) break;
    if (info.si_code == CLD_EXITED) {
      EXPECT_EQ(info.si_status, 0);
    }
  }
  fs::remove_all(dir);
}

TEST(PartitionSafety, SchedulerSigkilledMidWindow_Freezer_PartitionsKilledCgroupsRemoved) {
  DOORBELL_REQUIRE_V2_FREEZER();
  kill_scheduler_mid_window(SuspendMethod::freezer, OnSchedulerExit::kill);
}

TEST(PartitionSafety, SchedulerSigkilledMidWindow_Freezer_ResumeLeavesThemRunningThawed) {
  DOORBELL_REQUIRE_V2_FREEZER();
  kill_scheduler_mid_window(SuspendMethod::freezer, OnSchedulerExit::resume);
}

TEST(PartitionSafety, SchedulerSigkilledMidWindow_Sigstop_ResumeLeavesThemRunning) {
  kill_scheduler_mid_window(SuspendMethod::sigstop, OnSchedulerExit::resume);
}

TEST(PartitionSafety, SchedulerSigkilledMidWindow_SigstopAllThreads_PartitionsKilled) {
  kill_scheduler_mid_window(SuspendMethod::sigstop_all_threads, OnSchedulerExit::kill);
}

// Issue 33, defect 4 (second half): after a SIGKILL of the scheduler the
// partitions stayed stopped (state T) until the unrelated child that held
// the guardian's socket exited. The guardian now watches the scheduler's
// process itself.
TEST(PartitionSafety, SchedulerSigkilledWhileStrayForkHoldsItsDescriptors_ResumedPromptly) {
  kill_scheduler_mid_window(SuspendMethod::sigstop, OnSchedulerExit::resume, true);
}

TEST(PartitionSafety, SchedulerSigkilledWhileStrayForkHoldsItsDescriptors_Killed) {
  kill_scheduler_mid_window(SuspendMethod::sigstop_all_threads, OnSchedulerExit::kill, true);
}

// --- the CLI: Ctrl-C ends the run cleanly, with a report ----------------------

TEST(PartitionCli, Sigint_StopsAtNextBoundaryWithReportAndNoLeftovers) {
#ifdef DOORBELL_NO_CLI
  GTEST_SKIP() << "built without the CLI (DOORBELL_BUILD_LAB=OFF)";
#else
  const std::string dir = temp_dir();
  const std::string schedule = dir + "/s.toml";
  std::ofstream(schedule)
      << "major_frame_ms = 20\nmethod = \"freezer\"\n"
      << "[[partition]]\nname = \"A\"\nnice = -10\ncommand = [\"" DOORBELL_PARTITION_PROG "\", \""
      << dir << "/A\", \"2\"]\n"
      << "[[partition]]\nname = \"B\"\nnice = -10\ncommand = [\"" DOORBELL_PARTITION_PROG "\", \""
      << dir << "/B\", \"1\"]\n"
      << "[[window]]\npartition = \"A\"\noffset_ms = 0\nduration_ms = 10\n"
      << "[[window]]\npartition = \"B\"\noffset_ms = 10\nduration_ms = 10\n";
  const std::string json = dir + "/report.json";
  test::RunningProgram cli =
      test::start_doorbell({"partition", "run", schedule, "--json", json}, {.timeout = 60s});
  for (int i = 0; i < 400 && read_progress(dir + "/B").stamps.empty(); ++i)
    std::this_thread::sleep_for(10ms);
  ASSERT_TRUE(cli.process().send_signal(SIGINT));
  const test::RunResult r = cli.finish();
  ASSERT_EQ(r.exit_code(), 0) << r.describe();
  std::ifstream in(json);
  std::stringstream text;
  text << in.rdbuf();
  EXPECT_NE(text.str().find("\"stopped_early\": true"), std::string::npos)
      << text.str().substr(0, 400);
  // The schedule asks for the freezer: where cgroup2 offers one (decided
  // here, not by the code under test), the freezer ran, not a fall-back.
  if (test::cgroup2_freezer_usable()) {
    EXPECT_NE(text.str().find("\"method\": \"freezer\""), std::string::npos)
        << text.str().substr(0, 400);
    EXPECT_NE(text.str().find("\"freezer_version\": \"cgroup-v2\""), std::string::npos)
        << text.str().substr(0, 400);
  }
  EXPECT_TRUE(leftover_cgroups(r.pid).empty());
  // (A partition that never reached main wrote no pid: 0, skipped.)
  for (pid_t partition : {read_progress(dir + "/A").pid, read_progress(dir + "/B").pid}) {
    if (partition <= 0) continue;
    EXPECT_NE(::kill(partition, 0), 0) << "partition " << partition << " exists";
  }
  fs::remove_all(dir);
#endif
}

}  // namespace
}  // namespace doorbell::partition
