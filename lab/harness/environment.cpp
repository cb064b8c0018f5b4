#include "lab/harness/environment.h"

#include <cpuid.h>
#include <dirent.h>
#include <sys/auxv.h>
#include <sys/syscall.h>
#include <sys/utsname.h>
#include <unistd.h>

#include <algorithm>
#include <cstring>
#include <ctime>
#include <fstream>
#include <sstream>

#include <fmt/format.h>

#include "lab/common/format.h"

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

// The hypervisor's own signature (CPUID leaf 0x40000000, valid when the
// hypervisor bit of leaf 1 is set): what the kernel itself reads to pick its
// paravirtual drivers ("Hypervisor detected: KVM" in the boot log).
std::string hypervisor_from_cpuid() {
#if defined(__x86_64__) || defined(__i386__)
  unsigned a = 0, b = 0, c = 0, d = 0;
  if (!__get_cpuid(1, &a, &b, &c, &d) || !(c & (1u << 31))) return "none";
  __cpuid(0x40000000, a, b, c, d);
  char sig[13] = {};
  std::memcpy(sig, &b, 4);
  std::memcpy(sig + 4, &c, 4);
  std::memcpy(sig + 8, &d, 4);
  const std::string s(sig);
  if (s == "KVMKVMKVM") return "KVM";
  if (s == "Microsoft Hv") return "Microsoft Hyper-V";
  if (s == "VMwareVMware") return "VMware";
  if (s == "XenVMMXenVMM") return "Xen HVM";
  if (s == "TCGTCGTCGTCG") return "QEMU TCG (emulated)";
  if (s == "ACRNACRNACRN") return "ACRN";
  if (s == "bhyve bhyve ") return "bhyve";
  if (s.rfind("VBox", 0) == 0) return "VirtualBox";
  return s.empty() ? "unknown (hypervisor bit set)" : "unknown (" + s + ")";
#else
  const std::string xen = read_first_line("/sys/hypervisor/type");
  return xen.empty() ? "unknown (not x86)" : xen;
#endif
}

std::string page_table_isolation() {
  const std::string meltdown = read_first_line("/sys/devices/system/cpu/vulnerabilities/meltdown");
  if (meltdown.empty()) return "unknown";
  if (meltdown.find("PTI") != std::string::npos) return "on";
  if (meltdown == "Not affected") return "not affected";
  if (meltdown.find("Vulnerable") != std::string::npos) return "off (vulnerable)";
  return meltdown;
}

}  // namespace

double measure_syscall_ns(int batches, int calls) {
  std::vector<double> means;
  for (int b = 0; b < batches; ++b) {
    const uint64_t t0 = monotonic_ns();
    for (int i = 0; i < calls; ++i) (void)::syscall(SYS_getppid);
    means.push_back(static_cast<double>(monotonic_ns() - t0) / calls);
  }
  std::sort(means.begin(), means.end());
  return means.empty() ? 0.0 : means[means.size() / 2];
}

std::string summarize_machine(const Environment& e) {
  std::string where = e.hypervisor == "none" ? "bare metal" : e.hypervisor + " guest";
  if (!e.clocksource.empty()) where += " (" + e.clocksource + ")";
  // Bare metal with PTI off enters the kernel in ~0.1 µs; a guest whose every
  // entry crosses PTI's page-table switch (and, for some, the host) pays 5-10x.
  const char* entry = e.syscall_ns >= 500   ? "a dear kernel entry: syscall- and signal-bound rows "
                                              "read high, ratios against atomics low"
                      : e.syscall_ns >= 250 ? "a kernel entry of middling cost"
                                            : "a cheap kernel entry";
  return fmt::format("{}, PTI {}, syscall {}: {}", where, e.pti, format_duration(e.syscall_ns),
                     entry);
}

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
  env.hypervisor = hypervisor_from_cpuid();
  env.pti = page_table_isolation();
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
  for (int i = 0; i < kSyscallProbes; ++i) {
    if (i > 0) ::usleep(10'000);
    env.syscall_ns_probes.push_back(measure_syscall_ns());
  }
  env.syscall_ns = *std::min_element(env.syscall_ns_probes.begin(), env.syscall_ns_probes.end());
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
  env.machine_summary = summarize_machine(env);
  return env;
}

}  // namespace doorbell::lab
