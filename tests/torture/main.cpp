// doorbell_torture: see torture.h. Usage:
//
//   doorbell_torture [--seconds N] [--path NAME]... [--seed S] [--round R]
//                    [--wait-ms MS] [--list]
//
// Exit status: 0 when every round of every path passed, 1 when any failed,
// 2 for bad arguments.
#include <signal.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cinttypes>
#include <cstdarg>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <exception>
#include <string>
#include <vector>

#include "tests/torture/torture.h"

namespace doorbell::torture {

void sleep_ns(int64_t ns) {
  if (ns <= 0) return;
  timespec ts{static_cast<time_t>(ns / 1000000000), static_cast<long>(ns % 1000000000)};
  while (nanosleep(&ts, &ts) != 0 && errno == EINTR) {
  }
}

void random_delay(Rng& rng, uint32_t max_spins, uint32_t max_sleep_us) {
  switch (rng.below(4)) {
    case 0:
      break;
    case 1:
      for (uint64_t i = rng.below(max_spins + 1); i > 0; --i) cpu_relax();
      break;
    case 2:
      sched_yield();
      break;
    default:
      sleep_ns(static_cast<int64_t>(rng.below(max_sleep_us + 1)) * 1000);
      break;
  }
}

void record_failure(PathShared* shared, uint64_t round, uint64_t round_seed, const char* what) {
  shared->failures.fetch_add(1);
  const uint32_t index = shared->stored.load();
  if (index >= kMaxStoredFailures) return;
  FailureRecord& r = shared->records[index];
  r.round = round;
  r.round_seed = round_seed;
  r.at_s = static_cast<double>(now_ns() - shared->path_start_ns.load()) / 1e9;
  std::snprintf(r.what, sizeof r.what, "%s", what);
  shared->stored.store(index + 1);
  // Printed at once too, so that a run cut short still shows it.
  std::fprintf(stderr, "torture: FAILURE in round %" PRIu64 ": %s\n", round, what);
}

bool Context::next_round() {
  if (in_round_) end_round();
  if (time_over()) return false;
  round_ = shared_->rounds_done.load();
  round_seed_ = splitmix64(path_seed_ ^ (round_ * 0x9e3779b97f4a7c15ull + 0x632be59bd9b4e019ull));
  rng_ = Rng(round_seed_);
  failed_this_round_ = false;
  shared_->round.store(round_);
  shared_->round_seed.store(round_seed_);
  shared_->phase[0] = '\0';
  shared_->round_deadline_ns.store(now_ns() + 3 * wait_ns_);
  in_round_ = true;
  return true;
}

void Context::end_round() {
  if (!in_round_) return;
  shared_->round_deadline_ns.store(0);
  shared_->rounds_done.store(round_ + 1);
  in_round_ = false;
}

void Context::phase(const char* format, ...) {
  va_list args;
  va_start(args, format);
  std::vsnprintf(shared_->phase, sizeof shared_->phase, format, args);
  va_end(args);
}

void Context::fail(const char* format, ...) {
  char what[240];
  va_list args;
  va_start(args, format);
  std::vsnprintf(what, sizeof what, format, args);
  va_end(args);
  failed_this_round_ = true;
  record_failure(shared_, round_, round_seed_, what);
}

void Context::note(int index, const char* name, uint64_t add) {
  if (index < 0 || index >= kMaxNotes) return;
  if (shared_->note_names[index][0] == '\0')
    std::snprintf(shared_->note_names[index], sizeof shared_->note_names[index], "%s", name);
  shared_->notes[index].fetch_add(add);
}

namespace {

const Path* const kPaths[] = {&kEventLoopPath, &kSignalChannelPath, &kSignalReceiverPath,
                              &kBellRingPath, &kRateLimiterPath};

uint64_t fnv1a(const char* s) {
  uint64_t h = 0xcbf29ce484222325ull;
  for (; *s; ++s) h = (h ^ static_cast<unsigned char>(*s)) * 0x100000001b3ull;
  return h;
}

struct Options {
  double seconds = 60;
  uint64_t seed = 0;
  bool seed_given = false;
  uint64_t first_round = 0;
  int64_t wait_ms = 5000;
  std::vector<const Path*> paths;
};

[[noreturn]] void usage(const char* error) {
  if (error) std::fprintf(stderr, "doorbell_torture: %s\n", error);
  std::fprintf(error ? stderr : stdout,
               "usage: doorbell_torture [--seconds N] [--path NAME]... [--seed S] [--round R]\n"
               "                        [--wait-ms MS] [--list]\n"
               "  --seconds N   total time, shared equally by the paths (default 60)\n"
               "  --path NAME   run this path (repeatable; default: all, see --list)\n"
               "  --seed S      base seed (default: from the clock; printed)\n"
               "  --round R     start every path at round R (to replay a reported round)\n"
               "  --wait-ms MS  the deadline of one wait inside a round (default 5000)\n"
               "  --list        list the paths and exit\n");
  std::exit(error ? 2 : 0);
}

Options parse(int argc, char** argv) {
  Options o;
  for (int i = 1; i < argc; ++i) {
    const std::string arg = argv[i];
    auto value = [&]() -> const char* {
      if (i + 1 >= argc) usage((arg + " needs a value").c_str());
      return argv[++i];
    };
    char* end = nullptr;
    if (arg == "--seconds") {
      const char* v = value();
      o.seconds = std::strtod(v, &end);
      if (*end != '\0' || !(o.seconds > 0)) usage("--seconds: a positive number, please");
    } else if (arg == "--seed") {
      const char* v = value();
      o.seed = std::strtoull(v, &end, 0);
      if (*end != '\0') usage("--seed: a number, please");
      o.seed_given = true;
    } else if (arg == "--round") {
      const char* v = value();
      o.first_round = std::strtoull(v, &end, 0);
      if (*end != '\0') usage("--round: a number, please");
    } else if (arg == "--wait-ms") {
      const char* v = value();
      o.wait_ms = std::strtoll(v, &end, 0);
      if (*end != '\0' || o.wait_ms < 10) usage("--wait-ms: a number >= 10, please");
    } else if (arg == "--path") {
      const std::string name = value();
      const Path* found = nullptr;
      for (const Path* p : kPaths)
        if (name == p->name) found = p;
      if (found == nullptr) usage(("unknown path '" + name + "' (see --list)").c_str());
      o.paths.push_back(found);
    } else if (arg == "--list") {
      for (const Path* p : kPaths) std::printf("%-16s %s\n", p->name, p->summary);
      std::exit(0);
    } else if (arg == "-h" || arg == "--help") {
      usage(nullptr);
    } else {
      usage(("unknown argument '" + arg + "'").c_str());
    }
  }
  if (o.paths.empty()) o.paths.assign(std::begin(kPaths), std::end(kPaths));
  if (!o.seed_given) o.seed = static_cast<uint64_t>(now_ns()) % 1000000007u;
  return o;
}

// The child: rounds until the share is over. Exits 0, or dies.
[[noreturn]] void run_child(const Path& path, PathShared* shared, uint64_t path_seed,
                            int64_t end_ns, int64_t wait_ns) {
  Context ctx(shared, path_seed, end_ns, wait_ns);
  try {
    if (path.setup) path.setup(ctx);
  } catch (const std::exception& e) {
    record_failure(shared, shared->rounds_done.load(), 0,
                   (std::string("setup threw: ") + e.what()).c_str());
    std::fflush(stderr);
    _exit(1);
  }
  while (ctx.next_round()) {
    try {
      path.round(ctx);
    } catch (const std::exception& e) {
      ctx.fail("round threw: %s", e.what());
    }
  }
  ctx.end_round();
  std::fflush(stdout);
  std::fflush(stderr);
  _exit(0);
}

struct PathResult {
  const Path* path;
  PathShared* shared;
  uint64_t path_seed;
  double seconds;
  double share;
  uint64_t first_round;
};

std::string describe_status(int status) {
  char text[120];
  if (WIFSIGNALED(status)) {
    std::snprintf(text, sizeof text, "the path's process died of signal %d (%s)", WTERMSIG(status),
                  strsignal(WTERMSIG(status)));
  } else if (WEXITSTATUS(status) == 66) {
    std::snprintf(text, sizeof text,
                  "the path's process exited 66: a ThreadSanitizer report (printed above)");
  } else {
    std::snprintf(text, sizeof text, "the path's process exited with status %d",
                  WEXITSTATUS(status));
  }
  return text;
}

void run_path(PathResult& r, const Options& o) {
  PathShared* s = r.shared;
  const int64_t wait_ns = o.wait_ms * 1000000;
  const int64_t start = now_ns();
  const int64_t end = start + static_cast<int64_t>(r.share * 1e9);
  s->path_start_ns.store(start);
  s->rounds_done.store(o.first_round);
  std::fflush(stdout);
  std::fflush(stderr);
  while (now_ns() < end) {
    const pid_t pid = fork();
    if (pid < 0) {
      std::perror("doorbell_torture: fork");
      std::exit(1);
    }
    if (pid == 0) run_child(*r.path, s, r.path_seed, end, wait_ns);
    int status = 0;
    bool killed = false;
    for (;;) {
      const pid_t got = waitpid(pid, &status, WNOHANG);
      if (got == pid) break;
      const int64_t now = now_ns();
      const int64_t round_deadline = s->round_deadline_ns.load();
      const bool hung = round_deadline != 0 && now > round_deadline + wait_ns;
      const bool overran = now > end + 4 * wait_ns;
      if (hung || overran) {
        char what[240];
        std::snprintf(what, sizeof what, "round hung (%s) while: %.150s",
                      hung ? "past its deadline" : "past the path's time",
                      s->phase[0] ? s->phase : "(no phase)");
        kill(pid, SIGKILL);
        while (waitpid(pid, &status, 0) < 0 && errno == EINTR) {
        }
        record_failure(s, s->round.load(), s->round_seed.load(), what);
        killed = true;
        break;
      }
      sleep_ns(5000000);
    }
    if (!killed && WIFEXITED(status) && WEXITSTATUS(status) == 0) break;
    if (!killed) {
      // A crash (or a sanitizer report) ends the child: the round in
      // progress, if any, is the one that failed.
      const bool in_round = s->round_deadline_ns.load() != 0;
      std::string what = describe_status(status);
      if (in_round && s->phase[0] != '\0') what += std::string(" while: ") + s->phase;
      record_failure(s, in_round ? s->round.load() : s->rounds_done.load(),
                     in_round ? s->round_seed.load() : 0, what.c_str());
    }
    // Carry on at the next round in a fresh process.
    s->round_deadline_ns.store(0);
    s->rounds_done.store(s->round.load() + 1);
  }
  r.seconds = static_cast<double>(now_ns() - start) / 1e9;
}

}  // namespace
}  // namespace doorbell::torture

int main(int argc, char** argv) {
  using namespace doorbell::torture;
  const Options o = parse(argc, argv);
  const double share = o.seconds / static_cast<double>(o.paths.size());
  std::printf("doorbell_torture: seed %" PRIu64
              ", %.0f s over %zu path(s) (%.1f s each), wait "
              "deadline %" PRId64 " ms\n",
              o.seed, o.seconds, o.paths.size(), share, o.wait_ms);
  std::vector<PathResult> results;
  for (const Path* p : o.paths) {
    void* memory = mmap(nullptr, sizeof(PathShared), PROT_READ | PROT_WRITE,
                        MAP_SHARED | MAP_ANONYMOUS, -1, 0);
    if (memory == MAP_FAILED) {
      std::perror("doorbell_torture: mmap");
      return 1;
    }
    auto* shared = new (memory) PathShared();
    results.push_back({p, shared, splitmix64(o.seed ^ fnv1a(p->name)), 0, share, o.first_round});
  }
  for (PathResult& r : results) {
    std::printf("torture: %s for %.1f s ...\n", r.path->name, r.share);
    std::fflush(stdout);
    run_path(r, o);
  }

  uint64_t total_failures = 0;
  std::printf("\n%-16s %12s %9s %8s  %s\n", "path", "iterations", "failures", "seconds", "notes");
  for (const PathResult& r : results) {
    const PathShared& s = *r.shared;
    std::string notes;
    for (int i = 0; i < kMaxNotes; ++i) {
      if (s.note_names[i][0] == '\0') continue;
      if (!notes.empty()) notes += ", ";
      notes += s.note_names[i];
      notes += "=" + std::to_string(s.notes[i].load());
    }
    std::printf("%-16s %12" PRIu64 " %9" PRIu64 " %8.1f  %s\n", r.path->name,
                s.rounds_done.load() - r.first_round, s.failures.load(), r.seconds, notes.c_str());
    total_failures += s.failures.load();
  }
  for (const PathResult& r : results) {
    const PathShared& s = *r.shared;
    const uint32_t stored = s.stored.load();
    for (uint32_t i = 0; i < stored; ++i) {
      const FailureRecord& f = s.records[i];
      const int seconds = static_cast<int>(f.at_s) + 2;
      std::printf("FAIL %s round %" PRIu64 " (round seed 0x%016" PRIx64
                  ", %.1f s in): %s\n"
                  "  reproduce: doorbell_torture --path %s --seed %" PRIu64
                  " --seconds %d   (or add --round %" PRIu64 " to start at that round)\n",
                  r.path->name, f.round, f.round_seed, f.at_s, f.what, r.path->name, o.seed,
                  seconds, f.round);
    }
    if (s.failures.load() > stored)
      std::printf("  ... and %" PRIu64 " more failures of %s not listed\n",
                  s.failures.load() - stored, r.path->name);
  }
  std::printf("%s: %" PRIu64 " failure(s)\n", total_failures ? "FAILED" : "PASSED", total_failures);
  return total_failures ? 1 : 0;
}
