// doorbell inspect, the pure part: parsers of /proc text and the verdict per
// signal, on synthetic processes (no process is read here, except one test
// that reads the test itself).
#include <sched.h>
#include <signal.h>
#include <unistd.h>

#include <gtest/gtest.h>

#include "lab/inspect/analysis.h"
#include "lab/inspect/pending_watch.h"
#include "lab/inspect/render.h"
#include "lab/inspect/snapshot.h"

namespace doorbell::lab::inspect {
namespace {

constexpr std::uint64_t kAll = ~std::uint64_t{0};

ThreadSnapshot thread(pid_t tid, std::string name, bool busy, int policy = SCHED_OTHER,
                      int priority = 0) {
  ThreadSnapshot t;
  t.tid = tid;
  t.name = std::move(name);
  t.state = busy ? 'R' : 'S';
  t.policy = policy;
  t.rt_priority = priority;
  t.cpus_allowed = {0, 1};
  t.cpus_allowed_list = "0-1";
  t.run_share = busy ? 0.6 : 0.0;
  t.wait_share = busy ? 0.3 : 0.0;
  return t;
}

ProcessSnapshot process(std::vector<ThreadSnapshot> threads) {
  ProcessSnapshot p;
  p.pid = threads.front().tid;
  p.name = "target";
  p.threads = std::move(threads);
  p.queued = 1;
  p.queue_limit = 1000;
  p.window_ns = 200000000;
  return p;
}

const SignalVerdict& verdict_for(const InspectReport& r, int signo) {
  for (const auto& v : r.signals)
    if (v.signal == signo) return v;
  ADD_FAILURE() << "signal " << signo << " not in the report";
  static SignalVerdict none;
  return none;
}

void set_caught(ProcessSnapshot& p, int signo) {
  for (auto& t : p.threads) t.caught |= mask_of(signo);
}

TEST(InspectParse, Masks) {
  EXPECT_EQ(parse_mask("0000000000000200"), mask_of(SIGUSR1));
  EXPECT_EQ(parse_mask("fffffffe7ffbfeff"), 0xfffffffe7ffbfeffull);
  EXPECT_EQ(parse_mask(" 0000000000004000\n"), mask_of(SIGTERM));
}

TEST(InspectParse, CpuLists) {
  EXPECT_EQ(parse_cpu_list("0-2,5"), (std::vector<int>{0, 1, 2, 5}));
  EXPECT_EQ(parse_cpu_list("3\n"), (std::vector<int>{3}));
  EXPECT_TRUE(parse_cpu_list("").empty());
}

TEST(InspectParse, StatusAndStat) {
  ThreadSnapshot t;
  parse_task_status(
      "Name:\tworker\nState:\tR (running)\nSigQ:\t0/7823\nSigPnd:\t0000000000000000\n"
      "ShdPnd:\t0000000000000200\nSigBlk:\t0000000000004000\nSigIgn:\t0000000000001000\n"
      "SigCgt:\t0000000000000200\nCpus_allowed_list:\t0-1\n",
      t);
  EXPECT_EQ(t.state, 'R');
  EXPECT_EQ(t.blocked, mask_of(SIGTERM));
  EXPECT_EQ(t.ignored, mask_of(SIGPIPE));
  EXPECT_EQ(t.caught, mask_of(SIGUSR1));
  EXPECT_EQ(t.cpus_allowed, (std::vector<int>{0, 1}));
  // A comm with spaces and a ')' in it; policy SCHED_FIFO (1) at priority 50 on CPU 1.
  const std::string stat =
      "4242 (odd) name) S 1 4242 4242 0 -1 4194368 100 0 0 0 5 6 0 0 -51 0 3 0 100 1000 10 "
      "18446744073709551615 1 1 0 0 0 0 0 0 0 0 0 0 17 1 50 1 0 0 0 0 0 0 0 0 0 0 0";
  ASSERT_TRUE(parse_task_stat(stat, t));
  EXPECT_EQ(t.policy, SCHED_FIFO);
  EXPECT_EQ(t.rt_priority, 50);
  EXPECT_EQ(t.processor, 1);
  EXPECT_FALSE(t.exiting);
  EXPECT_FALSE(parse_task_stat("garbage", t));
}

TEST(InspectParse, LimitsAndFdinfo) {
  EXPECT_EQ(parse_limits_sigpending("Limit  Soft Limit  Hard Limit  Units\n"
                                    "Max pending signals       7823                 7823    "
                                    "             signals   \n"),
            7823);
  EXPECT_EQ(parse_limits_sigpending("Max pending signals  unlimited  unlimited  signals\n"), -1);
  EXPECT_EQ(parse_signalfd_fdinfo("pos:\t0\nflags:\t02004002\nmnt_id:\t15\nino:\t1057\n"
                                  "sigmask:\t0000000000000200\n"),
            mask_of(SIGUSR1));
  EXPECT_FALSE(parse_signalfd_fdinfo("pos:\t0\nflags:\t02\nmnt_id:\t15\n").has_value());
}

// The paper's case: a handler, the main thread and others busy at SCHED_OTHER.
TEST(InspectAnalysis, BusyStockProcessIsAtRisk) {
  auto p = process({thread(100, "main", true), thread(101, "w1", true), thread(102, "w2", true)});
  set_caught(p, SIGUSR1);
  const auto r = analyze(p);
  const auto& v = verdict_for(r, SIGUSR1);
  EXPECT_EQ(v.verdict, Verdict::at_risk) << v.reason;
  EXPECT_EQ(v.kernel_choice, 100);
  EXPECT_EQ(v.risky_thread, 100);
  EXPECT_EQ(v.busy_peers, (std::vector<pid_t>{101, 102}));
  EXPECT_NE(v.reason.find("thread 100"), std::string::npos) << v.reason;
  EXPECT_EQ(v.disposition, "handler");
  EXPECT_NE(r.advice.front().find("SignalReceiver"), std::string::npos);
}

// The kernel skips a main thread that blocks the signal: the first thread
// in list order that does not block it is chosen.
TEST(InspectAnalysis, KernelChoiceSkipsBlockingMainThread) {
  auto p =
      process({thread(100, "main", false), thread(101, "w1", false), thread(102, "w2", false)});
  set_caught(p, SIGUSR1);
  p.threads[0].blocked = mask_of(SIGUSR1);
  const auto report = analyze(p);
  const auto& v = verdict_for(report, SIGUSR1);
  EXPECT_EQ(v.kernel_choice, 101);
  EXPECT_EQ(v.can_take, (std::vector<pid_t>{101, 102}));
  EXPECT_EQ(v.verdict, Verdict::fair_share) << v.reason;
}

// wants_signal(): a thread with a signal pending already that is not on a
// CPU is passed over, and so is an exiting one.
TEST(InspectAnalysis, KernelChoiceSkipsPendingAndExitingThreads) {
  auto p = process(
      {thread(100, "main", false), thread(101, "exiting", false), thread(102, "w2", false)});
  set_caught(p, SIGUSR1);
  p.threads[0].pending = mask_of(SIGUSR2);
  p.threads[1].exiting = true;
  const auto report = analyze(p);
  const auto& v = verdict_for(report, SIGUSR1);
  EXPECT_EQ(v.kernel_choice, 102);
  EXPECT_EQ(v.can_take, (std::vector<pid_t>{100, 102}));
}

TEST(InspectAnalysis, FifoSigwaitReceiverIsBounded) {
  auto p = process({thread(100, "main", true), thread(101, "w1", true),
                    thread(102, "receiver", false, SCHED_FIFO, 50)});
  p.threads[0].blocked = p.threads[1].blocked = mask_of(SIGUSR1);
  p.threads[2].wait_site = "rt_sigtimedwait";
  const auto report = analyze(p);
  const auto& v = verdict_for(report, SIGUSR1);
  EXPECT_EQ(v.verdict, Verdict::bounded) << v.reason;
  EXPECT_EQ(v.sigwait_receiver, 102);
  EXPECT_EQ(v.kernel_choice, 102);
  EXPECT_NE(v.reason.find("SCHED_FIFO 50"), std::string::npos) << v.reason;
}

// A thread in sigtimedwait takes only its wait set (issue 34 item 4): the
// main thread waits for SIGUSR1, SIGINT is ignored, SIGTERM has no handler.
TEST(InspectAnalysis, SigwaitTakesOnlyItsWaitSet) {
  auto p = process({thread(100, "main", false)});
  p.threads[0].wait_site = "rt_sigtimedwait";
  p.threads[0].sigwait_set = mask_of(SIGUSR1);
  p.threads[0].ignored = mask_of(SIGINT);
  const auto report = analyze(p);
  EXPECT_EQ(verdict_for(report, SIGUSR1).sigwait_receiver, 100);
  const auto& term = verdict_for(report, SIGTERM);
  EXPECT_EQ(term.verdict, Verdict::default_action) << term.reason;
  EXPECT_EQ(term.sigwait_receiver, 0);
  EXPECT_EQ(verdict_for(report, SIGINT).verdict, Verdict::ignored)
      << verdict_for(report, SIGINT).reason;
  // The set unknown (no access to its memory): every unblocked signal
  // counts as waited for, as before.
  p.threads[0].sigwait_set.reset();
  EXPECT_EQ(verdict_for(analyze(p), SIGTERM).sigwait_receiver, 100);
}

TEST(InspectAnalysis, SchedOtherReceiverBesideBusyThreadsIsAtRisk) {
  auto p =
      process({thread(100, "main", true), thread(101, "w1", true), thread(102, "receiver", false)});
  p.threads[0].blocked = p.threads[1].blocked = mask_of(SIGUSR1);
  p.threads[2].wait_site = "rt_sigtimedwait";
  const auto report = analyze(p);
  const auto& v = verdict_for(report, SIGUSR1);
  EXPECT_EQ(v.verdict, Verdict::at_risk) << v.reason;
  EXPECT_EQ(v.risky_thread, 102);
}

// Busy threads on other CPUs do not make a pinned receiver wait.
TEST(InspectAnalysis, BusyThreadsOnOtherCpusDoNotCount) {
  auto p = process({thread(100, "main", false), thread(101, "w1", true)});
  set_caught(p, SIGUSR1);
  p.threads[0].cpus_allowed = {0};
  p.threads[1].cpus_allowed = {1};
  p.threads[1].blocked = mask_of(SIGUSR1);
  EXPECT_EQ(verdict_for(analyze(p), SIGUSR1).verdict, Verdict::fair_share);
}

TEST(InspectAnalysis, SignalfdReadByFifoLoopThread) {
  auto p = process({thread(100, "main", true), thread(101, "w1", true),
                    thread(102, "loop", false, SCHED_FIFO, 40)});
  for (auto& t : p.threads) t.blocked = mask_of(SIGUSR1);
  p.threads[2].wait_site = "epoll_wait";
  p.signalfds.push_back({7, mask_of(SIGUSR1)});
  auto v = verdict_for(analyze(p), SIGUSR1);
  EXPECT_EQ(v.verdict, Verdict::bounded) << v.reason;
  EXPECT_EQ(v.signalfds, (std::vector<int>{7}));
  // The loop's thread the only one unblocking it: still bounded.
  p.threads[2].blocked = 0;
  v = verdict_for(analyze(p), SIGUSR1);
  EXPECT_EQ(v.verdict, Verdict::bounded) << v.reason;
  // A busy worker that does not block it either: it can take it first.
  p.threads[1].blocked = 0;
  v = verdict_for(analyze(p), SIGUSR1);
  EXPECT_EQ(v.verdict, Verdict::at_risk) << v.reason;
  EXPECT_EQ(v.risky_thread, 101);
}

TEST(InspectAnalysis, SignalfdWithSchedOtherReaderAmongBusyThreads) {
  auto p = process({thread(100, "main", true), thread(101, "loop", false)});
  for (auto& t : p.threads) t.blocked = mask_of(SIGTERM);
  p.threads[1].wait_site = "epoll_wait";
  p.signalfds.push_back({5, mask_of(SIGTERM)});
  const auto report = analyze(p);
  const auto& v = verdict_for(report, SIGTERM);
  EXPECT_EQ(v.verdict, Verdict::at_risk) << v.reason;
  EXPECT_EQ(v.risky_thread, 101);
}

TEST(InspectAnalysis, IgnoredAndDefaults) {
  auto p = process({thread(100, "main", false)});
  p.threads[0].ignored = mask_of(SIGUSR1) | mask_of(SIGPIPE);
  const auto r = analyze(p);
  EXPECT_EQ(verdict_for(r, SIGUSR1).verdict, Verdict::ignored);
  EXPECT_EQ(verdict_for(r, SIGUSR1).disposition, "ignored");
  EXPECT_EQ(verdict_for(r, SIGPIPE).verdict, Verdict::ignored);
  const auto& term = verdict_for(r, SIGTERM);
  EXPECT_EQ(term.verdict, Verdict::default_action);
  EXPECT_EQ(term.default_action, "terminate");
  EXPECT_EQ(verdict_for(r, SIGQUIT).default_action, "core");
  for (const auto& v : r.signals) {
    EXPECT_NE(v.signal, SIGKILL);
    EXPECT_NE(v.signal, SIGSTOP);
  }
  EXPECT_NE(r.advice.front().find("Nothing to change"), std::string::npos);
}

TEST(InspectAnalysis, BlockedEverywhereWithoutReaderStaysPending) {
  auto p = process({thread(100, "main", false), thread(101, "w", false)});
  for (auto& t : p.threads) t.blocked = mask_of(SIGUSR2);
  set_caught(p, SIGUSR2);
  EXPECT_EQ(verdict_for(analyze(p), SIGUSR2).verdict, Verdict::stays_pending);
}

TEST(InspectAnalysis, QueuePressureGivesDataChannelAdvice) {
  auto p = process({thread(100, "main", false)});
  p.queued = 900;
  p.queue_limit = 1000;
  p.shared_pending = mask_of(SIGRTMIN + 1);
  const auto r = analyze(p);
  bool found = false;
  for (const auto& line : r.advice) found |= line.find("eventfd") != std::string::npos;
  EXPECT_TRUE(found);
  const auto j = render_json(r, nullptr);
  EXPECT_EQ(j["queue"]["queued"], 900);
  EXPECT_EQ(j["queue"]["shared_pending"][0], SIGRTMIN + 1);
}

// Another user's process: status is readable, fdinfo is not. The report
// says the signalfds are unknown instead of claiming there are none.
TEST(InspectAnalysis, UnreadableFdinfoIsSaid) {
  auto p = process({thread(100, "main", false)});
  p.fdinfo_readable = false;
  const auto r = analyze(p);
  EXPECT_NE(render_text(r, nullptr).find("signalfds unknown"), std::string::npos);
  EXPECT_EQ(render_json(r, nullptr)["fdinfo_readable"], false);
}

// PID 1 of a PID namespace: the kernel never runs a default action of
// SIGHUP/SIGTERM/..., whichever namespace sends it; a handled one is normal;
// a blocked one stays queued and is dropped when taken.
TEST(InspectAnalysis, NamespaceInitDiscardsDefaultActions) {
  auto p = process({thread(100, "init", false), thread(101, "w", false)});
  p.namespace_init = true;
  p.namespace_pids = {100, 1};
  set_caught(p, SIGUSR1);
  p.threads[0].blocked = mask_of(SIGQUIT) | mask_of(SIGINT);
  p.threads[1].blocked = mask_of(SIGINT);
  const auto r = analyze(p);
  EXPECT_EQ(verdict_for(r, SIGTERM).verdict, Verdict::discarded) << verdict_for(r, SIGTERM).reason;
  EXPECT_EQ(verdict_for(r, SIGHUP).verdict, Verdict::discarded);
  EXPECT_EQ(verdict_for(r, SIGUSR1).verdict, Verdict::fair_share);
  // Blocked in the main thread, taken by thread 101, which drops it.
  EXPECT_EQ(verdict_for(r, SIGQUIT).verdict, Verdict::discarded) << verdict_for(r, SIGQUIT).reason;
  EXPECT_NE(verdict_for(r, SIGQUIT).reason.find("thread 101"), std::string::npos);
  // Blocked everywhere: stays pending, then dropped.
  EXPECT_EQ(verdict_for(r, SIGINT).verdict, Verdict::stays_pending);
  const auto j = render_json(r, nullptr);
  EXPECT_EQ(j["namespace_init"]["kill_from_inside"], false);
  EXPECT_EQ(j["namespace_init"]["kill_from_ancestor"], true);
  EXPECT_NE(render_text(r, nullptr).find("PID 1 of its PID namespace"), std::string::npos);
  bool advice = false;
  for (const auto& line : r.advice) advice |= line.find("tini") != std::string::npos;
  EXPECT_TRUE(advice);
}

// An orphaned process group (a daemon, a setsid program): SIGTSTP, SIGTTIN
// and SIGTTOU with no handler are discarded, listed, and the advice says why
// in the group's terms, not an init's.
TEST(InspectAnalysis, OrphanedProcessGroupDiscardsJobControlStops) {
  auto p = process({thread(100, "daemon", false)});
  p.process_group = p.session = 100;
  p.orphaned_process_group = true;
  const auto r = analyze(p);
  for (const int signo : {SIGTSTP, SIGTTIN, SIGTTOU})
    EXPECT_EQ(verdict_for(r, signo).verdict, Verdict::discarded) << verdict_for(r, signo).reason;
  EXPECT_EQ(verdict_for(r, SIGTERM).verdict, Verdict::default_action);
  EXPECT_NE(render_text(r, nullptr).find("process group 100 (session 100) is orphaned"),
            std::string::npos);
  EXPECT_EQ(render_json(r, nullptr)["process_group"]["orphaned"], true);
  bool orphan_advice = false;
  for (const auto& line : r.advice) {
    EXPECT_EQ(line.find("init of its PID namespace"), std::string::npos) << line;
    orphan_advice |= line.find("orphaned") != std::string::npos;
  }
  EXPECT_TRUE(orphan_advice);
}

// A stopped process: every signal but SIGCONT waits, a fatal one too; an
// ignored one is still discarded at send.
TEST(InspectAnalysis, StoppedProcessKeepsSignalsPending) {
  auto p = process({thread(100, "main", false), thread(101, "w", false)});
  for (auto& t : p.threads) t.state = 'T';
  set_caught(p, SIGUSR1);
  p.threads[0].ignored = p.threads[1].ignored = mask_of(SIGUSR2);
  const auto r = analyze(p);
  EXPECT_TRUE(r.stopped);
  EXPECT_EQ(verdict_for(r, SIGUSR1).verdict, Verdict::stays_pending);
  EXPECT_EQ(verdict_for(r, SIGTERM).verdict, Verdict::stays_pending);
  EXPECT_EQ(verdict_for(r, SIGUSR2).verdict, Verdict::ignored);
  EXPECT_NE(render_text(r, nullptr).find("stopped (State T)"), std::string::npos);
  EXPECT_EQ(render_json(r, nullptr)["stopped"], true);
}

// SIG_IGN (or a default "ignore") blocked in the main thread: queued, not
// discarded; taken and dropped if another thread does not block it.
TEST(InspectAnalysis, BlockedIgnoredSignalIsQueued) {
  auto p = process({thread(100, "main", false), thread(101, "w", false)});
  for (auto& t : p.threads) {
    t.ignored = mask_of(SIGUSR2) | mask_of(SIGHUP);
    t.blocked = mask_of(SIGUSR2) | mask_of(SIGWINCH);
  }
  p.threads[0].blocked |= mask_of(SIGHUP);
  const auto r = analyze(p);
  EXPECT_EQ(verdict_for(r, SIGUSR2).verdict, Verdict::stays_pending)
      << verdict_for(r, SIGUSR2).reason;
  EXPECT_EQ(verdict_for(r, SIGWINCH).verdict, Verdict::stays_pending);
  EXPECT_EQ(verdict_for(r, SIGHUP).verdict, Verdict::ignored);
  EXPECT_NE(verdict_for(r, SIGHUP).reason.find("thread 101"), std::string::npos);
}

// Threads born in the window are not busy however they look; their CPU use
// together counts as one busy peer when it is high.
TEST(InspectAnalysis, ShortLivedThreadsCountTogether) {
  auto p = process({thread(100, "main", false), thread(101, "new", true)});
  set_caught(p, SIGUSR1);
  p.threads[1].run_share = p.threads[1].wait_share = -1;
  p.threads[1].new_in_window = true;
  p.short_lived_share = 0.1;
  auto r = analyze(p);
  EXPECT_FALSE(r.threads[1].busy);
  EXPECT_EQ(verdict_for(r, SIGUSR1).verdict, Verdict::fair_share);
  p.short_lived_share = 0.9;
  r = analyze(p);
  const auto& v = verdict_for(r, SIGUSR1);
  EXPECT_EQ(v.verdict, Verdict::at_risk) << v.reason;
  EXPECT_NE(v.reason.find("short-lived threads"), std::string::npos) << v.reason;
  EXPECT_NE(v.reason.find("90%"), std::string::npos) << v.reason;
}

TEST(InspectAnalysis, SingularAndPluralInReasons) {
  auto p = process({thread(100, "main", false), thread(101, "w", true)});
  set_caught(p, SIGUSR1);
  p.threads[0].cpus_allowed = {0};
  p.threads[0].cpus_allowed_list = "0";
  p.threads[1].cpus_allowed = {0};
  const auto busy = analyze(p);
  const auto& v = verdict_for(busy, SIGUSR1);
  EXPECT_NE(v.reason.find("shares CPU 0 with 1 busy thread"), std::string::npos) << v.reason;
  p.threads[1].run_share = p.threads[1].wait_share = 0;
  const auto quiet = analyze(p);
  const auto& fair = verdict_for(quiet, SIGUSR1);
  EXPECT_NE(fair.reason.find("(or 1 other thread)"), std::string::npos) << fair.reason;
}

TEST(InspectWatch, PendingRunsAreLowerBounds) {
  PendingWatch watch;
  PendingSnapshot s;
  s.shared = mask_of(SIGUSR1);
  s.threads = {{101, mask_of(SIGUSR2)}};
  watch.observe(s, 0);
  watch.observe(s, 10);
  s.threads = {{101, 0}};
  watch.observe(s, 20);
  s.shared = 0;
  watch.observe(s, 30);
  s.shared = mask_of(SIGUSR1);
  watch.observe(s, 40);
  const auto entries = watch.entries();
  ASSERT_EQ(entries.size(), 2u);
  EXPECT_EQ(entries[0].signal, SIGUSR1);
  EXPECT_EQ(entries[0].tid, 0);
  EXPECT_EQ(entries[0].samples, 4u);
  EXPECT_EQ(entries[0].episodes, 2u);
  EXPECT_EQ(entries[0].longest_ns, 20u);
  EXPECT_TRUE(entries[0].pending_now);
  EXPECT_EQ(entries[1].signal, SIGUSR2);
  EXPECT_EQ(entries[1].tid, 101);
  EXPECT_EQ(entries[1].longest_ns, 10u);
  EXPECT_FALSE(entries[1].pending_now);
  EXPECT_EQ(watch.sample_count(), 5u);
}

// The reader against this very process: the main thread is found, and a
// signal the test blocks shows as blocked.
TEST(InspectRead, ReadsOwnProcess) {
  sigset_t set;
  sigemptyset(&set);
  sigaddset(&set, SIGUSR2);
  ASSERT_EQ(pthread_sigmask(SIG_BLOCK, &set, nullptr), 0);
  const auto p = read_process(getpid());
  ASSERT_NE(p.main_thread(), nullptr);
  EXPECT_TRUE(p.main_thread()->blocks(SIGUSR2));
  EXPECT_EQ(p.threads.front().tid, getpid());
  EXPECT_GT(p.queue_limit, 0);
  EXPECT_THROW(read_process(0), ProcessGone);
  EXPECT_FALSE(p.namespace_pids.empty());
}

TEST(InspectParse, NamespacePids) {
  EXPECT_EQ(parse_namespace_pids("Name:\tx\nNSpid:\t4242\t7\t1\nNSpgid:\t1\n"),
            (std::vector<pid_t>{4242, 7, 1}));
  EXPECT_TRUE(parse_namespace_pids("Name:\tx\n").empty());
}

// Issue 36 item 12: SIG_IGN blocked in the main thread (queued, then taken
// and dropped by another thread) was left out of "Why:", which then said
// nothing of it; an exited main thread (pthread_exit: State Z while the
// others run) was listed like a live one.
TEST(InspectRender, WhyExplainsABlockedIgnoredSignalAndExitedThreadsAreMarked) {
  auto p = process({thread(100, "main", false), thread(101, "w", false)});
  for (auto& t : p.threads) t.ignored = mask_of(SIGUSR2) | mask_of(SIGPIPE);
  p.threads[0].blocked = mask_of(SIGUSR2);
  p.threads[0].state = 'Z';
  const auto r = analyze(p);
  ASSERT_EQ(verdict_for(r, SIGUSR2).verdict, Verdict::ignored);
  const std::string text = render_text(r, nullptr);
  const std::size_t why = text.find("\nWhy:\n");
  ASSERT_NE(why, std::string::npos) << text;
  const std::string explained = text.substr(why, text.find("\nQueue:", why) - why);
  EXPECT_NE(explained.find("SIGUSR2: ignored: SIG_IGN, and the main thread blocks it"),
            std::string::npos)
      << text;
  // Discarded at send: nothing to say beyond its verdict.
  EXPECT_EQ(explained.find("SIGPIPE"), std::string::npos) << text;
  std::size_t main_row = text.find("     100  main");
  ASSERT_NE(main_row, std::string::npos) << text;
  const std::string row = text.substr(main_row, text.find('\n', main_row) - main_row);
  EXPECT_NE(row.find("exited"), std::string::npos) << text;
  main_row = text.find("     101  w");
  ASSERT_NE(main_row, std::string::npos) << text;
  EXPECT_EQ(text.substr(main_row, text.find('\n', main_row) - main_row).find("exited"),
            std::string::npos);
}

}  // namespace
}  // namespace doorbell::lab::inspect
