// The machine a run was measured on. Every result file carries it, because an
// absolute time means nothing without its machine.
#pragma once

#include <string>
#include <vector>

namespace doorbell::lab {

struct Environment {
  std::string hostname;
  std::string kernel;          // uname -r
  std::string kernel_version;  // uname -v
  std::string machine;         // uname -m
  std::string cpu_model;
  int cpus_online = 0;
  int cpus_allowed = 0;
  std::string virtualization;  // "none", or the hypervisor's name ("KVM", ...)
  // What makes kernel entries cheap or dear on this machine. Two 2-vCPU
  // guests can differ five-fold in the cost of a syscall (a paravirtualised
  // guest with PTI on pays ~1 µs, another ~0.19 µs), which moves every ratio
  // that has a syscall or a signal in it.
  std::string hypervisor;  // from CPUID leaf 0x40000000: "KVM", "Microsoft Hyper-V", ..., or "none"
  std::string pti;         // page-table isolation: "on", "off", "not affected" (from .../meltdown)
  // getppid through syscall(2) at start-up: the least of kSyscallProbes
  // probes (each the median of its batch means) a few ms apart. One probe
  // moved by half between two runs a minute apart on one VM (648 vs 424 ns)
  // while the ladder's getpid row held; interference only adds, so the least
  // is the machine's. The report compares machines by the ladder's
  // ladder/syscall_getpid row where both ran, by this otherwise.
  double syscall_ns = 0;
  std::vector<double> syscall_ns_probes;  // every probe, in order: the spread
  std::string
      machine_summary;  // one line: hypervisor, clocksource, PTI, syscall cost and its class
  std::string clocksource;
  std::vector<std::string> signal_cost_features;  // xsave, xsaveopt, avx, avx2, avx512f ... present
  long min_signal_stack = 0;  // getauxval(AT_MINSIGSTKSZ): the kernel's signal frame size, bytes
  std::string mitigations;    // "spectre_v2: ...; meltdown: ..." from /sys/.../vulnerabilities
  std::string preemption;     // from uname -v (PREEMPT, PREEMPT_DYNAMIC, PREEMPT_RT)
  std::string load_average;   // /proc/loadavg when the run started
  std::string load_average_after;  // ... and when it ended (set by the runner)
  bool root = false;
  bool tsc_invariant = false;
  double tsc_ghz = 0.0;
  std::string interval_clock;  // "tsc" or "monotonic"
  double monotonic_read_ns = 0.0;
  double tsc_read_ns = 0.0;
  std::string compiler;
  std::string build_type;
  std::string timestamp_utc;
};

Environment probe_environment();

// The cost of one getppid(2) through syscall(2): the median over `batches`
// batches of the mean over `calls` calls, in nanoseconds (CLOCK_MONOTONIC).
double measure_syscall_ns(int batches = 15, int calls = 2000);

// How many times probe_environment() measures it (measure_syscall_ns with its
// defaults, 10 ms apart).
inline constexpr int kSyscallProbes = 5;

// "KVM guest (kvm-clock), PTI on, syscall 1.02 µs: a dear kernel entry ...".
std::string summarize_machine(const Environment& environment);

}  // namespace doorbell::lab
