// The differential test of `doorbell inspect`: its verdicts checked against
// the kernel itself. For each process shape below the test starts a fresh
// target per cell, runs `doorbell inspect PID --json`, turns the verdict for
// one signal into the outcome it predicts, really sends that signal and
// observes the outcome:
//
//   killed     the process died of the signal (default action terminate/core)
//   stopped    the process stopped (default action stop)
//   handled    a handler ran, a sigwait receiver or a signalfd reader took
//              it; the thread that did is recorded
//   pending    still pending (ShdPnd or a SigPnd) after the grace period
//   discarded  none of these: the kernel dropped it (SIG_IGN, a default
//              "ignore", a PID-namespace init's default action, a zombie)
//
// Prediction from the JSON, signal entry s (or the process-level facts):
//   verdict bounded / at_risk / fair_share  -> handled, by a thread of
//       s.can_take (or its sigwait receiver), by any thread when a signalfd
//       reads it and nobody else can take it, or by a thread that did not
//       exist when inspect looked (short-lived threads)
//   stays_pending -> pending;  ignored / discarded -> discarded
//   default -> killed (terminate, core), stopped (stop)
//   exit 1 "has exited" -> discarded (a zombie)
//   SIGKILL (not listed): killed, unless the JSON's namespace_init says the
//       sender's namespace cannot kill it -> discarded
// Every cell must agree. The table of cells is printed.
//
// Targets are this test forked (or cloned into a new PID namespace) before
// it has threads of its own; each dies with the test (PR_SET_PDEATHSIG) and
// is SIGKILLed and reaped at the end of its cell on every path. A stopped
// target is killed with SIGKILL, which needs no SIGCONT.
#include <fcntl.h>
#include <poll.h>
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/signalfd.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <functional>
#include <nlohmann/json.hpp>
#include <optional>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include <fmt/format.h>

#include "doorbell/signal_receiver.h"
#include "tests/support/run_program.h"

namespace {

using namespace std::chrono_literals;
using Clock = std::chrono::steady_clock;

// ------------------------------------------------------------ the target side

// Shared between the test and its target (MAP_SHARED, made before fork).
struct Shared {
  std::atomic<int> handled[65];      // times signal n was handled or received
  std::atomic<int> handled_tid[65];  // the thread that did, last
  std::atomic<int> inside_signal;    // init shape: the signal its helper should send
  std::atomic<int> inside_sent;      // ... and how many it sent
};
static_assert(std::atomic<int>::is_always_lock_free);

Shared* g_shared = nullptr;

pid_t this_tid() {
  return static_cast<pid_t>(::syscall(SYS_gettid));
}

void record(int signo) {
  if (signo < 1 || signo > 64) return;
  g_shared->handled_tid[signo].store(this_tid());
  g_shared->handled[signo].fetch_add(1);
}

extern "C" void on_signal(int signo) {
  const int saved = errno;
  record(signo);
  errno = saved;
}

void install_handler(int signo) {
  struct sigaction sa {};
  sa.sa_handler = on_signal;
  sigemptyset(&sa.sa_mask);
  ::sigaction(signo, &sa, nullptr);
}

void ignore(int signo) {
  ::signal(signo, SIG_IGN);
}

void block(std::initializer_list<int> signals) {
  sigset_t set;
  sigemptyset(&set);
  for (int s : signals) sigaddset(&set, s);
  ::pthread_sigmask(SIG_BLOCK, &set, nullptr);
}

// Busy in user space. Every few thousand rounds it calls into the C
// library (an uncontended trylock): under TSan the target is this test's
// instrumented code, and TSan runs a handler only when the interrupted
// thread next enters one of its interceptors; a loop that never does would
// never run it. The thread stays runnable all the time.
void spin_forever() {
  pthread_mutex_t mutex = PTHREAD_MUTEX_INITIALIZER;
  volatile unsigned long counter = 0;
  for (;;) {
    counter = counter + 1;
    if ((counter & 0xfff) == 0 && ::pthread_mutex_trylock(&mutex) == 0)
      ::pthread_mutex_unlock(&mutex);
  }
}

void sleep_forever() {
  for (;;) ::pause();
}

bool set_fifo(int priority) {
  sched_param param{};
  param.sched_priority = priority;
  return ::pthread_setschedparam(::pthread_self(), SCHED_FIFO, &param) == 0;
}

// The dispositions every shape starts from: SIGUSR1 handled, SIGUSR2
// ignored, SIGTERM and SIGHUP default (terminate), SIGWINCH default (ignore).
void common_dispositions() {
  install_handler(SIGUSR1);
  ignore(SIGUSR2);
}

enum class Spawn { fork, new_pid_namespace };

struct Shape {
  std::string name;
  Spawn spawn = Spawn::fork;
  // Runs in the target; returns 'R' when set up, another byte says what
  // failed ('F': SCHED_FIFO refused, a reason to skip).
  std::function<char()> setup;
  // After setup the target's main thread: sleeps (pause), spins, or exits
  // (pthread_exit: the "exited main thread" shape; _exit: a zombie).
  enum class Main { sleep, spin, exit_thread, exit_process } main = Main::sleep;
  bool stop_before_inspect = false;  // SIGSTOP it, wait for the stop, then inspect
  // Threads come and go: a signal may be taken by one born after inspect looked.
  bool threads_come_and_go = false;
  struct Cell {
    int signal;
    bool from_inside = false;  // sent by a process inside the target's PID namespace
  };
  std::vector<Cell> cells;
};

// The init shape's helper: a child of the init, inside its namespace, that
// sends Shared::inside_signal to PID 1 when asked.
[[noreturn]] void inside_sender() {
  for (;;) {
    const int signo = g_shared->inside_signal.exchange(0);
    if (signo != 0) {
      ::kill(1, signo);
      g_shared->inside_sent.fetch_add(1);
    }
    ::usleep(500);
  }
}

// Runs in the child: set-up, then "ready", then the main thread's fate.
[[noreturn]] void target_main(const Shape& shape, int ready_fd) {
  ::prctl(PR_SET_PDEATHSIG, SIGKILL);
  if (shape.spawn == Spawn::fork) ::alarm(120);  // an init would discard it
  char ready = 'X';
  try {
    ready = shape.setup();
  } catch (...) {
  }
  if (::write(ready_fd, &ready, 1) != 1) ::_exit(1);
  ::close(ready_fd);
  switch (shape.main) {
    case Shape::Main::sleep:
      sleep_forever();
      break;
    case Shape::Main::spin:
      spin_forever();
      break;
    case Shape::Main::exit_thread:
      // The main thread alone (no unwinding through the test's frames).
      ::syscall(SYS_exit, 0);
      break;
    case Shape::Main::exit_process:
      ::_exit(0);
  }
  ::_exit(1);
}

// ------------------------------------------------------------ the test side

class Target {
 public:
  explicit Target(const Shape& shape) {
    int fds[2];
    if (::pipe2(fds, O_CLOEXEC) != 0) std::abort();
    if (shape.spawn == Spawn::fork) {
      pid_ = ::fork();
    } else {
      // A raw clone: the child is PID 1 of a new PID namespace. It uses
      // plain system calls, fork and pthreads only.
      pid_ = static_cast<pid_t>(
          ::syscall(SYS_clone, CLONE_NEWPID | SIGCHLD, nullptr, nullptr, nullptr, nullptr));
    }
    if (pid_ < 0) std::abort();
    if (pid_ == 0) {
      ::close(fds[0]);
      target_main(shape, fds[1]);
    }
    ::close(fds[1]);
    ssize_t n;
    do n = ::read(fds[0], &ready_, 1);
    while (n < 0 && errno == EINTR);
    ::close(fds[0]);
    if (n != 1) ready_ = '?';
  }
  ~Target() { end(); }
  Target(const Target&) = delete;
  Target& operator=(const Target&) = delete;

  pid_t pid() const { return pid_; }
  char ready() const { return ready_; }

  // The child's state change, if any, without consuming it.
  std::optional<siginfo_t> peek(int which) const {
    siginfo_t info{};
    if (::waitid(P_PID, static_cast<id_t>(pid_), &info, which | WNOHANG | WNOWAIT) != 0)
      return std::nullopt;
    if (info.si_pid != pid_) return std::nullopt;
    return info;
  }

  // SIGSTOP, and wait (5 s at most) until it has stopped; the report is
  // consumed, so a later stop shows as a new one.
  bool stop() {
    ::kill(pid_, SIGSTOP);
    const auto deadline = Clock::now() + 5s;
    while (Clock::now() < deadline) {
      siginfo_t info{};
      if (::waitid(P_PID, static_cast<id_t>(pid_), &info, WSTOPPED | WNOHANG) == 0 &&
          info.si_pid == pid_)
        return info.si_code == CLD_STOPPED;
      std::this_thread::sleep_for(1ms);
    }
    return false;
  }

  // A main thread that _exit()s leaves a zombie: wait (5 s at most) until it is one.
  bool wait_zombie() {
    const auto deadline = Clock::now() + 5s;
    while (Clock::now() < deadline) {
      if (peek(WEXITED)) return true;
      std::this_thread::sleep_for(1ms);
    }
    return false;
  }

  void end() {
    if (pid_ <= 0) return;
    ::kill(pid_, SIGKILL);
    siginfo_t info{};
    while (::waitid(P_PID, static_cast<id_t>(pid_), &info, WEXITED) != 0 && errno == EINTR) {
    }
    pid_ = -1;
  }

 private:
  pid_t pid_ = -1;
  char ready_ = '?';
};

// Everything pending in the process: ShdPnd | every thread's SigPnd.
std::uint64_t pending_mask(pid_t pid) {
  auto field = [](const std::string& path, const char* key) -> std::uint64_t {
    std::ifstream in(path);
    std::string line;
    while (std::getline(in, line))
      if (line.rfind(key, 0) == 0) return std::stoull(line.substr(std::strlen(key)), nullptr, 16);
    return 0;
  };
  const std::string base = "/proc/" + std::to_string(pid);
  std::uint64_t mask = field(base + "/status", "ShdPnd:");
  std::error_code ec;
  for (const auto& entry : std::filesystem::directory_iterator(base + "/task", ec))
    mask |= field(entry.path().string() + "/status", "SigPnd:");
  return mask;
}

bool has(std::uint64_t mask, int signo) {
  return (mask >> (signo - 1)) & 1u;
}

// Waits (5 s at most) until the main thread of pid is a zombie (State Z).
bool main_thread_exited(pid_t pid) {
  const auto deadline = Clock::now() + 5s;
  while (Clock::now() < deadline) {
    std::ifstream in(fmt::format("/proc/{}/task/{}/status", pid, pid));
    std::string line;
    while (std::getline(in, line))
      if (line.rfind("State:", 0) == 0 && line.find('Z') != std::string::npos) return true;
    std::this_thread::sleep_for(1ms);
  }
  return false;
}

// The thread id, as this test sees it, of the target's thread whose id in
// the target's own PID namespace is `inner` (NSpid: ours first, innermost
// last); `inner` itself outside a namespace.
pid_t outer_tid(pid_t pid, pid_t inner) {
  std::error_code ec;
  for (const auto& entry :
       std::filesystem::directory_iterator(fmt::format("/proc/{}/task", pid), ec)) {
    std::ifstream in(entry.path().string() + "/status");
    std::string line;
    while (std::getline(in, line)) {
      if (line.rfind("NSpid:", 0) != 0) continue;
      std::istringstream fields(line.substr(6));
      std::vector<pid_t> ids;
      for (pid_t id; fields >> id;) ids.push_back(id);
      if (ids.size() > 1 && ids.back() == inner) return ids.front();
    }
  }
  return inner;
}

struct Outcome {
  std::string kind;  // killed, stopped, handled, pending, discarded
  pid_t tid = 0;     // handled: by which thread
  std::string text() const { return tid ? fmt::format("{} by {}", kind, tid) : kind; }
};

// Sends the cell's signal and watches what becomes of it.
Outcome send_and_observe(Target& target, const Shape& shape, const Shape::Cell& cell) {
  const int signo = cell.signal;
  const int handled_before = g_shared->handled[signo].load();
  if (cell.from_inside) {
    const int sent_before = g_shared->inside_sent.load();
    g_shared->inside_signal.store(signo);
    const auto deadline = Clock::now() + 5s;
    while (g_shared->inside_sent.load() == sent_before && Clock::now() < deadline)
      std::this_thread::sleep_for(1ms);
    if (g_shared->inside_sent.load() == sent_before) return {"(the inside sender did not send)"};
  } else {
    if (::kill(target.pid(), signo) != 0) return {"(kill failed)"};
  }
  const auto start = Clock::now();
  int quiet_rounds = 0;
  for (;;) {
    if (auto info = shape.main == Shape::Main::exit_process ? std::nullopt : target.peek(WEXITED))
      return {
          info->si_code == CLD_KILLED || info->si_code == CLD_DUMPED
              ? (info->si_status == signo ? "killed" : fmt::format("killed by {}", info->si_status))
              : "exited"};
    if (!shape.stop_before_inspect)
      if (auto info = target.peek(WSTOPPED); info && info->si_code == CLD_STOPPED)
        return {"stopped"};
    if (g_shared->handled[signo].load() != handled_before)
      return {"handled", outer_tid(target.pid(), g_shared->handled_tid[signo].load())};
    const auto waited = Clock::now() - start;
    const bool pending = has(pending_mask(target.pid()), signo);
    if (waited > 300ms) {
      // Settled: twice in a row neither pending nor taken (a thread that
      // dequeued it records it at once), or pending for 1.5 s.
      if (!pending && ++quiet_rounds >= 2) return {"discarded"};
      if (pending && waited > 1500ms) return {"pending"};
    }
    std::this_thread::sleep_for(pending ? 5ms : 50ms);
  }
}

struct Inspected {
  int exit_code = -1;
  std::string err;
  nlohmann::json json;
};

Inspected inspect(pid_t pid) {
  const auto r = doorbell::test::run_doorbell(
      {"inspect", std::to_string(pid), "--json", "--window-ms", "100"}, {.timeout = 60s});
  Inspected out;
  out.exit_code = r.exit_code();
  out.err = r.err;
  if (r.exit_code() == 0) out.json = nlohmann::json::parse(r.out, nullptr, false);
  return out;
}

bool contains(const nlohmann::json& list, pid_t tid) {
  for (const auto& v : list)
    if (v.get<pid_t>() == tid) return true;
  return false;
}

// What inspect's report predicts for the cell, and whether an observed
// outcome agrees with it (a predicate, since "handled by one of these
// threads" is a set). `why` says what was predicted.
struct Prediction {
  std::string text;
  std::function<bool(const Outcome&)> agrees;
};

Prediction predict(const Inspected& r, const Shape& shape, const Shape::Cell& cell) {
  if (r.exit_code == 1 && r.err.find("has exited") != std::string::npos)
    return {"discarded (exit 1: has exited)",
            [](const Outcome& o) { return o.kind == "discarded"; }};
  if (r.exit_code != 0 || r.json.is_discarded())
    return {fmt::format("(inspect failed, exit {}: {})", r.exit_code, r.err),
            [](const Outcome&) { return false; }};
  const auto& j = r.json;
  if (cell.signal == SIGKILL) {
    // Not listed: the process-level facts decide.
    const auto& init = j.value("namespace_init", nlohmann::json());
    const bool survives =
        init.is_object() && (init.value("global", false) ||
                             (cell.from_inside && init.value("kill_from_inside", true) == false));
    if (survives)
      return {"discarded (namespace init: SIGKILL only from an ancestor namespace)",
              [](const Outcome& o) { return o.kind == "discarded"; }};
    return {"killed", [](const Outcome& o) { return o.kind == "killed"; }};
  }
  nlohmann::json entry;
  for (const auto& s : j["signals"])
    if (s["signal"] == cell.signal) entry = s;
  if (entry.is_null()) {
    // Not listed: no handler, not ignored, not blocked, not pending: its
    // default action (docs/inspect.md), which an init discards.
    if (j.contains("namespace_init"))
      return {"not listed, init -> discarded",
              [](const Outcome& o) { return o.kind == "discarded"; }};
    if (cell.signal == SIGWINCH || cell.signal == SIGCHLD || cell.signal == SIGURG)
      return {"not listed, default ignore -> discarded",
              [](const Outcome& o) { return o.kind == "discarded"; }};
    if (j.value("stopped", false))
      return {"not listed, stopped -> pending",
              [](const Outcome& o) { return o.kind == "pending"; }};
    if (cell.signal == SIGTSTP || cell.signal == SIGTTIN || cell.signal == SIGTTOU)
      return {"not listed, default stop -> stopped",
              [](const Outcome& o) { return o.kind == "stopped"; }};
    return {"not listed, default -> killed", [](const Outcome& o) { return o.kind == "killed"; }};
  }
  const std::string verdict = entry["verdict"];
  const std::string action = entry["default_action"];
  auto is = [](std::string kind) { return [kind](const Outcome& o) { return o.kind == kind; }; };
  if (verdict == "stays_pending") return {verdict + " -> pending", is("pending")};
  if (verdict == "ignored" || verdict == "discarded")
    return {verdict + " -> discarded", is("discarded")};
  if (verdict == "default") {
    if (action == "terminate" || action == "core") return {"default -> killed", is("killed")};
    if (action == "stop") return {"default -> stopped", is("stopped")};
    return {"default " + action + " -> discarded", is("discarded")};
  }
  // bounded, at_risk, fair_share: handled by a thread that can take it.
  const nlohmann::json can_take = entry["can_take"];
  const pid_t receiver = entry["sigwait_receiver"];
  const bool any_reader = can_take.empty() && !entry["signalfds"].empty();
  const bool churn = shape.threads_come_and_go;
  nlohmann::json threads = nlohmann::json::array();
  for (const auto& t : j["threads"]) threads.push_back(t["tid"]);
  return {fmt::format("{} -> handled by {}{}", verdict,
                      any_reader ? "its signalfd's reader" : can_take.dump(),
                      receiver ? fmt::format(" (receiver {})", receiver) : ""),
          [=](const Outcome& o) {
            if (o.kind != "handled") return false;
            if (any_reader || o.tid == receiver || contains(can_take, o.tid)) return true;
            return churn && !contains(threads, o.tid);  // a thread born after inspect looked
          }};
}

// The report's entry for a signal, for a failure message.
std::string entry_of(const Inspected& r, int signo) {
  if (!r.json.is_object()) return "-";
  for (const auto& s : r.json["signals"])
    if (s["signal"] == signo) return s.dump();
  return "(not listed)";
}

std::string signal_label(const Shape::Cell& cell) {
  return std::string(sigabbrev_np(cell.signal)) + (cell.from_inside ? " (inside)" : "");
}

// Runs every cell of a shape; fails for each cell that disagrees.
void run_matrix(Shape shape) {
  void* memory =
      ::mmap(nullptr, sizeof(Shared), PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
  ASSERT_NE(memory, MAP_FAILED);
  g_shared = new (memory) Shared{};
  std::string table = fmt::format("{}:\n  {:<16} {:<58} {:<22} {}\n", shape.name, "SIGNAL",
                                  "INSPECT PREDICTS", "OBSERVED", "AGREE");
  int agree = 0;
  for (const auto& cell : shape.cells) {
    g_shared->inside_signal.store(0);
    Target target(shape);
    if (target.ready() == 'F') {
      ::munmap(memory, sizeof(Shared));
      GTEST_SKIP() << "SCHED_FIFO not permitted here";
    }
    ASSERT_EQ(target.ready(), 'R') << shape.name;
    if (shape.stop_before_inspect) {
      ASSERT_TRUE(target.stop()) << shape.name;
    }
    if (shape.main == Shape::Main::exit_process) {
      ASSERT_TRUE(target.wait_zombie()) << shape.name;
    }
    if (shape.main == Shape::Main::exit_thread) {
      ASSERT_TRUE(main_thread_exited(target.pid())) << shape.name;
    }
    const Inspected report = inspect(target.pid());
    const Prediction prediction = predict(report, shape, cell);
    const Outcome outcome = send_and_observe(target, shape, cell);
    const bool ok = prediction.agrees(outcome);
    agree += ok;
    table += fmt::format("  {:<16} {:<58} {:<22} {}\n", signal_label(cell), prediction.text,
                         outcome.text(), ok ? "yes" : "NO");
    EXPECT_TRUE(ok) << shape.name << ", " << signal_label(cell) << ": inspect predicts "
                    << prediction.text << ", the kernel did: " << outcome.text()
                    << "\ninspect's entry: " << entry_of(report, cell.signal) << report.err;
    target.end();
  }
  table += fmt::format("  {} cells, {} agree\n", shape.cells.size(), agree);
  std::cout << table << std::flush;
  ::munmap(memory, sizeof(Shared));
  g_shared = nullptr;
}

const std::vector<Shape::Cell> kCommonCells = {{SIGUSR1}, {SIGUSR2}, {SIGTERM}, {SIGWINCH}};

// ------------------------------------------------------------ the shapes

// The init of a PID namespace (`unshare --pid --fork`): default-action
// signals sent from inside its namespace are discarded; from the parent
// namespace too, except SIGKILL and SIGSTOP.
TEST(InspectMatrix, PidNamespaceInit) {
  Shape shape{"PID-namespace init", Spawn::new_pid_namespace, [] {
                common_dispositions();
                if (::fork() == 0) inside_sender();  // PID 2 in the namespace
                return 'R';
              }};
  shape.cells = {{SIGUSR1},      {SIGUSR2},  {SIGTERM},       {SIGTERM, true}, {SIGHUP},
                 {SIGHUP, true}, {SIGWINCH}, {SIGKILL, true}, {SIGKILL}};
  run_matrix(shape);
}

// An init whose main thread blocks SIGHUP, SIGQUIT and SIGTSTP while a
// worker does not: the send queues them (the main thread's mask decides)
// and picks the worker, which dequeues each and drops it (get_signal), the
// fatal SIGHUP too: on 6.18 complete_signal() starts no group exit for an
// init. A kernel that did would fail this cell.
TEST(InspectMatrix, PidNamespaceInitMainThreadBlocking) {
  Shape shape{"PID-namespace init, main thread blocks", Spawn::new_pid_namespace, [] {
                common_dispositions();
                if (::fork() == 0) inside_sender();
                std::thread(sleep_forever).detach();
                block({SIGHUP, SIGQUIT, SIGTSTP});
                return 'R';
              }};
  shape.cells = {{SIGUSR1}, {SIGHUP}, {SIGHUP, true}, {SIGQUIT}, {SIGTSTP, true}, {SIGTERM}};
  run_matrix(shape);
}

// A stopped process (State T): nothing but SIGKILL and SIGCONT acts on it;
// a handled or fatal signal waits until SIGCONT.
TEST(InspectMatrix, StoppedProcess) {
  Shape shape{"stopped (State T)", Spawn::fork, [] {
                common_dispositions();
                return 'R';
              }};
  shape.stop_before_inspect = true;
  shape.cells = kCommonCells;
  shape.cells.push_back({SIGHUP});
  shape.cells.push_back({SIGTSTP});
  run_matrix(shape);
}

// A zombie: exited, not reaped. A signal to it vanishes.
TEST(InspectMatrix, Zombie) {
  Shape shape{"zombie", Spawn::fork, [] {
                common_dispositions();
                return 'R';
              }};
  shape.main = Shape::Main::exit_process;
  shape.cells = {{SIGUSR1}, {SIGTERM}};
  run_matrix(shape);
}

// SIG_IGN (and a default "ignore") but blocked: the kernel keeps a blocked
// signal queued whatever its disposition.
TEST(InspectMatrix, BlockedAndIgnored) {
  Shape shape{"blocked + SIG_IGN", Spawn::fork, [] {
                common_dispositions();
                ignore(SIGHUP);
                block({SIGUSR2, SIGWINCH});  // SIGUSR2 SIG_IGN, SIGWINCH default ignore
                std::thread(sleep_forever).detach();
                return 'R';
              }};
  shape.cells = kCommonCells;
  shape.cells.push_back({SIGHUP});
  run_matrix(shape);
}

// Thread churn: threads that live about 2 ms, one after another.
TEST(InspectMatrix, ThreadChurn) {
  Shape shape{"thread churn", Spawn::fork, [] {
                common_dispositions();
                std::thread([] {
                  for (;;) {
                    std::thread([] {
                      const auto end = Clock::now() + 2ms;
                      while (Clock::now() < end) {
                      }
                    }).join();
                  }
                }).detach();
                return 'R';
              }};
  shape.threads_come_and_go = true;
  shape.cells = kCommonCells;
  run_matrix(shape);
}

// The paper's case: a handler, the main thread and three more threads busy.
TEST(InspectMatrix, BusyThreads) {
  Shape shape{"busy threads", Spawn::fork, [] {
                common_dispositions();
                for (int i = 0; i < 3; ++i) std::thread(spin_forever).detach();
                return 'R';
              }};
  shape.main = Shape::Main::spin;
  shape.cells = kCommonCells;
  run_matrix(shape);
}

// The main thread blocks SIGUSR1, SIGTERM and SIGHUP (ignored); one worker
// does not: it takes them (and drops the ignored one).
TEST(InspectMatrix, MainThreadBlocking) {
  Shape shape{"main thread blocks", Spawn::fork, [] {
                common_dispositions();
                ignore(SIGHUP);
                std::thread(sleep_forever).detach();
                block({SIGUSR1, SIGTERM, SIGHUP});
                return 'R';
              }};
  shape.cells = kCommonCells;
  shape.cells.push_back({SIGHUP});
  shape.cells.push_back({SIGTSTP});
  run_matrix(shape);
}

// A process group is orphaned when no member has a parent in another
// process group of its session: the kernel then discards SIGTSTP, SIGTTIN
// and SIGTTOU instead of stopping the process (nobody would be there to
// continue it). A target in a session of its own (setsid) is in such a
// group; one in a group of its own within this test's session is not. How
// the test itself is started (a terminal, ctest, a daemon) decides which a
// plain child is in, so each shape makes its own.
TEST(InspectMatrix, OrphanedProcessGroup) {
  Shape shape{"orphaned process group (setsid)", Spawn::fork, [] {
                common_dispositions();
                return ::setsid() > 0 ? 'R' : 'X';
              }};
  shape.cells = {{SIGTSTP}, {SIGTTIN}, {SIGTTOU}, {SIGUSR1}};
  run_matrix(shape);
}

TEST(InspectMatrix, ProcessGroupWithAParentInTheSession) {
  Shape shape{"process group of its own, parent in its session", Spawn::fork, [] {
                common_dispositions();
                return ::setpgid(0, 0) == 0 ? 'R' : 'X';
              }};
  shape.cells = {{SIGTSTP}, {SIGTTIN}, {SIGTTOU}, {SIGUSR1}};
  run_matrix(shape);
}

// Every thread blocks SIGUSR1 and SIGTERM; a doorbell::SignalReceiver at
// SCHED_FIFO takes them in sigwaitinfo; two busy threads beside it.
TEST(InspectMatrix, FifoSigwaitReceiver) {
  Shape shape{"SCHED_FIFO sigwaitinfo receiver", Spawn::fork, [] {
                common_dispositions();
                doorbell::block_signals_in_this_thread({SIGUSR1, SIGTERM});
                for (int i = 0; i < 2; ++i) std::thread(spin_forever).detach();
                doorbell::SignalReceiver::Options options;
                options.fifo_priority = 10;
                options.warn_on_stderr = false;
                auto* receiver = new doorbell::SignalReceiver(
                    {SIGUSR1, SIGTERM}, [](const siginfo_t& info) { record(info.si_signo); },
                    options);
                return receiver->placement().fifo ? 'R' : 'F';
              }};
  shape.cells = kCommonCells;
  run_matrix(shape);
}

// Every thread blocks SIGUSR1 and SIGTERM; a SCHED_FIFO thread reads them
// from a signalfd in poll(2); a busy thread beside it.
TEST(InspectMatrix, FifoSignalfdReceiver) {
  Shape shape{"SCHED_FIFO signalfd receiver", Spawn::fork, [] {
                common_dispositions();
                block({SIGUSR1, SIGTERM});
                sigset_t set;
                sigemptyset(&set);
                sigaddset(&set, SIGUSR1);
                sigaddset(&set, SIGTERM);
                const int fd = ::signalfd(-1, &set, SFD_CLOEXEC | SFD_NONBLOCK);
                if (fd < 0) return 'S';
                std::thread(spin_forever).detach();
                std::atomic<char> placed{0};
                std::thread([fd, &placed] {
                  placed.store(set_fifo(10) ? 'R' : 'F');
                  for (;;) {
                    pollfd p{fd, POLLIN, 0};
                    ::poll(&p, 1, -1);
                    signalfd_siginfo info;
                    while (::read(fd, &info, sizeof info) == sizeof info)
                      record(static_cast<int>(info.ssi_signo));
                  }
                }).detach();
                while (placed.load() == 0) std::this_thread::sleep_for(1ms);
                std::this_thread::sleep_for(50ms);  // let it reach poll
                return placed.load();
              }};
  shape.cells = kCommonCells;
  run_matrix(shape);
}

// The main thread has exited (its mask stays: it blocked SIGHUP, which is
// ignored); a worker lives on.
TEST(InspectMatrix, ExitedMainThread) {
  Shape shape{"exited main thread", Spawn::fork, [] {
                common_dispositions();
                ignore(SIGHUP);
                std::thread(sleep_forever).detach();
                block({SIGHUP});
                return 'R';
              }};
  shape.main = Shape::Main::exit_thread;
  shape.cells = kCommonCells;
  shape.cells.push_back({SIGHUP});
  run_matrix(shape);
}

}  // namespace
