/* SPDX-License-Identifier: MIT */
/*
 * Live export of the statistics to a shared-memory object that
 * tools/parkstat maps read-only (layout, name and lifetime: export.h).
 *
 * The export observes; it owns no counter.  The library's striped
 * counters are stats.c's, in a page of their own: to start, the export
 * asks stats.c to put the object's counters page under them
 * (pli_stats_attach), and to stop, fresh anonymous memory
 * (pli_stats_detach), each move exact while other threads keep adding
 * (see stats.c).  So parkstat reads the words pl_stats_get sums, and both
 * agree whenever the export is switched.  The export is the lot's
 * observer (events.h): it sets pli_observer when the object is complete
 * and clears it when it stops.  A pl_stats_reset is stats.c's alone: it
 * counts the reset in the counters page, and the first hook that sees the
 * count change clears the tables here (follow_resets).
 *
 * The rest of the object: histograms striped by CPU like the counters, a
 * bounded table of the most contended addresses (open addressing, claimed
 * with a CAS, counts added with relaxed atomics), the table and tuning in
 * force.  export_park and export_requeue run with no bucket lock held,
 * export_wait with one; all three run inside a lock operation,
 * where the caller may hold locks of its own (a condition wait parks
 * holding the user's mutex until it is queued; a thread blocked on one
 * mutex may hold others).  So the hooks record the address and counts,
 * and nothing else: no naming.  dladdr, or anything else that takes the
 * dynamic loader's lock, would deadlock against a dlopen whose
 * constructor takes a lock the parking thread holds.  parkstat names the
 * addresses itself, from /proc/PID/maps and the symbol tables of the
 * mapped files; for a process that has exited, whose maps are gone, the
 * exit handler saves the lines of /proc/self/maps it needs into the
 * object first (save_maps: plain reads, at a point where no lock of the
 * user and none of the parking lot is held).
 *
 * The table of threads (export.h, plx_thread): each thread claims an
 * entry at its first hook of an export (thread created, or its first park
 * since the export began) and gives it back at its exit; only it writes
 * its entry, so the park hook sets the parked address and the resume hook
 * clears it (the wait hook cannot: for a thread woken, it runs in the
 * waker).  The entry is remembered per thread with the generation of the
 * export it belongs to (export_gen), so that after a stop and a new start,
 * or in a forked child, the thread claims one afresh in the new object.
 *
 * Per-address queued_now is +1 at each park, -n/+n at each requeue, -1
 * when a thread leaves the queue; for threads that were already parked
 * when the export began it is only approximate (it can go below zero;
 * parkstat shows 0 then).
 *
 * Locking: export_lock (a word lock, never a parking-lot lock) orders
 * starting, stopping, fork and exit.  The hooks take no lock:
 * they run only while pli_observer names them, which is set after the object
 * is complete; the region they write (shm) stays mapped for the life of
 * the process, so a hook still running after a stop writes harmlessly to
 * the private memory that then replaces the object.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/auxv.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>
#include <unwind.h>

#include <parkinglot/stats.h>

#include "wordlock.h"
#include "events.h"
#include "export.h"
#include "lot.h"
#include "platform.h"
#include "stats.h"
#include "tuning.h"

/* The counters page that the object holds is the library's (stats.h). */
_Static_assert(PLI_STRIPES == PLX_NSTRIPES, "stripes");
_Static_assert(sizeof(struct pli_stripe) == PLX_STRIPE_SIZE, "stripe size");
_Static_assert((int)PLI_NSTATS == (int)PLX_NCOUNTERS, "counters");
_Static_assert(offsetof(struct pli_counters, max_queue_len) == PLX_MAXQ_OFF,
    "max_queue_len");
_Static_assert(
    offsetof(struct pli_counters, resets) == PLX_RESETS_OFF, "resets");
_Static_assert(
    offsetof(struct pli_counters, reset_ns) == PLX_RESET_NS_OFF, "reset_ns");
_Static_assert(sizeof(struct pli_counters) >= PLX_COUNTERS_BYTES &&
        sizeof(struct pli_counters) <= PLX_COUNTERS_MAX,
    "size");

static bool exporting; /* guarded by export_lock; hooks see pli_observer */

static uint32_t export_lock; /* a word lock (wordlock.h) */
static struct plx_shm *shm;  /* the region the object is mapped at */
static bool atfork_registered;
static bool exit_registered;
static bool keep_object; /* PARKINGLOT_STATS_KEEP names this pid */
static pid_t shm_pid;    /* the process that created the object */
static char shm_name[32];
static uint32_t sample_every; /* PLX_ENV_SAMPLE, read at each start */
/* Which start of the export the object is of: one more at each start
 * (export_lock held); hooks read it relaxed, after the observer pointer
 * (acquire) that the start stores after it. */
static uint32_t export_gen;

/* ---- small helpers ---------------------------------------------------- */

static inline void
add64(uint64_t *p, uint64_t n)
{
	__atomic_fetch_add(p, n, __ATOMIC_RELAXED);
}

static inline void
max64(uint64_t *p, uint64_t v)
{
	uint64_t m = __atomic_load_n(p, __ATOMIC_RELAXED);
	while (v > m &&
	    !__atomic_compare_exchange_n(
	        p, &m, v, true, __ATOMIC_RELAXED, __ATOMIC_RELAXED))
		;
}

/* Store only when different: the tuning and the table rarely change, and
 * parks must not keep dirtying a line every reader shares. */
static inline void
set64(uint64_t *p, uint64_t v)
{
	if (__atomic_load_n(p, __ATOMIC_RELAXED) != v)
		__atomic_store_n(p, v, __ATOMIC_RELAXED);
}

static inline void
set32(uint32_t *p, uint32_t v)
{
	if (__atomic_load_n(p, __ATOMIC_RELAXED) != v)
		__atomic_store_n(p, v, __ATOMIC_RELAXED);
}

static unsigned
qbin(size_t len)
{
	unsigned k = len ? 63 - (unsigned)__builtin_clzll(len) : 0;
	return k < PLX_QBINS - 1 ? k : PLX_QBINS - 1;
}

static unsigned
wbin(uint64_t ns)
{
	uint64_t us = ns / 1000;
	unsigned k = us ? 64 - (unsigned)__builtin_clzll(us) : 0;
	return k < PLX_WBINS - 1 ? k : PLX_WBINS - 1;
}

static struct plx_shm *
cur_shm(void)
{
	return __atomic_load_n(&shm, __ATOMIC_ACQUIRE);
}

/* ---- the table and the tuning ----------------------------------------- */

static void
refresh_table(struct plx_shm *s)
{
	uint64_t live = pli_lot_live_threads();
	set64(&s->h.buckets, pli_lot_buckets());
	set64(&s->h.threads_live, live);
	max64(&s->h.threads_peak, live);
	set64(&s->h.retired_bytes, pli_lot_retired_bytes());
}

static void
refresh_tuning(struct plx_shm *s)
{
	const struct pli_tuning *t = pli_tuning();
	set32(&s->h.spin_limit,
	    __atomic_load_n(&t->pub.spin_limit, __ATOMIC_RELAXED));
	set32(&s->h.yield_limit,
	    __atomic_load_n(&t->pub.yield_limit, __ATOMIC_RELAXED));
	set32(&s->h.fair_interval_us,
	    __atomic_load_n(&t->pub.fair_interval_us, __ATOMIC_RELAXED));
	set32(&s->h.pause_per_spin,
	    __atomic_load_n(&t->pause_per_spin, __ATOMIC_RELAXED));
}

/* ---- contended addresses ---------------------------------------------- */

/* The slot of addr; with claim, a free one is taken for it.  NULL when
 * the PLX_PROBES slots from its hash are all taken by other addresses. */
static struct plx_slot *
slot_of(struct plx_shm *s, const void *addr, bool claim)
{
	uint64_t a = (uintptr_t)addr;
	size_t i = (size_t)((a * 0x9E3779B97F4A7C15ull) >> 56) % PLX_NSLOTS;
	for (unsigned p = 0; p < PLX_PROBES; p++) {
		struct plx_slot *sl = &s->slots[i];
		uint64_t cur = __atomic_load_n(&sl->addr, __ATOMIC_ACQUIRE);
		if (cur == a)
			return sl;
		if (cur == 0) {
			if (!claim)
				return NULL;
			if (__atomic_compare_exchange_n(&sl->addr, &cur, a,
			        false, __ATOMIC_ACQ_REL, __ATOMIC_ACQUIRE)) {
				add64(&s->h.slots_used, 1);
				return sl;
			}
			if (cur == a) /* another thread claimed it for addr */
				return sl;
		}
		i = (i + 1) % PLX_NSLOTS;
	}
	return NULL;
}

/* ---- following the resets -------------------------------------------- */

/*
 * The tables follow the last pl_stats_reset (export.h, tables_resets).
 * The statistics own the resets count, in the counters page, and never
 * call this file: when a hook finds that the count has moved on, it
 * clears the histograms, the slots' figures (a slot keeps its address
 * and its queue), the overflow fields and the peak, and only then says
 * which reset the tables now follow, so that a reader sees the old
 * figures as 0 meanwhile.  Hooks that run at the same moment may clear
 * them too, or add a count that the clearing loses: the tables are
 * approximate as they are.
 */
static void
follow_resets(struct plx_shm *s)
{
	uint64_t want = plx_counter_word(s, PLX_RESETS_OFF);
	if (__builtin_expect(
	        __atomic_load_n(&s->h.tables_resets, __ATOMIC_RELAXED) == want,
	        1))
		return;
	for (size_t i = 0; i < PLX_NSTRIPES; i++) {
		for (size_t b = 0; b < PLX_QBINS; b++)
			__atomic_store_n(
			    &s->hist[i].queue[b], 0, __ATOMIC_RELAXED);
		for (size_t b = 0; b < PLX_WBINS; b++)
			__atomic_store_n(
			    &s->hist[i].wait[b], 0, __ATOMIC_RELAXED);
	}
	for (size_t i = 0; i < PLX_NSLOTS; i++) {
		struct plx_slot *sl = &s->slots[i];
		__atomic_store_n(&sl->contended, 0, __ATOMIC_RELAXED);
		__atomic_store_n(&sl->taken, 0, __ATOMIC_RELAXED);
		__atomic_store_n(&sl->parks, 0, __ATOMIC_RELAXED);
		__atomic_store_n(&sl->waits, 0, __ATOMIC_RELAXED);
		__atomic_store_n(&sl->wait_ns, 0, __ATOMIC_RELAXED);
		__atomic_store_n(&sl->requeued_in, 0, __ATOMIC_RELAXED);
		__atomic_store_n(&sl->max_queue, 0, __ATOMIC_RELAXED);
	}
	for (size_t i = 0; i < PLX_NSTACKS; i++) {
		struct plx_stack *st = &s->stacks[i];
		__atomic_store_n(&st->parks, 0, __ATOMIC_RELAXED);
		__atomic_store_n(&st->wait_ns, 0, __ATOMIC_RELAXED);
		__atomic_store_n(&st->max_ns, 0, __ATOMIC_RELAXED);
	}
	__atomic_store_n(&s->h.stacks_dropped, 0, __ATOMIC_RELAXED);
	__atomic_store_n(&s->h.overflow_parks, 0, __ATOMIC_RELAXED);
	__atomic_store_n(&s->h.overflow_waits, 0, __ATOMIC_RELAXED);
	__atomic_store_n(&s->h.overflow_wait_ns, 0, __ATOMIC_RELAXED);
	__atomic_store_n(&s->h.overflow_requeued, 0, __ATOMIC_RELAXED);
	__atomic_store_n(&s->h.threads_peak,
	    __atomic_load_n(&s->h.threads_live, __ATOMIC_RELAXED),
	    __ATOMIC_RELAXED);
	__atomic_store_n(&s->h.tables_resets, want, __ATOMIC_RELEASE);
}

/* ---- sampled stacks -------------------------------------------------- */

/*
 * One park in sample_every of each thread records the thread's stack
 * before it is queued (the sample hook: no lock of the lot held).  Each
 * thread starts at a phase of its own, drawn at its first park, so that
 * every park has the same chance.  With the phase at 0 for all, as it
 * was, the first park of every thread was sampled: that overweights the
 * sites of first parks, and a program that starts many threads, each
 * parking a few times, unwound at nearly every park (lockbench W3, 300
 * threads that park once: 11 to 13 us of CPU a thread, doc/BENCHMARKS.md,
 * "W3's CPU under parkstat").
 *
 * The unwinder is libgcc's, called directly: backtrace(3) would load
 * libgcc_s on its first call, under the dynamic loader's lock.  libgcc
 * finds each frame's unwind table with glibc's _dl_find_object, which
 * takes no lock; only where a program registers unwind tables of its own
 * (a JIT) does it take a mutex of libgcc's, which may come back here as a
 * nested lock operation: that one takes no sample (sampling).
 */
/* Parks until the next sample, this one included; 0: no phase drawn. */
static __thread uint32_t park_tick;
static __thread bool sampling;

struct unwind_buf {
	uint64_t *pcs;
	unsigned n;
};

static _Unwind_Reason_Code
unwind_frame(struct _Unwind_Context *ctx, void *arg)
{
	struct unwind_buf *b = arg;
	uintptr_t pc = _Unwind_GetIP(ctx);
	if (pc == 0)
		return _URC_END_OF_STACK;
	b->pcs[b->n++] = pc;
	return b->n == PLX_DEPTH ? _URC_END_OF_STACK : _URC_NO_REASON;
}

static uint64_t
stack_key(const void *addr, unsigned kind, const uint64_t *pcs, unsigned n)
{
	uint64_t h = ((uintptr_t)addr ^ kind) * 0x9E3779B97F4A7C15ull;
	for (unsigned i = 0; i < n; i++)
		h = (h ^ pcs[i]) * 0x100000001b3ull;
	return h ? h : 1;
}

/* The entry of this stack (claimed if new), or NULL if the table has no
 * room for it. */
static struct plx_stack *
stack_of(struct plx_shm *s, const void *addr, unsigned kind,
    const uint64_t *pcs, unsigned n)
{
	uint64_t key = stack_key(addr, kind, pcs, n);
	size_t i = (size_t)(key >> 32) % PLX_NSTACKS;
	for (unsigned p = 0; p < PLX_STACK_PROBES; p++) {
		struct plx_stack *st = &s->stacks[i];
		uint64_t cur = __atomic_load_n(&st->key, __ATOMIC_ACQUIRE);
		if (cur == key)
			return st;
		if (cur == 0) {
			if (__atomic_compare_exchange_n(&st->key, &cur, key,
			        false, __ATOMIC_ACQ_REL, __ATOMIC_ACQUIRE)) {
				st->addr = (uintptr_t)addr;
				st->kind = kind;
				memcpy(st->pcs, pcs, n * sizeof *pcs);
				__atomic_store_n(
				    &st->depth, n, __ATOMIC_RELEASE);
				add64(&s->h.stacks_used, 1);
				return st;
			}
			if (cur == key)
				return st;
		}
		i = (i + 1) % PLX_NSTACKS;
	}
	return NULL;
}

static uint32_t
export_sample(const void *addr, unsigned kind)
{
	uint32_t every = __atomic_load_n(&sample_every, __ATOMIC_RELAXED);
	if (every == 0 || sampling)
		return 0;
	if (park_tick == 0) {
		/* The address differs between the threads alive at once,
		 * the clock between those that reuse one thread's memory. */
		uint64_t h = ((uintptr_t)&park_tick ^ pli_now_ns()) *
		    0x9E3779B97F4A7C15ull;
		park_tick = 1 + (uint32_t)((h >> 32) % every);
	}
	if (--park_tick != 0)
		return 0;
	park_tick = every;
	sampling = true;
	uint64_t pcs[PLX_DEPTH];
	struct unwind_buf b = { pcs, 0 };
	_Unwind_Backtrace(unwind_frame, &b);
	sampling = false;
	struct plx_shm *s = cur_shm();
	struct plx_stack *st = b.n ? stack_of(s, addr, kind, pcs, b.n) : NULL;
	if (st == NULL) {
		add64(&s->h.stacks_dropped, 1);
		return 0;
	}
	return (uint32_t)(st - s->stacks) + 1;
}

/* ---- the table of threads --------------------------------------------- */

/* This thread's entry: of export gen (0: none claimed yet), index + 1 (0:
 * the table was full); gone once the thread gave its record back (its
 * exit), after which it claims nothing. */
static __thread struct {
	uint32_t gen;
	uint32_t index;
	bool gone;
} me;

/* The calling thread's entry in s, or NULL; with claim, one is claimed
 * if this thread has none in this export yet (once per export: a thread
 * that found the table full stays unlisted until the next start). */
static struct plx_thread *
my_entry(struct plx_shm *s, bool claim)
{
	uint32_t gen = __atomic_load_n(&export_gen, __ATOMIC_RELAXED);
	if (me.gen == gen)
		return me.index ? &s->threads[me.index - 1] : NULL;
	if (!claim || me.gone)
		return NULL;
	me.gen = gen;
	me.index = 0;
	uint64_t tid = (uint64_t)syscall(SYS_gettid);
	size_t i = (size_t)((tid * 0x9E3779B97F4A7C15ull) >> 32) % PLX_NTHREADS;
	for (size_t p = 0; p < PLX_NTHREADS; p++) {
		struct plx_thread *e = &s->threads[i];
		uint64_t cur = __atomic_load_n(&e->tid, __ATOMIC_RELAXED);
		if (cur == 0 &&
		    __atomic_compare_exchange_n(&e->tid, &cur, tid, false,
		        __ATOMIC_ACQ_REL, __ATOMIC_RELAXED)) {
			me.index = (uint32_t)i + 1;
			add64(&s->h.threads_listed, 1);
			return e;
		}
		i = (i + 1) % PLX_NTHREADS;
	}
	add64(&s->h.threads_unlisted, 1);
	return NULL;
}

/* The writer's half of the seqlock (export.h, plx_thread): only the
 * entry's own thread calls it, so seq needs no read-modify-write. */
static void
entry_set(struct plx_thread *e, const void *addr, unsigned kind, uint64_t ns)
{
	uint64_t seq = __atomic_load_n(&e->seq, __ATOMIC_RELAXED);
	__atomic_store_n(&e->seq, seq + 1, __ATOMIC_RELAXED);
	/* Release stores: a reader that sees any of them sees seq odd. */
	__atomic_store_n(&e->start_ns, ns, __ATOMIC_RELEASE);
	__atomic_store_n(&e->kind, kind, __ATOMIC_RELEASE);
	__atomic_store_n(&e->addr, (uintptr_t)addr, __ATOMIC_RELEASE);
	__atomic_store_n(&e->seq, seq + 2, __ATOMIC_RELEASE);
}

static void entry_held(
    struct plx_thread *e, unsigned total, unsigned n, const struct pli_held *h);

/* At the thread's exit: clear the entry, then free it. */
static void
entry_drop(struct plx_shm *s)
{
	struct plx_thread *e = my_entry(s, false);
	me.gone = true;
	if (e == NULL)
		return;
	entry_set(e, NULL, 0, 0);
	entry_held(e, 0, 0, NULL);
	me.index = 0;
	__atomic_store_n(&e->tid, 0, __ATOMIC_RELEASE);
	__atomic_fetch_sub(&s->h.threads_listed, 1, __ATOMIC_RELAXED);
}

/* ---- the hooks (see export.h) ----------------------------------------- */

static void
export_contended(const void *addr, unsigned base)
{
	unsigned kind = pli_kind_of(base);
	struct plx_shm *s = cur_shm();
	follow_resets(s);
	struct plx_slot *sl = slot_of(s, addr, true);
	if (sl) {
		add64(&sl->contended, 1);
		set32(&sl->kind, kind);
	}
}

static void
export_park(const void *addr, unsigned kind, size_t len)
{
	struct plx_shm *s = cur_shm();
	follow_resets(s);
	add64(&s->hist[pli_stat_stripe()].queue[qbin(len)], 1);
	struct plx_slot *sl = slot_of(s, addr, true);
	if (sl) {
		add64(&sl->parks, 1);
		__atomic_fetch_add(&sl->queued_now, 1, __ATOMIC_RELAXED);
		max64(&sl->max_queue, len);
		set32(&sl->kind, kind);
	} else {
		add64(&s->h.overflow_parks, 1);
	}
	refresh_tuning(s);
	struct plx_thread *e = my_entry(s, true);
	if (e)
		entry_set(e, addr, kind, pli_now_ns());
}

/* The thread runs again: it is parked on nothing. */
static void
export_resume(void)
{
	struct plx_thread *e = my_entry(cur_shm(), false);
	if (e)
		entry_set(e, NULL, 0, 0);
}

/* With the bucket lock of addr held. */
static void
export_wait(const void *addr, uint64_t waited_ns, uint32_t sample)
{
	struct plx_shm *s = cur_shm();
	follow_resets(s);
	add64(&s->hist[pli_stat_stripe()].wait[wbin(waited_ns)], 1);
	if (sample && sample <= PLX_NSTACKS) {
		struct plx_stack *st = &s->stacks[sample - 1];
		add64(&st->parks, 1);
		add64(&st->wait_ns, waited_ns);
		max64(&st->max_ns, waited_ns);
	}
	struct plx_slot *sl = slot_of(s, addr, true);
	if (sl) {
		add64(&sl->waits, 1);
		add64(&sl->wait_ns, waited_ns);
		__atomic_fetch_sub(&sl->queued_now, 1, __ATOMIC_RELAXED);
	} else {
		add64(&s->h.overflow_waits, 1);
		add64(&s->h.overflow_wait_ns, waited_ns);
	}
}

static void
export_requeue(const void *from, const void *to, size_t n, size_t len)
{
	struct plx_shm *s = cur_shm();
	follow_resets(s);
	struct plx_slot *sl = slot_of(s, from, false);
	if (sl)
		__atomic_fetch_sub(
		    &sl->queued_now, (int64_t)n, __ATOMIC_RELAXED);
	sl = slot_of(s, to, true);
	if (sl) {
		add64(&sl->requeued_in, n);
		__atomic_fetch_add(
		    &sl->queued_now, (int64_t)n, __ATOMIC_RELAXED);
		max64(&sl->max_queue, len);
	} else {
		add64(&s->h.overflow_requeued, n);
	}
}

static void
export_thread(bool created)
{
	struct plx_shm *s = cur_shm();
	follow_resets(s);
	if (created) {
		add64(&s->h.threads_total, 1);
		my_entry(s, true);
	} else {
		entry_drop(s);
	}
	refresh_table(s);
}

/* Counted only for an address that has a slot: one that has been
 * contended.  An uncontended lock claims none, so the table keeps room
 * for the contended ones. */
static void
export_taken(const void *addr)
{
	struct plx_shm *s = cur_shm();
	follow_resets(s);
	struct plx_slot *sl = slot_of(s, addr, false);
	if (sl)
		add64(&sl->taken, 1);
}

/* The calling thread's held locks (checked mode), into its entry under
 * the entry's seqlock; the thread claims an entry for them if it has
 * none, so that a thread that holds locks and never parked is listed. */
static void
entry_held(
    struct plx_thread *e, unsigned total, unsigned n, const struct pli_held *h)
{
	uint64_t seq = __atomic_load_n(&e->seq, __ATOMIC_RELAXED);
	__atomic_store_n(&e->seq, seq + 1, __ATOMIC_RELAXED);
	/* Release stores: a reader that sees any of them sees seq odd. */
	for (unsigned i = 0; i < PLX_HELD; i++) {
		__atomic_store_n(&e->held[i].addr,
		    i < n ? (uint64_t)h[i].addr : 0, __ATOMIC_RELEASE);
		__atomic_store_n(&e->held[i].pc, i < n ? (uint64_t)h[i].pc : 0,
		    __ATOMIC_RELEASE);
	}
	__atomic_store_n(&e->nheld, total, __ATOMIC_RELEASE);
	__atomic_store_n(&e->seq, seq + 2, __ATOMIC_RELEASE);
}

static void
export_held(unsigned total, unsigned n, const struct pli_held *h)
{
	struct plx_thread *e = my_entry(cur_shm(), true);
	if (e)
		entry_held(e, total, n, h);
}

static const struct pli_observer observer = {
	.taken = export_taken,
	.contended = export_contended,
	.sample = export_sample,
	.park = export_park,
	.wait = export_wait,
	.resume = export_resume,
	.thread = export_thread,
	.requeue = export_requeue,
	.held = export_held,
};

/* ---- starting and stopping -------------------------------------------- */

static void
fill_command(struct plx_header *h)
{
	int fd = open("/proc/self/cmdline", O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return;
	ssize_t n = read(fd, h->command, sizeof h->command - 1);
	close(fd);
	if (n <= 0)
		return;
	h->command[n] = '\0';
	for (ssize_t i = 0; i < n; i++)
		if (h->command[i] == '\0')
			h->command[i] = ' ';
	while (n > 0 && h->command[n - 1] == ' ')
		h->command[--n] = '\0';
}

static bool
env_keep(void)
{
	const char *k = getenv(PLX_ENV_KEEP);
	char *end;
	if (k == NULL || *k == '\0')
		return false;
	long v = strtol(k, &end, 10);
	return *end == '\0' && v == (long)getpid();
}

/* PLX_ENV_SAMPLE: a whole number up to PLX_SAMPLE_MAX, else the default
 * (with a warning when it is set but malformed). */
static uint32_t
env_sample(void)
{
	const char *v = getenv(PLX_ENV_SAMPLE);
	if (v == NULL)
		return PLX_SAMPLE_DEFAULT;
	char *end;
	int saved = errno;
	errno = 0;
	unsigned long n = strtoul(v, &end, 10);
	bool bad = *v < '0' || *v > '9' || *end != '\0' || errno != 0 ||
	    n > PLX_SAMPLE_MAX;
	errno = saved;
	if (bad) {
		fprintf(stderr,
		    "libparkinglot: ignoring %s=\"%s\": not a whole number "
		    "from 0 to %u (keeping %u)\n",
		    PLX_ENV_SAMPLE, v, PLX_SAMPLE_MAX, PLX_SAMPLE_DEFAULT);
		return PLX_SAMPLE_DEFAULT;
	}
	return (uint32_t)n;
}

static const uint8_t *
at_random(void)
{
	static const uint8_t none[16];
	const uint8_t *r = (const uint8_t *)getauxval(AT_RANDOM);
	return r ? r : none;
}

/* An object of our name left by an earlier process with our pid (killed,
 * or the image this one replaced with exec), or by another copy of the
 * library in this very image? */
static bool
is_stale(const char *name)
{
	/* Non-blocking: anyone can put a FIFO of our name in /dev/shm. */
	int fd = shm_open(name, O_RDONLY | O_NONBLOCK | O_CLOEXEC, 0);
	if (fd < 0)
		return errno == ENOENT;
	struct stat st;
	bool stale = true;
	if (fstat(fd, &st) == 0 && S_ISREG(st.st_mode) &&
	    (size_t)st.st_size >= sizeof(struct plx_header)) {
		struct plx_header *h =
		    mmap(NULL, sizeof *h, PROT_READ, MAP_SHARED, fd, 0);
		if (h != MAP_FAILED) {
			stale = !(h->magic == PLX_MAGIC &&
			    h->pid == (int64_t)getpid() &&
			    memcmp(h->at_random, at_random(), 16) == 0);
			munmap(h, sizeof *h);
		}
	}
	close(fd);
	return stale;
}

static void export_exit(void);
static void atfork_prepare(void);
static void atfork_parent(void);
static void atfork_child(void);

/* With export_lock held. */
static int
export_start(void)
{
	if (exporting)
		return 0;
	long ps = sysconf(_SC_PAGESIZE);
	if (ps <= 0 || (size_t)ps > PLX_COUNTERS_MAX)
		return ENOTSUP;
	pid_t pid = getpid();
	shm_pid = pid;
	snprintf(shm_name, sizeof shm_name, PLX_NAME_FMT, (long)pid);
	int fd =
	    shm_open(shm_name, O_CREAT | O_EXCL | O_RDWR | O_CLOEXEC, 0600);
	if (fd < 0 && errno == EEXIST) {
		if (!is_stale(shm_name))
			return EEXIST;
		shm_unlink(shm_name);
		fd = shm_open(
		    shm_name, O_CREAT | O_EXCL | O_RDWR | O_CLOEXEC, 0600);
	}
	if (fd < 0)
		return errno;
	int err = 0;
	/* Exactly 0600, whatever the umask. */
	if (fchmod(fd, 0600) != 0 || ftruncate(fd, (off_t)PLX_SIZE) != 0) {
		err = errno;
		goto fail;
	}
	struct plx_shm *s = mmap(shm, PLX_SIZE, PROT_READ | PROT_WRITE,
	    MAP_SHARED | (shm ? MAP_FIXED : 0), fd, 0);
	if (s == MAP_FAILED) {
		err = errno;
		goto fail;
	}
	struct plx_header *h = &s->h;
	h->version = PLX_VERSION;
	h->shm_size = sizeof(struct plx_shm);
	h->total_size = PLX_SIZE;
	h->pid = pid;
	memcpy(h->at_random, at_random(), 16);
	h->state = PLX_RUNNING;
	keep_object = env_keep();
	h->keep = keep_object;
	h->start_ns = pli_now_ns();
	h->start_realtime_ns = plx_clock_ns(CLOCK_REALTIME);
	h->counters_off = PLX_COUNTERS_OFF;
	h->nstripes = PLX_NSTRIPES;
	h->stripe_size = PLX_STRIPE_SIZE;
	h->ncounters = PLX_NCOUNTERS;
	h->maxq_off = PLX_MAXQ_OFF;
	h->qbins = PLX_QBINS;
	h->wbins = PLX_WBINS;
	h->nslots = PLX_NSLOTS;
	h->nstacks = PLX_NSTACKS;
	h->depth = PLX_DEPTH;
	h->nthreads = PLX_NTHREADS;
	h->nheld = PLX_HELD;
	/* Entries claimed in an object before this one are stale. */
	__atomic_store_n(&export_gen, export_gen + 1, __ATOMIC_RELAXED);
	sample_every = env_sample();
	h->sample_every = sample_every;
	if (sample_every) {
		/* The unwinder sets itself up at its first call (a
		 * pthread_once of libgcc's): here, rather than inside the
		 * first sampled park, where it would be a lock operation of
		 * the sampling's own that the program's threads can
		 * contend on. */
		uint64_t pcs[PLX_DEPTH];
		struct unwind_buf b = { pcs, 0 };
		_Unwind_Backtrace(unwind_frame, &b);
	}
	fill_command(h);
	refresh_table(s);
	err = pli_stats_attach(
	    fd, (long)PLX_COUNTERS_OFF, (unsigned char *)s + PLX_COUNTERS_OFF);
	if (err) {
		if (shm)
			mmap(s, PLX_SIZE, PROT_READ | PROT_WRITE,
			    MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED, -1, 0);
		else
			munmap(s, PLX_SIZE);
		goto fail;
	}
	/* The tables start empty: they follow the resets so far. */
	h->tables_resets = plx_counter_word(s, PLX_RESETS_OFF);
	close(fd);
	__atomic_store_n(&shm, s, __ATOMIC_RELEASE);
	__atomic_store_n(&h->magic, PLX_MAGIC, __ATOMIC_RELEASE);
	if (!exit_registered)
		exit_registered = atexit(export_exit) == 0;
	if (!atfork_registered)
		atfork_registered = pthread_atfork(atfork_prepare,
		                        atfork_parent, atfork_child) == 0;
	exporting = true;
	__atomic_store_n(&pli_observer, &observer, __ATOMIC_RELEASE);
	return 0;
fail:
	close(fd);
	shm_unlink(shm_name);
	return err;
}

/* With export_lock held. */
static int
export_stop(void)
{
	if (!exporting)
		return 0;
	int err = pli_stats_detach();
	if (err)
		return err;
	exporting = false;
	__atomic_store_n(&pli_observer, NULL, __ATOMIC_RELEASE);
	shm_unlink(shm_name);
	/* Drop the object; hooks still running write to zeroes. */
	mmap(shm, PLX_SIZE, PROT_READ | PROT_WRITE,
	    MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED, -1, 0);
	return 0;
}

/* export.h */
bool
pli_maps_line(struct pli_maps_reader *r, char *line, size_t cap)
{
	size_t n = 0;
	for (;;) {
		if (r->pos == r->len) {
			ssize_t got = read(r->fd, r->buf, sizeof r->buf);
			if (got < 0 && errno == EINTR)
				continue;
			if (got <= 0) {
				line[n] = '\0';
				return n > 0;
			}
			r->pos = 0;
			r->len = (size_t)got;
		}
		char c = r->buf[r->pos++];
		if (c == '\n') {
			line[n] = '\0';
			return true;
		}
		if (n + 1 < cap)
			line[n++] = c;
	}
}

/* A file whose symbols parkstat can read: mapped privately (as ELF
 * segments are), and still there. */
static bool
maps_elf(const char *path, bool private)
{
	size_t n = strlen(path);
	return *path == '/' && private &&
	    !(n > 10 && strcmp(path + n - 10, " (deleted)") == 0);
}

static uint64_t
path_hash(const char *p)
{
	uint64_t h = 0xcbf29ce484222325ull; /* FNV-1a */
	while (*p)
		h = (h ^ (unsigned char)*p++) * 0x100000001b3ull;
	return h;
}

static int
cmp_u64(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
	return x < y ? -1 : x > y;
}

#define MAPS_FILES 64 /* files saved at most */

/*
 * At exit: save in s->maps the lines of /proc/self/maps that parkstat
 * needs to name the claimed addresses and the sampled frames once the
 * process is gone: every line of each ELF file (maps_elf) that holds one
 * of them, and the lines right
 * after those that are anonymous or shared (the .bss past a file's last
 * page, and what is mapped over it, such as our counters page).  An
 * address in such a line counts for the file mapped privately below it.
 * Reads only: no call into the dynamic loader, no lock but export_lock.
 * Two passes over the file; a mapping that changes between them only
 * costs a name.
 */
static void
save_maps(struct plx_shm *s)
{
	static uint64_t
	    addrs[PLX_NSLOTS + PLX_NSTACKS * PLX_DEPTH + PLX_NTHREADS];
	static char line[4096 + 128]; /* PATH_MAX, and the fields before */
	static struct pli_maps_reader r;
	uint64_t files[MAPS_FILES];
	size_t na = 0, nf = 0, i = 0, len = 0;
	for (size_t k = 0; k < PLX_NSLOTS; k++) {
		uint64_t a =
		    __atomic_load_n(&s->slots[k].addr, __ATOMIC_ACQUIRE);
		if (a)
			addrs[na++] = a;
	}
	for (size_t k = 0; k < PLX_NTHREADS; k++) {
		struct plx_thread e;
		if (plx_thread_read(&s->threads[k], &e, 4) && e.addr)
			addrs[na++] = e.addr;
	}
	for (size_t k = 0; k < PLX_NSTACKS; k++) {
		const struct plx_stack *st = &s->stacks[k];
		uint32_t n = __atomic_load_n(&st->depth, __ATOMIC_ACQUIRE);
		for (uint32_t f = 0; f < n && f < PLX_DEPTH; f++)
			addrs[na++] = st->pcs[f];
	}
	if (na == 0)
		return;
	qsort(addrs, na, sizeof *addrs, cmp_u64);

	/* Pass 1: the files that hold an address (lines come in address
	 * order, as the addresses now do). */
	r.fd = open("/proc/self/maps", O_RDONLY | O_CLOEXEC);
	if (r.fd < 0)
		return;
	r.pos = r.len = 0;
	uint64_t file = 0; /* hash of the file mapped last, 0: none */
	while (i < na && pli_maps_line(&r, line, sizeof line)) {
		uint64_t start, end;
		bool private;
		const char *path = plx_maps_parse(line, &start, &end, &private);
		if (maps_elf(path, private))
			file = path_hash(path);
		else if (*path && (*path != '/' || private))
			file = 0; /* [heap], a deleted file: nobody's .bss */
		while (i < na && addrs[i] < start)
			i++;
		bool hit = false;
		while (i < na && addrs[i] < end) {
			hit = true;
			i++;
		}
		size_t k = 0;
		while (k < nf && files[k] != file)
			k++;
		if (hit && file && k == nf && nf < MAPS_FILES)
			files[nf++] = file;
	}
	close(r.fd);
	if (nf == 0)
		return;

	/* Pass 2: their lines, and the lines that continue them. */
	r.fd = open("/proc/self/maps", O_RDONLY | O_CLOEXEC);
	if (r.fd < 0)
		return;
	r.pos = r.len = 0;
	bool kept = false; /* the line before was saved */
	uint64_t prev_end = 0;
	while (pli_maps_line(&r, line, sizeof line)) {
		uint64_t start, end;
		bool private;
		const char *path = plx_maps_parse(line, &start, &end, &private);
		bool keep = false;
		if (maps_elf(path, private)) {
			uint64_t h = path_hash(path);
			for (size_t k = 0; k < nf && !keep; k++)
				keep = files[k] == h;
		}
		if (!keep && (*path == '\0' || (*path == '/' && !private)))
			keep = kept && start == prev_end;
		kept = keep;
		prev_end = end;
		size_t n = strlen(line);
		if (!keep || n + 1 > PLX_MAPSLEN - len)
			continue;
		memcpy(s->maps + len, line, n);
		s->maps[len + n] = '\n';
		len += n + 1;
	}
	close(r.fd);
	__atomic_store_n(&s->h.maps_len, (uint32_t)len, __ATOMIC_RELEASE);
}

/* At normal exit: final figures and the maps that name the addresses,
 * then remove the object unless parkstat asked to keep it.  Other threads
 * may still be running: nothing is unmapped. */
static void
export_exit(void)
{
	pli_word_lock(&export_lock);
	/* Never for the object of another process: a child of vfork that
	 * calls exit() runs its parent's exit handlers. */
	if (exporting && getpid() == shm_pid) {
		struct plx_shm *s = cur_shm();
		follow_resets(s);
		refresh_table(s);
		/* Not the tuning: reading it here would read the topology
		 * in a program that never contended; each park refreshes
		 * it. */
		save_maps(s);
		__atomic_store_n(&s->h.end_ns, pli_now_ns(), __ATOMIC_RELAXED);
		__atomic_store_n(&s->h.state, PLX_EXITED, __ATOMIC_RELEASE);
		if (!keep_object)
			shm_unlink(shm_name);
	}
	pli_word_unlock(&export_lock);
}

/* Reports by its return value alone: errno is left as it was, as by
 * every call of the library. */
int
pl_stats_export(bool on)
{
	int saved_errno = errno;
	pli_word_lock(&export_lock);
	int err = on ? export_start() : export_stop();
	pli_word_unlock(&export_lock);
	errno = saved_errno;
	return err;
}

/* ---- fork and load ---------------------------------------------------- */

static void
atfork_prepare(void)
{
	pli_word_lock(&export_lock);
}

static void
atfork_parent(void)
{
	pli_word_unlock(&export_lock);
}

/*
 * The child shares the parent's counters page (shared memory is inherited
 * as such): it gets a zeroed page of its own.  Its statistics start from
 * zero, which is also the truth for the gauge of parked threads, since the
 * parking lot drops the other threads' waiters in the child.  If the
 * parent exported, the child exports under its own pid.
 */
static void
atfork_child(void)
{
	bool was_on = exporting;
	exporting = false;
	__atomic_store_n(&pli_observer, NULL, __ATOMIC_RELAXED);
	if (shm)
		mmap(shm, PLX_SIZE, PROT_READ | PROT_WRITE,
		    MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED, -1, 0);
	if (was_on)
		export_start();
	pli_word_unlock(&export_lock);
}

/* At load: one getenv, and nothing more unless PARKINGLOT_STATS asks. */
__attribute__((constructor)) static void
export_load(void)
{
	const char *e = getenv(PLX_ENV);
	if (e == NULL || *e == '\0' || strcmp(e, "0") == 0)
		return;
	pli_word_lock(&export_lock);
	int err = export_start();
	pli_word_unlock(&export_lock);
	if (err)
		fprintf(stderr,
		    "libparkinglot: %s=%s: cannot export the statistics as "
		    "%s: %s\n",
		    PLX_ENV, e, shm_name[0] ? shm_name : "shared memory",
		    err == ENOTSUP ? "the statistics page cannot be shared "
		                     "on this system"
		                   : strerror(err));
}
