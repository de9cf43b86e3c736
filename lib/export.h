/* SPDX-License-Identifier: MIT */
/*
 * The live export of the statistics: the layout of the shared-memory
 * object that the library publishes (export.c) and tools/parkstat reads.
 *
 * Naming and lifetime.  A process that exports (PARKINGLOT_STATS=1 in its
 * environment at load time, or pl_stats_export(true)) creates the POSIX
 * shared-memory object "/parkinglot.<pid>" (/dev/shm/parkinglot.<pid> on
 * Linux), mode 0600, with O_EXCL; an object of that name left by an
 * earlier process with the same pid (killed, or replaced by exec) is
 * removed first.  The library removes it again at normal exit (atexit) and
 * on pl_stats_export(false), unless PARKINGLOT_STATS_KEEP holds the pid of
 * the process: then the object outlives it, so that parkstat, which sets
 * that variable for the command it starts, reads the final figures and
 * removes the object itself.
 *
 * Layout.  The object is PLX_SIZE bytes: struct plx_shm at offset 0 and
 * the library's counters page at PLX_COUNTERS_OFF.  That page is the very
 * memory of the library's striped counters (stats.c maps the object over
 * them), so a reader that sums the stripes as pl_stats_get does reads
 * exactly what pl_stats_get returns.  Everything is written with relaxed
 * atomics by many threads and read the same way by parkstat, field by
 * field: a report is not an atomic snapshot across fields.  The object is
 * valid once magic reads PLX_MAGIC; a reader must check version, sizes and
 * the counters layout fields before trusting anything else.  A change to
 * any structure here is a new PLX_VERSION, and parkstat refuses a version
 * other than its own.
 *
 * Threads.  threads[] lists the threads that may park, one entry each,
 * so that parkstat -p shows every thread parked at this moment (a hung
 * process: see plx_thread).  Each entry is written by its own thread only,
 * and read by parkstat with the seqlock of plx_thread_read.
 *
 * Names.  The object holds addresses, never names: the hooks run inside
 * lock operations, where looking a name up (dladdr: the dynamic loader's
 * lock) could deadlock.  parkstat names them from /proc/PID/maps, or,
 * once the process is gone, from the lines of its maps that the exit
 * handler saved in maps[].
 */
#ifndef PARKINGLOT_EXPORT_H
#define PARKINGLOT_EXPORT_H

#include <stddef.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "counters.h"

#define PLX_MAGIC UINT64_C(0x0053544154534c50) /* "PLSTATS\0" */
/* 2: the library names nothing (see plx_slot); 3: the resets count and
 * time are in the counters page (the library's statistics own them), and
 * the exported tables say which reset they follow (tables_resets); 4: the
 * kind and contended count of each slot, and the sampled stacks; 5: the
 * count of times each slot's address was locked (taken); 6: the table
 * of threads (plx_thread), the counters page moved to 512 KiB. */
#define PLX_VERSION 6

#define PLX_NAME_FMT "/parkinglot.%ld"       /* shm_open name, from the pid */
#define PLX_ENV "PARKINGLOT_STATS"           /* 1: export from load on */
#define PLX_ENV_KEEP "PARKINGLOT_STATS_KEEP" /* pid that leaves its object */
/* 1 in how many parks of a thread records its stack (0: none). */
#define PLX_ENV_SAMPLE "PARKINGLOT_STATS_SAMPLE"
#define PLX_SAMPLE_DEFAULT 8
#define PLX_SAMPLE_MAX 1000000

/* The object: the structures below, then the counters page. */
#define PLX_COUNTERS_OFF ((size_t)512 * 1024)
#define PLX_COUNTERS_MAX ((size_t)64 * 1024) /* largest page size handled */
#define PLX_SIZE (PLX_COUNTERS_OFF + PLX_COUNTERS_MAX)

/* The counters page: PLX_NSTRIPES stripes of PLX_STRIPE_SIZE bytes, each
 * an array of uint64_t indexed by enum plx_counter; summed over stripes
 * they are the counters of struct pl_stats, in the order of the one list
 * of them, PL_STATS_LIST (counters.h; PLX_PARKED_NOW is a gauge, +1 and
 * -1 wrapping).  Then
 * max_queue_len, a size_t at PLX_MAXQ_OFF. */
#define PLX_NSTRIPES 16
#define PLX_STRIPE_SIZE 128
#define PLX_COUNTER_ENUM(name, field, type, kind, label)                       \
	PLI_IF_COUNTER(kind, PLX_##name, )
enum plx_counter { PL_STATS_LIST(PLX_COUNTER_ENUM) PLX_NCOUNTERS };
#undef PLX_COUNTER_ENUM
#define PLX_MAXQ_OFF (PLX_NSTRIPES * PLX_STRIPE_SIZE)
/* Then the count of pl_stats_reset calls and the CLOCK_MONOTONIC time of
 * the last (0: none), two uint64_t. */
#define PLX_RESETS_OFF (PLX_MAXQ_OFF + 8)
#define PLX_RESET_NS_OFF (PLX_MAXQ_OFF + 16)
#define PLX_COUNTERS_BYTES (PLX_MAXQ_OFF + 24)

/* Histogram of the queue length seen by each park (the length of the
 * address's queue once the parking thread is in it): bin 0 is 1, bin
 * k is 2^k .. 2^(k+1)-1, the last bin 2^(PLX_QBINS-1) and more. */
#define PLX_QBINS 16
/* Histogram of the time each thread spent queued (woken or timed out):
 * bin 0 is under 1 us, bin k (1..PLX_WBINS-2) is 2^(k-1) .. 2^k us, the
 * last bin 2^(PLX_WBINS-2) us (1.05 s) and more. */
#define PLX_WBINS 22

/* The bounded table of contended addresses: open addressing, keyed by
 * address, probed linearly from a hash for PLX_PROBES slots; a park on an
 * address that finds neither its slot nor a free one counts in the
 * overflow fields of the header. */
#define PLX_NSLOTS 256
#define PLX_PROBES 32
#define PLX_PATHLEN 256
/* Room for the lines of /proc/self/maps saved at exit (plx_shm.maps). */
#define PLX_MAPSLEN ((size_t)64 * 1024)

/* The bounded table of sampled stacks, keyed by a hash of the address,
 * its kind and the frames, probed linearly for PLX_STACK_PROBES; a
 * sample that finds no entry counts in stacks_dropped. */
#define PLX_NSTACKS 512
#define PLX_STACK_PROBES 16
#define PLX_DEPTH 16

/* The bounded table of threads (plx_thread): a thread that finds every
 * entry taken is not listed, and counts in threads_unlisted.  Each entry
 * has room for PLX_HELD locks held (checked mode). */
#define PLX_NTHREADS 1024
#define PLX_HELD 8

enum plx_state {
	PLX_RUNNING = 1, /* the process exports */
	PLX_EXITED = 2,  /* it ran its exit handlers (a kept object) */
};

struct plx_header {
	uint64_t magic;      /* PLX_MAGIC, stored last (release) */
	uint32_t version;    /* PLX_VERSION */
	uint32_t shm_size;   /* sizeof(struct plx_shm) */
	uint64_t total_size; /* PLX_SIZE */
	int64_t pid;
	uint8_t at_random[16];      /* AT_RANDOM: tells exec images apart */
	uint32_t state;             /* enum plx_state */
	uint32_t keep;              /* 1: left at exit for parkstat to remove */
	uint64_t start_ns;          /* CLOCK_MONOTONIC when the export began */
	uint64_t start_realtime_ns; /* CLOCK_REALTIME, the same moment */
	/* The resets count (PLX_RESETS_OFF) that the histograms, the slots'
	 * figures and the overflow and peak fields below follow.  A reset
	 * changes the count; the library clears those figures when it next
	 * sees the change, and until then they read as 0 (plx_tables_current
	 * says which). */
	uint64_t tables_resets;
	uint64_t end_ns; /* CLOCK_MONOTONIC at exit, 0 before */
	/* The counters page, for readers to check against the macros. */
	uint32_t counters_off, nstripes, stripe_size, ncounters, maxq_off;
	uint32_t qbins, wbins, nslots;
	/* The table (refreshed when a thread gets or drops its record). */
	uint64_t buckets;       /* buckets in the current table */
	uint64_t threads_live;  /* threads holding a per-thread record */
	uint64_t threads_peak;  /* the most at once, since the export began */
	uint64_t threads_total; /* records created since the export began */
	uint64_t retired_bytes; /* memory held by retired tables */
	/* The tuning in force (refreshed at each park). */
	uint32_t spin_limit, yield_limit, fair_interval_us, pause_per_spin;
	/* Parks and waits on addresses the table had no room for. */
	uint64_t overflow_parks, overflow_waits, overflow_wait_ns;
	uint64_t overflow_requeued;
	uint64_t slots_used; /* slots claimed */
	/* The stacks: 1 park in sample_every of each thread is sampled (0:
	 * none); the entries claimed, and the samples that found none. */
	uint32_t sample_every, nstacks, depth, pad0;
	uint64_t stacks_used, stacks_dropped;
	/* The threads: PLX_NTHREADS entries of PLX_HELD locks held each;
	 * the entries claimed now, and the threads that found none free
	 * (each counted once per start of the export). */
	uint32_t nthreads, nheld;
	uint64_t threads_listed, threads_unlisted;
	char command[PLX_PATHLEN]; /* /proc/self/cmdline, spaces for NULs */
	/* Bytes of maps[] written at exit, stored (release) before state
	 * becomes PLX_EXITED; 0 before, or if none was saved. */
	uint32_t maps_len;
	uint32_t pad;
};

/* Histograms, striped like the counters (by CPU) and summed on read. */
struct plx_hist {
	uint64_t queue[PLX_QBINS];
	uint64_t wait[PLX_WBINS];
} __attribute__((aligned(128)));

/* A contended address: figures only.  Nothing in the object names it;
 * parkstat names it from the maps of the process and the symbol tables
 * of the mapped files (never the library: naming takes the dynamic
 * loader's lock, which no lock operation may wait for). */
struct plx_slot {
	uint64_t addr; /* 0: free; claimed once with a CAS */
	uint64_t
	    contended;    /* lock calls that found it taken (spun or parked) */
	uint64_t taken;   /* times it was locked since it has a slot (the
	                     drop-in's locks only; kind.h, pl__taken) */
	uint64_t parks;   /* threads parked on it */
	uint64_t waits;   /* threads that left its queue, woken or not */
	uint64_t wait_ns; /* the time those spent queued */
	uint64_t requeued_in; /* threads requeued onto it */
	int64_t queued_now;   /* threads in its queue now (see export.c) */
	uint64_t max_queue;   /* longest queue seen at a park or requeue */
	uint32_t kind;        /* enum pli_kind (kind.h) of the last park */
	uint32_t pad;
} __attribute__((aligned(128)));

/*
 * A call stack that parked on a lock: the return addresses of the
 * parking thread, innermost first, from the sampled park (the library's
 * own frames included: parkstat leaves them out), with the figures of
 * the sampled parks that had this stack, address and kind.  The entry is
 * claimed with a CAS on key, then addr, kind and pcs are written, then
 * depth (release): a reader takes an entry whose depth is 0 as not yet
 * there.
 */
struct plx_stack {
	uint64_t key;     /* 0: free; never 0 once claimed */
	uint64_t addr;    /* the lock parked on (at the start of the park) */
	uint32_t kind;    /* enum pli_kind */
	uint32_t depth;   /* frames in pcs */
	uint64_t parks;   /* sampled parks that ended (woken or timed out) */
	uint64_t wait_ns; /* the time those spent queued */
	uint64_t max_ns;  /* the longest of them */
	uint64_t pcs[PLX_DEPTH];
} __attribute__((aligned(64)));

/*
 * A thread, and what it is parked on now.  The thread claims a free entry
 * (tid 0) with a CAS of its tid when it gets its record of the parking
 * lot (or at its first park after the export began, if it had one
 * before), and gives it back when it ends: it clears the entry, then
 * stores tid 0 (release).  Only that thread writes the rest, as a
 * seqlock: seq odd, then the fields, each a release store (so that no
 * reader sees one before seq is odd), then seq even (release).
 * At each park, once queued, it writes addr, kind and start_ns; as the
 * park ends (woken, timed out, cancelled) it writes addr 0.  So a thread
 * shows as parked from just after it is queued until it runs again, and
 * a thread woken but not yet scheduled still shows.  A requeue moves a
 * thread without its knowing: its entry keeps the address it parked on
 * (a condition variable's, where the broadcast moved it to the mutex).
 * A reader (plx_thread_read) loads tid, seq and the fields, each with
 * acquire, then seq and tid again, and keeps the copy only if neither
 * changed and seq is even.  No fences: ThreadSanitizer has no model of
 * them.
 *
 * held[] and nheld are written by the deadlock detector (checked mode),
 * under the same seqlock; 0 here: the locks the thread holds, each with
 * the return address of the call that took it, nheld counting them all
 * and held[] the first PLX_HELD.
 */
struct plx_held {
	uint64_t addr; /* the lock */
	uint64_t pc;   /* the return address of the call that took it */
};

struct plx_thread {
	uint64_t tid;      /* 0: free; the thread's id (gettid) once claimed */
	uint64_t seq;      /* odd while its thread writes the fields below */
	uint64_t addr;     /* parked on (0: not parked) */
	uint64_t start_ns; /* CLOCK_MONOTONIC when the park began */
	uint32_t kind;     /* enum pli_kind (kind.h) of the park */
	uint32_t nheld;    /* checked mode: locks held (0 here) */
	struct plx_held held[PLX_HELD]; /* checked mode (0 here) */
} __attribute__((aligned(64)));

struct plx_shm {
	struct plx_header h;
	struct plx_hist hist[PLX_NSTRIPES];
	struct plx_slot slots[PLX_NSLOTS];
	struct plx_stack stacks[PLX_NSTACKS];
	struct plx_thread threads[PLX_NTHREADS];
	/* Written once, at normal exit (h.maps_len bytes, not NUL-ended):
	 * the lines of /proc/self/maps of the files that hold a claimed
	 * address, and the anonymous mappings right after them (their
	 * .bss), and of the files that hold a frame of a sampled stack, in
	 * the kernel's format, so that parkstat can name the addresses of a
	 * process that is gone. */
	char maps[PLX_MAPSLEN];
};

_Static_assert(sizeof(struct plx_shm) <= PLX_COUNTERS_OFF,
    "struct plx_shm overlaps the counters page");
_Static_assert(sizeof(struct plx_slot) == 128, "plx_slot layout");
_Static_assert(sizeof(struct plx_stack) == 192, "plx_stack layout");
_Static_assert(sizeof(struct plx_thread) == 192, "plx_thread layout");

/* A clock's time in ns (CLOCK_MONOTONIC for the header's times). */
static inline uint64_t
plx_clock_ns(clockid_t clock)
{
	struct timespec ts;
	clock_gettime(clock, &ts);
	return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

/* The counters page of the object s, as an array of words. */
static inline const uint64_t *
plx_counters_page(const struct plx_shm *s)
{
	return (const uint64_t *)(const void *)((const unsigned char *)s +
	    PLX_COUNTERS_OFF);
}

static inline uint64_t
plx_counter_word(const struct plx_shm *s, size_t off)
{
	return __atomic_load_n(
	    &plx_counters_page(s)[off / 8], __ATOMIC_ACQUIRE);
}

/* Whether the tables of s follow the last reset (else read them as 0). */
static inline bool
plx_tables_current(const struct plx_shm *s)
{
	return __atomic_load_n(&s->h.tables_resets, __ATOMIC_ACQUIRE) ==
	    plx_counter_word(s, PLX_RESETS_OFF);
}

/* A consistent copy of the thread entry e in out (see plx_thread):
 * false if e is free, or if its thread kept rewriting it meanwhile
 * (tries times).  out->addr 0: the thread is not parked. */
static inline bool
plx_thread_read(const struct plx_thread *e, struct plx_thread *out, int tries)
{
	for (int t = 0; t < tries; t++) {
		uint64_t tid = __atomic_load_n(&e->tid, __ATOMIC_ACQUIRE);
		if (tid == 0)
			return false;
		uint64_t seq = __atomic_load_n(&e->seq, __ATOMIC_ACQUIRE);
		if (seq & 1)
			continue;
		/* Acquire loads, so that the second load of seq cannot
		 * come before them. */
		out->addr = __atomic_load_n(&e->addr, __ATOMIC_ACQUIRE);
		out->start_ns = __atomic_load_n(&e->start_ns, __ATOMIC_ACQUIRE);
		out->kind = __atomic_load_n(&e->kind, __ATOMIC_ACQUIRE);
		out->nheld = __atomic_load_n(&e->nheld, __ATOMIC_ACQUIRE);
		for (size_t i = 0; i < PLX_HELD; i++) {
			out->held[i].addr =
			    __atomic_load_n(&e->held[i].addr, __ATOMIC_ACQUIRE);
			out->held[i].pc =
			    __atomic_load_n(&e->held[i].pc, __ATOMIC_ACQUIRE);
		}
		if (__atomic_load_n(&e->seq, __ATOMIC_RELAXED) == seq &&
		    __atomic_load_n(&e->tid, __ATOMIC_RELAXED) == tid) {
			out->tid = tid;
			out->seq = seq;
			return true;
		}
	}
	return false;
}

/* Of a maps line: its range, whether it is a file's own (private)
 * mapping, as ELF segments are, and its path ("" for anonymous memory;
 * "[heap]" and the like).  Shared by the library, which saves the maps
 * at exit, and parkstat, which reads them. */
static inline const char *
plx_maps_parse(const char *line, uint64_t *start, uint64_t *end, bool *private)
{
	char *p;
	*start = strtoull(line, &p, 16);
	*end = *p == '-' ? strtoull(p + 1, &p, 16) : 0;
	while (*p == ' ')
		p++;
	*private = strlen(p) > 4 && p[3] == 'p';
	/* perms, offset, dev, inode: four fields. */
	for (int f = 0; f < 4; f++) {
		while (*p == ' ')
			p++;
		while (*p && *p != ' ')
			p++;
	}
	while (*p == ' ')
		p++;
	return p;
}

/* The library's reader of /proc/self/maps (export.c; the deadlock
 * detector's namer uses it too): a line at a time into line, cut at cap;
 * false at the end of the file. */
struct pli_maps_reader {
	int fd;
	size_t pos, len;
	char buf[4096];
};
bool pli_maps_line(struct pli_maps_reader *r, char *line, size_t cap);

#endif /* PARKINGLOT_EXPORT_H */
