/* SPDX-License-Identifier: MIT */
/*
 * pl_cond_t: a one-byte condition variable that requeues onto its mutex,
 * built on the public parking-lot API only.
 *
 * The byte: PL_COND_WAITERS (1) when threads may be parked on the
 * condition variable's address, else 0.  It is written only with the
 * bucket of c locked: set by a waiter's validate (in the same critical
 * section that queues it), cleared by a signal or broadcast that leaves the
 * queue empty or finds it empty, and by the timed_out callback of the last
 * waiter to leave.  So while a thread is queued on c the byte is set, and
 * a signal that loads 0 may return at once: any waiter it could miss was
 * not yet queued, hence still held the mutex when the signaller changed
 * the predicate (POSIX's rule that the predicate changes under the mutex).
 *
 * Each waiter parks on c with its mutex's address as park token, and
 * unlocks the mutex in before_sleep, once it is queued: a signaller that
 * takes the mutex afterwards finds it in the queue.
 *
 * Which mutex.  A signaller does not know the waiters' mutex, and may not
 * touch any mutex that no waiter uses at that moment: once the waiters of
 * a mutex m1 have all left (woken, timed out), POSIX lets a new waiter use
 * c with m2, and m1 be destroyed or its memory reused.  So the decision is
 * made where the queue cannot change: signal and broadcast read a guess m
 * from the oldest waiter's token (pl_unpark_filter), then call
 * pl_unpark_requeue_token(c, m), which locks both buckets and shows
 * wake_validate the token of the waiter now at the head:
 *
 *   - queue empty: clear the byte, touch nothing else, done;
 *   - head's token is not m (the waiters seen have left, others came with
 *     another mutex): abort, and try again with the token seen;
 *   - head's token is m: a thread is queued on c with m, so m is alive
 *     (that thread will lock it again before it returns), and only threads
 *     with token m are woken or moved:
 *       - if m is held, PARKED is set on m (a CAS that requires LOCKED,
 *         so the holder's unlock is forced onto its slow path and
 *         serializes with us on m's bucket) and the waiters are moved
 *         onto m without waking any: the holder's unlock wakes the first,
 *         each later unlock the next.  Nobody is woken only to block on
 *         the mutex again.
 *       - if m is free, the oldest waiter is woken (it then locks m) and,
 *         for broadcast, the rest are moved onto m with PARKED set: the
 *         woken thread's unlock wakes the next.
 * A waiter therefore only ever reaches the queue of its own mutex, and m
 * is written only while one of its waiters is parked.
 * Waiters of several locks at once, which POSIX leaves undefined and
 * glibc tolerates, are taken a lock at a time: a broadcast makes one such
 * round per lock (wake, below), so every waiter still reaches only its
 * own mutex.
 *
 * Other locks.  A waiter of pl_cond_clockwait_any holds a lock the
 * library does not know: it parks with the token ANY_LOCK (1, the
 * address of no pl_mutex_t), releases the lock with the caller's unlock
 * in before_sleep, as a mutex waiter does its mutex, and takes it back
 * with the caller's relock.  Such a waiter is woken, never moved: when
 * the head's token is ANY_LOCK, a signal wakes the head and a broadcast
 * every ANY_LOCK waiter, in one pl_unpark_filter under c's bucket lock,
 * which also clears the byte when the queue is left empty (wake_any).
 * The guess works as above: a head with another token sends the loop
 * to the requeue, and wake_validate sends a head with ANY_LOCK back.  No
 * lock byte is touched for these waiters at all; the argument for the
 * byte is the mutex waiters'.
 *
 * Why no wakeup is lost.  A signal that finds the byte set runs the
 * requeue until it has acted on the head waiter or seen the queue empty,
 * both under c's bucket lock; a retry happens only when the head changed
 * meanwhile, i.e. when other threads made progress.  Moved waiters keep
 * mutex m's invariant (PARKED set while anybody is queued on m: set before
 * the move, under m's bucket lock), so lib/mutex.c's argument covers them
 * from then on.  model/cond.pml checks this protocol, and that a variant
 * which decides the mutex outside the bucket locks is wrong.
 *
 * Return values.  A waiter woken from m's queue may receive the mutex
 * directly (PL_UNPARK_TOKEN_HANDOFF, from a fair unlock); otherwise it
 * locks m itself.  Once a signal or broadcast has taken a waiter off c,
 * the wait has succeeded: it returns 0 whatever its deadline, which
 * bounded only the wait for the signal (as in glibc).  A waiter moved onto
 * m whose deadline passes there (pl_park reports the timeout with m's
 * address) leaves m's queue, clears m's PARKED bit if it was the last
 * there, and locks m again without a deadline.  A waiter whose deadline
 * passes on c leaves it, clears the byte if it was the last, locks m and
 * returns ETIMEDOUT.  A deadline already past at the call returns
 * ETIMEDOUT at once, m still held and never released.
 *
 * Cancellation (pl_cond_clockwait only).  The park is a cancellation
 * point (pl_park_until).  A waiter cancelled while still queued on c
 * leaves it as on a timeout (the byte cleared if it was the last); one
 * that a signal or broadcast had already taken off c (woken, or moved
 * onto m, which it leaves as on a timeout there) passes the signal on
 * with pl_cond_signal, since it will not use it: a broadcast is thus
 * followed by a signal more, which is harmless, and a signal always
 * reaches a waiter that returns, if one is left.  Either way it locks m
 * again (unless m was handed to it) before its cleanup handlers run.  A
 * waiter off c may no longer be "blocked on c" for POSIX, which lets c be
 * destroyed then: so the pass-on looks for c's waiters in the lot, by
 * address, and writes c only when it finds one (whose wait keeps c
 * alive); with none queued it touches nothing.
 */
#include <errno.h>
#include <pthread.h>

#include <parkinglot/cond.h>
#include <parkinglot/core.h>
#include <parkinglot/mutex.h>

#include "platform.h"
#include "lot.h"
#include "twobit.h"

void
pl_cond_init(pl_cond_t *c)
{
	__atomic_store_n(&c->state, 0, __ATOMIC_RELAXED);
}

/* The park token of a waiter whose lock is not a pl_mutex_t
 * (pl_cond_clockwait_any): no pl_mutex_t lives at address 1. */
#define ANY_LOCK ((uintptr_t)1)

/* m, or, when m is NULL, a lock of another kind: lock, with the caller's
 * unlock and relock. */
struct wait_ctx {
	pl_cond_t *c;
	pl_mutex_t *m;
	void *lock;
	void (*unlock)(void *lock);
	int (*relock)(void *lock);
	int relocked;  /* relock's result */
	bool on_mutex; /* timed out after a signal had moved us onto m */
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
	struct wait_ctx *w = ctx;
	if (w->m)
		pl_mutex_unlock(w->m);
	else
		w->unlock(w->lock);
}

/* Bucket of addr locked.  addr is c, or our own mutex if a signal moved
 * us there (only threads whose token is m are moved onto m). */
static void
wait_timed_out(void *ctx, const void *addr, bool was_last)
{
	struct wait_ctx *w = ctx;
	if (addr != (const void *)w->c)
		w->on_mutex = true;
	if (!was_last)
		return;
	if (!w->on_mutex)
		__atomic_store_n(&w->c->state, 0, __ATOMIC_RELAXED);
	else
		__atomic_fetch_and(&((pl_mutex_t *)addr)->state,
		    (unsigned char)~PL_MUTEX_PARKED, __ATOMIC_RELAXED);
}

static pl_unpark_result_t wake(pl_cond_t *c, bool all, bool pass_on);

/* Lock m again after the wait.  A waiter that an unlock of m handed it to
 * (PL_UNPARK_TOKEN_HANDOFF) holds it already.  One that an unlock of m
 * woke from m's queue with PLI_TOKEN_REARM (a signal had moved it there,
 * and others stay queued with P clear: lib/twobit.c) sets P again and,
 * should it lose m to a barging thread, parks at its turn in m's queue
 * (pli_mutex_lock_woken).  Any other waiter locks m as any thread does:
 * woken from c, it never was in m's queue; and a token without the
 * re-arm left nobody queued on m behind it.  A lock of another kind is
 * taken back by its relock, whose result the wait returns. */
static void
take_back(struct wait_ctx *w, pl_park_result_t r)
{
	bool woken = r.status == PL_PARK_UNPARKED;
	if (!w->m) {
		w->relocked = w->relock(w->lock);
	} else if (woken && r.token == PL_UNPARK_TOKEN_HANDOFF) {
		/* An unlock of m handed it to us: a lock all the same. */
		PL_TSAN_PRE_LOCK(w->m, 0);
		PL_TSAN_POST_LOCK(w->m, 0);
	} else if (woken && r.token == PLI_TOKEN_REARM) {
		pli_mutex_lock_woken(w->m);
	} else {
		pl_mutex_lock(w->m);
	}
}

/* Cancelled in pl_cond_clockwait's park (no lock held): hold m again
 * before the cleanup handlers run, and pass on the signal if one took us
 * off c (woken, or moved onto m's queue): it was meant for a waiter that
 * will return, and another may be waiting for it.  The waiters of c are
 * found in the lot, by address: c itself is written only if one is
 * queued there, and then c is alive (see the top of the file). */
static void
wait_cancelled(void *ctx, pl_park_result_t r)
{
	struct wait_ctx *w = ctx;
	if (r.status == PL_PARK_UNPARKED || w->on_mutex)
		wake(w->c, false, true);
	take_back(w, r);
}

static int
wait_until(struct wait_ctx *w, clockid_t clock, const struct timespec *deadline,
    bool cancellable)
{
	if (!pli_deadline_valid(deadline) || !pli_clock_valid(clock))
		return EINVAL;
	if (cancellable)
		pthread_testcancel();
	if (deadline && pli_deadline_passed(clock, deadline))
		return ETIMEDOUT; /* nothing to wait for: m stays held */
	pl_park_result_t r =
	    pli_park(PLI_KIND_PL_COND, w->c, wait_validate, wait_before_sleep,
	        wait_timed_out, w, w->m ? (uintptr_t)w->m : ANY_LOCK, clock,
	        deadline, cancellable ? wait_cancelled : NULL);
	take_back(w, r);
	if (w->relocked)
		return w->relocked;
	return r.status == PL_PARK_TIMED_OUT && !w->on_mutex ? ETIMEDOUT : 0;
}

int
pl_cond_timedwait(pl_cond_t *c, pl_mutex_t *m, const struct timespec *deadline)
{
	struct wait_ctx w = { .c = c, .m = m };
	return wait_until(&w, CLOCK_MONOTONIC, deadline, false);
}

int
pl_cond_clockwait(pl_cond_t *c, pl_mutex_t *m, clockid_t clock,
    const struct timespec *deadline)
{
	struct wait_ctx w = { .c = c, .m = m };
	return wait_until(&w, clock, deadline, true);
}

void
pl_cond_wait(pl_cond_t *c, pl_mutex_t *m)
{
	struct wait_ctx w = { .c = c, .m = m };
	wait_until(&w, CLOCK_MONOTONIC, NULL, false);
}

int
pl_cond_clockwait_any(pl_cond_t *c, void *lock, void (*unlock)(void *lock),
    int (*relock)(void *lock), clockid_t clock, const struct timespec *deadline)
{
	struct wait_ctx w = {
		.c = c, .lock = lock, .unlock = unlock, .relock = relock
	};
	return wait_until(&w, clock, deadline, true);
}

/* A guess at the mutex of c's waiters: the oldest one's token, 0 when
 * nobody waits.  For a broadcast, also how many wait. */
struct scan {
	uintptr_t first;
	size_t n;
	bool all;
};

static pl_filter_op_t
scan_filter(uintptr_t token, void *ctx)
{
	struct scan *s = ctx;
	if (s->n++ == 0)
		s->first = token;
	return s->all ? PL_FILTER_SKIP : PL_FILTER_STOP;
}

static uintptr_t
waiters_mutex(pl_cond_t *c, bool all, size_t *n)
{
	struct scan s = { 0, 0, all };
	pl_unpark_filter(c, scan_filter, NULL, &s);
	*n = s.n;
	return s.first;
}

struct wake_ctx {
	pl_cond_t *c;
	pl_mutex_t *m;           /* the guess; checked by wake_validate */
	pl_requeue_op_t if_free; /* the operation when m is not held */
	pl_requeue_op_t if_held; /* ... and when it is */
	uintptr_t seen;          /* on a wrong guess: the head's token */
	bool mixed;              /* broadcast left threads of other locks */
	bool pass_on;            /* a cancelled waiter's: c may be gone */
};

/* Both buckets locked.  Act only if the head waiter uses the mutex we
 * guessed (then m is alive).  If m is held, make sure PARKED is set while
 * it is (a CAS that needs LOCKED), so that its holder's unlock takes the
 * slow path, which must lock m's bucket and so sees whatever we move
 * there. */
static pl_requeue_op_t
wake_validate(const pl_requeue_head_t *h, void *ctx)
{
	struct wake_ctx *w = ctx;
	if (h->queued == 0) {
		if (!w->pass_on)
			__atomic_store_n(&w->c->state, 0, __ATOMIC_RELAXED);
		return PL_REQUEUE_ABORT;
	}
	if (h->head_token != (uintptr_t)w->m) {
		w->seen = h->head_token;
		return PL_REQUEUE_ABORT;
	}
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
	else if (op == PL_REQUEUE_ONE_REQUEUE_REST ||
	    op == PL_REQUEUE_REQUEUE_ALL)
		w->mixed = true; /* all of m's went: the rest use others */
	/* m free: the woken thread will lock m, and its unlock must find
	 * those moved behind it. */
	if (op == w->if_free && r.requeued)
		__atomic_fetch_or(
		    &w->m->state, PL_MUTEX_PARKED, __ATOMIC_RELAXED);
	return PL_UNPARK_TOKEN_DEFAULT;
}

/*
 * The waiters of pl_cond_clockwait_any (token ANY_LOCK) are woken, never
 * moved: their lock is not a pl_mutex_t.  A signal wakes the head if its
 * token is ANY_LOCK, a broadcast every such waiter, in one walk of c's
 * queue under its bucket lock.  If the head has another token (the
 * waiters seen before have left, others came with a mutex), nothing is
 * woken and seen says which mutex to try.  The byte is cleared as by
 * wake_callback: when the queue is left empty, or was found empty (not
 * for a pass-on, which may not write c then).
 */
struct any_ctx {
	pl_cond_t *c;
	bool all, pass_on;
	bool taken;     /* a waiter was picked */
	bool mixed;     /* a broadcast passed a mutex's waiter */
	uintptr_t seen; /* the head's token when it is a mutex's */
};

static pl_filter_op_t
any_filter(uintptr_t token, void *ctx)
{
	struct any_ctx *a = ctx;
	if (token != ANY_LOCK) {
		if (!a->taken) {
			a->seen = token;
			return PL_FILTER_STOP;
		}
		a->mixed = true;
		return a->all ? PL_FILTER_SKIP : PL_FILTER_STOP;
	}
	if (a->taken && !a->all)
		return PL_FILTER_STOP;
	a->taken = true;
	return PL_FILTER_UNPARK;
}

static uintptr_t
any_callback(pl_unpark_result_t r, void *ctx)
{
	struct any_ctx *a = ctx;
	if (!r.have_more && (r.unparked || !a->pass_on))
		__atomic_store_n(&a->c->state, 0, __ATOMIC_RELAXED);
	return PL_UNPARK_TOKEN_DEFAULT;
}

/* Returns the token to try next: 0 when done, or when a broadcast woke
 * every ANY_LOCK waiter and left mutexes' waiters (*mixed). */
static uintptr_t
wake_any(
    pl_cond_t *c, bool all, bool pass_on, pl_unpark_result_t *r, bool *mixed)
{
	struct any_ctx a = { c, all, pass_on, false, false, 0 };
	*r = pl_unpark_filter(c, any_filter, any_callback, &a);
	*mixed = a.mixed && all;
	return a.seen;
}

/*
 * Signal (one) or broadcast (all): guess, check under the bucket locks,
 * and guess again from what the check saw until it holds.
 *
 * Several locks at once.  POSIX binds c to one mutex while threads wait
 * on it; glibc does not rely on it, and neither does this.  A round acts
 * on the waiters of the head's lock only, so a broadcast that leaves
 * waiters of other locks (mixed) starts another round, with a new guess.
 * Each round that acts takes the head off c, and c's queue is FIFO, so
 * n rounds, n being the waiters the first scan counted, have taken off
 * every thread that was waiting when the broadcast began: the loop ends
 * even while new waiters keep arriving.  Signal has one round: the
 * oldest waiter, whatever its lock.
 */
static pl_unpark_result_t
wake(pl_cond_t *c, bool all, bool pass_on)
{
	pl_unpark_result_t r, sum = { 0, 0, false, false };
	size_t rounds;
	uintptr_t m = waiters_mutex(c, all, &rounds);
	while (m) {
		bool mixed;
		if (m == ANY_LOCK) {
			m = wake_any(c, all, pass_on, &r, &mixed);
		} else {
			struct wake_ctx w = { c, (pl_mutex_t *)m,
				all ? PL_REQUEUE_ONE_REQUEUE_REST
				    : PL_REQUEUE_ONE,
				all ? PL_REQUEUE_REQUEUE_ALL
				    : PL_REQUEUE_REQUEUE_ONE,
				0, false, pass_on };
			r = pl_unpark_requeue_token(c, (const void *)m,
			    wake_validate, wake_callback, &w);
			m = w.seen;
			mixed = w.mixed;
		}
		sum.unparked += r.unparked;
		sum.requeued += r.requeued;
		if (mixed && --rounds > 0)
			m = waiters_mutex(c, false, &(size_t){ 0 });
	}
	return sum;
}

PLI_COLD bool
pl__cond_signal_slow(pl_cond_t *c)
{
	pl_unpark_result_t r = wake(c, false, false);
	return r.unparked + r.requeued != 0;
}

PLI_COLD size_t
pl__cond_broadcast_slow(pl_cond_t *c)
{
	pl_unpark_result_t r = wake(c, true, false);
	return r.unparked + r.requeued;
}
