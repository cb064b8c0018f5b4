#include "lab/harness/histogram.h"

#include <algorithm>
#include <bit>
#include <cmath>
#include <stdexcept>
#include <string>

namespace doorbell::lab {

namespace {
constexpr int kSubBucketBits = 8;                     // 256 exact values first
constexpr int kSubBucketCount = 1 << kSubBucketBits;  // 256
constexpr int kSubBucketHalf = kSubBucketCount / 2;   // 128 per power of two
constexpr int kTopBit = 49;                           // values < 2^50 ps
constexpr int kBucketCount = kSubBucketCount + (kTopBit - kSubBucketBits + 1) * kSubBucketHalf;
constexpr uint64_t kMaxTrackable = (uint64_t{1} << (kTopBit + 1)) - 1;
}  // namespace

namespace {
constexpr int kBlock = 64;  // counters are added in blocks of this many buckets
}  // namespace

void Histogram::cover(int lo, int hi) {
  const int end = first_ + static_cast<int>(counts_.size());
  if (!counts_.empty() && lo >= first_ && hi <= end) return;
  int new_first = lo / kBlock * kBlock;
  int new_end = std::min(kBucketCount, (hi + kBlock - 1) / kBlock * kBlock);
  if (!counts_.empty()) {
    new_first = std::min(new_first, first_);
    new_end = std::max(new_end, end);
  }
  std::vector<uint64_t> grown(static_cast<std::size_t>(new_end - new_first), 0);
  std::copy(counts_.begin(), counts_.end(), grown.begin() + (first_ - new_first));
  counts_.swap(grown);
  first_ = new_first;
}

int Histogram::index_of(uint64_t ps) noexcept {
  if (ps > kMaxTrackable) ps = kMaxTrackable;
  if (ps < kSubBucketCount) return static_cast<int>(ps);
  const int msb = 63 - std::countl_zero(ps);      // >= 8
  const int shift = msb - (kSubBucketBits - 1);   // >= 1
  const int sub = static_cast<int>(ps >> shift);  // in [128, 256)
  return kSubBucketCount + (shift - 1) * kSubBucketHalf + (sub - kSubBucketHalf);
}

uint64_t Histogram::lower_of(int index) noexcept {
  if (index < kSubBucketCount) return static_cast<uint64_t>(index);
  const int shift = (index - kSubBucketCount) / kSubBucketHalf + 1;
  const int sub = (index - kSubBucketCount) % kSubBucketHalf + kSubBucketHalf;
  return static_cast<uint64_t>(sub) << shift;
}

uint64_t Histogram::width_of(int index) noexcept {
  if (index < kSubBucketCount) return 1;
  const int shift = (index - kSubBucketCount) / kSubBucketHalf + 1;
  return uint64_t{1} << shift;
}

void Histogram::record_n(double ns, uint64_t n) noexcept {
  if (n == 0) return;
  if (!(ns >= 0.0)) ns = 0.0;  // also catches NaN
  const double ps_double = ns * 1000.0;
  const uint64_t ps = ps_double >= static_cast<double>(kMaxTrackable)
                          ? kMaxTrackable
                          : static_cast<uint64_t>(std::llround(ps_double));
  const int index = index_of(ps);
  if (index < first_ || index >= first_ + static_cast<int>(counts_.size())) {
    // noexcept: like any allocation failure here, a full heap ends the
    // program (the dense histogram allocated all of it in its constructor).
    cover(index, index + 1);
  }
  counts_[static_cast<std::size_t>(index - first_)] += n;
  if (count_ == 0) {
    min_ = max_ = ns;
  } else {
    min_ = std::min(min_, ns);
    max_ = std::max(max_, ns);
  }
  count_ += n;
  sum_ += ns * static_cast<double>(n);
  sum_squares_ += ns * ns * static_cast<double>(n);
}

void Histogram::merge(const Histogram& other) noexcept {
  if (other.count_ == 0) return;
  cover(other.first_, other.first_ + static_cast<int>(other.counts_.size()));
  for (std::size_t i = 0; i < other.counts_.size(); ++i)
    counts_[static_cast<std::size_t>(other.first_ - first_) + i] += other.counts_[i];
  if (count_ == 0) {
    min_ = other.min_;
    max_ = other.max_;
  } else {
    min_ = std::min(min_, other.min_);
    max_ = std::max(max_, other.max_);
  }
  count_ += other.count_;
  sum_ += other.sum_;
  sum_squares_ += other.sum_squares_;
}

Histogram::State Histogram::state() const {
  State s;
  for (std::size_t i = 0; i < counts_.size(); ++i)
    if (counts_[i] != 0)
      s.buckets.emplace_back(static_cast<uint32_t>(first_) + static_cast<uint32_t>(i), counts_[i]);
  s.count = count_;
  s.min = min_;
  s.max = max_;
  s.sum = sum_;
  s.sum_squares = sum_squares_;
  return s;
}

Histogram Histogram::from_state(const State& s) {
  Histogram h;
  uint64_t total = 0;
  for (const auto& [index, n] : s.buckets) {
    if (index >= static_cast<uint32_t>(kBucketCount))
      throw std::invalid_argument("histogram bucket index " + std::to_string(index) +
                                  " out of range");
    const int i = static_cast<int>(index);
    h.cover(i, i + 1);
    h.counts_[static_cast<std::size_t>(i - h.first_)] += n;
    total += n;
  }
  if (total != s.count)
    throw std::invalid_argument("histogram buckets hold " + std::to_string(total) +
                                " values, its count says " + std::to_string(s.count));
  h.count_ = s.count;
  h.min_ = s.min;
  h.max_ = s.max;
  h.sum_ = s.sum;
  h.sum_squares_ = s.sum_squares;
  return h;
}

void Histogram::reset() noexcept {
  std::vector<uint64_t>().swap(counts_);
  first_ = 0;
  count_ = 0;
  min_ = max_ = sum_ = sum_squares_ = 0.0;
}

double Histogram::stddev() const noexcept {
  if (count_ < 2) return 0.0;
  const double n = static_cast<double>(count_);
  const double variance = (sum_squares_ - sum_ * sum_ / n) / (n - 1.0);
  return variance > 0.0 ? std::sqrt(variance) : 0.0;
}

double Histogram::percentile(double p) const noexcept {
  if (count_ == 0) return 0.0;
  if (p <= 0.0) return min_;
  if (p >= 100.0) return max_;
  uint64_t rank = static_cast<uint64_t>(std::ceil(p / 100.0 * static_cast<double>(count_)));
  rank = std::clamp<uint64_t>(rank, 1, count_);
  uint64_t seen = 0;
  for (std::size_t k = 0; k < counts_.size(); ++k) {
    seen += counts_[k];
    if (seen >= rank) {
      const int i = first_ + static_cast<int>(k);
      const double mid_ps =
          static_cast<double>(lower_of(i)) + (static_cast<double>(width_of(i)) - 1.0) / 2.0;
      return std::clamp(mid_ps / 1000.0, min_, max_);
    }
  }
  return max_;
}

void Histogram::for_each_bucket(const std::function<void(double, double, uint64_t)>& visit) const {
  for (std::size_t k = 0; k < counts_.size(); ++k) {
    if (counts_[k] == 0) continue;
    const int i = first_ + static_cast<int>(k);
    const uint64_t lower = lower_of(i);
    visit(static_cast<double>(lower) / 1000.0, static_cast<double>(lower + width_of(i)) / 1000.0,
          counts_[k]);
  }
}

Summary summarize(const Histogram& h) noexcept {
  Summary s;
  s.count = h.count();
  s.min = h.min();
  s.max = h.max();
  s.mean = h.mean();
  s.stddev = h.stddev();
  s.p50 = h.percentile(50);
  s.p90 = h.percentile(90);
  s.p99 = h.percentile(99);
  s.p999 = h.percentile(99.9);
  return s;
}

double statistic(const Summary& s, const std::string& name) {
  if (name == "p50") return s.p50;
  if (name == "p90") return s.p90;
  if (name == "p99") return s.p99;
  if (name == "p99.9") return s.p999;
  if (name == "min") return s.min;
  if (name == "max") return s.max;
  if (name == "mean") return s.mean;
  if (name == "stddev") return s.stddev;
  if (name == "count") return static_cast<double>(s.count);
  throw std::invalid_argument("unknown statistic '" + name + "'");
}

namespace {
// The percentiles the lab shows, by name and in percent.
struct Shown {
  const char* name;
  double percent;
};
constexpr Shown kShownPercentiles[] = {{"p50", 50}, {"p90", 90}, {"p99", 99}, {"p99.9", 99.9}};
}  // namespace

uint64_t samples_needed(double percentile) noexcept {
  // p in millionths: exact for every p the lab names (99.9 -> 999000).
  if (!(percentile > 0.0) || percentile >= 100.0) return 1;
  const auto parts = static_cast<uint64_t>(std::llround(percentile * 1e4));
  if (parts >= 1'000'000) return 1;
  const uint64_t rest = 1'000'000 - parts;  // 1 - p, in millionths
  return (1'000'000 + rest - 1) / rest;
}

std::vector<std::string> unsupported_percentiles(double count) {
  std::vector<std::string> out;
  if (!(count > 0.0)) return out;
  for (const auto& p : kShownPercentiles)
    if (count < static_cast<double>(samples_needed(p.percent))) out.push_back(p.name);
  return out;
}

bool supported_by(std::string_view name, double count) noexcept {
  for (const auto& p : kShownPercentiles)
    if (name == p.name)
      return !(count > 0.0) || count >= static_cast<double>(samples_needed(p.percent));
  return true;
}

std::string few_samples_text(std::string_view statistic, std::string_view metric,
                             std::string_view scenario, double count) {
  uint64_t needed = 1;
  for (const auto& p : kShownPercentiles)
    if (statistic == p.name) needed = samples_needed(p.percent);
  const std::string n = std::isfinite(count) ? std::to_string(std::llround(count)) : "?";
  return std::string(statistic) + " of '" + std::string(metric) + "' of " + std::string(scenario) +
         " rests on " + n + " sample" + (n == "1" ? "" : "s") + " (it needs " +
         std::to_string(needed) + ")";
}

std::vector<std::string> figure_flags(std::string_view scenario, std::string_view metric,
                                      std::string_view statistic, double count,
                                      const std::vector<std::string>& warnings) {
  std::vector<std::string> out;
  if (!warnings.empty()) out.push_back(std::string(scenario) + " is flagged: " + warnings.front());
  if (count > 0.0 && !supported_by(statistic, count))
    out.push_back(few_samples_text(statistic, metric, scenario, count));
  return out;
}

}  // namespace doorbell::lab
