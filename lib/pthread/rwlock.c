/* SPDX-License-Identifier: MIT */
/*
 * pthread_rwlock_* on pl_rwlock_t (layout: dropin.h).
 *
 * Kinds, as glibc's: PTHREAD_RWLOCK_PREFER_WRITER_NONRECURSIVE_NP is the
 * phase-fair pl_rwlock_t as it is (an arriving reader waits behind a
 * waiting writer).  The default, PREFER_READER_NP (and PREFER_WRITER_NP,
 * which glibc treats the same), must let a thread that holds a read lock
 * take it again while a writer waits, as POSIX allows and programs do:
 * so a reader enters whenever no writer holds the lock, past waiting
 * writers, with the same CAS on the word as pl_rwlock_tryrdlock (the
 * encoding is public), and takes pl_rwlock's own path, parking, only
 * while a writer holds it.  Every reader, not only one that holds a read
 * lock already: a reader may wait for another thread that needs a read
 * lock while a writer waits, which glibc's default lets through.  The
 * price is glibc's too: a stream of readers starves the writers
 * (lockbench W6 with --dropin: writes 1% of the operations at 16
 * threads, the total a third of pl_rwlock's).  A count per thread of the
 * read locks it holds, letting only those past waiting writers, gave 72-88%
 * of pl_rwlock's throughput with fair shares, but departed from glibc
 * there (tests/test_dropin: another thread's tryrdlock while a writer
 * waits is EBUSY instead of 0).  The writer is recorded (pthread_self()) for
 * EDEADLK on the writer's own rdlock or wrlock, and so that unlock knows
 * which lock the caller holds.  Unlocking a lock the caller holds in
 * neither way returns EPERM (glibc's would corrupt it).
 */
#define _GNU_SOURCE
#include <errno.h>
#include <string.h>

#include "dropin.h"

static inline struct drw *
drw(pthread_rwlock_t *l)
{
	return (struct drw *)(void *)l;
}

static inline bool
is_glibc(pthread_rwlock_t *l)
{
	return __atomic_load_n(&drw(l)->shared, __ATOMIC_RELAXED) != 0;
}

static inline pthread_t
writer(struct drw *d)
{
	return __atomic_load_n(&d->writer, __ATOMIC_RELAXED);
}

int
pthread_rwlock_init(pthread_rwlock_t *l, const pthread_rwlockattr_t *attr)
{
	int kind = PTHREAD_RWLOCK_DEFAULT_NP;
	if (attr) {
		int pshared = PTHREAD_PROCESS_PRIVATE;
		pthread_rwlockattr_getpshared(attr, &pshared);
		if (pshared != PTHREAD_PROCESS_PRIVATE)
			return REAL(pthread_rwlock_init)(l, attr);
		pthread_rwlockattr_getkind_np(attr, &kind);
	}
	memset(l, 0, sizeof *l);
	drw(l)->flags = (unsigned int)kind;
	return 0;
}

int
pthread_rwlock_destroy(pthread_rwlock_t *l)
{
	if (is_glibc(l))
		return REAL(pthread_rwlock_destroy)(l);
	return 0;
}

/* A reader of a reader-preferring lock: in unless a writer holds it. */
static inline bool
barge(struct drw *d)
{
	if (__atomic_load_n(&d->flags, __ATOMIC_RELAXED) ==
	    PTHREAD_RWLOCK_PREFER_WRITER_NONRECURSIVE_NP)
		return false;
	pl_rwlock_t *l = &d->lock;
	PL_TSAN_PRE_LOCK(l, PL_TSAN_READ | PL_TSAN_TRY);
	uintptr_t s = __atomic_load_n(&l->state, __ATOMIC_RELAXED);
	bool ok = false;
	while (!(s & PL_RWLOCK_WRITER) && s < PL_RWLOCK_READERS_MAX) {
		if (__atomic_compare_exchange_n(&l->state, &s,
		        s + PL_RWLOCK_ONE_READER, true, __ATOMIC_ACQUIRE,
		        __ATOMIC_RELAXED)) {
			ok = true;
			break;
		}
	}
	PL_TSAN_POST_LOCK(
	    l, PL_TSAN_READ | PL_TSAN_TRY | (ok ? 0 : PL_TSAN_TRY_FAILED));
	return ok;
}

enum how { LOCK, TRY, TIMED };

static int
rdlock(pthread_rwlock_t *l, enum how how, clockid_t clock,
    const struct timespec *deadline)
{
	struct drw *d = drw(l);
	if (PL_UNLIKELY(is_glibc(l))) {
		if (how == LOCK)
			return REAL(pthread_rwlock_rdlock)(l);
		if (how == TRY)
			return REAL(pthread_rwlock_tryrdlock)(l);
		return REAL(pthread_rwlock_clockrdlock)(l, clock, deadline);
	}
	if (how == TIMED &&
	    (!dropin_clock_ok(clock) || !dropin_nsec_ok(deadline)))
		return EINVAL;
	if (pl_rwlock_tryrdlock(&d->lock) || barge(d))
		return 0;
	if (how == TRY)
		return EBUSY;
	if (writer(d) == pthread_self())
		return EDEADLK;
	int rc = 0;
	pl__park_as(PLI_KIND_PL_RWLOCK, PLI_KIND_PTHREAD_RWLOCK);
	if (how == LOCK) {
		pl_rwlock_rdlock(&d->lock);
	} else {
		struct timespec buf;
		rc = pl_rwlock_clockrdlock(
		    &d->lock, clock, dropin_deadline(deadline, &buf));
	}
	pl__park_as(PLI_KIND_PL_RWLOCK, 0);
	return rc;
}

static int
wrlock(pthread_rwlock_t *l, enum how how, clockid_t clock,
    const struct timespec *deadline)
{
	struct drw *d = drw(l);
	if (PL_UNLIKELY(is_glibc(l))) {
		if (how == LOCK)
			return REAL(pthread_rwlock_wrlock)(l);
		if (how == TRY)
			return REAL(pthread_rwlock_trywrlock)(l);
		return REAL(pthread_rwlock_clockwrlock)(l, clock, deadline);
	}
	if (how == TIMED &&
	    (!dropin_clock_ok(clock) || !dropin_nsec_ok(deadline)))
		return EINVAL;
	pthread_t self = pthread_self();
	if (!pl_rwlock_trywrlock(&d->lock)) {
		if (how == TRY)
			return EBUSY;
		if (writer(d) == self)
			return EDEADLK;
		int rc = 0;
		pl__park_as(PLI_KIND_PL_RWLOCK, PLI_KIND_PTHREAD_RWLOCK);
		if (how == LOCK) {
			pl_rwlock_wrlock(&d->lock);
		} else {
			struct timespec buf;
			rc = pl_rwlock_clockwrlock(
			    &d->lock, clock, dropin_deadline(deadline, &buf));
		}
		pl__park_as(PLI_KIND_PL_RWLOCK, 0);
		if (rc)
			return rc;
	}
	__atomic_store_n(&d->writer, self, __ATOMIC_RELAXED);
	return 0;
}

int
pthread_rwlock_rdlock(pthread_rwlock_t *l)
{
	return rdlock(l, LOCK, CLOCK_REALTIME, NULL);
}

int
pthread_rwlock_tryrdlock(pthread_rwlock_t *l)
{
	return rdlock(l, TRY, CLOCK_REALTIME, NULL);
}

int
pthread_rwlock_timedrdlock(pthread_rwlock_t *l, const struct timespec *deadline)
{
	return rdlock(l, TIMED, CLOCK_REALTIME, deadline);
}

int
pthread_rwlock_clockrdlock(
    pthread_rwlock_t *l, clockid_t clock, const struct timespec *deadline)
{
	return rdlock(l, TIMED, clock, deadline);
}

int
pthread_rwlock_wrlock(pthread_rwlock_t *l)
{
	return wrlock(l, LOCK, CLOCK_REALTIME, NULL);
}

int
pthread_rwlock_trywrlock(pthread_rwlock_t *l)
{
	return wrlock(l, TRY, CLOCK_REALTIME, NULL);
}

int
pthread_rwlock_timedwrlock(pthread_rwlock_t *l, const struct timespec *deadline)
{
	return wrlock(l, TIMED, CLOCK_REALTIME, deadline);
}

int
pthread_rwlock_clockwrlock(
    pthread_rwlock_t *l, clockid_t clock, const struct timespec *deadline)
{
	return wrlock(l, TIMED, clock, deadline);
}

int
pthread_rwlock_unlock(pthread_rwlock_t *l)
{
	struct drw *d = drw(l);
	if (PL_UNLIKELY(is_glibc(l)))
		return REAL(pthread_rwlock_unlock)(l);
	if (writer(d) == pthread_self()) {
		__atomic_store_n(&d->writer, 0, __ATOMIC_RELAXED);
		pl_rwlock_wrunlock(&d->lock);
		return 0;
	}
	if (__atomic_load_n(&d->lock.state, __ATOMIC_RELAXED) <
	    PL_RWLOCK_ONE_READER)
		return EPERM; /* held by nobody as a reader */
	pl_rwlock_rdunlock(&d->lock);
	return 0;
}
