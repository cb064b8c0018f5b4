// What every command's options share: one way to declare a numeric range,
// so that each number an option takes has a declared, finite range that the
// help shows ("in [MIN, MAX]"), the generated completion and CLI battery
// (tests/cli_battery_test.cpp) read, and a bad value is refused before any
// work with one line that names the option ("--duration: inf is out of
// range: it must be in [0.01, 10^7]", "--frames: 'x' is not a number; it
// must be in [1, 10^12]").
#pragma once

#include <string>

namespace CLI {
class Validator;
}

namespace doorbell::cli {

// A number (integer or floating point) in [min, max]: NaN, infinities and
// values outside are refused. Its description is "in [MIN, MAX]" (the help
// shows "INT:in [1, 1000]"); every numeric option uses it rather than
// CLI::Range, whose description repeats the type ("INT:INT in [1 - 1000]").
CLI::Validator number_in(double min, double max);

// A file or directory name that is not empty (CLI11 takes '' as a value;
// an empty path would otherwise read as "not given"). No description, so
// the type shown in the help stays the option's own.
CLI::Validator nonempty_path();

// Throws UsageError "COMMAND: PATH: is a directory" (or the reason it
// cannot be opened for reading) unless `path` is a readable file.
void check_input_file(const std::string& command, const std::string& path);

// lab::check_output_file / ensure_output_directory as UsageError
// "COMMAND: OPTION PATH: why".
void check_output_file(const std::string& command, const std::string& option,
                       const std::string& path);
void ensure_output_directory(const std::string& command, const std::string& option,
                             const std::string& path);

// A short form of a number for messages: 200000, 0.05, 10^7, 1.5e+07.
std::string short_number(double value);

// The number short_number() wrote (10^N included).
double parse_short_number(const std::string& text);

}  // namespace doorbell::cli
