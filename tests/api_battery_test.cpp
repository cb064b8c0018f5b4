// ApiBattery.*: every public constructor argument and option of
// include/doorbell/*.h, from ONE table (kTable below: the argument, its
// type, its documented range), called with the values that break code at
// its edges: 0, 1, -1, the documented limits and one past them, the type's
// maxima and minima and the maxima minus small offsets, negative and
// overflowing durations (no public argument is a floating-point duration,
// so NaN and infinities cannot be passed), and for process IDs 0, -1, a PID
// that is gone, a TID instead of a PID, and the extremes.
//
// Each case runs in a forked child with a watchdog (nothing hangs: a helper
// thread rings, notifies, signals or stops whatever an unlimited wait waits
// for), and passes when the call either works as documented (the row's own
// checks: the right object acted on, nothing else) or is refused with
// std::invalid_argument / std::system_error whose message names the
// argument. A crash, an abort or an UndefinedBehaviorSanitizer report (the
// asan-ubsan build stops at the first) ends the child: a failure.
//
// Cases that need a fix of one of issue 33's nine defects (branch
// `boundaries`) assert the corrected behaviour and are skipped until
// kDefectsFixedOnThisBranch is true.
#include <fcntl.h>
#include <gtest/gtest.h>
#include <pthread.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <climits>
#include <cstdint>
#include <cstring>
#include <functional>
#include <optional>
#include <sstream>
#include <stdexcept>
#include <string>
#include <system_error>
#include <thread>
#include <vector>

#include "doorbell/bell.h"
#include "doorbell/cgroup_freezer.h"
#include "doorbell/child_process.h"
#include "doorbell/event_loop.h"
#include "doorbell/event_notifier.h"
#include "doorbell/partition.h"
#include "doorbell/rate_limiter.h"
#include "doorbell/ring.h"
#include "doorbell/signal_channel.h"
#include "doorbell/signal_receiver.h"
#include "doorbell/thread_broadcast.h"
#include "doorbell/timer.h"
#include "tests/signal_test_support.h"
#include "tests/support/cgroup_probe.h"
#include "tests/support/files.h"
#include "tests/support/schedules.h"

// Flip to true once branch `boundaries` (issue 33's nine defects) is merged.
inline constexpr bool kDefectsFixedOnThisBranch = true;

namespace doorbell {
namespace {

using namespace std::chrono_literals;
using ns = std::chrono::nanoseconds;
using i128 = __int128;

// ---------------------------------------------------------------- values

enum class Type { i64, i32, u32, u64, size, pid, signo, fd };

// A process ID that needs a process: resolved in the case's child.
enum class PidKind { number, gone, tid, live };

struct Value {
  i128 n = 0;
  PidKind pid = PidKind::number;
  std::string label;
};

std::string text_of(i128 v) {
  if (v == 0) return "0";
  const bool negative = v < 0;
  unsigned __int128 u = negative ? -static_cast<unsigned __int128>(v) : v;
  std::string digits;
  while (u != 0) {
    digits.insert(digits.begin(), static_cast<char>('0' + static_cast<int>(u % 10)));
    u /= 10;
  }
  return negative ? "-" + digits : digits;
}

i128 type_min(Type t) {
  switch (t) {
    case Type::i64:
      return INT64_MIN;
    case Type::i32:
    case Type::pid:
    case Type::signo:
    case Type::fd:
      return INT_MIN;
    default:
      return 0;
  }
}

i128 type_max(Type t) {
  switch (t) {
    case Type::i64:
      return INT64_MAX;
    case Type::u32:
      return UINT32_MAX;
    case Type::u64:
      return UINT64_MAX;
    case Type::size:
      return SIZE_MAX;
    default:
      return INT_MAX;
  }
}

// The values of a type, with the row's documented limits and one past each.
std::vector<Value> values_for(Type type, const std::vector<i128>& limits) {
  std::vector<i128> raw = {0, 1, -1};
  const i128 lo = type_min(type), hi = type_max(type);
  for (i128 off : {0, 1, 31, 32, 1000}) {
    raw.push_back(hi - off);
    if (lo < 0) raw.push_back(lo + off);
  }
  if (type == Type::size || type == Type::u64 || type == Type::i64) {
    raw.push_back(i128{1} << 62);
    raw.push_back(i128{1} << 32);
  }
  if (type == Type::size || type == Type::u64) {
    raw.push_back(i128{1} << 63);
    raw.push_back((i128{1} << 63) - 32);
  }
  if (type == Type::signo)
    for (i128 s : {SIGKILL, SIGSTOP, SIGSEGV, 32, 33, SIGRTMIN - 1, SIGRTMAX, SIGRTMAX + 1, NSIG})
      raw.push_back(s);
  if (type == Type::fd) raw.push_back(-2);
  for (i128 l : limits)
    for (i128 v : {l - 1, l, l + 1}) raw.push_back(v);
  std::vector<Value> values;
  for (i128 v : raw) {
    if (v < lo || v > hi) continue;  // -1 of an unsigned type: its maximum, listed anyway
    // PID 1 is init: not a process a test may stop or move (a live process
    // of the test's own stands for a valid PID).
    if (type == Type::pid && v == 1) continue;
    bool seen = false;
    for (const Value& have : values) seen = seen || have.n == v;
    if (!seen) values.push_back({v, PidKind::number, text_of(v)});
  }
  if (type == Type::pid) {
    values.push_back({0, PidKind::gone, "a PID that is gone"});
    values.push_back({0, PidKind::tid, "a TID instead of a PID"});
    values.push_back({0, PidKind::live, "a live process"});
  }
  return values;
}

// ---------------------------------------------------------------- the case's world

// A child process with two threads, paused until killed, in its own process
// group.
class Target {
 public:
  Target() {
    int ready[2];
    if (::pipe2(ready, O_CLOEXEC) != 0) throw std::runtime_error("pipe");
    pid_ = ::fork();
    if (pid_ < 0) throw std::runtime_error("fork");
    if (pid_ == 0) {
      ::prctl(PR_SET_PDEATHSIG, SIGKILL);
      ::setpgid(0, 0);
      pthread_t t;
      pthread_create(
          &t, nullptr,
          [](void* fd) -> void* {
            const pid_t tid = static_cast<pid_t>(::syscall(SYS_gettid));
            ::write(static_cast<int>(reinterpret_cast<intptr_t>(fd)), &tid, sizeof tid);
            for (;;) ::pause();
          },
          reinterpret_cast<void*>(static_cast<intptr_t>(ready[1])));
      for (;;) ::pause();
    }
    ::close(ready[1]);
    if (::read(ready[0], &tid_, sizeof tid_) != sizeof tid_) throw std::runtime_error("tid");
    ::close(ready[0]);
  }
  ~Target() {
    ::kill(pid_, SIGKILL);
    while (::waitpid(pid_, nullptr, 0) < 0 && errno == EINTR) {
    }
  }
  pid_t pid() const { return pid_; }
  pid_t tid() const { return tid_; }

 private:
  pid_t pid_ = -1;
  pid_t tid_ = -1;
};

// What a row's call may need, made on demand in the case's child.
struct World {
  std::optional<Target> target;
  Target& live() {
    if (!target) target.emplace();
    return *target;
  }
  pid_t gone() {
    const pid_t pid = ::fork();
    if (pid == 0) ::_exit(0);
    while (::waitpid(pid, nullptr, 0) < 0 && errno == EINTR) {
    }
    return pid;
  }
  // The value as the call's argument.
  i128 resolve(const Value& v) {
    switch (v.pid) {
      case PidKind::number:
        return v.n;
      case PidKind::gone:
        return gone();
      case PidKind::tid:
        return live().tid();
      case PidKind::live:
        return live().pid();
    }
    return v.n;
  }
};

// Runs fn on a thread after `delay` (what makes an unlimited wait return),
// unless the destructor comes first: it cancels fn and joins.
class Later {
 public:
  Later(std::chrono::milliseconds delay, std::function<void()> fn)
      : thread_([this, delay, fn = std::move(fn)] {
          if (!cancel_.wait_for(delay)) fn();
        }) {}
  ~Later() {
    cancel_.ring();
    thread_.join();
  }

 private:
  Bell cancel_{Bell::Scope::process_private};
  std::thread thread_;
};

// A row's own check failed: the call acted on the wrong object, or did not
// do what the header says.
struct Wrong : std::runtime_error {
  using std::runtime_error::runtime_error;
};
void check(bool ok, const std::string& what) {
  if (!ok) throw Wrong(what);
}

// ---------------------------------------------------------------- the table

enum class Expect { works, refused, either };

struct Row {
  const char* suite;  // the TEST that runs it (one ctest entry per type)
  const char* api;    // "Timer::arm_once(delay)"
  const char* arg;    // what a refusal's message must name
  Type type;
  std::vector<i128> limits;  // the documented limits (each one, one below and one above)
  // Documented: works, refused, or (values the header leaves to either) either.
  std::function<Expect(const Value&)> expect;
  std::function<void(i128 value, World& world)> call;
  // Issue 33 defect number the value needs fixed (0: none).
  std::function<int(const Value&)> defect = [](const Value&) { return 0; };
  // Why the machine cannot run the row, or empty.
  std::function<std::string()> unavailable = [] { return std::string(); };
  // A system_error for a documented value is the documented refusal (a
  // process that is gone, a CPU that is not there) rather than a failure.
  bool system_error_is_refusal = false;
};

Expect works_if(bool ok) {
  return ok ? Expect::works : Expect::refused;
}
Expect always_works(const Value&) {
  return Expect::works;
}

// The documented range of a PID argument: a live process works; 0 and
// negative numbers are refused; a PID that is gone, and numbers that name
// nobody, are refused (ESRCH); a TID names its thread's process or is refused.
Expect pid_range(const Value& v) {
  switch (v.pid) {
    case PidKind::live:
      return Expect::works;
    case PidKind::tid:
      return Expect::either;
    case PidKind::gone:
      return Expect::refused;
    case PidKind::number:
      return v.n == 1 || v.n == INT_MAX ? Expect::either : Expect::refused;
  }
  return Expect::refused;
}

bool signal_refused_by_channel(i128 v) {
  return v < 1 || v > SIGRTMAX || refused_signal_reason(static_cast<int>(v)) != nullptr;
}

partition::Schedule small_schedule() {
  return test::one_pausing_partition();
}

// Runs the small schedule with `options` and a request_stop() after 60 ms,
// so that an unlimited run ends.
partition::RunReport run_small(partition::RunOptions options,
                               partition::Schedule schedule = small_schedule()) {
  partition::Scheduler scheduler(schedule);
  Later stop(60ms, [&] { scheduler.request_stop(); });
  return scheduler.run(options);
}

std::string need_root() {
  return ::geteuid() == 0 ? "" : "needs root";
}
std::string need_v2_freezer() {
  std::string why;
  return test::cgroup2_freezer_usable(&why) ? "" : "no cgroup v2 freezer: " + why;
}

std::string own_cgroup() {
  return test::slurp("/proc/self/cgroup");
}

ns as_ns(i128 v) {
  return ns(static_cast<int64_t>(v));
}

const std::vector<Row>& table() {
  static const std::vector<Row> rows = {
      // ------------------------------------------------------------ Bell
      {"Bell",
       "Bell::wait_for(timeout)",
       "timeout",
       Type::i64,
       {},
       always_works,
       [](i128 v, World&) {
         Bell bell;
         Later ring(20ms, [&] { bell.ring(); });
         (void)bell.wait_for(as_ns(v));
         if (v <= 0) return;
         check(!bell.rung() || bell.waiters() == 0, "a waiter left registered");
       }},
      {"Bell",
       "Bell::wait_until(deadline)",
       "deadline",
       Type::i64,
       {},
       always_works,
       [](i128 v, World&) {
         Bell bell;
         Later ring(20ms, [&] { bell.ring(); });
         (void)bell.wait_until(Bell::Clock::time_point(as_ns(v)));
         check(bell.waiters() == 0, "a waiter left registered");
       }},
      {"Bell",
       "Bell::wait_for(1 ms, Spin{iterations})",
       "iterations",
       Type::u32,
       {},
       always_works,
       [](i128 v, World&) {
         Bell bell;
         Later ring(20ms, [&] { bell.ring(); });
         (void)bell.wait_for(1ms, Bell::Spin{static_cast<uint32_t>(v)});
       }},
      // ------------------------------------------------------------ Ring
      {"Ring",
       "Ring::bytes_needed(slots, 64)",
       "slots",
       Type::u32,
       {2, 1u << 31},
       [](const Value& v) { return works_if(v.n >= 2 && (v.n & (v.n - 1)) == 0); },
       [](i128 v, World&) {
         const std::size_t bytes = Ring::bytes_needed(static_cast<uint32_t>(v), 64);
         check(bytes >= static_cast<std::size_t>(v) * 64, "bytes_needed wrapped");
       }},
      {"Ring",
       "Ring::bytes_needed(4, slot_bytes)",
       "slot_bytes",
       Type::u32,
       {1, 1u << 20},
       [](const Value& v) { return works_if(v.n >= 1 && v.n <= (1u << 20)); },
       [](i128 v, World&) {
         const std::size_t bytes = Ring::bytes_needed(4, static_cast<uint32_t>(v));
         check(bytes >= static_cast<std::size_t>(v) * 4, "bytes_needed wrapped");
       }},
      {"Ring",
       "Ring::pop(timeout)",
       "timeout",
       Type::i64,
       {},
       always_works,
       [](i128 v, World&) {
         alignas(64) static char memory[4096];
         Ring ring = Ring::create(memory, sizeof memory, 4, 16);
         Later push(20ms, [&] { (void)ring.try_push("x", 1); });
         char buffer[16];
         (void)ring.pop(buffer, sizeof buffer, as_ns(v));
       }},
      {"Ring",
       "Ring::push(timeout) while full",
       "timeout",
       Type::i64,
       {},
       always_works,
       [](i128 v, World&) {
         alignas(64) static char memory[4096];
         Ring ring = Ring::create(memory, sizeof memory, 2, 16);
         while (ring.try_push("x", 1) == Ring::Status::ok) {
         }
         Later pop(20ms, [&] {
           char buffer[16];
           (void)ring.try_pop(buffer, sizeof buffer);
         });
         (void)ring.push("y", 1, as_ns(v));
       }},
      // ------------------------------------------------------------ Timer
      {"Timer",
       "Timer::arm_once(delay)",
       "delay",
       Type::i64,
       {},
       [](const Value& v) { return works_if(v.n > 0); },
       [](i128 v, World&) {
         Timer timer;
         timer.arm_once(as_ns(v));
         if (v > 1'000'000'000) check(timer.read() == 0, "a far timer fired at once");
       }},
      {"Timer",
       "Timer::arm_periodic(period)",
       "period",
       Type::i64,
       {},
       [](const Value& v) { return works_if(v.n > 0); },
       [](i128 v, World&) {
         Timer timer;
         timer.arm_periodic(as_ns(v));
         if (v > 1'000'000'000) check(timer.read() == 0, "a far timer fired at once");
       }},
      {"Timer",
       "Timer::arm_periodic(1 ms, first)",
       "first",
       Type::i64,
       {},
       [](const Value& v) { return works_if(v.n >= 0); },  // 0: one period
       [](i128 v, World&) {
         Timer timer;
         timer.arm_periodic(1ms, as_ns(v));
       }},
      // ------------------------------------------------------------ EventNotifier
      {"EventNotifier",
       "EventNotifier::wait(timeout_ms)",
       "timeout_ms",
       Type::i32,
       {},
       always_works,
       [](i128 v, World&) {
         EventNotifier notifier;
         Later notify(20ms, [&] { notifier.notify(); });
         (void)notifier.wait(static_cast<int>(v));
       }},
      // ------------------------------------------------------------ EventLoop
      {"EventLoop",
       "EventLoop::add(fd, kReadable)",
       "fd",
       Type::fd,
       {},
       [](const Value& v) { return works_if(v.n == 0 || v.n == 1 || v.n == 2); },
       [](i128 v, World&) {
         EventLoop loop;
         loop.add(static_cast<int>(v), EventLoop::kReadable, [](uint32_t) {});
         check(loop.remove(static_cast<int>(v)), "the registration was not there");
       },
       [](const Value&) { return 0; },
       [] { return std::string(); },
       true},
      {"EventLoop",
       "EventLoop::add(pipe, events)",
       "events",
       Type::u32,
       {},
       [](const Value& v) {
         const bool some = (v.n & 3) != 0;
         const bool only_known = (v.n & ~i128{15}) == 0;
         return works_if(some && only_known);
       },
       [](i128 v, World&) {
         int fds[2];
         if (::pipe2(fds, O_CLOEXEC) != 0) throw std::runtime_error("pipe");
         EventLoop loop;
         try {
           loop.add(fds[0], static_cast<uint32_t>(v), [](uint32_t) {});
         } catch (...) {
           ::close(fds[0]);
           ::close(fds[1]);
           throw;
         }
         loop.remove(fds[0]);
         ::close(fds[0]);
         ::close(fds[1]);
       }},
      {"EventLoop",
       "EventLoop::remove(fd)",
       "fd",
       Type::fd,
       {},
       always_works,
       [](i128 v, World&) {
         EventLoop loop;
         check(!loop.remove(static_cast<int>(v)), "removed a registration nobody made");
       }},
      {"EventLoop",
       "EventLoop::add_timer(first, 0)",
       "first",
       Type::i64,
       {},
       [](const Value& v) { return works_if(v.n > 0); },
       [](i128 v, World&) {
         EventLoop loop;
         const auto id = loop.add_timer(as_ns(v), 0ns, [](uint64_t) {});
         check(loop.cancel_timer(id), "the timer was not there");
       }},
      {"EventLoop",
       "EventLoop::add_timer(1 h, period)",
       "period",
       Type::i64,
       {},
       [](const Value& v) { return works_if(v.n >= 0); },
       [](i128 v, World&) {
         EventLoop loop;
         const auto id = loop.add_timer(1h, as_ns(v), [](uint64_t) {});
         check(loop.cancel_timer(id), "the timer was not there");
       }},
      {"EventLoop",
       "EventLoop::run_once(timeout ms)",
       "timeout",
       Type::i64,
       {},
       always_works,
       [](i128 v, World&) {
         EventLoop loop;
         Later wake(20ms, [&] { loop.wakeup(); });
         check(loop.run_once(std::chrono::milliseconds(static_cast<int64_t>(v))) == 0,
               "a round ran a callback nobody registered");
       }},
      {"EventLoop",
       "EventLoop::cancel_timer(id)",
       "id",
       Type::u64,
       {},
       always_works,
       [](i128 v, World&) {
         EventLoop loop;
         check(!loop.cancel_timer(static_cast<EventLoop::TimerId>(v)), "cancelled a timer");
       }},
      // ------------------------------------------------------------ SignalChannel
      {"SignalChannel",
       "SignalChannel({signo})",
       "signal",
       Type::signo,
       {},
       [](const Value& v) { return works_if(!signal_refused_by_channel(v.n)); },
       [](i128 v, World&) {
         SignalChannel::Options options;
         options.mechanism = SignalMechanism::handler;
         SignalChannel channel({static_cast<int>(v)}, options);
       }},
      {"SignalChannel",
       "SignalChannel::Options::realtime_capacity",
       "realtime_capacity",
       Type::size,
       {1, SignalChannel::kMaxRealtimeCapacity},
       // 1..kMaxRealtimeCapacity (signal_channel.h); anything else is refused
       // naming the option.
       [](const Value& v) {
         return works_if(v.n >= 1 && v.n <= i128{SignalChannel::kMaxRealtimeCapacity});
       },
       [](i128 v, World&) {
         SignalChannel::Options options;
         options.mechanism = SignalMechanism::handler;
         options.realtime_capacity = static_cast<std::size_t>(v);
         SignalChannel channel({SIGUSR1, SIGRTMIN}, options);
         constexpr int kRealtime = 40;
         for (int i = 0; i < kRealtime; ++i) ::kill(::getpid(), SIGRTMIN);
         for (int i = 0; i < 5; ++i) {
           ::kill(::getpid(), SIGUSR1);
         }
         int usr1 = 0, realtime = 0;
         channel.dispatch([&](const SignalEvent& e) {
           if (e.signal == SIGUSR1) ++usr1;
           if (e.signal == SIGRTMIN) ++realtime;
         });
         check(usr1 >= 1, "the SIGUSR1 events were lost");
         check(static_cast<uint64_t>(realtime) + channel.stats().overflowed == kRealtime,
               "real-time instances neither delivered nor counted as overflowed");
       },
       // Sized bit_ceil(capacity + 32) without an overflow check (defect 1);
       // the fix decides what a huge capacity means (keep everything, or a
       // refusal naming the option).
       [](const Value& v) { return v.n > (i128{1} << 24) ? 1 : 0; }},
      {"SignalChannel",
       "SignalChannel::receive(timeout)",
       "timeout",
       Type::i64,
       {},
       always_works,
       [](i128 v, World&) {
         SignalChannel::Options options;
         options.mechanism = SignalMechanism::handler;
         SignalChannel channel({SIGUSR1}, options);
         Later send(20ms, [] { ::kill(::getpid(), SIGUSR1); });
         (void)channel.receive(as_ns(v));
       }},
      {"SignalChannel",
       "SignalChannel::receive(1 ms, Spin{iterations})",
       "iterations",
       Type::u32,
       {},
       always_works,
       [](i128 v, World&) {
         SignalChannel::Options options;
         options.mechanism = SignalMechanism::handler;
         SignalChannel channel({SIGUSR1}, options);
         (void)channel.receive(1ms, SignalChannel::Spin{static_cast<uint32_t>(v)});
       }},
      // ------------------------------------------------------------ SignalReceiver
      {"SignalReceiver",
       "SignalReceiver::Options::fifo_priority",
       "fifo_priority",
       Type::i32,
       {0, 99},
       [](const Value& v) { return works_if(v.n >= 0 && v.n <= 99); },
       [](i128 v, World&) {
         const sigset_t previous = block_signals_in_this_thread({SIGUSR1});
         SignalReceiver::Options options;
         options.fifo_priority = static_cast<int>(v);
         options.warn_on_stderr = false;
         {
           SignalReceiver receiver(
               {SIGUSR1}, [](const siginfo_t&) {}, options);
         }
         restore_signal_mask(previous);
       }},
      {"SignalReceiver",
       "SignalReceiver::Options::cpu",
       "cpu",
       Type::i32,
       {-1, CPU_SETSIZE},
       [](const Value& v) { return works_if(v.n >= -1); },
       [](i128 v, World&) {
         const sigset_t previous = block_signals_in_this_thread({SIGUSR1});
         SignalReceiver::Options options;
         options.cpu = static_cast<int>(v);
         options.warn_on_stderr = false;
         {
           SignalReceiver receiver(
               {SIGUSR1}, [](const siginfo_t&) {}, options);
           // A CPU that is not there: not pinned, and said so.
           if (v >= CPU_SETSIZE)
             check(receiver.placement().cpu == -1 && !receiver.placement().warning.empty(),
                   "claims a pinning to a CPU that does not exist");
         }
         restore_signal_mask(previous);
       }},
      {"SignalReceiver",
       "SignalReceiver({signo})",
       "signal",
       Type::signo,
       {},
       [](const Value& v) {
         const bool fault = v.n == SIGSEGV || v.n == SIGBUS || v.n == SIGFPE || v.n == SIGILL ||
                            v.n == SIGTRAP || v.n == SIGSYS;
         const bool reserved = v.n >= 32 && v.n < SIGRTMIN;
         return works_if(v.n >= 1 && v.n <= SIGRTMAX && !reserved && !fault && v.n != SIGKILL &&
                         v.n != SIGSTOP);
       },
       [](i128 v, World&) {
         const int signo = static_cast<int>(v);
         const bool blockable = signo >= 1 && signo <= SIGRTMAX;
         sigset_t previous;
         ::pthread_sigmask(SIG_SETMASK, nullptr, &previous);
         if (blockable) {
           sigset_t set;
           sigemptyset(&set);
           sigaddset(&set, signo);
           ::pthread_sigmask(SIG_BLOCK, &set, nullptr);
         }
         SignalReceiver::Options options;
         options.warn_on_stderr = false;
         {
           SignalReceiver receiver(
               {signo}, [](const siginfo_t&) {}, options);
         }
         restore_signal_mask(previous);
       }},
      // ------------------------------------------------------------ ThreadBroadcaster
      {"ThreadBroadcaster",
       "ThreadBroadcaster(pid)",
       "pid",
       Type::pid,
       {},
       pid_range,
       [](i128 v, World&) { ThreadBroadcaster broadcaster(static_cast<pid_t>(v)); },
       [](const Value&) { return 0; },
       [] { return std::string(); },
       true},
      {"ThreadBroadcaster",
       "ThreadBroadcaster::Options::max_listings",
       "max_listings",
       Type::i32,
       {1},
       [](const Value& v) { return works_if(v.n >= 1); },
       [](i128 v, World& w) {
         ThreadBroadcaster::Options options;
         options.max_listings = static_cast<int>(v);
         ThreadBroadcaster broadcaster(w.live().pid(), options);
         (void)broadcaster.send(SIGUSR1);
       }},
      {"ThreadBroadcaster",
       "ThreadBroadcaster::send(signo)",
       "signal|SIGKILL",
       Type::signo,
       {},
       [](const Value& v) {
         return works_if(v.n >= 1 && v.n < NSIG && v.n != SIGKILL && v.n != SIGSTOP);
       },
       [](i128 v, World& w) {
         // The target is killed by most signals: a fresh one each case.
         ThreadBroadcaster broadcaster(w.live().pid());
         (void)broadcaster.send(static_cast<int>(v));
       }},
      {"ThreadBroadcaster",
       "stop_every_thread(pid)",
       "pid",
       Type::pid,
       {},
       pid_range,
       [](i128 v, World& w) {
         (void)stop_every_thread(static_cast<pid_t>(v));
         if (w.target) continue_process(w.target->pid());
       },
       [](const Value&) { return 0; },
       [] { return std::string(); },
       true},
      {"ThreadBroadcaster",
       "continue_process(pid)",
       "pid",
       Type::pid,
       {},
       pid_range,
       [](i128 v, World&) { continue_process(static_cast<pid_t>(v)); },
       [](const Value&) { return 0; },
       [] { return std::string(); },
       true},
      {"ThreadBroadcaster",
       "all_threads_stopped(pid)",
       "pid",
       Type::pid,
       {},
       pid_range,
       [](i128 v, World&) { (void)all_threads_stopped(static_cast<pid_t>(v)); },
       [](const Value&) { return 0; },
       [] { return std::string(); },
       true},
      // ------------------------------------------------------------ ChildProcess
      {"ChildProcess",
       "ChildProcess::send_signal(signo)",
       "signal",
       Type::signo,
       {},
       [](const Value& v) { return works_if(v.n >= 1 && v.n <= SIGRTMAX); },
       [](i128 v, World&) {
         ChildProcess child = ChildProcess::spawn({"sleep", "10"});
         (void)child.send_signal(static_cast<int>(v));
       }},
      {"ChildProcess",
       "ChildProcess::wait_for(timeout)",
       "timeout",
       Type::i64,
       {},
       always_works,
       [](i128 v, World&) {
         ChildProcess child = ChildProcess::spawn({"sleep", "0.02"});
         (void)child.wait_for(as_ns(v));
       }},
      {"ChildProcess",
       "SpawnOptions::stdout_fd",
       "stdout_fd",
       Type::fd,
       {},
       [](const Value& v) {
         // -1 (any negative) inherits ours; 0..2 are open; others are not.
         return works_if(v.n < 0 || v.n <= 2);
       },
       [](i128 v, World&) {
         SpawnOptions options;
         options.stdout_fd = static_cast<int>(v);
         ChildProcess child = ChildProcess::spawn({"true"}, options);
         check(child.wait().success(), "true failed");
       },
       [](const Value&) { return 0; },
       [] { return std::string(); },
       true},
      // ------------------------------------------------------------ CgroupFreezer
      {"CgroupFreezer",
       "CgroupFreezer::add(pid)",
       "pid",
       Type::pid,
       {},
       pid_range,
       [](i128 v, World&) {
         const std::string before = own_cgroup();
         FreezerOptions options;
         options.preference = FreezerPreference::v2_only;
         CgroupFreezer cgroup =
             CgroupFreezer::create("doorbell-battery-" + std::to_string(::getpid()), options);
         std::string problem;
         try {
           cgroup.add(static_cast<pid_t>(v));
         } catch (...) {
           cgroup.remove();
           throw;
         }
         if (own_cgroup() != before) problem = "moved the caller into the freezer cgroup";
         cgroup.remove();
         check(problem.empty(), problem);
       },
       [](const Value& v) { return v.pid == PidKind::number && v.n == 0 ? 9 : 0; },
       need_v2_freezer,
       true},
      // ------------------------------------------------------------ RateLimiter
      {"RateLimiter",
       "RateLimiter(interval, 1)",
       "interval",
       Type::i64,
       {},
       [](const Value& v) { return works_if(v.n >= 0); },
       [](i128 v, World&) {
         RateLimiter limiter(as_ns(v), 1);
         for (uint64_t now : {uint64_t{0}, uint64_t{1}, UINT64_MAX / 2, UINT64_MAX - 1, UINT64_MAX})
           (void)limiter.check_at(now);
       }},
      {"RateLimiter",
       "RateLimiter(1 s, burst)",
       "burst",
       Type::u32,
       {RateLimitOptions::kMaxBurst},
       [](const Value& v) { return works_if(v.n <= RateLimitOptions::kMaxBurst); },
       [](i128 v, World&) {
         RateLimiter limiter(1s, static_cast<uint32_t>(v));
         (void)limiter.allow_at(5, static_cast<uint32_t>(v));
         (void)limiter.allow_at(5, UINT32_MAX);
       }},
      {"RateLimiter",
       "ShardedRateLimiter lease",
       "lease",
       Type::u32,
       {RateLimitOptions::kMaxLease},
       [](const Value& v) { return works_if(v.n <= RateLimitOptions::kMaxLease); },
       [](i128 v, World&) {
         ShardedRateLimiter limiter(RateLimitOptions{1s, 1000, static_cast<uint32_t>(v)});
         (void)limiter.allow_at(5);
       }},
      // ------------------------------------------------------------ partition
      {"Partition",
       "Schedule::major_frame_ns",
       "major frame|touch",
       Type::i64,
       {4'000'000},
       // A 4 ms frame is the 4 ms window's alone: accepted (issue 36 item 11);
       // a shorter one ends before the window does.
       [](const Value& v) { return works_if(v.n >= 4'000'000); },
       [](i128 v, World&) {
         partition::Schedule s = small_schedule();
         s.major_frame_ns = static_cast<int64_t>(v);
         partition::validate(s);
       }},
      {"Partition",
       "WindowSpec::offset_ns",
       "offset|window",
       Type::i64,
       {0, 6'000'000},
       [](const Value& v) { return works_if(v.n >= 0 && v.n <= 6'000'000); },
       [](i128 v, World&) {
         partition::Schedule s = small_schedule();
         s.windows[0].offset_ns = static_cast<int64_t>(v);
         partition::validate(s);
       }},
      {"Partition",
       "WindowSpec::duration_ns",
       "duration|window",
       Type::i64,
       {1, 10'000'000},
       // A window as long as the frame owns the whole frame: accepted (issue 36
       // item 11).
       [](const Value& v) { return works_if(v.n >= 1 && v.n <= 10'000'000); },
       [](i128 v, World&) {
         partition::Schedule s = small_schedule();
         s.windows[0].duration_ns = static_cast<int64_t>(v);
         partition::validate(s);
       }},
      {"Partition",
       "Schedule::overrun_threshold_ns",
       "overrun threshold",
       Type::i64,
       {1},
       [](const Value& v) { return works_if(v.n >= 1); },
       [](i128 v, World&) {
         partition::Schedule s = small_schedule();
         s.overrun_threshold_ns = static_cast<int64_t>(v);
         partition::validate(s);
       }},
      {"Partition",
       "Schedule::max_stop_lead_ns",
       "stop lead",
       Type::i64,
       {0},
       [](const Value& v) { return works_if(v.n >= 0); },
       [](i128 v, World&) {
         partition::Schedule s = small_schedule();
         s.max_stop_lead_ns = static_cast<int64_t>(v);
         partition::validate(s);
         const int64_t lead = partition::stop_lead_ns({INT64_MAX, 5, 0, -1}, s.max_stop_lead_ns,
                                                      s.windows[0].duration_ns);
         check(lead >= 0 && lead <= s.windows[0].duration_ns / 2, "stop lead out of range");
       }},
      {"Partition",
       "PartitionSpec::nice",
       "nice",
       Type::i32,
       {-20, 19},
       [](const Value& v) { return works_if(v.n >= -20 && v.n <= 19); },
       [](i128 v, World&) {
         partition::Schedule s = small_schedule();
         s.partitions[0].nice = static_cast<int>(v);
         partition::validate(s);
       }},
      {"Partition",
       "PartitionSpec::cpus",
       "CPU",
       Type::i32,
       {0, 1023},
       [](const Value& v) { return works_if(v.n >= 0 && v.n <= 1023); },
       [](i128 v, World&) {
         partition::Schedule s = small_schedule();
         s.partitions[0].cpus = {static_cast<int>(v)};
         partition::validate(s);
       }},
      {"PartitionRun",
       "RunOptions::frames",
       "frames",
       Type::i64,
       {1},
       [](const Value& v) { return v.n >= 1 ? Expect::works : Expect::either; },
       [](i128 v, World&) {
         partition::RunOptions o;
         o.frames = static_cast<int64_t>(v);
         o.fifo_priority = 0;
         const partition::RunReport r = run_small(o);
         check(r.frames <= v || v <= 0, "ran more frames than asked");
       },
       [](const Value& v) { return v.n <= 0 ? 6 : 0; },
       need_root},
      {"PartitionRun",
       "RunOptions::duration_ns",
       "duration",
       Type::i64,
       {1},
       [](const Value& v) { return v.n >= 1 ? Expect::works : Expect::either; },
       [](i128 v, World&) {
         partition::RunOptions o;
         o.duration_ns = static_cast<int64_t>(v);
         o.fifo_priority = 0;
         const partition::RunReport r = run_small(o);
         // Longer than the 60 ms before request_stop(): runs until then.
         if (v > 1'000'000'000) check(r.stopped_early, "ended before the duration and the stop");
       },
       [](const Value& v) { return v.n <= 0 || v.n > INT64_MAX - 20'000'000 ? 6 : 0; },
       need_root},
      {"PartitionRun",
       "RunOptions::fifo_priority",
       "fifo_priority",
       Type::i32,
       {0, 99},
       [](const Value& v) { return works_if(v.n >= 0 && v.n <= 99); },
       [](i128 v, World&) {
         partition::RunOptions o;
         o.frames = 1;
         o.fifo_priority = static_cast<int>(v);
         (void)run_small(o);
       },
       [](const Value&) { return 0; },
       need_root},
      {"PartitionRun",
       "RunOptions::start_delay_ns",
       "start_delay_ns",
       Type::i64,
       {0},
       [](const Value& v) { return works_if(v.n >= 0); },
       [](i128 v, World&) {
         partition::RunOptions o;
         o.frames = 1;
         o.fifo_priority = 0;
         o.start_delay_ns = static_cast<int64_t>(v);
         (void)run_small(o);
       },
       [](const Value&) { return 0; },
       need_root},
      {"PartitionRun",
       "RunOptions::boundary_spin_ns",
       "boundary_spin_ns",
       Type::i64,
       {0},
       always_works,  // negative: as 0
       [](i128 v, World&) {
         partition::RunOptions o;
         o.frames = 1;
         o.fifo_priority = 0;
         o.boundary_spin_ns = static_cast<int64_t>(v);
         (void)run_small(o);
       },
       [](const Value&) { return 0; },
       need_root},
      {"PartitionRun",
       "RunOptions::max_handover_ns",
       "max_handover_ns",
       Type::i64,
       {0},
       always_works,  // negative: as 0
       [](i128 v, World&) {
         partition::RunOptions o;
         o.frames = 1;
         o.fifo_priority = 0;
         o.max_handover_ns = static_cast<int64_t>(v);
         (void)run_small(o);
       },
       [](const Value&) { return 0; },
       need_root},
      {"PartitionRun",
       "Schedule::major_frame_ns, run",
       "major frame",
       Type::i64,
       {10'000'000},
       [](const Value& v) { return works_if(v.n >= 4'000'000); },
       [](i128 v, World&) {
         partition::Schedule s = small_schedule();
         s.major_frame_ns = static_cast<int64_t>(v);
         partition::RunOptions o;
         o.frames = 3;
         o.fifo_priority = 0;
         (void)run_small(o, s);
       },
       [](const Value&) { return 0; },
       need_root},
  };
  return rows;
}

// ---------------------------------------------------------------- the harness

// Whether text names arg ("a|b": either), ignoring case.
bool mentions(const std::string& text, const char* arg) {
  std::string t = text;
  for (char& c : t) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  std::istringstream names(arg);
  std::string a;
  while (std::getline(names, a, '|')) {
    for (char& c : a) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
    if (t.find(a) != std::string::npos) return true;
  }
  return false;
}

// In the case's child: the verdict, empty when it passed.
std::string run_case(const Row& row, const Value& value) {
  World world;
  const Expect expect = row.expect(value);
  i128 arg = 0;
  std::string refused;  // the refusal's message
  bool system = false;
  try {
    arg = world.resolve(value);
    row.call(arg, world);
  } catch (const Wrong& e) {
    return std::string("works, but wrongly: ") + e.what();
  } catch (const std::invalid_argument& e) {
    refused = e.what();
  } catch (const std::system_error& e) {
    refused = e.what();
    system = true;
  } catch (const std::exception& e) {
    return std::string("threw an exception that is neither invalid_argument nor system_error: ") +
           e.what();
  }
  if (refused.empty()) {
    if (expect == Expect::refused) return "accepted a value outside the documented range";
    return "";
  }
  if (expect == Expect::works && !(system && row.system_error_is_refusal))
    return "refused a documented value: " + refused;
  // A refusal names the argument (or the value, for a process or an fd).
  if (!mentions(refused, row.arg) && refused.find(text_of(arg)) == std::string::npos)
    return "refused without naming '" + std::string(row.arg) + "': " + refused;
  return "";
}

struct SuiteResult {
  std::size_t cases = 0, skipped = 0;
  std::vector<std::string> failures, defect_skips;
};

void run_suite(const char* suite) {
  SuiteResult result;
  std::size_t rows = 0;
  for (const Row& row : table()) {
    if (std::strcmp(row.suite, suite) != 0) continue;
    ++rows;
    if (const std::string why = row.unavailable(); !why.empty()) {
      std::printf("ApiBattery.%s: %s skipped: %s\n", suite, row.api, why.c_str());
      continue;
    }
    for (const Value& value : values_for(row.type, row.limits)) {
      const std::string name = std::string(row.api) + " = " + value.label;
      if (const int defect = row.defect(value); defect != 0 && !kDefectsFixedOnThisBranch) {
        ++result.skipped;
        result.defect_skips.push_back(name + ": needs fix of issue 33 defect " +
                                      std::to_string(defect) + " (branch boundaries)");
        continue;
      }
      ++result.cases;
      int report[2];
      if (::pipe2(report, O_CLOEXEC) != 0) std::abort();
      const auto outcome = testing::run_in_child_with_deadline(
          [&]() -> int {
            ::close(report[0]);
            const std::string verdict = run_case(row, value);
            ::write(report[1], verdict.data(), verdict.size());
            return 0;
          },
          10s);
      ::close(report[1]);
      std::string verdict;
      char buffer[1024];
      ssize_t n;
      while ((n = ::read(report[0], buffer, sizeof buffer)) > 0)
        verdict.append(buffer, static_cast<std::size_t>(n));
      ::close(report[0]);
      if (outcome.timed_out)
        verdict = "hung: killed by the 10 s watchdog";
      else if (!WIFEXITED(outcome.status) || WEXITSTATUS(outcome.status) != 0)
        verdict = "the case's process " + testing::describe_wait_status(outcome.status) +
                  (verdict.empty() ? "" : ": " + verdict);
      if (!verdict.empty()) result.failures.push_back(name + ": " + verdict);
    }
  }
  ASSERT_GT(rows, 0u) << "no row of the table belongs to " << suite;
  std::printf(
      "ApiBattery.%s: %zu rows, %zu cases, %zu failed, %zu skipped until issue 33's "
      "defects are fixed\n",
      suite, rows, result.cases, result.failures.size(), result.skipped);
  for (const std::string& s : result.defect_skips) std::printf("  skipped: %s\n", s.c_str());
  std::ostringstream all;
  for (const std::string& f : result.failures) all << "  " << f << "\n";
  EXPECT_TRUE(result.failures.empty())
      << result.failures.size() << " of " << result.cases << " cases failed:\n"
      << all.str();
}

TEST(ApiBattery, Bell) {
  run_suite("Bell");
}
TEST(ApiBattery, Ring) {
  run_suite("Ring");
}
TEST(ApiBattery, Timer) {
  run_suite("Timer");
}
TEST(ApiBattery, EventNotifier) {
  run_suite("EventNotifier");
}
TEST(ApiBattery, EventLoop) {
  run_suite("EventLoop");
}
TEST(ApiBattery, SignalChannel) {
  run_suite("SignalChannel");
}
TEST(ApiBattery, SignalReceiver) {
  run_suite("SignalReceiver");
}
TEST(ApiBattery, ThreadBroadcaster) {
  run_suite("ThreadBroadcaster");
}
TEST(ApiBattery, ChildProcess) {
  run_suite("ChildProcess");
}
TEST(ApiBattery, CgroupFreezer) {
  run_suite("CgroupFreezer");
}
TEST(ApiBattery, RateLimiter) {
  run_suite("RateLimiter");
}
TEST(ApiBattery, Partition) {
  run_suite("Partition");
}
TEST(ApiBattery, PartitionRun) {
  run_suite("PartitionRun");
}

}  // namespace
}  // namespace doorbell
