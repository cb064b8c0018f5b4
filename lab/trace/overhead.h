// What `doorbell trace` costs the traced: a child sends itself `count`
// SIGUSR1 (kill + empty handler, each delivered before kill returns), timed
// untraced, traced by the tracefs backend and traced by the BPF backend,
// both tracing the whole system (tracefs read live every 10 ms, bpf's maps at
// the end), with only the floor's programs attached (an empty program that
// reads the clock on signal_generate and one on signal_deliver:
// lab/trace/bpf/floor.bpf.c), with those and an empty program on each
// system-call exit the bpf backend watches (the floor with the exits: what
// seeing sigwait and signalfd takes costs every system call), and beside
// Debian's bpftrace pairing the two (lab/trace/bpftrace_pairing.h); the six are
// interleaved round by round (the order rotates, so a drift in the machine's
// load does not favour one), `rounds` rounds (`doorbell trace
// --measure-overhead`). Each traced run also checks its backend's counts of
// the child's signals against what the child sent.
//
// What tracing costs a context switch, which the signal storm does not
// show, is timed in the same rounds: two processes on one CPU pass a byte
// back and forth through two pipes (each pass a wake-up and a switch),
// untraced and beside each backend, right after that mode's signal storm
// (a backend opened once for both). The bpf backend's programs on
// sched_switch, sched_waking and sched_wakeup (the causes) run at every
// switch and wake-up of the system; tracefs enables no scheduler event.
//
// After the rounds, the programs' own time, with the kernel's run-time
// statistics of BPF programs on (BPF_ENABLE_STATS, off again after; they add
// two clock reads to each run, so these storms are not among the timed
// ones): the bpf backend's programs loaded for as many rounds of a signal
// storm and a context-switch storm, then the floor's for as many signal
// storms; each program's least time a run of the rounds. What a program
// costs beyond the floor's on the same tracepoint is its own work; what bpf
// adds to a signal beyond that is spent outside its programs
// (docs/trace.md, "What tracing costs").
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "lab/trace/bpf/loading.h"

namespace doorbell::lab::trace {

struct OverheadMode {
  std::string name;         // "untraced", "tracefs", "bpf", "floor", "floor+exits", "bpftrace"
  std::string unavailable;  // why it did not run; empty when it ran
  std::vector<double> ns_per_signal;  // one per round, in round order
  uint64_t generated_seen = 0;        // the storm child's signals the backend saw, all rounds
  uint64_t delivered_seen = 0;
  long long lost_events = 0;
  uint64_t paired_seen = 0;  // bpftrace: the delays in its histogram (whole system), all rounds

  bool ran() const noexcept { return !ns_per_signal.empty(); }
  double min() const;
  double median() const;
  double max() const;
};

struct OverheadResult {
  int signals_per_run = 0;
  int rounds = 0;  // completed (a stop request ends early)
  OverheadMode untraced{"untraced"}, tracefs{"tracefs"}, bpf{"bpf"}, floor{"floor"},
      floor_exits{"floor+exits"}, bpftrace{"bpftrace"};
  // ns_per_signal holds ns per switch here.
  struct Switches {
    int switches_per_run = 0;
    int rounds = 0;
    OverheadMode untraced{"untraced"}, tracefs{"tracefs"}, bpf{"bpf"};
  } switches;
  // The programs that ran during their storms, in load order, each from the
  // storm where it cost the least a run; none, with the reason, when the
  // statistics could not be had (the bpf mode did not run, no permission,
  // an old kernel, a stop request).
  struct ProgramCosts {
    std::string unavailable;
    int storms = 0;  // of each set
    std::vector<bpf::ProgramCost> bpf, floor;
  } programs;
};

// Throws std::runtime_error when a storm child fails. A backend that cannot
// run is skipped with its reason (OverheadMode::unavailable; bpftrace: not
// installed, not in PATH). `stop` is
// asked between runs; a stop ends the measurement with the rounds done.
OverheadResult measure_overhead(int count, int rounds, const std::function<bool()>& stop);

}  // namespace doorbell::lab::trace
