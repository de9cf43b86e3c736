/* SPDX-License-Identifier: MIT */
/*
 * The events the parking lot reports to its observer: every hook, in one
 * place.  While nobody observes, each costs one predictable branch in a
 * slow path.
 */
#ifndef PARKINGLOT_EVENTS_H
#define PARKINGLOT_EVENTS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* An observer of the lot: today the live export (export.c), which sets
 * pli_observer while it exports and clears it when it stops.  The lot
 * (parkinglot.c, which defines the pointer) calls through it and knows
 * nothing of who observes, so no call runs from the lot back up to its
 * observer's file.  A hook may run just after the pointer is cleared: an
 * observer keeps its hooks harmless for the life of the process. */
struct pli_observer {
	/* A thread queued on addr, whose queue is then len long (no bucket
	 * lock held). */
	void (*park)(const void *addr, size_t len);
	/* A thread left addr's queue, woken or timed out, after waited_ns
	 * (with the bucket of addr locked). */
	void (*wait)(const void *addr, uint64_t waited_ns);
	/* A thread got its per-thread record (created), or gave it back at
	 * its exit. */
	void (*thread)(bool created);
	/* n threads moved from one queue to another, to's queue then len
	 * long (no bucket lock held). */
	void (*requeue)(const void *from, const void *to, size_t n, size_t len);
};

extern const struct pli_observer *pli_observer;

/* The observer, or NULL: one load and a predicted branch. */
static inline const struct pli_observer *
pli_observing(void)
{
	const struct pli_observer *o =
	    __atomic_load_n(&pli_observer, __ATOMIC_ACQUIRE);
	return __builtin_expect(o != NULL, 0) ? o : NULL;
}

static inline void
pli_event_park(const void *addr, size_t len)
{
	const struct pli_observer *o = pli_observing();
	if (o)
		o->park(addr, len);
}

static inline void
pli_event_wait(const void *addr, uint64_t waited_ns)
{
	const struct pli_observer *o = pli_observing();
	if (o)
		o->wait(addr, waited_ns);
}

static inline void
pli_event_thread(bool created)
{
	const struct pli_observer *o = pli_observing();
	if (o)
		o->thread(created);
}

static inline void
pli_event_requeue(const void *from, const void *to, size_t n, size_t len)
{
	const struct pli_observer *o = pli_observing();
	if (o)
		o->requeue(from, to, n, len);
}

#endif /* PARKINGLOT_EVENTS_H */
