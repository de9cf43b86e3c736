/* SPDX-License-Identifier: MIT */
/*
 * C11 mtx_* and cnd_*: glibc's own are thin wrappers over its internal
 * pthread functions, which a drop-in cannot reach, so they are replaced
 * too, over this library's pthread functions, with glibc's mapping of
 * types (mtx_plain and mtx_timed are NORMAL, with mtx_recursive
 * RECURSIVE) and of error codes (thrd_err_map).  With the deadlock
 * detector on, the locks and waits pass it the program's call site, the
 * C11 function's caller.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <threads.h>

#include "deadlock.h"
#include "dropin.h"

_Static_assert(sizeof(mtx_t) == sizeof(pthread_mutex_t), "mtx_t");
_Static_assert(sizeof(cnd_t) == sizeof(pthread_cond_t), "cnd_t");

static int
thrd_code(int err)
{
	switch (err) {
	case 0:
		return thrd_success;
	case ENOMEM:
		return thrd_nomem;
	case ETIMEDOUT:
		return thrd_timedout;
	case EBUSY:
		return thrd_busy;
	default:
		return thrd_error;
	}
}

static inline pthread_mutex_t *
pm(mtx_t *m)
{
	return (pthread_mutex_t *)(void *)m;
}

static inline pthread_cond_t *
pc(cnd_t *c)
{
	return (pthread_cond_t *)(void *)c;
}

int
mtx_init(mtx_t *m, int type)
{
	pthread_mutexattr_t attr;
	pthread_mutexattr_init(&attr);
	/* As glibc's mtx_init: recursive for exactly these two types, and
	 * any other, valid or not, plain. */
	pthread_mutexattr_settype(&attr,
	    type == (mtx_plain | mtx_recursive) ||
	            type == (mtx_timed | mtx_recursive)
	        ? PTHREAD_MUTEX_RECURSIVE
	        : PTHREAD_MUTEX_NORMAL);
	int rc = pthread_mutex_init(pm(m), &attr);
	pthread_mutexattr_destroy(&attr);
	return thrd_code(rc);
}

/* The call site for the deadlock detector: the C11 function's caller. */
#define SITE __builtin_return_address(0), __builtin_dwarf_cfa()

int
mtx_lock(mtx_t *m)
{
	if (PL_UNLIKELY(pli_deadlock_checking()))
		return thrd_code(pli_dm_checked_lock(pm(m), false, NULL, SITE));
	return thrd_code(pthread_mutex_lock(pm(m)));
}

int
mtx_trylock(mtx_t *m)
{
	if (PL_UNLIKELY(pli_deadlock_checking()))
		return thrd_code(pli_dm_checked_lock(pm(m), true, NULL, SITE));
	return thrd_code(pthread_mutex_trylock(pm(m)));
}

int
mtx_timedlock(mtx_t *restrict m, const struct timespec *restrict deadline)
{
	if (PL_UNLIKELY(pli_deadlock_checking()))
		return thrd_code(
		    pli_dm_checked_lock(pm(m), false, deadline, SITE));
	return thrd_code(pthread_mutex_timedlock(pm(m), deadline));
}

int
mtx_unlock(mtx_t *m)
{
	return thrd_code(pthread_mutex_unlock(pm(m)));
}

void
mtx_destroy(mtx_t *m)
{
	(void)pthread_mutex_destroy(pm(m));
}

int
cnd_init(cnd_t *c)
{
	return thrd_code(pthread_cond_init(pc(c), NULL));
}

int
cnd_signal(cnd_t *c)
{
	return thrd_code(pthread_cond_signal(pc(c)));
}

int
cnd_broadcast(cnd_t *c)
{
	return thrd_code(pthread_cond_broadcast(pc(c)));
}

int
cnd_wait(cnd_t *c, mtx_t *m)
{
	if (PL_UNLIKELY(pli_deadlock_checking()))
		return thrd_code(pli_dc_checked_wait(pc(c), pm(m), NULL, SITE));
	return thrd_code(pthread_cond_wait(pc(c), pm(m)));
}

int
cnd_timedwait(cnd_t *restrict c, mtx_t *restrict m,
    const struct timespec *restrict deadline)
{
	if (PL_UNLIKELY(pli_deadlock_checking()))
		return thrd_code(
		    pli_dc_checked_wait(pc(c), pm(m), deadline, SITE));
	return thrd_code(pthread_cond_timedwait(pc(c), pm(m), deadline));
}

void
cnd_destroy(cnd_t *c)
{
	(void)pthread_cond_destroy(pc(c));
}
