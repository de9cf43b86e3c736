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
#include <stdbool.h>
#include <stddef.h>

#include <parkinglot/stats.h>

#include "export.h"
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

/* The layout parkstat reads (export.h) is this one: the same list makes
 * both enums, so only the sizes need checking. */
_Static_assert(PLI_STRIPES == PLX_NSTRIPES, "stripes");
_Static_assert(sizeof(struct pli_stripe) == PLX_STRIPE_SIZE, "stripe size");
_Static_assert((int)PLI_NSTATS == (int)PLX_NCOUNTERS, "counters");
_Static_assert(offsetof(union counters_page, s.max_queue_len) == PLX_MAXQ_OFF,
    "max_queue_len");
_Static_assert(sizeof(size_t) == 8, "max_queue_len is 8 bytes");

/* The size of the lot's table, as the lot last reported it. */
static size_t table_buckets;

void
pli_stats_table(size_t buckets)
{
	__atomic_store_n(&table_buckets, buckets, __ATOMIC_RELAXED);
}

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
			/* A gauge sums to its value: +1 and -1 (wrapping) per
			 * stripe. */
#define FILL(name, field, gauge, label) out->field = v[PLI_##name];
	PLI_COUNTERS(FILL)
#undef FILL
	out->buckets = __atomic_load_n(&table_buckets, __ATOMIC_RELAXED);
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
	/* Gauges describe the present: they keep their balance. */
#define GAUGE(name, field, gauge, label) [PLI_##name] = gauge,
	static const bool is_gauge[PLI_NSTATS] = { PLI_COUNTERS(GAUGE) };
#undef GAUGE
	for (unsigned i = 0; i < PLI_STRIPES; i++)
		for (unsigned s = 0; s < PLI_NSTATS; s++)
			if (!is_gauge[s])
				__atomic_store_n(
				    &pli_stripes[i].v[s], 0, __ATOMIC_RELAXED);
	__atomic_store_n(&counters.s.max_queue_len, 0, __ATOMIC_RELAXED);
}
