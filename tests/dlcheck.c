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
 *   dlcheck hang      dl_lock_a and dl_lock_b in opposite orders in two
 *                     threads ("dl-1", "dl-2") that each hold their first
 *                     when they take their second: a real deadlock.  Run
 *                     with PARKINGLOT_STATS=1: once its own export lists
 *                     both threads parked, each holding its first lock
 *                     (read back as parkstat reads it), it prints
 *                     "dlcheck: TID1 TID2" and waits to be killed (120 s
 *                     at most); exits 97 if that does not happen in 10 s
 *
 * Exits 2 on a bad command line, 99 if it cannot set up.
 */
#define _GNU_SOURCE
#include <fcntl.h>
#include <inttypes.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include <parkinglot.h>

#include "export.h"

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

/* ---- hang ------------------------------------------------------------- */

static pthread_barrier_t both_hold;
static uint64_t tids[2];

static void *
hang_taker(void *arg)
{
	int me = (int)(intptr_t)arg;
	pl_mutex_t *first = me == 0 ? &dl_lock_a : &dl_lock_b;
	pl_mutex_t *second = me == 0 ? &dl_lock_b : &dl_lock_a;
	__atomic_store_n(
	    &tids[me], (uint64_t)syscall(SYS_gettid), __ATOMIC_RELEASE);
	pl_mutex_lock(first);
	pthread_barrier_wait(&both_hold);
	pl_mutex_lock(second); /* never returns: the other holds it */
	pl_mutex_unlock(second);
	pl_mutex_unlock(first);
	return NULL;
}

static double
now_s(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

/* Whether the export lists thread tid parked on waits, holding holds. */
static bool
listed(
    const struct plx_shm *s, uint64_t tid, const void *waits, const void *holds)
{
	for (size_t i = 0; i < PLX_NTHREADS; i++) {
		struct plx_thread e;
		if (plx_thread_read(&s->threads[i], &e, 100) && e.tid == tid &&
		    e.addr == (uintptr_t)waits && e.nheld >= 1 &&
		    e.held[0].addr == (uintptr_t)holds)
			return true;
	}
	return false;
}

static int
hang(void)
{
	alarm(120);
	char name[64];
	snprintf(name, sizeof name, PLX_NAME_FMT, (long)getpid());
	int fd = shm_open(name, O_RDONLY, 0);
	if (fd < 0) {
		fprintf(stderr, "dlcheck: %s: not exporting\n", name);
		return 99;
	}
	const struct plx_shm *s =
	    mmap(NULL, PLX_SIZE, PROT_READ, MAP_SHARED, fd, 0);
	close(fd);
	if (s == MAP_FAILED)
		return 99;
	pthread_t t[2];
	pthread_barrier_init(&both_hold, NULL, 2);
	for (int i = 0; i < 2; i++) {
		char tname[16];
		if (pthread_create(
		        &t[i], NULL, hang_taker, (void *)(intptr_t)i))
			return 99;
		snprintf(tname, sizeof tname, "dl-%d", i + 1);
		pthread_setname_np(t[i], tname);
	}
	double give_up = now_s() + 10;
	for (;;) {
		uint64_t t1 = __atomic_load_n(&tids[0], __ATOMIC_ACQUIRE);
		uint64_t t2 = __atomic_load_n(&tids[1], __ATOMIC_ACQUIRE);
		if (t1 && t2 && listed(s, t1, &dl_lock_b, &dl_lock_a) &&
		    listed(s, t2, &dl_lock_a, &dl_lock_b))
			break;
		if (now_s() > give_up) {
			fprintf(stderr, "dlcheck: not listed after 10 s\n");
			return 97;
		}
		struct timespec ts = { 0, 1000000 };
		nanosleep(&ts, NULL);
	}
	printf("dlcheck: %" PRIu64 " %" PRIu64 "\n", tids[0], tids[1]);
	fflush(stdout);
	for (;;)
		pause();
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
	if (argc == 2 && strcmp(argv[1], "hang") == 0)
		return hang();
	fprintf(stderr, "usage: dlcheck abba|many N|hang\n");
	return 2;
}
