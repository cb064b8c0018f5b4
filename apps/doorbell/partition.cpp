// doorbell partition: run an ARINC-653-style schedule file and measure every
// window (include/doorbell/partition.h, docs/partition.md).
//
//   doorbell partition run SCHEDULE.toml [--frames N | --duration S] [--json FILE]
//   doorbell partition check SCHEDULE.toml
//
// The schedule file and its errors: lab/partition/schedule_file.h. Every
// error names the file and line and exits 2.
#include <signal.h>

#include <CLI/CLI.hpp>
#include <cmath>
#include <cstdint>
#include <fstream>
#include <iostream>
#include <memory>
#include <nlohmann/json.hpp>

#include <fmt/format.h>

#include "apps/doorbell/command.h"
#include "apps/doorbell/options.h"
#include "doorbell/partition.h"
#include "doorbell/partition_ports.h"
#include "lab/common/output_file.h"
#include "lab/common/signal_scope.h"
#include "lab/partition/schedule_file.h"
#include "lab/partition/window_trace.h"

namespace doorbell::cli {
namespace {

using partition::Schedule;
using partition::ScheduleError;

// Loads and validates a schedule file; every problem is a UsageError
// "partition: FILE:LINE: message" (exit 2).
Schedule load(const std::string& path) {
  try {
    Schedule schedule = lab::load_schedule_file(path);
    lab::check_cpus_usable(schedule, path);
    return schedule;
  } catch (const lab::ScheduleFileError& e) {
    throw UsageError(std::string("partition: ") + e.what());
  }
}

partition::Scheduler* g_scheduler = nullptr;
volatile sig_atomic_t g_stop_signal = 0;

void on_stop_signal(int signo) {
  // Async-signal-safe: request_stop() writes an eventfd.
  g_stop_signal = signo;
  if (g_scheduler != nullptr) g_scheduler->request_stop();
}

// While the report is written: nothing to stop (see run_command).
void on_signal_while_writing(int) {}

std::string us(double ns) {
  return fmt::format("{:.1f}", ns / 1000.0);
}

// The per-window records in the JSON are capped: a run of hours has
// millions of windows (a 10-minute run wrote 37 MB). The summaries cover
// every window; "windows_omitted" says how many records were left out.
constexpr int64_t kDefaultMaxWindowRecords = 20'000;

nlohmann::json to_json(const Schedule& s, const partition::RunReport& r, const std::string& file,
                       int64_t max_window_records) {
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
  j["max_stop_lead_ns"] = s.max_stop_lead_ns;
  // Where first_run_ns / start delay / resume latency and cpu_after_end_ns
  // come from, and their resolution ("cpu-clock (tick-granular)": the tick).
  j["first_run"] = {{"source", r.first_run.source}, {"resolution_ns", r.first_run.resolution_ns}};
  j["cpu_after_end"] = {{"source", r.cpu_after_end.source},
                        {"resolution_ns", r.cpu_after_end.resolution_ns}};
  j["stopped"] = {{"source", r.stopped.source}, {"resolution_ns", r.stopped.resolution_ns}};
  j["boundary_spin_ns"] = r.boundary_spin_ns;
  j["max_handover_ns"] = r.max_handover_ns;
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
  // The health monitor (partition_health.h): each partition's table in
  // effect, the errors counted, and the events.
  auto& health = j["health"];
  auto& tables = health["tables"] = nlohmann::json::array();
  for (std::size_t i = 0; i < s.partitions.size(); ++i) {
    nlohmann::json t = {{"partition", s.partitions[i].name},
                        {"heartbeat_frames", partition::heartbeat_frames(s, i)}};
    for (std::size_t e = 0; e < partition::kHealthErrors; ++e) {
      const auto error = static_cast<partition::HealthError>(e);
      t[partition::health_error_name(error)] =
          partition::health_action_name(partition::health_action(s, i, error));
    }
    tables.push_back(t);
  }
  auto& counts = health["counts"] = nlohmann::json::object();
  for (std::size_t e = 0; e < partition::kHealthErrors; ++e)
    counts[partition::health_error_name(static_cast<partition::HealthError>(e))] =
        r.health_counts[e];
  health["events_dropped"] = r.health_events_dropped;
  health["restarts"] = r.restarts;
  auto& events = health["events"] = nlohmann::json::array();
  for (const auto& e : r.health_events)
    events.push_back({{"partition", s.partitions[e.partition].name},
                      {"error", partition::health_error_name(e.error)},
                      {"action", partition::health_action_name(e.action)},
                      {"frame", e.frame},
                      {"detected_ns", e.detected_ns},
                      {"fault_ns", e.fault_ns},
                      {"window_start_ns", e.window_start_ns},
                      {"pid", e.pid},
                      {"count", e.count},
                      {"code", e.code},
                      {"detail", e.detail},
                      {"restarted_ns", e.restarted_ns},
                      {"new_pid", e.new_pid}});
  auto& summaries = j["summaries"] = nlohmann::json::array();
  for (const auto& p : r.summaries) {
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
                         {"start_delay_p50_ns", p.start_delay_p50_ns},
                         {"start_delay_p99_ns", p.start_delay_p99_ns},
                         {"start_delay_max_ns", p.start_delay_max_ns},
                         {"first_run_source", r.first_run.source},
                         {"first_run_resolution_ns", r.first_run.resolution_ns},
                         {"wake_late_p99_ns", p.wake_late_p99_ns},
                         {"cpu_after_end_p99_ns", p.cpu_after_end_p99_ns},
                         {"cpu_after_end_max_ns", p.cpu_after_end_max_ns},
                         {"cpu_after_end_source", r.cpu_after_end.source},
                         {"cpu_after_end_resolution_ns", r.cpu_after_end.resolution_ns},
                         {"over_threshold", p.over_threshold},
                         {"over_threshold_percent", p.over_threshold_percent},
                         {"error_percent", p.error_percent},
                         {"error_p99_percent", p.error_p99_percent},
                         {"error_max_percent", p.error_max_percent},
                         {"stop_lead_p50_ns", p.stop_lead_p50_ns},
                         {"stop_lead_max_ns", p.stop_lead_max_ns},
                         {"given_up_percent", p.given_up_percent},
                         {"stolen_percent", p.stolen_percent},
                         {"never_stopped", p.never_stopped},
                         {"verify_failures", p.verify_failures}});
    // No window of it was measured (it never ran: the run stopped first):
    // its figures are unknown, not zero.
    auto& row = summaries.back();
    row["measured"] = p.windows > 0;
    if (p.windows == 0)
      for (auto it = row.begin(); it != row.end(); ++it)
        if (it->is_number_float()) *it = nullptr;
  }
  auto& records = j["windows"] = nlohmann::json::array();
  const std::size_t kept = std::min(
      r.windows.size(), static_cast<std::size_t>(std::max<int64_t>(0, max_window_records)));
  j["windows_omitted"] = r.windows.size() - kept;
  for (std::size_t i = 0; i < kept; ++i) {
    const auto& w = r.windows[i];
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
                       {"start_delay_ns", w.start_delay_ns()},
                       {"stop_lead_ns", w.stop_lead_ns},
                       {"given_up_ns", w.given_up_ns()},
                       {"stop_noticed_ns", w.stop_noticed_ns},
                       {"cpu_after_end_ns", w.cpu_after_end_ns},
                       {"never_stopped", w.never_stopped},
                       {"verified", w.verified},
                       {"checked", w.checked},
                       {"partition_gone", w.partition_gone}});
  }
  return j;
}

// A figure of the given source: "1.2" when exact, "~4000" (the tick) when
// only a tick-granular clock was available, so that no tick artifact is
// printed as a microsecond figure.
std::string us_from(double ns, const partition::FigureSource& source) {
  if (source.resolution_ns > 1000) return "~" + us(static_cast<double>(source.resolution_ns));
  return us(ns);
}

// The channels of `partition check`, one line each, and the port memory.
void print_channels(const Schedule& s) {
  if (s.channels.empty()) return;
  std::cout << fmt::format("{} channels, {} bytes of port memory (one memfd)\n", s.channels.size(),
                           partition::port_memory_size(s.channels));
  for (const auto& c : s.channels) {
    std::string to;
    for (const auto& d : c.destinations) to += (to.empty() ? "" : ", ") + d;
    if (c.kind == partition::PortKind::sampling)
      std::cout << fmt::format("  {}: sampling {} -> {}, {} bytes, refresh {} ms\n", c.name,
                               c.source, to, c.message_size, c.refresh_ns / 1e6);
    else
      std::cout << fmt::format("  {}: queuing {} -> {}, {} x {} bytes\n", c.name, c.source, to,
                               c.depth, c.message_size);
  }
}

void print_summary(const Schedule& s, const partition::RunReport& r) {
  std::cout << fmt::format(
      "method {}{}, scheduler {}, {} frames of {} ms, threshold {} us, max stop lead {} us, "
      "boundary spin {} us, max handover {} us{}\n",
      r.method, r.freezer_version.empty() ? "" : " (" + r.freezer_version + ")",
      r.fifo ? "SCHED_FIFO" : "not real-time", r.frames, s.major_frame_ns / 1e6,
      us(static_cast<double>(r.overrun_threshold_ns)), us(static_cast<double>(s.max_stop_lead_ns)),
      us(static_cast<double>(r.boundary_spin_ns)), us(static_cast<double>(r.max_handover_ns)),
      r.stopped_early ? " (stopped early)" : "");
  std::cout << fmt::format(
      "{:<12} {:>7} {:>9} {:>9} {:>9} {:>5} {:>7} {:>9} {:>9} {:>8} {:>7} {:>9} {:>9} {:>10}\n",
      "partition", "windows", "overrun50", "overrun99", "overrunmx", ">thr", "error%", "stop50",
      "stop99", "lead50", "gaveup%", "start50", "start99", "cpuafter99");
  for (const auto& p : r.summaries) {
    if (p.windows == 0) {
      // Zeros would read as a perfect result.
      std::cout << fmt::format("{:<12} {:>7}  not measured: no window of it completed\n",
                               p.partition, 0);
      continue;
    }
    std::cout << fmt::format(
        "{:<12} {:>7} {:>9} {:>9} {:>9} {:>5} {:>7.2f} {:>9} {:>9} {:>8} {:>7.2f} {:>9} {:>9} "
        "{:>10}\n",
        p.partition, p.windows, us(p.overrun_p50_ns), us(p.overrun_p99_ns), us(p.overrun_max_ns),
        p.over_threshold, p.error_percent, us(p.stop_latency_p50_ns), us(p.stop_latency_p99_ns),
        us(p.stop_lead_p50_ns), p.given_up_percent, us_from(p.start_delay_p50_ns, r.first_run),
        us_from(p.start_delay_p99_ns, r.first_run),
        us_from(p.cpu_after_end_p99_ns, r.cpu_after_end));
  }
  std::cout
      << "(times in us; overrun = every thread stopped - nominal window end; error% = mean\n"
         " scheduling error, overrun as a % of the window it invades; lead = stop lead used;\n"
         " gaveup% = window time the partition was already stopped before its end; start =\n"
         " first run - nominal window start; cpuafter = CPU time all its threads used after\n"
         " its window ended)\n";
  std::cout << fmt::format("stop times from {}\n", r.stopped.source);
  std::cout << fmt::format("start and cpuafter from {}{}\n", r.first_run.source,
                           r.first_run.resolution_ns > 1000
                               ? fmt::format(": resolution {} us, shown as ~resolution",
                                             us(static_cast<double>(r.first_run.resolution_ns)))
                               : "");
  for (const auto& p : r.summaries)
    if (p.never_stopped || p.verify_failures || p.unmeasured)
      std::cout << fmt::format(
          "{}: {} suspensions never completed, {} unmeasured, {} failed the "
          "/proc check\n",
          p.partition, p.never_stopped, p.unmeasured, p.verify_failures);
  for (const auto& e : r.exits)
    std::cout << fmt::format("partition {} {}\n", s.partitions[e.partition].name, e.reason);
  // The health monitor's events: the first kHealthLines, then a count.
  constexpr std::size_t kHealthLines = 20;
  for (std::size_t i = 0; i < r.health_events.size() && i < kHealthLines; ++i) {
    const auto& e = r.health_events[i];
    std::string when;
    if (e.fault_ns > 0)
      when =
          fmt::format(", detected {} us after the fault", us(double(e.detected_ns - e.fault_ns)));
    else if (e.window_start_ns > 0)
      when = fmt::format(", detected {} us after its window began",
                         us(double(e.detected_ns - e.window_start_ns)));
    std::string restarted;
    if (e.new_pid > 0)
      restarted = fmt::format(", restarted as pid {} {} us after detection", e.new_pid,
                              us(double(e.restarted_ns - e.detected_ns)));
    std::cout << fmt::format("health: partition {} {} ({}) in frame {}: {}{}{}\n",
                             s.partitions[e.partition].name, partition::health_error_name(e.error),
                             e.detail, e.frame, partition::health_action_name(e.action), when,
                             restarted);
  }
  const uint64_t more = r.health_events.size() > kHealthLines
                            ? r.health_events.size() - kHealthLines + r.health_events_dropped
                            : r.health_events_dropped;
  if (more > 0)
    std::cout << fmt::format("health: {} more events ({} not kept; the JSON has those kept)\n",
                             more, r.health_events_dropped);
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
  bool no_trace = false;
  int64_t max_stop_lead_us = -1;
  int64_t boundary_spin_us = -1;
  int64_t max_handover_us = -1;
  int64_t max_window_records = kDefaultMaxWindowRecords;
};

// The declared ranges (number_in); run_command checks them again for
// callers that bypass the parser.
constexpr double kMaxFrames = 1e12;
constexpr double kMaxDurationS = 1e9;
constexpr double kMaxThresholdUs = 1e9;

void run_command(const RunArgs& a) {
  Schedule s = load(a.file);
  // What the schedule will not meet, said before the run (and kept in the
  // JSON's warnings).
  const std::vector<std::string> schedule_warnings = partition::schedule_warnings(s);
  for (const auto& w : schedule_warnings) std::cerr << "doorbell partition: warning: " << w << "\n";
  if (!a.method.empty()) {
    const auto m = partition::parse_method(a.method);
    if (!m) throw UsageError("partition run: unknown --method '" + a.method + "'");
    s.method = *m;
  }
  if (!(a.threshold_us >= 0) || a.threshold_us > kMaxThresholdUs)
    throw UsageError("partition run: --threshold-us must be 0..1e9 microseconds");
  if (a.threshold_us > 0) s.overrun_threshold_ns = static_cast<int64_t>(a.threshold_us * 1000);
  if (a.frames < 0 || static_cast<double>(a.frames) > kMaxFrames)
    throw UsageError("partition run: --frames must be 1..1e12");
  if (!(a.duration_s >= 0) || a.duration_s > kMaxDurationS)
    throw UsageError("partition run: --duration must be a number of seconds up to 1e9");
  partition::RunOptions options;
  if (a.frames > 0) options.frames = a.frames;
  if (a.duration_s > 0) {
    // Whole frames, at least one: a duration shorter than one frame would
    // silently run the whole (perhaps very long) frame.
    const double frame_s = static_cast<double>(s.major_frame_ns) / 1e9;
    if (a.duration_s < frame_s)
      throw UsageError(fmt::format(
          "partition run: --duration {} s is shorter than one major frame ({} s), and the run "
          "goes by whole frames; give --frames 1 for one frame",
          short_number(a.duration_s), short_number(frame_s)));
    options.duration_ns = static_cast<int64_t>(a.duration_s * 1e9);
  }
  if (a.no_fifo) options.fifo_priority = 0;
  options.verify_stopped = !a.no_verify;
  if (a.max_stop_lead_us > 1'000'000 || a.max_stop_lead_us < -1)
    throw UsageError("partition run: --max-stop-lead-us must be 0..1000000");
  if (a.max_stop_lead_us >= 0) s.max_stop_lead_ns = a.max_stop_lead_us * 1000;
  if (a.boundary_spin_us >= 0) options.boundary_spin_ns = a.boundary_spin_us * 1000;
  if (a.max_handover_us >= 0) options.max_handover_ns = a.max_handover_us * 1000;
  // Where the report goes is checked before anything runs: a bad path must
  // not cost the run.
  if (!a.json.empty() && !is_stdout(a.json)) check_output_file("partition run", "--json", a.json);
  // Exact first-run and CPU-after-end figures from sched_switch where we may
  // trace (root); else the scheduler's tick-granular CPU-clock figures, which
  // the report marks as such.
  std::unique_ptr<lab::SchedSwitchWindows> trace;
  std::string why_no_trace = "--no-trace";
  if (!a.no_trace && lab::SchedSwitchWindows::available(&why_no_trace)) {
    trace = std::make_unique<lab::SchedSwitchWindows>();
    options.observer = trace.get();
  }

  partition::Scheduler scheduler(s);
  partition::RunReport report;
  {
    // Ctrl-C, SIGTERM and SIGHUP stop at the next boundary, with a report.
    // Flags 0 (no SA_RESTART), as this command has always installed them.
    g_scheduler = &scheduler;
    struct ClearTarget {
      ~ClearTarget() { g_scheduler = nullptr; }
    } clear_target;
    const lab::ScopedDisposition on_int(SIGINT, on_stop_signal, 0);
    const lab::ScopedDisposition on_term(SIGTERM, on_stop_signal, 0);
    const lab::ScopedDisposition on_hup(SIGHUP, on_stop_signal, 0);
    try {
      report = scheduler.run(options);
    } catch (const ScheduleError& e) {
      throw UsageError(fmt::format("partition: {}:{}: {}", a.file, e.line(), e.message()));
    }
  }
  // The run is over: a Ctrl-C, SIGTERM or SIGHUP while the report is
  // written (a write to stdout waiting on a slow reader) lets it finish; the
  // report already says how the run ended.
  const lab::ScopedDisposition writing_int(SIGINT, on_signal_while_writing, SA_RESTART);
  const lab::ScopedDisposition writing_term(SIGTERM, on_signal_while_writing, SA_RESTART);
  const lab::ScopedDisposition writing_hup(SIGHUP, on_signal_while_writing, SA_RESTART);
  if (!trace)
    report.warnings.push_back("no sched_switch trace (" + why_no_trace +
                              "): first run and CPU after end are tick-granular");
  for (const auto& w : report.warnings) std::cerr << "doorbell partition: warning: " << w << "\n";
  report.warnings.insert(report.warnings.begin(), schedule_warnings.begin(),
                         schedule_warnings.end());
  // The JSON first (stdout, or a file written atomically); a file that
  // cannot be written costs neither the summary nor the exit status's
  // meaning: it is said, and the command exits 1.
  std::string json_error;
  if (!a.json.empty()) {
    try {
      const std::string text = to_json(s, report, a.file, a.max_window_records)
                                   .dump(1, ' ', false, nlohmann::json::error_handler_t::replace) +
                               "\n";
      if (is_stdout(a.json))
        std::cout << text << std::flush;
      else
        lab::write_file_atomically(a.json, text);
    } catch (const std::exception& e) {
      json_error = e.what();
    }
  }
  if (is_stdout(a.json)) {
    // Stdout carries the JSON alone; the summary goes to stderr (command.h).
    const StdoutToStderr summary_to_stderr;
    print_summary(s, report);
  } else {
    print_summary(s, report);
  }
  std::cout.flush();
  if (!json_error.empty()) {
    std::cerr << "doorbell partition run: the report was not written (" << json_error
              << "); the summary above is all there is\n";
    set_exit_code(1);
  }
  // Ended by a partition's exit (on_partition_exit = "stop"), not by its
  // frames, its duration or Ctrl-C: the schedule did not run as asked.
  if (report.stopped_early && g_stop_signal == 0 && !report.exits.empty() &&
      s.on_partition_exit == partition::OnPartitionExit::stop_schedule) {
    const auto& e = report.exits.front();
    std::cerr << fmt::format(
        "doorbell partition run: the schedule stopped after {} of its frames: partition {} {} "
        "(on_partition_exit = \"stop\")\n",
        report.frames, s.partitions[e.partition].name, e.reason);
    set_exit_code(1);
  } else if (report.stopped_early && g_stop_signal == 0) {
    // Ended by the health monitor's stop_schedule.
    for (const auto& e : report.health_events)
      if (e.action == partition::HealthAction::stop_schedule) {
        std::cerr << fmt::format(
            "doorbell partition run: the schedule stopped after {} of its frames: partition {} "
            "{} ({}; health action stop_schedule)\n",
            report.frames, s.partitions[e.partition].name, partition::health_error_name(e.error),
            e.detail);
        set_exit_code(1);
        break;
      }
  }
}

const CommandRegistrar kPartition{
    "partition", 60, [](CLI::App& app) {
      auto* cmd = app.add_subcommand("partition",
                                     "ARINC-653-style time partitions for processes, every window "
                                     "measured");
      cmd->require_subcommand(1);

      static RunArgs run_args;
      auto* run = cmd->add_subcommand("run", "Run a schedule file (Ctrl-C stops cleanly)");
      run->add_option("schedule", run_args.file, "SCHEDULE.toml")
          ->required()
          ->type_name("FILE")
          ->check(nonempty_path());
      auto* frames = run->add_option("--frames", run_args.frames, "Stop after N major frames")
                         ->check(number_in(1, kMaxFrames));
      run->add_option("--duration", run_args.duration_s,
                      "Stop after this many seconds (whole frames, at least one)")
          ->check(number_in(0.01, kMaxDurationS))
          ->excludes(frames);
      run->add_option("--json", run_args.json,
                      "Write the report as JSON to FILE; '-': to stdout, and the summary to stderr")
          ->type_name("OUTFILE|-")
          ->check(nonempty_path());
      run->add_option("--method", run_args.method, "Override the schedule's method")
          ->check(CLI::IsMember({"sigstop", "sigstop-all-threads", "freezer"}));
      run->add_option("--threshold-us", run_args.threshold_us,
                      "Override the overrun threshold (microseconds; 0: the schedule's)")
          ->check(number_in(0, kMaxThresholdUs));
      run->add_flag("--no-fifo", run_args.no_fifo, "Do not ask for SCHED_FIFO");
      run->add_flag("--no-trace", run_args.no_trace,
                    "Do not trace sched_switch (first run and CPU after end then come from "
                    "the tick-granular CPU clock)");
      run->add_option("--max-stop-lead-us", run_args.max_stop_lead_us,
                      "Override the schedule's max_stop_lead_us (0: no stop lead)")
          ->check(number_in(0, 1'000'000));
      run->add_option("--boundary-spin-us", run_args.boundary_spin_us,
                      "Sleep until this long before each boundary and spin the rest "
                      "(default 200; 0: sleep until the boundary)")
          ->check(number_in(0, 100'000));
      run->add_option("--max-handover-us", run_args.max_handover_us,
                      "Resume the incoming partition once the outgoing one is stopped, or this "
                      "long after the boundary at the latest (default 1000; 0: at once)")
          ->check(number_in(0, 1'000'000));
      run->add_option("--max-window-records", run_args.max_window_records,
                      "Write at most N per-window records to the JSON (the first N; the "
                      "summaries cover every window; default 20000)")
          ->check(number_in(0, 1'000'000'000));
      run->add_flag("--no-verify", run_args.no_verify,
                    "Skip the /proc check that every thread is in state T");
      run->callback([] { run_command(run_args); });

      static std::string check_file;
      auto* check = cmd->add_subcommand("check", "Validate a schedule file and print it");
      check->add_option("schedule", check_file, "SCHEDULE.toml")
          ->required()
          ->type_name("FILE")
          ->check(nonempty_path());
      check->callback([] {
        const Schedule s = load(check_file);
        for (const auto& w : partition::schedule_warnings(s))
          std::cerr << "doorbell partition: warning: " << w << "\n";
        std::cout << fmt::format("{}: major frame {} ms, method {}, {} partitions, {} windows\n",
                                 check_file, s.major_frame_ns / 1e6,
                                 partition::method_name(s.method), s.partitions.size(),
                                 s.windows.size());
        for (const auto& w : s.windows)
          std::cout << fmt::format("  [{:>10.3f}, {:>10.3f}) ms  {}\n", w.offset_ns / 1e6,
                                   (w.offset_ns + w.duration_ns) / 1e6, w.partition);
        print_channels(s);
        // The health table in effect, per partition (partition_health.h).
        for (std::size_t i = 0; i < s.partitions.size(); ++i) {
          std::string line = "  health " + s.partitions[i].name + ":";
          for (std::size_t e = 0; e < partition::kHealthErrors; ++e) {
            const auto error = static_cast<partition::HealthError>(e);
            line +=
                fmt::format(" {}={}", partition::health_error_name(error),
                            partition::health_action_name(partition::health_action(s, i, error)));
          }
          const int64_t k = partition::heartbeat_frames(s, i);
          line += k > 0 ? fmt::format(" heartbeat_frames={}", k) : " heartbeat off";
          std::cout << line << "\n";
        }
      });
    }};

}  // namespace
}  // namespace doorbell::cli
