// HTML building blocks the report's tables share (html.cpp, compare.cpp).
#pragma once

#include <string>

#include "lab/harness/results_reader.h"

namespace doorbell::report {

// Text with &, <, > and " escaped for HTML.
std::string escape_html(const std::string& text);

// A right-aligned numeric cell holding text that is already HTML.
std::string num_cell(const std::string& html);

// A scenario's status: "ok", "skipped: reason" (class skip), "failed: reason"
// (class fail), or "not in this run" for nullptr.
std::string status_cell(const lab::ScenarioRecord* scenario);

// B/A with a colour: for times, above 1.1 means B is slower (class worse),
// below 0.9 faster (class better). "–" when A is not positive or B not finite.
// flagged: built from a flagged row or a percentile its count cannot
// support; the value is marked '!' (class flag) with a title saying so.
std::string change_cell(double a, double b, bool flagged = false);

}  // namespace doorbell::report
