#include "lab/trace/signal_tracing.h"

namespace doorbell::lab::trace {

SignalTracing::SignalTracing()
    : formats_({{"signal", "signal_generate"}, {"signal", "signal_deliver"}}), instance_("trace") {
  generate_id_ = formats_.id("signal", "signal_generate");
  deliver_id_ = formats_.id("signal", "signal_deliver");
  if (generate_id_ < 0 || deliver_id_ < 0)
    throw sys::tracefs::TracefsError(
        "this kernel has no signal:signal_generate / signal:signal_deliver tracepoints");
  // CLOCK_MONOTONIC timestamps; a buffer big enough for a storm of a few
  // hundred thousand events between two reads.
  instance_.write("trace_clock", "mono");
  instance_.write("buffer_size_kb", "4096");
  for (const char* event : {"signal_generate", "signal_deliver"})
    if (!instance_.enable("signal", event))
      throw sys::tracefs::TracefsError("cannot enable signal:" + std::string(event));
  instance_.tracing_on();
}

uint64_t SignalTracing::drain(Tracker& tracker) {
  uint64_t events = 0;
  instance_.read(formats_, [&](const sys::tracefs::RawEvent& e) {
    if (e.id == generate_id_) {
      const auto sig = e.number("sig"), target = e.number("pid"), result = e.number("result");
      if (!sig || !target || !result) return;
      const auto group = e.number("group");
      tracker.on_generate({e.ts_ns, e.common_pid, static_cast<pid_t>(*target),
                           static_cast<int>(*sig), static_cast<int>(*result), e.text("comm"),
                           !group || *group != 0});
      ++events;
    } else if (e.id == deliver_id_) {
      const auto sig = e.number("sig");
      if (!sig) return;
      tracker.on_deliver({e.ts_ns, e.common_pid, static_cast<int>(*sig)});
      ++events;
    }
  });
  return events;
}

}  // namespace doorbell::lab::trace
