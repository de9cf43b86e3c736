/* SPDX-License-Identifier: MIT */
/* A counting semaphore in one word, on <parkinglot/core.h> alone.  No wakeup
 * is lost, as WAITERS changes only with the bucket of s locked: a post comes
 * before a waiter's validate (which sees the unit) or after (sees WAITERS). */
#include <parkinglot/core.h>
#include <pthread.h>
#include <sched.h>
#include <stdio.h>
#define WAITERS ((uintptr_t)1) /* threads may be asleep on s */
#define UNIT ((uintptr_t)2)    /* the count is word / UNIT */
struct semaphore {
	uintptr_t word;
}; /* { n * UNIT }: n units, no waiters */

static bool /* bucket locked: sleep only while the count is 0; set WAITERS */
wait_validate(void *s)
{
	uintptr_t *p = s, w = __atomic_load_n(p, __ATOMIC_RELAXED);
	while (w < UNIT && !(w & WAITERS) &&
	    !__atomic_compare_exchange_n(
	        p, &w, w | WAITERS, false, __ATOMIC_RELAXED, __ATOMIC_RELAXED))
		;        /* the CAS failed and reloaded w: look again */
	return w < UNIT; /* else a unit came meanwhile: go and take it */
}

static void
semaphore_wait(struct semaphore *s) /* acquire: sees the poster's writes */
{
	uintptr_t w; /* until a CAS takes a unit; while there is none, sleep */
	while ((w = __atomic_load_n(&s->word, __ATOMIC_RELAXED)) < UNIT ||
	    !__atomic_compare_exchange_n(&s->word, &w, w - UNIT, true,
	        __ATOMIC_ACQUIRE, __ATOMIC_RELAXED))
		if (w < UNIT)
			pl_park(s, wait_validate, NULL, NULL, s, 0, NULL);
}

static uintptr_t /* bucket locked: if nobody is left asleep, clear WAITERS */
post_callback(pl_unpark_result_t r, void *s)
{
	if (!r.have_more)
		__atomic_and_fetch((uintptr_t *)s, ~WAITERS, __ATOMIC_RELAXED);
	return PL_UNPARK_TOKEN_DEFAULT;
}

static void
semaphore_post(struct semaphore *s) /* release; wakes one if any may sleep */
{
	if (__atomic_fetch_add(&s->word, UNIT, __ATOMIC_RELEASE) & WAITERS)
		pl_unpark_one(s, post_callback, s);
}

enum { K = 3, THREADS = 8, ROUNDS = 20000 }; /* self-check: at most K inside */
static struct semaphore sem = { K * UNIT };
static unsigned inside, too_many; /* atomics */

static void *
worker(void *arg)
{
	for (int i = 0; i < ROUNDS; i++) {
		semaphore_wait(&sem);
		if (__atomic_add_fetch(&inside, 1, __ATOMIC_RELAXED) > K)
			__atomic_store_n(&too_many, 1, __ATOMIC_RELAXED);
		sched_yield(); /* the others find no unit left, and sleep */
		__atomic_sub_fetch(&inside, 1, __ATOMIC_RELAXED);
		semaphore_post(&sem);
	}
	return arg;
}

int
main(void)
{
	pthread_t t[THREADS];
	for (int i = 0; i < THREADS; i++)
		if (pthread_create(&t[i], NULL, worker, NULL) != 0)
			return perror("pthread_create"), 1;
	for (int i = 0; i < THREADS; i++)
		pthread_join(t[i], NULL);
	if (too_many || sem.word != K * UNIT) /* >K inside, or a unit lost */
		return fputs("semaphore: self-check FAILED\n", stderr), 1;
	return puts("semaphore: ok") < 0;
}
