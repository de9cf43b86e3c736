/* SPDX-License-Identifier: MIT */
/*
 * growcost: what one growth of the parking lot's table costs the thread
 * that triggers it (doc/scaling.md, check C2).  The table grows when the
 * threads holding a per-thread record pass three per bucket; a thread
 * gets its record at its first park.  This program starts N threads one
 * at a time; each times its first pl_park, one whose validate returns
 * false (it creates the record and returns at once), and then parks for
 * real on an address of its own, so that its record stays live.  The
 * first park of the thread that takes the count past the load factor
 * pays for the growth; those of its neighbours do not.  Prints the time
 * of each first park from thread FROM to N, one line each, then wakes
 * and joins every thread.
 *
 *   growcost [N [FROM]]     default N = 400, FROM = 90
 *
 * One growth per peak and process: run it several times.
 */
#define _GNU_SOURCE
#include <pthread.h>
#include <sched.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#include <parkinglot.h>

struct slot {
	uint64_t first_ns; /* the first park's time, written before done */
	int done;          /* set once first_ns is (release) */
	int wake;          /* the address it parks on, set to leave */
};

static struct slot *slots;

static uint64_t
now_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

static bool
refuse(void *ctx)
{
	(void)ctx;
	return false;
}

static bool
still_asleep(void *ctx)
{
	return __atomic_load_n((int *)ctx, __ATOMIC_ACQUIRE) == 0;
}

static void *
thread(void *arg)
{
	struct slot *s = arg;
	uint64_t t0 = now_ns();
	pl_park(&s->wake, refuse, NULL, NULL, NULL, 0, NULL);
	s->first_ns = now_ns() - t0;
	__atomic_store_n(&s->done, 1, __ATOMIC_RELEASE);
	while (still_asleep(&s->wake))
		pl_park(&s->wake, still_asleep, NULL, NULL, &s->wake, 0, NULL);
	return NULL;
}

int
main(int argc, char **argv)
{
	long n = argc > 1 ? strtol(argv[1], NULL, 10) : 400;
	long from = argc > 2 ? strtol(argv[2], NULL, 10) : 90;
	if (n < 1 || n > 100000 || from < 1 || from > n) {
		fprintf(stderr, "usage: growcost [N [FROM]]\n");
		return 2;
	}
	slots = calloc((size_t)n, sizeof *slots);
	pthread_t *t = calloc((size_t)n, sizeof *t);
	pthread_attr_t attr;
	pthread_attr_init(&attr);
	pthread_attr_setstacksize(&attr, 64 * 1024);
	if (slots == NULL || t == NULL) {
		fprintf(stderr, "growcost: out of memory\n");
		return 1;
	}
	for (long i = 0; i < n; i++) {
		if (pthread_create(&t[i], &attr, thread, &slots[i])) {
			fprintf(stderr, "growcost: pthread_create failed\n");
			return 1;
		}
		/* One at a time: thread i's first park is the (i+1)th. */
		while (!__atomic_load_n(&slots[i].done, __ATOMIC_ACQUIRE))
			sched_yield();
	}
	for (long i = from - 1; i < n; i++)
		printf(
		    "%ld %llu\n", i + 1, (unsigned long long)slots[i].first_ns);
	for (long i = 0; i < n; i++) {
		__atomic_store_n(&slots[i].wake, 1, __ATOMIC_RELEASE);
		pl_unpark_all(&slots[i].wake, 0);
		pthread_join(t[i], NULL);
	}
	return 0;
}
