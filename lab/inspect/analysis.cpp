#include "lab/inspect/analysis.h"

#include <sched.h>
#include <signal.h>

#include <algorithm>
#include <cmath>
#include <optional>

#include <fmt/format.h>

#include "doorbell/signal_channel.h"  // signal_name

namespace doorbell::lab::inspect {
namespace {

constexpr double kBusyShare = 0.5;  // runnable (running + waiting) this much of the window

bool is_poll_site(const std::string& site) {
  static const char* const kSites[] = {
      "epoll_wait",      "epoll_pwait",   "epoll_pwait2", "poll",
      "ppoll",           "select",        "pselect6",     "read",
      "io_uring_enter",  "do_epoll_wait", "do_sys_poll",  "do_select",
      "signalfd_dequeue"};
  return std::any_of(std::begin(kSites), std::end(kSites),
                     [&](const char* s) { return site == s || site.rfind(s, 0) == 0; });
}

bool is_sigwait_site(const std::string& site) {
  return site == "rt_sigtimedwait" || site.rfind("do_sigtimedwait", 0) == 0;
}

// The thread waits for signo in sigtimedwait: it is in the call, and signo
// is in its wait set (or the set is unknown).
bool waits_for(const ThreadSnapshot& t, int signo) {
  return is_sigwait_site(t.wait_site) && (!t.sigwait_set || mask_has(*t.sigwait_set, signo));
}

bool gone(const ThreadSnapshot& t) {
  return t.exiting || t.state == 'Z' || t.state == 'X' || t.state == 'x';
}

bool share_cpus(const ThreadSnapshot& a, const ThreadSnapshot& b) {
  if (a.cpus_allowed.empty() || b.cpus_allowed.empty()) return true;  // unknown: assume so
  auto i = a.cpus_allowed.begin();
  auto j = b.cpus_allowed.begin();
  while (i != a.cpus_allowed.end() && j != b.cpus_allowed.end()) {
    if (*i == *j) return true;
    if (*i < *j)
      ++i;
    else
      ++j;
  }
  return false;
}

std::string thread_label(const ThreadSnapshot& t, pid_t pid, bool chosen_now = false) {
  return fmt::format("thread {} ({}{}{})", t.tid, t.name, t.tid == pid ? ", main" : "",
                     chosen_now ? "; the kernel's choice now" : "");
}

std::string tid_list(const std::vector<pid_t>& tids) {
  std::string text;
  for (std::size_t i = 0; i < tids.size(); ++i) {
    if (i == 6) return text + fmt::format(", ... {} more", tids.size() - i);
    text += (i ? ", " : "") + std::to_string(tids[i]);
  }
  return text;
}

// " (now: thread 12 in wait4, ...)": a program that blocks a signal around
// a wait (shells block SIGCHLD in wait4) unblocks it afterwards.
std::string where_threads_wait(const ProcessSnapshot& p) {
  std::string text;
  std::size_t shown = 0;
  for (const auto& t : p.threads) {
    if (t.wait_site.empty() || shown == 3) continue;
    text += fmt::format("{}thread {} in {}", shown++ ? ", " : " (now: ", t.tid, t.wait_site);
  }
  return text.empty() ? text : text + ")";
}

std::string percent(double share) {
  return fmt::format("{:.0f}%", std::clamp(share, 0.0, 1.0) * 100.0);
}

}  // namespace

std::string cpu_share_text(double share) {
  share = std::max(0.0, share);
  return share < 1 ? fmt::format("{:.0f}% of a CPU", share * 100.0)
                   : fmt::format("{:.1f} CPUs", share);
}

namespace {

// The thread complete_signal() would pick now, or nullptr.
const ThreadSnapshot* kernel_choice(const ProcessSnapshot& p, int signo) {
  auto wants = [&](const ThreadSnapshot& t) {
    if (t.blocks(signo) || gone(t) || t.state == 'T' || t.state == 't') return false;
    const bool has_pending = ((t.pending | p.shared_pending) & ~t.blocked) != 0;
    return t.state == 'R' || !has_pending;
  };
  if (const ThreadSnapshot* main = p.main_thread(); main && wants(*main)) return main;
  for (const auto& t : p.threads)
    if (wants(t)) return &t;
  return nullptr;
}

struct Risk {
  const ThreadSnapshot* thread = nullptr;
  std::vector<pid_t> busy_peers;
  bool busy_itself = false;
  double short_lived_share = -1;  // >= 0: short-lived threads as busy as one busy thread
};

bool short_lived_busy(const ProcessSnapshot& p) {
  return p.short_lived_share >= kBusyShare;
}

// Why a non-real-time thread can make the signal wait, if it can.
std::optional<Risk> risk_of(const ProcessSnapshot& p, const ThreadSnapshot& t) {
  if (t.realtime()) return std::nullopt;
  Risk risk;
  risk.thread = &t;
  risk.busy_itself = is_busy(t);
  for (const auto& u : p.threads)
    if (u.tid != t.tid && !gone(u) && is_busy(u) && share_cpus(t, u))
      risk.busy_peers.push_back(u.tid);
  // Their CPUs are not known (they are gone): taken to be shared.
  if (short_lived_busy(p)) risk.short_lived_share = p.short_lived_share;
  if (!risk.busy_itself && risk.busy_peers.empty() && risk.short_lived_share < 0)
    return std::nullopt;
  return risk;
}

std::string risk_reason(const ProcessSnapshot& p, const Risk& risk, bool chosen_now) {
  const ThreadSnapshot& t = *risk.thread;
  std::string why = fmt::format("can land on {}, {}", thread_label(t, p.pid, chosen_now),
                                policy_name(t.policy, t.rt_priority));
  if (risk.busy_itself) {
    why += t.run_share >= 0 ? fmt::format(
                                  ", busy itself (runnable {} of the window, {} waiting "
                                  "for a CPU)",
                                  percent(t.run_share + t.wait_share), percent(t.wait_share))
                            : ", busy itself (State R)";
  }
  const std::string cpus =
      fmt::format("{} {}", t.cpus_allowed.size() == 1 ? "CPU" : "CPUs", t.cpus_allowed_list);
  if (!risk.busy_peers.empty())
    why += fmt::format("{} shares {} with {} busy thread{} ({})", risk.busy_itself ? ", and" : ",",
                       cpus, risk.busy_peers.size(), risk.busy_peers.size() == 1 ? "" : "s",
                       tid_list(risk.busy_peers));
  if (risk.short_lived_share >= 0)
    why += fmt::format(
        "{} shares the machine with short-lived threads of this process that together used {} "
        "in the window",
        risk.busy_itself || !risk.busy_peers.empty() ? ", and" : ",",
        cpu_share_text(risk.short_lived_share));
  why += ": the signal waits for that thread's next time slice";
  return why;
}

void judge_receivers(const ProcessSnapshot& p, SignalVerdict& v) {
  std::vector<const ThreadSnapshot*> eligible;
  for (const auto& t : p.threads)
    if (std::find(v.can_take.begin(), v.can_take.end(), t.tid) != v.can_take.end())
      eligible.push_back(&t);
  const std::string fd_text =
      v.signalfds.empty() ? std::string()
                          : fmt::format("signalfd {} {}", v.signalfds.size() == 1 ? "fd" : "fds",
                                        fmt::join(v.signalfds, ", "));

  if (eligible.empty()) {
    if (v.signalfds.empty()) {
      v.verdict = Verdict::stays_pending;
      v.reason =
          "blocked in every thread and no signalfd reads it: it stays pending until a "
          "thread unblocks it or waits for it" +
          where_threads_wait(p);
      return;
    }
    // Every thread blocks it: the kernel wakes only the signalfd's reader.
    // Which thread reads the fd is not in /proc; the threads asleep in a
    // poll-like call are the candidates.
    std::vector<const ThreadSnapshot*> readers;
    for (const auto& t : p.threads)
      if (!gone(t) && is_poll_site(t.wait_site)) readers.push_back(&t);
    std::vector<pid_t> reader_tids;
    for (const auto* t : readers) reader_tids.push_back(t->tid);
    if (!readers.empty() &&
        std::all_of(readers.begin(), readers.end(), [](auto* t) { return t->realtime(); })) {
      v.verdict = Verdict::bounded;
      v.reason = fmt::format(
          "every thread blocks it; {} wakes its reader, and the thread{} waiting in a poll-like "
          "call ({}) run{} at {}",
          fd_text, readers.size() == 1 ? "" : "s", tid_list(reader_tids),
          readers.size() == 1 ? "s" : "", policy_name(readers[0]->policy, readers[0]->rt_priority));
      return;
    }
    for (const auto* t : readers) {
      if (auto risk = risk_of(p, *t)) {
        v.verdict = Verdict::at_risk;
        v.risky_thread = t->tid;
        v.busy_peers = risk->busy_peers;
        v.reason = fmt::format("every thread blocks it and {} reads it; its reader ", fd_text) +
                   risk_reason(p, *risk, false);
        return;
      }
    }
    if (readers.empty()) {
      std::vector<pid_t> busy;
      for (const auto& t : p.threads)
        if (!gone(t) && !t.realtime() && is_busy(t)) busy.push_back(t.tid);
      if (!busy.empty()) {
        v.verdict = Verdict::at_risk;
        v.busy_peers = busy;
        v.reason = fmt::format(
            "every thread blocks it and {} reads it, but no thread waits on it now: its reader "
            "is one of the SCHED_OTHER threads, {} of them busy ({})",
            fd_text, busy.size(), tid_list(busy));
        return;
      }
    }
    v.verdict = Verdict::fair_share;
    v.reason = fmt::format(
        "every thread blocks it and {} reads it{}; the reader runs at SCHED_OTHER with no busy "
        "thread beside it now: quick today, not bounded under load",
        fd_text, reader_tids.empty() ? "" : " (reader: " + tid_list(reader_tids) + ")");
    return;
  }

  const std::string also_fd =
      v.signalfds.empty()
          ? std::string()
          : fmt::format(
                "; {} also reads it, but a thread that does not block it may take it "
                "first",
                fd_text);
  if (std::all_of(eligible.begin(), eligible.end(), [](auto* t) { return t->realtime(); })) {
    v.verdict = Verdict::bounded;
    const ThreadSnapshot& t = *eligible.front();
    if (eligible.size() == 1) {
      v.reason = fmt::format("only {} does not block it, at {}{}", thread_label(t, p.pid),
                             policy_name(t.policy, t.rt_priority),
                             v.sigwait_receiver == t.tid ? ", waiting in sigtimedwait" : "");
      if (!v.signalfds.empty()) v.reason += fmt::format("; {} reads it too", fd_text);
    } else {
      v.reason =
          fmt::format("all {} threads that can take it run at SCHED_FIFO/RR", eligible.size()) +
          also_fd;
    }
    return;
  }

  // Weigh the kernel's choice first, then the others in list order.
  std::vector<const ThreadSnapshot*> order;
  for (const auto* t : eligible)
    if (t->tid == v.kernel_choice) order.push_back(t);
  for (const auto* t : eligible)
    if (t->tid != v.kernel_choice) order.push_back(t);
  for (const auto* t : order) {
    if (auto risk = risk_of(p, *t)) {
      v.verdict = Verdict::at_risk;
      v.risky_thread = t->tid;
      v.busy_peers = risk->busy_peers;
      v.reason = risk_reason(p, *risk, t->tid == v.kernel_choice) + also_fd;
      return;
    }
  }
  const ThreadSnapshot& t = *order.front();
  v.verdict = Verdict::fair_share;
  v.reason =
      fmt::format(
          "lands on {} at {}{}; no busy thread shares its CPUs now, so it runs soon, but nothing "
          "bounds the wait under load",
          thread_label(t, p.pid), policy_name(t.policy, t.rt_priority),
          eligible.size() > 1 ? fmt::format(" (or {} other thread{})", eligible.size() - 1,
                                            eligible.size() == 2 ? "" : "s")
                              : std::string()) +
      also_fd;
}

std::vector<std::string> make_advice(const InspectReport& r) {
  std::vector<std::string> advice;
  auto names_where = [&](auto&& pred) {
    std::vector<std::string> names;
    for (const auto& v : r.signals)
      if (pred(v)) names.push_back(v.name);
    return fmt::format("{}", fmt::join(names, ", "));
  };
  auto any = [&](auto&& pred) { return std::any_of(r.signals.begin(), r.signals.end(), pred); };
  auto unbounded = [](const SignalVerdict& v) {
    return v.verdict == Verdict::at_risk || v.verdict == Verdict::fair_share;
  };
  if (any(unbounded)) {
    advice.push_back(fmt::format(
        "{}: to bound the delay, block them in main() before any thread starts "
        "(doorbell::block_signals_before_threads) and take them in one doorbell::SignalReceiver "
        "with Options::fifo_priority (SCHED_FIFO) - docs/delivery.md, \"Which one when\"; "
        "docs/guide.md, \"Real-time bounds with process-directed signals\".",
        names_where(unbounded)));
    advice.push_back(
        "If you send them and cannot change this process: doorbell::ThreadBroadcaster sends to "
        "every thread, so the first one to run takes the signal (docs/delivery.md).");
  }
  auto handled_unbounded = [&](const SignalVerdict& v) {
    return unbounded(v) && v.disposition == "handler";
  };
  if (any(handled_unbounded))
    advice.push_back(fmt::format(
        "{}: handlers run on whichever thread the kernel picked; doorbell::SignalChannel turns "
        "signals into events on an event loop (docs/signals.md).",
        names_where(handled_unbounded)));
  auto fd_unbounded = [&](const SignalVerdict& v) { return unbounded(v) && !v.signalfds.empty(); };
  if (any(fd_unbounded))
    advice.push_back(fmt::format(
        "{}: a signalfd is only as quick as the thread that reads it: keep the signals blocked "
        "in every thread and read it on a SCHED_FIFO thread (SignalReceiver with "
        "Method::signalfd and fifo_priority).",
        names_where(fd_unbounded)));
  auto discarded = [](const SignalVerdict& v) { return v.verdict == Verdict::discarded; };
  // An init's refusals come first in analyze(): in an init, every discarded
  // signal is one; elsewhere they are the job-control stops of an orphaned
  // process group.
  if (any(discarded) && r.namespace_init)
    advice.push_back(fmt::format(
        "{}: this process is the init of its PID namespace (a container's first process): the "
        "kernel never runs their default action. To make it stop on them, install handlers "
        "that exit (or run a small init such as tini or dumb-init, which forwards them); "
        "SIGKILL works only from an ancestor namespace, e.g. the host (docker stop sends it "
        "after its grace period).",
        names_where(discarded)));
  else if (any(discarded))
    advice.push_back(fmt::format(
        "{}: process group {} is orphaned (a daemon, a setsid or nohup program, a service: no "
        "job-control shell could continue it), so the kernel discards these instead of "
        "stopping it. SIGSTOP still stops it; a handler still sees them.",
        names_where(discarded), r.process_group));
  auto pending = [](const SignalVerdict& v) { return v.verdict == Verdict::stays_pending; };
  if (any(pending))
    advice.push_back(fmt::format(
        "{}: blocked everywhere and nobody reads them, so they stay pending until the program "
        "unblocks them (a shell blocks SIGCHLD while it waits for a child; a sigwait receiver "
        "shows the set unblocked only while it waits: if it was busy in its callback, run "
        "inspect again).",
        names_where(pending)));
  const bool queue_high = r.queued >= 0 && r.queue_limit > 0 && r.queued * 2 >= r.queue_limit;
  const int realtime_pending = [&] {
    std::uint64_t all = r.shared_pending;
    for (const auto& [tid, mask] : r.thread_pending) all |= mask;
    return __builtin_popcountll(all & ~std::uint64_t{0xffffffffu});
  }();
  if (queue_high || realtime_pending > 0)
    advice.push_back(fmt::format(
        "Signal queue {}/{}{}: signals used as a data channel cost a kernel entry and a signal "
        "frame each; use an eventfd or doorbell::Bell to wake and doorbell::Ring for data "
        "(docs/guide.md, \"High-rate notification\").",
        r.queued, r.queue_limit,
        realtime_pending ? fmt::format(", {} real-time signals pending", realtime_pending) : ""));
  if (advice.empty())
    advice.push_back(
        "Nothing to change: no handled or waited-for signal can wait for a busy "
        "thread (docs/delivery.md says why that matters).");
  return advice;
}

}  // namespace

const char* verdict_name(Verdict verdict) noexcept {
  switch (verdict) {
    case Verdict::bounded:
      return "bounded";
    case Verdict::at_risk:
      return "at risk";
    case Verdict::fair_share:
      return "fair share";
    case Verdict::stays_pending:
      return "stays pending";
    case Verdict::ignored:
      return "ignored";
    case Verdict::discarded:
      return "discarded";
    case Verdict::default_action:
      return "default";
  }
  return "?";
}

const char* verdict_key(Verdict verdict) noexcept {
  switch (verdict) {
    case Verdict::bounded:
      return "bounded";
    case Verdict::at_risk:
      return "at_risk";
    case Verdict::fair_share:
      return "fair_share";
    case Verdict::stays_pending:
      return "stays_pending";
    case Verdict::ignored:
      return "ignored";
    case Verdict::discarded:
      return "discarded";
    case Verdict::default_action:
      return "default";
  }
  return "?";
}

const char* default_action_name(int signo) noexcept {
  switch (signo) {
    case SIGQUIT:
    case SIGILL:
    case SIGTRAP:
    case SIGABRT:
    case SIGBUS:
    case SIGFPE:
    case SIGSEGV:
    case SIGXCPU:
    case SIGXFSZ:
    case SIGSYS:
      return "core";
    case SIGSTOP:
    case SIGTSTP:
    case SIGTTIN:
    case SIGTTOU:
      return "stop";
    case SIGCONT:
      return "continue";
    case SIGCHLD:
    case SIGURG:
    case SIGWINCH:
      return "ignore";
    default:
      return "terminate";
  }
}

std::string policy_name(int policy, int rt_priority) {
  switch (policy) {
    case SCHED_OTHER:
      return "SCHED_OTHER";
    case SCHED_FIFO:
      return fmt::format("SCHED_FIFO {}", rt_priority);
    case SCHED_RR:
      return fmt::format("SCHED_RR {}", rt_priority);
    case SCHED_BATCH:
      return "SCHED_BATCH";
    case SCHED_IDLE:
      return "SCHED_IDLE";
#ifdef SCHED_DEADLINE
    case SCHED_DEADLINE:
      return "SCHED_DEADLINE";
#endif
    default:
      return fmt::format("policy {}", policy);
  }
}

bool is_busy(const ThreadSnapshot& t) noexcept {
  if (t.run_share >= 0 && t.wait_share >= 0) return t.run_share + t.wait_share >= kBusyShare;
  // Born in the window: not measured, and not busy for long (the process's
  // short-lived share counts such threads together).
  if (t.new_in_window) return false;
  return t.state == 'R';
}

InspectReport analyze(const ProcessSnapshot& p) {
  InspectReport report;
  report.pid = p.pid;
  report.asked_tid = p.asked_tid;
  report.name = p.name;
  report.queued = p.queued;
  report.queue_limit = p.queue_limit;
  report.rlimit_sigpending = p.rlimit_sigpending;
  report.shared_pending = p.shared_pending;
  report.window_ns = p.window_ns;
  report.fdinfo_readable = p.fdinfo_readable;
  report.reader_is_root = p.reader_is_root;
  report.namespace_init = p.namespace_init;
  report.global_init = p.global_init;
  report.namespace_pids = p.namespace_pids;
  report.process_group = p.process_group;
  report.session = p.session;
  report.orphaned_process_group = p.orphaned_process_group;
  report.short_lived_share = p.short_lived_share;
  report.short_lived_seen = p.short_lived_seen;
  std::uint64_t caught = 0, ignored = 0, some_blocked = 0, pending = p.shared_pending;
  bool any_live = false, all_stopped = true, all_traced = true;
  for (const auto& t : p.threads) {
    report.threads.push_back({t.tid, t.name, policy_name(t.policy, t.rt_priority), is_busy(t),
                              t.new_in_window, t.state, gone(t)});
    if (t.pending) report.thread_pending.emplace_back(t.tid, t.pending);
    caught |= t.caught;
    ignored |= t.ignored;
    pending |= t.pending;
    if (gone(t)) continue;
    any_live = true;
    some_blocked |= t.blocked;
    all_stopped = all_stopped && (t.state == 'T' || t.state == 't');
    all_traced = all_traced && t.state == 't';
  }
  report.stopped = any_live && all_stopped;
  if (report.stopped) report.stop_state = all_traced ? 't' : 'T';
  const ThreadSnapshot* main = p.main_thread();  // also when it has exited
  if (main) some_blocked |= main->blocked;
  std::uint64_t by_signalfd = 0;
  for (const auto& fd : p.signalfds) by_signalfd |= fd.mask;
  const std::uint64_t always = mask_of(SIGHUP) | mask_of(SIGINT) | mask_of(SIGQUIT) |
                               mask_of(SIGTERM) | mask_of(SIGUSR1) | mask_of(SIGUSR2);
  // In an orphaned group the job-control stops do not do what their default
  // says: list them.
  const std::uint64_t job_stops =
      p.orphaned_process_group ? mask_of(SIGTSTP) | mask_of(SIGTTIN) | mask_of(SIGTTOU) : 0;
  const std::uint64_t shown =
      (caught | ignored | pending | by_signalfd | some_blocked | always | job_stops) &
      ~(mask_of(SIGKILL) | mask_of(SIGSTOP));
  const std::string init_text =
      p.global_init ? "this is the system's init (PID 1)"
                    : fmt::format("this process is PID 1 of its PID namespace{}",
                                  p.namespace_pids.size() > 1
                                      ? fmt::format(" (PID {} here)", p.namespace_pids.front())
                                      : std::string());

  for (int signo = 1; signo <= 64; ++signo) {
    if (!mask_has(shown, signo)) continue;
    // 32 and 33 (below SIGRTMIN) belong to the C library (thread
    // cancellation, setxid): thread-directed, never sent to the process.
    if (signo >= 32 && signo < SIGRTMIN) continue;
    SignalVerdict v;
    v.signal = signo;
    v.name = doorbell::signal_name(signo);
    v.default_action = default_action_name(signo);
    const std::string action = v.default_action;
    const bool is_caught = mask_has(caught, signo);
    const bool is_ignored = mask_has(ignored, signo);
    v.disposition = is_caught ? "handler" : is_ignored ? "ignored" : "default";
    for (const auto& t : p.threads) {
      if (gone(t) || t.blocks(signo)) continue;
      v.can_take.push_back(t.tid);
      if (v.sigwait_receiver == 0 && waits_for(t, signo)) v.sigwait_receiver = t.tid;
    }
    for (const auto& fd : p.signalfds)
      if (mask_has(fd.mask, signo)) v.signalfds.push_back(fd.fd);
    if (const ThreadSnapshot* choice = kernel_choice(p, signo)) v.kernel_choice = choice->tid;
    // The kernel's send-time checks look at the task kill() names, the main
    // thread (sig_ignored: blocked, or waited for in sigtimedwait, is never
    // ignored). Without a main thread in the list, every thread's mask.
    const bool main_blocks =
        main ? main->blocks(signo) || v.sigwait_receiver == main->tid : v.can_take.empty();
    const bool waited = !v.signalfds.empty() || v.sigwait_receiver != 0;
    // Threads that can take it other than by waiting for it in sigtimedwait.
    std::vector<pid_t> takers;
    for (const auto& t : p.threads)
      if (std::find(v.can_take.begin(), v.can_take.end(), t.tid) != v.can_take.end() &&
          !waits_for(t, signo))
        takers.push_back(t.tid);
    const bool disposition_ignores = is_ignored || (!is_caught && action == "ignore");
    const bool init_refuses =
        p.namespace_init && !is_caught && !is_ignored && action != "ignore" && action != "continue";
    // A job-control stop with its default action, in a group the kernel
    // judges orphaned when the signal is taken.
    const bool orphan_drops = action == "stop" && signo != SIGSTOP && p.orphaned_process_group;
    const std::string orphan_text = fmt::format(
        "process group {} is orphaned (no member has a parent in another group of session {})",
        p.process_group, p.session);
    const std::string stopped_text = report.stop_state == 't'
                                         ? "the process is stopped by a tracer (State t)"
                                         : "the process is stopped (State T)";

    if (disposition_ignores && !main_blocks) {
      v.verdict = Verdict::ignored;
      v.reason = is_ignored ? "SIG_IGN, and the main thread does not block it: the kernel "
                              "discards it at send time"
                            : "no handler, and its default action is to ignore it";
      v.plain = true;
    } else if (init_refuses && !main_blocks) {
      v.verdict = Verdict::discarded;
      v.reason = fmt::format(
          "{}: the kernel discards a signal whose action would be the default ({}) at send time "
          "(SIGNAL_UNKILLABLE), from whichever namespace it comes",
          init_text, action);
    } else if (report.stopped && signo != SIGCONT) {
      v.verdict = Verdict::stays_pending;
      v.reason = fmt::format("{}: it waits until SIGCONT continues the process{}", stopped_text,
                             disposition_ignores ? ", and is then discarded (ignored)"
                             : init_refuses      ? ", and is then discarded (an init)"
                             : action == "stop" && !is_caught && !waited
                                 ? " (SIGCONT discards a pending stop signal)"
                                 : "");
    } else if (init_refuses && !takers.empty()) {
      v.verdict = Verdict::discarded;
      v.reason = fmt::format(
          "{}: the main thread blocks it, so it is queued; thread {}, which does not, takes it "
          "and the kernel drops it there (get_signal: an init's default action never runs, not "
          "even a fatal one)",
          init_text, takers.front());
    } else if (disposition_ignores && !waited && !takers.empty()) {
      v.verdict = Verdict::ignored;
      v.reason = fmt::format(
          "{}, and the main thread blocks it: the kernel queues it (a blocked signal is never "
          "discarded at send), then thread {}, which does not block it, takes and drops it",
          is_ignored ? "SIG_IGN" : "its default action is to ignore it", takers.front());
    } else if (is_caught || waited) {
      judge_receivers(p, v);
    } else if (disposition_ignores || init_refuses || v.can_take.empty()) {
      v.verdict = Verdict::stays_pending;
      v.reason = fmt::format(
                     "{}: it stays pending until a thread unblocks it{}",
                     disposition_ignores
                         ? fmt::format(
                               "{}, but the main thread blocks it, and the kernel queues a blocked "
                               "signal whatever its disposition",
                               is_ignored ? "SIG_IGN" : "its default action is to ignore it")
                         : "no handler, and blocked in every thread",
                     disposition_ignores ? " (then it is discarded)"
                     : init_refuses      ? fmt::format(" (then it is discarded: {})", init_text)
                     : orphan_drops      ? fmt::format(" (then it is discarded: {})", orphan_text)
                                    : fmt::format(" (then its default action, {}, runs)", action)) +
                 where_threads_wait(p);
    } else if (orphan_drops) {
      v.verdict = Verdict::discarded;
      v.reason = fmt::format(
          "no handler, and {}: the thread that takes it (the kernel chose {}) drops it rather than "
          "stop a process that no job-control shell would continue",
          orphan_text, v.kernel_choice);
    } else {
      v.verdict = Verdict::default_action;
      v.plain = true;
      if (action == "stop")
        v.reason = fmt::format(
            "no handler: it stops the process; the group stop starts only when "
            "the chosen thread ({}) runs",
            v.kernel_choice);
      else if (action == "continue")
        v.reason = "no handler: it resumes the process at send time";
      else
        v.reason = fmt::format(
            "no handler: it {} the process; the kernel wakes every thread for "
            "a fatal signal, so nothing waits for one busy thread",
            action == "core" ? "dumps core and kills" : "terminates");
    }
    report.signals.push_back(std::move(v));
  }
  report.advice = make_advice(report);
  return report;
}

}  // namespace doorbell::lab::inspect
