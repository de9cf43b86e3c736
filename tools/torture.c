/* SPDX-License-Identifier: MIT */
/*
 * torture: a stress tester for every libparkinglot primitive, in the manner
 * of the Linux kernel's locktorture.  Public API only.
 *
 *   tools/torture [--seconds N] [--threads N] [--primitive NAME[,NAME..]|all]
 *                 [--interval S] [--busted] [--seed N] [--no-fork]
 *                 [--stall-ms N]
 *
 * First a conformance pass: the bodies of tests/conform.h (lighter than in
 * tests/test_conform) for the mutex, the rmutex, a bit lock of each width
 * and the rwlock's writers.  Then --threads workers (default 4) for each
 * primitive hammer shared objects with random operations, holds, deadlines
 * (past, malformed, up to 100 ms away) and fair and plain unlocks.  The
 * mutex, rmutex and bitlock workers run conform_op (nobody else inside, a
 * plain counter checked at the end, ETIMEDOUT never early, EINVAL for
 * malformed deadlines), the rmutex at random recursion depths with EPERM
 * from non-owners, the bit locks two in a word and two in a byte while
 * their other bits are flipped by atomic xor.  cond: a bounded queue whose
 * items arrive exactly once and in order, signal and broadcast phases, an
 * epoch whose waiters must all return.  rwlock: no reader beside a writer,
 * no torn read.  once: fn runs exactly once on fresh pl_once_t objects.
 * park: a counting semaphore with hand-off and a gate opened with
 * pl_unpark_all, on raw pl_park/pl_unpark_*.
 *
 * A churn thread replaces random workers; a fork in the middle (--seconds
 * >= 4; not under ThreadSanitizer, which does not support threads in the
 * child) runs every primitive for 1 s in the child on objects the parent
 * never touched; a monitor flags a wait that lasts --stall-ms (2000;
 * 10000 under TSan) past its due end, and a primitive that completes
 * nothing for as long.  A status line every --interval seconds (5); the
 * last line is "torture: SUCCESS ops=N violations=0" or "torture: FAILURE
 * ops=N violations=M", the exit status 0 or 1; workers that do not stop in
 * time, or a SIGALRM watchdog, end the run in FAILURE.  --busted must fail:
 * the mutex workers use a lock that is not atomic (test, yield, then set),
 * and the conformance pass runs its no-lost-wakeup body on a mutex whose
 * unlock wakes nobody.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <float.h>
#include <getopt.h>
#include <inttypes.h>
#include <limits.h>
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <parkinglot.h>

#if defined(__SANITIZE_THREAD__)
#define UNDER_TSAN 1
#elif defined(__has_feature)
#if __has_feature(thread_sanitizer)
#define UNDER_TSAN 1
#endif
#endif
#ifndef UNDER_TSAN
#define UNDER_TSAN 0
#endif

/* tests/conform.h reports through these (defined below). */
struct slot;
static __thread struct slot *me;
static void conform_failed(const char *fmt, ...)
    __attribute__((format(printf, 1, 2)));
static void noted(const char *what);
static void wait_begin(struct slot *s, const char *what, uint64_t due,
    const uintptr_t *watch, uintptr_t val);
static void wait_end(struct slot *s);
#define CONFORM_FAIL(...) conform_failed(__VA_ARGS__)
#define CONFORM_NOTED(what) noted(what)
#define CONFORM_WAIT_UNTIMED(what) CONFORM_WAIT_TIMED(what, 0)
#define CONFORM_WAIT_TIMED(what, dl)                                           \
	(me ? wait_begin(me, what, dl, NULL, 0) : (void)0)
#define CONFORM_WAIT_END() (me ? wait_end(me) : (void)0)
#include "conform.h"
#include "toolutil.h"

#define LOAD(p) __atomic_load_n((p), __ATOMIC_RELAXED)
#define STORE(p, v) __atomic_store_n((p), (v), __ATOMIC_RELAXED)
#define FADD(p, v) __atomic_fetch_add((p), (v), __ATOMIC_RELAXED)
#define FSUB(p, v) __atomic_fetch_sub((p), (v), __ATOMIC_RELAXED)
#define RND(s) conform_rnd(&(s)->rng)
#define now_ns conform_now_ns
#define sleep_ns conform_sleep_ns
#define NS CF_SEC
#define UNBOUNDED UINT64_MAX /* the due end of a wait for an event */

enum { P_MUTEX, P_RMUTEX, P_COND, P_RWLOCK, P_ONCE, P_BITLOCK, P_PARK, NPRIM };
#define P_OTHER NPRIM /* fork, churn, shutdown: violations of the harness */
static const char *const prim_name[NPRIM + 1] = { "mutex", "rmutex", "cond",
	"rwlock", "once", "bitlock", "park", "torture" };
#define ENABLED(p) (opt.prims & (1u << (p)))
#define MAXTHREADS 32
#define NLOCKS 4

static struct {
	double seconds, interval;
	int threads;
	unsigned prims; /* bit mask of enabled primitives */
	bool busted, fork;
	uint64_t seed, stall_ns;
} opt = { 20, 5, 4, (1u << NPRIM) - 1, false, true, 0, 0 };

/* Time allowed to stop once the run is over. */
static uint64_t
grace_ns(void)
{
	return 2 * opt.stall_ns + 3 * NS;
}

/* ---- the shared state of a run ------------------------------------------ */

/* One worker position.  Threads come and go (churn); the slot stays. */
struct slot {
	struct run *run;
	int prim, index;
	pthread_t tid;
	bool started;   /* a thread was started and not yet joined */
	bool abandoned; /* it did not stop: never joined, never reused */
	unsigned incarnation;
	int stop, exited; /* atomic: asked to stop; has left its loop */
	uint64_t rng;
	/* The current wait, for the monitor: wseq is odd while waiting; the
	 * fields are written before it turns odd, and read between two equal
	 * odd readings of it.  Once *watch != watch_val (if watch is set),
	 * the wait must end within the stall bound. */
	uint64_t wseq, wstart, wlimit;
	const uintptr_t *watch;
	uintptr_t watch_val;
	const char *what;
	uint64_t m_seq, m_trig; /* the monitor's own */
	bool m_reported;
	uint64_t max_over;   /* atomic: the longest a wait lasted past due */
	uint64_t ops;        /* atomic: completed operations */
	uint64_t cs[NLOCKS]; /* completed critical sections, per object */
	uintptr_t xorw;      /* bitlock: every mask xored into the word */
	unsigned char xorb;  /* and into the byte */
} __attribute__((aligned(64)));

/* Locks for conform_acquire and conform_op, with their checks. */
struct lockset {
	struct conform_lock lk[NLOCKS];
	struct conform_check ck[NLOCKS] __attribute__((aligned(64)));
};

#define QCAP 8
struct item {
	uint32_t prod;
	uint64_t seq;
};

struct cond_obj {
	pl_mutex_t m;
	pl_cond_t not_empty, not_full, epoch_cv;
	struct conform_lock mlk;
	struct conform_check ck; /* the holder of m */
	unsigned head, count;    /* under m, as all that follows */
	struct item q[QCAP];
	uint64_t next_seq[MAXTHREADS]; /* per producer slot */
	uint64_t expect[MAXTHREADS];   /* the next seq consumers expect */
	uint64_t produced, consumed, since_flip;
	bool bcast_phase;
	uintptr_t epoch; /* atomic: the monitor watches it */
} __attribute__((aligned(64)));

struct rw_obj {
	pl_rwlock_t l;
	int readers, writers; /* atomic */
	uint64_t data[4];     /* plain: a record the writers keep equal */
} __attribute__((aligned(64)));

#define ONCE_RING 64
struct once_ent {
	pl_once_t o;
	struct run *run;
	unsigned runs, done, calls, users; /* atomic */
	uint64_t gen;                      /* atomic: the round it serves */
	uint64_t payload;                  /* plain: written by fn */
} __attribute__((aligned(64)));

/* Bit locks: two in a word, two in a byte; the other bits are flipped. */
#define WA_L ((uintptr_t)1)
#define WA_P ((uintptr_t)2)
#define WB_L ((uintptr_t)1 << (sizeof(uintptr_t) * CHAR_BIT - 2))
#define WB_P ((uintptr_t)1 << 7)
#define W_FLIP (~(WA_L | WA_P | WB_L | WB_P))
#define BC_L ((unsigned char)0x04)
#define BC_P ((unsigned char)0x40)
#define BD_L ((unsigned char)0x01)
#define BD_P ((unsigned char)0x10)
#define B_FLIP ((unsigned char)~(BC_L | BC_P | BD_L | BD_P))

/* Raw parking: a gate (round << 2 | CLOSED | SET) and a semaphore. */
#define GATE_SET ((uintptr_t)1)
#define GATE_CLOSED ((uintptr_t)2)
#define GATE_ROUND ((uintptr_t)4)
#define TOKEN_CLOSED UINTPTR_MAX
#define SEM_WAITERS ((uintptr_t)1)
#define SEM_UNIT ((uintptr_t)2)
#define SEM_K 2
#define TOKEN_UNIT ((uintptr_t)7)

struct park_obj {
	uintptr_t gate;
	uint64_t reported; /* atomic: waiters of the open round that returned */
	uintptr_t sem;
	int sem_inside;
	uint64_t sem_value; /* atomic */
	struct conform_check ck;
} __attribute__((aligned(64)));

struct run {
	bool is_child;
	int nthreads, once_k;
	int stop, stop_monitor; /* atomic */
	uint64_t start_ns, churns, child_ops;
	uint64_t violations[NPRIM + 1]; /* atomic */
	struct slot slots[NPRIM][MAXTHREADS];
	pl_mutex_t mtx[2];
	unsigned char busted[2]; /* the --busted locks */
	pl_rmutex_t rmtx[2];
	uintptr_t word, init_word;
	unsigned char byte, init_byte;
	struct lockset ls[NPRIM]; /* mutex, rmutex, bitlock; rwlock writers */
	struct lockset rd;        /* rwlock readers */
	struct cond_obj cond;
	struct rw_obj rw[2];
	struct once_ent ring[ONCE_RING];
	uint64_t once_cur, once_claim; /* atomic: the current round, and the
	                                  round that may be advanced next */
	struct park_obj park;
};

/* The parent's objects, and a second set that only the fork child uses:
 * nobody in the parent ever touches them, so they are free at the fork. */
static struct run parent_run, child_run;
static volatile sig_atomic_t in_child;
static int run_child_fd = -1;
static int conform_prim; /* the primitive of the conformance pass's body */

/* ---- reporting ---------------------------------------------------------- */

static void
vviolation(struct run *r, int prim, const char *fmt, va_list ap)
{
	uint64_t n = FADD(&r->violations[prim], 1);
	char buf[300];
	vsnprintf(buf, sizeof buf, fmt, ap);
	if (n <= 10)
		fprintf(stderr, "torture%s: VIOLATION: %s: %s\n",
		    r->is_child ? " [fork child]" : "", prim_name[prim],
		    n < 10 ? buf : "(further ones not shown)");
}

static void violation(struct run *r, int prim, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

static void
violation(struct run *r, int prim, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	vviolation(r, prim, fmt, ap);
	va_end(ap);
}

#define VIOL(s, ...) violation((s)->run, (s)->prim, __VA_ARGS__)

static void
conform_failed(const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	vviolation(&parent_run, conform_prim, fmt, ap);
	va_end(ap);
}

/* What conform_note counts: a worker reports it at once (the conformance
 * bodies report theirs when their threads are done). */
static void
noted(const char *what)
{
	if (me)
		VIOL(me, "%s", what);
}

static uint64_t
total_violations(struct run *r)
{
	uint64_t v = 0;
	for (int p = 0; p <= NPRIM; p++)
		v += LOAD(&r->violations[p]);
	return v;
}

static uint64_t
prim_ops(struct run *r, int p)
{
	uint64_t n = 0;
	for (int i = 0; i < MAXTHREADS; i++)
		n += LOAD(&r->slots[p][i].ops);
	return n;
}

static uint64_t
total_ops(struct run *r)
{
	uint64_t n = LOAD(&r->child_ops);
	for (int p = 0; p < NPRIM; p++)
		n += prim_ops(r, p);
	return n;
}

/* ---- waits, published for the stall detector ---------------------------- */

/* A wait due to end at due (a deadline, or 0: now), within the stall
 * bound; or, with due UNBOUNDED, due once *watch != val, if ever. */
static void
wait_begin(struct slot *s, const char *what, uint64_t due,
    const uintptr_t *watch, uintptr_t val)
{
	/* Release stores: none may become visible before the even wseq of
	 * the wait that ended (a seqlock's writer). */
	uint64_t q = LOAD(&s->wseq), t = now_ns();
	due = due == UNBOUNDED ? due : (due > t ? due : t) + opt.stall_ns;
	__atomic_store_n(&s->what, what, __ATOMIC_RELEASE);
	__atomic_store_n(&s->wstart, t, __ATOMIC_RELEASE);
	__atomic_store_n(&s->wlimit, due, __ATOMIC_RELEASE);
	__atomic_store_n(&s->watch, watch, __ATOMIC_RELEASE);
	__atomic_store_n(&s->watch_val, val, __ATOMIC_RELEASE);
	__atomic_store_n(&s->wseq, q + 1, __ATOMIC_RELEASE);
}

static void
wait_end(struct slot *s)
{
	__atomic_store_n(&s->wseq, LOAD(&s->wseq) + 1, __ATOMIC_RELEASE);
	uint64_t limit = LOAD(&s->wlimit);
	if (limit != UNBOUNDED) {
		uint64_t t = now_ns(), base = limit - opt.stall_ns;
		if (t > base && t - base > LOAD(&s->max_over))
			STORE(&s->max_over, t - base);
	}
}

static bool
stopping(struct slot *s)
{
	return LOAD(&s->stop) || LOAD(&s->run->stop);
}

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

static void
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
static void
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
static void
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

/* ---- workers, churn, monitor -------------------------------------------- */

static void (*const prim_op[NPRIM])(struct slot *) = { lock_op, rmutex_op,
	cond_op, rwlock_op, once_op, bitlock_op, park_op };

static void *
worker(void *arg)
{
	struct slot *s = arg;
	me = s;
	while (!stopping(s)) {
		prim_op[s->prim](s);
		STORE(&s->ops, LOAD(&s->ops) + 1);
		uint32_t x = RND(s) % 1000; /* between operations: usually on */
		if (x < 5)
			sleep_ns(1000 + RND(s) % 50000);
		else if (x < 20)
			sched_yield();
	}
	__atomic_store_n(&s->exited, 1, __ATOMIC_RELEASE);
	return NULL;
}

static bool
slot_start(struct slot *s)
{
	s->incarnation++;
	s->rng = conform_splitmix(opt.seed ^
	             conform_splitmix(((uint64_t)s->prim << 40) ^
	                 ((uint64_t)s->index << 24) ^
	                 ((uint64_t)s->incarnation << 1) ^
	                 (uint64_t)s->run->is_child)) |
	    1;
	STORE(&s->stop, 0);
	STORE(&s->exited, 0);
	int e = pthread_create(&s->tid, NULL, worker, s);
	if (e)
		violation(s->run, P_OTHER, "pthread_create: %s", strerror(e));
	return s->started = e == 0;
}

/* Join s's thread, asked to stop at asked (ns), once it has left its
 * loop; if it has not within limit ns of being asked, report it (by: who
 * asked) and abandon it, never to be joined.  Whether it was joined. */
static bool
slot_join(struct slot *s, uint64_t asked, uint64_t limit, const char *by)
{
	while (!__atomic_load_n(&s->exited, __ATOMIC_ACQUIRE)) {
		if (now_ns() <= asked + limit) {
			sleep_ns(1000000);
			continue;
		}
		uint64_t q = LOAD(&s->wseq);
		s->abandoned = true;
		violation(s->run, s->prim,
		    "worker %d did not stop within %.1f s of being asked "
		    "(%s)%s%s",
		    s->index, (double)limit / 1e9, by,
		    (q & 1) ? "; it waits in " : "",
		    (q & 1) ? LOAD(&s->what) : "");
		return false;
	}
	pthread_join(s->tid, NULL);
	s->started = false;
	return true;
}

static void *
churn(void *arg)
{
	struct run *r = arg;
	uint64_t x = conform_splitmix(opt.seed ^ 0xc4u) | 1;
	int enabled[NPRIM], ne = 0;
	for (int p = 0; p < NPRIM; p++)
		if (ENABLED(p))
			enabled[ne++] = p;
	while (!LOAD(&r->stop)) {
		uint64_t t = 20000000 + conform_rng(&x) % 180000000;
		for (uint64_t slept = 0; slept < t && !LOAD(&r->stop);
		     slept += 10000000)
			sleep_ns(10000000);
		struct slot *s = &r->slots[enabled[conform_rng(&x) % ne]]
		                          [conform_rng(&x) % r->nthreads];
		if (LOAD(&r->stop) || !s->started || s->abandoned)
			continue;
		STORE(&s->stop, 1);
		if (s->prim == P_COND)
			cond_kick(r);
		if (!slot_join(s, now_ns(), opt.stall_ns + NS, "by churn"))
			continue;
		FADD(&r->churns, 1);
		slot_start(s);
	}
	return NULL;
}

static void
monitor_slot(struct run *r, struct slot *s, uint64_t t)
{
	uint64_t q = __atomic_load_n(&s->wseq, __ATOMIC_ACQUIRE);
	if (!(q & 1))
		return;
	/* Acquire loads, so that the check of wseq below cannot move above
	 * them (no fence: ThreadSanitizer does not model fences). */
	const char *what = __atomic_load_n(&s->what, __ATOMIC_ACQUIRE);
	uint64_t start = __atomic_load_n(&s->wstart, __ATOMIC_ACQUIRE);
	uint64_t limit = __atomic_load_n(&s->wlimit, __ATOMIC_ACQUIRE);
	const uintptr_t *watch = __atomic_load_n(&s->watch, __ATOMIC_ACQUIRE);
	uintptr_t val = __atomic_load_n(&s->watch_val, __ATOMIC_ACQUIRE);
	if (LOAD(&s->wseq) != q)
		return; /* that wait ended meanwhile */
	if (q != s->m_seq) {
		s->m_seq = q;
		s->m_trig = 0;
		s->m_reported = false;
	}
	if (watch && !s->m_trig && LOAD(watch) != val)
		s->m_trig = t;
	if (s->m_trig && s->m_trig + opt.stall_ns < limit)
		limit = s->m_trig + opt.stall_ns;
	if (t > limit && !s->m_reported) {
		s->m_reported = true;
		violation(r, s->prim,
		    "stall: worker %d has been in %s for "
		    "%.2f s%s",
		    s->index, what, (double)(t - start) / 1e9,
		    s->m_trig ? ", since what it waits for happened" : "");
	}
}

static void *
monitor(void *arg)
{
	struct run *r = arg;
	uint64_t last_ops[NPRIM] = { 0 }, last_change[NPRIM];
	for (int p = 0; p < NPRIM; p++)
		last_change[p] = now_ns();
	while (!LOAD(&r->stop_monitor)) {
		uint64_t t = now_ns();
		for (int p = 0; p < NPRIM; p++) {
			for (int i = 0; ENABLED(p) && i < r->nthreads; i++)
				monitor_slot(r, &r->slots[p][i], t);
			uint64_t ops = prim_ops(r, p);
			if (!ENABLED(p) || ops != last_ops[p] ||
			    LOAD(&r->stop)) {
				last_ops[p] = ops;
				last_change[p] = t;
			} else if (t - last_change[p] > opt.stall_ns) {
				violation(r, p,
				    "no progress: no operation "
				    "completed for %.2f s",
				    (double)(t - last_change[p]) / 1e9);
				last_change[p] = t;
			}
		}
		sleep_ns(20000000);
	}
	return NULL;
}

/* ---- end-of-run checks -------------------------------------------------- */

static uint64_t
cs_sum(struct run *r, int p, int li)
{
	uint64_t n = 0;
	for (int i = 0; i < MAXTHREADS; i++)
		n += r->slots[p][i].cs[li];
	return n;
}

static void
final_checks(struct run *r)
{
	/* The locks of conform_op: counters, at rest; the rwlock's records. */
	for (int p = 0; p < NPRIM; p++) {
		struct lockset *ls = &r->ls[p];
		for (int li = 0; li < NLOCKS && ls->lk[li].obj; li++) {
			const struct conform_lock *l = &ls->lk[li];
			uint64_t want = cs_sum(r, p, li),
			         got = ls->ck[li].value;
			for (int i = 0; p == P_RWLOCK && i < 4; i++)
				if ((got = r->rw[li].data[i]) != want)
					break;
			if (got != want)
				violation(r, p,
				    "%s %d: counter %" PRIu64
				    ", critical sections %" PRIu64,
				    l->name, li, got, want);
			if (l->state(l) != 0)
				violation(r, p, "%s %d: state %#jx at rest",
				    l->name, li, (uintmax_t)l->state(l));
		}
	}
	for (int li = 0; li < 2; li++)
		if (!pl_rmutex_trylock(&r->rmtx[li]) ||
		    pl_rmutex_unlock(&r->rmtx[li]) != 0)
			violation(
			    r, P_RMUTEX, "rmutex %d: no trylock at rest", li);
	struct cond_obj *c = &r->cond;
	uint64_t left = c->count;
	for (; c->count; c->count--, c->head = (c->head + 1) % QCAP)
		cond_check_item(r, c, c->q[c->head]);
	if (c->produced != c->consumed + left)
		violation(r, P_COND,
		    "produced %" PRIu64 ", consumed %" PRIu64 " and %" PRIu64
		    " left",
		    c->produced, c->consumed, left);
	for (int p = 0; p < MAXTHREADS; p++)
		if (c->expect[p] != c->next_seq[p])
			violation(r, P_COND,
			    "producer %d made %" PRIu64 " items, %" PRIu64
			    " consumed in order",
			    p, c->next_seq[p], c->expect[p]);
	if (LOAD(&c->m.state) != 0)
		violation(r, P_COND, "the mutex's state is %#x at rest",
		    LOAD(&c->m.state));
	for (int i = 0; i < ONCE_RING; i++)
		once_check(r, &r->ring[i], "at the end");
	uintptr_t xw = r->init_word;
	unsigned char xb = r->init_byte;
	for (int i = 0; i < MAXTHREADS; i++) {
		xw ^= r->slots[P_BITLOCK][i].xorw;
		xb ^= r->slots[P_BITLOCK][i].xorb;
	}
	if (LOAD(&r->word) != xw || LOAD(&r->byte) != xb)
		violation(r, P_BITLOCK,
		    "the word is %#" PRIxPTR " and the "
		    "byte %#x, expected %#" PRIxPTR " and %#x",
		    LOAD(&r->word), LOAD(&r->byte), xw, xb);
	struct park_obj *pk = &r->park;
	if (LOAD(&pk->sem) != SEM_K * SEM_UNIT)
		violation(r, P_PARK, "the semaphore is %#" PRIxPTR " at rest",
		    LOAD(&pk->sem));
	if (LOAD(&pk->sem_value) != cs_sum(r, P_PARK, 0))
		violation(r, P_PARK,
		    "semaphore: counter %" PRIu64 ", holds %" PRIu64,
		    LOAD(&pk->sem_value), cs_sum(r, P_PARK, 0));
	/* Nothing may be left in a queue.  (Not in the fork child, whose
	 * counters began as a copy of the parent's.) */
	struct pl_stats st;
	pl_stats_get(&st);
	if (!r->is_child && !opt.busted && st.threads_parked_now != 0)
		violation(r, P_OTHER, "%zu threads still parked at the end",
		    st.threads_parked_now);
}

/* ---- a run -------------------------------------------------------------- */

static void
run_init(struct run *r, bool is_child)
{
	r->is_child = is_child;
	r->nthreads = opt.threads;
	r->once_k = opt.threads < 2 ? 2 : opt.threads;
	for (int p = 0; p < NPRIM; p++)
		for (int i = 0; i < MAXTHREADS; i++)
			r->slots[p][i] =
			    (struct slot){ .run = r, .prim = p, .index = i };
	for (int i = 0; i < ONCE_RING; i++)
		r->ring[i].run = r;
	uint64_t x = conform_splitmix(opt.seed ^ 0xb17u ^ (uint64_t)is_child);
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

/* The bodies of tests/conform.h, each lock on objects of its own.  With
 * --busted, only the no-lost-wakeup body, on a mutex that loses wakeups:
 * it must fail. */
static void
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

/* A status line; at the end, also the longest wait past due of each
 * primitive, against the stall bound. */
static void
print_status(struct run *r, uint64_t t, bool end)
{
	char buf[600];
	int n =
	    snprintf(buf, sizeof buf, "torture: %s%6.1f s:", end ? "end " : "",
	        (double)(t - r->start_ns) / 1e9);
	for (int p = 0; p < NPRIM; p++)
		if (ENABLED(p))
			n += snprintf(buf + n, sizeof buf - (size_t)n,
			    " %s %" PRIu64, prim_name[p], prim_ops(r, p));
	n += snprintf(buf + n, sizeof buf - (size_t)n,
	    "; churns %" PRIu64 "; violations %" PRIu64 "%s", LOAD(&r->churns),
	    total_violations(r),
	    end ? "\ntorture: longest waits (stall bound" : "");
	if (end)
		n += snprintf(buf + n, sizeof buf - (size_t)n,
		    " %.1f s):", (double)opt.stall_ns / 1e9);
	for (int p = 0; end && p < NPRIM; p++) {
		uint64_t m = 0;
		for (int i = 0; i < MAXTHREADS; i++)
			if (LOAD(&r->slots[p][i].max_over) > m)
				m = LOAD(&r->slots[p][i].max_over);
		if (ENABLED(p))
			n += snprintf(buf + n, sizeof buf - (size_t)n,
			    " %s %.1f ms", prim_name[p], (double)m / 1e6);
	}
	puts(buf);
}

static void
finish(struct run *r)
{
	uint64_t v = total_violations(r);
	fflush(stderr);
	printf("torture: %s ops=%" PRIu64 " violations=%" PRIu64 "\n",
	    v ? "FAILURE" : "SUCCESS", total_ops(r), v);
	fflush(stdout);
}

/* Stop every worker; a worker that does not stop within the grace ends
 * the process (a hang is a failure, never a hang of the tester). */
static void
stop_all(struct run *r)
{
	STORE(&r->stop, 1);
	cond_kick(r);
	__atomic_fetch_or(&r->park.gate, GATE_CLOSED, __ATOMIC_SEQ_CST);
	pl_unpark_all(&r->park.gate, TOKEN_CLOSED);
	uint64_t asked = now_ns();
	bool stuck = false;
	for (int p = 0; p < NPRIM; p++)
		for (int i = 0; i < r->nthreads; i++) {
			struct slot *s = &r->slots[p][i];
			if (s->started && !s->abandoned)
				slot_join(
				    s, asked, grace_ns(), "the end of a run");
			stuck |= s->abandoned;
		}
	if (stuck && r->is_child)
		_exit(2);
	if (stuck) {
		finish(r);
		_exit(1);
	}
}

static void run_torture(struct run *r, double seconds, bool with_fork);

/* The longest the fork child may take: its 1 s run, twice the grace a
 * run has to stop, and 5 s more.  Its watchdog and the parent both use
 * it. */
static uint64_t
child_bound_ns(void)
{
	return 1 * NS + 2 * grace_ns() + 5 * NS;
}

/* The fork child: only the forking thread exists here.  It runs a short
 * torture of its own on objects the parent never touched (locks held or
 * waited on by the parent's other threads are unusable here), and reports
 * its operations through the pipe and its verdict through its status. */
static pid_t
fork_child(struct run *r, int *fd)
{
	int fds[2];
	fflush(stdout);
	fflush(stderr);
	pid_t pid = pipe(fds) == 0 ? fork() : -1;
	if (pid < 0) {
		violation(r, P_OTHER, "pipe or fork: %s", strerror(errno));
		return -1;
	}
	if (pid == 0) {
		in_child = 1;
		close(fds[0]);
		run_child_fd = fds[1];
		alarm((unsigned)(child_bound_ns() / NS));
		run_init(&child_run, true);
		run_torture(&child_run, 1.0, false);
		uint64_t ops = total_ops(&child_run);
		if (write(run_child_fd, &ops, sizeof ops) != sizeof ops)
			_exit(3);
		_exit(total_violations(&child_run) ? 1 : 0);
	}
	close(fds[1]);
	*fd = fds[0];
	printf("torture: forked child %ld: it runs every primitive for 1 s "
	       "on objects of its own\n",
	    (long)pid);
	return pid;
}

/* Reap the child if it is done (with wait: until it is or limit passed,
 * then kill it); whether it is gone. */
static bool
reap_child(struct run *r, pid_t pid, int fd, bool wait, uint64_t limit)
{
	int st;
	pid_t w;
	uint64_t ops = 0;
	while (
	    (w = waitpid(pid, &st, WNOHANG)) == 0 && wait && now_ns() < limit)
		sleep_ns(10000000);
	if (w == 0 && !wait)
		return false;
	if (w == 0) {
		violation(r, P_OTHER,
		    "the fork child did not finish in "
		    "time: killed");
		kill(pid, SIGKILL);
		waitpid(pid, &st, 0);
	} else if (w < 0) {
		violation(r, P_OTHER, "waitpid: %s", strerror(errno));
	} else if (read(fd, &ops, sizeof ops) == sizeof ops) {
		STORE(&r->child_ops, ops);
	}
	close(fd);
	if (w == pid && WIFEXITED(st) && WEXITSTATUS(st) == 0)
		printf("torture: fork child exited 0 after %" PRIu64 " ops\n",
		    ops);
	else if (w == pid)
		violation(r, P_OTHER,
		    "the fork child ended with status %#x "
		    "(%" PRIu64 " ops)",
		    st, ops);
	return true;
}

/* Run the enabled primitives for the given time on r's objects. */
static void
run_torture(struct run *r, double seconds, bool with_fork)
{
	pthread_t mon, ch_tid;
	pid_t child = -1;
	int fd = -1, e;
	r->start_ns = now_ns();
	for (int p = 0; p < NPRIM; p++)
		for (int i = 0; ENABLED(p) && i < r->nthreads; i++)
			if (!slot_start(&r->slots[p][i]))
				break;
	if ((e = pthread_create(&mon, NULL, monitor, r)) != 0 ||
	    (!r->is_child && (e = pthread_create(&ch_tid, NULL, churn, r)))) {
		fprintf(stderr, "torture: pthread_create: %s\n", strerror(e));
		exit(1);
	}
	uint64_t end = r->start_ns + (uint64_t)(seconds * 1e9), t;
	uint64_t next_status = r->start_ns + (uint64_t)(opt.interval * 1e9);
	uint64_t fork_at =
	    with_fork ? r->start_ns + (end - r->start_ns) / 2 : UINT64_MAX;
	uint64_t child_limit = fork_at + child_bound_ns();
	while ((t = now_ns()) < end) {
		if (!r->is_child && opt.interval > 0 && t >= next_status) {
			print_status(r, t, false);
			next_status += (uint64_t)(opt.interval * 1e9);
		}
		if (t >= fork_at) {
			fork_at = UINT64_MAX;
			child = fork_child(r, &fd);
		}
		if (child > 0 && reap_child(r, child, fd, false, 0))
			child = -1;
		sleep_ns(end - t < 20000000 ? end - t : 20000000);
	}
	STORE(&r->stop, 1);
	if (!r->is_child)
		pthread_join(ch_tid, NULL);
	stop_all(r);
	STORE(&r->stop_monitor, 1);
	pthread_join(mon, NULL);
	if (child > 0)
		reap_child(r, child, fd, true, child_limit);
	final_checks(r);
}

/* ---- the watchdog and main ---------------------------------------------- */

static char *
put_u64(char *p, uint64_t v)
{
	char tmp[24];
	int n = 0;
	do
		tmp[n++] = (char)('0' + v % 10);
	while ((v /= 10) != 0);
	while (n)
		*p++ = tmp[--n];
	return p;
}

/* Async-signal-safe: the last line, and out. */
static void
on_alarm(int sig)
{
	(void)sig;
	if (in_child)
		_exit(4);
	static const char a[] = "torture: watchdog: the run did not end in "
	                        "time\ntorture: FAILURE ops=";
	char buf[160], *p = buf + sizeof a - 1;
	uint64_t v = total_violations(&parent_run);
	memcpy(buf, a, sizeof a - 1);
	p = put_u64(p, total_ops(&parent_run));
	memcpy(p, " violations=", 12);
	p = put_u64(p + 12, v ? v : 1);
	*p++ = '\n';
	if (write(STDOUT_FILENO, buf, (size_t)(p - buf)) < 0)
		_exit(1);
	_exit(1);
}

static void
usage(FILE *f)
{
	fprintf(f,
	    "usage: torture [--seconds N] [--threads N] "
	    "[--primitive NAME[,NAME...]|all]\n"
	    "               [--interval S] [--busted] [--seed N] [--no-fork] "
	    "[--stall-ms N]\n"
	    "  --seconds N     run time (default 20; a fork in the middle "
	    "if >= 4)\n"
	    "  --threads N     workers per primitive, 2..%d (default 4)\n"
	    "  --primitive P   mutex rmutex cond rwlock once bitlock park, "
	    "or all\n"
	    "  --interval S    a status line every S seconds (default 5; 0: "
	    "none)\n"
	    "  --busted        a broken mutex: the run must end in FAILURE\n"
	    "  --stall-ms N    the stall bound (default 2000; 10000 under "
	    "TSan)\n",
	    MAXTHREADS);
}

static bool
parse_prims(const char *arg)
{
	if (strcmp(arg, "all") == 0) {
		opt.prims = (1u << NPRIM) - 1;
		return true;
	}
	opt.prims = 0;
	for (const char *t = arg;; t += strcspn(t, ",") + 1) {
		size_t len = strcspn(t, ",");
		int p = 0;
		while (p < NPRIM &&
		    (strlen(prim_name[p]) != len ||
		        strncmp(t, prim_name[p], len) != 0))
			p++;
		if (p == NPRIM) {
			fprintf(stderr, "torture: unknown primitive '%.*s'\n",
			    (int)len, t);
			return false;
		}
		opt.prims |= 1u << p;
		if (t[len] == '\0')
			return true;
	}
}

int
main(int argc, char **argv)
{
	static const struct option longopts[] = {
		{ "seconds", required_argument, NULL, 's' },
		{ "threads", required_argument, NULL, 't' },
		{ "primitive", required_argument, NULL, 'p' },
		{ "interval", required_argument, NULL, 'i' },
		{ "busted", no_argument, NULL, 'b' },
		{ "seed", required_argument, NULL, 'S' },
		{ "no-fork", no_argument, NULL, 'F' },
		{ "stall-ms", required_argument, NULL, 'm' },
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 },
	};
	bool seeded = false, ok = true;
	long threads = opt.threads, stall_ms = UNDER_TSAN ? 10000 : 2000;
	int c;
	char *endp;

	setvbuf(stdout, NULL, _IOLBF, 0);
	while (ok &&
	    (c = getopt_long(argc, argv, "s:t:p:i:bS:Fm:h", longopts, NULL)) !=
	        -1) {
		if (c == 's') {
			ok = tool_parse_double(optarg, 0, 1e6, &opt.seconds) &&
			    opt.seconds > 0;
		} else if (c == 't') {
			ok = tool_parse_long(optarg, 2, MAXTHREADS, &threads);
		} else if (c == 'p') {
			ok = parse_prims(optarg);
		} else if (c == 'i') {
			ok = tool_parse_double(
			    optarg, 0, DBL_MAX, &opt.interval);
		} else if (c == 'S') {
			opt.seed = strtoull(optarg, &endp, 0);
			ok = *endp == '\0';
			seeded = true;
		} else if (c == 'm') {
			ok = tool_parse_long(optarg, 10, LONG_MAX, &stall_ms);
		} else if (c == 'h') {
			usage(stdout);
			return 0;
		}
		opt.busted |= c == 'b';
		opt.fork &= c != 'F';
		ok = ok && c != '?';
	}
	if (!ok || optind != argc) {
		usage(stderr);
		return 2;
	}
	opt.threads = (int)threads;
	opt.stall_ns = (uint64_t)stall_ms * 1000000;
	if (!seeded)
		opt.seed = conform_splitmix(now_ns() ^ (uint64_t)getpid());
	static const char fork_on[] = "a fork in the middle";
	const char *fork_note = fork_on;
	if (UNDER_TSAN)
		fork_note = "fork phase skipped (ThreadSanitizer does not "
		            "support threads in a forked child)";
	else if (!opt.fork)
		fork_note = "fork phase skipped (--no-fork)";
	else if (opt.seconds < 4)
		fork_note = "fork phase skipped (--seconds < 4)";
	opt.fork = fork_note == fork_on;
	char prims[128] = "";
	for (int p = 0; p < NPRIM; p++)
		if (ENABLED(p))
			strcat(
			    strcat(prims, prims[0] ? "," : ""), prim_name[p]);
	printf("torture: %s for %g s, %d threads each, seed %" PRIu64
	       ", stall bound %.1f s%s\ntorture: %s\n",
	    prims, opt.seconds, opt.threads, opt.seed,
	    (double)opt.stall_ns / 1e9, opt.busted ? ", BUSTED mutex" : "",
	    fork_note);

	struct sigaction sa;
	memset(&sa, 0, sizeof sa);
	sa.sa_handler = on_alarm;
	sigemptyset(&sa.sa_mask);
	sigaction(SIGALRM, &sa, NULL);
	alarm((unsigned)(opt.seconds + 4 * grace_ns() / NS + 60));
	run_init(&parent_run, false);
	conformance_pass();
	run_torture(&parent_run, opt.seconds, opt.fork);
	alarm(0);
	print_status(&parent_run, now_ns(), true);
	finish(&parent_run);
	return total_violations(&parent_run) ? 1 : 0;
}
