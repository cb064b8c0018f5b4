// The partition health monitor: a table of errors and the action the
// scheduler takes for each (ARINC 653 Part 1's health monitor, for
// processes), and the small API a partition program uses to report to it.
//
// Errors (HealthError)
//   process_died       the partition's own process ended (exit or signal).
//                      Noticed through its pidfd, which the scheduler's
//                      ppoll watches: detected when the scheduler wakes.
//   overrun            a window's suspension completed more than
//                      Schedule::overrun_threshold_ns after its nominal end,
//                      or never completed before the partition's next window.
//                      Detected when the stop is noticed (or at that resume).
//   deadline_missed    the partition called deadline_missed().
//   application_error  the partition called report_error(code).
//                      Both are read from the partition's health block at the
//                      end of each of its windows: detected at most one window
//                      (plus the stop) after the call.
//   no_heartbeat       the partition did not call heartbeat() for
//                      HealthTable::heartbeat_frames major frames (checked at
//                      each frame end; off when heartbeat_frames is 0). One
//                      event per silence: the next needs a heartbeat first.
//
// Actions (HealthAction)
//   ignore          counted (RunReport::health_counts) and nothing else.
//   log             counted, and recorded as a HealthEvent (the run's JSON,
//                   the terminal).
//   restart         logged; the partition's process (and its group and
//                   cgroup) is killed if alive, and a new one is forked at
//                   once, cold (a new pid, a fresh health block): it stops
//                   itself before running any code of the partition's and
//                   runs from its next window on (a command's exec happens
//                   in that window).
//   stop_partition  logged; the process is killed if alive and never
//                   started again: its later windows stay empty.
//   stop_schedule   logged; the run ends at once, as request_stop() would.
//
// The default table keeps the behaviour of schedules written before it:
// process_died follows Schedule::on_partition_exit (continue: log; stop:
// stop_schedule), overrun is ignore (the summaries count overruns already),
// deadline_missed and application_error are log, no_heartbeat is log but off
// (heartbeat_frames 0). A partition's own table (PartitionSpec::health)
// overrides the schedule's entry by entry.
//
// Reporting from a partition
//   The scheduler creates one health block per partition (a memfd, mapped
//   shared; no file anywhere, so nothing is left after any exit, SIGKILL
//   included). A command partition inherits it as a descriptor named by the
//   environment variable DOORBELL_HEALTH_FD; a partition run as a function
//   (PartitionSpec::entry) inherits the mapping itself. attach_health() finds
//   it; heartbeat(), deadline_missed() and report_error() then write it with
//   atomics only: no system call, no lock, async-signal-safe, safe from any
//   thread. A partition killed in the middle of one leaves nothing torn:
//   each is one atomic counter increment after plain atomic stores.
//   Counts are exact; of several error codes reported between two reads the
//   scheduler sees the last (HealthEvent::count says how many).
//   Before attach_health() succeeds the three calls do nothing.
//
// Memory ordering
//   report_error() stores the code and the time (relaxed), then increments
//   the error count with release; the scheduler loads the count with acquire
//   and then the code and time: it sees the code of the last error it counts
//   (or a later one). The same for deadline_missed() and heartbeat().
//
// Fork and exec
//   A partition's children share its block through fork (their reports count
//   as the partition's); exec keeps the descriptor (not close-on-exec) but
//   drops the mapping: call attach_health() again after an exec.
#pragma once

#include <sys/types.h>

#include <array>
#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>

namespace doorbell::partition {

enum class HealthError { process_died, overrun, deadline_missed, application_error, no_heartbeat };
inline constexpr std::size_t kHealthErrors = 5;
enum class HealthAction { ignore, log, restart, stop_partition, stop_schedule };

// "process_died", "overrun", "deadline_missed", "application_error",
// "no_heartbeat": the keys of the schedule file's [health] table.
const char* health_error_name(HealthError error) noexcept;
std::optional<HealthError> parse_health_error(const std::string& name);
// "ignore", "log", "restart", "stop_partition", "stop_schedule".
const char* health_action_name(HealthAction action) noexcept;
std::optional<HealthAction> parse_health_action(const std::string& name);

// One table: an action per error (unset: the next table's, then the
// default), and the heartbeat limit.
struct HealthTable {
  std::array<std::optional<HealthAction>, kHealthErrors> actions{};
  // no_heartbeat after this many whole major frames without a heartbeat;
  // 0: not checked; unset: the next table's. At most kMaxHeartbeatFrames.
  std::optional<int64_t> heartbeat_frames;
  int line = 0;  // source line in the schedule file, 0 when built in code

  std::optional<HealthAction>& operator[](HealthError e) noexcept {
    return actions[static_cast<std::size_t>(e)];
  }
  const std::optional<HealthAction>& operator[](HealthError e) const noexcept {
    return actions[static_cast<std::size_t>(e)];
  }
};
inline constexpr int64_t kMaxHeartbeatFrames = 1'000'000'000;

// How many HealthEvents one run keeps; later ones are counted in
// RunReport::health_events_dropped (and in health_counts, as every one is).
inline constexpr std::size_t kMaxHealthEvents = 100'000;

// One detected error and what was done.
struct HealthEvent {
  std::size_t partition = 0;
  HealthError error = HealthError::process_died;
  HealthAction action = HealthAction::log;
  int64_t frame = 0;        // the frame in which it was detected
  int64_t detected_ns = 0;  // CLOCK_MONOTONIC, when the scheduler noticed it
  // When the fault happened, where known (0: unknown): the partition's own
  // report for deadline_missed and application_error, the nominal end plus
  // the threshold for an overrun, the last heartbeat (or the process's start)
  // for no_heartbeat. A death's time is not known to the scheduler: see
  // window_start_ns.
  int64_t fault_ns = 0;
  // The nominal start of the partition's window in progress at detection (0:
  // none): a process that died in its window died after this.
  int64_t window_start_ns = 0;
  pid_t pid = 0;       // the process it concerns
  uint64_t count = 1;  // reports merged into this event (API errors)
  int32_t code = 0;    // application_error: the last code reported
  std::string detail;  // "killed by SIGKILL", "overrun 2.3 ms", ...
  // restart: when the new process was resumed for its first window, and its
  // pid (0: not restarted, e.g. the run ended first or the fork failed).
  int64_t restarted_ns = 0;
  pid_t new_pid = 0;
};

// ---- The partition's side -------------------------------------------------

// The environment variable that names the health block's descriptor.
inline constexpr const char* kHealthFdVariable = "DOORBELL_HEALTH_FD";

// Finds this process's health block (once; later calls return the same
// answer): the mapping inherited from the scheduler, else the descriptor
// named by DOORBELL_HEALTH_FD (mapped here: a few system calls). False when
// this process was not started by the scheduler or the block is not one.
// Not async-signal-safe; thread-safe.
bool attach_health() noexcept;

// A sign of life (no_heartbeat). No system call; async-signal-safe.
void heartbeat() noexcept;
// This partition missed a deadline of its own (deadline_missed).
void deadline_missed() noexcept;
// An application error with a code of the partition's choosing
// (application_error).
void report_error(int32_t code) noexcept;

}  // namespace doorbell::partition

namespace doorbell::detail {
// The block's layout (internal; shared with the scheduler).
struct HealthBlock;
// The scheduler's partition child sets its inherited block before running
// an entry function (after fork: a plain store).
void set_health_block(HealthBlock* block) noexcept;
}  // namespace doorbell::detail
