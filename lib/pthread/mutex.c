/* SPDX-License-Identifier: MIT */
/*
 * pthread_mutex_* on pl_mutex_t (layout: dropin.h).
 *
 * Kinds, as glibc's: NORMAL (the default, also PTHREAD_MUTEX_TIMED_NP)
 * and ADAPTIVE_NP are the bare pl_mutex_t, one CAS each way, no owner
 * kept; ERRORCHECK keeps its owner (EDEADLK on relock, EPERM on unlock by
 * another thread or of an unlocked mutex); RECURSIVE keeps its owner and
 * count (EAGAIN when the count would wrap).  The owner is the holder's
 * pthread_self(), written only by the holder, read by anyone to ask "is
 * it me?", which only the holder can answer yes to.  A mutex is busy for
 * pthread_mutex_destroy while it is locked (EBUSY), as in glibc (its
 * __nusers).  Unlocking a NORMAL mutex that is not locked does nothing
 * and returns 0, where glibc corrupts its word; pl_mutex_unlock would
 * abort, which a drop-in for existing programs must not.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <limits.h>
#include <string.h>
#include <sys/single_threaded.h>
#include <unistd.h>

#include "deadlock.h"
#include "dropin.h"

int
pthread_mutex_init(pthread_mutex_t *m, const pthread_mutexattr_t *attr)
{
	int type = PTHREAD_MUTEX_DEFAULT;
	if (attr) {
		int pshared = PTHREAD_PROCESS_PRIVATE;
		int robust = PTHREAD_MUTEX_STALLED;
		int protocol = PTHREAD_PRIO_NONE;
		pthread_mutexattr_gettype(attr, &type);
		pthread_mutexattr_getpshared(attr, &pshared);
		pthread_mutexattr_getrobust(attr, &robust);
		pthread_mutexattr_getprotocol(attr, &protocol);
		if (pshared != PTHREAD_PROCESS_PRIVATE ||
		    robust != PTHREAD_MUTEX_STALLED ||
		    protocol != PTHREAD_PRIO_NONE)
			return REAL(pthread_mutex_init)(m, attr);
	}
	memset(m, 0, sizeof *m);
	__atomic_store_n(&dm(m)->kind, type, __ATOMIC_RELAXED);
	return 0;
}

static int
mutex_destroy(pthread_mutex_t *m)
{
	int kind = dm_kind(m);
	if (dm_is_glibc(kind))
		return REAL(pthread_mutex_destroy)(m);
	if (pl_mutex_is_locked(&dm(m)->lock) ||
	    __atomic_load_n(&dm(m)->cond_waiters, __ATOMIC_RELAXED))
		return EBUSY;
	__atomic_store_n(&dm(m)->kind, DM_DESTROYED, __ATOMIC_RELAXED);
	return 0;
}

/* The deadlock detector forgets a mutex destroyed (deadlock.h): a program
 * of the drop-in has no other way to tell it that the memory may hold
 * another lock next. */
int
pthread_mutex_destroy(pthread_mutex_t *m)
{
	int rc = mutex_destroy(m);
	if (rc == 0)
		pli_deadlock_destroyed(m, sizeof *m);
	return rc;
}

static inline pthread_t
owner(struct dm *d)
{
	return __atomic_load_n(&d->owner, __ATOMIC_RELAXED);
}

static inline void
set_owner(struct dm *d, pthread_t t)
{
	__atomic_store_n(&d->owner, t, __ATOMIC_RELAXED);
}

enum how { LOCK, TRY, TIMED };

/* A lock that must wait, its parks named by the mutex's kind (kind.h);
 * clock -1: no deadline. */
static __attribute__((noinline)) int
lock_slow(
    pl_mutex_t *l, int kind, clockid_t clock, const struct timespec *deadline)
{
	int rc = 0;
	pl__park_as(PLI_KIND_PL_MUTEX, dm_park_kind(kind));
	if (clock == -1) {
		pl_mutex_lock(l);
	} else {
		struct timespec buf;
		rc = pl_mutex_clocklock(
		    l, clock, dropin_deadline(deadline, &buf));
	}
	pl__park_as(PLI_KIND_PL_MUTEX, 0);
	if (rc == 0)
		pli_dropin_taken(l);
	return rc;
}

/*
 * Every kind but the bare ones, and the glibc objects.  clock and
 * deadline for TIMED only: the clock is valid, the deadline is not yet
 * checked (glibc checks it only when it must block).
 */
static __attribute__((noinline)) int
lock_kind(pthread_mutex_t *m, int kind, enum how how, clockid_t clock,
    const struct timespec *deadline)
{
	struct dm *d = dm(m);
	if (kind == DM_DESTROYED)
		return EINVAL;
	if (kind & DM_GLIBC) {
		if (how == LOCK)
			return REAL(pthread_mutex_lock)(m);
		if (how == TRY)
			return REAL(pthread_mutex_trylock)(m);
		return REAL(pthread_mutex_clocklock)(m, clock, deadline);
	}
	pthread_t self = pthread_self();
	int type = kind & 3;
	if (type == PTHREAD_MUTEX_RECURSIVE && owner(d) == self) {
		if (d->count == UINT_MAX)
			return EAGAIN;
		d->count++;
		return 0;
	}
	if (type == PTHREAD_MUTEX_ERRORCHECK && owner(d) == self && how != TRY)
		return EDEADLK;
	if (!pl_mutex_trylock(&d->lock)) {
		if (how == TRY)
			return EBUSY;
		int rc = lock_slow(
		    &d->lock, kind, how == TIMED ? clock : -1, deadline);
		if (rc)
			return rc;
	} else {
		pli_dropin_taken(&d->lock);
	}
	if (type == PTHREAD_MUTEX_RECURSIVE ||
	    type == PTHREAD_MUTEX_ERRORCHECK) {
		set_owner(d, self);
		d->count = 1;
	}
	return 0;
}

/*
 * A process with one thread needs no atomic instruction: nobody else can
 * see the byte, and pthread_create orders these plain accesses before the
 * new thread's first (glibc's own locks do the same with
 * __libc_single_threaded).  The flag stays false once a second thread
 * was ever created.  A signal handler of the one thread that takes the
 * lock sees the byte as the thread left it, as with the atomics.
 */
static inline bool
single_threaded(void)
{
#ifdef PL_TSAN
	return false; /* TSan's model of the lock needs its annotations */
#else
	return __atomic_load_n(&__libc_single_threaded, __ATOMIC_RELAXED);
#endif
}

static inline int
mutex_lock(pthread_mutex_t *m)
{
	int kind = dm_kind(m);
	if (PL_LIKELY(kind == PTHREAD_MUTEX_NORMAL ||
	        kind == PTHREAD_MUTEX_ADAPTIVE_NP)) {
		pl_mutex_t *l = &dm(m)->lock;
		if (PL_LIKELY(single_threaded() && l->state == 0)) {
			l->state = PL_MUTEX_LOCKED;
			return 0;
		}
		if (PL_LIKELY(pl_mutex_trylock(l))) {
			pli_dropin_taken(l);
			return 0;
		}
		return lock_slow(l, kind, -1, NULL);
	}
	return lock_kind(m, kind, LOCK, CLOCK_REALTIME, NULL);
}

static inline int
mutex_trylock(pthread_mutex_t *m)
{
	int kind = dm_kind(m);
	if (PL_LIKELY(kind == PTHREAD_MUTEX_NORMAL ||
	        kind == PTHREAD_MUTEX_ADAPTIVE_NP)) {
		if (!pl_mutex_trylock(&dm(m)->lock))
			return EBUSY;
		pli_dropin_taken(&dm(m)->lock);
		return 0;
	}
	return lock_kind(m, kind, TRY, CLOCK_REALTIME, NULL);
}

static inline int
mutex_clocklock(
    pthread_mutex_t *m, clockid_t clock, const struct timespec *deadline)
{
	int kind = dm_kind(m);
	if (PL_LIKELY(kind == PTHREAD_MUTEX_NORMAL ||
	        kind == PTHREAD_MUTEX_ADAPTIVE_NP)) {
		if (pl_mutex_trylock(&dm(m)->lock)) {
			pli_dropin_taken(&dm(m)->lock);
			return 0;
		}
		return lock_slow(&dm(m)->lock, kind, clock, deadline);
	}
	return lock_kind(m, kind, TIMED, clock, deadline);
}

/*
 * The deadlock detector (deadlock.h), on at run time: every lock and
 * unlock goes through its hooks, here rather than in the fast paths
 * below, which pay one predicted branch for it.  A mutex is known to the
 * detector by its address (its pl_mutex_t's).  Locking a mutex the caller
 * owns, of a kind that keeps its owner, is no acquisition and cannot
 * block: a recursive mutex counts it, an error-checking one says EDEADLK
 * (EBUSY to a trylock).  Nor is unlocking a recursive mutex but the last
 * time a release.  pc and cfa: the call site in the program.
 */
static bool
relocking(pthread_mutex_t *m)
{
	int kind = dm_kind(m);
	int type = kind & 3;
	if (kind == DM_DESTROYED ||
	    (type != PTHREAD_MUTEX_RECURSIVE &&
	        type != PTHREAD_MUTEX_ERRORCHECK))
		return false;
	if (dm_is_glibc(kind)) /* glibc keeps the owner's thread id */
		return __atomic_load_n(&m->__data.__owner, __ATOMIC_RELAXED) ==
		    gettid();
	return owner(dm(m)) == pthread_self();
}

static __attribute__((noinline, cold)) int
checked_lock(pthread_mutex_t *m, enum how how, clockid_t clock,
    const struct timespec *deadline, const void *pc, const void *cfa)
{
	if (relocking(m))
		return how == LOCK ? mutex_lock(m)
		    : how == TRY   ? mutex_trylock(m)
		                   : mutex_clocklock(m, clock, deadline);
	unsigned f = how == TRY ? PL_CHK_TRY : 0;
	pl__chk_pre_lock_at(m, f, pc, cfa);
	int rc = how == LOCK ? mutex_lock(m)
	    : how == TRY     ? mutex_trylock(m)
	                     : mutex_clocklock(m, clock, deadline);
	pl__chk_post_lock_at(m, f | (rc ? PL_CHK_FAILED : 0), pc, cfa);
	return rc;
}

int
pli_dm_checked_lock(pthread_mutex_t *m, bool try,
    const struct timespec *deadline, const void *pc, const void *cfa)
{
	return checked_lock(m,
	    try            ? TRY
	        : deadline ? TIMED
	                   : LOCK,
	    CLOCK_REALTIME, deadline, pc, cfa);
}

int
pthread_mutex_lock(pthread_mutex_t *m)
{
	if (PL_UNLIKELY(pli_deadlock_checking()))
		return checked_lock(m, LOCK, CLOCK_REALTIME, NULL,
		    __builtin_return_address(0), __builtin_dwarf_cfa());
	return mutex_lock(m);
}

int
pthread_mutex_trylock(pthread_mutex_t *m)
{
	if (PL_UNLIKELY(pli_deadlock_checking()))
		return checked_lock(m, TRY, CLOCK_REALTIME, NULL,
		    __builtin_return_address(0), __builtin_dwarf_cfa());
	return mutex_trylock(m);
}

int
pthread_mutex_clocklock(
    pthread_mutex_t *m, clockid_t clock, const struct timespec *deadline)
{
	if (!dropin_clock_ok(clock))
		return EINVAL;
	if (PL_UNLIKELY(pli_deadlock_checking()))
		return checked_lock(m, TIMED, clock, deadline,
		    __builtin_return_address(0), __builtin_dwarf_cfa());
	return mutex_clocklock(m, clock, deadline);
}

int
pthread_mutex_timedlock(pthread_mutex_t *m, const struct timespec *deadline)
{
	if (PL_UNLIKELY(pli_deadlock_checking()))
		return checked_lock(m, TIMED, CLOCK_REALTIME, deadline,
		    __builtin_return_address(0), __builtin_dwarf_cfa());
	return mutex_clocklock(m, CLOCK_REALTIME, deadline);
}

static __attribute__((noinline)) int
unlock_kind(pthread_mutex_t *m, int kind)
{
	struct dm *d = dm(m);
	if (kind == DM_DESTROYED)
		return EINVAL;
	if (kind & DM_GLIBC)
		return REAL(pthread_mutex_unlock)(m);
	int type = kind & 3;
	if (type == PTHREAD_MUTEX_RECURSIVE ||
	    type == PTHREAD_MUTEX_ERRORCHECK) {
		if (owner(d) != pthread_self())
			return EPERM;
		if (--d->count != 0)
			return 0;
		set_owner(d, 0);
	} else if (!pl_mutex_is_locked(&d->lock)) {
		return 0;
	}
	pl_mutex_unlock(&d->lock);
	return 0;
}

static inline int
mutex_unlock(pthread_mutex_t *m)
{
	int kind = dm_kind(m);
	if (PL_LIKELY(kind == PTHREAD_MUTEX_NORMAL ||
	        kind == PTHREAD_MUTEX_ADAPTIVE_NP)) {
		pl_mutex_t *l = &dm(m)->lock;
		unsigned char locked = PL_MUTEX_LOCKED;
		if (PL_LIKELY(
		        single_threaded() && l->state == PL_MUTEX_LOCKED)) {
			l->state = 0;
			return 0;
		}
		/* pl_mutex_unlock, but an unlocked mutex is left alone. */
		PL_TSAN_PRE_UNLOCK(l, 0);
		if (PL_UNLIKELY(!__atomic_compare_exchange_n(&l->state, &locked,
		        0, false, __ATOMIC_RELEASE, __ATOMIC_RELAXED)) &&
		    (locked & PL_MUTEX_LOCKED))
			PL__DIVERTED(l, pl__mutex_unlock_slow(l, false));
		PL_TSAN_POST_UNLOCK(l, 0);
		return 0;
	}
	return unlock_kind(m, kind);
}

/* Whether the caller's unlock of m (whole: a condition wait's, which
 * releases every count) releases it, for the detector, which takes a
 * release of a lock the thread does not hold for one by another thread
 * than the locker (lib/deadlock.c): not when the kind keeps its owner and
 * that is another thread (EPERM), nor for a recursive one held more than
 * once but by a wait, nor a destroyed one.  glibc keeps the owner of all
 * its kinds. */
bool
pli_dm_releases(pthread_mutex_t *m, bool whole)
{
	int kind = dm_kind(m);
	int type = kind & 3;
	if (kind == DM_DESTROYED)
		return false;
	if (type == PTHREAD_MUTEX_RECURSIVE || type == PTHREAD_MUTEX_ERRORCHECK)
		return relocking(m) && (whole || dm(m)->count <= 1);
	if (dm_is_glibc(kind)) /* robust: EPERM to another thread */
		return __atomic_load_n(&m->__data.__owner, __ATOMIC_RELAXED) ==
		    gettid();
	return true;
}

static __attribute__((noinline, cold)) int
checked_unlock(pthread_mutex_t *m)
{
	if (pli_dm_releases(m, false))
		pl__chk_pre_unlock_at(m, 0);
	return mutex_unlock(m);
}

int
pthread_mutex_unlock(pthread_mutex_t *m)
{
	if (PL_UNLIKELY(pli_deadlock_checking()))
		return checked_unlock(m);
	return mutex_unlock(m);
}

/* For a condition wait: the caller must hold m if its kind keeps an
 * owner; the whole recursion is released, and given back by
 * pli_dm_reacquired, which also ends the wait's naming of its parks
 * (cond.c).  The waiter counts in cond_waiters from here to there, as
 * in glibc's __nusers: pthread_mutex_destroy meanwhile says EBUSY.
 * Unlocking is left to pl_cond_clockwait. */
int
pli_dm_release_for_wait(pthread_mutex_t *m, struct dm_saved *s)
{
	struct dm *d = dm(m);
	int type = dm_kind(m) & 3;
	s->m = m;
	s->count = 0;
	if (type == PTHREAD_MUTEX_RECURSIVE ||
	    type == PTHREAD_MUTEX_ERRORCHECK) {
		if (owner(d) != pthread_self())
			return EPERM;
		s->count = d->count;
		set_owner(d, 0);
		d->count = 0;
	}
	__atomic_fetch_add(&d->cond_waiters, 1, __ATOMIC_RELAXED);
	return 0;
}

void
pli_dm_reacquired(void *saved)
{
	struct dm_saved *s = saved;
	pl__park_as(PLI_KIND_PL_COND, 0);
	pl__park_as(PLI_KIND_PL_MUTEX, 0);
	pli_dropin_taken(&dm(s->m)->lock);
	__atomic_fetch_sub(&dm(s->m)->cond_waiters, 1, __ATOMIC_RELAXED);
	if (s->count) {
		struct dm *d = dm(s->m);
		set_owner(d, pthread_self());
		d->count = s->count;
	}
}

int
pthread_mutex_consistent(pthread_mutex_t *m)
{
	if (dm_is_glibc(dm_kind(m)))
		return REAL(pthread_mutex_consistent)(m);
	return EINVAL; /* not robust */
}

int
pthread_mutex_getprioceiling(const pthread_mutex_t *m, int *ceiling)
{
	if (dm_is_glibc(dm_kind((pthread_mutex_t *)m)))
		return REAL(pthread_mutex_getprioceiling)(m, ceiling);
	return EINVAL; /* not priority-protect */
}

int
pthread_mutex_setprioceiling(pthread_mutex_t *m, int ceiling, int *old)
{
	if (dm_is_glibc(dm_kind(m)))
		return REAL(pthread_mutex_setprioceiling)(m, ceiling, old);
	return EINVAL;
}
