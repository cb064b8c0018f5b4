#include "lab/partition/schedule_file.h"

#include "doorbell/partition_ports.h"

#include <sched.h>
#include <sys/stat.h>

#include <toml++/toml.h>

#include <algorithm>
#include <cerrno>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <fstream>
#include <set>
#include <sstream>

#include <fmt/format.h>

namespace doorbell::lab {
namespace {

using partition::Schedule;
using partition::ScheduleError;

int line_of(const toml::node& node) {
  return static_cast<int>(node.source().begin.line);
}

// A duration given in milliseconds (integer or float) as whole nanoseconds.
int64_t duration_ns(const toml::node& node, const std::string& key) {
  double ms;
  if (const auto* i = node.as_integer()) {
    ms = static_cast<double>(i->get());
  } else if (const auto* f = node.as_floating_point()) {
    ms = f->get();
  } else {
    throw ScheduleError(line_of(node), key + " must be a number of milliseconds");
  }
  const double ns = ms * 1e6;
  if (!std::isfinite(ns) || std::fabs(ns) > 9.2e18)
    throw ScheduleError(line_of(node), key + " = " + fmt::format("{}", ms) +
                                           " ms is not representable in 64-bit nanoseconds");
  if (std::fabs(ns - std::round(ns)) > 1e-3)
    throw ScheduleError(line_of(node), key + " = " + fmt::format("{}", ms) +
                                           " ms is not a whole number of nanoseconds");
  return static_cast<int64_t>(std::llround(ns));
}

std::string string_of(const toml::node& node, const std::string& key) {
  const auto* s = node.as_string();
  if (s == nullptr) throw ScheduleError(line_of(node), key + " must be a string");
  return s->get();
}

void reject_unknown(const toml::table& table, const std::set<std::string>& known,
                    const std::string& where) {
  for (auto&& [key, node] : table)
    if (!known.count(std::string(key.str())))
      throw ScheduleError(static_cast<int>(key.source().begin.line),
                          "unknown key '" + std::string(key.str()) + "' in " + where);
}

const toml::array& array_of_tables(const toml::table& root, const char* key) {
  static const toml::array empty;
  const toml::node* node = root.get(key);
  if (node == nullptr) return empty;
  const auto* array = node->as_array();
  if (array == nullptr || !array->is_array_of_tables())
    throw ScheduleError(line_of(*node),
                        std::string(key) + " must be an array of tables ([[" + key + "]])");
  return *array;
}

// A whole number within [low, high] for `key`.
int64_t bounded_integer(const toml::node& node, const std::string& key, int64_t low, int64_t high) {
  const auto* i = node.as_integer();
  if (i == nullptr) throw ScheduleError(line_of(node), key + " must be a whole number");
  if (i->get() < low || i->get() > high)
    throw ScheduleError(line_of(node), key + " = " + std::to_string(i->get()) + " is outside " +
                                           std::to_string(low) + ".." + std::to_string(high));
  return i->get();
}

// [[channel]]: name, kind, source, destinations, message_size, depth
// (queuing), refresh_ms (sampling). partition::validate_channels() checks the
// rest (partitions, duplicates, total memory).
partition::ChannelSpec channel_from(const toml::table& t, int line) {
  reject_unknown(t,
                 {"name", "kind", "source", "destinations", "message_size", "depth", "refresh_ms"},
                 "a [[channel]]");
  partition::ChannelSpec c;
  c.line = line;
  const toml::node* name = t.get("name");
  if (name == nullptr) throw ScheduleError(line, "channel has no name");
  c.name = string_of(*name, "name");
  const toml::node* kind = t.get("kind");
  if (kind == nullptr) throw ScheduleError(line, "channel '" + c.name + "' has no kind");
  const std::string k = string_of(*kind, "kind");
  if (k == "sampling")
    c.kind = partition::PortKind::sampling;
  else if (k == "queuing")
    c.kind = partition::PortKind::queuing;
  else
    throw ScheduleError(line_of(*kind), "kind must be sampling or queuing, not '" + k + "'");
  const toml::node* source = t.get("source");
  if (source == nullptr) throw ScheduleError(line, "channel '" + c.name + "' has no source");
  c.source = string_of(*source, "source");
  const toml::node* destinations = t.get("destinations");
  if (destinations == nullptr)
    throw ScheduleError(line, "channel '" + c.name + "' has no destinations");
  if (const auto* array = destinations->as_array()) {
    for (const toml::node& d : *array) c.destinations.push_back(string_of(d, "destinations"));
  } else {
    c.destinations.push_back(string_of(*destinations, "destinations"));
  }
  const toml::node* size = t.get("message_size");
  if (size == nullptr) throw ScheduleError(line, "channel '" + c.name + "' has no message_size");
  c.message_size =
      static_cast<uint32_t>(bounded_integer(*size, "message_size", 1, partition::kMaxMessageSize));
  const toml::node* depth = t.get("depth");
  const toml::node* refresh = t.get("refresh_ms");
  if (c.kind == partition::PortKind::queuing) {
    if (refresh != nullptr)
      throw ScheduleError(line_of(*refresh), "refresh_ms is for sampling channels, not queuing");
    if (depth == nullptr)
      throw ScheduleError(line, "queuing channel '" + c.name + "' has no depth");
    c.depth = static_cast<uint32_t>(bounded_integer(*depth, "depth", 1, partition::kMaxQueueDepth));
  } else {
    if (depth != nullptr)
      throw ScheduleError(line_of(*depth), "depth is for queuing channels, not sampling");
    if (refresh == nullptr)
      throw ScheduleError(line, "sampling channel '" + c.name + "' has no refresh_ms");
    c.refresh_ns = duration_ns(*refresh, "refresh_ms");
  }
  return c;
}

// A [health] table (the schedule's, or a partition's own [partition.health]):
// an action per error, and heartbeat_frames.
partition::HealthTable health_table_from(const toml::node& node, const std::string& where) {
  const auto* table = node.as_table();
  if (table == nullptr)
    throw ScheduleError(line_of(node), where + " must be a table of error = \"action\"");
  partition::HealthTable health;
  health.line = line_of(node);
  for (auto&& [key, value] : *table) {
    const std::string name(key.str());
    const int line = static_cast<int>(key.source().begin.line);
    if (name == "heartbeat_frames") {
      const auto* i = value.as_integer();
      if (i == nullptr || i->get() < 0 || i->get() > partition::kMaxHeartbeatFrames)
        throw ScheduleError(line, "heartbeat_frames in " + where + " must be a whole number 0.." +
                                      std::to_string(partition::kMaxHeartbeatFrames) +
                                      " (0: not checked)");
      health.heartbeat_frames = i->get();
      continue;
    }
    const auto error = partition::parse_health_error(name);
    if (!error)
      throw ScheduleError(line, "unknown error '" + name + "' in " + where +
                                    " (process_died, overrun, deadline_missed, "
                                    "application_error, no_heartbeat, heartbeat_frames)");
    const std::string action_name = string_of(value, name);
    const auto action = partition::parse_health_action(action_name);
    if (!action)
      throw ScheduleError(line, "unknown action '" + action_name + "' for " + name + " in " +
                                    where +
                                    " (ignore, log, restart, stop_partition, stop_schedule)");
    health[*error] = *action;
  }
  return health;
}

Schedule schedule_from(const toml::table& root) {
  Schedule s;
  reject_unknown(
      root,
      {"major_frame_ms", "method", "freezer", "on_partition_exit", "on_scheduler_exit",
       "overrun_threshold_ms", "max_stop_lead_us", "partition", "window", "channel", "health"},
      "the schedule");
  const toml::node* frame = root.get("major_frame_ms");
  if (frame == nullptr) throw ScheduleError(1, "major_frame_ms is missing");
  s.major_frame_ns = duration_ns(*frame, "major_frame_ms");
  s.major_frame_line = line_of(*frame);
  if (const toml::node* n = root.get("method")) {
    const std::string name = string_of(*n, "method");
    const auto method = partition::parse_method(name);
    if (!method)
      throw ScheduleError(line_of(*n),
                          "unknown method '" + name + "' (sigstop, sigstop-all-threads, freezer)");
    s.method = *method;
  }
  if (const toml::node* n = root.get("freezer")) {
    const std::string name = string_of(*n, "freezer");
    if (name == "auto")
      s.freezer.preference = FreezerPreference::automatic;
    else if (name == "v2")
      s.freezer.preference = FreezerPreference::v2_only;
    else if (name == "v1")
      s.freezer.preference = FreezerPreference::v1_only;
    else
      throw ScheduleError(line_of(*n), "freezer must be auto, v2 or v1, not '" + name + "'");
  }
  if (const toml::node* n = root.get("on_partition_exit")) {
    const std::string name = string_of(*n, "on_partition_exit");
    if (name == "continue")
      s.on_partition_exit = partition::OnPartitionExit::continue_schedule;
    else if (name == "stop")
      s.on_partition_exit = partition::OnPartitionExit::stop_schedule;
    else
      throw ScheduleError(line_of(*n), "on_partition_exit must be continue or stop");
  }
  if (const toml::node* n = root.get("on_scheduler_exit")) {
    const std::string name = string_of(*n, "on_scheduler_exit");
    if (name == "kill")
      s.on_scheduler_exit = partition::OnSchedulerExit::kill;
    else if (name == "resume")
      s.on_scheduler_exit = partition::OnSchedulerExit::resume;
    else
      throw ScheduleError(line_of(*n), "on_scheduler_exit must be kill or resume");
  }
  if (const toml::node* n = root.get("overrun_threshold_ms"))
    s.overrun_threshold_ns = duration_ns(*n, "overrun_threshold_ms");
  if (const toml::node* n = root.get("max_stop_lead_us")) {
    // Whole microseconds, 0 (off) up to 1 s; each window's lead is further
    // bounded by half its length (partition.h, "Stop lead").
    const auto* i = n->as_integer();
    if (i == nullptr)
      throw ScheduleError(line_of(*n), "max_stop_lead_us must be a whole number of microseconds");
    if (i->get() < 0 || i->get() > 1'000'000)
      throw ScheduleError(line_of(*n), "max_stop_lead_us = " + std::to_string(i->get()) +
                                           " is outside 0..1000000 (0: no stop lead)");
    s.max_stop_lead_ns = i->get() * 1000;
  }

  if (const toml::node* n = root.get("health")) s.health = health_table_from(*n, "[health]");

  for (const toml::node& node : array_of_tables(root, "partition")) {
    const toml::table& t = *node.as_table();
    reject_unknown(t, {"name", "command", "cpus", "env", "nice", "health"}, "a [[partition]]");
    partition::PartitionSpec p;
    p.line = line_of(node);
    const toml::node* name = t.get("name");
    if (name == nullptr) throw ScheduleError(p.line, "partition has no name");
    p.name = string_of(*name, "name");
    if (const toml::node* command = t.get("command")) {
      if (const auto* array = command->as_array()) {
        for (const toml::node& arg : *array) p.command.push_back(string_of(arg, "command"));
      } else {
        p.command.push_back(string_of(*command, "command"));
      }
    }
    if (p.command.empty() || p.command[0].empty())
      throw ScheduleError(p.line, "partition '" + p.name + "' has no command");
    if (const toml::node* cpus = t.get("cpus")) {
      const auto* array = cpus->as_array();
      if (array == nullptr)
        throw ScheduleError(line_of(*cpus), "cpus must be an array of integers");
      for (const toml::node& cpu : *array) {
        const auto* i = cpu.as_integer();
        if (i == nullptr) throw ScheduleError(line_of(cpu), "cpus must be an array of integers");
        if (i->get() < 0 || i->get() >= CPU_SETSIZE)
          throw ScheduleError(line_of(cpu), "CPU " + std::to_string(i->get()) + " is out of range");
        p.cpus.push_back(static_cast<int>(i->get()));
      }
    }
    if (const toml::node* nice = t.get("nice")) {
      const auto* i = nice->as_integer();
      if (i == nullptr) throw ScheduleError(line_of(*nice), "nice must be an integer -20..19");
      p.nice = static_cast<int>(std::clamp<int64_t>(i->get(), -1000, 1000));
    }
    if (const toml::node* env = t.get("env")) {
      const auto* table = env->as_table();
      if (table == nullptr) throw ScheduleError(line_of(*env), "env must be a table of strings");
      for (auto&& [key, value] : *table)
        p.environment.emplace_back(std::string(key.str()), string_of(value, "env value"));
    }
    if (const toml::node* health = t.get("health"))
      p.health = health_table_from(*health, "partition '" + p.name + "' health");
    s.partitions.push_back(std::move(p));
  }
  for (const toml::node& node : array_of_tables(root, "window")) {
    const toml::table& t = *node.as_table();
    reject_unknown(t, {"partition", "offset_ms", "duration_ms"}, "a [[window]]");
    partition::WindowSpec w;
    w.line = line_of(node);
    const toml::node* name = t.get("partition");
    if (name == nullptr) throw ScheduleError(w.line, "window names no partition");
    w.partition = string_of(*name, "partition");
    const toml::node* offset = t.get("offset_ms");
    const toml::node* duration = t.get("duration_ms");
    if (offset == nullptr) throw ScheduleError(w.line, "window has no offset_ms");
    if (duration == nullptr) throw ScheduleError(w.line, "window has no duration_ms");
    w.offset_ns = duration_ns(*offset, "offset_ms");
    w.duration_ns = duration_ns(*duration, "duration_ms");
    s.windows.push_back(std::move(w));
  }
  for (const toml::node& node : array_of_tables(root, "channel"))
    s.channels.push_back(channel_from(*node.as_table(), line_of(node)));
  partition::validate(s);
  return s;
}

// The CPUs this process may run on (its affinity mask: online and allowed).
bool usable_cpu(const cpu_set_t& set, int cpu) {
  return cpu >= 0 && cpu < CPU_SETSIZE && CPU_ISSET(cpu, &set);
}

}  // namespace

void check_cpus_usable(const partition::Schedule& schedule, const std::string& file) {
  cpu_set_t set;
  CPU_ZERO(&set);
  if (::sched_getaffinity(0, sizeof set, &set) != 0) return;  // unknown: the run will say
  for (const auto& p : schedule.partitions)
    for (std::size_t i = 0; i < p.cpus.size(); ++i) {
      if (usable_cpu(set, p.cpus[i])) continue;
      std::string usable;  // "0-1", "0,2-3"
      for (int cpu = 0; cpu < CPU_SETSIZE; ++cpu) {
        if (!usable_cpu(set, cpu)) continue;
        int last = cpu;
        while (last + 1 < CPU_SETSIZE && usable_cpu(set, last + 1)) ++last;
        usable += (usable.empty() ? "" : ",") + std::to_string(cpu) +
                  (last > cpu ? "-" + std::to_string(last) : std::string());
        cpu = last;
      }
      throw ScheduleFileError(file, p.line,
                              fmt::format("partition '{}': CPU {} is not available here (this "
                                          "process may use CPUs {}); the kernel would not run "
                                          "it there",
                                          p.name, p.cpus[i], usable));
    }
}

ScheduleFileError::ScheduleFileError(std::string file, int line, std::string message)
    : std::runtime_error(line > 0 ? fmt::format("{}:{}: {}", file, line, message)
                                  : fmt::format("{}: {}", file, message)),
      file_(std::move(file)),
      line_(line),
      message_(std::move(message)) {}

ScheduleFileError::ScheduleFileError(const std::string& what)
    : std::runtime_error(what), message_(what) {}

Schedule parse_schedule_toml(std::string_view text, std::string_view source_name) {
  const std::string file(source_name);
  try {
    return schedule_from(toml::parse(text, file));
  } catch (const toml::parse_error& e) {
    throw ScheduleFileError(file, static_cast<int>(e.source().begin.line),
                            std::string(e.description()));
  } catch (const ScheduleError& e) {
    throw ScheduleFileError(file, e.line(), e.message());
  }
}

Schedule load_schedule_file(const std::string& path) {
  struct stat st {};
  if (::stat(path.c_str(), &st) == 0 && S_ISDIR(st.st_mode))
    throw ScheduleFileError("cannot read schedule file '" + path +
                            "': it is a directory (give a .toml file)");
  errno = 0;
  std::ifstream in(path);
  const int open_error = errno;
  std::ostringstream text;
  if (in) text << in.rdbuf();
  if (!in || in.bad())
    throw ScheduleFileError("cannot read schedule file '" + path +
                            "': " + std::strerror(open_error ? open_error : EIO));
  return parse_schedule_toml(text.str(), path);
}

}  // namespace doorbell::lab
