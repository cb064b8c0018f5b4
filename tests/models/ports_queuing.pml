/* The queuing port's ring (src/partition/partition_ports.cpp,
 * QueuingPort::send/receive): single producer, single consumer, DEPTH
 * slots; the sender refuses and counts a message when the ring is full,
 * else writes the slot (two words) and then advances the tail; the receiver
 * copies the slot at the head, then advances the head. The sender may be
 * killed at any statement (killer + `unless`); the receiver may be slow
 * (suspended) for any stretch. Checked:
 *   - every message received is whole (both words equal), in order, once;
 *   - sent = received + waiting + refused (nothing silently lost);
 * Broken variant (must fail; tests/ports_model.cmake):
 *   -DTAIL_FIRST  the tail is advanced before the slot is written: the
 *                 receiver (or a kill) sees a message that is not there. */
#ifndef DEPTH
#define DEPTH 2
#endif
#ifndef M
#define M 4          /* messages the sender tries */
#endif

byte tail = 0;
byte head = 0;
byte w0[DEPTH];
byte w1[DEPTH];
byte refused = 0;
byte attempted = 0;   /* sends that reached their decision */
bool killed = false;
bool sender_done = false;

active proctype sender() {
  byte n = 1;
  {
    do
    :: n <= M ->
       if
       :: tail - head >= DEPTH -> refused++
       :: else ->
#ifdef TAIL_FIRST
          tail++;
          w0[(tail - 1) % DEPTH] = n;
          w1[(tail - 1) % DEPTH] = n;
#else
          w0[tail % DEPTH] = n;
          w1[tail % DEPTH] = n;
          tail++;
#endif
       fi;
       n++
    :: else -> break
    od;
    sender_done = true
  } unless { killed }
}

active proctype killer() {
  if
  :: killed = true
  :: skip
  fi
}

active proctype receiver() {
  byte last = 0, got = 0, a, b;
  do
  :: head != tail ->
     a = w0[head % DEPTH];
     b = w1[head % DEPTH];
     assert(a == b && a != 0);     /* whole, and really written */
     assert(a > last);             /* in order, never twice */
     last = a;
     got++;
     head++
  :: (killed || sender_done) && head == tail -> break
  od;
  /* Nothing silently lost: every message the sender reached a decision on
   * was received or refused (a kill may stop one mid-send, unseen). */
  assert(sender_done -> (got + refused == M) : (got + refused <= M))
}
