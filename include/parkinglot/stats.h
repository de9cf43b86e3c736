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

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <parkinglot/defs.h>

PL_BEGIN_DECLS

struct pl_stats {                  /* process-wide, since start or last reset */
	uint64_t parks;            /* threads queued by pl_park */
	uint64_t unparks;          /* threads woken by pl_unpark_* */
	uint64_t timeouts;         /* pl_park calls that timed out */
	uint64_t invalid_parks;    /* pl_park calls whose validate said no */
	uint64_t requeues;         /* threads moved by pl_unpark_requeue */
	uint64_t fair_handoffs;    /* threads woken with the lock handed over */
	uint64_t spin_acquires;    /* contended acquisitions won by spinning */
	uint64_t spin_failures;    /* spins that ended in parking */
	uint64_t wait_ns_total;    /* time threads spent queued */
	size_t buckets;            /* buckets in the current table */
	size_t threads_parked_now; /* threads queued at this moment */
	size_t max_queue_len;      /* longest queue of one address seen */
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

/*
 * pl_stats_export - publish the statistics for tools/parkstat, or stop.
 *
 * With on, creates the POSIX shared-memory object "/parkinglot.<pid>"
 * (/dev/shm/parkinglot.<pid>), mode 0600, and publishes into it, live,
 * the counters above (the very words pl_stats_get sums, so the two always
 * agree), the table, the tuning in force, histograms of queue lengths and
 * wait times, and the most contended addresses with their symbols.  The
 * object is removed at normal exit and by pl_stats_export(false).  Setting
 * PARKINGLOT_STATS=1 in the environment does the same at load time.
 * Switching is exact: no count is lost or counted twice, even while other
 * threads park.  While the export is off, the slow paths pay one
 * predictable branch for it.
 *
 * Does not block on other threads (it takes a short internal lock).
 * Returns 0 (also when the export is already in the state asked for), or
 * an errno value: ENOTSUP if the counters page cannot be shared on this
 * system, EEXIST if another copy of the library in this process exports,
 * or the error of shm_open, ftruncate or mmap (EACCES, ENOSPC, ENOMEM...).
 *
 * A child created by fork() starts with its statistics at zero (none of
 * its threads is parked); if the parent exported, the child exports under
 * its own pid.  pl_stats_reset also clears the exported histograms and
 * per-address figures.
 */
PL_EXPORT int pl_stats_export(bool on);

PL_END_DECLS

#endif /* PARKINGLOT_STATS_H */
