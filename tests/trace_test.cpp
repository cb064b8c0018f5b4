// doorbell trace against a child that sends itself a known number of
// signals: the counts it reports must match exactly. Also: bad input exits
// with 2, Ctrl-C ends it cleanly, and it leaves no tracing instance behind.
// Needs root (tracefs); skips, saying so, otherwise.
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

namespace fs = std::filesystem;

namespace {

const std::string kCli = std::string(DOORBELL_BINARY_DIR) + "/doorbell";

#define SKIP_UNLESS_ROOT()                                                                 \
  do {                                                                                     \
    if (::geteuid() != 0) GTEST_SKIP() << "doorbell trace needs root (tracefs); not root"; \
  } while (0)

// The traced process: waits for "go" on a pipe, sends itself `usr1` SIGUSR1
// (each delivered before kill returns, so none coalesce) and `rt` SIGRTMIN
// while blocked (queued), unblocks them, then exits.
pid_t start_child(int usr1, int rt, int& go_fd) {
  int go[2];
  if (::pipe(go) != 0) return -1;
  pid_t pid = ::fork();
  if (pid != 0) {
    ::close(go[0]);
    go_fd = go[1];
    return pid;
  }
  ::close(go[1]);
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

struct Tracer {
  pid_t pid = -1;
  FILE* out = nullptr;
};

// Starts `doorbell trace ARGS --json`, stdout to a pipe.
Tracer start_trace(const std::vector<std::string>& args) {
  int fds[2];
  if (::pipe(fds) != 0) return {};
  pid_t pid = ::fork();
  if (pid == 0) {
    ::dup2(fds[1], 1);
    ::close(fds[0]);
    ::close(fds[1]);
    std::vector<std::string> all = {kCli, "trace", "--json"};
    all.insert(all.end(), args.begin(), args.end());
    std::vector<char*> argv;
    for (auto& a : all) argv.push_back(a.data());
    argv.push_back(nullptr);
    ::execv(kCli.c_str(), argv.data());
    ::_exit(127);
  }
  ::close(fds[1]);
  return {pid, ::fdopen(fds[0], "r")};
}

bool read_json_line(FILE* in, nlohmann::json& out) {
  char* line = nullptr;
  size_t cap = 0;
  ssize_t n = ::getline(&line, &cap, in);
  bool ok = n > 0;
  if (ok) out = nlohmann::json::parse(std::string(line, n), nullptr, false);
  std::free(line);
  return ok && !out.is_discarded();
}

int wait_exit(pid_t pid) {
  int status = 0;
  while (::waitpid(pid, &status, 0) < 0)
    if (errno != EINTR) return -1;
  return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
}

const nlohmann::json* find_signal(const nlohmann::json& summary, int sig) {
  for (const auto& s : summary["signals"])
    if (s["signal"] == sig) return &s;
  return nullptr;
}

std::string tracefs_dir() {
  std::ifstream mounts("/proc/self/mounts");
  std::string dev, dir, type, rest;
  while (mounts >> dev >> dir >> type && std::getline(mounts, rest))
    if (type == "tracefs") return dir;
  return {};
}

TEST(Trace, CountsMatchWhatTheChildSent) {
  SKIP_UNLESS_ROOT();
  constexpr int kUsr1 = 2000, kRt = 100;
  int go = -1;
  pid_t child = start_child(kUsr1, kRt, go);
  ASSERT_GT(child, 0);
  Tracer t = start_trace(
      {"-p", std::to_string(child), "--interval", "0.2", "--duration", "60", "--threshold", "50"});
  ASSERT_GT(t.pid, 0);
  nlohmann::json line;
  ASSERT_TRUE(read_json_line(t.out, line)) << "no start line";
  ASSERT_EQ(line["type"], "start") << line.dump();
  const std::string instance = line["instance"];
  ASSERT_EQ(::write(go, "g", 1), 1);
  ::close(go);
  EXPECT_EQ(wait_exit(child), 0);
  nlohmann::json summary;
  while (read_json_line(t.out, line))
    if (line["type"] == "summary") summary = line;
  ::fclose(t.out);
  EXPECT_EQ(wait_exit(t.pid), 0);
  ASSERT_TRUE(summary.is_object()) << "no summary line";
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

  // The instance is gone.
  std::string dir = tracefs_dir();
  if (!dir.empty()) {
    EXPECT_FALSE(fs::exists(fs::path(dir) / "instances" / instance));
  }
}

TEST(Trace, InterruptEndsItCleanly) {
  SKIP_UNLESS_ROOT();
  std::string mounts_before;
  {
    std::ifstream in("/proc/self/mounts");
    mounts_before.assign(std::istreambuf_iterator<char>(in), {});
  }
  Tracer t = start_trace({"--interval", "0.2"});
  ASSERT_GT(t.pid, 0);
  nlohmann::json line;
  ASSERT_TRUE(read_json_line(t.out, line));
  ASSERT_EQ(line["type"], "start");
  const std::string instance = line["instance"];
  ASSERT_EQ(::kill(t.pid, SIGINT), 0);
  nlohmann::json summary;
  while (read_json_line(t.out, line))
    if (line["type"] == "summary") summary = line;
  ::fclose(t.out);
  EXPECT_EQ(wait_exit(t.pid), 0);
  ASSERT_TRUE(summary.is_object());
  EXPECT_EQ(summary["end"], "interrupted");
  std::string dir = tracefs_dir();
  if (!dir.empty()) {
    EXPECT_FALSE(fs::exists(fs::path(dir) / "instances" / instance));
  }
  // Our mount table is as it was (a private mount, if any, was not ours).
  std::ifstream in("/proc/self/mounts");
  std::string mounts_after(std::istreambuf_iterator<char>(in), {});
  EXPECT_EQ(mounts_before, mounts_after);
}

TEST(Trace, BadInputExitsWithTwo) {
  // A pid that existed and is reaped: nothing has it now (barring reuse
  // within these microseconds).
  pid_t gone = ::fork();
  if (gone == 0) ::_exit(0);
  ASSERT_EQ(wait_exit(gone), 0);
  auto rc = [](const std::string& args) {
    int status = std::system((kCli + " trace " + args + " >/dev/null 2>&1").c_str());
    return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  };
  EXPECT_EQ(rc("-p " + std::to_string(gone) + " --duration 1"), 2);
  EXPECT_EQ(rc("-p -5 --duration 1"), 2);
  EXPECT_EQ(rc("-p abc"), 2);
  EXPECT_EQ(rc("--threshold 0 --duration 1"), 2);
  EXPECT_EQ(rc("--interval 0 --duration 1"), 2);
}

}  // namespace
