// Exact window figures for the partition scheduler from the kernel's
// scheduler tracepoints: the lab's partition::WindowObserver.
//
// Why: the scheduler's own first-run and CPU-after-end figures come from the
// partition's process CPU clock, which for another process advances only at
// the scheduler tick (4 ms here): tick-granular. The kernel's sched_switch
// events say to the nanosecond (trace_clock "mono" = CLOCK_MONOTONIC) when
// each thread got and left a CPU.
//
// What is traced (a tracefs instance of its own, src/sys/tracefs.h, root):
//   sched_switch                 run intervals of every thread, per CPU;
//   sched_wakeup(_new)           where a thread woken on an idle CPU starts
//                                running when the switch from idle is not
//                                emitted (seen on this VM's CPU1,
//                                shared/research/tracing-on-this-kind-of-machine.md);
//   sched_process_fork / _exit   which threads (and child processes) belong
//                                to a partition: every task forked by one of
//                                its tasks, from the partition's pid on; a
//                                TID that exits is forgotten (it may be
//                                reused).
// A reader thread drains the buffers when a CPU's is a quarter full (8 MB a
// CPU), and at the end: a drain takes up to a millisecond of CPU, which a
// partition's stopping threads would wait for. The events are kept (24
// bytes each, at most max_events of them: 4 Mi events, 96 MiB, by default;
// a busy two-partition schedule here makes about 5,000 a second, so the
// bound holds some 14 minutes of it) and matched with the windows in
// refine(). Past the bound the trace is switched off and the events not
// kept are counted: every event before the first one not kept is there, so
// the windows that end before it are refined and the later ones keep their
// clock figures, which a warning says (with the frame they start at):
//   first_run_ns      the first time, at or after resume_requested and
//                     before suspend_requested, a thread of the partition
//                     was on a CPU;
//   stopped_ns        the last time, after suspend_requested and before
//                     the scheduler noticed the stop (stop_noticed_ns), a
//                     thread of the partition left a CPU: when it really
//                     stopped running (unchanged when no such switch-out
//                     was traced, and for never_stopped windows);
//   cpu_after_end_ns  the CPU time all its threads got in
//                     [nominal_end, stopped).
// report.first_run, report.cpu_after_end and report.stopped then name
// "sched_switch" and resolution_ns 1. If the kernel overwrote events before they were read the
// figures would be wrong: refine() then leaves the clock-based figures in
// place and adds a warning.
#pragma once

#include <sys/types.h>

#include <cstdint>
#include <limits>
#include <memory>
#include <string>
#include <vector>

#include "doorbell/partition.h"

namespace doorbell::lab {

// One scheduler event, as refine() needs it.
struct SchedEvent {
  enum Kind : uint8_t { switch_, wakeup, fork, exit };
  uint64_t ts_ns = 0;
  int32_t cpu = -1;
  Kind kind = switch_;
  pid_t a = 0;  // switch: prev_pid; wakeup: woken pid; fork: parent; exit: pid
  pid_t b = 0;  // switch: next_pid; wakeup: target_cpu; fork: child
};

struct TraceFigures {
  std::size_t first_runs = 0;              // windows given a first run
  std::size_t first_runs_from_wakeup = 0;  // of those, started from idle without a switch event
  std::size_t cpu_after_end = 0;           // windows given a CPU-after-end figure
  std::size_t stops = 0;                   // windows whose stop time came from a switch-out
  // Windows left with their clock figures because they end at or after
  // complete_until_ns (the trace's bound was reached before they ended).
  std::size_t past_bound = 0;
  int64_t first_frame_past_bound = 0;
  // Run intervals looked at while matching them with the windows: the work
  // done, which must grow with intervals + windows, not their product.
  std::size_t intervals_examined = 0;
};

// Matches events (any order) with the windows of `report`: sets first_run_ns
// and cpu_after_end_ns of every window from the tasks of partition i, which
// start as pids[i] and grow by fork. Pure: tested on known inputs.
// complete_until_ns: every event before it is in `events` (later ones may be
// missing): windows that need events from that time on are left alone.
TraceFigures apply_sched_events(std::vector<SchedEvent> events, const std::vector<pid_t>& pids,
                                partition::RunReport& report,
                                int64_t complete_until_ns = std::numeric_limits<int64_t>::max());

class SchedSwitchWindows final : public partition::WindowObserver {
 public:
  // The tracing session is made by partitions_started(); nothing here.
  static constexpr std::size_t kDefaultMaxEvents = std::size_t{4} << 20;  // 96 MiB of events
  explicit SchedSwitchWindows(std::size_t max_events = kDefaultMaxEvents);
  ~SchedSwitchWindows() override;
  SchedSwitchWindows(const SchedSwitchWindows&) = delete;
  SchedSwitchWindows& operator=(const SchedSwitchWindows&) = delete;

  // Whether tracing can work here (root, tracefs, the sched events);
  // why_not says why not. Cheap after the first call.
  static bool available(std::string* why_not);

  // Throws sys::tracefs::TracefsError when tracing is not possible.
  void partitions_started(const std::vector<pid_t>& pids) override;
  // The tracing instance: the scheduler's guardian removes it if the
  // scheduler is killed (it would record on, 8 MB a CPU, until the next run).
  std::vector<partition::ObserverDirectory> remove_on_exit() override;
  void refine(partition::RunReport& report) override;

  std::size_t events() const noexcept { return events_seen_; }
  long long lost() const noexcept { return lost_; }
  // Events past the bound, not kept (the trace is switched off at the bound).
  std::size_t not_kept() const noexcept { return not_kept_; }
  const TraceFigures& figures() const noexcept { return figures_; }

 private:
  struct Session;
  std::unique_ptr<Session> session_;
  std::vector<pid_t> pids_;
  std::size_t max_events_;
  std::size_t events_seen_ = 0;
  std::size_t not_kept_ = 0;
  long long lost_ = 0;
  TraceFigures figures_;
};

}  // namespace doorbell::lab
