/* SPDX-License-Identifier: MIT */
/*
 * pl_mutex_t: a one-byte mutex built on the parking lot.
 *
 * The byte holds two bits; the encoding is ABI, because the inline fast
 * paths below are compiled into users' binaries:
 *
 *     PARKED LOCKED
 *       0      0    unlocked, nobody waiting
 *       0      1    locked, nobody for its unlock to wake (threads may be
 *                   parked behind a woken one, which sets PARKED again)
 *       1      0    unlocked, threads parked (a woken thread is on its way)
 *       1      1    locked, threads parked
 *
 * All-zero memory is an unlocked mutex; there is nothing to destroy.  The
 * full protocol and why it loses no wakeup is stated in lib/mutex.c.
 */
#ifndef PARKINGLOT_MUTEX_H
#define PARKINGLOT_MUTEX_H

#include <stdbool.h>
#include <sys/types.h> /* clockid_t, also under -std=c11 */
#include <time.h>

#include <parkinglot/defs.h>

PL_BEGIN_DECLS

typedef struct {
	unsigned char state;
} pl_mutex_t;

#define PL_MUTEX_INITIALIZER                                                   \
	{                                                                      \
		0                                                              \
	}
#define PL_MUTEX_LOCKED ((unsigned char)1)
#define PL_MUTEX_PARKED ((unsigned char)2)

/* Out of line: the contended paths.  Exported only for the fast paths. */
PL_EXPORT void pl__mutex_lock_slow(pl_mutex_t *m);
PL_EXPORT void pl__mutex_unlock_slow(pl_mutex_t *m, bool fair);

/* pl_mutex_init - make *m an unlocked mutex (the same as zeroing it). */
PL_EXPORT void pl_mutex_init(pl_mutex_t *m);

/*
 * pl_mutex_lock - acquire m, blocking until it is free.
 *
 * Uncontended: one compare-and-swap, acquire ordering.  Contended: spins
 * briefly while no thread is parked (struct pl_tuning's spin_limit), then
 * parks. Not fair in the short run (an arriving thread may barge past parked
 * ones, and the woken thread parks again, keeping its place in the queue),
 * but eventually: an unlock that wakes a waiter once the fairness timer
 * (about 1 ms) has expired hands the lock to it directly (pl_mutex(3),
 * Fairness).  Not reentrant: locking a mutex the caller holds deadlocks.
 */
static inline void
pl_mutex_lock(pl_mutex_t *m)
{
	unsigned char unlocked = 0;
	PL_CHK_PRE_LOCK(m, 0);
	PL_TSAN_PRE_LOCK(m, 0);
	if (PL_UNLIKELY(!__atomic_compare_exchange_n(&m->state, &unlocked,
	        PL_MUTEX_LOCKED, false, __ATOMIC_ACQUIRE, __ATOMIC_RELAXED)))
		PL__DIVERTED(m, pl__mutex_lock_slow(m));
	PL_TSAN_POST_LOCK(m, 0);
}

/* The CAS loop of pl_mutex_trylock, without annotations (the library's
 * own timed lock uses it). */
static inline bool
pl__mutex_trylock_raw(pl_mutex_t *m)
{
	unsigned char s = __atomic_load_n(&m->state, __ATOMIC_RELAXED);
	while (!(s & PL_MUTEX_LOCKED)) {
		if (__atomic_compare_exchange_n(&m->state, &s,
		        (unsigned char)(s | PL_MUTEX_LOCKED), true,
		        __ATOMIC_ACQUIRE, __ATOMIC_RELAXED))
			return true;
	}
	return false;
}

/*
 * pl_mutex_trylock - acquire m only if that needs no waiting.
 * Returns true with m held (acquire ordering), false otherwise.  Loads
 * first and only tries the CAS when the load shows the lock free; it may
 * take a free lock past parked waiters, as pl_mutex_lock may.
 */
static inline bool
pl_mutex_trylock(pl_mutex_t *m)
{
	PL_TSAN_PRE_LOCK(m, PL_TSAN_TRY);
	bool ok = pl__mutex_trylock_raw(m);
	PL_TSAN_POST_LOCK(
	    m, ok ? PL_TSAN_TRY : PL_TSAN_TRY | PL_TSAN_TRY_FAILED);
	if (ok)
		PL_CHK_POST_LOCK(m, PL_CHK_TRY);
	return ok;
}

/*
 * pl_mutex_timedlock - pl_mutex_lock with an absolute CLOCK_MONOTONIC
 * deadline (NULL: no deadline).  Returns 0 with m held; ETIMEDOUT if the
 * deadline passed first (a lock that is free is taken whatever the
 * deadline); EINVAL for a malformed deadline, before any attempt.
 */
PL_EXPORT int pl_mutex_timedlock(
    pl_mutex_t *m, const struct timespec *deadline);

/*
 * pl_mutex_clocklock - pl_mutex_timedlock with the deadline on clock,
 * CLOCK_MONOTONIC or CLOCK_REALTIME (another clock: EINVAL).  A
 * CLOCK_REALTIME deadline ends the wait when that clock passes it, also
 * when the clock is set forward meanwhile.
 */
PL_EXPORT int pl_mutex_clocklock(
    pl_mutex_t *m, clockid_t clock, const struct timespec *deadline);

/*
 * pl_mutex_unlock - release m (release ordering).
 *
 * Uncontended: one CAS.  With threads parked, wakes at most one of them;
 * if the bucket's fairness timer has expired, hands the lock directly to
 * the oldest waiter instead of letting it race.  Unlocking a mutex that is
 * not locked prints "pl_mutex_unlock: mutex 0x... is not locked" and
 * aborts.  Any thread may unlock (there is no owner to check), except
 * under ThreadSanitizer, whose model of a mutex has an owner and reports
 * an unlock by another thread.
 */
static inline void
pl_mutex_unlock(pl_mutex_t *m)
{
	unsigned char locked = PL_MUTEX_LOCKED;
#ifdef PL_TSAN
	/* Report misuse as ours, before TSan's own report of it. */
	if (!(__atomic_load_n(&m->state, __ATOMIC_RELAXED) & PL_MUTEX_LOCKED))
		pl__mutex_unlock_slow(m, false);
#endif
	PL_CHK_PRE_UNLOCK(m, 0);
	PL_TSAN_PRE_UNLOCK(m, 0);
	if (PL_UNLIKELY(!__atomic_compare_exchange_n(&m->state, &locked, 0,
	        false, __ATOMIC_RELEASE, __ATOMIC_RELAXED)))
		PL__DIVERTED(m, pl__mutex_unlock_slow(m, false));
	PL_TSAN_POST_UNLOCK(m, 0);
}

/*
 * pl_mutex_unlock_fair - release m, handing it directly to the oldest
 * parked thread if there is one (that thread returns from its lock call
 * holding m; no other thread can barge in between).  Costs a context
 * switch per hand-off; use it where a waiter must not be overtaken.
 * Always looks in the parking lot (a bucket lock), even when nobody
 * waits: waiters may be queued with P clear while a thread woken to
 * compete has yet to set it again.
 */
PL_EXPORT void pl_mutex_unlock_fair(pl_mutex_t *m);

#ifdef PL_CHECKED
/* Checked mode (defs.h): the out-of-line calls through the hooks too.
 * Always inlined, so that the hooks see the caller's call site. */
static inline __attribute__((always_inline)) int
pl__chk_mutex_clocklock(
    pl_mutex_t *m, clockid_t clock, const struct timespec *deadline)
{
	PL_CHK_PRE_LOCK(m, 0);
	int rc = (pl_mutex_clocklock)(m, clock, deadline);
	if (rc)
		PL_CHK_POST_LOCK(m, PL_CHK_FAILED);
	return rc;
}
static inline __attribute__((always_inline)) int
pl__chk_mutex_timedlock(pl_mutex_t *m, const struct timespec *deadline)
{
	PL_CHK_PRE_LOCK(m, 0);
	int rc = (pl_mutex_timedlock)(m, deadline);
	if (rc)
		PL_CHK_POST_LOCK(m, PL_CHK_FAILED);
	return rc;
}
static inline __attribute__((always_inline)) void
pl__chk_mutex_unlock_fair(pl_mutex_t *m)
{
	PL_CHK_PRE_UNLOCK(m, 0);
	(pl_mutex_unlock_fair)(m);
}
#define pl_mutex_clocklock(m, c, d) pl__chk_mutex_clocklock((m), (c), (d))
#define pl_mutex_timedlock(m, d) pl__chk_mutex_timedlock((m), (d))
#define pl_mutex_unlock_fair(m) pl__chk_mutex_unlock_fair(m)
#endif

/* pl_mutex_is_locked - whether m is held by some thread right now (a
 * relaxed load: a hint, stale as soon as it returns). */
static inline bool
pl_mutex_is_locked(const pl_mutex_t *m)
{
	return (__atomic_load_n(&m->state, __ATOMIC_RELAXED) &
	           PL_MUTEX_LOCKED) != 0;
}

PL_END_DECLS

#endif /* PARKINGLOT_MUTEX_H */
