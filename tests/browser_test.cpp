// The report in a real browser: headless Chromium (Debian package
// "chromium") opens the HTML written by `doorbell report`, the page's own
// script marks every plot image as loaded or not, and --dump-dom shows the
// result. A screenshot stays under the build directory as an artifact:
//   build/<dir>/test-artifacts/browser/<test>/report.png
// Skips, saying why, when no chromium is installed.
#include <gtest/gtest.h>
#include <stdlib.h>
#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <regex>
#include <sstream>
#include <string>
#include <vector>

#include "tests/support/files.h"
#include "tests/support/run_program.h"

namespace fs = std::filesystem;

namespace {

using doorbell::test::run_doorbell;
using doorbell::test::run_program;
const std::string kData = std::string(DOORBELL_SOURCE_DIR) + "/tests/data/";

using doorbell::test::slurp;

void write(const fs::path& p, const std::string& content) {
  std::ofstream(p, std::ios::binary) << content;
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

// The browser's command line: a fresh profile per run; nothing reaches the network.
std::vector<std::string> chromium_command(const std::string& chromium, const fs::path& profile,
                                          const std::vector<std::string>& extra) {
  std::vector<std::string> argv = {chromium,
                                   "--headless",
                                   "--no-sandbox",
                                   "--disable-gpu",
                                   "--disable-background-networking",
                                   "--disable-component-update",
                                   "--disable-sync",
                                   "--no-first-run",
                                   "--no-default-browser-check",
                                   "--user-data-dir=" + profile.string()};
  argv.insert(argv.end(), extra.begin(), extra.end());
  return argv;
}

constexpr std::chrono::seconds kBrowserTimeout{120};

void check_in_browser(const std::string& name, const std::vector<std::string>& results,
                      bool screenshot) {
  std::string chromium = find_chromium();
  if (chromium.empty())
    GTEST_SKIP() << "chromium is not installed (Debian: apt-get install chromium); the report was "
                    "not checked in a browser";
  fs::path dir = fs::path(DOORBELL_BINARY_DIR) / "test-artifacts" / "browser" / name;
  fs::remove_all(dir);
  fs::create_directories(dir);
  fs::path html = dir / "report.html";
  std::vector<std::string> report = {"report"};
  report.insert(report.end(), results.begin(), results.end());
  report.insert(report.end(), {"-o", html.string()});
  auto made = run_doorbell(report);
  write(dir / "report.log", made.out + made.err);
  ASSERT_TRUE(made.success()) << made.describe();
  std::string page = slurp(html);
  std::regex plot_re("<img class=\"plot\" data-plot=\"");
  auto plots = std::distance(std::sregex_iterator(page.begin(), page.end(), plot_re),
                             std::sregex_iterator());
  ASSERT_GT(plots, 0);

  char profile_template[] = "/tmp/doorbell-chromium-XXXXXX";
  ASSERT_NE(::mkdtemp(profile_template), nullptr);
  fs::path profile(profile_template);
  const std::string url = "file://" + fs::absolute(html).string();
  doorbell::test::RunOptions browser;
  browser.timeout = kBrowserTimeout;
  auto dumped = run_program(chromium_command(chromium, profile, {"--dump-dom", url}), browser);
  fs::remove_all(profile);
  write(dir / "dom.html", dumped.out);
  write(dir / "chromium.log", dumped.err);
  ASSERT_TRUE(dumped.success()) << dumped.describe();
  const std::string& dom = dumped.out;
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
  auto shot = run_program(
      chromium_command(chromium, profile,
                       {"--window-size=1280,3000", "--screenshot=" + png.string(), url}),
      browser);
  fs::remove_all(profile);
  write(dir / "chromium_screenshot.log", shot.out + shot.err);
  ASSERT_TRUE(shot.success()) << shot.describe();
  ASSERT_TRUE(fs::exists(png));
  std::string image = slurp(png);
  ASSERT_GT(image.size(), 8u);
  EXPECT_EQ(image.substr(1, 3), "PNG");
  EXPECT_GT(image.size(), 20000u) << "a screenshot of a page with plots is not that small";
}

TEST(Browser, ReportOfOneRunShowsEveryPlot) {
#ifdef DOORBELL_NO_CLI
  GTEST_SKIP() << "built without the lab (DOORBELL_BUILD_LAB=OFF): no doorbell CLI";
#endif
  check_in_browser("single", {kData + "small_results.json"}, true);
}

TEST(Browser, ComparisonShowsEveryPlot) {
#ifdef DOORBELL_NO_CLI
  GTEST_SKIP() << "built without the lab (DOORBELL_BUILD_LAB=OFF): no doorbell CLI";
#endif
  check_in_browser("compare", {kData + "small_results.json", kData + "small_results_b.json"},
                   false);
}

}  // namespace
