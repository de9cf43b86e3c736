/* SPDX-License-Identifier: MIT */
/*
 * pthread_rwlock_* on pl_rwlock_t (layout: dropin.h).
 *
 * Kinds, as glibc's: PTHREAD_RWLOCK_PREFER_WRITER_NONRECURSIVE_NP is the
 * phase-fair pl_rwlock_t as it is (an arriving reader waits behind a
 * waiting writer).  The default, PREFER_READER_NP (and PREFER_WRITER_NP,
 * which glibc treats the same), must never make a reader wait for a
 * writer that does not hold the lock, for then it can deadlock: a thread
 * that holds a read lock takes it again while a writer waits (POSIX
 * allows it and programs do it), or a reader waits for another thread
 * that needs a read lock first.  glibc lets every reader in while no
 * writer holds the lock, and pays with starving writers (lockbench W6:
 * writes 1% of the operations at 16 threads, the total a third of
 * pl_rwlock's).  Here a reader of the default kind enters past waiting
 * writers ("barges", with the same CAS on the word as
 * pl_rwlock_tryrdlock; the encoding is public) when
 *
 *   - it only tries (pthread_rwlock_tryrdlock): it cannot wait;
 *   - the thread holds a read lock already (rd_held below, a count per
 *     thread of the read locks it holds on the lot's rwlocks);
 *   - it waited RD_BOUND_NS, or to its own deadline, behind a waiting
 *     writer.
 *
 * Otherwise it waits on pl_rwlock's phase-fair path, in steps of
 * RD_BOUND_NS, and after each step that ends with no writer holding the
 * lock it barges.  So no reader waits more than RD_BOUND_NS for a writer
 * that does not hold the lock (whatever the readers wait for, they get
 * in, as with glibc, a little later), a timed reader gets what glibc's
 * gets at its deadline, and under plain contention the readers queue
 * behind the writers as in pl_rwlock (the phases alternate).  Every
 * reader entry is one of pl_rwlock's or the barging CAS, whose exclusion
 * and parked bits model/rwlock.pml checks with -DBARGE (there a reader
 * may barge at every arrival and after every step, which covers these
 * rules).
 *
 * The writer is recorded (pthread_self()) for EDEADLK on the writer's own
 * rdlock or wrlock, and so that unlock knows which lock the caller holds.
 * Unlocking a lock the caller holds in neither way returns EPERM (glibc's
 * would corrupt it).
 */
#define _GNU_SOURCE
#include <errno.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "deadlock.h"
#include "dropin.h"

static inline struct drw *
drw(pthread_rwlock_t *l)
{
	return (struct drw *)(void *)l;
}

static inline bool
is_glibc(pthread_rwlock_t *l)
{
	return __atomic_load_n(&drw(l)->shared, __ATOMIC_RELAXED) != 0;
}

static inline pthread_t
writer(struct drw *d)
{
	return __atomic_load_n(&d->writer, __ATOMIC_RELAXED);
}

int
pthread_rwlock_init(pthread_rwlock_t *l, const pthread_rwlockattr_t *attr)
{
	int kind = PTHREAD_RWLOCK_DEFAULT_NP;
	if (attr) {
		int pshared = PTHREAD_PROCESS_PRIVATE;
		pthread_rwlockattr_getpshared(attr, &pshared);
		if (pshared != PTHREAD_PROCESS_PRIVATE)
			return REAL(pthread_rwlock_init)(l, attr);
		pthread_rwlockattr_getkind_np(attr, &kind);
	}
	memset(l, 0, sizeof *l);
	drw(l)->flags = (unsigned int)kind;
	return 0;
}

/* The deadlock detector forgets it (deadlock.h), as pthread_mutex_destroy
 * a mutex. */
int
pthread_rwlock_destroy(pthread_rwlock_t *l)
{
	int rc = is_glibc(l) ? REAL(pthread_rwlock_destroy)(l) : 0;
	if (rc == 0)
		pli_deadlock_destroyed(l, sizeof *l);
	return rc;
}

/* How long a reader of the default kind waits behind a waiting writer
 * before it barges: a writer phase, with room for a holder that lost its
 * CPU on an oversubscribed machine. */
#define RD_BOUND_NS 2000000L

/* The read locks this thread holds on the lot's rwlocks (any of them):
 * such a thread never waits for a writer that does not hold the lock.
 * Initial-exec: the drop-in is loaded with the program, and the count
 * is touched on every read lock and unlock. */
static __thread unsigned long rd_held
    __attribute__((tls_model("initial-exec")));

/* pthread_self(), cached: the unlock asks it of every writer, and glibc's
 * is a call into libc.  (A fork child's thread keeps its pthread_t.) */
static __thread pthread_t self_id __attribute__((tls_model("initial-exec")));

static inline pthread_t
me(void)
{
	pthread_t t = self_id;
	if (PL_UNLIKELY(!t))
		t = self_id = pthread_self();
	return t;
}

static inline int
rd_entered(struct drw *d)
{
	rd_held++;
	pli_dropin_taken(&d->lock);
	return 0;
}

static inline bool
prefers_readers(struct drw *d)
{
	return __atomic_load_n(&d->flags, __ATOMIC_RELAXED) !=
	    PTHREAD_RWLOCK_PREFER_WRITER_NONRECURSIVE_NP;
}

/* A reader of the default kind past waiting writers: in unless a writer
 * holds the lock. */
static bool
barge(struct drw *d)
{
	pl_rwlock_t *l = &d->lock;
	PL_TSAN_PRE_LOCK(l, PL_TSAN_READ | PL_TSAN_TRY);
	uintptr_t s = __atomic_load_n(&l->state, __ATOMIC_RELAXED);
	bool ok = false;
	while (!(s & PL_RWLOCK_WRITER) && s < PL_RWLOCK_READERS_MAX) {
		if (__atomic_compare_exchange_n(&l->state, &s,
		        s + PL_RWLOCK_ONE_READER, true, __ATOMIC_ACQUIRE,
		        __ATOMIC_RELAXED)) {
			ok = true;
			break;
		}
	}
	PL_TSAN_POST_LOCK(
	    l, PL_TSAN_READ | PL_TSAN_TRY | (ok ? 0 : PL_TSAN_TRY_FAILED));
	return ok;
}

static inline bool
ts_before(const struct timespec *a, const struct timespec *b)
{
	return a->tv_sec < b->tv_sec ||
	    (a->tv_sec == b->tv_sec && a->tv_nsec < b->tv_nsec);
}

/*
 * A reader of the default kind that must wait: on pl_rwlock's path in
 * steps of RD_BOUND_NS on clock, barging after each step that ends with
 * no writer holding the lock.  deadline: the caller's, or NULL.
 */
static int
rdlock_bounded(struct drw *d, clockid_t clock, const struct timespec *deadline)
{
	for (;;) {
		struct timespec step;
		clock_gettime(clock, &step);
		step.tv_nsec += RD_BOUND_NS;
		if (step.tv_nsec >= 1000000000L) {
			step.tv_nsec -= 1000000000L;
			step.tv_sec++;
		}
		bool last = deadline && !ts_before(&step, deadline);
		if (pl_rwlock_clockrdlock(
		        &d->lock, clock, last ? deadline : &step) == 0)
			return 0;
		if (barge(d))
			return 0;
		if (last)
			return ETIMEDOUT;
	}
}

enum how { LOCK, TRY, TIMED };

/* The calls on a process-shared lock: glibc's. */
static __attribute__((noinline)) int
rdlock_glibc(pthread_rwlock_t *l, enum how how, clockid_t clock,
    const struct timespec *deadline)
{
	if (how == LOCK)
		return REAL(pthread_rwlock_rdlock)(l);
	if (how == TRY)
		return REAL(pthread_rwlock_tryrdlock)(l);
	return REAL(pthread_rwlock_clockrdlock)(l, clock, deadline);
}

/* A reader that did not get in at once (the rules at the top). */
static __attribute__((noinline)) int
rdlock_slow(struct drw *d, enum how how, clockid_t clock,
    const struct timespec *deadline)
{
	bool reader_pref = prefers_readers(d);
	if (reader_pref && (how == TRY || rd_held) && barge(d))
		return rd_entered(d);
	if (how == TRY)
		return EBUSY;
	if (writer(d) == me())
		return EDEADLK;
	int rc = 0;
	struct timespec buf;
	pl__park_as(PLI_KIND_PL_RWLOCK, PLI_KIND_PTHREAD_RWLOCK);
	if (reader_pref)
		rc = rdlock_bounded(d, how == LOCK ? CLOCK_MONOTONIC : clock,
		    how == LOCK ? NULL : dropin_deadline(deadline, &buf));
	else if (how == LOCK)
		pl_rwlock_rdlock(&d->lock);
	else
		rc = pl_rwlock_clockrdlock(
		    &d->lock, clock, dropin_deadline(deadline, &buf));
	pl__park_as(PLI_KIND_PL_RWLOCK, 0);
	return rc ? rc : rd_entered(d);
}

static inline int
rdlock(pthread_rwlock_t *l, enum how how, clockid_t clock,
    const struct timespec *deadline)
{
	struct drw *d = drw(l);
	if (PL_UNLIKELY(is_glibc(l)))
		return rdlock_glibc(l, how, clock, deadline);
	if (how == TIMED && dropin_is_null(deadline)) /* glibc: untimed */
		how = LOCK;
	if (how == TIMED &&
	    (!dropin_clock_ok(clock) || !dropin_nsec_ok(deadline)))
		return EINVAL;
	if (PL_LIKELY(pl_rwlock_tryrdlock(&d->lock)))
		return rd_entered(d);
	return rdlock_slow(d, how, clock, deadline);
}

static __attribute__((noinline)) int
wrlock_glibc(pthread_rwlock_t *l, enum how how, clockid_t clock,
    const struct timespec *deadline)
{
	if (how == LOCK)
		return REAL(pthread_rwlock_wrlock)(l);
	if (how == TRY)
		return REAL(pthread_rwlock_trywrlock)(l);
	return REAL(pthread_rwlock_clockwrlock)(l, clock, deadline);
}

/* The writer holds the lock: say who. */
static inline int
wr_entered(struct drw *d)
{
	__atomic_store_n(&d->writer, me(), __ATOMIC_RELAXED);
	pli_dropin_taken(&d->lock);
	return 0;
}

static __attribute__((noinline)) int
wrlock_slow(struct drw *d, enum how how, clockid_t clock,
    const struct timespec *deadline)
{
	if (how == TRY)
		return EBUSY;
	if (writer(d) == me())
		return EDEADLK;
	int rc = 0;
	pl__park_as(PLI_KIND_PL_RWLOCK, PLI_KIND_PTHREAD_RWLOCK);
	if (how == LOCK) {
		pl_rwlock_wrlock(&d->lock);
	} else {
		struct timespec buf;
		rc = pl_rwlock_clockwrlock(
		    &d->lock, clock, dropin_deadline(deadline, &buf));
	}
	pl__park_as(PLI_KIND_PL_RWLOCK, 0);
	return rc ? rc : wr_entered(d);
}

static inline int
wrlock(pthread_rwlock_t *l, enum how how, clockid_t clock,
    const struct timespec *deadline)
{
	struct drw *d = drw(l);
	if (PL_UNLIKELY(is_glibc(l)))
		return wrlock_glibc(l, how, clock, deadline);
	if (how == TIMED && dropin_is_null(deadline)) /* glibc: untimed */
		how = LOCK;
	if (how == TIMED &&
	    (!dropin_clock_ok(clock) || !dropin_nsec_ok(deadline)))
		return EINVAL;
	if (PL_LIKELY(pl_rwlock_trywrlock(&d->lock)))
		return wr_entered(d);
	return wrlock_slow(d, how, clock, deadline);
}

/*
 * The deadlock detector (deadlock.h), on at run time: every lock and
 * unlock through its hooks, the lock known by its address.  A lock by
 * its writer is no acquisition and cannot block (EDEADLK, EBUSY to a
 * try): no hooks.  pc and cfa: the call site.
 */
static bool
writing(pthread_rwlock_t *l)
{
	if (is_glibc(l)) /* glibc keeps the writer's thread id */
		return __atomic_load_n(&l->__data.__cur_writer,
		           __ATOMIC_RELAXED) == gettid();
	return writer(drw(l)) == me();
}

static __attribute__((noinline, cold)) int
checked_lock(pthread_rwlock_t *l, bool rd, enum how how, clockid_t clock,
    const struct timespec *deadline, const void *pc, const void *cfa)
{
	if (writing(l))
		return rd ? rdlock(l, how, clock, deadline)
		          : wrlock(l, how, clock, deadline);
	unsigned f = (rd ? PL_CHK_READ : 0) | (how == TRY ? PL_CHK_TRY : 0);
	pl__chk_pre_lock_at(l, f, pc, cfa);
	int rc = rd ? rdlock(l, how, clock, deadline)
	            : wrlock(l, how, clock, deadline);
	pl__chk_post_lock_at(l, f | (rc ? PL_CHK_FAILED : 0), pc, cfa);
	return rc;
}

#define CHECKED(rd, how, clock, deadline)                                      \
	do {                                                                   \
		if (PL_UNLIKELY(pli_deadlock_checking()))                      \
			return checked_lock(l, rd, how, clock, deadline,       \
			    __builtin_return_address(0),                       \
			    __builtin_dwarf_cfa());                            \
	} while (0)

int
pthread_rwlock_rdlock(pthread_rwlock_t *l)
{
	CHECKED(true, LOCK, CLOCK_REALTIME, NULL);
	return rdlock(l, LOCK, CLOCK_REALTIME, NULL);
}

int
pthread_rwlock_tryrdlock(pthread_rwlock_t *l)
{
	CHECKED(true, TRY, CLOCK_REALTIME, NULL);
	return rdlock(l, TRY, CLOCK_REALTIME, NULL);
}

int
pthread_rwlock_timedrdlock(pthread_rwlock_t *l, const struct timespec *deadline)
{
	CHECKED(true, TIMED, CLOCK_REALTIME, deadline);
	return rdlock(l, TIMED, CLOCK_REALTIME, deadline);
}

int
pthread_rwlock_clockrdlock(
    pthread_rwlock_t *l, clockid_t clock, const struct timespec *deadline)
{
	CHECKED(true, TIMED, clock, deadline);
	return rdlock(l, TIMED, clock, deadline);
}

int
pthread_rwlock_wrlock(pthread_rwlock_t *l)
{
	CHECKED(false, LOCK, CLOCK_REALTIME, NULL);
	return wrlock(l, LOCK, CLOCK_REALTIME, NULL);
}

int
pthread_rwlock_trywrlock(pthread_rwlock_t *l)
{
	CHECKED(false, TRY, CLOCK_REALTIME, NULL);
	return wrlock(l, TRY, CLOCK_REALTIME, NULL);
}

int
pthread_rwlock_timedwrlock(pthread_rwlock_t *l, const struct timespec *deadline)
{
	CHECKED(false, TIMED, CLOCK_REALTIME, deadline);
	return wrlock(l, TIMED, CLOCK_REALTIME, deadline);
}

int
pthread_rwlock_clockwrlock(
    pthread_rwlock_t *l, clockid_t clock, const struct timespec *deadline)
{
	CHECKED(false, TIMED, clock, deadline);
	return wrlock(l, TIMED, clock, deadline);
}

static __attribute__((noinline, cold)) void
checked_unlock(pthread_rwlock_t *l)
{
	pthread_t w = writer(drw(l));
	pl__chk_pre_unlock_at(l, w != 0 && w == me() ? 0 : PL_CHK_READ);
}

int
pthread_rwlock_unlock(pthread_rwlock_t *l)
{
	struct drw *d = drw(l);
	if (PL_UNLIKELY(pli_deadlock_checking()))
		checked_unlock(l);
	if (PL_UNLIKELY(is_glibc(l)))
		return REAL(pthread_rwlock_unlock)(l);
	pthread_t w = writer(d); /* 0 while readers hold it */
	if (w != 0 && w == me()) {
		__atomic_store_n(&d->writer, 0, __ATOMIC_RELAXED);
		pl_rwlock_wrunlock(&d->lock);
		return 0;
	}
	if (__atomic_load_n(&d->lock.state, __ATOMIC_RELAXED) <
	    PL_RWLOCK_ONE_READER)
		return EPERM; /* held by nobody as a reader */
	if (rd_held)          /* 0 if another thread took it: no barging then */
		rd_held--;
	pl_rwlock_rdunlock(&d->lock);
	return 0;
}
