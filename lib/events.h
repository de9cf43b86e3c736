/* SPDX-License-Identifier: MIT */
/*
 * The events the parking lot reports to its observers: every hook, in one
 * place.  Today the one observer is the live export (export.c); while it
 * is off, each hook costs one predictable branch in a slow path.
 */
#ifndef PARKINGLOT_EVENTS_H
#define PARKINGLOT_EVENTS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* Set while the export is on (export.c); the hooks below are its. */
extern bool pli_export_on;
void pli_export_park(const void *addr, size_t len);
void pli_export_wait(const void *addr, uint64_t waited_ns);
void pli_export_thread(bool created);
void pli_export_requeue(const void *from, const void *to, size_t n, size_t len);

#define PLI_EXPORTING()                                                        \
	__builtin_expect(__atomic_load_n(&pli_export_on, __ATOMIC_RELAXED), 0)

/* A thread queued on addr, whose queue is then len long (no bucket lock
 * held). */

static inline void
pli_event_park(const void *addr, size_t len)
{
	if (PLI_EXPORTING())
		pli_export_park(addr, len);
}

/* A thread left addr's queue, woken or timed out, after waited_ns (with
 * the bucket of addr locked). */
static inline void
pli_event_wait(const void *addr, uint64_t waited_ns)
{
	if (PLI_EXPORTING())
		pli_export_wait(addr, waited_ns);
}

/* A thread got its per-thread record (created), or gave it back at its
 * exit. */
static inline void
pli_event_thread(bool created)
{
	if (PLI_EXPORTING())
		pli_export_thread(created);
}

/* n threads moved from one queue to another, to's queue then len long
 * (no bucket lock held). */
static inline void
pli_event_requeue(const void *from, const void *to, size_t n, size_t len)
{
	if (PLI_EXPORTING())
		pli_export_requeue(from, to, n, len);
}

#endif /* PARKINGLOT_EVENTS_H */
