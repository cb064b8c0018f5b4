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
#include "apps/doorbell/options.h"
#include "doorbell/signal_channel.h"
#include "lab/common/output_file.h"
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
    // A glob matches default-suite rows only unless --suite full: point at
    // the listing that shows the full suite.
    throw UsageError("no scenario matches " + what +
                     (o.suite == "full" ? "; 'doorbell bench --list --suite full' shows them"
                                        : " in the default suite (full-suite rows need --suite "
                                          "full; 'doorbell bench --list --suite full' lists "
                                          "every row)"));
  }
  if (o.list) {
    list_scenarios(selected);
    return;
  }
  // Decide where results go, and check that each can be written, before
  // running: a bad path must not cost the run.
  std::string json_path = o.json_path;
  std::string csv_path = o.csv_path;
  if (is_stdout(csv_path))
    throw UsageError("--csv takes a file; '--json -' writes the results to stdout");
  std::string out_dir;
  if (json_path.empty() && csv_path.empty()) {
    out_dir = o.out_dir.empty() ? default_out_dir() : o.out_dir;
    ensure_output_directory("bench", "--out", out_dir);
    json_path = out_dir + "/results.json";
    csv_path = out_dir + "/results.csv";
  }
  if (!json_path.empty() && !is_stdout(json_path))
    check_output_file("bench", o.json_path.empty() ? "--out" : "--json", json_path);
  if (!csv_path.empty())
    check_output_file("bench", o.csv_path.empty() ? "--out" : "--csv", csv_path);
  // With --json - stdout carries the JSON alone; the table and the lines that
  // say where files went go to stderr (command.h).
  const bool json_to_stdout = is_stdout(json_path);
  std::ostream& human = json_to_stdout ? std::cerr : std::cout;
  // Ctrl-C and SIGTERM stop the run, not the command: the running row's
  // process is killed and cleaned up after, the rows completed are written
  // as below (the results marked interrupted), and the exit status is
  // 128 + the signal (docs/lab.md). A signal while the files are written
  // lets them finish.
  const lab::StopOnSignals stop_on_signals;
  const lab::RunResults results = lab::run_scenarios(options, selected);
  stop_on_signals.restart_interrupted_calls();
  lab::print_table(results, human);
  human << "\n" << std::flush;
  // Each file is written atomically (a temporary file beside it, renamed
  // over it); one that fails does not stop the others: it is said, and the
  // command exits 1.
  std::vector<std::string> write_errors;
  auto write = [&](const char* what, const std::string& path, auto&& writer) {
    try {
      writer();
      human << what << path << "\n";
    } catch (const std::exception& e) {
      write_errors.push_back(e.what());
    }
  };
  // One document for stdout or the file and for the report; names that are
  // not UTF-8 are written with U+FFFD.
  const nlohmann::json document = lab::to_json(results, DOORBELL_VERSION);
  const auto text = [&] {
    return document.dump(1, ' ', false, nlohmann::json::error_handler_t::replace) + "\n";
  };
  if (json_to_stdout) {
    std::cout << text() << std::flush;
    if (!std::cout) write_errors.push_back("cannot write the results (JSON) to stdout");
  } else if (!json_path.empty()) {
    write("results (JSON): ", json_path, [&] { lab::write_file_atomically(json_path, text()); });
  }
  if (!csv_path.empty())
    write("results (CSV):  ", csv_path, [&] {
      lab::write_file_atomically(csv_path,
                                 [&](const std::string& temp) { lab::write_csv(results, temp); });
    });
  if (!out_dir.empty()) {
    // The HTML report beside the results; a report that cannot be drawn
    // does not cost the results already written.
    const std::string report_path = out_dir + "/report.html";
    try {
      lab::write_file_atomically(report_path, [&](const std::string& temp) {
        report::write_html_report({lab::results_from_json(document)}, temp);
      });
      human << "report (HTML):  " << report_path << "\n";
    } catch (const std::exception& e) {
      std::cerr << "doorbell bench: no HTML report: " << e.what() << "\n";
    }
  }
  for (const auto& e : write_errors)
    std::cerr << "doorbell bench: " << e << " (the table above and the other files stand)\n";
  if (!write_errors.empty()) set_exit_code(1);
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
  if (const int sig = lab::stop_signal(); sig != 0) {
    const lab::Interruption& stop = results.interrupted;
    if (stop.signal != 0)
      std::cerr << "doorbell bench: interrupted by " << signal_name(sig) << ": "
                << results.scenarios.size() - (stop.during.empty() ? 0 : 1)
                << " row(s) completed and written, " << stop.not_run.size() << " not run\n";
    else
      std::cerr << "doorbell bench: " << signal_name(sig)
                << " after the run: the results written are complete\n";
    set_exit_code(128 + sig);
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
             "full-suite rows need --suite full or their exact name")
          ->type_name("SCENARIO");
      cmd->add_flag("--quick", options->quick,
                    "Short run: 1/5 of the time budget, 1/10 of the samples, 3 repetitions");
      cmd->add_option("--repeat", options->repeat,
                      "Repetitions after the warm-up (default 5, 3 with --quick)")
          ->check(number_in(1, 1000));
      cmd->add_option("--suite", options->suite, "Which suite runs without --filter")
          ->check(CLI::IsMember({"default", "full"}));
      auto* json =
          cmd->add_option(
                 "--json", options->json_path,
                 "Write the results as JSON to FILE; '-': to stdout, and the table to stderr")
              ->type_name("OUTFILE|-")
              ->check(nonempty_path());
      auto* csv = cmd->add_option("--csv", options->csv_path, "Write the results as CSV to FILE")
                      ->type_name("OUTFILE")
                      ->check(nonempty_path());
      cmd->add_option("--out", options->out_dir,
                      "Directory for results.json, results.csv and report.html (default "
                      "results/<UTC time>; not with --json or --csv, which name the files)")
          ->type_name("OUTDIR")
          ->check(nonempty_path())
          ->excludes(json)
          ->excludes(csv);
      cmd->add_flag("--no-progress", options->no_progress, "No progress line on the terminal");
      cmd->add_option("--scenario-timeout", options->scenario_timeout_s,
                      "Hard limit of one repetition in seconds: a scenario past it is stopped "
                      "and reported failed (default 10 x its budget + 10 s)")
          ->check(number_in(0.001, 86400.0));
      cmd->callback([options] { run_bench(*options); });
    }};

}  // namespace
}  // namespace doorbell::cli
