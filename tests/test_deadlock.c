/* SPDX-License-Identifier: MIT */
/*
 * The deadlock detector (<parkinglot/deadlock.h>) through the hooks of a
 * checked build: this file is compiled with -DPL_CHECKED.  Each inversion
 * test runs its threads one after the other, so that the program never
 * hangs, and counts the cycles the detector found during the test
 * (pl_deadlock_cycles before and after: the count only grows) and the
 * reports its handler received.  The locks are globals, so that the
 * reports can name them; the call sites are functions of their own
 * (noinline), so that the reports can name those too.  The drop-in's
 * side (libparkinglot-pthread) is at the end: this program again, run
 * with the drop-in preloaded.
 */
#define _GNU_SOURCE /* dladdr */
#include <dlfcn.h>
#include <threads.h>

#include "testutil.h"

TU_CRITERION_MAIN_SERIAL()

#if defined(__SANITIZE_THREAD__)
/* The inversions here are on purpose: ThreadSanitizer, which checks lock
 * order too (the locks annotate themselves), would report them and fail
 * the program.  Its races are still reported. */
const char *__tsan_default_options(void);
const char *
__tsan_default_options(void)
{
	return "detect_deadlocks=0";
}
#endif

TestSuite(deadlock, .timeout = 60);

pl_mutex_t dl_a = PL_MUTEX_INITIALIZER;
pl_mutex_t dl_b = PL_MUTEX_INITIALIZER;
pl_mutex_t dl_c = PL_MUTEX_INITIALIZER;
pl_rwlock_t dl_rw = PL_RWLOCK_INITIALIZER;
pl_rwlock_t dl_rw2 = PL_RWLOCK_INITIALIZER;
pl_rmutex_t dl_r = PL_RMUTEX_INITIALIZER;
pl_cond_t dl_cond = PL_COND_INITIALIZER;
uintptr_t dl_word1, dl_word2;

/* What the handler saw. */
static struct {
	int reports;
	char text[8192]; /* the last report */
	struct pl_deadlock_cycle last;
} seen;

static void
on_cycle(const struct pl_deadlock_cycle *c, const char *report, void *arg)
{
	(void)arg;
	seen.reports++;
	seen.last = *c;
	snprintf(seen.text, sizeof seen.text, "%s", report);
}

static size_t cycles_before;

static void
setup(void)
{
	cr_assert(pl_deadlock_set(PL_DEADLOCK_REPORT) == 0,
	    "pl_deadlock_set(PL_DEADLOCK_REPORT) != 0");
	pl_deadlock_set_handler(on_cycle, NULL);
	memset(&seen, 0, sizeof seen);
	cycles_before = pl_deadlock_cycles(NULL, 0);
}

/* Cycles found since setup. */
static size_t
new_cycles(void)
{
	return pl_deadlock_cycles(NULL, 0) - cycles_before;
}

/* Run fn in a thread of its own, to its end. */
static void
run(void *(*fn)(void *), void *arg)
{
	tu_join(tu_spawn(fn, arg));
}

static __attribute__((noinline)) void *
take_ab(void *arg)
{
	(void)arg;
	pl_mutex_lock(&dl_a);
	pl_mutex_lock(&dl_b);
	pl_mutex_unlock(&dl_b);
	pl_mutex_unlock(&dl_a);
	return NULL;
}

static __attribute__((noinline)) void *
take_ba(void *arg)
{
	(void)arg;
	pl_mutex_lock(&dl_b);
	pl_mutex_lock(&dl_a);
	pl_mutex_unlock(&dl_a);
	pl_mutex_unlock(&dl_b);
	return NULL;
}

static __attribute__((noinline)) void *
take_bc(void *arg)
{
	(void)arg;
	pl_mutex_lock(&dl_b);
	pl_mutex_lock(&dl_c);
	pl_mutex_unlock(&dl_c);
	pl_mutex_unlock(&dl_b);
	return NULL;
}

static __attribute__((noinline)) void *
take_ca(void *arg)
{
	(void)arg;
	pl_mutex_lock(&dl_c);
	pl_mutex_lock(&dl_a);
	pl_mutex_unlock(&dl_a);
	pl_mutex_unlock(&dl_c);
	return NULL;
}

Test(deadlock, modes)
{
	cr_assert(
	    (pl_deadlock_set(7)) == (EINVAL), "pl_deadlock_set(7) != EINVAL");
	cr_assert(
	    pl_deadlock_set(-1) == EINVAL, "pl_deadlock_set(-1) != EINVAL");
	cr_assert(pl_deadlock_set(PL_DEADLOCK_REPORT) == 0,
	    "pl_deadlock_set(PL_DEADLOCK_REPORT) != 0");
	cr_assert(pl_deadlock_get() == PL_DEADLOCK_REPORT,
	    "pl_deadlock_get() != PL_DEADLOCK_REPORT");
	cr_assert(pl_deadlock_set(PL_DEADLOCK_OFF) == 0,
	    "pl_deadlock_set(PL_DEADLOCK_OFF) != 0");
	cr_assert(pl_deadlock_get() == PL_DEADLOCK_OFF,
	    "pl_deadlock_get() != PL_DEADLOCK_OFF");
	/* Off: an inversion goes unseen. */
	size_t before = pl_deadlock_cycles(NULL, 0);
	run(take_ab, NULL);
	run(take_ba, NULL);
	cr_assert(pl_deadlock_cycles(NULL, 0) == before,
	    "pl_deadlock_cycles(NULL, 0) != before");
}

Test(deadlock, abba_one_report_naming_locks_and_sites)
{
	setup();
	run(take_ab, NULL);
	cr_assert(new_cycles() == 0, "one order alone is no inversion");
	run(take_ba, NULL);
	cr_assert(new_cycles() == 1, "new_cycles() != 1");
	cr_assert(seen.reports == 1, "%d reports", seen.reports);
	/* Again, both orders: reported once only. */
	run(take_ab, NULL);
	run(take_ba, NULL);
	cr_assert(seen.reports == 1, "%d reports", seen.reports);
	cr_assert(new_cycles() == 1, "new_cycles() != 1");

	const struct pl_deadlock_cycle *c = &seen.last;
	cr_assert(c->nlocks == 2, "c->nlocks != 2");
	/* The last edge closed it: b held, a taken (take_ba). */
	cr_assert(c->edges[1].from == (const void *)&dl_b,
	    "c->edges[1].from != (const void *)&dl_b");
	cr_assert(c->edges[1].to == (const void *)&dl_a,
	    "c->edges[1].to != (const void *)&dl_a");
	cr_assert(c->edges[0].from == (const void *)&dl_a,
	    "c->edges[0].from != (const void *)&dl_a");
	cr_assert(c->edges[0].to == (const void *)&dl_b,
	    "c->edges[0].to != (const void *)&dl_b");
	for (int i = 0; i < 2; i++) {
		cr_assert(c->edges[i].from_site.depth > 0,
		    "c->edges[i].from_site.depth <= 0");
		cr_assert(c->edges[i].to_site.depth > 0,
		    "c->edges[i].to_site.depth <= 0");
		cr_assert(c->edges[i].tid > 0, "c->edges[i].tid <= 0");
	}
	const char *t = seen.text;
	fprintf(stderr, "%s", t);
	cr_assert(strstr(t, "dl_a") && strstr(t, "dl_b"),
	    "the report names both locks:\n%s", t);
	cr_assert(strstr(t, "take_ab") && strstr(t, "take_ba"),
	    "the report names both sites:\n%s", t);
	cr_assert(
	    strstr(t, "test_deadlock.c:"), "the sites have file:line:\n%s", t);

	/* pl_deadlock_cycles copies what it keeps. */
	struct pl_deadlock_cycle out[4];
	size_t n = pl_deadlock_cycles(out, 4);
	cr_assert(n == cycles_before + 1, "n != cycles_before + 1");
	cr_assert(out[n - 1].nlocks == 2, "out[n - 1].nlocks != 2");
	cr_assert(out[n - 1].edges[1].to == (const void *)&dl_a,
	    "out[n - 1].edges[1].to != (const void *)&dl_a");
}

Test(deadlock, three_lock_cycle)
{
	setup();
	run(take_ab, NULL);
	run(take_bc, NULL);
	cr_assert(new_cycles() == 0, "new_cycles() != 0");
	run(take_ca, NULL);
	cr_assert(new_cycles() == 1, "new_cycles() != 1");
	cr_assert(seen.reports == 1, "seen.reports != 1");
	cr_assert(seen.last.nlocks == 3, "seen.last.nlocks != 3");
	const char *t = seen.text;
	cr_assert(strstr(t, "dl_a") && strstr(t, "dl_b") && strstr(t, "dl_c"),
	    "%s", t);
	cr_assert(strstr(t, "take_ab") && strstr(t, "take_bc") &&
	        strstr(t, "take_ca"),
	    "%s", t);
	for (unsigned i = 0; i < 3; i++)
		cr_assert((seen.last.edges[i].to) ==
		        (seen.last.edges[(i + 1) % 3].from),
		    "seen.last.edges[i].to != seen.last.edges[(i + 1) % "
		    "3].from");
}

/* 8 threads, 16 locks, each thread taking runs of them in increasing
 * order, under contention, for 2 s: no inversion, and the counters the
 * locks guard add up. */
#define ORD_LOCKS 16
#define ORD_THREADS 8
static pl_mutex_t ord_lock[ORD_LOCKS];
static uint64_t ord_count[ORD_LOCKS];
static uint64_t ord_done[ORD_THREADS][ORD_LOCKS];
static int64_t ord_end;

static void *
ordered(void *arg)
{
	int me = (int)(intptr_t)arg;
	uint32_t r = 2463534242u + (uint32_t)me * 7919u;
	while (tu_now_ns() < ord_end) {
		r ^= r << 13;
		r ^= r >> 17;
		r ^= r << 5;
		int lo = (int)(r % ORD_LOCKS);
		int hi = lo + (int)((r >> 8) % 4);
		if (hi >= ORD_LOCKS)
			hi = ORD_LOCKS - 1;
		for (int i = lo; i <= hi; i++)
			pl_mutex_lock(&ord_lock[i]);
		for (int i = lo; i <= hi; i++) {
			ord_count[i]++;
			ord_done[me][i]++;
		}
		for (int i = hi; i >= lo; i--)
			pl_mutex_unlock(&ord_lock[i]);
	}
	return NULL;
}

Test(deadlock, consistent_order_no_report)
{
	setup();
	ord_end = tu_now_ns() + 2 * TU_SEC;
	pthread_t t[ORD_THREADS];
	for (int i = 0; i < ORD_THREADS; i++)
		t[i] = tu_spawn(ordered, (void *)(intptr_t)i);
	for (int i = 0; i < ORD_THREADS; i++)
		tu_join(t[i]);
	cr_assert(new_cycles() == 0, "new_cycles() != 0");
	cr_assert(seen.reports == 0, "%s", seen.text);
	uint64_t total = 0;
	for (int l = 0; l < ORD_LOCKS; l++) {
		uint64_t sum = 0;
		for (int i = 0; i < ORD_THREADS; i++)
			sum += ord_done[i][l];
		cr_assert(sum == ord_count[l], "lock %d: lost updates", l);
		total += sum;
	}
	cr_assert(total > 1000, "total <= 1000");
}

/* A trylock that succeeds records no edge into the lock it took. */
static __attribute__((noinline)) void *
take_a_try_b(void *arg)
{
	(void)arg;
	pl_mutex_lock(&dl_a);
	bool got = pl_mutex_trylock(&dl_b);
	if (got)
		pl_mutex_unlock(&dl_b);
	pl_mutex_unlock(&dl_a);
	return (void *)(intptr_t)got;
}

Test(deadlock, trylock_records_no_edge)
{
	setup();
	cr_assert((tu_join(tu_spawn(take_a_try_b, NULL))) == ((void *)1),
	    "tu_join(tu_spawn(take_a_try_b, NULL)) != (void *)1");
	run(take_ba, NULL);
	cr_assert(new_cycles() == 0, "%s", seen.text);
	/* The locks it holds after a trylock count as held: b -> a from
	 * here closes with a -> b of the blocking order. */
	run(take_ab, NULL);
	cr_assert(new_cycles() == 1, "new_cycles() != 1");
}

/* Locking an rmutex again is no acquisition. */
static __attribute__((noinline)) void *
take_r_a_r(void *arg)
{
	(void)arg;
	pl_rmutex_lock(&dl_r);
	pl_mutex_lock(&dl_a);
	pl_rmutex_lock(&dl_r); /* recursion: no a -> r */
	bool got = pl_rmutex_trylock(&dl_r);
	if (got)
		pl_rmutex_unlock(&dl_r);
	pl_rmutex_unlock(&dl_r);
	pl_mutex_unlock(&dl_a);
	pl_rmutex_unlock(&dl_r);
	return (void *)(intptr_t)got;
}

static __attribute__((noinline)) void *
take_a_r(void *arg)
{
	(void)arg;
	pl_mutex_lock(&dl_a);
	pl_rmutex_lock(&dl_r);
	pl_rmutex_unlock(&dl_r);
	pl_mutex_unlock(&dl_a);
	return NULL;
}

Test(deadlock, rmutex_recursion_is_no_inversion)
{
	setup();
	cr_assert((tu_join(tu_spawn(take_r_a_r, NULL))) == ((void *)1),
	    "tu_join(tu_spawn(take_r_a_r, NULL)) != (void *)1");
	cr_assert((tu_join(tu_spawn(take_r_a_r, NULL))) == ((void *)1),
	    "tu_join(tu_spawn(take_r_a_r, NULL)) != (void *)1");
	cr_assert(new_cycles() == 0, "%s", seen.text);
	/* A real a -> r closes the cycle with r -> a. */
	run(take_a_r, NULL);
	cr_assert(new_cycles() == 1, "new_cycles() != 1");
}

/* Read and write orders of a rwlock against a mutex. */
static __attribute__((noinline)) void *
rd_then_a(void *arg)
{
	(void)arg;
	pl_rwlock_rdlock(&dl_rw);
	pl_mutex_lock(&dl_a);
	pl_mutex_unlock(&dl_a);
	pl_rwlock_rdunlock(&dl_rw);
	return NULL;
}

static __attribute__((noinline)) void *
a_then_rd(void *arg)
{
	(void)arg;
	pl_mutex_lock(&dl_a);
	pl_rwlock_rdlock(&dl_rw);
	pl_rwlock_rdunlock(&dl_rw);
	pl_mutex_unlock(&dl_a);
	return NULL;
}

static __attribute__((noinline)) void *
a_then_wr(void *arg)
{
	(void)arg;
	pl_mutex_lock(&dl_a);
	pl_rwlock_wrlock(&dl_rw);
	pl_rwlock_wrunlock(&dl_rw);
	pl_mutex_unlock(&dl_a);
	return NULL;
}

static __attribute__((noinline)) void *
rd1_then_rd2(void *arg)
{
	(void)arg;
	pl_rwlock_rdlock(&dl_rw);
	pl_rwlock_rdlock(&dl_rw2);
	pl_rwlock_rdunlock(&dl_rw2);
	pl_rwlock_rdunlock(&dl_rw);
	return NULL;
}

static __attribute__((noinline)) void *
rd2_then_rd1(void *arg)
{
	(void)arg;
	pl_rwlock_rdlock(&dl_rw2);
	pl_rwlock_rdlock(&dl_rw);
	pl_rwlock_rdunlock(&dl_rw);
	pl_rwlock_rdunlock(&dl_rw2);
	return NULL;
}

Test(deadlock, read_read_no_cycle)
{
	setup();
	run(rd_then_a, NULL);
	run(a_then_rd, NULL);
	run(rd1_then_rd2, NULL);
	run(rd2_then_rd1, NULL);
	cr_assert(new_cycles() == 0, "%s", seen.text);
}

Test(deadlock, read_write_opposite_orders_cycle)
{
	setup();
	run(rd_then_a, NULL);
	run(a_then_wr, NULL);
	cr_assert(new_cycles() == 1, "new_cycles() != 1");
	cr_assert(seen.reports == 1, "seen.reports != 1");
	cr_assert(strstr(seen.text, "dl_rw") && strstr(seen.text, "dl_a"), "%s",
	    seen.text);
	cr_assert(strstr(seen.text, "for reading"), "%s", seen.text);
}

/* A condition wait gives its mutex back and takes it again: no false
 * edge.  The waiter waits on dl_cond with dl_a; the signaller locks
 * dl_a to signal.  Afterwards the waiter takes b then a: if the wait had
 * left a stale dl_a in its held set, that would be a -> b too, and a
 * cycle. */
static int cond_flag;

static void *
cond_waiter(void *arg)
{
	(void)arg;
	pl_mutex_lock(&dl_a);
	while (!__atomic_load_n(&cond_flag, __ATOMIC_ACQUIRE))
		pl_cond_wait(&dl_cond, &dl_a);
	pl_mutex_unlock(&dl_a);
	pl_mutex_lock(&dl_b);
	pl_mutex_lock(&dl_a);
	pl_mutex_unlock(&dl_a);
	pl_mutex_unlock(&dl_b);
	return NULL;
}

Test(deadlock, cond_wait_no_false_edge)
{
	setup();
	pthread_t w = tu_spawn(cond_waiter, NULL);
	/* Wait until the waiter is parked on the condition variable. */
	int64_t give_up = tu_now_ns() + TU_WAIT_NS;
	while (!(__atomic_load_n(&dl_cond.state, __ATOMIC_ACQUIRE) &
	           PL_COND_WAITERS) &&
	    tu_now_ns() < give_up)
		tu_poll_pause();
	cr_assert(__atomic_load_n(&dl_cond.state, __ATOMIC_ACQUIRE) &
	    PL_COND_WAITERS);
	pl_mutex_lock(&dl_a);
	__atomic_store_n(&cond_flag, 1, __ATOMIC_RELEASE);
	pl_cond_signal(&dl_cond);
	pl_mutex_unlock(&dl_a);
	tu_join(w);
	cr_assert(new_cycles() == 0, "%s", seen.text);
	/* The waiter's b -> a is real: a -> b from here is an inversion. */
	run(take_ab, NULL);
	cr_assert(new_cycles() == 1, "new_cycles() != 1");
}

/* Memory that held locks, reused for new ones: pl_lock_forget drops the
 * old ones' edges; without it they stay. */
struct pair {
	pl_mutex_t x, y;
};

static void *
take_xy(void *arg)
{
	struct pair *p = arg;
	pl_mutex_lock(&p->x);
	pl_mutex_lock(&p->y);
	pl_mutex_unlock(&p->y);
	pl_mutex_unlock(&p->x);
	return NULL;
}

static void *
take_yx(void *arg)
{
	struct pair *p = arg;
	pl_mutex_lock(&p->y);
	pl_mutex_lock(&p->x);
	pl_mutex_unlock(&p->x);
	pl_mutex_unlock(&p->y);
	return NULL;
}

Test(deadlock, forget_after_reuse)
{
	setup();
	static struct pair mem[2];
	struct pair *p = &mem[0];
	run(take_xy, p);
	pl_lock_forget(p, sizeof *p);
	memset(p, 0, sizeof *p); /* "freed", and reused for new locks */
	run(take_yx, p);
	cr_assert(new_cycles() == 0, "%s", seen.text);
	/* The control: the same without pl_lock_forget. */
	p = &mem[1];
	run(take_xy, p);
	memset(p, 0, sizeof *p);
	run(take_yx, p);
	cr_assert(new_cycles() == 1, "new_cycles() != 1");
}

/*
 * Locks that come and go, many times over, in a small graph (64 locks;
 * 60 of them live at a time, at addresses taken at random from 4096, so
 * that a lock forgotten often has others after it in its run of the
 * table, which move back): the graph stays whole.  Each lock is taken
 * under dl_g, then while holding the lock before it, which is older (no
 * order is ever inverted), and forgotten 60 locks later.  Then every
 * third live lock taken before dl_g is an inversion, each found.
 */
pl_mutex_t dl_g = PL_MUTEX_INITIALIZER;
static pl_mutex_t churn[4096];
#define CHURN_LIVE 60

static void
churn_take(pl_mutex_t *first, pl_mutex_t *second)
{
	pl_mutex_lock(first);
	pl_mutex_lock(second);
	pl_mutex_unlock(second);
	pl_mutex_unlock(first);
}

Test(deadlock, forget_churn_keeps_the_graph)
{
	cr_assert(setenv("PARKINGLOT_DEADLOCK_LOCKS", "64", 1) == 0);
	setup();
	pl_mutex_t *live[CHURN_LIVE] = { NULL };
	uint32_t rnd = 1;
	for (size_t r = 0; r < 20000; r++) {
		pl_mutex_t *x;
		bool dup;
		do {
			rnd = rnd * 1103515245u + 12345u;
			x = &churn[(rnd >> 8) % 4096];
			dup = false;
			for (size_t i = 0; i < CHURN_LIVE; i++)
				dup |= live[i] == x;
		} while (dup);
		pl_mutex_t **slot = &live[r % CHURN_LIVE];
		pl_mutex_t *prev = live[(r + CHURN_LIVE - 1) % CHURN_LIVE];
		if (*slot)
			pl_lock_forget(*slot, sizeof **slot);
		*slot = x;
		churn_take(&dl_g, x);
		if (prev)
			churn_take(x, prev);
	}
	cr_assert(new_cycles() == 0, "%zu cycles, the last:\n%s", new_cycles(),
	    seen.text);
	for (size_t i = 0; i < CHURN_LIVE; i += 3)
		churn_take(live[i], &dl_g);
	cr_assert(new_cycles() == CHURN_LIVE / 3, "%zu cycles, expected %d",
	    new_cycles(), CHURN_LIVE / 3);
	pl_lock_forget(churn, sizeof churn);
	for (size_t i = 0; i < CHURN_LIVE; i += 3)
		churn_take(live[i], &dl_g);
	cr_assert(new_cycles() == CHURN_LIVE / 3, "%zu cycles after forgetting",
	    new_cycles());
}

/* The other primitives are watched too: bit locks, timed locks, a
 * timed rwlock. */
static void *
bits_12(void *arg)
{
	(void)arg;
	pl_bitlock_lock(&dl_word1, 1, 2);
	struct timespec d = tu_deadline_in(TU_SEC);
	int rc = pl_bitlock_timedlock(&dl_word2, 1, 2, &d);
	if (rc == 0)
		pl_bitlock_unlock(&dl_word2, 1, 2);
	pl_bitlock_unlock(&dl_word1, 1, 2);
	return (void *)(intptr_t)rc;
}

static void *
bits_21(void *arg)
{
	(void)arg;
	pl_bitlock_lock(&dl_word2, 1, 2);
	pl_bitlock_lock(&dl_word1, 1, 2);
	pl_bitlock_unlock(&dl_word1, 1, 2);
	pl_bitlock_unlock(&dl_word2, 1, 2);
	return NULL;
}

static void *
timed_a_wr(void *arg)
{
	(void)arg;
	struct timespec d = tu_deadline_in(TU_SEC);
	int rc = pl_mutex_timedlock(&dl_c, &d);
	if (rc)
		return (void *)(intptr_t)rc;
	rc = pl_rwlock_timedwrlock(&dl_rw2, &d);
	if (rc == 0)
		pl_rwlock_wrunlock(&dl_rw2);
	pl_mutex_unlock(&dl_c);
	return (void *)(intptr_t)rc;
}

static void *
wr_then_c(void *arg)
{
	(void)arg;
	pl_rwlock_wrlock(&dl_rw2);
	pl_mutex_lock(&dl_c);
	pl_mutex_unlock(&dl_c);
	pl_rwlock_wrunlock(&dl_rw2);
	return NULL;
}

Test(deadlock, bitlocks_and_timed_locks)
{
	setup();
	cr_assert((tu_join(tu_spawn(bits_12, NULL))) == (NULL),
	    "tu_join(tu_spawn(bits_12, NULL)) != NULL");
	run(bits_21, NULL);
	cr_assert(new_cycles() == 1, "new_cycles() != 1");
	cr_assert(
	    strstr(seen.text, "dl_word1") && strstr(seen.text, "dl_word2"),
	    "%s", seen.text);
	cr_assert((tu_join(tu_spawn(timed_a_wr, NULL))) == (NULL),
	    "tu_join(tu_spawn(timed_a_wr, NULL)) != NULL");
	run(wr_then_c, NULL);
	cr_assert(new_cycles() == 2, "new_cycles() != 2");
}

/*
 * A blocking attempt that fails leaves the thread's held set as it was:
 * the detector counts an attempt as held from its start (lib/deadlock.c),
 * so a timed lock that times out must take it out again, or the locks the
 * thread takes next would make edges from a lock it never held.  The main
 * thread holds a mutex, a rwlock (write) and a bit lock; a thread's timed
 * attempts at each time out (the deadline has passed), then it takes
 * dl_ty; a later thread takes dl_ty, then each of the three: no cycle.
 */
pl_mutex_t dl_tx = PL_MUTEX_INITIALIZER;
pl_mutex_t dl_ty = PL_MUTEX_INITIALIZER;
pl_rwlock_t dl_trw = PL_RWLOCK_INITIALIZER;
uintptr_t dl_tword;

static void *
timeouts_then_y(void *arg)
{
	(void)arg;
	struct timespec d = tu_deadline_in(0);
	intptr_t failed = 0;
	failed += pl_mutex_timedlock(&dl_tx, &d) == ETIMEDOUT;
	failed += pl_rwlock_timedrdlock(&dl_trw, &d) == ETIMEDOUT;
	failed += pl_rwlock_timedwrlock(&dl_trw, &d) == ETIMEDOUT;
	failed += pl_bitlock_timedlock(&dl_tword, 1, 2, &d) == ETIMEDOUT;
	pl_mutex_lock(&dl_ty);
	pl_mutex_unlock(&dl_ty);
	return (void *)failed;
}

static void *
y_then_each(void *arg)
{
	(void)arg;
	pl_mutex_lock(&dl_ty);
	pl_mutex_lock(&dl_tx);
	pl_mutex_unlock(&dl_tx);
	pl_rwlock_wrlock(&dl_trw);
	pl_rwlock_wrunlock(&dl_trw);
	pl_bitlock_lock(&dl_tword, 1, 2);
	pl_bitlock_unlock(&dl_tword, 1, 2);
	pl_mutex_unlock(&dl_ty);
	return NULL;
}

Test(deadlock, failed_timed_lock_is_not_held)
{
	setup();
	pl_mutex_lock(&dl_tx);
	pl_rwlock_wrlock(&dl_trw);
	pl_bitlock_lock(&dl_tword, 1, 2);
	intptr_t failed = (intptr_t)tu_join(tu_spawn(timeouts_then_y, NULL));
	pl_bitlock_unlock(&dl_tword, 1, 2);
	pl_rwlock_wrunlock(&dl_trw);
	pl_mutex_unlock(&dl_tx);
	cr_assert(failed == 4, "%jd of the 4 timed locks timed out",
	    (intmax_t)failed);
	run(y_then_each, NULL);
	cr_assert(new_cycles() == 0, "%zu cycles, the last:\n%s", new_cycles(),
	    seen.text);
}

/* Abort mode: the report, then SIGABRT, at the first inversion. */
static void
abba_abort(void *arg)
{
	(void)arg;
	pl_deadlock_set_handler(NULL, NULL);
	pl_deadlock_set(PL_DEADLOCK_ABORT);
	take_ab(NULL);
	take_ba(NULL);
}

Test(deadlock, abort_mode)
{
	char buf[8192];
	int status = tu_run_child(abba_abort, NULL, 20, buf, sizeof buf);
	cr_assert(WIFSIGNALED(status) && WTERMSIG(status) == SIGABRT,
	    "status %#x, stderr:\n%s", status, buf);
	cr_assert(strstr(buf, "lock-order inversion") && strstr(buf, "dl_a") &&
	        strstr(buf, "aborting"),
	    "%s", buf);
}

/* A handler may call pl_deadlock_set_handler: here it puts on_cycle in
 * its place at its first report, and the next report goes to on_cycle.
 * In a child, whose hang ends with SIGALRM. */
static int first_calls;

static void
first_only(const struct pl_deadlock_cycle *c, const char *report, void *arg)
{
	(void)c;
	(void)report;
	(void)arg;
	first_calls++;
	pl_deadlock_set_handler(on_cycle, NULL);
}

static void
handler_replaces_itself(void *arg)
{
	(void)arg;
	pl_deadlock_set_handler(first_only, NULL);
	take_ab(NULL);
	take_ba(NULL); /* a -> b -> a: to first_only */
	take_bc(NULL);
	take_ca(NULL); /* a -> b -> c -> a: to on_cycle */
	fprintf(
	    stderr, "first_only %d, on_cycle %d\n", first_calls, seen.reports);
}

#if !defined(__SANITIZE_THREAD__)
/*
 * Not under TSan, whose model of the lock (the annotations of mutex.h)
 * has an owner, and which reports the unlock by another thread that the
 * API allows as a misuse (ASan and the plain build run it).
 *
 * A pl_mutex_t locked by one thread and unlocked by another (the API
 * allows it): the locker must not go on holding it for the detector.
 * Thread A locks dl_hand and waits; B unlocks it; A then takes dl_x.  C
 * takes dl_x, then dl_hand: no cycle, since A no longer held dl_hand.
 * The control: A2 holds dl_hand2 while B2 releases dl_z that the test's
 * thread took (a release by another thread, of another lock); A2 then
 * takes dl_y, which is an edge, and C2's dl_y then dl_hand2 is reported.
 */
pl_mutex_t dl_hand, dl_hand2, dl_x, dl_y, dl_z;

struct handoff {
	pl_mutex_t *held, *next;
	int step; /* atomic: 1 held, 2 released elsewhere */
};

static __attribute__((noinline)) void *
hold_then_take(void *arg)
{
	struct handoff *h = arg;
	pl_mutex_lock(h->held);
	__atomic_store_n(&h->step, 1, __ATOMIC_RELEASE);
	while (__atomic_load_n(&h->step, __ATOMIC_ACQUIRE) != 2)
		tu_poll_pause();
	pl_mutex_lock(h->next);
	pl_mutex_unlock(h->next);
	if (h->held == &dl_hand2)
		pl_mutex_unlock(h->held);
	return NULL;
}

static void *
unlock_other(void *arg)
{
	pl_mutex_unlock(arg);
	return NULL;
}

static __attribute__((noinline)) void *
take_x_hand(void *arg)
{
	(void)arg;
	pl_mutex_lock(&dl_x);
	pl_mutex_lock(&dl_hand);
	pl_mutex_unlock(&dl_hand);
	pl_mutex_unlock(&dl_x);
	return NULL;
}

static __attribute__((noinline)) void *
take_y_hand2(void *arg)
{
	(void)arg;
	pl_mutex_lock(&dl_y);
	pl_mutex_lock(&dl_hand2);
	pl_mutex_unlock(&dl_hand2);
	pl_mutex_unlock(&dl_y);
	return NULL;
}

static void
handoff_round(struct handoff *h, pl_mutex_t *release)
{
	pthread_t a = tu_spawn(hold_then_take, h);
	int64_t end = tu_now_ns() + TU_WAIT_NS;
	while (__atomic_load_n(&h->step, __ATOMIC_ACQUIRE) != 1) {
		cr_assert(tu_now_ns() < end, "the holder did not lock");
		tu_poll_pause();
	}
	run(unlock_other, release);
	__atomic_store_n(&h->step, 2, __ATOMIC_RELEASE);
	tu_join(a);
}

Test(deadlock, a_mutex_unlocked_by_another_thread_leaves_the_lockers_set)
{
	setup();
	struct handoff h = { &dl_hand, &dl_x, 0 };
	handoff_round(&h, &dl_hand);
	run(take_x_hand, NULL);
	cr_assert(new_cycles() == 0,
	    "a cycle through dl_hand, which its locker no longer held:\n%s",
	    seen.text);

	pl_mutex_lock(&dl_z);
	struct handoff h2 = { &dl_hand2, &dl_y, 0 };
	handoff_round(&h2, &dl_z);
	run(take_y_hand2, NULL);
	cr_assert(new_cycles() == 1 && seen.reports == 1,
	    "%zu cycles, %d reports: the control (dl_hand2 held while "
	    "another lock was released elsewhere) was not reported",
	    new_cycles(), seen.reports);
	cr_assert(strstr(seen.text, "dl_hand2") && strstr(seen.text, "dl_y"),
	    "%s", seen.text);
}
#endif

Test(deadlock, handler_may_set_the_handler)
{
	setup();
	char buf[512];
	int status =
	    tu_run_child(handler_replaces_itself, NULL, 10, buf, sizeof buf);
	cr_assert(WIFEXITED(status) && WEXITSTATUS(status) == TU_CHILD_RETURNED,
	    "status %#x (SIGALRM: it hung), stderr:\n%s", status, buf);
	cr_assert(strcmp(buf, "first_only 1, on_cycle 1\n") == 0, "%s", buf);
}

#if !defined(__SANITIZE_THREAD__)
/*
 * The drop-in.  Each test runs this program again in a forked child, with
 * the drop-in preloaded ($DROPIN, which make check sets) and
 * PARKINGLOT_DEADLOCK=report; the constructor below sees
 * PL_TEST_DROPIN_CASE and runs that case, plain pthread and C11 calls
 * that the drop-in serves, instead of the suite.  A case does what must
 * not make a cycle, then dropin_control, a real inversion (so the
 * detector is known to be on); the parent counts the reports the child
 * printed on stderr.
 */
pthread_mutex_t dlp_g = PTHREAD_MUTEX_INITIALIZER;
pthread_mutex_t dlp_x = PTHREAD_MUTEX_INITIALIZER;
pthread_mutex_t dlp_y = PTHREAD_MUTEX_INITIALIZER;
pthread_mutex_t dlp_ctl_a = PTHREAD_MUTEX_INITIALIZER;
pthread_mutex_t dlp_ctl_b = PTHREAD_MUTEX_INITIALIZER;
pthread_rwlock_t dlp_rw = PTHREAD_RWLOCK_INITIALIZER;
pthread_mutex_t dlp_robust[2];
pthread_cond_t dlp_cond = PTHREAD_COND_INITIALIZER;
/* Memory that holds one lock, then another. */
union dlp_mem {
	pthread_mutex_t m;
	pthread_rwlock_t rw;
	mtx_t c;
} dlp_mem;
static bool dlp_failed;

/* A call of the case must return want. */
static void
dlp_expect(int rc, int want, const char *call)
{
	if (rc == want)
		return;
	fprintf(
	    stderr, "%s: %d (%s), expected %d\n", call, rc, strerror(rc), want);
	dlp_failed = true;
}

#define DLP(call, want) dlp_expect((call), (want), #call)

/* m as an error-checking mutex. */
static void
dlp_errorcheck_init(pthread_mutex_t *m)
{
	pthread_mutexattr_t attr;
	pthread_mutexattr_init(&attr);
	pthread_mutexattr_settype(&attr, PTHREAD_MUTEX_ERRORCHECK);
	DLP(pthread_mutex_init(m, &attr), 0);
	pthread_mutexattr_destroy(&attr);
}

static void
dlp_both(pthread_mutex_t *first, pthread_mutex_t *second)
{
	DLP(pthread_mutex_lock(first), 0);
	DLP(pthread_mutex_lock(second), 0);
	DLP(pthread_mutex_unlock(second), 0);
	DLP(pthread_mutex_unlock(first), 0);
}

static void
dropin_control(void)
{
	dlp_both(&dlp_ctl_a, &dlp_ctl_b);
	dlp_both(&dlp_ctl_b, &dlp_ctl_a);
}

/* A mutex taken under dlp_g is destroyed; a new one in its memory is
 * taken before dlp_g.  Then a destroy that fails (EBUSY) forgets
 * nothing: the same mutex before and after dlp_y is an inversion. */
static void
case_mutex_reuse(void)
{
	pthread_mutex_t *m = &dlp_mem.m;
	DLP(pthread_mutex_init(m, NULL), 0);
	dlp_both(&dlp_g, m);
	DLP(pthread_mutex_destroy(m), 0);
	DLP(pthread_mutex_init(m, NULL), 0);
	dlp_both(m, &dlp_g);
	DLP(pthread_mutex_destroy(m), 0);
	DLP(pthread_mutex_init(m, NULL), 0);
	DLP(pthread_mutex_lock(&dlp_y), 0);
	DLP(pthread_mutex_lock(m), 0);
	DLP(pthread_mutex_destroy(m), EBUSY);
	DLP(pthread_mutex_unlock(m), 0);
	DLP(pthread_mutex_unlock(&dlp_y), 0);
	dlp_both(m, &dlp_y); /* reported */
	DLP(pthread_mutex_destroy(m), 0);
}

static void
case_rwlock_reuse(void)
{
	pthread_rwlock_t *l = &dlp_mem.rw;
	DLP(pthread_rwlock_init(l, NULL), 0);
	DLP(pthread_mutex_lock(&dlp_g), 0);
	DLP(pthread_rwlock_wrlock(l), 0);
	DLP(pthread_rwlock_unlock(l), 0);
	DLP(pthread_mutex_unlock(&dlp_g), 0);
	DLP(pthread_rwlock_destroy(l), 0);
	DLP(pthread_rwlock_init(l, NULL), 0);
	DLP(pthread_rwlock_wrlock(l), 0);
	DLP(pthread_mutex_lock(&dlp_g), 0);
	DLP(pthread_mutex_unlock(&dlp_g), 0);
	DLP(pthread_rwlock_unlock(l), 0);
	DLP(pthread_rwlock_destroy(l), 0);
}

static void
case_mtx_reuse(void)
{
	mtx_t *c = &dlp_mem.c;
	DLP(mtx_init(c, mtx_plain), thrd_success);
	DLP(pthread_mutex_lock(&dlp_g), 0);
	DLP(mtx_lock(c), thrd_success);
	DLP(mtx_unlock(c), thrd_success);
	DLP(pthread_mutex_unlock(&dlp_g), 0);
	mtx_destroy(c);
	DLP(mtx_init(c, mtx_timed), thrd_success);
	DLP(mtx_lock(c), thrd_success);
	DLP(pthread_mutex_lock(&dlp_g), 0);
	DLP(pthread_mutex_unlock(&dlp_g), 0);
	DLP(mtx_unlock(c), thrd_success);
	mtx_destroy(c);
}

/* A condition wait that fails at once (an error-checking mutex the thread
 * does not hold, a destroyed mutex) leaves the mutex out of the thread's
 * held set; one that times out takes it back (dlp_x -> dlp_y, then the
 * reverse: reported). */
static void
case_failed_wait(void)
{
	pthread_mutex_t *m = &dlp_mem.m;
	dlp_errorcheck_init(m);
	DLP(pthread_cond_wait(&dlp_cond, m), EPERM);
	dlp_both(&dlp_y, m);
	DLP(pthread_mutex_destroy(m), 0);
	DLP(pthread_cond_wait(&dlp_cond, m), EINVAL);
	DLP(pthread_mutex_init(m, NULL), 0);
	dlp_both(&dlp_y, m);
	DLP(pthread_mutex_destroy(m), 0);
	struct timespec past = { 0, 0 };
	DLP(pthread_mutex_lock(&dlp_x), 0);
	DLP(pthread_cond_timedwait(&dlp_cond, &dlp_x, &past), ETIMEDOUT);
	DLP(pthread_mutex_lock(&dlp_y), 0);
	DLP(pthread_mutex_unlock(&dlp_y), 0);
	DLP(pthread_mutex_unlock(&dlp_x), 0);
	dlp_both(&dlp_y, &dlp_x); /* reported */
}

/* Relocking what the thread holds where that fails at once (EDEADLK,
 * EBUSY) and cannot block: no edge into the lock. */
static void
case_relock_fails(void)
{
	pthread_mutex_t *m = &dlp_mem.m;
	dlp_errorcheck_init(m);
	DLP(pthread_mutex_lock(m), 0);
	DLP(pthread_mutex_lock(&dlp_x), 0);
	DLP(pthread_mutex_lock(m), EDEADLK);
	struct timespec past = { 0, 0 };
	DLP(pthread_mutex_timedlock(m, &past), EDEADLK);
	DLP(pthread_mutex_trylock(m), EBUSY);
	DLP(pthread_mutex_unlock(&dlp_x), 0);
	DLP(pthread_mutex_unlock(m), 0);
	DLP(pthread_mutex_destroy(m), 0);
	pthread_rwlock_t *l = &dlp_rw;
	DLP(pthread_rwlock_wrlock(l), 0);
	DLP(pthread_mutex_lock(&dlp_x), 0);
	DLP(pthread_rwlock_wrlock(l), EDEADLK);
	DLP(pthread_rwlock_rdlock(l), EDEADLK);
	DLP(pthread_rwlock_timedrdlock(l, &past), EDEADLK);
	DLP(pthread_rwlock_trywrlock(l), EBUSY);
	DLP(pthread_mutex_unlock(&dlp_x), 0);
	DLP(pthread_rwlock_unlock(l), 0);
	/* A process-shared one is glibc's. */
	pthread_rwlockattr_t rwattr;
	pthread_rwlockattr_init(&rwattr);
	pthread_rwlockattr_setpshared(&rwattr, PTHREAD_PROCESS_SHARED);
	l = &dlp_mem.rw;
	DLP(pthread_rwlock_init(l, &rwattr), 0);
	pthread_rwlockattr_destroy(&rwattr);
	DLP(pthread_rwlock_wrlock(l), 0);
	DLP(pthread_mutex_lock(&dlp_x), 0);
	DLP(pthread_rwlock_wrlock(l), EDEADLK);
	DLP(pthread_rwlock_rdlock(l), EDEADLK);
	DLP(pthread_mutex_unlock(&dlp_x), 0);
	DLP(pthread_rwlock_unlock(l), 0);
	DLP(pthread_rwlock_destroy(l), 0);
}

/* Robust mutexes are glibc's: re-entering a recursive one, and relocking
 * an error-checking one (EDEADLK), make no edge either. */
static void
case_robust_relock(void)
{
	for (int type = 0; type < 2; type++) {
		pthread_mutex_t *m = &dlp_robust[type];
		pthread_mutexattr_t attr;
		pthread_mutexattr_init(&attr);
		pthread_mutexattr_settype(&attr,
		    type ? PTHREAD_MUTEX_ERRORCHECK : PTHREAD_MUTEX_RECURSIVE);
		pthread_mutexattr_setrobust(&attr, PTHREAD_MUTEX_ROBUST);
		DLP(pthread_mutex_init(m, &attr), 0);
		pthread_mutexattr_destroy(&attr);
		DLP(pthread_mutex_lock(m), 0);
		DLP(pthread_mutex_lock(&dlp_x), 0);
		DLP(pthread_mutex_lock(m), type ? EDEADLK : 0);
		if (!type)
			DLP(pthread_mutex_unlock(m), 0);
		DLP(pthread_mutex_unlock(&dlp_x), 0);
		DLP(pthread_mutex_unlock(m), 0);
		DLP(pthread_mutex_destroy(m), 0);
	}
}

/* C11 mutexes taken in both orders, each lock from a function of its
 * own: the report must give these functions as the call sites (the
 * program's), not the drop-in's call inside mtx_lock or mtx_timedlock. */
mtx_t dlp_c11_p, dlp_c11_q;

__attribute__((noinline)) static void
dlp_c11_p_then_q(void)
{
	DLP(mtx_lock(&dlp_c11_p), thrd_success);
	DLP(mtx_lock(&dlp_c11_q), thrd_success);
	DLP(mtx_unlock(&dlp_c11_q), thrd_success);
	DLP(mtx_unlock(&dlp_c11_p), thrd_success);
}

__attribute__((noinline)) static void
dlp_c11_q_then_p(void)
{
	struct timespec far;
	clock_gettime(CLOCK_REALTIME, &far);
	far.tv_sec += 60;
	DLP(mtx_timedlock(&dlp_c11_q, &far), thrd_success);
	DLP(mtx_timedlock(&dlp_c11_p, &far), thrd_success);
	DLP(mtx_unlock(&dlp_c11_p), thrd_success);
	DLP(mtx_unlock(&dlp_c11_q), thrd_success);
}

static void
case_c11_sites(void)
{
	DLP(mtx_init(&dlp_c11_p, mtx_plain), thrd_success);
	DLP(mtx_init(&dlp_c11_q, mtx_timed), thrd_success);
	dlp_c11_p_then_q();
	dlp_c11_q_then_p(); /* reported */
}

/* An unlock that fails (EPERM: an error-checking mutex of another
 * thread) releases nothing: the owner still holds the mutex for the
 * detector, and its next lock is an edge (dlp_x, then the reverse by
 * this thread: reported).  A normal mutex unlocked by another thread is
 * released: no edge from it (dlp_y, then the reverse: not reported). */
static int dlp_step;   /* atomic */
static bool dlp_owned; /* the holder's mutex keeps its owner */

static void
dlp_await(int step)
{
	while (__atomic_load_n(&dlp_step, __ATOMIC_ACQUIRE) != step)
		sched_yield();
}

static void *
dlp_holder(void *arg)
{
	pthread_mutex_t *m = arg;
	DLP(pthread_mutex_lock(m), 0);
	__atomic_store_n(&dlp_step, 1, __ATOMIC_RELEASE);
	dlp_await(2);
	dlp_both(dlp_owned ? &dlp_x : &dlp_y, &dlp_g);
	if (dlp_owned)
		DLP(pthread_mutex_unlock(m), 0);
	return NULL;
}

/* m locked by a thread, unlocked by this one (want: what that returns),
 * then the thread takes dlp_x or dlp_y and dlp_g. */
static void
dlp_unlock_elsewhere(pthread_mutex_t *m, int want)
{
	pthread_t t;
	__atomic_store_n(&dlp_step, 0, __ATOMIC_RELEASE);
	DLP(pthread_create(&t, NULL, dlp_holder, m), 0);
	dlp_await(1);
	DLP(pthread_mutex_unlock(m), want);
	__atomic_store_n(&dlp_step, 2, __ATOMIC_RELEASE);
	DLP(pthread_join(t, NULL), 0);
}

static void
case_unlock_elsewhere(void)
{
	pthread_mutex_t *m = &dlp_mem.m;
	dlp_errorcheck_init(m);
	dlp_owned = true;
	dlp_unlock_elsewhere(m, EPERM);
	dlp_both(&dlp_x, m); /* reported */
	DLP(pthread_mutex_destroy(m), 0);
	DLP(pthread_mutex_init(m, NULL), 0);
	dlp_owned = false;
	dlp_unlock_elsewhere(m, 0);
	dlp_both(&dlp_y, m);
	DLP(pthread_mutex_destroy(m), 0);
}

static const struct {
	const char *name;
	void (*fn)(void);
} dropin_cases[] = {
	{ "unlock_elsewhere", case_unlock_elsewhere },
	{ "c11_sites", case_c11_sites },
	{ "mutex_reuse", case_mutex_reuse },
	{ "rwlock_reuse", case_rwlock_reuse },
	{ "mtx_reuse", case_mtx_reuse },
	{ "failed_wait", case_failed_wait },
	{ "relock_fails", case_relock_fails },
	{ "robust_relock", case_robust_relock },
};

/* The child, before the suite's main: the case, the control, exit. */
__attribute__((constructor)) static void
dropin_case_main(void)
{
	const char *name = getenv("PL_TEST_DROPIN_CASE");
	if (name == NULL)
		return;
	Dl_info info;
	void *sym = dlsym(RTLD_DEFAULT, "pthread_mutex_lock");
	if (sym == NULL || dladdr(sym, &info) == 0 || info.dli_fname == NULL ||
	    strstr(info.dli_fname, "libparkinglot-pthread") == NULL) {
		fprintf(stderr, "pthread_mutex_lock is not the drop-in's\n");
		_exit(4);
	}
	for (size_t i = 0; i < sizeof dropin_cases / sizeof *dropin_cases;
	     i++) {
		if (strcmp(name, dropin_cases[i].name) != 0)
			continue;
		dropin_cases[i].fn();
		dropin_control();
		_exit(dlp_failed ? 5 : 0);
	}
	fprintf(stderr, "no case %s\n", name);
	_exit(6);
}

static void
dropin_exec(void *arg)
{
	const char *dropin = getenv("DROPIN");
	const char *pre = getenv("LD_PRELOAD");
	char preload[8192];
	snprintf(preload, sizeof preload, "%s%s%s", dropin, pre ? " " : "",
	    pre ? pre : "");
	setenv("LD_PRELOAD", preload, 1);
	setenv("PARKINGLOT_DEADLOCK", "report", 1);
	unsetenv("PARKINGLOT_DEADLOCK_LOG");
	setenv("PL_TEST_DROPIN_CASE", arg, 1);
	execl("/proc/self/exe", "test_deadlock", (char *)NULL);
	_exit(7);
}

/* Run the case under the drop-in: it must report want cycles, the
 * control's among them.  Returns what the child wrote on stderr. */
static const char *
dropin_case(const char *name, int want)
{
	const char *dropin = getenv("DROPIN");
	if (dropin == NULL || access(dropin, R_OK) != 0)
		cr_skip_test(
		    "no drop-in built (DROPIN='%s')", dropin ? dropin : "");
	static char buf[65536];
	int status =
	    tu_run_child(dropin_exec, (void *)name, 20, buf, sizeof buf);
	cr_assert(WIFEXITED(status) && WEXITSTATUS(status) == 0,
	    "case %s: status %#x, stderr:\n%s", name, status, buf);
	int reports = 0;
	for (const char *p = buf;
	     (p = strstr(p, "lock-order inversion")) != NULL; p++)
		reports++;
	cr_assert(reports == want, "case %s: %d reports, expected %d:\n%s",
	    name, reports, want, buf);
	return buf;
}

Test(deadlock, dropin_c11_sites_are_the_programs)
{
	const char *t = dropin_case("c11_sites", 2);
	cr_assert(
	    strstr(t, "dlp_c11_p_then_q") && strstr(t, "dlp_c11_q_then_p"),
	    "the report does not name the program's call sites:\n%s", t);
	cr_assert(
	    strstr(t, "mtx_lock") == NULL && strstr(t, "mtx_timedlock") == NULL,
	    "the report gives a site inside the drop-in:\n%s", t);
	/* Each lock its own line: two offsets in each function. */
	static const char *const fns[] = { "dlp_c11_p_then_q+0x",
		"dlp_c11_q_then_p+0x" };
	for (int i = 0; i < 2; i++) {
		unsigned long first = 0, off;
		bool two = false;
		for (const char *p = t; (p = strstr(p, fns[i])) != NULL; p++) {
			off = strtoul(p + strlen(fns[i]), NULL, 16);
			if (first == 0)
				first = off;
			else if (off != first)
				two = true;
		}
		cr_assert(two,
		    "the report gives one site in %s for both locks:\n%s",
		    fns[i], t);
	}
}

Test(deadlock, dropin_unlock_by_another_thread)
{
	dropin_case("unlock_elsewhere", 2);
}

Test(deadlock, dropin_destroy_forgets_the_mutex)
{
	dropin_case("mutex_reuse", 2);
}

Test(deadlock, dropin_destroy_forgets_the_rwlock)
{
	dropin_case("rwlock_reuse", 1);
}

Test(deadlock, dropin_destroy_forgets_the_mtx)
{
	dropin_case("mtx_reuse", 1);
}

Test(deadlock, dropin_failed_cond_wait_leaves_the_mutex_out)
{
	dropin_case("failed_wait", 2);
}

Test(deadlock, dropin_relock_that_fails_records_no_edge)
{
	dropin_case("relock_fails", 1);
}

Test(deadlock, dropin_robust_relock_records_no_edge)
{
	dropin_case("robust_relock", 1);
}
#endif
