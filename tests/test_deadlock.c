/* SPDX-License-Identifier: MIT */
/*
 * The deadlock detector (<parkinglot/deadlock.h>) through the hooks of a
 * checked build: this file is compiled with -DPL_CHECKED.  Each inversion
 * test runs its threads one after the other, so that the program never
 * hangs, and counts the cycles the detector found during the test
 * (pl_deadlock_cycles before and after: the count only grows) and the
 * reports its handler received.  The locks are globals, so that the
 * reports can name them; the call sites are functions of their own
 * (noinline), so that the reports can name those too.
 */
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
