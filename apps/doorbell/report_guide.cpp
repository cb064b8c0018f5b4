// doorbell guide RESULTS.json GUIDE.md [--update]
//
// Keeps the figures in the guide (docs/guide.md) equal to a results file, so
// the advice cannot drift from what was measured. A figure in the guide is
// written between two markers naming where it comes from:
//
//   <!--m:p50 ladder/signal_kill_handler-->4.44 µs<!--/m-->
//   <!--m:ratio self-signal / syscall-->3.83x<!--/m-->
//
// "p50", "p90", "p99", "p99.9", "mean", "max" or "min" take that statistic
// of the scenario's primary metric; "ratio" takes a registered ratio's value.
// Without --update it checks: every figure must read exactly what the
// results give (exit 1 and a list of differences otherwise). With --update
// it rewrites the figures in place. A figure whose scenario or ratio is not
// in the results reads "not measured".
#include <CLI/CLI.hpp>
#include <cmath>
#include <fstream>
#include <iostream>
#include <regex>
#include <sstream>

#include <fmt/format.h>

#include "apps/doorbell/command.h"
#include "apps/doorbell/report.h"

namespace doorbell::cli {
namespace {

std::string guide_duration(double ns) {
  double a = std::fabs(ns);
  if (a < 10) return fmt::format("{:.2f} ns", ns);
  if (a < 1e3) return fmt::format("{:.0f} ns", ns);
  if (a < 1e6) return fmt::format("{:.3g} µs", ns / 1e3);
  if (a < 1e9) return fmt::format("{:.3g} ms", ns / 1e6);
  return fmt::format("{:.3g} s", ns / 1e9);
}

std::string guide_ratio(double r) {
  if (r >= 100) return fmt::format("{:.0f}x", r);
  return fmt::format("{:.3g}x", r);
}

// The text a marker should hold, from the results.
std::string figure_for(const nlohmann::json& run, const std::string& kind,
                       const std::string& what) {
  if (kind == "ratio") {
    for (const auto& r : run.value("ratios", nlohmann::json::array()))
      if (r.value("name", "") == what && r.contains("value") && r["value"].is_number())
        return guide_ratio(r["value"].get<double>());
    return "not measured";
  }
  for (const auto& s : run["scenarios"]) {
    if (s.value("name", "") != what) continue;
    if (s.value("status", "ok") != "ok") return "not measured";
    std::string primary = s.value("primary_metric", "latency");
    auto metrics = s.value("metrics", nlohmann::json::object());
    if (!metrics.contains(primary)) return "not measured";
    const auto& m = metrics[primary];
    if (!m.contains(kind) || !m[kind].is_number()) return "not measured";
    return guide_duration(m[kind].get<double>());
  }
  return "not measured";
}

struct GuideArgs {
  std::string results;
  std::string guide;
  bool update = false;
};

const CommandRegistrar kGuide{
    "guide", 45, [](CLI::App& app) {
      auto args = std::make_shared<GuideArgs>();
      auto* cmd = app.add_subcommand(
          "guide", "Check (or --update) the measured figures in the guide against a results file");
      cmd->add_option("results", args->results, "RESULTS.json")->required();
      cmd->add_option("guide", args->guide, "the guide, e.g. docs/guide.md")->required();
      cmd->add_flag("--update", args->update, "rewrite the figures from the results");
      cmd->callback([args] {
        nlohmann::json run;
        try {
          run = report::load_results(args->results);
        } catch (const std::invalid_argument& e) {
          throw UsageError(std::string("guide: ") + e.what());
        }
        std::ifstream in(args->guide);
        if (!in) throw UsageError("guide: cannot read " + args->guide);
        std::stringstream buffer;
        buffer << in.rdbuf();
        const std::string text = buffer.str();
        static const std::regex marker(R"(<!--m:(\S+) ([^>]+?)-->(.*?)<!--/m-->)");
        std::string out;
        std::size_t last = 0, figures = 0;
        std::vector<std::string> differences;
        for (auto it = std::sregex_iterator(text.begin(), text.end(), marker);
             it != std::sregex_iterator(); ++it) {
          const auto& m = *it;
          ++figures;
          std::string want = figure_for(run, m[1], m[2]);
          if (m[3] != want)
            differences.push_back(
                fmt::format("{} {}: the guide says \"{}\", the results give \"{}\"", m[1].str(),
                            m[2].str(), m[3].str(), want));
          out += text.substr(last, m.position(0) - last);
          out += "<!--m:" + m[1].str() + " " + m[2].str() + "-->" + want + "<!--/m-->";
          last = m.position(0) + m.length(0);
        }
        out += text.substr(last);
        if (args->update) {
          std::ofstream o(args->guide, std::ios::trunc);
          o << out;
          if (!o) throw std::runtime_error("cannot write " + args->guide);
          std::cout << fmt::format("{}: {} figures, {} updated from {}\n", args->guide, figures,
                                   differences.size(), args->results);
          return;
        }
        for (const auto& d : differences) std::cerr << "doorbell guide: " << d << "\n";
        std::cout << fmt::format("{}: {} figures, {} differ from {}\n", args->guide, figures,
                                 differences.size(), args->results);
        if (!differences.empty()) set_exit_code(1);
      });
    }};

}  // namespace
}  // namespace doorbell::cli
