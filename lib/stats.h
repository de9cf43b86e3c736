/* SPDX-License-Identifier: MIT */
/*
 * The statistics' counters (stats.c): one list of them, striped by CPU,
 * added to with relaxed atomics by the slow paths only.
 */
#ifndef PARKINGLOT_STATS_INTERNAL_H
#define PARKINGLOT_STATS_INTERNAL_H

#include <stddef.h>
#include <stdint.h>

#include "platform.h"

/* stats.c: striped counters (see there). */
enum pli_stat {
	PLI_PARKS,
	PLI_UNPARKS,
	PLI_TIMEOUTS,
	PLI_INVALID_PARKS,
	PLI_REQUEUES,
	PLI_FAIR_HANDOFFS,
	PLI_SPIN_ACQUIRES,
	PLI_SPIN_FAILURES,
	PLI_WAIT_NS,
	PLI_PARKED_NOW, /* a gauge: enqueues minus dequeues */
	PLI_NSTATS
};
#define PLI_STRIPES 16
struct pli_stripe {
	uint64_t v[PLI_NSTATS];
} __attribute__((aligned(2 * PLI_CACHELINE)));
extern struct pli_stripe pli_stripes[PLI_STRIPES];
unsigned pli_stat_stripe(void);
void pli_stat_max_queue(size_t len);

static inline void
pli_stat_add(enum pli_stat s, uint64_t n)
{
	__atomic_fetch_add(
	    &pli_stripes[pli_stat_stripe()].v[s], n, __ATOMIC_RELAXED);
}

/* The page that holds pli_stripes and max_queue_len, and a reset of the
 * counters (called by pli_export_reset, with its lock). */
void *pli_counters_page(void);
void pli_stats_zero(void);
/* export.c: pl_stats_reset clears the exported histograms and tables. */
void pli_export_reset(void);

#endif /* PARKINGLOT_STATS_INTERNAL_H */
