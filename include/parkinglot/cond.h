/* SPDX-License-Identifier: MIT */
/*
 * pl_cond_t: a one-byte condition variable built on the parking lot.
 *
 * The byte says only whether threads may be waiting (PL_COND_WAITERS), so
 * that signal and broadcast with nobody waiting touch nothing but the
 * byte.  The waiters themselves are queued in the parking lot under the
 * condition variable's address, each with its mutex's address as park
 * token; broadcast reads the mutex from there, wakes one waiter and moves
 * the others onto the mutex's queue, where each is woken by a later
 * unlock: no thundering herd.  The encoding is ABI.  All-zero memory is a
 * condition variable with no waiters; there is nothing to destroy.
 *
 * As in POSIX, every waiter of one condition variable uses the same mutex
 * at a time.  Waits may not wake spuriously, but a caller must re-check its
 * predicate all the same: another thread may change it between the wake-up
 * and the return.
 */
#ifndef PARKINGLOT_COND_H
#define PARKINGLOT_COND_H

#include <stdbool.h>
#include <stddef.h>
#include <sys/types.h> /* clockid_t, also under -std=c11 */
#include <time.h>

#include <parkinglot/defs.h>
#include <parkinglot/mutex.h>

PL_BEGIN_DECLS

typedef struct {
	unsigned char state;
} pl_cond_t;

#define PL_COND_INITIALIZER                                                    \
	{                                                                      \
		0                                                              \
	}
#define PL_COND_WAITERS ((unsigned char)1)

PL_EXPORT bool pl__cond_signal_slow(pl_cond_t *c);
PL_EXPORT size_t pl__cond_broadcast_slow(pl_cond_t *c);

/* pl_cond_init - make *c a condition variable with no waiters. */
PL_EXPORT void pl_cond_init(pl_cond_t *c);

/*
 * pl_cond_wait - atomically release m (which the caller holds) and sleep
 * until signalled; return with m held again.  A thread that is signalled
 * while its mutex is held is moved onto the mutex's queue rather than
 * woken, and may receive the mutex directly from its unlocker.
 */
PL_EXPORT void pl_cond_wait(pl_cond_t *c, pl_mutex_t *m);

/*
 * pl_cond_timedwait - pl_cond_wait with an absolute CLOCK_MONOTONIC
 * deadline (NULL: none).  Returns 0 when signalled, ETIMEDOUT when the
 * deadline passed first, EINVAL for a malformed deadline (then m is not
 * released at all).  Once a signal or broadcast has taken the waiter off
 * c (woken it, or moved it onto m's queue), it returns 0 whatever the
 * deadline: the deadline bounds the wait for a signal, not the wait for
 * m afterwards.  A deadline already past returns ETIMEDOUT at once, m
 * never released.  Whatever it returns, m is held again on return.
 */
PL_EXPORT int pl_cond_timedwait(
    pl_cond_t *c, pl_mutex_t *m, const struct timespec *deadline);

/*
 * pl_cond_clockwait - pl_cond_timedwait with the deadline on clock
 * (CLOCK_MONOTONIC or CLOCK_REALTIME; another clock: EINVAL, m not
 * released), and a thread cancellation point, as pthread_cond_clockwait
 * is: a cancelled waiter holds m again when its cleanup handlers run, and
 * a signal it had already received is passed on to another waiter, if
 * one is waiting (c is not touched when none is).
 * A CLOCK_REALTIME deadline ends the wait when that clock passes it, also
 * when the clock is set forward meanwhile.
 */
PL_EXPORT int pl_cond_clockwait(pl_cond_t *c, pl_mutex_t *m, clockid_t clock,
    const struct timespec *deadline);

/*
 * pl_cond_clockwait_any - pl_cond_clockwait with a lock that is not a
 * pl_mutex_t: a pl_rmutex_t, a bit lock, a write-locked pl_rwlock_t, a
 * lock of the caller's own.  The caller holds the lock; unlock(lock)
 * releases it once the thread is queued on c, so that no signal sent
 * after it is missed, and relock(lock) takes it again before the wait
 * returns, also after a timeout and before a cancelled waiter's cleanup
 * handlers run.  The wait returns relock's result if that is not 0 (so a
 * relock that reports a robust mutex's dead owner, EOWNERDEAD, is seen),
 * else 0 or ETIMEDOUT as pl_cond_clockwait does; EINVAL for a bad clock
 * or deadline and ETIMEDOUT for a deadline already past, the lock never
 * released.  A cancellation point.  Such waiters are always woken, never
 * moved onto a mutex's queue: a broadcast wakes them all.  Every waiter
 * of c at one time waits in this way, or every one with one pl_mutex_t
 * (a broadcast that finds both aborts, as one that finds two mutexes
 * does); unlock and relock run with no lock of the parking lot held, and
 * may block.
 */
PL_EXPORT int pl_cond_clockwait_any(pl_cond_t *c, void *lock,
    void (*unlock)(void *lock), int (*relock)(void *lock), clockid_t clock,
    const struct timespec *deadline);

/*
 * pl_cond_signal - wake the longest-waiting thread, if any.  Returns true
 * if a waiter was removed from c (woken, or moved onto its mutex's queue
 * because the mutex was held).  With nobody waiting: one load of the byte.
 */
static inline bool
pl_cond_signal(pl_cond_t *c)
{
	if (PL_LIKELY(__atomic_load_n(&c->state, __ATOMIC_RELAXED) == 0))
		return false;
	return pl__cond_signal_slow(c);
}

/*
 * pl_cond_broadcast - wake every waiter: one is woken (none if the mutex is
 * held: its unlock will wake the first), the rest are moved onto the
 * mutex's queue, where unlocks wake them one at a time.  Returns how many
 * waiters were woken or moved.  With nobody waiting: one load of the byte.
 */
static inline size_t
pl_cond_broadcast(pl_cond_t *c)
{
	if (PL_LIKELY(__atomic_load_n(&c->state, __ATOMIC_RELAXED) == 0))
		return 0;
	return pl__cond_broadcast_slow(c);
}

#ifdef PL_CHECKED
/* Checked mode (defs.h): the mutex half of a wait.  The wait releases m
 * and takes it back: m leaves the thread's held set before and joins it
 * again after, as a lock taken while the thread holds whatever else it
 * held (those edges are real: a lock held across the wait is held while
 * m is taken again).  The condition variable itself is no lock. */
static inline __attribute__((always_inline)) void
pl__chk_cond_wait(pl_cond_t *c, pl_mutex_t *m)
{
	PL_CHK_PRE_UNLOCK(m, 0);
	(pl_cond_wait)(c, m);
	PL_CHK_PRE_LOCK(m, 0);
}
static inline __attribute__((always_inline)) int
pl__chk_cond_timedwait(
    pl_cond_t *c, pl_mutex_t *m, const struct timespec *deadline)
{
	PL_CHK_PRE_UNLOCK(m, 0);
	int rc = (pl_cond_timedwait)(c, m, deadline);
	PL_CHK_PRE_LOCK(m, 0);
	return rc;
}
static inline __attribute__((always_inline)) int
pl__chk_cond_clockwait(pl_cond_t *c, pl_mutex_t *m, clockid_t clock,
    const struct timespec *deadline)
{
	PL_CHK_PRE_UNLOCK(m, 0);
	int rc = (pl_cond_clockwait)(c, m, clock, deadline);
	PL_CHK_PRE_LOCK(m, 0);
	return rc;
}
#define pl_cond_wait(c, m) pl__chk_cond_wait((c), (m))
#define pl_cond_timedwait(c, m, d) pl__chk_cond_timedwait((c), (m), (d))
#define pl_cond_clockwait(c, m, k, d) pl__chk_cond_clockwait((c), (m), (k), (d))
#endif

PL_END_DECLS

#endif /* PARKINGLOT_COND_H */
