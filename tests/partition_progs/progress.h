// The shared-file layout of partition_progress_prog (see progress.cpp).
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>

namespace doorbell::test {

struct ProgressHeader {
  uint32_t capacity;
  int32_t pid;
  int32_t threads;
  int32_t reserved;
  std::atomic<uint64_t> count;  // stamps taken (may exceed capacity)
};

constexpr std::size_t kProgressCapacity = 1 << 18;
constexpr std::size_t kProgressFileSize = sizeof(ProgressHeader) + kProgressCapacity * 8;

}  // namespace doorbell::test
