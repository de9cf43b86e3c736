/* SPDX-License-Identifier: MIT */
/*
 * Tests of pl_once_t: one run under a 16-thread race with every other
 * thread verifiably parked, visibility of the function's writes, no second
 * run, nested onces, the recursive-call abort, the initial states, a run
 * that is cancelled or exits, and fork during a run (each of the last
 * also against glibc's pthread_once, whose outcome must be the same).
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
	int calls;             /* atomic: how many times fn ran */
	bool others_parked;    /* fn saw the 15 others parked */
	size_t parked_seen;    /* how many it saw last */
	long payload[PAYLOAD]; /* plain: written by fn only */
	bool fn_done;          /* plain: fn's last write */
	bool saw_result[RACERS];
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

/* Racer idx (the racers are a tu_group that starts together). */
static void
racer_main(void *shared, int idx)
{
	struct race *r = shared;
	pl_once(&r->once, race_fn, r);
	/* fn completed and its writes are visible (plain reads: TSan checks
	 * the ordering too). */
	bool ok =
	    r->fn_done && __atomic_load_n(&r->calls, __ATOMIC_RELAXED) == 1;
	for (int i = 0; i < PAYLOAD; i++)
		ok = ok && r->payload[i] == 1000 + i;
	r->saw_result[idx] = ok;
}

Test(once, sixteen_threads_one_call, .timeout = 30)
{
	static struct race r;
	static struct tu_group g;
	for (int round = 0; round < 3; round++) {
		memset(&r, 0, sizeof(r));
		tu_group_start_together(&g, racer_main, &r, RACERS);
		tu_group_join(&g);
		cr_assert(
		    r.calls == 1, "round %d: fn ran %d times", round, r.calls);
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
	cr_assert(
	    first == 1 && second == 0, "a call after done ran its function");
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
	int calls[MANY];  /* atomic */
	long value[MANY]; /* plain: written by the once's function */
	long bad;         /* atomic */
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

/* Thread idx of a tu_group that starts together. */
static void
many_main(void *shared, int idx)
{
	struct many *m = shared;
	for (int k = 0; k < MANY; k++) {
		/* Each thread walks the onces in its own order. */
		int i = (idx % 2) ? MANY - 1 - k : (k * 37 + idx) % MANY;
		struct many_call c = { m, i };
		pl_once(&m->once[i], many_fn, &c);
		if (m->value[i] != 7L * i + 1)
			__atomic_fetch_add(&m->bad, 1, __ATOMIC_RELAXED);
	}
}

Test(once, many_onces_many_threads, .timeout = 30)
{
	static struct many m;
	static struct tu_group g;
	memset(&m, 0, sizeof(m));
	tu_group_start_together(&g, many_main, &m, MANY_THREADS);
	tu_group_join(&g);
	cr_assert(
	    m.bad == 0, "%ld calls returned before the value was set", m.bad);
	for (int i = 0; i < MANY; i++) {
		cr_assert(
		    m.calls[i] == 1, "once %d ran %d times", i, m.calls[i]);
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

/* ------------------------------------------------------------------ */
/* 5. a run that does not return: cancellation and pthread_exit       */
/*
 * Each scenario runs against pl_once and against glibc's pthread_once,
 * and both must give the same outcome.  The function is a plain
 * void (*)(void) on globals so that pthread_once can call it too.  Not
 * the glibc runs under ThreadSanitizer: it replaces pthread_once with an
 * interceptor of its own, which handles neither cancellation nor fork
 * (its callers wait forever).
 */

#include <sys/syscall.h>

/* Which implementation a scenario uses. */
static bool use_glibc;
static pl_once_t pl_o;
static pthread_once_t pt_o;

/* pl_once passes an argument, which a void (*)(void) would ignore; call
 * through a wrapper instead of relying on that. */
struct fn_box {
	void (*fn)(void);
};

static void
pl_trampoline(void *arg)
{
	((struct fn_box *)arg)->fn();
}

static void
call_once(void (*fn)(void))
{
	if (use_glibc) {
		pthread_once(&pt_o, fn);
	} else {
		struct fn_box box = { fn };
		pl_once(&pl_o, pl_trampoline, &box);
	}
}

static void
reset_onces(bool glibc)
{
	use_glibc = glibc;
	memset(&pl_o, 0, sizeof pl_o);
	pthread_once_t fresh = PTHREAD_ONCE_INIT;
	pt_o = fresh;
}

/* Whether thread tid is blocked in futex(2) (/proc/self/task/TID/syscall
 * names the system call it is in); true if that cannot be read, so that
 * the scenario still runs (the outcome checks do not depend on it). */
static bool
in_futex(pid_t tid)
{
	char path[64], buf[64];
	snprintf(path, sizeof path, "/proc/self/task/%d/syscall", (int)tid);
	FILE *f = fopen(path, "r");
	if (f == NULL)
		return true;
	bool ok = fgets(buf, sizeof buf, f) != NULL;
	fclose(f);
	return !ok || atol(buf) == SYS_futex;
}

enum { AB_WAITERS = 2, AB_VALUE = 42 };
enum ab_how { BY_CANCEL, BY_EXIT };

static struct {
	enum ab_how how;
	int calls;             /* atomic: runs of ab_fn */
	int in_fn;             /* atomic: the first run has started */
	int ready;             /* atomic: 1 waiters blocked, 2 they did not */
	pid_t tid[AB_WAITERS]; /* atomic: the waiters' thread ids */
	int waiters_done;      /* atomic */
	int value;             /* plain: written by the run that returns */
	bool saw[AB_WAITERS];
} ab;

/* The waiters are blocked in the once (parked on the pl_once byte, or in
 * futex(2) inside pthread_once after they announced themselves). */
static bool
ab_waiters_blocked(void *ctx)
{
	(void)ctx;
	if (!use_glibc)
		return count_parked(&pl_o) == AB_WAITERS;
	for (int i = 0; i < AB_WAITERS; i++) {
		pid_t t = __atomic_load_n(&ab.tid[i], __ATOMIC_ACQUIRE);
		if (t == 0 || !in_futex(t))
			return false;
	}
	return true;
}

/*
 * Not instrumented by ASan, and the cancellation point is not a blocking
 * call: the unwinding of a cancellation leaves ASan's poisoning of the
 * frames it skips in place (google/sanitizers#1399), and the calls of the
 * cleanup handler, which reuse that stack, would be reported.  No frame
 * below the once's is left with addressable locals this way.
 */
__attribute__((no_sanitize_address)) static void
ab_fn(void)
{
	if (__atomic_fetch_add(&ab.calls, 1, __ATOMIC_RELAXED) != 0) {
		ab.value = AB_VALUE; /* the second run returns */
		return;
	}
	__atomic_store_n(&ab.in_fn, 1, __ATOMIC_RELEASE);
	bool blocked = tu_wait_until(ab_waiters_blocked, NULL, TU_WAIT_NS);
	__atomic_store_n(&ab.ready, blocked ? 1 : 2, __ATOMIC_RELEASE);
	if (ab.how == BY_EXIT)
		pthread_exit(&ab);
	/* Wait, at a cancellation point, for the deferred cancel, which the
	 * main thread sends now; returning is the failure the test reports.
	 * (pthread_testcancel rather than nanosleep, see ab_fn.) */
	int64_t end = tu_now_ns() + TU_WAIT_NS;
	while (tu_now_ns() < end) {
		pthread_testcancel();
		sched_yield();
	}
}

static void *
ab_runner(void *arg)
{
	(void)arg;
	call_once(ab_fn);
	return NULL; /* fn returned: neither cancelled nor exited */
}

/* Waiter i of a tu_group. */
static void
ab_waiter(void *shared, int i)
{
	(void)shared;
	tu_store_tid(&ab.tid[i]);
	call_once(ab_fn);
	ab.saw[i] = ab.value == AB_VALUE; /* plain: ordered by the once */
	__atomic_fetch_add(&ab.waiters_done, 1, __ATOMIC_RELEASE);
}

/*
 * The first run of fn leaves without returning (cancelled at a
 * cancellation point, or pthread_exit) while two waiters are blocked in
 * the once.  The once must become new again: one waiter runs fn, the
 * other sees that run done, and fn's second run is visible to both.
 */
static void
abandoned_run(bool glibc, enum ab_how how)
{
	const char *impl = glibc ? "pthread_once" : "pl_once";
	reset_onces(glibc);
	memset(&ab, 0, sizeof ab);
	ab.how = how;

	pthread_t r = tu_spawn(ab_runner, NULL);
	cr_assert(tu_wait_int_eq(&ab.in_fn, 1, TU_WAIT_NS));
	struct tu_group w;
	tu_group_start(&w, ab_waiter, NULL, AB_WAITERS);
	cr_assert(tu_wait_int_eq(&ab.ready, 1, TU_WAIT_NS) ||
	        __atomic_load_n(&ab.ready, __ATOMIC_ACQUIRE) == 1,
	    "%s: the waiters did not block while fn ran", impl);
	if (how == BY_CANCEL)
		cr_assert(pthread_cancel(r) == 0);
	void *ret = tu_join(r);
	cr_assert(ret == (how == BY_CANCEL ? PTHREAD_CANCELED : (void *)&ab),
	    "%s: the runner's fn was not %s", impl,
	    how == BY_CANCEL ? "cancelled" : "left by pthread_exit");
	cr_assert(tu_wait_int_eq(&ab.waiters_done, AB_WAITERS, TU_WAIT_NS),
	    "%s: %d of %d waiters still blocked after fn %s", impl,
	    AB_WAITERS - __atomic_load_n(&ab.waiters_done, __ATOMIC_ACQUIRE),
	    AB_WAITERS,
	    how == BY_CANCEL ? "was cancelled" : "called pthread_exit");
	tu_group_join(&w);
	cr_assert(
	    ab.calls == 2, "%s: fn ran %d times, expected 2", impl, ab.calls);
	for (int i = 0; i < AB_WAITERS; i++)
		cr_assert(ab.saw[i],
		    "%s: waiter %d returned before the second run of fn or "
		    "without its write",
		    impl, i);
	call_once(ab_fn);
	cr_assert(ab.calls == 2, "%s: a call after done ran fn", impl);
	if (!glibc) {
		cr_assert(state_of(&pl_o) == PL_ONCE_DONE, "state %#x",
		    state_of(&pl_o));
		cr_assert(count_parked(&pl_o) == 0);
	}
}

/*
 * A scenario run(glibc, ...) as two tests: name against pl_once and
 * name_glibc against glibc's pthread_once, the latter not under TSan,
 * which has a pthread_once of its own.
 */
#ifdef __SANITIZE_THREAD__
#define ONCE_AND_GLIBC(name, timeout_s, run, ...)                              \
	Test(once, name, .timeout = timeout_s)                                 \
	{                                                                      \
		run(false, ##__VA_ARGS__);                                     \
	}
#else
#define ONCE_AND_GLIBC(name, timeout_s, run, ...)                              \
	TU_TEST_PAIR(once, name, name##_glibc, timeout_s, run, ##__VA_ARGS__)
#endif

ONCE_AND_GLIBC(cancelled_fn_runs_again, 30, abandoned_run, BY_CANCEL)
ONCE_AND_GLIBC(exited_fn_runs_again, 30, abandoned_run, BY_EXIT)

/* ------------------------------------------------------------------ */
/* 6. fork                                                             */

/* In a child, at the end: fn has run n times in all (*calls, atomic), a
 * call now does not run it again, and pl_o is done.  0 if so, else the
 * exit status for the check that failed: base, base + 1 or base + 2. */
static int
child_once_done(int *calls, int n, void (*fn)(void), int base)
{
	if (__atomic_load_n(calls, __ATOMIC_RELAXED) != n)
		return base;
	call_once(fn);
	if (*calls != n)
		return base + 1;
	if (!use_glibc && state_of(&pl_o) != PL_ONCE_DONE)
		return base + 2;
	return 0;
}

enum { FK_CHILD_THREADS = 4 };

static struct {
	int calls;   /* atomic: runs of fk_fn */
	int in_fn;   /* atomic: the parent's run has started */
	int release; /* atomic: the parent's run may return */
	int value;   /* plain: 1 by the parent's run, 2 by the child's */
	struct tu_barrier start;
	int bad; /* atomic: child threads that saw no value */
} fk;

static void
fk_fn(void)
{
	if (__atomic_fetch_add(&fk.calls, 1, __ATOMIC_RELAXED) != 0) {
		fk.value = 2; /* in the child: the run after the fork */
		return;
	}
	__atomic_store_n(&fk.in_fn, 1, __ATOMIC_RELEASE);
	tu_wait_int_eq(&fk.release, 1, TU_WAIT_NS);
	fk.value = 1;
}

static void *
fk_runner(void *arg)
{
	(void)arg;
	call_once(fk_fn);
	return NULL;
}

#ifndef __SANITIZE_THREAD__ /* only started where TSan is not in use */
static void *
fk_child_racer(void *arg)
{
	(void)arg;
	tu_barrier_wait(&fk.start);
	call_once(fk_fn);
	if (fk.value != 2)
		__atomic_fetch_add(&fk.bad, 1, __ATOMIC_RELAXED);
	return NULL;
}
#endif

/* In the child forked while another thread ran fk_fn: the once must run
 * again, once.  Returns the child's exit status (0: all good). */
static int
fk_child(void)
{
	tu_child_watchdog(10);
	/* A thread of the parent was inside fn at the fork and does not
	 * exist here; the child's calls must not wait for it. */
#ifdef __SANITIZE_THREAD__
	/* ThreadSanitizer cannot start threads in the child of a process
	 * that had several: the child calls from its one thread. */
	call_once(fk_fn);
	if (fk.value != 2)
		return 10;
#else
	pthread_t t[FK_CHILD_THREADS];
	tu_barrier_init(&fk.start, FK_CHILD_THREADS);
	for (int i = 0; i < FK_CHILD_THREADS; i++)
		if (tu_spawn_raw(&t[i], fk_child_racer, NULL) != 0)
			return 11;
	for (int i = 0; i < FK_CHILD_THREADS; i++)
		pthread_join(t[i], NULL);
	if (fk.bad != 0)
		return 12;
#endif
	/* 1 run from the parent's, 1 from the child's. */
	return child_once_done(&fk.calls, 2, fk_fn, 13);
}

static void
assert_child_ok(pid_t pid, const char *impl)
{
	int status = 0;
	cr_assert(tu_waitpid_bounded(pid, &status, 30 * TU_SEC),
	    "%s: the child hung (killed after 30 s)", impl);
	cr_assert(!WIFSIGNALED(status), "%s: the child died of signal %d%s",
	    impl, WIFSIGNALED(status) ? WTERMSIG(status) : 0,
	    WIFSIGNALED(status) && WTERMSIG(status) == SIGALRM
	        ? " (watchdog: it hung in the once)"
	        : "");
	cr_assert(WIFEXITED(status) && WEXITSTATUS(status) == 0,
	    "%s: the child failed check %d", impl, WEXITSTATUS(status));
}

/* fork while another thread is inside fn: the child runs fn itself. */
static void
fork_while_running(bool glibc)
{
	const char *impl = glibc ? "pthread_once" : "pl_once";
	reset_onces(glibc);
	memset(&fk, 0, sizeof fk);
	pthread_t r = tu_spawn(fk_runner, NULL);
	cr_assert(tu_wait_int_eq(&fk.in_fn, 1, TU_WAIT_NS));
	fflush(NULL);
	pid_t pid = fork();
	cr_assert(pid >= 0, "fork: %s", strerror(errno));
	if (pid == 0)
		_exit(fk_child());
	assert_child_ok(pid, impl);
	/* The parent's run is unaffected. */
	__atomic_store_n(&fk.release, 1, __ATOMIC_RELEASE);
	tu_join(r);
	cr_assert(fk.calls == 1 && fk.value == 1, "%s: calls %d value %d", impl,
	    fk.calls, fk.value);
	if (!glibc)
		cr_assert(state_of(&pl_o) == PL_ONCE_DONE);
}

ONCE_AND_GLIBC(fork_while_other_thread_runs_fn, 60, fork_while_running)

static struct {
	pid_t parent;
	pid_t child;    /* in the parent: the child fi_fn forked */
	int calls;      /* atomic: runs of fi_fn */
	pthread_t late; /* in the child: a thread that calls the once */
	bool late_started;
	int late_parked; /* 1 parked in time, 2 not */
} fi;

static void fi_fn(void);

#ifndef __SANITIZE_THREAD__ /* only started where TSan is not in use */
static void *
fi_late(void *arg)
{
	(void)arg;
	call_once(fi_fn);
	return NULL;
}
#endif

/* fn forks.  The child goes on inside fn and returns: the once completes
 * in both processes, each with the one run.  pl_once only: a thread that
 * the child starts meanwhile waits for that run.  (glibc's pthread_once
 * would let it run fn a second time, concurrently.) */
static void
fi_fn(void)
{
	if (__atomic_fetch_add(&fi.calls, 1, __ATOMIC_RELAXED) != 0)
		return; /* a second run: the checks count it */
	fflush(NULL);
	pid_t pid = fork();
	if (pid != 0) {
		fi.child = pid;
		return;
	}
	tu_child_watchdog(20); /* longer than the wait for the late thread */
#ifndef __SANITIZE_THREAD__
	if (!use_glibc) {
		fi.late_started = tu_spawn_raw(&fi.late, fi_late, NULL) == 0;
		bool parked =
		    fi.late_started && wait_parked(&pl_o, 1, TU_WAIT_NS);
		fi.late_parked = parked ? 1 : 2;
	}
#endif
}

/* In the child, after the once returned there.  0: all good. */
static int
fi_child(void)
{
	if (fi.late_started) {
		pthread_join(fi.late, NULL);
		if (fi.late_parked != 1)
			return 20;
	}
	return child_once_done(&fi.calls, 1, fi_fn, 21);
}

static void
fork_inside_fn(bool glibc)
{
	const char *impl = glibc ? "pthread_once" : "pl_once";
	reset_onces(glibc);
	memset(&fi, 0, sizeof fi);
	fi.parent = getpid();
	call_once(fi_fn);
	if (getpid() != fi.parent)
		_exit(fi_child());
	cr_assert(fi.child > 0, "%s: fork in fn failed", impl);
	assert_child_ok(fi.child, impl);
	cr_assert(fi.calls == 1, "%s: fn ran %d times", impl, fi.calls);
	if (!glibc)
		cr_assert(state_of(&pl_o) == PL_ONCE_DONE);
}

ONCE_AND_GLIBC(fork_inside_fn, 60, fork_inside_fn)
