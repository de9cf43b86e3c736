/* SPDX-License-Identifier: MIT */
/*
 * Tests of pl_once_t: one run under a 16-thread race with every other
 * thread verifiably parked, visibility of the function's writes, no second
 * run, nested onces, the recursive-call abort, and the initial states.
 */

#include "testutil.h"

TU_CRITERION_MAIN_SERIAL()

TestSuite(once, .timeout = 30);

static unsigned char
state_of(const pl_once_t *o)
{
	return __atomic_load_n(&o->state, __ATOMIC_RELAXED);
}

/* ------------------------------------------------------------------ */
/* 1. sixteen threads race                                             */

enum { RACERS = 16, PAYLOAD = 64 };

struct race {
	pl_once_t once;
	struct tu_barrier start;
	int calls;           /* atomic: how many times fn ran */
	bool others_parked;  /* fn saw the 15 others parked */
	size_t parked_seen;  /* how many it saw last */
	long payload[PAYLOAD]; /* plain: written by fn only */
	bool fn_done;        /* plain: fn's last write */
	bool saw_result[RACERS];
};

struct racer {
	struct race *r;
	int idx;
};

static void
race_fn(void *arg)
{
	struct race *r = arg;
	__atomic_fetch_add(&r->calls, 1, __ATOMIC_RELAXED);
	for (int i = 0; i < PAYLOAD; i++)
		r->payload[i] = 1000 + i;
	/* Work until every other racer is parked on the once: none may
	 * return (nor see the payload half-written) before we do. */
	int64_t end = tu_now_ns() + TU_WAIT_NS;
	for (;;) {
		r->parked_seen = count_parked(&r->once);
		if (r->parked_seen == RACERS - 1) {
			r->others_parked = true;
			break;
		}
		if (tu_now_ns() >= end)
			break;
		tu_poll_pause();
	}
	r->fn_done = true;
}

static void *
racer_main(void *arg)
{
	struct racer *a = arg;
	struct race *r = a->r;
	tu_barrier_wait(&r->start);
	pl_once(&r->once, race_fn, r);
	/* fn completed and its writes are visible (plain reads: TSan checks
	 * the ordering too). */
	bool ok = r->fn_done &&
	    __atomic_load_n(&r->calls, __ATOMIC_RELAXED) == 1;
	for (int i = 0; i < PAYLOAD; i++)
		ok = ok && r->payload[i] == 1000 + i;
	r->saw_result[a->idx] = ok;
	return NULL;
}

Test(once, sixteen_threads_one_call, .timeout = 30)
{
	static struct race r;
	static struct racer a[RACERS];
	for (int round = 0; round < 3; round++) {
		memset(&r, 0, sizeof(r));
		tu_barrier_init(&r.start, RACERS);
		pthread_t t[RACERS];
		for (int i = 0; i < RACERS; i++) {
			a[i] = (struct racer){ &r, i };
			t[i] = tu_spawn(racer_main, &a[i]);
		}
		for (int i = 0; i < RACERS; i++)
			tu_join(t[i]);
		tu_barrier_destroy(&r.start);
		cr_assert(r.calls == 1, "round %d: fn ran %d times", round,
		    r.calls);
		cr_assert(r.others_parked,
		    "round %d: fn saw %zu threads parked, expected %d", round,
		    r.parked_seen, RACERS - 1);
		for (int i = 0; i < RACERS; i++)
			cr_assert(r.saw_result[i],
			    "round %d: thread %d returned before fn completed "
			    "or without seeing its writes",
			    round, i);
		cr_assert(state_of(&r.once) == PL_ONCE_DONE, "state %u",
		    state_of(&r.once));
		cr_assert(count_parked(&r.once) == 0);
	}
}

/* ------------------------------------------------------------------ */
/* 2. done is done                                                     */

static void
count_fn(void *arg)
{
	__atomic_fetch_add((int *)arg, 1, __ATOMIC_RELAXED);
}

struct later {
	pl_once_t *once;
	int *calls;
};

static void *
later_main(void *arg)
{
	struct later *l = arg;
	pl_once(l->once, count_fn, l->calls);
	return NULL;
}

Test(once, second_call_does_not_run, .timeout = 30)
{
	static pl_once_t o = PL_ONCE_INIT;
	int first = 0, second = 0;
	pl_once(&o, count_fn, &first);
	cr_assert(first == 1 && state_of(&o) == PL_ONCE_DONE);
	pl_once(&o, count_fn, &second);
	pl_once(&o, count_fn, &first);
	cr_assert(first == 1 && second == 0,
	    "a call after done ran its function");
	struct later l = { &o, &second };
	tu_join(tu_spawn(later_main, &l));
	cr_assert(second == 0, "a later thread ran its function");
	cr_assert(state_of(&o) == PL_ONCE_DONE);
}

Test(once, initializer_and_zeroed_memory, .timeout = 30)
{
	static pl_once_t s = PL_ONCE_INIT;
	int calls = 0;
	cr_assert(sizeof(pl_once_t) == 1);
	cr_assert(state_of(&s) == 0);
	pl_once(&s, count_fn, &calls);
	pl_once(&s, count_fn, &calls);
	cr_assert(calls == 1);

	pl_once_t *z = calloc(4, sizeof(*z));
	cr_assert(z != NULL);
	calls = 0;
	for (int i = 0; i < 4; i++)
		for (int k = 0; k < 3; k++)
			pl_once(&z[i], count_fn, &calls);
	cr_assert(calls == 4, "%d calls for 4 zeroed onces", calls);
	for (int i = 0; i < 4; i++)
		cr_assert(state_of(&z[i]) == PL_ONCE_DONE);
	free(z);

	pl_once_t m;
	memset(&m, 0, sizeof(m));
	calls = 0;
	pl_once(&m, count_fn, &calls);
	pl_once(&m, count_fn, &calls);
	cr_assert(calls == 1);
}

/* ------------------------------------------------------------------ */
/* 3. many onces, several threads                                      */

enum { MANY = 256, MANY_THREADS = 4 };

struct many {
	pl_once_t once[MANY];
	int calls[MANY];   /* atomic */
	long value[MANY];  /* plain: written by the once's function */
	struct tu_barrier start;
	long bad;          /* atomic */
};

struct many_arg {
	struct many *m;
	int idx;
};

struct many_call {
	struct many *m;
	int i;
};

static void
many_fn(void *arg)
{
	struct many_call *c = arg;
	__atomic_fetch_add(&c->m->calls[c->i], 1, __ATOMIC_RELAXED);
	c->m->value[c->i] = 7L * c->i + 1;
}

static void *
many_main(void *arg)
{
	struct many_arg *a = arg;
	struct many *m = a->m;
	tu_barrier_wait(&m->start);
	for (int k = 0; k < MANY; k++) {
		/* Each thread walks the onces in its own order. */
		int i = (a->idx % 2) ? MANY - 1 - k : (k * 37 + a->idx) % MANY;
		struct many_call c = { m, i };
		pl_once(&m->once[i], many_fn, &c);
		if (m->value[i] != 7L * i + 1)
			__atomic_fetch_add(&m->bad, 1, __ATOMIC_RELAXED);
	}
	return NULL;
}

Test(once, many_onces_many_threads, .timeout = 30)
{
	static struct many m;
	static struct many_arg a[MANY_THREADS];
	memset(&m, 0, sizeof(m));
	tu_barrier_init(&m.start, MANY_THREADS);
	pthread_t t[MANY_THREADS];
	for (int i = 0; i < MANY_THREADS; i++) {
		a[i] = (struct many_arg){ &m, i };
		t[i] = tu_spawn(many_main, &a[i]);
	}
	for (int i = 0; i < MANY_THREADS; i++)
		tu_join(t[i]);
	tu_barrier_destroy(&m.start);
	cr_assert(m.bad == 0, "%ld calls returned before the value was set",
	    m.bad);
	for (int i = 0; i < MANY; i++) {
		cr_assert(m.calls[i] == 1, "once %d ran %d times", i,
		    m.calls[i]);
		cr_assert(state_of(&m.once[i]) == PL_ONCE_DONE);
	}
}

/* ------------------------------------------------------------------ */
/* 4. nesting: other onces are fine, the same one aborts               */

static pl_once_t outer = PL_ONCE_INIT, inner = PL_ONCE_INIT;
static int outer_calls, inner_calls;

static void
inner_fn(void *arg)
{
	(void)arg;
	inner_calls++;
}

static void
outer_fn(void *arg)
{
	(void)arg;
	outer_calls++;
	pl_once(&inner, inner_fn, NULL);
	cr_assert(inner_calls == 1);
	cr_assert(state_of(&outer) & PL_ONCE_RUNNING);
}

Test(once, nested_different_onces, .timeout = 30)
{
	pl_once(&outer, outer_fn, NULL);
	cr_assert(outer_calls == 1 && inner_calls == 1);
	cr_assert(state_of(&outer) == PL_ONCE_DONE);
	cr_assert(state_of(&inner) == PL_ONCE_DONE);
	pl_once(&inner, inner_fn, NULL);
	pl_once(&outer, outer_fn, NULL);
	cr_assert(outer_calls == 1 && inner_calls == 1);
}

static pl_once_t rec_a = PL_ONCE_INIT, rec_b = PL_ONCE_INIT;

static void
recursive_fn(void *arg)
{
	pl_once(arg, recursive_fn, arg);
}

static void
call_recursive(void *arg)
{
	pl_once(arg, recursive_fn, arg);
}

/* a's function runs b's, whose function calls pl_once(a). */
static void
b_calls_a(void *arg)
{
	(void)arg;
	pl_once(&rec_a, b_calls_a, NULL);
}

static void
a_calls_b(void *arg)
{
	(void)arg;
	pl_once(&rec_b, b_calls_a, NULL);
}

static void
call_indirect(void *arg)
{
	(void)arg;
	pl_once(&rec_a, a_calls_b, NULL);
}

Test(once, recursive_call_aborts, .timeout = 30)
{
	char expect[160];
	snprintf(expect, sizeof(expect),
	    "pl_once: recursive call on once %p from its own init function\n",
	    (void *)&rec_a);
	tu_expect_abort(call_recursive, &rec_a, expect);
	/* Through another once: a -> b -> a. */
	tu_expect_abort(call_indirect, NULL, expect);
	/* The parent's onces were never touched. */
	cr_assert(state_of(&rec_a) == 0 && state_of(&rec_b) == 0);
}
