// SignalChannel beside its peers, in one run (group `signalchannel`).
//
// Five ways to turn a signal into something user code acts on:
//   signalfd     doorbell::SignalChannel, signalfd mechanism, in doorbell::EventLoop
//   handler      doorbell::SignalChannel, handler mechanism, in doorbell::EventLoop
//   asio         Boost.Asio signal_set (1.81, self-pipe), io_context::run
//   libuv        uv_signal_t (Debian's libuv, self-pipe), uv_run
//   raw_handler  a plain sigaction handler that does the "user work" itself
//                (the floor; what seed 001 warns against)
//
// Every row uses the same two threads: the measuring thread (role 0) sends
// with kill(getpid()) / sigqueue(getpid()) and a receiver thread (role 1)
// runs the loop. The kernel hands a process-directed signal to the sending
// thread when it leaves the signal unblocked (every method but signalfd), so
// the handler runs there before kill() returns and wakes the receiver
// through the method's fd; with signalfd the signal stays pending and the
// receiver's signalfd becomes readable. A sample ends when the receiver's
// user code runs (CLOCK_MONOTONIC, read on both threads).
//
// Rows:
//   latency     ping-pong: one signal in flight; send -> user code
//   throughput  the sender sends without waiting; events delivered vs sent,
//               merged ones (counted by the channel where it can, and by the
//               kernel's signal_generate tracepoint where tracing is
//               available), lost ones
//   rt_burst    bursts of 64 queued real-time signals: instances delivered vs
//               sent, and send -> user code per instance
//
// Every run restores the signal's disposition and the thread's mask, and
// drains what is left pending before unblocking.
#include <pthread.h>
#include <signal.h>
#include <unistd.h>
#include <uv.h>

#include <atomic>
#include <boost/asio/io_context.hpp>
#include <boost/asio/signal_set.hpp>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "doorbell/event_loop.h"
#include "doorbell/signal_channel.h"
#include "lab/common/deadline.h"
#include "lab/common/signal_scope.h"
#include "lab/harness/runner.h"
#include "lab/harness/scenario.h"
#include "lab/scenarios/instance_guard.h"
#include "lab/scenarios/signalchannel_testing.h"
#include "sys/error.h"
#include "sys/proc.h"
#include "sys/tgkill.h"
#include "sys/tracefs.h"

namespace doorbell::lab {
namespace {

enum class Method { signalfd, handler, asio, libuv, raw_handler };
constexpr Method kMethods[] = {Method::signalfd, Method::handler, Method::asio, Method::libuv,
                               Method::raw_handler};

const char* method_name(Method m) {
  switch (m) {
    case Method::signalfd:
      return "signalfd";
    case Method::handler:
      return "handler";
    case Method::asio:
      return "asio";
    case Method::libuv:
      return "libuv";
    case Method::raw_handler:
      return "raw_handler";
  }
  return "?";
}

// What the receiver's user code does with each event: note the time and
// tell the sender. Written by the receiver thread (or the raw handler),
// read by the sender after acked/delivered moved.
struct Sink {
  bool realtime = false;
  std::atomic<uint64_t> send_time{0};  // latency row: the one signal in flight
  std::vector<uint64_t> send_times;    // rt row: by instance number
  std::vector<double> latencies;       // reserved up front; receiver appends
  std::atomic<uint64_t> delivered{0};  // user-code runs
  std::atomic<uint64_t> merged{0};     // instances the method reported merged
  std::atomic<uint32_t> acked{0};      // futex word for the ping-pong
  std::atomic<bool> rescued{false};    // the sender's wait was ended by its Rescuer
  // Signals the channel took from the kernel when it stopped (signalfd:
  // SignalChannel::stop() moves what the kernel holds into the channel),
  // never handed to user code: pending at stop, like those still in the kernel.
  std::atomic<uint64_t> taken_at_stop{0};
  // Sends made by signalchannel_testing's injection points, counted as sent.
  std::atomic<uint64_t> injected_sends{0};
  uint64_t burst_base = 0;  // rt row: instance number of this burst's first

  // value: the instance number for real-time signals (si_value), where the
  // method exposes it; else -1 and arrival order stands in (same signal
  // number, so the kernel delivers in order).
  void on_event(int64_t value, uint64_t merged_count) noexcept {
    const uint64_t now = monotonic_ns();
    const uint64_t n = delivered.load(std::memory_order_relaxed);
    uint64_t sent_at;
    if (realtime) {
      const uint64_t index = value >= 0 ? static_cast<uint64_t>(value) : n;
      sent_at = index < send_times.size() ? send_times[index] : now;
    } else {
      sent_at = send_time.load(std::memory_order_acquire);
    }
    if (latencies.size() < latencies.capacity() && now >= sent_at) {
      latencies.push_back(static_cast<double>(now - sent_at));
    }
    merged.fetch_add(merged_count, std::memory_order_relaxed);
    delivered.store(n + 1, std::memory_order_release);
    acked.fetch_add(1, std::memory_order_release);
    acked.notify_one();
  }
};

Sink* g_raw_sink = nullptr;  // the raw handler's target, set while it is installed

void raw_handler(int, siginfo_t* info, void*) {
  const int saved = errno;
  Sink* sink = g_raw_sink;
  if (sink != nullptr) {
    const int64_t value = info->si_code == SI_QUEUE ? info->si_value.sival_int : -1;
    sink->on_event(value, 0);
  }
  errno = saved;
}

struct sigaction current_disposition(int signo) {
  struct sigaction action;
  if (::sigaction(signo, nullptr, &action) != 0) sys::throw_errno("sigaction");
  return action;
}

// Saves the disposition of signo and the calling thread's mask, which the
// method set up inside changes; restores both, after draining what is still
// pending with the signal blocked (so nothing fires late).
class SignalStateGuard {
 public:
  explicit SignalStateGuard(int signo)
      : signo_(signo),
        mask_(SIG_BLOCK, std::initializer_list<int>{}),     // blocks nothing: saves
        disposition_(signo, current_disposition(signo)) {}  // installs the same: saves
  ~SignalStateGuard() {
    // Blocked until mask_ restores the saved mask, after disposition_.
    sigset_t set;
    sigemptyset(&set);
    sigaddset(&set, signo_);
    pthread_sigmask(SIG_BLOCK, &set, nullptr);
    drain_pending(signo_);
  }

 private:
  int signo_;
  ScopedMask mask_;
  ScopedDisposition disposition_;
};

// One method's receiver: set up on construction (main thread), run() on the
// receiver thread until stop().
class Receiver {
 public:
  virtual ~Receiver() = default;
  virtual void run() = 0;
  virtual void stop() = 0;
  // Waits until the receiver is ready for the first signal.
  virtual void wait_ready(const Deadline&) {}
  // How many signals the method's handler passed on, where the method keeps
  // that count (libuv); read after run() returned.
  virtual std::optional<uint64_t> caught() const { return std::nullopt; }
};

// What stop() took from the kernel and the receiver never dispatched.
void count_taken_at_stop(SignalChannel& channel, Sink& sink) {
  channel.dispatch(
      [&sink](const SignalEvent&) { sink.taken_at_stop.fetch_add(1, std::memory_order_relaxed); });
}

class ChannelReceiver final : public Receiver {
 public:
  ChannelReceiver(int signo, SignalMechanism mechanism, Sink& sink) : sink_(sink) {
    SignalChannel::Options options;
    options.mechanism = mechanism;
    options.chain_previous = false;
    channel_ = std::make_unique<SignalChannel>(std::vector<int>{signo}, options);
    loop_.add(channel_->fd(), EventLoop::kReadable, [this](uint32_t) {
      channel_->dispatch([this](const SignalEvent& e) {
        sink_.on_event(e.code == SI_QUEUE ? static_cast<int64_t>(e.value) : -1, e.coalesced);
      });
    });
  }
  void run() override { loop_.run(); }
  void stop() override { loop_.stop(); }
  ~ChannelReceiver() override {
    loop_.remove(channel_->fd());
    channel_->stop();
    count_taken_at_stop(*channel_, sink_);
  }

 private:
  Sink& sink_;
  EventLoop loop_;
  std::unique_ptr<SignalChannel> channel_;
};

// SignalChannel without an event loop: the receiver thread blocks in
// receive() with a spin budget (the spin rows), in slices of 10 ms so that
// stop() is seen.
class SpinningChannelReceiver final : public Receiver {
 public:
  SpinningChannelReceiver(int signo, SignalMechanism mechanism, std::uint32_t spin, Sink& sink)
      : sink_(sink), spin_{spin} {
    SignalChannel::Options options;
    options.mechanism = mechanism;
    options.chain_previous = false;
    channel_ = std::make_unique<SignalChannel>(std::vector<int>{signo}, options);
  }
  void run() override {
    while (!stopping_.load(std::memory_order_acquire)) {
      if (auto e = channel_->receive(std::chrono::milliseconds(10), spin_)) {
        sink_.on_event(e->code == SI_QUEUE ? static_cast<int64_t>(e->value) : -1, e->coalesced);
      }
    }
  }
  void stop() override { stopping_.store(true, std::memory_order_release); }
  ~SpinningChannelReceiver() override {
    channel_->stop();
    count_taken_at_stop(*channel_, sink_);
  }

 private:
  Sink& sink_;
  SignalChannel::Spin spin_;
  std::atomic<bool> stopping_{false};
  std::unique_ptr<SignalChannel> channel_;
};

// A SignalChannel receiver: in an EventLoop, or spinning in receive() when
// spin > 0.
std::unique_ptr<Receiver> make_channel_receiver(int signo, SignalMechanism mechanism,
                                                std::uint32_t spin, Sink& sink) {
  if (spin > 0) return std::make_unique<SpinningChannelReceiver>(signo, mechanism, spin, sink);
  return std::make_unique<ChannelReceiver>(signo, mechanism, sink);
}

class AsioReceiver final : public Receiver {
 public:
  AsioReceiver(int signo, Sink& sink) : sink_(sink), set_(io_, signo) { arm(); }
  void run() override { io_.run(); }
  void stop() override { io_.stop(); }

 private:
  void arm() {
    set_.async_wait([this](const boost::system::error_code& error, int) {
      if (error) return;
      sink_.on_event(-1, 0);
      arm();
    });
  }
  Sink& sink_;
  boost::asio::io_context io_;
  boost::asio::signal_set set_;
};

class UvReceiver final : public Receiver {
 public:
  UvReceiver(int signo, Sink& sink) : signo_(signo), sink_(sink) {}
  void run() override {
    uv_loop_init(&loop_);
    uv_signal_init(&loop_, &signal_);
    signal_.data = this;
    uv_signal_start(
        &signal_,
        [](uv_signal_t* handle, int) {
          static_cast<UvReceiver*>(handle->data)->sink_.on_event(-1, 0);
        },
        signo_);
    uv_async_init(&loop_, &stop_, [](uv_async_t* handle) {
      auto* self = static_cast<UvReceiver*>(handle->data);
      const int late = signalchannel_testing::libuv_sends_in_stop.load();
      for (int i = 0; i < late; ++i)
        if (sys::tgkill(::getpid(), sys::current_tid(), self->signo_) == 0)
          self->sink_.injected_sends.fetch_add(1, std::memory_order_relaxed);
      uv_signal_stop(&self->signal_);
      uv_close(reinterpret_cast<uv_handle_t*>(&self->signal_), nullptr);
      uv_close(reinterpret_cast<uv_handle_t*>(&self->stop_), nullptr);
    });
    stop_.data = this;
    ready_.store(true, std::memory_order_release);
    uv_run(&loop_, UV_RUN_DEFAULT);
    uv_loop_close(&loop_);
  }
  void stop() override { uv_async_send(&stop_); }
  void wait_ready(const Deadline& deadline) override {
    wait_until(deadline, "the libuv receiver thread to be ready",
               [&] { return ready_.load(std::memory_order_acquire); });
  }
  // Signals libuv's handler wrote to its self-pipe (uv_signal_t's
  // caught_signals, a field of the public struct): the handler drops one
  // silently when the pipe is full. Read after run() returned.
  std::optional<uint64_t> caught() const override { return signal_.caught_signals; }

 private:
  int signo_;
  Sink& sink_;
  uv_loop_t loop_;
  uv_signal_t signal_;
  uv_async_t stop_;
  std::atomic<bool> ready_{false};
};

// The raw handler needs no loop; its receiver thread idles.
class RawReceiver final : public Receiver {
 public:
  RawReceiver(int signo, Sink& sink) {
    struct sigaction action {};
    action.sa_sigaction = raw_handler;
    action.sa_flags = SA_SIGINFO | SA_RESTART;
    sigemptyset(&action.sa_mask);
    g_raw_sink = &sink;
    if (::sigaction(signo, &action, nullptr) != 0) sys::throw_errno("sigaction");
  }
  ~RawReceiver() override { g_raw_sink = nullptr; }
  void run() override { done_.wait(false); }
  void stop() override {
    done_.store(true);
    done_.notify_one();
  }

 private:
  std::atomic<bool> done_{false};
};

// Sets up `method` for signo (the guard must already exist), starts the
// receiver thread, runs body(), stops and joins. spin > 0 (signalfd and
// handler only): the receiver spins in SignalChannel::receive() with that
// budget instead of running an EventLoop. caught: the method's own count of
// signals its handler passed on, where it keeps one (libuv).
void with_receiver(Context& ctx, Method method, int signo, Sink& sink, std::uint32_t spin,
                   const std::function<void()>& body, std::optional<uint64_t>* caught = nullptr) {
  if (method == Method::signalfd) {
    // The runner is single-threaded: blocking here, before the receiver
    // thread starts, blocks the signal in every thread.
    sigset_t set;
    sigemptyset(&set);
    sigaddset(&set, signo);
    pthread_sigmask(SIG_BLOCK, &set, nullptr);
  }
  std::unique_ptr<Receiver> receiver;
  try {
    switch (method) {
      case Method::signalfd:
        receiver = make_channel_receiver(signo, SignalMechanism::signalfd, spin, sink);
        break;
      case Method::handler:
        receiver = make_channel_receiver(signo, SignalMechanism::handler, spin, sink);
        break;
      case Method::asio:
        receiver = std::make_unique<AsioReceiver>(signo, sink);
        break;
      case Method::libuv:
        receiver = std::make_unique<UvReceiver>(signo, sink);
        break;
      case Method::raw_handler:
        receiver = std::make_unique<RawReceiver>(signo, sink);
        break;
    }
  } catch (const std::invalid_argument& e) {
    throw SkipScenario(e.what());  // e.g. a thread of the process leaves the signal open
  }
  // Receiver::stop() may be called from any thread, any number of times.
  PeerThread thread(
      [&] {
        ctx.pin_thread(1);
        receiver->run();
      },
      [&] { receiver->stop(); });
  const Deadline deadline(ctx.wait_deadline_ns());
  ctx.phase("waiting for the receiver thread to be ready");
  receiver->wait_ready(deadline);
  ctx.pin_thread(0);
  ctx.phase("sending");
  body();
  receiver->stop();
  ctx.phase("waiting for the receiver thread to end");
  thread.join(deadline, "the receiver thread to end");
  if (caught != nullptr) *caught = receiver->caught();
}

void with_receiver(Context& ctx, Method method, int signo, Sink& sink,
                   const std::function<void()>& body) {
  with_receiver(ctx, method, signo, sink, 0, body);
}

// Waits until `delivered` stops moving for `quiet_ns` (or reaches target).
void wait_quiet(const Sink& sink, uint64_t target, uint64_t quiet_ns) {
  uint64_t last = sink.delivered.load(std::memory_order_acquire);
  uint64_t since = monotonic_ns();
  while (last < target) {
    std::this_thread::yield();
    const uint64_t now_count = sink.delivered.load(std::memory_order_acquire);
    const uint64_t now = monotonic_ns();
    if (now_count != last) {
      last = now_count;
      since = now;
    } else if (now - since > quiet_ns) {
      break;
    }
  }
}

void record_latencies(Context& ctx, const Sink& sink) {
  Histogram& h = ctx.metric();
  for (double ns : sink.latencies) h.record(ns);
}

// ---------------------------------------------------------------- latency

void run_latency(Context& ctx, Method method, std::uint32_t spin = 0) {
  const int signo = SIGUSR1;
  SignalStateGuard guard(signo);
  Sink sink;
  sink.latencies.reserve(ctx.samples());
  std::size_t sent = 0;
  with_receiver(ctx, method, signo, sink, spin, [&] {
    const pid_t self = ::getpid();
    // The wait for the receiver's user code stays std::atomic::wait (its
    // spin, then FUTEX_WAIT, is part of what the row measures); a signal
    // that never reaches user code is ended by the rescuer past the
    // deadline, and the row fails with the signal's number.
    Rescuer rescuer(Deadline(ctx.wait_deadline_ns()), [&] {
      sink.rescued.store(true, std::memory_order_release);
      sink.acked.fetch_add(1, std::memory_order_acq_rel);
      sink.acked.notify_all();
    });
    while (ctx.keep_going(sent)) {
      const uint32_t before = sink.acked.load(std::memory_order_acquire);
      sink.send_time.store(monotonic_ns(), std::memory_order_release);
      ::kill(self, signo);
      ++sent;
      while (sink.acked.load(std::memory_order_acquire) == before)
        sink.acked.wait(before, std::memory_order_acquire);
      if (sink.rescued.load(std::memory_order_acquire))
        throw WaitTimedOut("timed out waiting for signal " + std::to_string(sent) +
                           " to reach the receiver's user code (lost, or a receiver that "
                           "stopped)");
    }
  });
  record_latencies(ctx, sink);
  ctx.counter("sent", static_cast<double>(sent));
  ctx.counter("delivered", static_cast<double>(sink.delivered.load()));
  ctx.counter("coalesced", static_cast<double>(sink.merged.load()));
}

// ---------------------------------------------------------------- throughput

// Counts what the kernel did with each send of the flood, from the
// signal:signal_generate tracepoint (one event per send, filtered in the
// kernel to our signal and our process): result 0 queued it, result 2
// (TRACE_SIGNAL_ALREADY_PENDING) merged it into the instance already pending.
// A standard signal sent while one is pending is merged by the kernel before
// any method can see it; with signalfd (the signal stays pending until the
// receiver reads it) that is where a flood's sends go, and nothing in user
// space can count them. Needs root and tracefs (the one binding,
// src/sys/tracefs.h); one instance per lab process, doorbell-flood-<pid>,
// removed at exit; the event is enabled only while a flood repetition runs.
class KernelMergeTrace {
 public:
  struct Counts {
    uint64_t queued = 0;     // result 0: became pending (then delivered or drained)
    uint64_t merged = 0;     // result 2: already pending, merged into it
    uint64_t other = 0;      // any other result (ignored, overflow, lost info)
    long long overruns = 0;  // events the ring buffer lost: the counts are then short
  };

  // Starts counting sends of signo to process pid; nullopt and why_not
  // when tracing is not possible here.
  static std::optional<KernelMergeTrace> start(int signo, pid_t pid, std::string& why_not) {
    Session& s = session();
    if (!s.why_not.empty()) {
      why_not = s.why_not;
      return std::nullopt;
    }
    const std::string filter =
        "sig == " + std::to_string(signo) + " && pid == " + std::to_string(pid);
    s.instance->write("trace", "");  // clear
    if (!s.instance->write_event_file("signal", "signal_generate", "filter", filter.c_str()) ||
        !s.instance->enable("signal", "signal_generate")) {
      why_not = "could not enable signal:signal_generate with a filter";
      return std::nullopt;
    }
    s.instance->tracing_on();
    return KernelMergeTrace();
  }

  Counts stop() {
    Session& s = session();
    s.instance->tracing_off();
    s.instance->disable("signal", "signal_generate");
    Counts counts;
    const int id = s.formats->id("signal", "signal_generate");
    s.instance->read(*s.formats, [&](const sys::tracefs::RawEvent& e) {
      if (e.id != id) return;
      const auto result = e.number("result").value_or(~0ull);
      if (result == 0)
        ++counts.queued;
      else if (result == 2)
        ++counts.merged;
      else
        ++counts.other;
    });
    counts.overruns = s.instance->overruns();
    return counts;
  }

 private:
  struct Session {
    std::optional<sys::tracefs::EventFormats> formats;
    std::optional<InstanceGuard> guard;  // removes the instance if this process is killed
    std::optional<sys::tracefs::Instance> instance;
    std::string why_not;
  };
  static Session& session() {
    static Session s;
    static std::once_flag once;
    std::call_once(once, [] {
      if (::geteuid() != 0) {
        s.why_not = "tracepoints need root";
        return;
      }
      try {
        sys::tracefs::tracing_dir();
        s.formats.emplace(std::vector<sys::tracefs::EventName>{{"signal", "signal_generate"}});
        if (s.formats->id("signal", "signal_generate") < 0) {
          s.why_not = "tracefs has no signal:signal_generate event";
          return;
        }
        s.instance.emplace("flood");
        s.guard.emplace(*s.instance);
        // Removed when the scenario's process ends (it ends with _exit).
        register_scenario_process_exit([] {
          session().instance.reset();
          session().guard.reset();
          session().formats.reset();
        });
        s.instance->tracing_off();
        // One event per send, ~56 bytes, all on the sender's CPU: 4 MiB
        // holds a default-suite flood (16,384 sends) several times over.
        s.instance->write("buffer_size_kb", "4096");
      } catch (const std::exception& e) {
        s.why_not = e.what();
        s.instance.reset();
        s.guard.reset();
      }
    });
    return s;
  }
};

void run_throughput(Context& ctx, Method method) {
  const int signo = SIGUSR1;
  SignalStateGuard guard(signo);
  Sink sink;
  std::size_t sent = 0;
  uint64_t elapsed_ns = 0;
  long pending_at_stop = 0;
  std::optional<uint64_t> caught;
  const IntervalClock& clock = IntervalClock::get();
  std::string why_not;
  std::optional<KernelMergeTrace> trace = KernelMergeTrace::start(signo, ::getpid(), why_not);
  with_receiver(
      ctx, method, signo, sink, 0,
      [&] {
        const pid_t self = ::getpid();
        constexpr std::size_t kBatch = 16;
        std::size_t batches = 0;
        const uint64_t start = monotonic_ns();
        // The sending window is the repetition's budget counted from here:
        // the set-up (the receiver thread, enabling the tracepoint: a few
        // ms of kernel text patching) is not a sample and would otherwise
        // eat a --quick budget (6 ms) whole.
        const uint64_t until = start + static_cast<uint64_t>(ctx.budget_s() * 1e9);
        while (batches < ctx.samples() && monotonic_ns() < until) {
          const uint64_t t0 = clock.read();
          for (std::size_t i = 0; i < kBatch; ++i) ::kill(self, signo);
          const uint64_t t1 = clock.read();
          ctx.metric("send").record(clock.to_ns(t1 - t0) / kBatch);
          sent += kBatch;
          ++batches;
        }
        wait_quiet(sink, sent, 2000000ull);
        elapsed_ns = monotonic_ns() - start;
      },
      &caught);
  // A send the receiver had not read when it stopped is still pending (only
  // where the method keeps the signal blocked, signalfd): take it now, with
  // the signal blocked, and count it.
  {
    sigset_t set;
    sigemptyset(&set);
    sigaddset(&set, signo);
    pthread_sigmask(SIG_BLOCK, &set, nullptr);  // the guard restores the mask
    pending_at_stop = drain_pending(signo) + static_cast<long>(sink.taken_at_stop.load());
  }
  std::optional<KernelMergeTrace::Counts> kernel;
  if (trace) kernel = trace->stop();
  sent += sink.injected_sends.load();

  const double delivered = static_cast<double>(sink.delivered.load());
  const double merged = static_cast<double>(sink.merged.load());
  ctx.counter("sent", static_cast<double>(sent));
  ctx.counter("delivered", delivered);
  ctx.counter("coalesced", merged);  // reported by the method itself
  // libuv: what its handler wrote to the self-pipe (caught) and the loop did
  // not dispatch before it stopped is still in the method's pipe: pending at
  // stop too (sends the injection point makes in the stop callback are of
  // another thread than the tracepoint counts: they are in caught, not in
  // the kernel's queued, and the drop estimate below stays 0 for them).
  const double in_pipe = caught && static_cast<double>(*caught) > delivered
                             ? static_cast<double>(*caught) - delivered
                             : 0.0;
  ctx.counter("pending_at_stop", static_cast<double>(pending_at_stop) + in_pipe);
  double accounted = delivered + merged + static_cast<double>(pending_at_stop) + in_pipe;
  if (kernel) {
    // Merged by the kernel into the pending instance: no method sees these.
    ctx.counter("coalesced_kernel", static_cast<double>(kernel->merged));
    accounted += static_cast<double>(kernel->merged);
    // The handler ran once per queued send. libuv counts what its handler
    // caught; Boost.Asio counts nothing, and one callback runs per caught
    // signal: what the handler did not write to its full self-pipe (a slow
    // consumer: sanitizer builds, a loaded machine) it dropped.
    if (caught || method == Method::asio) {
      const double ran = static_cast<double>(kernel->queued) - static_cast<double>(pending_at_stop);
      const double reached = caught ? static_cast<double>(*caught) : delivered;
      const double dropped = std::max(0.0, ran - reached);
      ctx.counter("dropped_by_method", dropped);
      accounted += dropped;
      if (!caught && dropped > 0)
        ctx.note("Boost.Asio's handler ran " + std::to_string(static_cast<long>(ran)) +
                 " times (signal_generate) and its callbacks " +
                 std::to_string(static_cast<long>(delivered)) +
                 ": the rest, dropped_by_method, did not fit its self-pipe");
    }
    if (kernel->overruns > 0 || kernel->queued + kernel->merged + kernel->other != sent)
      ctx.note("the tracepoint saw " + std::to_string(kernel->queued + kernel->merged) + " of " +
               std::to_string(sent) + " sends (" + std::to_string(kernel->overruns) +
               " lost to ring-buffer overruns): coalesced_kernel is short by the rest");
  } else {
    ctx.note("no tracepoints (" + why_not +
             "): sends the kernel merged into an already pending signal (signalfd keeps it "
             "pending until read) cannot be counted; they are in 'unaccounted'");
  }
  // Neither delivered, nor merged (by the method or, traced, the kernel),
  // nor left pending, nor counted as dropped: zero when traced, except a
  // self-pipe method (asio) that dropped sends on a full pipe without
  // counting them.
  ctx.counter("unaccounted", static_cast<double>(sent) - accounted);
  ctx.counter("ops_per_s", elapsed_ns > 0 ? delivered * 1e9 / static_cast<double>(elapsed_ns) : 0);
}

// ---------------------------------------------------------------- rt_burst

void run_rt_burst(Context& ctx, Method method) {
  const int signo = SIGRTMIN + 4;
  SignalStateGuard guard(signo);
  constexpr std::size_t kBurst = 64;
  Sink sink;
  sink.realtime = true;
  const std::size_t max_bursts = std::max<std::size_t>(1, ctx.samples() / kBurst);
  sink.send_times.assign(max_bursts * kBurst, 0);
  sink.latencies.reserve(max_bursts * kBurst);
  std::size_t sent = 0, refused = 0, bursts = 0;
  with_receiver(ctx, method, signo, sink, [&] {
    const pid_t self = ::getpid();
    while (bursts < max_bursts && ctx.keep_going(bursts * kBurst)) {
      for (std::size_t i = 0; i < kBurst; ++i) {
        const std::size_t index = bursts * kBurst + i;
        sigval value{};
        value.sival_int = static_cast<int>(index);
        sink.send_times[index] = monotonic_ns();
        if (::sigqueue(self, signo, value) == 0)
          ++sent;
        else
          ++refused;  // EAGAIN: RLIMIT_SIGPENDING
      }
      ++bursts;
      // Let the burst drain before the next one (bounded).
      wait_quiet(sink, sent, 10000000ull);
    }
  });
  record_latencies(ctx, sink);
  const double delivered = static_cast<double>(sink.delivered.load());
  ctx.counter("sent", static_cast<double>(sent));
  ctx.counter("delivered", delivered);
  ctx.counter("lost", static_cast<double>(sent) - delivered);
  if (refused != 0) ctx.counter("eagain", static_cast<double>(refused));
}

std::vector<Scenario> make_scenarios() {
  std::vector<Scenario> all;
  for (Method m : kMethods) {
    const std::string name = method_name(m);
    all.push_back(Scenario{
        .name = "signalchannel/latency:method=" + name,
        .group = "signalchannel",
        .title = "signal -> user code, " + name,
        .description =
            "one SIGUSR1 in flight: CLOCK_MONOTONIC read by the sender just before "
            "kill(getpid()), to the read in the receiver thread's user code (event-loop callback; "
            "for raw_handler, the handler itself); the sender waits for it before the next",
        .params = {{"method", name}},
        .clock = ClockKind::monotonic,
        .budget_s = 0.06,
        .samples = 20000,
        .run = [m](Context& ctx) { run_latency(ctx, m); },
    });
    all.push_back(Scenario{
        .name = "signalchannel/throughput:method=" + name,
        .group = "signalchannel",
        .title = "signal flood, " + name,
        .description =
            "the sender calls kill(getpid(), SIGUSR1) in batches of 16 without waiting; a sample "
            "is the batch time / 16 on the interval clock (what the sender pays). Counters: "
            "sent, delivered (user-code runs), coalesced (merges the method reported), "
            "coalesced_kernel (sends the kernel merged into one already pending, counted by the "
            "signal_generate tracepoint; root only), pending_at_stop (pending when the receiver "
            "stopped: in the kernel, taken by the lab, or unread in libuv's self-pipe), "
            "dropped_by_method (libuv: not written to its full "
            "self-pipe), unaccounted (the rest: 0 when traced), ops_per_s (deliveries per "
            "second). sent = delivered + coalesced + coalesced_kernel + pending_at_stop + "
            "dropped_by_method + unaccounted",
        .params = {{"method", name}},
        .clock = ClockKind::tsc,
        .primary_metric = "send",
        .budget_s = 0.03,
        .samples = 1024,
        .run = [m](Context& ctx) { run_throughput(ctx, m); },
    });
    all.push_back(Scenario{
        .name = "signalchannel/rt_burst:method=" + name,
        .group = "signalchannel",
        .title = "64 queued RT signals, " + name,
        .description =
            "bursts of 64 sigqueue(getpid(), SIGRTMIN+4, i); a sample is CLOCK_MONOTONIC from "
            "just before instance i's sigqueue to the user code seeing it (matched by si_value "
            "where the method exposes it, by arrival order for asio/libuv). Counters: sent, "
            "delivered, lost, eagain",
        .params = {{"method", name}},
        .clock = ClockKind::monotonic,
        .budget_s = 0.02,
        .samples = 2048,
        .run = [m](Context& ctx) { run_rt_burst(ctx, m); },
    });
  }
  // The receiver-side spin (SignalChannel::Spin): the receiver blocks in
  // receive() with a budget instead of an EventLoop. Budgets of a few µs and
  // ten times that: one handler iteration is a pause and two loads (~40 ns),
  // one signalfd iteration a read(2) (~0.5-2 µs on a VM). The spin catches
  // the next signal only when it spans the sender's turn-around (its wake-up
  // from the futex wait for the previous ack, then kill()).
  struct SpinRow {
    Method method;
    std::uint32_t spin;
  };
  for (const SpinRow row : {SpinRow{Method::signalfd, 10}, SpinRow{Method::signalfd, 100},
                            SpinRow{Method::handler, 100}, SpinRow{Method::handler, 1000}}) {
    const std::string name = method_name(row.method);
    const std::string spin = std::to_string(row.spin);
    all.push_back(Scenario{
        .name = "signalchannel/latency:method=" + name + ",spin=" + spin,
        .group = "signalchannel",
        .title = "signal -> user code, " + name + ", receive() spinning " + spin,
        .description = "as signalchannel/latency, but the receiver thread calls "
                       "SignalChannel::receive() with Spin{" +
                       spin +
                       "} (polls the channel that many times before sleeping in poll(2)) "
                       "instead of running an EventLoop; the receiving CPU burns the budget "
                       "after every event",
        .params = {{"method", name}, {"spin", spin}},
        .clock = ClockKind::monotonic,
        .budget_s = 0.06,
        .samples = 20000,
        .run = [row](Context& ctx) { run_latency(ctx, row.method, row.spin); },
    });
  }
  return all;
}

const Registrar kRegistrar{make_scenarios()};

const RatioRegistrar kRatios{{
    {.name = "asio / SignalChannel(signalfd)",
     .numerator = "signalchannel/latency:method=asio",
     .denominator = "signalchannel/latency:method=signalfd",
     .statistic = "p50",
     .meaning = "Asio's self-pipe against our signalfd channel, send -> user code",
     .numerator_words = "Asio",
     .denominator_words = "our signalfd channel"},
    {.name = "libuv / SignalChannel(handler)",
     .numerator = "signalchannel/latency:method=libuv",
     .denominator = "signalchannel/latency:method=handler",
     .statistic = "p50",
     .meaning = "libuv's self-pipe against our handler channel, send -> user code",
     .numerator_words = "libuv",
     .denominator_words = "our handler channel"},
    {.name = "SignalChannel(handler) / raw handler",
     .numerator = "signalchannel/latency:method=handler",
     .denominator = "signalchannel/latency:method=raw_handler",
     .statistic = "p50",
     .meaning = "what leaving the handler for a thread's event loop costs"},
}};

}  // namespace
}  // namespace doorbell::lab
