/* SPDX-License-Identifier: MIT */
/*
 * What kind of lock a park is for, as the statistics show it (parkstat's
 * "kind" column, the export's slots and stacks).  Shared by the library,
 * the drop-in (lib/pthread) and parkstat; the numbers are part of the
 * export's layout (export.h), so a change here is a new PLX_VERSION.
 *
 * A primitive of the library parks as its own kind (the base kinds, up
 * to PLI_KIND_NBASE).  A layer over it says what it is built as with
 * pl__park_as: the drop-in's pthread_mutex_lock, for instance, has its
 * mutex park as PLI_KIND_PTHREAD_MUTEX_RECURSIVE where the pl_mutex_t
 * would park as PLI_KIND_PL_MUTEX.  The layer sets the kind for the
 * calling thread and one base kind, for the length of one slow call, and
 * sets it back to 0 (the base kind itself) after.  A condition wait sets
 * two: the condition variable's and the mutex's, which the wait locks
 * again.
 */
#ifndef PARKINGLOT_KIND_H
#define PARKINGLOT_KIND_H

#include <parkinglot/defs.h>

/* X(name, label): the base kinds first, PARK (pl_park itself) at 1. */
#define PLI_KIND_LIST(X)                                                       \
	X(PARK, "pl_park")                                                     \
	X(PL_MUTEX, "pl_mutex")                                                \
	X(PL_BITLOCK, "pl_bitlock")                                            \
	X(PL_COND, "pl_cond")                                                  \
	X(PL_RWLOCK, "pl_rwlock")                                              \
	X(PL_ONCE, "pl_once")                                                  \
	X(PTHREAD_MUTEX, "pthread_mutex")                                      \
	X(PTHREAD_MUTEX_RECURSIVE, "pthread_mutex recursive")                  \
	X(PTHREAD_MUTEX_ERRORCHECK, "pthread_mutex errorcheck")                \
	X(PTHREAD_COND, "pthread_cond")                                        \
	X(PTHREAD_RWLOCK, "pthread_rwlock")                                    \
	X(PTHREAD_ONCE, "pthread_once")

#define PLI_KIND_ENUM(name, label) PLI_KIND_##name,
enum pli_kind {
	PLI_KIND_NONE, /* not known (a slot claimed by a requeue) */
	PLI_KIND_LIST(PLI_KIND_ENUM) PLI_KIND_COUNT
};
#undef PLI_KIND_ENUM

/* The base kinds: those a primitive of the library parks as. */
#define PLI_KIND_NBASE (PLI_KIND_PL_ONCE + 1)

/* The label of kind k ("" for none or out of range). */
static inline const char *
pli_kind_label(unsigned k)
{
#define PLI_KIND_LABEL(name, label) label,
	static const char *const labels[] = { "",
		PLI_KIND_LIST(PLI_KIND_LABEL) };
#undef PLI_KIND_LABEL
	return k < PLI_KIND_COUNT ? labels[k] : "";
}

/* Parks of base kind base by the calling thread are of kind kind from
 * now on (0: base itself again).  For the drop-in; defined in
 * parkinglot.c. */
PL_EXPORT void pl__park_as(unsigned base, unsigned kind);

/* Non-NULL while the lot's events are observed (the statistics export,
 * which parkstat reads; events.h).  Then the drop-in reports each lock it
 * takes with pl__taken, for the export's count of the times each
 * contended address was locked (inline pl_* fast paths cannot).  Both
 * defined in parkinglot.c. */
struct pli_observer;
PL_EXPORT extern const struct pli_observer *pl__observer;
PL_EXPORT void pl__taken(const void *addr);

/* The drop-in, after it took the lock at addr: one load and a predicted
 * branch while nobody observes. */
static inline void
pli_dropin_taken(const void *addr)
{
	if (__builtin_expect(
	        __atomic_load_n(&pl__observer, __ATOMIC_RELAXED) != NULL, 0))
		pl__taken(addr);
}

#endif /* PARKINGLOT_KIND_H */
