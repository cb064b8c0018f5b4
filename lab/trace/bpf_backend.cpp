// The BPF backend: the programs of lab/trace/bpf/ count and pair in the
// kernel; collect() reads their totals into the Tracker and their slow
// deliveries into SlowDelivery records.
#include <signal.h>

#include <algorithm>
#include <cerrno>
#include <map>
#include <memory>
#include <set>
#include <string>
#include <vector>

#include <fmt/format.h>

#include "lab/trace/backend.h"
#include "lab/trace/bpf/signal_programs.h"

namespace doorbell::lab::trace {
namespace {

std::string comm_text(const char (&comm)[DOORBELL_COMM_LEN]) {
  std::size_t n = 0;
  while (n < DOORBELL_COMM_LEN && comm[n] != 0) ++n;
  return std::string(comm, n);
}

bool process_gone(pid_t pid) {
  return pid > 0 && ::kill(pid, 0) != 0 && errno == ESRCH;
}

// The per-CPU copies of one entry, added up.
Counts counts_of(const std::vector<doorbell_stats>& per_cpu, std::string& comm) {
  static_assert(kDelayBuckets == DOORBELL_DELAY_BUCKETS && kCauses == DOORBELL_CAUSES);
  Counts c;
  for (const doorbell_stats& v : per_cpu) {
    c.generated += v.generated;
    c.queued += v.queued;
    c.coalesced += v.merged;
    c.ignored += v.ignored;
    c.failed += v.failed;
    c.delivered += v.delivered;
    c.taken_sigwait += v.taken_sigwait;
    c.taken_signalfd += v.taken_signalfd;
    c.unpaired += v.unpaired;
    c.discarded += v.discarded;
    c.senders_other += v.senders_other;
    c.unmeasured_table_full += v.unmeasured;
    for (int i = 0; i < kDelayBuckets; ++i) c.delay_buckets[i] += v.delay_buckets[i];
    c.delay_max_ns = std::max<uint64_t>(c.delay_max_ns, v.delay_max_ns);
    for (int i = 0; i < kCauses; ++i) {
      c.causes.ns[i] += v.cause_ns[i];
      c.causes.count[i] += v.cause_count[i];
    }
    c.causes.switch_in_unseen += v.switch_in_unseen;
    if (v.longest_runnable_ns > c.causes.longest_runnable_ns) {
      c.causes.longest_runnable_ns = v.longest_runnable_ns;
      c.causes.ran_instead_tid = static_cast<pid_t>(v.ran_instead_tid);
      c.causes.ran_instead_comm = comm_text(v.ran_instead_comm);
    }
    for (const doorbell_sender& s : v.senders) {
      if (s.tgid_plus_one == 0 || s.count == 0) continue;
      const pid_t pid = static_cast<pid_t>(s.tgid_plus_one - 1);
      SenderTally& t = c.senders[pid];
      if (t.comm.empty()) t.comm = pid == 0 ? std::string("kernel") : comm_text(s.comm);
      t.count += s.count;
    }
    if (comm.empty()) comm = comm_text(v.comm);
  }
  return c;
}

SlowDelivery slow_of(const doorbell_slow& r) {
  SlowDelivery d;
  d.generated_ns = r.ts_generate;
  d.taken_ns = r.ts_take;
  d.tgid = static_cast<pid_t>(r.tgid);
  d.taker_tid = static_cast<pid_t>(r.taker_tid);
  d.target_tid = static_cast<pid_t>(r.target_tid);
  d.sender_tgid = static_cast<pid_t>(r.sender_tgid);
  d.sig = static_cast<int>(r.sig);
  d.how = static_cast<TakenBy>(r.how <= 2 ? r.how : 0);
  d.cause = static_cast<Cause>(r.cause < DOORBELL_CAUSES ? r.cause : 0);
  for (int i = 0; i < kCauses; ++i) d.cause_ns[i] = r.cause_ns[i];
  d.longest_runnable_ns = r.longest_runnable_ns;
  d.held_by_tid = static_cast<pid_t>(r.held_by_tid);
  if (d.held_by_tid) d.held_by_comm = comm_text(r.held_by_comm);
  d.last_before_tid = static_cast<pid_t>(r.last_before_tid);
  if (d.last_before_tid) d.last_before_comm = comm_text(r.last_before_comm);
  d.comm = comm_text(r.comm);
  return d;
}

class BpfBackend final : public Backend {
 public:
  explicit BpfBackend(const BackendOptions& options)
      : only_(options.only),
        programs_(bpf::SignalPrograms::Options{options.only, options.slow_ns, options.every_syscall,
                                               options.without_task_from_pid}) {}

  BackendKind kind() const noexcept override { return BackendKind::bpf; }
  std::string source() const override {
    return fmt::format("{} BPF programs attached, {}", programs_.attached(),
                       programs_.syscall_route());
  }
  bool sees_causes() const noexcept override { return true; }
  std::vector<std::string> notes() const override {
    if (!programs_.mounted_tracefs()) return {};
    return {
        "tracefs was not mounted; mounted it privately to read the system-call tracepoint "
        "ids (outside the system's mount namespace: the system's mounts are unchanged)"};
  }

  void poll(Tracker&, std::vector<SlowDelivery>* slow) override {
    programs_.drain_slow([&](const doorbell_slow& r) {
      if (slow != nullptr) slow->push_back(slow_of(r));
    });
  }

  void collect(Tracker& tracker, std::vector<SlowDelivery>* slow) override {
    poll(tracker, slow);
    // Processes found gone before the read: this read has all they did, so
    // their entries go after it, and the tracker retires their streams into
    // its aggregate (a process that dies during the read goes at the next
    // one). Memory stays bounded by the processes alive.
    std::set<pid_t> gone;
    for (const pid_t tgid : seen_)
      if (process_gone(tgid)) gone.insert(tgid);
    // A key names a process by its id and its start: a PID may hold several
    // processes' entries (one exited, another given its PID since). All but
    // the newest are gone for certain and final. The tracker knows a process
    // by its id alone, so one generation a read: the oldest's entries are
    // handed over (and retired when newer ones wait), the newer ones wait
    // in the map for the next read, cumulative, nothing lost.
    struct Entry {
      doorbell_stats_key key;
      std::string comm;
      Counts counts;
    };
    std::map<pid_t, std::map<uint64_t, std::vector<Entry>>> by_process;  // tgid, start
    programs_.for_each_stats(
        [&](const doorbell_stats_key& k, const std::vector<doorbell_stats>& per_cpu) {
          Entry e{k, {}, {}};
          e.counts = counts_of(per_cpu, e.comm);
          by_process[static_cast<pid_t>(k.tgid)][k.start].push_back(std::move(e));
        });
    for (auto& [tgid, generations] : by_process) {
      auto& [start, entries] = *generations.begin();
      // With -p the oldest is the process chosen (the programs were loaded
      // while it lived); a later one on its PID is another: never shown.
      const bool newer_waiting = only_ <= 0 && generations.size() > 1;
      // (Its entries stay, so that it stays the oldest: 64 at most.)
      const bool final = only_ <= 0 && (newer_waiting || gone.count(tgid) != 0);
      for (Entry& e : entries) {
        tracker.set_totals(Key{tgid, static_cast<int>(e.key.sig)}, e.comm, std::move(e.counts));
        if (final) programs_.forget(e.key);
      }
      seen_.insert(tgid);
      if (newer_waiting) {
        tracker.gone(tgid);
        gone.erase(tgid);  // the newer process is read next time, then judged
      }
    }
    for (const pid_t tgid : gone) {
      seen_.erase(tgid);
      tracker.gone(tgid);
    }
  }

  // Events only: a generate or a take not counted. A queued signal not
  // remembered is its stream's unmeasured delay; a dropped slow line is
  // slow_dropped().
  long long lost_events() const override {
    const auto losses = programs_.losses();
    return static_cast<long long>(losses[DOORBELL_LOSS_STATS_FULL] +
                                  losses[DOORBELL_LOSS_SIGNALFD_READ]);
  }

  long long slow_dropped() const override {
    return static_cast<long long>(programs_.losses()[DOORBELL_LOSS_SLOW_DROPPED]);
  }

  long long unlogged_state_changes() const override {
    return static_cast<long long>(programs_.losses()[DOORBELL_LOSS_STATE_LOG]);
  }

  long long unremembered_signals() const override {
    return static_cast<long long>(programs_.losses()[DOORBELL_LOSS_STORAGE]);
  }

 private:
  pid_t only_;
  bpf::SignalPrograms programs_;
  std::set<pid_t> seen_;
};

}  // namespace

std::unique_ptr<Backend> open_bpf_backend(const BackendOptions& options) {
  try {
    return std::make_unique<BpfBackend>(options);
  } catch (const bpf::BpfUnavailable& e) {
    throw BackendUnavailable(e.what());
  }
}

}  // namespace doorbell::lab::trace
