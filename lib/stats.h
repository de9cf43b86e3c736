/* SPDX-License-Identifier: MIT */
/*
 * The statistics' counters (stats.c): one list of them, striped by CPU,
 * added to with relaxed atomics by the slow paths only.
 */
#ifndef PARKINGLOT_STATS_INTERNAL_H
#define PARKINGLOT_STATS_INTERNAL_H

#include <stddef.h>
#include <stdint.h>

#include "counters.h"
#include "platform.h"

/* stats.c: striped counters (see there), one per line of counters.h. */
#define PLI_COUNTER_ENUM(name, field, gauge, label) PLI_##name,
enum pli_stat { PLI_COUNTERS(PLI_COUNTER_ENUM) PLI_NSTATS };
#undef PLI_COUNTER_ENUM
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

/* The lot reports its table's size at start and at each growth, so that
 * pl_stats_get never calls into the lot. */
void pli_stats_table(size_t buckets);

#endif /* PARKINGLOT_STATS_INTERNAL_H */
