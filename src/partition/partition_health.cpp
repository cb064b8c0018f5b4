// The partition's side of the health monitor (partition_health.h) and the
// names of the table's errors and actions.
#include <sys/mman.h>
#include <sys/stat.h>

#include <cerrno>
#include <cstdlib>
#include <ctime>
#include <mutex>

#include "partition/health_block.h"

namespace doorbell::partition {
namespace {

// Set once (by attach_health() or, in an entry partition's child, by the
// scheduler before the entry runs) and never changed: the calls below read
// it relaxed, since the block it points to was fully written before the
// fork or the mmap that made it reachable.
std::atomic<detail::HealthBlock*> g_block{nullptr};

int64_t monotonic_ns() noexcept {
  timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);  // vDSO: no system call
  return static_cast<int64_t>(ts.tv_sec) * 1'000'000'000 + ts.tv_nsec;
}

constexpr const char* kErrorNames[kHealthErrors] = {"process_died", "overrun", "deadline_missed",
                                                    "application_error", "no_heartbeat"};
constexpr const char* kActionNames[] = {"ignore", "log", "restart", "stop_partition",
                                        "stop_schedule"};

}  // namespace

const char* health_error_name(HealthError error) noexcept {
  return kErrorNames[static_cast<std::size_t>(error)];
}

std::optional<HealthError> parse_health_error(const std::string& name) {
  for (std::size_t i = 0; i < kHealthErrors; ++i)
    if (name == kErrorNames[i]) return static_cast<HealthError>(i);
  return std::nullopt;
}

const char* health_action_name(HealthAction action) noexcept {
  return kActionNames[static_cast<std::size_t>(action)];
}

std::optional<HealthAction> parse_health_action(const std::string& name) {
  for (std::size_t i = 0; i < std::size(kActionNames); ++i)
    if (name == kActionNames[i]) return static_cast<HealthAction>(i);
  return std::nullopt;
}

bool attach_health() noexcept {
  static std::once_flag once;
  std::call_once(once, [] {
    if (g_block.load(std::memory_order_relaxed) != nullptr) return;
    const char* text = std::getenv(kHealthFdVariable);
    if (text == nullptr || *text == '\0') return;
    char* end = nullptr;
    errno = 0;
    const long fd = std::strtol(text, &end, 10);
    if (errno != 0 || *end != '\0' || fd < 0 || fd > INT32_MAX) return;
    struct stat st {};
    if (::fstat(static_cast<int>(fd), &st) != 0 ||
        st.st_size < static_cast<off_t>(detail::kHealthBlockBytes))
      return;
    void* map = ::mmap(nullptr, detail::kHealthBlockBytes, PROT_READ | PROT_WRITE, MAP_SHARED,
                       static_cast<int>(fd), 0);
    if (map == MAP_FAILED) return;
    auto* block = static_cast<detail::HealthBlock*>(map);
    if (block->magic != detail::kHealthMagic) {
      ::munmap(map, detail::kHealthBlockBytes);
      return;
    }
    g_block.store(block, std::memory_order_release);
  });
  return g_block.load(std::memory_order_acquire) != nullptr;
}

void heartbeat() noexcept {
  detail::HealthBlock* b = g_block.load(std::memory_order_acquire);
  if (b == nullptr) return;
  b->last_heartbeat_ns.store(monotonic_ns(), std::memory_order_relaxed);
  // Release: the time above is visible to whoever sees this count.
  b->heartbeats.fetch_add(1, std::memory_order_release);
}

void deadline_missed() noexcept {
  detail::HealthBlock* b = g_block.load(std::memory_order_acquire);
  if (b == nullptr) return;
  b->last_deadline_ns.store(monotonic_ns(), std::memory_order_relaxed);
  b->deadlines_missed.fetch_add(1, std::memory_order_release);  // publishes the time
}

void report_error(int32_t code) noexcept {
  detail::HealthBlock* b = g_block.load(std::memory_order_acquire);
  if (b == nullptr) return;
  b->last_error_code.store(code, std::memory_order_relaxed);
  b->last_error_ns.store(monotonic_ns(), std::memory_order_relaxed);
  b->errors.fetch_add(1, std::memory_order_release);  // publishes code and time
}

}  // namespace doorbell::partition

namespace doorbell::detail {
void set_health_block(HealthBlock* block) noexcept {
  partition::g_block.store(block, std::memory_order_release);
}
}  // namespace doorbell::detail
