/* SPDX-License-Identifier: MIT */
/*
 * Tests of what only pl_mutex_t does: its one-byte word, a trylock by the
 * holder that fails, no owner (another thread may unlock), misuse
 * detection, and thread churn with bounded memory.  What every lock does
 * (exclusion, trylock, timed lock, fair hand-off, lost wakeups, fairness)
 * is in tests/test_conform.c.
 */
#define _GNU_SOURCE /* tu_pin */
#include <fcntl.h>
#include <inttypes.h>

#include "testutil.h"

TU_CRITERION_MAIN_SERIAL()

#if defined(__SANITIZE_ADDRESS__)
/* ASan's quarantine keeps freed memory resident on purpose, which the RSS
 * bound of short_lived_threads_bounded_memory would measure instead of the
 * library: keep it small (ASAN_OPTIONS still overrides this). */
const char *__asan_default_options(void);
const char *
__asan_default_options(void)
{
	return "quarantine_size_mb=8";
}
#endif

TestSuite(mutex, .timeout = 30);

static unsigned char
state_of(const pl_mutex_t *m)
{
	return __atomic_load_n(&m->state, __ATOMIC_RELAXED);
}

/* ------------------------------------------------------------------ */
/* 1. trylock by the holder, no owner, pl_mutex_init                   */

struct try_ctx {
	pl_mutex_t *m;
	bool got;
	bool unlock_after;
};

static void *
try_main(void *arg)
{
	struct try_ctx *c = arg;
	c->got = pl_mutex_trylock(c->m);
	if (c->got && c->unlock_after)
		pl_mutex_unlock(c->m);
	return NULL;
}

static bool
trylock_from_other_thread(pl_mutex_t *m, bool unlock_after)
{
	struct try_ctx c = { m, false, unlock_after };
	tu_join(tu_spawn(try_main, &c));
	return c.got;
}

Test(mutex, trylock, .timeout = 30)
{
	pl_mutex_t m = PL_MUTEX_INITIALIZER;
	cr_assert(sizeof(pl_mutex_t) == 1);
	cr_assert(!pl_mutex_is_locked(&m));

	cr_assert(pl_mutex_trylock(&m), "trylock on a free mutex failed");
	cr_assert(pl_mutex_is_locked(&m));
	cr_assert(state_of(&m) == PL_MUTEX_LOCKED);
	cr_assert(!pl_mutex_trylock(&m), "trylock on a held mutex succeeded");
	cr_assert(!trylock_from_other_thread(&m, true),
	    "trylock from another thread on a held mutex succeeded");
	cr_assert(pl_mutex_is_locked(&m));
	pl_mutex_unlock(&m);
	cr_assert(!pl_mutex_is_locked(&m));
	cr_assert(state_of(&m) == 0);

#ifndef __SANITIZE_THREAD__
	/* Another thread takes it and keeps it, and this one unlocks it:
	 * pl_mutex_t has no owner.  ThreadSanitizer's model of a mutex has
	 * one and would report the unlock, so this part is left out there. */
	cr_assert(trylock_from_other_thread(&m, false));
	cr_assert(pl_mutex_is_locked(&m));
	cr_assert(!pl_mutex_trylock(&m));
	pl_mutex_unlock(&m);
	cr_assert(!pl_mutex_is_locked(&m));
#endif

	/* pl_mutex_init gives a free mutex. */
	pl_mutex_t n;
	memset(&n, 0xff, sizeof(n));
	pl_mutex_init(&n);
	cr_assert(!pl_mutex_is_locked(&n) && state_of(&n) == 0);
	cr_assert(pl_mutex_trylock(&n));
	pl_mutex_unlock(&n);
}

/* ------------------------------------------------------------------ */
/* 2. misuse aborts with a message                                     */

static pl_mutex_t misuse_m = PL_MUTEX_INITIALIZER;

static void
unlock_unlocked(void *fair)
{
	if (*(bool *)fair)
		pl_mutex_unlock_fair(&misuse_m);
	else
		pl_mutex_unlock(&misuse_m);
}

static void
check_misuse(bool fair)
{
	char expect[128];
	snprintf(expect, sizeof(expect), "%s: mutex %p is not locked\n",
	    fair ? "pl_mutex_unlock_fair" : "pl_mutex_unlock",
	    (void *)&misuse_m);
	tu_expect_abort(unlock_unlocked, &fair, expect);
}

Test(mutex, unlock_of_unlocked_aborts, .timeout = 30)
{
	check_misuse(false);
}

Test(mutex, unlock_fair_of_unlocked_aborts, .timeout = 30)
{
	check_misuse(true);
}

/* ------------------------------------------------------------------ */
/* 3. thread churn with bounded memory                                 */

struct churn {
	pl_mutex_t m;
	long counter;
	volatile long sink;
};

static void *
churn_main(void *arg)
{
	struct churn *c = arg;
	pl_mutex_lock(&c->m);
	for (int i = 0; i < 300; i++)
		c->sink += i;
	c->counter++;
	pl_mutex_unlock(&c->m);
	return NULL;
}

static size_t
rss_bytes(void)
{
	FILE *f = fopen("/proc/self/statm", "r");
	unsigned long size = 0, resident = 0;
	if (f == NULL)
		return 0;
	if (fscanf(f, "%lu %lu", &size, &resident) != 2)
		resident = 0;
	fclose(f);
	return (size_t)resident * (size_t)sysconf(_SC_PAGESIZE);
}

Test(mutex, short_lived_threads_bounded_memory, .timeout = 60)
{
	enum { WAVE = 8, WAVES = 2500 };
	static struct churn c;
	memset(&c, 0, sizeof(c));
	size_t live0 = pli_lot_live_threads();
	size_t rss0 = rss_bytes();
	cr_assert(rss0 > 0, "cannot read /proc/self/statm");
	size_t max_live = 0;

	for (int w = 0; w < WAVES; w++) {
		pthread_t t[WAVE];
		/* Hold the lock until the whole wave is parked on it, so that
		 * every thread really parks (and gets a per-thread record). */
		pl_mutex_lock(&c.m);
		for (int i = 0; i < WAVE; i++)
			t[i] = tu_spawn(churn_main, &c);
		if (!wait_parked(&c.m, WAVE, TU_WAIT_NS))
			cr_assert_fail("wave %d: %zu of %d threads parked", w,
			    count_parked(&c.m), WAVE);
		size_t live = pli_lot_live_threads();
		if (live > max_live)
			max_live = live;
		pl_mutex_unlock(&c.m);
		for (int i = 0; i < WAVE; i++)
			tu_join(t[i]);
	}

	size_t live1 = pli_lot_live_threads();
	size_t buckets = pli_lot_buckets();
	size_t retired = pli_lot_retired_bytes();
	size_t rss1 = rss_bytes();
	cr_assert(c.counter == (long)WAVE * WAVES, "counter %ld", c.counter);
	cr_assert(max_live >= live0 + WAVE,
	    "only %zu live threads with a wave of %d parked (before: %zu)",
	    max_live, WAVE, live0);
	cr_assert(live1 == live0,
	    "live threads %zu after %d threads, "
	    "expected %zu",
	    live1, WAVE * WAVES, live0);
	cr_assert(buckets <= 64,
	    "%zu buckets after %d short-lived threads: "
	    "the table grows with threads ever created",
	    buckets, WAVE * WAVES);
	cr_assert(
	    retired <= 1024 * 1024, "%zu bytes of retired tables", retired);
	cr_assert(rss1 < rss0 + 32 * 1024 * 1024, "RSS grew by %zu KiB",
	    (rss1 - rss0) / 1024);
	cr_assert(state_of(&c.m) == 0);
}

/* pl_mutex_clocklock: both clocks time out on a held mutex, and another
 * clock is EINVAL before any attempt. */
Test(mutex, clocklock_both_clocks, .timeout = 30)
{
	static pl_mutex_t m;
	static const clockid_t clocks[] = { CLOCK_MONOTONIC, CLOCK_REALTIME };
	cr_assert(pl_mutex_clocklock(&m, CLOCK_REALTIME, NULL) == 0);
	for (size_t i = 0; i < 2; i++) {
		struct timespec dl, now;
		clock_gettime(clocks[i], &dl);
		dl.tv_nsec += 20 * 1000 * 1000;
		if (dl.tv_nsec >= 1000000000L) {
			dl.tv_sec++;
			dl.tv_nsec -= 1000000000L;
		}
		cr_assert(pl_mutex_clocklock(&m, clocks[i], &dl) == ETIMEDOUT);
		clock_gettime(clocks[i], &now);
		cr_assert(tu_ts_to_ns(&now) >= tu_ts_to_ns(&dl),
		    "clock %d: returned before the deadline", (int)clocks[i]);
	}
	pl_mutex_unlock(&m);
	struct timespec dl = { 0, 0 };
	cr_assert(
	    pl_mutex_clocklock(&m, CLOCK_PROCESS_CPUTIME_ID, &dl) == EINVAL);
	cr_assert(!pl_mutex_is_locked(&m));
}

/* ------------------------------------------------------------------ */
/* The re-arm of lib/twobit.c: an unlock that wakes one of two parked
 * waiters clears PARKED, and the woken thread must set it again, or its
 * own unlock, on the fast path, leaves the other asleep with the mutex
 * free.  Each round: the main thread holds m, two threads park on it, the
 * main thread unlocks (a plain unlock; with the fairness interval at its
 * longest, most rounds wake the first waiter to compete, not by hand-off),
 * and both waiters must get m and finish within TU_WAIT_NS. */

#define REARM_ROUNDS 40

struct rearm_ctx {
	pl_mutex_t m;
	unsigned done;
};

static void *
rearm_waiter(void *arg)
{
	struct rearm_ctx *c = arg;
	pl_mutex_lock(&c->m);
	__atomic_fetch_add(&c->done, 1, __ATOMIC_RELAXED);
	pl_mutex_unlock(&c->m);
	return NULL;
}

static bool
wait_done(const unsigned *done, unsigned n)
{
	int64_t end = tu_now_ns() + TU_WAIT_NS;
	while (__atomic_load_n(done, __ATOMIC_RELAXED) != n)
		if (tu_now_ns() >= end)
			return false;
		else
			tu_poll_pause();
	return true;
}

Test(mutex, the_woken_waiter_wakes_the_one_left_parked, .timeout = 120)
{
	static struct rearm_ctx c;
	struct pl_tuning old, t;
	struct pl_stats s0, s1;
	pthread_t w[2];

	pl_tuning_get(&old);
	t = old;
	t.fair_interval_us = 10 * 1000 * 1000;
	pl_tuning_set(&t);
	pl_stats_get(&s0);
	for (int r = 0; r < REARM_ROUNDS; r++) {
		c.done = 0;
		pl_mutex_lock(&c.m);
		for (int i = 0; i < 2; i++) {
			w[i] = tu_spawn(rearm_waiter, &c);
			ASSERT_PARKED(&c.m, (size_t)i + 1);
		}
		pl_mutex_unlock(&c.m);
		cr_assert(wait_done(&c.done, 2),
		    "round %d: %u of 2 waiters got the mutex; the mutex is "
		    "%#x, %zu thread(s) parked on it",
		    r, c.done, state_of(&c.m), count_parked(&c.m));
		tu_join(w[0]);
		tu_join(w[1]);
		cr_assert(state_of(&c.m) == 0);
	}
	pl_stats_get(&s1);
	pl_tuning_set(&old);
	/* Most rounds went through the re-arm, not a hand-off. */
	cr_assert(s1.fair_handoffs - s0.fair_handoffs < REARM_ROUNDS,
	    "%" PRIu64 " fair hand-offs in %d rounds",
	    s1.fair_handoffs - s0.fair_handoffs, REARM_ROUNDS);
}

/* ------------------------------------------------------------------ */
/* Turns (lib/twobit.c): a waiter woken to compete that loses the mutex
 * to a barging thread parks again at its turn, ahead of the waiters that
 * parked after it, so the next unlock wakes it again.  Each round: the
 * main thread holds m; A parks, then B; the main thread wakes A as an
 * unlock would and keeps m, as a barging thread that took m first would
 * (tu_wake_to_lose); A parks again; then the main thread unlocks, and A
 * must get m before B.  Parked at the tail, A would come after B. */

Test(mutex, a_woken_waiter_that_loses_keeps_its_turn, .timeout = 60)
{
	static pl_mutex_t m;
	static struct tu_turns c = { tu_mutex_lock, tu_mutex_unlock, &m, { 0 },
		0 };
	tu_one_cpu(); /* so that no waiter is passed over for its CPU */
	for (int r = 0; r < 5; r++) {
		pl_mutex_lock(&m);
		cr_assert(tu_turn_round(&c, &m.state, 1, PL_MUTEX_PARKED) == 0,
		    "round %d: B got the mutex before A, which parked first "
		    "and lost it once",
		    r);
		cr_assert(state_of(&m) == 0);
	}
}

/* ------------------------------------------------------------------ */
/* Passing over (lib/parkinglot.c): an unlock on CPU a whose oldest
 * waiter parked on a too wakes, first, a waiter that parked on CPU b; a
 * waiter is passed over so once in its park; and a fair unlock wakes the
 * oldest.  Each thread is pinned, so the CPU it parks on is known; each
 * notes, holding m, when it got it, and unlocks m.  A thread that keeps
 * m (keep) first says it got it and waits for go, then moves to CPU
 * then_cpu and unlocks m there. */

struct away {
	pl_mutex_t m;
	unsigned order[3]; /* thread ids, in the order they got m */
	unsigned n;
	int got; /* atomic: the keeping thread holds m */
	int go;  /* atomic: the keeping thread may unlock m */
};

struct away_arg {
	struct away *x;
	unsigned id;
	int cpu;
	bool keep;
	int then_cpu;
	int err; /* an error number of tu_pin_raw or of the wait for go */
};

static void *
away_thread(void *arg)
{
	struct away_arg *a = arg;
	a->err = tu_pin_raw(a->cpu);
	pl_mutex_lock(&a->x->m);
	a->x->order[a->x->n++] = a->id;
	if (a->keep) {
		__atomic_store_n(&a->x->got, 1, __ATOMIC_RELEASE);
		if (!tu_wait_int_eq(&a->x->go, 1, TU_WAIT_NS))
			a->err = ETIMEDOUT;
		if (tu_pin_raw(a->then_cpu) != 0)
			a->err = EINVAL;
	}
	pl_mutex_unlock(&a->x->m);
	return NULL;
}

/* Two CPUs in cpu[], the main thread pinned to the first; on a machine
 * with one, cpu[1] is cpu[0] and the turns are strict.  Whether there
 * are two. */
static bool
away_cpus(int cpu[2])
{
	bool two = tu_cpus(cpu, 2) == 2;
	if (!two)
		cpu[1] = cpu[0];
	tu_pin(cpu[0]);
	return two;
}

/* The fairness timer's hand-off wakes the oldest: with the longest
 * interval, after a first wake on m's bucket (the first finds the timer
 * expired), an unlock is a hand-off a few times in a thousand. */
static void
away_rare_handoffs(struct away *x, int cpu)
{
	struct pl_tuning t;
	pl_tuning_get(&t);
	t.fair_interval_us = 10000000;
	pl_tuning_set(&t);
	struct away_arg a = { x, 0, cpu, false, 0, 0 };
	x->n = 0;
	pl_mutex_lock(&x->m);
	pthread_t w = tu_spawn(away_thread, &a);
	ASSERT_PARKED(&x->m, 1);
	pl_mutex_unlock(&x->m);
	tu_join(w);
	cr_assert(a.err == 0, "pthread_setaffinity_np: %s", strerror(a.err));
}

static uint64_t
handoffs(void)
{
	struct pl_stats s;
	pl_stats_get(&s);
	return s.fair_handoffs;
}

Test(mutex, an_unlock_wakes_a_waiter_on_another_cpu_first_once, .timeout = 60)
{
	static struct away x;
	int cpu[2];
	bool two = away_cpus(cpu);
	away_rare_handoffs(&x, cpu[0]);
	/* A parks on CPU a, B on CPU b; the main thread unlocks on a: B
	 * first, A passed over.  B keeps m; C parks on b behind A; B moves to
	 * a and unlocks there: A now, then C.  With one CPU, or if the first
	 * unlock was the fairness timer's hand-off: A, B, C. */
	const unsigned want[2][3] = { { 0, 1, 2 }, { 1, 0, 2 } };
	int passed = 0;
	for (int r = 0; r < 5; r++) {
		struct away_arg a[3] = { { &x, 0, cpu[0], false, 0, 0 },
			{ &x, 1, cpu[1], true, cpu[0], 0 },
			{ &x, 2, cpu[1], false, 0, 0 } };
		pthread_t w[3];
		x.n = 0;
		x.got = x.go = 0;
		pl_mutex_lock(&x.m);
		for (int i = 0; i < 2; i++) {
			w[i] = tu_spawn(away_thread, &a[i]);
			ASSERT_PARKED(&x.m, (size_t)i + 1);
		}
		uint64_t h0 = handoffs();
		pl_mutex_unlock(&x.m);
		cr_assert(tu_wait_int_eq(&x.got, 1, TU_WAIT_NS),
		    "round %d: B never got m", r);
		bool pass = two && handoffs() == h0;
		passed += pass;
		cr_assert(x.order[0] == want[pass][0],
		    "round %d: thread %u got m first; B parked on another CPU "
		    "than the unlocker's, A on the same",
		    r, x.order[0]);
		ASSERT_PARKED(&x.m, pass ? 1 : 0); /* A, passed over */
		w[2] = tu_spawn(away_thread, &a[2]);
		ASSERT_PARKED(&x.m, pass ? 2 : 1);
		__atomic_store_n(&x.go, 1, __ATOMIC_RELEASE);
		for (int i = 0; i < 3; i++) {
			tu_join(w[i]);
			cr_assert(a[i].err == 0, "round %d: thread %d: %s", r,
			    i, strerror(a[i].err));
		}
		cr_assert(x.n == 3);
		cr_assert(
		    x.order[1] == want[pass][1] && x.order[2] == want[pass][2],
		    "round %d: got m in the order %u %u %u; A, passed over "
		    "once "
		    "already, must come before C",
		    r, x.order[0], x.order[1], x.order[2]);
		cr_assert(state_of(&x.m) == 0);
	}
	cr_assert(passed > 0 || !two,
	    "every round's unlock was a hand-off: the test is void");
}

Test(mutex, a_fair_unlock_wakes_the_oldest_whatever_its_cpu, .timeout = 60)
{
	static struct away x;
	int cpu[2];
	(void)away_cpus(cpu);
	for (int r = 0; r < 5; r++) {
		struct away_arg a[2] = { { &x, 0, cpu[0], false, 0, 0 },
			{ &x, 1, cpu[1], false, 0, 0 } };
		pthread_t w[2];
		x.n = 0;
		pl_mutex_lock(&x.m);
		for (int i = 0; i < 2; i++) {
			w[i] = tu_spawn(away_thread, &a[i]);
			ASSERT_PARKED(&x.m, (size_t)i + 1);
		}
		pl_mutex_unlock_fair(&x.m);
		for (int i = 0; i < 2; i++) {
			tu_join(w[i]);
			cr_assert(a[i].err == 0, "round %d: thread %d: %s", r,
			    i, strerror(a[i].err));
		}
		cr_assert(x.n == 2 && x.order[0] == 0,
		    "round %d: B got m first from a fair unlock; A parked "
		    "first",
		    r);
		cr_assert(state_of(&x.m) == 0);
	}
}

/* A fair unlock while the waiter an unlock woke to compete has yet to set
 * P again: the waiter still queued behind it must be handed the mutex
 * (tu_fair_unlock_while_rearm_pending).  Before, the fair unlock saw P
 * clear and released m on its fast path, for anyone to take. */
static void
fair_unlock_m(void *lk)
{
	pl_mutex_unlock_fair(lk);
}

static bool
trylock_m(void *lk)
{
	return pl_mutex_trylock(lk);
}

Test(mutex, a_fair_unlock_hands_off_while_a_woken_waiter_has_yet_to_rearm)
{
	static pl_mutex_t m;
	struct tu_twobit_ops o = { tu_mutex_lock, tu_mutex_unlock,
		fair_unlock_m, trylock_m, &m, &m.state, 1, PL_MUTEX_PARKED };
	cr_assert(tu_fair_unlock_while_rearm_pending(&o),
	    "the fair unlock left m free with a waiter queued");
	cr_assert(state_of(&m) == 0 && count_parked(&m) == 0);
}
