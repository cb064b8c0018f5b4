#include "doorbell/cgroup_freezer.h"

#include <fcntl.h>
#include <signal.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <sstream>
#include <stdexcept>
#include <system_error>
#include <utility>

#include "sys/error.h"
#include "sys/file.h"
#include "sys/syscalls.h"

namespace doorbell {
namespace {

bool valid_name(const std::string& name) {
  if (name.empty() || name.size() > 200 || name == "." || name == "..") return false;
  for (char c : name) {
    const bool ok = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
                    c == '_' || c == '-' || c == '.';
    if (!ok) return false;
  }
  return true;
}

// Writes text to an open control file with one write(2). Returns 0 or -errno.
int write_all(int fd, const char* text) noexcept {
  const size_t length = std::strlen(text);
  for (;;) {
    const ssize_t n = sys::pwrite(fd, text, length, 0);
    if (n >= 0) return 0;
    if (errno != EINTR) return -errno;
  }
}

int write_file(const std::string& path, const std::string& text) {
  const int fd = sys::open(path.c_str(), O_WRONLY | O_CLOEXEC);
  if (fd < 0) return -errno;
  const int result = write_all(fd, text.c_str());
  sys::close(fd);
  return result;
}

// Reads a small control file from offset 0 into buffer; returns the length
// or -errno.
ssize_t read_small(int fd, char* buffer, size_t size) noexcept {
  for (;;) {
    const ssize_t n = sys::pread(fd, buffer, size - 1, 0);
    if (n >= 0) {
      buffer[n] = '\0';
      return n;
    }
    if (errno != EINTR) return -errno;
  }
}

// Mount points from /proc/self/mountinfo: the cgroup2 mount, and the cgroup
// (v1) mount whose super options name the freezer controller.
struct Mounts {
  std::string v2;
  std::string v1_freezer;
};

// Throws std::system_error when the file cannot be read.
std::string read_or_throw(const std::string& path) {
  std::string text;
  if (const int rc = sys::read_file(path, text); rc != 0) sys::throw_errno(-rc, "read " + path);
  return text;
}

Mounts find_mounts() {
  Mounts mounts;
  std::istringstream in(read_or_throw("/proc/self/mountinfo"));
  std::string line;
  while (std::getline(in, line)) {
    // id parent major:minor root mountpoint options [optional...] - fstype source superopts
    std::istringstream fields(line);
    std::string id, parent, devno, root, mount_point, options;
    fields >> id >> parent >> devno >> root >> mount_point >> options;
    std::string word;
    while (fields >> word && word != "-") {
    }
    std::string fstype, source, super_options;
    fields >> fstype >> source >> super_options;
    if (fstype == "cgroup2" && mounts.v2.empty()) mounts.v2 = mount_point;
    if (fstype == "cgroup" && mounts.v1_freezer.empty()) {
      std::istringstream opts(super_options);
      std::string opt;
      while (std::getline(opts, opt, ','))
        if (opt == "freezer") mounts.v1_freezer = mount_point;
    }
  }
  return mounts;
}

// The caller's cgroup path in a hierarchy: "0::/path" for v2, or the line
// whose controller list contains "freezer" for v1.
std::string own_cgroup(bool v2) {
  std::istringstream in(read_or_throw("/proc/self/cgroup"));
  std::string line;
  while (std::getline(in, line)) {
    const auto first = line.find(':');
    const auto second = line.find(':', first + 1);
    if (first == std::string::npos || second == std::string::npos) continue;
    const std::string controllers = line.substr(first + 1, second - first - 1);
    const std::string path = line.substr(second + 1);
    if (v2 && line.compare(0, first, "0") == 0 && controllers.empty()) return path;
    if (!v2) {
      std::istringstream list(controllers);
      std::string controller;
      while (std::getline(list, controller, ','))
        if (controller == "freezer") return path;
    }
  }
  return "/";
}

std::string join(const std::string& mount, const std::string& relative) {
  if (relative.empty() || relative == "/") return mount;
  return mount + relative;
}

// Empty when path is a directory, else why not ("does not exist", or the
// error of stat(2) that kept us from knowing).
std::string not_a_directory(const std::string& path, const char* what) {
  struct stat st;
  if (sys::stat(path.c_str(), &st) == 0)
    return S_ISDIR(st.st_mode) ? "" : std::string(what) + " " + path + " is not a directory";
  if (errno == ENOENT || errno == ENOTDIR)
    return std::string(what) + " " + path + " does not exist";
  return "cannot stat " + std::string(what) + " " + path + ": " + std::strerror(errno);
}

}  // namespace

const char* freezer_version_name(FreezerVersion version) noexcept {
  return version == FreezerVersion::v2 ? "cgroup-v2" : "cgroup-v1";
}

FreezerAvailability probe_freezers(const FreezerOptions& options) {
  FreezerAvailability result;
  const Mounts mounts = find_mounts();
  if (options.preference != FreezerPreference::v1_only) {
    std::string parent = options.v2_parent;
    if (parent.empty() && !mounts.v2.empty()) parent = join(mounts.v2, own_cgroup(true));
    if (parent.empty()) {
      result.v2_why_not = "no cgroup2 file system is mounted";
    } else if (std::string why = not_a_directory(parent, "cgroup v2 directory"); !why.empty()) {
      result.v2_why_not = why;
    } else if (sys::access((parent + "/cgroup.procs").c_str(), W_OK) != 0) {
      result.v2_why_not = "cannot write " + parent + "/cgroup.procs: " + std::strerror(errno);
    } else if (parent == mounts.v2 || options.v2_parent.size() > 0 ||
               sys::access((parent + "/cgroup.freeze").c_str(), F_OK) == 0 ||
               sys::access((parent + "/cgroup.events").c_str(), F_OK) == 0) {
      // The root cgroup has no cgroup.freeze of its own, but its children do
      // (Linux 5.2 and later); create() checks the child.
      result.v2_parent = parent;
    } else {
      result.v2_why_not = "the kernel has no cgroup v2 freezer (Linux 5.2 or later needed)";
    }
  } else {
    result.v2_why_not = "v1 was requested";
  }
  if (options.preference != FreezerPreference::v2_only) {
    std::string parent = options.v1_parent;
    if (parent.empty() && !mounts.v1_freezer.empty())
      parent = join(mounts.v1_freezer, own_cgroup(false));
    if (parent.empty()) {
      result.v1_why_not = "the v1 freezer controller is not mounted";
    } else if (std::string why = not_a_directory(parent, "v1 freezer directory"); !why.empty()) {
      result.v1_why_not = why;
    } else if (sys::access((parent + "/cgroup.procs").c_str(), W_OK) != 0) {
      result.v1_why_not = "cannot write " + parent + "/cgroup.procs: " + std::strerror(errno);
    } else {
      result.v1_parent = parent;
    }
  } else {
    result.v1_why_not = "v2 was requested";
  }
  return result;
}

CgroupFreezer CgroupFreezer::create(const std::string& name, const FreezerOptions& options) {
  if (!valid_name(name))
    throw std::invalid_argument("cgroup name '" + name + "' must be [A-Za-z0-9_.-]+");
  const FreezerAvailability where = probe_freezers(options);
  CgroupFreezer cgroup;
  std::string v2_failure = where.v2_why_not;
  if (!where.v2_parent.empty()) {
    const std::string path = where.v2_parent + "/" + name;
    if (sys::mkdir(path.c_str(), 0755) != 0) {
      if (errno == EEXIST) sys::throw_errno("mkdir " + path);
      v2_failure = "mkdir " + path + ": " + std::strerror(errno);
    } else {
      const int control = sys::open((path + "/cgroup.freeze").c_str(), O_RDWR | O_CLOEXEC);
      int error = control < 0 ? errno : 0;
      const int events = sys::open((path + "/cgroup.events").c_str(), O_RDONLY | O_CLOEXEC);
      if (events < 0 && error == 0) error = errno;
      if (control >= 0 && events >= 0) {
        cgroup.version_ = FreezerVersion::v2;
        cgroup.path_ = path;
        cgroup.parent_ = where.v2_parent;
        cgroup.control_fd_ = control;
        cgroup.events_fd_ = events;
        return cgroup;
      }
      if (control >= 0) sys::close(control);
      if (events >= 0) sys::close(events);
      sys::rmdir(path.c_str());
      // Missing files mean a kernel without the v2 freezer: fall back. Any
      // other failure (EMFILE, ENOMEM) is the error, not "no freezer".
      if (error != ENOENT)
        sys::throw_errno(error, "open " + path + "/cgroup.freeze or cgroup.events");
      v2_failure = "no cgroup.freeze in " + path + " (kernel before 5.2?)";
    }
  }
  if (!where.v1_parent.empty()) {
    const std::string path = where.v1_parent + "/" + name;
    if (sys::mkdir(path.c_str(), 0755) != 0) sys::throw_errno("mkdir " + path);
    const int control = sys::open((path + "/freezer.state").c_str(), O_RDWR | O_CLOEXEC);
    if (control < 0) {
      const int error = errno;
      sys::rmdir(path.c_str());
      sys::throw_errno(error, "open " + path + "/freezer.state");
    }
    cgroup.version_ = FreezerVersion::v1;
    cgroup.path_ = path;
    cgroup.parent_ = where.v1_parent;
    cgroup.control_fd_ = control;
    // A fall-back only when v2 was allowed: v1 asked for is no fall-back.
    if (options.preference != FreezerPreference::v1_only)
      cgroup.fallback_reason_ = "cgroup v2 freezer unusable: " + v2_failure;
    return cgroup;
  }
  throw std::system_error(ENOTSUP, std::generic_category(),
                          "no cgroup freezer: v2: " + v2_failure + "; v1: " + where.v1_why_not);
}

CgroupFreezer::CgroupFreezer(CgroupFreezer&& other) noexcept
    : version_(other.version_),
      path_(std::move(other.path_)),
      parent_(std::move(other.parent_)),
      fallback_reason_(std::move(other.fallback_reason_)),
      control_fd_(std::exchange(other.control_fd_, -1)),
      events_fd_(std::exchange(other.events_fd_, -1)),
      owner_(other.owner_) {
  other.path_.clear();
}

CgroupFreezer& CgroupFreezer::operator=(CgroupFreezer&& other) noexcept {
  if (this != &other) {
    try {
      remove();
    } catch (const std::exception& e) {
      sys::write_stderr("doorbell: warning: ");
      sys::write_stderr(e.what());
      sys::write_stderr("\n");
    }
    version_ = other.version_;
    path_ = std::move(other.path_);
    other.path_.clear();
    parent_ = std::move(other.parent_);
    fallback_reason_ = std::move(other.fallback_reason_);
    control_fd_ = std::exchange(other.control_fd_, -1);
    events_fd_ = std::exchange(other.events_fd_, -1);
    owner_ = other.owner_;
  }
  return *this;
}

CgroupFreezer::~CgroupFreezer() {
  try {
    remove();
  } catch (const std::exception& e) {
    sys::write_stderr("doorbell: warning: ");
    sys::write_stderr(e.what());
    sys::write_stderr("\n");
  }
}

void CgroupFreezer::add(pid_t pid) {
  // cgroup.procs reads 0 as "the writer": add(0) would move the caller.
  if (pid <= 0)
    throw std::invalid_argument("CgroupFreezer::add: pid " + std::to_string(pid) +
                                " refused (a process ID is positive; 0 would move the caller)");
  const int result = write_file(path_ + "/cgroup.procs", std::to_string(pid));
  if (result < 0)
    sys::throw_errno(-result, "add pid " + std::to_string(pid) + " to " + path_ + "/cgroup.procs");
}

int CgroupFreezer::freeze() noexcept {
  if (control_fd_ < 0) return -EBADF;
  return write_all(control_fd_, version_ == FreezerVersion::v2 ? "1" : "FROZEN");
}

int CgroupFreezer::thaw() noexcept {
  if (control_fd_ < 0) return -EBADF;
  return write_all(control_fd_, version_ == FreezerVersion::v2 ? "0" : "THAWED");
}

bool CgroupFreezer::is_frozen() noexcept {
  char buffer[256];
  if (version_ == FreezerVersion::v2) {
    if (events_fd_ < 0 || read_small(events_fd_, buffer, sizeof buffer) < 0) return false;
    return std::strstr(buffer, "frozen 1") != nullptr;
  }
  // Reading freezer.state is what moves a v1 cgroup from FREEZING to FROZEN
  // (the kernel checks every task on read).
  if (control_fd_ < 0 || read_small(control_fd_, buffer, sizeof buffer) < 0) return false;
  return std::strncmp(buffer, "FROZEN", 6) == 0;
}

int CgroupFreezer::kill_all() noexcept {
  if (control_fd_ < 0 || path_.empty()) return -EBADF;
  if (version_ == FreezerVersion::v2) {
    // cgroup.kill: the kernel kills every task, and forks racing with it.
    const int result = write_file(path_ + "/cgroup.kill", "1");
    if (result != -ENOENT) {
      thaw();
      return result;
    }
  }
  if (const int result = freeze(); result < 0) return result;
  for (int attempt = 0; attempt < 1000 && !is_frozen(); ++attempt) sys::usleep(1000);
  // Frozen (or as good as it gets after ~1 s): nothing inside can fork or
  // exit, so every PID listed is a live task of this cgroup.
  int result = 0;
  try {
    for (pid_t pid : processes())
      if (sys::kill(pid, SIGKILL) != 0 && errno != ESRCH) result = -errno;
  } catch (const std::system_error& e) {
    result = -e.code().value();
  } catch (...) {
    result = -ENOMEM;
  }
  thaw();
  return result;
}

std::vector<pid_t> CgroupFreezer::processes() const {
  std::vector<pid_t> pids;
  if (path_.empty()) return pids;
  std::istringstream in(read_or_throw(path_ + "/cgroup.procs"));
  pid_t pid;
  while (in >> pid) pids.push_back(pid);
  return pids;
}

void CgroupFreezer::remove() {
  if (path_.empty()) return;
  if (owner_ != ::getpid()) {
    // A forked child's copy (a destructor run in the child): the cgroup is
    // the parent's. Close the child's descriptors and leave it alone.
    if (control_fd_ >= 0) sys::close(control_fd_);
    if (events_fd_ >= 0) sys::close(events_fd_);
    control_fd_ = events_fd_ = -1;
    path_.clear();
    return;
  }
  thaw();
  // Anything still inside goes back to the parent, thawed: rmdir fails on a
  // populated cgroup, and we never leave a process frozen.
  int error = 0;
  for (int attempt = 0; attempt < 100; ++attempt) {
    std::vector<pid_t> inside;
    try {
      inside = processes();
    } catch (const std::system_error&) {
    }
    for (pid_t pid : inside) write_file(parent_ + "/cgroup.procs", std::to_string(pid));
    if (sys::rmdir(path_.c_str()) == 0 || errno == ENOENT) {
      error = 0;
      break;
    }
    error = errno;
    // EBUSY: exiting tasks leave the cgroup asynchronously; ENOMEM: the
    // kernel may find the memory on a later attempt.
    if (error != EBUSY && error != ENOMEM) break;
    sys::usleep(1000);
  }
  // Done with it either way: the descriptors are closed and the object
  // forgets the cgroup, so that neither the destructor nor an owner that
  // calls remove() again repeats the ~100 ms of attempts. A directory that
  // could not be removed is named in the exception and left to the caller
  // (the partition scheduler's guardian tries again when it ends).
  if (control_fd_ >= 0) sys::close(control_fd_);
  if (events_fd_ >= 0) sys::close(events_fd_);
  control_fd_ = events_fd_ = -1;
  const std::string path = std::move(path_);
  path_.clear();
  if (error != 0) sys::throw_errno(error, "rmdir " + path);
}

FreezerKeeper::FreezerKeeper(const std::string& name, const FreezerOptions& options) {
  FreezerOptions v1 = options;
  v1.preference = FreezerPreference::v1_only;
  cgroup_.push_back(CgroupFreezer::create(name, v1));
  const int result = cgroup_.back().freeze();
  if (result < 0) sys::throw_errno(-result, "freeze " + cgroup_.back().path());
}

const std::string& FreezerKeeper::path() const noexcept {
  static const std::string empty;
  return cgroup_.empty() ? empty : cgroup_.front().path();
}

}  // namespace doorbell
