#include "doorbell/ring.h"

#include <atomic>
#include <cstring>
#include <new>
#include <stdexcept>
#include <string>

#include "sys/deadline.h"

namespace doorbell {
namespace detail {

struct RingHeader {
  char magic[8];
  uint32_t slots;
  uint32_t slot_bytes;
  uint32_t stride;
  uint32_t reserved[11];
  // Consumer-written line.
  alignas(64) std::atomic<uint64_t> head;
  Bell space;  // the producer sleeps here while full
  // Producer-written line.
  alignas(64) std::atomic<uint64_t> tail;
  Bell data;  // the consumer sleeps here while empty
  alignas(64) unsigned char slot_area[1];
};

}  // namespace detail

namespace {

using detail::RingHeader;
constexpr char kMagic[8] = {'D', 'B', 'R', 'I', 'N', 'G', '0', '1'};
constexpr std::size_t kSlotsOffset = 192;
static_assert(offsetof(RingHeader, head) == 64);
static_assert(offsetof(RingHeader, tail) == 128);
static_assert(offsetof(RingHeader, slot_area) == kSlotsOffset);
static_assert(std::atomic<uint64_t>::is_always_lock_free);

uint32_t stride_of(uint32_t slot_bytes) {
  return (4 + slot_bytes + 7) & ~7u;
}

unsigned char* slot(RingHeader* h, uint64_t index) {
  return reinterpret_cast<unsigned char*>(h) + kSlotsOffset +
         static_cast<std::size_t>(index & (h->slots - 1)) * h->stride;
}

}  // namespace

std::size_t Ring::bytes_needed(uint32_t slots, uint32_t slot_bytes) {
  if (slots < 2 || (slots & (slots - 1)) != 0)
    throw std::invalid_argument("Ring: slots must be a power of two, at least 2");
  if (slot_bytes == 0 || slot_bytes > (1u << 20))
    throw std::invalid_argument("Ring: slot_bytes must be between 1 and 1 MiB");
  return kSlotsOffset + static_cast<std::size_t>(slots) * stride_of(slot_bytes);
}

Ring Ring::create(void* memory, std::size_t bytes, uint32_t slots, uint32_t slot_bytes) {
  const std::size_t needed = bytes_needed(slots, slot_bytes);
  if (memory == nullptr || reinterpret_cast<uintptr_t>(memory) % 64 != 0)
    throw std::invalid_argument("Ring::create: memory must be non-null and 64-byte aligned");
  if (bytes < needed)
    throw std::invalid_argument("Ring::create: " + std::to_string(bytes) + " bytes given, " +
                                std::to_string(needed) + " needed");
  auto* h = static_cast<RingHeader*>(memory);
  std::memset(memory, 0, kSlotsOffset);
  h->slots = slots;
  h->slot_bytes = slot_bytes;
  h->stride = stride_of(slot_bytes);
  new (&h->head) std::atomic<uint64_t>(0);
  new (&h->tail) std::atomic<uint64_t>(0);
  Bell::create_at(&h->space);
  Bell::create_at(&h->data);
  // The magic last, with a release fence, so an attach() that sees it sees
  // the rest (attach() is normally ordered by fork or a handshake anyway).
  std::atomic_thread_fence(std::memory_order_release);
  std::memcpy(h->magic, kMagic, sizeof kMagic);
  return Ring(h);
}

Ring Ring::attach(void* memory, std::size_t bytes) {
  if (memory == nullptr || reinterpret_cast<uintptr_t>(memory) % 64 != 0)
    throw std::invalid_argument("Ring::attach: memory must be non-null and 64-byte aligned");
  if (bytes < kSlotsOffset) throw std::invalid_argument("Ring::attach: memory too small");
  auto* h = std::launder(static_cast<RingHeader*>(memory));
  if (std::memcmp(h->magic, kMagic, sizeof kMagic) != 0)
    throw std::invalid_argument("Ring::attach: no ring here (magic mismatch)");
  std::atomic_thread_fence(std::memory_order_acquire);
  if (bytes_needed(h->slots, h->slot_bytes) > bytes || h->stride != stride_of(h->slot_bytes))
    throw std::invalid_argument("Ring::attach: the ring's sizes do not fit the memory");
  return Ring(h);
}

uint32_t Ring::slots() const noexcept {
  return header_->slots;
}
uint32_t Ring::slot_bytes() const noexcept {
  return header_->slot_bytes;
}
std::size_t Ring::size() const noexcept {
  const uint64_t head = header_->head.load(std::memory_order_acquire);
  const uint64_t tail = header_->tail.load(std::memory_order_acquire);
  return static_cast<std::size_t>(tail - head);
}

Ring::Status Ring::try_push(const void* data, std::size_t size) noexcept {
  RingHeader* h = header_;
  if (size > h->slot_bytes) return Status::too_large;
  // relaxed: only the producer writes tail.
  const uint64_t tail = h->tail.load(std::memory_order_relaxed);
  // acquire: the consumer's release of head means it finished reading the
  // slot we are about to overwrite.
  const uint64_t head = h->head.load(std::memory_order_acquire);
  if (tail - head >= h->slots) return Status::full;
  unsigned char* s = slot(h, tail);
  const uint32_t length = static_cast<uint32_t>(size);
  std::memcpy(s, &length, sizeof length);
  if (size) std::memcpy(s + 4, data, size);
  // release: publishes the record to the consumer's acquire of tail.
  h->tail.store(tail + 1, std::memory_order_release);
  // One atomic; a futex wake only when the consumer sleeps.
  h->data.ring();
  return Status::ok;
}

Ring::Status Ring::push(const void* data, std::size_t size,
                        std::chrono::nanoseconds timeout) noexcept {
  const auto deadline = detail::deadline_after(timeout);  // saturated
  for (;;) {
    const Status s = try_push(data, size);
    if (s != Status::full) return s;
    // The consumer rings `space` after every pop; rings merge, so recheck.
    if (!header_->space.wait_until(deadline))
      return try_push(data, size) == Status::ok ? Status::ok : Status::timed_out;
  }
}

Ring::PopResult Ring::try_pop(void* buffer, std::size_t capacity) noexcept {
  RingHeader* h = header_;
  const uint64_t head = h->head.load(std::memory_order_relaxed);  // only we write it
  // acquire: pairs with the producer's release of tail (the record's bytes).
  const uint64_t tail = h->tail.load(std::memory_order_acquire);
  if (head == tail) return {Status::empty, 0};
  const unsigned char* s = slot(h, head);
  uint32_t length;
  std::memcpy(&length, s, sizeof length);
  if (length > capacity) return {Status::buffer_too_small, length};
  if (length) std::memcpy(buffer, s + 4, length);
  // release: the producer may reuse the slot only after our copy.
  h->head.store(head + 1, std::memory_order_release);
  h->space.ring();
  return {Status::ok, length};
}

Ring::PopResult Ring::pop(void* buffer, std::size_t capacity, std::chrono::nanoseconds timeout,
                          Bell::Spin spin) noexcept {
  const auto deadline = detail::deadline_after(timeout);  // saturated
  for (;;) {
    const PopResult r = try_pop(buffer, capacity);
    if (r.status != Status::empty) return r;
    // Every push rings `data` after its tail store; a ring taken here
    // acquires that store, and a stale ring (from a record already popped)
    // only costs one more empty try_pop.
    if (!header_->data.wait_until(deadline, spin)) {
      const PopResult last = try_pop(buffer, capacity);
      return last.status == Status::empty ? PopResult{Status::timed_out, 0} : last;
    }
  }
}

}  // namespace doorbell
