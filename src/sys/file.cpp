#include "sys/file.h"

#include "sys/syscalls.h"

namespace doorbell::sys {

int read_file(const std::string& path, std::string& out, const std::source_location& where) {
  out.clear();
  int fd;
  do fd = sys::open(path.c_str(), O_RDONLY | O_CLOEXEC, 0, where);
  while (fd < 0 && errno == EINTR);
  if (fd < 0) return -errno;
  char buffer[4096];
  for (;;) {
    const ssize_t n = sys::file_read(fd, buffer, sizeof buffer, where);
    if (n > 0) {
      out.append(buffer, static_cast<std::size_t>(n));
      continue;
    }
    if (n < 0 && errno == EINTR) continue;
    const int error = n < 0 ? errno : 0;
    sys::close(fd, where);
    return -error;
  }
}

}  // namespace doorbell::sys
