// uv_loop: a SignalChannel, an EventNotifier and a Timer inside a libuv loop.
// Each exposes one fd; libuv watches it with a uv_poll_t, and no doorbell
// code needs to know about libuv.
//
//   ./example_uv_loop      # sends itself SIGUSR1, notifies from a thread,
//                          # lets the timer tick three times, then exits 0
//
// The EventNotifier wants to know when its consumer is about to sleep (only
// then does a notify() pay for an eventfd write). libuv says exactly that
// with a uv_prepare_t, which runs right before the loop blocks for I/O.
#include <signal.h>
#include <uv.h>

#include <chrono>
#include <cstdio>
#include <thread>

#include "doorbell/event_notifier.h"
#include "doorbell/signal_channel.h"
#include "doorbell/timer.h"

namespace {

struct App {
  doorbell::SignalChannel* signals = nullptr;
  doorbell::EventNotifier* notifier = nullptr;
  doorbell::Timer* timer = nullptr;
  uv_loop_t* loop = nullptr;
  int signals_seen = 0, notifications = 0;
  uint64_t ticks = 0;
  void maybe_done() {
    if (signals_seen >= 1 && notifications >= 1 && ticks >= 3) uv_stop(loop);
  }
};

App& app_of(uv_handle_t* h) {
  return *static_cast<App*>(h->data);
}

}  // namespace

int main() {
  // Before any thread: block what the channel reads (signalfd mechanism).
  const sigset_t original = doorbell::block_signals_before_threads({SIGUSR1});
  doorbell::SignalChannel signals({SIGUSR1});
  doorbell::EventNotifier notifier;
  doorbell::Timer timer;
  timer.arm_periodic(std::chrono::milliseconds(10));

  App app{&signals, &notifier, &timer, uv_default_loop()};
  uv_poll_t signal_poll, notifier_poll, timer_poll;
  uv_prepare_t before_sleep;
  for (uv_poll_t* p : {&signal_poll, &notifier_poll, &timer_poll}) p->data = &app;
  before_sleep.data = &app;

  uv_poll_init(app.loop, &signal_poll, signals.fd());
  uv_poll_start(&signal_poll, UV_READABLE, [](uv_poll_t* h, int, int) {
    App& a = app_of(reinterpret_cast<uv_handle_t*>(h));
    a.signals->dispatch([&](const doorbell::SignalEvent& e) {
      std::printf("uv: %s\n", e.describe().c_str());
      ++a.signals_seen;
    });
    a.maybe_done();
  });

  uv_poll_init(app.loop, &notifier_poll, notifier.fd());
  uv_poll_start(&notifier_poll, UV_READABLE, [](uv_poll_t* h, int, int) {
    App& a = app_of(reinterpret_cast<uv_handle_t*>(h));
    if (a.notifier->consume(true)) {
      std::printf("uv: notified\n");
      ++a.notifications;
    }
    a.maybe_done();
  });
  uv_prepare_init(app.loop, &before_sleep);
  uv_prepare_start(&before_sleep, [](uv_prepare_t* h) {
    App& a = app_of(reinterpret_cast<uv_handle_t*>(h));
    // About to sleep: arm. false means a notify() came first and nobody will
    // write the fd, so take it now instead of sleeping on it.
    if (!a.notifier->arm() && a.notifier->consume(false)) {
      std::printf("uv: notified (taken before sleeping)\n");
      ++a.notifications;
      a.maybe_done();
    }
  });

  uv_poll_init(app.loop, &timer_poll, timer.fd());
  uv_poll_start(&timer_poll, UV_READABLE, [](uv_poll_t* h, int, int) {
    App& a = app_of(reinterpret_cast<uv_handle_t*>(h));
    a.ticks += a.timer->read();
    a.maybe_done();
  });

  std::thread producer([&] {
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
    notifier.notify();
  });
  ::kill(::getpid(), SIGUSR1);

  uv_run(app.loop, UV_RUN_DEFAULT);
  producer.join();
  std::printf("uv: %d signal(s), %d notification(s), %llu tick(s)\n", app.signals_seen,
              app.notifications, static_cast<unsigned long long>(app.ticks));

  for (uv_poll_t* p : {&signal_poll, &notifier_poll, &timer_poll})
    uv_close(reinterpret_cast<uv_handle_t*>(p), nullptr);
  uv_close(reinterpret_cast<uv_handle_t*>(&before_sleep), nullptr);
  uv_run(app.loop, UV_RUN_DEFAULT);
  uv_loop_close(app.loop);
  signals.stop();
  pthread_sigmask(SIG_SETMASK, &original, nullptr);
  return app.signals_seen >= 1 && app.notifications >= 1 && app.ticks >= 3 ? 0 : 1;
}
