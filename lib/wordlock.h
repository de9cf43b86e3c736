/* SPDX-License-Identifier: MIT */
/*
 * The word lock: the one lock of the library's own short critical
 * sections (the buckets, the record pool, the export, the counters page
 * and the tuning).  Drepper's futex mutex from "Futexes are tricky":
 *
 *     0  free
 *     1  locked, nobody sleeps
 *     2  locked, a thread may sleep on the word (unlock must wake one)
 *
 * Never a parking-lot lock (the lot's own paths run under these) and
 * never a pthread mutex: the drop-in (lib/pthread/) defines
 * pthread_mutex_lock on top of the lot, so a pthread mutex inside the lot
 * would call back into it.  All-zero is free; a fork child that inherits
 * one locked by the parent's other thread stores 0 into it.
 */
#ifndef PARKINGLOT_WORDLOCK_H
#define PARKINGLOT_WORDLOCK_H

#include <stdbool.h>
#include <stdint.h>

#include "futex.h"
#include "platform.h"

/* wordlock.c: spin a little (where another CPU may release it), then
 * sleep on the word. */
PLI_COLD void pli_word_lock_slow(uint32_t *l);
/* Whether the slow path spins at all: set by the tuning (spin_limit 0
 * means no other CPU can release a lock). */
void pli_word_lock_spin(bool spin);

static inline void
pli_word_lock(uint32_t *l)
{
	uint32_t c = 0;
	if (!__atomic_compare_exchange_n(
	        l, &c, 1, false, __ATOMIC_ACQUIRE, __ATOMIC_RELAXED))
		pli_word_lock_slow(l);
}

static inline void
pli_word_unlock(uint32_t *l)
{
	if (__atomic_exchange_n(l, 0, __ATOMIC_RELEASE) == 2)
		pli_futex_wake(l, 1);
}

#endif /* PARKINGLOT_WORDLOCK_H */
