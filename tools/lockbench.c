/* SPDX-License-Identifier: MIT */
/*
 * lockbench: libparkinglot's primitives against glibc's, in one run.
 *
 * The workloads of the speed issue, W1..W7, each described in work[]
 * below; each prints a table with the median and min..max of its runs, the
 * ratio pl/pthread of the medians and, on the pl row, the target
 * and whether it was met:
 *
 *   W1  uncontended: one thread, ns per lock+unlock pair (best of runs).
 *   W2  contended short critical section: 2, 4, 8, 32 threads increment a
 *       shared counter inside the lock and do 0..63 xorshift steps outside;
 *       total ops/s, per-thread min/max, CPU seconds per million ops.
 *   W3  long holds: 300 threads each take the lock once and sleep 1 ms
 *       inside; elapsed / (300 x the measured duration of a 1 ms sleep),
 *       and CPU seconds.
 *   W4  useful work: 2 threads run the W2 loop while 2 threads do units of
 *       work (1000 xorshift steps) and sched_yield; useful work = each
 *       side's operations costed at one thread's rate alone on a CPU.
 *   W5  condition variables: (a) 2 producers and 2 consumers on a queue of
 *       16, items/s; (b) once 64 fresh waiters on one condition variable
 *       are all registered and asleep, one broadcast: the time until the
 *       last waiter released the mutex and the waiters' context switches
 *       (64, one sleep each, is ideal); median of 20 broadcasts.
 *   W6  reader-writer: equal readers and writers (2, 4, 8, 16 threads),
 *       short critical sections; total ops/s, read and write shares.
 *   W7  many locks: 4 threads lock random entries of an array of 100,000
 *       locks; ops/s and bytes per lock.
 *
 * The locks: pl_mutex_t, pthread_mutex_t (default attributes and
 * PTHREAD_MUTEX_ADAPTIVE_NP) and a test-and-test-and-set spinlock with
 * pause; for W5 pl_cond_t+pl_mutex_t and pthread_cond_t+pthread_mutex_t;
 * for W6 pl_rwlock_t and pthread_rwlock_t.  CPU seconds are each worker's
 * CLOCK_THREAD_CPUTIME_ID from the start barrier to its end, summed.
 * Thread i is pinned to the i-th CPU of the affinity mask (modulo their
 * number), every run starts fresh threads, every cell is several short
 * runs.  A progress line per run goes to stderr; -o writes every figure as
 * CSV; --plot draws W2 and W6 with tools/lockbench-plot.sh (gnuplot).
 * Exit status: 0 (whatever the targets); 1 if a check found a lock letting
 * two threads in or losing an item; 2 for usage and system errors.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <getopt.h>
#include <linux/futex.h>
#include <gnu/libc-version.h>
#include <pthread.h>
#include <sched.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <sys/utsname.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <parkinglot.h>

#define ALWAYS_INLINE inline __attribute__((always_inline))
#define STR_(x) #x
#define STR(x) STR_(x)

#define DEFAULT_SECS 1.0
#define DEFAULT_RUNS 3
#define MAXRUNS 50
#define MAXTC 16                /* entries in a -t list */
#define MAXTHREADS 1024         /* per entry of -t */
#define STACK_SIZE (256 * 1024) /* W3 starts 300 threads */
#define WORK_MASK 63            /* 0..63 xorshift steps outside the lock */
#define YIELD_WORK 1000         /* xorshift steps per W4 work unit */
#define W3_THREADS 300
#define W3_SLEEP_NS 1000000L
#define W5_CAP 16
#define W5B_WAITERS 64
#define W5B_ROUNDS 20
#define W7_LOCKS 100000
#define W7_THREADS 4
#define WL_ROUNDS 200 /* wake-up latency: wakes per CPU */
#define NMET 5        /* metrics per workload */
/* Those the titles print, as strings. */
#define S_W3_THREADS STR(W3_THREADS)
#define S_YIELD_WORK STR(YIELD_WORK)
#define S_W5_CAP STR(W5_CAP)
#define S_W5B_WAITERS STR(W5B_WAITERS)
#define S_W5B_ROUNDS STR(W5B_ROUNDS)
#define S_W7_THREADS STR(W7_THREADS)
#define S_W7_LOCKS STR(W7_LOCKS)

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

enum { LK_PL, LK_PT, LK_AD, LK_SPIN, NLK };
static const char *const lk_name[NLK] = { "pl_mutex", "pthread_mutex",
	"pthread_adaptive", "spinlock" };
static const char *const lk_opt[NLK] = { "pl", "pthread", "adaptive", "spin" };
/* W5 and W6 compare kinds 0 (pl) and 1 (pthread), LK_PL and LK_PT for -l;
 * W5's mutex is an anylock of that kind. */
static const char *const cv_name[2] = { "pl_cond+pl_mutex",
	"pthread_cond+mutex" };
static const char *const rw_name[2] = { "pl_rwlock", "pthread_rwlock" };
static pthread_mutexattr_t adaptive_attr;

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

static struct {
	_Alignas(64) int stop;
} flag;

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

/* ------------------------------------------------------------------ */
/* Small helpers. */

static double secs = DEFAULT_SECS, sleep_1ms; /* seconds */
static double wl_same = -1, wl_other = -1;    /* wake-up latencies, s */
static double tv[2]; /* the figures in W3's and W4's titles */
static int runs = DEFAULT_RUNS, ncpus, cpus[CPU_SETSIZE];
static pthread_barrier_t start_barrier;
static char who[160]; /* the current run: "W2 8 threads pl_mutex" */

static void
die(const char *what, int err)
{
	fprintf(stderr, "lockbench: %s: %s\n", what, strerror(err));
	exit(2);
}

/* A failed correctness check: a lock let two threads in, or lost an item. */
static void
check_failed(const char *fmt, ...)
{
	va_list ap;
	fprintf(stderr, "\nlockbench: CHECK FAILED: %s: ", who);
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fprintf(stderr, "\n");
	exit(1);
}

static double
clock_s(clockid_t id)
{
	struct timespec ts;
	clock_gettime(id, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}
#define now() clock_s(CLOCK_MONOTONIC)

static void
sleep_ns(int64_t ns)
{
	struct timespec ts = { (time_t)(ns / 1000000000),
		(long)(ns % 1000000000) };
	while (clock_nanosleep(CLOCK_MONOTONIC, 0, &ts, &ts) == EINTR)
		;
}

/* The threads attr creates run on the given CPU only. */
static void
pin(pthread_attr_t *attr, int cpu)
{
	cpu_set_t set;

	CPU_ZERO(&set);
	CPU_SET(cpu, &set);
	pthread_attr_setaffinity_np(attr, sizeof set, &set);
}

static ALWAYS_INLINE bool
stopping(void)
{
	return __atomic_load_n(&flag.stop, __ATOMIC_RELAXED) != 0;
}

static ALWAYS_INLINE uint64_t
xorshift(uint64_t x)
{
	x ^= x << 13;
	x ^= x >> 7;
	x ^= x << 17;
	return x;
}

static ALWAYS_INLINE uint64_t
busy_work(uint64_t x, unsigned n)
{
	for (; n > 0; n--)
		x = xorshift(x);
	return x;
}

static uint64_t
seed(int i)
{
	return (0x9e3779b97f4a7c15u * (uint64_t)(i + 1)) | 1;
}

/* ------------------------------------------------------------------ */
/* Threads: fresh ones for every run, thread i pinned to CPU i mod n. */

struct thr {
	pthread_t tid;
	int idx, role;
	pid_t os_tid;
	unsigned long ops, bad;
	long csw, vcsw; /* context switches, and the voluntary ones */
	double cpu_s, t_end;
	uint64_t sink;
};

/* In each thread: wait for the others, then start the CPU clock. */
static double
thr_begin(struct thr *t)
{
	t->os_tid = (pid_t)syscall(SYS_gettid);
	pthread_barrier_wait(&start_barrier);
	return clock_s(CLOCK_THREAD_CPUTIME_ID);
}

/* In each thread at its end: its figures, and the CPU clock stopped. */
static void *
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
		x = busy_work(x, (unsigned)(x & WORK_MASK));
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
		x = busy_work(x, (unsigned)(x & WORK_MASK));
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

/* ------------------------------------------------------------------ */
/* Runs: each workload's set-up, drive and check around go() and end(). */

/* What a run measured, summed over its threads: a metric divides one v[]
 * by another.  R_ONE is 1, R_EL the elapsed time, R_TEND the latest t_end,
 * R_SPAN that since t0 (when the measured span began). */
enum { R_ONE, R_OPS, R_OPS0, R_OPS1, R_EL, R_TEND, R_SPAN, R_CPU };
enum { R_LO = R_CPU + 1, R_HI, R_CSW, R_VCSW, R_IDEAL, R_BYTES, R_N };
struct run {
	struct thr *t;
	int k, n;
	bool timed; /* runs -d seconds, to the stop flag */
	void *(*fn)(void *);
	double t0, v[R_N];
	unsigned long ops[2], bad; /* ops by role */
	uint64_t sink[2];
};

/* Start a run's threads and, if it is timed, let them run -d seconds. */
static void
go(struct run *r)
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
static void
end(struct run *r)
{
	double *v = r->v;

	if (r->timed)
		__atomic_store_n(&flag.stop, 1, __ATOMIC_RELAXED);
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
	}
	v[R_OPS0] = (double)r->ops[0];
	v[R_OPS1] = (double)r->ops[1];
	v[R_OPS] = v[R_OPS0] + v[R_OPS1];
	v[R_SPAN] = v[R_TEND] - r->t0;
}

/* W1..W4: one lock of any kind, and the counter it guards. */
static void
one_run(struct run *r)
{
	lk_setup(r->k, &one.lk, true);
	one.counter = 0;
	go(r);
	end(r);
	if (one.counter != r->ops[0])
		check_failed(
		    "counter %lu != %lu increments", one.counter, r->ops[0]);
	lk_setup(r->k, &one.lk, false);
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
	go(r);
	lk_lock(r->k, &cv.m);
	__atomic_store_n(&flag.stop, 1, __ATOMIC_RELAXED);
	cc_wake(r->k, &cv.c[0], true);
	cc_wake(r->k, &cv.c[1], true);
	lk_unlock(r->k, &cv.m);
	end(r);
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
	go(r);
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
	end(r);
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
	go(r);
	end(r);
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

	many.locks = aligned_alloc(64, (W7_LOCKS * sz + 63) / 64 * 64);
	many.counts = calloc(W7_LOCKS, sizeof *many.counts);
	if (many.locks == NULL || many.counts == NULL)
		die("allocating the W7 locks", ENOMEM);
	for (size_t i = 0; i < W7_LOCKS; i++)
		lk_setup(r->k, many.locks + i * sz, true);
	go(r);
	end(r);
	for (size_t i = 0; i < W7_LOCKS; i++) {
		sum += many.counts[i];
		lk_setup(r->k, many.locks + i * sz, false);
	}
	if (sum != r->ops[0])
		check_failed("counters sum to %lu, not %lu", sum, r->ops[0]);
	free(many.locks);
	free(many.counts);
}

/*
 * This machine's wake-up latency: from a FUTEX_WAKE until the thread it
 * woke runs, the waker on the first CPU and the sleeper on the first or
 * the second, which had nothing to do for 200 us before each wake.  A
 * lock that wakes one waiter at a time pays it on every hand-off to a
 * sleeping thread, so W3 and W5b print it beside their figures.  Medians
 * of WL_ROUNDS; negative when there is one CPU or the probe failed.
 */
static struct {
	_Alignas(64) uint32_t word; /* 1 wake up, 2 exit */
	double woke;
} wl;

static void
wl_post(uint32_t w)
{
	__atomic_store_n(&wl.word, w, __ATOMIC_RELEASE);
	syscall(SYS_futex, &wl.word, FUTEX_WAKE_PRIVATE, 1, NULL, NULL, 0);
}

static void *
wl_sleeper(void *a)
{
	for (uint32_t w;;) {
		while ((w = __atomic_load_n(&wl.word, __ATOMIC_ACQUIRE)) == 0)
			syscall(SYS_futex, &wl.word, FUTEX_WAIT_PRIVATE, 0,
			    NULL, NULL, 0);
		if (w == 2)
			return a;
		wl.woke = now();
		__atomic_store_n(&wl.word, 0, __ATOMIC_RELEASE);
	}
}

static int
cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;
	return (x > y) - (x < y);
}

/* The median latency with the sleeper on the given CPU, the caller on the
 * first. */
static double
wl_probe(int cpu)
{
	double lat[WL_ROUNDS];
	pthread_attr_t attr;
	pthread_t t;

	pthread_attr_init(&attr);
	pin(&attr, cpu);
	int err = pthread_create(&t, &attr, wl_sleeper, NULL);
	pthread_attr_destroy(&attr);
	if (err != 0)
		return -1;
	for (int i = 0; i < WL_ROUNDS; i++) {
		sleep_ns(200000);
		double t0 = now();
		wl_post(1);
		while (__atomic_load_n(&wl.word, __ATOMIC_ACQUIRE) != 0)
			sched_yield(); /* lets a sleeper on this CPU run */
		lat[i] = wl.woke - t0;
	}
	wl_post(2);
	pthread_join(t, NULL);
	__atomic_store_n(&wl.word, 0, __ATOMIC_RELAXED);
	qsort(lat, WL_ROUNDS, sizeof lat[0], cmp_double);
	return lat[WL_ROUNDS / 2];
}

static void
measure_wake_latency(void)
{
	cpu_set_t saved, set;

	if (wl_same >= 0 || ncpus < 2 ||
	    pthread_getaffinity_np(pthread_self(), sizeof saved, &saved) != 0)
		return;
	fprintf(stderr,
	    "[measuring the wake-up latency, %d wakes on each CPU] ",
	    WL_ROUNDS);
	CPU_ZERO(&set);
	CPU_SET(cpus[0], &set);
	pthread_setaffinity_np(pthread_self(), sizeof set, &set);
	wl_same = wl_probe(cpus[0]);
	wl_other = wl_probe(cpus[1]);
	pthread_setaffinity_np(pthread_self(), sizeof saved, &saved);
	fprintf(stderr, "%.1f us to another CPU, %.1f us on the same\n",
	    wl_other * 1e6, wl_same * 1e6);
}

/* ------------------------------------------------------------------ */
/* Statistics: a series of runs. */

#define NV (MAXRUNS > W5B_ROUNDS ? MAXRUNS : W5B_ROUNDS)
struct ser {
	int n;
	double v[NV];
};
enum { Q_MIN, Q_MED, Q_MAX, Q_LAST };
static struct ser glob[NMET]; /* the "-" rows of the current workload */

static void
put(struct ser *s, double x)
{
	if (s->n < NV)
		s->v[s->n++] = x;
}

/* A series' minimum, median, maximum or last value; -1 if it is empty. */
static double
stat(const struct ser *s, int q)
{
	double c[NV];
	int n = s->n;

	if (n == 0 || q == Q_LAST)
		return n == 0 ? -1 : s->v[n - 1];
	memcpy(c, s->v, (size_t)n * sizeof c[0]);
	qsort(c, (size_t)n, sizeof c[0], cmp_double);
	if (q != Q_MED)
		return c[q == Q_MIN ? 0 : n - 1];
	return n % 2 ? c[n / 2] : (c[n / 2 - 1] + c[n / 2]) / 2;
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
	put(&glob[3], sleep_1ms);
	tv[0] = sleep_1ms * 1e3;
	tv[1] = W3_THREADS * sleep_1ms;
	fprintf(stderr, "mean %.3f ms\n", sleep_1ms * 1e3);
}

/* W4's useful work: each side's operations costed at its rate alone. */
static void
w4_finish(struct ser *s)
{
	for (int r = 0; r < s[1].n; r++)
		put(&s[0],
		    s[1].v[r] / stat(&s[3], Q_MED) +
		        s[2].v[r] / stat(&glob[4], Q_MED));
	tv[0] = ncpus < 2 ? 1 : 2;
	tv[1] = stat(&glob[4], Q_MED) / 1e3;
}

/* ------------------------------------------------------------------ */
/* The workloads. */

/* A step of a run: its threads (n, else the cell's count) with their roles
 * (R0: all role 0, HALVES: the second half role 1, R1: all role 1), the
 * body per lock kind; its progress line: after the workload's name, count
 * (else "N threads"), the lock, suffix, and when done pfmt of the metrics
 * pm[].  A global step runs before the cells, for the "-" rows. */
enum { R0, HALVES, R1 };
struct step {
	void *(*const *fn)(void *);
	int n, roles;
	const char *count, *suffix, *pfmt;
	int pm[3];
	bool global;
};

/* A metric: CSV name and unit, its value for a run of its step (step -1:
 * put by prepare() or finish()) v[num] / v[den] * scale (0: 1), and pscale
 * (0: 1) in the progress line.  M_GLOBAL: one series, a CSV row with lock
 * "-" and 1 thread; thr: the CSV's threads if not the cell's count. */
enum { M_NORATIO = 1, M_GLOBAL = 2 };
struct metric {
	const char *name, *unit;
	int num, den;
	double pscale, scale;
	int step, flags, thr;
};

/* A column: header and width, and what of metric m it shows (the median,
 * with "%" for C_PCT; the best; min..max of the runs; C_PAIR: the medians
 * of m and m + 1 as lo..hi; the ratio to pthread), scaled, dec decimals. */
enum { C_MED, C_BEST, C_PCT, C_RANGE, C_PAIR, C_RATIO };
struct col {
	const char *head;
	int w, what, m;
	double scale;
	int dec;
};

/* A condition of a target: on the pl row, metric m's ratio to pthread (or
 * with value its median) is at most (le) or at least bound.  fmt prints
 * the bound in the table and CSV (NULL: the previous one says it); the
 * summary gives label and the figure, with dec decimals and unit. */
struct clause {
	int m;
	bool value, le;
	double bound;
	const char *fmt, *label, *unit;
	int dec;
};

struct tlist {
	int n, v[MAXTC];
};
static struct tlist tl2 = { 4, { 2, 4, 8, 32 } }, tl6 = { 4, { 2, 4, 8, 16 } };

/* A workload: cells of thread counts (tl, a column of the table, or n) by
 * lock kinds (kname: NLK, or 2), each cell runs runs (or rounds) of its
 * steps through run(); title is a format of runs, tv[0] and tv[1].  A run
 * costs cost[0] + cost[1] x -d seconds and prepare() prep seconds. */
enum { F_TIMED = 1, F_BEST = 2, F_SPIN_NAMED = 4, F_WAKE = 8 };
struct workload {
	const char *name, *title;
	struct tlist *tl;
	int n;
	const char *const *kname;
	int flags, tgtw; /* F_*; the width of the target column */
	double cost[2];
	void (*run)(struct run *);
	struct step step[3];
	struct metric m[NMET];
	struct col col[8];
	struct clause tgt[3];
	int rounds;
	double prep;
	void (*prepare)(void), (*finish)(struct ser *);
};

/* The tables leave the trailing fields of their entries zero. */
#pragma GCC diagnostic ignored "-Wmissing-field-initializers"
static struct workload work[] = {
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
	    { { w2_body_fn, 0, R0, NULL, "", "%.2f Mops/s, %.3f CPU s/Mop",
	        { 0, 3 } } },
	    { { "throughput", "ops/s", R_OPS, R_EL, 1e-6 },
	        { "thread_min", "ops/s", R_LO, R_EL, 0, 0, 0, M_NORATIO },
	        { "thread_max", "ops/s", R_HI, R_EL, 0, 0, 0, M_NORATIO },
	        { "cpu_per_mop", "s", R_CPU, R_OPS, 1, 1e6 } },
	    { { "Mops/s", 8, C_MED, 0, 1e-6, 2 },
	        { "min..max", 14, C_RANGE, 0, 1e-6, 2 },
	        { "thread kops/s", 16, C_PAIR, 1, 1e-3, 0 },
	        { "CPU s/Mop", 9, C_MED, 3, 1, 3 }, { "ratio", 7, C_RATIO, 0 },
	        { "CPU ratio", 9, C_RATIO, 3 } },
	    { { 0, false, false, 1.70, ">=%.2fx", "throughput", "x", 2 },
	        { 3, false, true, 0.70, "CPU <=%.2fx", "CPU/op", "x", 2 } } },
	{ "W3",
	    "W3 long holds: " S_W3_THREADS " threads each lock once and sleep "
	    "1 ms inside; a 1 ms sleep measured %2$.3f ms, so ideal = %3$.3f "
	    "s; elapsed/ideal (1.00 is ideal) and CPU seconds, median of %1$d "
	    "runs",
	    NULL, W3_THREADS, lk_name, F_SPIN_NAMED | F_WAKE, 26, { 0.38, 0 },
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
	        { 2, false, true, 1.00, "CPU<=%.2fx", "CPU", "x", 2 } },
	    .prep = 0.11, .prepare = w3_prepare },
	{ "W4",
	    "W4 useful work: 2 threads run the W2 loop while 2 threads do "
	    "units of " S_YIELD_WORK " xorshift steps + sched_yield; each "
	    "side's operations costed at one thread's rate alone on a CPU: "
	    "useful = lock rate / lock-alone rate + yield rate / yield-alone "
	    "rate, in CPUs (max %2$.2f); yield thread alone: %3$.1f kunits/s; "
	    "median of %1$d runs",
	    NULL, 4, lk_name, F_TIMED, 23, { 0.01, 1 }, one_run,
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
	    { { 0, false, false, 2.0, ">=%.2fx", "useful work", "x", 2 },
	        { 2, false, false, 1.0, "yield >=%.2fx", "yielders' rate", "x",
	            2 } },
	    .finish = w4_finish },
	{ "W5a",
	    "W5a producer/consumer: 2 producers + 2 consumers, queue "
	    "of " S_W5_CAP "; Mitems/s, median of %d runs",
	    NULL, 4, cv_name, F_TIMED, 8, { 0.01, 1 }, w5a_run,
	    { { w5a_body_fn, 0, HALVES, "2+2 threads", "", "%.3f Mitems/s" } },
	    { { "throughput", "items/s", R_OPS1, R_EL, 1e-6 } },
	    { { "Mitems/s", 9, C_MED, 0, 1e-6, 3 },
	        { "min..max", 14, C_RANGE, 0, 1e-6, 3 },
	        { "ratio", 7, C_RATIO, 0 } },
	    { { 0, false, false, 1.50, ">=%.2fx", "producer/consumer", "x",
	        2 } } },
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
	    .rounds = W5B_ROUNDS },
	{ "W6",
	    "W6 reader-writer: equal readers and writers, short critical "
	    "sections; total Mops/s (median of %d runs, min..max), read and "
	    "write shares of the total",
	    &tl6, 0, rw_name, F_TIMED, 26, { 0.01, 1 }, w6_run,
	    { { w6_body_fn, 0, HALVES, NULL, "",
	        "%.2f Mops/s, reads %.1f%%, writes %.1f%%", { 0, 1, 2 } } },
	    { { "throughput", "ops/s", R_OPS, R_EL, 1e-6 },
	        { "read_share", "%", R_OPS0, R_OPS, 1, 100, 0, M_NORATIO },
	        { "write_share", "%", R_OPS1, R_OPS, 1, 100, 0, M_NORATIO } },
	    { { "Mops/s", 8, C_MED, 0, 1e-6, 2 },
	        { "min..max", 14, C_RANGE, 0, 1e-6, 2 },
	        { "reads", 7, C_PCT, 1, 1, 1 }, { "writes", 7, C_PCT, 2, 1, 1 },
	        { "ratio", 7, C_RATIO, 0 } },
	    { { 0, false, false, 1.50, ">=%.2fx", "throughput", "x", 2 },
	        { 1, true, false, 25, "each share >=%.0f%%", "reads", "%", 1 },
	        { 2, true, false, 25, NULL, "writes", "%", 1 } } },
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
	            0 } } },
};
#define NWORK (int)(sizeof work / sizeof work[0])
#define W6 6 /* its index in work[], for -t */

/* ------------------------------------------------------------------ */
/* The runner. */

static unsigned lk_mask = (1u << NLK) - 1;
static bool lk_explicit, w_sel[NWORK];   /* -l given; -w */
static struct ser res[MAXTC][NLK][NMET]; /* the current workload's cells */
static FILE *csv;
static struct {
	char what[200];
	bool met;
} targets[64];
static int ntargets;

/* The cells of a workload (its -t list, else one), and the threads of
 * cell c. */
static int
ncells(const struct workload *w)
{
	return w->tl ? w->tl->n : 1;
}

static int
cell_threads(const struct workload *w, int c)
{
	return w->tl ? w->tl->v[c] : w->n;
}

static bool
kind_on(const struct workload *w, int k)
{
	return (lk_mask >> k & 1) && k < (w->kname == lk_name ? NLK : 2) &&
	    (k != LK_SPIN || !(w->flags & F_SPIN_NAMED) || lk_explicit);
}

/* The ratio to pthread of metric m in cell c: of the medians, or bests. */
static double
mratio(const struct workload *w, const struct ser *s, int m, int c)
{
	int q = w->flags & F_BEST ? Q_MIN : Q_MED;
	double a = stat(&s[m], q), b = stat(&res[c][LK_PT][m], q);
	return a >= 0 && b > 0 ? a / b : -1;
}

/* One run of step st (run r of nrun) with n threads and lock kind k: its
 * progress line, and its figures put into s[]. */
static void
run_step(const struct workload *w, int st, int k, int n, int r, int nrun,
    struct ser *s)
{
	const struct step *p = &w->step[st];
	struct run R = { .k = k, .n = p->n ? p->n : n, .fn = p->fn[k] };
	const struct metric *m;
	char cnt[32];
	double f[3];

	R.timed = w->flags & F_TIMED;
	R.v[R_ONE] = 1;
	R.v[R_IDEAL] = W3_THREADS * sleep_1ms;
	R.v[R_BYTES] = (double)lk_size(k);
	snprintf(cnt, sizeof cnt, "%d threads", R.n);
	snprintf(who, sizeof who, "%s %s%s%s%s", w->name,
	    p->count ? p->count : cnt, p->global ? "" : " ",
	    p->global ? "" : w->kname[k], p->suffix);
	if (!w->rounds)
		fprintf(stderr, "[%s run %d/%d] ", who, r + 1, nrun);
	else if (r == 0)
		fprintf(stderr, "[%s] ", who);
	if ((R.t = calloc((size_t)R.n, sizeof *R.t)) == NULL)
		die("calloc", errno);
	for (int i = 0; i < R.n; i++)
		R.t[i].role =
		    p->roles == R1 || (p->roles == HALVES && i >= R.n / 2);
	w->run(&R);
	free(R.t);
	for (m = w->m; m < w->m + NMET && m->name; m++) {
		double d = R.v[m->den], x = d != 0 ? R.v[m->num] / d : 0;
		if (m->step == st)
			put(&s[m - w->m], x * (m->scale ? m->scale : 1));
	}
	if (w->rounds && r + 1 < nrun)
		return;
	for (int i = 0; i < 3; i++) {
		m = &w->m[p->pm[i]];
		f[i] = stat(&s[p->pm[i]], w->rounds ? Q_MED : Q_LAST) *
		    (m->pscale ? m->pscale : 1);
	}
	fprintf(stderr, p->pfmt, f[0], f[1], f[2]);
	fprintf(stderr, "\n");
}

/* Append to a table row, a target or its summary line. */
static void
cat(char *row, const char *fmt, ...)
{
	size_t len = strlen(row);
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(row + len, 200 - len, fmt, ap);
	va_end(ap);
}

/* The CSV row of metric m in cell c for lock kind k (-1: the row of a
 * global metric): workload,threads,lock,metric,unit,median,min,max,ratio,
 * target,result (ratio, target and result empty where they do not apply). */
static void
csv_row(const struct workload *w, int m, int c, int k, const char *target,
    const char *result)
{
	const struct metric *mt = &w->m[m];
	const struct ser *s = k < 0 ? &glob[m] : &res[c][k][m];
	int n = k < 0 ? 1 : mt->thr ? mt->thr : cell_threads(w, c);

	if (csv == NULL || s->n == 0)
		return;
	fprintf(csv, "%s,%d,%s,%s,%s,%.6g,%.6g,%.6g,", w->name, n,
	    k < 0 ? "-" : w->kname[k], mt->name, mt->unit, stat(s, Q_MED),
	    stat(s, Q_MIN), stat(s, Q_MAX));
	if (k >= 0 && !(mt->flags & M_NORATIO) && mratio(w, s - m, m, c) >= 0)
		fprintf(csv, "%.4g", mratio(w, s - m, m, c));
	/* The targets contain commas: quote them (RFC 4180). */
	fprintf(csv, ",%s%s%s,%s\n", target ? "\"" : "", target ? target : "",
	    target ? "\"" : "", result ? result : "");
}

/* The target of the pl row of cell c (n threads): its text into tg and
 * "met" or "missed", recorded for the summary; NULL without pthread. */
static const char *
judge(const struct workload *w, const struct ser *s, int c, int n, char *tg)
{
	char *line = targets[ntargets].what;
	bool met = true;

	if (ntargets == 64)
		return NULL;
	snprintf(line, 200, "%s", w->name);
	if (w->tl)
		cat(line, " %d threads", n);
	for (const struct clause *cl = w->tgt; cl < w->tgt + 3 && cl->label;
	     cl++) {
		double v =
		    cl->value ? stat(&s[cl->m], Q_MED) : mratio(w, s, cl->m, c);
		if (v < 0)
			return NULL;
		met &= cl->le ? v <= cl->bound : v >= cl->bound;
		cat(line, "%s %s %.*f%s", cl > w->tgt ? "," : ":", cl->label,
		    cl->dec, v, cl->unit);
		if (cl->fmt != NULL && tg[0] != '\0')
			cat(tg, ", ");
		if (cl->fmt != NULL)
			cat(tg, cl->fmt, cl->bound);
	}
	cat(line, " (%s)", tg);
	targets[ntargets++].met = met;
	return met ? "met" : "missed";
}

/* The text of column cl for the series s of cell c. */
static const char *
cell(char *b, const struct workload *w, const struct col *cl,
    const struct ser *s, int c)
{
	const struct ser *x = &s[cl->m];
	double f = cl->scale, r = mratio(w, s, cl->m, c);
	bool pair = cl->what == C_PAIR;

	if (cl->what == C_RATIO && r < 0)
		return "-";
	if (cl->what == C_RATIO)
		snprintf(b, 64, "%.2fx", r);
	else if (cl->what == C_RANGE || pair)
		snprintf(b, 64, "%.*f..%.*f", cl->dec,
		    stat(x, pair ? Q_MED : Q_MIN) * f, cl->dec,
		    stat(x + pair, pair ? Q_MED : Q_MAX) * f);
	else
		snprintf(b, 64, cl->what == C_PCT ? "%.*f%%" : "%.*f", cl->dec,
		    stat(x, cl->what == C_BEST ? Q_MIN : Q_MED) * f);
	return b;
}

/* The title, notes and table of a workload (the header as row k -1 of the
 * first cell), and its CSV rows. */
static void
print_table(const struct workload *w)
{
	char row[200], b[64], tg[200];
	int lockw = w->kname == cv_name ? 20 : 18;

	printf("\n");
	printf(w->title, runs, tv[0], tv[1]);
	printf("\n");
	if (w->flags & F_WAKE && wl_same >= 0 && wl_other >= 0)
		printf("(a FUTEX_WAKE gets a thread asleep on another, idle, "
		       "CPU running in %.1f us, one on the waker's CPU in "
		       "%.1f us: medians of %d)\n",
		    wl_other * 1e6, wl_same * 1e6, WL_ROUNDS);
	if (w->flags & F_SPIN_NAMED && lk_mask >> LK_SPIN & 1 && !lk_explicit)
		printf("(spinlock left out unless named with -l: 300 spinning "
		       "threads take some 20x the ideal)\n");
	if ((lk_mask & 3) != 3) /* LK_PL and LK_PT */
		printf("(pl or pthread not selected with -l: no ratios, no "
		       "targets)\n");
	for (int c = 0; c < ncells(w); c++) {
		int n = cell_threads(w, c);
		if (c > 0)
			printf("\n");
		for (int k = c ? 0 : -1; k < NLK; k++) {
			const struct ser *s = res[c][k < 0 ? 0 : k];
			const char *result = k < 0 ? "result" : NULL;
			if (k >= 0 && !kind_on(w, k))
				continue;
			strcpy(tg, k < 0 ? "target" : "");
			if (k == LK_PL)
				result = judge(w, s, c, n, tg);
			row[0] = '\0';
			if (w->tl && k < 0)
				cat(row, "%4s ", "thr");
			else if (w->tl)
				cat(row, "%4d ", n);
			cat(row, "%-*s", lockw, k < 0 ? "lock" : w->kname[k]);
			for (const struct col *cl = w->col;
			     cl < w->col + 8 && cl->head; cl++)
				cat(row, " %*s", cl->w,
				    k < 0 ? cl->head : cell(b, w, cl, s, c));
			cat(row, "  %-*s %s", w->tgtw, result ? tg : "",
			    result ? result : "");
			for (size_t l = strlen(row);
			     l > 0 && row[l - 1] == ' ';)
				row[--l] = '\0';
			puts(row);
			for (int m = 0; k >= 0 && m < NMET && w->m[m].name; m++)
				if (!(w->m[m].flags & M_GLOBAL))
					csv_row(w, m, c, k,
					    m == 0 && result ? tg : NULL,
					    m == 0 ? result : NULL);
		}
	}
	for (int m = 0; m < NMET && w->m[m].name; m++)
		if (w->m[m].flags & M_GLOBAL)
			csv_row(w, m, 0, -1, NULL, NULL);
	fflush(stdout);
}

/* The expected duration of a workload in seconds. */
static double
expected(const struct workload *w)
{
	double run = w->cost[0] + w->cost[1] * secs, e = w->prep;
	int nst = 0;

	for (int st = 0; st < 3 && w->step[st].fn; st++)
		if (w->step[st].global)
			e += runs * run;
		else
			nst++;
	for (int k = 0; k < NLK; k++)
		if (kind_on(w, k))
			e += ncells(w) * (w->rounds ? w->rounds : runs) * nst *
			    (k == LK_SPIN && w->flags & F_SPIN_NAMED ? 7.0
			                                             : run);
	return e;
}

/* Run a workload: its set-up and global steps, then for each cell (thread
 * count and lock kind) its runs of its steps; then its table. */
static void
run_workload(const struct workload *w)
{
	int nrun = w->rounds ? w->rounds : runs;

	memset(res, 0, sizeof res);
	memset(glob, 0, sizeof glob);
	if (w->flags & F_WAKE)
		measure_wake_latency();
	if (w->prepare)
		w->prepare();
	for (int st = 0; st < 3 && w->step[st].fn; st++)
		for (int r = 0; w->step[st].global && r < runs; r++)
			run_step(w, st, LK_PL, 1, r, runs, glob);
	for (int c = 0; c < ncells(w); c++)
		for (int k = 0; k < NLK; k++) {
			for (int r = 0; kind_on(w, k) && r < nrun; r++)
				for (int st = 0; st < 3 && w->step[st].fn; st++)
					if (!w->step[st].global)
						run_step(w, st, k,
						    cell_threads(w, c), r, nrun,
						    res[c][k]);
			if (kind_on(w, k) && w->finish)
				w->finish(res[c][k]);
		}
	print_table(w);
}

/* ------------------------------------------------------------------ */
/* Options, set-up, plot. */

/* Parse a list of -w, -t (into tl) or -l items separated by commas or
 * blanks; false if one is bad. */
static bool
parse_list(int opt, const char *arg, struct tlist *tl)
{
	char *copy = strdup(arg), *save = NULL, *tok, *end;
	bool ok = true;

	for (tok = strtok_r(copy, ", ", &save); ok && tok != NULL;
	     tok = strtok_r(NULL, ", ", &save)) {
		const char *p = tok + (tok[0] == 'W' || tok[0] == 'w');
		long v = strtol(tok, &end, 10);
		ok = opt == 't' && *end == '\0' && v >= 1 && v <= MAXTHREADS &&
		    tl->n < MAXTC;
		if (ok)
			tl->v[tl->n++] = (int)v;
		for (int i = 0; opt == 'w' && i < NWORK; i++) /* W5: both */
			if (strcasecmp(work[i].name + 1, p) == 0 ||
			    (p[0] == work[i].name[1] && p[1] == '\0'))
				ok = w_sel[i] = true;
		for (int k = 0; opt == 'l' && k < NLK; k++)
			if (strcmp(tok, lk_opt[k]) == 0 ||
			    strcmp(tok, lk_name[k]) == 0) {
				lk_mask |= 1u << k;
				ok = true;
			}
	}
	free(copy);
	return ok;
}

static void
usage(FILE *f, const char *argv0)
{
	fprintf(f,
	    "usage: %s [-w LIST] [-t LIST] [-l LIST] [-d SECONDS] [-r RUNS]\n"
	    "       [-o FILE.csv] [--plot FILE.png]\n"
	    "Measures libparkinglot against glibc's locks; prints a table per\n"
	    "workload with the ratio pl/pthread of the medians and the "
	    "target.\n"
	    "  -w LIST     workloads: W1..W7, W5a, W5b (default: all)\n"
	    "  -t LIST     thread counts for W2 and W6 (default W2 2,4,8,32;\n"
	    "              W6 2,4,8,16; W6 takes only the even ones)\n"
	    "  -l LIST     locks: pl,pthread,adaptive,spin (default: all, but\n"
	    "              W3 runs spin only if -l names it; W5 and W6 use pl\n"
	    "              and pthread only)\n"
	    "  -d SECONDS  duration of each run (default %.1f)\n"
	    "  -r RUNS     runs per cell, median and min..max (default %d)\n"
	    "  -o FILE     also write every figure as CSV\n"
	    "  -n          print the header and expected duration, run "
	    "nothing\n"
	    "  --plot PNG  draw W2 and W6 throughput against threads with\n"
	    "              tools/lockbench-plot.sh (gnuplot; $LOCKBENCH_PLOT\n"
	    "              names another script)\n"
	    "  -h          this help\n",
	    argv0, DEFAULT_SECS, DEFAULT_RUNS);
}

/* Draw the chart with the plot script: $LOCKBENCH_PLOT, else the one next
 * to this program. */
static void
plot(const char *csvpath, const char *png)
{
	char script[4096] = "lockbench-plot.sh", exe[4096];
	const char *env = getenv("LOCKBENCH_PLOT");
	ssize_t len = readlink("/proc/self/exe", exe, sizeof exe - 1);
	char *slash = len > 0 ? (exe[len] = '\0', strrchr(exe, '/')) : NULL;
	int status;
	pid_t pid;

	if (env != NULL && *env != '\0')
		snprintf(script, sizeof script, "%s", env);
	else if (slash != NULL)
		snprintf(script, sizeof script, "%.*s/lockbench-plot.sh",
		    (int)(slash - exe), exe);
	if (access(script, R_OK) != 0) {
		fprintf(stderr,
		    "lockbench: no plot script %s (set LOCKBENCH_PLOT); no "
		    "chart drawn\n",
		    script);
		return;
	}
	fflush(NULL);
	if ((pid = fork()) == 0) {
		execl("/bin/sh", "sh", script, csvpath, png, (char *)NULL);
		_exit(127);
	}
	while (pid > 0 && waitpid(pid, &status, 0) < 0 && errno == EINTR)
		;
	if (pid < 0 || !WIFEXITED(status) || WEXITSTATUS(status) != 0)
		fprintf(
		    stderr, "lockbench: %s failed; no chart drawn\n", script);
}

/* The machine: CPU model, CPUs, glibc, libparkinglot, kernel. */
static void
machine(char *out, size_t len)
{
	char line[512], *model = "unknown CPU", *colon;
	FILE *f = fopen("/proc/cpuinfo", "r");
	struct utsname un;

	while (f != NULL && fgets(line, sizeof line, f) != NULL)
		if (strncmp(line, "model name", 10) == 0 &&
		    (colon = strchr(line, ':')) != NULL) {
			model = colon + 1 + strspn(colon + 1, " \t");
			model[strcspn(model, "\n")] = '\0';
			break;
		}
	uname(&un);
	snprintf(out, len,
	    "%s, %d CPUs, glibc %s, libparkinglot %s, Linux %s %s", model,
	    ncpus, gnu_get_libc_version(), pl_version(), un.release,
	    un.machine);
	if (f != NULL)
		fclose(f);
}

int
main(int argc, char **argv)
{
	static const struct option longopts[] = {
		{ "plot", required_argument, NULL, 'P' },
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 },
	};
	const char *csvpath = NULL, *png = NULL;
	char mach[512], tuning[80], dur[32], tmpcsv[64] = "", *end;
	bool any = false, t_given = false, dry_run = false;
	struct pl_tuning tun;
	cpu_set_t set;
	int opt, est, met = 0;
	double e = 0, t0;

	while ((opt = getopt_long(
	            argc, argv, "w:t:l:d:r:o:nh", longopts, NULL)) != -1) {
		bool bad = false;
		switch (opt) {
		case 'w':
			bad = !parse_list(opt, optarg, NULL);
			break;
		case 't':
			tl2.n = 0;
			t_given = true;
			bad = !parse_list(opt, optarg, &tl2) || tl2.n == 0;
			break;
		case 'l':
			lk_mask = 0;
			lk_explicit = true;
			bad = !parse_list(opt, optarg, NULL) || lk_mask == 0;
			break;
		case 'd':
			secs = strtod(optarg, &end);
			bad = *end != '\0' || !(secs >= 0.01 && secs <= 3600);
			break;
		case 'r':
			runs = (int)strtol(optarg, &end, 10);
			bad = *end != '\0' || runs < 1 || runs > MAXRUNS;
			break;
		case 'o':
			csvpath = optarg;
			break;
		case 'n':
			dry_run = true;
			break;
		case 'P':
			png = optarg;
			break;
		default:
			usage(opt == 'h' ? stdout : stderr, argv[0]);
			return opt == 'h' ? 0 : 2;
		}
		if (bad && opt == 't')
			fprintf(stderr,
			    "lockbench: bad -t %s (1..%d threads, at most %d "
			    "counts)\n",
			    optarg, MAXTHREADS, MAXTC);
		else if (bad)
			fprintf(stderr, "lockbench: bad -%c %s%s\n", opt,
			    optarg, opt == 'r' ? " (1.." STR(MAXRUNS) ")" : "");
		if (bad)
			return 2;
	}
	if (optind != argc) {
		usage(stderr, argv[0]);
		return 2;
	}
	for (int i = 0; i < NWORK; i++)
		any |= w_sel[i];
	for (int i = 0; i < NWORK; i++)
		w_sel[i] |= !any;
	if (t_given) { /* W6 takes the even counts: equal readers, writers */
		tl6.n = 0;
		for (int c = 0; c < tl2.n; c++)
			if (tl2.v[c] % 2 == 0)
				tl6.v[tl6.n++] = tl2.v[c];
		if (w_sel[W6] && tl6.n < tl2.n)
			fprintf(stderr,
			    "lockbench: W6 %s odd thread counts (equal readers "
			    "and writers)\n",
			    tl6.n == 0 ? "skipped: it takes no" : "leaves out");
		w_sel[W6] &= tl6.n > 0;
	}

	if (sched_getaffinity(0, sizeof set, &set) == 0)
		for (int c = 0; c < CPU_SETSIZE; c++)
			if (CPU_ISSET(c, &set))
				cpus[ncpus++] = c;
	pthread_mutexattr_init(&adaptive_attr);
	pthread_mutexattr_settype(&adaptive_attr, PTHREAD_MUTEX_ADAPTIVE_NP);
	if (dry_run)
		csvpath = png = NULL;
	if (csvpath == NULL && png != NULL) {
		int fd;
		snprintf(tmpcsv, sizeof tmpcsv, "/tmp/lockbench-XXXXXX.csv");
		if ((fd = mkstemps(tmpcsv, 4)) < 0)
			die("mkstemps", errno);
		close(fd);
		csvpath = tmpcsv;
	}
	if (csvpath != NULL && (csv = fopen(csvpath, "w")) == NULL)
		die(csvpath, errno);

	machine(mach, sizeof mach);
	pl_tuning_get(&tun);
	snprintf(tuning, sizeof tuning, "spin %u, yield %u, fairness %u us",
	    tun.spin_limit, tun.yield_limit, tun.fair_interval_us);
	for (int i = 0; i < NWORK; i++)
		e += w_sel[i] ? expected(&work[i]) : 0;
	est = (int)(e + 0.5);
	snprintf(dur, sizeof dur, "%d min %02d s", est / 60, est % 60);
	printf("lockbench: libparkinglot against glibc, ratios pl/pthread of "
	       "medians\nmachine: %s\npl tuning: %s\n%d runs per cell of "
	       "%.2f s each, fresh threads per run, thread i on CPU i mod %d; "
	       "expected duration %s\n",
	    mach, tuning, runs, secs, ncpus, dur);
	fflush(stdout);
	fprintf(stderr, "lockbench: expected duration %s\n", dur);
	if (dry_run)
		return 0;
	if (csv != NULL)
		fprintf(csv,
		    "# machine: %s; pl tuning: %s; %d runs of %.2f s\n"
		    "workload,threads,lock,metric,unit,median,min,max,ratio,"
		    "target,result\n",
		    mach, tuning, runs, secs);

	t0 = now();
	for (int i = 0; i < NWORK; i++)
		if (w_sel[i])
			run_workload(&work[i]);
	printf("\nTargets (pl against glibc in this run):\n");
	for (int i = 0; i < ntargets; i++) {
		printf("  %-6s  %s\n", targets[i].met ? "met" : "MISSED",
		    targets[i].what);
		met += targets[i].met;
	}
	printf(
	    "%d of %d targets met; took %.0f s.\n", met, ntargets, now() - t0);
	fflush(stdout);
	if (csv != NULL && fclose(csv) != 0)
		die(csvpath, errno);
	if (csv != NULL && png == NULL)
		fprintf(stderr, "lockbench: CSV in %s\n", csvpath);
	if (png != NULL)
		plot(csvpath, png);
	if (tmpcsv[0] != '\0')
		unlink(tmpcsv);
	return 0;
}
