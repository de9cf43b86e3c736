/* SPDX-License-Identifier: MIT */
/*
 * The lock-conformance template, in the manner of Concurrency Kit's
 * regression templates: the bodies that every lock of libparkinglot must
 * pass, written once over a small table of operations (struct
 * conform_lock), with a table for each of pl_mutex_t, pl_rmutex_t, the
 * bit locks of both widths and pl_rwlock_t's writer side.
 *
 *   exclusion        threads incrementing a plain counter under the lock:
 *                    the exact total, and the lock at rest afterwards;
 *   mixed            the same with random operations (lock, trylock,
 *                    timed lock with random, past and malformed deadlines,
 *                    fair and plain unlocks; conform_op, also torture's
 *                    hammer) and a check of who is inside;
 *   trylock          fails while another thread holds the lock, succeeds
 *                    when it is free;
 *   timedlock        0 on a free lock whatever the deadline, EINVAL for a
 *                    malformed one, ETIMEDOUT while another thread holds
 *                    it (never early, not grossly late, no trace left, and
 *                    at once for a past deadline), 0 for a parked timed
 *                    waiter when the lock is released;
 *   timed_contended  timed waiters that mostly time out against a holder;
 *   handoff          unlock_fair hands the lock to the parked waiter;
 *   no_lost_wakeup   waiters parked on a held lock all get it after the
 *                    unlock, round after round, and a yield-inside stress;
 *   fairness         a waiter gets the lock that two hogs barge for
 *                    within 100 ms, 20 times.
 *
 * It needs neither Criterion nor the library's internals.  The includer
 * defines CONFORM_FAIL(fmt, ...) before including it: the bodies call it
 * on the thread that called them, for each failed check (cr_assert_fail
 * in tests/test_conform.c, which ends the test; tools/torture counts a
 * violation and goes on).  Their own threads never call it: they count
 * what they saw, and the calling thread checks.  No wait is unbounded: a
 * wait that should have ended within conform_wait_ns (or, for whole
 * bodies, conform_finish_ns) fails, and the body returns at once, leaving
 * its threads and their memory behind rather than joining a thread that
 * may never return.  CONFORM_WAIT_UNTIMED(what), CONFORM_WAIT_TIMED(what,
 * deadline_ns) and CONFORM_WAIT_END(), empty unless defined, tell a stall
 * detector about the waits of conform_op, and CONFORM_NOTED(what), if
 * defined, hears at once of every error conform_note counts.
 *
 * It compiles as C11 and as C++11 and later (g++, -Wall -Wextra): the
 * C++ suite tests/test_cxx.cc runs the same bodies over the types of
 * <parkinglot.hpp>.  Hence the casts from void *, every member named in
 * the tables, and no ++ or -- on a volatile (deprecated in C++20).
 */
#ifndef PL_CONFORM_H
#define PL_CONFORM_H

#include <errno.h>
#include <pthread.h>
#include <sched.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <parkinglot.h>

#ifndef CONFORM_FAIL
#error "define CONFORM_FAIL(fmt, ...) before including conform.h"
#endif
#ifndef CONFORM_WAIT_UNTIMED
#define CONFORM_WAIT_UNTIMED(what) ((void)0)
#define CONFORM_WAIT_TIMED(what, deadline_ns) ((void)0)
#define CONFORM_WAIT_END() ((void)0)
#endif

/* Every failure goes through CF_FAIL, which counts it: an includer whose
 * CONFORM_FAIL returns sees whether a body failed. */
static unsigned long conform_failures;
#define CF_FAIL(...)                                                           \
	do {                                                                   \
		conform_failures++;                                            \
		CONFORM_FAIL(__VA_ARGS__);                                     \
	} while (0)
#define CONFORM_CHECK(cond, ...)                                               \
	do {                                                                   \
		if (!(cond))                                                   \
			CF_FAIL(__VA_ARGS__);                                  \
	} while (0)

/* Also compiled as C++ (tests/test_cxx.cc), which spells it otherwise. */
#ifdef __cplusplus
#define CF_STATIC_ASSERT(cond, msg) static_assert(cond, msg)
#else
#define CF_STATIC_ASSERT(cond, msg) _Static_assert(cond, msg)
#endif

#define CF_US ((uint64_t)1000)
#define CF_MS ((uint64_t)1000000)
#define CF_SEC ((uint64_t)1000000000)
#define CF_LOAD(p) __atomic_load_n((p), __ATOMIC_ACQUIRE)
#define CF_STORE(p, v) __atomic_store_n((p), (v), __ATOMIC_RELEASE)
#define CF_ADD(p, v) __atomic_fetch_add((p), (v), __ATOMIC_ACQ_REL)

/* The bound of every "wait until X" that only a bug makes long, and of a
 * body's threads finishing their work; the includer may change them. */
static uint64_t conform_wait_ns = 10 * CF_SEC;
static uint64_t conform_finish_ns = 40 * CF_SEC;
/* Iteration counts are divided by this (torture runs lighter bodies). */
static unsigned conform_scale = 1;

/* ------------------------------------------------------------------ */
/* Clock, sleeps and randomness.                                       */

static inline uint64_t
conform_now_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * CF_SEC + (uint64_t)ts.tv_nsec;
}

static inline struct timespec
conform_ts(uint64_t ns)
{
	struct timespec ts = { (time_t)(ns / CF_SEC), (long)(ns % CF_SEC) };
	return ts;
}

static inline uint64_t
conform_ts_ns(const struct timespec *ts)
{
	return (uint64_t)ts->tv_sec * CF_SEC + (uint64_t)ts->tv_nsec;
}

static inline void
conform_sleep_ns(uint64_t ns)
{
	struct timespec ts = conform_ts(ns);
	while (nanosleep(&ts, &ts) != 0 && errno == EINTR)
		;
}

/* Busy for ns, without a system call (work while holding a lock). */
static inline void
conform_busy_ns(uint64_t ns)
{
	uint64_t end = conform_now_ns() + ns;
	while (conform_now_ns() < end)
		__asm__ __volatile__("" ::: "memory");
}

static inline uint64_t
conform_splitmix(uint64_t x)
{
	x += 0x9e3779b97f4a7c15ull;
	x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ull;
	x = (x ^ (x >> 27)) * 0x94d049bb133111ebull;
	return x ^ (x >> 31);
}

/* xorshift64*: *s must not be 0. */
static inline uint64_t
conform_rng(uint64_t *s)
{
	uint64_t x = *s;
	x ^= x >> 12;
	x ^= x << 25;
	x ^= x >> 27;
	*s = x;
	return x * 0x2545f4914f6cdd1dull;
}

static inline uint32_t
conform_rnd(uint64_t *s)
{
	return (uint32_t)(conform_rng(s) >> 32);
}

/* A random hold: mostly short, 1 in 1000 about 1 ms asleep. */
static inline void
conform_hold(uint64_t *rng)
{
	uint32_t x = conform_rnd(rng) % 1000;
	if (x == 0)
		conform_sleep_ns(CF_MS);
	else if (x < 15)
		sched_yield();
	else if (x < 400) {
		/* Plain assignments: C++20 deprecates -- on a volatile. */
		volatile uint32_t i = conform_rnd(rng) % 256;
		while (i > 0)
			i = i - 1;
	}
}

/* A random absolute deadline, returned in ns: the epoch (long past and
 * valid), just past, or microseconds to 100 ms away. */
static inline uint64_t
conform_rand_deadline(uint64_t *rng, struct timespec *ts)
{
	uint32_t x = conform_rnd(rng) % 32;
	uint64_t t = conform_now_ns(), dl;
	if (x == 0)
		dl = 0;
	else if (x < 3)
		dl = t - 1000;
	else if (x < 22)
		dl = t + conform_rnd(rng) % 2000000;
	else if (x < 30)
		dl = t + 2000000 + conform_rnd(rng) % 18000000;
	else
		dl = t + 50000000 + conform_rnd(rng) % 50000000;
	*ts = conform_ts(dl);
	return dl;
}

/* The malformed deadlines: a negative or too large tv_nsec, a negative
 * tv_sec. */
static const struct timespec conform_bad[] = {
	{ 0, 1000000000L },
	{ 0, -1 },
	{ -1, 0 },
	{ -1, 999999999L },
};
#define CONFORM_NBAD (sizeof conform_bad / sizeof conform_bad[0])

/* ------------------------------------------------------------------ */
/* Threads and bounded waits.                                          */

static inline pthread_t
conform_spawn(void *(*fn)(void *), void *arg)
{
	pthread_t t;
	int rc = pthread_create(&t, NULL, fn, arg);
	if (rc != 0) {
		CF_FAIL("pthread_create: %s", strerror(rc));
		abort();
	}
	return t;
}

/* Wait until *p >= v, at most timeout_ns; whether it got there. */
static inline bool
conform_wait_ge(const unsigned long *p, unsigned long v, uint64_t timeout_ns)
{
	uint64_t end = conform_now_ns() + timeout_ns;
	while (CF_LOAD(p) < v) {
		if (conform_now_ns() >= end)
			return CF_LOAD(p) >= v;
		conform_sleep_ns(50 * CF_US);
	}
	return true;
}

/* Wait until n threads have counted themselves in *done, at most
 * conform_finish_ns, then join them; false (after a failure) if they did
 * not, and then they are left running. */
static inline bool
conform_join(const char *name, const char *what, pthread_t *t, unsigned n,
    const unsigned long *done)
{
	if (!conform_wait_ge(done, n, conform_finish_ns)) {
		CF_FAIL("%s: %lu of %u threads finished %s in %.0f s: a "
		        "lost wakeup?",
		    name, CF_LOAD(done), n, what,
		    (double)conform_finish_ns / 1e9);
		return false;
	}
	for (unsigned i = 0; i < n; i++)
		pthread_join(t[i], NULL);
	return true;
}

static inline pl_filter_op_t
conform_count_filter(uintptr_t token, void *ctx)
{
	(void)token;
	++*(size_t *)ctx;
	return PL_FILTER_SKIP;
}

/* How many threads are parked on addr (nobody is woken); SIZE_MAX if the
 * library woke anybody or reported an inconsistent result. */
static inline size_t
conform_parked(const void *addr)
{
	size_t n = 0;
	pl_unpark_result_t r =
	    pl_unpark_filter(addr, conform_count_filter, NULL, &n);
	if (r.unparked != 0 || r.requeued != 0 || r.have_more != (n != 0))
		return SIZE_MAX;
	return n;
}

static inline bool
conform_wait_parked(const void *addr, size_t n)
{
	uint64_t end = conform_now_ns() + conform_wait_ns;
	while (conform_parked(addr) != n) {
		if (conform_now_ns() >= end)
			return conform_parked(addr) == n;
		conform_sleep_ns(50 * CF_US);
	}
	return true;
}

/* What a slow path leaves in the statistics when it spins or parks. */
static inline uint64_t
conform_slow_events(void)
{
	struct pl_stats s;
	pl_stats_get(&s);
	return s.parks + s.timeouts + s.invalid_parks + s.spin_acquires +
	    s.spin_failures;
}

/* ------------------------------------------------------------------ */
/* The operations of a lock.                                           */

struct conform_check;

struct conform_lock {
	const char *name;
	void *obj; /* the lock, or the word or byte of a bit lock */
	uintptr_t locked_bit, parked_bit; /* of a bit lock */
	const void *park_addr;            /* where its waiters park */
	/* What state() reads while one thread holds it, without and with
	 * waiters parked; at rest it reads 0. */
	uintptr_t held_state, parked_state;
	void (*lock)(const struct conform_lock *l);
	bool (*trylock)(const struct conform_lock *l);
	int (*timedlock)(
	    const struct conform_lock *l, const struct timespec *dl);
	void (*unlock)(const struct conform_lock *l);
	void (*unlock_fair)(const struct conform_lock *l); /* NULL: none */
	uintptr_t (*state)(const struct conform_lock *l);  /* its own bits */
	/* Optional, in conform_op's critical section (torture's checks). */
	void (*inside)(const struct conform_lock *l, uint64_t *rng);
};

static inline bool
conform_is_locked(const struct conform_lock *l)
{
	return (l->state(l) & l->held_state) != 0;
}

static inline void
conform_release(const struct conform_lock *l, bool fair)
{
	if (fair && l->unlock_fair != NULL)
		l->unlock_fair(l);
	else
		l->unlock(l);
}

/* The functions of the tables: lock, trylock, timedlock and unlock of a
 * lock whose calls take the object alone, ... */
#define CF_OPS(kind, type, lock_fn, trylock_fn, timedlock_fn, unlock_fn)       \
	static inline void cf_##kind##_lock(const struct conform_lock *l)      \
	{                                                                      \
		lock_fn((type *)l->obj);                                       \
	}                                                                      \
	static inline bool cf_##kind##_trylock(const struct conform_lock *l)   \
	{                                                                      \
		return trylock_fn((type *)l->obj);                             \
	}                                                                      \
	static inline int cf_##kind##_timedlock(                               \
	    const struct conform_lock *l, const struct timespec *dl)           \
	{                                                                      \
		return timedlock_fn((type *)l->obj, dl);                       \
	}                                                                      \
	static inline void cf_##kind##_unlock(const struct conform_lock *l)    \
	{                                                                      \
		(void)unlock_fn((type *)l->obj);                               \
	}

/* ... and every function of a bit lock of that word type, whose calls
 * (prefix_lock and so on) take the word and the two bits. */
#define CF_BITS(type) (type *)l->obj, (type)l->locked_bit, (type)l->parked_bit
#define CF_BIT_OPS(kind, type, prefix)                                         \
	static inline void cf_##kind##_lock(const struct conform_lock *l)      \
	{                                                                      \
		prefix##_lock(CF_BITS(type));                                  \
	}                                                                      \
	static inline bool cf_##kind##_trylock(const struct conform_lock *l)   \
	{                                                                      \
		return prefix##_trylock(CF_BITS(type));                        \
	}                                                                      \
	static inline int cf_##kind##_timedlock(                               \
	    const struct conform_lock *l, const struct timespec *dl)           \
	{                                                                      \
		return prefix##_timedlock(CF_BITS(type), dl);                  \
	}                                                                      \
	static inline void cf_##kind##_unlock(const struct conform_lock *l)    \
	{                                                                      \
		prefix##_unlock(CF_BITS(type));                                \
	}                                                                      \
	static inline void cf_##kind##_unlock_fair(                            \
	    const struct conform_lock *l)                                      \
	{                                                                      \
		prefix##_unlock_fair(CF_BITS(type));                           \
	}                                                                      \
	static inline uintptr_t cf_##kind##_state(                             \
	    const struct conform_lock *l)                                      \
	{                                                                      \
		return __atomic_load_n((type *)l->obj, __ATOMIC_RELAXED) &     \
		    (l->locked_bit | l->parked_bit);                           \
	}

CF_OPS(mutex, pl_mutex_t, pl_mutex_lock, pl_mutex_trylock, pl_mutex_timedlock,
    pl_mutex_unlock)
CF_OPS(rmutex, pl_rmutex_t, pl_rmutex_lock, pl_rmutex_trylock,
    pl_rmutex_timedlock, pl_rmutex_unlock)
CF_OPS(wr, pl_rwlock_t, pl_rwlock_wrlock, pl_rwlock_trywrlock,
    pl_rwlock_timedwrlock, pl_rwlock_wrunlock)
CF_BIT_OPS(bit, uintptr_t, pl_bitlock)
CF_BIT_OPS(bit8, unsigned char, pl_bitlock8)

static inline void
cf_mutex_unlock_fair(const struct conform_lock *l)
{
	pl_mutex_unlock_fair((pl_mutex_t *)l->obj);
}

/* The word of a mutex, of an rmutex's mutex, or of a reader-writer lock. */
static inline uintptr_t
cf_word_state(const struct conform_lock *l)
{
	if (l->park_addr != l->obj) /* a reader-writer lock */
		return __atomic_load_n(
		    &((pl_rwlock_t *)l->obj)->state, __ATOMIC_RELAXED);
	return __atomic_load_n((unsigned char *)l->park_addr, __ATOMIC_RELAXED);
}

/* A table: its name, object, where it parks, its states held without
 * and with waiters, the functions cf_KIND_*, its fair unlock and state. */
#define CF_TABLE(nm, o, addr, held, parked, kind, fair, st)                    \
	((struct conform_lock){ .name = (nm),                                  \
	    .obj = (o),                                                        \
	    .locked_bit = 0,                                                   \
	    .parked_bit = 0,                                                   \
	    .park_addr = (addr),                                               \
	    .held_state = (uintptr_t)(held),                                   \
	    .parked_state = (uintptr_t)(parked),                               \
	    .lock = cf_##kind##_lock,                                          \
	    .trylock = cf_##kind##_trylock,                                    \
	    .timedlock = cf_##kind##_timedlock,                                \
	    .unlock = cf_##kind##_unlock,                                      \
	    .unlock_fair = (fair),                                             \
	    .state = (st),                                                     \
	    .inside = NULL })

static inline struct conform_lock
conform_mutex(pl_mutex_t *m)
{
	return CF_TABLE("pl_mutex", m, m, PL_MUTEX_LOCKED,
	    PL_MUTEX_LOCKED | PL_MUTEX_PARKED, mutex, cf_mutex_unlock_fair,
	    cf_word_state);
}

/* Its mutex comes first, so that it parks on its own address.  The
 * owner's own recursion is not generic: tests/test_rmutex.c. */
static inline struct conform_lock
conform_rmutex(pl_rmutex_t *m)
{
	CF_STATIC_ASSERT(
	    offsetof(pl_rmutex_t, lock) == 0, "the rmutex's mutex");
	return CF_TABLE("pl_rmutex", m, &m->lock, PL_MUTEX_LOCKED,
	    PL_MUTEX_LOCKED | PL_MUTEX_PARKED, rmutex, NULL, cf_word_state);
}

static inline struct conform_lock
cf_with_bits(struct conform_lock l, uintptr_t locked_bit, uintptr_t parked_bit)
{
	l.locked_bit = locked_bit;
	l.parked_bit = parked_bit;
	return l;
}

/* The other bits of the word are the caller's: the bodies leave them
 * alone, and the lock must too. */
static inline struct conform_lock
conform_bitlock(uintptr_t *word, uintptr_t locked_bit, uintptr_t parked_bit)
{
	return cf_with_bits(
	    CF_TABLE("pl_bitlock", word, word, locked_bit,
	        locked_bit | parked_bit, bit, cf_bit_unlock_fair, cf_bit_state),
	    locked_bit, parked_bit);
}

static inline struct conform_lock
conform_bitlock8(
    unsigned char *byte, unsigned char locked_bit, unsigned char parked_bit)
{
	return cf_with_bits(CF_TABLE("pl_bitlock8", byte, byte, locked_bit,
	                        locked_bit | parked_bit, bit8,
	                        cf_bit8_unlock_fair, cf_bit8_state),
	    locked_bit, parked_bit);
}

/* The writer side of a reader-writer lock; writers park one byte into
 * the word.  The readers are not generic: tests/test_rwlock.c. */
static inline struct conform_lock
conform_rwlock_writer(pl_rwlock_t *rw)
{
	return CF_TABLE("pl_rwlock (writers)", rw, (const char *)rw + 1,
	    PL_RWLOCK_WRITER, PL_RWLOCK_WRITER | PL_RWLOCK_WRITER_PARKED, wr,
	    NULL, cf_word_state);
}

/* ------------------------------------------------------------------ */
/* Checks around a critical section (conform_op, and torture's own):   */
/* an atomic count of the threads inside and the owner's id, and a     */
/* plain counter incremented with a hold between its load and its      */
/* store, so that two threads inside lose an update.  Threads only     */
/* count what goes wrong, in bad (and the first message in first).     */

struct conform_check {
	int inside;
	uintptr_t owner;
	uint64_t value;
	unsigned long bad;
	const char *first;
};

static inline void
conform_note(struct conform_check *ck, const char *what)
{
	const char *none = NULL;
#ifdef CONFORM_NOTED
	CONFORM_NOTED(what);
#endif
	CF_ADD(&ck->bad, 1);
	__atomic_compare_exchange_n(
	    &ck->first, &none, what, false, __ATOMIC_ACQ_REL, __ATOMIC_RELAXED);
}

static inline void
conform_enter(struct conform_check *ck, uintptr_t id)
{
	if (CF_ADD(&ck->inside, 1) != 0)
		conform_note(ck, "another thread inside the critical section");
	__atomic_store_n(&ck->owner, id, __ATOMIC_RELAXED);
}

static inline void
conform_body(struct conform_check *ck, uint64_t *rng)
{
	uint64_t v = ck->value;
	conform_hold(rng);
	ck->value = v + 1;
}

static inline void
conform_exit(struct conform_check *ck, uintptr_t id)
{
	if (__atomic_load_n(&ck->owner, __ATOMIC_RELAXED) != id)
		conform_note(
		    ck, "the owner changed during the critical section");
	if (CF_ADD(&ck->inside, -1) != 1)
		conform_note(ck, "another thread inside at the section's end");
}

/* The result of a timed acquisition with deadline dl_ns: true if
 * acquired; ETIMEDOUT before the deadline and any other value are noted. */
static inline bool
conform_timed_result(struct conform_check *ck, int rc, uint64_t dl_ns)
{
	if (rc == ETIMEDOUT && conform_now_ns() < dl_ns)
		conform_note(ck, "ETIMEDOUT before the deadline");
	else if (rc != 0 && rc != ETIMEDOUT)
		conform_note(
		    ck, "a timed lock returned neither 0 nor ETIMEDOUT");
	return rc == 0;
}

/* Take l by a random method: true if it is held. */
static inline bool
conform_acquire(
    const struct conform_lock *l, struct conform_check *ck, uint64_t *rng)
{
	uint32_t c = conform_rnd(rng) % 100;
	if (c < 45) {
		CONFORM_WAIT_UNTIMED(l->name);
		l->lock(l);
		CONFORM_WAIT_END();
		return true;
	}
	if (c < 65)
		return l->trylock(l);
	if (c < 67) {
		int rc = l->timedlock(
		    l, &conform_bad[conform_rnd(rng) % CONFORM_NBAD]);
		if (rc != EINVAL)
			conform_note(ck,
			    "a malformed deadline did not give "
			    "EINVAL");
		return rc == 0;
	}
	struct timespec ts;
	uint64_t dl = conform_rand_deadline(rng, &ts);
	CONFORM_WAIT_TIMED(l->name, dl);
	int rc = l->timedlock(l, &ts);
	CONFORM_WAIT_END();
	return conform_timed_result(ck, rc, dl);
}

/* One random operation: acquire, check the critical section, release
 * (one in four fair).  True if it went through a critical section. */
static inline bool
conform_op(const struct conform_lock *l, struct conform_check *ck,
    uint64_t *rng, uintptr_t id)
{
	if (!conform_acquire(l, ck, rng))
		return false;
	conform_enter(ck, id);
	if (!conform_is_locked(l))
		conform_note(ck, "the lock reads as free inside");
	if (l->inside != NULL)
		l->inside(l, rng);
	conform_body(ck, rng);
	conform_exit(ck, id);
	conform_release(l, conform_rnd(rng) % 4 == 0);
	return true;
}

/* The lock at rest: state 0 and nobody parked. */
static inline void
conform_check_rest(const struct conform_lock *l, const char *when)
{
	uintptr_t s = l->state(l);
	size_t n = conform_parked(l->park_addr);
	CONFORM_CHECK(s == 0 && n == 0,
	    "%s: state %#jx and %zu parked %s, expected 0 and 0", l->name,
	    (uintmax_t)s, n, when);
}

/* Held by one thread: held_state, or parked_state with waiters. */
static inline void
conform_check_held(const struct conform_lock *l, bool waiters, const char *when)
{
	uintptr_t s = l->state(l),
	          want = waiters ? l->parked_state : l->held_state;
	CONFORM_CHECK(s == want, "%s: state %#jx %s, expected %#jx", l->name,
	    (uintmax_t)s, when, (uintmax_t)want);
}

/* ------------------------------------------------------------------ */
/* exclusion and mixed                                                 */

struct cf_team {
	const struct conform_lock *l;
	unsigned long iters, go, done;
	unsigned fair_every, yield_every;
	long counter; /* plain: only the lock protects it */
	struct conform_check ck;
	uint64_t seed;
	unsigned long sections; /* atomic: mixed's completed sections */
};

static inline void *
cf_excl_main(void *arg)
{
	struct cf_team *x = (struct cf_team *)arg;
	while (!CF_LOAD(&x->go))
		sched_yield();
	for (unsigned long i = 0; i < x->iters; i++) {
		x->l->lock(x->l);
		long v = x->counter;
		if (x->yield_every != 0 && i % x->yield_every == 0)
			sched_yield(); /* make the others park */
		x->counter = v + 1;
		conform_release(
		    x->l, x->fair_every != 0 && i % x->fair_every == 0);
	}
	CF_ADD(&x->done, 1);
	return NULL;
}

enum { CF_MAXT = 16 };

/* A team for l, of iters (scaled) iterations each. */
static inline struct cf_team *
cf_team_new(const struct conform_lock *l, unsigned long iters)
{
	struct cf_team *x = (struct cf_team *)calloc(1, sizeof *x);
	x->l = l;
	x->iters = iters / conform_scale;
	x->seed = conform_now_ns();
	return x;
}

/* Start n threads of fn on x, let them go and wait for them; false (after
 * a failure) if they did not finish. */
static inline bool
cf_team_run(struct cf_team *x, unsigned n, void *(*fn)(void *))
{
	pthread_t t[CF_MAXT];
	for (unsigned i = 0; i < n; i++)
		t[i] = conform_spawn(fn, x);
	CF_STORE(&x->go, 1);
	return conform_join(x->l->name, "their loops", t, n, &x->done);
}

/* nthreads threads, iters (scaled) lock-increment-unlock each, every
 * fair_every-th unlock fair (0: none), a yield inside every yield_every
 * (0: none).  The exact total, then the lock at rest. */
static inline bool
conform_exclusion(const struct conform_lock *l, unsigned nthreads,
    unsigned long iters, unsigned fair_every, unsigned yield_every)
{
	struct cf_team *x = cf_team_new(l, iters);
	nthreads = nthreads < CF_MAXT ? nthreads : (unsigned)CF_MAXT;
	x->fair_every = l->unlock_fair != NULL ? fair_every : 0;
	x->yield_every = yield_every;
	if (!cf_team_run(x, nthreads, cf_excl_main))
		return false;
	long want = (long)nthreads * (long)x->iters;
	CONFORM_CHECK(x->counter == want,
	    "%s: counter %ld, expected %ld (fair every %u): exclusion broken",
	    l->name, x->counter, want, x->fair_every);
	conform_check_rest(l, "after the threads finished");
	free(x);
	return true;
}

static inline void *
cf_mixed_main(void *arg)
{
	struct cf_team *x = (struct cf_team *)arg;
	uint64_t rng = conform_splitmix(CF_ADD(&x->seed, 1)) | 1;
	unsigned long n = 0;
	while (!CF_LOAD(&x->go))
		sched_yield();
	for (unsigned long i = 0; i < x->iters; i++)
		n += conform_op(x->l, &x->ck, &rng, (uintptr_t)&rng);
	CF_ADD(&x->sections, n);
	CF_ADD(&x->done, 1);
	return NULL;
}

/* nthreads threads of iters (scaled) random operations (conform_op). */
static inline bool
conform_mixed(
    const struct conform_lock *l, unsigned nthreads, unsigned long iters)
{
	struct cf_team *x = cf_team_new(l, iters);
	nthreads = nthreads < CF_MAXT ? nthreads : (unsigned)CF_MAXT;
	if (!cf_team_run(x, nthreads, cf_mixed_main))
		return false;
	CONFORM_CHECK(x->ck.bad == 0, "%s: %lu errors, the first: %s", l->name,
	    x->ck.bad, x->ck.first ? x->ck.first : "");
	CONFORM_CHECK(x->ck.value == x->sections,
	    "%s: counter %ju, critical sections %lu: exclusion broken", l->name,
	    (uintmax_t)x->ck.value, x->sections);
	CONFORM_CHECK(
	    x->sections > 0, "%s: no operation got the lock", l->name);
	conform_check_rest(l, "after the random operations");
	free(x);
	return true;
}

/* ------------------------------------------------------------------ */
/* A helper thread that takes the lock and keeps it until told.        */

struct cf_holder {
	const struct conform_lock *l;
	bool timed; /* with timedlock and a far deadline, not lock */
	int rc;
	unsigned long held, release, done;
};

static inline void *
cf_holder_main(void *arg)
{
	struct cf_holder *h = (struct cf_holder *)arg;
	if (h->timed) {
		struct timespec dl =
		    conform_ts(conform_now_ns() + 2 * conform_finish_ns);
		h->rc = h->l->timedlock(h->l, &dl);
	} else {
		h->l->lock(h->l);
	}
	CF_STORE(&h->held, 1);
	if (h->rc == 0) {
		conform_wait_ge(&h->release, 1, conform_finish_ns);
		h->l->unlock(h->l);
	}
	CF_STORE(&h->done, 1);
	return NULL;
}

static inline struct cf_holder *
cf_holder_start(const struct conform_lock *l, bool timed, pthread_t *t)
{
	struct cf_holder *h = (struct cf_holder *)calloc(1, sizeof *h);
	h->l = l;
	h->timed = timed;
	*t = conform_spawn(cf_holder_main, h);
	return h;
}

/* Let it go, and wait for it to finish. */
static inline bool
cf_holder_finish(struct cf_holder *h, pthread_t t)
{
	CF_STORE(&h->release, 1);
	if (!conform_join(h->l->name, "holding the lock", &t, 1, &h->done))
		return false;
	free(h);
	return true;
}

static inline void *
cf_try_main(void *arg)
{
	struct cf_holder *h = (struct cf_holder *)arg;
	h->rc = h->l->trylock(h->l);
	if (h->rc)
		h->l->unlock(h->l);
	return NULL;
}

/* Whether another thread's trylock succeeds now (it unlocks again). */
static inline bool
cf_try_elsewhere(const struct conform_lock *l)
{
	struct cf_holder h;
	memset(&h, 0, sizeof h);
	h.l = l;
	pthread_join(conform_spawn(cf_try_main, &h), NULL);
	return h.rc != 0;
}

/* ------------------------------------------------------------------ */
/* trylock                                                             */

static inline void
conform_trylock(const struct conform_lock *l)
{
	conform_check_rest(l, "at the start");
	CONFORM_CHECK(
	    cf_try_elsewhere(l), "%s: trylock of a free lock failed", l->name);
	conform_check_rest(l, "after a trylock and unlock");
	CONFORM_CHECK(
	    l->trylock(l), "%s: trylock of a free lock failed", l->name);
	conform_check_held(l, false, "after a trylock");
	CONFORM_CHECK(!cf_try_elsewhere(l),
	    "%s: another thread's trylock of a held lock succeeded", l->name);
	CONFORM_CHECK(
	    conform_is_locked(l), "%s: reads as free while held", l->name);
	l->unlock(l);
	conform_check_rest(l, "after the unlock");
	CONFORM_CHECK(cf_try_elsewhere(l),
	    "%s: trylock failed after the unlock", l->name);
}

/* ------------------------------------------------------------------ */
/* timedlock                                                           */

static inline void
conform_timedlock(const struct conform_lock *l)
{
	const char *n = l->name;
	const struct timespec past = { 0, 0 };

	/* Free: taken at once, whatever the deadline. */
	uint64_t t0 = conform_now_ns();
	CONFORM_CHECK(l->timedlock(l, &past) == 0, "%s: free, {0, 0}", n);
	CONFORM_CHECK(conform_now_ns() - t0 < CF_SEC, "%s: slow when free", n);
	conform_check_held(l, false, "after a timed lock");
	l->unlock(l);
	CONFORM_CHECK(l->timedlock(l, NULL) == 0, "%s: free, NULL", n);
	l->unlock(l);
	struct timespec soon = conform_ts(conform_now_ns() + 10 * CF_SEC);
	CONFORM_CHECK(l->timedlock(l, &soon) == 0, "%s: free, in 10 s", n);
	l->unlock(l);
	struct timespec ago = conform_ts(conform_now_ns() - CF_SEC);
	CONFORM_CHECK(l->timedlock(l, &ago) == 0, "%s: free, 1 s ago", n);
	conform_check_held(l, false, "after a timed lock");
	l->unlock(l);

	/* Malformed: EINVAL before any attempt; the lock stays free. */
	for (size_t i = 0; i < CONFORM_NBAD; i++) {
		int rc = l->timedlock(l, &conform_bad[i]);
		CONFORM_CHECK(
		    rc == EINVAL, "%s: [%zu] free: %d, not EINVAL", n, i, rc);
		conform_check_rest(l, "after EINVAL");
	}

	/* Held by another thread: EINVAL still comes first; a past deadline
	 * times out at once, neither spinning nor parking; a near one not
	 * before it, not grossly after, and leaves no trace. */
	pthread_t ht;
	struct cf_holder *h = cf_holder_start(l, false, &ht);
	if (!conform_wait_ge(&h->held, 1, conform_wait_ns)) {
		CF_FAIL("%s: the holder never got the free lock", n);
		return;
	}
	for (size_t i = 0; i < CONFORM_NBAD; i++)
		CONFORM_CHECK(l->timedlock(l, &conform_bad[i]) == EINVAL,
		    "%s: [%zu] held: not EINVAL", n, i);
	for (int i = 0; i < 3; i++) {
		struct timespec dl = { 0, 0 };
		if (i > 0)
			dl = conform_ts(
			    conform_now_ns() - (i == 1 ? CF_SEC : 0));
		uint64_t before = conform_slow_events();
		int rc = l->timedlock(l, &dl);
		uint64_t after = conform_slow_events();
		CONFORM_CHECK(
		    rc == ETIMEDOUT, "%s: [%d] held, past: %d", n, i, rc);
		CONFORM_CHECK(after == before,
		    "%s: [%d] a past deadline spun or parked (%ju events)", n,
		    i, (uintmax_t)(after - before));
		conform_check_held(l, false, "after a past deadline");
	}
	for (int round = 0; round < 3; round++) {
		uint64_t dl = conform_now_ns() + 50 * CF_MS;
		struct timespec ts = conform_ts(dl);
		int rc = l->timedlock(l, &ts);
		uint64_t after = conform_now_ns();
		CONFORM_CHECK(rc == ETIMEDOUT,
		    "%s: [%d] held: %d, expected "
		    "ETIMEDOUT",
		    n, round, rc);
		CONFORM_CHECK(after >= dl,
		    "%s: [%d] ETIMEDOUT %ju ns before "
		    "the deadline",
		    n, round, (uintmax_t)(dl - after));
		CONFORM_CHECK(after < dl + 500 * CF_MS,
		    "%s: [%d] ETIMEDOUT "
		    "%ju ms after the deadline",
		    n, round, (uintmax_t)((after - dl) / CF_MS));
		/* Nobody waits any more: no stale parked bit. */
		conform_check_held(l, false, "after the only waiter timed out");
		CONFORM_CHECK(conform_parked(l->park_addr) == 0,
		    "%s: [%d] a timed-out waiter still parked", n, round);
	}
	if (!cf_holder_finish(h, ht))
		return;
	conform_check_rest(l, "after the holder unlocked");

	/* A timed waiter parked behind this thread gets the lock when it is
	 * released, before its deadline. */
	struct timespec dl = conform_ts(conform_now_ns() + 50 * CF_MS);
	CONFORM_CHECK(l->timedlock(l, &dl) == 0, "%s: free, 50 ms", n);
	h = cf_holder_start(l, true, &ht);
	if (!conform_wait_parked(l->park_addr, 1)) {
		CF_FAIL("%s: the timed waiter did not park", n);
		return;
	}
	conform_check_held(l, true, "with a timed waiter parked");
	l->unlock(l);
	if (!conform_wait_ge(&h->held, 1, conform_wait_ns)) {
		CF_FAIL("%s: the parked timed waiter never got the lock "
		        "released",
		    n);
		return;
	}
	CONFORM_CHECK(h->rc == 0, "%s: the timed waiter got %d", n, h->rc);
	if (cf_holder_finish(h, ht))
		conform_check_rest(l, "after the timed waiter unlocked");
}

/* ------------------------------------------------------------------ */
/* timed_contended: timed waiters against a holder with long holds.    */

enum { CF_TW_THREADS = 4, CF_TW_ATTEMPTS = 3000 };

struct cf_timed_mix {
	const struct conform_lock *l;
	long counter; /* plain */
	long holder_count;
	unsigned long go, waiters_done, holder_done, seed, attempts;
	long ok, timeouts, early, other; /* atomic */
	uint64_t worst_early_ns;         /* atomic */
};

static inline void *
cf_tw_waiter(void *arg)
{
	struct cf_timed_mix *x = (struct cf_timed_mix *)arg;
	uint64_t seed = conform_splitmix(CF_ADD(&x->seed, 1)) | 1;
	while (!CF_LOAD(&x->go))
		sched_yield();
	for (unsigned long i = 0; i < x->attempts; i++) {
		uint64_t dl =
		    conform_now_ns() + conform_rng(&seed) % 201 * CF_US;
		struct timespec ts = conform_ts(dl);
		int rc = x->l->timedlock(x->l, &ts);
		uint64_t after = conform_now_ns();
		if (rc == 0) {
			long v = x->counter;
			volatile int k = 50;
			while (k > 0)
				k = k - 1;
			x->counter = v + 1;
			CF_ADD(&x->ok, 1);
			x->l->unlock(x->l);
		} else if (rc == ETIMEDOUT) {
			CF_ADD(&x->timeouts, 1);
			if (after < dl) {
				CF_ADD(&x->early, 1);
				uint64_t e = dl - after;
				if (e > CF_LOAD(&x->worst_early_ns))
					CF_STORE(&x->worst_early_ns, e);
			}
		} else {
			CF_ADD(&x->other, 1);
		}
		/* Outside the lock for a while: the holder gets its turns. */
		conform_busy_ns(conform_rng(&seed) % 101 * CF_US);
	}
	CF_ADD(&x->waiters_done, 1);
	return NULL;
}

static inline void *
cf_tw_holder(void *arg)
{
	struct cf_timed_mix *x = (struct cf_timed_mix *)arg;
	while (!CF_LOAD(&x->go))
		sched_yield();
	while (CF_LOAD(&x->waiters_done) < CF_TW_THREADS) {
		x->l->lock(x->l);
		long v = x->counter;
		conform_busy_ns(
		    300 * CF_US); /* a long hold: waiters time out */
		x->counter = v + 1;
		x->holder_count++;
		x->l->unlock(x->l);
		conform_busy_ns(100 * CF_US); /* a gap: waiters get in */
	}
	CF_ADD(&x->holder_done, 1);
	return NULL;
}

static inline void
conform_timed_contended(const struct conform_lock *l)
{
	pthread_t t[CF_TW_THREADS + 1];
	struct cf_timed_mix *x = (struct cf_timed_mix *)calloc(1, sizeof *x);
	x->l = l;
	x->attempts = CF_TW_ATTEMPTS / conform_scale;
	for (int i = 0; i < CF_TW_THREADS; i++)
		t[i] = conform_spawn(cf_tw_waiter, x);
	t[CF_TW_THREADS] = conform_spawn(cf_tw_holder, x);
	CF_STORE(&x->go, 1);
	if (!conform_join(l->name, "their timed attempts", t, CF_TW_THREADS,
	        &x->waiters_done) ||
	    !conform_join(
	        l->name, "holding", t + CF_TW_THREADS, 1, &x->holder_done))
		return;
	CONFORM_CHECK(
	    x->other == 0, "%s: %ld unexpected returns", l->name, x->other);
	CONFORM_CHECK(x->early == 0,
	    "%s: %ld ETIMEDOUT before the deadline "
	    "(worst %ju ns early)",
	    l->name, x->early, (uintmax_t)x->worst_early_ns);
	CONFORM_CHECK(x->ok + x->timeouts + x->other ==
	        (long)(CF_TW_THREADS * x->attempts),
	    "%s: %ld results for %lu attempts", l->name,
	    x->ok + x->timeouts + x->other, CF_TW_THREADS * x->attempts);
	CONFORM_CHECK(x->counter == x->ok + x->holder_count,
	    "%s: counter %ld, expected %ld: exclusion broken", l->name,
	    x->counter, x->ok + x->holder_count);
	CONFORM_CHECK(x->timeouts > 0,
	    "%s: no attempt timed out: the test "
	    "is void",
	    l->name);
	CONFORM_CHECK(x->ok > 0, "%s: no attempt succeeded", l->name);
	CONFORM_CHECK(
	    x->holder_count > 0, "%s: the holder never got in", l->name);
	conform_check_rest(l, "at the end");
	free(x);
}

/* ------------------------------------------------------------------ */
/* handoff: unlock_fair gives the lock to the parked waiter.           */

static inline void
conform_handoff(const struct conform_lock *l)
{
	const char *n = l->name;
	if (l->unlock_fair == NULL)
		return;
	/* Make sure the hand-off below comes from unlock_fair, not from the
	 * fairness timer: a long interval, and one timer-driven hand-off
	 * first (a fresh bucket's timer has expired) to move the bucket's
	 * deadline into the future.  It stays there, up to 10 s away, after
	 * the interval is restored: in one process, the fairness body on the
	 * same lock must come before this one. */
	struct pl_tuning saved, tun;
	pl_tuning_get(&saved);
	tun = saved;
	tun.fair_interval_us = 10 * 1000 * 1000;
	pl_tuning_set(&tun);
	pthread_t t;
	for (int prime = 1; prime >= 0; prime--) {
		l->lock(l);
		struct cf_holder *h = cf_holder_start(l, false, &t);
		if (!conform_wait_parked(l->park_addr, 1)) {
			CF_FAIL("%s: the waiter did not park", n);
			return;
		}
		conform_check_held(l, true, "with a waiter parked");
		if (prime) {
			l->unlock(l);
		} else {
			l->unlock_fair(l);
			/* The lock went to the waiter: nobody, not even the
			 * unlocker, can take it. */
			CONFORM_CHECK(!l->trylock(l),
			    "%s: trylock succeeded "
			    "right after unlock_fair: no hand-off",
			    n);
			CONFORM_CHECK(conform_is_locked(l),
			    "%s: free after "
			    "unlock_fair with a waiter",
			    n);
		}
		if (!conform_wait_ge(&h->held, 1, conform_wait_ns)) {
			CF_FAIL("%s: the waiter never got the lock", n);
			return;
		}
		if (!prime) {
			CONFORM_CHECK(!l->trylock(l),
			    "%s: trylock succeeded "
			    "while the waiter holds it",
			    n);
			conform_check_held(
			    l, false, "while the waiter holds it");
		}
		if (!cf_holder_finish(h, t))
			return;
		conform_check_rest(l, "after the waiter unlocked");
	}
	CONFORM_CHECK(l->trylock(l),
	    "%s: trylock failed after the waiter "
	    "unlocked",
	    n);
	l->unlock_fair(l); /* nobody waiting: a plain unlock */
	conform_check_rest(l, "after unlock_fair with nobody waiting");
	pl_tuning_set(&saved);
}

/* ------------------------------------------------------------------ */
/* no_lost_wakeup                                                      */

enum { CF_LW_ROUNDS = 20, CF_LW_WAITERS = 4 };

struct cf_lw {
	const struct conform_lock *l;
	bool fair;
	unsigned long got, done;
};

static inline void *
cf_lw_main(void *arg)
{
	struct cf_lw *w = (struct cf_lw *)arg;
	w->l->lock(w->l);
	CF_ADD(&w->got, 1);
	conform_release(w->l, w->fair);
	CF_ADD(&w->done, 1);
	return NULL;
}

/* Rounds of waiters parked on a lock this thread holds: after its unlock
 * (fair on odd rounds, where there is a fair unlock) every one must get
 * the lock in turn, within conform_finish_ns; then the yield-inside
 * stress of 4 threads, with plain and with fair unlocks. */
static inline bool
conform_no_lost_wakeup(const struct conform_lock *l)
{
	for (int round = 0; round < CF_LW_ROUNDS; round++) {
		pthread_t t[CF_LW_WAITERS];
		struct cf_lw *w = (struct cf_lw *)calloc(1, sizeof *w);
		w->l = l;
		w->fair = round % 2 == 1;
		l->lock(l);
		for (int i = 0; i < CF_LW_WAITERS; i++)
			t[i] = conform_spawn(cf_lw_main, w);
		if (!conform_wait_parked(l->park_addr, CF_LW_WAITERS)) {
			CF_FAIL("%s: round %d: %zu of %d waiters parked",
			    l->name, round, conform_parked(l->park_addr),
			    CF_LW_WAITERS);
			return false;
		}
		conform_check_held(l, true, "with the waiters parked");
		conform_release(l, w->fair);
		if (!conform_join(l->name, "after the unlock", t, CF_LW_WAITERS,
		        &w->done))
			return false;
		CONFORM_CHECK(w->got == CF_LW_WAITERS, "%s: %lu got the lock",
		    l->name, w->got);
		conform_check_rest(l, "after every waiter got the lock");
		free(w);
	}
	return conform_exclusion(l, 4, 20000, 0, 100) &&
	    (l->unlock_fair == NULL || conform_exclusion(l, 4, 20000, 7, 100));
}

/* ------------------------------------------------------------------ */
/* fairness                                                            */

/*
 * Two hogs hold the lock nearly all the time (a long critical section,
 * then straight back to lock): it is free only for the instant between
 * an unlock and the next lock, which the unlocking hog usually wins
 * again.  A third thread must still get the lock within a few fairness
 * intervals (1 ms each) plus scheduling delay: 100 ms is a generous
 * bound, which all but CF_FAIR_SLOW of the rounds must meet, and every
 * round must end within CF_FAIR_WORST_NS.  (A loaded 2-core machine can
 * deschedule the waiter for a hundred milliseconds once in a while; a
 * starving lock misses the bound round after round.  How often barging
 * alone lets the waiter in depends on the kernel's wakeup preemption; on
 * a 2-core Linux box it often does, so this catches gross starvation
 * rather than a missing timer.)
 */
enum { CF_FAIR_ROUNDS = 20, CF_FAIR_SLOW = 2 };
#define CF_HOG_HOLD_NS (200 * CF_US)
#define CF_FAIR_MAX_NS (100 * CF_MS)
#define CF_FAIR_WORST_NS (1000 * CF_MS)

struct cf_fair {
	const struct conform_lock *l;
	unsigned long stop, hogs_done, waiter_done, hog_iters[2];
	unsigned long next_hog; /* atomic: hands out the hog indices */
	volatile long work;
	uint64_t latency[CF_FAIR_ROUNDS];
	int rounds;        /* rounds the waiter completed */
	bool hogs_stalled; /* the hogs stopped taking the lock */
};

static inline unsigned long
cf_hog_total(struct cf_fair *f)
{
	return CF_LOAD(&f->hog_iters[0]) + CF_LOAD(&f->hog_iters[1]);
}

static inline void *
cf_hog_main(void *arg)
{
	struct cf_fair *f = (struct cf_fair *)arg;
	unsigned long idx = CF_ADD(&f->next_hog, 1);
	while (!CF_LOAD(&f->stop)) {
		f->l->lock(f->l);
		f->work = f->work + 1;
		conform_busy_ns(CF_HOG_HOLD_NS);
		f->l->unlock(f->l);
		CF_ADD(&f->hog_iters[idx], 1);
	}
	CF_ADD(&f->hogs_done, 1);
	return NULL;
}

static inline void *
cf_fair_waiter(void *arg)
{
	struct cf_fair *f = (struct cf_fair *)arg;
	for (int k = 0; k < CF_FAIR_ROUNDS; k++) {
		uint64_t t0 = conform_now_ns();
		f->l->lock(f->l);
		f->latency[k] = conform_now_ns() - t0;
		f->work = f->work + 1;
		f->l->unlock(f->l);
		f->rounds = k + 1;
		/* The hogs own the lock again before the next attempt. */
		unsigned long target = cf_hog_total(f) + 4;
		uint64_t end = conform_now_ns() + conform_wait_ns;
		while (cf_hog_total(f) < target && conform_now_ns() < end)
			conform_sleep_ns(50 * CF_US);
		if (cf_hog_total(f) < target) {
			f->hogs_stalled = true;
			break;
		}
	}
	CF_ADD(&f->waiter_done, 1);
	return NULL;
}

static inline void
conform_fairness(const struct conform_lock *l)
{
	struct cf_fair *f = (struct cf_fair *)calloc(1, sizeof *f);
	pthread_t hogs[2], w;
	f->l = l;
	/* Read the topology (a one-time cost of the first slow path) before
	 * anything is measured. */
	struct pl_tuning warm;
	pl_tuning_get(&warm);
	for (int i = 0; i < 2; i++)
		hogs[i] = conform_spawn(cf_hog_main, f);
	/* Both hogs are really looping before the waiter comes. */
	if (!conform_wait_ge(&f->hog_iters[0], 20, conform_wait_ns) ||
	    !conform_wait_ge(&f->hog_iters[1], 20, conform_wait_ns)) {
		CF_STORE(&f->stop, 1);
		CF_FAIL("%s: the hogs are not looping", l->name);
		return;
	}
	w = conform_spawn(cf_fair_waiter, f);
	bool joined = conform_join(l->name, "waiting", &w, 1, &f->waiter_done);
	CF_STORE(&f->stop, 1);
	if (!joined ||
	    !conform_join(l->name, "hogging", hogs, 2, &f->hogs_done))
		return;
	CONFORM_CHECK(!f->hogs_stalled && f->rounds == CF_FAIR_ROUNDS,
	    "%s: the hogs stopped making progress after round %d", l->name,
	    f->rounds);
	uint64_t max = 0;
	int worst = 0, slow = 0;
	for (int k = 0; k < CF_FAIR_ROUNDS; k++) {
		if (f->latency[k] > max) {
			max = f->latency[k];
			worst = k;
		}
		slow += f->latency[k] >= CF_FAIR_MAX_NS;
	}
	CONFORM_CHECK(slow <= CF_FAIR_SLOW && max < CF_FAIR_WORST_NS,
	    "%s: %d of %d rounds over %ju ms, the longest (round %d) "
	    "%ju ms, for a lock two threads hog",
	    l->name, slow, CF_FAIR_ROUNDS, (uintmax_t)(CF_FAIR_MAX_NS / CF_MS),
	    worst, (uintmax_t)(max / CF_MS));
	conform_check_rest(l, "after the hogs stopped");
	free(f);
}

/* ------------------------------------------------------------------ */
/* Every body, for an includer that runs them all in a row (torture), */
/* up to the first that fails.                                        */

static inline void
conform_all(const struct conform_lock *l)
{
	/* After a failure the lock may still be in use by threads left
	 * behind: the bodies that follow would only see their damage. */
	unsigned long f = conform_failures;
	conform_exclusion(l, 8, 200000, 0, 0);
	if (conform_failures == f)
		conform_exclusion(l, 8, 200000, 64, 0);
	if (conform_failures == f)
		conform_mixed(l, 4, 20000);
	if (conform_failures == f)
		conform_trylock(l);
	if (conform_failures == f)
		conform_timedlock(l);
	if (conform_failures == f)
		conform_timed_contended(l);
	if (conform_failures == f)
		conform_no_lost_wakeup(l);
	if (conform_failures == f)
		conform_fairness(l);
	if (conform_failures == f)
		conform_handoff(l); /* last: see there */
}

#endif /* PL_CONFORM_H */
