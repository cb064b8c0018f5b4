#include "lab/common/format.h"

#include <cmath>

#include <fmt/format.h>

namespace doorbell::lab {

std::string format_duration(double ns) {
  if (!std::isfinite(ns)) return "-";
  const double a = std::fabs(ns);
  if (a < 10.0) return fmt::format("{:.2f} ns", ns);
  if (a < 1e3) return fmt::format("{:.0f} ns", ns);
  if (a < 1e4) return fmt::format("{:.2f} µs", ns / 1e3);
  if (a < 1e6) return fmt::format("{:.1f} µs", ns / 1e3);
  if (a < 1e7) return fmt::format("{:.2f} ms", ns / 1e6);
  if (a < 1e9) return fmt::format("{:.1f} ms", ns / 1e6);
  return fmt::format("{:.2f} s", ns / 1e9);
}

std::string format_ratio(double ratio) {
  if (!std::isfinite(ratio)) return "-";
  if (std::fabs(ratio) >= 100.0) return fmt::format("{:.0f}x", ratio);
  return fmt::format("{:.3g}x", ratio);
}

}  // namespace doorbell::lab
