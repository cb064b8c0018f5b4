#include "lab/trace/tracker.h"

#include <signal.h>
#include <string.h>

#include <algorithm>
#include <cerrno>
#include <cmath>
#include <cstdlib>
#include <fstream>
#include <system_error>

#include <fmt/format.h>

#include "lab/common/format.h"
#include "sys/proc.h"
#include "sys/tgkill.h"

namespace doorbell::lab::trace {

const char* const kGuideAdvice =
    "signals used as a data channel: each one costs a kernel entry, a signal frame with the FPU "
    "state and a sigreturn, and standard signals coalesce. Use an eventfd or a doorbell::Bell to "
    "wake, a doorbell::Ring to pass data (docs/guide.md, \"High-rate notification\").";

namespace {

std::string read_first_line(const std::string& path) {
  std::ifstream in(path);
  std::string line;
  std::getline(in, line);
  return line;
}

// A bound on the FIFO of queued generates per stream: a process that takes
// its signals with sigwaitinfo or a signalfd never produces signal_deliver.
constexpr std::size_t kMaxQueued = 65536;

}  // namespace

int delay_bucket(uint64_t ns) noexcept {
  if (ns < 4) return static_cast<int>(ns);
  const int top = 63 - __builtin_clzll(ns);  // the highest set bit, >= 2
  if (top > 40) return kDelayBuckets - 1;
  return 4 * (top - 1) + static_cast<int>((ns >> (top - 2)) & 3);
}

double delay_bucket_lower(int bucket) noexcept {
  if (bucket < 4) return bucket;
  const int top = bucket / 4 + 1, sub = bucket % 4;
  return std::ldexp(1.0, top) + sub * std::ldexp(1.0, top - 2);
}

double delay_bucket_upper(int bucket) noexcept {
  if (bucket < 4) return bucket + 1;
  if (bucket == kDelayBuckets - 1) return std::ldexp(1.0, 63);
  const int top = bucket / 4 + 1;
  return delay_bucket_lower(bucket) + std::ldexp(1.0, top - 2);
}

const char* cause_name(Cause cause) {
  switch (cause) {
    case Cause::on_cpu:
      return "on CPU";
    case Cause::runnable:
      return "runnable";
    case Cause::asleep:
      return "asleep";
    case Cause::blocked:
      return "blocked";
  }
  return "?";
}

const char* cause_key(Cause cause) {
  switch (cause) {
    case Cause::on_cpu:
      return "on_cpu";
    case Cause::runnable:
      return "runnable";
    case Cause::asleep:
      return "asleep";
    case Cause::blocked:
      return "blocked";
  }
  return "?";
}

const char* cause_meaning(Cause cause) {
  switch (cause) {
    case Cause::on_cpu:
      return "on a CPU, noticed at its next return to user space";
    case Cause::runnable:
      return "runnable, waiting for a CPU";
    case Cause::asleep:
      return "asleep, not woken by the signal";
    case Cause::blocked:
      return "blocked in every thread until one unblocked it or waited for it";
  }
  return "?";
}

void Tracker::on_generate(const GenerateEvent& e) {
  const pid_t tgid = tgid_of(e.target_tid);
  if (only_ > 0 && tgid != only_) return;
  Stream& s = streams_[{tgid, e.sig}];
  if (s.comm.empty()) s.comm = e.target_comm;
  const pid_t sender = tgid_of(e.sender_tid);
  for (Counts* c : {&s.interval, &s.total}) {
    ++c->generated;
    switch (e.result) {
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
  if (e.result == 0 || e.result == 4) {
    Queue& q = e.group ? s.queued_at : s.queued_for_thread[e.target_tid];
    // A standard signal is in a queue at most once: queued again, the one
    // before is gone (discarded unseen, by SIG_IGN while pending or SIGCONT,
    // or taken by sigwait or a signalfd, which these events do not show).
    if (e.sig < SIGRTMIN) q.clear();
    if (q.size() >= kMaxQueued)
      ++q.not_remembered;  // its take is counted as unmeasured, never paired wrong
    else
      q.push_back(e.ts_ns);
  }
}

void Tracker::on_deliver(const DeliverEvent& e) {
  const pid_t tgid = tgid_of(e.tid);
  if (only_ > 0 && tgid != only_) return;
  auto found = streams_.find({tgid, e.sig});
  // The thread's own queue first, then the process's: dequeue_signal()'s
  // order.
  Queue* q = nullptr;
  if (found != streams_.end()) {
    auto own = found->second.queued_for_thread.find(e.tid);
    if (own != found->second.queued_for_thread.end() && !own->second.empty())
      q = &own->second;
    else if (!found->second.queued_at.empty())
      q = &found->second.queued_at;
  }
  // A SIGKILL that no one sent: the kernel's kill of the other threads at a
  // group exit or an exec, not a delivery.
  if (q == nullptr && e.sig == SIGKILL) return;
  Stream& s = found != streams_.end() ? found->second : streams_[{tgid, e.sig}];
  if (s.comm.empty()) s.comm = comm_of(e.tid);
  enum { paired, unmeasured, unpaired } how = unpaired;
  uint64_t delay = 0;
  if (q != nullptr && !q->empty() && q->front() <= e.ts_ns) {
    delay = e.ts_ns - q->front();
    q->pop_front();
    how = paired;
  } else if (q != nullptr && q->empty() && q->not_remembered > 0) {
    --q->not_remembered;
    how = unmeasured;
  }
  if (q != nullptr && q != &s.queued_at && q->empty() && q->not_remembered == 0)
    s.queued_for_thread.erase(e.tid);
  for (Counts* c : {&s.interval, &s.total}) {
    ++c->delivered;
    if (how == paired) {
      c->delay.record(static_cast<double>(delay));
      ++c->delay_buckets[delay_bucket(delay)];
      c->delay_max_ns = std::max(c->delay_max_ns, delay);
    } else if (how == unmeasured) {
      ++c->unmeasured_table_full;
    } else {
      ++c->unpaired;
    }
  }
}

void accumulate(Counts& into, const Counts& more) {
  into.generated += more.generated;
  into.queued += more.queued;
  into.coalesced += more.coalesced;
  into.ignored += more.ignored;
  into.failed += more.failed;
  into.delivered += more.delivered;
  into.taken_sigwait += more.taken_sigwait;
  into.taken_signalfd += more.taken_signalfd;
  into.unpaired += more.unpaired;
  into.discarded += more.discarded;
  into.senders_other += more.senders_other;
  into.unmeasured_table_full += more.unmeasured_table_full;
  into.delay.merge(more.delay);
  for (int i = 0; i < kDelayBuckets; ++i) into.delay_buckets[i] += more.delay_buckets[i];
  into.delay_max_ns = std::max(into.delay_max_ns, more.delay_max_ns);
  for (int i = 0; i < kCauses; ++i) {
    into.causes.ns[i] += more.causes.ns[i];
    into.causes.count[i] += more.causes.count[i];
  }
  into.causes.switch_in_unseen += more.causes.switch_in_unseen;
  if (more.causes.longest_runnable_ns > into.causes.longest_runnable_ns) {
    into.causes.longest_runnable_ns = more.causes.longest_runnable_ns;
    into.causes.ran_instead_tid = more.causes.ran_instead_tid;
    into.causes.ran_instead_comm = more.causes.ran_instead_comm;
  }
  for (const auto& [pid, tally] : more.senders) {
    SenderTally& t = into.senders[pid];
    if (t.comm.empty()) t.comm = tally.comm;
    t.count += tally.count;
  }
}

namespace {

// now - before, counter by counter; the histogram from the bucket
// differences. Causes' "longest" fields are the latest values.
Counts difference(const Counts& now, const Counts& before) {
  Counts d;
  d.generated = now.generated - before.generated;
  d.queued = now.queued - before.queued;
  d.coalesced = now.coalesced - before.coalesced;
  d.ignored = now.ignored - before.ignored;
  d.failed = now.failed - before.failed;
  d.delivered = now.delivered - before.delivered;
  d.unpaired = now.unpaired - before.unpaired;
  d.taken_sigwait = now.taken_sigwait - before.taken_sigwait;
  d.taken_signalfd = now.taken_signalfd - before.taken_signalfd;
  d.discarded = now.discarded - before.discarded;
  d.senders_other = now.senders_other - before.senders_other;
  d.unmeasured_table_full = now.unmeasured_table_full - before.unmeasured_table_full;
  for (int i = 0; i < kDelayBuckets; ++i)
    d.delay_buckets[i] = now.delay_buckets[i] - before.delay_buckets[i];
  // The largest delay only grows: when it grew, it happened in this interval.
  if (now.delay_max_ns > before.delay_max_ns) d.delay_max_ns = now.delay_max_ns;
  for (int i = 0; i < kCauses; ++i) {
    d.causes.ns[i] = now.causes.ns[i] - before.causes.ns[i];
    d.causes.count[i] = now.causes.count[i] - before.causes.count[i];
  }
  d.causes.switch_in_unseen = now.causes.switch_in_unseen - before.causes.switch_in_unseen;
  if (now.causes.longest_runnable_ns != before.causes.longest_runnable_ns) {
    d.causes.longest_runnable_ns = now.causes.longest_runnable_ns;
    d.causes.ran_instead_tid = now.causes.ran_instead_tid;
    d.causes.ran_instead_comm = now.causes.ran_instead_comm;
  }
  for (const auto& [pid, tally] : now.senders) {
    auto it = before.senders.find(pid);
    const uint64_t earlier = it == before.senders.end() ? 0 : it->second.count;
    if (tally.count > earlier) d.senders[pid] = {tally.comm, tally.count - earlier};
  }
  return d;
}

void histogram_from_buckets(Counts& c) {
  c.delay.reset();
  int top = -1;
  for (int i = 0; i < kDelayBuckets; ++i)
    if (c.delay_buckets[i] != 0) top = i;
  for (int i = 0; i <= top; ++i) {
    uint64_t n = c.delay_buckets[i];
    if (n == 0) continue;
    if (i == top && c.delay_max_ns != 0 && delay_bucket(c.delay_max_ns) == top) {
      c.delay.record(static_cast<double>(c.delay_max_ns));  // the largest, exactly
      --n;
    }
    // A bucket's delays at its middle, but never above the exact largest
    // (issue 36, item 8: many delays in the top bucket, recorded at its
    // middle, read as a max above the real one).
    double middle = (delay_bucket_lower(i) + std::min(delay_bucket_upper(i), 1e18)) / 2;
    if (c.delay_max_ns != 0) middle = std::min(middle, static_cast<double>(c.delay_max_ns));
    if (n != 0) c.delay.record_n(middle, n);
  }
}

}  // namespace

void Tracker::set_totals(const Key& key, const std::string& comm, Counts totals) {
  if (only_ > 0 && key.tgid != only_) return;
  Stream& s = streams_[key];
  s.from_totals = true;
  if (!comm.empty()) s.comm = comm;
  s.total = std::move(totals);
  histogram_from_buckets(s.total);
  s.interval = difference(s.total, s.total_at_interval_start);
  histogram_from_buckets(s.interval);
}

namespace {

bool has_queued(const Stream& s) {
  if (!s.queued_at.empty()) return true;
  for (const auto& [tid, queue] : s.queued_for_thread)
    if (!queue.empty()) return true;
  return false;
}

}  // namespace

std::map<Key, Stream>::iterator Tracker::retire(std::map<Key, Stream>::iterator it) {
  auto [aggregate, fresh] = streams_.try_emplace({kRetired, it->first.sig});
  if (fresh) {
    aggregate->second.comm = "(exited)";
    aggregate->second.processes = 0;
  }
  accumulate(aggregate->second.total, it->second.total);
  // Retired within an interval: what it did in it stays in the interval.
  accumulate(aggregate->second.interval, it->second.interval);
  ++aggregate->second.processes;
  return streams_.erase(it);
}

void Tracker::end_interval() {
  if (only_ == 0) {
    std::sort(gone_.begin(), gone_.end());
    for (auto it = streams_.begin(); it != streams_.end();) {
      const pid_t tgid = it->first.tgid;
      Stream& s = it->second;
      bool gone = tgid > 0 && (s.from_totals ? std::binary_search(gone_.begin(), gone_.end(), tgid)
                                             : ::kill(tgid, 0) != 0 && errno == ESRCH);
      // Events: the takes of generates still queued may not be read yet (a
      // read holds its last moments back for the next one); such a stream
      // waits one more interval, no longer.
      if (gone && !s.from_totals && !s.found_gone && has_queued(s)) {
        s.found_gone = true;
        gone = false;
      }
      it = gone ? retire(it) : std::next(it);
    }
  }
  gone_.clear();
  for (auto& [key, s] : streams_) {
    s.interval.reset();
    s.total_at_interval_start = s.total;
  }
  tgid_cache_.clear();
  comm_cache_.clear();
  // A thread gone at the last interval's end had all its events read by
  // now; one gone since is kept one more interval, for events still unread.
  for (auto it = learned_.begin(); it != learned_.end();) {
    if (it->second.gone) {
      it = learned_.erase(it);
      continue;
    }
    it->second.gone = sys::tgkill(it->second.tgid, it->first, 0) == -ESRCH;
    ++it;
  }
}

void Tracker::on_new_task(const NewTaskEvent& e) {
  if (e.tid <= 0) return;
  const pid_t tgid = e.thread ? tgid_of(e.creator_tid) : e.tid;
  tgid_cache_.erase(e.tid);  // a reused id: what was cached was another task's
  learned_[e.tid] = {tgid, false};
  // The kernel gives a new task an id no task holds, and a process's id is
  // held until all of it is reaped: a process that had this id is gone, and
  // its events are all fed (in timestamp order) before the newcomer's. Its
  // streams retire now, so that a process given a recycled PID within one
  // interval starts rows of its own (kill(pid, 0) at the interval's end
  // would find the newcomer alive).
  if (only_ == 0)
    for (auto it = streams_.lower_bound(Key{e.tid, 0});
         it != streams_.end() && it->first.tgid == e.tid;)
      it = it->second.from_totals ? std::next(it) : retire(it);
}

pid_t Tracker::tgid_of(pid_t tid) {
  if (auto known = learned_.find(tid); known != learned_.end()) return known->second.tgid;
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

std::string Tracker::comm_of(pid_t pid) {
  auto it = comm_cache_.find(pid);
  if (it != comm_cache_.end()) return it->second;
  std::string comm =
      pid == 0 ? "kernel" : read_first_line("/proc/" + std::to_string(pid) + "/comm");
  if (comm.empty()) comm = "exited";
  comm_cache_[pid] = comm;
  return comm;
}

std::string signal_name(int sig) {
  if (sig >= SIGRTMIN && sig <= SIGRTMAX) {
    if (sig == SIGRTMIN) return "SIGRTMIN";
    return fmt::format("SIGRTMIN+{}", sig - SIGRTMIN);
  }
  if (const char* abbrev = ::sigabbrev_np(sig)) return std::string("SIG") + abbrev;
  return fmt::format("signal {}", sig);
}

Pending pending_of(pid_t tgid, int sig) {
  Pending p;
  if (tgid <= 0) return p;  // the kernel, or the aggregate of exited processes
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

namespace {

nlohmann::json delay_json(const Histogram& h) {
  if (h.empty()) return {{"count", 0}};
  return {{"count", h.count()},
          {"p50", h.percentile(50)},
          {"p90", h.percentile(90)},
          {"p99", h.percentile(99)},
          {"max", h.max()}};
}

}  // namespace

std::vector<Row> rows_of(const Tracker& tracker, double seconds, bool totals) {
  std::vector<Row> rows;
  for (const auto& [key, s] : tracker.streams()) {
    const Counts& c = totals ? s.total : s.interval;
    if (c.generated == 0 && c.taken() == 0) continue;
    rows.push_back({key, &s, c.generated / seconds, c.taken() / seconds});
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
  const bool flagged = c.generated / seconds > threshold;
  nlohmann::json j = {
      {"pid", r.key.tgid == kRetired ? nlohmann::json() : nlohmann::json(r.key.tgid)},
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
      {"delays_unmeasured", c.unmeasured()},
      {"delays_unmeasured_by_reason", {{"table_full", c.unmeasured_table_full}}},
      {"senders", senders},
      {"flagged", flagged}};
  if (pending.known)
    j["pending"] = {{"shared", pending.shared}, {"threads", pending.threads}};
  else
    j["pending"] = nullptr;
  if (flagged) j["advice"] = kGuideAdvice;
  if (r.key.tgid == kRetired) j["exited_processes"] = r.stream->processes;
  return j;
}

namespace {

// A rate for the table: whole numbers from 10 up, one decimal below, and
// never "0" for a rate that is not zero.
std::string rate_text(double per_s) {
  if (per_s <= 0) return "0";
  if (per_s < 0.1) return "<0.1";
  if (per_s < 10) return fmt::format("{:.1f}", per_s);
  return fmt::format("{:.0f}", per_s);
}

}  // namespace

void print_table(std::ostream& out, const Tracker& tracker, const TableOptions& options,
                 double seconds, bool totals, const std::string& heading,
                 Pending (*pending)(pid_t, int)) {
  const auto rows = rows_of(tracker, seconds, totals);
  out << heading << "\n";
  // Totals count; an interval's columns are rates.
  // DLV: taken, by any means (a handler or the default action, sigwait, a
  // signalfd).
  out << fmt::format("{:>7} {:<15} {:<11} {:>9} {:>9} {:>9} {:>8} {:>8} {:>8} {:>8}  {}\n", "PID",
                     "COMM", "SIGNAL", totals ? "GEN" : "GEN/s", totals ? "DLV" : "DLV/s",
                     totals ? "MERGED" : "MERGED/s", "p50", "p99", "max", "PENDING", "TOP SENDER");
  std::vector<std::string> flags;
  int shown = 0;
  for (const auto& r : rows) {
    if (shown++ >= options.top) break;
    const Counts& c = totals ? r.stream->total : r.stream->interval;
    const Pending p = pending(r.key.tgid, r.key.sig);
    const std::string pending_text =
        !p.known                ? "gone"
        : p.shared || p.threads ? fmt::format("{}{}", p.shared ? "proc " : "",
                                              p.threads ? fmt::format("{}thr", p.threads) : "")
                                : "-";
    std::string sender = "-";
    uint64_t best = 0;
    for (const auto& [pid, t] : c.senders)
      if (t.count > best) {
        best = t.count;
        sender = fmt::format("{} ({})", pid, t.comm);
      }
    auto d = [&](double percent) {
      return c.delay.empty() ? std::string("-") : format_duration(c.delay.percentile(percent));
    };
    auto column = [&](uint64_t count) {
      return totals ? std::to_string(count) : rate_text(static_cast<double>(count) / seconds);
    };
    out << fmt::format("{:>7} {:<15.15} {:<11} {:>9} {:>9} {:>9} {:>8} {:>8} {:>8} {:>8}  {}\n",
                       r.key.tgid == kRetired ? std::string("-") : std::to_string(r.key.tgid),
                       r.stream->comm, signal_name(r.key.sig), column(c.generated),
                       column(c.taken()), column(c.coalesced), d(50), d(99),
                       c.delay.empty() ? std::string("-") : format_duration(c.delay.max()),
                       pending_text, sender);
    if (r.generated_per_s > options.threshold)
      flags.push_back(fmt::format("!! {} ({}) receives {:.0f} {}/s, above {:.0f}/s: {}", r.key.tgid,
                                  r.stream->comm, r.generated_per_s, signal_name(r.key.sig),
                                  options.threshold, kGuideAdvice));
  }
  if (rows.empty()) out << "  (no signals)\n";
  if (static_cast<int>(rows.size()) > options.top)
    out << fmt::format("  ... and {} more\n", rows.size() - options.top);
  for (const auto& f : flags) out << f << "\n";
  out.flush();
}

}  // namespace doorbell::lab::trace
