/* SPDX-License-Identifier: MIT */
/*
 * dlcheck: a checked build (-DPL_CHECKED) for tests/deadlock.sh, whose
 * detector mode comes from PARKINGLOT_DEADLOCK.
 *
 *   dlcheck abba      dl_lock_a then dl_lock_b in one thread, the reverse
 *                     in a second that runs after it: an inversion that
 *                     never hangs; exits 0
 *   dlcheck many N    N distinct mutexes, each taken with the next one
 *                     held, then 4 threads that each add to the counters
 *                     the pairs guard; exits 0 if no update was lost
 *
 * A real deadlock of a checked build is tests/abba-checked's (abba.c).
 *
 * Exits 2 on a bad command line, 99 if it cannot set up.
 */
#define _GNU_SOURCE
#include <inttypes.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <parkinglot.h>

#if defined(__SANITIZE_THREAD__)
/* The inversions here are on purpose: ThreadSanitizer, which checks lock
 * order too (the locks annotate themselves), would report them and fail
 * the program.  Its races are still reported. */
const char *__tsan_default_options(void);
const char *
__tsan_default_options(void)
{
	return "detect_deadlocks=0";
}
#endif

pl_mutex_t dl_lock_a = PL_MUTEX_INITIALIZER;
pl_mutex_t dl_lock_b = PL_MUTEX_INITIALIZER;

static __attribute__((noinline)) void *
take_a_b(void *arg)
{
	(void)arg;
	pl_mutex_lock(&dl_lock_a);
	pl_mutex_lock(&dl_lock_b);
	pl_mutex_unlock(&dl_lock_b);
	pl_mutex_unlock(&dl_lock_a);
	return NULL;
}

static __attribute__((noinline)) void *
take_b_a(void *arg)
{
	(void)arg;
	pl_mutex_lock(&dl_lock_b);
	pl_mutex_lock(&dl_lock_a);
	pl_mutex_unlock(&dl_lock_a);
	pl_mutex_unlock(&dl_lock_b);
	return NULL;
}

static int
abba(void)
{
	pthread_t t;
	if (pthread_create(&t, NULL, take_a_b, NULL) || pthread_join(t, NULL))
		return 99;
	if (pthread_create(&t, NULL, take_b_a, NULL) || pthread_join(t, NULL))
		return 99;
	return 0;
}

/* ---- many ------------------------------------------------------------- */

static pl_mutex_t *many_lock;
static uint64_t *many_count;
static long many_n;
static uint64_t many_done[4];

static void *
many_worker(void *arg)
{
	int me = (int)(intptr_t)arg;
	for (int round = 0; round < 20; round++)
		for (long i = 0; i + 1 < many_n; i++) {
			pl_mutex_lock(&many_lock[i]);
			pl_mutex_lock(&many_lock[i + 1]);
			many_count[i]++;
			pl_mutex_unlock(&many_lock[i + 1]);
			pl_mutex_unlock(&many_lock[i]);
			many_done[me]++;
		}
	return NULL;
}

static int
many(long n)
{
	many_n = n;
	many_lock = calloc((size_t)n, sizeof *many_lock);
	many_count = calloc((size_t)n, sizeof *many_count);
	if (!many_lock || !many_count)
		return 99;
	pthread_t t[4];
	for (int i = 0; i < 4; i++)
		if (pthread_create(
		        &t[i], NULL, many_worker, (void *)(intptr_t)i))
			return 99;
	for (int i = 0; i < 4; i++)
		pthread_join(t[i], NULL);
	uint64_t sum = 0, done = 0;
	for (long i = 0; i < n; i++)
		sum += many_count[i];
	for (int i = 0; i < 4; i++)
		done += many_done[i];
	if (sum != done || done != (uint64_t)4 * 20 * (uint64_t)(n - 1)) {
		fprintf(stderr, "dlcheck: %" PRIu64 " updates of %" PRIu64 "\n",
		    sum, done);
		return 1;
	}
	printf("dlcheck: %" PRIu64 " updates under %ld locks\n", sum, n);
	return 0;
}

int
main(int argc, char **argv)
{
	if (argc == 2 && strcmp(argv[1], "abba") == 0)
		return abba();
	if (argc == 3 && strcmp(argv[1], "many") == 0) {
		long n = strtol(argv[2], NULL, 10);
		return n >= 2 ? many(n) : 2;
	}
	fprintf(stderr, "usage: dlcheck abba|many N\n");
	return 2;
}
