// What the CLI's own tree says of its commands and options, for the shell
// completion (completion.cpp) and the tree dump the CLI battery reads
// (cli_tree.cpp).
#pragma once

#include <CLI/CLI.hpp>
#include <string>
#include <vector>

namespace doorbell::cli {

// The commands under `app`. Nameless subcommands are CLI11 option groups,
// not commands.
inline std::vector<CLI::App*> commands_of(CLI::App& app) {
  return app.get_subcommands([](CLI::App* sub) { return !sub->get_name().empty(); });
}

// The type CLI11 shows before any validator: "TEXT", "INT", "FILE", ...
inline std::string base_type(const std::string& type_name) {
  return type_name.substr(0, type_name.find(':'));
}

// "TEXT:{default,full}" -> {"default", "full"}.
inline std::vector<std::string> choices_of(const std::string& type_name) {
  std::vector<std::string> out;
  const auto open = type_name.find('{');
  const auto close = type_name.find('}', open);
  if (open == std::string::npos || close == std::string::npos) return out;
  std::string item;
  for (char c : type_name.substr(open + 1, close - open - 1)) {
    if (c == ',') {
      if (!item.empty()) out.push_back(item);
      item.clear();
    } else {
      item += c;
    }
  }
  if (!item.empty()) out.push_back(item);
  return out;
}

}  // namespace doorbell::cli
