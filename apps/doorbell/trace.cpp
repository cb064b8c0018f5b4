// doorbell trace: who receives how many signals, live, from the kernel's
// signal tracepoints. The command: its flags, the loop that reads and
// refreshes, and the output. The tracepoints are read by
// lab/trace/signal_tracing.h through the one tracefs binding (src/sys/
// tracefs.h); the counting is lab/trace/tracker.h; --measure-overhead is
// lab/trace/overhead.h. See docs/trace.md.
//
// What it does to the system, and how it undoes it:
//  - It never changes the system's mount table: it uses tracefs where it is
//    mounted, or mounts it privately (sys/tracefs.h says how).
//  - It creates a tracing instance "doorbell-trace-<pid>" with its own ring
//    buffer, enables the two signal events there only (the top-level
//    instance and other tools' instances are untouched), and on exit
//    (normal, --duration, SIGINT, SIGTERM, SIGHUP, SIGPIPE) disables them and
//    removes the instance. An instance left by a doorbell that was SIGKILLed
//    is removed by the next one.
#include <signal.h>
#include <unistd.h>
#include <CLI/CLI.hpp>

#include <algorithm>
#include <atomic>
#include <iostream>
#include <memory>
#include <optional>
#include <sstream>
#include <string>
#include <vector>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "apps/doorbell/command.h"
#include "apps/doorbell/options.h"
#include "lab/common/signal_scope.h"
#include "lab/common/time.h"
#include "lab/harness/clock.h"
#include "lab/trace/overhead.h"
#include "lab/trace/signal_tracing.h"
#include "lab/trace/tracker.h"
#include "sys/tracefs.h"

namespace doorbell::cli {
namespace {

namespace trace = lab::trace;
namespace tracefs = sys::tracefs;

// Process names are any bytes: JSON gets U+FFFD for what is not UTF-8.
constexpr auto kUtf8Replace = nlohmann::json::error_handler_t::replace;

// ------------------------------------------------------------ stop request

std::atomic<int> g_stop_signal{0};

extern "C" void on_stop_signal(int signo) {
  // Only an atomic store: async-signal-safe.
  g_stop_signal.store(signo, std::memory_order_relaxed);
}

// The stop handler for SIGINT, SIGTERM, SIGHUP and SIGPIPE (a reader such as
// `head` that goes away must not kill us before the instance is removed);
// the previous dispositions come back when it is destroyed.
class StopSignals {
 public:
  StopSignals()
      : int_(SIGINT, on_stop_signal, 0),
        term_(SIGTERM, on_stop_signal, 0),
        hup_(SIGHUP, on_stop_signal, 0),
        pipe_(SIGPIPE, on_stop_signal, 0) {}

 private:
  lab::ScopedDisposition int_, term_, hup_, pipe_;
};

bool stop_requested() {
  return g_stop_signal.load(std::memory_order_relaxed) != 0;
}

bool process_alive(pid_t pid) {
  return ::kill(pid, 0) == 0 || errno == EPERM;
}

// Makes tracefs reachable (sys/tracefs.h's policy); a refusal is a usage
// error (exit 2) with the binding's reason.
void ensure_tracefs(std::ostream& log) {
  try {
    if (tracefs::tracing_dir().private_mount)
      log << "doorbell trace: tracefs was not mounted; mounted it privately (outside the "
             "system's mount namespace: the system's mounts are unchanged)\n";
  } catch (const tracefs::TracefsError& e) {
    throw UsageError(std::string("trace: ") + e.what());
  }
}

std::unique_ptr<trace::SignalTracing> start_tracing(std::ostream& log) {
  std::unique_ptr<trace::SignalTracing> tracing;
  try {
    tracing = std::make_unique<trace::SignalTracing>();
  } catch (const tracefs::TracefsError& e) {
    throw UsageError(std::string("trace: ") + e.what());
  }
  for (const std::string& name : tracing->removed_stale())
    log << "doorbell trace: removed the tracing instance " << name
        << " left by an earlier doorbell that did not exit cleanly\n";
  return tracing;
}

// ------------------------------------------------------------ live trace

struct TraceArgs {
  pid_t pid = 0;
  double threshold = 1000.0;
  double duration_s = 0.0;  // 0: until interrupted
  double interval_s = 1.0;
  bool json = false;
  int top = 20;
  bool overhead = false;
  int overhead_signals = 200000;
  int overhead_rounds = 5;
};

nlohmann::json rows_json(const trace::Tracker& tracker, double seconds, bool totals,
                         double threshold) {
  nlohmann::json procs = nlohmann::json::array();
  for (const auto& r : trace::rows_of(tracker, seconds, totals))
    procs.push_back(trace::row_json(r, totals ? r.stream->total : r.stream->interval, seconds,
                                    threshold, trace::pending_of(r.key.tgid, r.key.sig)));
  return procs;
}

std::string lost_text(long long lost) {
  return lost ? fmt::format(", {} events lost (buffer overrun)", lost) : std::string();
}

int run_trace(const TraceArgs& args) {
  // 0 is "every process" only by leaving -p out.
  if (args.pid < 0 || (args.pid != 0 && !process_alive(args.pid)))
    throw UsageError(fmt::format("trace: no process with pid {}", args.pid));
  ensure_tracefs(std::cerr);
  StopSignals stop_signals;
  std::unique_ptr<trace::SignalTracing> tracing = start_tracing(std::cerr);
  trace::Tracker tracker(args.pid);
  const trace::TableOptions table{args.top, args.threshold};
  const bool terminal = !args.json && ::isatty(STDOUT_FILENO);
  const uint64_t start = lab::monotonic_ns();
  const uint64_t interval_ns = static_cast<uint64_t>(args.interval_s * 1e9);
  const uint64_t end =
      args.duration_s > 0 ? start + static_cast<uint64_t>(args.duration_s * 1e9) : 0;
  std::string scope = args.pid ? fmt::format("process {}", args.pid) : std::string("whole system");
  if (args.json) {
    std::cout << nlohmann::json{{"type", "start"},
                                {"scope",
                                 args.pid ? nlohmann::json(args.pid) : nlohmann::json("all")},
                                {"instance", tracing->name()},
                                {"threshold_per_s", args.threshold}}
                     .dump(-1, ' ', false, kUtf8Replace)
              << std::endl;
  } else {
    std::cerr << "doorbell trace: tracing signals (" << scope << ") in tracefs instance "
              << tracing->name() << "; Ctrl-C to stop\n";
  }
  uint64_t interval_start = start;
  bool target_gone = false;
  std::string end_reason = "interrupted";
  while (true) {
    tracing->drain(tracker);
    uint64_t now = lab::monotonic_ns();
    bool finish = stop_requested() || (end != 0 && now >= end);
    if (args.pid && !process_alive(args.pid)) {
      // Events the target produced before exiting are in the buffer: one
      // more read takes them.
      tracing->drain(tracker);
      target_gone = true;
      finish = true;
    }
    if (finish || now - interval_start >= interval_ns) {
      double seconds = std::max(1e-3, (now - interval_start) / 1e9);
      double elapsed = (now - start) / 1e9;
      if (args.json) {
        std::cout << nlohmann::json{{"type", "interval"},
                                    {"t_s", elapsed},
                                    {"interval_s", seconds},
                                    {"lost_events", tracing->overruns()},
                                    {"signals", rows_json(tracker, seconds, false, args.threshold)}}
                         .dump(-1, ' ', false, kUtf8Replace)
                  << std::endl;
      } else {
        std::ostringstream screen;
        if (terminal) screen << "\033[H\033[2J";
        trace::print_table(screen, tracker, table, seconds, false,
                           fmt::format("doorbell trace: {}, last {:.1f} s, {:.0f} s traced{}",
                                       scope, seconds, elapsed, lost_text(tracing->overruns())));
        std::cout << screen.str() << (terminal ? "" : "\n") << std::flush;
      }
      tracker.end_interval();
      interval_start = now;
    }
    if (finish) {
      if (target_gone)
        end_reason = "target exited";
      else if (!stop_requested())
        end_reason = "duration reached";
      break;
    }
    // A stop signal is seen within this sleep (at most 100 ms).
    lab::sleep_ns(std::min<uint64_t>(100'000'000ull, interval_ns));
  }
  double total_s = std::max(1e-3, (lab::monotonic_ns() - start) / 1e9);
  long long lost = tracing->overruns();
  if (args.json) {
    std::cout << nlohmann::json{{"type", "summary"},
                                {"duration_s", total_s},
                                {"end", end_reason},
                                {"lost_events", lost},
                                {"signals", rows_json(tracker, total_s, true, args.threshold)}}
                     .dump(-1, ' ', false, kUtf8Replace)
              << std::endl;
  } else {
    std::cout << "\n";
    trace::print_table(std::cout, tracker, table, total_s, true,
                       fmt::format("doorbell trace: {}, totals over {:.1f} s ({}){}", scope,
                                   total_s, end_reason, lost_text(lost)));
  }
  return 0;
}

// ------------------------------------------------------------ overhead

int measure_overhead(int count, int rounds, bool json) {
  ensure_tracefs(std::cerr);
  StopSignals stop_signals;
  trace::OverheadResult r;
  try {
    r = trace::measure_overhead(count, rounds, stop_requested);
  } catch (const tracefs::TracefsError& e) {
    throw UsageError(std::string("trace: ") + e.what());
  }
  const double best_plain = r.untraced_ns_per_signal, best_traced = r.traced_ns_per_signal;
  const double added = best_traced - best_plain;
  if (json) {
    std::cout << nlohmann::json{{"type", "overhead"},
                                {"signals_per_run", count},
                                {"rounds", rounds},
                                {"untraced_ns_per_signal", best_plain},
                                {"traced_ns_per_signal", best_traced},
                                {"untraced_signals_per_s", 1e9 / best_plain},
                                {"traced_signals_per_s", 1e9 / best_traced},
                                {"added_ns_per_signal", added},
                                {"slowdown_percent", 100.0 * added / best_plain},
                                {"events_read", r.events_read},
                                {"lost_events", r.lost_events}}
                     .dump(-1, ' ', false, kUtf8Replace)
              << std::endl;
  } else {
    std::cout << fmt::format(
        "self-signal storm (kill + empty handler), {} signals per run, best of {} runs each:\n"
        "  untraced: {:>10.0f} signals/s ({:.0f} ns per signal)\n"
        "  traced:   {:>10.0f} signals/s ({:.0f} ns per signal), {} events read, {} lost\n"
        "  tracing adds {:.0f} ns per signal ({:.1f}%), two tracepoints per signal\n",
        count, rounds, 1e9 / best_plain, best_plain, 1e9 / best_traced, best_traced, r.events_read,
        r.lost_events, added, 100.0 * added / best_plain);
  }
  return 0;
}

const CommandRegistrar kTrace{
    "trace", 50, [](CLI::App& app) {
      auto args = std::make_shared<TraceArgs>();
      auto* cmd = app.add_subcommand(
          "trace",
          "Live: which processes receive how many signals a second, how long they wait, who sends "
          "them (kernel signal tracepoints; needs root or tracefs access)");
      cmd->footer(
          "For a verdict on one process (can its signals wait for a busy thread?), see "
          "`doorbell inspect PID`.");
      // Every number has a declared range (apps/doorbell/options.h): 0 and
      // NaN never mean "forever", 1e300 never overflows the deadline.
      cmd->add_option("-p,--pid", args->pid, "trace only the signals received by this process")
          ->check(number_in(1, 4194304));
      cmd->add_option("--threshold", args->threshold,
                      "flag a receiver above this many signals per second")
          ->capture_default_str()
          ->check(number_in(0.001, 1e12));
      cmd->add_option("--duration", args->duration_s,
                      "stop after this many seconds (default: Ctrl-C)")
          ->check(number_in(0.01, 1e7));
      cmd->add_option("--interval", args->interval_s, "refresh every this many seconds")
          ->capture_default_str()
          ->check(number_in(0.05, 86400));
      cmd->add_option("--top", args->top, "rows shown per refresh")
          ->capture_default_str()
          ->check(CLI::Range(1, 100000));
      cmd->add_flag("--json", args->json,
                    "one JSON object per line: start, each interval, summary");
      auto* overhead =
          cmd->add_flag("--measure-overhead", args->overhead,
                        "measure what tracing costs: self-signals per second with and without it");
      cmd->add_option("--storm-signals", args->overhead_signals,
                      "signals per storm run for --measure-overhead")
          ->capture_default_str()
          ->check(CLI::Range(1000, 100000000))
          ->needs(overhead);
      cmd->add_option("--storm-rounds", args->overhead_rounds,
                      "runs with and without tracing for --measure-overhead (best of each)")
          ->capture_default_str()
          ->check(CLI::Range(1, 1000))
          ->needs(overhead);
      cmd->callback([args] {
        if (!(args->threshold > 0)) throw UsageError("trace: --threshold must be above 0");
        if (args->duration_s < 0 || args->duration_s > 1e7)
          throw UsageError("trace: --duration must be 0.01..1e7 seconds");
        if (!(args->interval_s >= 0.05))
          throw UsageError("trace: --interval must be at least 0.05 s");
        if (args->top < 1) throw UsageError("trace: --top must be at least 1");
        if (args->overhead) {
          if (args->overhead_signals < 1000 || args->overhead_rounds < 1)
            throw UsageError(
                "trace: --storm-signals must be at least 1000, --storm-rounds at least 1");
          set_exit_code(
              measure_overhead(args->overhead_signals, args->overhead_rounds, args->json));
          return;
        }
        set_exit_code(run_trace(*args));
      });
    }};
}  // namespace
}  // namespace doorbell::cli
