#include "lab/common/format.h"

#include <cmath>

#include <fmt/format.h>

namespace doorbell::lab {

namespace {

// v in [0.9995, 999.5) of `unit`: two decimals below 10, then `above_ten`
// decimals below 100 and `above_hundred` from 100 up; each threshold is
// compared with the value as written.
std::string in_unit(double v, const char* unit, int above_ten, int above_hundred) {
  const double a = std::fabs(v);
  if (a < 9.995) return fmt::format("{:.2f} {}", v, unit);
  if (a < 99.95) return fmt::format("{:.{}f} {}", v, above_ten, unit);
  return fmt::format("{:.{}f} {}", v, above_hundred, unit);
}

}  // namespace

std::string format_duration(double ns) {
  if (!std::isfinite(ns)) return "-";
  const double a = std::fabs(ns);
  if (a < 9.995) return fmt::format("{:.2f} ns", ns);
  if (a < 999.5) return fmt::format("{:.0f} ns", ns);
  if (a < 999.95e3) return in_unit(ns / 1e3, "µs", 1, 1);
  if (a < 999.95e6) return in_unit(ns / 1e6, "ms", 1, 1);
  return in_unit(ns / 1e9, "s", 1, 0);
}

std::string format_ratio(double ratio) {
  if (!std::isfinite(ratio)) return "-";
  // '#': trailing zeros kept ("1.00", not "1"); below 99.95 so that '#'
  // never writes "100." for a value that rounds up.
  if (std::fabs(ratio) >= 99.95) return fmt::format("{:.0f}x", ratio);
  return fmt::format("{:#.3g}x", ratio);
}

std::string format_ratio_words(double ratio, const std::string& subject, const std::string& other) {
  if (!std::isfinite(ratio) || !(ratio > 0)) return "-";
  if (ratio < 1.01 && ratio > 1 / 1.01) return subject + " about as fast as " + other;
  return ratio > 1 ? fmt::format("{} {} slower than {}", subject, format_ratio(ratio), other)
                   : fmt::format("{} {} faster than {}", subject, format_ratio(1 / ratio), other);
}

}  // namespace doorbell::lab
