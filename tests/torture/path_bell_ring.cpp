// bell_ring: Bell and Ring across processes (MAP_SHARED memory, fork), with
// one process killed (SIGKILL) at a random moment. The survivors must not
// hang, and a live waiter must not lose a wake-up: every wait below has a
// deadline (a fifth of --wait-ms), and a wait that returns only at its
// deadline although it was rung well before counts as a lost wake-up.
//
// Variants (one per round, by seed):
//  waiter_killed  two processes wait on one Bell; one is killed mid-wait
//                 (spinning, registering or asleep), then the Bell is rung
//                 once: the live waiter must wake. A waiter count left
//                 behind by the dead one is noted (a futile FUTEX_WAKE per
//                 later ring, not a failure).
//  ringer_killed  two processes ping-pong through two Bells; the ringer is
//                 killed mid-ring; then the coordinator rings: the
//                 survivor must wake.
//  ring_producer  a Ring producer is killed mid-push, 1..3 times, and a new
//                 producer attaches and carries on; the consumer must see
//                 every record in order (a record whose bookkeeping the
//                 kill cut may repeat once, at a producer change), intact,
//                 and never sleep a whole wait while records come.
#include <signal.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <cstring>
#include <functional>

#include "doorbell/bell.h"
#include "doorbell/ring.h"
#include "tests/torture/torture.h"

namespace doorbell::torture {
namespace {

struct Control {
  std::atomic<uint32_t> quit;
  std::atomic<uint64_t> acks;
  std::atomic<uint64_t> next_seq;  // ring_producer: the next sequence number to push
  std::atomic<int64_t> elapsed_ns;
};

struct Record {
  uint64_t generation;
  uint64_t seq;
  uint64_t check;
};

uint64_t check_of(uint64_t generation, uint64_t seq) {
  return splitmix64(generation * 1000003 + seq);
}

constexpr std::size_t kMemoryBytes = 1 << 20;
constexpr std::size_t kRingOffset = 4096;

pid_t spawn(const std::function<int()>& body) {
  const pid_t pid = fork();
  if (pid < 0) throw std::runtime_error("fork failed");
  if (pid == 0) _exit(body());
  return pid;
}

// Waits for `pid` until `deadline`; kills it there. Returns whether it ended
// by itself, with its status.
bool reap(pid_t pid, int64_t deadline, int* status) {
  for (;;) {
    const pid_t got = waitpid(pid, status, WNOHANG);
    if (got == pid) return true;
    if (now_ns() >= deadline) {
      kill(pid, SIGKILL);
      while (waitpid(pid, status, 0) < 0 && errno == EINTR) {
      }
      return false;
    }
    sleep_ns(200000);
  }
}

// The exit codes of the survivor processes.
constexpr int kOk = 0;
constexpr int kTimedOut = 2;  // the wait gave up: nothing consumed
constexpr int kLateWake = 3;  // consumed a ring only at its deadline
constexpr int kBadRecord = 4;

const char* exit_meaning(int status) {
  if (!WIFEXITED(status)) return "died of a signal";
  switch (WEXITSTATUS(status)) {
    case kOk:
      return "ok";
    case kTimedOut:
      return "its wait timed out: the ring never came through (lost wake-up)";
    case kLateWake:
      return "woke only at its wait's deadline although rung long before (lost wake-up)";
    default:
      return "unexpected exit status";
  }
}

// The survivors' waits: a fifth of a round's wait (1 s by default). A timely
// wake-up takes micro- to milliseconds; a lost one shows as a wait that
// ends only at its deadline, so a shorter deadline finds it as surely and
// leaves more of the path's time for further rounds.
int64_t survivor_wait_ns(const Context& ctx) {
  return ctx.wait_ns() / 5;
}

// A wait on `bell` that tells a late wake-up from a timely one.
int timed_wait(Bell* bell, int64_t wait_ns, Bell::Spin spin) {
  const int64_t start = now_ns();
  const bool ok = bell->wait_for(std::chrono::nanoseconds(wait_ns), spin);
  const int64_t elapsed = now_ns() - start;
  if (!ok) return kTimedOut;
  return elapsed >= wait_ns ? kLateWake : kOk;
}

void waiter_killed(Context& ctx, char* memory, Control* control) {
  Rng& rng = ctx.rng();
  Bell* bell = Bell::create_at(memory + 128);
  const Bell::Spin victim_spin{static_cast<uint32_t>(rng.chance(2) ? rng.below(20000) : 0)};
  const int64_t wait_ns = survivor_wait_ns(ctx);
  ctx.phase("waiter_killed: forking the waiters");
  const pid_t victim = spawn([&] {
    bell->wait(victim_spin);
    return 0;
  });
  const pid_t live = spawn([&] { return timed_wait(bell, wait_ns, Bell::Spin{}); });
  random_delay(rng, 20000, 2000);
  // Rings before the kill: the victim may take one (it may, it is alive).
  const int early_rings = static_cast<int>(rng.below(3));
  for (int i = 0; i < early_rings; ++i) {
    bell->ring();
    random_delay(rng, 2000, 200);
  }
  kill(victim, SIGKILL);
  int status = 0;
  ctx.phase("waiter_killed: reaping the killed waiter");
  reap(victim, ctx.deadline(), &status);
  const bool victim_killed = WIFSIGNALED(status);
  const bool rung_after_kill = bell->rung();
  const uint32_t waiters_after_kill = bell->waiters();
  bell->ring();  // the live waiter's ring
  ctx.phase("waiter_killed: waiting for the live waiter after the ring");
  if (!reap(live, now_ns() + 2 * wait_ns, &status) || !WIFEXITED(status) ||
      WEXITSTATUS(status) != kOk) {
    ctx.fail(
        "waiter_killed: the live waiter %s (%d ring(s) before the other waiter was %s, "
        "then rung %d with %u waiter(s) counted; victim spin %u)",
        exit_meaning(status), early_rings, victim_killed ? "killed mid-wait" : "done and reaped",
        rung_after_kill, waiters_after_kill, victim_spin.iterations);
    return;
  }
  if (bell->waiters() != 0) ctx.note(0, "stale_waiter_counts");
  (void)control;
}

void ringer_killed(Context& ctx, char* memory, Control* control) {
  Rng& rng = ctx.rng();
  Bell* ping = Bell::create_at(memory + 128);
  Bell* pong = Bell::create_at(memory + 132);
  const int64_t wait_ns = survivor_wait_ns(ctx);
  const Bell::Spin spin{static_cast<uint32_t>(rng.chance(2) ? rng.below(5000) : 0)};
  ctx.phase("ringer_killed: forking");
  const pid_t survivor = spawn([&] {
    for (;;) {
      const int r = timed_wait(ping, wait_ns, spin);
      if (r != kOk) return r;
      if (control->quit.load()) return kOk;
      control->acks.fetch_add(1);
      pong->ring();
    }
  });
  const pid_t ringer = spawn([&]() -> int {
    for (;;) {
      ping->ring();
      pong->wait_for(std::chrono::nanoseconds(wait_ns), spin);
    }
  });
  // Let them ping-pong a while (a random number of exchanges, bounded by a
  // wait), then kill the ringer anywhere in its loop.
  const uint64_t exchanges = 1 + rng.below(300);
  const int64_t start_deadline = ctx.deadline();
  while (control->acks.load() < exchanges && now_ns() < start_deadline) sleep_ns(100000);
  random_delay(rng, 5000, 100);
  kill(ringer, SIGKILL);
  int status = 0;
  ctx.phase("ringer_killed: reaping the ringer");
  reap(ringer, ctx.deadline(), &status);
  control->quit.store(1);
  ping->ring();
  ctx.phase("ringer_killed: waiting for the survivor after the coordinator's ring");
  if (!reap(survivor, now_ns() + 2 * wait_ns, &status) || !WIFEXITED(status) ||
      WEXITSTATUS(status) != kOk) {
    ctx.fail("ringer_killed: the survivor (after %llu ping-pongs, ringer killed) %s",
             static_cast<unsigned long long>(control->acks.load()), exit_meaning(status));
  }
  ctx.note(1, "ping_pongs", control->acks.load());
}

void ring_producer(Context& ctx, char* memory, Control* control) {
  Rng& rng = ctx.rng();
  const uint32_t slots = 2u << rng.below(6);  // 2..64
  Ring ring = Ring::create(memory + kRingOffset, kMemoryBytes - kRingOffset, slots, sizeof(Record));
  const int generations = 2 + static_cast<int>(rng.below(3));  // the last one is not killed
  const uint64_t manager_seed = rng.next();
  const uint64_t wanted = 50 + rng.below(200);  // records of the last generation
  const int64_t wait_ns = survivor_wait_ns(ctx);
  ctx.phase("ring_producer: forking the manager");
  const pid_t manager = spawn([&] {
    Rng r(manager_seed);
    for (int g = 0; g < generations; ++g) {
      const pid_t producer = spawn([&] {
        Ring mine = Ring::attach(memory + kRingOffset, kMemoryBytes - kRingOffset);
        uint64_t seq = control->next_seq.load();
        for (;;) {
          const Record rec{static_cast<uint64_t>(g), seq, check_of(g, seq)};
          const Ring::Status st = mine.push(&rec, sizeof rec, std::chrono::milliseconds(20));
          if (control->quit.load()) return 0;
          if (st != Ring::Status::ok) continue;
          control->next_seq.store(++seq);
        }
      });
      int status = 0;
      if (g + 1 < generations) {
        sleep_ns(static_cast<int64_t>(r.below(3000)) * 1000);
        random_delay(r, 5000, 0);
        kill(producer, SIGKILL);
        reap(producer, now_ns() + wait_ns, &status);
      } else {
        reap(producer, now_ns() + 4 * wait_ns, &status);
      }
    }
    return 0;
  });

  // The consumer: this process.
  int64_t last_generation = 0;
  int64_t last_seq = -1;
  uint64_t last_generation_count = 0;
  uint64_t received = 0;
  while (last_generation_count < wanted) {
    Record rec;
    ctx.phase("ring_producer: pop() #%llu (slots %u, generation %lld)",
              static_cast<unsigned long long>(received), slots,
              static_cast<long long>(last_generation));
    const int64_t start = now_ns();
    const Ring::PopResult got = ring.pop(&rec, sizeof rec, std::chrono::nanoseconds(wait_ns));
    const int64_t elapsed = now_ns() - start;
    if (got.status != Ring::Status::ok || elapsed >= wait_ns) {
      ctx.fail(
          "ring_producer: pop() %s after %lld ms while producers kept pushing (record %llu, "
          "generation %lld of %d, slots %u): lost wake-up",
          got.status == Ring::Status::ok ? "returned a record only at its deadline" : "timed out",
          static_cast<long long>(elapsed / 1000000), static_cast<unsigned long long>(received),
          static_cast<long long>(last_generation), generations, slots);
      break;
    }
    ++received;
    const int64_t g = static_cast<int64_t>(rec.generation);
    const int64_t s = static_cast<int64_t>(rec.seq);
    bool in_order = false;
    if (got.size != sizeof rec || rec.check != check_of(rec.generation, rec.seq)) {
      ctx.fail("ring_producer: record %llu is corrupt (size %zu)",
               static_cast<unsigned long long>(received), got.size);
      break;
    }
    if (g == last_generation) {
      in_order = s == last_seq + 1;
    } else if (g > last_generation) {
      in_order = s == last_seq + 1 || s == last_seq;  // a cut bookkeeping repeats one record
    }
    if (!in_order) {
      ctx.fail(
          "ring_producer: record (generation %lld, seq %lld) after (generation %lld, seq "
          "%lld): out of order, lost or duplicated",
          static_cast<long long>(g), static_cast<long long>(s),
          static_cast<long long>(last_generation), static_cast<long long>(last_seq));
      break;
    }
    if (g != last_generation) last_generation_count = 0;
    last_generation = g;
    last_seq = s;
    if (g == generations - 1) ++last_generation_count;
  }
  control->quit.store(1);
  // Unblock a producer waiting for space.
  Record sink;
  int status = 0;
  ctx.phase("ring_producer: reaping the manager");
  const int64_t deadline = now_ns() + 6 * wait_ns;
  while (waitpid(manager, &status, WNOHANG) == 0) {
    while (ring.try_pop(&sink, sizeof sink).status == Ring::Status::ok) {
    }
    if (now_ns() > deadline) {
      kill(manager, SIGKILL);
      ctx.fail("ring_producer: the manager or last producer did not end after quit");
      waitpid(manager, &status, 0);
      break;
    }
    sleep_ns(500000);
  }
  ctx.note(2, "ring_records", received);
}

void bell_ring_round(Context& ctx) {
  void* mapping =
      mmap(nullptr, kMemoryBytes, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
  if (mapping == MAP_FAILED) throw std::runtime_error("mmap failed");
  struct Unmap {
    void* p;
    ~Unmap() { munmap(p, kMemoryBytes); }
  } unmap{mapping};
  char* memory = static_cast<char*>(mapping);
  auto* control = new (memory) Control();
  switch (ctx.rng().below(3)) {
    case 0:
      waiter_killed(ctx, memory, control);
      break;
    case 1:
      ringer_killed(ctx, memory, control);
      break;
    default:
      ring_producer(ctx, memory, control);
      break;
  }
}

}  // namespace

const Path kBellRingPath{"bell_ring",
                         "Bell and Ring across processes (fork, shared memory), one SIGKILLed "
                         "mid-wait or mid-ring",
                         nullptr, bell_ring_round};

}  // namespace doorbell::torture
