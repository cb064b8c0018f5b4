// CgroupFreezer: one cgroup, created and removed by us, whose processes are
// frozen and thawed as a group.
//
// What it is
//   A fresh cgroup used only for freezing. With cgroup v2 it lives in the
//   unified hierarchy (beside the calling process's own cgroup) and is frozen
//   by writing cgroup.freeze; it is frozen when cgroup.events says "frozen 1".
//   Where v2 is missing or refuses, it falls back to the v1 freezer
//   controller: freezer.state is written FROZEN / THAWED and reads FROZEN
//   once every task is frozen. Which one was chosen, and why, is reported.
//
//   Both freezers reach every thread at once: the kernel marks each task and
//   wakes it (a broadcast), unlike a process-directed SIGSTOP, which waits for
//   one chosen thread to run (docs/partition.md).
//
// The v1 static-key quirk
//   The v1 freezer patches kernel code (static_branch_inc) when the FIRST v1
//   cgroup on the machine starts freezing, and patches it back when the last
//   one thaws. That costs milliseconds, on every freeze when nothing else is
//   frozen. FreezerKeeper holds one empty v1 cgroup frozen for its lifetime
//   so that the key stays enabled and each freeze costs microseconds. The
//   partition scheduler keeps one whenever it uses the v1 freezer.
//
// States
//   created (thawed, empty) -> add() processes -> freeze()/thaw() any number
//   of times -> remove() (or the destructor): thaws, moves any process still
//   inside to the parent cgroup, and removes the directory.
//
// Errors
//   create(), add() and remove() throw std::system_error. freeze(), thaw()
//   and is_frozen() are noexcept and return false / -errno on failure: they
//   sit on the scheduler's hot path.
//
// Threads, fork, processes
//   Not thread-safe; one owner. After fork the child must not use it; its
//   copy is harmless to destroy: remove() and the destructor in a process
//   other than the creator only close that process's descriptors and leave
//   the cgroup to the parent (they once removed it under the parent). The cgroup is
//   machine-wide state: a process that dies without calling remove() leaves
//   it behind, which is why the partition scheduler also hands every cgroup
//   to its guardian process (partition.h).
#pragma once

#include <sys/types.h>
#include <unistd.h>

#include <string>
#include <vector>

namespace doorbell {

enum class FreezerVersion { v2, v1 };
const char* freezer_version_name(FreezerVersion version) noexcept;

// Which freezer to use. automatic: v2, else v1.
enum class FreezerPreference { automatic, v2_only, v1_only };

struct FreezerOptions {
  FreezerPreference preference = FreezerPreference::automatic;
  // The directories new cgroups are created in. Empty: found from
  // /proc/self/mountinfo and /proc/self/cgroup (v2: the caller's own cgroup
  // in the unified hierarchy; v1: the caller's freezer cgroup). Set them to
  // place cgroups elsewhere (a delegated subtree), or, in tests, to a path
  // that does not exist to exercise the fall-back.
  std::string v2_parent;
  std::string v1_parent;
};

// Where the kernel offers a freezer, and why not where it does not. Throws
// std::system_error when /proc/self/mountinfo or /proc/self/cgroup cannot be
// read (what the kernel says then is not "no freezer").
struct FreezerAvailability {
  std::string v2_parent;  // empty when v2 is unusable
  std::string v1_parent;  // empty when v1 is unusable
  std::string v2_why_not;
  std::string v1_why_not;
};
FreezerAvailability probe_freezers(const FreezerOptions& options = {});

class CgroupFreezer {
 public:
  // Creates the cgroup <parent>/<name>. name: [A-Za-z0-9_.-]+. Throws
  // std::invalid_argument for a bad name, std::system_error when no freezer
  // can be used (ENOTSUP; the message gives the reason for each version),
  // when probe_freezers() throws, or when the directory cannot be created
  // (EEXIST when it already exists). Nothing is left behind when it throws.
  static CgroupFreezer create(const std::string& name, const FreezerOptions& options = {});

  CgroupFreezer(CgroupFreezer&& other) noexcept;
  CgroupFreezer& operator=(CgroupFreezer&& other) noexcept;
  CgroupFreezer(const CgroupFreezer&) = delete;
  CgroupFreezer& operator=(const CgroupFreezer&) = delete;
  // Calls remove() and swallows its errors (they are written to stderr).
  ~CgroupFreezer();

  FreezerVersion version() const noexcept { return version_; }
  const std::string& path() const noexcept { return path_; }
  // Why the fall-back to v1 happened; empty when v2 was used, and when v1
  // was asked for (FreezerPreference::v1_only: no fall-back).
  const std::string& fallback_reason() const noexcept { return fallback_reason_; }

  // Moves process pid (all its threads) into the cgroup. Throws
  // std::invalid_argument for pid <= 0 (cgroup.procs would read 0 as the
  // caller itself), std::system_error when the kernel refuses (ESRCH: no
  // such process).
  void add(pid_t pid);

  // Requests freezing / thawing. Returns 0 or -errno. noexcept.
  int freeze() noexcept;
  int thaw() noexcept;

  // True once every task in the cgroup is frozen (v2: cgroup.events
  // "frozen 1"; v1: freezer.state "FROZEN"). False on error.
  bool is_frozen() noexcept;

  // Kills (SIGKILL) every process in the cgroup, children and processes
  // forked meanwhile included, and leaves the cgroup thawed. v2: writes
  // cgroup.kill (Linux 5.14); where that file is missing, and on v1: freezes
  // the cgroup (a frozen cgroup cannot fork, and its tasks cannot exit, so
  // their PIDs cannot be recycled), waits up to ~1 s for FROZEN, SIGKILLs
  // every PID in cgroup.procs, and thaws (a v1-frozen task dies only once
  // thawed). Returns 0 or -errno. Does not wait for the processes to be
  // gone. noexcept; not async-signal-safe (it allocates).
  int kill_all() noexcept;

  // An fd that polls POLLPRI when the frozen state changes (v2 cgroup.events),
  // or -1 where there is no notification (v1: poll is_frozen()).
  int event_fd() const noexcept { return events_fd_; }

  // The processes now in the cgroup (cgroup.procs). Throws std::system_error.
  std::vector<pid_t> processes() const;

  // Thaws, moves any process still inside to the parent cgroup, removes the
  // directory (rmdir retried for ~100 ms while EBUSY or ENOMEM). Idempotent. Throws
  // std::system_error naming the directory when it cannot be removed; the
  // object is then empty all the same (its descriptors closed, path()
  // empty, nothing retried by a later remove() or the destructor), and the
  // directory is the caller's to remove.
  void remove();

 private:
  CgroupFreezer() = default;
  FreezerVersion version_ = FreezerVersion::v2;
  std::string path_;
  std::string parent_;
  std::string fallback_reason_;
  int control_fd_ = -1;       // cgroup.freeze or freezer.state, opened O_RDWR
  int events_fd_ = -1;        // cgroup.events (v2)
  pid_t owner_ = ::getpid();  // the process that created the cgroup
};

// Holds an empty v1 freezer cgroup frozen for its lifetime so that the v1
// static key stays enabled (see above). Does nothing on v2. The destructor
// thaws and removes it.
class FreezerKeeper {
 public:
  FreezerKeeper() = default;
  // Throws std::system_error when the v1 cgroup cannot be made.
  explicit FreezerKeeper(const std::string& name, const FreezerOptions& options = {});
  FreezerKeeper(FreezerKeeper&&) noexcept = default;
  FreezerKeeper& operator=(FreezerKeeper&&) noexcept = default;
  bool active() const noexcept { return cgroup_.size() == 1; }
  const std::string& path() const noexcept;

 private:
  std::vector<CgroupFreezer> cgroup_;  // zero or one
};

}  // namespace doorbell
