/* SPDX-License-Identifier: MIT */
/*
 * The workers of tools/torture (see tools/torture.c for the whole): one
 * random operation for each primitive, with its checks, on the objects of
 * a run.  The mutex, rmutex and bitlock workers run conform_op of
 * tests/conform.h on the tables of their locks (the rmutex nesting inside
 * and calling unlock as a non-owner, the bit locks beside bits flipped by
 * atomic xor; --busted swaps in a lock that is not atomic); cond moves
 * items through a bounded queue and waits on an epoch; rwlock readers and
 * writers check who is beside them and that no read is torn; once runs
 * pl_once on a ring of fresh pl_once_t objects; park builds a semaphore
 * and a gate on raw pl_park and pl_unpark.  Also the tables of a run's
 * locks, and the conformance pass: the bodies of tests/conform.h before
 * the workers start.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <inttypes.h>
#include <limits.h>
#include <pthread.h>
#include <sched.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <time.h>

#include <parkinglot.h>

#include "torture-run.h"

/* ---- mutex, rmutex, bitlock: conform_op on a random lock ---------------- */

/* One of the four bit locks, or the first of two locks three times in
 * four. */
static void
lock_op(struct slot *s)
{
	struct lockset *ls = &s->run->ls[s->prim];
	int li =
	    s->prim == P_BITLOCK ? (int)(RND(s) % NLOCKS) : RND(s) % 4 == 0;
	if (conform_op(&ls->lk[li], &ls->ck[li], &s->rng, (uintptr_t)s))
		s->cs[li]++;
}

/* The busted lock: test, yield, then set.  Two threads can both see it
 * free before either sets it. */
static bool
cf_busted_trylock(const struct conform_lock *l)
{
	if (LOAD((unsigned char *)l->obj))
		return false;
	sched_yield();
	STORE((unsigned char *)l->obj, 1);
	return true;
}

static void
cf_busted_lock(const struct conform_lock *l)
{
	while (!cf_busted_trylock(l))
		sched_yield();
}

static int
cf_busted_timedlock(const struct conform_lock *l, const struct timespec *dl)
{
	if (dl &&
	    (dl->tv_sec < 0 || dl->tv_nsec < 0 || dl->tv_nsec >= 1000000000L))
		return EINVAL;
	cf_busted_lock(l);
	return 0;
}

static void
cf_busted_unlock(const struct conform_lock *l)
{
	STORE((unsigned char *)l->obj, 0);
}

static uintptr_t
busted_state(const struct conform_lock *l)
{
	return LOAD((unsigned char *)l->obj);
}

/* The lost-wakeup mutex of --busted: clears the word, wakes nobody. */
static void
lost_unlock(const struct conform_lock *l)
{
	__atomic_store_n(&((pl_mutex_t *)l->obj)->state, 0, __ATOMIC_RELEASE);
}

/* Inside an rmutex: nested acquisitions, each of which must succeed at
 * once (a malformed deadline still gives EINVAL), and their unlocks. */
static void
rmutex_inside(const struct conform_lock *l, uint64_t *rng)
{
	pl_rmutex_t *m = l->obj;
	if (!pl_rmutex_is_owned(m))
		VIOL(me, "pl_rmutex_is_owned is false for the owner");
	unsigned depth = 1 + conform_rnd(rng) % 4;
	for (unsigned d = 1; d < depth; d++) {
		uint32_t c = conform_rnd(rng) % 100;
		struct timespec ts;
		int rc = c < 2 ? pl_rmutex_timedlock(m, &conform_bad[c]) : 0;
		if (c < 2 && rc != EINVAL)
			VIOL(me, "pl_rmutex_timedlock, malformed: %d", rc);
		if (c < 2 && rc == 0)
			continue;
		conform_rand_deadline(rng, &ts);
		if (c < 45)
			pl_rmutex_lock(m);
		else if ((rc = c < 65 ? !pl_rmutex_trylock(m)
		                      : pl_rmutex_timedlock(m, &ts)) != 0) {
			VIOL(me, "a nested %s by the owner failed (%d)",
			    c < 65 ? "trylock" : "timedlock", rc);
			depth = d;
		}
	}
	for (unsigned d = depth; d > 1; d--) {
		int rc = pl_rmutex_unlock(m);
		if (rc != 0 || !pl_rmutex_is_owned(m))
			VIOL(me, "pl_rmutex_unlock at depth %u of %u: %d%s", d,
			    depth, rc, rc ? "" : ", and no longer owned");
	}
}

static void
rmutex_op(struct slot *s)
{
	pl_rmutex_t *m = s->run->rmtx;
	int rc = RND(s) % 64 == 0 ? pl_rmutex_unlock(&m[RND(s) % 2]) : EPERM;
	if (rc != EPERM)
		VIOL(s, "pl_rmutex_unlock by a non-owner: %d, not EPERM", rc);
	lock_op(s);
	if (pl_rmutex_is_owned(&m[0]) || pl_rmutex_is_owned(&m[1]))
		VIOL(s, "an rmutex still owned after the last unlock");
}

static void
bit_flip(struct slot *s)
{
	uintptr_t m = (uintptr_t)conform_rng(&s->rng) & W_FLIP;
	unsigned char mb = (unsigned char)(RND(s) & B_FLIP);
	__atomic_fetch_xor(&s->run->word, m, __ATOMIC_RELAXED);
	__atomic_fetch_xor(&s->run->byte, mb, __ATOMIC_RELAXED);
	s->xorw ^= m;
	s->xorb ^= mb;
}

/* Inside a bit lock: one in four flips the other bits. */
static void
bit_inside(const struct conform_lock *l, uint64_t *rng)
{
	(void)l;
	if (conform_rnd(rng) % 4 == 0)
		bit_flip(me);
}

/* Worker 0 flips the other bits in bursts; the others take the locks. */
static void
bitlock_op(struct slot *s)
{
	for (int i = 0; s->index == 0 && i < 32; i++)
		bit_flip(s);
	if (s->index != 0)
		lock_op(s);
	else if (RND(s) % 4 == 0)
		sched_yield();
}

/* ---- cond: a bounded queue and an epoch --------------------------------- */

static void
cond_lock(struct slot *s, struct cond_obj *c)
{
	while (!conform_acquire(&c->mlk, &c->ck, &s->rng))
		;
	conform_enter(&c->ck, (uintptr_t)s);
}

static void
cond_unlock(struct slot *s, struct cond_obj *c)
{
	conform_exit(&c->ck, (uintptr_t)s);
	conform_release(&c->mlk, RND(s) % 8 == 0);
}

/* Wait on cv, holding c->m: with watch, it must end within the bound once
 * *watch != val; otherwise the progress check covers it.  Returns
 * ETIMEDOUT or 0. */
static int
cond_wait(struct slot *s, struct cond_obj *c, pl_cond_t *cv, const char *what,
    const uintptr_t *watch, uintptr_t val)
{
	int rc = 0;
	struct timespec ts;
	bool timed = RND(s) % 2;
	uint64_t dl = timed ? conform_rand_deadline(&s->rng, &ts) : UNBOUNDED;
	conform_exit(&c->ck, (uintptr_t)s);
	wait_begin(s, what, dl, watch, val);
	if (timed)
		conform_timed_result(
		    &c->ck, rc = pl_cond_timedwait(cv, &c->m, &ts), dl);
	else
		pl_cond_wait(cv, &c->m);
	wait_end(s);
	if (!pl_mutex_is_locked(&c->m))
		VIOL(s, "%s returned without the mutex", what);
	conform_enter(&c->ck, (uintptr_t)s);
	return rc;
}

static void
cond_wake(struct slot *s, pl_cond_t *cv, bool bcast)
{
	if (bcast || RND(s) % 16 == 0)
		pl_cond_broadcast(cv);
	else
		pl_cond_signal(cv);
}

void
cond_check_item(struct run *r, struct cond_obj *c, struct item it)
{
	uint64_t want = it.prod < MAXTHREADS ? c->expect[it.prod] : 0;
	if (it.prod >= MAXTHREADS || it.seq != want)
		violation(r, P_COND,
		    "item %" PRIu32 ":%" PRIu64 " consumed where %" PRIu64
		    " was due (%s)",
		    it.prod, it.seq, want,
		    it.prod >= MAXTHREADS ? "garbage"
		        : it.seq < want   ? "consumed twice"
		                          : "items lost");
	else
		c->expect[it.prod] = it.seq + 1;
}

/* Produce an item, or consume one: wait for room or for an item, move
 * it, wake the other side from inside or outside the mutex. */
static void
cond_move(struct slot *s, struct cond_obj *c, bool produce)
{
	pl_cond_t *wait_cv = produce ? &c->not_full : &c->not_empty;
	pl_cond_t *wake_cv = produce ? &c->not_empty : &c->not_full;
	unsigned blocked = produce ? QCAP : 0;
	cond_lock(s, c);
	while (c->count == blocked && !stopping(s))
		cond_wait(s, c, wait_cv,
		    produce ? "pl_cond_wait (not full)"
		            : "pl_cond_wait (not empty)",
		    NULL, 0);
	if (c->count == blocked) {
		cond_unlock(s, c);
		return;
	}
	bool bcast = c->bcast_phase, advance = false;
	if (produce) {
		uint32_t p = (uint32_t)s->index;
		c->q[(c->head + c->count++) % QCAP] =
		    (struct item){ p, c->next_seq[p]++ };
		if (++c->since_flip >= 4096) {
			c->since_flip = 0;
			c->bcast_phase = !bcast;
		}
		if ((advance = ++c->produced % 16 == 0))
			STORE(&c->epoch, LOAD(&c->epoch) + 1);
	} else {
		cond_check_item(s->run, c, c->q[c->head]);
		c->head = (c->head + 1) % QCAP;
		c->count--;
		c->consumed++;
		if (RND(s) % 64 == 0)
			conform_hold(&s->rng);
	}
	bool outside = RND(s) % 4 == 0;
	if (!outside)
		cond_wake(s, wake_cv, bcast);
	if (advance)
		pl_cond_broadcast(&c->epoch_cv);
	cond_unlock(s, c);
	if (outside)
		cond_wake(s, wake_cv, bcast);
}

/* Wait for the epoch to move, or move it (broadcast). */
static void
cond_epoch(struct slot *s, struct cond_obj *c)
{
	cond_lock(s, c);
	uintptr_t e = LOAD(&c->epoch);
	if (RND(s) % 3 == 0) {
		STORE(&c->epoch, e + 1);
		pl_cond_broadcast(&c->epoch_cv);
	}
	while (LOAD(&c->epoch) == e && !stopping(s))
		if (cond_wait(s, c, &c->epoch_cv, "pl_cond_wait (epoch)",
		        &c->epoch, e) == ETIMEDOUT)
			break;
	cond_unlock(s, c);
}

static void
cond_op(struct slot *s)
{
	if (s->index % 4 == 2)
		cond_epoch(s, &s->run->cond);
	else
		cond_move(s, &s->run->cond, s->index % 4 == 0);
}

/* Wake every waiter of the run's condition variables, so that those asked
 * to stop see it (they check under the mutex, we broadcast under it). */
void
cond_kick(struct run *r)
{
	struct cond_obj *c = &r->cond;
	pl_mutex_lock(&c->m);
	conform_enter(&c->ck, 1);
	pl_cond_broadcast(&c->not_empty);
	pl_cond_broadcast(&c->not_full);
	pl_cond_broadcast(&c->epoch_cv);
	conform_exit(&c->ck, 1);
	pl_mutex_unlock(&c->m);
}

/* ---- rwlock ------------------------------------------------------------- */

/* The readers' side as a struct conform_lock, for conform_acquire. */
CF_OPS(rd, pl_rwlock_t, pl_rwlock_rdlock, pl_rwlock_tryrdlock,
    pl_rwlock_timedrdlock, pl_rwlock_rdunlock)

/* Inside: a writer alone, a reader beside no writer. */
static void
rw_check(struct slot *s, struct rw_obj *o, bool wr)
{
	int w = LOAD(&o->writers), rd = LOAD(&o->readers);
	if (wr ? w != 1 || rd != 0 : w != 0)
		VIOL(s, "a %s beside %d other writer(s) and %d reader(s)",
		    wr ? "writer" : "reader", w - wr, rd - !wr);
}

static void
rwlock_op(struct slot *s)
{
	int li = RND(s) % 4 == 0;
	struct rw_obj *o = &s->run->rw[li];
	bool wr = RND(s) % 100 < 30;
	struct lockset *ls = wr ? &s->run->ls[P_RWLOCK] : &s->run->rd;
	if (!conform_acquire(&ls->lk[li], &ls->ck[li], &s->rng))
		return;
	FADD(wr ? &o->writers : &o->readers, 1);
	rw_check(s, o, wr);
	uint64_t d0 = o->data[0];
	if (wr)
		o->data[0] = d0 + 1;
	if (wr || RND(s) % 8 == 0)
		conform_hold(&s->rng);
	for (int i = 1; i < 4; i++)
		if (wr) {
			o->data[i] = d0 + 1;
		} else if (o->data[i] != d0) {
			VIOL(s,
			    "a torn read: word %d is %" PRIu64
			    ", word 0 %" PRIu64,
			    i, o->data[i], d0);
			break;
		}
	rw_check(s, o, wr);
	FSUB(wr ? &o->writers : &o->readers, 1);
	if (wr) {
		s->cs[li]++;
		pl_rwlock_wrunlock(&o->l);
	} else {
		pl_rwlock_rdunlock(&o->l);
	}
}

/* ---- once --------------------------------------------------------------- */

static void
once_fn(void *arg)
{
	struct once_ent *e = arg;
	unsigned n = FADD(&e->runs, 1);
	if (n)
		violation(e->run, P_ONCE, "fn ran %u times", n + 1);
	if (me)
		conform_hold(&me->rng);
	e->payload = LOAD(&e->gen) + 1;
	STORE(&e->done, 1);
}

/* A pl_once_t that was called (when: retired, or at the end) must have
 * run fn exactly once. */
void
once_check(struct run *r, const struct once_ent *e, const char *when)
{
	unsigned calls = LOAD(&e->calls), runs = LOAD(&e->runs);
	if (calls && runs != 1)
		violation(r, P_ONCE,
		    "a pl_once_t %s: called %u times, fn ran %u times", when,
		    calls, runs);
}

/* Start round r + 1 on a fresh pl_once_t, once nobody uses the entry. */
static void
once_advance(struct slot *s, uint64_t r)
{
	uint64_t exp = r, n = r + 1;
	if (!__atomic_compare_exchange_n(&s->run->once_claim, &exp, n, false,
	        __ATOMIC_SEQ_CST, __ATOMIC_SEQ_CST))
		return;
	struct once_ent *e = &s->run->ring[n % ONCE_RING];
	__atomic_store_n(&e->gen, UINT64_MAX, __ATOMIC_SEQ_CST);
	wait_begin(
	    s, "once: users of a retired pl_once_t to leave", 0, NULL, 0);
	while (__atomic_load_n(&e->users, __ATOMIC_SEQ_CST) != 0)
		sched_yield();
	wait_end(s);
	once_check(s->run, e, "retired");
	STORE(&e->o.state, 0); /* PL_ONCE_INIT: nobody uses it */
	STORE(&e->runs, 0);
	STORE(&e->done, 0);
	STORE(&e->calls, 0);
	e->payload = 0;
	__atomic_store_n(&e->gen, n, __ATOMIC_SEQ_CST);
	__atomic_store_n(&s->run->once_cur, n, __ATOMIC_SEQ_CST);
}

static void
once_op(struct slot *s)
{
	uint64_t r = __atomic_load_n(&s->run->once_cur, __ATOMIC_SEQ_CST);
	struct once_ent *e = &s->run->ring[r % ONCE_RING];
	__atomic_fetch_add(&e->users, 1, __ATOMIC_SEQ_CST);
	if (__atomic_load_n(&e->gen, __ATOMIC_SEQ_CST) != r) {
		/* Retired under us: the next round is being set up. */
		__atomic_fetch_sub(&e->users, 1, __ATOMIC_SEQ_CST);
		sched_yield();
		return;
	}
	wait_begin(s, "pl_once", 0, NULL, 0);
	pl_once(&e->o, once_fn, e);
	wait_end(s);
	unsigned runs = LOAD(&e->runs);
	if (LOAD(&e->done) != 1)
		VIOL(s, "pl_once returned before fn did");
	else if (e->payload != r + 1)
		VIOL(s, "fn's write is not visible after pl_once");
	if (runs != 1)
		VIOL(s, "fn ran %u times", runs);
	unsigned calls = __atomic_add_fetch(&e->calls, 1, __ATOMIC_SEQ_CST);
	__atomic_fetch_sub(&e->users, 1, __ATOMIC_SEQ_CST);
	if (calls >= (unsigned)s->run->once_k)
		once_advance(s, r);
}

/* ---- raw park / unpark -------------------------------------------------- */

/* The semaphore: SEM_K units; a post hands its unit directly to the
 * oldest parked waiter if there is one (so waits are FIFO and bounded),
 * else adds it to the count.  SEM_WAITERS changes only with the bucket
 * locked: set by a waiter's validate, cleared by the post callback or the
 * timed_out callback of the last waiter to leave. */
static bool
sem_validate(void *ctx)
{
	uintptr_t *p = ctx, w = LOAD(p);
	while (w < SEM_UNIT && !(w & SEM_WAITERS) &&
	    !__atomic_compare_exchange_n(p, &w, w | SEM_WAITERS, false,
	        __ATOMIC_RELAXED, __ATOMIC_RELAXED))
		;
	return w < SEM_UNIT;
}

static void
sem_timed_out(void *ctx, const void *addr, bool was_last)
{
	(void)addr;
	if (was_last)
		__atomic_fetch_and(
		    (uintptr_t *)ctx, ~SEM_WAITERS, __ATOMIC_RELAXED);
}

static uintptr_t
sem_post_cb(pl_unpark_result_t r, void *ctx)
{
	uintptr_t *sem = ctx;
	if (r.unparked > 1 || (r.unparked == 0 && r.have_more))
		violation(me->run, P_PARK,
		    "pl_unpark_one: unparked %zu, "
		    "have_more %d",
		    r.unparked, (int)r.have_more);
	if (!r.have_more)
		__atomic_fetch_and(sem, ~SEM_WAITERS, __ATOMIC_RELAXED);
	if (r.unparked)
		return TOKEN_UNIT; /* the unit goes to the woken thread */
	__atomic_fetch_add(sem, SEM_UNIT, __ATOMIC_RELEASE);
	return PL_UNPARK_TOKEN_DEFAULT;
}

static void
sem_post(uintptr_t *sem)
{
	uintptr_t w = LOAD(sem);
	while (!(w & SEM_WAITERS))
		if (__atomic_compare_exchange_n(sem, &w, w + SEM_UNIT, true,
		        __ATOMIC_RELEASE, __ATOMIC_RELAXED))
			return;
	pl_unpark_one(sem, sem_post_cb, sem);
}

/* Take a unit, waiting until ts (dl in ns) if not NULL; 0 or ETIMEDOUT. */
static int
sem_wait(
    struct slot *s, struct park_obj *p, const struct timespec *ts, uint64_t dl)
{
	for (;;) {
		uintptr_t w = LOAD(&p->sem);
		if (w >= SEM_UNIT) {
			if (__atomic_compare_exchange_n(&p->sem, &w,
			        w - SEM_UNIT, true, __ATOMIC_ACQUIRE,
			        __ATOMIC_RELAXED))
				return 0;
			continue;
		}
		pl_park_result_t res = pl_park(
		    &p->sem, sem_validate, NULL, sem_timed_out, &p->sem, 0, ts);
		if (res.status == PL_PARK_UNPARKED && res.token == TOKEN_UNIT)
			return 0;
		if (res.status == PL_PARK_UNPARKED)
			VIOL(s, "semaphore: woken with token %#" PRIxPTR,
			    res.token);
		if (res.status == PL_PARK_TIMED_OUT) {
			conform_timed_result(&p->ck, ETIMEDOUT, dl);
			return ETIMEDOUT;
		}
	}
}

static void
sem_op(struct slot *s, struct park_obj *p)
{
	struct timespec ts;
	bool timed = RND(s) % 2;
	uint64_t dl = timed ? conform_rand_deadline(&s->rng, &ts) : 0;
	wait_begin(s, "semaphore wait (pl_park)", dl, NULL, 0);
	int rc = sem_wait(s, p, timed ? &ts : NULL, dl);
	wait_end(s);
	if (rc)
		return;
	int n = FADD(&p->sem_inside, 1);
	if (n >= SEM_K)
		VIOL(s, "semaphore: %d holders of %d units", n + 1, SEM_K);
	FADD(&p->sem_value, 1);
	conform_hold(&s->rng);
	s->cs[0]++;
	FSUB(&p->sem_inside, 1);
	sem_post(&p->sem);
}

struct gate_ctx {
	uintptr_t *gate;
	uintptr_t expect;
};

static bool
gate_validate(void *ctx)
{
	struct gate_ctx *g = ctx;
	return LOAD(g->gate) == g->expect;
}

/* Wait for the gate's current round to be signalled. */
static void
gate_wait(struct slot *s, struct park_obj *p)
{
	uintptr_t w = __atomic_load_n(&p->gate, __ATOMIC_ACQUIRE);
	if (w & (GATE_SET | GATE_CLOSED)) {
		sched_yield();
		return;
	}
	struct gate_ctx g = { &p->gate, w };
	struct timespec ts;
	bool timed = RND(s) % 2;
	uint64_t dl = timed ? conform_rand_deadline(&s->rng, &ts) : UNBOUNDED;
	wait_begin(s, "pl_park on the gate", dl, &p->gate, w);
	pl_park_result_t res = pl_park(&p->gate, gate_validate, NULL, NULL, &g,
	    (uintptr_t)s->index, timed ? &ts : NULL);
	wait_end(s);
	if (res.status == PL_PARK_TIMED_OUT)
		conform_timed_result(&p->ck, ETIMEDOUT, dl);
	if (res.status != PL_PARK_UNPARKED || res.token == TOKEN_CLOSED)
		return;
	if (res.token != w / GATE_ROUND)
		VIOL(s,
		    "gate: woken with token %" PRIuPTR " in round %" PRIuPTR,
		    res.token, w / GATE_ROUND);
	__atomic_fetch_add(&p->reported, 1, __ATOMIC_RELEASE);
}

/* Open the gate: every waiter that pl_unpark_all woke must return. */
static void
gate_signal(struct slot *s, struct park_obj *p)
{
	if (RND(s) % 2)
		sleep_ns(RND(s) % 200000);
	else
		sched_yield();
	uintptr_t w = LOAD(&p->gate);
	if ((w & (GATE_SET | GATE_CLOSED)) ||
	    !__atomic_compare_exchange_n(&p->gate, &w, w | GATE_SET, false,
	        __ATOMIC_SEQ_CST, __ATOMIC_RELAXED))
		return;
	size_t n = pl_unpark_all(&p->gate, w / GATE_ROUND);
	uint64_t limit = now_ns() + opt.stall_ns, got;
	wait_begin(s, "gate: the signalled waiters to return", 0, NULL, 0);
	while ((got = __atomic_load_n(&p->reported, __ATOMIC_ACQUIRE)) < n &&
	    now_ns() <= limit)
		sched_yield();
	wait_end(s);
	if (got != n)
		VIOL(s,
		    "gate: %" PRIu64 " of %zu signalled waiters returned "
		    "in %.1f s",
		    got, n, (double)opt.stall_ns / 1e9);
	STORE(&p->reported, 0);
	uintptr_t set = w | GATE_SET;
	__atomic_compare_exchange_n(&p->gate, &set, w + GATE_ROUND, false,
	    __ATOMIC_SEQ_CST, __ATOMIC_RELAXED);
}

static void
park_op(struct slot *s)
{
	if (s->index == 0)
		gate_signal(s, &s->run->park);
	else if (RND(s) % 2)
		gate_wait(s, &s->run->park);
	else
		sem_op(s, &s->run->park);
}

/* ---- the objects of a run, and the conformance pass --------------------- */

/* In the order of the P_ constants. */
void (*const prim_op[NPRIM])(struct slot *) = { lock_op, rmutex_op, cond_op,
	rwlock_op, once_op, bitlock_op, park_op };

void
run_objects_init(struct run *r)
{
	r->once_k = opt.threads < 2 ? 2 : opt.threads;
	for (int i = 0; i < ONCE_RING; i++)
		r->ring[i].run = r;
	uint64_t x =
	    conform_splitmix(opt.seed ^ 0xb17u ^ (uint64_t)r->is_child);
	r->init_word = r->word = (uintptr_t)x & W_FLIP;
	r->init_byte = r->byte = (unsigned char)((x >> 56) & B_FLIP);
	r->park.sem = SEM_K * SEM_UNIT;
	for (int i = 0; i < 2; i++) {
		struct conform_lock *lk = &r->ls[P_MUTEX].lk[i];
		*lk = conform_mutex(&r->mtx[i]);
		if (opt.busted)
			*lk = CF_TABLE("busted lock", &r->busted[i],
			    &r->busted[i], 1, 1, busted, NULL, busted_state);
		r->ls[P_RMUTEX].lk[i] = conform_rmutex(&r->rmtx[i]);
		r->ls[P_RMUTEX].lk[i].inside = rmutex_inside;
		r->ls[P_RWLOCK].lk[i] = conform_rwlock_writer(&r->rw[i].l);
		r->rd.lk[i] = CF_TABLE("pl_rwlock (readers)", &r->rw[i].l,
		    &r->rw[i].l, 0, 0, rd, NULL, cf_word_state);
	}
	struct conform_lock *lk = r->ls[P_BITLOCK].lk;
	lk[0] = conform_bitlock(&r->word, WA_L, WA_P);
	lk[1] = conform_bitlock(&r->word, WB_L, WB_P);
	lk[2] = conform_bitlock8(&r->byte, BC_L, BC_P);
	lk[3] = conform_bitlock8(&r->byte, BD_L, BD_P);
	for (int i = 0; i < NLOCKS; i++)
		lk[i].inside = bit_inside;
	r->cond.mlk = conform_mutex(&r->cond.m);
}

/* The primitive whose conformance bodies run now, for conform_failed. */
static int conform_prim;

/* tests/conform.h's report of a failed check in the conformance pass. */
void
conform_failed(const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	vviolation(&parent_run, conform_prim, fmt, ap);
	va_end(ap);
}

/* The bodies of tests/conform.h, each lock on objects of its own.  With
 * --busted, only the no-lost-wakeup body, on a mutex that loses wakeups:
 * it must fail. */
void
conformance_pass(void)
{
	static pl_mutex_t m;
	static pl_rmutex_t rm;
	static uintptr_t w = W_FLIP;
	static unsigned char b = B_FLIP;
	static pl_rwlock_t rw;
	struct {
		int prim;
		struct conform_lock l;
	} t[] = {
		{ P_MUTEX, conform_mutex(&m) },
		{ P_RMUTEX, conform_rmutex(&rm) },
		{ P_BITLOCK, conform_bitlock(&w, WB_L, WB_P) },
		{ P_BITLOCK, conform_bitlock8(&b, BC_L, BC_P) },
		{ P_RWLOCK, conform_rwlock_writer(&rw) },
	};
	conform_wait_ns = opt.stall_ns + NS;
	conform_finish_ns = 2 * opt.stall_ns + 2 * NS;
	conform_scale = UNDER_TSAN ? 20 : 4;
	for (size_t i = 0; i < sizeof t / sizeof t[0]; i++) {
		if (!ENABLED(t[i].prim) || (opt.busted && i > 0))
			continue;
		conform_prim = t[i].prim;
		uint64_t t0 = now_ns();
		if (opt.busted) {
			t[i].l.name = "pl_mutex losing wakeups";
			t[i].l.unlock = lost_unlock;
			t[i].l.unlock_fair = NULL;
			conform_no_lost_wakeup(&t[i].l);
		} else {
			conform_all(&t[i].l);
		}
		printf("torture: conformance of %s: %.1f s, violations %" PRIu64
		       "\n",
		    t[i].l.name, (double)(now_ns() - t0) / 1e9,
		    total_violations(&parent_run));
	}
}
