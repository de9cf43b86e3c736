/* SPDX-License-Identifier: MIT */
/*
 * dlpthread: a plain pthread program, built with no libparkinglot header
 * and not linked with it, that takes two global mutexes in both orders,
 * in two threads that run one after the other (so it never hangs), for
 * tests/deadlock.sh: under the drop-in (LD_PRELOAD) with
 * PARKINGLOT_DEADLOCK=report the detector must report the inversion.
 *
 *   dlpthread          the inversion (lock_one then lock_two in the first
 *                      thread, the reverse in the second)
 *   dlpthread --clean  both threads in the same order: nothing to report
 *
 * Exits 0, or 1 if a pthread call fails.
 */
#include <pthread.h>
#include <stdio.h>
#include <string.h>

pthread_mutex_t lock_one = PTHREAD_MUTEX_INITIALIZER;
pthread_mutex_t lock_two = PTHREAD_MUTEX_INITIALIZER;
static int failed;

static void
both(pthread_mutex_t *first, pthread_mutex_t *second)
{
	failed |= pthread_mutex_lock(first) != 0;
	failed |= pthread_mutex_lock(second) != 0;
	failed |= pthread_mutex_unlock(second) != 0;
	failed |= pthread_mutex_unlock(first) != 0;
}

static __attribute__((noinline)) void *
one_then_two(void *arg)
{
	(void)arg;
	both(&lock_one, &lock_two);
	return NULL;
}

static __attribute__((noinline)) void *
two_then_one(void *arg)
{
	(void)arg;
	both(&lock_two, &lock_one);
	return NULL;
}

int
main(int argc, char **argv)
{
	int clean = argc > 1 && strcmp(argv[1], "--clean") == 0;
	pthread_t t;
	if (pthread_create(&t, NULL, one_then_two, NULL) ||
	    pthread_join(t, NULL))
		return 1;
	if (pthread_create(
	        &t, NULL, clean ? one_then_two : two_then_one, NULL) ||
	    pthread_join(t, NULL))
		return 1;
	if (failed)
		fprintf(stderr, "dlpthread: a pthread call failed\n");
	return failed;
}
