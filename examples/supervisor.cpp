// supervisor: keeps N children running, restarts the ones that crash, and
// stops them all cleanly on SIGTERM/SIGINT.
//
//   ./example_supervisor            # 3 workers that crash now and then
//   ./example_supervisor --demo     # workers crash fast; stops after 6 restarts
//
// Each child is a ChildProcess: spawned with an empty mask and default
// dispositions (the supervisor blocks SIGTERM for its own signalfd, and the
// children must not inherit that), watched through its pidfd in the
// EventLoop (no SIGCHLD, so nothing coalesces and nothing is left a zombie),
// and signalled through the pidfd (never a recycled PID).
#include <signal.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <cstring>
#include <functional>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "doorbell/child_process.h"
#include "doorbell/event_loop.h"
#include "doorbell/signal_channel.h"

namespace {

// A worker that does "work" for a while, then crashes with SIGSEGV or exits
// with 1. A real supervisor would run real programs.
std::vector<std::string> worker_command(bool demo) {
  const char* script =
      demo ? "sleep 0.0$((RANDOM % 5 + 1)); [ $((RANDOM % 2)) = 0 ] && kill -SEGV $$; exit 1"
           : "sleep $((RANDOM % 5 + 1)); kill -SEGV $$";
  return {"/bin/bash", "-c", script};
}

}  // namespace

int main(int argc, char** argv) {
  const bool demo = argc > 1 && std::strcmp(argv[1], "--demo") == 0;
  const int workers = 3;
  const int max_restarts = demo ? 6 : 1000;

  const sigset_t original_mask = doorbell::block_signals_before_threads({SIGTERM, SIGINT});
  doorbell::SignalChannel signals({SIGTERM, SIGINT});
  doorbell::EventLoop loop;
  std::map<int, std::unique_ptr<doorbell::ChildProcess>> children;  // by slot
  int restarts = 0;
  bool stopping = false;

  // Starts the worker for `slot` and watches its pidfd.
  std::function<void(int)> start = [&](int slot) {
    auto child = std::make_unique<doorbell::ChildProcess>(
        doorbell::ChildProcess::spawn(worker_command(demo)));
    std::printf("slot %d: started pid %d\n", slot, static_cast<int>(child->pid()));
    const int fd = child->fd();
    children[slot] = std::move(child);
    loop.add(fd, doorbell::EventLoop::kReadable, [&, slot, fd](uint32_t) {
      loop.remove(fd);
      const doorbell::ExitStatus status = children[slot]->wait();  // reaps it
      std::printf("slot %d: pid %d %s\n", slot, static_cast<int>(children[slot]->pid()),
                  status.describe().c_str());
      children.erase(slot);
      if (stopping) {
        if (children.empty()) loop.stop();
        return;
      }
      if (++restarts > max_restarts) {
        std::printf("too many restarts, stopping\n");
        ::kill(::getpid(), SIGTERM);  // the same path as an operator's SIGTERM
        return;
      }
      // Restart after a short back-off, on the loop's timer.
      loop.add_timer(std::chrono::milliseconds(demo ? 10 : 500), std::chrono::nanoseconds(0),
                     [&, slot](uint64_t) {
                       if (!stopping) start(slot);
                     });
    });
  };

  loop.add(signals.fd(), doorbell::EventLoop::kReadable, [&](uint32_t) {
    signals.dispatch([&](const doorbell::SignalEvent& event) {
      std::printf("supervisor: %s\n", event.describe().c_str());
      if (stopping) return;
      stopping = true;
      if (children.empty()) {
        loop.stop();
        return;
      }
      for (auto& [slot, child] : children) child->send_signal(SIGTERM);
    });
  });

  for (int slot = 0; slot < workers; ++slot) start(slot);
  loop.run();

  loop.remove(signals.fd());
  signals.stop();
  doorbell::restore_signal_mask(original_mask);
  std::printf("supervisor: all children stopped after %d restarts\n", restarts);
  return 0;
}
