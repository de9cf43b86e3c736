/* SPDX-License-Identifier: MIT */
/*
 * pthread_cond_* on pl_cond_t (layout: dropin.h).
 *
 * A wait is pl_cond_clockwait on the mutex's pl_mutex_t, whatever the
 * mutex kind, or pl_cond_clockwait_any with glibc's own mutexes (robust,
 * priority, process-shared: wait_glibc_mutex below); only a
 * process-shared condition variable, which glibc serves, needs one of
 * glibc's mutexes.  The owner and recursion count of the kinds that keep
 * them are put aside for the wait and given back after it, also when the wait
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
#include <unistd.h>

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
mismatch(pthread_cond_t *c, pthread_mutex_t *m)
{
	pli_dropin_fatal("pthread_cond_wait: condition variable %p is "
	                 "process-shared, mutex %p is not: glibc's "
	                 "process-shared condition variables need one of "
	                 "glibc's mutexes (process-shared, robust or "
	                 "priority), and libparkinglot-pthread serves the "
	                 "private ones",
	    (void *)c, (void *)m);
}

/*
 * A private condition variable with one of glibc's mutexes (robust,
 * priority-inheritance or priority-protect, process-shared): a wait of
 * pl_cond_clockwait_any, which unlocks and locks the mutex with glibc's
 * own functions.  As glibc's wait, it keeps the waiter counted in the
 * mutex's __nusers meanwhile (pthread_mutex_destroy says EBUSY), by one
 * more while the mutex is held before the wait and one less once it is
 * held again; glibc writes __nusers only under the mutex, as this does.
 * The caller must hold the mutex (its __owner, which glibc keeps for
 * every kind of its own, is the caller's thread id), else EPERM, as
 * glibc says to the kinds that check and before any wait.  A relock
 * that finds the owner dead returns EOWNERDEAD from the wait, with the
 * mutex held, as glibc's does.
 */
static void
glibc_unlock(void *m)
{
	pthread_mutex_t *gm = m;
	gm->__data.__nusers++;
	REAL(pthread_mutex_unlock)(gm);
}

static int
glibc_relock(void *m)
{
	pthread_mutex_t *gm = m;
	int rc = REAL(pthread_mutex_lock)(gm);
	if (rc == 0 || rc == EOWNERDEAD)
		gm->__data.__nusers--;
	pl__park_as(PLI_KIND_PL_COND, 0);
	return rc;
}

/* A deadline before the epoch: glibc's wait times out before its futex
 * call, which is its cancellation point (the kernel would refuse such a
 * deadline), so a pending cancellation does not act; a later deadline
 * that has passed reaches the call, and it does. */
static inline bool
before_the_epoch(const struct timespec *deadline)
{
	return deadline && deadline->tv_sec < 0;
}

static int
wait_glibc_mutex(pthread_cond_t *c, pthread_mutex_t *m, clockid_t clock,
    const struct timespec *deadline, bool *retaken)
{
	if (__atomic_load_n(&m->__data.__owner, __ATOMIC_RELAXED) != gettid())
		return EPERM;
	if (before_the_epoch(deadline)) {
		*retaken = true; /* never released */
		return ETIMEDOUT;
	}
	pl__park_as(PLI_KIND_PL_COND, PLI_KIND_PTHREAD_COND);
	int rc = pl_cond_clockwait_any(
	    &dc(c)->cond, m, glibc_unlock, glibc_relock, clock, deadline);
	pl__park_as(PLI_KIND_PL_COND, 0);
	*retaken = rc == 0 || rc == ETIMEDOUT || rc == EOWNERDEAD;
	return rc;
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
	if (PL_UNLIKELY(mutex_glibc && !cond_glibc))
		return wait_glibc_mutex(c, m, clock, deadline, retaken);
	if (PL_UNLIKELY(cond_glibc)) {
		if (!mutex_glibc)
			mismatch(c, m);
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
	/* A kind without an owner, free: the caller does not hold it, which
	 * is undefined, and glibc's wait unlocks it all the same (nothing to
	 * do), waits and locks it.  Locked first, it is the same wait here,
	 * where pl_mutex_unlock would abort. */
	if (PL_UNLIKELY(!pl_mutex_is_locked(&dm(m)->lock))) {
		pl_mutex_lock(&dm(m)->lock);
		pli_dropin_taken(&dm(m)->lock);
	}
	*retaken = true;
	static const struct timespec past; /* the epoch */
	pl__park_as(PLI_KIND_PL_COND, PLI_KIND_PTHREAD_COND);
	pl__park_as(PLI_KIND_PL_MUTEX, dm_park_kind(kind));
	pthread_cleanup_push(pli_dm_reacquired, &saved);
	if (before_the_epoch(deadline)) /* no cancellation point */
		rc = pl_cond_timedwait(&dc(c)->cond, &dm(m)->lock, &past);
	else
		rc = pl_cond_clockwait(
		    &dc(c)->cond, &dm(m)->lock, clock, deadline);
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
	if (pli_dm_releases(m, true)) /* else the wait fails at once */
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
pli_dc_checked_wait(pthread_cond_t *c, pthread_mutex_t *m,
    const struct timespec *deadline, const void *pc, const void *cfa)
{
	if (deadline && !dropin_nsec_ok(deadline))
		return EINVAL;
	clockid_t clock =
	    dc_flags(c) & DC_MONOTONIC ? CLOCK_MONOTONIC : CLOCK_REALTIME;
	return checked_wait(c, m, clock, deadline, pc, cfa);
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
