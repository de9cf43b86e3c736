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
 * With -DANY, pl_cond_clockwait_any instead of m2 (four threads):
 *   A  as above, with m1;
 *   B  and a fourth thread C wait with L, a lock that is not a
 *      pl_mutex_t (a plain lock with a blocking acquire, unknown to the
 *      library), each with a deadline or none, until go[L] is set or its
 *      wait returns ETIMEDOUT; a thread starts a wait only while no
 *      thread is inside a wait with another lock (m1 or L), as above;
 *   S  makes K free moves holding m1, L or neither, then sets go[1] under
 *      m1 and broadcasts, then go[L] under L and broadcasts (POSIX: the
 *      predicate changes under the waiters' lock).
 * (B choosing m1 or L, as it chooses m1 or m2 without -DANY, takes over
 * 30 M states even with C untimed and waiting once: at the bound of 2 GB
 * check.sh had then; two waiters with m1 are checked by the default run.)
 * With -DMIXED (alone or with -DANY), the threads do not keep POSIX's
 * binding: a thread starts a wait whatever lock the others wait with, so
 * c's queue holds waiters of m1 and m2 (or m1 and L) at once, which
 * glibc tolerates and lib/cond.c handles with one round per lock.
 * WHAT IS MODELLED, as in the C code:
 *   - c's byte (WAITERS), set by the waiter's validate and cleared by
 *     whoever leaves the queue empty; signal's fast path (byte 0: return);
 *   - the wait: validate and enqueue under the bucket lock with the
 *     mutex as park token, before_sleep's unlock of the mutex, the sleep,
 *     the timeout path (leave the queue the thread is on, c's or the
 *     mutex's after a requeue, and clear that object's bit if it was the
 *     last), then the hand-off or pl_mutex_lock, and the return value;
 *   - signal and broadcast: the guess read from the oldest waiter's token
 *     (pl_unpark_filter, one critical section, which for a broadcast also
 *     counts the waiters: its bound on rounds), then
 *     pl_unpark_requeue_token (another): wake_validate (empty queue: clear
 *     the byte; another token at the head: retry with it; else the CAS
 *     that sets PARKED on a held mutex), the operation on the waiters with
 *     that token (wake one, move one, wake one and move the rest, move
 *     all), and wake_callback (the byte, PARKED on a free mutex when
 *     threads were moved onto it) as a separate step; a broadcast that
 *     leaves waiters of another lock (have_more after its operation, or
 *     a mutex's waiter that wake_any skipped) guesses again, for as many
 *     rounds as it counted waiters (-DMIXED makes such queues);
 *   - -DANY: the wait of pl_cond_clockwait_any: validate (the byte) and
 *     enqueue with park token ANY_LOCK, before_sleep's unlock(L), the
 *     sleep or the timeout (leave c's queue, clear the byte if it was the
 *     last), then relock(L) in both cases; and in signal and broadcast,
 *     wake(): a guess of ANY_LOCK, or a wake_validate that sees ANY_LOCK
 *     at the head (abort, retry with it), leads to wake_any:
 *     pl_unpark_filter on c with any_filter (a mutex's waiter at the head:
 *     nothing woken, retry with its token on the requeue path; else
 *     signal wakes the head, broadcast every ANY_LOCK waiter) and
 *     any_callback (the byte cleared if the queue is left empty);
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
 *   - memory is sequentially consistent;
 *   - -DANY: relock(L) always succeeds (the wait returns its result
 *     otherwise, which the library passes through); the cancellation
 *     and its pass-on are not modelled (nor in the default); the waits
 *     of L and wake_any take the bucket lock, do their critical section
 *     and release it in one atomic step (what they write is read only
 *     under that lock, but c's byte, whose fast-path reader then waits
 *     for the lock): the requeue path keeps its steps.
 *
 * PROPERTIES (one safety run, with invalid end states):
 *   1. a signal or broadcast reads or writes a mutex's byte only while a
 *      thread is inside a wait with that mutex (in_wait[m] > 0): never a
 *      mutex that POSIX lets the program have destroyed or reused;
 *   2. a waiter is moved only onto its own mutex, and returns holding it;
 *   3. a waiter that a signal or broadcast took off c returns 0;
 *   4. no lost wakeup: every thread ends (a thread asleep forever is an
 *      invalid end state), and then every queue is empty, both mutex
 *      bytes and c's byte are 0 (no stale PARKED or WAITERS);
 *   5. (-DANY) a waiter of L is never moved onto a mutex's queue (its
 *      lock is no pl_mutex_t); it returns holding L (as 2), and returns 0
 *      once a signal or broadcast took it off c (as 3); at the end L is
 *      free.  That a broadcast of wake_any never meets a mutex's waiter
 *      after an ANY_LOCK one (the misuse abort of two_mutexes) is
 *      asserted too, unless -DMIXED: POSIX's binding, as the threads
 *      keep it, rules it out;
 *   6. a broadcast takes off c every thread that was waiting on it when
 *      the broadcast began (woken, moved, or gone by its own timeout),
 *      also when they wait with different locks (-DMIXED).
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
 * With -DANY:
 *   BROKEN=7  the waiter of L unlocks L before it is queued, not in
 *             before_sleep: S sets go[L] under L in between and its
 *             broadcast finds the byte 0; the waiter then sleeps forever
 *             (4).
 *   BROKEN=8  any_callback clears c's byte whatever is left queued
 *             (have_more ignored): a signal wakes one of two waiters of
 *             L, the other stays queued with the byte 0, and the closing
 *             broadcast's fast path misses it (4).
 *   BROKEN=9  wake_validate takes a head with token ANY_LOCK for the
 *             mutex it guessed (it retries only on another mutex's
 *             token), and the requeue acts on the waiters of L: property
 *             1 fails (m1 touched after A left; a waiter of L can only
 *             be queued once nobody waits with m1); with -DNO_DEAD_CHECK,
 *             property 5 (a waiter of L moved onto m1).
 *   BROKEN=10 the waiter of L calls relock only when woken, not after a
 *             timeout: it returns without L (property 2).
 * With -DMIXED:
 *   BROKEN=11 a broadcast makes one round only (the head's lock): a
 *             waiter of the other mutex stays on c (property 6).
 *   BROKEN=12 (with -DANY) wake_any does not report the mutex waiters it
 *             skipped: the broadcast ends after the round of L and
 *             leaves m1's waiter on c (property 6).
 */

#ifndef K
#define K 1
#endif
#ifndef BROKEN
#define BROKEN 0
#endif

#ifdef ANY
#define NT 4  /* threads: A 0, B 1, S 2, C 3 */
#define ANY_LOCK 3 /* park token of a waiter with L, and L's index (owner,
                    * in_wait, go); lib/cond.c's ANY_LOCK is 1 */
#define NL 4  /* owner[], in_wait[], go[]: m1, m2 and L */
#else
#define NT 3 /* threads: A 0, B 1, S 2 */
#define NL 3
#endif
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
byte owner[NL];     /* holder of each mutex (and of L), thread + 1, or 0 */
bool queued[NT];    /* struct waiter.queued */
byte where[NT];     /* the queue a thread is on */
byte ptok[NT];      /* park token: the mutex of a cond waiter (ANY_LOCK for
                     * clockwait_any), else 0 */
byte tokv[NT];      /* unpark token */
bool signalled[NT]; /* taken off c by a signal or broadcast */
byte in_wait[NL];   /* threads inside a wait with each mutex (and L) */
bool go[NL];
byte finished = 0;
bool since[NT];     /* on c when the running broadcast began (property 6) */

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
	k = 0;
	if
	:: qi == QC -> since[x] = false
	:: else
	fi
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

#ifdef ANY
/* L, the lock of the clockwait_any waiters: a plain lock with a blocking
 * acquire, which the library never sees (the caller's unlock and relock
 * run it).  S takes it as it takes a mutex. */
inline lk_lock(m)
{
	if
	:: atomic { m == ANY_LOCK && owner[ANY_LOCK] == 0 ->
		owner[ANY_LOCK] = me + 1 }
	:: m != ANY_LOCK -> mutex_lock(m)
	fi
}

inline lk_unlock(m)
{
	if
	:: atomic { m == ANY_LOCK ->
		assert(owner[ANY_LOCK] == me + 1);
		owner[ANY_LOCK] = 0 }
	:: m != ANY_LOCK -> mutex_unlock(m)
	fi
}

/* pl_cond_clockwait_any(c, L, unlock, relock, clock, timed ? deadline :
 * NULL); rc is the result.  Each critical section under the bucket lock
 * is one atomic step here (what it writes is read only under that lock,
 * but c's byte, whose fast-path reader then waits for the lock). */
inline any_wait()
{
#if BROKEN == 7
	lk_unlock(ANY_LOCK); /* unlock(lock) before it is queued */
#endif
	atomic {
		!lot ->
#if BROKEN != 4
		cbyte = 1; /* wait_validate */
#endif
		q_push(QC, me);
		queued[me] = true;
		where[me] = QC;
		ptok[me] = ANY_LOCK;
		tokv[me] = DEFAULT
	};
#if BROKEN != 7
	lk_unlock(ANY_LOCK); /* wait_before_sleep: unlock(lock) */
#endif
	if
	:: !queued[me] -> res = UNPARKED
	:: atomic { timed && !lot && queued[me] ->
		/* the deadline passed: leave c's queue, the only one such
		 * a waiter is ever on (wait_timed_out) */
		q_remove(QC, me);
		queued[me] = false;
		if
		:: qs[QC].n == 0 -> cbyte = 0
		:: else
		fi;
		res = TIMEDOUT }
	fi;
	/* relock(lock), after a wake or a timeout (BROKEN=10: after a
	 * wake only) */
#if BROKEN == 10
	if
	:: res == UNPARKED -> lk_lock(ANY_LOCK)
	:: else
	fi;
#else
	lk_lock(ANY_LOCK);
#endif
	rc = (res == TIMEDOUT -> TIMEDOUT : 0);
	assert(owner[ANY_LOCK] == me + 1);    /* property 2 */
	assert(!(signalled[me] && rc != 0));  /* property 3 */
	signalled[me] = false;
	res = 0
}
#else
inline lk_lock(m)
{
	mutex_lock(m)
}

inline lk_unlock(m)
{
	mutex_unlock(m)
}
#endif

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
#ifdef ANY
	assert(ptok[x] != ANY_LOCK); /* property 5: L is no pl_mutex_t */
#endif
	assert(ptok[x] == gm); /* property 2: onto its own mutex only */
	nreq++
}

#ifdef ANY
/* wake_any: pl_unpark_filter(c, any_filter, any_callback), in one
 * critical section.  From the head: a waiter with token ANY_LOCK is woken
 * (signal: the head only; broadcast: every one); a mutex's waiter at the
 * head stops the walk with nothing woken, and gm is its token, tried next
 * by the requeue path; else gm is 0 (done).  A broadcast that meets a
 * mutex's waiter after it woke one aborts (two_mutexes): never with
 * POSIX's binding, which the model asserts.  any_callback clears the byte
 * when the queue is left empty or was found empty (BROKEN=8: whatever
 * is left). */
inline wake_any()
{
	d_step {
		!lot ->
		gm = 0;
		nreq = 0; /* the threads woken */
		j = 0;
		do
#ifdef MIXED
		:: j < qs[QC].n && ptok[qs[QC].e[j]] != ANY_LOCK &&
		    nreq > 0 && all ->
			mix = true; /* skipped: another round's */
			j++
#endif
		:: j < qs[QC].n && ptok[qs[QC].e[j]] != ANY_LOCK &&
		    (nreq == 0 || !all) ->
			if
			:: nreq == 0 -> gm = ptok[qs[QC].e[j]] /* seen */
			:: else
			fi;
			break
#ifndef MIXED
		:: j < qs[QC].n && ptok[qs[QC].e[j]] != ANY_LOCK &&
		    nreq > 0 && all ->
			assert(false) /* a mixed queue: see waiter_body */
#endif
		:: j < qs[QC].n && ptok[qs[QC].e[j]] == ANY_LOCK &&
		    (nreq == 0 || all) ->
			w = qs[QC].e[j];
			q_remove(QC, w);
			signalled[w] = true;
			tokv[w] = DEFAULT;
			queued[w] = false;
			nreq++
		:: else -> break
		od;
		j = 0;
		w = 0;
#if BROKEN == 12
		mix = false; /* wake_any reports no waiters left of others */
#endif
		/* any_callback */
#if BROKEN == 8
		cbyte = 0;
#else
		if
		:: qs[QC].n == 0 -> cbyte = 0
		:: else
		fi;
#endif
		nreq = 0
	}
}
#endif

/* After a round of a broadcast that left waiters of other locks (mix):
 * another round, with a new guess, while rounds last (BROKEN=11: one
 * round only). */
inline next_round()
{
	if
	:: mix ->
		mix = false;
		rounds--;
#if BROKEN != 11
		if
		:: rounds > 0 ->
			lot_lock();
			gm = (qs[QC].n > 0 -> ptok[qs[QC].e[0]] : 0);
			lot = false
		:: else
		fi
#endif
	:: else
	fi
}

/* pl_cond_signal (all false) or pl_cond_broadcast (all true) */
inline cond_wake()
{
	if
	:: cbyte == 0 -> skip /* the inline fast path */
	:: else ->
		/* the guess: pl_unpark_filter, stopping at the oldest */
		lot_lock();
		d_step {
			gm = (qs[QC].n > 0 -> ptok[qs[QC].e[0]] : 0);
			rounds = qs[QC].n;
			j = 0;
			do
			:: all && j < qs[QC].n -> since[qs[QC].e[j]] = true; j++
			:: else -> break
			od;
			j = 0
		};
		lot = false;
		do
		:: gm == 0 -> break
#ifdef ANY
		:: gm == ANY_LOCK ->
			wake_any(); /* gm: the token seen, or 0 */
			next_round()
#endif
		:: else ->
			/* pl_unpark_requeue_token(c, gm): wake_validate */
			lot_lock();
#if BROKEN == 1
			act = true;
#else
			if
			:: qs[QC].n == 0 -> cbyte = 0; act = false; gm = 0
#if defined(ANY) && BROKEN == 9
			:: qs[QC].n > 0 && ptok[qs[QC].e[0]] != gm &&
			    ptok[qs[QC].e[0]] != ANY_LOCK ->
#else
			:: qs[QC].n > 0 && ptok[qs[QC].e[0]] != gm ->
#endif
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
#elif defined(ANY) && BROKEN == 9
							if
							:: ptok[w] == gm -> move(w)
							:: ptok[w] == ANY_LOCK ->
								move(w)
							:: else -> j++
							fi
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
					:: else -> mix = all /* have_more */
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
				gm = 0;
				next_round()
			fi
		od;
		act = false;
		/* property 6: nobody that waited when the broadcast began is
		 * still on c (left by a wake, a move or a timeout) */
		d_step {
			j = 0;
			do
			:: j < NT -> assert(!since[j]); j++
			:: else -> break
			od;
			j = 0
		};
		rounds = 0
	fi
}

/* A waiter: lock m, wait until go[m] or a timeout, unlock. */
inline waiter_body(m)
{
	lk_lock(m);
	do
	:: go[m] -> break
	:: else ->
		/* POSIX's binding: no wait with the other mutex meanwhile (a
		 * program that cannot wait now does something else) */
		atomic {
			if
#ifdef MIXED
			:: true -> in_wait[m]++ /* no binding: lib/cond.c copes */
#elif defined(ANY)
			:: in_wait[1] + in_wait[2] + in_wait[ANY_LOCK] ==
			    in_wait[m] -> in_wait[m]++
#else
			:: in_wait[3 - m] == 0 -> in_wait[m]++
#endif
			:: else -> break
			fi
		};
#ifdef ANY
		if
		:: m == ANY_LOCK -> any_wait()
		:: m != ANY_LOCK -> cond_wait(m)
		fi;
#else
		cond_wait(m);
#endif
		in_wait[m]--;
		if
		:: rc != 0 -> break
		:: else
		fi
	od;
	rc = 0;
	lk_unlock(m)
}

#define LOCALS                                                              \
	bool got, ok, more, onm, timed, act, held, all, mix;                \
	byte k, j, w, qi, res, rc, gm, nreq, mm, rounds

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
#ifdef ANY
	mm = ANY_LOCK; /* L, as C */
#else
	if
	:: mm = 1
	:: mm = 2
	fi;
#endif
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
#ifdef ANY
		:: hm = ANY_LOCK
#else
		:: hm = 2
#endif
		fi;
		if
		:: hm != 0 -> lk_lock(hm)
		:: else
		fi;
		if
		:: all = false
		:: all = true
		fi;
		cond_wake();
		if
		:: hm != 0 -> lk_unlock(hm)
		:: else
		fi
	:: else -> break
	od;
	all = true;
	mutex_lock(1);
	go[1] = true;
	cond_wake();
	mutex_unlock(1);
#ifdef ANY
	lk_lock(ANY_LOCK);
	go[ANY_LOCK] = true;
	cond_wake();
	lk_unlock(ANY_LOCK);
#else
	mutex_lock(2);
	go[2] = true;
	cond_wake();
	mutex_unlock(2);
#endif
	finished++
}

#ifdef ANY
/* C: as B, a waiter of pl_cond_clockwait_any with L, with a deadline or
 * none. */
proctype C()
{
	byte me = 3;
	LOCALS;
	if
	:: timed = true
	:: timed = false
	fi;
	waiter_body(ANY_LOCK);
	finished++
}
#endif

init
{
	atomic {
		run A();
		run B();
		run S()
#ifdef ANY
		;
		run C()
#endif
	};
	finished == NT;
	assert(qs[0].n == 0 && qs[1].n == 0 && qs[2].n == 0);
	assert(state[1] == 0 && state[2] == 0);
	assert(cbyte == 0);
#ifdef ANY
	assert(owner[ANY_LOCK] == 0);
#endif
	assert(!lot)
}
