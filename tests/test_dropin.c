/* SPDX-License-Identifier: MIT */
/*
 * Conformance suite of the pthread drop-in, libparkinglot-pthread.so: the
 * pthread and C11 lock functions as unmodified programs see them.
 *
 * The suite is plain POSIX/glibc (no parkinglot header, no libparkinglot)
 * and runs three ways: against glibc 2.36, the reference, where it must
 * pass as it is; with the drop-in preloaded (LD_PRELOAD); and linked
 * against the drop-in.  The return codes asserted are glibc's exactly, as
 * its nptl sources give them (glibc-2.36: nptl/pthread_mutex_lock.c,
 * pthread_mutex_timedlock.c, pthread_mutex_trylock.c,
 * pthread_mutex_unlock.c, pthread_cond_wait.c, pthread_rwlock_common.c,
 * futex-internal.c ...); a comment says which source decides where the
 * code may surprise.  dropin::active_matches_DROPIN_EXPECT tells the
 * harness whether the drop-in really is (DROPIN_EXPECT=1) or is not in
 * effect.
 *
 * The threads of a test coordinate through atomics that they poll (see
 * dropin-util.h), never through the locks under test; "thread T blocked"
 * is read from /proc (dropin_wait_blocked).  Threads never call
 * cr_assert: they record what they saw and the test's thread asserts.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <pthread.h>
#include <sched.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <threads.h>
#include <time.h>

#include <criterion/criterion.h>

#include "dropin-util.h"

/*
 * One test at a time unless -j or CRITERION_JOBS says otherwise: the tests
 * measure timeouts and run stress loops on a 2-core machine.
 */
int
main(int argc, char *argv[])
{
	struct criterion_test_set *tests = criterion_initialize();
	int result = 0;

	if (getenv("CRITERION_JOBS") == NULL)
		criterion_options.jobs = 1;
	if (criterion_handle_args(argc, argv, true))
		result = !criterion_run_all_tests(tests);
	criterion_finalize(tests);
	return result;
}

/* ------------------------------------------------------------------ */
/* Common helpers                                                      */

/* A deadline that a lock or wait that must block reaches: a test of
 * ETIMEDOUT waits this long. */
#define SHORT_MS 30L
/* A deadline that is never reached in a passing test. */
#define FAR_MS 60000L

/* Per-test timeout (s): every test takes well under 10 s. */
#define T_O 20

static const char *
en(int e)
{
	static __thread char buf[32];
	const char *name;

	if (e == 0)
		return "0";
	name = strerrorname_np(e);
	if (name != NULL)
		return name;
	snprintf(buf, sizeof buf, "%d", e);
	return buf;
}

/* Asserts that expr (a call returning an error number) returns want. */
#define EXPECT(what, expr, want)                                               \
	do {                                                                   \
		int rc_ = (expr);                                              \
		int want_ = (want);                                            \
		cr_assert(rc_ == want_, "%s: %s returned %s, expected %s",     \
		    (what), #expr, en(rc_), en(want_));                        \
	} while (0)

static pthread_t
spawn(void *(*fn)(void *), void *arg)
{
	pthread_t t;
	int rc = pthread_create(&t, NULL, fn, arg);

	cr_assert(rc == 0, "pthread_create: %s", en(rc));
	return t;
}

/* Joins t, waiting at most ms milliseconds for it to end; its result. */
static void *
join_ms(pthread_t t, long ms, const char *what)
{
	struct timespec dl = dropin_deadline(CLOCK_MONOTONIC, ms);
	void *ret = NULL;
	int rc = pthread_clockjoin_np(t, &ret, CLOCK_MONOTONIC, &dl);

	cr_assert(rc == 0, "%s: the thread did not end in %ld ms (%s)", what,
	    ms, en(rc));
	return ret;
}

static void *
join_thread(pthread_t t, const char *what)
{
	return join_ms(t, DROPIN_WAIT_MS, what);
}

/* ts with tv_nsec replaced (an invalid value, for EINVAL tests). */
static struct timespec
with_nsec(struct timespec ts, long nsec)
{
	ts.tv_nsec = nsec;
	return ts;
}

static const struct timespec NEGATIVE_TS = { -1, 0 };

/* Runs fn(m) in a new thread and returns what it returned. */
struct other {
	int (*fn)(pthread_mutex_t *);
	pthread_mutex_t *m;
	int rc;
};

static void *
other_main(void *arg)
{
	struct other *o = arg;

	o->rc = o->fn(o->m);
	return NULL;
}

static int
in_other(int (*fn)(pthread_mutex_t *), pthread_mutex_t *m)
{
	struct other o = { fn, m, -1 };

	join_thread(spawn(other_main, &o), "in_other");
	return o.rc;
}

/* pthread_mutex_trylock, and unlock again if it succeeded. */
static int
op_trylock(pthread_mutex_t *m)
{
	int rc = pthread_mutex_trylock(m);

	if (rc == 0)
		pthread_mutex_unlock(m);
	return rc;
}

/* pthread_mutex_lock, and unlock again if it succeeded. */
static int
op_lock(pthread_mutex_t *m)
{
	int rc = pthread_mutex_lock(m);

	if (rc == 0)
		pthread_mutex_unlock(m);
	return rc;
}

static int
op_unlock(pthread_mutex_t *m)
{
	return pthread_mutex_unlock(m);
}

/* A thread that takes a mutex and holds it until told to release it. */
struct holder {
	pthread_mutex_t *m;
	pthread_t t;
	int held, release;
	int lock_rc, unlock_rc;
};

static void *
holder_main(void *arg)
{
	struct holder *h = arg;

	h->lock_rc = pthread_mutex_lock(h->m);
	dropin_store(&h->held, 1);
	dropin_await_ge_ms(&h->release, 1, 30000);
	h->unlock_rc = h->lock_rc == 0 ? pthread_mutex_unlock(h->m) : 0;
	return NULL;
}

static void
holder_start(struct holder *h, pthread_mutex_t *m, const char *what)
{
	memset(h, 0, sizeof *h);
	h->m = m;
	h->t = spawn(holder_main, h);
	cr_assert(dropin_await_ge(&h->held, 1),
	    "%s: the holder thread did not lock the mutex in 5 s", what);
	cr_assert(h->lock_rc == 0, "%s: the holder's lock returned %s", what,
	    en(h->lock_rc));
}

static void
holder_stop(struct holder *h, const char *what)
{
	dropin_store(&h->release, 1);
	join_thread(h->t, what);
	cr_assert(h->unlock_rc == 0, "%s: the holder's unlock returned %s",
	    what, en(h->unlock_rc));
}

/* A thread that locks a mutex (blocking), notes it, and unlocks it. */
struct blocker {
	pthread_mutex_t *m;
	pthread_t t;
	pid_t tid;
	int got;
	int lock_rc, unlock_rc;
};

static void *
blocker_main(void *arg)
{
	struct blocker *b = arg;

	dropin_record_tid(&b->tid);
	b->lock_rc = pthread_mutex_lock(b->m);
	dropin_store(&b->got, 1);
	if (b->lock_rc == 0)
		b->unlock_rc = pthread_mutex_unlock(b->m);
	return NULL;
}

/* Starts a blocker on m, which the caller holds, and waits until it is
 * blocked. */
static void
blocker_start(struct blocker *b, pthread_mutex_t *m, const char *what)
{
	memset(b, 0, sizeof *b);
	b->m = m;
	b->t = spawn(blocker_main, b);
	cr_assert(dropin_wait_blocked(&b->tid),
	    "%s: the thread locking the held mutex did not block in 5 s", what);
	cr_assert(dropin_load(&b->got) == 0,
	    "%s: another thread took a mutex the caller holds", what);
}

/* After the caller released m: the blocker gets it and ends. */
static void
blocker_finish(struct blocker *b, const char *what)
{
	join_thread(b->t, what);
	cr_assert(b->got == 1 && b->lock_rc == 0 && b->unlock_rc == 0,
	    "%s: blocked locker: got %d, lock %s, unlock %s", what, b->got,
	    en(b->lock_rc), en(b->unlock_rc));
}

/* ------------------------------------------------------------------ */
/* 0. is the drop-in in effect?                                        */

TestSuite(dropin, .timeout = T_O);

Test(dropin, active_matches_DROPIN_EXPECT)
{
	const char *e = getenv("DROPIN_EXPECT");
	bool expect = e != NULL && *e == '1';
#ifdef DROPIN_LINKED
	expect = true; /* tests/test_dropin_linked: linked ahead of libc */
	e = "(linked)";
#endif

	cr_assert(dropin_active() == expect,
	    "pthread_mutex_lock comes from %s: the drop-in %s in effect, "
	    "but DROPIN_EXPECT=%s",
	    dropin_lock_provider(), dropin_active() ? "is" : "is not",
	    e != NULL ? e : "(unset)");
}

/* ------------------------------------------------------------------ */
/* 1. pthread_mutex: the kinds and their initialisations               */

enum mkind { MK_NORMAL, MK_ERRORCHECK, MK_RECURSIVE, MK_ADAPTIVE, MK_DEFAULT };
enum minit { MI_ATTR, MI_NULL, MI_STATIC, MI_ZERO };

struct mvar {
	const char *name;
	enum mkind kind;
	enum minit init;
};

enum {
	MV_NORMAL_ATTR,
	MV_NORMAL_STATIC,
	MV_NORMAL_ZERO,
	MV_ERRORCHECK_ATTR,
	MV_ERRORCHECK_STATIC,
	MV_RECURSIVE_ATTR,
	MV_RECURSIVE_STATIC,
	MV_ADAPTIVE_ATTR,
	MV_ADAPTIVE_STATIC,
	MV_DEFAULT_ATTR,
	MV_DEFAULT_NULL,
	NMVARS
};

static const struct mvar mvars[NMVARS] = {
	[MV_NORMAL_ATTR] = { "normal (settype NORMAL)", MK_NORMAL, MI_ATTR },
	[MV_NORMAL_STATIC] = { "normal (PTHREAD_MUTEX_INITIALIZER)", MK_NORMAL,
	    MI_STATIC },
	[MV_NORMAL_ZERO] = { "normal (zero-filled)", MK_NORMAL, MI_ZERO },
	[MV_ERRORCHECK_ATTR] = { "errorcheck (settype ERRORCHECK)",
	    MK_ERRORCHECK, MI_ATTR },
	[MV_ERRORCHECK_STATIC] = { "PTHREAD_ERRORCHECK_MUTEX_INITIALIZER_NP",
	    MK_ERRORCHECK, MI_STATIC },
	[MV_RECURSIVE_ATTR] = { "recursive (settype RECURSIVE)", MK_RECURSIVE,
	    MI_ATTR },
	[MV_RECURSIVE_STATIC] = { "PTHREAD_RECURSIVE_MUTEX_INITIALIZER_NP",
	    MK_RECURSIVE, MI_STATIC },
	[MV_ADAPTIVE_ATTR] = { "adaptive (settype ADAPTIVE_NP)", MK_ADAPTIVE,
	    MI_ATTR },
	[MV_ADAPTIVE_STATIC] = { "PTHREAD_ADAPTIVE_MUTEX_INITIALIZER_NP",
	    MK_ADAPTIVE, MI_STATIC },
	[MV_DEFAULT_ATTR] = { "default (settype DEFAULT)", MK_DEFAULT,
	    MI_ATTR },
	[MV_DEFAULT_NULL] = { "default (pthread_mutex_init with NULL)",
	    MK_DEFAULT, MI_NULL },
};

/* The variants with one per kind, for the cond tests. */
static const struct mvar *const mkinds[] = { &mvars[MV_NORMAL_ATTR],
	&mvars[MV_ERRORCHECK_ATTR], &mvars[MV_RECURSIVE_ATTR],
	&mvars[MV_ADAPTIVE_ATTR] };
#define NMKINDS (sizeof mkinds / sizeof mkinds[0])

static int
kind_type(enum mkind k)
{
	switch (k) {
	case MK_NORMAL:
		return PTHREAD_MUTEX_NORMAL;
	case MK_ERRORCHECK:
		return PTHREAD_MUTEX_ERRORCHECK;
	case MK_RECURSIVE:
		return PTHREAD_MUTEX_RECURSIVE;
	case MK_ADAPTIVE:
		return PTHREAD_MUTEX_ADAPTIVE_NP;
	case MK_DEFAULT:
		break;
	}
	return PTHREAD_MUTEX_DEFAULT;
}

static void
mx_make(pthread_mutex_t *m, const struct mvar *v)
{
	static const pthread_mutex_t s_normal = PTHREAD_MUTEX_INITIALIZER;
	static const pthread_mutex_t s_errorcheck =
	    PTHREAD_ERRORCHECK_MUTEX_INITIALIZER_NP;
	static const pthread_mutex_t s_recursive =
	    PTHREAD_RECURSIVE_MUTEX_INITIALIZER_NP;
	static const pthread_mutex_t s_adaptive =
	    PTHREAD_ADAPTIVE_MUTEX_INITIALIZER_NP;
	pthread_mutexattr_t a;
	int type = -1;

	switch (v->init) {
	case MI_ATTR:
		/* init must not depend on what the memory held before. */
		memset(m, 0x5a, sizeof *m);
		EXPECT(v->name, pthread_mutexattr_init(&a), 0);
		EXPECT(v->name,
		    pthread_mutexattr_settype(&a, kind_type(v->kind)), 0);
		EXPECT(v->name, pthread_mutexattr_gettype(&a, &type), 0);
		cr_assert(type == kind_type(v->kind), "%s: gettype gave %d",
		    v->name, type);
		EXPECT(v->name, pthread_mutex_init(m, &a), 0);
		EXPECT(v->name, pthread_mutexattr_destroy(&a), 0);
		break;
	case MI_NULL:
		memset(m, 0x5a, sizeof *m);
		EXPECT(v->name, pthread_mutex_init(m, NULL), 0);
		break;
	case MI_STATIC:
		switch (v->kind) {
		case MK_ERRORCHECK:
			*m = s_errorcheck;
			break;
		case MK_RECURSIVE:
			*m = s_recursive;
			break;
		case MK_ADAPTIVE:
			*m = s_adaptive;
			break;
		default:
			*m = s_normal;
			break;
		}
		break;
	case MI_ZERO:
		memset(m, 0, sizeof *m);
		break;
	}
}

/*
 * Lock, unlock and trylock, and what each kind does when the owner or
 * another thread misuses it.  m is unlocked on entry and on return.
 */
static void
check_mutex_semantics(pthread_mutex_t *m, enum mkind kind, const char *what)
{
	struct holder h;
	struct blocker b;
	struct timespec dl;

	EXPECT(what, pthread_mutex_lock(m), 0);
	EXPECT(what, in_other(op_trylock, m), EBUSY);
	EXPECT(what, pthread_mutex_unlock(m), 0);
	EXPECT(what, pthread_mutex_trylock(m), 0);
	EXPECT(what, in_other(op_trylock, m), EBUSY);
	EXPECT(what, pthread_mutex_unlock(m), 0);
	EXPECT(what, in_other(op_trylock, m), 0);

	holder_start(&h, m, what);
	EXPECT(what, pthread_mutex_trylock(m), EBUSY);
	holder_stop(&h, what);

	/* A thread blocked in lock gets the mutex when it is released. */
	EXPECT(what, pthread_mutex_lock(m), 0);
	blocker_start(&b, m, what);
	EXPECT(what, pthread_mutex_unlock(m), 0);
	blocker_finish(&b, what);

	switch (kind) {
	case MK_NORMAL:
	case MK_DEFAULT:
	case MK_ADAPTIVE:
		/* trylock by the owner of a non-recursive kind: EBUSY. */
		EXPECT(what, pthread_mutex_lock(m), 0);
		EXPECT(what, pthread_mutex_trylock(m), EBUSY);
		EXPECT(what, pthread_mutex_unlock(m), 0);
		break;

	case MK_ERRORCHECK:
		EXPECT(what, pthread_mutex_lock(m), 0);
		EXPECT(what, pthread_mutex_lock(m), EDEADLK);
		/* glibc's trylock does not check the owner: EBUSY. */
		EXPECT(what, pthread_mutex_trylock(m), EBUSY);
		dl = dropin_deadline(CLOCK_REALTIME, FAR_MS);
		EXPECT(what, pthread_mutex_timedlock(m, &dl), EDEADLK);
		dl = dropin_deadline(CLOCK_MONOTONIC, FAR_MS);
		EXPECT(what, pthread_mutex_clocklock(m, CLOCK_MONOTONIC, &dl),
		    EDEADLK);
		EXPECT(what, in_other(op_unlock, m), EPERM);
		EXPECT(what, pthread_mutex_unlock(m), 0);
		EXPECT(what, pthread_mutex_unlock(m), EPERM);
		holder_start(&h, m, what);
		EXPECT(what, pthread_mutex_unlock(m), EPERM);
		holder_stop(&h, what);
		break;

	case MK_RECURSIVE:
		EXPECT(what, pthread_mutex_lock(m), 0);
		EXPECT(what, pthread_mutex_lock(m), 0);
		EXPECT(what, pthread_mutex_lock(m), 0);
		EXPECT(what, pthread_mutex_trylock(m), 0);
		dl = dropin_deadline(CLOCK_REALTIME, FAR_MS);
		EXPECT(what, pthread_mutex_timedlock(m, &dl), 0);
		dl = dropin_deadline(CLOCK_MONOTONIC, FAR_MS);
		EXPECT(
		    what, pthread_mutex_clocklock(m, CLOCK_MONOTONIC, &dl), 0);
		/* Held 6 times. */
		EXPECT(what, in_other(op_trylock, m), EBUSY);
		EXPECT(what, in_other(op_unlock, m), EPERM);
		for (int i = 0; i < 5; i++) {
			EXPECT(what, pthread_mutex_unlock(m), 0);
			EXPECT(what, in_other(op_trylock, m), EBUSY);
		}
		/* Held once: a locker blocks until the count reaches 0. */
		blocker_start(&b, m, what);
		EXPECT(what, pthread_mutex_lock(m), 0);
		EXPECT(what, pthread_mutex_unlock(m), 0);
		cr_assert(
		    dropin_wait_blocked(&b.tid) && dropin_load(&b.got) == 0,
		    "%s: the locker got the mutex while the owner held it",
		    what);
		EXPECT(what, pthread_mutex_unlock(m), 0);
		blocker_finish(&b, what);
		EXPECT(what, pthread_mutex_unlock(m), EPERM);
		holder_start(&h, m, what);
		EXPECT(what, pthread_mutex_unlock(m), EPERM);
		holder_stop(&h, what);
		break;
	}
	EXPECT(what, in_other(op_trylock, m), 0);
}

TestSuite(mutex, .timeout = T_O);

Test(mutex, lock_unlock_trylock_each_kind_and_initialisation)
{
	static pthread_mutex_t m;

	for (size_t i = 0; i < NMVARS; i++) {
		mx_make(&m, &mvars[i]);
		check_mutex_semantics(&m, mvars[i].kind, mvars[i].name);
		EXPECT(mvars[i].name, pthread_mutex_destroy(&m), 0);
	}
}

/* Mutexes that only the compiler initialised (.data and .bss). */
static pthread_mutex_t g_normal = PTHREAD_MUTEX_INITIALIZER;
static pthread_mutex_t g_errorcheck = PTHREAD_ERRORCHECK_MUTEX_INITIALIZER_NP;
static pthread_mutex_t g_recursive = PTHREAD_RECURSIVE_MUTEX_INITIALIZER_NP;
static pthread_mutex_t g_adaptive = PTHREAD_ADAPTIVE_MUTEX_INITIALIZER_NP;
static pthread_mutex_t g_bss;

Test(mutex, static_storage_initialisers)
{
	check_mutex_semantics(
	    &g_normal, MK_NORMAL, "static PTHREAD_MUTEX_INITIALIZER");
	check_mutex_semantics(&g_errorcheck, MK_ERRORCHECK,
	    "static PTHREAD_ERRORCHECK_MUTEX_INITIALIZER_NP");
	check_mutex_semantics(&g_recursive, MK_RECURSIVE,
	    "static PTHREAD_RECURSIVE_MUTEX_INITIALIZER_NP");
	check_mutex_semantics(&g_adaptive, MK_ADAPTIVE,
	    "static PTHREAD_ADAPTIVE_MUTEX_INITIALIZER_NP");
	check_mutex_semantics(&g_bss, MK_NORMAL, "a mutex in .bss");
}

/* A timed lock that must block times out, no earlier than the deadline.
 * how: 0 timedlock, else clocklock on clk. */
static void
expect_lock_timeout(
    pthread_mutex_t *m, int how, clockid_t clk, const char *what)
{
	struct timespec dl, end;
	int rc;

	if (how == 0)
		clk = CLOCK_REALTIME;
	dl = dropin_deadline(clk, SHORT_MS);
	rc = how == 0 ? pthread_mutex_timedlock(m, &dl)
	              : pthread_mutex_clocklock(m, clk, &dl);
	end = dropin_now(clk);
	cr_assert(rc == ETIMEDOUT,
	    "%s: %s (clock %d) returned %s, expected "
	    "ETIMEDOUT",
	    what, how == 0 ? "timedlock" : "clocklock", (int)clk, en(rc));
	cr_assert(dropin_ts_ge(end, dl),
	    "%s: timed out %.3f ms before the deadline", what,
	    dropin_ts_diff_ns(end, dl) / 1e6);
}

static void
check_mutex_timed(pthread_mutex_t *m, const char *what)
{
	struct holder h;
	struct timespec ts;

	/* Free: glibc does not look at the deadline when it need not block
	 * (pthread_mutex_timedlock.c: "We must not check ABSTIME here"). */
	ts = with_nsec(dropin_now(CLOCK_REALTIME), 1000000000L);
	EXPECT(what, pthread_mutex_timedlock(m, &ts), 0);
	EXPECT(what, pthread_mutex_unlock(m), 0);
	ts = with_nsec(dropin_now(CLOCK_MONOTONIC), 1000000000L);
	EXPECT(what, pthread_mutex_clocklock(m, CLOCK_MONOTONIC, &ts), 0);
	EXPECT(what, pthread_mutex_unlock(m), 0);
	ts = with_nsec(dropin_now(CLOCK_REALTIME), -1);
	EXPECT(what, pthread_mutex_clocklock(m, CLOCK_REALTIME, &ts), 0);
	EXPECT(what, pthread_mutex_unlock(m), 0);
	EXPECT(what, pthread_mutex_timedlock(m, &NEGATIVE_TS), 0);
	EXPECT(what, pthread_mutex_unlock(m), 0);
	ts = dropin_deadline(CLOCK_MONOTONIC, -1000);
	EXPECT(what, pthread_mutex_clocklock(m, CLOCK_MONOTONIC, &ts), 0);
	EXPECT(what, pthread_mutex_unlock(m), 0);
	/* ... but the clock is checked first, free or not. */
	ts = dropin_deadline(CLOCK_MONOTONIC, FAR_MS);
	EXPECT(what, pthread_mutex_clocklock(m, CLOCK_PROCESS_CPUTIME_ID, &ts),
	    EINVAL);
	EXPECT(what, in_other(op_trylock, m), 0);

	/* Held by another thread. */
	holder_start(&h, m, what);
	expect_lock_timeout(m, 0, CLOCK_REALTIME, what);
	expect_lock_timeout(m, 1, CLOCK_MONOTONIC, what);
	expect_lock_timeout(m, 1, CLOCK_REALTIME, what);
	ts = dropin_deadline(CLOCK_REALTIME, -1000);
	EXPECT(what, pthread_mutex_timedlock(m, &ts), ETIMEDOUT);
	ts = with_nsec(dropin_deadline(CLOCK_REALTIME, FAR_MS), 1000000000L);
	EXPECT(what, pthread_mutex_timedlock(m, &ts), EINVAL);
	ts = with_nsec(dropin_deadline(CLOCK_REALTIME, FAR_MS), -1);
	EXPECT(what, pthread_mutex_timedlock(m, &ts), EINVAL);
	ts = with_nsec(dropin_deadline(CLOCK_MONOTONIC, FAR_MS), 1000000000L);
	EXPECT(what, pthread_mutex_clocklock(m, CLOCK_MONOTONIC, &ts), EINVAL);
	/* futex-internal.c: a negative tv_sec is a deadline in the past. */
	EXPECT(what, pthread_mutex_timedlock(m, &NEGATIVE_TS), ETIMEDOUT);
	EXPECT(what, pthread_mutex_clocklock(m, CLOCK_MONOTONIC, &NEGATIVE_TS),
	    ETIMEDOUT);
	ts = dropin_deadline(CLOCK_MONOTONIC, FAR_MS);
	EXPECT(what, pthread_mutex_clocklock(m, CLOCK_PROCESS_CPUTIME_ID, &ts),
	    EINVAL);
	holder_stop(&h, what);
	EXPECT(what, in_other(op_trylock, m), 0);
}

Test(mutex, timedlock_and_clocklock_each_kind_and_initialisation)
{
	static pthread_mutex_t m;

	for (size_t i = 0; i < NMVARS; i++) {
		mx_make(&m, &mvars[i]);
		check_mutex_timed(&m, mvars[i].name);
		EXPECT(mvars[i].name, pthread_mutex_destroy(&m), 0);
	}
}

Test(mutex, destroy_busy_while_locked)
{
	static pthread_mutex_t m;
	struct holder h;

	for (size_t i = 0; i < NMVARS; i++) {
		const char *what = mvars[i].name;
		mx_make(&m, &mvars[i]);
		EXPECT(what, pthread_mutex_lock(&m), 0);
		EXPECT(what, pthread_mutex_destroy(&m), EBUSY);
		EXPECT(what, pthread_mutex_unlock(&m), 0);
		holder_start(&h, &m, what);
		EXPECT(what, pthread_mutex_destroy(&m), EBUSY);
		holder_stop(&h, what);
		if (mvars[i].kind == MK_RECURSIVE) {
			EXPECT(what, pthread_mutex_lock(&m), 0);
			EXPECT(what, pthread_mutex_lock(&m), 0);
			EXPECT(what, pthread_mutex_unlock(&m), 0);
			EXPECT(what, pthread_mutex_destroy(&m), EBUSY);
			EXPECT(what, pthread_mutex_unlock(&m), 0);
		}
		EXPECT(what, pthread_mutex_destroy(&m), 0);
		/* A destroyed mutex may be initialised again. */
		mx_make(&m, &mvars[i]);
		EXPECT(what, pthread_mutex_lock(&m), 0);
		EXPECT(what, pthread_mutex_unlock(&m), 0);
		EXPECT(what, pthread_mutex_destroy(&m), 0);
	}
}

Test(mutex, consistent_and_prioceiling_are_einval_on_plain_kinds)
{
	static pthread_mutex_t m;

	for (size_t i = 0; i < NMVARS; i++) {
		const char *what = mvars[i].name;
		int ceiling = 12345, old = 12345;

		mx_make(&m, &mvars[i]);
		/* pthread_mutex_consistent.c: not robust -> EINVAL. */
		EXPECT(what, pthread_mutex_consistent(&m), EINVAL);
		EXPECT(what, pthread_mutex_lock(&m), 0);
		EXPECT(what, pthread_mutex_consistent(&m), EINVAL);
		EXPECT(what, pthread_mutex_unlock(&m), 0);
		/* pthread_mutex_[gs]etprioceiling.c: not PRIO_PROTECT ->
		 * EINVAL, nothing stored. */
		EXPECT(
		    what, pthread_mutex_getprioceiling(&m, &ceiling), EINVAL);
		cr_assert(ceiling == 12345, "%s: getprioceiling stored %d",
		    what, ceiling);
		EXPECT(what, pthread_mutex_setprioceiling(&m, 1, &old), EINVAL);
		cr_assert(
		    old == 12345, "%s: setprioceiling stored %d", what, old);
		EXPECT(what, in_other(op_trylock, &m), 0);
		EXPECT(what, pthread_mutex_destroy(&m), 0);
	}
}

/* ------------------------------------------------------------------ */
/* 1b. process-shared, robust, PRIO_INHERIT and PRIO_PROTECT mutexes   */

enum mattr { MA_PSHARED = 1, MA_ROBUST = 2, MA_INHERIT = 4, MA_PROTECT = 8 };

static void
mx_make_attr(pthread_mutex_t *m, int flags, const char *what)
{
	pthread_mutexattr_t a;
	int v = -1;

	memset(m, 0x5a, sizeof *m);
	EXPECT(what, pthread_mutexattr_init(&a), 0);
	if (flags & MA_PSHARED) {
		EXPECT(what,
		    pthread_mutexattr_setpshared(&a, PTHREAD_PROCESS_SHARED),
		    0);
		EXPECT(what, pthread_mutexattr_getpshared(&a, &v), 0);
		cr_assert(
		    v == PTHREAD_PROCESS_SHARED, "%s: getpshared %d", what, v);
	}
	if (flags & MA_ROBUST) {
		EXPECT(what,
		    pthread_mutexattr_setrobust(&a, PTHREAD_MUTEX_ROBUST), 0);
		EXPECT(what, pthread_mutexattr_getrobust(&a, &v), 0);
		cr_assert(
		    v == PTHREAD_MUTEX_ROBUST, "%s: getrobust %d", what, v);
	}
	if (flags & (MA_INHERIT | MA_PROTECT)) {
		int proto = (flags & MA_INHERIT) ? PTHREAD_PRIO_INHERIT
		                                 : PTHREAD_PRIO_PROTECT;
		EXPECT(what, pthread_mutexattr_setprotocol(&a, proto), 0);
		EXPECT(what, pthread_mutexattr_getprotocol(&a, &v), 0);
		cr_assert(v == proto, "%s: getprotocol %d", what, v);
	}
	EXPECT(what, pthread_mutex_init(m, &a), 0);
	EXPECT(what, pthread_mutexattr_destroy(&a), 0);
}

/* Lock, unlock, trylock and timedlock; m is free on entry and return. */
static void
check_attr_mutex_basics(pthread_mutex_t *m, const char *what)
{
	struct holder h;
	struct blocker b;
	struct timespec dl;

	EXPECT(what, pthread_mutex_lock(m), 0);
	EXPECT(what, in_other(op_trylock, m), EBUSY);
	EXPECT(what, pthread_mutex_unlock(m), 0);
	EXPECT(what, pthread_mutex_trylock(m), 0);
	EXPECT(what, pthread_mutex_unlock(m), 0);
	dl = dropin_deadline(CLOCK_REALTIME, FAR_MS);
	EXPECT(what, pthread_mutex_timedlock(m, &dl), 0);
	EXPECT(what, in_other(op_trylock, m), EBUSY);
	EXPECT(what, pthread_mutex_unlock(m), 0);

	holder_start(&h, m, what);
	EXPECT(what, pthread_mutex_trylock(m), EBUSY);
	expect_lock_timeout(m, 0, CLOCK_REALTIME, what);
	holder_stop(&h, what);

	EXPECT(what, pthread_mutex_lock(m), 0);
	blocker_start(&b, m, what);
	EXPECT(what, pthread_mutex_unlock(m), 0);
	blocker_finish(&b, what);
	EXPECT(what, in_other(op_trylock, m), 0);
}

TestSuite(mutex_attr, .timeout = T_O);

Test(mutex_attr, process_shared_basics)
{
	static pthread_mutex_t m;

	mx_make_attr(&m, MA_PSHARED, "process-shared");
	check_attr_mutex_basics(&m, "process-shared");
	EXPECT("process-shared", pthread_mutex_destroy(&m), 0);
}

Test(mutex_attr, prio_inherit_basics)
{
	static pthread_mutex_t m;
	struct timespec dl;

	mx_make_attr(&m, MA_INHERIT, "PRIO_INHERIT");
	check_attr_mutex_basics(&m, "PRIO_INHERIT");
	/* clocklock on CLOCK_MONOTONIC: FUTEX_LOCK_PI2. */
	dl = dropin_deadline(CLOCK_MONOTONIC, FAR_MS);
	EXPECT("PRIO_INHERIT",
	    pthread_mutex_clocklock(&m, CLOCK_MONOTONIC, &dl), 0);
	EXPECT("PRIO_INHERIT", pthread_mutex_unlock(&m), 0);
	EXPECT("PRIO_INHERIT", pthread_mutex_destroy(&m), 0);
}

Test(mutex_attr, robust_basics)
{
	static pthread_mutex_t m;
	static const int variants[] = { MA_ROBUST, MA_ROBUST | MA_PSHARED };

	for (size_t i = 0; i < 2; i++) {
		const char *what = i == 0 ? "robust" : "robust process-shared";
		mx_make_attr(&m, variants[i], what);
		check_attr_mutex_basics(&m, what);
		/* pthread_mutex_unlock.c checks the owner of a robust mutex. */
		EXPECT(what, pthread_mutex_unlock(&m), EPERM);
		EXPECT(what, pthread_mutex_lock(&m), 0);
		EXPECT(what, in_other(op_unlock, &m), EPERM);
		EXPECT(what, pthread_mutex_consistent(&m), EINVAL);
		EXPECT(what, pthread_mutex_unlock(&m), 0);
		EXPECT(what, pthread_mutex_destroy(&m), 0);
	}
}

/* A thread that locks m and ends without unlocking it. */
static void *
die_holding_main(void *arg)
{
	pthread_mutex_t *m = arg;

	return (void *)(intptr_t)pthread_mutex_lock(m);
}

static void
die_holding(pthread_mutex_t *m, const char *what)
{
	void *rc = join_thread(spawn(die_holding_main, m), what);

	cr_assert(rc == 0, "%s: the owner's lock returned %s", what,
	    en((int)(intptr_t)rc));
}

Test(mutex_attr, robust_owner_death_then_consistent)
{
	static pthread_mutex_t m;
	static const int variants[] = { MA_ROBUST, MA_ROBUST | MA_PSHARED };
	struct timespec dl;

	for (size_t i = 0; i < 2; i++) {
		const char *what = i == 0 ? "robust" : "robust process-shared";
		mx_make_attr(&m, variants[i], what);

		die_holding(&m, what);
		EXPECT(what, pthread_mutex_lock(&m), EOWNERDEAD);
		EXPECT(what, in_other(op_trylock, &m), EBUSY);
		EXPECT(what, pthread_mutex_consistent(&m), 0);
		EXPECT(what, pthread_mutex_unlock(&m), 0);
		EXPECT(what, pthread_mutex_lock(&m), 0);
		EXPECT(what, pthread_mutex_unlock(&m), 0);

		die_holding(&m, what);
		EXPECT(what, pthread_mutex_trylock(&m), EOWNERDEAD);
		EXPECT(what, pthread_mutex_consistent(&m), 0);
		EXPECT(what, pthread_mutex_unlock(&m), 0);

		die_holding(&m, what);
		dl = dropin_deadline(CLOCK_REALTIME, FAR_MS);
		EXPECT(what, pthread_mutex_timedlock(&m, &dl), EOWNERDEAD);
		EXPECT(what, pthread_mutex_consistent(&m), 0);
		EXPECT(what, pthread_mutex_unlock(&m), 0);

		check_attr_mutex_basics(&m, what);
		EXPECT(what, pthread_mutex_destroy(&m), 0);
	}
}

/* The owner of a robust mutex: holds it until told to end, then ends
 * without unlocking it. */
struct robust_owner {
	pthread_mutex_t *m;
	int held, die;
	int lock_rc;
};

static void *
robust_owner_main(void *arg)
{
	struct robust_owner *o = arg;

	o->lock_rc = pthread_mutex_lock(o->m);
	dropin_store(&o->held, 1);
	dropin_await_ge(&o->die, 1);
	return NULL;
}

struct robust_waiter {
	pthread_mutex_t *m;
	pid_t tid;
	int lock_rc, consistent_rc, unlock_rc;
};

static void *
robust_waiter_main(void *arg)
{
	struct robust_waiter *w = arg;

	dropin_record_tid(&w->tid);
	w->lock_rc = pthread_mutex_lock(w->m);
	if (w->lock_rc == EOWNERDEAD)
		w->consistent_rc = pthread_mutex_consistent(w->m);
	if (w->lock_rc == 0 || w->lock_rc == EOWNERDEAD)
		w->unlock_rc = pthread_mutex_unlock(w->m);
	return NULL;
}

Test(mutex_attr, robust_waiter_gets_eownerdead_when_the_owner_ends)
{
	static pthread_mutex_t m;
	struct robust_owner o = { &m, 0, 0, -1 };
	struct robust_waiter w = { &m, 0, -1, -1, -1 };
	const char *what = "robust, blocked waiter";
	pthread_t ot, wt;

	mx_make_attr(&m, MA_ROBUST, what);
	ot = spawn(robust_owner_main, &o);
	cr_assert(dropin_await_ge(&o.held, 1), "the owner did not lock");
	cr_assert(
	    o.lock_rc == 0, "the owner's lock returned %s", en(o.lock_rc));
	wt = spawn(robust_waiter_main, &w);
	cr_assert(dropin_wait_blocked(&w.tid), "the waiter did not block");
	dropin_store(&o.die, 1);
	join_thread(ot, "owner");
	join_thread(wt, "waiter");
	cr_assert(w.lock_rc == EOWNERDEAD,
	    "the waiter's lock returned %s, expected EOWNERDEAD",
	    en(w.lock_rc));
	cr_assert(w.consistent_rc == 0 && w.unlock_rc == 0,
	    "the waiter's consistent returned %s, unlock %s",
	    en(w.consistent_rc), en(w.unlock_rc));
	EXPECT(what, pthread_mutex_lock(&m), 0);
	EXPECT(what, pthread_mutex_unlock(&m), 0);
	EXPECT(what, pthread_mutex_destroy(&m), 0);
}

Test(mutex_attr, robust_unlocked_without_consistent_is_notrecoverable)
{
	static pthread_mutex_t m;
	const char *what = "robust, not made consistent";
	struct timespec dl;

	mx_make_attr(&m, MA_ROBUST, what);
	die_holding(&m, what);
	EXPECT(what, pthread_mutex_lock(&m), EOWNERDEAD);
	EXPECT(what, pthread_mutex_unlock(&m), 0);
	EXPECT(what, pthread_mutex_lock(&m), ENOTRECOVERABLE);
	EXPECT(what, pthread_mutex_lock(&m), ENOTRECOVERABLE);
	dl = dropin_deadline(CLOCK_REALTIME, FAR_MS);
	EXPECT(what, pthread_mutex_timedlock(&m, &dl), ENOTRECOVERABLE);
	EXPECT(what, in_other(op_lock, &m), ENOTRECOVERABLE);
	/* Last: glibc 2.36's trylock returns ENOTRECOVERABLE but leaves the
	 * mutex locked (pthread_mutex_trylock.c unlocks only "if (oldval ==
	 * id)", where its CAS from 0 succeeded). */
	EXPECT(what, pthread_mutex_trylock(&m), ENOTRECOVERABLE);
	EXPECT(what, pthread_mutex_destroy(&m), 0);
}

/*
 * PRIO_PROTECT.  glibc raises a thread that takes such a mutex to the
 * ceiling (at least sched_get_priority_min(SCHED_FIFO), 1) with
 * sched_setscheduler under the thread's own policy; under SCHED_OTHER the
 * kernel refuses a priority other than 0, so the first PRIO_PROTECT lock
 * or trylock of every thread returns EINVAL (nptl/tpp.c,
 * __pthread_tpp_change_priority).  The thread's ceiling bookkeeping is
 * raised all the same, and from then on its locks of the mutex succeed.
 */
struct pp_other {
	pthread_mutex_t *m;
	int first_rc, try_rc, timed_rc;
	int lock_rc, unlock_rc;
};

static void *
pp_contender_main(void *arg)
{
	struct pp_other *p = arg;
	struct timespec dl;

	p->first_rc = pthread_mutex_trylock(p->m);
	p->try_rc = pthread_mutex_trylock(p->m);
	dl = dropin_deadline(CLOCK_REALTIME, SHORT_MS);
	p->timed_rc = pthread_mutex_timedlock(p->m, &dl);
	return NULL;
}

static void *
pp_fresh_main(void *arg)
{
	struct pp_other *p = arg;

	p->first_rc = pthread_mutex_lock(p->m);
	p->lock_rc = pthread_mutex_lock(p->m);
	if (p->lock_rc == 0)
		p->unlock_rc = pthread_mutex_unlock(p->m);
	return NULL;
}

Test(mutex_attr, prio_protect_basics)
{
	static pthread_mutex_t m;
	const char *what = "PRIO_PROTECT";
	struct pp_other c = { &m, -1, -1, -1, -1, -1 };
	struct pp_other f = { &m, -1, -1, -1, -1, -1 };
	int ceiling = -1, policy = sched_getscheduler(0);
	pthread_mutexattr_t a;

	cr_assert(policy == SCHED_OTHER || policy == SCHED_BATCH ||
	        policy == SCHED_IDLE,
	    "this test expects a non-real-time policy, not %d", policy);
	mx_make_attr(&m, MA_PROTECT, what);
	EXPECT(what, pthread_mutex_getprioceiling(&m, &ceiling), 0);
	cr_assert(ceiling == sched_get_priority_min(SCHED_FIFO),
	    "default ceiling %d, expected %d", ceiling,
	    sched_get_priority_min(SCHED_FIFO));

	EXPECT(what, pthread_mutex_lock(&m), EINVAL); /* see above */
	EXPECT(what, pthread_mutex_lock(&m), 0);
	EXPECT(what, pthread_mutex_trylock(&m), EBUSY);
	join_thread(spawn(pp_contender_main, &c), what);
	cr_assert(c.first_rc == EINVAL && c.try_rc == EBUSY &&
	        c.timed_rc == ETIMEDOUT,
	    "contender: first trylock %s (EINVAL), trylock %s (EBUSY), "
	    "timedlock %s (ETIMEDOUT)",
	    en(c.first_rc), en(c.try_rc), en(c.timed_rc));
	EXPECT(what, pthread_mutex_unlock(&m), 0);
	join_thread(spawn(pp_fresh_main, &f), what);
	cr_assert(f.first_rc == EINVAL && f.lock_rc == 0 && f.unlock_rc == 0,
	    "another thread: first lock %s (EINVAL), lock %s, unlock %s",
	    en(f.first_rc), en(f.lock_rc), en(f.unlock_rc));
	EXPECT(what, pthread_mutex_trylock(&m), 0);
	EXPECT(what, pthread_mutex_unlock(&m), 0);
	EXPECT(what, pthread_mutex_consistent(&m), EINVAL);
	EXPECT(what, pthread_mutex_destroy(&m), 0);

	/* pthread_mutex_init.c: no robust PRIO_PROTECT mutexes. */
	EXPECT(what, pthread_mutexattr_init(&a), 0);
	EXPECT(
	    what, pthread_mutexattr_setprotocol(&a, PTHREAD_PRIO_PROTECT), 0);
	EXPECT(what, pthread_mutexattr_setrobust(&a, PTHREAD_MUTEX_ROBUST), 0);
	EXPECT(what, pthread_mutex_init(&m, &a), ENOTSUP);
	EXPECT(what, pthread_mutexattr_destroy(&a), 0);
}

/* ------------------------------------------------------------------ */
/* 2. pthread_cond                                                     */

enum cinit { CI_NULL, CI_ATTR, CI_RT, CI_MONO, CI_STATIC, CI_ZERO };

struct cvar {
	const char *name;
	enum cinit init;
	clockid_t clk; /* the clock of its timedwait */
};

static const struct cvar cvars[] = {
	{ "cond (init with NULL)", CI_NULL, CLOCK_REALTIME },
	{ "cond (init with a default attr)", CI_ATTR, CLOCK_REALTIME },
	{ "cond (setclock CLOCK_REALTIME)", CI_RT, CLOCK_REALTIME },
	{ "cond (setclock CLOCK_MONOTONIC)", CI_MONO, CLOCK_MONOTONIC },
	{ "cond (PTHREAD_COND_INITIALIZER)", CI_STATIC, CLOCK_REALTIME },
	{ "cond (zero-filled)", CI_ZERO, CLOCK_REALTIME },
};
#define NCVARS (sizeof cvars / sizeof cvars[0])
#define CV_DEFAULT (&cvars[0]) /* init with NULL */
#define CV_MONO (&cvars[3])    /* setclock CLOCK_MONOTONIC */

static void
cv_make(pthread_cond_t *c, const struct cvar *v)
{
	static const pthread_cond_t s_init = PTHREAD_COND_INITIALIZER;
	pthread_condattr_t a;
	clockid_t clk = -1;

	switch (v->init) {
	case CI_NULL:
		memset(c, 0x5a, sizeof *c);
		EXPECT(v->name, pthread_cond_init(c, NULL), 0);
		break;
	case CI_ATTR:
	case CI_RT:
	case CI_MONO:
		memset(c, 0x5a, sizeof *c);
		EXPECT(v->name, pthread_condattr_init(&a), 0);
		if (v->init != CI_ATTR)
			EXPECT(
			    v->name, pthread_condattr_setclock(&a, v->clk), 0);
		EXPECT(v->name, pthread_condattr_getclock(&a, &clk), 0);
		cr_assert(
		    clk == v->clk, "%s: getclock gave %d", v->name, (int)clk);
		EXPECT(v->name, pthread_cond_init(c, &a), 0);
		EXPECT(v->name, pthread_condattr_destroy(&a), 0);
		break;
	case CI_STATIC:
		*c = s_init;
		break;
	case CI_ZERO:
		memset(c, 0, sizeof *c);
		break;
	}
}

enum wait_how { W_WAIT, W_TIMED, W_CLOCK_MONO, W_CLOCK_RT };

/* One wait of the kind how, with a deadline that is never reached (on
 * cclk, the cond's clock, for timedwait). */
static int
cwait(pthread_cond_t *c, pthread_mutex_t *m, enum wait_how how, clockid_t cclk)
{
	struct timespec dl;

	switch (how) {
	case W_WAIT:
		break;
	case W_TIMED:
		dl = dropin_deadline(cclk, FAR_MS);
		return pthread_cond_timedwait(c, m, &dl);
	case W_CLOCK_MONO:
		dl = dropin_deadline(CLOCK_MONOTONIC, FAR_MS);
		return pthread_cond_clockwait(c, m, CLOCK_MONOTONIC, &dl);
	case W_CLOCK_RT:
		dl = dropin_deadline(CLOCK_REALTIME, FAR_MS);
		return pthread_cond_clockwait(c, m, CLOCK_REALTIME, &dl);
	}
	return pthread_cond_wait(c, m);
}

/* A thread that waits on c (with m) until *go. */
struct cwaiter {
	pthread_cond_t *c;
	pthread_mutex_t *m;
	const int *go;
	enum wait_how how;
	clockid_t cclk;
	enum mkind kind;
	pthread_t t;
	pid_t tid;
	int waiting;   /* set with m held, before the first wait */
	int woke;      /* the predicate held */
	int lock_rc;   /* the first lock */
	int wait_rc;   /* the first wait that failed, or 0 */
	int relock_rc; /* errorcheck: lock again once woken (EDEADLK) */
	int unlock_rc;
};

static void *
cwaiter_main(void *arg)
{
	struct cwaiter *w = arg;

	w->lock_rc = pthread_mutex_lock(w->m);
	if (w->lock_rc != 0)
		return NULL;
	dropin_record_tid(&w->tid);
	dropin_store(&w->waiting, 1);
	while (!dropin_load(w->go)) {
		int rc = cwait(w->c, w->m, w->how, w->cclk);
		if (rc != 0) {
			w->wait_rc = rc;
			break;
		}
	}
	dropin_store(&w->woke, w->wait_rc == 0);
	/* The wait returned with the mutex held: for an errorcheck mutex,
	 * locking it again tells that it is ours. */
	if (w->kind == MK_ERRORCHECK)
		w->relock_rc = pthread_mutex_lock(w->m);
	w->unlock_rc = pthread_mutex_unlock(w->m);
	return NULL;
}

/* Starts a waiter and returns once it is blocked in the wait. */
static void
cwaiter_start(struct cwaiter *w, pthread_cond_t *c, pthread_mutex_t *m,
    const int *go, enum wait_how how, clockid_t cclk, enum mkind kind,
    const char *what)
{
	memset(w, 0, sizeof *w);
	w->c = c;
	w->m = m;
	w->go = go;
	w->how = how;
	w->cclk = cclk;
	w->kind = kind;
	w->t = spawn(cwaiter_main, w);
	cr_assert(dropin_await_ge(&w->waiting, 1),
	    "%s: the waiter did not lock the mutex in 5 s (lock %s)", what,
	    en(w->lock_rc));
	cr_assert(dropin_wait_blocked(&w->tid),
	    "%s: the waiter did not block in the wait in 5 s", what);
}

static void
cwaiter_finish(struct cwaiter *w, const char *what)
{
	join_thread(w->t, what);
	cr_assert(w->woke == 1 && w->wait_rc == 0,
	    "%s: waiter (how %d): woke %d, wait returned %s", what, w->how,
	    w->woke, en(w->wait_rc));
	if (w->kind == MK_ERRORCHECK)
		cr_assert(w->relock_rc == EDEADLK,
		    "%s: the woken waiter's relock returned %s: it did not "
		    "hold the mutex",
		    what, en(w->relock_rc));
	cr_assert(w->unlock_rc == 0, "%s: the woken waiter's unlock: %s", what,
	    en(w->unlock_rc));
}

/* Sets *go under m and signals (or broadcasts) c. */
static void
release_waiters(pthread_cond_t *c, pthread_mutex_t *m, int *go, bool broadcast,
    const char *what)
{
	EXPECT(what, pthread_mutex_lock(m), 0);
	dropin_store(go, 1);
	if (broadcast)
		EXPECT(what, pthread_cond_broadcast(c), 0);
	else
		EXPECT(what, pthread_cond_signal(c), 0);
	EXPECT(what, pthread_mutex_unlock(m), 0);
}

/* A timedwait (how W_TIMED, on the cond's clock cclk) or clockwait that
 * times out: ETIMEDOUT, not before the deadline, with the mutex held. */
static void
expect_wait_timeout(pthread_cond_t *c, pthread_mutex_t *m, enum wait_how how,
    clockid_t cclk, enum mkind kind, const char *what)
{
	clockid_t clk = how == W_TIMED ? cclk
	    : how == W_CLOCK_MONO      ? CLOCK_MONOTONIC
	                               : CLOCK_REALTIME;
	struct timespec dl, end;
	int rc;

	EXPECT(what, pthread_mutex_lock(m), 0);
	dl = dropin_deadline(clk, SHORT_MS);
	rc = how == W_TIMED ? pthread_cond_timedwait(c, m, &dl)
	                    : pthread_cond_clockwait(c, m, clk, &dl);
	end = dropin_now(clk);
	cr_assert(rc == ETIMEDOUT, "%s: %s (clock %d) returned %s", what,
	    how == W_TIMED ? "timedwait" : "clockwait", (int)clk, en(rc));
	cr_assert(dropin_ts_ge(end, dl),
	    "%s: the wait timed out %.3f ms before its deadline", what,
	    dropin_ts_diff_ns(end, dl) / 1e6);
	EXPECT(what, in_other(op_trylock, m), EBUSY);
	if (kind == MK_ERRORCHECK)
		EXPECT(what, pthread_mutex_lock(m), EDEADLK);
	EXPECT(what, pthread_mutex_unlock(m), 0);
}

TestSuite(cond, .timeout = T_O);

Test(cond, each_initialisation_signal_broadcast_and_timeout)
{
	static pthread_cond_t c;
	static pthread_mutex_t m = PTHREAD_MUTEX_INITIALIZER;
	static int go;
	struct cwaiter w;

	for (size_t i = 0; i < NCVARS; i++) {
		const struct cvar *v = &cvars[i];
		cv_make(&c, v);
		EXPECT(v->name, pthread_cond_signal(&c), 0);
		EXPECT(v->name, pthread_cond_broadcast(&c), 0);

		go = 0;
		cwaiter_start(
		    &w, &c, &m, &go, W_WAIT, v->clk, MK_NORMAL, v->name);
		release_waiters(&c, &m, &go, false, v->name);
		cwaiter_finish(&w, v->name);

		go = 0;
		cwaiter_start(
		    &w, &c, &m, &go, W_TIMED, v->clk, MK_NORMAL, v->name);
		release_waiters(&c, &m, &go, true, v->name);
		cwaiter_finish(&w, v->name);

		expect_wait_timeout(
		    &c, &m, W_TIMED, v->clk, MK_NORMAL, v->name);
		EXPECT(v->name, pthread_cond_signal(&c), 0);
		EXPECT(v->name, pthread_cond_destroy(&c), 0);
	}
}

/* While a thread waits on a condition variable with the mutex, glibc's
 * pthread_mutex_destroy says EBUSY (the waiter stays counted in the
 * mutex's __nusers through the wait), though nobody holds it; so must the
 * drop-in, whatever the kind.  After the wait, destroy succeeds. */
Test(mutex, destroy_busy_while_a_condition_waiter_uses_it)
{
	static pthread_cond_t c = PTHREAD_COND_INITIALIZER;
	static pthread_mutex_t m;
	static int go;
	struct cwaiter w;

	for (size_t i = 0; i < NMVARS; i++) {
		const struct mvar *v = &mvars[i];
		mx_make(&m, v);
		go = 0;
		cwaiter_start(
		    &w, &c, &m, &go, W_WAIT, CLOCK_REALTIME, v->kind, v->name);
		EXPECT(v->name, in_other(op_trylock, &m), 0);
		EXPECT(v->name, pthread_mutex_destroy(&m), EBUSY);
		release_waiters(&c, &m, &go, false, v->name);
		cwaiter_finish(&w, v->name);
		EXPECT(v->name, pthread_mutex_destroy(&m), 0);
	}
}

Test(cond, wait_signal_broadcast_with_each_mutex_kind)
{
	static pthread_cond_t c = PTHREAD_COND_INITIALIZER;
	static pthread_mutex_t m;
	static int go;
	struct cwaiter w[3];
	static const enum wait_how hows[] = { W_WAIT, W_TIMED, W_CLOCK_MONO,
		W_CLOCK_RT };

	for (size_t i = 0; i < NMVARS; i++) {
		const struct mvar *v = &mvars[i];
		mx_make(&m, v);
		/* One waiter of each kind of wait, signalled. */
		for (size_t h = 0; h < 4; h++) {
			go = 0;
			cwaiter_start(&w[0], &c, &m, &go, hows[h],
			    CLOCK_REALTIME, v->kind, v->name);
			release_waiters(&c, &m, &go, false, v->name);
			cwaiter_finish(&w[0], v->name);
		}
		/* Three waiters, one broadcast. */
		go = 0;
		for (int k = 0; k < 3; k++)
			cwaiter_start(&w[k], &c, &m, &go, hows[k],
			    CLOCK_REALTIME, v->kind, v->name);
		release_waiters(&c, &m, &go, true, v->name);
		for (int k = 0; k < 3; k++)
			cwaiter_finish(&w[k], v->name);
		EXPECT(v->name, in_other(op_trylock, &m), 0);
		EXPECT(v->name, pthread_mutex_destroy(&m), 0);
	}
}

Test(cond, timedwait_and_clockwait_time_out_on_both_clocks)
{
	static pthread_cond_t c;
	static pthread_mutex_t m;
	const struct cvar *cv[2] = { CV_DEFAULT, CV_MONO };

	for (size_t j = 0; j < 2; j++) {
		cv_make(&c, cv[j]);
		for (size_t i = 0; i < NMKINDS; i++) {
			const struct mvar *v = mkinds[i];
			char what[160];
			snprintf(
			    what, sizeof what, "%s, %s", cv[j]->name, v->name);
			mx_make(&m, v);
			expect_wait_timeout(
			    &c, &m, W_TIMED, cv[j]->clk, v->kind, what);
			expect_wait_timeout(
			    &c, &m, W_CLOCK_MONO, cv[j]->clk, v->kind, what);
			expect_wait_timeout(
			    &c, &m, W_CLOCK_RT, cv[j]->clk, v->kind, what);
			EXPECT(what, pthread_mutex_destroy(&m), 0);
		}
		EXPECT(cv[j]->name, pthread_cond_destroy(&c), 0);
	}
}

/* Mutex m is held by the caller: check that it still is. */
static void
expect_held(pthread_mutex_t *m, enum mkind kind, const char *what)
{
	EXPECT(what, in_other(op_trylock, m), EBUSY);
	if (kind == MK_ERRORCHECK)
		EXPECT(what, pthread_mutex_lock(m), EDEADLK);
}

Test(cond, invalid_deadlines_and_clocks)
{
	static pthread_cond_t c;
	static pthread_mutex_t m;
	static const clockid_t bad_clocks[] = { CLOCK_PROCESS_CPUTIME_ID,
		CLOCK_THREAD_CPUTIME_ID, CLOCK_MONOTONIC_RAW, CLOCK_BOOTTIME };
	const struct cvar *cv[2] = { CV_DEFAULT, CV_MONO };
	struct timespec ts, start;

	for (size_t j = 0; j < 2; j++) {
		cv_make(&c, cv[j]);
		for (size_t i = 0; i < NMKINDS; i++) {
			const struct mvar *v = mkinds[i];
			char what[160];
			snprintf(
			    what, sizeof what, "%s, %s", cv[j]->name, v->name);
			mx_make(&m, v);
			EXPECT(what, pthread_mutex_lock(&m), 0);

			/* pthread_cond_wait.c checks tv_nsec first and
			 * returns at once, the mutex still held. */
			start = dropin_now(CLOCK_MONOTONIC);
			ts = with_nsec(
			    dropin_deadline(cv[j]->clk, FAR_MS), 1000000000L);
			EXPECT(
			    what, pthread_cond_timedwait(&c, &m, &ts), EINVAL);
			ts = with_nsec(dropin_deadline(cv[j]->clk, FAR_MS), -1);
			EXPECT(
			    what, pthread_cond_timedwait(&c, &m, &ts), EINVAL);
			ts = with_nsec(dropin_deadline(CLOCK_MONOTONIC, FAR_MS),
			    1000000000L);
			EXPECT(what,
			    pthread_cond_clockwait(
			        &c, &m, CLOCK_MONOTONIC, &ts),
			    EINVAL);
			ts = with_nsec(
			    dropin_deadline(CLOCK_REALTIME, FAR_MS), -5);
			EXPECT(what,
			    pthread_cond_clockwait(&c, &m, CLOCK_REALTIME, &ts),
			    EINVAL);
			for (size_t k = 0; k < 4; k++) {
				ts = dropin_deadline(CLOCK_MONOTONIC, FAR_MS);
				EXPECT(what,
				    pthread_cond_clockwait(
				        &c, &m, bad_clocks[k], &ts),
				    EINVAL);
			}
			cr_assert(
			    dropin_ms_since(CLOCK_MONOTONIC, start) < 1000,
			    "%s: the EINVAL waits took %.1f ms", what,
			    dropin_ms_since(CLOCK_MONOTONIC, start));
			expect_held(&m, v->kind, what);

			/* A negative tv_sec is a deadline in the past
			 * (futex-internal.c). */
			EXPECT(what,
			    pthread_cond_timedwait(&c, &m, &NEGATIVE_TS),
			    ETIMEDOUT);
			EXPECT(what,
			    pthread_cond_clockwait(
			        &c, &m, CLOCK_MONOTONIC, &NEGATIVE_TS),
			    ETIMEDOUT);
			EXPECT(what,
			    pthread_cond_clockwait(
			        &c, &m, CLOCK_REALTIME, &NEGATIVE_TS),
			    ETIMEDOUT);
			ts = dropin_deadline(cv[j]->clk, -1000);
			EXPECT(what, pthread_cond_timedwait(&c, &m, &ts),
			    ETIMEDOUT);
			expect_held(&m, v->kind, what);
			EXPECT(what, pthread_mutex_unlock(&m), 0);
			EXPECT(what, pthread_mutex_destroy(&m), 0);
		}
		EXPECT(cv[j]->name, pthread_cond_destroy(&c), 0);
	}
}

Test(cond, wait_without_the_mutex_is_eperm)
{
	static pthread_cond_t c = PTHREAD_COND_INITIALIZER;
	static pthread_mutex_t m;
	static int go;
	const struct mvar *checking[2] = { &mvars[MV_ERRORCHECK_ATTR],
		&mvars[MV_RECURSIVE_ATTR] };
	struct holder h;
	struct cwaiter w;
	struct timespec dl;

	for (size_t i = 0; i < 2; i++) {
		const char *what = checking[i]->name;
		mx_make(&m, checking[i]);
		/* pthread_cond_wait.c: the unlock fails, so the wait does. */
		EXPECT(what, pthread_cond_wait(&c, &m), EPERM);
		dl = dropin_deadline(CLOCK_REALTIME, FAR_MS);
		EXPECT(what, pthread_cond_timedwait(&c, &m, &dl), EPERM);
		dl = dropin_deadline(CLOCK_MONOTONIC, FAR_MS);
		EXPECT(what,
		    pthread_cond_clockwait(&c, &m, CLOCK_MONOTONIC, &dl),
		    EPERM);
		holder_start(&h, &m, what);
		EXPECT(what, pthread_cond_wait(&c, &m), EPERM);
		holder_stop(&h, what);
		EXPECT(what, in_other(op_trylock, &m), 0);

		/* The cond still works. */
		go = 0;
		cwaiter_start(&w, &c, &m, &go, W_WAIT, CLOCK_REALTIME,
		    checking[i]->kind, what);
		release_waiters(&c, &m, &go, false, what);
		cwaiter_finish(&w, what);
		EXPECT(what, pthread_mutex_destroy(&m), 0);
	}
}

/*
 * A wait with a mutex of a kind that keeps no owner, which the caller
 * does not hold: undefined in POSIX, and glibc's wait unlocks the free
 * mutex (nothing to do), waits and returns holding it
 * (pthread_cond_wait.c, __pthread_mutex_unlock_usercnt, which checks no
 * owner for these kinds).  A program with that bug must run on the
 * drop-in as it does on glibc.  The mutex is not destroyed after:
 * glibc's unlock of the free mutex wrapped its __nusers, and its
 * destroy says EBUSY from then on.
 */
struct unheld {
	pthread_cond_t *c;
	pthread_mutex_t *m;
	pid_t tid;
	int rc, returned, checked;
};

static void *
unheld_main(void *arg)
{
	struct unheld *u = arg;

	dropin_record_tid(&u->tid);
	u->rc = pthread_cond_wait(u->c, u->m);
	dropin_store(&u->returned, 1);
	dropin_await_ge(&u->checked, 1);
	pthread_mutex_unlock(u->m);
	return NULL;
}

Test(cond, a_wait_with_a_free_normal_mutex_waits_and_returns_holding_it)
{
	static pthread_cond_t c = PTHREAD_COND_INITIALIZER;
	static pthread_mutex_t m;
	const struct mvar *kinds[] = { &mvars[MV_NORMAL_ATTR],
		&mvars[MV_NORMAL_STATIC], &mvars[MV_NORMAL_ZERO],
		&mvars[MV_ADAPTIVE_ATTR], &mvars[MV_DEFAULT_NULL] };

	for (size_t i = 0; i < sizeof kinds / sizeof kinds[0]; i++) {
		const char *what = kinds[i]->name;
		struct unheld u = { &c, &m, 0, -1, 0, 0 };
		pthread_t t;
		mx_make(&m, kinds[i]);
		t = spawn(unheld_main, &u);
		cr_assert(dropin_wait_blocked(&u.tid),
		    "%s: the waiter did not block in the wait", what);
		cr_assert(!dropin_load(&u.returned), "%s: returned", what);
		EXPECT(what, pthread_mutex_lock(&m), 0);
		EXPECT(what, pthread_cond_signal(&c), 0);
		EXPECT(what, pthread_mutex_unlock(&m), 0);
		cr_assert(dropin_await_ge(&u.returned, 1),
		    "%s: the signalled waiter did not return", what);
		cr_assert(
		    u.rc == 0, "%s: the wait returned %s", what, en(u.rc));
		EXPECT(what, in_other(op_trylock, &m), EBUSY);
		dropin_store(&u.checked, 1);
		join_thread(t, what);
		EXPECT(what, in_other(op_trylock, &m), 0);
	}
}

enum { NBCAST = 6 };

Test(cond, broadcast_releases_every_waiter)
{
	static pthread_cond_t c = PTHREAD_COND_INITIALIZER;
	static pthread_mutex_t m = PTHREAD_MUTEX_INITIALIZER;
	static int go;
	static struct cwaiter w[NBCAST];

	for (int round = 0; round < 3; round++) {
		go = 0;
		for (int k = 0; k < NBCAST; k++)
			cwaiter_start(&w[k], &c, &m, &go,
			    (enum wait_how)(k % 4), CLOCK_REALTIME, MK_NORMAL,
			    "broadcast");
		release_waiters(&c, &m, &go, true, "broadcast");
		for (int k = 0; k < NBCAST; k++)
			cwaiter_finish(&w[k], "broadcast");
	}
}

/* One condition variable waited on with two mutexes at once: undefined
 * in POSIX, but glibc's broadcast releases every waiter, and so must the
 * drop-in's (it aborted before).  Held mutexes, then free ones. */
Test(cond, broadcast_releases_the_waiters_of_two_mutexes)
{
	static pthread_cond_t c = PTHREAD_COND_INITIALIZER;
	static pthread_mutex_t m[2] = { PTHREAD_MUTEX_INITIALIZER,
		PTHREAD_MUTEX_INITIALIZER };
	static int go[2];
	static struct cwaiter w[4];
	const char *what = "two mutexes";

	for (int held = 1; held >= 0; held--) {
		go[0] = go[1] = 0;
		for (int k = 0; k < 4; k++)
			cwaiter_start(&w[k], &c, &m[k % 2], &go[k % 2],
			    (enum wait_how)(k / 2 * 2), CLOCK_REALTIME,
			    MK_NORMAL, what);
		for (int i = 0; i < 2; i++) {
			EXPECT(what, pthread_mutex_lock(&m[i]), 0);
			dropin_store(&go[i], 1);
			if (!held)
				EXPECT(what, pthread_mutex_unlock(&m[i]), 0);
		}
		EXPECT(what, pthread_cond_broadcast(&c), 0);
		for (int i = 0; held && i < 2; i++)
			EXPECT(what, pthread_mutex_unlock(&m[i]), 0);
		for (int k = 0; k < 4; k++)
			cwaiter_finish(&w[k], what);
	}
}

Test(cond, destroy_after_broadcast_before_the_waiters_relock)
{
	static pthread_cond_t c;
	static pthread_mutex_t m = PTHREAD_MUTEX_INITIALIZER;
	static int go;
	static struct cwaiter w[3];
	unsigned char pattern[sizeof c];
	const char *what = "destroy after broadcast";

	cv_make(&c, CV_DEFAULT);
	go = 0;
	for (int k = 0; k < 3; k++)
		cwaiter_start(&w[k], &c, &m, &go, (enum wait_how)k,
		    CLOCK_REALTIME, MK_NORMAL, what);
	EXPECT(what, pthread_mutex_lock(&m), 0);
	dropin_store(&go, 1);
	EXPECT(what, pthread_cond_broadcast(&c), 0);
	/* The waiters are woken but cannot return: we hold the mutex.
	 * Nobody waits on c any more, so it may be destroyed. */
	EXPECT(what, pthread_cond_destroy(&c), 0);
	/* From here on nobody may touch c's memory. */
	memset(&c, 0xa5, sizeof c);
	memcpy(pattern, &c, sizeof c);
	EXPECT(what, pthread_mutex_unlock(&m), 0);
	for (int k = 0; k < 3; k++)
		cwaiter_finish(&w[k], what);
	cr_assert(memcmp(pattern, &c, sizeof c) == 0,
	    "a woken waiter wrote to the destroyed cond");
}

/* Producer/consumer over a bounded queue: nothing lost, nothing twice. */
enum { PC_CAP = 4, PC_PRODUCERS = 2, PC_CONSUMERS = 2, PC_MS = 800 };

struct pcq {
	pthread_mutex_t m;
	pthread_cond_t not_full, not_empty;
	unsigned long buf[PC_CAP];
	unsigned head, count;
	int producers_left;
	struct timespec deadline;
	/* per thread */
	unsigned long produced[PC_PRODUCERS], produced_sum[PC_PRODUCERS];
	unsigned long consumed[PC_CONSUMERS], consumed_sum[PC_CONSUMERS];
	long full_waits, empty_waits; /* under m */
	long order_errors;            /* under m */
	unsigned long last_seen[PC_PRODUCERS];
	int errors;
};

static struct pcq pc;

static void *
pc_producer(void *arg)
{
	int me = (int)(intptr_t)arg;
	unsigned long seq = 0;

	while (!dropin_reached(CLOCK_MONOTONIC, pc.deadline)) {
		unsigned long item = ((unsigned long)me << 40) | ++seq;
		if (pthread_mutex_lock(&pc.m) != 0)
			dropin_inc(&pc.errors);
		while (pc.count == PC_CAP) {
			pc.full_waits++;
			if (pthread_cond_wait(&pc.not_full, &pc.m) != 0)
				dropin_inc(&pc.errors);
		}
		pc.buf[(pc.head + pc.count) % PC_CAP] = item;
		pc.count++;
		if (pthread_cond_signal(&pc.not_empty) != 0)
			dropin_inc(&pc.errors);
		if (pthread_mutex_unlock(&pc.m) != 0)
			dropin_inc(&pc.errors);
		pc.produced[me]++;
		pc.produced_sum[me] += item;
	}
	pthread_mutex_lock(&pc.m);
	pc.producers_left--;
	pthread_cond_broadcast(&pc.not_empty);
	pthread_mutex_unlock(&pc.m);
	return NULL;
}

static void *
pc_consumer(void *arg)
{
	int me = (int)(intptr_t)arg;

	for (;;) {
		unsigned long item;
		if (pthread_mutex_lock(&pc.m) != 0)
			dropin_inc(&pc.errors);
		while (pc.count == 0 && pc.producers_left > 0) {
			pc.empty_waits++;
			if (pthread_cond_wait(&pc.not_empty, &pc.m) != 0)
				dropin_inc(&pc.errors);
		}
		if (pc.count == 0) {
			pthread_mutex_unlock(&pc.m);
			return NULL;
		}
		item = pc.buf[pc.head];
		pc.head = (pc.head + 1) % PC_CAP;
		pc.count--;
		/* Items of one producer leave the queue in order. */
		unsigned p = (unsigned)(item >> 40);
		if (p >= PC_PRODUCERS ||
		    (item & 0xffffffffffUL) != pc.last_seen[p] + 1)
			pc.order_errors++;
		else
			pc.last_seen[p]++;
		if (pthread_cond_signal(&pc.not_full) != 0)
			dropin_inc(&pc.errors);
		if (pthread_mutex_unlock(&pc.m) != 0)
			dropin_inc(&pc.errors);
		pc.consumed[me]++;
		pc.consumed_sum[me] += item;
	}
}

Test(cond, producer_consumer_nothing_lost)
{
	pthread_t p[PC_PRODUCERS], c[PC_CONSUMERS];
	unsigned long produced = 0, consumed = 0, psum = 0, csum = 0;

	memset(&pc, 0, sizeof pc);
	mx_make(&pc.m, &mvars[MV_NORMAL_ATTR]);
	cv_make(&pc.not_full, CV_DEFAULT);
	cv_make(&pc.not_empty, CV_DEFAULT);
	pc.producers_left = PC_PRODUCERS;
	pc.deadline = dropin_deadline(CLOCK_MONOTONIC, PC_MS);
	for (int i = 0; i < PC_CONSUMERS; i++)
		c[i] = spawn(pc_consumer, (void *)(intptr_t)i);
	for (int i = 0; i < PC_PRODUCERS; i++)
		p[i] = spawn(pc_producer, (void *)(intptr_t)i);
	for (int i = 0; i < PC_PRODUCERS; i++)
		join_ms(
		    p[i], PC_MS + DROPIN_WAIT_MS, "producer (lost wakeup?)");
	for (int i = 0; i < PC_CONSUMERS; i++)
		join_thread(c[i], "consumer (lost wakeup?)");
	for (int i = 0; i < PC_PRODUCERS; i++) {
		produced += pc.produced[i];
		psum += pc.produced_sum[i];
	}
	for (int i = 0; i < PC_CONSUMERS; i++) {
		consumed += pc.consumed[i];
		csum += pc.consumed_sum[i];
	}
	cr_assert(pc.errors == 0, "%d lock/cond calls failed", pc.errors);
	cr_assert(produced > 1000, "only %lu items in %d ms", produced, PC_MS);
	cr_assert(consumed == produced && csum == psum,
	    "produced %lu (sum %lu), consumed %lu (sum %lu)", produced, psum,
	    consumed, csum);
	cr_assert(
	    pc.order_errors == 0, "%ld items out of order", pc.order_errors);
	cr_assert(pc.full_waits > 0 && pc.empty_waits > 0,
	    "nobody waited (full %ld, empty %ld): the test is void",
	    pc.full_waits, pc.empty_waits);
	EXPECT("producer/consumer", pthread_cond_destroy(&pc.not_full), 0);
	EXPECT("producer/consumer", pthread_cond_destroy(&pc.not_empty), 0);
	EXPECT("producer/consumer", pthread_mutex_destroy(&pc.m), 0);
}

/* ------------------------------------------------------------------ */
/* 3. cancellation                                                     */

/* A waiter that is cancelled in its wait.  Its cleanup handler runs with
 * the mutex held (glibc's wait reacquires it before the handlers run):
 * it tells the test, which checks from another thread that the mutex is
 * held, then releases it. */
struct cxwaiter {
	pthread_cond_t *c;
	pthread_mutex_t *m;
	enum wait_how how;
	enum mkind kind;
	pid_t tid;
	int waiting, in_handler, checked;
	int handler_lock_rc; /* errorcheck: relock in the handler */
	int handler_unlock_rc;
	int returned; /* the wait returned without cancellation */
};

static void
cxwaiter_cleanup(void *arg)
{
	struct cxwaiter *x = arg;

	if (x->kind == MK_ERRORCHECK)
		x->handler_lock_rc = pthread_mutex_lock(x->m);
	dropin_store(&x->in_handler, 1);
	dropin_await_ge(&x->checked, 1);
	x->handler_unlock_rc = pthread_mutex_unlock(x->m);
}

static void *
cxwaiter_main(void *arg)
{
	struct cxwaiter *x = arg;
	int never = 0;

	if (pthread_mutex_lock(x->m) != 0)
		return NULL;
	pthread_cleanup_push(cxwaiter_cleanup, x);
	dropin_record_tid(&x->tid);
	dropin_store(&x->waiting, 1);
	while (!dropin_load(&never)) {
		if (cwait(x->c, x->m, x->how, CLOCK_REALTIME) != 0)
			break;
	}
	dropin_store(&x->returned, 1);
	pthread_cleanup_pop(0);
	pthread_mutex_unlock(x->m);
	return NULL;
}

/* A waiter cancelled in its wait (how, with m of kind) runs its cleanup
 * handler holding m, and its wait does not return. */
static void
expect_cancelled_holding(pthread_cond_t *c, pthread_mutex_t *m,
    enum wait_how how, enum mkind kind, const char *what)
{
	struct cxwaiter x;
	pthread_t t;
	void *ret;

	memset(&x, 0, sizeof x);
	x.c = c;
	x.m = m;
	x.how = how;
	x.kind = kind;
	t = spawn(cxwaiter_main, &x);
	cr_assert(dropin_await_ge(&x.waiting, 1) && dropin_wait_blocked(&x.tid),
	    "%s: the waiter did not block", what);
	EXPECT(what, pthread_cancel(t), 0);
	cr_assert(dropin_await_ge(&x.in_handler, 1),
	    "%s: the cancelled waiter did not run its cleanup handler in 5 s",
	    what);
	/* The handler runs with the mutex held. */
	EXPECT(what, in_other(op_trylock, m), EBUSY);
	dropin_store(&x.checked, 1);
	ret = join_thread(t, what);
	cr_assert(ret == PTHREAD_CANCELED,
	    "%s: join gave %p, not PTHREAD_CANCELED", what, ret);
	cr_assert(x.returned == 0, "%s: the wait returned", what);
	if (kind == MK_ERRORCHECK)
		cr_assert(x.handler_lock_rc == EDEADLK,
		    "%s: relock in the handler returned %s, expected EDEADLK "
		    "(held)",
		    what, en(x.handler_lock_rc));
	cr_assert(x.handler_unlock_rc == 0,
	    "%s: unlock in the handler returned %s", what,
	    en(x.handler_unlock_rc));
}

TestSuite(cancel, .timeout = T_O);

Test(cancel, blocked_waits_are_cancellation_points_and_hold_the_mutex)
{
	static pthread_cond_t c = PTHREAD_COND_INITIALIZER;
	static pthread_mutex_t m;
	static int go;
	static const enum wait_how hows[] = { W_WAIT, W_TIMED, W_CLOCK_MONO,
		W_CLOCK_RT };
	static const char *const how_names[] = { "pthread_cond_wait",
		"pthread_cond_timedwait", "pthread_cond_clockwait(MONOTONIC)",
		"pthread_cond_clockwait(REALTIME)" };
	const struct mvar *kinds[2] = { &mvars[MV_NORMAL_ATTR],
		&mvars[MV_ERRORCHECK_ATTR] };
	struct cwaiter w;

	for (size_t k = 0; k < 2; k++) {
		mx_make(&m, kinds[k]);
		for (size_t h = 0; h < 4; h++) {
			char what[160];
			snprintf(what, sizeof what, "%s, %s", how_names[h],
			    kinds[k]->name);
			expect_cancelled_holding(
			    &c, &m, hows[h], kinds[k]->kind, what);

			/* Cond and mutex still work. */
			EXPECT(what, in_other(op_trylock, &m), 0);
			go = 0;
			cwaiter_start(&w, &c, &m, &go, hows[h], CLOCK_REALTIME,
			    kinds[k]->kind, what);
			release_waiters(&c, &m, &go, false, what);
			cwaiter_finish(&w, what);
		}
		EXPECT(kinds[k]->name, pthread_mutex_destroy(&m), 0);
	}
}

/*
 * Two waiters on one cond; one signal, and one of the two cancelled at
 * about the same moment.  The predicate is "sent > consumed", both
 * counted under the mutex.  Whichever way the race goes, the signal must
 * not be lost: either the cancelled waiter returned from its wait (and
 * consumed the signal) before acting on the cancellation, or the other
 * waiter must wake and consume it.
 */
enum { SW_ROUNDS = 200, SW_MAX_MS = 5000 };

struct sw {
	pthread_mutex_t m;
	pthread_cond_t c;
	int sent, consumed; /* under m (and atomic, for the test to read) */
	pid_t tid[2];
	int waiting[2];
	int returned[2];
	int go_cancel;
	pthread_t t[2];
	int cancel_rc;
	int victim;
};

static struct sw sw;

static void
sw_unlock(void *arg)
{
	pthread_mutex_unlock(arg);
}

static void *
sw_waiter(void *arg)
{
	int me = (int)(intptr_t)arg;

	pthread_mutex_lock(&sw.m);
	pthread_cleanup_push(sw_unlock, &sw.m);
	dropin_record_tid(&sw.tid[me]);
	dropin_store(&sw.waiting[me], 1);
	while (dropin_load(&sw.consumed) >= dropin_load(&sw.sent))
		pthread_cond_wait(&sw.c, &sw.m);
	dropin_inc(&sw.consumed);
	dropin_store(&sw.returned[me], 1);
	pthread_cleanup_pop(1);
	return NULL;
}

static void *
sw_canceller(void *arg)
{
	(void)arg;
	dropin_await_ge(&sw.go_cancel, 1);
	sw.cancel_rc = pthread_cancel(sw.t[sw.victim]);
	return NULL;
}

Test(cancel, a_cancelled_waiter_never_swallows_a_signal)
{
	struct timespec start = dropin_now(CLOCK_MONOTONIC);
	int rounds = 0, cancelled = 0, consumed_by_victim = 0;

	memset(&sw, 0, sizeof sw);
	mx_make(&sw.m, &mvars[MV_NORMAL_ATTR]);
	cv_make(&sw.c, CV_DEFAULT);
	for (; rounds < SW_ROUNDS; rounds++) {
		pthread_t canceller;
		void *ret[2];
		int victim = rounds & 1, other = 1 - victim;

		if (dropin_ms_since(CLOCK_MONOTONIC, start) > SW_MAX_MS)
			break;
		sw.sent = sw.consumed = 0;
		sw.go_cancel = 0;
		sw.victim = victim;
		for (int i = 0; i < 2; i++) {
			sw.tid[i] = 0;
			sw.waiting[i] = sw.returned[i] = 0;
			sw.t[i] = spawn(sw_waiter, (void *)(intptr_t)i);
		}
		for (int i = 0; i < 2; i++)
			cr_assert(dropin_await_ge(&sw.waiting[i], 1) &&
			        dropin_wait_blocked(&sw.tid[i]),
			    "round %d: waiter %d did not block", rounds, i);
		canceller = spawn(sw_canceller, NULL);
		/* Alternate which of the two goes first. */
		if (rounds & 2)
			dropin_store(&sw.go_cancel, 1);
		pthread_mutex_lock(&sw.m);
		dropin_inc(&sw.sent);
		pthread_cond_signal(&sw.c);
		pthread_mutex_unlock(&sw.m);
		dropin_store(&sw.go_cancel, 1);
		join_thread(canceller, "canceller");
		cr_assert(
		    sw.cancel_rc == 0, "pthread_cancel: %s", en(sw.cancel_rc));

		/* The one signal is consumed, by one waiter or the other. */
		cr_assert(dropin_await_ge_ms(&sw.consumed, 1, 2000),
		    "round %d: the signal was lost (victim %d returned %d, "
		    "other returned %d)",
		    rounds, victim, dropin_load(&sw.returned[victim]),
		    dropin_load(&sw.returned[other]));
		ret[victim] = join_ms(sw.t[victim], 2000, "cancelled waiter");
		if (ret[victim] == PTHREAD_CANCELED) {
			cancelled++;
			cr_assert(sw.returned[victim] == 0,
			    "round %d: cancelled after it returned", rounds);
		} else {
			/* It consumed the signal: the other waits still. */
			consumed_by_victim++;
			cr_assert(sw.returned[victim] == 1, "round %d", rounds);
			pthread_mutex_lock(&sw.m);
			dropin_inc(&sw.sent);
			pthread_cond_signal(&sw.c);
			pthread_mutex_unlock(&sw.m);
		}
		ret[other] = join_ms(sw.t[other], 2000, "surviving waiter");
		cr_assert(ret[other] == NULL && sw.returned[other] == 1,
		    "round %d: the other waiter did not return normally",
		    rounds);
		cr_assert(sw.consumed == sw.sent,
		    "round %d: %d signals sent, %d consumed", rounds, sw.sent,
		    sw.consumed);
		cr_assert(sw.consumed == sw.returned[0] + sw.returned[1],
		    "round %d: consumed %d, returned %d + %d", rounds,
		    sw.consumed, sw.returned[0], sw.returned[1]);
	}
	cr_assert(rounds >= 20, "only %d rounds in %d ms", rounds, SW_MAX_MS);
	cr_assert(cancelled > 0,
	    "no waiter was ever cancelled in %d rounds: the test is void",
	    rounds);
	cr_log_info("%d rounds: %d cancelled, %d consumed before the cancel",
	    rounds, cancelled, consumed_by_victim);
	EXPECT("swallow", pthread_cond_destroy(&sw.c), 0);
	EXPECT("swallow", pthread_mutex_destroy(&sw.m), 0);
}

/* pthread_mutex_lock and timedlock are not cancellation points. */
struct cxlocker {
	pthread_mutex_t *m;
	bool timed;
	pid_t tid;
	int lock_rc;
	int got; /* set with the mutex held */
	int unlock_rc;
	int after_testcancel; /* must stay 0 */
};

/* Not instrumented by AddressSanitizer: it unwinds through this frame
 * at the cancellation without unpoisoning the frame's redzones, and then
 * reports a stack-buffer-underflow in the thread's exit, against glibc
 * alone as much as with the drop-in. */
#if defined(__SANITIZE_ADDRESS__)
__attribute__((no_sanitize_address))
#endif
static void *
cxlocker_main(void *arg)
{
	struct cxlocker *l = arg;
	struct timespec dl = dropin_deadline(CLOCK_REALTIME, FAR_MS);

	dropin_record_tid(&l->tid);
	l->lock_rc = l->timed ? pthread_mutex_timedlock(l->m, &dl)
	                      : pthread_mutex_lock(l->m);
	if (l->lock_rc != 0)
		return NULL;
	dropin_store(&l->got, 1);
	l->unlock_rc = pthread_mutex_unlock(l->m);
	pthread_testcancel();
	dropin_store(&l->after_testcancel, 1);
	return NULL;
}

/* A timed wait whose deadline is before the epoch times out in glibc
 * before its futex call, the cancellation point, so a pending
 * cancellation does not act: ETIMEDOUT, the mutex held.  A deadline at
 * the epoch reaches the call: cancelled, the mutex held in the cleanup
 * handler.  (The drop-in acted on the first as on the second.) */
struct pre_epoch {
	pthread_mutex_t *m;
	pthread_cond_t *c;
	struct timespec dl;
	bool clockwait;
	int rc, relock_rc, in_handler;
};

static void
pre_epoch_cleanup(void *arg)
{
	struct pre_epoch *p = arg;
	p->in_handler = 1;
	p->relock_rc = pthread_mutex_lock(p->m);
	pthread_mutex_unlock(p->m);
}

/* Not instrumented by AddressSanitizer, as cxlocker_main (below). */
#if defined(__SANITIZE_ADDRESS__)
__attribute__((no_sanitize_address))
#endif
static void *
pre_epoch_main(void *arg)
{
	struct pre_epoch *p = arg;
	pthread_mutex_lock(p->m);
	pthread_cancel(pthread_self());
	pthread_cleanup_push(pre_epoch_cleanup, p);
	p->rc = p->clockwait
	    ? pthread_cond_clockwait(p->c, p->m, CLOCK_MONOTONIC, &p->dl)
	    : pthread_cond_timedwait(p->c, p->m, &p->dl);
	p->relock_rc = pthread_mutex_lock(p->m);
	pthread_cleanup_pop(0);
	pthread_mutex_unlock(p->m);
	return NULL;
}

Test(cancel, a_timed_wait_before_the_epoch_is_no_cancellation_point)
{
	static pthread_mutex_t m = PTHREAD_ERRORCHECK_MUTEX_INITIALIZER_NP;
	static pthread_cond_t c = PTHREAD_COND_INITIALIZER;
	/* AddressSanitizer cannot follow a cancellation that unwinds from
	 * pthread_testcancel through the drop-in's instrumented frames (the
	 * longjmp leaves their redzones poisoned, and its own check then
	 * fails): under it, only the cases that must not be cancelled. */
#if defined(__SANITIZE_ADDRESS__)
	const int cases = 2;
#else
	const int cases = 4;
#endif

	for (int k = 0; k < cases; k++) {
		bool before = k < 2;
		const char *what = before ? "tv_sec -1" : "tv_sec 0";
		struct pre_epoch p = { &m, &c, { before ? -1 : 0, 0 }, k & 1,
			-1, -1, 0 };
		void *ret = join_thread(spawn(pre_epoch_main, &p), what);
		if (before) {
			cr_assert(ret == NULL && p.rc == ETIMEDOUT,
			    "%s: %s, the wait returned %s", what,
			    ret == PTHREAD_CANCELED ? "cancelled" : "returned",
			    en(p.rc));
			cr_assert(p.relock_rc == EDEADLK,
			    "%s: the mutex was not held after the wait (%s)",
			    what, en(p.relock_rc));
		} else {
			cr_assert(ret == PTHREAD_CANCELED && p.in_handler,
			    "%s: not cancelled (the wait returned %s)", what,
			    en(p.rc));
			cr_assert(p.relock_rc == EDEADLK,
			    "%s: the mutex was not held in the handler (%s)",
			    what, en(p.relock_rc));
		}
	}
	EXPECT("end", in_other(op_trylock, &m), 0);
}

Test(cancel, mutex_lock_is_not_a_cancellation_point)
{
	static pthread_mutex_t m;
	struct cxlocker l;

	for (size_t i = 0; i < NMKINDS * 2; i++) {
		const struct mvar *v = mkinds[i / 2];
		char what[160];
		pthread_t t;
		void *ret;

		snprintf(what, sizeof what, "%s, %s", v->name,
		    (i & 1) ? "timedlock" : "lock");
		mx_make(&m, v);
		memset(&l, 0, sizeof l);
		l.m = &m;
		l.timed = i & 1;
		EXPECT(what, pthread_mutex_lock(&m), 0);
		t = spawn(cxlocker_main, &l);
		cr_assert(
		    dropin_wait_blocked(&l.tid), "%s: did not block", what);
		EXPECT(what, pthread_cancel(t), 0);
		/* Still blocked in the lock (the cancellation request may
		 * have woken it, but it went back to wait). */
		cr_assert(
		    dropin_wait_blocked(&l.tid), "%s: did not block", what);
		cr_assert(dropin_load(&l.got) == 0 && l.lock_rc == 0,
		    "%s: the lock returned %s while the mutex was held", what,
		    en(l.lock_rc));
		EXPECT(what, pthread_mutex_unlock(&m), 0);
		ret = join_thread(t, what);
		cr_assert(ret == PTHREAD_CANCELED,
		    "%s: join gave %p, not PTHREAD_CANCELED", what, ret);
		cr_assert(l.got == 1 && l.lock_rc == 0 && l.unlock_rc == 0,
		    "%s: cancelled in the lock: got %d, lock %s, unlock %s",
		    what, l.got, en(l.lock_rc), en(l.unlock_rc));
		cr_assert(l.after_testcancel == 0,
		    "%s: pthread_testcancel did not act", what);
		EXPECT(what, in_other(op_trylock, &m), 0);
		EXPECT(what, pthread_mutex_destroy(&m), 0);
	}
}

/* ------------------------------------------------------------------ */
/* 3b. a private condition variable with one of glibc's mutexes        */

/*
 * A condition variable made with default attributes and a robust,
 * priority-inheritance or process-shared mutex: glibc waits with any
 * mixture of its own objects, and a real-time program takes its
 * priority-inheritance mutexes with ordinary condition variables.
 * PRIO_PROTECT is left out: its first lock of every thread fails under
 * SCHED_OTHER (see prio_protect_basics).
 */
static const struct {
	int flags;
	const char *name;
} gmx[] = {
	{ MA_INHERIT, "PRIO_INHERIT mutex, private cond" },
	{ MA_ROBUST, "robust mutex, private cond" },
	{ MA_PSHARED, "process-shared mutex, private cond" },
	{ MA_ROBUST | MA_INHERIT, "robust PRIO_INHERIT mutex, private cond" },
};
#define NGMX (sizeof gmx / sizeof gmx[0])

Test(cond, a_private_cond_waits_with_glibcs_own_mutexes)
{
	static pthread_cond_t c = PTHREAD_COND_INITIALIZER;
	static pthread_mutex_t m;
	static int go;
	static const enum wait_how hows[] = { W_WAIT, W_TIMED, W_CLOCK_MONO,
		W_CLOCK_RT };
	struct cwaiter w[3];

	for (size_t i = 0; i < NGMX; i++) {
		const char *what = gmx[i].name;
		mx_make_attr(&m, gmx[i].flags, what);
		for (size_t h = 0; h < 4; h++) {
			go = 0;
			cwaiter_start(&w[0], &c, &m, &go, hows[h],
			    CLOCK_REALTIME, MK_NORMAL, what);
			/* The waiter released the mutex; glibc counts it in
			 * __nusers, so destroy is EBUSY but for robust
			 * mutexes, which glibc's destroy does not ask. */
			EXPECT(what, in_other(op_trylock, &m), 0);
			EXPECT(what, pthread_mutex_destroy(&m),
			    gmx[i].flags & MA_ROBUST ? 0 : EBUSY);
			if (gmx[i].flags & MA_ROBUST)
				mx_make_attr(&m, gmx[i].flags, what);
			release_waiters(&c, &m, &go, false, what);
			cwaiter_finish(&w[0], what);
		}
		go = 0;
		for (int k = 0; k < 3; k++)
			cwaiter_start(&w[k], &c, &m, &go, hows[k],
			    CLOCK_REALTIME, MK_NORMAL, what);
		release_waiters(&c, &m, &go, true, what);
		for (int k = 0; k < 3; k++)
			cwaiter_finish(&w[k], what);
		expect_wait_timeout(
		    &c, &m, W_TIMED, CLOCK_REALTIME, MK_NORMAL, what);
		expect_wait_timeout(
		    &c, &m, W_CLOCK_MONO, CLOCK_REALTIME, MK_NORMAL, what);
		EXPECT(what, in_other(op_trylock, &m), 0);
		EXPECT(what, pthread_mutex_destroy(&m), 0);
	}
}

/* pthread_cond_wait.c unlocks the mutex with __pthread_mutex_unlock_usercnt
 * first and returns its error: a robust mutex that the caller does not
 * hold (free, or another thread's) is EPERM, and nothing waits. */
Test(cond, a_wait_with_a_robust_mutex_not_held_is_eperm)
{
	static pthread_cond_t c = PTHREAD_COND_INITIALIZER;
	static pthread_mutex_t m;
	const char *what = "robust mutex, private cond";
	struct timespec dl;
	struct holder h;

	mx_make_attr(&m, MA_ROBUST, what);
	EXPECT(what, pthread_cond_wait(&c, &m), EPERM);
	dl = dropin_deadline(CLOCK_REALTIME, FAR_MS);
	EXPECT(what, pthread_cond_timedwait(&c, &m, &dl), EPERM);
	holder_start(&h, &m, what);
	EXPECT(what, pthread_cond_wait(&c, &m), EPERM);
	holder_stop(&h, what);
	EXPECT(what, in_other(op_trylock, &m), 0);
	EXPECT(what, pthread_mutex_destroy(&m), 0);
}

/* A waiter whose robust mutex's owner ends holding it: glibc's wait
 * returns what relocking says, EOWNERDEAD, with the mutex held. */
struct rdead_owner {
	pthread_mutex_t *m;
	pthread_cond_t *c;
	int *go;
	int lock_rc;
};

static void *
rdead_owner_main(void *arg)
{
	struct rdead_owner *o = arg;

	o->lock_rc = pthread_mutex_lock(o->m);
	dropin_store(o->go, 1);
	pthread_cond_signal(o->c);
	return NULL; /* ends holding the mutex */
}

Test(cond, a_wait_whose_robust_mutex_owner_ended_is_eownerdead)
{
	static pthread_cond_t c = PTHREAD_COND_INITIALIZER;
	static pthread_mutex_t m;
	static int go;
	const char *what = "robust mutex, private cond, owner ended";
	struct rdead_owner o = { &m, &c, &go, -1 };
	struct cwaiter w;

	mx_make_attr(&m, MA_ROBUST, what);
	go = 0;
	memset(&w, 0, sizeof w);
	w.c = &c;
	w.m = &m;
	w.go = &go;
	w.how = W_WAIT;
	w.kind = MK_NORMAL;
	w.t = spawn(cwaiter_main, &w);
	cr_assert(dropin_await_ge(&w.waiting, 1) && dropin_wait_blocked(&w.tid),
	    "%s: the waiter did not block", what);
	join_thread(spawn(rdead_owner_main, &o), what);
	cr_assert(
	    o.lock_rc == 0, "%s: the owner's lock: %s", what, en(o.lock_rc));
	join_thread(w.t, what);
	/* cwaiter_main unlocked after the failed wait, without making the
	 * mutex consistent: it is now unrecoverable, as in glibc. */
	cr_assert(w.wait_rc == EOWNERDEAD && w.unlock_rc == 0,
	    "%s: the wait returned %s (unlock %s), expected EOWNERDEAD", what,
	    en(w.wait_rc), en(w.unlock_rc));
	EXPECT(what, pthread_mutex_lock(&m), ENOTRECOVERABLE);
	EXPECT(what, pthread_mutex_destroy(&m), 0);
}

/* Cancelled in the wait, as blocked_waits_are_cancellation_points_and_
 * hold_the_mutex: the cleanup handler runs with glibc's mutex held, and
 * the condition variable still works with it afterwards. */
Test(cancel, a_wait_with_glibcs_mutex_holds_it_in_the_cleanup_handler)
{
	static pthread_cond_t c = PTHREAD_COND_INITIALIZER;
	static pthread_mutex_t m;
	static int go;
	struct cwaiter w;

	for (size_t i = 0; i < NGMX; i++) {
		const char *what = gmx[i].name;
		mx_make_attr(&m, gmx[i].flags, what);
		expect_cancelled_holding(&c, &m, W_WAIT, MK_NORMAL, what);
		go = 0;
		cwaiter_start(
		    &w, &c, &m, &go, W_WAIT, CLOCK_REALTIME, MK_NORMAL, what);
		release_waiters(&c, &m, &go, false, what);
		cwaiter_finish(&w, what);
		EXPECT(what, pthread_mutex_destroy(&m), 0);
	}
}

/* ------------------------------------------------------------------ */
/* 4. pthread_rwlock                                                   */

enum rwinit { RI_NULL, RI_ATTR, RI_STATIC, RI_STATIC_WNR, RI_KIND, RI_ZERO };

struct rwvar {
	const char *name;
	enum rwinit init;
	int kind;           /* for RI_KIND */
	bool writer_nonrec; /* PREFER_WRITER_NONRECURSIVE behaviour */
};

static const struct rwvar rwvars[] = {
	{ "rwlock (init with NULL)", RI_NULL, 0, false },
	{ "rwlock (init with a default attr)", RI_ATTR, 0, false },
	{ "rwlock (PTHREAD_RWLOCK_INITIALIZER)", RI_STATIC, 0, false },
	{ "rwlock (PTHREAD_RWLOCK_WRITER_NONRECURSIVE_INITIALIZER_NP)",
	    RI_STATIC_WNR, 0, true },
	{ "rwlock (PTHREAD_RWLOCK_PREFER_READER_NP)", RI_KIND,
	    PTHREAD_RWLOCK_PREFER_READER_NP, false },
	/* glibc treats PREFER_WRITER_NP as PREFER_READER_NP. */
	{ "rwlock (PTHREAD_RWLOCK_PREFER_WRITER_NP)", RI_KIND,
	    PTHREAD_RWLOCK_PREFER_WRITER_NP, false },
	{ "rwlock (PTHREAD_RWLOCK_PREFER_WRITER_NONRECURSIVE_NP)", RI_KIND,
	    PTHREAD_RWLOCK_PREFER_WRITER_NONRECURSIVE_NP, true },
	{ "rwlock (zero-filled)", RI_ZERO, 0, false },
};
#define NRWVARS (sizeof rwvars / sizeof rwvars[0])

static void
rw_make(pthread_rwlock_t *l, const struct rwvar *v)
{
	static const pthread_rwlock_t s_init = PTHREAD_RWLOCK_INITIALIZER;
	static const pthread_rwlock_t s_wnr =
	    PTHREAD_RWLOCK_WRITER_NONRECURSIVE_INITIALIZER_NP;
	pthread_rwlockattr_t a;
	int kind = -1;

	switch (v->init) {
	case RI_NULL:
		memset(l, 0x5a, sizeof *l);
		EXPECT(v->name, pthread_rwlock_init(l, NULL), 0);
		break;
	case RI_ATTR:
	case RI_KIND:
		memset(l, 0x5a, sizeof *l);
		EXPECT(v->name, pthread_rwlockattr_init(&a), 0);
		if (v->init == RI_KIND) {
			EXPECT(v->name,
			    pthread_rwlockattr_setkind_np(&a, v->kind), 0);
			EXPECT(v->name,
			    pthread_rwlockattr_getkind_np(&a, &kind), 0);
			cr_assert(
			    kind == v->kind, "%s: getkind %d", v->name, kind);
		}
		EXPECT(v->name, pthread_rwlock_init(l, &a), 0);
		EXPECT(v->name, pthread_rwlockattr_destroy(&a), 0);
		break;
	case RI_STATIC:
		*l = s_init;
		break;
	case RI_STATIC_WNR:
		*l = s_wnr;
		break;
	case RI_ZERO:
		memset(l, 0, sizeof *l);
		break;
	}
}

/* What another thread gets from one rwlock operation. */
enum rwop {
	RW_TRYRD,
	RW_TRYWR,
	RW_TIMEDRD,
	RW_TIMEDWR,
	RW_CLOCKRD_MONO,
	RW_CLOCKWR_MONO,
	RW_CLOCKRD_RT,
	RW_CLOCKWR_RT,
	RW_RD,
	RW_WR
};

static const char *const rwop_names[] = { "tryrdlock", "trywrlock",
	"timedrdlock", "timedwrlock", "clockrdlock(MONOTONIC)",
	"clockwrlock(MONOTONIC)", "clockrdlock(REALTIME)",
	"clockwrlock(REALTIME)", "rdlock", "wrlock" };

/* Runs op on l with a deadline ms from now (a negative ms: that many ms
 * in the past); checks that a timeout does not come early. */
static int
rw_do(pthread_rwlock_t *l, enum rwop op, long ms, bool *early)
{
	clockid_t clk = (op == RW_CLOCKRD_MONO || op == RW_CLOCKWR_MONO)
	    ? CLOCK_MONOTONIC
	    : CLOCK_REALTIME;
	struct timespec dl = dropin_deadline(clk, ms);
	int rc = EINVAL;

	switch (op) {
	case RW_TRYRD:
		return pthread_rwlock_tryrdlock(l);
	case RW_TRYWR:
		return pthread_rwlock_trywrlock(l);
	case RW_RD:
		return pthread_rwlock_rdlock(l);
	case RW_WR:
		return pthread_rwlock_wrlock(l);
	case RW_TIMEDRD:
		rc = pthread_rwlock_timedrdlock(l, &dl);
		break;
	case RW_TIMEDWR:
		rc = pthread_rwlock_timedwrlock(l, &dl);
		break;
	case RW_CLOCKRD_MONO:
	case RW_CLOCKRD_RT:
		rc = pthread_rwlock_clockrdlock(l, clk, &dl);
		break;
	case RW_CLOCKWR_MONO:
	case RW_CLOCKWR_RT:
		rc = pthread_rwlock_clockwrlock(l, clk, &dl);
		break;
	}
	if (rc == ETIMEDOUT && early != NULL)
		*early = !dropin_ts_ge(dropin_now(clk), dl);
	return rc;
}

struct rwother {
	pthread_rwlock_t *l;
	enum rwop op;
	long ms;
	int rc, unlock_rc;
	bool early;
};

static void *
rwother_main(void *arg)
{
	struct rwother *o = arg;

	o->rc = rw_do(o->l, o->op, o->ms, &o->early);
	o->unlock_rc = o->rc == 0 ? pthread_rwlock_unlock(o->l) : 0;
	return NULL;
}

/* op by another thread (which unlocks again if it got the lock). */
static void
expect_other_rw(
    pthread_rwlock_t *l, enum rwop op, long ms, int want, const char *what)
{
	struct rwother o = { l, op, ms, -1, -1, false };

	join_thread(spawn(rwother_main, &o), what);
	cr_assert(o.rc == want,
	    "%s: %s by another thread returned %s, "
	    "expected %s",
	    what, rwop_names[op], en(o.rc), en(want));
	cr_assert(!o.early, "%s: %s timed out before its deadline", what,
	    rwop_names[op]);
	cr_assert(o.unlock_rc == 0, "%s: unlock: %s", what, en(o.unlock_rc));
}

TestSuite(rwlock, .timeout = T_O);

struct rdholder {
	pthread_rwlock_t *l;
	int *holders;
	int want;
	int rc, unlock_rc;
	bool all_at_once;
};

static void *
rdholder_main(void *arg)
{
	struct rdholder *r = arg;

	r->rc = pthread_rwlock_rdlock(r->l);
	if (r->rc != 0)
		return NULL;
	dropin_inc(r->holders);
	/* Hold it until every reader holds it. */
	r->all_at_once = dropin_await_ge(r->holders, r->want);
	r->unlock_rc = pthread_rwlock_unlock(r->l);
	return NULL;
}

Test(rwlock, readers_share_writers_exclude)
{
	static pthread_rwlock_t l;
	enum { NR = 3 };

	for (size_t i = 0; i < NRWVARS; i++) {
		const char *what = rwvars[i].name;
		struct rdholder r[NR];
		pthread_t t[NR];
		int holders = 0;

		rw_make(&l, &rwvars[i]);
		/* NR readers and this thread hold it at the same time. */
		EXPECT(what, pthread_rwlock_rdlock(&l), 0);
		holders = 1;
		for (int k = 0; k < NR; k++) {
			r[k] = (struct rdholder){ &l, &holders, NR + 1, -1, -1,
				false };
			t[k] = spawn(rdholder_main, &r[k]);
		}
		cr_assert(dropin_await_ge(&holders, NR + 1),
		    "%s: %d of %d readers hold it", what, dropin_load(&holders),
		    NR + 1);
		for (int k = 0; k < NR; k++) {
			join_thread(t[k], what);
			cr_assert(r[k].rc == 0 && r[k].unlock_rc == 0 &&
			        r[k].all_at_once,
			    "%s: reader %d: rdlock %s, unlock %s", what, k,
			    en(r[k].rc), en(r[k].unlock_rc));
		}
		/* Read-locked: other readers yes, writers no. */
		expect_other_rw(&l, RW_TRYRD, 0, 0, what);
		expect_other_rw(&l, RW_TIMEDRD, FAR_MS, 0, what);
		expect_other_rw(&l, RW_TRYWR, 0, EBUSY, what);
		expect_other_rw(&l, RW_TIMEDWR, SHORT_MS, ETIMEDOUT, what);
		expect_other_rw(&l, RW_CLOCKWR_MONO, SHORT_MS, ETIMEDOUT, what);
		expect_other_rw(&l, RW_CLOCKWR_RT, SHORT_MS, ETIMEDOUT, what);
		expect_other_rw(&l, RW_TIMEDWR, -1000, ETIMEDOUT, what);
		EXPECT(what, pthread_rwlock_unlock(&l), 0);

		/* Write-locked: nobody else. */
		EXPECT(what, pthread_rwlock_wrlock(&l), 0);
		expect_other_rw(&l, RW_TRYRD, 0, EBUSY, what);
		expect_other_rw(&l, RW_TRYWR, 0, EBUSY, what);
		expect_other_rw(&l, RW_TIMEDRD, SHORT_MS, ETIMEDOUT, what);
		expect_other_rw(&l, RW_TIMEDWR, SHORT_MS, ETIMEDOUT, what);
		expect_other_rw(&l, RW_CLOCKRD_MONO, SHORT_MS, ETIMEDOUT, what);
		expect_other_rw(&l, RW_CLOCKWR_MONO, SHORT_MS, ETIMEDOUT, what);
		expect_other_rw(&l, RW_CLOCKRD_RT, SHORT_MS, ETIMEDOUT, what);
		expect_other_rw(&l, RW_CLOCKWR_RT, SHORT_MS, ETIMEDOUT, what);
		expect_other_rw(&l, RW_TIMEDRD, -1000, ETIMEDOUT, what);
		EXPECT(what, pthread_rwlock_unlock(&l), 0);

		/* Free again. */
		expect_other_rw(&l, RW_TRYWR, 0, 0, what);
		expect_other_rw(&l, RW_TIMEDWR, FAR_MS, 0, what);
		EXPECT(what, pthread_rwlock_trywrlock(&l), 0);
		EXPECT(what, pthread_rwlock_unlock(&l), 0);
		EXPECT(what, pthread_rwlock_tryrdlock(&l), 0);
		EXPECT(what, pthread_rwlock_unlock(&l), 0);
		EXPECT(what, pthread_rwlock_destroy(&l), 0);
	}
}

Test(rwlock, bad_deadlines_and_clocks_are_einval_even_when_free)
{
	static pthread_rwlock_t l;
	static const long bad_nsec[] = { 1000000000L, -1 };

	for (size_t i = 0; i < NRWVARS; i++) {
		const char *what = rwvars[i].name;
		struct timespec ts;

		rw_make(&l, &rwvars[i]);
		/* pthread_rwlock_common.c checks clock and tv_nsec first. */
		for (size_t k = 0; k < 2; k++) {
			ts = with_nsec(dropin_now(CLOCK_REALTIME), bad_nsec[k]);
			EXPECT(
			    what, pthread_rwlock_timedrdlock(&l, &ts), EINVAL);
			EXPECT(
			    what, pthread_rwlock_timedwrlock(&l, &ts), EINVAL);
			ts =
			    with_nsec(dropin_now(CLOCK_MONOTONIC), bad_nsec[k]);
			EXPECT(what,
			    pthread_rwlock_clockrdlock(
			        &l, CLOCK_MONOTONIC, &ts),
			    EINVAL);
			EXPECT(what,
			    pthread_rwlock_clockwrlock(
			        &l, CLOCK_MONOTONIC, &ts),
			    EINVAL);
		}
		ts = dropin_deadline(CLOCK_MONOTONIC, FAR_MS);
		EXPECT(what,
		    pthread_rwlock_clockrdlock(
		        &l, CLOCK_PROCESS_CPUTIME_ID, &ts),
		    EINVAL);
		EXPECT(what,
		    pthread_rwlock_clockwrlock(
		        &l, CLOCK_PROCESS_CPUTIME_ID, &ts),
		    EINVAL);
		EXPECT(what,
		    pthread_rwlock_clockrdlock(&l, CLOCK_BOOTTIME, &ts),
		    EINVAL);
		/* None of them took it. */
		expect_other_rw(&l, RW_TRYWR, 0, 0, what);
		/* A deadline in the past does not matter when it is free. */
		EXPECT(what, pthread_rwlock_timedwrlock(&l, &NEGATIVE_TS), 0);
		EXPECT(what, pthread_rwlock_unlock(&l), 0);
		EXPECT(what, pthread_rwlock_timedrdlock(&l, &NEGATIVE_TS), 0);
		EXPECT(what, pthread_rwlock_unlock(&l), 0);
		EXPECT(what, pthread_rwlock_destroy(&l), 0);
	}
}

Test(rwlock, the_writer_relocking_is_edeadlk)
{
	static pthread_rwlock_t l;

	for (size_t i = 0; i < NRWVARS; i++) {
		const char *what = rwvars[i].name;
		struct timespec dl;

		rw_make(&l, &rwvars[i]);
		EXPECT(what, pthread_rwlock_wrlock(&l), 0);
		EXPECT(what, pthread_rwlock_wrlock(&l), EDEADLK);
		EXPECT(what, pthread_rwlock_rdlock(&l), EDEADLK);
		dl = dropin_deadline(CLOCK_REALTIME, FAR_MS);
		EXPECT(what, pthread_rwlock_timedwrlock(&l, &dl), EDEADLK);
		EXPECT(what, pthread_rwlock_timedrdlock(&l, &dl), EDEADLK);
		dl = dropin_deadline(CLOCK_MONOTONIC, FAR_MS);
		EXPECT(what,
		    pthread_rwlock_clockwrlock(&l, CLOCK_MONOTONIC, &dl),
		    EDEADLK);
		EXPECT(what,
		    pthread_rwlock_clockrdlock(&l, CLOCK_MONOTONIC, &dl),
		    EDEADLK);
		EXPECT(what, pthread_rwlock_trywrlock(&l), EBUSY);
		EXPECT(what, pthread_rwlock_tryrdlock(&l), EBUSY);
		EXPECT(what, pthread_rwlock_unlock(&l), 0);
		expect_other_rw(&l, RW_TRYWR, 0, 0, what);
		EXPECT(what, pthread_rwlock_destroy(&l), 0);
	}
}

struct rwwaiter {
	pthread_rwlock_t *l;
	enum rwop op;
	pid_t tid;
	int got;
	int rc, unlock_rc;
};

static void *
rwwaiter_main(void *arg)
{
	struct rwwaiter *w = arg;

	dropin_record_tid(&w->tid);
	w->rc = rw_do(w->l, w->op, FAR_MS, NULL);
	dropin_store(&w->got, 1);
	w->unlock_rc = w->rc == 0 ? pthread_rwlock_unlock(w->l) : 0;
	return NULL;
}

/* The timed calls with no deadline: glibc's header declares it nonnull,
 * but glibc takes NULL as no timeout, and then checks no clock until it
 * must wait (the drop-in crashed).  A free lock is taken at once, a held
 * one waited for until it is released.  (A held one with a clock that
 * cannot time a wait keeps glibc spinning for good: left out.)  The
 * calls go through pointers from dlsym, whose type says nothing of
 * nonnull: the compiler may not assume the NULL away, and UBSan does not
 * object to it. */
typedef int (*rw_timed_fn)(pthread_rwlock_t *, const struct timespec *);
typedef int (*rw_clock_fn)(
    pthread_rwlock_t *, clockid_t, const struct timespec *);

static void *
rw_fn(const char *name)
{
	void *f = dlsym(RTLD_DEFAULT, name);
	cr_assert(f != NULL, "no %s", name);
	return f;
}

static int
rw_no_deadline(pthread_rwlock_t *l, int k)
{
	switch (k) {
	case 0:
		return ((rw_timed_fn)rw_fn("pthread_rwlock_timedrdlock"))(
		    l, NULL);
	case 1:
		return ((rw_timed_fn)rw_fn("pthread_rwlock_timedwrlock"))(
		    l, NULL);
	case 2:
		return ((rw_clock_fn)rw_fn("pthread_rwlock_clockrdlock"))(
		    l, CLOCK_MONOTONIC, NULL);
	default:
		return ((rw_clock_fn)rw_fn("pthread_rwlock_clockwrlock"))(
		    l, CLOCK_REALTIME, NULL);
	}
}

static const char *const rw_no_deadline_names[] = { "timedrdlock(NULL)",
	"timedwrlock(NULL)", "clockrdlock(MONOTONIC, NULL)",
	"clockwrlock(REALTIME, NULL)" };

struct rwnd {
	pthread_rwlock_t *l;
	int k;
	pid_t tid;
	int got;
	int rc, unlock_rc;
};

static void *
rwnd_main(void *arg)
{
	struct rwnd *w = arg;

	dropin_record_tid(&w->tid);
	w->rc = rw_no_deadline(w->l, w->k);
	dropin_store(&w->got, 1);
	w->unlock_rc = w->rc == 0 ? pthread_rwlock_unlock(w->l) : 0;
	return NULL;
}

Test(rwlock, timed_calls_without_a_deadline_wait_untimed)
{
	static pthread_rwlock_t l;

	for (size_t i = 0; i < NRWVARS; i++) {
		rw_make(&l, &rwvars[i]);
		for (int k = 0; k < 4; k++) {
			char what[128];
			struct rwnd w = { &l, k, 0, 0, -1, -1 };
			pthread_t t;

			snprintf(what, sizeof what, "%s, %s", rwvars[i].name,
			    rw_no_deadline_names[k]);
			EXPECT(what, rw_no_deadline(&l, k), 0);
			EXPECT(what, pthread_rwlock_unlock(&l), 0);
			EXPECT(what, pthread_rwlock_wrlock(&l), 0);
			t = spawn(rwnd_main, &w);
			cr_assert(dropin_wait_blocked(&w.tid),
			    "%s: the waiter did not block", what);
			cr_assert(!dropin_load(&w.got), "%s: got in", what);
			EXPECT(what, pthread_rwlock_unlock(&l), 0);
			join_thread(t, what);
			cr_assert(w.rc == 0 && w.unlock_rc == 0,
			    "%s: the waiter's call returned %s, its unlock %s",
			    what, en(w.rc), en(w.unlock_rc));
		}
		const char *what = rwvars[i].name;
		EXPECT(what,
		    ((rw_clock_fn)rw_fn("pthread_rwlock_clockrdlock"))(
		        &l, CLOCK_PROCESS_CPUTIME_ID, NULL),
		    0);
		EXPECT(what, pthread_rwlock_unlock(&l), 0);
		EXPECT(what,
		    ((rw_clock_fn)rw_fn("pthread_rwlock_clockwrlock"))(
		        &l, CLOCK_PROCESS_CPUTIME_ID, NULL),
		    0);
		EXPECT(what, pthread_rwlock_unlock(&l), 0);
		EXPECT(what, pthread_rwlock_destroy(&l), 0);
	}
}

/*
 * A reader takes the lock again while a writer waits for it.  Under the
 * reader-preferring kinds (the default) that must succeed (and other
 * readers too); under PREFER_WRITER_NONRECURSIVE other readers wait
 * behind the writer.
 */
Test(rwlock, read_lock_again_while_a_writer_waits)
{
	static pthread_rwlock_t l;

	for (size_t i = 0; i < NRWVARS; i++) {
		const struct rwvar *v = &rwvars[i];
		const char *what = v->name;
		struct rwwaiter w;
		pthread_t t;

		rw_make(&l, v);
		EXPECT(what, pthread_rwlock_rdlock(&l), 0);
		memset(&w, 0, sizeof w);
		w.l = &l;
		w.op = (i & 1) ? RW_TIMEDWR : RW_WR;
		t = spawn(rwwaiter_main, &w);
		cr_assert(dropin_wait_blocked(&w.tid),
		    "%s: the writer did not block", what);
		if (!v->writer_nonrec) {
			struct timespec dl =
			    dropin_deadline(CLOCK_REALTIME, 2000);
			/* Bounded: a deadlock here is ETIMEDOUT. */
			EXPECT(what, pthread_rwlock_timedrdlock(&l, &dl), 0);
			EXPECT(what, pthread_rwlock_tryrdlock(&l), 0);
			expect_other_rw(&l, RW_TRYRD, 0, 0, what);
			/* A thread that holds no read lock, which this one
			 * waits for (the join): glibc lets it in at once, the
			 * drop-in after a bounded wait behind the writer, or
			 * at its own deadline when that comes first.  A
			 * deadlock would be ETIMEDOUT. */
			expect_other_rw(&l, RW_CLOCKRD_MONO, 1, 0, what);
			expect_other_rw(&l, RW_TIMEDRD, FAR_MS, 0, what);
			expect_other_rw(&l, RW_RD, 0, 0, what);
			EXPECT(what, pthread_rwlock_unlock(&l), 0);
			EXPECT(what, pthread_rwlock_unlock(&l), 0);
		} else {
			/* pthread_rwlock_tryrdlock.c: a primary writer and
			 * PREFER_WRITER_NONRECURSIVE -> EBUSY. */
			expect_other_rw(&l, RW_TRYRD, 0, EBUSY, what);
			expect_other_rw(
			    &l, RW_TIMEDRD, SHORT_MS, ETIMEDOUT, what);
		}
		cr_assert(dropin_load(&w.got) == 0,
		    "%s: the writer got the lock while it was read-locked",
		    what);
		EXPECT(what, pthread_rwlock_unlock(&l), 0);
		join_thread(t, what);
		cr_assert(w.rc == 0 && w.unlock_rc == 0,
		    "%s: the writer's lock %s, unlock %s", what, en(w.rc),
		    en(w.unlock_rc));
		EXPECT(what, pthread_rwlock_destroy(&l), 0);
	}
}

/* One locker of rwlock_queue_rounds: its place in the order of entry,
 * and how long its call took. */
struct seqrw {
	pthread_rwlock_t *l;
	enum rwop op;
	int *order;
	pid_t tid;
	int got, place;
	int rc, unlock_rc;
	long long took_ns;
};

static void *
seqrw_main(void *arg)
{
	struct seqrw *s = arg;
	struct timespec t0;

	dropin_record_tid(&s->tid);
	t0 = dropin_now(CLOCK_MONOTONIC);
	s->rc = rw_do(s->l, s->op, FAR_MS, NULL);
	s->took_ns = dropin_ts_diff_ns(t0, dropin_now(CLOCK_MONOTONIC));
	if (s->rc == 0) {
		s->place = dropin_inc(s->order); /* inside the lock */
		s->unlock_rc = pthread_rwlock_unlock(s->l);
	}
	dropin_store(&s->got, 1);
	return NULL;
}

/* Waits at most DROPIN_WAIT_MS until s got its lock or sleeps in the
 * kernel. */
static bool
seqrw_got_or_blocked(struct seqrw *s)
{
	struct timespec dl = dropin_deadline(CLOCK_MONOTONIC, DROPIN_WAIT_MS);
	unsigned polls = 0;
	int in_a_row = 0;

	while (!dropin_load(&s->got)) {
		pid_t tid = __atomic_load_n(&s->tid, __ATOMIC_ACQUIRE);
		in_a_row = tid != 0 && dropin_task_state(tid) == 'S'
		    ? in_a_row + 1
		    : 0;
		if (in_a_row >= 2)
			return true;
		if (dropin_reached(CLOCK_MONOTONIC, dl))
			return false;
		dropin_poll_pause(&polls);
	}
	return true;
}

/* The drop-in's bound on a reader's wait behind a waiting writer
 * (lib/pthread/rwlock.c, RD_BOUND_NS). */
#define RD_BOUND_NS 2000000LL

/*
 * A reader that holds no read lock arrives at a default rwlock that
 * another thread read-locks while a writer waits.  glibc lets it in at
 * once, ahead of the writer.  The drop-in queues it behind the writer,
 * as pl_rwlock does, so that a stream of readers cannot starve the
 * writers; but never for more than its bound, after which it gets in
 * anyway.  The holder lets go as soon as the reader got in or sleeps; a
 * round in which the reader waited the bound (the holder was slow to
 * let go) tells nothing and is run again.
 */
Test(rwlock, a_reader_holding_none_and_a_waiting_writer)
{
	static pthread_rwlock_t l = PTHREAD_RWLOCK_INITIALIZER;
	const bool dropin = dropin_active();
	int told = 0;

	for (int round = 0; round < 50 && told < 3; round++) {
		int order = 0;
		struct seqrw w = { .l = &l, .op = RW_WR, .order = &order };
		struct seqrw r = { .l = &l, .op = RW_RD, .order = &order };
		pthread_t wt, rt;

		cr_assert(pthread_rwlock_rdlock(&l) == 0);
		wt = spawn(seqrw_main, &w);
		cr_assert(
		    dropin_wait_blocked(&w.tid), "the writer did not block");
		rt = spawn(seqrw_main, &r);
		cr_assert(seqrw_got_or_blocked(&r),
		    "the reader neither got the lock nor blocked");
		cr_assert(pthread_rwlock_unlock(&l) == 0);
		join_thread(wt, "writer");
		join_thread(rt, "reader");
		cr_assert(w.rc == 0 && w.unlock_rc == 0 && r.rc == 0 &&
		        r.unlock_rc == 0,
		    "writer %s/%s, reader %s/%s", en(w.rc), en(w.unlock_rc),
		    en(r.rc), en(r.unlock_rc));
		if (!dropin) {
			cr_assert(r.place < w.place,
			    "glibc: the reader got in after the writer");
			told++;
		} else if (r.took_ns < RD_BOUND_NS) {
			cr_assert(w.place < r.place,
			    "the reader got in ahead of the waiting writer "
			    "after %lld us",
			    r.took_ns / 1000);
			told++;
		}
	}
	cr_assert(told > 0, "in no round did the holder let go in time");
}

/* Writers keep a == b under the write lock; readers check it. */
enum { RWS_WRITERS = 2, RWS_READERS = 2, RWS_MS = 400 };

struct rws {
	pthread_rwlock_t l;
	volatile long a, b;
	struct timespec deadline;
	long writes[RWS_WRITERS], reads[RWS_READERS];
	int inconsistent, errors;
	int writers_inside;
};

static struct rws rws;

static void *
rws_writer(void *arg)
{
	int me = (int)(intptr_t)arg;
	unsigned n = 0;

	while ((n++ & 15) || !dropin_reached(CLOCK_MONOTONIC, rws.deadline)) {
		if (pthread_rwlock_wrlock(&rws.l) != 0) {
			dropin_inc(&rws.errors);
			continue;
		}
		if (dropin_inc(&rws.writers_inside) != 1)
			dropin_inc(&rws.inconsistent);
		rws.a++;
		sched_yield();
		rws.b++;
		__atomic_sub_fetch(&rws.writers_inside, 1, __ATOMIC_ACQ_REL);
		if (pthread_rwlock_unlock(&rws.l) != 0)
			dropin_inc(&rws.errors);
		rws.writes[me]++;
	}
	return NULL;
}

static void *
rws_reader(void *arg)
{
	int me = (int)(intptr_t)arg;
	unsigned n = 0;

	while ((n++ & 15) || !dropin_reached(CLOCK_MONOTONIC, rws.deadline)) {
		int rc = (n & 1) ? pthread_rwlock_rdlock(&rws.l)
		                 : pthread_rwlock_tryrdlock(&rws.l);
		if (rc == EBUSY)
			continue;
		if (rc != 0) {
			dropin_inc(&rws.errors);
			continue;
		}
		if (rws.a != rws.b || dropin_load(&rws.writers_inside) != 0)
			dropin_inc(&rws.inconsistent);
		if (pthread_rwlock_unlock(&rws.l) != 0)
			dropin_inc(&rws.errors);
		rws.reads[me]++;
	}
	return NULL;
}

Test(rwlock, exclusion_stress)
{
	/* The default kind and
	 * PTHREAD_RWLOCK_WRITER_NONRECURSIVE_INITIALIZER_NP. */
	const struct rwvar *kinds[2] = { &rwvars[0], &rwvars[3] };

	for (size_t k = 0; k < 2; k++) {
		pthread_t w[RWS_WRITERS], r[RWS_READERS];
		long writes = 0, reads = 0;

		memset(&rws, 0, sizeof rws);
		rw_make(&rws.l, kinds[k]);
		rws.deadline = dropin_deadline(CLOCK_MONOTONIC, RWS_MS);
		for (int i = 0; i < RWS_WRITERS; i++)
			w[i] = spawn(rws_writer, (void *)(intptr_t)i);
		for (int i = 0; i < RWS_READERS; i++)
			r[i] = spawn(rws_reader, (void *)(intptr_t)i);
		for (int i = 0; i < RWS_WRITERS; i++) {
			join_ms(w[i], RWS_MS + DROPIN_WAIT_MS, kinds[k]->name);
			writes += rws.writes[i];
		}
		for (int i = 0; i < RWS_READERS; i++) {
			join_ms(r[i], RWS_MS + DROPIN_WAIT_MS, kinds[k]->name);
			reads += rws.reads[i];
		}
		cr_assert(rws.errors == 0 && rws.inconsistent == 0,
		    "%s: %d failed calls, %d inconsistent states",
		    kinds[k]->name, rws.errors, rws.inconsistent);
		cr_assert(rws.a == writes && rws.b == writes,
		    "%s: a %ld, b %ld, %ld writes", kinds[k]->name, rws.a,
		    rws.b, writes);
		cr_assert(writes > 0 && reads > 0, "%s: %ld writes, %ld reads",
		    kinds[k]->name, writes, reads);
		EXPECT(kinds[k]->name, pthread_rwlock_destroy(&rws.l), 0);
	}
}

/* ------------------------------------------------------------------ */
/* 5. pthread_once                                                     */

TestSuite(once, .timeout = T_O);

enum { NONCE = 6 };

static pthread_once_t oc_once = PTHREAD_ONCE_INIT;
static int oc_start, oc_runs, oc_done, oc_all_blocked;
static pid_t oc_tids[NONCE];

/* The routine waits until every other caller is blocked in pthread_once,
 * so the callers really contend. */
static void
oc_init(void)
{
	pid_t self = gettid();

	dropin_inc(&oc_runs);
	oc_all_blocked = 1;
	for (int i = 0; i < NONCE; i++)
		if (oc_tids[i] != self && !dropin_wait_blocked(&oc_tids[i]))
			oc_all_blocked = 0;
	dropin_store(&oc_done, 1);
}

struct oc_thread {
	int slot;
	int rc, saw_done;
};

static void *
oc_main(void *arg)
{
	struct oc_thread *o = arg;

	dropin_await_ge(&oc_start, 1);
	dropin_record_tid(&oc_tids[o->slot]);
	o->rc = pthread_once(&oc_once, oc_init);
	o->saw_done = dropin_load(&oc_done);
	return NULL;
}

Test(once, runs_once_under_contention)
{
	struct oc_thread o[NONCE];
	pthread_t t[NONCE];

	for (int i = 0; i < NONCE; i++) {
		o[i] = (struct oc_thread){ i, -1, 0 };
		t[i] = spawn(oc_main, &o[i]);
	}
	dropin_store(&oc_start, 1);
	for (int i = 0; i < NONCE; i++) {
		join_ms(t[i], 2 * DROPIN_WAIT_MS, "pthread_once caller");
		cr_assert(o[i].rc == 0 && o[i].saw_done == 1,
		    "caller %d: pthread_once returned %s before the routine "
		    "finished (%d)",
		    i, en(o[i].rc), o[i].saw_done);
	}
	cr_assert(oc_runs == 1, "the routine ran %d times", oc_runs);
	cr_assert(oc_all_blocked == 1,
	    "the other callers did not all block in pthread_once");
	EXPECT("once", pthread_once(&oc_once, oc_init), 0);
	cr_assert(oc_runs == 1, "the routine ran %d times", oc_runs);
}

static pthread_once_t ox_once = PTHREAD_ONCE_INIT;
static int ox_runs, ox_in_routine, ox_not_cancelled;

/* The first run blocks at a cancellation point (nanosleep) until it is
 * cancelled; later runs return at once. */
static void
ox_init(void)
{
	if (dropin_inc(&ox_runs) == 1) {
		struct timespec dl =
		    dropin_deadline(CLOCK_MONOTONIC, DROPIN_WAIT_MS);
		const struct timespec nap = { 0, 10000000L };
		dropin_store(&ox_in_routine, 1);
		while (!dropin_reached(CLOCK_MONOTONIC, dl))
			nanosleep(&nap, NULL);
		dropin_store(&ox_not_cancelled, 1);
	}
}

struct ox_thread {
	pid_t tid;
	int rc;
	int returned;
};

static void *
ox_main(void *arg)
{
	struct ox_thread *o = arg;

	dropin_record_tid(&o->tid);
	o->rc = pthread_once(&ox_once, ox_init);
	dropin_store(&o->returned, 1);
	return NULL;
}

Test(once, a_cancelled_routine_leaves_it_to_the_next_caller)
{
	struct ox_thread first = { 0, -1, 0 }, second = { 0, -1, 0 };
	pthread_t t1, t2;
	void *ret;

	t1 = spawn(ox_main, &first);
	cr_assert(
	    dropin_await_ge(&ox_in_routine, 1), "the routine did not start");
	/* A second caller waits for the routine to finish. */
	t2 = spawn(ox_main, &second);
	cr_assert(dropin_wait_blocked(&second.tid),
	    "the second caller did not block in pthread_once");
	cr_assert(dropin_load(&second.returned) == 0,
	    "pthread_once returned while its routine ran");
	EXPECT("once", pthread_cancel(t1), 0);
	ret = join_thread(t1, "the cancelled caller");
	cr_assert(ret == PTHREAD_CANCELED, "join gave %p", ret);
	cr_assert(first.returned == 0 && ox_not_cancelled == 0,
	    "the routine was not cancelled");
	/* The waiting caller runs the routine itself. */
	join_thread(t2, "the second caller");
	cr_assert(second.rc == 0 && second.returned == 1,
	    "the second caller: %s", en(second.rc));
	cr_assert(
	    ox_runs == 2, "the routine ran %d times, expected 2", ox_runs);
	EXPECT("once", pthread_once(&ox_once, ox_init), 0);
	cr_assert(
	    ox_runs == 2, "the routine ran %d times, expected 2", ox_runs);
}

static pthread_once_t on_outer = PTHREAD_ONCE_INIT;
static pthread_once_t on_inner = PTHREAD_ONCE_INIT;
static int on_outer_runs, on_inner_runs, on_inner_rc = -1;

static void
on_inner_init(void)
{
	on_inner_runs++;
}

static void
on_outer_init(void)
{
	on_outer_runs++;
	on_inner_rc = pthread_once(&on_inner, on_inner_init);
}

Test(once, nested_once_on_another_control)
{
	EXPECT("nested", pthread_once(&on_outer, on_outer_init), 0);
	cr_assert(on_outer_runs == 1 && on_inner_runs == 1 && on_inner_rc == 0,
	    "outer ran %d, inner ran %d (rc %s)", on_outer_runs, on_inner_runs,
	    en(on_inner_rc));
	EXPECT("nested", pthread_once(&on_outer, on_outer_init), 0);
	EXPECT("nested", pthread_once(&on_inner, on_inner_init), 0);
	cr_assert(on_outer_runs == 1 && on_inner_runs == 1,
	    "outer ran %d, inner ran %d", on_outer_runs, on_inner_runs);
}

/* ------------------------------------------------------------------ */
/* 6. C11 <threads.h>                                                  */

TestSuite(c11, .timeout = T_O);

enum c11op { C_TRYLOCK, C_TIMEDLOCK, C_LOCK };

struct c11other {
	mtx_t *m;
	enum c11op op;
	long ms;
	pid_t tid;
	int got;
	int rc, unlock_rc;
	bool early;
};

static void *
c11other_main(void *arg)
{
	struct c11other *o = arg;
	struct timespec dl = dropin_deadline(CLOCK_REALTIME, o->ms);

	dropin_record_tid(&o->tid);
	switch (o->op) {
	case C_TRYLOCK:
		o->rc = mtx_trylock(o->m);
		break;
	case C_TIMEDLOCK:
		o->rc = mtx_timedlock(o->m, &dl);
		if (o->rc == thrd_timedout)
			o->early = !dropin_reached(CLOCK_REALTIME, dl);
		break;
	case C_LOCK:
		o->rc = mtx_lock(o->m);
		break;
	}
	dropin_store(&o->got, 1);
	o->unlock_rc = o->rc == thrd_success ? mtx_unlock(o->m) : thrd_success;
	return NULL;
}

static void
expect_other_c11(mtx_t *m, enum c11op op, long ms, int want, const char *what)
{
	struct c11other o = { m, op, ms, 0, 0, -1, -1, false };

	join_thread(spawn(c11other_main, &o), what);
	cr_assert(o.rc == want && !o.early && o.unlock_rc == thrd_success,
	    "%s: op %d by another thread returned %d (expected %d)%s, "
	    "unlock %d",
	    what, op, o.rc, want, o.early ? ", before the deadline" : "",
	    o.unlock_rc);
}

static const struct {
	const char *name;
	int type;
} c11types[] = {
	{ "mtx_plain", mtx_plain },
	{ "mtx_timed", mtx_timed },
	{ "mtx_plain | mtx_recursive", mtx_plain | mtx_recursive },
	{ "mtx_timed | mtx_recursive", mtx_timed | mtx_recursive },
};

/* A type that is none of the four: glibc's mtx_init makes a plain mutex
 * of it (recursive only for mtx_plain | mtx_recursive and mtx_timed |
 * mtx_recursive, exactly), and so must the drop-in: its owner's trylock
 * is then busy, not a relock. */
Test(c11, mtx_init_of_another_type_is_not_recursive)
{
	static const int other[] = { 4, 5, 7, -1 };
	static mtx_t m;

	for (size_t i = 0; i < sizeof other / sizeof other[0]; i++) {
		cr_assert(mtx_init(&m, other[i]) == thrd_success,
		    "mtx_init(%d) failed", other[i]);
		cr_assert(mtx_lock(&m) == thrd_success);
		int rc = mtx_trylock(&m);
		cr_assert(rc == thrd_busy,
		    "type %d: the owner's mtx_trylock gave %d, not thrd_busy "
		    "(%d): a recursive mutex",
		    other[i], rc, thrd_busy);
		cr_assert(mtx_unlock(&m) == thrd_success);
		mtx_destroy(&m);
	}
}

Test(c11, mtx_each_type_lock_trylock_timedlock)
{
	static mtx_t m;

	for (size_t i = 0; i < 4; i++) {
		const char *what = c11types[i].name;
		bool recursive = c11types[i].type & mtx_recursive;
		bool timed = c11types[i].type & mtx_timed;
		struct c11other b = { &m, C_LOCK, 0, 0, 0, -1, -1, false };
		pthread_t t;

		memset(&m, 0x5a, sizeof m);
		cr_assert(mtx_init(&m, c11types[i].type) == thrd_success,
		    "%s: mtx_init failed", what);
		cr_assert(mtx_lock(&m) == thrd_success, "%s: mtx_lock", what);
		expect_other_c11(&m, C_TRYLOCK, 0, thrd_busy, what);
		if (timed)
			expect_other_c11(
			    &m, C_TIMEDLOCK, SHORT_MS, thrd_timedout, what);
		if (recursive) {
			struct timespec dl =
			    dropin_deadline(CLOCK_REALTIME, FAR_MS);
			cr_assert(mtx_lock(&m) == thrd_success &&
			        mtx_trylock(&m) == thrd_success,
			    "%s: relock", what);
			if (timed)
				cr_assert(
				    mtx_timedlock(&m, &dl) == thrd_success,
				    "%s: timed relock", what);
			cr_assert(mtx_unlock(&m) == thrd_success &&
			        mtx_unlock(&m) == thrd_success,
			    "%s: unlock", what);
			if (timed)
				cr_assert(mtx_unlock(&m) == thrd_success,
				    "%s: unlock", what);
			/* Held once still. */
			expect_other_c11(&m, C_TRYLOCK, 0, thrd_busy, what);
		} else {
			cr_assert(mtx_trylock(&m) == thrd_busy,
			    "%s: trylock by the owner did not fail busy", what);
		}
		/* A blocked locker gets it once it is released. */
		t = spawn(c11other_main, &b);
		cr_assert(
		    dropin_wait_blocked(&b.tid) && dropin_load(&b.got) == 0,
		    "%s: the locker did not block", what);
		cr_assert(mtx_unlock(&m) == thrd_success, "%s: unlock", what);
		join_thread(t, what);
		cr_assert(b.rc == thrd_success && b.unlock_rc == thrd_success,
		    "%s: the blocked locker: %d, %d", what, b.rc, b.unlock_rc);
		expect_other_c11(&m, C_TRYLOCK, 0, thrd_success, what);
		if (timed)
			expect_other_c11(
			    &m, C_TIMEDLOCK, FAR_MS, thrd_success, what);
		mtx_destroy(&m);
	}
}

struct c11waiter {
	mtx_t *m;
	cnd_t *c;
	const int *go;
	pid_t tid;
	int waiting, woke;
	int rc;
};

static void *
c11waiter_main(void *arg)
{
	struct c11waiter *w = arg;

	if (mtx_lock(w->m) != thrd_success) {
		w->rc = -2;
		return NULL;
	}
	dropin_record_tid(&w->tid);
	dropin_store(&w->waiting, 1);
	while (!dropin_load(w->go)) {
		w->rc = cnd_wait(w->c, w->m);
		if (w->rc != thrd_success)
			break;
	}
	dropin_store(&w->woke, 1);
	mtx_unlock(w->m);
	return NULL;
}

Test(c11, cnd_wait_signal_broadcast_timedwait)
{
	static mtx_t m;
	static cnd_t c;
	static int go;
	struct c11waiter w[3];
	pthread_t t[3];
	struct timespec dl;

	cr_assert(mtx_init(&m, mtx_plain) == thrd_success);
	cr_assert(cnd_init(&c) == thrd_success);
	cr_assert(
	    cnd_signal(&c) == thrd_success && cnd_broadcast(&c) == thrd_success,
	    "signal/broadcast with no waiter");
	for (int round = 0; round < 2; round++) {
		int n = round == 0 ? 1 : 3;
		go = 0;
		for (int k = 0; k < n; k++) {
			w[k] = (struct c11waiter){ &m, &c, &go, 0, 0, 0, 0 };
			t[k] = spawn(c11waiter_main, &w[k]);
			cr_assert(dropin_await_ge(&w[k].waiting, 1) &&
			        dropin_wait_blocked(&w[k].tid),
			    "waiter %d did not block", k);
		}
		cr_assert(mtx_lock(&m) == thrd_success);
		dropin_store(&go, 1);
		cr_assert((round == 0 ? cnd_signal(&c) : cnd_broadcast(&c)) ==
		    thrd_success);
		cr_assert(mtx_unlock(&m) == thrd_success);
		for (int k = 0; k < n; k++) {
			join_thread(t[k], "cnd waiter");
			cr_assert(w[k].woke == 1 && w[k].rc == thrd_success,
			    "waiter %d: woke %d, cnd_wait %d", k, w[k].woke,
			    w[k].rc);
		}
	}
	/* cnd_timedwait: TIME_UTC is CLOCK_REALTIME. */
	cr_assert(mtx_lock(&m) == thrd_success);
	cr_assert(timespec_get(&dl, TIME_UTC) == TIME_UTC);
	dl = dropin_ts_add_ms(dl, SHORT_MS);
	cr_assert(cnd_timedwait(&c, &m, &dl) == thrd_timedout,
	    "cnd_timedwait did not time out");
	cr_assert(dropin_reached(CLOCK_REALTIME, dl),
	    "cnd_timedwait timed out early");
	expect_other_c11(&m, C_TRYLOCK, 0, thrd_busy, "after cnd_timedwait");
	cr_assert(mtx_unlock(&m) == thrd_success);
	cnd_destroy(&c);
	mtx_destroy(&m);
}

static once_flag co_flag = ONCE_FLAG_INIT;
static int co_start, co_runs, co_done;

static void
co_init(void)
{
	const struct timespec nap = { 0, 20000000L };

	dropin_inc(&co_runs);
	/* Lets the other callers arrive (the result does not depend on
	 * it). */
	nanosleep(&nap, NULL);
	dropin_store(&co_done, 1);
}

static void *
co_main(void *arg)
{
	int *saw = arg;

	dropin_await_ge(&co_start, 1);
	call_once(&co_flag, co_init);
	*saw = dropin_load(&co_done);
	return NULL;
}

Test(c11, call_once_runs_once_under_contention)
{
	int saw[NONCE];
	pthread_t t[NONCE];

	for (int i = 0; i < NONCE; i++) {
		saw[i] = 0;
		t[i] = spawn(co_main, &saw[i]);
	}
	dropin_store(&co_start, 1);
	for (int i = 0; i < NONCE; i++) {
		join_thread(t[i], "call_once caller");
		cr_assert(saw[i] == 1,
		    "caller %d returned before the routine finished", i);
	}
	call_once(&co_flag, co_init);
	cr_assert(co_runs == 1, "the routine ran %d times", co_runs);
}

/* ------------------------------------------------------------------ */
/* 7. fork                                                             */

TestSuite(fork, .timeout = T_O);

/* A child's checks: it exits with the number of the first that failed. */
#define CHILD_CHECK(n, cond)                                                   \
	do {                                                                   \
		if (!(cond))                                                   \
			_exit(n);                                              \
	} while (0)

static void
expect_child_ok(pid_t pid, const char *what)
{
	int status = 0;

	cr_assert(pid > 0, "%s: fork failed", what);
	cr_assert(dropin_waitpid(pid, &status),
	    "%s: the child did not end in 5 s (killed)", what);
	cr_assert(WIFEXITED(status) && WEXITSTATUS(status) == 0,
	    "%s: the child failed check %d (status %#x)", what,
	    WIFEXITED(status) ? WEXITSTATUS(status) : -1, status);
}

struct shared {
	pthread_mutex_t m;
	pthread_cond_t c;
	int stage;
};

Test(fork, process_shared_mutex_and_cond_across_fork)
{
	const char *what = "process-shared";
	struct shared *s = mmap(NULL, sizeof *s, PROT_READ | PROT_WRITE,
	    MAP_SHARED | MAP_ANONYMOUS, -1, 0);
	pthread_condattr_t ca;
	struct timespec dl;
	pid_t pid;
	int v = -1;

	cr_assert(s != MAP_FAILED, "mmap");
	mx_make_attr(&s->m, MA_PSHARED, what);
	EXPECT(what, pthread_condattr_init(&ca), 0);
	EXPECT(
	    what, pthread_condattr_setpshared(&ca, PTHREAD_PROCESS_SHARED), 0);
	EXPECT(what, pthread_condattr_getpshared(&ca, &v), 0);
	cr_assert(v == PTHREAD_PROCESS_SHARED);
	EXPECT(what, pthread_cond_init(&s->c, &ca), 0);
	EXPECT(what, pthread_condattr_destroy(&ca), 0);

	/* The child can only get the mutex once the parent waits. */
	EXPECT(what, pthread_mutex_lock(&s->m), 0);
	pid = fork();
	if (pid == 0) {
		CHILD_CHECK(10, pthread_mutex_lock(&s->m) == 0);
		s->stage = 1;
		CHILD_CHECK(11, pthread_cond_signal(&s->c) == 0);
		dl = dropin_deadline(CLOCK_REALTIME, DROPIN_WAIT_MS);
		while (s->stage != 2)
			CHILD_CHECK(
			    12, pthread_cond_timedwait(&s->c, &s->m, &dl) == 0);
		s->stage = 3;
		CHILD_CHECK(13, pthread_cond_broadcast(&s->c) == 0);
		CHILD_CHECK(14, pthread_mutex_unlock(&s->m) == 0);
		_exit(0);
	}
	cr_assert(pid > 0, "fork failed");
	dl = dropin_deadline(CLOCK_REALTIME, DROPIN_WAIT_MS);
	while (s->stage != 1)
		EXPECT("parent, waiting for the child's signal",
		    pthread_cond_timedwait(&s->c, &s->m, &dl), 0);
	s->stage = 2;
	EXPECT(what, pthread_cond_signal(&s->c), 0);
	while (s->stage != 3)
		EXPECT("parent, waiting for the child's broadcast",
		    pthread_cond_timedwait(&s->c, &s->m, &dl), 0);
	EXPECT(what, pthread_mutex_unlock(&s->m), 0);
	expect_child_ok(pid, what);
	EXPECT(what, pthread_mutex_trylock(&s->m), 0);
	EXPECT(what, pthread_mutex_unlock(&s->m), 0);
	EXPECT(what, pthread_cond_destroy(&s->c), 0);
	EXPECT(what, pthread_mutex_destroy(&s->m), 0);
	munmap(s, sizeof *s);
}

/*
 * Threads park on a mutex (held by the forking thread) and on a cond;
 * then fork.  The child, which has only the forking thread, can still
 * use both; the parent then releases its threads, which all finish.
 */
enum { FK_LOCKERS = 2, FK_WAITERS = 2 };

Test(fork, with_threads_parked_on_a_mutex_and_a_cond)
{
	static pthread_mutex_t m = PTHREAD_MUTEX_INITIALIZER;
	static pthread_cond_t c = PTHREAD_COND_INITIALIZER;
	static int go;
	struct blocker b[FK_LOCKERS];
	struct cwaiter w[FK_WAITERS];
	const char *what = "fork with parked threads";
	pid_t pid;

	go = 0;
	for (int i = 0; i < FK_WAITERS; i++)
		cwaiter_start(&w[i], &c, &m, &go, i ? W_TIMED : W_WAIT,
		    CLOCK_REALTIME, MK_NORMAL, what);
	EXPECT(what, pthread_mutex_lock(&m), 0);
	for (int i = 0; i < FK_LOCKERS; i++)
		blocker_start(&b[i], &m, what);

	pid = fork();
	if (pid == 0) {
		struct timespec dl;
		/* The mutex is held by this (the forking) thread. */
		CHILD_CHECK(20, pthread_mutex_unlock(&m) == 0);
		CHILD_CHECK(21, pthread_mutex_lock(&m) == 0);
		CHILD_CHECK(22, pthread_cond_signal(&c) == 0);
		dl = dropin_deadline(CLOCK_REALTIME, SHORT_MS);
		CHILD_CHECK(
		    23, pthread_cond_timedwait(&c, &m, &dl) == ETIMEDOUT);
		CHILD_CHECK(24, dropin_reached(CLOCK_REALTIME, dl));
		CHILD_CHECK(25, pthread_mutex_unlock(&m) == 0);
		CHILD_CHECK(26, pthread_mutex_trylock(&m) == 0);
		CHILD_CHECK(27, pthread_mutex_unlock(&m) == 0);
		_exit(0);
	}
	expect_child_ok(pid, what);

	/* Parent: the threads are still parked; release them all. */
	for (int i = 0; i < FK_LOCKERS; i++)
		cr_assert(
		    dropin_load(&b[i].got) == 0, "a locker got the held mutex");
	dropin_store(&go, 1);
	EXPECT(what, pthread_cond_broadcast(&c), 0);
	EXPECT(what, pthread_mutex_unlock(&m), 0);
	for (int i = 0; i < FK_LOCKERS; i++)
		blocker_finish(&b[i], what);
	for (int i = 0; i < FK_WAITERS; i++)
		cwaiter_finish(&w[i], what);
	EXPECT(what, in_other(op_trylock, &m), 0);
}

/* ------------------------------------------------------------------ */
/* 8. stress: exclusion and no lost wakeup                             */

TestSuite(stress, .timeout = T_O);

enum { ST_THREADS = 4, ST_MS = 200 };

struct st {
	pthread_mutex_t m;
	enum mkind kind;
	struct timespec deadline;
	long counter; /* under m */
	int inside;
	long done[ST_THREADS], busy[ST_THREADS];
	int errors, overlaps;
};

static struct st st;

static void *
st_main(void *arg)
{
	int me = (int)(intptr_t)arg;
	unsigned n = 0;

	while ((n++ & 63) || !dropin_reached(CLOCK_MONOTONIC, st.deadline)) {
		int rc = (n & 7) == 0 ? pthread_mutex_trylock(&st.m)
		                      : pthread_mutex_lock(&st.m);
		if (rc == EBUSY) {
			st.busy[me]++;
			continue;
		}
		if (rc != 0) {
			dropin_inc(&st.errors);
			continue;
		}
		if (st.kind == MK_RECURSIVE && (n & 3) == 0 &&
		    pthread_mutex_lock(&st.m) != 0)
			dropin_inc(&st.errors);
		if (dropin_inc(&st.inside) != 1)
			dropin_inc(&st.overlaps);
		st.counter++;
		__atomic_sub_fetch(&st.inside, 1, __ATOMIC_ACQ_REL);
		if (st.kind == MK_RECURSIVE && (n & 3) == 0 &&
		    pthread_mutex_unlock(&st.m) != 0)
			dropin_inc(&st.errors);
		if (pthread_mutex_unlock(&st.m) != 0)
			dropin_inc(&st.errors);
		st.done[me]++;
	}
	return NULL;
}

Test(stress, counter_under_each_mutex_kind)
{
	const struct mvar *kinds[5] = { &mvars[MV_NORMAL_ATTR],
		&mvars[MV_ERRORCHECK_ATTR], &mvars[MV_RECURSIVE_ATTR],
		&mvars[MV_ADAPTIVE_ATTR], &mvars[MV_DEFAULT_NULL] };

	for (size_t k = 0; k < 5; k++) {
		pthread_t t[ST_THREADS];
		long total = 0;

		memset(&st, 0, sizeof st);
		mx_make(&st.m, kinds[k]);
		st.kind = kinds[k]->kind;
		st.deadline = dropin_deadline(CLOCK_MONOTONIC, ST_MS);
		for (int i = 0; i < ST_THREADS; i++)
			t[i] = spawn(st_main, (void *)(intptr_t)i);
		for (int i = 0; i < ST_THREADS; i++) {
			join_ms(t[i], ST_MS + DROPIN_WAIT_MS, kinds[k]->name);
			total += st.done[i];
		}
		cr_assert(st.errors == 0 && st.overlaps == 0,
		    "%s: %d failed calls, %d overlaps", kinds[k]->name,
		    st.errors, st.overlaps);
		cr_assert(st.counter == total,
		    "%s: counter %ld, %ld increments", kinds[k]->name,
		    st.counter, total);
		for (int i = 0; i < ST_THREADS; i++)
			cr_assert(st.done[i] > 0, "%s: thread %d never got it",
			    kinds[k]->name, i);
		EXPECT(kinds[k]->name, pthread_mutex_destroy(&st.m), 0);
	}
}

enum { PP_ROUNDS = 20000 };

struct pp {
	pthread_mutex_t m;
	pthread_cond_t turn_is[2];
	int turn;
	long seq, bad_order, waits;
	int errors;
};

static struct pp pp;

static void *
pp_main(void *arg)
{
	int me = (int)(intptr_t)arg;

	for (long i = 0; i < PP_ROUNDS; i++) {
		if (pthread_mutex_lock(&pp.m) != 0)
			dropin_inc(&pp.errors);
		while (pp.turn != me) {
			if (pthread_cond_wait(&pp.turn_is[me], &pp.m) != 0)
				dropin_inc(&pp.errors);
			pp.waits++;
		}
		if (pp.seq != 2 * i + me)
			pp.bad_order++;
		pp.seq++;
		pp.turn = 1 - me;
		if (pthread_cond_signal(&pp.turn_is[1 - me]) != 0)
			dropin_inc(&pp.errors);
		if (pthread_mutex_unlock(&pp.m) != 0)
			dropin_inc(&pp.errors);
	}
	return NULL;
}

Test(stress, ping_pong_20000_rounds)
{
	struct timespec start = dropin_now(CLOCK_MONOTONIC);
	pthread_t t[2];

	memset(&pp, 0, sizeof pp);
	mx_make(&pp.m, &mvars[MV_NORMAL_ATTR]);
	cv_make(&pp.turn_is[0], CV_DEFAULT);
	cv_make(&pp.turn_is[1], CV_DEFAULT);
	for (int i = 0; i < 2; i++)
		t[i] = spawn(pp_main, (void *)(intptr_t)i);
	/* A lost wakeup leaves both waiting for ever. */
	for (int i = 0; i < 2; i++)
		join_ms(t[i], 10000, "ping-pong (lost wakeup?)");
	cr_assert(pp.errors == 0, "%d failed calls", pp.errors);
	cr_assert(pp.seq == 2L * PP_ROUNDS && pp.bad_order == 0,
	    "seq %ld, %ld turns out of order", pp.seq, pp.bad_order);
	cr_assert(pp.waits > 0, "nobody waited: the test is void");
	cr_log_info("ping-pong: %d rounds in %.0f ms, %ld waits", PP_ROUNDS,
	    dropin_ms_since(CLOCK_MONOTONIC, start), pp.waits);
	EXPECT("ping-pong", pthread_cond_destroy(&pp.turn_is[0]), 0);
	EXPECT("ping-pong", pthread_cond_destroy(&pp.turn_is[1]), 0);
	EXPECT("ping-pong", pthread_mutex_destroy(&pp.m), 0);
}
