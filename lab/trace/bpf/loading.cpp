#include "lab/trace/bpf/loading.h"

#include <bpf/libbpf.h>
#include <unistd.h>

#include <cerrno>
#include <cstdarg>
#include <cstdio>
#include <cstring>

#include <fmt/format.h>

namespace doorbell::lab::trace::bpf {
namespace {

// Guarded by g_capture_mutex, which the capture holds for its lifetime.
std::mutex g_capture_mutex;
CapturedMessages* g_captured = nullptr;
libbpf_print_fn_t g_previous = nullptr;

int capture_message(enum libbpf_print_level level, const char* format, va_list args) {
  if (level == LIBBPF_DEBUG || g_captured == nullptr) return 0;
  char line[512];
  std::vsnprintf(line, sizeof line, format, args);
  g_captured->add(line);
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
  if (!text.empty() && lines_.size() < 4096) lines_.push_back(std::move(text));
}

std::string CapturedMessages::reason() const {
  for (const std::string& line : lines_)
    if (line.find("failed") != std::string::npos || line.find("Failed") != std::string::npos)
      return line;
  return lines_.empty() ? std::string() : lines_.back();
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

void require_kernel_btf() {
  if (::access("/sys/kernel/btf/vmlinux", R_OK) != 0)
    throw BpfUnavailable(fmt::format(
        "this kernel has no BTF (/sys/kernel/btf/vmlinux: {}); the programs need a kernel built "
        "with CONFIG_DEBUG_INFO_BTF",
        std::strerror(errno)));
}

}  // namespace doorbell::lab::trace::bpf
