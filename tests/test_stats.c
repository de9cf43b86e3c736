/* SPDX-License-Identifier: MIT */
/*
 * Statistics (stats.h): each counter against a scripted scenario with a
 * known number of parks, timeouts, invalid parks, wake-ups, requeues and
 * fair hand-offs.  Criterion runs every test in a process of its own, so
 * the process-wide counters start from what the test itself did.  And
 * the counters' page, mapped once however many threads count first.
 */
#include "testutil.h"

TU_CRITERION_MAIN_SERIAL()

TestSuite(stats, .timeout = 30);

/* Start n threads parked on addr (parkers of testutil.h), each verifiably
 * queued. */
static void
park_n(struct parker *ps, size_t n, const void *addr)
{
	for (size_t i = 0; i < n; i++)
		parker_setup(&ps[i], addr, 0);
	park_in_order(ps, n, count_parked(addr));
}

static void
join_n(struct parker *ps, size_t n)
{
	for (size_t i = 0; i < n; i++) {
		parker_join(&ps[i]);
		cr_assert(ps[i].res.status == PL_PARK_UNPARKED);
	}
}

static bool
say_no(void *ctx)
{
	(void)ctx;
	return false;
}

Test(stats, parks_timeouts_and_invalid_parks)
{
	static char a;
	struct pl_stats s;

	/* The first park reads the topology; do that before the clock
	 * starts, so that the park below is queued for its whole 5 ms. */
	struct pl_tuning t;
	pl_tuning_get(&t);
	pl_stats_reset();
	pl_stats_get(&s);
	cr_assert(s.parks == 0 && s.timeouts == 0 && s.invalid_parks == 0);
	cr_assert(s.wait_ns_total == 0 && s.unparks == 0);

	struct timespec dl = tu_deadline_in(50 * TU_MS);
	pl_park_result_t r = pl_park(&a, NULL, NULL, NULL, NULL, 0, &dl);
	cr_assert(r.status == PL_PARK_TIMED_OUT);
	r = pl_park(&a, say_no, NULL, NULL, NULL, 0, NULL);
	cr_assert(r.status == PL_PARK_INVALID);
	struct timespec bad = { 0, 1000000000L };
	r = pl_park(&a, NULL, NULL, NULL, NULL, 0, &bad);
	cr_assert(r.status == PL_PARK_INVALID);

	pl_stats_get(&s);
	cr_assert(s.parks == 1, "parks %llu", (unsigned long long)s.parks);
	cr_assert(s.timeouts == 1);
	cr_assert(s.invalid_parks == 2);
	cr_assert(s.unparks == 0);
	/* Queued from before the deadline until after it (the park itself
	 * takes well under 10 ms to queue, even under a sanitizer). */
	cr_assert(s.wait_ns_total >= 40 * TU_MS, "waited %llu ns",
	    (unsigned long long)s.wait_ns_total);
	cr_assert(s.threads_parked_now == 0);
	cr_assert(s.max_queue_len == 1);
	cr_assert(s.buckets == pli_lot_buckets() && s.buckets >= 32);
}

Test(stats, unparks_queue_lengths_and_the_parked_gauge)
{
	static char a;
	struct parker ps[5];
	struct pl_stats s;

	pl_stats_reset();
	park_n(ps, 5, &a);
	pl_stats_get(&s);
	cr_assert(s.parks == 5);
	cr_assert(
	    s.threads_parked_now == 5, "parked now %zu", s.threads_parked_now);
	cr_assert(s.max_queue_len == 5);

	cr_assert(pl_unpark_one(&a, NULL, NULL).unparked == 1);
	cr_assert(pl_unpark_all(&a, 0) == 4);
	join_n(ps, 5);
	pl_stats_get(&s);
	cr_assert(s.unparks == 5);
	cr_assert(s.threads_parked_now == 0);
	cr_assert(s.max_queue_len == 5);
	cr_assert(s.fair_handoffs == 0);
}

Test(stats, requeues_count_threads_moved)
{
	static char from, to;
	struct parker ps[4];
	struct pl_stats s;

	pl_stats_reset();
	park_n(ps, 4, &from);
	pl_unpark_result_t r = pl_unpark_requeue(&from, &to, NULL, NULL, NULL);
	cr_assert(r.unparked == 1 && r.requeued == 3);
	cr_assert(wait_parked(&to, 3, 10 * TU_SEC));
	pl_stats_get(&s);
	cr_assert(s.requeues == 3);
	cr_assert(s.unparks == 1);
	cr_assert(s.threads_parked_now == 3);
	cr_assert(pl_unpark_all(&to, 0) == 3);
	join_n(ps, 4);
	pl_stats_get(&s);
	cr_assert(s.unparks == 4 && s.requeues == 3 && s.parks == 4);
	cr_assert(s.threads_parked_now == 0);
}

static pl_mutex_t handoff_mutex;

Test(stats, fair_handoffs_and_spin_failures)
{
	struct pl_stats s;
	struct pl_tuning t;

	/* A long fairness interval: only unlock_fair hands off. */
	pl_tuning_get(&t);
	tu_tuning_fair_interval(&t, 10000000);

	pl_mutex_lock(&handoff_mutex);
	pl_stats_reset();
	struct tu_locker l;
	tu_locker_start(&l, &handoff_mutex);
	cr_assert(wait_parked(&handoff_mutex, 1, 10 * TU_SEC));
	pl_mutex_unlock_fair(&handoff_mutex);
	tu_join(l.thread);
	cr_assert(l.got == 1);
	pl_stats_get(&s);
	cr_assert(s.fair_handoffs == 1, "hand-offs %llu",
	    (unsigned long long)s.fair_handoffs);
	cr_assert(s.spin_failures == 1, "spin failures %llu",
	    (unsigned long long)s.spin_failures);
	cr_assert(s.parks == 1 && s.unparks == 1);
	pl_tuning_set(&t);
}

Test(stats, reset_keeps_the_gauge_and_the_table)
{
	static char a;
	struct parker p;
	struct pl_stats s;

	park_n(&p, 1, &a);
	pl_stats_reset();
	pl_stats_get(&s);
	cr_assert(s.parks == 0 && s.max_queue_len == 0);
	cr_assert(s.threads_parked_now == 1);
	cr_assert(s.buckets == pli_lot_buckets());
	cr_assert(pl_unpark_all(&a, 0) == 1);
	join_n(&p, 1);
	pl_stats_get(&s);
	cr_assert(s.threads_parked_now == 0);
	cr_assert(s.unparks == 1 && s.wait_ns_total > 0);
}

/* The first counts of a process map the counters' page once, however many
 * threads make them together: ARRIVALS threads started onto a held mutex
 * in a process that has counted nothing yet.  Each used to map a page of
 * its own and all but one unmapped it again (lockbench W3, 300 threads:
 * 276 did).  The hook holds the first page mapped back from being
 * published until every arriver has mapped one too, or for MAP_WAIT_NS
 * if they do not come: so a creation that lets more than one thread map
 * fails here every time, and one that maps once only waits that long.
 * The test's thread touches nothing that counts until the end: it
 * watches the mutex's byte, not the lot. */
#define ARRIVALS 64
#define MAP_WAIT_NS 200000000

static pl_mutex_t first_m;

static void
hold_the_first_page(void)
{
	int64_t end = tu_now_ns() + MAP_WAIT_NS;
	while (pli_counters_pages_mapped() < ARRIVALS && tu_now_ns() < end)
		tu_poll_pause();
}

static void *
arriver(void *arg)
{
	(void)arg;
	pl_mutex_lock(&first_m);
	pl_mutex_unlock(&first_m);
	return NULL;
}

Test(stats, the_first_counts_map_one_page)
{
	pthread_t t[ARRIVALS];
	cr_assert(pli_counters_pages_mapped() == 0,
	    "this test needs a process that has counted nothing");
	pli_counters_map_hook = hold_the_first_page;
	pl_mutex_lock(&first_m);
	for (int i = 0; i < ARRIVALS; i++)
		t[i] = tu_spawn(arriver, NULL);
	int64_t end = tu_now_ns() + TU_WAIT_NS;
	while (!(__atomic_load_n(&first_m.state, __ATOMIC_ACQUIRE) &
	    PL_MUTEX_PARKED))
		cr_assert(tu_now_ns() < end, "no arriver parked");
	pl_mutex_unlock(&first_m);
	for (int i = 0; i < ARRIVALS; i++)
		tu_join(t[i]);
	pli_counters_map_hook = NULL;
	cr_assert(pli_counters_pages_mapped() == 1,
	    "%u pages mapped for the counters", pli_counters_pages_mapped());
	struct pl_stats s;
	pl_stats_get(&s);
	cr_assert(s.parks >= 1, "parks %llu", (unsigned long long)s.parks);
}

/* A signal handler that counts, run on the thread that is mapping the
 * page: the mapper blocks its signals until the page is published, so
 * the handler runs after, instead of waiting for its own thread.  The
 * hook sends the signal to the mapping thread from inside the mapping;
 * the first count is an invalid park of the test's thread.  (Not under
 * TSan, which defers handlers to its interceptors; see test_faults.c.) */
#ifndef __SANITIZE_THREAD__
static volatile sig_atomic_t handled;

static void
reset_in_handler(int sig)
{
	(void)sig;
	pl_stats_reset(); /* counts a reset: needs the page */
	handled = 1;
}

static void
signal_the_mapper(void)
{
	pthread_kill(pthread_self(), SIGUSR1);
}

Test(stats, a_handler_that_counts_while_the_page_is_mapped)
{
	static char a;
	struct sigaction sa = { .sa_handler = reset_in_handler };
	cr_assert(pli_counters_pages_mapped() == 0,
	    "this test needs a process that has counted nothing");
	sigemptyset(&sa.sa_mask);
	cr_assert(sigaction(SIGUSR1, &sa, NULL) == 0);
	pli_counters_map_hook = signal_the_mapper;
	pl_park_result_t r = pl_park(&a, say_no, NULL, NULL, NULL, 0, NULL);
	pli_counters_map_hook = NULL;
	cr_assert(r.status == PL_PARK_INVALID);
	cr_assert(handled == 1, "the handler did not run");
	cr_assert(pli_counters_pages_mapped() == 1);
	struct pl_stats s;
	pl_stats_get(&s);
	cr_assert(s.invalid_parks == 1, "invalid parks %llu",
	    (unsigned long long)s.invalid_parks);
}
#endif

/* A fork while another thread maps the page: the child, whose only
 * thread is the forking one, must not wait for a mapper it does not
 * have.  The hook holds the mapper inside the mapping until the parent
 * has forked; the child makes its first count (an invalid park), which
 * maps a page of its own, and exits 0 if that count is there. */
static int in_hook, forked;

static void
hold_until_forked(void)
{
	__atomic_store_n(&in_hook, 1, __ATOMIC_RELEASE);
	int64_t end = tu_now_ns() + TU_WAIT_NS;
	while (!__atomic_load_n(&forked, __ATOMIC_ACQUIRE) && tu_now_ns() < end)
		tu_poll_pause();
}

static void *
first_counter(void *arg)
{
	static char b;
	(void)arg;
	(void)pl_park(&b, say_no, NULL, NULL, NULL, 0, NULL);
	return NULL;
}

Test(stats, a_fork_while_the_page_is_mapped)
{
	cr_assert(pli_counters_pages_mapped() == 0,
	    "this test needs a process that has counted nothing");
	pli_counters_map_hook = hold_until_forked;
	pthread_t t = tu_spawn(first_counter, NULL);
	cr_assert(tu_wait_int_eq(&in_hook, 1, TU_WAIT_NS), "no mapper");
	fflush(NULL);
	pid_t pid = fork();
	cr_assert(pid >= 0, "fork: %s", strerror(errno));
	if (pid == 0) {
		static char c;
		struct pl_stats s;
		pli_counters_map_hook = NULL;
		(void)pl_park(&c, say_no, NULL, NULL, NULL, 0, NULL);
		pl_stats_get(&s);
		_exit(s.invalid_parks == 1 && pli_counters_pages_mapped() == 2
		        ? 0
		        : 1);
	}
	__atomic_store_n(&forked, 1, __ATOMIC_RELEASE);
	tu_join(t);
	pli_counters_map_hook = NULL;
	int status = 0;
	bool exited = tu_waitpid_bounded(pid, &status, 10 * TU_SEC);
	cr_assert(exited, "the child hung (killed after 10 s)");
	cr_assert(WIFEXITED(status) && WEXITSTATUS(status) == 0,
	    "the child's count is missing");
	cr_assert(pli_counters_pages_mapped() == 1);
}
