/* SPDX-License-Identifier: MIT */
/*
 * Bit locks: a mutex that lives in two bits of a word the caller owns
 * (the low bits of an aligned pointer, a flags byte, a reference count),
 * built on the parking lot.
 *
 * The caller picks the two bits, locked_bit and parked_bit, each a mask
 * with exactly one bit set, different from each other; they mean what
 * PL_MUTEX_LOCKED and PL_MUTEX_PARKED mean in a pl_mutex_t, and this
 * encoding is ABI, because the inline fast paths below are compiled into
 * users' binaries:
 *
 *     parked locked
 *       0      0    unlocked, nobody waiting
 *       0      1    locked, nobody for its unlock to wake (threads may be
 *                   parked behind a woken one, which sets PARKED again)
 *       1      0    unlocked, threads parked (a woken thread is on its way)
 *       1      1    locked, threads parked
 *
 * Every other bit of the word belongs to the caller: lock operations never
 * change it (they update the word with compare-and-swap loops that carry
 * the other bits over), and the caller may change it at any time with
 * atomic operations, also while other threads lock and unlock.  Several
 * bit locks may share one word, each with its own two bits; an unlock
 * wakes only waiters of the same lock.  All two-bits-zero memory is an
 * unlocked bit lock; there is nothing to initialize or destroy.  Threads
 * park on the word's address.  The protocol and why no wakeup is lost is
 * stated in lib/twobit.c.
 *
 * Arguments are checked in the inline functions, where constant bits fold
 * the check away: a zero mask, a mask with more than one bit set or the
 * same bit twice prints a line naming the function, e.g.
 * "pl_bitlock_lock: bit lock 0x...: locked_bit 0x3 is not a single bit",
 * and aborts.
 */
#ifndef PARKINGLOT_BITLOCK_H
#define PARKINGLOT_BITLOCK_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <time.h>

#include <parkinglot/defs.h>

PL_BEGIN_DECLS

/* Out of line: the contended paths, for both widths (size is 1 for the
 * byte functions, sizeof(uintptr_t) for the word ones), and the report of
 * bad arguments.  Exported only for the fast paths. */
PL_EXPORT void pl__bitlock_lock_slow(
    void *word, size_t size, uintptr_t locked_bit, uintptr_t parked_bit);
PL_EXPORT void pl__bitlock_unlock_slow(void *word, size_t size,
    uintptr_t locked_bit, uintptr_t parked_bit, bool fair);
PL_EXPORT void pl__bitlock_bad_args(const char *func, const void *word,
    uintptr_t locked_bit, uintptr_t parked_bit) __attribute__((noreturn, cold));

/* Whether (locked_bit, parked_bit) is not a pair of distinct single bits. */
static inline bool
pl__bitlock_args_bad(uintptr_t locked_bit, uintptr_t parked_bit)
{
	return locked_bit == 0 || parked_bit == 0 ||
	    (locked_bit & (locked_bit - 1)) != 0 ||
	    (parked_bit & (parked_bit - 1)) != 0 || locked_bit == parked_bit;
}

#define PL__BITLOCK_CHECK(func, word, locked_bit, parked_bit)                  \
	do {                                                                   \
		if (PL_UNLIKELY(                                               \
		        pl__bitlock_args_bad((locked_bit), (parked_bit))))     \
			pl__bitlock_bad_args(                                  \
			    func, (word), (locked_bit), (parked_bit));         \
	} while (0)

/* The plain unlock of each width: a load and one CAS clearing the lock
 * bit while the parked bit is clear, else the slow path (constant bits
 * fold away when inlined).  The fair unlocks always take the slow path:
 * waiters may be queued with the parked bit clear, while a woken one has
 * yet to set it again. */
static inline void
pl__bitlock_release(uintptr_t *word, uintptr_t locked_bit, uintptr_t parked_bit)
{
	uintptr_t w = __atomic_load_n(word, __ATOMIC_RELAXED);
	if (PL_LIKELY((w & (locked_bit | parked_bit)) == locked_bit) &&
	    PL_LIKELY(__atomic_compare_exchange_n(word, &w, w & ~locked_bit,
	        false, __ATOMIC_RELEASE, __ATOMIC_RELAXED)))
		return;
	pl__bitlock_unlock_slow(
	    word, sizeof *word, locked_bit, parked_bit, false);
}

static inline void
pl__bitlock8_release(
    unsigned char *byte, unsigned char locked_bit, unsigned char parked_bit)
{
	unsigned char b = __atomic_load_n(byte, __ATOMIC_RELAXED);
	if (PL_LIKELY((b & (locked_bit | parked_bit)) == locked_bit) &&
	    PL_LIKELY(__atomic_compare_exchange_n(byte, &b,
	        (unsigned char)(b & ~locked_bit), false, __ATOMIC_RELEASE,
	        __ATOMIC_RELAXED)))
		return;
	pl__bitlock_unlock_slow(byte, 1, locked_bit, parked_bit, false);
}

/*
 * pl_bitlock_lock - acquire the bit lock (locked_bit, parked_bit) of
 * *word, blocking until it is free.
 *
 * Uncontended: a load and one compare-and-swap, acquire ordering (the CAS
 * is retried out of line if another bit of the word changed meanwhile).
 * Contended: spins briefly while nobody is parked (struct pl_tuning),
 * then parks on word.  Fairness as for pl_mutex_t: barging in the short
 * run (a woken thread that loses parks again at its place in the queue),
 * but an unlock that wakes a waiter once the fairness timer has expired
 * hands the lock to it directly.  Not reentrant.
 */
static inline void
pl_bitlock_lock(uintptr_t *word, uintptr_t locked_bit, uintptr_t parked_bit)
{
	PL__BITLOCK_CHECK("pl_bitlock_lock", word, locked_bit, parked_bit);
	PL_CHK_PRE_LOCK(word, 0);
	uintptr_t w = __atomic_load_n(word, __ATOMIC_RELAXED);
	if (PL_LIKELY(!(w & locked_bit)) &&
	    PL_LIKELY(__atomic_compare_exchange_n(word, &w, w | locked_bit,
	        false, __ATOMIC_ACQUIRE, __ATOMIC_RELAXED)))
		return;
	pl__bitlock_lock_slow(word, sizeof *word, locked_bit, parked_bit);
}

/*
 * pl_bitlock_trylock - acquire the bit lock only if that needs no
 * waiting.  Returns true with it held (acquire ordering), false if it is
 * locked.  CASes only while a load shows locked_bit clear (retrying when
 * other bits change under it); may take a free lock past parked waiters.
 * Never blocks.
 */
static inline bool
pl_bitlock_trylock(uintptr_t *word, uintptr_t locked_bit, uintptr_t parked_bit)
{
	PL__BITLOCK_CHECK("pl_bitlock_trylock", word, locked_bit, parked_bit);
	uintptr_t w = __atomic_load_n(word, __ATOMIC_RELAXED);
	while (!(w & locked_bit)) {
		if (__atomic_compare_exchange_n(word, &w, w | locked_bit, true,
		        __ATOMIC_ACQUIRE, __ATOMIC_RELAXED)) {
			PL_CHK_POST_LOCK(word, PL_CHK_TRY);
			return true;
		}
	}
	return false;
}

/*
 * pl_bitlock_timedlock - pl_bitlock_lock with an absolute CLOCK_MONOTONIC
 * deadline (NULL: no deadline), under the rules of pl_mutex_timedlock.
 * Returns 0 with the lock held (acquire ordering); ETIMEDOUT if the
 * deadline passed first (a lock that is free is taken whatever the
 * deadline, and a deadline already passed costs no spinning or parking);
 * EINVAL for a malformed deadline, before any attempt.  Bad bits abort as
 * for pl_bitlock_lock.  Out of line: a timed lock is rarely the hot one.
 */
PL_EXPORT int pl_bitlock_timedlock(uintptr_t *word, uintptr_t locked_bit,
    uintptr_t parked_bit, const struct timespec *deadline);

/*
 * pl_bitlock_unlock - release the bit lock (release ordering).
 *
 * Uncontended: a load and one CAS.  With threads parked on this lock,
 * wakes at most one of them (waiters of other bit locks of the word are
 * left alone), or hands the lock to the oldest when the fairness timer
 * has expired.  Any thread may unlock.  Unlocking a bit lock that is not
 * locked prints "pl_bitlock_unlock: bit lock 0x... (bit 0x...) is not
 * locked" and aborts.
 */
static inline void
pl_bitlock_unlock(uintptr_t *word, uintptr_t locked_bit, uintptr_t parked_bit)
{
	PL__BITLOCK_CHECK("pl_bitlock_unlock", word, locked_bit, parked_bit);
	PL_CHK_PRE_UNLOCK(word, 0);
	pl__bitlock_release(word, locked_bit, parked_bit);
}

/*
 * pl_bitlock_unlock_fair - release the bit lock, handing it directly to
 * the oldest thread parked on it if there is one (that thread returns
 * from its lock call holding it; nobody can barge in between).  Otherwise
 * as pl_bitlock_unlock, including the misuse report.
 */
static inline void
pl_bitlock_unlock_fair(
    uintptr_t *word, uintptr_t locked_bit, uintptr_t parked_bit)
{
	PL__BITLOCK_CHECK(
	    "pl_bitlock_unlock_fair", word, locked_bit, parked_bit);
	PL_CHK_PRE_UNLOCK(word, 0);
	pl__bitlock_unlock_slow(
	    word, sizeof *word, locked_bit, parked_bit, true);
}

/*
 * The same five for a bit lock in a byte: the same protocol, blocking,
 * memory ordering and fairness, and the same messages with "pl_bitlock8_"
 * in the function names.
 */

/* pl_bitlock8_lock - pl_bitlock_lock for a byte: blocks until acquired
 * (acquire ordering); eventually fair. */
static inline void
pl_bitlock8_lock(
    unsigned char *byte, unsigned char locked_bit, unsigned char parked_bit)
{
	PL__BITLOCK_CHECK("pl_bitlock8_lock", byte, locked_bit, parked_bit);
	PL_CHK_PRE_LOCK(byte, 0);
	unsigned char b = __atomic_load_n(byte, __ATOMIC_RELAXED);
	if (PL_LIKELY(!(b & locked_bit)) &&
	    PL_LIKELY(__atomic_compare_exchange_n(byte, &b,
	        (unsigned char)(b | locked_bit), false, __ATOMIC_ACQUIRE,
	        __ATOMIC_RELAXED)))
		return;
	pl__bitlock_lock_slow(byte, 1, locked_bit, parked_bit);
}

/* pl_bitlock8_trylock - pl_bitlock_trylock for a byte: never blocks;
 * returns true with the lock held (acquire ordering), else false. */
static inline bool
pl_bitlock8_trylock(
    unsigned char *byte, unsigned char locked_bit, unsigned char parked_bit)
{
	PL__BITLOCK_CHECK("pl_bitlock8_trylock", byte, locked_bit, parked_bit);
	unsigned char b = __atomic_load_n(byte, __ATOMIC_RELAXED);
	while (!(b & locked_bit)) {
		if (__atomic_compare_exchange_n(byte, &b,
		        (unsigned char)(b | locked_bit), true, __ATOMIC_ACQUIRE,
		        __ATOMIC_RELAXED)) {
			PL_CHK_POST_LOCK(byte, PL_CHK_TRY);
			return true;
		}
	}
	return false;
}

/* pl_bitlock8_timedlock - pl_bitlock_timedlock for a byte: 0 with the
 * lock held, ETIMEDOUT, or EINVAL for a malformed deadline. */
PL_EXPORT int pl_bitlock8_timedlock(unsigned char *byte,
    unsigned char locked_bit, unsigned char parked_bit,
    const struct timespec *deadline);

/* pl_bitlock8_unlock - pl_bitlock_unlock for a byte: release ordering;
 * wakes at most one waiter of this lock; aborts if it is not locked. */
static inline void
pl_bitlock8_unlock(
    unsigned char *byte, unsigned char locked_bit, unsigned char parked_bit)
{
	PL__BITLOCK_CHECK("pl_bitlock8_unlock", byte, locked_bit, parked_bit);
	PL_CHK_PRE_UNLOCK(byte, 0);
	pl__bitlock8_release(byte, locked_bit, parked_bit);
}

/* pl_bitlock8_unlock_fair - pl_bitlock_unlock_fair for a byte: hands the
 * lock to the oldest waiter of this lock if there is one. */
static inline void
pl_bitlock8_unlock_fair(
    unsigned char *byte, unsigned char locked_bit, unsigned char parked_bit)
{
	PL__BITLOCK_CHECK(
	    "pl_bitlock8_unlock_fair", byte, locked_bit, parked_bit);
	PL_CHK_PRE_UNLOCK(byte, 0);
	pl__bitlock_unlock_slow(byte, 1, locked_bit, parked_bit, true);
}

#ifdef PL_CHECKED
/* Checked mode (defs.h): the timed locks through the hooks too.  The
 * detector knows a bit lock by its word: bit locks that share a word are
 * one lock to it. */
static inline __attribute__((always_inline)) int
pl__chk_bitlock_timedlock(uintptr_t *word, uintptr_t locked_bit,
    uintptr_t parked_bit, const struct timespec *deadline)
{
	PL_CHK_PRE_LOCK(word, 0);
	int rc = (pl_bitlock_timedlock)(word, locked_bit, parked_bit, deadline);
	if (rc)
		PL_CHK_POST_LOCK(word, PL_CHK_FAILED);
	return rc;
}
static inline __attribute__((always_inline)) int
pl__chk_bitlock8_timedlock(unsigned char *byte, unsigned char locked_bit,
    unsigned char parked_bit, const struct timespec *deadline)
{
	PL_CHK_PRE_LOCK(byte, 0);
	int rc =
	    (pl_bitlock8_timedlock)(byte, locked_bit, parked_bit, deadline);
	if (rc)
		PL_CHK_POST_LOCK(byte, PL_CHK_FAILED);
	return rc;
}
#define pl_bitlock_timedlock(w, l, p, d)                                       \
	pl__chk_bitlock_timedlock((w), (l), (p), (d))
#define pl_bitlock8_timedlock(b, l, p, d)                                      \
	pl__chk_bitlock8_timedlock((b), (l), (p), (d))
#endif

PL_END_DECLS

#endif /* PARKINGLOT_BITLOCK_H */
