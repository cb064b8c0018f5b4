#include "lab/inspect/pending_watch.h"

#include <algorithm>

namespace doorbell::lab::inspect {

void PendingWatch::observe(const PendingSnapshot& sample, std::uint64_t now_ns) {
  ++samples_;
  std::vector<std::pair<int, pid_t>> seen;
  auto add = [&](std::uint64_t mask, pid_t tid) {
    for (int signo = 1; signo <= 64; ++signo)
      if (mask_has(mask, signo)) seen.emplace_back(signo, tid);
  };
  add(sample.shared, 0);
  for (const auto& [tid, mask] : sample.threads) add(mask, tid);

  for (const auto& key : seen) {
    Run& run = runs_[key];
    run.entry.signal = key.first;
    run.entry.tid = key.second;
    if (!run.entry.pending_now) {
      ++run.entry.episodes;
      run.run_start_ns = now_ns;
    }
    run.entry.pending_now = true;
    ++run.entry.samples;
    run.entry.longest_ns = std::max(run.entry.longest_ns, now_ns - run.run_start_ns);
  }
  for (auto& [key, run] : runs_)
    if (std::find(seen.begin(), seen.end(), key) == seen.end()) run.entry.pending_now = false;
}

std::vector<PendingWatch::Entry> PendingWatch::entries() const {
  std::vector<Entry> list;
  for (const auto& [key, run] : runs_) list.push_back(run.entry);
  return list;
}

}  // namespace doorbell::lab::inspect
