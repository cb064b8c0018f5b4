#include "sys/deadline.h"

#include <climits>
#include <cstdint>
#include <type_traits>

namespace doorbell::detail {

DeadlineClock::time_point saturating_add(DeadlineClock::time_point start,
                                         std::chrono::nanoseconds timeout) noexcept {
  using Duration = DeadlineClock::duration;
  static_assert(std::is_same_v<Duration, std::chrono::nanoseconds>,
                "steady_clock counts nanoseconds (libstdc++, libc++ on Linux)");
  int64_t sum;
  if (__builtin_add_overflow(start.time_since_epoch().count(), timeout.count(), &sum))
    return timeout.count() > 0 ? DeadlineClock::time_point::max()
                               : DeadlineClock::time_point::min();
  return DeadlineClock::time_point(Duration(sum));
}

int poll_timeout_ms(DeadlineClock::time_point deadline) noexcept {
  if (deadline == DeadlineClock::time_point::max()) return -1;
  const DeadlineClock::time_point now = DeadlineClock::now();
  if (deadline <= now) return 0;
  // deadline > now >= 0 (steady_clock counts from boot), so no overflow.
  const int64_t left_ns = (deadline - now).count();
  const int64_t left_ms = left_ns / 1000000 + (left_ns % 1000000 != 0);
  return left_ms > INT_MAX ? INT_MAX : static_cast<int>(left_ms);
}

}  // namespace doorbell::detail
