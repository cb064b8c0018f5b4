// The partition scheduler's window figures: partition::summarize and the
// per-window values on known inputs, the stop lead, the sched_switch
// matching (lab/partition/window_trace.h) on known events, and, as root,
// real runs: the first run seen where the partition really ran, and frame 0
// measured like every other frame.
#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <map>
#include <stdexcept>
#include <string>
#include <vector>

#include "doorbell/partition.h"
#include "gtest/gtest.h"
#include "lab/partition/window_trace.h"
#include "sys/tracefs.h"
#include "tests/partition_progs/progress.h"

namespace doorbell::partition {
namespace {

// A schedule of two partitions, A [0, 10) ms and B [10, 20) ms, 20 ms frame.
Schedule two_windows() {
  Schedule s;
  s.major_frame_ns = 20'000'000;
  s.partitions.push_back({"A", {"true"}, {}, {}, {}, 0});
  s.partitions.push_back({"B", {"true"}, {}, {}, {}, 0});
  s.windows.push_back({"A", 0, 10'000'000, 0});
  s.windows.push_back({"B", 10'000'000, 10'000'000, 0});
  validate(s);
  return s;
}

WindowRecord window(std::size_t partition, int64_t frame, int64_t overrun, int64_t stop_latency,
                    int64_t resume_latency, int64_t lead = 0) {
  WindowRecord w;
  w.frame = frame;
  w.partition = partition;
  w.window = partition;
  w.nominal_start_ns =
      1'000'000'000 + frame * 20'000'000 + static_cast<int64_t>(partition) * 10'000'000;
  w.nominal_end_ns = w.nominal_start_ns + 10'000'000;
  w.resume_requested_ns = w.nominal_start_ns + 5'000;
  w.first_run_ns = resume_latency >= 0 ? w.resume_requested_ns + resume_latency : 0;
  w.stop_lead_ns = lead;
  w.stopped_ns = w.nominal_end_ns + overrun;
  w.suspend_requested_ns = w.stopped_ns - stop_latency;
  w.verified = true;
  w.checked = true;
  return w;
}

TEST(PartitionWindow, RecordValues_FromKnownTimes) {
  const WindowRecord w = window(0, 0, 300'000, 250'000, 40'000);
  EXPECT_EQ(w.overrun_ns(), 300'000);
  EXPECT_EQ(w.stop_latency_ns(), 250'000);
  EXPECT_EQ(w.resume_latency_ns(), 40'000);
  EXPECT_EQ(w.wake_late_ns(), 50'000);    // suspend requested 50 us after the end
  EXPECT_EQ(w.start_delay_ns(), 45'000);  // 5 us to resume + 40 us to run
  EXPECT_EQ(w.given_up_ns(), 0);

  // A stop lead of 400 us: the suspension was due 400 us before the end and
  // issued 20 us late; every thread was stopped 100 us before the end.
  const WindowRecord led = window(0, 0, -100'000, 280'000, 40'000, 400'000);
  EXPECT_EQ(led.overrun_ns(), -100'000);
  EXPECT_EQ(led.wake_late_ns(), 20'000);
  EXPECT_EQ(led.given_up_ns(), 100'000);

  WindowRecord unknown;
  EXPECT_EQ(unknown.overrun_ns(), -1);
  EXPECT_EQ(unknown.stop_latency_ns(), -1);
  EXPECT_EQ(unknown.resume_latency_ns(), -1);
  EXPECT_EQ(unknown.wake_late_ns(), -1);
  EXPECT_EQ(unknown.start_delay_ns(), -1);
  EXPECT_EQ(unknown.given_up_ns(), -1);
}

TEST(PartitionWindow, SchedulingError_IsOverrunAsPercentOfTheInvadedWindow) {
  const WindowRecord w = window(0, 0, 500'000, 100'000, 0);
  EXPECT_DOUBLE_EQ(scheduling_error_percent(w, 10'000'000), 5.0);
  EXPECT_DOUBLE_EQ(scheduling_error_percent(w, 2'000'000), 25.0);
  EXPECT_DOUBLE_EQ(scheduling_error_percent(window(0, 0, -3'000, 1'000, 0), 10'000'000), 0.0);
  EXPECT_DOUBLE_EQ(scheduling_error_percent(WindowRecord{}, 10'000'000), -1.0);
}

TEST(PartitionWindow, Summarize_KnownWindows) {
  const Schedule s = two_windows();
  RunReport r;
  r.method = "freezer";
  r.overrun_threshold_ns = 1'000'000;
  r.verify_stopped = true;
  // A: overruns 100 us .. 1000 us (10 windows), one over 1 ms (2 ms), one
  // never stopped, one failed check, one gone, one unmeasured.
  for (int i = 1; i <= 10; ++i)
    r.windows.push_back(window(0, i, i * 100'000, i * 10'000, i * 1'000));
  r.windows.push_back(window(0, 11, 2'000'000, 30'000, 20'000));
  WindowRecord never = window(0, 12, 10'000'000, 10'000'000, -1);
  never.never_stopped = true;
  never.verified = false;
  r.windows.push_back(never);
  WindowRecord unverified = window(0, 13, 0, 0, 3'000);
  unverified.verified = false;
  r.windows.push_back(unverified);
  WindowRecord gone = window(0, 14, 9'000'000, 9'000'000, 0);
  gone.partition_gone = true;
  r.windows.push_back(gone);
  WindowRecord unmeasured = window(0, 15, 0, 0, 0);
  unmeasured.stopped_ns = 0;
  r.windows.push_back(unmeasured);
  // B: two windows with a stop lead, stopped 50 us and 150 us early.
  r.windows.push_back(window(1, 1, -50'000, 200'000, 7'000, 250'000));
  r.windows.push_back(window(1, 2, -150'000, 100'000, 9'000, 250'000));
  r.windows[r.windows.size() - 1].cpu_after_end_ns = 0;
  r.windows[r.windows.size() - 2].cpu_after_end_ns = 4'000;

  const std::vector<PartitionSummary> sums = summarize(s, r);
  ASSERT_EQ(sums.size(), 2u);
  const PartitionSummary& a = sums[0];
  EXPECT_EQ(a.partition, "A");
  EXPECT_EQ(a.method, "freezer");
  EXPECT_EQ(a.windows, 13u);  // 10 + over + never + unverified
  EXPECT_EQ(a.unmeasured, 1u);
  // Overruns sorted: 0, 100k..1000k, 2M, 10M: nearest-rank p50 = 7th = 600k.
  EXPECT_DOUBLE_EQ(a.overrun_p50_ns, 600'000);
  EXPECT_DOUBLE_EQ(a.overrun_p99_ns, 10'000'000);
  EXPECT_DOUBLE_EQ(a.overrun_max_ns, 10'000'000);
  EXPECT_DOUBLE_EQ(a.stop_latency_max_ns, 10'000'000);
  // Resume latencies: 1000..10000, 20000 and 3000 (unverified): 12 values, 6th = 5000.
  EXPECT_DOUBLE_EQ(a.resume_latency_p50_ns, 5'000);
  EXPECT_DOUBLE_EQ(a.resume_latency_p99_ns, 20'000);
  EXPECT_DOUBLE_EQ(a.start_delay_p50_ns, 10'000);  // + 5 us to the resume
  EXPECT_DOUBLE_EQ(a.start_delay_max_ns, 25'000);
  EXPECT_EQ(a.over_threshold, 2u);  // 2 ms and the never-stopped 10 ms
  EXPECT_NEAR(a.over_threshold_percent, 100.0 * 2 / 13, 1e-9);
  EXPECT_EQ(a.never_stopped, 1u);
  EXPECT_EQ(a.verify_failures, 1u);  // the never-stopped one is not counted twice
  // Scheduling error: overrun / 10 ms (B's window): 1%..10%, 20%, 100%, 0%.
  EXPECT_NEAR(a.error_percent, (55.0 + 20.0 + 100.0 + 0.0) / 13, 1e-9);
  EXPECT_DOUBLE_EQ(a.error_p99_percent, 100.0);
  EXPECT_DOUBLE_EQ(a.error_max_percent, 100.0);
  // Stolen: (5.5 ms + 2 ms + 10 ms) of 13 windows of 10 ms.
  EXPECT_NEAR(a.stolen_percent, 100.0 * 17.5 / 130.0, 1e-9);
  EXPECT_DOUBLE_EQ(a.given_up_percent, 0.0);
  EXPECT_DOUBLE_EQ(a.stop_lead_max_ns, 0.0);
  // Wake-late p99: never has suspend at end + 0 ... max is window 10: 1 ms - 100 us.
  EXPECT_DOUBLE_EQ(a.wake_late_p99_ns, 2'000'000 - 30'000);

  const PartitionSummary& b = sums[1];
  EXPECT_EQ(b.windows, 2u);
  EXPECT_DOUBLE_EQ(b.overrun_max_ns, -50'000);
  EXPECT_DOUBLE_EQ(b.error_percent, 0.0);
  EXPECT_DOUBLE_EQ(b.stop_lead_p50_ns, 250'000);
  EXPECT_DOUBLE_EQ(b.given_up_percent, 100.0 * 200'000 / 20'000'000);
  EXPECT_DOUBLE_EQ(b.cpu_after_end_max_ns, 4'000);
  EXPECT_DOUBLE_EQ(b.stolen_percent, 0.0);
}

// A stop whose /proc check found no time to run is no failure; one whose
// check ran and failed is.
TEST(PartitionWindow, Summarize_UncheckedStopIsNoVerifyFailure) {
  const Schedule s = two_windows();
  RunReport r;
  r.verify_stopped = true;
  WindowRecord unchecked = window(0, 0, 0, 0, 3'000);
  unchecked.verified = false;
  unchecked.checked = false;
  r.windows.push_back(unchecked);
  r.windows.push_back(window(1, 0, 0, 0, 3'000));
  EXPECT_EQ(summarize(s, r)[0].verify_failures, 0u);
  r.windows[0].checked = true;
  EXPECT_EQ(summarize(s, r)[0].verify_failures, 1u);
}

TEST(PartitionWindow, StopLead_HighPercentileBounded) {
  EXPECT_EQ(stop_lead_ns({}, 500'000, 10'000'000), 0);
  EXPECT_EQ(stop_lead_ns({100'000}, 0, 10'000'000), 0);
  std::vector<int64_t> recent;
  for (int i = 1; i <= 20; ++i) recent.push_back(i * 10'000);  // 10..200 us
  // p95 of 20 values (nearest rank 19) = 190 us.
  EXPECT_EQ(stop_lead_ns(recent, 500'000, 10'000'000), 190'000);
  EXPECT_EQ(stop_lead_ns(recent, 150'000, 10'000'000), 150'000);  // the setting
  EXPECT_EQ(stop_lead_ns(recent, 500'000, 300'000), 150'000);     // half the window
  recent.push_back(9'000'000);                                    // one outlier in 21 is above p95
  EXPECT_EQ(stop_lead_ns(recent, 500'000, 10'000'000), 200'000);
}

TEST(PartitionWindow, Validate_RejectsNegativeStopLead) {
  Schedule s = two_windows();
  s.max_stop_lead_ns = -1;
  EXPECT_THROW(validate(s), ScheduleError);
}

// --- the sched_switch matching, on known events ------------------------------

using lab::SchedEvent;

SchedEvent sw(uint64_t ts, int cpu, pid_t prev, pid_t next) {
  return {ts, cpu, SchedEvent::switch_, prev, next};
}

// A window of partition 0 with the given times, for the trace tests.
WindowRecord traced(int64_t start, int64_t resume, int64_t end, int64_t suspend, int64_t stopped) {
  WindowRecord w;
  w.partition = 0;
  w.nominal_start_ns = start;
  w.resume_requested_ns = resume;
  w.nominal_end_ns = end;
  w.suspend_requested_ns = suspend;
  w.stopped_ns = stopped;
  return w;
}

TEST(PartitionWindowTrace, FirstRunAndCpuAfterEnd_FromSwitches) {
  RunReport r;
  WindowRecord w = traced(1000, 1010, 2000, 2005, 2300);
  w.first_run_ns = 5000;      // a tick-late clock figure, replaced
  w.cpu_after_end_ns = 4000;  // replaced
  r.windows.push_back(w);
  // Partition pid 100 forks thread 101. 100 runs on CPU 0 from 1017 to 2100;
  // 101 runs on CPU 1 from 1500 to 2200. 999 is someone else.
  std::vector<SchedEvent> events = {
      sw(2200, 1, 101, 0),   sw(1017, 0, 999, 100),
      sw(2100, 0, 100, 999), {1400, 0, SchedEvent::fork, 100, 101},
      sw(1500, 1, 999, 101), sw(500, 0, 100, 999),  // before the resume: ignored
  };
  const lab::TraceFigures f = lab::apply_sched_events(events, {100}, r);
  EXPECT_EQ(r.windows[0].first_run_ns, 1017);
  EXPECT_EQ(r.windows[0].cpu_after_end_ns, 100 + 200);  // [2000,2100) + [2000,2200)
  EXPECT_EQ(f.first_runs, 1u);
  EXPECT_EQ(f.first_runs_from_wakeup, 0u);
  // Stopped when the last thread left its CPU (101 at 2200), not when the
  // scheduler noticed (2300).
  EXPECT_EQ(r.windows[0].stopped_ns, 2200);
  EXPECT_EQ(f.stops, 1u);
}

// The events are bounded (SchedSwitchWindows' max_events): past the bound
// every event before the first one not kept is there, so windows that end
// before it are refined and the later ones keep their clock figures,
// counted, never refined from a partial trace.
TEST(PartitionWindowTrace, PastTheBound_LaterWindowsKeepTheirClockFigures) {
  RunReport r;
  WindowRecord early = traced(1000, 1010, 2000, 2005, 2300);
  WindowRecord late = traced(3000, 3010, 4000, 4005, 4300);
  late.frame = 1;
  late.first_run_ns = 3500;
  late.cpu_after_end_ns = 700;
  r.windows = {early, late};
  std::vector<SchedEvent> events = {sw(1017, 0, 999, 100), sw(2100, 0, 100, 999),
                                    sw(3020, 0, 999, 100)};
  const lab::TraceFigures f = lab::apply_sched_events(events, {100}, r, /*complete_until=*/3020);
  EXPECT_EQ(r.windows[0].first_run_ns, 1017);
  EXPECT_EQ(r.windows[0].cpu_after_end_ns, 100);
  EXPECT_EQ(r.windows[1].first_run_ns, 3500) << "refined from a trace that stops inside it";
  EXPECT_EQ(r.windows[1].cpu_after_end_ns, 700);
  EXPECT_EQ(r.windows[1].stopped_ns, 4300);
  EXPECT_EQ(f.past_bound, 1u);
  EXPECT_EQ(f.first_frame_past_bound, 1);
  EXPECT_EQ(f.first_runs, 1u);
}

TEST(PartitionWindowTrace, StopTime_LastSwitchOutAfterTheSuspension) {
  RunReport r;
  auto make = [](int64_t end, int64_t suspend, int64_t noticed) {
    WindowRecord w = traced(end - 1000, end - 1000, end, suspend, noticed);
    w.stop_noticed_ns = noticed;
    return w;
  };
  r.windows.push_back(make(2000, 2010, 2400));  // last switch-out 2150
  r.windows.push_back(make(4000, 4010, 4400));  // nothing ran after 4010: kept
  WindowRecord never = make(6000, 6010, 6900);  // overtaken by the next resume
  never.never_stopped = true;
  r.windows.push_back(never);
  std::vector<SchedEvent> events = {
      sw(1100, 0, 0, 100), sw(2150, 0, 100, 0),  // window 0: out at 2150
      sw(3100, 0, 0, 100), sw(4005, 0, 100, 0),  // window 1: out before the suspension
      sw(5100, 0, 0, 100), sw(6500, 0, 100, 0),  // window 2: never stopped
  };
  const lab::TraceFigures f = lab::apply_sched_events(events, {100}, r);
  EXPECT_EQ(r.windows[0].stopped_ns, 2150);
  EXPECT_EQ(r.windows[0].stop_noticed_ns, 2400);
  EXPECT_EQ(r.windows[0].overrun_ns(), 150);
  EXPECT_EQ(r.windows[1].stopped_ns, 4400);
  EXPECT_EQ(r.windows[2].stopped_ns, 6900);
  EXPECT_EQ(f.stops, 1u);
}

TEST(PartitionWindowTrace, MissingSwitchFromIdle_UsesTheWakeup) {
  RunReport r;
  r.windows.push_back(traced(1000, 1000, 2000, 2000, 2050));
  // CPU 1 went idle; 100 is woken there at 1003 and switched out at 2040,
  // but the switch from idle to 100 was not emitted. A wake-up of an
  // unrelated task is ignored; 200 (exited, not ours) too.
  std::vector<SchedEvent> events = {
      sw(900, 1, 555, 0),
      {1002, 0, SchedEvent::wakeup, 555, 0},
      {1003, 0, SchedEvent::wakeup, 100, 1},
      sw(2040, 1, 100, 0),
  };
  const lab::TraceFigures f = lab::apply_sched_events(events, {100}, r);
  EXPECT_EQ(r.windows[0].first_run_ns, 1003);
  EXPECT_EQ(r.windows[0].cpu_after_end_ns, 40);
  EXPECT_EQ(f.first_runs_from_wakeup, 1u);
}

// Seen on this guest: a kernel thread switched in, its switch to idle and
// the partition's switch in from idle left out. The partition task's
// wake-up onto that CPU stands for its start (counted as such).
TEST(PartitionWindowTrace, MissingSwitchesAfterAKernelThread_UsesTheWakeup) {
  RunReport r;
  r.windows.push_back(traced(1000, 1400, 9000, 9000, 9100));
  std::vector<SchedEvent> events = {
      sw(1020, 0, 555, 75),                   // kernel thread 75 in; its switch out is lost
      {1466, 0, SchedEvent::wakeup, 100, 0},  // partition task woken onto CPU 0
      sw(6900, 0, 100, 32),                   // out (its switch in was lost)
      sw(6920, 0, 32, 100),
      sw(9050, 0, 100, 0),
  };
  const lab::TraceFigures f = lab::apply_sched_events(events, {100}, r);
  EXPECT_EQ(r.windows[0].first_run_ns, 1466);
  EXPECT_EQ(f.first_runs_from_wakeup, 1u);
  EXPECT_EQ(r.windows[0].stopped_ns, 9050);
}

TEST(PartitionWindowTrace, ExitedTid_ReusedByAnotherProcess_NotCounted) {
  RunReport r;
  r.windows.push_back(traced(0, 1000, 2000, 2000, 3000));
  std::vector<SchedEvent> events = {
      {100, 0, SchedEvent::fork, 100, 101},
      {200, 0, SchedEvent::exit, 101, 0},
      sw(2100, 1, 0, 101),  // TID 101 reused by a stranger
      sw(2900, 1, 101, 0),
  };
  lab::apply_sched_events(events, {100}, r);
  EXPECT_EQ(r.windows[0].first_run_ns, 0);
  EXPECT_EQ(r.windows[0].cpu_after_end_ns, 0);
}

// Issue 36: after ~10 minutes (20,291 frames, 3.07 M sched events) the
// matching took 1.5-2 minutes at 100% CPU: every window scanned every run
// interval of its partition (windows x intervals). Each interval is now
// examined a bounded number of times. Asserted by count, never by time.
TEST(PartitionWindowTrace, ManyFrames_IntervalsExaminedLinearly) {
  constexpr int64_t kWindows = 5'000;
  RunReport r;
  std::vector<SchedEvent> events;
  events.push_back({1, 0, SchedEvent::fork, 100, 101});
  for (int64_t i = 0; i < kWindows; ++i) {
    // Window [t, t+5000), suspended at its end, noticed stopped at t+5300;
    // 100 runs on CPU 0 [t+10, t+5100), 101 on CPU 1 [t+20, t+5200).
    const int64_t t = 10'000 + i * 10'000;
    r.windows.push_back(traced(t, t, t + 5000, t + 5000, t + 5300));
    events.push_back(sw(static_cast<uint64_t>(t + 10), 0, 0, 100));
    events.push_back(sw(static_cast<uint64_t>(t + 5100), 0, 100, 0));
    events.push_back(sw(static_cast<uint64_t>(t + 20), 1, 0, 101));
    events.push_back(sw(static_cast<uint64_t>(t + 5200), 1, 101, 0));
  }
  const std::size_t n_events = events.size();
  const lab::TraceFigures f = lab::apply_sched_events(std::move(events), {100}, r);
  EXPECT_EQ(f.first_runs, static_cast<std::size_t>(kWindows));
  EXPECT_EQ(f.stops, static_cast<std::size_t>(kWindows));
  for (int64_t i : {int64_t{0}, kWindows / 2, kWindows - 1}) {
    const int64_t t = 10'000 + i * 10'000;
    EXPECT_EQ(r.windows[i].first_run_ns, t + 10) << i;
    EXPECT_EQ(r.windows[i].stopped_ns, t + 5200) << i;
    EXPECT_EQ(r.windows[i].cpu_after_end_ns, 100 + 200) << i;
  }
  EXPECT_LE(f.intervals_examined, 8 * (n_events + r.windows.size()))
      << "intervals examined grow with windows x intervals";
}

// --- real runs (root) ----------------------------------------------------------

#ifdef DOORBELL_PARTITION_PROG
std::string temp_dir() {
  char pattern[] = "/tmp/doorbell-window-test-XXXXXX";
  const char* dir = ::mkdtemp(pattern);
  if (dir == nullptr) throw std::runtime_error("mkdtemp");
  return dir;
}

// Partition A: one busy thread stamping CLOCK_MONOTONIC at least every 50 us
// of its running (tests/partition_progs/progress.cpp); B: the same.
Schedule busy_pair(const std::string& dir, SuspendMethod method, int threads_a) {
  Schedule s;
  s.major_frame_ns = 20'000'000;
  s.method = method;
  s.partitions.push_back(
      {"A", {DOORBELL_PARTITION_PROG, dir + "/A", std::to_string(threads_a)}, {}, {}, {}, 0});
  s.partitions.push_back({"B", {DOORBELL_PARTITION_PROG, dir + "/B", "1"}, {}, {}, {}, 0});
  s.windows.push_back({"A", 0, 10'000'000, 0});
  s.windows.push_back({"B", 10'000'000, 10'000'000, 0});
  for (auto& p : s.partitions) p.nice = -10;  // ahead of the machine's compilers
  return s;
}

// The sched_switch events that put `pid` on a CPU, recorded by a tracing
// instance of the test's own (independent of the scheduler's source).
class SwitchIns {
 public:
  SwitchIns()
      : formats_(std::vector<sys::tracefs::EventName>{{"sched", "sched_switch"}}),
        instance_("wintest") {
    instance_.tracing_off();
    instance_.write("buffer_size_kb", "8192");
    if (!instance_.write("trace_clock", "mono")) throw std::runtime_error("no trace_clock mono");
    if (!instance_.enable("sched", "sched_switch")) throw std::runtime_error("no sched_switch");
    instance_.write("trace", "");
    instance_.tracing_on();
  }
  struct Switches {
    std::vector<int64_t> ins, outs;  // sorted
  };
  // Stops recording; the times `pid` was switched in and out.
  Switches stop(pid_t pid) {
    instance_.tracing_off();
    Switches s;
    const int id = formats_.id("sched", "sched_switch");
    instance_.read(formats_, [&](const sys::tracefs::RawEvent& e) {
      if (e.id != id) return;
      if (static_cast<pid_t>(e.number("next_pid").value_or(0)) == pid)
        s.ins.push_back(static_cast<int64_t>(e.ts_ns));
      if (static_cast<pid_t>(e.number("prev_pid").value_or(0)) == pid)
        s.outs.push_back(static_cast<int64_t>(e.ts_ns));
    });
    lost_ = instance_.overruns();
    std::sort(s.ins.begin(), s.ins.end());
    std::sort(s.outs.begin(), s.outs.end());
    return s;
  }
  long long lost() const { return lost_; }

 private:
  sys::tracefs::EventFormats formats_;
  sys::tracefs::Instance instance_;
  long long lost_ = 0;
};

// The figure a user reads as "first run" must be where the kernel put the
// partition on a CPU: a single-threaded busy partition's first run is seen
// within 500 us of the sched_switch that started it in its window. The
// CPU-clock method sees it only when the kernel next accounts the
// partition's CPU time: up to a tick (4 ms) later.
TEST(PartitionWindowRun, FirstRun_SeenWithin500usOfItsSchedSwitch) {
  if (::geteuid() != 0) GTEST_SKIP() << "needs root (sched_switch tracing)";
  std::string why;
  ASSERT_TRUE(lab::SchedSwitchWindows::available(&why)) << why;
  const std::string dir = temp_dir();
  Schedule s = busy_pair(dir, SuspendMethod::sigstop_all_threads, 1);
  Scheduler scheduler(s);
  lab::SchedSwitchWindows source;
  RunOptions options;
  // 200 frames (4 s): on a guest whose kernel leaves out many switches from
  // idle, only a few windows in ten have a reference switch-in; 10 are needed.
  options.frames = 200;
  options.observer = &source;
  SwitchIns reference;
  const RunReport report = scheduler.run(options);
  ASSERT_EQ(report.pids.size(), 2u);
  const SwitchIns::Switches sw[2] = {reference.stop(report.pids[0]),
                                     reference.stop(report.pids[1])};
  ASSERT_EQ(reference.lost(), 0) << "the test's own trace lost events";
  EXPECT_EQ(report.first_run.source, "sched_switch");
  std::size_t compared = 0;
  for (const WindowRecord& w : report.windows) {
    if (w.resume_requested_ns == 0 || w.suspend_requested_ns == 0) continue;
    // The first switch-in at or after the resume, before the suspension.
    const auto& list = sw[w.partition].ins;
    const auto it = std::lower_bound(list.begin(), list.end(), w.resume_requested_ns);
    if (it == list.end() || *it >= w.suspend_requested_ns) continue;
    // Switched out before any switch-in was recorded: it ran from a switch
    // the kernel did not emit (on some CPUs of some guests the switch from
    // idle is missing; the source falls back to the sched_wakeup there), so
    // this trace does not know the first run: not a reference.
    const auto& outs = sw[w.partition].outs;
    const auto out = std::lower_bound(outs.begin(), outs.end(), w.resume_requested_ns);
    if (out != outs.end() && *out < *it) continue;
    ++compared;
    ASSERT_NE(w.first_run_ns, 0) << "frame " << w.frame << " partition " << w.partition
                                 << ": switched in, first run not seen";
    EXPECT_LE(std::abs(w.first_run_ns - *it), 500'000)
        << "frame " << w.frame << " partition " << w.partition << ": first run reported "
        << (w.first_run_ns - w.resume_requested_ns) / 1000 << " us after the resume, "
        << "sched_switch put it on a CPU " << (*it - w.resume_requested_ns) / 1000
        << " us after it";
  }
  // Each compared window was checked above. Too few to judge is this guest's
  // tracing (it leaves out most switches from idle; decided by the test's own
  // trace, not by the code under test): said, not failed.
  if (compared < 10u)
    GTEST_SKIP() << "the test's own trace saw the switch-in of only " << compared
                 << " windows (10 needed): this kernel leaves out switches from idle";
  std::filesystem::remove_all(dir);
}

// When the partitions' execve ran, from sched_process_exec (a tracing
// instance of the test's own).
class Execs {
 public:
  Execs()
      : formats_(std::vector<sys::tracefs::EventName>{{"sched", "sched_process_exec"}}),
        instance_("wintestexec") {
    instance_.tracing_off();
    if (!instance_.write("trace_clock", "mono")) throw std::runtime_error("no trace_clock mono");
    if (!instance_.enable("sched", "sched_process_exec"))
      throw std::runtime_error("no sched_process_exec");
    instance_.write("trace", "");
    instance_.tracing_on();
  }
  // Stops recording; pid -> time of its (last) exec.
  std::map<pid_t, int64_t> stop() {
    instance_.tracing_off();
    std::map<pid_t, int64_t> execs;
    const int id = formats_.id("sched", "sched_process_exec");
    instance_.read(formats_, [&](const sys::tracefs::RawEvent& e) {
      if (e.id == id)
        execs[static_cast<pid_t>(e.number("pid").value_or(0))] = static_cast<int64_t>(e.ts_ns);
    });
    return execs;
  }

 private:
  sys::tracefs::EventFormats formats_;
  sys::tracefs::Instance instance_;
};

// Frame 0 is measured like every other frame. Its windows must not hold the
// partitions' start-up: the execve (page faults, file reads that no stop
// interrupts: a partition in them cannot be stopped at its window's end) and,
// for the freezer, the start-up SIGSTOP/SIGCONT handshake. So every
// partition's exec happens before frame 0 starts, and frame 0's windows have
// a measured stop and a measured first run. (Whether a stop is late is the
// machine's load; it is not asserted.)
void frame_zero_measured(SuspendMethod method) {
  if (::geteuid() != 0) GTEST_SKIP() << "needs root (tracing)";
  const std::string dir = temp_dir();
  Scheduler scheduler(busy_pair(dir, method, 4));
  lab::SchedSwitchWindows source;
  RunOptions options;
  options.frames = 3;
  options.observer = &source;
  Execs execs;
  const RunReport report = scheduler.run(options);
  const std::map<pid_t, int64_t> exec_at = execs.stop();
  ASSERT_EQ(report.pids.size(), 2u);
  for (std::size_t i = 0; i < report.pids.size(); ++i) {
    const auto it = exec_at.find(report.pids[i]);
    ASSERT_NE(it, exec_at.end()) << "no exec traced for partition " << i;
    EXPECT_LT(it->second, report.start_ns)
        << "partition " << i << " ran its exec " << (it->second - report.start_ns) / 1000
        << " us into the schedule (frame 0 starts at 0)";
  }
  std::size_t frame_zero = 0;
  for (const WindowRecord& w : report.windows) {
    if (w.frame != 0) continue;
    ++frame_zero;
    EXPECT_NE(w.stopped_ns, 0) << "frame 0 partition " << w.partition << ": no stop measured";
    EXPECT_NE(w.first_run_ns, 0) << "frame 0 partition " << w.partition << ": no first run";
  }
  EXPECT_EQ(frame_zero, 2u);
  // Any warning fails, but the one that says which first runs came from the
  // sched_wakeup fallback: that is this kind of guest's tracing quirk (no
  // switch from idle on some CPUs), said so the reader knows, not an error.
  for (const auto& warning : report.warnings)
    if (warning.find("taken from the sched_wakeup") == std::string::npos)
      ADD_FAILURE() << "warning: " << warning;
  std::filesystem::remove_all(dir);
}

// A long run (hours, as an ARINC schedule runs) keeps at most max_events
// events: issue 36 item 4 saw 3.07 M events kept after ten minutes (24 bytes
// each) and minutes of analysis. Here a bound of 3,000 events is reached in
// the first frames of a busy pair; the trace is switched off, the events not
// kept are counted and said in a warning, the early windows are refined.
TEST(PartitionWindowRun, EventsBounded_PastTheBoundCountedAndSaid) {
  if (::geteuid() != 0) GTEST_SKIP() << "needs root (tracing)";
  const std::string dir = temp_dir();
  Scheduler scheduler(busy_pair(dir, SuspendMethod::sigstop_all_threads, 4));
  lab::SchedSwitchWindows source(3000);
  RunOptions options;
  options.frames = 250;
  options.observer = &source;
  const RunReport report = scheduler.run(options);
  EXPECT_LE(source.events(), 3000u);
  EXPECT_GT(source.not_kept(), 0u) << "a busy pair for 250 frames makes more than 3,000 events";
  EXPECT_GT(source.figures().past_bound, 0u);
  EXPECT_LT(source.figures().past_bound, report.windows.size());
  EXPECT_GT(source.figures().first_runs, 0u) << "the windows before the bound are refined";
  bool said = false;
  for (const auto& warning : report.warnings)
    said |= warning.find("kept its first 3000 events") != std::string::npos;
  EXPECT_TRUE(said) << "no warning names the bound";
  std::filesystem::remove_all(dir);
}

TEST(PartitionWindowRun, Freezer_FrameZeroMeasuredLikeTheOthers) {
  frame_zero_measured(SuspendMethod::freezer);
}

TEST(PartitionWindowRun, SigstopAllThreads_FrameZeroMeasuredLikeTheOthers) {
  frame_zero_measured(SuspendMethod::sigstop_all_threads);
}

// With a stop lead the suspension is issued early and recorded as such.
TEST(PartitionWindowRun, StopLead_IssuedBeforeTheEndAndReported) {
  if (::geteuid() != 0) GTEST_SKIP() << "needs root";
  const std::string dir = temp_dir();
  Schedule s = busy_pair(dir, SuspendMethod::sigstop_all_threads, 2);
  s.max_stop_lead_ns = 2'000'000;
  Scheduler scheduler(s);
  RunOptions options;
  options.frames = 10;
  const RunReport report = scheduler.run(options);
  std::size_t with_lead = 0;
  for (const WindowRecord& w : report.windows) {
    EXPECT_LE(w.stop_lead_ns, 2'000'000);
    if (w.frame == 0) {
      EXPECT_EQ(w.stop_lead_ns, 0) << "nothing learned before frame 0";
    }
    if (w.stop_lead_ns > 0 && w.suspend_requested_ns > 0) {
      ++with_lead;
      // Issued no earlier than its due time (lower bound only).
      EXPECT_GE(w.suspend_requested_ns, w.nominal_end_ns - w.stop_lead_ns);
    }
  }
  EXPECT_GT(with_lead, 0u);
  ASSERT_EQ(report.summaries.size(), 2u);
  EXPECT_GT(report.summaries[0].stop_lead_max_ns, 0);
  std::filesystem::remove_all(dir);
}

// Handover: at a boundary where A's window ends and B's begins, B is resumed
// only once A's stop was noticed, or max_handover after the boundary at the
// latest. Before the handover B was resumed right after A's suspension was
// issued, and B then held the CPU that A's last threads needed to stop.
// (No observer: stopped_ns is the time the scheduler noticed the stop.)
TEST(PartitionWindowRun, Handover_IncomingResumedOnlyAfterTheOutgoingStopped) {
  if (::geteuid() != 0) GTEST_SKIP() << "needs root";
  const std::string dir = temp_dir();
  for (const SuspendMethod method : {SuspendMethod::sigstop_all_threads, SuspendMethod::freezer}) {
    Schedule s = busy_pair(dir, method, 4);
    Scheduler scheduler(s);
    RunOptions options;
    options.frames = 20;
    const RunReport report = scheduler.run(options);
    std::size_t checked = 0;
    for (const WindowRecord& w : report.windows) {
      if (w.resume_requested_ns == 0) continue;
      for (const WindowRecord& before : report.windows) {
        if (before.partition == w.partition || before.nominal_end_ns != w.nominal_start_ns ||
            before.partition_gone)
          continue;
        ++checked;
        // A stop never noticed before B's window (never_stopped, as on a
        // loaded machine) must have let the handover run out.
        const bool after_stop = !before.never_stopped && before.stopped_ns > 0 &&
                                w.resume_requested_ns >= before.stopped_ns;
        const bool handover_ran_out =
            w.resume_requested_ns >= w.nominal_start_ns + options.max_handover_ns;
        EXPECT_TRUE(after_stop || handover_ran_out)
            << report.method << " frame " << w.frame << ": resumed "
            << (before.stopped_ns - w.resume_requested_ns) / 1000
            << " us before the outgoing partition was stopped";
      }
    }
    EXPECT_GE(checked, 30u) << report.method;  // 39 boundaries where one window follows another
  }
  std::filesystem::remove_all(dir);
}
#endif

}  // namespace
}  // namespace doorbell::partition
