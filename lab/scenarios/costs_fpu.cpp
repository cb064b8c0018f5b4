// fpu: what the vector register state adds to one handled signal.
//
// On x86 the kernel saves the thread's whole XSAVE state into the signal
// frame on the user stack before the handler runs, hands the handler a clean
// state, and restores the saved state in rt_sigreturn. XSAVE and XRSTOR skip
// components that are in their initial configuration (XINUSE clear), so the
// cost depends on which components the interrupted code had dirtied: nothing
// beyond SSE ("clean"), the upper halves of YMM registers ("avx2"), or the
// AVX-512 opmask, ZMM upper halves and ZMM16-31 ("avx512"). A handler that
// itself uses AVX-512 is the fourth row. A tgkill with signal 0 (permission
// check, no delivery) is the floor: the same syscall without a signal.
//
// Each sample: set the state (outside the timing), check XINUSE where the CPU
// reports it, then time tgkill(self) to return; the handler runs before it
// returns, so the sample is send + frame + handler + sigreturn.
#include <pthread.h>
#include <signal.h>
#include <time.h>
#include <unistd.h>

#include <atomic>
#include <string>

#include "lab/common/costs_probes.h"
#include "lab/common/signal_scope.h"
#include "lab/common/time.h"
#include "lab/harness/scenario.h"
#include "sys/error.h"
#include "sys/proc.h"
#include "sys/tgkill.h"

namespace doorbell::lab {
namespace {

namespace costs = doorbell::lab::costs;

std::atomic<uint64_t> g_handled{0};
bool g_touch_avx512 = false;  // set only while no signal is in flight

void fpu_handler(int, siginfo_t*, void*) {
  if (g_touch_avx512) costs::touch_avx512_in_handler();
  g_handled.fetch_add(1, std::memory_order_relaxed);
}

const costs::VectorSupport& support() {
  static const costs::VectorSupport s = costs::probe_vector_support();
  return s;
}

// Bytes of XSAVE state the claimed components hold (architectural sizes).
int dirty_bytes(costs::VectorState state) {
  switch (state) {
    case costs::VectorState::clean:
      return 0;
    case costs::VectorState::avx2:
      return 256;
    case costs::VectorState::avx512:
      return 256 + 64 + 512 + 1024;
  }
  return 0;
}

void check_usable(costs::VectorState state, bool handler_avx512) {
  const auto& s = support();
  std::string why;
  if (state == costs::VectorState::clean) {
    if (!s.xrstor_usable()) why = "cannot reset vector state: " + s.why_not_avx2();
  } else if (state == costs::VectorState::avx2) {
    why = s.why_not_avx2();
  } else {
    why = s.why_not_avx512();
  }
  if (why.empty() && handler_avx512) why = s.why_not_avx512();
  if (!why.empty()) throw SkipScenario(why);
}

void run_self_signal(Context& ctx, costs::VectorState state, bool handler_avx512, bool deliver) {
  check_usable(state, handler_avx512);
  const auto& s = support();
  const auto& clock = IntervalClock::get();
  const int signo = deliver ? SIGUSR1 : 0;
  ScopedDisposition handler(SIGUSR1, &fpu_handler, 0);
  ScopedMask unblock(SIG_UNBLOCK, {SIGUSR1});
  g_touch_avx512 = handler_avx512;
  const uint64_t handled_before = g_handled.load(std::memory_order_relaxed);
  const pid_t pid = getpid();
  const pid_t tid = sys::current_tid();
  const bool verify = s.xgetbv1;
  const uint64_t expected = costs::vector_state_bits(state);
  Histogram& h = ctx.metric();
  std::size_t n = 0;
  uint64_t mismatches = 0;
  while (ctx.keep_going(n)) {
    costs::set_vector_state(s, state);
    if (verify && (costs::xinuse() & costs::kXstateManaged) != expected) ++mismatches;
    const uint64_t t0 = clock.read();
    const int rc = sys::tgkill(pid, tid, signo);
    const uint64_t t1 = clock.read();
    if (rc != 0) sys::fatal("tgkill to self", -rc);
    h.record(clock.to_ns(t1 - t0));
    ++n;
  }
  g_touch_avx512 = false;
  costs::set_vector_state(s, costs::VectorState::clean);
  const uint64_t handled = g_handled.load(std::memory_order_relaxed) - handled_before;
  ctx.counter("sent", deliver ? static_cast<double>(n) : 0.0);
  ctx.counter("delivered", static_cast<double>(handled));
  ctx.counter("state_mismatch", static_cast<double>(mismatches));
  ctx.counter("at_minsigstksz_bytes", static_cast<double>(costs::min_signal_stack_size()));
  ctx.counter("xsave_area_bytes", static_cast<double>(s.xsave_area_bytes));
  if (!verify && ctx.repetition() == 0) ctx.note("state not verified: " + s.why_not_xinuse());
  if (mismatches != 0)
    ctx.note("XINUSE did not match the claimed state in " + std::to_string(mismatches) +
             " samples");
}

Scenario self_signal(costs::VectorState state, bool handler_avx512) {
  const std::string st = costs::vector_state_name(state);
  const std::string handler = handler_avx512 ? "avx512" : "plain";
  Scenario sc;
  sc.name = "fpu/self_signal:state=" + st + ",handler=" + handler +
            ",dirty_bytes=" + std::to_string(dirty_bytes(state));
  sc.group = "fpu";
  sc.title = "self-signal, vector state " + st + ", handler " + handler;
  sc.description =
      "one tgkill(getpid(), gettid(), SIGUSR1) with the handler running before it returns: "
      "send, XSAVE of the state into the signal frame, handler (" +
      std::string(handler_avx512 ? "writes ZMM8, ZMM16 and k1" : "one relaxed increment") +
      "), rt_sigreturn with XRSTOR. The vector state is set before the first clock read: " + st +
      " (" + std::to_string(dirty_bytes(state)) +
      " bytes of AVX/AVX-512 state in use, checked with XGETBV(1) where the CPU has it). "
      "Interval clock read on the sending thread before the call and after it returns.";
  sc.params = {
      {"state", st}, {"handler", handler}, {"dirty_bytes", std::to_string(dirty_bytes(state))}};
  sc.clock = IntervalClock::get().kind();
  sc.budget_s = 0.05;
  sc.samples = 20000;
  sc.run = [state, handler_avx512](Context& ctx) {
    run_self_signal(ctx, state, handler_avx512, true);
  };
  return sc;
}

Scenario no_signal(costs::VectorState state) {
  const std::string st = costs::vector_state_name(state);
  Scenario sc;
  sc.name = "fpu/tgkill_sig0:state=" + st + ",dirty_bytes=" + std::to_string(dirty_bytes(state));
  sc.group = "fpu";
  sc.title = "tgkill with signal 0 (no delivery), vector state " + st;
  sc.description =
      "one tgkill(getpid(), gettid(), 0): the kernel checks the target and permission and "
      "delivers nothing, so no frame is built. The floor under the self-signal rows, with the "
      "same vector state set before the first clock read. Interval clock on one thread.";
  sc.params = {{"state", st}, {"dirty_bytes", std::to_string(dirty_bytes(state))}};
  sc.clock = IntervalClock::get().kind();
  sc.budget_s = 0.03;
  sc.samples = 20000;
  sc.run = [state](Context& ctx) { run_self_signal(ctx, state, false, false); };
  return sc;
}

const Registrar kRegistrar{std::vector<Scenario>{
    no_signal(costs::VectorState::clean),
    no_signal(costs::VectorState::avx512),
    self_signal(costs::VectorState::clean, false),
    self_signal(costs::VectorState::avx2, false),
    self_signal(costs::VectorState::avx512, false),
    self_signal(costs::VectorState::clean, true),
}};

const RatioRegistrar kRatios{{
    {.name = "AVX-512 dirty / clean (self-signal)",
     .numerator = "fpu/self_signal:state=avx512,handler=plain,dirty_bytes=1856",
     .denominator = "fpu/self_signal:state=clean,handler=plain,dirty_bytes=0",
     .meaning = "what dirty AVX-512 registers add to one handled signal (XSAVE/XRSTOR of "
                "~1.8 KB more state); seed 000 calls the frame the largest cost but gives no "
                "figure"},
    {.name = "AVX2 dirty / clean (self-signal)",
     .numerator = "fpu/self_signal:state=avx2,handler=plain,dirty_bytes=256",
     .denominator = "fpu/self_signal:state=clean,handler=plain,dirty_bytes=0",
     .meaning = "what dirty YMM upper halves add to one handled signal"},
    {.name = "AVX-512 handler / plain handler",
     .numerator = "fpu/self_signal:state=clean,handler=avx512,dirty_bytes=0",
     .denominator = "fpu/self_signal:state=clean,handler=plain,dirty_bytes=0",
     .meaning = "a handler that uses vector registers: the kernel restores the interrupted "
                "state on sigreturn either way"},
    {.name = "self-signal / tgkill(sig 0), clean",
     .numerator = "fpu/self_signal:state=clean,handler=plain,dirty_bytes=0",
     .denominator = "fpu/tgkill_sig0:state=clean,dirty_bytes=0",
     .reference = 4.9,
     .reference_source = "seed 001 (signal / getpid syscall, gcc:13 container on ARM64)",
     .meaning = "delivery (frame, handler, sigreturn) over the bare syscall; the seed compares "
                "kill+handler with getpid, we compare with the same tgkill minus delivery"},
}};

}  // namespace
}  // namespace doorbell::lab
