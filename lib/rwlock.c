/* SPDX-License-Identifier: MIT */
/*
 * pl_rwlock_t slow paths: a phase-fair reader-writer lock in one word,
 * built on the public parking-lot API only.  Fast paths are inline in
 * include/parkinglot/rwlock.h.
 *
 * The word: WRITER (a writer holds it), WPARKED (writers are parked on
 * the writer key, l + 1), RPARKED (readers are parked on the reader key,
 * l), and the number of readers holding it, in units of ONE.
 *
 * Who may enter:
 *   a reader  when neither WRITER nor WPARKED is set: a reader that
 *             arrives while a writer waits queues behind it;
 *   a writer  when neither WRITER nor any reader holds it (writers may
 *             overtake parked writers: they are not ordered among
 *             themselves, which keeps writer throughput).
 *
 * Transitions of the parked bits (each under the bucket of its key):
 *   RPARKED set    by a reader's validate, while WRITER or WPARKED is set;
 *           clear  by whoever empties the reader queue: the hand-off to
 *                  all readers, or the timed_out of the last reader.
 *   WPARKED set    by a writer's validate, while the lock is held;
 *           clear  when the writer queue is left empty: the hand-off to
 *                  the last writer, or the timed_out of the last writer.
 * So, under the bucket lock of a key, its bit is set exactly when its
 * queue is non-empty.
 *
 * Hand-offs (the phases):
 *   - A writer's unlock with RPARKED set wakes every parked reader and
 *     hands them the lock together: in one CAS it clears WRITER and adds
 *     their count (PL_UNPARK_TOKEN_HANDOFF: they return holding it).
 *     Writers that waited keep WPARKED, so readers arriving from now on
 *     queue behind them: the writers wait for exactly this reader phase.
 *   - The last reader to leave with WPARKED set hands the lock to the
 *     oldest parked writer: one CAS drops its count and sets WRITER.
 *   - A writer's unlock with only WPARKED set wakes one writer: with a
 *     hand-off when the bucket's fairness timer fired, else to compete.
 *
 * No lost wakeup: a waiter parks only after its validate saw, with the
 * bucket of its key locked, a holder that must release the lock, and set
 * its parked bit with the same CAS (a CAS whose expected value holds
 * WRITER or a reader count).  That holder's release reads the bit and
 * takes the slow path, which locks the same bucket and so finds the
 * waiter queued.  The one waiter that can leave with others depending on
 * it is the last parked writer timing out: readers it held back (RPARKED
 * with no WRITER) are then let in by the departing writer itself.
 */
#include <errno.h>

#include <parkinglot/core.h>
#include <parkinglot/rwlock.h>

#include "internal.h"

#define WRITER PL_RWLOCK_WRITER
#define WPARKED PL_RWLOCK_WRITER_PARKED
#define RPARKED PL_RWLOCK_READER_PARKED
#define ONE PL_RWLOCK_ONE_READER
#define READERS(s) ((s) & ~(ONE - 1))

static inline const void *
reader_key(pl_rwlock_t *l)
{
	return l;
}

static inline const void *
writer_key(pl_rwlock_t *l)
{
	return (const char *)l + 1;
}

void
pl_rwlock_init(pl_rwlock_t *l)
{
	__atomic_store_n(&l->state, 0, __ATOMIC_RELAXED);
}

/* ---- readers ---------------------------------------------------------- */

static bool
rd_validate(void *ctx)
{
	pl_rwlock_t *l = ctx;
	uintptr_t s = __atomic_load_n(&l->state, __ATOMIC_RELAXED);
	for (;;) {
		if (!(s & (WRITER | WPARKED)))
			return false;
		if ((s & RPARKED) ||
		    __atomic_compare_exchange_n(&l->state, &s, s | RPARKED,
		        false, __ATOMIC_RELAXED, __ATOMIC_RELAXED))
			return true;
	}
}

static void
rd_timed_out(void *ctx, const void *addr, bool was_last)
{
	(void)addr;
	if (was_last)
		__atomic_fetch_and(&((pl_rwlock_t *)ctx)->state, ~RPARKED,
		    __ATOMIC_RELAXED);
}

int
pl__rwlock_rdlock_slow(pl_rwlock_t *l, const struct timespec *deadline)
{
	struct pli_spinner sp;
	pli_spinner_init(&sp);
	uintptr_t s = __atomic_load_n(&l->state, __ATOMIC_RELAXED);
	for (;;) {
		if (!(s & (WRITER | WPARKED))) {
			if (s >= PL_RWLOCK_READERS_MAX)
				pli_fatal("pl_rwlock_rdlock: rwlock %p: too "
				          "many readers",
				    (void *)l);
			if (__atomic_compare_exchange_n(&l->state, &s, s + ONE,
			        true, __ATOMIC_ACQUIRE, __ATOMIC_RELAXED))
				{
				pli_spinner_acquired(&sp);
				return 0;
			}
			continue;
		}
		/* Spin only while nobody is parked. */
		if (!(s & (WPARKED | RPARKED)) && pli_spin(&sp)) {
			s = __atomic_load_n(&l->state, __ATOMIC_RELAXED);
			continue;
		}
		pli_spinner_park(&sp);
		pl_park_result_t r = pl_park(reader_key(l), rd_validate, NULL,
		    rd_timed_out, l, 0, deadline);
		if (r.status == PL_PARK_UNPARKED &&
		    r.token == PL_UNPARK_TOKEN_HANDOFF)
			return 0; /* our count was added for us */
		if (r.status == PL_PARK_TIMED_OUT)
			return ETIMEDOUT;
		s = __atomic_load_n(&l->state, __ATOMIC_RELAXED);
	}
}

int
pl_rwlock_timedrdlock(pl_rwlock_t *l, const struct timespec *deadline)
{
	if (!pli_deadline_valid(deadline))
		return EINVAL;
	unsigned f = PL_TSAN_READ | PL_TSAN_TRY;
	PL_TSAN_PRE_LOCK(l, f);
	int rc = 0;
	if (!pl__rwlock_tryrdlock_raw(l))
		PL__DIVERTED(l, rc = pl__rwlock_rdlock_slow(l, deadline));
	PL_TSAN_POST_LOCK(l, rc ? f | PL_TSAN_TRY_FAILED : f);
	return rc;
}

/* Writer bucket locked: the last reader hands the lock to the writer just
 * dequeued, dropping its own count and setting WRITER in one CAS, so no
 * other thread can slip in between.  If we are no longer the last (the
 * writers had all timed out, readers came in, and a new writer parked
 * behind them), the writer is woken to compete instead; it parks again
 * behind those readers. */
static uintptr_t
rd_handoff_callback(pl_unpark_result_t r, void *ctx)
{
	pl_rwlock_t *l = ctx;
	uintptr_t s = __atomic_load_n(&l->state, __ATOMIC_RELAXED), n;
	bool handoff;
	do {
		handoff = r.unparked && READERS(s) == ONE;
		n = s - ONE;
		if (handoff)
			n |= WRITER;
		if (r.unparked && !r.have_more)
			n &= ~WPARKED;
	} while (!__atomic_compare_exchange_n(&l->state, &s, n, true,
	    __ATOMIC_ACQ_REL, __ATOMIC_RELAXED));
	return handoff ? PL_UNPARK_TOKEN_HANDOFF : PL_UNPARK_TOKEN_DEFAULT;
}

void
pl__rwlock_rdunlock_slow(pl_rwlock_t *l)
{
	uintptr_t s = __atomic_load_n(&l->state, __ATOMIC_RELAXED);
	for (;;) {
		if (READERS(s) == 0)
			pli_fatal("pl_rwlock_rdunlock: rwlock %p is not "
			          "read-locked",
			    (void *)l);
		if (READERS(s) == ONE && (s & WPARKED))
			break;
		if (__atomic_compare_exchange_n(&l->state, &s, s - ONE, true,
		        __ATOMIC_RELEASE, __ATOMIC_RELAXED))
			return;
	}
	/* The last reader, and writers wait: no new reader can enter while
	 * WPARKED is set, and no writer while we still count. */
	pl_unpark_one(writer_key(l), rd_handoff_callback, l);
}

/* Reader bucket locked, every parked reader dequeued: give them the lock
 * together (clearing WRITER in the same CAS when a writer's unlock does
 * this).  When a departing waiter does it and a writer has barged in
 * meanwhile, they are woken to compete instead and park again. */
struct enter_ctx {
	pl_rwlock_t *l;
	bool from_writer;
};

static uintptr_t
readers_enter_callback(pl_unpark_result_t r, void *ctx)
{
	struct enter_ctx *e = ctx;
	if (r.unparked == 0)
		return PL_UNPARK_TOKEN_DEFAULT; /* nobody: leave the word */
	uintptr_t s = __atomic_load_n(&e->l->state, __ATOMIC_RELAXED), n;
	bool handoff;
	do {
		handoff = e->from_writer || !(s & WRITER);
		n = s & ~RPARKED;
		if (e->from_writer)
			n &= ~WRITER;
		if (handoff)
			n += r.unparked * ONE;
	} while (!__atomic_compare_exchange_n(&e->l->state, &s, n, true,
	    __ATOMIC_ACQ_REL, __ATOMIC_RELAXED));
	return handoff ? PL_UNPARK_TOKEN_HANDOFF : PL_UNPARK_TOKEN_DEFAULT;
}

/* Wake every parked reader and let them in; true if there were any. */
static bool
readers_enter(pl_rwlock_t *l, bool from_writer)
{
	struct enter_ctx e = { l, from_writer };
	return pl_unpark_filter(reader_key(l), NULL, readers_enter_callback,
	           &e)
	           .unparked != 0;
}

/* ---- writers ---------------------------------------------------------- */

struct wr_ctx {
	pl_rwlock_t *l;
	bool let_readers_in;
};

static bool
wr_validate(void *ctx)
{
	pl_rwlock_t *l = ((struct wr_ctx *)ctx)->l;
	uintptr_t s = __atomic_load_n(&l->state, __ATOMIC_RELAXED);
	for (;;) {
		if (!(s & WRITER) && READERS(s) == 0)
			return false;
		if ((s & WPARKED) ||
		    __atomic_compare_exchange_n(&l->state, &s, s | WPARKED,
		        false, __ATOMIC_RELAXED, __ATOMIC_RELAXED))
			return true;
	}
}

/* The last parked writer leaves: readers queued behind it, if no writer
 * holds the lock, must now be let in (by the departing writer, after
 * pl_park returns: callbacks may not unpark). */
static void
wr_timed_out(void *ctx, const void *addr, bool was_last)
{
	struct wr_ctx *w = ctx;
	(void)addr;
	if (!was_last)
		return;
	uintptr_t s = __atomic_fetch_and(&w->l->state, ~WPARKED,
	    __ATOMIC_RELAXED);
	w->let_readers_in = (s & RPARKED) && !(s & WRITER);
}

int
pl__rwlock_wrlock_slow(pl_rwlock_t *l, const struct timespec *deadline)
{
	struct pli_spinner sp;
	pli_spinner_init(&sp);
	uintptr_t s = __atomic_load_n(&l->state, __ATOMIC_RELAXED);
	for (;;) {
		if (!(s & WRITER) && READERS(s) == 0) {
			if (__atomic_compare_exchange_n(&l->state, &s,
			        s | WRITER, true, __ATOMIC_ACQUIRE,
			        __ATOMIC_RELAXED))
				{
				pli_spinner_acquired(&sp);
				return 0;
			}
			continue;
		}
		/* Spin only while nobody is parked. */
		if (!(s & (WPARKED | RPARKED)) && pli_spin(&sp)) {
			s = __atomic_load_n(&l->state, __ATOMIC_RELAXED);
			continue;
		}
		pli_spinner_park(&sp);
		struct wr_ctx w = { l, false };
		pl_park_result_t r = pl_park(writer_key(l), wr_validate, NULL,
		    wr_timed_out, &w, 0, deadline);
		if (r.status == PL_PARK_UNPARKED &&
		    r.token == PL_UNPARK_TOKEN_HANDOFF)
			return 0; /* WRITER was set for us */
		if (r.status == PL_PARK_TIMED_OUT) {
			if (w.let_readers_in)
				readers_enter(l, false);
			return ETIMEDOUT;
		}
		s = __atomic_load_n(&l->state, __ATOMIC_RELAXED);
	}
}

int
pl_rwlock_timedwrlock(pl_rwlock_t *l, const struct timespec *deadline)
{
	if (!pli_deadline_valid(deadline))
		return EINVAL;
	PL_TSAN_PRE_LOCK(l, PL_TSAN_TRY);
	int rc = 0;
	if (!pl__rwlock_trywrlock_raw(l))
		PL__DIVERTED(l, rc = pl__rwlock_wrlock_slow(l, deadline));
	PL_TSAN_POST_LOCK(l, rc ? PL_TSAN_TRY | PL_TSAN_TRY_FAILED : PL_TSAN_TRY);
	return rc;
}

/* Writer bucket locked: pass the lock to the next writer, directly when
 * the fairness timer fired, else wake it to compete.  WRITER stays set
 * until this CAS, so readers arriving meanwhile still park (and set
 * RPARKED, which the woken writer's unlock will honour).  If the writers
 * had all timed out, leave the word alone: the unlocker looks again. */
static uintptr_t
wr_handoff_callback(pl_unpark_result_t r, void *ctx)
{
	pl_rwlock_t *l = ctx;
	if (r.unparked == 0)
		return PL_UNPARK_TOKEN_DEFAULT;
	bool handoff = r.be_fair;
	uintptr_t s = __atomic_load_n(&l->state, __ATOMIC_RELAXED), n;
	do {
		n = handoff ? s : s & ~WRITER;
		if (!r.have_more)
			n &= ~WPARKED;
	} while (!__atomic_compare_exchange_n(&l->state, &s, n, true,
	    __ATOMIC_RELEASE, __ATOMIC_RELAXED));
	return handoff ? PL_UNPARK_TOKEN_HANDOFF : PL_UNPARK_TOKEN_DEFAULT;
}

void
pl__rwlock_wrunlock_slow(pl_rwlock_t *l)
{
	uintptr_t s = __atomic_load_n(&l->state, __ATOMIC_RELAXED);
	for (;;) {
		if (!(s & WRITER))
			pli_fatal("pl_rwlock_wrunlock: rwlock %p is not "
			          "write-locked",
			    (void *)l);
		if (s & RPARKED) {
			/* Phase change: every parked reader enters now. */
			if (readers_enter(l, true))
				return;
			/* They had all timed out; RPARKED is clear now. */
		} else if (s & WPARKED) {
			if (pl_unpark_one(writer_key(l), wr_handoff_callback, l)
			        .unparked)
				return;
			/* They had all timed out; WPARKED is clear now. */
		} else if (__atomic_compare_exchange_n(&l->state, &s,
		               s & ~WRITER, true, __ATOMIC_RELEASE,
		               __ATOMIC_RELAXED)) {
			return;
		}
		s = __atomic_load_n(&l->state, __ATOMIC_RELAXED);
	}
}
