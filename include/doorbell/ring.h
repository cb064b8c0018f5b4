// Ring: a single-producer single-consumer message ring in (shared) memory.
// The consumer sleeps on a Bell, so the producer pays a wake-up (a futex
// syscall) only when the consumer sleeps; otherwise a push is a copy, a
// release store and one atomic RMW.
//
// It replaces passing data with real-time signals (8 bytes of si_value per
// signal, one signal delivery per message): records of up to slot_bytes
// each, in fixed slots, across threads or across processes.
//
// Roles: exactly one producer (push) and one consumer (pop) at a time;
// they may be threads of one process or different processes mapping the
// same memory (MAP_SHARED, shm_open, memfd). The Ring object itself is a
// small handle (a pointer into the memory); each process makes its own
// with create() (once) and attach() (the others).
//
// Full and empty are return values, never silent: try_push() says full,
// too_large; try_pop() says empty, buffer_too_small (the record stays).
//
// Layout (stable, in the memory given to create()):
//   bytes 0..63     header: magic "DBRING01", slot count, slot bytes,
//                   stride (all 32-bit)
//   bytes 64..127   consumer line: head (u64 atomic), space Bell
//   bytes 128..191  producer line: tail (u64 atomic), data Bell
//   bytes 192..     slot_count slots of stride bytes: u32 length, payload
//   The memory must be 64-byte aligned (page-aligned mappings are).
//
// Memory ordering: a push's tail store is a release and a pop's tail load
// an acquire, so the record's bytes are visible to the consumer; the same
// for head and slot reuse in the other direction.
//
// Async-signal-safety: try_push() is async-signal-safe (a producer in a
// signal handler works if the interrupted code is not also the producer).
// Lifetime: the memory must stay mapped while either side uses the Ring.
// Fork: a Ring in MAP_SHARED memory works between parent and child.
#pragma once

#include <chrono>
#include <cstddef>
#include <cstdint>

#include "doorbell/bell.h"

namespace doorbell {

namespace detail {
struct RingHeader;
}

class Ring {
 public:
  enum class Status { ok, full, empty, too_large, buffer_too_small, timed_out };
  struct PopResult {
    Status status;
    std::size_t size;  // the record's size for ok and buffer_too_small
  };

  // Memory needed for a ring of `slots` records of up to `slot_bytes` each.
  // Throws std::invalid_argument when slots is not a power of two >= 2 or
  // slot_bytes is 0 or above 1 MiB.
  static std::size_t bytes_needed(uint32_t slots, uint32_t slot_bytes);

  // Initializes an empty ring in `memory` (`bytes` long). Throws
  // std::invalid_argument for bad sizes, a null or not 64-byte-aligned
  // address, or bytes < bytes_needed().
  static Ring create(void* memory, std::size_t bytes, uint32_t slots, uint32_t slot_bytes);
  // Uses a ring that create() initialized (in this or another process).
  // Throws std::invalid_argument when the magic or sizes do not match.
  static Ring attach(void* memory, std::size_t bytes);

  // Producer. Copies `size` bytes into the next slot and wakes the
  // consumer if it sleeps. full: no free slot; too_large: size > slot_bytes.
  Status try_push(const void* data, std::size_t size) noexcept;
  // Producer. Like try_push(), waiting up to `timeout` while full. A
  // timeout too large for the clock (nanoseconds::max()) means no limit.
  Status push(const void* data, std::size_t size, std::chrono::nanoseconds timeout) noexcept;

  // Consumer. Copies the oldest record into `buffer`. empty: no record;
  // buffer_too_small: capacity < the record's size (left in the ring).
  PopResult try_pop(void* buffer, std::size_t capacity) noexcept;
  // Consumer. Like try_pop(), sleeping on the data Bell up to `timeout`
  // while empty (timed_out then). A timeout too large for the clock
  // (nanoseconds::max()) means no limit.
  PopResult pop(void* buffer, std::size_t capacity, std::chrono::nanoseconds timeout,
                Bell::Spin spin = {}) noexcept;

  uint32_t slots() const noexcept;
  uint32_t slot_bytes() const noexcept;
  // Records in the ring now (a snapshot).
  std::size_t size() const noexcept;

 private:
  explicit Ring(detail::RingHeader* header) noexcept : header_(header) {}
  detail::RingHeader* header_;
};

}  // namespace doorbell
