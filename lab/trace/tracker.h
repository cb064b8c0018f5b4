// The signal tracker of `doorbell trace`: per process and signal, how many
// signals were generated (and what became of each: queued, merged, ignored,
// failed), how many were delivered, how long each waited between generate
// and deliver, and who sent them. Fed with plain event structs, so it is
// tested without root and without tracefs (tests/trace_tracker_test.cpp);
// lab/trace/signal_tracing.h feeds it from the kernel's tracepoints.
//
// What the events mean (see docs/trace.md):
//  - signal_generate runs in the sender: sender_tid is the sending thread,
//    target_tid the target thread; result 0 queued, 1 ignored, 2 already
//    pending (coalesced), 3 overflow, 4 queued without its siginfo.
//  - signal_deliver runs in the receiving thread inside get_signal(), for
//    signals taken by a handler or a default action. Signals taken by
//    sigwaitinfo(2) or a signalfd never pass there: they show as generated,
//    not delivered.
//  - Threads are mapped to their process through /proc/<tid>/status; a
//    thread that has already exited counts as its own process.
//  - The generate→deliver delay pairs each delivery with the oldest queued
//    generate of the same signal to the same process (FIFO); deliveries with
//    no queued generate seen (tracing started after the send) are counted as
//    unpaired.
//
// Not thread-safe: one thread feeds and reads a Tracker.
#pragma once

#include <sys/types.h>

#include <cstdint>
#include <deque>
#include <map>
#include <ostream>
#include <string>
#include <unordered_map>
#include <vector>

#include <nlohmann/json.hpp>

#include "lab/harness/histogram.h"

namespace doorbell::lab::trace {

// The advice printed beside a receiver above the threshold.
extern const char* const kGuideAdvice;

struct GenerateEvent {
  uint64_t ts_ns = 0;
  pid_t sender_tid = 0;
  pid_t target_tid = 0;
  int sig = 0;
  int result = 0;
  std::string target_comm;  // the target thread's name, from the event
};

struct DeliverEvent {
  uint64_t ts_ns = 0;
  pid_t tid = 0;  // the receiving thread
  int sig = 0;
};

struct SenderTally {
  std::string comm;
  uint64_t count = 0;
};

struct Counts {
  uint64_t generated = 0;  // signal_generate events of any result
  uint64_t queued = 0;     // result 0 (and 4: queued without siginfo)
  uint64_t coalesced = 0;  // result 2: already pending, merged
  uint64_t ignored = 0;    // result 1
  uint64_t failed = 0;     // result 3: RLIMIT_SIGPENDING overflow
  uint64_t delivered = 0;
  uint64_t unpaired = 0;  // delivered with no queued generate seen
  Histogram delay;        // generate -> deliver, ns
  std::map<pid_t, SenderTally> senders;

  void reset() { *this = Counts{}; }
};

struct Key {
  pid_t tgid;
  int sig;
  bool operator<(const Key& o) const { return tgid != o.tgid ? tgid < o.tgid : sig < o.sig; }
};

struct Stream {
  std::string comm;
  Counts interval;  // since the last end_interval()
  Counts total;
  std::deque<uint64_t> queued_at;  // timestamps of queued, not yet delivered generates
};

class Tracker {
 public:
  // only > 0: keep only the signals received by that process.
  explicit Tracker(pid_t only = 0) : only_(only) {}

  void on_generate(const GenerateEvent& e);
  void on_deliver(const DeliverEvent& e);

  std::map<Key, Stream>& streams() { return streams_; }
  const std::map<Key, Stream>& streams() const { return streams_; }

  // Starts a new interval: interval counts to zero, thread-to-process
  // mappings forgotten (thread ids are reused).
  void end_interval();

  // The process of a thread (/proc/<tid>/status), cached; an exited thread
  // is its own process, tid 0 (the kernel) is 0.
  pid_t tgid_of(pid_t tid);
  // The name of a process (/proc/<pid>/comm), cached: "kernel" for 0,
  // "exited" when it is gone.
  std::string comm_of(pid_t pid);

 private:
  pid_t only_;
  std::map<Key, Stream> streams_;
  std::unordered_map<pid_t, pid_t> tgid_cache_;
  std::unordered_map<pid_t, std::string> comm_cache_;
};

// "SIGUSR1", "SIGRTMIN+3", "signal 99".
std::string signal_name(int sig);

// What is pending of a signal in a process now (/proc/<pid>/task/*/status).
struct Pending {
  bool known = false;   // false: the process is gone
  bool shared = false;  // in ShdPnd (process-directed, not yet taken)
  int threads = 0;      // threads with it in SigPnd
};
Pending pending_of(pid_t tgid, int sig);

struct Row {
  Key key;
  const Stream* stream;
  double generated_per_s;
  double delivered_per_s;
};

// The streams with any event in the interval (or in total), busiest first.
std::vector<Row> rows_of(const Tracker& tracker, double seconds, bool totals);

// One row of the --json output.
nlohmann::json row_json(const Row& r, const Counts& c, double seconds, double threshold,
                        const Pending& pending);

struct TableOptions {
  int top = 20;
  double threshold = 1000.0;
};

// The terminal table: a heading, one line per row (up to top), then a "!!"
// line per receiver above the threshold. `pending` is asked per row shown.
// With `totals` the GEN, DLV and MERGED columns are counts over `seconds`;
// otherwise rates (GEN/s, ...), with one decimal below 10/s and "<0.1"
// rather than a 0 for a stream that did have signals.
void print_table(std::ostream& out, const Tracker& tracker, const TableOptions& options,
                 double seconds, bool totals, const std::string& heading,
                 Pending (*pending)(pid_t, int) = pending_of);

}  // namespace doorbell::lab::trace
