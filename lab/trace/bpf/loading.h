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

#include <deque>
#include <mutex>
#include <stdexcept>
#include <string>
#include <vector>

struct bpf_link;
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

// Throws BpfUnavailable when this kernel has no BTF
// (/sys/kernel/btf/vmlinux): CO-RE and tp_btf programs need it.
void require_kernel_btf();

}  // namespace doorbell::lab::trace::bpf
