// doorbell report RESULTS.json [B.json] -o report.html
//
// One results file: the report of that run. Two: the comparison, B against A.
#include <CLI/CLI.hpp>
#include <filesystem>
#include <iostream>
#include <stdexcept>

#include "apps/doorbell/command.h"
#include "apps/doorbell/report.h"

namespace doorbell::cli {
namespace {

// "results.json", or "<dir>/results.json" when the two names alone are equal.
std::vector<std::string> labels_for(const std::vector<std::string>& files) {
  namespace fs = std::filesystem;
  std::vector<std::string> labels;
  for (const auto& f : files) labels.push_back(fs::path(f).filename().string());
  if (labels.size() == 2 && labels[0] == labels[1]) {
    for (std::size_t i = 0; i < 2; ++i) {
      fs::path p(files[i]);
      std::string parent = p.parent_path().filename().string();
      labels[i] = parent.empty() ? files[i] : parent + "/" + labels[i];
    }
    if (labels[0] == labels[1]) labels = {"A: " + files[0], "B: " + files[1]};
  }
  return labels;
}

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
        std::vector<nlohmann::json> runs;
        for (const auto& f : args->files) {
          try {
            runs.push_back(report::load_results(f));
          } catch (const std::invalid_argument& e) {
            throw UsageError(std::string("report: ") + e.what());
          }
        }
        report::ReportOptions options;
        options.labels = args->labels.empty() ? labels_for(args->files) : args->labels;
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
