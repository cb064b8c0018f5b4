// doorbell trace: who receives how many signals, live, from the kernel's
// signal tracepoints (signal:signal_generate, signal:signal_deliver) read
// through libtracefs.
//
// What it does to the system, and how it undoes it:
//  - If tracefs is not mounted, it mounts it in a mount namespace of its own
//    (unshare(CLONE_NEWNS)), so the system's mount table is never changed.
//  - It creates a tracing instance "doorbell-trace-<pid>" with its own ring
//    buffer, enables the two signal events there only (the top-level
//    instance and other tools' instances are untouched), and on exit
//    (normal, --duration, SIGINT, SIGTERM, SIGHUP) disables them and removes
//    the instance. An instance left by a doorbell that was SIGKILLed is
//    removed by the next `doorbell trace`.
//
// How the numbers are made (see docs/trace.md):
//  - signal_generate runs in the sender: common_pid is the sending thread,
//    "pid" the target thread, "result" 0 queued, 1 ignored, 2 already
//    pending (coalesced), 3 overflow, 4 queued without its siginfo.
//  - signal_deliver runs in the receiving thread inside get_signal(), for
//    signals taken by a handler or a default action. Signals taken by
//    sigwaitinfo(2) or a signalfd never pass there: they show as generated,
//    not delivered.
//  - Threads are mapped to their process through /proc/<tid>/status; a
//    thread that has already exited counts as its own process.
//  - The generate→deliver delay pairs each delivery with the oldest queued
//    generate of the same signal to the same process (FIFO); deliveries with
//    no queued generate seen (tracing started after the send) are counted as
//    unpaired.
#include <fcntl.h>
#include <sched.h>
#include <signal.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>
#include <CLI/CLI.hpp>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <cmath>
#include <cstdio>
#include <deque>
#include <fstream>
#include <iostream>
#include <map>
#include <memory>
#include <sstream>
#include <string>
#include <unordered_map>
#include <vector>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include <event-parse.h>

// The part of libtracefs 1.6 this command uses. Declared here rather than by
// including <tracefs.h>, whose inline tracefs_hist_start() passes an int as
// an enum and so does not compile as C++ (Debian 12's libtracefs-dev 1.6.4).
// These are the library's exported C signatures, unchanged since 1.3.
extern "C" {
struct tracefs_instance;
int tracefs_tracing_dir_is_mounted(bool mount, const char** path);
char** tracefs_instances(const char* regex);
void tracefs_list_free(char** list);
tracefs_instance* tracefs_instance_alloc(const char* tracing_dir, const char* name);
tracefs_instance* tracefs_instance_create(const char* name);
int tracefs_instance_destroy(tracefs_instance* instance);
void tracefs_instance_free(tracefs_instance* instance);
int tracefs_instance_file_write(tracefs_instance* instance, const char* file, const char* str);
char* tracefs_instance_file_read(tracefs_instance* instance, const char* file, int* psize);
int tracefs_instance_set_buffer_size(tracefs_instance* instance, size_t size, int cpu);
int tracefs_event_enable(tracefs_instance* instance, const char* system, const char* event);
int tracefs_event_disable(tracefs_instance* instance, const char* system, const char* event);
int tracefs_trace_on(tracefs_instance* instance);
tep_handle* tracefs_local_events_system(const char* tracing_dir, const char* const* sys_names);
int tracefs_iterate_raw_events(tep_handle* tep, tracefs_instance* instance, cpu_set_t* cpus,
                               int cpu_size, int (*callback)(tep_event*, tep_record*, int, void*),
                               void* callback_context);
}

#include "apps/doorbell/command.h"
#include "lab/harness/clock.h"
#include "lab/harness/histogram.h"
#include "sys/error.h"
#include "sys/proc.h"

#if defined(__SANITIZE_ADDRESS__)
// libtracefs 1.6.4 keeps a strdup'd path and compiled regexes (its event and
// instance matching) that it never frees; they are the library's, not ours.
// LeakSanitizer cannot unwind through the library (no frame pointers), so
// the stacks end in the C library's regex compiler.
extern "C" const char* __lsan_default_suppressions() {
  return "leak:libtracefs.so\nleak:re_compile_internal\nleak:regcomp\n";
}
#endif

namespace doorbell::cli {
namespace {

constexpr const char* kInstancePrefix = "doorbell-trace-";
constexpr const char* kGuideAdvice =
    "signals used as a data channel: each one costs a kernel entry, a signal frame with the FPU "
    "state and a sigreturn, and standard signals coalesce. Use an eventfd or a doorbell::Bell to "
    "wake, a doorbell::Ring to pass data (docs/guide.md, \"High-rate notification\").";

// ------------------------------------------------------------ stop request

std::atomic<int> g_stop_signal{0};

extern "C" void on_stop_signal(int signo) {
  // Only an atomic store: async-signal-safe.
  g_stop_signal.store(signo, std::memory_order_relaxed);
}

// Installs the stop handler for SIGINT, SIGTERM, SIGHUP and SIGPIPE (a
// reader such as `head` that goes away must not kill us before the instance
// is removed) and puts the previous dispositions back when destroyed.
class StopSignals {
 public:
  StopSignals() {
    struct sigaction sa {};
    sa.sa_handler = on_stop_signal;
    sigemptyset(&sa.sa_mask);
    for (std::size_t i = 0; i < kCount; ++i)
      if (::sigaction(kSignals[i], &sa, &old_[i]) != 0) sys::throw_errno("sigaction");
  }
  ~StopSignals() {
    for (std::size_t i = 0; i < kCount; ++i) ::sigaction(kSignals[i], &old_[i], nullptr);
  }
  StopSignals(const StopSignals&) = delete;
  StopSignals& operator=(const StopSignals&) = delete;

 private:
  static constexpr std::size_t kCount = 4;
  static constexpr int kSignals[kCount] = {SIGINT, SIGTERM, SIGHUP, SIGPIPE};
  struct sigaction old_[kCount] {};
};

bool stop_requested() {
  return g_stop_signal.load(std::memory_order_relaxed) != 0;
}

void sleep_ns(uint64_t ns) {
  timespec ts{static_cast<time_t>(ns / 1000000000ull), static_cast<long>(ns % 1000000000ull)};
  // A stop signal interrupts the sleep; the caller checks the flag.
  ::nanosleep(&ts, nullptr);
}

// ------------------------------------------------------------ tracefs

// Makes tracefs reachable: already mounted, or mounted now in a private mount
// namespace. Throws UsageError (exit 2) when that is not permitted.
void ensure_tracefs(std::ostream& log) {
  const char* path = nullptr;
  if (tracefs_tracing_dir_is_mounted(false, &path) == 1 && path != nullptr) {
    if (::access(path, R_OK | W_OK | X_OK) != 0)
      throw UsageError(fmt::format(
          "trace: no access to tracefs at {} ({}): run as root, or ask for write access to it",
          path, std::strerror(errno)));
    return;
  }
  // Not mounted. Mount it where only this process sees it.
  if (::unshare(CLONE_NEWNS) != 0)
    throw UsageError(fmt::format(
        "trace: tracefs is not mounted, and mounting it needs root (CAP_SYS_ADMIN): {}. Run as "
        "root, or mount it: mount -t tracefs nodev /sys/kernel/tracing",
        std::strerror(errno)));
  if (::mount(nullptr, "/", nullptr, MS_REC | MS_PRIVATE, nullptr) != 0)
    throw UsageError(
        fmt::format("trace: cannot make a private mount namespace: {}", std::strerror(errno)));
  if (::mount("nodev", "/sys/kernel/tracing", "tracefs", 0, nullptr) != 0)
    throw UsageError(fmt::format(
        "trace: tracefs is not mounted and mounting it failed: {}. Is tracing built into this "
        "kernel (CONFIG_EVENT_TRACING)?",
        std::strerror(errno)));
  log << "doorbell trace: tracefs was not mounted; mounted it in doorbell's own mount namespace "
         "(the system's mounts are unchanged)\n";
}

bool process_alive(pid_t pid) {
  return ::kill(pid, 0) == 0 || errno == EPERM;
}

// Removes instances left by a doorbell trace that died without cleaning up.
void remove_stale_instances(std::ostream& log) {
  char** names = tracefs_instances("^doorbell-trace-[0-9][0-9]*$");
  if (names == nullptr) return;
  for (char** n = names; *n; ++n) {
    pid_t owner = static_cast<pid_t>(std::strtol(*n + std::strlen(kInstancePrefix), nullptr, 10));
    if (owner <= 0 || process_alive(owner)) continue;
    tracefs_instance* stale = tracefs_instance_alloc(nullptr, *n);
    if (stale == nullptr) continue;
    tracefs_event_disable(stale, "signal", nullptr);
    if (tracefs_instance_destroy(stale) == 0)
      log << "doorbell trace: removed the tracing instance " << *n
          << " left by an earlier doorbell trace that did not exit cleanly\n";
    tracefs_instance_free(stale);
  }
  tracefs_list_free(names);
}

// The instance and its two events: created enabled, gone when destroyed.
class SignalTracing {
 public:
  SignalTracing() {
    name_ = kInstancePrefix + std::to_string(::getpid());
    instance_ = tracefs_instance_create(name_.c_str());
    if (instance_ == nullptr) {
      int error = errno;
      if (error == EACCES || error == EPERM)
        throw UsageError(fmt::format("trace: cannot create a tracing instance: {}: run as root",
                                     std::strerror(error)));
      sys::throw_errno(error, "tracefs_instance_create " + name_);
    }
    try {
      // CLOCK_MONOTONIC timestamps; a buffer big enough for a storm of a
      // few hundred thousand events between two reads.
      tracefs_instance_file_write(instance_, "trace_clock", "mono");
      tracefs_instance_set_buffer_size(instance_, 4096, -1);
      const char* const systems[] = {"signal", nullptr};
      tep_ = tracefs_local_events_system(nullptr, systems);
      if (tep_ == nullptr) throw std::runtime_error("cannot read the signal event formats");
      generate_ = tep_find_event_by_name(tep_, "signal", "signal_generate");
      deliver_ = tep_find_event_by_name(tep_, "signal", "signal_deliver");
      if (generate_ == nullptr || deliver_ == nullptr)
        throw std::runtime_error(
            "this kernel has no signal:signal_generate / signal:signal_deliver tracepoints");
      for (const char* event : {"signal_generate", "signal_deliver"})
        if (tracefs_event_enable(instance_, "signal", event) != 0)
          sys::throw_errno("enabling signal:" + std::string(event));
      tracefs_trace_on(instance_);
    } catch (...) {
      cleanup();
      throw;
    }
  }
  ~SignalTracing() { cleanup(); }
  SignalTracing(const SignalTracing&) = delete;
  SignalTracing& operator=(const SignalTracing&) = delete;

  tracefs_instance* instance() const { return instance_; }
  tep_handle* tep() const { return tep_; }
  int generate_id() const { return generate_->id; }
  int deliver_id() const { return deliver_->id; }
  tep_event* generate_event() const { return generate_; }
  tep_event* deliver_event() const { return deliver_; }
  const std::string& name() const { return name_; }

  // Events the ring buffer overwrote before they were read, all CPUs.
  long long overruns() const {
    long long total = 0;
    long cpus = ::sysconf(_SC_NPROCESSORS_CONF);
    for (long cpu = 0; cpu < cpus; ++cpu) {
      std::string file = fmt::format("per_cpu/cpu{}/stats", cpu);
      char* text = tracefs_instance_file_read(instance_, file.c_str(), nullptr);
      if (text == nullptr) continue;
      const char* at = std::strstr(text, "overrun:");
      if (at) total += std::strtoll(at + 8, nullptr, 10);
      std::free(text);
    }
    return total;
  }

 private:
  void cleanup() {
    if (instance_ != nullptr) {
      tracefs_event_disable(instance_, "signal", nullptr);
      tracefs_instance_destroy(instance_);
      tracefs_instance_free(instance_);
      instance_ = nullptr;
    }
    if (tep_ != nullptr) {
      tep_free(tep_);
      tep_ = nullptr;
    }
  }

  std::string name_;
  tracefs_instance* instance_ = nullptr;
  tep_handle* tep_ = nullptr;
  tep_event* generate_ = nullptr;
  tep_event* deliver_ = nullptr;
};

// ------------------------------------------------------------ bookkeeping

std::string read_first_line(const std::string& path) {
  std::ifstream in(path);
  std::string line;
  std::getline(in, line);
  return line;
}

std::string signal_name(int sig) {
  if (sig >= SIGRTMIN && sig <= SIGRTMAX) {
    if (sig == SIGRTMIN) return "SIGRTMIN";
    return fmt::format("SIGRTMIN+{}", sig - SIGRTMIN);
  }
  if (const char* abbrev = ::sigabbrev_np(sig)) return std::string("SIG") + abbrev;
  return fmt::format("signal {}", sig);
}

struct SenderTally {
  std::string comm;
  uint64_t count = 0;
};

struct Counts {
  uint64_t generated = 0;  // signal_generate events of any result
  uint64_t queued = 0;     // result 0 (and 4: queued without siginfo)
  uint64_t coalesced = 0;  // result 2: already pending, merged
  uint64_t ignored = 0;    // result 1
  uint64_t failed = 0;     // result 3: RLIMIT_SIGPENDING overflow
  uint64_t delivered = 0;
  uint64_t unpaired = 0;  // delivered with no queued generate seen
  lab::Histogram delay;   // generate -> deliver, ns
  std::map<pid_t, SenderTally> senders;

  void reset() { *this = Counts{}; }
};

struct Key {
  pid_t tgid;
  int sig;
  bool operator<(const Key& o) const { return tgid != o.tgid ? tgid < o.tgid : sig < o.sig; }
};

struct Stream {
  std::string comm;
  Counts interval;
  Counts total;
  std::deque<uint64_t> queued_at;  // timestamps of queued, not yet delivered generates
};

class Tracker {
 public:
  explicit Tracker(pid_t only) : only_(only) {}

  void on_generate(uint64_t ts, pid_t sender_tid, pid_t target_tid, int sig, int result,
                   const std::string& target_comm) {
    pid_t tgid = tgid_of(target_tid);
    if (only_ > 0 && tgid != only_) return;
    Stream& s = streams_[{tgid, sig}];
    if (s.comm.empty()) s.comm = target_comm;
    pid_t sender = tgid_of(sender_tid);
    for (Counts* c : {&s.interval, &s.total}) {
      ++c->generated;
      switch (result) {
        case 0:
        case 4:
          ++c->queued;
          break;
        case 1:
          ++c->ignored;
          break;
        case 2:
          ++c->coalesced;
          break;
        default:
          ++c->failed;
          break;
      }
      SenderTally& tally = c->senders[sender];
      if (tally.comm.empty()) tally.comm = comm_of(sender);
      ++tally.count;
    }
    if (result == 0 || result == 4) {
      // Bound the FIFO: a process that takes its signals with sigwaitinfo
      // or a signalfd never produces signal_deliver.
      if (s.queued_at.size() >= 65536) s.queued_at.pop_front();
      s.queued_at.push_back(ts);
    }
  }

  void on_deliver(uint64_t ts, pid_t tid, int sig) {
    pid_t tgid = tgid_of(tid);
    if (only_ > 0 && tgid != only_) return;
    Stream& s = streams_[{tgid, sig}];
    if (s.comm.empty()) s.comm = comm_of(tid);
    bool paired = false;
    uint64_t delay = 0;
    if (!s.queued_at.empty() && s.queued_at.front() <= ts) {
      delay = ts - s.queued_at.front();
      s.queued_at.pop_front();
      paired = true;
    }
    for (Counts* c : {&s.interval, &s.total}) {
      ++c->delivered;
      if (paired)
        c->delay.record(static_cast<double>(delay));
      else
        ++c->unpaired;
    }
  }

  std::map<Key, Stream>& streams() { return streams_; }

  // Forgets thread-to-process mappings (thread ids are reused).
  void forget_threads() {
    tgid_cache_.clear();
    comm_cache_.clear();
  }

  pid_t tgid_of(pid_t tid) {
    auto it = tgid_cache_.find(tid);
    if (it != tgid_cache_.end()) return it->second;
    pid_t tgid = tid;
    std::ifstream in("/proc/" + std::to_string(tid) + "/status");
    std::string line;
    while (std::getline(in, line))
      if (line.rfind("Tgid:", 0) == 0) {
        tgid = static_cast<pid_t>(std::strtol(line.c_str() + 5, nullptr, 10));
        break;
      }
    if (tid == 0) tgid = 0;
    tgid_cache_[tid] = tgid;
    return tgid;
  }

  std::string comm_of(pid_t pid) {
    auto it = comm_cache_.find(pid);
    if (it != comm_cache_.end()) return it->second;
    std::string comm =
        pid == 0 ? "kernel" : read_first_line("/proc/" + std::to_string(pid) + "/comm");
    if (comm.empty()) comm = "exited";
    comm_cache_[pid] = comm;
    return comm;
  }

 private:
  pid_t only_;
  std::map<Key, Stream> streams_;
  std::unordered_map<pid_t, pid_t> tgid_cache_;
  std::unordered_map<pid_t, std::string> comm_cache_;
};

struct ReadContext {
  const SignalTracing* tracing;
  Tracker* tracker;
  uint64_t events = 0;
};

int on_event(tep_event* event, tep_record* record, int /*cpu*/, void* data) {
  auto* ctx = static_cast<ReadContext*>(data);
  unsigned long long sig = 0, value = 0;
  int common_pid = tep_data_pid(ctx->tracing->tep(), record);
  if (event->id == ctx->tracing->generate_id()) {
    unsigned long long target = 0, result = 0;
    if (tep_get_field_val(nullptr, event, "sig", record, &sig, 0) != 0 ||
        tep_get_field_val(nullptr, event, "pid", record, &target, 0) != 0 ||
        tep_get_field_val(nullptr, event, "result", record, &result, 0) != 0)
      return 0;
    int len = 0;
    const char* comm =
        static_cast<const char*>(tep_get_field_raw(nullptr, event, "comm", record, &len, 0));
    std::string target_comm = comm ? std::string(comm, strnlen(comm, std::max(len, 0))) : "";
    ctx->tracker->on_generate(record->ts, common_pid, static_cast<pid_t>(target),
                              static_cast<int>(sig), static_cast<int>(result), target_comm);
    ++ctx->events;
  } else if (event->id == ctx->tracing->deliver_id()) {
    if (tep_get_field_val(nullptr, event, "sig", record, &sig, 0) != 0) return 0;
    (void)value;
    ctx->tracker->on_deliver(record->ts, common_pid, static_cast<int>(sig));
    ++ctx->events;
  }
  return 0;
}

// Reads every event waiting in the instance's buffers.
uint64_t drain(const SignalTracing& tracing, Tracker& tracker) {
  ReadContext ctx{&tracing, &tracker};
  tracefs_iterate_raw_events(tracing.tep(), tracing.instance(), nullptr, 0, on_event, &ctx);
  return ctx.events;
}

// ------------------------------------------------------------ output

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

struct Pending {
  bool known = false;
  bool shared = false;  // in ShdPnd (process-directed, not yet taken)
  int threads = 0;      // threads with it in SigPnd
};

Pending pending_of(pid_t tgid, int sig) {
  Pending p;
  try {
    for (pid_t tid : sys::list_threads(tgid)) {
      auto st = sys::read_thread_signal_state(tgid, tid);
      if (!st) continue;
      p.known = true;
      if (sigismember(&st->shared_pending, sig) == 1) p.shared = true;
      if (sigismember(&st->pending, sig) == 1) ++p.threads;
    }
  } catch (const std::system_error&) {
    // The process is gone.
  }
  return p;
}

nlohmann::json delay_json(const lab::Histogram& h) {
  if (h.empty()) return {{"count", 0}};
  return {{"count", h.count()},
          {"p50", h.percentile(50)},
          {"p90", h.percentile(90)},
          {"p99", h.percentile(99)},
          {"max", h.max()}};
}

std::string short_duration(double ns) {
  if (ns < 1e3) return fmt::format("{:.0f}ns", ns);
  if (ns < 1e6) return fmt::format("{:.1f}us", ns / 1e3);
  if (ns < 1e9) return fmt::format("{:.1f}ms", ns / 1e6);
  return fmt::format("{:.2f}s", ns / 1e9);
}

struct Row {
  Key key;
  Stream* stream;
  double generated_per_s;
  double delivered_per_s;
};

std::vector<Row> rows_of(Tracker& tracker, double seconds, bool totals) {
  std::vector<Row> rows;
  for (auto& [key, s] : tracker.streams()) {
    const Counts& c = totals ? s.total : s.interval;
    if (c.generated == 0 && c.delivered == 0) continue;
    rows.push_back({key, &s, c.generated / seconds, c.delivered / seconds});
  }
  std::sort(rows.begin(), rows.end(), [](const Row& a, const Row& b) {
    return std::max(a.generated_per_s, a.delivered_per_s) >
           std::max(b.generated_per_s, b.delivered_per_s);
  });
  return rows;
}

nlohmann::json row_json(const Row& r, const Counts& c, double seconds, double threshold,
                        const Pending& pending) {
  nlohmann::json senders = nlohmann::json::array();
  std::vector<std::pair<pid_t, SenderTally>> sorted(c.senders.begin(), c.senders.end());
  std::sort(sorted.begin(), sorted.end(),
            [](const auto& a, const auto& b) { return a.second.count > b.second.count; });
  for (std::size_t i = 0; i < sorted.size() && i < 5; ++i)
    senders.push_back({{"pid", sorted[i].first},
                       {"comm", sorted[i].second.comm},
                       {"count", sorted[i].second.count}});
  bool flagged = c.generated / seconds > threshold;
  nlohmann::json j = {{"pid", r.key.tgid},
                      {"comm", r.stream->comm},
                      {"signal", r.key.sig},
                      {"signal_name", signal_name(r.key.sig)},
                      {"generated", c.generated},
                      {"queued", c.queued},
                      {"coalesced", c.coalesced},
                      {"ignored", c.ignored},
                      {"failed", c.failed},
                      {"delivered", c.delivered},
                      {"unpaired_deliveries", c.unpaired},
                      {"generated_per_s", c.generated / seconds},
                      {"delivered_per_s", c.delivered / seconds},
                      {"delay_ns", delay_json(c.delay)},
                      {"senders", senders},
                      {"flagged", flagged}};
  if (pending.known)
    j["pending"] = {{"shared", pending.shared}, {"threads", pending.threads}};
  else
    j["pending"] = nullptr;
  if (flagged) j["advice"] = kGuideAdvice;
  return j;
}

void print_table(std::ostream& out, Tracker& tracker, const TraceArgs& args, double seconds,
                 bool totals, const std::string& heading) {
  auto rows = rows_of(tracker, seconds, totals);
  out << heading << "\n";
  out << fmt::format("{:>7} {:<15} {:<11} {:>9} {:>9} {:>9} {:>8} {:>8} {:>8} {:>8}  {}\n", "PID",
                     "COMM", "SIGNAL", "GEN/s", "DLV/s", "MERGED/s", "p50", "p99", "max", "PENDING",
                     "TOP SENDER");
  std::vector<std::string> flags;
  int shown = 0;
  for (const auto& r : rows) {
    if (shown++ >= args.top) break;
    const Counts& c = totals ? r.stream->total : r.stream->interval;
    Pending p = pending_of(r.key.tgid, r.key.sig);
    std::string pending = !p.known ? "gone"
                          : p.shared || p.threads
                              ? fmt::format("{}{}", p.shared ? "proc " : "",
                                            p.threads ? fmt::format("{}thr", p.threads) : "")
                              : "-";
    std::string sender = "-";
    uint64_t best = 0;
    for (const auto& [pid, t] : c.senders)
      if (t.count > best) {
        best = t.count;
        sender = fmt::format("{} ({})", pid, t.comm);
      }
    auto d = [&](double p) {
      return c.delay.empty() ? std::string("-") : short_duration(c.delay.percentile(p));
    };
    out << fmt::format(
        "{:>7} {:<15.15} {:<11} {:>9.0f} {:>9.0f} {:>9.0f} {:>8} {:>8} {:>8} {:>8}  {}\n",
        r.key.tgid, r.stream->comm, signal_name(r.key.sig), r.generated_per_s, r.delivered_per_s,
        c.coalesced / seconds, d(50), d(99),
        c.delay.empty() ? std::string("-") : short_duration(c.delay.max()), pending, sender);
    if (r.generated_per_s > args.threshold)
      flags.push_back(fmt::format("!! {} ({}) receives {:.0f} {}/s, above {:.0f}/s: {}", r.key.tgid,
                                  r.stream->comm, r.generated_per_s, signal_name(r.key.sig),
                                  args.threshold, kGuideAdvice));
  }
  if (rows.empty()) out << "  (no signals)\n";
  if (static_cast<int>(rows.size()) > args.top)
    out << fmt::format("  ... and {} more\n", rows.size() - args.top);
  for (const auto& f : flags) out << f << "\n";
  out.flush();
}

int run_trace(const TraceArgs& args) {
  if (args.pid != 0 && (args.pid < 0 || !process_alive(args.pid)))
    throw UsageError(fmt::format("trace: no process with pid {}", args.pid));
  ensure_tracefs(std::cerr);
  remove_stale_instances(std::cerr);
  StopSignals stop_signals;
  SignalTracing tracing;
  Tracker tracker(args.pid);
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
                                {"instance", tracing.name()},
                                {"threshold_per_s", args.threshold}}
                     .dump()
              << std::endl;
  } else {
    std::cerr << "doorbell trace: tracing signals (" << scope << ") in tracefs instance "
              << tracing.name() << "; Ctrl-C to stop\n";
  }
  uint64_t interval_start = start;
  bool target_gone = false;
  std::string end_reason = "interrupted";
  while (true) {
    drain(tracing, tracker);
    uint64_t now = lab::monotonic_ns();
    bool finish = stop_requested() || (end != 0 && now >= end);
    if (args.pid && !process_alive(args.pid)) {
      // Events the target produced before exiting are in the buffer: one
      // more read takes them.
      drain(tracing, tracker);
      target_gone = true;
      finish = true;
    }
    if (finish || now - interval_start >= interval_ns) {
      double seconds = std::max(1e-3, (now - interval_start) / 1e9);
      double elapsed = (now - start) / 1e9;
      if (args.json) {
        nlohmann::json procs = nlohmann::json::array();
        for (const auto& r : rows_of(tracker, seconds, false))
          procs.push_back(row_json(r, r.stream->interval, seconds, args.threshold,
                                   pending_of(r.key.tgid, r.key.sig)));
        std::cout << nlohmann::json{{"type", "interval"},
                                    {"t_s", elapsed},
                                    {"interval_s", seconds},
                                    {"lost_events", tracing.overruns()},
                                    {"signals", procs}}
                         .dump()
                  << std::endl;
      } else {
        std::ostringstream screen;
        if (terminal) screen << "\033[H\033[2J";
        long long lost = tracing.overruns();
        print_table(
            screen, tracker, args, seconds, false,
            fmt::format(
                "doorbell trace: {}, last {:.1f} s, {:.0f} s traced{}", scope, seconds, elapsed,
                lost ? fmt::format(", {} events lost (buffer overrun)", lost) : std::string()));
        std::cout << screen.str() << (terminal ? "" : "\n") << std::flush;
      }
      for (auto& [key, s] : tracker.streams()) s.interval.reset();
      tracker.forget_threads();
      interval_start = now;
    }
    if (finish) {
      if (target_gone)
        end_reason = "target exited";
      else if (!stop_requested())
        end_reason = "duration reached";
      break;
    }
    sleep_ns(std::min<uint64_t>(100'000'000ull, interval_ns));
  }
  double total_s = std::max(1e-3, (lab::monotonic_ns() - start) / 1e9);
  long long lost = tracing.overruns();
  if (args.json) {
    nlohmann::json procs = nlohmann::json::array();
    for (const auto& r : rows_of(tracker, total_s, true))
      procs.push_back(
          row_json(r, r.stream->total, total_s, args.threshold, pending_of(r.key.tgid, r.key.sig)));
    std::cout << nlohmann::json{{"type", "summary"},
                                {"duration_s", total_s},
                                {"end", end_reason},
                                {"lost_events", lost},
                                {"signals", procs}}
                     .dump()
              << std::endl;
  } else {
    std::cout << "\n";
    print_table(
        std::cout, tracker, args, total_s, true,
        fmt::format("doorbell trace: {}, totals over {:.1f} s ({}){}", scope, total_s, end_reason,
                    lost ? fmt::format(", {} events lost (buffer overrun)", lost) : std::string()));
  }
  return 0;
}

// ------------------------------------------------------------ overhead

// A child that sends itself `count` SIGUSR1 (kill + empty handler, each
// delivered before kill returns) after a word on `go`, and writes the
// nanoseconds per signal to `result`.
pid_t start_storm(int count, int& go_fd, int& result_fd) {
  int go[2], result[2];
  if (::pipe(go) != 0) sys::throw_errno("pipe");
  if (::pipe(result) != 0) sys::throw_errno("pipe");
  pid_t pid = ::fork();
  if (pid < 0) sys::throw_errno("fork");
  if (pid == 0) {
    ::close(go[1]);
    ::close(result[0]);
    struct sigaction sa {};
    sa.sa_handler = [](int) {};
    sigemptyset(&sa.sa_mask);
    ::sigaction(SIGUSR1, &sa, nullptr);
    char c;
    if (::read(go[0], &c, 1) != 1) ::_exit(3);
    const pid_t self = ::getpid();
    const uint64_t t0 = lab::monotonic_ns();
    for (int i = 0; i < count; ++i) ::kill(self, SIGUSR1);
    double per_signal = static_cast<double>(lab::monotonic_ns() - t0) / count;
    ssize_t w = ::write(result[1], &per_signal, sizeof per_signal);
    ::_exit(w == sizeof per_signal ? 0 : 4);
  }
  ::close(go[0]);
  ::close(result[1]);
  go_fd = go[1];
  result_fd = result[0];
  return pid;
}

// Runs one storm; while it runs, drains `tracing` every 50 ms when given.
double run_storm(int count, const SignalTracing* tracing, Tracker* tracker) {
  int go = -1, result = -1;
  pid_t child = start_storm(count, go, result);
  if (::write(go, "g", 1) != 1) sys::throw_errno("write");
  ::close(go);
  double per_signal = -1;
  std::size_t got = 0;
  ::fcntl(result, F_SETFL, O_NONBLOCK);
  while (got < sizeof per_signal) {
    ssize_t n = ::read(result, reinterpret_cast<char*>(&per_signal) + got, sizeof per_signal - got);
    if (n > 0) {
      got += static_cast<std::size_t>(n);
      continue;
    }
    if (n == 0) break;  // the child died without a result
    if (errno != EAGAIN && errno != EINTR) break;
    if (tracing) drain(*tracing, *tracker);
    sleep_ns(50'000'000);
  }
  ::close(result);
  int status = 0;
  while (::waitpid(child, &status, 0) < 0 && errno == EINTR) {
  }
  if (tracing) drain(*tracing, *tracker);
  if (got != sizeof per_signal) throw std::runtime_error("the signal storm child failed");
  return per_signal;
}

// Self-signals per second with and without this command's tracing, best of
// `rounds` alternating runs each.
int measure_overhead(int count, int rounds, bool json) {
  ensure_tracefs(std::cerr);
  remove_stale_instances(std::cerr);
  StopSignals stop_signals;
  double best_plain = 1e300, best_traced = 1e300;
  uint64_t events = 0;
  long long lost = 0;
  for (int r = 0; r < rounds && !stop_requested(); ++r) {
    best_plain = std::min(best_plain, run_storm(count, nullptr, nullptr));
    SignalTracing tracing;
    Tracker tracker(0);
    best_traced = std::min(best_traced, run_storm(count, &tracing, &tracker));
    for (auto& [key, s] : tracker.streams()) events += s.total.generated + s.total.delivered;
    lost += tracing.overruns();
  }
  double added = best_traced - best_plain;
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
                                {"events_read", events},
                                {"lost_events", lost}}
                     .dump()
              << std::endl;
  } else {
    std::cout << fmt::format(
        "self-signal storm (kill + empty handler), {} signals per run, best of {} runs each:\n"
        "  untraced: {:>10.0f} signals/s ({:.0f} ns per signal)\n"
        "  traced:   {:>10.0f} signals/s ({:.0f} ns per signal), {} events read, {} lost\n"
        "  tracing adds {:.0f} ns per signal ({:.1f}%), two tracepoints per signal\n",
        count, rounds, 1e9 / best_plain, best_plain, 1e9 / best_traced, best_traced, events, lost,
        added, 100.0 * added / best_plain);
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
      cmd->add_option("-p,--pid", args->pid, "trace only the signals received by this process");
      cmd->add_option("--threshold", args->threshold,
                      "flag a receiver above this many signals per second")
          ->capture_default_str();
      cmd->add_option("--duration", args->duration_s,
                      "stop after this many seconds (default: Ctrl-C)");
      cmd->add_option("--interval", args->interval_s, "refresh every this many seconds")
          ->capture_default_str();
      cmd->add_option("--top", args->top, "rows shown per refresh")->capture_default_str();
      cmd->add_flag("--json", args->json,
                    "one JSON object per line: start, each interval, summary");
      cmd->add_flag("--measure-overhead", args->overhead,
                    "measure what tracing costs: self-signals per second with and without it");
      cmd->add_option("--storm-signals", args->overhead_signals,
                      "signals per storm run for --measure-overhead")
          ->capture_default_str();
      cmd->add_option("--storm-rounds", args->overhead_rounds,
                      "runs with and without tracing for --measure-overhead (best of each)")
          ->capture_default_str();
      cmd->callback([args] {
        if (!(args->threshold > 0)) throw UsageError("trace: --threshold must be above 0");
        if (args->duration_s < 0) throw UsageError("trace: --duration must not be negative");
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
