// `doorbell inspect --watch`: how long signals stay pending, from samples of
// ShdPnd and every thread's SigPnd taken every `period`. Sampling sees a
// signal only while it is pending at a sample: a signal taken between two
// samples is never seen, and one seen in k consecutive samples was pending
// for at least (k - 1) periods and less than (k + 1) periods. The figures
// say so: longest_ns is the lower bound.
#pragma once

#include <sys/types.h>

#include <cstdint>
#include <map>
#include <utility>
#include <vector>

#include "lab/inspect/snapshot.h"

namespace doorbell::lab::inspect {

class PendingWatch {
 public:
  struct Entry {
    int signal = 0;
    pid_t tid = 0;                 // 0: process-directed (ShdPnd)
    std::uint64_t episodes = 0;    // runs of consecutive samples with it pending
    std::uint64_t samples = 0;     // samples that saw it pending
    std::uint64_t longest_ns = 0;  // longest run, first to last sample seen (lower bound)
    bool pending_now = false;      // pending at the last sample
  };

  // Feeds one sample taken at now_ns (monotonic, increasing).
  void observe(const PendingSnapshot& sample, std::uint64_t now_ns);

  std::uint64_t sample_count() const noexcept { return samples_; }
  // Every (signal, thread) seen pending at least once, by signal then thread.
  std::vector<Entry> entries() const;

 private:
  struct Run {
    Entry entry;
    std::uint64_t run_start_ns = 0;
  };
  std::map<std::pair<int, pid_t>, Run> runs_;
  std::uint64_t samples_ = 0;
};

}  // namespace doorbell::lab::inspect
