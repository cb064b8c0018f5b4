// Replays every committed fuzz input (tests/fuzz/corpus/<target>/*) through
// the same functions libFuzzer drives, in every build: the seed corpus and
// every crash `./run fuzz` ever found stay fixed, also in CI (g++).
#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "tests/fuzz/targets.h"
#include "tests/support/files.h"

namespace {

namespace fs = std::filesystem;

std::vector<fs::path> corpus(const std::string& target) {
  std::vector<fs::path> files;
  const fs::path dir = fs::path(DOORBELL_SOURCE_DIR) / "tests/fuzz/corpus" / target;
  if (fs::is_directory(dir))
    for (const auto& entry : fs::directory_iterator(dir))
      if (entry.is_regular_file()) files.push_back(entry.path());
  std::sort(files.begin(), files.end());
  return files;
}

using doorbell::test::slurp;

TEST(FuzzReplay, EveryTargetHasASeedCorpus) {
  ASSERT_EQ(doorbell::fuzz::targets().size(), 3u);
  for (const auto& target : doorbell::fuzz::targets())
    EXPECT_GE(corpus(target.name).size(), 3u) << "tests/fuzz/corpus/" << target.name;
}

// Each input is accepted or rejected with the parser's documented error;
// another exception fails here, a crash or sanitizer report kills the test.
TEST(FuzzReplay, EveryCorpusInputIsAcceptedOrRejectedCleanly) {
  for (const auto& target : doorbell::fuzz::targets()) {
    for (const auto& file : corpus(target.name)) {
      SCOPED_TRACE(file.string());
      const std::string input = slurp(file);
      EXPECT_NO_THROW(target.run(input));
    }
  }
}

}  // namespace
