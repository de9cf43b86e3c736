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

/*
 * The statistics, one line each, in the order of struct pl_stats's
 * fields.  The struct's size and layout are ABI: pl_stats_get fills a
 * caller's struct, so a new field, even at the end, is an incompatible
 * change (doc/ABI.md).  X(NAME, field, type, kind, label), where kind is
 *   COUNTER  counted in slow paths; zeroed by pl_stats_reset;
 *   GAUGE    a present state, counted up and down; never reset;
 *   TABLE    describes the parking lot's table now; never reset;
 *   MAX      the largest value seen since the last reset;
 * and label is how tools/parkstat names it.  The fields, since start or
 * the last pl_stats_reset:
 *   parks               threads queued by pl_park
 *   unparks             threads woken by pl_unpark_*
 *   timeouts            pl_park calls that timed out
 *   invalid_parks       pl_park calls whose validate said no
 *   requeues            threads moved by pl_unpark_requeue
 *   fair_handoffs       threads woken with the lock handed over
 *   spin_acquires       contended acquisitions won by spinning
 *   spin_failures       spins that ended in parking
 *   wait_ns_total       time threads spent queued, in ns
 *   buckets             buckets in the current table
 *   threads_parked_now  threads queued at this moment
 *   max_queue_len       longest queue of one address seen
 * The library makes from this one list its counters, pl_stats_get and
 * pl_stats_reset, the layout it exports, and parkstat's report.
 */
#define PL_STATS_LIST(X)                                                       \
	X(PARKS, parks, uint64_t, COUNTER, "parks")                            \
	X(UNPARKS, unparks, uint64_t, COUNTER, "unparks")                      \
	X(TIMEOUTS, timeouts, uint64_t, COUNTER, "timeouts")                   \
	X(INVALID_PARKS, invalid_parks, uint64_t, COUNTER, "invalid parks")    \
	X(REQUEUES, requeues, uint64_t, COUNTER, "requeues")                   \
	X(FAIR_HANDOFFS, fair_handoffs, uint64_t, COUNTER, "fair hand-offs")   \
	X(SPIN_ACQUIRES, spin_acquires, uint64_t, COUNTER, "spin acquires")    \
	X(SPIN_FAILURES, spin_failures, uint64_t, COUNTER, "spin failures")    \
	X(WAIT_NS, wait_ns_total, uint64_t, COUNTER, "time parked")            \
	X(BUCKETS, buckets, size_t, TABLE, "buckets")                          \
	X(PARKED_NOW, threads_parked_now, size_t, GAUGE, "parked now")         \
	X(MAX_QUEUE, max_queue_len, size_t, MAX, "longest queue")

#define PL__STATS_FIELD(name, field, type, kind, label) type field;
struct pl_stats { /* process-wide, since start or last reset */
	PL_STATS_LIST(PL__STATS_FIELD)
};
#undef PL__STATS_FIELD

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
