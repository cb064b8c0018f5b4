// How `doorbell inspect` writes its report: a terminal table with advice
// lines, or one JSON object (schema in docs/inspect.md).
#pragma once

#include <cstdint>
#include <optional>
#include <string>

#include <nlohmann/json.hpp>

#include "lab/inspect/analysis.h"
#include "lab/inspect/pending_watch.h"

namespace doorbell::lab::inspect {

// The sampled pending figures of --watch, for the renderers.
struct WatchResult {
  std::uint64_t period_ns = 0;
  std::uint64_t duration_ns = 0;
  PendingWatch watch;
  // Empty when it ran its whole duration; else why it ended sooner ("the
  // process exited after 1.5 s"): the samples taken until then stand.
  std::string ended_early;
};

std::string render_text(const InspectReport& report, const WatchResult* watch);
nlohmann::ordered_json render_json(const InspectReport& report, const WatchResult* watch);

}  // namespace doorbell::lab::inspect
