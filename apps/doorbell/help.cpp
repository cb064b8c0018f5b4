// doorbell help [COMMAND...]: the help of doorbell, or of one command
// (`doorbell help partition run`), the same text as `--help` prints, on
// stdout, exit 0. An unknown command is a usage error (exit 2).
//
// doorbell --help-all: the help of doorbell, then of every command at every
// depth, each under a heading "doorbell COMMAND:" at the start of a line.
// It is the text of the man page: help2man makes each such heading a section
// and each indented option line an entry.
#include <CLI/CLI.hpp>
#include <iostream>
#include <memory>

#include "apps/doorbell/command.h"

namespace doorbell::cli {
namespace {

std::vector<CLI::App*> commands_of(CLI::App& app) {
  // Nameless subcommands are CLI11 option groups, not commands.
  return app.get_subcommands([](CLI::App* sub) { return !sub->get_name().empty(); });
}

// The subcommand of `parent` named `name`, or nullptr.
CLI::App* find_command(CLI::App& parent, const std::string& name) {
  for (CLI::App* sub : commands_of(parent))
    if (sub->get_name() == name) return sub;
  return nullptr;
}

std::string help_of(CLI::App& app, const std::string& path) {
  return app.get_formatter()->make_help(&app, path, CLI::AppFormatMode::Normal);
}

void append_commands_help(CLI::App& app, const std::string& path, std::string& out) {
  for (CLI::App* sub : commands_of(app)) {
    const std::string sub_path = path + " " + sub->get_name();
    out += "\n" + sub_path + ":\n";
    // Indented, so that help2man reads "Options:" inside as text, not a
    // section; "Usage:" as a paragraph of its own; no trailing blank lines.
    std::string text = help_of(*sub, sub_path);
    while (!text.empty() && text.back() == '\n') text.pop_back();
    std::size_t start = 0;
    while (start <= text.size()) {
      std::size_t end = text.find('\n', start);
      if (end == std::string::npos) end = text.size();
      const std::string line = text.substr(start, end - start);
      if (line.rfind("Usage:", 0) == 0 && start > 0) out += "\n";
      out += line.empty() ? "\n" : "  " + line + "\n";
      start = end + 1;
    }
    append_commands_help(*sub, sub_path, out);
  }
}

const CommandRegistrar kHelp{
    "help", 90, [](CLI::App& app) {
      auto words = std::make_shared<std::vector<std::string>>();
      auto* cmd = app.add_subcommand("help", "Print the help of doorbell or of a command");
      cmd->add_option("command", *words, "COMMAND [SUBCOMMAND]: whose help, e.g. 'partition run'");
      CLI::App* root = &app;
      // Runs while the command line is parsed, when every command exists.
      app.add_flag_callback(
          "--help-all",
          [root] {
            std::string text = help_of(*root, root->get_name());
            append_commands_help(*root, root->get_name(), text);
            std::cout << text;
            throw CLI::Success();
          },
          "Print the help of doorbell and of every command, and exit");
      cmd->callback([root, words] {
        CLI::App* target = root;
        std::string path = root->get_name();
        std::string asked;
        for (const auto& word : *words) {
          asked += asked.empty() ? word : " " + word;
          CLI::App* next = find_command(*target, word);
          if (next == nullptr)
            throw UsageError("help: no command '" + asked + "'; 'doorbell help' lists them");
          target = next;
          path += " " + word;
        }
        std::cout << help_of(*target, path);
      });
    }};

}  // namespace
}  // namespace doorbell::cli
