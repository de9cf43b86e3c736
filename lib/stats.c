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
 *
 * The stripes and max_queue_len live at the start of a page of their own
 * (a 64 KiB-aligned, 64 KiB-sized object, so that no other variable shares
 * its first page whatever the page size): export.c maps shared memory over
 * that page, so that while the statistics are exported (export.c) the
 * counters the slow paths add to are the very words parkstat reads.
 */
#define _GNU_SOURCE
#include <sched.h>
#include <stddef.h>

#include <parkinglot/stats.h>

#include "export.h"
#include "lot.h"
#include "platform.h"
#include "stats.h"

union counters_page {
	struct {
		struct pli_stripe stripes[PLI_STRIPES];
		size_t max_queue_len;
	} s;
	unsigned char bytes[PLX_COUNTERS_MAX];
};

static union counters_page counters __attribute__((aligned(PLX_COUNTERS_MAX)));
/* The name the inline pli_stat_add uses (internal.h), for the same bytes. */
extern struct pli_stripe pli_stripes[PLI_STRIPES]
    __attribute__((alias("counters")));

/* The layout parkstat reads (export.h) is this one. */
_Static_assert(PLI_STRIPES == PLX_NSTRIPES, "stripes");
_Static_assert(sizeof(struct pli_stripe) == PLX_STRIPE_SIZE, "stripe size");
_Static_assert((int)PLI_NSTATS == (int)PLX_NCOUNTERS, "counters");
_Static_assert(offsetof(union counters_page, s.max_queue_len) == PLX_MAXQ_OFF,
    "max_queue_len");
_Static_assert(sizeof(size_t) == 8, "max_queue_len is 8 bytes");
#define SAME(a, b) ((int)(a) == (int)(b))
_Static_assert(SAME(PLI_PARKS, PLX_PARKS) && SAME(PLI_UNPARKS, PLX_UNPARKS) &&
        SAME(PLI_TIMEOUTS, PLX_TIMEOUTS) &&
        SAME(PLI_INVALID_PARKS, PLX_INVALID_PARKS) &&
        SAME(PLI_REQUEUES, PLX_REQUEUES) &&
        SAME(PLI_FAIR_HANDOFFS, PLX_FAIR_HANDOFFS) &&
        SAME(PLI_SPIN_ACQUIRES, PLX_SPIN_ACQUIRES) &&
        SAME(PLI_SPIN_FAILURES, PLX_SPIN_FAILURES) &&
        SAME(PLI_WAIT_NS, PLX_WAIT_NS) && SAME(PLI_PARKED_NOW, PLX_PARKED_NOW),
    "counter order");
#undef SAME

void *
pli_counters_page(void)
{
	return &counters;
}

void
pli_stat_max_queue(size_t len)
{
	size_t *p = &counters.s.max_queue_len;
	size_t m = __atomic_load_n(p, __ATOMIC_RELAXED);
	while (len > m &&
	    !__atomic_compare_exchange_n(
	        p, &m, len, true, __ATOMIC_RELAXED, __ATOMIC_RELAXED))
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
			v[s] += __atomic_load_n(
			    &pli_stripes[i].v[s], __ATOMIC_RELAXED);
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
	out->max_queue_len =
	    __atomic_load_n(&counters.s.max_queue_len, __ATOMIC_RELAXED);
}

void
pl_stats_reset(void)
{
	/* export.c zeroes what it exports, and calls back pli_stats_zero
	 * with its lock held, so that a reset never runs in the middle of
	 * moving the counters to or from shared memory. */
	pli_export_reset();
}

void
pli_stats_zero(void)
{
	for (unsigned i = 0; i < PLI_STRIPES; i++)
		for (unsigned s = 0; s < PLI_NSTATS; s++)
			if (s != PLI_PARKED_NOW)
				__atomic_store_n(
				    &pli_stripes[i].v[s], 0, __ATOMIC_RELAXED);
	__atomic_store_n(&counters.s.max_queue_len, 0, __ATOMIC_RELAXED);
}
