/* SPDX-License-Identifier: MIT */
/*
 * errno-first KIND: make the first calls of one kind in this process (the
 * calls that read the topology and set up the tuning, allocate the first
 * per-thread record, and so on) with errno set to a sentinel in every
 * thread that makes them, and check that errno still holds it after each
 * call.  Only pl_park of a malformed deadline sets errno (EINVAL), and
 * kind park-einval checks that.  tests/errno-first.sh runs each kind in a
 * process of its own, so that each is the first of the process.
 *
 * Kind topology calls the internal topology reader (lib/topology.c)
 * directly.
 *
 * Exits 0 when errno was left alone everywhere, 1 (with one line on
 * stderr per change) when not, 2 for a bad KIND or a test that could not
 * run as meant.  Linked with the convenience library, for pli_*.
 */
#include <errno.h>
#include <pthread.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include <parkinglot.h>

#include "internal.h"

/* No errno value: a change to any real one shows. */
#define SENTINEL 12345

static const char *kind;
static int failures;

/* errno must still be the sentinel after what; set it again for the next
 * call.  (A failure count updated by two threads: atomic.) */
static void
check(const char *what)
{
	int e = errno;
	if (e != SENTINEL) {
		fprintf(stderr, "errno-first %s: %s changed errno to %d (%s)\n",
		    kind, what, e, strerror(e));
		__atomic_fetch_add(&failures, 1, __ATOMIC_RELAXED);
	}
	errno = SENTINEL;
}

static void
fatal(const char *what)
{
	fprintf(stderr, "errno-first %s: %s\n", kind, what);
	exit(2);
}

static struct timespec
in_ns(long long ns)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	long long t = (long long)ts.tv_sec * 1000000000 + ts.tv_nsec + ns;
	if (t < 0)
		t = 0;
	ts.tv_sec = (time_t)(t / 1000000000);
	ts.tv_nsec = (long)(t % 1000000000);
	return ts;
}

/* Poll until done(arg), at most 10 s (only a broken library waits that
 * long); what says what for, should it time out. */
static void
wait_until(bool (*done)(const void *), const void *arg, const char *what)
{
	struct timespec end = in_ns(10000000000LL), now;
	while (!done(arg)) {
		clock_gettime(CLOCK_MONOTONIC, &now);
		if (now.tv_sec > end.tv_sec) {
			char msg[128];
			snprintf(
			    msg, sizeof msg, "timed out waiting for %s", what);
			fatal(msg);
		}
		sched_yield();
	}
}

/* A bit to wait for, in a byte or a word.  Never calls the library, so
 * that the wait may come before any call. */
struct bit {
	const void *p;
	size_t size;
	uintptr_t bit;
};

static bool
bit_set(const void *arg)
{
	const struct bit *b = arg;
	uintptr_t v = b->size == 1
	    ? __atomic_load_n((const unsigned char *)b->p, __ATOMIC_ACQUIRE)
	    : __atomic_load_n((const uintptr_t *)b->p, __ATOMIC_ACQUIRE);
	return (v & b->bit) != 0;
}

static void
wait_bit(const void *p, size_t size, uintptr_t bit)
{
	struct bit b = { p, size, bit };
	wait_until(bit_set, &b, "a waiter to park");
}

#define wait_bit_byte(p, bit) wait_bit((p), 1, (bit))
#define wait_bit_word(p, bit) wait_bit((p), sizeof(uintptr_t), (bit))

/* A timed call that must time out: rc is what it returned. */
static void
timed_out(int rc, const char *what)
{
	if (rc != ETIMEDOUT) {
		char msg[160];
		snprintf(msg, sizeof msg, "%s: returned %d, not ETIMEDOUT",
		    what, rc);
		fatal(msg);
	}
	check(what);
}

static void
spawn(pthread_t *t, void *(*fn)(void *), void *arg)
{
	int saved = errno;
	if (pthread_create(t, NULL, fn, arg) != 0)
		fatal("pthread_create failed");
	errno = saved;
}

static void
join(pthread_t t)
{
	int saved = errno;
	pthread_join(t, NULL);
	errno = saved;
}

/* ---- the kinds ------------------------------------------------------ */

static pl_mutex_t m = PL_MUTEX_INITIALIZER;
static pl_rmutex_t rm = PL_RMUTEX_INITIALIZER;
static pl_rwlock_t rw = PL_RWLOCK_INITIALIZER;
static pl_cond_t c = PL_COND_INITIALIZER;
static uintptr_t word;
static unsigned char byte;
static int flag;
/* Set by a waiter once its timed calls are over: a parked bit seen after
 * that is its blocking call's. */
static int timed_done;

static bool
flag_set(const void *arg)
{
	return __atomic_load_n((const int *)arg, __ATOMIC_ACQUIRE) != 0;
}

static void
wait_timed_done(void)
{
	wait_until(flag_set, &timed_done, "the timed calls");
}

/* Unlock m, fairly or not. */
static void
mutex_unlock(bool fair)
{
	if (fair)
		pl_mutex_unlock_fair(&m);
	else
		pl_mutex_unlock(&m);
}

static void *
mutex_waiter(void *arg)
{
	bool fair = arg != NULL;
	errno = SENTINEL;
	pl_mutex_lock(&m);
	check("contended pl_mutex_lock");
	mutex_unlock(fair);
	check("pl_mutex_unlock");
	return NULL;
}

static void
mutex_lock(bool fair)
{
	pthread_t t;
	pl_mutex_lock(&m); /* the fast path: no tuning read yet */
	check("uncontended pl_mutex_lock");
	spawn(&t, mutex_waiter, fair ? &m : NULL);
	wait_bit_byte(&m.state, PL_MUTEX_PARKED);
	mutex_unlock(fair);
	check(fair ? "pl_mutex_unlock_fair with a waiter"
	           : "pl_mutex_unlock with a waiter");
	join(t);
}

static void *
timedlock_waiter(void *arg)
{
	(void)arg;
	errno = SENTINEL;
	struct timespec d = in_ns(20000000);
	timed_out(pl_mutex_timedlock(&m, &d), "pl_mutex_timedlock timing out");
	d = in_ns(-1000000000);
	timed_out(pl_mutex_timedlock(&m, &d),
	    "pl_mutex_timedlock with a past deadline");
	return NULL;
}

static void
mutex_timedlock(void)
{
	pthread_t t;
	pl_mutex_lock(&m);
	spawn(&t, timedlock_waiter, NULL);
	join(t);
	pl_mutex_unlock(&m);
	check("pl_mutex_unlock");
	struct timespec d = in_ns(-1000000000);
	if (pl_mutex_timedlock(&m, &d) != 0)
		fatal("pl_mutex_timedlock of a free mutex failed");
	check("pl_mutex_timedlock of a free mutex");
	pl_mutex_unlock(&m);
}

static void *
rmutex_waiter(void *arg)
{
	(void)arg;
	errno = SENTINEL;
	struct timespec d = in_ns(20000000);
	timed_out(
	    pl_rmutex_timedlock(&rm, &d), "pl_rmutex_timedlock timing out");
	if (pl_rmutex_unlock(&rm) != EPERM)
		fatal("pl_rmutex_unlock by a non-owner did not fail");
	check("pl_rmutex_unlock by a non-owner (EPERM)");
	__atomic_store_n(&timed_done, 1, __ATOMIC_RELEASE);
	pl_rmutex_lock(&rm);
	check("contended pl_rmutex_lock");
	pl_rmutex_unlock(&rm);
	check("pl_rmutex_unlock");
	return NULL;
}

static void
rmutex(void)
{
	pthread_t t;
	pl_rmutex_lock(&rm);
	check("pl_rmutex_lock");
	spawn(&t, rmutex_waiter, NULL);
	wait_timed_done();
	wait_bit_byte(&rm.lock.state, PL_MUTEX_PARKED);
	pl_rmutex_unlock(&rm);
	check("pl_rmutex_unlock with a waiter");
	join(t);
}

/* One side of the rwlock: the waiter's calls, and the holder's. */
struct rw_side {
	const char *name, *other; /* "rd" / "wr" */
	void (*lock)(pl_rwlock_t *);
	int (*timedlock)(pl_rwlock_t *, const struct timespec *);
	void (*unlock)(pl_rwlock_t *);
	void (*hold)(pl_rwlock_t *), (*release)(pl_rwlock_t *);
	uintptr_t parked_bit;
};

static void *
rw_waiter(void *arg)
{
	const struct rw_side *w = arg;
	char what[96];
	errno = SENTINEL;
	struct timespec d = in_ns(20000000);
	snprintf(
	    what, sizeof what, "pl_rwlock_timed%slock timing out", w->name);
	timed_out(w->timedlock(&rw, &d), what);
	d = in_ns(-1000000000);
	snprintf(what, sizeof what,
	    "pl_rwlock_timed%slock with a past "
	    "deadline",
	    w->name);
	timed_out(w->timedlock(&rw, &d), what);
	__atomic_store_n(&timed_done, 1, __ATOMIC_RELEASE);
	w->lock(&rw);
	snprintf(what, sizeof what, "contended pl_rwlock_%slock", w->name);
	check(what);
	w->unlock(&rw);
	snprintf(what, sizeof what, "pl_rwlock_%sunlock", w->name);
	check(what);
	return NULL;
}

static void
rwlock_side(const struct rw_side *w)
{
	pthread_t t;
	char what[96];
	w->hold(&rw);
	snprintf(what, sizeof what, "pl_rwlock_%slock", w->other);
	check(what);
	spawn(&t, rw_waiter, (void *)w);
	wait_timed_done();
	wait_bit_word(&rw.state, w->parked_bit);
	w->release(&rw);
	snprintf(what, sizeof what, "pl_rwlock_%sunlock with a waiter parked",
	    w->other);
	check(what);
	join(t);
}

static void
rwlock_rd(void)
{
	static const struct rw_side rd = { "rd", "wr", pl_rwlock_rdlock,
		pl_rwlock_timedrdlock, pl_rwlock_rdunlock, pl_rwlock_wrlock,
		pl_rwlock_wrunlock, PL_RWLOCK_READER_PARKED };
	rwlock_side(&rd);
}

static void
rwlock_wr(void)
{
	static const struct rw_side wr = { "wr", "rd", pl_rwlock_wrlock,
		pl_rwlock_timedwrlock, pl_rwlock_wrunlock, pl_rwlock_rdlock,
		pl_rwlock_rdunlock, PL_RWLOCK_WRITER_PARKED };
	rwlock_side(&wr);
}

static void *
cond_waiter(void *arg)
{
	(void)arg;
	errno = SENTINEL;
	pl_mutex_lock(&m);
	while (!flag) {
		pl_cond_wait(&c, &m);
		check("pl_cond_wait");
	}
	pl_mutex_unlock(&m);
	check("pl_mutex_unlock");
	return NULL;
}

static bool
somebody_parked(const void *arg)
{
	struct pl_stats st;
	(void)arg;
	pl_stats_get(&st);
	return st.threads_parked_now != 0;
}

static void
cond(bool broadcast)
{
	pl_mutex_lock(&m);
	struct timespec d = in_ns(20000000);
	timed_out(
	    pl_cond_timedwait(&c, &m, &d), "pl_cond_timedwait timing out");
	pl_cond_signal(&c);
	check("pl_cond_signal without waiters");
	pl_cond_broadcast(&c);
	check("pl_cond_broadcast without waiters");
	pl_mutex_unlock(&m);

	pthread_t t;
	spawn(&t, cond_waiter, NULL);
	/* Until it waits (parked, and so on c, the one place it parks while
	 * m is free); a waiter that comes late sees the flag anyway. */
	wait_until(somebody_parked, NULL, "the cond waiter");
	pl_mutex_lock(&m);
	flag = 1;
	if (broadcast)
		pl_cond_broadcast(&c);
	else
		pl_cond_signal(&c);
	check(broadcast ? "pl_cond_broadcast with a waiter"
	                : "pl_cond_signal with a waiter");
	pl_mutex_unlock(&m);
	check("pl_mutex_unlock");
	join(t);
}

static bool
yes(void *ctx)
{
	(void)ctx;
	return true;
}

static bool
no(void *ctx)
{
	(void)ctx;
	return false;
}

static void
park(void)
{
	struct timespec d = in_ns(5000000);
	if (pl_park(&word, yes, NULL, NULL, NULL, 0, &d).status !=
	    PL_PARK_TIMED_OUT)
		fatal("pl_park did not time out");
	check("pl_park timing out");
	if (pl_park(&word, no, NULL, NULL, NULL, 0, NULL).status !=
	    PL_PARK_INVALID)
		fatal("pl_park of a false validate did not return INVALID");
	check("pl_park with validate false");
	pl_unpark_one(&word, NULL, NULL);
	check("pl_unpark_one");
	pl_unpark_all(&word, 0);
	check("pl_unpark_all");
	pl_unpark_filter(&word, NULL, NULL, NULL);
	check("pl_unpark_filter");
	pl_unpark_requeue(&word, &byte, NULL, NULL, NULL);
	check("pl_unpark_requeue");
}

static void
park_einval(void)
{
	struct timespec bad = { 0, 1000000000L };
	if (pl_park(&word, yes, NULL, NULL, NULL, 0, &bad).status !=
	    PL_PARK_INVALID)
		fatal("pl_park of a malformed deadline did not fail");
	if (errno != EINVAL) {
		fprintf(stderr,
		    "errno-first %s: pl_park of a malformed deadline left "
		    "errno %d, not EINVAL\n",
		    kind, errno);
		failures++;
	}
	errno = SENTINEL;
	struct timespec neg = { -1, 0 };
	if (pl_mutex_timedlock(&m, &neg) != EINVAL)
		fatal(
		    "pl_mutex_timedlock of a malformed deadline did not fail");
	check("pl_mutex_timedlock of a malformed deadline");
}

static void
once_fn(void *arg)
{
	++*(int *)arg;
}

static void
once(void)
{
	static pl_once_t o = PL_ONCE_INIT;
	int n = 0;
	pl_once(&o, once_fn, &n);
	check("pl_once, first");
	pl_once(&o, once_fn, &n);
	check("pl_once, done");
	if (n != 1)
		fatal("pl_once ran its function other than once");
}

static void *
bit_waiter(void *arg)
{
	(void)arg;
	errno = SENTINEL;
	pl_bitlock_lock(&word, 1, 2);
	check("contended pl_bitlock_lock");
	pl_bitlock_unlock(&word, 1, 2);
	check("pl_bitlock_unlock");
	pl_bitlock8_lock(&byte, 1, 2);
	check("contended pl_bitlock8_lock");
	pl_bitlock8_unlock_fair(&byte, 1, 2);
	check("pl_bitlock8_unlock_fair");
	return NULL;
}

static void
bitlock(void)
{
	pthread_t t;
	pl_bitlock_lock(&word, 1, 2);
	pl_bitlock8_lock(&byte, 1, 2);
	check("pl_bitlock_lock");
	spawn(&t, bit_waiter, NULL);
	wait_bit_word(&word, 2);
	pl_bitlock_unlock(&word, 1, 2);
	check("pl_bitlock_unlock with a waiter");
	wait_bit_byte(&byte, 2);
	pl_bitlock8_unlock(&byte, 1, 2);
	check("pl_bitlock8_unlock with a waiter");
	join(t);
}

static void
tuning_get(void)
{
	struct pl_tuning t;
	pl_tuning_get(&t);
	check("pl_tuning_get");
}

static void
tuning_set(void)
{
	struct pl_tuning t = { 3, 4, 500 };
	pl_tuning_set(&t);
	check("pl_tuning_set");
}

static void
stats(void)
{
	struct pl_stats st;
	pl_stats_get(&st);
	check("pl_stats_get");
	pl_stats_reset();
	check("pl_stats_reset");
}

static void
stats_export(void)
{
	if (pl_stats_export(true) != 0)
		fatal("pl_stats_export(true) failed");
	check("pl_stats_export(true)");
	mutex_lock(false);
	pl_stats_reset();
	check("pl_stats_reset while exporting");
	if (pl_stats_export(false) != 0)
		fatal("pl_stats_export(false) failed");
	check("pl_stats_export(false)");
}

/* An export that fails: a directory in the way of its shared-memory
 * object (shm_open fails with EEXIST, and the directory cannot be removed
 * as a stale object), which the call reports by its return value alone. */
static void
stats_export_fail(void)
{
	char path[64];
	snprintf(path, sizeof path, "/dev/shm/parkinglot.%ld", (long)getpid());
	if (mkdir(path, 0700) != 0)
		fatal("cannot make a directory in /dev/shm");
	errno = SENTINEL;
	int rc = pl_stats_export(true);
	check("pl_stats_export(true) failing");
	rmdir(path);
	if (rc == 0)
		fatal("pl_stats_export(true) did not fail");
}

static void
topology(void)
{
	struct pli_topology t;
	pli_topology_get(&t);
	check("pli_topology_get");
}

static void
mutex_lock_plain(void)
{
	mutex_lock(false);
}

static void
mutex_lock_fair(void)
{
	mutex_lock(true);
}

static void
cond_signal(void)
{
	cond(false);
}

static void
cond_broadcast(void)
{
	cond(true);
}

static const struct {
	const char *name;
	void (*run)(void);
} kinds[] = {
	{ "mutex-lock", mutex_lock_plain },
	{ "mutex-unlock-fair", mutex_lock_fair },
	{ "mutex-timedlock", mutex_timedlock },
	{ "rmutex", rmutex },
	{ "rwlock-rd", rwlock_rd },
	{ "rwlock-wr", rwlock_wr },
	{ "cond-signal", cond_signal },
	{ "cond-broadcast", cond_broadcast },
	{ "park", park },
	{ "park-einval", park_einval },
	{ "once", once },
	{ "bitlock", bitlock },
	{ "tuning-get", tuning_get },
	{ "tuning-set", tuning_set },
	{ "stats", stats },
	{ "stats-export", stats_export },
	{ "stats-export-fail", stats_export_fail },
	{ "topology", topology },
};

int
main(int argc, char **argv)
{
	if (argc != 2) {
		fprintf(stderr, "usage: errno-first KIND (or --list)\n");
		return 2;
	}
	kind = argv[1];
	size_t n = sizeof kinds / sizeof kinds[0];
	if (strcmp(kind, "--list") == 0) {
		for (size_t i = 0; i < n; i++)
			printf("%s\n", kinds[i].name);
		return 0;
	}
	void (*run)(void) = NULL;
	for (size_t i = 0; i < n; i++)
		if (strcmp(kind, kinds[i].name) == 0)
			run = kinds[i].run;
	if (run == NULL) {
		fprintf(stderr, "errno-first: unknown kind '%s'\n", kind);
		return 2;
	}
	errno = SENTINEL;
	run();
	return failures ? 1 : 0;
}
