/* The Bell protocol (src/wake/bell.cpp) as a Promela model, checked by spin.
 *
 * The word is (rung, waiters); the kernel's futex queue is queued[]. A
 * futex_wait compares the word with the waiter's snapshot and enqueues
 * atomically (the kernel does both under the bucket lock); a futex_wake
 * dequeues one queued waiter, any one. With -DTIMEOUTS futex_wait may also
 * return spuriously or time out; since a waiter can then always leave the
 * queue, that variant checks the final-state assertion (the waiter count
 * stays exact), while the plain variant checks for lost wake-ups.
 *
 * The ringer rings NW times, each time only after the previous ring was
 * taken (so rings never merge), and each of NW waiters takes one ring. A
 * lost wake-up leaves a waiter queued forever with the ringer blocked:
 * spin reports it as an invalid end state. At the end the word must be
 * back to (0, 0).
 */
#define NW 2

bit rung = 0;
byte waiters = 0;
bool queued[NW];
byte taken = 0;
byte finished = 0;

inline futex_wake_one() {
  atomic {
    if
    :: queued[0] -> queued[0] = false
    :: queued[1] -> queued[1] = false
    :: else -> skip
    fi
  }
}

proctype Waiter(byte i) {
  bit v_rung;
  byte v_waiters;
  bit timedout;
retry:
  /* try_wait, then register with a CAS (a failed CAS retries, which the
   * atomic guards model). */
  do
  :: atomic { rung == 1 -> rung = 0; goto took }
  :: atomic { rung == 0 -> waiters++; v_rung = 0; v_waiters = waiters; break }
  od;
sleep:
  timedout = 0;
  /* futex_wait(word, v): compare and enqueue under the bucket lock */
  atomic {
    if
    :: (rung == v_rung && waiters == v_waiters) -> queued[i] = true
    :: else -> skip /* EAGAIN */
    fi
  }
  if
  :: !queued[i] -> skip /* woken, or EAGAIN */
#ifdef TIMEOUTS
  :: atomic { queued[i] -> queued[i] = false } /* spurious wake-up */
  :: atomic { queued[i] -> queued[i] = false; timedout = 1 } /* ETIMEDOUT */
#endif
  fi;
  /* reload, then take the ring and unregister in one CAS, or sleep again,
   * or (timed out) unregister */
  do
  :: atomic { rung == 1 -> rung = 0; waiters--; goto took }
  :: atomic { rung == 0 && !timedout -> v_rung = 0; v_waiters = waiters; goto sleep }
  :: atomic { rung == 0 && timedout -> waiters--; goto retry }
  od;
took:
  taken++;
  finished++
}

active proctype Ringer() {
  byte r = 0;
  bit old_rung;
  byte old_waiters;
  run Waiter(0);
  run Waiter(1);
  do
  :: r < NW ->
     /* ring(): one fetch_or, then FUTEX_WAKE only if it saw waiters */
#ifdef BROKEN
     /* The bug the real code avoids: reading the waiter count apart from
      * setting rung. spin must find the lost wake-up (tests expect failure). */
     old_rung = rung; old_waiters = waiters;
     rung = 1;
#else
     atomic { old_rung = rung; old_waiters = waiters; rung = 1 };
#endif
     /* rung or not: a waiter woken by an earlier ring may have died before
      * taking it (bell.h, "Dead waiters"), so any counted waiter is woken */
     if
     :: (old_waiters > 0) -> futex_wake_one()
     :: else -> skip
     fi;
     r++;
     (taken == r)
  :: r == NW -> break
  od;
  (finished == NW);
  assert(rung == 0 && waiters == 0 && taken == NW)
}
