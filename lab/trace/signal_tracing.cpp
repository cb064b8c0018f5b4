#include "lab/trace/signal_tracing.h"

#include <sched.h>

#include "lab/common/time.h"

namespace doorbell::lab::trace {

SignalTracing::SignalTracing()
    : formats_(
          {{"signal", "signal_generate"}, {"signal", "signal_deliver"}, {"task", "task_newtask"}}),
      instance_("trace") {
  generate_id_ = formats_.id("signal", "signal_generate");
  deliver_id_ = formats_.id("signal", "signal_deliver");
  newtask_id_ = formats_.id("task", "task_newtask");
  if (generate_id_ < 0 || deliver_id_ < 0)
    throw sys::tracefs::TracefsError(
        "this kernel has no signal:signal_generate / signal:signal_deliver tracepoints");
  // CLOCK_MONOTONIC timestamps (drain() compares them with the clock); a
  // buffer big enough for a storm of a few hundred thousand events between
  // two reads.
  instance_.write("trace_clock", "mono");
  instance_.write("buffer_size_kb", "4096");
  for (const char* event : {"signal_generate", "signal_deliver"})
    if (!instance_.enable("signal", event))
      throw sys::tracefs::TracefsError("cannot enable signal:" + std::string(event));
  // Which process each new thread joins: a thread-directed signal to a
  // thread gone before its events are read is still its process's. Without
  // the event (a kernel without it), such a thread counts as its own process.
  if (newtask_id_ >= 0 && !instance_.enable("task", "task_newtask")) newtask_id_ = -1;
  instance_.tracing_on();
}

void SignalTracing::feed(Tracker& tracker, const Event& e) {
  if (const auto* g = std::get_if<GenerateEvent>(&e))
    tracker.on_generate(*g);
  else if (const auto* d = std::get_if<DeliverEvent>(&e))
    tracker.on_deliver(*d);
  else
    tracker.on_new_task(std::get<NewTaskEvent>(e));
}

void SignalTracing::flush_held(Tracker& tracker, uint64_t up_to_ns) {
  while (!held_.empty() && held_.begin()->first < up_to_ns) {
    feed(tracker, held_.begin()->second);
    held_.erase(held_.begin());
  }
}

uint64_t SignalTracing::drain(Tracker& tracker) {
  uint64_t events = 0;
  // Each CPU's buffer is read as it stands when the read reaches it, so an
  // event written on one CPU just before a read may come in the next read,
  // after a later event of another CPU (a thread's creation after its first
  // signal: the thread then counted as a process of its own, 1 in ~40,000
  // under churn). Events of the last kSettleNs before a read are held back
  // and fed in timestamp order with those of the next pass; a pass that
  // leaves some held is followed by another once they have settled (three
  // at most: under a steady flood the last of them wait for the next
  // drain()).
  for (int pass = 0; pass < 3; ++pass) {
    if (pass > 0) {
      if (held_.empty()) break;
      sleep_ns(kSettleNs);
    }
    const uint64_t cut = monotonic_ns() - kSettleNs;
    instance_.read(formats_, [&](const sys::tracefs::RawEvent& e) {
      Event event;
      if (e.id == generate_id_) {
        const auto sig = e.number("sig"), target = e.number("pid"), result = e.number("result");
        if (!sig || !target || !result) return;
        const auto group = e.number("group");
        event = GenerateEvent{e.ts_ns,
                              e.common_pid,
                              static_cast<pid_t>(*target),
                              static_cast<int>(*sig),
                              static_cast<int>(*result),
                              e.text("comm"),
                              !group || *group != 0};
        ++events;
      } else if (e.id == deliver_id_) {
        const auto sig = e.number("sig");
        if (!sig) return;
        event = DeliverEvent{e.ts_ns, e.common_pid, static_cast<int>(*sig)};
        ++events;
      } else if (e.id == newtask_id_) {
        const auto pid = e.number("pid"), flags = e.number("clone_flags");
        if (!pid || !flags) return;
        event = NewTaskEvent{e.common_pid, static_cast<pid_t>(*pid), (*flags & CLONE_THREAD) != 0};
      } else {
        return;
      }
      if (e.ts_ns >= cut) {
        held_.emplace(e.ts_ns, std::move(event));
        return;
      }
      flush_held(tracker, e.ts_ns + 1);
      feed(tracker, event);
    });
    flush_held(tracker, cut);
  }
  return events;
}

}  // namespace doorbell::lab::trace
