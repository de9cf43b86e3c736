/* SPDX-License-Identifier: MIT */
/*
 * libparkinglot-pthread: the pthread and C11 lock functions on the
 * parking lot, for programs that were never built against libparkinglot
 * (LD_PRELOAD, or linked ahead of libc).  Built on the public API of
 * libparkinglot.so only, like any user's primitive.
 *
 * Every object keeps the size and place the program gave it: the state
 * of the parking lot's lock lives inside the program's pthread_mutex_t,
 * pthread_cond_t or pthread_rwlock_t, at offsets that glibc's static
 * initialisers leave zero, and the kind lives where glibc keeps it
 * (__kind, __wrefs, __flags), so that PTHREAD_*_INITIALIZER*, zeroed
 * memory and pthread_*_init give the same object.  Nothing is allocated
 * per lock, and there is no side table.
 *
 * What the lot cannot serve (process-shared objects, robust and
 * priority-inheritance or priority-protect mutexes) is decided at init
 * from the attributes and initialised by glibc itself; glibc marks such
 * objects in the same kind fields (bits that neither a static initialiser
 * nor this library sets), and every call on them is passed to glibc's own
 * function (real.c), but for a wait on a private condition variable with
 * such a mutex, which is the lot's, with glibc's unlock and lock (cond.c).
 * Destroyed mutexes have kind -1, as in glibc, and every call on them returns
 * EINVAL, as glibc's do.
 *
 * The layouts, over glibc's (x86_64 and the other LP64 targets):
 *
 *   pthread_mutex_t  byte 0      pl_mutex_t           (__lock)
 *                    4..7        recursion count       (__count)
 *                    16..19      kind                  (__kind)
 *                    24..31      owner, pthread_self() (__list.__prev):
 *                                error-checking and recursive kinds only
 *   pthread_cond_t   byte 0      pl_cond_t            (__wseq)
 *                    36..39      bit 0 process-shared (glibc's), bit 1
 *                                CLOCK_MONOTONIC       (__wrefs)
 *   pthread_rwlock_t 0..7        pl_rwlock_t           (__readers etc.)
 *                    28..31      process-shared (glibc's, __shared)
 *                    40..47      writer, pthread_self() (__pad2)
 *                    48..51      kind (preference)     (__flags)
 */
#ifndef PARKINGLOT_DROPIN_H
#define PARKINGLOT_DROPIN_H

#include <pthread.h>
#include <stddef.h>
#include <stdint.h>

#include <parkinglot.h>

#include "kind.h"

/* glibc's mutex kind bits beyond the type (nptl/pthreadP.h): an object
 * with any of them belongs to glibc. */
#define DM_ROBUST 16
#define DM_PRIO_INHERIT 32
#define DM_PRIO_PROTECT 64
#define DM_PSHARED 128
#define DM_GLIBC (DM_ROBUST | DM_PRIO_INHERIT | DM_PRIO_PROTECT | DM_PSHARED)
#define DM_DESTROYED (-1)

struct dm {
	pl_mutex_t lock;
	unsigned char pad0[3];
	unsigned int count;
	int pad1;
	/* Threads waiting on a condition variable with the mutex, in the
	 * place of glibc's __nusers, so that pthread_mutex_destroy says
	 * EBUSY meanwhile, as glibc's does (atomic). */
	unsigned int cond_waiters;
	int kind;
	int pad2;
	pthread_t owner;
	void *pad3;
};
_Static_assert(sizeof(struct dm) == sizeof(pthread_mutex_t), "mutex size");
_Static_assert(
    offsetof(struct dm, kind) == offsetof(pthread_mutex_t, __data.__kind),
    "mutex kind");
_Static_assert(
    offsetof(struct dm, count) == offsetof(pthread_mutex_t, __data.__count),
    "mutex count");
_Static_assert(offsetof(struct dm, cond_waiters) ==
        offsetof(pthread_mutex_t, __data.__nusers),
    "mutex users");

#define DC_PSHARED 1u
#define DC_MONOTONIC 2u

struct dc {
	pl_cond_t cond;
	unsigned char pad0[35];
	unsigned int flags;
	unsigned int pad1[2];
};
_Static_assert(sizeof(struct dc) == sizeof(pthread_cond_t), "cond size");
_Static_assert(
    offsetof(struct dc, flags) == offsetof(pthread_cond_t, __data.__wrefs),
    "cond flags");

struct drw {
	pl_rwlock_t lock;
	unsigned char pad0[20];
	int shared;
	unsigned char pad1[8];
	pthread_t writer;
	unsigned int flags;
	unsigned int pad2;
};
_Static_assert(sizeof(struct drw) == sizeof(pthread_rwlock_t), "rwlock size");
_Static_assert(
    offsetof(struct drw, shared) == offsetof(pthread_rwlock_t, __data.__shared),
    "rwlock shared");
_Static_assert(
    offsetof(struct drw, flags) == offsetof(pthread_rwlock_t, __data.__flags),
    "rwlock flags");

static inline struct dm *
dm(pthread_mutex_t *m)
{
	return (struct dm *)(void *)m;
}

static inline int
dm_kind(pthread_mutex_t *m)
{
	return __atomic_load_n(&dm(m)->kind, __ATOMIC_RELAXED);
}

/* What the parks of a mutex of kind (a parking-lot one) are, for the
 * statistics (kind.h). */
static inline unsigned
dm_park_kind(int kind)
{
	int type = kind & 3;
	return type == PTHREAD_MUTEX_RECURSIVE
	    ? PLI_KIND_PTHREAD_MUTEX_RECURSIVE
	    : type == PTHREAD_MUTEX_ERRORCHECK
	    ? PLI_KIND_PTHREAD_MUTEX_ERRORCHECK
	    : PLI_KIND_PTHREAD_MUTEX;
}

/* Whether glibc serves m (by its kind bits) or it was destroyed. */
static inline bool
dm_is_glibc(int kind)
{
	return kind != DM_DESTROYED && (kind & DM_GLIBC);
}

/* real.c: glibc's own definition of a function this library replaces,
 * looked up once (RTLD_NEXT, the version the headers of this glibc
 * bind).  Aborts with one line if it cannot be found. */
void *pli_real(const char *name);

#define REAL(fn)                                                               \
	({                                                                     \
		static __typeof__(&fn) real_;                                  \
		__typeof__(&fn) p_ =                                           \
		    __atomic_load_n(&real_, __ATOMIC_ACQUIRE);                 \
		if (!p_) {                                                     \
			p_ = (__typeof__(&fn))pli_real(#fn);                   \
			__atomic_store_n(&real_, p_, __ATOMIC_RELEASE);        \
		}                                                              \
		p_;                                                            \
	})

/* Misuse that cannot be reported as an error code: one line, abort. */
__attribute__((noreturn, format(printf, 1, 2))) void pli_dropin_fatal(
    const char *fmt, ...);

/* mutex.c, for cond.c: release m for a wait, and take it back; EPERM
 * where the kind checks the owner and the caller is not it. */
struct dm_saved {
	pthread_mutex_t *m;
	unsigned int count;
};
int pli_dm_release_for_wait(pthread_mutex_t *m, struct dm_saved *s);
void pli_dm_reacquired(void *saved);

/* For the C11 functions (c11.c), with the deadlock detector on: the
 * checked paths of pthread_mutex_lock (try false, deadline NULL),
 * _trylock (try), _timedlock (deadline) and pthread_cond_wait (deadline
 * NULL) or _timedwait, given the program's call site (pc, cfa), not the
 * C11 function's. */
int pli_dm_checked_lock(pthread_mutex_t *m, bool try,
    const struct timespec *deadline, const void *pc, const void *cfa);
int pli_dc_checked_wait(pthread_cond_t *c, pthread_mutex_t *m,
    const struct timespec *deadline, const void *pc, const void *cfa);

/* mutex.c: whether the caller's unlock of m (whole: a condition wait's)
 * releases it, for the deadlock detector. */
bool pli_dm_releases(pthread_mutex_t *m, bool whole);

/* A deadline as glibc takes it: tv_sec < 0 is in the past (the kernel
 * would refuse it); bad nanoseconds stay bad, for EINVAL. */
static inline const struct timespec *
dropin_deadline(const struct timespec *ts, struct timespec *buf)
{
	if (ts && ts->tv_sec < 0 && ts->tv_nsec >= 0 &&
	    ts->tv_nsec < 1000000000L) {
		buf->tv_sec = 0;
		buf->tv_nsec = 0;
		return buf;
	}
	return ts;
}

/* Whether p is NULL, for an argument that glibc's header declares
 * __nonnull while glibc's code accepts NULL there (the rwlock's timed
 * calls: no deadline): the compiler may not fold the test away on the
 * strength of the attribute. */
static inline bool
dropin_is_null(const void *p)
{
	__asm__("" : "+r"(p));
	return p == NULL;
}

static inline bool
dropin_clock_ok(clockid_t c)
{
	return c == CLOCK_REALTIME || c == CLOCK_MONOTONIC;
}

static inline bool
dropin_nsec_ok(const struct timespec *ts)
{
	return ts->tv_nsec >= 0 && ts->tv_nsec < 1000000000L;
}

#endif /* PARKINGLOT_DROPIN_H */
