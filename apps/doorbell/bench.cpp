// doorbell bench: run the lab.
#include <sys/stat.h>

#include <CLI/CLI.hpp>
#include <cerrno>
#include <ctime>
#include <filesystem>
#include <iostream>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "apps/doorbell/command.h"
#include "lab/harness/results.h"
#include "lab/harness/results_reader.h"
#include "lab/harness/runner.h"
#include "lab/report/html.h"

namespace doorbell::cli {
namespace {

struct BenchOptions {
  bool list = false;
  std::vector<std::string> filters;
  bool quick = false;
  int repeat = 0;  // 0: 5, or 3 with --quick
  std::string suite = "default";
  std::string json_path;
  std::string csv_path;
  std::string out_dir;
  bool no_progress = false;
  double scenario_timeout_s = 0.0;  // 0: 10 x budget + 10 s per repetition
};

std::string default_out_dir() {
  std::time_t now = std::time(nullptr);
  char stamp[32];
  std::strftime(stamp, sizeof stamp, "%Y%m%d-%H%M%S", std::gmtime(&now));
  return std::string("results/") + stamp;
}

void list_scenarios(const std::vector<const lab::Scenario*>& selected) {
  std::string group;
  for (const auto* s : selected) {
    if (s->group != group) {
      group = s->group;
      std::cout << group << "\n";
    }
    std::cout << fmt::format("  {:<52} {}{}\n", s->name, s->title,
                             s->in_default_suite ? "" : "  [full suite]");
  }
  std::cout << selected.size() << " scenarios\n";
}

void run_bench(const BenchOptions& o) {
  lab::RunOptions options;
  options.filters = o.filters;
  options.quick = o.quick;
  options.suite = o.suite;
  options.repetitions = o.repeat > 0 ? o.repeat : (o.quick ? 3 : 5);
  options.progress = !o.no_progress;
  options.scenario_timeout_s = o.scenario_timeout_s;
  const auto selected = lab::select_scenarios(options);
  if (selected.empty()) {
    std::string what = o.filters.empty() ? "suite '" + o.suite + "'" : "--filter";
    for (const auto& f : o.filters) what += " '" + f + "'";
    throw UsageError("no scenario matches " + what + "; 'doorbell bench --list' shows them");
  }
  if (o.list) {
    list_scenarios(selected);
    return;
  }
  // Decide where results go before running, so a bad path fails early.
  std::string json_path = o.json_path;
  std::string csv_path = o.csv_path;
  if (is_stdout(csv_path))
    throw UsageError("--csv takes a file; '--json -' writes the results to stdout");
  std::string out_dir;
  if (json_path.empty() && csv_path.empty()) {
    out_dir = o.out_dir.empty() ? default_out_dir() : o.out_dir;
    std::error_code ec;
    std::filesystem::create_directories(out_dir, ec);
    if (ec)
      throw UsageError("cannot create the results directory '" + out_dir + "': " + ec.message());
    json_path = out_dir + "/results.json";
    csv_path = out_dir + "/results.csv";
  }
  // With --json - stdout carries the JSON alone; the table and the lines that
  // say where files went go to stderr (command.h).
  const bool json_to_stdout = is_stdout(json_path);
  std::ostream& human = json_to_stdout ? std::cerr : std::cout;
  const lab::RunResults results = lab::run_scenarios(options, selected);
  lab::print_table(results, human);
  human << "\n";
  if (json_to_stdout) {
    std::cout << lab::to_json(results, DOORBELL_VERSION).dump(1) << "\n" << std::flush;
    if (!std::cout) throw std::runtime_error("cannot write the results (JSON) to stdout");
  } else if (!json_path.empty()) {
    lab::write_json(results, DOORBELL_VERSION, json_path);
    human << "results (JSON): " << json_path << "\n";
  }
  if (!csv_path.empty()) {
    lab::write_csv(results, csv_path);
    human << "results (CSV):  " << csv_path << "\n";
  }
  if (!out_dir.empty()) {
    // The HTML report beside the results; a report that cannot be drawn
    // does not cost the results already written.
    const std::string report_path = out_dir + "/report.html";
    try {
      report::write_html_report({lab::results_from_json(lab::to_json(results, DOORBELL_VERSION))},
                                report_path);
      human << "report (HTML):  " << report_path << "\n";
    } catch (const std::exception& e) {
      std::cerr << "doorbell bench: no HTML report: " << e.what() << "\n";
    }
  }
  std::vector<const lab::ScenarioResult*> failed, flagged;
  for (const auto& r : results.scenarios) {
    if (r.status == lab::ScenarioResult::Status::failed) failed.push_back(&r);
    if (!r.warnings.empty()) flagged.push_back(&r);
  }
  for (const auto* r : flagged)
    std::cerr << "doorbell bench: flagged " << r->scenario->name << ": " << r->warnings.front()
              << "\n";
  if (!failed.empty()) {
    std::cerr << "doorbell bench: " << failed.size()
              << (failed.size() == 1 ? " scenario failed:\n" : " scenarios failed:\n");
    for (const auto* r : failed)
      std::cerr << "  " << r->scenario->name << ": " << r->reason << "\n";
    set_exit_code(1);
  }
}

const CommandRegistrar kBench{
    "bench", 10, [](CLI::App& app) {
      auto options = std::make_shared<BenchOptions>();
      auto* cmd = app.add_subcommand("bench", "Run the lab: every mechanism measured side by side");
      cmd->add_flag("--list", options->list, "List the selected scenarios and exit");
      cmd->add_option(
          "--filter", options->filters,
          "Run the scenarios whose name matches this glob (repeatable), e.g. 'ladder/*'; "
          "full-suite rows need --suite full or their exact name");
      cmd->add_flag("--quick", options->quick,
                    "Short run: 1/5 of the time budget, 1/10 of the samples, 3 repetitions");
      cmd->add_option("--repeat", options->repeat,
                      "Repetitions after the warm-up (default 5, 3 with --quick)")
          ->check(CLI::Range(1, 1000));
      cmd->add_option("--suite", options->suite, "Which suite runs without --filter")
          ->check(CLI::IsMember({"default", "full"}));
      cmd->add_option("--json", options->json_path,
                      "Write the results as JSON to FILE; '-': to stdout, and the table to stderr");
      cmd->add_option("--csv", options->csv_path, "Write the results as CSV to FILE");
      cmd->add_option("--out", options->out_dir,
                      "Directory for results.json and results.csv when neither --json nor --csv is "
                      "given (default results/<UTC time>)");
      cmd->add_flag("--no-progress", options->no_progress, "No progress line on the terminal");
      cmd->add_option("--scenario-timeout", options->scenario_timeout_s,
                      "Hard limit of one repetition in seconds: a scenario past it is stopped "
                      "and reported failed (default 10 x its budget + 10 s)")
          ->check(CLI::Range(0.001, 86400.0));
      cmd->callback([options] { run_bench(*options); });
    }};

}  // namespace
}  // namespace doorbell::cli
