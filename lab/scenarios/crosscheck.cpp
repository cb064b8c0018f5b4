// Cross-checks with rt-tests (full suite only): sigwaittest, ptsematest and
// pmqtest, each beside doorbell's own implementation of the same protocol.
//
// The protocol of all three tools (rt-tests 2.x, threads mode, one pair):
//   sender:   t0 = now; send; wait for the receiver's reply
//   receiver: wait (blocked in the kernel); t1 = now; sample = t1 - t0;
//             sleep `interval`; reply
// so every sample is a one-way latency to a receiver that has been asleep
// for one interval. Both threads run SCHED_FIFO at the same priority (-p),
// unpinned (no -a); the tool's main thread only polls every 50 ms.
//
//   sigwaittest: pthread_kill(receiver, SIGUSR2) -> sigwait() returns
//   ptsematest:  pthread_mutex_unlock() -> the blocked pthread_mutex_lock()
//                returns (two default mutexes used as binary semaphores:
//                the one the receiver waits on starts locked, and each is
//                unlocked by the thread that did not lock it)
//   pmqtest:     mq_send() of 8 bytes -> the blocked mq_receive() returns
//                (queues of one message of 8 bytes)
//
// Each tool has two rows: `impl=rt-tests` runs the tool (-q -l LOOPS -i
// INTERVAL -p PRIO --json FILE) under a timeout; `impl=doorbell` runs the
// same protocol here (same loop count, interval, priority, thread arrangement
// and one-way span), then runs the tool once more in the same repetition, so
// that its counters hold a paired ratio measured under the same load.
//
// The tool prints only min/avg/max of a run, so both rows' primary metric,
// `run_mean`, is one sample per run: that run's mean one-way latency. The
// registered ratio divides the medians over repetitions of those means, so
// like is compared with like and one run disturbed by the rest of a loaded
// machine does not decide it. Our row keeps every sample as `one_way`.
//
// Where ours differs, on purpose:
//  - our waits have a 2 s limit (sigtimedwait, FUTEX_WAIT with a deadline,
//    mq_timedreceive) so that a lost wake-up fails the row instead of hanging
//    the run; the kernel arms a timer when the receiver blocks and cancels
//    it after the wake-up (tens of ns against microseconds);
//  - the tool calls mlockall(); we do not (it would lock the whole harness,
//    and sanitizer shadow memory with it); the warm-up repetition takes the
//    page faults instead;
//  - the tool reads gettimeofday() (1 us resolution); we read
//    CLOCK_MONOTONIC. Truncating both ends to whole microseconds leaves the
//    mean unbiased, so the rows compare means (the tool prints no
//    percentiles);
//  - ptsematest unlocks a mutex from a thread that does not own it (which
//    POSIX leaves undefined and ThreadSanitizer reports); ours does what
//    glibc's default mutex does underneath: the same three-state futex word,
//    the same FUTEX_WAIT and FUTEX_WAKE (private) system calls.
#include <fcntl.h>
#include <mqueue.h>
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <sys/mman.h>
#include <time.h>
#include <unistd.h>

#include <fmt/format.h>
#include <atomic>
#include <cerrno>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <exception>
#include <latch>
#include <memory>
#include <mutex>
#include <nlohmann/json.hpp>
#include <optional>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

#include "doorbell/child_process.h"
#include "lab/common/format.h"
#include "lab/harness/scenario.h"
#include "sys/error.h"
#include "sys/fd.h"
#include "sys/futex.h"
#include "sys/path.h"

namespace doorbell::lab {
namespace {

constexpr int kIntervalUs = 1000;  // the tools' default -i
constexpr int kPriority = 80;      // SCHED_FIFO priority of both threads, theirs and ours
constexpr uint64_t kWaitLimitNs = 2'000'000'000;  // one wait of ours, before the row fails
constexpr double kAgreement = 0.25;               // the goal: within 25%

enum class Protocol { sigwait, mutex, mqueue };

struct Tool {
  Protocol protocol;
  const char* program;   // "sigwaittest"
  const char* wakeup;    // what wakes the receiver, for titles
  const char* our_what;  // what our implementation does
};

constexpr Tool kTools[] = {
    {Protocol::sigwait, "sigwaittest", "pthread_kill -> sigwait",
     "pthread_kill(receiver, SIGUSR2); the receiver (SIGUSR2 blocked) returns from "
     "sigtimedwait; the reply is SIGUSR1 to the sender, also taken with sigtimedwait"},
    {Protocol::mutex, "ptsematest", "mutex unlock -> lock",
     "unlock of a futex word the receiver is blocked on in FUTEX_WAIT (glibc's default-mutex "
     "protocol: 0 free, 1 locked, 2 locked with waiters; unlock wakes one when it was 2); the "
     "reply unlocks a second word the sender is blocked on"},
    {Protocol::mqueue, "pmqtest", "mq_send -> mq_receive",
     "mq_send of 7 bytes (priority 1) to a queue of one 8-byte message; the receiver returns "
     "from mq_timedreceive; the reply goes through a second such queue"},
};

std::string skip_reason() {
  return "rt-tests not installed (apt-get install rt-tests)";
}

// The program's path when PATH has an executable of that name.
// Without PATH nothing is found here (the test's empty-PATH case), not the
// C library's default directories.
std::optional<std::string> find_on_path(const std::string& program) {
  if (std::getenv("PATH") == nullptr) return std::nullopt;
  return sys::find_program(program);
}

// The SCHED_FIFO priority both sides use: kPriority when a thread of ours may
// take it (we are root, or have CAP_SYS_NICE and an RLIMIT_RTPRIO), else 0:
// then the tool runs without -p and both sides stay SCHED_OTHER (the tool
// asks for SCHED_FIFO 0, which the kernel refuses, and goes on).
int usable_priority() {
  static const int priority = [] {
    int result = 0;
    std::thread probe([&result] {
      sched_param param{};
      param.sched_priority = kPriority;
      if (pthread_setschedparam(pthread_self(), SCHED_FIFO, &param) == 0) result = kPriority;
    });
    probe.join();
    return result;
  }();
  return priority;
}

void take_priority(int priority) {
  if (priority <= 0) return;
  sched_param param{};
  param.sched_priority = priority;
  // Refused only if the probe was wrong (a cpuset or cgroup changed since):
  // the row still runs, as SCHED_OTHER; usable_priority() said what we asked.
  (void)pthread_setschedparam(pthread_self(), SCHED_FIFO, &param);
}

// What one run of a protocol measured (ours or theirs), in ns.
struct RunSummary {
  std::size_t loops = 0;
  double min_ns = 0, avg_ns = 0, max_ns = 0;
};

// --- theirs: the tool, under a timeout ---------------------------------------

std::string read_all(int fd) {
  std::string text;
  if (::lseek(fd, 0, SEEK_SET) < 0) return text;
  char buf[4096];
  for (;;) {
    const ssize_t n = ::read(fd, buf, sizeof buf);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) break;
    text.append(buf, static_cast<std::size_t>(n));
  }
  return text;
}

// A file the tool writes its --json into, removed when we are done.
class TempFile {
 public:
  TempFile() {
    const char* dir = std::getenv("TMPDIR");
    path_ = std::string(dir != nullptr && *dir ? dir : "/tmp") + "/doorbell-crosscheck-XXXXXX";
    const int fd = ::mkstemp(path_.data());
    if (fd < 0) sys::throw_errno("mkstemp " + path_);
    ::close(fd);
  }
  ~TempFile() { ::unlink(path_.c_str()); }
  TempFile(const TempFile&) = delete;
  TempFile& operator=(const TempFile&) = delete;
  const std::string& path() const { return path_; }

 private:
  std::string path_;
};

// The quiet summary line: "#1 -> #0, Min   16, Cur   23, Avg   32, Max  543"
// (whole microseconds). False when there is none.
bool parse_quiet_line(const std::string& out, RunSummary& summary) {
  const std::size_t at = out.find("#1 -> #0");
  if (at == std::string::npos) return false;
  int min = 0, cur = 0, avg = 0, max = 0;
  if (std::sscanf(out.c_str() + at, "#1 -> #0, Min %d, Cur %d, Avg %d, Max %d", &min, &cur, &avg,
                  &max) != 4)
    return false;
  summary.min_ns = min * 1000.0;
  summary.avg_ns = avg * 1000.0;
  summary.max_ns = max * 1000.0;
  return true;
}

RunSummary run_tool(const Tool& tool, const std::string& program, std::size_t loops, int priority) {
  TempFile json;
  std::vector<std::string> argv = {program,
                                   "-q",
                                   "-l",
                                   std::to_string(loops),
                                   "-i",
                                   std::to_string(kIntervalUs),
                                   "--json=" + json.path()};
  if (priority > 0) {
    argv.push_back("-p");
    argv.push_back(std::to_string(priority));
  }
  sys::UniqueFd out(::memfd_create("crosscheck-stdout", MFD_CLOEXEC));
  sys::UniqueFd err(::memfd_create("crosscheck-stderr", MFD_CLOEXEC));
  if (!out || !err) sys::throw_errno("memfd_create");
  SpawnOptions options;
  options.stdout_fd = out.get();
  options.stderr_fd = err.get();
  options.new_process_group = true;
  options.search_path = false;
  ChildProcess child = ChildProcess::spawn(argv, options);
  // LOOPS intervals plus the tool's own pauses (10 ms launch, 50 ms polls)
  // take LOOPS ms and a little; 10 s more is plenty on a loaded machine.
  const auto limit = std::chrono::seconds(10) +
                     std::chrono::microseconds(2 * kIntervalUs * static_cast<int64_t>(loops));
  std::optional<ExitStatus> status = child.wait_for(limit);
  if (!status) {
    child.send_signal(SIGTERM);  // the tool stops its threads on SIGTERM
    status = child.wait_for(std::chrono::seconds(2));
    // ~ChildProcess sends SIGKILL and reaps it otherwise.
    throw std::runtime_error(fmt::format("{} did not finish within {} s; stopped", tool.program,
                                         std::chrono::duration<double>(limit).count()));
  }
  const std::string stdout_text = read_all(out.get());
  if (!status->success())
    throw std::runtime_error(fmt::format("{} {}: {}{}", tool.program, status->describe(),
                                         stdout_text, read_all(err.get())));
  RunSummary summary;
  summary.loops = loops;
  const bool quiet_line = parse_quiet_line(stdout_text, summary);
  // The JSON file (rt-tests 2.0 and later) has the average to 1/100 us and
  // the number of sends; the quiet line rounds to whole microseconds.
  try {
    const std::string text = read_all(sys::UniqueFd(::open(json.path().c_str(), O_RDONLY)).get());
    const auto j = nlohmann::json::parse(text);
    const auto& pair = j.at("thread").at("0");
    summary.loops = pair.at("sender").at("samples").get<std::size_t>();
    summary.min_ns = pair.at("receiver").at("min").get<double>() * 1000.0;
    summary.avg_ns = pair.at("receiver").at("avg").get<double>() * 1000.0;
    summary.max_ns = pair.at("receiver").at("max").get<double>() * 1000.0;
  } catch (const std::exception& e) {
    if (!quiet_line)
      throw std::runtime_error(fmt::format("{}: neither a summary line nor JSON ({}): {}",
                                           tool.program, e.what(), stdout_text));
  }
  if (summary.loops == 0 || !std::isfinite(summary.avg_ns))
    throw std::runtime_error(fmt::format("{} reported no samples: {}", tool.program, stdout_text));
  return summary;
}

// --- ours: the same protocol, here -------------------------------------------

timespec monotonic_deadline(uint64_t from_now_ns) {
  const uint64_t at = monotonic_ns() + from_now_ns;
  return timespec{static_cast<time_t>(at / 1000000000u), static_cast<long>(at % 1000000000u)};
}

// One direction of the pair: the receiver waits (blocked in the kernel) until
// the other thread posts. Each protocol has two: "test" (sender -> receiver,
// timed) and "sync" (the receiver's reply).
class Channel {
 public:
  virtual ~Channel() = default;
  // Called on the waiting thread before the pair starts.
  virtual void prepare_waiter() {}
  // Blocks until posted; false after kWaitLimitNs without a post.
  virtual bool wait() = 0;
  virtual void post() = 0;
};

// sigwaittest: a thread-directed signal, blocked in the waiter, taken with
// sigtimedwait (glibc's sigwait is rt_sigtimedwait without a timeout).
class SignalChannel final : public Channel {
 public:
  explicit SignalChannel(int signo) : signo_(signo) {}
  void prepare_waiter() override {
    // Blocked before the peer may send (the start latch orders it): an
    // unblocked SIGUSR1/2 with the default action would end the process.
    sigset_t set;
    sigemptyset(&set);
    sigaddset(&set, signo_);
    pthread_sigmask(SIG_BLOCK, &set, nullptr);
    waiter_.store(pthread_self(), std::memory_order_release);
  }
  bool wait() override {
    sigset_t set;
    sigemptyset(&set);
    sigaddset(&set, signo_);
    const uint64_t give_up = monotonic_ns() + kWaitLimitNs;
    for (;;) {
      const uint64_t now = monotonic_ns();
      if (now >= give_up) return false;
      const timespec left{static_cast<time_t>((give_up - now) / 1000000000u),
                          static_cast<long>((give_up - now) % 1000000000u)};
      const int got = ::sigtimedwait(&set, nullptr, &left);
      if (got == signo_) return true;
      if (got < 0 && errno != EINTR && errno != EAGAIN) sys::throw_errno("sigtimedwait");
    }
  }
  void post() override {
    const int rc = pthread_kill(waiter_.load(std::memory_order_acquire), signo_);
    if (rc != 0) throw std::system_error(rc, std::generic_category(), "pthread_kill");
  }

 private:
  int signo_;
  // Written by the waiter before the start latch, read by the poster after.
  std::atomic<pthread_t> waiter_{};
};

// ptsematest: glibc's default mutex, lowered to its futex word (lll_lock /
// lll_unlock): 0 free, 1 locked, 2 locked and someone may sleep. post() is
// the unlock, wait() the lock; a word that starts locked makes the first
// wait() wait for the first post.
class FutexChannel final : public Channel {
 public:
  explicit FutexChannel(bool locked) : word_(locked ? 1u : 0u) {}
  bool wait() override {
    std::atomic_ref<uint32_t> word(word_);
    uint32_t expected = 0;
    // acquire: what the poster wrote before its unlock is visible after.
    if (word.compare_exchange_strong(expected, 1, std::memory_order_acquire)) return true;
    const timespec deadline = monotonic_deadline(kWaitLimitNs);
    while (word.exchange(2, std::memory_order_acquire) != 0) {
      const int rc = sys::futex_wait(&word_, 2, &deadline, sys::FutexScope::process_private);
      if (rc == -ETIMEDOUT) return false;
    }
    return true;
  }
  void post() override {
    std::atomic_ref<uint32_t> word(word_);
    // release: pairs with the acquire in wait().
    if (word.exchange(0, std::memory_order_release) == 2)
      sys::futex_wake(&word_, 1, sys::FutexScope::process_private);
  }

 private:
  alignas(std::atomic_ref<uint32_t>::required_alignment) uint32_t word_;
};

// pmqtest: a POSIX message queue of one 8-byte message. The name is unlinked
// at once: the descriptor keeps the queue, nothing is left in /dev/mqueue.
class QueueChannel final : public Channel {
 public:
  explicit QueueChannel(const char* role) {
    static std::atomic<unsigned> serial{0};
    const std::string name = fmt::format("/doorbell-crosscheck-{}-{}-{}", ::getpid(), role,
                                         serial.fetch_add(1, std::memory_order_relaxed));
    mq_attr attr{};
    attr.mq_maxmsg = 1;
    attr.mq_msgsize = 8;
    queue_ = ::mq_open(name.c_str(), O_CREAT | O_EXCL | O_RDWR, 0600, &attr);
    if (queue_ == static_cast<mqd_t>(-1)) sys::throw_errno("mq_open " + name);
    ::mq_unlink(name.c_str());
  }
  ~QueueChannel() override { ::mq_close(queue_); }
  bool wait() override {
    char buf[8];
    timespec deadline;
    clock_gettime(CLOCK_REALTIME, &deadline);  // mq_timedreceive's clock
    deadline.tv_sec += static_cast<time_t>(kWaitLimitNs / 1000000000u);
    for (;;) {
      const ssize_t n = ::mq_timedreceive(queue_, buf, sizeof buf, nullptr, &deadline);
      if (n >= 0) return true;
      if (errno == ETIMEDOUT) return false;
      if (errno != EINTR) sys::throw_errno("mq_timedreceive");
    }
  }
  void post() override {
    static const char kMessage[] = "Testing";  // pmqtest's 7 bytes
    while (::mq_send(queue_, kMessage, sizeof kMessage - 1, 1) != 0)
      if (errno != EINTR) sys::throw_errno("mq_send");
  }

 private:
  mqd_t queue_;
};

struct ChannelPair {
  std::unique_ptr<Channel> test;  // sender -> receiver: the timed direction
  std::unique_ptr<Channel> sync;  // receiver -> sender: "ready for the next"
};

ChannelPair make_channels(Protocol protocol) {
  switch (protocol) {
    case Protocol::sigwait:
      return {std::make_unique<SignalChannel>(SIGUSR2), std::make_unique<SignalChannel>(SIGUSR1)};
    case Protocol::mutex:
      // Both start locked: the receiver's first lock waits for the first
      // send (ptsematest's testmutex, locked by main), and the sender holds
      // syncmutex from its first lock, so its next lock waits for the reply
      // (here: the wait after each send).
      return {std::make_unique<FutexChannel>(true), std::make_unique<FutexChannel>(true)};
    case Protocol::mqueue:
      return {std::make_unique<QueueChannel>("test"), std::make_unique<QueueChannel>("sync")};
  }
  throw std::logic_error("unknown protocol");
}

// Runs `loops` one-way sends; returns each sample in ns.
std::vector<double> run_ours(Protocol protocol, std::size_t loops, int priority) {
  ChannelPair channels = make_channels(protocol);
  std::vector<double> samples;
  samples.reserve(loops);
  std::atomic<uint64_t> sent_at{0};  // t0, by the sender; read by the receiver after its wake-up
  std::atomic<bool> stop{false};
  std::mutex error_lock;
  std::string error;
  auto fail = [&](std::string what) {
    std::lock_guard<std::mutex> guard(error_lock);
    if (error.empty()) error = std::move(what);
    stop.store(true, std::memory_order_relaxed);
  };
  std::latch ready(2);
  const timespec interval{0, kIntervalUs * 1000L};

  std::thread receiver([&] {
    try {
      take_priority(priority);
      channels.test->prepare_waiter();
      ready.arrive_and_wait();
      for (std::size_t i = 0; i < loops && !stop.load(std::memory_order_relaxed); ++i) {
        if (!channels.test->wait()) {
          fail(fmt::format("receiver: no send {} within 2 s", i));
          return;
        }
        const uint64_t t1 = monotonic_ns();
        samples.push_back(static_cast<double>(t1 - sent_at.load(std::memory_order_acquire)));
        if (i + 1 == loops) break;  // no reply after the last sample
        while (clock_nanosleep(CLOCK_MONOTONIC, 0, &interval, nullptr) == EINTR) {
        }
        channels.sync->post();
      }
    } catch (const std::exception& e) {
      fail(std::string("receiver: ") + e.what());
    }
  });
  std::thread sender([&] {
    try {
      take_priority(priority);
      channels.sync->prepare_waiter();
      ready.arrive_and_wait();
      for (std::size_t i = 0; i < loops && !stop.load(std::memory_order_relaxed); ++i) {
        sent_at.store(monotonic_ns(), std::memory_order_release);
        channels.test->post();
        if (i + 1 == loops) break;
        if (!channels.sync->wait()) {
          if (!stop.load(std::memory_order_relaxed))
            fail(fmt::format("sender: no reply to send {} within 2 s", i));
          return;
        }
      }
    } catch (const std::exception& e) {
      fail(std::string("sender: ") + e.what());
    }
  });
  receiver.join();
  sender.join();
  if (!error.empty()) throw std::runtime_error(error);
  return samples;
}

RunSummary summarize_samples(const std::vector<double>& samples) {
  RunSummary s;
  s.loops = samples.size();
  if (samples.empty()) return s;
  s.min_ns = samples.front();
  s.max_ns = samples.front();
  double sum = 0;
  for (double v : samples) {
    s.min_ns = std::min(s.min_ns, v);
    s.max_ns = std::max(s.max_ns, v);
    sum += v;
  }
  s.avg_ns = sum / static_cast<double>(samples.size());
  return s;
}

void record_summary(Context& ctx, const std::string& prefix, const RunSummary& s) {
  ctx.counter(prefix + "loops", static_cast<double>(s.loops));
  ctx.counter(prefix + "min_ns", s.min_ns);
  ctx.counter(prefix + "avg_ns", s.avg_ns);
  ctx.counter(prefix + "max_ns", s.max_ns);
}

std::string protocol_note(int priority) {
  return priority > 0 ? fmt::format(
                            "both sides: SCHED_FIFO {} on sender and receiver, unpinned, {} us "
                            "between sends",
                            priority, kIntervalUs)
                      : fmt::format(
                            "both sides SCHED_OTHER: SCHED_FIFO {} was refused here, so the tool "
                            "ran without -p; {} us between sends",
                            kPriority, kIntervalUs);
}

// --- the rows ----------------------------------------------------------------

std::string row_name(const Tool& tool, const char* impl) {
  return fmt::format("crosscheck/{}:impl={}", tool.program, impl);
}

Scenario base_row(const Tool& tool, const char* impl) {
  Scenario s;
  s.name = row_name(tool, impl);
  s.group = "crosscheck";
  s.params = {{"impl", impl}, {"interval_us", std::to_string(kIntervalUs)}};
  s.clock = ClockKind::monotonic;
  s.primary_metric = "run_mean";
  s.pinning = Pinning::none;
  // One repetition is one run of `samples` loops (100 with --quick), each
  // about an interval long; the budget is not what ends it.
  s.samples = 1000;
  s.budget_s = 2.0;
  s.in_default_suite = false;
  return s;
}

Scenario theirs_row(const Tool& tool) {
  Scenario s = base_row(tool, "rt-tests");
  s.title = fmt::format("{} (rt-tests): {}", tool.program, tool.wakeup);
  s.description = fmt::format(
      "runs `{} -q -l LOOPS -i {} -p {} --json FILE` (LOOPS = the sample target: 1000, 100 with "
      "--quick) with a timeout; one sample per run (run_mean): the tool's average one-way "
      "latency (send to the blocked receiver's return, gettimeofday at both ends); counters: "
      "the tool's loops/min/avg/max",
      tool.program, kIntervalUs, kPriority);
  s.run = [&tool](Context& ctx) {
    const auto program = find_on_path(tool.program);
    if (!program) throw SkipScenario(skip_reason());
    const int priority = usable_priority();
    const RunSummary theirs = run_tool(tool, *program, ctx.samples(), priority);
    ctx.metric("run_mean").record(theirs.avg_ns);
    record_summary(ctx, "", theirs);
    ctx.counter("priority", priority);
    ctx.note(protocol_note(priority));
    ctx.note(
        "the tool prints no percentiles: its row's samples are per-run averages, so "
        "compare the mean");
  };
  return s;
}

Scenario ours_row(const Tool& tool) {
  Scenario s = base_row(tool, "doorbell");
  s.title = fmt::format("{} protocol (doorbell): {}", tool.program, tool.wakeup);
  s.description = fmt::format(
      "{}'s protocol, here: {}; the sender reads CLOCK_MONOTONIC and posts, the receiver "
      "(blocked, SCHED_FIFO {} like the sender) reads it on return; then it sleeps {} us and "
      "replies. run_mean: one sample per run, the mean over its sends (as the tool reports); "
      "one_way: every send. Each repetition then runs the tool once more (rt_tests_* "
      "counters, ratio_to_rt_tests = our mean / its average, under the same load)",
      tool.program, tool.our_what, kPriority, kIntervalUs);
  s.run = [&tool](Context& ctx) {
    const auto program = find_on_path(tool.program);
    if (!program) throw SkipScenario(skip_reason());
    const int priority = usable_priority();
    const std::vector<double> samples = run_ours(tool.protocol, ctx.samples(), priority);
    for (double ns : samples) {
      ctx.metric("one_way").record(ns);
      ctx.raw_sample("one_way", ns);
    }
    const RunSummary ours = summarize_samples(samples);
    ctx.metric("run_mean").record(ours.avg_ns);
    record_summary(ctx, "", ours);
    ctx.counter("priority", priority);
    ctx.note(protocol_note(priority));
    if (ctx.warmup()) return;
    // The paired run: the tool right after ours, under the same load.
    const RunSummary theirs = run_tool(tool, *program, ctx.samples(), priority);
    record_summary(ctx, "rt_tests_", theirs);
    const double ratio = ours.avg_ns / theirs.avg_ns;
    ctx.counter("ratio_to_rt_tests", ratio);
    if (!(std::fabs(ratio - 1.0) <= kAgreement))
      ctx.note(fmt::format("a paired run differs by more than {:.0f}%: ours {} / {} {} = {}",
                           kAgreement * 100, format_duration(ours.avg_ns), tool.program,
                           format_duration(theirs.avg_ns), format_ratio(ratio)));
  };
  return s;
}

std::vector<Scenario> crosscheck_scenarios() {
  std::vector<Scenario> out;
  for (const Tool& tool : kTools) {
    out.push_back(theirs_row(tool));
    out.push_back(ours_row(tool));
  }
  return out;
}

std::vector<Ratio> crosscheck_ratios() {
  std::vector<Ratio> out;
  for (const Tool& tool : kTools) {
    Ratio r;
    r.name = fmt::format("{}: doorbell / rt-tests", tool.program);
    r.numerator = row_name(tool, "doorbell");
    r.denominator = row_name(tool, "rt-tests");
    // Both primaries are per-run means; the median over repetitions.
    r.statistic = "p50";
    r.reference = 1.0;
    r.reference_source = "the same protocol measured twice: 1.0 means agreement (goal: 0.75-1.25)";
    r.meaning = fmt::format("doorbell's implementation of {}'s protocol against the tool itself",
                            tool.program);
    out.push_back(std::move(r));
  }
  return out;
}

const Registrar kCrosscheck{crosscheck_scenarios()};
const RatioRegistrar kCrosscheckRatios{crosscheck_ratios()};

}  // namespace
}  // namespace doorbell::lab
