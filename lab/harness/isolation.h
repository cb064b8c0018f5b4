// Running one scenario's warm-up and repetitions: here, or in a process of
// its own under the runner's watchdog (the runner's default). Internal to
// the harness; runner.h says what a user of the runner sees.
//
// The process of its own (run_isolated):
//  - The runner forks a child for the scenario; the child runs the warm-up
//    and every repetition exactly as run_here() does, and sends each finished
//    repetition back over a pipe (CBOR frames, the histograms' exact state),
//    then how it ended, then _exits: it runs nothing else of the parent's.
//  - The parent waits for the next frame at most the repetition's hard limit
//    (Plan::limit_s). Past it, the child is killed (SIGKILL) and the row
//    fails: "stopped by the watchdog after X s in repetition i of n (what it
//    said it was doing)". A child that dies (a signal, an abort in
//    sys::fatal) fails its row the same way, and the run goes on.
//  - The runner is the subreaper of what the child started: once the child
//    has ended, any process it left (reparented to us) gets two seconds to
//    end by itself (the partition scheduler's guardian cleans up after a
//    killed scheduler and exits), then is killed and reaped. Clean-up hooks
//    (register_after_scenario_process) remove what a killed process cannot
//    (tracefs instances named after its pid).
//  - The child is killed too when the runner dies (PR_SET_PDEATHSIG).
#pragma once

#include <sys/types.h>

#include <functional>
#include <string>
#include <vector>

#include "lab/harness/runner.h"
#include "lab/harness/scenario.h"

namespace doorbell::lab::detail {

struct Plan {
  bool quick = false;
  double budget_s = 0.0;  // of one repetition (already scaled by --quick)
  std::size_t samples = 1;
  int repetitions = 1;       // after the warm-up
  double limit_s = 0.0;      // the hard limit of one repetition (the warm-up counts as one)
  bool limit_given = false;  // limit_s came from --scenario-timeout, not the budget
};

struct Outcome {
  std::vector<Repetition> reps;  // the measured repetitions, in order
  ScenarioResult::Status status = ScenarioResult::Status::ok;
  std::string reason;  // skipped or failed: why
  ScenarioResult::Failure failure;
};

// What the phase board says, as the failure report quotes it: "warm-up" or
// "repetition 3 of 5", then the scenario's own words in parentheses.
std::string describe_phase(const PhaseBoard& board);

// Runs the warm-up and the repetitions in this process. `finished` is called
// after the warm-up (with nullptr) and after each repetition (with it,
// before it is moved into the outcome).
Outcome run_here(const Scenario& scenario, const Plan& plan, PhaseBoard& board,
                 const std::function<void(const Repetition*)>& finished = {});

// The same in a forked child under the watchdog (above). `board` must be in
// memory shared with the child (MAP_SHARED), mapped before the fork.
Outcome run_isolated(const Scenario& scenario, const Plan& plan, PhaseBoard& board);

// The read end of the pipe request_stop() writes to (-1: none yet), for the
// watchdog's poll.
int stop_wake_fd() noexcept;
// In a scenario's process: SIGINT and SIGTERM as they were before
// StopOnSignals, and the wake pipe closed.
void forget_stop_signals_in_child() noexcept;

// Runs the hooks of register_after_scenario_process (runner.h).
void run_after_scenario_process_hooks(pid_t pid);
// Runs (once) the hooks of register_scenario_process_exit, in the scenario's
// process.
void run_scenario_process_exit_hooks();

// The child's end of the wire, exposed for tests: encodes a repetition and
// decodes it again (histograms exactly).
std::vector<std::uint8_t> encode_repetition(const Repetition& rep);
Repetition decode_repetition(const std::vector<std::uint8_t>& bytes);

}  // namespace doorbell::lab::detail
