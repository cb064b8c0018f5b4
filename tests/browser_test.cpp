// The report in a real browser: headless Chromium (Debian package
// "chromium") opens the HTML written by `doorbell report`, the page's own
// script marks every plot image as loaded or not, and --dump-dom shows the
// result. A screenshot stays under the build directory as an artifact:
//   build/<dir>/test-artifacts/browser/<test>/report.png
// Skips, saying why, when no chromium is installed.
#include <gtest/gtest.h>
#include <stdlib.h>
#include <sys/wait.h>

#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <regex>
#include <sstream>
#include <string>

namespace fs = std::filesystem;

namespace {

const std::string kCli = std::string(DOORBELL_BINARY_DIR) + "/doorbell";
const std::string kData = std::string(DOORBELL_SOURCE_DIR) + "/tests/data/";

std::string read(const fs::path& p) {
  std::ifstream in(p, std::ios::binary);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

int run(const std::string& command) {
  int status = std::system(command.c_str());
  return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
}

// The browser: $DOORBELL_CHROMIUM, else chromium or chromium-browser on PATH.
std::string find_chromium() {
  if (const char* env = std::getenv("DOORBELL_CHROMIUM"); env && *env) return env;
  const char* path = std::getenv("PATH");
  std::stringstream dirs(path ? path : "/usr/bin:/bin");
  std::string dir;
  while (std::getline(dirs, dir, ':'))
    for (const char* name : {"chromium", "chromium-browser"})
      if (::access((fs::path(dir) / name).c_str(), X_OK) == 0)
        return (fs::path(dir) / name).string();
  return {};
}

std::string chromium_flags(const fs::path& profile) {
  // A fresh profile per run; nothing reaches the network.
  return " --headless --no-sandbox --disable-gpu --disable-background-networking "
         "--disable-component-update --disable-sync --no-first-run --no-default-browser-check "
         "--user-data-dir=" +
         profile.string();
}

void check_in_browser(const std::string& name, const std::string& report_args, bool screenshot) {
  std::string chromium = find_chromium();
  if (chromium.empty())
    GTEST_SKIP() << "chromium is not installed (Debian: apt-get install chromium); the report was "
                    "not checked in a browser";
  fs::path dir = fs::path(DOORBELL_BINARY_DIR) / "test-artifacts" / "browser" / name;
  fs::remove_all(dir);
  fs::create_directories(dir);
  fs::path html = dir / "report.html";
  ASSERT_EQ(run(kCli + " report " + report_args + " -o " + html.string() + " > " +
                (dir / "report.log").string() + " 2>&1"),
            0)
      << read(dir / "report.log");
  std::string page = read(html);
  std::regex plot_re("<img class=\"plot\" data-plot=\"");
  auto plots = std::distance(std::sregex_iterator(page.begin(), page.end(), plot_re),
                             std::sregex_iterator());
  ASSERT_GT(plots, 0);

  char profile_template[] = "/tmp/doorbell-chromium-XXXXXX";
  ASSERT_NE(::mkdtemp(profile_template), nullptr);
  fs::path profile(profile_template);
  const std::string url = "file://" + fs::absolute(html).string();
  int dom_rc = run("timeout 120 " + chromium + chromium_flags(profile) + " --dump-dom '" + url +
                   "' > " + (dir / "dom.html").string() + " 2> " + (dir / "chromium.log").string());
  fs::remove_all(profile);
  ASSERT_EQ(dom_rc, 0) << read(dir / "chromium.log");
  std::string dom = read(dir / "dom.html");
  std::smatch body;
  ASSERT_TRUE(std::regex_search(dom, body, std::regex("<body[^>]*>")))
      << "no <body> in the DOM dump";
  std::string tag = body.str();
  EXPECT_NE(tag.find("data-plots-total=\"" + std::to_string(plots) + "\""), std::string::npos)
      << tag;
  EXPECT_NE(tag.find("data-plots-loaded=\"" + std::to_string(plots) + "\""), std::string::npos)
      << tag;
  EXPECT_NE(tag.find("data-plots-failed=\"\""), std::string::npos) << tag;
  // Each image, one by one.
  std::regex not_loaded("data-loaded=\"0\"");
  EXPECT_FALSE(std::regex_search(dom, not_loaded));

  // The screenshot, kept as the artifact a person looks at.
  if (!screenshot) return;
  ASSERT_TRUE(fs::create_directories(profile) || fs::exists(profile));
  fs::path png = dir / "report.png";
  int shot_rc = run("timeout 120 " + chromium + chromium_flags(profile) +
                    " --window-size=1280,3000 --screenshot=" + png.string() + " '" + url + "' >> " +
                    (dir / "chromium.log").string() + " 2>&1");
  fs::remove_all(profile);
  ASSERT_EQ(shot_rc, 0) << read(dir / "chromium.log");
  ASSERT_TRUE(fs::exists(png));
  std::string image = read(png);
  ASSERT_GT(image.size(), 8u);
  EXPECT_EQ(image.substr(1, 3), "PNG");
  EXPECT_GT(image.size(), 20000u) << "a screenshot of a page with plots is not that small";
}

TEST(Browser, ReportOfOneRunShowsEveryPlot) {
#ifdef DOORBELL_NO_CLI
  GTEST_SKIP() << "built without the lab (DOORBELL_BUILD_LAB=OFF): no doorbell CLI";
#endif
  check_in_browser("single", kData + "small_results.json", true);
}

TEST(Browser, ComparisonShowsEveryPlot) {
#ifdef DOORBELL_NO_CLI
  GTEST_SKIP() << "built without the lab (DOORBELL_BUILD_LAB=OFF): no doorbell CLI";
#endif
  check_in_browser("compare", kData + "small_results.json " + kData + "small_results_b.json",
                   false);
}

}  // namespace
