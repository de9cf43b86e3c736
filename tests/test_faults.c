/* SPDX-License-Identifier: MIT */
/*
 * Faults and misuse (doc/errors.md): signals delivered to parked threads,
 * allocation failure, threads that exit while others are parked, and the
 * misuse aborts that no other suite covers.
 */
#include <fcntl.h>
#include <signal.h>

#include "testutil.h"

TU_CRITERION_MAIN_SERIAL()

TestSuite(faults, .timeout = 30);

/* ---- signals ---------------------------------------------------------- */

/*
 * ThreadSanitizer defers a signal's handler until the thread next enters
 * one of its interceptors; a thread asleep in the futex system call that
 * the library makes directly wakes with EINTR, sleeps again (as it must)
 * and never runs the handler.  These tests wait for each handler to run,
 * so they are built everywhere but under TSan.
 */
#ifndef __SANITIZE_THREAD__

static int signals_seen;

static void
on_signal(int sig)
{
	(void)sig;
	__atomic_add_fetch(&signals_seen, 1, __ATOMIC_RELAXED);
}

/* A handler without SA_RESTART: an interrupted futex wait returns EINTR,
 * which the library must absorb. */
static void
install_handler(void)
{
	struct sigaction sa;
	memset(&sa, 0, sizeof sa);
	sa.sa_handler = on_signal;
	sigemptyset(&sa.sa_mask);
	cr_assert(sigaction(SIGUSR1, &sa, NULL) == 0);
	__atomic_store_n(&signals_seen, 0, __ATOMIC_RELAXED);
}

/* Send n signals to t, each after the last was handled. */
static void
pester(pthread_t t, int n)
{
	for (int i = 0; i < n; i++) {
		int before = __atomic_load_n(&signals_seen, __ATOMIC_RELAXED);
		cr_assert(pthread_kill(t, SIGUSR1) == 0);
		cr_assert(
		    tu_wait_int_eq(&signals_seen, before + 1, 10 * TU_SEC),
		    "signal %d was not handled", i);
	}
}

static pl_mutex_t sig_mutex;

Test(faults, signals_never_end_a_lock_without_the_lock)
{
	struct tu_locker l;
	install_handler();
	pl_mutex_lock(&sig_mutex);
	tu_locker_start(&l, &sig_mutex);
	cr_assert(wait_parked(&sig_mutex, 1, 10 * TU_SEC));
	pester(l.thread, 200);
	/* Still waiting, still queued, and never returned. */
	cr_assert(__atomic_load_n(&l.got, __ATOMIC_ACQUIRE) == 0);
	cr_assert(count_parked(&sig_mutex) == 1);
	pl_mutex_unlock(&sig_mutex);
	tu_join(l.thread);
	cr_assert(l.got == 1);
	cr_assert(sig_mutex.state == 0);
}

struct timed_arg {
	int64_t deadline_ns;
	int rc;
	int64_t returned_ns;
	int kind; /* 0 mutex, 1 cond, 2 rwlock (write), 3 pl_park */
};

static pl_cond_t sig_cond;
static pl_rwlock_t sig_rwlock;
static char sig_addr;

static void *
sig_timed(void *arg)
{
	struct timed_arg *a = arg;
	struct timespec dl = tu_ns_to_ts(a->deadline_ns);
	switch (a->kind) {
	case 0:
		a->rc = pl_mutex_timedlock(&sig_mutex, &dl);
		break;
	case 1:
		pl_mutex_lock(&sig_mutex);
		a->rc = pl_cond_timedwait(&sig_cond, &sig_mutex, &dl);
		/* The mutex is held again, whatever the result. */
		if (pl_mutex_trylock(&sig_mutex))
			a->rc = -1;
		pl_mutex_unlock(&sig_mutex);
		break;
	case 2:
		a->rc = pl_rwlock_timedwrlock(&sig_rwlock, &dl);
		break;
	default:
		a->rc =
		    pl_park(&sig_addr, NULL, NULL, NULL, NULL, 0, &dl).status ==
		        PL_PARK_TIMED_OUT
		    ? ETIMEDOUT
		    : -2;
		break;
	}
	a->returned_ns = tu_now_ns();
	return NULL;
}

static const void *
timed_addr(int kind)
{
	switch (kind) {
	case 0:
		return &sig_mutex;
	case 1:
		return &sig_cond;
	case 2:
		return (const char *)&sig_rwlock + 1;
	default:
		return &sig_addr;
	}
}

Test(faults, signals_never_end_a_timed_wait_early)
{
	install_handler();
	for (int kind = 0; kind < 4; kind++) {
		struct timed_arg a = { tu_now_ns() + 300 * TU_MS, 0, 0, kind };
		if (kind == 0)
			pl_mutex_lock(&sig_mutex);
		if (kind == 2)
			pl_rwlock_rdlock(&sig_rwlock);
		pthread_t t = tu_spawn(sig_timed, &a);
		cr_assert(wait_parked(timed_addr(kind), 1, 10 * TU_SEC),
		    "kind %d never parked", kind);
		pester(t, 50);
		tu_join(t);
		cr_assert(a.rc == ETIMEDOUT, "kind %d returned %d", kind, a.rc);
		cr_assert(a.returned_ns >= a.deadline_ns,
		    "kind %d returned %lld ns before its deadline", kind,
		    (long long)(a.deadline_ns - a.returned_ns));
		if (kind == 0)
			pl_mutex_unlock(&sig_mutex);
		if (kind == 2)
			pl_rwlock_rdunlock(&sig_rwlock);
	}
	cr_assert(sig_mutex.state == 0 && sig_cond.state == 0);
	cr_assert(sig_rwlock.state == 0);
}

#endif /* !__SANITIZE_THREAD__ */

/* ---- allocation failure ------------------------------------------------ */

static bool
fail_all(size_t size)
{
	(void)size;
	return true;
}

static pl_mutex_t nomem_mutex;
static long nomem_counter;

static void *
nomem_worker(void *arg)
{
	(void)arg;
	for (int i = 0; i < 20000; i++) {
		pl_mutex_lock(&nomem_mutex);
		nomem_counter++;
		if (i % 100 == 0)
			sched_yield(); /* make the others park */
		pl_mutex_unlock(&nomem_mutex);
	}
	return NULL;
}

Test(faults, locks_work_when_no_per_thread_record_can_be_allocated)
{
	size_t live = pli_lot_live_threads();
	/* No spinning: every contended lock parks, so the fallback record
	 * is exercised for sure. */
	struct pl_tuning saved, nospin;
	pl_tuning_get(&saved);
	nospin = saved;
	nospin.spin_limit = nospin.yield_limit = 0;
	pl_tuning_set(&nospin);
	pli_alloc_fail_hook = fail_all;
	struct pl_stats before, after;
	pl_stats_get(&before);
	pthread_t t[4];
	for (int i = 0; i < 4; i++)
		t[i] = tu_spawn(nomem_worker, NULL);
	for (int i = 0; i < 4; i++)
		tu_join(t[i]);
	pl_stats_get(&after);
	pli_alloc_fail_hook = NULL;
	pl_tuning_set(&saved);
	cr_assert(nomem_counter == 4 * 20000);
	cr_assert(nomem_mutex.state == 0);
	/* The threads did park, on records of their own stacks. */
	cr_assert(after.parks > before.parks, "nobody parked: not a test");
	cr_assert(pli_lot_live_threads() == live);
}

/* ---- thread exit ------------------------------------------------------- */

static char exit_addr;

static void *
park_once(void *arg)
{
	pl_park_result_t *r = arg;
	*r = pl_park(&exit_addr, NULL, NULL, NULL, NULL, 0, NULL);
	return NULL;
}

Test(faults, a_thread_that_exits_leaves_no_trace)
{
	pl_park_result_t r[3];
	size_t live = pli_lot_live_threads();
	pthread_t t0 = tu_spawn(park_once, &r[0]);
	cr_assert(wait_parked(&exit_addr, 1, 10 * TU_SEC));
	pthread_t t1 = tu_spawn(park_once, &r[1]);
	cr_assert(wait_parked(&exit_addr, 2, 10 * TU_SEC));
	pthread_t t2 = tu_spawn(park_once, &r[2]);
	cr_assert(wait_parked(&exit_addr, 3, 10 * TU_SEC));

	/* The oldest is woken and exits; the other two stay, in order. */
	cr_assert(pl_unpark_one(&exit_addr, NULL, NULL).unparked == 1);
	tu_join(t0);
	cr_assert(pli_lot_live_threads() == live + 2);
	uintptr_t tokens[4];
	cr_assert(parked_tokens(&exit_addr, tokens, 4) == 2);
	cr_assert(pl_unpark_all(&exit_addr, 7) == 2);
	tu_join(t1);
	tu_join(t2);
	cr_assert(r[1].token == 7 && r[2].token == 7);
	cr_assert(count_parked(&exit_addr) == 0);
	cr_assert(pli_lot_live_threads() == live);
}

/* ---- misuse ------------------------------------------------------------ */

static char nested_addr, inner_addr;

static void
park_again(void *ctx)
{
	(void)ctx;
	pl_park(&inner_addr, NULL, NULL, NULL, NULL, 0, NULL);
}

static void
nested_park(void *arg)
{
	(void)arg;
	struct timespec dl = tu_deadline_in(5 * TU_SEC);
	pl_park(&nested_addr, NULL, park_again, NULL, NULL, 0, &dl);
}

Test(faults, park_from_a_park_callback_aborts)
{
	tu_expect_abortf(nested_park, NULL,
	    "pl_park: thread is already parked on %p "
	    "(pl_park called from a park callback?)\n",
	    (void *)&nested_addr);
}

static pl_rwlock_t full_rwlock;

static void
too_many_readers(void *arg)
{
	(void)arg;
	full_rwlock.state = PL_RWLOCK_READERS_MAX;
	pl_rwlock_rdlock(&full_rwlock);
}

Test(faults, reader_count_overflow_aborts)
{
	tu_expect_abortf(too_many_readers, NULL,
	    "pl_rwlock_rdlock: rwlock %p: too many readers\n",
	    (void *)&full_rwlock);
}

static pl_cond_t misuse_cond;
static pl_mutex_t misuse_mutex;

static void
wait_unlocked(void *arg)
{
	(void)arg;
	pl_cond_wait(&misuse_cond, &misuse_mutex);
}

Test(faults, cond_wait_without_the_mutex_aborts)
{
	tu_expect_abortf(wait_unlocked, NULL,
	    "pl_mutex_unlock: mutex %p is not locked\n", (void *)&misuse_mutex);
}
