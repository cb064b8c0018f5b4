#include "lab/scenarios/wakeup_channels.h"

#include <liburing.h>
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <sys/mman.h>
#include <sys/signalfd.h>
#include <unistd.h>

#include <atomic>
#include <boost/atomic/ipc_atomic.hpp>
#include <cerrno>
#include <climits>
#include <condition_variable>
#include <cstring>
#include <mutex>
#include <new>
#include <semaphore>
#include <stdexcept>

#include "doorbell/bell.h"
#include "doorbell/event_loop.h"
#include "doorbell/event_notifier.h"
#include "lab/common/time.h"
#include "lab/harness/scenario.h"
#include "sys/error.h"
#include "sys/fd.h"
#include "sys/futex.h"
#include "sys/tgkill.h"

namespace doorbell::lab::wakeup {
namespace {

void write_all(int fd, const void* data, size_t n, const char* what) {
  ssize_t rc;
  do {
    rc = ::write(fd, data, n);
  } while (rc < 0 && errno == EINTR);
  if (rc != static_cast<ssize_t>(n)) sys::fatal(what, errno);
}

void read_some(int fd, void* data, size_t n, const char* what) {
  ssize_t rc;
  do {
    rc = ::read(fd, data, n);
  } while (rc < 0 && errno == EINTR);
  if (rc <= 0) sys::fatal(what, errno);
}

int signal_of(int direction) {
  return direction == 0 ? SIGUSR1 : SIGUSR2;
}

// --- fds
// ----------------------------------------------------------------------

class EventfdChannel : public Channel {
 public:
  explicit EventfdChannel(bool epoll) : epoll_(epoll) {
    fd_.reset(::eventfd(0, EFD_CLOEXEC | (epoll ? EFD_NONBLOCK : 0)));
    if (!fd_) sys::throw_errno("eventfd");
    if (epoll) {
      ep_.reset(::epoll_create1(EPOLL_CLOEXEC));
      if (!ep_) sys::throw_errno("epoll_create1");
      epoll_event ev{};
      ev.events = EPOLLIN;
      if (::epoll_ctl(ep_.get(), EPOLL_CTL_ADD, fd_.get(), &ev) != 0) sys::throw_errno("epoll_ctl");
    }
  }
  void send() override {
    const uint64_t one = 1;
    write_all(fd_.get(), &one, sizeof one, "eventfd write");
  }
  void rescue() override {
    const uint64_t one = 1;
    (void)!::write(fd_.get(), &one, sizeof one);
  }
  void recv() override {
    uint64_t value;
    if (!epoll_) return read_some(fd_.get(), &value, sizeof value, "eventfd read");
    for (;;) {
      epoll_event ev;
      int n;
      do {
        n = ::epoll_wait(ep_.get(), &ev, 1, -1);
      } while (n < 0 && errno == EINTR);
      if (n < 0) sys::fatal("epoll_wait", errno);
      if (::read(fd_.get(), &value, sizeof value) == sizeof value) return;
    }
  }

 private:
  bool epoll_;
  sys::UniqueFd fd_, ep_;
};

class PipeChannel : public Channel {
 public:
  PipeChannel() {
    int fds[2];
    if (::pipe2(fds, O_CLOEXEC) != 0) sys::throw_errno("pipe2");
    r_.reset(fds[0]);
    w_.reset(fds[1]);
  }
  void send() override { write_all(w_.get(), "x", 1, "pipe write"); }
  void rescue() override { (void)!::write(w_.get(), "x", 1); }
  void recv() override {
    char c;
    read_some(r_.get(), &c, 1, "pipe read");
  }

 private:
  sys::UniqueFd r_, w_;
};

// --- words
// ----------------------------------------------------------------------

// The textbook futex flag: send stores 1 and always calls FUTEX_WAKE; recv
// takes the flag or sleeps on it.
class FutexChannel : public Channel {
 public:
  FutexChannel(std::atomic<uint32_t>* word, sys::FutexScope scope) : word_(word), scope_(scope) {}
  void send() override {
    word_->store(1, std::memory_order_release);
    sys::futex_wake(reinterpret_cast<uint32_t*>(word_), 1, scope_);
  }
  void rescue() override {
    word_->store(1, std::memory_order_seq_cst);
    sys::futex_wake(reinterpret_cast<uint32_t*>(word_), INT_MAX, scope_);
  }
  void recv() override {
    while (word_->exchange(0, std::memory_order_acquire) == 0)
      sys::futex_wait(reinterpret_cast<uint32_t*>(word_), 0, nullptr, scope_);
  }

 private:
  std::atomic<uint32_t>* word_;
  sys::FutexScope scope_;
};

class BellChannel : public Channel {
 public:
  BellChannel(Bell* bell, uint32_t spin) : bell_(bell), spin_{spin} {}
  void send() override { bell_->ring(); }
  void recv() override { bell_->wait(spin_); }
  void rescue() override { bell_->ring(); }

 private:
  Bell* bell_;
  Bell::Spin spin_;
};

class BusyPollChannel : public Channel {
 public:
  explicit BusyPollChannel(std::atomic<uint32_t>* word) : word_(word) {}
  void send() override { word_->store(1, std::memory_order_release); }
  void rescue() override { word_->store(1, std::memory_order_release); }
  void recv() override {
    for (uint32_t spins = 1;; ++spins) {
      if (word_->load(std::memory_order_relaxed) != 0 &&
          word_->exchange(0, std::memory_order_acquire) != 0)
        return;
      cpu_relax();
      // Yield now and then, so that a peer on the same CPU can run at all
      // (cross-core, 4096 pauses are far longer than any answer).
      if ((spins & 4095) == 0) sched_yield();
    }
  }

 private:
  std::atomic<uint32_t>* word_;
};

class CondvarChannel : public Channel {
 public:
  void send() override {
    {
      std::lock_guard<std::mutex> lock(mutex_);
      flag_ = true;
    }
    cv_.notify_one();
  }
  void rescue() override {
    {
      std::lock_guard<std::mutex> lock(mutex_);
      flag_ = true;
    }
    cv_.notify_all();
  }
  void recv() override {
    std::unique_lock<std::mutex> lock(mutex_);
    cv_.wait(lock, [this] { return flag_; });
    flag_ = false;
  }

 private:
  std::mutex mutex_;
  std::condition_variable cv_;
  bool flag_ = false;
};

// std::atomic::wait as users call it, with the one change libstdc++ 12
// needs: a seq_cst store before notify_one(). By the standard a release
// store is enough ([atomics.wait]: a store that happens before the notify
// makes the blocked waiter eligible), but libstdc++ 12's notify_one() reads
// its waiter count with a plain load and skips FUTEX_WAKE when it reads 0;
// x86 lets that load pass a release store (the store-buffer pattern), so the
// notifier can miss a waiter that is already counted and asleep on the old
// value. This row hung the main job that way (10 minutes, until a debugger
// interrupted the futex wait): 31 hangs in 2.2 M rounds with the release
// store, none in 1.5 M with the seq_cst store (its xchg is a full barrier).
// The same class was fixed in libc++ (llvm-project #109290) and musl.
class AtomicWaitChannel : public Channel {
 public:
  void send() override {
    word_.store(1, std::memory_order_seq_cst);
    word_.notify_one();
  }
  void rescue() override {
    word_.store(1, std::memory_order_seq_cst);
    word_.notify_all();
  }
  void recv() override {
    while (word_.exchange(0, std::memory_order_acquire) == 0) word_.wait(0);
  }

 private:
  std::atomic<uint32_t> word_{0};
};

// std::binary_semaphore: release() beyond 1 is undefined, so send() only
// releases when the receiver has not been released yet (the flag makes the
// semaphore coalesce like the others instead).
class SemaphoreChannel : public Channel {
 public:
  void send() override {
    if (!posted_.exchange(true, std::memory_order_acq_rel)) sem_.release();
  }
  // With the flag cleared by an RMW (below), a send() that comes after the
  // receiver cleared it always releases: one more send wakes it.
  void rescue() override { send(); }
  void recv() override {
    sem_.acquire();
    // An RMW, not a plain store: the receiver then loads round_flag, while
    // the sender stores round_flag and then exchanges this flag. With a
    // plain store, x86 lets the receiver's load of round_flag pass its store
    // here (the store-buffer pattern): the sender reads the flag still set
    // and does not release, the receiver missed round_flag and sleeps, and
    // the round's last send is absorbed and never acknowledged (7 hangs in
    // 30 runs of the row alone). exchange is a locked instruction, a full
    // barrier on x86, and acq_rel orders it with both sides in the C++ model.
    posted_.exchange(false, std::memory_order_acq_rel);
  }

 private:
  std::binary_semaphore sem_{0};
  std::atomic<bool> posted_{false};
};

class IpcAtomicChannel : public Channel {
 public:
  using Word = boost::atomics::ipc_atomic<uint32_t>;
  explicit IpcAtomicChannel(Word* word) : word_(word) {}
  void send() override {
    word_->store(1, boost::memory_order_release);
    word_->notify_one();
  }
  void rescue() override {
    word_->store(1, boost::memory_order_seq_cst);
    word_->notify_all();
  }
  void recv() override {
    while (word_->exchange(0, boost::memory_order_acquire) == 0) word_->wait(0);
  }

 private:
  Word* word_;
};

class NotifierLoopChannel : public Channel {
 public:
  NotifierLoopChannel() = default;
  void attach_receiver() override {
    loop_ = std::make_unique<EventLoop>();
    loop_->add(notifier_.fd(), EventLoop::kReadable,
               [this](uint32_t) { got_ = notifier_.consume(true) || got_; });
  }
  void send() override { notifier_.notify(); }
  void rescue() override { notifier_.notify(); }
  void recv() override {
    for (;;) {
      if (!notifier_.arm()) {
        notifier_.consume(false);
        return;
      }
      got_ = false;
      loop_->run_once();
      if (got_) return;
    }
  }

 private:
  EventNotifier notifier_;
  std::unique_ptr<EventLoop> loop_;
  bool got_ = false;
};

// --- signals
// --------------------------------------------------------------------

volatile sig_atomic_t g_handled[2];
void on_signal(int signo) {
  g_handled[signo == SIGUSR1 ? 0 : 1] = 1;
}

class SignalChannel : public Channel {
 public:
  enum class Receive { handler, sigwaitinfo, signalfd };
  SignalChannel(Receive how, int direction, Where where)
      : how_(how), signo_(signal_of(direction)), index_(direction), where_(where) {}
  void set_target(pid_t pid, pid_t tid) override {
    pid_ = pid;
    tid_ = tid;
  }
  void attach_receiver() override {
    if (how_ == Receive::signalfd) {
      sigset_t set;
      sigemptyset(&set);
      sigaddset(&set, signo_);
      fd_.reset(::signalfd(-1, &set, SFD_CLOEXEC));
      if (!fd_) sys::throw_errno("signalfd");
    }
    pthread_sigmask(SIG_SETMASK, nullptr, &suspend_mask_);
    sigdelset(&suspend_mask_, signo_);
  }
  void send() override {
    // Thread-directed within a process (pthread_kill is tgkill), process-
    // directed across processes (kill).
    if (where_ == Where::threads) {
      const int rc = sys::tgkill(pid_, tid_, signo_);
      if (rc != 0) sys::fatal("signal send", -rc);
    } else if (::kill(pid_, signo_) != 0) {
      sys::fatal("signal send", errno);
    }
  }
  void rescue() override {
    if (where_ == Where::threads)
      (void)sys::tgkill(pid_, tid_, signo_);
    else
      (void)::kill(pid_, signo_);
  }
  void recv() override {
    switch (how_) {
      case Receive::handler:
        while (!g_handled[index_]) ::sigsuspend(&suspend_mask_);
        g_handled[index_] = 0;
        return;
      case Receive::sigwaitinfo: {
        sigset_t set;
        sigemptyset(&set);
        sigaddset(&set, signo_);
        while (::sigwaitinfo(&set, nullptr) < 0) {
          if (errno != EINTR) sys::fatal("sigwaitinfo", errno);
        }
        return;
      }
      case Receive::signalfd: {
        signalfd_siginfo info;
        read_some(fd_.get(), &info, sizeof info, "signalfd read");
        return;
      }
    }
  }

 private:
  Receive how_;
  int signo_;
  int index_;
  Where where_;
  pid_t pid_ = 0, tid_ = 0;
  sys::UniqueFd fd_;
  sigset_t suspend_mask_;
};

// --- io_uring
// -------------------------------------------------------------------

// IORING_OP_MSG_RING: the sender posts a completion straight into the
// receiver's ring. Each direction owns one ring (the receiver's); the
// sender needs a ring to submit from, so each side also owns a send ring.
class MsgRingChannel : public Channel {
 public:
  MsgRingChannel() {
    if (int rc = io_uring_queue_init(8, &recv_ring_, 0); rc < 0)
      throw SkipScenario("io_uring_queue_init: " + std::string(strerror(-rc)));
    if (int rc = io_uring_queue_init(8, &send_ring_, 0); rc < 0) {
      io_uring_queue_exit(&recv_ring_);
      throw SkipScenario("io_uring_queue_init: " + std::string(strerror(-rc)));
    }
    // rescue() submits from a thread of its own: a ring of its own.
    if (int rc = io_uring_queue_init(8, &rescue_ring_, 0); rc < 0) {
      io_uring_queue_exit(&recv_ring_);
      io_uring_queue_exit(&send_ring_);
      throw SkipScenario("io_uring_queue_init: " + std::string(strerror(-rc)));
    }
    // Probe: one message to ourselves, to turn "not allowed here" into a
    // skip (IORING_OP_MSG_RING needs Linux 5.18; seccomp or
    // io_uring_disabled may refuse it).
    io_uring_sqe* sqe = io_uring_get_sqe(&send_ring_);
    io_uring_prep_msg_ring(sqe, recv_ring_.ring_fd, 0, 1, 0);
    io_uring_submit(&send_ring_);
    io_uring_cqe* cqe = nullptr;
    const int rc = io_uring_wait_cqe(&send_ring_, &cqe);
    const int res = rc < 0 ? rc : cqe->res;
    if (rc == 0) io_uring_cqe_seen(&send_ring_, cqe);
    if (res < 0) {
      io_uring_queue_exit(&recv_ring_);
      io_uring_queue_exit(&send_ring_);
      io_uring_queue_exit(&rescue_ring_);
      throw SkipScenario("IORING_OP_MSG_RING refused: " + std::string(strerror(-res)));
    }
    recv();
  }
  ~MsgRingChannel() override {
    io_uring_queue_exit(&recv_ring_);
    io_uring_queue_exit(&send_ring_);
    io_uring_queue_exit(&rescue_ring_);
  }
  void rescue() override {
    std::lock_guard<std::mutex> lock(rescue_mutex_);
    io_uring_sqe* sqe = io_uring_get_sqe(&rescue_ring_);
    if (sqe == nullptr) return;
    io_uring_prep_msg_ring(sqe, recv_ring_.ring_fd, 0, 1, 0);
    io_uring_sqe_set_flags(sqe, IOSQE_CQE_SKIP_SUCCESS);
    (void)io_uring_submit(&rescue_ring_);
  }
  void send() override {
    io_uring_sqe* sqe = io_uring_get_sqe(&send_ring_);
    if (!sqe) sys::fatal("io_uring_get_sqe");
    io_uring_prep_msg_ring(sqe, recv_ring_.ring_fd, 0, 1, 0);
    // Reap our own completions of earlier sends so the CQ never fills.
    io_uring_sqe_set_flags(sqe, IOSQE_CQE_SKIP_SUCCESS);
    int rc;
    do {
      rc = io_uring_submit(&send_ring_);
    } while (rc == -EINTR);
    if (rc < 0) sys::fatal("io_uring_submit", -rc);
  }
  void recv() override {
    io_uring_cqe* cqe = nullptr;
    int rc;
    do {
      rc = io_uring_wait_cqe(&recv_ring_, &cqe);
    } while (rc == -EINTR);
    if (rc < 0) sys::fatal("io_uring_wait_cqe", -rc);
    io_uring_cqe_seen(&recv_ring_, cqe);
  }

 private:
  io_uring recv_ring_{}, send_ring_{}, rescue_ring_{};
  std::mutex rescue_mutex_;
};

}  // namespace

SharedArena::SharedArena(std::size_t bytes) : size(bytes) {
  void* p = ::mmap(nullptr, bytes, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
  if (p == MAP_FAILED) sys::throw_errno("mmap shared arena");
  base = static_cast<unsigned char*>(p);
}
SharedArena::~SharedArena() {
  ::munmap(base, size);
}
void* SharedArena::take(std::size_t bytes, std::size_t align) {
  used = (used + align - 1) / align * align;
  if (used + bytes > size) throw std::length_error("shared arena full");
  void* p = base + used;
  used += bytes;
  return p;
}

const std::vector<MethodInfo>& methods() {
  static const std::vector<MethodInfo> all = {
      {"signal_handler", "pthread_kill/kill + handler (sigsuspend)", true, false},
      {"sigwaitinfo", "pthread_kill/kill + sigwaitinfo", true, true},
      {"signalfd", "pthread_kill + signalfd read", true, false},
      {"eventfd", "eventfd, blocking read", true, true},
      {"eventfd_epoll", "eventfd via epoll_wait", true, false},
      {"pipe", "pipe, 1 byte", true, true},
      {"futex", "raw futex (store + FUTEX_WAKE always)", true, true},
      {"condvar", "std::condition_variable", true, false},
      {"atomic_wait",
       "std::atomic::wait/notify_one, seq_cst store before the notify "
       "(libstdc++ 12 loses "
       "wake-ups after a release store; it spins, yields, then sleeps)",
       true, false},
      {"binary_semaphore", "std::binary_semaphore (on atomic::wait: spins first)", true, false},
      {"bell", "Bell, no spin", true, true},
      {"bell_spin", "Bell, spin 4000 pauses", true, true},
      {"notifier_loop", "EventNotifier via EventLoop", true, false},
      {"ipc_atomic", "Boost.Atomic ipc_atomic wait/notify", false, true},
      {"msg_ring", "io_uring IORING_OP_MSG_RING", false, true},
      {"busy_poll", "busy-poll on an atomic flag (floor)", true, true},
  };
  return all;
}

constexpr uint32_t kBellSpin = 4000;

std::unique_ptr<Channel> make_channel(const std::string& method, Where where, int direction,
                                      SharedArena& arena) {
  const bool proc = where == Where::processes;
  auto word = [&] {
    return new (arena.take(sizeof(std::atomic<uint32_t>))) std::atomic<uint32_t>(0);
  };
  if (method == "signal_handler")
    return std::make_unique<SignalChannel>(SignalChannel::Receive::handler, direction, where);
  if (method == "sigwaitinfo")
    return std::make_unique<SignalChannel>(SignalChannel::Receive::sigwaitinfo, direction, where);
  if (method == "signalfd")
    return std::make_unique<SignalChannel>(SignalChannel::Receive::signalfd, direction, where);
  if (method == "eventfd") return std::make_unique<EventfdChannel>(false);
  if (method == "eventfd_epoll") return std::make_unique<EventfdChannel>(true);
  if (method == "pipe") return std::make_unique<PipeChannel>();
  if (method == "futex")
    return std::make_unique<FutexChannel>(
        word(), proc ? sys::FutexScope::shared : sys::FutexScope::process_private);
  if (method == "condvar") return std::make_unique<CondvarChannel>();
  if (method == "atomic_wait") return std::make_unique<AtomicWaitChannel>();
  if (method == "binary_semaphore") return std::make_unique<SemaphoreChannel>();
  if (method == "bell" || method == "bell_spin") {
    Bell* bell = Bell::create_at(arena.take(sizeof(Bell)),
                                 proc ? Bell::Scope::shared : Bell::Scope::process_private);
    return std::make_unique<BellChannel>(bell, method == "bell_spin" ? kBellSpin : 0);
  }
  if (method == "notifier_loop") return std::make_unique<NotifierLoopChannel>();
  if (method == "ipc_atomic") {
    using Word = IpcAtomicChannel::Word;
    if (!Word::always_has_native_wait_notify)
      throw SkipScenario("Boost ipc_atomic has no native wait/notify here");
    return std::make_unique<IpcAtomicChannel>(new (arena.take(sizeof(Word))) Word(0));
  }
  if (method == "msg_ring") return std::make_unique<MsgRingChannel>();
  if (method == "busy_poll") return std::make_unique<BusyPollChannel>(word());
  throw std::invalid_argument("unknown wake-up method " + method);
}

MethodEnvironment::MethodEnvironment(const std::string& method) {
  if (method != "signal_handler" && method != "sigwaitinfo" && method != "signalfd") return;
  // Block both signals on this thread; peers started afterwards inherit it.
  blocked_.emplace(SIG_BLOCK, std::initializer_list<int>{SIGUSR1, SIGUSR2});
  if (method == "signal_handler") {
    usr1_.emplace(SIGUSR1, on_signal, 0);
    usr2_.emplace(SIGUSR2, on_signal, 0);
    g_handled[0] = 0;
    g_handled[1] = 0;
  }
}

MethodEnvironment::~MethodEnvironment() {
  if (!blocked_) return;
  // Take what a stop message may have left pending; the members then
  // restore the dispositions and the mask.
  drain_pending(SIGUSR1);
  drain_pending(SIGUSR2);
}

}  // namespace doorbell::lab::wakeup
