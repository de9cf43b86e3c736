/* SPDX-License-Identifier: MIT */
/*
 * The drop-in's single-threaded path: while a process has one thread,
 * pthread_mutex_lock and unlock of a normal mutex are plain stores
 * (lib/pthread/mutex.c).  A mutex locked then must be held for the
 * threads created afterwards, and the first unlock after they exist must
 * go through the atomic path and wake a waiter.  Built against glibc
 * alone; tests/dropin-single.sh runs it with the drop-in preloaded.
 * Prints one line per failed check; exit 0 only if all passed.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <string.h>
#include <sys/single_threaded.h>
#include <time.h>

static pthread_mutex_t m = PTHREAD_MUTEX_INITIALIZER;
static int failures;
static int got; /* atomic: the thread holds m */

#define CHECK(cond, ...)                                                       \
	do {                                                                   \
		if (!(cond)) {                                                 \
			printf("dropin-single: FAIL: " __VA_ARGS__);           \
			putchar('\n');                                         \
			failures++;                                            \
		}                                                              \
	} while (0)

static void *
locker(void *arg)
{
	int *busy = arg;
	*busy = pthread_mutex_trylock(&m);
	if (pthread_mutex_lock(&m) == 0) {
		__atomic_store_n(&got, 1, __ATOMIC_RELEASE);
		pthread_mutex_unlock(&m);
	}
	return NULL;
}

int
main(void)
{
	CHECK(__libc_single_threaded, "the process is not single-threaded");
	for (int i = 0; i < 1000; i++) {
		CHECK(pthread_mutex_lock(&m) == 0, "lock %d", i);
		CHECK(pthread_mutex_trylock(&m) == EBUSY, "trylock %d", i);
		CHECK(pthread_mutex_unlock(&m) == 0, "unlock %d", i);
	}
	CHECK(pthread_mutex_lock(&m) == 0, "lock before the thread");
	int busy = -1;
	pthread_t t;
	CHECK(pthread_create(&t, NULL, locker, &busy) == 0, "pthread_create");
	/* Give the thread time to block on m; whether it has makes no
	 * difference to what is checked. */
	struct timespec ts = { 0, 20 * 1000 * 1000 };
	nanosleep(&ts, NULL);
	CHECK(!__atomic_load_n(&got, __ATOMIC_ACQUIRE),
	    "the thread took a mutex locked before it existed");
	CHECK(pthread_mutex_unlock(&m) == 0, "unlock with the thread");
	CHECK(pthread_join(t, NULL) == 0, "join");
	CHECK(busy == EBUSY, "the thread's trylock gave %s", strerror(busy));
	CHECK(__atomic_load_n(&got, __ATOMIC_ACQUIRE),
	    "the thread never got the mutex");
	CHECK(pthread_mutex_destroy(&m) == 0, "destroy");
	return failures != 0;
}
