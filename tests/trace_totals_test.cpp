// What the BPF backend hands the tracker, without root or BPF: the delay
// buckets it shares with the kernel side (lab/trace/bpf/signals_abi.h), the
// interval measured from running totals (Tracker::set_totals), and what
// lab/trace/render.h prints and writes from them.
#include <gtest/gtest.h>
#include <signal.h>
#include <unistd.h>

#include <cmath>
#include <sstream>
#include <string>

#include "lab/trace/render.h"
#include "lab/trace/tracker.h"

namespace {

namespace trace = doorbell::lab::trace;

// The kernel side's bucket function (signals.bpf.c), restated: the C++ one
// must agree with it on every value.
unsigned kernel_bucket(uint64_t v) {
  if (v < 4) return static_cast<unsigned>(v);
  unsigned b = 0;
  uint64_t x = v;
  for (unsigned shift : {32u, 16u, 8u, 4u, 2u, 1u})
    if (x >> shift) {
      b += shift;
      x >>= shift;
    }
  if (b > 40) return trace::kDelayBuckets - 1;
  return 4 * (b - 1) + static_cast<unsigned>((v >> (b - 2)) & 3);
}

TEST(BpfTotals, DelayBucketsAreQuarterOctavesAsInTheKernel) {
  EXPECT_EQ(trace::delay_bucket(0), 0);
  EXPECT_EQ(trace::delay_bucket(3), 3);
  EXPECT_EQ(trace::delay_bucket(4), 4);
  EXPECT_EQ(trace::delay_bucket(7), 7);
  EXPECT_EQ(trace::delay_bucket(8), 8);
  EXPECT_EQ(trace::delay_bucket(12), 10);
  EXPECT_EQ(trace::delay_bucket(1000), 35);  // [896, 1024)
  EXPECT_EQ(trace::delay_bucket_lower(35), 896);
  EXPECT_EQ(trace::delay_bucket_upper(35), 1024);
  EXPECT_EQ(trace::delay_bucket(uint64_t(1) << 41), trace::kDelayBuckets - 1);
  int previous = 0;
  for (uint64_t v = 0; v < (uint64_t(1) << 42); v = v < 64 ? v + 1 : v + v / 7) {
    const int b = trace::delay_bucket(v);
    ASSERT_EQ(static_cast<unsigned>(b), kernel_bucket(v)) << v;
    ASSERT_GE(b, previous) << v;
    ASSERT_LE(trace::delay_bucket_lower(b), static_cast<double>(v)) << v;
    if (b < trace::kDelayBuckets - 1) {
      ASSERT_LT(static_cast<double>(v), trace::delay_bucket_upper(b)) << v;
    }
    previous = b;
  }
}

trace::Counts totals(uint64_t generated, uint64_t delay_ns, uint64_t delays) {
  trace::Counts c;
  c.generated = generated;
  c.queued = generated;
  c.delivered = delays;
  c.taken_sigwait = 1;
  c.delay_buckets[trace::delay_bucket(delay_ns)] = delays;
  c.causes.ns[static_cast<int>(trace::Cause::runnable)] = delays * delay_ns;
  c.causes.count[static_cast<int>(trace::Cause::runnable)] = delays;
  c.causes.longest_runnable_ns = delay_ns;
  c.causes.ran_instead_tid = 42;
  c.causes.ran_instead_comm = "hog";
  c.senders[7] = {"sender", generated};
  return c;
}

TEST(BpfTotals, SetTotalsMeasuresTheIntervalFromItsStart) {
  const pid_t self = ::getpid();
  trace::Tracker tracker;
  const trace::Key key{self, SIGUSR1};
  tracker.set_totals(key, "target", totals(10, 3000, 9));
  tracker.end_interval();
  tracker.set_totals(key, "target", totals(25, 3000, 20));
  const auto& s = tracker.streams().at(key);
  EXPECT_EQ(s.comm, "target");
  EXPECT_EQ(s.total.generated, 25u);
  EXPECT_EQ(s.interval.generated, 15u);
  EXPECT_EQ(s.interval.delivered, 11u);
  EXPECT_EQ(s.interval.taken_sigwait, 0u);
  EXPECT_EQ(s.interval.senders.at(7).count, 15u);
  EXPECT_EQ(s.interval.causes.count[static_cast<int>(trace::Cause::runnable)], 11u);
  // The histogram is rebuilt from the buckets: 3 us to within its bucket.
  EXPECT_EQ(s.total.delay.count(), 20u);
  EXPECT_EQ(s.interval.delay.count(), 11u);
  EXPECT_NEAR(s.interval.delay.percentile(50), 3000, 3000 * 0.13);
  // With the kernel's exact largest delay, the totals' max is exact, and so
  // is the interval's when it grew in the interval.
  trace::Counts later = totals(30, 3000, 25);
  later.delay_max_ns = 2900;  // in the bucket of the 3000 ns delays: [2560, 3072)
  tracker.end_interval();
  tracker.set_totals(key, "target", later);
  EXPECT_EQ(s.total.delay.max(), 2900);
  EXPECT_EQ(s.interval.delay.max(), 2900);
  EXPECT_EQ(s.interval.delay.count(), 5u);
  // Only the chosen process is kept.
  trace::Tracker only(self + 1);
  only.set_totals(key, "target", totals(1, 10, 1));
  EXPECT_TRUE(only.streams().empty());
}

// Issue 36, item 8: the largest delay is exact, also when the other delays
// of its bucket are many: signalfd takes read a max of 1,179,648 ns (the
// middle of the bucket [1,048,576, 1,310,720)) where the kernel's largest
// was 1,070,615, because the bucket's other takes were recorded at its
// middle, above the largest.
TEST(BpfTotals, MaxIsExactWhenItsBucketsMiddleIsAboveIt) {
  const pid_t self = ::getpid();
  trace::Tracker tracker;
  const trace::Key key{self, SIGUSR1};
  trace::Counts c = totals(40, 1'060'000, 40);
  c.delay_max_ns = 1'070'615;
  ASSERT_EQ(trace::delay_bucket(1'060'000), trace::delay_bucket(1'070'615));
  tracker.set_totals(key, "target", c);
  const auto& s = tracker.streams().at(key);
  EXPECT_EQ(s.total.delay.max(), 1'070'615);
  EXPECT_LE(s.total.delay.percentile(99), 1'070'615);
  EXPECT_EQ(s.interval.delay.max(), 1'070'615);
  EXPECT_EQ(s.total.delay.count(), 40u);
}

TEST(BpfTotals, JsonCarriesTakesHistogramAndCausesOrNullsForTracefs) {
  trace::Counts c = totals(10, 3000, 9);
  nlohmann::json with_causes, without;
  trace::add_backend_fields(with_causes, c, true);
  trace::add_backend_fields(without, c, false);
  EXPECT_EQ(with_causes["taken"], 10);
  EXPECT_EQ(with_causes["taken_by_sigwait"], 1);
  EXPECT_EQ(with_causes["causes"]["runnable"]["signals"], 9);
  EXPECT_DOUBLE_EQ(with_causes["causes"]["runnable"]["share"].get<double>(), 1.0);
  EXPECT_EQ(with_causes["causes"]["ran_instead"]["tid"], 42);
  ASSERT_EQ(with_causes["delay_log2_ns"].size(), 1u);
  EXPECT_EQ(with_causes["delay_log2_ns"][0][0], 2048);  // 3000 ns is in [2048, 4096)
  EXPECT_EQ(with_causes["delay_log2_ns"][0][1], 9);
  EXPECT_TRUE(without["causes"].is_null());
  EXPECT_TRUE(without["taken_by_sigwait"].is_null());
  EXPECT_EQ(without["taken"], 9);  // what tracefs sees: the deliveries
}

TEST(BpfTotals, TextPrintsCausesHistogramsAndSlowDeliveries) {
  const pid_t self = ::getpid();
  trace::Tracker tracker;
  tracker.set_totals(trace::Key{self, SIGUSR1}, "target", totals(10, 3000, 9));
  std::ostringstream out;
  trace::print_causes(out, tracker, 5, 1.0, true, true);
  trace::print_histograms(out, tracker, 5, 1.0, true);
  const std::string text = out.str();
  EXPECT_NE(text.find("Why they waited"), std::string::npos) << text;
  EXPECT_NE(text.find("100.0%"), std::string::npos) << text;
  EXPECT_NE(text.find("(42 hog)"), std::string::npos) << text;
  EXPECT_NE(
      text.find("Delay from generate to take, " + std::to_string(self) + " (target) SIGUSR1: 9"),
      std::string::npos)
      << text;
  std::ostringstream tracefs;
  trace::print_causes(tracefs, tracker, 5, 1.0, true, false);
  EXPECT_NE(tracefs.str().find("needs the BPF backend"), std::string::npos);

  trace::SlowDelivery d;
  d.generated_ns = 1'000'000;
  d.taken_ns = 4'000'000;
  d.tgid = self;
  d.taker_tid = self;
  d.sig = SIGUSR1;
  d.cause = trace::Cause::runnable;
  d.cause_ns[static_cast<int>(trace::Cause::runnable)] = 2'990'000;
  d.cause_ns[static_cast<int>(trace::Cause::on_cpu)] = 10'000;
  d.held_by_tid = 42;
  d.held_by_comm = "hog";
  const std::string line = trace::slow_text(d);
  EXPECT_NE(line.find("waited 3.00 ms"), std::string::npos) << line;
  EXPECT_NE(line.find("runnable 2.99 ms (its CPU held by 42 hog)"), std::string::npos) << line;
  const nlohmann::json j = trace::slow_json(d, 0);
  EXPECT_EQ(j["type"], "slow");
  EXPECT_EQ(j["delay_ns"], 3'000'000);
  EXPECT_EQ(j["cause"], "runnable");
  EXPECT_EQ(j["cpu_held_by"]["tid"], 42);
  EXPECT_TRUE(j["switched_in_after"].is_null());
}

}  // namespace
