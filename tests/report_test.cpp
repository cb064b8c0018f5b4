// doorbell report: the HTML report from a fixed small results file
// (tests/data/small_results.json, and a second run _b for comparisons).
// Drives the CLI (tests/support/run_program.h) for what a user sees (files,
// exit codes) and calls the report library (lab/report/) directly for what
// the CLI cannot vary (no gnuplot) and for the guide's markers.
#include <gtest/gtest.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdint>
#include <filesystem>
#include <fstream>
#include <regex>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#ifndef DOORBELL_NO_CLI
#include <nlohmann/json.hpp>

#include "lab/harness/results_reader.h"
#include "lab/report/compare.h"
#include "lab/report/guide.h"
#include "lab/report/html.h"
#include "lab/report/plots.h"
#include "tests/support/files.h"
#include "tests/support/run_program.h"
#endif

namespace fs = std::filesystem;

#ifndef DOORBELL_NO_CLI
namespace {

using doorbell::test::run_doorbell;
const std::string kData = std::string(DOORBELL_SOURCE_DIR) + "/tests/data/";

using doorbell::test::slurp;

fs::path work_dir(const std::string& name) {
  return doorbell::test::work_dir("report", name);
}

// How the page embeds an SVG: base64 in a data: URI.
std::string embedded(const std::string& svg) {
  static const char* table = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
  std::string out = "src=\"data:image/svg+xml;base64,";
  std::size_t i = 0;
  for (; i + 2 < svg.size(); i += 3) {
    const uint32_t v = (uint8_t(svg[i]) << 16) | (uint8_t(svg[i + 1]) << 8) | uint8_t(svg[i + 2]);
    for (int shift : {18, 12, 6, 0}) out += table[(v >> shift) & 63];
  }
  if (i < svg.size()) {
    uint32_t v = uint8_t(svg[i]) << 16;
    if (i + 1 < svg.size()) v |= uint8_t(svg[i + 1]) << 8;
    out += table[v >> 18];
    out += table[(v >> 12) & 63];
    out += i + 1 < svg.size() ? table[(v >> 6) & 63] : '=';
    out += '=';
  }
  return out + "\"";
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
  auto r = run_doorbell({"report", kData + "small_results.json", "-o",
                         (dir / "report.html").string(), "--plots-dir", (dir / "plots").string()});
  ASSERT_TRUE(r.success()) << r.describe();
  EXPECT_NE(r.out.find("wrote " + (dir / "report.html").string()), std::string::npos) << r.out;
  std::string html = slurp(dir / "report.html");
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
    std::string content = slurp(dir / "plots" / svg);
    EXPECT_NE(content.find("<svg"), std::string::npos) << svg;
    EXPECT_TRUE(fs::exists(dir / "plots" / (svg + ".gp"))) << svg;
    // Each embedded image carries the very SVG gnuplot wrote.
    EXPECT_NE(html.find(embedded(content)), std::string::npos) << svg;
  }
  // Every scenario of the results file has its row, with its status.
  const auto results = doorbell::lab::read_results_file(kData + "small_results.json");
  ASSERT_FALSE(results.scenarios.empty());
  for (const auto& s : results.scenarios) {
    const std::string row = "<tr><td><code>" + s.name + "</code>";
    EXPECT_NE(html.find(row), std::string::npos) << s.name;
    EXPECT_NE(html.find("href=\"#group-" + s.group + "\""), std::string::npos) << s.group;
  }
  // Self-contained: nothing fetched from elsewhere.
  EXPECT_EQ(html.find("src=\"http"), std::string::npos);
  EXPECT_EQ(html.find("<link"), std::string::npos);
  // The skipped scenario says why; the ratio stands beside its published figure.
  EXPECT_NE(html.find("skipped: no avx512f on this CPU"), std::string::npos);
  EXPECT_NE(html.find("signal / atomic"), std::string::npos);
  EXPECT_NE(html.find("1646x"), std::string::npos);
  EXPECT_NE(html.find("seed 001, gcc:13 container on ARM64"), std::string::npos);
  // Durations in the lab's one spelling (lab/common/format.h).
  EXPECT_NE(html.find(">3.30 µs<"), std::string::npos);
  // The environment block.
  EXPECT_NE(html.find("kvm-clock"), std::string::npos);
}

TEST(Report, ComparisonShowsBothRunsAndTheirRatios) {
  fs::path dir = work_dir("compare");
  auto r = run_doorbell({"report", kData + "small_results.json", kData + "small_results_b.json",
                         "--label", "before", "--label", "after", "-o",
                         (dir / "report.html").string(), "--plots-dir", (dir / "plots").string()});
  ASSERT_TRUE(r.success()) << r.describe();
  std::string html = slurp(dir / "report.html");
  EXPECT_NE(html.find("p50 after/before"), std::string::npos);
  // The second run is 1.5x slower on every wakeup scenario and 0.8x on the
  // ladder (how the fixture was made): the table says so, row by row.
  std::regex wakeup_row("<code>wakeup/eventfd_rtt:pin=same</code>.*?</tr>");
  std::smatch m;
  ASSERT_TRUE(std::regex_search(html, m, wakeup_row));
  EXPECT_NE(m.str().find(">1.50x<"), std::string::npos) << m.str();
  std::regex ladder_row("<code>ladder/self_kill</code>.*?</tr>");
  ASSERT_TRUE(std::regex_search(html, m, ladder_row));
  EXPECT_NE(m.str().find(">0.800x<"), std::string::npos) << m.str();
  // Overlaid plots: each percentile plot draws both runs, the second
  // dashed (one legend entry per scenario; the caption says which is which).
  std::string gp = slurp(dir / "plots" / "wakeup_percentiles_latency.svg.gp");
  EXPECT_NE(gp.find("dt 1"), std::string::npos);
  EXPECT_NE(gp.find("dt 2"), std::string::npos);
  EXPECT_NE(html.find("Solid: before; dashed: after."), std::string::npos);
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
  std::ofstream(dir / "wrong_type.json")
      << R"({"schema": "doorbell-results", "schema_version": 1, "scenarios": [{"name": 3}]})";
  const std::vector<std::string> out = {"-o", (dir / "r.html").string()};
  auto report = [&](std::vector<std::string> files) {
    std::vector<std::string> args = {"report"};
    args.insert(args.end(), files.begin(), files.end());
    args.insert(args.end(), out.begin(), out.end());
    return run_doorbell(args);
  };
  auto r = report({(dir / "missing.json").string()});
  EXPECT_EQ(r.exit_code(), 2) << r.describe();
  EXPECT_NE(r.err.find("missing.json: cannot open"), std::string::npos) << r.err;
  r = report({(dir / "not_results.json").string()});
  EXPECT_EQ(r.exit_code(), 2) << r.describe();
  EXPECT_NE(r.err.find("not a doorbell results file"), std::string::npos) << r.err;
  r = report({(dir / "not_json.json").string()});
  EXPECT_EQ(r.exit_code(), 2) << r.describe();
  EXPECT_NE(r.err.find("not valid JSON"), std::string::npos) << r.err;
  r = report({(dir / "wrong_type.json").string()});
  EXPECT_EQ(r.exit_code(), 2) << r.describe();
  EXPECT_NE(r.err.find("scenarios[0].name: expected a string"), std::string::npos) << r.err;
  r = report(
      {kData + "small_results.json", kData + "small_results.json", kData + "small_results.json"});
  EXPECT_EQ(r.exit_code(), 2) << r.describe();
  EXPECT_FALSE(fs::exists(dir / "r.html"));
}

TEST(Report, WithoutGnuplotTheTablesStillCome) {
  fs::path dir = work_dir("no_gnuplot");
  auto results = doorbell::lab::read_results_file(kData + "small_results.json");
  doorbell::report::ReportOptions options;
  options.gnuplot = "/nonexistent/gnuplot";
  auto summary = doorbell::report::write_html_report({results}, (dir / "r.html").string(), options);
  EXPECT_FALSE(summary.gnuplot_found);
  EXPECT_TRUE(summary.plots.empty());
  std::string html = slurp(dir / "r.html");
  EXPECT_NE(html.find("gnuplot was not found"), std::string::npos);
  EXPECT_NE(html.find("ladder/self_kill"), std::string::npos);
  EXPECT_TRUE(referenced_plots(html).empty());
}

// A gnuplot that never finishes is killed after the plot timeout, and the
// plot is reported failed instead of holding the report.
TEST(Report, AStuckGnuplotTimesOut) {
  fs::path dir = work_dir("stuck_gnuplot");
  const fs::path fake = dir / "gnuplot";
  std::ofstream(fake) << "#!/bin/sh\nexec sleep 60\n";
  fs::permissions(fake, fs::perms::owner_all);
  auto results = doorbell::lab::read_results_file(kData + "small_results.json");
  results.scenarios.resize(1);  // one group: a few plots
  doorbell::report::ReportOptions options;
  options.gnuplot = fake.string();
  options.plot_timeout = std::chrono::milliseconds(100);
  auto summary = doorbell::report::write_html_report({results}, (dir / "r.html").string(), options);
  EXPECT_TRUE(summary.gnuplot_found);
  EXPECT_TRUE(summary.plots.empty());
  ASSERT_FALSE(summary.failed_plots.empty());
  for (const auto& f : summary.failed_plots)
    EXPECT_NE(f.find("did not finish within 100 ms"), std::string::npos) << f;
}

// Two machines that differ in the cost of a kernel entry: a KVM guest with
// PTI on (1.02 µs a syscall) and one not affected (195 ns).
doorbell::lab::ResultsFile machine(const std::string& pti, double syscall_ns, double signal_ns) {
  const std::string text = R"({"schema": "doorbell-results", "schema_version": 1,
    "environment": {"hypervisor": "KVM", "pti": ")" +
                           pti + R"(", "syscall_ns": )" + std::to_string(syscall_ns) +
                           R"(, "machine_summary": "KVM guest, PTI )" + pti + R"("},
    "scenarios": [
      {"name": "ladder/syscall_getpid", "metrics": {"latency": {"p50": )" +
                           std::to_string(syscall_ns) + R"(}}},
      {"name": "ladder/signal_kill_handler", "metrics": {"latency": {"p50": )" +
                           std::to_string(signal_ns) + R"(}}},
      {"name": "ladder/atomic_store_load_seq_cst", "metrics": {"latency": {"p50": 2.0}}}],
    "ratios": [{"name": "self-signal / atomic store+load", "numerator": "ladder/signal_kill_handler",
                "denominator": "ladder/atomic_store_load_seq_cst", "statistic": "p50",
                "available": false, "value": null, "why": "the denominator is 0: because"}]})";
  return doorbell::lab::parse_results(text);
}

TEST(Report, ComparisonExplainsTheMachinesInOneLine) {
  const auto a = machine("on", 1020, 3500);
  const auto b = machine("not affected", 195, 700);
  const std::string line = doorbell::report::explain_machines({"A", &a}, {"B", &b});
  EXPECT_EQ(line.rfind("B's kernel entry is 5.23x cheaper (getpid row p50 195 ns vs 1.02 µs: "
                       "KVM/PTI not affected vs KVM/PTI on): syscall- and signal-bound rows "
                       "differ by that, atomics do not",
                       0),
            0u)
      << line;
  EXPECT_NE(line.find("(here: signal row A 5.00x slower, atomic row about equal)"),
            std::string::npos)
      << line;
  // About the same cost: said so; a file with neither the row nor syscall_ns:
  // said so; one without the row: both probes, said so.
  const auto a2 = machine("on", 1000, 3500);
  EXPECT_NE(doorbell::report::explain_machines({"A", &a}, {"C", &a2}).find("about the same cost"),
            std::string::npos);
  doorbell::lab::ResultsFile old = a;
  old.environment.clear();
  old.scenarios.clear();
  EXPECT_NE(doorbell::report::explain_machines({"old", &old}, {"B", &b})
                .find("old does not record the cost of a kernel entry"),
            std::string::npos);
  doorbell::lab::ResultsFile no_row = a;
  no_row.scenarios.clear();
  EXPECT_NE(doorbell::report::explain_machines({"A", &no_row}, {"B", &b})
                .find("B's kernel entry is 5.23x cheaper (syscall probe at start-up 195 ns"),
            std::string::npos)
      << doorbell::report::explain_machines({"A", &no_row}, {"B", &b});

  fs::path dir = work_dir("machines");
  doorbell::report::ReportOptions options;
  options.gnuplot = "/nonexistent/gnuplot";
  options.labels = {"A", "B"};
  doorbell::report::write_html_report({a, b}, (dir / "c.html").string(), options);
  const std::string html = slurp(dir / "c.html");
  const auto first_table = html.find("<table");
  const auto explained = html.find("B's kernel entry is 5.23x cheaper");
  ASSERT_NE(explained, std::string::npos) << html.substr(0, 3000);
  EXPECT_LT(explained, first_table);
  // A ratio not computed says why, never a bare n/a.
  EXPECT_NE(html.find("not computed: the denominator is 0: because"), std::string::npos);
}

// Issue 36 item 6: one VM's start-up probe read 648 ns and a minute later
// 424 ns while the ladder's getpid row read 421 ns both times; report said
// "kernel entry is 1.53x cheaper" and "syscall row about equal" in one
// sentence. The row, where both ran it, decides.
TEST(Report, ComparisonTrustsTheSyscallRowOverTheProbe) {
  auto a = machine("on", 421, 3500);
  auto b = machine("on", 421, 3500);
  auto set_probe = [](doorbell::lab::ResultsFile& f, const std::string& ns) {
    for (auto& [key, value] : f.environment)
      if (key == "syscall_ns") value = ns;
  };
  set_probe(a, "648");
  set_probe(b, "424");
  ASSERT_EQ(a.environment_value("syscall_ns"), "648");
  const std::string line = doorbell::report::explain_machines({"A", &a}, {"B", &b});
  EXPECT_NE(line.find("about the same cost (getpid row p50 421 ns vs 421 ns"), std::string::npos)
      << line;
  EXPECT_EQ(line.find("cheaper"), std::string::npos) << line;
  EXPECT_EQ(line.find("1.53x"), std::string::npos) << line;
}

TEST(Report, SingleReportOpensWithTheMachineAndTheSummary) {
  const auto a = machine("on", 1020, 3500);
  fs::path dir = work_dir("first_screen");
  doorbell::report::ReportOptions options;
  options.gnuplot = "/nonexistent/gnuplot";
  doorbell::report::write_html_report({a}, (dir / "r.html").string(), options);
  const std::string html = slurp(dir / "r.html");
  const auto first_table = html.find("<table");
  const auto machine_line = html.find("<b>machine</b>: KVM guest, PTI on");
  const auto summary = html.find("<b>On this machine</b>");
  ASSERT_NE(machine_line, std::string::npos) << html.substr(0, 3000);
  ASSERT_NE(summary, std::string::npos) << html.substr(0, 3000);
  EXPECT_LT(machine_line, first_table);
  EXPECT_LT(summary, first_table);
  EXPECT_NE(html.find("1750x an atomic store+load and 3.43x a syscall"), std::string::npos)
      << html.substr(summary, 2000);
  EXPECT_NE(html.find("cheapest cross-thread wake-up</b>: not measured"), std::string::npos);
}

// A flagged row (samples longer than its budget) says so in its status cell
// and in the run's count, beside its figures.
TEST(Report, FlaggedRowsCarryTheirWarning) {
  auto results = doorbell::lab::read_results_file(kData + "small_results.json");
  ASSERT_FALSE(results.scenarios.empty());
  results.scenarios.front().warnings.push_back("2 samples longer than the repetition's budget");
  fs::path dir = work_dir("flagged");
  doorbell::report::ReportOptions options;
  options.gnuplot = "/nonexistent/gnuplot";
  doorbell::report::write_html_report({results}, (dir / "r.html").string(), options);
  const std::string html = slurp(dir / "r.html");
  EXPECT_NE(html.find("<td class=\"flag\">ok, flagged<br>WARNING: 2 samples longer than the "
                      "repetition's budget</td>"),
            std::string::npos)
      << html.substr(0, 4000);
  EXPECT_NE(html.find("of which 1 flagged: samples longer than their budget"), std::string::npos);
}

// Issue 36 item 5 and issue 34 item 9 in the report: a percentile its count
// cannot support carries the mark (with the FEW SAMPLES legend), and a ratio
// or a published figure built from a flagged row says so.
TEST(Report, FewSamplesAndFlaggedRowsTravelIntoRatiosAndReferences) {
  std::ifstream in(kData + "small_results.json");
  nlohmann::json j = nlohmann::json::parse(in);
  for (auto& s : j["scenarios"]) {
    if (s["name"] == "ladder/atomic_flag") s["metrics"]["latency"]["count"] = 9;
    if (s["name"] == "ladder/self_kill")
      s["warnings"] = {"1 sample longer than the repetition's budget"};
  }
  const auto results = doorbell::lab::results_from_json(j);
  fs::path dir = work_dir("few_samples");
  doorbell::report::ReportOptions options;
  options.gnuplot = "/nonexistent/gnuplot";
  doorbell::report::write_html_report({results}, (dir / "r.html").string(), options);
  const std::string html = slurp(dir / "r.html");
  EXPECT_NE(html.find("FEW SAMPLES"), std::string::npos);
  EXPECT_NE(html.find("class=\"n few\""), std::string::npos);
  // The ratio "signal / atomic" (ladder/self_kill over ladder/atomic_flag).
  const auto ratios = html.find("id=\"ratios\"");
  ASSERT_NE(ratios, std::string::npos);
  const std::string ratio_part = html.substr(ratios, html.find("id=\"references\"") - ratios);
  EXPECT_NE(ratio_part.find("FLAGGED: ladder/self_kill is flagged"), std::string::npos)
      << ratio_part;
  const std::string reference_part = html.substr(html.find("id=\"references\""), 4000);
  EXPECT_NE(reference_part.find("FLAGGED: ladder/self_kill is flagged"), std::string::npos)
      << reference_part;
}

// Issue 34 item 9 in the comparison of two runs: a B/A change built from a
// flagged row, or from a percentile its count cannot support, is marked.
TEST(Report, ComparisonMarksChangesFromFlaggedOrThinRows) {
  auto read = [](const std::string& file) {
    std::ifstream in(kData + file);
    return nlohmann::json::parse(in);
  };
  nlohmann::json a = read("small_results.json"), b = read("small_results_b.json");
  for (auto& s : b["scenarios"]) {
    if (s["name"] == "ladder/atomic_flag") s["metrics"]["latency"]["count"] = 50;
    if (s["name"] == "ladder/self_kill")
      s["warnings"] = {"1 sample longer than the repetition's budget"};
  }
  fs::path dir = work_dir("compare_flags");
  doorbell::report::ReportOptions options;
  options.gnuplot = "/nonexistent/gnuplot";
  doorbell::report::write_html_report(
      {doorbell::lab::results_from_json(a), doorbell::lab::results_from_json(b)},
      (dir / "r.html").string(), options);
  const std::string html = slurp(dir / "r.html");
  std::smatch m;
  // ladder/atomic_flag: p50 stands on 50 samples, p99 does not.
  ASSERT_TRUE(
      std::regex_search(html, m, std::regex("<tr><td><code>ladder/atomic_flag</code>.*?</tr>")));
  const std::string thin = m.str();
  EXPECT_NE(thin.find("*</td>"), std::string::npos) << thin;
  std::size_t marks = 0;
  for (std::size_t at = thin.find("!</td>"); at != std::string::npos;
       at = thin.find("!</td>", at + 1))
    ++marks;
  EXPECT_EQ(marks, 1u) << thin;  // the p99 change only
  // ladder/self_kill is flagged in B: both of its changes are marked.
  ASSERT_TRUE(
      std::regex_search(html, m, std::regex("<tr><td><code>ladder/self_kill</code>.*?</tr>")));
  const std::string flagged = m.str();
  marks = 0;
  for (std::size_t at = flagged.find("!</td>"); at != std::string::npos;
       at = flagged.find("!</td>", at + 1))
    ++marks;
  EXPECT_EQ(marks, 2u) << flagged;
}

TEST(Report, RejectsNoRunsAndMoreThanTwo) {
  auto results = doorbell::lab::read_results_file(kData + "small_results.json");
  EXPECT_THROW(doorbell::report::write_html_report({}, "/dev/null"), std::invalid_argument);
  EXPECT_THROW(doorbell::report::write_html_report({results, results, results}, "/dev/null"),
               std::invalid_argument);
}

TEST(Guide, MarkersAreParsedWithTheirPlace) {
  const std::string text =
      "a <!--m:p50 ladder/x-->4.44 µs<!--/m--> b `<!--m:...-->` "
      "<!--m:ratio self-signal / syscall-->3.83x<!--/m-->\n";
  auto markers = doorbell::report::parse_guide_markers(text);
  ASSERT_EQ(markers.size(), 2u);
  EXPECT_EQ(markers[0].kind, "p50");
  EXPECT_EQ(markers[0].source, "ladder/x");
  EXPECT_EQ(markers[0].figure, "4.44 µs");
  EXPECT_EQ(text.substr(markers[0].offset, markers[0].length),
            "<!--m:p50 ladder/x-->4.44 µs<!--/m-->");
  EXPECT_EQ(markers[1].kind, "ratio");
  EXPECT_EQ(markers[1].source, "self-signal / syscall");
  EXPECT_EQ(markers[1].figure, "3.83x");
}

TEST(Guide, FiguresComeFromTheResultsInTheOneSpelling) {
  auto results = doorbell::lab::parse_results(
      R"({"schema": "doorbell-results", "schema_version": 1,
          "scenarios": [{"name": "ladder/x", "metrics": {"latency": {"p50": 3100, "max": 1e7}}},
                        {"name": "ladder/y", "status": "skipped"}],
          "ratios": [{"name": "x / y", "value": 3.14159}, {"name": "gone", "value": null}]})");
  using doorbell::report::guide_figure;
  EXPECT_EQ(guide_figure(results, "p50", "ladder/x"), "3.10 µs");
  EXPECT_EQ(guide_figure(results, "max", "ladder/x"), "10.0 ms");
  EXPECT_EQ(guide_figure(results, "p99", "ladder/x"), "not measured");
  EXPECT_EQ(guide_figure(results, "p50", "ladder/y"), "not measured");
  EXPECT_EQ(guide_figure(results, "p50", "ladder/z"), "not measured");
  EXPECT_EQ(guide_figure(results, "ratio", "x / y"), "3.14x");
  EXPECT_EQ(guide_figure(results, "ratio", "gone"), "not measured");
  EXPECT_EQ(guide_figure(results, "counter", "ladder/x#over"), "not measured");
  auto check = doorbell::report::check_guide(
      "<!--m:p50 ladder/x-->3.1 µs<!--/m--> and <!--m:ratio x / y-->3.14x<!--/m-->", results);
  EXPECT_EQ(check.figures, 2u);
  EXPECT_EQ(check.same, 1u);
  EXPECT_TRUE(check.differences.empty());
  ASSERT_EQ(check.agree.size(), 1u);
  EXPECT_EQ(check.agree[0],
            "p50 ladder/x: the guide says \"3.1 µs\", the results give \"3.10 µs\" (within 25%: "
            "agrees)");
  EXPECT_EQ(check.updated,
            "<!--m:p50 ladder/x-->3.10 µs<!--/m--> and <!--m:ratio x / y-->3.14x<!--/m-->");
}

// Issue 36 item 10: a partial results file made every figure it does not
// measure "differ", and 10.8x vs 10.4x differed as much as 115x vs 1413x.
// Not measured is its own count; within kGuideTolerance a figure agrees.
const char* const kPartial = R"({"schema": "doorbell-results", "schema_version": 1,
    "scenarios": [{"name": "ladder/x", "metrics": {"latency": {"p50": 3100, "p99": 4.1e6}}}],
    "ratios": [{"name": "self-signal / syscall", "value": 10.8},
               {"name": "stock / remedy", "value": 1413}]})";
const char* const kPartialGuide =
    "a <!--m:ratio self-signal / syscall-->10.4x<!--/m--> b <!--m:ratio stock / "
    "remedy-->115x<!--/m--> c <!--m:p50 ladder/x-->3.10 µs<!--/m--> d <!--m:p99 "
    "ladder/x-->4.00 ms<!--/m--> e <!--m:p50 ladder/gone-->7.00 µs<!--/m--> f <!--m:ratio "
    "gone-->2.00x<!--/m-->\n";

TEST(Guide, NotMeasuredIsNotADifferenceAndCloseFiguresAgree) {
  const auto results = doorbell::lab::parse_results(kPartial);
  const auto check = doorbell::report::check_guide(kPartialGuide, results);
  EXPECT_EQ(check.figures, 6u);
  EXPECT_EQ(check.same, 1u);
  ASSERT_EQ(check.agree.size(), 2u);
  EXPECT_NE(check.agree[0].find("\"10.4x\", the results give \"10.8x\" (within 25%: agrees)"),
            std::string::npos)
      << check.agree[0];
  EXPECT_NE(check.agree[1].find("\"4.00 ms\", the results give \"4.10 ms\""), std::string::npos);
  ASSERT_EQ(check.differences.size(), 1u);
  EXPECT_EQ(check.differences[0],
            "ratio stock / remedy: the guide says \"115x\", the results give \"1413x\" (12.3x "
            "apart)");
  EXPECT_EQ(check.not_measured, (std::vector<std::string>{"p50 ladder/gone", "ratio gone"}));
  using doorbell::report::figure_factor;
  EXPECT_DOUBLE_EQ(figure_factor("1.00 ms", "1000 µs"), 1.0);
  EXPECT_NEAR(figure_factor("10.4x", "10.8x"), 10.8 / 10.4, 1e-12);
  EXPECT_TRUE(std::isnan(figure_factor("10 ns", "10x")));
  EXPECT_TRUE(std::isnan(figure_factor("fast", "slow")));
}

// The same through the CLI: exit 1 for the one that differs, the others
// said apart (before: 5 "differ", the unmeasured among them).
TEST(Guide, TheCheckSaysSameAgreeDifferAndNotMeasured) {
  const fs::path dir = work_dir("guide_tolerance");
  std::ofstream(dir / "r.json") << kPartial;
  std::ofstream(dir / "g.md") << kPartialGuide;
  auto r = run_doorbell({"guide", (dir / "r.json").string(), (dir / "g.md").string()});
  EXPECT_EQ(r.exit_code(), 1) << r.describe();
  EXPECT_NE(r.out.find(": 6 figures against " + (dir / "r.json").string() +
                       ": 1 the same, 2 within 25% (agree), 1 differ, 2 not measured in it"),
            std::string::npos)
      << r.out;
  EXPECT_NE(r.err.find("115x"), std::string::npos) << r.err;
  EXPECT_EQ(r.err.find("ladder/gone"), std::string::npos) << r.err;
  // Without the far one: exit 0.
  std::ofstream(dir / "g.md") << "<!--m:ratio self-signal / syscall-->10.4x<!--/m--> "
                                 "<!--m:ratio gone-->2.00x<!--/m-->\n";
  r = run_doorbell({"guide", (dir / "r.json").string(), (dir / "g.md").string()});
  EXPECT_EQ(r.exit_code(), 0) << r.describe();
}

// A marker may name a metric other than the primary one, or a counter
// (median across repetitions): "SCENARIO#NAME".
TEST(Guide, MarkersNameAMetricOrACounter) {
  auto results = doorbell::lab::parse_results(
      R"({"schema": "doorbell-results", "schema_version": 1,
          "scenarios": [{"name": "e2e/s", "metrics": {"latency": {"p50": 3100},
                                                      "delay": {"p99": 2.5e6},
                                                      "ratio": {"unit": "x", "p50": 0.956}},
                         "counters": {"over_1ms": {"per_repetition": [1, 3, 2], "median": 2},
                                      "error_percent": {"per_repetition": [1.3333, 1.5],
                                                        "median": 1.41665}}}]})");
  using doorbell::report::guide_figure;
  EXPECT_EQ(guide_figure(results, "p99", "e2e/s#delay"), "2.50 ms");
  EXPECT_EQ(guide_figure(results, "p50", "e2e/s#ratio"), "0.956 x");
  EXPECT_EQ(guide_figure(results, "p50", "e2e/s#gone"), "not measured");
  EXPECT_EQ(guide_figure(results, "counter", "e2e/s#over_1ms"), "2");
  EXPECT_EQ(guide_figure(results, "counter", "e2e/s#error_percent"), "1.42");
  EXPECT_EQ(guide_figure(results, "counter", "e2e/s#gone"), "not measured");
  EXPECT_EQ(guide_figure(results, "counter", "e2e/t#over_1ms"), "not measured");
}

// The guide's figures equal the committed results file (docs/results/).
TEST(Guide, FiguresMatchTheCommittedResults) {
  const std::string results =
      std::string(DOORBELL_SOURCE_DIR) + "/docs/results/kvm-firecracker-intel-xeon-2vcpu.json";
  const std::string guide = std::string(DOORBELL_SOURCE_DIR) + "/docs/guide.md";
  auto r = run_doorbell({"guide", results, guide});
  EXPECT_TRUE(r.success()) << r.describe();
  // Every figure exactly as the results give it, not merely within 25%.
  EXPECT_NE(r.out.find(" 0 within 25% (agree), 0 differ\n"), std::string::npos) << r.out << r.err;
  // Every section of the guide quotes at least one checked figure, and the
  // committed results measure every figure it quotes.
  const std::string text = slurp(guide);
  EXPECT_EQ(text.find("not measured"), std::string::npos);
  std::size_t sections = 0;
  for (std::size_t at = text.find("\n## "); at != std::string::npos;
       at = text.find("\n## ", at + 1)) {
    const std::size_t end = text.find("\n## ", at + 1);
    const std::string section = text.substr(at, end == std::string::npos ? end : end - at);
    ++sections;
    EXPECT_NE(section.find("<!--m:"), std::string::npos)
        << "a guide section without a checked figure: " << section.substr(0, 80);
  }
  EXPECT_GE(sections, 10u);
}

// The README's and docs/delivery.md's figures equal the committed results
// file too.
TEST(Guide, ReadmeAndDeliveryFiguresMatchTheCommittedResults) {
  const std::string results =
      std::string(DOORBELL_SOURCE_DIR) + "/docs/results/kvm-firecracker-intel-xeon-2vcpu.json";
  for (const char* doc : {"/README.md", "/docs/delivery.md"}) {
    const std::string path = std::string(DOORBELL_SOURCE_DIR) + doc;
    auto r = run_doorbell({"guide", results, path});
    EXPECT_TRUE(r.success()) << doc << ": " << r.describe();
    EXPECT_NE(r.out.find(" 0 within 25% (agree), 0 differ\n"), std::string::npos) << r.out << r.err;
    EXPECT_EQ(slurp(path).find("not measured"), std::string::npos) << doc;
  }
}

TEST(Guide, ADriftedFigureIsCaughtAndUpdateFixesIt) {
  fs::path dir = work_dir("guide_drift");
  const std::string results =
      std::string(DOORBELL_SOURCE_DIR) + "/docs/results/kvm-firecracker-intel-xeon-2vcpu.json";
  std::string guide = slurp(std::string(DOORBELL_SOURCE_DIR) + "/docs/guide.md");
  std::regex first_figure("(<!--m:p50 ladder/signal_kill_handler-->)[^<]*(<!--/m-->)");
  ASSERT_TRUE(std::regex_search(guide, first_figure));
  std::string drifted = std::regex_replace(guide, first_figure, "$011.00 ns$02",
                                           std::regex_constants::format_first_only);
  std::ofstream(dir / "guide.md") << drifted;
  const std::vector<std::string> check = {"guide", results, (dir / "guide.md").string()};
  auto r = run_doorbell(check);
  EXPECT_EQ(r.exit_code(), 1) << r.describe();
  EXPECT_NE(r.err.find("ladder/signal_kill_handler"), std::string::npos) << r.err;
  std::vector<std::string> update = check;
  update.push_back("--update");
  r = run_doorbell(update);
  EXPECT_TRUE(r.success()) << r.describe();
  EXPECT_EQ(slurp(dir / "guide.md"), guide);
  r = run_doorbell(check);
  EXPECT_TRUE(r.success()) << r.describe();
  r = run_doorbell({"guide", (dir / "missing.json").string(), (dir / "guide.md").string()});
  EXPECT_EQ(r.exit_code(), 2) << r.describe();
}

// The rate limiter's crossover plot (issue 31), from rows made here: per
// design and thread count, the least work regime whose on/off (baseline p50 /
// p50) is >= 0.95, "beyond" when none is; limited rows are not used.
TEST(Report, RateLimiterCrossoverPlot_KnownAnswers) {
  doorbell::lab::ResultsFile file;
  auto row = [&](const std::string& method, int threads, int work, const char* regime,
                 double on_off) {
    doorbell::lab::ScenarioRecord s;
    s.name = "ratelimit/" + method + ":threads=" + std::to_string(threads) +
             ",work_ns=" + std::to_string(work) + ",regime=" + regime;
    s.group = "ratelimit";
    s.params = {{"threads", std::to_string(threads)},
                {"work_ns", std::to_string(work)},
                {"method", method},
                {"regime", regime}};
    doorbell::lab::MetricRecord latency, baseline;
    latency.name = "latency";
    latency.summary.p50 = 100.0;
    baseline.name = "baseline";
    baseline.summary.p50 = 100.0 * on_off;
    s.metrics = {latency, baseline};
    file.scenarios.push_back(s);
  };
  for (int t : {1, 2}) {
    row("ours", t, 30, "never", 0.99);  // holds from the least work
    row("ours", t, 3000, "never", 1.0);
    row("seed", t, 30, "never", t == 1 ? 0.97 : 0.3);  // needs 3000 ns at T=2
    row("seed", t, 3000, "never", 0.96);
    row("mutex", t, 30, "never", 0.2);  // never there
    row("mutex", t, 3000, "never", 0.9);
    row("mutex", t, 30, "limited", 0.99);  // limited rows do not count
  }
  std::vector<std::string> names;
  for (const auto& s : file.scenarios) names.push_back(s.name);
  const std::vector<doorbell::report::LabeledRun> runs = {{"A", &file}};
  const auto plots = doorbell::report::group_plots("ratelimit", names, runs);
  const auto it = std::find_if(plots.begin(), plots.end(),
                               [](const auto& p) { return p.file == "ratelimit_crossover.svg"; });
  ASSERT_NE(it, plots.end());
  for (const char* value : {"ours T=1: 30 ns", "ours T=2: 30 ns", "seed T=1: 30 ns",
                            "seed T=2: 3000 ns", "mutex T=1: > 3000 ns", "mutex T=2: > 3000 ns"})
    EXPECT_NE(it->caption.find(value), std::string::npos) << value << " in: " << it->caption;
  EXPECT_NE(it->script.find("\"beyond 3000 ns\" 2"), std::string::npos) << it->script;
  // Another group: no crossover plot.
  const auto other = doorbell::report::group_plots("ladder", names, runs);
  EXPECT_TRUE(std::none_of(other.begin(), other.end(),
                           [](const auto& p) { return p.file == "ratelimit_crossover.svg"; }));
}

}  // namespace
#else
TEST(Report, NeedsTheLab) {
  GTEST_SKIP() << "built without the lab (DOORBELL_BUILD_LAB=OFF)";
}
#endif
