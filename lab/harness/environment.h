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
  std::string clocksource;
  std::vector<std::string> signal_cost_features;  // xsave, xsaveopt, avx, avx2, avx512f ... present
  long min_signal_stack = 0;  // getauxval(AT_MINSIGSTKSZ): the kernel's signal frame size, bytes
  std::string mitigations;    // "spectre_v2: ...; meltdown: ..." from /sys/.../vulnerabilities
  std::string preemption;     // from uname -v (PREEMPT, PREEMPT_DYNAMIC, PREEMPT_RT)
  std::string load_average;
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

}  // namespace doorbell::lab
