/* SPDX-License-Identifier: MIT */
/*
 * pl_rmutex_t slow paths: contended and overflowing lock, timed lock,
 * init.  The fast paths are inline in include/parkinglot/rmutex.h; the
 * waiting itself is pl_mutex_t's (lib/mutex.c), on the embedded mutex.
 *
 * The state is the triple (lock, count, owner):
 *
 *     lock      count  owner
 *     unlocked  0      0        free
 *     locked    n > 0  T        owned by thread T, locked n times
 *     locked    0      0        being taken or released (see below)
 *
 * Transitions, and who makes them:
 *   free -> owned(T, 1)      T, after acquiring lock (any pl_mutex_t way):
 *                            owner = T (relaxed store), then count = 1.
 *   owned(T, n) -> (T, n+1)  T, when owner == T and n < UINT_MAX (count
 *                            only; lock and owner untouched).
 *   owned(T, n) -> (T, n-1)  T's unlock, when n > 1.
 *   owned(T, 1) -> free      T's unlock: count = 0, owner = 0 (relaxed),
 *                            then pl_mutex_unlock(lock) (release).
 * owner and count change only while lock is held, and only by the thread
 * that holds it.  count is touched by the owner alone and needs no
 * atomics; owner is read by every thread that asks "is it mine?", so it
 * is accessed with relaxed atomics.
 *
 * Invariant: owner == T (T != 0) only between T's acquisition of lock and
 * T's release of it.  Why a thread can trust a relaxed load of owner: T
 * reads owner == T only if T wrote it (nobody else writes T's id), and
 * then by coherence no later store has happened (T's own final unlock
 * writes 0 before releasing the lock, and the next owner writes its id
 * after acquiring it, so after T's 0 in owner's modification order).  If T
 * reads anything else it does not own m, whatever stale value it saw.  So
 * is_owned is exact for the caller, and unlock by a non-owner is always
 * caught (EPERM) without touching anything.
 *
 * Why no wakeup is lost: waiting and waking are exactly pl_mutex_t's on
 * the lock field, whose argument is in lib/mutex.c; the rmutex adds no
 * state that a waiter waits on.
 *
 * Thread ids are pthread_self() values: nonzero and unique among live
 * threads.  A thread that exits while owning m leaves it owned forever,
 * and a later thread that happens to get the same pthread_t would be
 * taken for the owner; as with a PTHREAD_MUTEX_RECURSIVE, that is a bug in
 * the program, not detected.
 */
#include <errno.h>
#include <limits.h>
#include <stddef.h>

#include <parkinglot/mutex.h>
#include <parkinglot/rmutex.h>

#include "platform.h"

/* Two words on LP64, where sizeof(uintptr_t) == 8 (three 4-byte words on
 * ILP32, still 16 bytes at most). */
_Static_assert(sizeof(pl_rmutex_t) <= 2 * sizeof(uint64_t),
    "pl_rmutex_t must stay within two words");
_Static_assert(offsetof(pl_rmutex_t, lock) == 0,
    "waiters park on the rmutex's own address");

void
pl_rmutex_init(pl_rmutex_t *m)
{
	pl_mutex_init(&m->lock);
	m->count = 0;
	__atomic_store_n(&m->owner, 0, __ATOMIC_RELAXED);
}

/* Reached when the fast path's CAS on lock failed: either another thread
 * owns m (wait for it), or the caller does and the count is at UINT_MAX
 * (abort: lock returns void, so there is no way to report it). */
PLI_COLD void
pl__rmutex_lock_slow(pl_rmutex_t *m)
{
	uintptr_t self = pl__rmutex_self();
	if (__atomic_load_n(&m->owner, __ATOMIC_RELAXED) == self) {
		if (m->count == UINT_MAX)
			pli_fatal("pl_rmutex_lock: rmutex %p: recursion count "
			          "overflow",
			    (void *)m);
		m->count++;
		return;
	}
	pl_mutex_lock(&m->lock);
	__atomic_store_n(&m->owner, self, __ATOMIC_RELAXED);
	m->count = 1;
}

int
pl_rmutex_timedlock(pl_rmutex_t *m, const struct timespec *deadline)
{
	if (!pli_deadline_valid(deadline))
		return EINVAL;
	uintptr_t self = pl__rmutex_self();
	if (__atomic_load_n(&m->owner, __ATOMIC_RELAXED) == self) {
		if (m->count == UINT_MAX)
			return EAGAIN; /* as pthread_mutex_timedlock does */
		m->count++;
		return 0;
	}
	/* Free: taken whatever the deadline.  Else wait as the mutex does. */
	int rc = pl_mutex_timedlock(&m->lock, deadline);
	if (rc != 0)
		return rc;
	__atomic_store_n(&m->owner, self, __ATOMIC_RELAXED);
	m->count = 1;
	return 0;
}
