// doorbell report RESULTS.json [B.json] -o report.html
//
// One results file: the report of that run. Two: the comparison, B against A.
// The report itself is lab/report/ (html.h); this file is the command line.
#include <CLI/CLI.hpp>
#include <iostream>
#include <memory>

#include "apps/doorbell/command.h"
#include "lab/harness/results_reader.h"
#include "lab/report/compare.h"
#include "lab/report/html.h"

namespace doorbell::cli {
namespace {

struct ReportArgs {
  std::vector<std::string> files;
  std::string output = "report.html";
  std::string plots_dir;
  std::vector<std::string> labels;
};

const CommandRegistrar kReport{
    "report", 40, [](CLI::App& app) {
      auto args = std::make_shared<ReportArgs>();
      auto* cmd = app.add_subcommand("report",
                                     "Write a self-contained HTML report (plots by gnuplot) of a "
                                     "results file, or compare two");
      cmd->add_option("results", args->files, "RESULTS.json, or A.json B.json to compare B with A")
          ->required()
          ->expected(1, 2);
      cmd->add_option("-o,--output", args->output, "the HTML file to write")->capture_default_str();
      cmd->add_option("--plots-dir", args->plots_dir,
                      "also keep every plot's .svg and gnuplot script in this directory");
      cmd->add_option("--label", args->labels, "a name for each run (default: the file names)")
          ->expected(1, 2);
      cmd->callback([args] {
        std::vector<lab::ResultsFile> runs;
        for (const auto& f : args->files) {
          try {
            runs.push_back(lab::read_results_file(f));
          } catch (const lab::ResultsError& e) {
            throw UsageError(std::string("report: ") + e.what());
          }
        }
        report::ReportOptions options;
        options.labels = args->labels.empty() ? report::run_labels(args->files) : args->labels;
        if (options.labels.size() != runs.size())
          throw UsageError("report: give one --label per results file");
        options.plots_dir = args->plots_dir;
        auto summary = report::write_html_report(runs, args->output, options);
        std::cout << "wrote " << args->output << " (" << summary.plots.size() << " plots";
        if (!summary.failed_plots.empty())
          std::cout << ", " << summary.failed_plots.size() << " failed";
        std::cout << ")\n";
        if (!summary.gnuplot_found)
          std::cerr << "doorbell report: gnuplot not found: the report has tables only (Debian: "
                       "apt-get install gnuplot-nox)\n";
        for (const auto& f : summary.failed_plots)
          std::cerr << "doorbell report: plot " << f << "\n";
        if (!summary.failed_plots.empty()) set_exit_code(1);
      });
    }};

}  // namespace
}  // namespace doorbell::cli
