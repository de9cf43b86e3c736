/* SPDX-License-Identifier: MIT */
/*
 * torture: a stress tester for every libparkinglot primitive, in the manner
 * of the Linux kernel's locktorture.  Public API only.
 *
 *   tools/torture [--seconds N] [--threads N] [--primitive NAME[,NAME..]|all]
 *                 [--interval S] [--busted] [--seed N] [--no-fork]
 *                 [--stall-ms N]
 *
 * For each primitive (mutex, rmutex, cond, rwlock, once, bitlock, park),
 * --threads workers (default 4) hammer a few shared objects with random
 * operations, random hold times (1 in 1000 holds sleeps about 1 ms),
 * random deadlines (past, malformed, microseconds to 100 ms away) and fair
 * and unfair unlocks, and check on every operation:
 *
 *   mutex    nobody else inside (an atomic counter and an owner word), the
 *            lock reads as locked, ETIMEDOUT never before the deadline,
 *            EINVAL for malformed deadlines; a plain counter incremented
 *            with a hold between its read and its write, checked at the
 *            end against the critical sections each thread completed.
 *   rmutex   the same, at a random recursion depth 1..4 (nested trylock
 *            and past-deadline timedlock must succeed), is_owned, and
 *            EPERM from an unlock by a thread that does not own it.
 *   cond     a bounded queue: producers stamp items with per-producer
 *            sequence numbers, consumers check every item arrives exactly
 *            once and in order; signal and broadcast phases, wakes inside
 *            and outside the mutex, timed waits; an epoch that producers
 *            advance with pl_cond_broadcast, whose waiters must all return
 *            once it moved; every wait returns holding the mutex.
 *   rwlock   a writer alone, no reader beside a writer, no torn read of a
 *            four-word record, exact write count; timed and try variants.
 *   once     fresh pl_once_t objects raced by all the workers: fn runs
 *            exactly once, everybody returns after it and sees its writes.
 *   bitlock  two bit locks in one word and two in one byte, while other
 *            bits of the same word and byte are flipped by atomic xor
 *            (also inside the critical sections): exact critical-section
 *            counts, and the flipped bits end exactly as the xors predict.
 *   park     raw pl_park/pl_unpark_*: a fair counting semaphore (units
 *            handed to the woken thread; never more than K inside, no unit
 *            lost) and a gate opened with pl_unpark_all whose every
 *            signalled waiter must return with the gate's token.
 *
 * Around them: a churn thread stops a random worker now and then and
 * starts a fresh thread in its place; a fork in the middle of the run
 * (--seconds >= 4) whose child runs all the primitives for about 1 s on a
 * set of objects the parent never touches (the only locks sure to be free
 * at the fork) and exits with a status the parent checks; a stall
 * detector (a monitor thread) that flags any wait longer than --stall-ms
 * (2000; 10000 under ThreadSanitizer) past the point where it should have
 * ended: from its start for untimed lock calls, from the deadline for
 * timed ones, from the signal for waits on an event; and a progress check
 * that flags a primitive whose workers completed nothing for as long.
 *
 * A status line every --interval seconds (5); the last line is exactly
 * "torture: SUCCESS ops=N violations=0" or "torture: FAILURE ops=N
 * violations=M", and the exit status 0 or 1.  The run lasts --seconds
 * (20) plus a grace to stop; workers that do not stop within it are named
 * and the process ends with FAILURE at once, and a SIGALRM watchdog ends
 * it if even that hangs.  --busted swaps the mutex for a broken one (test,
 * yield, then set: not atomic, like locktorture's lock_busted), so that a
 * run must end in FAILURE: the proof that the checks catch violations.
 *
 * ThreadSanitizer does not support threads created in the forked child of
 * a multithreaded process: under it the fork phase is skipped (and the
 * status says so), as with --no-fork.
 */
#define _GNU_SOURCE
#include <errno.h>
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

#define LOAD(p) __atomic_load_n((p), __ATOMIC_RELAXED)
#define STORE(p, v) __atomic_store_n((p), (v), __ATOMIC_RELAXED)
#define FADD(p, v) __atomic_fetch_add((p), (v), __ATOMIC_RELAXED)
#define FSUB(p, v) __atomic_fetch_sub((p), (v), __ATOMIC_RELAXED)

enum {
	P_MUTEX,
	P_RMUTEX,
	P_COND,
	P_RWLOCK,
	P_ONCE,
	P_BITLOCK,
	P_PARK,
	NPRIM,
	P_OTHER = NPRIM /* fork, churn, shutdown: violations of the harness */
};

static const char *const prim_name[NPRIM + 1] = { "mutex", "rmutex", "cond",
	"rwlock", "once", "bitlock", "park", "torture" };

#define MAXTHREADS 32
#define NLOCKS 4
#define NS 1000000000ull
#define UNBOUNDED UINT64_MAX

/* ---- options ---------------------------------------------------------- */

static struct {
	double seconds;
	int threads;
	unsigned prims; /* bit mask of enabled primitives */
	double interval;
	bool busted;
	uint64_t seed;
	bool fork;
	uint64_t stall_ns;
} opt = { 20, 4, (1u << NPRIM) - 1, 5, false, 0, true, 0 };

/* Time allowed to stop once the run is over. */
static uint64_t
grace_ns(void)
{
	return 2 * opt.stall_ns + 3 * NS;
}

/* ---- time and randomness ------------------------------------------------ */

static uint64_t
now_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * NS + (uint64_t)ts.tv_nsec;
}

static struct timespec
ns_to_ts(uint64_t ns)
{
	struct timespec ts = { (time_t)(ns / NS), (long)(ns % NS) };
	return ts;
}

static void
sleep_ns(uint64_t ns)
{
	struct timespec ts = ns_to_ts(ns);
	while (nanosleep(&ts, &ts) != 0 && errno == EINTR)
		;
}

static uint64_t
splitmix(uint64_t x)
{
	x += 0x9e3779b97f4a7c15ull;
	x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ull;
	x = (x ^ (x >> 27)) * 0x94d049bb133111ebull;
	return x ^ (x >> 31);
}

static inline uint64_t
rng_next(uint64_t *s)
{
	uint64_t x = *s;
	x ^= x >> 12;
	x ^= x << 25;
	x ^= x >> 27;
	*s = x;
	return x * 0x2545f4914f6cdd1dull;
}

/* ---- the shared state of a run ------------------------------------------ */

struct run;

/* One worker position.  Threads come and go (churn); the slot and its
 * counts stay. */
struct slot {
	struct run *run;
	int prim, index;
	pthread_t tid;
	bool started;   /* a thread was started and not yet joined */
	bool abandoned; /* it did not stop: never joined, never reused */
	unsigned incarnation;
	int stop;   /* atomic: this thread is asked to stop */
	int exited; /* atomic: its thread has left its loop */
	uint64_t rng;

	/* The current wait, for the monitor: wseq is odd while waiting; the
	 * fields are written before it turns odd, and read between two equal
	 * odd readings of it. */
	uint64_t wseq, wstart, wlimit;
	const uintptr_t *watch; /* if set: the wait must end within the */
	uintptr_t watch_val;    /* stall bound once *watch != watch_val */
	const char *what;
	/* The monitor's own. */
	uint64_t m_seq, m_trig;
	bool m_reported;

	uint64_t max_over;   /* atomic: the longest a bounded wait lasted
	                        past its start (untimed) or deadline */
	uint64_t ops;        /* atomic: completed operations */
	uint64_t cs[NLOCKS]; /* completed critical sections, per object */
	uintptr_t xorw;      /* bitlock: every mask xored into the word */
	unsigned char xorb;  /* and into the byte */
} __attribute__((aligned(64)));

/* Checks around a critical section: an atomic count of threads inside and
 * the owner's id, and a plain counter (incremented with a hold between
 * its load and its store, so that two threads inside lose an update). */
struct lock_check {
	int inside;
	uintptr_t owner;
	uint64_t value;
};

struct mutex_obj {
	pl_mutex_t m;
	unsigned char busted; /* the --busted lock */
	struct lock_check ck;
} __attribute__((aligned(64)));

struct rmutex_obj {
	pl_rmutex_t m;
	struct lock_check ck;
} __attribute__((aligned(64)));

#define QCAP 8
struct item {
	uint32_t prod;
	uint64_t seq;
};

struct cond_obj {
	pl_mutex_t m;
	pl_cond_t not_empty, not_full, epoch_cv;
	struct lock_check ck; /* the holder of m */
	/* Under m: */
	unsigned head, count;
	struct item q[QCAP];
	uint64_t next_seq[MAXTHREADS]; /* per producer slot */
	uint64_t expect[MAXTHREADS];   /* the next seq consumers expect */
	uint64_t produced, consumed, since_flip;
	bool bcast_phase;
	uintptr_t epoch; /* atomic (the monitor watches it); written under m */
	uint64_t epoch_waits;
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

struct once_obj {
	struct once_ent ring[ONCE_RING];
	uint64_t cur;   /* atomic: the current round */
	uint64_t claim; /* atomic: the round that may be advanced next */
};

/* Bit locks: two in a word, two in a byte; the other bits are flipped. */
#define WA_L ((uintptr_t)1)
#define WA_P ((uintptr_t)2)
#define WB_L ((uintptr_t)1 << (sizeof(uintptr_t) * CHAR_BIT - 2))
#define WB_P ((uintptr_t)1 << 7)
#define W_LOCKBITS (WA_L | WA_P | WB_L | WB_P)
#define W_FLIP (~W_LOCKBITS)
#define BC_L ((unsigned char)0x04)
#define BC_P ((unsigned char)0x40)
#define BD_L ((unsigned char)0x01)
#define BD_P ((unsigned char)0x10)
#define B_LOCKBITS ((unsigned char)(BC_L | BC_P | BD_L | BD_P))
#define B_FLIP ((unsigned char)~B_LOCKBITS)

struct bit_obj {
	uintptr_t word;
	unsigned char byte;
	uintptr_t init_word;
	unsigned char init_byte;
	struct lock_check ck[NLOCKS];
} __attribute__((aligned(64)));

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
	uint64_t rounds, woken;
	uintptr_t sem;
	int sem_inside;
	uint64_t sem_value; /* atomic: SEM_K holders may meet */
} __attribute__((aligned(64)));

struct run {
	bool is_child;
	int nthreads;
	int stop;         /* atomic: the run is over */
	int stop_monitor; /* atomic */
	uint64_t start_ns;
	struct slot slots[NPRIM][MAXTHREADS];
	uint64_t violations[NPRIM + 1]; /* atomic */
	uint64_t churns;                /* atomic */
	uint64_t child_ops;
	int once_k;

	struct mutex_obj mtx[2];
	struct rmutex_obj rmtx[2];
	struct cond_obj cond;
	struct rw_obj rw[2];
	struct once_obj once;
	struct bit_obj bit;
	struct park_obj park;
};

/* The parent's objects, and a second set that only the fork child uses:
 * nobody in the parent ever touches them, so they are free at the fork. */
static struct run parent_run, child_run;
static __thread struct slot *me;
static volatile sig_atomic_t in_child;
static int run_child_fd = -1;

/* ---- reporting ---------------------------------------------------------- */

static void
violation(struct run *r, int prim, const char *fmt, ...)
{
	uint64_t n = FADD(&r->violations[prim], 1);
	if (n > 10)
		return;
	char buf[300];
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(buf, sizeof buf, fmt, ap);
	va_end(ap);
	if (n == 10)
		fprintf(stderr,
		    "torture%s: VIOLATION: %s: (further violations "
		    "of %s not shown)\n",
		    r->is_child ? " [fork child]" : "", prim_name[prim],
		    prim_name[prim]);
	else
		fprintf(stderr, "torture%s: VIOLATION: %s: %s\n",
		    r->is_child ? " [fork child]" : "", prim_name[prim], buf);
}

#define VIOL(s, ...) violation((s)->run, (s)->prim, __VA_ARGS__)

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

static void
wait_publish(struct slot *s, const char *what, uint64_t limit,
    const uintptr_t *watch, uintptr_t val)
{
	/* Release stores: none may become visible before the even wseq of
	 * the wait that ended (a seqlock's writer). */
	uint64_t q = LOAD(&s->wseq);
	__atomic_store_n(&s->what, what, __ATOMIC_RELEASE);
	__atomic_store_n(&s->wstart, now_ns(), __ATOMIC_RELEASE);
	__atomic_store_n(&s->wlimit, limit, __ATOMIC_RELEASE);
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

/* An untimed lock call: it must end within the bound from now. */
static void
wait_untimed(struct slot *s, const char *what)
{
	wait_publish(s, what, now_ns() + opt.stall_ns, NULL, 0);
}

/* A timed call: it must end within the bound from its deadline. */
static void
wait_timed(struct slot *s, const char *what, uint64_t dl)
{
	uint64_t t = now_ns();
	wait_publish(s, what, (dl > t ? dl : t) + opt.stall_ns, NULL, 0);
}

/* ---- random behaviour --------------------------------------------------- */

static inline uint32_t
rnd(struct slot *s)
{
	return (uint32_t)(rng_next(&s->rng) >> 32);
}

static inline void
cpu_relax(void)
{
#if defined(__x86_64__) || defined(__i386__)
	__builtin_ia32_pause();
#elif defined(__aarch64__)
	__asm__ __volatile__("yield");
#else
	__asm__ __volatile__("" ::: "memory");
#endif
}

/* A random hold: mostly short, 1 in 1000 about 1 ms asleep. */
static void
hold(struct slot *s)
{
	uint32_t x = rnd(s) % 1000;
	if (x == 0)
		sleep_ns(1000000);
	else if (x < 15)
		sched_yield();
	else if (x < 400)
		for (uint32_t i = rnd(s) % 256; i > 0; i--)
			cpu_relax();
}

/* Between operations: usually straight on. */
static void
pause_between(struct slot *s)
{
	uint32_t x = rnd(s) % 1000;
	if (x < 5)
		sleep_ns(1000 + rnd(s) % 50000);
	else if (x < 20)
		sched_yield();
}

/* A random absolute deadline; returns it in ns (0: the epoch). */
static uint64_t
rand_deadline(struct slot *s, struct timespec *ts)
{
	uint32_t x = rnd(s) % 32;
	uint64_t t = now_ns(), dl;
	if (x == 0)
		dl = 0; /* { 0, 0 }: long past, and valid */
	else if (x < 3)
		dl = t - 1000;
	else if (x < 22)
		dl = t + rnd(s) % 2000000;
	else if (x < 30)
		dl = t + 2000000 + rnd(s) % 18000000;
	else
		dl = t + 50000000 + rnd(s) % 50000000;
	*ts = ns_to_ts(dl);
	return dl;
}

static struct timespec
bad_deadline(struct slot *s)
{
	struct timespec ts = { 0, 1000000000 };
	switch (rnd(s) % 3) {
	case 0:
		ts.tv_sec = 1;
		ts.tv_nsec = -1;
		break;
	case 1:
		ts.tv_sec = -1;
		ts.tv_nsec = 0;
		break;
	}
	return ts;
}

/* The result of a timed acquisition: true if acquired. */
static bool
timed_result(struct slot *s, const char *fn, int rc, uint64_t dl)
{
	if (rc == 0)
		return true;
	if (rc == ETIMEDOUT) {
		uint64_t t = now_ns();
		if (t < dl)
			VIOL(s,
			    "%s returned ETIMEDOUT %.3f ms before its "
			    "deadline",
			    fn, (double)(dl - t) / 1e6);
		return false;
	}
	VIOL(s, "%s returned %d", fn, rc);
	return false;
}

/* ---- critical-section checks -------------------------------------------- */

static void
ck_enter(struct run *r, int prim, struct lock_check *ck, uintptr_t id,
    const char *what)
{
	int n = FADD(&ck->inside, 1);
	if (n != 0)
		violation(r, prim,
		    "%s: %d other thread(s) inside the critical "
		    "section",
		    what, n);
	STORE(&ck->owner, id);
}

static void
ck_body(struct slot *s, struct lock_check *ck)
{
	uint64_t v = ck->value;
	hold(s);
	ck->value = v + 1;
}

static void
ck_exit(struct run *r, int prim, struct lock_check *ck, uintptr_t id,
    const char *what)
{
	uintptr_t o = LOAD(&ck->owner);
	if (o != id)
		violation(r, prim,
		    "%s: the owner changed during the critical "
		    "section",
		    what);
	int n = FSUB(&ck->inside, 1);
	if (n != 1)
		violation(r, prim,
		    "%s: %d thread(s) inside the critical "
		    "section at its end",
		    what, n);
}

#define ENTER(s, ck, what)                                                     \
	ck_enter((s)->run, (s)->prim, (ck), (uintptr_t)(s), what)
#define EXIT(s, ck, what)                                                      \
	ck_exit((s)->run, (s)->prim, (ck), (uintptr_t)(s), what)

static bool
stopping(struct slot *s)
{
	return LOAD(&s->stop) || LOAD(&s->run->stop);
}

/* ---- mutex -------------------------------------------------------------- */

/* The busted lock: test, yield, then set.  Two threads can both see it
 * free before either sets it. */
static void
busted_lock(unsigned char *b)
{
	while (LOAD(b))
		sched_yield();
	sched_yield();
	STORE(b, 1);
}

static void
busted_unlock(unsigned char *b)
{
	STORE(b, 0);
}

static bool
mutex_acquire(struct slot *s, pl_mutex_t *m)
{
	uint32_t c = rnd(s) % 100;
	if (c < 45) {
		wait_untimed(s, "pl_mutex_lock");
		pl_mutex_lock(m);
		wait_end(s);
		return true;
	}
	if (c < 65)
		return pl_mutex_trylock(m);
	if (c < 66) {
		struct timespec bad = bad_deadline(s);
		int rc = pl_mutex_timedlock(m, &bad);
		if (rc == EINVAL)
			return false;
		VIOL(s,
		    "pl_mutex_timedlock with a malformed deadline "
		    "returned %d, not EINVAL",
		    rc);
		return rc == 0;
	}
	struct timespec ts;
	uint64_t dl = rand_deadline(s, &ts);
	wait_timed(s, "pl_mutex_timedlock", dl);
	int rc = pl_mutex_timedlock(m, &ts);
	wait_end(s);
	return timed_result(s, "pl_mutex_timedlock", rc, dl);
}

static void
mutex_op(struct slot *s)
{
	int li = rnd(s) % 4 ? 0 : 1;
	struct mutex_obj *o = &s->run->mtx[li];
	if (opt.busted) {
		wait_untimed(s, "busted_lock");
		busted_lock(&o->busted);
		wait_end(s);
	} else if (!mutex_acquire(s, &o->m)) {
		return;
	}
	ENTER(s, &o->ck, "pl_mutex");
	if (!opt.busted && !pl_mutex_is_locked(&o->m))
		VIOL(s, "pl_mutex_is_locked is false inside the lock");
	ck_body(s, &o->ck);
	s->cs[li]++;
	EXIT(s, &o->ck, "pl_mutex");
	if (opt.busted)
		busted_unlock(&o->busted);
	else if (rnd(s) % 4 == 0)
		pl_mutex_unlock_fair(&o->m);
	else
		pl_mutex_unlock(&o->m);
}

/* ---- rmutex ------------------------------------------------------------- */

/* Acquire m: nested says the caller owns it already, so every method must
 * succeed at once (only a malformed deadline fails, with EINVAL). */
static bool
rmutex_acquire(struct slot *s, pl_rmutex_t *m, bool nested)
{
	uint32_t c = rnd(s) % 100;
	if (c < 2) {
		struct timespec bad = bad_deadline(s);
		int rc = pl_rmutex_timedlock(m, &bad);
		if (rc != EINVAL) {
			VIOL(s,
			    "pl_rmutex_timedlock with a malformed deadline "
			    "returned %d, not EINVAL",
			    rc);
			if (rc == 0)
				return true;
		}
		if (!nested)
			return false;
		c = 2; /* a nested acquisition still has to happen */
	}
	if (c < 45) {
		if (!nested)
			wait_untimed(s, "pl_rmutex_lock");
		pl_rmutex_lock(m);
		if (!nested)
			wait_end(s);
		return true;
	}
	if (c < 65) {
		bool ok = pl_rmutex_trylock(m);
		if (nested && !ok)
			VIOL(s, "pl_rmutex_trylock by the owner failed");
		return ok;
	}
	struct timespec ts;
	uint64_t dl = rand_deadline(s, &ts);
	if (nested) {
		int rc = pl_rmutex_timedlock(m, &ts);
		if (rc != 0)
			VIOL(s, "pl_rmutex_timedlock by the owner returned %d",
			    rc);
		return rc == 0;
	}
	wait_timed(s, "pl_rmutex_timedlock", dl);
	int rc = pl_rmutex_timedlock(m, &ts);
	wait_end(s);
	return timed_result(s, "pl_rmutex_timedlock", rc, dl);
}

static void
rmutex_op(struct slot *s)
{
	int li = rnd(s) % 4 ? 0 : 1;
	struct rmutex_obj *o = &s->run->rmtx[li];
	if (rnd(s) % 64 == 0 && !pl_rmutex_is_owned(&o->m)) {
		int rc = pl_rmutex_unlock(&o->m);
		if (rc != EPERM)
			VIOL(s,
			    "pl_rmutex_unlock by a thread that does not "
			    "own it returned %d, not EPERM",
			    rc);
	}
	if (!rmutex_acquire(s, &o->m, false))
		return;
	ENTER(s, &o->ck, "pl_rmutex");
	if (!pl_rmutex_is_owned(&o->m))
		VIOL(s, "pl_rmutex_is_owned is false for the owner");
	unsigned depth = 1 + rnd(s) % 4;
	for (unsigned d = 1; d < depth; d++) {
		if (!rmutex_acquire(s, &o->m, true)) {
			depth = d;
			break;
		}
	}
	ck_body(s, &o->ck);
	s->cs[li]++;
	for (unsigned d = depth; d > 0; d--) {
		if (d == 1)
			EXIT(s, &o->ck, "pl_rmutex");
		int rc = pl_rmutex_unlock(&o->m);
		if (rc != 0)
			VIOL(s,
			    "pl_rmutex_unlock by the owner at depth %u "
			    "returned %d",
			    d, rc);
		if (d > 1 && !pl_rmutex_is_owned(&o->m))
			VIOL(s, "released at depth %u of %u", d, depth);
	}
	if (pl_rmutex_is_owned(&o->m))
		VIOL(s, "still owned after the last unlock");
}

/* ---- cond: a bounded queue and an epoch --------------------------------- */

static void
cond_lock(struct slot *s, struct cond_obj *c)
{
	if (rnd(s) % 8 == 0) {
		for (;;) {
			struct timespec ts;
			uint64_t dl = rand_deadline(s, &ts);
			wait_timed(s, "pl_mutex_timedlock (cond's mutex)", dl);
			int rc = pl_mutex_timedlock(&c->m, &ts);
			wait_end(s);
			if (timed_result(s, "pl_mutex_timedlock", rc, dl))
				break;
		}
	} else {
		wait_untimed(s, "pl_mutex_lock (cond's mutex)");
		pl_mutex_lock(&c->m);
		wait_end(s);
	}
	ENTER(s, &c->ck, "cond's mutex");
}

static void
cond_unlock(struct slot *s, struct cond_obj *c)
{
	EXIT(s, &c->ck, "cond's mutex");
	if (rnd(s) % 8 == 0)
		pl_mutex_unlock_fair(&c->m);
	else
		pl_mutex_unlock(&c->m);
}

/* Wait on cv, holding c->m.  Untimed waits for a queue state have no
 * bound of their own (the progress check covers them); waits for the
 * epoch must end within the bound once it moved.  Returns ETIMEDOUT or 0. */
static int
cond_wait(struct slot *s, struct cond_obj *c, pl_cond_t *cv, const char *what,
    const uintptr_t *watch, uintptr_t val)
{
	int rc = 0;
	EXIT(s, &c->ck, what);
	if (rnd(s) % 2) {
		wait_publish(s, what, UNBOUNDED, watch, val);
		pl_cond_wait(cv, &c->m);
		wait_end(s);
	} else {
		struct timespec ts;
		uint64_t dl = rand_deadline(s, &ts);
		uint64_t t = now_ns();
		wait_publish(
		    s, what, (dl > t ? dl : t) + opt.stall_ns, watch, val);
		rc = pl_cond_timedwait(cv, &c->m, &ts);
		wait_end(s);
		if (rc == ETIMEDOUT) {
			t = now_ns();
			if (t < dl)
				VIOL(s,
				    "pl_cond_timedwait returned ETIMEDOUT "
				    "%.3f ms early",
				    (double)(dl - t) / 1e6);
		} else if (rc != 0) {
			VIOL(s, "pl_cond_timedwait returned %d", rc);
		}
	}
	if (!pl_mutex_is_locked(&c->m))
		VIOL(s, "%s returned without the mutex", what);
	ENTER(s, &c->ck, what);
	return rc;
}

static void
cond_wake(struct slot *s, pl_cond_t *cv, bool bcast)
{
	if (bcast)
		pl_cond_broadcast(cv);
	else if (rnd(s) % 16 == 0)
		pl_cond_broadcast(cv);
	else
		pl_cond_signal(cv);
}

static void
cond_check_item(struct run *r, struct cond_obj *c, struct item it)
{
	if (it.prod >= MAXTHREADS) {
		violation(r, P_COND, "a garbage item (producer %" PRIu32 ")",
		    it.prod);
		return;
	}
	uint64_t want = c->expect[it.prod];
	if (it.seq != want)
		violation(r, P_COND,
		    "item %" PRIu32 ":%" PRIu64 " consumed "
		    "where %" PRIu32 ":%" PRIu64 " was due (%s)",
		    it.prod, it.seq, it.prod, want,
		    it.seq < want ? "consumed twice" : "items lost");
	c->expect[it.prod] = it.seq + 1;
}

static void
cond_produce(struct slot *s, struct cond_obj *c)
{
	cond_lock(s, c);
	while (c->count == QCAP && !stopping(s))
		cond_wait(
		    s, c, &c->not_full, "pl_cond_wait (not full)", NULL, 0);
	if (c->count == QCAP) {
		cond_unlock(s, c);
		return;
	}
	uint32_t p = (uint32_t)s->index;
	c->q[(c->head + c->count) % QCAP] =
	    (struct item){ p, c->next_seq[p]++ };
	c->count++;
	c->produced++;
	bool bcast = c->bcast_phase;
	if (++c->since_flip >= 4096) {
		c->since_flip = 0;
		c->bcast_phase = !bcast;
	}
	bool advance = c->produced % 16 == 0;
	if (advance)
		STORE(&c->epoch, LOAD(&c->epoch) + 1);
	bool outside = rnd(s) % 4 == 0;
	if (!outside)
		cond_wake(s, &c->not_empty, bcast);
	if (advance)
		pl_cond_broadcast(&c->epoch_cv);
	cond_unlock(s, c);
	if (outside)
		cond_wake(s, &c->not_empty, bcast);
}

static void
cond_consume(struct slot *s, struct cond_obj *c)
{
	cond_lock(s, c);
	while (c->count == 0 && !stopping(s))
		cond_wait(
		    s, c, &c->not_empty, "pl_cond_wait (not empty)", NULL, 0);
	if (c->count == 0) {
		cond_unlock(s, c);
		return;
	}
	struct item it = c->q[c->head];
	c->head = (c->head + 1) % QCAP;
	c->count--;
	c->consumed++;
	cond_check_item(s->run, c, it);
	if (rnd(s) % 64 == 0)
		hold(s);
	bool bcast = c->bcast_phase;
	bool outside = rnd(s) % 4 == 0;
	if (!outside)
		cond_wake(s, &c->not_full, bcast);
	cond_unlock(s, c);
	if (outside)
		cond_wake(s, &c->not_full, bcast);
}

/* Wait for the epoch to move, or move it (broadcast). */
static void
cond_epoch(struct slot *s, struct cond_obj *c)
{
	cond_lock(s, c);
	if (rnd(s) % 3 == 0) {
		STORE(&c->epoch, LOAD(&c->epoch) + 1);
		pl_cond_broadcast(&c->epoch_cv);
		cond_unlock(s, c);
		return;
	}
	uintptr_t e = LOAD(&c->epoch);
	while (LOAD(&c->epoch) == e && !stopping(s))
		if (cond_wait(s, c, &c->epoch_cv, "pl_cond_wait (epoch)",
		        &c->epoch, e) == ETIMEDOUT)
			break;
	c->epoch_waits++;
	cond_unlock(s, c);
}

static void
cond_op(struct slot *s)
{
	struct cond_obj *c = &s->run->cond;
	switch (s->index % 4) {
	case 0:
		cond_produce(s, c);
		break;
	case 1:
	case 3:
		cond_consume(s, c);
		break;
	default:
		cond_epoch(s, c);
		break;
	}
}

/* Wake every waiter of the run's condition variables, so that those asked
 * to stop see it (they check under the mutex, we broadcast under it). */
static void
cond_kick(struct run *r)
{
	struct cond_obj *c = &r->cond;
	pl_mutex_lock(&c->m);
	ck_enter(r, P_COND, &c->ck, 1, "cond's mutex (kick)");
	pl_cond_broadcast(&c->not_empty);
	pl_cond_broadcast(&c->not_full);
	pl_cond_broadcast(&c->epoch_cv);
	ck_exit(r, P_COND, &c->ck, 1, "cond's mutex (kick)");
	pl_mutex_unlock(&c->m);
}

/* ---- rwlock ------------------------------------------------------------- */

static bool
rw_acquire(struct slot *s, pl_rwlock_t *l, bool wr)
{
	uint32_t c = rnd(s) % 100;
	if (c < 45) {
		wait_untimed(s, wr ? "pl_rwlock_wrlock" : "pl_rwlock_rdlock");
		if (wr)
			pl_rwlock_wrlock(l);
		else
			pl_rwlock_rdlock(l);
		wait_end(s);
		return true;
	}
	if (c < 65)
		return wr ? pl_rwlock_trywrlock(l) : pl_rwlock_tryrdlock(l);
	if (c < 67) {
		struct timespec bad = bad_deadline(s);
		int rc = wr ? pl_rwlock_timedwrlock(l, &bad)
		            : pl_rwlock_timedrdlock(l, &bad);
		if (rc == EINVAL)
			return false;
		VIOL(s, "%s with a malformed deadline returned %d, not EINVAL",
		    wr ? "pl_rwlock_timedwrlock" : "pl_rwlock_timedrdlock", rc);
		return rc == 0;
	}
	struct timespec ts;
	uint64_t dl = rand_deadline(s, &ts);
	const char *fn = wr ? "pl_rwlock_timedwrlock" : "pl_rwlock_timedrdlock";
	wait_timed(s, fn, dl);
	int rc =
	    wr ? pl_rwlock_timedwrlock(l, &ts) : pl_rwlock_timedrdlock(l, &ts);
	wait_end(s);
	return timed_result(s, fn, rc, dl);
}

static void
rwlock_op(struct slot *s)
{
	int li = rnd(s) % 4 ? 0 : 1;
	struct rw_obj *o = &s->run->rw[li];
	if (rnd(s) % 100 < 30) {
		if (!rw_acquire(s, &o->l, true))
			return;
		int w = FADD(&o->writers, 1), rd = LOAD(&o->readers);
		if (w)
			VIOL(s, "a writer beside %d other writer(s)", w);
		if (rd)
			VIOL(s, "a writer beside %d reader(s)", rd);
		uint64_t v = o->data[0];
		o->data[0] = v + 1;
		hold(s);
		for (int i = 1; i < 4; i++)
			o->data[i] = v + 1;
		rd = LOAD(&o->readers);
		if (rd)
			VIOL(s, "a writer beside %d reader(s)", rd);
		FSUB(&o->writers, 1);
		s->cs[li]++;
		pl_rwlock_wrunlock(&o->l);
	} else {
		if (!rw_acquire(s, &o->l, false))
			return;
		FADD(&o->readers, 1);
		int w = LOAD(&o->writers);
		if (w)
			VIOL(s, "a reader beside %d writer(s)", w);
		uint64_t d0 = o->data[0];
		if (rnd(s) % 8 == 0)
			hold(s);
		for (int i = 1; i < 4; i++)
			if (o->data[i] != d0) {
				VIOL(s,
				    "a torn read: word %d is %" PRIu64
				    ", word 0 %" PRIu64,
				    i, o->data[i], d0);
				break;
			}
		w = LOAD(&o->writers);
		if (w)
			VIOL(s, "a reader beside %d writer(s)", w);
		FSUB(&o->readers, 1);
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
		hold(me);
	e->payload = LOAD(&e->gen) + 1;
	STORE(&e->done, 1);
}

/* Start round r + 1 on a fresh pl_once_t, once nobody uses the entry. */
static void
once_advance(struct slot *s, struct once_obj *ob, uint64_t r)
{
	uint64_t exp = r;
	if (!__atomic_compare_exchange_n(&ob->claim, &exp, r + 1, false,
	        __ATOMIC_SEQ_CST, __ATOMIC_SEQ_CST))
		return;
	uint64_t n = r + 1;
	struct once_ent *e = &ob->ring[n % ONCE_RING];
	__atomic_store_n(&e->gen, UINT64_MAX, __ATOMIC_SEQ_CST);
	wait_untimed(s, "once: users of a retired pl_once_t to leave");
	while (__atomic_load_n(&e->users, __ATOMIC_SEQ_CST) != 0)
		sched_yield();
	wait_end(s);
	unsigned calls = LOAD(&e->calls), runs = LOAD(&e->runs);
	if (calls && runs != 1)
		VIOL(s, "a retired pl_once_t: %u calls, fn ran %u times", calls,
		    runs);
	STORE(&e->o.state, 0); /* PL_ONCE_INIT: nobody uses it */
	STORE(&e->runs, 0);
	STORE(&e->done, 0);
	STORE(&e->calls, 0);
	e->payload = 0;
	__atomic_store_n(&e->gen, n, __ATOMIC_SEQ_CST);
	__atomic_store_n(&ob->cur, n, __ATOMIC_SEQ_CST);
}

static void
once_op(struct slot *s)
{
	struct once_obj *ob = &s->run->once;
	uint64_t r = __atomic_load_n(&ob->cur, __ATOMIC_SEQ_CST);
	struct once_ent *e = &ob->ring[r % ONCE_RING];
	__atomic_fetch_add(&e->users, 1, __ATOMIC_SEQ_CST);
	if (__atomic_load_n(&e->gen, __ATOMIC_SEQ_CST) != r) {
		/* Retired under us: the next round is being set up. */
		__atomic_fetch_sub(&e->users, 1, __ATOMIC_SEQ_CST);
		sched_yield();
		return;
	}
	wait_untimed(s, "pl_once");
	pl_once(&e->o, once_fn, e);
	wait_end(s);
	if (LOAD(&e->done) != 1)
		VIOL(s, "pl_once returned before fn did");
	else if (e->payload != r + 1)
		VIOL(s, "fn's write is not visible after pl_once");
	unsigned runs = LOAD(&e->runs);
	if (runs != 1)
		VIOL(s, "fn ran %u times", runs);
	unsigned calls = __atomic_add_fetch(&e->calls, 1, __ATOMIC_SEQ_CST);
	__atomic_fetch_sub(&e->users, 1, __ATOMIC_SEQ_CST);
	if (calls >= (unsigned)s->run->once_k)
		once_advance(s, ob, r);
}

/* ---- bitlock ------------------------------------------------------------ */

static bool
bit_acquire(struct slot *s, struct bit_obj *b, int which)
{
	bool try = rnd(s) % 4 == 0;
	if (!try)
		wait_untimed(
		    s, which < 2 ? "pl_bitlock_lock" : "pl_bitlock8_lock");
	bool ok = true;
	switch (which) {
	case 0:
		if (try)
			ok = pl_bitlock_trylock(&b->word, WA_L, WA_P);
		else
			pl_bitlock_lock(&b->word, WA_L, WA_P);
		break;
	case 1:
		if (try)
			ok = pl_bitlock_trylock(&b->word, WB_L, WB_P);
		else
			pl_bitlock_lock(&b->word, WB_L, WB_P);
		break;
	case 2:
		if (try)
			ok = pl_bitlock8_trylock(&b->byte, BC_L, BC_P);
		else
			pl_bitlock8_lock(&b->byte, BC_L, BC_P);
		break;
	default:
		if (try)
			ok = pl_bitlock8_trylock(&b->byte, BD_L, BD_P);
		else
			pl_bitlock8_lock(&b->byte, BD_L, BD_P);
		break;
	}
	if (!try)
		wait_end(s);
	return ok;
}

static void
bit_release(struct slot *s, struct bit_obj *b, int which)
{
	bool fair = rnd(s) % 4 == 0;
	switch (which) {
	case 0:
		(fair ? pl_bitlock_unlock_fair : pl_bitlock_unlock)(
		    &b->word, WA_L, WA_P);
		break;
	case 1:
		(fair ? pl_bitlock_unlock_fair : pl_bitlock_unlock)(
		    &b->word, WB_L, WB_P);
		break;
	case 2:
		(fair ? pl_bitlock8_unlock_fair : pl_bitlock8_unlock)(
		    &b->byte, BC_L, BC_P);
		break;
	default:
		(fair ? pl_bitlock8_unlock_fair : pl_bitlock8_unlock)(
		    &b->byte, BD_L, BD_P);
		break;
	}
}

static void
bit_flip(struct slot *s, struct bit_obj *b)
{
	uintptr_t m = (uintptr_t)rng_next(&s->rng) & W_FLIP;
	unsigned char mb = (unsigned char)(rnd(s) & B_FLIP);
	__atomic_fetch_xor(&b->word, m, __ATOMIC_RELAXED);
	__atomic_fetch_xor(&b->byte, mb, __ATOMIC_RELAXED);
	s->xorw ^= m;
	s->xorb ^= mb;
}

static void
bitlock_op(struct slot *s)
{
	struct bit_obj *b = &s->run->bit;
	if (s->index == 0) {
		/* The flipper: bursts of xors on the other bits. */
		for (int i = 0; i < 32; i++)
			bit_flip(s, b);
		if (rnd(s) % 4 == 0)
			sched_yield();
		return;
	}
	int which = (int)(rnd(s) % NLOCKS);
	if (!bit_acquire(s, b, which))
		return;
	static const char *const names[NLOCKS] = { "bitlock (word, A)",
		"bitlock (word, B)", "bitlock8 (byte, C)",
		"bitlock8 (byte, D)" };
	ENTER(s, &b->ck[which], names[which]);
	bool held = which == 0 ? (LOAD(&b->word) & WA_L) != 0
	    : which == 1       ? (LOAD(&b->word) & WB_L) != 0
	    : which == 2       ? (LOAD(&b->byte) & BC_L) != 0
	                       : (LOAD(&b->byte) & BD_L) != 0;
	if (!held)
		VIOL(s, "%s: the locked bit is clear inside the lock",
		    names[which]);
	if (rnd(s) % 4 == 0)
		bit_flip(s, b);
	ck_body(s, &b->ck[which]);
	s->cs[which]++;
	EXIT(s, &b->ck[which], names[which]);
	bit_release(s, b, which);
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
	for (;;) {
		if (w >= SEM_UNIT)
			return false;
		if (w & SEM_WAITERS)
			return true;
		if (__atomic_compare_exchange_n(p, &w, w | SEM_WAITERS, false,
		        __ATOMIC_RELAXED, __ATOMIC_RELAXED))
			return true;
	}
}

static void
sem_timed_out(void *ctx, const void *addr, bool was_last)
{
	(void)addr;
	if (was_last)
		__atomic_fetch_and(
		    (uintptr_t *)ctx, ~SEM_WAITERS, __ATOMIC_RELAXED);
}

struct sem_post_ctx {
	uintptr_t *sem;
	struct slot *s;
};

static uintptr_t
sem_post_cb(pl_unpark_result_t r, void *ctx)
{
	struct sem_post_ctx *c = ctx;
	if (r.unparked > 1 || (r.unparked == 0 && r.have_more))
		VIOL(c->s, "pl_unpark_one: unparked %zu, have_more %d",
		    r.unparked, (int)r.have_more);
	if (r.unparked) {
		if (!r.have_more)
			__atomic_fetch_and(
			    c->sem, ~SEM_WAITERS, __ATOMIC_RELAXED);
		return TOKEN_UNIT; /* the unit goes to the woken thread */
	}
	__atomic_fetch_and(c->sem, ~SEM_WAITERS, __ATOMIC_RELAXED);
	__atomic_fetch_add(c->sem, SEM_UNIT, __ATOMIC_RELEASE);
	return PL_UNPARK_TOKEN_DEFAULT;
}

static void
sem_post(struct slot *s, uintptr_t *sem)
{
	uintptr_t w = LOAD(sem);
	while (!(w & SEM_WAITERS)) {
		if (__atomic_compare_exchange_n(sem, &w, w + SEM_UNIT, true,
		        __ATOMIC_RELEASE, __ATOMIC_RELAXED))
			return;
	}
	struct sem_post_ctx c = { sem, s };
	pl_unpark_one(sem, sem_post_cb, &c);
}

/* 0 with a unit, or ETIMEDOUT. */
static int
sem_wait(struct slot *s, uintptr_t *sem, const struct timespec *ts, uint64_t dl)
{
	for (;;) {
		uintptr_t w = LOAD(sem);
		if (w >= SEM_UNIT) {
			if (__atomic_compare_exchange_n(sem, &w, w - SEM_UNIT,
			        true, __ATOMIC_ACQUIRE, __ATOMIC_RELAXED))
				return 0;
			continue;
		}
		pl_park_result_t res =
		    pl_park(sem, sem_validate, NULL, sem_timed_out, sem, 0, ts);
		if (res.status == PL_PARK_UNPARKED) {
			if (res.token == TOKEN_UNIT)
				return 0;
			VIOL(s, "semaphore: woken with token %#" PRIxPTR,
			    res.token);
		} else if (res.status == PL_PARK_TIMED_OUT) {
			uint64_t t = now_ns();
			if (t < dl)
				VIOL(s,
				    "pl_park returned PL_PARK_TIMED_OUT "
				    "%.3f ms before its deadline",
				    (double)(dl - t) / 1e6);
			return ETIMEDOUT;
		}
	}
}

static void
sem_op(struct slot *s, struct park_obj *p)
{
	int rc;
	if (rnd(s) % 2) {
		wait_untimed(s, "semaphore wait (pl_park)");
		rc = sem_wait(s, &p->sem, NULL, 0);
	} else {
		struct timespec ts;
		uint64_t dl = rand_deadline(s, &ts);
		wait_timed(s, "semaphore timed wait (pl_park)", dl);
		rc = sem_wait(s, &p->sem, &ts, dl);
	}
	wait_end(s);
	if (rc)
		return;
	int n = FADD(&p->sem_inside, 1);
	if (n >= SEM_K)
		VIOL(s, "semaphore: %d holders of %d units", n + 1, SEM_K);
	__atomic_fetch_add(&p->sem_value, 1, __ATOMIC_RELAXED);
	hold(s);
	s->cs[0]++;
	FSUB(&p->sem_inside, 1);
	sem_post(s, &p->sem);
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
	uint64_t dl = 0;
	const struct timespec *tsp = NULL;
	if (rnd(s) % 2) {
		dl = rand_deadline(s, &ts);
		tsp = &ts;
		uint64_t t = now_ns();
		wait_publish(s, "pl_park on the gate (timed)",
		    (dl > t ? dl : t) + opt.stall_ns, &p->gate, w);
	} else {
		wait_publish(s, "pl_park on the gate", UNBOUNDED, &p->gate, w);
	}
	pl_park_result_t res = pl_park(
	    &p->gate, gate_validate, NULL, NULL, &g, (uintptr_t)s->index, tsp);
	wait_end(s);
	switch (res.status) {
	case PL_PARK_UNPARKED:
		if (res.token == TOKEN_CLOSED)
			break;
		if (res.token != w / GATE_ROUND)
			VIOL(s,
			    "gate: woken with token %" PRIuPTR " in round "
			    "%" PRIuPTR,
			    res.token, w / GATE_ROUND);
		__atomic_fetch_add(&p->reported, 1, __ATOMIC_RELEASE);
		break;
	case PL_PARK_TIMED_OUT: {
		uint64_t t = now_ns();
		if (t < dl)
			VIOL(s,
			    "pl_park returned PL_PARK_TIMED_OUT %.3f ms "
			    "before its deadline",
			    (double)(dl - t) / 1e6);
		break;
	}
	default:
		break;
	}
}

/* Open the gate: every waiter that pl_unpark_all woke must return. */
static void
gate_signal(struct slot *s, struct park_obj *p)
{
	if (rnd(s) % 2)
		sleep_ns(rnd(s) % 200000);
	else
		sched_yield();
	uintptr_t w = LOAD(&p->gate);
	if ((w & (GATE_SET | GATE_CLOSED)) ||
	    !__atomic_compare_exchange_n(&p->gate, &w, w | GATE_SET, false,
	        __ATOMIC_SEQ_CST, __ATOMIC_RELAXED))
		return;
	size_t n = pl_unpark_all(&p->gate, w / GATE_ROUND);
	uint64_t limit = now_ns() + opt.stall_ns;
	wait_untimed(s, "gate: the signalled waiters to return");
	uint64_t got;
	while ((got = __atomic_load_n(&p->reported, __ATOMIC_ACQUIRE)) < n) {
		if (now_ns() > limit) {
			VIOL(s,
			    "gate: %" PRIu64 " of %zu signalled waiters "
			    "returned within %.1f s",
			    got, n, (double)opt.stall_ns / 1e9);
			break;
		}
		sched_yield();
	}
	wait_end(s);
	if (got > n)
		VIOL(s,
		    "gate: %" PRIu64 " waiters returned woken, but "
		    "pl_unpark_all woke %zu",
		    got, n);
	STORE(&p->reported, 0);
	p->rounds++;
	p->woken += n;
	uintptr_t set = w | GATE_SET;
	__atomic_compare_exchange_n(&p->gate, &set, w + GATE_ROUND, false,
	    __ATOMIC_SEQ_CST, __ATOMIC_RELAXED);
}

static void
park_op(struct slot *s)
{
	struct park_obj *p = &s->run->park;
	if (s->index == 0)
		gate_signal(s, p);
	else if (rnd(s) % 2)
		gate_wait(s, p);
	else
		sem_op(s, p);
}

static void
park_close(struct run *r)
{
	struct park_obj *p = &r->park;
	__atomic_fetch_or(&p->gate, GATE_CLOSED, __ATOMIC_SEQ_CST);
	pl_unpark_all(&p->gate, TOKEN_CLOSED);
}

/* ---- workers, churn, monitor -------------------------------------------- */

static void (*const prim_op[NPRIM])(struct slot *) = { mutex_op, rmutex_op,
	cond_op, rwlock_op, once_op, bitlock_op, park_op };

static void *
worker(void *arg)
{
	struct slot *s = arg;
	me = s;
	while (!stopping(s)) {
		prim_op[s->prim](s);
		STORE(&s->ops, LOAD(&s->ops) + 1);
		pause_between(s);
	}
	__atomic_store_n(&s->exited, 1, __ATOMIC_RELEASE);
	return NULL;
}

static bool
slot_start(struct slot *s)
{
	s->incarnation++;
	s->rng = splitmix(opt.seed ^
	    splitmix(((uint64_t)s->prim << 40) ^ ((uint64_t)s->index << 24) ^
	        ((uint64_t)s->incarnation << 1) ^ (uint64_t)s->run->is_child));
	if (s->rng == 0)
		s->rng = 1;
	STORE(&s->stop, 0);
	STORE(&s->exited, 0);
	int e = pthread_create(&s->tid, NULL, worker, s);
	if (e) {
		violation(s->run, P_OTHER, "pthread_create: %s", strerror(e));
		return false;
	}
	s->started = true;
	return true;
}

/* Wait until s's thread has left its loop, for at most limit ns. */
static bool
slot_wait_exit(struct slot *s, uint64_t limit)
{
	uint64_t end = now_ns() + limit;
	while (!__atomic_load_n(&s->exited, __ATOMIC_ACQUIRE)) {
		if (now_ns() > end)
			return false;
		sleep_ns(1000000);
	}
	return true;
}

static void
kick(struct run *r, int prim)
{
	if (prim == P_COND)
		cond_kick(r);
}

static void *
churn(void *arg)
{
	struct run *r = arg;
	uint64_t x = splitmix(opt.seed ^ 0xc4u);
	int enabled[NPRIM], ne = 0;
	for (int p = 0; p < NPRIM; p++)
		if (opt.prims & (1u << p))
			enabled[ne++] = p;
	while (!LOAD(&r->stop)) {
		uint64_t t = 20000000 + rng_next(&x) % 180000000;
		for (uint64_t slept = 0; slept < t && !LOAD(&r->stop);
		     slept += 10000000)
			sleep_ns(10000000);
		if (LOAD(&r->stop))
			break;
		struct slot *s = &r->slots[enabled[rng_next(&x) % ne]]
		                          [rng_next(&x) % r->nthreads];
		if (!s->started || s->abandoned)
			continue;
		STORE(&s->stop, 1);
		kick(r, s->prim);
		if (!slot_wait_exit(s, opt.stall_ns + NS)) {
			violation(r, s->prim,
			    "worker %d did not stop within "
			    "%.1f s of being asked (churn)",
			    s->index, (double)(opt.stall_ns + NS) / 1e9);
			s->abandoned = true;
			continue;
		}
		pthread_join(s->tid, NULL);
		s->started = false;
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
	uint64_t t0 = now_ns();
	for (int p = 0; p < NPRIM; p++)
		last_change[p] = t0;
	while (!LOAD(&r->stop_monitor)) {
		uint64_t t = now_ns();
		for (int p = 0; p < NPRIM; p++) {
			if (!(opt.prims & (1u << p)))
				continue;
			for (int i = 0; i < r->nthreads; i++)
				monitor_slot(r, &r->slots[p][i], t);
			uint64_t ops = prim_ops(r, p);
			if (ops != last_ops[p] || LOAD(&r->stop)) {
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
	if (opt.prims & (1u << P_MUTEX))
		for (int li = 0; li < 2; li++) {
			struct mutex_obj *o = &r->mtx[li];
			uint64_t want = cs_sum(r, P_MUTEX, li);
			if (o->ck.value != want)
				violation(r, P_MUTEX,
				    "mutex %d: counter %" PRIu64
				    ", critical sections %" PRIu64,
				    li, o->ck.value, want);
			unsigned char st =
			    LOAD(opt.busted ? &o->busted : &o->m.state);
			if (st != 0)
				violation(r, P_MUTEX,
				    "mutex %d: state %#x at "
				    "rest, not 0",
				    li, st);
		}
	if (opt.prims & (1u << P_RMUTEX))
		for (int li = 0; li < 2; li++) {
			struct rmutex_obj *o = &r->rmtx[li];
			uint64_t want = cs_sum(r, P_RMUTEX, li);
			if (o->ck.value != want)
				violation(r, P_RMUTEX,
				    "rmutex %d: counter %" PRIu64
				    ", critical sections %" PRIu64,
				    li, o->ck.value, want);
			if (LOAD(&o->m.lock.state) != 0)
				violation(r, P_RMUTEX,
				    "rmutex %d: state %#x "
				    "at rest, not 0",
				    li, LOAD(&o->m.lock.state));
			if (!pl_rmutex_trylock(&o->m))
				violation(r, P_RMUTEX,
				    "rmutex %d: trylock "
				    "fails at rest",
				    li);
			else if (pl_rmutex_unlock(&o->m) != 0)
				violation(r, P_RMUTEX,
				    "rmutex %d: unlock "
				    "fails at rest",
				    li);
		}
	if (opt.prims & (1u << P_COND)) {
		struct cond_obj *c = &r->cond;
		uint64_t left = c->count;
		while (c->count) {
			cond_check_item(r, c, c->q[c->head]);
			c->head = (c->head + 1) % QCAP;
			c->count--;
		}
		if (c->produced != c->consumed + left)
			violation(r, P_COND,
			    "produced %" PRIu64 ", consumed %" PRIu64
			    " and %" PRIu64 " left",
			    c->produced, c->consumed, left);
		for (int p = 0; p < MAXTHREADS; p++)
			if (c->expect[p] != c->next_seq[p])
				violation(r, P_COND,
				    "producer %d made %" PRIu64
				    " items, %" PRIu64 " consumed in order",
				    p, c->next_seq[p], c->expect[p]);
		if (LOAD(&c->m.state) != 0)
			violation(r, P_COND,
			    "the mutex's state is %#x at "
			    "rest, not 0",
			    LOAD(&c->m.state));
	}
	if (opt.prims & (1u << P_RWLOCK))
		for (int li = 0; li < 2; li++) {
			struct rw_obj *o = &r->rw[li];
			uint64_t want = cs_sum(r, P_RWLOCK, li);
			for (int i = 0; i < 4; i++)
				if (o->data[i] != want) {
					violation(r, P_RWLOCK,
					    "rwlock %d: "
					    "word %d is %" PRIu64
					    ", writes %" PRIu64,
					    li, i, o->data[i], want);
					break;
				}
			uintptr_t st = LOAD(&o->l.state);
			if (st != 0)
				violation(r, P_RWLOCK,
				    "rwlock %d: state %#" PRIxPTR
				    " at rest, not 0",
				    li, st);
		}
	if (opt.prims & (1u << P_ONCE)) {
		struct once_obj *ob = &r->once;
		for (int i = 0; i < ONCE_RING; i++) {
			struct once_ent *e = &ob->ring[i];
			if (LOAD(&e->calls) && LOAD(&e->runs) != 1)
				violation(r, P_ONCE,
				    "a pl_once_t called %u "
				    "times ran fn %u times",
				    LOAD(&e->calls), LOAD(&e->runs));
		}
	}
	if (opt.prims & (1u << P_BITLOCK)) {
		struct bit_obj *b = &r->bit;
		uintptr_t xw = 0;
		unsigned char xb = 0;
		for (int i = 0; i < MAXTHREADS; i++) {
			xw ^= r->slots[P_BITLOCK][i].xorw;
			xb ^= r->slots[P_BITLOCK][i].xorb;
		}
		uintptr_t w = LOAD(&b->word), ww = b->init_word ^ xw;
		unsigned char y = LOAD(&b->byte), yy = b->init_byte ^ xb;
		if (w != ww)
			violation(r, P_BITLOCK,
			    "the word is %#" PRIxPTR ", expected %#" PRIxPTR, w,
			    ww);
		if (y != yy)
			violation(r, P_BITLOCK,
			    "the byte is %#x, expected "
			    "%#x",
			    y, yy);
		for (int li = 0; li < NLOCKS; li++) {
			uint64_t want = cs_sum(r, P_BITLOCK, li);
			if (b->ck[li].value != want)
				violation(r, P_BITLOCK,
				    "lock %d: counter %" PRIu64
				    ", critical sections %" PRIu64,
				    li, b->ck[li].value, want);
		}
	}
	if (opt.prims & (1u << P_PARK)) {
		struct park_obj *p = &r->park;
		if (LOAD(&p->sem) != SEM_K * SEM_UNIT)
			violation(r, P_PARK,
			    "the semaphore is %#" PRIxPTR
			    " at rest, not %#" PRIxPTR,
			    LOAD(&p->sem), (uintptr_t)(SEM_K * SEM_UNIT));
		uint64_t want = cs_sum(r, P_PARK, 0);
		if (LOAD(&p->sem_value) != want)
			violation(r, P_PARK,
			    "semaphore: counter %" PRIu64 ", holds %" PRIu64,
			    LOAD(&p->sem_value), want);
	}
	/* Nothing may be left in a queue.  (Not in the fork child, whose
	 * counters began as a copy of the parent's.) */
	if (!r->is_child && !opt.busted) {
		struct pl_stats st;
		pl_stats_get(&st);
		if (st.threads_parked_now != 0)
			violation(r, P_OTHER,
			    "%zu threads still parked at the "
			    "end",
			    st.threads_parked_now);
	}
}

/* ---- a run -------------------------------------------------------------- */

static void
run_init(struct run *r, bool is_child)
{
	r->is_child = is_child;
	r->nthreads = opt.threads;
	r->once_k = opt.threads < 2 ? 2 : opt.threads;
	for (int p = 0; p < NPRIM; p++)
		for (int i = 0; i < MAXTHREADS; i++) {
			r->slots[p][i].run = r;
			r->slots[p][i].prim = p;
			r->slots[p][i].index = i;
		}
	for (int i = 0; i < ONCE_RING; i++)
		r->once.ring[i].run = r;
	uint64_t x = splitmix(opt.seed ^ 0xb17u ^ (uint64_t)is_child);
	r->bit.init_word = r->bit.word = (uintptr_t)x & W_FLIP;
	r->bit.init_byte = r->bit.byte = (unsigned char)((x >> 56) & B_FLIP);
	r->park.sem = SEM_K * SEM_UNIT;
}

static void
print_status(struct run *r, uint64_t t, const char *tag)
{
	char buf[512];
	int n = snprintf(buf, sizeof buf, "torture: %s%6.1f s:", tag,
	    (double)(t - r->start_ns) / 1e9);
	for (int p = 0; p < NPRIM; p++)
		if (opt.prims & (1u << p))
			n += snprintf(buf + n, sizeof buf - (size_t)n,
			    " %s %" PRIu64, prim_name[p], prim_ops(r, p));
	snprintf(buf + n, sizeof buf - (size_t)n,
	    "; churns %" PRIu64 "; violations %" PRIu64, LOAD(&r->churns),
	    total_violations(r));
	puts(buf);
}

/* The longest bounded wait of each primitive, against the stall bound. */
static void
print_waits(struct run *r)
{
	char buf[512];
	int n = snprintf(buf, sizeof buf,
	    "torture: longest waits (stall "
	    "bound %.1f s):",
	    (double)opt.stall_ns / 1e9);
	for (int p = 0; p < NPRIM; p++) {
		if (!(opt.prims & (1u << p)))
			continue;
		uint64_t m = 0;
		for (int i = 0; i < MAXTHREADS; i++)
			if (LOAD(&r->slots[p][i].max_over) > m)
				m = LOAD(&r->slots[p][i].max_over);
		n += snprintf(buf + n, sizeof buf - (size_t)n, " %s %.1f ms",
		    prim_name[p], (double)m / 1e6);
	}
	puts(buf);
}

static void
finish(struct run *r)
{
	uint64_t v = total_violations(r), ops = total_ops(r);
	fflush(stderr);
	if (v == 0)
		printf("torture: SUCCESS ops=%" PRIu64 " violations=0\n", ops);
	else
		printf("torture: FAILURE ops=%" PRIu64 " violations=%" PRIu64
		       "\n",
		    ops, v);
	fflush(stdout);
}

/* Stop every worker; a worker that does not stop within the grace ends
 * the process (a hang is a failure, never a hang of the tester). */
static void
stop_all(struct run *r)
{
	STORE(&r->stop, 1);
	if (opt.prims & (1u << P_COND))
		cond_kick(r);
	if (opt.prims & (1u << P_PARK))
		park_close(r);
	uint64_t end = now_ns() + grace_ns();
	for (int p = 0; p < NPRIM; p++)
		for (int i = 0; i < r->nthreads; i++) {
			struct slot *s = &r->slots[p][i];
			if (!s->started || s->abandoned)
				continue;
			uint64_t t = now_ns();
			if (slot_wait_exit(s, t < end ? end - t : 0))
				continue;
			s->abandoned = true;
			uint64_t q = LOAD(&s->wseq);
			violation(r, p,
			    "worker %d did not stop within the "
			    "grace of %.1f s%s%s",
			    i, (double)grace_ns() / 1e9,
			    (q & 1) ? "; it waits in " : "",
			    (q & 1) ? LOAD(&s->what) : "");
		}
	bool stuck = false;
	for (int p = 0; p < NPRIM; p++)
		for (int i = 0; i < r->nthreads; i++) {
			struct slot *s = &r->slots[p][i];
			if (s->abandoned)
				stuck = true;
			else if (s->started) {
				pthread_join(s->tid, NULL);
				s->started = false;
			}
		}
	if (stuck) {
		if (r->is_child)
			_exit(2);
		finish(r);
		_exit(1);
	}
}

struct child {
	pid_t pid;
	int fd;
	uint64_t started, limit;
	bool done;
};

static void run_child(void);

static void
fork_child(struct run *r, struct child *ch)
{
	int fds[2];
	if (pipe(fds) != 0) {
		violation(r, P_OTHER, "pipe: %s", strerror(errno));
		ch->done = true;
		return;
	}
	fflush(stdout);
	fflush(stderr);
	pid_t pid = fork();
	if (pid < 0) {
		violation(r, P_OTHER, "fork: %s", strerror(errno));
		close(fds[0]);
		close(fds[1]);
		ch->done = true;
		return;
	}
	if (pid == 0) {
		in_child = 1;
		close(fds[0]);
		run_child_fd = fds[1];
		run_child();
	}
	close(fds[1]);
	ch->pid = pid;
	ch->fd = fds[0];
	ch->started = now_ns();
	ch->limit = ch->started + 1 * NS + 2 * grace_ns() + 5 * NS;
	printf("torture: forked child %ld: it runs every primitive for 1 s "
	       "on objects of its own\n",
	    (long)pid);
}

/* Reap the child if it is done (or, with wait, until it is or its time is
 * up). */
static void
reap_child(struct run *r, struct child *ch, bool wait)
{
	while (!ch->done) {
		int st;
		pid_t w = waitpid(ch->pid, &st, WNOHANG);
		if (w == ch->pid) {
			uint64_t ops = 0;
			if (read(ch->fd, &ops, sizeof ops) != sizeof ops)
				ops = 0;
			close(ch->fd);
			ch->done = true;
			STORE(&r->child_ops, ops);
			if (WIFEXITED(st) && WEXITSTATUS(st) == 0)
				printf("torture: fork child exited 0 after "
				       "%" PRIu64 " ops\n",
				    ops);
			else if (WIFEXITED(st))
				violation(r, P_OTHER,
				    "the fork child exited "
				    "with status %d (%" PRIu64 " ops)",
				    WEXITSTATUS(st), ops);
			else
				violation(r, P_OTHER,
				    "the fork child died of "
				    "signal %d",
				    WTERMSIG(st));
			return;
		}
		if (w < 0 && errno != EINTR) {
			violation(r, P_OTHER, "waitpid: %s", strerror(errno));
			ch->done = true;
			return;
		}
		if (now_ns() > ch->limit) {
			violation(r, P_OTHER,
			    "the fork child did not finish "
			    "in %.1f s: killed",
			    (double)(ch->limit - ch->started) / 1e9);
			kill(ch->pid, SIGKILL);
			waitpid(ch->pid, &st, 0);
			close(ch->fd);
			ch->done = true;
			return;
		}
		if (!wait)
			return;
		sleep_ns(10000000);
	}
}

/* Run the enabled primitives for the given time on r's objects. */
static void
run_torture(struct run *r, double seconds, bool with_churn, bool with_fork)
{
	pthread_t mon, ch_tid;
	struct child child = { .done = true };
	bool forked = false;
	int e;

	r->start_ns = now_ns();
	for (int p = 0; p < NPRIM; p++)
		if (opt.prims & (1u << p))
			for (int i = 0; i < r->nthreads; i++)
				if (!slot_start(&r->slots[p][i]))
					break;
	if ((e = pthread_create(&mon, NULL, monitor, r)) != 0) {
		fprintf(stderr, "torture: pthread_create: %s\n", strerror(e));
		exit(1);
	}
	if (with_churn && (e = pthread_create(&ch_tid, NULL, churn, r)) != 0) {
		fprintf(stderr, "torture: pthread_create: %s\n", strerror(e));
		exit(1);
	}
	uint64_t end = r->start_ns + (uint64_t)(seconds * 1e9);
	uint64_t next_status = r->start_ns + (uint64_t)(opt.interval * 1e9);
	uint64_t fork_at = r->start_ns + (uint64_t)(seconds * 1e9 / 2);
	for (;;) {
		uint64_t t = now_ns();
		if (t >= end)
			break;
		if (!r->is_child && opt.interval > 0 && t >= next_status) {
			print_status(r, t, "");
			next_status += (uint64_t)(opt.interval * 1e9);
		}
		if (with_fork && !forked && t >= fork_at) {
			forked = true;
			child.done = false;
			fork_child(r, &child);
		}
		if (!child.done)
			reap_child(r, &child, false);
		uint64_t nap = end - t < 20000000 ? end - t : 20000000;
		sleep_ns(nap);
	}
	STORE(&r->stop, 1);
	if (with_churn)
		pthread_join(ch_tid, NULL);
	stop_all(r);
	STORE(&r->stop_monitor, 1);
	pthread_join(mon, NULL);
	if (!child.done)
		reap_child(r, &child, true);
	final_checks(r);
}

/* The fork child: only the forking thread exists here.  It runs a short
 * torture of its own on objects the parent never touched (locks held or
 * waited on by the parent's other threads are unusable here), and reports
 * its operations through the pipe and its verdict through its status. */
static void
run_child(void)
{
	alarm((unsigned)(1 + 2 * grace_ns() / NS + 5));
	run_init(&child_run, true);
	run_torture(&child_run, 1.0, false, false);
	uint64_t ops = total_ops(&child_run);
	if (write(run_child_fd, &ops, sizeof ops) != sizeof ops)
		_exit(3);
	_exit(total_violations(&child_run) ? 1 : 0);
}

/* ---- the watchdog and main ---------------------------------------------- */

static void
put_u64(char **p, uint64_t v)
{
	char tmp[24];
	int n = 0;
	do
		tmp[n++] = (char)('0' + v % 10);
	while ((v /= 10) != 0);
	while (n)
		*(*p)++ = tmp[--n];
}

static void
on_alarm(int sig)
{
	(void)sig;
	if (in_child)
		_exit(4);
	char buf[160], *p = buf;
	static const char a[] = "torture: watchdog: the run did not end in "
	                        "time\ntorture: FAILURE ops=";
	static const char b[] = " violations=";
	memcpy(p, a, sizeof a - 1);
	p += sizeof a - 1;
	put_u64(&p, total_ops(&parent_run));
	memcpy(p, b, sizeof b - 1);
	p += sizeof b - 1;
	uint64_t v = total_violations(&parent_run);
	put_u64(&p, v ? v : 1);
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
	char *copy = strdup(arg), *save = NULL;
	for (char *t = strtok_r(copy, ",", &save); t;
	     t = strtok_r(NULL, ",", &save)) {
		int p;
		for (p = 0; p < NPRIM; p++)
			if (strcmp(t, prim_name[p]) == 0)
				break;
		if (p == NPRIM) {
			fprintf(stderr, "torture: unknown primitive '%s'\n", t);
			free(copy);
			return false;
		}
		opt.prims |= 1u << p;
	}
	free(copy);
	return opt.prims != 0;
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
	bool seeded = false;
	long stall_ms = UNDER_TSAN ? 10000 : 2000;
	int c;
	char *endp;

	setvbuf(stdout, NULL, _IOLBF, 0);
	while ((c = getopt_long(
	            argc, argv, "s:t:p:i:bS:Fm:h", longopts, NULL)) != -1) {
		switch (c) {
		case 's':
			opt.seconds = strtod(optarg, &endp);
			if (*endp || !(opt.seconds > 0) || opt.seconds > 1e6)
				goto bad;
			break;
		case 't':
			opt.threads = (int)strtol(optarg, &endp, 10);
			if (*endp || opt.threads < 2 ||
			    opt.threads > MAXTHREADS)
				goto bad;
			break;
		case 'p':
			if (!parse_prims(optarg))
				goto bad;
			break;
		case 'i':
			opt.interval = strtod(optarg, &endp);
			if (*endp || opt.interval < 0)
				goto bad;
			break;
		case 'b':
			opt.busted = true;
			break;
		case 'S':
			opt.seed = strtoull(optarg, &endp, 0);
			if (*endp)
				goto bad;
			seeded = true;
			break;
		case 'F':
			opt.fork = false;
			break;
		case 'm':
			stall_ms = strtol(optarg, &endp, 10);
			if (*endp || stall_ms < 10)
				goto bad;
			break;
		case 'h':
			usage(stdout);
			return 0;
		default:
			goto bad;
		}
	}
	if (optind != argc) {
	bad:
		usage(stderr);
		return 2;
	}
	opt.stall_ns = (uint64_t)stall_ms * 1000000;
	if (!seeded)
		opt.seed = splitmix(now_ns() ^ (uint64_t)getpid());

	const char *fork_note;
	if (UNDER_TSAN) {
		opt.fork = false;
		fork_note = "fork phase skipped (ThreadSanitizer does not "
		            "support threads in a forked child)";
	} else if (!opt.fork) {
		fork_note = "fork phase skipped (--no-fork)";
	} else if (opt.seconds < 4) {
		opt.fork = false;
		fork_note = "fork phase skipped (--seconds < 4)";
	} else {
		fork_note = "a fork in the middle";
	}
	char prims[128] = "";
	for (int p = 0; p < NPRIM; p++)
		if (opt.prims & (1u << p)) {
			if (prims[0])
				strcat(prims, ",");
			strcat(prims, prim_name[p]);
		}
	printf("torture: %s for %g s, %d threads each, seed %" PRIu64
	       ", stall bound %.1f s%s\n",
	    prims, opt.seconds, opt.threads, opt.seed,
	    (double)opt.stall_ns / 1e9, opt.busted ? ", BUSTED mutex" : "");
	printf("torture: %s\n", fork_note);

	struct sigaction sa;
	memset(&sa, 0, sizeof sa);
	sa.sa_handler = on_alarm;
	sigemptyset(&sa.sa_mask);
	sigaction(SIGALRM, &sa, NULL);
	alarm((unsigned)(opt.seconds + 4 * grace_ns() / NS + 60));

	run_init(&parent_run, false);
	run_torture(&parent_run, opt.seconds, true, opt.fork);
	alarm(0);
	print_status(&parent_run, now_ns(), "end ");
	print_waits(&parent_run);
	finish(&parent_run);
	return total_violations(&parent_run) ? 1 : 0;
}
