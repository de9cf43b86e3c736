/* SPDX-License-Identifier: MIT */
/* The slow path of the word lock (wordlock.h). */
#include "wordlock.h"

/* Rounds of spinning before sleeping: critical sections are a few list
 * operations and a callback.  None where no other CPU can release the
 * lock: the tuning says so (pli_word_lock_spin), so that this file
 * depends on nothing of the tuning. */
#define WORD_SPINS 100u
static unsigned word_spins = WORD_SPINS;

void
pli_word_lock_spin(bool spin)
{
	__atomic_store_n(&word_spins, spin ? WORD_SPINS : 0u, __ATOMIC_RELAXED);
}

PLI_COLD void
pli_word_lock_slow(uint32_t *l)
{
	unsigned spins = __atomic_load_n(&word_spins, __ATOMIC_RELAXED);
	for (unsigned i = 0; i < spins; i++) {
		uint32_t c = __atomic_load_n(l, __ATOMIC_RELAXED);
		if (c == 0 &&
		    __atomic_compare_exchange_n(
		        l, &c, 1, false, __ATOMIC_ACQUIRE, __ATOMIC_RELAXED))
			return;
		pli_cpu_relax();
	}
	while (__atomic_exchange_n(l, 2, __ATOMIC_ACQUIRE) != 0)
		pli_futex_wait(l, 2, NULL);
}
