// The e2e lab group through the CLI, as a user runs it: every signal is
// accounted for, the broadcast reaches every thread, and nothing is left
// behind (no target process, no tracefs instance). And the sources of its
// kernel events (lab/scenarios/e2e_trace.h): each one forced through
// DOORBELL_E2E_TRACE gives the traced split; where tracefs is unavailable
// the BPF source takes over; where neither can run, one line says why.
#include <dirent.h>
#include <linux/filter.h>
#include <linux/seccomp.h>
#include <poll.h>
#include <sched.h>
#include <sys/mount.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <gtest/gtest.h>

#include <cerrno>
#include <chrono>
#include <csignal>
#include <cstddef>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>
#include <string>
#include <vector>

#include "sys/tracefs.h"
#include "tests/support/cgroup_probe.h"
#include "tests/support/files.h"
#include "tests/support/run_program.h"

namespace {

using doorbell::test::slurp;

double total(const nlohmann::json& scenario, const std::string& counter) {
  double sum = 0;
  for (const auto& v : scenario["counters"][counter]["per_repetition"]) sum += v.get<double>();
  return sum;
}

// Processes named like the lab's target that are still alive and descend
// from this test's process: targets of lab runs by other tests running at
// the same time (ctest -j) are not ours. A target the lab left behind after
// its bench process ended is reparented to us: the test's process is a
// subreaper (set once, here).
int targets_alive() {
  static const bool subreaper = ::prctl(PR_SET_CHILD_SUBREAPER, 1) == 0;
  (void)subreaper;
  const pid_t self = ::getpid();
  int count = 0;
  DIR* proc = opendir("/proc");
  while (const dirent* e = readdir(proc)) {
    if (e->d_name[0] < '0' || e->d_name[0] > '9') continue;
    if (slurp(std::string("/proc/") + e->d_name + "/comm") != "db-e2e-target\n") continue;
    const int pid = std::atoi(e->d_name);
    const char state = doorbell::test::process_state(pid);
    if (state == '\0' || state == 'Z' || state == 'X') continue;
    // Up the chain of parents to us or to the top.
    int up = doorbell::test::parent_pid(pid);
    for (int depth = 0; depth < 64 && up > 1 && up != self; ++depth)
      up = doorbell::test::parent_pid(up);
    if (up == self) ++count;
  }
  closedir(proc);
  return count;
}

int host_tracefs_mounts() {
  return doorbell::sys::tracefs::count_mounts_in(slurp("/proc/1/mountinfo"));
}

TEST(E2eLab, EverySignalAccountedForAndNothingLeftBehind) {
  const int host_mounts_before = host_tracefs_mounts();
  const std::string json_path = testing::TempDir() + "/e2e_" + std::to_string(getpid()) + ".json";
  const int before = targets_alive();
  // The rows' full waits (250 ms a signal and a last chance of as long), not
  // --quick's 50 ms: with two CPU hogs beside it, every-thread's quick row
  // lost 1 signal of 5 in 1 of 120 runs, a signal slower than the wait (the
  // lab counts it in 'lost', as it should), not one the lab lost.
  const doorbell::test::RunResult r = doorbell::test::run_doorbell(
      {"bench", "--repeat", "2", "--no-progress", "--filter",
       "e2e/signal:threads=2,policy=receiver-fifo,main=busy", "--filter",
       "e2e/signal:threads=2,policy=every-thread,main=busy", "--json", json_path},
      {.timeout = std::chrono::seconds(240)});
  ASSERT_EQ(r.exit_code(), 0) << r.describe();
  const auto j = nlohmann::json::parse(slurp(json_path));
  ASSERT_EQ(j["scenarios"].size(), 2u);
  for (const auto& s : j["scenarios"]) {
    SCOPED_TRACE(s["name"].get<std::string>());
    ASSERT_EQ(s["status"], "ok") << s["reason"];
    const double sent = total(s, "sent"), handled = total(s, "handled"), lost = total(s, "lost");
    const double distinct = total(s, "distinct_handled");
    EXPECT_GT(sent, 0);
    // Both rows are remedies, and the sender waits for each signal to be
    // handled before the next: a correct lab handles every signal it sent,
    // each once. 'handled' counts handlings, 'distinct_handled' the signals
    // (slots) handled: a duplicate let through, a handling recorded under a
    // wrong index, or a dropped signal each break one of these equalities.
    EXPECT_EQ(lost, 0) << "signals sent but never handled";
    EXPECT_EQ(distinct, sent) << "not every signal sent was handled";
    EXPECT_EQ(handled, distinct) << "some signal was handled more than once";
    // Every handled signal became one sample; none vanished between them.
    EXPECT_EQ(s["metrics"]["e2e"]["count"].get<double>(), handled);
    EXPECT_EQ(s["metrics"]["send"]["count"].get<double>(), handled);
    EXPECT_TRUE(s["metrics"].contains("delay"));
    // send + delay, the quantity that compares policies, for every policy
    // and every handled signal (every-thread's delay alone is 0 by the
    // split's definition: its wait is in send).
    ASSERT_TRUE(s["metrics"].contains("send_delay")) << s["name"];
    EXPECT_EQ(s["primary_metric"], "send_delay");
    if (s["metrics"].contains("recv")) {
      EXPECT_EQ(s["metrics"]["send_delay"]["count"], s["metrics"]["recv"]["count"]);
    }
    EXPECT_GE(s["metrics"]["send_delay"]["p50"].get<double>(),
              s["metrics"]["send"]["min"].get<double>());
    if (geteuid() == 0) {
      // As root the lab has the kernel's tracepoints (tracefs is mounted
      // privately when absent): the split must include the traced 'recv'.
      // Without it the lab fell back to user-space stamps silently.
      ASSERT_TRUE(s["metrics"].contains("recv")) << "no traced split as root: " << s["notes"];
      EXPECT_GT(s["metrics"]["recv"]["count"].get<double>(), 0);
      EXPECT_TRUE(s["counters"].contains("trace_unpaired"));
    }
    if (s["params"]["policy"] == "every-thread") {
      // main + 2 workers reached by each broadcast; the copies not claimed
      // are duplicates, never second handlings.
#if defined(__SANITIZE_THREAD__)
      // ThreadSanitizer adds a thread of its own to every process.
      EXPECT_GE(total(s, "threads_reached"), 3 * sent);
#else
      EXPECT_EQ(total(s, "threads_reached"), 3 * sent);
#endif
      // Each copy runs the handler at most once (copies still pending when
      // the target was killed never ran it).
      EXPECT_LE(total(s, "handler_runs"), total(s, "threads_reached"));
      EXPECT_EQ(total(s, "duplicates"), total(s, "handler_runs") - handled);
    } else {
      EXPECT_EQ(total(s, "handler_runs"), handled);
    }
  }
  // The targets were killed and reaped; the tracefs instance was removed
  // (looked up through the binding: tracefs where it is mounted, else
  // mounted privately for this test, so the check always runs as root); the
  // system's mount table gained no tracefs.
  EXPECT_LE(targets_alive(), before);
  EXPECT_EQ(host_tracefs_mounts(), host_mounts_before);
  if (geteuid() == 0) {
    struct stat st;
    const std::string instance = doorbell::sys::tracefs::tracing_dir().path +
                                 "/instances/doorbell-e2e-" + std::to_string(r.pid);
    EXPECT_NE(stat(instance.c_str(), &st), 0) << instance << " left behind";
  }
}

// ---------------------------------------------------------------- sources

constexpr const char* kRow = "e2e/signal:threads=2,policy=stock,main=busy";

#define SKIP_UNLESS_ROOT()                                             \
  if (geteuid() != 0) {                                                \
    GTEST_SKIP() << "the e2e lab's kernel events need root; not root"; \
  }                                                                    \
  static_assert(true)

// This test's environment with DOORBELL_E2E_TRACE set to `source` (or
// removed when empty).
std::vector<std::string> environment_with_source(const std::string& source) {
  std::vector<std::string> out;
  for (char** e = environ; *e != nullptr; ++e)
    if (std::string(*e).rfind("DOORBELL_E2E_TRACE=", 0) != 0) out.emplace_back(*e);
  if (!source.empty()) out.push_back("DOORBELL_E2E_TRACE=" + source);
  return out;
}

// The row's full budget (a 150 ms window, 250 ms for each signal and a last
// chance of as long) and two repetitions, not --quick's 30 ms window and
// 50 ms waits: on a loaded machine a busy target's first signal can wait
// longer than that (350-410 ms seen with two CPU hogs beside the run on two
// vCPUs), and a row that handled nothing has no split to check (14 of 40
// quick runs handled nothing there; the lab counts them in 'lost', as it
// should).
std::vector<std::string> row_arguments(const std::string& json_path) {
  return {"bench", "--repeat", "2", "--no-progress", "--filter", kRow, "--json", json_path};
}

// A results file of this test, removed when the test ends.
struct ResultsFile {
  explicit ResultsFile(const char* what)
      : path(testing::TempDir() + "/e2e_" + what + "_" + std::to_string(getpid()) + ".json") {}
  ~ResultsFile() { std::remove(path.c_str()); }
  const std::string path;
};

std::string all_notes(const nlohmann::json& scenario) {
  std::string text;
  for (const auto& note : scenario["notes"]) text += note.get<std::string>() + "\n";
  return text;
}

// The row's note that starts with `prefix`, or empty.
std::string note_starting(const nlohmann::json& scenario, const std::string& prefix) {
  for (const auto& note : scenario["notes"])
    if (note.get<std::string>().rfind(prefix, 0) == 0) return note.get<std::string>();
  return {};
}

// The one row of a bench run's JSON, with the traced split from `source`
// ("tracefs" or "BPF"): every handled signal has its recv, no event lost,
// none unpaired (a stock row: every handling has its signal_deliver).
void expect_traced_split(const std::string& json_path, const std::string& source) {
  const auto j = nlohmann::json::parse(slurp(json_path), nullptr, false);
  ASSERT_FALSE(j.is_discarded()) << json_path;
  ASSERT_EQ(j["scenarios"].size(), 1u);
  const auto& s = j["scenarios"][0];
  ASSERT_EQ(s["status"], "ok") << s["reason"];
  const std::string note = note_starting(s, "kernel events from " + source);
  EXPECT_FALSE(note.empty()) << "no note naming the source " << source << ": " << all_notes(s);
  EXPECT_EQ(note.find('\n'), std::string::npos);
  const double handled = total(s, "handled");
  EXPECT_GT(handled, 0);
  ASSERT_TRUE(s["metrics"].contains("recv")) << all_notes(s);
  EXPECT_EQ(s["metrics"]["recv"]["count"].get<double>(), handled);
  ASSERT_TRUE(s["counters"].contains("trace_lost"));
  EXPECT_EQ(total(s, "trace_lost"), 0);
  EXPECT_EQ(total(s, "trace_unpaired"), 0);
}

TEST(E2eLab, BpfSourceForcedGivesTheTracedSplit) {
  SKIP_UNLESS_ROOT();
  const ResultsFile results("bpf");
  const std::string& json_path = results.path;
  const doorbell::test::RunResult r = doorbell::test::run_doorbell(
      row_arguments(json_path),
      {.timeout = std::chrono::seconds(240), .environment = environment_with_source("bpf")});
  ASSERT_EQ(r.exit_code(), 0) << r.describe();
  expect_traced_split(json_path, "BPF");
  const auto j = nlohmann::json::parse(slurp(json_path));
  EXPECT_NE(all_notes(j["scenarios"][0]).find("DOORBELL_E2E_TRACE=bpf"), std::string::npos);
}

TEST(E2eLab, TracefsSourceForcedGivesTheTracedSplit) {
  SKIP_UNLESS_ROOT();
  const ResultsFile results("tracefs");
  const std::string& json_path = results.path;
  const doorbell::test::RunResult r = doorbell::test::run_doorbell(
      row_arguments(json_path),
      {.timeout = std::chrono::seconds(240), .environment = environment_with_source("tracefs")});
  ASSERT_EQ(r.exit_code(), 0) << r.describe();
  expect_traced_split(json_path, "tracefs");
}

TEST(E2eLab, UnknownTraceSourceFailsTheRowNamingTheVariable) {
  const ResultsFile results("unknown");
  const std::string& json_path = results.path;
  const doorbell::test::RunResult r = doorbell::test::run_doorbell(
      row_arguments(json_path),
      {.timeout = std::chrono::seconds(240), .environment = environment_with_source("perf")});
  EXPECT_NE(r.exit_code(), 0) << r.describe();
  EXPECT_NE(r.err.find("DOORBELL_E2E_TRACE=perf"), std::string::npos) << r.err;
}

// Runs the row in a forked child whose mount namespace has no tracefs (the
// system's mounts are untouched) and where a seccomp filter fails mount(2)
// (so tracefs cannot be mounted privately either) and, with `refuse_bpf`,
// bpf(2), each with EPERM; the CLI inherits both. Returns the CLI's exit
// code and stderr, as JSON; the child is killed after 240 s.
nlohmann::json run_row_without_tracefs(const std::string& json_path, bool refuse_bpf) {
  int result[2];
  if (::pipe2(result, O_CLOEXEC) != 0) return {{"error", "pipe"}};
  const pid_t pid = ::fork();
  if (pid == 0) {
    ::close(result[0]);
    if (::unshare(CLONE_NEWNS) != 0) ::_exit(30);
    if (::mount(nullptr, "/", nullptr, MS_REC | MS_PRIVATE, nullptr) != 0) ::_exit(31);
    for (int i = 0; i < 16; ++i) {
      const auto mounted = doorbell::sys::tracefs::find_mount();
      if (!mounted) break;
      if (::umount2(mounted->c_str(), MNT_DETACH) != 0) ::_exit(32);
    }
    if (doorbell::sys::tracefs::find_mount()) ::_exit(33);
    const unsigned bpf_number = refuse_bpf ? __NR_bpf : ~0u;
    sock_filter filter[] = {
        BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(struct seccomp_data, nr)),
        BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, __NR_mount, 1, 0),
        BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, bpf_number, 0, 1),
        BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ERRNO | (EPERM & SECCOMP_RET_DATA)),
        BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW),
    };
    sock_fprog program{static_cast<unsigned short>(sizeof filter / sizeof filter[0]), filter};
    if (::prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != 0) ::_exit(34);
    if (::syscall(SYS_seccomp, SECCOMP_SET_MODE_FILTER, 0, &program) != 0) ::_exit(35);
    if (::mount("nodev", "/tmp", "tracefs", 0, nullptr) != -1 || errno != EPERM) ::_exit(36);
    const doorbell::test::RunResult r = doorbell::test::run_doorbell(
        row_arguments(json_path),
        {.timeout = std::chrono::seconds(200), .environment = environment_with_source("")});
    const std::string text =
        nlohmann::json{{"code", r.exit_code()}, {"describe", r.describe()}, {"err", r.err}}.dump();
    std::size_t done = 0;
    while (done < text.size()) {
      const ssize_t n = ::write(result[1], text.data() + done, text.size() - done);
      if (n <= 0) ::_exit(37);
      done += static_cast<std::size_t>(n);
    }
    ::_exit(0);
  }
  ::close(result[1]);
  std::string text;
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(240);
  while (pid > 0 && std::chrono::steady_clock::now() < deadline) {
    pollfd p{result[0], POLLIN, 0};
    if (::poll(&p, 1, 100) != 1) continue;
    char buffer[4096];
    const ssize_t n = ::read(result[0], buffer, sizeof buffer);
    if (n <= 0) break;
    text.append(buffer, static_cast<std::size_t>(n));
  }
  ::close(result[0]);
  int status = 0;
  if (pid > 0 && ::waitpid(pid, &status, WNOHANG) != pid) {
    ::kill(pid, SIGKILL);
    while (::waitpid(pid, &status, 0) < 0 && errno == EINTR) {
    }
  }
  if (pid < 0 || !WIFEXITED(status) || WEXITSTATUS(status) != 0)
    return {{"error", "the restricted child failed (status " + std::to_string(status) + ")"}};
  auto j = nlohmann::json::parse(text, nullptr, false);
  if (j.is_discarded()) return {{"error", "unreadable: " + text}};
  return j;
}

TEST(E2eLab, BpfSourceTakesOverWhereTracefsIsUnavailable) {
  SKIP_UNLESS_ROOT();
  const ResultsFile results("no_tracefs");
  const std::string& json_path = results.path;
  const nlohmann::json r = run_row_without_tracefs(json_path, false);
  ASSERT_FALSE(r.contains("error")) << r.dump();
  ASSERT_EQ(r["code"], 0) << r["describe"];
  expect_traced_split(json_path, "BPF");
  const auto j = nlohmann::json::parse(slurp(json_path));
  const std::string note = note_starting(j["scenarios"][0], "kernel events from BPF");
  EXPECT_NE(note.find("tracefs is unavailable ("), std::string::npos) << note;
  EXPECT_NE(note.find("Operation not permitted"), std::string::npos) << note;
}

TEST(E2eLab, WithNeitherSourceOneLineSaysWhyAndTheRowHasNoRecv) {
  SKIP_UNLESS_ROOT();
  const ResultsFile results("neither");
  const std::string& json_path = results.path;
  const nlohmann::json r = run_row_without_tracefs(json_path, true);
  ASSERT_FALSE(r.contains("error")) << r.dump();
  ASSERT_EQ(r["code"], 0) << r["describe"];
  const auto j = nlohmann::json::parse(slurp(json_path), nullptr, false);
  ASSERT_FALSE(j.is_discarded());
  const auto& s = j["scenarios"][0];
  ASSERT_EQ(s["status"], "ok") << s["reason"];
  const std::string note = note_starting(s, "no tracepoints (");
  ASSERT_FALSE(note.empty()) << all_notes(s);
  EXPECT_NE(note.find("(tracefs: "), std::string::npos) << note;
  EXPECT_NE(note.find("; BPF: "), std::string::npos) << note;
  EXPECT_NE(note.find("CAP_BPF"), std::string::npos) << note;
  EXPECT_EQ(note.find('\n'), std::string::npos);
  EXPECT_TRUE(note_starting(s, "kernel events from").empty()) << all_notes(s);
  EXPECT_FALSE(s["metrics"].contains("recv"));
  EXPECT_TRUE(s["metrics"].contains("delay"));
  EXPECT_GT(total(s, "handled"), 0);
}

}  // namespace
