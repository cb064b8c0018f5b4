// Partition ports: ARINC 653 sampling and queuing ports between partition
// processes, over one shared memory the scheduler makes.
//
// Channels (Schedule::channels, the schedule file's [[channel]] tables) go
// from one source port to one or more destination ports, each named
// "PARTITION.PORT".
//   sampling  the latest message (at most message_size bytes). A read
//             returns it with a validity flag: its age <= refresh period.
//             Every destination reads the same slots.
//   queuing   a FIFO of at most depth messages of at most message_size
//             bytes, one ring per destination. A send to a full ring is
//             refused (PortStatus::full) and counted on that ring
//             (QueuingPort::overflows()); never silent.
//
// Memory: the scheduler makes ONE memfd (memfd_create, sealed against
// resizing) holding every port, before the partitions start. A partition
// inherits it (only partitions do: the scheduler's copy is close-on-exec)
// and finds it through the environment: DOORBELL_PORTS_FD=<fd> and
// DOORBELL_PARTITION=<its name> (Ports::from_environment(); a partition
// given as an entry function finds the same through process globals set in
// its child). No file exists anywhere (nothing in /dev/shm): when the last
// process holding the memfd or a mapping of it ends -- any way, SIGKILL
// included -- the kernel frees it. Nothing is left behind.
//
// Crash safety (a partition killed at any instruction):
//   sampling  two versioned slots per channel. The writer fills the slot
//             that is not published (its sequence word odd while it
//             writes), then publishes index and sequence with ONE release
//             store. A writer killed before that store leaves the previous
//             message published and intact; readers check the slot's
//             sequence before and after copying and retry (bounded) when
//             the writer reused the slot meanwhile. No lock anywhere.
//   queuing   a single-producer single-consumer ring per destination: the
//             sender writes the slot, then advances the tail with a release
//             store; the receiver copies, then advances the head. A sender
//             killed mid-write leaves nothing visible; a receiver killed
//             mid-read leaves the message to be read again (at least once).
// Nothing is lost across a suspension: a suspended reader finds up to depth
// messages waiting, in order.
//
// Waiting: receive() with a timeout sleeps on a Bell (bell.h) in the ring;
// send() rings it: one atomic operation and no system call when no receiver
// waits. A receiver killed while asleep stays counted in the Bell (bell.h,
// "Dead waiters"): every later send() to that ring then makes one futile
// FUTEX_WAKE, until the schedule restarts.
//
// Threads: one thread per port end at a time (single producer, single
// consumer); different ports are independent.
#pragma once

#include <sys/types.h>

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "doorbell/partition.h"

namespace doorbell::partition {

inline constexpr uint32_t kMaxMessageSize = 64 * 1024;
inline constexpr uint32_t kMaxQueueDepth = 65536;
inline constexpr std::size_t kMaxChannels = 1024;
inline constexpr std::size_t kMaxDestinations = 64;  // per channel
inline constexpr uint64_t kMaxPortMemory = 256ull << 20;

enum class PortStatus {
  ok,
  empty,            // sampling: nothing written yet; queuing: no message (no wait)
  timed_out,        // queuing: no message within the timeout
  full,             // queuing: a destination was full; counted there
  too_large,        // the message is larger than message_size
  wrong_direction,  // write/send on a destination, read/receive on a source
  busy,             // sampling: the writer rewrote the slot on every retry
};
const char* port_status_name(PortStatus status) noexcept;

// The bytes the port memory of these (valid) channels takes.
uint64_t port_memory_size(const std::vector<ChannelSpec>& channels);

// Makes the port memory for valid channels: a memfd (close-on-exec, sealed),
// laid out and zeroed. Throws std::system_error. The scheduler calls it.
int create_port_memory(const std::vector<ChannelSpec>& channels);

class Ports;

struct SamplingRead {
  PortStatus status = PortStatus::empty;
  std::size_t size = 0;   // bytes copied
  bool valid = false;     // age_ns <= refresh period
  int64_t age_ns = 0;     // now - write time (CLOCK_MONOTONIC)
  uint64_t sequence = 0;  // 1 for the first message written, then +1
};

class SamplingPort {
 public:
  const std::string& name() const noexcept { return name_; }
  bool is_source() const noexcept { return source_; }
  uint32_t message_size() const noexcept { return message_size_; }
  int64_t refresh_ns() const noexcept { return refresh_ns_; }
  // Source only. No system call but clock_gettime (vDSO).
  PortStatus write(std::span<const std::byte> message) noexcept;
  // Destination only. Copies min(size, buffer) bytes.
  SamplingRead read(std::span<std::byte> buffer) noexcept;

 private:
  friend class Ports;
  std::string name_;
  bool source_ = false;
  uint32_t message_size_ = 0;
  int64_t refresh_ns_ = 0;
  unsigned char* channel_ = nullptr;
};

struct QueuingReceive {
  PortStatus status = PortStatus::empty;
  std::size_t size = 0;  // the message's size (copied: min(size, buffer))
};

class QueuingPort {
 public:
  const std::string& name() const noexcept { return name_; }
  bool is_source() const noexcept { return source_; }
  uint32_t message_size() const noexcept { return message_size_; }
  uint32_t depth() const noexcept { return depth_; }
  // Source only: appends to every destination's ring; full on any
  // destination that has no room (the others get it), counted there.
  PortStatus send(std::span<const std::byte> message) noexcept;
  // Destination only. timeout 0: do not wait; nullopt: wait for ever.
  QueuingReceive receive(
      std::span<std::byte> buffer,
      std::optional<std::chrono::nanoseconds> timeout = std::chrono::nanoseconds(0)) noexcept;
  // Messages waiting (destination: its ring; source: the fullest ring).
  uint32_t pending() const noexcept;
  // Sends refused because the ring was full (destination: its ring; source:
  // the sum over its destinations).
  uint64_t overflows() const noexcept;

 private:
  friend class Ports;
  std::string name_;
  bool source_ = false;
  uint32_t message_size_ = 0;
  uint32_t depth_ = 0;
  std::vector<unsigned char*> rings_;  // source: every destination's; destination: its own
};

// The ports of one partition in the port memory.
class Ports {
 public:
  // Maps the memory of `fd` (a create_port_memory() memfd or an inherited
  // copy) for `partition`; sets FD_CLOEXEC on fd (a program the partition
  // runs does not inherit it). Throws std::system_error, or
  // std::invalid_argument when fd holds no port memory.
  Ports(int fd, std::string partition);
  // From DOORBELL_PORTS_FD and DOORBELL_PARTITION (or an entry partition's
  // inherited globals). Throws std::runtime_error when neither is there.
  static Ports from_environment();
  ~Ports();
  Ports(Ports&& other) noexcept;
  Ports& operator=(Ports&&) = delete;
  Ports(const Ports&) = delete;

  const std::string& partition() const noexcept { return partition_; }
  // The port PORT of this partition ("PARTITION.PORT" in the schedule).
  // Throws std::invalid_argument when it has no such port of that kind, or
  // when its entry in the table is not one the scheduler could have written
  // (every partition maps the table writable: a stray write in one must not
  // make another's port reach outside the memory).
  SamplingPort sampling(std::string_view port) const;
  QueuingPort queuing(std::string_view port) const;

 private:
  std::string partition_;
  void* base_ = nullptr;
  std::size_t size_ = 0;
  uint32_t ports_ = 0;  // entries in the table, as checked when mapped
};

namespace testing {
// Called by SamplingPort::write between the slot's write and its publish,
// and by QueuingPort::send between the slot's write and the tail's advance
// (null: nothing). For crash tests: the hook may raise(SIGSTOP) so that a
// test can SIGKILL the writer there. Process-wide.
void set_before_publish_hook(void (*hook)()) noexcept;
}  // namespace testing

namespace inherited {
// Set in an entry partition's child by the scheduler (after fork: plain
// stores), read by Ports::from_environment().
extern int ports_fd;
extern const char* partition;
}  // namespace inherited

}  // namespace doorbell::partition

// The C-callable subset (a partition need not be C++): partition_ports_c.h.
#include "doorbell/partition_ports_c.h"
