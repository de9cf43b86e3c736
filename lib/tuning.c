/* SPDX-License-Identifier: MIT */
/*
 * Tuning of the contended paths: static defaults, overrides from the
 * environment, the refinement from the topology, pl_tuning_get/set.
 *
 * Where the values come from, and when.  The tuning in force is a static
 * object holding the defaults below from the first instruction on; no
 * lock operation ever waits for anything else.  The first slow path of a
 * process (a lock that spins, or a park) refines it, once
 * (pli_tuning_kick), on its own thread and before it spins: it applies
 * the PARKINGLOT_* overrides (a getenv each; a malformed one prints its
 * warning there), reads the topology (topology.c: a system call and one
 * sysfs file), measures the cost of a pause, and stores the refined
 * values, some 40 us in all here.  Slow paths of other threads that come
 * meanwhile run on the defaults and do not wait.  pl_tuning_get and
 * pl_tuning_set, which are no lock operations, wait for a refinement
 * under way, or run it themselves, so that what they show and what they
 * change is final.  The library starts no thread for any of it; a process
 * that never contends never reads the topology; the child of a fork that
 * interrupted a refinement runs it again at its own first slow path.
 *
 * Precedence: pl_tuning_set over the environment over the topology over
 * the static defaults.  The fields are read with relaxed atomic loads by
 * the slow paths and written with relaxed atomic stores: each is a hint
 * on its own, and a thread that reads a mix of old and new values only
 * spins a little more or less once.
 *
 * errno: no call of the library changes it, and the refinement runs code
 * that may (the topology's sysfs read, a warning's fprintf, strtoul):
 * each step restores it.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#include <parkinglot/tuning.h>

#include "wordlock.h"
#include "futex.h"
#include "platform.h"
#include "tuning.h"

#define MAX_SPIN 1000000u
#define MAX_YIELD 1000u
#define MAX_FAIR_US 10000000u
#define MAX_ADAPT 200u /* spin.c's byte holds it and 16 more */

/*
 * Defaults for a machine where other PUs can release a lock meanwhile; see
 * doc/BENCHMARKS.md ("Spinning") for the measurements behind each.
 *
 * A spin round waits about POLL_NS and then looks at the lock once.  The
 * wait is made of pause instructions, counted from the cost of one pause
 * measured at start-up (from a few ns to over 100 ns across x86
 * generations, so a fixed count would mean very different waits).  It is
 * long on purpose: every look pulls the lock's cache line away from its
 * holder, and a holder that keeps the line runs at uncontended speed.
 * Looking after every pause (20 ns here) gave 0.8x glibc's throughput on
 * lockbench W2; looking every 2.5 us, over 2x.
 *
 * (The mutex's and the bit locks' waiters look once early, after a tenth
 * of a round, before these rounds: spin.h.)
 *
 * DEFAULT_SPIN rounds of pausing come first, then DEFAULT_YIELD rounds
 * that yield the CPU before their wait: a waiter that has not got the lock
 * within a few microseconds lets any other runnable thread of its CPU run
 * (the holder, preempted, or unrelated work; lockbench W4).  The whole
 * spin lasts about 60 us here before the thread parks.
 */
#define DEFAULT_SPIN 2u
#define DEFAULT_YIELD 20u
#define DEFAULT_FAIR_US 1000u
/* Once 4 waiters on a lock started their yield rounds without one of
 * them getting the lock, the next ones skip them (spin.c;
 * doc/BENCHMARKS.md, "Adaptive spinning"). */
#define DEFAULT_ADAPT 4u
#define DEFAULT_POLL_NS 2500u
#define MAX_POLL_NS 1000000u
#define MAX_PAUSES 100000u

/* Until the cost of a pause is measured: 20 ns, this machine's. */
#define ASSUMED_PAUSE_NS 20u

struct pli_tuning pli_tuning_v = {
	.pub = { .spin_limit = DEFAULT_SPIN,
	    .yield_limit = DEFAULT_YIELD,
	    .fair_interval_us = DEFAULT_FAIR_US },
	.poll_ns = DEFAULT_POLL_NS,
	.pause_per_spin = DEFAULT_POLL_NS / ASSUMED_PAUSE_NS,
	.pause_ns = ASSUMED_PAUSE_NS,
	.adapt = DEFAULT_ADAPT,
};

/* The refinement (tuning.h), a once (futex.h): RUNNING in the first slow
 * path, or in a caller of pl_tuning_get/set; callers of pl_tuning_get/set
 * that find it RUNNING sleep until it is DONE. */
_Static_assert(PLI_TUNING_NONE == PLI_ONCE_NONE, "tuning.h's NONE");
uint32_t pli_tuning_state;
/* Guarded by publish_lock, as every store into the tuning in force. */
static uint32_t publish_lock; /* a word lock (wordlock.h) */
static bool user_set;         /* pl_tuning_set was called: its values win */

static void
store(unsigned *field, unsigned v)
{
	__atomic_store_n(field, v, __ATOMIC_RELAXED);
}

/* PARKINGLOT_<name>: a decimal number in 0..max into *val; else, if warn,
 * a one-line warning, and *val stays.  Whether the variable was valid. */
static bool
env_override(const char *name, unsigned max, unsigned *val, bool warn)
{
	const char *s = getenv(name);
	if (s == NULL)
		return false;
	char *end;
	int saved = errno;
	errno = 0;
	unsigned long v = strtoul(s, &end, 10);
	bool bad =
	    *s < '0' || *s > '9' || *end != '\0' || errno != 0 || v > max;
	if (bad && warn)
		fprintf(stderr,
		    "libparkinglot: ignoring %s=\"%s\": not a whole number "
		    "from 0 to %u (keeping %u)\n",
		    name, s, max, *val);
	errno = saved;
	if (bad)
		return false;
	*val = (unsigned)v;
	return true;
}

/* The five overrides over t, each where it is valid; whether
 * PARKINGLOT_POLL_NS was one. */
static bool
env_apply(struct pli_tuning *t, bool warn)
{
	env_override("PARKINGLOT_ADAPT", MAX_ADAPT, &t->adapt, warn);
	env_override("PARKINGLOT_SPIN", MAX_SPIN, &t->pub.spin_limit, warn);
	env_override("PARKINGLOT_YIELD", MAX_YIELD, &t->pub.yield_limit, warn);
	env_override(
	    "PARKINGLOT_FAIR_US", MAX_FAIR_US, &t->pub.fair_interval_us, warn);
	return env_override(
	    "PARKINGLOT_POLL_NS", MAX_POLL_NS, &t->poll_ns, warn);
}

static unsigned
pauses_for(unsigned poll_ns, unsigned pause_ns)
{
	unsigned n = poll_ns / pause_ns;
	return n < 1 ? 1 : n > MAX_PAUSES ? MAX_PAUSES : n;
}

/* Publish t over the tuning in force (publish_lock held): every field but
 * those pl_tuning_set has set since. */
static void
publish(const struct pli_tuning *t)
{
	struct pli_tuning *v = &pli_tuning_v;
	if (!user_set) {
		store(&v->pub.spin_limit, t->pub.spin_limit);
		pli_word_lock_spin(t->pub.spin_limit != 0);
		store(&v->pub.yield_limit, t->pub.yield_limit);
		store(&v->pub.fair_interval_us, t->pub.fair_interval_us);
	}
	store(&v->poll_ns, t->poll_ns);
	store(&v->pause_ns, t->pause_ns);
	store(&v->pause_per_spin, t->pause_per_spin);
	store(&v->adapt, t->adapt);
}

/* What one pause instruction costs here, in ns (at least 1): the best of
 * a few timed batches, so that a preemption inflates none of them.  About
 * 20 us here, once per process; a batch of 200 pauses lasts 4 us, some
 * 200 times the cost of reading the clock. */
#define PAUSE_BATCH 200
static unsigned
pause_cost_ns(void)
{
	uint64_t best = UINT64_MAX;
	for (int round = 0; round < 5; round++) {
		uint64_t t0 = pli_now_ns();
		for (int i = 0; i < PAUSE_BATCH; i++)
			pli_cpu_relax();
		uint64_t dt = pli_now_ns() - t0;
		if (dt < best)
			best = dt;
	}
	unsigned ns = (unsigned)(best / PAUSE_BATCH);
	return ns > 0 ? ns : 1;
}

/* The refinement itself, by whoever moved the state from NONE: the
 * topology's defaults, the environment over them (warning of a malformed
 * variable), the pause cost; then publish, and DONE. */
static void
refine(void)
{
	int saved_errno = errno;
	struct pli_topology topo;
	pli_topology_get(&topo);

	struct pli_tuning t;
	t.pub.fair_interval_us = DEFAULT_FAIR_US;
	t.poll_ns = DEFAULT_POLL_NS;
	t.adapt = DEFAULT_ADAPT;
	if (topo.pus <= 1) {
		/* The holder cannot run while we spin: park at once. */
		t.pub.spin_limit = 0;
		t.pub.yield_limit = 0;
	} else {
		t.pub.spin_limit = DEFAULT_SPIN;
		t.pub.yield_limit = DEFAULT_YIELD;
		/* An SMT sibling shares our pipeline: wait longer so that
		 * spinning steals less of it from the holder (the design
		 * notes' rule; this 2-core machine has no SMT to measure). */
		if (topo.pus_per_core > 1)
			t.poll_ns *= 2;
	}
	env_apply(&t, true);
	/* Measured even where nothing spins: pl_tuning_set may turn
	 * spinning on later. */
	t.pause_ns = pause_cost_ns();
	t.pause_per_spin = pauses_for(t.poll_ns, t.pause_ns);
	if (pli_verbose)
		fprintf(stderr,
		    "libparkinglot: %u PUs, %u cores, %u per core (%s): "
		    "spin %u, yield %u, each round %u pauses of %u ns, "
		    "fair %u us, adapt %u\n",
		    topo.pus, topo.cores, topo.pus_per_core, topo.source,
		    t.pub.spin_limit, t.pub.yield_limit, t.pause_per_spin,
		    t.pause_ns, t.pub.fair_interval_us, t.adapt);
	pli_word_lock(&publish_lock);
	publish(&t);
	pli_word_unlock(&publish_lock);
	pli_once_done(&pli_tuning_state);
	errno = saved_errno;
}

void
pli_tuning_start(void)
{
	if (pli_once_claim(&pli_tuning_state))
		refine();
}

/* For pl_tuning_get/set: the refinement done, by us if nobody runs it. */
static void
refined(void)
{
	if (pli_once_claim(&pli_tuning_state))
		refine();
	pli_once_wait(&pli_tuning_state);
}

void
pli_tuning_forked(void)
{
	/* A refinement that the fork interrupted (its thread is not in the
	 * child) is run again by the child's first slow path. */
	__atomic_store_n(&publish_lock, 0, __ATOMIC_RELAXED);
	pli_once_forked(&pli_tuning_state);
}

void
pl_tuning_get(struct pl_tuning *out)
{
	refined();
	const struct pli_tuning *t = pli_tuning();
	out->spin_limit = __atomic_load_n(&t->pub.spin_limit, __ATOMIC_RELAXED);
	out->yield_limit =
	    __atomic_load_n(&t->pub.yield_limit, __ATOMIC_RELAXED);
	out->fair_interval_us =
	    __atomic_load_n(&t->pub.fair_interval_us, __ATOMIC_RELAXED);
}

static unsigned
cap(unsigned v, unsigned max)
{
	return v < max ? v : max;
}

void
pl_tuning_set(const struct pl_tuning *in)
{
	refined(); /* a later refinement must not overwrite this */
	pli_word_lock(&publish_lock);
	user_set = true;
	struct pli_tuning *v = &pli_tuning_v;
	store(&v->pub.spin_limit, cap(in->spin_limit, MAX_SPIN));
	pli_word_lock_spin(in->spin_limit != 0);
	store(&v->pub.yield_limit, cap(in->yield_limit, MAX_YIELD));
	store(&v->pub.fair_interval_us, cap(in->fair_interval_us, MAX_FAIR_US));
	pli_word_unlock(&publish_lock);
}
