/* SPDX-License-Identifier: MIT */
/*
 * The spin phase of every lock's slow path: inline, no state of its own
 * beyond the caller's struct pli_spinner but the history of the yield
 * rounds (spin.c).
 */
#ifndef PARKINGLOT_SPIN_H
#define PARKINGLOT_SPIN_H

#include <sched.h>
#include <stdbool.h>
#include <stdint.h>

#include "platform.h"
#include "stats.h"
#include "tuning.h"

/*
 * The spin phase of every lock's slow path.  Each round waits about
 * poll_ns (pause_per_spin pause instructions, see tuning.c) and then looks
 * at the lock again: spin_limit such rounds, then yield_limit rounds that
 * call sched_yield before the same wait, so that a thread preempted on
 * this CPU (the holder, or anyone else) can run meanwhile; then park.
 *
 * Before them a spinner given the lock's address (the mutex and the bit
 * locks) looks once more after a tenth of a round, about 250 ns: most
 * holds of a lock that is contended at all are short, and a waiter that
 * waits a whole round before its second look leaves such a lock idle
 * for most of it.  Producers and consumers on a mutex and condition
 * variables (lockbench W5a) ran twice as fast or more, and the rounds
 * after it still keep a waiter off the holder's cache line for long
 * (doc/BENCHMARKS.md, "The early look").  A woken waiter that spins
 * again looks early again; nobody does where spin_limit is 0.
 *
 * A yield that finds another runnable thread may not come back for a
 * whole time slice (milliseconds), and twenty of them would keep a waiter
 * out of the queue, and out of the fairness hand-off, for that long.  So
 * the yield rounds also end, and the thread parks, once they have taken
 * twice their nominal time (2 x yield_limit x poll_ns from the first).
 *
 * The yield rounds adapt: a spinner given the lock's address (the mutex
 * and the bit locks) runs them only while they have been paying off on
 * that lock, and otherwise parks after its pause rounds; spin.c says how
 * it decides.  (The rwlock's waiters spin mostly behind a claim, when the
 * phase is known to be about to change, and pass NULL.)
 *
 * Callers spin only while nobody is parked on the lock (with a queue, the
 * lock goes to a woken waiter, and spinning only burns a core), and start
 * over after each wake-up.  The spinner also keeps the statistics: a
 * slow-path acquisition won without parking, and the first park of a
 * slow path.
 */
struct pli_spinner {
	unsigned spins, yields;
	unsigned spin_limit, yield_limit, pauses, poll_ns;
	unsigned adapt;     /* the tuning's, 0 without an address */
	const void *addr;   /* the lock, whose yield rounds' history counts */
	uint64_t yield_end; /* when the yield rounds must stop */
	unsigned early;     /* pauses before the early look; 0: done */
	bool parked;
};

/* spin.c: the history of the yield rounds on the lock at addr: whether
 * a waiter may start them (and is counted as one that did), g = adapt
 * being how many may start them before one pays; that they paid; the
 * byte, for the tests. */
bool pli_spin_may_yield(const void *addr, unsigned g);
void pli_spin_yields_paid(const void *addr);
unsigned pli_spin_history(const void *addr);

/* The pauses before the early look: a tenth of a round's. */
static inline unsigned
pli_spinner_early(const struct pli_spinner *sp)
{
	return sp->addr && sp->spin_limit ? sp->pauses / 10 + 1 : 0;
}

static inline void
pli_spinner_init(struct pli_spinner *sp, const void *addr)
{
	pli_tuning_kick();
	const struct pli_tuning *t = pli_tuning();
	sp->adapt = addr ? __atomic_load_n(&t->adapt, __ATOMIC_RELAXED) : 0;
	sp->addr = addr;
	sp->spins = sp->yields = 0;
	sp->spin_limit = __atomic_load_n(&t->pub.spin_limit, __ATOMIC_RELAXED);
	sp->yield_limit =
	    __atomic_load_n(&t->pub.yield_limit, __ATOMIC_RELAXED);
	sp->pauses = __atomic_load_n(&t->pause_per_spin, __ATOMIC_RELAXED);
	sp->poll_ns = __atomic_load_n(&t->poll_ns, __ATOMIC_RELAXED);
	sp->yield_end = 0;
	sp->early = pli_spinner_early(sp);
	sp->parked = false;
}

/* Start a round: false when it is time to park. */
static inline bool
pli_spin_begin(struct pli_spinner *sp)
{
	if (sp->spins < sp->spin_limit)
		sp->spins++;
	else if (sp->yields < sp->yield_limit) {
		if (sp->yields == 0 && sp->adapt &&
		    !pli_spin_may_yield(sp->addr, sp->adapt))
			return false; /* park: yields == 0 says nothing */
		uint64_t now = pli_now_ns();
		if (sp->yields++ == 0)
			sp->yield_end =
			    now + 2 * (uint64_t)sp->yield_limit * sp->poll_ns;
		else if (now > sp->yield_end)
			return false;
		sched_yield();
	} else
		return false;
	return true;
}

/* One round of waiting; false when it is time to park. */
static inline bool
pli_spin(struct pli_spinner *sp)
{
	unsigned n = sp->early; /* the early look, uncounted */
	if (n)
		sp->early = 0;
	else if (pli_spin_begin(sp))
		n = sp->pauses;
	else
		return false;
	for (unsigned i = 0; i < n; i++)
		pli_cpu_relax();
	return true;
}

/*
 * A round that also watches *word, every PLI_WATCH_PAUSES pauses, and
 * ends early once it no longer holds old: for a waiter that knows the
 * lock is about to change hands (the rwlock's phase claims), where
 * noticing late leaves the lock idle.  Watching costs the holder its
 * cache line more often, so plain spinning never does it.
 */
#define PLI_WATCH_PAUSES 8u
static inline bool
pli_spin_watch(struct pli_spinner *sp, const uintptr_t *word, uintptr_t old)
{
	if (!pli_spin_begin(sp))
		return false;
	for (unsigned i = 1; i <= sp->pauses; i++) {
		pli_cpu_relax();
		if (i % PLI_WATCH_PAUSES == 0 &&
		    __atomic_load_n(word, __ATOMIC_RELAXED) != old)
			break;
	}
	return true;
}

/* Skip what is left of the pause rounds: the rounds that yield come next. */
static inline void
pli_spinner_hurry(struct pli_spinner *sp)
{
	if (sp->spins < sp->spin_limit)
		sp->spins = sp->spin_limit;
}

/* About to park (again): count the first, and spin afresh once woken. */
static inline void
pli_spinner_park(struct pli_spinner *sp)
{
	if (!sp->parked) {
		sp->parked = true;
		pli_stat_add(PLI_SPIN_FAILURES, 1);
	}
	sp->spins = sp->yields = 0;
	sp->early = pli_spinner_early(sp);
}

static inline void
pli_spinner_acquired(const struct pli_spinner *sp)
{
	if (!sp->parked)
		pli_stat_add(PLI_SPIN_ACQUIRES, 1);
	if (sp->yields && sp->adapt)
		pli_spin_yields_paid(sp->addr);
}

#endif /* PARKINGLOT_SPIN_H */
