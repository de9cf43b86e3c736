/* SPDX-License-Identifier: MIT */
/*
 * pl_rmutex_t: a reentrant (recursive) mutex built on pl_mutex_t.
 *
 * The thread that holds it may lock it again; it is released when it has
 * been unlocked as many times as it was locked.  Three fields, and their
 * meaning is ABI, because the inline fast paths below are compiled into
 * users' binaries:
 *
 *     lock   a pl_mutex_t, held while the rmutex is owned; threads that
 *            wait for the rmutex park on it (its address is the rmutex's)
 *     count  how many times the owner has locked it; read and written by
 *            the owner only (0 when free)
 *     owner  the owner's thread id, pl__rmutex_self(), or 0 when free;
 *            written by the owner, read by any thread, always with relaxed
 *            atomics
 *
 * All-zero memory is a free rmutex; there is nothing to destroy.  The
 * protocol and why a thread can trust "owner == me" is stated in
 * lib/rmutex.c.
 */
#ifndef PARKINGLOT_RMUTEX_H
#define PARKINGLOT_RMUTEX_H

#include <errno.h>
#include <limits.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>
#include <time.h>

#include <parkinglot/defs.h>
#include <parkinglot/mutex.h>

PL_BEGIN_DECLS

typedef struct {
	pl_mutex_t lock;    /* held while the rmutex is owned */
	unsigned int count; /* recursion depth; the owner's alone */
	uintptr_t owner;    /* the owner's id, 0 when free (relaxed atomic) */
} pl_rmutex_t;

#define PL_RMUTEX_INITIALIZER                                                  \
	{                                                                      \
		PL_MUTEX_INITIALIZER, 0, 0                                     \
	}

/* Out of line: the recursion-count overflow abort (it also locks m, for
 * callers that reach it otherwise).  Exported only for the fast path. */
PL_EXPORT void pl__rmutex_lock_slow(pl_rmutex_t *m);

/*
 * pl__rmutex_self - the calling thread's id as stored in owner: its
 * pthread_t, which is nonzero and unique among the live threads of the
 * process (on glibc and musl the address of the thread's control block).
 * The library and every inline caller compute it the same way.
 */
static inline uintptr_t
pl__rmutex_self(void)
{
	return (uintptr_t)pthread_self();
}

/* pl_rmutex_init - make *m a free rmutex (the same as zeroing it). */
PL_EXPORT void pl_rmutex_init(pl_rmutex_t *m);

/*
 * pl_rmutex_lock - acquire m, blocking until it is free, or lock it once
 * more if the calling thread owns it already.
 *
 * Recursive: one relaxed load of owner and an increment, no atomic
 * read-modify-write and no ordering (the caller already holds m).  First
 * acquisition: that of pl_mutex_lock, one compare-and-swap with acquire
 * ordering when free; contended, it spins briefly and parks.  Fairness
 * as for pl_mutex_t: barging, and eventual hand-offs.  Locking m more than
 * UINT_MAX times without unlocking prints "pl_rmutex_lock: rmutex 0x...:
 * recursion count overflow" and aborts.
 */
static inline void
pl_rmutex_lock(pl_rmutex_t *m)
{
	uintptr_t self = pl__rmutex_self();
	if (__atomic_load_n(&m->owner, __ATOMIC_RELAXED) == self) {
		if (PL_UNLIKELY(m->count == UINT_MAX))
			pl__rmutex_lock_slow(m); /* reports the overflow */
		m->count++;
		return;
	}
	pl_mutex_lock(&m->lock);
	__atomic_store_n(&m->owner, self, __ATOMIC_RELAXED);
	m->count = 1;
}

/*
 * pl_rmutex_trylock - acquire m only if that needs no waiting: returns
 * true if m was free (now held, acquire ordering) or already owned by the
 * caller (its count is incremented), false if another thread owns it or
 * if the count would overflow.  Never blocks; may take a free m past
 * parked waiters, as pl_rmutex_lock may.
 */
static inline bool
pl_rmutex_trylock(pl_rmutex_t *m)
{
	uintptr_t self = pl__rmutex_self();
	if (__atomic_load_n(&m->owner, __ATOMIC_RELAXED) == self) {
		if (PL_UNLIKELY(m->count == UINT_MAX))
			return false;
		m->count++;
		return true;
	}
	if (!pl_mutex_trylock(&m->lock))
		return false;
	__atomic_store_n(&m->owner, self, __ATOMIC_RELAXED);
	m->count = 1;
	return true;
}

/*
 * pl_rmutex_timedlock - pl_rmutex_lock with an absolute CLOCK_MONOTONIC
 * deadline (NULL: no deadline).  Returns EINVAL for a malformed deadline,
 * before anything else; 0 at once if the caller owns m (count
 * incremented) or m is free; EAGAIN if the count would overflow (m is
 * unchanged); otherwise waits as pl_mutex_timedlock does and returns 0
 * with m held (acquire ordering) or ETIMEDOUT once the deadline passed.
 */
PL_EXPORT int pl_rmutex_timedlock(
    pl_rmutex_t *m, const struct timespec *deadline);

#ifdef PL_CHECKED
/* Checked mode (defs.h): the hooks see an rmutex as its pl_mutex_t (the
 * same address), through the inline calls above; a recursive lock is
 * none of theirs, since the thread holds the rmutex already. */
static inline __attribute__((always_inline)) int
pl__chk_rmutex_timedlock(pl_rmutex_t *m, const struct timespec *deadline)
{
	if (__atomic_load_n(&m->owner, __ATOMIC_RELAXED) == pl__rmutex_self())
		return (pl_rmutex_timedlock)(m, deadline);
	PL_CHK_PRE_LOCK(m, 0);
	int rc = (pl_rmutex_timedlock)(m, deadline);
	if (rc)
		PL_CHK_POST_LOCK(m, PL_CHK_FAILED);
	return rc;
}
#define pl_rmutex_timedlock(m, d) pl__chk_rmutex_timedlock((m), (d))
#endif

/*
 * pl_rmutex_unlock - undo one lock of m by the calling thread.
 *
 * Returns EPERM, and changes nothing, if the caller does not own m
 * (including when m is free).  Otherwise returns 0 after decrementing the
 * count; when it reaches 0, clears owner and releases m (release
 * ordering), waking at most one waiter, or handing m to the oldest one
 * when the parking lot's fairness timer has expired (see pl_mutex_unlock).
 */
static inline int
pl_rmutex_unlock(pl_rmutex_t *m)
{
	if (PL_UNLIKELY(__atomic_load_n(&m->owner, __ATOMIC_RELAXED) !=
	        pl__rmutex_self()))
		return EPERM;
	if (--m->count == 0) {
		__atomic_store_n(&m->owner, 0, __ATOMIC_RELAXED);
		pl_mutex_unlock(&m->lock);
	}
	return 0;
}

/*
 * pl_rmutex_is_owned - whether the calling thread owns m.  Exact for the
 * caller (only the caller can make the answer change), a relaxed load
 * with no ordering.
 */
static inline bool
pl_rmutex_is_owned(const pl_rmutex_t *m)
{
	return __atomic_load_n(&m->owner, __ATOMIC_RELAXED) ==
	    pl__rmutex_self();
}

PL_END_DECLS

#endif /* PARKINGLOT_RMUTEX_H */
