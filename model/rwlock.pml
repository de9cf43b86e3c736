/* SPDX-License-Identifier: MIT */
/*
 * rwlock.pml: a Promela model of pl_rwlock_t's phase-fair protocol
 * (lib/rwlock.c, include/parkinglot/rwlock.h) on the parking lot
 * (lib/parkinglot.c), checked with spin for mutual exclusion, lost
 * wakeups, phase fairness and timed-out waiters leaving no trace.
 * `make check-model` runs model/check.sh, which verifies this model and
 * its BROKEN variants; see model/README for how to run it by hand.
 *
 * WHAT IS MODELLED, step by step as in the C code:
 *   - the word, with the bits of the header: WRITER 1, WPARKED 2,
 *     RPARKED 4, WWAIT 8, RWAIT 16 and the reader count in units of
 *     ONE = 32 (a byte holds 7 readers; the model has at most 3), and
 *     every CAS, fetch_and and store of lib/rwlock.c on it;
 *   - readers: the fast path (tryrdlock_raw: enter while MAY_ENTER), the
 *     slow path's loop (enter by CAS while MAY_ENTER; the RWAIT claim
 *     while a writer holds; a spin round, i.e. a reload; when done
 *     spinning, the drop of RWAIT if no reader is inside), pl_park on
 *     the reader key with rd_validate and rd_timed_out, the hand-off
 *     token (the count was added for us), a timeout (ETIMEDOUT);
 *     the unlock: the inline fast CAS (other readers remain, or no bit
 *     of WPARKED|RPARKED|RWAIT), the slow loop (the last reader out
 *     clears RWAIT; with WPARKED, pl_unpark_one on the writer key with
 *     rd_handoff_callback);
 *   - writers: the fast path (pl_rwlock_wrlock's CAS 0 -> WRITER; a timed
 *     lock uses trywrlock_raw instead), the slow path's loop (enter by
 *     CAS, clearing WWAIT; the WWAIT claim while readers hold, clearing
 *     RWAIT; a spin round; when done spinning, fetch_and ~WWAIT), pl_park
 *     on the writer key with wr_validate and wr_timed_out (which clears
 *     WPARKED when it was the last and says whether to let readers in),
 *     readers_enter(l, false) by a writer that timed out; the unlock:
 *     the fast CAS WRITER -> 0, the slow loop (RPARKED: readers_enter(l,
 *     true); else WPARKED: pl_unpark_one with wr_handoff_callback, a
 *     hand-off when be_fair; else CAS ~WRITER; and again if the waiters
 *     had all timed out);
 *   - pl_park, as in twobit.pml but for the sleep: the bucket lock,
 *     validate-then-enqueue under it, the wake word (0 not queued or
 *     woken, else queued), the timeout path (relock the bucket; if still
 *     queued, unlink, word to 0, timed_out(was_last), PL_PARK_TIMED_OUT;
 *     if a waker dequeued it meanwhile, wait untimed for the word to
 *     reach 0 and take the token); pl_unpark_one (the oldest waiter,
 *     have_more, be_fair a free choice, the callback, the token) and
 *     pl_unpark_filter with no filter (every waiter, the callback with
 *     their number, the token to each), and after the bucket unlock the
 *     wake of each (the word to 0);
 *   - two buckets, one per key (l and l + 1): that covers the keys
 *     sharing a bucket too, since no code path holds both locks and one
 *     lock for both only removes interleavings.
 *   NW writers (2) and NR readers (2) each take and release the lock
 *   ITER times (1); each attempt is timed or not, nondeterministically,
 *   and a timed park may time out whenever it is asleep.
 *   - -DDIES: writer 0 may end, once, anywhere in its sleep (cancelled
 *     asynchronously, or pthread_exit in a signal handler), and the
 *     lot's cleanup of a PLI_PARK_UNWOUND park runs: leave_queue (out of
 *     the queue with wr_timed_out(was_last) if still queued, else the
 *     wait for its wake word), then wr_unwound: readers let in as after
 *     a timeout; woken to compete, the lock taken and released through
 *     the unlock's slow path if a writer may enter, else the parked
 *     readers let in if no writer holds the lock.  The cleanup takes the
 *     bucket lock in the same step as the end, so hand-offs to the ended
 *     thread are left out: a lock handed to a thread that ends stays
 *     held, as the library documents, and the others would wait for
 *     good.  The readers' attempts are untimed in this case
 *     (the writers' may time out as usual), to keep it small: with
 *     every attempt timed it passes 34 M states.
 *
 * WHAT IS ABSTRACTED:
 *   - the bucket lock is an atomic test-and-set that blocks; there is no
 *     hashing, no growth, no other address in either bucket;
 *   - every CAS loop of lib/rwlock.c whose decisions depend only on the
 *     word (fast paths, validates, the unlock loops, the callbacks, the
 *     drop of RWAIT) is one atomic step: the loop's effect at the CAS
 *     that succeeds (or the load that decides to leave the loop);
 *     callbacks run in the same atomic step as the dequeue they follow,
 *     and validate in the same step as the enqueue: between them only
 *     the bucket lock's holder looks at the queue;
 *   - spinning (struct pli_spinner) is a free choice: at each look the
 *     thread may reload the word and look again, or stop and park; the
 *     claims (RWAIT after READER_CLAIM_ROUNDS, WWAIT after
 *     WRITER_CLAIM_ROUNDS) are free choices whenever their condition on
 *     the word holds.  That allows every count of rounds, more than the
 *     C code (bounded spins, claims as soon as the rounds are done);
 *   - a writer kept out by RWAIT alone (no holder, no WWAIT) can only
 *     spin and park in vain (wr_validate fails) until the word changes:
 *     the model blocks it until the word changes, which is exact and
 *     makes a claim that nobody ends an invalid end state instead of a
 *     livelock that a safety search would not see;
 *   - the sleep is a wait for the wake word to be 0 (or, timed, a
 *     timeout at any moment before): sleep_on's 1 -> 2 CAS and the
 *     FUTEX_WAIT/FUTEX_WAKE pairing are twobit.pml's to check;
 *   - memory is sequentially consistent; the acquire/release orderings
 *     are not checked here (ThreadSanitizer and the tests cover them);
 *   - every park joins its queue at the tail: a woken thread that parks
 *     again keeps its turn in the C code (PLI_PARK_AGAIN), which only
 *     reorders a queue, and no property here depends on the order of
 *     one (twobit.pml checks the turns);
 *   - trylock (the fast paths without the slow ones), the READERS_MAX
 *     abort, the misuse aborts (checked as assertions), statistics and
 *     clocks are not modelled; spurious futex wakeups other than late
 *     FUTEX_WAKEs, and EINTR, are not modelled (sleep_on loops anyway).
 *
 * PROPERTIES (checked in one safety run, with invalid end states):
 *   1. mutual exclusion: a writer inside is alone (assertions in the
 *      critical sections, and the monitor in every state);
 *   2. the parked bits match the queues (lib/rwlock.c's "under the bucket
 *      lock of a key, its bit is set exactly when its queue is
 *      non-empty"): in every state where a bucket is unlocked, WPARKED is
 *      set iff a writer is queued, RPARKED iff a reader is (the monitor;
 *      -DNO_BITS leaves it out);
 *   3. no lost wakeup: every thread ends, so a thread left asleep in a
 *      queue (or a writer kept out forever by a claim) while the others
 *      are done is an invalid end state; when all are done the word is 0
 *      (no stale bit or claim), both queues are empty and both bucket
 *      locks free;
 *   4. a writer waits for at most one reader phase: while a writer waits
 *      (one is queued on the writer key, or WWAIT is on the word), at most
 *      one reader phase (readers inside, from a count of 0) overlaps the
 *      wait before a writer gets the lock; a phase that is under way when
 *      the wait begins counts.  Checked at every change of the word or of
 *      the writer queue (fair(): the ghost rph; -DNO_FAIR leaves it out).
 *      Writers are not ordered among themselves (API.md), so it is a
 *      writer phase, not the waiting writer's own, that ends the count;
 *      and the wait is the one the word shows: a writer between dropping
 *      WWAIT and parking, with the lock free, is not waiting (it takes a
 *      free lock, or loses it to whoever came first);
 *   5. timed-out waiters leave no trace: 2 and 3 hold with timeouts
 *      everywhere (the queues hold nobody who left, the bits follow);
 *   6. readers first at a write release: when a writer's unlock passes
 *      the lock on (clears WRITER, or hands it to a writer), no reader is
 *      parked, unless it lets every parked reader in at that step
 *      (readers_enter): a reader that parked during the hold, also one
 *      that did so after the unlock looked at the word, enters before
 *      the next writer (-DNO_P6 leaves it out).
 *   -DARRIVAL adds the second half of API.md's statement: a reader that
 *   arrives while a writer waits (and no writer holds the lock) does not
 *   enter before a writer has had the lock (or the wait ended).  It
 *   verifies; with -DOLD_ENTRY (the entry rule before the fix: RWAIT let
 *   in every reader past a parked writer, not only those who had seen a
 *   writer's hold) spin finds a newcomer entering past a parked writer.
 *   Result (spin 6.5.2, -DSAFETY -DCOLLAPSE): see model/README.
 *
 * BROKEN VARIANTS: -DBROKEN=n changes one step of the protocol; check.sh
 * requires spin to find a counterexample for each:
 *   BROKEN=1  rd_validate parks without setting RPARKED: a writer's
 *             unlock takes the fast CAS and wakes nobody (invalid end
 *             state, with -DNO_BITS);
 *   BROKEN=2  wr_timed_out never lets the readers in: readers parked
 *             behind the last parked writer stay asleep when it times out
 *             (invalid end state, with -DNO_BITS);
 *   BROKEN=3  readers_enter_callback hands the lock to the readers even
 *             when a writer holds it (the departing writer's case):
 *             a reader beside a writer (assertion violated);
 *   BROKEN=4  READER_MAY_ENTER ignores WWAIT: readers start a second
 *             phase past a writer that spins for the first to end
 *             (assertion violated: rph <= 1);
 *   BROKEN=5  rd_timed_out leaves RPARKED set when the last reader times
 *             out: a trace of the timeout (assertion violated: the bits
 *             monitor, or the final word).
 *   BROKEN=6  the timeout rule before the fix: a writer that times out
 *             hands the lock to the parked readers although another
 *             writer claims it with WWAIT: a second reader phase while
 *             that writer waits (assertion violated: rph<=1).
  * BARGE: the reader entries of the drop-in's default pthread_rwlock_t
 *   (lib/pthread/rwlock.c).  An arriving reader may enter whenever no
 *   writer holds the lock, past waiting and parked writers (the C code
 *   does so only for a trylock or a thread that holds a read lock); and
 *   a reader whose timed park ended (the bounded step)
 *   enters the same way, or else waits again.  Phase fairness is given up
 *   (run with -DNO_FAIR); exclusion, the parked bits and the end state
 *   must still hold.  With it, -DBROKEN=7: the arriving reader enters
 *   whatever the word says; -DBROKEN=8: so does the reader after its
 *   step (both: a reader beside a writer).
 *   BROKEN=9  wr_handoff_callback hands the lock to the woken writer
 *             when be_fair, whatever RWAIT says (as before 2026-12-07):
 *             a writer gets the lock past the readers' claim, which the
 *             hand-off asserts it never does ("assertion violated
 *             (!(handoff)||!((state&16)))").
 *   BROKEN=12 wr_handoff_callback ignores RPARKED (as before 2026-12-07):
 *             a reader that parked after the unlock looked at the word
 *             waits through the woken writer's hold (assertion violated:
 *             property 6).
 *   BROKEN=10 (DIES) the writer that ends is only taken out of the queue
 *             (self_destroy before PLI_PARK_UNWOUND: no timed_out, no
 *             wr_unwound): woken to compete, it leaves the readers that
 *             parked during the hold asleep on a free lock (invalid end
 *             state, with -DNO_BITS; the final word may keep a parked
 *             bit, which that design allowed).
 *   BROKEN=11 (DIES) wr_unwound takes a free lock but does not let in
 *             the parked readers when readers hold it.  Not found within
 *             these bounds: since the unlock lets readers parked during a
 *             hold in first (property 6), the state needs a writer woken
 *             to compete by the last reader's unlock after the writers
 *             before it timed out, with three readers (one leaving, one
 *             inside, one parked); tests/test_exit.c stages it
 *             (exit::rwlock_writer_woken_to_compete_ends_and_lets_the_
 *             readers_in).  Before that fix spin found it at once, through
 *             the race property 6 closes.
 */

#ifndef NW
#define NW 2
#endif
#ifndef NR
#define NR 2
#endif
#ifndef ITER
#define ITER 1
#endif
#ifndef BROKEN
#define BROKEN 0
#endif
#define NT (NW + NR)

#define WRITER 1
#define WPARKED 2
#define RPARKED 4
#define WWAIT 8
#define RWAIT 16
#define ONE 32
#define READERS(s) ((s) & 224)
/* The fast path (a reader's first look): nobody holds or waits to
 * write.  The slow path: readers that saw a writer hold the lock during
 * this call (waited) may also enter past parked writers while RWAIT is
 * set, the claim of the readers who waited through that hold. */
#define MAY_ENTER_FRESH(s) (!((s) & (WRITER | WWAIT | WPARKED)))
#if BROKEN == 4
#define MAY_ENTER(s, waited) \
	(!((s) & WRITER) && (!((s) & WPARKED) || ((waited) && ((s) & RWAIT))))
#elif defined(OLD_ENTRY)
#define MAY_ENTER(s, waited) \
	(!((s) & (WRITER | WWAIT)) && (!((s) & WPARKED) || ((s) & RWAIT)))
#else
#define MAY_ENTER(s, waited) \
	(!((s) & (WRITER | WWAIT)) && \
	    (!((s) & WPARKED) || ((waited) && ((s) & RWAIT))))
#endif

#define TOKEN_DEFAULT 0
#define TOKEN_HANDOFF 1

/* pl_park results */
#define R_UNPARKED 0
#define R_INVALID 1
#define R_TIMED_OUT 2

byte state = 0;     /* the word */
bool rblk = false;  /* the reader key's bucket lock */
bool wblk = false;  /* the writer key's bucket lock */
byte wq[NW];        /* the writer key's queue, oldest first */
byte wqlen = 0;
byte rqm = 0;       /* the reader key's queue, as a set (bit per thread):
                     * readers are only ever woken all together, or leave
                     * one by one, so their order does not matter */
bool queued[NT];    /* struct waiter.queued */
bit futex[NT];      /* struct waiter.futex, the wake word: 0 or not */
bit token[NT];      /* struct waiter.unpark_token */
byte nw = 0;        /* writers in the critical section */
byte nr = 0;        /* readers in the critical section */
byte finished = 0;  /* threads that have done their ITER rounds */
#ifdef DIES
bool dead = false;  /* writer 0 has ended in its park */
#endif

/* Ghosts of property 4, updated by fair() at every change of the word or
 * of the writer queue: whether a writer was waiting, a writer held the
 * lock and readers were inside at the last change, and the reader phases
 * seen during the present wait since a writer last got in. */
#define WAITING (wqlen > 0 || (state & WWAIT))
byte rph = 0;
bool pw = false, win = false, rin = false;
#ifdef ARRIVAL
byte late = 0;      /* readers that arrived while a writer waited */
#endif

inline fair()
{
	skip;
#ifndef NO_FAIR
	if
	:: !WAITING -> rph = 0
	:: else ->
		if
		:: !pw -> rph = (READERS(state) > 0 -> 1 : 0)
		:: else ->
			if
			:: (state & WRITER) && !win -> rph = 0
			:: else
			fi;
			if
			:: READERS(state) > 0 && !rin -> rph++
			:: else
			fi
		fi
	fi;
	assert(rph <= 1);
	pw = WAITING;
	win = (state & WRITER) != 0;
	rin = READERS(state) > 0;
#endif
#ifdef ARRIVAL
	if
	:: !WAITING || (state & WRITER) -> late = 0
	:: else
	fi
#endif
}

/* A reader arrives (the first look of pl_rwlock_rdlock) and enters. */
inline arrive(x)
{
#ifdef ARRIVAL
	if
	:: WAITING && !(state & WRITER) -> late = late | (1 << x)
	:: else
	fi;
#endif
	skip
}

inline entered(x)
{
#ifdef ARRIVAL
	assert(!(late & (1 << x)));
#endif
	skip
}

inline bucket_lock(b)
{
	atomic { !b -> b = true }
}

/* Remove writer x from the writer queue, keeping the order (bucket
 * locked; used inside d_step). */
inline wq_remove(x)
{
	k = 0;
	do
	:: k < wqlen && wq[k] != x -> k++
	:: else -> break
	od;
	assert(k < wqlen);
	do
	:: k + 1 < wqlen -> wq[k] = wq[k + 1]; k++
	:: else -> break
	od;
	wq[wqlen - 1] = 0;
	wqlen--;
	k = 0
}

/* wake(): the wake word to 0 (and FUTEX_WAKE). */
inline wake(x)
{
	futex[x] = 0
}

/* pl_unpark_filter(reader_key(l), NULL, readers_enter_callback, {l, fw}):
 * got says whether any reader was woken. */
inline readers_enter(fw)
{
	bucket_lock(rblk);
	d_step {
		wl = rqm;
		rqm = 0;
		if
		:: wl != 0 ->
			/* readers_enter_callback */
#if BROKEN == 3
			handoff = true;
#elif BROKEN == 6
			handoff = fw || !(state & WRITER);
#else
			handoff = fw || !(state & (WRITER | WWAIT));
#endif
			n = state & ~RPARKED;
			if
			:: fw -> n = n & ~WRITER
			:: else
			fi;
			k = 0;
			do
			:: k < NT ->
				if
				:: wl & (1 << k) ->
					if
					:: handoff -> n = n + ONE; entered(k)
					:: else
					fi;
					/* release_waiter */
					token[k] = handoff;
					queued[k] = false
				:: else
				fi;
				k++
			:: else -> break
			od;
			k = 0;
			state = n;
			n = 0;
			fair()
		:: else
		fi;
		handoff = false
	};
	rblk = false;
	got = wl != 0;
	/* wake_list */
	do
	:: wl != 0 ->
		k = 0;
		do
		:: !(wl & (1 << k)) -> k++
		:: else -> break
		od;
		wl = wl & ~(1 << k);
		wake(k)
	:: else -> break
	od;
	k = 0
}

proctype Reader(byte me)
{
	byte round = 0;
	bool got, timed, may_time_out, brk, handoff, have_more, waited;
	byte s, n, res, k, w, wl;

	do
	:: round == ITER -> break
	:: round < ITER ->
		round++;
		waited = false;
#ifdef DIES
		timed = false; /* the timeouts: the other runs' */
#else
		if
		:: timed = true
		:: timed = false
		fi;
#endif

		/* ---- pl_rwlock_rdlock: tryrdlock_raw ---- */
		atomic {
			arrive(me);
			if
#if defined(BARGE) && BROKEN == 7
			:: true ->
#elif defined(BARGE)
			:: !(state & WRITER) ->
#elif defined(OLD_ENTRY)
			:: MAY_ENTER(state, true) ->
#else
			:: MAY_ENTER_FRESH(state) ->
#endif
				state = state + ONE;
				entered(me);
				fair();
				got = true
			:: else -> got = false
			fi
		};
		if
		:: got -> goto racq
		:: else
		fi;

		/* ---- pl__rwlock_rdlock_slow ---- */
		s = state;
rloop:
		if
		:: s & WRITER -> waited = true
		:: else
		fi;
		if
		:: MAY_ENTER(s, waited) ->
			atomic {
				if
				:: state == s ->
					state = s + ONE;
					entered(me);
					fair();
					got = true
				:: else -> s = state
				fi
			};
			if
			:: got -> goto racq
			:: else -> goto rloop
			fi
		:: else
		fi;
		/* A writer holds it: claim the next phase (once the claim
		 * rounds are done: a free choice here). */
		if
		:: (s & WRITER) && !(s & RWAIT) ->
			if
			:: atomic {
				if
				:: state == s -> state = s | RWAIT; fair()
				:: else
				fi;
				s = state
			   };
			   goto rloop
			:: skip
			fi
		:: else
		fi;
		/* a spin round, or done spinning */
		if
		:: s = state; goto rloop
		:: skip
		fi;
		/* Done spinning: drop RWAIT unless readers inside will. */
		if
		:: (s & RWAIT) && READERS(s) == 0 ->
			atomic {
				if
				:: READERS(state) == 0 && (state & RWAIT) ->
					state = state & ~RWAIT; fair()
				:: else
				fi
			}
		:: else
		fi;
		s = 0;

		/* ---- pl_park(reader_key, rd_validate, NULL, rd_timed_out) ---- */
		assert(futex[me] == 0 && !queued[me]);
		bucket_lock(rblk);
		d_step {
			/* rd_validate */
			if
			:: MAY_ENTER(state, waited) -> res = R_INVALID
			:: else ->
#if BROKEN != 1
				state = state | RPARKED;
				fair();
#endif
				token[me] = TOKEN_DEFAULT;
				queued[me] = true;
				futex[me] = 1;
				rqm = rqm | (1 << me);
				res = R_UNPARKED
			fi
		};
		rblk = false;
		if
		:: res == R_INVALID -> goto rparked
		:: else
		fi;
		may_time_out = timed;
rsleep:
		/* sleep_on: until the wake word is 0, or the deadline */
		if
		:: futex[me] == 0 -> goto rwoken
		:: may_time_out -> goto rtimeout
		fi;
rtimeout:
		bucket_lock(rblk);
		if
		:: queued[me] ->
			d_step {
				rqm = rqm & ~(1 << me);
				queued[me] = false;
				futex[me] = 0;
				/* rd_timed_out(was_last) */
#if BROKEN != 5
				if
				:: rqm == 0 -> state = state & ~RPARKED; fair()
				:: else
				fi
#endif
			};
			rblk = false;
			res = R_TIMED_OUT;
			goto rparked
		:: else ->
			/* dequeued by a waker that has not set the word yet */
			rblk = false;
			may_time_out = false;
			goto rsleep
		fi;
rwoken:
		res = R_UNPARKED;
rparked:
		may_time_out = false;
		if
		:: res == R_UNPARKED && token[me] == TOKEN_HANDOFF ->
			/* our count was added for us */
			token[me] = TOKEN_DEFAULT;
			res = 0;
			goto racq
		:: res == R_TIMED_OUT ->
			res = 0;
#ifdef BARGE
			/* the drop-in's bounded step ended: barge unless a
			 * writer holds the lock, else wait another step */
			atomic {
				if
#if BROKEN == 8
				:: true ->
#else
				:: !(state & WRITER) ->
#endif
					state = state + ONE;
					entered(me);
					fair();
					got = true
				:: else -> got = false
				fi
			};
			if
			:: got -> goto racq
			:: else -> s = state; goto rloop
			fi
#else
			goto rnext
#endif
		:: else ->
			res = 0;
			s = state;
			goto rloop
		fi;

racq:
		s = 0;
		got = false;
		/* ---- the critical section ---- */
		atomic { nr++; assert(nw == 0) };
		nr--;

		/* ---- pl_rwlock_rdunlock: the inline fast CAS ---- */
		atomic {
			if
			:: READERS(state) >= 2 * ONE ||
			   (READERS(state) == ONE &&
			    !(state & (WPARKED | RPARKED | RWAIT))) ->
				state = state - ONE; fair(); got = true
			:: else -> got = false
			fi
		};
		if
		:: got -> got = false; goto rnext
		:: else
		fi;
		/* pl__rwlock_rdunlock_slow */
		atomic {
			/* pli_fatal: "rwlock ... is not read-locked" */
			assert(READERS(state) != 0);
			if
			:: READERS(state) == ONE && (state & WPARKED) -> brk = true
			:: else ->
				/* the last reader out ends its phase's claim */
				state = (READERS(state) == ONE ->
				    (state - ONE) & ~RWAIT : state - ONE);
				fair();
				brk = false
			fi
		};
		if
		:: !brk -> goto rnext
		:: else -> brk = false
		fi;
		/* pl_unpark_one(writer_key, rd_handoff_callback) */
		bucket_lock(wblk);
		d_step {
			if
			:: wqlen > 0 ->
				w = wq[0];
				wq_remove(w);
				got = true;		/* r.unparked */
				have_more = wqlen > 0
			:: else -> got = false; have_more = false
			fi;
			/* rd_handoff_callback */
			handoff = got && READERS(state) == ONE;
			n = (READERS(state) == ONE ->
			    (state - ONE) & ~RWAIT : state - ONE);
			if
			:: handoff -> n = n | WRITER
			:: else
			fi;
			if
			:: got && !have_more -> n = n & ~WPARKED
			:: else
			fi;
			state = n;
			n = 0;
			fair();
			if
			:: got -> token[w] = handoff; queued[w] = false
			:: else
			fi;
			handoff = false;
			have_more = false
		};
		wblk = false;
		if
		:: got -> got = false; wake(w)
		:: else
		fi;
		w = 0;
rnext:
		timed = false
	od;
	finished++
}

proctype Writer(byte me)
{
	byte round = 0;
	bool got, timed, may_time_out, handoff, have_more, be_fair, let_in;
	bool rfirst;
	byte s, n, res, k, w, wl;

	do
	:: round == ITER -> break
	:: round < ITER ->
		round++;
		if
		:: timed = true
		:: timed = false
		fi;

		/* ---- fast path: pl_rwlock_wrlock's CAS 0 -> WRITER, or
		 * pl_rwlock_timedwrlock's trywrlock_raw ---- */
		atomic {
			if
			:: !timed ->
				if
				:: state == 0 -> state = WRITER; fair(); got = true
				:: else -> got = false
				fi
			:: else ->
				if
				:: !(state & (WRITER | RWAIT)) &&
				   READERS(state) == 0 ->
					state = (state | WRITER) & ~WWAIT;
					fair();
					got = true
				:: else -> got = false
				fi
			fi
		};
		if
		:: got -> goto wacq
		:: else
		fi;

		/* ---- pl__rwlock_wrlock_slow ---- */
		s = state;
wloop:
		if
		:: !(s & (WRITER | RWAIT)) && READERS(s) == 0 ->
			atomic {
				if
				:: state == s ->
					state = (s | WRITER) & ~WWAIT;
					fair();
					got = true
				:: else -> s = state
				fi
			};
			if
			:: got -> goto wacq
			:: else -> goto wloop
			fi
		:: !(s & WRITER) && READERS(s) == 0 && (s & RWAIT) &&
		   !(s & WWAIT) ->
			/* Only the readers' claim keeps us out: we spin, and
			 * park in vain (wr_validate fails), until the word
			 * changes. */
			atomic { state != s -> s = state };
			goto wloop
		:: else
		fi;
		/* Readers inside: claim the next phase (a free choice). */
		if
		:: READERS(s) > 0 && !(s & (WRITER | WWAIT)) ->
			if
			:: atomic {
				if
				:: state == s ->
					state = (s | WWAIT) & ~RWAIT; fair()
				:: else
				fi;
				s = state
			   };
			   goto wloop
			:: skip
			fi
		:: else
		fi;
		/* a spin round, or done spinning */
		if
		:: s = state; goto wloop
		:: skip
		fi;
		/* Done spinning: WPARKED takes over from WWAIT. */
		if
		:: s & WWAIT -> atomic { state = state & ~WWAIT; fair() }
		:: else
		fi;
		s = 0;

		/* ---- pl_park(writer_key, wr_validate, NULL, wr_timed_out) ---- */
		assert(futex[me] == 0 && !queued[me]);
		bucket_lock(wblk);
		d_step {
			/* wr_validate */
			if
			:: !(state & WRITER) && READERS(state) == 0 ->
				res = R_INVALID
			:: else ->
				state = state | WPARKED;
				token[me] = TOKEN_DEFAULT;
				queued[me] = true;
				futex[me] = 1;
				wq[wqlen] = me;
				wqlen++;
				fair();
				res = R_UNPARKED
			fi
		};
		wblk = false;
		if
		:: res == R_INVALID -> goto wparked
		:: else
		fi;
		may_time_out = timed;
wsleep:
		/* sleep_on: until the wake word is 0, or the deadline; with
		 * DIES, writer 0 may end here, once, and its cleanup takes
		 * the bucket lock at once: hand-offs to it are left out, as
		 * a lock handed to a thread that ends stays held (and the
		 * others would wait for good) */
		if
		:: futex[me] == 0 -> goto wwoken
		:: may_time_out -> goto wtimeout
#ifdef DIES
		:: atomic { me == 0 && !dead && !wblk &&
		       (queued[me] || token[me] == TOKEN_DEFAULT) ->
			dead = true; wblk = true }; goto wdied
#endif
		fi;
wtimeout:
		bucket_lock(wblk);
		if
		:: queued[me] ->
			d_step {
				wq_remove(me);
				queued[me] = false;
				futex[me] = 0;
				/* wr_timed_out(was_last) */
				if
				:: wqlen == 0 ->
#if BROKEN != 2
					let_in = (state & RPARKED) &&
					    !(state & WRITER);
#endif
					state = state & ~WPARKED
				:: else
				fi;
				fair()
			};
			wblk = false;
			res = R_TIMED_OUT;
			goto wparked
		:: else ->
			wblk = false;
			may_time_out = false;
			goto wsleep
		fi;
#ifdef DIES
wdied:
		/* park_cancelled: leave_queue, as for a timeout but untimed,
		 * with wr_timed_out (the frame is still there); then
		 * wr_unwound.  BROKEN=10: self_destroy's leave_queue alone,
		 * as before PLI_PARK_UNWOUND (no timed_out, no unwound). */
		round = ITER; /* it does nothing more after this */
		may_time_out = false;
		/* the bucket lock, taken as it ended */
		if
		:: queued[me] ->
			d_step {
				wq_remove(me);
				queued[me] = false;
				futex[me] = 0;
#if BROKEN != 10
				if
				:: wqlen == 0 ->
					let_in = (state & RPARKED) &&
					    !(state & WRITER);
					state = state & ~WPARKED
				:: else
				fi;
#endif
				fair()
			};
			wblk = false;
			res = R_TIMED_OUT
		:: else ->
			wblk = false;
			futex[me] == 0; /* the waker's wake */
			res = R_UNPARKED
		fi;
#if BROKEN == 10
		res = 0;
		goto wnext;
#else
		/* wr_unwound */
		if
		:: res == R_TIMED_OUT ->
			res = 0;
			if
			:: let_in -> let_in = false; readers_enter(false); got = false
			:: else
			fi;
			goto wnext
		:: else ->
			res = 0;
			assert(token[me] == TOKEN_DEFAULT);
			/* the lock free: take it and release it; readers
			 * parked and no writer holding: let them in, as the
			 * last writer's timeout does (BROKEN=11: not);
			 * else the holder's unlock sees the parked bits */
			atomic {
				if
				:: !(state & (WRITER | RWAIT)) &&
				   READERS(state) == 0 ->
					state = (state | WRITER) & ~WWAIT;
					fair();
					got = true
				:: else ->
					got = false;
#if BROKEN != 11
					let_in = (state & RPARKED) &&
					    !(state & WRITER)
#endif
				fi
			};
			if
			:: got -> got = false; s = state; goto wuloop
			:: let_in -> let_in = false; readers_enter(false); got = false; goto wnext
			:: else -> goto wnext
			fi
		fi;
#endif
#endif
wwoken:
		res = R_UNPARKED;
wparked:
		may_time_out = false;
		if
		:: res == R_UNPARKED && token[me] == TOKEN_HANDOFF ->
			/* WRITER was set for us */
			token[me] = TOKEN_DEFAULT;
			res = 0;
			goto wacq
		:: res == R_TIMED_OUT ->
			res = 0;
			if
			:: let_in -> let_in = false; readers_enter(false); got = false
			:: else
			fi;
			goto wnext
		:: else ->
			res = 0;
			s = state;
			goto wloop
		fi;

wacq:
		s = 0;
		got = false;
		/* ---- the critical section ---- */
		atomic { nw++; assert(nw == 1 && nr == 0) };
		nw--;

		/* ---- pl_rwlock_wrunlock: the fast CAS WRITER -> 0 ---- */
		atomic {
			if
			:: state == WRITER -> state = 0; fair(); got = true
			:: else -> got = false
			fi
		};
		if
		:: got -> got = false; goto wnext
		:: else
		fi;
		/* pl__rwlock_wrunlock_slow */
		s = state;
wuloop:
		/* pli_fatal: "rwlock ... is not write-locked" */
		assert(s & WRITER);
		if
		:: s & RPARKED ->
			/* phase change: every parked reader enters now */
			readers_enter(true);
			if
			:: got -> got = false; goto wnext
			:: else
			fi
		:: !(s & RPARKED) && (s & WPARKED) ->
			/* pl_unpark_one(writer_key, wr_handoff_callback) */
			bucket_lock(wblk);
			if
			:: be_fair = true
			:: be_fair = false
			fi;
			d_step {
				if
				:: wqlen > 0 ->
					w = wq[0];
					wq_remove(w);
					got = true;
					have_more = wqlen > 0;
					/* wr_handoff_callback: readers parked
					 * since the unlock looked go first:
					 * the lock stays ours, the woken
					 * writer competes (BROKEN=12: as
					 * before 2026-12-07, not) */
#if BROKEN == 12
					rfirst = false;
#else
					rfirst = (state & RPARKED) != 0;
#endif
					/* a hand-off only while no reader
					 * claims the next phase (BROKEN=9:
					 * whatever RWAIT says) */
#if BROKEN == 9
					handoff = !rfirst && be_fair;
#else
					handoff = !rfirst && be_fair &&
					    !(state & RWAIT);
#endif
					/* RWAIT: no writer gets the lock
					 * before the claiming readers have */
					assert(!handoff || !(state & RWAIT));
					/* property 6: the lock passes on at a
					 * write release only with no reader
					 * parked */
#ifndef NO_P6
					assert(rfirst || rqm == 0);
#endif
					n = (handoff || rfirst -> state :
					    state & ~WRITER);
					if
					:: !have_more -> n = n & ~WPARKED
					:: else
					fi;
					state = n;
					n = 0;
					token[w] = handoff;
					queued[w] = false
				:: else -> got = false
				fi;
				fair();
				handoff = false;
				have_more = false;
				be_fair = false
			};
			wblk = false;
			if
			:: got && rfirst ->
				/* the readers, on the next round */
				got = false; rfirst = false; wake(w); w = 0
			:: got && !rfirst -> got = false; wake(w); w = 0; goto wnext
			:: else
			fi
		:: else ->
			atomic {
				if
				:: state == s ->
#ifndef NO_P6
					assert(rqm == 0); /* property 6 */
#endif
					state = s & ~WRITER; fair(); got = true
				:: else
				fi
			};
			if
			:: got -> got = false; goto wnext
			:: else
			fi
		fi;
		/* the waiters had all timed out: look again */
		s = state;
		goto wuloop;
wnext:
		s = 0;
		timed = false
	od;
	finished++
}

/* Checked in every state: mutual exclusion, and the parked bits match the
 * queues whenever their bucket is unlocked. */
#define EXCL (nw <= 1 && (nw == 0 || nr == 0))
#define WBITS (wblk || ((state & WPARKED) != 0) == (wqlen > 0))
#define RBITS (rblk || ((state & RPARKED) != 0) == (rqm != 0))
proctype Monitor()
{
end:
#ifdef NO_BITS
	atomic { !EXCL -> assert(EXCL) }
#else
	atomic {
		!(EXCL && WBITS && RBITS) ->
			assert(EXCL);
			assert(WBITS);
			assert(RBITS)
	}
#endif
}

init
{
	byte i;
	atomic {
		run Monitor();
		i = 0;
		do
		:: i < NW -> run Writer(i); i++
		:: i >= NW && i < NT -> run Reader(i); i++
		:: else -> break
		od
	};
	finished == NT;
	/* Everybody is done: the word is 0 (no stale parked bit or claim),
	 * nobody is queued, the buckets are free. */
#if BROKEN == 10
	/* the old design left a parked bit over an empty queue, by design:
	 * only the hang counts against it */
	assert((state & ~(WPARKED | RPARKED)) == 0);
#else
	assert(state == 0);
#endif
	assert(wqlen == 0 && rqm == 0);
	assert(!rblk && !wblk)
}
