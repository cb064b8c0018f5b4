#include "doorbell/thread_broadcast.h"

#include <signal.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <stdexcept>
#include <string>
#include <system_error>

#include "sys/error.h"
#include "sys/pidfd.h"
#include "sys/proc.h"
#include "sys/syscalls.h"
#include "sys/tgkill.h"

namespace doorbell {

// ---------------------------------------------------------------- BroadcastToken
//
// State per slot: the highest sequence number claimed in that slot (0: none;
// ThreadBroadcaster starts at 1). A claim of sequence s in slot s % kWindow
// succeeds when it raises the slot from a value below s to s. Because one
// sender makes the sequence numbers strictly increasing, each slot sees
// s, s + kWindow, s + 2 kWindow, ...: a claim of s fails exactly when s (or a
// token kWindow or more newer) was claimed already.

bool BroadcastToken::claim(const siginfo_t* info) noexcept {
  if (info == nullptr || info->si_code != SI_QUEUE) return true;
  const auto value = reinterpret_cast<uintptr_t>(info->si_value.sival_ptr);
  if (!is_token(value)) return true;
  return claim_token(value);
}

bool BroadcastToken::claim_token(uint64_t token) noexcept {
  if (!is_token(token)) return true;
  const uint64_t sequence = token & kSequenceMask;
  std::atomic<uint64_t>& slot = highest_[sequence % kWindow];
  // Relaxed: the CAS decides the winner by atomicity alone; no data is
  // published through it (see the header).
  uint64_t seen = slot.load(std::memory_order_relaxed);
  while (seen < sequence) {
    if (slot.compare_exchange_weak(seen, sequence, std::memory_order_relaxed,
                                   std::memory_order_relaxed)) {
      claimed_.fetch_add(1, std::memory_order_relaxed);
      return true;
    }
    // seen was reloaded by the failed CAS: another thread claimed this slot
    // (this sequence or a newer one) or the CAS failed spuriously; loop.
  }
  duplicates_.fetch_add(1, std::memory_order_relaxed);
  return false;
}

// ---------------------------------------------------------------- ThreadBroadcaster

namespace {

void check_pid(pid_t pid) {
  if (pid <= 0)
    throw std::invalid_argument("ThreadBroadcaster: pid must be > 0, got " + std::to_string(pid));
}

void check_signo(int signo) {
  if (signo <= 0 || signo >= NSIG)
    throw std::invalid_argument("ThreadBroadcaster: signal number out of range: " +
                                std::to_string(signo));
}

int open_pidfd_or_none(pid_t pid) {
  try {
    return sys::pidfd_open(pid).release();
  } catch (const std::system_error& e) {
    // Before Linux 5.3 there is no pidfd: work without the identity check
    // (pinned() says so). Any other failure (ESRCH) is the caller's error.
    if (e.code().value() == ENOSYS) return -1;
    throw;
  }
}

bool process_alive(int pidfd) {
  // Signal 0 through the pidfd: ESRCH once the process has exited, even if
  // its PID now names another process. EPERM: alive, but we may not signal
  // its main thread (its other threads may still be ours to signal). Any
  // other failure says nothing about the process: it is the error.
  const int rc = sys::pidfd_send_signal(pidfd, 0);
  if (rc == 0 || rc == -EPERM) return true;
  if (rc == -ESRCH) return false;
  sys::throw_errno(-rc, "ThreadBroadcaster: pidfd_send_signal(0)");
}

// Sends to every listed thread not yet in `sent` (kept sorted), re-listing
// until a listing adds nothing. Shared by the broadcaster and stop_every_thread.
//
// Identity: a listing of /proc/PID/task names our process's threads only if
// the process was still alive after the listing was read (while it lives,
// its PID names nobody else). So each listing is confirmed through the
// pidfd (when there is one) before any of its threads is signalled; a
// process that exited, whose PID may already belong to a stranger, gets
// nothing. What remains is the interval between that check and each
// tgkill(pid, tid): a stranger would need both the PID and that thread's
// TID within it, and tgkill refuses a TID outside the PID's thread group.
template <typename SendOne>
void send_to_all(pid_t pid, int pidfd, int max_listings, std::vector<pid_t>& sent,
                 BroadcastResult& result, SendOne send_one) {
  sent.clear();
  for (int listing = 0; listing < max_listings; ++listing) {
    std::vector<pid_t> tids;
    try {
      tids = sys::list_threads(pid);
    } catch (const std::system_error& e) {
      // The first listing failing means the process is not there (or not
      // readable): the caller's error. A later one that finds no directory
      // (ENOENT, ESRCH) means it exited meanwhile; any other failure (EMFILE,
      // ENOMEM) is an error, not news about the process.
      const int error = e.code().value();
      if (listing == 0 || (error != ENOENT && error != ESRCH)) throw;
      result.process_exited = true;
      return;
    }
    ++result.listings;
    if (pidfd >= 0 && !process_alive(pidfd)) {
      result.process_exited = true;
      if (listing == 0) {
        sys::throw_errno(ESRCH, "ThreadBroadcaster: process " + std::to_string(pid) +
                                    " has exited (its PID may name another process now)");
      }
      return;
    }
    bool new_thread = false;
    for (const pid_t tid : tids) {
      const auto it = std::lower_bound(sent.begin(), sent.end(), tid);
      if (it != sent.end() && *it == tid) continue;
      sent.insert(it, tid);
      new_thread = true;
      const int rc = send_one(tid);
      if (rc == 0) {
        ++result.threads_reached;
      } else if (rc == -ESRCH) {
        ++result.threads_gone;  // exited after the listing: normal
      } else {
        sys::throw_errno(-rc,
                         "signal thread " + std::to_string(tid) + " of " + std::to_string(pid));
      }
    }
    if (!new_thread) {
      result.complete = true;
      return;
    }
  }
}

}  // namespace

ThreadBroadcaster::ThreadBroadcaster(pid_t pid) : ThreadBroadcaster(pid, Options{}) {}

ThreadBroadcaster::ThreadBroadcaster(pid_t pid, Options options) : pid_(pid), options_(options) {
  check_pid(pid);
  if (options_.max_listings < 1)
    throw std::invalid_argument("ThreadBroadcaster: max_listings must be >= 1");
  pidfd_ = open_pidfd_or_none(pid);
}

ThreadBroadcaster::~ThreadBroadcaster() {
  if (pidfd_ >= 0) sys::close(pidfd_);
}

BroadcastResult ThreadBroadcaster::send(int signo) {
  check_signo(signo);
  // 56-bit sequence: wraps after 7e16 broadcasts, i.e. never in practice.
  const uint64_t next = (sequence_ + 1) & BroadcastToken::kSequenceMask;
  const uint64_t token = BroadcastToken::kMarker | next;
  // The token is spent as soon as it may reach a thread: advance first. A
  // broadcast that fails halfway (EAGAIN from RLIMIT_SIGPENDING, EPERM on
  // one thread) has delivered it to some threads already; handing it to the
  // next broadcast would make those threads drop that one as a duplicate.
  sequence_ = next;
  BroadcastResult result = broadcast(signo, true, token);
  result.token = token;
  return result;
}

BroadcastResult ThreadBroadcaster::send_with_value(int signo, uint64_t value) {
  check_signo(signo);
  BroadcastResult result = broadcast(signo, true, value);
  result.token = value;
  return result;
}

BroadcastResult ThreadBroadcaster::send_plain(int signo) {
  check_signo(signo);
  return broadcast(signo, false, 0);
}

BroadcastResult ThreadBroadcaster::broadcast(int signo, bool with_info, uint64_t value) {
  if (signo == SIGKILL || signo == SIGSTOP)
    throw std::invalid_argument(
        "ThreadBroadcaster: SIGKILL/SIGSTOP act on the whole process; use kill(2) or "
        "stop_every_thread()");
  BroadcastResult result;
  siginfo_t info{};
  if (with_info) {
    info.si_signo = signo;
    info.si_code = SI_QUEUE;  // the kernel refuses codes >= 0 from another process
    info.si_pid = ::getpid();
    info.si_uid = ::getuid();
    info.si_value.sival_ptr = reinterpret_cast<void*>(static_cast<uintptr_t>(value));
  }
  send_to_all(pid_, pidfd_, options_.max_listings, sent_, result, [&](pid_t tid) {
    if (!with_info) return sys::tgkill(pid_, tid, signo);
    // The kernel copies info; a fresh copy per thread keeps it untouched.
    siginfo_t copy = info;
    return sys::rt_tgsigqueueinfo(pid_, tid, signo, &copy);
  });
  if (pidfd_ >= 0 && !process_alive(pidfd_)) result.process_exited = true;
  return result;
}

// ---------------------------------------------------------------- stop / continue

BroadcastResult stop_every_thread(pid_t pid) {
  check_pid(pid);
  // Owned whatever throws (the last liveness probe too).
  const sys::UniqueFd pidfd(open_pidfd_or_none(pid));
  BroadcastResult result;
  std::vector<pid_t> sent;
  send_to_all(pid, pidfd.get(), ThreadBroadcaster::Options{}.max_listings, sent, result,
              [&](pid_t tid) { return sys::tgkill(pid, tid, SIGSTOP); });
  if (pidfd && !process_alive(pidfd.get())) result.process_exited = true;
  return result;
}

void continue_process(pid_t pid) {
  check_pid(pid);
  if (sys::kill(pid, SIGCONT) != 0) sys::throw_errno("kill(" + std::to_string(pid) + ", SIGCONT)");
}

bool all_threads_stopped(pid_t pid) {
  check_pid(pid);
  for (const pid_t tid : sys::list_threads(pid)) {
    const auto state = sys::read_thread_signal_state(pid, tid);
    if (!state) continue;  // exited since the listing
    if (state->state != 'T' && state->state != 't' && state->state != 'Z' && state->state != 'X')
      return false;
  }
  return true;
}

}  // namespace doorbell
