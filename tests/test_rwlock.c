/* SPDX-License-Identifier: MIT */
/*
 * Tests of pl_rwlock_t: shared readers, writer exclusion under stress,
 * latency of writers under a stream of readers and of readers under a
 * stream of writers, phase fairness, readers queueing behind a waiting
 * writer, timed calls that leave no trace, the try variants, misuse
 * detection and lost wakeups.
 *
 * Readers park on the lock's address, writers one byte further
 * (WKEY(&lock)); count_parked() on those two addresses tells who waits.
 */
#include <fcntl.h>

#include "testutil.h"

TU_CRITERION_MAIN_SERIAL()

TestSuite(rwlock, .timeout = 30);

#define WKEY(l) ((const void *)((const char *)(l) + 1))
#define ONE PL_RWLOCK_ONE_READER
#define WRITER PL_RWLOCK_WRITER
#define WPARKED PL_RWLOCK_WRITER_PARKED
#define RPARKED PL_RWLOCK_READER_PARKED

static uintptr_t
state_of(const pl_rwlock_t *l)
{
	return __atomic_load_n(&l->state, __ATOMIC_RELAXED);
}

/* ------------------------------------------------------------------ */
/* An actor: a thread that takes the lock once, in read or write mode, */
/* records the order in which it entered, and holds the lock until it  */
/* is told to leave (or leaves at once).                               */

struct script {
	pl_rwlock_t l;
	int order;          /* atomic: entry sequence numbers */
	int readers_inside; /* atomic */
	int left;           /* atomic: actors that released the lock */
};

struct actor {
	struct script *s;
	bool write;
	bool hold; /* wait for may_leave before unlocking */
	bool timed;
	struct timespec dl; /* with timed */
	int wait_readers;   /* >0: after entering, wait (bounded) until that
	                       many readers are inside at once */
	/* results */
	int rc;
	int seq;
	bool saw_readers; /* wait_readers was reached */
	int readers_seen; /* readers_inside seen by a writer on entry */
	int left_seen;    /* left seen on entry */
	int64_t returned_ns;
	int entered;   /* atomic */
	int may_leave; /* atomic */
	int waited;    /* atomic: done waiting for wait_readers */
	int done;      /* atomic */
	pid_t tid;     /* atomic */
	pthread_t t;
};

static void *
actor_main(void *arg)
{
	struct actor *a = arg;
	struct script *s = a->s;
	tu_store_tid(&a->tid);
	if (a->write)
		a->rc = a->timed ? pl_rwlock_timedwrlock(&s->l, &a->dl)
		                 : (pl_rwlock_wrlock(&s->l), 0);
	else
		a->rc = a->timed ? pl_rwlock_timedrdlock(&s->l, &a->dl)
		                 : (pl_rwlock_rdlock(&s->l), 0);
	a->returned_ns = tu_now_ns();
	if (a->rc != 0) {
		__atomic_store_n(&a->done, 1, __ATOMIC_RELEASE);
		return NULL;
	}
	a->seq = __atomic_fetch_add(&s->order, 1, __ATOMIC_ACQ_REL);
	a->left_seen = __atomic_load_n(&s->left, __ATOMIC_ACQUIRE);
	if (a->write) {
		a->readers_seen =
		    __atomic_load_n(&s->readers_inside, __ATOMIC_ACQUIRE);
	} else {
		__atomic_fetch_add(&s->readers_inside, 1, __ATOMIC_ACQ_REL);
	}
	__atomic_store_n(&a->entered, 1, __ATOMIC_RELEASE);
	if (a->wait_readers > 0) {
		a->saw_readers = tu_wait_int_eq(
		    &s->readers_inside, a->wait_readers, 5 * TU_SEC);
		__atomic_store_n(&a->waited, 1, __ATOMIC_RELEASE);
	}
	if (a->hold)
		tu_wait_int_eq(&a->may_leave, 1, 20 * TU_SEC);
	if (a->write) {
		__atomic_fetch_add(&s->left, 1, __ATOMIC_ACQ_REL);
		pl_rwlock_wrunlock(&s->l);
	} else {
		__atomic_fetch_sub(&s->readers_inside, 1, __ATOMIC_ACQ_REL);
		__atomic_fetch_add(&s->left, 1, __ATOMIC_ACQ_REL);
		pl_rwlock_rdunlock(&s->l);
	}
	__atomic_store_n(&a->done, 1, __ATOMIC_RELEASE);
	return NULL;
}

/* Start an actor; with wait_readers > 0 it waits, once inside, until
 * that many readers are inside at once; with hold it then waits for
 * actor_release() before unlocking. */
static void
actor_start_ex(
    struct actor *a, struct script *s, bool write, bool hold, int wait_readers)
{
	memset(a, 0, sizeof(*a));
	a->s = s;
	a->write = write;
	a->hold = hold;
	a->wait_readers = wait_readers;
	a->seq = -1;
	a->t = tu_spawn(actor_main, a);
}

static void
actor_start(struct actor *a, struct script *s, bool write, bool hold)
{
	actor_start_ex(a, s, write, hold, 0);
}

static void
actor_start_timed(struct actor *a, struct script *s, bool write, int64_t rel_ns)
{
	memset(a, 0, sizeof(*a));
	a->s = s;
	a->write = write;
	a->timed = true;
	a->seq = -1;
	a->dl = tu_deadline_in(rel_ns);
	a->t = tu_spawn(actor_main, a);
}

/* Let a holding actor unlock, once it has finished looking for the other
 * readers: a reader released earlier could leave before the others'
 * next look, and they would miss seeing it inside. */
static void
actor_release(struct actor *a)
{
	if (a->wait_readers > 0)
		tu_wait_int_eq(&a->waited, 1, 10 * TU_SEC);
	__atomic_store_n(&a->may_leave, 1, __ATOMIC_RELEASE);
}

static void
actor_finish(struct actor *a, const char *name)
{
	cr_assert(tu_wait_int_eq(&a->done, 1, TU_WAIT_NS),
	    "%s never finished (entered: %d)", name,
	    __atomic_load_n(&a->entered, __ATOMIC_ACQUIRE));
	tu_join(a->t);
}

struct try_ctx {
	pl_rwlock_t *l;
	bool write;
	bool got;
};

static void *
try_main(void *arg)
{
	struct try_ctx *t = arg;
	if (t->write) {
		t->got = pl_rwlock_trywrlock(t->l);
		if (t->got)
			pl_rwlock_wrunlock(t->l);
	} else {
		t->got = pl_rwlock_tryrdlock(t->l);
		if (t->got)
			pl_rwlock_rdunlock(t->l);
	}
	return NULL;
}

/* Whether another thread can take l in that mode now (it releases it). */
static bool
try_from_other_thread(pl_rwlock_t *l, bool write)
{
	struct try_ctx t = { l, write, false };
	tu_join(tu_spawn(try_main, &t));
	return t.got;
}

/* ------------------------------------------------------------------ */
/* 1. basics and the try variants                                      */

Test(rwlock, word_and_try_variants, .timeout = 30)
{
	static pl_rwlock_t l;
	cr_assert(sizeof(pl_rwlock_t) == sizeof(uintptr_t));
	memset(&l, 0xff, sizeof(l));
	pl_rwlock_init(&l);
	cr_assert(state_of(&l) == 0);
	pl_rwlock_t s = PL_RWLOCK_INITIALIZER;
	cr_assert(state_of(&s) == 0);

	/* Readers share; trywrlock fails while any holds. */
	cr_assert(pl_rwlock_tryrdlock(&l));
	cr_assert(state_of(&l) == ONE, "state %#lx with one reader",
	    (unsigned long)state_of(&l));
	cr_assert(pl_rwlock_tryrdlock(&l));
	cr_assert(try_from_other_thread(&l, false),
	    "a third reader could not share the lock");
	cr_assert(state_of(&l) == 2 * ONE);
	cr_assert(!pl_rwlock_trywrlock(&l), "trywrlock with readers inside");
	cr_assert(!try_from_other_thread(&l, true));
	pl_rwlock_rdunlock(&l);
	cr_assert(!pl_rwlock_trywrlock(&l), "trywrlock with a reader inside");
	cr_assert(state_of(&l) == ONE);
	pl_rwlock_rdunlock(&l);
	cr_assert(state_of(&l) == 0);

	/* A writer excludes everybody. */
	cr_assert(pl_rwlock_trywrlock(&l));
	cr_assert(state_of(&l) == WRITER);
	cr_assert(!pl_rwlock_trywrlock(&l));
	cr_assert(!pl_rwlock_tryrdlock(&l), "tryrdlock while a writer holds");
	cr_assert(!try_from_other_thread(&l, false));
	cr_assert(!try_from_other_thread(&l, true));
	cr_assert(state_of(&l) == WRITER, "a failed try changed the word");
	pl_rwlock_wrunlock(&l);
	cr_assert(state_of(&l) == 0);

	/* The blocking calls on a free lock. */
	pl_rwlock_rdlock(&l);
	pl_rwlock_rdlock(&l);
	cr_assert(state_of(&l) == 2 * ONE);
	pl_rwlock_rdunlock(&l);
	pl_rwlock_rdunlock(&l);
	pl_rwlock_wrlock(&l);
	cr_assert(state_of(&l) == WRITER);
	pl_rwlock_wrunlock(&l);
	cr_assert(state_of(&l) == 0);
}

Test(rwlock, tryrdlock_fails_while_writer_waits, .timeout = 30)
{
	static struct script s;
	static struct actor w;
	memset(&s, 0, sizeof(s));
	pl_rwlock_rdlock(&s.l);
	actor_start(&w, &s, true, false);
	ASSERT_PARKED(WKEY(&s.l), 1);
	cr_assert(state_of(&s.l) == (ONE | WPARKED), "state %#lx",
	    (unsigned long)state_of(&s.l));
	cr_assert(!pl_rwlock_tryrdlock(&s.l),
	    "tryrdlock succeeded while a writer waits");
	cr_assert(!try_from_other_thread(&s.l, false),
	    "tryrdlock from another thread succeeded while a writer waits");
	cr_assert(!pl_rwlock_trywrlock(&s.l));
	cr_assert(!try_from_other_thread(&s.l, true));
	cr_assert(state_of(&s.l) == (ONE | WPARKED),
	    "failed try calls changed the word to %#lx",
	    (unsigned long)state_of(&s.l));
	cr_assert(__atomic_load_n(&w.entered, __ATOMIC_ACQUIRE) == 0);
	pl_rwlock_rdunlock(&s.l);
	actor_finish(&w, "the writer");
	cr_assert(w.rc == 0 && w.readers_seen == 0);
	cr_assert(state_of(&s.l) == 0);
	cr_assert(count_parked(&s.l) == 0 && count_parked(WKEY(&s.l)) == 0);
}

/* ------------------------------------------------------------------ */
/* 2. two readers inside at once                                       */

Test(rwlock, two_readers_inside_at_once, .timeout = 30)
{
	static struct script s;
	static struct actor r[2];
	memset(&s, 0, sizeof(s));
	/* Each reader, once inside, waits (bounded) for the other. */
	for (int i = 0; i < 2; i++)
		actor_start_ex(&r[i], &s, false, true, 2);
	cr_assert(tu_wait_int_eq(&s.readers_inside, 2, TU_WAIT_NS),
	    "%d reader(s) inside, expected 2 at once",
	    __atomic_load_n(&s.readers_inside, __ATOMIC_ACQUIRE));
	cr_assert(state_of(&s.l) == 2 * ONE, "state %#lx with two readers",
	    (unsigned long)state_of(&s.l));
	cr_assert(!try_from_other_thread(&s.l, true),
	    "a writer got in with two readers inside");
	for (int i = 0; i < 2; i++)
		actor_release(&r[i]);
	for (int i = 0; i < 2; i++) {
		actor_finish(&r[i], "a reader");
		cr_assert(r[i].rc == 0);
		cr_assert(r[i].saw_readers,
		    "reader %d never saw the other "
		    "inside",
		    i);
	}
	cr_assert(state_of(&s.l) == 0);
}

/* ------------------------------------------------------------------ */
/* 3. writer exclusion under stress                                    */

enum { EX_READERS = 4, EX_WRITERS = 2, EX_OPS = 1000000 };

struct excl {
	pl_rwlock_t l;
	int writer_inside;  /* atomic */
	int readers_inside; /* atomic */
	long violations;    /* atomic */
	long a, b;          /* plain: written by writers, a == b outside */
	long writes;        /* plain: under the write lock */
	long my_writes[EX_WRITERS];
	long my_reads[EX_READERS];
	int stop;        /* atomic */
	size_t finished; /* atomic */
	struct tu_barrier start;
};

struct ex_arg {
	struct excl *e;
	int idx;
};

static void
ex_violation(struct excl *e)
{
	__atomic_fetch_add(&e->violations, 1, __ATOMIC_RELAXED);
}

static void *
ex_writer(void *arg)
{
	struct ex_arg *x = arg;
	struct excl *e = x->e;
	tu_barrier_wait(&e->start);
	for (long i = 0;
	     i < EX_OPS && !__atomic_load_n(&e->stop, __ATOMIC_RELAXED); i++) {
		pl_rwlock_wrlock(&e->l);
		if (__atomic_exchange_n(&e->writer_inside, 1, __ATOMIC_ACQ_REL))
			ex_violation(e); /* another writer inside */
		if (__atomic_load_n(&e->readers_inside, __ATOMIC_ACQUIRE))
			ex_violation(e);
		e->a++;
		for (volatile int k = 0; k < 20; k++)
			;
		e->b++;
		e->writes++;
		if (__atomic_load_n(&e->readers_inside, __ATOMIC_ACQUIRE))
			ex_violation(e);
		__atomic_store_n(&e->writer_inside, 0, __ATOMIC_RELEASE);
		pl_rwlock_wrunlock(&e->l);
		e->my_writes[x->idx]++;
	}
	__atomic_fetch_add(&e->finished, 1, __ATOMIC_RELEASE);
	return NULL;
}

static void *
ex_reader(void *arg)
{
	struct ex_arg *x = arg;
	struct excl *e = x->e;
	tu_barrier_wait(&e->start);
	for (long i = 0;
	     i < EX_OPS && !__atomic_load_n(&e->stop, __ATOMIC_RELAXED); i++) {
		pl_rwlock_rdlock(&e->l);
		__atomic_fetch_add(&e->readers_inside, 1, __ATOMIC_ACQ_REL);
		if (__atomic_load_n(&e->writer_inside, __ATOMIC_ACQUIRE))
			ex_violation(e);
		long a = e->a;
		for (volatile int k = 0; k < 20; k++)
			;
		if (e->b != a)
			ex_violation(e); /* a writer changed it under us */
		if (__atomic_load_n(&e->writer_inside, __ATOMIC_ACQUIRE))
			ex_violation(e);
		__atomic_fetch_sub(&e->readers_inside, 1, __ATOMIC_ACQ_REL);
		pl_rwlock_rdunlock(&e->l);
		e->my_reads[x->idx]++;
	}
	__atomic_fetch_add(&e->finished, 1, __ATOMIC_RELEASE);
	return NULL;
}

Test(rwlock, writer_exclusion_stress, .timeout = 30)
{
	enum { T = EX_READERS + EX_WRITERS };
	static struct excl e;
	static struct ex_arg xa[T];
	memset(&e, 0, sizeof(e));
	tu_barrier_init(&e.start, T);
	pthread_t t[T];
	for (int i = 0; i < T; i++) {
		bool w = i < EX_WRITERS;
		xa[i] = (struct ex_arg){ &e, w ? i : i - EX_WRITERS };
		t[i] = tu_spawn(w ? ex_writer : ex_reader, &xa[i]);
	}
	/* At most 2 s of work (or EX_OPS each), then stop. */
	tu_wait_size_ge(&e.finished, T, 2 * TU_SEC);
	__atomic_store_n(&e.stop, 1, __ATOMIC_RELAXED);
	cr_assert(tu_wait_size_ge(&e.finished, T, 20 * TU_SEC),
	    "%zu of %d threads finished after the stop: a lost wakeup?",
	    __atomic_load_n(&e.finished, __ATOMIC_ACQUIRE), T);
	for (int i = 0; i < T; i++)
		tu_join(t[i]);
	tu_barrier_destroy(&e.start);

	long writes = 0, reads = 0;
	for (int i = 0; i < EX_WRITERS; i++)
		writes += e.my_writes[i];
	for (int i = 0; i < EX_READERS; i++)
		reads += e.my_reads[i];
	cr_assert(e.violations == 0, "%ld exclusion violations", e.violations);
	cr_assert(e.writes == writes && e.a == writes && e.b == writes,
	    "writes counted %ld, a %ld, b %ld, expected %ld", e.writes, e.a,
	    e.b, writes);
	cr_assert(
	    writes > 0 && reads > 0, "writes %ld, reads %ld", writes, reads);
	for (int i = 0; i < EX_WRITERS; i++)
		cr_assert(e.my_writes[i] > 0, "writer %d never got in", i);
	for (int i = 0; i < EX_READERS; i++)
		cr_assert(e.my_reads[i] > 0, "reader %d never got in", i);
	cr_assert(state_of(&e.l) == 0, "state %#lx at the end",
	    (unsigned long)state_of(&e.l));
	cr_assert(count_parked(&e.l) == 0 && count_parked(WKEY(&e.l)) == 0);
}

/* ------------------------------------------------------------------ */
/* 4. latency: a writer under a stream of readers, and vice versa      */

enum { LAT_ROUNDS = 20 };
#define LAT_HOLD_NS (100 * TU_US)
#define LAT_MAX_NS (100 * TU_MS)

struct stream {
	pl_rwlock_t l;
	bool stream_writes;   /* the stream threads write (else read) */
	int stop;             /* atomic */
	size_t iters;         /* atomic: stream critical sections done */
	size_t per_thread[4]; /* atomic */
};

struct stream_arg {
	struct stream *s;
	int idx;
};

static void *
stream_main(void *arg)
{
	struct stream_arg *a = arg;
	struct stream *s = a->s;
	while (!__atomic_load_n(&s->stop, __ATOMIC_RELAXED)) {
		if (s->stream_writes) {
			pl_rwlock_wrlock(&s->l);
			tu_busy_ns(LAT_HOLD_NS);
			pl_rwlock_wrunlock(&s->l);
		} else {
			pl_rwlock_rdlock(&s->l);
			tu_busy_ns(LAT_HOLD_NS);
			pl_rwlock_rdunlock(&s->l);
		}
		__atomic_fetch_add(&s->iters, 1, __ATOMIC_RELAXED);
		__atomic_fetch_add(&s->per_thread[a->idx], 1, __ATOMIC_RELAXED);
	}
	return NULL;
}

static void
run_latency(bool stream_writes, int nstream)
{
	static struct stream s;
	static struct stream_arg sa[4];
	memset(&s, 0, sizeof(s));
	s.stream_writes = stream_writes;
	/* The first slow path of a process refines the tuning (tens of
	 * microseconds, more on a loaded machine); a one-time cost, not a
	 * waiting time, so pay it before measuring. */
	struct pl_tuning warm;
	pl_tuning_get(&warm);
	pthread_t t[4];
	for (int i = 0; i < nstream; i++) {
		sa[i] = (struct stream_arg){ &s, i };
		t[i] = tu_spawn(stream_main, &sa[i]);
	}
	/* Every stream thread is really looping before we measure. */
	for (int i = 0; i < nstream; i++)
		cr_assert(tu_wait_size_ge(&s.per_thread[i], 10, TU_WAIT_NS),
		    "stream thread %d does not get the lock", i);

	int64_t lat[LAT_ROUNDS];
	int contended = 0;
	bool stalled = false;
	for (int k = 0; k < LAT_ROUNDS && !stalled; k++) {
		uintptr_t before = state_of(&s.l);
		if (stream_writes ? (before & WRITER) != 0 : before >= ONE)
			contended++;
		int64_t t0 = tu_now_ns();
		if (stream_writes) {
			pl_rwlock_rdlock(&s.l);
			lat[k] = tu_now_ns() - t0;
			pl_rwlock_rdunlock(&s.l);
		} else {
			pl_rwlock_wrlock(&s.l);
			lat[k] = tu_now_ns() - t0;
			pl_rwlock_wrunlock(&s.l);
		}
		/* The stream owns the lock again before the next attempt. */
		size_t target = __atomic_load_n(&s.iters, __ATOMIC_RELAXED) +
		    2 * (size_t)nstream;
		stalled = !tu_wait_size_ge(&s.iters, target, TU_WAIT_NS);
	}
	__atomic_store_n(&s.stop, 1, __ATOMIC_RELAXED);
	for (int i = 0; i < nstream; i++)
		tu_join(t[i]);

	cr_assert(!stalled, "the stream stopped making progress");
	int64_t max = 0;
	int worst = 0;
	for (int k = 0; k < LAT_ROUNDS; k++)
		if (lat[k] > max) {
			max = lat[k];
			worst = k;
		}
	cr_assert(max < LAT_MAX_NS,
	    "round %d: a %s waited %lld ms under a "
	    "stream of %d %s",
	    worst, stream_writes ? "reader" : "writer",
	    (long long)(max / TU_MS), nstream,
	    stream_writes ? "writers" : "readers");
	cr_assert(contended > 0,
	    "the lock was never held when we asked for "
	    "it: the test is void");
	cr_assert(state_of(&s.l) == 0, "state %#lx at the end",
	    (unsigned long)state_of(&s.l));
}

Test(rwlock, writer_gets_in_under_reader_stream, .timeout = 30)
{
	run_latency(false, 4);
}

Test(rwlock, reader_gets_in_under_writer_stream, .timeout = 30)
{
	run_latency(true, 3);
}

/* ------------------------------------------------------------------ */
/* 5. phase fairness                                                   */

Test(rwlock, waiting_readers_enter_before_next_writer, .timeout = 30)
{
	enum { NR = 3 };
	static struct script s;
	static struct actor r[NR], w2, late;
	memset(&s, 0, sizeof(s));

	pl_rwlock_wrlock(&s.l); /* W */
	for (int i = 0; i < NR; i++)
		actor_start(&r[i], &s, false, false);
	ASSERT_PARKED(&s.l, NR);
	cr_assert(state_of(&s.l) == (WRITER | RPARKED), "state %#lx",
	    (unsigned long)state_of(&s.l));
	actor_start(&w2, &s, true, false);
	ASSERT_PARKED(WKEY(&s.l), 1);
	cr_assert(count_parked(&s.l) == NR,
	    "readers and writers share a "
	    "queue?");
	cr_assert(state_of(&s.l) == (WRITER | RPARKED | WPARKED), "state %#lx",
	    (unsigned long)state_of(&s.l));

	pl_rwlock_wrunlock(&s.l);
	for (int i = 0; i < NR; i++)
		actor_finish(&r[i], "a reader");
	actor_finish(&w2, "the second writer");

	for (int i = 0; i < NR; i++)
		cr_assert(r[i].rc == 0 && r[i].seq >= 0 && r[i].seq < NR,
		    "reader %d entered as #%d: the waiting writer went first?",
		    i, r[i].seq);
	cr_assert(w2.seq == NR,
	    "W2 entered as #%d, expected after the %d "
	    "readers",
	    w2.seq, NR);
	cr_assert(w2.readers_seen == 0 && w2.left_seen == NR,
	    "W2 entered with %d reader(s) inside, %d left", w2.readers_seen,
	    w2.left_seen);
	cr_assert(state_of(&s.l) == 0);

	/* The readers enter together: with W held again, park three that
	 * each wait (bounded) until all three are inside at once, and stay
	 * until released. */
	memset(&s, 0, sizeof(s));
	pl_rwlock_wrlock(&s.l);
	for (int i = 0; i < NR; i++)
		actor_start_ex(&r[i], &s, false, true, NR);
	ASSERT_PARKED(&s.l, NR);
	actor_start(&w2, &s, true, false);
	ASSERT_PARKED(WKEY(&s.l), 1);
	pl_rwlock_wrunlock(&s.l);
	cr_assert(tu_wait_int_eq(&s.readers_inside, NR, TU_WAIT_NS),
	    "%d of %d waiting readers inside after the writer left",
	    __atomic_load_n(&s.readers_inside, __ATOMIC_ACQUIRE), NR);
	cr_assert(count_parked(WKEY(&s.l)) == 1, "W2 is not waiting");
	cr_assert(state_of(&s.l) == (NR * ONE | WPARKED),
	    "state %#lx "
	    "in the reader phase",
	    (unsigned long)state_of(&s.l));
	/* A reader arriving now, while W2 waits, queues behind W2. */
	actor_start(&late, &s, false, false);
	ASSERT_PARKED(&s.l, 1);
	for (int i = 0; i < NR; i++)
		actor_release(&r[i]);
	for (int i = 0; i < NR; i++)
		actor_finish(&r[i], "a reader");
	actor_finish(&w2, "the second writer");
	actor_finish(&late, "the late reader");
	for (int i = 0; i < NR; i++)
		cr_assert(r[i].saw_readers,
		    "reader %d never saw all %d readers "
		    "inside at once: they were not let in together",
		    i, NR);
	cr_assert(w2.seq == NR && w2.readers_seen == 0,
	    "W2 entered as #%d "
	    "with %d reader(s) inside",
	    w2.seq, w2.readers_seen);
	cr_assert(late.seq == NR + 1,
	    "the late reader entered as #%d, "
	    "expected after W2 (#%d)",
	    late.seq, NR);
	cr_assert(state_of(&s.l) == 0);
	cr_assert(count_parked(&s.l) == 0 && count_parked(WKEY(&s.l)) == 0);
}

/* A reader that parks while the writer's unlock is on its way: the
 * unlock has looked at the word (no RPARKED: nobody to let in but a
 * writer) and waits for the writer key's bucket, held here from outside
 * (tu_bucket_hold).  The reader parks meanwhile, WRITER still set: it
 * waited through this hold, and must enter before the writer that the
 * unlock then wakes (API.md: "when a writer releases, every reader
 * waiting at that moment acquires before any waiting writer").  Before,
 * that writer went first. */
static bool
actor_in_futex(void *arg)
{
	struct actor *a = arg;
	return tu_thread_in_futex(__atomic_load_n(&a->tid, __ATOMIC_ACQUIRE));
}

Test(rwlock, a_reader_parked_while_the_unlock_looks_goes_before_the_writer,
    .timeout = 30)
{
	static struct script arena[8];
	struct script *s = NULL;
	for (size_t i = 0; i < 8 && !s; i++)
		if (pli_lot_bucket_of(&arena[i].l) !=
		    pli_lot_bucket_of(WKEY(&arena[i].l)))
			s = &arena[i];
	cr_assert(s, "no rwlock whose keys hash to two buckets");
	memset(s, 0, sizeof(*s));
	static struct actor w1, w2, r;

	actor_start(&w1, s, true, true);
	cr_assert(tu_wait_int_eq(&w1.entered, 1, TU_WAIT_NS));
	actor_start(&w2, s, true, false);
	ASSERT_PARKED(WKEY(&s->l), 1);
	static struct tu_bucket_hold hold;
	tu_bucket_hold_start(&hold, WKEY(&s->l));
	actor_release(&w1); /* its unlock waits for the writer bucket */
	cr_assert(tu_wait_until(actor_in_futex, &w1, TU_WAIT_NS),
	    "the unlock did not wait for the writer key's bucket");
	cr_assert(state_of(&s->l) == (WRITER | WPARKED), "state %#lx",
	    (unsigned long)state_of(&s->l));
	actor_start(&r, s, false, false);
	ASSERT_PARKED(&s->l, 1);
	tu_bucket_hold_end(&hold);
	actor_finish(&w1, "the first writer");
	actor_finish(&r, "the reader");
	actor_finish(&w2, "the second writer");
	cr_assert(r.seq == 1 && w2.seq == 2,
	    "the reader entered as #%d and the waiting writer as #%d: the "
	    "writer went first",
	    r.seq, w2.seq);
	cr_assert(w2.readers_seen == 0);
	cr_assert(state_of(&s->l) == 0);
	cr_assert(count_parked(&s->l) == 0 && count_parked(WKEY(&s->l)) == 0);
}

/* A reader that spun through a writer's hold claims the next phase
 * (READER_WAITING) without parking.  An unlock of that writer that wakes
 * a parked writer with the fairness timer due must not hand it the lock
 * past the claim: the reader goes first, as API.md promises ("when a
 * writer releases, every reader waiting at that moment acquires before
 * any waiting writer").  The test sets the claim as the spinning reader
 * does, so that the order does not hang on how long a reader spins; a
 * fairness interval of 0 makes every unpark's timer due. */
Test(
    rwlock, a_writer_is_not_handed_the_lock_past_a_readers_claim, .timeout = 30)
{
	static struct script s;
	static struct actor w2;
	memset(&s, 0, sizeof(s));
	struct pl_tuning base;
	pl_tuning_get(&base);
	tu_tuning_fair_interval(&base, 0);

	pl_rwlock_wrlock(&s.l); /* W1 */
	actor_start(&w2, &s, true, false);
	ASSERT_PARKED(WKEY(&s.l), 1);
	__atomic_fetch_or(
	    &s.l.state, PL_RWLOCK_READER_WAITING, __ATOMIC_RELAXED);
	pl_rwlock_wrunlock(&s.l);
	uintptr_t st = state_of(&s.l);
	cr_assert(!(st & WRITER),
	    "W1's unlock handed the lock to W2 past the readers' claim "
	    "(state %#lx)",
	    (unsigned long)st);
	pl_rwlock_rdlock(&s.l); /* the claiming reader */
	cr_assert(!__atomic_load_n(&w2.entered, __ATOMIC_ACQUIRE),
	    "W2 entered before the reader that claimed the phase");
	pl_rwlock_rdunlock(&s.l);
	actor_finish(&w2, "W2");
	cr_assert(w2.rc == 0 && w2.seq == 0);
	cr_assert(
	    state_of(&s.l) == 0, "state %#lx", (unsigned long)state_of(&s.l));
	cr_assert(count_parked(&s.l) == 0 && count_parked(WKEY(&s.l)) == 0);
	pl_tuning_set(&base);
}

Test(rwlock, reader_queues_behind_waiting_writer, .timeout = 30)
{
	static struct script s;
	static struct actor w, r2;
	memset(&s, 0, sizeof(s));

	pl_rwlock_rdlock(&s.l); /* R1 */
	actor_start(&w, &s, true, false);
	ASSERT_PARKED(WKEY(&s.l), 1);
	cr_assert(!try_from_other_thread(&s.l, false),
	    "tryrdlock succeeded while a writer waits");
	actor_start(&r2, &s, false, false);
	ASSERT_PARKED(&s.l, 1);
	cr_assert(state_of(&s.l) == (ONE | WPARKED | RPARKED), "state %#lx",
	    (unsigned long)state_of(&s.l));
	cr_assert(__atomic_load_n(&s.order, __ATOMIC_ACQUIRE) == 0,
	    "somebody entered while R1 holds the lock and W waits");

	pl_rwlock_rdunlock(&s.l); /* R1 leaves: W, then R2 */
	actor_finish(&w, "the writer");
	actor_finish(&r2, "the second reader");
	cr_assert(w.seq == 0 && r2.seq == 1,
	    "W entered as #%d, R2 as #%d: "
	    "R2 overtook the waiting writer",
	    w.seq, r2.seq);
	cr_assert(w.readers_seen == 0);
	cr_assert(r2.left_seen == 1, "R2 entered before W left");
	cr_assert(state_of(&s.l) == 0);
	cr_assert(count_parked(&s.l) == 0 && count_parked(WKEY(&s.l)) == 0);
}

/* ------------------------------------------------------------------ */
/* 6. timed calls                                                      */

static void
check_timed_out(const struct actor *a, const char *name)
{
	cr_assert(
	    a->rc == ETIMEDOUT, "%s: rc %d, expected ETIMEDOUT", name, a->rc);
	cr_assert(a->returned_ns >= tu_ts_to_ns(&a->dl),
	    "%s: ETIMEDOUT %lld ns before the deadline", name,
	    (long long)(tu_ts_to_ns(&a->dl) - a->returned_ns));
	cr_assert(a->returned_ns < tu_ts_to_ns(&a->dl) + 2 * TU_SEC,
	    "%s: ETIMEDOUT %lld ms after the deadline", name,
	    (long long)((a->returned_ns - tu_ts_to_ns(&a->dl)) / TU_MS));
}

Test(rwlock, timed_writer_timeout_lets_queued_readers_in, .timeout = 30)
{
	static struct script s;
	static struct actor tw, r[2];
	memset(&s, 0, sizeof(s));

	pl_rwlock_rdlock(&s.l); /* R0 holds the lock throughout */
	actor_start_timed(&tw, &s, true, 400 * TU_MS);
	ASSERT_PARKED(WKEY(&s.l), 1);
	for (int i = 0; i < 2; i++)
		actor_start(&r[i], &s, false, true);
	ASSERT_PARKED(&s.l, 2);
	cr_assert(__atomic_load_n(&tw.done, __ATOMIC_ACQUIRE) == 0,
	    "the timed writer finished before the readers queued: machine "
	    "too slow for a 400 ms deadline");
	cr_assert(state_of(&s.l) == (ONE | WPARKED | RPARKED), "state %#lx",
	    (unsigned long)state_of(&s.l));

	actor_finish(&tw, "the timed writer");
	check_timed_out(&tw, "timed writer");
	/* No phantom writer: the readers it held back get in while R0
	 * still holds the lock. */
	cr_assert(tu_wait_int_eq(&s.readers_inside, 2, TU_WAIT_NS),
	    "%d of 2 queued readers got in after the writer timed out "
	    "(state %#lx)",
	    __atomic_load_n(&s.readers_inside, __ATOMIC_ACQUIRE),
	    (unsigned long)state_of(&s.l));
	cr_assert(state_of(&s.l) == 3 * ONE,
	    "state %#lx with 3 readers "
	    "inside and nobody waiting",
	    (unsigned long)state_of(&s.l));
	cr_assert(count_parked(&s.l) == 0 && count_parked(WKEY(&s.l)) == 0);
	for (int i = 0; i < 2; i++)
		actor_release(&r[i]);
	for (int i = 0; i < 2; i++)
		actor_finish(&r[i], "a queued reader");
	pl_rwlock_rdunlock(&s.l);
	cr_assert(state_of(&s.l) == 0, "state %#lx at the end",
	    (unsigned long)state_of(&s.l));
}

Test(rwlock, timed_writer_timeout_while_writer_holds, .timeout = 30)
{
	static struct script s;
	static struct actor tw, w, r;
	memset(&s, 0, sizeof(s));

	/* Alone: the word is back to WRITER once it has timed out. */
	pl_rwlock_wrlock(&s.l);
	actor_start_timed(&tw, &s, true, 100 * TU_MS);
	actor_finish(&tw, "the timed writer");
	check_timed_out(&tw, "timed writer");
	cr_assert(state_of(&s.l) == WRITER,
	    "state %#lx after the only "
	    "waiter timed out",
	    (unsigned long)state_of(&s.l));
	cr_assert(count_parked(WKEY(&s.l)) == 0);

	/* Behind it, a plain writer and a reader: they still get in. */
	actor_start_timed(&tw, &s, true, 300 * TU_MS);
	ASSERT_PARKED(WKEY(&s.l), 1);
	actor_start(&w, &s, true, false);
	ASSERT_PARKED(WKEY(&s.l), 2);
	actor_start(&r, &s, false, false);
	ASSERT_PARKED(&s.l, 1);
	actor_finish(&tw, "the timed writer");
	check_timed_out(&tw, "timed writer");
	cr_assert(state_of(&s.l) == (WRITER | WPARKED | RPARKED),
	    "state %#lx with a writer and a reader still parked",
	    (unsigned long)state_of(&s.l));
	pl_rwlock_wrunlock(&s.l);
	actor_finish(&r, "the reader");
	actor_finish(&w, "the writer");
	cr_assert(r.rc == 0 && w.rc == 0);
	cr_assert(r.seq == 0 && w.seq == 1,
	    "reader #%d, writer #%d: the "
	    "parked reader should enter first (phase fairness)",
	    r.seq, w.seq);
	cr_assert(state_of(&s.l) == 0, "state %#lx at the end",
	    (unsigned long)state_of(&s.l));
	cr_assert(count_parked(&s.l) == 0 && count_parked(WKEY(&s.l)) == 0);
}

Test(rwlock, timed_reader_timeout_leaves_no_trace, .timeout = 30)
{
	static struct script s;
	static struct actor tr, r;
	memset(&s, 0, sizeof(s));

	pl_rwlock_wrlock(&s.l);
	actor_start_timed(&tr, &s, false, 100 * TU_MS);
	ASSERT_PARKED(&s.l, 1);
	cr_assert(state_of(&s.l) == (WRITER | RPARKED));
	actor_finish(&tr, "the timed reader");
	check_timed_out(&tr, "timed reader");
	cr_assert(state_of(&s.l) == WRITER,
	    "state %#lx after the only "
	    "waiting reader timed out",
	    (unsigned long)state_of(&s.l));
	cr_assert(count_parked(&s.l) == 0);
	pl_rwlock_wrunlock(&s.l);
	cr_assert(state_of(&s.l) == 0, "state %#lx after the writer unlocked",
	    (unsigned long)state_of(&s.l));

	/* With another reader parked as well: it still gets in. */
	pl_rwlock_wrlock(&s.l);
	actor_start(&r, &s, false, false);
	ASSERT_PARKED(&s.l, 1);
	actor_start_timed(&tr, &s, false, 100 * TU_MS);
	ASSERT_PARKED(&s.l, 2);
	actor_finish(&tr, "the timed reader");
	check_timed_out(&tr, "timed reader");
	cr_assert(state_of(&s.l) == (WRITER | RPARKED), "state %#lx",
	    (unsigned long)state_of(&s.l));
	pl_rwlock_wrunlock(&s.l);
	actor_finish(&r, "the other reader");
	cr_assert(r.rc == 0 && r.seq == 0);
	cr_assert(state_of(&s.l) == 0, "state %#lx at the end",
	    (unsigned long)state_of(&s.l));
}

Test(rwlock, timed_deadlines_and_einval, .timeout = 30)
{
	static pl_rwlock_t l;
	const struct timespec past = { 0, 0 };
	const struct timespec bad[] = {
		{ 0, 1000000000L },
		{ 0, -1 },
		{ -1, 0 },
		{ -1, 999999999L },
	};
	const size_t nbad = sizeof(bad) / sizeof(bad[0]);
	pl_rwlock_init(&l);

	/* Free: taken whatever the deadline; EINVAL leaves it free. */
	for (size_t i = 0; i < nbad; i++) {
		cr_assert(pl_rwlock_timedrdlock(&l, &bad[i]) == EINVAL);
		cr_assert(pl_rwlock_timedwrlock(&l, &bad[i]) == EINVAL);
		cr_assert(state_of(&l) == 0,
		    "[%zu] EINVAL but the word is %#lx", i,
		    (unsigned long)state_of(&l));
	}
	cr_assert(pl_rwlock_timedrdlock(&l, &past) == 0);
	cr_assert(state_of(&l) == ONE);
	cr_assert(pl_rwlock_timedrdlock(&l, NULL) == 0);
	cr_assert(state_of(&l) == 2 * ONE);

	/* Read-held: readers still get in at once, writers time out. */
	for (size_t i = 0; i < nbad; i++) {
		cr_assert(pl_rwlock_timedrdlock(&l, &bad[i]) == EINVAL);
		cr_assert(pl_rwlock_timedwrlock(&l, &bad[i]) == EINVAL);
		cr_assert(state_of(&l) == 2 * ONE);
	}
	cr_assert(pl_rwlock_timedwrlock(&l, &past) == ETIMEDOUT);
	cr_assert(state_of(&l) == 2 * ONE,
	    "state %#lx after a timed-out "
	    "writer",
	    (unsigned long)state_of(&l));
	for (int round = 0; round < 2; round++) {
		struct timespec dl = tu_deadline_in(50 * TU_MS);
		int rc = pl_rwlock_timedwrlock(&l, &dl);
		int64_t after = tu_now_ns();
		cr_assert(rc == ETIMEDOUT, "[%d] rc %d", round, rc);
		cr_assert(after >= tu_ts_to_ns(&dl),
		    "[%d] ETIMEDOUT %lld ns "
		    "early",
		    round, (long long)(tu_ts_to_ns(&dl) - after));
		cr_assert(state_of(&l) == 2 * ONE, "[%d] state %#lx", round,
		    (unsigned long)state_of(&l));
	}
	pl_rwlock_rdunlock(&l);
	pl_rwlock_rdunlock(&l);
	cr_assert(state_of(&l) == 0);

	/* Write-held: everybody times out; EINVAL still comes first. */
	cr_assert(pl_rwlock_timedwrlock(&l, &past) == 0);
	cr_assert(state_of(&l) == WRITER);
	for (size_t i = 0; i < nbad; i++) {
		cr_assert(pl_rwlock_timedrdlock(&l, &bad[i]) == EINVAL);
		cr_assert(pl_rwlock_timedwrlock(&l, &bad[i]) == EINVAL);
		cr_assert(state_of(&l) == WRITER);
	}
	cr_assert(pl_rwlock_timedrdlock(&l, &past) == ETIMEDOUT);
	cr_assert(pl_rwlock_timedwrlock(&l, &past) == ETIMEDOUT);
	for (int round = 0; round < 2; round++) {
		struct timespec dl = tu_deadline_in(50 * TU_MS);
		int rc = pl_rwlock_timedrdlock(&l, &dl);
		int64_t after = tu_now_ns();
		cr_assert(rc == ETIMEDOUT, "[%d] reader rc %d", round, rc);
		cr_assert(after >= tu_ts_to_ns(&dl),
		    "[%d] reader ETIMEDOUT "
		    "%lld ns early",
		    round, (long long)(tu_ts_to_ns(&dl) - after));
		dl = tu_deadline_in(50 * TU_MS);
		rc = pl_rwlock_timedwrlock(&l, &dl);
		after = tu_now_ns();
		cr_assert(rc == ETIMEDOUT, "[%d] writer rc %d", round, rc);
		cr_assert(after >= tu_ts_to_ns(&dl),
		    "[%d] writer ETIMEDOUT "
		    "%lld ns early",
		    round, (long long)(tu_ts_to_ns(&dl) - after));
		cr_assert(state_of(&l) == WRITER, "[%d] state %#lx", round,
		    (unsigned long)state_of(&l));
	}
	pl_rwlock_wrunlock(&l);
	cr_assert(state_of(&l) == 0);
	cr_assert(count_parked(&l) == 0 && count_parked(WKEY(&l)) == 0);
}

/* Run one timed call with a past deadline: it must return rc without
 * spinning or parking, and leave the word as it found it (or, when it
 * takes the lock, with one more reader or the writer). */
static void
past_call(pl_rwlock_t *l, bool writer, const struct timespec *dl, int rc,
    uintptr_t after_state, const char *what)
{
	uint64_t before = tu_slow_path_events();
	int got = writer ? pl_rwlock_timedwrlock(l, dl)
	                 : pl_rwlock_timedrdlock(l, dl);
	uint64_t after = tu_slow_path_events();
	cr_assert(got == rc, "%s: rc %d, expected %d", what, got, rc);
	cr_assert(after == before, "%s: spun or parked (%llu events)", what,
	    (unsigned long long)(after - before));
	cr_assert(state_of(l) == after_state, "%s: state %#lx, expected %#lx",
	    what, (unsigned long)state_of(l), (unsigned long)after_state);
}

/* A deadline already past when the call is made: one attempt, then
 * ETIMEDOUT at once, neither spinning nor parking; a lock that can be
 * taken at once is still taken. */
Test(rwlock, timed_past_deadline_tries_once, .timeout = 30)
{
	static pl_rwlock_t l;
	const struct timespec zero = { 0, 0 };
	struct timespec ago = tu_deadline_in(-TU_SEC);
	pl_rwlock_init(&l);

	pl_rwlock_wrlock(&l);
	past_call(&l, false, &zero, ETIMEDOUT, WRITER, "reader, {0,0}");
	past_call(&l, false, &ago, ETIMEDOUT, WRITER, "reader, 1 s ago");
	past_call(&l, true, &zero, ETIMEDOUT, WRITER, "writer, {0,0}");
	past_call(&l, true, &ago, ETIMEDOUT, WRITER, "writer, 1 s ago");
	pl_rwlock_wrunlock(&l);

	pl_rwlock_rdlock(&l);
	past_call(&l, true, &zero, ETIMEDOUT, ONE, "writer vs reader, {0,0}");
	past_call(&l, true, &ago, ETIMEDOUT, ONE, "writer vs reader, 1 s ago");
	past_call(&l, false, &ago, 0, 2 * ONE, "reader vs reader, 1 s ago");
	pl_rwlock_rdunlock(&l);
	pl_rwlock_rdunlock(&l);

	past_call(&l, true, &ago, 0, WRITER, "writer, free, 1 s ago");
	pl_rwlock_wrunlock(&l);
	cr_assert(state_of(&l) == 0);
	cr_assert(count_parked(&l) == 0 && count_parked(WKEY(&l)) == 0);
}

Test(rwlock, timed_waiters_acquire_when_released, .timeout = 30)
{
	static struct script s;
	static struct actor tr, tw;
	memset(&s, 0, sizeof(s));
	pl_rwlock_wrlock(&s.l);
	actor_start_timed(&tr, &s, false, 20 * TU_SEC);
	ASSERT_PARKED(&s.l, 1);
	actor_start_timed(&tw, &s, true, 20 * TU_SEC);
	ASSERT_PARKED(WKEY(&s.l), 1);
	pl_rwlock_wrunlock(&s.l);
	actor_finish(&tr, "the timed reader");
	actor_finish(&tw, "the timed writer");
	cr_assert(tr.rc == 0 && tw.rc == 0, "rc %d and %d", tr.rc, tw.rc);
	cr_assert(tr.seq == 0 && tw.seq == 1);
	cr_assert(tr.returned_ns < tu_ts_to_ns(&tr.dl));
	cr_assert(state_of(&s.l) == 0);
}

/* ------------------------------------------------------------------ */
/* 7. misuse aborts with a message                                     */

enum misuse {
	RDUNLOCK_UNLOCKED,
	WRUNLOCK_UNLOCKED,
	RDUNLOCK_WRITE_LOCKED,
	WRUNLOCK_READ_LOCKED
};

static pl_rwlock_t misuse_l = PL_RWLOCK_INITIALIZER;

static void
misuse_child(void *arg)
{
	switch (*(enum misuse *)arg) {
	case RDUNLOCK_UNLOCKED:
		pl_rwlock_rdunlock(&misuse_l);
		break;
	case WRUNLOCK_UNLOCKED:
		pl_rwlock_wrunlock(&misuse_l);
		break;
	case RDUNLOCK_WRITE_LOCKED:
		pl_rwlock_wrlock(&misuse_l);
		pl_rwlock_rdunlock(&misuse_l);
		break;
	case WRUNLOCK_READ_LOCKED:
		pl_rwlock_rdlock(&misuse_l);
		pl_rwlock_wrunlock(&misuse_l);
		break;
	}
}

static void
check_misuse(enum misuse op)
{
	bool rd = op == RDUNLOCK_UNLOCKED || op == RDUNLOCK_WRITE_LOCKED;
	char expect[128];
	if (rd)
		snprintf(expect, sizeof(expect),
		    "pl_rwlock_rdunlock: rwlock %p "
		    "is not read-locked\n",
		    (void *)&misuse_l);
	else
		snprintf(expect, sizeof(expect),
		    "pl_rwlock_wrunlock: rwlock %p "
		    "is not write-locked\n",
		    (void *)&misuse_l);
	tu_expect_abort(misuse_child, &op, expect);
}

Test(rwlock, rdunlock_of_unlocked_aborts, .timeout = 30)
{
	check_misuse(RDUNLOCK_UNLOCKED);
}

Test(rwlock, wrunlock_of_unlocked_aborts, .timeout = 30)
{
	check_misuse(WRUNLOCK_UNLOCKED);
}

Test(rwlock, rdunlock_of_write_locked_aborts, .timeout = 30)
{
	check_misuse(RDUNLOCK_WRITE_LOCKED);
}

Test(rwlock, wrunlock_of_read_locked_aborts, .timeout = 30)
{
	check_misuse(WRUNLOCK_READ_LOCKED);
}

/* ------------------------------------------------------------------ */
/* 8. no lost wakeup                                                   */

enum { LW_READERS = 3, LW_WRITERS = 2, LW_OPS = 20000 };

struct lost {
	pl_rwlock_t l;
	long counter;     /* plain: written under the write lock */
	long regressions; /* atomic: a reader saw the counter go back */
	struct tu_barrier start;
	size_t finished; /* atomic */
};

static void *
lost_writer(void *arg)
{
	struct lost *x = arg;
	tu_barrier_wait(&x->start);
	for (int i = 0; i < LW_OPS; i++) {
		pl_rwlock_wrlock(&x->l);
		long v = x->counter;
		if (i % 100 == 0)
			sched_yield(); /* make the others park */
		x->counter = v + 1;
		pl_rwlock_wrunlock(&x->l);
	}
	__atomic_fetch_add(&x->finished, 1, __ATOMIC_RELEASE);
	return NULL;
}

static void *
lost_reader(void *arg)
{
	struct lost *x = arg;
	long last = 0;
	tu_barrier_wait(&x->start);
	for (int i = 0; i < LW_OPS; i++) {
		pl_rwlock_rdlock(&x->l);
		long v = x->counter;
		if (i % 100 == 0)
			sched_yield();
		if (x->counter != v || v < last)
			__atomic_fetch_add(
			    &x->regressions, 1, __ATOMIC_RELAXED);
		last = v;
		pl_rwlock_rdunlock(&x->l);
	}
	__atomic_fetch_add(&x->finished, 1, __ATOMIC_RELEASE);
	return NULL;
}

Test(rwlock, no_lost_wakeup, .timeout = 60)
{
	enum { T = LW_READERS + LW_WRITERS };
	static struct lost x;
	memset(&x, 0, sizeof(x));
	tu_barrier_init(&x.start, T);
	pthread_t t[T];
	for (int i = 0; i < T; i++)
		t[i] = tu_spawn(i < LW_WRITERS ? lost_writer : lost_reader, &x);
	cr_assert(tu_wait_size_ge(&x.finished, T, 40 * TU_SEC),
	    "%zu of %d threads finished in 40 s: a lost wakeup?",
	    __atomic_load_n(&x.finished, __ATOMIC_ACQUIRE), T);
	for (int i = 0; i < T; i++)
		tu_join(t[i]);
	tu_barrier_destroy(&x.start);
	cr_assert(
	    x.counter == (long)LW_WRITERS * LW_OPS, "counter %ld", x.counter);
	cr_assert(x.regressions == 0,
	    "%ld reads saw the counter change or "
	    "go back",
	    x.regressions);
	cr_assert(state_of(&x.l) == 0, "state %#lx at the end",
	    (unsigned long)state_of(&x.l));
	cr_assert(count_parked(&x.l) == 0 && count_parked(WKEY(&x.l)) == 0);
}

/* ------------------------------------------------------------------ */
/* A reader who arrives while a writer is parked queues behind it, even
 * while RWAIT, the claim of the readers who waited through the last
 * writer's hold, is still on the word (they are inside).  Before, every
 * reader arriving while those overlapped entered, and the parked writer
 * waited for a reader phase of any length (found by model/rwlock.pml
 * -DARRIVAL).                                                          */

static pl_rwlock_t arr;

static void *
arr_writer(void *arg)
{
	(void)arg;
	pl_rwlock_wrlock(&arr);
	pl_rwlock_wrunlock(&arr);
	return NULL;
}

struct arr_try {
	bool got;
};

static void *
arr_newcomer(void *arg)
{
	struct arr_try *t = arg;
	t->got = pl_rwlock_tryrdlock(&arr);
	if (t->got)
		pl_rwlock_rdunlock(&arr);
	return NULL;
}

Test(rwlock, arriving_reader_queues_behind_a_parked_writer, .timeout = 30)
{
	/* This thread is a reader who waited through a writer's hold and
	 * got in on its claim: the word the model's trail reaches (one
	 * reader, RWAIT), set here directly because the spin that leads
	 * there is a race. */
	__atomic_store_n(&arr.state,
	    PL_RWLOCK_ONE_READER | PL_RWLOCK_READER_WAITING, __ATOMIC_RELAXED);

	/* A writer that does not spin parks behind it, without WWAIT. */
	struct pl_tuning saved, t;
	pl_tuning_get(&saved);
	t = saved;
	t.spin_limit = 0;
	t.yield_limit = 0;
	pl_tuning_set(&t);
	pthread_t w = tu_spawn(arr_writer, NULL);
	ASSERT_PARKED((const char *)&arr + 1, 1);
	pl_tuning_set(&saved);
	uintptr_t s = __atomic_load_n(&arr.state, __ATOMIC_RELAXED);
	cr_assert(s ==
	        (PL_RWLOCK_ONE_READER | PL_RWLOCK_READER_WAITING |
	            PL_RWLOCK_WRITER_PARKED),
	    "word %#lx", (unsigned long)s);

	/* A reader arriving now must wait for the writer. */
	struct arr_try nc = { false };
	tu_join(tu_spawn(arr_newcomer, &nc));
	pl_rwlock_rdunlock(&arr); /* the last reader hands it to the writer */
	tu_join(w);
	cr_assert(!nc.got,
	    "a reader that arrived while a writer was parked "
	    "entered before it");
	cr_assert(
	    arr.state == 0, "word %#lx at the end", (unsigned long)arr.state);
}

/* The clock variants: both clocks time out against a writer, another
 * clock is EINVAL. */
Test(rwlock, clock_variants_both_clocks, .timeout = 30)
{
	static pl_rwlock_t l;
	static const clockid_t clocks[] = { CLOCK_MONOTONIC, CLOCK_REALTIME };
	pl_rwlock_wrlock(&l);
	for (size_t i = 0; i < 2; i++) {
		struct timespec dl;
		clock_gettime(clocks[i], &dl);
		dl.tv_nsec += 20 * 1000 * 1000;
		if (dl.tv_nsec >= 1000000000L) {
			dl.tv_sec++;
			dl.tv_nsec -= 1000000000L;
		}
		cr_assert(
		    pl_rwlock_clockrdlock(&l, clocks[i], &dl) == ETIMEDOUT);
		cr_assert(
		    pl_rwlock_clockwrlock(&l, clocks[i], &dl) == ETIMEDOUT);
	}
	pl_rwlock_wrunlock(&l);
	struct timespec dl = { 0, 0 };
	cr_assert(
	    pl_rwlock_clockrdlock(&l, CLOCK_THREAD_CPUTIME_ID, &dl) == EINVAL);
	cr_assert(
	    pl_rwlock_clockwrlock(&l, CLOCK_THREAD_CPUTIME_ID, &dl) == EINVAL);
	cr_assert(__atomic_load_n(&l.state, __ATOMIC_RELAXED) == 0);
}

/* ------------------------------------------------------------------ */
/* Turns (lib/rwlock.c, lib/parkinglot.c): a writer woken to compete that
 * loses the lock parks again at its turn, ahead of the writers that
 * parked after it.  Each round: the main thread holds the write lock; A
 * parks, then B; the main thread wakes A as a write unlock would and
 * keeps the lock, as a writer that barged in first would
 * (tu_wake_to_lose, WPARKED left set for B); A parks again; then the main
 * thread unlocks, and A must get the lock before B. */

Test(rwlock, a_woken_writer_that_loses_keeps_its_turn, .timeout = 60)
{
	static pl_rwlock_t l;
	static struct tu_turns w = { tu_wrlock_lock, tu_wrlock_unlock, &l,
		{ 0 }, 0 };
	for (int r = 0; r < 5; r++) {
		pl_rwlock_wrlock(&l);
		cr_assert(tu_turn_round(&w, WKEY(&l), 1, 0) == 0,
		    "round %d: B got the lock before A, which parked first "
		    "and lost it once",
		    r);
		cr_assert(state_of(&l) == 0);
	}
}
