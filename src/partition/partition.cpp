// The partition scheduler's run loop. The contract is in
// include/doorbell/partition.h; the guardian is in partition_guardian.cpp.
//
// One thread does everything: it sleeps on a timerfd armed at the next
// absolute boundary, and while it sleeps it watches
//   - each live partition's pidfd (readable when it exits; waitid by pidfd
//     tells how),
//   - the cgroup.events file of each partition whose v2 freeze is pending
//     (POLLPRI when "frozen" changes),
//   - an eventfd that request_stop() writes.
// SIGCHLD is the caller's: run() neither blocks nor reads it (a signalfd
// here took every SIGCHLD of the process, the caller's own children's
// included). A SIGCHLD that a handler of the caller's takes on this thread
// ends a wait early (EINTR), which only makes the checks come sooner.
// A pending stop (a stop has no pidfd notification) and a pending freeze
// (v1 has no notification; v2's is rate-limited by the kernel) are polled
// every kPollNoticeNs; a pending first run every kPollBackstopNs. A
// shorter timeout would not sleep at all in a VM, where arming a timer takes
// tens of microseconds: the scheduler would hold its CPU at SCHED_FIFO while
// the partition it stops waits for that CPU.
#include <fcntl.h>
#include <poll.h>
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <sys/eventfd.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <sys/timerfd.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <ctime>
#include <deque>
#include <map>
#include <memory>
#include <new>

#include "doorbell/partition.h"
#include "doorbell/partition_ports.h"
#include "doorbell/thread_broadcast.h"
#include "partition/health_block.h"
#include "partition/partition_guardian.h"
#include "sys/cpu_relax.h"
#include "sys/error.h"
#include "sys/fd.h"
#include "sys/path.h"
#include "sys/pidfd.h"
#include "sys/proc.h"
#include "sys/reap.h"
#include "sys/shared_memory.h"
#include "sys/syscalls.h"

extern char** environ;

namespace doorbell::partition {
namespace {

constexpr int64_t kPollNoticeNs = 50'000;
constexpr int64_t kPollBackstopNs = 250'000;
// The /proc check of a stop is made while at least this long is left before
// the next boundary's wake-up (else at a later wait).
constexpr int64_t kVerifyRoomNs = 1'000'000;
// How long the end of a run waits for the last suspension to be measured.
constexpr int64_t kFinalStopWaitNs = 200'000'000;

// a + b, and a * b, clamped to the int64_t range instead of overflowing: a
// start delay or a handover past the clock's range is a deadline that never
// comes (the run then ends by request_stop()).
int64_t add_saturated(int64_t a, int64_t b) noexcept {
  int64_t sum;
  if (__builtin_add_overflow(a, b, &sum)) return b > 0 ? INT64_MAX : INT64_MIN;
  return sum;
}
int64_t mul_saturated(int64_t a, int64_t b) noexcept {
  int64_t product;
  if (__builtin_mul_overflow(a, b, &product)) return (a < 0) != (b < 0) ? INT64_MIN : INT64_MAX;
  return product;
}

int64_t now_ns() noexcept {
  timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return static_cast<int64_t>(ts.tv_sec) * 1'000'000'000 + ts.tv_nsec;
}

timespec to_timespec(int64_t ns) noexcept {
  return timespec{static_cast<time_t>(ns / 1'000'000'000), static_cast<long>(ns % 1'000'000'000)};
}

// The scheduler tick: CLOCK_MONOTONIC_COARSE advances once a tick, so its
// resolution is the tick (4 ms at CONFIG_HZ=250). Another process's CPU clock
// advances at the same granularity.
int64_t tick_ns() noexcept {
  timespec res{};
  if (clock_getres(CLOCK_MONOTONIC_COARSE, &res) != 0) return 0;
  return static_cast<int64_t>(res.tv_sec) * 1'000'000'000 + res.tv_nsec;
}

int64_t cpu_time_ns(clockid_t clock) noexcept {
  timespec ts;
  if (clock_gettime(clock, &ts) != 0) return -1;
  return static_cast<int64_t>(ts.tv_sec) * 1'000'000'000 + ts.tv_nsec;
}

// Finds an executable the way execvp would, in the parent, so that a missing
// command is a clear error before anything starts.
std::string resolve_command(const std::string& name) {
  return sys::find_program(name).value_or("");
}

std::string describe_exit(int code, int status) {
  if (code == CLD_EXITED) return "exited " + std::to_string(status);
  const char* name = sigabbrev_np(status);
  return std::string(code == CLD_DUMPED ? "dumped core on SIG" : "killed by SIG") +
         (name ? name : std::to_string(status).c_str());
}

// SIGSTOP to every thread (thread_broadcast.h: tgkill each, re-listing while
// threads appear). A process that is gone meanwhile is not an error here: its
// exit arrives through waitid.
void stop_all_threads(pid_t tgid) noexcept {
  try {
    doorbell::stop_every_thread(tgid);
  } catch (...) {
  }
}

// True when every thread of pid is in state 'T' (or 't'), per /proc.
bool every_thread_stopped(pid_t pid) noexcept {
  try {
    return doorbell::all_threads_stopped(pid);
  } catch (...) {
    return false;
  }
}

struct Partition {
  const PartitionSpec* spec = nullptr;
  std::size_t index = 0;
  pid_t pid = -1;
  sys::UniqueFd pidfd;
  std::size_t guardian_slot = SIZE_MAX;  // SIZE_MAX: not handed to the guardian
  clockid_t cpu_clock = 0;
  bool alive = false;
  std::unique_ptr<CgroupFreezer> cgroup;
  std::string exec_path;
  sys::UniqueFd exec_error;  // read end; the child writes errno if exec fails
  long current_record = -1;
  long pending_stop = -1;    // record awaiting "every thread stopped"
  long pending_run = -1;     // record awaiting the first run after resume
  long pending_verify = -1;  // record whose stop awaits its /proc check
  int64_t cpu_baseline = 0;
  std::deque<int64_t> recent_stops;  // the last kStopLeadHistory stop latencies
  // The health monitor (partition_health.h): the shared block (a memfd,
  // mapped here; the partition inherits it) and what was last read of it.
  sys::UniqueFd health_fd;
  detail::HealthBlock* block = nullptr;
  uint64_t seen_heartbeats = 0, seen_deadlines = 0, seen_errors = 0;
  int64_t silent_since_frame = 0;  // the first frame without a heartbeat seen
  bool silence_reported = false;   // no_heartbeat said for this silence
  int64_t started_ns = 0;          // when this process was forked
  bool restart_pending = false;    // fork it again at its next window
  bool stopped_for_good = false;   // stop_partition: never again
  bool kill_requested = false;     // an action wants the process killed
  long restart_event = -1;         // the event whose restart is pending
};

class Run {
 public:
  Run(const Schedule& schedule, const RunOptions& options, int stop_fd)
      : schedule_(schedule), options_(options), stop_fd_(stop_fd) {}
  ~Run() { cleanup(); }

  RunReport execute();

 private:
  void set_up();
  void spawn(Partition& p);
  void initial_suspend(Partition& p);
  void suspend(Partition& p) noexcept;
  // Ends p's current window: records and issues the suspension with lead_ns.
  void end_window(Partition& p, int64_t lead_ns) noexcept;
  // Records a measured stop of p's pending window.
  void stopped(Partition& p, bool verified, int64_t at_ns) noexcept;
  // Ends p's pending suspension at at_ns with the partition's CPU time
  // cpu_now_ns: measured (the stop was noticed), when it learns the stop
  // latency for the stop lead, or cut short by the next resume (never
  // stopped: no latency to learn). Returns the window's record.
  WindowRecord& close_stop(Partition& p, int64_t at_ns, int64_t cpu_now_ns, bool measured) noexcept;
  void settle_start_up(Partition& p);
  void start_up(Partition& p);
  // 0, or -errno of the SIGCONT or thaw that failed.
  int resume(Partition& p) noexcept;
  void kill_partition(Partition& p) noexcept;
  // Waits until deadline_ns (absolute CLOCK_MONOTONIC), handling
  // notifications meanwhile; sleeps until spin_ns before it and spins the
  // rest. False when the run must end (stop request, partition exit policy).
  bool wait_until(int64_t deadline_ns, int64_t spin_ns = 0);
  // Waits (at most until deadline_ns) until every partition but incoming has
  // no pending stop. False when the run must end.
  bool wait_for_stops(const Partition& incoming, int64_t deadline_ns);
  // One ppoll round (timeout null: until something is ready) and the
  // handling of whatever is ready; timer_fired is set when the timerfd
  // expired. False when the run must end.
  bool poll_round(const timespec* timeout, bool& timer_fired);
  void check_partitions() noexcept;
  void on_exit(Partition& p, const siginfo_t& info);
  void check_freezers() noexcept;
  void check_first_runs() noexcept;
  // The /proc check of stops noticed since the last call (verify_stopped).
  void verify_stops() noexcept;
  bool anything_pending() const noexcept;
  // How often pending work must be polled: -1 when nothing is pending.
  int64_t poll_interval_ns() const noexcept;
  // Kills or releases (thaw, SIGCONT) every partition at once, as
  // on_scheduler_exit says, and gives up SCHED_FIFO: first thing on the
  // way out, before any analysis (issue 36: a long run's analysis held the
  // partitions half-scheduled for minutes). Idempotent; cleanup() calls it.
  void release_partitions() noexcept;
  void cleanup() noexcept;
  // The health monitor. create_health_block() makes p's block (once);
  // health_error() counts and records one detected error and decides its
  // action (a kill is deferred to apply_health_actions(), called where no
  // loop over the partition's state is in progress); read_health_block()
  // reads p's block (deadline_missed, application_error, heartbeats);
  // check_heartbeats() runs at each frame end; restart() forks p again.
  void create_health_block(Partition& p);
  void health_error(Partition& p, HealthError error, HealthEvent event) noexcept;
  void read_health_block(Partition& p) noexcept;
  void check_heartbeats() noexcept;
  void apply_health_actions() noexcept;
  // first_frame: the frame of the new process's first window.
  void restart(Partition& p, int64_t first_frame) noexcept;

  const Schedule& schedule_;
  const RunOptions& options_;
  int stop_fd_;
  RunReport report_;
  detail::Guardian guardian_;
  std::vector<Partition> partitions_;
  std::unique_ptr<CgroupFreezer> keeper_;
  sys::UniqueFd timer_;
  // The port memory (partition_ports.h), when the schedule has channels:
  // close-on-exec here, inherited by the partitions only.
  sys::UniqueFd ports_;
  int old_policy_ = -1;
  sched_param old_param_{};
  bool stop_requested_ = false;
  bool stop_schedule_ = false;
  bool cleaned_ = false;
  bool released_ = false;
  int64_t current_frame_ = 0;
  SuspendMethod effective_method_ = SuspendMethod::sigstop;
};

void Run::set_up() {
  report_.method = method_name(schedule_.method);
  report_.first_run = {"cpu-clock (tick-granular)", tick_ns()};
  report_.cpu_after_end = report_.first_run;
  report_.boundary_spin_ns = std::max<int64_t>(0, options_.boundary_spin_ns);
  report_.max_handover_ns = std::max<int64_t>(0, options_.max_handover_ns);
  report_.stopped = {"poll (waitid per partition; the freezer's state) every 50 us", 1};
  report_.overrun_threshold_ns = schedule_.overrun_threshold_ns;
  report_.verify_stopped = options_.verify_stopped && schedule_.method != SuspendMethod::freezer;
  partitions_.resize(schedule_.partitions.size());
  for (std::size_t i = 0; i < partitions_.size(); ++i) {
    partitions_[i].spec = &schedule_.partitions[i];
    partitions_[i].index = i;
    if (!partitions_[i].spec->entry) {
      partitions_[i].exec_path = resolve_command(partitions_[i].spec->command[0]);
      if (partitions_[i].exec_path.empty())
        throw ScheduleError(partitions_[i].spec->line,
                            "partition '" + partitions_[i].spec->name + "': command '" +
                                partitions_[i].spec->command[0] + "' not found or not executable");
    }
  }

  guardian_ = detail::Guardian::start();
  if (!schedule_.channels.empty()) ports_.reset(create_port_memory(schedule_.channels));

  SuspendMethod method = schedule_.method;
  if (method == SuspendMethod::freezer) {
    const FreezerAvailability where = probe_freezers(schedule_.freezer);
    if (where.v2_parent.empty() && where.v1_parent.empty()) {
      report_.warnings.push_back("no cgroup freezer (v2: " + where.v2_why_not + "; v1: " +
                                 where.v1_why_not + "); falling back to sigstop-all-threads");
      method = SuspendMethod::sigstop_all_threads;
      report_.method = method_name(method);
      report_.verify_stopped = options_.verify_stopped;
    }
  }
  effective_method_ = method;

  const std::string prefix = "doorbell-" + std::to_string(::getpid()) + "-";
  for (Partition& p : partitions_) {
    if (method == SuspendMethod::freezer) {
      p.cgroup = std::make_unique<CgroupFreezer>(
          CgroupFreezer::create(prefix + p.spec->name, schedule_.freezer));
      guardian_.watch_cgroup(p.cgroup->path(), p.cgroup->version() == FreezerVersion::v1,
                             schedule_.on_scheduler_exit == OnSchedulerExit::kill);
      report_.freezer_version = freezer_version_name(p.cgroup->version());
      if (!p.cgroup->fallback_reason().empty() && &p == &partitions_.front())
        report_.warnings.push_back(p.cgroup->fallback_reason());
      if (p.cgroup->version() == FreezerVersion::v1 && !keeper_) {
        // The v1 static key (cgroup_freezer.h): keep one empty cgroup frozen.
        FreezerOptions v1 = schedule_.freezer;
        v1.preference = FreezerPreference::v1_only;
        // A '.' no partition name may contain: the keeper cannot collide
        // with a partition's cgroup (a partition may be named "keeper").
        keeper_ = std::make_unique<CgroupFreezer>(CgroupFreezer::create(prefix + ".keeper", v1));
        guardian_.watch_cgroup(keeper_->path(), true);
        if (keeper_->freeze() < 0)
          report_.warnings.push_back(
              "could not freeze the v1 keeper cgroup: v1 freezes will be "
              "slow (static key)");
      }
    }
    create_health_block(p);
    spawn(p);
    initial_suspend(p);
  }

  timer_.reset(sys::timerfd_create(CLOCK_MONOTONIC, TFD_NONBLOCK | TFD_CLOEXEC));
  if (!timer_) sys::throw_errno("timerfd_create");

  if (options_.fifo_priority > 0) {
    old_policy_ = sys::sched_getscheduler(0);
    sys::sched_getparam(0, &old_param_);
    sched_param param{};
    param.sched_priority = options_.fifo_priority;
    if (sys::sched_setscheduler(0, SCHED_FIFO | SCHED_RESET_ON_FORK, &param) == 0) {
      report_.fifo = true;
    } else {
      report_.warnings.push_back(std::string("could not switch to SCHED_FIFO (") +
                                 std::strerror(errno) +
                                 "): the scheduler's own wake-ups may be late under load");
      old_policy_ = -1;
    }
  }
}

void Run::spawn(Partition& p) {
  const PartitionSpec& spec = *p.spec;
  // Everything the child needs is built before fork: no allocation after it.
  std::vector<std::string> env_strings;
  const int ports_fd = ports_.get();
  // With ports, the scheduler's DOORBELL_PORTS_FD and DOORBELL_PARTITION
  // replace any inherited (an outer run's) or configured ones.
  auto ports_variable = [ports_fd](const std::string& entry) {
    return ports_fd >= 0 && (entry.rfind("DOORBELL_PORTS_FD=", 0) == 0 ||
                             entry.rfind("DOORBELL_PARTITION=", 0) == 0);
  };
  for (char** e = environ; *e != nullptr; ++e) {
    const std::string entry = *e;
    if (ports_variable(entry)) continue;
    bool overridden = false;
    for (const auto& [key, value] : spec.environment)
      if (entry.compare(0, key.size() + 1, key + "=") == 0) overridden = true;
    if (!overridden) env_strings.push_back(entry);
  }
  for (const auto& [key, value] : spec.environment)
    if (!ports_variable(key + "=")) env_strings.push_back(key + "=" + value);
  if (ports_fd >= 0) {
    env_strings.push_back("DOORBELL_PORTS_FD=" + std::to_string(ports_fd));
    env_strings.push_back("DOORBELL_PARTITION=" + spec.name);
  }
  // The health block's descriptor (partition_health.h), ours over any
  // inherited one.
  const int health_fd = p.health_fd.get();
  std::erase_if(env_strings, [](const std::string& e) {
    return e.compare(0, std::strlen(kHealthFdVariable) + 1, std::string(kHealthFdVariable) + "=") ==
           0;
  });
  env_strings.push_back(std::string(kHealthFdVariable) + "=" + std::to_string(health_fd));
  // An entry partition keeps its own block's mapping and no other's.
  std::vector<detail::HealthBlock*> other_blocks;
  for (const Partition& other : partitions_)
    if (&other != &p && other.block != nullptr) other_blocks.push_back(other.block);
  std::vector<char*> envp, argv;
  for (auto& s : env_strings) envp.push_back(s.data());
  envp.push_back(nullptr);
  std::vector<std::string> args = spec.command;
  for (auto& s : args) argv.push_back(s.data());
  argv.push_back(nullptr);
  cpu_set_t cpus;
  CPU_ZERO(&cpus);
  for (int cpu : spec.cpus) CPU_SET(cpu, &cpus);

  int error_pipe[2];
  if (sys::pipe2(error_pipe, O_CLOEXEC) != 0) sys::throw_errno("pipe2");
  sys::UniqueFd error_read(error_pipe[0]), error_write(error_pipe[1]);
  // The handshake: the scheduler writes one byte once the guardian holds the
  // partition's pidfd. A socket, so that writing to a child that already
  // died is EPIPE (MSG_NOSIGNAL), not SIGPIPE.
  int handshake[2];
  if (sys::socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, handshake) != 0)
    sys::throw_errno("socketpair");
  sys::UniqueFd handshake_ours(handshake[0]), handshake_child(handshake[1]);
  const int guardian_socket = guardian_.socket_fd();
  const pid_t parent = ::getpid();
  const pid_t pid = sys::fork();
  if (pid < 0) sys::throw_errno("fork partition " + spec.name);
  if (pid == 0) {
    // The scheduler's end of the guardian's socket: held here (until exec,
    // or for ever by an entry partition) the guardian would never see
    // end-of-file, and run()'s clean-up would wait for it for ever.
    sys::close(guardian_socket);
    sys::close(error_pipe[0]);
    sys::close(handshake[0]);
    // Its own session, process group and leader of both: signals to the
    // group reach every process the partition forks; no terminal's signals
    // reach it; and the scheduler's death never makes it an orphaned
    // process group that the kernel would SIGHUP.
    sys::setsid();
    // Until the guardian holds our pidfd, our parent's death must take us
    // with it: nobody else knows we exist.
    sys::prctl(PR_SET_PDEATHSIG, SIGKILL);
    if (::getppid() != parent) ::_exit(126);
    struct sigaction dfl {};
    dfl.sa_handler = SIG_DFL;
    for (int sig = 1; sig < NSIG; ++sig)
      if (sig != SIGKILL && sig != SIGSTOP) sys::sigaction(sig, &dfl, nullptr);
    sigset_t none;
    sigemptyset(&none);
    sys::sigprocmask(SIG_SETMASK, &none, nullptr);
    if (!spec.cpus.empty()) sys::sched_setaffinity(0, sizeof cpus, &cpus);
    if (spec.nice && sys::setpriority(PRIO_PROCESS, 0, *spec.nice) != 0) ::_exit(125);
    // Wait until the guardian holds our pidfd; then the scheduler's death is
    // the guardian's to handle (on_scheduler_exit), not PR_SET_PDEATHSIG's.
    // End-of-file: the scheduler gave up on us (or died).
    char go = 0;
    ssize_t got;
    while ((got = sys::read(handshake[1], &go, 1)) < 0 && errno == EINTR) {
    }
    if (got != 1) ::_exit(126);
    sys::close(handshake[1]);
    sys::prctl(PR_SET_PDEATHSIG, 0);
    // Start suspended: the first window's resume lets us go on.
    sys::kill(::getpid(), SIGSTOP);
    if (spec.entry) {
      if (ports_fd >= 0) {  // the port memory stays, the rest goes
        if (ports_fd > 3) sys::close_range(3u, static_cast<unsigned>(ports_fd) - 1, 0u);
        sys::close_range(static_cast<unsigned>(ports_fd) + 1, ~0u, 0u);
        doorbell::partition::inherited::ports_fd = ports_fd;
        doorbell::partition::inherited::partition = spec.name.c_str();
      } else {
        sys::close_range(3u, ~0u, 0u);
      }
      for (detail::HealthBlock* other : other_blocks) ::munmap(other, detail::kHealthBlockBytes);
      detail::set_health_block(p.block);
      ::_exit(spec.entry());
    }
    // The port memory and the health block's memfd, and nothing else of
    // ours, survive the exec (the scheduler's copies are close-on-exec):
    // DOORBELL_PORTS_FD and DOORBELL_HEALTH_FD name them.
    if (ports_fd >= 0) ::fcntl(ports_fd, F_SETFD, 0);
    if (health_fd >= 0) ::fcntl(health_fd, F_SETFD, 0);
    sys::execve(p.exec_path.c_str(), argv.data(), envp.data());
    const int error = errno;
    while (sys::write(error_pipe[1], &error, sizeof error) < 0 && errno == EINTR) {
    }
    ::_exit(127);
  }
  error_write.reset();
  handshake_child.reset();
  p.pid = pid;
  p.exec_error = std::move(error_read);
  // Until the guardian knows the child, a failure here must not leave it
  // behind: it is killed and reaped (it is our unreaped child, the PID is
  // its own; it has not run any code of the partition, nor forked).
  auto give_up = [&](const std::system_error& e, const char* what) {
    sys::kill(pid, SIGKILL);
    sys::reap(-1, pid);
    throw std::system_error(
        e.code(), "partition " + spec.name + ": " + what + " failed (the partition was killed)");
  };
  try {
    p.pidfd = sys::pidfd_open(pid);  // our unreaped child: the PID cannot be reused
  } catch (const std::system_error& e) {
    give_up(e, "pidfd_open");
  }
  try {
    p.guardian_slot = guardian_.watch_partition(
        p.pidfd.get(), schedule_.on_scheduler_exit == OnSchedulerExit::kill, pid);
  } catch (const std::system_error& e) {
    give_up(e, "handing it to the guardian");
  }
  p.alive = true;
  p.started_ns = now_ns();
  if (report_.pids.size() > p.index)
    report_.pids[p.index] = pid;  // a restart
  else
    report_.pids.push_back(pid);
  // The guardian has it: release the child from PR_SET_PDEATHSIG. A child
  // that died meanwhile shows in initial_suspend().
  // A failed send would let the child read end-of-file and exit 126, and
  // run() would report that instead: report the send. (The guardian holds
  // the child now; the clean-up kills it.)
  const char go = 1;
  ssize_t sent;
  do sent = sys::send(handshake_ours.get(), &go, 1, MSG_NOSIGNAL);
  while (sent < 0 && errno == EINTR);
  if (sent < 0) sys::throw_errno("partition " + spec.name + ": handshake send");
  handshake_ours.reset();
  if (const int rc = sys::clock_getcpuclockid(pid, &p.cpu_clock); rc != 0)
    sys::throw_errno(rc, "clock_getcpuclockid");
}

void Run::initial_suspend(Partition& p) {
  siginfo_t info{};
  for (;;) {
    if (sys::waitid(static_cast<idtype_t>(P_PIDFD), p.pidfd.get(), &info, WSTOPPED | WEXITED) == 0)
      break;
    if (errno != EINTR) sys::throw_errno("waitid for partition " + p.spec->name);
  }
  if (info.si_code != CLD_STOPPED) {
    p.alive = false;
    if (info.si_code == CLD_EXITED && info.si_status == 125)
      throw std::system_error(EPERM, std::generic_category(),
                              "partition " + p.spec->name + ": setpriority(nice " +
                                  std::to_string(p.spec->nice.value_or(0)) + ") failed");
    throw std::system_error(ECHILD, std::generic_category(),
                            "partition " + p.spec->name + " " +
                                describe_exit(info.si_code, info.si_status) + " before starting");
  }
  if (effective_method_ == SuspendMethod::freezer) {
    // Stopped -> frozen: join the cgroup, freeze it, then SIGCONT. A frozen
    // task that gets SIGCONT stays frozen (it wakes only to trap again).
    p.cgroup->add(p.pid);
    if (const int r = p.cgroup->freeze(); r < 0) sys::throw_errno(-r, "freeze " + p.cgroup->path());
    const int64_t give_up = now_ns() + 2'000'000'000;
    while (!p.cgroup->is_frozen()) {
      if (now_ns() > give_up)
        throw std::system_error(ETIMEDOUT, std::generic_category(),
                                "cgroup " + p.cgroup->path() + " did not freeze within 2 s");
      sys::usleep(100);
    }
    // Without it the partition stays stopped for good: no thaw continues a
    // stopped task.
    if (const int rc = sys::pidfd_send_signal(p.pidfd.get(), SIGCONT); rc != 0)
      sys::throw_errno(-rc, "partition " + p.spec->name + ": SIGCONT after freezing it");
    settle_start_up(p);
  }
}

// The start-up SIGCONT wakes the stopped, frozen task: it leaves the group
// stop, reports CLD_CONTINUED and (v2) enters the freezer trap, and until it
// has done so the cgroup is not frozen. Frame 0 must not begin before that:
// wait for the report and for the cgroup to be frozen again.
void Run::settle_start_up(Partition& p) {
  const int64_t give_up = now_ns() + 2'000'000'000;
  if (p.cgroup->version() == FreezerVersion::v2) {
    for (;;) {
      siginfo_t info{};
      const int r = sys::waitid(static_cast<idtype_t>(P_PIDFD), p.pidfd.get(), &info,
                                WCONTINUED | WEXITED | WNOWAIT | WNOHANG);
      if (r != 0 && errno != EINTR) sys::throw_errno("waitid for partition " + p.spec->name);
      if (r == 0 && info.si_pid != 0) {
        if (info.si_code != CLD_CONTINUED) break;  // gone: reported by the run loop
        // Consume the CLD_CONTINUED report.
        siginfo_t consumed{};
        sys::waitid(static_cast<idtype_t>(P_PIDFD), p.pidfd.get(), &consumed, WCONTINUED | WNOHANG);
        break;
      }
      if (now_ns() > give_up) {
        report_.warnings.push_back("partition " + p.spec->name +
                                   ": no CLD_CONTINUED within 2 s of the start-up SIGCONT");
        break;
      }
      sys::usleep(50);
    }
  }
  while (!p.cgroup->is_frozen()) {
    if (now_ns() > give_up)
      throw std::system_error(ETIMEDOUT, std::generic_category(),
                              "cgroup " + p.cgroup->path() +
                                  " did not freeze again within 2 s of the start-up SIGCONT");
    sys::usleep(50);
  }
}

// Runs a command partition through its execve before frame 0 and suspends it
// again, so that frame 0's windows do not hold the exec (page faults and
// file reads, which no stop interrupts: a partition in them is stopped only
// when they end). The exec-error pipe is close-on-exec: its end of file says
// the exec is done. A partition that does not get there (or stop again)
// within kStartUpNs is left as it is and measured from frame 0 on, with a
// warning; one that exits is reported as any exit.
void Run::start_up(Partition& p) {
  constexpr int64_t kStartUpNs = 5'000'000'000;
  if (p.spec->entry || !p.alive || !p.exec_error) return;
  const int64_t give_up = now_ns() + kStartUpNs;
  // A resume that failed lets no exec happen: say so rather than wait for
  // one. Frame 0's resume tries again.
  if (const int rc = resume(p); rc != 0) {
    report_.warnings.push_back("partition " + p.spec->name +
                               ": could not resume it for its exec at start-up (" +
                               std::strerror(-rc) + "); frame 0 includes the exec");
    return;
  }
  for (;;) {
    pollfd fd{p.exec_error.get(), POLLIN, 0};
    const int64_t left = give_up - now_ns();
    if (left <= 0) {
      report_.warnings.push_back("partition " + p.spec->name +
                                 ": its exec took over 5 s at start-up; frame 0 includes it");
      break;
    }
    const timespec wait = to_timespec(std::min<int64_t>(left, 10'000'000));
    const int r = sys::ppoll(&fd, 1, &wait, nullptr);
    if (r < 0 && errno != EINTR) sys::throw_errno("ppoll (start-up of " + p.spec->name + ")");
    if (r > 0) break;  // end of file (exec done) or an exec error (the child exits)
  }
  suspend(p);
  for (;;) {
    if (p.cgroup) {
      if (p.cgroup->is_frozen()) break;
    } else {
      // WNOWAIT: an exit is only peeked (on_exit() kills the partition's
      // group before it reaps it); a stop is consumed.
      siginfo_t info{};
      if (sys::waitid(static_cast<idtype_t>(P_PIDFD), p.pidfd.get(), &info,
                      WSTOPPED | WEXITED | WNOHANG | WNOWAIT) == 0 &&
          info.si_pid != 0) {
        if (info.si_code == CLD_STOPPED) {
          siginfo_t consumed{};
          sys::waitid(static_cast<idtype_t>(P_PIDFD), p.pidfd.get(), &consumed, WSTOPPED | WNOHANG);
          break;
        }
        on_exit(p, info);
        return;
      }
    }
    if (now_ns() > give_up) {
      report_.warnings.push_back("partition " + p.spec->name +
                                 " did not stop within 5 s of its start-up exec");
      break;
    }
    sys::usleep(50);
  }
}

// The signal methods reach the partition's whole process group (the
// partition is its leader, setsid() in spawn): the kernel lists the group at
// each kill, so processes forked since the last window are included. The
// group's number is the partition's PID, which cannot be recycled while the
// partition is our unreaped child (exits are peeked with WNOWAIT, and the
// group is killed before the partition is reaped: on_exit()).
void Run::suspend(Partition& p) noexcept {
  switch (effective_method_) {
    case SuspendMethod::sigstop:
      sys::kill(-p.pid, SIGSTOP);
      break;
    case SuspendMethod::sigstop_all_threads:
      // Every thread of the partition itself, then the rest of its group
      // (one process-directed SIGSTOP each; a no-op for the partition).
      stop_all_threads(p.pid);
      sys::kill(-p.pid, SIGSTOP);
      break;
    case SuspendMethod::freezer:
      p.cgroup->freeze();
      break;
  }
}

int Run::resume(Partition& p) noexcept {
  if (effective_method_ == SuspendMethod::freezer) return p.cgroup->thaw();
  return sys::kill(-p.pid, SIGCONT) == 0 ? 0 : -errno;
}

// Kills whatever is left of partition p: its cgroup and its process group.
// Call while p is not yet reaped (the group's number is its PID).
void Run::kill_partition(Partition& p) noexcept {
  if (p.cgroup) p.cgroup->kill_all();
  sys::kill(-p.pid, SIGKILL);
  sys::pidfd_send_signal(p.pidfd.get(), SIGKILL);
}

bool Run::anything_pending() const noexcept {
  for (const Partition& p : partitions_)
    if (p.pending_stop >= 0 || p.pending_run >= 0) return true;
  return false;
}

int64_t Run::poll_interval_ns() const noexcept {
  int64_t interval = -1;
  auto at_most = [&interval](int64_t ns) { interval = interval < 0 ? ns : std::min(interval, ns); };
  for (const Partition& p : partitions_) {
    // A stop of the signal methods has no notification of our own (SIGCHLD
    // is the caller's, see the top of this file): poll it. The freezers: v1
    // has no notification, and the kernel rate-limits v2's cgroup.events
    // notifications to one per CGROUP_FILE_NOTIFY_MIN_INTV (HZ/100 jiffies,
    // rounded up: 12 ms at HZ=250), so a freeze within that of the thaw is
    // notified up to 12 ms late: poll both.
    if (p.pending_stop >= 0) at_most(kPollNoticeNs);
    if (p.pending_run >= 0) at_most(kPollBackstopNs);  // the CPU clock: tick-granular
  }
  return interval;
}

void Run::on_exit(Partition& p, const siginfo_t& info) {
  // A partition is its whole tree: when the partition itself ends, what it
  // left running (children in its group or cgroup) would run outside every
  // window. Kill it, then reap the partition (peeked with WNOWAIT).
  kill_partition(p);
  sys::reap(p.pidfd.get(), p.pid);  // a failed waitid() falls back to the PID: no zombie
  p.alive = false;
  PartitionExit exit;
  exit.partition = p.index;
  exit.time_ns = now_ns();
  exit.code = info.si_code;
  exit.status = info.si_status;
  exit.reason = describe_exit(info.si_code, info.si_status);
  int exec_errno = 0;
  if (p.exec_error && sys::read(p.exec_error.get(), &exec_errno, sizeof exec_errno) ==
                          static_cast<ssize_t>(sizeof exec_errno))
    exit.reason = std::string("exec failed: ") + std::strerror(exec_errno);
  HealthEvent event;
  if (p.current_record >= 0)
    event.window_start_ns = report_.windows[p.current_record].nominal_start_ns;
  event.detected_ns = exit.time_ns;
  event.pid = p.pid;
  event.detail = exit.reason;
  for (long* pending : {&p.pending_stop, &p.pending_run, &p.current_record}) {
    if (*pending >= 0) report_.windows[*pending].partition_gone = true;
    *pending = -1;
  }
  report_.exits.push_back(exit);
  // Schedule::on_partition_exit is process_died's default action.
  health_error(p, HealthError::process_died, std::move(event));
}

void Run::check_partitions() noexcept {
  for (Partition& p : partitions_) {
    if (!p.alive) continue;
    for (;;) {
      // WNOWAIT: an exit is only peeked here, so that on_exit() can kill
      // the rest of the partition's process group before the PID (the
      // group's number) is freed; a stop is consumed just below.
      siginfo_t info{};
      if (sys::waitid(static_cast<idtype_t>(P_PIDFD), p.pidfd.get(), &info,
                      WSTOPPED | WEXITED | WNOHANG | WNOWAIT) != 0) {
        if (errno == EINTR) continue;
        break;
      }
      if (info.si_pid == 0) break;
      if (info.si_code == CLD_STOPPED) {
        siginfo_t consumed{};
        while (sys::waitid(static_cast<idtype_t>(P_PIDFD), p.pidfd.get(), &consumed,
                           WSTOPPED | WNOHANG) != 0 &&
               errno == EINTR) {
        }
        if (p.pending_stop >= 0 && !p.cgroup) {
          // The /proc check (tens of microseconds) is done later, in
          // verify_stops(), out of the way of a handover; the partition
          // stays stopped until its next window.
          if (options_.verify_stopped) p.pending_verify = p.pending_stop;
          stopped(p, false, now_ns());
        }
        continue;
      }
      if (info.si_code == CLD_EXITED || info.si_code == CLD_KILLED || info.si_code == CLD_DUMPED) {
        on_exit(p, info);
        break;
      }
    }
  }
}

void Run::verify_stops() noexcept {
  for (Partition& p : partitions_) {
    if (p.pending_verify < 0) continue;
    // Only while it is still suspended (its next window not begun).
    if (p.alive && p.current_record < 0 && p.pending_stop < 0) {
      WindowRecord& record = report_.windows[p.pending_verify];
      record.checked = true;
      record.verified = every_thread_stopped(p.pid);
    }
    p.pending_verify = -1;
  }
}

void Run::check_freezers() noexcept {
  for (Partition& p : partitions_) {
    if (p.pending_stop < 0 || !p.cgroup) continue;
    if (p.cgroup->is_frozen()) stopped(p, true, now_ns());
  }
}

WindowRecord& Run::close_stop(Partition& p, int64_t at_ns, int64_t cpu_now_ns,
                              bool measured) noexcept {
  WindowRecord& record = report_.windows[p.pending_stop];
  record.stopped_ns = at_ns;
  record.stop_noticed_ns = at_ns;
  record.cpu_after_end_ns = cpu_now_ns - record.cpu_at_suspend_ns;
  p.pending_stop = -1;
  if (!measured || record.overrun_ns() > schedule_.overrun_threshold_ns) {
    HealthEvent event;
    event.window_start_ns = record.nominal_start_ns;
    event.detected_ns = at_ns;
    event.fault_ns = record.nominal_end_ns + schedule_.overrun_threshold_ns;
    event.pid = p.pid;
    event.detail =
        measured ? "overran its window by " + std::to_string(record.overrun_ns() / 1000) + " us"
                 : "never stopped before its next window";
    health_error(p, HealthError::overrun, std::move(event));
  }
  // A suspension the next resume overtook measured nothing: its "latency"
  // would be the gap to that window, and a few of them would pin the lead
  // at its cap (partition.h promises the percentile of measured stops).
  if (!measured) return record;
  // The lead learns from the time the suspension was due, so that it also
  // covers the scheduler's own lateness in issuing it.
  p.recent_stops.push_back(at_ns - (record.nominal_end_ns - record.stop_lead_ns));
  if (p.recent_stops.size() > kStopLeadHistory) p.recent_stops.pop_front();
  return record;
}

void Run::stopped(Partition& p, bool verified, int64_t at_ns) noexcept {
  WindowRecord& record = close_stop(p, at_ns, cpu_time_ns(p.cpu_clock), true);
  record.verified = verified;
  record.checked = verified;
}

void Run::end_window(Partition& p, int64_t lead_ns) noexcept {
  if (p.current_record < 0 || !p.alive) return;
  WindowRecord& record = report_.windows[p.current_record];
  if (p.pending_run >= 0) p.pending_run = -1;  // never seen running
  record.stop_lead_ns = lead_ns;
  record.cpu_at_suspend_ns = cpu_time_ns(p.cpu_clock);
  record.suspend_requested_ns = now_ns();
  suspend(p);
  p.pending_stop = p.current_record;
  p.current_record = -1;
  read_health_block(p);
}

void Run::check_first_runs() noexcept {
  for (Partition& p : partitions_) {
    if (p.pending_run < 0) continue;
    const int64_t cpu = cpu_time_ns(p.cpu_clock);
    if (cpu > p.cpu_baseline) {
      report_.windows[p.pending_run].first_run_ns = now_ns();
      p.pending_run = -1;
    }
  }
}

bool Run::poll_round(const timespec* timeout, bool& timer_fired) {
  // The timer, the stop request, and per partition its pidfd and its
  // cgroup.events (validate() allows no more partitions).
  pollfd fds[2 + 2 * kMaxPartitions];
  nfds_t n = 0;
  fds[n++] = {timer_.get(), POLLIN, 0};
  fds[n++] = {stop_fd_, POLLIN, 0};
  for (const Partition& p : partitions_) {
    if (p.alive && n < std::size(fds)) fds[n++] = {p.pidfd.get(), POLLIN, 0};
    if (p.pending_stop >= 0 && p.cgroup && p.cgroup->event_fd() >= 0 && n < std::size(fds))
      fds[n++] = {p.cgroup->event_fd(), POLLPRI, 0};
  }
  const int ready = sys::ppoll(fds, n, timeout, nullptr);
  if (ready < 0 && errno != EINTR) sys::fatal("ppoll", errno);
  if (ready <= 0) {
    // Nothing ready (timeout or EINTR): pending stops and first runs are
    // still checked (they are polled while pending).
    for (nfds_t i = 0; i < n; ++i) fds[i].revents = 0;
  }
  check_partitions();
  check_freezers();
  check_first_runs();
  apply_health_actions();
  if (fds[1].revents & POLLIN) {
    stop_requested_ = true;
    return false;
  }
  if (stop_schedule_) return false;
  if (fds[0].revents & POLLIN) {
    uint64_t expirations;
    while (sys::timerfd_read(timer_.get(), &expirations) < 0 && errno == EINTR) {
    }
    timer_fired = true;
  }
  return true;
}

bool Run::wait_for_stops(const Partition& incoming, int64_t deadline_ns) {
  auto others_pending = [&] {
    for (const Partition& p : partitions_)
      if (&p != &incoming && p.pending_stop >= 0) return true;
    return false;
  };
  // Stops are noticed by a poll (poll_interval_ns()), freezes also by
  // cgroup.events (ppoll wakes at once); the scheduler sleeps meanwhile,
  // so that its CPU is free for the threads that must run to stop.
  while (others_pending()) {
    const int64_t left = deadline_ns - now_ns();
    if (left <= 0) break;
    const int64_t interval = poll_interval_ns();
    const timespec timeout = to_timespec(interval < 0 ? left : std::min(left, interval));
    bool fired = false;
    if (!poll_round(&timeout, fired)) return false;
  }
  return true;
}

bool Run::wait_until(int64_t deadline_ns, int64_t spin_ns) {
  // Sleep on the timerfd until spin_ns before the deadline. A timer wake-up
  // is late by what the kernel (and, in a VM, the host) takes to deliver the
  // interrupt and run us: tens to hundreds of microseconds. A deadline
  // already passed is not armed at all: arming one costs that same delay.
  const int64_t wake_at = add_saturated(deadline_ns, -spin_ns);  // spin_ns >= 0
  // The /proc checks of the stops noticed meanwhile, when there is time.
  if (wake_at > add_saturated(now_ns(), kVerifyRoomNs)) verify_stops();
  if (now_ns() < wake_at) {
    itimerspec spec{};
    spec.it_value = to_timespec(wake_at);
    if (sys::timerfd_settime(timer_.get(), TFD_TIMER_ABSTIME, &spec, nullptr) != 0)
      sys::fatal("timerfd_settime", errno);
    for (;;) {
      const int64_t interval = poll_interval_ns();
      const timespec poll_interval = to_timespec(interval);
      bool fired = false;
      if (!poll_round(interval >= 0 ? &poll_interval : nullptr, fired)) return false;
      if (fired || now_ns() >= wake_at) break;
    }
  } else {
    // Handle what has arrived (stops, exits, a stop request) without sleeping.
    const timespec zero{};
    bool fired = false;
    if (!poll_round(&zero, fired)) return false;
  }
  // Awake: the rest of the way on the CPU (the scheduler runs at SCHED_FIFO,
  // so this takes at most spin_ns from whatever ran on this CPU).
  while (now_ns() < deadline_ns) detail::cpu_relax();
  return true;
}

// The number of frames to run (partition.h, RunOptions): duration_ns in
// whole frames, rounded up without overflow, else frames, else no limit.
// Checked before anything starts.
int64_t frames_to_run(const RunOptions& options, int64_t frame) {
  if (options.frames && *options.frames < 1)
    throw std::invalid_argument("RunOptions::frames must be at least 1, got " +
                                std::to_string(*options.frames) +
                                " (leave it unset to run until request_stop())");
  if (options.duration_ns && *options.duration_ns < 1)
    throw std::invalid_argument("RunOptions::duration_ns must be at least 1, got " +
                                std::to_string(*options.duration_ns) +
                                " (leave it unset to run until request_stop())");
  if (options.duration_ns)
    return *options.duration_ns / frame + (*options.duration_ns % frame != 0 ? 1 : 0);
  return options.frames.value_or(INT64_MAX);
}

RunReport Run::execute() {
  const int64_t frame = schedule_.major_frame_ns;
  int64_t frames = frames_to_run(options_, frame);
  set_up();

  // Boundaries within a frame: at each offset, the window that ends there
  // (stopped first) and the window that starts there.
  struct Instant {
    long stop = -1, start = -1;
  };
  std::map<int64_t, Instant> instants;
  for (std::size_t i = 0; i < schedule_.windows.size(); ++i) {
    const WindowSpec& w = schedule_.windows[i];
    instants[w.offset_ns].start = static_cast<long>(i);
    instants[w.offset_ns + w.duration_ns].stop = static_cast<long>(i);
  }

  if (options_.observer) {
    options_.observer->partitions_started(report_.pids);
    for (const ObserverDirectory& d : options_.observer->remove_on_exit())
      guardian_.watch_directory(d.dir_fd, d.name);
  }
  for (Partition& p : partitions_) start_up(p);
  const int64_t start = add_saturated(now_ns(), options_.start_delay_ns);
  report_.start_ns = start;
  // No boundary past the clock's range: start + f * frame + offset stays
  // below INT64_MAX (a limit some 292 years away).
  frames = std::min(frames, (INT64_MAX - start) / frame - 1);
  const int64_t spin = report_.boundary_spin_ns;
  bool go_on = true;
  apply_health_actions();  // a start-up exit's action
  for (int64_t f = 0; f < frames && go_on; ++f) {
    current_frame_ = f;
    for (const auto& [offset, instant] : instants) {
      const int64_t at = add_saturated(add_saturated(start, mul_saturated(f, frame)), offset);
      if (instant.stop >= 0) {
        // Stop lead: suspend early by what this partition's recent stops
        // took (at most half the window, so no earlier boundary is passed).
        const WindowSpec& ending = schedule_.windows[instant.stop];
        Partition& p = partitions_[ending.partition_index];
        const int64_t lead =
            stop_lead_ns(std::vector<int64_t>(p.recent_stops.begin(), p.recent_stops.end()),
                         schedule_.max_stop_lead_ns, ending.duration_ns);
        if (!wait_until(at - lead, spin)) {
          go_on = false;
          break;
        }
        end_window(p, lead);
      }
      if (!wait_until(at, spin)) {
        go_on = false;
        break;
      }
      if (instant.start >= 0) {
        const WindowSpec& w = schedule_.windows[instant.start];
        Partition& p = partitions_[w.partition_index];
        // Handover: resume the incoming partition once every other partition
        // is stopped, or at the latest max_handover_ns after the boundary.
        if (!wait_for_stops(p, add_saturated(at, report_.max_handover_ns))) {
          go_on = false;
          break;
        }
        WindowRecord record;
        record.frame = f;
        record.window = static_cast<std::size_t>(instant.start);
        record.partition = w.partition_index;
        record.nominal_start_ns = start + f * frame + w.offset_ns;
        record.nominal_end_ns = record.nominal_start_ns + w.duration_ns;
        if (!p.alive && p.restart_pending && !p.stopped_for_good) restart(p, f);
        record.partition_gone = !p.alive;
        report_.windows.push_back(record);
        if (p.alive) {
          const long index = static_cast<long>(report_.windows.size() - 1);
          p.cpu_baseline = cpu_time_ns(p.cpu_clock);
          const int64_t resume_at = now_ns();
          if (p.pending_stop >= 0) {
            // Its previous window's suspension never completed: it ran all
            // the way to this window. The resume cancels the stop.
            close_stop(p, resume_at, p.cpu_baseline, false).never_stopped = true;
          }
          report_.windows[index].resume_requested_ns = resume_at;
          resume(p);
          p.current_record = index;
          p.pending_run = index;
          if (p.restart_event >= 0) {
            // The restarted process's first window: the restart is done.
            report_.health_events[p.restart_event].restarted_ns = resume_at;
            report_.health_events[p.restart_event].new_pid = p.pid;
            p.restart_event = -1;
          }
        }
      }
      check_freezers();
      apply_health_actions();
    }
    if (go_on) {
      check_heartbeats();
      apply_health_actions();
    }
    if (go_on) report_.frames = f + 1;
  }
  report_.stopped_early = stop_requested_ || stop_schedule_;

  // Measure the last suspensions (the frame's final boundary was processed).
  const int64_t give_up = now_ns() + kFinalStopWaitNs;
  while (anything_pending() && now_ns() < give_up) {
    for (Partition& p : partitions_) p.pending_run = -1;
    bool any_stop = false;
    for (const Partition& p : partitions_) any_stop |= p.pending_stop >= 0;
    if (!any_stop) break;
    if (!wait_until(std::min(give_up, now_ns() + 1'000'000))) break;
  }
  verify_stops();
  // The partitions go first: the observer's analysis may take a while.
  release_partitions();
  if (options_.observer) options_.observer->refine(report_);
  cleanup();
  report_.summaries = summarize(schedule_, report_);
  return std::move(report_);
}

void Run::create_health_block(Partition& p) {
  if (p.block != nullptr) return;
  // No name in any file system: the block goes with its last descriptor
  // and mapping, whichever way the scheduler and the partition end.
  // The partition holds the descriptor: sealed, it cannot shrink the block
  // under the scheduler's mapping (a SIGBUS at the scheduler's next read).
  sys::SharedMemory memory = sys::create_shared_memory(
      "doorbell-health", detail::kHealthBlockBytes, MFD_CLOEXEC, "health block of " + p.spec->name,
      F_SEAL_SHRINK | F_SEAL_GROW | F_SEAL_SEAL);
  p.health_fd = std::move(memory.fd);
  void* map = memory.base;
  p.block = new (map) detail::HealthBlock();
}

void Run::health_error(Partition& p, HealthError error, HealthEvent event) noexcept {
  ++report_.health_counts[static_cast<std::size_t>(error)];
  const HealthAction action = health_action(schedule_, p.index, error);
  if (action == HealthAction::ignore) return;
  event.partition = p.index;
  event.error = error;
  event.action = action;
  event.frame = current_frame_;
  if (report_.health_events.size() < kMaxHealthEvents) {
    report_.health_events.push_back(std::move(event));
  } else {
    ++report_.health_events_dropped;
  }
  switch (action) {
    case HealthAction::ignore:
    case HealthAction::log:
      break;
    case HealthAction::restart:
      if (p.stopped_for_good) break;
      p.restart_pending = true;
      p.kill_requested = p.alive;
      if (report_.health_events_dropped == 0)
        p.restart_event = static_cast<long>(report_.health_events.size() - 1);
      break;
    case HealthAction::stop_partition:
      p.stopped_for_good = true;
      p.restart_pending = false;
      p.restart_event = -1;
      p.kill_requested = p.alive;
      break;
    case HealthAction::stop_schedule:
      stop_schedule_ = true;
      break;
  }
}

void Run::read_health_block(Partition& p) noexcept {
  detail::HealthBlock* b = p.block;
  if (b == nullptr || !p.alive) return;
  // Acquire: the times and code stored before each increment are visible.
  const uint64_t beats = b->heartbeats.load(std::memory_order_acquire);
  if (beats != p.seen_heartbeats) {
    p.seen_heartbeats = beats;
    p.silent_since_frame = current_frame_ + 1;
    p.silence_reported = false;
  }
  const uint64_t deadlines = b->deadlines_missed.load(std::memory_order_acquire);
  if (deadlines != p.seen_deadlines) {
    HealthEvent event;
    event.count = deadlines - p.seen_deadlines;
    event.fault_ns = b->last_deadline_ns.load(std::memory_order_relaxed);
    event.detected_ns = now_ns();
    event.pid = p.pid;
    event.detail = std::to_string(event.count) + " deadline(s) missed";
    p.seen_deadlines = deadlines;
    health_error(p, HealthError::deadline_missed, std::move(event));
  }
  const uint64_t errors = b->errors.load(std::memory_order_acquire);
  if (errors != p.seen_errors) {
    HealthEvent event;
    event.count = errors - p.seen_errors;
    event.code = b->last_error_code.load(std::memory_order_relaxed);
    event.fault_ns = b->last_error_ns.load(std::memory_order_relaxed);
    event.detected_ns = now_ns();
    event.pid = p.pid;
    event.detail =
        std::to_string(event.count) + " error(s), the last code " + std::to_string(event.code);
    p.seen_errors = errors;
    health_error(p, HealthError::application_error, std::move(event));
  }
}

void Run::check_heartbeats() noexcept {
  for (Partition& p : partitions_) {
    const int64_t limit = heartbeat_frames(schedule_, p.index);
    if (limit <= 0 || !p.alive || p.silence_reported) continue;
    read_health_block(p);
    if (!p.alive || p.silence_reported) continue;
    if (current_frame_ + 1 - p.silent_since_frame < limit) continue;
    p.silence_reported = true;
    HealthEvent event;
    event.detected_ns = now_ns();
    event.fault_ns = p.seen_heartbeats != 0
                         ? p.block->last_heartbeat_ns.load(std::memory_order_relaxed)
                         : p.started_ns;
    event.pid = p.pid;
    event.detail = "no heartbeat for " + std::to_string(current_frame_ + 1 - p.silent_since_frame) +
                   " frame(s)";
    health_error(p, HealthError::no_heartbeat, std::move(event));
  }
}

void Run::apply_health_actions() noexcept {
  for (Partition& p : partitions_) {
    if (!p.kill_requested) {
      // A restart is forked at once, so that its next window does not wait
      // for the fork: the new process stops itself before it runs any code
      // of the partition's, and runs from its next window on.
      if (p.restart_pending && !p.alive && !p.stopped_for_good && !stop_schedule_)
        restart(p, current_frame_ + 1);
      continue;
    }
    p.kill_requested = false;
    if (!p.alive) continue;
    // As on_exit(): the whole tree, then the partition, reaped; no
    // process_died for a death the monitor itself decided.
    kill_partition(p);
    sys::reap(p.pidfd.get(), p.pid);
    p.alive = false;
    for (long* pending : {&p.pending_stop, &p.pending_run, &p.current_record}) {
      if (*pending >= 0) report_.windows[*pending].partition_gone = true;
      *pending = -1;
    }
    PartitionExit exit;
    exit.partition = p.index;
    exit.time_ns = now_ns();
    exit.code = CLD_KILLED;
    exit.status = SIGKILL;
    exit.reason = p.stopped_for_good ? "killed by the health monitor (stop_partition)"
                                     : "killed by the health monitor (restart)";
    report_.exits.push_back(exit);
    if (p.restart_pending && !p.stopped_for_good && !stop_schedule_) restart(p, current_frame_ + 1);
  }
}

void Run::restart(Partition& p, int64_t first_frame) noexcept {
  p.restart_pending = false;
  // A cold start: a fresh block (the new process starts from zero) and a
  // fresh process.
  new (p.block) detail::HealthBlock();
  p.seen_heartbeats = p.seen_deadlines = p.seen_errors = 0;
  p.silent_since_frame = first_frame;
  p.silence_reported = false;
  // The predecessor is reaped: the guardian lets go of it, so that restarts
  // are not bounded by its table (one that cannot be told keeps the slot).
  if (p.guardian_slot != SIZE_MAX && guardian_.forget_partition(p.guardian_slot))
    p.guardian_slot = SIZE_MAX;
  try {
    spawn(p);
    initial_suspend(p);
    ++report_.restarts;
  } catch (const std::exception& e) {
    report_.warnings.push_back("partition " + p.spec->name +
                               ": the health monitor's restart failed (" + e.what() +
                               "); the partition stays stopped");
    if (p.alive) {
      kill_partition(p);
      sys::reap(p.pidfd.get(), p.pid);
      p.alive = false;
    }
    p.stopped_for_good = true;
    p.restart_event = -1;
  }
}

void Run::release_partitions() noexcept {
  if (released_) return;
  released_ = true;
  if (old_policy_ >= 0) sys::sched_setscheduler(0, old_policy_, &old_param_);
  const bool kill_them = schedule_.on_scheduler_exit == OnSchedulerExit::kill;
  for (Partition& p : partitions_) {
    if (!p.alive) continue;
    if (kill_them) {
      // SIGKILL first (the cgroup, the group, the partition), then thaw: no
      // user code runs in between.
      kill_partition(p);
      if (p.cgroup) p.cgroup->thaw();
      sys::reap(p.pidfd.get(), p.pid);  // a failed waitid() falls back to the PID: no zombie
      p.alive = false;
    } else {
      if (p.cgroup) p.cgroup->thaw();
      sys::kill(-p.pid, SIGCONT);
      sys::pidfd_send_signal(p.pidfd.get(), SIGCONT);
    }
  }
}

void Run::cleanup() noexcept {
  if (cleaned_) return;
  cleaned_ = true;
  release_partitions();
  for (Partition& p : partitions_) {
    if (!p.cgroup) continue;
    try {
      p.cgroup->remove();
    } catch (const std::exception& e) {
      report_.warnings.push_back(e.what());
    }
  }
  for (Partition& p : partitions_)
    if (p.block != nullptr) {
      ::munmap(p.block, detail::kHealthBlockBytes);
      p.block = nullptr;
    }
  if (keeper_) {
    try {
      keeper_->remove();
    } catch (const std::exception& e) {
      report_.warnings.push_back(e.what());
    }
  }
  guardian_.finish();
}

}  // namespace

Scheduler::Scheduler(Schedule schedule) : schedule_(std::move(schedule)) {
  validate(schedule_);
  stop_fd_ = sys::eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
  if (stop_fd_ < 0) sys::throw_errno("eventfd");
}

Scheduler::~Scheduler() {
  if (stop_fd_ >= 0) sys::close(stop_fd_);
}

RunReport Scheduler::run(const RunOptions& options) {
  if (options.fifo_priority < 0 || options.fifo_priority > 99)
    throw std::invalid_argument("Scheduler::run: RunOptions::fifo_priority must be 0..99, got " +
                                std::to_string(options.fifo_priority));
  if (options.start_delay_ns < 0)
    throw std::invalid_argument(
        "Scheduler::run: RunOptions::start_delay_ns must not be negative, got " +
        std::to_string(options.start_delay_ns));
  Run run(schedule_, options, stop_fd_);
  return run.execute();
}

void Scheduler::request_stop() noexcept {
  const uint64_t one = 1;
  // eventfd write is async-signal-safe; EAGAIN means a stop is already queued.
  while (sys::eventfd_write(stop_fd_, one) < 0 && errno == EINTR) {
  }
}

}  // namespace doorbell::partition
