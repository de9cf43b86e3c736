/* SPDX-License-Identifier: MIT */
/*
 * Internal interfaces shared by the files of lib/ and by the tests that
 * link the convenience library.  Never installed.  Names start with pli_
 * ("parking lot internal"); none of them is exported from the shared
 * object (the library is built with -fvisibility=hidden).
 */
#ifndef PARKINGLOT_INTERNAL_H
#define PARKINGLOT_INTERNAL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <time.h>

#include <parkinglot/tuning.h>

#define PLI_CACHELINE 64

#define PLI_COLD __attribute__((noinline, cold))
#define PLI_NORETURN __attribute__((noreturn))

/* Debug output, compiled and type-checked, removed by the optimizer. */
static const bool pli_verbose = false;

/* alloc-*.c: cache-line-aligned allocations (jemalloc or posix_memalign).
 * pli_alloc_aligned returns zeroed memory or NULL. */
void *pli_alloc_aligned(size_t size);
void pli_free_aligned(void *p);
/* Failure injection for tests: when set and returning true, the next
 * allocation fails. */
extern bool (*pli_alloc_fail_hook)(size_t size);

/* topology-*.c: what this process may run on. */
struct pli_topology {
	unsigned pus;          /* processing units in the affinity mask */
	unsigned cores;        /* cores those PUs belong to */
	unsigned pus_per_core; /* SMT width (1 without SMT or when unknown) */
	const char *source;    /* "hwloc" or "sysconf" */
};
void pli_topology_get(struct pli_topology *t);
/* The portable part: PUs from the affinity mask, SMT unknown. */
void pli_topology_from_affinity(struct pli_topology *t);

/* tuning.c: the tuning in force; initialised on first use. */
struct pli_tuning {
	struct pl_tuning pub;
	unsigned pause_per_spin; /* pause instructions per spin iteration */
};
const struct pli_tuning *pli_tuning(void);

/* Clock and deadlines. */
static inline uint64_t
pli_now_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

static inline bool
pli_deadline_valid(const struct timespec *ts)
{
	return ts == NULL ||
	    (ts->tv_sec >= 0 && ts->tv_nsec >= 0 && ts->tv_nsec < 1000000000L);
}

static inline void
pli_cpu_relax(void)
{
#if defined(__x86_64__) || defined(__i386__)
	__builtin_ia32_pause();
#elif defined(__aarch64__)
	__asm__ __volatile__("yield" ::: "memory");
#else
	__asm__ __volatile__("" ::: "memory");
#endif
}

/* Misuse: one line on stderr, then abort. */
PLI_NORETURN PLI_COLD void pli_fatal(const char *fmt, ...)
    __attribute__((format(printf, 1, 2)));

/* parkinglot.c introspection, for tests and statistics. */
size_t pli_lot_live_threads(void); /* threads holding a per-thread record */
size_t pli_lot_buckets(void);      /* buckets in the current table */
size_t pli_lot_retired_bytes(void); /* memory held by retired tables */
/* Index of addr's bucket in the current table (tests use it to find
 * colliding addresses). */
size_t pli_lot_bucket_of(const void *addr);

#endif /* PARKINGLOT_INTERNAL_H */
