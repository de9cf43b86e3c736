/* SPDX-License-Identifier: MIT */
/*
 * Tuning of the contended paths: how long a thread spins before it parks,
 * and how often an unlock hands a lock to the oldest waiter.
 *
 * Defaults come from the machine's topology the first time a lock is
 * contended (the process's CPU affinity mask, its main thread's, and the
 * SMT siblings Linux lists in sysfs): a process whose mask allows a
 * single processing unit never spins, because the thread it would wait
 * for cannot run meanwhile; a thread pinned to one processing unit of a
 * larger mask spins.  A spin iteration waits about 2.5 us
 * (PARKINGLOT_POLL_NS) before it looks at the lock again (a mutex's or
 * bit lock's waiter looks once early, after a tenth of that); the yield
 * iterations call sched_yield first, and a mutex's or bit lock's waiters
 * skip them once 4 waiters on that lock started them without one getting
 * the lock in them (until one waiter in 16, which tries them again,
 * does).  The environment variables PARKINGLOT_SPIN, PARKINGLOT_YIELD,
 * PARKINGLOT_FAIR_US, PARKINGLOT_POLL_NS and PARKINGLOT_ADAPT (the 4; 0
 * turns the adaptation off) override the defaults; a malformed value is
 * reported on stderr and the default kept.
 */
#ifndef PARKINGLOT_TUNING_H
#define PARKINGLOT_TUNING_H

#include <parkinglot/defs.h>

PL_BEGIN_DECLS

struct pl_tuning {
	unsigned
	    spin_limit; /* spin iterations before parking; 0 = never spin */
	unsigned
	    yield_limit; /* sched_yield calls after spinning, before parking */
	unsigned
	    fair_interval_us; /* eventual-fairness interval (upper bound) */
};

/* pl_tuning_get - the tuning in force now.  Never blocks. */
PL_EXPORT void pl_tuning_get(struct pl_tuning *out);

/*
 * pl_tuning_set - replace the tuning for the whole process.  Takes effect
 * for lock and unpark calls that start afterwards; threads already spinning
 * finish with the old values.  fair_interval_us of 0 means "hand off at
 * every unlock that finds a waiter" (strict FIFO, slow); values are capped
 * at 1,000,000 spin iterations, 1,000 yields and 10 s.
 */
PL_EXPORT void pl_tuning_set(const struct pl_tuning *in);

PL_END_DECLS

#endif /* PARKINGLOT_TUNING_H */
