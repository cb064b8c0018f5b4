#include "lab/scenarios/e2e_trace.h"

#include <pthread.h>
#include <signal.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <condition_variable>
#include <cstring>
#include <mutex>
#include <optional>
#include <thread>
#include <unordered_set>

#include "lab/harness/runner.h"
#include "sys/tracefs.h"

namespace doorbell::lab::e2e {
namespace {

namespace tracefs = sys::tracefs;

constexpr tracefs::EventName kEvents[] = {{"signal", "signal_generate"},
                                          {"signal", "signal_deliver"},
                                          {"sched", "sched_switch"},
                                          {"sched", "sched_wakeup"},
                                          {"irq_vectors", "reschedule_entry"}};

// One instance per lab process, created on first use and removed at exit.
// Enabling or disabling a tracepoint patches kernel text (0.2-0.4 s on this
// loaded VM), far too slow per repetition; so the events are enabled at the
// first repetition and disabled by a small thread once no repetition has
// used them for kIdleDisable (the e2e scenarios run back to back). Between
// repetitions only tracing_on toggles. The thread blocks every signal, so it
// never takes a signal meant for the lab's own threads.
constexpr auto kIdleDisable = std::chrono::milliseconds(1500);

void set_events(tracefs::Instance& instance, bool on) {
  for (const auto& ev : kEvents) {
    if (on)
      instance.enable(ev.system, ev.event);
    else
      instance.disable(ev.system, ev.event);
  }
}

struct Session {
  std::optional<tracefs::EventFormats> formats;
  std::optional<tracefs::Instance> instance;
  std::string why_not;
  bool mounted_by_us = false;

  std::mutex mutex;
  std::condition_variable changed;
  bool events_on = false;
  int users = 0;
  bool quit = false;
  std::chrono::steady_clock::time_point last_use;
  std::thread idle_disabler;

  // Enables the events if they are off; false when that failed.
  bool acquire() {
    std::lock_guard lock(mutex);
    if (!events_on) {
      for (const auto& ev : kEvents) {
        if (!instance->enable(ev.system, ev.event) && std::strcmp(ev.system, "irq_vectors") != 0) {
          set_events(*instance, false);
          return false;
        }
      }
      events_on = true;
#if !defined(__SANITIZE_THREAD__)
      if (!idle_disabler.joinable()) start_disabler();
#endif
    }
    ++users;
    return true;
  }
  void release() {
    std::lock_guard lock(mutex);
    --users;
    last_use = std::chrono::steady_clock::now();
#if defined(__SANITIZE_THREAD__)
    // ThreadSanitizer refuses threads started in a child forked from a
    // multi-threaded process, and the e2e target is such a child: no
    // disabler thread here, the events go off after every repetition.
    if (users == 0) {
      set_events(*instance, false);
      events_on = false;
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
        if (events_on && users == 0) {
          const auto due = last_use + kIdleDisable;
          if (std::chrono::steady_clock::now() >= due) {
            set_events(*instance, false);
            events_on = false;
            continue;
          }
          changed.wait_until(lock, due);
        } else {
          changed.wait_for(lock, std::chrono::seconds(1));
        }
      }
    });
    ::pthread_sigmask(SIG_SETMASK, &previous, nullptr);
  }
  ~Session() {
    shutdown();
  }
  // Stops the disabler and removes the instance; at the end of the process
  // (the runner's scenario process ends with _exit: register_scenario_process_exit).
  void shutdown() {
    {
      std::lock_guard lock(mutex);
      quit = true;
      changed.notify_all();
    }
    if (idle_disabler.joinable()) idle_disabler.join();
    // The instance's destructor turns tracing off, disables its events and
    // removes it.
    instance.reset();
    formats.reset();
  }
};

// A scenario process that was killed or died leaves its instances (this
// file's, the flood's, the partition windows'): the runner removes every
// doorbell instance whose owner is gone.
const bool kRemovesStaleInstances = [] {
  register_after_scenario_process([](pid_t) {
    if (::geteuid() == 0) tracefs::remove_stale_instances();
  });
  return true;
}();

Session& session() {
  static Session s;
  static std::once_flag once;
  std::call_once(once, [] {
    if (::geteuid() != 0) {
      s.why_not = "tracepoints need root";
      return;
    }
    try {
      s.mounted_by_us = tracefs::tracing_dir().private_mount;
      s.formats.emplace(std::vector<tracefs::EventName>(std::begin(kEvents), std::end(kEvents)));
      if (s.formats->id("signal", "signal_generate") < 0) {
        s.why_not = "tracefs has no signal:signal_generate event";
        return;
      }
      s.instance.emplace("e2e");
      register_scenario_process_exit([] { session().shutdown(); });
    } catch (const std::exception& e) {
      s.why_not = e.what();
      s.instance.reset();
      return;
    }
    tracefs::Instance& instance = *s.instance;
    instance.tracing_off();
    instance.write("buffer_size_kb", "4096");
    if (!instance.write("trace_clock", "mono")) {
      s.why_not = "trace_clock mono is not available";
      return;
    }
    // Keep only the target's threads (they are all named kTargetComm) where
    // the event has the target's name; the rest is filtered when read.
    const std::string comm = std::string("\"") + kTargetComm + "\"";
    instance.write_event_file("sched", "sched_switch", "filter", ("next_comm == " + comm).c_str());
    instance.write_event_file("sched", "sched_wakeup", "filter", ("comm == " + comm).c_str());
    instance.write_event_file("signal", "signal_generate", "filter", ("comm == " + comm).c_str());
  });
  return s;
}

}  // namespace

std::unique_ptr<SignalTrace> SignalTrace::start(std::string& why_not) {
  Session& s = session();
  if (!s.why_not.empty()) {
    why_not = s.why_not;
    return nullptr;
  }
  if (!s.acquire()) {
    why_not = "could not enable the signal and sched tracepoints";
    return nullptr;
  }
  s.instance->write("trace", "");  // clear the buffer
  std::unique_ptr<SignalTrace> trace(new SignalTrace());
  trace->mounted_by_us_ = s.mounted_by_us;
  s.instance->tracing_on();
  return trace;
}

SignalTrace::~SignalTrace() {
  Session& s = session();
  s.instance->tracing_off();
  s.release();
}

std::vector<TraceEvent> SignalTrace::stop_and_collect(const std::vector<pid_t>& tids) {
  Session& s = session();
  s.instance->tracing_off();
  std::vector<TraceEvent> out;
  const std::unordered_set<pid_t> wanted(tids.begin(), tids.end());
  const tracefs::EventFormats& formats = *s.formats;
  const int generate_id = formats.id("signal", "signal_generate");
  const int deliver_id = formats.id("signal", "signal_deliver");
  const int switch_id = formats.id("sched", "sched_switch");
  const int wakeup_id = formats.id("sched", "sched_wakeup");
  const int ipi_id = formats.id("irq_vectors", "reschedule_entry");
  auto number = [](const tracefs::RawEvent& e, const char* field) {
    return e.number(field).value_or(0);
  };
  s.instance->read(formats, [&](const tracefs::RawEvent& raw) {
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
  std::sort(out.begin(), out.end(),
            [](const TraceEvent& a, const TraceEvent& b) { return a.ts_ns < b.ts_ns; });
  return out;
}

}  // namespace doorbell::lab::e2e
