/* SPDX-License-Identifier: MIT */
/*
 * pl_mutex_t slow paths: contended lock, timed lock, unlock with waiters,
 * fair unlock.  The fast paths are inline in include/parkinglot/mutex.h.
 *
 * The byte (LOCKED = 1, PARKED = 2):
 *
 *     PARKED LOCKED
 *       0      0    unlocked, nobody waiting
 *       0      1    locked, nobody parked
 *       1      0    unlocked, threads parked (a woken thread is on its way)
 *       1      1    locked, threads parked
 *
 * Transitions, and who makes them:
 *   LOCKED 0 -> 1   any locker, by CAS, when a load showed it clear (fast
 *                   path; slow path, spinning or woken).  PARKED is kept.
 *   LOCKED 1 -> 0   the holder: fast unlock CAS 01 -> 00 when PARKED is
 *                   clear, else inside pl_unpark_one's callback.
 *   PARKED 0 -> 1   a thread about to park, in pl_park's validate callback
 *                   (bucket of m locked), and only while LOCKED is set.
 *   PARKED 1 -> 0   with the bucket of m locked, when its queue is empty:
 *                   the unlock callback (have_more false), or the
 *                   timed_out callback of the last waiter to leave.
 *   (A condition variable's requeue also sets PARKED, under the lock of
 *   the mutex's bucket, when it moves threads onto m.)
 *
 * Invariant: while any thread is queued on m, PARKED is set.  It holds
 * because the bit is set in the same bucket critical section that queues
 * the thread, and cleared only in a critical section that saw the queue
 * empty.
 *
 * Why no wakeup is lost: a waiter parks only if, with the bucket locked,
 * it saw LOCKED set and made sure PARKED is set.  The holder's unlock
 * either
 *   - succeeds with the fast CAS 01 -> 00: then PARKED was clear, so no
 *     thread was queued, and any thread that validates later sees LOCKED
 *     clear and retries instead of sleeping; or
 *   - fails the CAS because PARKED is set: it calls pl_unpark_one, which
 *     takes the same bucket lock, so it runs wholly before or wholly after
 *     each waiter's validate-and-enqueue.  Before: the waiter's validate
 *     sees the state the callback stored (LOCKED clear, or the lock handed
 *     to another thread who will unlock it again and repeat this).  After:
 *     the waiter is in the queue and is either woken or, when others
 *     remain, stays behind a PARKED bit that the next unlock honours.
 * A woken thread that loses the race to a barging thread parks again,
 * which is the price of barging; the fairness timer bounds it.
 *
 * Hand-off: when pl_unpark_one reports be_fair (or for unlock_fair), the
 * callback leaves LOCKED set and gives the woken thread the token
 * PL_UNPARK_TOKEN_HANDOFF: it returns from its lock call as the owner, and
 * nobody can barge in between.
 *
 * A timed lock whose deadline has already passed tries the lock once and
 * fails: spinning, then parking only to time out at once, would cost tens
 * of microseconds for the same answer.  It reads the clock once, and only
 * when that try failed; calls without a deadline never read it.
 */
#include <errno.h>

#include <parkinglot/core.h>
#include <parkinglot/mutex.h>

#include "internal.h"

#define LOCKED PL_MUTEX_LOCKED
#define PARKED PL_MUTEX_PARKED

void
pl_mutex_init(pl_mutex_t *m)
{
	__atomic_store_n(&m->state, 0, __ATOMIC_RELAXED);
}

/* validate: park only while the lock is held, and set PARKED so that its
 * holder's unlock takes the slow path and finds us. */
static bool
lock_validate(void *ctx)
{
	pl_mutex_t *m = ctx;
	unsigned char s = __atomic_load_n(&m->state, __ATOMIC_RELAXED);
	for (;;) {
		if (!(s & LOCKED))
			return false;
		if (s & PARKED)
			return true;
		if (__atomic_compare_exchange_n(&m->state, &s,
		        (unsigned char)(s | PARKED), false, __ATOMIC_RELAXED,
		        __ATOMIC_RELAXED))
			return true;
	}
}

/* timed_out: the last waiter to leave clears PARKED (bucket locked, so no
 * thread can be queueing meanwhile). */
static void
lock_timed_out(void *ctx, const void *addr, bool was_last)
{
	(void)addr;
	if (was_last)
		__atomic_fetch_and((unsigned char *)&((pl_mutex_t *)ctx)->state,
		    (unsigned char)~PARKED, __ATOMIC_RELAXED);
}

static int
lock_slow(pl_mutex_t *m, const struct timespec *deadline)
{
	struct pli_spinner sp;
	pli_spinner_init(&sp);
	unsigned char s = __atomic_load_n(&m->state, __ATOMIC_RELAXED);

	for (;;) {
		/* Test and test-and-set: CAS only when the load says free. */
		if (!(s & LOCKED)) {
			if (__atomic_compare_exchange_n(&m->state, &s,
			        (unsigned char)(s | LOCKED), true,
			        __ATOMIC_ACQUIRE, __ATOMIC_RELAXED)) {
				pli_spinner_acquired(&sp);
				return 0;
			}
			continue;
		}
		/* Spin only while nobody is parked. */
		if (!(s & PARKED) && pli_spin(&sp)) {
			s = __atomic_load_n(&m->state, __ATOMIC_RELAXED);
			continue;
		}
		pli_spinner_park(&sp);
		pl_park_result_t r = pl_park(
		    m, lock_validate, NULL, lock_timed_out, m, 0, deadline);
		if (r.status == PL_PARK_UNPARKED &&
		    r.token == PL_UNPARK_TOKEN_HANDOFF)
			return 0; /* handed to us: LOCKED was kept for us */
		if (r.status == PL_PARK_TIMED_OUT)
			return ETIMEDOUT;
		/* Woken to compete, or the lock changed before we slept. */
		s = __atomic_load_n(&m->state, __ATOMIC_RELAXED);
	}
}

void
pl__mutex_lock_slow(pl_mutex_t *m)
{
	lock_slow(m, NULL);
}

int
pl_mutex_timedlock(pl_mutex_t *m, const struct timespec *deadline)
{
	if (!pli_deadline_valid(deadline))
		return EINVAL;
	PL_TSAN_PRE_LOCK(m, PL_TSAN_TRY);
	int rc = 0;
	if (!pl__mutex_trylock_raw(m))
		PL__DIVERTED(m,
		    rc = deadline && pli_deadline_passed(deadline)
		        ? ETIMEDOUT
		        : lock_slow(m, deadline));
	PL_TSAN_POST_LOCK(
	    m, rc ? PL_TSAN_TRY | PL_TSAN_TRY_FAILED : PL_TSAN_TRY);
	return rc;
}

struct unlock_ctx {
	pl_mutex_t *m;
	bool fair;
};

/* Runs with m's bucket locked, so no thread can set or clear PARKED and,
 * since we hold the lock, none can set LOCKED: plain stores suffice. */
static uintptr_t
unlock_callback(pl_unpark_result_t r, void *ctx)
{
	struct unlock_ctx *c = ctx;
	if (r.unparked && (r.be_fair || c->fair)) {
		/* Hand off: LOCKED stays set for the woken thread. */
		if (!r.have_more)
			__atomic_store_n(
			    &c->m->state, LOCKED, __ATOMIC_RELAXED);
		return PL_UNPARK_TOKEN_HANDOFF;
	}
	__atomic_store_n(
	    &c->m->state, r.have_more ? PARKED : 0, __ATOMIC_RELEASE);
	return PL_UNPARK_TOKEN_DEFAULT;
}

void
pl__mutex_unlock_slow(pl_mutex_t *m, bool fair)
{
	unsigned char s = __atomic_load_n(&m->state, __ATOMIC_RELAXED);
	for (;;) {
		if (!(s & LOCKED))
			pli_fatal("%s: mutex %p is not locked",
			    fair ? "pl_mutex_unlock_fair" : "pl_mutex_unlock",
			    (void *)m);
		if (s & PARKED)
			break;
		/* A waiter set PARKED between our CAS and here, or this is
		 * unlock_fair with nobody parked. */
		if (__atomic_compare_exchange_n(&m->state, &s, 0, true,
		        __ATOMIC_RELEASE, __ATOMIC_RELAXED))
			return;
	}
	struct unlock_ctx c = { m, fair };
	pl_unpark_one(m, unlock_callback, &c);
}

void
pl_mutex_unlock_fair(pl_mutex_t *m)
{
	unsigned char s = __atomic_load_n(&m->state, __ATOMIC_RELAXED);
	if (!(s & LOCKED)) /* misuse: reported before TSan's annotation */
		pl__mutex_unlock_slow(m, true);
	PL_TSAN_PRE_UNLOCK(m, 0);
	if (s != LOCKED ||
	    !__atomic_compare_exchange_n(
	        &m->state, &s, 0, false, __ATOMIC_RELEASE, __ATOMIC_RELAXED))
		PL__DIVERTED(m, pl__mutex_unlock_slow(m, true));
	PL_TSAN_POST_UNLOCK(m, 0);
}
