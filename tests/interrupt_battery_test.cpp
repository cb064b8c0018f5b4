// The interrupt battery (issue 34): every long-running command of the CLI
// tree is stopped by SIGINT, SIGTERM and SIGKILL at several moments, and
// what it leaves is checked. The commands come from the binary's own tree
// (`doorbell --dump-cli-tree`, as CliBattery reads it): a command must be
// listed here as long-running (with the runs to interrupt) or as short
// (InterruptBattery.EveryCommandIsClassified), so a new command cannot be
// missed. The bench runs are generated from `bench --list`: the first
// default-suite row of every group, each interrupted mid-run on its own.
//
// How a case runs: the command starts as the leader of a process group of
// its own; SIGINT and SIGTERM go to the whole group, as a terminal's Ctrl-C
// does (the scenario's and the partitions' processes get them too);
// SIGKILL goes to the command's process only, as `kill -9 PID` does.
// Moments: "start-up" (20 ms after the start: usually before the command
// has installed a handler), "mid-run" (the command's own delay; bench: once
// its scenario process has run 50 ms), "writing" (bench: the moment
// results.json appears, while the CSV and HTML are still being written).
//
// After every case:
//  - no process of ours left (this test is the subreaper of what the
//    command started: every orphan comes here) once 5 s have passed (the
//    guardians end within about a second), and none of them was seen
//    stopped (State T);
//  - no cgroup named doorbell-* that was not there before;
//  - no tracing instance doorbell-* that was not there before (root; the
//    tracing directory as sys/tracefs.h finds it: the test reads it only);
//  - no BPF program or link loaded since the case began that no process
//    holds for 5 s (root, with bpftool: what only a pin would keep; a
//    concurrent process's programs are unheld a moment while it exits);
//  - this process's signal mask and its dispositions of the job-control
//    and termination signals as before (the "terminal" of the command).
// After SIGINT or SIGTERM, unless the command had not yet installed its
// handler (then it died of the signal, and wrote nothing):
//  - bench: exit 128 + the signal, the table on stdout, results.json with
//    the completed rows (marked "interrupted" when the run was stopped);
//  - inspect --watch: exit 128 + the signal, the verdict and "interrupted
//    by SIG..." on stdout;
//  - trace --json: exit 0, and a summary line whose end is "interrupted";
//  - partition run: exit 0, the report ("stopped early");
//  - report, guide --update: a whole output file or none, no temporary file.
// Under the sanitizers (slow start-up) only the mid-run moment runs, and
// bench's groups are cut to three: said when the test starts.
#include <signal.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <gtest/gtest.h>

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <functional>
#include <iostream>
#include <map>
#include <nlohmann/json.hpp>
#include <set>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include <fmt/format.h>

#include "doorbell/signal_channel.h"
#include "sys/tracefs.h"
#include "tests/support/cgroup_probe.h"
#include "tests/support/run_program.h"

namespace {

namespace fs = std::filesystem;
using namespace std::chrono_literals;
using Json = nlohmann::json;

#if defined(__SANITIZE_ADDRESS__) || defined(__SANITIZE_THREAD__)
constexpr bool kSanitizer = true;
#elif defined(__has_feature)
#if __has_feature(address_sanitizer) || __has_feature(thread_sanitizer)
constexpr bool kSanitizer = true;
#else
constexpr bool kSanitizer = false;
#endif
#else
constexpr bool kSanitizer = false;
#endif

const std::string kSource = DOORBELL_SOURCE_DIR;

// ------------------------------------------------------------ the tree

std::vector<std::string> command_paths() {
  const auto r = doorbell::test::run_doorbell({"--dump-cli-tree"}, {.timeout = 60s});
  if (!r.success()) return {};
  std::vector<std::string> paths;
  std::function<void(const Json&)> walk = [&](const Json& node) {
    paths.push_back(node["path"]);
    for (const auto& sub : node["subcommands"]) walk(sub);
  };
  walk(Json::parse(r.out));
  return paths;
}

// Commands that end by themselves in moments: nothing to interrupt.
const std::set<std::string> kShort = {"", "partition", "partition check", "help", "completion"};
// The long-running ones; each has runs below (runs_of).
const std::set<std::string> kLong = {"bench",         "trace",  "inspect",
                                     "partition run", "report", "guide"};

// ------------------------------------------------------------ a case

enum class Moment { startup, mid_run, writing };

const char* moment_name(Moment m) {
  return m == Moment::startup ? "start-up" : m == Moment::mid_run ? "mid-run" : "writing";
}

struct Run {
  std::string command;  // the tree path
  std::string label;
  std::vector<std::string> args;  // "{tmp}" is the case's own directory
  std::chrono::milliseconds mid{1000};
  bool wait_for_child = false;  // mid-run: once it has a child process, + `mid`
  std::string written;          // writing: the file whose appearance is the moment
  // After SIGKILL, what removes a tracing instance left (docs/trace.md: the
  // next doorbell that creates one); empty: a guardian must have.
  std::vector<std::string> next_run;
};

std::string fill(std::string text, const std::string& tmp) {
  for (std::size_t at; (at = text.find("{tmp}")) != std::string::npos;) text.replace(at, 5, tmp);
  return text;
}

std::string schedule_file() {
  static const std::string path = [] {
    const std::string p = fmt::format("/tmp/doorbell-interrupt-{}.toml", ::getpid());
    std::ofstream(p) << "major_frame_ms = 10\n"
                     << "[[partition]]\nname = \"A\"\n"
                     << "command = [\"/bin/sh\", \"-c\", \"while :; do :; done\"]\n"
                     << "[[partition]]\nname = \"B\"\ncommand = [\"/bin/sleep\", \"30\"]\n"
                     << "[[window]]\npartition = \"A\"\noffset_ms = 0\nduration_ms = 4\n"
                     << "[[window]]\npartition = \"B\"\noffset_ms = 5\nduration_ms = 4\n";
    std::atexit(
        [] { ::unlink(fmt::format("/tmp/doorbell-interrupt-{}.toml", ::getpid()).c_str()); });
    return p;
  }();
  return path;
}

// The first default-suite row of every group, from `bench --list`.
std::vector<std::string> first_row_of_each_group() {
  const auto r = doorbell::test::run_doorbell({"bench", "--list"}, {.timeout = 60s});
  std::vector<std::string> rows;
  std::istringstream in(r.out);
  std::string line;
  bool take = false;
  while (std::getline(in, line)) {
    if (line.empty()) continue;
    if (line[0] != ' ') {
      take = true;  // a group's header
      continue;
    }
    if (!take) continue;
    std::istringstream fields(line);
    std::string name;
    fields >> name;
    rows.push_back(name);
    take = false;
  }
  return rows;
}

std::vector<Run> runs_of(const std::string& command) {
  const std::vector<std::string> bench_base = {"bench",         "--quick", "--repeat", "3",
                                               "--no-progress", "--out",   "{tmp}/out"};
  std::vector<Run> runs;
  if (command == "bench") {
    std::vector<std::string> rows = first_row_of_each_group();
    if (kSanitizer && rows.size() > 3) rows.resize(3);
    for (const auto& row : rows) {
      Run r{"bench", "bench " + row, bench_base, 50ms, true, ""};
      r.args.insert(r.args.end(), {"--filter", row});
      runs.push_back(r);
    }
    // The writing moment: one short row run to its end.
    Run w{"bench", "bench (writing)", bench_base, 300ms, true, "{tmp}/out/results.json"};
    w.args[3] = "1";
    w.args.insert(w.args.end(), {"--filter", "ladder/atomic_store_load_acq_rel"});
    runs.push_back(w);
  } else if (command == "trace") {
    for (const char* backend : {"bpf", "tracefs"})
      runs.push_back({"trace",
                      std::string("trace --backend ") + backend,
                      {"trace", "--backend", backend, "--json", "--interval", "0.5"},
                      kSanitizer ? 4000ms : 2500ms,
                      false,
                      "",
                      {"trace", "--backend", "tracefs", "--duration", "0.1"}});
  } else if (command == "inspect") {
    runs.push_back({"inspect",
                    "inspect --watch",
                    {"inspect", std::to_string(::getpid()), "--watch", "60"},
                    kSanitizer ? 4000ms : 2500ms});
  } else if (command == "partition run") {
    for (const char* method : {"sigstop", "sigstop-all-threads", "freezer"})
      runs.push_back({"partition run",
                      std::string("partition run --method ") + method,
                      {"partition", "run", schedule_file(), "--method", method},
                      kSanitizer ? 2000ms : 1000ms});
  } else if (command == "report") {
    runs.push_back(
        {"report",
         "report",
         {"report", kSource + "/tests/data/small_results.json", "--output", "{tmp}/r.html"},
         100ms});
  } else if (command == "guide") {
    runs.push_back({"guide",
                    "guide --update",
                    {"guide", kSource + "/docs/results/kvm-firecracker-intel-xeon-2vcpu.json",
                     "{tmp}/guide.md", "--update"},
                    100ms});
  }
  return runs;
}

// ------------------------------------------------------------ what is left

struct Terminal {
  sigset_t mask;
  std::map<int, std::pair<void*, int>> actions;  // handler, flags
  bool operator==(const Terminal& o) const {
    for (int s = 1; s < 65; ++s)
      if (sigismember(&mask, s) != sigismember(&o.mask, s)) return false;
    return actions == o.actions;
  }
};

Terminal terminal_state() {
  Terminal t;
  ::pthread_sigmask(SIG_SETMASK, nullptr, &t.mask);
  for (int s :
       {SIGINT, SIGTERM, SIGHUP, SIGQUIT, SIGTSTP, SIGTTIN, SIGTTOU, SIGCHLD, SIGPIPE, SIGCONT}) {
    struct sigaction sa {};
    ::sigaction(s, nullptr, &sa);
    t.actions[s] = {reinterpret_cast<void*>(sa.sa_handler), sa.sa_flags};
  }
  return t;
}

std::set<std::string> doorbell_instances() {
  std::set<std::string> names;
  if (::geteuid() != 0) return names;
  try {
    const std::string dir = doorbell::sys::tracefs::tracing_dir().path + "/instances";
    std::error_code ec;
    for (const auto& e : fs::directory_iterator(dir, ec))
      if (e.path().filename().string().rfind("doorbell-", 0) == 0)
        names.insert(e.path().filename().string());
  } catch (const std::exception&) {
  }
  return names;
}

std::string read_text(const std::string& path) {
  std::ifstream in(path);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

bool have_bpftool() {
  static const bool have = ::geteuid() == 0 && ::access("/usr/sbin/bpftool", X_OK) == 0;
  return have;
}

// BPF programs or links: id -> held by some process (bpftool's "pids").
std::map<long, bool> bpf_objects(const char* kind) {
  std::map<long, bool> objects;
  if (!have_bpftool()) return objects;
  const auto r =
      doorbell::test::run_program({"/usr/sbin/bpftool", "-j", kind, "show"}, {.timeout = 30s});
  if (!r.success()) return objects;
  const Json list = Json::parse(r.out, nullptr, false);
  if (!list.is_array()) return objects;
  for (const auto& o : list)
    if (o.contains("id")) objects[o["id"].get<long>()] = o.contains("pids");
  return objects;
}

bool alive(pid_t pid) {
  return ::kill(pid, 0) == 0 || errno == EPERM;
}

pid_t owner_of_instance(const std::string& name) {
  const auto dash = name.rfind('-');
  return dash == std::string::npos ? 0 : std::atoi(name.c_str() + dash + 1);
}

struct Before {
  std::set<std::string> instances;
  std::vector<std::string> cgroups;
  std::map<long, bool> progs, links;
  Terminal terminal;
};

Before before_case() {
  return {doorbell_instances(), doorbell::test::cgroups_with_prefix("doorbell-"),
          bpf_objects("prog"), bpf_objects("link"), terminal_state()};
}

// Everything the case left, one line each; empty: nothing. `next_run`:
// what removes a tracing instance a SIGKILL left (run once when one is).
std::vector<std::string> leftovers(const Before& before, const std::vector<std::string>& next_run,
                                   bool* next_run_cleaned) {
  std::vector<std::string> found;
  // Processes: ours are our children now (we are their subreaper). One
  // that is gone within 5 s is not left, even if it was seen stopped on the
  // way (a SIGKILLed scheduler's partitions stay stopped until its guardian
  // kills them, moments later); one still there is, with its state.
  const auto until = std::chrono::steady_clock::now() + 5s;
  for (;;) {
    std::vector<int> left;
    for (int pid : doorbell::test::children_of(::getpid())) {
      const char state = doorbell::test::process_state(pid);
      if (state == 'Z' || state == '\0') {
        int status;
        ::waitpid(pid, &status, WNOHANG);
        continue;
      }
      left.push_back(pid);
    }
    if (left.empty()) break;
    if (std::chrono::steady_clock::now() >= until) {
      for (int pid : left) {
        found.push_back(fmt::format("process {} ({}) still there after 5 s, state {}", pid,
                                    read_text(fmt::format("/proc/{}/comm", pid)),
                                    doorbell::test::process_state(pid)));
        ::kill(pid, SIGKILL);
        int status;
        ::waitpid(pid, &status, 0);
      }
      break;
    }
    std::this_thread::sleep_for(10ms);
  }
  // Cgroups.
  // The partition scheduler's are doorbell-<its pid>-...: one whose owner
  // is alive is another test's, running beside this one. One whose owner
  // has just died is removed by its guardian moments later (a scheduler
  // SIGKILLed here, or by a crash test beside this one): left only when it
  // is still there 5 s on.
  const auto dead_owners = [&before] {
    std::vector<std::string> cgroups;
    for (const auto& c : doorbell::test::cgroups_with_prefix("doorbell-"))
      if (std::find(before.cgroups.begin(), before.cgroups.end(), c) == before.cgroups.end() &&
          !alive(std::atoi(fs::path(c).filename().string().c_str() + 9)))
        cgroups.push_back(c);
    return cgroups;
  };
  const auto guardians_by = std::chrono::steady_clock::now() + 5s;
  while (!dead_owners().empty() && std::chrono::steady_clock::now() < guardians_by)
    std::this_thread::sleep_for(10ms);
  for (const auto& c : dead_owners()) {
    found.push_back("cgroup " + c + " left");
    doorbell::test::remove_cgroups_with_prefix(fs::path(c).filename().string());
  }
  // Tracing instances (a guardian may take a moment: a second at most).
  bool ran_next = false;
  for (int round = 0; round < 100; ++round) {
    std::vector<std::string> left;
    for (const auto& name : doorbell_instances())
      if (!before.instances.count(name) && !alive(owner_of_instance(name))) left.push_back(name);
    if (left.empty()) {
      if (ran_next) *next_run_cleaned = true;
      break;
    }
    if (round == 98 && !next_run.empty() && !ran_next) {
      const auto r = doorbell::test::run_doorbell(next_run, {.timeout = 60s});
      if (!r.success()) found.push_back("the next run failed: " + r.describe());
      ran_next = true;
      round = 90;  // look again, a few times
      continue;
    }
    if (round == 99) {
      const std::string dir = doorbell::sys::tracefs::tracing_dir().path + "/instances/";
      for (const auto& name : left) {
        std::string enable = read_text(dir + name + "/events/enable");
        std::string on = read_text(dir + name + "/tracing_on");
        while (!enable.empty() && enable.back() == '\n') enable.pop_back();
        while (!on.empty() && on.back() == '\n') on.pop_back();
        found.push_back(fmt::format("tracing instance {} left (events/enable {}, tracing_on {})",
                                    name, enable, on));
        ::rmdir((dir + name).c_str());
      }
    }
    std::this_thread::sleep_for(20ms);
  }
  // BPF objects no process holds, new since the case began (the kernel
  // frees a dead process's programs after a grace period: retried).
  for (const char* kind : {"prog", "link"}) {
    const auto& was = std::string(kind) == "prog" ? before.progs : before.links;
    // Another process's programs being torn down meanwhile look the same
    // for a moment: only what stays unheld for 5 s counts.
    // A test beside this one that runs short traces (CliBattery.Trace) has
    // new ones unheld at every look: only an object unheld at each of the 50
    // looks is one this case left (seen: 4-11 programs reported, each only
    // for a moment, when the two tests ran side by side).
    std::map<long, int> unheld_looks;
    for (int round = 0; round < 50; ++round) {
      std::map<long, int> still;
      for (const auto& [id, held] : bpf_objects(kind))
        if (!held && !was.count(id)) still[id] = unheld_looks[id] + 1;
      unheld_looks = std::move(still);
      if (unheld_looks.empty()) break;
      if (round == 49)
        for (const auto& [id, looks] : unheld_looks)
          if (looks == 50) found.push_back(fmt::format("BPF {} {} held by no process", kind, id));
      std::this_thread::sleep_for(100ms);
    }
  }
  if (!(terminal_state() == before.terminal))
    found.push_back("the test's (the terminal's) signal mask or dispositions changed");
  return found;
}

// No temporary file of an atomic write left in dir (recursively).
std::vector<std::string> temporaries(const std::string& dir) {
  std::vector<std::string> left;
  std::error_code ec;
  for (auto it = fs::recursive_directory_iterator(dir, ec);
       !ec && it != fs::recursive_directory_iterator(); it.increment(ec)) {
    const std::string name = it->path().filename().string();
    if (name.find(".tmp") != std::string::npos || name.rfind(".", 0) == 0)
      left.push_back(it->path().string());
  }
  return left;
}

// ------------------------------------------------------------ the battery

struct Tally {
  int cases = 0;
  std::map<std::string, int> outcomes;  // "handled", "died of the signal", "finished first"
};

std::string make_case_dir() {
  char pattern[] = "/tmp/doorbell-interrupt-XXXXXX";
  const char* d = ::mkdtemp(pattern);
  if (d == nullptr) std::abort();
  return d;
}

// Runs one case; returns what was wrong (empty: nothing).
std::vector<std::string> run_case(const Run& run, int sig, Moment moment, Tally& tally) {
  const std::string tmp = make_case_dir();
  std::vector<std::string> args;
  for (const auto& a : run.args) args.push_back(fill(a, tmp));
  const Before before = before_case();
  auto program = doorbell::test::start_doorbell(args, {.timeout = 90s, .new_process_group = true});
  const pid_t pid = program.pid();
  const auto start = std::chrono::steady_clock::now();
  bool finished_first = false;
  auto ended = [&] {
    const char s = doorbell::test::process_state(pid);
    return s == 'Z' || s == '\0';
  };
  if (moment == Moment::startup) {
    std::this_thread::sleep_for(20ms);
  } else if (moment == Moment::mid_run && run.wait_for_child) {
    while (doorbell::test::children_of(pid).empty() && !ended() &&
           std::chrono::steady_clock::now() - start < 60s)
      std::this_thread::sleep_for(2ms);
    std::this_thread::sleep_for(run.mid);
  } else if (moment == Moment::mid_run) {
    std::this_thread::sleep_for(run.mid);
  } else {
    const std::string file = fill(run.written, tmp);
    while (::access(file.c_str(), F_OK) != 0 && !ended() &&
           std::chrono::steady_clock::now() - start < 60s)
      std::this_thread::sleep_for(1ms);
  }
  finished_first = ended();
  if (sig == SIGKILL)
    ::kill(pid, SIGKILL);
  else
    ::kill(-pid, sig);  // the whole group, as a terminal does
  const auto result = program.finish();
  std::vector<std::string> wrong;
  const std::string name = doorbell::signal_name(sig);
  const auto& st = result.status;
  const bool died_of_it = !st.exited() && st.signal() == sig;
  std::string outcome = died_of_it       ? "died of the signal"
                        : finished_first ? "finished first"
                                         : "handled";
  if (result.timed_out) wrong.push_back("did not end within 90 s of its start");
  // Past start-up, a command that handles the signal must not die of it,
  // unless it had done all its work (a signal in its last instants, after
  // its handler was removed: bench's report.html written, say).
  const bool handles = run.command != "report" && run.command != "guide";
  const bool all_done = run.command == "bench" ? fs::exists(tmp + "/out/report.html")
                                               : result.out.find("Advice:") != std::string::npos;
  if (sig != SIGKILL && died_of_it && handles && moment != Moment::startup && !all_done)
    wrong.push_back("died of " + name + " instead of stopping with its output");
  if (sig == SIGKILL) {
    // SIGKILL cannot be caught: an exit means it ended just before the kill.
    if (!died_of_it && !st.exited()) wrong.push_back("not killed by SIGKILL: " + result.describe());
  } else if (!died_of_it && !finished_first) {
    const int code = result.exit_code();
    const std::string& out = result.out;
    if (run.command == "bench") {
      if (code != 128 + sig)
        wrong.push_back(fmt::format("bench exit {} (want {})", code, 128 + sig));
      if (out.find("scenarios in") == std::string::npos)
        wrong.push_back("bench printed no table: " + out.substr(0, 400));
      const Json doc = Json::parse(read_text(tmp + "/out/results.json"), nullptr, false);
      if (!doc.is_object())
        wrong.push_back("bench wrote no results.json");
      else if (doc.contains("interrupted") && doc["interrupted"]["signal"] != name)
        wrong.push_back("results.json: interrupted by " + doc["interrupted"].dump());
    } else if (run.command == "inspect") {
      if (code != 128 + sig)
        wrong.push_back(fmt::format("inspect exit {} (want {}): {}", code, 128 + sig, result.err));
      if (out.find("interrupted by " + name) == std::string::npos ||
          out.find("Advice:") == std::string::npos)
        wrong.push_back("inspect --watch printed no verdict so far: " + out.substr(0, 400));
    } else if (run.command == "trace") {
      if (code != 0) wrong.push_back(fmt::format("trace exit {}: {}", code, result.err));
      std::string last;  // the last line
      std::istringstream lines(out);
      for (std::string line; std::getline(lines, line);)
        if (!line.empty()) last = line;
      const Json summary = Json::parse(last, nullptr, false);
      if (!summary.is_object() || summary.value("type", "") != "summary" ||
          summary.value("end", "") != "interrupted")
        wrong.push_back("trace printed no summary: ..." +
                        out.substr(out.size() > 400 ? out.size() - 400 : 0));
    } else if (run.command == "partition run") {
      if (code != 0) wrong.push_back(fmt::format("partition run exit {}: {}", code, result.err));
      if (out.find("partition") == std::string::npos)
        wrong.push_back("partition run printed no report: " + out.substr(0, 400));
    }
  }
  // A SIGKILL while a file is written leaves the hidden temporary file of
  // its atomic write (never a partial file under the final name): allowed
  // (docs/lab.md); any other end leaves none.
  if (sig != SIGKILL)
    for (const auto& t : temporaries(tmp)) wrong.push_back("temporary file left: " + t);
  bool next_run_cleaned = false;
  for (auto& w : leftovers(before, sig == SIGKILL ? run.next_run : std::vector<std::string>{},
                           &next_run_cleaned))
    wrong.push_back(std::move(w));
  if (next_run_cleaned) ++tally.outcomes["instance removed by the next run"];
  if (!wrong.empty()) wrong.insert(wrong.begin(), "stderr: " + result.err.substr(0, 600));
  ++tally.cases;
  ++tally.outcomes[outcome];
  std::error_code ec;
  fs::remove_all(tmp, ec);
  return wrong;
}

void run_battery(const std::string& command) {
  // Every orphan of the command comes to this process.
  ASSERT_EQ(::prctl(PR_SET_CHILD_SUBREAPER, 1), 0);
  std::vector<Moment> moments = {Moment::startup, Moment::mid_run};
  if (kSanitizer) moments = {Moment::mid_run};
  Tally tally;
  const auto start = std::chrono::steady_clock::now();
  for (const Run& run : runs_of(command)) {
    std::vector<Moment> these = moments;
    if (!run.written.empty()) these = {Moment::writing};
    // bench, one run per group: mid-run only, the signal rotating.
    const bool one_per_group = command == "bench" && run.written.empty();
    int rotate = static_cast<int>(tally.cases);
    for (Moment moment : these) {
      if (one_per_group && moment != Moment::mid_run) continue;
      for (int sig : {SIGINT, SIGTERM, SIGKILL}) {
        if (one_per_group && sig != std::vector<int>{SIGINT, SIGTERM, SIGKILL}[rotate % 3])
          continue;
        const auto wrong = run_case(run, sig, moment, tally);
        std::string text;
        for (const auto& w : wrong) text += "\n  " + w;
        EXPECT_TRUE(wrong.empty()) << run.label << " x " << doorbell::signal_name(sig) << " at "
                                   << moment_name(moment) << ":" << text;
      }
    }
  }
  // bench: the start-up moment once per signal, on the first run.
  if (command == "bench" && !kSanitizer) {
    const Run run = runs_of("bench").front();
    for (int sig : {SIGINT, SIGTERM, SIGKILL}) {
      const auto wrong = run_case(run, sig, Moment::startup, tally);
      std::string text;
      for (const auto& w : wrong) text += "\n  " + w;
      EXPECT_TRUE(wrong.empty()) << run.label << " x " << doorbell::signal_name(sig)
                                 << " at start-up:" << text;
    }
  }
  std::string outcomes;
  for (const auto& [what, n] : tally.outcomes) outcomes += fmt::format(", {} {}", n, what);
  std::cout << fmt::format(
      "InterruptBattery {}: {} cases in {:.1f} s{}{}\n", command, tally.cases,
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count(), outcomes,
      kSanitizer ? " (sanitizer build: mid-run moments only)" : "");
  EXPECT_GT(tally.cases, 0);
}

TEST(InterruptBattery, EveryCommandIsClassified) {
  const auto paths = command_paths();
  ASSERT_FALSE(paths.empty()) << "doorbell --dump-cli-tree failed";
  for (const auto& p : paths) {
    EXPECT_TRUE(kShort.count(p) || kLong.count(p))
        << "command '" << p << "': list it in tests/interrupt_battery_test.cpp as long-running "
        << "(with runs to interrupt) or short";
    if (kLong.count(p)) {
      EXPECT_FALSE(runs_of(p).empty()) << p;
    }
  }
}

TEST(InterruptBattery, Bench) {
  run_battery("bench");
}
TEST(InterruptBattery, Trace) {
  if (::geteuid() != 0) GTEST_SKIP() << "doorbell trace needs root";
  run_battery("trace");
}
TEST(InterruptBattery, Inspect) {
  run_battery("inspect");
}
TEST(InterruptBattery, PartitionRun) {
  if (::geteuid() != 0) GTEST_SKIP() << "partition run needs root here (SCHED_FIFO, cgroups)";
  run_battery("partition run");
}
TEST(InterruptBattery, ReportAndGuide) {
  run_battery("report");
  run_battery("guide");
}

}  // namespace
