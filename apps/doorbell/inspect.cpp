// doorbell inspect PID: will this process's signals wait for a busy thread?
// A verdict per signal from /proc, read without stopping or changing the
// target. The reading and the analysis live in lab/inspect/ (unit-tested
// with synthetic processes); this file parses flags and prints.
#include <time.h>

#include <CLI/CLI.hpp>
#include <chrono>
#include <cmath>
#include <iostream>
#include <thread>

#include <fmt/format.h>

#include "apps/doorbell/command.h"
#include "apps/doorbell/options.h"
#include "lab/inspect/analysis.h"
#include "lab/inspect/render.h"
#include "lab/inspect/snapshot.h"

namespace doorbell::cli {
namespace {

struct InspectOptions {
  long pid = 0;
  bool json = false;
  double watch_seconds = 0;
  int period_ms = 10;
  int window_ms = 200;
};

std::uint64_t monotonic_ns() {
  timespec ts{};
  ::clock_gettime(CLOCK_MONOTONIC, &ts);
  return static_cast<std::uint64_t>(ts.tv_sec) * 1000000000ull +
         static_cast<std::uint64_t>(ts.tv_nsec);
}

// Longest --watch: about 11.6 days, far inside 64-bit nanoseconds.
constexpr double kMaxWatchSeconds = 1e6;
constexpr long kMaxPid = 4194304;  // PID_MAX_LIMIT on 64-bit Linux

void run_inspect(const InspectOptions& o) {
  using namespace doorbell::lab::inspect;
  if (o.pid <= 0 || o.pid > kMaxPid)
    throw UsageError("inspect: PID must be a process id, 1.." + std::to_string(kMaxPid));
  if (o.watch_seconds < 0 || !std::isfinite(o.watch_seconds) || o.watch_seconds > kMaxWatchSeconds)
    throw UsageError("inspect: --watch takes a number of seconds up to 1e6");
  pid_t pid = static_cast<pid_t>(o.pid);
  try {
    const ProcessSnapshot snapshot = sample_process(pid, std::chrono::milliseconds(o.window_ms));
    pid = snapshot.pid;  // a thread id was asked for: its process
    const InspectReport report = analyze(snapshot);
    std::string gone;  // the target exited during --watch: why the samples end early
    std::optional<WatchResult> watch;
    if (o.watch_seconds > 0) {
      watch.emplace();
      watch->period_ns = static_cast<std::uint64_t>(o.period_ms) * 1000000ull;
      const std::uint64_t start = monotonic_ns();
      const std::uint64_t end = start + static_cast<std::uint64_t>(o.watch_seconds * 1e9);
      std::uint64_t next = start;
      for (;;) {
        const std::uint64_t now = monotonic_ns();
        if (now >= end) break;
        try {
          watch->watch.observe(read_pending(pid), now);
        } catch (const ProcessGone&) {
          // The verdict and the samples so far stand: print them, then exit 1.
          const double after = static_cast<double>(now - start) / 1e9;
          watch->ended_early = fmt::format("the process exited after {:.1f} s", after);
          gone = fmt::format("process {} exited during --watch, after {:.1f} s", pid, after);
          break;
        }
        next += watch->period_ns;
        const std::uint64_t after = monotonic_ns();
        if (next > after) std::this_thread::sleep_for(std::chrono::nanoseconds(next - after));
      }
      watch->duration_ns = monotonic_ns() - start;
    }
    const WatchResult* w = watch ? &*watch : nullptr;
    if (o.json)
      std::cout << render_json(report, w).dump(2, ' ', false,
                                               nlohmann::ordered_json::error_handler_t::replace)
                << "\n";
    else
      std::cout << render_text(report, w);
    if (!gone.empty()) {
      std::cout.flush();
      std::cerr << "doorbell inspect: " << gone << " (its samples until then are in the report)\n";
      set_exit_code(1);
    }
  } catch (const ProcessGone& e) {
    throw std::runtime_error(std::string("inspect: ") + e.what());
  } catch (const InspectError& e) {
    throw std::runtime_error(std::string("inspect: ") + e.what());
  }
}

const CommandRegistrar kInspect{
    "inspect", 55, [](CLI::App& app) {
      auto options = std::make_shared<InspectOptions>();
      auto* cmd = app.add_subcommand(
          "inspect",
          "Will this process's signals wait for a busy thread? A verdict per signal from /proc "
          "(docs/inspect.md); the target is only read, never changed");
      cmd->add_option("PID", options->pid,
                      "the process to inspect (a thread id stands for its process)")
          ->required()
          ->check(number_in(1, static_cast<double>(kMaxPid)));
      cmd->add_flag("--json", options->json, "one JSON object (schema in docs/inspect.md)");
      auto* watch = cmd->add_option("--watch", options->watch_seconds,
                                    "then sample pending signals for SECONDS and say how long each "
                                    "stayed pending")
                        ->check(number_in(0.001, kMaxWatchSeconds));
      cmd->add_option("--period-ms", options->period_ms, "sampling period of --watch (default 10)")
          ->check(CLI::Range(1, 10000))
          ->needs(watch);
      cmd->add_option("--window-ms", options->window_ms,
                      "how long to measure which threads are busy (default 200)")
          ->check(CLI::Range(10, 60000));
      cmd->callback([options] { run_inspect(*options); });
    }};

}  // namespace
}  // namespace doorbell::cli
