/* SPDX-License-Identifier: MIT */
/*
 * Process-wide statistics of the parking lot, counted only in slow paths
 * (a parked or woken thread, a spin that ended one way or the other),
 * never in the inline fast paths, and without a shared hot counter: each
 * count lives in one of several cache-line-aligned stripes chosen by the
 * CPU the thread runs on, and pl_stats_get sums the stripes.
 */
#ifndef PARKINGLOT_STATS_H
#define PARKINGLOT_STATS_H

#include <stddef.h>
#include <stdint.h>

#include <parkinglot/defs.h>

PL_BEGIN_DECLS

struct pl_stats {            /* process-wide, since start or last reset */
	uint64_t parks;          /* threads queued by pl_park */
	uint64_t unparks;        /* threads woken by pl_unpark_* */
	uint64_t timeouts;       /* pl_park calls that timed out */
	uint64_t invalid_parks;  /* pl_park calls whose validate said no */
	uint64_t requeues;       /* threads moved by pl_unpark_requeue */
	uint64_t fair_handoffs;  /* threads woken with the lock handed over */
	uint64_t spin_acquires;  /* contended acquisitions won by spinning */
	uint64_t spin_failures;  /* spins that ended in parking */
	uint64_t wait_ns_total;  /* time threads spent queued */
	size_t buckets;          /* buckets in the current table */
	size_t threads_parked_now; /* threads queued at this moment */
	size_t max_queue_len;    /* longest queue of one address seen */
};

/*
 * pl_stats_get - a snapshot of the statistics.  Each counter is exact,
 * but the snapshot is not atomic across counters: events that happen
 * while it is taken may be counted in some fields and not others.
 */
PL_EXPORT void pl_stats_get(struct pl_stats *out);

/* pl_stats_reset - zero the counters and max_queue_len; buckets and
 * threads_parked_now describe the present and are left alone. */
PL_EXPORT void pl_stats_reset(void);

PL_END_DECLS

#endif /* PARKINGLOT_STATS_H */
