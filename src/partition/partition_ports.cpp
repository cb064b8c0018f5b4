// Partition ports (include/doorbell/partition_ports.h): the port memory's
// layout, the sampling slots' publish protocol and the queuing rings.
// The protocols are modelled in tests/models/ports_sampling.pml.
#include "doorbell/partition_ports.h"

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <map>
#include <memory>
#include <set>
#include <stdexcept>
#include <system_error>

#include "doorbell/bell.h"
#include "sys/error.h"
#include "sys/shared_memory.h"

namespace doorbell::partition {

namespace inherited {
int ports_fd = -1;
const char* partition = nullptr;
}  // namespace inherited

namespace {

constexpr uint64_t kMagic = 0x31'53'54'52'4f'50'42'44ull;  // "DBPORTS1"
constexpr uint32_t kVersion = 1;
constexpr std::size_t kNameBytes = 72;
constexpr int kSamplingRetries = 1000;

std::atomic<void (*)()> before_publish_hook{nullptr};

struct Header {
  uint64_t magic;
  uint32_t version;
  uint32_t ports;
  uint64_t total_size;
  uint64_t reserved[5];
};
static_assert(sizeof(Header) == 64);

struct PortEntry {
  char partition[kNameBytes];
  char port[kNameBytes];
  uint8_t kind;  // PortKind
  uint8_t source;
  uint16_t reserved0;
  uint32_t message_size;
  uint32_t depth;
  uint32_t rings;  // queuing source: destination rings, contiguous
  int64_t refresh_ns;
  uint64_t offset;       // sampling: the channel; queuing: the (first) ring
  uint64_t ring_stride;  // queuing: bytes per ring
};

constexpr uint64_t round_up(uint64_t n, uint64_t to) {
  return (n + to - 1) / to * to;
}

// Sampling channel: the published word, then two slots.
//   [0]  published: sequence << 1 | slot index (sequence 0: nothing yet)
//   slot i at 64 + i * stride: [0] sequence word (odd: being written;
//   2 * n: holds message n), [8] write time, [16] size, [64] data.
uint64_t sampling_slot_stride(uint32_t m) {
  return 64 + round_up(m, 64);
}
uint64_t sampling_size(uint32_t m) {
  return 64 + 2 * sampling_slot_stride(m);
}

// Queuing ring: [0] tail (sender), [64] head (receiver), [128] Bell,
// [136] overflows (sender), slots at 192: [0] size, [8] data.
constexpr uint64_t kRingSlots = 192;
uint64_t ring_slot_stride(uint32_t m) {
  return 8 + round_up(m, 8);
}
uint64_t ring_size(uint32_t m, uint32_t depth) {
  return round_up(kRingSlots + uint64_t(depth) * ring_slot_stride(m), 64);
}

template <class T>
std::atomic_ref<T> word(unsigned char* at) {
  return std::atomic_ref<T>(*reinterpret_cast<T*>(at));
}

int64_t now_ns() noexcept {
  timespec ts{};
  ::clock_gettime(CLOCK_MONOTONIC, &ts);
  return int64_t(ts.tv_sec) * 1'000'000'000 + ts.tv_nsec;
}

bool valid_name(std::string_view s) {
  if (s.empty() || s.size() > 64) return false;
  for (char c : s)
    if (!(std::isalnum(static_cast<unsigned char>(c)) || c == '_' || c == '-')) return false;
  return true;
}

// "PART.PORT" -> (PART, PORT); empty when malformed.
std::pair<std::string, std::string> split_port(const std::string& full) {
  const auto dot = full.find('.');
  if (dot == std::string::npos) return {};
  std::string part = full.substr(0, dot), port = full.substr(dot + 1);
  if (!valid_name(part) || !valid_name(port)) return {};
  return {part, port};
}

uint64_t channel_bytes(const ChannelSpec& c) {
  if (c.kind == PortKind::sampling) return sampling_size(c.message_size);
  return c.destinations.size() * ring_size(c.message_size, c.depth);
}

std::size_t port_count(const std::vector<ChannelSpec>& channels) {
  std::size_t n = 0;
  for (const auto& c : channels) n += 1 + c.destinations.size();
  return n;
}

uint64_t table_bytes(const std::vector<ChannelSpec>& channels) {
  return round_up(sizeof(Header) + port_count(channels) * sizeof(PortEntry), 64);
}

// Relaxed word-by-word copies for the sampling slots, which a writer may
// rewrite while a reader copies (the reader then sees the sequence change
// and discards its copy): no torn word is ever a data race.
void store_words(unsigned char* to, const std::byte* from, std::size_t n) noexcept {
  for (std::size_t i = 0; i < n; i += 8) {
    uint64_t w = 0;
    std::memcpy(&w, from + i, std::min<std::size_t>(8, n - i));
    word<uint64_t>(to + i).store(w, std::memory_order_relaxed);
  }
}
void load_words(std::byte* to, unsigned char* from, std::size_t n) noexcept {
  for (std::size_t i = 0; i < n; i += 8) {
    const uint64_t w = word<uint64_t>(from + i).load(std::memory_order_relaxed);
    std::memcpy(to + i, &w, std::min<std::size_t>(8, n - i));
  }
}

}  // namespace

const char* port_status_name(PortStatus status) noexcept {
  switch (status) {
    case PortStatus::ok:
      return "ok";
    case PortStatus::empty:
      return "empty";
    case PortStatus::timed_out:
      return "timed out";
    case PortStatus::full:
      return "full";
    case PortStatus::too_large:
      return "too large";
    case PortStatus::wrong_direction:
      return "wrong direction";
    case PortStatus::busy:
      return "busy";
  }
  return "?";
}

void validate_channels(const Schedule& schedule) {
  if (schedule.channels.empty()) return;
  if (schedule.channels.size() > kMaxChannels)
    throw ScheduleError(schedule.channels[kMaxChannels].line,
                        "more than " + std::to_string(kMaxChannels) + " channels");
  std::set<std::string> partitions;
  for (const auto& p : schedule.partitions) partitions.insert(p.name);
  std::set<std::string> names;
  std::map<std::string, int> ports;  // "PART.PORT" -> line
  uint64_t total = 0;
  for (const ChannelSpec& c : schedule.channels) {
    const std::string where = "channel '" + c.name + "'";
    if (!valid_name(c.name))
      throw ScheduleError(
          c.line, "channel name '" + c.name + "' must be 1 to 64 characters from [A-Za-z0-9_-]");
    if (!names.insert(c.name).second)
      throw ScheduleError(c.line, "channel '" + c.name + "' is defined twice");
    if (c.destinations.empty()) throw ScheduleError(c.line, where + " has no destinations");
    if (c.destinations.size() > kMaxDestinations)
      throw ScheduleError(
          c.line, where + " has more than " + std::to_string(kMaxDestinations) + " destinations");
    if (c.message_size == 0 || c.message_size > kMaxMessageSize)
      throw ScheduleError(c.line, where + ": message_size = " + std::to_string(c.message_size) +
                                      " is outside 1.." + std::to_string(kMaxMessageSize));
    if (c.kind == PortKind::queuing && (c.depth == 0 || c.depth > kMaxQueueDepth))
      throw ScheduleError(c.line, where + ": depth = " + std::to_string(c.depth) +
                                      " is outside 1.." + std::to_string(kMaxQueueDepth));
    if (c.kind == PortKind::sampling && c.refresh_ns <= 0)
      throw ScheduleError(c.line, where + ": refresh_ms must be longer than zero");
    std::vector<std::string> all{c.source};
    all.insert(all.end(), c.destinations.begin(), c.destinations.end());
    for (const std::string& full : all) {
      const auto [part, port] = split_port(full);
      if (part.empty())
        throw ScheduleError(c.line, where + ": port '" + full +
                                        "' must be PARTITION.PORT, each 1 to 64 characters "
                                        "from [A-Za-z0-9_-]");
      if (!partitions.count(part))
        throw ScheduleError(c.line,
                            where + ": port '" + full + "' names unknown partition '" + part + "'");
      const auto [it, fresh] = ports.emplace(full, c.line);
      if (!fresh)
        throw ScheduleError(c.line, where + ": port '" + full + "' is already used (line " +
                                        std::to_string(it->second) +
                                        "); a port belongs to one channel, as its source or "
                                        "one destination");
    }
    total += channel_bytes(c);
    if (total > kMaxPortMemory)
      throw ScheduleError(c.line, where + ": the ports need more than " +
                                      std::to_string(kMaxPortMemory >> 20) +
                                      " MiB of shared memory (message_size x depth x "
                                      "destinations)");
  }
}

uint64_t port_memory_size(const std::vector<ChannelSpec>& channels) {
  uint64_t total = table_bytes(channels);
  for (const auto& c : channels) total += channel_bytes(c);
  return total;
}

int create_port_memory(const std::vector<ChannelSpec>& channels) {
  const uint64_t size = port_memory_size(channels);
  sys::SharedMemory memory = sys::create_shared_memory(
      "doorbell-ports", size, MFD_CLOEXEC, "port memory",
      F_SEAL_SHRINK | F_SEAL_GROW | F_SEAL_SEAL);  // nobody may shrink it under another
  void* base = memory.base;
  auto* bytes = static_cast<unsigned char*>(base);
  auto* header = reinterpret_cast<Header*>(bytes);
  auto* entries = reinterpret_cast<PortEntry*>(bytes + sizeof(Header));
  uint64_t offset = table_bytes(channels);
  std::size_t n = 0;
  auto fill = [&](const std::string& full, const ChannelSpec& c, bool source, uint64_t at,
                  uint32_t rings) {
    const auto [part, port] = split_port(full);
    PortEntry& e = entries[n++];
    std::memcpy(e.partition, part.data(), part.size());
    std::memcpy(e.port, port.data(), port.size());
    e.kind = static_cast<uint8_t>(c.kind);
    e.source = source;
    e.message_size = c.message_size;
    e.depth = c.depth;
    e.rings = rings;
    e.refresh_ns = c.refresh_ns;
    e.offset = at;
    e.ring_stride = ring_size(c.message_size, c.depth);
  };
  for (const ChannelSpec& c : channels) {
    if (c.kind == PortKind::sampling) {
      fill(c.source, c, true, offset, 0);
      for (const auto& d : c.destinations) fill(d, c, false, offset, 0);
    } else {
      fill(c.source, c, true, offset, static_cast<uint32_t>(c.destinations.size()));
      for (std::size_t i = 0; i < c.destinations.size(); ++i)
        fill(c.destinations[i], c, false, offset + i * ring_size(c.message_size, c.depth), 1);
    }
    offset += channel_bytes(c);
  }
  header->version = kVersion;
  header->ports = static_cast<uint32_t>(n);
  header->total_size = size;
  header->magic = kMagic;
  ::munmap(base, size);
  return memory.fd.release();
}

Ports::Ports(int fd, std::string partition) : partition_(std::move(partition)) {
  struct stat st {};
  if (::fstat(fd, &st) != 0) sys::throw_errno("fstat port memory");
  if (st.st_size < static_cast<off_t>(sizeof(Header)))
    throw std::invalid_argument("descriptor " + std::to_string(fd) + " holds no port memory");
  size_ = static_cast<std::size_t>(st.st_size);
  base_ = ::mmap(nullptr, size_, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
  if (base_ == MAP_FAILED) {
    base_ = nullptr;
    sys::throw_errno("mmap port memory");
  }
  const auto* header = static_cast<const Header*>(base_);
  if (header->magic != kMagic || header->version != kVersion || header->total_size != size_ ||
      sizeof(Header) + uint64_t(header->ports) * sizeof(PortEntry) > size_) {
    ::munmap(base_, size_);
    base_ = nullptr;
    throw std::invalid_argument("descriptor " + std::to_string(fd) + " holds no port memory");
  }
  ports_ = header->ports;  // read once: a later write to the header changes nothing here
  ::fcntl(fd, F_SETFD, FD_CLOEXEC);
}

Ports Ports::from_environment() {
  // The scheduler's own hand-over in this process (an entry partition)
  // first: the environment may be an outer run's.
  if (inherited::ports_fd >= 0 && inherited::partition != nullptr)
    return Ports(inherited::ports_fd, inherited::partition);
  const char* fd_text = std::getenv("DOORBELL_PORTS_FD");
  const char* name = std::getenv("DOORBELL_PARTITION");
  if (fd_text != nullptr && name != nullptr) {
    char* end = nullptr;
    const long fd = std::strtol(fd_text, &end, 10);
    if (end != fd_text && *end == '\0' && fd >= 0 && fd <= 1 << 20)
      return Ports(static_cast<int>(fd), name);
    throw std::runtime_error(std::string("DOORBELL_PORTS_FD='") + fd_text +
                             "' is not a descriptor number");
  }
  throw std::runtime_error(
      "no port memory: DOORBELL_PORTS_FD and DOORBELL_PARTITION are not set (a partition of a "
      "schedule with [[channel]] tables gets them from the scheduler)");
}

Ports::~Ports() {
  if (base_ != nullptr) ::munmap(base_, size_);
}

Ports::Ports(Ports&& other) noexcept
    : partition_(std::move(other.partition_)),
      base_(other.base_),
      size_(other.size_),
      ports_(other.ports_) {
  other.base_ = nullptr;
}

namespace {
// The port's entry, copied out of the shared table (another partition may
// write the table while it is read: the copy is what is checked and used).
PortEntry find_port(void* base, uint32_t ports, const std::string& partition, std::string_view port,
                    PortKind kind) {
  const auto* entries =
      reinterpret_cast<const PortEntry*>(static_cast<const unsigned char*>(base) + sizeof(Header));
  for (uint32_t i = 0; i < ports; ++i) {
    PortEntry e;
    std::memcpy(&e, &entries[i], sizeof e);
    if (partition != std::string_view(e.partition, strnlen(e.partition, kNameBytes)) ||
        port != std::string_view(e.port, strnlen(e.port, kNameBytes)))
      continue;
    if (e.kind != static_cast<uint8_t>(kind))
      throw std::invalid_argument("port '" + partition + "." + std::string(port) + "' is a " +
                                  (e.kind == uint8_t(PortKind::sampling) ? "sampling" : "queuing") +
                                  " port");
    return e;
  }
  throw std::invalid_argument("partition '" + partition + "' has no port '" + std::string(port) +
                              "'");
}
}  // namespace

// Whether [offset, offset + bytes) lies in the channels' part of a memory of
// `size` bytes after a table of `ports` entries, 64-byte aligned (the words
// in it are atomics).
bool in_channels(uint64_t offset, uint64_t bytes, uint32_t ports, std::size_t size) {
  const uint64_t table = sizeof(Header) + uint64_t(ports) * sizeof(PortEntry);
  return offset % 64 == 0 && offset >= table && offset <= size && bytes <= size - offset;
}

[[noreturn]] void corrupted(const std::string& partition, std::string_view port, const char* why) {
  throw std::invalid_argument("port '" + partition + "." + std::string(port) +
                              "': its entry in the port table is corrupted (" + why +
                              "): another partition wrote over it?");
}

SamplingPort Ports::sampling(std::string_view port) const {
  const PortEntry e = find_port(base_, ports_, partition_, port, PortKind::sampling);
  if (e.message_size == 0 || e.message_size > kMaxMessageSize)
    corrupted(partition_, port, "message size");
  if (!in_channels(e.offset, sampling_size(e.message_size), ports_, size_))
    corrupted(partition_, port, "offset");
  SamplingPort p;
  p.name_ = std::string(port);
  p.source_ = e.source != 0;
  p.message_size_ = e.message_size;
  p.refresh_ns_ = e.refresh_ns;
  p.channel_ = static_cast<unsigned char*>(base_) + e.offset;
  return p;
}

QueuingPort Ports::queuing(std::string_view port) const {
  const PortEntry e = find_port(base_, ports_, partition_, port, PortKind::queuing);
  if (e.message_size == 0 || e.message_size > kMaxMessageSize)
    corrupted(partition_, port, "message size");
  if (e.depth == 0 || e.depth > kMaxQueueDepth) corrupted(partition_, port, "depth");
  if (e.rings == 0 || e.rings > kMaxDestinations || (e.source == 0 && e.rings != 1))
    corrupted(partition_, port, "rings");
  if (e.ring_stride != ring_size(e.message_size, e.depth))
    corrupted(partition_, port, "ring stride");
  // rings <= 64 and a stride of at most ~4 GiB: no overflow.
  if (!in_channels(e.offset, uint64_t(e.rings) * e.ring_stride, ports_, size_))
    corrupted(partition_, port, "offset");
  QueuingPort p;
  p.name_ = std::string(port);
  p.source_ = e.source != 0;
  p.message_size_ = e.message_size;
  p.depth_ = e.depth;
  for (uint32_t i = 0; i < e.rings; ++i)
    p.rings_.push_back(static_cast<unsigned char*>(base_) + e.offset + i * e.ring_stride);
  return p;
}

// Sampling: write the slot that is not published, then publish it.
PortStatus SamplingPort::write(std::span<const std::byte> message) noexcept {
  if (!source_) return PortStatus::wrong_direction;
  if (message.size() > message_size_) return PortStatus::too_large;
  auto published = word<uint64_t>(channel_);
  const uint64_t current = published.load(std::memory_order_acquire);
  const uint64_t sequence = (current >> 1) + 1;
  const uint64_t index = current == 0 ? 0 : 1 - (current & 1);
  unsigned char* slot = channel_ + 64 + index * sampling_slot_stride(message_size_);
  auto slot_sequence = word<uint64_t>(slot);
  slot_sequence.store(2 * sequence - 1, std::memory_order_relaxed);  // odd: being written
  std::atomic_thread_fence(std::memory_order_release);
  word<int64_t>(slot + 8).store(now_ns(), std::memory_order_relaxed);
  word<uint32_t>(slot + 16).store(static_cast<uint32_t>(message.size()), std::memory_order_relaxed);
  store_words(slot + 64, message.data(), message.size());
  slot_sequence.store(2 * sequence, std::memory_order_release);
  if (auto hook = before_publish_hook.load(std::memory_order_relaxed)) hook();
  published.store(sequence << 1 | index, std::memory_order_release);  // the publish
  return PortStatus::ok;
}

SamplingRead SamplingPort::read(std::span<std::byte> buffer) noexcept {
  SamplingRead r;
  if (source_) {
    r.status = PortStatus::wrong_direction;
    return r;
  }
  auto published = word<uint64_t>(channel_);
  for (int attempt = 0; attempt < kSamplingRetries; ++attempt) {
    const uint64_t current = published.load(std::memory_order_acquire);
    if (current == 0) return r;  // empty
    const uint64_t sequence = current >> 1;
    unsigned char* slot = channel_ + 64 + (current & 1) * sampling_slot_stride(message_size_);
    auto slot_sequence = word<uint64_t>(slot);
    if (slot_sequence.load(std::memory_order_acquire) != 2 * sequence) continue;
    const int64_t written = word<int64_t>(slot + 8).load(std::memory_order_relaxed);
    const uint32_t size =
        std::min(word<uint32_t>(slot + 16).load(std::memory_order_relaxed), message_size_);
    const std::size_t n = std::min<std::size_t>(size, buffer.size());
    load_words(buffer.data(), slot + 64, n);
    std::atomic_thread_fence(std::memory_order_acquire);
    if (slot_sequence.load(std::memory_order_relaxed) != 2 * sequence) continue;  // reused
    r.status = PortStatus::ok;
    r.size = n;
    r.sequence = sequence;
    r.age_ns = now_ns() - written;
    r.valid = r.age_ns <= refresh_ns_;
    return r;
  }
  r.status = PortStatus::busy;
  return r;
}

// Queuing: one SPSC ring per destination.
PortStatus QueuingPort::send(std::span<const std::byte> message) noexcept {
  if (!source_) return PortStatus::wrong_direction;
  if (message.size() > message_size_) return PortStatus::too_large;
  bool full = false;
  const uint64_t stride = ring_slot_stride(message_size_);
  for (unsigned char* ring : rings_) {
    auto tail = word<uint64_t>(ring);
    const uint64_t t = tail.load(std::memory_order_relaxed);
    const uint64_t h = word<uint64_t>(ring + 64).load(std::memory_order_acquire);
    if (t - h >= depth_) {
      word<uint64_t>(ring + 136).fetch_add(1, std::memory_order_relaxed);
      full = true;
      continue;
    }
    unsigned char* slot = ring + kRingSlots + (t % depth_) * stride;
    const uint32_t size = static_cast<uint32_t>(message.size());
    std::memcpy(slot, &size, sizeof size);
    std::memcpy(slot + 8, message.data(), message.size());
    if (auto hook = before_publish_hook.load(std::memory_order_relaxed)) hook();
    tail.store(t + 1, std::memory_order_release);
    reinterpret_cast<Bell*>(ring + 128)->ring();  // no syscall without a waiter
  }
  return full ? PortStatus::full : PortStatus::ok;
}

QueuingReceive QueuingPort::receive(std::span<std::byte> buffer,
                                    std::optional<std::chrono::nanoseconds> timeout) noexcept {
  QueuingReceive r;
  if (source_ || rings_.empty()) {
    r.status = PortStatus::wrong_direction;
    return r;
  }
  unsigned char* ring = rings_[0];
  auto head = word<uint64_t>(ring + 64);
  auto tail = word<uint64_t>(ring);
  const uint64_t h = head.load(std::memory_order_relaxed);
  // The clock is read only when there is nothing to take: a receive that
  // finds a message costs no clock read (it was most of the cost).
  if (tail.load(std::memory_order_acquire) == h) {
    if (timeout && *timeout <= std::chrono::nanoseconds(0)) return r;  // empty
    const auto deadline = timeout ? Bell::Clock::now() + *timeout : Bell::Clock::time_point::max();
    Bell* bell = reinterpret_cast<Bell*>(ring + 128);
    while (tail.load(std::memory_order_acquire) == h) {
      if (Bell::Clock::now() >= deadline) {
        r.status = PortStatus::timed_out;
        return r;
      }
      // The Bell is rung after every tail advance: a wait that starts after
      // the check above still sees a ring that came after it. A stale ring
      // only makes one more turn of this loop.
      if (timeout)
        bell->wait_until(deadline);
      else
        bell->wait();
    }
  }
  const unsigned char* slot = ring + kRingSlots + (h % depth_) * ring_slot_stride(message_size_);
  uint32_t size = 0;
  std::memcpy(&size, slot, sizeof size);
  size = std::min(size, message_size_);
  std::memcpy(buffer.data(), slot + 8, std::min<std::size_t>(size, buffer.size()));
  head.store(h + 1, std::memory_order_release);
  r.status = PortStatus::ok;
  r.size = size;
  return r;
}

uint32_t QueuingPort::pending() const noexcept {
  uint64_t most = 0;
  for (unsigned char* ring : rings_)
    most = std::max(most, word<uint64_t>(ring).load(std::memory_order_acquire) -
                              word<uint64_t>(ring + 64).load(std::memory_order_acquire));
  return static_cast<uint32_t>(most);
}

uint64_t QueuingPort::overflows() const noexcept {
  uint64_t sum = 0;
  for (unsigned char* ring : rings_)
    sum += word<uint64_t>(ring + 136).load(std::memory_order_relaxed);
  return sum;
}

void testing::set_before_publish_hook(void (*hook)()) noexcept {
  before_publish_hook.store(hook, std::memory_order_relaxed);
}

}  // namespace doorbell::partition

// The C subset.
using namespace doorbell::partition;

struct doorbell_ports {
  Ports ports;
};
struct doorbell_port {
  std::optional<SamplingPort> sampling;
  std::optional<QueuingPort> queuing;
};

static_assert(DOORBELL_PORT_EMPTY == static_cast<int>(PortStatus::empty) + 1 &&
                  DOORBELL_PORT_TIMED_OUT == static_cast<int>(PortStatus::timed_out) + 1 &&
                  DOORBELL_PORT_FULL == static_cast<int>(PortStatus::full) + 1 &&
                  DOORBELL_PORT_TOO_LARGE == static_cast<int>(PortStatus::too_large) + 1 &&
                  DOORBELL_PORT_WRONG_DIRECTION ==
                      static_cast<int>(PortStatus::wrong_direction) + 1 &&
                  DOORBELL_PORT_BUSY == static_cast<int>(PortStatus::busy) + 1,
              "partition_ports_c.h's statuses are PortStatus + 1");

namespace {
int c_status(PortStatus s) {
  return s == PortStatus::ok ? 0 : static_cast<int>(s) + 1;
}
}  // namespace

extern "C" {
doorbell_ports* doorbell_ports_open(void) {
  try {
    return new doorbell_ports{Ports::from_environment()};
  } catch (...) {
    return nullptr;
  }
}
void doorbell_ports_close(doorbell_ports* ports) {
  delete ports;
}
doorbell_port* doorbell_port_open(doorbell_ports* ports, const char* port, int kind) {
  if (ports == nullptr || port == nullptr) return nullptr;
  if (kind != DOORBELL_PORT_SAMPLING && kind != DOORBELL_PORT_QUEUING) return nullptr;
  try {
    // Owned until it is whole: a port of the other kind throws.
    auto p = std::make_unique<doorbell_port>();
    if (kind == DOORBELL_PORT_SAMPLING)
      p->sampling = ports->ports.sampling(port);
    else
      p->queuing = ports->ports.queuing(port);
    return p.release();
  } catch (...) {
    return nullptr;
  }
}
void doorbell_port_close(doorbell_port* port) {
  delete port;
}
int doorbell_sampling_write(doorbell_port* port, const void* data, size_t size) {
  if (port == nullptr || !port->sampling) return -1;
  return c_status(port->sampling->write({static_cast<const std::byte*>(data), size}));
}
int doorbell_sampling_read(doorbell_port* port, void* buffer, size_t* size, int* valid) {
  if (port == nullptr || !port->sampling || size == nullptr) return -1;
  const SamplingRead r = port->sampling->read({static_cast<std::byte*>(buffer), *size});
  *size = r.size;
  if (valid != nullptr) *valid = r.valid ? 1 : 0;
  return c_status(r.status);
}
int doorbell_queuing_send(doorbell_port* port, const void* data, size_t size) {
  if (port == nullptr || !port->queuing) return -1;
  return c_status(port->queuing->send({static_cast<const std::byte*>(data), size}));
}
int doorbell_queuing_receive(doorbell_port* port, void* buffer, size_t* size, int64_t timeout_ns) {
  if (port == nullptr || !port->queuing || size == nullptr) return -1;
  std::optional<std::chrono::nanoseconds> timeout;
  if (timeout_ns >= 0) timeout = std::chrono::nanoseconds(timeout_ns);
  const QueuingReceive r =
      port->queuing->receive({static_cast<std::byte*>(buffer), *size}, timeout);
  *size = std::min(*size, r.size);
  return c_status(r.status);
}
}
