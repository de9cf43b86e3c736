/* SPDX-License-Identifier: MIT */
/*
 * pthread_once and C11 call_once on pl_once_t, in the first byte of the
 * program's pthread_once_t (an int, 0 when not yet run, as
 * PTHREAD_ONCE_INIT and ONCE_FLAG_INIT are).  pl_once gives what POSIX
 * asks of pthread_once: one run, the others wait for it, and a run that
 * is cancelled (or ends by pthread_exit or an exception) leaves the
 * control as if never called, so that the next caller runs it.
 */
#define _GNU_SOURCE
#include <threads.h>

#include "dropin.h"

_Static_assert(sizeof(pthread_once_t) >= sizeof(pl_once_t), "once size");
_Static_assert(sizeof(once_flag) >= sizeof(pl_once_t), "once_flag size");

static void
run(void *fn)
{
	void (*init)(void);
	__builtin_memcpy(&init, &fn, sizeof init);
	init();
}

static void *
as_arg(void (*init)(void))
{
	void *p;
	__builtin_memcpy(&p, &init, sizeof p);
	return p;
}

/* pl_once, its waits named as pthread_once's (kind.h).  An init function
 * that never returns (cancelled, or unwound) leaves the name set for the
 * thread's later pl_once waits: it names parks, nothing more. */
static void
once(pl_once_t *o, void (*init)(void))
{
	if (PL_LIKELY(
	        __atomic_load_n(&o->state, __ATOMIC_ACQUIRE) == PL_ONCE_DONE))
		return;
	pl__park_as(PLI_KIND_PL_ONCE, PLI_KIND_PTHREAD_ONCE);
	pl__once_slow(o, run, as_arg(init));
	pl__park_as(PLI_KIND_PL_ONCE, 0);
}

int
pthread_once(pthread_once_t *control, void (*init)(void))
{
	once((pl_once_t *)(void *)control, init);
	return 0;
}

void
call_once(once_flag *flag, void (*fn)(void))
{
	once((pl_once_t *)(void *)flag, fn);
}
