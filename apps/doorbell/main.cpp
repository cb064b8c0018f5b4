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

}  // namespace doorbell::cli

int main(int argc, char** argv) {
  using namespace doorbell::cli;
  CLI::App app{
      "doorbell: what a wake-up, a signal or a lock really costs on this machine, measured.\n"
      "Run 'doorbell <command> --help' for a command's options."};
  app.set_version_flag("--version", std::string("doorbell ") + DOORBELL_VERSION);
  app.require_subcommand(1);
  auto list = entries();
  std::sort(list.begin(), list.end(),
            [](const auto& a, const auto& b) { return a.order < b.order; });
  for (auto& entry : list) entry.setup(app);
  try {
    app.parse(argc, argv);
  } catch (const CLI::CallForHelp& e) {
    return app.exit(e);
  } catch (const CLI::CallForAllHelp& e) {
    return app.exit(e);
  } catch (const CLI::CallForVersion& e) {
    return app.exit(e);
  } catch (const CLI::ParseError& e) {
    std::cerr << "doorbell: " << e.what() << "\n";
    std::cerr << "Run 'doorbell --help' for usage.\n";
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
