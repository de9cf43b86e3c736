/* SPDX-License-Identifier: MIT */
/*
 * The parking lot: the table of buckets, the per-thread records, and
 * pl_park / pl_unpark_*.
 *
 * Layout.  A global pointer names the current table: a power-of-two array
 * of cache-line-sized buckets indexed by a Fibonacci hash of the address.
 * Each bucket has its own lock (a futex word, never a parking-lot lock) and
 * a chain of queues, one per distinct address that has waiters in the
 * bucket.  A queue is a doubly linked list of waiters in the order of
 * their turns (below); its head waiter also carries the queue's tail and
 * the link to the next queue of the bucket (Go's runtime/sema.go keeps
 * per-address queues for the same reason).  So a wake on one address
 * walks the chain of distinct addresses of its bucket, never the waiters
 * of those addresses; with the table sized to the number of threads that
 * chain holds about one address.
 *
 * Turns.  A waiter's turn is the time it joined its address's queue: when
 * it parked, or when a requeue moved it there.  A park joins at the tail,
 * which is the latest turn, so the queue is in the order of turns and its
 * head is the waiter that joined first, the one pl_unpark_one wakes.  A
 * primitive's thread that was woken to compete for a lock, lost it to a
 * barging thread and parks again says so (PLI_PARK_AGAIN, lot.h): it
 * keeps its turn and goes back before the first waiter that joined after
 * it, normally to the head, where it had been, instead of behind every
 * thread that came since (Go's sync.Mutex queues such a waiter first for
 * the same reason).  So the fairness timer's hand-off goes to the waiter
 * that joined first, also when woken waiters keep losing.
 *
 * Passing over.  A mutex's unlock (lib/twobit.c) wakes with
 * pli_unpark_one_away, which may wake a later waiter before the head:
 * of the first AWAY_SCAN waiters, the first that parked on another CPU
 * than the unlocker's, or that has been passed over already.  A woken
 * thread whose CPU is the unlocker's cannot run before the unlocker's
 * thread stops, and with threads pinned 32 to a CPU (lockbench W8 at 64
 * threads) the other CPU meanwhile had nothing to run, a quarter to a
 * third of the time.  The waiters passed over are marked, and a marked
 * waiter is never passed over again in this park: so a waiter is woken
 * after at most one waiter that joined after it, between two parks of
 * its own.
 * The fairness hand-off and pl_unpark_one keep strict turns.  The CPU is
 * the one the waiter parked on (sched_getcpu, a read of the rseq area):
 * where the kernel wakes a pinned thread, and where it usually wakes any
 * other.
 *
 * Locking.  A bucket's lock guards its chain, every waiter queued in it
 * (links, addr, tokens, queued), and its fairness deadline.  Threads that
 * need two buckets (requeue) lock them in index order; growth and fork
 * lock all of them in index order.  Callbacks run under the bucket lock.
 * Nothing sleeps or makes a syscall while holding a bucket lock, except
 * waiting for another bucket lock in that fixed order.
 *
 * The waiter's wake word (futex) has three values, written as noted:
 *
 *     0  not queued, or woken: pl_park may return     (waker: xchg)
 *     1  queued, not yet sleeping in the kernel       (parker, bucket locked)
 *     2  queued and about to sleep or sleeping        (parker: CAS 1 -> 2)
 *
 * A waker removes the waiter from its queue and writes its unpark token
 * under the bucket lock, unlocks, and only then exchanges the word to 0,
 * calling FUTEX_WAKE only when it saw 2.  Before it moves the word from 1
 * to 2 and sleeps, a parker that is first in its queue (the next to be
 * woken) watches it for spin_limit rounds of the tuning, two at most
 * (about 5 us; nobody else reads the word, so watching it costs nobody a
 * cache line): a wake that comes meanwhile costs neither side a system
 * call or a context switch.  Condition variables gain most: a consumer
 * woken by the next item often is (lockbench W5a, 0.9x glibc without
 * this, over 3x with it).  The parker returns only after it loads 0 with
 * acquire ordering, so the token and everything the waker did before are
 * visible to it.  After the exchange the waiter may return and
 * its thread exit; the FUTEX_WAKE that may follow then names memory that is
 * gone or reused, which at worst wakes an unrelated futex waiter spuriously
 * (every wait here loops on its own condition), as in glibc and musl.
 *
 * Growth.  The table grows when the threads holding a per-thread record
 * exceed three per bucket.  The grower allocates the new table first,
 * locks every bucket of the old one, checks the old one is still current,
 * moves the queues, publishes the new table and unlocks.  Everybody else
 * locks a bucket and then checks that its table is still current, retrying
 * if not.  Old tables are never freed, because a thread may still be
 * reading one: each table is at least twice the size of the one before,
 * so all retired tables together are smaller than the current one, and the
 * current one holds at most about 4/3 bucket per thread of the peak number
 * of live threads (64 bytes a bucket): well under 200 bytes per thread of
 * the peak, never growing with the number of threads ever created.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <pthread.h>
#include <semaphore.h>
#include <stdlib.h>
#include <string.h>

#include <parkinglot/core.h>

#include "events.h"
#include "futex.h"
#include "lot.h"
#include "platform.h"
#include "stats.h"
#include "tuning.h"
#include "wordlock.h"

/* ---- per-thread records (waiters) ------------------------------------ */

struct waiter {
	/* Guarded by the lock of the bucket the waiter is queued in. */
	struct waiter *next;       /* later waiter on the same address */
	struct waiter *prev;       /* earlier one; NULL on a queue's head */
	struct waiter *tail;       /* on a head: the queue's last waiter */
	size_t len;                /* on a head: waiters in the queue */
	struct waiter *next_queue; /* on a head: next queue in the bucket */
	struct waiter *wake_next;  /* a waker's private list of dequeued */
	const void *addr;          /* written under the lock(s), read racily
	                              by the owner to find its bucket */
	uintptr_t park_token;
	uintptr_t unpark_token;
	uint64_t enqueue_ns; /* this park's start, for the wait times */
	uint64_t turn;       /* when it joined addr's queue (above) */
	int cpu;             /* the CPU it parked on (-1: unknown) */
	bool passed;         /* passed over in this park (Passing over) */
	bool queued;
	bool by_sem;     /* this park sleeps on sem (a cancellation point) */
	uint32_t futex;  /* the wake word, see above */
	uint32_t sample; /* the observer's, for this park (events.h) */
	sem_t sem;       /* per-thread records only: see sleep_cancellable */
};

static __thread struct waiter *self;
static pthread_key_t self_key;
static bool self_key_ok;
static size_t live_threads;
/* Set by self_destroy: the thread is exiting and has given its record
 * back; a key destructor that runs later and parks uses a stack record
 * (get_self), so that no record is created during exit. */
static __thread bool self_gone;
/* While the thread is queued with its stack record, the address; the
 * value of self_key is then &no_record, so that self_destroy runs if the
 * thread ends there (see self_destroy). */
static __thread struct {
	bool on;
	const void *addr;
} stack_park;
static char no_record;
/* What the parks of each base kind are built as, for this thread
 * (kind.h; 0: the base kind itself). */
static __thread uint8_t park_as[PLI_KIND_NBASE];

void
pl__park_as(unsigned base, unsigned kind)
{
	if (base < PLI_KIND_NBASE && kind < PLI_KIND_COUNT)
		park_as[base] = (uint8_t)kind;
}

unsigned
pli_kind_of(unsigned base)
{
	return park_as[base] ? park_as[base] : base;
}

/* Records not in use: exited threads' and the rest of the last block
 * (linked through wake_next, guarded by spare_lock, a leaf lock).  Records
 * are allocated PLI_RECORD_BLOCK at a time, each on cache lines of its
 * own, and never freed: there are never more than the peak number of
 * threads that held one at once, plus a block.  A block (a page here)
 * comes from mmap (alloc.c), not from malloc, whose first call in a
 * thread sets up that thread's arena: some 100 us here, and jemalloc's
 * took as much when the library used it (lockbench W3's 300 new threads
 * each parking once took 3x the CPU of their next run).  The first park
 * of one new thread in PLI_RECORD_BLOCK pays for the mmap: 16 to 38 us,
 * medians of 7 runs (doc/BENCHMARKS.md, "Where the growth's time
 * went"). */
#define RECORD_STRIDE                                                          \
	((sizeof(struct waiter) + PLI_CACHELINE - 1) &                         \
	    ~(size_t)(PLI_CACHELINE - 1))
static uint32_t spare_lock;
static struct waiter *spare;
static size_t records; /* allocated, guarded by spare_lock */

/* ---- buckets and tables ---------------------------------------------- */

struct bucket {
	uint32_t lock;          /* 0 free, 1 locked, 2 locked and contended */
	uint32_t rng;           /* xorshift state for the fairness deadline */
	struct waiter *queues;  /* chain of queue heads, one per address */
	uint64_t fair_deadline; /* CLOCK_MONOTONIC ns; 0: already expired */
} __attribute__((aligned(PLI_CACHELINE)));

struct table {
	size_t size;        /* buckets, a power of two */
	unsigned shift;     /* hash: the top log2(size) bits */
	struct table *prev; /* the retired table this one replaced */
	struct bucket *buckets;
};
_Static_assert(sizeof(struct table) <= PLI_CACHELINE, "a table's header");

#define INITIAL_BITS 5
#define LOAD_FACTOR 3 /* threads per bucket before the table grows */

/* The first table is static: the lot works before any allocation and
 * whatever malloc says. */
static struct bucket initial_buckets[1u << INITIAL_BITS];
static struct table initial_table = {
	.size = 1u << INITIAL_BITS,
	.shift = 64 - INITIAL_BITS,
	.buckets = initial_buckets,
};
static struct table *current_table = &initial_table;

/* Who observes the lot (events.h): set and cleared by the observer.
 * Exported as pl__observer too, for the drop-in (kind.h). */
const struct pli_observer *pli_observer;
extern const struct pli_observer *pl__observer
    __attribute__((alias("pli_observer"), visibility("default")));

void
pl__taken(const void *addr)
{
	const struct pli_observer *o = pli_observing();
	if (o)
		o->taken(addr);
}
static size_t retired_bytes;

/* ---- bucket locks ----------------------------------------------------- */

static inline void
bucket_lock(struct bucket *b)
{
	pli_word_lock(&b->lock);
}

static inline void
bucket_unlock(struct bucket *b)
{
	pli_word_unlock(&b->lock);
}

/* Lock the bucket of addr in the current table.  A table replaced while
 * we waited for its bucket is retired: unlock and look again. */
static struct bucket *
lock_bucket(const void *addr)
{
	for (;;) {
		struct table *t =
		    __atomic_load_n(&current_table, __ATOMIC_ACQUIRE);
		struct bucket *b = &t->buckets[pli_hash_addr(addr, t->shift)];
		bucket_lock(b);
		/* Growth swaps the table while holding every bucket lock, so
		 * after taking one the pointer cannot change under us. */
		if (t == __atomic_load_n(&current_table, __ATOMIC_RELAXED))
			return b;
		bucket_unlock(b);
	}
}

/* Lock the buckets of two addresses, in index order. */
static void
lock_bucket_pair(
    const void *a, const void *b, struct bucket **ba, struct bucket **bb)
{
	for (;;) {
		struct table *t =
		    __atomic_load_n(&current_table, __ATOMIC_ACQUIRE);
		size_t ia = pli_hash_addr(a, t->shift),
		       ib = pli_hash_addr(b, t->shift);
		struct bucket *first = &t->buckets[ia < ib ? ia : ib];
		struct bucket *second = &t->buckets[ia < ib ? ib : ia];
		bucket_lock(first);
		if (t != __atomic_load_n(&current_table, __ATOMIC_RELAXED)) {
			bucket_unlock(first);
			continue;
		}
		if (second != first)
			bucket_lock(second);
		*ba = &t->buckets[ia];
		*bb = &t->buckets[ib];
		return;
	}
}

static void
unlock_bucket_pair(struct bucket *ba, struct bucket *bb)
{
	bucket_unlock(ba);
	if (bb != ba)
		bucket_unlock(bb);
}

static void
lock_all(struct table *t)
{
	for (size_t i = 0; i < t->size; i++)
		bucket_lock(&t->buckets[i]);
}

static void
unlock_all(struct table *t)
{
	for (size_t i = 0; i < t->size; i++)
		bucket_unlock(&t->buckets[i]);
}

/* Lock every bucket of the current table; returns it. */
static struct table *
lock_current_table(void)
{
	for (;;) {
		struct table *t =
		    __atomic_load_n(&current_table, __ATOMIC_ACQUIRE);
		lock_all(t);
		if (t == __atomic_load_n(&current_table, __ATOMIC_RELAXED))
			return t;
		unlock_all(t);
	}
}

/* ---- queues inside a bucket ------------------------------------------ */

/* Find addr's queue: returns its head (NULL if none) and sets *link to the
 * pointer that points at it, or at the end of the chain. */
static struct waiter *
find_queue(struct bucket *b, const void *addr, struct waiter ***link)
{
	struct waiter **l = &b->queues;
	while (*l && (*l)->addr != addr)
		l = &(*l)->next_queue;
	*link = l;
	return *l;
}

/* Append a chain of n waiters first..last (already linked by next/prev,
 * addr set) to addr's queue in b; returns the queue's new length. */
static size_t
append(struct bucket *b, const void *addr, struct waiter *first,
    struct waiter *last, size_t n)
{
	struct waiter **link;
	struct waiter *head = find_queue(b, addr, &link);
	if (head == NULL) {
		first->prev = NULL;
		first->tail = last;
		first->next_queue = NULL;
		first->len = 0;
		*link = head = first;
	} else {
		first->prev = head->tail;
		head->tail->next = first;
		head->tail = last;
	}
	last->next = NULL;
	return head->len += n;
}

/* Queue w, which kept an earlier turn, on addr in b at that turn: before
 * the first waiter whose turn is not earlier, else at the tail.  It walks
 * past the waiters that joined before it: none when it had been the head
 * (the mutex), those of a bit lock's neighbours that share its word else.
 * (A waiter with a new turn, the latest, joins at the tail with append.)
 * Returns the queue's new length; *first says whether w is its head. */
static size_t
insert_at_turn(
    struct bucket *b, const void *addr, struct waiter *w, bool *first)
{
	struct waiter **link;
	struct waiter *head = find_queue(b, addr, &link);
	struct waiter *x = head;
	while (x && x->turn < w->turn)
		x = x->next;
	*first = x == head;
	if (x == NULL)
		return append(b, addr, w, w, 1);
	w->next = x;
	if (x == head) {
		w->prev = NULL;
		w->tail = head->tail;
		w->len = head->len + 1;
		w->next_queue = head->next_queue;
		head->prev = w;
		*link = w;
		return w->len;
	}
	w->prev = x->prev;
	x->prev->next = w;
	x->prev = w;
	return ++head->len;
}

/* Remove w from its queue, whose head is *link. */
static void
unlink_waiter(struct waiter **link, struct waiter *w)
{
	struct waiter *head = *link;
	if (w == head) {
		struct waiter *h2 = w->next;
		if (h2) {
			h2->prev = NULL;
			h2->tail = w->tail;
			h2->len = w->len - 1;
			h2->next_queue = w->next_queue;
			*link = h2;
		} else {
			*link = w->next_queue;
		}
	} else {
		w->prev->next = w->next;
		if (w->next)
			w->next->prev = w->prev;
		else
			head->tail = w->prev;
		head->len--;
	}
	w->next = w->prev = NULL;
}

/* ---- fairness --------------------------------------------------------- */

/* Waiters of one address up to which the fairness interval is whole. */
#define FAIR_DEPTH 128

/* Called with b locked when a waiter is about to be woken from a queue of
 * len: has the bucket's deadline passed?  If so, move it to now plus a
 * random fraction of the fairness interval (the randomness keeps buckets
 * from firing in step).  A queue deeper than FAIR_DEPTH shares the
 * interval: its span is interval x FAIR_DEPTH / len.  On a busy lock
 * each expiry moves the head of the queue on by one, so with the whole
 * interval the last of len waiters waits about len half-intervals: with
 * 1024 threads on one mutex about a second, and in lockbench W8 some
 * waited out the run, as with glibc's mutex.  Shared, that wait stays
 * near FAIR_DEPTH half-intervals plus a wake-up for each turn ahead.  The
 * price, more hand-offs, each leaving the lock idle for a wake-up, is
 * paid only by queues deeper than FAIR_DEPTH (doc/BENCHMARKS.md, "Deep
 * queues share the fairness interval"). */
static bool
fair_due(struct bucket *b, uint64_t now, size_t len)
{
	if (now < b->fair_deadline)
		return false;
	uint64_t span =
	    (uint64_t)__atomic_load_n(
	        &pli_tuning()->pub.fair_interval_us, __ATOMIC_RELAXED) *
	    1000;
	if (len > FAIR_DEPTH)
		span = span * FAIR_DEPTH / len;
	uint32_t x = b->rng ? b->rng : (uint32_t)now | 1;
	x ^= x << 13;
	x ^= x >> 17;
	x ^= x << 5;
	b->rng = x;
	/* An interval of 0 leaves the deadline expired: always fair. */
	b->fair_deadline = span ? now + x % (span + 1) : 0;
	return true;
}

/* ---- waking ----------------------------------------------------------- */

/* Called with no bucket lock held, for a waiter already dequeued. */
static void
wake(struct waiter *w)
{
	/* Read before the exchange, after which w may park again. */
	bool by_sem = w->by_sem;
	if (__atomic_exchange_n(&w->futex, 0, __ATOMIC_RELEASE) == 2) {
		if (by_sem)
			sem_post(&w->sem);
		else
			pli_futex_wake(&w->futex, 1);
	}
}

static void
wake_list(struct waiter *w)
{
	while (w) {
		/* Read the link first: once woken, w may park again. */
		struct waiter *n = w->wake_next;
		wake(w);
		w = n;
	}
}

/*
 * The step every unpark ends with, under the bucket lock: give each
 * waiter of list (dequeued at now, linked by wake_next) its unpark token,
 * and count them there, so that the counters never lag behind the queues
 * that other threads can see.  Returns how many.  The caller then unlocks
 * and wakes the list.
 */
static size_t
release_list(struct waiter *list, uintptr_t token, uint64_t now)
{
	uint64_t n = 0, wait_ns = 0;
	for (struct waiter *w = list; w; w = w->wake_next) {
		uint64_t waited = now - w->enqueue_ns;
		w->unpark_token = token;
		w->queued = false;
		wait_ns += waited;
		n++;
		pli_event_wait(w->addr, waited, w->sample);
	}
	if (n == 0)
		return 0;
	pli_stat_add(PLI_UNPARKS, n);
	pli_stat_add(PLI_PARKED_NOW, -n);
	pli_stat_add(PLI_WAIT_NS, wait_ns);
	if (token == PL_UNPARK_TOKEN_HANDOFF)
		pli_stat_add(PLI_FAIR_HANDOFFS, n);
	return (size_t)n;
}

/* ---- per-thread records and growth ----------------------------------- */

static void
grow(size_t nthreads)
{
	for (;;) {
		struct table *old =
		    __atomic_load_n(&current_table, __ATOMIC_ACQUIRE);
		if (nthreads <= LOAD_FACTOR * old->size)
			return;
		/* Twice the buckets needed at LOAD_FACTOR threads each. */
		size_t need = 2 * ((nthreads + LOAD_FACTOR - 1) / LOAD_FACTOR);
		unsigned bits = INITIAL_BITS;
		while (((size_t)1 << bits) < need)
			bits++;
		size_t size = (size_t)1 << bits;
		/* One allocation: the header, then the buckets from the next
		 * cache line.  No malloc: in a thread that has not used it
		 * yet, its first call sets up an arena, some 100 us here
		 * (doc/BENCHMARKS.md, "Where the growth's time went"). */
		size_t bytes = PLI_CACHELINE + size * sizeof(struct bucket);
		char *m = pli_alloc_aligned(bytes);
		if (m == NULL)
			return; /* keep the old table: longer chains, correct */
		struct table *t = (struct table *)m;
		struct bucket *bk = (struct bucket *)(m + PLI_CACHELINE);
		t->size = size;
		t->shift = 64 - bits;
		t->buckets = bk;

		lock_all(old);
		if (old != __atomic_load_n(&current_table, __ATOMIC_RELAXED)) {
			unlock_all(old);
			pli_free_aligned(m, bytes);
			continue;
		}
		/* Move whole queues: a queue's waiters share its address. */
		for (size_t i = 0; i < old->size; i++) {
			struct waiter *q = old->buckets[i].queues;
			while (q) {
				struct waiter *nq = q->next_queue;
				struct bucket *nb =
				    &bk[pli_hash_addr(q->addr, t->shift)];
				q->next_queue = nb->queues;
				nb->queues = q;
				q = nq;
			}
			old->buckets[i].queues = NULL;
		}
		t->prev = old;
		__atomic_fetch_add(&retired_bytes,
		    old->size * sizeof(struct bucket), __ATOMIC_RELAXED);
		__atomic_store_n(&current_table, t, __ATOMIC_RELEASE);
		unlock_all(old);
		pli_stats_table(size);
		return;
	}
}

static void
spare_push(struct waiter *w)
{
	pli_word_lock(&spare_lock);
	w->wake_next = spare;
	spare = w;
	pli_word_unlock(&spare_lock);
}

/* A zeroed record: a spare one, else the first of a new block.  The block
 * is allocated under the lock, so that threads arriving together share
 * one instead of allocating one each. */
static struct waiter *
record_get(void)
{
	pli_word_lock(&spare_lock);
	struct waiter *w = spare;
	if (w) {
		spare = w->wake_next;
		pli_word_unlock(&spare_lock);
		memset(w, 0, sizeof *w);
		sem_init(&w->sem, 0, 0);
		return w;
	}
	char *b = pli_alloc_aligned(PLI_RECORD_BLOCK * RECORD_STRIDE);
	if (b) {
		for (size_t i = PLI_RECORD_BLOCK - 1; i > 0; i--) {
			struct waiter *r =
			    (struct waiter *)(b + i * RECORD_STRIDE);
			r->wake_next = spare;
			spare = r;
		}
		records += PLI_RECORD_BLOCK;
		sem_init(&((struct waiter *)b)->sem, 0, 0);
	}
	pli_word_unlock(&spare_lock);
	return (struct waiter *)b;
}

static bool leave_queue(struct waiter *w,
    void (*timed_out)(void *ctx, const void *addr, bool was_last), void *ctx);

static void
self_destroy(void *p)
{
	/* Runs at thread exit (a key destructor).  No destructor that runs
	 * later in this thread gets a record: get_self gives it a stack
	 * record instead, whatever the destructor round. */
	self_gone = true;
	if (p == &no_record) {
		/* A thread whose record is on its stack has no record to free;
		 * one that ends while queued with it (cancelled, or a signal
		 * handler's pthread_exit) leaves in its queue a record in
		 * memory that its exit reuses: nothing can be undone. */
		if (stack_park.on)
			pli_fatal("pl_park: thread exited while parked on %p "
			          "with its record on its stack (no memory for "
			          "one): the queue is corrupt",
			    stack_park.addr);
		return;
	}
	/* The thread may end inside pl_park, which never returns: cancelled
	 * asynchronously, or by pthread_exit in a signal handler.  Its
	 * record may then still be queued, or dequeued by a waker that has
	 * not yet set its wake word: leave_queue takes it out or waits for
	 * the word, as a timeout does, so that the record is in no queue
	 * and nobody writes to it once it is spare.  (A park with
	 * PLI_PARK_UNWOUND has done so already, from its cleanup handler,
	 * and told its primitive: the wake word is 0 here.)  The park counts
	 * as timed out, but the primitive's timed_out callback is not called:
	 * its ctx lived on the stack that the exit unwound.  So the
	 * primitive is left with its parked bit set over a queue that may
	 * be empty, as a fork leaves it in the child: each primitive must
	 * treat that as nobody parked (its next unlock or wake finds nobody
	 * and clears the bit; doc/design.md lists them).  What was handed
	 * to the thread with its unpark token (a mutex handed off) stays
	 * with it, as a mutex held by a thread that ended stays locked.
	 * The stray FUTEX_WAKE discussed at the top of this file may still
	 * follow: at worst it wakes the record's next owner spuriously.
	 * Only a thread ended while sleeping is covered: one ended while
	 * holding a bucket lock (in a callback, or taking the lock) leaves
	 * that bucket locked for good, as POSIX allows asynchronous
	 * cancellation only in async-cancel-safe code. */
	struct waiter *w = p;
	if (__atomic_load_n(&w->futex, __ATOMIC_ACQUIRE) != 0)
		(void)leave_queue(w, NULL, NULL);
	self = NULL;
	spare_push(w);
	__atomic_fetch_sub(&live_threads, 1, __ATOMIC_RELAXED);
	pli_event_thread(false);
}

/* The calling thread's record, created on its first park.  If it cannot
 * be allocated, or the thread is exiting (self_gone), the caller's stack
 * record serves for this one park. */
static struct waiter *
get_self(struct waiter *fallback)
{
	struct waiter *w = self;
	if (w)
		return w;
	if (self_key_ok && !self_gone) {
		w = record_get();
		if (w && pthread_setspecific(self_key, w) == 0) {
			self = w;
			size_t n = __atomic_add_fetch(
			    &live_threads, 1, __ATOMIC_RELAXED);
			if (n > LOAD_FACTOR *
			        __atomic_load_n(
			            &current_table, __ATOMIC_ACQUIRE)
			            ->size)
				grow(n);
			pli_event_thread(true);
			return w;
		}
		if (w)
			spare_push(w);
		/* So that self_destroy sees the thread end, if it ends while
		 * queued with the stack record (best effort: this may fail
		 * for the reason the record could not be set). */
		(void)pthread_setspecific(self_key, &no_record);
	}
	memset(fallback, 0, sizeof *fallback);
	return fallback;
}

/* ---- fork ------------------------------------------------------------- */

static struct table *fork_table;

/* Before fork: hold every bucket, so the child never inherits a bucket
 * locked by a thread that does not exist there. */
static void
atfork_prepare(void)
{
	fork_table = lock_current_table();
	pli_word_lock(&spare_lock);
	pli_stats_fork_prepare();
}

static void
atfork_parent(void)
{
	pli_stats_fork_parent();
	pli_word_unlock(&spare_lock);
	unlock_all(fork_table);
}

/* In the child only the forking thread exists.  Every queued waiter
 * belonged to another thread: drop them all.  A lock word may still say
 * PARKED; its next unlock finds the queue empty and clears the bit. */
static void
atfork_child(void)
{
	struct table *t = fork_table;
	for (size_t i = 0; i < t->size; i++) {
		t->buckets[i].queues = NULL;
		t->buckets[i].lock = 0;
	}
	spare_lock = 0;
	live_threads = self ? 1 : 0;
	pli_stats_fork_child();
	pli_tuning_forked();
}

__attribute__((constructor)) static void
lot_init(void)
{
	self_key_ok = pthread_key_create(&self_key, self_destroy) == 0;
	pli_stats_table(initial_table.size);
	pthread_atfork(atfork_prepare, atfork_parent, atfork_child);
}

/* ---- park ------------------------------------------------------------- */

/* Lock the bucket w is queued in (or was dequeued from).  Requeue changes
 * w->addr holding both buckets' locks, so once we hold the bucket of the
 * address we read and w->addr still names it, it cannot change. */
static struct bucket *
lock_waiter_bucket(struct waiter *w, const void **addr)
{
	for (;;) {
		const void *a = __atomic_load_n(&w->addr, __ATOMIC_RELAXED);
		struct bucket *b = lock_bucket(a);
		if (__atomic_load_n(&w->addr, __ATOMIC_RELAXED) == a) {
			*addr = a;
			return b;
		}
		bucket_unlock(b);
	}
}

/* Sleep until the wake word is 0 or the deadline passes. */
/* Rounds a parker watches its wake word at most, whatever the spin
 * limit: a limit raised for locks must not keep parked threads busy. */
#define PARKER_ROUNDS 2u

/* Queued first on its address, and about to sleep: first watch the wake
 * word for the spin rounds of the tuning, at most PARKER_ROUNDS (see the
 * top of the file; none where the tuning says not to spin). */
static void
spin_on(struct waiter *w)
{
	const struct pli_tuning *t = pli_tuning();
	unsigned rounds = __atomic_load_n(&t->pub.spin_limit, __ATOMIC_RELAXED);
	if (rounds > PARKER_ROUNDS)
		rounds = PARKER_ROUNDS;
	uint64_t n = (uint64_t)rounds *
	    __atomic_load_n(&t->pause_per_spin, __ATOMIC_RELAXED);
	for (uint64_t i = 0; i < n; i++) {
		if (__atomic_load_n(&w->futex, __ATOMIC_RELAXED) == 0)
			return;
		pli_cpu_relax();
	}
}

/* One sleep of a park by semaphore: a cancellation point, as glibc's
 * sem_clockwait is.  0 for a post (maybe one left over from an earlier
 * park: the caller checks its wake word) or a signal.  sem_clockwait
 * also without a deadline, rather than sem_wait: ThreadSanitizer
 * intercepts sem_wait, and a thread cancelled inside its interceptor
 * goes on unwinding with TSan blind to its synchronisation (it reported
 * the bucket lock's accesses in leave_queue as races). */
static int
sem_sleep(struct waiter *w, clockid_t clock, const struct timespec *deadline)
{
	/* 2^40 s, or where time_t has 32 bits (i386 without _TIME_BITS=64)
	 * its largest: a shift by 40 there is undefined, and gave a deadline
	 * of 0, which timed out at once and made the park spin. */
	static const struct timespec forever = {
		(time_t)(sizeof(time_t) > 4 ? (1LL << 40) : INT32_MAX), 0
	};
	int saved = errno, rc = 0;
	if (sem_clockwait(&w->sem, deadline ? clock : CLOCK_MONOTONIC,
	        deadline ? deadline : &forever))
		rc = errno == ETIMEDOUT && deadline ? ETIMEDOUT : 0;
	errno = saved;
	return rc;
}

static int
sleep_on(struct waiter *w, clockid_t clock, const struct timespec *deadline,
    bool watch)
{
	uint32_t v;
	if (watch)
		spin_on(w);
	while ((v = __atomic_load_n(&w->futex, __ATOMIC_ACQUIRE)) != 0) {
		if (v == 1 &&
		    !__atomic_compare_exchange_n(&w->futex, &v, 2, false,
		        __ATOMIC_RELAXED, __ATOMIC_RELAXED))
			continue;
		/* EINTR and spurious wakes loop: signals never shorten a
		 * park; the deadline is absolute, so restarting is exact. */
		if ((w->by_sem ? sem_sleep(w, clock, deadline)
		               : pli_futex_wait_on(&w->futex, 2, clock,
		                     deadline)) == ETIMEDOUT)
			return ETIMEDOUT;
	}
	return 0;
}

/* sleep_on, never a cancellation point (the wait for a waker that has
 * dequeued w: it sets the wake word right after unlocking). */
static void
sleep_uncancellable(struct waiter *w)
{
	int state;
	pthread_setcancelstate(PTHREAD_CANCEL_DISABLE, &state);
	sleep_on(w, CLOCK_MONOTONIC, NULL, false);
	pthread_setcancelstate(state, NULL);
}

/*
 * The park of w ends without an unpark: its deadline passed, or its
 * thread is exiting.  If w is still queued, take it out, count the park
 * as timed out, call timed_out (if any) with the bucket still locked, as
 * pl_park promises, and return true.  Otherwise a waker has dequeued it
 * and will set its wake word right after unlocking the bucket: wait for
 * that, so that no late write lands on a later park (or the record's next
 * owner), and return false: the park was an unpark after all.
 */
static bool
leave_queue(struct waiter *w,
    void (*timed_out)(void *ctx, const void *addr, bool was_last), void *ctx)
{
	const void *addr;
	struct bucket *b = lock_waiter_bucket(w, &addr);
	if (!w->queued) {
		bucket_unlock(b);
		sleep_uncancellable(w);
		return false;
	}
	struct waiter **link;
	find_queue(b, addr, &link);
	unlink_waiter(link, w);
	w->queued = false;
	stack_park.on = false; /* out of every queue, whatever its record */
	__atomic_store_n(&w->futex, 0, __ATOMIC_RELAXED);
	uint64_t waited = pli_now_ns() - w->enqueue_ns;
	pli_stat_add(PLI_TIMEOUTS, 1);
	pli_stat_add(PLI_PARKED_NOW, (uint64_t)-1);
	pli_stat_add(PLI_WAIT_NS, waited);
	if (timed_out)
		timed_out(ctx, addr, find_queue(b, addr, &link) == NULL);
	bucket_unlock(b);
	pli_event_wait(addr, waited, w->sample);
	return true;
}

/*
 * Cancellation (pl_park_until with a cancelled callback).  The sleep is
 * the only part of a park that may be cancelled.  A thread with a record
 * of its own sleeps on its record's semaphore (by_sem: the waker posts it
 * instead of a FUTEX_WAKE), in sem_clockwait, one of glibc's own
 * cancellation points.  They act on a cancellation only
 * inside the system call, and make sure that a SIGCANCEL already sent
 * has arrived before they return, so that a cancellation either ends the
 * park or is left pending for the thread's next cancellation point, as
 * with pthread_cond_wait.  (The library used to sleep with the thread's
 * cancel type asynchronous around the futex call instead.  A canceller
 * that saw the type asynchronous but sent its signal only after the
 * sleeper had switched back could have it land after the thread's
 * function had returned, and pthread_join then gave PTHREAD_CANCELED for
 * a thread that had not been cancelled: tests/test_dropin,
 * cancel::a_cancelled_waiter_never_swallows_a_signal, 1 run in some
 * tens.)  A post may come late, after the park ended (see wake): every
 * sleep rechecks its wake word, and records are never freed.  A stack
 * record cannot take a late write, so a thread parked on one (no memory
 * for a record, or a key destructor at exit) still sleeps with the type
 * asynchronous around the futex call: that window holds nothing but
 * loads, a CAS and the system call, none of which leaves a lock or a
 * half-made change behind.  Either way park_cancelled, a cleanup handler
 * registered by this stack frame, finds the waiter queued, dequeued by a
 * waker that has not yet set its wake word, or woken, and leave_queue
 * sorts the three out as for a timeout.
 */
struct cancel_point {
	struct waiter *w;
	struct waiter *fallback;
	void (*timed_out)(void *ctx, const void *addr, bool was_last);
	void (*cancelled)(void *ctx, pl_park_result_t r);
	void *ctx;
};

static void
park_cancelled(void *arg)
{
	struct cancel_point *cp = arg;
	pl_park_result_t r = { PL_PARK_CANCELLED, 0 };
	if (!leave_queue(cp->w, cp->timed_out, cp->ctx)) {
		r.status = PL_PARK_UNPARKED;
		r.token = cp->w->unpark_token;
	}
	if (cp->w == cp->fallback)
		stack_park.on = false;
	pli_event_resume();
	cp->cancelled(cp->ctx, r);
}

/* The sleep of a park that is no cancellation point, for a primitive
 * that must hear of its thread ending there (PLI_PARK_UNWOUND): the
 * cleanup handler of a cancellable park, around a plain sleep. */
static int
sleep_guarded(struct waiter *w, clockid_t clock,
    const struct timespec *deadline, bool watch, struct cancel_point *cp)
{
	int rc;
	pthread_cleanup_push(park_cancelled, cp);
	rc = sleep_on(w, clock, deadline, watch);
	pthread_cleanup_pop(0);
	return rc;
}

static int
sleep_cancellable(struct waiter *w, clockid_t clock,
    const struct timespec *deadline, bool watch, struct cancel_point *cp)
{
	int rc, type;
	pthread_cleanup_push(park_cancelled, cp);
	if (w->by_sem) {
		pthread_testcancel(); /* one already pending, at once */
		rc = sleep_on(w, clock, deadline, watch);
	} else {
		/* Acts at once on a cancellation already pending. */
		pthread_setcanceltype(PTHREAD_CANCEL_ASYNCHRONOUS, &type);
		rc = sleep_on(w, clock, deadline, watch);
		pthread_setcanceltype(type, NULL);
	}
	pthread_cleanup_pop(0);
	return rc;
}

pl_park_result_t
pli_park(unsigned base, const void *addr, bool (*validate)(void *ctx),
    void (*before_sleep)(void *ctx),
    void (*timed_out)(void *ctx, const void *addr, bool was_last), void *ctx,
    uintptr_t park_token, clockid_t clock, const struct timespec *deadline,
    void (*cancelled)(void *ctx, pl_park_result_t r))
{
	pl_park_result_t res = { PL_PARK_INVALID, 0 };
	bool again = base & PLI_PARK_AGAIN;
	bool unwound = base & PLI_PARK_UNWOUND;
	base &= ~(PLI_PARK_AGAIN | PLI_PARK_UNWOUND);
	if (!pli_deadline_valid(deadline) || !pli_clock_valid(clock)) {
		pli_stat_add(PLI_INVALID_PARKS, 1);
		errno = EINVAL;
		return res;
	}
	pli_tuning_kick(); /* the first park starts the refinement */
	pli_stats_ready(); /* the first maps the counters: not under a lock */
	struct waiter fallback;
	struct waiter *w = get_self(&fallback);
	if (__atomic_load_n(&w->futex, __ATOMIC_RELAXED) != 0)
		pli_fatal("pl_park: thread is already parked on %p "
		          "(pl_park called from a park callback?)",
		    __atomic_load_n(&w->addr, __ATOMIC_RELAXED));

	/* Before the bucket: a sample may unwind the stack, which may lock
	 * (and park). */
	unsigned kind = pli_observing() ? pli_kind_of(base) : base;
	uint32_t sample = pli_event_sample(addr, kind);
	int cpu = sched_getcpu();
	struct bucket *b = lock_bucket(addr);
	if (validate && !validate(ctx)) {
		bucket_unlock(b);
		pli_stat_add(PLI_INVALID_PARKS, 1);
		return res;
	}
	w->sample = sample;
	w->by_sem = cancelled && !unwound && w != &fallback;
	w->park_token = park_token;
	w->unpark_token = PL_UNPARK_TOKEN_DEFAULT;
	w->queued = true;
	w->cpu = cpu;
	w->passed = false;
	w->enqueue_ns = pli_now_ns();
	__atomic_store_n(&w->addr, addr, __ATOMIC_RELAXED);
	__atomic_store_n(&w->futex, 1, __ATOMIC_RELAXED);
	if (w == &fallback) { /* see self_destroy */
		stack_park.addr = addr;
		stack_park.on = true;
	}
	/* A new turn is the latest: the tail.  (A fallback record is new:
	 * it has no turn to keep.) */
	bool first;
	size_t len;
	if (again && w != &fallback) {
		len = insert_at_turn(b, addr, w, &first);
	} else {
		w->turn = w->enqueue_ns;
		len = append(b, addr, w, w, 1);
		first = len == 1;
	}
	/* Counted inside the critical section, so that whoever sees the
	 * thread queued (under this lock) sees it counted too. */
	pli_stat_add(PLI_PARKS, 1);
	pli_stat_add(PLI_PARKED_NOW, 1);
	pli_stat_max_queue(len);
	bucket_unlock(b);
	pli_event_park(addr, kind, len);

	if (before_sleep)
		before_sleep(ctx);

	/* Only the first in its queue can expect to be woken soon: the
	 * others would watch their word for nothing (lockbench W3). */
	int rc;
	if (cancelled) {
		struct cancel_point cp = { w, &fallback, timed_out, cancelled,
			ctx };
		rc = unwound
		    ? sleep_guarded(w, clock, deadline, first, &cp)
		    : sleep_cancellable(w, clock, deadline, first, &cp);
	} else {
		rc = sleep_on(w, clock, deadline, first);
	}
	pli_event_resume();
	if (rc == ETIMEDOUT && leave_queue(w, timed_out, ctx)) {
		res.status = PL_PARK_TIMED_OUT;
		return res;
	}
	if (w == &fallback)
		stack_park.on = false;
	res.status = PL_PARK_UNPARKED;
	res.token = w->unpark_token;
	return res;
}

pl_park_result_t
pl_park_until(const void *addr, bool (*validate)(void *ctx),
    void (*before_sleep)(void *ctx),
    void (*timed_out)(void *ctx, const void *addr, bool was_last), void *ctx,
    uintptr_t park_token, clockid_t clock, const struct timespec *deadline,
    void (*cancelled)(void *ctx, pl_park_result_t r))
{
	return pli_park(PLI_KIND_PARK, addr, validate, before_sleep, timed_out,
	    ctx, park_token, clock, deadline, cancelled);
}

pl_park_result_t
pl_park(const void *addr, bool (*validate)(void *ctx),
    void (*before_sleep)(void *ctx),
    void (*timed_out)(void *ctx, const void *addr, bool was_last), void *ctx,
    uintptr_t park_token, const struct timespec *deadline)
{
	return pli_park(PLI_KIND_PARK, addr, validate, before_sleep, timed_out,
	    ctx, park_token, CLOCK_MONOTONIC, deadline, NULL);
}

/* ---- unpark ----------------------------------------------------------- */

/* Waiters pli_unpark_one_away looks at (Passing over, above). */
#define AWAY_SCAN 4

/* Passing over: of the first AWAY_SCAN waiters from head, the first that
 * parked on another CPU than cpu or was passed over before in its park;
 * the ones before it are passed over now.  head if there is none. */
static struct waiter *
pick_away(struct waiter *head, int cpu)
{
	struct waiter *x = head;
	for (int i = 0; i < AWAY_SCAN && x; i++, x = x->next) {
		if (x->cpu != cpu || x->passed) {
			for (struct waiter *y = head; y != x; y = y->next)
				y->passed = true;
			return x;
		}
	}
	return head;
}

/*
 * The engine of pl_unpark_one (one: the oldest waiter, or with cpu >= 0
 * the one pick_away chooses) and pl_unpark_filter (filter decides, NULL:
 * all): dequeue, tell the callback, release and count under the bucket
 * lock, wake after it.
 */
static pl_unpark_result_t
unpark(const void *addr, pl_filter_op_t (*filter)(uintptr_t, void *), bool one,
    int cpu, uintptr_t (*callback)(pl_unpark_result_t, void *), void *ctx)
{
	pl_unpark_result_t r = { 0, 0, false, false };
	struct waiter *woken = NULL, **woken_tail = &woken;
	uint64_t now = 0;
	struct bucket *b = lock_bucket(addr);
	struct waiter **link;
	struct waiter *w = find_queue(b, addr, &link);
	size_t len = w ? w->len : 0;
	/* one wakes w: decide the fairness hand-off first, since it goes to
	 * the head whatever pick_away would choose. */
	if (one && w) {
		now = pli_now_ns();
		r.be_fair = fair_due(b, now, len);
		if (!r.be_fair && cpu >= 0)
			w = pick_away(w, cpu);
	}
	while (w && !(one && r.unparked)) {
		struct waiter *next = w->next;
		pl_filter_op_t op =
		    filter ? filter(w->park_token, ctx) : PL_FILTER_UNPARK;
		if (op == PL_FILTER_STOP)
			break;
		if (op == PL_FILTER_UNPARK) {
			unlink_waiter(link, w);
			w->wake_next = NULL;
			*woken_tail = w;
			woken_tail = &w->wake_next;
			r.unparked++;
		}
		w = next;
	}
	r.have_more = *link != NULL && (*link)->addr == addr;
	if (r.unparked && !one) {
		now = pli_now_ns();
		r.be_fair = fair_due(b, now, len);
	}
	uintptr_t token = callback ? callback(r, ctx) : PL_UNPARK_TOKEN_DEFAULT;
	release_list(woken, token, now);
	bucket_unlock(b);
	wake_list(woken);
	return r;
}

pl_unpark_result_t
pl_unpark_one(const void *addr,
    uintptr_t (*callback)(pl_unpark_result_t r, void *ctx), void *ctx)
{
	return unpark(addr, NULL, true, -1, callback, ctx);
}

pl_unpark_result_t
pli_unpark_one_away(const void *addr, int cpu,
    uintptr_t (*callback)(pl_unpark_result_t r, void *ctx), void *ctx)
{
	return unpark(addr, NULL, true, cpu, callback, ctx);
}

size_t
pl_unpark_all(const void *addr, uintptr_t token)
{
	struct bucket *b = lock_bucket(addr);
	struct waiter **link;
	struct waiter *q = find_queue(b, addr, &link);
	if (q) {
		*link = q->next_queue;
		for (struct waiter *w = q; w; w = w->next)
			w->wake_next = w->next;
	}
	size_t n = release_list(q, token, q ? pli_now_ns() : 0);
	bucket_unlock(b);
	wake_list(q);
	return n;
}

pl_unpark_result_t
pl_unpark_filter(const void *addr,
    pl_filter_op_t (*filter)(uintptr_t park_token, void *ctx),
    uintptr_t (*callback)(pl_unpark_result_t r, void *ctx), void *ctx)
{
	return unpark(addr, filter, false, -1, callback, ctx);
}

/*
 * The engine of both requeue calls.  With validate_head (the _token
 * variant) the operation acts only on the threads whose park token is the
 * head's: the moved ones are unlinked one by one, so that the others keep
 * their places; else the rest of the queue moves in one piece.
 */
static pl_unpark_result_t
requeue(const void *from, const void *to, pl_requeue_op_t (*validate)(void *),
    pl_requeue_op_t (*validate_head)(const pl_requeue_head_t *, void *),
    uintptr_t (*callback)(pl_requeue_op_t, pl_unpark_result_t, void *),
    void *ctx)
{
	pl_unpark_result_t r = { 0, 0, false, false };
	uint64_t now = 0;
	struct bucket *bf, *bt;
	lock_bucket_pair(from, to, &bf, &bt);
	struct waiter **link;
	struct waiter *head = find_queue(bf, from, &link);
	size_t flen = head ? head->len : 0;
	pl_requeue_op_t op;
	if (validate_head) {
		pl_requeue_head_t h = { flen, head ? head->park_token : 0 };
		op = validate_head(&h, ctx);
	} else {
		op = validate ? validate(ctx) : PL_REQUEUE_ONE_REQUEUE_REST;
	}
	if (op == PL_REQUEUE_ABORT) {
		unlock_bucket_pair(bf, bt);
		return r;
	}

	struct waiter *woken = NULL, *first = NULL, *last = NULL;
	uintptr_t token = head ? head->park_token : 0;
	if (head &&
	    (op == PL_REQUEUE_ONE_REQUEUE_REST || op == PL_REQUEUE_ONE)) {
		woken = head;
		unlink_waiter(link, head);
		woken->wake_next = NULL;
		head = *link != NULL && (*link)->addr == from ? *link : NULL;
		r.unparked = 1;
	}
	if (head && op == PL_REQUEUE_REQUEUE_ONE) {
		/* The head only: with validate_head its token is the one. */
		first = last = head;
		unlink_waiter(link, head);
	} else if (head && op != PL_REQUEUE_ONE && !validate_head) {
		/* The whole rest of the queue, in one piece. */
		first = head;
		last = head->tail;
		*link = head->next_queue;
	} else if (head && op != PL_REQUEUE_ONE) {
		/* Those with the head's token, each unlinked from its place. */
		for (struct waiter *w = head, *next; w; w = next) {
			next = w->next;
			if (w->park_token != token)
				continue;
			unlink_waiter(link, w);
			w->prev = last;
			if (last)
				last->next = w;
			else
				first = w;
			last = w;
		}
	}
	if (first || woken)
		now = pli_now_ns();
	/* The moved join to's queue now: the latest turn there. */
	for (struct waiter *w = first; w; w = w->next) {
		__atomic_store_n(&w->addr, to, __ATOMIC_RELAXED);
		w->turn = now;
		r.requeued++;
		if (w == last)
			break;
	}
	struct waiter **l2;
	size_t len = 0;
	r.have_more = find_queue(bf, from, &l2) != NULL;
	if (first)
		len = append(bt, to, first, last, r.requeued);
	if (woken)
		r.be_fair = fair_due(bf, now, flen);
	uintptr_t utoken =
	    callback ? callback(op, r, ctx) : PL_UNPARK_TOKEN_DEFAULT;
	release_list(woken, utoken, now);
	if (r.requeued) {
		pli_stat_add(PLI_REQUEUES, r.requeued);
		pli_stat_max_queue(len);
	}
	unlock_bucket_pair(bf, bt);
	wake_list(woken);
	if (r.requeued)
		pli_event_requeue(from, to, r.requeued, len);
	return r;
}

pl_unpark_result_t
pl_unpark_requeue(const void *from, const void *to,
    pl_requeue_op_t (*validate)(void *ctx),
    uintptr_t (*callback)(pl_requeue_op_t op, pl_unpark_result_t r, void *ctx),
    void *ctx)
{
	return requeue(from, to, validate, NULL, callback, ctx);
}

pl_unpark_result_t
pl_unpark_requeue_token(const void *from, const void *to,
    pl_requeue_op_t (*validate)(const pl_requeue_head_t *head, void *ctx),
    uintptr_t (*callback)(pl_requeue_op_t op, pl_unpark_result_t r, void *ctx),
    void *ctx)
{
	if (validate == NULL)
		pli_fatal("pl_unpark_requeue_token: validate is NULL");
	return requeue(from, to, NULL, validate, callback, ctx);
}

/* ---- introspection ---------------------------------------------------- */

size_t
pli_lot_live_threads(void)
{
	return __atomic_load_n(&live_threads, __ATOMIC_RELAXED);
}

size_t
pli_lot_buckets(void)
{
	return __atomic_load_n(&current_table, __ATOMIC_ACQUIRE)->size;
}

size_t
pli_lot_spare_records(void)
{
	pli_word_lock(&spare_lock);
	size_t n = 0;
	for (struct waiter *w = spare; w; w = w->wake_next)
		n++;
	pli_word_unlock(&spare_lock);
	return n;
}

size_t
pli_lot_records(void)
{
	pli_word_lock(&spare_lock);
	size_t n = records;
	pli_word_unlock(&spare_lock);
	return n;
}

size_t
pli_lot_retired_bytes(void)
{
	return __atomic_load_n(&retired_bytes, __ATOMIC_RELAXED);
}

size_t
pli_lot_bucket_of(const void *addr)
{
	struct table *t = __atomic_load_n(&current_table, __ATOMIC_ACQUIRE);
	return pli_hash_addr(addr, t->shift);
}
