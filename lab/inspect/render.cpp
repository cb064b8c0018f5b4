#include "lab/inspect/render.h"

#include <algorithm>

#include <fmt/format.h>

#include "doorbell/signal_channel.h"  // signal_name
#include "lab/common/format.h"

namespace doorbell::lab::inspect {
namespace {

std::string signal_list(std::uint64_t mask) {
  std::string text;
  for (int signo = 1; signo <= 64; ++signo)
    if (mask_has(mask, signo)) text += (text.empty() ? "" : " ") + doorbell::signal_name(signo);
  return text.empty() ? "-" : text;
}

std::string tids(const std::vector<pid_t>& list, std::size_t limit) {
  if (list.empty()) return "-";
  std::string text;
  for (std::size_t i = 0; i < list.size() && i < limit; ++i)
    text += (i ? "," : "") + std::to_string(list[i]);
  if (list.size() > limit) text += fmt::format(",+{}", list.size() - limit);
  return text;
}

std::string receiver_text(const SignalVerdict& v) {
  std::string text;
  if (v.sigwait_receiver) text = fmt::format("sigwait {}", v.sigwait_receiver);
  for (int fd : v.signalfds) text += (text.empty() ? "" : " ") + fmt::format("signalfd:{}", fd);
  return text.empty() ? "-" : text;
}

}  // namespace

namespace {

constexpr const char* kCauseNames[4] = {"on CPU", "runnable", "asleep", "blocked"};
constexpr const char* kCauseKeys[4] = {"on_cpu", "runnable", "asleep", "blocked"};

int largest_cause(const MeasuredSignal& m) {
  int best = 0;
  for (int i = 1; i < 4; ++i)
    if (m.cause_ns[i] > m.cause_ns[best]) best = i;
  return best;
}

const SignalVerdict* verdict_of(const InspectReport& r, int signal) {
  for (const auto& v : r.signals)
    if (v.signal == signal) return &v;
  return nullptr;
}

std::string measured_text(const InspectReport& r, const MeasuredWatch& m,
                          std::uint64_t duration_ns) {
  if (!m.ran)
    return "\nMeasured: not with BPF (" + m.how + "): the sampled figures above are lower bounds\n";
  std::string out = fmt::format(
      "\nMeasured with BPF for {}{} (generate to take, the kernel's own times; causes as in "
      "docs/trace.md){}:\n",
      format_duration(static_cast<double>(m.duration_ns != 0 ? m.duration_ns : duration_ns)),
      m.duration_ns != 0 ? ", from before the busy-thread window to the watch's end" : "",
      m.lost_events ? fmt::format(", {} events lost", m.lost_events) : "");
  if (m.signals.empty()) out += "  no signal was sent to it during the watch\n";
  for (const auto& s : m.signals) {
    const SignalVerdict* v = verdict_of(r, s.signal);
    std::string causes;
    std::uint64_t total = 0;
    for (auto ns : s.cause_ns) total += ns;
    for (int i = 0; i < 4; ++i)
      if (s.cause_ns[i] != 0)
        causes +=
            fmt::format("{}{} {:.0f}%", causes.empty() ? "" : ", ", kCauseNames[i],
                        100.0 * static_cast<double>(s.cause_ns[i]) / static_cast<double>(total));
    out += fmt::format("  {:<11} {}: {}\n", doorbell::signal_name(s.signal),
                       v ? verdict_name(v->verdict) : "not listed",
                       measured_check(v ? v->verdict : Verdict::default_action, s, m.slow_ns));
    out += fmt::format(
        "              generated {} (merged {}), taken {} (handler {}, sigwait {}, signalfd "
        "{}){}\n",
        s.generated, s.merged, s.taken, s.by_handler, s.by_sigwait, s.by_signalfd,
        s.unpaired ? fmt::format(", {} sent before the watch", s.unpaired) : "");
    if (s.taken > s.unpaired)
      out += fmt::format("              waited p50 {}, p99 {}, max {}; {}\n",
                         format_duration(s.p50_ns), format_duration(s.p99_ns),
                         format_duration(s.max_ns), causes.empty() ? "-" : causes);
    for (const auto& line : s.slowest) out += "              slow: " + line + "\n";
  }
  return out;
}

}  // namespace

std::string measured_check(Verdict verdict, const MeasuredSignal& m, std::uint64_t slow_ns) {
  const std::uint64_t paired = m.taken - std::min(m.taken, m.unpaired);
  const std::string threshold = format_duration(static_cast<double>(slow_ns));
  if (m.generated == 0 && m.taken == 0) return "no signal arrived during the watch";
  if (paired == 0) return fmt::format("{} taken, none generated during the watch", m.taken);
  const int cause = largest_cause(m);
  if (verdict == Verdict::at_risk) {
    if (m.slow != 0 && cause == 1)
      return fmt::format(
          "confirmed: {} of {} waited {} or more, mostly runnable (waiting for a CPU)", m.slow,
          paired, threshold);
    if (m.slow != 0)
      return fmt::format("{} of {} waited {} or more, mostly {}", m.slow, paired, threshold,
                         kCauseNames[cause]);
    return fmt::format("not seen in this watch: {} taken, the longest wait {} (under {})", paired,
                       format_duration(m.max_ns), threshold);
  }
  if (m.slow != 0)
    return fmt::format("{} of {} waited {} or more, mostly {}", m.slow, paired, threshold,
                       kCauseNames[cause]);
  return fmt::format("{} taken, all within {}", paired, format_duration(m.max_ns));
}

std::string init_note(const InspectReport& r) {
  if (!r.namespace_init) return {};
  if (r.global_init)
    return "the system's init (PID 1): the kernel runs no default action of a signal sent to it, "
           "and never delivers SIGKILL or SIGSTOP to it";
  return fmt::format(
      "PID 1 of its PID namespace{}: the kernel runs no default action of a signal sent to it; "
      "SIGKILL and SIGSTOP reach it only from an ancestor namespace (this one{})",
      r.namespace_pids.size() > 1
          ? fmt::format(" ({} namespaces deep)", r.namespace_pids.size() - 1)
          : "",
      r.namespace_pids.size() > 1 ? " is one" : " may be its own");
}

std::string render_text(const InspectReport& r, const WatchResult* watch) {
  std::string out;
  std::size_t busy = 0;
  for (const auto& t : r.threads) busy += t.busy;
  if (r.asked_tid != 0)
    out += fmt::format("thread {} belongs to process {}; signals go to the process:\n", r.asked_tid,
                       r.pid);
  out += fmt::format("process {} ({}): ", r.pid, r.name);
  if (r.stopped)
    out += r.stop_state == 't'
               ? "stopped by a tracer (State t): signals other than SIGKILL wait until the "
                 "tracer lets it go; "
               : "stopped (State T): signals other than SIGKILL and SIGCONT wait until SIGCONT "
                 "continues it; ";
  out +=
      fmt::format("{} thread{}, {} busy", r.threads.size(), r.threads.size() == 1 ? "" : "s", busy);
  out += r.window_ns ? fmt::format(" (runnable >= 50% of a {} window)\n",
                                   format_duration(static_cast<double>(r.window_ns)))
                     : " (State R; no sampling window)\n";
  if (r.namespace_init) out += "  " + init_note(r) + ".\n";
  if (r.orphaned_process_group)
    out += fmt::format(
        "  process group {} (session {}) is orphaned: SIGTSTP, SIGTTIN and SIGTTOU with no "
        "handler are discarded instead of stopping it (SIGSTOP still stops it).\n",
        r.process_group, r.session);
  if (r.short_lived_seen > 0 || r.short_lived_share >= 0.1)
    out += fmt::format(
        "  short-lived threads: {} born in the window still there at its end (BUSY \"new\"); "
        "threads not there for the whole window used {}\n",
        r.short_lived_seen, cpu_share_text(r.short_lived_share));
  out += fmt::format("  {:>8}  {:<16} {:<14} {}\n", "TID", "NAME", "POLICY", "BUSY");
  for (const auto& t : r.threads)
    out += fmt::format("  {:>8}  {:<16} {:<14} {}\n", t.tid, t.name, t.policy,
                       t.exited          ? "exited"
                       : t.busy          ? "yes"
                       : t.new_in_window ? "new"
                                         : "");
  out += "\n";
  out += fmt::format("  {:<11} {:<8} {:<13} {:<16} {:<8} {:<20} {}\n", "SIGNAL", "HANDLER",
                     "VERDICT", "CAN TAKE IT", "CHOSEN", "RECEIVER", "DEFAULT");
  for (const auto& v : r.signals)
    out += fmt::format("  {:<11} {:<8} {:<13} {:<16} {:<8} {:<20} {}\n", v.name, v.disposition,
                       verdict_name(v.verdict), tids(v.can_take, 2),
                       v.kernel_choice ? std::to_string(v.kernel_choice) : "-", receiver_text(v),
                       v.default_action);
  out += "\nWhy:\n";
  bool explained = false;
  for (const auto& v : r.signals) {
    if (v.plain) continue;
    out += fmt::format("  {}: {}: {}.\n", v.name, verdict_name(v.verdict), v.reason);
    explained = true;
  }
  if (!explained)
    out +=
        "  no signal has a handler, a signalfd or a sigwait receiver: each one listed is "
        "ignored or takes its default action.\n";
  if (!r.fdinfo_readable)
    out += r.reader_is_root
               ? "  (signalfds unknown: the kernel refuses /proc/PID/fdinfo even to root: its "
                 "ptrace-read check fails (the process is not dumpable, holds capabilities this "
                 "one lacks, or a security module denies it))\n"
               : "  (signalfds unknown: /proc/PID/fdinfo needs ptrace-read access to this process; "
                 "run as its user or as root)\n";
  out += "\nQueue: ";
  out += r.queued >= 0 ? fmt::format(
                             "SigQ {}/{} (queued signals of the process's user / its "
                             "limit)",
                             r.queued, r.queue_limit)
                       : "SigQ unreadable";
  out += r.rlimit_sigpending >= 0 ? fmt::format(", RLIMIT_SIGPENDING {}", r.rlimit_sigpending)
                                  : ", RLIMIT_SIGPENDING unlimited";
  out += fmt::format("; pending: shared {}", signal_list(r.shared_pending));
  for (const auto& [tid, mask] : r.thread_pending)
    out += fmt::format(", thread {} {}", tid, signal_list(mask));
  out += "\n";
  if (watch != nullptr) {
    out += fmt::format(
        "\nPending, sampled every {} for {} ({} sample{}{}; a signal pending between "
        "two samples is not seen; durations are lower bounds):\n",
        format_duration(static_cast<double>(watch->period_ns)),
        format_duration(static_cast<double>(watch->duration_ns)), watch->watch.sample_count(),
        watch->watch.sample_count() == 1 ? "" : "s",
        watch->ended_early.empty() ? "" : "; " + watch->ended_early);
    const auto entries = watch->watch.entries();
    if (entries.empty()) out += "  nothing was pending at any sample\n";
    for (const auto& e : entries)
      out += fmt::format("  {:<11} {:<14} seen in {} sample{}, {} episode{}, longest >= {}{}\n",
                         doorbell::signal_name(e.signal),
                         e.tid ? fmt::format("thread {}", e.tid) : "shared", e.samples,
                         e.samples == 1 ? "" : "s", e.episodes, e.episodes == 1 ? "" : "s",
                         format_duration(static_cast<double>(e.longest_ns)),
                         e.pending_now ? " (still pending)" : "");
  }
  if (watch != nullptr) out += measured_text(r, watch->measured, watch->duration_ns);
  out += "\nAdvice:\n";
  for (const auto& line : r.advice) out += "  - " + line + "\n";
  return out;
}

nlohmann::ordered_json render_json(const InspectReport& r, const WatchResult* watch) {
  nlohmann::ordered_json j;
  j["schema"] = "doorbell-inspect";
  j["version"] = 1;
  j["pid"] = r.pid;
  if (r.asked_tid != 0) j["asked_tid"] = r.asked_tid;
  j["name"] = r.name;
  j["stopped"] = r.stopped;
  if (r.namespace_init)
    j["namespace_init"] = {{"global", r.global_init},
                           {"namespace_pids", r.namespace_pids},
                           {"kill_from_inside", false},
                           {"kill_from_ancestor", !r.global_init},
                           {"note", init_note(r)}};
  j["process_group"] = {
      {"id", r.process_group}, {"session", r.session}, {"orphaned", r.orphaned_process_group}};
  j["short_lived_threads"] = {{"seen", r.short_lived_seen}, {"cpu_share", r.short_lived_share}};
  j["window_ns"] = r.window_ns;
  j["fdinfo_readable"] = r.fdinfo_readable;
  auto& threads = j["threads"] = nlohmann::ordered_json::array();
  for (const auto& t : r.threads)
    threads.push_back({{"tid", t.tid},
                       {"name", t.name},
                       {"policy", t.policy},
                       {"busy", t.busy},
                       {"new_in_window", t.new_in_window},
                       {"state", std::string(1, t.state)}});
  auto& signals = j["signals"] = nlohmann::ordered_json::array();
  for (const auto& v : r.signals) {
    signals.push_back({{"signal", v.signal},
                       {"name", v.name},
                       {"disposition", v.disposition},
                       {"verdict", verdict_key(v.verdict)},
                       {"default_action", v.default_action},
                       {"can_take", v.can_take},
                       {"kernel_choice", v.kernel_choice},
                       {"signalfds", v.signalfds},
                       {"sigwait_receiver", v.sigwait_receiver},
                       {"risky_thread", v.risky_thread},
                       {"busy_peers", v.busy_peers},
                       {"reason", v.reason}});
  }
  auto& queue = j["queue"];
  queue["queued"] = r.queued;
  queue["limit"] = r.queue_limit;
  queue["rlimit_sigpending"] = r.rlimit_sigpending;
  std::vector<int> shared;
  for (int s = 1; s <= 64; ++s)
    if (mask_has(r.shared_pending, s)) shared.push_back(s);
  queue["shared_pending"] = shared;
  auto& per_thread = queue["thread_pending"] = nlohmann::ordered_json::array();
  for (const auto& [tid, mask] : r.thread_pending) {
    std::vector<int> list;
    for (int s = 1; s <= 64; ++s)
      if (mask_has(mask, s)) list.push_back(s);
    per_thread.push_back({{"tid", tid}, {"signals", list}});
  }
  if (watch != nullptr) {
    auto& w = j["watch"];
    w["period_ns"] = watch->period_ns;
    w["duration_ns"] = watch->duration_ns;
    w["samples"] = watch->watch.sample_count();
    w["ended"] = watch->ended_early.empty() ? "duration reached" : watch->ended_early;
    auto& entries = w["pending"] = nlohmann::ordered_json::array();
    for (const auto& e : watch->watch.entries())
      entries.push_back({{"signal", e.signal},
                         {"name", doorbell::signal_name(e.signal)},
                         {"tid", e.tid},
                         {"samples", e.samples},
                         {"episodes", e.episodes},
                         {"longest_ns_at_least", e.longest_ns},
                         {"pending_now", e.pending_now}});
    auto& m = w["measured"];
    m["ran"] = watch->measured.ran;
    m["how"] = watch->measured.how;
    if (watch->measured.ran) {
      m["duration_ns"] =
          watch->measured.duration_ns != 0 ? watch->measured.duration_ns : watch->duration_ns;
      m["started"] = watch->measured.duration_ns != 0 ? "before the busy-thread window"
                                                      : "with the pending samples";
      m["slow_ns"] = watch->measured.slow_ns;
      m["lost_events"] = watch->measured.lost_events;
      auto& list = m["signals"] = nlohmann::ordered_json::array();
      for (const auto& s : watch->measured.signals) {
        const SignalVerdict* v = verdict_of(r, s.signal);
        nlohmann::ordered_json causes;
        for (int i = 0; i < 4; ++i) causes[kCauseKeys[i]] = s.cause_ns[i];
        list.push_back(
            {{"signal", s.signal},
             {"name", doorbell::signal_name(s.signal)},
             {"verdict", v ? nlohmann::ordered_json(verdict_key(v->verdict)) : nullptr},
             {"check",
              measured_check(v ? v->verdict : Verdict::default_action, s, watch->measured.slow_ns)},
             {"generated", s.generated},
             {"merged", s.merged},
             {"taken", s.taken},
             {"taken_by",
              {{"handler", s.by_handler}, {"sigwait", s.by_sigwait}, {"signalfd", s.by_signalfd}}},
             {"unpaired", s.unpaired},
             {"delay_ns", {{"p50", s.p50_ns}, {"p99", s.p99_ns}, {"max", s.max_ns}}},
             {"causes_ns", causes},
             {"slow", s.slow},
             {"slowest", s.slowest}});
      }
    }
  }
  j["advice"] = r.advice;
  return j;
}

}  // namespace doorbell::lab::inspect
