/* SPDX-License-Identifier: MIT */
/*
 * lockbench's shared declarations, between tools/lockbench.c (options, the
 * runner, the tables, CSV and targets), tools/lockbench-workloads.c (the
 * workloads: their descriptions in work[], set-up, checks and thread
 * bodies, and the run helpers) and tools/lockbench-cxx.cc (the C++
 * workloads' thread bodies and runs): the lock kinds, a run's threads and
 * figures (struct thr, struct run), a series of runs (struct ser), the
 * description of a workload (struct workload), the few globals they read,
 * the run helpers and the inline ones of the thread bodies' loops, and the
 * clock.  C and C++ both include it: C linkage throughout.
 */
#ifndef LOCKBENCH_H
#define LOCKBENCH_H

#include <errno.h>
#include <pthread.h>
#include <sched.h>
#include <stdalign.h> /* alignas in C; a keyword in C++ */
#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>
#include <time.h>

#ifdef __cplusplus
extern "C" {
#endif

#define STR_(x) #x
#define STR(x) STR_(x)

#define MAXRUNS 50   /* -r */
#define MAXTC 16     /* entries in a -t list */
#define NMET 6       /* metrics per workload */
#define NCOL 9       /* columns of a table */
#define NV MAXRUNS   /* figures in a series: its runs, or a workload's rounds */
#define NWORK 14     /* entries in work[] */
#define WORK_MASK 63 /* W2, W6: 1 + 0..63 xorshift steps outside the lock */
#define W5_CAP 16    /* W5a: the queue's capacity */

/* The lock kinds; W5 and W6 compare kinds 0 (pl) and 1 (pthread), LK_PL
 * and LK_PT for -l, and the C++ workloads kinds 0 (pl::) and 1 (std::).
 * lk_opt[] names them for -l, lk_name[] in the tables; cv_name[] and
 * rw_name[] are W5's and W6's, ad_name[] W9's (pl_mutex with and
 * without the adaptive yield rounds), cxx_mutex_name[], cxx_cv_name[] and
 * cxx_rw_name[] those of W2cxx, W5acxx and W6cxx. */
enum { LK_PL, LK_PT, LK_AD, LK_SPIN, NLK };
extern const char *lk_name[NLK];
extern const char *const lk_opt[NLK];
extern const char *cv_name[2], *rw_name[2], *ad_name[2];
extern const char *cxx_mutex_name[2], *cxx_cv_name[2], *cxx_rw_name[2];
/* Writable: --dropin renames the pthread and std:: kinds (lockbench.c). */
extern pthread_mutexattr_t adaptive_attr; /* LK_AD's, set up by main() */

/* A thread of a run: fresh ones for every run, thread i pinned to CPU i
 * mod n. */
struct thr {
	pthread_t tid;
	int idx, role;
	pid_t os_tid;
	unsigned long ops, bad;
	long csw, vcsw; /* context switches, and the voluntary ones */
	double cpu_s, t_end;
	double maxgap; /* W8: the longest time between two of its unlocks */
	unsigned long in_run; /* W8: its unlocks before the stop */
	uint64_t sink;
};

/* What a run measured, summed over its threads: a metric divides one v[]
 * by another.  R_ONE is 1, R_EL the elapsed time, R_TEND the latest t_end,
 * R_SPAN that since t0 (when the measured span began), R_LO and R_HI the
 * fewest and most operations of a thread, R_MEAN the mean, R_MAXGAP the
 * longest maxgap of a thread, R_STARVED the threads with no unlock before the
 * stop (W8). */
enum { R_ONE, R_OPS, R_OPS0, R_OPS1, R_EL, R_TEND, R_SPAN, R_CPU };
enum { R_LO = R_CPU + 1, R_HI, R_MEAN, R_CSW, R_VCSW, R_IDEAL, R_BYTES };
enum { R_MAXGAP = R_BYTES + 1, R_STARVED, R_N };
struct run {
	struct thr *t;
	int k, n;
	bool timed; /* runs -d seconds, to the stop flag */
	void *(*fn)(void *);
	double t0, v[R_N];
	unsigned long ops[2], bad; /* ops by role */
	uint64_t sink[2];
};

/* A series: a figure of each run of a cell (see tools/lockbench.c). */
struct ser {
	int n;
	double v[NV];
};
enum { Q_MIN, Q_MED, Q_MAX, Q_LAST };
void ser_put(struct ser *s, double x);
double ser_stat(const struct ser *s, int q);

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
 * with value its median, or with worst too its worst run: the highest if
 * le, else the lowest) is at most (le) or at least bound.  fmt prints the
 * bound in the table and CSV (NULL: the previous one says it); the
 * summary gives label and the figure, with dec decimals and unit. */
struct clause {
	int m;
	bool value, le;
	double bound;
	const char *fmt, *label, *unit;
	int dec;
	bool worst;
};

/* A -t list: thread counts, the cells of W2 and W6 (and their C++
 * twins). */
struct tlist {
	int n, v[MAXTC];
};

/* A workload: cells of thread counts (tl, a column of the table, or n) by
 * lock kinds (kname: NLK, or 2), each cell runs runs (or rounds) of its
 * steps through run(); title is a format of runs, tv[0] and tv[1].  A run
 * costs cost[0] + cost[1] x -d seconds and prepare() prep seconds. */
enum { F_TIMED = 1, F_BEST = 2, F_SPIN_NAMED = 4, F_WAKE = 8, F_CXX = 16 };
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
	struct col col[NCOL];
	struct clause tgt[3];
	int rounds;
	double prep;
	void (*prepare)(void);
	void (*finish)(struct ser *, int k, int c); /* lock k, cell c */
	const char *why; /* why its targets miss here, as far as measured */
};

extern struct workload work[];
extern struct tlist tl2, tl6; /* W2's and W6's cells, changed by -t */
extern struct tlist tl8;      /* W8's: 64, 256, 1024 threads */

/* Set by the options and main(): -d, and the CPUs threads go on. */
extern double secs;
extern int ncpus, cpus[CPU_SETSIZE];
/* Set by the workloads, read by the runner: the figures in W3's and W4's
 * titles, and the "-" rows of the current workload. */
extern double tv[2];
extern struct ser glob[NMET];

/* Exit 2 after a system error, or 1 after a failed check (the run named,
 * then the message); pin the threads of attr to one CPU. */
__attribute__((noreturn)) void die(const char *what, int err);
__attribute__((noreturn, format(printf, 1, 2))) void check_failed(
    const char *fmt, ...);
void pin(pthread_attr_t *attr, int cpu);

/* Append to a line of LB_LINE bytes: a table row, a target, a reason. */
#define LB_LINE 200
void cat(char *row, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

/* Clock id in seconds (now(): the monotonic clock; a function, not a
 * macro, which would rewrite <chrono>'s now() in C++); a sleep of ns
 * nanoseconds, through signals. */
static inline double
clock_s(clockid_t id)
{
	struct timespec ts;
	clock_gettime(id, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

static inline double
now(void)
{
	return clock_s(CLOCK_MONOTONIC);
}

static inline void
sleep_ns(int64_t ns)
{
	struct timespec ts = { (time_t)(ns / 1000000000),
		(long)(ns % 1000000000) };
	while (clock_nanosleep(CLOCK_MONOTONIC, 0, &ts, &ts) == EINTR)
		;
}

/* ------------------------------------------------------------------ */
/* Runs (tools/lockbench-workloads.c), for the workloads of both files. */

/* The stop flag of timed runs, on a cache line of its own, away from the
 * locks: every thread reads it on every turn of its loop. */
struct stop_line {
	alignas(64) int stop;
	double stop_at; /* now() when stop was raised, written before it */
};
extern struct stop_line flag;

/* Start a run's threads (r->fn on each of r->t) and, if it is timed, let
 * them run -d seconds; then join them (stopping a timed run first) and
 * sum their figures into r.  In each thread: thr_begin() waits for the
 * others and returns its CPU clock, thr_done() puts its figures. */
void run_go(struct run *r);
void run_end(struct run *r);
double thr_begin(struct thr *t);
void *thr_done(struct thr *t, unsigned long ops, uint64_t sink, double cpu0);

/* The loops' helpers: the stop flag, a step of xorshift64, n of them (the
 * work outside the lock), and thread i's seed. */
#define LB_INLINE static inline __attribute__((always_inline))

LB_INLINE bool
stopping(void)
{
	return __atomic_load_n(&flag.stop, __ATOMIC_RELAXED) != 0;
}

LB_INLINE uint64_t
xorshift(uint64_t x)
{
	x ^= x << 13;
	x ^= x >> 7;
	x ^= x << 17;
	return x;
}

LB_INLINE uint64_t
busy_work(uint64_t x, unsigned n)
{
	for (; n > 0; n--)
		x = xorshift(x);
	return x;
}

/* W2's and W6's private work: one step, then 0..WORK_MASK more, drawn
 * from the top bits of the state.  (Drawing them from the low bits, as
 * lockbench did before, stalls: once those bits are 0 no step is taken,
 * the state never moves again, and after 50 to 200 iterations a thread
 * did no private work at all.) */
LB_INLINE uint64_t
private_work(uint64_t x)
{
	return busy_work(xorshift(x), (unsigned)(x >> 58) & WORK_MASK);
}

static inline uint64_t
seed(int i)
{
	return (0x9e3779b97f4a7c15u * (uint64_t)(i + 1)) | 1;
}

/* ------------------------------------------------------------------ */
/* The C++ workloads (tools/lockbench-cxx.cc): for kinds 0 (pl::) and 1
 * (std::) each one's thread function, and its run.  Without a C++17
 * compiler lockbench links tools/lockbench-nocxx.c instead, where
 * cxx_built is false and the runner leaves the F_CXX workloads out. */
extern const bool cxx_built;
extern void *(*const w2cxx_fn[2])(void *);
extern void *(*const w5acxx_fn[2])(void *);
extern void *(*const w6cxx_fn[2])(void *);
void w2cxx_run(struct run *r);
void w5acxx_run(struct run *r);
void w6cxx_run(struct run *r);

#ifdef __cplusplus
}
#endif

#endif
