/* ShardedRateLimiter's lease path (include/doorbell/rate_limiter.h:
 * decide_leased(), refill(), claim_open()), one event per call (n == 1).
 *
 * The shared word holds (window, count): `count` tokens of `window` have
 * been handed out (plus the overshoot of fetch_adds that found it full).
 * Each cell holds a lease (window, tokens left). Callers:
 *  - owners: a thread on its own slot, cell c; it and its signal handler
 *    are the only writers of the cell (x86-64: unlocked cmpxchg);
 *  - a signal handler on owner 0 (-DHANDLER=1), running one whole call
 *    between two steps of owner 0 (Owner0's `provided` clause: owner 0
 *    makes no step while the handler runs; a handler runs between
 *    instructions, never inside one);
 *  - sharers (-DSHARERS=2): threads without a slot, on the sharers' cell of
 *    a slot, with atomic RMWs; they always take the refill path.
 * A Ticker moves the clock over full windows 0..W-1 (roll-over); callers
 * hold stale clock reads. Every Promela step below is one atomic step of
 * the code (a load, a CAS, a fetch_add, or the claim of newest_), and is
 * commented with the code it models. Local computation between two atomic
 * steps is folded into the step that reads its inputs. Not modelled: the
 * 32-bit wrap of window numbers (no wrap here: W is small; kStaleWindows is
 * out of reach; tests/models/rate_limiter_wrap.pml covers the wrap), the
 * miss counters and reports (tests/models/rate_limiter.pml),
 * spurious failures of compare_exchange_weak (a retry with the same value:
 * a stutter that no safety property can see), memory ordering (spin is
 * sequentially consistent; the limiter's decisions are relaxed RMWs on one
 * word and single-writer cells).
 *
 * Checked (assertions, in every interleaving):
 *  - exact: never more than B admitted per window (admitted[]);
 *  - tokens handed out from the shared word: at most B per window
 *    (handed[]);
 *  - a leased token is spent only by a call whose window is the lease's or
 *    older (charged_to(): the call's clock is behind), and the call is
 *    charged to the lease's window: never a token of an older window in a
 *    newer one;
 *  - denials (the header's "bounded under-admission"): a call is denied only
 *    when the shared word has handed out all B tokens of the window it is
 *    charged to (handed == B at the step that decided the denial), none of
 *    them lost yet, and the unspent ones (leased to cells or in a refill's
 *    hands) are at most NCELLS * (L - 1): kSlots * (lease - 1) of the
 *    header, with NCELLS cells for kSlots;
 *  - conservation, at the end: every token handed out was spent once,
 *    sits in a cell, or was dropped (replaced by a newer lease, or
 *    stranded because the cell held a newer one).
 *  - no invalid end state: every call finishes (nothing waits).
 *
 * The first window (issue 25, item 6): -DSTART=s starts the clock at full
 * window s (a fresh limiter whose first caller's window number is large),
 * and -DH=h scales kHalfWrap down to h windows: claim_open() also opens when
 * newest_ is h or more windows behind the caller (in the code: 2^31, the
 * word's 32-bit window number then only looks newer because it wrapped).
 * With START >= H the never-opened word meets callers whose window is half
 * a wrap or more ahead of newest_ (0): exactly the case where an open that
 * does not claim its window in newest_ lets a stale caller reopen an older
 * window. Without -DH the rule is out of reach (H = 255).
 *
 * Known-faulty variants (each must trip its assertion):
 *  -DOPEN_UNCLAIMED: refill() opens the never-opened word (w == 0) without
 *   claim_open(), as before issue 25: newest_ stays 0, a caller one window
 *   stale sees it half a wrap behind and moves the word back, and the
 *   callers of the newer window reopen it: more than B tokens handed out in
 *   one window (with -DSTART=2 -DH=2).
 *  -DSTORE_NO_WINDOW_CHECK: the lease store adds its tokens to whatever
 *   the cell holds, without comparing the windows (a refill of an older
 *   window tops up a newer lease, or a newer one an older lease): tokens
 *   are no longer conserved (the end-state assertion).
 *   (-DNO_CONSERVATION_ASSERT drops that assertion; nothing else fails
 *   then in these small configurations.)
 *  -DTAKE_ANY_WINDOW: refill() spends any non-empty lease, without
 *   charged_to(): a token of an older window is spent by a newer call.
 *  -DFAST_TAKE_ANY_WINDOW: decide_leased()'s inline path takes a token
 *   without comparing the lease's window to the caller's, and charges the
 *   call to the caller's window (its verdict): with B = 2, the second call
 *   of owner 0 spends window 0's leftover in window 1: exactness fails.
 *  -DGRANT_UNCUT: the fetch_add grant is not cut at burst (lease_ tokens
 *   whenever count < burst): more than B tokens handed out in a window.
 *
 * RateLimiter's adaptive lease (issue 31): -DADAPTIVE=D. A refill asks for
 * lease_for(left) = (left / D) clamped to 1..L tokens (in the code D =
 * kAdaptiveLeaseDivisor = 1024, L = kAdaptiveLeaseCap = 4096), where left =
 * B - the count of the word it loaded; the opener asks lease_for(B), cut at
 * B. The fetch_add adds the ask and the grant is cut by the count the
 * fetch_add returned. The slack bound (SLACK) becomes NCELLS * min(L - 1,
 * B / D): the header's cells * min(burst / 1024, 4095).
 *  -DGRANT_FROM_LOAD (with ADAPTIVE): the fault of cutting the grant by the
 *   loaded count instead of the returned one (the ask is sized from the
 *   load, so it is tempting): two refills that loaded the same count both
 *   get their whole ask: more than B tokens handed out in a window.
 */
#ifndef B
#define B 3        /* burst */
#endif
#ifndef L
#define L 2        /* lease */
#endif
#ifndef W
#define W 3        /* full windows 0..W-1 */
#endif
#ifndef CALLS
#define CALLS 2    /* calls per owner and per sharer */
#endif
#ifndef OWNERS
#define OWNERS 2   /* owner threads, cells 0..OWNERS-1 */
#endif
#ifndef SHARERS
#define SHARERS 0  /* 0 or 2 threads on cell OWNERS (a slot's sharers' cell) */
#endif
#ifndef HANDLER
#define HANDLER 0  /* 1: a signal handler on owner 0 makes one call */
#endif
#ifndef START
#define START 0    /* the clock's first full window (W must be larger) */
#endif
#ifndef H
#define H 255      /* kHalfWrap, scaled: out of reach by default */
#endif
#if SHARERS > 0
#define NCELLS (OWNERS + 1)
#else
#define NCELLS OWNERS
#endif
#ifdef ADAPTIVE
#define MIN(a, b) (((a) < (b)) -> (a) : (b))
/* lease_for(left): left / D clamped to 1..L */
#define ASK(left) (((left) / ADAPTIVE < 1) -> 1 : MIN(L, (left) / ADAPTIVE))
#ifndef SLACK
#define SLACK (NCELLS * MIN(L - 1, B / ADAPTIVE))  /* the header's adaptive bound */
#endif
#define G MIN(ASK(B), B)  /* the opener: lease_for(burst_), cut at burst_ */
#else
#define ASK(left) L       /* the fixed lease */
#ifndef SLACK
#define SLACK (NCELLS * (L - 1))  /* the header's bound on unspent tokens at a denial */
#endif
#define G ((L < B) -> L : B)  /* grant of an opener: lease_ < burst_ ? lease_ : burst_ */
#endif
#define NPROC (OWNERS + SHARERS + HANDLER)

byte word_w = 0;         /* word_: window (full; no wrap here) */
byte word_c = 0;         /* word_: count; (0, 0) is the never-opened word */
byte newest = 0;         /* newest_ */
byte cell_w[NCELLS];     /* Cell::lease: window */
byte cell_c[NCELLS];     /* Cell::lease: tokens left */
byte clock = START;
bool in_handler = false; /* owner 0 is stopped while its handler runs */
byte finished = 0;
/* Ghosts, per full window. */
byte admitted[W];        /* calls admitted and charged to the window */
byte handed[W];          /* tokens handed out by the shared word */
byte dropped[W];         /* tokens replaced or stranded */

active proctype Ticker() {
  do
  :: clock < W - 1 -> clock++
  :: break
  od
}

/* An admission charged to window f. */
inline admit(f) {
  admitted[f]++;
  assert(admitted[f] <= B)
}

/* An admission with a token of a lease of window f, by a call whose clock
 * read is e: charged to f, which is e or newer (charged_to()), never older. */
inline spend(f) {
  assert(f >= e);
  admit(f)
}

/* A denial charged to window d: the shared word held (d, >= B) at the step
 * that decided it, when handed[d], admitted[d] and dropped[d] were h, a, x. */
inline deny(d, h, a, x) {
  assert(h == B && x == 0);                /* all of d's tokens handed out, none lost */
  assert(B - a <= SLACK);                  /* unspent: at most kSlots * (lease - 1) */
  result = 2
}

/* w = the word's value (a load, or a failed CAS), with the ghosts of its
 * window at that step. */
inline read_word() {
  ww = word_w;
  wc = word_c;
  sh = handed[ww];
  sa = admitted[ww];
  sd = dropped[ww]
}

/* One allow() of one event (n == 1) on cell c; result: 0 undecided, 1
 * admitted, 2 denied. */
inline call(c, owned) {
  e = clock;                                       /* full = full_window_of(now_ns) */
  if
  :: owned ->                                      /* decide_leased(): the owner's inline path */
       atomic { lw = cell_w[c]; lc = cell_c[c] };  /* l = cell.lease.load() */
       if
#ifdef FAST_TAKE_ANY_WINDOW
       :: lc > 0 ->                                /* the fault: no window_part(l) == window */
#else
       :: lw == e && lc > 0 ->                     /* window_part(l) == window && count_part(l) > 0 */
#endif
            atomic {                               /* owner_take(cell.lease, l): cmpxchg l -> l - 1 */
              if
              :: cell_w[c] == lw && cell_c[c] == lc -> cell_c[c]--; result = 1;
#ifdef FAST_TAKE_ANY_WINDOW
                   admit(e)                        /* verdict(true, 0, window) */
#else
                   spend(lw)                       /* lw == e: verdict(true, 0, window) */
#endif
              :: else -> skip                      /* a handler took one since: refill() */
              fi
            }
       :: else -> skip
       fi;
       if
       :: result == 0 && lc == 0 ->                /* count_part(l) == 0 */
            atomic {                               /* w = word_.load(): the caller's window, full? */
              if
              :: word_w == e && word_c >= B -> deny(e, handed[e], admitted[e], dropped[e])
              :: else -> skip
              fi
            }
       :: else -> skip
       fi
  :: else -> skip                                  /* a sharer: straight to refill() */
  fi;
  if
  :: result == 0 -> refill(c)
  :: else -> skip
  fi
}

/* refill(): spend a lease token charged to the caller's window or a newer
 * one; else lease from the shared word (open the window, or fetch_add). */
inline refill(c) {
  atomic { lw = cell_w[c]; lc = cell_c[c] };       /* l = cell.lease.load() */
  do
#ifdef TAKE_ANY_WINDOW
  :: lc > 0 ->
#else
  :: lc > 0 && lw >= e ->                          /* count_part(l) > 0 && charged_to(window, window_part(l)) */
#endif
       atomic {                                    /* lease_cas(cell, owned, l, l - 1) */
         if
         :: cell_w[c] == lw && cell_c[c] == lc -> cell_c[c]--; spend(lw); result = 1
         :: else -> lw = cell_w[c]; lc = cell_c[c] /* failed: l = the cell's value */
         fi
       };
       if
       :: result == 1 -> break
       :: else -> skip
       fi
  :: else -> break
  od;
  if
  :: result == 0 ->
       atomic { read_word() };                     /* w = word_.load() */
       do
       :: true ->
            /* (w == 0 || window_part(w) != window) && claim_open(full, w) */
            if
#ifdef OPEN_UNCLAIMED
            :: ww == 0 && wc == 0 -> open = true   /* the fault: w == 0 opens unclaimed */
#endif
            :: else ->
                 if
                 :: ww == e && !(ww == 0 && wc == 0) -> open = false
                 :: else ->
                      nw = newest;                 /* claim_open: newest_.load() (after the fence) */
                      /* full < newest: stale, charged to the word's window; else open iff
                       * the word was never opened, its window is older, or newest_ is
                       * half a wrap behind (H) */
                      open = (e >= nw && ((ww == 0 && wc == 0) || e > ww || e - nw >= H));
                      if
                      :: open && nw < e ->
                           atomic {                /* newest_ CAS loop: a max */
                             if
                             :: newest < e -> newest = e
                             :: else -> skip
                             fi
                           }
                      :: else -> skip
                      fi
                 fi
            fi;
            if
            :: open ->
                 atomic {                          /* word_.compare_exchange_weak(w, pack(window, grant)) */
                   if
                   :: word_w == ww && word_c == wc ->
                        word_w = e;
                        word_c = G;
                        handed[e] = handed[e] + G;
                        assert(handed[e] <= B);
                        admit(e);                  /* granted = grant; one token spent now */
                        g = G;
                        gw = e;
                        result = 1
                   :: else -> read_word()          /* failed: w = the word's value; continue */
                   fi
                 }
            :: !open && wc >= B ->                 /* count_part(w) >= burst_: count_miss(1) */
                 deny(ww, sh, sa, sd)
            :: !open && wc < B ->
                 ask = ASK(B - wc);                /* ask = lease_for(burst_ - count_part(w)) */
                 atomic {                          /* old = word_.fetch_add(ask) */
                   gw = word_w;
                   if
#ifdef GRANT_UNCUT
                   :: word_c < B -> g = ask        /* the fault: the range not cut at burst */
#elif defined(GRANT_FROM_LOAD)
                   :: word_c < B -> g = ((B - wc < ask) -> B - wc : ask)   /* the fault: cut by the load */
#else
                   :: word_c < B -> g = ((B - word_c < ask) -> B - word_c : ask)
#endif
                   :: else -> g = 0
                   fi;
                   if
                   :: g > 0 ->                     /* the range [count, count + lease_) cut at burst */
                        handed[gw] = handed[gw] + g;
                        assert(handed[gw] <= B);
                        admit(gw);                 /* charged to the word's window */
                        result = 1
                   :: else -> deny(gw, handed[gw], admitted[gw], dropped[gw])   /* granted == 0 */
                   fi;
                   word_c = word_c + ask
                 }
            fi;
            if
            :: result != 0 -> break
            :: else -> skip
            fi
       od
  :: else -> skip
  fi;
  if
  :: result == 1 && g > 1 ->                       /* keep granted - 1 tokens in the cell */
       atomic { lw = cell_w[c]; lc = cell_c[c] };  /* before_lease_store; l = cell.lease.load() */
       do
       :: true ->
            if
#ifdef STORE_NO_WINDOW_CHECK
            :: lc > 0 -> dw = lw; dc = lc + g - 1  /* adds to any lease: the fault */
#else
            :: lc > 0 && lw == gw -> dw = gw; dc = lc + g - 1   /* a slot-mate leased too: add ours */
#endif
            :: else ->
                 if
                 :: lc == 0 || gw > lw -> dw = gw; dc = g - 1   /* empty or older lease: replace */
                 :: else -> dc = 0                 /* a newer window's lease: ours are stranded */
                 fi
            fi;
            if
            :: dc == 0 -> dropped[gw] = dropped[gw] + g - 1; break
            :: else ->
                 atomic {                          /* lease_cas(cell, owned, l, desired) */
                   if
                   :: cell_w[c] == lw && cell_c[c] == lc ->
                        if
                        :: dw != lw || dc < lc -> dropped[lw] = dropped[lw] + lc   /* replaced */
                        :: else -> skip
                        fi;
                        cell_w[c] = dw;
                        cell_c[c] = dc;
                        dc = 0
                   :: else -> lw = cell_w[c]; lc = cell_c[c]   /* failed: re-decide on l */
                   fi
                 };
                 if
                 :: dc == 0 -> break
                 :: else -> skip
                 fi
            fi
       od
  :: else -> skip
  fi
}

/* At the end (every caller finished): tokens are conserved. */
inline check_end() {
  atomic {
    finished++;
    if
    :: finished == NPROC ->
         i = 0;
         do
         :: i < W ->
              k = admitted[i] + dropped[i];
              j = 0;
              do
              :: j < NCELLS -> if :: cell_w[j] == i -> k = k + cell_c[j] :: else -> skip fi; j++
              :: else -> break
              od;
#ifndef NO_CONSERVATION_ASSERT
              assert(k == handed[i]);
#endif
              i++
         :: else -> break
         od
    :: else -> skip
    fi
  }
}

#define LOCALS byte e, lw, lc, ww, wc, sh, sa, sd, nw, g, gw, dw, dc, ask, result, calls, i, j, k; bool open
#define RESET skip; d_step { e = 0; lw = 0; lc = 0; ww = 0; wc = 0; sh = 0; sa = 0; sd = 0; nw = 0; g = 0; gw = 0; dw = 0; dc = 0; ask = 0; result = 0; open = false; calls++ }

/* Owner 0: makes no step while its signal handler runs. */
active proctype Owner0() provided (!in_handler) {
  LOCALS;
  do
  :: calls < CALLS -> call(0, true); RESET
  :: else -> break
  od;
  check_end()
}

#if OWNERS > 1
active [OWNERS - 1] proctype Owner() {
  LOCALS;
  do
  :: calls < CALLS -> call(_pid - 1, true); RESET   /* _pid: Ticker 0, Owner0 1, Owner 2.. */
  :: else -> break
  od;
  check_end()
}
#endif

#if SHARERS > 0
active [SHARERS] proctype Sharer() {
  LOCALS;
  do
  :: calls < CALLS -> call(OWNERS, false); RESET
  :: else -> break
  od;
  check_end()
}
#endif

#if HANDLER
/* A signal handler on owner 0's thread: one call, on owner 0's cell,
 * between any two of owner 0's steps (or before or after its calls). */
active proctype Handler() {
  LOCALS;
  in_handler = true;
  call(0, true);
  RESET;
  in_handler = false;
  check_end()
}
#endif
