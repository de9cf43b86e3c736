/* SPDX-License-Identifier: MIT */
/*
 * Bit lock slow paths, one implementation for words and bytes: contended
 * lock, unlock with waiters, fair unlock, and the reports of misuse.  The
 * fast paths are inline in include/parkinglot/bitlock.h.
 *
 * A bit lock is two caller-chosen bits, L (locked_bit) and P (parked_bit),
 * of a word or byte whose other bits belong to the caller:
 *
 *     P L
 *     0 0    unlocked, nobody waiting
 *     0 1    locked, nobody parked
 *     1 0    unlocked, threads parked (a woken thread is on its way)
 *     1 1    locked, threads parked
 *
 * Transitions, and who makes them (as for pl_mutex_t, lib/mutex.c):
 *   L 0 -> 1   any locker, by CAS, when a load showed L clear.  P is kept.
 *   L 1 -> 0   the holder: CAS when P is clear, else inside
 *              pl_unpark_filter's callback.
 *   P 0 -> 1   a thread about to park, in pl_park's validate callback
 *              (bucket of the word locked), and only while L is set.
 *   P 1 -> 0   the unlock callback (bucket locked), when no thread of
 *              this lock is left queued.  (There is no timed lock, so no
 *              waiter leaves the queue any other way.)
 * Every change is a compare-and-swap from a value just loaded, to that
 * value with only L or P changed, retried when it fails: bits that other
 * threads change meanwhile (the caller's, or another bit lock's) are
 * carried over, never lost.
 *
 * Several locks per word.  Threads park on the word's address with their
 * lock's L as park token, so one queue holds the waiters of every lock of
 * the word, in arrival order.  An unlock walks it with pl_unpark_filter:
 * the filter skips other locks' waiters, wakes the first waiter whose token
 * is L, keeps skipping until it meets a second one (then stops), and so
 * tells the callback whether a waiter of this lock remains; the queue's
 * have_more cannot, since it counts every lock's waiters.  Distinct locks
 * of a word have distinct L bits, so tokens never collide.
 *
 * Invariant: while any thread is queued on the word with token L, P is set.
 * It holds because P is set in the bucket critical section that queues
 * the thread, and cleared only in one that saw no such thread queued.
 *
 * Why no wakeup is lost: a waiter parks only if, with the bucket locked,
 * it saw L set and made sure P is set.  The holder's unlock either
 *   - succeeds with a CAS that clears L while P is clear: then no thread
 *     of this lock was queued, and any that validates later sees L clear
 *     and retries instead of sleeping; or
 *   - sees P set and calls pl_unpark_filter, which takes the same bucket
 *     lock, so it runs wholly before or wholly after each waiter's
 *     validate-and-enqueue.  Before: the waiter's validate sees the
 *     state the callback stored (L clear, or the lock handed to another
 *     thread who will unlock it and repeat this).  After: the waiter is
 *     queued and is either woken or, when another waiter of this lock is
 *     found behind it, stays behind a P bit that the next unlock honours.
 *
 * Hand-off: when pl_unpark_filter reports be_fair (or for unlock_fair),
 * the callback leaves L set and gives the woken thread the token
 * PL_UNPARK_TOKEN_HANDOFF: it returns from its lock call as the owner.
 */
#include <inttypes.h>

#include <parkinglot/bitlock.h>
#include <parkinglot/core.h>

#include "internal.h"

/* One bit lock: where it is, its width, its bits. */
struct bitlock {
	void *word;
	size_t size; /* 1 (a byte) or sizeof(uintptr_t) */
	uintptr_t locked, parked;
};

static inline uintptr_t
load(const struct bitlock *b)
{
	if (b->size == 1)
		return __atomic_load_n(
		    (unsigned char *)b->word, __ATOMIC_RELAXED);
	return __atomic_load_n((uintptr_t *)b->word, __ATOMIC_RELAXED);
}

/* Weak compare-and-swap of the whole word or byte from *old to nv, with
 * the given ordering on success; on failure *old gets the current value.
 * One function per ordering, so that each builtin sees a constant. */
#define DEFINE_CAS(name, order)                                                \
	static inline bool name(                                               \
	    const struct bitlock *b, uintptr_t *old, uintptr_t nv)             \
	{                                                                      \
		if (b->size == 1) {                                            \
			unsigned char o = (unsigned char)*old;                 \
			bool ok = __atomic_compare_exchange_n(                 \
			    (unsigned char *)b->word, &o, (unsigned char)nv,   \
			    true, order, __ATOMIC_RELAXED);                    \
			*old = o;                                              \
			return ok;                                             \
		}                                                              \
		return __atomic_compare_exchange_n((uintptr_t *)b->word, old,  \
		    nv, true, order, __ATOMIC_RELAXED);                        \
	}
DEFINE_CAS(cas_acquire, __ATOMIC_ACQUIRE)
DEFINE_CAS(cas_release, __ATOMIC_RELEASE)
DEFINE_CAS(cas_relaxed, __ATOMIC_RELAXED)

/* Clear mask in the word, keeping every other bit (release ordering). */
static void
clear_bits(const struct bitlock *b, uintptr_t mask)
{
	uintptr_t s = load(b);
	while (!cas_release(b, &s, s & ~mask))
		;
}

static const char *
unlock_name(size_t size, bool fair)
{
	if (size == 1)
		return fair ? "pl_bitlock8_unlock_fair" : "pl_bitlock8_unlock";
	return fair ? "pl_bitlock_unlock_fair" : "pl_bitlock_unlock";
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

/* validate: park only while the lock is held, and set P so that its
 * holder's unlock takes the slow path and finds us. */
static bool
lock_validate(void *ctx)
{
	const struct bitlock *b = ctx;
	uintptr_t s = load(b);
	for (;;) {
		if (!(s & b->locked))
			return false;
		if (s & b->parked)
			return true;
		if (cas_relaxed(b, &s, s | b->parked))
			return true;
	}
}

void
pl__bitlock_lock_slow(
    void *word, size_t size, uintptr_t locked_bit, uintptr_t parked_bit)
{
	struct bitlock b = { word, size, locked_bit, parked_bit };
	struct pli_spinner sp;
	pli_spinner_init(&sp);
	uintptr_t s = load(&b);

	for (;;) {
		/* Test and test-and-set: CAS only when the load says free.
		 * A failed CAS (the lock, or any other bit, changed) reloads
		 * s and looks again. */
		if (!(s & locked_bit)) {
			if (cas_acquire(&b, &s, s | locked_bit)) {
				pli_spinner_acquired(&sp);
				return;
			}
			continue;
		}
		/* Spin only while nobody is parked on this lock. */
		if (!(s & parked_bit) && pli_spin(&sp)) {
			s = load(&b);
			continue;
		}
		/* The token tells this lock's waiters from those of other
		 * bit locks of the same word. */
		pli_spinner_park(&sp);
		pl_park_result_t r = pl_park(
		    word, lock_validate, NULL, NULL, &b, locked_bit, NULL);
		if (r.status == PL_PARK_UNPARKED &&
		    r.token == PL_UNPARK_TOKEN_HANDOFF)
			return; /* handed to us: L was kept for us */
		/* Woken to compete, or the lock changed before we slept. */
		s = load(&b);
	}
}

struct unlock_ctx {
	const struct bitlock *b;
	bool fair;
	unsigned matches; /* waiters of this lock seen: 0, 1, or 2 (stop) */
};

/* Wake the first waiter of this lock; skip the others' waiters; stop at a
 * second waiter of this lock, which is all the callback needs to know. */
static pl_filter_op_t
unlock_filter(uintptr_t park_token, void *ctx)
{
	struct unlock_ctx *c = ctx;
	if (park_token != c->b->locked)
		return PL_FILTER_SKIP;
	if (c->matches++ == 0)
		return PL_FILTER_UNPARK;
	return PL_FILTER_STOP;
}

/* Runs with the word's bucket locked, so no waiter of this lock can set
 * or clear P meanwhile; other bits may change, hence the CAS loops. */
static uintptr_t
unlock_callback(pl_unpark_result_t r, void *ctx)
{
	struct unlock_ctx *c = ctx;
	const struct bitlock *b = c->b;
	bool more = c->matches > 1; /* r.have_more counts other locks too */
	if (r.unparked && (r.be_fair || c->fair)) {
		/* Hand off: L stays set for the woken thread. */
		if (!more)
			clear_bits(b, b->parked);
		return PL_UNPARK_TOKEN_HANDOFF;
	}
	clear_bits(b, more ? b->locked : b->locked | b->parked);
	return PL_UNPARK_TOKEN_DEFAULT;
}

void
pl__bitlock_unlock_slow(void *word, size_t size, uintptr_t locked_bit,
    uintptr_t parked_bit, bool fair)
{
	struct bitlock b = { word, size, locked_bit, parked_bit };
	uintptr_t s = load(&b);
	for (;;) {
		if (!(s & locked_bit))
			pli_fatal("%s: bit lock %p (bit 0x%" PRIxPTR
			          ") is not locked",
			    unlock_name(size, fair), word, locked_bit);
		if (s & parked_bit)
			break;
		/* The fast path's CAS failed because another bit of the
		 * word changed under it: nobody is parked, clear L alone. */
		if (cas_release(&b, &s, s & ~locked_bit))
			return;
	}
	struct unlock_ctx c = { &b, fair, 0 };
	pl_unpark_filter(word, unlock_filter, unlock_callback, &c);
}
