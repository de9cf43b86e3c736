/* SPDX-License-Identifier: MIT */
/*
 * The adaptive part of the spin phase (spin.h): whether a waiter on a
 * mutex or bit lock runs the yield rounds or parks after its pause rounds.
 *
 * The signal is the lock's own recent history, kept per slot of a hash of
 * its address (a one-byte lock has no room for it): have the yield rounds
 * of its last waiters ended with the lock taken (they paid)?  A slot's
 * byte d is
 *
 *   0 <= d < g        trusted: the yield rounds run; d counts the waiters
 *                     that started them since the last ones that paid.
 *   g <= d < g + P    doubted: the yield rounds are skipped; d - g counts
 *                     the skips since the last try.  The Pth waiter to
 *                     get there tries them once more (d back to g).
 *
 * with g = the tuning's adapt (PARKINGLOT_ADAPT; 0 turns this off) and
 * P = EXPLORE.  Yield rounds that end with the lock taken put d back to 0,
 * in either state.  A waiter counts itself when it starts the yield
 * rounds, not when they fail: so g waiters that start them at once (300
 * threads arriving together on a held lock, lockbench's W3) are all that
 * yield before one of them pays, as are g in a row that park.  On a lock
 * whose holds outlast the yield rounds (a holder that sleeps, or does
 * I/O), after g waiters have spent their 50 to 100 us in vain the next
 * park after 5 us of pausing, and one in P checks that the holds are
 * still long.
 *
 * Nothing here can lose a wake-up or keep a thread waiting: a decision
 * only makes a waiter park sooner, which the locks allow at any time (the
 * park is validated under the bucket lock, twobit.c).  The bytes are
 * hints: relaxed loads and stores, and an update lost in a race only
 * shifts a decision by a waiter.  Two locks that share a slot share their
 * history.  Only waiters that reach the yield rounds touch a slot: one
 * writes it as it starts them, or skips them and parks, and once more if
 * they pay, beside the sched_yield calls of those rounds (a system call
 * each) or the park.  A lock whose waiters get it in their pause rounds
 * costs nothing here.
 */
#include <stdint.h>

#include "spin.h"

#define SLOTS_LOG2 9
#define EXPLORE 16u

static uint8_t history[1u << SLOTS_LOG2];

static uint8_t *
slot(const void *addr)
{
	return &history[pli_hash_addr(addr, 64 - SLOTS_LOG2)];
}

static unsigned
load(const uint8_t *c)
{
	return __atomic_load_n(c, __ATOMIC_RELAXED);
}

static void
store(uint8_t *c, unsigned d)
{
	__atomic_store_n(c, (uint8_t)d, __ATOMIC_RELAXED);
}

bool
pli_spin_may_yield(const void *addr, unsigned g)
{
	uint8_t *c = slot(addr);
	unsigned d = load(c);
	if (d < g) {
		store(c, d + 1); /* unpaid until they pay */
		return true;
	}
	if (d >= g + EXPLORE - 1) {
		store(c, g); /* try once; a park keeps the doubt */
		return true;
	}
	store(c, d + 1);
	return false;
}

void
pli_spin_yields_paid(const void *addr)
{
	uint8_t *c = slot(addr);
	if (load(c) != 0)
		store(c, 0);
}

unsigned
pli_spin_history(const void *addr)
{
	return load(slot(addr));
}
