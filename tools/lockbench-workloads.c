/* SPDX-License-Identifier: MIT */
/*
 * lockbench's workloads, W1..W8 (see tools/lockbench.c): the locks they
 * compare, the data the threads share, the thread bodies, each workload's
 * set-up, drive and correctness check around run_go() and run_end(), which
 * are here too (tools/lockbench-cxx.cc calls them as well), and work[],
 * the description of each workload, the C++ ones included, that the
 * runner of tools/lockbench.c reads.  The bodies are always_inline with
 * the lock kind a parameter, and KIND_FNS makes one thread function per
 * kind of each, so that every lock runs its own tight loop; the runner
 * picks the function, before the threads start, from a workload's step.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <pthread.h>
#include <sched.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <spawn.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <parkinglot.h>

#include "lockbench.h"

#define ALWAYS_INLINE inline __attribute__((always_inline))

#define STACK_SIZE (256 * 1024) /* W3 starts 300 threads */
#define YIELD_WORK 1000         /* xorshift steps per W4 work unit */
#define W3_THREADS 300
#define W3_SLEEP_NS 1000000L
#define W5B_WAITERS 64
#define W5B_ROUNDS 20
#define W7_LOCKS 100000
#define W7_THREADS 4
#define W8_LOCKS 16 /* W8x16 */
/* Those the titles print, as strings. */
#define S_W3_THREADS STR(W3_THREADS)
#define S_YIELD_WORK STR(YIELD_WORK)
#define S_W5_CAP STR(W5_CAP)
#define S_W5B_WAITERS STR(W5B_WAITERS)
#define S_W5B_ROUNDS STR(W5B_ROUNDS)
#define S_W7_THREADS STR(W7_THREADS)
#define S_W7_LOCKS STR(W7_LOCKS)
#define S_W8_LOCKS STR(W8_LOCKS)

#if defined(__x86_64__) || defined(__i386__)
#define cpu_relax() __builtin_ia32_pause()
#elif defined(__aarch64__) || defined(__arm__)
#define cpu_relax() __asm__ __volatile__("yield" ::: "memory")
#else
#define cpu_relax() __asm__ __volatile__("" ::: "memory")
#endif

/* ------------------------------------------------------------------ */
/* Locks: the kind k is a constant in every thread body, so that the
 * tests below fold away and every lock runs its own tight loop. */

const char *lk_name[NLK] = { "pl_mutex", "pthread_mutex", "pthread_adaptive",
	"spinlock" };
const char *const lk_opt[NLK] = { "pl", "pthread", "adaptive", "spin" };
const char *cv_name[2] = { "pl_cond+pl_mutex", "pthread_cond+mutex" };
const char *rw_name[2] = { "pl_rwlock", "pthread_rwlock" };
const char *ad_name[2] = { "pl_mutex", "pl_mutex_fixed" };
const char *cxx_mutex_name[2] = { "pl::mutex", "std::mutex" };
const char *cxx_cv_name[2] = { "pl::condition_variable",
	"std::condition_variable" };
const char *cxx_rw_name[2] = { "pl::shared_mutex", "std::shared_mutex" };
pthread_mutexattr_t adaptive_attr;

/* W5's mutex is an anylock of kind 0 or 1. */
typedef union {
	pl_mutex_t pl;
	pthread_mutex_t pt;
	int spin;
} anylock;
typedef union {
	pl_cond_t pl;
	pthread_cond_t pt;
} ccond;

/* The spinlock: exchange, and while that fails, spin on loads with pause
 * until the lock looks free (test-and-test-and-set). */
static ALWAYS_INLINE void
lk_lock(int k, void *p)
{
	if (k == LK_PL)
		pl_mutex_lock(p);
	else if (k != LK_SPIN)
		pthread_mutex_lock(p);
	else
		while (__atomic_exchange_n((int *)p, 1, __ATOMIC_ACQUIRE))
			while (__atomic_load_n((int *)p, __ATOMIC_RELAXED))
				cpu_relax();
}

static ALWAYS_INLINE void
lk_unlock(int k, void *p)
{
	if (k == LK_PL)
		pl_mutex_unlock(p);
	else if (k == LK_SPIN)
		__atomic_store_n((int *)p, 0, __ATOMIC_RELEASE);
	else
		pthread_mutex_unlock(p);
}

static ALWAYS_INLINE size_t
lk_size(int k)
{
	return k == LK_PL  ? sizeof(pl_mutex_t)
	    : k == LK_SPIN ? sizeof(int)
	                   : sizeof(pthread_mutex_t);
}

/* Set up (up) or tear down a lock. */
static void
lk_setup(int k, void *p, bool up)
{
	if (k == LK_PT || k == LK_AD)
		up ? pthread_mutex_init(p, k == LK_AD ? &adaptive_attr : NULL)
		   : pthread_mutex_destroy(p);
	else if (up && k == LK_PL)
		pl_mutex_init(p);
	else if (up)
		*(int *)p = 0;
}

static ALWAYS_INLINE void
cc_wait(int k, ccond *c, anylock *m)
{
	if (k == 0)
		pl_cond_wait(&c->pl, &m->pl);
	else
		pthread_cond_wait(&c->pt, &m->pt);
}

/* Signal, or with all broadcast. */
static ALWAYS_INLINE void
cc_wake(int k, ccond *c, bool all)
{
	if (k == 0 && all)
		pl_cond_broadcast(&c->pl);
	else if (k == 0)
		pl_cond_signal(&c->pl);
	else
		(all ? pthread_cond_broadcast : pthread_cond_signal)(&c->pt);
}

/* ------------------------------------------------------------------ */
/* Shared state of the workloads, each lock with the data it guards on its
 * own cache line, away from the stop flag that every thread reads. */

struct stop_line flag;

static struct {
	_Alignas(64) anylock lk;
	unsigned long counter;
} one; /* W1..W4 */

static struct {
	_Alignas(64) anylock m;
	ccond c[2]; /* W5a: not full, not empty; W5b: c[0] */
	unsigned head, tail, count;
	uint64_t buf[W5_CAP];
	int gen, waiting, done;    /* W5b */
	pthread_barrier_t release; /* the W5b waiters exit after it */
} cv;

static struct {
	_Alignas(64) union {
		pl_rwlock_t pl;
		pthread_rwlock_t pt;
	} l;
	unsigned long a, b;
} rw; /* W6 */

static struct {
	char *locks;
	uint32_t *counts;
} many; /* W7 */

/* W8: W8 takes lock 0, W8x16 lock i mod 16 in thread i, each lock with
 * its counter on a line of its own. */
static struct {
	_Alignas(64) anylock lk;
	unsigned long counter;
} w8[W8_LOCKS];
static int w8_nlocks;
/* tests/lockbench.sh: thread 0 takes its first lock only after the stop */
static bool w8_late;

/* ------------------------------------------------------------------ */
/* Small helpers. */

double tv[2];            /* the figures in W3's and W4's titles */
static double sleep_1ms; /* W3: a 1 ms sleep, measured */
static pthread_barrier_t start_barrier;

/* ------------------------------------------------------------------ */
/* Threads: their start and end, and their functions per lock kind. */

/* In each thread: wait for the others, then start the CPU clock. */
double
thr_begin(struct thr *t)
{
	t->os_tid = (pid_t)syscall(SYS_gettid);
	pthread_barrier_wait(&start_barrier);
	return clock_s(CLOCK_THREAD_CPUTIME_ID);
}

/* In each thread at its end: its figures, and the CPU clock stopped. */
void *
thr_done(struct thr *t, unsigned long ops, uint64_t sink, double cpu0)
{
	t->ops = ops;
	t->sink = sink;
	t->cpu_s = clock_s(CLOCK_THREAD_CPUTIME_ID) - cpu0;
	return NULL;
}

/* One thread function per lock kind, each with the kind a constant. */
/* clang-format off */
#define KIND_FNS(body)                                                     \
	static void *body##_pl(void *a) { return body(a, LK_PL); }         \
	static void *body##_pt(void *a) { return body(a, LK_PT); }         \
	static void *body##_ad(void *a) { return body(a, LK_AD); }         \
	static void *body##_sp(void *a) { return body(a, LK_SPIN); }       \
	static void *(*const body##_fn[NLK])(void *) = { body##_pl,        \
		body##_pt, body##_ad, body##_sp }
/* clang-format on */

/* ------------------------------------------------------------------ */
/* The thread bodies. */

/* W1: the thread times itself; t_end is its elapsed time. */
static ALWAYS_INLINE void *
w1_body(struct thr *t, const int k)
{
	void *l = &one.lk;
	unsigned long n = 0;
	double cpu0 = thr_begin(t), t0 = now(), el;

	do {
		for (int i = 0; i < 4096; i++) {
			lk_lock(k, l);
			one.counter++;
			lk_unlock(k, l);
		}
		n += 4096;
		el = now() - t0;
	} while (el < secs);
	t->t_end = el;
	return thr_done(t, n, 0, cpu0);
}
KIND_FNS(w1_body);

/* W2, and the lock side of W4. */
static ALWAYS_INLINE void *
w2_body(struct thr *t, const int k)
{
	void *l = &one.lk;
	uint64_t x = seed(t->idx);
	unsigned long n = 0;
	double cpu0 = thr_begin(t);

	while (!stopping()) {
		x = private_work(x);
		lk_lock(k, l);
		one.counter++;
		lk_unlock(k, l);
		n++;
	}
	return thr_done(t, n, x, cpu0);
}
KIND_FNS(w2_body);

static ALWAYS_INLINE void *
w3_body(struct thr *t, const int k)
{
	void *l = &one.lk;
	double cpu0 = thr_begin(t);

	lk_lock(k, l);
	one.counter++;
	sleep_ns(W3_SLEEP_NS);
	lk_unlock(k, l);
	t->t_end = now();
	return thr_done(t, 1, 0, cpu0);
}
KIND_FNS(w3_body);

/* W4: role 1 does units of work and yields, role 0 runs the W2 loop. */
static ALWAYS_INLINE void *
w4_body(struct thr *t, const int k)
{
	uint64_t x = seed(t->idx + 100);
	unsigned long n = 0;

	if (t->role == 0)
		return w2_body(t, k);
	double cpu0 = thr_begin(t);
	while (!stopping()) {
		x = busy_work(x, YIELD_WORK);
		sched_yield();
		n++;
	}
	return thr_done(t, n, x, cpu0);
}
KIND_FNS(w4_body);

/* W5a: role 0 produces, role 1 consumes; sink is the sum of the items. */
static ALWAYS_INLINE void *
w5a_body(struct thr *t, const int k)
{
	uint64_t v = ((uint64_t)t->idx << 40) + 1, sum = 0;
	unsigned long n = 0;
	double cpu0 = thr_begin(t);

	for (;;) {
		lk_lock(k, &cv.m);
		if (t->role == 0) { /* producer */
			while (cv.count == W5_CAP && !stopping())
				cc_wait(k, &cv.c[0], &cv.m);
			if (stopping()) {
				lk_unlock(k, &cv.m);
				break;
			}
			cv.buf[cv.tail] = v;
			cv.tail = (cv.tail + 1) % W5_CAP;
			cv.count++;
			cc_wake(k, &cv.c[1], false);
			lk_unlock(k, &cv.m);
			sum += v++;
		} else { /* consumer */
			while (cv.count == 0 && !stopping())
				cc_wait(k, &cv.c[1], &cv.m);
			if (stopping()) {
				lk_unlock(k, &cv.m);
				break;
			}
			uint64_t got = cv.buf[cv.head];
			cv.head = (cv.head + 1) % W5_CAP;
			cv.count--;
			cc_wake(k, &cv.c[0], false);
			lk_unlock(k, &cv.m);
			sum += got;
		}
		n++;
	}
	return thr_done(t, n, sum, cpu0);
}
KIND_FNS(w5a_body);

static ALWAYS_INLINE void *
w5b_body(struct thr *t, const int k)
{
	struct rusage r0, r1;
	double cpu0 = thr_begin(t);

	lk_lock(k, &cv.m);
	cv.waiting++;
	getrusage(RUSAGE_THREAD, &r0);
	while (cv.gen == 0)
		cc_wait(k, &cv.c[0], &cv.m);
	cv.done++;
	lk_unlock(k, &cv.m);
	t->t_end = now();
	getrusage(RUSAGE_THREAD, &r1);
	t->vcsw = r1.ru_nvcsw - r0.ru_nvcsw;
	t->csw = t->vcsw + (r1.ru_nivcsw - r0.ru_nivcsw);
	thr_done(t, 0, 0, cpu0);
	/* Exit only once all have the mutex back: 63 thread exits (stack
	 * unmapping, TLB shootdowns) would otherwise run on the CPUs the
	 * later waiters need, and W5b would time thread teardown. */
	pthread_barrier_wait(&cv.release);
	return NULL;
}
KIND_FNS(w5b_body);

/* W6: role 0 reads, role 1 writes. */
static ALWAYS_INLINE void *
w6_body(struct thr *t, const int k)
{
	uint64_t x = seed(t->idx);
	unsigned long n = 0, bad = 0;
	double cpu0 = thr_begin(t);

	while (!stopping()) {
		x = private_work(x);
		if (t->role) {
			if (k == 0)
				pl_rwlock_wrlock(&rw.l.pl);
			else
				pthread_rwlock_wrlock(&rw.l.pt);
			rw.a++;
			rw.b++;
			if (k == 0)
				pl_rwlock_wrunlock(&rw.l.pl);
			else
				pthread_rwlock_unlock(&rw.l.pt);
		} else {
			if (k == 0)
				pl_rwlock_rdlock(&rw.l.pl);
			else
				pthread_rwlock_rdlock(&rw.l.pt);
			bad += rw.a != rw.b;
			if (k == 0)
				pl_rwlock_rdunlock(&rw.l.pl);
			else
				pthread_rwlock_unlock(&rw.l.pt);
		}
		n++;
	}
	t->bad = bad;
	return thr_done(t, n, x, cpu0);
}
KIND_FNS(w6_body);

static ALWAYS_INLINE void *
w7_body(struct thr *t, const int k)
{
	char *base = many.locks;
	uint32_t *cnt = many.counts;
	uint64_t x = seed(t->idx);
	unsigned long n = 0;
	double cpu0 = thr_begin(t);

	while (!stopping()) {
		x = xorshift(x);
		size_t i = (size_t)(((x >> 32) * (uint64_t)W7_LOCKS) >> 32);
		void *l = base + i * lk_size(k);
		lk_lock(k, l);
		cnt[i]++;
		lk_unlock(k, l);
		n++;
	}
	return thr_done(t, n, x, cpu0);
}
KIND_FNS(w7_body);

/* W8: the W2 loop, and after each unlock the time since the previous one
 * (or since the start): the longest is the longest this thread waited
 * for the lock, give or take its private work (1..64 steps, well under a
 * microsecond) and its critical section; and since the time it spent
 * runnable without a CPU counts too, it is what a caller of this thread
 * would have waited.  The clock is read outside the lock.  Only the run
 * counts, not the drain after the stop: the last gap ends at the stop
 * (flag.stop_at), so that a thread that never got the lock reports the
 * whole run and one that got it late only its wait until the stop; and a
 * thread is starved if it did not unlock before the stop (in_run), since
 * a thread stuck in the queue all run gets the lock in the drain. */
static ALWAYS_INLINE void *
w8_body(struct thr *t, const int k)
{
	void *l = &w8[t->idx % w8_nlocks].lk;
	unsigned long *counter = &w8[t->idx % w8_nlocks].counter;
	uint64_t x = seed(t->idx);
	unsigned long n = 0, in_run = 0;
	double cpu0 = thr_begin(t), last = now(), gap, max = 0;

	if (w8_late && t->idx == 0) {
		while (!stopping())
			sched_yield();
		lk_lock(k, l);
		++*counter;
		lk_unlock(k, l);
		n++;
	}
	while (!stopping()) {
		x = private_work(x);
		lk_lock(k, l);
		++*counter;
		lk_unlock(k, l);
		n++;
		double tn = now();
		if (stopping())
			break;
		in_run++;
		gap = tn - last;
		max = gap > max ? gap : max;
		last = tn;
	}
	(void)__atomic_load_n(&flag.stop, __ATOMIC_ACQUIRE); /* stop_at */
	gap = flag.stop_at - last;
	t->maxgap = gap > max ? gap : max;
	t->in_run = in_run;
	return thr_done(t, n, x, cpu0);
}
KIND_FNS(w8_body);

/* ------------------------------------------------------------------ */
/* Runs: each workload's set-up, drive and check around run_go() and
 * run_end(). */

/* Start a run's threads and, if it is timed, let them run -d seconds. */
void
run_go(struct run *r)
{
	pthread_attr_t attr;
	int err;

	__atomic_store_n(&flag.stop, 0, __ATOMIC_RELAXED);
	if ((err = pthread_barrier_init(
	         &start_barrier, NULL, (unsigned)r->n + 1)) != 0)
		die("pthread_barrier_init", err);
	pthread_attr_init(&attr);
	pthread_attr_setstacksize(&attr, STACK_SIZE);
	for (int i = 0; i < r->n; i++) {
		struct thr *t = &r->t[i];
		if (ncpus > 0)
			pin(&attr, cpus[i % ncpus]);
		t->idx = i;
		if ((err = pthread_create(&t->tid, &attr, r->fn, t)) != 0)
			die("pthread_create", err);
	}
	pthread_attr_destroy(&attr);
	pthread_barrier_wait(&start_barrier);
	r->t0 = now();
	if (r->timed)
		sleep_ns((int64_t)(secs * 1e9));
}

/* Join the threads (stopping a timed run first) and sum their figures. */
void
run_end(struct run *r)
{
	double *v = r->v;

	if (r->timed) {
		flag.stop_at = now();
		__atomic_store_n(&flag.stop, 1, __ATOMIC_RELEASE);
	}
	for (int i = 0; i < r->n; i++)
		pthread_join(r->t[i].tid, NULL);
	pthread_barrier_destroy(&start_barrier);
	v[R_EL] = now() - r->t0;
	for (int i = 0; i < r->n; i++) {
		const struct thr *t = &r->t[i];
		double ops = (double)t->ops;
		r->ops[t->role] += t->ops;
		r->sink[t->role] += t->sink;
		r->bad += t->bad;
		v[R_CPU] += t->cpu_s;
		v[R_CSW] += (double)t->csw;
		v[R_VCSW] += (double)t->vcsw;
		v[R_TEND] = t->t_end > v[R_TEND] ? t->t_end : v[R_TEND];
		v[R_LO] = i == 0 || ops < v[R_LO] ? ops : v[R_LO];
		v[R_HI] = ops > v[R_HI] ? ops : v[R_HI];
		v[R_MAXGAP] = t->maxgap > v[R_MAXGAP] ? t->maxgap : v[R_MAXGAP];
		v[R_STARVED] += t->in_run == 0;
	}
	v[R_OPS0] = (double)r->ops[0];
	v[R_OPS1] = (double)r->ops[1];
	v[R_OPS] = v[R_OPS0] + v[R_OPS1];
	v[R_MEAN] = r->n > 0 ? v[R_OPS] / r->n : 0;
	v[R_SPAN] = v[R_TEND] - r->t0;
}

/* W1..W4: one lock of any kind, and the counter it guards. */
static void
one_run(struct run *r)
{
	r->v[R_IDEAL] = W3_THREADS * sleep_1ms; /* W3's elapsed/ideal */
	lk_setup(r->k, &one.lk, true);
	one.counter = 0;
	run_go(r);
	run_end(r);
	if (one.counter != r->ops[0])
		check_failed(
		    "counter %lu != %lu increments", one.counter, r->ops[0]);
	lk_setup(r->k, &one.lk, false);
}

/*
 * W9: W2's runs, each in a process of its own (this program again, with
 * --one-run), so that the library's tuning, read once per process, can
 * differ: kind 0 with the environment as given (the adaptive yield rounds
 * on, unless PARKINGLOT_ADAPT says otherwise), kind 1 with
 * PARKINGLOT_ADAPT=0 (the fixed policy of the versions before).  The
 * child writes its run's figures, v[] in order, on one line.
 */
extern char **environ;

static char **
env_with(const char *extra)
{
	size_t n = 0, m = 0;
	while (environ[n] != NULL)
		n++;
	char **e = malloc((n + 2) * sizeof *e);
	if (e == NULL)
		die("malloc", errno);
	for (size_t i = 0; i < n; i++)
		if (strncmp(environ[i], "PARKINGLOT_ADAPT=", 17) != 0 ||
		    extra == NULL)
			e[m++] = environ[i];
	if (extra != NULL)
		e[m++] = (char *)extra;
	e[m] = NULL;
	return e;
}

static void
w9_run(struct run *r)
{
	char spec[32], dur[32], out[R_N * 32], *p = out, *end;
	char *argv[] = { "lockbench", "--one-run", spec, "-d", dur, NULL };
	char **envp = env_with(r->k == 1 ? "PARKINGLOT_ADAPT=0" : NULL);
	posix_spawn_file_actions_t fa;
	int fd[2], status, err;
	size_t len = 0;
	ssize_t got;
	pid_t pid;

	snprintf(spec, sizeof spec, "W2,%d", r->n);
	snprintf(dur, sizeof dur, "%.17g", secs);
	if (pipe(fd) != 0)
		die("pipe", errno);
	posix_spawn_file_actions_init(&fa);
	posix_spawn_file_actions_adddup2(&fa, fd[1], 1);
	posix_spawn_file_actions_addclose(&fa, fd[0]);
	posix_spawn_file_actions_addclose(&fa, fd[1]);
	fflush(NULL);
	err = posix_spawn(&pid, "/proc/self/exe", &fa, NULL, argv, envp);
	posix_spawn_file_actions_destroy(&fa);
	free(envp);
	close(fd[1]);
	if (err != 0)
		die("posix_spawn /proc/self/exe", err);
	while (len < sizeof out - 1 &&
	    ((got = read(fd[0], out + len, sizeof out - 1 - len)) > 0 ||
	        (got < 0 && errno == EINTR)))
		len += got > 0 ? (size_t)got : 0;
	out[len] = '\0';
	close(fd[0]);
	while (waitpid(pid, &status, 0) < 0)
		if (errno != EINTR)
			die("waitpid", errno);
	if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) /* it said why */
		exit(WIFEXITED(status) ? WEXITSTATUS(status) : 2);
	for (int i = 0; i < R_N; i++, p = end) {
		r->v[i] = strtod(p, &end);
		if (end == p)
			check_failed("--one-run wrote \"%s\"", out);
	}
}

/* W5: set up (up) or tear down the mutex, the conditions and the data. */
static void
cv_setup(int k, bool up)
{
	lk_setup(k, &cv.m, up);
	for (int i = 0; i < 2; i++)
		if (k == 1 && !up)
			pthread_cond_destroy(&cv.c[i].pt);
		else if (k == 1)
			pthread_cond_init(&cv.c[i].pt, NULL);
		else if (up)
			pl_cond_init(&cv.c[i].pl);
	cv.head = cv.tail = cv.count = 0;
	cv.gen = cv.waiting = cv.done = 0;
}

/* W5a: timed, the stop flag raised under the mutex and both sides woken;
 * every item produced was consumed or is queued, with the same sum. */
static void
w5a_run(struct run *r)
{
	uint64_t queued = 0;

	cv_setup(r->k, true);
	run_go(r);
	lk_lock(r->k, &cv.m);
	__atomic_store_n(&flag.stop, 1, __ATOMIC_RELAXED);
	cc_wake(r->k, &cv.c[0], true);
	cc_wake(r->k, &cv.c[1], true);
	lk_unlock(r->k, &cv.m);
	run_end(r);
	for (unsigned i = 0; i < cv.count; i++)
		queued += cv.buf[(cv.head + i) % W5_CAP];
	if (r->ops[0] != r->ops[1] + cv.count ||
	    r->sink[0] != r->sink[1] + queued)
		check_failed("%lu produced, %lu consumed, %u queued, or the "
		             "sums differ",
		    r->ops[0], r->ops[1], cv.count);
	cv_setup(r->k, false);
}

static pl_filter_op_t
count_filter(uintptr_t park_token, void *ctx)
{
	(void)park_token;
	++*(size_t *)ctx;
	return PL_FILTER_SKIP;
}

/* Whether all the W5b waiters are registered and asleep: the count taken
 * under the mutex, for pl the threads queued on the condition variable
 * (pl_unpark_filter with a filter that counts and skips), and every
 * thread's state S (sleeping) in /proc. */
static bool
all_asleep(int k, const struct thr *t)
{
	char path[64], buf[512];
	size_t n = 0;

	lk_lock(k, &cv.m);
	bool ok = cv.waiting == W5B_WAITERS;
	lk_unlock(k, &cv.m);
	if (ok && k == 0)
		pl_unpark_filter(&cv.c[0].pl, count_filter, NULL, &n);
	ok = ok && (k == 1 || n == W5B_WAITERS);
	for (int i = 0; ok && i < W5B_WAITERS; i++) {
		snprintf(path, sizeof path, "/proc/self/task/%d/stat",
		    (int)t[i].os_tid);
		FILE *f = fopen(path, "r");
		size_t len = f ? fread(buf, 1, sizeof buf - 1, f) : 0;
		if (f != NULL)
			fclose(f);
		buf[len] = '\0';
		const char *p = strrchr(buf, ')');
		ok = p != NULL && p[1] == ' ' && p[2] == 'S';
	}
	return ok;
}

/* W5b: once the waiters all sleep (a failed check after 5 s), one
 * broadcast, timed from there; every waiter woke. */
static void
w5b_run(struct run *r)
{
	double deadline;
	int err, k = r->k;

	cv_setup(k, true);
	if ((err = pthread_barrier_init(&cv.release, NULL, W5B_WAITERS + 1)))
		die("pthread_barrier_init", err);
	run_go(r);
	for (deadline = now() + 5; !all_asleep(k, r->t); sleep_ns(100000))
		if (now() > deadline)
			check_failed("the %d waiters were not all waiting and "
			             "asleep after 5 s",
			    W5B_WAITERS);
	lk_lock(k, &cv.m);
	cv.gen = 1;
	r->t0 = now();
	cc_wake(k, &cv.c[0], true);
	lk_unlock(k, &cv.m);
	pthread_barrier_wait(&cv.release);
	run_end(r);
	pthread_barrier_destroy(&cv.release);
	if (cv.done != W5B_WAITERS)
		check_failed("%d of %d waiters woke", cv.done, W5B_WAITERS);
	cv_setup(k, false);
}

/* W6: every write counted, and no reader saw half of one. */
static void
w6_run(struct run *r)
{
	if (r->k == 0)
		pl_rwlock_init(&rw.l.pl);
	else
		pthread_rwlock_init(&rw.l.pt, NULL);
	rw.a = rw.b = 0;
	run_go(r);
	run_end(r);
	if (rw.a != r->ops[1] || rw.b != r->ops[1] || r->bad != 0)
		check_failed("%lu writes counted %lu, %lu torn reads",
		    r->ops[1], rw.a, r->bad);
	if (r->k == 1)
		pthread_rwlock_destroy(&rw.l.pt);
}

/* W7: the counters of all the locks sum to the operations. */
static void
w7_run(struct run *r)
{
	size_t sz = lk_size(r->k);
	unsigned long sum = 0;

	r->v[R_BYTES] = (double)sz;
	many.locks = aligned_alloc(64, (W7_LOCKS * sz + 63) / 64 * 64);
	many.counts = calloc(W7_LOCKS, sizeof *many.counts);
	if (many.locks == NULL || many.counts == NULL)
		die("allocating the W7 locks", ENOMEM);
	for (size_t i = 0; i < W7_LOCKS; i++)
		lk_setup(r->k, many.locks + i * sz, true);
	run_go(r);
	run_end(r);
	for (size_t i = 0; i < W7_LOCKS; i++) {
		sum += many.counts[i];
		lk_setup(r->k, many.locks + i * sz, false);
	}
	if (sum != r->ops[0])
		check_failed("counters sum to %lu, not %lu", sum, r->ops[0]);
	free(many.locks);
	free(many.counts);
}

/* W8 and W8x16: lock i's counter sums the operations of its threads. */
static void
w8_run_locks(struct run *r, int nlocks)
{
	unsigned long want[W8_LOCKS] = { 0 };

	w8_nlocks = nlocks;
	w8_late = getenv("LOCKBENCH_W8_LATE") != NULL;
	for (int i = 0; i < nlocks; i++) {
		lk_setup(r->k, &w8[i].lk, true);
		w8[i].counter = 0;
	}
	run_go(r);
	run_end(r);
	for (int i = 0; i < r->n; i++)
		want[i % nlocks] += r->t[i].ops;
	for (int i = 0; i < nlocks; i++) {
		if (w8[i].counter != want[i])
			check_failed("lock %d: counter %lu != %lu increments",
			    i, w8[i].counter, want[i]);
		lk_setup(r->k, &w8[i].lk, false);
	}
}

static void
w8_run(struct run *r)
{
	w8_run_locks(r, 1);
}

static void
w8x16_run(struct run *r)
{
	w8_run_locks(r, W8_LOCKS);
}

/* W3's set-up: the mean real duration of a 1 ms sleep on this machine. */
static void
w3_prepare(void)
{
	fprintf(stderr, "[W3 measuring a 1 ms sleep, 100 times] ");
	double t0 = now();
	for (int i = 0; i < 100; i++)
		sleep_ns(W3_SLEEP_NS);
	sleep_1ms = (now() - t0) / 100;
	ser_put(&glob[3], sleep_1ms);
	tv[0] = sleep_1ms * 1e3;
	tv[1] = W3_THREADS * sleep_1ms;
	fprintf(stderr, "mean %.3f ms\n", sleep_1ms * 1e3);
}

#define W4_LOCK_GOAL 1.7 /* the lock threads' rate against glibc's */
#define W4_YIELD_WHY                                                           \
	"yielders: they run only when a lock thread leaves its CPU, and "      \
	"a waiter that yields at its first contention gave them 35-55x "       \
	"glibc's rate but cut W5a's producers and consumers by 85% "           \
	"(\"The early look\")"
static char w4_why[600] =
    "lock rate: the lock's cache line moving between the CPUs on "
    "fast-path acquisitions, which no slow-path policy sees "
    "(doc/BENCHMARKS.md, \"W4: stepping back\"); " W4_YIELD_WHY;

/* W4's useful work: each side's operations costed at its rate alone.
 * And the lock rate's bound: each of the 2 lock threads at most as fast
 * as one alone, so where the goal is above twice pl's rate alone, the
 * reason printed is that no pl lock can reach it in this run. */
static void
w4_finish(struct ser *s, int k, int c)
{
	(void)c;
	static double pl_alone;

	for (int r = 0; r < s[1].n; r++)
		ser_put(&s[0],
		    s[1].v[r] / ser_stat(&s[3], Q_MED) +
		        s[2].v[r] / ser_stat(&glob[4], Q_MED));
	tv[0] = ncpus < 2 ? 1 : 2;
	tv[1] = ser_stat(&glob[4], Q_MED) / 1e3;
	if (k == LK_PL)
		pl_alone = ser_stat(&s[3], Q_MED);
	double goal = W4_LOCK_GOAL * ser_stat(&s[1], Q_MED);
	if (k == LK_PT && pl_alone > 0 && goal > 2 * pl_alone)
		snprintf(w4_why, sizeof w4_why,
		    "lock rate: the goal, %.2f Mops/s (%.1fx %s's %.2f), "
		    "is above %.2f, twice the rate of one pl lock thread "
		    "alone in this run: two lock threads, each no faster "
		    "than one alone, cannot reach it; %s",
		    goal * 1e-6, W4_LOCK_GOAL, lk_name[LK_PT],
		    ser_stat(&s[1], Q_MED) * 1e-6, 2 * pl_alone * 1e-6,
		    W4_YIELD_WHY);
}

/* ------------------------------------------------------------------ */
/* The workloads, in the order of their tables. */

struct tlist tl2 = { 4, { 2, 4, 8, 32 } }, tl6 = { 4, { 2, 4, 8, 16 } };
struct tlist tl8 = { 3, { 64, 256, 1024 } };

/* The progress lines, metrics, columns and targets of W2, W5a and W6,
 * which their C++ twins share: the same figures, compared the same way. */
#define W2_PFMT "%.2f Mops/s, %.3f CPU s/Mop"
#define W5A_PFMT "%.3f Mitems/s"
#define W6_PFMT "%.2f Mops/s, reads %.1f%%, writes %.1f%%"
/* clang-format off */
#define W2_METRICS                                                         \
	{ { "throughput", "ops/s", R_OPS, R_EL, 1e-6 },                    \
	    { "thread_min", "ops/s", R_LO, R_EL, 0, 0, 0, M_NORATIO },     \
	    { "thread_max", "ops/s", R_HI, R_EL, 0, 0, 0, M_NORATIO },     \
	    { "cpu_per_mop", "s", R_CPU, R_OPS, 1, 1e6 } },                \
	{ { "Mops/s", 8, C_MED, 0, 1e-6, 2 },                              \
	    { "min..max", 14, C_RANGE, 0, 1e-6, 2 },                       \
	    { "thread kops/s", 16, C_PAIR, 1, 1e-3, 0 },                   \
	    { "CPU s/Mop", 9, C_MED, 3, 1, 3 },                            \
	    { "ratio", 7, C_RATIO, 0 },                                    \
	    { "CPU ratio", 9, C_RATIO, 3 } }
#define W2_FIGURES                                                         \
	W2_METRICS,                                                        \
	{ { 0, false, false, 1.70, ">=%.2fx", "throughput", "x", 2 },      \
	    { 3, false, true, 0.70, "CPU <=%.2fx", "CPU/op", "x", 2 } }
#define W5A_FIGURES                                                        \
	{ { "throughput", "items/s", R_OPS1, R_EL, 1e-6 } },               \
	{ { "Mitems/s", 9, C_MED, 0, 1e-6, 3 },                            \
	    { "min..max", 14, C_RANGE, 0, 1e-6, 3 },                       \
	    { "ratio", 7, C_RATIO, 0 } },                                  \
	{ { 0, false, false, 1.50, ">=%.2fx", "producer/consumer", "x",    \
	    2 } }
#define W6_FIGURES                                                         \
	{ { "throughput", "ops/s", R_OPS, R_EL, 1e-6 },                    \
	    { "read_share", "%", R_OPS0, R_OPS, 1, 100, 0, M_NORATIO },    \
	    { "write_share", "%", R_OPS1, R_OPS, 1, 100, 0, M_NORATIO } }, \
	{ { "Mops/s", 8, C_MED, 0, 1e-6, 2 },                              \
	    { "min..max", 14, C_RANGE, 0, 1e-6, 2 },                       \
	    { "reads", 7, C_PCT, 1, 1, 1 },                                \
	    { "writes", 7, C_PCT, 2, 1, 1 },                               \
	    { "ratio", 7, C_RATIO, 0 } },                                  \
	{ { 0, false, false, 1.50, ">=%.2fx", "throughput", "x", 2 },      \
	    { 1, true, false, 25, "each share >=%.0f%%", "reads", "%",     \
	        1 },                                                       \
	    { 2, true, false, 25, NULL, "writes", "%", 1 } }
#define W8_FIGURES                                                         \
	{ { "throughput", "ops/s", R_OPS, R_EL, 1e-6 },                    \
	    { "cpu_per_op", "s", R_CPU, R_OPS, 1e6, 1 },                   \
	    { "thread_min_share", "x", R_LO, R_MEAN, 0, 0, 0, M_NORATIO }, \
	    { "thread_max_share", "x", R_HI, R_MEAN, 0, 0, 0, M_NORATIO }, \
	    { "longest_wait", "s", R_MAXGAP, R_ONE, 1e3 },                 \
	    { "starved", "threads", R_STARVED, R_ONE, 0, 0, 0, M_NORATIO } }, \
	{ { "Mops/s", 8, C_MED, 0, 1e-6, 2 },                              \
	    { "min..max", 13, C_RANGE, 0, 1e-6, 2 },                       \
	    { "CPU us/op", 9, C_MED, 1, 1e6, 3 },                          \
	    { "share lo..hi", 13, C_PAIR, 2, 1, 2 },                       \
	    { "wait ms", 8, C_MED, 4, 1e3, 1 },                            \
	    { "starved", 7, C_RANGE, 5, 1, 0 },                            \
	    { "ratio", 7, C_RATIO, 0 },                                    \
	    { "CPU ratio", 9, C_RATIO, 1 },                                \
	    { "wait ratio", 10, C_RATIO, 4 } },                            \
	{ { 0, false, false, 1.50, ">=%.2fx", "throughput", "x", 2 },      \
	    { 4, false, true, 4.00, "wait <=%.2fx", "longest wait", "x", 2 }, \
	    { 5, true, true, 0, "none starved", "starved threads, worst run", \
	        "", 0, true } }
/* clang-format on */
#define W2_WHY                                                                 \
	"a bare spinlock runs 1.2x glibc here: every lock pays the "           \
	"lock's and the counter's lines crossing between the cores on each "   \
	"operation (doc/BENCHMARKS.md, \"The whole table\")"
#define W6_WHY_NONE "throughput: not attributed"

/* W6's and W6cxx's reason, from the run's shares: where the other lock
 * (kind 1) let its writers do under the quarter of the operations that
 * each side must have, its throughput is mostly readers sharing the
 * lock, which a lock that keeps both shares does not get. */
struct w6_why {
	double share[2][MAXTC]; /* median write share, % */
	char text[600];
};

static void
w6_why_finish(struct w6_why *y, const char *other, struct ser *s, int k, int c)
{
	if (k > 1)
		return;
	y->share[k][c] = ser_stat(&s[2], Q_MED);
	if (k != 1 || c != tl6.n - 1)
		return;
	char cells[LB_LINE] = "", them[LB_LINE] = "", us[LB_LINE] = "";
	int n = 0;
	for (int i = 0; i < tl6.n; i++) {
		if (!(y->share[1][i] >= 0 && y->share[1][i] < 25))
			continue;
		const char *sep = n++ ? ", " : "";
		cat(cells, "%s%d", sep, tl6.v[i]);
		cat(them, "%s%.1f%%", sep, y->share[1][i]);
		cat(us, "%s%.1f%%", sep, y->share[0][i]);
	}
	if (n == 0)
		snprintf(y->text, sizeof y->text, "%s", W6_WHY_NONE);
	else
		snprintf(y->text, sizeof y->text,
		    "throughput: %s prefers readers: its writers did %s of "
		    "the operations at %s threads, under the quarter each "
		    "side must have, so its throughput there is mostly "
		    "readers sharing the lock; pl's writers did %s",
		    other, them, cells, us);
}

static struct w6_why w6_why = { .text = W6_WHY_NONE },
                     w6cxx_why = { .text = W6_WHY_NONE };

static void
w6_finish(struct ser *s, int k, int c)
{
	w6_why_finish(&w6_why, rw_name[1], s, k, c);
}

static void
w6cxx_finish(struct ser *s, int k, int c)
{
	w6_why_finish(&w6cxx_why, cxx_rw_name[1], s, k, c);
}

#define W7_WHY                                                                 \
	"a loop of cache misses: glibc's locks take 4 MB, pl's 100 KB, and "   \
	"in runs where the VM's cache keeps glibc's array glibc runs at 100 "  \
	"to 130 Mops/s instead of 35 to 40, near a bare spinlock, which pl "   \
	"matches then; against the usual 35 to 40 pl is 2.3 to 3x "            \
	"(doc/BENCHMARKS.md, \"a different host\", and W7 under \"Issue "      \
	"16's goals in one make bench\" at 81b7b8e)"

#define W8_WHY                                                                 \
	"on 2 CPUs 1.5x glibc asks one lock for what pl's W2 loop does at 2 "  \
	"to 32 threads without W8's clock read per operation, and 16 locks "   \
	"for about what two threads alone on locks of their own would do "     \
	"without it (doc/BENCHMARKS.md, \"Issue 16's goals\"); and the "       \
	"threads starved at 1024 on 16 locks sit in queues of 64 at most, "    \
	"but each queue moves by one thread per woken thread's wait for a "    \
	"CPU behind hundreds of runnable ones, which no fairness interval "    \
	"shortens; glibc starves more (\"Starved threads\", \"Deep queues\")"

#define W9_WHY                                                                 \
	"W2's waiters reach the yield rounds 15 to 500 times a second out of " \
	"16 to 23 million acquisitions, so both rows run the same code and "   \
	"the ratio is the spread between runs, 0.70-1.37x in paired runs "     \
	"(doc/BENCHMARKS.md, \"Adaptive spinning\")"

/* The tables leave the trailing fields of their entries zero. */
#pragma GCC diagnostic ignored "-Wmissing-field-initializers"
struct workload work[] = {
	{ "W1",
	    "W1 uncontended: 1 thread, ns per lock+unlock pair; best of %d "
	    "runs, ratio of the bests (lower is better)",
	    NULL, 1, lk_name, F_BEST, 8, { 0.01, 1 }, one_run,
	    { { w1_body_fn, 0, R0, "1 thread", "", "%.2f ns/pair" } },
	    { { "ns_per_pair", "ns", R_TEND, R_OPS, 1, 1e9 } },
	    { { "best", 8, C_BEST, 0, 1, 2 }, { "median", 8, C_MED, 0, 1, 2 },
	        { "min..max", 16, C_RANGE, 0, 1, 2 }, { "ratio", 7, C_RATIO } },
	    { { 0, false, true, 0.90, "<=%.2fx", "ns per pair", "x", 2 } } },
	{ "W2",
	    "W2 contended short critical section: total Mops/s (median of %d "
	    "runs, min..max), per-thread kops/s (lowest..highest thread), CPU "
	    "seconds per million ops (lower is better)",
	    &tl2, 0, lk_name, F_TIMED, 22, { 0.01, 1 }, one_run,
	    { { w2_body_fn, 0, R0, NULL, "", W2_PFMT, { 0, 3 } } }, W2_FIGURES,
	    .why = W2_WHY },
	{ "W3",
	    "W3 long holds: " S_W3_THREADS " threads each lock once and sleep "
	    "1 ms inside; a 1 ms sleep measured %2$.3f ms, so ideal = %3$.3f "
	    "s; elapsed/ideal (1.00 is ideal) and CPU seconds, median of %1$d "
	    "runs",
	    NULL, W3_THREADS, lk_name, F_SPIN_NAMED | F_WAKE, 42, { 0.38, 0 },
	    one_run,
	    { { w3_body_fn, 0, R0, NULL, "", "%.3f s = %.3fx ideal, %.3f CPU s",
	        { 1, 0, 2 } } },
	    { { "elapsed_over_ideal", "x", R_SPAN, R_IDEAL, 1, 1, 0,
	          M_NORATIO },
	        { "elapsed", "s", R_SPAN, R_ONE }, { "cpu", "s", R_CPU, R_ONE },
	        { "sleep_1ms", "s", 0, 0, 1, 1, -1, M_GLOBAL } },
	    { { "elapsed s", 9, C_MED, 1, 1, 3 },
	        { "/ideal", 8, C_MED, 0, 1, 3 },
	        { "min..max", 12, C_RANGE, 0, 1, 3 },
	        { "CPU s", 8, C_MED, 2, 1, 3 },
	        { "CPU ratio", 9, C_RATIO, 2 } },
	    { { 0, true, true, 1.05, "<=%.2f ideal", "elapsed", "x ideal", 3 },
	        { 1, false, true, 1.02, "elapsed<=%.2fx", "elapsed ratio", "x",
	            3 },
	        { 2, false, true, 1.00, "CPU<=%.2fx", "CPU", "x", 2 } },
	    .prep = 0.11, .prepare = w3_prepare,
	    .why = "CPU: pl's own park and unpark, 3 to 5 us of the 21 to 25 "
	           "a thread spends in its lock and unlock calls, where a bare "
	           "queue lock whose waiters sleep on words of their own, as "
	           "pl's do, spends glibc's 17 to 21 (tools/w3parts); and "
	           "under parkstat (the README's main job) pl's parks are "
	           "observed and glibc's are not (doc/BENCHMARKS.md, \"W3's "
	           "CPU, attributed\")" },
	{ "W4",
	    "W4 useful work: 2 threads run the W2 loop while 2 threads do "
	    "units of " S_YIELD_WORK " xorshift steps + sched_yield; each "
	    "side's operations costed at one thread's rate alone on a CPU: "
	    "useful = lock rate / lock-alone rate + yield rate / yield-alone "
	    "rate, in CPUs (max %2$.2f); yield thread alone: %3$.1f kunits/s; "
	    "median of %1$d runs",
	    NULL, 4, lk_name, F_TIMED, 40, { 0.01, 1 }, one_run,
	    { { w2_body_fn, 1, R0, "1 lock thread", " alone", "%.2f Mops/s",
	          { 3 } },
	        { w4_body_fn, 4, HALVES, "2+2 threads", " with yielders",
	            "lock %.2f Mops/s, yield %.1f kunits/s", { 1, 2 } },
	        { w4_body_fn, 1, R1, "1 yield thread", " alone",
	            "%.1f kunits/s", { 4 }, true } },
	    { { "useful", "cpus", 0, 0, 1, 1, -1 },
	        { "lock_rate", "ops/s", R_OPS0, R_EL, 1e-6, 1, 1 },
	        { "yield_rate", "units/s", R_OPS1, R_EL, 1e-3, 1, 1 },
	        { "lock_alone_rate", "ops/s", R_OPS0, R_EL, 1e-6, 1, 0,
	            M_NORATIO, 1 },
	        { "yield_alone_rate", "units/s", R_OPS1, R_EL, 1e-3, 1, 2,
	            M_GLOBAL } },
	    { { "lock Mops/s", 11, C_MED, 1, 1e-6, 2 },
	        { "alone", 8, C_MED, 3, 1e-6, 2 },
	        { "yield kunit/s", 14, C_MED, 2, 1e-3, 1 },
	        { "useful", 7, C_MED, 0, 1, 2 },
	        { "min..max", 11, C_RANGE, 0, 1, 2 },
	        { "ratio", 8, C_RATIO, 0 }, { "yield ratio", 11, C_RATIO, 2 } },
	    { { 0, true, false, 1.5, ">=%.2f CPUs", "useful work", " CPUs", 2 },
	        { 1, false, false, W4_LOCK_GOAL, "lock >=%.2fx", "lock rate",
	            "x", 2 },
	        { 2, false, false, 10.0, "yield >=%.0fx", "yielders' rate", "x",
	            1 } },
	    .finish = w4_finish, .why = w4_why },
	{ "W5a",
	    "W5a producer/consumer: 2 producers + 2 consumers, queue "
	    "of " S_W5_CAP "; Mitems/s, median of %d runs",
	    NULL, 4, cv_name, F_TIMED, 8, { 0.01, 1 }, w5a_run,
	    { { w5a_body_fn, 0, HALVES, "2+2 threads", "", W5A_PFMT } },
	    W5A_FIGURES },
	{ "W5b",
	    "W5b broadcast to " S_W5B_WAITERS " sleeping waiters: time from "
	    "the broadcast until all reacquired and released the mutex (they "
	    "exit after), and the waiters' context switches while waiting "
	    "(ideal: " S_W5B_WAITERS ", one sleep each) and how many were "
	    "sleeps (voluntary; the rest are preemptions); median "
	    "of " S_W5B_ROUNDS " broadcasts (lower is better)",
	    NULL, W5B_WAITERS, cv_name, F_WAKE, 26, { 0.02, 0 }, w5b_run,
	    { { w5b_body_fn, 0, R0, S_W5B_WAITERS " waiters",
	        ", " S_W5B_ROUNDS " broadcasts",
	        "median %.0f us, %.0f context switches", { 0, 1 } } },
	    { { "bcast_time", "s", R_SPAN, R_ONE, 1e6 },
	        { "bcast_ctxsw", "switches", R_CSW, R_ONE },
	        { "bcast_sleeps", "switches", R_VCSW, R_ONE } },
	    { { "time us", 8, C_MED, 0, 1e6, 0 },
	        { "min..max", 14, C_RANGE, 0, 1e6, 0 },
	        { "ctx sw", 7, C_MED, 1, 1, 0 },
	        { "min..max", 12, C_RANGE, 1, 1, 0 },
	        { "sleeps", 6, C_MED, 2, 1, 0 },
	        { "time ratio", 10, C_RATIO, 0 },
	        { "ctx ratio", 9, C_RATIO, 1 } },
	    { { 1, false, true, 0.55, "ctx <=%.2fx", "context switches", "x",
	          2 },
	        { 0, false, true, 0.70, "time <=%.2fx", "time", "x", 2 } },
	    .rounds = W5B_ROUNDS,
	    .why = "the waiters sleep once each, the floor, but run one after "
	           "another, each woken by the unlock before it, as the API's "
	           "broadcast without a herd requires (README.md)" },
	{ "W6",
	    "W6 reader-writer: equal readers and writers, short critical "
	    "sections; total Mops/s (median of %d runs, min..max), read and "
	    "write shares of the total",
	    &tl6, 0, rw_name, F_TIMED, 26, { 0.01, 1 }, w6_run,
	    { { w6_body_fn, 0, HALVES, NULL, "", W6_PFMT, { 0, 1, 2 } } },
	    W6_FIGURES, .finish = w6_finish, .why = w6_why.text },
	{ "W7",
	    "W7 many locks: " S_W7_THREADS " threads lock random entries of an "
	    "array of " S_W7_LOCKS " locks; Mops/s, median of %d runs",
	    NULL, W7_THREADS, lk_name, F_TIMED, 22, { 0.02, 1 }, w7_run,
	    { { w7_body_fn, 0, R0, NULL, "", "%.2f Mops/s" } },
	    { { "throughput", "ops/s", R_OPS, R_EL, 1e-6 },
	        { "bytes_per_lock", "B", R_BYTES, R_ONE, 1, 1, 0, M_NORATIO } },
	    { { "Mops/s", 8, C_MED, 0, 1e-6, 2 },
	        { "min..max", 14, C_RANGE, 0, 1e-6, 2 },
	        { "bytes/lock", 10, C_MED, 1, 1, 0 },
	        { "ratio", 7, C_RATIO, 0 } },
	    { { 0, false, false, 1.80, ">=%.2fx", "throughput", "x", 2 },
	        { 1, true, true, 1, "%.0f byte/lock", "bytes per lock", "",
	            0 } },
	    .why = W7_WHY },
	{ "W8",
	    "W8 oversubscribed, one lock: 64, 256 and 1024 threads on the "
	    "CPUs run the W2 loop; total Mops/s (median of %d runs, "
	    "min..max), CPU us per op, the lowest and highest thread's "
	    "operations over the mean (medians), the longest any thread went "
	    "between two of its unlocks (median of the runs' longest), the "
	    "threads with no unlock before the stop (most in a run); ratios "
	    "pl/pthread",
	    &tl8, 0, lk_name, F_TIMED | F_SPIN_NAMED, 40, { 0.1, 1 }, w8_run,
	    { { w8_body_fn, 0, R0, NULL, "", "%.2f Mops/s, longest %.1f ms",
	        { 0, 4 } } },
	    W8_FIGURES, .why = W8_WHY },
	{ "W8x16",
	    "W8x16 oversubscribed, " S_W8_LOCKS " locks: as W8, thread i on "
	    "lock i mod " S_W8_LOCKS "; total Mops/s (median of %d runs, "
	    "min..max), CPU us per op, the lowest and highest thread's "
	    "operations over the mean, the longest between two unlocks, the "
	    "starved threads; ratios pl/pthread",
	    &tl8, 0, lk_name, F_TIMED | F_SPIN_NAMED, 40, { 0.1, 1 }, w8x16_run,
	    { { w8_body_fn, 0, R0, NULL, "", "%.2f Mops/s, longest %.1f ms",
	        { 0, 4 } } },
	    W8_FIGURES, .why = W8_WHY },
	/* The adaptive yield rounds (lib/spin.c) against the fixed ones: the
	 * step's functions are W2's, which the child process runs. */
	{ "W9",
	    "W9 adaptive spinning: the W2 loop with the library's adaptive "
	    "yield rounds (pl_mutex) and without them (pl_mutex_fixed: "
	    "PARKINGLOT_ADAPT=0), each run in a process of its own; total "
	    "Mops/s (median of %d runs, min..max), per-thread kops/s, CPU "
	    "seconds per million ops; ratios adaptive/fixed",
	    &tl2, 0, ad_name, F_TIMED, 22, { 0.02, 1 }, w9_run,
	    { { w2_body_fn, 0, R0, NULL, "", W2_PFMT, { 0, 3 } } }, W2_METRICS,
	    { { 0, false, false, 1.00, ">=%.2fx", "throughput kept", "x", 2 } },
	    .why = W9_WHY },
	/* The C++ types against the standard library's: W2, W5a and W6
	 * through tools/lockbench-cxx.cc, kinds 0 (pl::) and 1 (std::). */
	{ "W2cxx",
	    "W2cxx the W2 loop in C++, pl::mutex against std::mutex (each "
	    "with std::lock_guard): total Mops/s (median of %d runs, "
	    "min..max), per-thread kops/s (lowest..highest thread), CPU "
	    "seconds per million ops (lower is better); ratios pl::/std::",
	    &tl2, 0, cxx_mutex_name, F_TIMED | F_CXX, 22, { 0.01, 1 },
	    w2cxx_run, { { w2cxx_fn, 0, R0, NULL, "", W2_PFMT, { 0, 3 } } },
	    W2_FIGURES, .why = W2_WHY },
	{ "W5acxx",
	    "W5acxx producer/consumer in C++, as W5a: pl::condition_variable "
	    "with std::unique_lock<pl::mutex> against std::condition_variable "
	    "with std::unique_lock<std::mutex>; Mitems/s, median of %d runs; "
	    "ratios pl::/std::",
	    NULL, 4, cxx_cv_name, F_TIMED | F_CXX, 8, { 0.01, 1 }, w5acxx_run,
	    { { w5acxx_fn, 0, HALVES, "2+2 threads", "", W5A_PFMT } },
	    W5A_FIGURES },
	{ "W6cxx",
	    "W6cxx reader-writer in C++, as W6: pl::shared_mutex against "
	    "std::shared_mutex (std::lock_guard, std::shared_lock); total "
	    "Mops/s (median of %d runs, min..max), read and write shares of "
	    "the total; ratios pl::/std::",
	    &tl6, 0, cxx_rw_name, F_TIMED | F_CXX, 26, { 0.01, 1 }, w6cxx_run,
	    { { w6cxx_fn, 0, HALVES, NULL, "", W6_PFMT, { 0, 1, 2 } } },
	    W6_FIGURES, .finish = w6cxx_finish, .why = w6cxx_why.text },
};
_Static_assert(sizeof work / sizeof work[0] == NWORK, "NWORK counts work[]");
_Static_assert(W5B_ROUNDS <= NV, "a series holds W5b's broadcasts");
