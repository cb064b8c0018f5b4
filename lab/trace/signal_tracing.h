// The kernel side of `doorbell trace`: a tracefs instance of its own
// (sys/tracefs.h: "doorbell-trace-<pid>") with signal:signal_generate and
// signal:signal_deliver enabled (and task:task_newtask, which says which
// process a new thread joins), CLOCK_MONOTONIC timestamps and 4 MiB per
// CPU, read into a Tracker. Created enabled; destroying it disables the
// events and removes the instance.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <variant>
#include <vector>

#include "lab/trace/tracker.h"
#include "sys/tracefs.h"

namespace doorbell::lab::trace {

class SignalTracing {
 public:
  // Throws sys::tracefs::TracefsError when tracing is not possible here.
  SignalTracing();
  SignalTracing(const SignalTracing&) = delete;
  SignalTracing& operator=(const SignalTracing&) = delete;

  const std::string& name() const noexcept { return instance_.name(); }
  // Instances left by dead owners, removed on creation.
  const std::vector<std::string>& removed_stale() const noexcept {
    return instance_.removed_stale();
  }
  // Events the ring buffer overwrote before they were read, all CPUs.
  long long overruns() const { return instance_.overruns(); }

  // Reads every event waiting in the buffers into `tracker`, in timestamp
  // order; returns how many signal events it read. Those of the last
  // kSettleNs may be held back until the next drain() (see drain()).
  uint64_t drain(Tracker& tracker);

  static constexpr uint64_t kSettleNs = 1'000'000;

 private:
  sys::tracefs::EventFormats formats_;
  sys::tracefs::Instance instance_;
  int generate_id_ = -1;
  int deliver_id_ = -1;
  int newtask_id_ = -1;  // task:task_newtask; -1 where the kernel lacks it
  using Event = std::variant<GenerateEvent, DeliverEvent, NewTaskEvent>;
  std::multimap<uint64_t, Event> held_;  // by timestamp, in the order read
  void feed(Tracker& tracker, const Event& e);
  void flush_held(Tracker& tracker, uint64_t up_to_ns);
};

}  // namespace doorbell::lab::trace
