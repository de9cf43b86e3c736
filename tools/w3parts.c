/* SPDX-License-Identifier: MIT */
/*
 * w3parts: the CPU of lockbench W3's lock and unlock calls, split from the
 * rest of its threads' lives, for four locks run by turns in one process
 * (doc/BENCHMARKS.md, "W3's CPU, attributed").
 *
 * W3's shape: 300 threads, pinned in turn to the first two CPUs of the
 * process's mask, meet at a barrier; each then locks, sleeps 1 ms,
 * unlocks and ends, so every lock but the first parks once and every
 * unlock wakes one sleeper.  Each thread times its lock and its unlock
 * call with CLOCK_THREAD_CPUTIME_ID.  The locks:
 *
 *   pl_mutex     the library's mutex
 *   pthread      glibc's default mutex: waiters sleep on the lock's word
 *   futex-word   glibc's shape and nothing else: a bare futex lock
 *                (0 free, 1 locked, 2 locked with sleepers)
 *   futex-queue  the parking lot's shape and nothing else: a FIFO of
 *                waiters under a small lock, each waiter asleep on a word
 *                of its own, the lock handed to the one woken
 *
 * So pl_mutex against futex-queue is the library's own code, and
 * futex-queue against futex-word is what sleeping on words of one's own
 * costs the kernel.  Prints, per lock, the median over the runs of the
 * mean CPU of a thread's lock and unlock calls, with the runs' min..max.
 *
 * usage: w3parts [RUNS]   (default 11)
 */
#define _GNU_SOURCE
#include <linux/futex.h>
#include <pthread.h>
#include <sched.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include <parkinglot/mutex.h>

#include "toolutil.h"

#define THREADS 300
#define MAX_RUNS 101
#define STACK (256 * 1024)

static void
futex_wait(uint32_t *w, uint32_t v)
{
	syscall(SYS_futex, w, FUTEX_WAIT_PRIVATE, v, NULL, NULL, 0);
}

static void
futex_wake(uint32_t *w)
{
	syscall(SYS_futex, w, FUTEX_WAKE_PRIVATE, 1, NULL, NULL, 0);
}

/* futex-word (spins 0, as glibc's default mutex), and the small lock of
 * futex-queue (spins 100, as the library's bucket lock): Drepper's mutex. */
static void
word_lock(uint32_t *l, int spins)
{
	uint32_t c = 0;
	if (__atomic_compare_exchange_n(
	        l, &c, 1, false, __ATOMIC_ACQUIRE, __ATOMIC_RELAXED))
		return;
	for (int i = 0; i < spins; i++) {
		c = 0;
		if (__atomic_load_n(l, __ATOMIC_RELAXED) == 0 &&
		    __atomic_compare_exchange_n(
		        l, &c, 1, false, __ATOMIC_ACQUIRE, __ATOMIC_RELAXED))
			return;
		__builtin_ia32_pause();
	}
	while (__atomic_exchange_n(l, 2, __ATOMIC_ACQUIRE) != 0)
		futex_wait(l, 2);
}

static void
word_unlock(uint32_t *l)
{
	if (__atomic_exchange_n(l, 0, __ATOMIC_RELEASE) == 2)
		futex_wake(l);
}

/* futex-queue.  held and the queue are guarded by qlock; a waiter's word
 * is 1 while it waits and 0 once the lock is handed to it. */
struct qwaiter {
	struct qwaiter *next;
	uint32_t word;
};
static uint32_t qlock;
static bool qheld;
static struct qwaiter *qhead, **qtail = &qhead;

static void
queue_lock(void)
{
	struct qwaiter me = { NULL, 1 };
	word_lock(&qlock, 100);
	if (!qheld) {
		qheld = true;
		word_unlock(&qlock);
		return;
	}
	*qtail = &me;
	qtail = &me.next;
	word_unlock(&qlock);
	while (__atomic_load_n(&me.word, __ATOMIC_ACQUIRE) != 0)
		futex_wait(&me.word, 1);
}

static void
queue_unlock(void)
{
	word_lock(&qlock, 100);
	struct qwaiter *w = qhead;
	if (w == NULL) {
		qheld = false;
		word_unlock(&qlock);
		return;
	}
	qhead = w->next;
	if (qhead == NULL)
		qtail = &qhead;
	word_unlock(&qlock);
	/* Handed over: w owns the lock.  The wake may name a word whose
	 * thread has already returned, which is harmless here as in the
	 * library (every wait loops on its word). */
	__atomic_store_n(&w->word, 0, __ATOMIC_RELEASE);
	futex_wake(&w->word);
}

static pl_mutex_t pl_lock;
static pthread_mutex_t pt_lock = PTHREAD_MUTEX_INITIALIZER;
static uint32_t word;

static void
pl_take(void)
{
	pl_mutex_lock(&pl_lock);
}

static void
pl_give(void)
{
	pl_mutex_unlock(&pl_lock);
}

static void
pt_take(void)
{
	pthread_mutex_lock(&pt_lock);
}

static void
pt_give(void)
{
	pthread_mutex_unlock(&pt_lock);
}

static void
word_take(void)
{
	word_lock(&word, 0);
}

static void
word_give(void)
{
	word_unlock(&word);
}

#define NKINDS 4
static const struct kind {
	const char *name;
	void (*lock)(void);
	void (*unlock)(void);
} kinds[NKINDS] = {
	{ "pl_mutex", pl_take, pl_give },
	{ "pthread", pt_take, pt_give },
	{ "futex-word", word_take, word_give },
	{ "futex-queue", queue_lock, queue_unlock },
};

static pthread_barrier_t start;
static const struct kind *kind; /* this run's */
static int cpu[2];              /* the first two of the process's mask */
static double lock_cpu[THREADS], unlock_cpu[THREADS];

static double
thread_cpu(void)
{
	struct timespec t;
	clock_gettime(CLOCK_THREAD_CPUTIME_ID, &t);
	return (double)t.tv_sec + (double)t.tv_nsec * 1e-9;
}

static void *
body(void *arg)
{
	const int i = (int)(intptr_t)arg;
	static const struct timespec ms = { 0, 1000000 };
	pthread_barrier_wait(&start);
	double c0 = thread_cpu();
	kind->lock();
	double c1 = thread_cpu();
	nanosleep(&ms, NULL);
	double c2 = thread_cpu();
	kind->unlock();
	double c3 = thread_cpu();
	lock_cpu[i] = c1 - c0;
	unlock_cpu[i] = c3 - c2;
	return NULL;
}

static int
cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;
	return x < y ? -1 : x > y;
}

/* One run of kind: the mean lock and unlock CPU, in us. */
static void
run(double *lock_us, double *unlock_us)
{
	pthread_t t[THREADS];
	pthread_barrier_init(&start, NULL, THREADS);
	for (int i = 0; i < THREADS; i++) {
		pthread_attr_t a;
		cpu_set_t cpus;
		pthread_attr_init(&a);
		pthread_attr_setstacksize(&a, STACK);
		CPU_ZERO(&cpus);
		CPU_SET(cpu[i % 2], &cpus);
		pthread_attr_setaffinity_np(&a, sizeof cpus, &cpus);
		if (pthread_create(&t[i], &a, body, (void *)(intptr_t)i) != 0) {
			fprintf(stderr, "w3parts: pthread_create failed\n");
			exit(1);
		}
		pthread_attr_destroy(&a);
	}
	double l = 0, u = 0;
	for (int i = 0; i < THREADS; i++) {
		pthread_join(t[i], NULL);
		l += lock_cpu[i];
		u += unlock_cpu[i];
	}
	pthread_barrier_destroy(&start);
	*lock_us = l * 1e6 / THREADS;
	*unlock_us = u * 1e6 / THREADS;
}

int
main(int argc, char **argv)
{
	long runs = 11;
	if (argc > 2 ||
	    (argc == 2 && !tool_parse_long(argv[1], 1, MAX_RUNS, &runs))) {
		fprintf(stderr, "usage: w3parts [RUNS]  (1 to %d)\n", MAX_RUNS);
		return 2;
	}
	cpu_set_t mask;
	int n = 0;
	if (sched_getaffinity(0, sizeof mask, &mask) == 0)
		for (int c = 0; c < CPU_SETSIZE && n < 2; c++)
			if (CPU_ISSET(c, &mask))
				cpu[n++] = c;
	if (n < 2) {
		fprintf(stderr, "w3parts: needs 2 CPUs\n");
		return 2;
	}
	static double lk[NKINDS][MAX_RUNS], ul[NKINDS][MAX_RUNS],
	    sum[NKINDS][MAX_RUNS];
	for (int r = 0; r < runs; r++)
		for (int k = 0; k < NKINDS; k++) {
			kind = &kinds[k];
			run(&lk[k][r], &ul[k][r]);
			sum[k][r] = lk[k][r] + ul[k][r];
		}
	printf("%d threads a run, %ld runs a lock by turns; CPU us a thread, "
	       "median (min..max)\n",
	    THREADS, runs);
	printf("%-12s %-22s %-22s %-22s\n", "lock", "lock call", "unlock call",
	    "both");
	for (int k = 0; k < NKINDS; k++) {
		double *v[3] = { lk[k], ul[k], sum[k] };
		printf("%-12s", kinds[k].name);
		for (int m = 0; m < 3; m++) {
			qsort(v[m], (size_t)runs, sizeof(double), cmp_double);
			char cell[40];
			snprintf(cell, sizeof cell, "%.2f (%.2f..%.2f)",
			    v[m][runs / 2], v[m][0], v[m][runs - 1]);
			printf(" %-22s", cell);
		}
		printf("\n");
	}
	return 0;
}
