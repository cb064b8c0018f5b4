// The tracefs backend: a SignalTracing (lab/trace/signal_tracing.h) read
// into the Tracker event by event.
#include <memory>
#include <string>
#include <vector>

#include "lab/trace/backend.h"
#include "lab/trace/signal_tracing.h"
#include "sys/tracefs.h"

namespace doorbell::lab::trace {
namespace {

class TracefsBackend final : public Backend {
 public:
  TracefsBackend() {
    // The mount policy of sys/tracefs.h: a mount in our namespace, or a
    // private one; a refusal says why.
    if (sys::tracefs::tracing_dir().private_mount)
      notes_.push_back(
          "tracefs was not mounted; mounted it privately (outside the system's mount "
          "namespace: the system's mounts are unchanged)");
    tracing_ = std::make_unique<SignalTracing>();
    for (const std::string& name : tracing_->removed_stale())
      notes_.push_back("removed the tracing instance " + name +
                       " left by an earlier doorbell that did not exit cleanly");
  }

  BackendKind kind() const noexcept override { return BackendKind::tracefs; }
  std::string source() const override { return "tracefs instance " + tracing_->name(); }
  std::string instance() const override { return tracing_->name(); }
  std::vector<std::string> notes() const override { return notes_; }
  bool sees_causes() const noexcept override { return false; }
  void collect(Tracker& tracker, std::vector<SlowDelivery>*) override { tracing_->drain(tracker); }
  long long lost_events() const override { return tracing_->overruns(); }

 private:
  std::vector<std::string> notes_;
  std::unique_ptr<SignalTracing> tracing_;
};

}  // namespace

std::unique_ptr<Backend> open_tracefs_backend(const BackendOptions&) {
  try {
    return std::make_unique<TracefsBackend>();
  } catch (const sys::tracefs::TracefsError& e) {
    throw BackendUnavailable(e.what());
  }
}

}  // namespace doorbell::lab::trace
