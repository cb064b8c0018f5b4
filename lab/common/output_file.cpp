#include "lab/common/output_file.h"

#include <signal.h>

#include "lab/common/signal_scope.h"

#include <fcntl.h>
#include <limits.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <filesystem>
#include <string_view>

namespace doorbell::lab {
namespace {

std::string prefix(const std::string& option, const std::string& path) {
  return option.empty() ? path : option + " " + path;
}

// The directory part of a path ("." for a bare name).
std::string directory_of(const std::string& path) {
  const auto slash = path.rfind('/');
  if (slash == std::string::npos) return ".";
  if (slash == 0) return "/";
  return path.substr(0, slash);
}

// Where the file really goes: a symbolic link's target, else the path.
std::string resolved(const std::string& path) {
  struct stat st {};
  if (::lstat(path.c_str(), &st) == 0 && S_ISLNK(st.st_mode)) {
    char buffer[PATH_MAX];
    if (::realpath(path.c_str(), buffer) != nullptr) return buffer;
  }
  return path;
}

// Makes a temporary file beside `path`; returns its fd and name, or throws.
int make_temp(const std::string& option, const std::string& path, std::string& temp) {
  const std::string dir = directory_of(path);
  temp = (dir == "/" ? std::string() : dir) + "/.doorbell-tmp-XXXXXX";
  if (dir == ".") temp = ".doorbell-tmp-XXXXXX";
  std::string pattern = temp;
  const int fd = ::mkostemp(pattern.data(), O_CLOEXEC);
  if (fd < 0) {
    const int error = errno;
    struct stat st {};
    if (::stat(dir.c_str(), &st) != 0)
      throw OutputFileError(prefix(option, path) + ": the directory " + dir + " does not exist");
    if (!S_ISDIR(st.st_mode))
      throw OutputFileError(prefix(option, path) + ": " + dir + " is not a directory");
    throw OutputFileError(prefix(option, path) + ": cannot create a file in " + dir + ": " +
                          std::strerror(error));
  }
  temp = pattern;
  return fd;
}

bool special_file(const std::string& path) {
  struct stat st {};
  return ::stat(path.c_str(), &st) == 0 && !S_ISREG(st.st_mode) && !S_ISDIR(st.st_mode);
}

void write_all(int fd, std::string_view text, const std::string& path) {
  while (!text.empty()) {
    const ssize_t n = ::write(fd, text.data(), text.size());
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0)
      throw OutputFileError("cannot write " + path + ": " + std::strerror(n < 0 ? errno : ENOSPC));
    text.remove_prefix(static_cast<std::size_t>(n));
  }
}

}  // namespace

void check_output_file(const std::string& option, const std::string& path_given) {
  if (path_given.empty()) throw OutputFileError(prefix(option, "''") + ": an empty file name");
  const std::string path = resolved(path_given);
  struct stat st {};
  if (::stat(path.c_str(), &st) == 0) {
    if (S_ISDIR(st.st_mode))
      throw OutputFileError(prefix(option, path_given) + ": is a directory (give a file name)");
    if (!S_ISREG(st.st_mode)) {
      const int fd = ::open(path.c_str(), O_WRONLY | O_CLOEXEC | O_NONBLOCK | O_NOCTTY);
      if (fd < 0 && errno != ENXIO)  // ENXIO: a FIFO nobody reads yet
        throw OutputFileError(prefix(option, path_given) + ": " + std::strerror(errno));
      if (fd >= 0) ::close(fd);
      return;
    }
  }
  if (!path.empty() && path.back() == '/')
    throw OutputFileError(prefix(option, path_given) + ": names a directory (give a file name)");
  std::string temp;
  const int fd = make_temp(option, path, temp);
  ::close(fd);
  ::unlink(temp.c_str());
}

void ensure_output_directory(const std::string& option, const std::string& path) {
  if (path.empty()) throw OutputFileError(prefix(option, "''") + ": an empty directory name");
  std::error_code ec;
  std::filesystem::create_directories(path, ec);
  struct stat st {};
  if (::stat(path.c_str(), &st) != 0 || !S_ISDIR(st.st_mode))
    throw OutputFileError(prefix(option, path) + ": cannot create the directory" +
                          (ec ? ": " + ec.message() : std::string(": a file is in the way")));
  check_output_file(option, path + "/.doorbell-check");
}

void write_file_atomically(const std::string& path, const std::string& text) {
  write_file_atomically(path, [&text](const std::string& temp) {
    const int fd = ::open(temp.c_str(), O_WRONLY | O_TRUNC | O_CLOEXEC);
    if (fd < 0) throw OutputFileError("cannot write " + temp + ": " + std::strerror(errno));
    try {
      write_all(fd, text, temp);
    } catch (...) {
      ::close(fd);
      throw;
    }
    if (::fsync(fd) != 0 && errno != EINVAL) {
      const int error = errno;
      ::close(fd);
      throw OutputFileError("cannot write " + temp + ": " + std::strerror(error));
    }
    if (::close(fd) != 0)
      throw OutputFileError("cannot write " + temp + ": " + std::strerror(errno));
  });
}

void write_file_atomically(const std::string& path_given,
                           const std::function<void(const std::string& temp_path)>& write) {
  const std::string path = resolved(path_given);
  if (special_file(path)) {
    // A device, FIFO or terminal: in place (a rename would replace it).
    write(path);
    return;
  }
  // Ctrl-C, SIGTERM, SIGHUP and SIGQUIT wait (blocked in this thread) until
  // the file is renamed into place or its temporary removed: a signal whose
  // default action ends the process then ends it with no temporary file
  // left and never a partial file (InterruptBattery.ReportAndGuide).
  const ScopedMask hold(SIG_BLOCK, {SIGINT, SIGTERM, SIGHUP, SIGQUIT});
  std::string temp;
  const int fd = make_temp("", path, temp);
  // Readable like a plain new file (mkstemp makes it 0600).
  ::fchmod(fd, 0644);
  ::close(fd);
  try {
    write(temp);
  } catch (...) {
    ::unlink(temp.c_str());
    throw;
  }
  if (::rename(temp.c_str(), path.c_str()) != 0) {
    const int error = errno;
    ::unlink(temp.c_str());
    throw OutputFileError("cannot write " + path_given + ": " + std::strerror(error));
  }
}

}  // namespace doorbell::lab
