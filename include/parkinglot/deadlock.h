/* SPDX-License-Identifier: MIT */
/*
 * Deadlock detection: lock-order inversions found before they hang.
 *
 * A program built with -DPL_CHECKED (every file that locks, or at least
 * those whose locks should be watched) routes every lock and unlock of
 * pl_mutex_t, pl_rmutex_t, pl_rwlock_t (read and write), the bit locks
 * and the mutex half of pl_cond_wait through the detector's hooks; the
 * drop-in libparkinglot-pthread feeds the same detector at run time, with
 * no rebuild.  The detector is off until PARKINGLOT_DEADLOCK=report or
 * abort is in the environment at load time, or pl_deadlock_set turns it
 * on.
 *
 * While on, each thread keeps the set of locks it holds (64 at most; past
 * that a one-time warning, and the locks beyond are not watched), and
 * taking a lock B while holding A records the edge A -> B of a graph over
 * lock addresses, with the call sites of both acquisitions.  An edge that
 * closes a cycle of up to PL_DEADLOCK_MAX_LOCKS locks is a lock-order
 * inversion, a deadlock waiting for the wrong timing: it is reported once,
 * naming every lock of the cycle and where each edge was made.  A
 * successful trylock records no edge into the lock it took (it cannot
 * block); locking an rmutex the thread owns records nothing; two read
 * acquisitions of a rwlock never make a cycle between them, a read and a
 * write do; a condition wait releases its mutex and takes it back.
 *
 * The graph is bounded and allocated once, when the detector is first
 * turned on: 16384 locks and 32768 edges (PARKINGLOT_DEADLOCK_LOCKS and
 * PARKINGLOT_DEADLOCK_EDGES override them).  A program that takes more
 * distinct locks or orders gets one warning, and from then on no new
 * edge (what the graph has is still checked).  Nothing is allocated on a
 * lock operation.  Memory that held a lock and is reused for another
 * keeps the old lock's edges unless pl_lock_forget drops them: call it
 * when freeing memory that held locks which may have been held together
 * with others (a pool of objects with a lock each, say).
 */
#ifndef PARKINGLOT_DEADLOCK_H
#define PARKINGLOT_DEADLOCK_H

#include <stdbool.h>
#include <stddef.h>

#include <parkinglot/defs.h>

PL_BEGIN_DECLS

/* The modes. */
#define PL_DEADLOCK_OFF 0    /* no checking (the default) */
#define PL_DEADLOCK_REPORT 1 /* report each inversion, run on */
#define PL_DEADLOCK_ABORT 2  /* report the first inversion, then abort */

/* The longest cycle searched for, in locks; and the frames of a site. */
#define PL_DEADLOCK_MAX_LOCKS 8
#define PL_DEADLOCK_DEPTH 8

/* Where a lock was taken: return addresses, innermost first (pc[0] is in
 * the function that called the lock operation). */
struct pl_deadlock_site {
	const void *pc[PL_DEADLOCK_DEPTH];
	unsigned depth;
};

/* An edge of the graph: a thread took `to` while it held `from`. */
struct pl_deadlock_edge {
	const void *from, *to;
	bool from_read, to_read; /* rwlock read acquisitions */
	long tid;                /* the thread (gettid) that made the edge */
	/* Where from was taken: its call site, then the frames of to_site
	 * that are the callers of that function (those it still had on its
	 * stack when it took to). */
	struct pl_deadlock_site from_site;
	struct pl_deadlock_site to_site; /* where to was taken */
};

/* A cycle: edges[i].to is edges[i + 1].from, and the last edge's to the
 * first edge's from.  The last edge is the one whose recording closed
 * the cycle. */
struct pl_deadlock_cycle {
	unsigned nlocks; /* 2 .. PL_DEADLOCK_MAX_LOCKS */
	struct pl_deadlock_edge edges[PL_DEADLOCK_MAX_LOCKS];
};

/*
 * pl_deadlock_set - turn the detector off, on, or on with an abort at the
 * first inversion (PL_DEADLOCK_*).  Returns 0; EINVAL for another mode;
 * ENOMEM if the graph cannot be allocated (then the detector stays off).
 * Locks held when the detector is turned on are not in their threads'
 * held sets: turn it on before the threads start locking.  Never blocks
 * on a lock of the program.
 */
PL_EXPORT int pl_deadlock_set(int mode);

/* pl_deadlock_get - the mode in force. */
PL_EXPORT int pl_deadlock_get(void);

/*
 * pl_deadlock_cycles - the inversions found so far (the in-process
 * check): copies the first max of them, in the order they were found,
 * into out, and returns how many there are (which may be more than max;
 * 64 are kept, later ones are only counted).  Thread-safe.
 */
PL_EXPORT size_t pl_deadlock_cycles(struct pl_deadlock_cycle *out, size_t max);

/*
 * pl_deadlock_set_handler - call handler(cycle, report, arg) once for each
 * new inversion, instead of printing report (the text the detector would
 * print on stderr) on stderr; NULL restores the printing.  The handler
 * runs in the thread whose lock operation found the inversion, inside
 * that operation, with the locks of the program that thread holds; it
 * may lock others (they are not watched while it runs).  In abort mode
 * the program aborts when it returns.
 */
typedef void pl_deadlock_handler_t(
    const struct pl_deadlock_cycle *cycle, const char *report, void *arg);
PL_EXPORT void pl_deadlock_set_handler(
    pl_deadlock_handler_t *handler, void *arg);

/*
 * pl_lock_forget - drop from the graph every lock whose address is in
 * [addr, addr + len), with every edge into or out of it, and forget the
 * inversions already reported for them.  Call it before memory that held
 * locks is freed or reused for other locks, else the new locks inherit
 * the old ones' order and may be reported for an order they never had.
 * The locks must not be held.  Does nothing while the detector was never
 * on.
 */
PL_EXPORT void pl_lock_forget(const void *addr, size_t len);

PL_END_DECLS

#endif /* PARKINGLOT_DEADLOCK_H */
