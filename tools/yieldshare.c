/* SPDX-License-Identifier: MIT */
/*
 * yieldshare: how much of a CPU the kernel gives a thread that calls
 * sched_yield after each unit of work, when it shares that CPU with a
 * thread that never yields -- no lock involved.  lockbench's W4 measures
 * such yielding threads beside the lock threads; this program separates
 * the scheduler's part of that figure from the locks' (doc/BENCHMARKS.md,
 * "W4: where the other CPU goes").
 *
 * Three runs of SECONDS each (default 2), every thread pinned to CPU 0:
 * the busy thread alone, the yielding thread alone, both together.  A unit
 * is 1000 xorshift steps, as in W4; the yielding thread calls sched_yield
 * after each.  Prints each thread's units per second, and in the shared
 * run each one's rate over its rate alone.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <pthread.h>
#include <sched.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define UNIT 1000 /* xorshift steps a unit, W4's YIELD_WORK */

static int stop;

struct worker {
	bool yield;
	unsigned long units;
	uint64_t x; /* the work's result, so that it is not optimized out */
};

static void *
work(void *arg)
{
	struct worker *w = arg;
	uint64_t x = w->yield ? 88172645463325252u : 2463534242u;
	unsigned long n = 0;

	while (!__atomic_load_n(&stop, __ATOMIC_RELAXED)) {
		for (int i = 0; i < UNIT; i++) {
			x ^= x << 13;
			x ^= x >> 7;
			x ^= x << 17;
		}
		if (w->yield)
			sched_yield();
		n++;
	}
	w->units = n;
	w->x = x;
	return NULL;
}

static void
die(const char *what, int err)
{
	fprintf(stderr, "yieldshare: %s: %s\n", what, strerror(err));
	exit(1);
}

/* Run the busy thread (busy) and the yielding one (yielder) on CPU 0 for
 * secs; their rates in units per second into rate[0] and rate[1]. */
static void
run(bool busy, bool yielder, double secs, double rate[2])
{
	struct worker w[2] = { { .yield = false }, { .yield = true } };
	bool on[2] = { busy, yielder };
	pthread_t t[2];
	pthread_attr_t attr;
	cpu_set_t cpu0;
	int err;

	CPU_ZERO(&cpu0);
	CPU_SET(0, &cpu0);
	if ((err = pthread_attr_init(&attr)) != 0 ||
	    (err = pthread_attr_setaffinity_np(&attr, sizeof cpu0, &cpu0)) != 0)
		die("pthread_attr", err);
	__atomic_store_n(&stop, 0, __ATOMIC_RELAXED);
	for (int i = 0; i < 2; i++)
		if (on[i] && (err = pthread_create(&t[i], &attr, work, &w[i])))
			die("pthread_create", err);
	struct timespec d = { (time_t)secs,
		(long)((secs - (double)(time_t)secs) * 1e9) };
	while (nanosleep(&d, &d) != 0 && errno == EINTR)
		;
	__atomic_store_n(&stop, 1, __ATOMIC_RELAXED);
	for (int i = 0; i < 2; i++) {
		if (on[i] && (err = pthread_join(t[i], NULL)) != 0)
			die("pthread_join", err);
		rate[i] = on[i] ? (double)w[i].units / secs : 0;
	}
	pthread_attr_destroy(&attr);
}

int
main(int argc, char **argv)
{
	double secs = argc > 1 ? strtod(argv[1], NULL) : 2.0;
	double busy[2], yielder[2], both[2];

	if (argc > 2 || !(secs > 0 && secs <= 3600)) {
		fprintf(stderr, "usage: yieldshare [SECONDS]\n");
		return 2;
	}
	run(true, false, secs, busy);
	run(false, true, secs, yielder);
	run(true, true, secs, both);
	printf("CPU 0, %.1f s a run, a unit = %d xorshift steps\n", secs, UNIT);
	printf("busy thread alone        %9.1f kunits/s\n", busy[0] / 1e3);
	printf("yielding thread alone    %9.1f kunits/s\n", yielder[1] / 1e3);
	printf("together: busy           %9.1f kunits/s  %.4f of alone\n",
	    both[0] / 1e3, both[0] / busy[0]);
	printf("together: yielding       %9.1f kunits/s  %.4f of alone\n",
	    both[1] / 1e3, both[1] / yielder[1]);
	return 0;
}
