// signal_receiver: SignalReceiver started and stopped (both methods) while a
// sender thread queues signals.
//
// The set (SIGUSR1, SIGRTMIN+4) is blocked in main before any thread starts,
// so every instance either reaches a receiver's callback or stays pending,
// and this thread drains what is left with sigtimedwait after the round.
// Real-time instances carry their number, so each is followed. Checked:
//  - stop() returns (orchestrator deadline), and no callback runs after it;
//  - received() equals the callbacks run;
//  - every real-time instance lands exactly once (a callback or the drain).
#include <signal.h>
#include <unistd.h>

#include <atomic>
#include <cstring>
#include <thread>

#include "doorbell/signal_receiver.h"
#include "tests/torture/torture.h"

namespace doorbell::torture {
namespace {

constexpr int kMaxValues = 256;
std::atomic<uint32_t> g_seen[kMaxValues];

int rt_signal() {
  return SIGRTMIN + 4;
}

void setup(Context&) {
  block_signals_in_this_thread({SIGUSR1, rt_signal()});
}

void signal_receiver_round(Context& ctx) {
  Rng& rng = ctx.rng();
  const int values = 16 + static_cast<int>(rng.below(kMaxValues - 16));
  const uint64_t sender_seed = rng.next();
  for (auto& s : g_seen) s.store(0);

  std::atomic<bool> stop_sending{false};
  std::atomic<int> rt_sent{0};
  std::thread sender([&] {
    Rng r(sender_seed);
    const pid_t self = getpid();
    int next = 0;
    int eagain = 0;
    while (!stop_sending.load(std::memory_order_acquire) && next < values) {
      sigval v;
      v.sival_ptr = nullptr;
      v.sival_int = next;
      if (sigqueue(self, rt_signal(), v) == 0) {
        rt_sent.store(++next, std::memory_order_release);
      } else if (errno == EAGAIN && ++eagain > 1000) {
        break;
      }
      if (r.chance(3)) kill(self, SIGUSR1);
      if (r.chance(4)) sleep_ns(static_cast<int64_t>(r.below(40)) * 1000);
    }
  });

  const int cycles = 1 + static_cast<int>(rng.below(4));
  for (int cycle = 0; cycle < cycles; ++cycle) {
    SignalReceiver::Options options;
    const bool use_signalfd = rng.below(2) == 0;
    options.method =
        use_signalfd ? SignalReceiver::Method::signalfd : SignalReceiver::Method::sigwaitinfo;
    options.warn_on_stderr = false;
    const char* method = use_signalfd ? "signalfd" : "sigwaitinfo";
    std::atomic<bool> stopped{false};
    std::atomic<uint64_t> callbacks{0};
    std::atomic<uint64_t> late{0};
    ctx.phase("cycle %d: starting a %s receiver", cycle, method);
    SignalReceiver receiver(
        {SIGUSR1, rt_signal()},
        [&](const siginfo_t& info) {
          if (stopped.load(std::memory_order_acquire)) late.fetch_add(1);
          callbacks.fetch_add(1);
          const int v = info.si_value.sival_int;
          if (info.si_signo == rt_signal() && info.si_code == SI_QUEUE && v >= 0 && v < kMaxValues)
            g_seen[v].fetch_add(1);
        },
        options);
    random_delay(rng, 2000, 2000);
    ctx.phase("cycle %d: stop() of a %s receiver while signals arrive", cycle, method);
    receiver.stop();
    stopped.store(true, std::memory_order_release);
    if (late.load() != 0)
      ctx.fail("%s receiver: %llu callback(s) ran after stop() returned", method,
               static_cast<unsigned long long>(late.load()));
    if (receiver.received() != callbacks.load())
      ctx.fail("%s receiver: received() says %llu, the callback ran %llu time(s)", method,
               static_cast<unsigned long long>(receiver.received()),
               static_cast<unsigned long long>(callbacks.load()));
    ctx.note(0, "receivers");
    random_delay(rng, 2000, 500);
  }
  ctx.phase("joining the sender");
  stop_sending.store(true, std::memory_order_release);
  sender.join();

  // Drain what no receiver took (the set is blocked here, so it is pending).
  sigset_t set;
  sigemptyset(&set);
  sigaddset(&set, SIGUSR1);
  sigaddset(&set, rt_signal());
  const timespec zero{0, 0};
  siginfo_t info;
  ctx.phase("draining pending signals");
  while (sigtimedwait(&set, &info, &zero) > 0) {
    const int v = info.si_value.sival_int;
    if (info.si_signo == rt_signal() && info.si_code == SI_QUEUE && v >= 0 && v < kMaxValues)
      g_seen[v].fetch_add(1);
  }
  const int sent = rt_sent.load();
  ctx.note(1, "rt_instances", static_cast<uint64_t>(sent));
  for (int v = 0; v < sent; ++v) {
    if (g_seen[v].load() != 1) {
      ctx.fail("real-time instance %d of %d landed %u time(s) (receivers + drain)", v, sent,
               g_seen[v].load());
      break;
    }
  }
}

}  // namespace

const Path kSignalReceiverPath{
    "signal_receiver",
    "SignalReceiver (sigwaitinfo and signalfd) start/stop while a thread queues signals", setup,
    signal_receiver_round};

}  // namespace doorbell::torture
