// Schedule validation and the per-partition summaries.
#include <algorithm>
#include <cmath>
#include <map>

#include "doorbell/partition.h"

namespace doorbell::partition {
namespace {

std::string with_line(int line, const std::string& message) {
  return line > 0 ? "line " + std::to_string(line) + ": " + message : message;
}

bool valid_partition_name(const std::string& name) {
  if (name.empty() || name.size() > 64) return false;
  for (char c : name) {
    const bool ok = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
                    c == '_' || c == '-';
    if (!ok) return false;
  }
  return true;
}

std::string format_ms(int64_t ns) {
  char text[64];
  std::snprintf(text, sizeof text, "%.6g ms", static_cast<double>(ns) / 1e6);
  return text;
}

// a + b in ms, without the overflow a + b may have as int64_t.
std::string format_ms_sum(int64_t a, int64_t b) {
  char text[64];
  std::snprintf(text, sizeof text, "%.6g ms",
                (static_cast<double>(a) + static_cast<double>(b)) / 1e6);
  return text;
}

// Nearest-rank percentile of a sorted vector.
double percentile(const std::vector<double>& sorted, double p) {
  if (sorted.empty()) return 0;
  const double rank = std::ceil(p / 100.0 * static_cast<double>(sorted.size()));
  const std::size_t index =
      rank < 1 ? 0 : std::min(sorted.size() - 1, static_cast<std::size_t>(rank) - 1);
  return sorted[index];
}

}  // namespace

const char* method_name(SuspendMethod method) noexcept {
  switch (method) {
    case SuspendMethod::sigstop:
      return "sigstop";
    case SuspendMethod::sigstop_all_threads:
      return "sigstop-all-threads";
    case SuspendMethod::freezer:
      return "freezer";
  }
  return "?";
}

std::optional<SuspendMethod> parse_method(const std::string& name) {
  for (auto m :
       {SuspendMethod::sigstop, SuspendMethod::sigstop_all_threads, SuspendMethod::freezer})
    if (name == method_name(m)) return m;
  return std::nullopt;
}

ScheduleError::ScheduleError(int line, const std::string& message)
    : std::invalid_argument(with_line(line, message)), line_(line), message_(message) {}

void validate(Schedule& schedule) {
  if (schedule.major_frame_ns <= 0)
    throw ScheduleError(schedule.major_frame_line,
                        "the major frame must be longer than zero (got " +
                            format_ms(schedule.major_frame_ns) + ")");
  if (schedule.overrun_threshold_ns <= 0)
    throw ScheduleError(0, "the overrun threshold must be longer than zero");
  if (schedule.max_stop_lead_ns < 0) throw ScheduleError(0, "the maximum stop lead is negative");
  if (schedule.partitions.empty()) throw ScheduleError(0, "the schedule has no partitions");
  if (schedule.partitions.size() > kMaxPartitions)
    throw ScheduleError(0, "the schedule has " + std::to_string(schedule.partitions.size()) +
                               " partitions; at most " + std::to_string(kMaxPartitions) +
                               " (the guardian that cleans up after a crash holds that many)");
  if (schedule.windows.empty()) throw ScheduleError(0, "the schedule has no windows");
  std::map<std::string, std::size_t> index;
  for (std::size_t i = 0; i < schedule.partitions.size(); ++i) {
    const PartitionSpec& p = schedule.partitions[i];
    if (!valid_partition_name(p.name))
      throw ScheduleError(
          p.line, "partition name '" + p.name + "' must be 1 to 64 characters from [A-Za-z0-9_-]");
    if (!index.emplace(p.name, i).second)
      throw ScheduleError(p.line, "partition '" + p.name + "' is defined twice");
    if (!p.entry && (p.command.empty() || p.command[0].empty()))
      throw ScheduleError(p.line, "partition '" + p.name + "' has no command");
    if (p.nice && (*p.nice < -20 || *p.nice > 19))
      throw ScheduleError(p.line, "partition '" + p.name + "': nice must be -20..19");
    for (const auto& [name, value] : p.environment)
      if (name.empty() || name.find('=') != std::string::npos ||
          name.find('\0') != std::string::npos)
        throw ScheduleError(p.line, "partition '" + p.name + "': env name '" + name +
                                        "' must be non-empty and contain no '=' (the child "
                                        "would get the variable before the first '=')");
    for (int cpu : p.cpus)
      if (cpu < 0 || cpu >= 1024)
        throw ScheduleError(
            p.line, "partition '" + p.name + "': CPU " + std::to_string(cpu) + " is out of range");
    if (p.health.heartbeat_frames &&
        (*p.health.heartbeat_frames < 0 || *p.health.heartbeat_frames > kMaxHeartbeatFrames))
      throw ScheduleError(p.health.line > 0 ? p.health.line : p.line,
                          "partition '" + p.name + "': heartbeat_frames must be 0..." +
                              std::to_string(kMaxHeartbeatFrames) + " (0: not checked)");
  }
  if (schedule.health.heartbeat_frames && (*schedule.health.heartbeat_frames < 0 ||
                                           *schedule.health.heartbeat_frames > kMaxHeartbeatFrames))
    throw ScheduleError(schedule.health.line, "heartbeat_frames must be 0..." +
                                                  std::to_string(kMaxHeartbeatFrames) +
                                                  " (0: not checked)");
  for (WindowSpec& w : schedule.windows) {
    const auto found = index.find(w.partition);
    if (found == index.end())
      throw ScheduleError(w.line, "window names unknown partition '" + w.partition + "'");
    w.partition_index = found->second;
    if (w.duration_ns <= 0)
      throw ScheduleError(w.line, "window duration must be longer than zero (got " +
                                      format_ms(w.duration_ns) + ")");
    if (w.offset_ns < 0)
      throw ScheduleError(
          w.line, "window offset must not be negative (got " + format_ms(w.offset_ns) + ")");
    if (w.offset_ns > schedule.major_frame_ns - w.duration_ns)
      throw ScheduleError(w.line, "window [" + format_ms(w.offset_ns) + ", " +
                                      // (as a double: the sum may not fit)
                                      format_ms_sum(w.offset_ns, w.duration_ns) +
                                      ") ends past the end of the major frame (" +
                                      format_ms(schedule.major_frame_ns) + ")");
  }
  std::stable_sort(
      schedule.windows.begin(), schedule.windows.end(),
      [](const WindowSpec& a, const WindowSpec& b) { return a.offset_ns < b.offset_ns; });
  const auto& ws = schedule.windows;
  for (std::size_t i = 0; i + 1 < ws.size(); ++i) {
    const WindowSpec& a = ws[i];
    const WindowSpec& b = ws[i + 1];
    if (a.offset_ns + a.duration_ns > b.offset_ns)
      throw ScheduleError(b.line, "window of '" + b.partition + "' at " + format_ms(b.offset_ns) +
                                      " overlaps the window of '" + a.partition + "' at " +
                                      format_ms(a.offset_ns) + " (line " + std::to_string(a.line) +
                                      ")");
  }
  for (std::size_t i = 0; i < ws.size(); ++i) {
    const WindowSpec& a = ws[i];
    const WindowSpec& b = ws[(i + 1) % ws.size()];
    const bool touches =
        (i + 1 < ws.size() && a.offset_ns + a.duration_ns == b.offset_ns) ||
        (i + 1 == ws.size() && a.offset_ns + a.duration_ns == schedule.major_frame_ns &&
         b.offset_ns == 0);
    // One window that owns the whole frame "touches" only itself: accepted.
    if (touches && a.partition_index == b.partition_index && &a != &b)
      throw ScheduleError(b.line, "windows of '" + b.partition + "' at lines " +
                                      std::to_string(a.line) + " and " + std::to_string(b.line) +
                                      " touch (also across the frame boundary): merge them into "
                                      "one window, or leave a gap");
  }
  std::vector<bool> has_window(schedule.partitions.size(), false);
  for (const WindowSpec& w : ws) has_window[w.partition_index] = true;
  for (std::size_t i = 0; i < has_window.size(); ++i)
    if (!has_window[i])
      throw ScheduleError(schedule.partitions[i].line,
                          "partition '" + schedule.partitions[i].name + "' has no window");
  validate_channels(schedule);
}

HealthAction health_action(const Schedule& schedule, std::size_t partition, HealthError error) {
  if (partition < schedule.partitions.size())
    if (const auto& own = schedule.partitions[partition].health[error]) return *own;
  if (const auto& common = schedule.health[error]) return *common;
  switch (error) {
    case HealthError::process_died:
      // The behaviour of schedules written before the table.
      return schedule.on_partition_exit == OnPartitionExit::stop_schedule
                 ? HealthAction::stop_schedule
                 : HealthAction::log;
    case HealthError::overrun:
      return HealthAction::ignore;  // the summaries count overruns already
    default:
      return HealthAction::log;
  }
}

int64_t heartbeat_frames(const Schedule& schedule, std::size_t partition) {
  if (partition < schedule.partitions.size())
    if (const auto& own = schedule.partitions[partition].health.heartbeat_frames) return *own;
  return schedule.health.heartbeat_frames.value_or(0);
}

std::vector<std::string> schedule_warnings(const Schedule& schedule) {
  std::vector<std::string> warnings;
  std::size_t short_windows = 0;
  const WindowSpec* shortest = nullptr;
  for (const WindowSpec& w : schedule.windows) {
    if (w.duration_ns >= kShortWindowNs) continue;
    ++short_windows;
    if (shortest == nullptr || w.duration_ns < shortest->duration_ns) shortest = &w;
  }
  if (shortest != nullptr) {
    std::string where = "'" + shortest->partition + "' at " + format_ms(shortest->offset_ns);
    if (shortest->line > 0) where += " (line " + std::to_string(shortest->line) + ")";
    warnings.push_back(std::to_string(short_windows) + " window" + (short_windows == 1 ? "" : "s") +
                       " shorter than " + format_ms(kShortWindowNs) + " (the shortest: " + where +
                       ", " + format_ms(shortest->duration_ns) +
                       "): a suspension and a resume take tens to hundreds of microseconds, so "
                       "such windows are overrun by much of their length and cannot be met");
  }
  return warnings;
}

int64_t stop_lead_ns(std::vector<int64_t> recent, int64_t max_lead_ns, int64_t window_ns) {
  if (recent.empty() || max_lead_ns <= 0) return 0;
  std::sort(recent.begin(), recent.end());
  const std::size_t rank = (recent.size() * 95 + 99) / 100;  // nearest rank, >= 1
  const int64_t learned = recent[std::max<std::size_t>(rank, 1) - 1];
  return std::clamp<int64_t>(learned, 0, std::min(max_lead_ns, window_ns / 2));
}

double scheduling_error_percent(const WindowRecord& w, int64_t invaded_window_ns) noexcept {
  if (w.stopped_ns == 0 || invaded_window_ns <= 0) return -1;
  return 100.0 * static_cast<double>(std::max<int64_t>(0, w.overrun_ns())) /
         static_cast<double>(invaded_window_ns);
}

namespace {

// The length of the window that window index i invades when it overruns:
// the next window of the frame when it starts where i ends, else i's own.
int64_t invaded_window_ns(const Schedule& schedule, std::size_t i) {
  const WindowSpec& w = schedule.windows[i];
  const int64_t end = (w.offset_ns + w.duration_ns) % schedule.major_frame_ns;
  for (const WindowSpec& next : schedule.windows)
    if (next.offset_ns == end && &next != &w) return next.duration_ns;
  return w.duration_ns;
}

}  // namespace

std::vector<PartitionSummary> summarize(const Schedule& schedule, const RunReport& report) {
  std::vector<PartitionSummary> result;
  for (std::size_t p = 0; p < schedule.partitions.size(); ++p) {
    PartitionSummary s;
    s.partition = schedule.partitions[p].name;
    s.method = report.method;
    std::vector<double> overrun, stop, resume, start_delay, late, cpu_after, error, lead;
    double stolen = 0, scheduled = 0, given_up = 0;
    for (const WindowRecord& w : report.windows) {
      if (w.partition != p) continue;
      if (w.partition_gone) continue;
      if (w.stopped_ns == 0) {
        ++s.unmeasured;
        continue;
      }
      ++s.windows;
      overrun.push_back(static_cast<double>(w.overrun_ns()));
      stop.push_back(static_cast<double>(w.stop_latency_ns()));
      late.push_back(static_cast<double>(w.wake_late_ns()));
      lead.push_back(static_cast<double>(w.stop_lead_ns));
      if (w.cpu_after_end_ns >= 0) cpu_after.push_back(static_cast<double>(w.cpu_after_end_ns));
      if (w.first_run_ns) {
        resume.push_back(static_cast<double>(w.resume_latency_ns()));
        start_delay.push_back(static_cast<double>(w.start_delay_ns()));
      }
      if (w.window < schedule.windows.size())
        error.push_back(scheduling_error_percent(w, invaded_window_ns(schedule, w.window)));
      if (w.overrun_ns() > report.overrun_threshold_ns) ++s.over_threshold;
      if (w.never_stopped)
        ++s.never_stopped;
      else if (report.verify_stopped && w.checked && !w.verified)
        ++s.verify_failures;
      stolen += static_cast<double>(std::max<int64_t>(0, w.overrun_ns()));
      given_up += static_cast<double>(w.given_up_ns());
      scheduled += static_cast<double>(w.nominal_end_ns - w.nominal_start_ns);
    }
    double error_sum = 0;
    for (double e : error) error_sum += e;
    for (auto* v : {&overrun, &stop, &resume, &start_delay, &late, &cpu_after, &error, &lead})
      std::sort(v->begin(), v->end());
    s.overrun_p50_ns = percentile(overrun, 50);
    s.overrun_p99_ns = percentile(overrun, 99);
    s.overrun_max_ns = overrun.empty() ? 0 : overrun.back();
    s.stop_latency_p50_ns = percentile(stop, 50);
    s.stop_latency_p99_ns = percentile(stop, 99);
    s.stop_latency_max_ns = stop.empty() ? 0 : stop.back();
    s.resume_latency_p50_ns = percentile(resume, 50);
    s.resume_latency_p99_ns = percentile(resume, 99);
    s.start_delay_p50_ns = percentile(start_delay, 50);
    s.start_delay_p99_ns = percentile(start_delay, 99);
    s.start_delay_max_ns = start_delay.empty() ? 0 : start_delay.back();
    s.wake_late_p99_ns = percentile(late, 99);
    s.cpu_after_end_p99_ns = percentile(cpu_after, 99);
    s.cpu_after_end_max_ns = cpu_after.empty() ? 0 : cpu_after.back();
    s.over_threshold_percent =
        s.windows ? 100.0 * static_cast<double>(s.over_threshold) / static_cast<double>(s.windows)
                  : 0;
    s.error_percent = error.empty() ? 0 : error_sum / static_cast<double>(error.size());
    s.error_p99_percent = percentile(error, 99);
    s.error_max_percent = error.empty() ? 0 : error.back();
    s.stop_lead_p50_ns = percentile(lead, 50);
    s.stop_lead_max_ns = lead.empty() ? 0 : lead.back();
    s.stolen_percent = scheduled > 0 ? 100.0 * stolen / scheduled : 0;
    s.given_up_percent = scheduled > 0 ? 100.0 * given_up / scheduled : 0;
    result.push_back(std::move(s));
  }
  return result;
}

}  // namespace doorbell::partition
