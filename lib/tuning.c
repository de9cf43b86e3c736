/* SPDX-License-Identifier: MIT */
/*
 * Tuning of the contended paths: defaults from the topology, overrides
 * from the environment, pl_tuning_get/set.
 *
 * The tuning is read on first use (the first contended lock or park), not
 * at load time, so that programs that never contend never pay for reading
 * the topology.  Its fields are read with relaxed atomic loads by the slow
 * paths and written with relaxed atomic stores by pl_tuning_set: each
 * field is a hint on its own, and a thread that reads a mix of old and new
 * values only spins a little more or less once.
 *
 * errno: no call of the library changes it, and the first use runs much
 * code that may (hwloc's reading of sysfs leaves ENOENT, a warning's
 * fprintf, sysconf): tuning_init restores it, whatever ran.
 */
#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>

#include <parkinglot/tuning.h>

#include "internal.h"

#define MAX_SPIN 1000000u
#define MAX_YIELD 1000u
#define MAX_FAIR_US 10000000u

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
 * DEFAULT_SPIN rounds of pausing come first, then DEFAULT_YIELD rounds
 * that yield the CPU before their wait: a waiter that has not got the lock
 * within a few microseconds lets any other runnable thread of its CPU run
 * (the holder, preempted, or unrelated work; lockbench W4).  The whole
 * spin lasts about 60 us here before the thread parks.
 */
#define DEFAULT_SPIN 2u
#define DEFAULT_YIELD 20u
#define DEFAULT_FAIR_US 1000u
#define DEFAULT_POLL_NS 2500u
#define MAX_POLL_NS 1000000u
#define MAX_PAUSES 100000u

static struct pli_tuning tuning;
static pthread_once_t tuning_once = PTHREAD_ONCE_INIT;

/* PARKINGLOT_<name>: a decimal number in 0..max, else a one-line warning
 * and the default stays. */
static void
env_override(const char *name, unsigned max, unsigned *val)
{
	const char *s = getenv(name);
	if (s == NULL)
		return;
	char *end;
	int saved = errno;
	errno = 0;
	unsigned long v = strtoul(s, &end, 10);
	bool bad =
	    *s < '0' || *s > '9' || *end != '\0' || errno != 0 || v > max;
	errno = saved;
	if (bad) {
		fprintf(stderr,
		    "libparkinglot: ignoring %s=\"%s\": not a whole number "
		    "from 0 to %u (keeping %u)\n",
		    name, s, max, *val);
		return;
	}
	*val = (unsigned)v;
}

/* What one pause instruction costs here, in ns (at least 1): the best of
 * a few timed batches, so that a preemption inflates none of them.  About
 * 0.1 ms here, once per process. */
static unsigned
pause_cost_ns(void)
{
	uint64_t best = UINT64_MAX;
	for (int round = 0; round < 5; round++) {
		uint64_t t0 = pli_now_ns();
		for (int i = 0; i < 1000; i++)
			pli_cpu_relax();
		uint64_t dt = pli_now_ns() - t0;
		if (dt < best)
			best = dt;
	}
	unsigned ns = (unsigned)(best / 1000);
	return ns > 0 ? ns : 1;
}

static void
tuning_init(void)
{
	int saved_errno = errno;
	struct pli_topology topo;
	pli_topology_get(&topo);

	tuning.pub.fair_interval_us = DEFAULT_FAIR_US;
	tuning.poll_ns = DEFAULT_POLL_NS;
	if (topo.pus <= 1) {
		/* The holder cannot run while we spin: park at once. */
		tuning.pub.spin_limit = 0;
		tuning.pub.yield_limit = 0;
	} else {
		tuning.pub.spin_limit = DEFAULT_SPIN;
		tuning.pub.yield_limit = DEFAULT_YIELD;
		/* An SMT sibling shares our pipeline: wait longer so that
		 * spinning steals less of it from the holder (the design
		 * notes' rule; this 2-core machine has no SMT to measure). */
		if (topo.pus_per_core > 1)
			tuning.poll_ns *= 2;
	}
	env_override("PARKINGLOT_SPIN", MAX_SPIN, &tuning.pub.spin_limit);
	env_override("PARKINGLOT_YIELD", MAX_YIELD, &tuning.pub.yield_limit);
	env_override(
	    "PARKINGLOT_FAIR_US", MAX_FAIR_US, &tuning.pub.fair_interval_us);
	env_override("PARKINGLOT_POLL_NS", MAX_POLL_NS, &tuning.poll_ns);
	/* Measured even where nothing spins: pl_tuning_set may turn
	 * spinning on later. */
	tuning.pause_ns = pause_cost_ns();
	unsigned n = tuning.poll_ns / tuning.pause_ns;
	tuning.pause_per_spin = n < 1 ? 1 : n > MAX_PAUSES ? MAX_PAUSES : n;
	if (pli_verbose)
		fprintf(stderr,
		    "libparkinglot: %u PUs, %u cores, %u per core (%s): "
		    "spin %u, yield %u, each round %u pauses of %u ns, "
		    "fair %u us\n",
		    topo.pus, topo.cores, topo.pus_per_core, topo.source,
		    tuning.pub.spin_limit, tuning.pub.yield_limit,
		    tuning.pause_per_spin, tuning.pause_ns,
		    tuning.pub.fair_interval_us);
	errno = saved_errno;
}

const struct pli_tuning *
pli_tuning(void)
{
	pthread_once(&tuning_once, tuning_init);
	return &tuning;
}

void
pl_tuning_get(struct pl_tuning *out)
{
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
	(void)pli_tuning(); /* a later first use must not overwrite this */
	__atomic_store_n(&tuning.pub.spin_limit, cap(in->spin_limit, MAX_SPIN),
	    __ATOMIC_RELAXED);
	__atomic_store_n(&tuning.pub.yield_limit,
	    cap(in->yield_limit, MAX_YIELD), __ATOMIC_RELAXED);
	__atomic_store_n(&tuning.pub.fair_interval_us,
	    cap(in->fair_interval_us, MAX_FAIR_US), __ATOMIC_RELAXED);
}
