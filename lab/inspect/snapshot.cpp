#include "lab/inspect/snapshot.h"

#include <dirent.h>
#include <fcntl.h>
#include <sched.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <charconv>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <sstream>
#include <thread>

#include "lab/common/time.h"

namespace doorbell::lab::inspect {
namespace {

constexpr unsigned kPfExiting = 0x00000004;  // include/linux/sched.h

bool process_exists(pid_t pid) {
  return ::access(("/proc/" + std::to_string(pid)).c_str(), F_OK) == 0;
}

// The whole file, or nullopt when it cannot be opened or read (errno kept).
std::optional<std::string> read_file(const std::string& path) {
  std::ifstream in(path);
  if (!in) return std::nullopt;
  std::ostringstream text;
  text << in.rdbuf();
  if (in.bad()) return std::nullopt;
  return text.str();
}

// The fields of a /proc stat line after the command name ("pid (comm)
// state ...": comm may hold spaces and parentheses, so they start after the
// LAST ')'): fields[0] is field 3 (state). Empty without a ')'.
std::vector<std::string> split_stat(std::string_view text) {
  std::vector<std::string> fields;
  const auto close = text.rfind(')');
  if (close == std::string_view::npos) return fields;
  std::istringstream in{std::string(text.substr(close + 1))};
  for (std::string field; in >> field;) fields.push_back(field);
  return fields;
}

// stat's CPU times are in clock ticks.
double clock_tick_ns() {
  const long ticks = ::sysconf(_SC_CLK_TCK);
  return ticks > 0 ? 1e9 / static_cast<double>(ticks) : 1e7;
}

[[noreturn]] void fail_read(pid_t pid, const std::string& path, int error) {
  if (!process_exists(pid))
    throw ProcessGone("process " + std::to_string(pid) + " does not exist (or exited while read)");
  std::string hint;
  if (error == EACCES || error == EPERM)
    hint = ::geteuid() == 0 ? " (refused even to root by the kernel's ptrace-read check: the "
                              "process is not dumpable, holds capabilities this one lacks, or a "
                              "security module denies it)"
                            : " (inspect a process of your own user, or run as root)";
  throw InspectError("cannot read " + path + ": " + std::strerror(error) + hint);
}

std::string_view trim(std::string_view s) {
  while (!s.empty() && (s.front() == ' ' || s.front() == '\t')) s.remove_prefix(1);
  while (!s.empty() &&
         (s.back() == ' ' || s.back() == '\t' || s.back() == '\n' || s.back() == '\r'))
    s.remove_suffix(1);
  return s;
}

// Calls f(key, value) for each "Key:\tvalue" line.
template <class F>
void for_each_field(std::string_view text, F&& f) {
  while (!text.empty()) {
    const auto end = text.find('\n');
    std::string_view line = text.substr(0, end);
    text = end == std::string_view::npos ? std::string_view() : text.substr(end + 1);
    const auto colon = line.find(':');
    if (colon == std::string_view::npos) continue;
    f(line.substr(0, colon), trim(line.substr(colon + 1)));
  }
}

std::vector<pid_t> list_numeric(const std::string& path, pid_t pid) {
  DIR* dir = ::opendir(path.c_str());
  if (dir == nullptr) fail_read(pid, path, errno);
  std::vector<pid_t> ids;
  while (const dirent* entry = ::readdir(dir)) {
    if (entry->d_name[0] < '0' || entry->d_name[0] > '9') continue;
    ids.push_back(static_cast<pid_t>(std::strtol(entry->d_name, nullptr, 10)));
  }
  ::closedir(dir);
  return ids;
}

// Thread list in the kernel's order: readdir of /proc/PID/task walks the
// thread list from the leader, which is the order complete_signal() walks.
std::vector<pid_t> list_threads(pid_t pid) {
  return list_numeric("/proc/" + std::to_string(pid) + "/task", pid);
}

std::string syscall_name(long nr) {
  switch (nr) {
    case SYS_rt_sigtimedwait:
      return "rt_sigtimedwait";
    case SYS_rt_sigsuspend:
      return "rt_sigsuspend";
#ifdef SYS_pause
    case SYS_pause:
      return "pause";
#endif
#ifdef SYS_epoll_wait
    case SYS_epoll_wait:
      return "epoll_wait";
#endif
    case SYS_epoll_pwait:
      return "epoll_pwait";
#ifdef SYS_epoll_pwait2
    case SYS_epoll_pwait2:
      return "epoll_pwait2";
#endif
#ifdef SYS_poll
    case SYS_poll:
      return "poll";
#endif
    case SYS_ppoll:
      return "ppoll";
#ifdef SYS_select
    case SYS_select:
      return "select";
#endif
    case SYS_pselect6:
      return "pselect6";
    case SYS_read:
      return "read";
    case SYS_futex:
      return "futex";
#ifdef SYS_nanosleep
    case SYS_nanosleep:
      return "nanosleep";
#endif
    case SYS_clock_nanosleep:
      return "clock_nanosleep";
    case SYS_wait4:
      return "wait4";
    case SYS_waitid:
      return "waitid";
    case SYS_io_uring_enter:
      return "io_uring_enter";
    default:
      return "syscall " + std::to_string(nr);
  }
}

// What the thread is doing, from task/TID/syscall, else task/TID/wchan.
std::string read_wait_site(const std::string& task_dir) {
  if (auto text = read_file(task_dir + "/syscall")) {
    const std::string_view t = trim(*text);
    if (t == "running") return "running";
    long nr = 0;
    if (!t.empty() && t.front() != '-' &&
        std::from_chars(t.data(), t.data() + t.size(), nr).ec == std::errc())
      return syscall_name(nr);
  }
  if (auto text = read_file(task_dir + "/wchan")) {
    const std::string_view t = trim(*text);
    if (!t.empty() && t != "0") return std::string(t);
  }
  return {};
}

// The wait set of a thread in rt_sigtimedwait: its first argument (in
// task/TID/syscall, "nr arg1 ..." in hex) points to the sigset_t, read from
// the process's memory (/proc/PID/mem, the same ptrace-read access as
// syscall needs). nullopt when either cannot be read (the thread left the
// call meanwhile: then the number no longer matches).
std::optional<std::uint64_t> read_sigwait_set(pid_t pid, const std::string& task_dir) {
  const auto text = read_file(task_dir + "/syscall");
  if (!text) return std::nullopt;
  long nr = -1;
  unsigned long long set_address = 0;
  if (std::sscanf(text->c_str(), "%ld %llx", &nr, &set_address) != 2 || nr != SYS_rt_sigtimedwait ||
      set_address == 0)
    return std::nullopt;
  const std::string mem = "/proc/" + std::to_string(pid) + "/mem";
  const int fd = ::open(mem.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return std::nullopt;
  std::uint64_t set = 0;
  const ssize_t n = ::pread(fd, &set, sizeof set, static_cast<off_t>(set_address));
  ::close(fd);
  if (n != static_cast<ssize_t>(sizeof set)) return std::nullopt;
  return set;  // bit (n-1) is signal n: /proc's layout
}

// Reads one thread; nullopt when it exited meanwhile.
std::optional<ThreadSnapshot> read_thread(pid_t pid, pid_t tid) {
  const std::string dir = "/proc/" + std::to_string(pid) + "/task/" + std::to_string(tid);
  ThreadSnapshot thread;
  thread.tid = tid;
  const auto status = read_file(dir + "/status");
  const auto stat = read_file(dir + "/stat");
  if (!status || !stat) {
    const int error = errno;
    if (::access(dir.c_str(), F_OK) != 0) return std::nullopt;  // the thread exited
    fail_read(pid, dir, error);
  }
  parse_task_status(*status, thread);
  if (!parse_task_stat(*stat, thread)) return std::nullopt;  // empty read: it exited
  if (auto comm = read_file(dir + "/comm")) thread.name = std::string(trim(*comm));
  if (auto schedstat = read_file(dir + "/schedstat")) {
    thread.read_ns = monotonic_ns();
    unsigned long long run = 0, wait = 0;
    if (std::sscanf(schedstat->c_str(), "%llu %llu", &run, &wait) == 2) {
      thread.run_ns = run;
      thread.wait_ns = wait;
      thread.has_schedstat = true;
    }
  }
  thread.wait_site = read_wait_site(dir);
  if (thread.wait_site == "rt_sigtimedwait") thread.sigwait_set = read_sigwait_set(pid, dir);
  return thread;
}

}  // namespace

bool ThreadSnapshot::realtime() const noexcept {
  return policy == SCHED_FIFO || policy == SCHED_RR;
}

const ThreadSnapshot* ProcessSnapshot::main_thread() const noexcept {
  for (const auto& t : threads)
    if (t.tid == pid) return &t;
  return nullptr;
}

std::uint64_t parse_mask(std::string_view hex) {
  hex = trim(hex);
  std::uint64_t mask = 0;
  // Only the last 16 digits matter: signals above 64 do not exist on Linux.
  if (hex.size() > 16) hex.remove_prefix(hex.size() - 16);
  if (std::from_chars(hex.data(), hex.data() + hex.size(), mask, 16).ec != std::errc()) return 0;
  return mask;
}

std::vector<int> parse_cpu_list(std::string_view list) {
  std::vector<int> cpus;
  list = trim(list);
  while (!list.empty()) {
    const auto comma = list.find(',');
    std::string_view range = list.substr(0, comma);
    list = comma == std::string_view::npos ? std::string_view() : list.substr(comma + 1);
    int first = 0, last = 0;
    const auto dash = range.find('-');
    const std::string_view a = range.substr(0, dash);
    if (std::from_chars(a.data(), a.data() + a.size(), first).ec != std::errc()) continue;
    last = first;
    if (dash != std::string_view::npos) {
      const std::string_view b = range.substr(dash + 1);
      if (std::from_chars(b.data(), b.data() + b.size(), last).ec != std::errc()) continue;
    }
    for (int cpu = first; cpu <= last && cpu < 1 << 16; ++cpu) cpus.push_back(cpu);
  }
  std::sort(cpus.begin(), cpus.end());
  cpus.erase(std::unique(cpus.begin(), cpus.end()), cpus.end());
  return cpus;
}

void parse_task_status(std::string_view text, ThreadSnapshot& thread) {
  for_each_field(text, [&](std::string_view key, std::string_view value) {
    if (key == "State" && !value.empty())
      thread.state = value.front();
    else if (key == "SigPnd")
      thread.pending = parse_mask(value);
    else if (key == "SigBlk")
      thread.blocked = parse_mask(value);
    else if (key == "SigIgn")
      thread.ignored = parse_mask(value);
    else if (key == "SigCgt")
      thread.caught = parse_mask(value);
    else if (key == "Cpus_allowed_list") {
      thread.cpus_allowed_list = std::string(value);
      thread.cpus_allowed = parse_cpu_list(value);
    }
  });
}

bool parse_task_stat(std::string_view text, ThreadSnapshot& thread) {
  const std::vector<std::string> fields = split_stat(text);  // fields[0] is field 3 (state)
  auto field = [&](int number) -> long long {
    const std::size_t index = static_cast<std::size_t>(number - 3);
    return index < fields.size() ? std::strtoll(fields[index].c_str(), nullptr, 10) : 0;
  };
  if (fields.size() < 41 - 3 + 1) return false;
  if (thread.state == '?' && !fields[0].empty()) thread.state = fields[0][0];
  thread.exiting = (static_cast<unsigned long long>(field(9)) & kPfExiting) != 0;
  thread.nice = static_cast<int>(field(19));
  thread.processor = static_cast<int>(field(39));
  thread.rt_priority = static_cast<int>(field(40));
  thread.policy = static_cast<int>(field(41));
  thread.start_time = static_cast<std::uint64_t>(field(22));
  return true;
}

std::vector<pid_t> parse_namespace_pids(std::string_view status) {
  std::vector<pid_t> ids;
  for_each_field(status, [&](std::string_view key, std::string_view value) {
    if (key != "NSpid") return;
    std::istringstream in{std::string(value)};
    for (long id; in >> id;) ids.push_back(static_cast<pid_t>(id));
  });
  return ids;
}

long parse_limits_sigpending(std::string_view text) {
  long result = -1;
  while (!text.empty()) {
    const auto end = text.find('\n');
    std::string_view line = text.substr(0, end);
    text = end == std::string_view::npos ? std::string_view() : text.substr(end + 1);
    constexpr std::string_view kKey = "Max pending signals";
    if (line.substr(0, kKey.size()) != kKey) continue;
    std::string_view rest = trim(line.substr(kKey.size()));
    long value = 0;
    if (std::from_chars(rest.data(), rest.data() + rest.size(), value).ec == std::errc())
      result = value;  // "unlimited" stays -1
  }
  return result;
}

std::optional<std::uint64_t> parse_signalfd_fdinfo(std::string_view text) {
  std::optional<std::uint64_t> mask;
  for_each_field(text, [&](std::string_view key, std::string_view value) {
    if (key == "sigmask") mask = parse_mask(value);
  });
  return mask;
}

namespace {

// split_stat() of a /proc/PID/stat file; empty when it is gone or malformed.
std::vector<std::string> stat_fields(const std::string& path) {
  const auto text = read_file(path);
  return text ? split_stat(*text) : std::vector<std::string>{};
}

pid_t stat_pid(const std::vector<std::string>& fields, int number) {
  return static_cast<pid_t>(
      std::strtol(fields[static_cast<std::size_t>(number - 3)].c_str(), nullptr, 10));
}

// utime + stime of /proc/PID/stat (every thread the process ever had, the
// dead ones included), in ns; state, process group and session from the
// same line.
bool read_process_stat(const std::string& base, ProcessSnapshot& process) {
  const auto fields = stat_fields(base + "/stat");
  if (fields.size() < 15 - 3 + 1) return false;
  process.state = fields[0].empty() ? '?' : fields[0][0];
  process.process_group = stat_pid(fields, 5);
  process.session = stat_pid(fields, 6);
  const double cpu = static_cast<double>(std::strtoull(fields[14 - 3].c_str(), nullptr, 10) +
                                         std::strtoull(fields[15 - 3].c_str(), nullptr, 10));
  process.cpu_ns = static_cast<std::uint64_t>(cpu * clock_tick_ns());
  return true;
}

// Kernel threads live only in the initial PID namespace: kthreadd (PID 2)
// visible means PID 1 here is the system's init.
bool in_initial_pid_namespace() {
  const auto kthreadd = read_file("/proc/2/comm");
  return kthreadd && trim(*kthreadd) == "kthreadd";
}

// The kernel's will_become_orphaned_pgrp() over /proc: a group is orphaned
// unless a member (not an exited one, not a child of the global init) has
// its parent in another group of the same session. Parents outside our PID
// namespace (PPid 0) cannot be judged and are passed over, as the kernel
// passes over the global init's children. `global_init_visible`: PID 1 here
// is the system's init.
bool process_group_orphaned(pid_t pgrp, pid_t session, bool global_init_visible) {
  if (pgrp <= 0) return false;
  DIR* dir = ::opendir("/proc");
  if (!dir) return false;  // cannot tell: stop signals keep their default verdict
  std::vector<pid_t> members_parents;
  while (const dirent* entry = ::readdir(dir)) {
    if (entry->d_name[0] < '0' || entry->d_name[0] > '9') continue;
    const auto fields = stat_fields(std::string("/proc/") + entry->d_name + "/stat");
    if (fields.size() < 20 - 3 + 1 || stat_pid(fields, 5) != pgrp) continue;
    // An exited leader whose other threads live still counts (exit_state
    // and an empty thread group are both needed to pass it over).
    if (fields[0] == "Z" && stat_pid(fields, 20) <= 1) continue;
    const pid_t parent = stat_pid(fields, 4);
    if (parent <= 0 || (parent == 1 && global_init_visible)) continue;
    members_parents.push_back(parent);
  }
  ::closedir(dir);
  for (const pid_t parent : members_parents) {
    const auto fields = stat_fields("/proc/" + std::to_string(parent) + "/stat");
    if (fields.size() < 6 - 3 + 1) continue;  // exited meanwhile: reparented, read again
    if (stat_pid(fields, 5) != pgrp && stat_pid(fields, 6) == session) return false;
  }
  return true;
}

bool dead(const ThreadSnapshot& t) {
  return t.state == 'Z' || t.state == 'X' || t.state == 'x';
}

}  // namespace

ProcessSnapshot read_process(pid_t pid) {
  if (pid <= 0) throw ProcessGone("no process has the id " + std::to_string(pid));
  ProcessSnapshot process;
  process.pid = pid;
  process.reader_is_root = ::geteuid() == 0;
  const long cpus = ::sysconf(_SC_NPROCESSORS_ONLN);
  process.online_cpus = cpus > 0 ? static_cast<int>(cpus) : 1;

  std::string base = "/proc/" + std::to_string(pid);
  auto status = read_file(base + "/status");
  if (!status) fail_read(pid, base + "/status", errno);
  // A thread id: /proc/TID is that thread's view of its process; read the
  // process under its own id, so that its main thread is found.
  pid_t tgid = pid;
  for_each_field(*status, [&](std::string_view key, std::string_view value) {
    if (key == "Tgid") std::from_chars(value.data(), value.data() + value.size(), tgid);
  });
  if (tgid > 0 && tgid != pid) {
    process.asked_tid = pid;
    process.pid = pid = tgid;
    base = "/proc/" + std::to_string(pid);
    status = read_file(base + "/status");
    if (!status) fail_read(pid, base + "/status", errno);
  }
  for_each_field(*status, [&](std::string_view key, std::string_view value) {
    if (key == "Name")
      process.name = std::string(value);
    else if (key == "ShdPnd")
      process.shared_pending = parse_mask(value);
    else if (key == "SigQ")
      std::sscanf(std::string(value).c_str(), "%ld/%ld", &process.queued, &process.queue_limit);
    else if (key == "PPid")
      std::from_chars(value.data(), value.data() + value.size(), process.parent);
  });
  process.namespace_pids = parse_namespace_pids(*status);
  process.namespace_init =
      process.namespace_pids.empty() ? pid == 1 : process.namespace_pids.back() == 1;
  const bool initial_namespace = in_initial_pid_namespace();
  process.global_init =
      process.namespace_init && process.namespace_pids.size() <= 1 && initial_namespace;
  if (!read_process_stat(base, process) && !process_exists(pid))
    throw ProcessGone("process " + std::to_string(pid) + " exited while it was read");
  process.orphaned_process_group =
      process_group_orphaned(process.process_group, process.session, initial_namespace);
  if (const auto limits = read_file(base + "/limits"))
    process.rlimit_sigpending = parse_limits_sigpending(*limits);

  for (const pid_t tid : list_threads(pid))
    if (auto thread = read_thread(pid, tid)) process.threads.push_back(std::move(*thread));
  if (process.threads.empty())
    throw ProcessGone("process " + std::to_string(pid) + " exited while it was read");
  if (std::all_of(process.threads.begin(), process.threads.end(), dead))
    throw ProcessGone("process " + std::to_string(pid) + " (" + process.name +
                      ") has exited: it is a zombie that its parent (process " +
                      std::to_string(process.parent) +
                      ") has not reaped yet; a signal sent to it is discarded");

  // signalfds. fdinfo may be unreadable for another user's process even
  // where status is readable: then say so rather than report "none".
  const std::string fdinfo = base + "/fdinfo";
  if (DIR* dir = ::opendir(fdinfo.c_str())) {
    std::vector<int> fds;
    while (const dirent* entry = ::readdir(dir))
      if (entry->d_name[0] >= '0' && entry->d_name[0] <= '9')
        fds.push_back(static_cast<int>(std::strtol(entry->d_name, nullptr, 10)));
    ::closedir(dir);
    for (const int fd : fds) {
      const auto text = read_file(fdinfo + "/" + std::to_string(fd));
      if (!text) continue;  // closed meanwhile
      if (auto mask = parse_signalfd_fdinfo(*text)) process.signalfds.push_back({fd, *mask});
    }
  } else if (errno == EACCES || errno == EPERM) {
    process.fdinfo_readable = false;  // status was readable: report without signalfds
    process.fdinfo_error = errno;
  } else {
    fail_read(pid, fdinfo, errno);
  }
  std::sort(process.signalfds.begin(), process.signalfds.end(),
            [](const auto& a, const auto& b) { return a.fd < b.fd; });
  if (!process_exists(pid))
    throw ProcessGone("process " + std::to_string(pid) + " exited while it was read");
  return process;
}

ProcessSnapshot sample_process(pid_t pid, std::chrono::nanoseconds window) {
  const ProcessSnapshot first = read_process(pid);
  const std::uint64_t start = monotonic_ns();
  std::this_thread::sleep_for(window);
  // Under its process id: a thread id asked for was resolved by the first read.
  ProcessSnapshot second = read_process(first.pid);
  second.asked_tid = first.asked_tid;
  const std::uint64_t end = monotonic_ns();
  // The window runs from the end of the first read to the end of the second
  // read: a slight overestimate, so the shares err low.
  second.window_ns = end > start ? end - start : 0;
  if (second.window_ns == 0) return second;
  // Each thread's share over the time between its own two reads (a read of
  // many threads takes a while: one window for all would err high), within
  // [0, 1]. A thread that was not there at the first read, or whose TID now
  // belongs to a newer thread (another start time), has none.
  std::uint64_t matched_run_ns = 0;
  for (auto& thread : second.threads) {
    const auto before = std::find_if(
        first.threads.begin(), first.threads.end(),
        [&](const auto& t) { return t.tid == thread.tid && t.start_time == thread.start_time; });
    if (before == first.threads.end()) {
      thread.new_in_window = true;
      if (!dead(thread)) ++second.short_lived_seen;
      continue;
    }
    if (!before->has_schedstat || !thread.has_schedstat || thread.read_ns <= before->read_ns ||
        thread.run_ns < before->run_ns || thread.wait_ns < before->wait_ns)
      continue;
    const double span = static_cast<double>(thread.read_ns - before->read_ns);
    matched_run_ns += thread.run_ns - before->run_ns;
    thread.run_share =
        std::clamp(static_cast<double>(thread.run_ns - before->run_ns) / span, 0.0, 1.0);
    thread.wait_share = std::clamp(static_cast<double>(thread.wait_ns - before->wait_ns) / span,
                                   0.0, 1.0 - thread.run_share);
  }
  // What the threads present throughout did not use of the process's CPU
  // time went to threads born or dead in the window (stat's figures are in
  // clock ticks: a few percent of a 200 ms window).
  if (second.cpu_ns >= first.cpu_ns) {
    const double other =
        static_cast<double>(second.cpu_ns - first.cpu_ns) - static_cast<double>(matched_run_ns);
    // stat truncates to a clock tick at each read: less than two ticks of
    // difference is that rounding, not threads (it would be all of a 10 ms
    // window).
    second.short_lived_share =
        other < 2 * clock_tick_ns() ? 0.0 : other / static_cast<double>(second.window_ns);
  }
  return second;
}

PendingSnapshot read_pending(pid_t pid) {
  const std::string base = "/proc/" + std::to_string(pid);
  PendingSnapshot pending;
  const auto status = read_file(base + "/status");
  if (!status) fail_read(pid, base + "/status", errno);
  for_each_field(*status, [&](std::string_view key, std::string_view value) {
    if (key == "ShdPnd") pending.shared = parse_mask(value);
  });
  bool all_dead = true;
  for (const pid_t tid : list_threads(pid)) {
    const auto text = read_file(base + "/task/" + std::to_string(tid) + "/status");
    if (!text) continue;
    ThreadSnapshot thread;
    parse_task_status(*text, thread);
    all_dead = all_dead && dead(thread);
    pending.threads.emplace_back(tid, thread.pending);
  }
  if (!process_exists(pid) || all_dead)
    throw ProcessGone("process " + std::to_string(pid) + " exited");
  return pending;
}

}  // namespace doorbell::lab::inspect
