// Deadlines that saturate instead of overflowing.
//
// `now() + timeout` overflows a signed 64-bit nanosecond count for any
// timeout beyond about 292 years from boot (nanoseconds::max() included);
// the overflow is undefined behaviour and in practice wraps to a deadline in
// the past, so the wait "times out" at once. Every timed wait in the library
// computes its deadline here instead: a deadline that does not fit becomes
// time_point::max(), which the waits treat as "no limit".
//
// poll(2) and epoll_wait(2) take an int of milliseconds (at most ~24.8
// days); poll_timeout_ms() caps the value, and the caller loops until the
// deadline has really passed.
#pragma once

#include <chrono>

namespace doorbell::detail {

using DeadlineClock = std::chrono::steady_clock;  // CLOCK_MONOTONIC on Linux

// start + timeout, clamped to [time_point::min(), time_point::max()].
DeadlineClock::time_point saturating_add(DeadlineClock::time_point start,
                                         std::chrono::nanoseconds timeout) noexcept;

// `timeout` in nanoseconds, clamped to nanoseconds::min()/max() instead of
// overflowing (milliseconds::max() converts to nanoseconds::max()).
template <class Rep, class Period>
constexpr std::chrono::nanoseconds saturating_nanoseconds(
    std::chrono::duration<Rep, Period> timeout) noexcept {
  using Duration = std::chrono::duration<Rep, Period>;
  using std::chrono::nanoseconds;
  if (timeout >= std::chrono::duration_cast<Duration>(nanoseconds::max()))
    return nanoseconds::max();
  if (timeout <= std::chrono::duration_cast<Duration>(nanoseconds::min()))
    return nanoseconds::min();
  return std::chrono::duration_cast<nanoseconds>(timeout);
}

// DeadlineClock::now() + timeout, saturated. time_point::max() means "never".
template <class Rep, class Period>
DeadlineClock::time_point deadline_after(std::chrono::duration<Rep, Period> timeout) noexcept {
  return saturating_add(DeadlineClock::now(), saturating_nanoseconds(timeout));
}

// The timeout argument for poll(2)/epoll_wait(2) that waits towards
// `deadline`: -1 for time_point::max() (no limit), 0 once it has passed,
// otherwise the time left rounded up to whole milliseconds (so a wait never
// ends before the deadline) and capped at INT_MAX. A capped wait ends
// early; the caller must check the deadline and wait again.
int poll_timeout_ms(DeadlineClock::time_point deadline) noexcept;

}  // namespace doorbell::detail
