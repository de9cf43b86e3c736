/* SPDX-License-Identifier: MIT */
/*
 * Tests of pl_rmutex_t: recursion and unwinding, ownership, EPERM from a
 * non-owner, trylock and timedlock, exclusion with recursive lockers,
 * recursion count overflow, and the wakeup of a parked waiter by the
 * owner's final unlock.
 */

#include "testutil.h"

TU_CRITERION_MAIN_SERIAL()

TestSuite(rmutex, .timeout = 30);

struct snapshot {
	unsigned char state;
	unsigned int count;
	uintptr_t owner;
};

static struct snapshot
snap(const pl_rmutex_t *m)
{
	struct snapshot s;
	s.state = __atomic_load_n(&m->lock.state, __ATOMIC_RELAXED);
	s.count = m->count;
	s.owner = __atomic_load_n(&m->owner, __ATOMIC_RELAXED);
	return s;
}

static bool
snap_eq(struct snapshot a, struct snapshot b)
{
	return a.state == b.state && a.count == b.count && a.owner == b.owner;
}

static void
assert_free(const pl_rmutex_t *m)
{
	struct snapshot s = snap(m);
	cr_assert(s.state == 0 && s.count == 0 && s.owner == 0,
	    "rmutex not free: state %u count %u owner %#jx", s.state, s.count,
	    (uintmax_t)s.owner);
}

/* ------------------------------------------------------------------ */
/* Running one operation on another thread.                            */

enum op { OP_TRYLOCK, OP_UNLOCK, OP_IS_OWNED, OP_TIMEDLOCK };

struct other {
	pl_rmutex_t *m;
	enum op op;
	struct timespec deadline;
	int rc;         /* unlock, timedlock */
	bool got;       /* trylock, is_owned */
	bool release;   /* unlock again what trylock/timedlock took */
	int64_t end_ns; /* when the call returned */
};

static void *
other_main(void *arg)
{
	struct other *o = arg;
	switch (o->op) {
	case OP_TRYLOCK:
		o->got = pl_rmutex_trylock(o->m);
		if (o->got && o->release)
			o->rc = pl_rmutex_unlock(o->m);
		break;
	case OP_UNLOCK:
		o->rc = pl_rmutex_unlock(o->m);
		break;
	case OP_IS_OWNED:
		o->got = pl_rmutex_is_owned(o->m);
		break;
	case OP_TIMEDLOCK:
		o->rc = pl_rmutex_timedlock(o->m, &o->deadline);
		o->end_ns = tu_now_ns();
		if (o->rc == 0 && o->release)
			o->rc = pl_rmutex_unlock(o->m);
		break;
	}
	return NULL;
}

static struct other
on_other_thread(pl_rmutex_t *m, enum op op, bool release)
{
	struct other o;
	memset(&o, 0, sizeof(o));
	o.m = m;
	o.op = op;
	o.release = release;
	o.rc = -1;
	tu_join(tu_spawn(other_main, &o));
	return o;
}

/* ------------------------------------------------------------------ */
/* Aborts, in a forked child.                                          */

/* ------------------------------------------------------------------ */
/* 1. initial states, recursion and unwinding                          */

Test(rmutex, initializers_and_size, .timeout = 30)
{
	static pl_rmutex_t s = PL_RMUTEX_INITIALIZER;
	cr_assert(sizeof(pl_rmutex_t) <= 2 * sizeof(uint64_t));
	assert_free(&s);
	cr_assert(!pl_rmutex_is_owned(&s));
	cr_assert(pl_rmutex_trylock(&s));
	cr_assert(pl_rmutex_is_owned(&s));
	cr_assert(pl_rmutex_unlock(&s) == 0);
	assert_free(&s);

	pl_rmutex_t *z = calloc(1, sizeof(*z));
	cr_assert(z != NULL);
	pl_rmutex_lock(z);
	cr_assert(pl_rmutex_is_owned(z) && z->count == 1);
	cr_assert(pl_rmutex_unlock(z) == 0);
	assert_free(z);
	free(z);

	pl_rmutex_t g;
	memset(&g, 0xa5, sizeof(g));
	pl_rmutex_init(&g);
	assert_free(&g);
	pl_rmutex_lock(&g);
	cr_assert(pl_rmutex_unlock(&g) == 0);
	assert_free(&g);
}

Test(rmutex, recursion_depth_1000, .timeout = 30)
{
	static pl_rmutex_t m = PL_RMUTEX_INITIALIZER;
	enum { DEPTH = 1000 };
	struct timespec past = tu_deadline_in(-TU_SEC);
	for (unsigned i = 1; i <= DEPTH; i++) {
		switch (i % 3) {
		case 0:
			pl_rmutex_lock(&m);
			break;
		case 1:
			cr_assert(
			    pl_rmutex_trylock(&m), "trylock at depth %u", i);
			break;
		default:
			/* Owned: 0 at once, whatever the deadline. */
			cr_assert(pl_rmutex_timedlock(&m, &past) == 0,
			    "timedlock at depth %u", i);
			break;
		}
		cr_assert(m.count == i, "count %u at depth %u", m.count, i);
		cr_assert(pl_rmutex_is_owned(&m));
	}
	cr_assert(pl_mutex_is_locked(&m.lock));
	cr_assert(!on_other_thread(&m, OP_TRYLOCK, true).got,
	    "another thread took an owned rmutex");
	cr_assert(!on_other_thread(&m, OP_IS_OWNED, false).got);

	for (unsigned i = DEPTH; i >= 1; i--) {
		cr_assert(pl_rmutex_is_owned(&m), "not owned at depth %u", i);
		cr_assert(pl_mutex_is_locked(&m.lock));
		cr_assert(pl_rmutex_unlock(&m) == 0, "unlock at depth %u", i);
		cr_assert(m.count == i - 1);
	}
	assert_free(&m);
	cr_assert(!pl_rmutex_is_owned(&m));
	cr_assert(pl_rmutex_unlock(&m) == EPERM,
	    "unlock of a free rmutex did not give EPERM");
	assert_free(&m);

	/* Free again: another thread can take it. */
	struct other o = on_other_thread(&m, OP_TRYLOCK, true);
	cr_assert(o.got && o.rc == 0);
	assert_free(&m);
}

/* ------------------------------------------------------------------ */
/* 2. ownership                                                         */

struct keeper {
	pl_rmutex_t *m;
	int locked;  /* atomic: the keeper holds m */
	int release; /* atomic: the keeper may unlock */
	int owned_inside;
};

static void *
keeper_main(void *arg)
{
	struct keeper *k = arg;
	pl_rmutex_lock(k->m);
	pl_rmutex_lock(k->m);
	k->owned_inside = pl_rmutex_is_owned(k->m) && k->m->count == 2;
	__atomic_store_n(&k->locked, 1, __ATOMIC_RELEASE);
	tu_wait_int_eq(&k->release, 1, TU_WAIT_NS);
	pl_rmutex_unlock(k->m);
	pl_rmutex_unlock(k->m);
	return NULL;
}

Test(rmutex, is_owned_and_other_owner, .timeout = 30)
{
	static pl_rmutex_t m = PL_RMUTEX_INITIALIZER;
	struct keeper k = { &m, 0, 0, 0 };
	cr_assert(!pl_rmutex_is_owned(&m));
	pthread_t t = tu_spawn(keeper_main, &k);
	cr_assert(tu_wait_int_eq(&k.locked, 1, TU_WAIT_NS));
	cr_assert(k.owned_inside, "the keeper did not own what it locked");
	/* Owned by another thread: not by us, and not ours to take. */
	cr_assert(!pl_rmutex_is_owned(&m));
	cr_assert(!pl_rmutex_trylock(&m),
	    "trylock succeeded on an rmutex another thread owns");
	struct timespec past = tu_deadline_in(-TU_MS);
	cr_assert(pl_rmutex_timedlock(&m, &past) == ETIMEDOUT);

	/* Unlock by a non-owner: EPERM, nothing changes. */
	struct snapshot before = snap(&m);
	cr_assert(before.count == 2 && before.owner != 0);
	cr_assert(pl_rmutex_unlock(&m) == EPERM);
	cr_assert(snap_eq(snap(&m), before), "EPERM unlock changed the rmutex");
	struct other o = on_other_thread(&m, OP_UNLOCK, false);
	cr_assert(o.rc == EPERM, "third thread's unlock gave %d", o.rc);
	cr_assert(snap_eq(snap(&m), before), "EPERM unlock changed the rmutex");

	__atomic_store_n(&k.release, 1, __ATOMIC_RELEASE);
	tu_join(t);
	assert_free(&m);
	cr_assert(pl_rmutex_trylock(&m));
	cr_assert(pl_rmutex_is_owned(&m));
	cr_assert(pl_rmutex_unlock(&m) == 0);
}

Test(rmutex, non_owner_unlock_is_eperm, .timeout = 30)
{
	static pl_rmutex_t m = PL_RMUTEX_INITIALIZER;
	pl_rmutex_lock(&m);
	pl_rmutex_lock(&m);
	pl_rmutex_lock(&m);
	struct snapshot before = snap(&m);
	cr_assert(before.count == 3 && before.owner != 0 &&
	    before.state == PL_MUTEX_LOCKED);
	for (int i = 0; i < 3; i++) {
		struct other o = on_other_thread(&m, OP_UNLOCK, false);
		cr_assert(o.rc == EPERM, "non-owner unlock returned %d", o.rc);
		cr_assert(snap_eq(snap(&m), before),
		    "a non-owner's unlock changed state/count/owner");
		cr_assert(pl_rmutex_is_owned(&m));
	}
	for (int i = 0; i < 3; i++)
		cr_assert(pl_rmutex_unlock(&m) == 0);
	assert_free(&m);
	struct other o = on_other_thread(&m, OP_UNLOCK, false);
	cr_assert(o.rc == EPERM);
	assert_free(&m);
}

/* ------------------------------------------------------------------ */
/* 3. timedlock                                                        */

Test(rmutex, timedlock, .timeout = 30)
{
	static pl_rmutex_t m = PL_RMUTEX_INITIALIZER;
	struct timespec bad[3] = { { 0, -1 }, { 0, 1000000000L }, { -1, 0 } };

	/* EINVAL first, free or owned, and nothing changes. */
	for (int i = 0; i < 3; i++) {
		cr_assert(pl_rmutex_timedlock(&m, &bad[i]) == EINVAL);
		assert_free(&m);
	}
	struct timespec past = tu_deadline_in(-TU_SEC);
	cr_assert(pl_rmutex_timedlock(&m, &past) == 0, "free, past deadline");
	cr_assert(pl_rmutex_timedlock(&m, NULL) == 0, "owned, no deadline");
	struct snapshot owned = snap(&m);
	cr_assert(owned.count == 2);
	for (int i = 0; i < 3; i++) {
		cr_assert(pl_rmutex_timedlock(&m, &bad[i]) == EINVAL);
		cr_assert(snap_eq(snap(&m), owned));
	}

	/* Another thread times out, not before its deadline. */
	struct other o;
	memset(&o, 0, sizeof(o));
	o.m = &m;
	o.op = OP_TIMEDLOCK;
	o.deadline = tu_deadline_in(50 * TU_MS);
	tu_join(tu_spawn(other_main, &o));
	cr_assert(
	    o.rc == ETIMEDOUT, "timedlock on an owned rmutex gave %d", o.rc);
	cr_assert(o.end_ns >= tu_ts_to_ns(&o.deadline),
	    "ETIMEDOUT %lld ns before the deadline",
	    (long long)(tu_ts_to_ns(&o.deadline) - o.end_ns));
	cr_assert(snap_eq(snap(&m), owned), "a timeout changed the rmutex");
	cr_assert(count_parked(&m) == 0);
	cr_assert(snap(&m).state == PL_MUTEX_LOCKED,
	    "PARKED left set after the only waiter timed out");

	/* A waiter with a far deadline gets it when we release it. */
	memset(&o, 0, sizeof(o));
	o.m = &m;
	o.op = OP_TIMEDLOCK;
	o.release = true;
	o.rc = -1;
	o.deadline = tu_deadline_in(TU_WAIT_NS);
	pthread_t t = tu_spawn(other_main, &o);
	ASSERT_PARKED(&m, 1);
	cr_assert(pl_rmutex_unlock(&m) == 0);
	cr_assert(count_parked(&m) == 1, "woken by a non-final unlock");
	cr_assert(pl_rmutex_unlock(&m) == 0);
	tu_join(t);
	cr_assert(o.rc == 0, "waiter's timedlock/unlock gave %d", o.rc);
	assert_free(&m);
}

/* ------------------------------------------------------------------ */
/* 4. exclusion with recursive lockers                                 */

struct excl {
	pl_rmutex_t m;
	long counter; /* plain: only the rmutex protects it */
	long bad;     /* atomic: wrong count or ownership seen inside */
	struct tu_barrier start;
	size_t finished; /* atomic */
};

enum { EX_THREADS = 4, EX_ITERS = 20000 };

static void *
excl_main(void *arg)
{
	struct excl *e = arg;
	tu_barrier_wait(&e->start);
	for (int i = 0; i < EX_ITERS; i++) {
		pl_rmutex_lock(&e->m);
		if (i % 2 == 0)
			pl_rmutex_lock(&e->m);
		else if (!pl_rmutex_trylock(&e->m))
			__atomic_fetch_add(&e->bad, 1, __ATOMIC_RELAXED);
		pl_rmutex_lock(&e->m);
		long v = e->counter;
		if (e->m.count != 3 || !pl_rmutex_is_owned(&e->m))
			__atomic_fetch_add(&e->bad, 1, __ATOMIC_RELAXED);
		if (i % 100 == 0)
			sched_yield(); /* make the others park */
		e->counter = v + 1;
		for (int k = 0; k < 3; k++)
			if (pl_rmutex_unlock(&e->m) != 0)
				__atomic_fetch_add(
				    &e->bad, 1, __ATOMIC_RELAXED);
	}
	__atomic_fetch_add(&e->finished, 1, __ATOMIC_RELEASE);
	return NULL;
}

/* A thread that takes the rmutex, records what it saw, says so in got,
 * and holds it until release. */
struct waiter {
	pl_rmutex_t *m;
	int got;     /* atomic */
	int release; /* atomic */
	bool owned;
	unsigned count;
};

static void *
waiter_main(void *arg)
{
	struct waiter *w = arg;
	pl_rmutex_lock(w->m);
	w->owned = pl_rmutex_is_owned(w->m);
	w->count = w->m->count;
	__atomic_store_n(&w->got, 1, __ATOMIC_RELEASE);
	tu_wait_int_eq(&w->release, 1, TU_WAIT_NS);
	pl_rmutex_unlock(w->m);
	return NULL;
}

/* A deadline already past, on an rmutex another thread owns: one
 * attempt, then ETIMEDOUT at once, neither spinning nor parking. */
Test(rmutex, timedlock_past_deadline_tries_once, .timeout = 30)
{
	static pl_rmutex_t m = PL_RMUTEX_INITIALIZER;
	struct waiter h = { &m, 0, 0, false, 0 };
	pthread_t t = tu_spawn(waiter_main, &h);
	cr_assert(tu_wait_int_eq(&h.got, 1, TU_WAIT_NS));
	struct snapshot owned = snap(&m);
	const struct timespec zero = { 0, 0 };
	struct timespec dls[2] = { zero, tu_deadline_in(-TU_SEC) };
	for (int i = 0; i < 2; i++) {
		uint64_t before = tu_slow_path_events();
		int rc = pl_rmutex_timedlock(&m, &dls[i]);
		uint64_t after = tu_slow_path_events();
		cr_assert(rc == ETIMEDOUT, "[%d] rc %d", i, rc);
		cr_assert(after == before,
		    "[%d] a past deadline spun or parked (%llu events)", i,
		    (unsigned long long)(after - before));
		cr_assert(
		    snap_eq(snap(&m), owned), "[%d] the rmutex changed", i);
	}
	__atomic_store_n(&h.release, 1, __ATOMIC_RELEASE);
	tu_join(t);
	assert_free(&m);
}

Test(rmutex, exclusion_4_threads_recursive, .timeout = 60)
{
	static struct excl e;
	memset(&e, 0, sizeof(e));
	tu_barrier_init(&e.start, EX_THREADS);
	pthread_t t[EX_THREADS];
	for (int i = 0; i < EX_THREADS; i++)
		t[i] = tu_spawn(excl_main, &e);
	cr_assert(tu_wait_size_ge(&e.finished, EX_THREADS, 40 * TU_SEC),
	    "%zu of %d threads finished in 40 s: a lost wakeup?",
	    __atomic_load_n(&e.finished, __ATOMIC_ACQUIRE), EX_THREADS);
	for (int i = 0; i < EX_THREADS; i++)
		tu_join(t[i]);
	tu_barrier_destroy(&e.start);
	cr_assert(e.bad == 0, "%ld wrong counts/ownerships/unlocks", e.bad);
	cr_assert(e.counter == (long)EX_THREADS * EX_ITERS,
	    "counter %ld, expected %ld: exclusion broken", e.counter,
	    (long)EX_THREADS * EX_ITERS);
	assert_free(&e.m);
	cr_assert(count_parked(&e.m) == 0);
}

/* ------------------------------------------------------------------ */
/* 5. recursion count overflow                                         */

static pl_rmutex_t ovf = PL_RMUTEX_INITIALIZER;

static void
overflow_lock(void *arg)
{
	(void)arg;
	pl_rmutex_lock(&ovf); /* count is UINT_MAX: must abort */
}

Test(rmutex, count_overflow, .timeout = 30)
{
	pl_rmutex_lock(&ovf);
	ovf.count = UINT_MAX - 1; /* as if locked UINT_MAX - 1 times */
	pl_rmutex_lock(&ovf);     /* the last one that fits */
	cr_assert(ovf.count == UINT_MAX);
	struct snapshot full = snap(&ovf);

	cr_assert(!pl_rmutex_trylock(&ovf), "trylock past UINT_MAX");
	cr_assert(snap_eq(snap(&ovf), full));
	struct timespec dl = tu_deadline_in(TU_SEC);
	cr_assert(pl_rmutex_timedlock(&ovf, &dl) == EAGAIN);
	cr_assert(pl_rmutex_timedlock(&ovf, NULL) == EAGAIN);
	cr_assert(snap_eq(snap(&ovf), full));

	char expect[128];
	snprintf(expect, sizeof(expect),
	    "pl_rmutex_lock: rmutex %p: recursion count overflow\n",
	    (void *)&ovf);
	tu_expect_abort(overflow_lock, NULL, expect);
	cr_assert(snap_eq(snap(&ovf), full), "the child changed our rmutex");

	/* Unwinding still works. */
	cr_assert(pl_rmutex_unlock(&ovf) == 0);
	cr_assert(ovf.count == UINT_MAX - 1);
	cr_assert(pl_rmutex_trylock(&ovf));
	cr_assert(ovf.count == UINT_MAX);
	ovf.count = 1;
	cr_assert(pl_rmutex_unlock(&ovf) == 0);
	assert_free(&ovf);
}

/* ------------------------------------------------------------------ */
/* 6. the final unlock wakes a parked waiter                           */

Test(rmutex, final_unlock_wakes_parked_waiter, .timeout = 30)
{
	static pl_rmutex_t m = PL_RMUTEX_INITIALIZER;
	for (int round = 0; round < 20; round++) {
		struct waiter w = { &m, 0, 0, false, 0 };
		pl_rmutex_lock(&m);
		pl_rmutex_lock(&m);
		pl_rmutex_lock(&m);
		pthread_t t = tu_spawn(waiter_main, &w);
		ASSERT_PARKED(&m, 1);
		cr_assert(
		    snap(&m).state == (PL_MUTEX_LOCKED | PL_MUTEX_PARKED));
		cr_assert(pl_rmutex_unlock(&m) == 0);
		cr_assert(pl_rmutex_unlock(&m) == 0);
		/* Still ours: the waiter must still be parked. */
		cr_assert(count_parked(&m) == 1 &&
		        !__atomic_load_n(&w.got, __ATOMIC_ACQUIRE),
		    "round %d: woken before the final unlock", round);
		cr_assert(pl_rmutex_unlock(&m) == 0);
		cr_assert(tu_wait_int_eq(&w.got, 1, TU_WAIT_NS),
		    "round %d: the final unlock did not wake the waiter",
		    round);
		cr_assert(w.owned && w.count == 1);
		cr_assert(!pl_rmutex_is_owned(&m));
		cr_assert(pl_rmutex_unlock(&m) == EPERM);
		__atomic_store_n(&w.release, 1, __ATOMIC_RELEASE);
		tu_join(t);
		assert_free(&m);
	}
}
