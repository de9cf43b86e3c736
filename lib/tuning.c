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

/* Defaults for a machine where other PUs can release a lock meanwhile.
 * See doc/BENCHMARKS.md for the measurements behind them. */
#define DEFAULT_SPIN 100u
#define DEFAULT_YIELD 0u
#define DEFAULT_FAIR_US 1000u

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
	bool bad = *s < '0' || *s > '9' || *end != '\0' || errno != 0 ||
	    v > max;
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

static void
tuning_init(void)
{
	struct pli_topology topo;
	pli_topology_get(&topo);

	tuning.pub.fair_interval_us = DEFAULT_FAIR_US;
	tuning.pause_per_spin = 1;
	if (topo.pus <= 1) {
		/* The holder cannot run while we spin: park at once. */
		tuning.pub.spin_limit = 0;
		tuning.pub.yield_limit = 0;
	} else {
		tuning.pub.spin_limit = DEFAULT_SPIN;
		tuning.pub.yield_limit = DEFAULT_YIELD;
		/* An SMT sibling shares our pipeline: pause longer so that
		 * spinning steals less of it from the holder. */
		if (topo.pus_per_core > 1)
			tuning.pause_per_spin = 4;
	}
	env_override("PARKINGLOT_SPIN", MAX_SPIN, &tuning.pub.spin_limit);
	env_override("PARKINGLOT_YIELD", MAX_YIELD, &tuning.pub.yield_limit);
	env_override("PARKINGLOT_FAIR_US", MAX_FAIR_US,
	    &tuning.pub.fair_interval_us);
	if (pli_verbose)
		fprintf(stderr,
		    "libparkinglot: %u PUs, %u cores, %u per core (%s): "
		    "spin %u, yield %u, fair %u us\n",
		    topo.pus, topo.cores, topo.pus_per_core, topo.source,
		    tuning.pub.spin_limit, tuning.pub.yield_limit,
		    tuning.pub.fair_interval_us);
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
	out->yield_limit = __atomic_load_n(&t->pub.yield_limit,
	    __ATOMIC_RELAXED);
	out->fair_interval_us = __atomic_load_n(&t->pub.fair_interval_us,
	    __ATOMIC_RELAXED);
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
