/* SPDX-License-Identifier: MIT */
/* A one-shot event in one byte, on <parkinglot/core.h> alone.  No wakeup is
 * lost: a waiter sleeps only if its validate, with the bucket of e locked, set
 * WAITERS and saw SET clear; event_set's pl_unpark_all takes that lock too. */
#include <parkinglot/core.h>
#include <pthread.h>
#include <sched.h>
#include <stdio.h>
#define SET ((unsigned char)1)     /* the event happened, for good */
#define WAITERS ((unsigned char)2) /* threads may be asleep on e */
struct event {
	unsigned char state;
}; /* all-zero: not set */

static bool
event_is_set(struct event *e) /* acquire: then see what the setter wrote */
{
	return __atomic_load_n(&e->state, __ATOMIC_ACQUIRE) & SET;
}

static bool /* bucket locked: announce a sleeper; sleep only if not set */
wait_validate(void *e)
{
	return !(
	    __atomic_fetch_or((unsigned char *)e, WAITERS, __ATOMIC_RELAXED) &
	    SET); /* (WAITERS after SET is harmless) */
}

static void
event_wait(struct event *e)
{
	while (!event_is_set(e)) /* woken, or set before we could sleep */
		pl_park(e, wait_validate, NULL, NULL, e, 0, NULL);
}

static void
event_set(struct event *e) /* release: waiters see what we wrote before */
{
	if (__atomic_exchange_n(&e->state, SET, __ATOMIC_RELEASE) & WAITERS)
		pl_unpark_all(e, PL_UNPARK_TOKEN_DEFAULT);
}

enum { THREADS = 8 }; /* self-check: all asleep, then set; all see payload */
static struct event ev;
static int payload, good; /* good (atomic): waiters that saw payload == 42 */

static void *
waiter(void *arg)
{
	event_wait(&ev);
	__atomic_add_fetch(&good, payload == 42, __ATOMIC_RELAXED);
	return arg;
}

static pl_filter_op_t /* bucket locked: count our sleepers, wake none */
count_sleeper(uintptr_t token, void *n)
{
	*(size_t *)n += token == 0;
	return PL_FILTER_SKIP;
}

int
main(void)
{
	pthread_t t[THREADS];
	size_t asleep = 0;
	for (int i = 0; i < THREADS; i++)
		if (pthread_create(&t[i], NULL, waiter, NULL) != 0)
			return perror("pthread_create"), 1;
	for (long n = 0; asleep < THREADS && n < 1000000; n++, sched_yield()) {
		asleep = 0; /* bounded: a broken library must not hang us */
		pl_unpark_filter(&ev, count_sleeper, NULL, &asleep);
	}
	payload = 42;
	event_set(&ev);
	for (int i = 0; i < THREADS; i++)
		pthread_join(t[i], NULL);
	event_wait(&ev); /* set: returns at once */
	if (asleep != THREADS || good != THREADS || !event_is_set(&ev))
		return fputs("event: self-check FAILED\n", stderr), 1;
	return puts("event: ok") < 0;
}
