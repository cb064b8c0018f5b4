#include "partition/partition_guardian.h"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <utility>

#include "sys/error.h"
#include "sys/pidfd.h"
#include "sys/reap.h"
#include "sys/syscalls.h"

#ifndef CLOSE_RANGE_CLOEXEC
#define CLOSE_RANGE_CLOEXEC (1U << 2)
#endif

namespace doorbell::detail {
namespace {

// kFinish: the scheduler is done (finish()); clean up now, whoever else
// still holds a copy of its end of the socket.
enum : int { kPartition = 1, kCgroup = 2, kDirectory = 3, kFinish = 4, kForget = 5 };
constexpr int kMaxPartitions = static_cast<int>(partition::kMaxPartitions);
constexpr int kMaxCgroups = static_cast<int>(Guardian::kMaxCgroups);
constexpr int kMaxDirectories = static_cast<int>(Guardian::kMaxDirectories);
constexpr int kPathMax = 512;

enum : int { kCgroupV1 = 1, kCgroupKill = 2 };

struct Message {
  int kind;
  int flag;     // partition: kill on exit; cgroup: kCgroupV1 | kCgroupKill; forget: the slot
  pid_t group;  // partition: its process group (0: none)
  char path[kPathMax];
};

// The guardian's whole state, static so that nothing is allocated after fork.
// A partition's slot is the lowest free one (Guardian::watch_partition picks
// the same): held[i] from its record until a kForget of i; pidfds[i] -1 when
// its descriptor did not arrive.
struct State {
  bool held[kMaxPartitions];
  int pidfds[kMaxPartitions];
  pid_t groups[kMaxPartitions];
  bool kill[kMaxPartitions];
  int partitions;  // slots in use or used: the high-water mark
  char cgroups[kMaxCgroups][kPathMax];
  bool v1[kMaxCgroups];
  bool kill_cgroup[kMaxCgroups];
  int cgroup_count;
  int directory_fds[kMaxDirectories];
  char directories[kMaxDirectories][kPathMax];
  int directory_count;
};
State g_state;

void sleep_ms(int ms) noexcept {
  timespec ts{0, ms * 1000000L};
  while (sys::nanosleep(&ts, &ts) != 0 && errno == EINTR) {
  }
}

// Builds dir + "/" + leaf into out; false when it does not fit.
bool join(char* out, const char* dir, const char* leaf) noexcept {
  const size_t a = std::strlen(dir), b = std::strlen(leaf);
  if (a + 1 + b + 1 > static_cast<size_t>(kPathMax)) return false;
  std::memcpy(out, dir, a);
  out[a] = '/';
  std::memcpy(out + a + 1, leaf, b + 1);
  return true;
}

// False when the file cannot be opened or written.
bool write_text(const char* path, const char* text, size_t length) noexcept {
  const int fd = sys::open(path, O_WRONLY | O_CLOEXEC);
  if (fd < 0) return false;
  ssize_t n;
  while ((n = sys::write(fd, text, length)) < 0 && errno == EINTR) {
  }
  sys::close(fd);
  return n >= 0;
}

// Reads cgroup.procs of dir and calls each(pid text, its length) for every
// line. Returns how many were listed.
template <typename Each>
int for_each_listed(const char* dir, Each each) noexcept {
  char path[kPathMax];
  if (!join(path, dir, "cgroup.procs")) return 0;
  const int fd = sys::open(path, O_RDONLY | O_CLOEXEC);
  if (fd < 0) return 0;
  static char buffer[65536];
  ssize_t n;
  while ((n = sys::file_read(fd, buffer, sizeof buffer - 1)) < 0 && errno == EINTR) {
  }
  sys::close(fd);
  if (n <= 0) return 0;
  buffer[n] = '\0';
  int listed = 0;
  char* line = buffer;
  while (*line != '\0') {
    char* end = std::strchr(line, '\n');
    const size_t length = end ? static_cast<size_t>(end - line) : std::strlen(line);
    if (length > 0) {
      each(line, length);
      ++listed;
    }
    if (end == nullptr) break;
    line = end + 1;
  }
  return listed;
}

// Moves every process of cgroup dir to the parent cgroup.
int move_to_parent(const char* dir) noexcept {
  char parent[kPathMax];
  std::strcpy(parent, dir);
  char* slash = std::strrchr(parent, '/');
  if (slash == nullptr) return 0;
  *slash = '\0';
  char parent_procs[kPathMax];
  if (!join(parent_procs, parent, "cgroup.procs")) return 0;
  return for_each_listed(
      dir, [&](const char* pid, size_t length) { write_text(parent_procs, pid, length); });
}

// True when the v1 freezer.state of dir reads FROZEN.
bool v1_frozen(const char* dir) noexcept {
  char path[kPathMax];
  if (!join(path, dir, "freezer.state")) return false;
  const int fd = sys::open(path, O_RDONLY | O_CLOEXEC);
  if (fd < 0) return false;
  char state[16] = {};
  ssize_t n;
  while ((n = sys::file_read(fd, state, sizeof state - 1)) < 0 && errno == EINTR) {
  }
  sys::close(fd);
  return n >= 6 && std::memcmp(state, "FROZEN", 6) == 0;
}

// Kills every process of cgroup dir (CgroupFreezer::kill_all without
// allocation). v2: cgroup.kill. v1 (or v2 before 5.14): freeze, so that
// nothing inside can fork or exit (its PIDs stay its own), SIGKILL every PID
// listed; the caller thaws.
void kill_cgroup(const char* dir, bool v1) noexcept {
  char path[kPathMax];
  if (!v1 && join(path, dir, "cgroup.kill")) {
    const int fd = sys::open(path, O_WRONLY | O_CLOEXEC);
    if (fd >= 0) {
      while (sys::write(fd, "1", 1) < 0 && errno == EINTR) {
      }
      sys::close(fd);
      return;
    }
  }
  if (!join(path, dir, v1 ? "freezer.state" : "cgroup.freeze")) return;
  // Not there (the scheduler removed it already): nothing to kill.
  if (!write_text(path, v1 ? "FROZEN" : "1", v1 ? 6 : 1)) return;
  for (int attempt = 0; v1 && attempt < 1000 && !v1_frozen(dir); ++attempt) sleep_ms(1);
  for_each_listed(dir, [](const char* text, size_t length) {
    pid_t pid = 0;
    for (size_t i = 0; i < length && text[i] >= '0' && text[i] <= '9'; ++i)
      pid = pid * 10 + (text[i] - '0');
    if (pid > 0) sys::kill(pid, SIGKILL);
  });
}

// One record from the socket, without waiting. 1: a record was taken; 0:
// the end (end-of-file, kFinish, or an error); -1: none queued.
int take_record(int socket_fd) noexcept {
  Message message;
  char control[CMSG_SPACE(sizeof(int))];
  iovec iov{&message, sizeof message};
  msghdr header{};
  header.msg_iov = &iov;
  header.msg_iovlen = 1;
  header.msg_control = control;
  header.msg_controllen = sizeof control;
  ssize_t n;
  while ((n = sys::recvmsg(socket_fd, &header, MSG_CMSG_CLOEXEC | MSG_DONTWAIT)) < 0 &&
         errno == EINTR) {
  }
  if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) return -1;
  if (n <= 0) return 0;  // EOF: the scheduler is gone (or finished)
  int passed_fd = -1;
  for (cmsghdr* c = CMSG_FIRSTHDR(&header); c != nullptr; c = CMSG_NXTHDR(&header, c))
    if (c->cmsg_level == SOL_SOCKET && c->cmsg_type == SCM_RIGHTS)
      std::memcpy(&passed_fd, CMSG_DATA(c), sizeof passed_fd);
  if (n != static_cast<ssize_t>(sizeof message)) {
    if (passed_fd >= 0) sys::close(passed_fd);
    return 1;
  }
  message.path[kPathMax - 1] = '\0';
  if (message.kind == kFinish) {
    if (passed_fd >= 0) sys::close(passed_fd);
    return 0;
  }
  if (message.kind == kDirectory) {
    if (passed_fd >= 0 && g_state.directory_count < kMaxDirectories) {
      g_state.directory_fds[g_state.directory_count] = passed_fd;
      std::memcpy(g_state.directories[g_state.directory_count], message.path, kPathMax);
      ++g_state.directory_count;
    } else if (passed_fd >= 0) {
      sys::close(passed_fd);
    }
    return 1;
  }
  if (message.kind == kForget) {
    if (passed_fd >= 0) sys::close(passed_fd);
    const int slot = message.flag;
    if (slot >= 0 && slot < g_state.partitions && g_state.held[slot]) {
      if (g_state.pidfds[slot] >= 0) sys::close(g_state.pidfds[slot]);
      g_state.pidfds[slot] = -1;
      g_state.held[slot] = false;
    }
    return 1;
  }
  if (message.kind == kPartition) {
    // The lowest free slot, as the scheduler counts them; taken even when
    // the descriptor did not arrive, so that both keep the same numbers.
    int slot = 0;
    while (slot < g_state.partitions && g_state.held[slot]) ++slot;
    if (slot < kMaxPartitions) {
      g_state.held[slot] = true;
      g_state.pidfds[slot] = passed_fd;
      g_state.groups[slot] = message.group;
      g_state.kill[slot] = message.flag != 0;
      if (slot == g_state.partitions) ++g_state.partitions;
    } else if (passed_fd >= 0) {
      sys::close(passed_fd);
    }
  } else if (passed_fd >= 0) {
    sys::close(passed_fd);
  }
  if (message.kind == kCgroup && g_state.cgroup_count < kMaxCgroups) {
    std::memcpy(g_state.cgroups[g_state.cgroup_count], message.path, kPathMax);
    g_state.v1[g_state.cgroup_count] = (message.flag & kCgroupV1) != 0;
    g_state.kill_cgroup[g_state.cgroup_count] = (message.flag & kCgroupKill) != 0;
    ++g_state.cgroup_count;
  }
  return 1;
}

// socket_fd: the guardian's end; scheduler_pidfd: a pidfd of the
// scheduler's process (-1 without pidfds: then end-of-file alone says it is
// gone).
[[noreturn]] void guardian_main(int socket_fd, int scheduler_pidfd) noexcept {
  struct sigaction ignore {};
  ignore.sa_handler = SIG_IGN;
  for (int sig : {SIGINT, SIGTERM, SIGHUP, SIGQUIT, SIGPIPE, SIGTSTP, SIGTTIN, SIGTTOU})
    sys::sigaction(sig, &ignore, nullptr);
  sigset_t none;
  sigemptyset(&none);
  sys::sigprocmask(SIG_SETMASK, &none, nullptr);
  // Keep only the socket as 3 and the scheduler's pidfd as 4 (and stderr
  // for the rare message): both moved above 4 first, so that neither
  // overwrites the other.
  // (The pidfd is copied before the socket lands on 3: a caller with fd 3
  // free opens its own pidfd as 3, and the socket overwrote it, so the
  // guardian polled its socket as the scheduler's pidfd and left at the
  // first record, killing the partitions: every partition/stop_latency row
  // failed with "waitid: No child processes".)
  const int socket_copy = sys::dup_cloexec(socket_fd, 5);
  const int pidfd_copy = scheduler_pidfd >= 0 ? sys::dup_cloexec(scheduler_pidfd, 5) : -1;
  if (socket_copy < 0 || sys::dup2(socket_copy, 3) < 0) ::_exit(3);
  socket_fd = 3;
  if (scheduler_pidfd >= 0)
    scheduler_pidfd = pidfd_copy >= 0 && sys::dup2(pidfd_copy, 4) == 4 ? 4 : -1;
  sys::close_range(scheduler_pidfd >= 0 ? 5u : 4u, ~0u, 0u);
  const int devnull = sys::open("/dev/null", O_RDWR);
  if (devnull >= 0) {
    sys::dup2(devnull, STDIN_FILENO);
    sys::dup2(devnull, STDOUT_FILENO);
    if (devnull > 4) sys::close(devnull);
  }

  // Until the scheduler says it is done (kFinish), its socket ends, or its
  // process exits (the pidfd: a child it forked without exec may hold a
  // copy of its end of the socket, so end-of-file may never come). The
  // records it sent before it died are still queued: taken first.
  for (;;) {
    pollfd fds[2] = {{socket_fd, POLLIN, 0}, {scheduler_pidfd, POLLIN, 0}};
    const int ready = sys::poll(fds, scheduler_pidfd >= 0 ? 2 : 1, -1);
    if (ready < 0 && errno != EINTR) break;
    const bool scheduler_gone = ready > 0 && scheduler_pidfd >= 0 && fds[1].revents != 0;
    int got;
    while ((got = take_record(socket_fd)) == 1) {
    }
    if (got == 0 || scheduler_gone) break;
  }

  // 0. Kill every process of the cgroups whose partitions are to die:
  //    children included, whatever their process group.
  for (int i = 0; i < g_state.cgroup_count; ++i)
    if (g_state.kill_cgroup[i]) kill_cgroup(g_state.cgroups[i], g_state.v1[i]);
  // 1. Thaw.
  for (int i = 0; i < g_state.cgroup_count; ++i) {
    char path[kPathMax];
    if (g_state.v1[i]) {
      if (join(path, g_state.cgroups[i], "freezer.state")) write_text(path, "THAWED", 6);
    } else {
      if (join(path, g_state.cgroups[i], "cgroup.freeze")) write_text(path, "0", 1);
    }
  }
  // 2. Continue, and kill where asked: the partition's whole process group
  //    (its children), then the partition itself. The group's number is the
  //    partition's PID, so it is signalled only while the pidfd says the
  //    partition still exists (alive or not yet reaped): then that number
  //    cannot have been recycled. SIGCONT first so that a stopped partition
  //    left running is really running; SIGKILL works on stopped tasks anyway.
  for (int i = 0; i < g_state.partitions; ++i) {
    if (!g_state.held[i] || g_state.pidfds[i] < 0) continue;
    const bool exists = sys::pidfd_send_signal(g_state.pidfds[i], 0) == 0;
    if (exists && g_state.groups[i] > 0) sys::kill(-g_state.groups[i], SIGCONT);
    sys::pidfd_send_signal(g_state.pidfds[i], SIGCONT);
    if (g_state.kill[i]) {
      if (exists && g_state.groups[i] > 0) sys::kill(-g_state.groups[i], SIGKILL);
      sys::pidfd_send_signal(g_state.pidfds[i], SIGKILL);
    }
  }
  // 3. Remove the cgroups. Killed tasks leave asynchronously: wait up to
  //    ~200 ms for them, then (or at once, for partitions left running) move
  //    whatever is inside to the parent cgroup.
  bool any_left_running = false;
  for (int i = 0; i < g_state.partitions; ++i)
    any_left_running |= g_state.held[i] && !g_state.kill[i];
  for (int i = 0; i < g_state.cgroup_count; ++i) {
    for (int attempt = 0; attempt < 2000; ++attempt) {
      if (sys::rmdir(g_state.cgroups[i]) == 0 || errno == ENOENT || errno != EBUSY) break;
      if (any_left_running || attempt >= 200) move_to_parent(g_state.cgroups[i]);
      sleep_ms(1);
    }
  }
  // 4. Remove the directories (tracing instances). EBUSY while a file of
  //    the instance is still open: the dead scheduler's descriptors close
  //    one by one, the socket perhaps first.
  for (int i = 0; i < g_state.directory_count; ++i) {
    for (int attempt = 0; attempt < 1000; ++attempt) {
      if (sys::unlinkat(g_state.directory_fds[i], g_state.directories[i], AT_REMOVEDIR) == 0 ||
          errno != EBUSY)
        break;
      sleep_ms(1);
    }
    sys::close(g_state.directory_fds[i]);
  }
  ::_exit(0);
}

}  // namespace

Guardian Guardian::start() {
  // The scheduler's own process, for the guardian to watch (see
  // guardian_main). Without pidfds (Linux < 5.3) it watches the socket only.
  sys::UniqueFd self;
  try {
    self = sys::pidfd_open(::getpid());
  } catch (const std::system_error& e) {
    if (e.code().value() != ENOSYS) throw;
  }
  int fds[2];
  if (sys::socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, fds) != 0)
    sys::throw_errno("socketpair for the partition guardian");
  sys::UniqueFd ours(fds[0]), theirs(fds[1]);
  const pid_t pid = sys::fork();
  if (pid < 0) sys::throw_errno("fork the partition guardian");
  if (pid == 0) {
    sys::close(fds[0]);
    // Its own process group: a terminal's Ctrl-C or a test's kill(-pgrp)
    // aimed at the scheduler's group must not take the guardian with it.
    sys::setpgid(0, 0);
    guardian_main(fds[1], self.get());
  }
  Guardian guardian;
  guardian.pid_ = pid;
  guardian.socket_ = std::move(ours);
  try {
    guardian.pidfd_ = sys::pidfd_open(pid);
  } catch (const std::system_error&) {
    // Without pidfds (Linux < 5.3) finish() falls back to waitpid on the
    // child's PID, which is safe: it is our unreaped child.
  }
  return guardian;
}

Guardian::Guardian(Guardian&& other) noexcept
    : socket_(std::move(other.socket_)),
      pidfd_(std::move(other.pidfd_)),
      pid_(std::exchange(other.pid_, -1)),
      held_(std::exchange(other.held_, {})),
      cgroups_(std::exchange(other.cgroups_, 0)),
      directories_(std::exchange(other.directories_, 0)) {}

Guardian& Guardian::operator=(Guardian&& other) noexcept {
  if (this != &other) {
    finish();
    socket_ = std::move(other.socket_);
    pidfd_ = std::move(other.pidfd_);
    pid_ = std::exchange(other.pid_, -1);
    held_ = std::exchange(other.held_, {});
    cgroups_ = std::exchange(other.cgroups_, 0);
    directories_ = std::exchange(other.directories_, 0);
  }
  return *this;
}

Guardian::~Guardian() {
  finish();
}

namespace {

// One record with a descriptor beside it (SCM_RIGHTS): the guardian gets its
// own copy of `fd`. Throws std::system_error naming `what`.
void send_with_descriptor(int socket_fd, const Message& message, int fd, const char* what) {
  char control[CMSG_SPACE(sizeof(int))] = {};
  iovec iov{const_cast<Message*>(&message), sizeof message};
  msghdr header{};
  header.msg_iov = &iov;
  header.msg_iovlen = 1;
  header.msg_control = control;
  header.msg_controllen = sizeof control;
  cmsghdr* c = CMSG_FIRSTHDR(&header);
  c->cmsg_level = SOL_SOCKET;
  c->cmsg_type = SCM_RIGHTS;
  c->cmsg_len = CMSG_LEN(sizeof(int));
  std::memcpy(CMSG_DATA(c), &fd, sizeof fd);
  while (sys::sendmsg(socket_fd, &header, MSG_NOSIGNAL) < 0) {
    if (errno != EINTR) sys::throw_errno(what);
  }
}

}  // namespace

std::size_t Guardian::watch_partition(int pidfd, bool kill_on_exit, pid_t process_group) {
  std::size_t slot = 0;
  while (slot < partition::kMaxPartitions && held_[slot]) ++slot;
  if (slot == partition::kMaxPartitions)
    throw std::system_error(ENOSPC, std::generic_category(),
                            "the partition guardian holds " +
                                std::to_string(partition::kMaxPartitions) + " partitions at most");
  Message message{};
  message.kind = kPartition;
  message.flag = kill_on_exit ? 1 : 0;
  message.group = process_group;
  send_with_descriptor(socket_.get(), message, pidfd, "hand a partition to the guardian");
  held_[slot] = true;
  return slot;
}

bool Guardian::forget_partition(std::size_t slot) noexcept {
  if (slot >= partition::kMaxPartitions || !held_[slot]) return false;
  Message message{};
  message.kind = kForget;
  message.flag = static_cast<int>(slot);
  while (sys::send(socket_.get(), &message, sizeof message, MSG_NOSIGNAL) < 0) {
    if (errno != EINTR) return false;  // it keeps the slot: held, as it thinks
  }
  held_[slot] = false;
  return true;
}

void Guardian::watch_cgroup(const std::string& path, bool v1, bool kill_on_exit) {
  Message message{};
  message.kind = kCgroup;
  message.flag = (v1 ? kCgroupV1 : 0) | (kill_on_exit ? kCgroupKill : 0);
  if (cgroups_ >= kMaxCgroups)
    throw std::system_error(
        ENOSPC, std::generic_category(),
        "the partition guardian holds " + std::to_string(kMaxCgroups) + " cgroups at most");
  if (path.size() >= static_cast<size_t>(kPathMax))
    throw std::system_error(ENAMETOOLONG, std::generic_category(), "cgroup path " + path);
  std::memcpy(message.path, path.c_str(), path.size() + 1);
  while (sys::send(socket_.get(), &message, sizeof message, MSG_NOSIGNAL) < 0) {
    if (errno != EINTR) sys::throw_errno("hand a cgroup to the guardian");
  }
  ++cgroups_;
}

void Guardian::watch_directory(int dir_fd, const std::string& name) {
  if (directories_ >= kMaxDirectories)
    throw std::system_error(
        ENOSPC, std::generic_category(),
        "the partition guardian holds " + std::to_string(kMaxDirectories) + " directories at most");
  Message message{};
  message.kind = kDirectory;
  if (name.empty() || name.size() >= static_cast<size_t>(kPathMax))
    throw std::system_error(ENAMETOOLONG, std::generic_category(), "directory " + name);
  std::memcpy(message.path, name.c_str(), name.size() + 1);
  send_with_descriptor(socket_.get(), message, dir_fd, "hand a directory to the guardian");
  ++directories_;
}

int Guardian::finish() noexcept {
  if (pid_ < 0) return 0;
  // Done: say so, since end-of-file alone may never come (a child forked
  // without exec may hold a copy of our end). A failed send (the guardian
  // is gone) leaves the reap below to tell.
  if (socket_) {
    Message message{};
    message.kind = kFinish;
    while (sys::send(socket_.get(), &message, sizeof message, MSG_NOSIGNAL) < 0 && errno == EINTR) {
    }
  }
  socket_.reset();
  // A failed waitid() falls back to waitpid() on the PID (our unreaped
  // child): never a zombie guardian. nullopt: reaped by someone else.
  const std::optional<siginfo_t> info = sys::reap(pidfd_.get(), pid_);
  pidfd_.reset();
  pid_ = -1;
  if (!info) return -1;
  return info->si_code == CLD_EXITED ? info->si_status : 128 + info->si_status;
}

}  // namespace doorbell::detail
