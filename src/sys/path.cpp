#include "sys/path.h"
#include "sys/syscalls.h"

#include <unistd.h>

#include <cstdlib>

namespace doorbell::sys {

std::optional<std::string> find_program(const std::string& program) {
  if (program.empty()) return std::nullopt;
  if (program.find('/') != std::string::npos)
    return sys::access(program.c_str(), X_OK) == 0 ? std::optional<std::string>(program)
                                                   : std::nullopt;
  const char* path = std::getenv("PATH");
  const std::string list = path ? path : "/usr/local/bin:/usr/bin:/bin";
  std::size_t start = 0;
  while (start <= list.size()) {
    std::size_t end = list.find(':', start);
    if (end == std::string::npos) end = list.size();
    std::string dir = list.substr(start, end - start);
    if (dir.empty()) dir.assign(1, '.');
    const std::string candidate = dir + "/" + program;
    if (sys::access(candidate.c_str(), X_OK) == 0) return candidate;
    start = end + 1;
  }
  return std::nullopt;
}

}  // namespace doorbell::sys
