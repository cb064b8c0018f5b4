// The shared-file layout of partition_progress_prog (see progress.cpp).
#pragma once

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/types.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

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

// What a test reads back from a progress file: zeros until the program has
// written its header.
struct Progress {
  pid_t pid = 0;
  uint64_t count = 0;            // stamps taken (may exceed the capacity)
  std::vector<uint64_t> stamps;  // with_stamps only: the non-zero stamps kept
};

inline Progress read_progress(const std::string& path, bool with_stamps) {
  Progress result;
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return result;
  struct stat st;
  if (::fstat(fd, &st) != 0 || static_cast<std::size_t>(st.st_size) < kProgressFileSize) {
    ::close(fd);
    return result;
  }
  void* map = ::mmap(nullptr, kProgressFileSize, PROT_READ, MAP_SHARED, fd, 0);
  ::close(fd);
  if (map == MAP_FAILED) return result;
  const auto* header = static_cast<const ProgressHeader*>(map);
  result.pid = header->pid;
  result.count = header->count.load(std::memory_order_relaxed);
  if (with_stamps) {
    const auto* stamps = reinterpret_cast<const uint64_t*>(header + 1);
    const uint64_t n = std::min<uint64_t>(result.count, header->capacity);
    for (uint64_t i = 0; i < n; ++i)
      if (stamps[i] != 0) result.stamps.push_back(stamps[i]);
  }
  ::munmap(map, kProgressFileSize);
  return result;
}

}  // namespace doorbell::test
