// ForkMatrix (issue 33): every public type x {use in the child, destroy in
// the child, _exit in the child, exec in the child}, generated from one
// table of types and one of actions.
//
// Each case runs in a fresh process (the "parent"): it makes the object,
// checks that it works, snapshots the parent's state, forks, lets the child
// act, reaps it (with a deadline) and then checks
//   - the child did what the header says: works, refuses clearly (the
//     documented exception), or, where the header says "do not use it in
//     the child", the case is skipped with that sentence (destroying it must
//     still be harmless: the destroy case);
//   - nothing of the parent's was touched: its threads, its children, each
//     descriptor's target, flags and eventfd counter (except state that the
//     header documents as shared with the child, on a use), its cgroup;
//   - the parent's object still works (for the shared-memory types, it also
//     sees what the child did);
//   - exec: no descriptor the object made survives exec (close-on-exec).
// Each case takes well under a second; every wait has a deadline.
#include <fcntl.h>
#include <gtest/gtest.h>
#include <poll.h>
#include <signal.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "doorbell/bell.h"
#include "doorbell/cgroup_freezer.h"
#include "doorbell/child_process.h"
#include "doorbell/event_loop.h"
#include "doorbell/event_notifier.h"
#include "doorbell/partition.h"
#include "doorbell/rate_limiter.h"
#include "doorbell/ring.h"
#include "doorbell/signal_channel.h"
#include "doorbell/signal_receiver.h"
#include "doorbell/thread_broadcast.h"
#include "doorbell/timer.h"
#include "sys/proc.h"
#include "tests/signal_test_support.h"
#include "tests/support/cgroup_probe.h"
#include "tests/support/files.h"
#include "tests/support/schedules.h"
#include "tests/support/threads.h"

namespace doorbell {
namespace {

namespace fs = std::filesystem;
using namespace std::chrono_literals;

enum class Action { use, destroy, exit, exec };

const char* action_name(Action action) {
  switch (action) {
    case Action::use:
      return "UseInChild";
    case Action::destroy:
      return "DestroyInChild";
    case Action::exit:
      return "ExitInChild";
    case Action::exec:
      return "ExecInChild";
  }
  return "?";
}

// One object of a public type, as a case holds it. "" means fine; anything
// else says what went wrong.
class Subject {
 public:
  virtual ~Subject() = default;
  // In the parent: the object works (before the fork and after the child).
  virtual std::string works() = 0;
  // In the parent, before the fork, when works() may run only once (a
  // Scheduler's run()): defaults to works().
  virtual std::string works_before_fork() { return works(); }
  // In the child: uses the object as its header allows, and checks that it
  // works or refuses as the header says.
  virtual std::string use_in_child() = 0;
  // In the parent after a use in the child: what the child did is seen
  // (a Bell rung, a record in a Ring).
  virtual std::string after_child_use() { return ""; }
  // Destroys the object (in the child).
  virtual void destroy() = 0;
  // A use in the child changes state the header documents as shared with
  // the parent (the object's descriptors are then left out of the check).
  virtual bool shares_state_with_child() const { return false; }
};

// A row of the type table: how to make the subject, and, for types whose
// header says not to use them in a child, that sentence.
struct TypeRow {
  const char* name;
  std::function<std::unique_ptr<Subject>()> make;
  const char* use_documented_unusable = nullptr;
  // Returns a reason to skip the whole row here (no freezer), or "".
  std::function<std::string()> requires_ = nullptr;
};

// Waits (bounded) until pred() holds.
template <typename Pred>
bool eventually(Pred pred, std::chrono::milliseconds limit = 5s) {
  const auto deadline = std::chrono::steady_clock::now() + limit;
  while (!pred()) {
    if (std::chrono::steady_clock::now() > deadline) return false;
    std::this_thread::sleep_for(200us);
  }
  return true;
}

// --- the subjects ----------------------------------------------------------

class ChannelSubject : public Subject {
 public:
  explicit ChannelSubject(SignalMechanism mechanism) : mechanism_(mechanism) {
    if (mechanism == SignalMechanism::signalfd) block_signals_before_threads({SIGUSR1});
    SignalChannel::Options options;
    options.mechanism = mechanism;
    channel_.emplace(std::initializer_list<int>{SIGUSR1}, options);
  }
  std::string works() override {
    if (::kill(::getpid(), SIGUSR1) != 0) return "kill";
    const auto event = channel_->receive(5s);
    if (!event || event->signal != SIGUSR1) return "the channel did not deliver SIGUSR1";
    return "";
  }
  std::string use_in_child() override {
    try {
      (void)channel_->try_receive();
      return "try_receive() in the child did not throw ForkedChannelError";
    } catch (const ForkedChannelError&) {
    }
    if (mechanism_ == SignalMechanism::handler) {
      struct sigaction now {};
      ::sigaction(SIGUSR1, nullptr, &now);
      if ((now.sa_flags & SA_SIGINFO) != 0 || now.sa_handler != SIG_DFL)
        return "the child kept the channel's handler on SIGUSR1";
    }
    return "";
  }
  void destroy() override { channel_.reset(); }

 private:
  SignalMechanism mechanism_;
  std::optional<SignalChannel> channel_;
};

// The receiver thread was seen asleep at least once in 20 looks over about
// 2 s: a spinning thread is always running or runnable.
bool seen_asleep(pid_t tid) {
  for (int look = 0; look < 20; ++look) {
    const auto state = sys::read_thread_signal_state(::getpid(), tid);
    if (state && state->state == 'S') return true;
    std::this_thread::sleep_for(100ms);
  }
  return false;
}

class ReceiverSubject : public Subject {
 public:
  explicit ReceiverSubject(SignalReceiver::Method method) {
    (void)block_signals_in_this_thread({SIGUSR1});
    SignalReceiver::Options options;
    options.method = method;
    options.warn_on_stderr = false;
    receiver_ = std::make_unique<SignalReceiver>(
        std::vector<int>{SIGUSR1}, [this](const siginfo_t&) { count_.fetch_add(1); }, options);
  }
  std::string works() override {
    const int before = count_.load();
    if (::kill(::getpid(), SIGUSR1) != 0) return "kill";
    if (!eventually([&] { return count_.load() > before; })) return "SIGUSR1 was not received";
    if (!seen_asleep(receiver_->placement().tid)) return "the receiver thread spins";
    return "";
  }
  std::string use_in_child() override {
    // Inert in the child (signal_receiver.h, "Fork"): stop() sends nothing.
    (void)receiver_->received();
    receiver_->stop();
    return "";
  }
  void destroy() override { receiver_.reset(); }

 private:
  std::atomic<int> count_{0};
  std::unique_ptr<SignalReceiver> receiver_;
};

class BroadcasterSubject : public Subject {
 public:
  BroadcasterSubject() : target_(ChildProcess::spawn({"sleep", "30"})) {
    broadcaster_ = std::make_unique<ThreadBroadcaster>(target_.pid());
  }
  std::string works() override {
    const BroadcastResult r = broadcaster_->send_plain(SIGCONT);
    if (r.threads_reached < 1 || r.process_exited) return "the broadcast reached no thread";
    if (target_.try_wait()) return "the target is gone";
    return "";
  }
  std::string use_in_child() override {
    const BroadcastResult r = broadcaster_->send_plain(SIGCONT);
    return r.threads_reached >= 1 ? "" : "a broadcast from the child reached no thread";
  }
  void destroy() override { broadcaster_.reset(); }

 private:
  ChildProcess target_;
  std::unique_ptr<ThreadBroadcaster> broadcaster_;
};

// A MAP_SHARED page, unmapped by the destructor.
class SharedPage {
 public:
  explicit SharedPage(std::size_t bytes) : bytes_(bytes) {
    memory_ = ::mmap(nullptr, bytes, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
    if (memory_ == MAP_FAILED) throw std::runtime_error("mmap");
  }
  ~SharedPage() { unmap(); }
  void unmap() {
    if (memory_ != nullptr) ::munmap(memory_, bytes_);
    memory_ = nullptr;
  }
  void* get() const { return memory_; }

 private:
  std::size_t bytes_;
  void* memory_ = nullptr;
};

class BellSubject : public Subject {
 public:
  BellSubject() : page_(4096), bell_(Bell::create_at(page_.get())) {}
  std::string works() override {
    bell_->ring();
    return bell_->wait_for(1s) ? "" : "a ring was not seen";
  }
  std::string use_in_child() override {
    bell_->ring();
    return "";
  }
  std::string after_child_use() override {
    return bell_->try_wait() ? "" : "the child's ring did not reach the parent";
  }
  void destroy() override { page_.unmap(); }  // the child's view; a Bell has no resources
  bool shares_state_with_child() const override { return true; }

 private:
  SharedPage page_;
  Bell* bell_;
};

class RingSubject : public Subject {
 public:
  RingSubject()
      : page_(Ring::bytes_needed(8, 64)),
        ring_(Ring::create(page_.get(), Ring::bytes_needed(8, 64), 8, 64)) {}
  std::string works() override {
    if (ring_.try_push("parent", 6) != Ring::Status::ok) return "try_push";
    char buffer[64];
    const auto r = ring_.try_pop(buffer, sizeof buffer);
    if (r.status != Ring::Status::ok || std::string(buffer, r.size) != "parent") return "try_pop";
    return "";
  }
  std::string use_in_child() override {
    return ring_.try_push("child", 5) == Ring::Status::ok ? "" : "try_push in the child";
  }
  std::string after_child_use() override {
    char buffer[64];
    const auto r = ring_.pop(buffer, sizeof buffer, 1s);
    if (r.status != Ring::Status::ok || std::string(buffer, r.size) != "child")
      return "the child's record did not reach the parent";
    return "";
  }
  void destroy() override { page_.unmap(); }
  bool shares_state_with_child() const override { return true; }

 private:
  SharedPage page_;
  Ring ring_;
};

class EventLoopSubject : public Subject {
 public:
  EventLoopSubject() {
    int fds[2];
    if (::pipe2(fds, O_CLOEXEC | O_NONBLOCK) != 0) throw std::runtime_error("pipe2");
    read_ = fds[0];
    write_ = fds[1];
    loop_ = std::make_unique<EventLoop>();
    loop_->add(read_, EventLoop::kReadable, [this](uint32_t) {
      char c;
      while (::read(read_, &c, 1) > 0) ++calls_;
    });
    loop_->add_timer(1h, 1h, [](uint64_t) {});
  }
  ~EventLoopSubject() override {
    loop_.reset();
    ::close(read_);
    ::close(write_);
  }
  std::string works() override {
    const int before = calls_;
    if (::write(write_, "x", 1) != 1) return "write";
    loop_->run_once(5s);
    return calls_ > before ? "" : "the loop did not dispatch the readable pipe";
  }
  std::string use_in_child() override { return "not used"; }
  void destroy() override { loop_.reset(); }

 private:
  int read_ = -1, write_ = -1;
  int calls_ = 0;
  std::unique_ptr<EventLoop> loop_;
};

class NotifierSubject : public Subject {
 public:
  NotifierSubject() : notifier_(std::make_unique<EventNotifier>()) {}
  std::string works() override {
    notifier_->notify();
    return notifier_->wait(5000) ? "" : "a notification was not seen";
  }
  std::string use_in_child() override { return "not used"; }
  void destroy() override { notifier_.reset(); }

 private:
  std::unique_ptr<EventNotifier> notifier_;
};

class TimerSubject : public Subject {
 public:
  TimerSubject() : timer_(std::make_unique<Timer>()) {}
  std::string works() override {
    timer_->arm_once(1ms);
    return timer_->wait() >= 1 ? "" : "the timer did not expire";
  }
  std::string use_in_child() override { return "not used"; }
  void destroy() override { timer_.reset(); }

 private:
  std::unique_ptr<Timer> timer_;
};

class ChildProcessSubject : public Subject {
 public:
  ChildProcessSubject() : child_(ChildProcess::spawn({"sleep", "30"})) {}
  std::string works() override {
    if (!child_ || !child_->send_signal(SIGCONT)) return "the child is gone";
    if (child_->try_wait()) return "the child has exited";
    return "";
  }
  std::string use_in_child() override {
    // Only the parent can reap it (child_process.h, "Fork"): refused.
    try {
      (void)child_->try_wait();
      return "try_wait() in a forked child did not refuse";
    } catch (const std::logic_error&) {
      return "";
    }
  }
  void destroy() override { child_.reset(); }

 private:
  std::optional<ChildProcess> child_;
};

std::string require_v2_freezer() {
  std::string why;
  return test::cgroup2_freezer_usable(&why) ? "" : "cgroup v2 freezer: " + why;
}

class FreezerSubject : public Subject {
 public:
  FreezerSubject()
      : freezer_(std::make_unique<CgroupFreezer>(
            CgroupFreezer::create("doorbell-fork-matrix-" + std::to_string(::getpid())))),
        path_(freezer_->path()) {}
  ~FreezerSubject() override {
    if (fs::exists(path_)) test::remove_cgroups_with_prefix(fs::path(path_).filename().string());
  }
  std::string works() override {
    if (!fs::is_directory(path_)) return "the cgroup " + path_ + " is gone";
    if (freezer_->freeze() != 0 || freezer_->thaw() != 0) return "freeze/thaw failed";
    return "";
  }
  std::string use_in_child() override { return "not used"; }
  void destroy() override { freezer_.reset(); }

 private:
  std::unique_ptr<CgroupFreezer> freezer_;
  std::string path_;
};

partition::Schedule waiting_schedule() {
  return test::one_pausing_partition();
}

std::string run_one_frame(partition::Scheduler& scheduler) {
  partition::RunOptions options;
  options.frames = 1;
  options.fifo_priority = 0;
  const partition::RunReport report = scheduler.run(options);
  if (report.frames != 1) return "run() ran " + std::to_string(report.frames) + " frames";
  if (!report.exits.empty()) return "a partition exited: " + report.exits[0].reason;
  return "";
}

class SchedulerSubject : public Subject {
 public:
  SchedulerSubject() : scheduler_(std::make_unique<partition::Scheduler>(waiting_schedule())) {}
  std::string works_before_fork() override { return ""; }  // run() once only
  std::string works() override { return run_one_frame(*scheduler_); }
  std::string use_in_child() override {
    // A run of its own in the child (partition.h, "Fork").
    return run_one_frame(*scheduler_);
  }
  void destroy() override { scheduler_.reset(); }

 private:
  std::unique_ptr<partition::Scheduler> scheduler_;
};

class RateLimiterSubject : public Subject {
 public:
  RateLimiterSubject() : limiter_(std::make_unique<RateLimiter>(1ms, 2)) {}
  std::string works() override {
    now_ += 10'000'000;  // a fresh window each time
    if (!limiter_->allow_at(now_) || !limiter_->allow_at(now_)) return "the burst was refused";
    if (limiter_->allow_at(now_)) return "a third event within the burst of 2 was allowed";
    return "";
  }
  std::string use_in_child() override {
    // A copy with the same counts (rate_limiter.h, "Lifetime, fork").
    return works();
  }
  void destroy() override { limiter_.reset(); }

 private:
  uint64_t now_ = 1'000'000'000;
  std::unique_ptr<RateLimiter> limiter_;
};

const std::vector<TypeRow>& type_table() {
  static const std::vector<TypeRow> rows = {
      {"SignalChannelSignalfd",
       [] { return std::make_unique<ChannelSubject>(SignalMechanism::signalfd); }},
      {"SignalChannelHandler",
       [] { return std::make_unique<ChannelSubject>(SignalMechanism::handler); }},
      {"SignalReceiverSigwaitinfo",
       [] { return std::make_unique<ReceiverSubject>(SignalReceiver::Method::sigwaitinfo); }},
      {"SignalReceiverSignalfd",
       [] { return std::make_unique<ReceiverSubject>(SignalReceiver::Method::signalfd); }},
      {"ThreadBroadcaster", [] { return std::make_unique<BroadcasterSubject>(); }},
      {"BellShared", [] { return std::make_unique<BellSubject>(); }},
      {"RingShared", [] { return std::make_unique<RingSubject>(); }},
      {"EventLoop", [] { return std::make_unique<EventLoopSubject>(); },
       "event_loop.h: the child inherits the epoll fd, which still refers to the parent's "
       "interest list; do not use the loop in the child"},
      {"EventNotifier", [] { return std::make_unique<NotifierSubject>(); },
       "event_notifier.h: the child shares the eventfd with the parent: do not use the notifier "
       "in both"},
      {"Timer", [] { return std::make_unique<TimerSubject>(); },
       "timer.h: the child shares the timerfd with the parent; use it in one process only"},
      {"ChildProcess", [] { return std::make_unique<ChildProcessSubject>(); }},
      {"CgroupFreezer", [] { return std::make_unique<FreezerSubject>(); },
       "cgroup_freezer.h: after fork the child must not use it", require_v2_freezer},
      {"Scheduler", [] { return std::make_unique<SchedulerSubject>(); }},
      {"RateLimiter", [] { return std::make_unique<RateLimiterSubject>(); }},
  };
  return rows;
}

// --- the parent's state ------------------------------------------------------

std::set<int> open_fds() {
  std::set<int> fds;
  for (const auto& entry : fs::directory_iterator("/proc/self/fd")) {
    try {
      fds.insert(std::stoi(entry.path().filename().string()));
    } catch (...) {
    }
  }
  return fds;
}

// fd -> its target, flags and eventfd counter. `shared` fds: target only.
std::map<int, std::string> descriptor_state(const std::set<int>& shared) {
  std::map<int, std::string> state;
  for (const int fd : open_fds()) {
    std::error_code error;
    const fs::path target = fs::read_symlink("/proc/self/fd/" + std::to_string(fd), error);
    if (error) continue;  // the directory listing's own fd
    std::string text = target.string();
    if (shared.count(fd) == 0) {
      std::istringstream info(test::slurp("/proc/self/fdinfo/" + std::to_string(fd)));
      for (std::string line; std::getline(info, line);)
        if (line.rfind("flags:", 0) == 0 || line.rfind("eventfd-count:", 0) == 0)
          text += " | " + line;
    }
    state[fd] = text;
  }
  return state;
}

struct ParentState {
  std::set<pid_t> threads;
  std::vector<int> children;
  std::map<int, std::string> descriptors;
  std::string cgroup;
};

ParentState snapshot(const std::set<int>& shared) {
  ParentState s;
  s.threads = test::thread_ids();
  s.children = test::children_of(::getpid());
  std::sort(s.children.begin(), s.children.end());
  s.descriptors = descriptor_state(shared);
  s.cgroup = test::slurp("/proc/self/cgroup");
  return s;
}

// harness: the case's own report pipe, closed on purpose meanwhile.
std::string compare(const ParentState& before, const ParentState& after,
                    const std::set<int>& harness) {
  std::string problems;
  auto add = [&](const std::string& p) { problems += (problems.empty() ? "" : "; ") + p; };
  if (after.threads != before.threads) add("the parent's threads changed");
  if (after.children != before.children) add("the parent's children changed");
  for (const auto& [fd, text] : before.descriptors) {
    if (harness.count(fd) != 0) continue;
    const auto it = after.descriptors.find(fd);
    if (it == after.descriptors.end())
      add("fd " + std::to_string(fd) + " (" + text + ") closed");
    else if (it->second != text)
      add("fd " + std::to_string(fd) + " changed: " + text + " -> " + it->second);
  }
  if (after.cgroup != before.cgroup) add("the parent's cgroup changed");
  return problems;
}

// --- one case ------------------------------------------------------------------

// In the child: the action; its exit status says whether it went as the
// header says (0), and `report` (a pipe) gets the reason otherwise.
[[noreturn]] void child_side(Subject& subject, Action action, const std::set<int>& own_fds,
                             int report) {
  std::string result;
  try {
    switch (action) {
      case Action::use:
        result = subject.use_in_child();
        break;
      case Action::destroy:
        subject.destroy();
        break;
      case Action::exit:
        break;
      case Action::exec: {
        std::string script = "for fd in";
        for (const int fd : own_fds) script += " " + std::to_string(fd);
        script += "; do [ -e /proc/self/fd/$fd ] && { echo \"fd $fd survived exec\" >&" +
                  std::to_string(report) + "; exit 1; }; done; exit 0";
        // The report pipe must survive exec for the script's message.
        ::fcntl(report, F_SETFD, 0);
        ::execl("/bin/sh", "sh", "-c", script.c_str(), static_cast<char*>(nullptr));
        result = std::string("exec: ") + std::strerror(errno);
        break;
      }
    }
  } catch (const std::exception& e) {
    result = std::string("threw: ") + e.what();
  }
  if (!result.empty()) (void)!::write(report, result.data(), result.size());
  ::_exit(result.empty() ? 0 : 1);
}

// The whole case, in a fresh process; "" when it passed.
std::string run_case(const TypeRow& row, Action action) {
  const std::set<int> fds_before = open_fds();
  // First: the signalfd subjects block their signals before any thread.
  std::unique_ptr<Subject> subject = row.make();
  std::set<int> own_fds;
  for (const int fd : open_fds())
    if (fds_before.count(fd) == 0) own_fds.insert(fd);
  test::start_runtime_threads();
  if (const std::string why = subject->works_before_fork(); !why.empty())
    return "before the fork: " + why;
  const bool shared = action == Action::use && subject->shares_state_with_child();
  int report[2];
  if (::pipe2(report, O_CLOEXEC) != 0) return "pipe2";
  const ParentState before = snapshot(shared ? own_fds : std::set<int>{});
  const pid_t child = ::fork();
  if (child < 0) return "fork";
  if (child == 0) {
    ::close(report[0]);
    child_side(*subject, action, own_fds, report[1]);
  }
  ::close(report[1]);
  int status = 0;
  const auto deadline = std::chrono::steady_clock::now() + 20s;
  bool hung = false;
  while (::waitpid(child, &status, WNOHANG) != child) {
    if (std::chrono::steady_clock::now() > deadline) {
      hung = true;
      ::kill(child, SIGKILL);
      ::waitpid(child, &status, 0);
      break;
    }
    std::this_thread::sleep_for(1ms);
  }
  std::string said;
  char buffer[512];
  ssize_t n;
  while ((n = ::read(report[0], buffer, sizeof buffer)) > 0) said.append(buffer, n);
  ::close(report[0]);
  std::string problems;
  auto add = [&](const std::string& p) { problems += (problems.empty() ? "" : "; ") + p; };
  if (hung) add("the child hung (killed after 20 s)");
  if (!WIFEXITED(status) || WEXITSTATUS(status) != 0)
    add("child: " + testing::describe_wait_status(status) + (said.empty() ? "" : ": " + said));
  ParentState after = snapshot(shared ? own_fds : std::set<int>{});
  after.threads = test::threads_settled_to(before.threads);
  add(compare(before, after, {report[0], report[1]}));
  if (action == Action::use) add(subject->after_child_use());
  if (const std::string why = subject->works(); !why.empty()) add("afterwards: " + why);
  while (!problems.empty() && problems.back() == ' ') problems.pop_back();
  if (problems.rfind("; ", 0) == 0) problems.erase(0, 2);
  return problems;
}

class ForkMatrix : public ::testing::TestWithParam<std::tuple<std::size_t, Action>> {};

TEST_P(ForkMatrix, ChildDoesWhatTheHeaderSaysAndLeavesTheParentAlone) {
  const TypeRow& row = type_table()[std::get<0>(GetParam())];
  const Action action = std::get<1>(GetParam());
  if (row.requires_) {
    if (const std::string why = row.requires_(); !why.empty()) GTEST_SKIP() << why;
  }
  if (action == Action::use && row.use_documented_unusable != nullptr)
    GTEST_SKIP() << "documented as unusable in a child: " << row.use_documented_unusable;
  // A fresh process per case: signal masks, dispositions and fork hooks
  // start clean. The message comes back through a pipe.
  int message[2];
  ASSERT_EQ(::pipe2(message, O_CLOEXEC), 0);
  const auto outcome = testing::run_in_child_with_deadline(
      [&] {
        ::close(message[0]);
        std::string problems;
        try {
          problems = run_case(row, action);
        } catch (const std::exception& e) {
          problems = std::string("threw: ") + e.what();
        }
        if (!problems.empty()) (void)!::write(message[1], problems.data(), problems.size());
        return problems.empty() ? 0 : 1;
      },
      60s);
  ::close(message[1]);
  std::string problems;
  char buffer[512];
  ssize_t n;
  while ((n = ::read(message[0], buffer, sizeof buffer)) > 0) problems.append(buffer, n);
  ::close(message[0]);
  EXPECT_FALSE(outcome.timed_out) << "the case hung (killed after 60 s)";
  EXPECT_TRUE(WIFEXITED(outcome.status) && WEXITSTATUS(outcome.status) == 0)
      << testing::describe_wait_status(outcome.status) << ": " << problems;
}

std::vector<std::size_t> all_types() {
  std::vector<std::size_t> indexes;
  for (std::size_t i = 0; i < type_table().size(); ++i) indexes.push_back(i);
  return indexes;
}

INSTANTIATE_TEST_SUITE_P(Types, ForkMatrix,
                         ::testing::Combine(::testing::ValuesIn(all_types()),
                                            ::testing::Values(Action::use, Action::destroy,
                                                              Action::exit, Action::exec)),
                         [](const ::testing::TestParamInfo<ForkMatrix::ParamType>& info) {
                           return std::string(type_table()[std::get<0>(info.param)].name) + "_" +
                                  action_name(std::get<1>(info.param));
                         });

}  // namespace
}  // namespace doorbell
