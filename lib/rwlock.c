/* SPDX-License-Identifier: MIT */
/*
 * pl_rwlock_t slow paths: a phase-fair reader-writer lock in one word,
 * built on the public parking-lot API only.  Fast paths are inline in
 * include/parkinglot/rwlock.h.
 *
 * The word: WRITER (a writer holds it), WPARKED (writers are parked on
 * the writer key, l + 1), RPARKED (readers are parked on the reader key,
 * l), WWAIT and RWAIT (a spinning writer, or readers, claim the next
 * phase; below), and the number of readers holding it, in units of ONE.
 *
 * Who may enter:
 *   a reader  when none of WRITER, WWAIT and WPARKED is set: a reader
 *             that arrives while a writer waits, parked or spinning,
 *             waits behind it.  Readers who waited through a writer's
 *             hold (who saw WRITER during their call) go first: they may
 *             also enter past WPARKED while RWAIT, their claim, is set.
 *             RWAIT alone lets in no newcomer, so the parked writer waits
 *             for the readers who were there at its hold, not for every
 *             reader who comes while they overlap;
 *   a writer  when neither WRITER nor any reader holds it nor RWAIT is
 *             set (writers may overtake parked writers: they are not
 *             ordered among themselves, which keeps writer throughput).
 *
 * Both spin (struct pli_spinner) before they park, whatever is parked:
 * a phase change then lets in the spinning threads of the next phase
 * along with the parked ones, and most phases need no wake-up at all.
 * Spinning threads claim the next phase with a bit each:
 *   WWAIT  a writer that has spun WRITER_CLAIM_ROUNDS rounds while
 *          readers hold the lock sets it: new readers wait (they would
 *          otherwise keep a spinning writer out for good).
 *   RWAIT  a reader that has spun READER_CLAIM_ROUNDS rounds while a
 *          writer holds the lock sets it: no writer may enter until
 *          readers have, and readers may enter past parked writers.
 * Before a claim a phase is open to barging by its own side, so it lasts
 * some microseconds and holds many operations, as a mutex held by one
 * thread does; after it the phases alternate.  Readers wait longer before
 * claiming because their phase has every reader in at once (with equal
 * delays, a few percent of lockbench W6's operations were writes).
 *
 * A waiter that sees a claim on the word knows the phase is about to
 * change, and that the threads that must finish it may need its CPU: it
 * goes straight to the rounds that yield (where threads outnumber CPUs,
 * they get to run), and it watches the word during its waits, so that the
 * lock does not sit idle until its next look (spin_claimed).  Both raised
 * W6 at 8 and 16 threads from about 1.5x glibc to about 1.8x.
 *
 * Neither claim may outlive the threads behind it, or it would keep the
 * other side out for good:
 *   WWAIT  is cleared by any writer that gets in, and by a writer that
 *          stops spinning to park (WPARKED then keeps readers out);
 *          spinning writers set it again on their next look.
 *   RWAIT  is cleared by the writer that claims the following phase
 *          (readers are in: the claim was honoured), by the last reader
 *          out, and by a reader that stops spinning while no reader is
 *          inside.  A writer never parks behind RWAIT alone (wr_validate
 *          looks only at holders): it keeps looking until the claim
 *          ends.
 * A waiter parks only behind a holder or a parked bit, as below; a reader
 * parked behind WWAIT is let in by that writer's unlock (it either gets
 * in, or parks and is handed the lock by the last reader).
 *
 * Transitions of the parked bits (each under the bucket of its key):
 *   RPARKED set    by a reader's validate, while it may not enter;
 *           clear  by whoever empties the reader queue: the hand-off to
 *                  all readers, or the timed_out of the last reader.
 *   WPARKED set    by a writer's validate, while the lock is held;
 *           clear  when the writer queue is left empty: the hand-off to
 *                  the last writer, or the timed_out of the last writer.
 *   Either bit may also be left set over an empty queue by a waiter that
 *   left without its callback: a reader that ended while parked
 *   (lib/parkinglot.c, self_destroy), or one of the parent's threads in a
 *   child after fork.  An unpark that finds the queue empty clears the
 *   bit (readers_enter_callback, wr_handoff_callback, and the last
 *   reader's rd_handoff_callback, which then lets in the readers that the
 *   stale WPARKED held back).
 * So, under the bucket lock of a key, its bit is set whenever its queue
 * is non-empty, and a stale bit lasts until the next unpark of its key.
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
 *     hand-off when the bucket's fairness timer fired and no reader
 *     claims the next phase (RWAIT), else to compete; and if readers
 *     parked since the unlock looked (RPARKED at the callback's CAS), it
 *     keeps the lock and lets them in first (wr_handoff_callback).
 *     A woken writer (or reader) that loses and parks again keeps its
 *     turn in its queue (PLI_PARK_AGAIN; lib/parkinglot.c, "Turns"), so
 *     the next wake, and the timer's hand-off, go to the writer that has
 *     waited longest, as for the mutex (lib/twobit.c).
 *
 * No lost wakeup: a waiter parks only after its validate saw, with the
 * bucket of its key locked, a holder that must release the lock, and set
 * its parked bit with the same CAS (a CAS whose expected value holds
 * WRITER or a reader count).  That holder's release reads the bit and
 * takes the slow path, which locks the same bucket and so finds the
 * waiter queued.  The one waiter that can leave with others depending on
 * it is the last parked writer timing out: readers it held back (RPARKED
 * with no WRITER) are then let in by the departing writer itself.
 *
 * Threads that end in a park (cancelled asynchronously, or pthread_exit
 * in a signal handler), as for the mutex (lib/twobit.c): a writer parks
 * with PLI_PARK_UNWOUND, so the lot tells wr_unwound while its frame is
 * still there.  Still queued, it leaves as on a timeout, readers it held
 * back included.  Woken to compete, it does at once what the unlock that
 * woke it counted on, which was to take the lock and, at its own unlock,
 * wake the writers still queued (WPARKED kept for them) and the readers
 * parked meanwhile (RPARKED):
 *   - if a writer may enter, it takes the lock and releases it;
 *   - else, if readers are parked and no writer holds the lock, it lets
 *     them in, as the last parked writer's timeout does: readers hold
 *     the lock, and no reader's unlock wakes readers;
 *   - else a writer holds the lock, and its unlock sees the bits.
 * Handed the lock, it keeps it, as a lock held by a thread that ended
 * stays held.  A reader has no such duty: readers are woken all at once,
 * and one that ends leaves nobody behind it.  model/rwlock.pml -DDIES
 * checks this.
 *
 * A timed call whose deadline has already passed makes the one attempt of
 * the try variant and fails: no spinning, no park, one clock read, and
 * only when that attempt failed (as for pl_mutex_t, lib/mutex.c).
 */
#include <errno.h>

#include <parkinglot/core.h>
#include <parkinglot/rwlock.h>

#include "platform.h"
#include "events.h"
#include "lot.h"
#include "spin.h"

#define WRITER PL_RWLOCK_WRITER
#define WPARKED PL_RWLOCK_WRITER_PARKED
#define RPARKED PL_RWLOCK_READER_PARKED
#define WWAIT PL_RWLOCK_WRITER_WAITING
#define RWAIT PL_RWLOCK_READER_WAITING

/* Spin rounds a waiter lets pass before it claims the next phase (see
 * the top of the file; lockbench W6, doc/BENCHMARKS.md). */
#define READER_CLAIM_ROUNDS 6
#define WRITER_CLAIM_ROUNDS 2
/* Whether a reader in the slow path may enter: as an arriving one, or,
 * if it saw a writer hold the lock during this call (waited), past
 * parked writers while RWAIT, its side's claim, is set. */
#define MAY_ENTER(s, waited)                                                   \
	PL_RWLOCK_READER_MAY_ENTER(                                            \
	    (waited) && ((s)&RWAIT) ? (s) & ~WPARKED : (s))
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

/* A round of waiting while a claim is on the word (state s): yield at
 * once, and watch the word so as to notice the change of phase. */
static bool
spin_claimed(struct pli_spinner *sp, pl_rwlock_t *l, uintptr_t s)
{
	pli_spinner_hurry(sp);
	return pli_spin_watch(sp, &l->state, s);
}

void
pl_rwlock_init(pl_rwlock_t *l)
{
	__atomic_store_n(&l->state, 0, __ATOMIC_RELAXED);
}

/* ---- readers ---------------------------------------------------------- */

/* A reader's slow path: the lock, and whether it has seen a writer hold
 * it during this call (the readers RWAIT speaks for). */
struct rd_ctx {
	pl_rwlock_t *l;
	bool waited;
};

static bool
rd_validate(void *ctx)
{
	struct rd_ctx *r = ctx;
	pl_rwlock_t *l = r->l;
	uintptr_t s = __atomic_load_n(&l->state, __ATOMIC_RELAXED);
	for (;;) {
		if (MAY_ENTER(s, r->waited))
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
		__atomic_fetch_and(&((struct rd_ctx *)ctx)->l->state, ~RPARKED,
		    __ATOMIC_RELAXED);
}

static int
rdlock_until(pl_rwlock_t *l, clockid_t clock, const struct timespec *deadline)
{
	struct pli_spinner sp;
	pli_spinner_init(&sp, NULL);
	pli_event_contended(l, PLI_KIND_PL_RWLOCK);
	uintptr_t s = __atomic_load_n(&l->state, __ATOMIC_RELAXED);
	struct rd_ctx r = { l, false };
	unsigned again = 0; /* PLI_PARK_AGAIN once woken: see the top */
	for (;;) {
		if (s & WRITER)
			r.waited = true;
		if (MAY_ENTER(s, r.waited)) {
			if (s >= PL_RWLOCK_READERS_MAX)
				pli_fatal("pl_rwlock_rdlock: rwlock %p: too "
				          "many readers",
				    (void *)l);
			if (__atomic_compare_exchange_n(&l->state, &s, s + ONE,
			        true, __ATOMIC_ACQUIRE, __ATOMIC_RELAXED)) {
				pli_spinner_acquired(&sp);
				return 0;
			}
			continue;
		}
		/* A writer holds it: claim the next phase while we spin. */
		if ((s & WRITER) && !(s & RWAIT) &&
		    sp.spins + sp.yields >= READER_CLAIM_ROUNDS) {
			__atomic_compare_exchange_n(&l->state, &s, s | RWAIT,
			    true, __ATOMIC_RELAXED, __ATOMIC_RELAXED);
			continue;
		}
		/* With a claim on the word, the phase is about to change:
		 * see the top of the file. */
		if ((s & (RWAIT | WWAIT)) ? spin_claimed(&sp, l, s)
		                          : pli_spin(&sp)) {
			s = __atomic_load_n(&l->state, __ATOMIC_RELAXED);
			continue;
		}
		/* Done spinning: RPARKED takes over.  A writer the claim
		 * kept out would spin until it is dropped (wr_validate
		 * does not park behind it), so drop it unless readers
		 * inside will (the last one out clears it). */
		if ((s & RWAIT) && READERS(s) == 0) {
			uintptr_t n;
			do
				n = READERS(s) ? s : s & ~RWAIT;
			while (n != s &&
			    !__atomic_compare_exchange_n(&l->state, &s, n, true,
			        __ATOMIC_RELAXED, __ATOMIC_RELAXED));
		}
		pli_spinner_park(&sp);
		pl_park_result_t pr = pli_park(PLI_KIND_PL_RWLOCK | again,
		    reader_key(l), rd_validate, NULL, rd_timed_out, &r, 0,
		    clock, deadline, NULL);
		if (pr.status == PL_PARK_UNPARKED) {
			if (pr.token == PL_UNPARK_TOKEN_HANDOFF)
				return 0; /* our count was added for us */
			again = PLI_PARK_AGAIN;
		}
		if (pr.status == PL_PARK_TIMED_OUT)
			return ETIMEDOUT;
		s = __atomic_load_n(&l->state, __ATOMIC_RELAXED);
	}
}

PLI_COLD int
pl__rwlock_rdlock_slow(pl_rwlock_t *l, const struct timespec *deadline)
{
	return rdlock_until(l, CLOCK_MONOTONIC, deadline);
}

int
pl_rwlock_clockrdlock(
    pl_rwlock_t *l, clockid_t clock, const struct timespec *deadline)
{
	if (!pli_deadline_valid(deadline) || !pli_clock_valid(clock))
		return EINVAL;
	unsigned f = PL_TSAN_READ | PL_TSAN_TRY;
	PL_TSAN_PRE_LOCK(l, f);
	int rc = 0;
	if (!pl__rwlock_tryrdlock_raw(l))
		PL__DIVERTED(l,
		    rc = deadline && pli_deadline_passed(clock, deadline)
		        ? ETIMEDOUT
		        : rdlock_until(l, clock, deadline));
	PL_TSAN_POST_LOCK(l, rc ? f | PL_TSAN_TRY_FAILED : f);
	return rc;
}

int
pl_rwlock_timedrdlock(pl_rwlock_t *l, const struct timespec *deadline)
{
	return pl_rwlock_clockrdlock(l, CLOCK_MONOTONIC, deadline);
}

static bool readers_enter(pl_rwlock_t *l, bool from_writer);

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
		n = READERS(s) == ONE ? (s - ONE) & ~RWAIT : s - ONE;
		if (handoff)
			n |= WRITER;
		if (!r.have_more) /* none left, or none was there */
			n &= ~WPARKED;
	} while (!__atomic_compare_exchange_n(
	    &l->state, &s, n, true, __ATOMIC_ACQ_REL, __ATOMIC_RELAXED));
	return handoff ? PL_UNPARK_TOKEN_HANDOFF : PL_UNPARK_TOKEN_DEFAULT;
}

PLI_COLD void
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
		/* The last reader out ends its phase's claim. */
		uintptr_t n = READERS(s) == ONE ? (s - ONE) & ~RWAIT : s - ONE;
		if (__atomic_compare_exchange_n(&l->state, &s, n, true,
		        __ATOMIC_RELEASE, __ATOMIC_RELAXED))
			return;
	}
	/* The last reader, and writers wait: no new reader can enter while
	 * WPARKED is set, and no writer while we still count. */
	if (pl_unpark_one(writer_key(l), rd_handoff_callback, l).unparked)
		return;
	/* No writer queued: they timed out meanwhile (the last one lets
	 * the readers in too; twice is harmless), or WPARKED is stale after
	 * a fork.  Readers held back are let in, as a timeout would. */
	s = __atomic_load_n(&l->state, __ATOMIC_RELAXED);
	if ((s & RPARKED) && !(s & WRITER))
		readers_enter(l, false);
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
	if (r.unparked == 0) {
		/* Nobody queued: RPARKED was left by readers that ended
		 * while parked (or by a fork). */
		__atomic_fetch_and(&e->l->state, ~RPARKED, __ATOMIC_RELAXED);
		return PL_UNPARK_TOKEN_DEFAULT;
	}
	uintptr_t s = __atomic_load_n(&e->l->state, __ATOMIC_RELAXED), n;
	bool handoff;
	do {
		/* A writer that timed out lets the readers in only if no
		 * other writer claims the lock meanwhile: else that one's
		 * unlock does (model/rwlock.pml, BROKEN=6). */
		handoff = e->from_writer || !(s & (WRITER | WWAIT));
		n = s & ~RPARKED;
		if (e->from_writer)
			n &= ~WRITER;
		if (handoff)
			n += r.unparked * ONE;
	} while (!__atomic_compare_exchange_n(
	    &e->l->state, &s, n, true, __ATOMIC_ACQ_REL, __ATOMIC_RELAXED));
	return handoff ? PL_UNPARK_TOKEN_HANDOFF : PL_UNPARK_TOKEN_DEFAULT;
}

/* Wake every parked reader and let them in; true if there were any. */
static bool
readers_enter(pl_rwlock_t *l, bool from_writer)
{
	struct enter_ctx e = { l, from_writer };
	return pl_unpark_filter(reader_key(l), NULL, readers_enter_callback, &e)
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
	uintptr_t s =
	    __atomic_fetch_and(&w->l->state, ~WPARKED, __ATOMIC_RELAXED);
	w->let_readers_in = (s & RPARKED) && !(s & WRITER);
}

/* cancelled, for the park of a writer that ends in it (PLI_PARK_UNWOUND;
 * see "Threads that end in a park" above). */
static void
wr_unwound(void *ctx, pl_park_result_t r)
{
	struct wr_ctx *w = ctx;
	if (r.status != PL_PARK_UNPARKED) {
		if (w->let_readers_in) /* set by wr_timed_out */
			readers_enter(w->l, false);
		return;
	}
	if (r.token == PL_UNPARK_TOKEN_HANDOFF)
		return;
	uintptr_t s = __atomic_load_n(&w->l->state, __ATOMIC_RELAXED);
	while (!(s & (WRITER | RWAIT)) && READERS(s) == 0) {
		if (__atomic_compare_exchange_n(&w->l->state, &s,
		        (s | WRITER) & ~WWAIT, true, __ATOMIC_ACQUIRE,
		        __ATOMIC_RELAXED)) {
			pl__rwlock_wrunlock_slow(w->l);
			return;
		}
	}
	if ((s & RPARKED) && !(s & WRITER))
		readers_enter(w->l, false);
}

static int
wrlock_until(pl_rwlock_t *l, clockid_t clock, const struct timespec *deadline)
{
	struct pli_spinner sp;
	pli_spinner_init(&sp, NULL);
	pli_event_contended(writer_key(l), PLI_KIND_PL_RWLOCK);
	uintptr_t s = __atomic_load_n(&l->state, __ATOMIC_RELAXED);
	unsigned again = 0; /* PLI_PARK_AGAIN once woken: see the top */
	for (;;) {
		if (!(s & (WRITER | RWAIT)) && READERS(s) == 0) {
			if (__atomic_compare_exchange_n(&l->state, &s,
			        (s | WRITER) & ~WWAIT, true, __ATOMIC_ACQUIRE,
			        __ATOMIC_RELAXED)) {
				pli_spinner_acquired(&sp);
				return 0;
			}
			continue;
		}
		/* Readers inside: their phase has begun, so their claim
		 * is spent; keep new ones out while we spin. */
		if (READERS(s) && !(s & (WRITER | WWAIT)) &&
		    sp.spins + sp.yields >= WRITER_CLAIM_ROUNDS) {
			__atomic_compare_exchange_n(&l->state, &s,
			    (s | WWAIT) & ~RWAIT, true, __ATOMIC_RELAXED,
			    __ATOMIC_RELAXED);
			continue;
		}
		/* With a claim on the word, the phase is about to change:
		 * see the top of the file. */
		if ((s & (RWAIT | WWAIT)) ? spin_claimed(&sp, l, s)
		                          : pli_spin(&sp)) {
			s = __atomic_load_n(&l->state, __ATOMIC_RELAXED);
			continue;
		}
		/* Done spinning: WPARKED takes over from WWAIT (set by our
		 * validate, or we find the lock free and spin afresh). */
		if (s & WWAIT)
			__atomic_fetch_and(&l->state, ~WWAIT, __ATOMIC_RELAXED);
		pli_spinner_park(&sp);
		struct wr_ctx w = { l, false };
		pl_park_result_t r =
		    pli_park(PLI_KIND_PL_RWLOCK | again | PLI_PARK_UNWOUND,
		        writer_key(l), wr_validate, NULL, wr_timed_out, &w, 0,
		        clock, deadline, wr_unwound);
		if (r.status == PL_PARK_UNPARKED) {
			if (r.token == PL_UNPARK_TOKEN_HANDOFF)
				return 0; /* WRITER was set for us */
			again = PLI_PARK_AGAIN;
		}
		if (r.status == PL_PARK_TIMED_OUT) {
			if (w.let_readers_in)
				readers_enter(l, false);
			return ETIMEDOUT;
		}
		s = __atomic_load_n(&l->state, __ATOMIC_RELAXED);
	}
}

PLI_COLD int
pl__rwlock_wrlock_slow(pl_rwlock_t *l, const struct timespec *deadline)
{
	return wrlock_until(l, CLOCK_MONOTONIC, deadline);
}

int
pl_rwlock_clockwrlock(
    pl_rwlock_t *l, clockid_t clock, const struct timespec *deadline)
{
	if (!pli_deadline_valid(deadline) || !pli_clock_valid(clock))
		return EINVAL;
	PL_TSAN_PRE_LOCK(l, PL_TSAN_TRY);
	int rc = 0;
	if (!pl__rwlock_trywrlock_raw(l))
		PL__DIVERTED(l,
		    rc = deadline && pli_deadline_passed(clock, deadline)
		        ? ETIMEDOUT
		        : wrlock_until(l, clock, deadline));
	PL_TSAN_POST_LOCK(
	    l, rc ? PL_TSAN_TRY | PL_TSAN_TRY_FAILED : PL_TSAN_TRY);
	return rc;
}

int
pl_rwlock_timedwrlock(pl_rwlock_t *l, const struct timespec *deadline)
{
	return pl_rwlock_clockwrlock(l, CLOCK_MONOTONIC, deadline);
}

/* Writer bucket locked: pass the lock to the next writer, directly when
 * the fairness timer fired, else wake it to compete.  Never directly
 * past RWAIT: readers spinning through this hold have claimed the next
 * phase, and the woken writer, competing, stays out until they are in
 * (a hand-off there made them wait through a second writer's hold).
 *
 * Nor past readers parked since the unlock looked at the word (it saw no
 * RPARKED): they waited through this hold, and API.md lets them in
 * before any waiting writer.  WRITER stays set until this CAS, so such
 * readers did park, and set RPARKED, which this CAS sees; then the lock
 * stays ours, the woken writer competes, finds it held and parks again
 * at its turn, and the unlock goes round to the readers (readers_first).
 * A wake that was not needed, in a window of some instructions; before,
 * those readers waited through the woken writer's hold.  (The reader's
 * validate and this CAS run under different bucket locks: one of them
 * comes first on the word, and a reader that comes second sees WRITER
 * clear and does not park behind this hold.)
 *
 * If the writers had all timed out, leave the word alone: the unlocker
 * looks again. */
struct wr_unlock {
	pl_rwlock_t *l;
	bool readers_first;
};

static uintptr_t
wr_handoff_callback(pl_unpark_result_t r, void *ctx)
{
	struct wr_unlock *u = ctx;
	if (r.unparked == 0) {
		/* Nobody queued: the writers timed out meanwhile, or
		 * WPARKED was left by a fork (writers that end in their park
		 * leave through wr_unwound). */
		__atomic_fetch_and(&u->l->state, ~WPARKED, __ATOMIC_RELAXED);
		return PL_UNPARK_TOKEN_DEFAULT;
	}
	bool handoff;
	uintptr_t s = __atomic_load_n(&u->l->state, __ATOMIC_RELAXED), n;
	do {
		u->readers_first = s & RPARKED;
		handoff = !u->readers_first && r.be_fair && !(s & RWAIT);
		n = handoff || u->readers_first ? s : s & ~WRITER;
		if (!r.have_more)
			n &= ~WPARKED;
	} while (!__atomic_compare_exchange_n(
	    &u->l->state, &s, n, true, __ATOMIC_RELEASE, __ATOMIC_RELAXED));
	return handoff ? PL_UNPARK_TOKEN_HANDOFF : PL_UNPARK_TOKEN_DEFAULT;
}

PLI_COLD void
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
			struct wr_unlock u = { l, false };
			if (pl_unpark_one(
			        writer_key(l), wr_handoff_callback, &u)
			        .unparked &&
			    !u.readers_first)
				return;
			/* The writers had all timed out (WPARKED is clear
			 * now), or readers parked meanwhile (RPARKED). */
		} else if (__atomic_compare_exchange_n(&l->state, &s,
		               s & ~WRITER, true, __ATOMIC_RELEASE,
		               __ATOMIC_RELAXED)) {
			return;
		}
		s = __atomic_load_n(&l->state, __ATOMIC_RELAXED);
	}
}
