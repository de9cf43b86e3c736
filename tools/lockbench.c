/* SPDX-License-Identifier: MIT */
/*
 * lockbench: libparkinglot's primitives against glibc's, in one run.
 *
 * The workloads of the speed issue, W1..W7; each prints a table with the
 * median and min..max of its runs, the ratio pl/pthread of the medians
 * and, on the pl row, the target and whether it was met:
 *
 *   W1  uncontended: one thread, ns per lock+unlock pair (best of runs).
 *   W2  contended short critical section: 2, 4, 8, 32 threads increment a
 *       shared counter inside the lock and do 0..63 xorshift steps outside;
 *       total ops/s, per-thread min/max, CPU seconds per million ops.
 *   W3  long holds: 300 threads each take the lock once and sleep 1 ms
 *       inside; elapsed / (300 x the measured duration of a 1 ms sleep),
 *       and CPU seconds.
 *   W4  useful work: 2 threads run the W2 loop while 2 threads do units of
 *       work (1000 xorshift steps) and sched_yield; each side's rate, and
 *       useful work = each side's operations costed at its speed when run
 *       alone (2 threads on the 2 CPUs), in CPUs: 2 x (lock rate / lock
 *       side's alone rate + yield rate / yield side's alone rate), at most
 *       2.0 on 2 CPUs when the alone runs used both CPUs fully.
 *   W5  condition variables: (a) 2 producers and 2 consumers on a bounded
 *       queue of 16 (signal under the mutex), items/s; (b) 64 fresh
 *       threads wait on one condition variable; once all are registered
 *       (a count under the mutex; for pl also pl_unpark_filter counting
 *       the queue) and asleep (state S in /proc), the main thread locks,
 *       broadcasts, unlocks: the time until the last waiter released the
 *       mutex, and the waiters' context switches from just before their
 *       wait to just after their release (getrusage(RUSAGE_THREAD),
 *       voluntary + involuntary, summed: one sleep each, 64, is ideal);
 *       the waiters exit only after the last one's release; median of 20
 *       broadcasts.
 *   W6  reader-writer: equal readers and writers (2, 4, 8, 16 threads),
 *       short critical sections; total ops/s, read and write shares.
 *   W7  many locks: 4 threads lock random entries of an array of 100,000
 *       locks; ops/s and bytes per lock.
 *
 * The locks: pl_mutex_t, pthread_mutex_t (default attributes and
 * PTHREAD_MUTEX_ADAPTIVE_NP) and a test-and-test-and-set spinlock with
 * pause; for W5 pl_cond_t+pl_mutex_t and pthread_cond_t+pthread_mutex_t;
 * for W6 pl_rwlock_t and pthread_rwlock_t (default attributes).
 *
 * CPU seconds are each worker's CLOCK_THREAD_CPUTIME_ID from the start
 * barrier to its end, summed.  W3 leaves the spinlock out unless -l names
 * it (300 spinning threads take some 20 times the ideal).
 *
 * Conventions as in tools/lockdemo.c: thread i is pinned to the i-th CPU
 * of the affinity mask (modulo their number), every run starts fresh
 * threads, every cell is several short runs.  A progress line per run goes
 * to stderr; -o writes every figure as CSV; --plot draws W2 and W6 with
 * tools/lockbench-plot.sh (gnuplot).  Exit status: 0; 1 if a check found a
 * lock letting two threads in or losing an item; 2 for usage and system
 * errors.  Missed targets do not change the exit status.
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
#include <sys/resource.h>
#include <sys/syscall.h>
#include <sys/types.h>
#include <sys/utsname.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <parkinglot.h>

#define ALWAYS_INLINE inline __attribute__((always_inline))

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

/* ------------------------------------------------------------------ */
/* Locks. */

enum { LK_PL, LK_PT, LK_AD, LK_SPIN, NLK };
static const char *const lk_name[NLK] = { "pl_mutex", "pthread_mutex",
	"pthread_adaptive", "spinlock" };
static const char *const lk_opt[NLK] = { "pl", "pthread", "adaptive", "spin" };
/* W5 and W6 compare two kinds: 0 is pl, 1 is pthread. */
static const char *const cv_name[2] = { "pl_cond+pl_mutex",
	"pthread_cond+mutex" };
static const char *const rw_name[2] = { "pl_rwlock", "pthread_rwlock" };

typedef union {
	pl_mutex_t pl;
	pthread_mutex_t pt;
	int spin;
} anylock;

static pthread_mutexattr_t adaptive_attr;

static ALWAYS_INLINE void
cpu_relax(void)
{
#if defined(__x86_64__) || defined(__i386__)
	__builtin_ia32_pause();
#elif defined(__aarch64__) || defined(__arm__)
	__asm__ __volatile__("yield" ::: "memory");
#else
	__asm__ __volatile__("" ::: "memory");
#endif
}

/* The plain test-and-test-and-set spinlock: exchange, and while that
 * fails, spin on loads with pause until the lock looks free. */
static ALWAYS_INLINE void
spin_lock(int *l)
{
	while (__atomic_exchange_n(l, 1, __ATOMIC_ACQUIRE))
		while (__atomic_load_n(l, __ATOMIC_RELAXED))
			cpu_relax();
}

static ALWAYS_INLINE void
spin_unlock(int *l)
{
	__atomic_store_n(l, 0, __ATOMIC_RELEASE);
}

/* Called with a constant k from the per-kind thread functions below, so
 * that the switch folds away and every lock runs its own tight loop. */
static ALWAYS_INLINE void
lk_lock(int k, void *p)
{
	switch (k) {
	case LK_PL:
		pl_mutex_lock(p);
		break;
	case LK_PT:
	case LK_AD:
		pthread_mutex_lock(p);
		break;
	default:
		spin_lock(p);
		break;
	}
}

static ALWAYS_INLINE void
lk_unlock(int k, void *p)
{
	switch (k) {
	case LK_PL:
		pl_mutex_unlock(p);
		break;
	case LK_PT:
	case LK_AD:
		pthread_mutex_unlock(p);
		break;
	default:
		spin_unlock(p);
		break;
	}
}

static ALWAYS_INLINE size_t
lk_size(int k)
{
	switch (k) {
	case LK_PL:
		return sizeof(pl_mutex_t);
	case LK_PT:
	case LK_AD:
		return sizeof(pthread_mutex_t);
	default:
		return sizeof(int);
	}
}

static void
lk_init(int k, void *p)
{
	switch (k) {
	case LK_PL:
		pl_mutex_init(p);
		break;
	case LK_PT:
		pthread_mutex_init(p, NULL);
		break;
	case LK_AD:
		pthread_mutex_init(p, &adaptive_attr);
		break;
	default:
		*(int *)p = 0;
		break;
	}
}

static void
lk_destroy(int k, void *p)
{
	if (k == LK_PT || k == LK_AD)
		pthread_mutex_destroy(p);
}

typedef union {
	pl_mutex_t pl;
	pthread_mutex_t pt;
} cmutex;
typedef union {
	pl_cond_t pl;
	pthread_cond_t pt;
} ccond;
typedef union {
	pl_rwlock_t pl;
	pthread_rwlock_t pt;
} crwlock;

static ALWAYS_INLINE void
cm_lock(int k, cmutex *m)
{
	if (k == 0)
		pl_mutex_lock(&m->pl);
	else
		pthread_mutex_lock(&m->pt);
}

static ALWAYS_INLINE void
cm_unlock(int k, cmutex *m)
{
	if (k == 0)
		pl_mutex_unlock(&m->pl);
	else
		pthread_mutex_unlock(&m->pt);
}

static ALWAYS_INLINE void
cc_wait(int k, ccond *c, cmutex *m)
{
	if (k == 0)
		pl_cond_wait(&c->pl, &m->pl);
	else
		pthread_cond_wait(&c->pt, &m->pt);
}

static ALWAYS_INLINE void
cc_signal(int k, ccond *c)
{
	if (k == 0)
		pl_cond_signal(&c->pl);
	else
		pthread_cond_signal(&c->pt);
}

static ALWAYS_INLINE void
cc_broadcast(int k, ccond *c)
{
	if (k == 0)
		pl_cond_broadcast(&c->pl);
	else
		pthread_cond_broadcast(&c->pt);
}

static void
cv_init(int k, cmutex *m, ccond *c1, ccond *c2)
{
	if (k == 0) {
		pl_mutex_init(&m->pl);
		pl_cond_init(&c1->pl);
		if (c2)
			pl_cond_init(&c2->pl);
	} else {
		pthread_mutex_init(&m->pt, NULL);
		pthread_cond_init(&c1->pt, NULL);
		if (c2)
			pthread_cond_init(&c2->pt, NULL);
	}
}

static void
cv_destroy(int k, cmutex *m, ccond *c1, ccond *c2)
{
	if (k == 0)
		return;
	pthread_mutex_destroy(&m->pt);
	pthread_cond_destroy(&c1->pt);
	if (c2)
		pthread_cond_destroy(&c2->pt);
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
	_Alignas(64) cmutex m;
	ccond not_full, not_empty;
	unsigned head, tail, count;
	uint64_t buf[W5_CAP];
} pc; /* W5a */

static struct {
	_Alignas(64) cmutex m;
	ccond c;
	int gen, waiting, done;
	pthread_barrier_t release; /* the waiters exit after the measurement */
} bc;                              /* W5b */

static struct {
	_Alignas(64) crwlock l;
	unsigned long a, b;
} rw; /* W6 */

static struct {
	char *locks;
	uint32_t *counts;
} many; /* W7 */

/* ------------------------------------------------------------------ */
/* Small helpers. */

static double secs = DEFAULT_SECS;
static int runs = DEFAULT_RUNS;
static int ncpus, cpus[CPU_SETSIZE];
static pthread_barrier_t start_barrier;
static double sleep_1ms; /* measured, seconds */

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
	fprintf(stderr, "\nlockbench: CHECK FAILED: ");
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fprintf(stderr, "\n");
	exit(1);
}

static double
now(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

static double
thread_cpu(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

static void
sleep_for(double s)
{
	struct timespec ts = { (time_t)s,
		(long)((s - (double)(time_t)s) * 1e9) };
	while (clock_nanosleep(CLOCK_MONOTONIC, 0, &ts, &ts) == EINTR)
		;
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

static struct thr *
thr_alloc(int n)
{
	struct thr *t = calloc((size_t)n, sizeof *t);
	if (t == NULL)
		die("calloc", errno);
	return t;
}

/* In each thread: wait for the others, then start the CPU clock. */
static double
thr_begin(struct thr *t)
{
	t->os_tid = (pid_t)syscall(SYS_gettid);
	pthread_barrier_wait(&start_barrier);
	return thread_cpu();
}

static void
thr_end(struct thr *t, double cpu0)
{
	t->cpu_s = thread_cpu() - cpu0;
}

/* Start n threads running fn and return the time they were let go. */
static double
start_threads(struct thr *t, int n, void *(*fn)(void *))
{
	pthread_attr_t attr;
	int err;

	__atomic_store_n(&flag.stop, 0, __ATOMIC_RELAXED);
	if ((err = pthread_barrier_init(
	         &start_barrier, NULL, (unsigned)n + 1)) != 0)
		die("pthread_barrier_init", err);
	pthread_attr_init(&attr);
	pthread_attr_setstacksize(&attr, STACK_SIZE);
	for (int i = 0; i < n; i++) {
		t[i].idx = i;
		if (ncpus > 0) {
			cpu_set_t set;
			CPU_ZERO(&set);
			CPU_SET(cpus[i % ncpus], &set);
			pthread_attr_setaffinity_np(&attr, sizeof set, &set);
		}
		if ((err = pthread_create(&t[i].tid, &attr, fn, &t[i])) != 0)
			die("pthread_create", err);
	}
	pthread_attr_destroy(&attr);
	pthread_barrier_wait(&start_barrier);
	return now();
}

static double
join_threads(struct thr *t, int n, bool stop)
{
	if (stop)
		__atomic_store_n(&flag.stop, 1, __ATOMIC_RELAXED);
	for (int i = 0; i < n; i++)
		pthread_join(t[i].tid, NULL);
	pthread_barrier_destroy(&start_barrier);
	return now();
}

/* A run of the configured duration; returns the elapsed seconds. */
static double
timed_run(struct thr *t, int n, void *(*fn)(void *))
{
	double t0 = start_threads(t, n, fn);
	sleep_for(secs);
	return join_threads(t, n, true) - t0;
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
#define KIND2_FNS(body)                                                    \
	static void *body##_pl(void *a) { return body(a, 0); }             \
	static void *body##_pt(void *a) { return body(a, 1); }             \
	static void *(*const body##_fn[2])(void *) = { body##_pl, body##_pt }
/* clang-format on */

/* ------------------------------------------------------------------ */
/* Statistics, output, targets. */

struct ser {
	int n;
	double v[MAXRUNS > W5B_ROUNDS ? MAXRUNS : W5B_ROUNDS];
};

static void
put(struct ser *s, double x)
{
	if (s->n < (int)(sizeof s->v / sizeof s->v[0]))
		s->v[s->n++] = x;
}

static int
cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;
	return (x > y) - (x < y);
}

static double
med(const struct ser *s)
{
	double c[sizeof s->v / sizeof s->v[0]];
	if (s->n == 0)
		return -1;
	memcpy(c, s->v, (size_t)s->n * sizeof c[0]);
	qsort(c, (size_t)s->n, sizeof c[0], cmp_double);
	return s->n % 2 ? c[s->n / 2] : (c[s->n / 2 - 1] + c[s->n / 2]) / 2;
}

static double
smin(const struct ser *s)
{
	double m = s->n ? s->v[0] : -1;
	for (int i = 1; i < s->n; i++)
		m = s->v[i] < m ? s->v[i] : m;
	return m;
}

static double
smax(const struct ser *s)
{
	double m = s->n ? s->v[0] : -1;
	for (int i = 1; i < s->n; i++)
		m = s->v[i] > m ? s->v[i] : m;
	return m;
}

static double
ratio(double a, double b)
{
	return a >= 0 && b > 0 ? a / b : -1;
}

/* "1.23x", or "-" when there is no ratio. */
static const char *
fx(char *buf, double r)
{
	if (r < 0)
		return "-";
	snprintf(buf, 16, "%.2fx", r);
	return buf;
}

/* "lo..hi" of a series scaled by f, with the given decimals. */
static const char *
range(char *buf, size_t len, const struct ser *s, double f, int dec)
{
	if (s->n == 0)
		return "-";
	snprintf(buf, len, "%.*f..%.*f", dec, smin(s) * f, dec, smax(s) * f);
	return buf;
}

static FILE *csv;

/* One CSV row: workload,threads,lock,metric,unit,median,min,max,ratio,
 * target,result (ratio, target and result empty where they do not apply). */
static void
csv_row(const char *w, int thr, const char *lock, const char *metric,
    const char *unit, const struct ser *s, double r, const char *target,
    const char *result)
{
	if (csv == NULL || s->n == 0)
		return;
	fprintf(csv, "%s,%d,%s,%s,%s,%.6g,%.6g,%.6g,", w, thr, lock, metric,
	    unit, med(s), smin(s), smax(s));
	if (r >= 0)
		fprintf(csv, "%.4g", r);
	/* The targets contain commas: quote them (RFC 4180). */
	fprintf(csv, ",%s%s%s,%s\n", target ? "\"" : "", target ? target : "",
	    target ? "\"" : "", result ? result : "");
}

static void
csv_one(const char *w, int thr, const char *lock, const char *metric,
    const char *unit, double v)
{
	struct ser s = { 0 };
	put(&s, v);
	csv_row(w, thr, lock, metric, unit, &s, -1, NULL, NULL);
}

struct target {
	char what[200];
	bool met;
};
static struct target targets[64];
static int ntargets;

/* Record a target's outcome; returns "met" or "missed". */
static const char *
judge(bool met, const char *fmt, ...)
{
	va_list ap;
	if (ntargets < (int)(sizeof targets / sizeof targets[0])) {
		va_start(ap, fmt);
		vsnprintf(
		    targets[ntargets].what, sizeof targets[0].what, fmt, ap);
		va_end(ap);
		targets[ntargets++].met = met;
	}
	return met ? "met" : "missed";
}

static void
progress(const char *fmt, ...)
{
	va_list ap;
	fputc('[', stderr);
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fputs("] ", stderr);
	fflush(stderr);
}

static void
progress_done(const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fputc('\n', stderr);
}

/* printf a table row without the trailing blanks of empty columns. */
static void
prow(const char *fmt, ...)
{
	char buf[512];
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(buf, sizeof buf, fmt, ap);
	va_end(ap);
	size_t n = strlen(buf);
	while (n > 0 && (buf[n - 1] == ' ' || buf[n - 1] == '\n'))
		buf[--n] = '\0';
	puts(buf);
}

/* ------------------------------------------------------------------ */
/* Selection. */

static unsigned lk_mask = (1u << NLK) - 1;
static bool lk_explicit; /* -l given */
static bool w_sel[8];    /* W1..W7; W5 is w5a || w5b */
static bool w5a = true, w5b = true;
static int tc2[MAXTC] = { 2, 4, 8, 32 }, ntc2 = 4;
static int tc6[MAXTC] = { 2, 4, 8, 16 }, ntc6 = 4;

static bool
lk_on(int k)
{
	return (lk_mask >> k) & 1;
}

/* W3 leaves the spinlock out unless -l names it: 300 threads spinning
 * while the holder sleeps take some 20 times the ideal (7 s a run). */
static bool
w3_on(int k)
{
	return lk_on(k) && (k != LK_SPIN || lk_explicit);
}

/* W5 and W6: kind 0 is pl (selected with "pl"), 1 is pthread. */
static bool
k2_on(int k)
{
	return lk_on(k == 0 ? LK_PL : LK_PT);
}

static void
no_reference_note(void)
{
	if (!lk_on(LK_PT) || !lk_on(LK_PL))
		printf("(pl or pthread not selected with -l: no ratios, no "
		       "targets)\n");
}

/* ------------------------------------------------------------------ */
/* W1: uncontended. */

static ALWAYS_INLINE void *
w1_body(void *a, const int k)
{
	struct thr *t = a;
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
	t->ops = n;
	t->t_end = el;
	thr_end(t, cpu0);
	return NULL;
}
KIND_FNS(w1_body);

static void
bench_w1(void)
{
	static struct ser ns[NLK];
	char b1[16], b2[40];

	for (int k = 0; k < NLK; k++) {
		if (!lk_on(k))
			continue;
		for (int r = 0; r < runs; r++) {
			struct thr *t = thr_alloc(1);
			progress("W1 1 thread %s run %d/%d", lk_name[k], r + 1,
			    runs);
			lk_init(k, &one.lk);
			one.counter = 0;
			start_threads(t, 1, w1_body_fn[k]);
			join_threads(t, 1, false);
			if (one.counter != t->ops)
				check_failed("W1 %s: counter %lu != %lu pairs",
				    lk_name[k], one.counter, t->ops);
			put(&ns[k], t->t_end / (double)t->ops * 1e9);
			progress_done("%.2f ns/pair", ns[k].v[ns[k].n - 1]);
			lk_destroy(k, &one.lk);
			free(t);
		}
	}
	printf("\nW1 uncontended: 1 thread, ns per lock+unlock pair; best of "
	       "%d runs, ratio of the bests (lower is better)\n",
	    runs);
	no_reference_note();
	prow("%-18s %8s %8s %16s %7s  %-8s %s\n", "lock", "best", "median",
	    "min..max", "ratio", "target", "result");
	for (int k = 0; k < NLK; k++) {
		if (!lk_on(k))
			continue;
		double r = ratio(smin(&ns[k]), smin(&ns[LK_PT]));
		const char *tg = NULL, *res = NULL;
		if (k == LK_PL && r >= 0) {
			tg = "<=0.90x";
			res = judge(r <= 0.90,
			    "W1 ns per pair: %.2fx pthread_mutex (<= 0.90x)",
			    r);
		}
		prow("%-18s %8.2f %8.2f %16s %7s  %-8s %s\n", lk_name[k],
		    smin(&ns[k]), med(&ns[k]),
		    range(b2, sizeof b2, &ns[k], 1, 2), fx(b1, r), tg ? tg : "",
		    res ? res : "");
		/* The CSV's median column holds the median; the ratio is of
		 * the bests, as in the table. */
		csv_row("W1", 1, lk_name[k], "ns_per_pair", "ns", &ns[k], r, tg,
		    res);
	}
	fflush(stdout);
}

/* ------------------------------------------------------------------ */
/* W2: contended short critical section (also W4's lock side). */

static ALWAYS_INLINE void *
w2_body(void *a, const int k)
{
	struct thr *t = a;
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
	t->ops = n;
	t->sink = x;
	thr_end(t, cpu0);
	return NULL;
}
KIND_FNS(w2_body);

static void
bench_w2(void)
{
	static struct ser tput[MAXTC][NLK], tmin[MAXTC][NLK], tmax[MAXTC][NLK],
	    cpu[MAXTC][NLK];
	char b1[16], b2[16], b3[40], b4[40];

	for (int c = 0; c < ntc2; c++) {
		int n = tc2[c];
		for (int k = 0; k < NLK; k++) {
			if (!lk_on(k))
				continue;
			for (int r = 0; r < runs; r++) {
				struct thr *t = thr_alloc(n);
				unsigned long total = 0, lo = ~0ul, hi = 0;
				double cs = 0;
				progress("W2 %d threads %s run %d/%d", n,
				    lk_name[k], r + 1, runs);
				lk_init(k, &one.lk);
				one.counter = 0;
				double el = timed_run(t, n, w2_body_fn[k]);
				for (int i = 0; i < n; i++) {
					total += t[i].ops;
					cs += t[i].cpu_s;
					lo = t[i].ops < lo ? t[i].ops : lo;
					hi = t[i].ops > hi ? t[i].ops : hi;
				}
				if (one.counter != total)
					check_failed(
					    "W2 %d threads %s: counter "
					    "%lu != %lu increments",
					    n, lk_name[k], one.counter, total);
				put(&tput[c][k], (double)total / el);
				put(&tmin[c][k], (double)lo / el);
				put(&tmax[c][k], (double)hi / el);
				put(&cpu[c][k],
				    total ? cs / ((double)total / 1e6) : 0);
				progress_done("%.2f Mops/s, %.3f CPU s/Mop",
				    (double)total / el / 1e6,
				    cpu[c][k].v[cpu[c][k].n - 1]);
				lk_destroy(k, &one.lk);
				free(t);
			}
		}
	}
	printf("\nW2 contended short critical section: total Mops/s (median of "
	       "%d runs, min..max), per-thread kops/s (lowest..highest "
	       "thread), CPU seconds per million ops (lower is better)\n",
	    runs);
	no_reference_note();
	prow("%4s %-18s %8s %14s %16s %9s %7s %9s  %-22s %s\n", "thr", "lock",
	    "Mops/s", "min..max", "thread kops/s", "CPU s/Mop", "ratio",
	    "CPU ratio", "target", "result");
	for (int c = 0; c < ntc2; c++) {
		for (int k = 0; k < NLK; k++) {
			if (!lk_on(k))
				continue;
			double r =
			    ratio(med(&tput[c][k]), med(&tput[c][LK_PT]));
			double rc = ratio(med(&cpu[c][k]), med(&cpu[c][LK_PT]));
			const char *tg = NULL, *res = NULL;
			if (k == LK_PL && r >= 0 && rc >= 0) {
				tg = ">=1.70x, CPU <=0.70x";
				res = judge(r >= 1.70 && rc <= 0.70,
				    "W2 %d threads: throughput %.2fx (>= "
				    "1.70x), "
				    "CPU/op %.2fx (<= 0.70x)",
				    tc2[c], r, rc);
			}
			snprintf(b4, sizeof b4, "%.0f..%.0f",
			    med(&tmin[c][k]) / 1e3, med(&tmax[c][k]) / 1e3);
			prow("%4d %-18s %8.2f %14s %16s %9.3f %7s %9s  %-22s "
			     "%s\n",
			    tc2[c], lk_name[k], med(&tput[c][k]) / 1e6,
			    range(b3, sizeof b3, &tput[c][k], 1e-6, 2), b4,
			    med(&cpu[c][k]), fx(b1, r), fx(b2, rc),
			    tg ? tg : "", res ? res : "");
			csv_row("W2", tc2[c], lk_name[k], "throughput", "ops/s",
			    &tput[c][k], r, tg, res);
			csv_row("W2", tc2[c], lk_name[k], "thread_min", "ops/s",
			    &tmin[c][k], -1, NULL, NULL);
			csv_row("W2", tc2[c], lk_name[k], "thread_max", "ops/s",
			    &tmax[c][k], -1, NULL, NULL);
			csv_row("W2", tc2[c], lk_name[k], "cpu_per_mop", "s",
			    &cpu[c][k], rc, NULL, NULL);
		}
		if (c + 1 < ntc2)
			printf("\n");
	}
	fflush(stdout);
}

/* ------------------------------------------------------------------ */
/* W3: long holds. */

static void
sleep_ns(long ns)
{
	struct timespec ts = { ns / 1000000000L, ns % 1000000000L };
	while (clock_nanosleep(CLOCK_MONOTONIC, 0, &ts, &ts) == EINTR)
		;
}

static ALWAYS_INLINE void *
w3_body(void *a, const int k)
{
	struct thr *t = a;
	void *l = &one.lk;
	double cpu0 = thr_begin(t);

	lk_lock(k, l);
	one.counter++;
	sleep_ns(W3_SLEEP_NS);
	lk_unlock(k, l);
	t->t_end = now();
	t->ops = 1;
	thr_end(t, cpu0);
	return NULL;
}
KIND_FNS(w3_body);

/* The mean real duration of a 1 ms sleep on this machine. */
static void
calibrate_sleep(void)
{
	const int n = 100;
	double t0 = now();
	for (int i = 0; i < n; i++)
		sleep_ns(W3_SLEEP_NS);
	sleep_1ms = (now() - t0) / n;
}

/*
 * This machine's wake-up latency: from a FUTEX_WAKE until the thread it
 * woke runs, the waker on the first CPU and the sleeper on the first or
 * the second, which had nothing to do for 200 us before each wake.  A
 * lock that wakes one waiter at a time pays it on every hand-off to a
 * sleeping thread, so W3 and W5b print it beside their figures.  Medians
 * of WL_ROUNDS; negative when there is one CPU or the probe failed.
 */
#define WL_ROUNDS 200

static struct {
	_Alignas(64) uint32_t word; /* 1 wake up, 2 exit */
	double woke;
} wl;
static double wl_same = -1, wl_other = -1;

static void *
wl_sleeper(void *a)
{
	(void)a;
	for (;;) {
		uint32_t w;
		while ((w = __atomic_load_n(&wl.word, __ATOMIC_ACQUIRE)) == 0)
			syscall(SYS_futex, &wl.word, FUTEX_WAIT_PRIVATE, 0,
			    NULL, NULL, 0);
		if (w == 2)
			return NULL;
		wl.woke = now();
		__atomic_store_n(&wl.word, 0, __ATOMIC_RELEASE);
	}
}

static double
wl_probe(int cpu)
{
	double lat[WL_ROUNDS];
	pthread_attr_t attr;
	pthread_t t;
	cpu_set_t set;

	CPU_ZERO(&set);
	CPU_SET(cpu, &set);
	pthread_attr_init(&attr);
	pthread_attr_setaffinity_np(&attr, sizeof set, &set);
	int err = pthread_create(&t, &attr, wl_sleeper, NULL);
	pthread_attr_destroy(&attr);
	if (err != 0)
		return -1;
	for (int i = 0; i < WL_ROUNDS; i++) {
		sleep_ns(200000);
		double t0 = now();
		__atomic_store_n(&wl.word, 1, __ATOMIC_RELEASE);
		syscall(
		    SYS_futex, &wl.word, FUTEX_WAKE_PRIVATE, 1, NULL, NULL, 0);
		while (__atomic_load_n(&wl.word, __ATOMIC_ACQUIRE) != 0)
			sched_yield(); /* lets a sleeper on this CPU run */
		lat[i] = wl.woke - t0;
	}
	__atomic_store_n(&wl.word, 2, __ATOMIC_RELEASE);
	syscall(SYS_futex, &wl.word, FUTEX_WAKE_PRIVATE, 1, NULL, NULL, 0);
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
	progress(
	    "measuring the wake-up latency, %d wakes on each CPU", WL_ROUNDS);
	CPU_ZERO(&set);
	CPU_SET(cpus[0], &set);
	pthread_setaffinity_np(pthread_self(), sizeof set, &set);
	wl_same = wl_probe(cpus[0]);
	wl_other = wl_probe(cpus[1]);
	pthread_setaffinity_np(pthread_self(), sizeof saved, &saved);
	progress_done("%.1f us to another CPU, %.1f us on the same",
	    wl_other * 1e6, wl_same * 1e6);
}

static void
print_wake_latency(void)
{
	if (wl_same >= 0 && wl_other >= 0)
		printf("(a FUTEX_WAKE gets a thread asleep on another, idle, "
		       "CPU running in %.1f us, one on the waker's CPU in "
		       "%.1f us: medians of %d)\n",
		    wl_other * 1e6, wl_same * 1e6, WL_ROUNDS);
}

static void
bench_w3(void)
{
	static struct ser el[NLK], over[NLK], cpu[NLK];
	char b1[16], b2[40];
	double ideal;

	measure_wake_latency();
	progress("W3 measuring a 1 ms sleep, 100 times");
	calibrate_sleep();
	ideal = W3_THREADS * sleep_1ms;
	progress_done("mean %.3f ms", sleep_1ms * 1e3);
	for (int k = 0; k < NLK; k++) {
		if (!w3_on(k))
			continue;
		for (int r = 0; r < runs; r++) {
			struct thr *t = thr_alloc(W3_THREADS);
			double tend = 0, cs = 0;
			progress("W3 %d threads %s run %d/%d", W3_THREADS,
			    lk_name[k], r + 1, runs);
			lk_init(k, &one.lk);
			one.counter = 0;
			double t0 = start_threads(t, W3_THREADS, w3_body_fn[k]);
			join_threads(t, W3_THREADS, false);
			for (int i = 0; i < W3_THREADS; i++) {
				tend = t[i].t_end > tend ? t[i].t_end : tend;
				cs += t[i].cpu_s;
			}
			if (one.counter != W3_THREADS)
				check_failed("W3 %s: counter %lu != %d",
				    lk_name[k], one.counter, W3_THREADS);
			put(&el[k], tend - t0);
			put(&over[k], (tend - t0) / ideal);
			put(&cpu[k], cs);
			progress_done("%.3f s = %.3fx ideal, %.3f CPU s",
			    tend - t0, (tend - t0) / ideal, cs);
			lk_destroy(k, &one.lk);
			free(t);
		}
	}
	printf("\nW3 long holds: %d threads each lock once and sleep 1 ms "
	       "inside; a 1 ms sleep measured %.3f ms, so ideal = %.3f s; "
	       "elapsed/ideal (1.00 is ideal) and CPU seconds, median of %d "
	       "runs\n",
	    W3_THREADS, sleep_1ms * 1e3, ideal, runs);
	print_wake_latency();
	if (lk_on(LK_SPIN) && !w3_on(LK_SPIN))
		printf("(spinlock left out unless named with -l: 300 spinning "
		       "threads take some 20x the ideal)\n");
	no_reference_note();
	prow("%-18s %9s %8s %12s %8s %9s  %-26s %s\n", "lock", "elapsed s",
	    "/ideal", "min..max", "CPU s", "CPU ratio", "target", "result");
	for (int k = 0; k < NLK; k++) {
		if (!w3_on(k))
			continue;
		double rc = ratio(med(&cpu[k]), med(&cpu[LK_PT]));
		const char *tg = NULL, *res = NULL;
		if (k == LK_PL && rc >= 0) {
			tg = "<=1.05 ideal, CPU<=1.00x";
			res = judge(med(&over[k]) <= 1.05 && rc <= 1.0,
			    "W3 elapsed %.3fx ideal (<= 1.05), CPU %.2fx "
			    "pthread_mutex (<= 1.00x)",
			    med(&over[k]), rc);
		}
		prow("%-18s %9.3f %8.3f %12s %8.3f %9s  %-26s %s\n", lk_name[k],
		    med(&el[k]), med(&over[k]),
		    range(b2, sizeof b2, &over[k], 1, 3), med(&cpu[k]),
		    fx(b1, rc), tg ? tg : "", res ? res : "");
		csv_row("W3", W3_THREADS, lk_name[k], "elapsed_over_ideal", "x",
		    &over[k], -1, tg, res);
		csv_row("W3", W3_THREADS, lk_name[k], "elapsed", "s", &el[k],
		    ratio(med(&el[k]), med(&el[LK_PT])), NULL, NULL);
		csv_row("W3", W3_THREADS, lk_name[k], "cpu", "s", &cpu[k], rc,
		    NULL, NULL);
	}
	csv_one("W3", 1, "-", "sleep_1ms", "s", sleep_1ms);
	fflush(stdout);
}

/* ------------------------------------------------------------------ */
/* W4: useful work. */

static void *
yield_body(struct thr *t)
{
	uint64_t x = seed(t->idx + 100);
	unsigned long n = 0;
	double cpu0 = thr_begin(t);

	while (!stopping()) {
		x = busy_work(x, YIELD_WORK);
		sched_yield();
		n++;
	}
	t->ops = n;
	t->sink = x;
	thr_end(t, cpu0);
	return NULL;
}

static ALWAYS_INLINE void *
w4_body(void *a, const int k)
{
	struct thr *t = a;
	return t->role ? yield_body(t) : w2_body(a, k);
}
KIND_FNS(w4_body);

static void
bench_w4(void)
{
	static struct ser lrate[NLK], yrate[NLK], lalone[NLK], yalone,
	    useful[NLK];
	char b1[16], b2[16], b3[40];

	/* What one thread does alone on a CPU: the price of one unit of
	 * each side's work, in CPU seconds. */
	for (int r = 0; r < runs; r++) {
		struct thr *t = thr_alloc(1);
		progress("W4 1 yield thread alone run %d/%d", r + 1, runs);
		t[0].role = 1;
		double el = timed_run(t, 1, w4_body_fn[LK_PL]);
		put(&yalone, (double)t[0].ops / el);
		progress_done("%.1f kunits/s", yalone.v[yalone.n - 1] / 1e3);
		free(t);
	}
	for (int k = 0; k < NLK; k++) {
		if (!lk_on(k))
			continue;
		for (int r = 0; r < runs; r++) {
			struct thr *t = thr_alloc(4);
			unsigned long lops;

			progress("W4 1 lock thread %s alone run %d/%d",
			    lk_name[k], r + 1, runs);
			lk_init(k, &one.lk);
			one.counter = 0;
			double el = timed_run(t, 1, w2_body_fn[k]);
			lops = t[0].ops;
			if (one.counter != lops)
				check_failed("W4 %s alone: counter %lu != %lu",
				    lk_name[k], one.counter, lops);
			put(&lalone[k], (double)lops / el);
			progress_done("%.2f Mops/s", (double)lops / el / 1e6);
			lk_destroy(k, &one.lk);

			memset(t, 0, 4 * sizeof *t);
			progress("W4 2+2 threads %s with yielders run %d/%d",
			    lk_name[k], r + 1, runs);
			lk_init(k, &one.lk);
			one.counter = 0;
			t[2].role = t[3].role = 1;
			el = timed_run(t, 4, w4_body_fn[k]);
			lops = t[0].ops + t[1].ops;
			if (one.counter != lops)
				check_failed("W4 %s: counter %lu != %lu",
				    lk_name[k], one.counter, lops);
			put(&lrate[k], (double)lops / el);
			put(&yrate[k], (double)(t[2].ops + t[3].ops) / el);
			progress_done("lock %.2f Mops/s, yield %.1f kunits/s",
			    (double)lops / el / 1e6,
			    yrate[k].v[yrate[k].n - 1] / 1e3);
			lk_destroy(k, &one.lk);
			free(t);
		}
		for (int r = 0; r < lrate[k].n; r++)
			put(&useful[k],
			    lrate[k].v[r] / med(&lalone[k]) +
			        yrate[k].v[r] / med(&yalone));
	}
	printf("\nW4 useful work: 2 threads run the W2 loop while 2 threads do "
	       "units of %d xorshift steps + sched_yield; each side's "
	       "operations costed at one thread's rate alone on a CPU: useful "
	       "= lock rate / lock-alone rate + yield rate / yield-alone "
	       "rate, in CPUs (max %d.00); yield thread alone: %.1f "
	       "kunits/s; median of %d runs\n",
	    YIELD_WORK, ncpus < 2 ? 1 : 2, med(&yalone) / 1e3, runs);
	no_reference_note();
	prow("%-18s %11s %8s %14s %7s %11s %8s %11s  %-23s %s\n", "lock",
	    "lock Mops/s", "alone", "yield kunit/s", "useful", "min..max",
	    "ratio", "yield ratio", "target", "result");
	for (int k = 0; k < NLK; k++) {
		if (!lk_on(k))
			continue;
		double r = ratio(med(&useful[k]), med(&useful[LK_PT]));
		double ry = ratio(med(&yrate[k]), med(&yrate[LK_PT]));
		const char *tg = NULL, *res = NULL;
		if (k == LK_PL && r >= 0) {
			tg = ">=2.00x, yield >=1.00x";
			res = judge(r >= 2.0 && ry >= 1.0,
			    "W4 useful work %.2fx (>= 2.00x), yielders' rate "
			    "%.2fx (>= 1.00x)",
			    r, ry);
		}
		prow(
		    "%-18s %11.2f %8.2f %14.1f %7.2f %11s %8s %11s  %-23s %s\n",
		    lk_name[k], med(&lrate[k]) / 1e6, med(&lalone[k]) / 1e6,
		    med(&yrate[k]) / 1e3, med(&useful[k]),
		    range(b3, sizeof b3, &useful[k], 1, 2), fx(b1, r),
		    fx(b2, ry), tg ? tg : "", res ? res : "");
		csv_row("W4", 4, lk_name[k], "useful", "cpus", &useful[k], r,
		    tg, res);
		csv_row("W4", 4, lk_name[k], "lock_rate", "ops/s", &lrate[k],
		    ratio(med(&lrate[k]), med(&lrate[LK_PT])), NULL, NULL);
		csv_row("W4", 4, lk_name[k], "yield_rate", "units/s", &yrate[k],
		    ry, NULL, NULL);
		csv_row("W4", 1, lk_name[k], "lock_alone_rate", "ops/s",
		    &lalone[k], -1, NULL, NULL);
	}
	csv_row("W4", 1, "-", "yield_alone_rate", "units/s", &yalone, -1, NULL,
	    NULL);
	fflush(stdout);
}

/* ------------------------------------------------------------------ */
/* W5a: producers and consumers on a bounded queue. */

static ALWAYS_INLINE void *
w5a_body(void *a, const int k)
{
	struct thr *t = a;
	uint64_t v = ((uint64_t)t->idx << 40) + 1, sum = 0;
	unsigned long n = 0;
	double cpu0 = thr_begin(t);

	for (;;) {
		cm_lock(k, &pc.m);
		if (t->role == 0) { /* producer */
			while (pc.count == W5_CAP && !stopping())
				cc_wait(k, &pc.not_full, &pc.m);
			if (stopping()) {
				cm_unlock(k, &pc.m);
				break;
			}
			pc.buf[pc.tail] = v;
			pc.tail = (pc.tail + 1) % W5_CAP;
			pc.count++;
			cc_signal(k, &pc.not_empty);
			cm_unlock(k, &pc.m);
			sum += v++;
		} else { /* consumer */
			while (pc.count == 0 && !stopping())
				cc_wait(k, &pc.not_empty, &pc.m);
			if (stopping()) {
				cm_unlock(k, &pc.m);
				break;
			}
			uint64_t got = pc.buf[pc.head];
			pc.head = (pc.head + 1) % W5_CAP;
			pc.count--;
			cc_signal(k, &pc.not_full);
			cm_unlock(k, &pc.m);
			sum += got;
		}
		n++;
	}
	t->ops = n;
	t->sink = sum;
	thr_end(t, cpu0);
	return NULL;
}
KIND2_FNS(w5a_body);

/* ------------------------------------------------------------------ */
/* W5b: broadcast to 64 sleeping waiters. */

static ALWAYS_INLINE void *
w5b_body(void *a, const int k)
{
	struct thr *t = a;
	struct rusage r0, r1;
	double cpu0 = thr_begin(t);

	cm_lock(k, &bc.m);
	bc.waiting++;
	getrusage(RUSAGE_THREAD, &r0);
	while (bc.gen == 0)
		cc_wait(k, &bc.c, &bc.m);
	bc.done++;
	cm_unlock(k, &bc.m);
	t->t_end = now();
	getrusage(RUSAGE_THREAD, &r1);
	t->vcsw = r1.ru_nvcsw - r0.ru_nvcsw;
	t->csw = t->vcsw + (r1.ru_nivcsw - r0.ru_nivcsw);
	thr_end(t, cpu0);
	/* Exit only once all have the mutex back: 63 thread exits (stack
	 * unmapping, TLB shootdowns) would otherwise run on the CPUs the
	 * later waiters need, and W5b would time thread teardown. */
	pthread_barrier_wait(&bc.release);
	return NULL;
}
KIND2_FNS(w5b_body);

static pl_filter_op_t
count_filter(uintptr_t park_token, void *ctx)
{
	(void)park_token;
	++*(size_t *)ctx;
	return PL_FILTER_SKIP;
}

/* Whether the thread's state in /proc is S (sleeping). */
static bool
thread_asleep(pid_t tid)
{
	char path[64], buf[512];
	FILE *f;
	size_t len;
	const char *p;

	snprintf(path, sizeof path, "/proc/self/task/%d/stat", (int)tid);
	if ((f = fopen(path, "r")) == NULL)
		return false;
	len = fread(buf, 1, sizeof buf - 1, f);
	fclose(f);
	buf[len] = '\0';
	p = strrchr(buf, ')');
	return p != NULL && p[1] == ' ' && p[2] == 'S';
}

/* Wait until all the waiters are registered and asleep: the count taken
 * under the mutex, for pl the threads queued on the condition variable
 * (pl_unpark_filter with a filter that counts and skips), and every
 * thread sleeping according to /proc.  False after 5 s. */
static bool
wait_all_asleep(int k, struct thr *t)
{
	double deadline = now() + 5;
	for (;;) {
		cm_lock(k, &bc.m);
		bool ok = bc.waiting == W5B_WAITERS;
		cm_unlock(k, &bc.m);
		if (ok && k == 0) {
			size_t n = 0;
			pl_unpark_filter(&bc.c.pl, count_filter, NULL, &n);
			ok = n == W5B_WAITERS;
		}
		for (int i = 0; ok && i < W5B_WAITERS; i++)
			ok = thread_asleep(t[i].os_tid);
		if (ok)
			return true;
		if (now() > deadline)
			return false;
		sleep_ns(100000);
	}
}

static void
bench_w5(void)
{
	static struct ser items[2], btime[2], bcsw[2], bvol[2];
	char b1[16], b2[16], b3[40], b4[40];

	for (int k = 0; w5a && k < 2; k++) {
		if (!k2_on(k))
			continue;
		for (int r = 0; r < runs; r++) {
			struct thr *t = thr_alloc(4);
			unsigned long prod = 0, cons = 0;
			uint64_t psum = 0, csum = 0;

			progress("W5a 2+2 threads %s run %d/%d", cv_name[k],
			    r + 1, runs);
			cv_init(k, &pc.m, &pc.not_full, &pc.not_empty);
			pc.head = pc.tail = pc.count = 0;
			t[2].role = t[3].role = 1;
			double t0 = start_threads(t, 4, w5a_body_fn[k]);
			sleep_for(secs);
			cm_lock(k, &pc.m);
			__atomic_store_n(&flag.stop, 1, __ATOMIC_RELAXED);
			cc_broadcast(k, &pc.not_full);
			cc_broadcast(k, &pc.not_empty);
			cm_unlock(k, &pc.m);
			double el = join_threads(t, 4, true) - t0;
			for (int i = 0; i < 4; i++) {
				if (t[i].role == 0) {
					prod += t[i].ops;
					psum += t[i].sink;
				} else {
					cons += t[i].ops;
					csum += t[i].sink;
				}
			}
			for (unsigned i = 0, j = pc.head; i < pc.count;
			     i++, j = (j + 1) % W5_CAP)
				csum += pc.buf[j];
			if (prod != cons + pc.count || psum != csum)
				check_failed(
				    "W5a %s: %lu produced, %lu consumed, "
				    "%u queued, or the sums differ",
				    cv_name[k], prod, cons, pc.count);
			put(&items[k], (double)cons / el);
			progress_done("%.3f Mitems/s", (double)cons / el / 1e6);
			cv_destroy(k, &pc.m, &pc.not_full, &pc.not_empty);
			free(t);
		}
	}
	if (w5b)
		measure_wake_latency();
	for (int k = 0; w5b && k < 2; k++) {
		if (!k2_on(k))
			continue;
		progress("W5b %d waiters %s, %d broadcasts", W5B_WAITERS,
		    cv_name[k], W5B_ROUNDS);
		for (int r = 0; r < W5B_ROUNDS; r++) {
			struct thr *t = thr_alloc(W5B_WAITERS);
			double tend = 0;
			long csw = 0, vcsw = 0;
			int err;

			cv_init(k, &bc.m, &bc.c, NULL);
			bc.gen = bc.waiting = bc.done = 0;
			if ((err = pthread_barrier_init(
			         &bc.release, NULL, W5B_WAITERS + 1)) != 0)
				die("pthread_barrier_init", err);
			start_threads(t, W5B_WAITERS, w5b_body_fn[k]);
			if (!wait_all_asleep(k, t))
				check_failed(
				    "W5b %s: the %d waiters were not all "
				    "waiting and asleep after 5 s",
				    cv_name[k], W5B_WAITERS);
			cm_lock(k, &bc.m);
			bc.gen = 1;
			double t0 = now();
			cc_broadcast(k, &bc.c);
			cm_unlock(k, &bc.m);
			pthread_barrier_wait(&bc.release);
			join_threads(t, W5B_WAITERS, false);
			pthread_barrier_destroy(&bc.release);
			for (int i = 0; i < W5B_WAITERS; i++) {
				tend = t[i].t_end > tend ? t[i].t_end : tend;
				csw += t[i].csw;
				vcsw += t[i].vcsw;
			}
			if (bc.done != W5B_WAITERS)
				check_failed("W5b %s: %d of %d waiters woke",
				    cv_name[k], bc.done, W5B_WAITERS);
			put(&btime[k], tend - t0);
			put(&bcsw[k], (double)csw);
			put(&bvol[k], (double)vcsw);
			cv_destroy(k, &bc.m, &bc.c, NULL);
			free(t);
		}
		progress_done("median %.0f us, %.0f context switches",
		    med(&btime[k]) * 1e6, med(&bcsw[k]));
	}
	if (w5a) {
		printf(
		    "\nW5a producer/consumer: 2 producers + 2 consumers, queue "
		    "of %d; Mitems/s, median of %d runs\n",
		    W5_CAP, runs);
		no_reference_note();
		prow("%-20s %9s %14s %7s  %-8s %s\n", "lock", "Mitems/s",
		    "min..max", "ratio", "target", "result");
		for (int k = 0; k < 2; k++) {
			if (!k2_on(k))
				continue;
			double r = ratio(med(&items[k]), med(&items[1]));
			const char *tg = NULL, *res = NULL;
			if (k == 0 && r >= 0) {
				tg = ">=1.50x";
				res = judge(r >= 1.5,
				    "W5a producer/consumer %.2fx (>= 1.50x)",
				    r);
			}
			prow("%-20s %9.3f %14s %7s  %-8s %s\n", cv_name[k],
			    med(&items[k]) / 1e6,
			    range(b3, sizeof b3, &items[k], 1e-6, 3), fx(b1, r),
			    tg ? tg : "", res ? res : "");
			csv_row("W5a", 4, cv_name[k], "throughput", "items/s",
			    &items[k], r, tg, res);
		}
	}
	if (w5b) {
		printf("\nW5b broadcast to %d sleeping waiters: time from the "
		       "broadcast until all reacquired and released the mutex "
		       "(they exit after), and the waiters' context switches "
		       "while waiting (ideal: %d, one sleep each) and how many "
		       "were sleeps (voluntary; the rest are preemptions); "
		       "median of %d broadcasts (lower is better)\n",
		    W5B_WAITERS, W5B_WAITERS, W5B_ROUNDS);
		print_wake_latency();
		no_reference_note();
		prow("%-20s %8s %14s %7s %12s %6s %10s %9s  %-26s %s\n", "lock",
		    "time us", "min..max", "ctx sw", "min..max", "sleeps",
		    "time ratio", "ctx ratio", "target", "result");
		for (int k = 0; k < 2; k++) {
			if (!k2_on(k))
				continue;
			double rt = ratio(med(&btime[k]), med(&btime[1]));
			double rc = ratio(med(&bcsw[k]), med(&bcsw[1]));
			const char *tg = NULL, *res = NULL;
			if (k == 0 && rt >= 0 && rc >= 0) {
				tg = "ctx <=0.55x, time <=0.70x";
				res = judge(rc <= 0.55 && rt <= 0.70,
				    "W5b broadcast: context switches %.2fx (<= "
				    "0.55x), time %.2fx (<= 0.70x)",
				    rc, rt);
			}
			prow(
			    "%-20s %8.0f %14s %7.0f %12s %6.0f %10s %9s  %-26s "
			    "%s\n",
			    cv_name[k], med(&btime[k]) * 1e6,
			    range(b3, sizeof b3, &btime[k], 1e6, 0),
			    med(&bcsw[k]), range(b4, sizeof b4, &bcsw[k], 1, 0),
			    med(&bvol[k]), fx(b1, rt), fx(b2, rc), tg ? tg : "",
			    res ? res : "");
			csv_row("W5b", W5B_WAITERS, cv_name[k], "bcast_time",
			    "s", &btime[k], rt, tg, res);
			csv_row("W5b", W5B_WAITERS, cv_name[k], "bcast_ctxsw",
			    "switches", &bcsw[k], rc, NULL, NULL);
			csv_row("W5b", W5B_WAITERS, cv_name[k], "bcast_sleeps",
			    "switches", &bvol[k],
			    ratio(med(&bvol[k]), med(&bvol[1])), NULL, NULL);
		}
	}
	fflush(stdout);
}

/* ------------------------------------------------------------------ */
/* W6: readers and writers. */

static ALWAYS_INLINE void *
w6_body(void *a, const int k)
{
	struct thr *t = a;
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
	t->ops = n;
	t->bad = bad;
	t->sink = x;
	thr_end(t, cpu0);
	return NULL;
}
KIND2_FNS(w6_body);

static void
bench_w6(void)
{
	static struct ser tput[MAXTC][2], rsh[MAXTC][2], wsh[MAXTC][2];
	char b1[16], b3[40];

	for (int c = 0; c < ntc6; c++) {
		int n = tc6[c];
		for (int k = 0; k < 2; k++) {
			if (!k2_on(k))
				continue;
			for (int r = 0; r < runs; r++) {
				struct thr *t = thr_alloc(n);
				unsigned long reads = 0, writes = 0, bad = 0;

				progress("W6 %d threads %s run %d/%d", n,
				    rw_name[k], r + 1, runs);
				if (k == 0)
					pl_rwlock_init(&rw.l.pl);
				else
					pthread_rwlock_init(&rw.l.pt, NULL);
				rw.a = rw.b = 0;
				/* The first half read, the second half write,
				 * so that each CPU gets readers and writers. */
				for (int i = n / 2; i < n; i++)
					t[i].role = 1;
				double el = timed_run(t, n, w6_body_fn[k]);
				for (int i = 0; i < n; i++) {
					if (t[i].role)
						writes += t[i].ops;
					else
						reads += t[i].ops;
					bad += t[i].bad;
				}
				if (rw.a != writes || rw.b != writes ||
				    bad != 0)
					check_failed(
					    "W6 %d threads %s: %lu writes "
					    "counted %lu, %lu torn reads",
					    n, rw_name[k], writes, rw.a, bad);
				double total = (double)(reads + writes);
				put(&tput[c][k], total / el);
				put(&rsh[c][k],
				    total > 0 ? 100 * reads / total : 0);
				put(&wsh[c][k],
				    total > 0 ? 100 * writes / total : 0);
				progress_done(
				    "%.2f Mops/s, reads %.1f%%, writes "
				    "%.1f%%",
				    total / el / 1e6, rsh[c][k].v[r],
				    wsh[c][k].v[r]);
				if (k == 1)
					pthread_rwlock_destroy(&rw.l.pt);
				free(t);
			}
		}
	}
	printf("\nW6 reader-writer: equal readers and writers, short critical "
	       "sections; total Mops/s (median of %d runs, min..max), read and "
	       "write shares of the total\n",
	    runs);
	no_reference_note();
	prow("%4s %-18s %8s %14s %7s %7s %7s  %-26s %s\n", "thr", "lock",
	    "Mops/s", "min..max", "reads", "writes", "ratio", "target",
	    "result");
	for (int c = 0; c < ntc6; c++) {
		for (int k = 0; k < 2; k++) {
			if (!k2_on(k))
				continue;
			double r = ratio(med(&tput[c][k]), med(&tput[c][1]));
			const char *tg = NULL, *res = NULL;
			if (k == 0 && r >= 0) {
				tg = ">=1.50x, each share >=25%";
				res = judge(r >= 1.5 && med(&rsh[c][k]) >= 25 &&
				        med(&wsh[c][k]) >= 25,
				    "W6 %d threads: throughput %.2fx (>= "
				    "1.50x), "
				    "reads %.1f%% and writes %.1f%% (each >= "
				    "25%%)",
				    tc6[c], r, med(&rsh[c][k]),
				    med(&wsh[c][k]));
			}
			prow("%4d %-18s %8.2f %14s %6.1f%% %6.1f%% %7s  %-26s "
			     "%s\n",
			    tc6[c], rw_name[k], med(&tput[c][k]) / 1e6,
			    range(b3, sizeof b3, &tput[c][k], 1e-6, 2),
			    med(&rsh[c][k]), med(&wsh[c][k]), fx(b1, r),
			    tg ? tg : "", res ? res : "");
			csv_row("W6", tc6[c], rw_name[k], "throughput", "ops/s",
			    &tput[c][k], r, tg, res);
			csv_row("W6", tc6[c], rw_name[k], "read_share", "%",
			    &rsh[c][k], -1, NULL, NULL);
			csv_row("W6", tc6[c], rw_name[k], "write_share", "%",
			    &wsh[c][k], -1, NULL, NULL);
		}
		if (c + 1 < ntc6)
			printf("\n");
	}
	fflush(stdout);
}

/* ------------------------------------------------------------------ */
/* W7: many locks. */

static ALWAYS_INLINE void *
w7_body(void *a, const int k)
{
	struct thr *t = a;
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
	t->ops = n;
	t->sink = x;
	thr_end(t, cpu0);
	return NULL;
}
KIND_FNS(w7_body);

static size_t
lock_bytes(int k)
{
	return k == LK_PL  ? sizeof(pl_mutex_t)
	    : k == LK_SPIN ? sizeof(int)
	                   : sizeof(pthread_mutex_t);
}

static void
bench_w7(void)
{
	static struct ser tput[NLK];
	char b1[16], b3[40];

	for (int k = 0; k < NLK; k++) {
		if (!lk_on(k))
			continue;
		size_t sz = lock_bytes(k);
		size_t bytes = (W7_LOCKS * sz + 63) / 64 * 64;
		for (int r = 0; r < runs; r++) {
			struct thr *t = thr_alloc(W7_THREADS);
			unsigned long total = 0, sum = 0;

			progress("W7 %d threads %s run %d/%d", W7_THREADS,
			    lk_name[k], r + 1, runs);
			many.locks = aligned_alloc(64, bytes);
			many.counts = calloc(W7_LOCKS, sizeof *many.counts);
			if (many.locks == NULL || many.counts == NULL)
				die("allocating the W7 locks", ENOMEM);
			for (size_t i = 0; i < W7_LOCKS; i++)
				lk_init(k, many.locks + i * sz);
			double el = timed_run(t, W7_THREADS, w7_body_fn[k]);
			for (int i = 0; i < W7_THREADS; i++)
				total += t[i].ops;
			for (size_t i = 0; i < W7_LOCKS; i++) {
				sum += many.counts[i];
				lk_destroy(k, many.locks + i * sz);
			}
			if (sum != total)
				check_failed(
				    "W7 %s: counters sum to %lu, not %lu",
				    lk_name[k], sum, total);
			put(&tput[k], (double)total / el);
			progress_done("%.2f Mops/s", (double)total / el / 1e6);
			free(many.locks);
			free(many.counts);
			free(t);
		}
	}
	printf("\nW7 many locks: %d threads lock random entries of an array of "
	       "%d locks; Mops/s, median of %d runs\n",
	    W7_THREADS, W7_LOCKS, runs);
	no_reference_note();
	prow("%-18s %8s %14s %10s %7s  %-22s %s\n", "lock", "Mops/s",
	    "min..max", "bytes/lock", "ratio", "target", "result");
	for (int k = 0; k < NLK; k++) {
		if (!lk_on(k))
			continue;
		double r = ratio(med(&tput[k]), med(&tput[LK_PT]));
		const char *tg = NULL, *res = NULL;
		if (k == LK_PL && r >= 0) {
			tg = ">=1.80x, 1 byte/lock";
			res = judge(r >= 1.8 && sizeof(pl_mutex_t) == 1,
			    "W7 throughput %.2fx (>= 1.80x), %zu byte(s) per "
			    "lock (1)",
			    r, sizeof(pl_mutex_t));
		}
		prow("%-18s %8.2f %14s %10zu %7s  %-22s %s\n", lk_name[k],
		    med(&tput[k]) / 1e6,
		    range(b3, sizeof b3, &tput[k], 1e-6, 2), lock_bytes(k),
		    fx(b1, r), tg ? tg : "", res ? res : "");
		csv_row("W7", W7_THREADS, lk_name[k], "throughput", "ops/s",
		    &tput[k], r, tg, res);
		csv_one("W7", W7_THREADS, lk_name[k], "bytes_per_lock", "B",
		    (double)lock_bytes(k));
	}
	fflush(stdout);
}

/* ------------------------------------------------------------------ */
/* Setup, options, plot. */

static void
cpu_model(char *out, size_t len)
{
	char line[512];
	FILE *f = fopen("/proc/cpuinfo", "r");

	snprintf(out, len, "unknown CPU");
	if (f == NULL)
		return;
	while (fgets(line, sizeof line, f) != NULL) {
		char *colon = strchr(line, ':');
		if (strncmp(line, "model name", 10) != 0 || colon == NULL)
			continue;
		colon += 1 + strspn(colon + 1, " \t");
		colon[strcspn(colon, "\n")] = '\0';
		snprintf(out, len, "%s", colon);
		break;
	}
	fclose(f);
}

/* The expected duration of the selected set, in seconds. */
static double
expected_duration(void)
{
	int nl = 0, n2 = k2_on(0) + k2_on(1);
	double run = secs + 0.01, e = 0;

	for (int k = 0; k < NLK; k++)
		nl += lk_on(k);
	if (w_sel[1])
		e += nl * runs * run;
	if (w_sel[2])
		e += ntc2 * nl * runs * run;
	if (w_sel[3]) /* 300 sleeps of ~1.1 ms and 300 threads per run */
		e += 0.11 +
		    (nl - lk_on(LK_SPIN)) * runs *
		        (W3_THREADS * 0.0011 + 0.05) +
		    (w3_on(LK_SPIN) ? runs * 7.0 : 0);
	if (w_sel[4])
		e += runs * run + nl * runs * 2 * run;
	if (w_sel[5] && w5a)
		e += n2 * runs * run;
	if (w_sel[5] && w5b)
		e += n2 * W5B_ROUNDS * 0.02;
	if (w_sel[6])
		e += ntc6 * n2 * runs * run;
	if (w_sel[7])
		e += nl * runs * (run + 0.01);
	return e;
}

static int
parse_ints(const char *arg, int *out, int max)
{
	char *copy = strdup(arg), *save = NULL, *tok, *end;
	int n = 0;

	for (tok = strtok_r(copy, ", ", &save); tok != NULL;
	     tok = strtok_r(NULL, ", ", &save)) {
		long v = strtol(tok, &end, 10);
		if (*end != '\0' || v < 1 || v > MAXTHREADS || n == max) {
			n = -1;
			break;
		}
		out[n++] = (int)v;
	}
	free(copy);
	return n;
}

static bool
parse_workloads(const char *arg)
{
	char *copy = strdup(arg), *save = NULL, *tok;
	bool ok = true;

	w5a = w5b = false;
	for (tok = strtok_r(copy, ", ", &save); tok != NULL;
	     tok = strtok_r(NULL, ", ", &save)) {
		const char *p = tok + (tok[0] == 'W' || tok[0] == 'w');
		if (p[0] < '1' || p[0] > '7') {
			ok = false;
			break;
		}
		int w = p[0] - '0';
		if (w == 5 && (p[1] == 'a' || p[1] == 'A') && p[2] == '\0')
			w5a = true;
		else if (w == 5 && (p[1] == 'b' || p[1] == 'B') && p[2] == '\0')
			w5b = true;
		else if (p[1] != '\0') {
			ok = false;
			break;
		} else if (w == 5)
			w5a = w5b = true;
		w_sel[w] = true;
	}
	free(copy);
	return ok;
}

static bool
parse_locks(const char *arg)
{
	char *copy = strdup(arg), *save = NULL, *tok;
	bool ok = true;

	lk_mask = 0;
	for (tok = strtok_r(copy, ", ", &save); tok != NULL;
	     tok = strtok_r(NULL, ", ", &save)) {
		int k;
		for (k = 0; k < NLK; k++)
			if (strcmp(tok, lk_opt[k]) == 0 ||
			    strcmp(tok, lk_name[k]) == 0)
				break;
		if (k == NLK) {
			ok = false;
			break;
		}
		lk_mask |= 1u << k;
	}
	free(copy);
	return ok && lk_mask != 0;
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

/* The plot script: $LOCKBENCH_PLOT, else next to this program. */
static void
plot(const char *argv0, const char *csvpath, const char *png)
{
	char script[4096], exe[4096];
	const char *env = getenv("LOCKBENCH_PLOT"), *dir = argv0, *slash;
	ssize_t len = readlink("/proc/self/exe", exe, sizeof exe - 1);
	int status;
	pid_t pid;

	if (len > 0) {
		exe[len] = '\0';
		dir = exe;
	}
	slash = strrchr(dir, '/');
	if (env != NULL && *env != '\0')
		snprintf(script, sizeof script, "%s", env);
	else if (slash != NULL)
		snprintf(script, sizeof script, "%.*s/lockbench-plot.sh",
		    (int)(slash - dir), dir);
	else
		snprintf(script, sizeof script, "lockbench-plot.sh");
	if (access(script, R_OK) != 0) {
		fprintf(stderr,
		    "lockbench: no plot script %s (set "
		    "LOCKBENCH_PLOT); no chart drawn\n",
		    script);
		return;
	}
	fflush(stdout);
	fflush(stderr);
	if ((pid = fork()) < 0) {
		perror("lockbench: fork");
		return;
	}
	if (pid == 0) {
		execl("/bin/sh", "sh", script, csvpath, png, (char *)NULL);
		_exit(127);
	}
	while (waitpid(pid, &status, 0) < 0 && errno == EINTR)
		;
	if (!WIFEXITED(status) || WEXITSTATUS(status) != 0)
		fprintf(
		    stderr, "lockbench: %s failed; no chart drawn\n", script);
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
	char model[256], machine[512], tmpcsv[64] = "";
	bool any = false, t_given = false, dry_run = false;
	struct pl_tuning tun;
	struct utsname un;
	cpu_set_t set;
	int opt, est;

	while ((opt = getopt_long(
	            argc, argv, "w:t:l:d:r:o:nh", longopts, NULL)) != -1) {
		char *end;
		switch (opt) {
		case 'w':
			if (!parse_workloads(optarg)) {
				fprintf(
				    stderr, "lockbench: bad -w %s\n", optarg);
				return 2;
			}
			break;
		case 't':
			ntc2 = parse_ints(optarg, tc2, MAXTC);
			if (ntc2 < 1) {
				fprintf(stderr,
				    "lockbench: bad -t %s (1..%d "
				    "threads, at most %d counts)\n",
				    optarg, MAXTHREADS, MAXTC);
				return 2;
			}
			t_given = true;
			break;
		case 'l':
			if (!parse_locks(optarg)) {
				fprintf(
				    stderr, "lockbench: bad -l %s\n", optarg);
				return 2;
			}
			lk_explicit = true;
			break;
		case 'd':
			secs = strtod(optarg, &end);
			if (*end != '\0' || !(secs >= 0.01 && secs <= 3600)) {
				fprintf(
				    stderr, "lockbench: bad -d %s\n", optarg);
				return 2;
			}
			break;
		case 'r':
			runs = (int)strtol(optarg, &end, 10);
			if (*end != '\0' || runs < 1 || runs > MAXRUNS) {
				fprintf(stderr,
				    "lockbench: bad -r %s (1..%d)\n", optarg,
				    MAXRUNS);
				return 2;
			}
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
		case 'h':
			usage(stdout, argv[0]);
			return 0;
		default:
			usage(stderr, argv[0]);
			return 2;
		}
	}
	if (optind != argc) {
		usage(stderr, argv[0]);
		return 2;
	}
	for (int w = 1; w <= 7; w++)
		any |= w_sel[w];
	if (!any)
		for (int w = 1; w <= 7; w++)
			w_sel[w] = true;
	if (t_given) { /* W6 takes the even counts: equal readers, writers */
		ntc6 = 0;
		for (int c = 0; c < ntc2; c++)
			if (tc2[c] % 2 == 0)
				tc6[ntc6++] = tc2[c];
		if (w_sel[6] && ntc6 < ntc2)
			fprintf(stderr,
			    "lockbench: W6 %s odd thread counts "
			    "(equal readers and writers)\n",
			    ntc6 == 0 ? "skipped: it takes no" : "leaves out");
		if (ntc6 == 0)
			w_sel[6] = false;
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

	cpu_model(model, sizeof model);
	uname(&un);
	pl_tuning_get(&tun);
	snprintf(machine, sizeof machine,
	    "%s, %d CPUs, glibc %s, libparkinglot %s, Linux %s %s", model,
	    ncpus, gnu_get_libc_version(), pl_version(), un.release,
	    un.machine);
	est = (int)(expected_duration() + 0.5);
	printf("lockbench: libparkinglot against glibc, ratios pl/pthread of "
	       "medians\n");
	printf("machine: %s\n", machine);
	printf("pl tuning: spin %u, yield %u, fairness %u us\n", tun.spin_limit,
	    tun.yield_limit, tun.fair_interval_us);
	printf(
	    "%d runs per cell of %.2f s each, fresh threads per run, thread i "
	    "on CPU i mod %d; expected duration %d min %02d s\n",
	    runs, secs, ncpus, est / 60, est % 60);
	fflush(stdout);
	fprintf(stderr, "lockbench: expected duration %d min %02d s\n",
	    est / 60, est % 60);
	if (dry_run)
		return 0;
	if (csv != NULL) {
		fprintf(csv,
		    "# machine: %s; pl tuning: spin %u, yield %u, "
		    "fairness %u us; %d runs of %.2f s\n",
		    machine, tun.spin_limit, tun.yield_limit,
		    tun.fair_interval_us, runs, secs);
		fprintf(csv,
		    "workload,threads,lock,metric,unit,median,min,max,"
		    "ratio,target,result\n");
	}

	double t0 = now();
	if (w_sel[1])
		bench_w1();
	if (w_sel[2])
		bench_w2();
	if (w_sel[3])
		bench_w3();
	if (w_sel[4])
		bench_w4();
	if (w_sel[5])
		bench_w5();
	if (w_sel[6])
		bench_w6();
	if (w_sel[7])
		bench_w7();

	int met = 0;
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
		plot(argv[0], csvpath, png);
	if (tmpcsv[0] != '\0')
		unlink(tmpcsv);
	return 0;
}
