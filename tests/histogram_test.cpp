#include "lab/harness/histogram.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <random>
#include <vector>

namespace doorbell::lab {
namespace {

// The same rank definition the histogram promises: the value of rank
// ceil(p/100 * n) in sorted order.
double exact_percentile(std::vector<double> sorted, double p) {
  if (p <= 0) return sorted.front();
  if (p >= 100) return sorted.back();
  auto rank = static_cast<std::size_t>(std::ceil(p / 100.0 * static_cast<double>(sorted.size())));
  rank = std::clamp<std::size_t>(rank, 1, sorted.size());
  return sorted[rank - 1];
}

void expect_within_error(double got, double want) {
  // 1% relative, or one picosecond for values near zero (the resolution).
  EXPECT_LE(std::fabs(got - want), std::max(want * 0.01, 0.001))
      << "got " << got << " want " << want;
}

TEST(Histogram, EmptyReportsZeros) {
  Histogram h;
  EXPECT_EQ(h.count(), 0u);
  EXPECT_EQ(h.percentile(50), 0.0);
  EXPECT_EQ(h.max(), 0.0);
  EXPECT_EQ(h.mean(), 0.0);
}

TEST(Histogram, PercentilesMatchSortedReferenceOnRandomData) {
  std::mt19937_64 rng(12345);
  // Log-uniform over 0.1 ns .. 100 ms: every bucket scale is exercised.
  std::uniform_real_distribution<double> exponent(-1.0, 8.0);
  for (int trial = 0; trial < 5; ++trial) {
    Histogram h;
    std::vector<double> values;
    for (int i = 0; i < 20000; ++i) {
      const double v = std::pow(10.0, exponent(rng));
      values.push_back(v);
      h.record(v);
    }
    std::sort(values.begin(), values.end());
    for (double p : {0.0, 1.0, 10.0, 50.0, 90.0, 99.0, 99.9, 99.99, 100.0})
      expect_within_error(h.percentile(p), exact_percentile(values, p));
    EXPECT_EQ(h.count(), values.size());
    EXPECT_DOUBLE_EQ(h.min(), values.front());
    EXPECT_DOUBLE_EQ(h.max(), values.back());
  }
}

TEST(Histogram, RelativeErrorBoundHoldsForEverySingleValue) {
  std::mt19937_64 rng(7);
  std::uniform_real_distribution<double> exponent(-0.5, 10.0);
  for (int i = 0; i < 5000; ++i) {
    const double v = std::pow(10.0, exponent(rng));
    Histogram h;
    h.record(v);
    h.record(v * 3.0);  // so that p50 is not clamped to min/max trivially
    const double got = h.percentile(50);
    EXPECT_LE(std::fabs(got - v) / v, Histogram::kMaxRelativeError / 2.0 + 1e-3 / v) << v;
  }
}

TEST(Histogram, MergeEqualsRecordingEverythingInOne) {
  std::mt19937_64 rng(99);
  std::exponential_distribution<double> latency(1.0 / 5000.0);
  Histogram a, b, all;
  for (int i = 0; i < 10000; ++i) {
    const double v = latency(rng);
    (i % 3 ? a : b).record(v);
    all.record(v);
  }
  Histogram merged;
  merged.merge(a);
  merged.merge(b);
  EXPECT_EQ(merged.count(), all.count());
  EXPECT_DOUBLE_EQ(merged.min(), all.min());
  EXPECT_DOUBLE_EQ(merged.max(), all.max());
  EXPECT_NEAR(merged.mean(), all.mean(), all.mean() * 1e-9);
  for (double p : {50.0, 90.0, 99.0, 99.9})
    EXPECT_DOUBLE_EQ(merged.percentile(p), all.percentile(p));
}

TEST(Histogram, HugeValuesAreCountedAndMaxStaysExact) {
  Histogram h;
  h.record(1e16);  // far past the top bucket (about 1.1e15 ns)
  h.record(5.0);
  EXPECT_EQ(h.count(), 2u);
  EXPECT_DOUBLE_EQ(h.max(), 1e16);
  EXPECT_DOUBLE_EQ(h.percentile(100), 1e16);
}

TEST(Histogram, NegativeAndNanValuesCountAsZero) {
  Histogram h;
  h.record(-4.0);
  h.record(std::nan(""));
  EXPECT_EQ(h.count(), 2u);
  EXPECT_EQ(h.percentile(50), 0.0);
}

TEST(Histogram, RecordNAndMeanAndStddev) {
  Histogram h;
  h.record_n(10.0, 3);
  h.record(20.0);
  EXPECT_EQ(h.count(), 4u);
  EXPECT_DOUBLE_EQ(h.mean(), 12.5);
  EXPECT_NEAR(h.stddev(), 5.0, 1e-9);
}

TEST(Histogram, BucketsCoverEveryCountInOrder) {
  Histogram h;
  for (int i = 1; i <= 1000; ++i) h.record(i * 1.5);
  uint64_t total = 0;
  double last_upper = -1;
  h.for_each_bucket([&](double lo, double hi, uint64_t n) {
    EXPECT_LT(lo, hi);
    EXPECT_GE(lo, last_upper);
    last_upper = hi;
    total += n;
  });
  EXPECT_EQ(total, 1000u);
}

// Memory follows the range of the values, not the table's whole range: the
// tracer keeps three histograms per stream of every process it sees, and a
// dense 5,632-counter table each made a whole-system trace grow to 238 MiB.
TEST(Histogram, MemoryFollowsTheRangeOfTheValues) {
  Histogram h;
  EXPECT_EQ(h.counters_held(), 0u) << "an empty histogram holds counters";
  for (int i = 0; i < 1000; ++i) h.record(1000.0 + i);  // 1..2 us: one power of two
  EXPECT_LE(h.counters_held(), 192u);
  h.record(0.0);
  h.record(18.0 * 60 * 1e9);  // the top of the range
  EXPECT_LE(h.counters_held(), 5632u);
  EXPECT_EQ(h.count(), 1002u);
  h.reset();
  EXPECT_EQ(h.counters_held(), 0u) << "reset() kept the counters";
  Histogram copy = h;
  EXPECT_EQ(copy.counters_held(), 0u);
}

// A generated battery: values spread over the whole range, recorded in
// random order into one histogram, and into pieces merged in random order
// (each piece grows its window downwards and upwards); every statistic and
// every bucket agree, and so does a round trip through state().
TEST(Histogram, WindowedCountersAgreeWithOneTableInAnyOrder) {
  std::mt19937_64 rng(20261205);
  for (int trial = 0; trial < 50; ++trial) {
    std::vector<double> values;
    const int n = 1 + static_cast<int>(rng() % 2000);
    std::uniform_real_distribution<double> exponent(-3.0, 12.0);  // 1 ps .. 1000 s
    for (int i = 0; i < n; ++i) values.push_back(std::pow(10.0, exponent(rng)));
    Histogram all;
    for (double v : values) all.record(v);
    std::shuffle(values.begin(), values.end(), rng);
    std::vector<Histogram> pieces(1 + rng() % 7);
    for (std::size_t i = 0; i < values.size(); ++i) pieces[rng() % pieces.size()].record(values[i]);
    std::shuffle(pieces.begin(), pieces.end(), rng);
    Histogram merged;
    for (const auto& p : pieces) merged.merge(p);
    const Histogram::State a = all.state(), b = merged.state();
    EXPECT_EQ(a.buckets, b.buckets) << "trial " << trial;
    EXPECT_EQ(a.count, b.count);
    for (double p : {0.0, 1.0, 50.0, 90.0, 99.0, 99.9, 100.0})
      EXPECT_EQ(all.percentile(p), merged.percentile(p)) << "p" << p << " trial " << trial;
    const Histogram back = Histogram::from_state(b);
    EXPECT_EQ(back.state().buckets, a.buckets);
    EXPECT_EQ(back.percentile(99), all.percentile(99));
    std::vector<uint64_t> seen;
    all.for_each_bucket([&](double, double, uint64_t c) { seen.push_back(c); });
    EXPECT_EQ(seen.size(), a.buckets.size());
  }
}

TEST(Summary, StatisticByNameAndUnknownName) {
  Histogram h;
  for (int i = 1; i <= 100; ++i) h.record(i);
  const Summary s = summarize(h);
  EXPECT_DOUBLE_EQ(statistic(s, "max"), 100.0);
  EXPECT_NEAR(statistic(s, "p50"), 50.0, 0.5);
  EXPECT_THROW(statistic(s, "p42"), std::invalid_argument);
}

// Issue 36 item 5: a percentile p needs ceil(1 / (1 - p)) samples; with
// fewer, its rank is the largest sample's (count 9: p90 = p99 = p99.9 = max).
// Integer arithmetic: 1 / (1 - 0.99) is 100.00000000000009 in doubles.
TEST(Histogram, SamplesNeededForEachPercentile) {
  EXPECT_EQ(samples_needed(50), 2u);
  EXPECT_EQ(samples_needed(90), 10u);
  EXPECT_EQ(samples_needed(99), 100u);
  EXPECT_EQ(samples_needed(99.9), 1000u);
  EXPECT_EQ(samples_needed(100), 1u);  // the max is exact
  EXPECT_EQ(samples_needed(0), 1u);    // the min too
  using V = std::vector<std::string>;
  EXPECT_EQ(unsupported_percentiles(9), (V{"p90", "p99", "p99.9"}));
  EXPECT_EQ(unsupported_percentiles(10), (V{"p99", "p99.9"}));
  EXPECT_EQ(unsupported_percentiles(100), (V{"p99.9"}));
  EXPECT_EQ(unsupported_percentiles(1000), V{});
  EXPECT_EQ(unsupported_percentiles(1), (V{"p50", "p90", "p99", "p99.9"}));
  EXPECT_EQ(unsupported_percentiles(0), V{});  // no samples: no figure at all, said elsewhere
  EXPECT_TRUE(supported_by("mean", 1));
  EXPECT_TRUE(supported_by("max", 1));
  EXPECT_FALSE(supported_by("p99", 99));
  EXPECT_TRUE(supported_by("p99", 100));
  EXPECT_TRUE(supported_by("p99", std::nan("")));  // a file that gives no count is not judged
  // Below its need, the percentile is the largest sample.
  Histogram h;
  for (int i = 1; i <= 9; ++i) h.record(i * 1000.0);
  EXPECT_EQ(h.percentile(90), h.max());
  EXPECT_LT(h.percentile(50), h.max());
}

}  // namespace
}  // namespace doorbell::lab
