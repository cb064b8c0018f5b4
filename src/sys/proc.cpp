#include "sys/proc.h"

#include <dirent.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <fstream>
#include <sstream>

#include "sys/error.h"
#include "sys/file.h"
#include "sys/syscalls.h"

namespace doorbell::sys {

std::vector<pid_t> list_threads(pid_t pid) {
  const std::string path = "/proc/" + std::to_string(pid) + "/task";
  DIR* dir = sys::opendir(path.c_str());
  if (dir == nullptr) throw_errno("opendir " + path);
  std::vector<pid_t> tids;
  while (const dirent* entry = ::readdir(dir)) {
    if (entry->d_name[0] < '0' || entry->d_name[0] > '9') continue;
    tids.push_back(static_cast<pid_t>(std::strtol(entry->d_name, nullptr, 10)));
  }
  ::closedir(dir);
  return tids;
}

sigset_t parse_proc_sigmask(const std::string& hex) {
  sigset_t set;
  sigemptyset(&set);
  // The string is a 64-bit mask, most significant nibble first; bit (n-1) is
  // signal n.
  const int digits = static_cast<int>(hex.size());
  for (int i = 0; i < digits; ++i) {
    const char c = hex[digits - 1 - i];
    int nibble = 0;
    if (c >= '0' && c <= '9')
      nibble = c - '0';
    else if (c >= 'a' && c <= 'f')
      nibble = c - 'a' + 10;
    else if (c >= 'A' && c <= 'F')
      nibble = c - 'A' + 10;
    for (int bit = 0; bit < 4; ++bit) {
      if ((nibble & (1 << bit)) == 0) continue;
      const int signo = i * 4 + bit + 1;
      if (signo < NSIG) sigaddset(&set, signo);
    }
  }
  return set;
}

std::optional<ThreadSignalState> read_thread_signal_state(pid_t pid, pid_t tid) {
  const std::string path =
      "/proc/" + std::to_string(pid) + "/task/" + std::to_string(tid) + "/status";
  std::string text;
  if (const int rc = read_file(path, text); rc != 0) {
    // Gone (ENOENT; ESRCH from a read racing the exit): the snapshot's
    // normal case. Anything else (EMFILE, ENOMEM) is not "gone": an error.
    if (rc == -ENOENT || rc == -ESRCH) return std::nullopt;
    throw_errno(-rc, "read " + path);
  }
  std::istringstream in(text);
  ThreadSignalState state{};
  sigemptyset(&state.blocked);
  sigemptyset(&state.pending);
  sigemptyset(&state.shared_pending);
  sigemptyset(&state.ignored);
  sigemptyset(&state.caught);
  std::string line;
  bool saw_blocked = false;
  while (std::getline(in, line)) {
    const auto colon = line.find(':');
    if (colon == std::string::npos) continue;
    const std::string key = line.substr(0, colon);
    std::string value = line.substr(colon + 1);
    const auto first = value.find_first_not_of(" \t");
    value = first == std::string::npos ? std::string() : value.substr(first);
    if (key == "State" && !value.empty())
      state.state = value[0];
    else if (key == "SigBlk") {
      state.blocked = parse_proc_sigmask(value), saw_blocked = true;
      // Bits 31 and 32 (signals 32 and 33) of the 64-bit mask.
      const unsigned long long bits = std::strtoull(value.c_str(), nullptr, 16);
      state.in_glibc_all_blocked_window = (bits & (3ULL << 31)) == (3ULL << 31);
    } else if (key == "SigPnd")
      state.pending = parse_proc_sigmask(value);
    else if (key == "ShdPnd")
      state.shared_pending = parse_proc_sigmask(value);
    else if (key == "SigIgn")
      state.ignored = parse_proc_sigmask(value);
    else if (key == "SigCgt")
      state.caught = parse_proc_sigmask(value);
  }
  if (!saw_blocked) return std::nullopt;
  return state;
}

pid_t current_tid() noexcept {
  return static_cast<pid_t>(::syscall(SYS_gettid));
}

}  // namespace doorbell::sys
