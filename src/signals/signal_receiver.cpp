#include "doorbell/signal_receiver.h"

#include <poll.h>
#include <pthread.h>
#include <sched.h>
#include <sys/eventfd.h>
#include <sys/resource.h>
#include <sys/signalfd.h>
#include <time.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <exception>
#include <future>
#include <stdexcept>
#include <string>
#include <system_error>
#include <thread>

#include "doorbell/bell.h"
#include "doorbell/signal_channel.h"
#include "signals/signal_channel_backend.h"
#include "signals/signal_receiver_hooks.h"
#include "sys/error.h"
#include "sys/fd.h"
#include "sys/proc.h"
#include "sys/syscalls.h"
#include "sys/tgkill.h"

namespace doorbell {

namespace detail {
namespace {
// Test seam (signal_receiver_hooks.h). Relaxed: a test installs the hook
// before it provokes the race, and the hook synchronises on its own.
std::atomic<SignalReceiverHook> g_hook{nullptr};
}  // namespace

void set_signal_receiver_hook(SignalReceiverHook hook) noexcept {
  g_hook.store(hook, std::memory_order_relaxed);
}
}  // namespace detail

namespace {

void race_point(detail::SignalReceiverRacePoint point) noexcept {
  if (const detail::SignalReceiverHook hook = detail::g_hook.load(std::memory_order_relaxed))
    hook(point);
}

// One rule for the receiver and SignalChannel: refused_signal_reason().
void check_signal(int signo) {
  if (const char* why = refused_signal_reason(signo))
    throw std::invalid_argument("SignalReceiver: " + signal_name(signo) + " refused: " + why);
}

sigset_t make_set(const std::vector<int>& signals) {
  if (signals.empty()) throw std::invalid_argument("SignalReceiver: empty signal set");
  sigset_t set;
  sigemptyset(&set);
  for (const int signo : signals) {
    check_signal(signo);
    sigaddset(&set, signo);
  }
  return set;
}

// signalfd gives a signalfd_siginfo; callers get the same siginfo_t as from
// sigwaitinfo. The siginfo_t fields overlap in a union, so fill only the
// members that belong to the signal's kind.
siginfo_t to_siginfo(const signalfd_siginfo& in) {
  siginfo_t out;
  std::memset(&out, 0, sizeof out);
  out.si_signo = static_cast<int>(in.ssi_signo);
  out.si_errno = in.ssi_errno;
  out.si_code = in.ssi_code;
  if (in.ssi_code == SI_TIMER) {
    out.si_timerid = in.ssi_tid;
    out.si_overrun = static_cast<int>(in.ssi_overrun);
    out.si_value.sival_ptr = reinterpret_cast<void*>(static_cast<uintptr_t>(in.ssi_ptr));
    return out;
  }
  out.si_pid = static_cast<pid_t>(in.ssi_pid);
  out.si_uid = static_cast<uid_t>(in.ssi_uid);
  if (out.si_signo == SIGCHLD) {
    out.si_status = in.ssi_status;
  } else {
    // ssi_ptr carries the whole sigval (ssi_int is its low half).
    out.si_value.sival_ptr = reinterpret_cast<void*>(static_cast<uintptr_t>(in.ssi_ptr));
  }
  return out;
}

std::string rtprio_limit_text() {
  rlimit limit{};
  if (sys::getrlimit(RLIMIT_RTPRIO, &limit) != 0) return "unknown";
  if (limit.rlim_cur == RLIM_INFINITY) return "unlimited";
  return std::to_string(limit.rlim_cur);
}

// Sets the calling thread's mask back to one it had: pthread_sigmask() can
// fail only for a bad `how` (EINVAL), so a failure cannot happen and ends
// the process (sys::fatal).
void restore_mask_or_die(const sigset_t& previous) noexcept {
  if (const int rc = sys::pthread_sigmask(SIG_SETMASK, &previous, nullptr); rc != 0)
    sys::fatal("pthread_sigmask(restore)", rc);
}

}  // namespace

sigset_t block_signals_in_this_thread(const std::vector<int>& signals) {
  return block_signals_before_threads(signals);
}

void restore_signal_mask(const sigset_t& previous) {
  const int rc = sys::pthread_sigmask(SIG_SETMASK, &previous, nullptr);
  if (rc != 0) sys::throw_errno(rc, "pthread_sigmask(SIG_SETMASK)");
}

// ---------------------------------------------------------------- state

struct SignalReceiver::State {
  sigset_t set;
  // The signal of the set that stop() queues to the receiver thread as its
  // wake-up (sigwaitinfo method): the lowest real-time one when the set has
  // one (its siginfo is queued or refused, never dropped), else the first.
  int wake_signal = 0;
  Callback callback;
  Options options;
  Placement placement;
  std::thread thread;
  sys::UniqueFd signal_fd;  // Method::signalfd
  sys::UniqueFd stop_fd;    // Method::signalfd: an eventfd written by stop()
  // stopping: set by stop() before it wakes the thread; read by the thread
  // after each wake. release/acquire: nothing else is handed over by it, but
  // it keeps the flag's meaning simple ("stop() happened before").
  // Method::signalfd only.
  std::atomic<bool> stopping{false};
  // Method::sigwaitinfo: how far stop() has got with the wake-up. The
  // receiver thread exits only on its wake-up or once stop() is done sending
  // it (see run_sigwaitinfo), so it is alive, and its TID is its own,
  // whenever stop() sends.
  //
  //   stage     set by                        the thread waits with
  //   running   the constructor               sigwaitinfo (no limit)
  //   sending   stop(), before the first try  sigtimedwait, 1 ms, in a loop
  //   sent      stop(), after the wake-up     sigtimedwait, no wait, once
  //             was queued                    (then it exits)
  //
  // release/acquire: a thread that reads `sent` sees the queued wake-up in
  // its pending set (the kernel's siglock orders the rest).
  enum Stage : int { running, sending, sent };
  std::atomic<int> stage{running};
  std::atomic<uint64_t> received{0};
  bool joined = false;
  // The fork generation the receiver was made in (the fork hooks that
  // SignalChannel uses, signal_channel_backend.h): in a forked child the
  // receiver thread and the state it shares with the parent (the eventfd,
  // the thread's TID) are the parent's, and the object is inert.
  std::uint64_t fork_generation = 0;

  void place(std::string& fatal_error);
  void run_sigwaitinfo();
  void run_signalfd();
  bool is_stop_marker(const siginfo_t& info) const noexcept {
    return info.si_code == SI_QUEUE && info.si_pid == ::getpid() &&
           info.si_value.sival_ptr == static_cast<const void*>(this);
  }
  void dispatch(const siginfo_t& info) {
    received.fetch_add(1, std::memory_order_relaxed);
    if (callback) callback(info);
    if (options.bell != nullptr) options.bell->ring();
  }
};

// Runs on the receiver thread before it starts waiting.
void SignalReceiver::State::place(std::string& fatal_error) {
  placement.tid = sys::current_tid();
  std::string warning;
  if (options.fifo_priority > 0) {
    sched_param param{};
    param.sched_priority = options.fifo_priority;
    const int rc = sys::pthread_setschedparam(::pthread_self(), SCHED_FIFO, &param);
    if (rc == 0) {
      placement.fifo = true;
      placement.priority = options.fifo_priority;
    } else {
      warning += "SCHED_FIFO priority " + std::to_string(options.fifo_priority) + " refused (" +
                 std::strerror(rc) + "; it needs CAP_SYS_NICE or RLIMIT_RTPRIO >= the priority, " +
                 "RLIMIT_RTPRIO is " + rtprio_limit_text() +
                 "): the receiver runs at SCHED_OTHER, so its delay depends on the fair "
                 "scheduler (milliseconds under load instead of microseconds). ";
      if (options.require_fifo) fatal_error = warning;
    }
  }
  if (options.cpu >= 0) {
    cpu_set_t cpus;
    CPU_ZERO(&cpus);
    if (options.cpu < CPU_SETSIZE) CPU_SET(options.cpu, &cpus);
    const int rc = options.cpu < CPU_SETSIZE
                       ? sys::pthread_setaffinity_np(::pthread_self(), sizeof cpus, &cpus)
                       : EINVAL;
    if (rc == 0) {
      placement.cpu = options.cpu;
    } else {
      const std::string why = "pinning to CPU " + std::to_string(options.cpu) + " refused (" +
                              std::strerror(rc) +
                              "; not in the allowed set?): the receiver is not pinned. ";
      warning += why;
      if (options.require_fifo && fatal_error.empty()) fatal_error = why;
    }
  }
  if (!warning.empty()) {
    warning.pop_back();  // the trailing space
    placement.warning = "doorbell::SignalReceiver: " + warning;
  }
}

// The thread must not exit before stop() has sent its wake-up: stop()
// queues it to this thread's TID, which would be gone (ESRCH) or, worse,
// reused by another thread. So a real signal that arrives after stop()
// began is dispatched like any other, and the thread leaves only when it
// dequeues its wake-up or, once stop() is done sending (`sent`), finds
// nothing more to take at once. Thread-directed signals are dequeued before
// process-directed ones, so a queued wake-up is the next thing it takes;
// the no-wait look catches the case where the wake-up was merged away (a
// standard signal already pending on this thread from someone else's
// tgkill). Either way the wake-up never outlives the thread in a place
// where anyone else could take it.
void SignalReceiver::State::run_sigwaitinfo() {
  for (;;) {
    race_point(detail::SignalReceiverRacePoint::receiver_waiting);
    const int seen = stage.load(std::memory_order_acquire);
    siginfo_t info;
    int signo;
    if (seen == running) {
      signo = sys::sigwaitinfo(&set, &info);
    } else {
      // sending: stop() is between announcing itself and queueing the
      // wake-up (or retrying it, see stop()); look again every millisecond
      // in case it gets merged away. sent: one look, no wait.
      const timespec limit{0, seen == sending ? 1000000L : 0L};
      signo = sys::sigtimedwait(&set, &info, &limit);
    }
    if (signo < 0) {
      if (errno == EINTR) continue;  // a handled signal outside the set interrupted the wait
      if (errno == EAGAIN && seen != running) {
        if (seen == sent) break;  // nothing pending: the wake-up was merged away
        continue;
      }
      sys::fatal(seen == running ? "sigwaitinfo" : "sigtimedwait", errno);
    }
    if (is_stop_marker(info)) break;
    dispatch(info);
    // After `sent`, a real signal came out before the wake-up: only a
    // thread-directed one of lower number can (or the wake-up was merged
    // away); leave anyway, the wake-up dies with this thread.
    if (seen == sent) break;
  }
  race_point(detail::SignalReceiverRacePoint::receiver_leaving);
}

void SignalReceiver::State::run_signalfd() {
  pollfd fds[2] = {{signal_fd.get(), POLLIN, 0}, {stop_fd.get(), POLLIN, 0}};
  for (;;) {
    const int ready = sys::poll(fds, 2, -1);
    if (ready < 0) {
      if (errno == EINTR) continue;
      sys::fatal("poll(signalfd)", errno);
    }
    if (stopping.load(std::memory_order_acquire)) return;
    signalfd_siginfo batch[16];
    for (;;) {
      const ssize_t n = sys::read(signal_fd.get(), batch, sizeof batch);
      if (n < 0) {
        if (errno == EINTR) continue;
        if (errno == EAGAIN) break;  // drained
        sys::fatal("read(signalfd)", errno);
      }
      const auto count = static_cast<std::size_t>(n) / sizeof(signalfd_siginfo);
      for (std::size_t i = 0; i < count; ++i) dispatch(to_siginfo(batch[i]));
      if (count < std::size(batch)) break;
    }
  }
}

// ---------------------------------------------------------------- SignalReceiver

SignalReceiver::SignalReceiver(const std::vector<int>& signals, Callback callback)
    : SignalReceiver(signals, std::move(callback), Options{}) {}

SignalReceiver::SignalReceiver(const std::vector<int>& signals, Callback callback, Options options)
    : state_(std::make_unique<State>()) {
  State& s = *state_;
  detail::install_fork_hooks();
  s.fork_generation = detail::fork_generation();
  s.set = make_set(signals);
  s.wake_signal = signals.front();
  for (const int signo : signals) {
    if (signo >= SIGRTMIN && (s.wake_signal < SIGRTMIN || signo < s.wake_signal))
      s.wake_signal = signo;
  }
  if (!callback && options.bell == nullptr)
    throw std::invalid_argument("SignalReceiver: no callback and no bell");
  if (options.fifo_priority < 0 || options.fifo_priority > 99)
    throw std::invalid_argument("SignalReceiver: fifo_priority must be 0..99, got " +
                                std::to_string(options.fifo_priority));
  if (options.cpu < -1)
    throw std::invalid_argument("SignalReceiver: cpu must be -1 or a CPU number, got " +
                                std::to_string(options.cpu));
  s.callback = std::move(callback);
  s.options = options;

  if (options.method == Method::signalfd) {
    const int sfd = sys::signalfd(-1, &s.set, SFD_NONBLOCK | SFD_CLOEXEC);
    if (sfd < 0) sys::throw_errno("signalfd");
    s.signal_fd.reset(sfd);
    const int efd = sys::eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
    if (efd < 0) sys::throw_errno("eventfd");
    s.stop_fd.reset(efd);
  }

  // The new thread inherits the creating thread's mask: block the set around
  // the creation so the receiver never runs a single instruction with it
  // unblocked (sigwaitinfo and signalfd both want it blocked).
  const sigset_t previous = block_signals_in_this_thread(signals);
  std::promise<std::string> placed;
  std::future<std::string> placed_result = placed.get_future();
  try {
    if (const int error = sys::thread_create_fails())
      throw std::system_error(error, std::generic_category(), "SignalReceiver: std::thread");
    s.thread = std::thread([&s, &placed] {
      std::string fatal_error;
      s.place(fatal_error);
      const bool go = fatal_error.empty();
      placed.set_value(std::move(fatal_error));  // `placed` must not be touched after this
      if (!go) return;
      if (s.options.method == Method::signalfd)
        s.run_signalfd();
      else
        s.run_sigwaitinfo();
    });
  } catch (...) {
    restore_mask_or_die(previous);
    throw;
  }
  // Not restore_signal_mask(), which throws: with the thread started, an
  // exception here would destroy a joinable std::thread (std::terminate).
  restore_mask_or_die(previous);
  const std::string fatal_error = placed_result.get();
  if (!fatal_error.empty()) {
    s.thread.join();
    s.joined = true;
    throw std::system_error(EPERM, std::generic_category(), fatal_error);
  }
  if (!s.placement.warning.empty() && options.warn_on_stderr) {
    const std::string line = s.placement.warning + "\n";
    sys::write_stderr(line.c_str());
  }
}

SignalReceiver::~SignalReceiver() {
  stop();
}

namespace {
// The std::thread objects of receivers stopped in forked children (see
// SignalReceiver::stop()): never joined nor destroyed, linked from here so
// that they stay reachable (leak checkers).
struct AbandonedThread {
  std::thread thread;
  AbandonedThread* next = nullptr;
};
std::atomic<AbandonedThread*> g_abandoned_threads{nullptr};
}  // namespace

void SignalReceiver::stop() {
  State& s = *state_;
  if (s.joined) return;
  if (s.fork_generation != detail::fork_generation()) {
    // A forked child: the receiver thread does not exist here, and its TID
    // and the eventfd are the parent's. Waking it would signal a thread of
    // another process (ESRCH) or wake the parent's thread with no stop
    // behind it (it would spin); joining or destroying the std::thread
    // object would act on a thread the C library no longer knows. So the
    // child's copies of the descriptors are closed (with the State, as
    // ever) and the std::thread object is set aside, untouched.
    auto* abandoned = new AbandonedThread{std::move(s.thread)};
    abandoned->next = g_abandoned_threads.load(std::memory_order_relaxed);
    while (!g_abandoned_threads.compare_exchange_weak(abandoned->next, abandoned,
                                                      std::memory_order_relaxed)) {
    }
    s.joined = true;
    return;
  }
  if (s.options.method == Method::signalfd) {
    s.stopping.store(true, std::memory_order_release);
    const uint64_t one = 1;
    // The one write to a non-blocking eventfd cannot fail; if it did, the
    // thread would never wake and the join below would hang for ever.
    ssize_t n;
    do n = sys::eventfd_write(s.stop_fd.get(), one);
    while (n < 0 && errno == EINTR);
    if (n < 0) sys::fatal("SignalReceiver::stop: eventfd write", errno);
  } else {
    // Wake sigwaitinfo with a thread-directed instance of a signal of the set,
    // marked with this State's address, which the loop recognises and
    // consumes. The thread stays alive until this is sent (run_sigwaitinfo),
    // whatever else wakes it meanwhile.
    s.stage.store(State::sending, std::memory_order_release);
    siginfo_t info;
    std::memset(&info, 0, sizeof info);
    info.si_signo = s.wake_signal;
    info.si_code = SI_QUEUE;
    info.si_pid = ::getpid();
    info.si_uid = ::getuid();
    info.si_value.sival_ptr = static_cast<void*>(&s);
    race_point(detail::SignalReceiverRacePoint::stop_before_wake);
    // The receiver thread is ours and alive until `sent` (run_sigwaitinfo):
    // neither ESRCH nor EPERM can come back for it (fault injection: the
    // abort below is the documented "cannot happen").
    const sys::fault::ImpossibleHere impossible(ESRCH, EPERM);
    for (;;) {
      const int rc = sys::rt_tgsigqueueinfo(::getpid(), s.placement.tid, s.wake_signal, &info);
      if (rc == 0) break;
      // EAGAIN: a real-time wake-up and the user's queue of real-time
      // signals is full (RLIMIT_SIGPENDING, shared by every process of the
      // user). The thread may be asleep with nothing of ours pending, so
      // only the wake-up can end it: try again until a slot frees. ESRCH
      // cannot happen: the thread does not exit before `sent`.
      if (rc != -EAGAIN) sys::fatal("rt_tgsigqueueinfo(stop receiver)", -rc);
      const timespec pause{0, 1000000L};
      sys::nanosleep(&pause, nullptr);
    }
    s.stage.store(State::sent, std::memory_order_release);
  }
  s.thread.join();
  s.joined = true;
}

uint64_t SignalReceiver::received() const noexcept {
  return state_->received.load(std::memory_order_relaxed);
}

const SignalReceiver::Placement& SignalReceiver::placement() const noexcept {
  return state_->placement;
}

std::vector<pid_t> SignalReceiver::verify() const {
  const State& s = *state_;
  std::vector<pid_t> offenders;
  const pid_t self = ::getpid();
  for (const pid_t tid : sys::list_threads(self)) {
    if (tid == s.placement.tid) continue;
    const auto state = sys::read_thread_signal_state(self, tid);
    if (!state) continue;  // exited since the listing
    for (int signo = 1; signo < NSIG; ++signo) {
      if (sigismember(&s.set, signo) == 1 && sigismember(&state->blocked, signo) != 1) {
        offenders.push_back(tid);
        break;
      }
    }
  }
  return offenders;
}

}  // namespace doorbell
