// Sending a signal to every thread of a process: the sender-side remedy for
// late delivery in multi-threaded processes.
//
// Why. For a process-directed signal (kill(2), sigqueue(3)) Linux picks ONE
// thread at send time, preferring the main thread when it does not block the
// signal, even when that thread is only waiting in a run queue, and tells no
// other thread. Handling then waits until that one thread gets a CPU:
// milliseconds to tens of milliseconds when the process has more runnable
// threads than CPUs. Sending the signal to every thread (tgkill(2) on each
// thread listed in /proc/PID/task) lets whichever thread runs first take it.
// This is the user-space equivalent of the "unconfident signal sender" of
// "Real-Time Signaling in Linux for Multi-Threaded Processes" (IEEE ESL).
// docs/delivery.md says when to use it, and when a SignalReceiver is better.
//
// The cost. One system call per thread (about 1 µs each on a VM with PTI),
// plus one read of /proc/PID/task per listing: the sender pays O(threads).
//
// Handled signals: de-duplication. A handled signal sent to N threads runs
// the handler up to N times. ThreadBroadcaster::send() puts a token in
// si_value (rt_tgsigqueueinfo(2), si_code SI_QUEUE), and the handler calls
// BroadcastToken::claim(info): the first call for a token returns true, every
// later call for the same token returns false. Use a real-time signal
// (SIGRTMIN+n) for handled broadcasts: each thread queues every instance in
// order. With a standard signal (SIGUSR1), a thread that still has an older
// broadcast pending drops the newer one (standard signals coalesce per
// thread); the newer token is then taken by a thread that had nothing
// pending, or, when every thread had one pending, it merges with the older
// one, exactly as a process-directed standard signal would.
//
// Stop signals: stop_every_thread() sends SIGSTOP with tgkill to every thread.
// The first thread to dequeue it starts the group stop for all, so the stop
// no longer waits for the main thread to be scheduled. continue_process()
// sends one SIGCONT, which the kernel applies to all threads at send time and
// which also discards the SIGSTOPs still queued on the other threads.
//
// Threads that come and go. The thread list is a snapshot. send() re-reads
// it until a listing shows no thread it has not signalled yet (at most
// Options::max_listings times; BroadcastResult::complete says whether it
// got there). A thread that exits between the listing and its tgkill gives
// ESRCH: counted in threads_gone, not an error.
//
// Process identity. The broadcaster holds a pidfd (pidfd_open(2), Linux 5.3)
// opened at construction. After each read of /proc/PID/task, and before
// signalling any thread it lists, it asks the pidfd whether the process is
// still alive: if it is, the PID cannot have been reused before the listing
// was read, so the listed threads are that process's. If it is not (the
// process exited, and its PID may already name a stranger), nothing from
// that listing is signalled: the first listing throws std::system_error
// (ESRCH), a later one ends the send with process_exited set. After sending
// it asks again and sets process_exited if the process has gone since. The
// one interval left is between that check and each tgkill(PID, TID): a
// stranger would have to receive both the PID and that TID within it.
// Where pidfd_open is missing (ENOSYS) the broadcaster works without these
// checks and says so (pinned() == false).
//
// Thread safety: a ThreadBroadcaster is not thread-safe (its token counter
// and thread list are plain members); use one per sending thread.
// BroadcastToken is lock-free and async-signal-safe.
// Across fork: a child inherits a BroadcastToken's state as of the fork.
#pragma once

#include <signal.h>
#include <sys/types.h>

#include <array>
#include <atomic>
#include <cstdint>
#include <vector>

namespace doorbell {

namespace detail {
// Test seam: lets a test give a broadcaster the pidfd of a process that has
// exited, which is what a broadcaster holds after its target exited and the
// PID was reused (defined by the test, not by the library).
struct ThreadBroadcasterTestAccess;
}  // namespace detail

// What one broadcast did.
struct BroadcastResult {
  int threads_reached = 0;      // tgkill / rt_tgsigqueueinfo returned 0
  int threads_gone = 0;         // ESRCH: the thread exited after the listing
  int listings = 0;             // reads of /proc/PID/task
  bool complete = false;        // the last listing showed no new thread
  bool process_exited = false;  // the pidfd says the process is gone
  uint64_t token = 0;           // the token sent in si_value (0: none)
};

// The receiving side of the de-duplication: one object per receiving
// process (a static or a global), shared by the handlers of all its threads.
//
// Tokens: 64-bit values whose top byte is kMarker; the low 56 bits are a
// sequence number, strictly increasing per sender (ThreadBroadcaster makes
// them). claim() keeps, for each of kWindow slots (slot = sequence mod
// kWindow), the highest sequence claimed, so tokens may arrive out of order
// across threads. A token more than kWindow sequence numbers older than a
// claimed token in its slot is treated as already seen (it was sent
// kWindow broadcasts ago and no thread ran it since: reported as a
// duplicate, never handled twice).
//
// One sender per BroadcastToken: two senders with their own counters would
// reuse sequence numbers. Several senders must share a counter (e.g. in
// shared memory) or use separate signals with separate BroadcastTokens.
class BroadcastToken {
 public:
  static constexpr uint64_t kMarker = 0xdbull << 56;
  static constexpr uint64_t kSequenceMask = (1ull << 56) - 1;
  static constexpr std::size_t kWindow = 64;

  // claim(info): true when this call is the first for the token in
  // info->si_value, false for every later call with the same token.
  // Signals without a broadcast token (si_code other than SI_QUEUE, or a
  // value without kMarker in its top byte: kill(1), sigqueue(3) from other
  // programs) are not broadcasts and return true: handle them.
  // Async-signal-safe, lock-free, wait-free except for CAS retries under
  // contention (bounded by the number of threads claiming at once).
  //
  // Memory ordering: claim() orders nothing. Its CAS only decides which
  // thread handles the token, which needs atomicity, not ordering, so it is
  // relaxed. What the sender wrote before sending is made visible to the
  // handler by the kernel's delivery, not by claim(); threads that must see
  // each other's handling work synchronise on their own.
  bool claim(const siginfo_t* info) noexcept;
  bool claim_token(uint64_t token) noexcept;

  // Claims refused because another thread had the token first (relaxed
  // counter: a statistic, not a synchronisation point).
  uint64_t duplicates() const noexcept { return duplicates_.load(std::memory_order_relaxed); }
  uint64_t claimed() const noexcept { return claimed_.load(std::memory_order_relaxed); }

  static bool is_token(uint64_t value) noexcept { return (value & ~kSequenceMask) == kMarker; }

 private:
  static_assert(std::atomic<uint64_t>::is_always_lock_free,
                "claim() must be async-signal-safe: needs lock-free 64-bit atomics");
  std::array<std::atomic<uint64_t>, kWindow> highest_{};  // per slot: highest sequence claimed
  std::atomic<uint64_t> duplicates_{0};
  std::atomic<uint64_t> claimed_{0};
};

// Sends signals to every thread of one process.
class ThreadBroadcaster {
 public:
  struct Options {
    int max_listings = 8;  // re-reads of /proc/PID/task while new threads appear
  };

  // Throws std::invalid_argument for pid <= 0, and std::system_error when
  // the process does not exist (ESRCH) or pidfd_open fails for another
  // reason than ENOSYS.
  explicit ThreadBroadcaster(pid_t pid);
  ThreadBroadcaster(pid_t pid, Options options);

  pid_t pid() const noexcept { return pid_; }
  // Whether a pidfd pins the process identity (false where pidfd_open is
  // missing: then a PID reused during a send would go unnoticed).
  bool pinned() const noexcept { return pidfd_ >= 0; }

  ThreadBroadcaster(const ThreadBroadcaster&) = delete;
  ThreadBroadcaster& operator=(const ThreadBroadcaster&) = delete;
  ~ThreadBroadcaster();

  // Sends signo to every thread with the next token in si_value (SI_QUEUE).
  // Throws std::invalid_argument for signo outside 1..NSIG-1 or SIGKILL/
  // SIGSTOP (use stop_every_thread), std::system_error when /proc/PID/task
  // cannot be read at the first listing or the pidfd says the process has
  // exited (process gone: ESRCH/ENOENT), or a send fails with anything but
  // ESRCH (EPERM: not allowed to signal a thread; EAGAIN: RLIMIT_SIGPENDING).
  // A send that throws after reaching some threads has still used its
  // token: the next send() carries a new one, so the threads that got this
  // one do not drop the next event as a duplicate.
  BroadcastResult send(int signo);
  // The same with a caller-chosen token (any value; 0 allowed).
  BroadcastResult send_with_value(int signo, uint64_t value);
  // Plain tgkill to every thread: no siginfo, no token (si_code SI_TKILL).
  BroadcastResult send_plain(int signo);

  // The token of the last send(), including one that threw halfway (0
  // before the first send()). send_with_value() does not change it.
  uint64_t last_token() const noexcept {
    return sequence_ == 0 ? 0 : BroadcastToken::kMarker | sequence_;
  }

 private:
  friend struct detail::ThreadBroadcasterTestAccess;
  BroadcastResult broadcast(int signo, bool with_info, uint64_t value);
  pid_t pid_;
  Options options_;
  int pidfd_ = -1;
  uint64_t sequence_ = 0;
  std::vector<pid_t> sent_;  // scratch, kept to avoid allocation per send
};

// SIGSTOP to every thread of pid (tgkill each, re-listing like send()). The
// stop is asynchronous: it has taken effect when waitpid(WUNTRACED) reports
// it (for a child) or all_threads_stopped(pid) is true. The caller must
// resume the process (continue_process) on every path, including its own
// crash: a stopped process stays stopped. Throws like ThreadBroadcaster.
BroadcastResult stop_every_thread(pid_t pid);

// kill(pid, SIGCONT): resumes every thread and discards pending stop signals
// on all of them. Throws std::system_error on failure.
void continue_process(pid_t pid);

// True when every thread listed in /proc/PID/task is in state T (stopped)
// or t (traced), or has exited. Throws std::system_error when the process
// does not exist.
bool all_threads_stopped(pid_t pid);

}  // namespace doorbell
