#include "lab/harness/isolation.h"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <exception>
#include <filesystem>
#include <fstream>
#include <set>
#include <string>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "doorbell/signal_channel.h"
#include "lab/common/format.h"
#include "lab/common/time.h"

namespace doorbell::lab::detail {

using nlohmann::json;

std::string describe_phase(const PhaseBoard& board) {
  std::string where = board.repetition < 0 ? std::string("warm-up")
                                           : fmt::format("repetition {} of {}",
                                                         board.repetition + 1, board.repetitions);
  // The board may be read after its writer was killed mid-copy: stop at the
  // array's end whatever it holds.
  const std::size_t n = ::strnlen(board.text, sizeof board.text);
  if (n > 0) where += " (" + std::string(board.text, n) + ")";
  return where;
}

namespace {

uint64_t wait_deadline(uint64_t start_ns, double limit_s) {
  return start_ns + static_cast<uint64_t>(limit_s * 0.75 * 1e9);
}

}  // namespace

Outcome run_here(const Scenario& scenario, const Plan& plan, PhaseBoard& board,
                 const std::function<void(const Repetition*)>& finished) {
  Outcome outcome;
  board.repetitions = plan.repetitions;
  try {
    AffinityGuard affinity;  // a scenario may pin this thread; undo it
    {
      board.repetition = -1;
      board.text[0] = '\0';
      Repetition warm;
      Context ctx(plan.quick, true, -1, plan.budget_s, plan.samples, scenario.pinning, warm,
                  wait_deadline(monotonic_ns(), plan.limit_s), &board);
      scenario.run(ctx);
      if (finished) finished(nullptr);
    }
    for (int i = 0; i < plan.repetitions; ++i) {
      board.repetition = i;
      board.text[0] = '\0';
      Repetition rep;
      const uint64_t rep_start = monotonic_ns();
      Context ctx(plan.quick, false, i, plan.budget_s, plan.samples, scenario.pinning, rep,
                  wait_deadline(rep_start, plan.limit_s), &board);
      scenario.run(ctx);
      rep.wall_s = static_cast<double>(monotonic_ns() - rep_start) / 1e9;
      if (finished) finished(&rep);
      outcome.reps.push_back(std::move(rep));
    }
  } catch (const SkipScenario& e) {
    outcome.status = ScenarioResult::Status::skipped;
    outcome.reason = e.what();
  } catch (const std::exception& e) {
    outcome.status = ScenarioResult::Status::failed;
    outcome.reason = e.what();
    outcome.failure.kind = "error";
    outcome.failure.phase = describe_phase(board);
  }
  return outcome;
}

// --- the wire -------------------------------------------------------------------

std::vector<std::uint8_t> encode_repetition(const Repetition& rep) {
  json metrics = json::object();
  for (const auto& [name, h] : rep.metrics) {
    const Histogram::State s = h.state();
    json buckets = json::array();
    for (const auto& [index, n] : s.buckets) buckets.push_back(json::array({index, n}));
    metrics[name] = json{{"buckets", buckets}, {"count", s.count}, {"min", s.min},
                         {"max", s.max},       {"sum", s.sum},     {"sum_squares", s.sum_squares}};
  }
  const json j{{"metrics", metrics},
               {"counters", rep.counters},
               {"raw", rep.raw},
               {"notes", rep.notes},
               {"wall_s", rep.wall_s}};
  return json::to_cbor(j);
}

Repetition decode_repetition(const std::vector<std::uint8_t>& bytes) {
  const json j = json::from_cbor(bytes);
  Repetition rep;
  for (const auto& [name, m] : j.at("metrics").items()) {
    Histogram::State s;
    for (const auto& b : m.at("buckets"))
      s.buckets.emplace_back(b.at(0).get<uint32_t>(), b.at(1).get<uint64_t>());
    s.count = m.at("count").get<uint64_t>();
    s.min = m.at("min").get<double>();
    s.max = m.at("max").get<double>();
    s.sum = m.at("sum").get<double>();
    s.sum_squares = m.at("sum_squares").get<double>();
    rep.metrics.emplace(name, Histogram::from_state(s));
  }
  rep.counters = j.at("counters").get<std::map<std::string, double>>();
  rep.raw = j.at("raw").get<std::map<std::string, std::vector<double>>>();
  rep.notes = j.at("notes").get<std::vector<std::string>>();
  rep.wall_s = j.at("wall_s").get<double>();
  return rep;
}

namespace {

// Frames: a 4-byte length (host order: both ends are this machine), a kind
// byte, then the body.
enum class Frame : std::uint8_t { warmed = 1, repetition = 2, ended = 3 };

// The child's writes: whole frames, retried on EINTR; a parent that is gone
// ends the child (it has nobody to report to).
void write_all(int fd, const void* data, std::size_t n) {
  const auto* p = static_cast<const std::uint8_t*>(data);
  while (n > 0) {
    const ssize_t w = ::write(fd, p, n);
    if (w < 0 && errno == EINTR) continue;
    if (w <= 0) ::_exit(3);
    p += w;
    n -= static_cast<std::size_t>(w);
  }
}

void send_frame(int fd, Frame kind, const std::vector<std::uint8_t>& body) {
  const std::uint32_t length = static_cast<std::uint32_t>(body.size() + 1);
  const std::uint8_t k = static_cast<std::uint8_t>(kind);
  write_all(fd, &length, sizeof length);
  write_all(fd, &k, 1);
  if (!body.empty()) write_all(fd, body.data(), body.size());
}

[[noreturn]] void child_main(const Scenario& scenario, const Plan& plan, PhaseBoard& board, int fd,
                             pid_t parent) {
  // Killed with the runner: a runner that dies (Ctrl-C, SIGKILL) leaves no
  // scenario running.
  ::prctl(PR_SET_PDEATHSIG, SIGKILL);
  if (::getppid() != parent) ::_exit(4);
  // The runner's stop handler is not this process's: a Ctrl-C does to it
  // what it did before the runner installed one.
  forget_stop_signals_in_child();
  Outcome outcome = run_here(scenario, plan, board, [&](const Repetition* rep) {
    if (rep == nullptr)
      send_frame(fd, Frame::warmed, {});
    else
      send_frame(fd, Frame::repetition, encode_repetition(*rep));
  });
  std::snprintf(board.text, sizeof board.text, "its clean-up at the end of its process");
  run_scenario_process_exit_hooks();
  const json end{{"status", static_cast<int>(outcome.status)},
                 {"reason", outcome.reason},
                 {"kind", outcome.failure.kind},
                 {"phase", outcome.failure.phase}};
  send_frame(fd, Frame::ended, json::to_cbor(end));
  ::_exit(0);
}

// The children of every thread of this process, as /proc lists them.
std::set<pid_t> children_of_self() {
  std::set<pid_t> pids;
  std::error_code ec;
  for (auto it = std::filesystem::directory_iterator("/proc/self/task", ec);
       !ec && it != std::filesystem::directory_iterator(); it.increment(ec)) {
    std::ifstream in(it->path() / "children");
    pid_t pid;
    while (in >> pid) pids.insert(pid);
  }
  return pids;
}

// What the scenario's process left behind: processes reparented to us (we
// are their subreaper). Each gets until `grace` to end by itself, then is
// killed; all are reaped. Returns how many had to be killed.
int reap_leftovers(const std::set<pid_t>& before, uint64_t grace_ns) {
  const uint64_t until = monotonic_ns() + grace_ns;
  int killed = 0;
  for (int round = 0; round < 1000; ++round) {
    std::set<pid_t> left;
    for (pid_t pid : children_of_self())
      if (!before.count(pid)) left.insert(pid);
    // Reap what has ended.
    for (auto it = left.begin(); it != left.end();) {
      int status;
      const pid_t r = ::waitpid(*it, &status, WNOHANG);
      if (r == *it || (r < 0 && errno == ECHILD))
        it = left.erase(it);
      else
        ++it;
    }
    if (left.empty()) return killed;
    if (monotonic_ns() >= until) {
      for (pid_t pid : left) {
        ::kill(pid, SIGKILL);
        int status;
        while (::waitpid(pid, &status, 0) < 0 && errno == EINTR) {
        }
        ++killed;
      }
    } else {
      sleep_ns(2'000'000);
    }
  }
  return killed;
}

std::string describe_status(int status) {
  if (WIFSIGNALED(status)) {
    const int sig = WTERMSIG(status);
    return fmt::format("died of signal {} ({}){}", sig, ::strsignal(sig),
                       WCOREDUMP(status) ? ", core dumped" : "");
  }
  if (WIFEXITED(status)) return fmt::format("exited with status {}", WEXITSTATUS(status));
  return fmt::format("ended with wait status {:#x}", status);
}

}  // namespace

Outcome run_isolated(const Scenario& scenario, const Plan& plan, PhaseBoard& board) {
  Outcome outcome;
  board = PhaseBoard{};
  board.repetitions = plan.repetitions;
  int fds[2];
  if (::pipe2(fds, O_CLOEXEC) != 0) {
    outcome.status = ScenarioResult::Status::failed;
    outcome.reason = fmt::format("cannot start its process: pipe2: {}", std::strerror(errno));
    outcome.failure.kind = "error";
    return outcome;
  }
  const std::set<pid_t> children_before = children_of_self();
  // Nothing buffered may be written twice (once by the child).
  std::fflush(nullptr);
  const pid_t parent = ::getpid();
  const pid_t child = ::fork();
  if (child < 0) {
    const int error = errno;
    ::close(fds[0]);
    ::close(fds[1]);
    outcome.status = ScenarioResult::Status::failed;
    outcome.reason = fmt::format("cannot start its process: fork: {}", std::strerror(error));
    outcome.failure.kind = "error";
    return outcome;
  }
  if (child == 0) {
    ::close(fds[0]);
    child_main(scenario, plan, board, fds[1], parent);
  }
  ::close(fds[1]);
  const int fd = fds[0];
  ::fcntl(fd, F_SETFL, ::fcntl(fd, F_GETFL) | O_NONBLOCK);

  const uint64_t limit_ns = static_cast<uint64_t>(plan.limit_s * 1e9);
  uint64_t rep_start = monotonic_ns();
  std::vector<std::uint8_t> buffer;
  bool ended = false, eof = false, timed_out = false, stopped = false;
  std::string protocol_error;
  // Takes every whole frame in the buffer.
  auto take_frames = [&] {
    for (;;) {
      if (buffer.size() < sizeof(std::uint32_t)) break;
      std::uint32_t length;
      std::memcpy(&length, buffer.data(), sizeof length);
      if (length == 0) {
        protocol_error = "an empty frame";
        break;
      }
      if (buffer.size() < sizeof length + length) break;
      const auto kind = static_cast<Frame>(buffer[sizeof length]);
      const std::vector<std::uint8_t> body(buffer.begin() + sizeof length + 1,
                                           buffer.begin() + sizeof length + length);
      buffer.erase(buffer.begin(), buffer.begin() + sizeof length + length);
      try {
        if (kind == Frame::warmed) {
          rep_start = monotonic_ns();
        } else if (kind == Frame::repetition) {
          outcome.reps.push_back(decode_repetition(body));
          rep_start = monotonic_ns();
        } else if (kind == Frame::ended) {
          const json end = json::from_cbor(body);
          outcome.status = static_cast<ScenarioResult::Status>(end.at("status").get<int>());
          outcome.reason = end.at("reason").get<std::string>();
          outcome.failure.kind = end.at("kind").get<std::string>();
          outcome.failure.phase = end.at("phase").get<std::string>();
          ended = true;
        } else {
          protocol_error = fmt::format("a frame of unknown kind {}", static_cast<int>(kind));
        }
      } catch (const std::exception& e) {
        protocol_error = std::string("a frame it could not read: ") + e.what();
      }
      if (!protocol_error.empty()) break;
    }
  };
  const int wake_fd = stop_wake_fd();
  while (!eof && !timed_out) {
    take_frames();
    if (!protocol_error.empty()) break;
    if (stop_signal() != 0 && !ended) {
      stopped = true;
      break;
    }
    const uint64_t now = monotonic_ns();
    if (now - rep_start >= limit_ns) {
      timed_out = true;
      break;
    }
    const uint64_t left_ms = (limit_ns - (now - rep_start) + 999'999) / 1'000'000;
    pollfd pfds[2] = {{fd, POLLIN, 0}, {wake_fd, POLLIN, 0}};
    const int rc =
        ::poll(pfds, wake_fd >= 0 ? 2 : 1, static_cast<int>(std::min<uint64_t>(left_ms, 1000)));
    if (rc < 0 && errno != EINTR) {
      protocol_error = fmt::format("poll: {}", std::strerror(errno));
      break;
    }
    if (rc <= 0 || pfds[0].revents == 0) continue;
    for (;;) {
      std::uint8_t chunk[65536];
      const ssize_t n = ::read(fd, chunk, sizeof chunk);
      if (n > 0) {
        buffer.insert(buffer.end(), chunk, chunk + n);
        continue;
      }
      if (n == 0) eof = true;
      if (n < 0 && errno == EINTR) continue;
      break;  // EAGAIN: all read for now
    }
  }
  if (eof && protocol_error.empty()) take_frames();
  const double elapsed_s = static_cast<double>(monotonic_ns() - rep_start) / 1e9;
  if (timed_out || stopped || !protocol_error.empty()) ::kill(child, SIGKILL);
  int status = 0;
  while (::waitpid(child, &status, 0) < 0 && errno == EINTR) {
  }
  ::close(fd);
  const std::string phase = describe_phase(board);
  const int leftovers = reap_leftovers(children_before, 2'000'000'000ull);
  if (timed_out || stopped || !protocol_error.empty() || !ended || status != 0)
    run_after_scenario_process_hooks(child);

  if (stopped) {
    outcome.status = ScenarioResult::Status::failed;
    outcome.failure = {"interrupted", phase, elapsed_s};
    outcome.reason = fmt::format(
        "interrupted by {} in {} (its process was killed; its "
        "repetitions are not kept)",
        signal_name(stop_signal()), phase);
  } else if (timed_out) {
    outcome.status = ScenarioResult::Status::failed;
    outcome.failure = {"watchdog", phase, elapsed_s};
    outcome.reason = fmt::format(
        "stopped by the watchdog after {} in {}: a repetition may take at most {} ({})",
        format_duration(elapsed_s * 1e9), phase, format_duration(plan.limit_s * 1e9),
        plan.limit_given ? std::string("--scenario-timeout")
                         : fmt::format("10 x its budget of {} + 10 s; --scenario-timeout sets it",
                                       format_duration(plan.budget_s * 1e9)));
  } else if (!protocol_error.empty()) {
    outcome.status = ScenarioResult::Status::failed;
    outcome.failure = {"died", phase, elapsed_s};
    outcome.reason = fmt::format("its process sent {} in {} (killed)", protocol_error, phase);
  } else if (!ended || status != 0) {
    outcome.status = ScenarioResult::Status::failed;
    outcome.failure = {"died", phase, elapsed_s};
    outcome.reason = fmt::format("its process {} in {}", describe_status(status), phase);
  }
  if (leftovers > 0) {
    const std::string left =
        fmt::format("{} process{} it started outlived it and {} killed", leftovers,
                    leftovers == 1 ? "" : "es", leftovers == 1 ? "was" : "were");
    if (outcome.status == ScenarioResult::Status::failed)
      outcome.reason += "; " + left;
    else if (!outcome.reps.empty())
      outcome.reps.back().notes.push_back(left);
  }
  return outcome;
}

}  // namespace doorbell::lab::detail
