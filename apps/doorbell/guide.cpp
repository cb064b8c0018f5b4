// doorbell guide RESULTS.json GUIDE.md [--update]
//
// Checks the measured figures in the guide against a results file (the
// markers and what they hold: lab/report/guide.h). Without --update: each
// figure the results measure is the same, agrees (within
// report::kGuideTolerance, a factor of 1.25) or differs; exit 1 when one
// differs, each listed. Figures the results do not measure (a partial run)
// are counted apart, neither agreeing nor differing. With --update: rewrites
// the measured figures in place.
#include <CLI/CLI.hpp>
#include <fstream>
#include <iostream>
#include <memory>
#include <sstream>
#include <stdexcept>

#include <fmt/format.h>

#include "apps/doorbell/command.h"
#include "apps/doorbell/options.h"
#include "lab/common/output_file.h"
#include "lab/harness/results_reader.h"
#include "lab/report/guide.h"

namespace doorbell::cli {
namespace {

struct GuideArgs {
  std::string results;
  std::string guide;
  bool update = false;
};

const CommandRegistrar kGuide{
    "guide", 45, [](CLI::App& app) {
      auto args = std::make_shared<GuideArgs>();
      auto* cmd = app.add_subcommand(
          "guide",
          "Check (or --update) the measured figures in the guide against a results file: each "
          "is the same, agrees (within 25%) or differs (exit 1); figures the file does not "
          "measure are counted apart");
      cmd->add_option("results", args->results, "RESULTS.json")
          ->required()
          ->type_name("FILE")
          ->check(nonempty_path());
      cmd->add_option("guide", args->guide, "the guide, e.g. docs/guide.md")
          ->required()
          ->type_name("FILE")
          ->check(nonempty_path());
      cmd->add_flag("--update", args->update,
                    "rewrite the figures from the results (those it does not measure are kept)");
      cmd->callback([args] {
        lab::ResultsFile results;
        check_input_file("guide", args->results);
        try {
          results = lab::read_results_file(args->results);
        } catch (const lab::ResultsError& e) {
          throw UsageError(std::string("guide: ") + e.what());
        }
        check_input_file("guide", args->guide);
        std::ifstream in(args->guide);
        if (!in) throw UsageError("guide: cannot read " + args->guide);
        std::stringstream buffer;
        buffer << in.rdbuf();
        const report::GuideCheck check = report::check_guide(buffer.str(), results);
        // A file without a single marker is not the guide (a binary, the
        // wrong file): "0 figures, 0 differ" would pass it.
        if (check.figures == 0)
          throw UsageError("guide: " + args->guide +
                           ": no figure markers (<!--m:KIND SOURCE-->...<!--/m-->) in it; is it "
                           "the guide?");
        const std::string unmeasured =
            check.not_measured.empty()
                ? std::string()
                : fmt::format(", {} not measured in it", check.not_measured.size());
        if (args->update) {
          if (check.updated != buffer.str()) lab::write_file_atomically(args->guide, check.updated);
          std::cout << fmt::format(
              "{}: {} figures, {} updated from {}{}\n", args->guide, check.figures,
              check.agree.size() + check.differences.size(), args->results,
              check.not_measured.empty()
                  ? std::string()
                  : fmt::format(", {} kept (not measured in it)", check.not_measured.size()));
          return;
        }
        for (const auto& d : check.differences) std::cerr << "doorbell guide: " << d << "\n";
        for (const auto& a : check.agree) std::cerr << "doorbell guide: " << a << "\n";
        std::cout << fmt::format(
            "{}: {} figures against {}: {} the same, {} within {:.0f}% (agree), {} differ{}\n",
            args->guide, check.figures, args->results, check.same, check.agree.size(),
            (report::kGuideTolerance - 1) * 100, check.differences.size(), unmeasured);
        if (!check.differences.empty()) set_exit_code(1);
      });
    }};

}  // namespace
}  // namespace doorbell::cli
