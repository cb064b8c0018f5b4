// The sched_switch measurement source of the partition scheduler
// (window_trace.h).
#include "lab/partition/window_trace.h"

#include <fcntl.h>
#include <pthread.h>
#include <sched.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <condition_variable>
#include <limits>
#include <mutex>
#include <optional>
#include <thread>
#include <unordered_map>

#include "sys/fd.h"
#include "sys/tracefs.h"

namespace doorbell::lab {

namespace tracefs = sys::tracefs;

namespace {

constexpr tracefs::EventName kEvents[] = {{"sched", "sched_switch"},
                                          {"sched", "sched_wakeup"},
                                          {"sched", "sched_wakeup_new"},
                                          {"sched", "sched_process_fork"},
                                          {"sched", "sched_process_exit"}};

constexpr long long kBufferKb = 8192;                      // per CPU
constexpr long long kDrainAtBytes = kBufferKb * 1024 / 4;  // a quarter full

struct Interval {
  int64_t in = 0, out = 0;
  bool from_wakeup = false;  // its start is the wake-up (the switch from idle was not traced)
};

}  // namespace

TraceFigures apply_sched_events(std::vector<SchedEvent> events, const std::vector<pid_t>& pids,
                                partition::RunReport& report, int64_t complete_until_ns) {
  std::stable_sort(events.begin(), events.end(),
                   [](const SchedEvent& x, const SchedEvent& y) { return x.ts_ns < y.ts_ns; });
  std::unordered_map<pid_t, std::size_t> owner;
  for (std::size_t i = 0; i < pids.size(); ++i) owner[pids[i]] = i;
  struct Cpu {
    bool known = false;  // a switch was seen on this CPU
    pid_t current = 0;   // the task switched in last (0: idle)
    long part = -1;      // its partition, -1: none
    int64_t since = 0;
    pid_t woken = -1;  // the partition task last woken onto this CPU
    long woken_part = -1;
    int64_t woken_at = 0;
  };
  std::unordered_map<int, Cpu> cpus;
  std::vector<std::vector<Interval>> intervals(pids.size());
  int64_t last_ts = 0;
  for (const SchedEvent& e : events) {
    const auto ts = static_cast<int64_t>(e.ts_ns);
    last_ts = std::max(last_ts, ts);
    switch (e.kind) {
      case SchedEvent::fork:
        if (auto it = owner.find(e.a); it != owner.end()) owner[e.b] = it->second;
        break;
      case SchedEvent::exit:
        owner.erase(e.a);
        break;
      case SchedEvent::wakeup: {
        const auto it = owner.find(e.a);
        if (it == owner.end()) break;
        // Kept whatever the CPU runs as far as the trace says: this guest's
        // kernel leaves out some switches (from idle, and seen: to idle
        // after a kernel thread), so the CPU may be idle when the trace
        // says it runs another task. Used only if the task's switch-in is
        // missing (its switch-out comes while the trace has another task
        // current there).
        Cpu& c = cpus[static_cast<int>(e.b)];
        c.woken = e.a;
        c.woken_part = static_cast<long>(it->second);
        c.woken_at = ts;
        break;
      }
      case SchedEvent::switch_: {
        Cpu& c = cpus[e.cpu];
        if (c.known && c.part >= 0 && c.current == e.a) {
          intervals[c.part].push_back({c.since, ts, false});
        } else if (c.woken == e.a && c.woken_part >= 0) {
          // Its switch from idle was not emitted: it ran since its wake-up.
          intervals[c.woken_part].push_back({c.woken_at, ts, true});
        }
        c.known = true;
        c.current = e.b;
        const auto it = owner.find(e.b);
        c.part = it == owner.end() ? -1 : static_cast<long>(it->second);
        c.since = ts;
        c.woken = -1;
        c.woken_part = -1;
        break;
      }
    }
  }
  // Still on a CPU when the trace ended.
  for (auto& [cpu, c] : cpus)
    if (c.known && c.part >= 0) {
      intervals[c.part].push_back({c.since, std::numeric_limits<int64_t>::max(), false});
    }

  // Match the windows with the intervals, partition by partition: one
  // sweep per figure over the intervals sorted by start and the windows
  // sorted by the start of what they ask about. An interval enters the
  // active list once and leaves it once; a window looks only at the active
  // ones (those that may overlap it: a few per CPU). Linear in intervals +
  // windows after the sorts; the old per-window scan of every interval took
  // minutes after a 10-minute run (issue 36).
  TraceFigures figures;
  struct Query {
    int64_t lo = 0, hi = 0;  // intervals with out > lo and in < hi
    std::size_t window = 0;
  };
  auto sweep = [&figures](std::vector<Interval>& list, std::vector<Query>& queries,
                          const auto& visit) {
    std::sort(queries.begin(), queries.end(),
              [](const Query& x, const Query& y) { return x.lo < y.lo; });
    std::vector<const Interval*> active;
    std::size_t next = 0;
    for (const Query& q : queries) {
      while (next < list.size() && list[next].in < q.hi) active.push_back(&list[next++]);
      // Ended at or before lo: no later query (lo only grows) overlaps it.
      std::erase_if(active, [&](const Interval* r) {
        ++figures.intervals_examined;
        return r->out <= q.lo;
      });
      for (const Interval* r : active)
        if (r->in < q.hi) visit(q.window, *r);
    }
  };
  std::vector<std::vector<std::size_t>> windows_of(intervals.size());
  for (std::size_t i = 0; i < report.windows.size(); ++i) {
    const partition::WindowRecord& w = report.windows[i];
    if (w.partition >= intervals.size()) continue;
    // The last time this window's figures look at: its stop (or, never
    // stopped, the run's end) and its nominal end.
    const int64_t until = w.stopped_ns > 0 ? std::max(w.stopped_ns, w.nominal_end_ns)
                                           : std::numeric_limits<int64_t>::max();
    if (until >= complete_until_ns) {
      if (figures.past_bound++ == 0 || w.frame < figures.first_frame_past_bound)
        figures.first_frame_past_bound = w.frame;
      continue;
    }
    windows_of[w.partition].push_back(i);
  }
  // Per window, indexed by its place in report.windows.
  std::vector<bool> first_from_wakeup(report.windows.size(), false);
  std::vector<int64_t> last(report.windows.size(), 0);
  for (std::size_t p = 0; p < intervals.size(); ++p) {
    std::vector<Interval>& list = intervals[p];
    std::sort(list.begin(), list.end(),
              [](const Interval& x, const Interval& y) { return x.in < y.in; });
    std::vector<Query> queries;
    // first_run_ns: the earliest time at or after the resume, before the
    // suspension, that a thread was on a CPU.
    for (std::size_t i : windows_of[p]) {
      partition::WindowRecord& w = report.windows[i];
      if (w.resume_requested_ns <= 0) continue;
      const int64_t until =
          w.suspend_requested_ns > 0 ? w.suspend_requested_ns : std::numeric_limits<int64_t>::max();
      queries.push_back({w.resume_requested_ns, until, i});
      w.first_run_ns = 0;
    }
    sweep(list, queries, [&](std::size_t i, const Interval& r) {
      partition::WindowRecord& w = report.windows[i];
      const int64_t at = std::max(r.in, w.resume_requested_ns);
      if (w.first_run_ns == 0 || at < w.first_run_ns) {
        w.first_run_ns = at;
        first_from_wakeup[i] = r.from_wakeup;
      }
    });
    for (const Query& q : queries)
      if (report.windows[q.window].first_run_ns) {
        ++figures.first_runs;
        figures.first_runs_from_wakeup += first_from_wakeup[q.window];
      }
    // stopped_ns: the stop as the partition lived it, the last time one of
    // its threads left a CPU after the suspension was issued, before the
    // scheduler noticed. The notice comes later (SIGCHLD or cgroup.events,
    // then the scheduler's wake-up). Without such a switch-out (none
    // traced) the noticed time stays.
    queries.clear();
    for (std::size_t i : windows_of[p]) {
      const partition::WindowRecord& w = report.windows[i];
      if (w.stopped_ns > 0 && !w.never_stopped && w.suspend_requested_ns > 0)
        queries.push_back({w.suspend_requested_ns, w.stopped_ns, i});
    }
    sweep(list, queries, [&](std::size_t i, const Interval& r) {
      last[i] = std::max(last[i], std::min(r.out, report.windows[i].stopped_ns));
    });
    for (const Query& q : queries)
      if (last[q.window] > 0) {
        report.windows[q.window].stopped_ns = last[q.window];
        ++figures.stops;
      }
    // cpu_after_end_ns: the CPU time of its threads in [nominal_end, stopped).
    queries.clear();
    for (std::size_t i : windows_of[p]) {
      partition::WindowRecord& w = report.windows[i];
      if (w.stopped_ns > 0) {
        queries.push_back({w.nominal_end_ns, w.stopped_ns, i});
        w.cpu_after_end_ns = 0;
        ++figures.cpu_after_end;
      } else {
        w.cpu_after_end_ns = -1;
      }
    }
    sweep(list, queries, [&](std::size_t i, const Interval& r) {
      partition::WindowRecord& w = report.windows[i];
      const int64_t in = std::max(r.in, w.nominal_end_ns);
      const int64_t out = std::min(r.out, w.stopped_ns);
      if (out > in) w.cpu_after_end_ns += out - in;
    });
  }
  (void)last_ts;
  return figures;
}

struct SchedSwitchWindows::Session {
  std::optional<tracefs::EventFormats> formats;
  std::optional<tracefs::Instance> instance;
  int switch_id = -1, wakeup_id = -1, wakeup_new_id = -1, fork_id = -1, exit_id = -1;
  std::vector<SchedEvent> events;
  std::size_t max_events = 0;
  std::size_t not_kept = 0;
  int64_t first_not_kept_ns = std::numeric_limits<int64_t>::max();
  std::thread reader;
  std::mutex mutex;
  std::condition_variable wake;
  bool stop = false;
  sys::UniqueFd instances_fd;  // the tracing dir's instances/, for the guardian

  void drain() {
    instance->read(*formats, [this](const tracefs::RawEvent& raw) {
      SchedEvent e;
      e.ts_ns = raw.ts_ns;
      e.cpu = raw.cpu;
      auto number = [&raw](const char* field) {
        return static_cast<pid_t>(raw.number(field).value_or(0));
      };
      if (raw.id == switch_id) {
        e.kind = SchedEvent::switch_;
        e.a = number("prev_pid");
        e.b = number("next_pid");
      } else if (raw.id == wakeup_id || raw.id == wakeup_new_id) {
        e.kind = SchedEvent::wakeup;
        e.a = number("pid");
        e.b = number("target_cpu");
      } else if (raw.id == fork_id) {
        e.kind = SchedEvent::fork;
        e.a = number("parent_pid");
        e.b = number("child_pid");
      } else if (raw.id == exit_id) {
        e.kind = SchedEvent::exit;
        e.a = number("pid");
      } else {
        return;
      }
      if (events.size() >= max_events) {
        ++not_kept;
        first_not_kept_ns = std::min(first_not_kept_ns, static_cast<int64_t>(e.ts_ns));
        return;
      }
      events.push_back(e);
    });
    // At the bound the kernel stops recording: what it would record is not
    // kept anyway.
    if (not_kept > 0) instance->tracing_off();
  }
};

SchedSwitchWindows::SchedSwitchWindows(std::size_t max_events)
    : max_events_(std::max<std::size_t>(max_events, 1)) {}

SchedSwitchWindows::~SchedSwitchWindows() {
  if (session_ && session_->reader.joinable()) {
    {
      std::lock_guard lock(session_->mutex);
      session_->stop = true;
    }
    session_->wake.notify_all();
    session_->reader.join();
  }
}

bool SchedSwitchWindows::available(std::string* why_not) {
  if (::geteuid() != 0) {
    if (why_not) *why_not = "the sched_switch tracepoint needs root";
    return false;
  }
  try {
    (void)tracefs::tracing_dir();
  } catch (const std::exception& e) {
    if (why_not) *why_not = e.what();
    return false;
  }
  return true;
}

void SchedSwitchWindows::partitions_started(const std::vector<pid_t>& pids) {
  pids_ = pids;
  auto s = std::make_unique<Session>();
  s->max_events = max_events_;
  s->events.reserve(std::min<std::size_t>(max_events_, std::size_t{1} << 16));
  s->formats.emplace(std::vector<tracefs::EventName>(std::begin(kEvents), std::end(kEvents)));
  s->switch_id = s->formats->id("sched", "sched_switch");
  s->wakeup_id = s->formats->id("sched", "sched_wakeup");
  s->wakeup_new_id = s->formats->id("sched", "sched_wakeup_new");
  s->fork_id = s->formats->id("sched", "sched_process_fork");
  s->exit_id = s->formats->id("sched", "sched_process_exit");
  if (s->switch_id < 0 || s->fork_id < 0)
    throw tracefs::TracefsError("this kernel has no sched:sched_switch / sched_process_fork event");
  s->instance.emplace("partition");
  s->instances_fd.reset(::open((tracefs::tracing_dir().path + "/instances").c_str(),
                               O_RDONLY | O_DIRECTORY | O_CLOEXEC));
  tracefs::Instance& instance = *s->instance;
  instance.tracing_off();
  instance.write("buffer_size_kb", std::to_string(kBufferKb).c_str());
  if (!instance.write("trace_clock", "mono"))
    throw tracefs::TracefsError("trace_clock mono is not available");
  for (const auto& ev : kEvents)
    if (!instance.enable(ev.system, ev.event) && std::string(ev.event) == "sched_switch")
      throw tracefs::TracefsError("could not enable sched:sched_switch");
  instance.write("trace", "");
  instance.tracing_on();
  Session* raw = s.get();
  s->reader = std::thread([raw] {
    // A drain (up to a millisecond of parsing) competes with the
    // partitions' threads: a trace showed a stopping partition's last
    // threads queued behind it for 600-880 us at a window's end (the
    // scheduler's process and the partitions are separate autogroups, so
    // the reader weighs as much as a whole partition; SCHED_IDLE does not
    // change that). So the reader drains only when a CPU's buffer is a
    // quarter full (8 MB a CPU: tens of seconds of a busy schedule here),
    // and at the end; an overrun is detected and reported (refine()).
    sched_param idle{};
    (void)::pthread_setschedparam(::pthread_self(), SCHED_IDLE, &idle);
    std::unique_lock lock(raw->mutex);
    while (!raw->stop) {
      raw->wake.wait_for(lock, std::chrono::milliseconds(50));
      if (raw->stop || raw->instance->fullest_cpu_bytes() >= kDrainAtBytes) raw->drain();
    }
  });
  session_ = std::move(s);
}

std::vector<partition::ObserverDirectory> SchedSwitchWindows::remove_on_exit() {
  if (!session_ || !session_->instance || !session_->instances_fd) return {};
  return {{session_->instances_fd.get(), session_->instance->name()}};
}

void SchedSwitchWindows::refine(partition::RunReport& report) {
  if (!session_) return;
  {
    std::lock_guard lock(session_->mutex);
    session_->stop = true;
  }
  session_->wake.notify_all();
  session_->reader.join();
  session_->instance->tracing_off();
  session_->drain();
  lost_ = session_->instance->overruns();
  session_->instance->disable_all();
  events_seen_ = session_->events.size();
  if (lost_ > 0) {
    report.warnings.push_back(
        "sched_switch trace lost " + std::to_string(lost_) +
        " events (buffer overrun): first run and CPU after end are from the CPU clock");
    return;
  }
  not_kept_ = session_->not_kept;
  figures_ =
      apply_sched_events(std::move(session_->events), pids_, report, session_->first_not_kept_ns);
  if (not_kept_ > 0)
    report.warnings.push_back("sched_switch trace kept its first " + std::to_string(max_events_) +
                              " events (its bound; " + std::to_string(not_kept_) +
                              " more not kept): the " + std::to_string(figures_.past_bound) +
                              " windows from frame " +
                              std::to_string(figures_.first_frame_past_bound) +
                              " on keep the CPU-clock figures (first run, stop, CPU after end)");
  report.first_run = {"sched_switch", 1};
  report.cpu_after_end = {"sched_switch", 1};
  report.stopped = {"sched_switch (last switch-out after the suspension)", 1};
  if (figures_.first_runs_from_wakeup > 0)
    report.warnings.push_back(
        std::to_string(figures_.first_runs_from_wakeup) +
        " first runs were on a CPU whose switch from idle the kernel did not trace: taken "
        "from the sched_wakeup before it (within a few microseconds of the run)");
}

}  // namespace doorbell::lab
