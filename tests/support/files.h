// Files as tests read and make them.
#pragma once

#include <filesystem>
#include <string>

namespace doorbell::test {

// The whole file, bytes as they are; empty when it cannot be read.
std::string slurp(const std::filesystem::path& path);

// A fresh, empty directory for one test's files under the build tree:
// <build>/test-artifacts/<group>/<name>, removed first when it exists (what
// the last run left is kept until then, as an artifact).
std::filesystem::path work_dir(const std::string& group, const std::string& name);

}  // namespace doorbell::test
