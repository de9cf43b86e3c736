/* SPDX-License-Identifier: MIT */
/*
 * pl_mutex_t slow paths: contended lock, timed lock, unlock with waiters,
 * fair unlock.  The fast paths are inline in include/parkinglot/mutex.h.
 *
 * The mutex is the two-bit lock of lib/twobit.c on its byte, with
 * L = PL_MUTEX_LOCKED and P = PL_MUTEX_PARKED; its states, transitions
 * and why no wakeup is lost are stated there.  The byte is the mutex's
 * alone, so every waiter parked on it is its own (a condition variable
 * moves its waiters onto the mutex; lib/cond.c).
 */
#include <errno.h>

#include <parkinglot/mutex.h>

#include "platform.h"
#include "twobit.h"

#define MUTEX_LOCK(m)                                                          \
	{                                                                      \
		.word = &(m)->state, .size = 1, .shared = false,               \
		.locked = PL_MUTEX_LOCKED, .parked = PL_MUTEX_PARKED           \
	}

void
pl_mutex_init(pl_mutex_t *m)
{
	__atomic_store_n(&m->state, 0, __ATOMIC_RELAXED);
}

PLI_COLD void
pl__mutex_lock_slow(pl_mutex_t *m)
{
	const struct pli_twobit l = MUTEX_LOCK(m);
	pli_twobit_lock(&l, CLOCK_MONOTONIC, NULL);
}

void
pli_mutex_lock_woken(pl_mutex_t *m)
{
	const struct pli_twobit l = MUTEX_LOCK(m);
	pli_twobit_rearm(&l);
	PL_TSAN_PRE_LOCK(m, 0);
	if (!pl__mutex_trylock_raw(m))
		PL__DIVERTED(m, pli_twobit_lock_woken(&l));
	PL_TSAN_POST_LOCK(m, 0);
}

int
pl_mutex_clocklock(
    pl_mutex_t *m, clockid_t clock, const struct timespec *deadline)
{
	if (!pli_deadline_valid(deadline) || !pli_clock_valid(clock))
		return EINVAL;
	PL_TSAN_PRE_LOCK(m, PL_TSAN_TRY);
	int rc = 0;
	if (!pl__mutex_trylock_raw(m)) {
		const struct pli_twobit l = MUTEX_LOCK(m);
		PL__DIVERTED(m, rc = pli_twobit_lock(&l, clock, deadline));
	}
	PL_TSAN_POST_LOCK(
	    m, rc ? PL_TSAN_TRY | PL_TSAN_TRY_FAILED : PL_TSAN_TRY);
	return rc;
}

int
pl_mutex_timedlock(pl_mutex_t *m, const struct timespec *deadline)
{
	return pl_mutex_clocklock(m, CLOCK_MONOTONIC, deadline);
}

PLI_COLD void
pl__mutex_unlock_slow(pl_mutex_t *m, bool fair)
{
	const struct pli_twobit l = MUTEX_LOCK(m);
	pli_twobit_unlock(
	    &l, fair, fair ? "pl_mutex_unlock_fair" : "pl_mutex_unlock");
}

void
pl_mutex_unlock_fair(pl_mutex_t *m)
{
	unsigned char s = __atomic_load_n(&m->state, __ATOMIC_RELAXED);
	if (!(s & PL_MUTEX_LOCKED)) /* misuse: reported before TSan's */
		pl__mutex_unlock_slow(m, true);
	PL_TSAN_PRE_UNLOCK(m, 0);
	/* Always through the queue (lib/twobit.c, "Hand-off"). */
	PL__DIVERTED(m, pl__mutex_unlock_slow(m, true));
	PL_TSAN_POST_UNLOCK(m, 0);
}
