// The partition ports rows (issue 35): include/doorbell/partition_ports.h
// measured.
//
// (a) partition/ports:kind=K: message latency from a write in one partition's
//     window to its read in the next partition's window, for the four ways
//     the same two partition processes of one schedule talk: a sampling port,
//     a queuing port, a pipe and a UNIX datagram socket. The real scheduler
//     (doorbell::partition::Scheduler, SCHED_FIFO where permitted), 2 ms frame:
//     writer W [0,1) ms, reader R [1,2) ms, sigstop-all-threads. W spins; when
//     it sees its clock jump (it was suspended: a new window), it sends one
//     message on each of the four, in a rotating order, each stamped with
//     CLOCK_MONOTONIC just before its write. R spins polling all four without
//     waiting (rotating order); a sample ends when R has the message
//     (CLOCK_MONOTONIC right after the read). Every row runs the same
//     schedule with all four and records all four (metrics sampling,
//     queuing, pipe, unix); its primary metric is its own kind. The latency
//     is dominated by the window boundary (the rest of W's window, the
//     switch, R's resume): what the rows compare is ports against pipe and
//     socket in the same run.
//     The pipe and the socket cannot be inherited (an entry partition closes
//     every descriptor but the port memory): R makes them and W opens the
//     pipe's write end through /proc/R/fd and the socket by its abstract
//     name (nothing on any file system).
//
// (b) partition/ports_cost:op=O: one port operation pair in one thread, no
//     scheduler: sampling write+read, queuing send+receive (no wait), against
//     Ring try_push+try_pop (include/doorbell/ring.h), 64-byte messages, the
//     mean of a batch of 64 pairs timed with the interval clock. Counter
//     syscalls_per_op: a forked child runs 10000 pairs under a seccomp filter
//     that traps every system call (SIGSYS, counted by the handler): the
//     count with no waiter, expected 0 (the proof of tests/bell_test.cpp,
//     counted instead of fatal). A clock read that fell back from the vDSO to
//     a system call would count.
#include <fcntl.h>
#include <linux/audit.h>
#include <linux/filter.h>
#include <linux/seccomp.h>
#include <signal.h>
#include <stddef.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <atomic>
#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <stdexcept>
#include <string>
#include <vector>

#include "doorbell/partition.h"
#include "doorbell/partition_ports.h"
#include "doorbell/ring.h"
#include "lab/common/deadline.h"
#include "lab/common/time.h"
#include "lab/harness/scenario.h"
#include "sys/error.h"

namespace doorbell::lab {
namespace {

namespace dp = doorbell::partition;

constexpr uint32_t kMessageBytes = 64;

int64_t now_ns() noexcept {
  timespec ts{};
  ::clock_gettime(CLOCK_MONOTONIC, &ts);
  return static_cast<int64_t>(ts.tv_sec) * 1'000'000'000 + ts.tv_nsec;
}

// --- (a) latency across windows ------------------------------------------------

enum Kind { kSampling, kQueuing, kPipe, kUnix, kKinds };
const char* const kKindNames[kKinds] = {"sampling", "queuing", "pipe", "unix"};

struct Message {
  uint64_t sequence;
  int64_t stamp_ns;
  unsigned char padding[kMessageBytes - 16];
};
static_assert(sizeof(Message) == kMessageBytes);

// What the two partitions share with the lab (MAP_SHARED anonymous memory
// made before the scheduler forks them). Only R writes the samples.
struct LatencyTruth {
  static constexpr int kMax = 4096;
  std::atomic<int> reader_pid{0};
  std::atomic<int> pipe_write_fd{-1};
  std::atomic<int> reader_ready{0};
  std::atomic<int> writer_error{0};  // 0: none; else a line below
  std::atomic<int> reader_error{0};
  std::atomic<int> writer_errno{0};
  std::atomic<int64_t> windows_seen{0};  // by W
  std::atomic<uint64_t> sent[kKinds];
  std::atomic<uint64_t> send_refused[kKinds];
  std::atomic<uint64_t> received[kKinds];
  std::atomic<int> samples[kKinds];
  int64_t latency_ns[kKinds][kMax];
};

// The gap in W's clock that says it was suspended (a new window): its
// window is 1 ms, the reader's 1 ms.
constexpr int64_t kResumeGapNs = 300'000;

int latency_writer(LatencyTruth* truth, const std::string& socket_name, int64_t give_up_ns) {
  auto fail = [truth](int code) {
    truth->writer_errno.store(errno);
    truth->writer_error.store(code);
    return code;
  };
  dp::Ports ports = dp::Ports::from_environment();
  dp::SamplingPort sampling = ports.sampling("s");
  dp::QueuingPort queuing = ports.queuing("q");
  while (truth->reader_ready.load() == 0) {
    if (now_ns() > give_up_ns) return fail(1);
  }
  const std::string pipe_path = "/proc/" + std::to_string(truth->reader_pid.load()) + "/fd/" +
                                std::to_string(truth->pipe_write_fd.load());
  const int pipe_fd = ::open(pipe_path.c_str(), O_WRONLY | O_NONBLOCK | O_CLOEXEC);
  if (pipe_fd < 0) return fail(2);
  const int sock = ::socket(AF_UNIX, SOCK_DGRAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
  if (sock < 0) return fail(3);
  sockaddr_un address{};
  address.sun_family = AF_UNIX;
  std::memcpy(address.sun_path + 1, socket_name.data(), socket_name.size());
  const auto length =
      static_cast<socklen_t>(offsetof(sockaddr_un, sun_path) + 1 + socket_name.size());
  if (::connect(sock, reinterpret_cast<sockaddr*>(&address), length) != 0) return fail(4);
  Message m{};
  uint64_t window = 0;
  int64_t last = now_ns();
  for (;;) {  // until the scheduler ends the run and kills it
    const int64_t now = now_ns();
    if (now - last < kResumeGapNs) {
      last = now;
      continue;
    }
    ++window;
    truth->windows_seen.fetch_add(1);
    for (int i = 0; i < kKinds; ++i) {
      const int k = static_cast<int>((window + i) % kKinds);
      m.sequence = window;
      m.stamp_ns = now_ns();
      const auto bytes = std::as_bytes(std::span(&m, 1));
      bool ok = false;
      switch (k) {
        case kSampling:
          ok = sampling.write(bytes) == dp::PortStatus::ok;
          break;
        case kQueuing:
          ok = queuing.send(bytes) == dp::PortStatus::ok;
          break;
        case kPipe:
          ok = ::write(pipe_fd, &m, sizeof m) == static_cast<ssize_t>(sizeof m);
          break;
        case kUnix:
          ok = ::send(sock, &m, sizeof m, 0) == static_cast<ssize_t>(sizeof m);
          break;
      }
      (ok ? truth->sent[k] : truth->send_refused[k]).fetch_add(1);
    }
    last = now_ns();
  }
}

int latency_reader(LatencyTruth* truth, const std::string& socket_name) {
  auto fail = [truth](int code) {
    truth->reader_error.store(code);
    return code;
  };
  dp::Ports ports = dp::Ports::from_environment();
  dp::SamplingPort sampling = ports.sampling("s");
  dp::QueuingPort queuing = ports.queuing("q");
  int pipe_fds[2];
  if (::pipe2(pipe_fds, O_NONBLOCK | O_CLOEXEC) != 0) return fail(1);
  const int sock = ::socket(AF_UNIX, SOCK_DGRAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
  if (sock < 0) return fail(2);
  sockaddr_un address{};
  address.sun_family = AF_UNIX;
  std::memcpy(address.sun_path + 1, socket_name.data(), socket_name.size());
  const auto length =
      static_cast<socklen_t>(offsetof(sockaddr_un, sun_path) + 1 + socket_name.size());
  if (::bind(sock, reinterpret_cast<sockaddr*>(&address), length) != 0) return fail(3);
  truth->reader_pid.store(::getpid());
  truth->pipe_write_fd.store(pipe_fds[1]);
  truth->reader_ready.store(1);
  Message m{};
  const auto buffer = std::as_writable_bytes(std::span(&m, 1));
  uint64_t last_sampling = 0;
  auto record = [truth](int k, const Message& got) {
    const int64_t latency = now_ns() - got.stamp_ns;
    truth->received[k].fetch_add(1);
    const int i = truth->samples[k].load();
    if (i < LatencyTruth::kMax) {
      truth->latency_ns[k][i] = latency;
      truth->samples[k].store(i + 1);
    }
  };
  for (uint64_t turn = 0;; ++turn) {  // until the scheduler kills it
    for (int i = 0; i < kKinds; ++i) {
      const int k = static_cast<int>((turn + i) % kKinds);
      switch (k) {
        case kSampling: {
          const dp::SamplingRead r = sampling.read(buffer);
          if (r.status == dp::PortStatus::ok && r.sequence != last_sampling) {
            last_sampling = r.sequence;
            record(k, m);
          }
          break;
        }
        case kQueuing:
          if (queuing.receive(buffer).status == dp::PortStatus::ok) record(k, m);
          break;
        case kPipe:
          if (::read(pipe_fds[0], &m, sizeof m) == static_cast<ssize_t>(sizeof m)) record(k, m);
          break;
        case kUnix:
          if (::recv(sock, &m, sizeof m, 0) == static_cast<ssize_t>(sizeof m)) record(k, m);
          break;
      }
    }
  }
}

constexpr int64_t kLatencyFrameNs = 2'000'000;

void run_latency(Context& ctx) {
  void* map = ::mmap(nullptr, sizeof(LatencyTruth), PROT_READ | PROT_WRITE,
                     MAP_SHARED | MAP_ANONYMOUS, -1, 0);
  if (map == MAP_FAILED) sys::throw_errno("mmap");
  struct Unmap {
    void* map;
    ~Unmap() { ::munmap(map, sizeof(LatencyTruth)); }
  } unmap{map};
  LatencyTruth* truth = new (map) LatencyTruth();
  static std::atomic<int> runs{0};
  const std::string socket_name = "doorbell-lab-ports-" + std::to_string(::getpid()) + "-" +
                                  std::to_string(runs.fetch_add(1)) + "-" +
                                  std::to_string(now_ns());
  const int64_t give_up_ns = static_cast<int64_t>(ctx.wait_deadline_ns());

  dp::Schedule s;
  s.major_frame_ns = kLatencyFrameNs;
  s.method = dp::SuspendMethod::sigstop_all_threads;
  dp::ChannelSpec sampling;
  sampling.name = "s";
  sampling.kind = dp::PortKind::sampling;
  sampling.source = "W.s";
  sampling.destinations = {"R.s"};
  sampling.message_size = kMessageBytes;
  sampling.refresh_ns = 1'000'000'000;
  dp::ChannelSpec queuing;
  queuing.name = "q";
  queuing.kind = dp::PortKind::queuing;
  queuing.source = "W.q";
  queuing.destinations = {"R.q"};
  queuing.message_size = kMessageBytes;
  queuing.depth = 64;
  s.channels = {sampling, queuing};
  dp::PartitionSpec w;
  w.name = "W";
  w.entry = [truth, socket_name, give_up_ns] {
    return latency_writer(truth, socket_name, give_up_ns);
  };
  dp::PartitionSpec r;
  r.name = "R";
  r.entry = [truth, socket_name] { return latency_reader(truth, socket_name); };
  s.partitions = {w, r};
  s.windows = {{"W", 0, kLatencyFrameNs / 2}, {"R", kLatencyFrameNs / 2, kLatencyFrameNs / 2}};
  dp::Scheduler scheduler(std::move(s));
  dp::RunOptions options;
  // One message of each kind per frame once both are set up (a few
  // frames); >= 160 frames, so >= 100 samples per kind and repetition even
  // with --quick's budget.
  const double usable_s = ctx.budget_s() - 0.015;
  int64_t frames = static_cast<int64_t>(usable_s / (kLatencyFrameNs * 1e-9));
  frames = std::min<int64_t>(frames, static_cast<int64_t>(ctx.samples()));
  options.frames = std::clamp<int64_t>(frames, 160, LatencyTruth::kMax - 8);
  options.verify_stopped = false;
  ctx.phase("running the writer/reader schedule");
  const dp::RunReport report = scheduler.run(options);
  for (const auto& warning : report.warnings) ctx.note(warning);
  if (const int e = truth->writer_error.load())
    throw std::runtime_error("the writer partition failed at step " + std::to_string(e) + ": " +
                             std::strerror(truth->writer_errno.load()) +
                             (e == 1 ? " (the reader never became ready)" : ""));
  if (const int e = truth->reader_error.load())
    throw std::runtime_error("the reader partition failed at step " + std::to_string(e));
  for (int k = 0; k < kKinds; ++k) {
    Histogram& h = ctx.metric(kKindNames[k]);
    const int n = std::min(truth->samples[k].load(), LatencyTruth::kMax);
    for (int i = 0; i < n; ++i) h.record(static_cast<double>(truth->latency_ns[k][i]));
    ctx.counter(std::string("sent_") + kKindNames[k], static_cast<double>(truth->sent[k].load()));
    ctx.counter(std::string("refused_") + kKindNames[k],
                static_cast<double>(truth->send_refused[k].load()));
    ctx.counter(std::string("received_") + kKindNames[k],
                static_cast<double>(truth->received[k].load()));
  }
  ctx.counter("frames", static_cast<double>(*options.frames));
  ctx.counter("writer_windows", static_cast<double>(truth->windows_seen.load()));
  ctx.counter("scheduler_fifo", report.fifo ? 1 : 0);
}

std::vector<Scenario> latency_scenarios() {
  std::vector<Scenario> list;
  for (int k = 0; k < kKinds; ++k) {
    Scenario s;
    s.name = std::string("partition/ports:kind=") + kKindNames[k];
    s.group = "partition";
    s.title = std::string("message W window -> R window: ") + kKindNames[k] +
              (k == kSampling || k == kQueuing ? " port" : "");
    s.description =
        "doorbell::partition::Scheduler (SCHED_FIFO), sigstop-all-threads, 2 ms frame: writer W "
        "[0,1) ms, reader R [1,2) ms. At each of its window starts W sends one 64-byte message "
        "on a sampling port, a queuing port, a pipe and a UNIX datagram socket (rotating "
        "order), each stamped with CLOCK_MONOTONIC before its write; R polls all four without "
        "waiting; a sample = R's CLOCK_MONOTONIC once it has the message - the stamp. Every row "
        "runs the same schedule and records all four (metrics sampling, queuing, pipe, unix); "
        "the primary metric is this row's kind. Dominated by the window boundary (the rest of "
        "W's window, the switch, R's resume): compare the kinds within one run.";
    s.params = {{"kind", kKindNames[k]}};
    s.clock = ClockKind::monotonic;
    s.primary_metric = kKindNames[k];
    s.budget_s = 1.0;
    s.samples = 450;
    s.in_default_suite = true;
    s.run = [](Context& ctx) { run_latency(ctx); };
    list.push_back(std::move(s));
  }
  return list;
}

// --- (b) the cost of one operation --------------------------------------------

enum class Op { sampling, queuing, ring };
const char* op_name(Op op) {
  switch (op) {
    case Op::sampling:
      return "sampling";
    case Op::queuing:
      return "queuing";
    case Op::ring:
      return "ring";
  }
  return "?";
}

// Everything one operation pair needs, in one process.
class Endpoints {
 public:
  Endpoints() {
    dp::ChannelSpec s;
    s.name = "s";
    s.kind = dp::PortKind::sampling;
    s.source = "A.s";
    s.destinations = {"B.s"};
    s.message_size = kMessageBytes;
    s.refresh_ns = 1'000'000'000;
    dp::ChannelSpec q;
    q.name = "q";
    q.kind = dp::PortKind::queuing;
    q.source = "A.q";
    q.destinations = {"B.q"};
    q.message_size = kMessageBytes;
    q.depth = 64;
    fd_ = dp::create_port_memory({s, q});
    a_ = std::make_unique<dp::Ports>(fd_, "A");
    b_ = std::make_unique<dp::Ports>(fd_, "B");
    s_out_ = a_->sampling("s");
    s_in_ = b_->sampling("s");
    q_out_ = a_->queuing("q");
    q_in_ = b_->queuing("q");
    ring_bytes_ = Ring::bytes_needed(64, kMessageBytes);
    ring_memory_ =
        ::mmap(nullptr, ring_bytes_, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (ring_memory_ == MAP_FAILED) sys::throw_errno("mmap ring");
    ring_ = std::make_unique<Ring>(Ring::create(ring_memory_, ring_bytes_, 64, kMessageBytes));
  }
  ~Endpoints() {
    ::munmap(ring_memory_, ring_bytes_);
    ::close(fd_);
  }
  Endpoints(const Endpoints&) = delete;
  Endpoints& operator=(const Endpoints&) = delete;

  // One write+read / send+receive / push+pop; false when it did not go
  // through.
  bool pair(Op op) noexcept {
    const auto in = std::as_bytes(std::span(out_));
    const auto buffer = std::as_writable_bytes(std::span(in_));
    switch (op) {
      case Op::sampling:
        return s_out_.write(in) == dp::PortStatus::ok &&
               s_in_.read(buffer).status == dp::PortStatus::ok;
      case Op::queuing:
        return q_out_.send(in) == dp::PortStatus::ok &&
               q_in_.receive(buffer).status == dp::PortStatus::ok;
      case Op::ring:
        return ring_->try_push(out_.data(), out_.size()) == Ring::Status::ok &&
               ring_->try_pop(in_.data(), in_.size()).status == Ring::Status::ok;
    }
    return false;
  }

 private:
  int fd_ = -1;
  std::unique_ptr<dp::Ports> a_, b_;
  dp::SamplingPort s_out_, s_in_;
  dp::QueuingPort q_out_, q_in_;
  std::size_t ring_bytes_ = 0;
  void* ring_memory_ = nullptr;
  std::unique_ptr<Ring> ring_;
  std::array<unsigned char, kMessageBytes> out_{};
  std::array<unsigned char, kMessageBytes> in_{};
};

std::atomic<uint64_t>* g_trapped = nullptr;
void count_sigsys(int, siginfo_t*, void*) {
  g_trapped->fetch_add(1, std::memory_order_relaxed);
}

// In a forked child: traps every system call but rt_sigreturn and
// exit_group (SIGSYS, counted; the call itself is skipped), runs `pairs`
// pairs, exits. The count lands in shared memory.
[[noreturn]] void count_syscalls_child(Endpoints& endpoints, Op op, int pairs,
                                       std::atomic<uint64_t>* trapped,
                                       std::atomic<uint64_t>* failed) {
  g_trapped = trapped;
  struct sigaction action {};
  action.sa_sigaction = count_sigsys;
  action.sa_flags = SA_SIGINFO;
  if (::sigaction(SIGSYS, &action, nullptr) != 0) ::_exit(10);
  struct sock_filter filter[] = {
      BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(struct seccomp_data, nr)),
      BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, __NR_exit_group, 0, 1),
      BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW),
      BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, __NR_rt_sigreturn, 0, 1),
      BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW),
      BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_TRAP),
  };
  struct sock_fprog prog = {static_cast<unsigned short>(sizeof filter / sizeof filter[0]), filter};
  if (::prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != 0) ::_exit(11);
  if (::syscall(SYS_seccomp, SECCOMP_SET_MODE_FILTER, 0, &prog) != 0) ::_exit(12);
  uint64_t bad = 0;
  for (int i = 0; i < pairs; ++i)
    if (!endpoints.pair(op)) ++bad;
  failed->store(bad);
  ::syscall(SYS_exit_group, 0);
  __builtin_unreachable();
}

struct SyscallCount {
  uint64_t calls = 0;
  uint64_t failed = 0;
};

SyscallCount count_syscalls(Context& ctx, Endpoints& endpoints, Op op, int pairs) {
  void* map = ::mmap(nullptr, 4096, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
  if (map == MAP_FAILED) sys::throw_errno("mmap");
  struct Unmap {
    void* map;
    ~Unmap() { ::munmap(map, 4096); }
  } unmap{map};
  auto* trapped = new (map) std::atomic<uint64_t>(0);
  auto* failed = new (static_cast<char*>(map) + 64) std::atomic<uint64_t>(0);
  const pid_t pid = ::fork();
  if (pid < 0) sys::throw_errno("fork");
  if (pid == 0) count_syscalls_child(endpoints, op, pairs, trapped, failed);
  const Deadline deadline(ctx.wait_deadline_ns());
  int status = 0;
  for (;;) {
    const pid_t got = ::waitpid(pid, &status, WNOHANG);
    if (got == pid) break;
    if (got < 0 && errno != EINTR) sys::throw_errno("waitpid");
    if (deadline.passed()) {
      ::kill(pid, SIGKILL);
      ::waitpid(pid, &status, 0);
      throw WaitTimedOut("timed out waiting for the syscall-counting child");
    }
    sleep_ns(1'000'000);
  }
  if (!WIFEXITED(status) || WEXITSTATUS(status) != 0)
    throw std::runtime_error("the syscall-counting child ended with status " +
                             std::to_string(status) + " (seccomp refused?)");
  return {trapped->load(), failed->load()};
}

void run_cost(Context& ctx, Op op) {
  Endpoints endpoints;
  const auto& clock = IntervalClock::get();
  Histogram& latency = ctx.metric();
  constexpr int kBatch = 64;
  std::size_t n = 0;
  uint64_t failed = 0;
  ctx.phase("timing batches of operation pairs");
  while (ctx.keep_going(n)) {
    const uint64_t t0 = clock.read();
    for (int i = 0; i < kBatch; ++i)
      if (!endpoints.pair(op)) ++failed;
    const uint64_t t1 = clock.read();
    latency.record(clock.to_ns(t1 - t0) / kBatch);
    ++n;
  }
  if (failed != 0)
    throw std::runtime_error(std::to_string(failed) + " operation pairs did not go through");
  ctx.phase("counting system calls under seccomp");
  constexpr int kPairs = 10000;
  const SyscallCount count = count_syscalls(ctx, endpoints, op, kPairs);
  ctx.counter("pairs_per_batch", kBatch);
  ctx.counter("syscall_pairs", kPairs);
  ctx.counter("syscalls", static_cast<double>(count.calls));
  ctx.counter("syscalls_per_op", static_cast<double>(count.calls) / (2.0 * kPairs));
  if (count.failed != 0)
    ctx.note(std::to_string(count.failed) + " pairs failed under seccomp (a trapped call?)");
}

std::vector<Scenario> cost_scenarios() {
  std::vector<Scenario> list;
  for (Op op : {Op::sampling, Op::queuing, Op::ring}) {
    Scenario s;
    s.name = std::string("partition/ports_cost:op=") + op_name(op);
    s.group = "partition";
    switch (op) {
      case Op::sampling:
        s.title = "sampling port write + read (64 B)";
        break;
      case Op::queuing:
        s.title = "queuing port send + receive (64 B, no wait)";
        break;
      case Op::ring:
        s.title = "Ring try_push + try_pop (64 B)";
        break;
    }
    s.description =
        "one thread, no scheduler, one port memory (memfd) mapped twice (source and "
        "destination) or one Ring of 64 slots: one pair (write+read, send+receive with timeout "
        "0, try_push+try_pop) of 64-byte messages, the mean of a batch of 64 pairs timed with "
        "the interval clock. syscalls_per_op: a forked child runs 10000 pairs with every system "
        "call trapped by seccomp and counted (no waiter: expected 0).";
    s.params = {{"op", op_name(op)}};
    s.clock = IntervalClock::get().kind();
    s.budget_s = 0.05;
    s.samples = 20000;
    s.in_default_suite = true;
    s.run = [op](Context& ctx) { run_cost(ctx, op); };
    list.push_back(std::move(s));
  }
  return list;
}

const Registrar kLatency{latency_scenarios()};
const Registrar kCost{cost_scenarios()};

const RatioRegistrar kPortRatios{{
    {.name = "queuing port / Ring (send+receive vs push+pop, p50)",
     .numerator = "partition/ports_cost:op=queuing",
     .denominator = "partition/ports_cost:op=ring",
     .statistic = "p50",
     .meaning = "what a queuing port costs beyond the Ring it resembles (issue 35's goal: <= 2x)",
     .numerator_words = "the queuing port",
     .denominator_words = "Ring"},
    {.name = "queuing port / pipe, W window -> R window (p50, same run)",
     .numerator = "partition/ports:kind=queuing",
     .denominator = "partition/ports:kind=queuing",
     .statistic = "p50",
     .metric = "pipe",
     .numerator_metric = "queuing",
     .meaning = "a queuing port against a pipe between the same two partitions, one run",
     .numerator_words = "the queuing port",
     .denominator_words = "a pipe"},
    {.name = "queuing port / UNIX socket, W window -> R window (p50, same run)",
     .numerator = "partition/ports:kind=queuing",
     .denominator = "partition/ports:kind=queuing",
     .statistic = "p50",
     .metric = "unix",
     .numerator_metric = "queuing",
     .meaning = "a queuing port against a UNIX datagram socket between the same two partitions",
     .numerator_words = "the queuing port",
     .denominator_words = "a UNIX socket"},
}};

}  // namespace
}  // namespace doorbell::lab
