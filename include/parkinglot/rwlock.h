/* SPDX-License-Identifier: MIT */
/*
 * pl_rwlock_t: a one-word, phase-fair reader-writer lock built on the
 * parking lot.
 *
 * Phase-fair (Brandenburg and Anderson): under contention, reader phases
 * and writer phases alternate.  When a writer releases, every reader
 * waiting at that moment enters together, before any waiting writer; a
 * reader that arrives while a writer waits queues behind that writer; so a
 * writer waits for at most one reader phase and a reader for at most one
 * writer.  Writers among themselves are not ordered: a free lock goes to
 * whichever writer takes it first.
 *
 * The word (the encoding is ABI):
 *
 *   bit 0  PL_RWLOCK_WRITER          a writer holds the lock
 *   bit 1  PL_RWLOCK_WRITER_PARKED   writers are parked (new readers wait)
 *   bit 2  PL_RWLOCK_READER_PARKED   readers are parked
 *   bit 3  PL_RWLOCK_WRITER_WAITING  a writer spins for the readers to
 *                                    leave (new readers wait)
 *   bit 4  PL_RWLOCK_READER_WAITING  readers spun through a writer's hold
 *                                    (the next phase is theirs)
 *   bits 5..  the number of readers holding the lock (PL_RWLOCK_ONE_READER
 *             each)
 *
 * Readers park on the lock's address, writers on the address one byte
 * further (inside the word, so no other object can share it).  All-zero
 * memory is an unlocked lock; there is nothing to destroy.  Not reentrant
 * for writers; a reader that takes the read lock again while a writer waits
 * deadlocks, as with any phase-fair or writer-preferring lock.
 */
#ifndef PARKINGLOT_RWLOCK_H
#define PARKINGLOT_RWLOCK_H

#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h> /* clockid_t, also under -std=c11 */
#include <time.h>

#include <parkinglot/defs.h>

PL_BEGIN_DECLS

typedef struct {
	uintptr_t state;
} pl_rwlock_t;

#define PL_RWLOCK_INITIALIZER                                                  \
	{                                                                      \
		0                                                              \
	}
#define PL_RWLOCK_WRITER ((uintptr_t)1)
#define PL_RWLOCK_WRITER_PARKED ((uintptr_t)2)
#define PL_RWLOCK_READER_PARKED ((uintptr_t)4)
#define PL_RWLOCK_WRITER_WAITING ((uintptr_t)8)
#define PL_RWLOCK_READER_WAITING ((uintptr_t)16)
#define PL_RWLOCK_ONE_READER ((uintptr_t)32)
/* Whether an arriving reader may enter a lock in state s: no writer
 * holds it or waits for it.  (The slow path also lets in, past parked
 * writers, the readers that waited through a writer's hold: lib/rwlock.c.) */
#define PL_RWLOCK_READER_MAY_ENTER(s)                                          \
	(!((s) &                                                               \
	    (PL_RWLOCK_WRITER | PL_RWLOCK_WRITER_WAITING |                     \
	        PL_RWLOCK_WRITER_PARKED)))
/* Reader counts at or above this take the slow path, which aborts rather
 * than let the count wrap (2^26 readers on 32 bits, 2^58 on 64). */
#define PL_RWLOCK_READERS_MAX (UINTPTR_MAX / 2 & ~(PL_RWLOCK_ONE_READER - 1))

PL_EXPORT int pl__rwlock_rdlock_slow(
    pl_rwlock_t *l, const struct timespec *deadline);
PL_EXPORT void pl__rwlock_rdunlock_slow(pl_rwlock_t *l);
PL_EXPORT int pl__rwlock_wrlock_slow(
    pl_rwlock_t *l, const struct timespec *deadline);
PL_EXPORT void pl__rwlock_wrunlock_slow(pl_rwlock_t *l);

/* pl_rwlock_init - make *l an unlocked lock (the same as zeroing it). */
PL_EXPORT void pl_rwlock_init(pl_rwlock_t *l);

/*
 * pl_rwlock_tryrdlock - take a read lock if no writer holds or waits for
 * the lock.  Returns true with the read lock held (acquire ordering).
 */
static inline bool
pl__rwlock_tryrdlock_raw(pl_rwlock_t *l)
{
	uintptr_t s = __atomic_load_n(&l->state, __ATOMIC_RELAXED);
	while (PL_RWLOCK_READER_MAY_ENTER(s) && s < PL_RWLOCK_READERS_MAX) {
		if (__atomic_compare_exchange_n(&l->state, &s,
		        s + PL_RWLOCK_ONE_READER, true, __ATOMIC_ACQUIRE,
		        __ATOMIC_RELAXED))
			return true;
	}
	return false;
}

static inline bool
pl_rwlock_tryrdlock(pl_rwlock_t *l)
{
	PL_TSAN_PRE_LOCK(l, PL_TSAN_READ | PL_TSAN_TRY);
	bool ok = pl__rwlock_tryrdlock_raw(l);
	PL_TSAN_POST_LOCK(
	    l, PL_TSAN_READ | PL_TSAN_TRY | (ok ? 0 : PL_TSAN_TRY_FAILED));
	if (ok)
		PL_CHK_POST_LOCK(l, PL_CHK_READ | PL_CHK_TRY);
	return ok;
}

/*
 * pl_rwlock_rdlock - take a read lock, blocking while a writer holds the
 * lock or waits for it (then parking after a brief spin).  Many readers
 * may hold the lock at once.
 */
static inline void
pl_rwlock_rdlock(pl_rwlock_t *l)
{
	PL_CHK_PRE_LOCK(l, PL_CHK_READ);
	PL_TSAN_PRE_LOCK(l, PL_TSAN_READ);
	if (PL_UNLIKELY(!pl__rwlock_tryrdlock_raw(l)))
		PL__DIVERTED(l, pl__rwlock_rdlock_slow(l, NULL));
	PL_TSAN_POST_LOCK(l, PL_TSAN_READ);
}

/*
 * pl_rwlock_timedrdlock - pl_rwlock_rdlock with an absolute
 * CLOCK_MONOTONIC deadline.  Returns 0, ETIMEDOUT or EINVAL (malformed
 * deadline, checked first).  A reader that times out leaves no trace.
 */
PL_EXPORT int pl_rwlock_timedrdlock(
    pl_rwlock_t *l, const struct timespec *deadline);
/* pl_rwlock_clockrdlock - pl_rwlock_timedrdlock with the deadline on
 * clock, CLOCK_MONOTONIC or CLOCK_REALTIME (another clock: EINVAL). */
PL_EXPORT int pl_rwlock_clockrdlock(
    pl_rwlock_t *l, clockid_t clock, const struct timespec *deadline);

/*
 * pl_rwlock_rdunlock - release a read lock (release ordering).  The last
 * reader out hands the lock to a waiting writer, if any.  Releasing a read
 * lock that is not held aborts with a message.
 */
static inline void
pl_rwlock_rdunlock(pl_rwlock_t *l)
{
	uintptr_t s = __atomic_load_n(&l->state, __ATOMIC_RELAXED);
#ifdef PL_TSAN
	if (s < PL_RWLOCK_ONE_READER) /* misuse: ours before TSan's report */
		pl__rwlock_rdunlock_slow(l);
#endif
	PL_CHK_PRE_UNLOCK(l, PL_CHK_READ);
	PL_TSAN_PRE_UNLOCK(l, PL_TSAN_READ);
	/* Fast only while other readers remain or nobody waits. */
	while (s >= 2 * PL_RWLOCK_ONE_READER ||
	    (s >= PL_RWLOCK_ONE_READER &&
	        !(s &
	            (PL_RWLOCK_WRITER_PARKED | PL_RWLOCK_READER_PARKED |
	                PL_RWLOCK_READER_WAITING)))) {
		if (__atomic_compare_exchange_n(&l->state, &s,
		        s - PL_RWLOCK_ONE_READER, true, __ATOMIC_RELEASE,
		        __ATOMIC_RELAXED))
			goto out;
	}
	PL__DIVERTED(l, pl__rwlock_rdunlock_slow(l));
out:
	PL_TSAN_POST_UNLOCK(l, PL_TSAN_READ);
}

/* pl_rwlock_trywrlock - take the write lock if nobody holds the lock. */
static inline bool
pl__rwlock_trywrlock_raw(pl_rwlock_t *l)
{
	uintptr_t s = __atomic_load_n(&l->state, __ATOMIC_RELAXED);
	while (!(s & (PL_RWLOCK_WRITER | PL_RWLOCK_READER_WAITING)) &&
	    s < PL_RWLOCK_ONE_READER) {
		/* A writer that gets in ends the wait of the spinning ones. */
		if (__atomic_compare_exchange_n(&l->state, &s,
		        (s | PL_RWLOCK_WRITER) & ~PL_RWLOCK_WRITER_WAITING,
		        true, __ATOMIC_ACQUIRE, __ATOMIC_RELAXED))
			return true;
	}
	return false;
}

static inline bool
pl_rwlock_trywrlock(pl_rwlock_t *l)
{
	PL_TSAN_PRE_LOCK(l, PL_TSAN_TRY);
	bool ok = pl__rwlock_trywrlock_raw(l);
	PL_TSAN_POST_LOCK(l, PL_TSAN_TRY | (ok ? 0 : PL_TSAN_TRY_FAILED));
	if (ok)
		PL_CHK_POST_LOCK(l, PL_CHK_TRY);
	return ok;
}

/*
 * pl_rwlock_wrlock - take the write lock, blocking while readers or a
 * writer hold it.  While it waits, arriving readers queue behind it.
 */
static inline void
pl_rwlock_wrlock(pl_rwlock_t *l)
{
	uintptr_t unlocked = 0;
	PL_CHK_PRE_LOCK(l, 0);
	PL_TSAN_PRE_LOCK(l, 0);
	if (PL_UNLIKELY(!__atomic_compare_exchange_n(&l->state, &unlocked,
	        PL_RWLOCK_WRITER, false, __ATOMIC_ACQUIRE, __ATOMIC_RELAXED)))
		PL__DIVERTED(l, pl__rwlock_wrlock_slow(l, NULL));
	PL_TSAN_POST_LOCK(l, 0);
}

/*
 * pl_rwlock_timedwrlock - pl_rwlock_wrlock with an absolute
 * CLOCK_MONOTONIC deadline.  Returns 0, ETIMEDOUT or EINVAL.  A writer
 * that times out leaves no trace: readers it held back are let in.
 */
PL_EXPORT int pl_rwlock_timedwrlock(
    pl_rwlock_t *l, const struct timespec *deadline);
/* pl_rwlock_clockwrlock - pl_rwlock_timedwrlock with the deadline on
 * clock, CLOCK_MONOTONIC or CLOCK_REALTIME (another clock: EINVAL). */
PL_EXPORT int pl_rwlock_clockwrlock(
    pl_rwlock_t *l, clockid_t clock, const struct timespec *deadline);

/*
 * pl_rwlock_wrunlock - release the write lock (release ordering).  Waiting
 * readers, if any, all enter now (phase fairness); otherwise a waiting
 * writer is woken.  Releasing a write lock that is not held aborts.
 */
static inline void
pl_rwlock_wrunlock(pl_rwlock_t *l)
{
	uintptr_t locked = PL_RWLOCK_WRITER;
#ifdef PL_TSAN
	/* Misuse: report it as ours, before TSan's report. */
	if (!(__atomic_load_n(&l->state, __ATOMIC_RELAXED) & PL_RWLOCK_WRITER))
		pl__rwlock_wrunlock_slow(l);
#endif
	PL_CHK_PRE_UNLOCK(l, 0);
	PL_TSAN_PRE_UNLOCK(l, 0);
	if (PL_UNLIKELY(!__atomic_compare_exchange_n(&l->state, &locked, 0,
	        false, __ATOMIC_RELEASE, __ATOMIC_RELAXED)))
		PL__DIVERTED(l, pl__rwlock_wrunlock_slow(l));
	PL_TSAN_POST_UNLOCK(l, 0);
}

#ifdef PL_CHECKED
/* Checked mode (defs.h): the out-of-line calls through the hooks too. */
#define PL__CHK_RWLOCK_TIMED(name, flags, ...)                                 \
	do {                                                                   \
		PL_CHK_PRE_LOCK(l, flags);                                     \
		int rc = (name)(__VA_ARGS__);                                  \
		if (rc)                                                        \
			PL_CHK_POST_LOCK(l, (flags) | PL_CHK_FAILED);          \
		return rc;                                                     \
	} while (0)
static inline __attribute__((always_inline)) int
pl__chk_rwlock_timedrdlock(pl_rwlock_t *l, const struct timespec *deadline)
{
	PL__CHK_RWLOCK_TIMED(pl_rwlock_timedrdlock, PL_CHK_READ, l, deadline);
}
static inline __attribute__((always_inline)) int
pl__chk_rwlock_clockrdlock(
    pl_rwlock_t *l, clockid_t clock, const struct timespec *deadline)
{
	PL__CHK_RWLOCK_TIMED(
	    pl_rwlock_clockrdlock, PL_CHK_READ, l, clock, deadline);
}
static inline __attribute__((always_inline)) int
pl__chk_rwlock_timedwrlock(pl_rwlock_t *l, const struct timespec *deadline)
{
	PL__CHK_RWLOCK_TIMED(pl_rwlock_timedwrlock, 0u, l, deadline);
}
static inline __attribute__((always_inline)) int
pl__chk_rwlock_clockwrlock(
    pl_rwlock_t *l, clockid_t clock, const struct timespec *deadline)
{
	PL__CHK_RWLOCK_TIMED(pl_rwlock_clockwrlock, 0u, l, clock, deadline);
}
#undef PL__CHK_RWLOCK_TIMED
#define pl_rwlock_timedrdlock(l, d) pl__chk_rwlock_timedrdlock((l), (d))
#define pl_rwlock_clockrdlock(l, c, d) pl__chk_rwlock_clockrdlock((l), (c), (d))
#define pl_rwlock_timedwrlock(l, d) pl__chk_rwlock_timedwrlock((l), (d))
#define pl_rwlock_clockwrlock(l, c, d) pl__chk_rwlock_clockwrlock((l), (c), (d))
#endif

PL_END_DECLS

#endif /* PARKINGLOT_RWLOCK_H */
