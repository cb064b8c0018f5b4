// The first screen: what a run says about this machine, in a few lines.
//
// The terminal table (print_table) and the HTML report open with it. Each
// line answers one question from the run's own figures and names the
// scenarios it was computed from:
//   - what a signal costs, in atomic store+loads and in syscalls
//     (ladder/signal_kill_handler against ladder/atomic_store_load_seq_cst
//     and ladder/syscall_getpid, p50);
//   - the cheapest wake-up of a sleeping thread on another core
//     (wakeup/rtt:*,pin=other, lowest p50 round trip; busy-poll and spinning
//     methods left out, since they do not sleep);
//   - stock against remedied delivery at the largest K that ran
//     (e2e/signal rows: p99 of send_delay, the quantity that compares
//     policies; files written before it existed fall back to delay);
//   - the best partition method (partition/case_study at the largest K:
//     lowest overrun p99; else partition/stop_latency: lowest p99).
// A line whose scenarios did not run, or failed, says so instead of a figure.
//
// Input: a ResultsFile (results_reader.h), so the report, which reads files,
// and the table, which converts its RunResults once, say the same thing.
// Pure functions, no shared state.
#pragma once

#include <string>
#include <vector>

#include "lab/harness/results_reader.h"

namespace doorbell::lab {

struct SummaryLine {
  std::string topic;                   // "a signal costs"
  std::string text;                    // the answer, or why there is none
  std::vector<std::string> scenarios;  // the scenarios it was computed from
  bool measured = false;               // false: text says why there is no figure
};

std::vector<SummaryLine> summarize_run(const ResultsFile& results);

// The lines as the terminal prints them: a heading, then "  topic: text
// [scenarios]" per line.
std::string format_summary(const std::vector<SummaryLine>& lines);

}  // namespace doorbell::lab
