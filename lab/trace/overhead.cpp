#include "lab/trace/overhead.h"

#include <fcntl.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <stdexcept>

#include "lab/common/signal_scope.h"
#include "lab/common/time.h"
#include "lab/harness/clock.h"
#include "lab/trace/signal_tracing.h"
#include "sys/error.h"

namespace doorbell::lab::trace {
namespace {

// A child that sends itself `count` SIGUSR1 after a word on `go`, and writes
// the nanoseconds per signal to `result`.
pid_t start_storm(int count, int& go_fd, int& result_fd) {
  int go[2], result[2];
  if (::pipe(go) != 0) sys::throw_errno("pipe");
  if (::pipe(result) != 0) sys::throw_errno("pipe");
  pid_t pid = ::fork();
  if (pid < 0) sys::throw_errno("fork");
  if (pid == 0) {
    ::close(go[1]);
    ::close(result[0]);
    // The child ends with _exit: the scope's restore never runs, and need not.
    ScopedDisposition empty_handler(
        SIGUSR1, [](int) {}, 0);
    char c;
    if (::read(go[0], &c, 1) != 1) ::_exit(3);
    const pid_t self = ::getpid();
    const uint64_t t0 = monotonic_ns();
    for (int i = 0; i < count; ++i) ::kill(self, SIGUSR1);
    double per_signal = static_cast<double>(monotonic_ns() - t0) / count;
    ssize_t w = ::write(result[1], &per_signal, sizeof per_signal);
    ::_exit(w == sizeof per_signal ? 0 : 4);
  }
  ::close(go[0]);
  ::close(result[1]);
  go_fd = go[1];
  result_fd = result[0];
  return pid;
}

// Runs one storm; while it runs, drains `tracing` every 50 ms when given.
double run_storm(int count, SignalTracing* tracing, Tracker* tracker) {
  int go = -1, result = -1;
  pid_t child = start_storm(count, go, result);
  if (::write(go, "g", 1) != 1) sys::throw_errno("write");
  ::close(go);
  double per_signal = -1;
  std::size_t got = 0;
  ::fcntl(result, F_SETFL, O_NONBLOCK);
  while (got < sizeof per_signal) {
    ssize_t n = ::read(result, reinterpret_cast<char*>(&per_signal) + got, sizeof per_signal - got);
    if (n > 0) {
      got += static_cast<std::size_t>(n);
      continue;
    }
    if (n == 0) break;  // the child died without a result
    if (errno != EAGAIN && errno != EINTR) break;
    if (tracing) tracing->drain(*tracker);
    sleep_ns(50'000'000);
  }
  ::close(result);
  int status = 0;
  while (::waitpid(child, &status, 0) < 0 && errno == EINTR) {
  }
  if (tracing) tracing->drain(*tracker);
  if (got != sizeof per_signal) throw std::runtime_error("the signal storm child failed");
  return per_signal;
}

}  // namespace

OverheadResult measure_overhead(int count, int rounds, const std::function<bool()>& stop) {
  OverheadResult r;
  r.signals_per_run = count;
  r.rounds = rounds;
  double best_plain = 1e300, best_traced = 1e300;
  for (int round = 0; round < rounds && !stop(); ++round) {
    best_plain = std::min(best_plain, run_storm(count, nullptr, nullptr));
    SignalTracing tracing;
    Tracker tracker(0);
    best_traced = std::min(best_traced, run_storm(count, &tracing, &tracker));
    for (const auto& [key, s] : tracker.streams())
      r.events_read += s.total.generated + s.total.delivered;
    r.lost_events += tracing.overruns();
  }
  r.untraced_ns_per_signal = best_plain;
  r.traced_ns_per_signal = best_traced;
  return r;
}

}  // namespace doorbell::lab::trace
