// doorbell trace's tracefs backend (--backend tracefs) against a child that
// sends itself a known number of signals: the counts it reports must match
// exactly (the BPF backend's tests: trace_bpf_test.cpp). Also: bad input exits
// with 2, Ctrl-C ends it cleanly, it leaves no tracing instance behind and
// never changes the system's mount table; and the tracefs binding itself
// (src/sys/tracefs.h): private mount, stale-instance cleaner.
// The CLI runs through doorbell::test::run_doorbell only. Needs root
// (tracefs); skips, saying so, otherwise. The tests look at tracefs through
// the binding (tracefs where it is mounted, else mounted privately), so the
// instance checks run whether or not tracefs is mounted on this machine.
#include <gtest/gtest.h>
#include <sched.h>
#include <signal.h>
#include <sys/mount.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <chrono>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <future>
#include <regex>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include <nlohmann/json.hpp>

#include "sys/tracefs.h"
#include "tests/support/files.h"
#include "tests/support/run_program.h"

namespace fs = std::filesystem;
namespace tracefs = doorbell::sys::tracefs;
using doorbell::test::run_doorbell;
using doorbell::test::RunResult;

namespace {

#define SKIP_UNLESS_ROOT()                                                                 \
  do {                                                                                     \
    if (::geteuid() != 0) GTEST_SKIP() << "doorbell trace needs root (tracefs); not root"; \
  } while (0)

using doorbell::test::slurp;

int host_tracefs_mounts() {
  return tracefs::count_mounts_in(slurp("/proc/1/mountinfo"));
}

// The traced process: waits for "go" on a pipe, sends itself `usr1` SIGUSR1
// (each delivered before kill returns, so none coalesce) and `rt` SIGRTMIN
// while blocked (queued), unblocks them, then exits. (A fork of the test, not
// a launch of the CLI.)
pid_t start_child(int usr1, int rt, int& go_fd, const char* name = nullptr) {
  int go[2];
  if (::pipe(go) != 0) return -1;
  pid_t pid = ::fork();
  if (pid != 0) {
    ::close(go[0]);
    go_fd = go[1];
    return pid;
  }
  ::close(go[1]);
  if (name != nullptr) ::prctl(PR_SET_NAME, name);
  struct sigaction sa {};
  sa.sa_handler = [](int) {};
  sigemptyset(&sa.sa_mask);
  ::sigaction(SIGUSR1, &sa, nullptr);
  ::sigaction(SIGRTMIN, &sa, nullptr);
  char c;
  if (::read(go[0], &c, 1) != 1) ::_exit(3);
  for (int i = 0; i < usr1; ++i) ::kill(::getpid(), SIGUSR1);
  sigset_t rt_set;
  sigemptyset(&rt_set);
  sigaddset(&rt_set, SIGRTMIN);
  ::sigprocmask(SIG_BLOCK, &rt_set, nullptr);
  union sigval value {};
  for (int i = 0; i < rt; ++i) ::sigqueue(::getpid(), SIGRTMIN, value);
  ::sigprocmask(SIG_UNBLOCK, &rt_set, nullptr);
  ::_exit(0);
}

int wait_exit(pid_t pid) {
  int status = 0;
  while (::waitpid(pid, &status, 0) < 0)
    if (errno != EINTR) return -1;
  return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
}

pid_t parent_of(pid_t pid) {
  // /proc/PID/stat: pid (comm) state ppid ...; comm may hold spaces.
  const std::string stat = slurp("/proc/" + std::to_string(pid) + "/stat");
  const auto close = stat.rfind(')');
  if (close == std::string::npos) return 0;
  std::istringstream rest(stat.substr(close + 1));
  std::string state;
  pid_t ppid = 0;
  rest >> state >> ppid;
  return ppid;
}

// Names of the instances in tracefs (through the binding) starting with prefix.
std::vector<std::string> instances_with(const std::string& prefix) {
  std::vector<std::string> names;
  for (const auto& entry : fs::directory_iterator(tracefs::tracing_dir().path + "/instances")) {
    const std::string name = entry.path().filename();
    if (name.rfind(prefix, 0) == 0) names.push_back(name);
  }
  return names;
}

// The pid of a doorbell trace started by this test, once its instance has
// both signal events enabled (its tracing has started); 0 after `within`.
pid_t wait_for_our_tracer(std::chrono::seconds within) {
  const auto deadline = std::chrono::steady_clock::now() + within;
  while (std::chrono::steady_clock::now() < deadline) {
    for (const std::string& name : instances_with("doorbell-trace-")) {
      const pid_t owner = std::atoi(name.c_str() + std::strlen("doorbell-trace-"));
      const std::string events = tracefs::tracing_dir().path + "/instances/" + name + "/events/";
      // Started once both events are on (the instance exists a little earlier).
      if (owner > 0 && parent_of(owner) == ::getpid() &&
          slurp(events + "signal/signal_generate/enable") == "1\n" &&
          slurp(events + "signal/signal_deliver/enable") == "1\n")
        return owner;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  return 0;
}

std::vector<nlohmann::json> json_lines(const std::string& out) {
  std::vector<nlohmann::json> lines;
  std::istringstream in(out);
  std::string line;
  while (std::getline(in, line)) {
    auto j = nlohmann::json::parse(line, nullptr, false);
    if (!j.is_discarded()) lines.push_back(j);
  }
  return lines;
}

nlohmann::json line_of_type(const std::vector<nlohmann::json>& lines, const std::string& type) {
  for (const auto& l : lines)
    if (l["type"] == type) return l;
  return {};
}

const nlohmann::json* find_signal(const nlohmann::json& summary, int sig) {
  for (const auto& s : summary["signals"])
    if (s["signal"] == sig) return &s;
  return nullptr;
}

// Makes this test process's mount namespace private and removes every
// tracefs mount from it (the system's mounts are untouched), so a doorbell
// started from here finds no tracefs and must mount it itself.
void hide_tracefs_in_this_namespace() {
  ASSERT_EQ(::unshare(CLONE_NEWNS), 0) << std::strerror(errno);
  ASSERT_EQ(::mount(nullptr, "/", nullptr, MS_REC | MS_PRIVATE, nullptr), 0)
      << std::strerror(errno);
  while (auto point = tracefs::find_mount())
    ASSERT_EQ(::umount2(point->c_str(), MNT_DETACH), 0) << *point << ": " << std::strerror(errno);
}

TEST(Trace, CountsMatchWhatTheChildSent) {
  SKIP_UNLESS_ROOT();
  constexpr int kUsr1 = 2000, kRt = 100;
  int go = -1;
  pid_t child = start_child(kUsr1, kRt, go);
  ASSERT_GT(child, 0);
  auto run = std::async(std::launch::async, [child] {
    return run_doorbell({"trace", "--backend", "tracefs", "--json", "-p", std::to_string(child),
                         "--interval", "0.2", "--duration", "60", "--threshold", "50"});
  });
  const pid_t tracer = wait_for_our_tracer(std::chrono::seconds(30));
  ASSERT_EQ(::write(go, "g", 1), 1);
  ::close(go);
  EXPECT_EQ(wait_exit(child), 0);
  const RunResult r = run.get();
  ASSERT_GT(tracer, 0) << "no doorbell-trace instance appeared; " << r.describe();
  ASSERT_TRUE(r.success()) << r.describe();
  const auto lines = json_lines(r.out);
  const nlohmann::json start = line_of_type(lines, "start");
  ASSERT_TRUE(start.is_object()) << r.out;
  EXPECT_EQ(start["instance"], "doorbell-trace-" + std::to_string(tracer));
  const nlohmann::json summary = line_of_type(lines, "summary");
  ASSERT_TRUE(summary.is_object()) << "no summary line: " << r.out;
  EXPECT_EQ(summary["end"], "target exited");
  EXPECT_EQ(summary["lost_events"], 0);

  const nlohmann::json* usr1 = find_signal(summary, SIGUSR1);
  ASSERT_NE(usr1, nullptr) << summary.dump();
  EXPECT_EQ((*usr1)["pid"], child);
  EXPECT_EQ((*usr1)["signal_name"], "SIGUSR1");
  EXPECT_EQ((*usr1)["generated"], kUsr1);
  EXPECT_EQ((*usr1)["queued"], kUsr1);
  EXPECT_EQ((*usr1)["coalesced"], 0);
  EXPECT_EQ((*usr1)["delivered"], kUsr1);
  EXPECT_EQ((*usr1)["unpaired_deliveries"], 0);
  EXPECT_EQ((*usr1)["delay_ns"]["count"], kUsr1);
  EXPECT_GE((*usr1)["delay_ns"]["p99"].get<double>(), (*usr1)["delay_ns"]["p50"].get<double>());
  ASSERT_FALSE((*usr1)["senders"].empty());
  EXPECT_EQ((*usr1)["senders"][0]["pid"], child);
  EXPECT_EQ((*usr1)["senders"][0]["count"], kUsr1);
  EXPECT_EQ((*usr1)["flagged"], true);
  EXPECT_TRUE(usr1->contains("advice"));

  const nlohmann::json* rt = find_signal(summary, SIGRTMIN);
  ASSERT_NE(rt, nullptr) << summary.dump();
  EXPECT_EQ((*rt)["generated"], kRt);
  EXPECT_EQ((*rt)["delivered"], kRt);
  EXPECT_EQ((*rt)["delay_ns"]["count"], kRt);

  // The instance is gone (looked up through the binding: always checked).
  EXPECT_FALSE(fs::exists(tracefs::tracing_dir().path + "/instances/" +
                          start["instance"].get<std::string>()));
}

// A process name that is not UTF-8 (comm is any bytes): the JSON lines are
// still written (the bytes become U+FFFD), not lost to an exception after
// the trace.
TEST(Trace, NonUtf8ProcessNameKeepsTheJson) {
  SKIP_UNLESS_ROOT();
  int go = -1;
  pid_t child = start_child(50, 0, go, "\xff\xfe-name");
  ASSERT_GT(child, 0);
  auto run = std::async(std::launch::async, [child] {
    return run_doorbell({"trace", "--backend", "tracefs", "--json", "-p", std::to_string(child),
                         "--interval", "0.2", "--duration", "60"});
  });
  const pid_t tracer = wait_for_our_tracer(std::chrono::seconds(30));
  ASSERT_EQ(::write(go, "g", 1), 1);
  ::close(go);
  EXPECT_EQ(wait_exit(child), 0);
  const RunResult r = run.get();
  ASSERT_GT(tracer, 0) << r.describe();
  ASSERT_TRUE(r.success()) << r.describe();
  const nlohmann::json summary = line_of_type(json_lines(r.out), "summary");
  ASSERT_TRUE(summary.is_object()) << r.out;
  const nlohmann::json* usr1 = find_signal(summary, SIGUSR1);
  ASSERT_NE(usr1, nullptr) << summary.dump();
  EXPECT_EQ((*usr1)["generated"], 50);
}

TEST(Trace, InterruptEndsItCleanly) {
  SKIP_UNLESS_ROOT();
  const std::string mounts_before = slurp("/proc/self/mountinfo");
  const int host_before = host_tracefs_mounts();
  auto run = std::async(std::launch::async, [] {
    return run_doorbell({"trace", "--backend", "tracefs", "--json", "--interval", "0.2"});
  });
  const pid_t tracer = wait_for_our_tracer(std::chrono::seconds(30));
  ASSERT_GT(tracer, 0) << "no doorbell-trace instance appeared";
  ASSERT_EQ(::kill(tracer, SIGINT), 0);
  const RunResult r = run.get();
  ASSERT_TRUE(r.success()) << r.describe();
  const nlohmann::json summary = line_of_type(json_lines(r.out), "summary");
  ASSERT_TRUE(summary.is_object()) << r.out;
  EXPECT_EQ(summary["end"], "interrupted");
  EXPECT_FALSE(fs::exists(tracefs::tracing_dir().path + "/instances/doorbell-trace-" +
                          std::to_string(tracer)));
  // Neither our mount table nor the system's changed.
  EXPECT_EQ(slurp("/proc/self/mountinfo"), mounts_before);
  EXPECT_EQ(host_tracefs_mounts(), host_before);
}

// A Ctrl-C while trace's stdout is a full pipe (a slow reader: a pager,
// ssh, a CI log) must cost no output: the write it is blocked in goes on
// when the reader drains the pipe, then the summary follows. Deterministic:
// the pipe is filled before trace starts, so its first write blocks, and
// the signal comes while /proc shows it in write(1, ...). (Installed
// without SA_RESTART, the stop handler made that write fail with EINTR,
// stdio marked stdout failed and trace exited 0 having printed nothing
// more: CI's TSan run lost a summary this way.)
TEST(Trace, InterruptWhileStdoutIsFullLosesNoOutput) {
  SKIP_UNLESS_ROOT();
  const auto run = doorbell::test::signal_while_stdout_full(
      {"trace", "--backend", "tracefs", "--json", "--interval", "0.2"}, SIGINT,
      std::chrono::seconds(60));
  ASSERT_TRUE(run.blocked) << "trace never blocked writing to its full stdout within 60 s";
  ASSERT_TRUE(run.filler_intact) << run.out;
  EXPECT_TRUE(WIFEXITED(run.status) && WEXITSTATUS(run.status) == 0) << "status " << run.status;
  const std::vector<nlohmann::json> lines = json_lines(run.out);
  EXPECT_TRUE(line_of_type(lines, "start").is_object()) << run.out;
  const nlohmann::json summary = line_of_type(lines, "summary");
  ASSERT_TRUE(summary.is_object()) << "no summary after the interrupted write: " << run.out;
  EXPECT_EQ(summary["end"], "interrupted");
}

TEST(Trace, WithoutTracefsMountsItPrivatelyAndLeavesNothing) {
  SKIP_UNLESS_ROOT();
  const int host_before = host_tracefs_mounts();
  hide_tracefs_in_this_namespace();
  ASSERT_FALSE(tracefs::find_mount().has_value());
  const RunResult r = run_doorbell(
      {"trace", "--backend", "tracefs", "--json", "--duration", "0.5", "--interval", "0.2"});
  ASSERT_TRUE(r.success()) << r.describe();
  EXPECT_NE(r.err.find("mounted it privately"), std::string::npos) << r.err;
  const nlohmann::json start = line_of_type(json_lines(r.out), "start");
  ASSERT_TRUE(start.is_object()) << r.out;
  // No tracefs appeared here or on the system.
  EXPECT_FALSE(tracefs::find_mount().has_value());
  EXPECT_EQ(host_tracefs_mounts(), host_before);
  // The binding mounts it privately for this process too, and sees that the
  // instance is gone.
  ASSERT_TRUE(tracefs::tracing_dir().private_mount);
  EXPECT_FALSE(fs::exists(tracefs::tracing_dir().path + "/instances/" +
                          start["instance"].get<std::string>()));
}

TEST(Trace, BadInputExitsWithTwo) {
  // A pid that existed and is reaped: nothing has it now (barring reuse
  // within these microseconds).
  pid_t gone = ::fork();
  if (gone == 0) ::_exit(0);
  ASSERT_EQ(wait_exit(gone), 0);
  auto rc = [](std::vector<std::string> args) {
    args.insert(args.begin(), "trace");
    return run_doorbell(args).exit_code();
  };
  EXPECT_EQ(rc({"-p", std::to_string(gone), "--duration", "1"}), 2);
  EXPECT_EQ(rc({"-p", "-5", "--duration", "1"}), 2);
  EXPECT_EQ(rc({"-p", "abc"}), 2);
  EXPECT_EQ(rc({"--threshold", "0", "--duration", "1"}), 2);
  EXPECT_EQ(rc({"--interval", "0", "--duration", "1"}), 2);
}

// Zero, NaN, infinity and huge durations, -p 0 (issue 26, items 8, 9 and
// the messages): `trace --duration 0` and `nan` ran until killed, `1e300`,
// `inf` and `1e18` stopped after 1 ms with exit 0, `-p 0` traced the whole
// system. Each is refused at once, one line naming the option; so is a
// storm option without --measure-overhead, which it would not change.
// Refused before any tracing: no root needed.
TEST(TraceCli, ZeroNanInfHugeAndPidZeroAreRefused) {
  const std::vector<std::vector<std::string>> cases = {
      {"--duration", "0"},         {"--duration", "nan"},   {"--duration", "inf"},
      {"--duration", "1e300"},     {"--duration", "1e18"},  {"--duration", "-1"},
      {"--interval", "nan"},       {"--interval", "1e300"}, {"--threshold", "nan"},
      {"--threshold", "inf"},      {"--top", "0"},          {"-p", "0"},
      {"--storm-signals", "5000"}, {"--storm-rounds", "2"}};
  for (const auto& args : cases) {
    std::vector<std::string> argv{"trace"};
    argv.insert(argv.end(), args.begin(), args.end());
    const auto r = run_doorbell(argv, {.timeout = std::chrono::seconds(20)});
    EXPECT_EQ(r.exit_code(), 2) << args[0] << " " << args[1] << ": " << r.describe();
    std::string err = r.err;
    while (!err.empty() && err.back() == '\n') err.pop_back();
    EXPECT_EQ(err.find('\n'), std::string::npos) << "one line: " << r.err;
    const std::string named = args[0] == "-p" ? "pid" : args[0];
    EXPECT_NE(err.find(named), std::string::npos) << "names " << named << ": " << r.err;
  }
}

// Issue 32, item 6: `trace -p TID` (a thread, not a process) and `trace -p
// ZOMBIE` traced nothing, silently. A thread id is mapped to its process,
// saying so (as inspect does); a zombie is refused at once (exit 2, one
// line), before any tracing.
TEST(TraceCli, ThreadIdMapsToItsProcessAndAZombieIsRefused) {
  // A zombie: a child that exited and is not reaped (until the end).
  const pid_t zombie = ::fork();
  if (zombie == 0) ::_exit(0);
  ASSERT_GT(zombie, 0);
  for (int i = 0; i < 500; ++i) {  // until it has exited: at most 5 s
    std::string stat = slurp("/proc/" + std::to_string(zombie) + "/stat");
    const auto close = stat.rfind(')');
    if (close != std::string::npos && close + 2 < stat.size() && stat[close + 2] == 'Z') break;
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  const auto refused = run_doorbell({"trace", "-p", std::to_string(zombie), "--duration", "1"});
  EXPECT_EQ(refused.exit_code(), 2) << refused.describe();
  EXPECT_NE(refused.err.find("zombie"), std::string::npos) << refused.err;
  int status;
  ::waitpid(zombie, &status, 0);

  if (::geteuid() != 0) GTEST_SKIP() << "tracing a thread's process needs root; not root";
  std::promise<pid_t> tid_promise;
  std::promise<void> done;
  std::thread thread([&] {
    tid_promise.set_value(static_cast<pid_t>(::gettid()));
    done.get_future().wait_for(std::chrono::seconds(60));
  });
  const pid_t tid = tid_promise.get_future().get();
  const auto r = run_doorbell(
      {"trace", "-p", std::to_string(tid), "--duration", "0.2", "--json", "--backend", "tracefs"});
  done.set_value();
  thread.join();
  EXPECT_EQ(r.exit_code(), 0) << r.describe();
  const auto first = nlohmann::json::parse(r.out.substr(0, r.out.find('\n')));
  EXPECT_EQ(first["scope"], ::getpid()) << r.out;
  EXPECT_NE(
      r.err.find("thread " + std::to_string(tid) + " of process " + std::to_string(::getpid())),
      std::string::npos)
      << r.err;
}

// ---------------------------------------------------------------- the binding

TEST(TracefsBinding, FindsTheMountInMountinfo) {
  const std::string info =
      "22 1 0:21 / /proc rw,relatime shared:5 - proc proc rw\n"
      "42 23 0:13 / /sys/kernel/trac\\040ing rw,relatime shared:9 master:2 - tracefs nodev rw\n"
      "43 23 0:13 / /other rw - tracefs nodev rw\n";
  EXPECT_EQ(tracefs::find_mount_in(info), "/sys/kernel/trac ing");
  EXPECT_EQ(tracefs::count_mounts_in(info), 2);
  EXPECT_FALSE(tracefs::find_mount_in("22 1 0:21 / /proc rw - proc proc rw\n").has_value());
}

// A private mount made from one thread serves every thread, and the system's
// mount table does not gain it.
TEST(TracefsBinding, PrivateMountServesEveryThreadAndNotTheSystem) {
  SKIP_UNLESS_ROOT();
  const int host_before = host_tracefs_mounts();
  hide_tracefs_in_this_namespace();
  std::string path;
  std::thread([&] { path = tracefs::tracing_dir().path; }).join();  // mounts, then exits
  ASSERT_TRUE(tracefs::tracing_dir().private_mount);
  EXPECT_EQ(tracefs::tracing_dir().path, path);
  {
    tracefs::Instance instance("test");
    EXPECT_EQ(instance.name(), "doorbell-test-" + std::to_string(::getpid()));
    EXPECT_TRUE(fs::is_directory(path + "/instances/" + instance.name()));
    EXPECT_TRUE(instance.enable("signal", "signal_generate"));
  }
  EXPECT_TRUE(instances_with("doorbell-test-" + std::to_string(::getpid())).empty());
  EXPECT_FALSE(tracefs::find_mount().has_value());
  EXPECT_EQ(host_tracefs_mounts(), host_before);
}

TEST(TracefsBinding, RemovesInstancesOfDeadOwnersOnly) {
  SKIP_UNLESS_ROOT();
  pid_t dead = ::fork();
  if (dead == 0) ::_exit(0);
  ASSERT_EQ(wait_exit(dead), 0);
  const std::string dir = tracefs::tracing_dir().path + "/instances/";
  const std::string stale = "doorbell-test-" + std::to_string(dead);
  const std::string live = "doorbell-test-" + std::to_string(::getppid());
  const std::string foreign = "someone-else-" + std::to_string(dead);
  for (const auto& name : {stale, live, foreign}) ASSERT_EQ(::mkdir((dir + name).c_str(), 0755), 0);
  std::vector<std::string> removed;
  {
    tracefs::Instance instance("test");
    removed = instance.removed_stale();
  }
  const bool live_kept = fs::exists(dir + live), foreign_kept = fs::exists(dir + foreign);
  ::rmdir((dir + live).c_str());
  ::rmdir((dir + foreign).c_str());
  ::rmdir((dir + stale).c_str());
  EXPECT_NE(std::find(removed.begin(), removed.end(), stale), removed.end());
  EXPECT_EQ(std::find(removed.begin(), removed.end(), live), removed.end());
  EXPECT_TRUE(live_kept);
  EXPECT_TRUE(foreign_kept);
}

// ------------------------------------------------------------ --measure-overhead

// The pids of the processes named bpftrace.
std::vector<pid_t> bpftrace_pids() {
  std::vector<pid_t> pids;
  for (const auto& entry : fs::directory_iterator("/proc")) {
    const std::string name = entry.path().filename();
    if (name.empty() || !std::isdigit(static_cast<unsigned char>(name[0]))) continue;
    if (slurp("/proc/" + name + "/comm") == "bpftrace\n") pids.push_back(std::atoi(name.c_str()));
  }
  std::sort(pids.begin(), pids.end());
  return pids;
}

bool bpftrace_installed() {
  for (const char* dir : {"/usr/bin", "/usr/sbin", "/bin", "/sbin", "/usr/local/bin"})
    if (::access((std::string(dir) + "/bpftrace").c_str(), X_OK) == 0) return true;
  return false;
}

// The environment of this test with PATH replaced.
std::vector<std::string> environment_with_path(const std::string& path) {
  std::vector<std::string> env;
  for (char** e = environ; *e != nullptr; ++e)
    if (std::strncmp(*e, "PATH=", 5) != 0) env.emplace_back(*e);
  env.push_back("PATH=" + path);
  return env;
}

// A PATH in which no bpftrace is found: an empty directory, removed at the
// end of the test; options() runs doorbell with it.
class WithoutBpftrace {
 public:
  WithoutBpftrace() { fs::create_directories(dir_); }
  ~WithoutBpftrace() { fs::remove(dir_); }
  doorbell::test::RunOptions options() const {
    doorbell::test::RunOptions options;
    options.timeout = std::chrono::seconds(120);
    options.environment = environment_with_path(dir_.string());
    return options;
  }

 private:
  fs::path dir_ =
      fs::temp_directory_path() / ("doorbell-no-bpftrace-" + std::to_string(::getpid()));
};

// The line of `out` that starts with `prefix` and the line after it.
std::pair<std::string, std::string> line_and_next(const std::string& out,
                                                  const std::string& prefix) {
  std::istringstream in(out);
  for (std::string line; std::getline(in, line);) {
    if (line.rfind(prefix, 0) != 0) continue;
    std::string next;
    std::getline(in, next);
    return {line, next};
  }
  return {};
}

const std::regex kModeLine(
    R"(  [a-z+]+: +\d+ signals/s; ns per signal min \d+, median \d+, max \d+)");
const std::regex kAddsLine(
    R"(               adds -?\d+ ns per signal \(-?\d+\.\d%, min against min\); .+)");

// floor:, floor+exits: and bpftrace: each a line in the style of the others,
// with what it adds, interleaved in the same run, and bpf's cost as a ratio of
// each; no bpftrace process left behind.
TEST(TraceOverhead, FloorAndBpftraceLinesBesideTheOthers) {
  SKIP_UNLESS_ROOT();
  const std::vector<pid_t> before = bpftrace_pids();
  doorbell::test::RunOptions options;
  options.timeout = std::chrono::seconds(240);
  const RunResult r = run_doorbell(
      {"trace", "--measure-overhead", "--storm-signals", "20000", "--storm-rounds", "1"}, options);
  ASSERT_TRUE(r.success()) << r.describe();
  EXPECT_NE(r.out.find("rounds of untraced, tracefs, bpf, the floor, the floor with the "
                       "system-call exits and bpftrace interleaved"),
            std::string::npos)
      << r.out;
  for (const std::string mode : {"untraced", "tracefs", "bpf", "floor", "floor+exits"}) {
    const auto [line, next] = line_and_next(r.out, "  " + mode + ":");
    EXPECT_TRUE(std::regex_match(line, kModeLine)) << mode << ": '" << line << "'\n" << r.out;
    if (mode != "untraced") {
      EXPECT_TRUE(std::regex_match(next, kAddsLine)) << mode << ": '" << next << "'\n" << r.out;
    }
  }
  const auto [line, next] = line_and_next(r.out, "  bpftrace:");
  if (bpftrace_installed()) {
    EXPECT_TRUE(std::regex_match(line, kModeLine)) << "'" << line << "'\n" << r.out;
    EXPECT_TRUE(std::regex_match(next, kAddsLine)) << "'" << next << "'\n" << r.out;
    // It paired at least the storm's signals into its histogram.
    std::smatch m;
    ASSERT_TRUE(std::regex_search(next, m, std::regex(R"((\d+) delays in its histogram)"))) << next;
    EXPECT_GE(std::stoull(m[1]), 20000u) << next;
  } else {
    EXPECT_NE(line.find("did not run: bpftrace is not installed"), std::string::npos) << r.out;
  }
  const auto [ratios, unused] = line_and_next(r.out, "  bpf against the others: ");
  EXPECT_TRUE(std::regex_search(
      ratios, std::regex(R"(^  bpf against the others: (-?\d+\.\d\dx the bpftrace pairing|the )"
                         R"(bpftrace pairing (added nothing measurable|did not run)), )"
                         R"((-?\d+\.\d\dx the floor|the floor added nothing measurable), )"
                         R"((-?\d+\.\d\dx the floor with the exits|the floor with the exits )"
                         R"(added nothing measurable) \()")))
      << "'" << ratios << "'\n"
      << r.out;
  EXPECT_EQ(bpftrace_pids(), before) << "a bpftrace process was left behind";
}

// Without bpftrace in PATH the bpftrace line says so; the others still run.
TEST(TraceOverhead, WithoutBpftraceTheLineSaysSo) {
  SKIP_UNLESS_ROOT();
  const WithoutBpftrace path;  // bpftrace: not timed here
  const doorbell::test::RunOptions options = path.options();
  const RunResult r = run_doorbell(
      {"trace", "--measure-overhead", "--storm-signals", "5000", "--storm-rounds", "1"}, options);
  ASSERT_TRUE(r.success()) << r.describe();
  EXPECT_TRUE(std::regex_search(
      r.out,
      std::regex(R"(\n  bpftrace: +did not run: bpftrace is not installed \(not found in PATH)")))
      << r.out;
  EXPECT_NE(r.out.find("the bpftrace pairing did not run"), std::string::npos) << r.out;
  EXPECT_TRUE(std::regex_match(line_and_next(r.out, "  floor:").first, kModeLine)) << r.out;
  // --json: the mode with its reason, and no ratio.
  const RunResult j = run_doorbell(
      {"trace", "--measure-overhead", "--storm-signals", "5000", "--storm-rounds", "1", "--json"},
      options);
  ASSERT_TRUE(j.success()) << j.describe();
  const nlohmann::json o = nlohmann::json::parse(j.out);
  EXPECT_EQ(o["modes"]["bpftrace"]["ran"], false) << j.out;
  EXPECT_EQ(o["modes"]["floor"]["ran"], true) << j.out;
  EXPECT_EQ(o["modes"]["floor_with_exits"]["ran"], true) << j.out;
  EXPECT_TRUE(o.contains("bpf_vs_floor_with_exits")) << j.out;
  EXPECT_TRUE(o["bpf_vs_bpftrace"].is_null()) << j.out;
}

// The programs' own time from the kernel's run-time statistics: each of
// bpf's and the floor's programs on the two ends ran at least once a signal
// of its storm, with a time a run; the statistics are off again after (the
// sysctl as it was). The text says it in two lines.
TEST(TraceOverhead, ProgramCostsFromTheKernelsStatistics) {
  SKIP_UNLESS_ROOT();
  const std::string sysctl = "/proc/sys/kernel/bpf_stats_enabled";
  const std::string before = slurp(sysctl);
  const WithoutBpftrace path;  // bpftrace: not timed here
  const doorbell::test::RunOptions options = path.options();
  const RunResult j = run_doorbell(
      {"trace", "--measure-overhead", "--storm-signals", "5000", "--storm-rounds", "1", "--json"},
      options);
  ASSERT_TRUE(j.success()) << j.describe();
  EXPECT_EQ(slurp(sysctl), before);
  const nlohmann::json costs = nlohmann::json::parse(j.out)["program_costs"];
  ASSERT_EQ(costs["measured"], true) << j.out;
  EXPECT_EQ(costs["storms"], 1) << j.out;
  for (const auto& [set, names] : {std::pair<std::string, std::vector<std::string>>{
                                       "bpf", {"on_signal_generate", "on_signal_deliver"}},
                                   {"floor", {"floor_signal_generate", "floor_signal_deliver"}}}) {
    for (const std::string& name : names) {
      bool found = false;
      for (const auto& c : costs[set]) {
        if (c["program"] != name) continue;
        found = true;
        EXPECT_GE(c["runs"].get<uint64_t>(), 5000u) << name << "\n" << j.out;
        EXPECT_GT(c["ns_per_run"].get<double>(), 0.0) << name << "\n" << j.out;
      }
      EXPECT_TRUE(found) << set << " has no " << name << "\n" << j.out;
    }
  }
  EXPECT_TRUE(costs["bpf_own_work_ns"]["signal_generate"].is_number()) << j.out;
  EXPECT_TRUE(costs["bpf_own_work_ns"]["signal_deliver"].is_number()) << j.out;

  const RunResult t = run_doorbell(
      {"trace", "--measure-overhead", "--storm-signals", "5000", "--storm-rounds", "1"}, options);
  ASSERT_TRUE(t.success()) << t.describe();
  EXPECT_EQ(slurp(sysctl), before);
  const auto [line, next] = line_and_next(t.out, "  programs:");
  EXPECT_TRUE(std::regex_match(
      line, std::regex(R"(  programs: +ns a run, the least of 1 storm each \(the kernel's )"
                       R"(run-time statistics\): bpf .*on_signal_generate \d+, on_signal_deliver )"
                       R"(\d+.*; )"
                       R"(floor floor_signal_generate \d+, floor_signal_deliver \d+)")))
      << "'" << line << "'\n"
      << t.out;
  EXPECT_TRUE(std::regex_match(
      next, std::regex(R"( +bpf's programs work -?\d+ ns a signal beyond the floor's \(generate )"
                       R"(-?\d+, deliver -?\d+\); bpf adds -?\d+ ns beyond the floor: -?\d+ spent )"
                       R"(outside its programs)")))
      << "'" << next << "'\n"
      << t.out;
}

// What tracing costs a context switch: a ping-pong storm untraced, beside
// tracefs and beside bpf, each round, with a line each in the text.
TEST(TraceOverhead, ContextSwitchesUntracedAndBesideEachBackend) {
  SKIP_UNLESS_ROOT();
  const WithoutBpftrace path;  // bpftrace: not timed here
  const doorbell::test::RunOptions options = path.options();
  const RunResult j = run_doorbell(
      {"trace", "--measure-overhead", "--storm-signals", "4000", "--storm-rounds", "2", "--json"},
      options);
  ASSERT_TRUE(j.success()) << j.describe();
  const nlohmann::json sw = nlohmann::json::parse(j.out)["context_switches"];
  EXPECT_EQ(sw["switches_per_run"], 1000) << j.out;
  EXPECT_EQ(sw["rounds"], 2) << j.out;
  for (const char* mode : {"untraced", "tracefs", "bpf"}) {
    const nlohmann::json& m = sw["modes"][mode];
    ASSERT_EQ(m["ran"], true) << mode << "\n" << j.out;
    ASSERT_EQ(m["ns_per_switch"].size(), 2u) << mode << "\n" << j.out;
    for (const auto& ns : m["ns_per_switch"]) EXPECT_GT(ns.get<double>(), 0.0) << mode;
    EXPECT_EQ(m.contains("added_ns_per_switch"), std::string(mode) != "untraced") << mode;
  }

  const RunResult t = run_doorbell(
      {"trace", "--measure-overhead", "--storm-signals", "4000", "--storm-rounds", "1"}, options);
  ASSERT_TRUE(t.success()) << t.describe();
  EXPECT_NE(t.out.find("\ncontext switches (two processes on one CPU passing a byte through two "
                       "pipes), 1000 switches per run, 1 rounds of untraced, tracefs and bpf "
                       "interleaved:\n"),
            std::string::npos)
      << t.out;
  const std::regex mode_line(R"(  [a-z]+: +ns per switch min \d+, median \d+, max \d+)");
  const std::regex adds_line(
      R"(               adds -?\d+ ns per switch \(-?\d+\.\d%, min against min\); .+)");
  std::string::size_type from = t.out.find("\ncontext switches");
  ASSERT_NE(from, std::string::npos) << t.out;
  const std::string block = t.out.substr(from);
  for (const std::string mode : {"untraced", "tracefs", "bpf"}) {
    const auto [line, next] = line_and_next(block, "  " + mode + ":");
    EXPECT_TRUE(std::regex_match(line, mode_line)) << mode << ": '" << line << "'\n" << t.out;
    if (mode != "untraced") {
      EXPECT_TRUE(std::regex_match(next, adds_line)) << mode << ": '" << next << "'\n" << t.out;
    }
  }
}

// SIGINT while bpftrace runs beside the storm: doorbell stops it, reaps it
// and exits 0; no bpftrace is left.
TEST(TraceOverhead, InterruptLeavesNoBpftrace) {
  SKIP_UNLESS_ROOT();
  if (!bpftrace_installed()) GTEST_SKIP() << "bpftrace is not installed";
  doorbell::test::RunOptions options;
  options.timeout = std::chrono::seconds(240);
  auto program = doorbell::test::start_doorbell(
      {"trace", "--measure-overhead", "--storm-signals", "5000", "--storm-rounds", "100"}, options);
  // Its bpftrace child, once started (each round starts one).
  pid_t child = 0;
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(120);
  while (child == 0 && std::chrono::steady_clock::now() < deadline) {
    for (const pid_t pid : bpftrace_pids())
      if (parent_of(pid) == program.pid()) child = pid;
    if (child == 0) std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  ASSERT_GT(child, 0) << "no bpftrace child appeared in 120 s";
  ASSERT_EQ(::kill(program.pid(), SIGINT), 0);
  const RunResult r = program.finish();
  ASSERT_TRUE(r.success()) << r.describe();
  EXPECT_NE(slurp("/proc/" + std::to_string(child) + "/comm"), "bpftrace\n")
      << "bpftrace " << child << " was left behind";
  for (const pid_t pid : bpftrace_pids())
    EXPECT_NE(parent_of(pid), 1) << "an orphaned bpftrace " << pid;
}

}  // namespace
