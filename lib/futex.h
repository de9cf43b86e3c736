/* SPDX-License-Identifier: MIT */
/*
 * The two futex operations the library sleeps and wakes with.  Private
 * futexes only (process-shared locks are out of scope).  Waits take an
 * absolute CLOCK_MONOTONIC deadline through FUTEX_WAIT_BITSET, so a wait
 * that is interrupted and restarted never stretches the deadline.
 */
#ifndef PARKINGLOT_FUTEX_H
#define PARKINGLOT_FUTEX_H

#include <errno.h>
#include <limits.h>
#include <linux/futex.h>
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

#endif /* PARKINGLOT_FUTEX_H */
