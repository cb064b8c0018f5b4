#include "sys/shared_memory.h"

#include <fcntl.h>
#include <sys/mman.h>

#include <cerrno>
#include <string>

#include "sys/error.h"
#include "sys/syscalls.h"

namespace doorbell::sys {

SharedMemory create_shared_memory(const char* name, std::size_t size, unsigned memfd_flags,
                                  std::string_view what, int seals) {
  auto fail = [what](const char* call) {
    const int error = errno;  // before the message's allocation
    throw_errno(error, std::string(call) + " (" + std::string(what) + ")");
  };
  SharedMemory memory;
  if (seals != 0) memfd_flags |= MFD_ALLOW_SEALING;
  memory.fd.reset(sys::memfd_create(name, memfd_flags));
  if (!memory.fd) fail("memfd_create");
  // EINTR (ftruncate(2) names it for a wait a signal interrupts): again.
  while (sys::ftruncate(memory.fd.get(), static_cast<off_t>(size)) != 0)
    if (errno != EINTR) fail("ftruncate");
  if (seals != 0 && sys::add_seals(memory.fd.get(), seals) != 0) fail("fcntl(F_ADD_SEALS)");
  void* base = sys::mmap(nullptr, size, PROT_READ | PROT_WRITE, MAP_SHARED, memory.fd.get(), 0);
  if (base == MAP_FAILED) fail("mmap");
  memory.base = base;
  memory.size = size;
  return memory;
}

}  // namespace doorbell::sys
