/* SPDX-License-Identifier: MIT */
/*
 * twobit.pml: a Promela model of the two-bit lock algorithm of
 * lib/twobit.c, the one slow-path engine of pl_mutex_t (lib/mutex.c) and
 * of the bit locks (lib/bitlock.c), with the inline fast paths of
 * include/parkinglot/mutex.h and bitlock.h, on the parking lot
 * (lib/parkinglot.c); checked with spin for mutual exclusion, the P
 * invariant and the absence of lost wakeups.  `make check-model` runs
 * model/check.sh, which verifies this model in both of its cases and its
 * BROKEN variants; see model/README for how to run it by hand.
 *
 * THE TWO CASES, chosen with -D:
 *   - the mutex (the default; shared = false): one lock, L = 1 and P = 2
 *     of its byte; its waiters park with token 0, and the unlock wakes
 *     with pli_unpark_one_away (the oldest, or one that parked on
 *     another CPU, passing the oldest over) or, for a hand-off, with
 *     pl_unpark_one, the oldest; have_more says whether P stays.  N
 *     threads (3) lock and unlock it ITER times (2).
 *   - -DSHARED (shared = true): two bit locks in one word, lock 0 with
 *     L0 = 1, P0 = 2 and lock 1 with L1 = 4, P1 = 8.  Their waiters park
 *     on the same address with their L as token, and the unlock walks the
 *     queue with pl_unpark_filter and unlock_filter.  N = 3 threads, one
 *     round each (ITER = 1): thread 0 takes both locks (lock 0 first,
 *     then lock 1; it releases them in either order, and releases lock 0
 *     if its timed lock of lock 1 gives up); threads 1 and 2 take one
 *     lock each, either.  So the queue can hold a waiter of each lock
 *     (thread 0 holding both), or two waiters of one lock, and each
 *     lock's bits change while the other lock's CAS loops and validate
 *     run.
 *
 * WHAT IS MODELLED, step by step as in the C code:
 *   - the word, and every CAS, fetch_and and store the algorithm makes on
 *     it: each CAS from a value loaded before (a separate step), which
 *     fails if any bit changed meanwhile, and each clear_bits an atomic
 *     fetch_and of this lock's bits only, the others carried over;
 *   - the fast paths: pl_mutex_lock's CAS 0 -> L and pl_mutex_unlock's
 *     CAS L -> 0; pl_bitlock_lock's load and CAS from it to s | L when L
 *     is clear, and pl_bitlock_unlock's load and CAS to s & ~L when L is
 *     set and P clear (the _fair unlocks skip them and go to the queue);
 *   - pli_twobit_lock: the test-and-test-and-set loop (CAS only when the
 *     last load showed L clear; a failed CAS reloads); the first time it
 *     sees the lock held, a timed call may give up at once (its deadline
 *     has passed: ETIMEDOUT); pl_park with lock_validate (fail if L is
 *     clear, else set P) and lock_timed_out; a woken thread with
 *     PL_UNPARK_TOKEN_HANDOFF owns the lock, any other result retries,
 *     PL_PARK_TIMED_OUT returns ETIMEDOUT, and a woken thread with
 *     PLI_TOKEN_REARM sets P (pli_twobit_rearm, an atomic or) before it
 *     retries;
 *   - pli_twobit_unlock: the loop (L clear: the misuse report; P clear:
 *     CAS to s & ~L; P set: the unpark), then, under the bucket lock,
 *       mutex:  a hand-off (a fair unlock, or the fairness timer due:
 *               free choices): dequeue the oldest waiter; else
 *               pli_unpark_one_away's pick_away: of the first SCAN (2)
 *               waiters, the first that was passed over in its park or
 *               parked on another CPU (a free choice), the oldest if
 *               none, marking those before it passed over; more =
 *               have_more;
 *       SHARED: pl_unpark_filter with unlock_filter: skip waiters whose
 *               token is not our L, unpark the first whose token is,
 *               stop at a second one; more = "a second one was seen"
 *               (matches > 1), whatever waiters of the other lock remain;
 *     and unlock_callback: a hand-off (be_fair, or a fair unlock: a free
 *     choice) keeps L for the woken thread and clears P only if !more;
 *     otherwise clear L and P, and if more give the woken thread
 *     PLI_TOKEN_REARM; nobody unparked (a stale P): clear L and P;
 *   - pl_park: the bucket lock, validate-then-enqueue under it (the
 *     park token; the queue in the order of turns, insert_at_turn: a
 *     fresh park takes the next tick of a clock and joins at the tail, a
 *     thread woken in this lock call parks again with PLI_PARK_AGAIN,
 *     keeping its turn, before the first waiter whose turn is not
 *     earlier), the wake word (0 not queued or woken, 1
 *     queued, 2 about to sleep), sleep_on's CAS 1 -> 2 and FUTEX_WAIT
 *     (sleeps only while the word is 2, atomically, as the kernel does),
 *     FUTEX_WAKE, and the timeout path (leave_queue): relock the bucket;
 *     if still queued, unlink, word to 0, timed_out(was_last), where
 *     was_last says no waiter of any lock is left on the address, and
 *     PL_PARK_TIMED_OUT; if a waker dequeued it meanwhile, wait untimed
 *     for the word to reach 0 and take the token;
 *   - the wake after the bucket unlock: the exchange of the wake word to
 *     0 and FUTEX_WAKE if it was 2.  A FUTEX_WAKE that lands after the
 *     waiter returned and parked again is a spurious wakeup there, as in
 *     the C code, and is harmless.
 *   Each lock attempt may be timed or not, and each unlock fair or not;
 *   a timed park may time out whenever it is asleep.
 *   - -DDIES (the mutex case): thread 0 may end, once, anywhere in its
 *     sleep (cancelled asynchronously, or pthread_exit in a signal
 *     handler), and the lot's cleanup of a PLI_PARK_UNWOUND park runs:
 *     leave_queue (out of the queue with lock_timed_out(was_last) if it
 *     is still queued, else the wait for its wake word), then
 *     lock_unwound: with PLI_TOKEN_REARM, P set, and the lock, if free,
 *     taken and released through pli_twobit_unlock.  Hand-offs are left
 *     out of this case: a lock handed to a thread that ends stays held,
 *     as the library documents, and the others would wait for good.
 *
 * WHAT IS ABSTRACTED:
 *   - one word, one bucket, one table: no hashing, no growth, no other
 *     addresses in the bucket; the bucket lock is an atomic test-and-set
 *     that blocks (its own futex protocol is not modelled);
 *   - lock_validate's CAS loop is one atomic step (the loop's effect at
 *     its linearization point: fail if L is clear, else set P), and so
 *     is the filter's walk with the dequeue (under the bucket lock, it
 *     reads no bit of the word);
 *   - the word's other bits, which a bit lock's caller owns and may
 *     change at any time, are not modelled apart from the other lock's:
 *     its fast paths are such changes;
 *   - memory is sequentially consistent (spin's model): the acquire and
 *     release orderings of the C code are not checked here
 *     (ThreadSanitizer and tools/torture cover them);
 *   - spinning is left out: a spin round only reloads the word, and a
 *     thread that goes to park instead finds L clear in validate and
 *     retries, which reaches the same states; so is how long a thread
 *     spins (the adaptive yield rounds of lib/spin.c only make it park
 *     sooner, which the model's waiter may always do); pl_*_trylock (the loop of
 *     the lock without the park) and the condition variable's requeue
 *     onto the mutex are not modelled (cond.pml checks the requeue);
 *     statistics, clocks and the fairness deadline are not modelled
 *     (be_fair and a passed deadline are free choices);
 *   - spurious futex wakeups other than late FUTEX_WAKEs, and EINTR, are
 *     not modelled (sleep_on loops on the word either way);
 *   - -DNO_FUTEX (for larger runs by hand) leaves out the sleep: a
 *     parked thread waits for its wake word to be 0, or times out while
 *     it is not (the default runs check the sleep in full).
 *
 * PROPERTIES (all checked in one safety run, with invalid end states),
 * for each lock k:
 *   1. mutual exclusion: assert(incs[k] == 1) when a thread takes lock k
 *      (it holds it until its unlock begins), and a monitor process
 *      asserting incs[k] <= 1 in every state;
 *   2. the invariant of lib/twobit.c: while a waiter of lock k is
 *      queued, Pk is set or a thread woken with PLI_TOKEN_REARM for lock
 *      k has yet to set it (the ghost rearming[k]; the same monitor;
 *      compile with -DNO_INVARIANT to leave it out).  Pk may be set with no waiter of lock k queued
 *      (in SHARED, a waiter of lock k that times out while a waiter of
 *      the other lock is queued leaves it, since was_last is false): the
 *      model accepts that, as the C code does;
 *   3. no lost wakeup: every thread ends, so a thread left asleep in the
 *      queue while the others have finished is an invalid end state,
 *      which spin reports; and when all have finished, no L is set, the
 *      queue is empty and the bucket lock free, and the mutex's byte is
 *      0 (no stale P).
 *   4. turns: when an unlock wakes a waiter of lock k, every waiter of
 *      lock k still queued behind it joined the queue after it (its
 *      turn is later), woken waiters that lost the lock and parked again
 *      included; and each waiter ahead of it, passed over, has not been
 *      passed over before in its park (the ghost passes: at most once,
 *      lib/parkinglot.c, "Passing over").  (Each thread of the shared
 *      case takes each lock once, so nobody barges past a woken thread
 *      there: the mutex case is the one that checks this;
 *      tests/test_bitlock.c's turn test covers a bit lock's waiter
 *      parking again behind another lock's.)
 *   Result (spin 6.5.2, -DSAFETY -DCOLLAPSE): no errors, in both cases.
 *
 * BROKEN VARIANTS: -DBROKEN=n removes or changes one step of the
 * algorithm; check.sh requires spin to find a counterexample for each.
 * The lost wakeups are checked without the invariant monitor, so that
 * what spin finds is the lost wakeup itself, not the missing P before it:
 *   BROKEN=1  the woken thread ignores PLI_TOKEN_REARM: P stays clear
 *             over the waiters still queued, and the next holder's fast
 *             unlock wakes nobody: an invalid end state, a thread asleep
 *             in the queue forever with the lock free.
 *   BROKEN=2  lock_validate parks without setting P: the holder's fast
 *             unlock CAS succeeds and wakes nobody (invalid end state).
 *   BROKEN=3  lock_timed_out clears P even when was_last is false: the
 *             next unlock takes the fast path past the waiters still
 *             queued (invalid end state).
 *   BROKEN=4  the hand-off clears L like a plain unlock (the woken thread
 *             owns a lock that reads as free): with -DNO_MISUSE_CHECK (so
 *             that spin reports the breach itself, not its consequence,
 *             an unlock of a free lock), "assertion violated
 *             (incs[lk]==1)": two owners.
 *   BROKEN=5  the hand-off clears P even when more: the new owner's fast
 *             unlock wakes nobody (invalid end state).
 *   BROKEN=6  (SHARED) unlock_callback clears its bits with a load and a
 *             plain store instead of fetch_and: a change the other
 *             lock's fast path makes in between is lost.  Spin finds the
 *             other lock's release undone: "assertion violated
 *             ((state&5)==0)", its L left set with nobody holding it.
 *   BROKEN=7  (SHARED) the unlock wakes the oldest waiter of the word,
 *             whatever its token, and takes more from have_more (what
 *             pl_unpark_one does for the mutex): spin finds a waiter of
 *             the other lock handed that lock while its owner holds it,
 *             "assertion violated (incs[lk]==1)".
 *   BROKEN=8  the woken thread sets P only if it finds the lock held (as
 *             if only a thread about to park again needed it): one that
 *             finds the lock free takes it without P, and its fast unlock
 *             wakes nobody (invalid end state).
 *   BROKEN=9  a woken thread that lost the lock parks again at the tail
 *             (the queue FIFO by park, as before turns): spin finds a
 *             waiter woken while one that joined before it is queued,
 *             "assertion violated (... (turn[q[k]]>turn[w]))".
 *   BROKEN=10 it parks again at the head: when two woken threads are on
 *             their way (the first re-armed P, lost, and the next unlock
 *             woke the second), the younger may park last and go first;
 *             the same assertion.
 *   BROKEN=11 pick_away ignores passed (a waiter on another CPU is
 *             always preferred): the head, on the unlocker's CPU, is
 *             passed over twice, "assertion violated
 *             (passes[q[k]]<=1)".
 *   BROKEN=12 (DIES) the thread that ends is only taken out of the queue
 *             (self_destroy before PLI_PARK_UNWOUND: no timed_out, no
 *             re-arm): woken with PLI_TOKEN_REARM, it leaves the waiters
 *             behind it queued with P clear, and the others' fast paths
 *             wake nobody (invalid end state).
 *   BROKEN=13 a fair unlock takes the fast paths when P is clear, as
 *             before 2026-12-08: while a thread woken to compete has yet
 *             to re-arm, it leaves the lock free with a waiter queued
 *             instead of handing it over, "assertion violated
 *             (!(fair)||(nq[lk]==0))".
 * Variants 1-5 and 8 fail in both cases, 9 to 11 in the mutex case (see
 * property 4); 6 and 7 verify in the mutex case
 * (there the byte is the lock's alone, and so is every waiter on it),
 * which is why the bit locks need the shared case.
 */

#ifndef BROKEN
#define BROKEN 0
#endif

#ifdef SHARED
/* Two bit locks in one word: lock 0 is L 1, P 2; lock 1 is L 4, P 8. */
#define NLOCKS 2
#ifndef N
#define N 3
#endif
#ifndef ITER
#define ITER 1
#endif
#else
/* The mutex: L = PL_MUTEX_LOCKED 1, P = PL_MUTEX_PARKED 2. */
#define NLOCKS 1
#ifndef N
#define N 3
#endif
#ifndef ITER
#define ITER 2
#endif
#endif

/* AWAY_SCAN of lib/parkinglot.c, the waiters pick_away looks at; 2 is
 * enough to pass over the head (the queue holds N - 1 at most). */
#ifndef SCAN
#define SCAN 2
#endif

#define LBIT(k) (1 << (2 * (k)))
#define PBIT(k) (2 << (2 * (k)))
/* The bits of the lock the thread is taking or releasing (lk). */
#define ML LBIT(lk)
#define MP PBIT(lk)
/* The park token of a waiter of lock k: l->shared ? l->locked : 0. */
#ifdef SHARED
#define PTOK(k) LBIT(k)
#else
#define PTOK(k) 0
#endif

#define TOKEN_DEFAULT 0
#define TOKEN_HANDOFF 1
#define TOKEN_REARM 2

/* pl_park results */
#define R_UNPARKED 0
#define R_INVALID 1
#define R_TIMED_OUT 2

#define NONE 255

byte state = 0;      /* the word (a byte is enough for both cases) */
bool blk = false;    /* the bucket lock */
byte q[N];           /* the queue of the word's address, oldest first */
byte qlen = 0;
byte ptok[N];        /* struct waiter.park_token, while queued */
bool queued[N];      /* struct waiter.queued */
byte futex[N];       /* struct waiter.futex, the wake word */
bool asleep[N];      /* in FUTEX_WAIT in the kernel (not with NO_FUTEX) */
byte token[N];       /* struct waiter.unpark_token */
byte nq[NLOCKS];     /* ghost: waiters of each lock queued */
byte rearming[NLOCKS]; /* ghost: woken with TOKEN_REARM, P not yet set */
byte incs[NLOCKS];   /* ghost: threads holding each lock */
byte turn[N];        /* struct waiter.turn, in ticks of clock */
bool passed[N];      /* struct waiter.passed: passed over in this park */
byte passes[N];      /* ghost: times passed over in this park */
byte clock = 0;      /* the monotonic clock, one tick a fresh park */
byte finished = 0;   /* threads that have done their ITER rounds */

inline bucket_lock()
{
	atomic { !blk -> blk = true }
}

inline bucket_unlock()
{
	blk = false
}

/* clear_bits: an atomic fetch_and of the given bits, every other bit of
 * the word kept.  UNLOCK_CLEAR is the one of unlock_callback: BROKEN=6
 * makes it a load and a plain store, which loses whatever another thread
 * changed in between (the other lock's fast paths do not take the bucket
 * lock). */
#define CLEAR_BITS(m) state = state & ~(m)
#if BROKEN == 6
#define UNLOCK_CLEAR(m) s = state; state = s & ~(m)
#else
#define UNLOCK_CLEAR(m) CLEAR_BITS(m)
#endif

/* The lock whose waiter has park token t (1 or 4 for the bit locks, 0
 * for the mutex). */
#define LOCK_OF(t) ((t) >> 2)

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
	bool got, checked, may_time_out, ok, handoff, more, again, dead, fair;
	byte want, held, lk, s, res, k, j, w, old;

	do
	:: round == ITER -> break
	:: round < ITER ->
		round++;
#ifdef SHARED
		/* The locks this round takes (bit k: lock k): thread 0 takes
		 * both, lock 0 first; the others one each, either. */
		if
		:: me == 0 -> want = 3
		:: me != 0 -> want = 1
		:: me != 0 -> want = 2
		fi;
next_lock:
		/* The next lock to take: the lower one wanted and not held. */
		lk = ((want & ~held & 1) -> 0 : 1);
#endif

		/* ---- the fast path of the lock ---- */
#ifdef SHARED
		/* pl_bitlock_lock: a load; a CAS that sets L if L is clear */
		s = state;
		if
		:: !(s & ML) ->
			atomic {
				if
				:: state == s -> state = s | ML; got = true
				:: else
				fi
			}
		:: else
		fi;
#else
		/* pl_mutex_lock: CAS 0 -> L */
		atomic {
			if
			:: state == 0 -> state = ML; got = true
			:: else
			fi
		};
#endif
		if
		:: got -> goto acquired
		:: else
		fi;

		/* ---- pli_twobit_lock ---- */
		s = state;
retry:
		if
		:: !(s & ML) ->
			atomic {
				if
				:: state == s -> state = s | ML; got = true
				:: else -> s = state
				fi
			};
			if
			:: got -> goto acquired
			:: else -> goto retry
			fi
		:: else
		fi;
		/* The first time the lock is seen held, a timed call reads the
		 * clock, and gives up if its deadline has passed. */
		if
		:: !checked ->
			checked = true;
			if
			:: goto gave_up /* ETIMEDOUT */
			:: skip
			fi
		:: else
		fi;
		/* (Spinning, a reload while P is clear, is left out.) */

		/* ---- pl_park(word, lock_validate, NULL, lock_timed_out,
		 * l, PTOK, deadline) ---- */
		assert(futex[me] == 0 && !queued[me]);
		bucket_lock();
		atomic {
			/* lock_validate */
			if
			:: !(state & ML) -> res = R_INVALID
			:: else ->
#if BROKEN == 2
				skip;
#else
				state = state | MP;
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
			ptok[me] = PTOK(lk);
			token[me] = TOKEN_DEFAULT;
			queued[me] = true;
			futex[me] = 1;
			/* insert_at_turn: a fresh park takes the clock's time;
			 * a woken thread parking again (PLI_PARK_AGAIN) keeps
			 * its turn.  It goes before the first waiter whose
			 * turn is not earlier (BROKEN=9: at the tail, as
			 * before turns; BROKEN=10: at the head). */
			if
			:: !again -> clock++; turn[me] = clock
			:: else
			fi;
			passed[me] = false;
			passes[me] = 0;
#if BROKEN == 9
			k = qlen;
#elif BROKEN == 10
			k = (again -> 0 : qlen);
#else
			k = 0;
			do
			:: k < qlen && turn[q[k]] < turn[me] -> k++
			:: else -> break
			od;
#endif
			s = qlen;
			do
			:: s > k -> q[s] = q[s - 1]; s--
			:: else -> break
			od;
			q[k] = me;
			qlen++;
			nq[lk]++;
			k = 0;
			s = 0
		};
		bucket_unlock();
		/* A timed call may time out while it sleeps; an untimed one
		 * never does. */
		if
		:: may_time_out = true
		:: may_time_out = false
		fi;
sleep:
#ifdef DIES
		/* Thread 0 may end here, once (DIES). */
		if
		:: me == 0 && !dead -> dead = true; goto died
		:: skip
		fi;
#endif
		/* sleep_on: until the wake word is 0, or the deadline */
#ifdef NO_FUTEX
		if
		:: futex[me] == 0 -> goto woken
		:: atomic { may_time_out && futex[me] != 0 } -> goto timed_out
		fi;
#else
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
#endif
timed_out:
		/* leave_queue */
		bucket_lock();
		if
		:: queued[me] ->
			d_step {
				q_remove(me);
				ptok[me] = 0;
				queued[me] = false;
				futex[me] = 0;
				nq[lk]--
			};
			/* lock_timed_out(was_last): was_last says that no
			 * waiter is left on the address, of any lock. */
#if BROKEN == 3
			CLEAR_BITS(MP);
#else
			if
			:: qlen == 0 -> CLEAR_BITS(MP)
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
#ifdef DIES
died:
		/* park_cancelled: leave_queue, as for a timeout but untimed,
		 * with lock_timed_out (the lock's frame is still there) */
		round = ITER; /* it does nothing more after this */
		may_time_out = false;
		bucket_lock();
		if
		:: queued[me] ->
			d_step {
				q_remove(me);
				ptok[me] = 0;
				queued[me] = false;
				futex[me] = 0;
				nq[lk]--
			};
#if BROKEN != 12
			if
			:: qlen == 0 -> CLEAR_BITS(MP)
			:: else
			fi;
#endif
			bucket_unlock();
			goto ended
		:: else ->
			/* dequeued: sleep_uncancellable until the word is 0 */
			bucket_unlock();
			futex[me] == 0
		fi;
		/* lock_unwound: no hand-off here (none in this case) */
		assert(token[me] != TOKEN_HANDOFF);
		if
		:: token[me] == TOKEN_REARM ->
			atomic {
#if BROKEN != 12
				state = state | MP;
#endif
				rearming[lk]--;
				token[me] = TOKEN_DEFAULT
			};
#if BROKEN == 12
			goto ended
#else
			s = state;
unwound_try:
			if
			:: !(s & ML) ->
				atomic {
					if
					:: state == s -> state = s | ML; got = true
					:: else -> s = state
					fi
				};
				if
				:: got ->
					atomic {
						got = false;
						incs[lk]++
					};
					assert(incs[lk] == 1);
					incs[lk]--;
					goto twobit_unlock
				:: else -> goto unwound_try
				fi
			:: else -> goto ended
			fi
#endif
		:: else -> goto ended
		fi;
#endif
woken:
		res = R_UNPARKED;
		may_time_out = false;
		again = true;
parked:
		/* back in pli_twobit_lock */
		if
		:: res == R_UNPARKED && token[me] == TOKEN_HANDOFF ->
			token[me] = TOKEN_DEFAULT;
			res = 0;
			goto acquired
		:: res == R_UNPARKED && token[me] == TOKEN_REARM ->
			/* pli_twobit_rearm: P again, before competing, so
			 * that whoever holds the lock next wakes the waiters
			 * the unlock left queued with P clear.  (BROKEN=1:
			 * the token is ignored; BROKEN=8: P only while the lock
			 * is held, as if only a thread that parks again needed
			 * it.) */
			atomic {
#if BROKEN == 8
				if
				:: state & ML -> state = state | MP
				:: else
				fi;
#elif BROKEN != 1
				state = state | MP;
#endif
				rearming[lk]--;
				token[me] = TOKEN_DEFAULT
			};
			res = 0;
			s = state;
			goto retry
		:: res == R_TIMED_OUT ->
			res = 0;
			goto gave_up
		:: else ->
			res = 0;
			s = state;
			goto retry
		fi;

acquired:
		/* ---- the lock is held: its critical section lasts until the
		 * unlock begins (for thread 0 of SHARED, the first lock's
		 * lasts while it takes the second) ---- */
		atomic {
			got = false;
			checked = false;
			again = false;
			turn[me] = 0;
			s = 0;
#ifdef SHARED
			held = held | (1 << lk);
#endif
			incs[lk]++
		};
		assert(incs[lk] == 1);
#ifdef SHARED
		if
		:: held != want -> goto next_lock
		:: else
		fi;
next_unlock:
		/* Holding both: release them in either order. */
		atomic {
			if
			:: held & 1 -> lk = 0
			:: held & 2 -> lk = 1
			fi;
			incs[lk]--
		};
#else
		incs[lk]--;
#endif

		/* ---- a fair unlock (pl_mutex_unlock_fair, the _fair bit
		 * lock unlocks), a free choice, goes to pli_twobit_unlock's
		 * queue whatever P says: waiters may be queued with P clear
		 * while a woken thread has yet to re-arm.  (BROKEN=13: it
		 * takes the fast paths as a plain unlock does, and may leave
		 * the lock free with a waiter queued.)  There it hands the
		 * lock to the oldest waiter of the lock, if any.  Thread 0's
		 * unlocks only (the state space; any thread's show the same
		 * window), and with DIES, which has no hand-offs, none. ---- */
#ifndef DIES
		if
		:: me == 0 -> fair = true
		:: fair = false
		fi;
#endif
#if BROKEN != 13
		if
		:: fair -> goto twobit_unlock
		:: else
		fi;
#endif

		/* ---- the fast path of the unlock ---- */
#ifdef SHARED
		/* pl_bitlock_unlock: a load; a CAS that clears L if P is
		 * clear */
		s = state;
		if
		:: (s & (ML | MP)) == ML ->
			atomic {
				if
				:: state == s -> state = s & ~ML; ok = true
				:: else
				fi
			}
		:: else
		fi;
#else
		/* pl_mutex_unlock: CAS L -> 0 */
		atomic {
			if
			:: state == ML -> state = 0; ok = true
			:: else
			fi
		};
#endif
		if
		:: ok ->
			/* a fair unlock leaves no waiter of the lock queued
			 * behind a free lock */
			assert(!fair || nq[lk] == 0);
			ok = false;
			goto unlocked
		:: else
		fi;

		/* ---- pli_twobit_unlock ---- */
twobit_unlock:
		s = state;
uloop:
#ifndef NO_MISUSE_CHECK
		/* pli_fatal: "... is not locked" */
		assert(s & ML);
#endif
		if
		:: s & MP
#if BROKEN != 13
		:: fair
#endif
		:: else ->
			atomic {
				if
				:: state == s -> state = s & ~ML; ok = true
				:: else -> s = state
				fi
			};
			if
			:: ok ->
				assert(!fair || nq[lk] == 0);
				ok = false;
				goto unlocked
			:: else -> goto uloop
			fi
		fi;
		bucket_lock();
		/* atomic, not d_step: the choice of the waiter is free */
		atomic {
			w = NONE;
			more = false;
#if defined(SHARED) && BROKEN != 7
			/* pl_unpark_filter with unlock_filter: skip the other
			 * lock's waiters, unpark the first of ours, stop at
			 * the second (more: matches > 1). */
			k = 0;
			do
			:: k < qlen && ptok[q[k]] != ML -> k++
			:: k < qlen && ptok[q[k]] == ML && w == NONE ->
				w = q[k];
				k++
			:: k < qlen && ptok[q[k]] == ML && w != NONE ->
				more = true;
				break
			:: else -> break
			od;
			k = 0;
			if
			:: w != NONE -> q_remove(w)
			:: else
			fi;
#else
			/* A fair unlock, or the fairness timer due (free
			 * choices): pl_unpark_one or the timer's hand-off, the
			 * oldest waiter, handed the lock.  Else
			 * pli_unpark_one_away, pick_away: of the first SCAN
			 * waiters, the first that was passed over in its park
			 * or parked on another CPU than the unlocker's (a free
			 * choice), the ones before it passed over now; the
			 * oldest if none.  more is have_more.  (BROKEN=7: a bit
			 * lock doing so wakes whoever is first, and counts the
			 * other lock's waiters.  BROKEN=11: the choice ignores
			 * passed, as an unbounded preference would.) */
			if
#ifndef DIES
			:: qlen > 0 -> handoff = true; j = 0
#endif
			:: qlen > 0 && !fair ->
				j = 0;
				do
				:: j == SCAN || j == qlen -> j = 0; break
#if BROKEN == 11
				:: j < SCAN && j < qlen -> break
				:: j < SCAN && j < qlen -> j++
#else
				:: j < SCAN && j < qlen && passed[q[j]] -> break
				:: j < SCAN && j < qlen && !passed[q[j]] -> break
				:: j < SCAN && j < qlen && !passed[q[j]] -> j++
#endif
				od;
				k = 0;
				do
				:: k < j -> passed[q[k]] = true; k++
				:: else -> break
				od
			:: else
			fi;
			if
			:: qlen > 0 ->
				w = q[j];
				/* The waiters passed over: each at most once
				 * in a park. */
				k = 0;
				do
				:: k < j ->
					passes[q[k]]++;
					assert(passes[q[k]] <= 1);
					k++
				:: else -> break
				od;
				q_remove(w);
				more = qlen > 0
			:: else
			fi;
#endif
			if
			:: w != NONE ->
				nq[LOCK_OF(ptok[w])]--;
				/* Turns: no waiter of the lock still queued
				 * behind the one woken joined before it (and
				 * none is ahead, but for those passed over
				 * above). */
				k = j;
				do
				:: k < qlen ->
					assert(ptok[q[k]] != ptok[w] ||
					    turn[q[k]] > turn[w]);
					k++
				:: else -> break
				od;
				k = 0;
				j = 0;
				ptok[w] = 0
			:: else
			fi
		};
#ifdef SHARED
		/* unlock_callback: hand off when be_fair (the fairness timer
		 * expired) or fair (an unlock_fair): either may hold, or
		 * neither. */
		if
		:: w != NONE -> handoff = true
		:: w != NONE && !fair -> handoff = false
		:: else
		fi;
#endif
		if
		:: handoff ->
#if BROKEN == 4
			UNLOCK_CLEAR((more -> ML : ML | MP));
#elif BROKEN == 5
			UNLOCK_CLEAR(MP);
#else
			if
			:: !more -> UNLOCK_CLEAR(MP)
			:: else
			fi;
#endif
			token[w] = TOKEN_HANDOFF
		:: else ->
			/* Clear L and P, even with waiters left (more): the
			 * woken thread sets P again (TOKEN_REARM), and until
			 * it does, lockers take the fast paths without a
			 * wake-up each. */
			atomic {
				UNLOCK_CLEAR(ML | MP);
				if
				:: w != NONE && more ->
					token[w] = TOKEN_REARM;
					rearming[lk]++
				:: else
				fi
			}
		fi;
		if
		:: w != NONE ->
			queued[w] = false;
			bucket_unlock();
			/* wake(): exchange the word to 0, FUTEX_WAKE if it
			 * was 2 */
#ifdef NO_FUTEX
			futex[w] = 0
#else
			atomic { old = futex[w]; futex[w] = 0 };
			if
			:: old == 2 -> asleep[w] = false
			:: else
			fi
#endif
		:: else -> bucket_unlock()
		fi;
		d_step {
			w = 0; old = 0; more = false; handoff = false;
			fair = false
		};
unlocked:
#ifdef SHARED
		held = held & ~(1 << lk);
gave_up:
		/* Release what is still held: the other lock, or the first
		 * one when the lock of the second gave up (ETIMEDOUT). */
		atomic {
			again = false;
			turn[me] = 0;
			if
			:: held != 0 -> goto next_unlock
			:: else
			fi;
			s = 0;
			checked = false;
			lk = 0;
			want = 0
		}
#else
gave_up:
		atomic {
			again = false;
			turn[me] = 0;
			s = 0;
			checked = false
		}
#endif
	od;
#ifdef DIES
ended:
#endif
	finished++
}

#ifndef NO_INVARIANT
/* Checked in every state, for each lock k: mutual exclusion, and "while
 * a waiter of lock k is queued, Pk is set". */
#ifdef SHARED
#define INV_OK(k)                                                      \
	(incs[k] <= 1 &&                                               \
	    (nq[k] == 0 || (state & PBIT(k)) || rearming[k] > 0))
#define ALL_OK (INV_OK(0) && INV_OK(1))
#else
#define INV_OK(k)                                                      \
	(incs[k] <= 1 &&                                               \
	    (nq[k] == 0 || (state & PBIT(k)) || rearming[k] > 0))
#define ALL_OK INV_OK(0)
#endif
proctype Invariant()
{
end:
	atomic {
		!ALL_OK ->
			assert(incs[0] <= 1);
			assert(nq[0] == 0 || (state & PBIT(0)) ||
			    rearming[0] > 0);
#ifdef SHARED
			assert(incs[1] <= 1);
			assert(nq[1] == 0 || (state & PBIT(1)) ||
			    rearming[1] > 0)
#endif
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
	/* Everybody is done: no lock is held, nobody is left in the queue or
	 * holding the bucket. */
	assert(qlen == 0);
	assert(!blk);
#ifdef SHARED
	/* A P bit may stay set with nobody queued: a waiter of one lock that
	 * timed out behind a waiter of the other left it (was_last false). */
	assert((state & 5) == 0) /* L0 | L1 */
#else
	/* The mutex's byte is 0: no stale P. */
	assert(state == 0)
#endif
}
