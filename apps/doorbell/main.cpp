// doorbell: the lab and tools. Each subcommand lives in its own file and
// registers itself through command.h.
#include <CLI/CLI.hpp>
#include <algorithm>
#include <iostream>
#include <vector>

#include "apps/doorbell/command.h"

namespace doorbell::cli {
namespace {

struct Entry {
  std::string name;
  int order;
  CommandSetup setup;
};

std::vector<Entry>& entries() {
  static std::vector<Entry> list;
  return list;
}

int& exit_code() {
  static int code = 0;
  return code;
}

}  // namespace

CommandRegistrar::CommandRegistrar(std::string name, int order, CommandSetup setup) {
  entries().push_back({std::move(name), order, std::move(setup)});
}

void set_exit_code(int code) {
  exit_code() = code;
}

StdoutToStderr::StdoutToStderr() : saved_(std::cout.rdbuf()) {
  std::cout.flush();
  std::cout.rdbuf(std::cerr.rdbuf());
}

StdoutToStderr::~StdoutToStderr() {
  std::cout.flush();
  std::cout.rdbuf(saved_);
}

namespace {

const std::string& version_text() {
  static const std::string text = std::string("doorbell ") + DOORBELL_VERSION;
  return text;
}

// --version on every command at every depth, so `doorbell bench --version`
// answers like `doorbell --version` (help2man and packagers ask either).
void add_version_flags(CLI::App& app) {
  // Nameless subcommands are CLI11 option groups, not commands.
  for (CLI::App* sub : app.get_subcommands([](CLI::App* s) { return !s->get_name().empty(); })) {
    sub->set_version_flag("--version", version_text(), "Print the doorbell version and exit");
    add_version_flags(*sub);
  }
}

}  // namespace

}  // namespace doorbell::cli

int main(int argc, char** argv) {
  using namespace doorbell::cli;
  CLI::App app{
      "doorbell: what a wake-up, a signal or a lock really costs on this machine, measured.",
      "doorbell"};
  app.set_version_flag("--version", version_text(), "Print the doorbell version and exit");
  app.require_subcommand(1);
  auto list = entries();
  std::sort(list.begin(), list.end(),
            [](const auto& a, const auto& b) { return a.order < b.order; });
  for (auto& entry : list) entry.setup(app);
  add_version_flags(app);
  // After the commands: a subcommand would inherit it.
  app.footer(
      "Run 'doorbell help COMMAND' or 'doorbell COMMAND --help' for a command's options.\n"
      "'--json -' writes JSON to stdout; the table then goes to stderr.");
  try {
    app.parse(argc, argv);
  } catch (const CLI::CallForHelp& e) {
    return app.exit(e);
  } catch (const CLI::CallForAllHelp& e) {
    return app.exit(e);
  } catch (const CLI::CallForVersion& e) {
    return app.exit(e);
  } catch (const CLI::Success&) {
    return 0;  // --help-all, which printed what was asked
  } catch (const CLI::ParseError& e) {
    std::string message = e.what();
    // CLI11 checks required arguments before unknown ones, so
    // `doorbell report --bad` would say "results is required": name the
    // unknown option, the likelier mistake.
    if (dynamic_cast<const CLI::RequiredError*>(&e) != nullptr) {
      for (const auto& arg : app.remaining(true)) {
        if (arg.size() > 1 && arg[0] == '-') {
          message = "The following argument was not expected: " + arg;
          break;
        }
      }
    }
    // `doorbell bogus`: CLI11 says "A subcommand is required"; name the word.
    if (argc > 1 && argv[1][0] != '-' && app.get_subcommands().empty()) {
      bool known = false;
      for (CLI::App* sub : app.get_subcommands([](CLI::App*) { return true; }))
        known |= sub->get_name() == argv[1];
      if (!known) message = std::string("unknown command '") + argv[1] + "'";
    }
    // One line: what is wrong, naming the option, and where help is.
    std::string help = "doorbell help";
    for (const CLI::App* sub = &app; !sub->get_subcommands().empty();) {
      sub = sub->get_subcommands().front();
      help += " " + sub->get_name();
    }
    std::cerr << "doorbell: " << message << " ('" << help << "' for usage)\n";
    return 2;
  } catch (const UsageError& e) {
    std::cerr << "doorbell: " << e.what() << "\n";
    return 2;
  } catch (const std::exception& e) {
    std::cerr << "doorbell: error: " << e.what() << "\n";
    return 1;
  }
  return exit_code();
}
