/* SPDX-License-Identifier: MIT */
/*
 * Tests of pl_cond_t: signal and broadcast with nobody waiting, strict
 * alternation (ping-pong), a bounded queue, broadcast requeueing onto the
 * mutex (no thundering herd), signal semantics, timed waits (deadlines,
 * EINVAL, timing out after a requeue), misuse detection, and
 * pl_cond_clockwait_any with a lock of another kind.
 *
 * Waiters park on the condition variable's address; a signal or broadcast
 * made while the mutex is held moves them onto the mutex's address, where
 * count_parked(&mutex) sees them.  Every wait wrapper below counts how
 * many times pl_cond_wait returned, so that a spurious or duplicate wakeup
 * shows up as a count other than the expected one.
 */
#define _GNU_SOURCE /* tu_pin */
#include <fcntl.h>
#include <inttypes.h>

#include "testutil.h"

TU_CRITERION_MAIN_SERIAL()

TestSuite(cond, .timeout = 30);

static unsigned char
cstate(const pl_cond_t *c)
{
	return __atomic_load_n(&c->state, __ATOMIC_RELAXED);
}

static unsigned char
mstate(const pl_mutex_t *m)
{
	return __atomic_load_n(&m->state, __ATOMIC_RELAXED);
}

#define MUTEX_LOCKED_PARKED (PL_MUTEX_LOCKED | PL_MUTEX_PARKED)

struct try_ctx {
	pl_mutex_t *m;
	bool got;
};

static void *
try_main(void *arg)
{
	struct try_ctx *t = arg;
	t->got = pl_mutex_trylock(t->m);
	if (t->got)
		pl_mutex_unlock(t->m);
	return NULL;
}

/* Whether another thread can take m right now (it releases it at once). */
static bool
trylock_from_other_thread(pl_mutex_t *m)
{
	struct try_ctx t = { m, false };
	tu_join(tu_spawn(try_main, &t));
	return t.got;
}

/* ------------------------------------------------------------------ */
/* 1. no waiters: signal and broadcast touch only the byte             */

struct guarded {
	unsigned char before;
	pl_cond_t c;
	unsigned char after;
};

#define GUARD ((unsigned char)0xa5)

static void
check_guarded(const struct guarded *g, const char *when)
{
	cr_assert(g->before == GUARD && g->after == GUARD,
	    "%s: guard bytes %#x %#x, expected %#x: a neighbour was written",
	    when, g->before, g->after, GUARD);
	cr_assert(cstate(&g->c) == 0, "%s: cond byte %u, expected 0", when,
	    cstate(&g->c));
}

Test(cond, no_waiters_signal_and_broadcast_touch_only_the_byte, .timeout = 30)
{
	static struct guarded g;
	pl_mutex_t m = PL_MUTEX_INITIALIZER;
	cr_assert(sizeof(pl_cond_t) == 1);

	memset(&g, GUARD, sizeof(g));
	pl_cond_init(&g.c);
	check_guarded(&g, "after pl_cond_init");

	for (int i = 0; i < 1000; i++) {
		cr_assert(!pl_cond_signal(&g.c),
		    "pl_cond_signal with no waiter returned true");
		cr_assert(pl_cond_broadcast(&g.c) == 0,
		    "pl_cond_broadcast with no waiter returned non-zero");
	}
	check_guarded(&g, "after signal/broadcast with no waiter");
	cr_assert(count_parked(&g.c) == 0);

	/* A waiter comes and goes (it times out): the byte is 0 again, and
	 * signal and broadcast are again no-ops. */
	pl_mutex_lock(&m);
	struct timespec dl = tu_deadline_in(1 * TU_MS);
	cr_assert(pl_cond_timedwait(&g.c, &m, &dl) == ETIMEDOUT);
	cr_assert(pl_mutex_is_locked(&m));
	pl_mutex_unlock(&m);
	check_guarded(&g, "after a waiter timed out");
	cr_assert(!pl_cond_signal(&g.c));
	cr_assert(pl_cond_broadcast(&g.c) == 0);
	check_guarded(&g, "after a waiter timed out and signal/broadcast");
	cr_assert(mstate(&m) == 0);

	/* The static initializer. */
	pl_cond_t s = PL_COND_INITIALIZER;
	cr_assert(cstate(&s) == 0);
	cr_assert(!pl_cond_signal(&s) && pl_cond_broadcast(&s) == 0);
	cr_assert(cstate(&s) == 0);
}

/* ------------------------------------------------------------------ */
/* 2. ping-pong: strict alternation, no lost wakeup                    */

enum { PP_ROUNDS = 10000 };

struct pingpong {
	pl_mutex_t m;
	pl_cond_t turn_is[2]; /* turn_is[i]: signalled when turn becomes i */
	int turn;             /* protected by m */
	long seq;             /* protected by m */
	long bad_order;       /* protected by m */
	long waits[2];        /* pl_cond_wait returns, per thread */
	long spurious[2];     /* ... that found it was not our turn */
	size_t finished;      /* atomic */
};

/* Thread me of the two (a member of a tu_group). */
static void
pp_main(void *shared, int me)
{
	struct pingpong *p = shared;
	for (long i = 0; i < PP_ROUNDS; i++) {
		pl_mutex_lock(&p->m);
		while (p->turn != me) {
			pl_cond_wait(&p->turn_is[me], &p->m);
			p->waits[me]++;
			/* Only the other thread gives us the turn, and it
			 * signals only when it does: any other return is a
			 * spurious wakeup. */
			if (p->turn != me)
				p->spurious[me]++;
		}
		if (p->seq != 2 * i + me)
			p->bad_order++;
		p->seq++;
		p->turn = 1 - me;
		pl_cond_signal(&p->turn_is[1 - me]);
		pl_mutex_unlock(&p->m);
	}
	__atomic_fetch_add(&p->finished, 1, __ATOMIC_RELEASE);
}

Test(cond, ping_pong_10000_rounds, .timeout = 30)
{
	static struct pingpong p;
	static struct tu_group g;
	memset(&p, 0, sizeof(p));
	tu_group_start(&g, pp_main, &p, 2);
	/* A lost wakeup leaves both threads waiting for ever. */
	cr_assert(tu_wait_size_ge(&p.finished, 2, 20 * TU_SEC),
	    "%zu of 2 threads finished in 20 s (seq %ld): a lost wakeup?",
	    __atomic_load_n(&p.finished, __ATOMIC_ACQUIRE),
	    __atomic_load_n(&p.seq, __ATOMIC_RELAXED));
	tu_group_join(&g);
	cr_assert(p.seq == 2L * PP_ROUNDS, "seq %ld", p.seq);
	cr_assert(p.bad_order == 0, "%ld turns out of order", p.bad_order);
	cr_assert(p.spurious[0] == 0 && p.spurious[1] == 0,
	    "spurious wakeups: %ld and %ld", p.spurious[0], p.spurious[1]);
	cr_assert(p.waits[0] + p.waits[1] > 0,
	    "nobody ever waited: the test is void");
	cr_assert(mstate(&p.m) == 0, "mutex state %u", mstate(&p.m));
	cr_assert(cstate(&p.turn_is[0]) == 0 && cstate(&p.turn_is[1]) == 0);
	cr_assert(count_parked(&p.m) == 0);
	cr_assert(count_parked(&p.turn_is[0]) == 0);
	cr_assert(count_parked(&p.turn_is[1]) == 0);
}

/* ------------------------------------------------------------------ */
/* 3. bounded queue: 4 producers, 4 consumers                          */

enum { QP = 4, QC = 4, QCAP = 8, QITEMS = 20000, QTOTAL = QP * QITEMS };

struct bq {
	pl_mutex_t m;
	pl_cond_t not_full, not_empty;
	unsigned buf[QCAP]; /* protected by m */
	unsigned head, count;
	unsigned taken;
	long full_waits, empty_waits;
	unsigned char seen[QTOTAL]; /* atomic increments */
	long order_errors;          /* atomic */
	size_t finished;            /* atomic */
};

/* Producer idx pushes its QITEMS items, numbered from idx * QITEMS. */
static void
bq_produce(struct bq *q, unsigned idx)
{
	for (unsigned i = 0; i < QITEMS; i++) {
		pl_mutex_lock(&q->m);
		while (q->count == QCAP) {
			pl_cond_wait(&q->not_full, &q->m);
			q->full_waits++;
		}
		q->buf[(q->head + q->count) % QCAP] = idx * QITEMS + i;
		q->count++;
		pl_cond_signal(&q->not_empty);
		pl_mutex_unlock(&q->m);
	}
}

static void
bq_consume(struct bq *q)
{
	long last[QP];
	for (int p = 0; p < QP; p++)
		last[p] = -1;
	for (;;) {
		pl_mutex_lock(&q->m);
		while (q->count == 0 && q->taken < QTOTAL) {
			pl_cond_wait(&q->not_empty, &q->m);
			q->empty_waits++;
		}
		if (q->count == 0) { /* everything was taken */
			pl_mutex_unlock(&q->m);
			break;
		}
		unsigned item = q->buf[q->head];
		q->head = (q->head + 1) % QCAP;
		q->count--;
		if (++q->taken == QTOTAL)
			pl_cond_broadcast(&q->not_empty); /* the others stop */
		pl_cond_signal(&q->not_full);
		pl_mutex_unlock(&q->m);

		if (item >= QTOTAL) {
			__atomic_fetch_add(
			    &q->order_errors, 1, __ATOMIC_RELAXED);
			continue;
		}
		__atomic_fetch_add(&q->seen[item], 1, __ATOMIC_RELAXED);
		/* The queue is FIFO and each producer pushes in order, so
		 * any one consumer sees each producer's items in order. */
		unsigned p = item / QITEMS;
		long k = (long)(item % QITEMS);
		if (k <= last[p])
			__atomic_fetch_add(
			    &q->order_errors, 1, __ATOMIC_RELAXED);
		last[p] = k;
	}
}

/* Members 0 .. QP - 1 produce, the others consume. */
static void
bq_main(void *shared, int idx)
{
	struct bq *q = shared;
	if (idx < QP)
		bq_produce(q, (unsigned)idx);
	else
		bq_consume(q);
	__atomic_fetch_add(&q->finished, 1, __ATOMIC_RELEASE);
}

Test(cond, bounded_queue_4_producers_4_consumers, .timeout = 60)
{
	static struct bq q;
	static struct tu_group g;
	memset(&q, 0, sizeof(q));
	tu_group_start_together(&g, bq_main, &q, QP + QC);
	cr_assert(tu_wait_size_ge(&q.finished, QP + QC, 40 * TU_SEC),
	    "%zu of %d threads finished in 40 s (%u of %d items taken): a lost "
	    "wakeup?",
	    __atomic_load_n(&q.finished, __ATOMIC_ACQUIRE), QP + QC,
	    __atomic_load_n(&q.taken, __ATOMIC_RELAXED), QTOTAL);
	tu_group_join(&g);

	cr_assert(q.taken == QTOTAL && q.count == 0, "taken %u, left %u",
	    q.taken, q.count);
	for (unsigned i = 0; i < QTOTAL; i++)
		if (q.seen[i] != 1)
			cr_assert_fail("item %u (producer %u, #%u) consumed %u "
			               "times",
			    i, i / QITEMS, i % QITEMS, q.seen[i]);
	cr_assert(q.order_errors == 0, "%ld items out of order or corrupt",
	    q.order_errors);
	cr_assert(q.full_waits + q.empty_waits > 0,
	    "nobody ever waited: the test is void");
	cr_assert(mstate(&q.m) == 0, "mutex state %u", mstate(&q.m));
	cr_assert(cstate(&q.not_full) == 0 && cstate(&q.not_empty) == 0,
	    "cond bytes %u %u with nobody waiting", cstate(&q.not_full),
	    cstate(&q.not_empty));
	cr_assert(count_parked(&q.not_full) == 0);
	cr_assert(count_parked(&q.not_empty) == 0);
	cr_assert(count_parked(&q.m) == 0);
}

/* ------------------------------------------------------------------ */
/* 4. broadcast to 64 waiters                                          */

enum { BW = 64 };

struct bcast {
	pl_mutex_t m;
	pl_cond_t c;
	int go;       /* protected by m */
	int counter;  /* protected by m */
	int inside;   /* atomic: a waiter is between return and unlock */
	int overlaps; /* atomic: two were there at once */
	int wait_returns[BW]; /* written by waiter i only */
	bool held_on_return[BW];
	size_t done; /* atomic */
};

static void
bw_main(void *shared, int idx)
{
	struct bcast *b = shared;
	bool held = true;
	pl_mutex_lock(&b->m);
	while (!b->go) {
		pl_cond_wait(&b->c, &b->m);
		b->wait_returns[idx]++;
		held = held && pl_mutex_is_locked(&b->m);
	}
	if (__atomic_exchange_n(&b->inside, 1, __ATOMIC_ACQ_REL))
		__atomic_fetch_add(&b->overlaps, 1, __ATOMIC_RELAXED);
	b->counter++;
	b->held_on_return[idx] = held;
	__atomic_store_n(&b->inside, 0, __ATOMIC_RELEASE);
	pl_mutex_unlock(&b->m);
	__atomic_fetch_add(&b->done, 1, __ATOMIC_RELEASE);
}

static void
run_broadcast(bool mutex_held)
{
	static struct bcast b;
	static struct tu_group g;
	memset(&b, 0, sizeof(b));
	tu_group_start(&g, bw_main, &b, BW);
	/* All 64 verifiably waiting. */
	ASSERT_PARKED(&b.c, BW);
	cr_assert(cstate(&b.c) == PL_COND_WAITERS,
	    "cond byte %u with %d "
	    "waiters",
	    cstate(&b.c), BW);

	size_t n, on_c, on_m;
	unsigned char ms, cs;
	size_t early;
	struct pl_stats s0, s1;
	pl_stats_get(&s0);
	pl_mutex_lock(&b.m);
	b.go = 1;
	if (mutex_held) {
		n = pl_cond_broadcast(&b.c);
		/* Snapshot while still holding the mutex, assert after. */
		on_c = count_parked(&b.c);
		on_m = count_parked(&b.m);
		ms = mstate(&b.m);
		cs = cstate(&b.c);
		early = __atomic_load_n(&b.done, __ATOMIC_ACQUIRE);
		pl_mutex_unlock(&b.m);
		cr_assert(
		    n == BW, "broadcast returned %zu, expected %d", n, BW);
		cr_assert(on_c == 0, "%zu waiter(s) left on the cond", on_c);
		cr_assert(on_m == BW,
		    "%zu waiter(s) on the mutex, expected "
		    "all %d moved there (none woken while it is held)",
		    on_m, BW);
		cr_assert(ms == MUTEX_LOCKED_PARKED,
		    "mutex state %u, expected "
		    "LOCKED|PARKED",
		    ms);
		cr_assert(cs == 0, "cond byte %u after broadcast", cs);
		cr_assert(early == 0,
		    "%zu waiter(s) returned while the mutex "
		    "was held",
		    early);
	} else {
		pl_mutex_unlock(&b.m);
		n = pl_cond_broadcast(&b.c);
		on_c = count_parked(&b.c);
		cr_assert(
		    n == BW, "broadcast returned %zu, expected %d", n, BW);
		cr_assert(on_c == 0, "%zu waiter(s) left on the cond", on_c);
	}

	cr_assert(tu_wait_size_ge(&b.done, BW, 20 * TU_SEC),
	    "%zu of %d waiters returned after the broadcast",
	    __atomic_load_n(&b.done, __ATOMIC_ACQUIRE), BW);
	tu_group_join(&g);
	cr_assert(b.counter == BW, "counter %d, expected %d", b.counter, BW);
	cr_assert(b.overlaps == 0,
	    "%d waiters returned while another held "
	    "the mutex",
	    b.overlaps);
	/* No herd: after the broadcast each waiter was woken exactly once
	 * and none of them had to park again (on the mutex). */
	pl_stats_get(&s1);
	cr_assert(s1.unparks - s0.unparks == BW,
	    "%llu wake-ups for %d "
	    "waiters",
	    (unsigned long long)(s1.unparks - s0.unparks), BW);
	cr_assert(s1.parks == s0.parks, "%llu parks after the broadcast",
	    (unsigned long long)(s1.parks - s0.parks));
	cr_assert(s1.requeues - s0.requeues == (mutex_held ? BW : BW - 1),
	    "%llu waiters moved onto the mutex",
	    (unsigned long long)(s1.requeues - s0.requeues));
	for (int i = 0; i < BW; i++) {
		cr_assert(b.wait_returns[i] == 1,
		    "waiter %d: pl_cond_wait "
		    "returned %d times, expected once",
		    i, b.wait_returns[i]);
		cr_assert(b.held_on_return[i],
		    "waiter %d returned without "
		    "the mutex",
		    i);
	}
	cr_assert(mstate(&b.m) == 0, "mutex state %u at the end", mstate(&b.m));
	cr_assert(cstate(&b.c) == 0, "cond byte %u at the end", cstate(&b.c));
	cr_assert(count_parked(&b.m) == 0 && count_parked(&b.c) == 0);
}

TU_TEST_PAIR(cond, broadcast_64_without_mutex,
    broadcast_64_with_mutex_held_requeues_all, 30, run_broadcast)

/* ------------------------------------------------------------------ */
/* 5. signal: true iff a waiter was removed, one per call              */

enum { SW = 3, SEQ_ROUNDS = 10 };

struct sig {
	pl_mutex_t m;
	pl_cond_t c;
	int permits;           /* protected by m */
	int order[SEQ_ROUNDS]; /* protected by m: who returned, in order */
	int nreturned;         /* protected by m */
	int wait_returns[SEQ_ROUNDS]; /* written by waiter i only */
	int done[SEQ_ROUNDS];         /* atomic */
	size_t ndone;                 /* atomic */
	struct tu_group waiters;      /* sig_waiter, waiter i the i-th */
};

static void
sig_waiter(void *shared, int idx)
{
	struct sig *s = shared;
	pl_mutex_lock(&s->m);
	while (s->permits == 0) {
		pl_cond_wait(&s->c, &s->m);
		s->wait_returns[idx]++;
	}
	s->permits--;
	s->order[s->nreturned++] = idx;
	pl_mutex_unlock(&s->m);
	__atomic_store_n(&s->done[idx], 1, __ATOMIC_RELEASE);
	__atomic_fetch_add(&s->ndone, 1, __ATOMIC_RELEASE);
}

static struct sig *
sig_new(void)
{
	static struct sig s;
	memset(&s, 0, sizeof(s));
	tu_group_init(&s.waiters, sig_waiter, &s);
	return &s;
}

/* Start one more waiter, after which `parked` must be parked on c. */
static void
sig_add_waiter(struct sig *s, size_t parked)
{
	tu_group_add(&s->waiters);
	ASSERT_PARKED(&s->c, parked);
}

/* Join the waiters: the n of them took the n permits, and m is free. */
static void
sig_join(struct sig *s, int n)
{
	tu_group_join(&s->waiters);
	cr_assert(s->permits == 0 && s->nreturned == n);
	cr_assert(mstate(&s->m) == 0);
}

/* Give one permit, signal, check the result and wait for one return. */
static void
give_one(struct sig *s, size_t expect_done)
{
	pl_mutex_lock(&s->m);
	s->permits++;
	pl_mutex_unlock(&s->m);
	cr_assert(pl_cond_signal(&s->c),
	    "pl_cond_signal returned false with a waiter parked");
	cr_assert(tu_wait_size_ge(&s->ndone, expect_done, TU_WAIT_NS),
	    "the signalled waiter did not return (%zu of %zu)",
	    __atomic_load_n(&s->ndone, __ATOMIC_ACQUIRE), expect_done);
}

Test(cond, signal_wakes_exactly_one_per_call, .timeout = 30)
{
	struct sig *s = sig_new();
	for (int i = 0; i < SW; i++)
		sig_add_waiter(s, (size_t)i + 1);
	cr_assert(cstate(&s->c) == PL_COND_WAITERS);
	/* Each waiter is parked with its mutex as park token. */
	uintptr_t tok[SW];
	cr_assert(parked_tokens(&s->c, tok, SW) == SW);
	for (int i = 0; i < SW; i++)
		cr_assert(tok[i] == (uintptr_t)&s->m,
		    "park token %#lx of waiter "
		    "%d, expected the mutex %p",
		    (unsigned long)tok[i], i, (void *)&s->m);

	for (int k = 0; k < SW; k++) {
		give_one(s, (size_t)k + 1);
		/* Exactly one returned; the others are still parked. */
		size_t left = count_parked(&s->c);
		size_t nd = __atomic_load_n(&s->ndone, __ATOMIC_ACQUIRE);
		cr_assert(left == (size_t)(SW - k - 1) && nd == (size_t)k + 1,
		    "signal %d: %zu returned, %zu still parked", k + 1, nd,
		    left);
	}
	cr_assert(!pl_cond_signal(&s->c),
	    "a 4th signal with nobody waiting "
	    "returned true");
	cr_assert(cstate(&s->c) == 0, "cond byte %u with nobody waiting",
	    cstate(&s->c));
	sig_join(s, SW);
	for (int i = 0; i < SW; i++) {
		cr_assert(s->wait_returns[i] == 1,
		    "waiter %d: pl_cond_wait "
		    "returned %d times",
		    i, s->wait_returns[i]);
	}
}

/* One waiter at a time: each signal wakes exactly the one waiting. */
Test(cond, signal_single_waiter_sequence_is_exact, .timeout = 30)
{
	struct sig *s = sig_new();
	for (int i = 0; i < SEQ_ROUNDS; i++) {
		sig_add_waiter(s, 1);
		give_one(s, (size_t)i + 1);
		tu_group_join(&s->waiters); /* the one just added */
		cr_assert(s->order[i] == i, "round %d: waiter %d returned", i,
		    s->order[i]);
		cr_assert(s->wait_returns[i] == 1,
		    "round %d: wait returned %d "
		    "times",
		    i, s->wait_returns[i]);
		cr_assert(count_parked(&s->c) == 0 && cstate(&s->c) == 0);
		cr_assert(!pl_cond_signal(&s->c));
	}
	sig_join(s, SEQ_ROUNDS);
}

/* ------------------------------------------------------------------ */
/* 6. signal with the mutex held moves the waiter onto the mutex       */

/* A thread that waits on c with m until go (or, timed, until its wait
 * fails), then unlocks m: at once, or with hold once told it may. */
struct waiter {
	pl_mutex_t m;
	pl_cond_t c;
	int go;             /* protected by m */
	bool timed;         /* pl_cond_timedwait until dl, else pl_cond_wait */
	struct timespec dl; /* set before the thread starts */
	bool hold;          /* keep m until may_unlock */
	int rc;             /* of the last wait (0 for pl_cond_wait) */
	int wait_returns;   /* waiter only */
	bool held;          /* waiter only: m held once back */
	int64_t returned_ns;
	int returned;   /* atomic: back from the wait, holding m */
	int may_unlock; /* atomic */
	int done;       /* atomic */
};

/* One wait of the waiter's kind: 0, or what pl_cond_timedwait returned. */
static int
waiter_wait(struct waiter *w)
{
	if (w->timed)
		return pl_cond_timedwait(&w->c, &w->m, &w->dl);
	pl_cond_wait(&w->c, &w->m);
	return 0;
}

static void *
waiter_main(void *arg)
{
	struct waiter *w = arg;
	pl_mutex_lock(&w->m);
	w->rc = 0;
	while (!w->go && w->rc == 0) {
		w->rc = waiter_wait(w);
		w->wait_returns++;
	}
	w->returned_ns = tu_now_ns();
	w->held = pl_mutex_is_locked(&w->m);
	__atomic_store_n(&w->returned, 1, __ATOMIC_RELEASE);
	if (w->hold)
		tu_wait_int_eq(&w->may_unlock, 1, 20 * TU_SEC);
	pl_mutex_unlock(&w->m);
	__atomic_store_n(&w->done, 1, __ATOMIC_RELEASE);
	return NULL;
}

/* Start w afresh, timed (with a deadline rel_ns from now) or not, with
 * hold or not, and wait until it verifiably waits on c. */
static pthread_t
waiter_start(struct waiter *w, bool timed, int64_t rel_ns, bool hold)
{
	memset(w, 0, sizeof(*w));
	w->timed = timed;
	if (timed)
		w->dl = tu_deadline_in(rel_ns);
	w->hold = hold;
	pthread_t t = tu_spawn(waiter_main, w);
	ASSERT_PARKED(&w->c, 1);
	return t;
}

Test(cond, signal_with_mutex_held_moves_waiter_to_mutex, .timeout = 30)
{
	static struct waiter w;
	pthread_t t = waiter_start(&w, false, 0, true);

	pl_mutex_lock(&w.m);
	w.go = 1;
	bool r = pl_cond_signal(&w.c);
	size_t on_c = count_parked(&w.c), on_m = count_parked(&w.m);
	unsigned char ms = mstate(&w.m), cs = cstate(&w.c);
	int early = __atomic_load_n(&w.returned, __ATOMIC_ACQUIRE);
	pl_mutex_unlock(&w.m);

	cr_assert(r, "pl_cond_signal returned false with a waiter parked");
	cr_assert(on_c == 0 && on_m == 1,
	    "after signal with the mutex held: "
	    "%zu on the cond, %zu on the mutex (expected 0 and 1)",
	    on_c, on_m);
	cr_assert(ms == MUTEX_LOCKED_PARKED, "mutex state %u", ms);
	cr_assert(cs == 0, "cond byte %u with nobody left on it", cs);
	cr_assert(early == 0, "the waiter returned while the mutex was held");

	/* After the unlock it returns, holding the mutex. */
	cr_assert(tu_wait_int_eq(&w.returned, 1, TU_WAIT_NS),
	    "the waiter did not return after the unlock");
	cr_assert(!pl_mutex_trylock(&w.m),
	    "trylock succeeded while the "
	    "returned waiter should hold the mutex");
	cr_assert(pl_mutex_is_locked(&w.m));
	__atomic_store_n(&w.may_unlock, 1, __ATOMIC_RELEASE);
	cr_assert(tu_wait_int_eq(&w.done, 1, TU_WAIT_NS));
	tu_join(t);
	cr_assert(w.held, "the waiter returned without the mutex");
	cr_assert(
	    w.wait_returns == 1, "wait returned %d times", w.wait_returns);
	cr_assert(mstate(&w.m) == 0 && cstate(&w.c) == 0);
}

/* ------------------------------------------------------------------ */
/* 7. timed waits                                                      */

struct prober {
	pl_mutex_t *m;
	int stop; /* atomic */
	int got;  /* atomic: trylock succeeded at least once */
};

/* Polls trylock until it succeeds (the waiter released the mutex) or
 * until told to stop. */
static void *
prober_main(void *arg)
{
	struct prober *p = arg;
	int64_t end = tu_now_ns() + TU_WAIT_NS;
	while (
	    !__atomic_load_n(&p->stop, __ATOMIC_ACQUIRE) && tu_now_ns() < end) {
		if (pl_mutex_trylock(p->m)) {
			pl_mutex_unlock(p->m);
			__atomic_store_n(&p->got, 1, __ATOMIC_RELEASE);
			break;
		}
		tu_poll_pause();
	}
	return NULL;
}

Test(cond, timedwait_times_out_with_mutex_held, .timeout = 30)
{
	static pl_mutex_t m;
	static pl_cond_t c;
	pl_mutex_init(&m);
	pl_cond_init(&c);
	const int64_t rel[] = { 300 * TU_MS, 50 * TU_MS, 0, -10 * TU_MS };

	for (size_t i = 0; i < sizeof(rel) / sizeof(rel[0]); i++) {
		struct prober p = { &m, 0, 0 };
		bool probe = rel[i] >= 50 * TU_MS;
		pl_mutex_lock(&m);
		pthread_t pt = pthread_self();
		if (probe)
			pt = tu_spawn(prober_main, &p);
		struct timespec dl = tu_deadline_in(rel[i]);
		int rc = pl_cond_timedwait(&c, &m, &dl);
		int64_t after = tu_now_ns();
		bool locked = pl_mutex_is_locked(&m);
		if (probe) {
			__atomic_store_n(&p.stop, 1, __ATOMIC_RELEASE);
			tu_join(pt);
		}
		cr_assert(
		    rc == ETIMEDOUT, "[%zu] rc %d, expected ETIMEDOUT", i, rc);
		cr_assert(after >= tu_ts_to_ns(&dl),
		    "[%zu] ETIMEDOUT %lld ns "
		    "before the deadline",
		    i, (long long)(tu_ts_to_ns(&dl) - after));
		cr_assert(after < tu_ts_to_ns(&dl) + 2 * TU_SEC,
		    "[%zu] ETIMEDOUT %lld ms after the deadline", i,
		    (long long)((after - tu_ts_to_ns(&dl)) / TU_MS));
		cr_assert(locked, "[%zu] returned without the mutex", i);
		if (probe)
			cr_assert(p.got,
			    "[%zu] the mutex was not released "
			    "during the wait",
			    i);
		/* We hold it: another thread cannot take it. */
		cr_assert(!trylock_from_other_thread(&m),
		    "[%zu] another "
		    "thread took the mutex after the timed wait returned",
		    i);
		cr_assert(mstate(&m) == PL_MUTEX_LOCKED, "[%zu] mutex state %u",
		    i, mstate(&m));
		cr_assert(cstate(&c) == 0,
		    "[%zu] cond byte %u after the only "
		    "waiter timed out",
		    i, cstate(&c));
		cr_assert(count_parked(&c) == 0);
		pl_mutex_unlock(&m);
		cr_assert(mstate(&m) == 0);
	}
}

struct snatcher {
	pl_mutex_t *m;
	int stop;        /* atomic */
	size_t attempts; /* atomic */
	size_t got;      /* atomic */
};

static void *
snatcher_main(void *arg)
{
	struct snatcher *s = arg;
	while (!__atomic_load_n(&s->stop, __ATOMIC_ACQUIRE)) {
		if (pl_mutex_trylock(s->m)) {
			__atomic_fetch_add(&s->got, 1, __ATOMIC_RELAXED);
			pl_mutex_unlock(s->m);
		}
		__atomic_fetch_add(&s->attempts, 1, __ATOMIC_RELEASE);
		sched_yield();
	}
	return NULL;
}

Test(cond, timedwait_malformed_deadline_is_einval, .timeout = 30)
{
	static pl_mutex_t m;
	static pl_cond_t c;
	static struct snatcher s;
	pl_mutex_init(&m);
	pl_cond_init(&c);
	memset(&s, 0, sizeof(s));
	s.m = &m;
	const struct timespec bad[] = {
		{ 0, 1000000000L },
		{ 0, -1 },
		{ -1, 0 },
		{ -1, 999999999L },
	};

	pl_mutex_lock(&m);
	/* A thread keeps trying to take the mutex: if a timed wait released
	 * it even for a moment, it may get in. */
	pthread_t t = tu_spawn(snatcher_main, &s);
	cr_assert(tu_wait_size_ge(&s.attempts, 10, TU_WAIT_NS));
	for (int round = 0; round < 200; round++) {
		for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
			int rc = pl_cond_timedwait(&c, &m, &bad[i]);
			if (rc != EINVAL || mstate(&m) != PL_MUTEX_LOCKED ||
			    cstate(&c) != 0)
				cr_assert_fail("[%zu] rc %d (expected EINVAL), "
				               "mutex state %u, cond byte %u",
				    i, rc, mstate(&m), cstate(&c));
		}
		if (round % 20 == 0) {
			/* Let the snatcher run between some of the calls. */
			size_t a0 =
			    __atomic_load_n(&s.attempts, __ATOMIC_ACQUIRE);
			cr_assert(
			    tu_wait_size_ge(&s.attempts, a0 + 2, TU_WAIT_NS));
		}
	}
	__atomic_store_n(&s.stop, 1, __ATOMIC_RELEASE);
	tu_join(t);
	cr_assert(s.got == 0,
	    "another thread took the mutex %zu times while "
	    "timed waits with malformed deadlines were failing",
	    s.got);
	cr_assert(pl_mutex_is_locked(&m));
	cr_assert(count_parked(&c) == 0);
	pl_mutex_unlock(&m);
	cr_assert(mstate(&m) == 0 && cstate(&c) == 0);
}

Test(cond, timedwait_signalled_before_deadline_returns_0, .timeout = 30)
{
	static struct waiter w;
	pthread_t t = waiter_start(&w, true, 20 * TU_SEC, false);
	pl_mutex_lock(&w.m);
	w.go = 1;
	cr_assert(pl_cond_signal(&w.c));
	pl_mutex_unlock(&w.m);
	cr_assert(tu_wait_int_eq(&w.done, 1, TU_WAIT_NS),
	    "the signalled timed waiter did not return");
	tu_join(t);
	cr_assert(w.rc == 0, "timed wait returned %d after a signal", w.rc);
	cr_assert(w.wait_returns == 1);
	cr_assert(w.returned_ns < tu_ts_to_ns(&w.dl));
	cr_assert(w.held);
	cr_assert(mstate(&w.m) == 0 && cstate(&w.c) == 0);
}

/* ------------------------------------------------------------------ */
/* 8. a timed waiter requeued onto the mutex times out there           */

struct token_ctx {
	const void *addr;
	uintptr_t cond_token; /* the token of a thread still requeued */
	size_t n;
};

/* The requeued waiter has timed out on the mutex's queue and parked again
 * through pl_mutex_lock: no thread on the mutex carries the condition
 * variable's park token (the mutex's address) any more, and n are parked. */
static bool
requeued_waiter_reparked(void *arg)
{
	struct token_ctx *t = arg;
	uintptr_t tok[4];
	size_t n = parked_tokens(t->addr, tok, 4);
	if (n != t->n)
		return false;
	for (size_t i = 0; i < n && i < 4; i++)
		if (tok[i] == t->cond_token)
			return false;
	return true;
}

static void
run_requeued_timeout(bool with_locker)
{
	static struct waiter w;
	static struct tu_locker l;
	pthread_t t = waiter_start(&w, true, 500 * TU_MS, false);

	/* Broadcast with the mutex held: the waiter moves onto the mutex.
	 * From then on its wait has succeeded, whatever its deadline. */
	pl_mutex_lock(&w.m);
	w.go = 1;
	size_t n = pl_cond_broadcast(&w.c);
	int64_t t_bcast = tu_now_ns();
	uintptr_t tok[2] = { 0, 0 };
	size_t on_m = parked_tokens(&w.m, tok, 2);
	size_t on_c = count_parked(&w.c);
	cr_assert(n == 1, "broadcast returned %zu", n);
	cr_assert(t_bcast < tu_ts_to_ns(&w.dl),
	    "the broadcast came after the "
	    "waiter's deadline: the machine is too slow for this test");
	cr_assert(on_c == 0 && on_m == 1 && tok[0] == (uintptr_t)&w.m,
	    "after broadcast: %zu on the cond, %zu on the mutex (token %#lx)",
	    on_c, on_m, (unsigned long)tok[0]);
	if (with_locker) {
		/* A plain locker queues behind the requeued waiter, so that
		 * the waiter is not the last on the mutex when it times out. */
		tu_locker_start(&l, &w.m);
		ASSERT_PARKED(&w.m, 2);
	}

	/* The deadline passes while the waiter is on the mutex's queue; it
	 * leaves it and parks again to lock the mutex, which we hold. */
	struct token_ctx tc = { &w.m, (uintptr_t)&w.m, with_locker ? 2 : 1 };
	bool reparked =
	    tu_wait_until(requeued_waiter_reparked, &tc, TU_WAIT_NS);
	int64_t t_reparked = tu_now_ns();
	int early = __atomic_load_n(&w.done, __ATOMIC_ACQUIRE);
	unsigned char ms = mstate(&w.m);
	int64_t t_unlock = tu_now_ns();
	pl_mutex_unlock(&w.m);

	cr_assert(reparked,
	    "the requeued waiter never timed out on the "
	    "mutex (%zu parked there)",
	    count_parked(&w.m));
	cr_assert(t_reparked >= tu_ts_to_ns(&w.dl),
	    "the waiter left the "
	    "mutex's queue %lld ns before its deadline",
	    (long long)(tu_ts_to_ns(&w.dl) - t_reparked));
	cr_assert(early == 0,
	    "the timed waiter returned while the mutex was "
	    "held");
	cr_assert(ms == MUTEX_LOCKED_PARKED,
	    "mutex state %u with the waiter "
	    "parked on it again",
	    ms);

	cr_assert(tu_wait_int_eq(&w.done, 1, TU_WAIT_NS),
	    "the timed waiter did not return after the unlock");
	tu_join(t);
	if (with_locker) {
		cr_assert(tu_wait_int_eq(&l.got, 1, TU_WAIT_NS),
		    "the plain locker never got the mutex: PARKED lost?");
		tu_join(l.thread);
	}
	cr_assert(w.rc == 0,
	    "rc %d: a waiter taken off the condition "
	    "variable by a broadcast returned ETIMEDOUT (the wake-up is lost)",
	    w.rc);
	cr_assert(w.wait_returns == 1, "%d waits", w.wait_returns);
	cr_assert(w.held, "returned without the mutex");
	cr_assert(w.returned_ns >= t_unlock,
	    "returned before the mutex was "
	    "unlocked");
	cr_assert(w.returned_ns >= tu_ts_to_ns(&w.dl));
	cr_assert(mstate(&w.m) == 0,
	    "mutex state %u once everybody is done "
	    "(stale PARKED?)",
	    mstate(&w.m));
	cr_assert(cstate(&w.c) == 0);
	cr_assert(count_parked(&w.m) == 0 && count_parked(&w.c) == 0);
}

TU_TEST_PAIR(cond, requeued_timed_waiter_returns_0_after_its_deadline,
    requeued_timed_waiter_returns_0_behind_locker, 30, run_requeued_timeout)

/* ------------------------------------------------------------------ */
/* 9. several mutexes with one condition variable at once              */
/*
 * POSIX leaves it undefined; glibc copes, and so must the drop-in built
 * on pl_cond_t: a broadcast wakes every waiter or moves it onto its own
 * mutex, in one round per lock (lib/cond.c, wake).  Before, it aborted.
 */

struct tm_waiter {
	pl_cond_t *c;
	pl_mutex_t *m;
	int *go;         /* under m */
	size_t *done;    /* atomic */
	bool held_after; /* m was held by this thread when the wait returned */
};

static void *
tm_waiter_main(void *arg)
{
	struct tm_waiter *w = arg;
	pl_mutex_lock(w->m);
	while (!*w->go)
		pl_cond_wait(w->c, w->m);
	/* m is locked: nobody else could have it now. */
	w->held_after =
	    !pl_mutex_trylock(w->m) && (mstate(w->m) & PL_MUTEX_LOCKED);
	pl_mutex_unlock(w->m);
	__atomic_fetch_add(w->done, 1, __ATOMIC_RELEASE);
	return NULL;
}

/* Waiters with m1, m2, m1, m2 in that order on c; a broadcast with both
 * mutexes held (held) or free. */
static void
run_two_mutexes(bool held)
{
	static pl_cond_t c;
	static pl_mutex_t m[2];
	static int go[2];
	static size_t done;
	struct tm_waiter w[4];
	pthread_t t[4];

	c = (pl_cond_t)PL_COND_INITIALIZER;
	done = 0;
	for (int i = 0; i < 2; i++) {
		m[i] = (pl_mutex_t)PL_MUTEX_INITIALIZER;
		go[i] = 0;
	}
	for (int i = 0; i < 4; i++) {
		w[i] = (struct tm_waiter){ &c, &m[i % 2], &go[i % 2], &done,
			false };
		t[i] = tu_spawn(tm_waiter_main, &w[i]);
		ASSERT_PARKED(&c, (size_t)i + 1);
	}
	for (int i = 0; i < 2; i++) {
		pl_mutex_lock(&m[i]);
		go[i] = 1;
		if (!held)
			pl_mutex_unlock(&m[i]);
	}
	size_t n = pl_cond_broadcast(&c);
	cr_assert(n == 4, "broadcast took %zu of 4 waiters off c", n);
	cr_assert(count_parked(&c) == 0 && cstate(&c) == 0,
	    "%zu left on c, byte %u", count_parked(&c), cstate(&c));
	if (held) {
		/* Nobody woken only to block: each moved onto its own. */
		for (int i = 0; i < 2; i++) {
			cr_assert(count_parked(&m[i]) == 2,
			    "m%d: %zu moved onto it, expected 2", i + 1,
			    count_parked(&m[i]));
			cr_assert(mstate(&m[i]) == MUTEX_LOCKED_PARKED,
			    "m%d state %u", i + 1, mstate(&m[i]));
			pl_mutex_unlock(&m[i]);
		}
	}
	for (int i = 0; i < 4; i++) {
		tu_join(t[i]);
		cr_assert(
		    w[i].held_after, "waiter %d returned without its mutex", i);
	}
	cr_assert(done == 4);
	for (int i = 0; i < 2; i++)
		cr_assert(mstate(&m[i]) == 0 && count_parked(&m[i]) == 0);
}

Test(cond, broadcast_moves_the_waiters_of_two_mutexes_each_onto_its_own,
    .timeout = 30)
{
	run_two_mutexes(true);
}

Test(cond, broadcast_wakes_the_waiters_of_two_free_mutexes, .timeout = 30)
{
	run_two_mutexes(false);
}

/* A signal takes the oldest waiter, whatever its mutex: m2's, then m1's. */
Test(cond, signal_takes_the_oldest_waiter_whatever_its_mutex, .timeout = 30)
{
	static pl_cond_t c;
	static pl_mutex_t m[2];
	static int go[2];
	static size_t done;
	struct tm_waiter w[2];
	pthread_t t[2];

	for (int i = 0; i < 2; i++) {
		w[i] = (struct tm_waiter){ &c, &m[1 - i], &go[1 - i], &done,
			false };
		t[i] = tu_spawn(tm_waiter_main, &w[i]);
		ASSERT_PARKED(&c, (size_t)i + 1);
	}
	for (int i = 0; i < 2; i++) {
		pl_mutex_lock(&m[1 - i]);
		go[1 - i] = 1;
		cr_assert(pl_cond_signal(&c));
		cr_assert(count_parked(&c) == (size_t)(1 - i));
		cr_assert(count_parked(&m[1 - i]) == 1,
		    "signal %d did not move m%d's waiter onto m%d", i, 2 - i,
		    2 - i);
		pl_mutex_unlock(&m[1 - i]);
		tu_join(t[i]);
		cr_assert(w[i].held_after);
	}
	cr_assert(cstate(&c) == 0);
}

/* ------------------------------------------------------------------ */
/* 10. a signal decides the mutex under the bucket locks               */
/*
 * The window: the signaller has read the waiter's mutex m1 from c's queue
 * and waits for m1's bucket lock (held here by a probe thread inside a
 * park callback on m1: not allowed in real code, a tool in a test).
 * Meanwhile that waiter times out and returns; m1's byte is then reused,
 * as a mutex that another thread holds or as plain data, and a new waiter
 * waits on c with m2.  When the signaller goes on it must act on the new
 * waiter, with m2, and must not touch m1.  m1's bucket comes before c's in
 * the lock order, so that the signaller holds no bucket while it waits.
 */

struct reuse {
	pl_mutex_t *m1; /* a byte of reuse_arena, then reused */
	pl_cond_t *c;   /* another byte of it */
	pl_mutex_t m2;
	struct tu_bucket_hold hold; /* m1's bucket, by REUSE_PROBE */
	pid_t signaller_tid;        /* atomic */
	bool signal_rc;
	struct timespec a_deadline;
	int a_rc;
	int b_held_m2;
	struct tu_group threads; /* reuse_thread, index = role */
	int done[4];             /* atomic, by role: the thread is done */
};

/* The roles of the scenario's threads, in the order they start. */
enum { REUSE_A, REUSE_PROBE, REUSE_SIGNALLER, REUSE_B };

static unsigned char reuse_arena[4096];

/* The scenario's threads, by role. */
static void
reuse_thread(void *shared, int role)
{
	struct reuse *r = shared;
	switch (role) {
	case REUSE_A: /* waits on c with m1 until its deadline */
		pl_mutex_lock(r->m1);
		r->a_rc = pl_cond_timedwait(r->c, r->m1, &r->a_deadline);
		pl_mutex_unlock(r->m1);
		break;
	case REUSE_PROBE: /* holds m1's bucket until released */
		tu_bucket_hold(&r->hold);
		break;
	case REUSE_SIGNALLER:
		tu_store_tid(&r->signaller_tid);
		r->signal_rc = pl_cond_signal(r->c);
		break;
	default: /* REUSE_B: waits on c with m2 */
		pl_mutex_lock(&r->m2);
		pl_cond_wait(r->c, &r->m2);
		r->b_held_m2 = pl_mutex_is_locked(&r->m2);
		if (r->b_held_m2)
			pl_mutex_unlock(&r->m2);
		break;
	}
	__atomic_store_n(&r->done[role], 1, __ATOMIC_RELEASE);
}

/* Start the thread of the next role, which must be role. */
static void
reuse_start(struct reuse *r, int role)
{
	cr_assert(tu_group_add(&r->threads) == role);
}

/* The signaller sleeps in a futex call: it waits for m1's bucket. */
static bool
signaller_in_futex(void *arg)
{
	struct reuse *r = arg;
	return tu_thread_in_futex(
	    __atomic_load_n(&r->signaller_tid, __ATOMIC_ACQUIRE));
}

/* c and m1 in the arena: m1's bucket before c's, neither shared with m2. */
static void
reuse_layout(struct reuse *r)
{
	memset(reuse_arena, 0, sizeof reuse_arena);
	size_t b2 = pli_lot_bucket_of(&r->m2);
	r->m1 = NULL;
	r->c = NULL;
	for (size_t i = 0; i < sizeof reuse_arena && !r->m1; i++) {
		size_t bi = pli_lot_bucket_of(&reuse_arena[i]);
		if (bi == b2)
			continue;
		for (size_t j = 0; j < sizeof reuse_arena; j++) {
			size_t bj = pli_lot_bucket_of(&reuse_arena[j]);
			if (bi < bj && bj != b2) {
				r->m1 = (pl_mutex_t *)(void *)&reuse_arena[i];
				r->c = (pl_cond_t *)(void *)&reuse_arena[j];
				break;
			}
		}
	}
	cr_assert(r->m1 && r->c, "no layout found in the arena");
	r->hold.addr = r->m1;
}

/* Up to the point where the signaller waits for m1's bucket, A has left
 * and B waits on c with m2; reuse_m1 then runs, then the probe lets go.
 * Returns the scenario's state (static), for more checks. */
static struct reuse *
run_reuse(void (*reuse_m1)(struct reuse *), bool with_b)
{
	static struct reuse state;
	struct reuse *r = &state;
	memset(r, 0, sizeof *r);
	reuse_layout(r);
	tu_group_init(&r->threads, reuse_thread, r);
	r->a_deadline = tu_deadline_in(300 * TU_MS);
	reuse_start(r, REUSE_A);
	ASSERT_PARKED(r->c, 1);
	reuse_start(r, REUSE_PROBE);
	cr_assert(tu_wait_int_eq(&r->hold.holding, 1, TU_WAIT_NS));
	reuse_start(r, REUSE_SIGNALLER);
	cr_assert(tu_wait_until(signaller_in_futex, r, TU_WAIT_NS),
	    "the signaller never blocked");
	cr_assert(!__atomic_load_n(&r->done[REUSE_A], __ATOMIC_ACQUIRE),
	    "the timed waiter left before the signaller read its mutex: "
	    "the machine is too slow for this test");
	/* A times out and returns: it no longer uses m1. */
	cr_assert(tu_wait_int_eq(&r->done[REUSE_A], 1, TU_WAIT_NS));
	cr_assert(r->a_rc == ETIMEDOUT, "A returned %d", r->a_rc);
	cr_assert(
	    !__atomic_load_n(&r->done[REUSE_SIGNALLER], __ATOMIC_ACQUIRE));
	reuse_m1(r);
	if (with_b) {
		reuse_start(r, REUSE_B);
		ASSERT_PARKED(r->c, 1);
	}
	tu_bucket_hold_end(&r->hold);
	cr_assert(tu_wait_int_eq(&r->done[REUSE_SIGNALLER], 1, TU_WAIT_NS));
	if (!with_b) {
		tu_group_join(&r->threads);
		cr_assert(!r->signal_rc, "the signal reports a waiter");
		cr_assert(count_parked(r->c) == 0 && cstate(r->c) == 0,
		    "cond byte %u with nobody waiting", cstate(r->c));
		return r;
	}
	cr_assert(r->signal_rc, "the signal found nobody");
	cr_assert(count_parked(r->m1) == 0,
	    "%zu threads moved onto the "
	    "reused m1, which nobody waits for",
	    count_parked(r->m1));
	cr_assert(tu_wait_int_eq(&r->done[REUSE_B], 1, TU_WAIT_NS),
	    "the signal did "
	    "not reach the waiter with m2");
	tu_group_join(&r->threads);
	cr_assert(r->b_held_m2, "B returned from its wait without m2");
	cr_assert(count_parked(r->c) == 0 && cstate(r->c) == 0);
	cr_assert(mstate(&r->m2) == 0);
	return r;
}

static void
reuse_as_data(struct reuse *r)
{
	*(unsigned char *)r->m1 = 0x41; /* 'A': LOCKED set, PARKED clear */
}

Test(cond, signal_leaves_a_reused_mutex_byte_alone, .timeout = 30)
{
	struct reuse *r = run_reuse(reuse_as_data, true);
	cr_assert(*(unsigned char *)r->m1 == 0x41,
	    "the signal wrote %#x into "
	    "the byte of a mutex nobody waits for",
	    *(unsigned char *)r->m1);
}

static void
reuse_as_held_mutex(struct reuse *r)
{
	pl_mutex_lock(r->m1); /* a mutex again, for something else */
}

/* m1, reused as a mutex that this thread holds, was left alone (LOCKED,
 * without PARKED: `after` says when it would have been set); unlock it,
 * with pl_mutex_unlock_fair where B waited, which would hand m1 to B had
 * B been moved onto it. */
static void
run_reuse_held(bool with_b, const char *after)
{
	struct reuse *r = run_reuse(reuse_as_held_mutex, with_b);
	cr_assert(mstate(r->m1) == PL_MUTEX_LOCKED, "m1 state %u %s",
	    mstate(r->m1), after);
	if (with_b)
		pl_mutex_unlock_fair(r->m1);
	else
		pl_mutex_unlock(r->m1);
	cr_assert(mstate(r->m1) == 0);
}

Test(cond, signal_never_moves_a_waiter_onto_another_mutex, .timeout = 30)
{
	run_reuse_held(true,
	    "after a signal to a waiter with another mutex: PARKED set on "
	    "a mutex its waiters do not use");
}

/* Nobody waits any more when the signaller gets the buckets: it must not
 * set PARKED on the (held) mutex for nothing, which would send every
 * unlock of it down the slow path until a waiter came and went. */
Test(cond, signal_to_an_emptied_queue_leaves_the_mutex_alone, .timeout = 30)
{
	run_reuse_held(false, "after a signal that found no waiter");
}

/* ------------------------------------------------------------------ */
/* 11. a signalled timed waiter returns 0, as with glibc               */
/*
 * The waiter is signalled before its deadline, while the signaller holds
 * the mutex; the signaller keeps it until the deadline has passed.  The
 * signal was given to this waiter, so its wait succeeded: glibc's
 * pthread_cond_timedwait returns 0, and so must pl_cond_timedwait.  The
 * same body runs on both.
 */
struct late_unlock {
	bool glibc;
	pthread_mutex_t pm;
	pthread_cond_t pc;
	pl_mutex_t m;
	pl_cond_t c;
	int go; /* under the mutex */
	struct timespec dl;
	pid_t tid; /* atomic */
	int rc, done;
};

/* Lock the mutex of the implementation (unlock it, with lock false). */
static void
lu_mutex(struct late_unlock *l, bool lock)
{
	if (!l->glibc)
		(lock ? pl_mutex_lock : pl_mutex_unlock)(&l->m);
	else if (lock)
		pthread_mutex_lock(&l->pm);
	else
		pthread_mutex_unlock(&l->pm);
}

static void *
lu_waiter(void *arg)
{
	struct late_unlock *l = arg;
	lu_mutex(l, true);
	tu_store_tid(&l->tid);
	int rc = 0;
	while (!l->go && rc == 0)
		rc = l->glibc ? pthread_cond_timedwait(&l->pc, &l->pm, &l->dl)
		              : pl_cond_timedwait(&l->c, &l->m, &l->dl);
	l->rc = rc;
	lu_mutex(l, false);
	__atomic_store_n(&l->done, 1, __ATOMIC_RELEASE);
	return NULL;
}

/* The waiter sleeps in the kernel: in its condition wait, since nobody
 * else holds the mutex before we take it. */
static bool
lu_waiter_asleep(void *arg)
{
	struct late_unlock *l = arg;
	return tu_thread_in_futex(__atomic_load_n(&l->tid, __ATOMIC_ACQUIRE));
}

static void
run_late_unlock(bool glibc)
{
	static struct late_unlock l;
	memset(&l, 0, sizeof l);
	l.glibc = glibc;
	pthread_condattr_t ca;
	pthread_condattr_init(&ca);
	pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
	pthread_cond_init(&l.pc, &ca);
	pthread_mutex_init(&l.pm, NULL);
	l.dl = tu_deadline_in(200 * TU_MS);
	pthread_t t = tu_spawn(lu_waiter, &l);
	cr_assert(tu_wait_until(lu_waiter_asleep, &l, TU_WAIT_NS));
	lu_mutex(&l, true);
	cr_assert(!tu_reached(&l.dl),
	    "the waiter slept only after its "
	    "deadline: the machine is too slow for this test");
	l.go = 1;
	if (glibc)
		pthread_cond_signal(&l.pc);
	else
		cr_assert(pl_cond_signal(&l.c));
	/* Hold the mutex past the waiter's deadline (waiting for the clock,
	 * not for a thread). */
	while (!tu_reached(&l.dl))
		tu_poll_pause();
	tu_busy_ns(20 * TU_MS);
	lu_mutex(&l, false);
	cr_assert(tu_wait_int_eq(&l.done, 1, TU_WAIT_NS));
	tu_join(t);
	cr_assert(l.rc == 0, "%s: a signalled waiter returned %d",
	    glibc ? "glibc" : "libparkinglot", l.rc);
	pthread_cond_destroy(&l.pc);
	pthread_condattr_destroy(&ca);
}

TU_TEST_PAIR(cond, signalled_timed_waiter_returns_0_like_glibc,
    glibc_signalled_timed_waiter_returns_0, 30, run_late_unlock)

/* A deadline already past: ETIMEDOUT at once, the mutex never released
 * (so nobody could take it meanwhile), nothing parked. */
Test(cond, timedwait_past_deadline_returns_at_once, .timeout = 30)
{
	static pl_mutex_t m;
	static pl_cond_t c;
	struct pl_stats before, after;
	const struct timespec zero = { 0, 0 };
	struct timespec past = tu_deadline_in(-TU_SEC);
	pl_mutex_lock(&m);
	pl_stats_get(&before);
	int rc1 = pl_cond_timedwait(&c, &m, &zero);
	int rc2 = pl_cond_timedwait(&c, &m, &past);
	pl_stats_get(&after);
	cr_assert(rc1 == ETIMEDOUT && rc2 == ETIMEDOUT, "rc %d %d", rc1, rc2);
	cr_assert(mstate(&m) == PL_MUTEX_LOCKED && cstate(&c) == 0);
	cr_assert(after.parks == before.parks,
	    "%llu parks for a deadline "
	    "already past",
	    (unsigned long long)(after.parks - before.parks));
	pl_mutex_unlock(&m);
}

/* ------------------------------------------------------------------ */
/* pl_cond_clockwait: clocks and cancellation                          */

struct cwaiter {
	pl_cond_t *c;
	pl_mutex_t *m;
	bool cancel_self;    /* cancel itself before waiting */
	int started;         /* atomic */
	int held_in_cleanup; /* the cleanup handler found m held by us */
	int returned;        /* atomic: the wait returned (not cancelled) */
	int rc;
};

static void
cwaiter_cleanup(void *arg)
{
	struct cwaiter *w = arg;
	/* m held: by us, as POSIX promises the cleanup handlers; nobody
	 * else can take it until we let go. */
	w->held_in_cleanup =
	    pl_mutex_is_locked(w->m) && !pl_mutex_trylock(w->m);
	pl_mutex_unlock(w->m);
}

static void *
cwaiter_main(void *arg)
{
	struct cwaiter *w = arg;
	pl_mutex_lock(w->m);
	__atomic_store_n(&w->started, 1, __ATOMIC_RELEASE);
	if (w->cancel_self)
		pthread_cancel(pthread_self());
	pthread_cleanup_push(cwaiter_cleanup, w);
	w->rc = pl_cond_clockwait(w->c, w->m, CLOCK_MONOTONIC, NULL);
	__atomic_store_n(&w->returned, 1, __ATOMIC_RELEASE);
	pthread_cleanup_pop(0);
	pl_mutex_unlock(w->m);
	return NULL;
}

static pthread_t
cwaiter_start(struct cwaiter *w)
{
	pthread_t t;
	cr_assert(pthread_create(&t, NULL, cwaiter_main, w) == 0);
	return t;
}

static void
join_cancelled(pthread_t t)
{
	void *ret = NULL;
	cr_assert(pthread_join(t, &ret) == 0);
	cr_assert(ret == PTHREAD_CANCELED, "the waiter was not cancelled");
}

Test(cond, clockwait_cancelled_while_waiting_holds_mutex_in_cleanup,
    .timeout = 30)
{
	static pl_cond_t c;
	static pl_mutex_t m;
	struct cwaiter w = { .c = &c, .m = &m };
	pthread_t t = cwaiter_start(&w);
	ASSERT_PARKED(&c, 1);
	cr_assert(pthread_cancel(t) == 0);
	join_cancelled(t);
	cr_assert(w.held_in_cleanup, "cleanup ran without the mutex held");
	cr_assert(!w.returned);
	cr_assert(count_parked(&c) == 0 && cstate(&c) == 0,
	    "the cancelled waiter left %zu parked, byte %u", count_parked(&c),
	    cstate(&c));
	cr_assert(mstate(&m) == 0, "mutex state %u", mstate(&m));
}

Test(cond, clockwait_cancel_pending_acts_with_mutex_held, .timeout = 30)
{
	static pl_cond_t c;
	static pl_mutex_t m;
	struct cwaiter w = { .c = &c, .m = &m, .cancel_self = true };
	join_cancelled(cwaiter_start(&w));
	cr_assert(w.held_in_cleanup);
	cr_assert(count_parked(&c) == 0 && cstate(&c) == 0);
	cr_assert(mstate(&m) == 0);
}

/* A signal moves the first waiter onto the held mutex; that waiter is
 * then cancelled.  It must pass the signal on: the second waiter, still
 * on c, is moved onto the mutex and returns from its wait. */
Test(cond, clockwait_cancelled_after_signal_passes_it_on, .timeout = 30)
{
	static pl_cond_t c;
	static pl_mutex_t m;
	struct cwaiter w1 = { .c = &c, .m = &m }, w2 = { .c = &c, .m = &m };
	pthread_t t1 = cwaiter_start(&w1);
	ASSERT_PARKED(&c, 1);
	pthread_t t2 = cwaiter_start(&w2);
	ASSERT_PARKED(&c, 2);
	pl_mutex_lock(&m);
	cr_assert(pl_cond_signal(&c));
	cr_assert(count_parked(&c) == 1 && count_parked(&m) == 1);
	cr_assert(pthread_cancel(t1) == 0);
	/* w1 leaves m's queue, passes the signal to w2 (moved onto m, held
	 * by us) and queues on m again to take it back. */
	ASSERT_PARKED(&c, 0);
	ASSERT_PARKED(&m, 2);
	pl_mutex_unlock(&m);
	join_cancelled(t1);
	tu_join(t2);
	cr_assert(w1.held_in_cleanup && !w1.returned);
	cr_assert(w2.returned && w2.rc == 0,
	    "the signal the cancelled waiter took was lost");
	cr_assert(mstate(&m) == 0 && cstate(&c) == 0);
}

Test(cond, clockwait_realtime_deadline_times_out, .timeout = 30)
{
	static pl_cond_t c;
	static pl_mutex_t m;
	struct timespec t0, t1, dl;
	clock_gettime(CLOCK_REALTIME, &t0);
	dl = t0;
	dl.tv_nsec += 50 * 1000 * 1000;
	if (dl.tv_nsec >= 1000000000L) {
		dl.tv_sec++;
		dl.tv_nsec -= 1000000000L;
	}
	pl_mutex_lock(&m);
	cr_assert(pl_cond_clockwait(&c, &m, CLOCK_REALTIME, &dl) == ETIMEDOUT);
	clock_gettime(CLOCK_REALTIME, &t1);
	cr_assert(pl_mutex_is_locked(&m));
	cr_assert(tu_ts_to_ns(&t1) >= tu_ts_to_ns(&dl),
	    "returned before the CLOCK_REALTIME deadline");
	cr_assert(
	    pl_cond_clockwait(&c, &m, CLOCK_PROCESS_CPUTIME_ID, &dl) == EINVAL);
	pl_mutex_unlock(&m);
	cr_assert(cstate(&c) == 0 && mstate(&m) == 0);
}

/* ------------------------------------------------------------------ */
/* The re-arm of lib/twobit.c, for a condition waiter: a broadcast made
 * while m is held moves both waiters onto m; the unlock wakes the first
 * and clears PARKED, with the second still queued; the first returns
 * from its wait through rearm() in lib/cond.c and pl_mutex_lock (the
 * inline fast path, when m is free), and must set PARKED again, or its
 * unlock leaves the second asleep with m free.  With the fairness
 * interval at its longest most rounds take that path, not a hand-off. */

#define REARM_ROUNDS 40

struct cond_rearm {
	pl_mutex_t m;
	pl_cond_t c;
	bool go;
	unsigned done;
};

static void *
cond_rearm_waiter(void *arg)
{
	struct cond_rearm *x = arg;
	pl_mutex_lock(&x->m);
	while (!x->go)
		pl_cond_wait(&x->c, &x->m);
	__atomic_fetch_add(&x->done, 1, __ATOMIC_RELAXED);
	pl_mutex_unlock(&x->m);
	return NULL;
}

Test(cond, a_waiter_woken_on_the_mutex_wakes_the_one_left, .timeout = 120)
{
	static struct cond_rearm x;
	struct pl_tuning old, t;
	struct pl_stats s0, s1;
	pthread_t w[2];

	pl_tuning_get(&old);
	t = old;
	t.fair_interval_us = 10 * 1000 * 1000;
	pl_tuning_set(&t);
	pl_stats_get(&s0);
	for (int r = 0; r < REARM_ROUNDS; r++) {
		x.go = false;
		x.done = 0;
		for (int i = 0; i < 2; i++) {
			w[i] = tu_spawn(cond_rearm_waiter, &x);
			ASSERT_PARKED(&x.c, (size_t)i + 1);
		}
		pl_mutex_lock(&x.m);
		x.go = true;
		pl_cond_broadcast(&x.c);
		ASSERT_PARKED(&x.m, 2);
		pl_mutex_unlock(&x.m);
		int64_t end = tu_now_ns() + TU_WAIT_NS;
		while (__atomic_load_n(&x.done, __ATOMIC_RELAXED) != 2 &&
		    tu_now_ns() < end)
			tu_poll_pause();
		cr_assert(__atomic_load_n(&x.done, __ATOMIC_RELAXED) == 2,
		    "round %d: %u of 2 waiters returned; the mutex is %#x, "
		    "%zu thread(s) parked on it",
		    r, x.done, mstate(&x.m), count_parked(&x.m));
		tu_join(w[0]);
		tu_join(w[1]);
		cr_assert(mstate(&x.m) == 0 && cstate(&x.c) == 0);
	}
	pl_stats_get(&s1);
	pl_tuning_set(&old);
	cr_assert(s1.fair_handoffs - s0.fair_handoffs < REARM_ROUNDS,
	    "%" PRIu64 " fair hand-offs in %d rounds",
	    s1.fair_handoffs - s0.fair_handoffs, REARM_ROUNDS);
}

/* Turns (lib/twobit.c, lib/parkinglot.c): a thread woken from the mutex's
 * queue to compete that loses the mutex to a barging thread parks again
 * at its turn there; a waiter that a broadcast moves onto the mutex takes
 * its turn in the mutex's queue when it is moved.  Two cases, five rounds
 * each:
 *   - A waits, then B; the main thread locks m and broadcasts, which
 *     moves both onto m, A first; it wakes A as an unlock of m would and
 *     keeps m, as a barging thread that took it first would
 *     (tu_wake_to_lose); A parks on m again (lib/cond.c, take_back); the
 *     main thread unlocks m, and A must return from its wait before B.
 *   - A and B wait; the main thread locks m, and a third thread C parks
 *     on m; the broadcast moves A and B behind C; the main thread wakes C
 *     to lose, C parks again, and after the unlock C must get m first.
 *     (Had A and B kept the turns of their waits on c, which are earlier
 *     than C's, C would go behind them.) */

struct cond_turn {
	pl_cond_t c;
	pl_mutex_t m;
	bool go;
	unsigned order[3];
	unsigned n;
};

struct cond_turn_arg {
	struct cond_turn *x;
	unsigned id; /* 0 A, 1 B: waiters; 2 C: locks m */
};

static void *
cond_turn_thread(void *arg)
{
	struct cond_turn_arg *a = arg;
	struct cond_turn *x = a->x;
	pl_mutex_lock(&x->m);
	while (a->id != 2 && !x->go)
		pl_cond_wait(&x->c, &x->m);
	x->order[x->n++] = a->id;
	pl_mutex_unlock(&x->m);
	return NULL;
}

static void
cond_turn_round(struct cond_turn *x, bool with_c, int r)
{
	struct cond_turn_arg a[3] = { { x, 0 }, { x, 1 }, { x, 2 } };
	pthread_t w[3];
	unsigned n = with_c ? 3 : 2;

	x->go = false;
	x->n = 0;
	for (int i = 0; i < 2; i++) {
		w[i] = tu_spawn(cond_turn_thread, &a[i]);
		ASSERT_PARKED(&x->c, (size_t)i + 1);
	}
	pl_mutex_lock(&x->m);
	if (with_c) {
		w[2] = tu_spawn(cond_turn_thread, &a[2]);
		ASSERT_PARKED(&x->m, 1);
	}
	x->go = true;
	pl_cond_broadcast(&x->c);
	ASSERT_PARKED(&x->m, n);
	cr_assert(
	    tu_wake_to_lose(&x->m.state, 1, PL_MUTEX_PARKED, true, 0) == 1);
	ASSERT_PARKED(&x->m, n); /* the woken thread is back in the queue */
	pl_mutex_unlock(&x->m);
	for (unsigned i = 0; i < n; i++)
		tu_join(w[i]);
	cr_assert(x->n == n);
	if (with_c)
		cr_assert(x->order[0] == 2,
		    "round %d: thread %u got the mutex before C, which parked "
		    "on it before the broadcast and lost it once",
		    r, x->order[0]);
	else
		cr_assert(x->order[0] == 0,
		    "round %d: B returned before A, which waited first and "
		    "lost the mutex once",
		    r);
	cr_assert(mstate(&x->m) == 0 && cstate(&x->c) == 0);
}

Test(cond, a_thread_woken_on_the_mutex_that_loses_keeps_its_turn, .timeout = 60)
{
	static struct cond_turn x;
	tu_one_cpu(); /* so that no waiter is passed over for its CPU */
	for (int r = 0; r < 5; r++) {
		cond_turn_round(&x, false, r);
		cond_turn_round(&x, true, r);
	}
}

/* ------------------------------------------------------------------ */
/* 12. pl_cond_clockwait_any: a lock that is not a pl_mutex_t          */

/* The lock of these waits: a pl_rmutex_t, with the calls counted, and a
 * result for relock to give. */
struct alock {
	pl_rmutex_t r;
	int unlocks, relocks; /* under r */
	int relock_rc;
};

static void
alock_unlock(void *p)
{
	struct alock *a = p;
	a->unlocks++;
	pl_rmutex_unlock(&a->r);
}

static int
alock_relock(void *p)
{
	struct alock *a = p;
	pl_rmutex_lock(&a->r);
	a->relocks++;
	return a->relock_rc;
}

/* Whether nobody holds r (another thread could take it now). */
static bool
rmutex_free(pl_rmutex_t *r)
{
	if (!pl_rmutex_trylock(r))
		return false;
	pl_rmutex_unlock(r);
	return true;
}

struct awaiter {
	pl_cond_t *c;
	struct alock *a;
	int *permits;  /* under a->r */
	size_t *done;  /* atomic */
	int rc;        /* the first wait that failed, or 0 */
	int cancelled; /* the cleanup handler ran with the lock held */
	int64_t ms;    /* each wait's deadline, 0: none */
};

static int
await_once(struct awaiter *w)
{
	struct timespec dl = tu_deadline_in(w->ms * 1000000);
	return pl_cond_clockwait_any(w->c, w->a, alock_unlock, alock_relock,
	    CLOCK_MONOTONIC, w->ms ? &dl : NULL);
}

static void
awaiter_cleanup(void *arg)
{
	struct awaiter *w = arg;
	w->cancelled = pl_rmutex_is_owned(&w->a->r) ? 1 : -1;
	pl_rmutex_unlock(&w->a->r);
}

static void *
awaiter_main(void *arg)
{
	struct awaiter *w = arg;
	pl_rmutex_lock(&w->a->r);
	pthread_cleanup_push(awaiter_cleanup, w);
	while (*w->permits == 0 && w->rc == 0)
		w->rc = await_once(w);
	if (w->rc == 0)
		--*w->permits;
	pthread_cleanup_pop(0);
	pl_rmutex_unlock(&w->a->r);
	__atomic_fetch_add(w->done, 1, __ATOMIC_RELEASE);
	return NULL;
}

/* Signal wakes one waiter, broadcast every one; each is woken, not moved
 * onto another queue, and holds its lock again when it returns. */
Test(cond, clockwait_any_signal_wakes_one_and_broadcast_all, .timeout = 30)
{
	static pl_cond_t c;
	static struct alock a;
	static int permits;
	static size_t done;
	struct awaiter w[3];
	pthread_t t[3];

	for (int i = 0; i < 3; i++) {
		w[i] = (struct awaiter){ &c, &a, &permits, &done, 0, 0, 0 };
		t[i] = tu_spawn(awaiter_main, &w[i]);
		ASSERT_PARKED(&c, (size_t)i + 1);
	}
	cr_assert(cstate(&c) == PL_COND_WAITERS);
	pl_rmutex_lock(&a.r);
	permits = 1;
	cr_assert(pl_cond_signal(&c));
	cr_assert(count_parked(&c) == 2, "a signal left %zu of 3 on c",
	    count_parked(&c));
	pl_rmutex_unlock(&a.r);
	cr_assert(tu_wait_size_ge(&done, 1, TU_WAIT_NS));
	pl_rmutex_lock(&a.r);
	permits = 2;
	cr_assert(pl_cond_broadcast(&c) == 2);
	cr_assert(count_parked(&c) == 0 && cstate(&c) == 0);
	pl_rmutex_unlock(&a.r);
	for (int i = 0; i < 3; i++) {
		tu_join(t[i]);
		cr_assert(w[i].rc == 0, "waiter %d: %d", i, w[i].rc);
	}
	cr_assert(done == 3 && permits == 0);
	cr_assert(a.unlocks == 3 && a.relocks == 3,
	    "%d unlocks, %d relocks for 3 waits", a.unlocks, a.relocks);
	cr_assert(rmutex_free(&a.r) && !pl_cond_signal(&c));
}

Test(cond, clockwait_any_times_out_and_returns_what_relock_says, .timeout = 30)
{
	static pl_cond_t c;
	static struct alock a;
	/* Far enough that it has not passed when the wait looks at it, even
	 * on a loaded machine (a past one returns at once, never unlocking). */
	const int64_t ahead = 100 * 1000000;
	struct timespec dl = tu_deadline_in(ahead);

	pl_rmutex_lock(&a.r);
	int rc = pl_cond_clockwait_any(
	    &c, &a, alock_unlock, alock_relock, CLOCK_MONOTONIC, &dl);
	cr_assert(rc == ETIMEDOUT && tu_reached(&dl), "rc %d", rc);
	cr_assert(a.unlocks == 1 && a.relocks == 1 && pl_rmutex_is_owned(&a.r));
	cr_assert(count_parked(&c) == 0 && cstate(&c) == 0);

	/* relock's error comes first, also over a timeout. */
	a.relock_rc = EOWNERDEAD;
	dl = tu_deadline_in(ahead);
	rc = pl_cond_clockwait_any(
	    &c, &a, alock_unlock, alock_relock, CLOCK_MONOTONIC, &dl);
	cr_assert(rc == EOWNERDEAD, "rc %d, expected relock's EOWNERDEAD", rc);
	cr_assert(a.unlocks == 2 && a.relocks == 2 && pl_rmutex_is_owned(&a.r));

	/* Refused before any wait: the lock is never released. */
	dl = tu_deadline_in(-1000000);
	rc = pl_cond_clockwait_any(
	    &c, &a, alock_unlock, alock_relock, CLOCK_MONOTONIC, &dl);
	cr_assert(rc == ETIMEDOUT, "past deadline: %d", rc);
	rc = pl_cond_clockwait_any(
	    &c, &a, alock_unlock, alock_relock, CLOCK_PROCESS_CPUTIME_ID, &dl);
	cr_assert(rc == EINVAL, "bad clock: %d", rc);
	dl.tv_nsec = 1000000000L;
	rc = pl_cond_clockwait_any(
	    &c, &a, alock_unlock, alock_relock, CLOCK_MONOTONIC, &dl);
	cr_assert(rc == EINVAL, "bad deadline: %d", rc);
	cr_assert(a.unlocks == 2 && a.relocks == 2 && pl_rmutex_is_owned(&a.r));
	pl_rmutex_unlock(&a.r);
}

/* Strict alternation through one condition variable: a lost wakeup
 * leaves both threads waiting, and the deadline of every wait (5 s) then
 * fails the test. */
enum { ANY_ROUNDS = 10000 };

struct any_pp {
	pl_cond_t c;
	struct alock a;
	int turn; /* under a.r */
	int rc[2];
};

struct any_pp_arg {
	struct any_pp *x;
	int me;
};

static void *
any_pp_main(void *arg)
{
	struct any_pp_arg *p = arg;
	struct any_pp *x = p->x;
	pl_rmutex_lock(&x->a.r);
	for (int i = 0; i < ANY_ROUNDS && x->rc[p->me] == 0; i++) {
		while (x->turn != p->me && x->rc[p->me] == 0) {
			struct timespec dl = tu_deadline_in(5 * TU_SEC);
			x->rc[p->me] = pl_cond_clockwait_any(&x->c, &x->a,
			    alock_unlock, alock_relock, CLOCK_MONOTONIC, &dl);
		}
		x->turn = !p->me;
		pl_cond_signal(&x->c);
	}
	pl_rmutex_unlock(&x->a.r);
	return NULL;
}

Test(cond, clockwait_any_ping_pong_10000_rounds, .timeout = 60)
{
	static struct any_pp x;
	struct any_pp_arg p[2] = { { &x, 0 }, { &x, 1 } };
	pthread_t t[2];
	for (int i = 0; i < 2; i++)
		t[i] = tu_spawn(any_pp_main, &p[i]);
	for (int i = 0; i < 2; i++)
		tu_join(t[i]);
	cr_assert(x.rc[0] == 0 && x.rc[1] == 0,
	    "a wait timed out after 5 s (%d, %d): a wakeup was lost", x.rc[0],
	    x.rc[1]);
	cr_assert(x.a.unlocks == x.a.relocks && x.a.unlocks >= ANY_ROUNDS,
	    "%d unlocks, %d relocks", x.a.unlocks, x.a.relocks);
	cr_assert(count_parked(&x.c) == 0 && cstate(&x.c) == 0);
}

/* Cancelled while waiting: the cleanup handler runs with the lock taken
 * back by relock, and the waiter leaves c as on a timeout. */
Test(cond, clockwait_any_cancelled_holds_the_lock_in_cleanup, .timeout = 30)
{
	static pl_cond_t c;
	static struct alock a;
	static int permits;
	static size_t done;
	struct awaiter w = { &c, &a, &permits, &done, 0, 0, 0 };
	pthread_t t = tu_spawn(awaiter_main, &w);
	ASSERT_PARKED(&c, 1);
	cr_assert(pthread_cancel(t) == 0);
	join_cancelled(t);
	cr_assert(w.cancelled == 1, "the cleanup handler ran without the lock");
	cr_assert(a.unlocks == 1 && a.relocks == 1);
	cr_assert(count_parked(&c) == 0 && cstate(&c) == 0);
	cr_assert(rmutex_free(&a.r));
}

/* Waiters of pl_cond_clockwait_any and of a pl_mutex_t at once, in the
 * order L, m, L: a broadcast wakes both of L's and moves m's onto m (it
 * holds m), in two rounds.  Before, it aborted. */
Test(cond, clockwait_any_and_a_mutex_at_once_broadcast, .timeout = 30)
{
	static pl_cond_t c;
	static pl_mutex_t m;
	static struct alock a;
	static int permits, go;
	static size_t done;
	struct awaiter aw[2];
	struct tm_waiter mw = { &c, &m, &go, &done, false };
	pthread_t t[3];

	for (int i = 0; i < 3; i++) {
		if (i == 1) {
			t[i] = tu_spawn(tm_waiter_main, &mw);
		} else {
			aw[i / 2] = (struct awaiter){ &c, &a, &permits, &done,
				0, 0, 0 };
			t[i] = tu_spawn(awaiter_main, &aw[i / 2]);
		}
		ASSERT_PARKED(&c, (size_t)i + 1);
	}
	pl_mutex_lock(&m);
	go = 1;
	pl_rmutex_lock(&a.r);
	permits = 2;
	cr_assert(pl_cond_broadcast(&c) == 3);
	cr_assert(count_parked(&c) == 0 && cstate(&c) == 0);
	cr_assert(count_parked(&m) == 1 && mstate(&m) == MUTEX_LOCKED_PARKED,
	    "m's waiter not moved onto m: %zu there, state %u",
	    count_parked(&m), mstate(&m));
	pl_rmutex_unlock(&a.r);
	pl_mutex_unlock(&m);
	for (int i = 0; i < 3; i++)
		tu_join(t[i]);
	cr_assert(aw[0].rc == 0 && aw[1].rc == 0 && permits == 0);
	cr_assert(mw.held_after && done == 3);
	cr_assert(a.unlocks == 2 && a.relocks == 2);
	cr_assert(mstate(&m) == 0 && rmutex_free(&a.r));
}
