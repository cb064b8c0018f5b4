#include "lab/scenarios/e2e_trace.h"

#include <pthread.h>
#include <signal.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <condition_variable>
#include <cstdlib>
#include <cstring>
#include <mutex>
#include <optional>
#include <stdexcept>
#include <thread>
#include <unordered_set>

#include "lab/harness/runner.h"
#include "lab/scenarios/instance_guard.h"
#include "lab/trace/bpf/e2e_events.h"
#include "sys/tracefs.h"

namespace doorbell::lab::e2e {
namespace {

namespace tracefs = sys::tracefs;
using trace::bpf::E2eEventPrograms;

using Clock = std::chrono::steady_clock;
using Wanted = std::unordered_set<pid_t>;

// Enabling or disabling a tracepoint patches kernel text (0.2-0.4 s on this
// loaded VM), far too slow per repetition; so a source's events are turned
// on at the first repetition and off by a small thread once no repetition
// has used them for kIdleDisable (the e2e scenarios run back to back).
// Between repetitions only the recording starts and stops. The thread
// blocks every signal, so it never takes a signal meant for the lab's own
// threads.
constexpr auto kIdleDisable = std::chrono::milliseconds(1500);

// A reason as one line (the notes are one line each).
std::string one_line(std::string text) {
  std::replace(text.begin(), text.end(), '\n', ' ');
  return text;
}

// One source of the events, opened once per process. enable/disable run
// under the session's lock; begin/end/collect in the one SignalTrace's
// thread, while the source is enabled.
class Source {
 public:
  virtual ~Source() = default;
  // Enables the tracepoints or attaches the programs; false, with why.
  virtual bool enable(std::string& why) = 0;
  virtual void disable() noexcept = 0;
  // Forgets what was buffered and starts recording process `target`.
  virtual void begin(pid_t target) = 0;
  virtual void end() noexcept = 0;
  // Appends the recorded events of `wanted` (unsorted); returns the events
  // lost since begin().
  virtual uint64_t collect(const Wanted& wanted, std::vector<TraceEvent>& out) = 0;
};

// ---------------------------------------------------------------- tracefs

constexpr tracefs::EventName kEvents[] = {{"signal", "signal_generate"},
                                          {"signal", "signal_deliver"},
                                          {"sched", "sched_switch"},
                                          {"sched", "sched_wakeup"},
                                          {"irq_vectors", "reschedule_entry"}};

class TracefsSource final : public Source {
 public:
  // Throws std::exception (TracefsError among them) saying why not.
  TracefsSource() {
    if (::geteuid() != 0) throw std::runtime_error("tracepoints need root");
    mounted_by_us_ = tracefs::tracing_dir().private_mount;
    formats_.emplace(std::vector<tracefs::EventName>(std::begin(kEvents), std::end(kEvents)));
    if (formats_->id("signal", "signal_generate") < 0)
      throw std::runtime_error("tracefs has no signal:signal_generate event");
    instance_.emplace("e2e");
    // Removed by a guardian should this process be killed (instance_guard.h).
    guard_.emplace(*instance_);
    instance_->tracing_off();
    instance_->write("buffer_size_kb", "4096");
    if (!instance_->write("trace_clock", "mono"))
      throw std::runtime_error("trace_clock mono is not available");
    // Keep only the target's threads (they are all named kTargetComm) where
    // the event has the target's name; the rest is filtered when read.
    const std::string comm = std::string("\"") + kTargetComm + "\"";
    instance_->write_event_file("sched", "sched_switch", "filter",
                                ("next_comm == " + comm).c_str());
    instance_->write_event_file("sched", "sched_wakeup", "filter", ("comm == " + comm).c_str());
    instance_->write_event_file("signal", "signal_generate", "filter", ("comm == " + comm).c_str());
  }
  // The instance's destructor turns tracing off, disables its events and
  // removes it.
  ~TracefsSource() override = default;

  bool mounted_by_us() const noexcept { return mounted_by_us_; }

  bool enable(std::string& why) override {
    for (const auto& ev : kEvents) {
      // reschedule_entry is x86's: the split goes without it elsewhere.
      if (!instance_->enable(ev.system, ev.event) && std::strcmp(ev.system, "irq_vectors") != 0) {
        disable();
        why = "could not enable the signal and sched tracepoints";
        return false;
      }
    }
    return true;
  }
  void disable() noexcept override {
    for (const auto& ev : kEvents) instance_->disable(ev.system, ev.event);
  }
  void begin(pid_t) override {
    instance_->write("trace", "");  // clear the buffer
    overruns_at_begin_ = instance_->overruns();
    instance_->tracing_on();
  }
  void end() noexcept override { instance_->tracing_off(); }

  uint64_t collect(const Wanted& wanted, std::vector<TraceEvent>& out) override {
    const tracefs::EventFormats& formats = *formats_;
    const int generate_id = formats.id("signal", "signal_generate");
    const int deliver_id = formats.id("signal", "signal_deliver");
    const int switch_id = formats.id("sched", "sched_switch");
    const int wakeup_id = formats.id("sched", "sched_wakeup");
    const int ipi_id = formats.id("irq_vectors", "reschedule_entry");
    auto number = [](const tracefs::RawEvent& e, const char* field) {
      return e.number(field).value_or(0);
    };
    instance_->read(formats, [&](const tracefs::RawEvent& raw) {
      TraceEvent e{raw.ts_ns, EventKind::generate, 0, 0, raw.cpu};
      if (raw.id == generate_id) {
        e.kind = EventKind::generate;
        e.tid = static_cast<pid_t>(number(raw, "pid"));
        e.sig = static_cast<int>(number(raw, "sig"));
      } else if (raw.id == deliver_id) {
        e.kind = EventKind::deliver;
        e.tid = raw.common_pid;
        e.sig = static_cast<int>(number(raw, "sig"));
      } else if (raw.id == switch_id) {
        e.kind = EventKind::switch_in;
        e.tid = static_cast<pid_t>(number(raw, "next_pid"));
      } else if (raw.id == wakeup_id) {
        e.kind = EventKind::wakeup;
        e.tid = static_cast<pid_t>(number(raw, "pid"));
      } else if (raw.id == ipi_id) {
        e.kind = EventKind::ipi;
        e.tid = raw.common_pid;
      } else {
        return;
      }
      if (wanted.count(e.tid) != 0) out.push_back(e);
    });
    // Overwritten before they were read (the buffer is per CPU, 4 MiB each).
    const long long overruns = instance_->overruns() - overruns_at_begin_;
    return overruns > 0 ? static_cast<uint64_t>(overruns) : 0;
  }

 private:
  std::optional<tracefs::EventFormats> formats_;
  std::optional<InstanceGuard> guard_;  // destroyed after the instance
  std::optional<tracefs::Instance> instance_;
  long long overruns_at_begin_ = 0;
  bool mounted_by_us_ = false;
};

// A scenario process that was killed or died leaves its instances (this
// file's, the flood's, the partition windows'): the runner removes every
// doorbell instance whose owner is gone. Where there is no tracefs there is
// nothing to remove.
const bool kRemovesStaleInstances = [] {
  register_after_scenario_process([](pid_t) {
    if (::geteuid() != 0) return;
    try {
      tracefs::remove_stale_instances();
    } catch (const tracefs::TracefsError&) {
    }
  });
  return true;
}();

// ---------------------------------------------------------------- BPF

class BpfSource final : public Source {
 public:
  // Throws trace::bpf::BpfUnavailable saying why not.
  BpfSource() = default;

  bool watches_reschedule() const noexcept { return programs_.watches_reschedule(); }

  bool enable(std::string& why) override {
    try {
      programs_.attach();
      return true;
    } catch (const trace::bpf::BpfUnavailable& e) {
      why = e.what();
      return false;
    }
  }
  void disable() noexcept override { programs_.detach(); }
  void begin(pid_t target) override {
    // Nothing is recorded between traces (the tgid is 0); a trace never
    // collected (an exception in its repetition) may have left records.
    programs_.watch(0);
    programs_.drain([](const doorbell_e2e_event&) {});
    programs_.take_lost();
    programs_.watch(target);
  }
  void end() noexcept override { programs_.watch(0); }

  uint64_t collect(const Wanted& wanted, std::vector<TraceEvent>& out) override {
    programs_.drain([&](const doorbell_e2e_event& record) {
      TraceEvent e{record.ts_ns, EventKind::generate, record.tid, record.sig, record.cpu};
      switch (record.kind) {
        case DOORBELL_E2E_GENERATE:
          e.kind = EventKind::generate;
          break;
        case DOORBELL_E2E_DELIVER:
          e.kind = EventKind::deliver;
          break;
        case DOORBELL_E2E_SWITCH_IN:
          e.kind = EventKind::switch_in;
          break;
        case DOORBELL_E2E_WAKEUP:
          e.kind = EventKind::wakeup;
          break;
        case DOORBELL_E2E_IPI:
          e.kind = EventKind::ipi;
          break;
        default:
          return;
      }
      if (wanted.count(e.tid) != 0) out.push_back(e);
    });
    return programs_.take_lost();
  }

 private:
  E2eEventPrograms programs_;
};

// ---------------------------------------------------------------- session

// Each source's state: opened once (on first use), its events on or off,
// how many traces use it. Guarded by Session::mutex, except the opening
// (std::call_once) and the source's own begin/end/collect (see Source).
struct Slot {
  std::once_flag once;
  std::unique_ptr<Source> source;
  std::string why_not;
  bool events_on = false;
  int users = 0;
  Clock::time_point last_use;
};

struct Session {
  Slot slots[2];  // by TraceSource

  std::mutex mutex;
  std::condition_variable changed;
  bool quit = false;
  std::thread idle_disabler;
  std::once_flag exit_hook;

  Slot& slot(TraceSource which) { return slots[static_cast<int>(which)]; }

  // The source, opened on first use; null with why_not when it cannot run.
  Source* open(TraceSource which, std::string& why_not);

  // Turns the slot's events on if they are off; false (with why) when that
  // failed.
  bool acquire(Slot& slot, std::string& why) {
    std::lock_guard lock(mutex);
    if (!slot.events_on) {
      if (!slot.source->enable(why)) return false;
      slot.events_on = true;
#if !defined(__SANITIZE_THREAD__)
      if (!idle_disabler.joinable()) start_disabler();
#endif
    }
    ++slot.users;
    return true;
  }
  void release(Slot& slot) {
    std::lock_guard lock(mutex);
    --slot.users;
    slot.last_use = Clock::now();
#if defined(__SANITIZE_THREAD__)
    // ThreadSanitizer refuses threads started in a child forked from a
    // multi-threaded process, and the e2e target is such a child: no
    // disabler thread here, the events go off after every repetition.
    if (slot.users == 0) {
      slot.source->disable();
      slot.events_on = false;
    }
#endif
    changed.notify_all();
  }
  void start_disabler() {
    sigset_t all, previous;
    sigfillset(&all);
    ::pthread_sigmask(SIG_SETMASK, &all, &previous);
    idle_disabler = std::thread([this] {
      std::unique_lock lock(mutex);
      while (!quit) {
        // The earliest moment a source in use recently goes idle.
        std::optional<Clock::time_point> next_due;
        for (Slot& s : slots) {
          if (!s.events_on || s.users != 0) continue;
          const auto due = s.last_use + kIdleDisable;
          if (Clock::now() >= due) {
            s.source->disable();
            s.events_on = false;
          } else if (!next_due || due < *next_due) {
            next_due = due;
          }
        }
        if (next_due)
          changed.wait_until(lock, *next_due);
        else
          changed.wait_for(lock, std::chrono::seconds(1));
      }
    });
    ::pthread_sigmask(SIG_SETMASK, &previous, nullptr);
  }
  ~Session() {
    shutdown();
  }
  // Stops the disabler and closes the sources; at the end of the process
  // (the runner's scenario process ends with _exit:
  // register_scenario_process_exit).
  void shutdown() {
    {
      std::lock_guard lock(mutex);
      quit = true;
      changed.notify_all();
    }
    if (idle_disabler.joinable()) idle_disabler.join();
    for (Slot& s : slots) {
      if (s.source == nullptr) continue;
      s.source.reset();
      s.why_not = "closed at the end of the lab process";
    }
  }
};

Session& session() {
  static Session s;
  return s;
}

Source* Session::open(TraceSource which, std::string& why_not) {
  Slot& s = slot(which);
  std::call_once(s.once, [&] {
    try {
      if (which == TraceSource::tracefs)
        s.source = std::make_unique<TracefsSource>();
      else
        s.source = std::make_unique<BpfSource>();
      std::call_once(exit_hook,
                     [] { register_scenario_process_exit([] { session().shutdown(); }); });
    } catch (const std::exception& e) {
      s.source.reset();
      s.why_not = one_line(e.what());
    }
  });
  if (s.source == nullptr) {
    why_not = s.why_not;
    return nullptr;
  }
  return s.source.get();
}

}  // namespace

std::unique_lock<std::mutex> quiesce_tracing_for_fork() {
  return std::unique_lock<std::mutex>(session().mutex);
}

namespace {

enum class Choice { automatic, tracefs, bpf };

Choice read_choice() {
  const char* value = std::getenv(kSourceVariable);
  if (value == nullptr || *value == 0 || std::strcmp(value, "auto") == 0) return Choice::automatic;
  if (std::strcmp(value, "tracefs") == 0) return Choice::tracefs;
  if (std::strcmp(value, "bpf") == 0) return Choice::bpf;
  throw std::invalid_argument(std::string(kSourceVariable) + "=" + value +
                              ": expected tracefs, bpf or auto (unset: auto, tracefs where it "
                              "works, else bpf)");
}

}  // namespace

std::unique_ptr<SignalTrace> SignalTrace::start(pid_t target, std::string& why_not) {
  const Choice choice = read_choice();
  Session& s = session();
  // Opens the source, turns its events on and starts recording; null with
  // `why` when it cannot.
  auto begin = [&](TraceSource which, std::string& why) -> std::unique_ptr<SignalTrace> {
    Source* source = s.open(which, why);
    if (source == nullptr || !s.acquire(s.slot(which), why)) return nullptr;
    std::unique_ptr<SignalTrace> trace(new SignalTrace());
    trace->source_ = which;
    source->begin(target);
    return trace;
  };
  std::string tracefs_why;
  if (choice != Choice::bpf) {
    if (auto trace = begin(TraceSource::tracefs, tracefs_why)) {
      trace->mounted_by_us_ =
          static_cast<TracefsSource*>(s.slot(TraceSource::tracefs).source.get())->mounted_by_us();
      trace->description_ =
          choice == Choice::tracefs
              ? "kernel events from tracefs (DOORBELL_E2E_TRACE=tracefs)"
              : "kernel events from tracefs (a private instance, trace_clock mono)";
      return trace;
    }
    if (choice == Choice::tracefs) {
      why_not = "tracefs: " + tracefs_why + " (DOORBELL_E2E_TRACE=tracefs: BPF not tried)";
      return nullptr;
    }
  }
  std::string bpf_why;
  if (auto trace = begin(TraceSource::bpf, bpf_why)) {
    trace->description_ =
        choice == Choice::bpf
            ? "kernel events from BPF (tp_btf programs, ring buffer; DOORBELL_E2E_TRACE=bpf)"
            : "kernel events from BPF (tp_btf programs, ring buffer): tracefs is unavailable (" +
                  tracefs_why + ")";
    if (!static_cast<BpfSource*>(s.slot(TraceSource::bpf).source.get())->watches_reschedule())
      trace->description_ +=
          "; this kernel has no reschedule_entry BTF tracepoint: reschedule IPIs are not seen";
    return trace;
  }
  why_not = choice == Choice::bpf
                ? "BPF: " + bpf_why + " (DOORBELL_E2E_TRACE=bpf: tracefs not tried)"
                : "tracefs: " + tracefs_why + "; BPF: " + bpf_why;
  return nullptr;
}

SignalTrace::~SignalTrace() {
  Session& s = session();
  Slot& slot = s.slot(source_);
  if (!collected_) slot.source->end();
  s.release(slot);
}

std::vector<TraceEvent> SignalTrace::stop_and_collect(const std::vector<pid_t>& tids) {
  Source& source = *session().slot(source_).source;
  source.end();
  collected_ = true;
  std::vector<TraceEvent> out;
  lost_ = source.collect(Wanted(tids.begin(), tids.end()), out);
  std::sort(out.begin(), out.end(),
            [](const TraceEvent& a, const TraceEvent& b) { return a.ts_ns < b.ts_ns; });
  return out;
}

}  // namespace doorbell::lab::e2e
