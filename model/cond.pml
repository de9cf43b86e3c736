/* SPDX-License-Identifier: MIT */
/*
 * cond.pml: a Promela model of pl_cond_t (lib/cond.c) with its requeue
 * onto pl_mutex_t (lib/mutex.c), on the parking lot (lib/parkinglot.c),
 * checked with spin.  `make check-model` runs it and its BROKEN variants
 * (model/check.sh); model/README says how to run it by hand.
 *
 * THE PROGRAM MODELLED.  Three threads and two mutexes m1, m2:
 *   A  locks m1 and waits on c, with a deadline that may pass at any
 *      time, until go[1] is set or its wait returns ETIMEDOUT;
 *   B  picks m1 or m2, and a deadline or none, and does the same with
 *      go[m] (so B may use c with another mutex than A, but, as POSIX
 *      requires, only while no thread is inside a wait with the other);
 *   S  makes K free moves (signal or broadcast, holding m1, m2 or
 *      neither), then sets go[1] under m1 and broadcasts, and the same
 *      for m2.
 * WHAT IS MODELLED, as in the C code:
 *   - c's byte (WAITERS), set by the waiter's validate and cleared by
 *     whoever leaves the queue empty; signal's fast path (byte 0: return);
 *   - the wait: validate and enqueue under the bucket lock with the
 *     mutex as park token, before_sleep's unlock of the mutex, the sleep,
 *     the timeout path (leave the queue the thread is on, c's or the
 *     mutex's after a requeue, and clear that object's bit if it was the
 *     last), then the hand-off or pl_mutex_lock, and the return value;
 *   - signal and broadcast: the guess read from the oldest waiter's token
 *     (pl_unpark_filter, one critical section), then
 *     pl_unpark_requeue_token (another): wake_validate (empty queue: clear
 *     the byte; another token at the head: retry with it; else the CAS
 *     that sets PARKED on a held mutex), the operation on the waiters with
 *     that token (wake one, move one, wake one and move the rest, move
 *     all), and wake_callback (the byte, PARKED on a free mutex when
 *     threads were moved onto it) as a separate step;
 *   - the mutex: the fast CAS lock and unlock, parking with
 *     lock_validate, and the unlock slow path with pl_unpark_one and its
 *     callback, hand-off included (a free choice, as be_fair is); an
 *     unlock that wakes a waiter clears PARKED even with others queued
 *     and gives the woken thread PLI_TOKEN_REARM, with which it sets
 *     PARKED again before it competes (in the mutex lock, or in the
 *     condition wait before pl_mutex_lock).
 * WHAT IS ABSTRACTED:
 *   - one bucket lock for the whole lot (the requeue's two buckets are
 *     taken together), no table, no hashing;
 *   - the wake word and the futex are left out: a woken thread is one
 *     whose `queued` flag the waker cleared under the bucket lock
 *     (model/twobit.pml checks that protocol); spinning is left out;
 *   - a plain mutex lock never times out; the mutex's own timeouts are
 *     checked by twobit.pml;
 *   - memory is sequentially consistent.
 *
 * PROPERTIES (one safety run, with invalid end states):
 *   1. a signal or broadcast reads or writes a mutex's byte only while a
 *      thread is inside a wait with that mutex (in_wait[m] > 0): never a
 *      mutex that POSIX lets the program have destroyed or reused;
 *   2. a waiter is moved only onto its own mutex, and returns holding it;
 *   3. a waiter that a signal or broadcast took off c returns 0;
 *   4. no lost wakeup: every thread ends (a thread asleep forever is an
 *      invalid end state), and then every queue is empty, both mutex
 *      bytes and c's byte are 0 (no stale PARKED or WAITERS).
 *
 * BROKEN VARIANTS (-DBROKEN=n), each of which spin must reject:
 *   BROKEN=1  the design before the fix: the requeue acts on the mutex
 *             guessed outside the bucket locks, without looking at the
 *             head again, and moves whoever is there: property 1 fails
 *             (a mutex touched after its last waiter returned); with
 *             -DNO_DEAD_CHECK, which leaves property 1 out, property 2
 *             fails (a waiter moved onto another thread's mutex).
 *   BROKEN=2  a waiter moved onto the mutex whose deadline then passes
 *             returns ETIMEDOUT, as before the fix (property 3).
 *   BROKEN=3  wake_validate moves waiters onto a held mutex without
 *             setting PARKED: the holder's fast unlock wakes nobody (4).
 *   BROKEN=4  the waiter's validate does not set c's byte: a signal's
 *             fast path misses it (4).
 *   BROKEN=5  wake_callback does not set PARKED on a free mutex when it
 *             moved threads onto it (4).
 *   BROKEN=6  a condition waiter woken on the mutex's queue with
 *             PLI_TOKEN_REARM does not set PARKED before pl_mutex_lock
 *             (4).
 */

#ifndef K
#define K 1
#endif
#ifndef BROKEN
#define BROKEN 0
#endif

#define NT 3 /* threads: A 0, B 1, S 2 */
#define QC 0 /* queue ids: c; the mutexes' queues are 1 and 2 */

#define LOCKED 1
#define PARKED 2
#define DEFAULT 0
#define HANDOFF 1
#define REARM 2
#define UNPARKED 0
#define TIMEDOUT 2

typedef queue_t {
	byte e[NT];
	byte n
};

queue_t qs[3];      /* c's queue, m1's, m2's; oldest first */
bool lot = false;   /* the bucket lock */
byte cbyte = 0;     /* c's byte */
byte state[3];      /* mutex bytes, [1] and [2] */
byte owner[3];      /* holder of each mutex, thread + 1, or 0 */
bool queued[NT];    /* struct waiter.queued */
byte where[NT];     /* the queue a thread is on */
byte ptok[NT];      /* park token: the mutex of a cond waiter, else 0 */
byte tokv[NT];      /* unpark token */
bool signalled[NT]; /* taken off c by a signal or broadcast */
byte in_wait[3];    /* threads inside a wait with each mutex */
bool go[3];
byte finished = 0;

inline lot_lock()
{
	atomic { !lot -> lot = true }
}

inline q_push(qi, x)
{
	qs[qi].e[qs[qi].n] = x;
	qs[qi].n++
}

inline q_remove(qi, x)
{
	k = 0;
	do
	:: k < qs[qi].n && qs[qi].e[k] != x -> k++
	:: else -> break
	od;
	assert(k < qs[qi].n);
	do
	:: k + 1 < qs[qi].n -> qs[qi].e[k] = qs[qi].e[k + 1]; k++
	:: else -> break
	od;
	qs[qi].n--;
	qs[qi].e[qs[qi].n] = 0;
	k = 0
}

/* A thread woken with PLI_TOKEN_REARM sets m's PARKED again before it
 * competes for m (pli_twobit_rearm; for a condition waiter woken on m's
 * queue, pli_mutex_lock_woken, from relock() in lib/cond.c).  BROKEN=6:
 * the condition waiter forgets to.  (Such a waiter that loses m parks
 * again at its turn in m's queue; here every park on m joins the tail:
 * no property of this model depends on the order of m's queue, and
 * twobit.pml checks the turns.) */
inline rearm(mx, incond)
{
	atomic {
		if
		:: tokv[me] == REARM ->
#if BROKEN == 6
			if
			:: !incond -> state[mx] = state[mx] | PARKED
			:: else
			fi;
#else
			state[mx] = state[mx] | PARKED;
#endif
			tokv[me] = DEFAULT
		:: else
		fi
	}
}

/* pl_mutex_lock(m) */
inline mutex_lock(m)
{
	got = false;
	do
	:: got -> break
	:: else ->
		atomic {
			if
			:: !(state[m] & LOCKED) ->
				state[m] = state[m] | LOCKED;
				owner[m] = me + 1;
				got = true
			:: else
			fi
		};
		if
		:: !got ->
			lot_lock();
			atomic { /* lock_validate's CAS loop, at its effect */
				ok = (state[m] & LOCKED) != 0;
				if
				:: ok -> state[m] = state[m] | PARKED
				:: else
				fi
			};
			if
			:: ok ->
				ok = false;
				d_step {
					q_push(m, me);
					queued[me] = true;
					where[me] = m;
					ptok[me] = 0;
					tokv[me] = DEFAULT
				};
				lot = false;
				!queued[me];
				got = tokv[me] == HANDOFF; /* owner set by the unlocker */
				rearm(m, false)
			:: else -> lot = false
			fi
		:: else
		fi
	od;
	got = false
}

/* pl_mutex_unlock(m): fast CAS, else pl_unpark_one with unlock_callback */
inline mutex_unlock(m)
{
	assert(owner[m] == me + 1);
	owner[m] = 0;
	atomic {
		if
		:: state[m] == LOCKED -> state[m] = 0; ok = true
		:: else -> ok = false
		fi
	};
	if
	:: !ok ->
		lot_lock();
		if
		:: qs[m].n > 0 ->
			d_step {
				w = qs[m].e[0];
				q_remove(m, w);
				more = qs[m].n > 0
			};
			if
			:: /* hand-off (be_fair or unlock_fair) */
				if
				:: !more -> state[m] = LOCKED
				:: else
				fi;
				tokv[w] = HANDOFF;
				owner[m] = w + 1
			:: /* L and P cleared even with waiters left: the
			    * woken thread sets P again (PLI_TOKEN_REARM) */
				state[m] = 0;
				tokv[w] = (more -> REARM : DEFAULT)
			fi;
			queued[w] = false
		:: else -> state[m] = 0
		fi;
		lot = false
	:: else
	fi;
	ok = false;
	w = 0;
	more = false
}

/* pl_cond_timedwait(c, m, timed ? deadline : NULL); rc is the result */
inline cond_wait(m)
{
	onm = false;
	lot_lock();
#if BROKEN != 4
	cbyte = 1; /* wait_validate */
#endif
	d_step {
		q_push(QC, me);
		queued[me] = true;
		where[me] = QC;
		ptok[me] = m;
		tokv[me] = DEFAULT
	};
	lot = false;
	mutex_unlock(m); /* wait_before_sleep */
	if
	:: !queued[me] -> res = UNPARKED
	:: atomic { timed && !lot && queued[me] -> lot = true } ->
		/* the deadline passed: leave the queue we are on */
		qi = where[me];
		q_remove(qi, me);
		queued[me] = false;
		/* wait_timed_out */
		if
		:: qi != QC -> onm = true
		:: else
		fi;
		if
		:: qs[qi].n == 0 && qi == QC -> cbyte = 0
		:: qs[qi].n == 0 && qi != QC ->
#if BROKEN == 1
			state[m] = state[m] & ~PARKED /* its own, not qi's */
#else
			state[qi] = state[qi] & ~PARKED
#endif
		:: else
		fi;
		lot = false;
		res = TIMEDOUT
	fi;
	if
	:: res == UNPARKED && tokv[me] == HANDOFF -> skip
	:: else ->
		rearm(m, true); /* woken on m's queue by an unlock */
		mutex_lock(m)
	fi;
#if BROKEN == 2
	rc = (res == TIMEDOUT -> TIMEDOUT : 0);
#else
	rc = (res == TIMEDOUT && !onm -> TIMEDOUT : 0);
#endif
	assert(owner[m] == me + 1);           /* property 2 */
	assert(!(signalled[me] && rc != 0));  /* property 3 */
	signalled[me] = false;
	res = 0;
	qi = 0;
	onm = false
}

/* Move x from c's queue onto mutex gm's (inside d_step, lot held). */
inline move(x)
{
	q_remove(QC, x);
	q_push(gm, x);
	where[x] = gm;
	signalled[x] = true;
	assert(ptok[x] == gm); /* property 2: onto its own mutex only */
	nreq++
}

/* pl_cond_signal (all false) or pl_cond_broadcast (all true) */
inline cond_wake()
{
	if
	:: cbyte == 0 -> skip /* the inline fast path */
	:: else ->
		/* the guess: pl_unpark_filter, stopping at the oldest */
		lot_lock();
		gm = (qs[QC].n > 0 -> ptok[qs[QC].e[0]] : 0);
		lot = false;
		do
		:: gm == 0 -> break
		:: else ->
			/* pl_unpark_requeue_token(c, gm): wake_validate */
			lot_lock();
#if BROKEN == 1
			act = true;
#else
			if
			:: qs[QC].n == 0 -> cbyte = 0; act = false; gm = 0
			:: qs[QC].n > 0 && ptok[qs[QC].e[0]] != gm ->
				act = false;
				gm = ptok[qs[QC].e[0]]
			:: else -> act = true
			fi;
#endif
			if
			:: !act -> lot = false
			:: else ->
#ifndef NO_DEAD_CHECK
				assert(in_wait[gm] > 0); /* property 1 */
#endif
				atomic {
					held = (state[gm] & LOCKED) != 0;
#if BROKEN != 3
					if
					:: held -> state[gm] = state[gm] | PARKED
					:: else
					fi
#endif
				};
				/* the operation, on the threads with token gm
				 * (BROKEN=1: on whoever is queued) */
				d_step {
					nreq = 0;
					if
					:: qs[QC].n > 0 && !held ->
						w = qs[QC].e[0];
						q_remove(QC, w);
						signalled[w] = true;
						tokv[w] = DEFAULT;
						queued[w] = false
					:: qs[QC].n > 0 && held && !all ->
						w = qs[QC].e[0];
						move(w)
					:: else
					fi;
					w = 0;
					if
					:: all ->
						j = 0;
						do
						:: j < qs[QC].n ->
							w = qs[QC].e[j];
#if BROKEN == 1
							move(w)
#else
							if
							:: ptok[w] == gm -> move(w)
							:: else -> j++
							fi
#endif
						:: else -> break
						od;
						j = 0;
						w = 0
					:: else
					fi
				};
				/* wake_callback */
				atomic {
					if
					:: qs[QC].n == 0 -> cbyte = 0
					:: else
					fi;
#if BROKEN != 5
					if
					:: !held && nreq > 0 ->
						state[gm] = state[gm] | PARKED
					:: else
					fi;
#endif
					held = false;
					nreq = 0
				};
				lot = false;
				gm = 0
			fi
		od;
		act = false
	fi
}

/* A waiter: lock m, wait until go[m] or a timeout, unlock. */
inline waiter_body(m)
{
	mutex_lock(m);
	do
	:: go[m] -> break
	:: else ->
		/* POSIX's binding: no wait with the other mutex meanwhile (a
		 * program that cannot wait now does something else) */
		atomic {
			if
			:: in_wait[3 - m] == 0 -> in_wait[m]++
			:: else -> break
			fi
		};
		cond_wait(m);
		in_wait[m]--;
		if
		:: rc != 0 -> break
		:: else
		fi
	od;
	rc = 0;
	mutex_unlock(m)
}

#define LOCALS                                                              \
	bool got, ok, more, onm, timed, act, held, all;                     \
	byte k, j, w, qi, res, rc, gm, nreq, mm

proctype A()
{
	byte me = 0;
	LOCALS;
	timed = true;
	waiter_body(1);
	finished++
}

proctype B()
{
	byte me = 1;
	LOCALS;
	if
	:: mm = 1
	:: mm = 2
	fi;
	if
	:: timed = true
	:: timed = false
	fi;
	waiter_body(mm);
	finished++
}

proctype S()
{
	byte me = 2;
	byte i = 0, hm;
	LOCALS;
	do
	:: i < K ->
		i++;
		if
		:: hm = 0
		:: hm = 1
		:: hm = 2
		fi;
		if
		:: hm != 0 -> mutex_lock(hm)
		:: else
		fi;
		if
		:: all = false
		:: all = true
		fi;
		cond_wake();
		if
		:: hm != 0 -> mutex_unlock(hm)
		:: else
		fi
	:: else -> break
	od;
	all = true;
	mutex_lock(1);
	go[1] = true;
	cond_wake();
	mutex_unlock(1);
	mutex_lock(2);
	go[2] = true;
	cond_wake();
	mutex_unlock(2);
	finished++
}

init
{
	atomic {
		run A();
		run B();
		run S()
	};
	finished == NT;
	assert(qs[0].n == 0 && qs[1].n == 0 && qs[2].n == 0);
	assert(state[1] == 0 && state[2] == 0);
	assert(cbyte == 0);
	assert(!lot)
}
