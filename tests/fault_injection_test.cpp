// FaultInjection.*: every public operation of every type, with each system
// call it makes failed in turn (src/sys/fault.h), in the way SQLite's test
// harness fails every allocation and every I/O call in turn.
//
// For one operation (one TEST, so one ctest entry):
//   1. a counting run: the operation once, the injector counting its calls
//      by kind (in the window the operation's code runs, set-up and
//      tear-down excluded);
//   2. for every kind it called, for the Nth call of that kind (every N up
//      to 6 calls; beyond that the first three, the middle and the last two),
//      for every errno of the sweep (EINTR, EAGAIN, ENOMEM, EMFILE always;
//      EPERM and ESRCH where the kernel can return them for that call): a
//      case that fails exactly that call with that errno.
// Every run (case) is a forked child of the test with a watchdog (a case
// that has not ended at its deadline is killed and fails as "hung"); the
// test is a child subreaper, so what a killed case leaves comes to it and is
// killed, and its cgroups are removed. The case child checks, after the
// operation's own tear-down:
//   - the outcome: the operation succeeded; or it threw std::system_error
//     with the injected errno (or with a translation whose message names
//     the injected error), where its header says it throws; or, for an
//     errno the kernel cannot return for that call (fault::kernel_can_return),
//     the library's "cannot happen" abort (sys::fatal: "doorbell: fatal" on
//     stderr, SIGABRT). An EINTR the kernel can return must never surface:
//     it is retried, and a timed wait retries with the time left (the
//     injected EINTR sleeps half the wait first; the retry's timeout must
//     be at most what was left);
//   - nothing left behind: the descriptors in /proc/self/fd, the signal
//     mask, every signal's disposition, the threads in /proc/self/task are
//     as before; no child process (running, stopped or a zombie); no cgroup
//     named after the case; under AddressSanitizer, no leaked memory.
// The test prints (and writes to <build>/fault_injection/<operation>.txt)
// its size: call kinds, call sites, errnos, cases run and failed.
#include <dirent.h>
#include <fcntl.h>
#include <gtest/gtest.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <sstream>
#include <string>
#include <system_error>
#include <thread>
#include <vector>

#include "doorbell/bell.h"
#include "doorbell/cgroup_freezer.h"
#include "doorbell/child_process.h"
#include "doorbell/event_loop.h"
#include "doorbell/event_notifier.h"
#include "doorbell/partition.h"
#include "doorbell/partition_ports.h"
#include "doorbell/rate_limiter.h"
#include "doorbell/ring.h"
#include "doorbell/signal_channel.h"
#include "doorbell/signal_receiver.h"
#include "doorbell/thread_broadcast.h"
#include "doorbell/timer.h"
#include "sys/fault.h"
#include "sys/fault_sweep.h"
#include "tests/support/cgroup_probe.h"
#include "tests/support/threads.h"

#if defined(__SANITIZE_ADDRESS__)
#include <sanitizer/lsan_interface.h>
#endif

namespace doorbell {
namespace {

namespace fault = sys::fault;
namespace fs = std::filesystem;
using namespace std::chrono_literals;
using Clock = std::chrono::steady_clock;

// ---------------------------------------------------------------- the operation

// What an operation's code does with the window: the injector is armed only
// while `run` executes the operation itself.
class Window {
 public:
  // Runs fn armed with the case's plan; records how it ended (returned,
  // threw std::system_error, threw something else). Call once.
  void run(const std::function<void()>& fn);
  // A check of the operation's own (a consistency the header promises);
  // a false one fails the case with `what`.
  void expect(bool condition, const std::string& what) {
    if (!condition) problems.push_back(what);
  }
  // The name for cgroups this case may make ("doorbell-fi-<pid>-<what>").
  static std::string cgroup_name(const char* what) {
    return "doorbell-fi-" + std::to_string(::getpid()) + "-" + what;
  }

  // The plan (set by the harness) and the outcome.
  bool counting = true;
  fault::Call call = fault::Call::count_;
  uint32_t nth = 0;
  int error = 0;
  // A double fault: once the first call failed, the second_nth call of
  // second_call counted from there fails too (fault_sweep.h).
  bool double_fault = false;
  fault::Call second_call = fault::Call::count_;
  uint32_t second_nth = 0;
  int second_error = 0;
  bool ran = false;
  int outcome = 0;  // 0 returned, 1 std::system_error, 2 another exception
  int code = 0;
  std::string what;
  std::vector<std::string> problems;
};

void Window::run(const std::function<void()>& fn) {
  ran = true;
  if (counting)
    fault::count_calls();
  else if (double_fault)
    fault::fail_nth_call_then(call, nth, error, second_call, second_nth, second_error);
  else
    fault::fail_nth_call(call, nth, error);
  try {
    fn();
    fault::disarm();
  } catch (const std::system_error& e) {
    fault::disarm();
    outcome = 1;
    code = e.code().value();
    what = e.what();
  } catch (const std::exception& e) {
    fault::disarm();
    outcome = 2;
    what = e.what();
  }
}

struct Operation {
  const char* name;
  // The operation: set-up (not injected), window.run(the operation),
  // tear-down (not injected).
  std::function<void(Window&)> body;
  // Its header says it may throw std::system_error (set-up operations);
  // false: it is noexcept or reports failures otherwise.
  bool throws = true;
  // Skip reason when the machine cannot run it (no freezer, not root), or
  // empty.
  std::function<std::string()> unavailable = [] { return std::string(); };
  std::chrono::milliseconds deadline = 10s;
  // Check that a timed wait interrupted by EINTR is retried with at most the
  // time left. Off where a loop recomputes its wait from what is pending and
  // an absolute timerfd carries the deadline (the partition scheduler), so
  // that the next wait from the same site may rightly differ.
  bool check_retry_timeouts = true;
  // How many Nth calls of one kind get cases (see sample()).
  unsigned max_nths = 6;
  // It makes cgroups: look for leftovers (named after the case's pid).
  bool cgroups = false;
};

// ---------------------------------------------------------------- the case child

struct Snapshot {
  std::set<std::string> fds;
  std::string mask;
  std::map<int, std::string> dispositions;
  std::set<pid_t> threads;  // the IDs in /proc/self/task
};

std::set<std::string> list_dir(const char* path) {
  std::set<std::string> names;
  if (DIR* dir = ::opendir(path)) {
    const int own = ::dirfd(dir);
    while (const dirent* entry = ::readdir(dir)) {
      if (entry->d_name[0] == '.') continue;
      if (std::strcmp(path, "/proc/self/fd") == 0 && std::atoi(entry->d_name) == own) continue;
      names.insert(entry->d_name);
    }
    ::closedir(dir);
  }
  return names;
}

std::string describe_fd(const std::string& fd) {
  char target[256] = {};
  const std::string link = "/proc/self/fd/" + fd;
  const ssize_t n = ::readlink(link.c_str(), target, sizeof target - 1);
  return fd + " (" + (n > 0 ? std::string(target, static_cast<std::size_t>(n)) : "?") + ")";
}

std::string describe_action(const struct sigaction& a) {
  std::ostringstream text;
  // SIG_DFL and SIG_IGN: their mask and flags have no effect (no handler
  // runs), and ThreadSanitizer's sigaction() reports a stale mask for them.
  if (!(a.sa_flags & SA_SIGINFO) && a.sa_handler == SIG_DFL) return "SIG_DFL";
  if (!(a.sa_flags & SA_SIGINFO) && a.sa_handler == SIG_IGN) return "SIG_IGN";
  if (a.sa_flags & SA_SIGINFO)
    text << "action " << reinterpret_cast<const void*>(a.sa_sigaction);
  else
    text << "handler " << reinterpret_cast<const void*>(a.sa_handler);
  constexpr int kRestorer = 0x04000000;  // SA_RESTORER, set by the C library
  text << " flags " << std::hex << (a.sa_flags & ~kRestorer) << " mask";
  for (int s = 1; s < NSIG; ++s)
    if (sigismember(&a.sa_mask, s) == 1) text << ' ' << std::dec << s;
  return text.str();
}

Snapshot take_snapshot() {
  Snapshot s;
  s.fds = list_dir("/proc/self/fd");
  sigset_t mask;
  ::pthread_sigmask(SIG_SETMASK, nullptr, &mask);
  for (int signo = 1; signo < NSIG; ++signo)
    if (sigismember(&mask, signo) == 1) s.mask += std::to_string(signo) + " ";
  for (int signo = 1; signo < NSIG; ++signo) {
    if (signo == SIGKILL || signo == SIGSTOP) continue;
    struct sigaction action {};
    if (::sigaction(signo, nullptr, &action) == 0) s.dispositions[signo] = describe_action(action);
  }
  s.threads = test::thread_ids();
  return s;
}

// Direct children of this process: /proc/self/task/*/children
// (CONFIG_PROC_CHILDREN; children of a thread that exited belong to another
// thread of the process), else a scan of /proc.
std::vector<int> our_children() {
  std::vector<int> children;
  bool have_lists = false;
  for (const std::string& tid : list_dir("/proc/self/task")) {
    std::ifstream in("/proc/self/task/" + tid + "/children");
    if (!in) continue;
    have_lists = true;
    int pid;
    while (in >> pid) children.push_back(pid);
  }
  return have_lists ? children : test::children_of(::getpid());
}

std::vector<std::string> cgroups_of(pid_t pid) {
  std::vector<std::string> left;
  for (const std::string& prefix :
       {"doorbell-" + std::to_string(pid) + "-", "doorbell-fi-" + std::to_string(pid) + "-"})
    for (const std::string& path : test::cgroups_with_prefix(prefix)) left.push_back(path);
  return left;
}

std::vector<std::string> compare(const Snapshot& before, const Snapshot& after) {
  std::vector<std::string> problems;
  for (const std::string& fd : after.fds)
    if (before.fds.count(fd) == 0) problems.push_back("descriptor left open: " + describe_fd(fd));
  for (const std::string& fd : before.fds)
    if (after.fds.count(fd) == 0) problems.push_back("descriptor closed: " + fd);
  if (before.mask != after.mask)
    problems.push_back("signal mask changed: [" + before.mask + "] -> [" + after.mask + "]");
  for (const auto& [signo, action] : before.dispositions) {
    const auto it = after.dispositions.find(signo);
    if (it != after.dispositions.end() && it->second != action)
      problems.push_back("disposition of " + signal_name(signo) + " changed: " + action + " -> " +
                         it->second);
  }
  if (after.threads != before.threads) {
    const auto describe = [](const std::set<pid_t>& tids) {
      std::string names;
      for (pid_t tid : tids) {
        std::ifstream comm("/proc/self/task/" + std::to_string(tid) + "/comm");
        std::string name;
        std::getline(comm, name);
        names += " " + std::to_string(tid) + (name.empty() ? "" : ":" + name);
      }
      return names;
    };
    std::set<pid_t> started, gone;
    for (pid_t tid : after.threads)
      if (before.threads.count(tid) == 0) started.insert(tid);
    for (pid_t tid : before.threads)
      if (after.threads.count(tid) == 0) gone.insert(tid);
    if (!started.empty()) problems.push_back("threads left running:" + describe(started));
    if (!gone.empty())
      problems.push_back("threads that were there before are gone:" + describe(gone));
  }
  return problems;
}

// The case child: runs the operation under the plan, checks, writes the
// report to fd `report` as lines "key value" and exits 0.
[[noreturn]] void run_case(const Operation& op, Window window, int report) {
  ::prctl(PR_SET_PDEATHSIG, SIGKILL);
  ::prctl(PR_SET_CHILD_SUBREAPER, 1);
  fault::set_report_fd(STDERR_FILENO);
  // A sanitizer's runtime starts threads of its own with the first thread
  // made in a process (a forked child included): let them exist before the
  // snapshot, so that only the operation's threads count.
  test::start_runtime_threads();
  const Snapshot before = take_snapshot();
  std::vector<std::string> escaped;
  try {
    op.body(window);
  } catch (const std::exception& e) {
    escaped.push_back(std::string("the set-up or tear-down threw: ") + e.what());
  } catch (...) {
    escaped.push_back("the set-up or tear-down threw");
  }
  fault::disarm();
  // Threads that were joined may linger in /proc a moment; children the
  // operation reaped are gone at once.
  test::threads_settled_to(before.threads);
  const Snapshot after = take_snapshot();
  std::vector<std::string> problems = window.problems;
  for (const std::string& p : escaped) problems.push_back(p);
  for (const std::string& p : compare(before, after)) problems.push_back(p);
  for (int child : our_children()) {
    const char state = test::process_state(child);
    problems.push_back("child process left behind: " + std::to_string(child) + " (state " +
                       std::string(1, state ? state : '?') + ")");
  }
  if (op.cgroups)
    for (const std::string& path : cgroups_of(::getpid()))
      problems.push_back("cgroup left behind: " + path);
#if defined(__SANITIZE_ADDRESS__)
  if (__lsan_do_recoverable_leak_check() != 0) problems.push_back("memory leaked (LeakSanitizer)");
#endif
  const fault::Injection injection = fault::injection();
  std::ostringstream out;
  out << "ran " << window.ran << "\n";
  out << "outcome " << window.outcome << "\n";
  out << "code " << window.code << "\n";
  std::string what = window.what;
  std::replace(what.begin(), what.end(), '\n', ' ');
  out << "what " << what << "\n";
  out << "fired " << injection.fired << "\n";
  out << "timeout " << injection.timeout_ns << "\n";
  out << "slept " << injection.slept_ns << "\n";
  out << "retried " << injection.retried << "\n";
  out << "retry_timeout " << injection.retry_timeout_ns << "\n";
  out << "second_fired " << fault::second_injection().fired << "\n";
  for (std::size_t k = 0; k < fault::kCalls; ++k) {
    const auto call = static_cast<fault::Call>(k);
    if (const uint32_t n = fault::calls(call)) out << "count " << k << " " << n << "\n";
    if (const uint32_t n = fault::calls_after_injection(call))
      out << "after " << k << " " << n << "\n";
  }
  fault::Site sites[fault::kMaxSites];
  const std::size_t n = fault::sites(sites, fault::kMaxSites);
  for (std::size_t i = 0; i < n; ++i)
    out << "at " << fs::path(sites[i].file).filename().string() << ":" << sites[i].line << "\n";
  for (std::string p : problems) {
    std::replace(p.begin(), p.end(), '\n', ' ');
    out << "problem " << p << "\n";
  }
  const std::string text = out.str();
  std::size_t done = 0;
  while (done < text.size()) {
    const ssize_t w = ::write(report, text.data() + done, text.size() - done);
    if (w <= 0) break;
    done += static_cast<std::size_t>(w);
  }
  ::_exit(0);
}

// ---------------------------------------------------------------- the harness

struct CaseResult {
  bool hung = false;
  int status = 0;
  std::string err;  // the child's stderr
  std::map<std::string, std::string> values;
  std::map<std::size_t, uint32_t> counts;
  std::map<std::size_t, uint32_t> after;  // calls made after the injection fired
  std::set<std::string> sites;
  std::vector<std::string> problems;
  std::string get(const std::string& key) const {
    const auto it = values.find(key);
    return it == values.end() ? "" : it->second;
  }
  int64_t number(const std::string& key) const {
    const std::string v = get(key);
    return v.empty() ? 0 : std::stoll(v);
  }
};

// Kills and reaps every child of this process (leftovers of a killed case
// come to us: we are a subreaper), thawing its cgroups first.
void clean_up_after(pid_t case_pid, bool cgroups) {
  if (cgroups)
    for (const std::string& prefix : {"doorbell-" + std::to_string(case_pid) + "-",
                                      "doorbell-fi-" + std::to_string(case_pid) + "-"})
      test::remove_cgroups_with_prefix(prefix);
  for (int round = 0; round < 400; ++round) {
    while (::waitpid(-1, nullptr, WNOHANG) > 0) {
    }
    const std::vector<int> children = our_children();
    if (children.empty()) break;
    for (int pid : children) ::kill(pid, SIGKILL);
    std::this_thread::sleep_for(2ms);
  }
  if (cgroups)
    for (const std::string& prefix : {"doorbell-" + std::to_string(case_pid) + "-",
                                      "doorbell-fi-" + std::to_string(case_pid) + "-"})
      test::remove_cgroups_with_prefix(prefix);
}

CaseResult run_one(const Operation& op, const Window& plan) {
  int report[2], err[2];
  if (::pipe2(report, O_CLOEXEC) != 0 || ::pipe2(err, O_CLOEXEC) != 0) std::abort();
  const pid_t pid = ::fork();
  if (pid < 0) std::abort();
  if (pid == 0) {
    ::close(report[0]);
    ::close(err[0]);
    ::dup2(err[1], STDERR_FILENO);
    ::close(err[1]);
    run_case(op, plan, report[1]);
  }
  ::close(report[1]);
  ::close(err[1]);
  CaseResult result;
  std::string text;
  const auto deadline = Clock::now() + op.deadline;
  bool exited = false;
  for (;;) {
    pollfd fds[2] = {{report[0], POLLIN, 0}, {err[0], POLLIN, 0}};
    ::poll(fds, 2, 5);
    char buffer[4096];
    if (fds[0].revents & (POLLIN | POLLHUP)) {
      const ssize_t n = ::read(report[0], buffer, sizeof buffer);
      if (n > 0) text.append(buffer, static_cast<std::size_t>(n));
    }
    if (fds[1].revents & (POLLIN | POLLHUP)) {
      const ssize_t n = ::read(err[0], buffer, sizeof buffer);
      if (n > 0 && result.err.size() < 65536)
        result.err.append(buffer, static_cast<std::size_t>(n));
    }
    if (!exited && ::waitpid(pid, &result.status, WNOHANG) == pid) exited = true;
    if (exited) {
      // Drain what is left.
      ssize_t n;
      while ((n = ::read(report[0], buffer, sizeof buffer)) > 0)
        text.append(buffer, static_cast<std::size_t>(n));
      while ((n = ::read(err[0], buffer, sizeof buffer)) > 0 && result.err.size() < 65536)
        result.err.append(buffer, static_cast<std::size_t>(n));
      break;
    }
    if (Clock::now() > deadline) {
      result.hung = true;
      ::kill(pid, SIGKILL);
      while (::waitpid(pid, &result.status, 0) < 0 && errno == EINTR) {
      }
      break;
    }
  }
  ::close(report[0]);
  ::close(err[0]);
  clean_up_after(pid, op.cgroups);
  // The injection's own line on stderr names the site, also when the case
  // died before it could report.
  // A double fault's second failure writes a second line.
  std::size_t from = 0;
  for (const char* key : {"", "second_"}) {
    const auto at = result.err.find("doorbell-fault: ", from);
    if (at == std::string::npos) break;
    const auto end = result.err.find('\n', at);
    const std::string line = result.err.substr(at, end - at);
    if (const auto site = line.rfind(" at "); site != std::string::npos)
      result.values[std::string(key) + "site"] = line.substr(site + 4);
    result.values[std::string(key) + "declared"] =
        line.find("(declared impossible)") != std::string::npos ? "1" : "0";
    from = end == std::string::npos ? result.err.size() : end;
  }
  std::istringstream lines(text);
  std::string line;
  while (std::getline(lines, line)) {
    const auto space = line.find(' ');
    const std::string key = line.substr(0, space);
    const std::string value = space == std::string::npos ? "" : line.substr(space + 1);
    if (key == "count" || key == "after") {
      std::istringstream v(value);
      std::size_t kind = 0;
      uint32_t n = 0;
      v >> kind >> n;
      (key == "count" ? result.counts : result.after)[kind] = n;
    } else if (key == "at") {
      result.sites.insert(value);
    } else if (key == "problem") {
      result.problems.push_back(value);
    } else {
      result.values[key] = value;
    }
  }
  return result;
}

std::string describe_status(int status) {
  if (WIFEXITED(status)) return "exited " + std::to_string(WEXITSTATUS(status));
  if (WIFSIGNALED(status)) return std::string("killed by ") + signal_name(WTERMSIG(status));
  return "status " + std::to_string(status);
}

std::string errno_name(int error) {
  if (const char* name = strerrorname_np(error)) return name;
  return std::to_string(error);
}

// The verdict on one case: empty when it passed.
std::string judge(const Operation& op, const Window& plan, const CaseResult& r) {
  const std::string last_err_line = [&] {
    std::string e = r.err;
    while (!e.empty() && e.back() == '\n') e.pop_back();
    const auto nl = e.rfind('\n');
    return nl == std::string::npos ? e : e.substr(nl + 1);
  }();
  if (r.hung) return "hung: killed by the " + std::to_string(op.deadline.count()) + " ms watchdog";
  // The failures that happened: the first, and a double fault's second.
  struct Failed {
    fault::Call call;
    int error;
    bool possible;  // the kernel can return it there: it must be handled
  };
  std::vector<Failed> failed;
  const bool fired = r.get("fired") == "1";
  if (!plan.counting && fired) {
    const bool declared = r.get("declared") == "1";
    failed.push_back(
        {plan.call, plan.error, fault::kernel_can_return(plan.call, plan.error) && !declared});
  }
  if (plan.double_fault && r.get("second_fired") == "1") {
    const bool declared = r.get("second_declared") == "1";
    failed.push_back({plan.second_call, plan.second_error,
                      fault::kernel_can_return(plan.second_call, plan.second_error) && !declared});
  }
  bool any_impossible = false;
  // An error that says a live object is gone (a /proc file of a thread that
  // exited, ENOENT of a path that is there): the library may rightly take
  // it at its word and refuse what follows with another clear exception.
  bool any_gone = false;
  for (const Failed& f : failed) {
    any_impossible = any_impossible || !f.possible;
    any_gone = any_gone || f.error == ENOENT || f.error == ESRCH || f.error == ECHILD;
  }
  if (!WIFEXITED(r.status) || WEXITSTATUS(r.status) != 0 || r.get("ran") != "1") {
    const bool fatal = WIFSIGNALED(r.status) && WTERMSIG(r.status) == SIGABRT &&
                       r.err.find("doorbell: fatal") != std::string::npos;
    // "Cannot happen": the documented abort, for an errno the kernel cannot
    // return there, or one the site's protocol rules out (ImpossibleHere).
    // (A case that died has no report: its stderr says what fired.)
    if (fatal && !plan.counting) {
      const bool first_impossible =
          !fault::kernel_can_return(plan.call, plan.error) || r.get("declared") == "1";
      const bool second_impossible =
          plan.double_fault && !r.get("second_site").empty() &&
          (!fault::kernel_can_return(plan.second_call, plan.second_error) ||
           r.get("second_declared") == "1");
      if (first_impossible || second_impossible) return "";
    }
    if (fatal) return "aborted (sys::fatal) on an error the kernel can return: " + last_err_line;
    return describe_status(r.status) + (last_err_line.empty() ? "" : ": " + last_err_line);
  }
  std::string verdict;
  auto add = [&verdict](const std::string& text) {
    verdict += (verdict.empty() ? "" : "; ") + text;
  };
  const int outcome = static_cast<int>(r.number("outcome"));
  for (const std::string& p : r.problems) {
    bool excused = false;
    for (const Failed& f : failed) {
      // The failed call was the one that would have put the mask (or the
      // disposition) back, and the operation said so: that state is the
      // reported failure itself, not something left behind unreported.
      excused = excused ||
                (outcome == 1 &&
                 ((f.call == fault::Call::sigprocmask && p.rfind("signal mask changed", 0) == 0) ||
                  (f.call == fault::Call::sigaction && p.rfind("disposition of", 0) == 0) ||
                  (f.call == fault::Call::rmdir && p.rfind("cgroup left behind", 0) == 0)));
      // The same from a destructor, which reports on stderr.
      excused = excused || (f.call == fault::Call::rmdir && p.rfind("cgroup left behind", 0) == 0 &&
                            r.err.find("doorbell: warning: rmdir") != std::string::npos);
      // An error that says the object is gone already (removed, reaped by
      // someone else): the library rightly lets go of it, and what the
      // injection left behind is the injection's.
      excused = excused ||
                (f.call == fault::Call::rmdir && f.error == ENOENT &&
                 p.rfind("cgroup left behind", 0) == 0) ||
                ((f.call == fault::Call::waitid || f.call == fault::Call::waitpid) &&
                 f.error == ECHILD && p.rfind("child process left behind", 0) == 0);
      // A child the kernel does not let us kill is left running, with a
      // warning (child_process.h).
      excused = excused ||
                (p.rfind("child process left behind", 0) == 0 &&
                 r.err.find("doorbell: warning: ChildProcess: cannot kill") != std::string::npos);
    }
    if (!excused) add(p);
  }
  if (plan.counting || !fired) {
    if (outcome != 0) add("failed without an injected error: " + r.get("what"));
    return verdict;
  }
  // An error the kernel cannot return there: any clear report will do.
  if (outcome == 2 && !any_impossible && !any_gone)
    add("threw a non-system_error exception: " + r.get("what"));
  if (outcome == 1) {
    const int code = static_cast<int>(r.number("code"));
    // The freezer reports a missing directory or file as "no freezer"
    // (ENOTSUP, the reason in the message: cgroup_freezer.h).
    bool named = any_impossible || (op.cgroups && any_gone && code == ENOTSUP);
    // The loop reads EPERM from epoll_ctl(MOD/DEL) as "this fd was closed
    // under the loop and its number now names a file epoll refuses" and says
    // so as EBADF (event_loop.h; issue 33 defect 2).
    for (const Failed& f : failed)
      named = named || (f.call == fault::Call::epoll_ctl && f.error == EPERM && code == EBADF &&
                        r.get("what").find("was closed while registered") != std::string::npos);
    for (const Failed& f : failed)
      named = named || code == f.error ||
              r.get("what").find(std::strerror(f.error)) != std::string::npos;
    bool eintr_surfaced = false;
    for (const Failed& f : failed)
      eintr_surfaced = eintr_surfaced || (f.error == EINTR && f.possible && code == EINTR);
    if (!op.throws) {
      add("threw std::system_error (" + r.get("what") + ") where the header says it does not");
    } else if (eintr_surfaced) {
      add("EINTR was not retried: " + r.get("what"));
    } else if (!named) {
      add("reported " + errno_name(code) + " (" + r.get("what") + ") for an injected " +
          errno_name(plan.error) +
          (plan.double_fault ? " then " + errno_name(plan.second_error) : std::string()));
    }
  }
  // A timed wait interrupted by EINTR is retried with the time left.
  if (op.check_retry_timeouts && plan.error == EINTR && r.get("retried") == "1") {
    const int64_t timeout = r.number("timeout"), slept = r.number("slept");
    const int64_t retry = r.number("retry_timeout");
    if (timeout > 0 && (retry < 0 || retry > timeout - slept + 2'000'000))
      add("EINTR after " + std::to_string(slept / 1000) + " us of a " +
          std::to_string(timeout / 1000) + " us wait was retried with " +
          (retry < 0 ? std::string("no limit") : std::to_string(retry / 1000) + " us"));
  }
  return verdict;
}

// Which Nth calls of a kind that was called `count` times get a case: all
// of them up to `most`; beyond, the first ones, the middle one and the last
// ones (6: the first three, the middle, the last two; 3: first, middle,
// last).
std::vector<uint32_t> sample(uint32_t count, unsigned most) {
  std::vector<uint32_t> nths;
  if (count <= most) {
    for (uint32_t n = 1; n <= count; ++n) nths.push_back(n);
  } else if (most >= 6) {
    for (uint32_t n : {1u, 2u, 3u, count / 2, count - 1, count}) nths.push_back(n);
  } else {
    for (uint32_t n : {1u, (count + 1) / 2, count}) nths.push_back(n);
  }
  std::sort(nths.begin(), nths.end());
  nths.erase(std::unique(nths.begin(), nths.end()), nths.end());
  return nths;
}

// The errnos of the cases of one kind's sampled Nth call (sample `sample` of
// `samples`): at every one, EINTR, EAGAIN, ENOMEM and EMFILE, and every errno
// the kernel can return for the call (fault::kernel_can_return); each other
// errno of its manual page (fault::manual_errnos) at one sampled Nth only,
// in turn (the jth of them at sample j mod samples): every errno of the
// table gets a case per kind and operation without multiplying the cases.
//
// Slow operations (the partition runs, max_nths < 6) get, beyond the first
// four and EPERM/ESRCH where the kernel can return them, one other errno of
// the manual page per sampled call, in turn across kinds (the kth kind's ith
// sample takes the (k * samples + i)th, wrapping).
std::vector<int> errnos_for(fault::Call call, std::size_t sample, std::size_t samples, bool slow) {
  std::vector<int> errnos;
  const auto has = [&errnos](int e) {
    return std::find(errnos.begin(), errnos.end(), e) != errnos.end();
  };
  for (const int e : {EINTR, EAGAIN, ENOMEM, EMFILE}) errnos.push_back(e);
  for (const int e : fault::kSweepErrnos)
    if (fault::kernel_can_return(call, e) && !has(e)) errnos.push_back(e);
  std::vector<int> rest;
  for (const int e : fault::manual_errnos(call)) {
    if (has(e)) continue;
    if (fault::kernel_can_return(call, e) && !slow)
      errnos.push_back(e);
    else
      rest.push_back(e);
  }
  if (slow) {
    if (!rest.empty())
      errnos.push_back(rest[(static_cast<std::size_t>(call) * samples + sample) % rest.size()]);
  } else {
    for (std::size_t j = 0; j < rest.size(); ++j)
      if (j % samples == sample) errnos.push_back(rest[j]);
  }
  return errnos;
}

// The kinds of call an error path makes to clean up: a double fault fails
// these first.
bool cleanup_call(fault::Call call) {
  switch (call) {
    case fault::Call::close:
    case fault::Call::close_range:
    case fault::Call::epoll_ctl:
    case fault::Call::sigaction:
    case fault::Call::sigprocmask:
    case fault::Call::rmdir:
    case fault::Call::write:
    case fault::Call::pwrite:
    case fault::Call::kill:
    case fault::Call::pidfd_send_signal:
    case fault::Call::waitid:
    case fault::Call::waitpid:
    case fault::Call::futex_wake:
      return true;
    default:
      return false;
  }
}

// The errno of a double fault's second failure: the first its manual page
// lists that the kernel can return there, EINTR last (it is retried and says
// less); without one, the first of the list (a "cannot happen").
int second_errno(fault::Call call) {
  const auto errnos = fault::manual_errnos(call);
  for (const int e : errnos)
    if (e != EINTR && fault::kernel_can_return(call, e)) return e;
  if (fault::kernel_can_return(call, EINTR)) return EINTR;
  for (const int e : errnos)
    if (e != EINTR) return e;
  return EINTR;
}

void sweep(const Operation& op) {
  if (const std::string why = op.unavailable(); !why.empty()) GTEST_SKIP() << why;
  ASSERT_EQ(::prctl(PR_SET_CHILD_SUBREAPER, 1), 0);
  const auto start = Clock::now();
  Window counting;
  const CaseResult base = run_one(op, counting);
  const std::string base_verdict = judge(op, counting, base);
  ASSERT_TRUE(base_verdict.empty()) << op.name << " without injection: " << base_verdict << "\n"
                                    << base.err;
  ASSERT_FALSE(base.counts.empty()) << op.name << " made no system call";
  std::set<std::string> sites = base.sites;
  std::size_t cases = 0, fired = 0, failed = 0;
  std::set<int> errnos_used;
  double slowest_seconds = 0;
  std::string slowest;
  std::vector<std::string> failures;
  // A case per failed site whose error path made calls: the double faults'
  // first failure.
  std::map<std::string, std::pair<Window, std::map<std::size_t, uint32_t>>> error_paths;
  for (const auto& [kind, count] : base.counts) {
    const auto call = static_cast<fault::Call>(kind);
    const std::vector<uint32_t> nths = sample(count, op.max_nths);
    for (std::size_t i = 0; i < nths.size(); ++i) {
      const uint32_t nth = nths[i];
      for (const int error : errnos_for(call, i, nths.size(), op.max_nths < 6)) {
        Window plan;
        plan.counting = false;
        plan.call = call;
        plan.nth = nth;
        plan.error = error;
        const auto case_start = Clock::now();
        const CaseResult r = run_one(op, plan);
        const double case_seconds =
            std::chrono::duration<double>(Clock::now() - case_start).count();
        ++cases;
        errnos_used.insert(error);
        if (r.get("fired") == "1") ++fired;
        for (const std::string& s : r.sites) sites.insert(s);
        if (case_seconds > slowest_seconds) {
          slowest_seconds = case_seconds;
          slowest = std::string(fault::call_name(call)) + " #" + std::to_string(nth) + " " +
                    errno_name(error);
        }
        const std::string verdict = judge(op, plan, r);
        if (!verdict.empty()) {
          ++failed;
          failures.push_back(std::string(fault::call_name(call)) + " #" + std::to_string(nth) +
                             " " + errno_name(error) + " at " + r.get("site") + ": " + verdict);
        } else if (r.get("fired") == "1" && !r.after.empty() && error != EINTR) {
          error_paths.emplace(r.get("site"), std::make_pair(plan, r.after));
        }
      }
    }
  }
  // Double faults: for each failed site whose error path made calls, fail
  // the last call of each kind that path made (clean-up kinds first) with
  // second_errno(); at most max_doubles cases per operation, the sites in
  // order (a deterministic sample).
  const std::size_t max_doubles = op.max_nths >= 6 ? 40 : 10;
  std::size_t doubles = 0, doubles_fired = 0;
  for (const bool cleanup_first : {true, false}) {
    for (const auto& [site, path] : error_paths) {
      for (const auto& [kind, count] : path.second) {
        const auto second = static_cast<fault::Call>(kind);
        if (cleanup_call(second) != cleanup_first || doubles >= max_doubles) continue;
        Window plan = path.first;
        plan.double_fault = true;
        plan.second_call = second;
        plan.second_nth = count;
        plan.second_error = second_errno(second);
        const CaseResult r = run_one(op, plan);
        ++cases;
        ++doubles;
        if (r.get("second_fired") == "1") ++doubles_fired;
        for (const std::string& s : r.sites) sites.insert(s);
        const std::string verdict = judge(op, plan, r);
        if (!verdict.empty()) {
          ++failed;
          failures.push_back(std::string(fault::call_name(plan.call)) + " #" +
                             std::to_string(plan.nth) + " " + errno_name(plan.error) + " at " +
                             site + ", then " + fault::call_name(second) + " #" +
                             std::to_string(count) + " after it " + errno_name(plan.second_error) +
                             " at " + r.get("second_site") + ": " + verdict);
        }
      }
    }
  }
  const double seconds = std::chrono::duration<double>(Clock::now() - start).count();
  std::ostringstream summary;
  summary << "FaultInjection." << op.name << ": " << base.counts.size() << " call kinds, "
          << sites.size() << " call sites, " << errnos_used.size() << " errnos, " << cases
          << " cases (" << fired << " fired; " << doubles << " double faults, " << doubles_fired
          << " of whose second failures fired), " << failed << " failed, " << seconds
          << " s (slowest case " << slowest << ": " << slowest_seconds << " s)";
  std::printf("%s\n", summary.str().c_str());
  std::error_code ignored;
  fs::create_directories(DOORBELL_BINARY_DIR "/fault_injection", ignored);
  std::ofstream out(std::string(DOORBELL_BINARY_DIR "/fault_injection/") + op.name + ".txt");
  out << summary.str() << "\n";
  for (const std::string& site : sites) out << "site " << site << "\n";
  std::ostringstream all;
  for (const std::string& f : failures) all << "  " << f << "\n";
  EXPECT_TRUE(failures.empty()) << failed << " of " << cases << " cases failed:\n" << all.str();
}

// ---------------------------------------------------------------- helpers for operations

std::string need_root() {
  return ::geteuid() == 0 ? "" : "needs root";
}

std::string need_v2_freezer() {
  std::string why;
  if (!test::cgroup2_freezer_usable(&why)) return "no cgroup v2 freezer: " + why;
  return "";
}

std::string need_v1_freezer() {
  if (test::v1_freezer_own_dir().empty()) return "no v1 freezer mounted";
  return need_root();
}

// A child process for operations that act on another process: its own
// process group, SIGUSR1 ignored, paused until killed. Killed and reaped by
// the destructor.
class Target {
 public:
  explicit Target(int threads = 1) {
    int ready[2];
    if (::pipe2(ready, O_CLOEXEC) != 0) throw std::runtime_error("pipe");
    pid_ = ::fork();
    if (pid_ < 0) throw std::runtime_error("fork");
    if (pid_ == 0) {
      ::prctl(PR_SET_PDEATHSIG, SIGKILL);
      ::signal(SIGUSR1, SIG_IGN);
      for (int i = 1; i < threads; ++i) {
        pthread_t t;
        pthread_create(
            &t, nullptr,
            [](void*) -> void* {
              for (;;) ::pause();
            },
            nullptr);
      }
      ::write(ready[1], "x", 1);
      for (;;) ::pause();
    }
    ::close(ready[1]);
    char c;
    ::read(ready[0], &c, 1);
    ::close(ready[0]);
  }
  ~Target() {
    ::kill(pid_, SIGKILL);
    while (::waitpid(pid_, nullptr, 0) < 0 && errno == EINTR) {
    }
  }
  pid_t pid() const { return pid_; }

 private:
  pid_t pid_ = -1;
};

struct Pipe {
  int r = -1, w = -1;
  Pipe() {
    int fds[2];
    if (::pipe2(fds, O_CLOEXEC | O_NONBLOCK) != 0) throw std::runtime_error("pipe");
    r = fds[0];
    w = fds[1];
  }
  ~Pipe() {
    ::close(r);
    ::close(w);
  }
};

// Blocks signo in this thread for the operation and restores the mask after,
// dropping an instance left pending.
class Blocked {
 public:
  explicit Blocked(int signo) : signo_(signo) {
    sigset_t set;
    sigemptyset(&set);
    sigaddset(&set, signo);
    ::pthread_sigmask(SIG_BLOCK, &set, &previous_);
  }
  ~Blocked() {
    sigset_t set;
    sigemptyset(&set);
    sigaddset(&set, signo_);
    const timespec zero{0, 0};
    while (::sigtimedwait(&set, nullptr, &zero) == signo_) {
    }
    ::pthread_sigmask(SIG_SETMASK, &previous_, nullptr);
  }

 private:
  int signo_;
  sigset_t previous_;
};

partition::Schedule one_partition(partition::SuspendMethod method) {
  partition::Schedule s;
  s.major_frame_ns = 10'000'000;
  s.method = method;
  s.freezer.preference = FreezerPreference::v2_only;
  partition::PartitionSpec p;
  p.name = "p";
  p.entry = []() -> int {
    for (;;) ::pause();
  };
  s.partitions.push_back(p);
  s.windows.push_back({"p", 0, 4'000'000, 0});
  return s;
}

partition::RunOptions one_frame(int fifo_priority = 0) {
  partition::RunOptions options;
  options.frames = 1;
  options.fifo_priority = fifo_priority;
  options.start_delay_ns = 1'000'000;
  options.boundary_spin_ns = 0;
  options.max_handover_ns = 0;
  return options;
}

// ---------------------------------------------------------------- the operations

TEST(FaultInjection, Bell_RingWakesAWaiter) {
  sweep({"Bell_RingWakesAWaiter",
         [](Window& w) {
           Bell bell;
           std::atomic<bool> woke{false};
           std::thread waiter([&] { woke = bell.wait_for(10s); });
           while (bell.waiters() == 0) std::this_thread::sleep_for(1ms);
           w.run([&] { bell.ring(); });
           // The ring is never lost, whatever its FUTEX_WAKE said.
           if (!woke) bell.ring();
           waiter.join();
         },
         false});
}

TEST(FaultInjection, Bell_WaitForTimesOut) {
  sweep({"Bell_WaitForTimesOut",
         [](Window& w) {
           Bell bell;
           w.run([&] { w.expect(!bell.wait_for(30ms), "wait_for consumed a ring nobody rang"); });
           w.expect(bell.waiters() == 0, "the timed-out waiter is still counted");
         },
         false});
}

TEST(FaultInjection, Ring_PopWaitsForAPush) {
  sweep({"Ring_PopWaitsForAPush",
         [](Window& w) {
           const std::size_t bytes = Ring::bytes_needed(4, 16);
           void* memory = std::aligned_alloc(64, (bytes + 63) / 64 * 64);
           Ring ring = Ring::create(memory, bytes, 4, 16);
           std::thread producer([&] {
             std::this_thread::sleep_for(5ms);
             ring.push("x", 1, 5s);
           });
           w.run([&] {
             char buffer[16];
             const Ring::PopResult r = ring.pop(buffer, sizeof buffer, 5s);
             w.expect(r.status == Ring::Status::ok, "pop did not get the record");
           });
           producer.join();
           std::free(memory);
         },
         false});
}

TEST(FaultInjection, EventNotifier_Construct) {
  sweep({"EventNotifier_Construct", [](Window& w) { w.run([] { EventNotifier n; }); }});
}

TEST(FaultInjection, EventNotifier_NotifyConsumeWait) {
  sweep({"EventNotifier_NotifyConsumeWait",
         [](Window& w) {
           EventNotifier n;
           w.run([&] {
             w.expect(n.arm(), "arm");
             n.notify();  // armed: writes the eventfd
             w.expect(n.consume(true), "the notification was lost");
             w.expect(!n.wait(30), "wait(30) saw a notification nobody sent");
           });
         },
         false});
}

TEST(FaultInjection, Timer_Construct) {
  sweep({"Timer_Construct", [](Window& w) { w.run([] { Timer t; }); }});
}

TEST(FaultInjection, Timer_ArmWaitReadDisarm) {
  sweep({"Timer_ArmWaitReadDisarm", [](Window& w) {
           Timer t;
           w.run([&] {
             t.arm_once(2ms);
             w.expect(t.wait() >= 1, "wait() returned no expiration");
             t.arm_periodic(1ms);
             std::this_thread::sleep_for(3ms);
             (void)t.read();
             t.disarm();
           });
         }});
}

TEST(FaultInjection, EventLoop_Construct) {
  sweep({"EventLoop_Construct", [](Window& w) { w.run([] { EventLoop loop; }); }});
}

TEST(FaultInjection, EventLoop_AddModifyRemove) {
  sweep({"EventLoop_AddModifyRemove", [](Window& w) {
           EventLoop loop;
           Pipe p;
           bool added = false;
           w.run([&] {
             loop.add(p.r, EventLoop::kReadable, [](uint32_t) {});
             added = true;
             loop.modify(p.r, EventLoop::kReadable | EventLoop::kWritable);
             loop.modify(p.r, EventLoop::kReadable);
             w.expect(loop.remove(p.r), "remove() found no registration");
           });
           if (!added) w.expect(!loop.contains(p.r), "a failed add() left a registration");
           if (loop.contains(p.r)) loop.remove(p.r);
           // The loop still works.
           loop.add(p.r, EventLoop::kReadable, [](uint32_t) {});
           w.expect(loop.remove(p.r), "the loop is unusable after the failure");
         }});
}

TEST(FaultInjection, EventLoop_RunOnceDispatches) {
  sweep({"EventLoop_RunOnceDispatches", [](Window& w) {
           EventLoop loop;
           Pipe p;
           int calls = 0;
           loop.add(p.r, EventLoop::kReadable, [&](uint32_t) {
             char c;
             while (::read(p.r, &c, 1) > 0) {
             }
             ++calls;
           });
           ::write(p.w, "x", 1);
           w.run([&] {
             w.expect(loop.run_once(5s) == 1, "the readable pipe was not dispatched");
             w.expect(loop.run_once(30ms) == 0, "a round dispatched with nothing ready");
           });
           loop.remove(p.r);
         }});
}

TEST(FaultInjection, EventLoop_TimersAndStop) {
  sweep({"EventLoop_TimersAndStop", [](Window& w) {
           EventLoop loop;
           std::optional<EventLoop::TimerId> periodic, one_shot;
           w.run([&] {
             int ticks = 0;
             periodic = loop.add_timer(1ms, 1ms, [&](uint64_t) {
               if (++ticks == 3) loop.stop();
             });
             one_shot = loop.add_timer(1h, 0ns, [](uint64_t) {});
             loop.run();
             w.expect(loop.cancel_timer(*periodic), "the periodic timer was gone");
             periodic.reset();
           });
           if (periodic) loop.cancel_timer(*periodic);
           if (one_shot) loop.cancel_timer(*one_shot);
           // A failed add_timer() leaves no registration behind.
           w.expect(loop.size() == 0, std::to_string(loop.size()) + " registrations left");
         }});
}

TEST(FaultInjection, EventLoop_WakeupFromAnotherThread) {
  sweep({"EventLoop_WakeupFromAnotherThread", [](Window& w) {
           EventLoop loop;
           std::atomic<bool> go{false};
           std::thread waker([&] {
             while (!go) std::this_thread::sleep_for(1ms);
             std::this_thread::sleep_for(5ms);
             loop.wakeup();
           });
           w.run([&] {
             go = true;
             loop.run_once(5s);
           });
           go = true;
           waker.join();
         }});
}

SignalChannel::Options handler_mechanism() {
  SignalChannel::Options o;
  o.mechanism = SignalMechanism::handler;
  return o;
}

SignalChannel::Options signalfd_mechanism() {
  SignalChannel::Options o;
  o.mechanism = SignalMechanism::signalfd;
  return o;
}

TEST(FaultInjection, SignalChannel_Handler_ConstructStop) {
  sweep({"SignalChannel_Handler_ConstructStop", [](Window& w) {
           w.run([] {
             SignalChannel channel({SIGUSR1, SIGUSR2}, handler_mechanism());
             channel.stop();
           });
         }});
}

TEST(FaultInjection, SignalChannel_Handler_Receive) {
  sweep({"SignalChannel_Handler_Receive", [](Window& w) {
           SignalChannel channel({SIGUSR1}, handler_mechanism());
           w.run([&] {
             w.expect(!channel.receive(30ms), "an event nobody sent");
             ::kill(::getpid(), SIGUSR1);
             const auto event = channel.receive(5s);
             w.expect(event && event->signal == SIGUSR1, "the SIGUSR1 was not received");
             w.expect(channel.dispatch([](const SignalEvent&) {}) == 0, "a second event");
           });
           channel.stop();
         }});
}

TEST(FaultInjection, SignalChannel_Signalfd_ConstructStop) {
  sweep({"SignalChannel_Signalfd_ConstructStop", [](Window& w) {
           Blocked blocked(SIGUSR1);
           w.run([] {
             SignalChannel channel({SIGUSR1}, signalfd_mechanism());
             channel.stop();
           });
         }});
}

TEST(FaultInjection, SignalChannel_Signalfd_Receive) {
  sweep({"SignalChannel_Signalfd_Receive", [](Window& w) {
           Blocked blocked(SIGUSR1);
           SignalChannel channel({SIGUSR1}, signalfd_mechanism());
           w.run([&] {
             w.expect(!channel.receive(30ms), "an event nobody sent");
             ::kill(::getpid(), SIGUSR1);
             const auto event = channel.receive(5s);
             w.expect(event && event->signal == SIGUSR1, "the SIGUSR1 was not received");
             ::kill(::getpid(), SIGUSR1);
             channel.stop();  // takes the pending one into the channel
             // An event, or (the drain's read saw none) still pending in the
             // kernel, blocked: never lost.
             sigset_t pending;
             sigpending(&pending);
             w.expect(channel.try_receive().has_value() || sigismember(&pending, SIGUSR1) == 1,
                      "stop() lost a pending signal");
           });
         }});
}

TEST(FaultInjection, SignalMask_BlockBeforeThreadsAndRestore) {
  sweep({"SignalMask_BlockBeforeThreadsAndRestore", [](Window& w) {
           w.run([] {
             const sigset_t previous = block_signals_before_threads({SIGUSR1, SIGUSR2});
             restore_signal_mask(previous);
           });
         }});
}

void signal_receiver_round(Window& w, SignalReceiver::Method method) {
  const sigset_t previous = block_signals_in_this_thread({SIGUSR1});
  std::atomic<int> seen{0};
  w.run([&] {
    SignalReceiver::Options options;
    options.method = method;
    SignalReceiver receiver(
        {SIGUSR1}, [&](const siginfo_t&) { seen.fetch_add(1); }, options);
    ::kill(::getpid(), SIGUSR1);
    for (int i = 0; i < 5000 && seen.load() == 0; ++i) std::this_thread::sleep_for(1ms);
    w.expect(seen.load() == 1, "the receiver did not take the SIGUSR1");
    w.expect(receiver.verify().empty(), "a thread leaves SIGUSR1 unblocked");
    receiver.stop();
  });
  // An instance the receiver did not take (its start failed) is dropped.
  sigset_t set;
  sigemptyset(&set);
  sigaddset(&set, SIGUSR1);
  const timespec zero{0, 0};
  while (::sigtimedwait(&set, nullptr, &zero) == SIGUSR1) {
  }
  restore_signal_mask(previous);
}

TEST(FaultInjection, SignalReceiver_Sigwaitinfo) {
  sweep({"SignalReceiver_Sigwaitinfo",
         [](Window& w) { signal_receiver_round(w, SignalReceiver::Method::sigwaitinfo); }});
}

TEST(FaultInjection, SignalReceiver_Signalfd) {
  sweep({"SignalReceiver_Signalfd",
         [](Window& w) { signal_receiver_round(w, SignalReceiver::Method::signalfd); }});
}

TEST(FaultInjection, ThreadBroadcaster_Send) {
  sweep({"ThreadBroadcaster_Send", [](Window& w) {
           Target target(3);
           w.run([&] {
             ThreadBroadcaster broadcaster(target.pid());
             // A thread the kernel says is gone (ESRCH) is counted as gone.
             const BroadcastResult queued = broadcaster.send(SIGUSR1);
             // (At least: a sanitizer may add a thread of its own.)
             w.expect(queued.threads_reached + queued.threads_gone >= 3,
                      "send() did not account for the 3 threads");
             const BroadcastResult plain = broadcaster.send_plain(SIGUSR1);
             w.expect(plain.complete || plain.process_exited,
                      "send_plain() neither completed nor saw the process exit");
           });
         }});
}

TEST(FaultInjection, ThreadBroadcast_StopEveryThreadAndContinue) {
  sweep({"ThreadBroadcast_StopEveryThreadAndContinue", [](Window& w) {
           Target target(2);
           w.run([&] {
             stop_every_thread(target.pid());
             for (int i = 0; i < 5000 && !all_threads_stopped(target.pid()); ++i)
               std::this_thread::sleep_for(1ms);
             continue_process(target.pid());
           });
         }});
}

TEST(FaultInjection, ChildProcess_SpawnAndWait) {
  sweep({"ChildProcess_SpawnAndWait", [](Window& w) {
           w.run([&] {
             ChildProcess child = ChildProcess::spawn({"true"});
             w.expect(child.wait().success(), "true did not succeed");
           });
         }});
}

TEST(FaultInjection, ChildProcess_RedirectSignalWaitFor) {
  sweep({"ChildProcess_RedirectSignalWaitFor", [](Window& w) {
           const int devnull = ::open("/dev/null", O_WRONLY | O_CLOEXEC);
           w.run([&] {
             SpawnOptions options;
             options.stdout_fd = devnull;
             options.stderr_fd = devnull;
             options.new_process_group = true;
             ChildProcess child = ChildProcess::spawn({"sleep", "10"}, options);
             w.expect(!child.wait_for(30ms).has_value(), "sleep 10 ended at once");
             w.expect(!child.try_wait().has_value(), "sleep 10 ended at once");
             // false: the kernel said the child is gone (ESRCH); the
             // destructor kills and reaps what is left.
             if (child.send_signal(SIGTERM)) {
               const auto status = child.wait_for(5s);
               w.expect(status && status->signal() == SIGTERM, "not killed by SIGTERM");
             }
           });
           ::close(devnull);
         }});
}

TEST(FaultInjection, ChildProcess_DestructorKillsAndReaps) {
  sweep({"ChildProcess_DestructorKillsAndReaps",
         [](Window& w) {
           std::optional<ChildProcess> child = ChildProcess::spawn({"sleep", "10"});
           w.run([&] { child.reset(); });
         },
         false});
}

TEST(FaultInjection, CgroupFreezer_ProbeCreateRemove) {
  sweep({"CgroupFreezer_ProbeCreateRemove",
         [](Window& w) {
           FreezerOptions options;
           options.preference = FreezerPreference::v2_only;
           w.run([&] {
             const FreezerAvailability where = probe_freezers(options);
             w.expect(!where.v2_parent.empty() || !where.v2_why_not.empty(),
                      "no v2 parent and no reason why");
             CgroupFreezer cgroup = CgroupFreezer::create(Window::cgroup_name("probe"), options);
             cgroup.remove();
           });
         },
         true, need_v2_freezer, 10s, true, 6, true});
}

TEST(FaultInjection, CgroupFreezer_AddFreezeThawRemove) {
  sweep({"CgroupFreezer_AddFreezeThawRemove",
         [](Window& w) {
           FreezerOptions options;
           options.preference = FreezerPreference::v2_only;
           Target target;
           CgroupFreezer cgroup = CgroupFreezer::create(Window::cgroup_name("cycle"), options);
           w.run([&] {
             cgroup.add(target.pid());
             w.expect(cgroup.processes() == std::vector<pid_t>{target.pid()}, "not inside");
             if (cgroup.freeze() == 0) {
               for (int i = 0; i < 5000 && !cgroup.is_frozen(); ++i)
                 std::this_thread::sleep_for(1ms);
             }
             cgroup.thaw();
             cgroup.remove();
           });
           // Whatever failed, the tear-down leaves nothing frozen or behind.
           cgroup.remove();
           w.expect(test::process_state(target.pid()) != 'T', "the target was left stopped");
         },
         true, need_v2_freezer, 10s, true, 6, true});
}

TEST(FaultInjection, CgroupFreezer_KillAll) {
  sweep({"CgroupFreezer_KillAll",
         [](Window& w) {
           FreezerOptions options;
           options.preference = FreezerPreference::v2_only;
           auto target = std::make_unique<Target>();
           CgroupFreezer cgroup = CgroupFreezer::create(Window::cgroup_name("kill"), options);
           cgroup.add(target->pid());
           w.run([&] {
             const int rc = cgroup.kill_all();
             w.expect(rc == 0 || rc == -w.error, "kill_all() returned " + std::to_string(rc));
           });
           target.reset();  // SIGKILL (again) and reap
           cgroup.remove();
         },
         false, need_v2_freezer, 10s, true, 6, true});
}

TEST(FaultInjection, CgroupFreezer_V1CreateFreezeRemove) {
  sweep({"CgroupFreezer_V1CreateFreezeRemove",
         [](Window& w) {
           FreezerOptions options;
           options.preference = FreezerPreference::v1_only;
           Target target;
           w.run([&] {
             CgroupFreezer cgroup = CgroupFreezer::create(Window::cgroup_name("v1"), options);
             cgroup.add(target.pid());
             if (cgroup.freeze() == 0) {
               for (int i = 0; i < 5000 && !cgroup.is_frozen(); ++i)
                 std::this_thread::sleep_for(1ms);
             }
             cgroup.remove();
           });
         },
         true, need_v1_freezer, 10s, true, 6, true});
}

TEST(FaultInjection, FreezerKeeper_HoldAndRelease) {
  sweep({"FreezerKeeper_HoldAndRelease",
         [](Window& w) { w.run([] { FreezerKeeper keeper(Window::cgroup_name("keeper")); }); },
         true, need_v1_freezer, 10s, true, 6, true});
}

TEST(FaultInjection, Partition_SchedulerConstructAndRequestStop) {
  sweep({"Partition_SchedulerConstructAndRequestStop", [](Window& w) {
           w.run([] {
             partition::Scheduler scheduler(one_partition(partition::SuspendMethod::sigstop));
             scheduler.request_stop();
           });
         }});
}

// The port memory: memfd_create, ftruncate and mmap through the seam
// (sys/shared_memory.h, shared with the health blocks). A failure throws
// std::system_error and leaves no descriptor (the sweep's snapshot) and no
// mapping of the memory.
TEST(FaultInjection, PartitionPorts_CreatePortMemory) {
  sweep({"PartitionPorts_CreatePortMemory", [](Window& w) {
           partition::ChannelSpec c;
           c.name = "cmd";
           c.kind = partition::PortKind::queuing;
           c.source = "A.out";
           c.destinations = {"B.in"};
           c.message_size = 64;
           c.depth = 8;
           w.run([&] { ::close(partition::create_port_memory({c})); });
           std::ifstream maps("/proc/self/maps");
           const std::string text((std::istreambuf_iterator<char>(maps)),
                                  std::istreambuf_iterator<char>());
           w.expect(text.find("memfd:doorbell-ports") == std::string::npos,
                    "a mapping of the port memory was left");
         }});
}

void run_one_frame(Window& w, partition::SuspendMethod method, int fifo = 0) {
  partition::Scheduler scheduler(one_partition(method));
  w.run([&] {
    const partition::RunReport report = scheduler.run(one_frame(fifo));
    w.expect(report.frames == 1, "the frame did not complete");
  });
}

TEST(FaultInjection, Partition_RunOneFrame_Sigstop) {
  sweep({"Partition_RunOneFrame_Sigstop",
         [](Window& w) { run_one_frame(w, partition::SuspendMethod::sigstop); }, true, need_root,
         20s, false, 3});
}

TEST(FaultInjection, Partition_RunOneFrame_SigstopAllThreads_Fifo) {
  sweep({"Partition_RunOneFrame_SigstopAllThreads_Fifo",
         [](Window& w) { run_one_frame(w, partition::SuspendMethod::sigstop_all_threads, 10); },
         true, need_root, 20s, false, 3});
}

TEST(FaultInjection, Partition_RunOneFrame_FreezerV2) {
  sweep({"Partition_RunOneFrame_FreezerV2",
         [](Window& w) { run_one_frame(w, partition::SuspendMethod::freezer); }, true,
         need_v2_freezer, 20s, false, 3, true});
}

// A command partition: the scheduler resolves it in PATH, runs it through
// its execve before frame 0 (the close-on-exec pipe's end of file) and
// suspends it again.
TEST(FaultInjection, Partition_RunOneFrame_CommandPartition) {
  sweep({"Partition_RunOneFrame_CommandPartition",
         [](Window& w) {
           partition::Schedule s = one_partition(partition::SuspendMethod::sigstop);
           s.partitions[0].entry = nullptr;
           s.partitions[0].command = {"sleep", "30"};
           partition::Scheduler scheduler(s);
           w.run([&] {
             const partition::RunReport report = scheduler.run(one_frame());
             w.expect(report.frames == 1, "the frame did not complete");
           });
         },
         true, need_root, 20s, false, 3});
}

TEST(FaultInjection, RateLimiter_FirstCallOfAThreadReclaimsASlot) {
  sweep({"RateLimiter_FirstCallOfAThreadReclaimsASlot",
         [](Window& w) {
           RateLimiter limiter{std::chrono::milliseconds(1), 0};
           // A thread that owned a slot and exited: the next thread's claim
           // asks the kernel whether that owner still exists.
           std::thread([&] { (void)limiter.allow_at(1'000'000); }).join();
           w.run([&] { std::thread([&] { (void)limiter.allow_at(1'000'000); }).join(); });
           w.expect(limiter.suppressed_total() == 2, "a denial was lost");
         },
         false});
}

}  // namespace
}  // namespace doorbell
