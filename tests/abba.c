/* SPDX-License-Identifier: MIT */
/*
 * abba: a program that deadlocks, on purpose, for the test of parkstat's
 * list of parked threads (tests/parkstat-parked.sh).
 *
 *   abba          hang until killed (or for 120 s, then SIGALRM ends it)
 *   abba --exit   exit 0 once both threads are parked, leaving them so
 *
 * Two threads, "abba-1" and "abba-2", take the global pl_mutex_t
 * abba_lock_a and abba_lock_b (global, so that parkstat names them) in
 * opposite orders, each holding its first while it waits at a barrier for
 * the other to hold its own: then neither second lock can ever be had.
 * Run it with PARKINGLOT_STATS=1 (or under parkstat --).  Once its own
 * export (read back from the shared-memory object, as parkstat reads it)
 * lists both threads parked, main prints one line,
 *
 *   abba: TID1 TID2
 *
 * the thread ids of abba-1 (which holds a and waits for b) and abba-2
 * (holds b, waits for a), and then waits for its end.  It exits 97 if
 * that does not happen within 10 s, and 99 if it cannot set up.
 *
 * Built a second time with -DPL_CHECKED, as tests/abba-checked, for
 * tests/deadlock.sh: there the detector watches the locks, so each thread
 * also publishes the locks it holds, and main waits until each thread's
 * held set starts with its first lock; with PARKINGLOT_DEADLOCK=report
 * the detector reports the inversion as the second thread blocks.
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

pl_mutex_t abba_lock_a = PL_MUTEX_INITIALIZER;
pl_mutex_t abba_lock_b = PL_MUTEX_INITIALIZER;

static pthread_barrier_t both_hold;
static uint64_t tids[2];

static void *
taker(void *arg)
{
	int me = (int)(intptr_t)arg;
	pl_mutex_t *first = me == 0 ? &abba_lock_a : &abba_lock_b;
	pl_mutex_t *second = me == 0 ? &abba_lock_b : &abba_lock_a;
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

/* Whether this process's export lists thread tid parked on waits (and,
 * in a checked build, holding holds first). */
static bool
listed(
    const struct plx_shm *s, uint64_t tid, const void *waits, const void *holds)
{
	for (size_t i = 0; i < PLX_NTHREADS; i++) {
		struct plx_thread e;
		if (!plx_thread_read(&s->threads[i], &e, 100) || e.tid != tid ||
		    e.addr != (uintptr_t)waits)
			continue;
#ifdef PL_CHECKED
		return e.nheld >= 1 && e.held[0].addr == (uintptr_t)holds;
#else
		(void)holds;
		return true;
#endif
	}
	return false;
}

int
main(int argc, char **argv)
{
	bool exit_when_parked = argc > 1 && strcmp(argv[1], "--exit") == 0;
	alarm(120); /* whatever happens to whoever watches it */

	char name[64];
	snprintf(name, sizeof name, PLX_NAME_FMT, (long)getpid());
	int fd = shm_open(name, O_RDONLY, 0);
	if (fd < 0) {
		fprintf(stderr,
		    "abba: %s: not exporting (PARKINGLOT_STATS=1?)\n", name);
		return 99;
	}
	const struct plx_shm *s =
	    mmap(NULL, PLX_SIZE, PROT_READ, MAP_SHARED, fd, 0);
	close(fd);
	if (s == MAP_FAILED) {
		perror("abba: mmap");
		return 99;
	}

	pthread_t t[2];
	pthread_barrier_init(&both_hold, NULL, 2);
	for (int i = 0; i < 2; i++) {
		char tname[16];
		if (pthread_create(&t[i], NULL, taker, (void *)(intptr_t)i)) {
			fprintf(stderr, "abba: pthread_create failed\n");
			return 99;
		}
		snprintf(tname, sizeof tname, "abba-%d", i + 1);
		pthread_setname_np(t[i], tname);
	}

	/* Poll (at most 10 s) until both are listed, parked on the lock the
	 * other holds. */
	double give_up = now_s() + 10;
	for (;;) {
		uint64_t t1 = __atomic_load_n(&tids[0], __ATOMIC_ACQUIRE);
		uint64_t t2 = __atomic_load_n(&tids[1], __ATOMIC_ACQUIRE);
		if (t1 && t2 && listed(s, t1, &abba_lock_b, &abba_lock_a) &&
		    listed(s, t2, &abba_lock_a, &abba_lock_b))
			break;
		if (now_s() > give_up) {
			fprintf(stderr,
			    "abba: the threads are not listed "
			    "as parked after 10 s\n");
			return 97;
		}
		struct timespec ts = { 0, 1000000 };
		nanosleep(&ts, NULL);
	}
	printf("abba: %" PRIu64 " %" PRIu64 "\n", tids[0], tids[1]);
	fflush(stdout);
	if (exit_when_parked)
		exit(0);
	for (;;)
		pause();
}
