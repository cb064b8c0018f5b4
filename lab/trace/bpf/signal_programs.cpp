#include "lab/trace/bpf/signal_programs.h"

#include <bpf/bpf.h>
#include <bpf/libbpf.h>
#include <fcntl.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <vector>

#include <fmt/format.h>

#include "lab/trace/bpf/loading.h"
#include "signals.skel.h"
#include "sys/tracefs.h"

namespace doorbell::lab::trace::bpf {

SignalPrograms::SignalPrograms(const Options& options) {
  require_kernel_btf();
  CapturedMessages messages;
  // The per-system-call tracepoints where tracefs gives their ids, else the
  // exit of every system call.
  std::string every_call_why = "asked for";
  int wait_id =
      options.every_syscall ? -1 : syscall_event_id("sys_exit_rt_sigtimedwait", every_call_why);
  int read_id = wait_id < 0 ? -1 : syscall_event_id("sys_exit_read", every_call_why);
  int action_id = read_id < 0 ? -1 : syscall_event_id("sys_exit_rt_sigaction", every_call_why);
  if (wait_id >= 0) mounted_tracefs_ = sys::tracefs::tracing_dir().private_mount;
  if (read_id < 0 || action_id < 0) wait_id = read_id = action_id = -1;
  // A refusal of the per-call tracepoints' perf events (not of BPF) falls
  // back to the every-call route, saying so.
  if (!load(options, {wait_id, read_id, action_id}, every_call_why, messages) &&
      !load(options, {-1, -1, -1}, every_call_why, messages))
    throw BpfUnavailable(every_call_why);
}

void SignalPrograms::unload() noexcept {
  ring_buffer__free(ring_);
  ring_ = nullptr;
  for (bpf_link* link : perf_links_) bpf_link__destroy(link);
  perf_links_.clear();
  doorbell_signals__destroy(skeleton_);
  skeleton_ = nullptr;
}

bool SignalPrograms::load(const Options& options, const SyscallEvents& ids, std::string& why,
                          const CapturedMessages& messages) {
  const bool per_call = ids.wait >= 0 && ids.read >= 0 && ids.action >= 0;
  auto give_up = [&](const std::string& reason) {
    unload();
    throw BpfUnavailable(reason);
  };
  skeleton_ = doorbell_signals__open();
  if (skeleton_ == nullptr)
    throw BpfUnavailable(load_failure("opening the embedded BPF programs", errno, messages));
  skeleton_->rodata->only_tgid = static_cast<__u32>(options.only_tgid);
  skeleton_->rodata->slow_ns = options.slow_ns;
  skeleton_->rodata->without_task_from_pid = options.without_task_from_pid;
  const int cpus = libbpf_num_possible_cpus();
  if (cpus > 0) bpf_map__set_max_entries(skeleton_->maps.cpu_current, static_cast<__u32>(cpus));
  skeleton_->rodata->nr_read = SYS_read;
  skeleton_->rodata->nr_rt_sigtimedwait = SYS_rt_sigtimedwait;
  skeleton_->rodata->nr_rt_sigaction = SYS_rt_sigaction;
  for (bpf_program* program :
       {skeleton_->progs.on_exit_rt_sigtimedwait, skeleton_->progs.on_exit_read,
        skeleton_->progs.on_exit_rt_sigaction}) {
    bpf_program__set_autoload(program, per_call);
    bpf_program__set_autoattach(program, false);
  }
  bpf_program__set_autoload(skeleton_->progs.on_sys_exit, !per_call);
  syscall_route_ = per_call ? "system calls through syscalls:sys_exit_rt_sigtimedwait, "
                              "sys_exit_read and sys_exit_rt_sigaction"
                            : "system calls through tp_btf/sys_exit (" + why + ")";
  int error = doorbell_signals__load(skeleton_);
  if (error != 0) give_up(load_failure("loading the BPF programs", -error, messages));
  error = doorbell_signals__attach(skeleton_);
  if (error != 0) give_up(load_failure("attaching the BPF programs", -error, messages));
  if (per_call) {
    const std::pair<bpf_program*, int> calls[] = {
        {skeleton_->progs.on_exit_rt_sigtimedwait, ids.wait},
        {skeleton_->progs.on_exit_read, ids.read},
        {skeleton_->progs.on_exit_rt_sigaction, ids.action}};
    for (const auto& [program, id] : calls) {
      bpf_link* link = attach_to_tracepoint(program, id);
      if (link == nullptr) {
        why = load_failure("attaching to the system-call tracepoints", errno, messages);
        unload();
        return false;  // the caller tries the every-call route
      }
      perf_links_.push_back(link);  // the link owns fd now
    }
  }
  ring_ = ring_buffer__new(bpf_map__fd(skeleton_->maps.slow), on_slow_record, this, nullptr);
  if (ring_ == nullptr) give_up(load_failure("opening the ring buffer", errno, messages));
  const bpf_object_skeleton* s = skeleton_->skeleton;
  attached_ = 0;
  for (int i = 0; i < s->prog_cnt; ++i)
    if (*s->progs[i].link != nullptr) ++attached_;
  attached_ += static_cast<int>(perf_links_.size());
  return true;
}

SignalPrograms::~SignalPrograms() {
  unload();
}

std::string SignalPrograms::verifier_summary() const {
  std::string text;
  bpf_program* program = nullptr;
  bpf_object__for_each_program(program, skeleton_->obj) {
    if (bpf_program__fd(program) < 0) continue;  // not loaded: the other system-call route
    bpf_prog_info info{};
    __u32 length = sizeof info;
    unsigned verified = 0;
    if (bpf_obj_get_info_by_fd(bpf_program__fd(program), &info, &length) == 0)
      verified = info.verified_insns;
    text += fmt::format("{}{} {}", text.empty() ? "" : ", ", bpf_program__name(program), verified);
  }
  return text;
}

std::vector<ProgramCost> SignalPrograms::costs() const {
  return program_costs(skeleton_->obj);
}

void SignalPrograms::for_each_stats(
    const std::function<void(const doorbell_stats_key&, const std::vector<doorbell_stats>&)>& visit)
    const {
  static_assert(sizeof(doorbell_stats) % 8 == 0, "per-CPU values are laid out 8-byte aligned");
  const int fd = bpf_map__fd(skeleton_->maps.stats);
  // Keys first, then values: a hash map walked while it changes may skip a
  // new key, never repeat one; a key skipped now is read at the next interval
  // (its counts are cumulative).
  std::vector<doorbell_stats_key> keys;
  const std::size_t bound = 2 * bpf_map__max_entries(skeleton_->maps.stats);
  doorbell_stats_key key{}, next{};
  const doorbell_stats_key* previous = nullptr;
  while (keys.size() < bound && bpf_map_get_next_key(fd, previous, &next) == 0) {
    keys.push_back(next);
    key = next;
    previous = &key;
  }
  const int cpus = libbpf_num_possible_cpus();
  if (cpus <= 0) return;
  std::vector<doorbell_stats> values(static_cast<std::size_t>(cpus));
  for (const doorbell_stats_key& k : keys)
    if (bpf_map_lookup_elem(fd, &k, values.data()) == 0) visit(k, values);
}

void SignalPrograms::forget(const doorbell_stats_key& key) {
  bpf_map_delete_elem(bpf_map__fd(skeleton_->maps.stats), &key);
}

int SignalPrograms::on_slow_record(void* context, void* data, std::size_t size) {
  auto* self = static_cast<SignalPrograms*>(context);
  if (size < sizeof(doorbell_slow) || self->visiting_ == nullptr) return 0;
  doorbell_slow record;
  std::memcpy(&record, data, sizeof record);
  (*self->visiting_)(record);
  return 0;
}

int SignalPrograms::drain_slow(const std::function<void(const doorbell_slow&)>& visit) {
  visiting_ = &visit;
  const int n = ring_buffer__consume(ring_);
  visiting_ = nullptr;
  return n < 0 ? 0 : n;
}

std::array<uint64_t, DOORBELL_LOSSES> SignalPrograms::losses() const {
  std::array<uint64_t, DOORBELL_LOSSES> total{};
  const int cpus = libbpf_num_possible_cpus();
  if (cpus <= 0) return total;
  std::vector<uint64_t> per_cpu(static_cast<std::size_t>(cpus));
  const int fd = bpf_map__fd(skeleton_->maps.losses);
  for (__u32 i = 0; i < DOORBELL_LOSSES; ++i) {
    if (bpf_map_lookup_elem(fd, &i, per_cpu.data()) != 0) continue;
    for (uint64_t n : per_cpu) total[i] += n;
  }
  return total;
}

}  // namespace doorbell::lab::trace::bpf
