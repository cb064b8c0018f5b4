// The one binding to tracefs (the kernel's tracing file system) through
// libtracefs and libtraceevent: `doorbell trace` and the lab's e2e group use
// this and nothing else.
//
// Mount policy: the system's mount table is never changed.
//  - If tracefs is mounted in the caller's mount namespace (found in
//    /proc/self/mountinfo, wherever it is mounted), that mount is used.
//  - Otherwise a helper thread unshares its mount namespace
//    (unshare(CLONE_NEWNS)), makes every mount in it private (MS_REC |
//    MS_PRIVATE, so nothing propagates back to the system's namespace),
//    mounts tracefs on /sys/kernel/tracing there, opens the mounted directory
//    and exits. The namespace dies with the thread; the open descriptor keeps
//    the tracefs mount alive, detached from every namespace, and every thread
//    reaches it as /proc/self/fd/N. No other thread's namespace changes.
//    Why a helper thread: a mount namespace belongs to a thread, not to a
//    process. unshare(CLONE_NEWNS) succeeds in a multi-threaded process (only
//    CLONE_NEWUSER, CLONE_THREAD, CLONE_SIGHAND and CLONE_VM require a single
//    thread; verified on kernel 6.18), but it moves only the calling thread:
//    its siblings keep the system's view, and everything the caller did
//    afterwards (later scenarios of the same `doorbell bench`, the processes
//    it forks) would run in the private namespace. The helper thread keeps
//    the effect to one descriptor.
//  - When neither works (not root, no tracefs in this kernel), tracing_dir()
//    throws TracefsError saying which step failed and why.
//
// libtracefs itself mounts tracefs on /sys/kernel/tracing (on the system's
// table) when it cannot find it; tracing_dir() hands it the directory chosen
// above first (tracefs_set_tracing_dir), so it never does.
//
// Instances: every instance this binding creates is named
// "doorbell-<purpose>-<pid>" (kInstancePrefix). Creating one first removes
// the instances with that prefix whose owner process no longer exists (left
// by a process that was SIGKILLed); instances of live owners, the top-level
// buffer and other tools' instances are never touched.
//
// Threads: tracing_dir() may be called from any thread (the first call does
// the work, once). An Instance is not thread-safe; use one from one thread at
// a time. Fork: a child inherits the descriptor of a private mount, so the
// path stays valid in it; the child must not destroy its parent's instances.
// Nothing here is async-signal-safe.
#pragma once

#include <sys/types.h>

#include <cstdint>
#include <functional>
#include <optional>
#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

struct tracefs_instance;  // libtracefs, global namespace
struct tep_handle;        // libtraceevent
struct tep_event;
struct tep_record;

namespace doorbell::sys::tracefs {

inline constexpr std::string_view kInstancePrefix = "doorbell-";

// Tracing is not possible here; what() says why and what to do.
class TracefsError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

// The mount point of a tracefs in the given mountinfo text (the format of
// /proc/PID/mountinfo), or nullopt. The first one wins.
std::optional<std::string> find_mount_in(std::string_view mountinfo);

// find_mount_in(/proc/self/mountinfo): tracefs as this thread sees it.
std::optional<std::string> find_mount();

// How many tracefs mounts the given mountinfo text lists.
int count_mounts_in(std::string_view mountinfo);

struct TracingDir {
  std::string path;            // a mount point, or /proc/self/fd/N for a private mount
  bool private_mount = false;  // mounted by this process outside every namespace
};

// The tracing directory for this process, chosen once by the policy above.
// Throws TracefsError (every call, with the same message) when there is none.
const TracingDir& tracing_dir();

// Removes instances named kInstancePrefix<purpose>-<pid> whose owner pid no
// longer exists; returns their names. Instance creation calls it.
std::vector<std::string> remove_stale_instances();

// An event of the instance's buffer, valid only during the read callback.
struct RawEvent {
  int id = -1;         // the event's id (EventFormats::id)
  uint64_t ts_ns = 0;  // the instance's trace clock
  int cpu = -1;
  pid_t common_pid = 0;  // the thread the event ran in
  ::tep_event* event = nullptr;
  ::tep_record* record = nullptr;

  // A numeric field; nullopt when the event has no such field.
  std::optional<unsigned long long> number(const char* field) const;
  // A char-array field up to its first NUL; empty when absent.
  std::string text(const char* field) const;
};

struct EventName {
  const char* system;
  const char* event;
};

// The formats of the named events only (parsing every format, kallsyms and
// printk formats as tracefs_local_events() does takes half a second).
// Events this kernel lacks are left out: id() returns -1 for them.
class EventFormats {
 public:
  // Throws TracefsError when the header page cannot be parsed.
  explicit EventFormats(const std::vector<EventName>& events);
  ~EventFormats();
  EventFormats(const EventFormats&) = delete;
  EventFormats& operator=(const EventFormats&) = delete;

  int id(const char* system, const char* event) const;
  ::tep_handle* handle() const noexcept { return tep_; }

 private:
  ::tep_handle* tep_ = nullptr;
};

// A tracing instance of its own (own ring buffer, own enabled events):
// created by the constructor, removed (events disabled first) by the
// destructor.
class Instance {
 public:
  // Creates kInstancePrefix<purpose>-<getpid()>; purpose is lower-case
  // letters and digits ("trace", "e2e"). Throws TracefsError (no tracefs, no permission:
  // EACCES/EPERM say "run as root") or std::system_error.
  explicit Instance(std::string_view purpose);
  ~Instance();
  Instance(const Instance&) = delete;
  Instance& operator=(const Instance&) = delete;

  const std::string& name() const noexcept { return name_; }
  // Stale instances removed when this one was created.
  const std::vector<std::string>& removed_stale() const noexcept { return removed_stale_; }

  // Returns false when the kernel refused (no such event, say).
  bool enable(const char* system, const char* event);
  void disable(const char* system, const char* event);
  void disable_all();
  // Writes a file of the instance ("trace_clock", "buffer_size_kb", "trace");
  // false when the write failed.
  bool write(const char* file, const char* text);
  // Writes a file of one event of the instance ("filter").
  bool write_event_file(const char* system, const char* event, const char* file, const char* text);
  void tracing_on();
  void tracing_off();
  // Events the ring buffer overwrote before they were read, all CPUs.
  long long overruns() const;
  // The unread bytes of the fullest CPU's ring buffer ("bytes:" of its
  // per_cpu stats).
  long long fullest_cpu_bytes() const;
  // One number of every CPU's per_cpu stats, by its field ("overrun:").
  std::vector<long long> per_cpu_stat(const char* field) const;

  // Reads (consumes) every event waiting in the buffers, calling `on_event`
  // for each one EventFormats knows. Returns the number of events passed.
  uint64_t read(const EventFormats& formats, const std::function<void(const RawEvent&)>& on_event);

 private:
  std::string name_;
  std::vector<std::string> removed_stale_;
  ::tracefs_instance* instance_ = nullptr;
};

}  // namespace doorbell::sys::tracefs
