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

/* stats.c: striped counters (see there), one per counter of the list. */
#define PLI_COUNTER_ENUM(name, field, type, kind, label)                       \
	PLI_IF_COUNTER(kind, PLI_##name, )
enum pli_stat { PL_STATS_LIST(PLI_COUNTER_ENUM) PLI_NSTATS };
#undef PLI_COUNTER_ENUM
#define PLI_STRIPES 16
struct pli_stripe {
	uint64_t v[PLI_NSTATS];
} __attribute__((aligned(2 * PLI_CACHELINE)));

/* The counters' memory: one page of its own, shared (see stats.c). */
struct pli_counters {
	struct pli_stripe stripes[PLI_STRIPES];
	uint64_t max_queue_len;
	uint64_t resets;   /* pl_stats_reset calls so far */
	uint64_t reset_ns; /* CLOCK_MONOTONIC of the last, 0: none */
};

/* NULL until the first count of the process (stats.c). */
extern struct pli_counters *pli_counters_v;
struct pli_counters *pli_counters_create(void);
/* For the tests: pages mapped for the counters so far, and a call made
 * after a page is mapped, before it is published. */
unsigned pli_counters_pages_mapped(void);
extern void (*pli_counters_map_hook)(void);
unsigned pli_stat_stripe(void);
void pli_stat_max_queue(size_t len);

/* The counters, created on first use (an mmap: the lot makes sure it has
 * happened before it takes a bucket lock, see pli_stats_ready). */
static inline struct pli_counters *
pli_counters(void)
{
	struct pli_counters *c =
	    __atomic_load_n(&pli_counters_v, __ATOMIC_ACQUIRE);
	return __builtin_expect(c != NULL, 1) ? c : pli_counters_create();
}

static inline void
pli_stat_add(enum pli_stat s, uint64_t n)
{
	__atomic_fetch_add(&pli_counters()->stripes[pli_stat_stripe()].v[s], n,
	    __ATOMIC_RELAXED);
}

/* Before a bucket lock is taken for the first time by a thread that will
 * count under it. */
static inline void
pli_stats_ready(void)
{
	(void)pli_counters();
}

/* The lot reports its table's size at start and at each growth, so that
 * pl_stats_get never calls into the lot. */
void pli_stats_table(size_t buckets);

/* Fork, for the lot's handlers: no move or reset in flight across it; in
 * the child, fresh counters at zero. */
void pli_stats_fork_prepare(void);
void pli_stats_fork_parent(void);
void pli_stats_fork_child(void);

/*
 * Moving the counters, for the export (export.c), exactly while other
 * threads keep counting.  pli_stats_attach puts the page of fd at offset
 * off (PLX_COUNTERS_OFF of the object, whose mapping view shows) under
 * the counters; pli_stats_detach gives them fresh shared anonymous
 * backing again.
 * Both return 0 or an errno value (ENOTSUP: the page cannot be moved on
 * this system).  The counters live at the same address throughout.
 */
int pli_stats_attach(int fd, long off, void *view);
int pli_stats_detach(void);

#endif /* PARKINGLOT_STATS_INTERNAL_H */
