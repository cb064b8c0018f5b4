// Subcommands of the doorbell CLI register themselves here, one file each, so
// that adding a command never edits main.cpp.
//
//   static const doorbell::cli::CommandRegistrar kBench{"bench", 10, [](CLI::App& app) {
//     auto* cmd = app.add_subcommand("bench", "Run the lab");
//     cmd->callback([] { ... throw doorbell::cli::UsageError("...") on bad input ... });
//   }};
//
// Exit codes: 0 success; 1 a run-time failure (std::exception); 2 bad usage
// (CLI11 parse errors and UsageError). Messages go to stderr as
// "doorbell <command>: <message>".
#pragma once

#include <functional>
#include <stdexcept>
#include <string>

namespace CLI {
class App;
}

namespace doorbell::cli {

class UsageError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

using CommandSetup = std::function<void(CLI::App& app)>;

struct CommandRegistrar {
  // order: position in --help (lower first).
  CommandRegistrar(std::string name, int order, CommandSetup setup);
};

// The exit code a command's callback asks for (default 0); set it to report
// "ran, but found a problem" without throwing.
void set_exit_code(int code);

}  // namespace doorbell::cli
