/* doorbell::RateLimiter's window opening with a wrapping window number and
 * callers that stall after reading the clock (issue 12, item 6).
 *
 * Scaled down: the shared word keeps the window number modulo M (the real
 * word keeps 32 bits: M = 2^32), the clock counts full windows 0..W-1 with
 * W > M, so the word's window number wraps. A caller reads the clock (its
 * full window ef, and e = ef % M), then may stall for any number of windows
 * (the Ticker runs meanwhile) before it loads the word and decides. B = 1.
 *
 * The rule under test (include/doorbell/rate_limiter.h, claim_open()): the
 * limiter also keeps `newest`, the newest full window any caller decided to
 * open, raised (a max) BEFORE the CAS that opens it, in a separate step. A
 * caller whose window differs from the word's opens its own window iff
 *   ef >= newest  and  (word never opened, or e is newer than the word's
 *   window wrap-aware (0 < (e - w) mod M < M/2), or ef - newest >= M/2).
 * The assumptions, enforced on the Ticker (both documented in
 * rate_limiter.h): a call lasts less than M windows from its clock read (or
 * the window of a word it loaded, if older) to its last CAS, and the word's
 * window is never M windows old (an idle
 * limiter; M = 2^32 windows for the real word: 49.7 days at 1 ms, 71 minutes
 * at 1 us). Otherwise the word could hold the very value a call loaded again
 * (ABA: same 32-bit window, same count) and that call's CAS would move it
 * back; spin finds that when they are dropped (-DUNBOUNDED_STALL).
 *
 * -DRAISE_AFTER: `newest` raised after the CAS instead (a first version of
 * the fix): a caller stalled for M/2 windows or more that decides while an
 * opener sits between its CAS and its raise moves the word back; spin must
 * find it.
 *
 * -DOLD_RULE: the code before the fix: open iff the word was never opened
 * or the word's window is not "the caller's or newer by at most S windows"
 * (S = 2^20 there, 1 here). A caller stalled for more than S windows then
 * moves the word back to its old window; the next caller reopens the newer
 * window with a fresh count. spin must find it: first the "windows only
 * move forward" assertion, and with -DNO_FORWARD_ASSERT the exactness
 * assertion (2 admitted in one window of burst 1).
 *
 * The first window (issue 25, item 6): the code's fast test takes the
 * never-opened word (0, 0) for the caller's window when the caller's window
 * number is 0 modulo M (here: full window 4 = M). Such a caller must open it
 * through the rule above (claiming newest) like any other. -DZERO_WORD_UNCLAIMED
 * is the code before the fix: it counted on the zero word without raising
 * newest, so a caller one window stale saw newest half a wrap behind and
 * moved the word back; spin must find it ("windows only move forward").
 *
 * Ghosts: word_full is the full window the word stands for; admitted[] is
 * indexed by full window.
 */
#define B 1
#define M 4      /* window numbers modulo M in the word */
#define H 2      /* half a wrap */
#define S 1      /* OLD_RULE's stale threshold */
#ifndef W
#define W 6      /* full windows 0..W-1 (> M: the word wraps) */
#endif
#ifndef CALLS
#define CALLS 2
#endif
#define NP 2
#define NONE 255

byte word_window = 0;   /* modulo M */
byte word_count = 0;    /* (0, 0) = never opened */
byte word_full = 0;     /* ghost */
byte newest = 0;        /* the limiter's newest opened full window */
byte clock = 0;
byte admitted[W];
byte since[NP];         /* ghost: min(clock read, windows of the words loaded) of a call in flight */

active proctype Ticker() {
  do
#ifdef UNBOUNDED_STALL
  :: clock < W - 1 -> clock++
#else
  :: atomic { (clock < W - 1 && (since[0] == NONE || clock + 1 < since[0] + M) &&
               (since[1] == NONE || clock + 1 < since[1] + M) &&
               ((word_count == 0 && word_full == 0) || clock + 1 < word_full + M)) -> clock++ }
#endif
  :: break
  od
}

inline deny(f) {
  assert(admitted[f] == B)  /* no false suppression: charged to a full window */
}

active [NP] proctype Caller() {
  byte ef, e, lw, lc, lf, ofull, oc, calls, nw;
  bool open;
  since[_pid - 1] = NONE;
  calls = 0;
  do
  :: calls < CALLS ->
       atomic { ef = clock; since[_pid - 1] = ef }  /* the clock read ... */
       e = ef % M;
       skip;                                        /* ... any stall here ... */
       atomic {                                     /* load */
         lw = word_window; lc = word_count; lf = word_full;
         if :: lf < since[_pid - 1] -> since[_pid - 1] = lf :: else -> skip fi
       }
decide:
       if
#ifdef ZERO_WORD_UNCLAIMED
       :: lw == e -> open = false
#else
       :: lw == e && !(lw == 0 && lc == 0) -> open = false
#endif
       :: else ->
#ifdef OLD_RULE
            open = (lw == 0 && lc == 0) || ((lw + M - e) % M > S)
#else
            nw = newest;
            open = (ef >= nw &&
                    ((lw == 0 && lc == 0) || ((e + M - lw) % M > 0 && (e + M - lw) % M < H) ||
                     ef - nw >= H))
#endif
       fi;
       if
       :: open ->
#ifndef RAISE_AFTER
            atomic {                               /* raise newest: a max */
              if
              :: newest < ef -> newest = ef
              :: else -> skip
              fi
            };
#endif
            atomic {
              if
              :: word_window == lw && word_count == lc ->   /* CAS succeeds */
#ifndef NO_FORWARD_ASSERT
                   assert((word_count == 0 && word_full == 0) || ef > word_full);
#endif
                   word_window = e;
                   word_count = 1;
                   word_full = ef;
                   admitted[ef]++;
                   assert(admitted[ef] <= B);
                   lc = NONE                       /* marks "opened" */
              :: else ->                           /* CAS fails: re-decide */
                   lw = word_window;
                   lc = word_count;
                   lf = word_full;
                   if :: lf < since[_pid - 1] -> since[_pid - 1] = lf :: else -> skip fi
              fi
            };
            if
            :: lc == NONE ->
#ifdef RAISE_AFTER
                 atomic {
                   if
                   :: newest < ef -> newest = ef
                   :: else -> skip
                   fi
                 }
#else
                 skip
#endif
            :: else -> goto decide
            fi
       :: else ->                                  /* charged to the word's window */
            if
            :: lc >= B -> deny(lf)
            :: else ->
                 atomic {                          /* fetch_add(1) */
                   if                              /* counting on the zero word: window ef */
                   :: word_count == 0 && word_full == 0 && word_window == 0 -> word_full = ef
                   :: else -> skip
                   fi;
                   ofull = word_full;
                   oc = word_count;
                   word_count++;
                   if
                   :: oc < B -> admitted[ofull]++; assert(admitted[ofull] <= B)
                   :: else -> skip
                   fi
                 };
                 if
                 :: oc >= B -> deny(ofull)
                 :: else -> skip
                 fi
            fi
       fi;
       d_step { since[_pid - 1] = NONE; calls++; ef = 0; e = 0; lw = 0; lc = 0; lf = 0; ofull = 0; oc = 0; nw = 0; open = 0 }
  :: else -> break
  od
}
