// cpu_relax(): the spin-loop hint (pause on x86, yield on arm64), for the
// library's bounded spins (internal). It tells the CPU that this is a wait
// loop, which saves power and leaves the sibling hyperthread its share; it
// is no yield to the scheduler.
#pragma once

namespace doorbell::detail {

inline void cpu_relax() noexcept {
#if defined(__x86_64__) || defined(__i386__)
  __builtin_ia32_pause();
#elif defined(__aarch64__)
  asm volatile("yield");
#endif
}

}  // namespace doorbell::detail
