/* Seed 004's window refresh (atomic counters + a cmpxchg-elected
 * `refreshing` flag), kept to show that spin finds its fault: the winner of
 * the flag never re-checks `begin`, so a CPU that read the old `begin`
 * refreshes again right after another CPU did. The assertion "two refreshes
 * are at least one interval apart" fails; each refresh resets `printed`, so
 * up to 2 * burst pass inside one interval. The test expects spin to report
 * this error (tests/rate_limiter_model.cmake).
 */
#define INTERVAL 2
#define MAXT 4

byte clock = 1;          /* "jiffies"; 0 means "never started" for begin */
byte begin = 0;
bool refreshing = false;
byte printed = 0;
byte last_refresh = 0;   /* ghost */

active proctype Ticker() {
  do
  :: clock < MAXT -> clock++
  :: else -> break
  od
}

active [2] proctype Cpu() {
  byte start, now;
  now = clock;
loop:
  start = begin;                                     /* READ_ONCE(begin) */
  if
  :: start != 0 && now < start + INTERVAL -> goto admit
  :: else -> skip
  fi;
  atomic {                                           /* atomic_cmpxchg(&refreshing, 0, 1) */
    if
    :: refreshing -> goto loop                       /* cpu_relax(); continue */
    :: else -> refreshing = true
    fi
  };
  assert(last_refresh == 0 || now >= last_refresh + INTERVAL);
  last_refresh = now;
  printed = 0;                                       /* atomic64_set(&printed, 0) */
  begin = now;                                       /* WRITE_ONCE(begin, jiffies) */
  refreshing = false;                                /* smp_store_release(&refreshing, 0) */
  goto loop;
admit:
  printed++
}
