/* SPDX-License-Identifier: MIT */
/*
 * A concurrent hash table with a lock per bucket and no memory for the
 * locks: each bucket head is a pointer to the first node, and its two low
 * bits (free, since nodes are aligned to 8) are a bit lock, locked_bit 1
 * and parked_bit 2 (<parkinglot/bitlock.h>).  The holder of a bucket's
 * lock may change the pointer bits, but other threads may set the parked
 * bit at any moment, so the head is rewritten with a compare-and-swap that
 * keeps the low bits (set_first).  main() runs four threads doing random
 * inserts, lookups and removes, then checks the table against what the
 * threads report, and exits with 0 if they agree.
 */
#include <parkinglot.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

#define LOCKED ((uintptr_t)1)
#define PARKED ((uintptr_t)2)
#define LOWBITS (LOCKED | PARKED)
#define NBUCKETS 64 /* few, so that threads collide */
#define NKEYS 2048
#define NTHREADS 4
#define NOPS 50000 /* per thread */

struct node {
	_Alignas(8) struct node *next;
	unsigned key, value;
};

static uintptr_t heads[NBUCKETS];

static uintptr_t *
head_of(unsigned key)
{
	return &heads[(key * 2654435761u) % NBUCKETS];
}

static struct node *
first(uintptr_t *head)
{
	return (
	    struct node *)(__atomic_load_n(head, __ATOMIC_RELAXED) & ~LOWBITS);
}

/* With the bucket locked: make n the first node, keeping the lock bits. */
static void
set_first(uintptr_t *head, struct node *n)
{
	uintptr_t old = __atomic_load_n(head, __ATOMIC_RELAXED);
	while (!__atomic_compare_exchange_n(head, &old,
	    (old & LOWBITS) | (uintptr_t)n, true, __ATOMIC_RELAXED,
	    __ATOMIC_RELAXED))
		;
}

enum { INSERT, REMOVE, LOOKUP };

/* One operation on key, under its bucket's lock.  INSERT and REMOVE return
 * 1 if they changed the table, else 0; LOOKUP returns 1 if key is present
 * with the value insert gave it, -1 if with another value, 0 if absent. */
static int
apply(int op, unsigned key)
{
	uintptr_t *h = head_of(key);
	struct node *n = op == INSERT ? malloc(sizeof(*n)) : NULL;
	struct node *p, *prev = NULL;
	int r = 0;
	if (op == INSERT && n == NULL)
		abort();
	pl_bitlock_lock(h, LOCKED, PARKED);
	for (p = first(h); p != NULL && p->key != key; p = p->next)
		prev = p;
	if (op == LOOKUP && p != NULL) {
		r = p->value == key * 3 + 1 ? 1 : -1;
	} else if (op == INSERT && p == NULL) {
		*n = (struct node){ first(h), key, key * 3 + 1 };
		set_first(h, n);
		n = NULL;
		r = 1;
	} else if (op == REMOVE && p != NULL) {
		if (prev != NULL)
			prev->next = p->next;
		else
			set_first(h, p->next);
		n = p; /* freed below, after the unlock */
		r = 1;
	}
	pl_bitlock_unlock(h, LOCKED, PARKED);
	free(n);
	return r;
}

struct worker {
	uint64_t seed;
	long changed[2]; /* successful INSERTs, REMOVEs */
	long bad;        /* lookups that found a wrong value */
};

static void *
worker_main(void *arg)
{
	struct worker *w = arg;
	for (int i = 0; i < NOPS; i++) {
		w->seed ^= w->seed << 13; /* xorshift64 */
		w->seed ^= w->seed >> 7;
		w->seed ^= w->seed << 17;
		int op = (int)((w->seed >> 8) % 3);
		int r = apply(op, (unsigned)(w->seed >> 20) % NKEYS);
		if (op != LOOKUP)
			w->changed[op] += r;
		w->bad += r < 0;
	}
	return NULL;
}

int
main(void)
{
	pthread_t t[NTHREADS];
	struct worker w[NTHREADS];
	long expect = 0, bad = 0, count = 0;
	for (int i = 0; i < NTHREADS; i++) {
		w[i] = (struct worker){ .seed = 0x9e3779b97f4a7c15ull };
		w[i].seed *= i + 1u;
		if (pthread_create(&t[i], NULL, worker_main, &w[i]) != 0)
			return 2;
	}
	for (int i = 0; i < NTHREADS; i++) {
		pthread_join(t[i], NULL);
		expect += w[i].changed[INSERT] - w[i].changed[REMOVE];
		bad += w[i].bad;
	}
	/* No lock bit left set; each node in its bucket, once, intact. */
	for (unsigned b = 0; b < NBUCKETS; b++) {
		bad += (heads[b] & LOWBITS) != 0;
		for (struct node *p = first(&heads[b]); p; p = p->next) {
			count++;
			bad += head_of(p->key) != &heads[b] ||
			    apply(LOOKUP, p->key) != 1;
			for (struct node *q = p->next; q; q = q->next)
				bad += q->key == p->key;
		}
	}
	for (unsigned k = 0; k < NKEYS; k++)
		apply(REMOVE, k);
	if (bad != 0 || count != expect) {
		fprintf(stderr,
		    "hashtable: %ld nodes, expected %ld; %ld "
		    "inconsistencies\n",
		    count, expect, bad);
		return 1;
	}
	printf("hashtable: %d threads, %d operations, %ld keys left: ok\n",
	    NTHREADS, NTHREADS * NOPS, count);
	return 0;
}
