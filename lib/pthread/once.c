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

int
pthread_once(pthread_once_t *control, void (*init)(void))
{
	pl_once((pl_once_t *)(void *)control, run, as_arg(init));
	return 0;
}

void
call_once(once_flag *flag, void (*fn)(void))
{
	pl_once((pl_once_t *)(void *)flag, run, as_arg(fn));
}
