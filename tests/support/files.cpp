#include "tests/support/files.h"

#include <fstream>
#include <sstream>

namespace doorbell::test {

std::string slurp(const std::filesystem::path& path) {
  std::ifstream in(path, std::ios::binary);
  std::ostringstream s;
  s << in.rdbuf();
  return s.str();
}

std::filesystem::path work_dir(const std::string& group, const std::string& name) {
  const std::filesystem::path d =
      std::filesystem::path(DOORBELL_BINARY_DIR) / "test-artifacts" / group / name;
  std::filesystem::remove_all(d);
  std::filesystem::create_directories(d);
  return d;
}

}  // namespace doorbell::test
