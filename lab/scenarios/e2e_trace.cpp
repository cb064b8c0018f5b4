#include "lab/scenarios/e2e_trace.h"

#include <dirent.h>
#include <pthread.h>
#include <signal.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <unistd.h>

#include <fstream>
#include <sstream>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <condition_variable>
#include <cstring>
#include <mutex>
#include <thread>
#include <unordered_set>

// libtracefs 1.6's header has an inline function (tracefs_hist_start) that
// passes the int 0 where the function takes an enum: valid C, an error in
// C++. We use no histogram function, so the header's calls are routed to a
// renamed declaration, and an int overload (never called, never emitted)
// takes the 0. Nothing of this reaches the library's ABI.
struct tracefs_instance;
struct tracefs_hist;
#define tracefs_hist_command(instance, hist, command) \
  doorbell_tracefs_hist_command(instance, hist, command)
static inline int doorbell_tracefs_hist_command(struct tracefs_instance*, struct tracefs_hist*,
                                                int) {
  return -1;
}
extern "C" {
#include <tracefs/tracefs.h>
}
#undef tracefs_hist_command

namespace doorbell::lab::e2e {
namespace {

constexpr const char* kTracingDir = "/sys/kernel/tracing";
constexpr const char* kEvents[][2] = {{"signal", "signal_generate"},
                                      {"signal", "signal_deliver"},
                                      {"sched", "sched_switch"},
                                      {"sched", "sched_wakeup"},
                                      {"irq_vectors", "reschedule_entry"}};

bool tracefs_present() {
  struct stat st;
  return ::stat("/sys/kernel/tracing/events/signal/signal_generate", &st) == 0;
}

std::string read_file(const std::string& path) {
  std::ifstream in(path);
  std::stringstream buffer;
  buffer << in.rdbuf();
  return buffer.str();
}

// The formats of our five events only: tracefs_local_events() would also
// parse every event, kallsyms and printk formats (half a second here).
struct tep_handle* parse_formats() {
  struct tep_handle* tep = tep_alloc();
  if (tep == nullptr) return nullptr;
  tep_set_long_size(tep, sizeof(long));
  tep_set_page_size(tep, static_cast<int>(::sysconf(_SC_PAGESIZE)));
  const tep_endian endian = tep_is_bigendian() ? TEP_BIG_ENDIAN : TEP_LITTLE_ENDIAN;
  tep_set_file_bigendian(tep, endian);
  tep_set_local_bigendian(tep, endian);
  std::string header = read_file(std::string(kTracingDir) + "/events/header_page");
  if (header.empty() ||
      tep_parse_header_page(tep, header.data(), header.size(), sizeof(long)) != 0) {
    tep_free(tep);
    return nullptr;
  }
  for (const auto& ev : kEvents) {
    const std::string format =
        read_file(std::string(kTracingDir) + "/events/" + ev[0] + "/" + ev[1] + "/format");
    if (format.empty()) continue;  // irq_vectors may be absent (not x86)
    tep_parse_event(tep, format.data(), format.size(), ev[0]);
  }
  return tep;
}

// Removes instances left by lab processes that died without cleaning up.
void remove_stale_instances() {
  DIR* dir = ::opendir("/sys/kernel/tracing/instances");
  if (dir == nullptr) return;
  const std::string prefix = "doorbell_e2e_";
  while (const dirent* entry = ::readdir(dir)) {
    const std::string name = entry->d_name;
    if (name.rfind(prefix, 0) != 0) continue;
    const pid_t owner = static_cast<pid_t>(std::atoi(name.c_str() + prefix.size()));
    if (owner <= 0 || (::kill(owner, 0) != 0 && errno == ESRCH)) {
      struct tracefs_instance* stale = tracefs_instance_alloc(kTracingDir, name.c_str());
      if (stale != nullptr) {
        tracefs_event_disable(stale, nullptr, nullptr);
        tracefs_instance_destroy(stale);
        tracefs_instance_free(stale);
      }
    }
  }
  ::closedir(dir);
}

// One instance per lab process, created on first use and removed at exit.
// Enabling or disabling a tracepoint patches kernel text (0.2-0.4 s on this
// loaded VM), far too slow per repetition; so the events are enabled at the
// first repetition and disabled by a small thread once no repetition has
// used them for kIdleDisable (the e2e scenarios run back to back). Between
// repetitions only tracing_on toggles. The thread blocks every signal, so it
// never takes a signal meant for the lab's own threads.
constexpr auto kIdleDisable = std::chrono::milliseconds(1500);

void set_events(struct tracefs_instance* instance, bool on) {
  for (const auto& ev : kEvents) {
    if (on)
      tracefs_event_enable(instance, ev[0], ev[1]);
    else
      tracefs_event_disable(instance, ev[0], ev[1]);
  }
}

struct Session {
  struct tep_handle* tep = nullptr;
  struct tracefs_instance* instance = nullptr;
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
        if (tracefs_event_enable(instance, ev[0], ev[1]) != 0 &&
            std::strcmp(ev[0], "irq_vectors") != 0) {
          set_events(instance, false);
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
      set_events(instance, false);
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
            set_events(instance, false);
            events_on = false;
            continue;
          }
          changed.wait_until(lock, due);
        } else {
          changed.wait(lock);
        }
      }
    });
    ::pthread_sigmask(SIG_SETMASK, &previous, nullptr);
  }
  ~Session() {
    {
      std::lock_guard lock(mutex);
      quit = true;
      changed.notify_all();
    }
    if (idle_disabler.joinable()) idle_disabler.join();
    if (instance != nullptr) {
      tracefs_trace_off(instance);
      tracefs_event_disable(instance, nullptr, nullptr);
      tracefs_instance_destroy(instance);
      tracefs_instance_free(instance);
    }
    if (tep != nullptr) tep_free(tep);
  }
};

Session& session() {
  static Session s;
  static std::once_flag once;
  std::call_once(once, [] {
    if (::geteuid() != 0) {
      s.why_not = "tracepoints need root";
      return;
    }
    if (!tracefs_present()) {
      if (::mount("nodev", kTracingDir, "tracefs", 0, nullptr) != 0) {
        s.why_not =
            std::string("tracefs is not mounted and mounting it failed: ") + std::strerror(errno);
        return;
      }
      s.mounted_by_us = true;
      if (!tracefs_present()) {
        s.why_not = "tracefs has no signal:signal_generate event";
        return;
      }
    }
    s.tep = parse_formats();
    if (s.tep == nullptr) {
      s.why_not = "could not parse the tracepoint formats";
      return;
    }
    remove_stale_instances();
    const std::string name = "doorbell_e2e_" + std::to_string(::getpid());
    s.instance = tracefs_instance_create(name.c_str());
    if (s.instance == nullptr) {
      s.why_not = "could not create a tracefs instance";
      return;
    }
    tracefs_trace_off(s.instance);
    tracefs_instance_file_write(s.instance, "buffer_size_kb", "4096");
    if (tracefs_instance_file_write(s.instance, "trace_clock", "mono") <= 0) {
      s.why_not = "trace_clock mono is not available";
      return;
    }
    // Keep only the target's threads (they are all named kTargetComm) where
    // the event has the target's name; the rest is filtered when read.
    const std::string comm = std::string("\"") + kTargetComm + "\"";
    tracefs_event_file_write(s.instance, "sched", "sched_switch", "filter",
                             ("next_comm == " + comm).c_str());
    tracefs_event_file_write(s.instance, "sched", "sched_wakeup", "filter",
                             ("comm == " + comm).c_str());
    tracefs_event_file_write(s.instance, "signal", "signal_generate", "filter",
                             ("comm == " + comm).c_str());
  });
  return s;
}

struct Collect {
  const std::unordered_set<pid_t>* tids;
  std::vector<TraceEvent>* out;
  int generate_id = -1, deliver_id = -1, switch_id = -1, wakeup_id = -1, ipi_id = -1;
};

unsigned long long field(struct tep_event* event, struct tep_record* record, const char* name) {
  unsigned long long value = 0;
  tep_get_field_val(nullptr, event, name, record, &value, 0);
  return value;
}

int on_event(struct tep_event* event, struct tep_record* record, int cpu, void* context) {
  auto& c = *static_cast<Collect*>(context);
  TraceEvent e{record->ts, EventKind::generate, 0, 0, cpu};
  if (event->id == c.generate_id) {
    e.kind = EventKind::generate;
    e.tid = static_cast<pid_t>(field(event, record, "pid"));
    e.sig = static_cast<int>(field(event, record, "sig"));
  } else if (event->id == c.deliver_id) {
    e.kind = EventKind::deliver;
    e.tid = tep_data_pid(event->tep, record);
    e.sig = static_cast<int>(field(event, record, "sig"));
  } else if (event->id == c.switch_id) {
    e.kind = EventKind::switch_in;
    e.tid = static_cast<pid_t>(field(event, record, "next_pid"));
  } else if (event->id == c.wakeup_id) {
    e.kind = EventKind::wakeup;
    e.tid = static_cast<pid_t>(field(event, record, "pid"));
  } else if (event->id == c.ipi_id) {
    e.kind = EventKind::ipi;
    e.tid = tep_data_pid(event->tep, record);
  } else {
    return 0;
  }
  if (c.tids->count(e.tid) != 0) c.out->push_back(e);
  return 0;
}

int event_id(struct tep_handle* tep, const char* system, const char* name) {
  struct tep_event* event = tep_find_event_by_name(tep, system, name);
  return event != nullptr ? event->id : -1;
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
  tracefs_instance_file_write(s.instance, "trace", "");  // clear the buffer
  std::unique_ptr<SignalTrace> trace(new SignalTrace());
  trace->instance_ = s.instance;
  trace->mounted_by_us_ = s.mounted_by_us;
  tracefs_trace_on(s.instance);
  return trace;
}

SignalTrace::~SignalTrace() {
  if (instance_ != nullptr) {
    tracefs_trace_off(instance_);
    session().release();
  }
}

std::vector<TraceEvent> SignalTrace::stop_and_collect(const std::vector<pid_t>& tids) {
  tracefs_trace_off(instance_);
  std::vector<TraceEvent> out;
  const std::unordered_set<pid_t> wanted(tids.begin(), tids.end());
  struct tep_handle* tep = session().tep;
  Collect c{&wanted, &out};
  c.generate_id = event_id(tep, "signal", "signal_generate");
  c.deliver_id = event_id(tep, "signal", "signal_deliver");
  c.switch_id = event_id(tep, "sched", "sched_switch");
  c.wakeup_id = event_id(tep, "sched", "sched_wakeup");
  c.ipi_id = event_id(tep, "irq_vectors", "reschedule_entry");
  tracefs_iterate_raw_events(tep, instance_, nullptr, 0, on_event, &c);
  std::sort(out.begin(), out.end(),
            [](const TraceEvent& a, const TraceEvent& b) { return a.ts_ns < b.ts_ns; });
  return out;
}

}  // namespace doorbell::lab::e2e
