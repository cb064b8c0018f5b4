// asio_loop: a SignalChannel, an EventNotifier and a Timer inside a
// Boost.Asio io_context, each fd wrapped in a posix::stream_descriptor and
// waited for with async_wait(wait_read).
//
//   ./example_asio_loop    # sends itself SIGUSR1, notifies from a thread,
//                          # lets the timer tick three times, then exits 0
//
// Asio has no "about to sleep" hook, so the notifier stays armed whenever a
// wait is outstanding: arm() before each async_wait, and when arm() says a
// notify() came first, take it at once instead of waiting.
#include <signal.h>

#include <boost/asio.hpp>
#include <chrono>
#include <cstdio>
#include <functional>
#include <thread>

#include "doorbell/event_notifier.h"
#include "doorbell/signal_channel.h"
#include "doorbell/timer.h"

namespace asio = boost::asio;
using Descriptor = asio::posix::stream_descriptor;

int main() {
  const sigset_t original = doorbell::block_signals_before_threads({SIGUSR1});
  doorbell::SignalChannel signals({SIGUSR1});
  doorbell::EventNotifier notifier;
  doorbell::Timer timer;
  timer.arm_periodic(std::chrono::milliseconds(10));

  asio::io_context io;
  // The descriptors must not close fds they do not own: release() at the end.
  Descriptor signal_fd(io, signals.fd()), notifier_fd(io, notifier.fd()), timer_fd(io, timer.fd());
  int signals_seen = 0, notifications = 0;
  uint64_t ticks = 0;
  auto maybe_done = [&] {
    if (signals_seen >= 1 && notifications >= 1 && ticks >= 3) io.stop();
  };

  std::function<void()> wait_signals = [&] {
    signal_fd.async_wait(Descriptor::wait_read, [&](const boost::system::error_code& error) {
      if (error) return;
      signals.dispatch([&](const doorbell::SignalEvent& e) {
        std::printf("asio: %s\n", e.describe().c_str());
        ++signals_seen;
      });
      maybe_done();
      wait_signals();
    });
  };
  std::function<void(bool)> wait_notifier = [&](bool readable) {
    if (notifier.consume(readable)) {
      std::printf("asio: notified\n");
      ++notifications;
      maybe_done();
    }
    if (!notifier.arm()) {  // a notify() came first: take it without waiting
      asio::post(io, [&] { wait_notifier(false); });
      return;
    }
    notifier_fd.async_wait(Descriptor::wait_read, [&](const boost::system::error_code& error) {
      if (!error) wait_notifier(true);
    });
  };
  std::function<void()> wait_timer = [&] {
    timer_fd.async_wait(Descriptor::wait_read, [&](const boost::system::error_code& error) {
      if (error) return;
      ticks += timer.read();
      maybe_done();
      wait_timer();
    });
  };
  wait_signals();
  wait_notifier(false);
  wait_timer();

  std::thread producer([&] {
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
    notifier.notify();
  });
  ::kill(::getpid(), SIGUSR1);
  io.run();
  producer.join();
  std::printf("asio: %d signal(s), %d notification(s), %llu tick(s)\n", signals_seen, notifications,
              static_cast<unsigned long long>(ticks));
  signal_fd.release();
  notifier_fd.release();
  timer_fd.release();
  signals.stop();
  pthread_sigmask(SIG_SETMASK, &original, nullptr);
  return signals_seen >= 1 && notifications >= 1 && ticks >= 3 ? 0 : 1;
}
