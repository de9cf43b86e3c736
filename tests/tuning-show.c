/* SPDX-License-Identifier: MIT */
/*
 * Prints the tuning in force, public and internal, as one line of
 * name=value pairs; tests/tuning.sh runs it under various environments.
 * Linked with the convenience library to read pli_tuning().
 *
 *   -m N  first pin the main thread to the N-th CPU of its affinity mask
 *   -t N  derive the tuning in the first contended lock of the process,
 *         taken by a thread pinned to the N-th CPU of the main thread's
 *         mask (else pl_tuning_get derives it, in the main thread)
 *
 * Exits 2 when a CPU asked for is not in the mask or cannot be pinned to.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <pthread.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>
#include <unistd.h>

#include <parkinglot/mutex.h>
#include <parkinglot/tuning.h>

#include "internal.h"

static cpu_set_t mask; /* the main thread's, at the start */

/* The n-th CPU of mask, or -1. */
static int
nth_cpu(int n)
{
	for (int c = 0; c < CPU_SETSIZE; c++)
		if (CPU_ISSET(c, &mask) && n-- == 0)
			return c;
	return -1;
}

static void
pin_or_exit(int n)
{
	int cpu = nth_cpu(n);
	cpu_set_t one;
	CPU_ZERO(&one);
	if (cpu >= 0)
		CPU_SET(cpu, &one);
	if (cpu < 0 ||
	    pthread_setaffinity_np(pthread_self(), sizeof one, &one) != 0) {
		fprintf(stderr, "tuning-show: cannot pin to CPU #%d\n", n);
		exit(2);
	}
}

/* The first contended lock of the process: a timed lock of a mutex this
 * thread holds, with a deadline already past, enters the slow path (which
 * derives the tuning) and returns ETIMEDOUT. */
static void *
contend(void *arg)
{
	pin_or_exit(*(int *)arg);
	static pl_mutex_t m;
	struct timespec past;
	clock_gettime(CLOCK_MONOTONIC, &past);
	past.tv_sec--;
	pl_mutex_lock(&m);
	if (pl_mutex_timedlock(&m, &past) != ETIMEDOUT) {
		fprintf(
		    stderr, "tuning-show: the timed lock did not time out\n");
		exit(1);
	}
	pl_mutex_unlock(&m);
	return NULL;
}

int
main(int argc, char **argv)
{
	int main_cpu = -1, thread_cpu = -1, opt;
	while ((opt = getopt(argc, argv, "m:t:")) != -1) {
		if (opt == 'm')
			main_cpu = atoi(optarg);
		else if (opt == 't')
			thread_cpu = atoi(optarg);
		else
			return 2;
	}
	if (sched_getaffinity(0, sizeof mask, &mask) != 0) {
		perror("tuning-show: sched_getaffinity");
		return 2;
	}
	if (main_cpu >= 0)
		pin_or_exit(main_cpu);
	if (thread_cpu >= 0) {
		pthread_t t;
		if (pthread_create(&t, NULL, contend, &thread_cpu) != 0)
			return 2;
		pthread_join(t, NULL);
	}
	struct pl_tuning t;
	pl_tuning_get(&t);
	const struct pli_tuning *in = pli_tuning();
	printf("spin=%u yield=%u fair=%u poll_ns=%u pauses=%u pause_ns=%u "
	       "adapt=%u\n",
	    t.spin_limit, t.yield_limit, t.fair_interval_us, in->poll_ns,
	    in->pause_per_spin, in->pause_ns, in->adapt);
	return 0;
}
