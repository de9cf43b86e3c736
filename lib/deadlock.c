/* SPDX-License-Identifier: MIT */
/*
 * The deadlock detector (<parkinglot/deadlock.h>): each thread's set of
 * held locks, and a graph of lock-order edges over lock addresses in which
 * a cycle is a lock-order inversion.  Fed by the hooks of checked builds
 * (<parkinglot/defs.h>, PL_CHECKED) and by the drop-in (deadlock.h).
 *
 * Held sets.  Per thread, in thread-local storage: the locks it holds in
 * the order it took them (HELD_MAX at most; a lock past that is not
 * watched, with one warning per process), each with the return address of
 * the call that took it, the stack pointer at that call, and whether it
 * was a read acquisition; a blocking acquisition joins it at its attempt
 * (the hooks, below).  Only the thread itself reads or writes its set, so
 * it needs no lock; the live export gets a copy at each change
 * (events.h, held).  A set is of one epoch of the detector (a turning
 * on): a thread whose set is of an older epoch starts afresh, so locks it
 * held while the detector was off make no edges.  A lock released by
 * another thread than its locker leaves the locker's set lazily (see
 * "Releases by another thread").
 *
 * The graph.  Allocated once, when the detector is first turned on, with
 * room for max_locks locks and max_edges edges (PARKINGLOT_DEADLOCK_LOCKS,
 * _EDGES): never grown, never freed, so nothing is allocated on a lock
 * path.  Nodes live in an open-addressing table keyed by address, the
 * slot being the node's id; each node heads the list of its out-edges and
 * that of its in-edges, both doubly linked, so that forgetting a lock
 * (pl_lock_forget, the drop-in's destroy functions) takes the time of its
 * own edges.
 * Edges live in a pool; each has the modes it was seen with (a bit per
 * combination of "from held for read" and "to taken for read"), and the
 * call sites of the acquisition that made it first (or added its latest
 * mode).  A second open-addressing table maps a hash of (from, to) to the
 * edge and its modes, and is read without a lock: a lock taken while
 * others are held costs, once its edges exist, one probe per held lock.
 * Everything else -- new nodes, new edges, the cycle search, pl_lock_forget
 * -- runs under graph_lock, a word lock (never one of the locks the
 * detector watches, so it never recurses into the hooks).
 *
 * The lock-free table: a slot's key is 0 (never used), 1 (deleted) or the
 * hash, which is stored last, with release; modes only gain bits (atomic
 * or).  A reader that finds the key with the mode's bit knows the edge is
 * in the graph (a different pair with the same 64-bit hash would mislead
 * it: that is the one imprecision accepted); one that does not find it
 * takes graph_lock and checks the edges themselves.  The table is rebuilt
 * in place when deletions have left too many deleted slots: a reader that
 * runs meanwhile misses, and goes the locked way.
 *
 * Cycles.  Recording A -> B searches, breadth first, for the shortest
 * path from B back to A of at most PL_DEADLOCK_MAX_LOCKS - 1 edges that
 * is a possible deadlock: at each lock of the cycle, the mode it is
 * waited for in (the edge into it) and the mode it is held in (the edge
 * out of it) must not both be read, since readers do not exclude each
 * other.  A cycle found is reported once (a hash of its locks in
 * canonical order is kept), outside graph_lock, under report_lock, which
 * orders the reports and the symbolizer.
 *
 * Names.  Only when reporting: lock addresses and call sites are named
 * with elfutils' libdwfl, loaded with dlopen at the first report (so the
 * library has no dependency on it), from /proc/self/maps and the files'
 * symbol tables and line information; without it, with dladdr (exported
 * symbols only), else in hex.  Naming may take the dynamic loader's lock
 * inside a lock operation of the program: a report is a debugging aid,
 * and the thread's own hooks are off meanwhile (busy), so nothing the
 * symbolizer locks is watched.
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <dwarf.h>
#include <elfutils/libdw.h>
#include <elfutils/libdwfl.h>
#include <errno.h>
#include <fcntl.h>
#include <link.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <unistd.h>
#include <unwind.h>

#include <parkinglot/deadlock.h>

#include "deadlock.h"
#include "events.h"
#include "export.h"
#include "platform.h"
#include "wordlock.h"

#define HELD_MAX 64
#define LOCKS_DEFAULT 16384u
#define EDGES_DEFAULT 32768u
#define BOUND_MIN 16u
#define BOUND_MAX (1u << 24)
#define CYCLES_KEPT 64 /* for pl_deadlock_cycles */
#define SEEN_MAX 1024  /* hashes of reported cycles */
#define FAST_PROBES 32 /* lock-free probes before going the locked way */
#define TOMB ((uintptr_t)1)
#define BT_MAX 48 /* frames unwound at a new edge */

static const bool verbose = false;

int pl__deadlock_on;

/* ---- the graph (graph_lock) ------------------------------------------- */

struct node {
	uintptr_t addr;   /* 0: free */
	uint32_t out;     /* first out-edge, index + 1 (0: none) */
	uint32_t in;      /* first in-edge, index + 1 (0: none) */
	uint32_t seen[2]; /* search stamps, per mode of the way in */
	uint32_t freed;   /* the last release by another thread (cross_gen) */
};

struct edge {
	struct pl_deadlock_edge pub; /* from, to, tid, sites */
	uint32_t from, to;           /* nodes, index + 1 */
	uint32_t next;               /* next out-edge of from, or next free */
	uint32_t prev;               /* previous out-edge of from (0: none) */
	uint32_t next_in, prev_in;   /* the same in the in-edges of to */
	uint32_t modes;              /* MODE_BIT()s seen */
};

struct eslot {
	uint64_t key; /* 0 free, TOMB deleted, else edge_key (release) */
	uint32_t modes;
	uint32_t edge; /* index + 1 */
};

/* A state of the search: a node reached with a mode of the way in. */
struct qent {
	uint32_t node, parent, edge; /* parent: queue index + 1 */
	uint8_t inread, bit, depth;
};

#define MODE_BIT(from_read, to_read) (1u << ((from_read)*2 + (to_read)))

static uint32_t init_lock;   /* word lock: allocation, the mode */
static uint32_t graph_lock;  /* word lock: everything below */
static uint32_t report_lock; /* word lock: reports, the symbolizer */

static struct node *nodes;
static size_t node_cap, node_mask, nodes_live;
static size_t max_locks, max_edges;
static struct edge *edges;
static size_t edges_used;  /* pool entries ever handed out */
static uint32_t edge_free; /* freed entries, index + 1 */
static size_t edges_live;
static struct eslot *eh; /* read without a lock: see above */
static size_t eh_mask, eh_tombs;
static struct qent *queue;
static uint32_t stamp;
static bool full_locks, full_edges; /* warned; read relaxed outside */
static uint32_t epoch;              /* of the held sets */
static uint32_t cross_gen;          /* releases by other threads (atomic; write
                                     * under graph_lock) */

static struct pl_deadlock_cycle cycles[CYCLES_KEPT];
static size_t ncycles; /* found, including those not kept */
static struct seen {
	uint64_t hash;
	uintptr_t lo, hi; /* lowest and highest lock of the cycle */
} seen[SEEN_MAX];
static size_t nseen;

static pl_deadlock_handler_t *handler; /* under report_lock */
static void *handler_arg;
/* PARKINGLOT_DEADLOCK_LOG at load: the file the reports are appended to
 * instead of stderr ("": stderr). */
static char log_path[4096];

/* ---- the held sets ---------------------------------------------------- */

/* A thread's set, in one block of thread-local storage: the counts first,
 * then the locks (struct pli_held, events.h), four words each and two to
 * a cache line, so that the hooks' common case -- the first lock pushed or
 * popped -- reads and writes one cache line, and any other two. */
static __thread struct held {
	uint32_t epoch;
	unsigned n;    /* locks kept below */
	unsigned over; /* locks taken past HELD_MAX, not kept */
	bool busy;     /* inside the detector: hooks do nothing */
	bool handling; /* in the handler, report_lock held (report) */
	uint32_t gen;  /* cross_gen when the set was last swept */
	long tid;
	struct pli_held e[HELD_MAX] __attribute__((aligned(32)));
} me __attribute__((aligned(64)));

static bool held_warned;

static void
warn_once(bool *flag, const char *fmt, ...)
{
	if (__atomic_exchange_n(flag, true, __ATOMIC_RELAXED))
		return;
	char buf[512];
	va_list ap;
	va_start(ap, fmt);
	int n = vsnprintf(buf, sizeof buf, fmt, ap);
	va_end(ap);
	if (n > 0)
		(void)!write(STDERR_FILENO, buf,
		    (size_t)n < sizeof buf ? (size_t)n : sizeof buf - 1);
}

/* A set of an older epoch: emptied, and (once per thread) its tid. */
static PLI_COLD void
held_reset(struct held *t, uint32_t e)
{
	t->epoch = e;
	t->n = 0;
	t->over = 0;
	if (t->tid == 0)
		t->tid = (long)syscall(SYS_gettid);
}

/* The calling thread's set, or NULL while it is inside the detector. */
static inline struct held *
my_held(void)
{
	struct held *t = &me; /* a TLS descriptor's call (configure.ac) */
	/* Once per hook: keep the compiler from asking for &me again after
	 * every call the hook makes. */
	__asm__("" : "+r"(t));
	uint32_t e = __atomic_load_n(&epoch, __ATOMIC_RELAXED);
	if (__builtin_expect(t->epoch != e, 0))
		held_reset(t, e);
	return __builtin_expect(t->busy, 0) ? NULL : t;
}

/* The live export's copy of the set (events.h). */
static inline void
publish(const struct held *t)
{
	const struct pli_observer *o = pli_observing();
	if (o && o->held)
		o->held(t->n + t->over, t->n, t->e);
}

/* ---- the lock-free table of edges ------------------------------------- */

static inline uint64_t
edge_key(uintptr_t a, uintptr_t b)
{
	uint64_t k = (uint64_t)a * 0x9E3779B97F4A7C15ull;
	k ^= (uint64_t)b * 0xC2B2AE3D27D4EB4Full;
	k ^= k >> 31;
	return k < 2 ? k + 2 : k;
}

/* Whether the graph has a -> b with mode bit (no lock; may say no
 * wrongly, never yes but for a hash collision). */
static inline bool
edge_known(uintptr_t a, uintptr_t b, uint32_t bit)
{
	uint64_t k = edge_key(a, b);
	size_t i = (size_t)(k >> 17) & eh_mask;
	for (unsigned p = 0; p < FAST_PROBES; p++) {
		uint64_t c = __atomic_load_n(&eh[i].key, __ATOMIC_ACQUIRE);
		if (c == 0)
			return false;
		if (c == k)
			return __atomic_load_n(&eh[i].modes, __ATOMIC_RELAXED) &
			    bit;
		i = (i + 1) & eh_mask;
	}
	return false;
}

/* With graph_lock: the slot of edge e (index + 1) of pair (a, b), or of
 * where it would go (*found false then; the first deleted slot on the
 * way, else the free one that ends it). */
static size_t
eh_find(uintptr_t a, uintptr_t b, bool *found)
{
	uint64_t k = edge_key(a, b);
	size_t i = (size_t)(k >> 17) & eh_mask, hole = SIZE_MAX;
	for (;;) {
		uint64_t c = eh[i].key;
		if (c == 0) {
			*found = false;
			return hole != SIZE_MAX ? hole : i;
		}
		if (c == TOMB) {
			if (hole == SIZE_MAX)
				hole = i;
		} else if (c == k) {
			const struct edge *e = &edges[eh[i].edge - 1];
			if ((uintptr_t)e->pub.from == a &&
			    (uintptr_t)e->pub.to == b) {
				*found = true;
				return i;
			}
		}
		i = (i + 1) & eh_mask;
	}
}

static void
eh_put(size_t i, uintptr_t a, uintptr_t b, uint32_t e, uint32_t modes)
{
	if (eh[i].key == TOMB)
		eh_tombs--;
	__atomic_store_n(&eh[i].edge, e, __ATOMIC_RELAXED);
	__atomic_store_n(&eh[i].modes, modes, __ATOMIC_RELAXED);
	__atomic_store_n(&eh[i].key, edge_key(a, b), __ATOMIC_RELEASE);
}

/* With graph_lock: every live edge again, and no deleted slot. */
static void
eh_rebuild(void)
{
	for (size_t i = 0; i <= eh_mask; i++)
		__atomic_store_n(&eh[i].key, 0, __ATOMIC_RELAXED);
	eh_tombs = 0;
	for (size_t n = 0; n < node_cap; n++) {
		if (nodes[n].addr == 0)
			continue;
		for (uint32_t x = nodes[n].out; x; x = edges[x - 1].next) {
			struct edge *e = &edges[x - 1];
			bool found;
			size_t i = eh_find((uintptr_t)e->pub.from,
			    (uintptr_t)e->pub.to, &found);
			eh_put(i, (uintptr_t)e->pub.from, (uintptr_t)e->pub.to,
			    x, e->modes);
		}
	}
}

/* ---- nodes ------------------------------------------------------------ */

static inline size_t
node_hash(uintptr_t a)
{
	return (size_t)(((uint64_t)a * 0x9E3779B97F4A7C15ull) >> 20) &
	    node_mask;
}

/* With graph_lock: the node of a (index + 1), created if create and
 * there is room; 0 if none.  Linear probing, and no deleted slots (see
 * node_forget): the table is at most half full, so a probe ends at a free
 * slot. */
static uint32_t
node_of(uintptr_t a, bool create)
{
	size_t i = node_hash(a);
	for (;;) {
		uintptr_t x = nodes[i].addr;
		if (x == a)
			return (uint32_t)i + 1;
		if (x == 0)
			break;
		i = (i + 1) & node_mask;
	}
	if (!create)
		return 0;
	if (nodes_live >= max_locks) {
		warn_once(&full_locks,
		    "libparkinglot: deadlock detector: more than %zu distinct "
		    "locks; no new lock-order edges are recorded from now on "
		    "(PARKINGLOT_DEADLOCK_LOCKS raises the bound)\n",
		    max_locks);
		return 0;
	}
	nodes[i].addr = a;
	nodes[i].out = 0;
	nodes[i].in = 0;
	nodes[i].seen[0] = nodes[i].seen[1] = 0;
	nodes[i].freed = 0;
	nodes_live++;
	return (uint32_t)i + 1;
}

/* ---- call sites ------------------------------------------------------- */

struct bt {
	uintptr_t pc[BT_MAX], cfa[BT_MAX];
	unsigned n;
};

static _Unwind_Reason_Code
bt_frame(struct _Unwind_Context *ctx, void *arg)
{
	struct bt *b = arg;
	uintptr_t pc = _Unwind_GetIP(ctx);
	if (pc == 0)
		return _URC_END_OF_STACK;
	b->pc[b->n] = pc;
	b->cfa[b->n] = _Unwind_GetCFA(ctx);
	return ++b->n == BT_MAX ? _URC_END_OF_STACK : _URC_NO_REASON;
}

/* The sites of an edge: to's from the stack b, from the frame of its call
 * site pc on; from's its own call site, then the frames of b that are
 * callers of the function that took it.  b->cfa[i] is the stack pointer
 * of frame i at its call to the frame below (libgcc's CFA of the callee),
 * so the first frame whose value is at or above from's, cfa (the stack
 * pointer of the function that took it, at that call), is that function
 * itself if it is still on the stack: its callers are the frames after
 * it. */
static void
make_sites(struct pl_deadlock_edge *e, const struct bt *b, uintptr_t to_pc,
    uintptr_t from_pc, uintptr_t from_cfa)
{
	unsigned s = 0;
	while (s < b->n && b->pc[s] != to_pc)
		s++;
	e->to_site.depth = 0;
	e->from_site.depth = 0;
	if (s == b->n) { /* not found (no unwind tables): the sites alone */
		e->to_site.pc[e->to_site.depth++] = (const void *)to_pc;
		e->from_site.pc[e->from_site.depth++] = (const void *)from_pc;
		return;
	}
	for (unsigned i = s; i < b->n && e->to_site.depth < PL_DEADLOCK_DEPTH;
	     i++)
		e->to_site.pc[e->to_site.depth++] = (const void *)b->pc[i];
	e->from_site.pc[e->from_site.depth++] = (const void *)from_pc;
	unsigned j = s;
	while (j < b->n && b->cfa[j] < from_cfa)
		j++;
	for (j++; j < b->n && e->from_site.depth < PL_DEADLOCK_DEPTH; j++)
		e->from_site.pc[e->from_site.depth++] = (const void *)b->pc[j];
}

/* ---- the cycle search (graph_lock) ------------------------------------ */

/* A path from node b, entered in mode b_read, back to node a, which the
 * new edge leaves in mode a_read: the queue index + 1 of its last state,
 * whose edge enters a; 0 if there is none of at most
 * PL_DEADLOCK_MAX_LOCKS - 1 edges. */
static uint32_t
search(uint32_t a, uint32_t b, bool a_read, bool b_read)
{
	if (++stamp == 0) { /* wrapped: no node may look seen */
		for (size_t i = 0; i < node_cap; i++)
			nodes[i].seen[0] = nodes[i].seen[1] = 0;
		stamp = 1;
	}
	size_t head = 0, tail = 0;
	queue[tail++] = (struct qent){ b, 0, 0, b_read, 0, 0 };
	nodes[b - 1].seen[b_read] = stamp;
	while (head < tail) {
		uint32_t qi = (uint32_t)head;
		struct qent s = queue[head++];
		if (s.depth >= PL_DEADLOCK_MAX_LOCKS - 1)
			continue;
		for (uint32_t x = nodes[s.node - 1].out; x;
		     x = edges[x - 1].next) {
			const struct edge *e = &edges[x - 1];
			for (unsigned bit = 0; bit < 4; bit++) {
				bool fr = bit >> 1, tr = bit & 1;
				if (!(e->modes & (1u << bit)) ||
				    (s.inread && fr))
					continue;
				if (e->to == a) {
					if (tr && a_read)
						continue;
					queue[tail] = (struct qent){ a, qi + 1,
						x, tr, (uint8_t)bit,
						(uint8_t)(s.depth + 1) };
					return (uint32_t)tail + 1;
				}
				struct node *m = &nodes[e->to - 1];
				if (m->seen[tr] == stamp)
					continue;
				m->seen[tr] = stamp;
				queue[tail++] = (struct qent){ e->to, qi + 1, x,
					tr, (uint8_t)bit,
					(uint8_t)(s.depth + 1) };
			}
		}
	}
	return 0;
}

static uint64_t
cycle_hash(const struct pl_deadlock_cycle *c, uintptr_t *lo, uintptr_t *hi)
{
	unsigned n = c->nlocks, first = 0;
	*lo = *hi = (uintptr_t)c->edges[0].from;
	for (unsigned i = 1; i < n; i++) {
		uintptr_t f = (uintptr_t)c->edges[i].from;
		if (f < *lo) {
			*lo = f;
			first = i;
		}
		if (f > *hi)
			*hi = f;
	}
	uint64_t h = 0xcbf29ce484222325ull;
	for (unsigned i = 0; i < n; i++) {
		const struct pl_deadlock_edge *e = &c->edges[(first + i) % n];
		h = (h ^ (uintptr_t)e->from) * 0x100000001b3ull;
		h = (h ^ (e->from_read | e->to_read << 1)) * 0x100000001b3ull;
	}
	return h;
}

/* With graph_lock: the cycle that ends at queue entry last + 1 and the
 * new edge ne, into *c; false if it was reported before. */
static bool
take_cycle(uint32_t last, const struct edge *ne, uint32_t ne_bit,
    struct pl_deadlock_cycle *c)
{
	struct pl_deadlock_edge path[PL_DEADLOCK_MAX_LOCKS];
	unsigned n = 0;
	for (uint32_t q = last; q && queue[q - 1].parent;
	     q = queue[q - 1].parent) {
		const struct qent *s = &queue[q - 1];
		path[n] = edges[s->edge - 1].pub;
		path[n].from_read = s->bit >> 1;
		path[n].to_read = s->bit & 1;
		n++;
	}
	c->nlocks = n + 1;
	for (unsigned i = 0; i < n; i++)
		c->edges[i] = path[n - 1 - i];
	c->edges[n] = ne->pub;
	c->edges[n].from_read = ne_bit >> 1;
	c->edges[n].to_read = ne_bit & 1;
	uintptr_t lo, hi;
	uint64_t h = cycle_hash(c, &lo, &hi);
	for (size_t i = 0; i < nseen; i++)
		if (seen[i].hash == h)
			return false;
	if (nseen < SEEN_MAX)
		seen[nseen++] = (struct seen){ h, lo, hi };
	if (ncycles < CYCLES_KEPT)
		cycles[ncycles] = *c;
	ncycles++;
	return true;
}

/* ---- recording edges -------------------------------------------------- */

/* With graph_lock: record a -> b in mode bit for the held lock i of t;
 * true (and the cycle in *c) if that closed a new cycle. */
static bool
add_edge(struct held *t, unsigned i, uintptr_t b, bool b_read,
    const struct bt *bt, uintptr_t pc, struct pl_deadlock_cycle *c)
{
	const struct pli_held *h = &t->e[i];
	uintptr_t a = h->addr;
	bool a_read = h->read;
	uint32_t bit = (uint32_t)(a_read * 2 + b_read);
	bool found;
	size_t slot = eh_find(a, b, &found);
	struct edge *e;
	uint32_t x;
	if (found) {
		x = eh[slot].edge;
		e = &edges[x - 1];
		if (e->modes & (1u << bit))
			return false;
		e->modes |= 1u << bit;
		__atomic_fetch_or(&eh[slot].modes, 1u << bit, __ATOMIC_RELEASE);
	} else {
		if (__atomic_load_n(&full_edges, __ATOMIC_RELAXED))
			return false;
		uint32_t na = node_of(a, true), nb = node_of(b, true);
		if (!na || !nb)
			return false;
		if (edge_free) {
			x = edge_free;
			edge_free = edges[x - 1].next;
		} else if (edges_used < max_edges) {
			x = (uint32_t)++edges_used;
		} else {
			warn_once(&full_edges,
			    "libparkinglot: deadlock detector: more than %zu "
			    "lock-order edges; no new ones are recorded from "
			    "now on (PARKINGLOT_DEADLOCK_EDGES raises the "
			    "bound)\n",
			    max_edges);
			return false;
		}
		e = &edges[x - 1];
		memset(e, 0, sizeof *e);
		e->pub.from = (const void *)a;
		e->pub.to = (const void *)b;
		e->from = na;
		e->to = nb;
		e->modes = 1u << bit;
		e->next = nodes[na - 1].out;
		if (e->next)
			edges[e->next - 1].prev = x;
		nodes[na - 1].out = x;
		e->next_in = nodes[nb - 1].in;
		if (e->next_in)
			edges[e->next_in - 1].prev_in = x;
		nodes[nb - 1].in = x;
		edges_live++;
		eh_put(slot, a, b, x, e->modes);
	}
	/* The sites of the acquisition that made the edge, or its latest
	 * mode. */
	e->pub.tid = t->tid;
	e->pub.from_read = a_read;
	e->pub.to_read = b_read;
	make_sites(&e->pub, bt, pc, h->pc, h->cfa);
	uint32_t last = search(e->from, e->to, a_read, b_read);
	if (verbose)
		fprintf(stderr, "deadlock: edge %p -> %p mode %u: %s\n",
		    (void *)a, (void *)b, bit, last ? "cycle" : "none");
	return last && take_cycle(last, e, bit, c);
}

static void report(const struct pl_deadlock_cycle *c);

/* The locked way: some edge from a held lock to b is not known. */
static PLI_COLD void
record(struct held *t, uintptr_t b, bool b_read, uintptr_t pc)
{
	if (__atomic_load_n(&full_locks, __ATOMIC_RELAXED) &&
	    __atomic_load_n(&full_edges, __ATOMIC_RELAXED))
		return;
	t->busy = true;
	static __thread struct bt b_stack; /* too big for small stacks */
	struct bt *bt = &b_stack;
	bt->n = 0;
	_Unwind_Backtrace(bt_frame, bt);
	struct pl_deadlock_cycle found[2];
	unsigned nfound = 0;
	pli_word_lock(&graph_lock);
	for (unsigned i = 0; i < t->n; i++) {
		if (t->e[i].addr == b)
			continue;
		if (add_edge(t, i, b, b_read, bt, pc, &found[nfound]) &&
		    nfound < 2)
			nfound++;
		if (nfound == 2)
			break;
	}
	pli_word_unlock(&graph_lock);
	for (unsigned k = 0; k < nfound; k++)
		report(&found[k]);
	t->busy = false;
}

/* ---- the hooks -------------------------------------------------------- */

/*
 * A blocking acquisition (a lock, a timed lock, the retaking of a
 * condition wait's mutex) is done with before the attempt, in one call:
 * the edges from every lock the thread holds, then the lock joins the held
 * set.  It counts as held from the attempt on: a thread parked for it
 * shows it as the last lock of its set (parkstat leaves it out there:
 * tools/parkstat-parked.c), and post-lock takes it out again if the
 * attempt fails (a timeout, an error).  A try cannot block: it makes no
 * edge, and joins the set in post-lock if it succeeds.  So the hooks of
 * the common case are one call at the lock and one at the unlock, each of
 * which, with no other lock held, loads and stores within two cache lines
 * of the thread's set.
 */

static PLI_COLD void
held_full(struct held *t)
{
	warn_once(&held_warned,
	    "libparkinglot: deadlock detector: a thread holds more than %d "
	    "locks; those past the %dth are not watched\n",
	    HELD_MAX, HELD_MAX);
	t->over++;
	publish(t);
}

static inline void
push(struct held *t, const void *addr, unsigned flags, const void *pc,
    const void *cfa)
{
	unsigned n = t->n;
	if (__builtin_expect(n >= HELD_MAX, 0)) {
		held_full(t);
		return;
	}
	struct pli_held *h = &t->e[n];
	h->addr = (uintptr_t)addr;
	h->pc = (uintptr_t)pc;
	h->cfa = (uintptr_t)cfa;
	h->read = (flags & PL_CHK_READ) != 0;
	h->gen = __atomic_load_n(&cross_gen, __ATOMIC_RELAXED);
	t->n = n + 1;
	publish(t);
}

/*
 * Releases by another thread.  A pl_mutex_t or bit lock may be unlocked
 * by a thread other than the one that took it, whose set only it writes.
 * So the releasing thread, which does not find the lock in its own set,
 * marks the lock's node instead: a new cross_gen, in node.freed.  Each
 * entry of a set carries the cross_gen of its push, and a thread about to
 * record edges from its set (edges_to) first drops the entries whose lock
 * was freed since (sweep), whenever cross_gen has moved since its last
 * sweep: one relaxed load per nested lock otherwise.  An exclusive
 * release only: a reader's release may be of a read lock the thread took
 * while the detector was off, and other readers still hold theirs.  Where
 * the release races with the same thread's next attempt at the lock
 * (pushed before it is taken), that entry may go too: a missed edge,
 * never a false one.  gen wraps after 2^32 such releases, compared as a
 * difference.
 */
static PLI_COLD void
freed_elsewhere(uintptr_t addr)
{
	pli_word_lock(&graph_lock);
	uint32_t n = node_of(addr, true);
	if (n) {
		uint32_t g = __atomic_load_n(&cross_gen, __ATOMIC_RELAXED) + 1;
		nodes[n - 1].freed = g;
		__atomic_store_n(&cross_gen, g, __ATOMIC_RELAXED);
	}
	pli_word_unlock(&graph_lock);
}

static PLI_COLD void
sweep(struct held *t, uint32_t g)
{
	unsigned k = 0;
	pli_word_lock(&graph_lock);
	for (unsigned i = 0; i < t->n; i++) {
		uint32_t n = node_of(t->e[i].addr, false);
		if (n && (int32_t)(nodes[n - 1].freed - t->e[i].gen) > 0)
			continue; /* freed by another thread since */
		t->e[k++] = t->e[i];
	}
	pli_word_unlock(&graph_lock);
	t->gen = g;
	if (k != t->n) {
		t->n = k;
		publish(t);
	}
}

/* The most recent acquisition of addr leaves the set, when it is not the
 * last one (locks are mostly released in the reverse order). */
static __attribute__((noinline)) void
pop_inner(struct held *t, uintptr_t addr, bool mark)
{
	for (unsigned i = t->n; i-- > 0;) {
		if (t->e[i].addr != addr)
			continue;
		memmove(&t->e[i], &t->e[i + 1], (t->n - 1 - i) * sizeof *t->e);
		t->n--;
		publish(t);
		return;
	}
	if (t->over) { /* one of those not kept, presumably */
		t->over--;
		publish(t);
	} else if (mark) {
		freed_elsewhere(addr);
	}
}

/* mark: a release, which, if the lock is not in t, frees it for the
 * thread that took it (above). */
static inline void
pop(struct held *t, const void *addr, bool mark)
{
	unsigned n = t->n;
	if (__builtin_expect(n && t->e[n - 1].addr == (uintptr_t)addr, 1)) {
		t->n = n - 1;
		publish(t);
		return;
	}
	pop_inner(t, (uintptr_t)addr, mark);
}

/* The edges from each lock t holds to b, in the lock-free table or else
 * recorded. */
static __attribute__((noinline)) void
edges_to(struct held *t, uintptr_t b, bool b_read, uintptr_t pc)
{
	uint32_t g = __atomic_load_n(&cross_gen, __ATOMIC_RELAXED);
	if (__builtin_expect(g != t->gen, 0))
		sweep(t, g);
	for (unsigned i = 0; i < t->n; i++) {
		uintptr_t a = t->e[i].addr;
		if (a == b ||
		    edge_known(a, b, MODE_BIT((bool)t->e[i].read, b_read)))
			continue;
		record(t, b, b_read, pc);
		return;
	}
}

/* The mode, as the general ways (below) test it before anything that may
 * use the graph: a caller may have seen it on just before it was turned
 * off, and a program built before the headers tested it inline calls the
 * hooks whatever it is.  Acquire: a hook that sees the detector on may
 * use the graph (deadlock.h). */
static inline bool
checking(void)
{
	return __builtin_expect(
	    __atomic_load_n(&pl__deadlock_on, __ATOMIC_ACQUIRE) != 0, 1);
}

static inline void
pre_lock(const void *addr, unsigned flags, const void *pc, const void *cfa)
{
	if (flags & PL_CHK_TRY)
		return;
	struct held *t = my_held();
	if (t == NULL)
		return;
	if (t->n)
		edges_to(
		    t, (uintptr_t)addr, flags & PL_CHK_READ, (uintptr_t)pc);
	push(t, addr, flags, pc, cfa);
}

static inline void
post_lock(const void *addr, unsigned flags, const void *pc, const void *cfa)
{
	if (!(flags & (PL_CHK_TRY | PL_CHK_FAILED)))
		return; /* a blocking lock taken: pre-lock did it all */
	struct held *t = my_held();
	if (t == NULL)
		return;
	if (!(flags & PL_CHK_FAILED))
		push(t, addr, flags, pc, cfa); /* a try that succeeded */
	else if (!(flags & PL_CHK_TRY))
		pop(t, addr, false); /* a blocking attempt that failed */
}

/* The general ways, for the drop-in (deadlock.h) and for the hooks of
 * checked builds (below) when their fast way does not apply: each tests
 * the mode (with acquire, before the graph is used). */
void
pl__chk_pre_lock_at(
    const void *addr, unsigned flags, const void *pc, const void *cfa)
{
	if (checking())
		pre_lock(addr, flags, pc, cfa);
}

void
pl__chk_post_lock_at(
    const void *addr, unsigned flags, const void *pc, const void *cfa)
{
	if (checking())
		post_lock(addr, flags, pc, cfa);
}

void
pl__chk_pre_unlock_at(const void *addr, unsigned flags)
{
	if (!checking())
		return;
	struct held *t = my_held();
	if (t)
		pop(t, addr, !(flags & PL_CHK_READ));
}

/*
 * The hooks of checked builds (defs.h), called while the detector is on
 * (the header tests pl__deadlock_on first).  The call site is the return
 * address, into the function the inline lock was inlined into, and the
 * stack pointer at the call.  These calls are what checked mode costs
 * (BENCHMARKS.md): a blocking lock makes one (pre-lock), a try one
 * (post-lock), an unlock one.  Pre-lock and pre-unlock have a fast way for
 * the common case, a thread whose set is current and that holds no other
 * lock (pre-lock) or releases its latest (pre-unlock): a leaf that saves
 * no registers, since what costs is less the call than the instructions
 * it puts between the program's cache misses.  Anything else goes the
 * general way, which also tests the mode (a program built before the
 * headers tested it inline calls these unconditionally; with the
 * detector never on, the fast ways touch nothing but the set).
 */
__attribute__((noinline)) void
pl__chk_pre_lock(const void *addr, unsigned flags)
{
	const void *pc = __builtin_return_address(0);
	const void *cfa = __builtin_dwarf_cfa();
	struct held *t = &me;
	if (__builtin_expect(
	        t->epoch != __atomic_load_n(&epoch, __ATOMIC_RELAXED) ||
	            t->busy || t->n || (flags & PL_CHK_TRY),
	        0)) {
		pl__chk_pre_lock_at(addr, flags, pc, cfa);
		return;
	}
	push(t, addr, flags, pc, cfa);
}

__attribute__((noinline)) void
pl__chk_post_lock(const void *addr, unsigned flags)
{
	if (checking())
		post_lock(addr, flags, __builtin_return_address(0),
		    __builtin_dwarf_cfa());
}

__attribute__((noinline)) void
pl__chk_pre_unlock(const void *addr, unsigned flags)
{
	struct held *t = &me;
	if (__builtin_expect(
	        t->epoch != __atomic_load_n(&epoch, __ATOMIC_RELAXED) ||
	            t->busy,
	        0)) {
		pl__chk_pre_unlock_at(addr, flags);
		return;
	}
	pop(t, addr, !(flags & PL_CHK_READ));
}

/* ---- naming, for the reports (report_lock) ---------------------------- */

/* libdwfl's functions, from dlopen("libdw.so.1") at the first report. */
static struct {
	bool ok;
	__typeof__(&dwfl_begin) begin;
	__typeof__(&dwfl_end) end;
	__typeof__(&dwfl_report_begin) report_begin;
	__typeof__(&dwfl_report_module) report_module;
	__typeof__(&dwfl_report_end) report_end;
	__typeof__(&dwfl_addrmodule) addrmodule;
	__typeof__(&dwfl_module_addrinfo) addrinfo;
	__typeof__(&dwfl_module_getsrc) getsrc;
	__typeof__(&dwfl_lineinfo) lineinfo;
	__typeof__(&dwfl_module_info) module_info;
	__typeof__(&dwfl_module_addrdie) addrdie;
	__typeof__(&dwarf_getscopes) getscopes;
	__typeof__(&dwarf_getscopes_die) getscopes_die;
	__typeof__(&dwarf_tag) tag;
	__typeof__(&dwarf_attr) attr;
	__typeof__(&dwarf_formudata) formudata;
	__typeof__(&dwarf_getsrcfiles) getsrcfiles;
	__typeof__(&dwarf_filesrc) filesrc;
	Dwfl_Callbacks cb;
	char *debuginfo_path;
} dw;

static void dw_fill(void);

/* Once, on the formatting threads of successive reports (report_lock
 * orders them; the flag's release and acquire say so to ThreadSanitizer
 * too). */
static void
dw_load(void)
{
	static bool loaded;
	if (__atomic_load_n(&loaded, __ATOMIC_ACQUIRE))
		return;
	dw_fill();
	__atomic_store_n(&loaded, true, __ATOMIC_RELEASE);
}

static void
dw_fill(void)
{
	void *h = dlopen("libdw.so.1", RTLD_NOW | RTLD_LOCAL);
	if (h == NULL)
		return;
#define DW_SYM(field, name)                                                    \
	if ((*(void **)&dw.field = dlsym(h, name)) == NULL)                    \
		return;
	DW_SYM(begin, "dwfl_begin")
	DW_SYM(end, "dwfl_end")
	DW_SYM(report_begin, "dwfl_report_begin")
	DW_SYM(report_module, "dwfl_report_module")
	DW_SYM(report_end, "dwfl_report_end")
	DW_SYM(addrmodule, "dwfl_addrmodule")
	DW_SYM(addrinfo, "dwfl_module_addrinfo")
	DW_SYM(getsrc, "dwfl_module_getsrc")
	DW_SYM(lineinfo, "dwfl_lineinfo")
	DW_SYM(module_info, "dwfl_module_info")
	DW_SYM(addrdie, "dwfl_module_addrdie")
	DW_SYM(getscopes, "dwarf_getscopes")
	DW_SYM(getscopes_die, "dwarf_getscopes_die")
	DW_SYM(tag, "dwarf_tag")
	DW_SYM(attr, "dwarf_attr")
	DW_SYM(formudata, "dwarf_formudata")
	DW_SYM(getsrcfiles, "dwarf_getsrcfiles")
	DW_SYM(filesrc, "dwarf_filesrc")
	DW_SYM(cb.find_elf, "dwfl_linux_proc_find_elf")
	DW_SYM(cb.find_debuginfo, "dwfl_standard_find_debuginfo")
#undef DW_SYM
	dw.cb.debuginfo_path = &dw.debuginfo_path;
	dw.ok = true;
}

/*
 * This process's modules as they are mapped now, or NULL.  A module is a
 * file's private mappings and the anonymous ones right after them: its
 * .bss past the file's last page, where the global locks of a large
 * program are (libdwfl's own reading of the maps leaves that out, as
 * parkstat's namer says).
 */
static Dwfl *
dw_open(void)
{
	dw_load();
	if (!dw.ok)
		return NULL;
	static struct pli_maps_reader r;
	r.fd = open("/proc/self/maps", O_RDONLY | O_CLOEXEC);
	if (r.fd < 0)
		return NULL;
	r.pos = r.len = 0;
	Dwfl *d = dw.begin(&dw.cb);
	if (d == NULL) {
		close(r.fd);
		return NULL;
	}
	dw.report_begin(d);
	static char line[4096 + 128], cur[4096];
	uint64_t lo = 0, hi = 0;
	cur[0] = '\0';
	while (pli_maps_line(&r, line, sizeof line)) {
		uint64_t start, end;
		bool private;
		const char *p = plx_maps_parse(line, &start, &end, &private);
		bool file =
		    *p == '/' && private && strstr(p, " (deleted)") == NULL;
		if (cur[0] && start == hi &&
		    (file ? strcmp(p, cur) == 0 : *p == '\0')) {
			hi = end;
			continue;
		}
		if (cur[0])
			dw.report_module(d, cur, lo, hi);
		cur[0] = '\0';
		if (file && strlen(p) < sizeof cur) {
			strcpy(cur, p);
			lo = start;
			hi = end;
		}
	}
	if (cur[0])
		dw.report_module(d, cur, lo, hi);
	close(r.fd);
	dw.report_end(d, NULL, NULL);
	return d;
}

static const char *
base_name(const char *p)
{
	const char *s = p ? strrchr(p, '/') : NULL;
	return s ? s + 1 : p;
}

/* A lock's name: its symbol, "name" or "name+0xN", or "" if none. */
static void
name_lock(Dwfl *d, uintptr_t addr, char *out, size_t len)
{
	out[0] = '\0';
	Dwfl_Module *m = d ? dw.addrmodule(d, addr) : NULL;
	if (m) {
		GElf_Off off = 0;
		GElf_Sym sym;
		const char *name =
		    dw.addrinfo(m, addr, &off, &sym, NULL, NULL, NULL);
		if (name && *name &&
		    (sym.st_size ? off < sym.st_size : off == 0)) {
			if (off)
				snprintf(out, len, "%s+0x%lx", name,
				    (unsigned long)off);
			else
				snprintf(out, len, "%s", name);
		}
		return;
	}
	Dl_info info;
	ElfW(Sym) *sym = NULL;
	if (dladdr1((void *)addr, &info, (void **)&sym, RTLD_DL_SYMENT) &&
	    info.dli_sname && sym &&
	    addr - (uintptr_t)info.dli_saddr <
	        (sym->st_size ? sym->st_size : 1)) {
		uintptr_t off = addr - (uintptr_t)info.dli_saddr;
		if (off)
			snprintf(out, len, "%s+0x%lx", info.dli_sname,
			    (unsigned long)off);
		else
			snprintf(out, len, "%s", info.dli_sname);
	}
}

/* The line of the program's own function that at belongs to, where at
 * is in code inlined into it (the inline lock operations of the headers
 * are): the call line of the outermost inlined scope.  NULL if at is in
 * no inlined code, or nothing says.  As in parkstat (namer_frame), the
 * innermost inlined scope comes from getscopes and those around it from
 * getscopes_die: getscopes goes on past an inlined scope with those of
 * the inlined function's definition. */
static const char *
inlined_call(Dwfl_Module *m, Dwarf_Addr at, int *line)
{
	Dwarf_Addr bias;
	Dwarf_Die *cu = dw.addrdie(m, at, &bias);
	Dwarf_Die *scopes = NULL, *around = NULL;
	int n = cu ? dw.getscopes(cu, at - bias, &scopes) : -1;
	int inner = -1, outer = -1;
	for (int i = 0; i < n && inner < 0; i++)
		if (dw.tag(&scopes[i]) == DW_TAG_inlined_subroutine)
			inner = i;
	int k = inner >= 0 ? dw.getscopes_die(&scopes[inner], &around) : -1;
	for (int i = 0; i < k; i++)
		if (dw.tag(&around[i]) == DW_TAG_inlined_subroutine)
			outer = i;
	const char *src = NULL;
	Dwarf_Attribute a;
	Dwarf_Word file, l;
	Dwarf_Files *files;
	size_t nfiles;
	if (outer >= 0 &&
	    dw.formudata(dw.attr(&around[outer], DW_AT_call_file, &a), &file) ==
	        0 &&
	    dw.formudata(dw.attr(&around[outer], DW_AT_call_line, &a), &l) ==
	        0 &&
	    dw.getsrcfiles(cu, &files, &nfiles) == 0 && file < nfiles) {
		src = dw.filesrc(files, file, NULL, NULL);
		*line = (int)l;
	}
	free(around);
	free(scopes);
	return src && *line > 0 ? src : NULL;
}

/* A frame of a site: "fn+0xN (file:line)", "fn+0xN (module)" or hex. */
static void
name_frame(Dwfl *d, uintptr_t pc, char *out, size_t len)
{
	uintptr_t at = pc ? pc - 1 : pc; /* the call, before its return */
	Dwfl_Module *m = d ? dw.addrmodule(d, at) : NULL;
	if (m) {
		GElf_Off off = 0;
		GElf_Sym sym;
		const char *name =
		    dw.addrinfo(m, at, &off, &sym, NULL, NULL, NULL);
		const char *mod =
		    dw.module_info(m, NULL, NULL, NULL, NULL, NULL, NULL, NULL);
		int lineno = 0;
		const char *src = inlined_call(m, at, &lineno);
		if (src == NULL) {
			Dwfl_Line *line = dw.getsrc(m, at);
			src = line
			    ? dw.lineinfo(line, NULL, &lineno, NULL, NULL, NULL)
			    : NULL;
		}
		char fn[256];
		if (name && *name)
			snprintf(fn, sizeof fn, "%s+0x%lx", name,
			    (unsigned long)(off + 1));
		else
			snprintf(fn, sizeof fn, "0x%lx", (unsigned long)pc);
		if (src && lineno > 0)
			snprintf(out, len, "%s (%s:%d)", fn, src, lineno);
		else
			snprintf(out, len, "%s (%s)", fn,
			    mod ? base_name(mod) : "?");
		return;
	}
	Dl_info info;
	if (dladdr((void *)at, &info) && info.dli_sname)
		snprintf(out, len, "%s+0x%lx (%s)", info.dli_sname,
		    (unsigned long)(pc - (uintptr_t)info.dli_saddr),
		    base_name(info.dli_fname));
	else if (info.dli_fname)
		snprintf(out, len, "0x%lx (%s)", (unsigned long)pc,
		    base_name(info.dli_fname));
	else
		snprintf(out, len, "0x%lx", (unsigned long)pc);
}

static char report_buf[32768];
static size_t report_len;

static void __attribute__((format(printf, 1, 2))) out(const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	int n = vsnprintf(
	    report_buf + report_len, sizeof report_buf - report_len, fmt, ap);
	va_end(ap);
	if (n > 0)
		report_len += (size_t)n < sizeof report_buf - report_len
		    ? (size_t)n
		    : sizeof report_buf - report_len - 1;
}

static void
out_lock(Dwfl *d, const void *addr, bool read)
{
	char name[256];
	name_lock(d, (uintptr_t)addr, name, sizeof name);
	if (name[0])
		out("%s (%p)%s", name, addr, read ? " for reading" : "");
	else
		out("%p%s", addr, read ? " for reading" : "");
}

static void
out_site(Dwfl *d, const struct pl_deadlock_site *s)
{
	char f[512];
	for (unsigned i = 0; i < s->depth; i++) {
		name_frame(d, (uintptr_t)s->pc[i], f, sizeof f);
		out("      #%u %s\n", i, f);
	}
}

/* The text of the report of c into report_buf; with libdw if dw. */
static void
format(const struct pl_deadlock_cycle *c, bool dw_ok)
{
	Dwfl *d = dw_ok ? dw_open() : NULL;
	report_len = 0;
	out("libparkinglot: lock-order inversion (potential deadlock): a "
	    "cycle of %u locks\n",
	    c->nlocks);
	for (unsigned i = 0; i < c->nlocks; i++) {
		const struct pl_deadlock_edge *e = &c->edges[i];
		out("  thread %ld took ", e->tid);
		out_lock(d, e->to, e->to_read);
		out("\n    while it held ");
		out_lock(d, e->from, e->from_read);
		out("%s\n",
		    i + 1 == c->nlocks ? " (this closed the cycle)" : "");
		out("    ");
		out_lock(d, e->from, false);
		out(" was taken at:\n");
		out_site(d, &e->from_site);
		out("    ");
		out_lock(d, e->to, false);
		out(" was taken at:\n");
		out_site(d, &e->to_site);
	}
	if (d)
		dw.end(d);
}

/* libdw needs far more stack than a lock operation of a thread with a
 * small stack can give (a 128 KiB stack overflows): the report is formatted
 * on a thread of its own, whose lock operations are not watched (busy). */
#define FORMAT_STACK ((size_t)4 << 20)

static void *
format_thread(void *arg)
{
	me.busy = true;
	format(arg, true);
	return NULL;
}

/* Format the cycle, and print it or give it to the handler; abort after
 * it in abort mode.  With no lock but report_lock. */
static void
report(const struct pl_deadlock_cycle *c)
{
	pli_word_lock(&report_lock);
	pthread_attr_t attr;
	pthread_t t;
	bool done = false;
	if (pthread_attr_init(&attr) == 0) {
		if (pthread_attr_setstacksize(&attr, FORMAT_STACK) == 0 &&
		    pthread_create(&t, &attr, format_thread, (void *)c) == 0)
			done = pthread_join(t, NULL) == 0;
		pthread_attr_destroy(&attr);
	}
	if (!done) /* no thread: names from dladdr, which needs little */
		format(c, false);
	pl_deadlock_handler_t *h = handler;
	if (h) {
		me.handling = true;
		h(c, report_buf, handler_arg);
		me.handling = false;
	} else {
		int fd = log_path[0]
		    ? open(log_path, O_WRONLY | O_APPEND | O_CREAT | O_CLOEXEC,
		          0600)
		    : -1;
		(void)!write(
		    fd >= 0 ? fd : STDERR_FILENO, report_buf, report_len);
		if (fd >= 0)
			close(fd);
	}
	bool abort_now = __atomic_load_n(&pl__deadlock_on, __ATOMIC_RELAXED) ==
	    PL_DEADLOCK_ABORT;
	if (abort_now) {
		static const char msg[] = "libparkinglot: "
		                          "PARKINGLOT_DEADLOCK=abort: "
		                          "aborting\n";
		(void)!write(STDERR_FILENO, msg, sizeof msg - 1);
		abort();
	}
	pli_word_unlock(&report_lock);
}

/* ---- the API ---------------------------------------------------------- */

/* PARKINGLOT_DEADLOCK_LOCKS or _EDGES: a whole number in bounds, else
 * dflt (with a warning if it is set but malformed). */
static size_t
env_bound(const char *name, size_t dflt)
{
	const char *v = getenv(name);
	if (v == NULL || *v == '\0')
		return dflt;
	char *end;
	int saved = errno;
	errno = 0;
	unsigned long n = strtoul(v, &end, 10);
	bool bad = *v < '0' || *v > '9' || *end != '\0' || errno != 0 ||
	    n < BOUND_MIN || n > BOUND_MAX;
	errno = saved;
	if (bad) {
		fprintf(stderr,
		    "libparkinglot: ignoring %s=\"%s\": not a whole number "
		    "from %u to %u (keeping %zu)\n",
		    name, v, BOUND_MIN, BOUND_MAX, dflt);
		return dflt;
	}
	return n;
}

static size_t
pow2_at_least(size_t n)
{
	size_t p = 1;
	while (p < n)
		p <<= 1;
	return p;
}

static void *
map(size_t bytes)
{
	void *p = mmap(NULL, bytes, PROT_READ | PROT_WRITE,
	    MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
	return p == MAP_FAILED ? NULL : p;
}

static void
atfork_child(void)
{
	/* Another thread of the parent may have held them. */
	graph_lock = 0;
	report_lock = 0;
	init_lock = 0;
}

/* With init_lock: the graph, once.  Pages are touched as they are used,
 * so the memory in use grows with the graph up to its bounds. */
static int
graph_init(void)
{
	if (nodes)
		return 0;
	size_t locks = env_bound("PARKINGLOT_DEADLOCK_LOCKS", LOCKS_DEFAULT);
	size_t nedges = env_bound("PARKINGLOT_DEADLOCK_EDGES", EDGES_DEFAULT);
	size_t ncap = pow2_at_least(2 * locks);
	size_t ecap = pow2_at_least(2 * nedges);
	struct node *n = map(ncap * sizeof *n);
	struct edge *e = map(nedges * sizeof *e);
	struct eslot *h = map(ecap * sizeof *h);
	struct qent *q = map((2 * ncap + 1) * sizeof *q);
	if (!n || !e || !h || !q) {
		if (n)
			munmap(n, ncap * sizeof *n);
		if (e)
			munmap(e, nedges * sizeof *e);
		if (h)
			munmap(h, ecap * sizeof *h);
		if (q)
			munmap(q, (2 * ncap + 1) * sizeof *q);
		return ENOMEM;
	}
	max_locks = locks;
	max_edges = nedges;
	node_cap = ncap;
	node_mask = ncap - 1;
	edges = e;
	eh = h;
	eh_mask = ecap - 1;
	queue = q;
	pthread_atfork(NULL, NULL, atfork_child);
	__atomic_store_n(&nodes, n, __ATOMIC_RELEASE);
	return 0;
}

int
pl_deadlock_set(int mode)
{
	if (mode != PL_DEADLOCK_OFF && mode != PL_DEADLOCK_REPORT &&
	    mode != PL_DEADLOCK_ABORT)
		return EINVAL;
	int saved = errno;
	int err = 0;
	pli_word_lock(&init_lock);
	if (mode != PL_DEADLOCK_OFF)
		err = graph_init();
	if (err == 0) {
		int old = __atomic_load_n(&pl__deadlock_on, __ATOMIC_RELAXED);
		/* A new epoch at each turning on: held sets from before are
		 * stale (their unlocks were not seen). */
		if (old == PL_DEADLOCK_OFF && mode != PL_DEADLOCK_OFF)
			__atomic_store_n(&epoch, epoch + 1, __ATOMIC_RELAXED);
		__atomic_store_n(&pl__deadlock_on, mode, __ATOMIC_RELEASE);
	}
	pli_word_unlock(&init_lock);
	errno = saved;
	return err;
}

int
pl_deadlock_get(void)
{
	return __atomic_load_n(&pl__deadlock_on, __ATOMIC_RELAXED);
}

size_t
pl_deadlock_cycles(struct pl_deadlock_cycle *out_cycles, size_t max)
{
	if (__atomic_load_n(&nodes, __ATOMIC_ACQUIRE) == NULL)
		return 0;
	pli_word_lock(&graph_lock);
	size_t n = ncycles;
	for (size_t i = 0; i < max && i < n && i < CYCLES_KEPT; i++)
		out_cycles[i] = cycles[i];
	pli_word_unlock(&graph_lock);
	return n;
}

/* Under report_lock, so that a report in progress ends with the handler
 * it began with; from within the handler, whose thread holds the lock
 * already, at once. */
void
pl_deadlock_set_handler(pl_deadlock_handler_t *h, void *arg)
{
	if (me.handling) {
		handler = h;
		handler_arg = arg;
		return;
	}
	pli_word_lock(&report_lock);
	handler = h;
	handler_arg = arg;
	pli_word_unlock(&report_lock);
}

static inline bool
in_range(uintptr_t x, uintptr_t lo, uintptr_t hi)
{
	return x >= lo && x < hi;
}

/* With graph_lock: edge x out of the graph: out of the lists of its two
 * nodes and of the lookup table, onto the free list. */
static void
edge_drop(uint32_t x)
{
	struct edge *e = &edges[x - 1];
	if (e->prev)
		edges[e->prev - 1].next = e->next;
	else
		nodes[e->from - 1].out = e->next;
	if (e->next)
		edges[e->next - 1].prev = e->prev;
	if (e->prev_in)
		edges[e->prev_in - 1].next_in = e->next_in;
	else
		nodes[e->to - 1].in = e->next_in;
	if (e->next_in)
		edges[e->next_in - 1].prev_in = e->prev_in;
	bool found;
	size_t s =
	    eh_find((uintptr_t)e->pub.from, (uintptr_t)e->pub.to, &found);
	if (found) {
		__atomic_store_n(&eh[s].key, TOMB, __ATOMIC_RELEASE);
		eh_tombs++;
	}
	e->next = edge_free;
	edge_free = x;
	edges_live--;
}

/*
 * With graph_lock: node n (index + 1) out of the graph, with its edges.
 * Its slot is freed, and the nodes after it in its run that would no
 * longer be found from their home slot are moved back (deletion without
 * marks, for linear probing), their edges renumbered: so lookups stay
 * short however many locks come and go.  The node moved into slot n - 1,
 * if any, is one that came after it.
 */
static void
node_forget(uint32_t n)
{
	size_t i = n - 1;
	while (nodes[i].out)
		edge_drop(nodes[i].out);
	while (nodes[i].in)
		edge_drop(nodes[i].in);
	nodes[i].addr = 0;
	nodes_live--;
	for (size_t j = (i + 1) & node_mask; nodes[j].addr;
	     j = (j + 1) & node_mask) {
		size_t h = node_hash(nodes[j].addr);
		/* Stays if its home is in (i, j], cyclically. */
		if (i <= j ? i < h && h <= j : i < h || h <= j)
			continue;
		nodes[i] = nodes[j];
		nodes[j].addr = 0;
		for (uint32_t x = nodes[i].out; x; x = edges[x - 1].next)
			edges[x - 1].from = (uint32_t)i + 1;
		for (uint32_t x = nodes[i].in; x; x = edges[x - 1].next_in)
			edges[x - 1].to = (uint32_t)i + 1;
		i = j;
	}
}

void
pl_lock_forget(const void *addr, size_t len)
{
	if (__atomic_load_n(&nodes, __ATOMIC_ACQUIRE) == NULL || len == 0)
		return;
	uintptr_t lo = (uintptr_t)addr;
	uintptr_t hi = lo + len < lo ? UINTPTR_MAX : lo + len;
	pli_word_lock(&graph_lock);
	if (hi - lo <= max_locks / 4) {
		/* A small range (an object's locks): each of its addresses
		 * looked up. */
		for (uintptr_t a = lo ? lo : 1; a < hi; a++) {
			uint32_t n = node_of(a, false);
			if (n)
				node_forget(n);
		}
	} else {
		/* A node moved into slot n is looked at again. */
		for (size_t n = 0; n < node_cap;)
			if (nodes[n].addr && in_range(nodes[n].addr, lo, hi))
				node_forget((uint32_t)n + 1);
			else
				n++;
	}
	/* Cycles through the range may be found again, for new locks. */
	for (size_t i = 0; i < nseen;)
		if (seen[i].lo < hi && seen[i].hi >= lo)
			seen[i] = seen[--nseen];
		else
			i++;
	if (eh_tombs > (eh_mask + 1) / 4)
		eh_rebuild();
	pli_word_unlock(&graph_lock);
}

/* At load: PARKINGLOT_DEADLOCK. */
__attribute__((constructor)) static void
deadlock_load(void)
{
	const char *log = getenv("PARKINGLOT_DEADLOCK_LOG");
	if (log && strlen(log) < sizeof log_path)
		strcpy(log_path, log);
	const char *v = getenv("PARKINGLOT_DEADLOCK");
	if (v == NULL || *v == '\0' || strcmp(v, "off") == 0)
		return;
	int mode = strcmp(v, "report") == 0 ? PL_DEADLOCK_REPORT
	    : strcmp(v, "abort") == 0       ? PL_DEADLOCK_ABORT
	                                    : -1;
	if (mode < 0) {
		fprintf(stderr,
		    "libparkinglot: PARKINGLOT_DEADLOCK=\"%s\": unknown value "
		    "(use off, report or abort); the deadlock detector stays "
		    "off\n",
		    v);
		return;
	}
	int err = pl_deadlock_set(mode);
	if (err)
		fprintf(stderr,
		    "libparkinglot: PARKINGLOT_DEADLOCK=%s: %s; the deadlock "
		    "detector stays off\n",
		    v, strerror(err));
}
