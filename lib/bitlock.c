/* SPDX-License-Identifier: MIT */
/*
 * Bit lock slow paths, for words and bytes: contended lock, timed lock,
 * unlock with waiters, fair unlock, and the reports of misuse.  The fast
 * paths are inline in include/parkinglot/bitlock.h.
 *
 * A bit lock is the two-bit lock of lib/twobit.c on two bits its caller
 * picks, L (locked_bit) and P (parked_bit), of a byte or word whose other
 * bits the caller owns; its states, transitions and why no wakeup is lost
 * are stated there.  Several bit locks may share a word, so the lock is
 * "shared": its waiters park with L as their token, and an unlock wakes
 * only those.
 */
#include <errno.h>
#include <inttypes.h>

#include <parkinglot/bitlock.h>

#include "platform.h"
#include "twobit.h"

#define BIT_LOCK(w, sz, l, p)                                                  \
	{                                                                      \
		.word = (w), .size = (unsigned char)(sz), .shared = true,      \
		.locked = (l), .parked = (p)                                   \
	}

void
pl__bitlock_bad_args(const char *func, const void *word, uintptr_t locked_bit,
    uintptr_t parked_bit)
{
	if (locked_bit == 0)
		pli_fatal("%s: bit lock %p: locked_bit is 0", func, word);
	if (parked_bit == 0)
		pli_fatal("%s: bit lock %p: parked_bit is 0", func, word);
	if (locked_bit & (locked_bit - 1))
		pli_fatal("%s: bit lock %p: locked_bit 0x%" PRIxPTR
		          " is not a single bit",
		    func, word, locked_bit);
	if (parked_bit & (parked_bit - 1))
		pli_fatal("%s: bit lock %p: parked_bit 0x%" PRIxPTR
		          " is not a single bit",
		    func, word, parked_bit);
	pli_fatal("%s: bit lock %p: locked_bit and parked_bit are the same "
	          "bit 0x%" PRIxPTR,
	    func, word, locked_bit);
}

PLI_COLD void
pl__bitlock_lock_slow(
    void *word, size_t size, uintptr_t locked_bit, uintptr_t parked_bit)
{
	const struct pli_twobit l =
	    BIT_LOCK(word, size, locked_bit, parked_bit);
	pli_twobit_lock(&l, CLOCK_MONOTONIC, NULL);
}

PLI_COLD void
pl__bitlock_unlock_slow(void *word, size_t size, uintptr_t locked_bit,
    uintptr_t parked_bit, bool fair)
{
	const struct pli_twobit l =
	    BIT_LOCK(word, size, locked_bit, parked_bit);
	const char *name = size == 1
	    ? (fair ? "pl_bitlock8_unlock_fair" : "pl_bitlock8_unlock")
	    : (fair ? "pl_bitlock_unlock_fair" : "pl_bitlock_unlock");
	pli_twobit_unlock(&l, fair, name);
}

/* The timed locks of both widths: the argument checks, then the rules of
 * pl_mutex_timedlock (EINVAL first; a free lock is taken whatever the
 * deadline). */
static int
timedlock(const char *func, void *word, size_t size, uintptr_t locked_bit,
    uintptr_t parked_bit, const struct timespec *deadline)
{
	if (pl__bitlock_args_bad(locked_bit, parked_bit))
		pl__bitlock_bad_args(func, word, locked_bit, parked_bit);
	if (!pli_deadline_valid(deadline))
		return EINVAL;
	const struct pli_twobit l =
	    BIT_LOCK(word, size, locked_bit, parked_bit);
	return pli_twobit_lock(&l, CLOCK_MONOTONIC, deadline);
}

int
pl_bitlock_timedlock(uintptr_t *word, uintptr_t locked_bit,
    uintptr_t parked_bit, const struct timespec *deadline)
{
	return timedlock("pl_bitlock_timedlock", word, sizeof *word, locked_bit,
	    parked_bit, deadline);
}

int
pl_bitlock8_timedlock(unsigned char *byte, unsigned char locked_bit,
    unsigned char parked_bit, const struct timespec *deadline)
{
	return timedlock(
	    "pl_bitlock8_timedlock", byte, 1, locked_bit, parked_bit, deadline);
}
