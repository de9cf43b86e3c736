/* SPDX-License-Identifier: MIT */
/*
 * Run under ThreadSanitizer by tests/tsan-race.sh: threads update plain
 * (non-atomic) data, protected by a pl lock or, with "none", by nothing.
 * TSan must stay silent for every lock and report a data race without
 * one, which shows that it both understands the locks and still sees the
 * accesses they protect.
 *
 *   tsan-race mutex|rmutex|rwlock|cond|bitlock|none
 */
#include <pthread.h>
#include <stdio.h>
#include <string.h>

#include <parkinglot.h>

#define THREADS 4
#define ITERS 20000

static const char *mode;
static pl_mutex_t m;
static pl_rmutex_t rm;
static pl_rwlock_t rw;
static pl_cond_t cv;
static uintptr_t bits;
static long counter, turn;

static void *
worker(void *arg)
{
	long id = (long)arg;
	for (int i = 0; i < ITERS; i++) {
		if (strcmp(mode, "mutex") == 0) {
			pl_mutex_lock(&m);
			counter++;
			if (i % 2)
				pl_mutex_unlock(&m);
			else
				pl_mutex_unlock_fair(&m);
		} else if (strcmp(mode, "rmutex") == 0) {
			pl_rmutex_lock(&rm);
			pl_rmutex_lock(&rm);
			counter++;
			pl_rmutex_unlock(&rm);
			pl_rmutex_unlock(&rm);
		} else if (strcmp(mode, "rwlock") == 0) {
			if (i % 4) {
				pl_rwlock_rdlock(&rw);
				(void)*(volatile long *)&counter;
				pl_rwlock_rdunlock(&rw);
			} else {
				pl_rwlock_wrlock(&rw);
				counter++;
				pl_rwlock_wrunlock(&rw);
			}
		} else if (strcmp(mode, "cond") == 0) {
			/* Round robin: each thread waits for its turn. */
			if (i >= ITERS / 20)
				break;
			pl_mutex_lock(&m);
			while (turn % THREADS != id)
				pl_cond_wait(&cv, &m);
			counter++;
			turn++;
			pl_cond_broadcast(&cv);
			pl_mutex_unlock(&m);
		} else if (strcmp(mode, "bitlock") == 0) {
			pl_bitlock_lock(&bits, 1, 2);
			counter++;
			pl_bitlock_unlock(&bits, 1, 2);
		} else {
			counter++; /* the race TSan must report */
		}
	}
	return NULL;
}

int
main(int argc, char **argv)
{
	pthread_t t[THREADS];
	if (argc != 2) {
		fprintf(stderr,
		    "usage: tsan-race mutex|rmutex|rwlock|cond|"
		    "bitlock|none\n");
		return 2;
	}
	mode = argv[1];
	for (long i = 0; i < THREADS; i++)
		pthread_create(&t[i], NULL, worker, (void *)i);
	for (int i = 0; i < THREADS; i++)
		pthread_join(t[i], NULL);
	printf("%s: counter %ld\n", mode, counter);
	return 0;
}
