// CgroupFreezer against the real kernel: v2 and v1, the fall-back between
// them, and that nothing is left behind. Each TEST is its own process.
#include <signal.h>
#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <string>
#include <thread>

#include "doorbell/cgroup_freezer.h"
#include "gtest/gtest.h"
#include "sys/pidfd.h"
#include "sys/proc.h"
#include "tests/support/run_program.h"

namespace doorbell {
namespace {

namespace fs = std::filesystem;
using namespace std::chrono_literals;

std::string unique_name(const char* what) {
  return std::string("doorbell-test-") + std::to_string(::getpid()) + "-" + what;
}

// A busy child with `threads` threads (the progress program).
test::RunningProgram start_busy_child(int threads) {
  return test::start_program(
      {DOORBELL_PARTITION_PROG, "/tmp/" + unique_name("busy"), std::to_string(threads)});
}

void kill_and_reap(test::RunningProgram& child) {
  child.process().send_signal(SIGKILL);
  child.finish();
  ::unlink(("/tmp/" + unique_name("busy")).c_str());
}

bool wait_frozen(CgroupFreezer& cgroup, bool want) {
  for (int i = 0; i < 5000; ++i) {
    if (cgroup.is_frozen() == want) return true;
    std::this_thread::sleep_for(1ms);
  }
  return false;
}

int64_t cpu_ns(pid_t pid) {
  clockid_t clock;
  timespec ts{};
  if (clock_getcpuclockid(pid, &clock) != 0 || clock_gettime(clock, &ts) != 0) return -1;
  return ts.tv_sec * 1'000'000'000LL + ts.tv_nsec;
}

// True once the process has used CPU time beyond `from`. Polls for up to
// 5 s: on a loaded machine a thawed process may wait a while for a CPU.
bool cpu_advances(pid_t pid, int64_t from) {
  for (int i = 0; i < 500; ++i) {
    if (cpu_ns(pid) > from) return true;
    std::this_thread::sleep_for(10ms);
  }
  return false;
}

void freeze_thaw_cycle(FreezerPreference preference, FreezerVersion expected) {
  FreezerOptions options;
  options.preference = preference;
  const FreezerAvailability where = probe_freezers(options);
  if ((expected == FreezerVersion::v2 ? where.v2_parent : where.v1_parent).empty())
    GTEST_SKIP() << "freezer not available: " << where.v2_why_not << " / " << where.v1_why_not;
  std::string path;
  {
    // Started before the cgroup, so destroyed after it: a failed assertion
    // below leaves the cgroup's destructor to thaw the child before the
    // program's destructor kills and reaps it (a frozen v1 task cannot die).
    test::RunningProgram busy = start_busy_child(4);
    const pid_t child = busy.pid();
    CgroupFreezer cgroup = CgroupFreezer::create(unique_name("cycle"), options);
    path = cgroup.path();
    EXPECT_EQ(cgroup.version(), expected);
    EXPECT_TRUE(fs::is_directory(path));
    cgroup.add(child);
    EXPECT_EQ(cgroup.processes(), std::vector<pid_t>{child});
    ASSERT_EQ(cgroup.freeze(), 0);
    ASSERT_TRUE(wait_frozen(cgroup, true));
    // Frozen: no CPU time passes.
    const int64_t before = cpu_ns(child);
    std::this_thread::sleep_for(30ms);
    EXPECT_EQ(cpu_ns(child), before);
    ASSERT_EQ(cgroup.thaw(), 0);
    ASSERT_TRUE(wait_frozen(cgroup, false));
    EXPECT_TRUE(cpu_advances(child, cpu_ns(child))) << "no CPU time after thaw";
    // Frozen again, then destroyed while a process is inside: the process is
    // thawed and moved out, the directory removed.
    ASSERT_EQ(cgroup.freeze(), 0);
    ASSERT_TRUE(wait_frozen(cgroup, true));
    cgroup.remove();
    EXPECT_FALSE(fs::exists(path));
    EXPECT_TRUE(cpu_advances(child, cpu_ns(child))) << "process left frozen after remove()";
    kill_and_reap(busy);
  }
  EXPECT_FALSE(fs::exists(path));
}

TEST(CgroupFreezer, V2_FreezeStopsCpuTimeThawResumesRemoveCleansUp) {
  freeze_thaw_cycle(FreezerPreference::v2_only, FreezerVersion::v2);
}

TEST(CgroupFreezer, V1_FreezeStopsCpuTimeThawResumesRemoveCleansUp) {
  freeze_thaw_cycle(FreezerPreference::v1_only, FreezerVersion::v1);
}

TEST(CgroupFreezer, V2Unusable_FallsBackToV1WithReason) {
  FreezerOptions options;
  options.v2_parent = "/nonexistent/doorbell-v2";
  if (probe_freezers(options).v1_parent.empty()) GTEST_SKIP() << "no v1 freezer";
  CgroupFreezer cgroup = CgroupFreezer::create(unique_name("fallback"), options);
  EXPECT_EQ(cgroup.version(), FreezerVersion::v1);
  EXPECT_NE(cgroup.fallback_reason().find("/nonexistent/doorbell-v2"), std::string::npos)
      << cgroup.fallback_reason();
  EXPECT_EQ(cgroup.event_fd(), -1);
}

TEST(CgroupFreezer, NoFreezerAnywhere_ThrowsWithBothReasons) {
  FreezerOptions options;
  options.v2_parent = "/nonexistent/v2";
  options.v1_parent = "/nonexistent/v1";
  try {
    CgroupFreezer::create(unique_name("none"), options);
    FAIL() << "expected std::system_error";
  } catch (const std::system_error& e) {
    const std::string what = e.what();
    EXPECT_NE(what.find("/nonexistent/v2"), std::string::npos) << what;
    EXPECT_NE(what.find("/nonexistent/v1"), std::string::npos) << what;
  }
}

TEST(CgroupFreezer, BadName_IsInvalidArgument) {
  EXPECT_THROW(CgroupFreezer::create("../escape"), std::invalid_argument);
  EXPECT_THROW(CgroupFreezer::create(""), std::invalid_argument);
  EXPECT_THROW(CgroupFreezer::create("a/b"), std::invalid_argument);
}

TEST(CgroupFreezer, ExistingDirectory_IsEexistNotReused) {
  if (probe_freezers().v2_parent.empty() && probe_freezers().v1_parent.empty())
    GTEST_SKIP() << "no freezer";
  CgroupFreezer first = CgroupFreezer::create(unique_name("twice"));
  try {
    CgroupFreezer::create(unique_name("twice"));
    FAIL() << "expected EEXIST";
  } catch (const std::system_error& e) {
    EXPECT_EQ(e.code().value(), EEXIST);
  }
  EXPECT_TRUE(fs::is_directory(first.path()));
}

TEST(FreezerKeeper, HoldsAnEmptyV1CgroupFrozenAndRemovesIt) {
  if (probe_freezers().v1_parent.empty()) GTEST_SKIP() << "no v1 freezer";
  std::string path;
  {
    FreezerKeeper keeper(unique_name("keeper"));
    ASSERT_TRUE(keeper.active());
    path = keeper.path();
    std::ifstream state(path + "/freezer.state");
    std::string text;
    state >> text;
    EXPECT_EQ(text, "FROZEN");
  }
  EXPECT_FALSE(fs::exists(path));
}

}  // namespace
}  // namespace doorbell
