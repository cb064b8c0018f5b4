// The partition scheduler's guardian: a forked process that outlives the
// scheduler just long enough to undo what it did.
//
// The scheduler and the guardian share a SOCK_SEQPACKET socket pair. The
// scheduler sends one record per partition (its pidfd rides along with
// SCM_RIGHTS, so the guardian never signals a recycled PID) and one per
// cgroup. When the scheduler is done the guardian cleans up: finish() (a
// return or an exception) sends a last record saying so; a crash or SIGKILL
// shows on a pidfd of the scheduler's process, opened before the fork,
// which the guardian polls beside the socket. End-of-file on the socket
// counts too, but alone it is not enough: a child that another thread of the
// scheduler's process forked without exec holds a copy of the scheduler's
// end (close-on-exec does not help there), and end-of-file would wait for
// that unrelated child to exit. Records queued before the scheduler died
// are taken first. Then:
//   0. kills every process of the cgroups handed over with kill_on_exit
//      (v2 cgroup.kill; v1: freeze, SIGKILL every PID in cgroup.procs);
//   1. thaws every cgroup (v2 cgroup.freeze 0, v1 freezer.state THAWED);
//   2. SIGCONTs every partition and its process group, then SIGKILLs them
//      when asked to (the group only while the partition's pidfd says it
//      still exists, so that its number is not a recycled one);
//   3. waits (bounded) for killed partitions to leave their cgroups, moves any
//      process still inside to the parent cgroup, and removes the cgroups;
//   4. removes the directories handed over with watch_directory() (an
//      observer's tracing instance: rmdir of a tracefs instance disables
//      its events and frees its buffers), retrying for up to a second while
//      the dying scheduler's last descriptors close (EBUSY).
// Cleanup is idempotent: after a normal return the scheduler has done all of
// it already, and the guardian finds nothing to do.
//
// The guardian ignores SIGINT, SIGTERM, SIGHUP and SIGQUIT (a terminal's
// Ctrl-C reaches the whole foreground process group) and uses only system
// calls after fork, with no allocation, so it is safe to fork from a
// multi-threaded process. It closes every other descriptor it inherited.
#pragma once

#include <sys/types.h>

#include <array>
#include <cstddef>
#include <string>

#include "doorbell/partition.h"
#include "sys/fd.h"

namespace doorbell::detail {

class Guardian {
 public:
  // How many cgroups it holds: one per partition and the v1 keeper, and a
  // few to spare.
  static constexpr std::size_t kMaxCgroups = partition::kMaxPartitions + 4;
  // How many directories to remove it holds (a run hands over one: its
  // tracing instance).
  static constexpr std::size_t kMaxDirectories = 8;

  Guardian() = default;
  Guardian(Guardian&& other) noexcept;
  Guardian& operator=(Guardian&& other) noexcept;
  ~Guardian();

  // Forks the guardian. Throws std::system_error.
  static Guardian start();

  bool running() const noexcept { return socket_.valid(); }
  pid_t pid() const noexcept { return pid_; }
  // The scheduler's end of the socket (close-on-exec). A forked child that
  // does not exec should close it; one that does not (a fork by another
  // thread) delays nothing: the guardian does not wait for end-of-file.
  int socket_fd() const noexcept { return socket_.get(); }

  // Hands a partition's pidfd to the guardian. kill_on_exit: SIGKILL it when
  // the scheduler ends; else SIGCONT only. process_group > 0: the same for
  // that process group (the partition's own: its children). Returns its
  // slot, for forget_partition(). Throws std::system_error (ENOSPC with
  // partition::kMaxPartitions slots held: the guardian would not keep it).
  // When it returns the guardian will see the record even if the scheduler
  // dies at once (the socket queues it).
  std::size_t watch_partition(int pidfd, bool kill_on_exit, pid_t process_group = 0);
  // Tells the guardian to let go of a partition process the scheduler has
  // reaped (a restart's predecessor): its slot is free again, so that
  // restarts are not bounded by the table. False (the slot stays held) when
  // the record could not be sent. Only for a reaped process: the guardian
  // would no longer kill it, nor its group.
  bool forget_partition(std::size_t slot) noexcept;
  // Hands a cgroup directory (freezer v1 when v1) to the guardian.
  // kill_on_exit: kill every process inside when the scheduler ends. Throws
  // std::system_error (ENOSPC beyond kMaxCgroups, ENAMETOOLONG).
  void watch_cgroup(const std::string& path, bool v1, bool kill_on_exit = false);
  // Hands a directory to remove when the scheduler ends: `name` relative to
  // the directory open as dir_fd (sent along, so a private mount reached as
  // /proc/self/fd/N stays reachable). Throws std::system_error (ENOSPC
  // beyond kMaxDirectories, ENAMETOOLONG).
  void watch_directory(int dir_fd, const std::string& name);

  // Tells the guardian the scheduler is done, closes the socket and waits
  // for the guardian to finish its cleanup. Returns its exit status (0:
  // clean).
  int finish() noexcept;

 private:
  sys::UniqueFd socket_;
  sys::UniqueFd pidfd_;
  pid_t pid_ = -1;
  // Records handed over: the guardian keeps them in that order, up to its
  // limits, and takes the lowest free partition slot as this side does, so
  // what is counted here is exactly what it holds.
  std::array<bool, partition::kMaxPartitions> held_{};  // partition slots in use
  std::size_t cgroups_ = 0;
  std::size_t directories_ = 0;
};

}  // namespace doorbell::detail
