#include "doorbell/ring.h"

#include <gtest/gtest.h>
#include <signal.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstring>
#include <stdexcept>
#include <thread>
#include <vector>

using namespace std::chrono_literals;
using doorbell::Ring;

namespace {

struct Mapping {
  std::size_t bytes;
  void* memory;
  explicit Mapping(std::size_t n) : bytes(n) {
    memory = ::mmap(nullptr, n, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
    if (memory == MAP_FAILED) throw std::runtime_error("mmap");
  }
  ~Mapping() { ::munmap(memory, bytes); }
};

TEST(Ring, FullAndEmptyAreReported) {
  Mapping m(Ring::bytes_needed(4, 16));
  Ring ring = Ring::create(m.memory, m.bytes, 4, 16);
  char buf[16];
  EXPECT_EQ(ring.try_pop(buf, sizeof buf).status, Ring::Status::empty);
  for (int i = 0; i < 4; ++i) EXPECT_EQ(ring.try_push(&i, sizeof i), Ring::Status::ok);
  int five = 5;
  EXPECT_EQ(ring.try_push(&five, sizeof five), Ring::Status::full);
  EXPECT_EQ(ring.size(), 4u);
  char big[17] = {};
  EXPECT_EQ(ring.try_push(big, sizeof big), Ring::Status::too_large);
  for (int i = 0; i < 4; ++i) {
    int v = -1;
    auto r = ring.try_pop(&v, sizeof v);
    EXPECT_EQ(r.status, Ring::Status::ok);
    EXPECT_EQ(r.size, sizeof v);
    EXPECT_EQ(v, i);
  }
  EXPECT_EQ(ring.try_pop(buf, sizeof buf).status, Ring::Status::empty);
}

TEST(Ring, SmallBufferLeavesTheRecord) {
  Mapping m(Ring::bytes_needed(2, 32));
  Ring ring = Ring::create(m.memory, m.bytes, 2, 32);
  const char msg[] = "hello, ring";
  ASSERT_EQ(ring.try_push(msg, sizeof msg), Ring::Status::ok);
  char small[4];
  auto r = ring.try_pop(small, sizeof small);
  EXPECT_EQ(r.status, Ring::Status::buffer_too_small);
  EXPECT_EQ(r.size, sizeof msg);
  char ok[32];
  r = ring.try_pop(ok, sizeof ok);
  ASSERT_EQ(r.status, Ring::Status::ok);
  EXPECT_STREQ(ok, msg);
}

TEST(Ring, BadLayoutIsRejected) {
  EXPECT_THROW(Ring::bytes_needed(3, 8), std::invalid_argument);
  EXPECT_THROW(Ring::bytes_needed(4, 0), std::invalid_argument);
  Mapping m(4096);
  EXPECT_THROW(Ring::create(m.memory, 100, 4, 8), std::invalid_argument);
  EXPECT_THROW(Ring::create(static_cast<char*>(m.memory) + 8, 4000, 4, 8), std::invalid_argument);
  EXPECT_THROW(Ring::attach(m.memory, m.bytes), std::invalid_argument);  // no magic
  Ring::create(m.memory, m.bytes, 4, 8);
  EXPECT_NO_THROW(Ring::attach(m.memory, m.bytes));
  EXPECT_THROW(Ring::attach(m.memory, 200), std::invalid_argument);
}

TEST(Ring, PopTimesOutAfterAtLeastTheTimeout) {
  Mapping m(Ring::bytes_needed(2, 8));
  Ring ring = Ring::create(m.memory, m.bytes, 2, 8);
  char buf[8];
  const auto start = std::chrono::steady_clock::now();
  EXPECT_EQ(ring.pop(buf, sizeof buf, 20ms).status, Ring::Status::timed_out);
  EXPECT_GE(std::chrono::steady_clock::now() - start, 20ms);
}

// Every record arrives, in order, across threads, with the consumer often
// asleep and the producer often blocked on full.
TEST(Ring, ThreadsEveryRecordInOrder) {
  Mapping m(Ring::bytes_needed(8, 64));
  Ring ring = Ring::create(m.memory, m.bytes, 8, 64);
  constexpr uint64_t kCount = 50000;
  std::thread producer([&] {
    for (uint64_t i = 0; i < kCount; ++i) ASSERT_EQ(ring.push(&i, sizeof i, 10s), Ring::Status::ok);
  });
  for (uint64_t i = 0; i < kCount; ++i) {
    uint64_t v = 0;
    auto r = ring.pop(&v, sizeof v, 10s);
    ASSERT_EQ(r.status, Ring::Status::ok) << "at " << i;
    ASSERT_EQ(v, i);
  }
  producer.join();
  EXPECT_EQ(ring.size(), 0u);
}

TEST(Ring, ProcessesEveryRecordInOrder) {
  Mapping m(Ring::bytes_needed(16, 128));
  Ring::create(m.memory, m.bytes, 16, 128);
  constexpr uint64_t kCount = 20000;
  const pid_t pid = ::fork();
  if (pid == 0) {
    Ring ring = Ring::attach(m.memory, m.bytes);
    for (uint64_t i = 0; i < kCount; ++i) {
      char record[128];
      std::memset(record, static_cast<int>(i & 0xff), sizeof record);
      std::memcpy(record, &i, sizeof i);
      if (ring.push(record, 8 + (i % 120), 10s) != Ring::Status::ok) ::_exit(1);
    }
    ::_exit(0);
  }
  Ring ring = Ring::attach(m.memory, m.bytes);
  bool ok = true;
  for (uint64_t i = 0; i < kCount && ok; ++i) {
    unsigned char record[128];
    auto r = ring.pop(record, sizeof record, 10s);
    uint64_t v;
    std::memcpy(&v, record, sizeof v);
    ok = r.status == Ring::Status::ok && r.size == 8 + (i % 120) && v == i &&
         (r.size == 8 || record[r.size - 1] == (i & 0xff));
    EXPECT_TRUE(ok) << "record " << i;
  }
  if (!ok) ::kill(pid, SIGKILL);
  int status = 0;
  ::waitpid(pid, &status, 0);
  EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0);
}

}  // namespace
