// The committed fuzz inputs through the commands a user runs: every input
// ends in a clean exit -- success, or a non-zero status with a message on
// stderr -- never a signal (crash, abort) and never a hang.
#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>
#include <string>
#include <vector>

#include "tests/support/run_program.h"

namespace {

namespace fs = std::filesystem;
using doorbell::test::run_doorbell;

std::vector<std::string> corpus(const std::string& target) {
  std::vector<std::string> files;
  for (const auto& entry :
       fs::directory_iterator(fs::path(DOORBELL_SOURCE_DIR) / "tests/fuzz/corpus" / target))
    if (entry.is_regular_file()) files.push_back(entry.path().string());
  std::sort(files.begin(), files.end());
  return files;
}

void expect_clean_end(const std::vector<std::string>& args, const std::string& file) {
  SCOPED_TRACE(file);
  const auto r = run_doorbell(args, {.timeout = std::chrono::seconds(60)});
  ASSERT_FALSE(r.timed_out) << "hung on " << file;
  ASSERT_TRUE(r.status.exited()) << r.describe();
  if (r.exit_code() != 0) {
    EXPECT_FALSE(r.err.empty()) << "a failure without a message";
  }
}

TEST(FuzzCliReplay, PartitionCheckEndsCleanlyOnEveryScheduleInput) {
  for (const auto& file : corpus("schedule")) expect_clean_end({"partition", "check", file}, file);
}

TEST(FuzzCliReplay, GuideEndsCleanlyOnEveryResultsAndGuideInput) {
  const std::string guide = std::string(DOORBELL_SOURCE_DIR) + "/docs/guide.md";
  for (const auto& file : corpus("results")) expect_clean_end({"guide", file, guide}, file);
  const auto results = corpus("results").front();
  for (const auto& file : corpus("guide")) expect_clean_end({"guide", results, file}, file);
}

}  // namespace
