#include "lab/trace/overhead.h"

#include <fcntl.h>
#include <sched.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <cerrno>
#include <memory>
#include <optional>
#include <stdexcept>

#include "lab/common/signal_scope.h"
#include "lab/common/time.h"
#include "lab/harness/clock.h"
#include "lab/trace/backend.h"
#include "lab/trace/bpf/floor_programs.h"
#include "lab/trace/bpf/signal_programs.h"
#include "lab/trace/bpftrace_pairing.h"
#include "sys/error.h"

namespace doorbell::lab::trace {
namespace {

// What a storm child does: sends itself `count` SIGUSR1 (kill + empty
// handler), or passes a byte back and forth with a partner process on its
// own CPU through two pipes, `count` context switches in all. It returns
// the nanoseconds per signal or per switch, or a negative value on failure.
enum class Storm { signals, switches };

double signal_storm(int count) {
  // The child ends with _exit: the scope's restore never runs, and need not.
  ScopedDisposition empty_handler(
      SIGUSR1, [](int) {}, 0);
  const pid_t self = ::getpid();
  const uint64_t t0 = monotonic_ns();
  for (int i = 0; i < count; ++i) ::kill(self, SIGUSR1);
  return static_cast<double>(monotonic_ns() - t0) / count;
}

double switch_storm(int count) {
  // Both on the CPU this runs on, so that each pass is a context switch.
  const int cpu = ::sched_getcpu();
  cpu_set_t one;
  CPU_ZERO(&one);
  if (cpu >= 0) CPU_SET(cpu, &one);
  if (cpu < 0 || ::sched_setaffinity(0, sizeof one, &one) != 0) return -1;
  int there[2], back[2];
  if (::pipe(there) != 0 || ::pipe(back) != 0) return -1;
  const pid_t partner = ::fork();
  if (partner < 0) return -1;
  char byte = 0;
  if (partner == 0) {
    // Ends when this child does (its pipe's end closes, or PR_SET_PDEATHSIG).
    ::prctl(PR_SET_PDEATHSIG, SIGKILL);
    ::close(there[1]);
    ::close(back[0]);
    while (::read(there[0], &byte, 1) == 1 && ::write(back[1], &byte, 1) == 1) {
    }
    ::_exit(0);
  }
  ::close(there[0]);
  ::close(back[1]);
  const int trips = std::max(count / 2, 1);
  const uint64_t t0 = monotonic_ns();
  bool ok = true;
  for (int i = 0; i < trips && ok; ++i)
    ok = ::write(there[1], &byte, 1) == 1 && ::read(back[0], &byte, 1) == 1;
  const uint64_t elapsed = monotonic_ns() - t0;
  ::close(there[1]);
  int status = 0;
  while (::waitpid(partner, &status, 0) < 0 && errno == EINTR) {
  }
  return ok ? static_cast<double>(elapsed) / (2.0 * trips) : -1;
}

// A child that runs `storm` after a word on `go`, and writes the
// nanoseconds per signal or switch to `result`.
pid_t start_storm(Storm storm, int count, int& go_fd, int& result_fd) {
  int go[2], result[2];
  if (::pipe2(go, O_CLOEXEC) != 0) sys::throw_errno("pipe");
  if (::pipe2(result, O_CLOEXEC) != 0) sys::throw_errno("pipe");
  pid_t pid = ::fork();
  if (pid < 0) sys::throw_errno("fork");
  if (pid == 0) {
    ::close(go[1]);
    ::close(result[0]);
    char c;
    if (::read(go[0], &c, 1) != 1) ::_exit(3);
    const double per_unit = storm == Storm::signals ? signal_storm(count) : switch_storm(count);
    if (per_unit < 0) ::_exit(5);
    ssize_t w = ::write(result[1], &per_unit, sizeof per_unit);
    ::_exit(w == sizeof per_unit ? 0 : 4);
  }
  ::close(go[0]);
  ::close(result[1]);
  go_fd = go[1];
  result_fd = result[0];
  return pid;
}

struct StormRun {
  double ns_per_signal = 0;
  pid_t child = 0;
};

// Runs one storm; while it runs, polls `backend` every 10 ms when given (a
// storm of a million signals a second fills tracefs's 4 MiB per CPU in about
// 50 ms; bpf reads its maps once, at the end). The storm's own time is what
// counts; the backend is opened before.
StormRun run_storm(int count, Backend* backend, Tracker* tracker, Storm storm = Storm::signals) {
  int go = -1, result = -1;
  const pid_t child = start_storm(storm, count, go, result);
  if (::write(go, "g", 1) != 1) sys::throw_errno("write");
  ::close(go);
  double per_signal = -1;
  std::size_t got = 0;
  ::fcntl(result, F_SETFL, O_NONBLOCK);
  // The storm takes well under a second here; a child stuck for a minute
  // is killed rather than waited for.
  const uint64_t deadline = monotonic_ns() + 60'000'000'000ull;
  while (got < sizeof per_signal && monotonic_ns() < deadline) {
    ssize_t n = ::read(result, reinterpret_cast<char*>(&per_signal) + got, sizeof per_signal - got);
    if (n > 0) {
      got += static_cast<std::size_t>(n);
      continue;
    }
    if (n == 0) break;  // the child died without a result
    if (errno != EAGAIN && errno != EINTR) break;
    if (backend) backend->poll(*tracker, nullptr);
    sleep_ns(10'000'000);
  }
  ::close(result);
  if (got != sizeof per_signal) ::kill(child, SIGKILL);
  int status = 0;
  while (::waitpid(child, &status, 0) < 0 && errno == EINTR) {
  }
  if (backend) backend->collect(*tracker, nullptr);
  if (got != sizeof per_signal)
    throw std::runtime_error(storm == Storm::signals ? "the signal storm child failed"
                                                     : "the context-switch storm child failed");
  return {per_signal, child};
}

// What a mode runs beside the storm: nothing, a backend, the floor's
// programs, bpftrace.
enum class Beside { nothing, backend, floor, floor_exits, bpftrace };

// The floor: the storm with only the programs that read the clock attached;
// with the exits, also the empty programs on the system-call exits.
void run_floor(OverheadMode& mode, int count, bool with_syscall_exits) {
  if (!mode.unavailable.empty()) return;
  std::optional<bpf::FloorPrograms> programs;
  try {
    programs.emplace(with_syscall_exits);
  } catch (const bpf::BpfUnavailable& e) {
    mode.unavailable = e.what();
    return;
  }
  mode.ns_per_signal.push_back(run_storm(count, nullptr, nullptr).ns_per_signal);
}

// bpftrace pairing the two ends, started afresh each round (its start, a
// few seconds of compiling, is not timed), stopped and reaped after.
void run_bpftrace(OverheadMode& mode, int count, const std::function<bool()>& stop) {
  if (!mode.unavailable.empty()) return;
  const std::string path = find_bpftrace();
  if (path.empty()) {
    mode.unavailable =
        "bpftrace is not installed (not found in PATH; Debian: apt-get install bpftrace)";
    return;
  }
  std::optional<BpftracePairing> pairing;
  try {
    pairing.emplace(path, stop);
  } catch (const BpftraceUnavailable& e) {
    mode.unavailable = e.what();
    return;
  }
  if (!pairing->ready()) return;  // a stop request; the destructor kills it
  const double ns = run_storm(count, nullptr, nullptr).ns_per_signal;
  mode.paired_seen += pairing->finish();
  mode.ns_per_signal.push_back(ns);
}

// A signal storm and then a context-switch storm, untraced (no `kind`) or
// beside a backend opened once for both; the signal storm's counts checked.
void run_mode(OverheadMode& mode, OverheadMode& switch_mode, std::optional<BackendKind> kind,
              int count, int switches) {
  if (!kind) {
    mode.ns_per_signal.push_back(run_storm(count, nullptr, nullptr).ns_per_signal);
    switch_mode.ns_per_signal.push_back(
        run_storm(switches, nullptr, nullptr, Storm::switches).ns_per_signal);
    return;
  }
  if (!mode.unavailable.empty()) return;
  std::unique_ptr<Backend> backend;
  try {
    backend = open_backend(*kind, BackendOptions{});
  } catch (const BackendUnavailable& e) {
    mode.unavailable = switch_mode.unavailable = e.what();
    return;
  }
  Tracker tracker(0);
  const StormRun run = run_storm(count, backend.get(), &tracker);
  mode.ns_per_signal.push_back(run.ns_per_signal);
  auto it = tracker.streams().find(Key{run.child, SIGUSR1});
  if (it != tracker.streams().end()) {
    mode.generated_seen += it->second.total.generated;
    mode.delivered_seen += it->second.total.delivered;
  }
  mode.lost_events += backend->lost_events();
  switch_mode.ns_per_signal.push_back(
      run_storm(switches, backend.get(), &tracker, Storm::switches).ns_per_signal);
}

// Adds the programs of `costs` that ran to `least`, keeping for each
// program the storm in which it cost the least a run (as the storms' times
// are compared min against min).
void keep_least(std::vector<bpf::ProgramCost>& least, const std::vector<bpf::ProgramCost>& costs) {
  for (const bpf::ProgramCost& c : costs) {
    if (c.runs == 0) continue;
    auto it = std::find_if(least.begin(), least.end(),
                           [&](const bpf::ProgramCost& l) { return l.program == c.program; });
    if (it == least.end())
      least.push_back(c);
    else if (c.ns_per_run() < it->ns_per_run())
      *it = c;
  }
}

// What each program cost since `before` (the same programs, in the same
// order).
std::vector<bpf::ProgramCost> since(std::vector<bpf::ProgramCost> now,
                                    const std::vector<bpf::ProgramCost>& before) {
  for (std::size_t i = 0; i < now.size() && i < before.size(); ++i) {
    now[i].runs -= before[i].runs;
    now[i].run_ns -= before[i].run_ns;
  }
  return now;
}

// The kernel's run-time statistics on: the bpf backend's programs loaded
// for `rounds` rounds of a signal storm and a context-switch storm, then
// the floor's for `rounds` signal storms; each program's least time a run
// of the rounds. Throws BpfUnavailable.
OverheadResult::ProgramCosts measure_program_costs(int count, int switches, int rounds,
                                                   const std::function<bool()>& stop) {
  OverheadResult::ProgramCosts costs;
  bpf::RunTimeStatistics statistics;
  int done = 0;
  {
    bpf::SignalPrograms programs(bpf::SignalPrograms::Options{});
    for (; done < rounds && !stop(); ++done) {
      const auto before = programs.costs();
      run_storm(count, nullptr, nullptr);
      run_storm(switches, nullptr, nullptr, Storm::switches);  // for the scheduler's programs
      keep_least(costs.bpf, since(programs.costs(), before));
    }
  }
  bpf::FloorPrograms programs(false);
  for (int round = 0; round < done && !stop(); ++round) {
    const auto before = programs.costs();
    run_storm(count, nullptr, nullptr);
    keep_least(costs.floor, since(programs.costs(), before));
    costs.storms = round + 1;
  }
  return costs;
}

std::vector<double> sorted(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v;
}

}  // namespace

double OverheadMode::min() const {
  return ran() ? sorted(ns_per_signal).front() : 0.0;
}

double OverheadMode::max() const {
  return ran() ? sorted(ns_per_signal).back() : 0.0;
}

double OverheadMode::median() const {
  if (!ran()) return 0.0;
  const auto v = sorted(ns_per_signal);
  const std::size_t n = v.size();
  return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

OverheadResult measure_overhead(int count, int rounds, const std::function<bool()>& stop) {
  OverheadResult r;
  r.signals_per_run = count;
  auto& sw = r.switches;
  sw.switches_per_run = std::max(count / 4, 250);
  struct Slot {
    OverheadMode* mode;
    Beside beside;
    std::optional<BackendKind> kind;
    OverheadMode* switches = nullptr;  // untraced and the backends: their context switches too
  };
  const std::array<Slot, 6> slots{
      Slot{&r.untraced, Beside::nothing, std::nullopt, &sw.untraced},
      Slot{&r.tracefs, Beside::backend, BackendKind::tracefs, &sw.tracefs},
      Slot{&r.bpf, Beside::backend, BackendKind::bpf, &sw.bpf},
      Slot{&r.floor, Beside::floor, std::nullopt},
      Slot{&r.floor_exits, Beside::floor_exits, std::nullopt},
      Slot{&r.bpftrace, Beside::bpftrace, std::nullopt}};
  for (int round = 0; round < rounds && !stop(); ++round) {
    for (std::size_t i = 0; i < slots.size() && !stop(); ++i) {
      const Slot& slot = slots[(i + static_cast<std::size_t>(round)) % slots.size()];
      switch (slot.beside) {
        case Beside::nothing:
        case Beside::backend:
          run_mode(*slot.mode, *slot.switches, slot.kind, count, sw.switches_per_run);
          break;
        case Beside::floor:
          run_floor(*slot.mode, count, false);
          break;
        case Beside::floor_exits:
          run_floor(*slot.mode, count, true);
          break;
        case Beside::bpftrace:
          run_bpftrace(*slot.mode, count, stop);
          break;
      }
    }
    if (!stop()) r.rounds = sw.rounds = round + 1;
  }
  if (!r.bpf.ran() || !r.floor.ran()) {
    r.programs.unavailable = "the bpf backend or the floor did not run";
  } else if (stop()) {
    r.programs.unavailable = "stopped before";
  } else {
    try {
      r.programs = measure_program_costs(count, sw.switches_per_run, r.rounds, stop);
    } catch (const bpf::BpfUnavailable& e) {
      r.programs.unavailable = e.what();
    }
  }
  return r;
}

}  // namespace doorbell::lab::trace
