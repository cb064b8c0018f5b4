// A guardian for a lab scenario's tracing instance: removes it when the
// scenario's process dies without removing it itself.
//
// A scenario's process is killed (SIGKILL) by the runner's watchdog, by the
// runner's Ctrl-C handling, and by the kernel when the runner itself dies
// (PR_SET_PDEATHSIG); a killed process runs no destructor, and its
// instance would stay (events enabled, tracing on, megabytes of buffers).
// InstanceGuard hands the instance's directory to a guardian process
// (src/partition/partition_guardian.h, the partition scheduler's): when this process
// ends, however it ends, the guardian removes the instance (rmdir of an
// instance disables its events and frees its buffers) and exits; after a
// normal end the instance is gone already and it finds nothing to do.
//
// Should the guardian itself be killed too, the next tracing instance any
// doorbell command creates removes the stale one (sys/tracefs.h), and the
// runner does after each killed scenario (register_after_scenario_process).
//
// Declare the guard before the instance it guards (so it is destroyed after
// it: its destructor waits for the guardian to exit). Not async-signal-safe;
// forks (safe in a multi-threaded process: the guardian uses only system
// calls after fork).
#pragma once

#include "partition/partition_guardian.h"
#include "sys/fd.h"
#include "sys/tracefs.h"

namespace doorbell::lab {

class InstanceGuard {
 public:
  // Starts the guardian and hands it `instance`. Throws std::system_error.
  explicit InstanceGuard(const sys::tracefs::Instance& instance);
  InstanceGuard(const InstanceGuard&) = delete;
  InstanceGuard& operator=(const InstanceGuard&) = delete;

  pid_t guardian_pid() const noexcept { return guardian_.pid(); }

 private:
  sys::UniqueFd instances_dir_;
  detail::Guardian guardian_;
};

}  // namespace doorbell::lab
