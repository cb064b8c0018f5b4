#include "tests/support/threads.h"

#include <dirent.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <cstdlib>
#include <string>
#include <thread>

namespace doorbell::test {

std::set<pid_t> thread_ids() {
  std::set<pid_t> ids;
  DIR* dir = ::opendir("/proc/self/task");
  if (dir == nullptr) return ids;
  while (const dirent* entry = ::readdir(dir))
    if (entry->d_name[0] != '.') ids.insert(static_cast<pid_t>(std::atoi(entry->d_name)));
  ::closedir(dir);
  return ids;
}

std::set<pid_t> threads_settled_to(const std::set<pid_t>& expected,
                                   std::chrono::milliseconds limit) {
  const auto until = std::chrono::steady_clock::now() + limit;
  std::set<pid_t> now = thread_ids();
  while (now != expected && std::chrono::steady_clock::now() < until) {
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
    now = thread_ids();
  }
  return now;
}

void start_runtime_threads() {
  pid_t helper = 0;
  std::thread([&helper] { helper = static_cast<pid_t>(::syscall(SYS_gettid)); }).join();
  std::set<pid_t> expected = thread_ids();
  expected.erase(helper);
  threads_settled_to(expected);
}

}  // namespace doorbell::test
