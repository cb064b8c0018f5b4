/* The sampling port's publish protocol (src/partition/partition_ports.cpp,
 * SamplingPort::write/read): two versioned slots; the writer fills the slot
 * that is not published (its sequence word odd meanwhile), makes it even,
 * then publishes index and sequence with ONE store; the reader loads the
 * published word, checks the slot's sequence, copies the message word by
 * word, checks the sequence again, and retries (bounded) when it changed.
 *
 * The writer may be killed at any statement (a killer process and
 * `unless`), or just stalled (every interleaving). Checked:
 *   - a read that succeeds returns the whole message it names, never a
 *     torn one (both words equal the published sequence);
 *   - reads never go back in time;
 *   - after the writer is killed (or done), a read succeeds whenever a
 *     message was ever published: the port is neither torn nor locked.
 * Broken variants (must fail):
 *   -DNO_RECHECK  the reader skips the check after its copy: torn reads.
 *   -DSAME_SLOT   the writer rewrites the published slot in place: a writer
 *                 killed mid-write leaves no readable message (locked). */
#ifndef W
#define W 3        /* messages written */
#endif
#ifndef READS
#define READS 2    /* reads while the writer runs */
#endif
#define TRIES 3

byte published_seq = 0;   /* the published word: sequence and index */
bit published_idx = 0;
byte slot_seq[2];
byte data0[2];
byte data1[2];
bool killed = false;
bool writer_done = false;

active proctype writer() {
  byte n = 1;
  bit idx;
  {
    do
    :: n <= W ->
#ifdef SAME_SLOT
       idx = published_idx;
#else
       if
       :: published_seq == 0 -> idx = 0
       :: else -> idx = 1 - published_idx
       fi;
#endif
       slot_seq[idx] = 2 * n - 1;
       data0[idx] = n;
       data1[idx] = n;
       slot_seq[idx] = 2 * n;
       atomic { published_seq = n; published_idx = idx };
       n++
    :: else -> break
    od;
    writer_done = true
  } unless { killed }
}

active proctype killer() {
  if
  :: killed = true
  :: skip
  fi
}

/* One read: ok when it returned a message. */
inline read_once(ok) {
  tries = 0;
  ok = false;
  do
  :: tries >= TRIES -> break
  :: else ->
     atomic { s = published_seq; i = published_idx };
     if
     :: s == 0 -> break
     :: else
     fi;
     if
     :: slot_seq[i] != 2 * s -> tries++
     :: else ->
        d0 = data0[i];
        d1 = data1[i];
#ifdef NO_RECHECK
        ok = true;
        break
#else
        if
        :: slot_seq[i] != 2 * s -> tries++
        :: else -> ok = true; break
        fi
#endif
     fi
  od;
  if
  :: ok ->
     assert(d0 == s && d1 == s);   /* the whole message, not torn */
     assert(s >= last);            /* never older than a read before */
     last = s
  :: else
  fi
}

active proctype reader() {
  byte s, d0, d1, last = 0, tries, r = 0;
  bit i;
  bool ok;
  do
  :: r < READS -> read_once(ok); r++
  :: else -> break
  od;
  (killed || writer_done);
  read_once(ok);
  assert(ok || published_seq == 0)   /* not locked after the writer's end */
}
