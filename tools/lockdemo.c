/* SPDX-License-Identifier: MIT */
/*
 * lockdemo: pl_mutex_t against pthread_mutex_t on a contended counter.
 *
 * N threads (-t, default 4), thread i pinned to the i-th CPU of the
 * affinity mask (modulo their number), each loop: a few dozen xorshift
 * steps of private work, then lock, increment a shared plain counter,
 * unlock.  Each lock gets -s seconds (default 2), split into 3 runs with
 * fresh threads; the table shows Mops/s (min/median/max over the runs)
 * and the ratio of the medians.  Exits 1 if the counter does not equal
 * the number of increments, which would mean the lock let two threads in.
 * A quick demonstration, not a benchmark: see doc/BENCHMARKS.md.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <pthread.h>
#include <sched.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>
#include <unistd.h>

#include <parkinglot.h>

#define RUNS 3

enum kind { KIND_PL, KIND_PTHREAD };

static const char *const kind_name[] = { "pl_mutex_t", "pthread_mutex_t" };

/* The lock and the data it guards, away from the flags every thread reads. */
static struct {
	_Alignas(64) pl_mutex_t pl;
	pthread_mutex_t pt;
	unsigned long counter;
} shared = { PL_MUTEX_INITIALIZER, PTHREAD_MUTEX_INITIALIZER, 0 };

static _Alignas(64) int stop;
static pthread_barrier_t start;

struct worker {
	pthread_t tid;
	enum kind kind;
	int cpu;
	unsigned long ops;
	uint64_t sink;
};

static void *
work(void *arg)
{
	struct worker *w = arg;
	uint64_t x = 0x9e3779b97f4a7c15u * (uint64_t)(w->cpu + 1) + w->ops;
	unsigned long ops = 0;

	if (w->cpu >= 0) {
		cpu_set_t set;
		CPU_ZERO(&set);
		CPU_SET(w->cpu, &set);
		pthread_setaffinity_np(pthread_self(), sizeof set, &set);
	}
	pthread_barrier_wait(&start);
	while (!__atomic_load_n(&stop, __ATOMIC_RELAXED)) {
		/* Work outside the lock: 16..47 xorshift64 steps. */
		for (unsigned n = 16 + (unsigned)(x & 31); n > 0; n--) {
			x ^= x << 13;
			x ^= x >> 7;
			x ^= x << 17;
		}
		if (w->kind == KIND_PL) {
			pl_mutex_lock(&shared.pl);
			shared.counter++;
			pl_mutex_unlock(&shared.pl);
		} else {
			pthread_mutex_lock(&shared.pt);
			shared.counter++;
			pthread_mutex_unlock(&shared.pt);
		}
		ops++;
	}
	w->ops = ops;
	w->sink = x;
	return NULL;
}

static double
now(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

/* One run with fresh threads; returns Mops/s, or -1 if the count is off. */
static double
run(enum kind kind, int nthreads, const int *cpus, int ncpus, double secs)
{
	struct worker *w = calloc((size_t)nthreads, sizeof *w);
	unsigned long total = 0;
	struct timespec nap = { (time_t)secs,
		(long)((secs - (double)(time_t)secs) * 1e9) };
	double t0, t1;
	int i, err;

	if (w == NULL) {
		perror("lockdemo: calloc");
		exit(2);
	}
	shared.counter = 0;
	__atomic_store_n(&stop, 0, __ATOMIC_RELAXED);
	pthread_barrier_init(&start, NULL, (unsigned)nthreads + 1);
	for (i = 0; i < nthreads; i++) {
		w[i].kind = kind;
		w[i].cpu = ncpus > 0 ? cpus[i % ncpus] : -1;
		err = pthread_create(&w[i].tid, NULL, work, &w[i]);
		if (err != 0) {
			errno = err;
			perror("lockdemo: pthread_create");
			exit(2);
		}
	}
	pthread_barrier_wait(&start);
	t0 = now();
	while (nanosleep(&nap, &nap) != 0 && errno == EINTR)
		;
	__atomic_store_n(&stop, 1, __ATOMIC_RELAXED);
	for (i = 0; i < nthreads; i++) {
		pthread_join(w[i].tid, NULL);
		total += w[i].ops;
	}
	t1 = now();
	pthread_barrier_destroy(&start);
	free(w);
	if (shared.counter != total) {
		fprintf(stderr, "lockdemo: %s: counter %lu != %lu increments\n",
		    kind_name[kind], shared.counter, total);
		return -1;
	}
	return (double)total / (t1 - t0) / 1e6;
}

static int
cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;
	return (x > y) - (x < y);
}

int
main(int argc, char **argv)
{
	int nthreads = 4, cpus[CPU_SETSIZE], ncpus = 0, opt, bad = 0;
	double secs = 2.0, mops[2][RUNS];
	cpu_set_t set;

	while ((opt = getopt(argc, argv, "t:s:h")) != -1) {
		if (opt == 't')
			nthreads = atoi(optarg);
		else if (opt == 's')
			secs = atof(optarg);
		else
			bad = 1;
	}
	if (bad || optind != argc || nthreads < 1 || nthreads > 4096 ||
	    !(secs > 0 && secs < 3600)) {
		fprintf(
		    stderr, "usage: %s [-t THREADS] [-s SECONDS]\n", argv[0]);
		return 2;
	}
	if (sched_getaffinity(0, sizeof set, &set) == 0)
		for (int c = 0; c < CPU_SETSIZE; c++)
			if (CPU_ISSET(c, &set))
				cpus[ncpus++] = c;

	printf("lockdemo %s: %d threads on %d CPUs, %d runs of %.2f s per "
	       "lock\n\n",
	    pl_version(), nthreads, ncpus, RUNS, secs / RUNS);
	printf("%-16s %10s %10s %10s   (Mops/s)\n", "lock", "min", "median",
	    "max");
	for (int k = KIND_PL; k <= KIND_PTHREAD; k++) {
		for (int r = 0; r < RUNS; r++) {
			mops[k][r] = run(
			    (enum kind)k, nthreads, cpus, ncpus, secs / RUNS);
			if (mops[k][r] < 0)
				return 1;
		}
		qsort(mops[k], RUNS, sizeof mops[k][0], cmp_double);
		printf("%-16s %10.2f %10.2f %10.2f\n", kind_name[k], mops[k][0],
		    mops[k][RUNS / 2], mops[k][RUNS - 1]);
	}
	printf("\nratio pl/pthread (medians): %.2f\n",
	    mops[KIND_PL][RUNS / 2] / mops[KIND_PTHREAD][RUNS / 2]);
	return 0;
}
