/* SPDX-License-Identifier: MIT */
/*
 * The one list of the statistics' counters.  Everything else is made
 * from it: the library's enum of counters and the fill of struct pl_stats
 * (stats.h, stats.c), the counters of the exported layout (export.h), and
 * what parkstat reads and prints (tools/parkstat.c).  A new counter is
 * one line here (and, being public, a field at the end of struct
 * pl_stats in include/parkinglot/stats.h, whose order this list keeps).
 *
 * X(NAME, field, gauge, label): NAME gives PLI_NAME and PLX_NAME; field
 * is the member of struct pl_stats and parkstat's JSON key; a gauge goes
 * up and down (+1 and -1, wrapping) and is never reset; label is
 * parkstat's text.  No dependencies: parkstat includes it too.
 */
#ifndef PARKINGLOT_COUNTERS_H
#define PARKINGLOT_COUNTERS_H

#define PLI_COUNTERS(X)                                                        \
	X(PARKS, parks, 0, "parks")                                            \
	X(UNPARKS, unparks, 0, "unparks")                                      \
	X(TIMEOUTS, timeouts, 0, "timeouts")                                   \
	X(INVALID_PARKS, invalid_parks, 0, "invalid parks")                    \
	X(REQUEUES, requeues, 0, "requeues")                                   \
	X(FAIR_HANDOFFS, fair_handoffs, 0, "fair hand-offs")                   \
	X(SPIN_ACQUIRES, spin_acquires, 0, "spin acquires")                    \
	X(SPIN_FAILURES, spin_failures, 0, "spin failures")                    \
	X(WAIT_NS, wait_ns_total, 0, "time parked")                            \
	X(PARKED_NOW, threads_parked_now, 1, "parked now")

#endif /* PARKINGLOT_COUNTERS_H */
