/* SPDX-License-Identifier: MIT */
/*
 * What the library needs of the machine and the C runtime, in one place:
 * compiler attributes, cache-line-aligned allocation (alloc-*.c), the
 * topology (topology.c), the hash of an address, the monotonic clock
 * and deadlines, the pause instruction, and the report of misuse
 * (fatal.c).  Depends on nothing else of lib/.  Names start with pli_
 * ("parking lot internal"); none is exported from the shared object
 * (-fvisibility=hidden).
 */
#ifndef PARKINGLOT_PLATFORM_H
#define PARKINGLOT_PLATFORM_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <time.h>

#define PLI_CACHELINE 64

/* The out-of-line slow paths: never inlined into a caller, laid out away
 * from the hot code. */
#define PLI_COLD __attribute__((noinline, cold))
#define PLI_NORETURN __attribute__((noreturn))

/* Debug output, compiled and type-checked, removed by the optimizer. */
static const bool pli_verbose = false;

/* alloc.c: cache-line-aligned allocations (mmap from a page up, else
 * posix_memalign).  pli_alloc_aligned returns zeroed memory or NULL;
 * pli_free_aligned takes the size it was given (p may be NULL). */
void *pli_alloc_aligned(size_t size);
void pli_free_aligned(void *p, size_t size);
/* Failure injection for tests: when set and returning true, the next
 * allocation fails. */
extern bool (*pli_alloc_fail_hook)(size_t size);

/* topology.c: what this process may run on. */
struct pli_topology {
	unsigned pus;          /* processing units in the affinity mask */
	unsigned cores;        /* cores those PUs belong to */
	unsigned pus_per_core; /* SMT width (1 without SMT or when unknown) */
	const char *source;    /* "sysfs", or "affinity" (SMT unknown) */
};
void pli_topology_get(struct pli_topology *t);

/* A Fibonacci hash of an address into a table of 2^(64 - shift) slots:
 * the top bits of its product with 2^64 / phi.  The parking lot's
 * buckets (parkinglot.c) and the spinners' history (spin.c). */
static inline size_t
pli_hash_addr(const void *addr, unsigned shift)
{
	return (size_t)(((uint64_t)(uintptr_t)addr * 0x9E3779B97F4A7C15ull) >>
	    shift);
}

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

/* The clocks a deadline may be on: those of pthread_condattr_setclock. */
static inline bool
pli_clock_valid(clockid_t clock)
{
	return clock == CLOCK_MONOTONIC || clock == CLOCK_REALTIME;
}

/* Whether a valid, non-NULL deadline on clock (pli_clock_valid) has
 * already passed: one clock read,
 * for the timed calls that then try once and return ETIMEDOUT at once.
 * Timespecs are compared as such: a far deadline's nanoseconds would
 * overflow. */
static inline bool
pli_deadline_passed(clockid_t clock, const struct timespec *ts)
{
	struct timespec now;
	clock_gettime(clock, &now);
	return ts->tv_sec < now.tv_sec ||
	    (ts->tv_sec == now.tv_sec && ts->tv_nsec <= now.tv_nsec);
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

#endif /* PARKINGLOT_PLATFORM_H */
