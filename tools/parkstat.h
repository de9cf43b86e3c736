/* SPDX-License-Identifier: MIT */
/*
 * What the files of parkstat share: the namer of the target's addresses
 * (parkstat-names.c), the sampled stacks (parkstat-stacks.c), the threads
 * parked now (parkstat-parked.c) and the formatting of figures
 * (parkstat-fmt.c).  parkstat.c reads the object
 * and reports; the others call nothing of it.
 */
#ifndef PARKSTAT_H
#define PARKSTAT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include <elfutils/libdwfl.h>

#include "export.h"

/* ---- parkstat-names.c ------------------------------------------------- */

struct namer {
	char *maps; /* the text the modules come from */
	size_t len;
	Dwfl *dwfl; /* NULL: no modules */
};

/* Name from the maps text (len bytes, in /proc/PID/maps' format) from now
 * on, unless it is the text in use. */
void namer_set(struct namer *nm, const char *text, size_t len);
/* From /proc/PID/maps; false if it cannot be read or is empty (the
 * process is gone, or a zombie). */
bool namer_read(struct namer *nm, long pid);
/* The symbol that holds addr, as "name" or "name+0xN" (out is "" if
 * none), and the file mapped there (NULL if none). */
void namer_name(const struct namer *nm, uint64_t addr, char *out, size_t outlen,
    const char **module);

struct frame_name {
	char fn[256];       /* "name+0xN", "" if unknown */
	const char *module; /* the file, NULL if unknown */
	const char *src;    /* source file of the call, NULL if unknown */
	int line;           /* its line, 0 if unknown */
	/* The function inlined at src:line whose code pc is in ("" if
	 * none): the frame's call is in it. */
	char inlined[128];
};
/* A frame of a stack, by its return address pc (innermost: the frame
 * that sampled, whose pc is no return address). */
void namer_frame(
    const struct namer *nm, uint64_t pc, bool innermost, struct frame_name *f);

/* ---- parkstat-stacks.c ------------------------------------------------ */

/* The sampled stacks of one report: merged where the program's frames
 * are the same, ordered by time parked (or by parks), the first shown. */
struct stack_row;
struct stacks {
	struct stack_row *rows;
	size_t nrows, shown;
};
void stacks_build(struct stacks *st, const struct plx_shm *s,
    const struct namer *nm, bool by_parks, long top);
void stacks_print_text(FILE *out, const struct stacks *st,
    const struct plx_shm *s, const struct namer *nm);
/* The "stacks" member and those before it, each line "  ...,". */
void stacks_print_json(FILE *out, const struct stacks *st,
    const struct plx_shm *s, const struct namer *nm);
void stacks_free(struct stacks *st);

/* ---- parkstat-parked.c ------------------------------------------------ */

/* The threads parked at the time of one report, longest first. */
struct parked_row;
struct parked {
	struct parked_row *rows;
	size_t nrows;
	bool live;         /* of a running process: names read, "now" */
	size_t ncycles;    /* deadlocks: cycles of threads (checked mode) */
	uint64_t listed;   /* entries claimed (threads_listed) */
	uint64_t unlisted; /* threads the table had no room for */
};
/* From s, whose entries are consistent copies (plx_thread_read), at
 * now_ns (CLOCK_MONOTONIC).  live: the process runs, so each thread's
 * name is read from /proc, and a thread that is gone is left out. */
void parked_build(struct parked *p, const struct plx_shm *s,
    const struct namer *nm, uint64_t now_ns, bool live);
/* The section; unless always, nothing when no thread is parked.  Each
 * deadlock first, as a section of its own. */
void parked_print_text(FILE *out, const struct parked *p, bool always);
/* The "deadlocks" and "parked" members and those before them, each line
 * "  ...,". */
void parked_print_json(FILE *out, const struct parked *p);
void parked_free(struct parked *p);

/* ---- parkstat-fmt.c --------------------------------------------------- */

const char *fmt_ns(char *buf, size_t len, double ns); /* "1.23 ms" */
const char *fmt_bytes(char *buf, size_t len, uint64_t b);
const char *fmt_us(char *buf, size_t len, double us);
const char *basename_of(const char *path);
/* A JSON string: escapes, and invalid UTF-8 as U+FFFD. */
void json_str(FILE *out, const char *s);
/* The same, or null for NULL or "". */
void json_str_or_null(FILE *out, const char *s);

#endif /* PARKSTAT_H */
