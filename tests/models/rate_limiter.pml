/* The window-opening protocol of doorbell::RateLimiter (single word).
 *
 * The shared word holds (window, count). A call reads the clock, loads the
 * word, and then either opens its window with one CAS (count = 1), denies
 * without writing (count >= B), or admits with one fetch_add (admitted iff
 * the count it returns is < B). A failed CAS re-decides on the value it
 * returned. The clock advances freely, so callers hold stale timestamps and
 * race with openers. Ghost variables count, per window, what was admitted;
 * they are updated in the same atomic step as the RMW that decides.
 *
 * Checked (assertions, in every interleaving):
 *  - exact: never more than B admissions charged to one window;
 *  - no false suppression: a denial is charged to a window that has admitted
 *    B already;
 *  - windows only move forward (an open never replaces a newer window);
 *  - suppression reports: each denial is reported at most once (reported
 *    never exceeds denied), and after every caller finished, a flush makes
 *    reported == denied;
 *  - no invalid end state: every caller finishes (nothing waits).
 * Wrap-around of the 32-bit window number is not modelled (windows 0..W-1).
 */
#ifndef B
#define B 2      /* burst */
#endif
#define W 3      /* windows 0..W-1 */
#ifndef CALLS
#define CALLS 2  /* calls per process */
#endif
#ifndef NP
#define NP 2     /* processes (the ticker is one more) */
#endif

byte word_window = 0;
byte word_count = 0;          /* (0, 0) = never opened */
byte clock = 0;
byte admitted[W];
byte slot_missed[NP];         /* per-thread miss counters */
byte denied = 0;              /* ghost: all denials */
byte reported = 0;            /* the max of observed totals */
byte reported_sum = 0;        /* ghost: what callers were told */
byte finished = 0;

active proctype Ticker() {
  do
  :: clock < W - 1 -> clock++
  :: break
  od
}

/* take_report(): sum the slots one load at a time, then CAS reported up to
 * the sum. */
inline take_report() {
  total = 0;
  i = 0;
  do
  :: i < NP -> total = total + slot_missed[i]; i++
  :: else -> break
  od;
  do
  :: atomic {
       if
       :: total > reported ->
            reported_sum = reported_sum + (total - reported);
            reported = total;
            assert(reported_sum <= denied);
            break
       :: else -> break
       fi
     }
  od
}

inline deny(w) {
  atomic {
    assert(admitted[w] == B);  /* no false suppression */
    slot_missed[_pid - 1]++;
    denied++
  }
}

active [NP] proctype Caller() {
  byte e, lw, lc, ow, oc, calls, total, i;
  calls = 0;
  do
  :: calls < CALLS ->
       e = clock;                                   /* the caller's timestamp */
       atomic { lw = word_window; lc = word_count }  /* relaxed load */
decide:
       if
       :: (lw == 0 && lc == 0) || e > lw ->         /* must open window e */
            atomic {
              if
              :: word_window == lw && word_count == lc ->   /* CAS succeeds */
                   assert(word_count == 0 || e > word_window);
                   word_window = e;
                   word_count = 1;
                   admitted[e]++;
                   assert(admitted[e] <= B);
                   lc = 255                          /* marks "opened" */
              :: else ->                             /* CAS fails: re-decide */
                   lw = word_window;
                   lc = word_count
              fi
            };
            if
            :: lc == 255 -> take_report()
            :: else -> goto decide
            fi
       :: else ->                                   /* charged to window lw */
            if
            :: lc >= B -> deny(lw)                   /* no shared write */
            :: else ->
                 atomic {                            /* fetch_add(1) */
                   ow = word_window;
                   oc = word_count;
                   word_count++;
                   if
                   :: oc < B -> admitted[ow]++; assert(admitted[ow] <= B)
                   :: else -> skip
                   fi
                 };
                 if
                 :: oc >= B -> deny(ow)
                 :: else -> skip
                 fi
            fi
       fi;
       skip;
       d_step { calls++; e = 0; lw = 0; lc = 0; ow = 0; oc = 0; total = 0; i = 0 }
  :: else -> break
  od;
  atomic { finished++ };
  if
  :: finished == NP ->                              /* the last one flushes */
       take_report();
       assert(reported_sum == denied)
  :: else -> skip
  fi
}
