/* SPDX-License-Identifier: MIT */
/*
 * mutex.pml: a Promela model of pl_mutex_t's PARKED/LOCKED protocol
 * (lib/mutex.c) on the parking lot (lib/parkinglot.c), checked with spin
 * for mutual exclusion and for the absence of lost wakeups.
 * `make check-model` runs model/check.sh, which verifies this model and
 * its BROKEN variants; see model/README for how to run it by hand.
 *
 * WHAT IS MODELLED, step by step as in the C code:
 *   - the lock byte, LOCKED (1) and PARKED (2), and every CAS, fetch_and
 *     and store that lib/mutex.c makes on it;
 *   - the lock: fast CAS 0 -> LOCKED; slow path test-and-test-and-set,
 *     an optional spin (one reload while PARKED is clear), then pl_park
 *     with lock_validate and lock_timed_out; a woken thread with
 *     PL_UNPARK_TOKEN_HANDOFF owns the lock, any other result retries,
 *     PL_PARK_TIMED_OUT gives up (a timed lock returning ETIMEDOUT);
 *   - the unlock: fast CAS LOCKED -> 0 (pl_mutex_unlock, and the first
 *     step of pl_mutex_unlock_fair); the slow path's loop (PARKED clear:
 *     CAS to 0; PARKED set: pl_unpark_one with unlock_callback);
 *   - pl_park: the bucket lock, validate-then-enqueue under it (FIFO
 *     queue), the wake word (0 not queued or woken, 1 queued, 2 about to
 *     sleep), sleep_on's CAS 1 -> 2 and FUTEX_WAIT (sleeps only while the
 *     word is 2, atomically, as the kernel does), FUTEX_WAKE, and the
 *     timeout path: relock the bucket; if still queued, unlink, word to
 *     0, timed_out(was_last) and PL_PARK_TIMED_OUT; if a waker dequeued
 *     it meanwhile, wait untimed for the word to reach 0 and take the
 *     token;
 *   - pl_unpark_one: under the bucket lock, dequeue the oldest waiter,
 *     have_more, be_fair (nondeterministic: the fairness timer may or may
 *     not have expired), the callback (hand-off keeps LOCKED, and sets
 *     the byte to LOCKED if nobody is left; otherwise the byte becomes
 *     PARKED or 0), the token; then, after the bucket unlock, the
 *     exchange of the wake word to 0 and FUTEX_WAKE if it was 2.  A
 *     FUTEX_WAKE that lands after the waiter returned and parked again
 *     is a spurious wakeup there, as in the C code, and is harmless.
 *   Each of N threads (3) locks and unlocks ITER times (2); each attempt
 *   is untimed or timed and each unlock fair or not, nondeterministically,
 *   and a timed park may time out whenever it is asleep.
 *
 * WHAT IS ABSTRACTED:
 *   - one mutex, one bucket, one table: no hashing, no growth, no other
 *     addresses in the bucket; the bucket lock is an atomic test-and-set
 *     that blocks (its own futex protocol is not modelled);
 *   - lock_validate's CAS loop is one atomic step (the loop's effect at
 *     its linearization point: fail if LOCKED is clear, else set PARKED);
 *   - memory is sequentially consistent (spin's model): the acquire and
 *     release orderings of the C code are not checked here (ThreadSanitizer
 *     and tools/torture cover them);
 *   - spinning is at most one reload; pl_mutex_trylock (a CAS that never
 *     parks) and the condition variable's requeue onto the mutex are not
 *     modelled; statistics, clocks and the fairness deadline are not
 *     modelled (be_fair is a free choice);
 *   - spurious futex wakeups other than late FUTEX_WAKEs, and EINTR, are
 *     not modelled (sleep_on loops on the word either way).
 *
 * PROPERTIES (all checked in one safety run, with invalid end states):
 *   1. mutual exclusion: assert(incs == 1) inside the critical section,
 *      and a monitor process asserting incs <= 1 in every state;
 *   2. the invariant of lib/mutex.c: while a thread is queued, PARKED is
 *      set (the same monitor; compile with -DNO_INVARIANT to leave it
 *      out);
 *   3. no lost wakeup: every thread ends, so a thread left asleep in the
 *      queue while the others have finished (the lock is then free) is an
 *      invalid end state, which spin reports; and when all have finished,
 *      the byte is 0 (no stale PARKED bit), the queue is empty and the
 *      bucket lock free.
 *   Result (spin 6.5.2, -DSAFETY -DCOLLAPSE): no errors.
 *
 * BROKEN VARIANTS: -DBROKEN=n removes one step of the protocol; check.sh
 * requires spin to find a counterexample for each (checked without the
 * invariant monitor, so that what spin finds is the lost wakeup itself):
 *   BROKEN=1  unlock_callback stores 0 even when have_more (forgets the
 *             waiters still queued): spin finds an invalid end state, a
 *             thread asleep in the queue forever with the lock free.
 *   BROKEN=2  lock_validate parks without setting PARKED: the holder's
 *             fast unlock CAS 01 -> 00 succeeds and wakes nobody; spin
 *             finds an invalid end state (a lost wakeup).
 *   BROKEN=3  lock_timed_out clears PARKED even when was_last is false:
 *             spin finds an invalid end state (a lost wakeup).
 *   BROKEN=4  the hand-off clears LOCKED like a plain unlock (the woken
 *             thread owns a lock that reads as free): with -DNO_MISUSE_CHECK
 *             (so that spin reports the breach itself, not its consequence,
 *             an unlock of a free mutex), spin finds "assertion violated
 *             (incs==1)": two threads in the critical section.
 */

#ifndef N
#define N 3
#endif
#ifndef ITER
#define ITER 2
#endif
#ifndef BROKEN
#define BROKEN 0
#endif

#define LOCKED 1
#define PARKED 2

#define TOKEN_DEFAULT 0
#define TOKEN_HANDOFF 1

/* pl_park results */
#define R_UNPARKED 0
#define R_INVALID 1
#define R_TIMED_OUT 2

byte state = 0;      /* the mutex's byte */
bool blk = false;    /* the bucket lock */
byte q[N];           /* the queue of the mutex's address, oldest first */
byte qlen = 0;
bool queued[N];      /* struct waiter.queued */
byte futex[N];       /* struct waiter.futex, the wake word */
bool asleep[N];      /* in FUTEX_WAIT in the kernel */
bit token[N];        /* struct waiter.unpark_token */
byte incs = 0;       /* threads in the critical section */
byte finished = 0;   /* threads that have done their ITER rounds */

inline bucket_lock()
{
	atomic { !blk -> blk = true }
}

inline bucket_unlock()
{
	blk = false
}

/* unlink_waiter: remove thread x from the queue, keeping the order.
 * (Used inside d_step: the bucket lock is held.) */
inline q_remove(x)
{
	k = 0;
	do
	:: k < qlen && q[k] != x -> k++
	:: else -> break
	od;
	assert(k < qlen);
	do
	:: k + 1 < qlen -> q[k] = q[k + 1]; k++
	:: else -> break
	od;
	q[qlen - 1] = 0;
	qlen--;
	k = 0
}

proctype Thread(byte me)
{
	byte round = 0;
	bool got, may_time_out, ok, handoff, have_more;
	byte s, res, k, w, old;

	do
	:: round == ITER -> break
	:: round < ITER ->
		round++;

		/* ---- pl_mutex_lock / pl_mutex_timedlock ---- */
		atomic {
			if
			:: state == 0 -> state = LOCKED; got = true
			:: else -> got = false
			fi
		};
		if
		:: got -> goto acquired
		:: else
		fi;
		/* lock_slow */
		s = state;
retry:
		if
		:: !(s & LOCKED) ->
			atomic {
				if
				:: state == s -> state = s | LOCKED; got = true
				:: else -> s = state
				fi
			};
			if
			:: got -> goto acquired
			:: else -> goto retry
			fi
		:: else
		fi;
		/* (Spinning, which only delays and reloads, is left out.) */

		/* ---- pl_park(m, lock_validate, NULL, lock_timed_out) ---- */
		assert(futex[me] == 0 && !queued[me]);
		bucket_lock();
		atomic {
			/* lock_validate */
			if
			:: !(state & LOCKED) -> res = R_INVALID
			:: else ->
#if BROKEN == 2
				skip;
#else
				state = state | PARKED;
#endif
				res = R_UNPARKED
			fi
		};
		if
		:: res == R_INVALID ->
			bucket_unlock();
			goto parked
		:: else
		fi;
		d_step {
			token[me] = TOKEN_DEFAULT;
			queued[me] = true;
			futex[me] = 1;
			q[qlen] = me;
			qlen++
		};
		bucket_unlock();
		/* A timed call (pl_mutex_timedlock) may time out while it
		 * sleeps; an untimed one never does. */
		if
		:: may_time_out = true
		:: may_time_out = false
		fi;
sleep:
		/* sleep_on: until the wake word is 0, or the deadline */
		if
		:: futex[me] == 0 -> goto woken
		:: else
		fi;
		atomic {
			if
			:: futex[me] == 1 -> futex[me] = 2
			:: else
			fi
		};
		/* FUTEX_WAIT(word, 2): sleeps only if the word is still 2 */
		atomic {
			if
			:: futex[me] == 2 -> asleep[me] = true
			:: else
			fi
		};
		if
		:: !asleep[me] -> goto sleep
		:: atomic { may_time_out && asleep[me] -> asleep[me] = false };
			goto timed_out
		fi;
timed_out:
		/* lock_waiter_bucket */
		bucket_lock();
		if
		:: queued[me] ->
			d_step {
				q_remove(me);
				queued[me] = false;
				futex[me] = 0
			};
			/* lock_timed_out(was_last) */
#if BROKEN == 3
			state = state & ~PARKED;
#else
			if
			:: qlen == 0 -> state = state & ~PARKED
			:: else
			fi;
#endif
			bucket_unlock();
			res = R_TIMED_OUT;
			may_time_out = false;
			goto parked
		:: else ->
			/* dequeued by a waker that has not set the word yet */
			bucket_unlock();
			may_time_out = false;
			goto sleep
		fi;
woken:
		res = R_UNPARKED;
		may_time_out = false;
parked:
		/* back in lock_slow */
		if
		:: res == R_UNPARKED && token[me] == TOKEN_HANDOFF ->
			token[me] = TOKEN_DEFAULT;
			res = 0;
			goto acquired
		:: res == R_TIMED_OUT ->
			res = 0;
			goto next
		:: else ->
			res = 0;
			s = state;
			goto retry
		fi;

acquired:
		got = false;
		s = 0;
		/* ---- the critical section ---- */
		incs++;
		assert(incs == 1);
		incs--;

		/* ---- pl_mutex_unlock / pl_mutex_unlock_fair: both begin
		 * with the CAS LOCKED -> 0, and differ only in the callback,
		 * where the choice of a hand-off is made. ---- */
		atomic {
			if
			:: state == LOCKED -> state = 0; ok = true
			:: else -> ok = false
			fi
		};
		if
		:: ok -> ok = false; goto unlocked
		:: else
		fi;
		/* pl__mutex_unlock_slow */
		s = state;
uloop:
#ifndef NO_MISUSE_CHECK
		/* pli_fatal: "pl_mutex_unlock: mutex ... is not locked" */
		assert(s & LOCKED);
#endif
		if
		:: s & PARKED
		:: else ->
			atomic {
				if
				:: state == s -> state = 0; ok = true
				:: else -> s = state
				fi
			};
			if
			:: ok -> ok = false; goto unlocked
			:: else -> goto uloop
			fi
		fi;
		/* pl_unpark_one(m, unlock_callback) */
		bucket_lock();
		if
		:: qlen > 0 ->
			d_step {
				w = q[0];
				q_remove(w);
				have_more = qlen > 0
			};
			/* unlock_callback, and release_waiter: hand off when
			 * be_fair (the fairness timer expired) or fair
			 * (pl_mutex_unlock_fair): either may hold, or none. */
			if
			:: handoff = true
			:: handoff = false
			fi;
			if
			:: handoff ->
#if BROKEN == 4
				state = (have_more -> PARKED : 0);
#else
				if
				:: !have_more -> state = LOCKED
				:: else
				fi;
#endif
				token[w] = TOKEN_HANDOFF
			:: else ->
#if BROKEN == 1
				state = 0;
#else
				state = (have_more -> PARKED : 0);
#endif
				token[w] = TOKEN_DEFAULT
			fi;
			queued[w] = false;
			bucket_unlock();
			/* wake(): exchange the word to 0, FUTEX_WAKE if it was 2 */
			atomic { old = futex[w]; futex[w] = 0 };
			if
			:: old == 2 -> asleep[w] = false
			:: else
			fi
		:: else ->
			/* nobody queued: the callback sees unparked == 0 */
			state = 0;
			bucket_unlock()
		fi;
		d_step {
			w = 0; old = 0; have_more = false; handoff = false
		};
unlocked:
		s = 0;
next:
		skip
	od;
	finished++
}

#ifndef NO_INVARIANT
/* Checked in every state: mutual exclusion, and "a queued thread has
 * PARKED above it". */
proctype Invariant()
{
end:
	atomic {
		!(incs <= 1 && (qlen == 0 || (state & PARKED))) ->
			assert(incs <= 1);
			assert(qlen == 0 || (state & PARKED))
	}
}
#endif

init
{
	byte i;
	atomic {
#ifndef NO_INVARIANT
		run Invariant();
#endif
		i = 0;
		do
		:: i < N -> run Thread(i); i++
		:: else -> break
		od
	};
	finished == N;
	/* Everybody is done: the lock is free, with no stale PARKED bit, and
	 * nobody is left in the queue or holding the bucket. */
	assert(state == 0);
	assert(qlen == 0);
	assert(!blk)
}
