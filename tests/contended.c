/* SPDX-License-Identifier: MIT */
/*
 * contended: a small program with one hot lock, for the parkstat tests
 * (tests/parkstat.sh).
 *
 *   contended [STATUS]             4 threads x 20000 rounds, exit STATUS
 *   contended --kill               the same, then SIGKILL itself
 *   contended --live SECONDS       hammer until stdin reaches end of file
 *                                  or SECONDS pass, then exit 0
 *   contended --live SECONDS --exec PROGRAM ARGS...
 *                                  the same, then execute PROGRAM (for
 *                                  parkstat -p across an exec)
 *   contended --pingpong ROUNDS    two threads (on CPUs 0 and 1) take turns
 *                                  through pl_park/pl_unpark_all, each
 *                                  turn a park and a wake-up: the worst
 *                                  case for the cost of the statistics
 *                                  export (doc/BENCHMARKS.md); prints the
 *                                  ns per round
 *
 * Each round locks hot_lock (a global pl_mutex_t, so parkstat can name
 * it), bumps a counter and sometimes yields while holding it, so that the
 * other threads find it taken and park; every 64th round also takes
 * cold_lock (static), briefly.  The first park is certain: main holds
 * hot_lock until pl_stats_get counts one.  At the end (not with --kill)
 * it prints the statistics as pl_stats_get returns them, after every
 * worker is joined, on stdout: "contended: parks N unparks N ..." so that
 * a test can compare them with parkstat's.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <inttypes.h>
#include <poll.h>
#include <pthread.h>
#include <sched.h>
#include <stdbool.h>
#include <stdint.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <parkinglot.h>

#define THREADS 4
#define ROUNDS 20000

pl_mutex_t hot_lock = PL_MUTEX_INITIALIZER;
static pl_mutex_t cold_lock = PL_MUTEX_INITIALIZER;
static unsigned long hot_count, cold_count;
static int stop;
static long rounds = ROUNDS; /* 0: until stop */

static void *
worker(void *arg)
{
	(void)arg;
	for (long i = 0; rounds == 0 || i < rounds; i++) {
		if (rounds == 0 && __atomic_load_n(&stop, __ATOMIC_RELAXED))
			break;
		pl_mutex_lock(&hot_lock);
		hot_count++;
		if (i % 8 == 0)
			sched_yield();
		pl_mutex_unlock(&hot_lock);
		if (i % 64 == 0) {
			pl_mutex_lock(&cold_lock);
			cold_count++;
			pl_mutex_unlock(&cold_lock);
		}
	}
	return NULL;
}

/* --pingpong: whose turn it is, 0 or 1; each side parks until it is
 * its own. */
static int turn;
static long pp_rounds;

struct pp_ctx {
	int me;
};

static bool
not_my_turn(void *ctx)
{
	const struct pp_ctx *c = ctx;
	return __atomic_load_n(&turn, __ATOMIC_ACQUIRE) != c->me;
}

static void *
ponger(void *arg)
{
	struct pp_ctx c = { (int)(intptr_t)arg };
	cpu_set_t set;
	CPU_ZERO(&set);
	CPU_SET(c.me, &set);
	(void)pthread_setaffinity_np(pthread_self(), sizeof set, &set);
	for (long i = 0; i < pp_rounds; i++) {
		while (not_my_turn(&c))
			pl_park(&turn, not_my_turn, NULL, NULL, &c, 0, NULL);
		__atomic_store_n(&turn, !c.me, __ATOMIC_RELEASE);
		pl_unpark_all(&turn, 0);
	}
	return NULL;
}

static double now_s(void);

static int
pingpong(long rounds)
{
	pthread_t t[2];
	pp_rounds = rounds;
	double t0 = now_s();
	for (intptr_t i = 0; i < 2; i++)
		if (pthread_create(&t[i], NULL, ponger, (void *)i) != 0)
			return 99;
	for (int i = 0; i < 2; i++)
		pthread_join(t[i], NULL);
	double t1 = now_s();
	struct pl_stats st;
	pl_stats_get(&st);
	printf("contended: pingpong %ld rounds, %.0f ns per round, "
	       "%.2f parks per round\n",
	    rounds, (t1 - t0) * 1e9 / (double)rounds,
	    (double)st.parks / (double)rounds);
	return 0;
}

static double
now_s(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

/* Until stdin ends (or fails) or the deadline passes. */
static void
wait_stdin(double seconds)
{
	double end = now_s() + seconds;
	for (;;) {
		double left = end - now_s();
		if (left <= 0)
			return;
		struct pollfd p = { 0, POLLIN, 0 };
		int r = poll(&p, 1, (int)(left * 1000) + 1);
		if (r < 0 && errno == EINTR)
			continue;
		if (r < 0)
			return;
		if (r > 0) {
			char buf[256];
			ssize_t n = read(0, buf, sizeof buf);
			if (n <= 0 && !(n < 0 && errno == EINTR))
				return;
		}
	}
}

int
main(int argc, char **argv)
{
	int status = 0;
	double live = 0;
	int kill_self = 0;
	char **then = NULL;
	if (argc > 1 && strcmp(argv[1], "--live") == 0 && argc > 2) {
		live = atof(argv[2]);
		rounds = 0;
		if (argc > 4 && strcmp(argv[3], "--exec") == 0)
			then = &argv[4];
	} else if (argc > 2 && strcmp(argv[1], "--pingpong") == 0) {
		return pingpong(atol(argv[2]));
	} else if (argc > 1 && strcmp(argv[1], "--kill") == 0) {
		kill_self = 1;
	} else if (argc > 1) {
		status = atoi(argv[1]);
	}

	pthread_t t[THREADS];
	pl_mutex_lock(&hot_lock);
	for (int i = 0; i < THREADS; i++)
		if (pthread_create(&t[i], NULL, worker, NULL) != 0) {
			fprintf(stderr, "contended: pthread_create failed\n");
			return 99;
		}
	/* Hold the lock until a worker has parked on it (at most 10 s). */
	double give_up = now_s() + 10;
	struct pl_stats st;
	do {
		sched_yield();
		pl_stats_get(&st);
	} while (st.parks == 0 && now_s() < give_up);
	pl_mutex_unlock(&hot_lock);

	if (live > 0) {
		wait_stdin(live);
		__atomic_store_n(&stop, 1, __ATOMIC_RELAXED);
	}
	for (int i = 0; i < THREADS; i++)
		pthread_join(t[i], NULL);
	if (live == 0 && hot_count != (unsigned long)THREADS * ROUNDS) {
		fprintf(stderr, "contended: hot_count %lu, expected %lu\n",
		    hot_count, (unsigned long)THREADS * ROUNDS);
		return 98;
	}
	if (kill_self)
		raise(SIGKILL);
	if (then) {
		execv(then[0], then);
		fprintf(
		    stderr, "contended: %s: %s\n", then[0], strerror(errno));
		return 97;
	}
	pl_stats_get(&st);
	printf("contended: parks %" PRIu64 " unparks %" PRIu64
	       " timeouts %" PRIu64 " spin_acquires %" PRIu64
	       " spin_failures %" PRIu64 " fair_handoffs %" PRIu64
	       " wait_ns_total %" PRIu64 " max_queue_len %zu\n",
	    st.parks, st.unparks, st.timeouts, st.spin_acquires,
	    st.spin_failures, st.fair_handoffs, st.wait_ns_total,
	    st.max_queue_len);
	return status;
}
