/* SPDX-License-Identifier: MIT */
/*
 * The two-bit lock algorithm (lib/twobit.c): the slow paths of every lock
 * whose whole state is a LOCKED bit and a PARKED bit of a word, after
 * WebKit's LockAlgorithm.  pl_mutex_t (lib/mutex.c) and the bit locks
 * (lib/bitlock.c) are this algorithm with different words and bits.
 */
#ifndef PARKINGLOT_TWOBIT_H
#define PARKINGLOT_TWOBIT_H

#include <stdbool.h>
#include <stdint.h>
#include <time.h>

#include <parkinglot/mutex.h>

/* One lock: where its word is, how wide it is, and its two bits. */
struct pli_twobit {
	void *word;
	unsigned char size; /* 1 (a byte) or sizeof(uintptr_t) */
	/* The word may hold other locks (bit locks share words): waiters
	 * park with locked as their token, and an unlock wakes only those.
	 * Without it every waiter on the word is this lock's, whatever its
	 * token (a condition variable requeues its own onto a mutex). */
	bool shared;
	uintptr_t locked, parked;
};

/* Acquire l, spinning and then parking until deadline (absolute on
 * clock, CLOCK_MONOTONIC or CLOCK_REALTIME; valid: the caller reports
 * EINVAL; NULL: none).
 * Returns 0 with l held, or ETIMEDOUT.  A free lock is taken whatever the
 * deadline; a deadline already passed costs one clock read, after the
 * first try, and no spinning or parking. */
int pli_twobit_lock(const struct pli_twobit *l, clockid_t clock,
    const struct timespec *deadline);

/* Acquire l as pli_twobit_lock's woken thread does, keeping its turn in
 * the queue (PLI_PARK_AGAIN), for a thread that an unlock of l woke from
 * l's queue outside pli_twobit_lock (a condition waiter moved onto a
 * mutex; lib/cond.c) and that has re-armed and tried l once.  No
 * deadline. */
void pli_twobit_lock_woken(const struct pli_twobit *l);

/* Release l, which the fast path could not: waiters parked, another bit
 * of the word changed, or a fair unlock.  name is the public function,
 * for the report of an unlock of a lock that is not locked. */
void pli_twobit_unlock(const struct pli_twobit *l, bool fair, const char *name);

/* The token of a waiter woken by an unlock that cleared P while others
 * stayed queued: before it competes (in pli_twobit_lock, or with the
 * fast path, as a condition waiter moved onto a mutex does), it sets P
 * again with pli_twobit_rearm, so that the holder after it wakes the
 * next. */
#define PLI_TOKEN_REARM ((uintptr_t)2)

static inline void
pli_twobit_rearm(const struct pli_twobit *l)
{
	if (l->size == 1)
		__atomic_fetch_or((unsigned char *)l->word,
		    (unsigned char)l->parked, __ATOMIC_RELAXED);
	else
		__atomic_fetch_or(
		    (uintptr_t *)l->word, l->parked, __ATOMIC_RELAXED);
}

/* Lock m as a condition waiter that an unlock of m woke from m's queue
 * with PLI_TOKEN_REARM: re-arm, try once, else pli_twobit_lock_woken;
 * with the annotations of pl_mutex_lock (lib/mutex.c). */
void pli_mutex_lock_woken(pl_mutex_t *m);

#endif /* PARKINGLOT_TWOBIT_H */
