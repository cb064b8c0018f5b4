#include "lab/trace/render.h"

#include <algorithm>
#include <cmath>
#include <vector>

#include <fmt/format.h>

#include "lab/common/format.h"

namespace doorbell::lab::trace {
namespace {

// The power of two a bucket belongs to: -1 for [0, 1), else k for [2^k, 2^k+1).
int octave_of(int bucket) {
  if (bucket < 4) return bucket == 0 ? -1 : bucket == 1 ? 0 : 1;
  return bucket / 4 + 1;
}

std::string percent(uint64_t part, uint64_t whole) {
  if (whole == 0) return "-";
  return fmt::format("{:.1f}%", 100.0 * static_cast<double>(part) / static_cast<double>(whole));
}

uint64_t sum_of(const std::array<uint64_t, kCauses>& ns) {
  uint64_t total = 0;
  for (uint64_t n : ns) total += n;
  return total;
}

std::string ran_instead_text(pid_t tid, const std::string& comm) {
  return tid > 0 || !comm.empty() ? fmt::format("{} {}", tid, comm) : std::string("-");
}

}  // namespace

std::vector<std::pair<uint64_t, uint64_t>> log2_histogram(const Counts& c) {
  std::vector<std::pair<uint64_t, uint64_t>> octaves;
  for (int i = 0; i < kDelayBuckets; ++i) {
    if (c.delay_buckets[i] == 0) continue;
    const int k = octave_of(i);
    const uint64_t lower = k < 0 ? 0 : uint64_t(1) << k;
    if (!octaves.empty() && octaves.back().first == lower)
      octaves.back().second += c.delay_buckets[i];
    else
      octaves.emplace_back(lower, c.delay_buckets[i]);
  }
  return octaves;
}

void add_backend_fields(nlohmann::json& row, const Counts& c, bool sees_causes) {
  nlohmann::json histogram = nlohmann::json::array();
  for (const auto& [lower, count] : log2_histogram(c)) histogram.push_back({lower, count});
  row["delay_log2_ns"] = histogram;
  if (!sees_causes) {
    row["taken"] = c.delivered;
    row["taken_by_sigwait"] = nullptr;
    row["taken_by_signalfd"] = nullptr;
    row["discarded"] = nullptr;
    row["causes"] = nullptr;
    return;
  }
  row["taken"] = c.taken();
  row["taken_by_sigwait"] = c.taken_sigwait;
  row["taken_by_signalfd"] = c.taken_signalfd;
  row["discarded"] = c.discarded;
  row["senders_other"] = c.senders_other;
  const uint64_t total = sum_of(c.causes.ns);
  nlohmann::json causes = nlohmann::json::object();
  for (int i = 0; i < kCauses; ++i) {
    const Cause cause = static_cast<Cause>(i);
    causes[cause_key(cause)] = {
        {"ns", c.causes.ns[i]},
        {"share", total ? static_cast<double>(c.causes.ns[i]) / static_cast<double>(total) : 0.0},
        {"signals", c.causes.count[i]}};
  }
  causes["longest_runnable_ns"] = c.causes.longest_runnable_ns;
  if (c.causes.longest_runnable_ns != 0)
    causes["ran_instead"] = {{"tid", c.causes.ran_instead_tid},
                             {"comm", c.causes.ran_instead_comm}};
  else
    causes["ran_instead"] = nullptr;
  causes["switch_in_unseen"] = c.causes.switch_in_unseen;
  row["causes"] = causes;
}

void print_causes(std::ostream& out, const Tracker& tracker, int top, double seconds, bool totals,
                  bool sees_causes) {
  if (!sees_causes) {
    out << "Why they waited: needs the BPF backend (tracefs sees neither the causes nor the "
           "signals taken by sigwait or a signalfd)\n";
    return;
  }
  const auto rows = rows_of(tracker, seconds, totals);
  out << "Why they waited (share of the time signals waited, by what the thread that took them "
         "was doing):\n";
  out << fmt::format("{:>7} {:<15} {:<11} {:>8} {:>8} {:>8} {:>8} {:>8} {:>8} {:>8} {:>8}  {}\n",
                     "PID", "COMM", "SIGNAL", "TAKEN", "HANDLER", "SIGWAIT", "SIGNALFD", "on CPU",
                     "runnable", "asleep", "blocked", "LONGEST WAIT FOR A CPU (ran instead)");
  int shown = 0;
  for (const auto& r : rows) {
    if (shown++ >= top) break;
    const Counts& c = totals ? r.stream->total : r.stream->interval;
    const uint64_t total = sum_of(c.causes.ns);
    const std::string longest =
        c.causes.longest_runnable_ns
            ? fmt::format("{} ({})",
                          format_duration(static_cast<double>(c.causes.longest_runnable_ns)),
                          ran_instead_text(c.causes.ran_instead_tid, c.causes.ran_instead_comm))
            : std::string("-");
    out << fmt::format(
        "{:>7} {:<15.15} {:<11} {:>8} {:>8} {:>8} {:>8} {:>8} {:>8} {:>8} {:>8}  {}\n", r.key.tgid,
        r.stream->comm, signal_name(r.key.sig), c.taken(), c.delivered, c.taken_sigwait,
        c.taken_signalfd, percent(c.causes.ns[0], total), percent(c.causes.ns[1], total),
        percent(c.causes.ns[2], total), percent(c.causes.ns[3], total), longest);
  }
  if (rows.empty()) out << "  (no signals)\n";
}

void print_histograms(std::ostream& out, const Tracker& tracker, int rows_wanted, double seconds,
                      bool totals) {
  int shown = 0;
  for (const auto& r : rows_of(tracker, seconds, totals)) {
    if (shown >= rows_wanted) break;
    const Counts& c = totals ? r.stream->total : r.stream->interval;
    const auto octaves = log2_histogram(c);
    if (octaves.empty()) continue;
    ++shown;
    uint64_t most = 0, all = 0;
    for (const auto& [lower, count] : octaves) {
      most = std::max(most, count);
      all += count;
    }
    out << fmt::format("Delay from generate to take, {} ({}) {}: {} signals\n", r.key.tgid,
                       r.stream->comm, signal_name(r.key.sig), all);
    for (const auto& [lower, count] : octaves) {
      const int bar = static_cast<int>(
          std::lround(40.0 * static_cast<double>(count) / static_cast<double>(most)));
      const std::string from =
          lower == 0 ? std::string("0") : format_duration(static_cast<double>(lower));
      const std::string to = format_duration(lower == 0 ? 1.0 : 2.0 * static_cast<double>(lower));
      out << fmt::format("  {:>9} .. {:<9} {:>10} |{}\n", from, to, count,
                         std::string(static_cast<std::size_t>(std::max(bar, count ? 1 : 0)), '#'));
    }
  }
}

std::string slow_text(const SlowDelivery& d) {
  std::string parts;
  for (int i = 0; i < kCauses; ++i) {
    if (d.cause_ns[i] == 0) continue;
    if (!parts.empty()) parts += ", ";
    parts += fmt::format("{} {}", cause_name(static_cast<Cause>(i)),
                         format_duration(static_cast<double>(d.cause_ns[i])));
    if (static_cast<Cause>(i) == Cause::runnable) {
      if (d.held_by_tid)
        parts += " (its CPU held by " + ran_instead_text(d.held_by_tid, d.held_by_comm) + ")";
      if (d.last_before_tid && d.last_before_tid != d.held_by_tid)
        parts +=
            " (switched in after " + ran_instead_text(d.last_before_tid, d.last_before_comm) + ")";
    }
  }
  return fmt::format("slow: {} {} waited {}, taken by {} in thread {} ({}): {}; sent by {}", d.tgid,
                     signal_name(d.sig), format_duration(static_cast<double>(d.delay_ns())),
                     taken_by_name(d.how), d.taker_tid, d.comm, parts.empty() ? "-" : parts,
                     d.sender_tgid);
}

nlohmann::json slow_json(const SlowDelivery& d, uint64_t start_ns) {
  nlohmann::json causes = nlohmann::json::object();
  for (int i = 0; i < kCauses; ++i) causes[cause_key(static_cast<Cause>(i))] = d.cause_ns[i];
  nlohmann::json j = {
      {"type", "slow"},
      {"t_s", d.taken_ns > start_ns ? static_cast<double>(d.taken_ns - start_ns) / 1e9 : 0.0},
      {"pid", d.tgid},
      {"tid", d.taker_tid},
      {"thread_comm", d.comm},
      {"target_tid", d.target_tid},
      {"signal", d.sig},
      {"signal_name", signal_name(d.sig)},
      {"delay_ns", d.delay_ns()},
      {"taken_by", taken_by_name(d.how)},
      {"cause", cause_key(d.cause)},
      {"causes_ns", causes},
      {"longest_runnable_ns", d.longest_runnable_ns},
      {"sender_pid", d.sender_tgid}};
  auto task = [](pid_t tid, const std::string& comm) {
    return tid ? nlohmann::json{{"tid", tid}, {"comm", comm}} : nlohmann::json(nullptr);
  };
  j["cpu_held_by"] = task(d.held_by_tid, d.held_by_comm);
  j["switched_in_after"] = task(d.last_before_tid, d.last_before_comm);
  return j;
}

}  // namespace doorbell::lab::trace
