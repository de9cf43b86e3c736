/* SPDX-License-Identifier: MIT */
/*
 * What the parking lot (parkinglot.c) shows of itself, for the statistics,
 * the export and the tests.
 */
#ifndef PARKINGLOT_LOT_H
#define PARKINGLOT_LOT_H

#include <stddef.h>

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
