// The partition group (issue 6, seed 002's case study).
//
// (a) partition/stop_latency: how long until EVERY thread of a process with K
//     busy threads is stopped, per suspension method:
//       kill          kill(SIGSTOP) through a pidfd (the kernel picks one
//                     thread, the main thread when it may take it, and the
//                     group stop starts when that thread runs);
//       every_thread  SIGSTOP to each thread with tgkill (thread_broadcast.h);
//       freezer_v2    cgroup v2 cgroup.freeze = 1, until cgroup.events says
//                     "frozen 1";
//       freezer_v1    the v1 freezer with an empty keeper cgroup held frozen
//                     (the static key stays enabled), until freezer.state
//                     reads FROZEN;
//       freezer_v1_cold (full suite) the v1 freezer with no keeper of ours:
//                     pays the static-key patching unless some other v1
//                     cgroup on the machine is frozen.
//     Signals: the sample ends when waitid(WSTOPPED) on the pidfd returns
//     (the last thread to join the group stop reports it). Freezers: polled
//     every 10 us (the v2 POLLPRI notification comes from a kernel work item
//     that a loaded machine runs late), so those samples are late by up to
//     ~10 us plus a wake-up. The measuring thread runs at SCHED_FIFO where
//     permitted; the busy threads are SCHED_OTHER. Between samples the
//     process runs 1-3 ms.
//
// (b) partition/case_study: the real scheduler (doorbell::partition) with
//     partition A (K busy threads) and B (one busy thread), 20 ms frame, two
//     10 ms windows. Primary metric: A's overrun = when every thread of A was
//     stopped minus the nominal end of its window (CLOCK_MONOTONIC). Also
//     stop latency, CPU time A used after its window ended, and B's overrun.
//     Counters: windows, over_1ms, error_percent (the mean scheduling error:
//     overrun as a % of B's window), never_stopped, stop_lead_p50_us,
//     given_up_percent. First run and CPU after end come from sched_switch
//     (lab/partition/window_trace.h, root); without it they are not
//     recorded (the CPU clock is tick-granular). Default suite: >= 200 of
//     A's windows per row over the repetitions. Rows: the three methods and
//     the freezer with a stop lead (max_stop_lead_us=2000).
//
// Safety: every process and cgroup made here is handed to a guardian process
// (src/partition/partition_guardian.h) that thaws, continues and kills them and removes
// the cgroups if the lab dies.
#include <poll.h>
#include <sched.h>
#include <signal.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <memory>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include "doorbell/cgroup_freezer.h"
#include "doorbell/partition.h"
#include "doorbell/thread_broadcast.h"
#include "lab/common/deadline.h"
#include "lab/common/time.h"
#include "lab/harness/scenario.h"
#include "lab/partition/window_trace.h"
#include "partition/partition_guardian.h"
#include "sys/error.h"
#include "sys/pidfd.h"

namespace doorbell::lab {
namespace {

// --- shared pieces ---------------------------------------------------------

[[noreturn]] void spin_forever() {
  volatile uint64_t sink = 0;
  for (;;) sink = sink + 1;
}

// Runs K busy threads (the calling thread is one of them). Never returns.
[[noreturn]] void busy_process(int threads) {
  for (int i = 1; i < threads; ++i) std::thread(spin_forever).detach();
  spin_forever();
}

// SCHED_FIFO for the calling thread for a scope, where permitted.
class FifoScope {
 public:
  explicit FifoScope(Context& ctx) {
    old_policy_ = ::sched_getscheduler(0);
    ::sched_getparam(0, &old_param_);
    sched_param param{};
    param.sched_priority = 80;
    active_ = ::sched_setscheduler(0, SCHED_FIFO | SCHED_RESET_ON_FORK, &param) == 0;
    if (!active_) ctx.note("not permitted to use SCHED_FIFO: the measuring thread wakes late");
  }
  ~FifoScope() {
    if (active_) ::sched_setscheduler(0, old_policy_, &old_param_);
  }

 private:
  bool active_ = false;
  int old_policy_ = SCHED_OTHER;
  sched_param old_param_{};
};

// --- (a) stop latency --------------------------------------------------------

enum class StopMethod { kill, every_thread, freezer_v2, freezer_v1, freezer_v1_cold };

const char* stop_method_name(StopMethod m) {
  switch (m) {
    case StopMethod::kill:
      return "kill";
    case StopMethod::every_thread:
      return "every_thread";
    case StopMethod::freezer_v2:
      return "freezer_v2";
    case StopMethod::freezer_v1:
      return "freezer_v1";
    case StopMethod::freezer_v1_cold:
      return "freezer_v1_cold";
  }
  return "?";
}

bool is_freezer(StopMethod m) {
  return m != StopMethod::kill && m != StopMethod::every_thread;
}

void run_stop_latency(Context& ctx, int threads, StopMethod method) {
  std::unique_ptr<CgroupFreezer> cgroup;
  std::unique_ptr<CgroupFreezer> keeper;
  const std::string prefix = "doorbell-" + std::to_string(::getpid()) + "-lab-";
  FreezerOptions options;
  if (is_freezer(method)) {
    options.preference =
        method == StopMethod::freezer_v2 ? FreezerPreference::v2_only : FreezerPreference::v1_only;
    const FreezerAvailability where = probe_freezers(options);
    if (method == StopMethod::freezer_v2 && where.v2_parent.empty())
      throw SkipScenario("no cgroup v2 freezer: " + where.v2_why_not);
    if (method != StopMethod::freezer_v2 && where.v1_parent.empty())
      throw SkipScenario("no v1 freezer: " + where.v1_why_not);
  }
  detail::Guardian guardian = detail::Guardian::start();
  if (is_freezer(method)) {
    cgroup = std::make_unique<CgroupFreezer>(CgroupFreezer::create(prefix + "stop", options));
    guardian.watch_cgroup(cgroup->path(), cgroup->version() == FreezerVersion::v1);
    if (method == StopMethod::freezer_v1) {
      keeper = std::make_unique<CgroupFreezer>(CgroupFreezer::create(prefix + "keeper", options));
      guardian.watch_cgroup(keeper->path(), true);
      if (keeper->freeze() != 0) sys::throw_errno("freeze the v1 keeper");
    }
  }

  const int guardian_socket = guardian.socket_fd();
  const pid_t parent = ::getpid();
  const pid_t pid = ::fork();
  if (pid < 0) sys::throw_errno("fork");
  if (pid == 0) {
    ::close(guardian_socket);
    ::prctl(PR_SET_PDEATHSIG, SIGKILL);
    if (::getppid() != parent) ::_exit(1);
    busy_process(threads);
  }
  sys::UniqueFd pidfd = sys::pidfd_open(pid);
  guardian.watch_partition(pidfd.get(), true);
  struct Reaper {
    int fd;
    CgroupFreezer* cgroup;
    ~Reaper() {
      sys::pidfd_send_signal(fd, SIGKILL);
      if (cgroup) cgroup->thaw();
      siginfo_t info{};
      while (::waitid(static_cast<idtype_t>(P_PIDFD), fd, &info, WEXITED) != 0 && errno == EINTR) {
      }
    }
  } reaper{pidfd.get(), cgroup.get()};
  if (cgroup) cgroup->add(pid);

  FifoScope fifo(ctx);
  std::minstd_rand random(12345u + static_cast<unsigned>(threads));
  // Let every thread start spinning.
  sleep_ns(3'000'000);
  Histogram& latency = ctx.metric();
  std::size_t n = 0;
  std::size_t never = 0;
  // The measured wait (waitid(WSTOPPED) on the pidfd) has no timeout of its
  // own: past the deadline the rescuer kills the busy process, the wait
  // returns, and the row fails.
  Rescuer rescuer(Deadline(ctx.wait_deadline_ns()),
                  [fd = pidfd.get()] { sys::pidfd_send_signal(fd, SIGKILL); });
  ctx.phase("stopping and resuming the busy process");
  while (ctx.keep_going(n)) {
    sleep_ns(1'000'000 + static_cast<uint64_t>(random() % 2'000'000));
    const uint64_t t0 = monotonic_ns();
    bool stopped = false;
    if (method == StopMethod::kill || method == StopMethod::every_thread) {
      if (method == StopMethod::kill)
        sys::pidfd_send_signal(pidfd.get(), SIGSTOP);
      else
        stop_every_thread(pid);
      siginfo_t info{};
      for (;;) {
        if (::waitid(static_cast<idtype_t>(P_PIDFD), pidfd.get(), &info, WSTOPPED) == 0) break;
        if (errno != EINTR) sys::throw_errno("waitid");
      }
      if (info.si_code != CLD_STOPPED) {
        if (rescuer.fired())
          throw WaitTimedOut("timed out waiting for the busy process to stop (killed)");
        throw std::runtime_error("busy process died");
      }
      stopped = true;
    } else {
      cgroup->freeze();
      const uint64_t give_up = t0 + 200'000'000;
      while (!(stopped = cgroup->is_frozen()) && monotonic_ns() < give_up) sleep_ns(10'000);
    }
    const uint64_t t1 = monotonic_ns();
    if (stopped) {
      latency.record(static_cast<double>(t1 - t0));
    } else {
      ++never;
    }
    if (cgroup)
      cgroup->thaw();
    else
      sys::pidfd_send_signal(pidfd.get(), SIGCONT);
    ++n;
  }
  ctx.counter("samples", static_cast<double>(n));
  ctx.counter("not_stopped_in_200ms", static_cast<double>(never));
  if (method == StopMethod::freezer_v1_cold)
    ctx.note(
        "v1 without a keeper: each freeze may patch the freezer static key, unless another "
        "v1 cgroup on this machine is frozen");
}

std::vector<Scenario> stop_latency_scenarios() {
  std::vector<Scenario> list;
  for (int k : {8, 32, 64}) {  // 64: full suite (./run scale-bench)
    for (StopMethod m : {StopMethod::kill, StopMethod::every_thread, StopMethod::freezer_v2,
                         StopMethod::freezer_v1, StopMethod::freezer_v1_cold}) {
      Scenario s;
      s.name = std::string("partition/stop_latency:threads=") + std::to_string(k) +
               ",method=" + stop_method_name(m);
      s.group = "partition";
      s.title = std::string("stop ") + std::to_string(k) + " busy threads: " + stop_method_name(m) +
                (m == StopMethod::freezer_v1 || m == StopMethod::freezer_v1_cold ? " [v1]" : "");
      s.description =
          "from the stop request (kill/tgkill/freeze write) to every thread stopped: "
          "waitid(WSTOPPED) return for signals, cgroup.events frozen 1 / freezer.state FROZEN "
          "polled every 10 us for freezers; CLOCK_MONOTONIC; measuring thread SCHED_FIFO";
      s.params = {{"threads", std::to_string(k)}, {"method", stop_method_name(m)}};
      s.clock = ClockKind::monotonic;
      s.budget_s = 0.05;
      s.samples = 2000;
      s.in_default_suite = m != StopMethod::freezer_v1_cold && k != 64;
      s.run = [k, m](Context& ctx) { run_stop_latency(ctx, k, m); };
      list.push_back(std::move(s));
    }
  }
  return list;
}

// --- (b) the case study --------------------------------------------------------

void run_case_study(Context& ctx, int threads, partition::SuspendMethod method, bool long_run,
                    int64_t max_stop_lead_ns) {
  using namespace partition;
  if (method == SuspendMethod::freezer) {
    const FreezerAvailability where = probe_freezers();
    if (where.v2_parent.empty() && where.v1_parent.empty())
      throw SkipScenario("no cgroup freezer: " + where.v2_why_not + "; " + where.v1_why_not);
  }
  Schedule s;
  s.major_frame_ns = 20'000'000;
  s.method = method;
  s.max_stop_lead_ns = max_stop_lead_ns;
  s.partitions.push_back({"A", {}, {}, {}, [threads]() -> int { busy_process(threads); }, 0});
  s.partitions.push_back({"B", {}, {}, {}, []() -> int { busy_process(1); }, 0});
  s.windows.push_back({"A", 0, 10'000'000, 0});
  s.windows.push_back({"B", 10'000'000, 10'000'000, 0});
  Scheduler scheduler(s);
  RunOptions options;
  // One sample per frame (A's window); set-up and wind-down take ~15 ms.
  const double usable_s = ctx.budget_s() - 0.015;
  int64_t frames = static_cast<int64_t>(usable_s / 0.020);
  frames = std::min<int64_t>(frames, static_cast<int64_t>(ctx.samples()));
  options.frames = std::max<int64_t>(frames, long_run ? 50 : 2);
  options.verify_stopped = false;  // /proc reads would steal B's CPU time
  // First run and CPU after end from sched_switch (exact); without it they
  // would be tick-granular and are not recorded.
  std::unique_ptr<SchedSwitchWindows> trace;
  std::string why_no_trace;
  if (SchedSwitchWindows::available(&why_no_trace)) {
    trace = std::make_unique<SchedSwitchWindows>();
    options.observer = trace.get();
  }
  const RunReport report = scheduler.run(options);
  for (const auto& w : report.warnings) ctx.note(w);
  const bool exact = report.first_run.resolution_ns > 0 && report.first_run.resolution_ns <= 1000;
  if (!exact)
    ctx.note("no sched_switch source (" + why_no_trace +
             "): resume_latency, start_delay_B and cpu_after_end are not recorded (the CPU "
             "clock is tick-granular)");
  Histogram& overrun = ctx.metric("overrun");
  Histogram& stop = ctx.metric("stop_latency");
  Histogram& cpu_after = ctx.metric("cpu_after_end");
  Histogram& resume = ctx.metric("resume_latency");
  Histogram& overrun_b = ctx.metric("overrun_B");
  Histogram& start_b = ctx.metric("start_delay_B");
  for (const WindowRecord& w : report.windows) {
    if (w.stopped_ns == 0 || w.partition_gone) continue;
    if (w.partition == 1) {
      overrun_b.record(static_cast<double>(w.overrun_ns()));
      if (exact && w.first_run_ns) start_b.record(static_cast<double>(w.start_delay_ns()));
      continue;
    }
    // Frame 0 is measured like the rest (the scheduler settles start-up first).
    overrun.record(static_cast<double>(w.overrun_ns()));
    stop.record(static_cast<double>(w.stop_latency_ns()));
    if (exact && w.cpu_after_end_ns >= 0) cpu_after.record(static_cast<double>(w.cpu_after_end_ns));
    if (exact && w.first_run_ns) resume.record(static_cast<double>(w.resume_latency_ns()));
  }
  // Counters of partition A; a repetition's counters are per repetition.
  const PartitionSummary& a = report.summaries.at(0);
  ctx.counter("windows", static_cast<double>(a.windows));
  ctx.counter("over_1ms", static_cast<double>(a.over_threshold));
  ctx.counter("error_percent", a.error_percent);
  ctx.counter("never_stopped", static_cast<double>(a.never_stopped));
  ctx.counter("stop_lead_p50_us", a.stop_lead_p50_ns / 1000.0);
  ctx.counter("given_up_percent", a.given_up_percent);
  ctx.counter("scheduler_fifo", report.fifo ? 1 : 0);
  ctx.counter("sched_switch_source", exact ? 1 : 0);
  if (!report.freezer_version.empty()) ctx.note("freezer: " + report.freezer_version);
}

// The stop-lead row's bound (schedule key max_stop_lead_us).
constexpr int64_t kCaseStudyMaxLeadNs = 2'000'000;

std::vector<Scenario> case_study_scenarios() {
  using partition::SuspendMethod;
  struct Variant {
    SuspendMethod method;
    int64_t max_lead_ns;
  };
  const Variant variants[] = {{SuspendMethod::sigstop, 0},
                              {SuspendMethod::sigstop_all_threads, 0},
                              {SuspendMethod::freezer, 0},
                              {SuspendMethod::freezer, kCaseStudyMaxLeadNs}};
  std::vector<Scenario> list;
  for (bool long_run : {false, true}) {
    for (int k : {8, 32}) {
      for (const Variant& v : variants) {
        const SuspendMethod m = v.method;
        const bool lead = v.max_lead_ns > 0;
        Scenario s;
        s.name = std::string(long_run ? "partition/case_study_long" : "partition/case_study") +
                 ":threads=" + std::to_string(k) + ",method=" + partition::method_name(m) +
                 (lead ? ",max_stop_lead_us=" + std::to_string(v.max_lead_ns / 1000) : "");
        s.group = "partition";
        s.title = std::string("A (") + std::to_string(k) + " threads) overrun, " +
                  partition::method_name(m) + (lead ? " + stop lead" : "") +
                  (long_run ? ", 300 frames" : "");
        s.description =
            "doorbell::partition::Scheduler (SCHED_FIFO), 20 ms frame: A [0,10) ms with K busy "
            "threads, B [10,20) ms one busy thread; a sample = when every thread of A was "
            "stopped (CLD_STOPPED / frozen, polled every 20 us) minus A's nominal window end; "
            "CLOCK_MONOTONIC. First run and CPU after end from sched_switch (root)." +
            std::string(lead ? " Stop lead: the suspension is issued early by the p95 of A's "
                               "last 32 stop latencies, at most 2 ms."
                             : "");
        s.params = {{"threads", std::to_string(k)}, {"method", partition::method_name(m)}};
        if (lead) s.params.push_back({"max_stop_lead_us", std::to_string(v.max_lead_ns / 1000)});
        s.clock = ClockKind::monotonic;
        s.primary_metric = "overrun";
        // Default suite: ~44 frames a repetition, 5 repetitions: >= 200 of
        // A's windows per row (--quick: a fifth).
        s.budget_s = long_run ? 6.1 : 0.9;
        s.samples = long_run ? 300 : 1000;
        s.in_default_suite = !long_run;
        const int64_t max_lead = v.max_lead_ns;
        s.run = [k, m, long_run, max_lead](Context& ctx) {
          run_case_study(ctx, k, m, long_run, max_lead);
        };
        list.push_back(std::move(s));
      }
    }
  }
  return list;
}

// --- (c) fault detection: a partition SIGKILLed mid-window, restarted -----------

// What the partition's incarnations record (a shared anonymous mapping,
// inherited through fork): incarnation i's first instruction and the time it
// killed itself. The guardian holds kMaxPartitions processes per run, so a
// run makes fewer restarts than that.
struct FaultTruth {
  static constexpr int kMax = 200;
  std::atomic<int> incarnations{0};
  std::atomic<int64_t> started_ns[kMax];
  std::atomic<int64_t> killed_ns[kMax];
};

int64_t monotonic_now_ns() {
  timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return static_cast<int64_t>(ts.tv_sec) * 1'000'000'000 + ts.tv_nsec;
}

void run_fault_detection(Context& ctx) {
  using namespace partition;
  void* map = ::mmap(nullptr, sizeof(FaultTruth), PROT_READ | PROT_WRITE,
                     MAP_SHARED | MAP_ANONYMOUS, -1, 0);
  if (map == MAP_FAILED) sys::throw_errno("mmap");
  struct Unmap {
    void* map;
    ~Unmap() { ::munmap(map, sizeof(FaultTruth)); }
  } unmap{map};
  FaultTruth* truth = new (map) FaultTruth();
  Schedule s;
  s.major_frame_ns = 20'000'000;
  s.method = SuspendMethod::sigstop_all_threads;
  // A: each incarnation runs 2 ms of its window, then SIGKILLs itself.
  s.partitions.push_back({"A",
                          {},
                          {},
                          {},
                          [truth]() -> int {
                            const int i = truth->incarnations.fetch_add(1);
                            const int64_t start = monotonic_now_ns();
                            if (i < FaultTruth::kMax) truth->started_ns[i].store(start);
                            while (monotonic_now_ns() < start + 2'000'000) {
                            }
                            if (i < FaultTruth::kMax) truth->killed_ns[i].store(monotonic_now_ns());
                            ::raise(SIGKILL);
                            return 0;
                          },
                          0});
  s.partitions.push_back({"B", {}, {}, {}, []() -> int { busy_process(1); }, 0});
  s.windows.push_back({"A", 0, 10'000'000, 0});
  s.windows.push_back({"B", 10'000'000, 10'000'000, 0});
  s.health[HealthError::process_died] = HealthAction::restart;
  Scheduler scheduler(s);
  RunOptions options;
  const double usable_s = ctx.budget_s() - 0.015;
  int64_t frames = static_cast<int64_t>(usable_s / 0.020);
  frames = std::min<int64_t>(frames, static_cast<int64_t>(ctx.samples()));
  // Below the guardian's kMaxPartitions processes (one per restart).
  options.frames = std::clamp<int64_t>(frames, 2, FaultTruth::kMax - 8);
  options.verify_stopped = false;
  const RunReport report = scheduler.run(options);
  for (const auto& w : report.warnings) ctx.note(w);
  Histogram& detection = ctx.metric("detection_latency");
  Histogram& in_window = ctx.metric("detected_after_window_start");
  Histogram& restart_first_run = ctx.metric("restart_first_run");
  Histogram& restart_resume = ctx.metric("restart_resume");
  std::size_t outside = 0, unmatched = 0;
  // Incarnation i is the i-th process of A: its death is the i-th
  // process_died event (each one is restarted before it can die).
  int i = 0;
  for (const HealthEvent& e : report.health_events) {
    if (e.error != HealthError::process_died || e.partition != 0) continue;
    const int n = i++;
    if (n >= FaultTruth::kMax || truth->killed_ns[n].load() == 0) {
      ++unmatched;
      continue;
    }
    detection.record(static_cast<double>(e.detected_ns - truth->killed_ns[n].load()));
    if (e.window_start_ns == 0 || e.detected_ns >= e.window_start_ns + 10'000'000) ++outside;
    if (e.window_start_ns) in_window.record(static_cast<double>(e.detected_ns - e.window_start_ns));
    if (e.new_pid == 0 || e.window_start_ns == 0 || n + 1 >= FaultTruth::kMax) continue;
    // The next window's nominal start: one frame after the window it died in.
    const int64_t next_start = e.window_start_ns + s.major_frame_ns;
    restart_resume.record(static_cast<double>(e.restarted_ns - next_start));
    const int64_t first = truth->started_ns[n + 1].load();
    if (first) restart_first_run.record(static_cast<double>(first - next_start));
  }
  ctx.counter("faults", static_cast<double>(i));
  ctx.counter("restarts", static_cast<double>(report.restarts));
  ctx.counter("detected_outside_window", static_cast<double>(outside));
  ctx.counter("unmatched", static_cast<double>(unmatched));
  ctx.counter("scheduler_fifo", report.fifo ? 1 : 0);
}

std::vector<Scenario> fault_detection_scenarios() {
  Scenario s;
  s.name = "partition/fault_detection";
  s.group = "partition";
  s.title = "health monitor: SIGKILL mid-window -> detected, restarted cold";
  s.description =
      "doorbell::partition::Scheduler (SCHED_FIFO), 20 ms frame, [health] process_died = "
      "restart: A [0,10) ms runs 2 ms and SIGKILLs itself (recording the time), B [10,20) ms "
      "one busy thread. detection_latency = the health event's detected_ns - the kill time; "
      "restart_resume = the new process's resume - its next window's nominal start (it is "
      "forked, suspended, at the detection); restart_first_run = the new process's first "
      "instruction - that nominal start. CLOCK_MONOTONIC.";
  s.clock = ClockKind::monotonic;
  s.primary_metric = "detection_latency";
  s.budget_s = 0.9;
  s.samples = 1000;
  s.in_default_suite = true;
  s.run = [](Context& ctx) { run_fault_detection(ctx); };
  return {s};
}

const Registrar kStopLatency{stop_latency_scenarios()};
const Registrar kCaseStudy{case_study_scenarios()};
const Registrar kFaultDetection{fault_detection_scenarios()};

const ReferenceRegistrar kPartitionReferences{{
    {.scenario = "partition/stop_latency:threads=8,method=kill",
     .what = "periodic SIGSTOP delay, stock kernel (max)",
     .value_ns = 20.89e6,
     .statistic = "max",
     .source = "seed 002 (IEEE ESL), Jetson Orin Nano, 6 Arm cores, Linux 5.15 PREEMPT_RT"},
    {.scenario = "partition/stop_latency:threads=8,method=every_thread",
     .what = "periodic SIGSTOP delay, both kernel remedies (max)",
     .value_ns = 37e3,
     .statistic = "max",
     .source = "seed 002 (IEEE ESL), Jetson Orin Nano, kernel module / patch"},
}};

const RatioRegistrar kPartitionRatios{{
    {.name = "sigstop / freezer overrun p99 (K=8)",
     .numerator = "partition/case_study:threads=8,method=sigstop",
     .denominator = "partition/case_study:threads=8,method=freezer",
     .statistic = "p99",
     .meaning = "how much later the classic SIGSTOP design stops a multi-threaded partition"},
    {.name = "kill / every-thread stop p99 (K=8)",
     .numerator = "partition/stop_latency:threads=8,method=kill",
     .denominator = "partition/stop_latency:threads=8,method=every_thread",
     .statistic = "p99",
     .meaning = "the cost of the kernel waiting for the main thread to run"},
}};

}  // namespace
}  // namespace doorbell::lab
