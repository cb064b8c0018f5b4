// The partition scheduler: ARINC-653-style time windows for processes, with
// every window measured.
//
// What it is
//   A major frame of fixed windows repeats forever (or for N frames). Each
//   window belongs to one partition, a process (a command line, or in the lab
//   a function run in a forked child). Only the owner of the current window
//   may run; every other partition is suspended. The scheduler runs at
//   SCHED_FIFO where permitted and sleeps on absolute CLOCK_MONOTONIC
//   deadlines. Partitions start suspended.
//
// Process trees
//   Each partition is the leader of its own session and process group
//   (setsid). A partition that forks is suspended, resumed and killed as a
//   whole: the signal methods signal its process group (kill(-pgid), listed
//   by the kernel at each signal), the freezer its cgroup (children are born
//   inside). When the partition's own process exits, what is left of its
//   group and cgroup is killed. Measurements (stopped, verified, CPU clock)
//   concern the partition's own process. docs/partition.md, "Process trees".
//
// Suspension methods
//   sigstop             kill(-pgid, SIGSTOP): the classic user
//                       design. The kernel hands the stop to ONE thread (the
//                       main thread when it does not block it) and the group
//                       stop begins only when that thread runs: with busy
//                       threads that is milliseconds late.
//   sigstop_all_threads SIGSTOP to every thread (tgkill each): the first
//                       thread to run starts the group stop; then
//                       kill(-pgid, SIGSTOP) for the rest of the group.
//   freezer             a cgroup per partition, frozen and thawed (cgroup v2
//                       cgroup.freeze, else the v1 freezer with a keeper
//                       cgroup, cgroup_freezer.h). Where no freezer can be
//                       used the scheduler falls back to sigstop_all_threads
//                       and says so in RunReport::warnings.
//   Resume is SIGCONT to the group (both sigstop methods) or thaw.
//
// What is measured, per window (all CLOCK_MONOTONIC, absolute ns)
//   nominal start/end; resume_requested (when SIGCONT/thaw was issued);
//   first_run (when a thread of the partition first ran after resume);
//   suspend_requested; stopped (when EVERY thread was stopped: the kernel's
//   CLD_STOPPED report, which the last thread to join a group stop sends,
//   checked against each thread's /proc state 'T' when verify_stopped is set
//   (later, see WindowRecord::checked);
//   for freezers cgroup.events "frozen 1" / freezer.state FROZEN).
//   overrun = stopped - nominal end: how far the partition ran into the next
//   window (it includes the scheduler's own wake-up lateness, reported apart
//   as wake_late). Stops are noticed by polling each partition with
//   waitid (by pidfd, WNOHANG) every 50 us while a stop is pending (SIGCHLD
//   is the caller's: see "Process-wide state"), and a freeze by polling the
//   freezer's state every 50 us (v1 has no notification; the kernel rate-limits v2's
//   cgroup.events POLLPRI to one per 12 ms at HZ=250, so a freeze 10 ms
//   after its thaw is notified late; POLLPRI is watched too); the notice
//   time is stop_noticed_ns. The scheduler sleeps between polls: a shorter timeout
//   does not sleep in a VM (arming the timer takes about as long), and the
//   scheduler would hold at SCHED_FIFO the CPU that a stopping thread waits
//   for. An observer may refine stopped_ns
//   to when the last thread really left its CPU (RunReport::stopped).
//
// Boundaries
//   The scheduler sleeps on a timerfd until RunOptions::boundary_spin_ns
//   (default 200 us) before each boundary, then spins on the clock until the
//   boundary: a timer wake-up is late by the interrupt's delivery and the
//   switch to the scheduler (tens to hundreds of microseconds in a VM, where
//   the host delivers the timer), and that lateness would be every window's
//   overrun. The spin takes up to boundary_spin_ns of one CPU per boundary
//   from the partition whose window is ending (SCHED_FIFO); 0 turns it off.
//   A boundary already passed (a stop lead's suspension, then the boundary
//   itself) is not slept on.
//
// Handover
//   A thread stops only when it runs. At a boundary the outgoing
//   partition's threads that wait on a run queue compete with the incoming
//   partition, which the scheduler has just resumed: the kernel's fair
//   scheduler favours the task that slept (the incoming one), and an idle
//   CPU does not pull "cache-hot" waiting threads, so the last outgoing
//   threads could wait a whole time slice (milliseconds, seen in a
//   sched_switch trace) to run the few microseconds it takes to stop. So
//   the incoming partition is resumed when every other partition's
//   suspension has completed, or RunOptions::max_handover_ns (1 ms) after
//   the boundary at the latest. Its start delay includes that wait; a stop
//   lead makes it zero. A suspension that
//   never completed before the partition's next window is marked
//   never_stopped and counts with the overrun up to that window.
//
// Resolution of first_run and cpu_after_end
//   Without a measurement source (RunOptions::observer) both come from the
//   partition's process CPU clock, which for another process advances only
//   when the kernel accounts its threads: at the scheduler tick (CONFIG_HZ;
//   4 ms at HZ=250) or a context switch. Such figures are tick-granular:
//   RunReport::first_run / cpu_after_end say so (source "cpu-clock
//   (tick-granular)", resolution_ns = the tick, read as the resolution of
//   CLOCK_MONOTONIC_COARSE). A WindowObserver (the lab's sched_switch
//   tracer, lab/partition/window_trace.h) replaces them with exact figures
//   and names its source.
//
// Stop lead (Schedule::max_stop_lead_ns > 0)
//   The suspension of a window may be issued before its nominal end, by a
//   lead learned from the partition's recent stop latencies: the 95th
//   percentile of its last kStopLeadHistory measured stop latencies (windows
//   that stopped), at most max_stop_lead_ns and at most half the window. The
//   first windows of a partition use no lead (nothing learned yet). The lead
//   used is WindowRecord::stop_lead_ns; the time a partition was already
//   stopped before its window's end is its window time given up
//   (given_up_ns, PartitionSummary::given_up_percent).
//
// Start-up
//   Before frame 0's clock starts every partition is started, suspended and
//   settled: for the freezer, frozen again after the start-up SIGCONT (its
//   CLD_CONTINUED report consumed); and a command partition is resumed
//   through its execve (the close-on-exec error pipe's end of file says it
//   is done) and suspended again, since an exec's page faults and file reads
//   are not interrupted by a stop. So frame 0 is measured like every other
//   frame. A start-up that takes over 5 s is left to frame 0, with a warning.
//
// Safety
//   Before any partition exists a guardian process is forked. Every
//   partition's pidfd (SCM_RIGHTS) and process group, and every cgroup, is
//   handed to it. When the scheduler is done -- normal return or exception
//   (it says so on the socket), crash or SIGKILL (the guardian watches the
//   scheduler's process through a pidfd, so a copy of the socket that a
//   forked child still holds does not matter) -- the guardian kills every process of
//   the cgroups (OnSchedulerExit::kill: v2 cgroup.kill, v1 freeze and kill
//   each), thaws every cgroup, SIGCONTs every partition and its group, kills
//   them (OnSchedulerExit::kill) or leaves them running, and removes the
//   cgroups and the directories an observer asked it to remove
//   (WindowObserver::remove_on_exit: the lab's tracing instance). The
//   scheduler does the same itself on a normal return.
//   A partition holds PR_SET_PDEATHSIG(SIGKILL) only until the guardian holds
//   its pidfd (a handshake before its first stop), so OnSchedulerExit::resume
//   holds even before a partition's first window. If a partition's pidfd
//   cannot be opened or handed over, the child is killed and reaped and run()
//   throws std::system_error naming the partition and the call. The guardian
//   holds kMaxPartitions partitions (and their cgroups and the v1 keeper):
//   validate() refuses a schedule with more, and a hand-over beyond its limit
//   fails (ENOSPC), so no partition runs that the guardian does not know.
//   Signals go through pidfds (and tgkill with the partition's tgid, which
//   cannot be recycled while it is our unreaped child), never to a recycled
//   PID. Partitions run in their own session, so a terminal's Ctrl-C
//   reaches only the scheduler, which stops cleanly (request_stop()).
//
// Process-wide state
//   run() sets the calling thread to SCHED_FIFO with SCHED_RESET_ON_FORK,
//   restored before run() returns. It leaves signal masks and dispositions
//   alone and reads no signal: SIGCHLD, for the partitions' stops and exits
//   too, reaches the caller's handler or SignalChannel as it would without
//   run() (the partitions are children of the process). run() waits for and
//   reaps only its own partitions (and its guardian), by pidfd; code of the
//   caller's that reaps any child (waitpid(-1), SIGCHLD set to SIG_IGN)
//   takes partitions from it. Do not call run() from two threads at once.
//
// Fork
//   A Scheduler belongs to the process that made it. run() in a forked child
//   of a process whose run() is under way is a run of its own (new guardian,
//   new partitions); request_stop() in the child writes the eventfd it
//   shares with the parent, so it stops the parent's run too. A child forked
//   during run() (by another thread, or a partition's entry) holds copies of
//   the scheduler's descriptors, all close-on-exec: the guardian does not
//   depend on them closing (it watches the scheduler's process), so such a
//   child neither delays the end of run() nor keeps the partitions stopped
//   after the scheduler dies.
#pragma once

#include <sys/types.h>

#include <algorithm>
#include <atomic>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

#include "doorbell/cgroup_freezer.h"
#include "doorbell/partition_health.h"

namespace doorbell::partition {

enum class SuspendMethod { sigstop, sigstop_all_threads, freezer };
const char* method_name(SuspendMethod method) noexcept;  // "sigstop", "sigstop-all-threads", ...
std::optional<SuspendMethod> parse_method(const std::string& name);

// What happens to the schedule when a partition exits or crashes.
enum class OnPartitionExit { continue_schedule, stop_schedule };
// What happens to the partitions when the scheduler ends (any way).
enum class OnSchedulerExit { kill, resume };

struct PartitionSpec {
  std::string name;                  // [A-Za-z0-9_-]{1,64}
  std::vector<std::string> command;  // argv; command[0] searched in PATH
  std::vector<std::pair<std::string, std::string>> environment;  // added to ours
  std::vector<int> cpus;                                         // empty: any
  // Instead of a command: a function run in the forked child (lab, tests).
  // Its return value is the exit status. Runs after fork in a child of a
  // possibly multi-threaded process; it may start threads.
  std::function<int()> entry;
  int line = 0;  // source line in the schedule file, 0 when built in code
  // setpriority() in the child before its first run; -20..19 (below 0 needs
  // CAP_SYS_NICE: the partition then fails to start, reported by run()).
  std::optional<int> nice;
  // This partition's health table: overrides Schedule::health entry by
  // entry (partition_health.h).
  HealthTable health;
};

struct WindowSpec {
  std::string partition;
  int64_t offset_ns = 0;
  int64_t duration_ns = 0;
  int line = 0;
  std::size_t partition_index = 0;  // filled by validate()
};

// A channel between partitions (ARINC 653 ports; include/doorbell/partition_ports.h).
enum class PortKind { sampling, queuing };
struct ChannelSpec {
  std::string name;  // [A-Za-z0-9_-]{1,64}, unique
  PortKind kind = PortKind::sampling;
  std::string source;                     // "PARTITION.PORT"
  std::vector<std::string> destinations;  // "PARTITION.PORT", at least one
  uint32_t message_size = 0;              // 1..kMaxMessageSize bytes
  uint32_t depth = 0;                     // queuing: 1..kMaxQueueDepth messages
  int64_t refresh_ns = 0;                 // sampling: > 0, a read older than this is invalid
  int line = 0;
};

struct Schedule {
  int64_t major_frame_ns = 0;
  int major_frame_line = 0;
  SuspendMethod method = SuspendMethod::sigstop_all_threads;
  FreezerOptions freezer;
  OnPartitionExit on_partition_exit = OnPartitionExit::continue_schedule;
  OnSchedulerExit on_scheduler_exit = OnSchedulerExit::kill;
  int64_t overrun_threshold_ns = 1'000'000;  // windows overrun by more count as errors
  // Upper bound of the stop lead (see "Stop lead" above); 0: no lead.
  int64_t max_stop_lead_ns = 0;
  std::vector<PartitionSpec> partitions;
  std::vector<WindowSpec> windows;
  // Ports: the scheduler makes one memfd for all of them, inherited by the
  // partitions (partition_ports.h). Checked by validate_channels().
  std::vector<ChannelSpec> channels;
  // The health monitor's table (partition_health.h); unset entries take the
  // defaults, process_died from on_partition_exit.
  HealthTable health;
};

// The action the health monitor takes for `error` of partition `partition`:
// its own table's, else the schedule's, else the default
// (partition_health.h, "Actions").
HealthAction health_action(const Schedule& schedule, std::size_t partition, HealthError error);
// no_heartbeat's limit in frames for that partition (0: not checked).
int64_t heartbeat_frames(const Schedule& schedule, std::size_t partition);

// A schedule that cannot run. line is the schedule file's line (0 when the
// problem has no single line); what() is "line N: message" when line > 0.
class ScheduleError : public std::invalid_argument {
 public:
  ScheduleError(int line, const std::string& message);
  int line() const noexcept { return line_; }
  const std::string& message() const noexcept { return message_; }

 private:
  int line_;
  std::string message_;
};

// Checks and completes a schedule: partition names (valid, unique), each has
// a command or an entry, env names non-empty without '=', windows name
// known partitions, durations > 0,
// offsets >= 0, no window past the end of the frame, no two windows overlap,
// no two windows of one partition touch (merge them; one window owning the
// whole frame is fine), every partition has a
// window, at most kMaxPartitions partitions. Sorts windows by offset and
// fills partition_index. Throws ScheduleError naming the offending line.
void validate(Schedule& schedule);

// Checks the channels (validate() calls it): names valid and unique; source
// and destinations name a known partition and a valid port name
// ("PARTITION.PORT"); no port named twice (so none is both a source and a
// destination); sizes within partition_ports.h's bounds and the whole port
// memory at most kMaxPortMemory. Throws ScheduleError naming the line.
void validate_channels(const Schedule& schedule);

// Windows shorter than this are warned about (schedule_warnings): a
// suspension and a resume take tens to hundreds of microseconds
// (docs/partition.md, "Measured"), so such a window is overrun by much of its
// length (a 20 us frame measured a scheduling error of 2509%).
inline constexpr int64_t kShortWindowNs = 1'000'000;

// What a valid (validate()d) schedule will not meet, one line each, for the
// user to see before a run: windows shorter than kShortWindowNs. Empty when
// nothing is amiss. `doorbell partition check` and `run` print them.
std::vector<std::string> schedule_warnings(const Schedule& schedule);

struct RunReport;

// The most partitions one schedule may have: the guardian (see "Safety")
// holds this many, allocating nothing after fork. validate() refuses more.
inline constexpr std::size_t kMaxPartitions = 256;

// How many recent stop latencies of a partition the stop lead learns from.
inline constexpr std::size_t kStopLeadHistory = 32;
// The stop lead for the next window: the 95th percentile (nearest rank) of
// `recent` stop latencies, at most max_lead_ns and at most half of
// window_ns; 0 when recent is empty or max_lead_ns <= 0.
int64_t stop_lead_ns(std::vector<int64_t> recent, int64_t max_lead_ns, int64_t window_ns);

// A directory an observer made for the run (a tracing instance) that must
// not outlive it: `name`, relative to the directory open as `dir_fd`.
struct ObserverDirectory {
  int dir_fd = -1;  // the observer's; the guardian gets a copy
  std::string name;
};

// A measurement source plugged into run(). Its calls come from the thread
// that called run(); an exception from one ends run() (after cleaning up)
// with that exception.
class WindowObserver {
 public:
  virtual ~WindowObserver() = default;
  // Once, right after partitions_started(): directories to remove when
  // the scheduler ends, whichever way (SIGKILL too): they are handed to the
  // guardian ("Safety"), which removes them after run() returns or the
  // scheduler dies. Between partitions_started() and this call a SIGKILL
  // leaves them to the observer's own next start.
  virtual std::vector<ObserverDirectory> remove_on_exit() { return {}; }
  // Once, when every partition is started and suspended, before the
  // start-up exec (see "Start-up": no partition has run its own code or
  // made a thread yet) and before frame 0's clock starts. pids: per
  // partition.
  virtual void partitions_started(const std::vector<pid_t>& pids) = 0;
  // Once, after the last window was measured and after every partition was
  // killed or released (OnSchedulerExit), so that no analysis here holds a
  // partition stopped or half-scheduled; before the summaries are made. May set
  // first_run_ns and cpu_after_end_ns of any window and must then set
  // report.first_run / report.cpu_after_end to its own source; likewise
  // stopped_ns (never later than stop_noticed_ns) and report.stopped.
  virtual void refine(RunReport& report) = 0;
};

struct RunOptions {
  // How long run() goes on. frames: this many major frames, at least 1.
  // duration_ns: the whole frames that cover it (rounded up, without
  // overflow: INT64_MAX runs for ~292 years), at least 1 ns; it wins when
  // both are set. Neither: until request_stop() (or a partition's exit with
  // OnPartitionExit::stop_schedule). run() throws std::invalid_argument for
  // frames or duration_ns below 1, before anything starts.
  std::optional<int64_t> frames;
  std::optional<int64_t> duration_ns;
  // 1..99: SCHED_FIFO at that priority; 0: do not ask for SCHED_FIFO.
  // run() refuses anything else (std::invalid_argument).
  int fifo_priority = 80;
  bool verify_stopped = true;  // sigstop methods: check /proc 'T' states
  // From set-up done to the first frame; >= 0 (run() refuses a negative
  // one). A delay past the clock's range waits until request_stop().
  int64_t start_delay_ns = 2'000'000;
  // The scheduler sleeps until this long before each boundary and spins the
  // rest on its CPU (see "Boundaries"); 0 (or negative): sleep until the
  // boundary.
  int64_t boundary_spin_ns = 200'000;
  // At a boundary where one window ends and another begins, the incoming
  // partition is resumed once the outgoing one is stopped, or this long
  // after the boundary at the latest (see "Handover"); 0 (or negative): at
  // once; past the clock's range: once the outgoing one is stopped.
  int64_t max_handover_ns = 1'000'000;
  // A measurement source (not owned; may be null). See WindowObserver.
  WindowObserver* observer = nullptr;
};

// Where a figure comes from and how fine it is.
struct FigureSource {
  std::string source;         // "cpu-clock (tick-granular)", "sched_switch"
  int64_t resolution_ns = 0;  // the figure's resolution
};

struct WindowRecord {
  int64_t frame = 0;
  std::size_t window = 0;     // index into Schedule::windows (sorted)
  std::size_t partition = 0;  // index into Schedule::partitions
  int64_t nominal_start_ns = 0, nominal_end_ns = 0;
  int64_t resume_requested_ns = 0;
  int64_t first_run_ns = 0;  // 0: not seen (resolution: RunReport::first_run)
  int64_t suspend_requested_ns = 0;
  int64_t stop_lead_ns = 0;  // how long before nominal_end the suspension was due
  int64_t stopped_ns = 0;    // 0: never (the partition exited, or the run ended)
  // When the scheduler noticed the stop (CLD_STOPPED, frozen); stopped_ns is
  // this too unless an observer refined it (RunReport::stopped).
  int64_t stop_noticed_ns = 0;
  bool partition_gone = false;
  bool verified = false;  // per-thread states checked and all stopped
  // The check ran: for the signal methods it is made after the stop, while
  // the partition is still suspended and at least 1 ms is left before the
  // scheduler's next wake-up (out of the way of the handover); a window
  // whose check found no such time stays unchecked, which is no failure.
  bool checked = false;
  // The suspension had not completed when the partition's next window began
  // (the resume cancelled it): stopped_ns is then that resume, a lower bound.
  bool never_stopped = false;
  // CPU time the partition (all threads) consumed after its window ended
  // and before it was stopped: how much of the next window it really took.
  // A runnable thread waiting for a CPU delays "stopped" but takes nothing;
  // -1 unknown. Resolution: RunReport::cpu_after_end (the CPU-clock
  // fall-back counts from suspend_requested).
  int64_t cpu_after_end_ns = -1;
  int64_t cpu_at_suspend_ns = 0;  // internal: the partition's CPU clock then

  int64_t overrun_ns() const noexcept { return stopped_ns ? stopped_ns - nominal_end_ns : -1; }
  int64_t stop_latency_ns() const noexcept {
    return stopped_ns ? stopped_ns - suspend_requested_ns : -1;
  }
  int64_t resume_latency_ns() const noexcept {
    return first_run_ns ? first_run_ns - resume_requested_ns : -1;
  }
  int64_t wake_late_ns() const noexcept {
    return suspend_requested_ns ? suspend_requested_ns + stop_lead_ns - nominal_end_ns : -1;
  }
  // The incoming partition's start delay: first run - nominal start.
  int64_t start_delay_ns() const noexcept {
    return first_run_ns ? first_run_ns - nominal_start_ns : -1;
  }
  // Window time given up: how long before nominal_end every thread was
  // already stopped (0 when it stopped at or after the end; -1 unknown).
  int64_t given_up_ns() const noexcept {
    return stopped_ns ? std::max<int64_t>(0, nominal_end_ns - stopped_ns) : -1;
  }
};

// The scheduling error of one window, in percent: the time the partition
// ran into the window it invaded (max(0, overrun)) as a percentage of that
// window's length, invaded_window_ns (the next window when it starts at
// this one's end, else this window's own length). The paper (seed 002,
// after Jo et al.) calls a partition scheduler exact when this stays near
// 0% ("the next partition's window was not eaten into"). -1 when unknown.
double scheduling_error_percent(const WindowRecord& window, int64_t invaded_window_ns) noexcept;

struct PartitionExit {
  std::size_t partition = 0;
  int64_t time_ns = 0;
  int code = 0;        // si_code: CLD_EXITED, CLD_KILLED, CLD_DUMPED
  int status = 0;      // exit status or signal number
  std::string reason;  // "exited 3", "killed by SIGSEGV", "exec failed: ..."
};

// Statistics of one partition's windows.
struct PartitionSummary {
  std::string partition;
  std::string method;
  std::size_t windows = 0;     // windows whose stop was measured
  std::size_t unmeasured = 0;  // windows without a stop time
  double overrun_p50_ns = 0, overrun_p99_ns = 0, overrun_max_ns = 0;
  double stop_latency_p50_ns = 0, stop_latency_p99_ns = 0, stop_latency_max_ns = 0;
  double resume_latency_p50_ns = 0, resume_latency_p99_ns = 0;
  // Incoming start delay: first run - nominal window start.
  double start_delay_p50_ns = 0, start_delay_p99_ns = 0, start_delay_max_ns = 0;
  double wake_late_p99_ns = 0;
  double cpu_after_end_p99_ns = 0, cpu_after_end_max_ns = 0;
  std::size_t over_threshold = 0;     // windows overrun by more than the threshold
  double over_threshold_percent = 0;  // 100 * over_threshold / windows
  // Scheduling error (scheduling_error_percent) over the measured windows:
  // mean (error_percent), p99 and max.
  double error_percent = 0, error_p99_percent = 0, error_max_percent = 0;
  double stop_lead_p50_ns = 0, stop_lead_max_ns = 0;  // the stop lead used
  double given_up_percent = 0;      // window time given up / scheduled window time, in %
  double stolen_percent = 0;        // overrun time / scheduled window time, in %
  std::size_t never_stopped = 0;    // suspensions the next resume overtook
  std::size_t verify_failures = 0;  // CLD_STOPPED, yet a thread not in state T
};

struct RunReport {
  std::string method;           // as used, after any fall-back
  std::string freezer_version;  // "cgroup-v2", "cgroup-v1", or empty
  bool fifo = false;            // the scheduler ran at SCHED_FIFO
  int64_t start_ns = 0;         // nominal start of frame 0
  int64_t frames = 0;           // frames completed
  int64_t overrun_threshold_ns = 0;
  bool stopped_early = false;    // request_stop() or a partition exit with stop_schedule
  bool verify_stopped = false;   // RunOptions::verify_stopped was in effect
  int64_t boundary_spin_ns = 0;  // RunOptions::boundary_spin_ns in effect
  int64_t max_handover_ns = 0;   // RunOptions::max_handover_ns in effect
  std::vector<std::string> warnings;
  // Sources of the first-run and CPU-after-end figures (see "Resolution").
  FigureSource first_run, cpu_after_end;
  // Source of stopped_ns: the scheduler's notification (late by up to the
  // poll and its own wake-up), or an observer's exact figure.
  FigureSource stopped;
  std::vector<pid_t> pids;  // per partition
  std::vector<WindowRecord> windows;
  std::vector<PartitionExit> exits;
  std::vector<PartitionSummary> summaries;
  // The health monitor (partition_health.h): every error detected is counted
  // here, per error (ignored ones too); those not ignored are also events,
  // up to kMaxHealthEvents (the rest counted in health_events_dropped).
  std::array<uint64_t, kHealthErrors> health_counts{};
  std::vector<HealthEvent> health_events;
  uint64_t health_events_dropped = 0;
  uint64_t restarts = 0;  // partitions forked again (HealthAction::restart)
};

// Summaries from window records (also used by the lab).
std::vector<PartitionSummary> summarize(const Schedule& schedule, const RunReport& report);

class Scheduler {
 public:
  // validate()s the schedule (throws ScheduleError).
  explicit Scheduler(Schedule schedule);
  ~Scheduler();
  Scheduler(const Scheduler&) = delete;
  Scheduler& operator=(const Scheduler&) = delete;

  const Schedule& schedule() const noexcept { return schedule_; }

  // Starts the guardian and the partitions (suspended) and runs the frames.
  // Throws std::invalid_argument, before anything starts, for a
  // RunOptions::fifo_priority outside 0..99 or a negative start_delay_ns.
  // On return every partition was handled as on_scheduler_exit says (killed
  // and reaped, or resumed and released), every cgroup removed, and the
  // calling thread's policy restored. Throws std::invalid_argument for
  // RunOptions out of range (see RunOptions), std::system_error on set-up
  // failure (after cleaning up), ScheduleError for a command that cannot be
  // found. Call once.
  RunReport run(const RunOptions& options);

  // Asks run() to stop at the next boundary. Async-signal-safe; may be
  // called from any thread or a signal handler, before or during run().
  void request_stop() noexcept;

 private:
  Schedule schedule_;
  int stop_fd_ = -1;  // eventfd
};

}  // namespace doorbell::partition
