/* SPDX-License-Identifier: MIT */
/*
 * The call sites that waited longest: the stacks the library sampled
 * (lib/export.h, struct plx_stack), named, cut to the program's frames,
 * merged and ordered.
 *
 * A stack is recorded from inside the library, so its innermost frames
 * are the library's own (the sampling, the park, the lock's slow path,
 * the drop-in's pthread function) and, under a sanitizer, its
 * interceptor's.  Those are left out, up to the first frame of the
 * program; the outermost of them that is the library's is shown as the
 * function the program called ("via").  Two stacks whose program frames,
 * lock and kind are the same are one call site (they differ only inside
 * the library, as a lock's spinning and parking paths do).
 */
#define _GNU_SOURCE
#include <inttypes.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>

#include "kind.h"
#include "parkstat.h"

struct stack_row {
	uint64_t addr;
	unsigned kind;
	uint64_t parks, wait_ns, max_ns;
	unsigned first, depth; /* pcs[first..depth): the program's frames */
	const uint64_t *pcs;
	char via[128]; /* "" if no frame of the library was found */
};

/* A library's frame, by its file, or by its name where the library is
 * linked into the program itself. */
static bool
is_ours(const struct frame_name *f, bool *library)
{
	const char *m = f->module ? basename_of(f->module) : "";
	*library = strncmp(m, "libparkinglot", 13) == 0 ||
	    strncmp(f->fn, "pli_", 4) == 0 || strncmp(f->fn, "pl_", 3) == 0 ||
	    strncmp(f->fn, "export_sample", 13) == 0;
	return *library || strncmp(m, "libasan.", 8) == 0 ||
	    strncmp(m, "libtsan.", 8) == 0 || strncmp(m, "libubsan.", 9) == 0;
}

/* A function a program calls, as the drop-in's and the library's
 * public ones are named. */
static bool
public_name(const char *fn)
{
	static const char *const prefix[] = { "pthread_", "pl_", "mtx_", "cnd_",
		"call_once" };
	for (size_t i = 0; i < sizeof prefix / sizeof *prefix; i++)
		if (strncmp(fn, prefix[i], strlen(prefix[i])) == 0)
			return true;
	return false;
}

/* Where the program's frames begin in st, and what it called: the
 * outermost of the library's frames with a public name. */
static void
cut(struct stack_row *row, const struct plx_stack *st, const struct namer *nm)
{
	row->via[0] = '\0';
	row->first = 0;
	for (unsigned i = 0; i < row->depth; i++) {
		struct frame_name f;
		bool library;
		namer_frame(nm, st->pcs[i], i == 0, &f);
		if (!is_ours(&f, &library))
			break;
		row->first = i + 1;
		if (library && public_name(f.fn)) {
			size_t n = strcspn(f.fn, "+");
			if (n >= sizeof row->via)
				n = sizeof row->via - 1;
			memcpy(row->via, f.fn, n);
			row->via[n] = '\0';
		}
	}
}

static bool
same_site(const struct stack_row *a, const struct stack_row *b)
{
	unsigned na = a->depth - a->first, nb = b->depth - b->first;
	return a->addr == b->addr && a->kind == b->kind && na == nb &&
	    memcmp(a->pcs + a->first, b->pcs + b->first, na * sizeof *a->pcs) ==
	    0;
}

static bool sort_by_parks;

static int
cmp_stacks(const void *pa, const void *pb)
{
	const struct stack_row *a = pa, *b = pb;
	uint64_t ka = sort_by_parks ? a->parks : a->wait_ns;
	uint64_t kb = sort_by_parks ? b->parks : b->wait_ns;
	if (ka != kb)
		return ka > kb ? -1 : 1;
	if (a->parks != b->parks)
		return a->parks > b->parks ? -1 : 1;
	return a->addr < b->addr ? -1 : a->addr > b->addr;
}

void
stacks_build(struct stacks *out, const struct plx_shm *s,
    const struct namer *nm, bool by_parks, long top)
{
	out->rows = calloc(PLX_NSTACKS, sizeof *out->rows);
	out->nrows = out->shown = 0;
	if (out->rows == NULL)
		return;
	for (size_t i = 0; i < PLX_NSTACKS; i++) {
		const struct plx_stack *st = &s->stacks[i];
		if (st->key == 0 || st->depth == 0 || st->parks == 0)
			continue;
		struct stack_row *row = &out->rows[out->nrows];
		row->addr = st->addr;
		row->kind = st->kind;
		row->parks = st->parks;
		row->wait_ns = st->wait_ns;
		row->max_ns = st->max_ns;
		row->depth = st->depth < PLX_DEPTH ? st->depth : PLX_DEPTH;
		row->pcs = st->pcs;
		cut(row, st, nm);
		size_t k = 0;
		while (k < out->nrows && !same_site(&out->rows[k], row))
			k++;
		if (k == out->nrows) {
			out->nrows++;
			continue;
		}
		struct stack_row *to = &out->rows[k];
		to->parks += row->parks;
		to->wait_ns += row->wait_ns;
		if (row->max_ns > to->max_ns)
			to->max_ns = row->max_ns;
	}
	sort_by_parks = by_parks;
	qsort(out->rows, out->nrows, sizeof *out->rows, cmp_stacks);
	out->shown =
	    top == 0 || (size_t)top > out->nrows ? out->nrows : (size_t)top;
}

void
stacks_free(struct stacks *st)
{
	free(st->rows);
	st->rows = NULL;
	st->nrows = st->shown = 0;
}

/* "file.c:12" (" (inlined f)" for a call inside code inlined there),\n * else
 * the file mapped there, else "?". */
static const char *
where(const struct frame_name *f, char *buf, size_t len)
{
	if (f->src)
		snprintf(buf, len, "%s:%d%s%s%s", basename_of(f->src), f->line,
		    f->inlined[0] ? " (inlined " : "", f->inlined,
		    f->inlined[0] ? ")" : "");
	else
		snprintf(
		    buf, len, "%s", f->module ? basename_of(f->module) : "?");
	return buf;
}

void
stacks_print_text(FILE *out, const struct stacks *st, const struct plx_shm *s,
    const struct namer *nm)
{
	const struct plx_header *h = &s->h;
	if (h->sample_every == 0) {
		fprintf(
		    out, "\ncall sites: not sampled (%s=0)\n", PLX_ENV_SAMPLE);
		return;
	}
	fprintf(out,
	    "\ncall sites that waited longest, 1 park in %" PRIu32
	    " of each thread sampled (%zu of %zu)\n",
	    h->sample_every, st->shown, st->nrows);
	if (st->nrows == 0)
		fprintf(out, "  (none)\n");
	for (size_t i = 0; i < st->shown; i++) {
		const struct stack_row *row = &st->rows[i];
		char lock[256], b1[32], b2[32], loc[PATH_MAX];
		const char *module;
		namer_name(nm, row->addr, lock, sizeof lock, &module);
		fprintf(out,
		    "  #%zu  %s parked in %" PRIu64 " sampled park%s "
		    "(longest %s)\n",
		    i + 1, fmt_ns(b1, sizeof b1, (double)row->wait_ns),
		    row->parks, row->parks == 1 ? "" : "s",
		    fmt_ns(b2, sizeof b2, (double)row->max_ns));
		fprintf(out, "      on %s%s%s (0x%" PRIx64 "), %s%s%s\n",
		    lock[0] ? lock : "-", module ? " in " : "",
		    module ? basename_of(module) : "", row->addr,
		    pli_kind_label(row->kind)[0] ? pli_kind_label(row->kind)
		                                 : "unknown kind",
		    row->via[0] ? ", via " : "", row->via);
		if (row->first == row->depth)
			fprintf(out, "      (no frame of the program)\n");
		for (unsigned f = row->first; f < row->depth; f++) {
			struct frame_name fn;
			namer_frame(nm, row->pcs[f], f == 0, &fn);
			char pc[24];
			snprintf(pc, sizeof pc, "0x%" PRIx64, row->pcs[f]);
			fprintf(out, "      %-40s %s\n", fn.fn[0] ? fn.fn : pc,
			    where(&fn, loc, sizeof loc));
		}
	}
	if (h->stacks_dropped)
		fprintf(out,
		    "  not tracked (table full): %" PRIu64 " samples\n",
		    h->stacks_dropped);
}

void
stacks_print_json(FILE *out, const struct stacks *st, const struct plx_shm *s,
    const struct namer *nm)
{
	const struct plx_header *h = &s->h;
	fprintf(out, "  \"sample_every\": %" PRIu32 ",\n", h->sample_every);
	fprintf(out, "  \"stacks_tracked\": %zu,\n", st->nrows);
	fprintf(
	    out, "  \"stacks_untracked\": %" PRIu64 ",\n", h->stacks_dropped);
	/* One call site per line, as the addresses. */
	fprintf(out, "  \"stacks\": [\n");
	for (size_t i = 0; i < st->shown; i++) {
		const struct stack_row *row = &st->rows[i];
		char lock[256];
		const char *module;
		namer_name(nm, row->addr, lock, sizeof lock, &module);
		fprintf(out,
		    "    {\"rank\": %zu, \"address\": \"0x%" PRIx64
		    "\", \"symbol\": ",
		    i + 1, row->addr);
		json_str_or_null(out, lock);
		fputs(", \"kind\": ", out);
		json_str_or_null(out, pli_kind_label(row->kind));
		fputs(", \"via\": ", out);
		json_str_or_null(out, row->via);
		fprintf(out,
		    ", \"parks\": %" PRIu64 ", \"wait_ns\": %" PRIu64
		    ", \"max_wait_ns\": %" PRIu64 ", \"frames\": [",
		    row->parks, row->wait_ns, row->max_ns);
		for (unsigned f = row->first; f < row->depth; f++) {
			struct frame_name fn;
			namer_frame(nm, row->pcs[f], f == 0, &fn);
			fprintf(out,
			    "%s{\"pc\": \"0x%" PRIx64 "\", \"function\": ",
			    f > row->first ? ", " : "", row->pcs[f]);
			json_str_or_null(out, fn.fn);
			fputs(", \"object\": ", out);
			json_str_or_null(out, fn.module);
			fputs(", \"file\": ", out);
			json_str_or_null(out, fn.src);
			fprintf(out, ", \"line\": %d, \"inlined\": ", fn.line);
			json_str_or_null(out, fn.inlined);
			fputc('}', out);
		}
		fprintf(out, "]}%s\n", i + 1 < st->shown ? "," : "");
	}
	fprintf(out, "  ],\n");
}
