/* SPDX-License-Identifier: MIT */
/*
 * pl_cond_t: a one-byte condition variable that requeues onto its mutex,
 * built on the public parking-lot API only.
 *
 * The byte: PL_COND_WAITERS (1) when threads may be parked on the
 * condition variable's address, else 0.  It is written only with the
 * bucket of c locked: set by a waiter's validate (in the same critical
 * section that queues it), cleared by the signal or broadcast callback when
 * the queue is left empty, and by the timed_out callback of the last
 * waiter to leave.  So while a thread is queued on c the byte is set, and
 * a signal that loads 0 may return at once: any waiter it could miss was
 * not yet queued, hence still held the mutex when the signaller changed
 * the predicate (POSIX's rule that the predicate changes under the mutex).
 *
 * Each waiter parks on c with its mutex's address as park token, and
 * unlocks the mutex in before_sleep, once it is queued: a signaller that
 * takes the mutex afterwards finds it in the queue.  Signal and broadcast
 * read the mutex from the waiters' tokens (pl_unpark_filter, which also
 * lets broadcast detect two mutexes in use at once), then call
 * pl_unpark_requeue(c, m), which locks both buckets:
 *
 *   - if m is held, PARKED is set on m (a CAS that requires LOCKED, so the
 *     holder's unlock is forced onto its slow path and serializes with
 *     us on m's bucket) and the waiters are moved onto m without waking
 *     any: the holder's unlock wakes the first, each later unlock the
 *     next.  Nobody is woken only to block on the mutex again.
 *   - if m is free, the oldest waiter is woken (it then locks m) and, for
 *     broadcast, the rest are moved onto m with PARKED set: the woken
 *     thread's unlock wakes the next.
 *
 * A waiter woken from m's queue may receive the mutex directly
 * (PL_UNPARK_TOKEN_HANDOFF, from a fair unlock); otherwise it locks m
 * itself.  A waiter whose deadline passes leaves whichever queue it is on
 * (c's, or m's after a requeue) and clears that object's bit if it was the
 * last there, then locks m: a timed wait always returns with m held.
 */
#include <errno.h>

#include <parkinglot/cond.h>
#include <parkinglot/core.h>
#include <parkinglot/mutex.h>

#include "internal.h"

void
pl_cond_init(pl_cond_t *c)
{
	__atomic_store_n(&c->state, 0, __ATOMIC_RELAXED);
}

struct wait_ctx {
	pl_cond_t *c;
	pl_mutex_t *m;
};

static bool
wait_validate(void *ctx)
{
	struct wait_ctx *w = ctx;
	__atomic_store_n(&w->c->state, PL_COND_WAITERS, __ATOMIC_RELAXED);
	return true;
}

static void
wait_before_sleep(void *ctx)
{
	pl_mutex_unlock(((struct wait_ctx *)ctx)->m);
}

static void
wait_timed_out(void *ctx, const void *addr, bool was_last)
{
	struct wait_ctx *w = ctx;
	if (!was_last)
		return;
	if (addr == (const void *)w->c)
		__atomic_store_n(&w->c->state, 0, __ATOMIC_RELAXED);
	else /* moved onto the mutex, and the last one there */
		__atomic_fetch_and(&w->m->state, (unsigned char)~PL_MUTEX_PARKED,
		    __ATOMIC_RELAXED);
}

int
pl_cond_timedwait(pl_cond_t *c, pl_mutex_t *m, const struct timespec *deadline)
{
	if (!pli_deadline_valid(deadline))
		return EINVAL;
	struct wait_ctx w = { c, m };
	pl_park_result_t r = pl_park(c, wait_validate, wait_before_sleep,
	    wait_timed_out, &w, (uintptr_t)m, deadline);
	if (r.status == PL_PARK_UNPARKED &&
	    r.token == PL_UNPARK_TOKEN_HANDOFF) {
		/* An unlock of m handed it to us: a lock all the same. */
		PL_TSAN_PRE_LOCK(m, 0);
		PL_TSAN_POST_LOCK(m, 0);
		return 0;
	}
	pl_mutex_lock(m);
	return r.status == PL_PARK_TIMED_OUT ? ETIMEDOUT : 0;
}

void
pl_cond_wait(pl_cond_t *c, pl_mutex_t *m)
{
	pl_cond_timedwait(c, m, NULL);
}

/* The mutexes of c's waiters: the first one's, and any other seen. */
struct scan {
	uintptr_t first, other;
	size_t n;
	bool all;
};

static pl_filter_op_t
scan_filter(uintptr_t token, void *ctx)
{
	struct scan *s = ctx;
	if (s->n++ == 0)
		s->first = token;
	else if (token != s->first && s->other == 0)
		s->other = token;
	return s->all ? PL_FILTER_SKIP : PL_FILTER_STOP;
}

/* Find the mutex of c's waiters; NULL when nobody waits. */
static pl_mutex_t *
waiters_mutex(pl_cond_t *c, bool all, const char *func)
{
	struct scan s = { 0, 0, 0, all };
	pl_unpark_filter(c, scan_filter, NULL, &s);
	if (s.other)
		pli_fatal("%s: condition variable %p used with mutexes %p and "
		          "%p at once",
		    func, (void *)c, (void *)s.first, (void *)s.other);
	return (pl_mutex_t *)s.first;
}

struct wake_ctx {
	pl_cond_t *c;
	pl_mutex_t *m;
	pl_requeue_op_t if_free; /* the operation when m is not held */
	pl_requeue_op_t if_held; /* ... and when it is */
};

/* Both buckets locked.  If m is held, make sure PARKED is set while it is
 * (a CAS that needs LOCKED), so that its holder's unlock takes the slow
 * path, which must lock m's bucket and so sees whatever we move there. */
static pl_requeue_op_t
wake_validate(void *ctx)
{
	struct wake_ctx *w = ctx;
	unsigned char s = __atomic_load_n(&w->m->state, __ATOMIC_RELAXED);
	while (s & PL_MUTEX_LOCKED) {
		if ((s & PL_MUTEX_PARKED) ||
		    __atomic_compare_exchange_n(&w->m->state, &s,
		        (unsigned char)(s | PL_MUTEX_PARKED), false,
		        __ATOMIC_RELAXED, __ATOMIC_RELAXED))
			return w->if_held;
	}
	return w->if_free;
}

static uintptr_t
wake_callback(pl_requeue_op_t op, pl_unpark_result_t r, void *ctx)
{
	struct wake_ctx *w = ctx;
	if (!r.have_more)
		__atomic_store_n(&w->c->state, 0, __ATOMIC_RELAXED);
	/* m free: the woken thread will lock m, and its unlock must find
	 * those moved behind it. */
	if (op == w->if_free && r.requeued)
		__atomic_fetch_or(&w->m->state, PL_MUTEX_PARKED,
		    __ATOMIC_RELAXED);
	return PL_UNPARK_TOKEN_DEFAULT;
}

bool
pl__cond_signal_slow(pl_cond_t *c)
{
	pl_mutex_t *m = waiters_mutex(c, false, "pl_cond_signal");
	if (m == NULL)
		return false;
	struct wake_ctx w = { c, m, PL_REQUEUE_ONE, PL_REQUEUE_REQUEUE_ONE };
	pl_unpark_result_t r = pl_unpark_requeue(c, m, wake_validate,
	    wake_callback, &w);
	return r.unparked + r.requeued != 0;
}

size_t
pl__cond_broadcast_slow(pl_cond_t *c)
{
	pl_mutex_t *m = waiters_mutex(c, true, "pl_cond_broadcast");
	if (m == NULL)
		return 0;
	struct wake_ctx w = { c, m, PL_REQUEUE_ONE_REQUEUE_REST,
		PL_REQUEUE_REQUEUE_ALL };
	pl_unpark_result_t r = pl_unpark_requeue(c, m, wake_validate,
	    wake_callback, &w);
	return r.unparked + r.requeued;
}
