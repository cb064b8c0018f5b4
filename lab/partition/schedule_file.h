// The schedule file of `doorbell partition`: TOML text -> a validated
// partition::Schedule (include/doorbell/partition.h, docs/partition.md).
//
//   major_frame_ms = 20
//   method = "freezer"              # sigstop | sigstop-all-threads | freezer
//   freezer = "auto"                # auto | v2 | v1
//   on_partition_exit = "continue"  # continue | stop
//   on_scheduler_exit = "kill"      # kill | resume
//   overrun_threshold_ms = 1
//   [health]                        # optional (partition_health.h)
//   process_died = "restart"        # ignore | log | restart | stop_partition
//   overrun = "log"                 #   | stop_schedule
//   heartbeat_frames = 10           # no_heartbeat after 10 silent frames
//   [[partition]]
//   name = "A"
//   command = ["stress-ng", "--cpu", "8"]   # or one string: the program alone
//   cpus = [0, 1]                   # optional
//   env = { OMP_NUM_THREADS = "8" } # optional
//   nice = -5                       # optional
//   health = { overrun = "stop_partition" }  # optional: overrides [health]
//   [[window]]
//   partition = "A"
//   offset_ms = 0
//   duration_ms = 10
//
// Durations are milliseconds, integer or float, and must be a whole number of
// nanoseconds that fits 64 bits. Unknown keys are errors (a misspelt key is
// never silently ignored). Every source line is kept in the Schedule
// (PartitionSpec::line, WindowSpec::line, Schedule::major_frame_line), so the
// scheduler's later errors (a command not found) can name the line too.
//
// Errors: ScheduleFileError, whose what() is "FILE:LINE: message" (TOML syntax,
// a wrong type or value, and everything partition::validate() rejects), or
// "FILE: message" for a problem without one line. Nothing here touches
// process state; the functions may run on any thread.
#pragma once

#include <stdexcept>
#include <string>
#include <string_view>

#include "doorbell/partition.h"

namespace doorbell::lab {

class ScheduleFileError : public std::runtime_error {
 public:
  // line 0: the problem has no single line.
  ScheduleFileError(std::string file, int line, std::string message);
  // A message that stands alone ("cannot read schedule file 'x'").
  explicit ScheduleFileError(const std::string& what);

  const std::string& file() const noexcept { return file_; }
  int line() const noexcept { return line_; }
  const std::string& message() const noexcept { return message_; }

 private:
  std::string file_;
  int line_ = 0;
  std::string message_;
};

// Parses and validates schedule TOML; source_name is the FILE of the errors.
partition::Schedule parse_schedule_toml(std::string_view text, std::string_view source_name);

// Reads `path` and parses it (the path is the errors' FILE). A file that
// cannot be read is ScheduleFileError "cannot read schedule file 'PATH':
// REASON" ("it is a directory", strerror).
partition::Schedule load_schedule_file(const std::string& path);

// Throws ScheduleFileError (the partition's line) when a partition's cpus
// name a CPU this process may not run on (its affinity mask here): the
// kernel would refuse or ignore it. A check of this machine, apart from the
// parse, which is the same everywhere.
void check_cpus_usable(const partition::Schedule& schedule, const std::string& file);

}  // namespace doorbell::lab
