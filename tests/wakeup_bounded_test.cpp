// The wake-up rows' waits are bounded: a notification lost on purpose (a
// channel that drops its sends from the Nth on, deterministically) fails the
// row with what it waited for, by the scenario's own deadline, and the
// receiver asleep in its untimed wait is woken (Channel::rescue) and joined:
// no thread is left behind. Before the bounded waits, both rows hung here
// (the ack spin and the untimed recv had no end).
#include <linux/futex.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <gtest/gtest.h>

#include <atomic>
#include <climits>
#include <memory>
#include <set>
#include <string>

#include "lab/harness/runner.h"
#include "lab/scenarios/wakeup_channels.h"
#include "tests/support/threads.h"

namespace doorbell::lab {
namespace {

using wakeup::Channel;
using wakeup::SharedArena;

long futex(std::atomic<uint32_t>* word, int op, uint32_t value) {
  return ::syscall(SYS_futex, reinterpret_cast<uint32_t*>(word), op, value, nullptr, nullptr, 0);
}

// The futex method's flag, whose send() does nothing from the `lose_from`th
// send on: the receiver never learns of those notifications. rescue() still
// wakes it, as every channel's must.
class LossyChannel final : public Channel {
 public:
  LossyChannel(std::atomic<uint32_t>* word, uint64_t lose_from)
      : word_(word), lose_from_(lose_from) {}
  void send() override {
    if (++sends_ >= lose_from_) return;
    word_->store(1, std::memory_order_release);
    futex(word_, FUTEX_WAKE_PRIVATE, 1);
  }
  void recv() override {
    while (word_->exchange(0, std::memory_order_acquire) == 0) futex(word_, FUTEX_WAIT_PRIVATE, 0);
  }
  void rescue() override {
    word_->store(1, std::memory_order_seq_cst);
    futex(word_, FUTEX_WAKE_PRIVATE, INT_MAX);
  }

 private:
  std::atomic<uint32_t>* word_;
  uint64_t lose_from_;
  uint64_t sends_ = 0;
};

wakeup::ChannelMaker lossy(uint64_t lose_from) {
  return [lose_from](int, SharedArena& arena) -> std::unique_ptr<Channel> {
    auto* word = new (arena.take(sizeof(std::atomic<uint32_t>))) std::atomic<uint32_t>(0);
    return std::make_unique<LossyChannel>(word, lose_from);
  };
}

// Test-only rows, never in a suite.
const Registrar kLossyRows{std::vector<Scenario>{
    {.name = "wakeuptest/throughput_lossy",
     .group = "wakeuptest",
     .budget_s = 0.05,
     .samples = 2000,
     .in_default_suite = false,
     // From the 300th send on nothing reaches the receiver: round 2 (or 3, when
     // the receiver saw round 2's flag after taking an earlier send) is never
     // acknowledged.
     .run = [](Context& ctx) { wakeup::run_throughput_threads(ctx, "futex", lossy(300)); }},
    {.name = "wakeuptest/rtt_lossy",
     .group = "wakeuptest",
     .budget_s = 0.05,
     .samples = 20000,
     .in_default_suite = false,
     // The 5th send of each direction is lost: a round trip never answered.
     // A row makes at least 9 round trips (one of warm-up, 8 measured) before
     // its stop message, whatever the load: with the 40th lost, a loaded run
     // that made only 39 round trips in its budget lost the stop message
     // instead, and the row failed waiting for the peer to end (seen in a
     // full-suite run at load 8), not on a round trip.
     .run = [](Context& ctx) { wakeup::run_rtt_threads(ctx, "futex", lossy(5)); }},
}};

// The threads of this process, with a sanitizer's own (TSan's) started
// first, so that a comparison before and after a run sees the run's only.
std::set<pid_t> threads_of_this_process() {
  static const bool runtime_started = [] {
    test::start_runtime_threads();
    return true;
  }();
  (void)runtime_started;
  return test::thread_ids();
}

ScenarioResult run_row(const std::string& name, bool isolate) {
  RunOptions options;
  options.filters = {name};
  options.repetitions = 1;
  options.progress = false;
  options.isolate = isolate;
  options.scenario_timeout_s = 2.0;  // the rows' waits give up after 1.5 s
  RunResults results = run_scenarios(options, select_scenarios(options));
  EXPECT_EQ(results.scenarios.size(), 1u);
  return results.scenarios.empty() ? ScenarioResult{} : results.scenarios.front();
}

TEST(WakeupBounded, LostAcknowledgementFailsTheThroughputRowWithItsRound) {
  for (bool isolate : {true, false}) {
    SCOPED_TRACE(isolate ? "in a process of its own" : "in this process");
    const std::set<pid_t> threads_before = threads_of_this_process();
    const ScenarioResult r = run_row("wakeuptest/throughput_lossy", isolate);
    EXPECT_EQ(r.status, ScenarioResult::Status::failed);
    EXPECT_EQ(r.failure.kind, "error") << r.reason;  // its own wait, not the watchdog
    EXPECT_NE(r.reason.find("acknowledgement of round "), std::string::npos) << r.reason;
    EXPECT_NE(r.reason.find("went unanswered"), std::string::npos) << r.reason;
    EXPECT_NE(r.failure.phase.find("warm-up"), std::string::npos) << r.failure.phase;
    EXPECT_GE(r.wall_s, 1.5 * 0.99);  // it waited until the deadline (lower bound only)
    // The receiver, asleep after the lost send, was woken and joined.
    EXPECT_EQ(test::threads_settled_to(threads_before), threads_before);
  }
}

TEST(WakeupBounded, UnansweredRoundTripIsRescuedAndFailsTheRow) {
  for (bool isolate : {true, false}) {
    SCOPED_TRACE(isolate ? "in a process of its own" : "in this process");
    const std::set<pid_t> threads_before = threads_of_this_process();
    const ScenarioResult r = run_row("wakeuptest/rtt_lossy", isolate);
    EXPECT_EQ(r.status, ScenarioResult::Status::failed);
    EXPECT_EQ(r.failure.kind, "error") << r.reason;
    EXPECT_NE(r.reason.find("timed out waiting for the answer to round trip"), std::string::npos)
        << r.reason;
    EXPECT_NE(r.reason.find("woken by the rescuer"), std::string::npos) << r.reason;
    EXPECT_EQ(test::threads_settled_to(threads_before), threads_before);
  }
}

}  // namespace
}  // namespace doorbell::lab
