/* SPDX-License-Identifier: MIT */
/*
 * dlclose SO: load the shared library SO with dlopen, have threads contend
 * a mutex through it (so that each parks, and gets a per-thread record and
 * its thread-specific-data destructor), dlclose it, and only then let
 * those threads exit.  Their destructor must still be there: the library
 * is linked with -z nodelete, so that it stays loaded (checked with
 * RTLD_NOLOAD).  Without that, the exits call into unmapped code and the
 * process dies of SIGSEGV.  tests/dlclose.sh runs it on the .so of the
 * build tree.  Never links the library itself.
 *
 * Exits 0 when all went well, 1 with a line on stderr when not.
 */
#include <dlfcn.h>
#include <pthread.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#include <parkinglot.h>

#define NTHREADS 4

static int (*timedlock)(pl_mutex_t *, const struct timespec *);
static void (*unlock_fair)(pl_mutex_t *);
static void (*stats_get)(struct pl_stats *);

static pl_mutex_t m = PL_MUTEX_INITIALIZER;
static int used;     /* threads done with the library (atomic) */
static int may_exit; /* set once the library is closed (atomic) */

static void
fail(const char *what)
{
	fprintf(stderr, "dlclose: %s\n", what);
	exit(1);
}

static void *
sym(void *h, const char *name)
{
	void *p = dlsym(h, name);
	if (p == NULL)
		fail(dlerror());
	return p;
}

static long long
now_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (long long)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

/* Poll *p until it reaches v, at most 10 s (only a bug takes that long);
 * false on timeout.  Calls nothing of the library. */
static bool
wait_for(const int *p, int v)
{
	long long end = now_ns() + 10000000000LL;
	while (__atomic_load_n(p, __ATOMIC_ACQUIRE) < v) {
		if (now_ns() > end)
			return false;
		sched_yield();
	}
	return true;
}

static void *
worker(void *arg)
{
	(void)arg;
	if (timedlock(&m, NULL) != 0)
		fail("pl_mutex_timedlock failed");
	unlock_fair(&m);
	__atomic_fetch_add(&used, 1, __ATOMIC_RELEASE);
	if (!wait_for(&may_exit, 1))
		fail("timed out waiting for dlclose");
	return NULL; /* the thread exits: its TSD destructor runs now */
}

int
main(int argc, char **argv)
{
	if (argc != 2) {
		fprintf(stderr, "usage: dlclose path/to/libparkinglot.so\n");
		return 2;
	}
	void *h = dlopen(argv[1], RTLD_NOW | RTLD_LOCAL);
	if (h == NULL)
		fail(dlerror());
	timedlock = (int (*)(pl_mutex_t *, const struct timespec *))sym(
	    h, "pl_mutex_timedlock");
	unlock_fair = (void (*)(pl_mutex_t *))sym(h, "pl_mutex_unlock_fair");
	stats_get = (void (*)(struct pl_stats *))sym(h, "pl_stats_get");

	/* Hold the mutex until every worker is parked on it. */
	if (timedlock(&m, NULL) != 0)
		fail("pl_mutex_timedlock failed");
	pthread_t t[NTHREADS];
	for (int i = 0; i < NTHREADS; i++)
		if (pthread_create(&t[i], NULL, worker, NULL) != 0)
			fail("pthread_create failed");
	long long end = now_ns() + 10000000000LL;
	for (;;) {
		struct pl_stats st;
		stats_get(&st);
		if (st.threads_parked_now == NTHREADS)
			break;
		if (now_ns() > end)
			fail("timed out waiting for the workers to park");
		sched_yield();
	}
	unlock_fair(&m);
	if (!wait_for(&used, NTHREADS))
		fail("timed out waiting for the workers to get the mutex");

	if (dlclose(h) != 0)
		fail(dlerror());
	__atomic_store_n(&may_exit, 1, __ATOMIC_RELEASE);
	for (int i = 0; i < NTHREADS; i++)
		pthread_join(t[i], NULL);

	/* -z nodelete: still loaded, which is why the exits had code to
	 * run. */
	void *again = dlopen(argv[1], RTLD_NOW | RTLD_NOLOAD);
	if (again == NULL)
		fail("the library was unloaded by dlclose (not -z nodelete)");
	dlclose(again);
	return 0;
}
