// One way for the lab and the CLI to write a result file: check the path
// before the work starts, write it atomically when the work is done.
//
//   check_output_file("--json", path);        // before running: throws OutputFileError
//   ... the work ...
//   write_file_atomically(path, text);        // temp file in the same directory, then rename
//
// So a bad path costs nothing (no run thrown away at the end), a reader never
// sees a half-written file, and a failed write leaves the old file as it was.
// Paths that are not regular files keep their nature: "/dev/null", a FIFO or
// a terminal is written in place (a rename would replace the device with a
// file); a symbolic link is followed, and its target replaced.
#pragma once

#include <functional>
#include <stdexcept>
#include <string>

namespace doorbell::lab {

// A path that cannot be written; what() names the option (when given) and
// the path, and says why: "--json /nonexistent/x.json: the directory
// /nonexistent does not exist".
class OutputFileError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

// Throws OutputFileError unless `path` can be written as a file: not empty,
// not a directory, its directory exists and a file can be created there
// (tried: a temporary file is made and removed), or it is an existing
// non-regular file (device, FIFO) that opens for writing. `option` names
// the flag in the message ("--json"); empty: the path alone.
void check_output_file(const std::string& option, const std::string& path);

// Throws OutputFileError unless `path` is, or can be created as, a directory
// in which files can be created (it is created, with its parents).
void ensure_output_directory(const std::string& option, const std::string& path);

// Writes `text` to `path` atomically (see above). Throws OutputFileError.
// SIGINT, SIGTERM, SIGHUP and SIGQUIT are blocked in the calling thread for
// the write and the rename (both overloads): a Ctrl-C then takes effect
// after it, and leaves neither a temporary nor a partial file.
void write_file_atomically(const std::string& path, const std::string& text);

// The same for a writer that takes a path (a library function that writes
// the file itself): it is handed a temporary path in the same directory,
// which is renamed over `path` when it returns, and removed when it throws.
void write_file_atomically(const std::string& path,
                           const std::function<void(const std::string& temp_path)>& write);

}  // namespace doorbell::lab
