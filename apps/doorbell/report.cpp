// doorbell report RESULTS.json [B.json] -o report.html
//
// One results file: the report of that run. Two: the comparison, B against A.
// The report itself is lab/report/ (html.h); this file is the command line.
#include <CLI/CLI.hpp>
#include <iostream>
#include <memory>

#include "apps/doorbell/command.h"
#include "apps/doorbell/options.h"
#include "lab/common/output_file.h"
#include "lab/harness/results_reader.h"
#include "lab/report/compare.h"
#include "lab/report/html.h"

namespace doorbell::cli {
namespace {

struct ReportArgs {
  std::string file;
  std::string file_b;  // empty: a report of one run
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
      // Two positionals, so that the usage line reads "RESULTS.json [B.json]".
      cmd->add_option("RESULTS.json", args->file, "a results file (doorbell bench --json)")
          ->required()
          ->type_name("FILE")
          ->check(nonempty_path());
      cmd->add_option("B.json", args->file_b, "a second results file: compare it with the first")
          ->type_name("FILE")
          ->check(nonempty_path());
      cmd->add_option("-o,--output", args->output, "the HTML file to write")
          ->capture_default_str()
          ->type_name("OUTFILE")
          ->check(nonempty_path());
      cmd->add_option("--plots-dir", args->plots_dir,
                      "also keep every plot's .svg and gnuplot script in this directory")
          ->type_name("OUTDIR")
          ->check(nonempty_path());
      cmd->add_option("--label", args->labels, "a name for each run (default: the file names)")
          ->expected(1, 2);
      cmd->callback([args] {
        std::vector<std::string> files{args->file};
        if (!args->file_b.empty()) files.push_back(args->file_b);
        std::vector<lab::ResultsFile> runs;
        for (const auto& f : files) {
          check_input_file("report", f);
          try {
            runs.push_back(lab::read_results_file(f));
          } catch (const lab::ResultsError& e) {
            throw UsageError(std::string("report: ") + e.what());
          }
        }
        report::ReportOptions options;
        options.labels = args->labels.empty() ? report::run_labels(files) : args->labels;
        if (options.labels.size() != runs.size())
          throw UsageError("report: give one --label per results file");
        // Where it goes is checked before gnuplot runs.
        check_output_file("report", "--output", args->output);
        if (!args->plots_dir.empty())
          ensure_output_directory("report", "--plots-dir", args->plots_dir);
        options.plots_dir = args->plots_dir;
        report::ReportSummary summary;
        lab::write_file_atomically(args->output, [&](const std::string& temp) {
          summary = report::write_html_report(runs, temp, options);
        });
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
