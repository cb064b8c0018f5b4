/* allow(n) of doorbell::RateLimiter (include/doorbell/rate_limiter.h,
 * decide()): callers asking for n = 2 and n = 1 at once, over rolling
 * windows. ShardedRateLimiter runs the same code for n > 1 (only n == 1
 * takes its lease path, tests/models/rate_limiter_lease.pml).
 *
 * The shared word holds (window, count). A call loads it, and then: opens
 * its window with one CAS (count = n when n fits in burst, else 0), denies
 * without writing (count >= burst or n > burst - count), admits one event
 * with one fetch_add (admitted iff the count it returns is < burst), or
 * admits n > 1 with a CAS w -> w + n that retries on the value a failed CAS
 * returns (lock-free: it fails only when someone else changed the word).
 * claim_open() and newest_ as in the code (no wrap here:
 * tests/models/rate_limiter_wrap.pml covers it). Each Promela step is one
 * atomic step of the code, commented with it; local computation is folded
 * into the step that reads its inputs. The clock runs over windows 0..W-1.
 *
 * Checked (assertions, in every interleaving):
 *  - exact: never more than B events admitted per window (admitted[] counts
 *    events: n per admitted call);
 *  - no false suppression: a call for n is denied only when fewer than n
 *    were left in the window it is charged to at the step that read the
 *    word value it decided on (a load, a failed CAS, or the fetch_add);
 *  - no invalid end state: every call finishes.
 *
 * Known-faulty variants (each must trip its assertion):
 *  -DADMIT_OVER: the full test is count >= burst only (forgets n): a CAS
 *   for 2 when one is left admits on count + n > burst: exactness fails.
 *  -DDENY_ON_CONTENTION: a failed CAS of n > 1 denies instead of retrying
 *   on the returned value (trylock style): false suppression.
 */
#ifndef B
#define B 3       /* burst */
#endif
#ifndef W
#define W 3       /* full windows 0..W-1 */
#endif
#ifndef CALLS
#define CALLS 2   /* calls per caller */
#endif
#ifndef NP
#define NP 2      /* callers: the first asks for 2 events, the others for 1 */
#endif

byte word_w = 0;  /* word_: window (full; no wrap here) */
byte word_c = 0;  /* word_: count; (0, 0) is the never-opened word */
byte newest = 0;  /* newest_ */
byte clock = 0;
byte admitted[W]; /* ghost: events admitted per window */

active proctype Ticker() {
  do
  :: clock < W - 1 -> clock++
  :: break
  od
}

inline admit(f, k) {
  admitted[f] = admitted[f] + k;
  assert(admitted[f] <= B)
}

/* w = the word's value (a load, or a failed CAS); sa: admitted[] of its
 * window at that step. */
inline read_word() {
  ww = word_w;
  wc = word_c;
  sa = admitted[ww]
}

/* A denial of n decided on a word value read when sa were admitted. */
inline deny() {
  assert(B - sa < n)
}

active [NP] proctype Caller() {
  byte n, e, ww, wc, sa, nw, calls, done;
  bool open;
  n = (_pid == 1 -> 2 : 1);
  do
  :: calls < CALLS ->
       e = clock;                                  /* full = full_window_of(now_ns) */
       atomic { read_word() };                     /* w = word_.load() */
       done = 0;
       do
       :: done == 0 ->
            if
            :: ww != e ->                          /* window_part(w) != window: claim_open(full, w) */
                 nw = newest;                      /* newest_.load() (after the acquire fence) */
                 /* full < newest: stale; open when never opened or the word is older
                  * (full - newest >= kHalfWrap needs 2^31 windows: out of reach) */
                 open = (e >= nw && ((ww == 0 && wc == 0) || e > ww));
                 if
                 :: open && nw < e ->
                      atomic {                     /* newest_ CAS loop: a max */
                        if
                        :: newest < e -> newest = e
                        :: else -> skip
                        fi
                      }
                 :: else -> skip
                 fi
            :: else -> open = false
            fi;
            if
            :: open ->
                 atomic {                          /* word_.compare_exchange_weak(w, pack(window, fits ? n : 0)) */
                   if
                   :: word_w == ww && word_c == wc ->
                        word_w = e;
                        if
                        :: n <= B -> word_c = n; admit(e, n)
                        :: else -> word_c = 0; sa = 0; deny()   /* n > burst: never fits */
                        fi;
                        done = 1
                   :: else -> read_word()          /* failed: continue on the returned value */
                   fi
                 }
#ifdef ADMIT_OVER
            :: !open && wc >= B ->
#else
            :: !open && (wc >= B || n > B - wc) -> /* count >= burst_ || n > burst_ - count */
#endif
                 deny();                           /* count_miss(n): no write to the word */
                 done = 1
#ifdef ADMIT_OVER
            :: !open && wc < B && n == 1 ->
#else
            :: !open && !(wc >= B || n > B - wc) && n == 1 ->
#endif
                 atomic {                          /* old = word_.fetch_add(1) */
                   if
                   :: word_c < B -> admit(word_w, 1)
                   :: else -> sa = admitted[word_w]; deny()
                   fi;
                   word_c++;
                   done = 1
                 }
#ifdef ADMIT_OVER
            :: !open && wc < B && n > 1 ->
#else
            :: !open && !(wc >= B || n > B - wc) && n > 1 ->
#endif
                 atomic {                          /* word_.compare_exchange_weak(w, w + n) */
                   if
                   :: word_w == ww && word_c == wc ->
                        word_c = word_c + n;
                        admit(ww, n);
                        done = 1
                   :: else ->
                        read_word();               /* failed: w = the word's value; retry */
#ifdef DENY_ON_CONTENTION
                        deny();
                        done = 1
#else
                        skip
#endif
                   fi
                 }
            fi
       :: else -> break
       od;
       skip;
       d_step { calls++; e = 0; ww = 0; wc = 0; sa = 0; nw = 0; open = false; done = 0 }
  :: else -> break
  od
}
