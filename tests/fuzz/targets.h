// The fuzz targets: each feeds one input to one of the parsers that read
// files a user hands us, and returns normally when the parser accepted the
// input or rejected it with its documented error. Anything else -- another
// exception, a crash, a sanitizer report, a hang -- is a bug.
//
// The same functions serve libFuzzer (tests/fuzz/fuzz_main.cpp, clang builds
// under `./run fuzz`) and the replay test (tests/fuzz_replay_test.cpp, every
// build), which runs every committed input in tests/fuzz/corpus/<name>/.
#pragma once

#include <string_view>
#include <vector>

namespace doorbell::fuzz {

struct Target {
  const char* name;  // also the corpus folder: tests/fuzz/corpus/<name>/
  const char* what;  // the parser and the command that uses it
  void (*run)(std::string_view input);
};

const std::vector<Target>& targets();
const Target* find_target(std::string_view name);

}  // namespace doorbell::fuzz
