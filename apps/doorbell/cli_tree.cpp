// doorbell --dump-cli-tree (hidden): the command tree as one JSON object,
// for tests/cli_battery_test.cpp, which tries every option of every command
// with a battery of values. Nothing else should read it: the format follows
// what the battery needs and may change with it.
//
//   {"path": "", "subcommands": [{"path": "partition run", ...}], "options": [
//     {"name": "--frames", "names": ["--frames"], "positional": false,
//      "type": "INT", "full_type": "INT:in [1, 10^12]",
//      "range": [1, 1e12] | null, "choices": [...], "flag": false,
//      "expected_min": 1, "expected_max": 1, "required": false,
//      "default": "", "needs": ["--watch"], "excludes": ["--duration"],
//      "description": "..."}]}
//
// "type" is CLI11's type name before any validator: INT, UINT, FLOAT, TEXT,
// or what a command declared for a text value (apps/doorbell/options.h):
// FILE (read), OUTFILE (written; OUTFILE|- also takes "-" for stdout),
// OUTDIR (a directory written into), GLOB. "range" is the [MIN, MAX] of
// number_in (apps/doorbell/options.h), "choices" those of IsMember.
#include <CLI/CLI.hpp>
#include <iostream>
#include <regex>

#include <nlohmann/json.hpp>

#include "apps/doorbell/cli_introspect.h"
#include "apps/doorbell/command.h"
#include "apps/doorbell/options.h"

namespace doorbell::cli {
namespace {

std::string option_name(const CLI::Option* opt) {
  if (opt->get_positional()) return opt->get_name(true);
  if (!opt->get_lnames().empty()) return "--" + opt->get_lnames().front();
  return "-" + opt->get_snames().front();
}

nlohmann::ordered_json option_json(const CLI::Option* opt) {
  nlohmann::ordered_json j;
  j["name"] = option_name(opt);
  std::vector<std::string> names;
  for (const auto& l : opt->get_lnames()) names.push_back("--" + l);
  for (const auto& s : opt->get_snames()) names.push_back("-" + s);
  j["names"] = names;
  j["positional"] = opt->get_positional();
  const std::string full = opt->get_type_name();
  j["type"] = base_type(full);
  j["full_type"] = full;
  static const std::regex range(R"(in \[([^ ,\]]+), ([^ \]]+)\])");
  std::smatch m;
  if (std::regex_search(full, m, range))
    j["range"] = {parse_short_number(m[1].str()), parse_short_number(m[2].str())};
  else
    j["range"] = nullptr;
  j["choices"] = choices_of(full);
  j["flag"] = opt->get_items_expected_max() == 0;
  j["expected_min"] = opt->get_items_expected_min();
  j["expected_max"] = opt->get_items_expected_max();
  j["required"] = opt->get_required();
  j["default"] = opt->get_default_str();
  std::vector<std::string> needs, excludes;
  for (const auto* o : opt->get_needs()) needs.push_back(option_name(o));
  for (const auto* o : opt->get_excludes()) excludes.push_back(option_name(o));
  j["needs"] = needs;
  j["excludes"] = excludes;
  j["description"] = opt->get_description();
  return j;
}

nlohmann::ordered_json tree_json(CLI::App& app, const std::string& path) {
  nlohmann::ordered_json j;
  j["path"] = path;
  j["options"] = nlohmann::ordered_json::array();
  for (const CLI::Option* opt : app.get_options()) {
    if (opt->get_group().empty()) continue;  // hidden, this one among them
    j["options"].push_back(option_json(opt));
  }
  j["subcommands"] = nlohmann::ordered_json::array();
  for (CLI::App* sub : commands_of(app))
    j["subcommands"].push_back(
        tree_json(*sub, path.empty() ? sub->get_name() : path + " " + sub->get_name()));
  return j;
}

const CommandRegistrar kCliTree{"cli-tree", 99, [](CLI::App& app) {
                                  CLI::App* root = &app;
                                  app.add_flag_callback(
                                         "--dump-cli-tree",
                                         [root] {
                                           std::cout << tree_json(*root, "").dump(1) << "\n";
                                           throw CLI::Success();
                                         },
                                         "the command tree as JSON, for the tests")
                                      ->group("");
                                }};

}  // namespace
}  // namespace doorbell::cli
