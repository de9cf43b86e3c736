/* SPDX-License-Identifier: MIT */
/*
 * pl_once_t slow path: claim the once and run its function, or wait for
 * the thread that runs it.  The fast path ("already done") is inline in
 * include/parkinglot/once.h.
 *
 * The byte (RUNNING = 1, DONE = 2, PARKED = 4, GEN = the bits 0xf8):
 *
 *     0                      new: nobody has claimed it
 *     RUNNING|g              claimed in fork generation g (in GEN); its
 *                            function is running, nobody parked
 *     RUNNING|g|PARKED       claimed, and threads are parked on the byte
 *     DONE                   the function has returned; never changes again
 *
 * The fork generation: fork_gen, a multiple of GEN_ONE kept within GEN, is
 * 0 at load and grows by GEN_ONE (wrapping after 32 steps) in every child
 * of fork(), in the atfork child handler.  The runner of a once stamps
 * the byte with the generation of the process it runs in; "RUNNING with
 * the current generation" is the only state a caller waits for.  A RUNNING byte
 * with another generation is stale: its runner was a thread of an ancestor
 * process that does not exist here.  (The forking thread's own runs are
 * re-stamped in the child, so they are never stale.)
 *
 * Transitions, and who makes them:
 *   0 -> RUNNING|g       the one caller whose CAS wins; it then runs fn.
 *   RUNNING|g' [|PARKED] -> RUNNING|g, g' != g (the current generation)
 *                        a caller in a child process, taking over a run
 *                        whose runner was lost in a fork; by CAS, so one
 *                        caller wins; it then runs fn.
 *   RUNNING|g -> | PARKED
 *                        a thread about to park, in pl_park's validate
 *                        callback (bucket of o locked), by CAS, and only
 *                        while the byte is RUNNING with generation g.
 *   RUNNING|g [|PARKED] -> DONE
 *                        the runner, after fn returned, by one exchange
 *                        (release); if the old value had PARKED, it then
 *                        wakes every thread parked on o.
 *   RUNNING|g [|PARKED] -> 0
 *                        the runner's cleanup handler, when fn does not
 *                        return (cancellation, pthread_exit, a C++
 *                        exception), by one exchange; if the old value had
 *                        PARKED, it then wakes every thread parked on o.
 *                        A woken thread finds 0 and claims the once as any
 *                        caller does, so fn runs again, as with glibc's
 *                        pthread_once.
 *   RUNNING|g' [|PARKED] -> RUNNING|g
 *                        the atfork child handler, for each once the
 *                        forking thread is running (its runs go on in the
 *                        child); nobody is parked in the child.
 * PARKED is never cleared but by those exchanges, the take-over and the
 * re-stamp.  DONE is final, so the fast path compares with DONE alone.
 *
 * Invariant: while any thread is parked on o, the byte is RUNNING|g|PARKED
 * with g the current generation (parking requires it, in the same bucket
 * critical section that queues the thread; only the runner's exchanges
 * leave that state, after which the runner wakes everybody; the take-over
 * needs another generation, and a child process starts with no thread
 * parked).
 *
 * Why no wakeup is lost: a waiter parks only if, with the bucket locked,
 * it saw RUNNING|g (current g) and made sure PARKED is set.  Each of the
 * runner's exchanges (to DONE, or to 0) is a single atomic step on the
 * byte, ordered with the waiter's CAS: if the waiter's CAS came first, the
 * exchange returns PARKED and the runner calls pl_unpark_all, which takes
 * the same bucket lock and so finds the waiter queued; if the exchange
 * came first, the waiter's validate sees DONE or 0 and it does not sleep.
 * Every waiter then loads the byte again with acquire ordering: if it sees
 * DONE, which the runner stored with release ordering after fn returned,
 * fn's writes are visible to it; if it sees 0, it competes to claim the
 * once, and the winner runs fn (the cleanup's release makes the cancelled
 * run's writes visible to it).  A waiter that lost the claim parks again
 * on the new run by the same rule.
 *
 * Wrap of the generation: GEN has 5 bits, so the 32nd generation of
 * descendants (a child's child's ... child, 32 forks deep) has the
 * generation of its ancestor again.  A once left RUNNING by a fork in
 * that ancestor, that none of the 31 processes between called before its
 * own fork (a call there would have taken it over, stamping it with that
 * process's generation), then looks like a live run and its callers wait
 * forever: the deadlock glibc's pthread_once has after 2^30 nested
 * forks.  Never a second run of fn: a take-over needs a stale generation,
 * which a live run never has.  Forks from one process do not count: each
 * child is one generation below its parent however many it has.
 *
 * Recursion: a thread that calls pl_once on an o whose function it is
 * running would park forever.  Each runner pushes a frame naming o on a
 * per-thread list (the frames live on its stack, the head in a __thread
 * pointer) for the duration of fn; a caller that finds o running looks
 * for o in its own list before parking, and aborts if it is there.  The
 * list is guarded by being per-thread.  The atfork child handler walks the
 * forking thread's list, which is the only one left in the child.
 *
 * Cleanup: pthread_cleanup_push/pop around fn.  This file is compiled with
 * -fexceptions (Makefile.am), as glibc compiles its pthread_once.c, so
 * glibc's macros use a cleanup attribute: the handler runs on any
 * unwinding through pl_once, C++ exceptions too, and not only on
 * cancellation and pthread_exit.  (Without -fexceptions they would use
 * setjmp and a buffer registered with the thread, which cancellation and
 * pthread_exit find but an exception skips, leaving the buffer registered
 * after its frame is gone.)  A longjmp out of fn runs no handler: o stays
 * RUNNING (documented as undefined).
 */
#include <pthread.h>

#include <parkinglot/core.h>
#include <parkinglot/once.h>

#include "platform.h"
#include "lot.h"

#define RUNNING PL_ONCE_RUNNING
#define DONE PL_ONCE_DONE
#define PARKED PL_ONCE_PARKED
#define GEN PL_ONCE_GEN
#define GEN_ONE ((unsigned char)(GEN & -GEN)) /* lowest bit of GEN */

/* The fork generation of this process, within GEN.  Written only in the
 * atfork child handler, while the child has one thread. */
static unsigned char fork_gen;

/* RUNNING stamped with the current generation: the byte of a live run,
 * PARKED aside. */
static unsigned char
running_now(void)
{
	return (unsigned char)(RUNNING |
	    __atomic_load_n(&fork_gen, __ATOMIC_RELAXED));
}

/* The once objects whose function this thread is running, innermost
 * first.  A frame lives on the runner's stack while its fn runs. */
struct running_frame {
	pl_once_t *once;
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

/* validate: park only while a live run goes on, and set PARKED so that
 * the runner knows to wake us. */
static bool
once_validate(void *ctx)
{
	pl_once_t *o = ctx;
	unsigned char live = running_now();
	unsigned char s = __atomic_load_n(&o->state, __ATOMIC_RELAXED);
	for (;;) {
		if ((s & ~PARKED) != live)
			return false; /* DONE, 0 or stale: look again */
		if (s & PARKED)
			return true;
		if (__atomic_compare_exchange_n(&o->state, &s,
		        (unsigned char)(s | PARKED), false, __ATOMIC_RELAXED,
		        __ATOMIC_RELAXED))
			return true;
	}
}

/* The runner's last step: DONE (fn returned) or 0 (it did not). */
static void
finish_run(struct running_frame *f, unsigned char to)
{
	running_here = f->next;
	unsigned char old =
	    __atomic_exchange_n(&f->once->state, to, __ATOMIC_RELEASE);
	if (old & PARKED)
		pl_unpark_all(f->once, PL_UNPARK_TOKEN_DEFAULT);
}

/* Cleanup handler: fn was cancelled, called pthread_exit or threw. */
static void
run_abandoned(void *arg)
{
	finish_run(arg, 0);
}

PLI_COLD void
pl__once_slow(pl_once_t *o, void (*fn)(void *arg), void *arg)
{
	unsigned char s = __atomic_load_n(&o->state, __ATOMIC_ACQUIRE);
	for (;;) {
		if (s == DONE)
			return; /* acquire: fn's writes are visible */
		unsigned char live = running_now();
		if ((s & ~PARKED) == live) {
			/* A live run, by this thread or another. */
			if (running_in_this_thread(o))
				pli_fatal("pl_once: recursive call on once %p "
				          "from its own init function",
				    (void *)o);
			/* No spinning: an init function is usually long,
			 * and nothing but its end can change the byte. */
			pli_park(PLI_KIND_PL_ONCE, o, once_validate, NULL, NULL,
			    o, 0, CLOCK_MONOTONIC, NULL, NULL);
			/* Woken, or validate saw the run end. */
			s = __atomic_load_n(&o->state, __ATOMIC_ACQUIRE);
			continue;
		}
		/* 0, or a run of another generation, lost in a fork: claim
		 * it.  Acquire for the loser, who may read DONE here. */
		if (!__atomic_compare_exchange_n(&o->state, &s, live, false,
		        __ATOMIC_ACQUIRE, __ATOMIC_ACQUIRE))
			continue;
		struct running_frame f = { o, running_here };
		running_here = &f;
		pthread_cleanup_push(run_abandoned, &f);
		fn(arg);
		pthread_cleanup_pop(0);
		finish_run(&f, DONE);
		return;
	}
}

/* In the child of fork(), which has only the forking thread: a new
 * generation, so that the runs of the threads left behind are stale, and
 * the forking thread's own runs moved into it, since they go on here. */
static void
once_atfork_child(void)
{
	unsigned char g = (unsigned char)((fork_gen + GEN_ONE) & GEN);
	__atomic_store_n(&fork_gen, g, __ATOMIC_RELAXED);
	for (struct running_frame *f = running_here; f; f = f->next)
		__atomic_store_n(&f->once->state, (unsigned char)(RUNNING | g),
		    __ATOMIC_RELAXED);
}

__attribute__((constructor)) static void
once_init(void)
{
	pthread_atfork(NULL, NULL, once_atfork_child);
}
