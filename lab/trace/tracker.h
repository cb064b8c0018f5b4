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
//  - Threads are mapped to their process by the task:task_newtask event of
//    their creation where it was seen (on_new_task(): a clone with
//    CLONE_THREAD joins its creator's process), else through
//    /proc/<tid>/status; a thread gone before either counts as its own
//    process.
//  - The generate→deliver delay pairs each delivery with the oldest queued
//    generate of the same signal to the same process (FIFO); deliveries with
//    no queued generate seen (tracing started after the send) are counted as
//    unpaired.
//
// Not thread-safe: one thread feeds and reads a Tracker.
#pragma once

#include <sys/types.h>

#include <array>
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
  bool group = true;        // process-directed (the shared queue); false: to target_tid only
};

// task:task_newtask, in the creating thread: `tid` is the new task.
struct NewTaskEvent {
  pid_t creator_tid = 0;
  pid_t tid = 0;
  bool thread = false;  // CLONE_THREAD: the new task joins the creator's process
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

// The delay histogram both backends fill, the same buckets as the BPF
// programs' (lab/trace/bpf/signals_abi.h): 4 per power of two of ns, so a
// value is known to within a quarter octave (12-25%).
inline constexpr int kDelayBuckets = 160;
int delay_bucket(uint64_t ns) noexcept;
// The values bucket i holds: [lower, upper).
double delay_bucket_lower(int bucket) noexcept;
double delay_bucket_upper(int bucket) noexcept;

// Why signals waited (the BPF backend only; lab/trace/bpf/signals.bpf.c):
// the delay of each paired take split by the state of the thread that took
// it, between the generate and the take.
enum class Cause { on_cpu = 0, runnable = 1, asleep = 2, blocked = 3 };
inline constexpr int kCauses = 4;
const char* cause_name(Cause cause);  // "on CPU", "runnable", "asleep", "blocked"
const char* cause_key(Cause cause);   // "on_cpu", "runnable", "asleep", "blocked"
const char* cause_meaning(Cause cause);

struct Causes {
  std::array<uint64_t, kCauses> ns{};     // delay by cause, summed over the takes
  std::array<uint64_t, kCauses> count{};  // takes whose largest part was each cause
  uint64_t longest_runnable_ns = 0;       // the longest single wait for a CPU
  pid_t ran_instead_tid = 0;              // the task switched out when that wait ended
  std::string ran_instead_comm;
  uint64_t switch_in_unseen = 0;  // woken, then taken with no switch-in seen (counted on CPU)
};

struct Counts {
  uint64_t generated = 0;  // signal_generate events of any result
  uint64_t queued = 0;     // result 0 (and 4: queued without siginfo)
  uint64_t coalesced = 0;  // result 2: already pending, merged
  uint64_t ignored = 0;    // result 1
  uint64_t failed = 0;     // result 3: RLIMIT_SIGPENDING overflow
  uint64_t delivered = 0;  // signal_deliver: a handler or the default action took it
  uint64_t unpaired = 0;   // taken with no queued generate seen
  // The BPF backend also sees these (tracefs: always 0, not seen):
  uint64_t taken_sigwait = 0;   // rt_sigtimedwait returned it
  uint64_t taken_signalfd = 0;  // a read of a signalfd returned it
  uint64_t discarded = 0;       // queued, never taken: its thread or process exited first
  uint64_t senders_other = 0;   // sends by senders the kernel side had no slot for
  // Takes whose delay could not be measured, by reason (never silent): the
  // generate was not remembered because a bounded table was full (bpf: the
  // per-thread queues, the spill table of queued real-time signals, the
  // per-process state; tracefs: the queue of one stream).
  uint64_t unmeasured_table_full = 0;
  Histogram delay;                                      // generate -> take, ns
  std::array<uint64_t, kDelayBuckets> delay_buckets{};  // the same delays, bucketed
  uint64_t delay_max_ns = 0;  // set_totals(): the exact largest delay (0: not known)
  Causes causes;
  std::map<pid_t, SenderTally> senders;

  uint64_t taken() const noexcept { return delivered + taken_sigwait + taken_signalfd; }
  uint64_t unmeasured() const noexcept { return unmeasured_table_full; }
  void reset() { *this = Counts{}; }
};

// The tgid of the aggregate rows: the totals of the streams of processes
// that are gone (Tracker::end_interval() retires them), one row per signal.
inline constexpr pid_t kRetired = -1;

struct Key {
  pid_t tgid;
  int sig;
  bool operator<(const Key& o) const { return tgid != o.tgid ? tgid < o.tgid : sig < o.sig; }
};

// Timestamps of queued, not yet taken generates, oldest first, bounded:
// generates beyond the bound are counted, and their takes counted as
// unmeasured (reason: table full).
struct Queue : std::deque<uint64_t> {
  uint64_t not_remembered = 0;
};

struct Stream {
  std::string comm;
  Counts interval;  // since the last end_interval()
  Counts total;
  // Timestamps of queued, not yet taken generates (events only): the
  // process's shared queue, and each thread's own.
  Queue queued_at;
  std::map<pid_t, Queue> queued_for_thread;
  Counts total_at_interval_start;  // set_totals(): what the interval is measured from
  bool from_totals = false;        // fed by set_totals() (the backend says when it is gone)
  bool found_gone = false;         // events: its process was gone at the last end_interval(), with
                                   // generates queued whose takes might still be unread
  uint64_t processes = 1;          // kRetired: how many processes' streams it holds
};

// into += more, counter by counter (the histograms merged; the causes'
// "longest" and the largest delay kept where larger).
void accumulate(Counts& into, const Counts& more);

class Tracker {
 public:
  // only > 0: keep only the signals received by that process.
  explicit Tracker(pid_t only = 0) : only_(only) {}

  void on_generate(const GenerateEvent& e);
  void on_deliver(const DeliverEvent& e);
  // A task was created: its process is known from now on, also after it has
  // exited (thread-directed signals to short-lived threads are read after
  // the threads are gone). Kept until an end_interval() after the one that
  // found the thread gone, so bounded by the threads alive and those created
  // in two intervals. A process that had the new task's id is gone: its
  // streams retire at once (a recycled PID starts rows of its own, also
  // within one interval). Not with a chosen process (only > 0).
  void on_new_task(const NewTaskEvent& e);
  // A backend that counts in the kernel hands over its running totals for
  // one stream instead of events: the interval is what they gained since the
  // last end_interval(). `totals.delay` may be left empty: it is rebuilt
  // from `totals.delay_buckets` (bucket midpoints; the largest at
  // `totals.delay_max_ns` when given, so the totals' max is exact, the
  // interval's to within its bucket).
  void set_totals(const Key& key, const std::string& comm, Counts totals);

  std::map<Key, Stream>& streams() { return streams_; }
  const std::map<Key, Stream>& streams() const { return streams_; }

  // Starts a new interval: interval counts to zero, thread-to-process
  // mappings forgotten (thread ids are reused), and the streams of processes
  // that are gone retired into one aggregate per signal (key {kRetired,
  // sig}) so that memory stays bounded by the processes alive: for events,
  // when kill(pid, 0) finds no process (one with generates still queued at
  // the next end_interval(): their takes may be read after it); for totals,
  // when the backend said so with gone(). Not with a chosen process (only >
  // 0): its row is the point.
  void end_interval();
  // A backend that feeds totals: the last set_totals() of `tgid` had all it
  // did; its streams retire at the next end_interval().
  void gone(pid_t tgid) { gone_.push_back(tgid); }

  // The process of a thread: learned from on_new_task(), else
  // /proc/<tid>/status (cached); a thread exited unseen is its own process,
  // tid 0 (the kernel) is 0.
  pid_t tgid_of(pid_t tid);
  // Threads whose process on_new_task() taught (the bound of that table).
  size_t tasks_learned() const noexcept { return learned_.size(); }
  // The name of a process (/proc/<pid>/comm), cached: "kernel" for 0,
  // "exited" when it is gone.
  std::string comm_of(pid_t pid);

 private:
  // Moves a stream's counts into the aggregate of its signal; the next one.
  std::map<Key, Stream>::iterator retire(std::map<Key, Stream>::iterator it);

  pid_t only_;
  std::map<Key, Stream> streams_;
  std::vector<pid_t> gone_;
  std::unordered_map<pid_t, pid_t> tgid_cache_;
  struct Learned {
    pid_t tgid;
    bool gone;  // found gone at the last end_interval(): dropped at the next
  };
  std::unordered_map<pid_t, Learned> learned_;
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
