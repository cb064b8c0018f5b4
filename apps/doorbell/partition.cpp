// doorbell partition: run an ARINC-653-style schedule file and measure every
// window (include/doorbell/partition.h, docs/partition.md).
//
//   doorbell partition run SCHEDULE.toml [--frames N | --duration S] [--json FILE]
//   doorbell partition check SCHEDULE.toml
//
// The schedule file (examples/schedules/*.toml):
//
//   major_frame_ms = 20
//   method = "freezer"            # sigstop | sigstop-all-threads | freezer
//   freezer = "auto"              # auto | v2 | v1
//   on_partition_exit = "continue"  # continue | stop
//   on_scheduler_exit = "kill"    # kill | resume
//   overrun_threshold_ms = 1
//   [[partition]]
//   name = "A"
//   command = ["stress-ng", "--cpu", "8"]
//   cpus = [0, 1]                 # optional
//   env = { OMP_NUM_THREADS = "8" }  # optional
//   nice = -5                     # optional
//   [[window]]
//   partition = "A"
//   offset_ms = 0
//   duration_ms = 10
//
// Every error names the file and line.
#include <signal.h>

#include <toml++/toml.h>
#include <CLI/CLI.hpp>
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <fstream>
#include <iostream>
#include <limits>
#include <nlohmann/json.hpp>
#include <set>

#include <fmt/format.h>

#include "apps/doorbell/command.h"
#include "doorbell/partition.h"

namespace doorbell::cli {
namespace {

using partition::Schedule;
using partition::ScheduleError;

int line_of(const toml::node& node) {
  return static_cast<int>(node.source().begin.line);
}

// A duration given in milliseconds (integer or float) as whole nanoseconds.
int64_t duration_ns(const toml::node& node, const std::string& key) {
  double ms;
  if (const auto* i = node.as_integer()) {
    ms = static_cast<double>(i->get());
  } else if (const auto* f = node.as_floating_point()) {
    ms = f->get();
  } else {
    throw ScheduleError(line_of(node), key + " must be a number of milliseconds");
  }
  const double ns = ms * 1e6;
  if (!std::isfinite(ns) || std::fabs(ns) > 9.2e18)
    throw ScheduleError(line_of(node), key + " = " + fmt::format("{}", ms) +
                                           " ms is not representable in 64-bit nanoseconds");
  if (std::fabs(ns - std::round(ns)) > 1e-3)
    throw ScheduleError(line_of(node), key + " = " + fmt::format("{}", ms) +
                                           " ms is not a whole number of nanoseconds");
  return static_cast<int64_t>(std::llround(ns));
}

std::string string_of(const toml::node& node, const std::string& key) {
  const auto* s = node.as_string();
  if (s == nullptr) throw ScheduleError(line_of(node), key + " must be a string");
  return s->get();
}

void reject_unknown(const toml::table& table, const std::set<std::string>& known,
                    const std::string& where) {
  for (auto&& [key, node] : table)
    if (!known.count(std::string(key.str())))
      throw ScheduleError(static_cast<int>(key.source().begin.line),
                          "unknown key '" + std::string(key.str()) + "' in " + where);
}

const toml::array& array_of_tables(const toml::table& root, const char* key) {
  static const toml::array empty;
  const toml::node* node = root.get(key);
  if (node == nullptr) return empty;
  const auto* array = node->as_array();
  if (array == nullptr || !array->is_array_of_tables())
    throw ScheduleError(line_of(*node),
                        std::string(key) + " must be an array of tables ([[" + key + "]])");
  return *array;
}

Schedule parse_schedule(const toml::table& root) {
  Schedule s;
  reject_unknown(root,
                 {"major_frame_ms", "method", "freezer", "on_partition_exit", "on_scheduler_exit",
                  "overrun_threshold_ms", "partition", "window"},
                 "the schedule");
  const toml::node* frame = root.get("major_frame_ms");
  if (frame == nullptr) throw ScheduleError(1, "major_frame_ms is missing");
  s.major_frame_ns = duration_ns(*frame, "major_frame_ms");
  s.major_frame_line = line_of(*frame);
  if (const toml::node* n = root.get("method")) {
    const std::string name = string_of(*n, "method");
    const auto method = partition::parse_method(name);
    if (!method)
      throw ScheduleError(line_of(*n),
                          "unknown method '" + name + "' (sigstop, sigstop-all-threads, freezer)");
    s.method = *method;
  }
  if (const toml::node* n = root.get("freezer")) {
    const std::string name = string_of(*n, "freezer");
    if (name == "auto")
      s.freezer.preference = FreezerPreference::automatic;
    else if (name == "v2")
      s.freezer.preference = FreezerPreference::v2_only;
    else if (name == "v1")
      s.freezer.preference = FreezerPreference::v1_only;
    else
      throw ScheduleError(line_of(*n), "freezer must be auto, v2 or v1, not '" + name + "'");
  }
  if (const toml::node* n = root.get("on_partition_exit")) {
    const std::string name = string_of(*n, "on_partition_exit");
    if (name == "continue")
      s.on_partition_exit = partition::OnPartitionExit::continue_schedule;
    else if (name == "stop")
      s.on_partition_exit = partition::OnPartitionExit::stop_schedule;
    else
      throw ScheduleError(line_of(*n), "on_partition_exit must be continue or stop");
  }
  if (const toml::node* n = root.get("on_scheduler_exit")) {
    const std::string name = string_of(*n, "on_scheduler_exit");
    if (name == "kill")
      s.on_scheduler_exit = partition::OnSchedulerExit::kill;
    else if (name == "resume")
      s.on_scheduler_exit = partition::OnSchedulerExit::resume;
    else
      throw ScheduleError(line_of(*n), "on_scheduler_exit must be kill or resume");
  }
  if (const toml::node* n = root.get("overrun_threshold_ms"))
    s.overrun_threshold_ns = duration_ns(*n, "overrun_threshold_ms");

  for (const toml::node& node : array_of_tables(root, "partition")) {
    const toml::table& t = *node.as_table();
    reject_unknown(t, {"name", "command", "cpus", "env", "nice"}, "a [[partition]]");
    partition::PartitionSpec p;
    p.line = line_of(node);
    const toml::node* name = t.get("name");
    if (name == nullptr) throw ScheduleError(p.line, "partition has no name");
    p.name = string_of(*name, "name");
    if (const toml::node* command = t.get("command")) {
      if (const auto* array = command->as_array()) {
        for (const toml::node& arg : *array) p.command.push_back(string_of(arg, "command"));
      } else {
        p.command.push_back(string_of(*command, "command"));
      }
    }
    if (p.command.empty() || p.command[0].empty())
      throw ScheduleError(p.line, "partition '" + p.name + "' has no command");
    if (const toml::node* cpus = t.get("cpus")) {
      const auto* array = cpus->as_array();
      if (array == nullptr)
        throw ScheduleError(line_of(*cpus), "cpus must be an array of integers");
      for (const toml::node& cpu : *array) {
        const auto* i = cpu.as_integer();
        if (i == nullptr) throw ScheduleError(line_of(cpu), "cpus must be an array of integers");
        if (i->get() < 0 || i->get() >= 1024)
          throw ScheduleError(line_of(cpu), "CPU " + std::to_string(i->get()) + " is out of range");
        p.cpus.push_back(static_cast<int>(i->get()));
      }
    }
    if (const toml::node* nice = t.get("nice")) {
      const auto* i = nice->as_integer();
      if (i == nullptr) throw ScheduleError(line_of(*nice), "nice must be an integer -20..19");
      p.nice = static_cast<int>(std::clamp<int64_t>(i->get(), -1000, 1000));
    }
    if (const toml::node* env = t.get("env")) {
      const auto* table = env->as_table();
      if (table == nullptr) throw ScheduleError(line_of(*env), "env must be a table of strings");
      for (auto&& [key, value] : *table)
        p.environment.emplace_back(std::string(key.str()), string_of(value, "env value"));
    }
    s.partitions.push_back(std::move(p));
  }
  for (const toml::node& node : array_of_tables(root, "window")) {
    const toml::table& t = *node.as_table();
    reject_unknown(t, {"partition", "offset_ms", "duration_ms"}, "a [[window]]");
    partition::WindowSpec w;
    w.line = line_of(node);
    const toml::node* name = t.get("partition");
    if (name == nullptr) throw ScheduleError(w.line, "window names no partition");
    w.partition = string_of(*name, "partition");
    const toml::node* offset = t.get("offset_ms");
    const toml::node* duration = t.get("duration_ms");
    if (offset == nullptr) throw ScheduleError(w.line, "window has no offset_ms");
    if (duration == nullptr) throw ScheduleError(w.line, "window has no duration_ms");
    w.offset_ns = duration_ns(*offset, "offset_ms");
    w.duration_ns = duration_ns(*duration, "duration_ms");
    s.windows.push_back(std::move(w));
  }
  partition::validate(s);
  return s;
}

// Loads and validates a schedule file; every problem is a UsageError
// "FILE:LINE: message" (exit 2).
Schedule load(const std::string& path) {
  std::ifstream probe(path);
  if (!probe) throw UsageError("partition: cannot read schedule file '" + path + "'");
  try {
    return parse_schedule(toml::parse_file(path));
  } catch (const toml::parse_error& e) {
    throw UsageError(fmt::format("partition: {}:{}: {}", path, e.source().begin.line,
                                 std::string(e.description())));
  } catch (const ScheduleError& e) {
    throw UsageError(e.line() > 0 ? fmt::format("partition: {}:{}: {}", path, e.line(), e.message())
                                  : fmt::format("partition: {}: {}", path, e.message()));
  }
}

partition::Scheduler* g_scheduler = nullptr;

void on_stop_signal(int) {
  // Async-signal-safe: request_stop() writes an eventfd.
  if (g_scheduler != nullptr) g_scheduler->request_stop();
}

std::string us(double ns) {
  return fmt::format("{:.1f}", ns / 1000.0);
}

nlohmann::json to_json(const Schedule& s, const partition::RunReport& r, const std::string& file) {
  nlohmann::json j;
  j["schedule_file"] = file;
  j["major_frame_ns"] = s.major_frame_ns;
  j["method"] = r.method;
  j["freezer_version"] = r.freezer_version;
  j["scheduler_fifo"] = r.fifo;
  j["overrun_threshold_ns"] = r.overrun_threshold_ns;
  j["start_ns"] = r.start_ns;
  j["frames"] = r.frames;
  j["stopped_early"] = r.stopped_early;
  j["verify_stopped"] = r.verify_stopped;
  j["warnings"] = r.warnings;
  j["clock"] = "CLOCK_MONOTONIC";
  auto& parts = j["partitions"] = nlohmann::json::array();
  for (std::size_t i = 0; i < s.partitions.size(); ++i)
    parts.push_back({{"name", s.partitions[i].name},
                     {"command", s.partitions[i].command},
                     {"pid", i < r.pids.size() ? r.pids[i] : 0}});
  auto& windows = j["schedule_windows"] = nlohmann::json::array();
  for (const auto& w : s.windows)
    windows.push_back(
        {{"partition", w.partition}, {"offset_ns", w.offset_ns}, {"duration_ns", w.duration_ns}});
  auto& exits = j["exits"] = nlohmann::json::array();
  for (const auto& e : r.exits)
    exits.push_back({{"partition", s.partitions[e.partition].name},
                     {"time_ns", e.time_ns},
                     {"reason", e.reason}});
  auto& summaries = j["summaries"] = nlohmann::json::array();
  for (const auto& p : r.summaries)
    summaries.push_back({{"partition", p.partition},
                         {"method", p.method},
                         {"windows", p.windows},
                         {"unmeasured", p.unmeasured},
                         {"overrun_p50_ns", p.overrun_p50_ns},
                         {"overrun_p99_ns", p.overrun_p99_ns},
                         {"overrun_max_ns", p.overrun_max_ns},
                         {"stop_latency_p50_ns", p.stop_latency_p50_ns},
                         {"stop_latency_p99_ns", p.stop_latency_p99_ns},
                         {"stop_latency_max_ns", p.stop_latency_max_ns},
                         {"resume_latency_p50_ns", p.resume_latency_p50_ns},
                         {"resume_latency_p99_ns", p.resume_latency_p99_ns},
                         {"wake_late_p99_ns", p.wake_late_p99_ns},
                         {"cpu_after_end_p99_ns", p.cpu_after_end_p99_ns},
                         {"cpu_after_end_max_ns", p.cpu_after_end_max_ns},
                         {"over_threshold", p.over_threshold},
                         {"error_percent", p.error_percent},
                         {"stolen_percent", p.stolen_percent},
                         {"never_stopped", p.never_stopped},
                         {"verify_failures", p.verify_failures}});
  auto& records = j["windows"] = nlohmann::json::array();
  for (const auto& w : r.windows)
    records.push_back({{"frame", w.frame},
                       {"window", w.window},
                       {"partition", s.partitions[w.partition].name},
                       {"nominal_start_ns", w.nominal_start_ns},
                       {"nominal_end_ns", w.nominal_end_ns},
                       {"resume_requested_ns", w.resume_requested_ns},
                       {"first_run_ns", w.first_run_ns},
                       {"suspend_requested_ns", w.suspend_requested_ns},
                       {"stopped_ns", w.stopped_ns},
                       {"overrun_ns", w.overrun_ns()},
                       {"stop_latency_ns", w.stop_latency_ns()},
                       {"resume_latency_ns", w.resume_latency_ns()},
                       {"cpu_after_end_ns", w.cpu_after_end_ns},
                       {"never_stopped", w.never_stopped},
                       {"verified", w.verified},
                       {"partition_gone", w.partition_gone}});
  return j;
}

void print_summary(const Schedule& s, const partition::RunReport& r) {
  std::cout << fmt::format(
      "method {}{}, scheduler {}, {} frames of {} ms, threshold {} us{}\n", r.method,
      r.freezer_version.empty() ? "" : " (" + r.freezer_version + ")",
      r.fifo ? "SCHED_FIFO" : "not real-time", r.frames, s.major_frame_ns / 1e6,
      us(static_cast<double>(r.overrun_threshold_ns)), r.stopped_early ? " (stopped early)" : "");
  std::cout << fmt::format(
      "{:<16} {:>7} {:>10} {:>10} {:>10} {:>6} {:>7} {:>10} {:>10} {:>10} {:>10}\n", "partition",
      "windows", "overrun50", "overrun99", "overrunmax", ">thr", "error%", "stop50", "stop99",
      "resume50", "cpuafter99");
  for (const auto& p : r.summaries)
    std::cout << fmt::format(
        "{:<16} {:>7} {:>10} {:>10} {:>10} {:>6} {:>7.2f} {:>10} {:>10} {:>10} {:>10}\n",
        p.partition, p.windows, us(p.overrun_p50_ns), us(p.overrun_p99_ns), us(p.overrun_max_ns),
        p.over_threshold, p.error_percent, us(p.stop_latency_p50_ns), us(p.stop_latency_p99_ns),
        us(p.resume_latency_p50_ns), us(p.cpu_after_end_p99_ns));
  std::cout << "(times in us; overrun = every thread stopped - nominal window end; cpuafter = CPU\n"
               " time the partition used after its window ended, all threads)\n";
  for (const auto& p : r.summaries)
    if (p.never_stopped || p.verify_failures || p.unmeasured)
      std::cout << fmt::format(
          "{}: {} suspensions never completed, {} unmeasured, {} failed the "
          "/proc check\n",
          p.partition, p.never_stopped, p.unmeasured, p.verify_failures);
  for (const auto& e : r.exits)
    std::cout << fmt::format("partition {} {}\n", s.partitions[e.partition].name, e.reason);
}

struct RunArgs {
  std::string file;
  int64_t frames = 0;
  double duration_s = 0;
  std::string json;
  std::string method;
  double threshold_us = 0;
  bool no_fifo = false;
  bool no_verify = false;
};

void run_command(const RunArgs& a) {
  Schedule s = load(a.file);
  if (!a.method.empty()) {
    const auto m = partition::parse_method(a.method);
    if (!m) throw UsageError("partition run: unknown --method '" + a.method + "'");
    s.method = *m;
  }
  if (a.threshold_us < 0) throw UsageError("partition run: --threshold-us must be positive");
  if (a.threshold_us > 0) s.overrun_threshold_ns = static_cast<int64_t>(a.threshold_us * 1000);
  if (a.frames < 0) throw UsageError("partition run: --frames must be positive");
  if (a.duration_s < 0 || !std::isfinite(a.duration_s) || a.duration_s > 1e9)
    throw UsageError("partition run: --duration must be a positive number of seconds");
  partition::RunOptions options;
  if (a.frames > 0) options.frames = a.frames;
  if (a.duration_s > 0) options.duration_ns = static_cast<int64_t>(a.duration_s * 1e9);
  if (a.no_fifo) options.fifo_priority = 0;
  options.verify_stopped = !a.no_verify;

  partition::Scheduler scheduler(s);
  g_scheduler = &scheduler;
  struct sigaction action {
  }, old_int{}, old_term{}, old_hup{};
  action.sa_handler = on_stop_signal;
  sigemptyset(&action.sa_mask);
  sigaction(SIGINT, &action, &old_int);
  sigaction(SIGTERM, &action, &old_term);
  sigaction(SIGHUP, &action, &old_hup);
  partition::RunReport report;
  try {
    report = scheduler.run(options);
  } catch (const ScheduleError& e) {
    sigaction(SIGINT, &old_int, nullptr);
    sigaction(SIGTERM, &old_term, nullptr);
    sigaction(SIGHUP, &old_hup, nullptr);
    g_scheduler = nullptr;
    throw UsageError(fmt::format("partition: {}:{}: {}", a.file, e.line(), e.message()));
  } catch (...) {
    sigaction(SIGINT, &old_int, nullptr);
    sigaction(SIGTERM, &old_term, nullptr);
    sigaction(SIGHUP, &old_hup, nullptr);
    g_scheduler = nullptr;
    throw;
  }
  sigaction(SIGINT, &old_int, nullptr);
  sigaction(SIGTERM, &old_term, nullptr);
  sigaction(SIGHUP, &old_hup, nullptr);
  g_scheduler = nullptr;
  for (const auto& w : report.warnings) std::cerr << "doorbell partition: warning: " << w << "\n";
  if (!a.json.empty()) {
    const std::string text = to_json(s, report, a.file).dump(1) + "\n";
    if (a.json == "-") {
      std::cout << text;
    } else {
      std::ofstream out(a.json);
      if (!out) throw std::runtime_error("cannot write " + a.json);
      out << text;
    }
  }
  if (a.json != "-") print_summary(s, report);
}

const CommandRegistrar kPartition{
    "partition", 60, [](CLI::App& app) {
      auto* cmd = app.add_subcommand("partition",
                                     "ARINC-653-style time partitions for processes, every window "
                                     "measured");
      cmd->require_subcommand(1);

      static RunArgs run_args;
      auto* run = cmd->add_subcommand("run", "Run a schedule file (Ctrl-C stops cleanly)");
      run->add_option("schedule", run_args.file, "SCHEDULE.toml")->required();
      auto* frames = run->add_option("--frames", run_args.frames, "Stop after N major frames");
      run->add_option("--duration", run_args.duration_s,
                      "Stop after this many seconds (whole frames)")
          ->excludes(frames);
      run->add_option("--json", run_args.json, "Write the report as JSON to FILE ('-': stdout)");
      run->add_option("--method", run_args.method,
                      "Override the schedule's method: sigstop, sigstop-all-threads, freezer");
      run->add_option("--threshold-us", run_args.threshold_us,
                      "Override the overrun threshold (microseconds)");
      run->add_flag("--no-fifo", run_args.no_fifo, "Do not ask for SCHED_FIFO");
      run->add_flag("--no-verify", run_args.no_verify,
                    "Skip the /proc check that every thread is in state T");
      run->callback([] { run_command(run_args); });

      static std::string check_file;
      auto* check = cmd->add_subcommand("check", "Validate a schedule file and print it");
      check->add_option("schedule", check_file, "SCHEDULE.toml")->required();
      check->callback([] {
        const Schedule s = load(check_file);
        std::cout << fmt::format("{}: major frame {} ms, method {}, {} partitions, {} windows\n",
                                 check_file, s.major_frame_ns / 1e6,
                                 partition::method_name(s.method), s.partitions.size(),
                                 s.windows.size());
        for (const auto& w : s.windows)
          std::cout << fmt::format("  [{:>10.3f}, {:>10.3f}) ms  {}\n", w.offset_ns / 1e6,
                                   (w.offset_ns + w.duration_ns) / 1e6, w.partition);
      });
    }};

}  // namespace
}  // namespace doorbell::cli
