// How `doorbell inspect` writes its report: a terminal table with advice
// lines, or one JSON object (schema in docs/inspect.md).
#pragma once

#include <array>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "lab/inspect/analysis.h"
#include "lab/inspect/pending_watch.h"

namespace doorbell::lab::inspect {

// What the BPF backend of `doorbell trace` measured of one signal during
// --watch: every generate and take the kernel saw, the real time from one to
// the other, and why it was spent (docs/trace.md, "Causes").
struct MeasuredSignal {
  int signal = 0;
  std::uint64_t generated = 0, merged = 0, taken = 0;
  std::uint64_t by_handler = 0, by_sigwait = 0, by_signalfd = 0;
  std::uint64_t unpaired = 0;                 // taken, generated before the watch began
  double p50_ns = 0, p99_ns = 0, max_ns = 0;  // generate -> take (quarter-octave buckets)
  std::array<std::uint64_t, 4> cause_ns{};    // on CPU, runnable, asleep, blocked
  std::uint64_t slow = 0;                     // takes that waited at least slow_ns
  std::vector<std::string> slowest;           // the slowest few, one line each
};

struct MeasuredWatch {
  bool ran = false;
  std::string how;  // one line: what measured, or why nothing did
  std::uint64_t slow_ns = 1'000'000;
  long long lost_events = 0;
  // How long it measured: from before the busy-thread window (a signal sent
  // while inspect reads the process is counted) to the watch's end; 0: the
  // watch's own duration.
  std::uint64_t duration_ns = 0;
  std::vector<MeasuredSignal> signals;  // in signal order
};

// The verdict's check against what was measured, one phrase: for `at risk`,
// "confirmed: ..." when takes waited slow_ns or more mostly runnable, "not
// seen in this watch: ..." otherwise; for the others what was seen.
std::string measured_check(Verdict verdict, const MeasuredSignal& m, std::uint64_t slow_ns);

// The sampled pending figures of --watch, for the renderers, and what BPF
// measured meanwhile (measured.ran false: not measured, measured.how says why).
struct WatchResult {
  std::uint64_t period_ns = 0;
  std::uint64_t duration_ns = 0;
  PendingWatch watch;
  MeasuredWatch measured;
  // Empty when it ran its whole duration; else why it ended sooner ("the
  // process exited after 1.5 s", "interrupted by SIGINT after 2.0 s"): the
  // samples taken until then stand.
  std::string ended_early;
};

std::string render_text(const InspectReport& report, const WatchResult* watch);
nlohmann::ordered_json render_json(const InspectReport& report, const WatchResult* watch);

}  // namespace doorbell::lab::inspect
