// Anonymous shared memory: memfd_create + ftruncate + mmap(MAP_SHARED), each
// through the seam (syscalls.h), so a fault-injection sweep reaches them.
// The port memory (partition_ports.cpp) and the health blocks
// (partition.cpp) are made here. No name in any file system: the memory
// goes with its last descriptor and mapping, whichever way the processes
// holding them end.
#pragma once

#include <cstddef>
#include <string_view>

#include "sys/fd.h"

namespace doorbell::sys {

struct SharedMemory {
  UniqueFd fd;
  void* base = nullptr;  // PROT_READ | PROT_WRITE, MAP_SHARED, zeroed; the caller unmaps it
  std::size_t size = 0;
};

// `size` bytes of memory named `name` (shown in /proc/PID/fd as
// /memfd:NAME), memfd flags `memfd_flags` (MFD_CLOEXEC). `seals` other than
// 0 (F_SEAL_SHRINK, F_SEAL_GROW, F_SEAL_SEAL) are added before the mapping
// (MFD_ALLOW_SEALING is then implied): a holder of the descriptor cannot
// shrink the memory under another's mapping (a SIGBUS there). Throws
// std::system_error "CALL (WHAT)" with the call's errno; nothing is left open
// or mapped then.
SharedMemory create_shared_memory(const char* name, std::size_t size, unsigned memfd_flags,
                                  std::string_view what, int seals = 0);

}  // namespace doorbell::sys
