/* SPDX-License-Identifier: MIT */
/*
 * Statistics: striped counters summed on read, and their memory.
 *
 * A count is added, with a relaxed atomic add, to the stripe of the CPU
 * the thread runs on (sched_getcpu, a read of the rseq area on current
 * glibc), so threads on different CPUs never write the same cache line
 * and threads on one CPU rarely race.  pl_stats_get sums the stripes;
 * pl_stats_reset zeroes them, except the gauges (PL_STATS_LIST), which go up
 * and down and must keep their balance.  Only slow paths count.
 *
 * Memory.  The counters (struct pli_counters) sit alone in a page of
 * shared anonymous memory, mapped by the first count of the process: a
 * process that never contends maps nothing, and nothing runs at load.
 * Shared, so that the page can be moved exactly while other threads keep
 * adding (pli_stats_attach, pli_stats_detach, for the live export): a
 * second view of the current backing is made first (mremap with old size
 * 0, which only shared mappings allow), the values are copied, the new
 * backing is mapped over the page in one call (after which no add can
 * reach the old one), and whatever the old backing gained between the
 * copy and the switch is added to the new one.  The counters keep their
 * address throughout.  If the page cannot be mapped, a static one serves,
 * and cannot be moved.
 *
 * Locking: counters_lock (a word lock, never a parking-lot lock)
 * orders moves, resets and fork; adds take no lock, and the first maps
 * the page (pli_counters_create).  This file calls
 * nothing of the lot or of the export: the lot tells it its table size,
 * the export moves the page and reads the resets count from it.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <stdbool.h>
#include <stddef.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include <parkinglot/stats.h>

#include "futex.h"
#include "wordlock.h"
#include "counters.h"
#include "platform.h"
#include "stats.h"

struct pli_counters *pli_counters_v;

static uint32_t counters_lock; /* a word lock (wordlock.h) */
static uint32_t create_state;  /* pli_counters_create */
static unsigned pages_mapped;  /* by pli_counters_create */
void (*pli_counters_map_hook)(void);
static struct pli_counters fallback; /* if no page can be mapped */
static bool unmovable;       /* a fork child's page had to be made private */
static size_t table_buckets; /* as the lot last reported it */

/* struct pl_stats is ABI: the list must keep making the same layout. */
_Static_assert(offsetof(struct pl_stats, wait_ns_total) == 64 &&
        offsetof(struct pl_stats, buckets) == 72 &&
        offsetof(struct pl_stats, threads_parked_now) == 80 &&
        offsetof(struct pl_stats, max_queue_len) == 88 &&
        sizeof(struct pl_stats) == 96,
    "struct pl_stats changed its layout");

#define NWORDS (sizeof(struct pli_counters) / 8)
#define MAXQ_WORD (offsetof(struct pli_counters, max_queue_len) / 8)
_Static_assert(sizeof(struct pli_counters) % 8 == 0, "whole words");

/* The first count of the process maps the page, once (create_state, a
 * once of futex.h): threads that get here together (hundreds arriving at
 * a held lock in a new process) sleep until the one that maps it has
 * published it.  Each used to map a page of its own, all but one
 * unmapping it again, two system calls each on the process's
 * address-space lock (lockbench W3: 276 of its 300 threads). */
struct pli_counters *
pli_counters_create(void)
{
	int saved_errno = errno;
	if (pli_once_claim(&create_state)) {
		/* No signal handler of this thread may count meanwhile: it
		 * would wait for itself. */
		sigset_t all, old;
		sigfillset(&all);
		pthread_sigmask(SIG_SETMASK, &all, &old);
		long ps = sysconf(_SC_PAGESIZE);
		void *p = MAP_FAILED;
		if (ps > 0 && (size_t)ps >= sizeof(struct pli_counters))
			p = mmap(NULL, (size_t)ps, PROT_READ | PROT_WRITE,
			    MAP_SHARED | MAP_ANONYMOUS, -1, 0);
		struct pli_counters *c = &fallback;
		if (p != MAP_FAILED) {
			c = p;
			__atomic_add_fetch(&pages_mapped, 1, __ATOMIC_RELAXED);
			if (pli_counters_map_hook)
				pli_counters_map_hook();
		}
		__atomic_store_n(&pli_counters_v, c, __ATOMIC_RELEASE);
		pli_once_done(&create_state);
		pthread_sigmask(SIG_SETMASK, &old, NULL);
	} else {
		pli_once_wait(&create_state);
	}
	errno = saved_errno;
	return __atomic_load_n(&pli_counters_v, __ATOMIC_ACQUIRE);
}

unsigned
pli_counters_pages_mapped(void)
{
	return __atomic_load_n(&pages_mapped, __ATOMIC_RELAXED);
}

unsigned
pli_stat_stripe(void)
{
	int cpu = sched_getcpu();
	return cpu < 0 ? 0 : (unsigned)cpu % PLI_STRIPES;
}

void
pli_stat_max_queue(size_t len)
{
	uint64_t *p = &pli_counters()->max_queue_len;
	uint64_t m = __atomic_load_n(p, __ATOMIC_RELAXED);
	while (len > m &&
	    !__atomic_compare_exchange_n(
	        p, &m, len, true, __ATOMIC_RELAXED, __ATOMIC_RELAXED))
		;
}

void
pli_stats_table(size_t buckets)
{
	__atomic_store_n(&table_buckets, buckets, __ATOMIC_RELAXED);
}

void
pl_stats_get(struct pl_stats *out)
{
	uint64_t v[PLI_NSTATS] = { 0 };
	const struct pli_counters *c =
	    __atomic_load_n(&pli_counters_v, __ATOMIC_ACQUIRE);
	for (unsigned i = 0; c && i < PLI_STRIPES; i++)
		for (unsigned s = 0; s < PLI_NSTATS; s++)
			v[s] += __atomic_load_n(
			    &c->stripes[i].v[s], __ATOMIC_RELAXED);
			/* A gauge sums to its value: +1 and -1 (wrapping) per
			 * stripe. */
#define FILL(name, field, type, kind, label)                                   \
	PLI_IF_COUNTER(kind, out->field = (type)v[PLI_##name];)
	PL_STATS_LIST(FILL)
#undef FILL
	out->buckets = __atomic_load_n(&table_buckets, __ATOMIC_RELAXED);
	out->max_queue_len =
	    c ? __atomic_load_n(&c->max_queue_len, __ATOMIC_RELAXED) : 0;
}

/* Zero what a reset zeroes; count the reset (counters_lock held). */
static void
reset(struct pli_counters *c)
{
#define GAUGE(name, field, type, kind, label)                                  \
	PLI_IF_COUNTER(kind, [PLI_##name] = PLI_GAUGE(kind), )
	static const bool is_gauge[PLI_NSTATS] = { PL_STATS_LIST(GAUGE) };
#undef GAUGE
	for (unsigned i = 0; i < PLI_STRIPES; i++)
		for (unsigned s = 0; s < PLI_NSTATS; s++)
			if (!is_gauge[s])
				__atomic_store_n(
				    &c->stripes[i].v[s], 0, __ATOMIC_RELAXED);
	__atomic_store_n(&c->max_queue_len, 0, __ATOMIC_RELAXED);
	__atomic_store_n(&c->reset_ns, pli_now_ns(), __ATOMIC_RELAXED);
	/* Last: whoever sees the new count sees the zeroes (the export
	 * clears its own figures when it sees it change). */
	__atomic_fetch_add(&c->resets, 1, __ATOMIC_RELEASE);
}

void
pl_stats_reset(void)
{
	int saved_errno = errno;
	pli_word_lock(&counters_lock);
	struct pli_counters *c =
	    __atomic_load_n(&pli_counters_v, __ATOMIC_ACQUIRE);
	if (c == NULL) /* nothing counted yet: record the reset all the same */
		c = pli_counters_create();
	reset(c);
	pli_word_unlock(&counters_lock);
	errno = saved_errno;
}

/* ---- moving the page -------------------------------------------------- */

/* The size of the counters' page if it can be moved, else 0. */
static size_t
page_size_of(const struct pli_counters *c)
{
	long ps = sysconf(_SC_PAGESIZE);
	return c == &fallback || unmovable || ps <= 0 ? 0 : (size_t)ps;
}

/* Map the new backing over the counters' page: the object's page (fd at
 * off), or a second view of the shared anonymous page anon. */
static int
install(void *page, size_t page_size, int fd, long off, void *anon)
{
	void *p;
	if (anon == NULL)
		p = mmap(page, page_size, PROT_READ | PROT_WRITE,
		    MAP_SHARED | MAP_FIXED, fd, (off_t)off);
	else
		p = mremap(
		    anon, 0, page_size, MREMAP_MAYMOVE | MREMAP_FIXED, page);
	return p == MAP_FAILED ? errno : 0;
}

/* Move the counters onto the backing that dst views (at another address),
 * exactly, while other threads keep adding.  counters_lock held. */
static int
move(uint64_t *dst, int fd, long off, void *anon)
{
	uint64_t *page = (uint64_t *)pli_counters();
	size_t page_size = page_size_of((struct pli_counters *)page);
	if (page_size == 0)
		return ENOTSUP;
	uint64_t snap[NWORDS];
	/* A second view of the current (shared) backing. */
	uint64_t *old = mremap(page, 0, page_size, MREMAP_MAYMOVE);
	if (old == MAP_FAILED)
		return errno;
	for (size_t i = 0; i < NWORDS; i++) {
		snap[i] = __atomic_load_n(&old[i], __ATOMIC_RELAXED);
		__atomic_store_n(&dst[i], snap[i], __ATOMIC_RELAXED);
	}
	int err = install(page, page_size, fd, off, anon);
	if (err) {
		/* A failed MAP_FIXED may have unmapped the page: put the
		 * old backing back, or the next count would fault. */
		if (mremap(old, 0, page_size, MREMAP_MAYMOVE | MREMAP_FIXED,
		        page) == MAP_FAILED)
			pli_fatal("libparkinglot: cannot restore the "
			          "statistics page: %s",
			    strerror(errno));
		munmap(old, page_size);
		return err;
	}
	/* From here on every add lands in the new backing; what reached the
	 * old one since the copy is added now.  Counters wrap (the gauges go
	 * down too), so a plain difference is right; max_queue_len is a
	 * maximum. */
	for (size_t i = 0; i < NWORDS; i++) {
		uint64_t v = __atomic_load_n(&old[i], __ATOMIC_RELAXED);
		if (i == MAXQ_WORD) {
			uint64_t m =
			    __atomic_load_n(&page[i], __ATOMIC_RELAXED);
			while (v > m &&
			    !__atomic_compare_exchange_n(&page[i], &m, v, true,
			        __ATOMIC_RELAXED, __ATOMIC_RELAXED))
				;
		} else if (v != snap[i]) {
			__atomic_fetch_add(
			    &page[i], v - snap[i], __ATOMIC_RELAXED);
		}
	}
	munmap(old, page_size);
	return 0;
}

int
pli_stats_attach(int fd, long off, void *view)
{
	int saved_errno = errno;
	pli_word_lock(&counters_lock);
	int err = move(view, fd, off, NULL);
	pli_word_unlock(&counters_lock);
	errno = saved_errno;
	return err;
}

int
pli_stats_detach(void)
{
	int saved_errno = errno;
	pli_word_lock(&counters_lock);
	int err = ENOTSUP;
	size_t page_size = page_size_of(pli_counters());
	if (page_size) {
		void *t = mmap(NULL, page_size, PROT_READ | PROT_WRITE,
		    MAP_SHARED | MAP_ANONYMOUS, -1, 0);
		err = t == MAP_FAILED ? errno : move(t, -1, 0, t);
		if (t != MAP_FAILED)
			munmap(t, page_size); /* the page keeps it alive */
	}
	pli_word_unlock(&counters_lock);
	errno = saved_errno;
	return err;
}

/* ---- fork ------------------------------------------------------------- */

void
pli_stats_fork_prepare(void)
{
	pli_word_lock(&counters_lock);
}

void
pli_stats_fork_parent(void)
{
	pli_word_unlock(&counters_lock);
}

/* The child shares the parent's page (shared memory is inherited as
 * such): it gets a zeroed page of its own at the same address.  Zero is
 * also the truth for the gauge of parked threads, since the lot drops the
 * other threads' waiters in the child.  Only this thread exists. */
void
pli_stats_fork_child(void)
{
	__atomic_store_n(&counters_lock, 0, __ATOMIC_RELAXED);
	struct pli_counters *c = pli_counters_v;
	/* A page being mapped by a thread of the parent has no mapper here:
	 * unless it was already published, the child maps its own at its
	 * first count (the parent's mapping, if made, stays the parent's). */
	pli_once_forked(&create_state);
	if (c == NULL)
		return;
	size_t page_size = page_size_of(c);
	if (page_size &&
	    mmap(c, page_size, PROT_READ | PROT_WRITE,
	        MAP_SHARED | MAP_ANONYMOUS | MAP_FIXED, -1, 0) == MAP_FAILED) {
		/* Keep counting in private memory; no more moves. */
		if (mmap(c, page_size, PROT_READ | PROT_WRITE,
		        MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED, -1,
		        0) == MAP_FAILED)
			pli_fatal("libparkinglot: cannot map the statistics "
			          "page: %s",
			    strerror(errno));
		unmovable = true;
	}
	memset(c, 0, sizeof *c);
}
