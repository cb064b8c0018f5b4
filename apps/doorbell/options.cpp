#include "apps/doorbell/options.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <CLI/CLI.hpp>
#include <cerrno>
#include <cmath>
#include <cstdlib>
#include <cstring>

#include "apps/doorbell/command.h"
#include "lab/common/output_file.h"

#include <fmt/format.h>

namespace doorbell::cli {

std::string short_number(double value) {
  if (!std::isfinite(value)) return fmt::format("{}", value);
  const bool whole = std::nearbyint(value) == value;
  if (whole && std::fabs(value) < 1e6) return fmt::format("{:.0f}", value);
  // Powers of ten from a million up as such: 10^12, not 1e+12; other whole
  // numbers in full (3600000000).
  const double exponent = std::nearbyint(std::log10(std::fabs(value)));
  if (value > 0 && exponent >= 6 && std::pow(10.0, exponent) == value)
    return fmt::format("10^{:.0f}", exponent);
  if (whole && std::fabs(value) < 1e15) return fmt::format("{:.0f}", value);
  return fmt::format("{:.6g}", value);
}

double parse_short_number(const std::string& text) {
  const std::size_t caret = text.find("10^");
  if (caret == 0) return std::pow(10.0, std::strtod(text.c_str() + 3, nullptr));
  return std::strtod(text.c_str(), nullptr);
}

void check_input_file(const std::string& command, const std::string& path) {
  struct stat st {};
  if (::stat(path.c_str(), &st) == 0 && S_ISDIR(st.st_mode))
    throw UsageError(command + ": " + path + ": is a directory (give a file)");
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) throw UsageError(command + ": " + path + ": cannot open: " + std::strerror(errno));
  ::close(fd);
}

void check_output_file(const std::string& command, const std::string& option,
                       const std::string& path) {
  try {
    lab::check_output_file(option, path);
  } catch (const lab::OutputFileError& e) {
    throw UsageError(command + ": " + e.what());
  }
}

void ensure_output_directory(const std::string& command, const std::string& option,
                             const std::string& path) {
  try {
    lab::ensure_output_directory(option, path);
  } catch (const lab::OutputFileError& e) {
    throw UsageError(command + ": " + e.what());
  }
}

CLI::Validator nonempty_path() {
  return CLI::Validator(
      [](std::string& text) -> std::string {
        return text.empty() ? "an empty name is not a path" : std::string();
      },
      "");
}

CLI::Validator number_in(double min, double max) {
  const std::string range = fmt::format("[{}, {}]", short_number(min), short_number(max));
  return CLI::Validator(
      [range, min, max](std::string& text) -> std::string {
        const std::string shown = text.size() > 40 ? text.substr(0, 40) + "..." : text;
        char* end = nullptr;
        errno = 0;
        const double value = std::strtod(text.c_str(), &end);
        if (text.empty() || end == text.c_str() || *end != '\0' || std::isnan(value))
          return fmt::format("'{}' is not a number; it must be in {}", shown, range);
        if (!std::isfinite(value) || errno == ERANGE || value < min || value > max)
          return fmt::format("{} is out of range: it must be in {}", shown, range);
        return {};
      },
      "in " + range);
}

}  // namespace doorbell::cli
