#include "lab/harness/environment.h"

#include <dirent.h>
#include <sys/auxv.h>
#include <sys/utsname.h>
#include <unistd.h>

#include <algorithm>
#include <ctime>
#include <fstream>
#include <sstream>

#include "lab/harness/clock.h"
#include "lab/harness/scenario.h"

#ifndef AT_MINSIGSTKSZ
#define AT_MINSIGSTKSZ 51
#endif

namespace doorbell::lab {
namespace {

std::string read_first_line(const std::string& path) {
  std::ifstream in(path);
  std::string line;
  std::getline(in, line);
  return line;
}

std::string cpuinfo_field(const std::string& key) {
  std::ifstream in("/proc/cpuinfo");
  std::string line;
  while (std::getline(in, line)) {
    if (line.rfind(key, 0) == 0) {
      auto colon = line.find(':');
      if (colon == std::string::npos) continue;
      auto value = line.substr(colon + 1);
      auto first = value.find_first_not_of(" \t");
      return first == std::string::npos ? std::string() : value.substr(first);
    }
  }
  return {};
}

std::string virtualization() {
  // systemd-detect-virt's first clue: the hypervisor flag, then DMI / device tree.
  const std::string flags = cpuinfo_field("flags");
  if (flags.find(" hypervisor") == std::string::npos) return "none";
  for (const char* path : {"/sys/class/dmi/id/sys_vendor", "/sys/class/dmi/id/product_name"}) {
    std::string vendor = read_first_line(path);
    if (!vendor.empty()) return "yes (" + vendor + ")";
  }
  std::string cmdline = read_first_line("/proc/cmdline");
  if (cmdline.find("firecracker") != std::string::npos ||
      cmdline.find("virtio_mmio") != std::string::npos)
    return "yes (KVM guest, Firecracker-style virtio-mmio)";
  return "yes (hypervisor flag set)";
}

std::string mitigations() {
  const std::string dir = "/sys/devices/system/cpu/vulnerabilities";
  std::vector<std::string> entries;
  if (DIR* d = ::opendir(dir.c_str())) {
    while (const dirent* e = ::readdir(d))
      if (e->d_name[0] != '.') entries.push_back(e->d_name);
    ::closedir(d);
  }
  std::sort(entries.begin(), entries.end());
  std::string out;
  for (const auto& name : entries) {
    if (!out.empty()) out += "; ";
    out += name + ": " + read_first_line(dir + "/" + name);
  }
  return out.empty() ? "unknown (no " + dir + ")" : out;
}

}  // namespace

Environment probe_environment() {
  Environment env;
  char host[256] = {};
  if (::gethostname(host, sizeof host - 1) == 0) env.hostname = host;
  utsname u{};
  if (::uname(&u) == 0) {
    env.kernel = u.release;
    env.kernel_version = u.version;
    env.machine = u.machine;
  }
  env.cpu_model = cpuinfo_field("model name");
  env.cpus_online = static_cast<int>(::sysconf(_SC_NPROCESSORS_ONLN));
  env.cpus_allowed = static_cast<int>(allowed_cpus().size());
  env.virtualization = virtualization();
  env.clocksource =
      read_first_line("/sys/devices/system/clocksource/clocksource0/current_clocksource");
  {
    std::istringstream words(cpuinfo_field("flags"));
    std::string w;
    const std::vector<std::string> wanted = {"fxsr", "xsave", "xsaveopt", "xsavec",   "xsaves",
                                             "avx",  "avx2",  "avx512f",  "amx_tile", "pku"};
    while (words >> w)
      if (std::find(wanted.begin(), wanted.end(), w) != wanted.end())
        env.signal_cost_features.push_back(w);
  }
  env.min_signal_stack = static_cast<long>(::getauxval(AT_MINSIGSTKSZ));
  env.mitigations = mitigations();
  if (env.kernel_version.find("PREEMPT_RT") != std::string::npos)
    env.preemption = "PREEMPT_RT";
  else if (env.kernel_version.find("PREEMPT_DYNAMIC") != std::string::npos)
    env.preemption = "PREEMPT_DYNAMIC";
  else if (env.kernel_version.find("PREEMPT") != std::string::npos)
    env.preemption = "PREEMPT";
  else
    env.preemption = "none (voluntary or server)";
  env.load_average = read_first_line("/proc/loadavg");
  env.root = ::geteuid() == 0;
  const TscCalibration& tsc = tsc_calibration();
  env.tsc_invariant = tsc.invariant;
  env.tsc_ghz = tsc.ticks_per_ns;
  env.interval_clock = std::string(clock_name(IntervalClock::get().kind()));
  env.monotonic_read_ns = clock_read_cost_ns(ClockKind::monotonic);
  env.tsc_read_ns = clock_read_cost_ns(ClockKind::tsc);
#if defined(__clang__)
  env.compiler = "clang " __clang_version__;
#elif defined(__GNUC__)
  env.compiler = "g++ " __VERSION__;
#endif
#if defined(__SANITIZE_ADDRESS__) || defined(__SANITIZE_THREAD__)
  env.build_type = "sanitizer build: timings are not representative";
#elif defined(NDEBUG)
  env.build_type = "release";
#else
  env.build_type = "debug: timings are not representative";
#endif
  std::time_t now = std::time(nullptr);
  char stamp[32];
  std::strftime(stamp, sizeof stamp, "%Y-%m-%dT%H:%M:%SZ", std::gmtime(&now));
  env.timestamp_utc = stamp;
  return env;
}

}  // namespace doorbell::lab
