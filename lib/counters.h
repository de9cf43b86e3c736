/* SPDX-License-Identifier: MIT */
/*
 * The library's view of the one list of statistics, PL_STATS_LIST
 * (include/parkinglot/stats.h), which makes struct pl_stats too.  Its
 * COUNTER and GAUGE entries are the counters: the striped words that the
 * slow paths add to (stats.h) and that the export publishes (export.h),
 * indexed by enums made from the list; its TABLE and MAX entries are kept
 * apart.  A new statistic is one line of PL_STATS_LIST.  No dependencies
 * but the public header: parkstat includes this too.
 */
#ifndef PARKINGLOT_COUNTERS_H
#define PARKINGLOT_COUNTERS_H

#include <parkinglot/stats.h>

/* PLI_IF_COUNTER(kind, ...): the rest, for a counter or gauge, else
 * nothing.  PLI_GAUGE(kind): 1 for a gauge, else 0. */
#define PLI__IF_COUNTER_COUNTER(...) __VA_ARGS__
#define PLI__IF_COUNTER_GAUGE(...) __VA_ARGS__
#define PLI__IF_COUNTER_TABLE(...)
#define PLI__IF_COUNTER_MAX(...)
#define PLI_IF_COUNTER(kind, ...) PLI__IF_COUNTER_##kind(__VA_ARGS__)
#define PLI__GAUGE_COUNTER 0
#define PLI__GAUGE_GAUGE 1
#define PLI__GAUGE_TABLE 0
#define PLI__GAUGE_MAX 0
#define PLI_GAUGE(kind) PLI__GAUGE_##kind

#endif /* PARKINGLOT_COUNTERS_H */
