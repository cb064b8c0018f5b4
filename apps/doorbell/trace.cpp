// doorbell trace: who receives how many signals, live, how long they wait
// and why. The command: its flags, the loop that reads and refreshes, and
// the output. The kernel is read by one of two backends behind
// lab/trace/backend.h (BPF where it loads, tracefs otherwise; --backend
// chooses); the counting is lab/trace/tracker.h, the causes, histograms and
// slow deliveries lab/trace/render.h; --measure-overhead is
// lab/trace/overhead.h. See docs/trace.md.
//
// What it does to the system, and how it undoes it:
//  - bpf: programs attached to tracepoints, detached on every exit (the
//    kernel detaches them when the process dies, SIGKILL included); nothing
//    pinned.
//  - tracefs: it never changes the system's mount table: it uses tracefs
//    where it is mounted, or mounts it privately (sys/tracefs.h says how).
//    It creates a tracing instance "doorbell-trace-<pid>" with its own ring
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
#include <cmath>
#include <fstream>
#include <iostream>
#include <iterator>
#include <memory>
#include <optional>
#include <sstream>
#include <string>
#include <string_view>
#include <system_error>
#include <vector>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "apps/doorbell/command.h"
#include "apps/doorbell/options.h"
#include "lab/common/signal_scope.h"
#include "lab/common/time.h"
#include "lab/harness/clock.h"
#include "lab/trace/backend.h"
#include "lab/trace/overhead.h"
#include "lab/trace/render.h"
#include "lab/trace/tracker.h"
#include "sys/proc.h"

namespace doorbell::cli {
namespace {

namespace trace = lab::trace;

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
// the previous dispositions come back when it is destroyed. SA_RESTART: a
// write to stdout blocked on a slow reader goes on after the handler (without
// it the write failed with EINTR, stdio marked stdout failed and the summary
// was lost); the loop's sleeps and polls still end early (they are never
// restarted) and the loop looks at the flag.
class StopSignals {
 public:
  StopSignals()
      : int_(SIGINT, on_stop_signal, SA_RESTART),
        term_(SIGTERM, on_stop_signal, SA_RESTART),
        hup_(SIGHUP, on_stop_signal, SA_RESTART),
        pipe_(SIGPIPE, on_stop_signal, SA_RESTART) {}

 private:
  lab::ScopedDisposition int_, term_, hup_, pipe_;
};

bool stop_requested() {
  return g_stop_signal.load(std::memory_order_relaxed) != 0;
}

bool process_alive(pid_t pid) {
  return ::kill(pid, 0) == 0 || errno == EPERM;
}

// The process to trace for `-p ID`: ID itself, or the process of thread ID
// (as inspect does; said on stderr). A zombie (every thread exited, not
// reaped) is refused: nothing it could receive would be taken. /proc's
// status of a thread is readable under /proc/TID even where TID is not a
// process.
pid_t process_to_trace(pid_t id, std::ostream& log) {
  const std::string status = "/proc/" + std::to_string(id) + "/status";
  std::ifstream in(status);
  pid_t tgid = 0;
  for (std::string line; std::getline(in, line);)
    if (line.rfind("Tgid:", 0) == 0) tgid = static_cast<pid_t>(std::atol(line.c_str() + 5));
  if (tgid <= 0) throw UsageError(fmt::format("trace: no process with pid {}", id));
  if (tgid != id)
    log << fmt::format("doorbell trace: {} is thread {} of process {}: tracing process {}\n", id,
                       id, tgid, tgid);
  // Alive while any thread is: the leader may have exited alone.
  bool alive = false;
  std::string comm;
  for (const pid_t tid : sys::list_threads(tgid)) {
    std::ifstream stat("/proc/" + std::to_string(tgid) + "/task/" + std::to_string(tid) + "/stat");
    std::string text((std::istreambuf_iterator<char>(stat)), std::istreambuf_iterator<char>());
    const auto close = text.rfind(')');
    if (close == std::string::npos || close + 2 >= text.size()) continue;
    const char state = text[close + 2];
    if (state != 'Z' && state != 'X') alive = true;
  }
  if (!alive)
    throw UsageError(fmt::format(
        "trace: process {} has exited: it is a zombie its parent has not reaped; nothing sent to "
        "it will be taken",
        tgid));
  return tgid;
}

// The backend (lab/trace/backend.h's choice), with its one line saying which
// runs and why the other does not; none possible is a usage error (exit 2)
// with every reason.
std::unique_ptr<trace::Backend> open_backend(const std::string& wanted,
                                             const trace::BackendOptions& options,
                                             std::ostream& log) {
  std::optional<trace::BackendKind> kind;
  if (wanted == "bpf") kind = trace::BackendKind::bpf;
  if (wanted == "tracefs") kind = trace::BackendKind::tracefs;
  trace::BackendChoice choice;
  try {
    choice = trace::choose_backend(kind, options);
  } catch (const trace::BackendUnavailable& e) {
    throw UsageError(std::string("trace: ") + e.what());
  }
  log << "doorbell trace: " << choice.why << "\n";
  for (const std::string& note : choice.backend->notes()) log << "doorbell trace: " << note << "\n";
  return std::move(choice.backend);
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
  std::string backend;      // "bpf", "tracefs"; empty: bpf where it loads
  double slow_us = 1000.0;  // bpf: deliveries at least this slow, one by one
};

nlohmann::json rows_json(const trace::Tracker& tracker, double seconds, bool totals,
                         double threshold, bool sees_causes) {
  nlohmann::json procs = nlohmann::json::array();
  for (const auto& r : trace::rows_of(tracker, seconds, totals)) {
    const trace::Counts& c = totals ? r.stream->total : r.stream->interval;
    nlohmann::json row =
        trace::row_json(r, c, seconds, threshold, trace::pending_of(r.key.tgid, r.key.sig));
    trace::add_backend_fields(row, c, sees_causes);
    procs.push_back(std::move(row));
  }
  return procs;
}

// The slow deliveries of one refresh: every one in JSON, the first few as
// text.
constexpr std::size_t kSlowLinesPerRefresh = 10;

void print_slow(std::ostream& out, const std::vector<trace::SlowDelivery>& slow, bool json,
                uint64_t start_ns) {
  if (json) {
    for (const auto& d : slow) out << trace::slow_json(d, start_ns).dump() << "\n";
    return;
  }
  for (std::size_t i = 0; i < slow.size() && i < kSlowLinesPerRefresh; ++i)
    out << trace::slow_text(slow[i]) << "\n";
  if (slow.size() > kSlowLinesPerRefresh)
    out << fmt::format("  ... and {} more slow deliveries\n", slow.size() - kSlowLinesPerRefresh);
}

std::string lost_text(long long lost) {
  return lost ? fmt::format(", {} events lost (buffer overrun)", lost) : std::string();
}

// One line when delays were not measured or slow lines dropped (never
// silent); empty otherwise.
std::string unmeasured_text(const trace::Tracker& tracker, long long slow_dropped,
                            long long unremembered) {
  uint64_t unmeasured = 0;
  for (const auto& [key, s] : tracker.streams()) unmeasured += s.total.unmeasured();
  std::string text;
  if (unmeasured)
    text += fmt::format(
        "{} delays not measured: their signals were queued when a table of the tracer was full "
        "(counted, and taken; delays_unmeasured per signal in --json)\n",
        unmeasured);
  if (slow_dropped)
    text += fmt::format("{} slow-delivery lines dropped: the ring buffer was full\n", slow_dropped);
  if (unremembered)
    text += fmt::format(
        "{} queued signals not remembered: no per-process state could be made for them (BPF task "
        "storage); their takes count as unpaired\n",
        unremembered);
  return text;
}

int run_trace(TraceArgs args) {
  // 0 is "every process" only by leaving -p out.
  if (args.pid < 0 || (args.pid != 0 && !process_alive(args.pid)))
    throw UsageError(fmt::format("trace: no process with pid {}", args.pid));
  if (args.pid != 0) {
    try {
      args.pid = process_to_trace(args.pid, std::cerr);
    } catch (const std::system_error&) {
      throw UsageError(fmt::format("trace: no process with pid {}", args.pid));
    }
  }
  StopSignals stop_signals;
  const trace::BackendOptions options{args.pid, static_cast<uint64_t>(args.slow_us * 1000.0)};
  std::unique_ptr<trace::Backend> backend = open_backend(args.backend, options, std::cerr);
  const bool causes = backend->sees_causes();
  const std::string backend_name = trace::backend_name(backend->kind());
  trace::Tracker tracker(args.pid);
  const trace::TableOptions table{args.top, args.threshold};
  const bool terminal = !args.json && ::isatty(STDOUT_FILENO);
  const uint64_t start = lab::monotonic_ns();
  const uint64_t interval_ns = static_cast<uint64_t>(args.interval_s * 1e9);
  const uint64_t end =
      args.duration_s > 0 ? start + static_cast<uint64_t>(args.duration_s * 1e9) : 0;
  std::string scope = args.pid ? fmt::format("process {}", args.pid) : std::string("whole system");
  if (args.json) {
    nlohmann::json start_line{
        {"type", "start"},
        {"scope", args.pid ? nlohmann::json(args.pid) : nlohmann::json("all")},
        {"backend", backend_name},
        {"source", backend->source()},
        {"threshold_per_s", args.threshold}};
    if (!backend->instance().empty()) start_line["instance"] = backend->instance();
    if (causes) start_line["slow_us"] = args.slow_us;
    std::cout << start_line.dump(-1, ' ', false, kUtf8Replace) << std::endl;
  } else {
    std::cerr << "doorbell trace: tracing signals (" << scope << ") with " << backend->source()
              << "; Ctrl-C to stop\n";
  }
  uint64_t interval_start = start;
  bool target_gone = false;
  std::string end_reason = "interrupted";
  std::vector<trace::SlowDelivery> slow;
  uint64_t slow_total = 0;
  while (true) {
    // Often: what would overflow (tracefs's buffers, the slow deliveries);
    // the maps of bpf once per interval, below.
    backend->poll(tracker, &slow);
    uint64_t now = lab::monotonic_ns();
    bool finish = stop_requested() || (end != 0 && now >= end);
    if (args.pid && !process_alive(args.pid)) {
      // Events the target produced before exiting are in the buffer: one
      // more read takes them.
      backend->collect(tracker, &slow);
      target_gone = true;
      finish = true;
    }
    if (finish || now - interval_start >= interval_ns) {
      backend->collect(tracker, &slow);
      double seconds = std::max(1e-3, (now - interval_start) / 1e9);
      double elapsed = (now - start) / 1e9;
      const long long lost = backend->lost_events();
      slow_total += slow.size();
      if (args.json) {
        print_slow(std::cout, slow, true, start);
        std::cout << nlohmann::json{{"type", "interval"},
                                    {"t_s", elapsed},
                                    {"interval_s", seconds},
                                    {"lost_events", lost},
                                    {"signals",
                                     rows_json(tracker, seconds, false, args.threshold, causes)}}
                         .dump(-1, ' ', false, kUtf8Replace)
                  << std::endl;
      } else {
        std::ostringstream screen;
        if (terminal) screen << "\033[H\033[2J";
        trace::print_table(screen, tracker, table, seconds, false,
                           fmt::format("doorbell trace: {}, last {:.1f} s, {:.0f} s traced ({}){}",
                                       scope, seconds, elapsed, backend_name, lost_text(lost)));
        trace::print_causes(screen, tracker, args.top, seconds, false, causes);
        print_slow(screen, slow, false, start);
        std::cout << screen.str() << (terminal ? "" : "\n") << std::flush;
      }
      slow.clear();
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
  long long lost = backend->lost_events();
  if (args.json) {
    nlohmann::json summary{{"type", "summary"},
                           {"backend", backend_name},
                           {"duration_s", total_s},
                           {"end", end_reason},
                           {"lost_events", lost},
                           {"signals", rows_json(tracker, total_s, true, args.threshold, causes)}};
    if (causes) {
      summary["slow_deliveries"] = slow_total;
      summary["slow_dropped"] = backend->slow_dropped();
      summary["unlogged_state_changes"] = backend->unlogged_state_changes();
      summary["unremembered_signals"] = backend->unremembered_signals();
    }
    std::cout << summary.dump(-1, ' ', false, kUtf8Replace) << std::endl;
  } else {
    std::cout << "\n";
    trace::print_table(std::cout, tracker, table, total_s, true,
                       fmt::format("doorbell trace: {}, totals over {:.1f} s ({}, {}){}", scope,
                                   total_s, end_reason, backend_name, lost_text(lost)));
    trace::print_causes(std::cout, tracker, args.top, total_s, true, causes);
    trace::print_histograms(std::cout, tracker, std::min(args.top, 5), total_s, true);
    std::cout << unmeasured_text(tracker, backend->slow_dropped(), backend->unremembered_signals());
    if (causes)
      std::cout << fmt::format("{} deliveries took {} us or more (shown as they came)\n",
                               slow_total, args.slow_us);
  }
  // Output that could not be written is said (a reader that went away,
  // SIGPIPE, asked for nothing more).
  if (!std::cout.flush() && g_stop_signal.load(std::memory_order_relaxed) != SIGPIPE) {
    std::cerr << "doorbell trace: stdout could not be written in full: the output above is "
                 "incomplete\n";
    return 1;
  }
  return 0;
}

// ------------------------------------------------------------ overhead

// A mode's times in ns per `unit` ("signal", "switch"): each run's, the
// min, median and max, and (a traced mode, where `untraced_min` is known)
// what it adds, min against min. A mode that did not run: why.
nlohmann::json timings_json(const trace::OverheadMode& m, double untraced_min,
                            std::string_view unit) {
  if (!m.ran()) return {{"ran", false}, {"unavailable", m.unavailable}};
  nlohmann::json j{{"ran", true},
                   {fmt::format("ns_per_{}", unit), m.ns_per_signal},
                   {fmt::format("min_ns_per_{}", unit), m.min()},
                   {fmt::format("median_ns_per_{}", unit), m.median()},
                   {fmt::format("max_ns_per_{}", unit), m.max()}};
  if (m.name != "untraced" && !std::isnan(untraced_min)) {
    j[fmt::format("added_ns_per_{}", unit)] = m.min() - untraced_min;
    j["slowdown_percent"] = 100.0 * (m.min() - untraced_min) / untraced_min;
  }
  return j;
}

// "  name:        did not run: why".
std::string did_not_run_text(const trace::OverheadMode& m) {
  return fmt::format("  {:<12} did not run: {}\n", m.name + ":", m.unavailable);
}

// The start of a traced mode's second line: what it adds per `unit`.
std::string adds_text(const trace::OverheadMode& m, double untraced_min, std::string_view unit) {
  const double added = m.min() - untraced_min;
  return fmt::format("               adds {:.0f} ns per {} ({:.1f}%, min against min); ", added,
                     unit, 100.0 * added / untraced_min);
}

nlohmann::json mode_json(const trace::OverheadMode& m, double untraced_min, int count) {
  nlohmann::json j = timings_json(m, untraced_min, "signal");
  if (!m.ran()) return j;
  j["signals_per_s"] = 1e9 / m.min();
  if (m.name == "bpftrace") j["paired_seen"] = m.paired_seen;
  if (m.name == "tracefs" || m.name == "bpf") {
    j["generated_seen"] = m.generated_seen;
    j["delivered_seen"] = m.delivered_seen;
    j["signals_sent"] = static_cast<uint64_t>(count) * m.ns_per_signal.size();
    j["lost_events"] = m.lost_events;
  }
  return j;
}

std::string mode_text(const trace::OverheadMode& m, double untraced_min, int count) {
  if (!m.ran()) return did_not_run_text(m);
  std::string text = fmt::format(
      "  {:<12} {:>8.0f} signals/s; ns per signal min {:.0f}, median {:.0f}, max {:.0f}\n",
      m.name + ":", 1e9 / m.min(), m.min(), m.median(), m.max());
  if (m.name == "untraced") return text;
  text += adds_text(m, untraced_min, "signal");
  const uint64_t sent = static_cast<uint64_t>(count) * m.ns_per_signal.size();
  if (m.name == "floor")
    text += "programs that only read the clock on both ends, counting nothing\n";
  else if (m.name == "floor+exits")
    text +=
        "the floor and an empty program on each system-call exit bpf watches (sigwait and "
        "signalfd takes, sigaction discards): every system call of every task takes the slower "
        "path\n";
  else if (m.name == "bpftrace")
    text += fmt::format(
        "{} delays in its histogram (whole system: the storm's {} sent and any others)\n",
        m.paired_seen, sent);
  else
    text += fmt::format(
        "saw {} of {} sent generated and {} delivered, {} lost{}\n", m.generated_seen, sent,
        m.delivered_seen, m.lost_events,
        m.generated_seen == sent && m.delivered_seen == sent ? " (exact)" : " (NOT exact)");
  return text;
}

// What bpf adds as a multiple of what `other` adds ("0.42x"), or why there
// is no such figure.
std::string ratio_text(const trace::OverheadMode& bpf, const trace::OverheadMode& other,
                       double untraced_min, const char* what) {
  if (!other.ran()) return fmt::format("{} did not run", what);
  const double other_added = other.min() - untraced_min;
  if (!(other_added > 0)) return fmt::format("{} added nothing measurable", what);
  return fmt::format("{:.2f}x {}", (bpf.min() - untraced_min) / other_added, what);
}

nlohmann::json ratio_json(const trace::OverheadMode& bpf, const trace::OverheadMode& other,
                          double untraced_min) {
  if (!bpf.ran() || !other.ran() || !(other.min() - untraced_min > 0)) return nullptr;
  return (bpf.min() - untraced_min) / (other.min() - untraced_min);
}

nlohmann::json switches_json(const trace::OverheadResult::Switches& sw) {
  const double plain = sw.untraced.ran() ? sw.untraced.min() : std::nan("");
  auto mode = [&](const trace::OverheadMode& m) { return timings_json(m, plain, "switch"); };
  return {
      {"switches_per_run", sw.switches_per_run},
      {"rounds", sw.rounds},
      {"modes",
       {{"untraced", mode(sw.untraced)}, {"tracefs", mode(sw.tracefs)}, {"bpf", mode(sw.bpf)}}}};
}

// The context-switch block: a heading and a line (two when traced) a mode.
std::string switches_text(const trace::OverheadResult::Switches& sw) {
  if (!sw.untraced.ran()) return "";
  std::string text = fmt::format(
      "context switches (two processes on one CPU passing a byte through two pipes), {} switches "
      "per run, {} rounds of untraced, tracefs and bpf interleaved:\n",
      sw.switches_per_run, sw.rounds);
  const double plain = sw.untraced.min();
  for (const trace::OverheadMode* m : {&sw.untraced, &sw.tracefs, &sw.bpf}) {
    if (!m->ran()) {
      text += did_not_run_text(*m);
      continue;
    }
    text += fmt::format("  {:<12} ns per switch min {:.0f}, median {:.0f}, max {:.0f}\n",
                        m->name + ":", m->min(), m->median(), m->max());
    if (m->name == "untraced") continue;
    text += adds_text(*m, plain, "switch") +
            (m->name == "bpf" ? "its programs on sched_switch, sched_waking and sched_wakeup run "
                                "at every switch and wake-up\n"
                              : "no scheduler event enabled\n");
  }
  return text;
}

// The cost of the program of `costs` on tracepoint `point` (its name ends
// so), or nullptr.
const trace::bpf::ProgramCost* cost_at(const std::vector<trace::bpf::ProgramCost>& costs,
                                       std::string_view point) {
  for (const auto& c : costs)
    if (std::string_view(c.program).ends_with(point)) return &c;
  return nullptr;
}

// bpf's program on `point` less the floor's: its own work (ns a run), or
// NaN when either did not run.
double own_work(const trace::OverheadResult::ProgramCosts& p, std::string_view point) {
  const auto *ours = cost_at(p.bpf, point), *floor = cost_at(p.floor, point);
  if (ours == nullptr || floor == nullptr) return std::nan("");
  return ours->ns_per_run() - floor->ns_per_run();
}

nlohmann::json program_costs_json(const trace::OverheadResult::ProgramCosts& p) {
  if (!p.unavailable.empty()) return {{"measured", false}, {"unavailable", p.unavailable}};
  auto list = [](const std::vector<trace::bpf::ProgramCost>& costs) {
    nlohmann::json a = nlohmann::json::array();
    for (const auto& c : costs)
      a.push_back({{"program", c.program}, {"runs", c.runs}, {"ns_per_run", c.ns_per_run()}});
    return a;
  };
  auto number = [](double v) {
    return std::isnan(v) ? nlohmann::json(nullptr) : nlohmann::json(v);
  };
  return {{"measured", true},
          {"storms", p.storms},
          {"bpf", list(p.bpf)},
          {"floor", list(p.floor)},
          {"bpf_own_work_ns",
           {{"signal_generate", number(own_work(p, "signal_generate"))},
            {"signal_deliver", number(own_work(p, "signal_deliver"))}}}};
}

// Two lines: each program's time a run, and what bpf's programs do beyond
// the floor's against what bpf adds beyond the floor to a signal.
std::string program_costs_text(const trace::OverheadResult& r) {
  const auto& p = r.programs;
  if (!p.unavailable.empty())
    return fmt::format("  programs:    not measured: {}\n", p.unavailable);
  auto list = [](const std::vector<trace::bpf::ProgramCost>& costs) {
    std::string text;
    for (const auto& c : costs)
      text += fmt::format("{}{} {:.0f}", text.empty() ? "" : ", ", c.program, c.ns_per_run());
    return text.empty() ? std::string("none ran") : text;
  };
  std::string text = fmt::format(
      "  programs:    ns a run, the least of {} storm{} each (the kernel's run-time statistics): "
      "bpf {}; floor {}\n",
      p.storms, p.storms == 1 ? "" : "s", list(p.bpf), list(p.floor));
  const double generate = own_work(p, "signal_generate"), deliver = own_work(p, "signal_deliver");
  if (std::isnan(generate) || std::isnan(deliver)) return text;
  const double beyond = r.bpf.min() - r.floor.min();
  return text +
         fmt::format(
             "               bpf's programs work {:.0f} ns a signal beyond the floor's "
             "(generate {:.0f}, deliver {:.0f}); bpf adds {:.0f} ns beyond the floor: {:.0f} "
             "spent outside its programs\n",
             generate + deliver, generate, deliver, beyond, beyond - generate - deliver);
}

int measure_overhead(int count, int rounds, bool json) {
  StopSignals stop_signals;
  const trace::OverheadResult r = trace::measure_overhead(count, rounds, stop_requested);
  if (!r.untraced.ran()) throw std::runtime_error("trace: the storm did not run");
  if (!r.tracefs.ran() && !r.bpf.ran())
    throw UsageError(fmt::format("trace: no tracing backend can run here: BPF: {}; tracefs: {}",
                                 r.bpf.unavailable, r.tracefs.unavailable));
  const double plain = r.untraced.min();
  if (json) {
    nlohmann::json j{{"type", "overhead"},
                     {"signals_per_run", count},
                     {"rounds", r.rounds},
                     {"untraced_ns_per_signal", plain},
                     {"untraced_signals_per_s", 1e9 / plain},
                     {"modes",
                      {{"untraced", mode_json(r.untraced, plain, count)},
                       {"tracefs", mode_json(r.tracefs, plain, count)},
                       {"bpf", mode_json(r.bpf, plain, count)},
                       {"floor", mode_json(r.floor, plain, count)},
                       {"floor_with_exits", mode_json(r.floor_exits, plain, count)},
                       {"bpftrace", mode_json(r.bpftrace, plain, count)}}},
                     // What bpf adds as a multiple of what each adds (null
                     // when one did not run or added nothing measurable).
                     {"bpf_vs_bpftrace", ratio_json(r.bpf, r.bpftrace, plain)},
                     {"bpf_vs_floor", ratio_json(r.bpf, r.floor, plain)},
                     {"bpf_vs_floor_with_exits", ratio_json(r.bpf, r.floor_exits, plain)},
                     {"context_switches", switches_json(r.switches)},
                     {"program_costs", program_costs_json(r.programs)}};
    // The keys of the tracefs-only output, kept for readers of it.
    if (r.tracefs.ran()) {
      j["traced_ns_per_signal"] = r.tracefs.min();
      j["traced_signals_per_s"] = 1e9 / r.tracefs.min();
      j["added_ns_per_signal"] = r.tracefs.min() - plain;
      j["slowdown_percent"] = 100.0 * (r.tracefs.min() - plain) / plain;
      j["events_read"] = r.tracefs.generated_seen + r.tracefs.delivered_seen;
      j["lost_events"] = r.tracefs.lost_events;
    }
    std::cout << j.dump(-1, ' ', false, kUtf8Replace) << std::endl;
  } else {
    std::cout << fmt::format(
        "self-signal storm (kill + empty handler), {} signals per run, {} rounds of untraced, "
        "tracefs, bpf, the floor, the floor with the system-call exits and bpftrace "
        "interleaved (whole system traced; tracefs read every 10 ms):\n",
        count, r.rounds);
    std::cout << mode_text(r.untraced, plain, count) << mode_text(r.tracefs, plain, count)
              << mode_text(r.bpf, plain, count) << mode_text(r.floor, plain, count)
              << mode_text(r.floor_exits, plain, count) << mode_text(r.bpftrace, plain, count);
    if (r.bpf.ran())
      std::cout << fmt::format(
          "  bpf against the others: {}, {}, {} (what each adds, min against min; bpftrace: "
          "its two-probe pairing into a histogram, no causes)\n",
          ratio_text(r.bpf, r.bpftrace, plain, "the bpftrace pairing"),
          ratio_text(r.bpf, r.floor, plain, "the floor"),
          ratio_text(r.bpf, r.floor_exits, plain, "the floor with the exits"));
    std::cout << program_costs_text(r) << switches_text(r.switches);
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
          ->check(number_in(1, 100000));
      cmd->add_flag("--json", args->json,
                    "one JSON object per line: start, each interval, summary");
      auto* overhead =
          cmd->add_flag("--measure-overhead", args->overhead,
                        "measure what tracing costs: self-signals per second with and without it");
      cmd->add_option("--storm-signals", args->overhead_signals,
                      "signals per storm run for --measure-overhead")
          ->capture_default_str()
          ->check(number_in(1000, 100000000))
          ->needs(overhead);
      cmd->add_option(
             "--storm-rounds", args->overhead_rounds,
             "rounds of --measure-overhead (each runs untraced, tracefs, bpf, the floor, the "
             "floor with the system-call exits and bpftrace, and a context-switch storm "
             "untraced, with tracefs and with bpf; then as many of bpf's and the floor's "
             "programs with the kernel's run-time statistics on)")
          ->capture_default_str()
          ->check(number_in(1, 1000))
          ->needs(overhead);
      auto* backend = cmd->add_option("--backend", args->backend,
                                      "bpf or tracefs (default: bpf where it loads, else tracefs)")
                          ->check(CLI::IsMember({"bpf", "tracefs"}));
      cmd->add_option("--slow-us", args->slow_us,
                      "bpf: report each delivery that waited at least this many microseconds")
          ->capture_default_str()
          ->check(number_in(0, 3.6e9));
      cmd->callback([args, backend] {
        if (!(args->threshold > 0)) throw UsageError("trace: --threshold must be above 0");
        if (args->duration_s < 0 || args->duration_s > 1e7)
          throw UsageError("trace: --duration must be 0.01..1e7 seconds");
        if (!(args->interval_s >= 0.05))
          throw UsageError("trace: --interval must be at least 0.05 s");
        if (args->top < 1) throw UsageError("trace: --top must be at least 1");
        if (backend->count() > 0 && args->backend != "bpf" && args->backend != "tracefs")
          throw UsageError("trace: --backend must be bpf or tracefs, not '" + args->backend + "'");
        // Up to an hour: the programs compare in nanoseconds.
        if (!(args->slow_us >= 0 && args->slow_us <= 3.6e9))
          throw UsageError("trace: --slow-us must be a number of microseconds from 0 to 3.6e9");
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
