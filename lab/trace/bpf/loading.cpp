#include "lab/trace/bpf/loading.h"

#include <bpf/bpf.h>
#include <bpf/libbpf.h>
#include <linux/perf_event.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdarg>
#include <cstdio>
#include <cstring>
#include <fstream>

#include <fmt/format.h>

#include "sys/tracefs.h"

namespace doorbell::lab::trace::bpf {
namespace {

// Guarded by g_capture_mutex, which the capture holds for its lifetime.
std::mutex g_capture_mutex;
CapturedMessages* g_captured = nullptr;
libbpf_print_fn_t g_previous = nullptr;

// One message may hold many lines: libbpf prints a program's whole verifier
// log in one, its error at the end. Formatted whole (up to 1 MiB) and split.
int capture_message(enum libbpf_print_level level, const char* format, va_list args) {
  if (level == LIBBPF_DEBUG || g_captured == nullptr) return 0;
  va_list again;
  va_copy(again, args);
  const int size = std::vsnprintf(nullptr, 0, format, args);
  std::string text;
  if (size > 0) {
    text.resize(static_cast<std::size_t>(std::min(size, 1 << 20)) + 1);
    std::vsnprintf(text.data(), text.size(), format, again);
    text.pop_back();
  }
  va_end(again);
  std::size_t from = 0;
  while (from < text.size()) {
    std::size_t end = text.find('\n', from);
    if (end == std::string::npos) end = text.size();
    g_captured->add(text.substr(from, end - from));
    from = end + 1;
  }
  return 0;
}

}  // namespace

CapturedMessages::CapturedMessages() : lock_(g_capture_mutex) {
  g_captured = this;
  g_previous = libbpf_set_print(capture_message);
}

CapturedMessages::~CapturedMessages() {
  libbpf_set_print(g_previous);
  g_captured = nullptr;
}

void CapturedMessages::add(std::string text) {
  while (!text.empty() && (text.back() == '\n' || text.back() == ' ')) text.pop_back();
  if (text.empty()) return;
  if (lines_.size() < 4096) {
    lines_.push_back(std::move(text));
    return;
  }
  // Past the bound: the last lines are kept (where a verifier says why).
  tail_.push_back(std::move(text));
  if (tail_.size() > 64) tail_.pop_front();
}

std::string CapturedMessages::reason() const {
  std::vector<std::string> all = lines_;
  all.insert(all.end(), tail_.begin(), tail_.end());
  std::string failed;
  for (const std::string& line : all)
    if (line.find("failed") != std::string::npos || line.find("Failed") != std::string::npos) {
      failed = line;
      break;
    }
  if (failed.empty()) return all.empty() ? std::string() : all.back();
  // A verifier's refusal: its log ends with what it refused, then the
  // statistics line ("processed N insns ..."), then libbpf's end marker.
  std::string refused;
  bool in_log = false;
  for (const std::string& line : all) {
    if (line.find("-- BEGIN PROG LOAD LOG --") != std::string::npos) {
      in_log = true;
      refused.clear();
    } else if (line.find("-- END PROG LOAD LOG --") != std::string::npos) {
      if (in_log) break;
    } else if (in_log && !line.empty() && line.rfind("processed ", 0) != 0 &&
               line.rfind("verification time", 0) != 0 && line.rfind("stack depth", 0) != 0) {
      refused = line;
    }
  }
  return refused.empty() ? failed : failed + "; the verifier: " + refused;
}

std::string load_failure(const char* step, int error, const CapturedMessages& messages) {
  // EPERM is the kernel refusing the caller; EACCES is the verifier
  // refusing a program (its log says why).
  if (error == EPERM)
    return fmt::format(
        "{} was refused ({}): loading BPF tracing programs needs root, or CAP_BPF with "
        "CAP_PERFMON",
        step, std::strerror(error));
  std::string text = fmt::format("{} failed: {}", step, std::strerror(error));
  const std::string why = messages.reason();
  if (!why.empty()) text += " (" + why + ")";
  if (error == EINVAL || error == ENOENT || error == ESRCH || error == ENOTSUP)
    text += "; the programs need Linux 6.1 or later with BTF";
  return text;
}

std::vector<ProgramCost> program_costs(const bpf_object* object) {
  std::vector<ProgramCost> costs;
  bpf_program* program = nullptr;
  bpf_object__for_each_program(program, object) {
    if (bpf_program__fd(program) < 0) continue;  // not loaded (another route)
    bpf_prog_info info{};
    __u32 length = sizeof info;
    ProgramCost cost{bpf_program__name(program)};
    if (bpf_obj_get_info_by_fd(bpf_program__fd(program), &info, &length) == 0) {
      cost.runs = info.run_cnt;
      cost.run_ns = info.run_time_ns;
    }
    costs.push_back(std::move(cost));
  }
  return costs;
}

RunTimeStatistics::RunTimeStatistics() {
  fd_ = bpf_enable_stats(BPF_STATS_RUN_TIME);
  if (fd_ < 0) {
    const int error = errno;
    throw BpfUnavailable(
        fmt::format("the kernel's run-time statistics of BPF programs could not be turned on "
                    "(BPF_ENABLE_STATS: {}){}",
                    std::strerror(error),
                    error == EPERM    ? ": they need CAP_SYS_ADMIN"
                    : error == EINVAL ? ": they need Linux 5.8 or later"
                                      : ""));
  }
}

RunTimeStatistics::~RunTimeStatistics() {
  if (fd_ >= 0) ::close(fd_);
}

void require_kernel_btf() {
  if (::access("/sys/kernel/btf/vmlinux", R_OK) != 0)
    throw BpfUnavailable(fmt::format(
        "this kernel has no BTF (/sys/kernel/btf/vmlinux: {}); the programs need a kernel built "
        "with CONFIG_DEBUG_INFO_BTF",
        std::strerror(errno)));
}

int syscall_event_id(const char* event, std::string& why) {
  std::string dir;
  try {
    dir = sys::tracefs::tracing_dir().path;
  } catch (const sys::tracefs::TracefsError& e) {
    why = e.what();
    return -1;
  }
  std::ifstream in(dir + "/events/syscalls/" + event + "/id");
  int id = -1;
  if (!(in >> id))
    why = std::string("tracefs has no syscalls:") + event + " (CONFIG_FTRACE_SYSCALLS)";
  return id;
}

int open_tracepoint_event(int id) {
  perf_event_attr attr{};
  attr.type = PERF_TYPE_TRACEPOINT;
  attr.size = sizeof attr;
  attr.config = static_cast<__u64>(id);
  attr.sample_period = 1;
  attr.wakeup_events = 1;
  return static_cast<int>(::syscall(SYS_perf_event_open, &attr, -1 /* every task */, 0 /* cpu */,
                                    -1, PERF_FLAG_FD_CLOEXEC));
}

bpf_link* attach_to_tracepoint(bpf_program* program, int id) {
  const int fd = open_tracepoint_event(id);
  if (fd < 0) return nullptr;
  bpf_link* link = bpf_program__attach_perf_event(program, fd);
  if (link == nullptr) {
    const int saved = errno;
    ::close(fd);
    errno = saved;
  }
  return link;
}

}  // namespace doorbell::lab::trace::bpf
