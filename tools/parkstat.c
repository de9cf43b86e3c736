/* SPDX-License-Identifier: MIT */
/*
 * parkstat: what the locks of a program are doing, from the statistics
 * libparkinglot exports (lib/export.h): which addresses are contended,
 * how long threads wait, how long the queues get, and which threads are
 * parked now, on what and for how long (what a hung process waits for).
 *
 *   parkstat [-j] [-n N] [-s wait|parks] [-o FILE] [--] CMD [ARGS...]
 *   parkstat [-j] [-n N] [-s wait|parks] [-o FILE] -p PID [-i SECONDS]
 *
 * With a command: runs it with PARKINGLOT_STATS=1 and
 * PARKINGLOT_STATS_KEEP=<its pid> in its environment, so that the library
 * exports from load on and leaves the object at exit; waits for it
 * (ignoring SIGINT and SIGQUIT like time(1), forwarding SIGTERM and
 * SIGHUP), reads the final figures while the child is a zombie (so its
 * pid cannot be reused), removes the object, reaps the child, prints the
 * report on stderr (or -o FILE) and exits with the command's status
 * (128+signal if killed; 127 if it cannot be found, 126 if it cannot be
 * run, 125 if parkstat itself fails before running it).
 *
 * With -p: one report of a live process on stdout, or with -i one every
 * SECONDS until SIGINT or the process exits (then a last report, exit 0).
 * Errors are one line on stderr: exit status 2 for a malformed command
 * line, 1 for anything else.
 *
 * parkstat never links the library: it maps the object read-only and
 * reads it with relaxed atomic loads, as the library writes it.  The
 * object holds addresses only: parkstat names them itself, from the
 * target's maps and the symbol tables of the mapped files, with libdwfl
 * (see "naming addresses" below).
 */
#define _GNU_SOURCE
#include <elfutils/libdwfl.h>
#include <gelf.h>
#include <libelf.h>
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <inttypes.h>
#include <limits.h>
#include <math.h>
#include <poll.h>
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <parkinglot/version.h>

#include "export.h"
#include "kind.h"
#include "parkstat.h"
#include "toolutil.h"

#define BAR_WIDTH 40

static const char *prog = "parkstat";

/* ---- options ---------------------------------------------------------- */

enum sort_key { SORT_WAIT, SORT_PARKS };

static struct {
	long pid;        /* -p, 0 if none */
	double interval; /* -i, 0 if none */
	bool json;
	long top;    /* -n; 0 = every address */
	long stacks; /* --stacks; 0 = every call site */
	long sample; /* --sample, -1 if not given */
	enum sort_key sort;
	const char *output;
	bool no_preload; /* --no-preload */
	bool deadlock;   /* --deadlock */
} opt = { 0, 0, false, 10, 5, -1, SORT_WAIT, NULL, false, false };

/* parkstat --deadlock -- CMD: the exit status when the command made a
 * lock-order inversion. */
#define EXIT_INVERSION 3

static void __attribute__((noreturn, format(printf, 1, 2)))
usage_error(const char *fmt, ...)
{
	char head[96], tail[128];
	snprintf(head, sizeof head, "%s: ", prog);
	snprintf(tail, sizeof tail, " (see %s --help)\n", prog);
	va_list ap;
	va_start(ap, fmt);
	tool_vexit(2, head, tail, fmt, ap);
}

static void __attribute__((noreturn, format(printf, 2, 3)))
die(int status, const char *fmt, ...)
{
	va_list ap;
	fprintf(stderr, "%s: ", prog);
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fputc('\n', stderr);
	exit(status);
}

/* The help text as it prints. */
/* clang-format off */
static void
help(void)
{
	printf(
"Usage: %s [OPTION]... [--] COMMAND [ARG]...\n"
"  or:  %s [OPTION]... -p PID [-i SECONDS]\n"
"Show what the libparkinglot locks of a program are doing: parks, wait\n"
"times, queue lengths, the most contended addresses by name and kind,\n"
"the call stacks that waited longest, and the threads parked now, on\n"
"which lock and for how long (what a hung process waits for).\n"
"\n"
"With a COMMAND, run it with the statistics on (PARKINGLOT_STATS=1) and\n"
"print the report on stderr when it exits; exit with its status.\n"
"With -p, report on a running process that exports its statistics\n"
"(started with PARKINGLOT_STATS=1, or calling pl_stats_export).\n"
"\n"
"  -p, --pid=PID          report on the running process PID\n"
"  -i, --interval=SECONDS with -p: a new report every SECONDS (decimals\n"
"                         allowed) until interrupted or PID exits\n"
"  -j, --json             one JSON object per report instead of text\n"
"  -n, --top=N            show the N most contended addresses (default 10,\n"
"                         0 for all)\n"
"  -s, --sort=KEY         order addresses and call sites by 'wait' (total\n"
"                         time parked, the default) or 'parks'\n"
"      --stacks=N         show the N call sites that waited longest\n"
"                         (default 5, 0 for all)\n"
"      --sample=N         with a COMMAND: record the stack of 1 park in N\n"
"                         of each thread (default 8, 0 for none)\n"
"  -o, --output=FILE      write the report to FILE\n"
"      --deadlock         with a COMMAND: run it with the deadlock\n"
"                         detector on (PARKINGLOT_DEADLOCK=report; the\n"
"                         drop-in, or a build with -DPL_CHECKED) and\n"
"                         print every lock-order inversion it made;\n"
"                         exit with status 3 if there was any\n"
"      --no-preload       with a COMMAND: do not load the drop-in\n"
"                         (libparkinglot-pthread, which puts the pthread\n"
"                         and C11 locks of any program on the parking\n"
"                         lot; PARKSTAT_DROPIN names another copy)\n"
"  -h, --help             show this help and exit\n"
"  -V, --version          show the version and exit\n"
"\n"
"Exit status: with a COMMAND, its status (128+N if killed by signal N,\n"
"127 if not found, 126 if not executable, 125 if parkstat failed), but\n"
"3 with --deadlock if it made a lock-order inversion;\n"
"otherwise 0, 1 on an error, 2 on a malformed command line.\n"
"See parkstat(1).\n",
	    prog, prog);
}
/* clang-format on */

static long
parse_long(const char *s, long min, long max, const char *what)
{
	long v;
	if (!tool_parse_long(s, min, max, &v))
		usage_error("invalid %s '%s'", what, s);
	return v;
}

/* ---- reading the object ----------------------------------------------- */

struct source {
	long pid;
	char name[64]; /* shm name */
	char path[80]; /* for messages: /dev/shm/... */
	const volatile void *map;
	size_t size;
	dev_t dev; /* the object opened, to tell a new one of the name */
	ino_t ino;
	uint64_t image; /* image_of the process when opened */
	bool image_ok;
};

/* Everything a report shows, read once. */
struct snap {
	struct plx_shm s; /* a word-by-word copy */
	uint64_t c[PLX_NCOUNTERS];
	uint64_t maxq;
	uint64_t resets;   /* pl_stats_reset calls */
	uint64_t reset_ns; /* of the last pl_stats_reset, 0: none */
	uint64_t now_ns;   /* CLOCK_MONOTONIC when read */
};

/* Which counters are gauges (PL_STATS_LIST), +1 and -1 in any stripe. */
#define COUNTER_GAUGE(name, field, type, kind, label)                          \
	PLI_IF_COUNTER(kind, [PLX_##name] = PLI_GAUGE(kind), )
static const bool is_gauge[PLX_NCOUNTERS] = { PL_STATS_LIST(COUNTER_GAUGE) };
#undef COUNTER_GAUGE

/* The library writes with relaxed atomics and publishes names and paths
 * with release stores of the state word before them: copy in address
 * order with acquire loads. */
static void
copy_words(void *dst, const volatile void *src, size_t n)
{
	uint64_t *d = dst;
	const uint64_t *s = (const uint64_t *)(uintptr_t)src;
	for (size_t i = 0; i < n / 8; i++)
		d[i] = __atomic_load_n(&s[i], __ATOMIC_ACQUIRE);
}

/*
 * The object is the target's, and the target may truncate it while it is
 * mapped here (or anyone who may write it): a read of a page past its new
 * end raises SIGBUS.  So every read of the mapping runs under guarded(),
 * which turns that into false.
 */
static sigjmp_buf bus_jmp;

static void
on_sigbus(int sig)
{
	(void)sig;
	siglongjmp(bus_jmp, 1);
}

/* fn(arg), which reads the mapping: false if a read faulted.  The
 * handler is ours only meanwhile. */
static bool
guarded(void (*fn)(void *), void *arg)
{
	struct sigaction sa, old;
	memset(&sa, 0, sizeof sa);
	sa.sa_handler = on_sigbus;
	sigemptyset(&sa.sa_mask);
	sigaction(SIGBUS, &sa, &old);
	bool ok = true;
	if (sigsetjmp(bus_jmp, 1) != 0)
		ok = false;
	else
		fn(arg);
	sigaction(SIGBUS, &old, NULL);
	return ok;
}

struct copy {
	void *dst;
	const volatile void *src;
	size_t n;
};

static void
copy_fn(void *arg)
{
	const struct copy *c = arg;
	copy_words(c->dst, c->src, c->n);
}

/* The header of the mapping map, in h; false if it shrank. */
static bool
copy_header(struct plx_header *h, const volatile void *map)
{
	struct copy c = { h, map, sizeof *h };
	return guarded(copy_fn, &c);
}

/* Tables that do not follow the last reset yet read as 0 (export.h): the
 * figures that follow_resets in lib/export.c clears, and only those. */
static void
clear_tables(struct plx_shm *s)
{
	memset(s->hist, 0, sizeof s->hist);
	for (size_t i = 0; i < PLX_NSLOTS; i++) {
		struct plx_slot *sl = &s->slots[i];
		sl->contended = sl->taken = 0;
		sl->parks = sl->waits = sl->wait_ns = 0;
		sl->requeued_in = sl->max_queue = 0;
	}
	for (size_t i = 0; i < PLX_NSTACKS; i++) {
		struct plx_stack *st = &s->stacks[i];
		st->parks = st->wait_ns = st->max_ns = 0;
	}
	s->h.stacks_dropped = 0;
	s->h.overflow_parks = s->h.overflow_waits = 0;
	s->h.overflow_wait_ns = s->h.overflow_requeued = 0;
	s->h.threads_peak = s->h.threads_live;
}

struct snap_read {
	const struct source *src;
	struct snap *sn;
};

static void
read_snap(void *arg)
{
	const struct source *src = ((struct snap_read *)arg)->src;
	struct snap *sn = ((struct snap_read *)arg)->sn;
	copy_words(&sn->s, src->map, sizeof sn->s);
	/* Strings end inside their arrays, whatever the object holds. */
	sn->s.h.command[PLX_PATHLEN - 1] = '\0';
	/* The resets count before the counters: a reset zeroes them, then
	 * stores its time, then counts itself (release), so that counters
	 * read after the count are those of that reset or a later one. */
	const unsigned char *cp =
	    (const unsigned char *)(uintptr_t)src->map + PLX_COUNTERS_OFF;
	sn->resets = __atomic_load_n(
	    (const uint64_t *)(cp + PLX_RESETS_OFF), __ATOMIC_ACQUIRE);
	sn->reset_ns = __atomic_load_n(
	    (const uint64_t *)(cp + PLX_RESET_NS_OFF), __ATOMIC_RELAXED);
	memset(sn->c, 0, sizeof sn->c);
	for (unsigned i = 0; i < PLX_NSTRIPES; i++) {
		const uint64_t *st =
		    (const uint64_t *)(cp + (size_t)i * PLX_STRIPE_SIZE);
		for (unsigned k = 0; k < PLX_NCOUNTERS; k++)
			sn->c[k] += __atomic_load_n(&st[k], __ATOMIC_RELAXED);
	}
	/* A gauge's +1 and -1 land in different stripes, read at different
	 * moments: the sum can come out below 0 (a -1 seen, its +1 not).
	 * None is below 0 really: 0 then. */
	for (unsigned k = 0; k < PLX_NCOUNTERS; k++)
		if (is_gauge[k] && (int64_t)sn->c[k] < 0)
			sn->c[k] = 0;
	sn->maxq = __atomic_load_n(
	    (const uint64_t *)(cp + PLX_MAXQ_OFF), __ATOMIC_RELAXED);
	if (sn->s.h.tables_resets != sn->resets)
		clear_tables(&sn->s);
	/* The threads: each entry again, as its seqlock says (export.h);
	 * one that its thread kept rewriting reads as free. */
	const struct plx_shm *live = (const void *)(uintptr_t)src->map;
	for (size_t i = 0; i < PLX_NTHREADS; i++)
		if (!plx_thread_read(
		        &live->threads[i], &sn->s.threads[i], 1000))
			memset(&sn->s.threads[i], 0, sizeof sn->s.threads[i]);
	sn->now_ns = plx_clock_ns(CLOCK_MONOTONIC);
}

/* Read the object into sn; false if it shrank meanwhile. */
static bool
take_snap(const struct source *src, struct snap *sn)
{
	struct snap_read a = { src, sn };
	return guarded(read_snap, &a);
}

static bool
process_exists(long pid)
{
	return kill((pid_t)pid, 0) == 0 || errno == EPERM;
}

enum open_result { OPEN_OK, OPEN_NONE, OPEN_ACCESS, OPEN_BAD };

/* A fingerprint of the program a process runs: a hash of its auxiliary
 * vector, which an exec replaces (the addresses of the new stack, entry
 * and program headers).  False if it cannot be read. */
static bool
image_of(long pid, uint64_t *image)
{
	char path[64];
	unsigned char buf[4096];
	snprintf(path, sizeof path, "/proc/%ld/auxv", pid);
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return false;
	ssize_t n = read(fd, buf, sizeof buf);
	close(fd);
	if (n <= 0)
		return false;
	uint64_t h = 14695981039346656037ull; /* FNV-1a */
	for (ssize_t i = 0; i < n; i++) {
		h ^= buf[i];
		h *= 1099511628211ull;
	}
	*image = h;
	return true;
}

/* Map /parkinglot.<pid>; OPEN_BAD with why set if it is not a complete
 * object of the layout this parkstat reads. */
static enum open_result
open_source(long pid, struct source *src, char *why, size_t whylen)
{
	memset(src, 0, sizeof *src);
	src->pid = pid;
	snprintf(src->name, sizeof src->name, PLX_NAME_FMT, pid);
	snprintf(src->path, sizeof src->path, "/dev/shm%s", src->name);
	/* Non-blocking and a regular file only: a FIFO of that name would
	 * hang us (glibc's shm_open adds O_NOFOLLOW). */
	int fd = shm_open(src->name, O_RDONLY | O_NONBLOCK | O_CLOEXEC, 0);
	if (fd < 0) {
		if (errno == ENOENT)
			return OPEN_NONE;
		if (errno == EACCES || errno == EPERM)
			return OPEN_ACCESS;
		snprintf(why, whylen, "%s", strerror(errno));
		return OPEN_BAD;
	}
	/* A process that is creating its object has it at size 0, then
	 * complete but without the magic: give it a moment. */
	struct stat st;
	const struct plx_header *h = NULL;
	struct plx_header hd; /* a copy of *h */
	for (int tries = 0;; tries++) {
		bool ok = fstat(fd, &st) == 0;
		if (!ok || !S_ISREG(st.st_mode)) {
			snprintf(why, whylen, "%s",
			    ok ? "not a regular file" : strerror(errno));
			close(fd);
			return OPEN_BAD;
		}
		if ((size_t)st.st_size >= sizeof(struct plx_header)) {
			if (h == NULL) {
				void *m = mmap(NULL, (size_t)st.st_size,
				    PROT_READ, MAP_SHARED, fd, 0);
				if (m == MAP_FAILED) {
					snprintf(
					    why, whylen, "%s", strerror(errno));
					close(fd);
					return OPEN_BAD;
				}
				src->map = m;
				src->size = (size_t)st.st_size;
				h = m;
			}
			if (!copy_header(&hd, h)) {
				snprintf(
				    why, whylen, "truncated while being read");
				close(fd);
				return OPEN_BAD;
			}
			if (hd.magic == PLX_MAGIC)
				break;
		}
		if (tries == 100) {
			snprintf(why, whylen,
			    "not a complete libparkinglot "
			    "statistics object");
			close(fd);
			return OPEN_BAD;
		}
		struct timespec ts = { 0, 10000000 };
		nanosleep(&ts, NULL);
	}
	close(fd);
	src->dev = st.st_dev;
	src->ino = st.st_ino;
	src->image_ok = image_of(pid, &src->image);
	if (hd.version != PLX_VERSION) {
		snprintf(why, whylen,
		    "statistics layout version %" PRIu32 " (this parkstat "
		    "reads version %d; use the parkstat of the same "
		    "libparkinglot)",
		    hd.version, PLX_VERSION);
		return OPEN_BAD;
	}
	if (hd.shm_size != sizeof(struct plx_shm) ||
	    hd.total_size != PLX_SIZE || src->size < PLX_SIZE ||
	    hd.counters_off != PLX_COUNTERS_OFF ||
	    hd.nstripes != PLX_NSTRIPES || hd.stripe_size != PLX_STRIPE_SIZE ||
	    hd.ncounters != PLX_NCOUNTERS || hd.maxq_off != PLX_MAXQ_OFF ||
	    hd.qbins != PLX_QBINS || hd.wbins != PLX_WBINS ||
	    hd.nslots != PLX_NSLOTS || hd.nthreads != PLX_NTHREADS ||
	    hd.nheld != PLX_HELD) {
		snprintf(why, whylen,
		    "unexpected layout (sizes do not match "
		    "this parkstat)");
		return OPEN_BAD;
	}
	if (hd.pid != pid) {
		snprintf(
		    why, whylen, "the object names process %" PRId64, hd.pid);
		return OPEN_BAD;
	}
	return OPEN_OK;
}

/* -p: open or die with the right one-line message. */
static void
attach(long pid, struct source *src)
{
	char why[160] = "";
	switch (open_source(pid, src, why, sizeof why)) {
	case OPEN_OK:
		if (!process_exists(pid))
			die(1,
			    "no such process: %ld (%s is left over from it; "
			    "remove it)",
			    pid, src->path);
		return;
	case OPEN_NONE:
		if (!process_exists(pid))
			die(1, "no such process: %ld", pid);
		die(1,
		    "process %ld does not export statistics (run it with "
		    "PARKINGLOT_STATS=1 or under parkstat --)",
		    pid);
	case OPEN_ACCESS:
		die(1,
		    "process %ld: permission denied (%s belongs to "
		    "another user)",
		    pid, src->path);
	case OPEN_BAD:
		die(1, "process %ld: %s: %s", pid, src->path, why);
	}
}

/* ---- naming addresses (parkstat-names.c) ---------------------------- */

static struct namer namer;

/* The maps to name the addresses of this snapshot with. */
static void
namer_update(struct namer *nm, const struct snap *sn)
{
	const struct plx_header *h = &sn->s.h;
	size_t saved = h->maps_len < PLX_MAPSLEN ? h->maps_len : PLX_MAPSLEN;
	if (h->state == PLX_EXITED && saved)
		namer_set(nm, sn->s.maps, saved);
	else
		namer_read(nm, (long)h->pid); /* else keep the last */
}

/* ---- the report ------------------------------------------------------- */

struct addr_row {
	const struct plx_slot *sl;
	char name[256];     /* "" if unknown */
	const char *module; /* path or NULL */
	int64_t queued_now; /* clamped at 0 */
	double parks_per_s; /* -i: since the last report */
};

struct report {
	const struct snap *sn;
	const struct snap *prev; /* -i: the report before, or NULL */
	/* Set by parkstat -- CMD: how the command ended. */
	bool ended;
	int status; /* as from waitpid */
	/* Set by -p: the process had ended when read (maybe without its exit
	 * handlers, which set PLX_EXITED: killed). */
	bool gone;
	/* Set by -p, with gone: the process executed a program that exports
	 * no statistics; the figures are those of the program before. */
	bool execd;
	/* -i: the seconds the rates cover, and whether from the last reset
	 * (figures counted from 0) rather than from prev; 0: no rates. */
	double rate_dt;
	bool rate_from_reset;
	struct addr_row *rows;
	size_t nrows, shown;
	uint64_t qhist[PLX_QBINS], whist[PLX_WBINS];
	uint64_t depth_now[PLX_QBINS]; /* addresses by queue length now */
	uint64_t elapsed_ns;
	struct stacks stacks;
	struct parked parked;
	long inversions; /* --deadlock: found in the command; -1 otherwise */
};

static int
cmp_rows(const void *a, const void *b)
{
	const struct plx_slot *x = ((const struct addr_row *)a)->sl;
	const struct plx_slot *y = ((const struct addr_row *)b)->sl;
	uint64_t kx = opt.sort == SORT_WAIT ? x->wait_ns : x->parks;
	uint64_t ky = opt.sort == SORT_WAIT ? y->wait_ns : y->parks;
	if (kx != ky)
		return kx > ky ? -1 : 1;
	if (x->parks != y->parks)
		return x->parks > y->parks ? -1 : 1;
	return x->addr < y->addr ? -1 : x->addr > y->addr;
}

/*
 * The span of the rates of a report (-i), in r: from the report before,
 * or, if the statistics were reset since (the resets count or time moved
 * on), from that reset, the figures counting from 0 there, as they do.
 * None (rate_dt 0) if the time of that reset is not in the interval (two
 * resets, or a report read in the middle of one), or if with no reset
 * seen a counter went down (a reset under way while a report was read):
 * a difference would wrap, so that report shows no rates.
 */
static void
rate_span(struct report *r, const struct snap *sn, const struct snap *prev)
{
	r->rate_dt = 0;
	r->rate_from_reset = false;
	if (prev == NULL || sn->now_ns <= prev->now_ns)
		return;
	if (sn->resets != prev->resets || sn->reset_ns != prev->reset_ns) {
		if (sn->reset_ns <= prev->now_ns || sn->reset_ns >= sn->now_ns)
			return;
		r->rate_from_reset = true;
		r->rate_dt = (double)(sn->now_ns - sn->reset_ns) / 1e9;
		return;
	}
	for (unsigned k = 0; k < PLX_NCOUNTERS; k++)
		if (!is_gauge[k] && sn->c[k] < prev->c[k])
			return;
	r->rate_dt = (double)(sn->now_ns - prev->now_ns) / 1e9;
}

/* Per second over the span of r's rates: now, counted from then. */
static double
per_second(const struct report *r, uint64_t now, uint64_t then)
{
	if (r->rate_from_reset)
		then = 0;
	return now >= then ? (double)(now - then) / r->rate_dt : 0;
}

static void
build(struct report *r, const struct snap *sn, const struct snap *prev)
{
	const struct plx_shm *s = &sn->s;
	r->sn = sn;
	r->prev = prev;
	if (!r->execd) /* else its maps are the new program's */
		namer_update(&namer, sn);
	memset(r->qhist, 0, sizeof r->qhist);
	memset(r->whist, 0, sizeof r->whist);
	memset(r->depth_now, 0, sizeof r->depth_now);
	for (unsigned i = 0; i < PLX_NSTRIPES; i++) {
		for (unsigned b = 0; b < PLX_QBINS; b++)
			r->qhist[b] += s->hist[i].queue[b];
		for (unsigned b = 0; b < PLX_WBINS; b++)
			r->whist[b] += s->hist[i].wait[b];
	}
	uint64_t end = s->h.end_ns ? s->h.end_ns : sn->now_ns;
	uint64_t from =
	    sn->reset_ns > s->h.start_ns ? sn->reset_ns : s->h.start_ns;
	r->elapsed_ns = end > from ? end - from : 0;
	rate_span(r, sn, prev);

	r->rows = calloc(PLX_NSLOTS, sizeof *r->rows);
	if (r->rows == NULL)
		die(1, "out of memory");
	r->nrows = 0;
	for (size_t i = 0; i < PLX_NSLOTS; i++) {
		const struct plx_slot *sl = &s->slots[i];
		if (sl->addr == 0)
			continue;
		struct addr_row *row = &r->rows[r->nrows++];
		row->sl = sl;
		row->queued_now = sl->queued_now > 0 ? sl->queued_now : 0;
		if (row->queued_now > 0) {
			uint64_t q = (uint64_t)row->queued_now;
			unsigned k = 63 - (unsigned)__builtin_clzll(q);
			r->depth_now[k < PLX_QBINS - 1 ? k : PLX_QBINS - 1]++;
		}
		namer_name(&namer, sl->addr, row->name, sizeof row->name,
		    &row->module);
		if (r->rate_dt > 0) {
			const struct plx_slot *p = &prev->s.slots[i];
			if (r->rate_from_reset || p->addr == sl->addr)
				row->parks_per_s =
				    per_second(r, sl->parks, p->parks);
		}
	}
	qsort(r->rows, r->nrows, sizeof *r->rows, cmp_rows);
	r->shown = opt.top == 0 || (size_t)opt.top > r->nrows ? r->nrows
	                                                      : (size_t)opt.top;
	stacks_build(&r->stacks, s, &namer, opt.sort == SORT_PARKS, opt.stacks);
	/* Parked until the process ended, if it did; until now if not (or
	 * if it was killed, when end_ns stays 0). */
	bool live = !r->ended && !r->gone && s->h.state == PLX_RUNNING;
	parked_build(&r->parked, s, &namer, live ? sn->now_ns : end, live);
}

/* Labels of the histogram bins. */
static void
qlabel(char *buf, size_t len, unsigned b)
{
	uint64_t lo = (uint64_t)1 << b;
	if (b == 0)
		snprintf(buf, len, "1");
	else if (b == PLX_QBINS - 1)
		snprintf(buf, len, ">= %" PRIu64, lo);
	else
		snprintf(buf, len, "%" PRIu64 "-%" PRIu64, lo, 2 * lo - 1);
}

/* Two significant digits or so: "2.0", "16", "524". */
static void
sig2(char *buf, size_t len, double v)
{
	snprintf(buf, len, v < 9.95 ? "%.1f" : "%.0f", v);
}

static void
wlabel(char *buf, size_t len, unsigned b)
{
	char lo[16], hi[16];
	if (b == 0) {
		snprintf(buf, len, "< 1 us");
		return;
	}
	uint64_t l = (uint64_t)1 << (b - 1); /* us */
	if (b == PLX_WBINS - 1) {
		sig2(lo, sizeof lo, (double)l / 1e6);
		snprintf(buf, len, ">= %s s", lo);
	} else if (2 * l <= 1024) {
		snprintf(buf, len, "%" PRIu64 "-%" PRIu64 " us", l, 2 * l);
	} else if (2 * l < 1000000) {
		sig2(lo, sizeof lo, (double)l / 1e3);
		sig2(hi, sizeof hi, (double)(2 * l) / 1e3);
		snprintf(buf, len, "%s-%s ms", lo, hi);
	} else {
		snprintf(lo, sizeof lo, "%.2f", (double)l / 1e6);
		snprintf(hi, sizeof hi, "%.2f", (double)(2 * l) / 1e6);
		snprintf(buf, len, "%s-%s s", lo, hi);
	}
}

static void
bars(FILE *out, const char *title, const uint64_t *h, unsigned n,
    void (*label)(char *, size_t, unsigned))
{
	unsigned first = n, last = 0;
	uint64_t max = 0, total = 0;
	for (unsigned b = 0; b < n; b++) {
		if (h[b]) {
			if (first == n)
				first = b;
			last = b;
		}
		if (h[b] > max)
			max = h[b];
		total += h[b];
	}
	fprintf(out, "\n%s (%" PRIu64 ")\n", title, total);
	if (total == 0) {
		fprintf(out, "  (none)\n");
		return;
	}
	for (unsigned b = first; b <= last; b++) {
		char lab[48], bar[BAR_WIDTH + 1];
		label(lab, sizeof lab, b);
		unsigned w = (unsigned)((h[b] * BAR_WIDTH + max - 1) / max);
		memset(bar, '#', w);
		bar[w] = '\0';
		fprintf(out, "  %12s  %-*s %" PRIu64 "\n", lab, BAR_WIDTH, bar,
		    h[b]);
	}
}

static void
describe_end(char *buf, size_t len, const struct report *r)
{
	const struct plx_header *h = &r->sn->s.h;
	if (r->ended) {
		if (WIFEXITED(r->status))
			snprintf(buf, len, "exited with status %d",
			    WEXITSTATUS(r->status));
		else if (WIFSIGNALED(r->status))
			snprintf(buf, len, "killed by signal %d (%s)%s",
			    WTERMSIG(r->status), strsignal(WTERMSIG(r->status)),
			    WCOREDUMP(r->status) ? ", core dumped" : "");
		else
			snprintf(buf, len, "ended");
	} else if (h->state == PLX_EXITED) {
		snprintf(buf, len, "exited");
	} else if (r->execd) {
		snprintf(buf, len,
		    "executed a program that exports no statistics "
		    "(the figures are those of the program before)");
	} else if (r->gone) {
		snprintf(buf, len,
		    "ended without running its exit handlers (killed?)");
	} else {
		snprintf(buf, len, "running");
	}
}

/* The object most of the shown addresses are in: named once, in the
 * title, and only the others per address. */
static const char *
main_object(const struct report *r)
{
	const char *best = NULL;
	size_t bestn = 0;
	for (size_t i = 0; i < r->shown; i++) {
		const char *m = r->rows[i].module;
		size_t n = 0;
		if (m == NULL)
			continue;
		for (size_t j = 0; j < r->shown; j++)
			n += r->rows[j].module &&
			    strcmp(r->rows[j].module, m) == 0;
		if (n > bestn) {
			best = m;
			bestn = n;
		}
	}
	return best;
}

/* Three "label value" pairs a line, in 78 columns. */
static void
trio(FILE *out, const char *l1, const char *v1, const char *l2, const char *v2,
    const char *l3, const char *v3)
{
	fprintf(
	    out, "  %-14s%10s  %-14s%10s  %-14s%10s\n", l1, v1, l2, v2, l3, v3);
}

static const char *
u64(char *buf, size_t len, uint64_t v)
{
	snprintf(buf, len, "%" PRIu64, v);
	return buf;
}

/* The counters' labels in the text report, from the one list. */
#define COUNTER_LABEL(name, field, type, kind, text)                           \
	PLI_IF_COUNTER(kind, [PLX_##name] = text, )
static const char *const label[PLX_NCOUNTERS] = { PL_STATS_LIST(
    COUNTER_LABEL) };
#undef COUNTER_LABEL

/* The text report, 80 columns wide but for long names. */
static void
print_text(FILE *out, const struct report *r)
{
	const struct snap *sn = r->sn;
	const struct plx_header *h = &sn->s.h;
	const uint64_t *c = sn->c;
	char b1[32], b2[32], b3[32], end[96];
	describe_end(end, sizeof end, r);
	bool reset = sn->reset_ns != 0;
	fprintf(out, "parkstat: process %" PRId64 " %s; %s of statistics%s\n",
	    h->pid, end, fmt_ns(b1, sizeof b1, (double)r->elapsed_ns),
	    reset ? " since the last pl_stats_reset" : "");
	fprintf(out, "  %-9s%s\n", "command", h->command[0] ? h->command : "?");

	uint64_t waits = c[PLX_UNPARKS] + c[PLX_TIMEOUTS];
	fprintf(out, "\n");
	trio(out, label[PLX_PARKS], u64(b1, sizeof b1, c[PLX_PARKS]),
	    label[PLX_UNPARKS], u64(b2, sizeof b2, c[PLX_UNPARKS]),
	    label[PLX_TIMEOUTS], u64(b3, sizeof b3, c[PLX_TIMEOUTS]));
	trio(out, label[PLX_INVALID_PARKS],
	    u64(b1, sizeof b1, c[PLX_INVALID_PARKS]), label[PLX_REQUEUES],
	    u64(b2, sizeof b2, c[PLX_REQUEUES]), label[PLX_FAIR_HANDOFFS],
	    u64(b3, sizeof b3, c[PLX_FAIR_HANDOFFS]));
	trio(out, label[PLX_SPIN_ACQUIRES],
	    u64(b1, sizeof b1, c[PLX_SPIN_ACQUIRES]), label[PLX_SPIN_FAILURES],
	    u64(b2, sizeof b2, c[PLX_SPIN_FAILURES]), label[PLX_PARKED_NOW],
	    u64(b3, sizeof b3, c[PLX_PARKED_NOW]));
	trio(out, label[PLX_WAIT_NS],
	    fmt_ns(b1, sizeof b1, (double)c[PLX_WAIT_NS]), "mean wait",
	    waits
	        ? fmt_ns(b2, sizeof b2, (double)c[PLX_WAIT_NS] / (double)waits)
	        : "-",
	    "longest queue", u64(b3, sizeof b3, sn->maxq));
	if (r->rate_dt > 0) {
		const uint64_t *p = r->prev->c;
		fprintf(out,
		    "  per second    %.0f parks, %.0f unparks, "
		    "%.0f timeouts, %s parked\n",
		    per_second(r, c[PLX_PARKS], p[PLX_PARKS]),
		    per_second(r, c[PLX_UNPARKS], p[PLX_UNPARKS]),
		    per_second(r, c[PLX_TIMEOUTS], p[PLX_TIMEOUTS]),
		    fmt_ns(b3, sizeof b3,
		        per_second(r, c[PLX_WAIT_NS], p[PLX_WAIT_NS])));
	}
	fprintf(out, "\n  %-9s%" PRIu64 " buckets, %s in retired tables\n",
	    "table", h->buckets, fmt_bytes(b1, sizeof b1, h->retired_bytes));
	fprintf(out,
	    "  %-9s%" PRIu64 " with a record now, %" PRIu64 " at most, %" PRIu64
	    " created\n",
	    "threads", h->threads_live, h->threads_peak, h->threads_total);
	if (h->fair_interval_us == 0 && h->spin_limit == 0 &&
	    h->yield_limit == 0 && h->pause_per_spin == 0)
		fprintf(out, "  %-9s(not read yet: nothing has parked)\n",
		    "tuning");
	else
		fprintf(out,
		    "  %-9sspin %" PRIu32 " x %" PRIu32
		    " pauses, yield %" PRIu32 ", fairness interval %s\n",
		    "tuning", h->spin_limit, h->pause_per_spin, h->yield_limit,
		    fmt_us(b1, sizeof b1, h->fair_interval_us));

	/* What a hung process waits for, first; for a command that ended,
	 * only if a thread was parked then. */
	parked_print_text(out, &r->parked, !r->ended);

	bars(out, "queue length at each park", r->qhist, PLX_QBINS, qlabel);
	bars(out, "addresses by queue length now", r->depth_now, PLX_QBINS,
	    qlabel);
	bars(out, "time parked per wait", r->whist, PLX_WBINS, wlabel);

	const char *obj = main_object(r);
	fprintf(out, "\nmost contended addresses%s%s, by %s (%zu of %zu)\n",
	    obj ? " in " : "", obj ? basename_of(obj) : "",
	    opt.sort == SORT_WAIT ? "time parked" : "parks", r->shown,
	    r->nrows);
	if (r->nrows == 0) {
		fprintf(out, "  (none)\n");
	} else {
		/* Symbol, and the object when it is not the main one. */
		char(*sym)[sizeof r->rows->name + PATH_MAX + 8] =
		    calloc(r->shown ? r->shown : 1, sizeof *sym);
		if (sym == NULL)
			die(1, "out of memory");
		int namew = 6;
		bool moved = false;
		for (size_t i = 0; i < r->shown; i++) {
			const struct addr_row *row = &r->rows[i];
			const char *m = row->module;
			bool other = m && obj && strcmp(m, obj) != 0;
			snprintf(sym[i], sizeof sym[i], "%s%s%s%s",
			    row->name[0] ? row->name : "-", other ? " (" : "",
			    other ? basename_of(m) : "", other ? ")" : "");
			int l = (int)strlen(sym[i]);
			if (l > namew)
				namew = l;
			moved |= row->sl->requeued_in != 0;
		}
		int kindw = 4;
		for (size_t i = 0; i < r->shown; i++) {
			int l =
			    (int)strlen(pli_kind_label(r->rows[i].sl->kind));
			if (l > kindw)
				kindw = l;
		}
		/* With -i, parks per second take the place of "moved in". */
		fprintf(out,
		    "  %-14s  %-*s  %-*s  %9s  %9s  %8s  %8s  %8s  %9s  %4s  "
		    "%4s\n",
		    "address", namew, "symbol", kindw, "kind", "taken",
		    "contended", "parks", r->prev ? "parks/s" : "moved in",
		    "waited", "mean wait", "maxq", "now");
		for (size_t i = 0; i < r->shown; i++) {
			const struct addr_row *row = &r->rows[i];
			const struct plx_slot *sl = row->sl;
			char a[24], second[24], taken[24];
			snprintf(a, sizeof a, "0x%" PRIx64, sl->addr);
			if (sl->taken)
				u64(taken, sizeof taken, sl->taken);
			else
				snprintf(taken, sizeof taken, "-");
			if (r->prev)
				snprintf(second, sizeof second, "%.0f",
				    row->parks_per_s);
			else
				u64(second, sizeof second, sl->requeued_in);
			const char *kind = pli_kind_label(sl->kind);
			fprintf(out,
			    "  %-14s  %-*s  %-*s  %9s  %9" PRIu64 "  %8" PRIu64
			    "  %8s  %8s  %9s  %4" PRIu64 "  %4" PRId64 "\n",
			    a, namew, sym[i], kindw, kind[0] ? kind : "-",
			    taken, sl->contended, sl->parks, second,
			    fmt_ns(b1, sizeof b1, (double)sl->wait_ns),
			    sl->waits
			        ? fmt_ns(b2, sizeof b2,
			              (double)sl->wait_ns / (double)sl->waits)
			        : "-",
			    sl->max_queue, row->queued_now);
		}
		free(sym);
		if (moved && !r->prev)
			fprintf(out,
			    "  (a thread moved from one address to "
			    "another, as from a condition variable to\n"
			    "  its mutex, counts its time parked on the "
			    "address it leaves the queue from)\n");
	}
	if (h->overflow_parks || h->overflow_waits || h->overflow_requeued)
		fprintf(out,
		    "  not tracked (table full): %" PRIu64 " parks, %" PRIu64
		    " waits, %s parked\n",
		    h->overflow_parks, h->overflow_waits,
		    fmt_ns(b1, sizeof b1, (double)h->overflow_wait_ns));
	stacks_print_text(out, &r->stacks, &sn->s, &namer);
}

/* ---- JSON ------------------------------------------------------------- */

static void
json_hist(FILE *out, const char *name, const uint64_t *h, unsigned n, bool time,
    bool last)
{
	fprintf(out, "  \"%s\": [\n", name);
	for (unsigned b = 0; b < n; b++) {
		uint64_t lo, hi; /* hi exclusive; 0 = unbounded */
		if (time) {
			lo = b == 0 ? 0 : ((uint64_t)1 << (b - 1)) * 1000;
			hi = b == n - 1 ? 0 : ((uint64_t)1 << b) * 1000;
			fprintf(out,
			    "    {\"min_ns\": %" PRIu64 ", \"max_ns\": ", lo);
		} else {
			lo = (uint64_t)1 << b;
			hi = b == n - 1 ? 0 : 2 * lo;
			fprintf(
			    out, "    {\"min\": %" PRIu64 ", \"max\": ", lo);
		}
		/* max is inclusive; null: no upper bound. */
		if (hi)
			fprintf(out, "%" PRIu64, hi - 1);
		else
			fputs("null", out);
		fprintf(out, ", \"count\": %" PRIu64 "}%s\n", h[b],
		    b + 1 < n ? "," : "");
	}
	fprintf(out, "  ]%s\n", last ? "" : ",");
}

static void
print_json(FILE *out, const struct report *r)
{
	const struct snap *sn = r->sn;
	const struct plx_header *h = &sn->s.h;
	const uint64_t *c = sn->c;
	char end[96];
	describe_end(end, sizeof end, r);
	fprintf(out, "{\n");
	fprintf(out, "  \"parkstat_version\": ");
	json_str(out, PL_VERSION_STRING);
	fprintf(out, ",\n  \"layout_version\": %" PRIu32 ",\n", h->version);
	fprintf(out, "  \"pid\": %" PRId64 ",\n", h->pid);
	fprintf(out, "  \"command\": ");
	json_str(out, h->command);
	fprintf(out, ",\n  \"state\": \"%s\",\n",
	    r->ended ? (WIFSIGNALED(r->status) ? "killed" : "exited")
	        : h->state == PLX_EXITED ? "exited"
	        : r->execd               ? "exec"
	        : r->gone                ? "ended"
	                                 : "running");
	if (r->ended && WIFEXITED(r->status))
		fprintf(
		    out, "  \"exit_status\": %d,\n", WEXITSTATUS(r->status));
	if (r->ended && WIFSIGNALED(r->status))
		fprintf(out, "  \"signal\": %d,\n", WTERMSIG(r->status));
	fprintf(out, "  \"elapsed_ns\": %" PRIu64 ",\n", r->elapsed_ns);
	fprintf(
	    out, "  \"reset\": %s,\n", sn->reset_ns != 0 ? "true" : "false");
	if (r->prev)
		fprintf(out, "  \"interval_ns\": %" PRIu64 ",\n",
		    sn->now_ns - r->prev->now_ns);
	fprintf(out, "  \"stats\": {\n");
	/* Every counter of the list (PL_STATS_LIST), by its field's name
	 * in struct pl_stats, then the two figures that are no counters. */
#define JSON_COUNTER(name, field, type, kind, label)                           \
	PLI_IF_COUNTER(kind,                                                   \
	               fprintf(out, "    \"" #field "\": %" PRIu64 ",\n",      \
	                   c[PLX_##name]);)
	PL_STATS_LIST(JSON_COUNTER)
#undef JSON_COUNTER
	fprintf(out, "    \"buckets\": %" PRIu64 ",\n", h->buckets);
	fprintf(out, "    \"max_queue_len\": %" PRIu64 "\n", sn->maxq);
	fprintf(out, "  },\n");
	fprintf(out, "  \"table\": {\n");
	fprintf(out, "    \"buckets\": %" PRIu64 ",\n", h->buckets);
	fprintf(out, "    \"threads_live\": %" PRIu64 ",\n", h->threads_live);
	fprintf(out, "    \"threads_peak\": %" PRIu64 ",\n", h->threads_peak);
	fprintf(
	    out, "    \"threads_created\": %" PRIu64 ",\n", h->threads_total);
	fprintf(out, "    \"retired_bytes\": %" PRIu64 "\n", h->retired_bytes);
	fprintf(out, "  },\n");
	fprintf(out, "  \"tuning\": {\n");
	fprintf(out, "    \"spin_limit\": %" PRIu32 ",\n", h->spin_limit);
	fprintf(
	    out, "    \"pause_per_spin\": %" PRIu32 ",\n", h->pause_per_spin);
	fprintf(out, "    \"yield_limit\": %" PRIu32 ",\n", h->yield_limit);
	fprintf(out, "    \"fair_interval_us\": %" PRIu32 "\n",
	    h->fair_interval_us);
	fprintf(out, "  },\n");
	json_hist(
	    out, "queue_length_at_park", r->qhist, PLX_QBINS, false, false);
	json_hist(
	    out, "queue_length_now", r->depth_now, PLX_QBINS, false, false);
	json_hist(out, "wait_time", r->whist, PLX_WBINS, true, false);
	fprintf(out, "  \"addresses_tracked\": %zu,\n", r->nrows);
	fprintf(out,
	    "  \"addresses_untracked\": {\"parks\": %" PRIu64
	    ", \"waits\": %" PRIu64 ", \"wait_ns\": %" PRIu64
	    ", \"requeued_in\": %" PRIu64 "},\n",
	    h->overflow_parks, h->overflow_waits, h->overflow_wait_ns,
	    h->overflow_requeued);
	if (r->inversions >= 0)
		fprintf(out, "  \"inversions\": %ld,\n", r->inversions);
	fprintf(out, "  \"sort\": \"%s\",\n",
	    opt.sort == SORT_WAIT ? "wait" : "parks");
	stacks_print_json(out, &r->stacks, &sn->s, &namer);
	parked_print_json(out, &r->parked);
	/* One address per line, so that line tools can pick them. */
	fprintf(out, "  \"addresses\": [\n");
	for (size_t i = 0; i < r->shown; i++) {
		const struct addr_row *row = &r->rows[i];
		const struct plx_slot *sl = row->sl;
		fprintf(out,
		    "    {\"rank\": %zu, \"address\": \"0x%" PRIx64
		    "\", \"symbol\": ",
		    i + 1, sl->addr);
		if (row->name[0])
			json_str(out, row->name);
		else
			fputs("null", out);
		fputs(", \"object\": ", out);
		if (row->module)
			json_str(out, row->module);
		else
			fputs("null", out);
		fputs(", \"kind\": ", out);
		if (*pli_kind_label(sl->kind))
			json_str(out, pli_kind_label(sl->kind));
		else
			fputs("null", out);
		fprintf(out,
		    ", \"taken\": %" PRIu64 ", \"contended\": %" PRIu64
		    ", \"parks\": %" PRIu64 ", \"waits\": %" PRIu64
		    ", \"wait_ns\": %" PRIu64 ", \"requeued_in\": %" PRIu64
		    ", \"max_queue\": %" PRIu64 ", \"queued_now\": %" PRId64,
		    sl->taken, sl->contended, sl->parks, sl->waits, sl->wait_ns,
		    sl->requeued_in, sl->max_queue, row->queued_now);
		if (r->prev)
			fprintf(
			    out, ", \"parks_per_s\": %.1f", row->parks_per_s);
		fprintf(out, "}%s\n", i + 1 < r->shown ? "," : "");
	}
	fprintf(out, "  ]\n}\n");
}

static void
print_report(FILE *out, struct report *r)
{
	if (opt.json)
		print_json(out, r);
	else
		print_text(out, r);
	free(r->rows);
	r->rows = NULL;
	stacks_free(&r->stacks);
	parked_free(&r->parked);
	fflush(out);
}

static FILE *
open_output(FILE *dflt, int fail_status)
{
	if (opt.output == NULL)
		return dflt;
	FILE *f = fopen(opt.output, "w");
	if (f == NULL)
		die(fail_status, "%s: %s", opt.output, strerror(errno));
	return f;
}

static void
close_output(FILE *out, int fail_status)
{
	if (fflush(out) != 0 || ferror(out) ||
	    (out != stdout && out != stderr && fclose(out) != 0))
		die(fail_status, "%s: write error",
		    opt.output ? opt.output : "output");
}

/* ---- -p PID [-i SECONDS] ---------------------------------------------- */

static volatile sig_atomic_t interrupted;

static void
on_sigint(int sig)
{
	(void)sig;
	interrupted = 1;
}

/* Has the process exited (or is it a zombie)?  If its object shrank,
 * not yet: reading it says so. */
static bool
has_exited(long pid, int pidfd, const struct source *src)
{
	if (pidfd >= 0) {
		struct pollfd p = { pidfd, POLLIN, 0 };
		if (poll(&p, 1, 0) == 1)
			return true;
	}
	if (!process_exists(pid))
		return true;
	struct plx_header h;
	return copy_header(&h, src->map) && h.state == PLX_EXITED;
}

enum image { IMAGE_SAME, IMAGE_NEW_OBJECT, IMAGE_EXECD };

/* Has the process executed another program since src was opened?  The
 * object of the name is then a new one (the new program exports: the
 * library replaced the old object, which its exit could not remove), or
 * none yet, or still the old one, and the process's image has changed. */
static enum image
image_changed(const struct source *src)
{
	int fd = shm_open(src->name, O_RDONLY | O_NONBLOCK | O_CLOEXEC, 0);
	if (fd >= 0) {
		struct stat st;
		bool other = fstat(fd, &st) == 0 &&
		    (st.st_dev != src->dev || st.st_ino != src->ino);
		close(fd);
		if (other)
			return IMAGE_NEW_OBJECT;
	}
	uint64_t image;
	if (src->image_ok && image_of(src->pid, &image) && image != src->image)
		return IMAGE_EXECD;
	return IMAGE_SAME;
}

/* -i: follow the process into a program it executed.  A new program that
 * exports gets its object up within its start (given 1 s): src is then
 * that object, and true.  Else r->execd, r->gone: src stays, for a last
 * report. */
static bool
follow_exec(long pid, struct source *src, struct report *r)
{
	enum image im = image_changed(src);
	for (int tries = 0; im == IMAGE_EXECD && tries < 100; tries++) {
		struct timespec ts = { 0, 10000000 };
		nanosleep(&ts, NULL);
		im = image_changed(src);
	}
	if (im == IMAGE_SAME)
		return false;
	struct source next = { 0 };
	char why[160] = "";
	if (im == IMAGE_NEW_OBJECT &&
	    open_source(pid, &next, why, sizeof why) == OPEN_OK) {
		munmap((void *)(uintptr_t)src->map, src->size);
		*src = next;
		fprintf(stderr,
		    "parkstat: process %ld executed a new program: its "
		    "statistics from here on\n",
		    pid);
		return true;
	}
	if (next.map)
		munmap((void *)(uintptr_t)next.map, next.size);
	r->execd = r->gone = true;
	return false;
}

static void
snap_or_die(const struct source *src, struct snap *sn)
{
	if (!take_snap(src, sn))
		die(1, "process %ld: %s: truncated while being read", src->pid,
		    src->path);
}

static int
watch(long pid)
{
	struct source src;
	attach(pid, &src);
	FILE *out = open_output(stdout, 1);
	static struct snap a, b;
	struct snap *cur = &a, *prev = NULL;
	struct report r = { 0 };
	r.inversions = -1;
	int pidfd = -1;
#ifdef SYS_pidfd_open
	pidfd = (int)syscall(SYS_pidfd_open, (pid_t)pid, 0);
#endif

	if (opt.interval <= 0) {
		r.gone = has_exited(pid, pidfd, &src);
		snap_or_die(&src, cur);
		build(&r, cur, NULL);
		print_report(out, &r);
		close_output(out, 1);
		return 0;
	}

	struct sigaction sa;
	memset(&sa, 0, sizeof sa);
	sa.sa_handler = on_sigint;
	sigemptyset(&sa.sa_mask);
	sigaction(SIGINT, &sa, NULL); /* no SA_RESTART: poll returns */
	sigaction(SIGTERM, &sa, NULL);
	bool tty = !opt.json && isatty(fileno(out));
	for (;;) {
		/* Gone: a last report, which says so (the object of a
		 * process killed still says it runs). */
		r.gone = has_exited(pid, pidfd, &src);
		/* A new program: no rates across the two. */
		if (!r.gone && follow_exec(pid, &src, &r))
			prev = NULL;
		snap_or_die(&src, cur);
		if (tty)
			fputs("\033[H\033[2J", out);
		else if (prev && !opt.json)
			fputs("\n", out);
		build(&r, cur, prev);
		print_report(out, &r);
		if (r.gone || interrupted)
			break;
		/* Wait for the interval, the process's exit, or SIGINT. */
		uint64_t until = plx_clock_ns(CLOCK_MONOTONIC) +
		    (uint64_t)(opt.interval * 1e9);
		for (;;) {
			uint64_t now = plx_clock_ns(CLOCK_MONOTONIC);
			if (interrupted || now >= until)
				break;
			int ms = (int)((until - now + 999999) / 1000000);
			if (pidfd >= 0) {
				struct pollfd p = { pidfd, POLLIN, 0 };
				if (poll(&p, 1, ms) == 1)
					break;
			} else {
				struct timespec ts = { ms / 1000,
					(long)(ms % 1000) * 1000000 };
				nanosleep(&ts, NULL);
				if (has_exited(pid, -1, &src))
					break;
			}
		}
		if (interrupted)
			break;
		prev = cur;
		cur = cur == &a ? &b : &a;
	}
	close_output(out, 1);
	return 0;
}

/* ---- parkstat -- CMD -------------------------------------------------- */

static pid_t child;

static void
forward(int sig)
{
	if (child > 0)
		kill(child, sig);
}

/*
 * The drop-in for a command: the library that puts the pthread and C11
 * locks of a program never linked with libparkinglot on the parking lot,
 * loaded through LD_PRELOAD.  PARKSTAT_DROPIN overrides the installed
 * path (the test suite runs the build tree's).  The loader cannot load it
 * into a static program, and ignores it for a set-user-ID or
 * set-group-ID one: then one line says so, and the program runs all the
 * same, showing only what it does with libparkinglot itself.
 */
static const char *
dropin_path(void)
{
	const char *p = getenv("PARKSTAT_DROPIN");
	if (p && *p)
		return p;
	if (access(PARKSTAT_DROPIN_PATH, R_OK) == 0)
		return PARKSTAT_DROPIN_PATH;
	/* Not installed: a parkstat run from its build tree (tools/) takes
	 * the drop-in built beside it. */
	static char built[PATH_MAX];
	ssize_t n = readlink("/proc/self/exe", built, sizeof built - 1);
	char *slash;
	if (n > 0 && (built[n] = '\0', slash = strrchr(built, '/')) &&
	    slash - built + sizeof "/../lib/.libs/libparkinglot-pthread.so" <
	        sizeof built) {
		strcpy(slash, "/../lib/.libs/libparkinglot-pthread.so");
		if (access(built, R_OK) == 0)
			return built;
	}
	return PARKSTAT_DROPIN_PATH;
}

/* The file execvp would run for cmd, in buf; false if none is found. */
static bool
find_command(const char *cmd, char *buf, size_t cap)
{
	if (strchr(cmd, '/'))
		return snprintf(buf, cap, "%s", cmd) < (int)cap;
	const char *path = getenv("PATH");
	if (!path || !*path)
		path = "/usr/local/bin:/usr/bin:/bin";
	for (const char *p = path;; p++) {
		const char *end = strchr(p, ':');
		size_t len = end ? (size_t)(end - p) : strlen(p);
		if (snprintf(buf, cap, "%.*s%s%s", (int)len, p, len ? "/" : "",
		        cmd) < (int)cap &&
		    access(buf, X_OK) == 0)
			return true;
		if (!end)
			return false;
		p = end;
	}
}

/* Whether the ELF file at path has no program interpreter (a static
 * program).  Not an ELF file (a script, whose interpreter is dynamic):
 * false. */
static bool
is_static_elf(const char *path)
{
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return false;
	bool is_static = false;
	elf_version(EV_CURRENT);
	Elf *e = elf_begin(fd, ELF_C_READ, NULL);
	size_t n;
	if (e && elf_kind(e) == ELF_K_ELF && elf_getphdrnum(e, &n) == 0) {
		is_static = true;
		for (size_t i = 0; i < n; i++) {
			GElf_Phdr ph;
			if (gelf_getphdr(e, (int)i, &ph) &&
			    ph.p_type == PT_INTERP)
				is_static = false;
		}
	}
	if (e)
		elf_end(e);
	close(fd);
	return is_static;
}

/* The LD_PRELOAD value for cmd (in buf), or NULL, after the one line
 * that says why not, when the drop-in cannot work for it. */
static const char *
dropin_preload(const char *cmd, char *buf, size_t cap)
{
	if (opt.no_preload)
		return NULL;
	const char *lib = dropin_path();
	char file[PATH_MAX];
	struct stat st;
	if (!find_command(cmd, file, sizeof file))
		return NULL; /* execvp will say so */
	if (access(lib, R_OK) != 0) {
		fprintf(stderr,
		    "%s: %s: %s; only locks taken through libparkinglot "
		    "itself are seen\n",
		    prog, lib, strerror(errno));
		return NULL;
	}
	/* Secure mode: the program would change the user or group it runs
	 * as (a set-ID file we do not already run as). */
	if (stat(file, &st) == 0 &&
	    (((st.st_mode & S_ISUID) && st.st_uid != geteuid()) ||
	        ((st.st_mode & S_ISGID) && st.st_gid != getegid()))) {
		fprintf(stderr,
		    "%s: %s is set-%s-ID: the loader ignores LD_PRELOAD for "
		    "it, so its pthread locks are not seen\n",
		    prog, file, st.st_mode & S_ISUID ? "user" : "group");
		return NULL;
	}
	if (is_static_elf(file)) {
		fprintf(stderr,
		    "%s: %s is statically linked: no library can be "
		    "preloaded into it, so its pthread locks are not seen\n",
		    prog, file);
		return NULL;
	}
	const char *old = getenv("LD_PRELOAD");
	if (snprintf(buf, cap, "%s%s%s", lib, old && *old ? " " : "",
	        old ? old : "") >= (int)cap)
		return NULL;
	return buf;
}

/*
 * --deadlock: the command's detector appends each report to a file of
 * ours (PARKINGLOT_DEADLOCK_LOG), which is read when it has ended: every
 * report is printed, with a count, ahead of the statistics.  Returns the
 * number of inversions (each report starts with the line the detector
 * begins it with), -1 if the file cannot be read.
 */
#define INVERSION_HEAD "libparkinglot: lock-order inversion"

static long
print_inversions(FILE *out, const char *path)
{
	FILE *f = fopen(path, "r");
	if (f == NULL)
		return -1;
	long n = 0;
	char line[4096];
	bool any = false;
	while (fgets(line, sizeof line, f)) {
		if (strncmp(line, INVERSION_HEAD, strlen(INVERSION_HEAD)) == 0)
			n++;
		if (!opt.json) {
			if (!any)
				fputc('\n', out);
			fputs(line, out);
		}
		any = true;
	}
	fclose(f);
	if (!opt.json)
		fprintf(out,
		    "%sparkstat: %ld lock-order inversion%s found "
		    "(deadlock detector on)\n",
		    any ? "\n" : "\n", n, n == 1 ? "" : "s");
	return n;
}

static int
run(char **argv)
{
	FILE *out = open_output(stderr, 125);
	static char dlog[PATH_MAX];
	if (opt.deadlock) {
		const char *tmp = getenv("TMPDIR");
		snprintf(dlog, sizeof dlog, "%s/parkstat-deadlock.XXXXXX",
		    tmp && *tmp ? tmp : "/tmp");
		int fd = mkstemp(dlog);
		if (fd < 0)
			die(125, "%s: %s", dlog, strerror(errno));
		close(fd);
	}
	int pfd[2];
	if (pipe2(pfd, O_CLOEXEC) != 0)
		die(125, "pipe: %s", strerror(errno));
	static char preload[2 * PATH_MAX];
	const char *ld_preload =
	    dropin_preload(argv[0], preload, sizeof preload);
	fflush(NULL);
	child = fork();
	if (child < 0)
		die(125, "fork: %s", strerror(errno));
	if (child == 0) {
		char pid[24], sample[24];
		close(pfd[0]);
		snprintf(pid, sizeof pid, "%ld", (long)getpid());
		snprintf(sample, sizeof sample, "%ld", opt.sample);
		if (setenv(PLX_ENV, "1", 1) != 0 ||
		    setenv(PLX_ENV_KEEP, pid, 1) != 0 ||
		    (opt.sample >= 0 &&
		        setenv(PLX_ENV_SAMPLE, sample, 1) != 0) ||
		    (ld_preload && setenv("LD_PRELOAD", ld_preload, 1) != 0) ||
		    (opt.deadlock &&
		        (setenv("PARKINGLOT_DEADLOCK", "report", 1) != 0 ||
		            setenv("PARKINGLOT_DEADLOCK_LOG", dlog, 1) != 0))) {
			int e = errno;
			(void)!write(pfd[1], &e, sizeof e);
			_exit(125);
		}
		execvp(argv[0], argv);
		int e = errno;
		(void)!write(pfd[1], &e, sizeof e);
		_exit(e == ENOENT ? 127 : 126);
	}
	close(pfd[1]);
	char why[160] = "";
	int e = 0;
	ssize_t n;
	while ((n = read(pfd[0], &e, sizeof e)) < 0 && errno == EINTR)
		;
	close(pfd[0]);
	if (n == (ssize_t)sizeof e) {
		waitpid(child, NULL, 0);
		if (e == ENOENT)
			die(127, "%s: command not found", argv[0]);
		die(e == ENOMEM ? 125 : 126, "%s: %s", argv[0], strerror(e));
	}

	/* Like time(1): the terminal's ^C and ^\ are for the command. */
	struct sigaction ign, fwd;
	memset(&ign, 0, sizeof ign);
	ign.sa_handler = SIG_IGN;
	sigaction(SIGINT, &ign, NULL);
	sigaction(SIGQUIT, &ign, NULL);
	memset(&fwd, 0, sizeof fwd);
	fwd.sa_handler = forward;
	fwd.sa_flags = SA_RESTART;
	sigaction(SIGTERM, &fwd, NULL);
	sigaction(SIGHUP, &fwd, NULL);

	/* Wait without reaping: while the child is a zombie its pid, and so
	 * the object's name, cannot be reused.  Meanwhile, whenever it has
	 * claimed new addresses, read its maps: a child killed by a signal
	 * saves none at exit, and a zombie has none (so the names of a
	 * killed child's last addresses may be missing). */
	int pidfd = -1;
#ifdef SYS_pidfd_open
	pidfd = (int)syscall(SYS_pidfd_open, child, 0);
#endif
	struct source early;
	enum open_result eo = OPEN_NONE;
	bool have_early = false;
	uint64_t seen = 0;
	for (;;) {
		siginfo_t si;
		si.si_pid = 0;
		if (waitid(P_PID, (id_t)child, &si,
		        WEXITED | WNOWAIT | WNOHANG) != 0) {
			if (errno == EINTR)
				continue;
			die(125, "waitid: %s", strerror(errno));
		}
		if (si.si_pid != 0)
			break;
		if (eo == OPEN_NONE) { /* until it exports, or fails to */
			eo = open_source(child, &early, why, sizeof why);
			have_early = eo == OPEN_OK;
		}
		if (have_early) {
			struct plx_header h;
			if (!copy_header(&h, early.map)) {
				/* Shrunk: the end says so. */
				munmap(
				    (void *)(uintptr_t)early.map, early.size);
				have_early = false;
			} else if (h.slots_used != seen &&
			    namer_read(&namer, child)) {
				seen = h.slots_used;
			}
		}
		if (pidfd >= 0) {
			struct pollfd p = { pidfd, POLLIN, 0 };
			poll(&p, 1, 50);
		} else {
			struct timespec ts = { 0, 50000000 };
			nanosleep(&ts, NULL);
		}
	}
	if (pidfd >= 0)
		close(pidfd);
	if (have_early)
		munmap((void *)(uintptr_t)early.map, early.size);

	struct source src;
	enum open_result o = open_source(child, &src, why, sizeof why);
	static struct snap sn;
	if (o == OPEN_OK && !take_snap(&src, &sn)) {
		o = OPEN_BAD;
		snprintf(why, sizeof why, "truncated while being read");
	}
	if (o != OPEN_NONE)
		shm_unlink(src.name);
	int status;
	while (waitpid(child, &status, 0) < 0)
		if (errno != EINTR)
			die(125, "waitpid: %s", strerror(errno));
	int ret = WIFEXITED(status) ? WEXITSTATUS(status)
	    : WIFSIGNALED(status)   ? 128 + WTERMSIG(status)
	                            : 125;
	long inversions = -1;
	if (opt.deadlock) {
		inversions = print_inversions(out, dlog);
		unlink(dlog);
		if (inversions > 0)
			ret = EXIT_INVERSION;
	}

	if (o == OPEN_OK) {
		struct report r = { 0 };
		r.inversions = inversions;
		r.ended = true;
		r.status = status;
		build(&r, &sn, NULL);
		print_report(out, &r);
		close_output(out, ret);
	} else if (o == OPEN_NONE) {
		fprintf(stderr,
		    "%s: %s did not export statistics (it does not "
		    "use libparkinglot, or a process it started does)\n",
		    prog, argv[0]);
	} else {
		fprintf(stderr, "%s: %s: %s\n", prog, src.path, why);
	}
	return ret;
}

/* ---- main ------------------------------------------------------------- */

int
main(int argc, char **argv)
{
	static const struct option longopts[] = {
		{ "pid", required_argument, NULL, 'p' },
		{ "interval", required_argument, NULL, 'i' },
		{ "json", no_argument, NULL, 'j' },
		{ "top", required_argument, NULL, 'n' },
		{ "sort", required_argument, NULL, 's' },
		{ "output", required_argument, NULL, 'o' },
		{ "no-preload", no_argument, NULL, 'P' },
		{ "deadlock", no_argument, NULL, 'D' },
		{ "stacks", required_argument, NULL, 'S' },
		{ "sample", required_argument, NULL, 'R' },
		{ "help", no_argument, NULL, 'h' },
		{ "version", no_argument, NULL, 'V' },
		{ NULL, 0, NULL, 0 },
	};
	int ch, at;
	opterr = 0;
	/* at: the argument each call reads (options are not permuted), for
	 * the messages. */
	while ((at = optind,
	           ch = getopt_long(
	               argc, argv, "+:p:i:jn:s:o:hV", longopts, NULL)) != -1) {
		switch (ch) {
		case 'p':
			opt.pid = parse_long(optarg, 1, INT_MAX, "process id");
			break;
		case 'i':
			if (!tool_parse_double(
			        optarg, 0.01, 86400, &opt.interval))
				usage_error("invalid interval '%s' (seconds, "
				            "from 0.01 to 86400)",
				    optarg);
			break;
		case 'j':
			opt.json = true;
			break;
		case 'n':
			opt.top = parse_long(
			    optarg, 0, PLX_NSLOTS, "number of addresses");
			break;
		case 's':
			if (strcmp(optarg, "wait") == 0)
				opt.sort = SORT_WAIT;
			else if (strcmp(optarg, "parks") == 0)
				opt.sort = SORT_PARKS;
			else
				usage_error("invalid sort key '%s' (use wait "
				            "or parks)",
				    optarg);
			break;
		case 'o':
			opt.output = optarg;
			break;
		case 'P':
			opt.no_preload = true;
			break;
		case 'D':
			opt.deadlock = true;
			break;
		case 'S':
			opt.stacks = parse_long(
			    optarg, 0, PLX_NSTACKS, "number of call sites");
			break;
		case 'R':
			opt.sample = parse_long(
			    optarg, 0, PLX_SAMPLE_MAX, "sampling interval");
			break;
		case 'h':
			help();
			return 0;
		case 'V':
			printf(
			    "parkstat (libparkinglot) %s\n", PL_VERSION_STRING);
			return 0;
		case ':':
			if (strncmp(argv[at], "--", 2) == 0)
				usage_error(
				    "option '%s' needs an argument", argv[at]);
			usage_error("option '-%c' needs an argument", optopt);
		default:
			/* A long option as typed: optopt is the letter of a
			 * known one given an argument it takes none of
			 * (--json=yes), 0 for an unknown one.  A short one
			 * by its letter, which may be inside a cluster. */
			if (strncmp(argv[at], "--", 2) != 0)
				usage_error("invalid option '-%c'", optopt);
			if (optopt && strchr(argv[at], '='))
				usage_error("option '%.*s' takes no argument",
				    (int)strcspn(argv[at], "="), argv[at]);
			usage_error("invalid option '%s'", argv[at]);
		}
	}
	char **cmd = argv + optind;
	if (opt.pid && *cmd)
		usage_error("give either -p PID or a command, not both");
	if (opt.interval > 0 && !opt.pid)
		usage_error("-i needs -p PID");
	if (opt.deadlock && opt.pid)
		usage_error("--deadlock is for a command that parkstat runs");
	if (opt.no_preload && opt.pid)
		usage_error("--no-preload is for a command that parkstat runs");
	if (opt.sample >= 0 && opt.pid)
		usage_error("--sample is for a command that parkstat runs; "
		            "give the process %s instead",
		    PLX_ENV_SAMPLE);
	if (opt.pid)
		return watch(opt.pid);
	if (*cmd == NULL)
		usage_error("no command to run and no -p PID");
	return run(cmd);
}
