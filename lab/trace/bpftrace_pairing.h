// The bpftrace pairing of `doorbell trace --measure-overhead`: what an
// engineer would write instead of doorbell trace, run by Debian 12's
// bpftrace (0.17) as a child process. Two probes and one hash map, no
// causes:
//
//   tracepoint:signal:signal_generate { @start[args->pid, args->sig] = nsecs; }
//   tracepoint:signal:signal_deliver /@start[tid, args->sig]/ {
//     @delay_ns = hist(nsecs - @start[tid, args->sig]); delete(@start[tid, args->sig]); }
//
// The child: its own process group (a Ctrl-C at the terminal reaches
// doorbell only, which stops it), killed with SIGKILL if doorbell dies
// (PR_SET_PDEATHSIG), and a private mount namespace where tracefs is mounted
// if the system has it nowhere (bpftrace reads the tracepoints' formats
// there; the system's mounts do not change). Every wait has a deadline; the
// destructor kills and reaps a child that is still there.
#pragma once

#include <sys/types.h>

#include <cstdint>
#include <functional>
#include <stdexcept>
#include <string>

namespace doorbell::lab::trace {

// bpftrace cannot run here; what() says why, in one line.
class BpftraceUnavailable : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

// The bpftrace executable found in PATH; empty when there is none.
std::string find_bpftrace();

class BpftracePairing {
 public:
  // Starts `bpftrace` (a path) and waits until every probe is attached (its
  // BEGIN probe prints a line), at most `deadline_ns`. Throws
  // BpftraceUnavailable with its error when it exits or does not attach in
  // time. A `stop` request while waiting ends the wait: ready() is false.
  BpftracePairing(const std::string& bpftrace, const std::function<bool()>& stop,
                  uint64_t deadline_ns = 60'000'000'000ull);
  ~BpftracePairing();
  BpftracePairing(const BpftracePairing&) = delete;
  BpftracePairing& operator=(const BpftracePairing&) = delete;

  bool ready() const noexcept { return ready_; }
  pid_t pid() const noexcept { return pid_; }

  // Stops it (SIGINT: it prints its histogram), reads its output (at most
  // 10 s, then SIGKILL) and reaps it. Returns the count of delays in its
  // histogram (every signal of the system it paired).
  uint64_t finish();

 private:
  // Reads what the child wrote until `until` returns true, EOF or
  // `deadline` (monotonic ns); returns false on EOF or the deadline.
  bool read_until(const std::function<bool()>& until, uint64_t deadline);
  void kill_and_reap() noexcept;

  pid_t pid_ = -1;
  int out_ = -1;
  bool ready_ = false;
  std::string output_;
};

}  // namespace doorbell::lab::trace
