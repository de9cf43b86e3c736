/* SPDX-License-Identifier: MIT */
/*
 * The threads parked at the moment of a report: the table of threads the
 * library exports (lib/export.h, struct plx_thread), each thread with its
 * name, the lock it is parked on (named as the contended addresses are)
 * and how long it has been parked, longest first.  Every thread is a line
 * of its own, however many wait on one address (the threads of a hung
 * server pile up on one queue: that is the point); an address with more
 * than one thread also gets a summary line in the text report.
 *
 * The entries come from take_snap, which copied each with the reader's
 * half of the seqlock (plx_thread_read).  Both processes read the same
 * CLOCK_MONOTONIC, so the time parked is the time of the report less the
 * start of the park.  The names are the kernel's (/proc/PID/task/TID/comm),
 * read here, from outside: the library records none.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "kind.h"
#include "parkstat.h"

struct held_lock {
	uint64_t addr, pc;
	char name[256]; /* the lock's symbol, "" if not known */
	char site[512]; /* "fn+0xN (file:line)", "" if not known */
};

struct parked_row {
	uint64_t tid, addr, wait_ns;
	unsigned kind;
	char comm[32];      /* "" if not known */
	char name[256];     /* the lock's symbol, "" if not known */
	const char *module; /* the file it is in, NULL if not known */
	/* Checked mode: the locks it holds (the first PLX_HELD of nheld). */
	uint32_t nheld;
	struct held_lock held[PLX_HELD];
	/* The row of the thread that holds the lock it waits for, + 1 (0:
	 * none listed); cycle: the number of its deadlock cycle, + 1. */
	size_t holder, cycle;
};

/* The name of thread tid of process pid, from the kernel; false if the
 * thread is gone (its directory is). */
static bool
read_comm(long pid, uint64_t tid, char *out, size_t len)
{
	char path[64];
	out[0] = '\0';
	snprintf(
	    path, sizeof path, "/proc/%ld/task/%" PRIu64 "/comm", pid, tid);
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return errno != ENOENT && errno != ESRCH;
	ssize_t n = read(fd, out, len - 1);
	close(fd);
	if (n < 0)
		n = 0;
	out[n] = '\0';
	out[strcspn(out, "\n")] = '\0';
	return true;
}

static int
cmp_parked(const void *a, const void *b)
{
	const struct parked_row *x = a, *y = b;
	if (x->wait_ns != y->wait_ns)
		return x->wait_ns > y->wait_ns ? -1 : 1;
	return x->tid < y->tid ? -1 : x->tid > y->tid;
}

/* Whether held lock addr is the lock row w is parked for: its address,
 * or for a rwlock's writer, which parks on the lock's address + 1 (the
 * writer key of lib/rwlock.c), that address less 1. */
static bool
is_waited(uint64_t addr, const struct parked_row *w)
{
	bool rw =
	    w->kind == PLI_KIND_PL_RWLOCK || w->kind == PLI_KIND_PTHREAD_RWLOCK;
	return addr == w->addr || (rw && addr + 1 == w->addr);
}

/* Whether row h holds the lock row w is parked for. */
static bool
holds_waited(const struct parked_row *h, const struct parked_row *w)
{
	for (size_t i = 0; i < PLX_HELD && i < h->nheld; i++)
		if (is_waited(h->held[i].addr, w))
			return true;
	return false;
}

/*
 * The deadlocks among the parked threads (checked mode, where the threads
 * publish their held locks): each parked thread waits for the thread that
 * holds its lock (its holder), and a cycle of holders is a deadlock.  A
 * lock held by several threads (readers) gives the first of them.
 */
static void
find_cycles(struct parked *p)
{
	for (size_t i = 0; i < p->nrows; i++)
		for (size_t j = 0; j < p->nrows && !p->rows[i].holder; j++)
			if (j != i && holds_waited(&p->rows[j], &p->rows[i]))
				p->rows[i].holder = j + 1;
	for (size_t i = 0; i < p->nrows; i++) {
		if (p->rows[i].cycle)
			continue;
		/* Follow the holders from i, at most nrows steps: back at
		 * i, it is a cycle, numbered from its first row. */
		size_t k = i, steps = 0;
		do {
			k = p->rows[k].holder ? p->rows[k].holder - 1
			                      : SIZE_MAX;
		} while (k != SIZE_MAX && k != i && ++steps < p->nrows);
		if (k != i)
			continue;
		p->ncycles++;
		k = i;
		do {
			p->rows[k].cycle = p->ncycles;
			k = p->rows[k].holder - 1;
		} while (k != i);
	}
}

void
parked_build(struct parked *p, const struct plx_shm *s, const struct namer *nm,
    uint64_t now_ns, bool live)
{
	memset(p, 0, sizeof *p);
	p->live = live;
	p->listed = s->h.threads_listed;
	p->unlisted = s->h.threads_unlisted;
	size_t n = 0;
	for (size_t i = 0; i < PLX_NTHREADS; i++)
		n += s->threads[i].tid && s->threads[i].addr;
	p->rows = calloc(n ? n : 1, sizeof *p->rows);
	if (p->rows == NULL) {
		fprintf(stderr, "parkstat: out of memory\n");
		exit(1);
	}
	for (size_t i = 0; i < PLX_NTHREADS; i++) {
		const struct plx_thread *e = &s->threads[i];
		if (e->tid == 0 || e->addr == 0)
			continue;
		struct parked_row *row = &p->rows[p->nrows];
		row->tid = e->tid;
		/* A live process's thread that is gone has left its entry
		 * behind (it ended without its record: export.c): not
		 * parked. */
		if (live &&
		    !read_comm(
		        (long)s->h.pid, e->tid, row->comm, sizeof row->comm))
			continue;
		row->addr = e->addr;
		row->kind = e->kind;
		row->wait_ns = now_ns > e->start_ns ? now_ns - e->start_ns : 0;
		namer_name(
		    nm, e->addr, row->name, sizeof row->name, &row->module);
		/* The detector counts a blocking acquisition as held from
		 * its attempt on (lib/deadlock.c, the hooks): the last lock
		 * of a parked thread's set, when it is the one the thread
		 * waits for, is that attempt, not a lock it holds. */
		row->nheld = e->nheld;
		if (row->nheld && row->nheld <= PLX_HELD &&
		    is_waited(e->held[row->nheld - 1].addr, row))
			row->nheld--;
		for (size_t h = 0; h < PLX_HELD && h < row->nheld; h++) {
			struct held_lock *hl = &row->held[h];
			const char *mod;
			struct frame_name f;
			hl->addr = e->held[h].addr;
			hl->pc = e->held[h].pc;
			namer_name(
			    nm, hl->addr, hl->name, sizeof hl->name, &mod);
			namer_frame(nm, hl->pc, false, &f);
			if (f.fn[0] && f.src)
				snprintf(hl->site, sizeof hl->site,
				    "%s (%s:%d)", f.fn, f.src, f.line);
			else if (f.fn[0])
				snprintf(hl->site, sizeof hl->site, "%s (%s)",
				    f.fn,
				    f.module ? basename_of(f.module) : "?");
			else
				snprintf(hl->site, sizeof hl->site,
				    "0x%" PRIx64, hl->pc);
		}
		p->nrows++;
	}
	qsort(p->rows, p->nrows, sizeof *p->rows, cmp_parked);
	find_cycles(p);
}

/* The object most rows' locks are in: named once, in the title. */
static const char *
main_module(const struct parked *p)
{
	const char *best = NULL;
	size_t bestn = 0;
	for (size_t i = 0; i < p->nrows; i++) {
		const char *m = p->rows[i].module;
		size_t n = 0;
		if (m == NULL)
			continue;
		for (size_t j = 0; j < p->nrows; j++)
			n += p->rows[j].module &&
			    strcmp(p->rows[j].module, m) == 0;
		if (n > bestn) {
			best = m;
			bestn = n;
		}
	}
	return best;
}

static void
lock_label(
    char *buf, size_t len, const struct parked_row *row, const char *main)
{
	const char *m = row->module;
	bool other = m && main && strcmp(m, main) != 0;
	snprintf(buf, len, "%s%s%s%s", row->name[0] ? row->name : "-",
	    other ? " (" : "", other ? basename_of(m) : "", other ? ")" : "");
}

static void
held_label(char *buf, size_t len, const struct held_lock *h)
{
	if (h->name[0])
		snprintf(buf, len, "%s (0x%" PRIx64 ")", h->name, h->addr);
	else
		snprintf(buf, len, "0x%" PRIx64, h->addr);
}

/* Each cycle of threads: who waits for what, held by whom, since when,
 * and what each holds and where it took it. */
static void
cycles_print_text(FILE *out, const struct parked *p)
{
	char b1[32], lock[sizeof p->rows->name + 32];
	for (size_t c = 1; c <= p->ncycles; c++) {
		size_t n = 0, first = SIZE_MAX;
		for (size_t i = 0; i < p->nrows; i++)
			if (p->rows[i].cycle == c) {
				n++;
				if (first == SIZE_MAX)
					first = i;
			}
		fprintf(out,
		    "\ndeadlock: %zu threads, each waiting for a lock the "
		    "next one holds\n",
		    n);
		size_t k = first;
		do {
			const struct parked_row *r = &p->rows[k];
			const struct parked_row *h = &p->rows[r->holder - 1];
			if (r->name[0])
				snprintf(lock, sizeof lock,
				    "%s (0x%" PRIx64 ")", r->name, r->addr);
			else
				snprintf(
				    lock, sizeof lock, "0x%" PRIx64, r->addr);
			fprintf(out,
			    "  thread %" PRIu64 " (%s) waits for %s, held by "
			    "thread %" PRIu64 ", for %s\n",
			    r->tid, r->comm[0] ? r->comm : "-", lock, h->tid,
			    fmt_ns(b1, sizeof b1, (double)r->wait_ns));
			for (size_t i = 0; i < PLX_HELD && i < r->nheld; i++) {
				held_label(lock, sizeof lock, &r->held[i]);
				fprintf(out, "    holds %s, taken at %s\n",
				    lock, r->held[i].site);
			}
			if (r->nheld > PLX_HELD)
				fprintf(out, "    and %" PRIu32 " more locks\n",
				    r->nheld - PLX_HELD);
			k = r->holder - 1;
		} while (k != first);
	}
}

void
parked_print_text(FILE *out, const struct parked *p, bool always)
{
	if (!always && p->nrows == 0 && p->unlisted == 0)
		return;
	cycles_print_text(out, p);
	const char *main = main_module(p);
	fprintf(out,
	    "\nthreads parked %s%s%s, longest first (%zu of %" PRIu64
	    " threads listed)\n",
	    p->live ? "now" : "when it ended", main ? " in " : "",
	    main ? basename_of(main) : "", p->nrows, p->listed);
	if (p->nrows == 0)
		fprintf(out, "  (none)\n");
	char lock[sizeof p->rows->name + 64], b1[32];
	int lockw = 4, kindw = 4;
	for (size_t i = 0; i < p->nrows; i++) {
		lock_label(lock, sizeof lock, &p->rows[i], main);
		int l = (int)strlen(lock);
		lockw = l > lockw ? l : lockw;
		l = (int)strlen(pli_kind_label(p->rows[i].kind));
		kindw = l > kindw ? l : kindw;
	}
	if (p->nrows)
		fprintf(out, "  %-8s  %-16s  %9s  %-14s  %-*s  %s\n", "tid",
		    "name", "parked", "address", lockw, "lock", "kind");
	for (size_t i = 0; i < p->nrows; i++) {
		const struct parked_row *row = &p->rows[i];
		char a[24];
		const char *kind = pli_kind_label(row->kind);
		snprintf(a, sizeof a, "0x%" PRIx64, row->addr);
		lock_label(lock, sizeof lock, row, main);
		fprintf(out, "  %-8" PRIu64 "  %-16s  %9s  %-14s  %-*s  %s\n",
		    row->tid, row->comm[0] ? row->comm : "-",
		    fmt_ns(b1, sizeof b1, (double)row->wait_ns), a, lockw, lock,
		    kind[0] ? kind : "-");
	}
	/* The addresses that hold more than one thread, in the order of
	 * their longest waiter. */
	for (size_t i = 0; i < p->nrows; i++) {
		size_t n = 0;
		bool first = true;
		for (size_t j = 0; j < p->nrows; j++) {
			if (p->rows[j].addr != p->rows[i].addr)
				continue;
			first &= j >= i;
			n++;
		}
		if (n < 2 || !first)
			continue;
		lock_label(lock, sizeof lock, &p->rows[i], main);
		fprintf(out, "  %zu threads parked on %s (0x%" PRIx64 ")\n", n,
		    lock, p->rows[i].addr);
	}
	if (p->unlisted)
		fprintf(out,
		    "  not listed (table of %d threads full): %" PRIu64
		    " threads\n",
		    PLX_NTHREADS, p->unlisted);
}

void
parked_print_json(FILE *out, const struct parked *p)
{
	fprintf(out, "  \"threads_listed\": %" PRIu64 ",\n", p->listed);
	fprintf(out, "  \"threads_unlisted\": %" PRIu64 ",\n", p->unlisted);
	/* The deadlocks: each a list of tids, in the order of who waits
	 * for whom (the details are in the threads' "parked" lines). */
	fprintf(out, "  \"deadlocks\": [");
	for (size_t c = 1; c <= p->ncycles; c++) {
		size_t first = 0;
		while (p->rows[first].cycle != c)
			first++;
		fprintf(out, "%s\n    {\"threads\": [", c > 1 ? "," : "");
		size_t k = first;
		do {
			fprintf(out, "%s%" PRIu64, k == first ? "" : ", ",
			    p->rows[k].tid);
			k = p->rows[k].holder - 1;
		} while (k != first);
		fprintf(out, "]}");
	}
	fprintf(out, "%s],\n", p->ncycles ? "\n  " : "");
	/* One thread per line, as the addresses. */
	fprintf(out, "  \"parked\": [\n");
	for (size_t i = 0; i < p->nrows; i++) {
		const struct parked_row *row = &p->rows[i];
		fprintf(out, "    {\"tid\": %" PRIu64 ", \"name\": ", row->tid);
		json_str_or_null(out, row->comm);
		fprintf(out, ", \"address\": \"0x%" PRIx64 "\", \"symbol\": ",
		    row->addr);
		json_str_or_null(out, row->name);
		fputs(", \"object\": ", out);
		json_str_or_null(out, row->module);
		fputs(", \"kind\": ", out);
		json_str_or_null(out, pli_kind_label(row->kind));
		fprintf(out, ", \"wait_ns\": %" PRIu64, row->wait_ns);
		if (row->holder)
			fprintf(out, ", \"held_by\": %" PRIu64,
			    p->rows[row->holder - 1].tid);
		if (row->cycle)
			fprintf(out, ", \"deadlock\": %zu", row->cycle);
		fprintf(
		    out, ", \"nheld\": %" PRIu32 ", \"holds\": [", row->nheld);
		for (size_t h = 0; h < PLX_HELD && h < row->nheld; h++) {
			const struct held_lock *hl = &row->held[h];
			fprintf(out,
			    "%s{\"address\": \"0x%" PRIx64 "\", \"symbol\": ",
			    h ? ", " : "", hl->addr);
			json_str_or_null(out, hl->name);
			fprintf(out,
			    ", \"pc\": \"0x%" PRIx64 "\", \"taken_at\": ",
			    hl->pc);
			json_str_or_null(out, hl->site);
			fputs("}", out);
		}
		fprintf(out, "]}%s\n", i + 1 < p->nrows ? "," : "");
	}
	fprintf(out, "  ],\n");
}

void
parked_free(struct parked *p)
{
	free(p->rows);
	p->rows = NULL;
	p->nrows = 0;
}
