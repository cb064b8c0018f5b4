// Partition ports (include/doorbell/partition_ports.h): each kind within one
// process, then across real processes: forked children that inherit the
// memfd, and partitions of a real Scheduler run.
#include "doorbell/partition_ports.h"

#include <fcntl.h>
#include <signal.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <cstring>
#include <string>
#include <system_error>
#include <thread>
#include <vector>

#include "gtest/gtest.h"
#include "sys/fault.h"

namespace dp = doorbell::partition;
using namespace std::chrono_literals;

namespace {

dp::ChannelSpec sampling(std::string name, std::string from, std::vector<std::string> to,
                         uint32_t size, int64_t refresh_ns) {
  dp::ChannelSpec c;
  c.name = std::move(name);
  c.kind = dp::PortKind::sampling;
  c.source = std::move(from);
  c.destinations = std::move(to);
  c.message_size = size;
  c.refresh_ns = refresh_ns;
  return c;
}

dp::ChannelSpec queuing(std::string name, std::string from, std::vector<std::string> to,
                        uint32_t size, uint32_t depth) {
  dp::ChannelSpec c;
  c.name = std::move(name);
  c.kind = dp::PortKind::queuing;
  c.source = std::move(from);
  c.destinations = std::move(to);
  c.message_size = size;
  c.depth = depth;
  return c;
}

std::span<const std::byte> bytes(const std::string& s) {
  return std::as_bytes(std::span(s.data(), s.size()));
}

struct Memory {
  explicit Memory(const std::vector<dp::ChannelSpec>& channels)
      : fd(dp::create_port_memory(channels)) {}
  ~Memory() { ::close(fd); }
  int fd;
};

std::string text(const std::vector<std::byte>& buffer, std::size_t n) {
  return std::string(reinterpret_cast<const char*>(buffer.data()), n);
}

// Waits (bounded) for a forked child to stop or exit; returns the status.
int wait_child(pid_t pid, int options) {
  int status = 0;
  for (int i = 0; i < 1000; ++i) {
    const pid_t got = ::waitpid(pid, &status, options | WNOHANG);
    if (got == pid) return status;
    std::this_thread::sleep_for(10ms);
  }
  ::kill(pid, SIGKILL);
  ::waitpid(pid, &status, 0);
  ADD_FAILURE() << "child " << pid << " did not stop or exit within 10 s";
  return -1;
}

}  // namespace

TEST(PartitionPorts, SamplingKeepsTheLatestMessageAndEveryDestinationReadsIt) {
  Memory m({sampling("tm", "A.out", {"B.in", "C.in"}, 32, 1'000'000'000)});
  dp::Ports a(m.fd, "A"), b(m.fd, "B"), c(m.fd, "C");
  auto out = a.sampling("out");
  auto in_b = b.sampling("in");
  auto in_c = c.sampling("in");
  std::vector<std::byte> buffer(32);
  EXPECT_EQ(in_b.read(buffer).status, dp::PortStatus::empty);
  ASSERT_EQ(out.write(bytes("first")), dp::PortStatus::ok);
  ASSERT_EQ(out.write(bytes("second")), dp::PortStatus::ok);
  for (auto* in : {&in_b, &in_c}) {
    const dp::SamplingRead r = in->read(buffer);
    ASSERT_EQ(r.status, dp::PortStatus::ok);
    EXPECT_EQ(text(buffer, r.size), "second");
    EXPECT_EQ(r.sequence, 2u);
    EXPECT_TRUE(r.valid);
  }
  EXPECT_EQ(out.write(bytes(std::string(33, 'x'))), dp::PortStatus::too_large);
  EXPECT_EQ(in_b.write(bytes("x")), dp::PortStatus::wrong_direction);
  EXPECT_EQ(out.read(buffer).status, dp::PortStatus::wrong_direction);
  EXPECT_THROW(a.queuing("out"), std::invalid_argument);
  EXPECT_THROW(a.sampling("nope"), std::invalid_argument);
}

TEST(PartitionPorts, SamplingValidityExpiresAfterTheRefreshPeriod) {
  Memory m({sampling("tm", "A.out", {"B.in"}, 8, 2'000'000)});  // 2 ms
  dp::Ports a(m.fd, "A"), b(m.fd, "B");
  auto out = a.sampling("out");
  auto in = b.sampling("in");
  std::vector<std::byte> buffer(8);
  ASSERT_EQ(out.write(bytes("v")), dp::PortStatus::ok);
  std::this_thread::sleep_for(10ms);
  const dp::SamplingRead r = in.read(buffer);
  ASSERT_EQ(r.status, dp::PortStatus::ok);
  EXPECT_FALSE(r.valid) << "age " << r.age_ns << " ns, refresh 2 ms";
  EXPECT_GT(r.age_ns, 2'000'000);
  ASSERT_EQ(out.write(bytes("w")), dp::PortStatus::ok);
  EXPECT_EQ(in.read(buffer).status, dp::PortStatus::ok);  // (validity of a fresh one
  // depends on scheduling; the expiry above is what is asserted)
}

TEST(PartitionPorts, QueuingIsFifoAndOverflowIsRefusedAndCounted) {
  Memory m({queuing("cmd", "A.out", {"B.in", "C.in"}, 16, 4)});
  dp::Ports a(m.fd, "A"), b(m.fd, "B"), c(m.fd, "C");
  auto out = a.queuing("out");
  auto in_b = b.queuing("in");
  auto in_c = c.queuing("in");
  for (int i = 0; i < 4; ++i)
    ASSERT_EQ(out.send(bytes("m" + std::to_string(i))), dp::PortStatus::ok);
  EXPECT_EQ(out.send(bytes("m4")), dp::PortStatus::full);
  EXPECT_EQ(out.overflows(), 2u);  // one per destination
  EXPECT_EQ(in_b.overflows(), 1u);
  std::vector<std::byte> buffer(16);
  for (int i = 0; i < 4; ++i) {
    const dp::QueuingReceive r = in_b.receive(buffer);
    ASSERT_EQ(r.status, dp::PortStatus::ok);
    EXPECT_EQ(text(buffer, r.size), "m" + std::to_string(i));
  }
  EXPECT_EQ(in_b.receive(buffer).status, dp::PortStatus::empty);
  EXPECT_EQ(in_b.receive(buffer, 5ms).status, dp::PortStatus::timed_out);
  // B has room again, C does not: B gets it, the send says full (C's count).
  EXPECT_EQ(out.send(bytes("m5")), dp::PortStatus::full);
  EXPECT_EQ(in_c.overflows(), 2u);
  EXPECT_EQ(in_b.pending(), 1u);
  EXPECT_EQ(in_c.pending(), 4u);
  EXPECT_EQ(out.send(bytes(std::string(17, 'x'))), dp::PortStatus::too_large);
  EXPECT_EQ(in_b.send(bytes("x")), dp::PortStatus::wrong_direction);
}

TEST(PartitionPorts, SendMakesNoSystemCallWithoutAWaiter) {
  Memory m({queuing("cmd", "A.out", {"B.in"}, 16, 64)});
  dp::Ports a(m.fd, "A"), b(m.fd, "B");
  auto out = a.queuing("out");
  auto in = b.queuing("in");
  std::vector<std::byte> buffer(16);
  namespace fault = doorbell::sys::fault;
  fault::count_calls();
  for (int i = 0; i < 32; ++i) ASSERT_EQ(out.send(bytes("x")), dp::PortStatus::ok);
  for (int i = 0; i < 32; ++i) ASSERT_EQ(in.receive(buffer).status, dp::PortStatus::ok);
  uint32_t calls = 0;
  for (std::size_t k = 0; k < fault::kCalls; ++k) calls += fault::calls(fault::Call(k));
  fault::disarm();
  EXPECT_EQ(calls, 0u) << "send/receive without a waiter made system calls";
}

// The port memory's size is sealed: a partition that shrank it would make
// every other partition's next access a SIGBUS. A seal that fails is an
// error, and nothing is left open.
TEST(PartitionPorts, ThePortMemoryIsSealedAndAFailedSealIsAnError) {
  {
    Memory m({queuing("cmd", "A.out", {"B.in"}, 16, 4)});
    const int seals = ::fcntl(m.fd, F_GET_SEALS);
    EXPECT_EQ(seals, F_SEAL_SHRINK | F_SEAL_GROW | F_SEAL_SEAL);
    EXPECT_NE(::ftruncate(m.fd, 0), 0) << "the port memory could be shrunk";
  }
  namespace fault = doorbell::sys::fault;
  const auto memfds_open = [] {
    int n = 0;
    for (int fd = 0; fd < 1024; ++fd) {
      char link[64], target[256];
      std::snprintf(link, sizeof link, "/proc/self/fd/%d", fd);
      const ssize_t len = ::readlink(link, target, sizeof target - 1);
      if (len > 0 && std::string(target, static_cast<std::size_t>(len)).find("doorbell-ports") !=
                         std::string::npos)
        ++n;
    }
    return n;
  };
  const int before = memfds_open();
  fault::fail_nth_call(fault::Call::add_seals, 1, EBUSY);
  int fd = -1;
  try {
    fd = dp::create_port_memory({queuing("cmd", "A.out", {"B.in"}, 16, 4)});
  } catch (const std::system_error& e) {
    EXPECT_EQ(e.code().value(), EBUSY) << e.what();
    EXPECT_NE(std::string(e.what()).find("port memory"), std::string::npos) << e.what();
  }
  fault::disarm();
  if (fd >= 0) ::close(fd);
  EXPECT_LT(fd, 0) << "a port memory whose seal failed was handed out";
  EXPECT_EQ(memfds_open(), before) << "a port memory was left open";
}

// Every partition maps the whole port memory writable, the table of ports
// included: a partition (a defect, a stray write) can corrupt another's entry
// before that one opens its port. An open then refuses the entry
// (std::invalid_argument); it never hands out a port whose operations would
// reach outside the memory or divide by a zero depth. A generated battery:
// each field of each kind's entries, at each end, set to values out of
// bounds. (The layout below is the one partition_ports.cpp writes.)
struct EntryLayout {
  char partition[72];
  char port[72];
  uint8_t kind, source;
  uint16_t reserved0;
  uint32_t message_size, depth, rings;
  int64_t refresh_ns;
  uint64_t offset, ring_stride;
};
static_assert(sizeof(EntryLayout) == 184);

TEST(PartitionPorts, ACorruptedPortTableIsRefusedAtOpen) {
  Memory m({sampling("tm", "A.tm", {"B.tm", "C.tm"}, 64, 1'000'000),
            queuing("cmd", "A.out", {"B.in", "C.in"}, 32, 8)});
  struct stat st {};
  ASSERT_EQ(::fstat(m.fd, &st), 0);
  const auto size = static_cast<std::size_t>(st.st_size);
  void* map = ::mmap(nullptr, size, PROT_READ | PROT_WRITE, MAP_SHARED, m.fd, 0);
  ASSERT_NE(map, MAP_FAILED);
  auto* entries = reinterpret_cast<EntryLayout*>(static_cast<unsigned char*>(map) + 64);
  const uint32_t ports = *reinterpret_cast<uint32_t*>(static_cast<unsigned char*>(map) + 12);
  ASSERT_EQ(ports, 6u);
  const uint64_t huge = uint64_t(1) << 62;
  struct Field {
    const char* name;
    std::vector<uint64_t> bad;
    void (*set)(EntryLayout&, uint64_t);
  };
  const std::vector<Field> fields = {
      {"message_size",
       {0, dp::kMaxMessageSize + 1ull, 0xffffffffull},
       [](EntryLayout& e, uint64_t v) { e.message_size = uint32_t(v); }},
      {"depth",
       {0, dp::kMaxQueueDepth + 1ull, 0xffffffffull},
       [](EntryLayout& e, uint64_t v) { e.depth = uint32_t(v); }},
      {"rings",
       {0, dp::kMaxDestinations + 1ull, 0xffffffffull},
       [](EntryLayout& e, uint64_t v) { e.rings = uint32_t(v); }},
      {"offset", {0, size - 8, size, huge}, [](EntryLayout& e, uint64_t v) { e.offset = v; }},
      {"ring_stride", {0, 8, huge}, [](EntryLayout& e, uint64_t v) { e.ring_stride = v; }},
  };
  int cases = 0;
  for (uint32_t i = 0; i < ports; ++i) {
    const EntryLayout original = entries[i];
    const std::string partition(original.partition), port(original.port);
    const bool is_sampling = original.kind == static_cast<uint8_t>(dp::PortKind::sampling);
    for (const Field& f : fields) {
      // A sampling entry has no depth, rings nor stride to misuse.
      if (is_sampling && (std::string(f.name) == "depth" || std::string(f.name) == "rings" ||
                          std::string(f.name) == "ring_stride"))
        continue;
      // A source with one destination (none here) would use no stride.
      for (const uint64_t v : f.bad) {
        SCOPED_TRACE(partition + "." + port + " " + f.name + " = " + std::to_string(v));
        entries[i] = original;
        f.set(entries[i], v);
        dp::Ports ports_of(m.fd, partition);
        if (is_sampling)
          EXPECT_THROW(ports_of.sampling(port), std::invalid_argument);
        else
          EXPECT_THROW(ports_of.queuing(port), std::invalid_argument);
        ++cases;
      }
    }
    entries[i] = original;
    // Whole again: it opens.
    dp::Ports ports_of(m.fd, partition);
    if (is_sampling)
      EXPECT_NO_THROW(ports_of.sampling(port));
    else
      EXPECT_NO_THROW(ports_of.queuing(port));
  }
  EXPECT_GT(cases, 50);
  ::munmap(map, size);
}

TEST(PartitionPorts, ReceiveWithATimeoutWakesOnASendFromAnotherProcess) {
  Memory m({queuing("cmd", "A.out", {"B.in"}, 16, 4)});
  dp::Ports b(m.fd, "B");
  auto in = b.queuing("in");
  const pid_t child = ::fork();
  ASSERT_GE(child, 0);
  if (child == 0) {
    dp::Ports a(m.fd, "A");
    std::this_thread::sleep_for(20ms);
    ::_exit(a.queuing("out").send(bytes("late")) == dp::PortStatus::ok ? 0 : 1);
  }
  std::vector<std::byte> buffer(16);
  const dp::QueuingReceive r = in.receive(buffer, 10s);
  ASSERT_EQ(r.status, dp::PortStatus::ok);
  EXPECT_EQ(text(buffer, r.size), "late");
  const int status = wait_child(child, 0);
  EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0);
}

namespace {
void stop_here() {
  ::raise(SIGSTOP);
}
}  // namespace

TEST(PartitionPorts, AWriterKilledBeforeThePublishLeavesThePreviousMessage) {
  Memory m({sampling("tm", "A.out", {"B.in"}, 4096, 1'000'000'000),
            queuing("cmd", "A.q", {"B.q"}, 4096, 4)});
  dp::Ports b(m.fd, "B");
  auto in = b.sampling("in");
  auto q = b.queuing("q");
  {
    dp::Ports a(m.fd, "A");
    ASSERT_EQ(a.sampling("out").write(bytes(std::string(4096, 'o'))), dp::PortStatus::ok);
    ASSERT_EQ(a.queuing("q").send(bytes("kept")), dp::PortStatus::ok);
  }
  for (int kind = 0; kind < 2; ++kind) {
    const pid_t child = ::fork();
    ASSERT_GE(child, 0);
    if (child == 0) {
      dp::Ports a(m.fd, "A");
      dp::testing::set_before_publish_hook(stop_here);
      if (kind == 0)
        (void)a.sampling("out").write(bytes(std::string(4096, 'n')));
      else
        (void)a.queuing("q").send(bytes("torn"));
      ::_exit(3);  // never: killed at the hook
    }
    const int status = wait_child(child, WUNTRACED);
    ASSERT_TRUE(WIFSTOPPED(status)) << "the writer did not stop at the hook";
    ::kill(child, SIGKILL);
    ::waitpid(child, nullptr, 0);
  }
  std::vector<std::byte> buffer(4096);
  const dp::SamplingRead r = in.read(buffer);
  ASSERT_EQ(r.status, dp::PortStatus::ok);
  EXPECT_EQ(r.sequence, 1u);
  EXPECT_EQ(text(buffer, r.size), std::string(4096, 'o'));
  EXPECT_EQ(q.pending(), 1u);
  const dp::QueuingReceive got = q.receive(buffer);
  EXPECT_EQ(text(buffer, got.size), "kept");
  EXPECT_EQ(q.receive(buffer).status, dp::PortStatus::empty);
  // The port is not locked: the next writer publishes as usual.
  dp::Ports a(m.fd, "A");
  ASSERT_EQ(a.sampling("out").write(bytes("next")), dp::PortStatus::ok);
  const dp::SamplingRead next = in.read(buffer);
  EXPECT_EQ(text(buffer, next.size), "next");
  EXPECT_EQ(next.sequence, 2u);
}

TEST(PartitionPorts, ASuspendedReaderMissesNothingUpToTheDepth) {
  Memory m({queuing("cmd", "A.out", {"B.in"}, 16, 100)});
  int ready[2];
  ASSERT_EQ(::pipe(ready), 0);
  const pid_t reader = ::fork();
  ASSERT_GE(reader, 0);
  if (reader == 0) {
    dp::Ports b(m.fd, "B");
    auto in = b.queuing("in");
    char c = 1;
    (void)!::write(ready[1], &c, 1);
    ::raise(SIGSTOP);  // suspended while the writer sends
    std::vector<std::byte> buffer(16);
    for (int i = 0; i < 100; ++i) {
      const dp::QueuingReceive r = in.receive(buffer, 5s);
      if (r.status != dp::PortStatus::ok || text(buffer, r.size) != std::to_string(i)) ::_exit(10);
    }
    ::_exit(in.receive(buffer).status == dp::PortStatus::empty ? 0 : 11);
  }
  char c;
  ASSERT_EQ(::read(ready[0], &c, 1), 1);
  ASSERT_TRUE(WIFSTOPPED(wait_child(reader, WUNTRACED)));
  dp::Ports a(m.fd, "A");
  auto out = a.queuing("out");
  for (int i = 0; i < 100; ++i) ASSERT_EQ(out.send(bytes(std::to_string(i))), dp::PortStatus::ok);
  EXPECT_EQ(out.send(bytes("101")), dp::PortStatus::full);
  ::kill(reader, SIGCONT);
  const int status = wait_child(reader, 0);
  EXPECT_TRUE(WIFEXITED(status)) << status;
  EXPECT_EQ(WEXITSTATUS(status), 0) << "10: a message lost or out of order; 11: one too many";
  EXPECT_EQ(out.overflows(), 1u);
  ::close(ready[0]);
  ::close(ready[1]);
}

TEST(PartitionPorts, TheMemfdIsNotInheritedByUnrelatedPrograms) {
  Memory m({sampling("tm", "A.out", {"B.in"}, 8, 1'000'000)});
  EXPECT_EQ(::fcntl(m.fd, F_GETFD) & FD_CLOEXEC, FD_CLOEXEC);
  const std::string check = "test ! -e /proc/self/fd/" + std::to_string(m.fd);
  const pid_t child = ::fork();
  ASSERT_GE(child, 0);
  if (child == 0) {
    ::execl("/bin/sh", "sh", "-c", check.c_str(), static_cast<char*>(nullptr));
    ::_exit(127);
  }
  const int status = wait_child(child, 0);
  EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0) << "the memfd leaked into exec";
  // Nothing in /dev/shm: the memory has no name anywhere.
  char link[256] = {};
  ASSERT_GT(::readlink(("/proc/self/fd/" + std::to_string(m.fd)).c_str(), link, sizeof link - 1),
            0);
  EXPECT_EQ(std::string(link).rfind("/memfd:doorbell-ports", 0), 0u) << link;
}

// Two partitions of a real run: A sends one command and writes telemetry in
// each of its windows; B reads them in its windows (suspended in between).
TEST(PartitionPorts, PartitionsOfARunExchangeMessagesThroughBothKinds) {
  // Stale values from an outer run (this process a partition itself) must
  // not win over what the scheduler hands its own partitions.
  ::setenv("DOORBELL_PORTS_FD", "0", 1);
  ::setenv("DOORBELL_PARTITION", "outer", 1);
  dp::Schedule s;
  s.major_frame_ns = 20'000'000;
  s.channels.push_back(sampling("tm", "A.tm", {"B.tm"}, 64, 1'000'000'000));
  s.channels.push_back(queuing("cmd", "A.cmd", {"B.cmd"}, 64, 64));
  dp::PartitionSpec a;
  a.name = "A";
  a.entry = [] {
    dp::Ports ports = dp::Ports::from_environment();
    auto tm = ports.sampling("tm");
    auto cmd = ports.queuing("cmd");
    for (int i = 0; i < 20; ++i) {
      if (cmd.send(bytes(std::to_string(i))) != dp::PortStatus::ok) return 20;
      if (tm.write(bytes("t" + std::to_string(i))) != dp::PortStatus::ok) return 21;
      std::this_thread::sleep_for(2ms);
    }
    return 0;
  };
  dp::PartitionSpec b;
  b.name = "B";
  b.entry = [] {
    dp::Ports ports = dp::Ports::from_environment();
    auto tm = ports.sampling("tm");
    auto cmd = ports.queuing("cmd");
    std::vector<std::byte> buffer(64);
    for (int i = 0; i < 20; ++i) {
      const dp::QueuingReceive r = cmd.receive(buffer, 10s);
      if (r.status != dp::PortStatus::ok) return 30;
      if (text(buffer, r.size) != std::to_string(i)) return 31;
    }
    const dp::SamplingRead t = tm.read(buffer);
    if (t.status != dp::PortStatus::ok || t.sequence != 20) return 32;
    return 0;
  };
  s.partitions = {a, b};
  s.windows = {{"A", 0, 10'000'000}, {"B", 10'000'000, 10'000'000}};
  dp::Scheduler scheduler(std::move(s));
  dp::RunOptions options;
  options.frames = 60;  // bounded: both finish long before
  options.fifo_priority = 0;
  const dp::RunReport report = scheduler.run(options);
  ::unsetenv("DOORBELL_PORTS_FD");
  ::unsetenv("DOORBELL_PARTITION");
  ASSERT_EQ(report.exits.size(), 2u) << "a partition did not finish within 60 frames";
  for (const auto& e : report.exits) EXPECT_EQ(e.reason, "exited 0") << "partition " << e.partition;
}

#ifdef DOORBELL_PORTS_C_PROG
// The C subset from a program written in C (tests/partition_ports_c_test.c,
// compiled as C): partition "c" of a real run, beside a C++ entry partition.
// Each side checks what it receives; "exited 0" on both is the pass.
TEST(PartitionPorts, ACPartitionTalksToACppPartition) {
  dp::Schedule s;
  s.major_frame_ns = 20'000'000;
  s.channels.push_back(sampling("tm", "cpp.tm", {"c.tm"}, 64, 10'000'000'000));
  s.channels.push_back(queuing("cmd", "cpp.cmd", {"c.cmd"}, 64, 8));
  s.channels.push_back(sampling("ctm", "c.ctm", {"cpp.ctm"}, 64, 10'000'000'000));
  s.channels.push_back(queuing("ack", "c.ack", {"cpp.ack"}, 16, 8));
  dp::PartitionSpec cpp;
  cpp.name = "cpp";
  cpp.entry = [] {
    dp::Ports ports = dp::Ports::from_environment();
    auto tm = ports.sampling("tm");
    auto cmd = ports.queuing("cmd");
    auto ctm = ports.sampling("ctm");
    auto ack = ports.queuing("ack");
    if (tm.write(bytes("telemetry 42")) != dp::PortStatus::ok) return 20;
    if (cmd.send(bytes("command 7")) != dp::PortStatus::ok) return 21;
    std::vector<std::byte> buffer(64);
    const dp::QueuingReceive r = ack.receive(buffer, 10s);  // waits for the C side's windows
    if (r.status != dp::PortStatus::ok) return 22;
    if (text(buffer, r.size) != "ack: command 7") return 23;
    const dp::SamplingRead t = ctm.read(buffer);
    if (t.status != dp::PortStatus::ok || !t.valid) return 24;
    if (text(buffer, t.size) != "from c") return 25;
    return 0;
  };
  dp::PartitionSpec c;
  c.name = "c";
  c.command = {DOORBELL_PORTS_C_PROG};
  s.partitions = {cpp, c};
  s.windows = {{"cpp", 0, 10'000'000}, {"c", 10'000'000, 10'000'000}};
  dp::Scheduler scheduler(std::move(s));
  dp::RunOptions options;
  options.frames = 60;  // bounded (1.2 s): both finish in a few frames
  options.fifo_priority = 0;
  const dp::RunReport report = scheduler.run(options);
  ASSERT_EQ(report.exits.size(), 2u) << "a partition did not finish within 60 frames";
  for (const auto& e : report.exits)
    EXPECT_EQ(e.reason, "exited 0")
        << "partition " << e.partition << " (the C one exits with the number of a failed check)";
}
#endif
