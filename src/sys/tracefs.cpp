#include "sys/tracefs.h"

#include <dirent.h>
#include <fcntl.h>
#include <sched.h>
#include <signal.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <mutex>
#include <sstream>
#include <system_error>
#include <thread>

// libtracefs 1.6's header (Debian 12: libtracefs-dev 1.6.4) has an inline
// function, tracefs_hist_start(), that passes the int 0 where the function
// takes an enum: valid C, an error in C++. We use no histogram function, so
// the header's calls are routed to a renamed declaration, and an int overload
// (never called, never emitted) takes the 0. Nothing of this reaches the
// library's ABI. This is the only file that includes <tracefs/tracefs.h>.
struct tracefs_instance;
struct tracefs_hist;
#define tracefs_hist_command(instance, hist, command) \
  doorbell_tracefs_hist_command(instance, hist, command)
static inline int doorbell_tracefs_hist_command(struct tracefs_instance*, struct tracefs_hist*,
                                                int) {
  return -1;
}
extern "C" {
#include <tracefs/tracefs.h>
}
#undef tracefs_hist_command

#if defined(__SANITIZE_ADDRESS__)
// libtracefs 1.6.4 keeps a strdup'd path and compiled regexes (its event and
// instance matching) that it never frees; they are the library's, not ours.
// LeakSanitizer cannot unwind through the library (no frame pointers), so
// the stacks end in the C library's regex compiler.
extern "C" const char* __lsan_default_suppressions() {
  return "leak:libtracefs.so\nleak:re_compile_internal\nleak:regcomp\n";
}
#endif

namespace doorbell::sys::tracefs {
namespace {

// Where a private mount goes inside the helper thread's namespace: the
// kernel's own mount point for tracefs (an empty directory of sysfs).
constexpr const char* kPrivateMountPoint = "/sys/kernel/tracing";

std::string read_file(const std::string& path) {
  std::ifstream in(path);
  std::stringstream buffer;
  buffer << in.rdbuf();
  return buffer.str();
}

// mountinfo escapes space, tab, newline and backslash as \ooo.
std::string unescape(std::string_view field) {
  std::string out;
  for (std::size_t i = 0; i < field.size(); ++i) {
    if (field[i] == '\\' && i + 3 < field.size()) {
      const std::string octal(field.substr(i + 1, 3));
      char* end = nullptr;
      const long value = std::strtol(octal.c_str(), &end, 8);
      if (end == octal.c_str() + 3) {
        out.push_back(static_cast<char>(value));
        i += 3;
        continue;
      }
    }
    out.push_back(field[i]);
  }
  return out;
}

// Calls on_mount(mount point, fs type) for each line of mountinfo text.
template <typename F>
void for_each_mount(std::string_view mountinfo, F on_mount) {
  std::istringstream in{std::string(mountinfo)};
  std::string line;
  while (std::getline(in, line)) {
    // id parent major:minor root mount-point options [optional...] - type source super
    std::istringstream fields(line);
    std::string id, parent, device, root, mount_point, field;
    if (!(fields >> id >> parent >> device >> root >> mount_point)) continue;
    while (fields >> field && field != "-") {
    }
    std::string type;
    if (field != "-" || !(fields >> type)) continue;
    on_mount(unescape(mount_point), type);
  }
}

bool process_exists(pid_t pid) {
  return ::kill(pid, 0) == 0 || errno == EPERM;
}

std::string errno_text(int error) {
  return std::strerror(error);
}

// Mounts tracefs in a mount namespace of a helper thread's own and returns an
// open descriptor of its root (see the header). Throws TracefsError.
int mount_privately() {
  int fd = -1;
  std::string failure;
  std::thread helper([&] {
    if (::unshare(CLONE_NEWNS) != 0) {
      failure =
          "tracefs is not mounted, and mounting it in a private mount namespace needs "
          "root (CAP_SYS_ADMIN): unshare(CLONE_NEWNS): " +
          errno_text(errno) +
          ". Run as root, or mount it: mount -t tracefs nodev /sys/kernel/tracing";
      return;
    }
    // Private first: with shared propagation (systemd's default) the mount
    // below would appear in the system's namespace too.
    if (::mount(nullptr, "/", nullptr, MS_REC | MS_PRIVATE, nullptr) != 0) {
      failure = "cannot make the private mount namespace private (mount MS_REC|MS_PRIVATE /): " +
                errno_text(errno);
      return;
    }
    if (::mount("nodev", kPrivateMountPoint, "tracefs", 0, nullptr) != 0) {
      failure = "tracefs is not mounted and mounting it (privately, on " +
                std::string(kPrivateMountPoint) + ") failed: " + errno_text(errno) +
                ". Is tracing built into this kernel (CONFIG_EVENT_TRACING)?";
      return;
    }
    fd = ::open(kPrivateMountPoint, O_PATH | O_DIRECTORY | O_CLOEXEC);
    if (fd < 0) failure = "cannot open the private tracefs mount: " + errno_text(errno);
    // The thread ends here and its namespace with it; fd keeps the mount.
  });
  helper.join();
  if (fd < 0) throw TracefsError(failure);
  return fd;
}

TracingDir choose_tracing_dir() {
  TracingDir dir;
  if (auto mounted = find_mount()) {
    if (::access(mounted->c_str(), R_OK | W_OK | X_OK) != 0)
      throw TracefsError("no access to tracefs at " + *mounted + " (" + errno_text(errno) +
                         "): run as root, or ask for write access to it");
    dir.path = *mounted;
  } else {
    const int fd = mount_privately();
    dir.path = "/proc/self/fd/" + std::to_string(fd);
    dir.private_mount = true;
  }
  // From now on libtracefs looks here, and never mounts tracefs itself.
  std::string copy = dir.path;
  if (::tracefs_set_tracing_dir(copy.data()) != 0)
    throw TracefsError("libtracefs refused the tracing directory " + dir.path);
  return dir;
}

// "doorbell-<purpose>-<pid>": the owner pid, or 0 when the name is not ours.
pid_t owner_of(std::string_view name) {
  if (name.substr(0, kInstancePrefix.size()) != kInstancePrefix) return 0;
  const std::string_view rest = name.substr(kInstancePrefix.size());
  const std::size_t dash = rest.rfind('-');
  if (dash == std::string_view::npos || dash == 0 || dash + 1 == rest.size()) return 0;
  for (char c : rest.substr(0, dash))
    if ((c < 'a' || c > 'z') && (c < '0' || c > '9')) return 0;
  long pid = 0;
  for (char c : rest.substr(dash + 1)) {
    if (c < '0' || c > '9' || pid > 100'000'000) return 0;
    pid = pid * 10 + (c - '0');
  }
  return static_cast<pid_t>(pid);
}

int on_raw_event(tep_event* event, tep_record* record, int cpu, void* context) {
  auto& callback = *static_cast<const std::function<void(const RawEvent&)>*>(context);
  RawEvent e;
  e.id = event->id;
  e.ts_ns = record->ts;
  e.cpu = cpu;
  e.common_pid = tep_data_pid(event->tep, record);
  e.event = event;
  e.record = record;
  callback(e);
  return 0;
}

}  // namespace

std::optional<std::string> find_mount_in(std::string_view mountinfo) {
  std::optional<std::string> found;
  for_each_mount(mountinfo, [&](const std::string& point, const std::string& type) {
    if (!found && type == "tracefs") found = point;
  });
  return found;
}

std::optional<std::string> find_mount() {
  return find_mount_in(read_file("/proc/self/mountinfo"));
}

int count_mounts_in(std::string_view mountinfo) {
  int count = 0;
  for_each_mount(mountinfo, [&](const std::string&, const std::string& type) {
    if (type == "tracefs") ++count;
  });
  return count;
}

const TracingDir& tracing_dir() {
  static TracingDir dir;
  static std::string failure;
  static std::once_flag once;
  std::call_once(once, [] {
    try {
      dir = choose_tracing_dir();
    } catch (const std::exception& e) {
      failure = e.what();
    }
  });
  if (!failure.empty()) throw TracefsError(failure);
  return dir;
}

std::vector<std::string> remove_stale_instances() {
  std::vector<std::string> removed;
  const TracingDir& dir = tracing_dir();
  DIR* instances = ::opendir((dir.path + "/instances").c_str());
  if (instances == nullptr) return removed;
  std::vector<std::string> stale;
  while (const dirent* entry = ::readdir(instances)) {
    const pid_t owner = owner_of(entry->d_name);
    if (owner > 0 && !process_exists(owner)) stale.emplace_back(entry->d_name);
  }
  ::closedir(instances);
  for (const std::string& name : stale) {
    tracefs_instance* instance = tracefs_instance_alloc(dir.path.c_str(), name.c_str());
    if (instance == nullptr) continue;
    tracefs_trace_off(instance);
    tracefs_event_disable(instance, nullptr, nullptr);
    if (tracefs_instance_destroy(instance) == 0) removed.push_back(name);
    tracefs_instance_free(instance);
  }
  return removed;
}

std::optional<unsigned long long> RawEvent::number(const char* field) const {
  unsigned long long value = 0;
  if (tep_get_field_val(nullptr, event, field, record, &value, 0) != 0) return std::nullopt;
  return value;
}

std::string RawEvent::text(const char* field) const {
  int length = 0;
  const char* raw =
      static_cast<const char*>(tep_get_field_raw(nullptr, event, field, record, &length, 0));
  if (raw == nullptr || length <= 0) return {};
  return std::string(raw, ::strnlen(raw, static_cast<std::size_t>(length)));
}

EventFormats::EventFormats(const std::vector<EventName>& events) {
  const std::string& dir = tracing_dir().path;
  tep_ = tep_alloc();
  if (tep_ == nullptr) throw std::bad_alloc();
  tep_set_long_size(tep_, sizeof(long));
  tep_set_page_size(tep_, static_cast<int>(::sysconf(_SC_PAGESIZE)));
  const tep_endian endian = tep_is_bigendian() ? TEP_BIG_ENDIAN : TEP_LITTLE_ENDIAN;
  tep_set_file_bigendian(tep_, endian);
  tep_set_local_bigendian(tep_, endian);
  std::string header = read_file(dir + "/events/header_page");
  if (header.empty() ||
      tep_parse_header_page(tep_, header.data(), header.size(), sizeof(long)) != 0) {
    tep_free(tep_);
    throw TracefsError("cannot parse " + dir + "/events/header_page");
  }
  for (const EventName& name : events) {
    const std::string format =
        read_file(dir + "/events/" + name.system + "/" + name.event + "/format");
    if (format.empty()) continue;  // not in this kernel (irq_vectors off x86, say)
    tep_parse_event(tep_, format.data(), format.size(), name.system);
  }
}

EventFormats::~EventFormats() {
  tep_free(tep_);
}

int EventFormats::id(const char* system, const char* event) const {
  tep_event* found = tep_find_event_by_name(tep_, system, event);
  return found != nullptr ? found->id : -1;
}

Instance::Instance(std::string_view purpose) {
  for (char c : purpose)
    if ((c < 'a' || c > 'z') && (c < '0' || c > '9'))
      throw std::invalid_argument("tracefs instance purpose: a-z and 0-9 only");
  const TracingDir& dir = tracing_dir();
  removed_stale_ = remove_stale_instances();
  name_ = std::string(kInstancePrefix) + std::string(purpose) + "-" + std::to_string(::getpid());
  const std::string path = dir.path + "/instances/" + name_;
  if (::mkdir(path.c_str(), 0755) != 0) {
    const int error = errno;
    if (error == EACCES || error == EPERM)
      throw TracefsError("cannot create a tracing instance: " + errno_text(error) +
                         ": run as root");
    throw std::system_error(error, std::generic_category(),
                            "creating the tracing instance " + path);
  }
  instance_ = tracefs_instance_alloc(dir.path.c_str(), name_.c_str());
  if (instance_ == nullptr) {
    const int error = errno;
    ::rmdir(path.c_str());
    throw std::system_error(error, std::generic_category(), "tracefs_instance_alloc " + name_);
  }
}

Instance::~Instance() {
  tracefs_trace_off(instance_);
  tracefs_event_disable(instance_, nullptr, nullptr);
  tracefs_instance_destroy(instance_);
  tracefs_instance_free(instance_);
}

bool Instance::enable(const char* system, const char* event) {
  return tracefs_event_enable(instance_, system, event) == 0;
}

void Instance::disable(const char* system, const char* event) {
  tracefs_event_disable(instance_, system, event);
}

void Instance::disable_all() {
  tracefs_event_disable(instance_, nullptr, nullptr);
}

bool Instance::write(const char* file, const char* text) {
  // Returns the bytes written; an empty text (clearing "trace") writes none.
  return tracefs_instance_file_write(instance_, file, text) >= 0;
}

bool Instance::write_event_file(const char* system, const char* event, const char* file,
                                const char* text) {
  return tracefs_event_file_write(instance_, system, event, file, text) >= 0;
}

void Instance::tracing_on() {
  tracefs_trace_on(instance_);
}

void Instance::tracing_off() {
  tracefs_trace_off(instance_);
}

std::vector<long long> Instance::per_cpu_stat(const char* field) const {
  std::vector<long long> values;
  const long cpus = ::sysconf(_SC_NPROCESSORS_CONF);
  const std::size_t length = std::strlen(field);
  for (long cpu = 0; cpu < cpus; ++cpu) {
    const std::string file = "per_cpu/cpu" + std::to_string(cpu) + "/stats";
    char* text = tracefs_instance_file_read(instance_, file.c_str(), nullptr);
    if (text == nullptr) continue;
    if (const char* at = std::strstr(text, field))
      values.push_back(std::strtoll(at + length, nullptr, 10));
    std::free(text);
  }
  return values;
}

long long Instance::overruns() const {
  long long total = 0;
  for (const long long n : per_cpu_stat("overrun:")) total += n;
  return total;
}

long long Instance::fullest_cpu_bytes() const {
  long long fullest = 0;
  for (const long long n : per_cpu_stat("bytes:")) fullest = std::max(fullest, n);
  return fullest;
}

uint64_t Instance::read(const EventFormats& formats,
                        const std::function<void(const RawEvent&)>& on_event) {
  uint64_t count = 0;
  const std::function<void(const RawEvent&)> counting = [&](const RawEvent& e) {
    ++count;
    on_event(e);
  };
  tracefs_iterate_raw_events(formats.handle(), instance_, nullptr, 0, on_raw_event,
                             const_cast<std::function<void(const RawEvent&)>*>(&counting));
  return count;
}

}  // namespace doorbell::sys::tracefs
