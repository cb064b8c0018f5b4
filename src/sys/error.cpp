#include "sys/error.h"
#include "sys/syscalls.h"

#include <unistd.h>

#include <cstdlib>
#include <cstring>
#include <string>

namespace doorbell::sys {

void throw_errno(std::string_view what) {
  throw_errno(errno, what);
}

void throw_errno(int error, std::string_view what) {
  throw std::system_error(error, std::generic_category(), std::string(what));
}

void write_stderr(const char* message) noexcept {
  const int saved_errno = errno;
  size_t left = std::strlen(message);
  while (left > 0) {
    ssize_t n = sys::write(STDERR_FILENO, message, left);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) break;
    message += n;
    left -= static_cast<size_t>(n);
  }
  errno = saved_errno;
}

void fatal(const char* what, int error) noexcept {
  write_stderr("doorbell: fatal: ");
  write_stderr(what);
  if (error != 0) {
    // Format the number by hand: snprintf is not async-signal-safe.
    char digits[16];
    int i = sizeof digits - 1;
    digits[i] = '\0';
    unsigned value = static_cast<unsigned>(error);
    do {
      digits[--i] = static_cast<char>('0' + value % 10);
      value /= 10;
    } while (value != 0 && i > 0);
    write_stderr(": errno ");
    write_stderr(&digits[i]);
  }
  write_stderr("\n");
  std::abort();
}

}  // namespace doorbell::sys
