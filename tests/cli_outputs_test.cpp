// Results never lost or silently wrong, and messages that say what is wrong
// (issue 26): bench's output files, guide --update, report's input and its
// plots, and the CLI's own messages. Every run goes through
// tests/support/run_program.h with a timeout.
#include <fcntl.h>
#include <poll.h>
#include <sys/inotify.h>
#include <unistd.h>

#include <gtest/gtest.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <regex>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "tests/support/files.h"
#include "tests/support/run_program.h"

namespace {

namespace fs = std::filesystem;
using namespace std::chrono_literals;
using doorbell::test::run_doorbell;

const std::string kData = std::string(DOORBELL_SOURCE_DIR) + "/tests/data/";
// The cheapest row of the lab.
const std::vector<std::string> kCheapBench = {
    "bench", "--filter",     "ladder/atomic_store_load_acq_rel", "--quick", "--repeat",
    "1",     "--no-progress"};

using doorbell::test::slurp;

fs::path work_dir(const std::string& name) {
  return doorbell::test::work_dir("cli_outputs", name);
}

void expect_one_line_naming(const doorbell::test::RunResult& r, const std::string& what) {
  std::string err = r.err;
  while (!err.empty() && err.back() == '\n') err.pop_back();
  EXPECT_EQ(err.find('\n'), std::string::npos) << "one line: " << r.err;
  EXPECT_NE(err.find(what), std::string::npos) << "names " << what << ": " << r.err;
}

std::vector<std::string> with(std::vector<std::string> base, const std::vector<std::string>& more) {
  base.insert(base.end(), more.begin(), more.end());
  return base;
}

// Every output path is checked before the lab runs (item 7): a bad --json
// used to run the scenarios, fail, and not write the valid --csv either.
TEST(BenchOutputs, BadOutputPathsAreRefusedBeforeRunning) {
  const fs::path dir = work_dir("bad_paths");
  const std::string ok_csv = (dir / "ok.csv").string(), ok_json = (dir / "ok.json").string();
  const std::vector<std::pair<std::string, std::vector<std::string>>> cases = {
      {"--json", {"--json", "/nonexistent/d/x.json", "--csv", ok_csv}},
      {"--json", {"--json", dir.string(), "--csv", ok_csv}},
      {"--json", {"--json", "", "--csv", ok_csv}},
      {"--csv", {"--json", ok_json, "--csv", "/proc/x.csv"}},
      {"--csv", {"--json", ok_json, "--csv", "/nonexistent/d/x.csv"}},
      {"--out", {"--out", "/proc/x"}},
  };
  for (const auto& [option, args] : cases) {
    const auto r = run_doorbell(with(kCheapBench, args), {.timeout = 60s});
    EXPECT_EQ(r.exit_code(), 2) << option << ": " << r.describe();
    expect_one_line_naming(r, option);
    EXPECT_EQ(r.out.find("atomic store+load"), std::string::npos) << "it ran: " << r.out;
    EXPECT_FALSE(fs::exists(ok_csv) || fs::exists(ok_json));
  }
}

// The JSON cannot be written when the run ends (a directory is in its way
// by then; the path was fine when checked): the CSV is written all the
// same, the table printed, the failure said, exit 1.
TEST(BenchOutputs, OneFailedWriteKeepsTheOthers) {
  const fs::path dir = work_dir("one_fails");
  const fs::path json = dir / "j" / "x.json", csv = dir / "c.csv";
  fs::create_directories(dir / "j");
  // The up-front check makes and removes a file in j/: once it is gone the
  // run has begun, and the test blocks the JSON's path with a directory.
  const int watch = ::inotify_init1(IN_CLOEXEC | IN_NONBLOCK);
  ASSERT_GE(watch, 0);
  ASSERT_GE(::inotify_add_watch(watch, (dir / "j").c_str(), IN_DELETE), 0);
  auto cli = doorbell::test::start_doorbell(
      // About 0.35 s of work in a release build (1000 quick repetitions):
      // the window in which the test blocks the JSON's path.
      {"bench", "--filter", "ladder/atomic_store_load_acq_rel", "--quick", "--repeat", "1000",
       "--no-progress", "--json", json.string(), "--csv", csv.string()},
      {.timeout = 120s});
  pollfd p{watch, POLLIN, 0};
  const bool checked = ::poll(&p, 1, 30000) == 1;
  ::close(watch);
  std::error_code ec;
  fs::create_directory(json, ec);  // rename(temp, json) now fails: EISDIR
  const auto r = cli.finish();
  ASSERT_TRUE(checked) << "no up-front check seen: " << r.describe();
  EXPECT_EQ(r.exit_code(), 1) << r.describe();
  EXPECT_NE(r.out.find("atomic store+load"), std::string::npos) << "the table: " << r.out;
  EXPECT_NE(r.err.find("x.json"), std::string::npos) << r.err;
  ASSERT_TRUE(fs::exists(csv)) << "the CSV was not written";
  EXPECT_NE(slurp(csv).find("ladder/atomic_store_load_acq_rel"), std::string::npos);
  // Written atomically: no temporary file left beside them.
  for (const auto& e : fs::recursive_directory_iterator(dir))
    EXPECT_EQ(e.path().filename().string().find(".doorbell-tmp"), std::string::npos) << e.path();
}

// --update with a results file that measures part of the guide keeps the
// figures it does not measure (item 10): it used to rewrite 55 of 91 as
// "not measured", exit 0.
TEST(GuideUpdate, PartialResultsKeepWhatTheyDoNotMeasure) {
  const fs::path dir = work_dir("guide_partial");
  const std::string guide = slurp(std::string(DOORBELL_SOURCE_DIR) + "/docs/guide.md");
  std::ofstream(dir / "guide.md") << guide;
  const auto r = run_doorbell(
      {"guide", kData + "small_results.json", (dir / "guide.md").string(), "--update"});
  EXPECT_EQ(r.exit_code(), 0) << r.describe();
  const std::string updated = slurp(dir / "guide.md");
  auto count = [](const std::string& text, const std::string& what) {
    std::size_t n = 0;
    for (std::size_t at = text.find(what); at != std::string::npos; at = text.find(what, at + 1))
      ++n;
    return n;
  };
  EXPECT_EQ(count(updated, ">not measured<"), count(guide, ">not measured<")) << r.out;
  EXPECT_EQ(count(updated, "<!--m:"), count(guide, "<!--m:"));
  EXPECT_NE(r.out.find("kept"), std::string::npos) << "says what it kept: " << r.out;
}

// A guide with no figure markers (a directory, a binary, the wrong file):
// an error, not "0 figures, 0 differ" and exit 0 (item 10).
TEST(GuideUpdate, AFileWithoutMarkersIsAnError) {
  const fs::path dir = work_dir("guide_no_markers");
  std::ofstream(dir / "binary.md", std::ios::binary) << std::string(
      "\x7f"
      "ELF\x02\x01\x01\0\0",
      9);
  const std::string results =
      std::string(DOORBELL_SOURCE_DIR) + "/docs/results/kvm-firecracker-intel-xeon-2vcpu.json";
  for (const std::string& path : {dir.string(), (dir / "binary.md").string()}) {
    for (const bool update : {false, true}) {
      std::vector<std::string> args{"guide", results, path};
      if (update) args.push_back("--update");
      const auto r = run_doorbell(args);
      EXPECT_EQ(r.exit_code(), 2) << path << ": " << r.describe();
      expect_one_line_naming(r, path);
    }
  }
  EXPECT_EQ(slurp(dir / "binary.md").size(), 9u) << "--update wrote into it";
}

// report on a directory said "unexpected end of input"; its usage showed
// "results(1x)" though it takes two.
TEST(ReportCli, ADirectoryIsSaidAndTheUsageShowsTwoFiles) {
  const fs::path dir = work_dir("report_dir");
  auto r = run_doorbell({"report", dir.string(), "-o", (dir / "r.html").string()});
  EXPECT_EQ(r.exit_code(), 2) << r.describe();
  expect_one_line_naming(r, "is a directory");
  r = run_doorbell({"report", "--help"});
  ASSERT_TRUE(r.success()) << r.describe();
  EXPECT_EQ(r.out.find("results(1x)"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("[B.json]"), std::string::npos) << r.out;
  // A bad -o is refused before the report is made.
  r = run_doorbell({"report", kData + "small_results.json", "-o", "/nonexistent/d/r.html"});
  EXPECT_EQ(r.exit_code(), 2) << r.describe();
  expect_one_line_naming(r, "--output");
}

// In a two-run report the percentile plots' legend took half the width and
// the "0%" and "50%" tic labels overlapped.
TEST(ReportCli, ComparisonPercentilePlotsKeepTheirWidthAndLegibleTics) {
  const fs::path dir = work_dir("report_two_runs");
  const auto r =
      run_doorbell({"report", kData + "small_results.json", kData + "small_results_b.json",
                    "--label", "before", "--label", "after", "-o", (dir / "r.html").string(),
                    "--plots-dir", (dir / "plots").string()});
  ASSERT_TRUE(r.success()) << r.describe();
  const std::string gp = slurp(dir / "plots" / "wakeup_percentiles_latency.svg.gp");
  ASSERT_FALSE(gp.empty());
  const std::size_t key = gp.rfind("set key");  // the one in effect
  ASSERT_NE(key, std::string::npos) << gp;
  EXPECT_NE(gp.compare(key, 21, "set key outside right"), 0) << gp.substr(key, 60);
  EXPECT_EQ(gp.find("\"0%%\" 1,"), std::string::npos) << "0% and 50% overlap: " << gp;
  EXPECT_NE(gp.find("\"50%%\" 2"), std::string::npos) << gp;
  // One legend entry per scenario: the runs are told apart by the dashes
  // (the caption says which is which).
  EXPECT_NE(gp.find("notitle"), std::string::npos) << gp;
  EXPECT_NE(slurp(dir / "r.html").find("Solid: before; dashed: after."), std::string::npos);
}

// The CLI's own messages (issue 26, "Messages, help and docs").
TEST(CliMessages, UnknownCommandIsNamed) {
  const auto r = run_doorbell({"bogus"});
  EXPECT_EQ(r.exit_code(), 2) << r.describe();
  expect_one_line_naming(r, "unknown command 'bogus'");
}

// A full-suite row: the hint must point at a listing that shows it.
TEST(CliMessages, FilterOfFullSuiteRowsHintsAtTheFullList) {
  const auto r = run_doorbell({"bench", "--filter", "crosscheck/*", "--no-progress"});
  EXPECT_EQ(r.exit_code(), 2) << r.describe();
  expect_one_line_naming(r, "--filter");
  EXPECT_NE(r.err.find("--list --suite full"), std::string::npos) << r.err;
  const auto list = run_doorbell({"bench", "--list", "--suite", "full"});
  ASSERT_TRUE(list.success()) << list.describe();
  EXPECT_NE(list.out.find("crosscheck/"), std::string::npos) << "the hint's listing shows them";
}

// Completion: --method offers its methods (not file names), inspect's PID
// no file names, --filter the scenario names.
TEST(CliMessages, CompletionOffersWhatEachValueCanBe) {
  const auto r = run_doorbell({"completion", "bash"});
  ASSERT_TRUE(r.success()) << r.describe();
  const std::string& script = r.out;
  EXPECT_NE(script.find("'partition run|--method') COMPREPLY=($(compgen -W 'sigstop "
                        "sigstop-all-threads freezer'"),
            std::string::npos)
      << script;
  std::smatch m;
  ASSERT_TRUE(std::regex_search(script, m, std::regex("    'inspect'\\) words=[^\\n]*")));
  EXPECT_EQ(m.str().find("files=1"), std::string::npos) << m.str();
  EXPECT_NE(script.find("'bench|--filter') _doorbell_scenarios"), std::string::npos) << script;
}

}  // namespace
