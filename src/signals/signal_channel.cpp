// SignalChannel: the parts common to both mechanisms. See
// include/doorbell/signal_channel.h for the contract and
// signal_channel_backend.h for the seam.
#include "doorbell/signal_channel.h"

#include <poll.h>
#include <pthread.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <cstring>
#include <mutex>
#include <optional>
#include <string>
#include <thread>

#include "signals/signal_channel_backend.h"
#include "signals/signal_channel_hooks.h"
#include "sys/deadline.h"
#include "sys/error.h"
#include "sys/proc.h"
#include "sys/syscalls.h"

namespace doorbell {

namespace detail {
namespace {

// Written only by the fork hook in a fresh child (one thread at that
// point), read by any thread: relaxed is enough, the value only changes
// where nobody else runs.
std::atomic<std::uint64_t> g_fork_generation{0};
thread_local sigset_t t_mask_before_fork;

// Around fork() every signal is blocked in the forking thread, so that the
// child cannot run one of our handlers before the child hook has put the
// old dispositions back (Go does the same in syscall.forkExec).
// The channels' lock is taken too (after the signals are blocked, so no
// handler of ours runs on this thread while it is held), and released in
// the parent and the child.
void before_fork() noexcept {
  sigset_t all;
  sigfillset(&all);
  sys::pthread_sigmask(SIG_SETMASK, &all, &t_mask_before_fork);
  signal_channel_race_point(SignalChannelRacePoint::fork_prepare, 0);
  handler_backend_before_fork();
}
void after_fork_in_parent() noexcept {
  handler_backend_after_fork_in_parent();
  sys::pthread_sigmask(SIG_SETMASK, &t_mask_before_fork, nullptr);
}
void after_fork_in_child() noexcept {
  g_fork_generation.fetch_add(1, std::memory_order_relaxed);
  handler_backend_after_fork_in_child();
  sys::pthread_sigmask(SIG_SETMASK, &t_mask_before_fork, nullptr);
}

}  // namespace

std::uint64_t fork_generation() noexcept {
  return g_fork_generation.load(std::memory_order_relaxed);
}

void install_fork_hooks() {
  static std::once_flag once;
  std::call_once(once, [] {
    const int rc = pthread_atfork(before_fork, after_fork_in_parent, after_fork_in_child);
    if (rc != 0) sys::throw_errno(rc, "pthread_atfork");
  });
}

namespace {

// How long the check waits for a thread in glibc's all-blocked window (a
// thread not started yet, or ending) to set its own mask or go.
constexpr auto kUnsettledLimit = std::chrono::seconds(5);

// The state of thread `tid` once it is out of glibc's all-blocked window
// (see ThreadSignalState::in_glibc_all_blocked_window): a thread created a
// moment ago shows every signal blocked until it runs, then takes the mask
// its creator had, which may leave the signal open. A snapshot taken
// meanwhile would pass the signalfd check, and the first signal after the
// thread ran would kill the process (issue 36). nullopt: gone, or a zombie
// (neither takes a signal). `settled` false: still in the window at
// `limit`.
std::optional<sys::ThreadSignalState> settled_state(pid_t pid, pid_t tid,
                                                    DeadlineClock::time_point limit,
                                                    bool& settled) {
  settled = true;
  for (;;) {
    auto state = sys::read_thread_signal_state(pid, tid);
    if (!state || state->state == 'Z' || state->state == 'X') return std::nullopt;
    if (!state->in_glibc_all_blocked_window) return state;
    signal_channel_race_point(SignalChannelRacePoint::mask_check_thread_unsettled, tid);
    if (DeadlineClock::now() >= limit) {
      settled = false;
      return state;
    }
    // Give the thread a CPU to start on.
    std::this_thread::sleep_for(std::chrono::microseconds(200));
  }
}

// Every thread's state, or the first problem found. `want_blocked`: each
// signal must be blocked in every thread; otherwise each must be unblocked
// in at least one. A thread that is starting is waited for (up to
// kUnsettledLimit) and judged by the mask it then has.
std::string check_masks(const std::vector<int>& signals, bool want_blocked) {
  const pid_t pid = ::getpid();
  const auto limit = DeadlineClock::now() + kUnsettledLimit;
  std::vector<bool> unblocked_somewhere(signals.size(), false);
  for (const pid_t tid : sys::list_threads(pid)) {
    bool settled = true;
    const auto state = settled_state(pid, tid, limit, settled);
    if (!state) continue;  // exited meanwhile, or a zombie
    if (!settled) {
      // Its own mask is unknown. For signalfd that is a refusal; for the
      // handler check it counts as blocking (a refusal at worst, never a
      // signal left without a taker).
      if (want_blocked)
        return "thread " + std::to_string(tid) +
               " is still starting (glibc's all-blocked mask) after " +
               std::to_string(kUnsettledLimit.count()) + " s, so its own mask is unknown";
      continue;
    }
    for (std::size_t i = 0; i < signals.size(); ++i) {
      const bool blocked = sigismember(&state->blocked, signals[i]) == 1;
      if (!blocked) unblocked_somewhere[i] = true;
      if (want_blocked && !blocked) {
        return "thread " + std::to_string(tid) + " does not block " + signal_name(signals[i]);
      }
    }
  }
  if (!want_blocked) {
    for (std::size_t i = 0; i < signals.size(); ++i) {
      if (!unblocked_somewhere[i]) {
        return "every thread blocks " + signal_name(signals[i]) + ", so no handler can run";
      }
    }
  }
  return {};
}
}  // namespace

std::string check_blocked_in_every_thread(const std::vector<int>& signals) {
  return check_masks(signals, true);
}
std::string check_unblocked_in_some_thread(const std::vector<int>& signals) {
  return check_masks(signals, false);
}

}  // namespace detail

const char* refused_signal_reason(int signo) noexcept {
  if (signo <= 0 || signo > SIGRTMAX) return "not a signal number";
  switch (signo) {
    case SIGKILL:
    case SIGSTOP:
      return "cannot be caught, blocked or ignored";
    case SIGSEGV:
    case SIGBUS:
    case SIGFPE:
    case SIGILL:
    case SIGTRAP:
    case SIGSYS:  // seccomp's SECCOMP_RET_TRAP, a bad system call: on the faulting thread too
      return "a synchronous fault must be handled on the faulting thread, not as an event";
    default:
      break;
  }
  if (signo > 31 && signo < SIGRTMIN) return "reserved by the C library (threads, cancellation)";
  return nullptr;
}

std::string signal_name(int signo) {
  if (signo >= SIGRTMIN && signo <= SIGRTMAX) {
    if (signo == SIGRTMIN) return "SIGRTMIN";
    return "SIGRTMIN+" + std::to_string(signo - SIGRTMIN);
  }
  if (const char* abbrev = sigabbrev_np(signo)) return std::string("SIG") + abbrev;
  return "signal " + std::to_string(signo);
}

const char* mechanism_name(SignalMechanism mechanism) noexcept {
  switch (mechanism) {
    case SignalMechanism::automatic:
      return "automatic";
    case SignalMechanism::signalfd:
      return "signalfd";
    case SignalMechanism::handler:
      return "handler";
  }
  return "?";
}

std::string SignalEvent::describe() const {
  std::string text = signal_name(signal);
  const char* code_name = nullptr;
  switch (code) {
    case SI_USER:
      code_name = "SI_USER";
      break;
    case SI_QUEUE:
      code_name = "SI_QUEUE";
      break;
    case SI_TKILL:
      code_name = "SI_TKILL";
      break;
    case SI_KERNEL:
      code_name = "SI_KERNEL";
      break;
    case SI_TIMER:
      code_name = "SI_TIMER";
      break;
    default:
      break;
  }
  if (signal == SIGCHLD) {
    switch (code) {
      case CLD_EXITED:
        return text + ": child " + std::to_string(sender_pid) + " exited with " +
               std::to_string(status);
      case CLD_KILLED:
      case CLD_DUMPED:
        return text + ": child " + std::to_string(sender_pid) + " killed by " +
               signal_name(status) + (code == CLD_DUMPED ? " (core dumped)" : "");
      case CLD_STOPPED:
        return text + ": child " + std::to_string(sender_pid) + " stopped";
      case CLD_CONTINUED:
        return text + ": child " + std::to_string(sender_pid) + " continued";
      default:
        break;
    }
  }
  text += " from pid " + std::to_string(sender_pid) + " (uid " + std::to_string(sender_uid) + ", " +
          (code_name != nullptr ? code_name : "code " + std::to_string(code));
  if (code == SI_QUEUE) text += ", value " + std::to_string(value);
  text += ")";
  if (coalesced != 0) text += ", " + std::to_string(coalesced) + " more merged";
  return text;
}

sigset_t block_signals_before_threads(const std::vector<int>& signals) {
  sigset_t set;
  sigemptyset(&set);
  for (const int signo : signals) {
    if (const char* why = refused_signal_reason(signo)) {
      throw std::invalid_argument("block_signals_before_threads: " + signal_name(signo) + ": " +
                                  why);
    }
    sigaddset(&set, signo);
  }
  sigset_t previous;
  // A failure (it cannot fail for SIG_BLOCK) must not hand back an
  // uninitialized mask for restore_signal_mask() to install.
  if (const int rc = sys::pthread_sigmask(SIG_BLOCK, &set, &previous); rc != 0)
    sys::throw_errno(rc, "block_signals_before_threads: pthread_sigmask");
  return previous;
}

SignalChannel::SignalChannel(const std::vector<int>& signals, const Options& options) {
  if (signals.empty()) throw std::invalid_argument("SignalChannel: no signals");
  for (const int signo : signals) {
    if (const char* why = refused_signal_reason(signo)) {
      throw std::invalid_argument("SignalChannel: refusing " + signal_name(signo) + ": " + why);
    }
  }
  if (options.realtime_capacity == 0 || options.realtime_capacity > kMaxRealtimeCapacity) {
    throw std::invalid_argument("SignalChannel: realtime_capacity must be 1.." +
                                std::to_string(kMaxRealtimeCapacity) + ", got " +
                                std::to_string(options.realtime_capacity));
  }
  signals_ = signals;
  spin_ = options.spin;
  std::sort(signals_.begin(), signals_.end());
  signals_.erase(std::unique(signals_.begin(), signals_.end()), signals_.end());

  detail::install_fork_hooks();
  fork_generation_ = detail::fork_generation();

  SignalMechanism mechanism = options.mechanism;
  if (mechanism == SignalMechanism::automatic) {
    mechanism = detail::check_blocked_in_every_thread(signals_).empty() ? SignalMechanism::signalfd
                                                                        : SignalMechanism::handler;
  }
  if (mechanism == SignalMechanism::signalfd) {
    backend_ = detail::make_signalfd_backend(signals_);
  } else {
    backend_ = detail::make_handler_backend(signals_, options);
  }
}

SignalChannel::~SignalChannel() {
  stop();
}

int SignalChannel::fd() const noexcept {
  return backend_->fd();
}

SignalMechanism SignalChannel::mechanism() const noexcept {
  return backend_->mechanism();
}

void SignalChannel::check_fork() const {
  if (fork_generation_ != detail::fork_generation()) {
    throw ForkedChannelError(
        "SignalChannel used in a forked child: it belongs to the parent process; create a new "
        "channel in the child");
  }
}

std::optional<SignalEvent> SignalChannel::try_receive() {
  check_fork();
  return backend_->try_receive();
}

std::optional<SignalEvent> SignalChannel::receive(std::chrono::nanoseconds timeout) {
  return receive(timeout, spin_);
}

std::optional<SignalEvent> SignalChannel::receive(std::chrono::nanoseconds timeout, Spin spin) {
  check_fork();
  // Saturated: a timeout past the clock's range waits without a limit.
  const auto deadline = detail::deadline_after(timeout);
  if (auto event = backend_->try_receive()) return event;
  if (stopped_) return std::nullopt;
  if (spin.iterations > 0) {
    detail::signal_channel_race_point(detail::SignalChannelRacePoint::receive_spin_start, 0);
    // In chunks, so that a short timeout also ends the spin: one clock read
    // per 16 iterations is noise beside either mechanism's poll.
    constexpr std::uint32_t kChunk = 16;
    for (std::uint32_t left = spin.iterations; left > 0;) {
      const std::uint32_t chunk = std::min(left, kChunk);
      if (auto event = backend_->spin_receive(chunk)) return event;
      left -= chunk;
      if (detail::DeadlineClock::now() >= deadline) break;
    }
  }
  for (;;) {
    // Also what arms the handler mechanism's eventfd before the poll below.
    if (auto event = backend_->try_receive()) return event;
    if (stopped_) return std::nullopt;
    detail::signal_channel_race_point(detail::SignalChannelRacePoint::receive_before_sleep, 0);
    // -1 for no limit; capped at INT_MAX ms, so check the deadline after a
    // quiet poll rather than trusting that it has passed.
    const int wait_ms = detail::poll_timeout_ms(deadline);
    pollfd p{backend_->fd(), POLLIN, 0};
    const int rc = sys::poll(&p, 1, wait_ms);
    if (rc < 0 && errno != EINTR) sys::throw_errno("SignalChannel::receive: poll");
    if (rc == 0 && detail::DeadlineClock::now() >= deadline) return backend_->try_receive();
  }
}

std::size_t SignalChannel::dispatch(const std::function<void(const SignalEvent&)>& handler) {
  check_fork();
  std::size_t count = 0;
  while (auto event = backend_->try_receive()) {
    ++count;
    handler(*event);
  }
  return count;
}

void SignalChannel::stop() noexcept {
  if (stopped_) return;
  stopped_ = true;
  // In a forked child the parent's channel is inert: the fork hook already
  // put the dispositions back, and there is nothing of ours to undo.
  if (fork_generation_ != detail::fork_generation()) return;
  backend_->stop();
}

SignalChannelStats SignalChannel::stats() const noexcept {
  return backend_->stats();
}

}  // namespace doorbell
