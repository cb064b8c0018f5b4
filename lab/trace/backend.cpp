#include "lab/trace/backend.h"

#include <fmt/format.h>

namespace doorbell::lab::trace {

const char* backend_name(BackendKind kind) {
  return kind == BackendKind::bpf ? "bpf" : "tracefs";
}

const char* taken_by_name(TakenBy how) {
  switch (how) {
    case TakenBy::handler:
      return "handler";
    case TakenBy::sigwait:
      return "sigwait";
    case TakenBy::signalfd:
      return "signalfd";
  }
  return "?";
}

std::unique_ptr<Backend> open_backend(BackendKind kind, const BackendOptions& options) {
  return kind == BackendKind::bpf ? open_bpf_backend(options) : open_tracefs_backend(options);
}

BackendChoice choose_backend(std::optional<BackendKind> wanted, const BackendOptions& options) {
  BackendChoice choice;
  if (wanted == BackendKind::tracefs) {
    choice.backend = open_tracefs_backend(options);
    choice.why = fmt::format("backend tracefs ({}; chosen with --backend tracefs, BPF not tried)",
                             choice.backend->source());
    return choice;
  }
  if (wanted == BackendKind::bpf) {
    try {
      choice.backend = open_bpf_backend(options);
    } catch (const BackendUnavailable& e) {
      throw BackendUnavailable(std::string("--backend bpf: ") + e.what());
    }
    choice.why = fmt::format("backend bpf ({}; chosen with --backend bpf, tracefs not used)",
                             choice.backend->source());
    return choice;
  }
  std::string bpf_failure;
  try {
    choice.backend = open_bpf_backend(options);
    choice.why = fmt::format("backend bpf ({}; tracefs not needed)", choice.backend->source());
    return choice;
  } catch (const BackendUnavailable& e) {
    bpf_failure = e.what();
  }
  try {
    choice.backend = open_tracefs_backend(options);
  } catch (const BackendUnavailable& e) {
    throw BackendUnavailable(fmt::format("no tracing backend can run here: BPF: {}; tracefs: {}",
                                         bpf_failure, e.what()));
  }
  choice.why = fmt::format("backend tracefs ({}): BPF is unavailable: {}", choice.backend->source(),
                           bpf_failure);
  return choice;
}

}  // namespace doorbell::lab::trace
