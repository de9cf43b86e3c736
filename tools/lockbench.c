/* SPDX-License-Identifier: MIT */
/*
 * lockbench: libparkinglot's primitives against glibc's, and its C++ types
 * against the standard library's, in one run.
 *
 * The workloads of the speed issues, W1..W8, each described in work[] of
 * tools/lockbench-workloads.c; each prints a table with the median and
 * min..max of its runs, the ratio pl/pthread of the medians and, on the pl
 * row, the target and whether it was met:
 *
 *   W1  uncontended: one thread, ns per lock+unlock pair (best of runs).
 *   W2  contended short critical section: 2, 4, 8, 32 threads increment a
 *       shared counter inside the lock and do 1..64 xorshift steps outside;
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
 *   W8  oversubscription: 64, 256 and 1024 threads on the machine's CPUs
 *       run the W2 loop on one lock (W8) or on 16 (W8x16, thread i on
 *       lock i mod 16); ops/s, CPU per op, the lowest and highest
 *       thread's share of the mean (fairness: a thread that did not
 *       unlock before the stop is starved), and the longest any thread
 *       went between two of its unlocks.  Its thread counts are fixed
 *       (-t does not change them).
 *   W9  the adaptive yield rounds (lib/spin.c): the W2 loop with them and
 *       with PARKINGLOT_ADAPT=0, each run in a child process of this
 *       program (--one-run), since the library reads its tuning once per
 *       process; ratios adaptive/fixed.
 *   W2cxx, W5acxx, W6cxx  the C++ types of <parkinglot.hpp> against the
 *       standard library's, in the loops of W2, W5a and W6 (W2's and W6's
 *       thread counts, the same figures, checks and targets), written as
 *       a C++ program writes them; `-w cxx' selects the three.
 *
 * The locks: pl_mutex_t, pthread_mutex_t (default attributes and
 * PTHREAD_MUTEX_ADAPTIVE_NP) and a test-and-test-and-set spinlock with
 * pause; for W5 pl_cond_t+pl_mutex_t and pthread_cond_t+pthread_mutex_t;
 * for W6 pl_rwlock_t and pthread_rwlock_t; for W2cxx pl::mutex and
 * std::mutex, for W5acxx pl::condition_variable with
 * std::unique_lock<pl::mutex> and std::condition_variable with
 * std::unique_lock<std::mutex>, for W6cxx pl::shared_mutex and
 * std::shared_mutex, their ratios pl::/std::.  CPU seconds are each worker's
 * CLOCK_THREAD_CPUTIME_ID from the start barrier to its end, summed.
 * Thread i is pinned to the i-th CPU of the affinity mask (modulo their
 * number), every run starts fresh threads, every cell is several short
 * runs, run r of every lock before run r + 1 of any.  A progress line
 * per run goes to stderr; -o writes every figure as CSV; --plot draws W2
 * and W6 with tools/lockbench-plot.sh (gnuplot).
 * Exit status: 0 (whatever the targets); 1 if a check found a lock letting
 * two threads in or losing an item; 2 for usage and system errors (and for
 * a C++ workload named when configure found no C++17 compiler: then
 * lockbench is built without them).
 *
 * This file holds the options, the runner that runs any workload from its
 * description, the statistics, the tables, CSV and targets, and the
 * wake-up latency probe; tools/lockbench-workloads.c the workloads and
 * the run helpers, tools/lockbench-cxx.cc the C++ workloads' thread bodies
 * and runs (tools/lockbench-nocxx.c stands in for it without C++17), and
 * tools/lockbench.h what they share.
 */
#define _GNU_SOURCE
#include <dlfcn.h>
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
#include <sys/syscall.h>
#include <sys/utsname.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <parkinglot.h>

#include "lockbench.h"
#include "toolutil.h"

#define DEFAULT_SECS 1.0
#define DEFAULT_RUNS 3
#define MAXTHREADS 1024 /* per entry of -t */
#define WL_ROUNDS 200   /* wake-up latency: wakes per CPU */

/* ------------------------------------------------------------------ */
/* Globals, errors, pinning. */

double secs = DEFAULT_SECS;
int ncpus, cpus[CPU_SETSIZE];
static int runs = DEFAULT_RUNS;
struct ser glob[NMET]; /* the "-" rows of the current workload */
static double wl_same = -1, wl_other = -1; /* wake-up latencies, s */
static char who[160]; /* the current run: "W2 8 threads pl_mutex" */

void
die(const char *what, int err)
{
	fprintf(stderr, "lockbench: %s: %s\n", what, strerror(err));
	exit(2);
}

/* A failed correctness check: a lock let two threads in, or lost an item. */
void
check_failed(const char *fmt, ...)
{
	char head[sizeof who + 32];
	snprintf(head, sizeof head, "\nlockbench: CHECK FAILED: %s: ", who);
	va_list ap;
	va_start(ap, fmt);
	tool_vexit(1, head, "\n", fmt, ap);
}

/* The threads attr creates run on the given CPU only. */
void
pin(pthread_attr_t *attr, int cpu)
{
	cpu_set_t set;

	CPU_ZERO(&set);
	CPU_SET(cpu, &set);
	pthread_attr_setaffinity_np(attr, sizeof set, &set);
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

void
ser_put(struct ser *s, double x)
{
	if (s->n < NV)
		s->v[s->n++] = x;
}

/* A series' minimum, median, maximum or last value; -1 if it is empty. */
double
ser_stat(const struct ser *s, int q)
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

/* ------------------------------------------------------------------ */
/* The runner. */

static unsigned lk_mask = (1u << NLK) - 1;
static bool lk_explicit, w_sel[NWORK];   /* -l given; -w */
static struct ser res[MAXTC][NLK][NMET]; /* the current workload's cells */
static FILE *csv;
static struct {
	char what[LB_LINE];
	bool met;
	const char *why; /* the workload's */
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
	double a = ser_stat(&s[m], q), b = ser_stat(&res[c][LK_PT][m], q);
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
			ser_put(&s[m - w->m], x * (m->scale ? m->scale : 1));
	}
	if (w->rounds && r + 1 < nrun)
		return;
	for (int i = 0; i < 3; i++) {
		m = &w->m[p->pm[i]];
		f[i] = ser_stat(&s[p->pm[i]], w->rounds ? Q_MED : Q_LAST) *
		    (m->pscale ? m->pscale : 1);
	}
	fprintf(stderr, p->pfmt, f[0], f[1], f[2]);
	fprintf(stderr, "\n");
}

/* Append to a table row, a target or its summary line (lockbench.h). */
void
cat(char *row, const char *fmt, ...)
{
	size_t len = strlen(row);
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(row + len, LB_LINE - len, fmt, ap);
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
	    k < 0 ? "-" : w->kname[k], mt->name, mt->unit, ser_stat(s, Q_MED),
	    ser_stat(s, Q_MIN), ser_stat(s, Q_MAX));
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
	snprintf(line, LB_LINE, "%s", w->name);
	if (w->tl)
		cat(line, " %d threads", n);
	for (const struct clause *cl = w->tgt; cl < w->tgt + 3 && cl->label;
	     cl++) {
		int q = !cl->worst ? Q_MED : cl->le ? Q_MAX : Q_MIN;
		double v =
		    cl->value ? ser_stat(&s[cl->m], q) : mratio(w, s, cl->m, c);
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
	targets[ntargets].why = w->why;
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
		    ser_stat(x, pair ? Q_MED : Q_MIN) * f, cl->dec,
		    ser_stat(x + pair, pair ? Q_MED : Q_MAX) * f);
	else
		snprintf(b, 64, cl->what == C_PCT ? "%.*f%%" : "%.*f", cl->dec,
		    ser_stat(x, cl->what == C_BEST ? Q_MIN : Q_MED) * f);
	return b;
}

/* The title, notes and table of a workload (the header as row k -1 of the
 * first cell), and its CSV rows. */
static void
print_table(const struct workload *w)
{
	char row[LB_LINE], b[64], tg[LB_LINE];
	int lockw = w->kname == cv_name ? 20 : 18;

	for (int k = 0; k < NLK; k++) /* std::condition_variable */
		if (kind_on(w, k) && (int)strlen(w->kname[k]) + 1 > lockw)
			lockw = (int)strlen(w->kname[k]) + 1;

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
			     cl < w->col + NCOL && cl->head; cl++)
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

/* Runs from..to - 1 (of nrun) of lock kind k in cell c, each of every
 * step that is not global. */
static void
run_runs(const struct workload *w, int c, int k, int from, int to, int nrun)
{
	for (int r = from; kind_on(w, k) && r < to; r++)
		for (int st = 0; st < 3 && w->step[st].fn; st++)
			if (!w->step[st].global)
				run_step(w, st, k, cell_threads(w, c), r, nrun,
				    res[c][k]);
}

/* Run a workload: its set-up and global steps, then for each cell (thread
 * count) the runs of its steps with each lock kind; then its table. */
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
	for (int c = 0; c < ncells(w); c++) {
		/* Run r of every lock, then run r + 1: a drift of the
		 * machine's speed within a cell falls on all of them alike.
		 * A workload of rounds runs each lock's in a row. */
		int per = w->rounds ? nrun : 1;
		for (int r = 0; r < nrun; r += per)
			for (int k = 0; k < NLK; k++)
				run_runs(w, c, k, r, r + per, nrun);
		for (int k = 0; k < NLK; k++)
			if (kind_on(w, k) && w->finish)
				w->finish(res[c][k], k, c);
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
		for (int i = 0; opt == 'w' && i < NWORK; i++) {
			/* W5: W5a and W5b, not W5acxx; cxx: the C++ ones */
			bool cxx = work[i].flags & F_CXX;
			if (strcasecmp(work[i].name + 1, p) == 0 ||
			    (!cxx && p[0] == work[i].name[1] && p[1] == '\0') ||
			    (cxx && strcasecmp(tok, "cxx") == 0))
				ok = w_sel[i] = true;
		}
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
	    "Measures libparkinglot against glibc's locks, and its C++ types\n"
	    "against the standard library's; prints a table per workload with\n"
	    "the ratio pl/pthread (pl::/std::) of the medians and the target.\n"
	    "  -w LIST     workloads: W1..W9, W5a, W5b, W8x16 (W8: both); the\n"
	    "              C++ types: W2cxx, W5acxx, W6cxx, or cxx for the\n"
	    "              three (default: all)\n"
	    "  -t LIST     thread counts for W2 and W6 and their C++ twins\n"
	    "              (default W2 2,4,8,32; W6 2,4,8,16; W6 takes only\n"
	    "              the even ones)\n"
	    "  -l LIST     locks: pl,pthread,adaptive,spin (default: all, but\n"
	    "              W3 runs spin only if -l names it; W5 and W6 use pl\n"
	    "              and pthread only, the C++ workloads pl:: and std::\n"
	    "              as pl and pthread)\n"
	    "  -d SECONDS  duration of each run (default %.1f)\n"
	    "  -r RUNS     runs per cell, median and min..max (default %d)\n"
	    "  -o FILE     also write every figure as CSV\n"
	    "  -n          print the header and expected duration, run "
	    "nothing\n"
	    "  --plot PNG  draw W2 and W6 throughput against threads with\n"
	    "              tools/lockbench-plot.sh (gnuplot; $LOCKBENCH_PLOT\n"
	    "              names another script)\n"
	    "  --dropin[=SO]  run again with libparkinglot-pthread preloaded\n"
	    "              (SO, else the one built beside this program, else\n"
	    "              the installed one): the pthread rows then run on\n"
	    "              the drop-in, named dropin_*, and the ratios are\n"
	    "              pl/drop-in (so do the std:: rows, over pthread)\n"
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

/* --dropin: the pthread rows run on libparkinglot-pthread, and so do the
 * std:: rows: libstdc++'s mutex, condition variable and shared mutex call
 * pthread_mutex_*, pthread_cond_* and pthread_rwlock_*. */
static void
dropin_relabel(void)
{
	lk_name[LK_PT] = "dropin_mutex";
	lk_name[LK_AD] = "dropin_adaptive";
	cv_name[1] = "dropin_cond+mutex";
	rw_name[1] = "dropin_rwlock";
	cxx_mutex_name[1] = "dropin_std::mutex";
	cxx_cv_name[1] = "dropin_std::condition_variable";
	cxx_rw_name[1] = "dropin_std::shared_mutex";
}

/* --dropin: the library to preload, and whether this process already
 * runs with it (the re-executed one). */
#define DROPIN_ENV "LOCKBENCH_IN_DROPIN"
static const char *dropin_so;

static bool
dropin_serves_pthread(void)
{
	Dl_info info;
	void *sym = dlsym(RTLD_DEFAULT, "pthread_mutex_lock");
	return sym && dladdr(sym, &info) && info.dli_fname &&
	    strstr(info.dli_fname, "libparkinglot-pthread") != NULL;
}

/* Before anything runs: re-execute this program with the drop-in
 * preloaded, or, in the re-executed one, check that it took. */
static void
dropin_mode(char **argv)
{
	static char built[4096];
	if (getenv(DROPIN_ENV) != NULL) {
		if (!dropin_serves_pthread()) {
			fprintf(stderr,
			    "lockbench: --dropin: pthread_mutex_lock is not "
			    "the "
			    "drop-in's (LD_PRELOAD=%s)\n",
			    getenv("LD_PRELOAD") ? getenv("LD_PRELOAD") : "");
			exit(2);
		}
		dropin_relabel();
		return;
	}
	const char *so = dropin_so;
	if (so == NULL || *so == '\0') {
		ssize_t n =
		    readlink("/proc/self/exe", built, sizeof built - 64);
		char *slash =
		    n > 0 ? (built[n] = '\0', strrchr(built, '/')) : NULL;
		so = LOCKBENCH_DROPIN_PATH;
		if (slash) {
			strcpy(slash, "/../lib/.libs/libparkinglot-pthread.so");
			if (access(built, R_OK) == 0)
				so = built;
		}
	}
	if (access(so, R_OK) != 0) {
		fprintf(stderr, "lockbench: --dropin: %s: %s\n", so,
		    strerror(errno));
		exit(2);
	}
	if (setenv("LD_PRELOAD", so, 1) != 0 || setenv(DROPIN_ENV, so, 1) != 0)
		die("setenv", errno);
	fflush(NULL);
	execv("/proc/self/exe", argv);
	die("execv /proc/self/exe", errno);
}

/* --one-run NAME,N (W9's child process): one run of workload NAME's
 * first step with N threads on pl_mutex, its figures v[] on one line of
 * stdout, nothing else; exit 1 if its check fails, 2 for a bad NAME,N. */
static int
child_run(const char *spec)
{
	const char *comma = strchr(spec, ',');
	char *end;
	long n = comma ? strtol(comma + 1, &end, 10) : 0;
	const struct workload *w = NULL;

	for (int i = 0; comma && i < NWORK; i++)
		if (strncmp(work[i].name, spec, (size_t)(comma - spec)) == 0 &&
		    work[i].name[comma - spec] == '\0')
			w = &work[i];
	if (w == NULL || *end != '\0' || n < 1 || n > MAXTHREADS) {
		fprintf(stderr, "lockbench: bad --one-run %s\n", spec);
		return 2;
	}
	struct run R = { .k = LK_PL, .n = (int)n, .fn = w->step[0].fn[LK_PL] };
	R.timed = w->flags & F_TIMED;
	R.v[R_ONE] = 1;
	snprintf(who, sizeof who, "%s %ld threads pl_mutex", w->name, n);
	if ((R.t = calloc((size_t)R.n, sizeof *R.t)) == NULL)
		die("calloc", errno);
	w->run(&R);
	free(R.t);
	for (int i = 0; i < R_N; i++)
		printf("%s%a", i ? " " : "", R.v[i]);
	printf("\n");
	return fflush(stdout) == 0 ? 0 : 2;
}

int
main(int argc, char **argv)
{
	static const struct option longopts[] = {
		{ "plot", required_argument, NULL, 'P' },
		{ "dropin", optional_argument, NULL, 'D' },
		{ "one-run", required_argument, NULL, 'O' },
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 },
	};
	const char *csvpath = NULL, *png = NULL, *one = NULL;
	char mach[512], tuning[160], dur[32], tmpcsv[64] = "", *end;
	bool any = false, t_given = false, dry_run = false, dropin = false;
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
		case 'D':
			dropin = true;
			dropin_so = optarg;
			break;
		case 'O':
			one = optarg;
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
	for (int i = 0; i < NWORK; i++) {
		if (w_sel[i] && work[i].flags & F_CXX && !cxx_built) {
			fprintf(stderr,
			    "lockbench: %s not built: configure found no "
			    "C++17 compiler\n",
			    work[i].name);
			return 2;
		}
		any |= w_sel[i];
	}
	if (dropin)
		dropin_mode(argv);
	else if (dropin_serves_pthread()) {
		/* Preloaded from outside (tools/parkstat does it): the
		 * pthread rows run on the drop-in, and must say so. */
		dropin = true;
		dropin_relabel();
	}
	for (int i = 0; i < NWORK; i++) /* all: those that were built */
		w_sel[i] |= !any && (cxx_built || !(work[i].flags & F_CXX));
	if (t_given) { /* W6 takes the even counts: equal readers, writers */
		tl6.n = 0;
		for (int c = 0; c < tl2.n; c++)
			if (tl2.v[c] % 2 == 0)
				tl6.v[tl6.n++] = tl2.v[c];
		for (int i = 0; i < NWORK; i++) {
			if (work[i].tl != &tl6 || !w_sel[i])
				continue;
			if (tl6.n < tl2.n)
				fprintf(stderr,
				    "lockbench: %s %s odd thread counts (equal "
				    "readers and writers)\n",
				    work[i].name,
				    tl6.n == 0 ? "skipped: it takes no"
				               : "leaves out");
			w_sel[i] = tl6.n > 0;
		}
	}

	if (sched_getaffinity(0, sizeof set, &set) == 0)
		for (int c = 0; c < CPU_SETSIZE; c++)
			if (CPU_ISSET(c, &set))
				cpus[ncpus++] = c;
	pthread_mutexattr_init(&adaptive_attr);
	pthread_mutexattr_settype(&adaptive_attr, PTHREAD_MUTEX_ADAPTIVE_NP);
	if (one != NULL)
		return child_run(one);
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
	/* The adaptive yield rounds have no field in struct pl_tuning. */
	const char *adapt = getenv("PARKINGLOT_ADAPT");
	snprintf(tuning, sizeof tuning,
	    "spin %u, yield %u, fairness %u us, PARKINGLOT_ADAPT %s",
	    tun.spin_limit, tun.yield_limit, tun.fair_interval_us,
	    adapt ? adapt : "unset (the default)");
	for (int i = 0; i < NWORK; i++)
		e += w_sel[i] ? expected(&work[i]) : 0;
	est = (int)(e + 0.5);
	snprintf(dur, sizeof dur, "%d min %02d s", est / 60, est % 60);
	printf("lockbench: libparkinglot against %s, ratios pl/pthread of "
	       "medians\nmachine: %s\npl tuning: %s\n%d runs per cell of "
	       "%.2f s each, fresh threads per run, thread i on CPU i mod %d; "
	       "expected duration %s\n",
	    dropin ? "the drop-in (pthread rows: dropin_*)" : "glibc", mach,
	    tuning, runs, secs, ncpus, dur);
	if (dropin)
		printf("drop-in: %s (the targets below are glibc's; here they "
		       "compare pl with the drop-in)\n",
		    getenv(DROPIN_ENV) ? getenv(DROPIN_ENV)
		                       : "preloaded by the caller");
#ifdef PL_CHECKED
	/* tools/lockbench-checked: the pl rows go through the deadlock
	 * detector's hooks; it is on unless PARKINGLOT_DEADLOCK says. */
	if (getenv("PARKINGLOT_DEADLOCK") == NULL)
		pl_deadlock_set(PL_DEADLOCK_REPORT);
	printf("checked build (-DPL_CHECKED), deadlock detector %s\n",
	    pl_deadlock_get() == PL_DEADLOCK_OFF ? "off" : "on");
#endif
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
	printf("\nTargets (pl against %s in this run):\n",
	    dropin ? "the drop-in" : "glibc");
	const char *why = NULL;
	for (int i = 0; i < ntargets; i++) {
		printf("  %-6s  %s\n", targets[i].met ? "met" : "MISSED",
		    targets[i].what);
		met += targets[i].met;
		/* The reason of a workload's misses, after its first. */
		if (!targets[i].met && targets[i].why && targets[i].why != why)
			printf("          why: %s\n", why = targets[i].why);
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
