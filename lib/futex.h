/* SPDX-License-Identifier: MIT */
/*
 * The two futex operations the library sleeps and wakes with, and the
 * once made of them.  Private futexes only (process-shared locks are out
 * of scope).  Waits take an absolute CLOCK_MONOTONIC deadline through
 * FUTEX_WAIT_BITSET, so a wait that is interrupted and restarted never
 * stretches the deadline.
 */
#ifndef PARKINGLOT_FUTEX_H
#define PARKINGLOT_FUTEX_H

#include <errno.h>
#include <limits.h>
#include <linux/futex.h>
#include <stdbool.h>
#include <stdint.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

/* Sleep while *word == val, until woken or the deadline on clock (NULL:
 * none; clock CLOCK_MONOTONIC or CLOCK_REALTIME).  Returns 0 when woken
 * (or spuriously), EAGAIN when *word != val, EINTR on a signal, ETIMEDOUT
 * when the deadline passed.  Callers loop on their own condition: every
 * return but ETIMEDOUT may be spurious. */
static inline int
pli_futex_wait_on(uint32_t *word, uint32_t val, clockid_t clock,
    const struct timespec *deadline)
{
	int saved = errno; /* the lock calls leave errno alone */
	int op = FUTEX_WAIT_BITSET_PRIVATE |
	    (clock == CLOCK_REALTIME ? FUTEX_CLOCK_REALTIME : 0);
	long r = syscall(
	    SYS_futex, word, op, val, deadline, NULL, FUTEX_BITSET_MATCH_ANY);
	int err = r == 0 ? 0 : errno;
	errno = saved;
	return err;
}

static inline int
pli_futex_wait(uint32_t *word, uint32_t val, const struct timespec *deadline)
{
	return pli_futex_wait_on(word, val, CLOCK_MONOTONIC, deadline);
}

/* Wake up to n threads sleeping on word. */
static inline void
pli_futex_wake(uint32_t *word, int n)
{
	int saved = errno;
	syscall(SYS_futex, word, FUTEX_WAKE_PRIVATE, n, NULL, NULL, 0);
	errno = saved;
}

/*
 * A once on a word, for the library's own one-time work (the tuning's
 * refinement, the statistics page), which cannot park in the lot:
 *
 *     PLI_ONCE_NONE  not started      PLI_ONCE_RUNNING  one thread runs it
 *     PLI_ONCE_DONE  done
 *
 * The thread whose pli_once_claim moves the word from NONE runs the work
 * and calls pli_once_done, which stores DONE and wakes every sleeper; the
 * others call pli_once_wait, which sleeps while the word is RUNNING (a
 * sleep that begins after the store returns at once, one that began
 * before it is woken).  Acquire and release order the work before every
 * waiter's return.  A fork child, whose only thread is the forking one,
 * calls pli_once_forked: work a thread of the parent was running starts
 * over.  model/once.pml checks it.
 */
enum { PLI_ONCE_NONE, PLI_ONCE_RUNNING, PLI_ONCE_DONE };

static inline bool
pli_once_claim(uint32_t *word)
{
	uint32_t s = PLI_ONCE_NONE;
	return __atomic_compare_exchange_n(word, &s, PLI_ONCE_RUNNING, false,
	    __ATOMIC_ACQUIRE, __ATOMIC_RELAXED);
}

static inline void
pli_once_done(uint32_t *word)
{
	__atomic_store_n(word, PLI_ONCE_DONE, __ATOMIC_RELEASE);
	pli_futex_wake(word, INT_MAX);
}

static inline void
pli_once_wait(uint32_t *word)
{
	uint32_t s;
	while ((s = __atomic_load_n(word, __ATOMIC_ACQUIRE)) != PLI_ONCE_DONE)
		pli_futex_wait(word, s, NULL);
}

static inline void
pli_once_forked(uint32_t *word)
{
	if (__atomic_load_n(word, __ATOMIC_RELAXED) == PLI_ONCE_RUNNING)
		__atomic_store_n(word, PLI_ONCE_NONE, __ATOMIC_RELAXED);
}

#endif /* PARKINGLOT_FUTEX_H */
