// What every loader of the lab's BPF programs shares (signal_programs.cpp,
// e2e_events.cpp): the exception that says BPF cannot be used here, libbpf's
// messages captured while a skeleton loads, and the one-line reason of a
// failure built from them.
//
// libbpf prints through one process-wide callback (libbpf_set_print). A
// CapturedMessages installs a capturing one for its lifetime and puts the
// previous one back; captures are serialized by a mutex, so one loader at a
// time holds it (another waits). A verifier log runs to pages: it is kept
// (its first 4,096 lines and its last 64), not printed, and reason() picks
// the lines that say what failed.
#pragma once

#include <cstdint>
#include <deque>
#include <mutex>
#include <stdexcept>
#include <string>
#include <vector>

struct bpf_link;
struct bpf_object;
struct bpf_program;

namespace doorbell::lab::trace::bpf {

// BPF cannot be used here; what() says why, in one line.
class BpfUnavailable : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

class CapturedMessages {
 public:
  CapturedMessages();
  ~CapturedMessages();
  CapturedMessages(const CapturedMessages&) = delete;
  CapturedMessages& operator=(const CapturedMessages&) = delete;

  // The line that says what failed: the first naming a failure (with, for a
  // program the verifier refused, the log's line that says why), else the
  // last.
  std::string reason() const;

  // For the callback only.
  void add(std::string line);

 private:
  std::unique_lock<std::mutex> lock_;
  std::vector<std::string> lines_;  // the first 4,096
  std::deque<std::string> tail_;    // then the last 64
};

// "<step> failed: <strerror> (<libbpf's line>)", or for EPERM the
// permission the programs need; one line.
std::string load_failure(const char* step, int error, const CapturedMessages& messages);

// The tracepoint id of syscalls:<event> (tracefs, mounted privately when it
// is not mounted), or -1 with the reason in `why`.
int syscall_event_id(const char* event, std::string& why);

// A perf event for tracepoint `id`, counting nothing, or -1 (errno): a BPF
// program attached to it runs on every CPU (it hangs on the tracepoint, not
// on this CPU).
int open_tracepoint_event(int id);

// `program` attached to a perf event of tracepoint `id` (the link owns the
// event), or nullptr with errno saying why (the event closed).
bpf_link* attach_to_tracepoint(bpf_program* program, int id);

// What the kernel's run-time statistics say of one loaded program: how many
// times it ran and for how long in all, since the statistics were turned on
// (RunTimeStatistics) and it was loaded. The time of a run includes the
// statistics' own clock reads, the same for every program.
struct ProgramCost {
  std::string program;  // its name in the object (libbpf's, not cut to 15 characters)
  uint64_t runs = 0;
  uint64_t run_ns = 0;

  double ns_per_run() const noexcept {
    return runs ? static_cast<double>(run_ns) / static_cast<double>(runs) : 0.0;
  }
};

// The costs of the programs of `object` that are loaded, in load order.
std::vector<ProgramCost> program_costs(const bpf_object* object);

// Keeps the kernel's run-time statistics of every BPF program on while it
// lives (BPF_ENABLE_STATS: each run is counted and timed, at the price of
// two clock reads a run). The kernel counts its holders: the statistics go
// off when the last holder closes, unless kernel.bpf_stats_enabled keeps
// them on; nothing is left changed, whatever ends this process. Throws
// BpfUnavailable with the reason (a kernel before 5.8, no CAP_SYS_ADMIN).
class RunTimeStatistics {
 public:
  RunTimeStatistics();
  ~RunTimeStatistics();
  RunTimeStatistics(const RunTimeStatistics&) = delete;
  RunTimeStatistics& operator=(const RunTimeStatistics&) = delete;

 private:
  int fd_ = -1;
};

// Throws BpfUnavailable when this kernel has no BTF
// (/sys/kernel/btf/vmlinux): CO-RE and tp_btf programs need it.
void require_kernel_btf();

}  // namespace doorbell::lab::trace::bpf
