// event_loop: stop() racing run() from another thread.
//
// A round makes one EventLoop and runs 1..16 cycles of: a runner thread calls
// run(); this thread calls stop() after a random delay (or before run()
// starts: stop() is sticky). run() must return within one wait. A run()
// that does not is a lost stop: recorded, then rescued with a second stop()
// (which finds the loop asleep and wakes it). If even that fails, the round
// stays stuck and the orchestrator records the hang.
#include <atomic>
#include <thread>

#include "doorbell/event_loop.h"
#include "tests/torture/torture.h"

namespace doorbell::torture {
namespace {

void event_loop_round(Context& ctx) {
  Rng& rng = ctx.rng();
  EventLoop loop;
  // Some rounds keep a periodic timer, so that run_once() returns now and
  // then without a stop (more passes through run()'s check).
  if (rng.chance(4))
    loop.add_timer(std::chrono::microseconds(200), std::chrono::microseconds(200), [](uint64_t) {});
  const int cycles = 1 + static_cast<int>(rng.below(16));
  for (int cycle = 0; cycle < cycles; ++cycle) {
    const int variant = static_cast<int>(rng.below(4));  // 0: stop before run()
    std::atomic<bool> started{false};
    Latch returned;
    if (variant == 0) loop.stop();
    ctx.phase("cycle %d variant %d: runner starting run()", cycle, variant);
    std::thread runner([&] {
      started.store(true, std::memory_order_release);
      loop.run();
      returned.set();
    });
    if (variant != 0) {
      while (!started.load(std::memory_order_acquire)) cpu_relax();
      if (variant == 1) {
        for (uint64_t i = rng.below(3000); i > 0; --i) cpu_relax();
      } else if (variant == 2) {
        sched_yield();
      } else {
        random_delay(rng, 500, 100);
      }
      loop.stop();
    }
    ctx.phase("cycle %d variant %d: waiting for run() to return after stop()", cycle, variant);
    if (!returned.wait_until_ns(ctx.deadline())) {
      ctx.fail(
          "EventLoop::run() did not return within %lld ms of stop() (lost stop; cycle %d, "
          "variant %d)",
          static_cast<long long>(ctx.wait_ms()), cycle, variant);
      ctx.phase("cycle %d: a second stop() to rescue a lost stop", cycle);
      loop.stop();
      if (!returned.wait_until_ns(ctx.deadline())) {
        ctx.phase("cycle %d: run() ignored a second stop() too; stuck in join", cycle);
      }
    }
    runner.join();
    ctx.note(0, "stop_run_cycles");
    if (loop.stop_requested()) {
      ctx.fail("stop_requested() still true after run() returned because of it (cycle %d)", cycle);
      return;
    }
    if (ctx.failed_this_round()) return;  // the loop is suspect: next round, next loop
  }
}

}  // namespace

const Path kEventLoopPath{"event_loop", "EventLoop::stop() from one thread racing run() on another",
                          nullptr, event_loop_round};

}  // namespace doorbell::torture
