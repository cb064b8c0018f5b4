// What `doorbell trace` prints beside the per-second table (tracker.h's
// print_table): why signals waited (the delay by cause), the delay
// histograms, the slow deliveries one by one, and the JSON fields of each.
// The causes, the sigwait/signalfd takes and the slow deliveries come from
// the BPF backend only; with tracefs the text says so and the JSON fields are
// null (docs/trace.md).
#pragma once

#include <cstdint>
#include <ostream>
#include <string>

#include <nlohmann/json.hpp>

#include "lab/trace/backend.h"
#include "lab/trace/tracker.h"

namespace doorbell::lab::trace {

// The delay histogram as powers of two: (lower_ns, count) for every
// non-empty octave [lower, 2 * lower); the octave below 1 ns has lower 0.
std::vector<std::pair<uint64_t, uint64_t>> log2_histogram(const Counts& c);

// The fields the row of --json gains beyond row_json(): taken, taken by
// sigwait and signalfd, discarded, the log2 histogram, the causes (null
// when the backend does not see them).
void add_backend_fields(nlohmann::json& row, const Counts& c, bool sees_causes);

// "Why they waited": one line per row shown (the busiest `top`), the share
// of delay by cause and the longest wait for a CPU with who ran instead.
void print_causes(std::ostream& out, const Tracker& tracker, int top, double seconds, bool totals,
                  bool sees_causes);

// The log2 histogram of the busiest `rows` streams with a delay.
void print_histograms(std::ostream& out, const Tracker& tracker, int rows, double seconds,
                      bool totals);

// One slow delivery: a text line, and its --json object ("type": "slow";
// t_s counted from `start_ns`).
std::string slow_text(const SlowDelivery& d);
nlohmann::json slow_json(const SlowDelivery& d, uint64_t start_ns);

}  // namespace doorbell::lab::trace
