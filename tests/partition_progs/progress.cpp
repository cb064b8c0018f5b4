// A tiny partition for the partition scheduler's tests: THREADS busy threads
// that each stamp CLOCK_MONOTONIC into a shared file whenever at least 50 us
// have passed since their last stamp. The file outlives the process (even a
// SIGKILL), so a test can check when the partition ran.
//
//   partition_progress_prog FILE [THREADS=1] [EXIT_AFTER_MS=0]
//
// File layout: ProgressHeader, then `capacity` uint64_t stamps.
#include <fcntl.h>
#include <sys/mman.h>
#include <unistd.h>

#include <atomic>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <ctime>
#include <thread>
#include <vector>

#include "tests/partition_progs/progress.h"

namespace {

uint64_t now_ns() {
  timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return static_cast<uint64_t>(ts.tv_sec) * 1000000000u + static_cast<uint64_t>(ts.tv_nsec);
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 2) {
    std::fprintf(stderr, "usage: %s FILE [THREADS] [EXIT_AFTER_MS]\n", argv[0]);
    return 2;
  }
  const int threads = argc > 2 ? std::atoi(argv[2]) : 1;
  const long exit_after_ms = argc > 3 ? std::atol(argv[3]) : 0;
  const int fd = ::open(argv[1], O_RDWR | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  if (fd < 0 || ::ftruncate(fd, doorbell::test::kProgressFileSize) != 0) {
    std::perror("progress file");
    return 1;
  }
  void* map =
      ::mmap(nullptr, doorbell::test::kProgressFileSize, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
  if (map == MAP_FAILED) return 1;
  auto* header = static_cast<doorbell::test::ProgressHeader*>(map);
  auto* stamps = reinterpret_cast<uint64_t*>(header + 1);
  header->capacity = doorbell::test::kProgressCapacity;
  header->pid = ::getpid();
  header->threads = threads;
  const uint64_t start = now_ns();
  auto work = [&] {
    uint64_t last = 0;
    for (;;) {
      const uint64_t t = now_ns();
      if (t - last >= 50000) {
        last = t;
        // relaxed: the index only has to be unique; the reader looks at the
        // file after this process has stopped or died.
        const uint64_t i = header->count.fetch_add(1, std::memory_order_relaxed);
        if (i < header->capacity) stamps[i] = t;
      }
      if (exit_after_ms > 0 && t - start > static_cast<uint64_t>(exit_after_ms) * 1000000u)
        std::_Exit(3);
    }
  };
  std::vector<std::thread> pool;
  for (int i = 1; i < threads; ++i) pool.emplace_back(work);
  work();
}
