#include "tests/support/cgroup_probe.h"

#include <signal.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <sstream>

namespace doorbell::test {
namespace {

namespace fs = std::filesystem;

// Mount point of the first mount with file system type `type` (and, when
// option is not empty, that super option), from /proc/self/mountinfo.
std::string mount_of(const std::string& type, const std::string& option) {
  std::ifstream in("/proc/self/mountinfo");
  std::string line;
  while (std::getline(in, line)) {
    const auto dash = line.find(" - ");
    if (dash == std::string::npos) continue;
    std::istringstream before(line.substr(0, dash)), after(line.substr(dash + 3));
    std::string id, parent, devno, root, mount_point, fstype, source, options;
    before >> id >> parent >> devno >> root >> mount_point;
    after >> fstype >> source >> options;
    if (fstype != type) continue;
    if (option.empty() || ("," + options + ",").find("," + option + ",") != std::string::npos)
      return mount_point;
  }
  return "";
}

// This process's cgroup in the hierarchy whose /proc/self/cgroup line has
// the controller list `controllers` ("" for v2) or contains `controller`.
std::string own_path(bool v2, const std::string& controller) {
  std::ifstream in("/proc/self/cgroup");
  std::string line;
  while (std::getline(in, line)) {
    const auto a = line.find(':'), b = line.find(':', a + 1);
    if (a == std::string::npos || b == std::string::npos) continue;
    const std::string list = line.substr(a + 1, b - a - 1), path = line.substr(b + 1);
    if (v2 ? (line.substr(0, a) == "0" && list.empty())
           : ("," + list + ",").find("," + controller + ",") != std::string::npos)
      return path == "/" ? "" : path;
  }
  return "";
}

void write_text(const std::string& path, const std::string& text) {
  std::ofstream out(path);
  out << text;
}

}  // namespace

std::string cgroup2_own_dir() {
  const std::string mount = mount_of("cgroup2", "");
  return mount.empty() ? "" : mount + own_path(true, "");
}

bool cgroup2_freezer_usable(std::string* why) {
  const std::string dir = cgroup2_own_dir();
  if (dir.empty()) {
    if (why) *why = "no cgroup2 file system mounted";
    return false;
  }
  const std::string probe = dir + "/doorbell-probe-" + std::to_string(::getpid());
  if (::mkdir(probe.c_str(), 0755) != 0 && errno != EEXIST) {
    if (why) *why = "mkdir " + probe + ": " + std::strerror(errno);
    return false;
  }
  const bool usable = ::access((probe + "/cgroup.freeze").c_str(), W_OK) == 0;
  ::rmdir(probe.c_str());
  if (!usable && why) *why = "no cgroup.freeze in a new cgroup under " + dir;
  return usable;
}

std::string v1_freezer_own_dir() {
  const std::string mount = mount_of("cgroup", "freezer");
  return mount.empty() ? "" : mount + own_path(false, "freezer");
}

V1FreezerMount::V1FreezerMount() {
  dir_ = v1_freezer_own_dir();
  if (!dir_.empty()) return;
  if (::geteuid() != 0) {
    why_ = "no v1 freezer mounted, and not root to mount one";
    return;
  }
  char pattern[] = "/tmp/doorbell-v1-freezer-XXXXXX";
  if (::mkdtemp(pattern) == nullptr) {
    why_ = std::string("mkdtemp: ") + std::strerror(errno);
    return;
  }
  if (::mount("doorbell-test", pattern, "cgroup", 0, "freezer") != 0) {
    why_ = std::string("mount -t cgroup -o freezer: ") + std::strerror(errno);
    ::rmdir(pattern);
    return;
  }
  mount_point_ = pattern;
  dir_ = v1_freezer_own_dir();  // found through mountinfo, as the code does
  if (dir_.empty()) why_ = "mounted a v1 freezer, yet mountinfo does not list it";
}

V1FreezerMount::~V1FreezerMount() {
  if (mount_point_.empty()) return;
  ::umount2(mount_point_.c_str(), MNT_DETACH);
  ::rmdir(mount_point_.c_str());
}

std::vector<std::string> cgroups_with_prefix(const std::string& prefix) {
  std::vector<std::string> found;
  for (const std::string& parent : {cgroup2_own_dir(), v1_freezer_own_dir()}) {
    if (parent.empty()) continue;
    std::error_code error;
    for (const auto& entry : fs::directory_iterator(parent, error))
      if (entry.is_directory() && entry.path().filename().string().rfind(prefix, 0) == 0)
        found.push_back(entry.path());
  }
  return found;
}

void remove_cgroups_with_prefix(const std::string& prefix) {
  for (const std::string& dir : cgroups_with_prefix(prefix)) {
    if (fs::exists(dir + "/cgroup.freeze")) write_text(dir + "/cgroup.freeze", "0");
    if (fs::exists(dir + "/freezer.state")) write_text(dir + "/freezer.state", "THAWED");
    const std::string parent = fs::path(dir).parent_path();
    for (int attempt = 0; attempt < 200; ++attempt) {
      std::ifstream procs(dir + "/cgroup.procs");
      int pid;
      while (procs >> pid) write_text(parent + "/cgroup.procs", std::to_string(pid));
      if (::rmdir(dir.c_str()) == 0 || errno == ENOENT) break;
      ::usleep(5000);
    }
  }
}

char process_state(int pid) {
  std::ifstream in("/proc/" + std::to_string(pid) + "/stat");
  std::string line;
  if (!std::getline(in, line)) return '\0';
  const auto paren = line.rfind(')');
  return paren == std::string::npos || paren + 2 >= line.size() ? '?' : line[paren + 2];
}

int parent_pid(int pid) {
  std::ifstream in("/proc/" + std::to_string(pid) + "/stat");
  std::string line;
  if (!std::getline(in, line)) return -1;
  const auto paren = line.rfind(')');
  if (paren == std::string::npos) return -1;
  std::istringstream rest(line.substr(paren + 2));
  char state;
  int ppid = -1;
  rest >> state >> ppid;
  return ppid;
}

std::vector<int> children_of(int pid) {
  std::vector<int> children;
  std::error_code error;
  for (const auto& entry : fs::directory_iterator("/proc", error)) {
    const std::string name = entry.path().filename();
    if (name.empty() || name.find_first_not_of("0123456789") != std::string::npos) continue;
    const int candidate = std::atoi(name.c_str());
    if (parent_pid(candidate) == pid) children.push_back(candidate);
  }
  return children;
}

}  // namespace doorbell::test
