/* SPDX-License-Identifier: MIT */
/*
 * The two-bit lock algorithm, after WebKit's LockAlgorithm: the contended
 * lock, the timed lock and the unlock with waiters of every lock whose
 * state is two bits of a word, L (locked) and P (parked).  pl_mutex_t is
 * L = PL_MUTEX_LOCKED, P = PL_MUTEX_PARKED of its byte (lib/mutex.c); a
 * bit lock is two bits its caller picks in a byte or word whose other bits
 * the caller owns (lib/bitlock.c).  The fast paths are inline in the
 * public headers.  model/twobit.pml checks this algorithm.
 *
 *     P L
 *     0 0    unlocked, nobody waiting (or a woken thread has yet to
 *            re-arm: see "Re-arm" below)
 *     0 1    locked, nobody parked (or, the same, a re-arm pending)
 *     1 0    unlocked, threads parked (a woken thread is on its way, or
 *            a woken thread has set P again: see "Re-arm" below)
 *     1 1    locked, threads parked
 *
 * Transitions, and who makes them:
 *   L 0 -> 1   any locker, by CAS, when a load showed L clear (fast path;
 *              slow path, spinning or woken).  P is kept.
 *   L 1 -> 0   the holder: by CAS when P is clear, else inside the unpark
 *              callback (with the bucket of the word locked).
 *   P 0 -> 1   a thread about to park, in pl_park's validate (bucket
 *              locked), and only while L is set.  (A condition variable's
 *              requeue also sets a mutex's P, under the lock of the
 *              mutex's bucket, when it moves threads onto it.)  And a
 *              thread woken with PLI_TOKEN_REARM, by an atomic or, before
 *              it competes for the lock again (no bucket lock).
 *   P 1 -> 0   with the bucket locked: the unlock callback (always, when
 *              it woke a thread without a hand-off; else when no waiter
 *              of this lock is left queued), or the timed_out callback of
 *              the last waiter to leave the word's queue.
 * Every change is an atomic read-modify-write of L or P alone (CAS from a
 * value just loaded, or fetch_and): bits other threads change meanwhile,
 * the caller's or another lock's, are carried over, never lost.
 *
 * Invariant: while any waiter of the lock is queued, P is set, or a
 * thread woken with PLI_TOKEN_REARM has yet to set it again.  It holds
 * because P is set in the bucket critical section that queues the waiter,
 * and cleared only in one that saw no waiter of the lock queued, or that
 * woke a thread and gave it PLI_TOKEN_REARM.  (P may also be set with
 * nobody queued: after a fork, after a waiter's thread ended in pl_park,
 * when a shared word's last waiter of this lock timed out behind another
 * lock's, or when a re-arming thread's fellow waiters have left.  Such a
 * P only sends the next unlock to the slow path, which finds nobody and
 * clears it.)
 *
 * Re-arm.  An unlock that wakes a waiter to compete (no hand-off) clears
 * L and P even when other waiters stay queued, and tells the woken thread
 * so with the token PLI_TOKEN_REARM; that thread sets P again before it
 * competes (pli_twobit_rearm; a condition waiter woken on a mutex's queue
 * does it in pli_mutex_lock_woken).  Between the wake and the
 * re-arm, which is at least a wake-up latency (5 to 80 us here), lockers
 * take and release the lock on the fast paths: one wake-up is in flight
 * at a time, as with glibc's futex mutex, whose woken thread takes the
 * lock as "contended" again.  Keeping P set instead (as WebKit's
 * LockAlgorithm does) makes every unlock wake another waiter while the
 * queue is long, each wake a system call and often a context switch:
 * with 1024 threads on 2 cores (lockbench W8) that was 10 to 100 times
 * glibc's cost per operation.  The woken thread re-arms whatever it then
 * finds, lock free or held: if it took the lock without P, its fast
 * unlock would wake nobody and the waiters left queued would sleep on
 * (model/twobit.pml, BROKEN=1 and 8).
 *
 * Why no wakeup is lost: a waiter parks only if, with the bucket locked,
 * it saw L set and made sure P is set.  The holder's unlock either
 *   - clears L with a CAS while P is clear: then no waiter of the lock
 *     was queued, and one that validates later sees L clear and retries
 *     instead of sleeping; or
 *   - sees P set and unparks, which takes the same bucket lock, so it runs
 *     wholly before or wholly after each waiter's validate-and-enqueue.
 *     Before: the waiter's validate sees the state the callback stored
 *     (L clear, or the lock handed to another thread, who will unlock it
 *     and repeat this).  After: the waiter is queued and is either woken
 *     or, when another waiter of the lock remains, stays behind a P bit
 *     that the next unlock honours, or behind a woken thread that will
 *     set P before it takes the lock or parks: the holder after it sees P
 *     and wakes the next.
 *
 * Turns.  A woken thread that loses the race to a barging thread parks
 * again at its turn (PLI_PARK_AGAIN; lib/parkinglot.c, "Turns"): ahead of
 * the waiters that parked after it, normally at the head, so the next
 * unlock that wakes a waiter wakes it again.  Its place in the queue
 * never goes back, and the first unlock to find the fairness timer
 * expired hands the lock to the waiter that has been queued longest.
 * (At the tail, as WebKit's LockAlgorithm and Rust's parking_lot re-park
 * it, a thread that keeps losing goes round the queue again each time,
 * and the hand-off goes to whoever is at the head then.)
 *
 * Threads that end in a park (cancelled asynchronously, or pthread_exit
 * in a signal handler: lib/parkinglot.c, self_destroy).  The park is no
 * cancellation point, but the lot tells lock_unwound (PLI_PARK_UNWOUND)
 * while the lock's frame is still there: a thread still queued leaves
 * the queue as on a timeout (the last clears P); one woken with a
 * hand-off keeps the lock, as a lock held by a thread that ended stays
 * locked; one woken with PLI_TOKEN_REARM does at once what it would have
 * done, set P and, if the lock is free, take it and release it, which
 * wakes the next.  If the lock is held, P makes its holder's unlock wake
 * the next.  Without that, the waiters behind it slept on with P clear
 * while others took and released the lock on the fast paths, for as long
 * as nobody else contended (tests/test_exit.c, exit::rearm_*).  A thread
 * that ends after the park has returned, before its re-arm, is not
 * covered: it is not sleeping, and the library's calls are not
 * async-cancel-safe.
 *
 * Which waiters are the lock's.  A pl_mutex_t owns its address: every
 * waiter there is its own, whatever the token (a condition variable moves
 * its waiters onto the mutex with their own tokens), so the unlock wakes
 * with pli_unpark_one_away, whose have_more tells whether P stays: the
 * oldest, or, when the oldest parked on the unlocker's CPU, one of the
 * next three that parked on another, so that the woken thread need not
 * wait for the unlocker's thread to stop while the other CPU has nothing
 * to run (a waiter is passed over so at most once in a park:
 * lib/parkinglot.c, "Passing over").  A fair unlock wakes the oldest
 * with pl_unpark_one, and so does the fairness timer's hand-off.
 * A bit lock shares its word with the caller's other bit locks: waiters
 * park with L as token, and the unlock walks the queue with
 * pl_unpark_filter, waking the first waiter whose token is L and stopping
 * at a second one, which tells the callback whether P stays (the queue's
 * have_more counts the other locks' waiters too).  Distinct locks of a
 * word have distinct L bits, so tokens never collide.
 *
 * Hand-off: when the unpark reports be_fair (or for a fair unlock), the
 * callback leaves L set and gives the woken thread the token
 * PL_UNPARK_TOKEN_HANDOFF: it returns from its lock call as the owner, and
 * nobody can barge in between.  A fair unlock goes through the queue even
 * when P is clear, which the Re-arm window allows with waiters queued;
 * finding nobody, it clears L in the callback.
 *
 * Deadlines: a lock whose first try fails reads the clock once, if it has
 * a deadline, and gives up at once if that has passed (spinning, then
 * parking only to time out at once, would cost tens of microseconds for
 * the same answer); otherwise pl_park keeps the deadline.  A timed-out
 * waiter that was the last on the word clears P (timed_out, bucket
 * locked).  Calls without a deadline never read the clock.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <inttypes.h>
#include <sched.h>

#include <parkinglot/core.h>

#include "platform.h"
#include "events.h"
#include "lot.h"
#include "spin.h"
#include "twobit.h"

static inline uintptr_t
load(const struct pli_twobit *l)
{
	if (l->size == 1)
		return __atomic_load_n(
		    (unsigned char *)l->word, __ATOMIC_RELAXED);
	return __atomic_load_n((uintptr_t *)l->word, __ATOMIC_RELAXED);
}

/* Weak CAS of the whole word from *old to nv, with the given ordering on
 * success; on failure *old gets the current value.  One function per
 * ordering, so that each builtin sees a constant. */
#define DEFINE_CAS(name, order)                                                \
	static inline bool name(                                               \
	    const struct pli_twobit *l, uintptr_t *old, uintptr_t nv)          \
	{                                                                      \
		if (l->size == 1) {                                            \
			unsigned char o = (unsigned char)*old;                 \
			bool ok = __atomic_compare_exchange_n(                 \
			    (unsigned char *)l->word, &o, (unsigned char)nv,   \
			    true, order, __ATOMIC_RELAXED);                    \
			*old = o;                                              \
			return ok;                                             \
		}                                                              \
		return __atomic_compare_exchange_n((uintptr_t *)l->word, old,  \
		    nv, true, order, __ATOMIC_RELAXED);                        \
	}
DEFINE_CAS(cas_acquire, __ATOMIC_ACQUIRE)
DEFINE_CAS(cas_release, __ATOMIC_RELEASE)
DEFINE_CAS(cas_relaxed, __ATOMIC_RELAXED)

/* Clear mask in the word, keeping every other bit (release ordering). */
static inline void
clear_bits(const struct pli_twobit *l, uintptr_t mask)
{
	if (l->size == 1)
		__atomic_fetch_and((unsigned char *)l->word,
		    (unsigned char)~mask, __ATOMIC_RELEASE);
	else
		__atomic_fetch_and(
		    (uintptr_t *)l->word, ~mask, __ATOMIC_RELEASE);
}

/* validate: park only while the lock is held, and set P so that its
 * holder's unlock takes the slow path and finds us. */
static bool
lock_validate(void *ctx)
{
	const struct pli_twobit *l = ctx;
	uintptr_t s = load(l);
	for (;;) {
		if (!(s & l->locked))
			return false;
		if (s & l->parked)
			return true;
		if (cas_relaxed(l, &s, s | l->parked))
			return true;
	}
}

/* timed_out: the last waiter to leave the word's queue clears P (bucket
 * locked, so nobody can be queueing meanwhile). */
static void
lock_timed_out(void *ctx, const void *addr, bool was_last)
{
	(void)addr;
	if (was_last)
		clear_bits(ctx, ((const struct pli_twobit *)ctx)->parked);
}

/* cancelled, for the park of a thread that ends in it (PLI_PARK_UNWOUND:
 * cancelled asynchronously, or pthread_exit in a signal handler; see
 * "Threads that end in a park" above). */
static void
lock_unwound(void *ctx, pl_park_result_t r)
{
	const struct pli_twobit *l = ctx;
	if (r.status != PL_PARK_UNPARKED || r.token != PLI_TOKEN_REARM)
		return;
	pli_twobit_rearm(l);
	uintptr_t s = load(l);
	while (!(s & l->locked)) {
		if (cas_acquire(l, &s, s | l->locked)) {
			pli_twobit_unlock(l, false, "pl_mutex_lock");
			return;
		}
	}
}

/* again: 0, or PLI_PARK_AGAIN for a thread already woken from the lock's
 * queue (it keeps its turn there when it parks again). */
static int
lock_slow(const struct pli_twobit *l, clockid_t clock,
    const struct timespec *deadline, unsigned again)
{
	struct pli_spinner sp;
	pli_spinner_init(&sp, l->word);
	pli_event_contended(
	    l->word, l->shared ? PLI_KIND_PL_BITLOCK : PLI_KIND_PL_MUTEX);
	bool checked = deadline == NULL;
	uintptr_t s = load(l);

	for (;;) {
		/* Test and test-and-set: CAS only when the load says free.
		 * A failed CAS (the lock, or any other bit, changed) reloads
		 * s and looks again. */
		if (!(s & l->locked)) {
			if (cas_acquire(l, &s, s | l->locked)) {
				pli_spinner_acquired(&sp);
				return 0;
			}
			continue;
		}
		if (!checked) {
			checked = true;
			if (pli_deadline_passed(clock, deadline))
				return ETIMEDOUT;
		}
		/* Spin only while nobody is parked. */
		if (!(s & l->parked) && pli_spin(&sp)) {
			s = load(l);
			continue;
		}
		pli_spinner_park(&sp);
		pl_park_result_t r = pli_park(
		    (l->shared ? PLI_KIND_PL_BITLOCK : PLI_KIND_PL_MUTEX) |
		        again | PLI_PARK_UNWOUND,
		    l->word, lock_validate, NULL, lock_timed_out, (void *)l,
		    l->shared ? l->locked : 0, clock, deadline, lock_unwound);
		if (r.status == PL_PARK_UNPARKED) {
			if (r.token == PL_UNPARK_TOKEN_HANDOFF)
				return 0; /* handed to us: L was kept for us */
			if (r.token == PLI_TOKEN_REARM)
				pli_twobit_rearm(l);
			again = PLI_PARK_AGAIN;
		}
		if (r.status == PL_PARK_TIMED_OUT)
			return ETIMEDOUT;
		/* Woken to compete, or the lock changed before we slept. */
		s = load(l);
	}
}

int
pli_twobit_lock(const struct pli_twobit *l, clockid_t clock,
    const struct timespec *deadline)
{
	return lock_slow(l, clock, deadline, 0);
}

void
pli_twobit_lock_woken(const struct pli_twobit *l)
{
	lock_slow(l, CLOCK_MONOTONIC, NULL, PLI_PARK_AGAIN);
}

struct unlock_ctx {
	const struct pli_twobit *l;
	bool fair;
	unsigned matches; /* shared: waiters of l seen, 0, 1 or 2 (stop) */
};

/* Wake the first waiter of this lock; skip the other locks' waiters; stop
 * at a second waiter of this lock, which is all the callback needs. */
static pl_filter_op_t
unlock_filter(uintptr_t park_token, void *ctx)
{
	struct unlock_ctx *c = ctx;
	if (park_token != c->l->locked)
		return PL_FILTER_SKIP;
	return c->matches++ == 0 ? PL_FILTER_UNPARK : PL_FILTER_STOP;
}

/* Bucket locked, so no waiter of the lock can set or clear P meanwhile,
 * and we hold it, so nobody sets L; other bits may change. */
static uintptr_t
unlock_callback(pl_unpark_result_t r, void *ctx)
{
	struct unlock_ctx *c = ctx;
	const struct pli_twobit *l = c->l;
	bool more = l->shared ? c->matches > 1 : r.have_more;
	if (r.unparked && (r.be_fair || c->fair)) {
		/* Hand off: L stays set for the woken thread. */
		if (!more)
			clear_bits(l, l->parked);
		return PL_UNPARK_TOKEN_HANDOFF;
	}
	clear_bits(l, l->locked | l->parked);
	return r.unparked && more ? PLI_TOKEN_REARM : PL_UNPARK_TOKEN_DEFAULT;
}

void
pli_twobit_unlock(const struct pli_twobit *l, bool fair, const char *name)
{
	uintptr_t s = load(l);
	for (;;) {
		if (!(s & l->locked)) {
			if (l->shared)
				pli_fatal("%s: bit lock %p (bit 0x%" PRIxPTR
				          ") is not locked",
				    name, l->word, l->locked);
			pli_fatal("%s: mutex %p is not locked", name, l->word);
		}
		/* A fair unlock always looks in the queue: P may be clear
		 * with waiters queued, while a thread woken to compete has
		 * yet to re-arm. */
		if ((s & l->parked) || fair)
			break;
		/* Nobody parked: the fast path's CAS failed because another
		 * bit changed under it (or a waiter came and went). */
		if (cas_release(l, &s, s & ~l->locked))
			return;
	}
	struct unlock_ctx c = { l, fair, 0 };
	if (l->shared)
		pl_unpark_filter(l->word, unlock_filter, unlock_callback, &c);
	else if (fair)
		pl_unpark_one(l->word, unlock_callback, &c);
	else
		pli_unpark_one_away(
		    l->word, sched_getcpu(), unlock_callback, &c);
}
