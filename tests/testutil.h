/* SPDX-License-Identifier: MIT */
/*
 * Helpers shared by the Criterion test suites: clock and deadline math,
 * thread spawning with small stacks, a bounded barrier, groups of threads
 * that run one function each with its own index, bounded polling, a way
 * to count the threads parked on an address without waking any of them
 * (pl_unpark_filter with a filter that only counts and skips), a thread
 * that parks once and records what it saw, misuse checks run in a forked
 * child, and a pair of tests of one body.
 *
 * No helper here sleeps to synchronize: every wait polls a real condition
 * and gives up after a hard timeout, and the caller asserts the outcome.
 * Helpers whose name ends in _raw never call Criterion, so that forked
 * children and worker threads may use them.  It compiles as C and as
 * C++ (tests/test_cxx.cc), hence the casts from void *.
 */
#ifndef PL_TESTUTIL_H
#define PL_TESTUTIL_H

#include <errno.h>
#include <limits.h>
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <criterion/criterion.h>
#include <parkinglot.h>

/* Relative to this file, so that it works whatever -I the build uses. */
#include "../lib/internal.h"
#include "../lib/twobit.h"

#define TU_US ((int64_t)1000)
#define TU_MS ((int64_t)1000000)
#define TU_SEC ((int64_t)1000000000)

/* Upper bound of every "wait until X" in the suites: generous, because a
 * correct library reaches X in microseconds and only a bug gets here. */
#define TU_WAIT_NS (10 * TU_SEC)

/* ------------------------------------------------------------------ */
/* Clock and deadlines (CLOCK_MONOTONIC, like the library).            */

static inline int64_t
tu_ts_to_ns(const struct timespec *ts)
{
	return (int64_t)ts->tv_sec * TU_SEC + (int64_t)ts->tv_nsec;
}

static inline struct timespec
tu_ns_to_ts(int64_t ns)
{
	struct timespec ts;
	ts.tv_sec = (time_t)(ns / TU_SEC);
	ts.tv_nsec = (long)(ns % TU_SEC);
	return ts;
}

static inline int64_t
tu_now_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return tu_ts_to_ns(&ts);
}

/* An absolute deadline rel_ns from now (rel_ns may be negative). */
static inline struct timespec
tu_deadline_in(int64_t rel_ns)
{
	int64_t t = tu_now_ns() + rel_ns;
	if (t < 0)
		t = 0;
	return tu_ns_to_ts(t);
}

/* Whether the clock has reached ts. */
static inline bool
tu_reached(const struct timespec *ts)
{
	return tu_now_ns() >= tu_ts_to_ns(ts);
}

/* The pause between two polls of a condition: short, and not a means of
 * synchronization (the condition is always checked again). */
static inline void
tu_poll_pause(void)
{
	struct timespec ts = { 0, 50 * 1000 };
	nanosleep(&ts, NULL);
}

/* Busy-wait (no syscall) for ns: simulates work while holding a lock. */
static inline void
tu_busy_ns(int64_t ns)
{
	int64_t end = tu_now_ns() + ns;
	while (tu_now_ns() < end)
		pli_cpu_relax();
}

/* ------------------------------------------------------------------ */
/* Threads.                                                            */

static inline size_t
tu_stack_size(void)
{
#if defined(__SANITIZE_THREAD__) || defined(__SANITIZE_ADDRESS__)
	size_t s = 1024 * 1024; /* sanitizers need room for their frames */
#else
	size_t s = 64 * 1024;
#endif
	if (s < (size_t)PTHREAD_STACK_MIN)
		s = (size_t)PTHREAD_STACK_MIN;
	return s;
}

/* Start fn(arg) on a thread with a small stack; 0 or an errno value. */
static inline int
tu_spawn_raw(pthread_t *t, void *(*fn)(void *), void *arg)
{
	pthread_attr_t attr;
	int rc = pthread_attr_init(&attr);
	if (rc != 0)
		return rc;
	rc = pthread_attr_setstacksize(&attr, tu_stack_size());
	if (rc == 0)
		rc = pthread_create(t, &attr, fn, arg);
	pthread_attr_destroy(&attr);
	return rc;
}

static inline pthread_t
tu_spawn(void *(*fn)(void *), void *arg)
{
	pthread_t t;
	int rc = tu_spawn_raw(&t, fn, arg);
	cr_assert(rc == 0, "pthread_create failed: %s", strerror(rc));
	return t;
}

static inline void *
tu_join(pthread_t t)
{
	void *ret = NULL;
	int rc = pthread_join(t, &ret);
	cr_assert(rc == 0, "pthread_join failed: %s", strerror(rc));
	return ret;
}

#ifdef _GNU_SOURCE
/* ------------------------------------------------------------------ */
/* CPUs.  A mutex's unlock may wake a waiter that parked on another CPU
 * before the oldest, once (lib/parkinglot.c, "Passing over"): tests of
 * the order of turns run all their threads on one CPU, and the tests of
 * that rule pin each thread.                                          */

/* Pin the calling thread to cpu; the threads it starts from then on
 * inherit that.  Returns pthread_setaffinity_np's error number. */
static inline int
tu_pin_raw(int cpu)
{
	cpu_set_t set;
	CPU_ZERO(&set);
	CPU_SET(cpu, &set);
	return pthread_setaffinity_np(pthread_self(), sizeof set, &set);
}

static inline void
tu_pin(int cpu)
{
	int rc = tu_pin_raw(cpu);
	cr_assert(rc == 0, "pthread_setaffinity_np(%d): %s", cpu, strerror(rc));
}

/* The first n CPUs the calling thread may run on, in cpu[]; how many
 * there are, up to n. */
static inline int
tu_cpus(int *cpu, int n)
{
	cpu_set_t set;
	int k = 0;
	int rc = pthread_getaffinity_np(pthread_self(), sizeof set, &set);
	cr_assert(rc == 0, "pthread_getaffinity_np: %s", strerror(rc));
	for (int i = 0; i < CPU_SETSIZE && k < n; i++)
		if (CPU_ISSET(i, &set))
			cpu[k++] = i;
	return k;
}

/* Run the calling thread, and the threads it starts, on one CPU. */
static inline void
tu_one_cpu(void)
{
	int cpu;
	cr_assert(tu_cpus(&cpu, 1) == 1);
	tu_pin(cpu);
}
#endif

/* ------------------------------------------------------------------ */
/* A barrier with a bounded wait (pthread mutex and condvar, so that it
 * does not depend on the library under test).                          */

struct tu_barrier {
	pthread_mutex_t mu;
	pthread_cond_t cv;
	unsigned count;   /* participants */
	unsigned waiting; /* arrived in this generation */
	unsigned gen;
};

static inline void
tu_barrier_init(struct tu_barrier *b, unsigned count)
{
	pthread_condattr_t ca;
	pthread_mutex_init(&b->mu, NULL);
	pthread_condattr_init(&ca);
	pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
	pthread_cond_init(&b->cv, &ca);
	pthread_condattr_destroy(&ca);
	b->count = count;
	b->waiting = 0;
	b->gen = 0;
}

static inline void
tu_barrier_destroy(struct tu_barrier *b)
{
	pthread_cond_destroy(&b->cv);
	pthread_mutex_destroy(&b->mu);
}

/* Wait for every participant; false if that took longer than TU_WAIT_NS. */
static inline bool
tu_barrier_wait(struct tu_barrier *b)
{
	struct timespec dl = tu_deadline_in(TU_WAIT_NS);
	bool ok = true;
	pthread_mutex_lock(&b->mu);
	unsigned gen = b->gen;
	if (++b->waiting == b->count) {
		b->waiting = 0;
		b->gen++;
		pthread_cond_broadcast(&b->cv);
	} else {
		while (gen == b->gen) {
			if (pthread_cond_timedwait(&b->cv, &b->mu, &dl) ==
			    ETIMEDOUT) {
				ok = gen != b->gen;
				break;
			}
		}
	}
	pthread_mutex_unlock(&b->mu);
	return ok;
}

/* ------------------------------------------------------------------ */
/* Groups: threads that run one function, each with its own index.     */

#define TU_GROUP_MAX 256

typedef void (*tu_member_fn)(void *shared, int idx);

struct tu_group;

struct tu_member {
	struct tu_group *g;
	int idx;
	bool joined;
	pthread_t thread;
};

struct tu_group {
	tu_member_fn fn;
	void *shared;
	int n;         /* members started */
	bool together; /* each member waits at start before it calls fn */
	struct tu_barrier start;
	struct tu_member m[TU_GROUP_MAX];
};

static inline void *
tu_member_main(void *arg)
{
	struct tu_member *m = (struct tu_member *)arg;
	if (m->g->together)
		tu_barrier_wait(&m->g->start);
	m->g->fn(m->g->shared, m->idx);
	return NULL;
}

/* A group without members yet, each of which will run fn(shared, idx). */
static inline void
tu_group_init(struct tu_group *g, tu_member_fn fn, void *shared)
{
	g->fn = fn;
	g->shared = shared;
	g->n = 0;
	g->together = false;
}

/* Start one more member (of a group that does not start together); returns
 * its index, which counts from 0. */
static inline int
tu_group_add(struct tu_group *g)
{
	cr_assert(g->n < TU_GROUP_MAX, "a group of more than %d threads",
	    TU_GROUP_MAX);
	struct tu_member *m = &g->m[g->n];
	m->g = g;
	m->idx = g->n;
	m->joined = false;
	m->thread = tu_spawn(tu_member_main, m);
	return g->n++;
}

/* Start n members, each free to run as soon as it is started. */
static inline void
tu_group_start(struct tu_group *g, tu_member_fn fn, void *shared, int n)
{
	tu_group_init(g, fn, shared);
	for (int i = 0; i < n; i++)
		tu_group_add(g);
}

/* Start n members that call fn together, once all n have started (or
 * after TU_WAIT_NS: the wait is bounded like tu_barrier_wait). */
static inline void
tu_group_start_together(
    struct tu_group *g, tu_member_fn fn, void *shared, int n)
{
	tu_group_init(g, fn, shared);
	g->together = true;
	tu_barrier_init(&g->start, (unsigned)n);
	for (int i = 0; i < n; i++)
		tu_group_add(g);
}

/* Join every member not joined yet. */
static inline void
tu_group_join(struct tu_group *g)
{
	for (int i = 0; i < g->n; i++) {
		if (!g->m[i].joined) {
			tu_join(g->m[i].thread);
			g->m[i].joined = true;
		}
	}
	if (g->together) {
		tu_barrier_destroy(&g->start);
		g->together = false;
	}
}

/* ------------------------------------------------------------------ */
/* A thread that takes a mutex once.                                   */

struct tu_locker {
	pl_mutex_t *m;
	int got; /* atomic: set while it holds m */
	pthread_t thread;
};

static inline void *
tu_locker_main(void *arg)
{
	struct tu_locker *l = (struct tu_locker *)arg;
	pl_mutex_lock(l->m);
	__atomic_store_n(&l->got, 1, __ATOMIC_RELEASE);
	pl_mutex_unlock(l->m);
	return NULL;
}

/* Start a thread that locks m (blocking), notes that it got it, and
 * unlocks it again. */
static inline void
tu_locker_start(struct tu_locker *l, pl_mutex_t *m)
{
	l->m = m;
	l->got = 0;
	l->thread = tu_spawn(tu_locker_main, l);
}

/* ------------------------------------------------------------------ */
/* Bounded polling.                                                    */

typedef bool (*tu_pred_fn)(void *ctx);

/* Poll pred(ctx) until it holds or timeout_ns passes; its last value. */
static inline bool
tu_wait_until(tu_pred_fn pred, void *ctx, int64_t timeout_ns)
{
	int64_t end = tu_now_ns() + timeout_ns;
	for (;;) {
		if (pred(ctx))
			return true;
		if (tu_now_ns() >= end)
			return pred(ctx);
		tu_poll_pause();
	}
}

/* Wait until *p (read atomically) == v. */
static inline bool
tu_wait_int_eq(const int *p, int v, int64_t timeout_ns)
{
	int64_t end = tu_now_ns() + timeout_ns;
	while (__atomic_load_n(p, __ATOMIC_ACQUIRE) != v) {
		if (tu_now_ns() >= end)
			return __atomic_load_n(p, __ATOMIC_ACQUIRE) == v;
		tu_poll_pause();
	}
	return true;
}

/* Wait until *p (read atomically) >= v. */
static inline bool
tu_wait_size_ge(const size_t *p, size_t v, int64_t timeout_ns)
{
	int64_t end = tu_now_ns() + timeout_ns;
	while (__atomic_load_n(p, __ATOMIC_ACQUIRE) < v) {
		if (tu_now_ns() >= end)
			return __atomic_load_n(p, __ATOMIC_ACQUIRE) >= v;
		tu_poll_pause();
	}
	return true;
}

/* ------------------------------------------------------------------ */
/* Counting parked threads without waking any.                         */

struct tu_token_list {
	uintptr_t *tokens; /* may be NULL: count only */
	size_t cap;
	size_t n;
};

static inline pl_filter_op_t
tu_count_filter(uintptr_t park_token, void *ctx)
{
	struct tu_token_list *l = (struct tu_token_list *)ctx;
	if (l->tokens != NULL && l->n < l->cap)
		l->tokens[l->n] = park_token;
	l->n++;
	return PL_FILTER_SKIP;
}

/*
 * The park tokens of the threads queued on addr, oldest first (at most
 * cap stored); returns how many threads are queued.  Returns SIZE_MAX if
 * the library woke anybody or reported an inconsistent result, which no
 * count can match.
 */
static inline size_t
parked_tokens(const void *addr, uintptr_t *tokens, size_t cap)
{
	struct tu_token_list l = { tokens, cap, 0 };
	pl_unpark_result_t r =
	    pl_unpark_filter(addr, tu_count_filter, NULL, &l);
	if (r.unparked != 0 || r.requeued != 0 || r.have_more != (l.n != 0))
		return SIZE_MAX;
	return l.n;
}

/* How many threads are parked on addr right now (nobody is woken). */
static inline size_t
count_parked(const void *addr)
{
	return parked_tokens(addr, NULL, 0);
}

/* Poll until exactly n threads are parked on addr; false on timeout. */
static inline bool
wait_parked(const void *addr, size_t n, int64_t timeout_ns)
{
	int64_t end = tu_now_ns() + timeout_ns;
	for (;;) {
		if (count_parked(addr) == n)
			return true;
		if (tu_now_ns() >= end)
			return count_parked(addr) == n;
		tu_poll_pause();
	}
}

#define ASSERT_PARKED(addr, n)                                                 \
	do {                                                                   \
		size_t tu_n_ = (n);                                            \
		cr_assert(wait_parked((addr), tu_n_, TU_WAIT_NS),              \
		    "expected %zu thread(s) parked on %p, found %zu", tu_n_,   \
		    (const void *)(addr), count_parked(addr));                 \
	} while (0)

/* ------------------------------------------------------------------ */
/* A woken waiter that loses the lock (lib/twobit.c, "Turns").         */

struct tu_lose {
	void *word;
	size_t size; /* of *word: 1 or sizeof(uintptr_t) */
	uintptr_t parked;
	bool any;        /* wake the first waiter, whatever its token */
	uintptr_t token; /* else the first whose park token is this */
	unsigned seen;
};

static inline pl_filter_op_t
tu_lose_filter(uintptr_t park_token, void *ctx)
{
	struct tu_lose *c = (struct tu_lose *)ctx;
	if (!c->any && park_token != c->token)
		return PL_FILTER_SKIP;
	return c->seen++ == 0 ? PL_FILTER_UNPARK : PL_FILTER_STOP;
}

static inline uintptr_t
tu_lose_callback(pl_unpark_result_t r, void *ctx)
{
	struct tu_lose *c = (struct tu_lose *)ctx;
	(void)r;
	if (c->parked == 0)
		; /* a lock whose parked bit the caller keeps */
	else if (c->size == 1)
		__atomic_fetch_and((unsigned char *)c->word,
		    (unsigned char)~c->parked, __ATOMIC_RELAXED);
	else
		__atomic_fetch_and(
		    (uintptr_t *)c->word, ~c->parked, __ATOMIC_RELAXED);
	return PLI_TOKEN_REARM;
}

/*
 * The caller holds a two-bit lock (a pl_mutex_t's byte, a bit lock's
 * word) with waiters parked on word.  Do what an unlock that wakes a
 * waiter to compete does, the lock's P bit cleared and the token
 * PLI_TOKEN_REARM, and what a barging thread that takes the lock before
 * the woken one gets there does, all at once: the lock stays held.  So
 * the woken thread finds the lock held and parks again.  The woken one
 * is the first waiter on word (any) or the first whose park token is
 * token.  Returns how many were woken: 1, or 0 if nobody matched.  With
 * parked 0 the word is left alone: for a lock whose parked bit the
 * unlock keeps while others wait (the rwlock's WPARKED; its woken writer
 * takes any token but a hand-off as "compete").
 */
static inline size_t
tu_wake_to_lose(
    void *word, size_t size, uintptr_t parked, bool any, uintptr_t token)
{
	struct tu_lose c = { word, size, parked, any, token, 0 };
	return pl_unpark_filter(word, tu_lose_filter, tu_lose_callback, &c)
	    .unparked;
}

/* Threads that take a lock once each and note, holding it, the order in
 * which they got it: the turn tests.  lock and unlock act on lk. */
struct tu_turns {
	void (*lock)(void *lk);
	void (*unlock)(void *lk);
	void *lk;
	unsigned order[2]; /* A is 0, B 1 */
	unsigned n;
};

struct tu_turn_arg {
	struct tu_turns *t;
	unsigned id;
};

/* The lock and unlock of struct tu_turns for a lock type. */
#define TU_TURN_FNS(name, type, lockf, unlockf)                                \
	static inline void tu_##name##_lock(void *p)                           \
	{                                                                      \
		lockf((type *)p);                                              \
	}                                                                      \
	static inline void tu_##name##_unlock(void *p)                         \
	{                                                                      \
		unlockf((type *)p);                                            \
	}
TU_TURN_FNS(mutex, pl_mutex_t, pl_mutex_lock, pl_mutex_unlock)
TU_TURN_FNS(wrlock, pl_rwlock_t, pl_rwlock_wrlock, pl_rwlock_wrunlock)
#undef TU_TURN_FNS

static inline void *
tu_turn_thread(void *arg)
{
	struct tu_turn_arg *a = (struct tu_turn_arg *)arg;
	a->t->lock(a->t->lk);
	a->t->order[a->t->n++] = a->id;
	a->t->unlock(a->t->lk);
	return NULL;
}

/*
 * One round of a turn test.  The caller holds t's lock, whose waiters
 * park on addr and whose parked bit is parked in the byte or word at
 * addr (size; 0: leave the word alone).  A parks, then B; A is woken to
 * lose (tu_wake_to_lose) and parks again; then the lock is unlocked.
 * Returns who got the lock first: 0 (A) if A kept its turn.
 */
static inline unsigned
tu_turn_round(
    struct tu_turns *t, const void *addr, size_t size, uintptr_t parked)
{
	struct tu_turn_arg a[2] = { { t, 0 }, { t, 1 } };
	pthread_t w[2];
	t->n = 0;
	for (int i = 0; i < 2; i++) {
		w[i] = tu_spawn(tu_turn_thread, &a[i]);
		ASSERT_PARKED(addr, (size_t)i + 1);
	}
	cr_assert(tu_wake_to_lose((void *)addr, size, parked, true, 0) == 1);
	ASSERT_PARKED(addr, 2); /* A is back in the queue */
	t->unlock(t->lk);
	tu_join(w[0]);
	tu_join(w[1]);
	cr_assert(t->n == 2);
	return t->order[0];
}

/* ------------------------------------------------------------------ */
/* The calls of a park back into its caller, counted and ordered.      */

struct park_calls {
	unsigned validate, before_sleep, timed_out;
	unsigned seq, validate_at, before_sleep_at;
	bool validate_ret; /* what calls_validate returns */
	const void *timed_out_addr;
	bool was_last;
	void *ctx_seen;
};

static inline bool
calls_validate(void *ctx)
{
	struct park_calls *c = (struct park_calls *)ctx;
	c->validate++;
	c->validate_at = ++c->seq;
	c->ctx_seen = ctx;
	return c->validate_ret;
}

static inline void
calls_before_sleep(void *ctx)
{
	struct park_calls *c = (struct park_calls *)ctx;
	c->before_sleep++;
	c->before_sleep_at = ++c->seq;
}

static inline void
calls_timed_out(void *ctx, const void *addr, bool was_last)
{
	struct park_calls *c = (struct park_calls *)ctx;
	c->timed_out++;
	c->timed_out_addr = addr;
	c->was_last = was_last;
}

/* ------------------------------------------------------------------ */
/* A thread that parks once and records everything it saw.             */

struct parker {
	/* The timed_out calls.  First, so that a pointer to the parker, the
	 * ctx of its park, is also one to them (for calls_timed_out). */
	struct park_calls calls;
	/* input */
	const void *addr;
	uintptr_t park_token;
	bool timed;
	struct timespec deadline;
	bool (*validate)(void *ctx);
	void (*before_sleep)(void *ctx);
	/* output */
	pl_park_result_t res;
	int64_t returned_ns;
	int done; /* atomic */
	bool joined;
	pthread_t thread;
};

static inline void *
parker_main(void *arg)
{
	struct parker *p = (struct parker *)arg;
	p->res = pl_park(p->addr, p->validate, p->before_sleep, calls_timed_out,
	    p, p->park_token, p->timed ? &p->deadline : NULL);
	p->returned_ns = tu_now_ns();
	__atomic_store_n(&p->done, 1, __ATOMIC_RELEASE);
	return NULL;
}

static inline void
parker_setup(struct parker *p, const void *addr, uintptr_t park_token)
{
	memset(p, 0, sizeof(*p));
	p->addr = addr;
	p->park_token = park_token;
}

static inline void
parker_start(struct parker *p)
{
	p->thread = tu_spawn(parker_main, p);
}

/* Start a parker whose park times out rel_ns from now. */
static inline void
parker_start_timed(
    struct parker *p, const void *addr, uintptr_t park_token, int64_t rel_ns)
{
	parker_setup(p, addr, park_token);
	p->timed = true;
	p->deadline = tu_deadline_in(rel_ns);
	parker_start(p);
}

static inline bool
parker_done(struct parker *p)
{
	return __atomic_load_n(&p->done, __ATOMIC_ACQUIRE) != 0;
}

/* Start the parkers one after another on their address, each only once the
 * previous one is verifiably queued, so that the queue order is known.
 * already is the number of threads queued on the address before. */
static inline void
park_in_order(struct parker *ps, size_t n, size_t already)
{
	for (size_t i = 0; i < n; i++) {
		parker_start(&ps[i]);
		ASSERT_PARKED(ps[i].addr, already + i + 1);
	}
}

/* Queue n parkers, in order, on addr, where nobody is queued yet; the i-th
 * has the park token token0 + i. */
static inline void
park_queue(struct parker *ps, size_t n, const void *addr, uintptr_t token0)
{
	for (size_t i = 0; i < n; i++)
		parker_setup(&ps[i], addr, token0 + i);
	park_in_order(ps, n, 0);
}

/* Wait for the parker's park to return and join its thread (once: a
 * parker already joined is left alone). */
static inline void
parker_join(struct parker *p)
{
	if (p->joined)
		return;
	cr_assert(tu_wait_int_eq(&p->done, 1, TU_WAIT_NS),
	    "a parked thread did not return");
	tu_join(p->thread);
	p->joined = true;
}

/* ------------------------------------------------------------------ */
/* Tuning.                                                             */

/* Set the tuning to base with the fairness interval us instead of its
 * own; returns the tuning then in force. */
static inline struct pl_tuning
tu_tuning_fair_interval(const struct pl_tuning *base, unsigned us)
{
	struct pl_tuning t = *base;
	t.fair_interval_us = us;
	pl_tuning_set(&t);
	pl_tuning_get(&t);
	return t;
}

/* ------------------------------------------------------------------ */
/* Forked children.                                                    */

/* Wait for pid, at most timeout_ns; on timeout kill it and return false. */
static inline bool
tu_waitpid_bounded(pid_t pid, int *status, int64_t timeout_ns)
{
	int64_t end = tu_now_ns() + timeout_ns;
	for (;;) {
		pid_t r = waitpid(pid, status, WNOHANG);
		if (r == pid)
			return true;
		if (r < 0 && errno != EINTR)
			return false;
		if (tu_now_ns() >= end) {
			kill(pid, SIGKILL);
			waitpid(pid, status, 0);
			return false;
		}
		tu_poll_pause();
	}
}

/* In a forked child: make sure a hang ends with SIGALRM. */
static inline void
tu_child_watchdog(unsigned seconds)
{
	sigset_t set;
	signal(SIGALRM, SIG_DFL);
	sigemptyset(&set);
	sigaddset(&set, SIGALRM);
	pthread_sigmask(SIG_UNBLOCK, &set, NULL);
	alarm(seconds);
}

/* ------------------------------------------------------------------ */
/* Misuse: calls that must abort, run in a forked child.               */

/* What a slow path leaves in the statistics when it spins or parks (a
 * timed call that tries once and fails leaves nothing). */
static inline uint64_t
tu_slow_path_events(void)
{
	struct pl_stats s;
	pl_stats_get(&s);
	return s.parks + s.timeouts + s.invalid_parks + s.spin_acquires +
	    s.spin_failures;
}

/* Publish the calling thread's id in *tid (atomically), for
 * tu_thread_in_futex in another thread. */
static inline void
tu_store_tid(pid_t *tid)
{
	__atomic_store_n(tid, (pid_t)syscall(SYS_gettid), __ATOMIC_RELEASE);
}

/* Whether thread tid of this process sleeps in a futex call now (read
 * from /proc: the system call it is blocked in). */
static inline bool
tu_thread_in_futex(pid_t tid)
{
	if (tid == 0)
		return false;
	char path[64], buf[64];
	snprintf(path, sizeof path, "/proc/self/task/%d/syscall", (int)tid);
	FILE *f = fopen(path, "r");
	if (f == NULL)
		return false;
	bool in = fgets(buf, sizeof buf, f) != NULL &&
	    strtol(buf, NULL, 10) == SYS_futex;
	fclose(f);
	return in;
}

/*
 * A bucket held from outside, to stage the window in which another thread
 * waits for that bucket's lock: tu_bucket_hold parks on addr with a
 * validate callback that marks holding and spins until release is set, so
 * the calling thread holds addr's bucket lock all that time and never
 * parks (spinning in a callback is not allowed in real code).  A test runs
 * it on a thread of its own (tu_bucket_hold_start) or of a group, waits
 * for holding, and sets release with tu_bucket_hold_end.
 */
struct tu_bucket_hold {
	const void *addr;
	int holding, release; /* atomic */
	pthread_t thread;     /* of tu_bucket_hold_start */
};

static inline bool
tu_bucket_hold_validate(void *ctx)
{
	struct tu_bucket_hold *h = (struct tu_bucket_hold *)ctx;
	__atomic_store_n(&h->holding, 1, __ATOMIC_RELEASE);
	while (!__atomic_load_n(&h->release, __ATOMIC_ACQUIRE))
		tu_poll_pause();
	return false;
}

static inline void
tu_bucket_hold(struct tu_bucket_hold *h)
{
	pl_park(h->addr, tu_bucket_hold_validate, NULL, NULL, h, 0, NULL);
}

static inline void *
tu_bucket_hold_main(void *arg)
{
	tu_bucket_hold((struct tu_bucket_hold *)arg);
	return NULL;
}

/* Hold addr's bucket from a new thread; returns once it holds it. */
static inline void
tu_bucket_hold_start(struct tu_bucket_hold *h, const void *addr)
{
	memset(h, 0, sizeof(*h));
	h->addr = addr;
	h->thread = tu_spawn(tu_bucket_hold_main, h);
	cr_assert(tu_wait_int_eq(&h->holding, 1, TU_WAIT_NS),
	    "the bucket of %p was not taken", addr);
}

/* Let go of the bucket (and join the thread of tu_bucket_hold_start). */
static inline void
tu_bucket_hold_end(struct tu_bucket_hold *h)
{
	__atomic_store_n(&h->release, 1, __ATOMIC_RELEASE);
	if (h->thread)
		tu_join(h->thread);
}

/*
 * A thread held in a signal handler (SIGUSR2) until the test lets it go:
 * parked, it can be woken meanwhile but cannot act on it, so the window
 * between a wake-up and what the woken thread then does stays open (a
 * waiter woken to compete that has yet to set P again, lib/twobit.c
 * "Re-arm").  The handler returns: the thread goes on with its call.
 */
struct tu_held {
	int in, may_return; /* atomic */
	struct sigaction old;
};

static inline struct tu_held *
tu_held_state(void)
{
	static struct tu_held h;
	return &h;
}

static inline void
tu_held_handler(int sig)
{
	struct tu_held *h = tu_held_state();
	(void)sig;
	__atomic_store_n(&h->in, 1, __ATOMIC_RELEASE);
	struct timespec nap = { 0, 1000 * 1000 };
	while (!__atomic_load_n(&h->may_return, __ATOMIC_ACQUIRE))
		nanosleep(&nap, NULL);
}

/* Hold t in the handler; returns once it runs there. */
static inline void
tu_hold_in_handler(pthread_t t)
{
	struct tu_held *h = tu_held_state();
	struct sigaction sa;
	memset(&sa, 0, sizeof sa);
	sa.sa_handler = tu_held_handler;
	sigemptyset(&sa.sa_mask);
	h->in = 0;
	h->may_return = 0;
	cr_assert(sigaction(SIGUSR2, &sa, &h->old) == 0);
	cr_assert(pthread_kill(t, SIGUSR2) == 0);
	cr_assert(tu_wait_int_eq(&h->in, 1, TU_WAIT_NS),
	    "the signal handler did not run");
}

/* Let the held thread return from the handler. */
static inline void
tu_let_go_of_handler(void)
{
	struct tu_held *h = tu_held_state();
	__atomic_store_n(&h->may_return, 1, __ATOMIC_RELEASE);
	cr_assert(sigaction(SIGUSR2, &h->old, NULL) == 0);
}

/* A thread that takes a lock (lock(lk)), says so in got, and keeps it
 * until release is set. */
struct tu_keeper {
	void (*lock)(void *lk);
	void (*unlock)(void *lk);
	void *lk;
	int got, release; /* atomic */
	pthread_t thread;
};

static inline void *
tu_keeper_main(void *arg)
{
	struct tu_keeper *k = (struct tu_keeper *)arg;
	k->lock(k->lk);
	__atomic_store_n(&k->got, 1, __ATOMIC_RELEASE);
	while (!__atomic_load_n(&k->release, __ATOMIC_ACQUIRE))
		tu_poll_pause();
	k->unlock(k->lk);
	return NULL;
}

static inline void
tu_keeper_start(
    struct tu_keeper *k, void (*lock)(void *), void (*unlock)(void *), void *lk)
{
	memset(k, 0, sizeof(*k));
	k->lock = lock;
	k->unlock = unlock;
	k->lk = lk;
	k->thread = tu_spawn(tu_keeper_main, k);
}

/* Wait until k holds its lock, let it go, and join it. */
static inline void
tu_keeper_finish(struct tu_keeper *k)
{
	cr_assert(tu_wait_int_eq(&k->got, 1, TU_WAIT_NS),
	    "a waiter did not get the lock within 10 s");
	__atomic_store_n(&k->release, 1, __ATOMIC_RELEASE);
	tu_join(k->thread);
}

/* A two-bit lock as a test drives it: its calls on lk, its word (size
 * bytes) and its parked bit. */
struct tu_twobit_ops {
	void (*lock)(void *lk);
	void (*unlock)(void *lk);
	void (*unlock_fair)(void *lk);
	bool (*trylock)(void *lk);
	void *lk;
	void *word;
	size_t size;
	uintptr_t parked;
};

/*
 * A fair unlock while a waiter woken to compete has yet to re-arm
 * (lib/twobit.c, "Re-arm"): the parked bit is clear, yet a waiter is
 * queued.  A parks on the lock this thread holds, then B; A is held in a
 * signal handler and woken as an unlock wakes a waiter to compete (the
 * parked bit cleared), the lock kept; then the fair unlock must hand the
 * lock to B (API.md: "hand off to a waiter if any"), so that a trylock
 * right after it fails.  Returns whether the trylock failed; A and B have
 * both had the lock, and it is free, when it returns.
 */
static inline bool
tu_fair_unlock_while_rearm_pending(const struct tu_twobit_ops *o)
{
	static struct tu_keeper a, b;
	o->lock(o->lk);
	tu_keeper_start(&a, o->lock, o->unlock, o->lk);
	ASSERT_PARKED(o->word, 1);
	tu_keeper_start(&b, o->lock, o->unlock, o->lk);
	ASSERT_PARKED(o->word, 2);
	tu_hold_in_handler(a.thread);
	cr_assert(tu_wake_to_lose(o->word, o->size, o->parked, true, 0) == 1);
	cr_assert(count_parked(o->word) == 1);
	o->unlock_fair(o->lk);
	bool handed = !o->trylock(o->lk);
	if (!handed)
		o->unlock(o->lk);
	tu_let_go_of_handler();
	/* B has the lock if it was handed; else A, back from the handler,
	 * takes it first. */
	tu_keeper_finish(handed ? &b : &a);
	tu_keeper_finish(handed ? &a : &b);
	return handed;
}

#define TU_CHILD_RETURNED 3 /* exit status of a child whose fn returned */

/*
 * Run fn(arg) in a forked child with stderr on a pipe, core dumps off,
 * SIGABRT at its default and a watchdog of watchdog_s seconds; a child
 * whose fn returns exits with TU_CHILD_RETURNED.  Returns the child's
 * wait status (asserting that it ended in time) and leaves what it wrote
 * on stderr in buf, NUL-terminated (at most size - 1 bytes).
 */
static inline int
tu_run_child(
    void (*fn)(void *), void *arg, unsigned watchdog_s, char *buf, size_t size)
{
	int fds[2];
	cr_assert(pipe(fds) == 0);
	fflush(NULL);
	pid_t pid = fork();
	cr_assert(pid >= 0);
	if (pid == 0) {
		struct rlimit nocore = { 0, 0 };
		setrlimit(RLIMIT_CORE, &nocore);
		tu_child_watchdog(watchdog_s);
		signal(SIGABRT, SIG_DFL);
		close(fds[0]);
		if (dup2(fds[1], STDERR_FILENO) < 0)
			_exit(2);
		close(fds[1]);
		fn(arg);
		_exit(TU_CHILD_RETURNED);
	}
	close(fds[1]);
	size_t len = 0;
	int64_t end = tu_now_ns() + (int64_t)(watchdog_s + 10) * TU_SEC;
	while (len < size - 1) {
		ssize_t n = read(fds[0], buf + len, size - 1 - len);
		if (n > 0)
			len += (size_t)n;
		else if (n == 0 || errno != EINTR || tu_now_ns() > end)
			break;
	}
	buf[len] = '\0';
	close(fds[0]);
	int status = 0;
	cr_assert(tu_waitpid_bounded(
	              pid, &status, (int64_t)(watchdog_s + 10) * TU_SEC),
	    "the child hung");
	return status;
}

/* fn(arg) must die of SIGABRT after writing exactly expect (one line) on
 * stderr. */
static inline void
tu_expect_abort(void (*fn)(void *), void *arg, const char *expect)
{
	char buf[512];
	int status = tu_run_child(fn, arg, 10, buf, sizeof buf);
	cr_assert(
	    !(WIFEXITED(status) && WEXITSTATUS(status) == TU_CHILD_RETURNED),
	    "the call returned instead of aborting (expected \"%s\")", expect);
	cr_assert(WIFSIGNALED(status) && WTERMSIG(status) == SIGABRT,
	    "child status %#x: expected death by SIGABRT; stderr \"%s\"",
	    status, buf);
	cr_assert(strcmp(buf, expect) == 0,
	    "stderr was \"%s\", expected \"%s\"", buf, expect);
}

/* tu_expect_abort, with the expected line formatted by printf from fmt. */
__attribute__((format(printf, 3, 4))) static inline void
tu_expect_abortf(void (*fn)(void *), void *arg, const char *fmt, ...)
{
	char expect[256];
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(expect, sizeof expect, fmt, ap);
	va_end(ap);
	tu_expect_abort(fn, arg, expect);
}

/* ------------------------------------------------------------------ */
/*
 * The suites measure latencies and deadlines, which tests running in
 * parallel on a 2-core machine would disturb; so run one test at a time
 * unless the command line (-j/--jobs) or CRITERION_JOBS says otherwise.
 */
#ifdef PL_TSAN_CRITERION_H
/* tests/tsan/runner.c has its own main and runs one test at a time. */
#define TU_CRITERION_MAIN_SERIAL()
#else
#define TU_CRITERION_MAIN_SERIAL()                                             \
	int main(int argc, char *argv[])                                       \
	{                                                                      \
		struct criterion_test_set *tests = criterion_initialize();     \
		int result = 0;                                                \
		if (getenv("CRITERION_JOBS") == NULL)                          \
			criterion_options.jobs = 1;                            \
		if (criterion_handle_args(argc, argv, true))                   \
			result = !criterion_run_all_tests(tests);              \
		criterion_finalize(tests);                                     \
		return result;                                                 \
	}
#endif

/* Two tests of one body: name0 runs fn(false, ...), name1 fn(true, ...),
 * each with a timeout of timeout_s seconds. */
#define TU_TEST_PAIR(suite, name0, name1, timeout_s, fn, ...)                  \
	Test(suite, name0, .timeout = timeout_s)                               \
	{                                                                      \
		fn(false, ##__VA_ARGS__);                                      \
	}                                                                      \
	Test(suite, name1, .timeout = timeout_s)                               \
	{                                                                      \
		fn(true, ##__VA_ARGS__);                                       \
	}

#endif /* PL_TESTUTIL_H */
