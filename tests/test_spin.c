/* SPDX-License-Identifier: MIT */
/*
 * The adaptive yield rounds (lib/spin.c): a lock whose holds outlast the
 * yield rounds stops costing its waiters them, and a lock whose yield
 * rounds pay again gets them back.
 *
 * One waiter takes a mutex that the test's thread holds, round after
 * round; how long each hold lasts is the test's choice, and what the
 * waiter did is counted by a sched_yield of our own (the library calls
 * sched_yield only in its yield rounds; the executable's definition is
 * the one the convenience library's code reaches).  Long holds: the test
 * unlocks only once the waiter is parked, so its yield rounds never pay.
 * Short holds: the test unlocks as soon as the waiter yields.  And a
 * burst: many waiters arriving at once on a lock held until all are
 * parked, of whom only the first few may yield.  And the early look that
 * comes before the rounds (spin.h).
 */
#include "testutil.h"

TU_CRITERION_MAIN_SERIAL()

TestSuite(spin, .timeout = 60);

static __thread bool counting;
static __thread unsigned my_yields;
static unsigned waiter_yields;

int
sched_yield(void)
{
	if (counting) {
		my_yields++;
		__atomic_add_fetch(&waiter_yields, 1, __ATOMIC_RELAXED);
	}
	return (int)syscall(SYS_sched_yield);
}

#define ROUNDS 64

struct waiter {
	pl_mutex_t *m;
	int go, done;            /* rounds started by the test, finished */
	unsigned yields[ROUNDS]; /* sched_yield calls of each round's lock */
};

static void *
waiter_main(void *arg)
{
	struct waiter *w = arg;
	counting = true;
	for (int r = 0; r < ROUNDS; r++) {
		if (!tu_wait_int_eq(&w->go, r + 1, TU_WAIT_NS))
			break; /* the test has failed already */
		unsigned y0 = __atomic_load_n(&waiter_yields, __ATOMIC_RELAXED);
		pl_mutex_lock(w->m);
		w->yields[r] =
		    __atomic_load_n(&waiter_yields, __ATOMIC_RELAXED) - y0;
		pl_mutex_unlock(w->m);
		__atomic_store_n(&w->done, r + 1, __ATOMIC_RELEASE);
	}
	return NULL;
}

static unsigned
yields_now(void)
{
	return __atomic_load_n(&waiter_yields, __ATOMIC_RELAXED);
}

/* Round r: hold w->m until the waiter parks (long) or yields (short). */
static void
round_held(struct waiter *w, int r, bool long_hold)
{
	pl_mutex_lock(w->m);
	unsigned y0 = yields_now();
	__atomic_store_n(&w->go, r + 1, __ATOMIC_RELEASE);
	int64_t end = tu_now_ns() + TU_WAIT_NS;
	while ((long_hold || yields_now() == y0) &&
	    !(__atomic_load_n(&w->m->state, __ATOMIC_ACQUIRE) &
	        PL_MUTEX_PARKED))
		cr_assert(
		    tu_now_ns() < end, "round %d: the waiter never came", r);
	pl_mutex_unlock(w->m);
	cr_assert(tu_wait_int_eq(&w->done, r + 1, TU_WAIT_NS));
}

/* The yield rounds on: two spin rounds, then up to 20 yields. */
static unsigned
setup(void)
{
	struct pl_tuning t = { 2, 20, 1000 };
	pl_tuning_set(&t);
	unsigned g = __atomic_load_n(&pli_tuning()->adapt, __ATOMIC_RELAXED);
	cr_assert(g > 0 && g < ROUNDS / 4,
	    "this test needs PARKINGLOT_ADAPT unset or small, not %u", g);
	return g;
}

static unsigned
rounds_yielding(const struct waiter *w, int from, int to)
{
	unsigned n = 0;
	for (int r = from; r < to; r++)
		n += w->yields[r] != 0;
	return n;
}

/* Held past the yield rounds every time: the first g waiters yield in
 * vain, then the yield rounds are skipped but for one try in 16. */
Test(spin, long_holds_stop_the_yield_rounds)
{
	unsigned g = setup();
	static pl_mutex_t m;
	static struct waiter w = { &m, 0, 0, { 0 } };
	cr_assert(pli_spin_history(&m) == 0);
	pthread_t t = tu_spawn(waiter_main, &w);
	for (int r = 0; r < ROUNDS; r++)
		round_held(&w, r, true);
	tu_join(t);
	cr_assert(rounds_yielding(&w, 0, (int)g) == g,
	    "the first %u waiters should have yielded, %u did", g,
	    rounds_yielding(&w, 0, (int)g));
	unsigned late = rounds_yielding(&w, (int)g, ROUNDS);
	cr_assert(late <= (ROUNDS - g) / 16 + 1,
	    "%u of the %u waiters after the first %u yielded in vain", late,
	    ROUNDS - g, g);
	cr_assert(pli_spin_history(&m) >= g, "history %u, not doubted",
	    pli_spin_history(&m));
}

/* After long holds, short ones: a waiter's try at the yield rounds pays
 * (the test unlocks at its first yield), and the next waiters yield
 * again. */
Test(spin, short_holds_bring_the_yield_rounds_back)
{
	unsigned g = setup();
	static pl_mutex_t m;
	static struct waiter w = { &m, 0, 0, { 0 } };
	cr_assert(pli_spin_history(&m) == 0);
	pthread_t t = tu_spawn(waiter_main, &w);
	int r = 0;
	for (; r < (int)g + 8; r++)
		round_held(&w, r, true);
	cr_assert(pli_spin_history(&m) >= g, "history %u, not doubted",
	    pli_spin_history(&m));
	int from = r;
	for (; r < ROUNDS; r++)
		round_held(&w, r, false);
	tu_join(t);
	/* In doubt, 1 round in 16 would yield; back in trust, a short hold
	 * that slipped past a waiter's yield rounds only costs one more. */
	unsigned n = rounds_yielding(&w, from, ROUNDS);
	cr_assert(n >= (unsigned)(ROUNDS - from) / 2,
	    "only %u of the %d rounds of short holds yielded", n,
	    ROUNDS - from);
	cr_assert(w.yields[ROUNDS - 1] != 0 || w.yields[ROUNDS - 2] != 0,
	    "the last rounds did not yield");
}

#define BURST 16

static pthread_barrier_t burst_start;

struct burster {
	pl_mutex_t *m;
	bool yielded;
};

static void *
burster_main(void *arg)
{
	struct burster *b = arg;
	counting = true;
	pthread_barrier_wait(&burst_start);
	pl_mutex_lock(b->m);
	b->yielded = my_yields != 0;
	pl_mutex_unlock(b->m);
	return NULL;
}

/* BURST waiters released at once (a barrier) on a lock held until all
 * of them are parked: the first to run yield to the others, which reach
 * their yield rounds before any has parked.  A waiter counts as it starts
 * them, so that once g have started them (none can pay) the others skip
 * them.  Two that read the byte at once may both count as one, hence the
 * slack; without the count at the start every waiter yields. */
Test(spin, a_burst_of_waiters_yields_only_a_few)
{
	unsigned g = setup();
	static pl_mutex_t m;
	static struct burster b[BURST];
	pthread_t t[BURST];
	cr_assert(pli_spin_history(&m) == 0);
	cr_assert(pthread_barrier_init(&burst_start, NULL, BURST) == 0);
	pl_mutex_lock(&m);
	for (int i = 0; i < BURST; i++) {
		b[i].m = &m;
		t[i] = tu_spawn(burster_main, &b[i]);
	}
	cr_assert(wait_parked(&m, BURST, TU_WAIT_NS));
	pl_mutex_unlock(&m);
	unsigned n = 0;
	for (int i = 0; i < BURST; i++) {
		tu_join(t[i]);
		n += b[i].yielded;
	}
	pthread_barrier_destroy(&burst_start);
	cr_assert(n >= 1 && n <= 2 * g, "%u of %d waiters yielded (g = %u)", n,
	    BURST, g);
}

/* The early look (spin.h): a spinner given the lock's address looks once
 * after a tenth of a round, before the rounds it counts, and again after
 * each wake-up; a spinner without one (the rwlock's) does not, and nobody
 * does where spin_limit is 0. */
Test(spin, the_early_look_comes_before_the_rounds)
{
	setup();
	static pl_mutex_t m;
	struct pli_spinner sp;
	pli_spinner_init(&sp, &m);
	unsigned early = sp.pauses / 10 + 1;
	cr_assert(sp.early == early && early < sp.pauses, "early look %u of %u",
	    sp.early, sp.pauses);
	cr_assert(pli_spin(&sp));
	cr_assert(sp.early == 0 && sp.spins == 0 && sp.yields == 0,
	    "the early look counted as a round");
	cr_assert(pli_spin(&sp) && sp.spins == 1);
	pli_spinner_park(&sp);
	cr_assert(sp.early == early, "no early look after a wake-up");

	pli_spinner_init(&sp, NULL);
	cr_assert(sp.early == 0, "the rwlock's spinner looked early");

	struct pl_tuning t = { 0, 20, 1000 };
	pl_tuning_set(&t);
	pli_spinner_init(&sp, &m);
	cr_assert(sp.early == 0, "an early look with spin_limit 0");
	setup();
}
