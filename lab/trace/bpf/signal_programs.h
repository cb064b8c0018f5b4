// The user-space half of `doorbell trace`'s BPF backend: loads the programs
// of signals.bpf.c (embedded in the binary as a libbpf skeleton), attaches
// them, and reads what they aggregate: the per (process, signal) map once per
// interval, and the ring buffer of slow deliveries. See signals.bpf.c for
// what the programs do, docs/trace.md for what the figures mean.
//
// Requirements, each checked with a one-line reason when missing: kernel BTF
// (/sys/kernel/btf/vmlinux, CONFIG_DEBUG_INFO_BTF), permission to load and
// attach BPF tracing programs (root, or CAP_BPF with CAP_PERFMON), and a
// kernel of Linux 6.1 or later (task storage, BTF-typed tracepoints,
// non-preallocated hash maps in tracing programs).
//
// The system-call exits (rt_sigtimedwait, read on a signalfd) are watched
// through the per-call tracepoints syscalls:sys_exit_* where tracefs is
// reachable (sys/tracefs.h's mount policy gives the event ids; the programs
// are attached as perf events): the kernel then skips every other system
// call before any BPF runs. Without tracefs they fall back to tp_btf/sys_exit,
// which runs on every system call's exit (about 35 ns each on the
// development VM); syscall_route() says which.
//
// Lifetime: the constructor loads and attaches; the destructor detaches and
// unloads. The kernel also detaches everything when the process dies, so no
// exit path (SIGKILL included) leaves a program attached. Nothing is pinned
// in /sys/fs/bpf.
//
// Threads: one SignalPrograms is used from one thread at a time. libbpf's
// message callback is process-wide; the constructor installs a capturing one
// while it loads (serialized by a mutex) and puts the previous one back.
// Fork: a child shares the attached programs until it exits or execs; it
// must not destroy its parent's SignalPrograms (it would only close its
// copies of the descriptors).
#pragma once

#include <sys/types.h>

#include <array>
#include <cstdint>
#include <functional>
#include <stdexcept>
#include <string>
#include <vector>

#include "lab/trace/bpf/loading.h"
#include "lab/trace/bpf/signals_abi.h"

struct doorbell_signals;  // the skeleton (signals.skel.h)
struct ring_buffer;       // libbpf
struct bpf_link;

namespace doorbell::lab::trace::bpf {

class SignalPrograms {
 public:
  struct Options {
    pid_t only_tgid = 0;           // 0: every process
    uint64_t slow_ns = 1'000'000;  // deliveries at least this slow go to the ring buffer
    // Watch the system-call exits through tp_btf/sys_exit even where the
    // per-call tracepoints are available (the tests load both routes).
    bool every_syscall = false;
    // Tests only: as on a kernel without bpf_task_from_pid (before 6.2).
    bool without_task_from_pid = false;
  };

  // Loads and attaches every program. Throws BpfUnavailable.
  explicit SignalPrograms(const Options& options);
  ~SignalPrograms();
  SignalPrograms(const SignalPrograms&) = delete;
  SignalPrograms& operator=(const SignalPrograms&) = delete;

  // How many programs are attached (all of them, or the constructor threw).
  int attached() const noexcept { return attached_; }
  // Instructions the verifier processed for each program, in load order
  // (bpf_prog_info.verified_insns; 0 where the kernel does not say).
  std::string verifier_summary() const;
  // What the kernel's run-time statistics say of each loaded program (all
  // zero unless a RunTimeStatistics was held while they ran).
  std::vector<ProgramCost> costs() const;
  // How the system-call exits are watched, in a few words.
  const std::string& syscall_route() const noexcept { return syscall_route_; }
  // Whether tracefs was mounted privately to read the tracepoint ids.
  bool mounted_tracefs() const noexcept { return mounted_tracefs_; }

  // Visits every (process, signal) entry: counts since the load, one copy
  // per possible CPU (the map is per CPU: add them).
  void for_each_stats(const std::function<void(const doorbell_stats_key&,
                                               const std::vector<doorbell_stats>&)>& visit) const;
  // Deletes an entry (its process has exited and its last counts were read).
  void forget(const doorbell_stats_key& key);

  // Consumes the slow-delivery records waiting in the ring buffer; returns
  // how many.
  int drain_slow(const std::function<void(const doorbell_slow&)>& visit);

  // What the programs could not account, by enum doorbell_loss, all CPUs.
  std::array<uint64_t, DOORBELL_LOSSES> losses() const;

 private:
  static int on_slow_record(void* context, void* data, std::size_t size);
  // Opens, loads and attaches the skeleton, on the per-call route when both
  // ids are given. Throws BpfUnavailable; returns false (everything undone,
  // `why` set) when only the per-call tracepoints could not be attached.
  // The tracepoint ids of syscalls:sys_exit_{rt_sigtimedwait,read,rt_sigaction};
  // -1: the every-call route.
  struct SyscallEvents {
    int wait, read, action;
  };
  bool load(const Options& options, const SyscallEvents& ids, std::string& why,
            const CapturedMessages& messages);
  // Frees the ring buffer, the perf links and the skeleton (any of them may
  // be absent).
  void unload() noexcept;

  doorbell_signals* skeleton_ = nullptr;
  ring_buffer* ring_ = nullptr;
  std::vector<bpf_link*> perf_links_;  // the per-system-call tracepoints
  int attached_ = 0;
  std::string syscall_route_;
  bool mounted_tracefs_ = false;
  const std::function<void(const doorbell_slow&)>* visiting_ = nullptr;
};

}  // namespace doorbell::lab::trace::bpf
