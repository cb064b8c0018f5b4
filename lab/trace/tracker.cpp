#include "lab/trace/tracker.h"

#include <signal.h>
#include <string.h>

#include <algorithm>
#include <cstdlib>
#include <fstream>
#include <system_error>

#include <fmt/format.h>

#include "lab/common/format.h"
#include "sys/proc.h"

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
    if (s.queued_at.size() >= kMaxQueued) s.queued_at.pop_front();
    s.queued_at.push_back(e.ts_ns);
  }
}

void Tracker::on_deliver(const DeliverEvent& e) {
  const pid_t tgid = tgid_of(e.tid);
  if (only_ > 0 && tgid != only_) return;
  Stream& s = streams_[{tgid, e.sig}];
  if (s.comm.empty()) s.comm = comm_of(e.tid);
  bool paired = false;
  uint64_t delay = 0;
  if (!s.queued_at.empty() && s.queued_at.front() <= e.ts_ns) {
    delay = e.ts_ns - s.queued_at.front();
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

void Tracker::end_interval() {
  for (auto& [key, s] : streams_) s.interval.reset();
  tgid_cache_.clear();
  comm_cache_.clear();
}

pid_t Tracker::tgid_of(pid_t tid) {
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
  const bool flagged = c.generated / seconds > threshold;
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
                       r.key.tgid, r.stream->comm, signal_name(r.key.sig), column(c.generated),
                       column(c.delivered), column(c.coalesced), d(50), d(99),
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
