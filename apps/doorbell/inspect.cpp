// doorbell inspect PID: will this process's signals wait for a busy thread?
// A verdict per signal from /proc, read without stopping or changing the
// target. The reading and the analysis live in lab/inspect/ (unit-tested
// with synthetic processes); this file parses flags and prints. --watch
// also measures with the BPF backend of `doorbell trace` where it loads
// (Measurement below).
#include <time.h>

#include <CLI/CLI.hpp>
#include <algorithm>
#include <atomic>
#include <chrono>
#include <cmath>
#include <iostream>
#include <memory>
#include <optional>
#include <vector>

#include <fmt/format.h>

#include "apps/doorbell/command.h"
#include "apps/doorbell/options.h"
#include "doorbell/signal_channel.h"
#include "lab/common/signal_scope.h"
#include "lab/inspect/analysis.h"
#include "lab/inspect/render.h"
#include "lab/inspect/snapshot.h"
#include "lab/trace/backend.h"
#include "lab/trace/render.h"
#include "lab/trace/tracker.h"

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

// --watch measured: the BPF backend of `doorbell trace` (lab/trace/backend.h)
// on the target alone, its slow deliveries read every 100 ms and its maps at
// the end, beside the /proc samples. Without
// BPF (no root, no BTF) the watch samples only and says why.
class Measurement {
 public:
  static constexpr std::uint64_t kSlowNs = 1'000'000;

  explicit Measurement(pid_t pid) : pid_(pid), tracker_(pid), start_(monotonic_ns()) {
    try {
      backend_ = lab::trace::open_backend(lab::trace::BackendKind::bpf, {pid, kSlowNs, false});
      how_ = backend_->source();
    } catch (const lab::trace::BackendUnavailable& e) {
      how_ = e.what();
    }
  }

  void poll(std::uint64_t now) {
    if (!backend_ || now - last_poll_ < 100'000'000ull) return;
    last_poll_ = now;
    backend_->poll(tracker_, &slow_);  // the slow deliveries; the maps at finish()
  }

  lab::inspect::MeasuredWatch finish() {
    lab::inspect::MeasuredWatch m;
    m.how = how_;
    m.slow_ns = kSlowNs;
    if (!backend_) return m;
    backend_->collect(tracker_, &slow_);
    m.ran = true;
    m.duration_ns = monotonic_ns() - start_;
    m.lost_events = backend_->lost_events();
    std::sort(slow_.begin(), slow_.end(),
              [](const auto& a, const auto& b) { return a.delay_ns() > b.delay_ns(); });
    for (const auto& [key, stream] : tracker_.streams()) {
      if (key.tgid != pid_) continue;
      const lab::trace::Counts& c = stream.total;
      lab::inspect::MeasuredSignal s;
      s.signal = key.sig;
      s.generated = c.generated;
      s.merged = c.coalesced;
      s.taken = c.taken();
      s.by_handler = c.delivered;
      s.by_sigwait = c.taken_sigwait;
      s.by_signalfd = c.taken_signalfd;
      s.unpaired = c.unpaired;
      if (!c.delay.empty()) {
        s.p50_ns = c.delay.percentile(50);
        s.p99_ns = c.delay.percentile(99);
        s.max_ns = c.delay.max();
      }
      for (int i = 0; i < 4; ++i) s.cause_ns[i] = c.causes.ns[i];
      for (const auto& d : slow_) {
        if (d.sig != key.sig) continue;
        ++s.slow;
        if (s.slowest.size() < 3) s.slowest.push_back(lab::trace::slow_text(d).substr(6));
      }
      m.signals.push_back(std::move(s));
    }
    return m;
  }

 private:
  pid_t pid_;
  lab::trace::Tracker tracker_;
  std::unique_ptr<lab::trace::Backend> backend_;
  std::string how_;
  std::uint64_t start_;
  std::uint64_t last_poll_ = 0;
  std::vector<lab::trace::SlowDelivery> slow_;
};

// --watch's stop request: Ctrl-C, SIGTERM and SIGHUP end the watch early,
// and the verdict with what was sampled and measured so far is printed.
std::atomic<int> g_stop_signal{0};

extern "C" void on_watch_stop_signal(int signo) {
  g_stop_signal.store(signo, std::memory_order_relaxed);  // async-signal-safe
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
    // --watch: the handlers first (a Ctrl-C from here on prints the verdict
    // so far), then the measurement, before the busy-thread window, so that
    // a signal sent while the process is read is measured too.
    std::optional<lab::ScopedDisposition> on_int, on_term, on_hup;
    std::optional<Measurement> measurement;
    if (o.watch_seconds > 0) {
      // SA_RESTART: a write of the verdict blocked on a slow reader goes
      // on after the handler (nanosleep is never restarted: the loop still
      // sees the stop at once).
      on_int.emplace(SIGINT, on_watch_stop_signal, SA_RESTART);
      on_term.emplace(SIGTERM, on_watch_stop_signal, SA_RESTART);
      on_hup.emplace(SIGHUP, on_watch_stop_signal, SA_RESTART);
      measurement.emplace(read_process(pid).pid);
    }
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
        if (const int sig = g_stop_signal.load(std::memory_order_relaxed); sig != 0) {
          watch->ended_early =
              fmt::format("interrupted by {} after {:.1f} s", doorbell::signal_name(sig),
                          static_cast<double>(now - start) / 1e9);
          break;
        }
        measurement->poll(now);
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
        // A stop signal ends the sleep (EINTR): the loop looks at it first.
        if (next > after) {
          const std::uint64_t ns = next - after;
          timespec ts{static_cast<time_t>(ns / 1000000000ull),
                      static_cast<long>(ns % 1000000000ull)};
          ::nanosleep(&ts, nullptr);
        }
      }
      watch->duration_ns = monotonic_ns() - start;
      watch->measured = measurement->finish();
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
    if (const int sig = g_stop_signal.load(std::memory_order_relaxed); sig != 0) {
      std::cout.flush();
      std::cerr << "doorbell inspect: interrupted by " << doorbell::signal_name(sig)
                << " (the verdict and what was watched until then are above)\n";
      set_exit_code(128 + sig);
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
                                    "then watch SECONDS: sample pending signals, and (root, BPF) "
                                    "measure each signal's real wait and its cause")
                        ->check(number_in(0.001, kMaxWatchSeconds));
      cmd->add_option("--period-ms", options->period_ms, "sampling period of --watch (default 10)")
          ->check(number_in(1, 10000))
          ->needs(watch);
      cmd->add_option("--window-ms", options->window_ms,
                      "how long to measure which threads are busy (default 200)")
          ->check(number_in(10, 60000));
      cmd->callback([options] { run_inspect(*options); });
    }};

}  // namespace
}  // namespace doorbell::cli
