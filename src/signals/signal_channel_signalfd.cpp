// The signalfd mechanism: the kernel queues the signals (they are blocked in
// every thread) and signalfd(2) reads them with their siginfo. Nothing runs
// in a handler and nothing of the process's signal state changes.
//
// One read(2) per event, so that fd() stays readable exactly while the
// kernel holds a signal for us. stop() moves what the kernel still holds
// into a local buffer (those arrived before stop) and then empties the
// signalfd's mask: later signals stay pending in the kernel, blocked, for
// whatever the caller does with its mask.
#include <sys/signalfd.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <deque>

#include "signals/signal_channel_backend.h"
#include "sys/error.h"
#include "sys/fd.h"
#include "sys/syscalls.h"

namespace doorbell::detail {
namespace {

class SignalfdBackend final : public SignalBackend {
 public:
  explicit SignalfdBackend(const std::vector<int>& signals) {
    if (const std::string problem = check_blocked_in_every_thread(signals); !problem.empty()) {
      throw std::invalid_argument(
          "SignalChannel (signalfd mechanism): " + problem +
          "; block the signals before starting threads "
          "(doorbell::block_signals_before_threads), or use the handler mechanism");
    }
    sigset_t set;
    sigemptyset(&set);
    for (const int signo : signals) sigaddset(&set, signo);
    fd_.reset(sys::signalfd(-1, &set, SFD_NONBLOCK | SFD_CLOEXEC));
    if (!fd_) sys::throw_errno("SignalChannel: signalfd");
  }

  int fd() const noexcept override { return fd_.get(); }
  SignalMechanism mechanism() const noexcept override { return SignalMechanism::signalfd; }

  std::optional<SignalEvent> try_receive() noexcept override {
    if (!stopped_.empty()) {
      SignalEvent event = stopped_.front();
      stopped_.pop_front();
      events_.fetch_add(1, std::memory_order_relaxed);
      return event;
    }
    if (is_stopped_) return std::nullopt;
    SignalEvent event;
    if (!read_one(event)) return std::nullopt;
    events_.fetch_add(1, std::memory_order_relaxed);
    return event;
  }

  // The pending signals live in the kernel: the only way to look is a
  // syscall, and a non-blocking read(2) is one that also takes the event
  // (sigpending(2) costs the same and would need a read after it).
  std::optional<SignalEvent> spin_receive(std::uint32_t iterations) noexcept override {
    for (std::uint32_t i = 0; i < iterations; ++i) {
      if (auto event = try_receive()) return event;
    }
    return std::nullopt;
  }

  void stop() noexcept override {
    if (is_stopped_) return;
    SignalEvent event;
    while (read_one(event)) stopped_.push_back(event);
    sigset_t none;
    sigemptyset(&none);
    if (sys::signalfd(fd_.get(), &none, 0) < 0) sys::fatal("signalfd(empty mask)", errno);
    is_stopped_ = true;
  }

  SignalChannelStats stats() const noexcept override {
    const auto n = signals_.load(std::memory_order_relaxed);
    return {n, events_.load(std::memory_order_relaxed), 0, 0};
  }

 private:
  bool read_one(SignalEvent& event) noexcept {
    signalfd_siginfo raw;
    ssize_t n;
    do n = sys::read(fd_.get(), &raw, sizeof raw);
    while (n < 0 && errno == EINTR);
    if (n < 0) {
      if (errno == EAGAIN) return false;
      sys::fatal("read(signalfd)", errno);
    }
    if (n != static_cast<ssize_t>(sizeof raw)) sys::fatal("read(signalfd): short read");
    event = SignalEvent{};
    event.signal = static_cast<int>(raw.ssi_signo);
    event.code = raw.ssi_code;
    event.sender_pid = static_cast<pid_t>(raw.ssi_pid);
    event.sender_uid = static_cast<uid_t>(raw.ssi_uid);
    event.error = raw.ssi_errno;
    event.status = event.signal == SIGCHLD ? raw.ssi_status : 0;
    event.value = event.signal == SIGCHLD ? 0 : raw.ssi_ptr;
    signals_.fetch_add(1, std::memory_order_relaxed);
    return true;
  }

  sys::UniqueFd fd_;
  bool is_stopped_ = false;
  std::deque<SignalEvent> stopped_;  // read by stop(), handed out afterwards
  std::atomic<std::uint64_t> signals_{0}, events_{0};
};

}  // namespace

std::unique_ptr<SignalBackend> make_signalfd_backend(const std::vector<int>& signals) {
  return std::make_unique<SignalfdBackend>(signals);
}

}  // namespace doorbell::detail
