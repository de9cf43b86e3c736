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

/* A lock of a thread's held set (the deadlock detector's, deadlock.c):
 * four words, so that an entry is all in one cache line. */
struct pli_held {
	uintptr_t addr; /* the lock */
	uintptr_t pc;   /* return address of the call that took it */
	uintptr_t cfa;  /* the stack pointer at that call */
	uint32_t read;  /* 1: a read acquisition of a rwlock */
	uint32_t gen;   /* deadlock.c: releases by other threads before it */
};

/* An observer of the lot: today the live export (export.c), which sets
 * pli_observer while it exports and clears it when it stops.  The lot
 * (parkinglot.c, which defines the pointer) calls through it and knows
 * nothing of who observes, so no call runs from the lot back up to its
 * observer's file.  A hook may run just after the pointer is cleared: an
 * observer keeps its hooks harmless for the life of the process. */
struct pli_observer {
	/* A thread took the lock at addr (the drop-in's locks only: kind.h,
	 * pl__taken). */
	void (*taken)(const void *addr);
	/* A thread found the lock at addr, of base kind base (kind.h:
	 * pli_kind_of tells what it stands for), taken, and goes on to spin
	 * or park for it (no lock of the lot held). */
	void (*contended)(const void *addr, unsigned base);
	/* A thread is about to park on addr for a lock of kind (kind.h),
	 * and holds no lock of the lot: a sampled park's chance to look at
	 * the thread's stack.  Returns a sample (0: none) that the lot keeps
	 * with the waiter and passes to wait when the park ends. */
	uint32_t (*sample)(const void *addr, unsigned kind);
	/* A thread queued on addr for a lock of kind, whose queue is then
	 * len long (no bucket lock held). */
	void (*park)(const void *addr, unsigned kind, size_t len);
	/* A thread left addr's queue, woken or timed out, after waited_ns;
	 * sample is what sample gave at the start of that park (with the
	 * bucket of addr locked). */
	void (*wait)(const void *addr, uint64_t waited_ns, uint32_t sample);
	/* The calling thread's park, which park reported, is over: woken,
	 * timed out or cancelled, the thread runs on (it calls this itself,
	 * with no lock of the lot held).  wait cannot say so: for a thread
	 * woken, the waker reports it. */
	void (*resume)(void);
	/* A thread got its per-thread record (created), or gave it back at
	 * its exit. */
	void (*thread)(bool created);
	/* n threads moved from one queue to another, to's queue then len
	 * long (no bucket lock held). */
	void (*requeue)(const void *from, const void *to, size_t n, size_t len);
	/* The calling thread's set of held locks changed (the deadlock
	 * detector, deadlock.c, in checked mode): it holds total locks, of
	 * which the first n are h[], oldest first; a blocking acquisition
	 * is in the set from its attempt on (deadlock.c, the hooks).
	 * Called inside a lock operation, with no lock of the lot held. */
	void (*held)(unsigned total, unsigned n, const struct pli_held *h);
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

/* For the slow path of a lock, as it begins: base is its base kind
 * (kind.h). */
static inline void
pli_event_contended(const void *addr, unsigned base)
{
	const struct pli_observer *o = pli_observing();
	if (o)
		o->contended(addr, base);
}

static inline uint32_t
pli_event_sample(const void *addr, unsigned kind)
{
	const struct pli_observer *o = pli_observing();
	return o ? o->sample(addr, kind) : 0;
}

static inline void
pli_event_park(const void *addr, unsigned kind, size_t len)
{
	const struct pli_observer *o = pli_observing();
	if (o)
		o->park(addr, kind, len);
}

static inline void
pli_event_wait(const void *addr, uint64_t waited_ns, uint32_t sample)
{
	const struct pli_observer *o = pli_observing();
	if (o)
		o->wait(addr, waited_ns, sample);
}

static inline void
pli_event_resume(void)
{
	const struct pli_observer *o = pli_observing();
	if (o)
		o->resume();
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
