// Histogram: a latency histogram of the HdrHistogram kind.
//
// Values are durations in nanoseconds (double), stored with a resolution of
// one picosecond so that sub-nanosecond costs (an atomic store, timed in
// batches) keep their digits. Buckets are log-linear: 256 exact buckets for
// 0..255 ps, then 128 linear sub-buckets per power of two. A recorded value is
// reported as the midpoint of its bucket, so the relative error of any
// percentile is at most 1/256 (0.4%), well inside the 1% we promise.
// Range: 0 to 2^50 ps (about 18 minutes); larger values are counted in the
// top bucket, and max() stays exact.
//
// Memory grows with the range of values recorded, not their number: the
// counters are kept only from the lowest to the highest bucket used (in
// blocks of 64), so an empty histogram holds none and one whose values lie
// within a power of two holds about 1 KB; at most 5,632 counters (45 KB)
// for values from 0 to 18 minutes. (The tracer keeps three per stream of
// every process it sees: a dense 45 KB each made a whole-system soak grow
// to 238 MiB.) Mergeable (merge() adds counts), not thread-safe: give each
// thread its own and merge after the run.
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace doorbell::lab {

class Histogram {
 public:
  static constexpr double kMaxRelativeError = 1.0 / 128.0;

  Histogram() = default;

  void record(double ns) noexcept { record_n(ns, 1); }
  void record_n(double ns, uint64_t n) noexcept;
  void merge(const Histogram& other) noexcept;
  // Back to empty; the counters' memory is given back.
  void reset() noexcept;
  // The counters held now (for tests of the memory bound).
  std::size_t counters_held() const noexcept { return counts_.size(); }

  uint64_t count() const noexcept { return count_; }
  bool empty() const noexcept { return count_ == 0; }
  double min() const noexcept { return count_ ? min_ : 0.0; }
  double max() const noexcept { return count_ ? max_ : 0.0; }
  double mean() const noexcept { return count_ ? sum_ / static_cast<double>(count_) : 0.0; }
  double stddev() const noexcept;
  double sum() const noexcept { return sum_; }

  // The value at percentile p (0..100): the recorded value of rank
  // ceil(p/100 * count) in sorted order, to within kMaxRelativeError.
  // percentile(0) is min(), percentile(100) is max(). 0 when empty.
  double percentile(double p) const noexcept;

  // Visits every non-empty bucket in increasing order: (lower_ns, upper_ns,
  // count), the bucket holding values in [lower, upper).
  void for_each_bucket(const std::function<void(double, double, uint64_t)>& visit) const;

  // The exact state, for carrying a histogram to another process (the
  // runner's scenario processes): every non-empty bucket by index, and the
  // running sums. from_state(state()) is equal to the original in every
  // statistic; from_state throws std::invalid_argument on a bucket index out
  // of range or counts that do not add up to `count`.
  struct State {
    std::vector<std::pair<uint32_t, uint64_t>> buckets;  // (index, count), increasing index
    uint64_t count = 0;
    double min = 0.0, max = 0.0, sum = 0.0, sum_squares = 0.0;
  };
  State state() const;
  static Histogram from_state(const State& state);

 private:
  static int index_of(uint64_t ps) noexcept;
  static uint64_t lower_of(int index) noexcept;
  static uint64_t width_of(int index) noexcept;
  // Makes counts_ cover buckets [lo, hi) (and what it covered before).
  void cover(int lo, int hi);

  // counts_[i] is bucket first_ + i; empty when nothing was recorded.
  std::vector<uint64_t> counts_;
  int first_ = 0;
  uint64_t count_ = 0;
  double min_ = 0.0;
  double max_ = 0.0;
  double sum_ = 0.0;
  double sum_squares_ = 0.0;
};

// The summary every result carries.
struct Summary {
  uint64_t count = 0;
  double min = 0, max = 0, mean = 0, stddev = 0;
  double p50 = 0, p90 = 0, p99 = 0, p999 = 0;
};
Summary summarize(const Histogram& h) noexcept;

// A statistic of a summary by name: "p50", "p90", "p99", "p99.9", "min",
// "max", "mean", "stddev", "count". Throws std::invalid_argument otherwise.
double statistic(const Summary& s, const std::string& name);

// Percentiles a count can support (issue 36 item 5).
//
// With n samples, percentile p is the sample of rank ceil(p/100 * n); below
// n = ceil(1 / (1 - p/100)) that rank is n itself, so the "percentile" is the
// largest sample, not a tail (9 samples: p90 = p99 = p99.9 = max). This is
// the one rule the table, the JSON, the report, the summary and the ratios
// use: a percentile from fewer samples than it needs is marked and never
// quoted bare.

// ceil(1 / (1 - p/100)), in integers (1 / (1 - 0.99) is 100.00000000000009
// in doubles): p50 needs 2, p90 10, p99 100, p99.9 1000. 1 for p <= 0 and
// p >= 100 (the min and the max are exact).
uint64_t samples_needed(double percentile) noexcept;

// Of the percentiles the lab shows ("p50", "p90", "p99", "p99.9", in that
// order), those `count` samples cannot support. Empty for a count of 0 (no
// samples: no figure at all, which the table says in words).
std::vector<std::string> unsupported_percentiles(double count);

// Whether statistic `name` ("p99", "mean", ...) stands on `count` samples:
// false only for a percentile and a count in [1, samples_needed). No count
// (0, or NaN: a file that does not say) is not judged here: a row without
// samples has no figure at all, and says so.
bool supported_by(std::string_view name, double count) noexcept;

// "p99 of 'e2e' of e2e/signal:... rests on 9 samples (it needs 100)".
std::string few_samples_text(std::string_view statistic, std::string_view metric,
                             std::string_view scenario, double count);

// Why a figure (statistic of metric of scenario) must not be quoted bare, one
// line each; empty when it may be. The row's warnings (it is flagged: "X is
// flagged: <first warning>"), then a percentile its count cannot support.
// Failed and skipped rows have no figure, so they never get this far.
std::vector<std::string> figure_flags(std::string_view scenario, std::string_view metric,
                                      std::string_view statistic, double count,
                                      const std::vector<std::string>& warnings);

}  // namespace doorbell::lab
