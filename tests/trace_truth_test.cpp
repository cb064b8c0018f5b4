// TraceTruth: doorbell trace's backends against the truth of a workload that
// knows what it sent and took (tests/trace_truth_workload.cpp, one shape a
// run). Each shape is traced by the BPF and the tracefs backends at once,
// both limited to the workload's pid, and each backend's totals are compared
// with the truth: counts, every take paired (or its delay counted as not
// measured, with the reason), the largest delay no larger than the truth's
// (the workload's stamps enclose the kernel's generate and take), and
// nothing where the workload sent nothing.
//
// Needs root (bpf(2), tracefs); skips, saying so, otherwise. Every run has a
// deadline (RunOptions::timeout).
#include <gtest/gtest.h>
#include <signal.h>
#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <future>
#include <memory>
#include <string>
#include <thread>

#include <nlohmann/json.hpp>

#include "lab/trace/backend.h"
#include "lab/trace/tracker.h"
#include "tests/support/run_program.h"

namespace trace = doorbell::lab::trace;
using doorbell::test::RunOptions;
using doorbell::test::RunResult;
using doorbell::test::start_program;

namespace {

#define SKIP_UNLESS_ROOT()                                                                  \
  do {                                                                                      \
    if (::geteuid() != 0) GTEST_SKIP() << "tracing needs root (bpf(2), tracefs); not root"; \
  } while (0)

std::string workload() {
  return std::string(DOORBELL_BINARY_DIR) + "/tests/trace_truth_workload";
}

struct Traced {
  nlohmann::json truth;
  trace::Tracker bpf{0}, tracefs{0};
  pid_t pid = 0;
  long long bpf_lost = 0, tracefs_lost = 0;
};

// How run_shape traces.
struct ShapeOptions {
  // Trace the whole system (the shape's signals go to its children), not
  // only the workload's pid.
  bool whole_system = false;
  // Read the BPF maps and end an interval in both trackers every 200 ms, as
  // `doorbell trace` does: streams of processes that are gone retire.
  bool intervals = false;
  // bpf: as on a kernel without the bpf_task_from_pid kfunc (before 6.2).
  bool without_task_from_pid = false;
};

// Runs the workload's SHAPE with both backends attached to it.
void run_shape(const std::string& shape, int n, Traced& out, const ShapeOptions& shape_options) {
  RunOptions options;
  options.input = "g";
  options.timeout = std::chrono::seconds(120);
#if defined(__SANITIZE_ADDRESS__)
  // LeakSanitizer's check at the workload's exit stops every thread with
  // PTRACE_ATTACH, and an attach is a SIGSTOP: both backends rightly counted
  // two SIGSTOP generated where the workload sent one (the stopped shape;
  // passes with detect_leaks=0). The workload's leaks are not what this
  // test checks: it runs without the leak check.
  options.environment.emplace();
  for (char** e = environ; *e != nullptr; ++e)
    if (std::string(*e).rfind("ASAN_OPTIONS=", 0) != 0) options.environment->push_back(*e);
  const char* asan = std::getenv("ASAN_OPTIONS");
  options.environment->push_back(std::string("ASAN_OPTIONS=") + (asan ? asan : "") +
                                 (asan && *asan ? ":" : "") + "detect_leaks=0");
#endif
  auto program = start_program({workload(), shape, std::to_string(n)}, options);
  out.pid = program.pid();
  trace::BackendOptions backend_options;
  backend_options.only = shape_options.whole_system ? 0 : out.pid;
  std::unique_ptr<trace::Backend> bpf, tracefs;
  try {
    trace::BackendOptions bpf_options = backend_options;
    bpf_options.without_task_from_pid = shape_options.without_task_from_pid;
    bpf = trace::open_backend(trace::BackendKind::bpf, bpf_options);
    tracefs = trace::open_backend(trace::BackendKind::tracefs, backend_options);
  } catch (const trace::BackendUnavailable& e) {
    FAIL() << "a backend does not open here: " << e.what();
  }
  out.bpf = trace::Tracker(backend_options.only);
  out.tracefs = trace::Tracker(backend_options.only);
  // finish() feeds the go byte and waits for the end; tracefs is read
  // meanwhile so that its buffers never overrun.
  auto finished = std::async(std::launch::async, [&] { return program.finish(); });
  auto next_interval = std::chrono::steady_clock::now();
  while (finished.wait_for(std::chrono::milliseconds(10)) != std::future_status::ready) {
    tracefs->collect(out.tracefs, nullptr);
    if (shape_options.intervals && std::chrono::steady_clock::now() >= next_interval) {
      bpf->collect(out.bpf, nullptr);
      out.bpf.end_interval();
      out.tracefs.end_interval();
      next_interval += std::chrono::milliseconds(200);
    }
  }
  const RunResult r = finished.get();
  ASSERT_TRUE(r.success()) << r.describe();
  bpf->collect(out.bpf, nullptr);
  tracefs->collect(out.tracefs, nullptr);
  if (shape_options.intervals) {
    // The last children are gone: their streams retire now (both
    // backends' after a second read: bpf retires at the read after it
    // found them gone, tracefs keeps one with generates queued an interval
    // for takes still unread).
    out.bpf.end_interval();
    out.tracefs.end_interval();
    bpf->collect(out.bpf, nullptr);
    tracefs->collect(out.tracefs, nullptr);
    out.bpf.end_interval();
    out.tracefs.end_interval();
  }
  out.bpf_lost = bpf->lost_events();
  out.tracefs_lost = tracefs->lost_events();
  out.truth = nlohmann::json::parse(r.out);
}

void run_shape(const std::string& shape, int n, Traced& out) {
  run_shape(shape, n, out, ShapeOptions{});
}

const trace::Counts* totals(const trace::Tracker& t, pid_t pid, int sig) {
  auto it = t.streams().find(trace::Key{pid, sig});
  return it == t.streams().end() ? nullptr : &it->second.total;
}

// Both backends against the truth of every signal the workload lists.
// `tracefs_sees`: tracefs sees these takes (it misses sigwait and signalfd,
// and maps a thread that exited before the read to a process of its own).
void expect_truth(const Traced& t, bool tracefs_sees) {
  EXPECT_EQ(t.bpf_lost, 0);
  EXPECT_EQ(t.tracefs_lost, 0);
  for (const auto& s : t.truth["signals"]) {
    const int sig = s["sig"];
    const uint64_t sent = s["sent"], taken = s["taken"], discarded = s["discarded"];
    const uint64_t max_ns = s["max_delay_ns"];
    const uint64_t min_ns = s.value("min_delay_ns", uint64_t{0});
    const pid_t pid = s.value("pid", 0) != 0 ? s["pid"].get<pid_t>() : t.pid;
    for (const bool is_bpf : {true, false}) {
      if (!is_bpf && !tracefs_sees) continue;
      SCOPED_TRACE(std::string(is_bpf ? "bpf" : "tracefs") + ", " + trace::signal_name(sig));
      const trace::Counts* c = totals(is_bpf ? t.bpf : t.tracefs, pid, sig);
      ASSERT_NE(c, nullptr) << "no row";
      EXPECT_EQ(c->generated, sent);
      EXPECT_EQ(c->taken(), taken) << "takes";
      EXPECT_EQ(c->unpaired, 0u) << "takes paired with no generate";
      // Every take has its delay, or is counted as not measured.
      EXPECT_EQ(c->delay.count() + c->unmeasured(), taken);
      if (is_bpf) {
        EXPECT_EQ(c->discarded, discarded);
      }
      // The kernel's generate and take lie within the workload's stamps.
      if (c->delay.count() != 0) {
        EXPECT_LE(c->delay.max(), static_cast<double>(max_ns) + 1000.0)
            << "a delay longer than the truth's largest: paired with the wrong generate";
        // Where the truth knows a lower bound (a signal held back a known
        // time), every delay is at least that long: bpf's percentiles are
        // its buckets' midpoints, within a quarter octave (at most 25%).
        if (min_ns != 0) {
          EXPECT_GE(c->delay.max(), static_cast<double>(min_ns));
          EXPECT_GE(c->delay.percentile(50), 0.75 * static_cast<double>(min_ns));
        }
      }
    }
  }
}

// 1 and 3 of issue 32: a discarded pending signal (SIG_IGN while pending,
// and blocked, ignored, unblocked) shifted every later pairing by one: each
// of the 20 later signals read the 20 ms gap before it as its delay.
TEST(TraceTruth, DiscardedPendingSignalsShiftNoPairing) {
  SKIP_UNLESS_ROOT();
  Traced t;
  ASSERT_NO_FATAL_FAILURE(run_shape("discards", 20, t));
  expect_truth(t, true);
}

// Threads that each took one thread-directed signal, more than the BPF
// programs' table of per-thread queues holds (16,384): every one paired.
TEST(TraceTruth, ThreadChurnPastEveryTable) {
  SKIP_UNLESS_ROOT();
  Traced t;
  ASSERT_NO_FATAL_FAILURE(run_shape("threads", 18000, t));
  expect_truth(t, false);
}

// Real-time signals queued past the BPF programs' spill table: the ones it
// cannot remember are counted as unmeasured (reason: the table was full),
// never paired wrong or reported as sent before tracing began.
TEST(TraceTruth, RealTimeBurstPastEveryTable) {
  SKIP_UNLESS_ROOT();
  Traced t;
  ASSERT_NO_FATAL_FAILURE(run_shape("rt", 20000, t));
  expect_truth(t, false);
  const trace::Counts* c = totals(t.bpf, t.pid, SIGRTMIN);
  ASSERT_NE(c, nullptr);
  EXPECT_EQ(c->taken_sigwait, 20000u);
  EXPECT_GT(c->unmeasured_table_full, 0u) << "20,000 queued: more than the table holds";
}

// A process that exits with threads running: the kernel kills them with a
// SIGKILL of its own, which no one sent: neither a delivery nor unpaired.
TEST(TraceTruth, GroupExitIsNoDelivery) {
  SKIP_UNLESS_ROOT();
  Traced t;
  ASSERT_NO_FATAL_FAILURE(run_shape("group_exit", 0, t));
  for (const trace::Tracker* tracker : {&t.bpf, &t.tracefs}) {
    const trace::Counts* c = totals(*tracker, t.pid, SIGKILL);
    if (c == nullptr) continue;
    EXPECT_EQ(c->delivered, 0u) << (tracker == &t.bpf ? "bpf" : "tracefs");
    EXPECT_EQ(c->unpaired, 0u) << (tracker == &t.bpf ? "bpf" : "tracefs");
  }
}

// Takes by a signalfd read (issue 32's list): bpf counts each, paired with
// its own generate (tracefs does not see them).
TEST(TraceTruth, SignalfdTakesPairedInBpf) {
  SKIP_UNLESS_ROOT();
  Traced t;
  ASSERT_NO_FATAL_FAILURE(run_shape("signalfd", 200, t));
  expect_truth(t, false);
  const trace::Counts* c = totals(t.bpf, t.pid, SIGUSR2);
  ASSERT_NE(c, nullptr);
  EXPECT_EQ(c->taken_signalfd, 200u);
}

// A thread-directed signal pending when its thread exits (issue 32's list):
// discarded, never taken, never paired with a later take.
TEST(TraceTruth, ThreadExitsWithItsSignalPending) {
  SKIP_UNLESS_ROOT();
  Traced t;
  ASSERT_NO_FATAL_FAILURE(run_shape("thread_exit_pending", 500, t));
  expect_truth(t, false);
}

}  // namespace

// Takes by sigwait (issue 32's list): bpf counts each as taken by sigwait,
// paired with its own generate; tracefs has no event for them: it shows each
// as generated and never taken, with no delay and nothing unpaired. The
// first half were pending before sigtimedwait asked, every thread blocking
// them and no sigwait waiting: "blocked", each; the second half came while
// a thread waited in sigwaitinfo (its mask then lets them in): not blocked.
TEST(TraceTruth, SigwaitTakesPairedInBpfUnseenByTracefs) {
  SKIP_UNLESS_ROOT();
  Traced t;
  ASSERT_NO_FATAL_FAILURE(run_shape("sigwait", 40, t));
  expect_truth(t, false);
  const trace::Counts* c = totals(t.bpf, t.pid, SIGUSR1);
  ASSERT_NE(c, nullptr);
  EXPECT_EQ(c->taken_sigwait, 40u);
  EXPECT_EQ(c->delivered, 0u);
  EXPECT_EQ(c->causes.count[static_cast<int>(trace::Cause::blocked)], 20u);
  const trace::Counts* f = totals(t.tracefs, t.pid, SIGUSR1);
  ASSERT_NE(f, nullptr);
  EXPECT_EQ(f->generated, 40u);
  EXPECT_EQ(f->taken(), 0u);
  EXPECT_EQ(f->delay.count(), 0u);
  EXPECT_EQ(f->unpaired, 0u);
}

// A stopped target (issue 32's list): a child stops the workload with
// SIGSTOP, sends it SIGUSR1 (a handler) while it is stopped, and SIGCONT
// 50 ms later. Both backends: SIGSTOP generated and delivered once (the
// group stop is its take), SIGUSR1 paired with a delay of at least the
// stopped time, SIGCONT generated as ignored (its default action) and never
// taken. The cause bpf gives is "asleep": a stopped thread is off the CPU
// and not runnable, in a sleep that SIGUSR1 does not end (only SIGCONT or
// SIGKILL wake a stopped thread), which is what "asleep" means
// (docs/trace.md, Causes).
TEST(TraceTruth, StoppedTargetWaitsAsleepUntilSigcont) {
  SKIP_UNLESS_ROOT();
  Traced t;
  ASSERT_NO_FATAL_FAILURE(run_shape("stopped", 50, t));
  expect_truth(t, true);
  for (const trace::Tracker* tracker : {&t.bpf, &t.tracefs}) {
    SCOPED_TRACE(tracker == &t.bpf ? "bpf" : "tracefs");
    const trace::Counts* cont = totals(*tracker, t.pid, SIGCONT);
    ASSERT_NE(cont, nullptr);
    EXPECT_EQ(cont->ignored, 1u);
  }
  const trace::Counts* c = totals(t.bpf, t.pid, SIGUSR1);
  ASSERT_NE(c, nullptr);
  EXPECT_EQ(c->causes.count[static_cast<int>(trace::Cause::asleep)], 1u);
  const uint64_t stopped_ns = t.truth["signals"][1]["min_delay_ns"];
  EXPECT_GE(c->causes.ns[static_cast<int>(trace::Cause::asleep)], stopped_ns * 9 / 10);
}

// SIGSTOP and SIGKILL themselves, sent to children of three threads (issue
// 32's list), traced system-wide: half the children are stopped first, and
// show SIGSTOP generated once and delivered once (one thread takes it; the
// others stop without a take); every child shows SIGKILL generated once and
// taken once (stopped or asleep), paired: the kernel's
// SIGKILL of each thread as the group dies is no delivery of its own
// (docs/trace.md: bpf counts it as the take of the kill -9, once; tracefs
// pairs the first and ignores the rest, which have nothing queued).
TEST(TraceTruth, SigstopAndSigkillTakenOnceEach) {
  SKIP_UNLESS_ROOT();
  Traced t;
  ShapeOptions whole;
  whole.whole_system = true;
  ASSERT_NO_FATAL_FAILURE(run_shape("kill_stop", 10, t, whole));
  ASSERT_EQ(t.truth["signals"].size(), 15u);  // five stopped and killed, five killed asleep
  expect_truth(t, true);
}

// A signal pending across execve (issue 32's list): SIGUSR1 blocked and
// pending, then exec; the new image (comm "exe") unblocks it and takes it
// with a handler. Both backends: one generate, one take, paired, the delay
// spanning the exec; one row for the process (the comm it had when the row
// began), not a second one for the new image. bpf: "blocked" (every thread
// blocked it when it came).
TEST(TraceTruth, SignalPendingAcrossExecIsOneStream) {
  SKIP_UNLESS_ROOT();
  Traced t;
  ASSERT_NO_FATAL_FAILURE(run_shape("exec_pending", 1, t));
  expect_truth(t, true);
  for (const trace::Tracker* tracker : {&t.bpf, &t.tracefs}) {
    SCOPED_TRACE(tracker == &t.bpf ? "bpf" : "tracefs");
    int rows = 0;
    for (const auto& [key, stream] : tracker->streams())
      if (key.sig == SIGUSR1) ++rows;
    EXPECT_EQ(rows, 1);
  }
  const trace::Counts* c = totals(t.bpf, t.pid, SIGUSR1);
  ASSERT_NE(c, nullptr);
  EXPECT_EQ(c->causes.count[static_cast<int>(trace::Cause::blocked)], 1u);
}

// The same, the exec from a thread that is not the process's first: the
// kernel kills the first thread and the exec'ing thread takes over the
// process's pid as its own tid. The process's SIGUSR1 and the thread's own
// SIGUSR2 and six SIGRTMIN+1 survive and are taken after the exec. bpf: all
// paired, each signal in the one row of the process (it lost them: the
// process's state was in the old leader's task storage, the thread's FIFOs
// under its old tid). tracefs: SIGUSR1 paired; the thread's own signals'
// generates name its old tid,
// which no longer exists when the event is read, so it counts as a process
// of its own (docs/trace.md, limits) and the take is unpaired: not asserted.
TEST(TraceTruth, SignalsPendingAcrossExecFromASecondThread) {
  SKIP_UNLESS_ROOT();
#if defined(__SANITIZE_THREAD__)
  // TSan's runtime defers a handler to its next safe point and holds one
  // pending instance per signal number meanwhile: the six queued SIGRTMIN+1
  // ran the workload's handler once ("signal 35: taken 1 times, sent 6"), so
  // its truth cannot be counted here. The kernel side is the same in every
  // build; release and ASan+UBSan run it.
  GTEST_SKIP() << "under TSan a handler's queued real-time instances run it once";
#endif
  Traced t;
  ASSERT_NO_FATAL_FAILURE(run_shape("exec_pending_thread", 1, t));
  expect_truth(t, false);
  int rows = 0;
  for (const auto& [key, stream] : t.bpf.streams())
    if (key.sig == SIGUSR1 || key.sig == SIGUSR2 || key.sig == SIGRTMIN + 1) ++rows;
  EXPECT_EQ(rows, 3);
  // The six SIGRTMIN+1 of the thread: four kept inline, two spilled; all
  // moved to the new tid, none unmeasured.
  const trace::Counts* rt = totals(t.bpf, t.pid, SIGRTMIN + 1);
  ASSERT_NE(rt, nullptr);
  EXPECT_EQ(rt->delay.count(), 6u);
  EXPECT_EQ(rt->unmeasured(), 0u);
  const trace::Counts* f = totals(t.tracefs, t.pid, SIGUSR1);
  ASSERT_NE(f, nullptr);
  EXPECT_EQ(f->generated, 1u);
  EXPECT_EQ(f->delivered, 1u);
  EXPECT_EQ(f->delay.count(), 1u);
  EXPECT_LE(f->delay.max(), t.truth["signals"][0]["max_delay_ns"].get<double>() + 1000.0);
}

// The same on a kernel without the bpf_task_from_pid kfunc (before Linux
// 6.2; forced here): the process's state (its shared FIFOs) is not carried
// across the exec, so the process's SIGUSR1 is taken unpaired; the thread's
// own FIFOs, keyed by its tid, are, so its SIGUSR2 and six SIGRTMIN+1 stay
// paired. Every take counted once, nothing counted that did not happen: the
// first version counted the thread's seven signals taken (unpaired) and
// discarded at its exit.
TEST(TraceTruth, WithoutTaskFromPidAnExecLosesOnlyTheProcesssPairing) {
  SKIP_UNLESS_ROOT();
#if defined(__SANITIZE_THREAD__)
  GTEST_SKIP() << "under TSan a handler's queued real-time instances run it once";
#endif
  Traced t;
  ShapeOptions fallback;
  fallback.without_task_from_pid = true;
  ASSERT_NO_FATAL_FAILURE(run_shape("exec_pending_thread", 1, t, fallback));
  EXPECT_EQ(t.bpf_lost, 0);
  for (const auto& signal : t.truth["signals"]) {
    const int sig = signal["sig"];
    SCOPED_TRACE(trace::signal_name(sig));
    const uint64_t sent = signal["sent"], taken = signal["taken"];
    const trace::Counts* c = totals(t.bpf, t.pid, sig);
    ASSERT_NE(c, nullptr);
    EXPECT_EQ(c->generated, sent);
    EXPECT_EQ(c->taken(), taken);
    EXPECT_EQ(c->unpaired + c->delay.count() + c->unmeasured(), taken);
    EXPECT_EQ(c->discarded, 0u) << "a taken signal counted as discarded too";
    EXPECT_EQ(c->unpaired, sig == SIGUSR1 ? taken : 0u);
  }
}

// Process churn (issue 32's list asks 6,000; 600 here: a short process
// costs about 3 ms on the development VM, 18 s for 6,000, and the matrix runs
// in three builds): each child sends itself SIGRTMIN+11 and takes it with a
// handler. Traced system-wide with intervals, as `doorbell trace` does: the
// counts over every row of SIGRTMIN+11 are exact, every take paired, and
// the streams of the children that are gone are retired into the aggregate
// row (its memory freed).
TEST(TraceTruth, ProcessChurnCountedExactlyAndRetired) {
  SKIP_UNLESS_ROOT();
  Traced t;
  ShapeOptions churn;
  churn.whole_system = true;
  churn.intervals = true;
  constexpr uint64_t kProcesses = 600;
  ASSERT_NO_FATAL_FAILURE(run_shape("processes", static_cast<int>(kProcesses), t, churn));
  const int sig = SIGRTMIN + 11;
  ASSERT_EQ(t.truth["signals"][0]["sent"].get<uint64_t>(), kProcesses);
  const uint64_t max_ns = t.truth["signals"][0]["max_delay_ns"];
  EXPECT_EQ(t.bpf_lost, 0);
  EXPECT_EQ(t.tracefs_lost, 0);
  for (const trace::Tracker* tracker : {&t.bpf, &t.tracefs}) {
    SCOPED_TRACE(tracker == &t.bpf ? "bpf" : "tracefs");
    trace::Counts sum;
    uint64_t live_rows = 0, retired_processes = 0;
    for (const auto& [key, stream] : tracker->streams()) {
      if (key.sig != sig) continue;
      trace::accumulate(sum, stream.total);
      if (key.tgid == trace::kRetired)
        retired_processes = stream.processes;
      else
        ++live_rows;
    }
    EXPECT_EQ(sum.generated, kProcesses);
    EXPECT_EQ(sum.delivered, kProcesses);
    EXPECT_EQ(sum.unpaired, 0u);
    EXPECT_EQ(sum.delay.count(), kProcesses);
    EXPECT_LE(sum.delay.max(), static_cast<double>(max_ns) + 1000.0);
    // Every child is gone: its row retired, unless its pid was taken again
    // by a process alive at the end (a few at most).
    EXPECT_GT(retired_processes, 0u);
    EXPECT_LE(live_rows, kProcesses / 100) << "streams of exited processes not retired";
  }
}
