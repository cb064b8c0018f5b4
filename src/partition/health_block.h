// The health block a partition shares with the scheduler
// (include/doorbell/partition_health.h): one page of a memfd per partition.
// Written by the partition (atomics only), read by the scheduler.
#pragma once

#include <atomic>
#include <cstdint>

#include "doorbell/partition_health.h"

namespace doorbell::detail {

inline constexpr uint64_t kHealthMagic = 0x646f6f7268656c31;  // "doorhel1"

struct HealthBlock {
  uint64_t magic = kHealthMagic;  // written by the scheduler before the fork
  // Each counter is incremented (release) after the time (and code) it
  // publishes is stored (relaxed): an acquire load of the counter makes them
  // visible. Times are CLOCK_MONOTONIC ns.
  std::atomic<uint64_t> heartbeats{0};
  std::atomic<int64_t> last_heartbeat_ns{0};
  std::atomic<uint64_t> deadlines_missed{0};
  std::atomic<int64_t> last_deadline_ns{0};
  std::atomic<uint64_t> errors{0};
  std::atomic<int64_t> last_error_ns{0};
  std::atomic<int32_t> last_error_code{0};
};
static_assert(std::atomic<uint64_t>::is_always_lock_free);
static_assert(sizeof(HealthBlock) <= 4096);
inline constexpr std::size_t kHealthBlockBytes = 4096;

}  // namespace doorbell::detail
