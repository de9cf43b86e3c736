/* SPDX-License-Identifier: MIT */
/*
 * pl_once_t: one-time initialization in one byte, built on the parking
 * lot.
 *
 * The byte's values; the encoding is ABI, because the inline fast path
 * below is compiled into users' binaries:
 *
 *     0                  new: the function has not been started
 *     RUNNING | g        a thread is running the function; g (in the bits
 *                        PL_ONCE_GEN) is the fork generation of the
 *                        process that started it
 *     RUNNING | g | PARKED   ... and threads are parked waiting for it
 *     DONE               the function has returned (final)
 *
 * PL_ONCE_GEN was added after the other values, which never change: a
 * binary built with an older header tests for DONE alone and stays right.
 *
 * All-zero memory is a new once; there is nothing to destroy.  The
 * protocol and why no wakeup is lost is stated in lib/once.c.
 */
#ifndef PARKINGLOT_ONCE_H
#define PARKINGLOT_ONCE_H

#include <parkinglot/defs.h>

PL_BEGIN_DECLS

typedef struct {
	unsigned char state;
} pl_once_t;

#define PL_ONCE_INIT                                                           \
	{                                                                      \
		0                                                              \
	}
#define PL_ONCE_RUNNING ((unsigned char)1)
#define PL_ONCE_DONE ((unsigned char)2)
#define PL_ONCE_PARKED ((unsigned char)4)
/* The bits of a RUNNING byte that hold the fork generation of the run. */
#define PL_ONCE_GEN ((unsigned char)0xf8)

/* Out of line: everything but "already done".  Exported only for the fast
 * path. */
PL_EXPORT void pl__once_slow(pl_once_t *o, void (*fn)(void *arg), void *arg);

/*
 * pl_once - call fn(arg) if no call of pl_once on o has called its
 * function yet; in any case return only once that function has returned.
 *
 * Exactly one caller runs its function, once (a run that does not
 * return, below, does not count); every other caller, before or during
 * that run, blocks (parks, without spinning) until it has returned.
 * Done: one acquire load of the byte and no write.  Memory ordering:
 * everything the function did happens before every pl_once on o returns
 * (release when the runner marks o done, acquire in every caller).
 * Waiters are all woken together when the function returns; there is no
 * other fairness question.
 *
 * A call of pl_once on o from inside its own function (directly or not,
 * on the same thread) would wait for itself: it prints "pl_once: recursive
 * call on once 0x... from its own init function" and aborts.
 *
 * As with glibc's pthread_once: if the function does not return because
 * its thread is cancelled, calls pthread_exit, or throws a C++ exception
 * through pl_once, o becomes new again and its waiters are woken, so that
 * the next caller (one of them, or a later one) runs its function.  In
 * the child of fork() (not _Fork or vfork), a once whose function another
 * thread was running at the fork is run again by the first caller there;
 * one the forking thread itself was running goes on in the child, where
 * that run completes it.  If the function calls longjmp out of pl_once,
 * the behaviour is undefined (o stays running and other callers wait
 * forever).
 */
static inline void
pl_once(pl_once_t *o, void (*fn)(void *arg), void *arg)
{
	if (PL_LIKELY(
	        __atomic_load_n(&o->state, __ATOMIC_ACQUIRE) == PL_ONCE_DONE))
		return;
	pl__once_slow(o, fn, arg);
}

PL_END_DECLS

#endif /* PARKINGLOT_ONCE_H */
