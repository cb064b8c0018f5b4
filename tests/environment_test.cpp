// The environment block says what makes this machine's kernel entries cheap
// or dear: the hypervisor, PTI and a measured syscall.
#include <gtest/gtest.h>

#include <fstream>
#include <string>

#include "lab/harness/environment.h"

namespace {

using doorbell::lab::Environment;

TEST(Environment, NamesTheHypervisorAsTheCpuReportsIt) {
  const Environment e = doorbell::lab::probe_environment();
  std::ifstream cpuinfo("/proc/cpuinfo");
  const std::string text((std::istreambuf_iterator<char>(cpuinfo)),
                         std::istreambuf_iterator<char>());
  const bool hypervisor_flag = text.find(" hypervisor") != std::string::npos;
  if (hypervisor_flag)
    EXPECT_NE(e.hypervisor, "none");
  else
    EXPECT_EQ(e.hypervisor, "none");
  EXPECT_FALSE(e.pti.empty());
  EXPECT_FALSE(e.load_average.empty());
}

TEST(Environment, MeasuresASyscallAboveTheVdsoClock) {
  // A real kernel entry costs more than a vDSO clock read; a measurement that
  // let the compiler drop the calls would read ~0.
  const double ns = doorbell::lab::measure_syscall_ns(5, 500);
  EXPECT_GT(ns, 20.0);
}

TEST(Environment, SummaryClassifiesTheKernelEntryCost) {
  Environment e;
  e.hypervisor = "KVM";
  e.clocksource = "kvm-clock";
  e.pti = "on";
  e.syscall_ns = 1050;
  std::string s = doorbell::lab::summarize_machine(e);
  EXPECT_NE(s.find("KVM guest (kvm-clock)"), std::string::npos) << s;
  EXPECT_NE(s.find("PTI on"), std::string::npos) << s;
  EXPECT_NE(s.find("1.05 µs"), std::string::npos) << s;
  EXPECT_NE(s.find("dear"), std::string::npos) << s;
  e.hypervisor = "none";
  e.pti = "not affected";
  e.syscall_ns = 90;
  s = doorbell::lab::summarize_machine(e);
  EXPECT_NE(s.find("bare metal"), std::string::npos) << s;
  EXPECT_NE(s.find("cheap"), std::string::npos) << s;
}

}  // namespace
