// libFuzzer entry point for one target, chosen at build time
// (DOORBELL_FUZZ_TARGET names it).
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string_view>

#include "tests/fuzz/targets.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  static const doorbell::fuzz::Target* target = [] {
    const auto* t = doorbell::fuzz::find_target(DOORBELL_FUZZ_TARGET);
    if (t == nullptr) {
      std::fprintf(stderr, "no fuzz target named %s\n", DOORBELL_FUZZ_TARGET);
      std::abort();
    }
    return t;
  }();
  target->run(std::string_view(reinterpret_cast<const char*>(data), size));
  return 0;
}
