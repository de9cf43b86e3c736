/* SPDX-License-Identifier: MIT */
/*
 * pl_once_t slow path: claim the once and run its function, or wait for
 * the thread that runs it.  The fast path ("already done") is inline in
 * include/parkinglot/once.h.
 *
 * The byte (RUNNING = 1, DONE = 2, PARKED = 4):
 *
 *     0                  new: nobody has claimed it
 *     RUNNING            claimed; its function is running, nobody parked
 *     RUNNING | PARKED   claimed, and threads are parked on the byte
 *     DONE               the function has returned; never changes again
 *
 * Transitions, and who makes them:
 *   0 -> RUNNING         the one caller whose CAS wins; it then runs fn.
 *   RUNNING -> | PARKED  a thread about to park, in pl_park's validate
 *                        callback (bucket of o locked), by CAS, and only
 *                        while RUNNING is set.
 *   RUNNING[|PARKED] -> DONE
 *                        the runner, after fn returned, by one exchange
 *                        (release); if the old value had PARKED, it then
 *                        wakes every thread parked on o.
 * PARKED is never cleared: DONE replaces the whole byte, and DONE is
 * final, so the fast path compares with DONE alone.
 *
 * Invariant: while any thread is parked on o, the byte is RUNNING|PARKED
 * (parking requires it, in the same bucket critical section that queues
 * the thread, and only the runner's exchange leaves that state, after
 * which it wakes everybody).
 *
 * Why no wakeup is lost: a waiter parks only if, with the bucket locked,
 * it saw RUNNING and made sure PARKED is set.  The runner's exchange is a
 * single atomic step on the byte, ordered with the waiter's CAS: if the
 * waiter's CAS came first, the exchange returns PARKED and the runner
 * calls pl_unpark_all, which takes the same bucket lock and so finds the
 * waiter queued; if the exchange came first, the waiter's validate sees
 * DONE and it does not sleep.  Every waiter then loads the byte again with
 * acquire ordering and sees DONE, which the runner stored with release
 * ordering after fn returned: fn's writes are visible to it.
 *
 * Recursion: a thread that calls pl_once on an o whose function it is
 * running would park forever.  Each runner pushes a frame naming o on a
 * per-thread list (the frames live on its stack, the head in a __thread
 * pointer) for the duration of fn; a caller that finds o running looks
 * for o in its own list before parking, and aborts if it is there.  The
 * list is guarded by being per-thread.
 */
#include <parkinglot/core.h>
#include <parkinglot/once.h>

#include "internal.h"

#define RUNNING PL_ONCE_RUNNING
#define DONE PL_ONCE_DONE
#define PARKED PL_ONCE_PARKED

/* The once objects whose function this thread is running, innermost
 * first.  A frame lives on the runner's stack while its fn runs. */
struct running_frame {
	const pl_once_t *once;
	struct running_frame *next;
};

static __thread struct running_frame *running_here;

static bool
running_in_this_thread(const pl_once_t *o)
{
	for (struct running_frame *f = running_here; f; f = f->next)
		if (f->once == o)
			return true;
	return false;
}

/* validate: park only while the function runs, and set PARKED so that the
 * runner knows to wake us. */
static bool
once_validate(void *ctx)
{
	pl_once_t *o = ctx;
	unsigned char s = __atomic_load_n(&o->state, __ATOMIC_RELAXED);
	for (;;) {
		if (!(s & RUNNING))
			return false; /* DONE already: do not sleep */
		if (s & PARKED)
			return true;
		if (__atomic_compare_exchange_n(&o->state, &s,
		        (unsigned char)(s | PARKED), false, __ATOMIC_RELAXED,
		        __ATOMIC_RELAXED))
			return true;
	}
}

void
pl__once_slow(pl_once_t *o, void (*fn)(void *arg), void *arg)
{
	unsigned char s = __atomic_load_n(&o->state, __ATOMIC_ACQUIRE);
	for (;;) {
		if (s == DONE)
			return; /* acquire: fn's writes are visible */
		if (s == 0) {
			/* Acquire for the loser, who may read DONE here. */
			if (!__atomic_compare_exchange_n(&o->state, &s, RUNNING,
			        false, __ATOMIC_ACQUIRE, __ATOMIC_ACQUIRE))
				continue;
			struct running_frame f = { o, running_here };
			running_here = &f;
			fn(arg);
			running_here = f.next;
			unsigned char old = __atomic_exchange_n(&o->state, DONE,
			    __ATOMIC_RELEASE);
			if (old & PARKED)
				pl_unpark_all(o, PL_UNPARK_TOKEN_DEFAULT);
			return;
		}
		/* RUNNING, by this thread or another. */
		if (running_in_this_thread(o))
			pli_fatal("pl_once: recursive call on once %p from its "
			          "own init function",
			    (void *)o);
		/* No spinning: an init function is usually long, and nothing
		 * but its return can change the byte. */
		pl_park(o, once_validate, NULL, NULL, o, 0, NULL);
		/* Woken (the byte is DONE), or validate saw it DONE. */
		s = __atomic_load_n(&o->state, __ATOMIC_ACQUIRE);
	}
}
