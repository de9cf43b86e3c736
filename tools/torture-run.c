/* SPDX-License-Identifier: MIT */
/*
 * What every thread of a torture run shares with the harness: the
 * options, the parent's objects, the report of violations, and the waits
 * each worker publishes for the stall detector.  Both the harness
 * (tools/torture.c) and the workers (tools/torture-workers.c) call into
 * this file, and it calls neither.
 */
#define _GNU_SOURCE
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>

#include <parkinglot.h>

#include "torture-run.h"

const char *const prim_name[NPRIM + 1] = { "mutex", "rmutex", "cond", "rwlock",
	"once", "bitlock", "park", "torture" };

/* The options, as their defaults (see usage) or the command line set them. */
struct options opt = { 20, 5, 4, (1u << NPRIM) - 1, false, true, 0, 0 };

__thread struct slot *me;

/* The parent's objects (the fork child has its own, tools/torture.c). */
struct run parent_run;

/* ---- reporting ---------------------------------------------------------- */

void
vviolation(struct run *r, int prim, const char *fmt, va_list ap)
{
	uint64_t n = FADD(&r->violations[prim], 1);
	char buf[300];
	vsnprintf(buf, sizeof buf, fmt, ap);
	if (n <= 10)
		fprintf(stderr, "torture%s: VIOLATION: %s: %s\n",
		    r->is_child ? " [fork child]" : "", prim_name[prim],
		    n < 10 ? buf : "(further ones not shown)");
}

void
violation(struct run *r, int prim, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	vviolation(r, prim, fmt, ap);
	va_end(ap);
}

/* What conform_note counts: a worker reports it at once (the conformance
 * bodies report theirs when their threads are done). */
void
noted(const char *what)
{
	if (me)
		VIOL(me, "%s", what);
}

uint64_t
total_violations(struct run *r)
{
	uint64_t v = 0;
	for (int p = 0; p <= NPRIM; p++)
		v += LOAD(&r->violations[p]);
	return v;
}

/* ---- waits, published for the stall detector ---------------------------- */

/* A wait due to end at due (a deadline, or 0: now), within the stall
 * bound; or, with due UNBOUNDED, due once *watch != val, if ever. */
void
wait_begin(struct slot *s, const char *what, uint64_t due,
    const uintptr_t *watch, uintptr_t val)
{
	/* Release stores: none may become visible before the even wseq of
	 * the wait that ended (a seqlock's writer). */
	uint64_t q = LOAD(&s->wseq), t = now_ns();
	due = due == UNBOUNDED ? due : (due > t ? due : t) + opt.stall_ns;
	__atomic_store_n(&s->what, what, __ATOMIC_RELEASE);
	__atomic_store_n(&s->wstart, t, __ATOMIC_RELEASE);
	__atomic_store_n(&s->wlimit, due, __ATOMIC_RELEASE);
	__atomic_store_n(&s->watch, watch, __ATOMIC_RELEASE);
	__atomic_store_n(&s->watch_val, val, __ATOMIC_RELEASE);
	__atomic_store_n(&s->wseq, q + 1, __ATOMIC_RELEASE);
}

void
wait_end(struct slot *s)
{
	__atomic_store_n(&s->wseq, LOAD(&s->wseq) + 1, __ATOMIC_RELEASE);
	uint64_t limit = LOAD(&s->wlimit);
	if (limit != UNBOUNDED) {
		uint64_t t = now_ns(), base = limit - opt.stall_ns;
		if (t > base && t - base > LOAD(&s->max_over))
			STORE(&s->max_over, t - base);
	}
}
