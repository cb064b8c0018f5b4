// What the tests know about cgroups, found without the code under test
// (src/partition/cgroup_freezer.cpp): a test decides from these whether a freezer test
// must run, so that a bug in probe_freezers() cannot turn into a skip.
//
// Also the clean-up every freezer test needs when it fails half-way: thaw,
// empty and remove the cgroups a run left behind.
#pragma once

#include <string>
#include <vector>

namespace doorbell::test {

// The cgroup2 directory of this process (mount point + its "0::" cgroup),
// or "" when no cgroup2 file system is mounted.
std::string cgroup2_own_dir();

// True when a cgroup made in cgroup2_own_dir() has cgroup.freeze: the test
// makes one (doorbell-probe-<pid>), looks, and removes it. Sets *why when not.
bool cgroup2_freezer_usable(std::string* why = nullptr);

// The v1 freezer directory of this process, or "" when no cgroup (v1)
// file system with the freezer controller is mounted.
std::string v1_freezer_own_dir();

// A v1 freezer hierarchy for a test: the mounted one, or (as root, when none
// is mounted) one mounted here on a private directory and unmounted by the
// destructor. dir() is "" when neither works; why() says why.
class V1FreezerMount {
 public:
  V1FreezerMount();
  ~V1FreezerMount();
  V1FreezerMount(const V1FreezerMount&) = delete;
  V1FreezerMount& operator=(const V1FreezerMount&) = delete;
  const std::string& dir() const noexcept { return dir_; }
  const std::string& why() const noexcept { return why_; }
  bool mounted_here() const noexcept { return !mount_point_.empty(); }

 private:
  std::string dir_, why_, mount_point_;
};

// Every cgroup directly under the v2 and v1 freezer directories whose name
// starts with prefix.
std::vector<std::string> cgroups_with_prefix(const std::string& prefix);

// Thaws every such cgroup, moves what is inside to the parent, removes it.
// For the clean-up of a failed test; best effort.
void remove_cgroups_with_prefix(const std::string& prefix);

// /proc/PID/stat state letter; '\0' when the process does not exist.
char process_state(int pid);
// /proc/PID/stat parent PID; -1 when the process does not exist.
int parent_pid(int pid);
// Every process whose parent is pid (a scan of /proc).
std::vector<int> children_of(int pid);

}  // namespace doorbell::test

// In a gtest TEST: skip unless a cgroup v2 freezer is usable, decided by
// cgroup2_freezer_usable() (never by probe_freezers(), the code under test).
// As root with cgroup2 mounted and cgroup.freeze in a new cgroup, the test runs.
#define DOORBELL_REQUIRE_V2_FREEZER()                         \
  do {                                                        \
    std::string why_not_;                                     \
    if (!::doorbell::test::cgroup2_freezer_usable(&why_not_)) \
      GTEST_SKIP() << "cgroup v2 freezer: " << why_not_;      \
  } while (0)

// In a gtest TEST: declares a V1FreezerMount named `mount` (the mounted v1
// freezer, or one mounted for the test as root), and skips when neither.
#define DOORBELL_REQUIRE_V1_FREEZER(mount) \
  ::doorbell::test::V1FreezerMount mount;  \
  if (mount.dir().empty()) GTEST_SKIP() << "cgroup v1 freezer: " << mount.why()
