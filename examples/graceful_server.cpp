// graceful_server: a server that reloads on SIGHUP and shuts down gracefully
// on SIGTERM or SIGINT, with no user code in a signal handler.
//
//   ./example_graceful_server          # run; kill -HUP / -TERM it, or press Ctrl-C
//   ./example_graceful_server --demo   # sends itself SIGHUP, then SIGTERM
//
// The pattern:
//   1. block the signals first thing in main(), before any thread exists, so
//      the signalfd mechanism can take them (every thread inherits the mask);
//   2. watch them with a SignalChannel inside the EventLoop;
//   3. on SIGTERM/SIGINT stop taking new work, finish the work in flight,
//      stop the channel and restore the mask: a second Ctrl-C during a slow
//      shutdown then kills the process, as users expect.
#include <signal.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <thread>

#include "doorbell/event_loop.h"
#include "doorbell/signal_channel.h"

int main(int argc, char** argv) {
  const bool demo = argc > 1 && std::strcmp(argv[1], "--demo") == 0;

  // 1. Before any thread: block what the channel will read.
  const sigset_t original_mask = doorbell::block_signals_before_threads({SIGTERM, SIGINT, SIGHUP});

  // A worker thread standing in for the server's real work. It inherits the
  // mask, so signals never interrupt it.
  std::atomic<bool> accepting{true};
  std::atomic<int> generation{1};
  std::thread worker([&] {
    while (accepting.load()) std::this_thread::sleep_for(std::chrono::milliseconds(10));
    std::printf("worker: finished the requests in flight\n");
  });

  // 2. The channel in the loop. Automatic picks signalfd here.
  doorbell::SignalChannel signals({SIGTERM, SIGINT, SIGHUP});
  doorbell::EventLoop loop;
  std::printf("pid %d, mechanism %s; send SIGHUP to reload, SIGTERM or Ctrl-C to stop\n",
              static_cast<int>(::getpid()), doorbell::mechanism_name(signals.mechanism()));

  loop.add(signals.fd(), doorbell::EventLoop::kReadable, [&](uint32_t) {
    signals.dispatch([&](const doorbell::SignalEvent& event) {
      std::printf("event: %s\n", event.describe().c_str());
      if (event.signal == SIGHUP) {
        std::printf("reloading configuration (generation %d)\n", ++generation);
      } else {
        std::printf("shutting down gracefully\n");
        accepting = false;
        loop.stop();
      }
    });
  });

  if (demo) {
    loop.add_timer(std::chrono::milliseconds(50), std::chrono::nanoseconds(0),
                   [](uint64_t) { ::kill(::getpid(), SIGHUP); });
    loop.add_timer(std::chrono::milliseconds(100), std::chrono::nanoseconds(0),
                   [](uint64_t) { ::kill(::getpid(), SIGTERM); });
  }

  loop.run();

  // 3. Drain the work, give the signals back.
  worker.join();
  loop.remove(signals.fd());
  signals.stop();
  while (auto late = signals.try_receive()) {
    std::printf("arrived during shutdown: %s\n", late->describe().c_str());
  }
  doorbell::restore_signal_mask(original_mask);
  const auto stats = signals.stats();
  std::printf("done: %llu events, %llu merged\n", static_cast<unsigned long long>(stats.events),
              static_cast<unsigned long long>(stats.coalesced));
  return 0;
}
