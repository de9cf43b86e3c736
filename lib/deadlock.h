/* SPDX-License-Identifier: MIT */
/*
 * The deadlock detector's entry points for the layers built on the
 * library that cannot be rebuilt with PL_CHECKED: the drop-in
 * (lib/pthread) feeds the same detector at run time through them.  The
 * public side is <parkinglot/deadlock.h>; the hooks of checked builds are
 * declared in <parkinglot/defs.h>.  Defined in deadlock.c.
 */
#ifndef PARKINGLOT_DEADLOCK_INTERNAL_H
#define PARKINGLOT_DEADLOCK_INTERNAL_H

#include <stdbool.h>

#include <parkinglot/deadlock.h>
#include <parkinglot/defs.h>

/* pl__deadlock_on (declared in <parkinglot/defs.h>, which tests it
 * inline) is the mode in force (PL_DEADLOCK_OFF, _REPORT, _ABORT of
 * <parkinglot/deadlock.h>): nonzero only once the graph exists, so that a
 * hook that sees it set may use the graph.  Written by pl_deadlock_set
 * (and the constructor that reads PARKINGLOT_DEADLOCK), read relaxed.  The
 * library reads it through the GOT like any program: a program built
 * without -fPIE has it copied into its own data by a copy relocation, and
 * the library's writes must go to that copy. */

/* The hooks of <parkinglot/defs.h> with the call site given: pc is the
 * return address into the function that asked for the lock, cfa the stack
 * pointer at that call (__builtin_dwarf_cfa() of the function called), so
 * that a report can tell which of a later stack's frames the acquisition
 * shares.  flags: PL_CHK_READ, PL_CHK_TRY, PL_CHK_FAILED. */
PL_EXPORT void pl__chk_pre_lock_at(
    const void *addr, unsigned flags, const void *pc, const void *cfa);
PL_EXPORT void pl__chk_post_lock_at(
    const void *addr, unsigned flags, const void *pc, const void *cfa);
PL_EXPORT void pl__chk_pre_unlock_at(const void *addr, unsigned flags);

/* Whether the detector is on: one load and a predicted branch, for the
 * drop-in's functions to test before anything else. */
static inline bool
pli_deadlock_checking(void)
{
	return __builtin_expect(
	    __atomic_load_n(&pl__deadlock_on, __ATOMIC_RELAXED) != 0, 0);
}

/* A lock destroyed, whose memory may hold another lock next: while the
 * detector is on, out of the graph (pl_lock_forget), so that the next
 * lock there does not inherit its edges. */
static inline void
pli_deadlock_destroyed(const void *addr, size_t len)
{
	if (pli_deadlock_checking())
		pl_lock_forget(addr, len);
}

#endif /* PARKINGLOT_DEADLOCK_INTERNAL_H */
