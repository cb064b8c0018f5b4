// The signal flood (lab/scenarios/signalchannel.cpp, rows
// signalchannel/throughput:method=*) accounts for every send: in every row
// and every repetition,
//   sent = delivered + coalesced + coalesced_kernel + pending_at_stop
//          + dropped_by_method + unaccounted,
// and with the kernel's tracepoints (root) nothing is left unaccounted: a
// standard signal sent while one is pending (signalfd keeps it pending until
// read) is merged by the kernel, and the signal_generate tracepoint counts
// each merge. Regression: the flood once reported unaccounted=576 of 16,380
// sends for signalfd, the kernel's merges.
//
// Runs the scenarios in-process through the harness (run_scenarios), in
// quick mode; this TEST is its own process (ctest), so the lab's signal
// dispositions and masks do not leak.
#include <gtest/gtest.h>
#include <unistd.h>

#include <string>

#include "lab/harness/runner.h"
#include "lab/scenarios/signalchannel_testing.h"

namespace doorbell::lab {
namespace {

double counter_at(const ScenarioResult& r, const std::string& name, std::size_t rep) {
  const auto it = r.counters.find(name);
  return it == r.counters.end() || rep >= it->second.size() ? 0.0 : it->second[rep];
}

// The flood rows `filter` selects, in quick mode, two repetitions each.
RunOptions flood_options(const char* filter) {
  RunOptions options;
  options.filters = {filter};
  options.quick = true;
  options.repetitions = 2;
  options.progress = false;
  return options;
}

TEST(FloodAccounting, EveryFloodRowAccountsForEverySend) {
  const RunOptions options = flood_options("signalchannel/throughput:*");
  const auto selected = select_scenarios(options);
  ASSERT_EQ(selected.size(), 5u);  // signalfd, handler, asio, libuv, raw_handler
  const RunResults results = run_scenarios(options, selected);
  const bool traced = ::geteuid() == 0;
  for (const ScenarioResult& r : results.scenarios) {
    SCOPED_TRACE(r.scenario->name);
    ASSERT_EQ(r.status, ScenarioResult::Status::ok) << r.reason;
    ASSERT_EQ(r.counters.at("sent").size(), 2u);
    for (std::size_t rep = 0; rep < 2; ++rep) {
      SCOPED_TRACE("repetition " + std::to_string(rep));
      const double sent = counter_at(r, "sent", rep);
      EXPECT_GT(sent, 0);
      const double parts = counter_at(r, "delivered", rep) + counter_at(r, "coalesced", rep) +
                           counter_at(r, "coalesced_kernel", rep) +
                           counter_at(r, "pending_at_stop", rep) +
                           counter_at(r, "dropped_by_method", rep);
      EXPECT_EQ(parts + counter_at(r, "unaccounted", rep), sent);
      if (traced) {
        // As root the tracepoint counts the kernel's merges: nothing left.
        EXPECT_TRUE(r.counters.count("coalesced_kernel") != 0) << "no kernel merge count";
        EXPECT_EQ(counter_at(r, "unaccounted", rep), 0.0)
            << "sent " << sent << ", delivered " << counter_at(r, "delivered", rep)
            << ", coalesced " << counter_at(r, "coalesced", rep) << ", coalesced_kernel "
            << counter_at(r, "coalesced_kernel", rep);
        EXPECT_EQ(parts, sent);
      }
    }
    if (!traced) {
      bool explained = false;
      for (const auto& note : r.notes)
        explained |= note.find("no tracepoints") != std::string::npos;
      EXPECT_TRUE(explained) << "without tracing the remainder must be explained in a note";
    }
  }
}

// Sends still in libuv's self-pipe when the receiver stops: its handler
// wrote them (uv_signal_t::caught_signals counts them), the stopping loop
// never read them. They are pending at stop, like a signal the kernel still
// holds. Seen in a full tsan run: sent 368, delivered 183, unaccounted 185
// (the flood's receiver had not run for the 2 ms quiet window, the handlers
// deferred by ThreadSanitizer ran after its last read). The injection point
// makes it certain: the receiver sends itself 40 signals in its stop
// callback, before it stops its uv_signal_t.
TEST(FloodAccounting, SendsStillInLibuvsPipeAtStopArePendingAtStop) {
  signalchannel_testing::libuv_sends_in_stop.store(40);
  const RunOptions options = flood_options("signalchannel/throughput:method=libuv");
  const auto selected = select_scenarios(options);
  ASSERT_EQ(selected.size(), 1u);
  const RunResults results = run_scenarios(options, selected);
  signalchannel_testing::libuv_sends_in_stop.store(0);
  const ScenarioResult& r = results.scenarios.front();
  ASSERT_EQ(r.status, ScenarioResult::Status::ok) << r.reason;
  for (std::size_t rep = 0; rep < 2; ++rep) {
    SCOPED_TRACE("repetition " + std::to_string(rep));
    EXPECT_GE(counter_at(r, "pending_at_stop", rep), 40.0);
    EXPECT_EQ(counter_at(r, "unaccounted", rep), 0.0)
        << "sent " << counter_at(r, "sent", rep) << ", delivered "
        << counter_at(r, "delivered", rep) << ", pending_at_stop "
        << counter_at(r, "pending_at_stop", rep);
  }
}

}  // namespace
}  // namespace doorbell::lab
