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
//
// Conventions every command gets or follows (docs in README.md, "The tools"):
// - `--help` and `--version` on the top level and on every subcommand, at
//   every depth (main.cpp adds --version after the commands are set up), and
//   `doorbell help [COMMAND...]`, which prints the same text as --help.
// - An option that writes JSON to a file (`bench --json FILE`,
//   `partition run --json FILE`) takes "-" for stdout (is_stdout()). Then
//   stdout carries the JSON and nothing else: what the command prints for
//   people (its table, where files went) goes to stderr instead, so
//   `doorbell bench --json - | jq` reads clean JSON while the table still
//   shows on the terminal. `trace --json` and `inspect --json` are switches of
//   the output format: they always print to stdout.
// - The man page (help2man) and the bash completion (`doorbell completion
//   bash`) are generated from this command tree at build time: a new command
//   or option appears in both without further work.
#pragma once

#include <functional>
#include <stdexcept>
#include <streambuf>
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

// Whether an output file option names stdout ("-").
inline bool is_stdout(const std::string& path) {
  return path == "-";
}

// While it lives, what is written to std::cout goes to stderr: for the
// human-readable output of a command whose stdout carries JSON. Not
// thread-safe; scopes nest.
class StdoutToStderr {
 public:
  StdoutToStderr();
  ~StdoutToStderr();
  StdoutToStderr(const StdoutToStderr&) = delete;
  StdoutToStderr& operator=(const StdoutToStderr&) = delete;

 private:
  std::streambuf* saved_;
};

}  // namespace doorbell::cli
