/* SPDX-License-Identifier: MIT */
/*
 * pthread_cond_* on pl_cond_t (layout: dropin.h).
 *
 * A wait is pl_cond_clockwait on the mutex's pl_mutex_t, whatever the
 * mutex kind: the owner and recursion count of the kinds that keep them
 * are put aside for the wait and given back after it, also when the wait
 * is cancelled (a cleanup handler, which runs once pl_cond_clockwait's
 * cancellation has taken the mutex back).  The wait is a cancellation
 * point; a signal that a cancelled waiter had received is passed on
 * (lib/cond.c).  A recursive mutex locked more than once is released
 * whole for the wait, where glibc's wait would keep it locked.
 *
 * The clock of pthread_cond_timedwait is the one the attribute chose
 * (CLOCK_REALTIME unless pthread_condattr_setclock said otherwise).
 * Deadlines are checked as glibc checks them: bad nanoseconds are EINVAL
 * before anything else, a negative tv_sec is a deadline in the past.
 * Destroy returns 0: a waiter, once woken or moved onto its mutex, never
 * touches the condition variable again (but to pass a signal on, which
 * writes it only while a waiter keeps it alive).
 */
#define _GNU_SOURCE
#include <errno.h>
#include <string.h>

#include "deadlock.h"
#include "dropin.h"

static inline struct dc *
dc(pthread_cond_t *c)
{
	return (struct dc *)(void *)c;
}

static inline unsigned int
dc_flags(pthread_cond_t *c)
{
	return __atomic_load_n(&dc(c)->flags, __ATOMIC_RELAXED);
}

int
pthread_cond_init(pthread_cond_t *c, const pthread_condattr_t *attr)
{
	clockid_t clock = CLOCK_REALTIME;
	if (attr) {
		int pshared = PTHREAD_PROCESS_PRIVATE;
		pthread_condattr_getpshared(attr, &pshared);
		if (pshared != PTHREAD_PROCESS_PRIVATE)
			return REAL(pthread_cond_init)(c, attr);
		pthread_condattr_getclock(attr, &clock);
	}
	memset(c, 0, sizeof *c);
	if (clock == CLOCK_MONOTONIC)
		dc(c)->flags = DC_MONOTONIC;
	return 0;
}

int
pthread_cond_destroy(pthread_cond_t *c)
{
	if (dc_flags(c) & DC_PSHARED)
		return REAL(pthread_cond_destroy)(c);
	return 0;
}

int
pthread_cond_signal(pthread_cond_t *c)
{
	if (PL_UNLIKELY(dc_flags(c) & DC_PSHARED))
		return REAL(pthread_cond_signal)(c);
	pl_cond_signal(&dc(c)->cond);
	return 0;
}

int
pthread_cond_broadcast(pthread_cond_t *c)
{
	if (PL_UNLIKELY(dc_flags(c) & DC_PSHARED))
		return REAL(pthread_cond_broadcast)(c);
	pl_cond_broadcast(&dc(c)->cond);
	return 0;
}

static __attribute__((noreturn)) void
mismatch(pthread_cond_t *c, pthread_mutex_t *m, bool cond_glibc)
{
	pli_dropin_fatal("pthread_cond_wait: condition variable %p is %s, "
	                 "mutex %p is %s: both must be process-shared or "
	                 "neither (libparkinglot-pthread serves only private "
	                 "ones, and not robust or priority mutexes)",
	    (void *)c, cond_glibc ? "glibc's (process-shared)" : "private",
	    (void *)m,
	    cond_glibc ? "private"
	               : "glibc's (process-shared, robust or "
	                 "priority)");
}

/* deadline NULL: wait without one; clock then unused.  *retaken: whether
 * the caller holds the mutex on return, as a wait leaves it; not when the
 * wait failed at once, for want of a mutex the caller held. */
static int
wait(pthread_cond_t *c, pthread_mutex_t *m, clockid_t clock,
    const struct timespec *deadline, bool *retaken)
{
	bool cond_glibc = dc_flags(c) & DC_PSHARED;
	int kind = dm_kind(m);
	bool mutex_glibc = dm_is_glibc(kind);
	if (PL_UNLIKELY(cond_glibc || mutex_glibc)) {
		if (cond_glibc != mutex_glibc || kind == DM_DESTROYED)
			mismatch(c, m, cond_glibc);
		int rc = !deadline
		    ? REAL(pthread_cond_wait)(c, m)
		    : REAL(pthread_cond_clockwait)(c, m, clock, deadline);
		/* The mutex is held again after a wait, or after its owner
		 * died (robust); any other error is from before the wait. */
		*retaken = rc == 0 || rc == ETIMEDOUT || rc == EOWNERDEAD;
		return rc;
	}
	if (kind == DM_DESTROYED)
		return EINVAL;
	struct dm_saved saved;
	int rc = pli_dm_release_for_wait(m, &saved);
	if (rc)
		return rc;
	*retaken = true;
	struct timespec buf;
	pl__park_as(PLI_KIND_PL_COND, PLI_KIND_PTHREAD_COND);
	pl__park_as(PLI_KIND_PL_MUTEX, dm_park_kind(kind));
	pthread_cleanup_push(pli_dm_reacquired, &saved);
	rc = pl_cond_clockwait(
	    &dc(c)->cond, &dm(m)->lock, clock, dropin_deadline(deadline, &buf));
	pthread_cleanup_pop(1);
	return rc;
}

/*
 * The deadlock detector (deadlock.h), on at run time: the mutex leaves
 * the thread's held set for the wait and joins it again after, as a lock
 * taken while the thread holds what else it held.  A wait that fails at
 * once (EPERM from a mutex that keeps its owner and is not the caller's,
 * EINVAL from a destroyed one) never had it.  The wait itself (the
 * condition variable) is no lock.  pc and cfa: the call site.
 */
static __attribute__((noinline, cold)) int
checked_wait(pthread_cond_t *c, pthread_mutex_t *m, clockid_t clock,
    const struct timespec *deadline, const void *pc, const void *cfa)
{
	bool retaken = false;
	pl__chk_pre_unlock_at(m, 0);
	int rc = wait(c, m, clock, deadline, &retaken);
	if (retaken) /* nothing can fail now */
		pl__chk_pre_lock_at(m, 0, pc, cfa);
	return rc;
}

int
pthread_cond_wait(pthread_cond_t *c, pthread_mutex_t *m)
{
	if (PL_UNLIKELY(pli_deadlock_checking()))
		return checked_wait(c, m, CLOCK_MONOTONIC, NULL,
		    __builtin_return_address(0), __builtin_dwarf_cfa());
	bool retaken;
	return wait(c, m, CLOCK_MONOTONIC, NULL, &retaken);
}

int
pthread_cond_timedwait(
    pthread_cond_t *c, pthread_mutex_t *m, const struct timespec *deadline)
{
	if (!dropin_nsec_ok(deadline))
		return EINVAL;
	clockid_t clock =
	    dc_flags(c) & DC_MONOTONIC ? CLOCK_MONOTONIC : CLOCK_REALTIME;
	if (PL_UNLIKELY(pli_deadlock_checking()))
		return checked_wait(c, m, clock, deadline,
		    __builtin_return_address(0), __builtin_dwarf_cfa());
	bool retaken;
	return wait(c, m, clock, deadline, &retaken);
}

int
pthread_cond_clockwait(pthread_cond_t *c, pthread_mutex_t *m, clockid_t clock,
    const struct timespec *deadline)
{
	if (!dropin_nsec_ok(deadline) || !dropin_clock_ok(clock))
		return EINVAL;
	if (PL_UNLIKELY(pli_deadlock_checking()))
		return checked_wait(c, m, clock, deadline,
		    __builtin_return_address(0), __builtin_dwarf_cfa());
	bool retaken;
	return wait(c, m, clock, deadline, &retaken);
}
