// doorbell report: the HTML report from a fixed small results file
// (tests/data/small_results.json, and a second run _b for comparisons).
// Drives the CLI for what a user sees (files, exit codes) and calls
// write_html_report directly for what the CLI cannot vary (no gnuplot).
#include <gtest/gtest.h>
#include <sys/wait.h>

#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <regex>
#include <set>
#include <sstream>
#include <string>

#ifndef DOORBELL_NO_CLI
#include "apps/doorbell/report.h"
#endif

namespace fs = std::filesystem;

#ifndef DOORBELL_NO_CLI
namespace {

const std::string kCli = std::string(DOORBELL_BINARY_DIR) + "/doorbell";
const std::string kData = std::string(DOORBELL_SOURCE_DIR) + "/tests/data/";

std::string read(const fs::path& p) {
  std::ifstream in(p, std::ios::binary);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

// A fresh directory per test under the build tree (kept as an artifact).
fs::path work_dir(const std::string& name) {
  fs::path d = fs::path(DOORBELL_BINARY_DIR) / "test-artifacts" / "report" / name;
  fs::remove_all(d);
  fs::create_directories(d);
  return d;
}

// Runs a shell command line; returns its exit status (-1 when it did not exit).
int run(const std::string& command) {
  int status = std::system(command.c_str());
  return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
}

std::set<std::string> referenced_plots(const std::string& html) {
  std::set<std::string> out;
  std::regex re("data-plot=\"([^\"]+)\"");
  for (auto it = std::sregex_iterator(html.begin(), html.end(), re); it != std::sregex_iterator();
       ++it)
    out.insert((*it)[1]);
  return out;
}

TEST(Report, EveryPlotIsProducedAndEmbedded) {
  fs::path dir = work_dir("single");
  ASSERT_EQ(run(kCli + " report " + kData + "small_results.json -o " +
                (dir / "report.html").string() + " --plots-dir " + (dir / "plots").string() +
                " > " + (dir / "out.txt").string() + " 2>&1"),
            0)
      << read(dir / "out.txt");
  std::string html = read(dir / "report.html");
  std::set<std::string> svgs;
  for (const auto& e : fs::directory_iterator(dir / "plots"))
    if (e.path().extension() == ".svg") svgs.insert(e.path().filename().string());
  // Every plot gnuplot drew is in the page, and the page shows no other.
  EXPECT_EQ(referenced_plots(html), svgs);
  // The kinds of plot the report promises for this file.
  for (const char* expected :
       {"ladder_p50_bars.svg", "wakeup_p50_bars.svg", "e2e_p50_bars.svg", "ratelimit_p50_bars.svg",
        "ladder_percentiles_latency.svg", "e2e_percentiles_delay.svg", "e2e_scaling_threads.svg",
        "ratelimit_scaling_threads.svg",
        "e2e_breakdown_process_signal_main_busy_policy_default.svg",
        "e2e_breakdown_process_signal_main_busy_policy_receiver.svg"})
    EXPECT_TRUE(svgs.count(expected)) << expected;
  for (const auto& svg : svgs) {
    std::string content = read(dir / "plots" / svg);
    EXPECT_NE(content.find("<svg"), std::string::npos) << svg;
    // Each embedded image carries the very SVG gnuplot wrote.
    EXPECT_TRUE(fs::exists(dir / "plots" / (svg + ".gp"))) << svg;
  }
  EXPECT_EQ(std::count(html.begin(), html.end(), '\n') > 0, true);
  // Self-contained: nothing fetched from elsewhere.
  EXPECT_EQ(html.find("src=\"http"), std::string::npos);
  EXPECT_EQ(html.find("<link"), std::string::npos);
  // The skipped scenario says why; the ratio stands beside its published figure.
  EXPECT_NE(html.find("skipped: no avx512f on this CPU"), std::string::npos);
  EXPECT_NE(html.find("signal / atomic"), std::string::npos);
  EXPECT_NE(html.find("1646x"), std::string::npos);
  EXPECT_NE(html.find("seed 001, gcc:13 container on ARM64"), std::string::npos);
  // The environment block.
  EXPECT_NE(html.find("kvm-clock"), std::string::npos);
}

TEST(Report, ComparisonShowsBothRunsAndTheirRatios) {
  fs::path dir = work_dir("compare");
  ASSERT_EQ(run(kCli + " report " + kData + "small_results.json " + kData +
                "small_results_b.json --label before --label after -o " +
                (dir / "report.html").string() + " --plots-dir " + (dir / "plots").string() +
                " > " + (dir / "out.txt").string() + " 2>&1"),
            0)
      << read(dir / "out.txt");
  std::string html = read(dir / "report.html");
  EXPECT_NE(html.find("p50 after/before"), std::string::npos);
  // The second run is 1.5x slower on every wakeup scenario and 0.8x on the
  // ladder (how the fixture was made): the table says so, row by row.
  std::regex wakeup_row("<code>wakeup/eventfd_rtt:pin=same</code>.*?</tr>");
  std::smatch m;
  ASSERT_TRUE(std::regex_search(html, m, wakeup_row));
  EXPECT_NE(m.str().find(">1.5x<"), std::string::npos) << m.str();
  std::regex ladder_row("<code>ladder/self_kill</code>.*?</tr>");
  ASSERT_TRUE(std::regex_search(html, m, ladder_row));
  EXPECT_NE(m.str().find(">0.8x<"), std::string::npos) << m.str();
  // Overlaid plots: each percentile plot draws both runs.
  std::string gp = read(dir / "plots" / "wakeup_percentiles_latency.svg.gp");
  EXPECT_NE(gp.find("(before)"), std::string::npos);
  EXPECT_NE(gp.find("(after)"), std::string::npos);
  // The environment differences are visible.
  EXPECT_NE(html.find("otherhost"), std::string::npos);
  EXPECT_EQ(referenced_plots(html).size(),
            static_cast<std::size_t>(
                std::count_if(fs::directory_iterator(dir / "plots"), fs::directory_iterator(),
                              [](const auto& e) { return e.path().extension() == ".svg"; })));
}

TEST(Report, BadInputExitsWithTwo) {
  fs::path dir = work_dir("bad");
  std::ofstream(dir / "not_results.json") << R"({"schema": "something-else"})";
  std::ofstream(dir / "not_json.json") << "{ nope";
  const std::string out = " -o " + (dir / "r.html").string() + " 2>/dev/null";
  EXPECT_EQ(run(kCli + " report " + (dir / "missing.json").string() + out), 2);
  EXPECT_EQ(run(kCli + " report " + (dir / "not_results.json").string() + out), 2);
  EXPECT_EQ(run(kCli + " report " + (dir / "not_json.json").string() + out), 2);
  EXPECT_EQ(run(kCli + " report " + kData + "small_results.json " + kData + "small_results.json " +
                kData + "small_results.json" + out),
            2);
  EXPECT_FALSE(fs::exists(dir / "r.html"));
}

TEST(Report, WithoutGnuplotTheTablesStillCome) {
  fs::path dir = work_dir("no_gnuplot");
  auto run_json = doorbell::report::load_results(kData + "small_results.json");
  doorbell::report::ReportOptions options;
  options.gnuplot = "/nonexistent/gnuplot";
  auto summary =
      doorbell::report::write_html_report({run_json}, (dir / "r.html").string(), options);
  EXPECT_FALSE(summary.gnuplot_found);
  EXPECT_TRUE(summary.plots.empty());
  std::string html = read(dir / "r.html");
  EXPECT_NE(html.find("gnuplot was not found"), std::string::npos);
  EXPECT_NE(html.find("ladder/self_kill"), std::string::npos);
  EXPECT_TRUE(referenced_plots(html).empty());
}

TEST(Report, RejectsWhatIsNotAResultsFile) {
  EXPECT_THROW(doorbell::report::validate_results(nlohmann::json::array()), std::invalid_argument);
  EXPECT_THROW(doorbell::report::validate_results(
                   {{"schema", "doorbell-results"}, {"schema_version", 2}, {"scenarios", {}}}),
               std::invalid_argument);
  EXPECT_NO_THROW(doorbell::report::validate_results({{"schema", "doorbell-results"},
                                                      {"schema_version", 1},
                                                      {"scenarios", nlohmann::json::array()}}));
  EXPECT_THROW(doorbell::report::write_html_report({}, "/dev/null"), std::invalid_argument);
}

// The guide's figures equal the committed results file (docs/results/).
TEST(Guide, FiguresMatchTheCommittedResults) {
  fs::path dir = work_dir("guide");
  const std::string results =
      std::string(DOORBELL_SOURCE_DIR) + "/docs/results/firecracker-2vcpu.json";
  const std::string guide = std::string(DOORBELL_SOURCE_DIR) + "/docs/guide.md";
  EXPECT_EQ(
      run(kCli + " guide " + results + " " + guide + " > " + (dir / "out.txt").string() + " 2>&1"),
      0)
      << read(dir / "out.txt");
  EXPECT_NE(read(dir / "out.txt").find(" 0 differ"), std::string::npos) << read(dir / "out.txt");
}

TEST(Guide, ADriftedFigureIsCaughtAndUpdateFixesIt) {
  fs::path dir = work_dir("guide_drift");
  const std::string results =
      std::string(DOORBELL_SOURCE_DIR) + "/docs/results/firecracker-2vcpu.json";
  std::string guide = read(std::string(DOORBELL_SOURCE_DIR) + "/docs/guide.md");
  std::regex first_figure("(<!--m:p50 ladder/signal_kill_handler-->)[^<]*(<!--/m-->)");
  ASSERT_TRUE(std::regex_search(guide, first_figure));
  std::string drifted = std::regex_replace(guide, first_figure, "$011.00 ns$02",
                                           std::regex_constants::format_first_only);
  std::ofstream(dir / "guide.md") << drifted;
  const std::string cmd = kCli + " guide " + results + " " + (dir / "guide.md").string();
  EXPECT_EQ(run(cmd + " > " + (dir / "check.txt").string() + " 2>&1"), 1);
  EXPECT_NE(read(dir / "check.txt").find("ladder/signal_kill_handler"), std::string::npos);
  EXPECT_EQ(run(cmd + " --update > /dev/null 2>&1"), 0);
  EXPECT_EQ(read(dir / "guide.md"), guide);
  EXPECT_EQ(run(cmd + " > /dev/null 2>&1"), 0);
  EXPECT_EQ(run(kCli + " guide " + (dir / "missing.json").string() + " " +
                (dir / "guide.md").string() + " 2>/dev/null"),
            2);
}

}  // namespace
#else
TEST(Report, NeedsTheLab) {
  GTEST_SKIP() << "built without the lab (DOORBELL_BUILD_LAB=OFF)";
}
#endif
