#include "lab/common/deadline.h"

#include <signal.h>
#include <sys/wait.h>

#include <cerrno>
#include <chrono>
#include <system_error>

#include <fmt/format.h>

namespace doorbell::lab {

Deadline Deadline::after(double seconds) noexcept {
  const double ns = seconds > 0 ? seconds * 1e9 : 0.0;
  return Deadline(monotonic_ns() +
                  (ns < 9e18 ? static_cast<uint64_t>(ns) : uint64_t{9'000'000'000'000'000'000u}));
}

uint64_t Deadline::left_ns() const noexcept {
  const uint64_t now = monotonic_ns();
  return now >= at_ns_ ? 0 : at_ns_ - now;
}

int Deadline::left_ms() const noexcept {
  const uint64_t ms = (left_ns() + 999'999) / 1'000'000;
  return ms > 1'000'000'000 ? 1'000'000'000 : static_cast<int>(ms);
}

timespec Deadline::left() const noexcept {
  const uint64_t ns = left_ns();
  return timespec{static_cast<time_t>(ns / 1'000'000'000), static_cast<long>(ns % 1'000'000'000)};
}

void Deadline::fail(std::string_view what) const {
  throw WaitTimedOut(fmt::format("timed out waiting for {}", what));
}

namespace {

// One look at the child: true (and *status) once it ended and was reaped.
bool reaped(pid_t pid, int* status) {
  for (;;) {
    const pid_t r = ::waitpid(pid, status, WNOHANG);
    if (r == pid) return true;
    if (r == 0) return false;
    if (errno == EINTR) continue;
    throw std::system_error(errno, std::generic_category(), "waitpid");
  }
}

// Sleeps a little longer each time, at most 1 ms: a child usually ends
// within microseconds of being told to.
void back_off(uint32_t& round) {
  const uint64_t ns = round < 10 ? uint64_t{10'000} << (round / 3) : 1'000'000;
  ++round;
  sleep_ns(ns);
}

// Reaps the child by the deadline; past it, kills and reaps it. Throws
// std::system_error when waitpid fails (not our child, or already reaped).
ReapResult reap_by(pid_t pid, const Deadline& deadline) {
  ReapResult result;
  for (uint32_t round = 0; !reaped(pid, &result.status); back_off(round)) {
    if (deadline.passed()) {
      if (reaped(pid, &result.status)) break;
      ::kill(pid, SIGKILL);
      while (::waitpid(pid, &result.status, 0) < 0 && errno == EINTR) {
      }
      result.killed = true;
      break;
    }
  }
  return result;
}

}  // namespace

int reap_child(pid_t pid, const Deadline& deadline, std::string_view what) {
  const ReapResult result = reap_by(pid, deadline);
  if (result.killed) deadline.fail(fmt::format("{} (child {} killed)", what, pid));
  return result.status;
}

ReapResult reap_child_or_kill(pid_t pid, const Deadline& deadline) noexcept {
  try {
    return reap_by(pid, deadline);
  } catch (const std::system_error&) {
    return {};  // not our child, or already reaped
  }
}

PeerThread::PeerThread(std::function<void()> body, std::function<void()> stop)
    : state_(std::make_shared<State>()), stop_(std::move(stop)) {
  thread_ = std::thread([state = state_, body = std::move(body)] {
    std::exception_ptr error;
    try {
      body();
    } catch (...) {
      error = std::current_exception();
    }
    std::lock_guard<std::mutex> lock(state->mutex);
    state->finished = true;
    state->error = error;
    state->changed.notify_all();
  });
}

PeerThread& PeerThread::operator=(PeerThread&& other) noexcept {
  if (this != &other) {
    release();
    state_ = std::move(other.state_);
    stop_ = std::move(other.stop_);
    thread_ = std::move(other.thread_);
  }
  return *this;
}

PeerThread::~PeerThread() {
  release();
}

bool PeerThread::finished() const noexcept {
  if (!state_) return true;
  std::lock_guard<std::mutex> lock(state_->mutex);
  return state_->finished;
}

void PeerThread::release() noexcept {
  if (!thread_.joinable()) return;
  bool finished = false;
  const auto until = std::chrono::steady_clock::now() + std::chrono::seconds(1);
  while (!finished && std::chrono::steady_clock::now() < until) {
    if (stop_) {
      try {
        stop_();
      } catch (...) {
      }
    }
    std::unique_lock<std::mutex> lock(state_->mutex);
    finished = state_->changed.wait_for(lock, std::chrono::milliseconds(10),
                                        [&] { return state_->finished; });
  }
  if (finished) {
    thread_.join();
  } else {
    thread_.detach();  // stuck: it ends with the scenario's process
  }
}

void PeerThread::join(const Deadline& deadline, std::string_view what) {
  if (!thread_.joinable()) return;
  std::exception_ptr error;
  {
    std::unique_lock<std::mutex> lock(state_->mutex);
    const auto until =
        std::chrono::steady_clock::now() + std::chrono::nanoseconds(deadline.left_ns());
    if (!state_->changed.wait_until(lock, until, [&] { return state_->finished; })) {
      lock.unlock();
      thread_.detach();
      deadline.fail(what);
    }
    error = state_->error;
  }
  thread_.join();
  if (error) std::rethrow_exception(error);
}

Rescuer::Rescuer(const Deadline& deadline, std::function<void()> rescue) {
  thread_ = std::thread([this, deadline, rescue = std::move(rescue)] {
    std::unique_lock<std::mutex> lock(mutex_);
    const auto until =
        std::chrono::steady_clock::now() + std::chrono::nanoseconds(deadline.left_ns());
    if (changed_.wait_until(lock, until, [&] { return stop_; })) return;
    while (!stop_) {
      lock.unlock();
      rescue();
      fired_.store(true, std::memory_order_release);
      lock.lock();
      changed_.wait_for(lock, std::chrono::milliseconds(10), [&] { return stop_; });
    }
  });
}

Rescuer::~Rescuer() {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    stop_ = true;
  }
  changed_.notify_all();
  thread_.join();
}

}  // namespace doorbell::lab
