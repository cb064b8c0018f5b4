#include "lab/report/gnuplot.h"

#include <fcntl.h>
#include <unistd.h>

#include <signal.h>
#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <system_error>

#include <fmt/format.h>

#include "doorbell/child_process.h"

namespace doorbell::report {
namespace {

namespace fs = std::filesystem;

// A descriptor closed on scope exit.
class Fd {
 public:
  explicit Fd(int fd) noexcept : fd_(fd) {}
  Fd(const Fd&) = delete;
  Fd& operator=(const Fd&) = delete;
  ~Fd() {
    if (fd_ >= 0) ::close(fd_);
  }
  int get() const noexcept { return fd_; }

 private:
  int fd_;
};

std::string read_file(const fs::path& path) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream content;
  if (in) content << in.rdbuf();
  return content.str();
}

enum class Outcome { drawn, failed, no_gnuplot };

// Runs gnuplot on one plot's script in dir.
Outcome render_one(Plot& p, const fs::path& dir, const GnuplotOptions& options) {
  const fs::path script = dir / (p.file + ".gp");
  {
    std::ofstream out(script);
    out << gnuplot_script(p, (dir / p.file).string());
  }
  const fs::path log = dir / (p.file + ".log");
  Fd devnull(::open("/dev/null", O_RDONLY | O_CLOEXEC));
  Fd log_fd(::open(log.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644));
  if (devnull.get() < 0 || log_fd.get() < 0)
    throw std::system_error(errno, std::generic_category(), "cannot open " + log.string());
  SpawnOptions spawn;
  spawn.stdin_fd = devnull.get();
  spawn.stdout_fd = log_fd.get();
  spawn.stderr_fd = log_fd.get();
  std::optional<ChildProcess> child;
  try {
    child.emplace(ChildProcess::spawn({options.gnuplot, script.string()}, spawn));
  } catch (const std::system_error& e) {
    if (e.code() == std::errc::no_such_file_or_directory) return Outcome::no_gnuplot;
    p.error = std::string("cannot start gnuplot: ") + std::strerror(e.code().value());
    return Outcome::failed;
  }
  std::optional<ExitStatus> status = child->wait_for(options.timeout);
  if (!status) {
    child->send_signal(SIGKILL);
    child->wait();
    p.error =
        fmt::format("gnuplot did not finish within {} ms and was killed", options.timeout.count());
    return Outcome::failed;
  }
  p.svg = read_file(dir / p.file);
  if (!status->success() || p.svg.find("<svg") == std::string::npos) {
    std::string m = read_file(log);
    while (!m.empty() && (m.back() == '\n' || m.back() == ' ')) m.pop_back();
    p.error = "gnuplot failed: " + m;
    p.svg.clear();
    return Outcome::failed;
  }
  return Outcome::drawn;
}

}  // namespace

bool render_plots(std::vector<Plot>& plots, const GnuplotOptions& options) {
  const char* tmp = std::getenv("TMPDIR");
  std::string pattern = std::string(tmp && *tmp ? tmp : "/tmp") + "/doorbell-report-XXXXXX";
  if (!::mkdtemp(pattern.data()))
    throw std::system_error(errno, std::generic_category(), "mkdtemp");
  const fs::path dir(pattern);
  struct RemoveDir {
    const fs::path& dir;
    ~RemoveDir() {
      std::error_code ec;
      fs::remove_all(dir, ec);
    }
  } remove_dir{dir};

  for (auto& p : plots)
    if (render_one(p, dir, options) == Outcome::no_gnuplot) return false;
  if (!options.plots_dir.empty()) {
    std::error_code ec;
    fs::create_directories(options.plots_dir, ec);
    if (ec) throw std::system_error(ec, "cannot create " + options.plots_dir);
    for (auto& p : plots) {
      if (!p.svg.empty())
        fs::copy_file(dir / p.file, fs::path(options.plots_dir) / p.file,
                      fs::copy_options::overwrite_existing);
      fs::copy_file(dir / (p.file + ".gp"), fs::path(options.plots_dir) / (p.file + ".gp"),
                    fs::copy_options::overwrite_existing);
    }
  }
  return true;
}

}  // namespace doorbell::report
