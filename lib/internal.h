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
#include <sched.h>
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
	unsigned poll_ns;        /* wait of a spin round (PARKINGLOT_POLL_NS) */
	unsigned pause_per_spin; /* pause instructions making up that wait */
	unsigned pause_ns;       /* measured cost of one */
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

/* Whether a valid, non-NULL deadline has already passed: one clock read,
 * for the timed calls that then try once and return ETIMEDOUT at once.
 * Timespecs are compared as such: a far deadline's nanoseconds would
 * overflow. */
static inline bool
pli_deadline_passed(const struct timespec *ts)
{
	struct timespec now;
	clock_gettime(CLOCK_MONOTONIC, &now);
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

/* stats.c: striped counters (see there). */
enum pli_stat {
	PLI_PARKS,
	PLI_UNPARKS,
	PLI_TIMEOUTS,
	PLI_INVALID_PARKS,
	PLI_REQUEUES,
	PLI_FAIR_HANDOFFS,
	PLI_SPIN_ACQUIRES,
	PLI_SPIN_FAILURES,
	PLI_WAIT_NS,
	PLI_PARKED_NOW, /* a gauge: enqueues minus dequeues */
	PLI_NSTATS
};
#define PLI_STRIPES 16
struct pli_stripe {
	uint64_t v[PLI_NSTATS];
} __attribute__((aligned(2 * PLI_CACHELINE)));
extern struct pli_stripe pli_stripes[PLI_STRIPES];
unsigned pli_stat_stripe(void);
void pli_stat_max_queue(size_t len);

static inline void
pli_stat_add(enum pli_stat s, uint64_t n)
{
	__atomic_fetch_add(
	    &pli_stripes[pli_stat_stripe()].v[s], n, __ATOMIC_RELAXED);
}

/*
 * Live export of the statistics (PARKINGLOT_STATS=1, see stats.c): when
 * on, the lot reports each park (address, queue length after it) and each
 * dequeue (address, time spent queued).  Off, each costs one predictable
 * branch in a slow path.
 */
extern bool pli_export_on;
void pli_export_park(const void *addr, size_t len);
void pli_export_wait(const void *addr, uint64_t waited_ns);

static inline void
pli_event_park(const void *addr, size_t len)
{
	if (__builtin_expect(
	        __atomic_load_n(&pli_export_on, __ATOMIC_RELAXED), 0))
		pli_export_park(addr, len);
}

static inline void
pli_event_wait(const void *addr, uint64_t waited_ns)
{
	if (__builtin_expect(
	        __atomic_load_n(&pli_export_on, __ATOMIC_RELAXED), 0))
		pli_export_wait(addr, waited_ns);
}

/*
 * The spin phase of every lock's slow path.  Each round waits about
 * poll_ns (pause_per_spin pause instructions, see tuning.c) and then looks
 * at the lock again: spin_limit such rounds, then yield_limit rounds that
 * call sched_yield before the same wait, so that a thread preempted on
 * this CPU (the holder, or anyone else) can run meanwhile; then park.
 *
 * A yield that finds another runnable thread may not come back for a
 * whole time slice (milliseconds), and twenty of them would keep a waiter
 * out of the queue, and out of the fairness hand-off, for that long.  So
 * the yield rounds also end, and the thread parks, once they have taken
 * twice their nominal time (2 x yield_limit x poll_ns from the first).
 *
 * Callers spin only while nobody is parked on the lock (with a queue, the
 * lock goes to a woken waiter, and spinning only burns a core), and start
 * over after each wake-up.  The spinner also keeps the statistics: a
 * slow-path acquisition won without parking, and the first park of a
 * slow path.
 */
struct pli_spinner {
	unsigned spins, yields;
	unsigned spin_limit, yield_limit, pauses, poll_ns;
	uint64_t yield_end; /* when the yield rounds must stop */
	bool parked;
};

static inline void
pli_spinner_init(struct pli_spinner *sp)
{
	const struct pli_tuning *t = pli_tuning();
	sp->spins = sp->yields = 0;
	sp->spin_limit = __atomic_load_n(&t->pub.spin_limit, __ATOMIC_RELAXED);
	sp->yield_limit =
	    __atomic_load_n(&t->pub.yield_limit, __ATOMIC_RELAXED);
	sp->pauses = t->pause_per_spin;
	sp->poll_ns = t->poll_ns;
	sp->yield_end = 0;
	sp->parked = false;
}

/* Start a round: false when it is time to park. */
static inline bool
pli_spin_begin(struct pli_spinner *sp)
{
	if (sp->spins < sp->spin_limit)
		sp->spins++;
	else if (sp->yields < sp->yield_limit) {
		uint64_t now = pli_now_ns();
		if (sp->yields++ == 0)
			sp->yield_end =
			    now + 2 * (uint64_t)sp->yield_limit * sp->poll_ns;
		else if (now > sp->yield_end)
			return false;
		sched_yield();
	} else
		return false;
	return true;
}

/* One round of waiting; false when it is time to park. */
static inline bool
pli_spin(struct pli_spinner *sp)
{
	if (!pli_spin_begin(sp))
		return false;
	for (unsigned i = 0; i < sp->pauses; i++)
		pli_cpu_relax();
	return true;
}

/*
 * A round that also watches *word, every PLI_WATCH_PAUSES pauses, and
 * ends early once it no longer holds old: for a waiter that knows the
 * lock is about to change hands (the rwlock's phase claims), where
 * noticing late leaves the lock idle.  Watching costs the holder its
 * cache line more often, so plain spinning never does it.
 */
#define PLI_WATCH_PAUSES 8u
static inline bool
pli_spin_watch(struct pli_spinner *sp, const uintptr_t *word, uintptr_t old)
{
	if (!pli_spin_begin(sp))
		return false;
	for (unsigned i = 1; i <= sp->pauses; i++) {
		pli_cpu_relax();
		if (i % PLI_WATCH_PAUSES == 0 &&
		    __atomic_load_n(word, __ATOMIC_RELAXED) != old)
			break;
	}
	return true;
}

/* Skip what is left of the pause rounds: the rounds that yield come next. */
static inline void
pli_spinner_hurry(struct pli_spinner *sp)
{
	if (sp->spins < sp->spin_limit)
		sp->spins = sp->spin_limit;
}

/* About to park (again): count the first, and spin afresh once woken. */
static inline void
pli_spinner_park(struct pli_spinner *sp)
{
	if (!sp->parked) {
		sp->parked = true;
		pli_stat_add(PLI_SPIN_FAILURES, 1);
	}
	sp->spins = sp->yields = 0;
}

static inline void
pli_spinner_acquired(const struct pli_spinner *sp)
{
	if (!sp->parked)
		pli_stat_add(PLI_SPIN_ACQUIRES, 1);
}

/* parkinglot.c introspection, for tests and statistics. */
size_t pli_lot_live_threads(void);  /* threads holding a per-thread record */
size_t pli_lot_buckets(void);       /* buckets in the current table */
size_t pli_lot_retired_bytes(void); /* memory held by retired tables */
size_t pli_lot_spare_records(void); /* records not in use, kept */
size_t pli_lot_records(void);       /* records allocated */
#define PLI_RECORD_BLOCK 32         /* records allocated at a time */
/* Index of addr's bucket in the current table (tests use it to find
 * colliding addresses). */
size_t pli_lot_bucket_of(const void *addr);

#endif /* PARKINGLOT_INTERNAL_H */
