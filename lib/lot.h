/* SPDX-License-Identifier: MIT */
/*
 * What the parking lot (parkinglot.c) shows of itself, for the statistics,
 * the export and the tests.
 */
#ifndef PARKINGLOT_LOT_H
#define PARKINGLOT_LOT_H

#include <stddef.h>

#include <parkinglot/core.h>

#include "kind.h"

/* What parks of base kind base are for the calling thread (kind.h). */
unsigned pli_kind_of(unsigned base);

/* pl_park_until for a primitive of the library: its parks are of kind
 * base (kind.h), or what a layer over it made that base stand for.  base
 * may have PLI_PARK_AGAIN or'ed in. */
pl_park_result_t pli_park(unsigned base, const void *addr,
    bool (*validate)(void *ctx), void (*before_sleep)(void *ctx),
    void (*timed_out)(void *ctx, const void *addr, bool was_last), void *ctx,
    uintptr_t park_token, clockid_t clock, const struct timespec *deadline,
    void (*cancelled)(void *ctx, pl_park_result_t r));

/* pl_unpark_one for an unlock made on CPU cpu (sched_getcpu; -1:
 * unknown, which is pl_unpark_one): it may wake, instead of the oldest
 * waiter, one of the next that parked on another CPU, passing each
 * waiter over at most once in a park (parkinglot.c, "Passing over").
 * When the fairness timer is due it wakes the oldest and says be_fair. */
pl_unpark_result_t pli_unpark_one_away(const void *addr, int cpu,
    uintptr_t (*callback)(pl_unpark_result_t r, void *ctx), void *ctx);

/* The calling thread was woken from addr's queue to compete for a lock,
 * lost it, and parks there again: it keeps its turn (parkinglot.c,
 * "Turns"), ahead of the waiters that joined the queue after it. */
#define PLI_PARK_AGAIN 0x100u

/* The park is no cancellation point, but cancelled is called if the
 * thread ends while it sleeps there (cancelled asynchronously, or
 * pthread_exit in a signal handler), as for a cancelled park: with the
 * thread out of the queue (timed_out called as for a timeout), or woken,
 * and the caller's frame, ctx with it, still alive.  So a primitive
 * whose unpark gives the woken thread something to do for the others
 * (the two-bit locks' re-arm) can have it done when the thread ends
 * before it could. */
#define PLI_PARK_UNWOUND 0x200u

/* parkinglot.c introspection, for tests and statistics. */
size_t pli_lot_live_threads(void);  /* threads holding a per-thread record */
size_t pli_lot_buckets(void);       /* buckets in the current table */
size_t pli_lot_retired_bytes(void); /* memory held by retired tables */
size_t pli_lot_spare_records(void); /* records not in use, kept */
size_t pli_lot_records(void);       /* records allocated */
#define PLI_RECORD_BLOCK 32         /* records allocated at a time */
/* Index of addr's bucket in the current table (tests use it to find
 * colliding addresses). */
size_t pli_lot_bucket_of(const void *addr);

#endif /* PARKINGLOT_LOT_H */
