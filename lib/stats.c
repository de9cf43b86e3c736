/* SPDX-License-Identifier: MIT */
/*
 * Statistics: striped counters summed on read.
 *
 * A count is added, with a relaxed atomic add, to the stripe of the CPU
 * the thread runs on (sched_getcpu, a read of the rseq area on current
 * glibc), so threads on different CPUs never write the same cache line
 * and threads on one CPU rarely race.  pl_stats_get sums the stripes;
 * pl_stats_reset zeroes them, except the gauge of parked threads, which
 * goes up and down and must keep its balance.  Only slow paths count.
 */
#define _GNU_SOURCE
#include <sched.h>

#include <parkinglot/stats.h>

#include "internal.h"

struct pli_stripe pli_stripes[PLI_STRIPES];

/* Live export: not written yet. */
bool pli_export_on;

void
pli_export_park(const void *addr, size_t len)
{
	(void)addr;
	(void)len;
}

void
pli_export_wait(const void *addr, uint64_t waited_ns)
{
	(void)addr;
	(void)waited_ns;
}
static size_t max_queue_len;

void
pli_stat_max_queue(size_t len)
{
	size_t m = __atomic_load_n(&max_queue_len, __ATOMIC_RELAXED);
	while (len > m && !__atomic_compare_exchange_n(&max_queue_len, &m,
	                      len, true, __ATOMIC_RELAXED, __ATOMIC_RELAXED))
		;
}

unsigned
pli_stat_stripe(void)
{
	int cpu = sched_getcpu();
	return cpu < 0 ? 0 : (unsigned)cpu % PLI_STRIPES;
}

void
pl_stats_get(struct pl_stats *out)
{
	uint64_t v[PLI_NSTATS] = { 0 };
	for (unsigned i = 0; i < PLI_STRIPES; i++)
		for (unsigned s = 0; s < PLI_NSTATS; s++)
			v[s] += __atomic_load_n(&pli_stripes[i].v[s],
			    __ATOMIC_RELAXED);
	out->parks = v[PLI_PARKS];
	out->unparks = v[PLI_UNPARKS];
	out->timeouts = v[PLI_TIMEOUTS];
	out->invalid_parks = v[PLI_INVALID_PARKS];
	out->requeues = v[PLI_REQUEUES];
	out->fair_handoffs = v[PLI_FAIR_HANDOFFS];
	out->spin_acquires = v[PLI_SPIN_ACQUIRES];
	out->spin_failures = v[PLI_SPIN_FAILURES];
	out->wait_ns_total = v[PLI_WAIT_NS];
	/* A gauge: +1 on enqueue, -1 (wrapping) on dequeue, per stripe. */
	out->threads_parked_now = (size_t)v[PLI_PARKED_NOW];
	out->buckets = pli_lot_buckets();
	out->max_queue_len = __atomic_load_n(&max_queue_len, __ATOMIC_RELAXED);
}

void
pl_stats_reset(void)
{
	for (unsigned i = 0; i < PLI_STRIPES; i++)
		for (unsigned s = 0; s < PLI_NSTATS; s++)
			if (s != PLI_PARKED_NOW)
				__atomic_store_n(&pli_stripes[i].v[s], 0,
				    __ATOMIC_RELAXED);
	__atomic_store_n(&max_queue_len, 0, __ATOMIC_RELAXED);
}
