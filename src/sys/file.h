// Reading a small file whole (a /proc or cgroupfs file) through the seam
// (open, read, close: sys/syscalls.h), without iostreams, which would hide
// the error behind a stream state.
#pragma once

#include <source_location>
#include <string>

namespace doorbell::sys {

// Reads all of `path` into out. Returns 0, or -errno of the open(2) or
// read(2) that failed (EINTR retried). Throws std::bad_alloc only.
int read_file(const std::string& path, std::string& out,
              const std::source_location& where = std::source_location::current());

}  // namespace doorbell::sys
