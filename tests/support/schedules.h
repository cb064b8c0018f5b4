// A small partition schedule the library tests share: one partition "p" that
// pauses for ever, a 4 ms window at the start of a 10 ms frame, SIGSTOP
// windows. Tests change what they need on the copy they get.
#pragma once

#include <unistd.h>

#include "doorbell/partition.h"

namespace doorbell::test {

inline partition::Schedule one_pausing_partition() {
  partition::Schedule s;
  s.major_frame_ns = 10'000'000;
  s.method = partition::SuspendMethod::sigstop;
  partition::PartitionSpec p;
  p.name = "p";
  p.entry = []() -> int {
    for (;;) ::pause();
  };
  s.partitions.push_back(p);
  s.windows.push_back({"p", 0, 4'000'000, 0});
  return s;
}

}  // namespace doorbell::test
