/* SPDX-License-Identifier: MIT */
/*
 * Tests of what only the bit locks do: other bits kept under concurrent
 * atomic flips, two locks in one word (exclusion, and an unlock waking
 * only its own lock's waiters), a lock in a pointer's low bits, bad
 * arguments and unlock misuse.  What every lock does (exclusion, trylock,
 * timed lock, fair hand-off, lost wakeups, fairness) is in
 * tests/test_conform.c, for both widths.
 */

#include "testutil.h"

TU_CRITERION_MAIN_SERIAL()

TestSuite(bitlock, .timeout = 30);

static uintptr_t
word_of(const uintptr_t *w)
{
	return __atomic_load_n(w, __ATOMIC_RELAXED);
}

/* ------------------------------------------------------------------ */
/* 1. other bits are kept while other threads flip them                */

enum { FL_LOCKERS = 2, FL_FLIPPERS = 2, FL_ROUNDS = 20000 };
#define FL_HIGH ((uintptr_t)0x5a0000) /* caller's bits nobody changes */

struct flips {
	uintptr_t word;
	long counter;     /* plain: the bit lock protects it */
	int lockers_done; /* atomic */
	struct tu_barrier start;
	long flips[FL_FLIPPERS]; /* how many each flipper made */
};

struct flip_arg {
	struct flips *f;
	int idx;
};

static uintptr_t
flip_mask(int flipper, long i)
{
	/* Bits 8..15, a different order per flipper (period 8). */
	return (uintptr_t)1 << (8 + (unsigned)((i * (2 * flipper + 3)) % 8));
}

/* Flip bits 8..15 for as long as the lockers run, and a minimum. */
static void *
flipper_main(void *arg)
{
	struct flip_arg *a = arg;
	struct flips *f = a->f;
	tu_barrier_wait(&f->start);
	long i = 0;
	while (i < 1000 ||
	    __atomic_load_n(&f->lockers_done, __ATOMIC_ACQUIRE) < FL_LOCKERS) {
		__atomic_fetch_xor(
		    &f->word, flip_mask(a->idx, i), __ATOMIC_RELAXED);
		i++;
	}
	f->flips[a->idx] = i;
	return NULL;
}

static void *
flip_locker_main(void *arg)
{
	struct flip_arg *a = arg;
	struct flips *f = a->f;
	tu_barrier_wait(&f->start);
	for (long i = 0; i < FL_ROUNDS; i++) {
		pl_bitlock_lock(&f->word, 1, 2);
		long v = f->counter;
		if (i % 4 == 0)
			tu_busy_ns(2 * TU_US); /* the other locker parks */
		f->counter = v + 1;
		pl_bitlock_unlock(&f->word, 1, 2);
	}
	__atomic_fetch_add(&f->lockers_done, 1, __ATOMIC_RELEASE);
	return NULL;
}

Test(bitlock, other_bits_kept_under_concurrent_flips, .timeout = 60)
{
	static struct flips f;
	static struct flip_arg la[FL_LOCKERS], fa[FL_FLIPPERS];
	memset(&f, 0, sizeof(f));
	f.word = FL_HIGH;
	tu_barrier_init(&f.start, FL_LOCKERS + FL_FLIPPERS);
	pthread_t lt[FL_LOCKERS], ft[FL_FLIPPERS];
	for (int i = 0; i < FL_LOCKERS; i++) {
		la[i] = (struct flip_arg){ &f, i };
		lt[i] = tu_spawn(flip_locker_main, &la[i]);
	}
	for (int i = 0; i < FL_FLIPPERS; i++) {
		fa[i] = (struct flip_arg){ &f, i };
		ft[i] = tu_spawn(flipper_main, &fa[i]);
	}
	for (int i = 0; i < FL_LOCKERS; i++)
		tu_join(lt[i]);
	for (int i = 0; i < FL_FLIPPERS; i++)
		tu_join(ft[i]);
	tu_barrier_destroy(&f.start);

	uintptr_t expect = FL_HIGH;
	for (int k = 0; k < FL_FLIPPERS; k++)
		for (long i = 0; i < f.flips[k]; i++)
			expect ^= flip_mask(k, i);
	cr_assert(word_of(&f.word) == expect,
	    "word %#jx, expected %#jx after %ld + %ld flips: a lock "
	    "operation lost a flip or left its bits set",
	    (uintmax_t)word_of(&f.word), (uintmax_t)expect, f.flips[0],
	    f.flips[1]);
	cr_assert(f.counter == (long)FL_LOCKERS * FL_ROUNDS,
	    "counter %ld, expected %ld: exclusion broken", f.counter,
	    (long)FL_LOCKERS * FL_ROUNDS);
}

/* ------------------------------------------------------------------ */
/* 2. two locks in one word                                            */

#define A_L ((uintptr_t)1)
#define A_P ((uintptr_t)2)
#define B_L ((uintptr_t)4)
#define B_P ((uintptr_t)8)

enum { TWO_ITERS = 20000 };

struct two {
	uintptr_t word;
	long counter[2]; /* plain: counter[0] under A, counter[1] under B */
	long bad;        /* atomic */
	struct tu_barrier start;
};

struct two_arg {
	struct two *t;
	int which; /* 0: lock A, 1: lock B */
};

static void *
two_main(void *arg)
{
	struct two_arg *a = arg;
	struct two *t = a->t;
	uintptr_t l = a->which ? B_L : A_L, p = a->which ? B_P : A_P;
	tu_barrier_wait(&t->start);
	for (int i = 0; i < TWO_ITERS; i++) {
		pl_bitlock_lock(&t->word, l, p);
		if (!(word_of(&t->word) & l))
			__atomic_fetch_add(&t->bad, 1, __ATOMIC_RELAXED);
		long v = t->counter[a->which];
		if (i % 100 == 0)
			sched_yield();
		t->counter[a->which] = v + 1;
		pl_bitlock_unlock(&t->word, l, p);
	}
	return NULL;
}

Test(bitlock, two_locks_in_one_word_exclusive, .timeout = 60)
{
	static struct two t;
	static struct two_arg a[4];
	memset(&t, 0, sizeof(t));
	t.word = 0xf0; /* caller's bits beside both locks */
	tu_barrier_init(&t.start, 4);
	pthread_t th[4];
	for (int i = 0; i < 4; i++) {
		a[i] = (struct two_arg){ &t, i % 2 };
		th[i] = tu_spawn(two_main, &a[i]);
	}
	for (int i = 0; i < 4; i++)
		tu_join(th[i]);
	tu_barrier_destroy(&t.start);
	cr_assert(t.bad == 0, "%ld times a holder found its bit clear", t.bad);
	cr_assert(
	    t.counter[0] == 2L * TWO_ITERS && t.counter[1] == 2L * TWO_ITERS,
	    "counters %ld, %ld, expected %ld each", t.counter[0], t.counter[1],
	    2L * TWO_ITERS);
	cr_assert(word_of(&t.word) == 0xf0, "word %#jx at the end",
	    (uintmax_t)word_of(&t.word));
	cr_assert(count_parked(&t.word) == 0);
}

struct holder {
	uintptr_t *word;
	uintptr_t l, p;
	int got;     /* atomic */
	int release; /* atomic */
};

static void *
holder_main(void *arg)
{
	struct holder *h = arg;
	pl_bitlock_lock(h->word, h->l, h->p);
	__atomic_store_n(&h->got, 1, __ATOMIC_RELEASE);
	tu_wait_int_eq(&h->release, 1, TU_WAIT_NS);
	pl_bitlock_unlock(h->word, h->l, h->p);
	return NULL;
}

/* Wait until exactly the tokens want[0..n) are parked on addr, in order. */
static bool
tokens_are(const void *addr, const uintptr_t *want, size_t n)
{
	int64_t end = tu_now_ns() + TU_WAIT_NS;
	for (;;) {
		uintptr_t got[8];
		size_t k = parked_tokens(addr, got, 8);
		if (k == n && memcmp(got, want, n * sizeof(*want)) == 0)
			return true;
		if (tu_now_ns() >= end)
			return false;
		tu_poll_pause();
	}
}

Test(bitlock, unlock_wakes_only_its_own_waiters, .timeout = 30)
{
	/* Fairness hand-offs are fine here but make the bits less
	 * predictable: push the timer far away. */
	struct pl_tuning saved, tune;
	pl_tuning_get(&saved);
	tune = saved;
	tune.fair_interval_us = 10 * 1000 * 1000;
	pl_tuning_set(&tune);

	static uintptr_t w;
	w = 0x100;
	pl_bitlock_lock(&w, A_L, A_P);
	pl_bitlock_lock(&w, B_L, B_P);
	struct holder a1 = { &w, A_L, A_P, 0, 0 };
	struct holder b1 = { &w, B_L, B_P, 0, 0 };
	struct holder a2 = { &w, A_L, A_P, 0, 0 };

	/* Queue on the word: A1, B1, A2, in that order. */
	pthread_t ta1 = tu_spawn(holder_main, &a1);
	const uintptr_t q1[] = { A_L };
	cr_assert(tokens_are(&w, q1, 1), "A1 did not park");
	pthread_t tb1 = tu_spawn(holder_main, &b1);
	const uintptr_t q2[] = { A_L, B_L };
	cr_assert(tokens_are(&w, q2, 2), "B1 did not park behind A1");
	pthread_t ta2 = tu_spawn(holder_main, &a2);
	const uintptr_t q3[] = { A_L, B_L, A_L };
	cr_assert(tokens_are(&w, q3, 3), "A2 did not park behind B1");
	cr_assert(word_of(&w) == (0x100 | A_L | A_P | B_L | B_P),
	    "word %#jx with both locks held and waited for",
	    (uintmax_t)word_of(&w));

	/* Unlock A: A1 gets it; B1 and A2 stay parked, and A's parked bit
	 * stays set because A2 still waits. */
	pl_bitlock_unlock(&w, A_L, A_P);
	cr_assert(tu_wait_int_eq(&a1.got, 1, TU_WAIT_NS),
	    "unlock of A did not wake A's first waiter");
	const uintptr_t q4[] = { B_L, A_L };
	cr_assert(tokens_are(&w, q4, 2),
	    "after unlock of A: expected B1, A2 still parked");
	cr_assert(!__atomic_load_n(&b1.got, __ATOMIC_ACQUIRE));
	cr_assert(word_of(&w) == (0x100 | A_L | A_P | B_L | B_P),
	    "word %#jx: A's parked bit must stay while A2 waits",
	    (uintmax_t)word_of(&w));

	/* A1 unlocks: A2 gets it, and A's parked bit goes; B untouched. */
	__atomic_store_n(&a1.release, 1, __ATOMIC_RELEASE);
	cr_assert(tu_wait_int_eq(&a2.got, 1, TU_WAIT_NS),
	    "A1's unlock did not wake A2");
	tu_join(ta1);
	const uintptr_t q5[] = { B_L };
	cr_assert(tokens_are(&w, q5, 1), "B1 should be the only one parked");
	cr_assert(word_of(&w) == (0x100 | A_L | B_L | B_P),
	    "word %#jx: A held with nobody waiting, B held and waited for",
	    (uintmax_t)word_of(&w));
	__atomic_store_n(&a2.release, 1, __ATOMIC_RELEASE);
	tu_join(ta2);
	cr_assert(word_of(&w) == (0x100 | B_L | B_P));
	cr_assert(count_parked(&w) == 1);
	cr_assert(!__atomic_load_n(&b1.got, __ATOMIC_ACQUIRE),
	    "B's waiter was woken by unlocks of A");

	/* Finally B. */
	pl_bitlock_unlock(&w, B_L, B_P);
	cr_assert(tu_wait_int_eq(&b1.got, 1, TU_WAIT_NS));
	__atomic_store_n(&b1.release, 1, __ATOMIC_RELEASE);
	tu_join(tb1);
	cr_assert(word_of(&w) == 0x100, "word %#jx at the end",
	    (uintmax_t)word_of(&w));
	cr_assert(count_parked(&w) == 0);
	pl_tuning_set(&saved);
}

/* ------------------------------------------------------------------ */
/* 3. a lock in a pointer's low bits                                   */

struct node {
	_Alignas(8) long payload[4];
};

enum { PTR_THREADS = 4, PTR_ITERS = 20000 };

struct ptrlock {
	uintptr_t head; /* (uintptr_t)&node | lock bits 1 and 2 */
	uintptr_t ptr;
	long bad; /* atomic: pointer bits seen changed */
	struct tu_barrier start;
};

static void *
ptr_main(void *arg)
{
	struct ptrlock *p = arg;
	tu_barrier_wait(&p->start);
	for (int i = 0; i < PTR_ITERS; i++) {
		if ((word_of(&p->head) & ~(uintptr_t)3) != p->ptr)
			__atomic_fetch_add(&p->bad, 1, __ATOMIC_RELAXED);
		pl_bitlock_lock(&p->head, 1, 2);
		struct node *n =
		    (struct node *)(word_of(&p->head) & ~(uintptr_t)3);
		if ((uintptr_t)n != p->ptr)
			__atomic_fetch_add(&p->bad, 1, __ATOMIC_RELAXED);
		else
			n->payload[i % 4]++;
		if (i % 100 == 0)
			sched_yield();
		pl_bitlock_unlock(&p->head, 1, 2);
	}
	return NULL;
}

Test(bitlock, pointer_low_bits_as_lock, .timeout = 60)
{
	static struct node node;
	static struct ptrlock p;
	memset(&node, 0, sizeof(node));
	memset(&p, 0, sizeof(p));
	p.ptr = (uintptr_t)&node;
	cr_assert((p.ptr & 3) == 0);
	p.head = p.ptr;
	tu_barrier_init(&p.start, PTR_THREADS);
	pthread_t t[PTR_THREADS];
	for (int i = 0; i < PTR_THREADS; i++)
		t[i] = tu_spawn(ptr_main, &p);
	for (int i = 0; i < PTR_THREADS; i++)
		tu_join(t[i]);
	tu_barrier_destroy(&p.start);
	cr_assert(p.bad == 0, "the pointer bits changed %ld times", p.bad);
	cr_assert(word_of(&p.head) == p.ptr, "head %#jx, expected %#jx",
	    (uintmax_t)word_of(&p.head), (uintmax_t)p.ptr);
	long sum = 0;
	for (int i = 0; i < 4; i++)
		sum += node.payload[i];
	cr_assert(sum == (long)PTR_THREADS * PTR_ITERS,
	    "payload sum %ld, expected %ld: exclusion broken", sum,
	    (long)PTR_THREADS * PTR_ITERS);
}

/* ------------------------------------------------------------------ */
/* 4. misuse aborts with a message                                      */

static uintptr_t bad_word;
static unsigned char bad_byte;

/* Arguments through volatile, so that the check runs at run time too. */
static volatile uintptr_t vl, vp;

enum bad_call {
	BAD_LOCK,
	BAD_TRYLOCK,
	BAD_UNLOCK,
	BAD_UNLOCK_FAIR,
	BAD8_LOCK,
	BAD8_TRYLOCK,
	BAD8_UNLOCK,
	BAD8_UNLOCK_FAIR
};

static void
bad_call(void *arg)
{
	uintptr_t l = vl, p = vp;
	switch ((enum bad_call)(intptr_t)arg) {
	case BAD_LOCK:
		pl_bitlock_lock(&bad_word, l, p);
		break;
	case BAD_TRYLOCK:
		(void)pl_bitlock_trylock(&bad_word, l, p);
		break;
	case BAD_UNLOCK:
		pl_bitlock_unlock(&bad_word, l, p);
		break;
	case BAD_UNLOCK_FAIR:
		pl_bitlock_unlock_fair(&bad_word, l, p);
		break;
	case BAD8_LOCK:
		pl_bitlock8_lock(&bad_byte, (unsigned char)l, (unsigned char)p);
		break;
	case BAD8_TRYLOCK:
		(void)pl_bitlock8_trylock(
		    &bad_byte, (unsigned char)l, (unsigned char)p);
		break;
	case BAD8_UNLOCK:
		pl_bitlock8_unlock(
		    &bad_byte, (unsigned char)l, (unsigned char)p);
		break;
	case BAD8_UNLOCK_FAIR:
		pl_bitlock8_unlock_fair(
		    &bad_byte, (unsigned char)l, (unsigned char)p);
		break;
	}
}

static void
check_bad(enum bad_call call, uintptr_t l, uintptr_t p, const char *tail)
{
	static const char *const names[] = { "pl_bitlock_lock",
		"pl_bitlock_trylock", "pl_bitlock_unlock",
		"pl_bitlock_unlock_fair", "pl_bitlock8_lock",
		"pl_bitlock8_trylock", "pl_bitlock8_unlock",
		"pl_bitlock8_unlock_fair" };
	const void *addr = call >= BAD8_LOCK ? (const void *)&bad_byte
	                                     : (const void *)&bad_word;
	char expect[256];
	snprintf(expect, sizeof(expect), "%s: bit lock %p: %s\n", names[call],
	    addr, tail);
	vl = l;
	vp = p;
	tu_expect_abort(bad_call, (void *)(intptr_t)call, expect);
}

Test(bitlock, bad_arguments_abort, .timeout = 30)
{
	for (int c = BAD_LOCK; c <= BAD8_UNLOCK_FAIR; c++) {
		enum bad_call call = (enum bad_call)c;
		check_bad(call, 0, 2, "locked_bit is 0");
		check_bad(call, 1, 0, "parked_bit is 0");
		check_bad(call, 0, 0, "locked_bit is 0");
		check_bad(call, 4, 4,
		    "locked_bit and parked_bit are the same bit 0x4");
		check_bad(call, 3, 4, "locked_bit 0x3 is not a single bit");
		check_bad(call, 1, 0x30, "parked_bit 0x30 is not a single bit");
	}
	cr_assert(bad_word == 0 && bad_byte == 0);
}

/* Constant arguments take the same path (the check folds to a call). */
static void
bad_constant(void *arg)
{
	(void)arg;
	pl_bitlock_lock(&bad_word, 1, 1);
}

Test(bitlock, bad_constant_arguments_abort, .timeout = 30)
{
	char expect[160];
	snprintf(expect, sizeof(expect),
	    "pl_bitlock_lock: bit lock %p: "
	    "locked_bit and parked_bit are the same bit 0x1\n",
	    (void *)&bad_word);
	tu_expect_abort(bad_constant, NULL, expect);
}

static void
unlock_unlocked(void *arg)
{
	switch ((int)(intptr_t)arg) {
	case 0:
		pl_bitlock_unlock(&bad_word, 0x40, 0x80);
		break;
	case 1:
		pl_bitlock_unlock_fair(&bad_word, 0x40, 0x80);
		break;
	case 2:
		pl_bitlock8_unlock(&bad_byte, 0x40, 0x80);
		break;
	default:
		pl_bitlock8_unlock_fair(&bad_byte, 0x40, 0x80);
		break;
	}
}

Test(bitlock, unlock_of_unlocked_aborts, .timeout = 30)
{
	static const char *const names[] = { "pl_bitlock_unlock",
		"pl_bitlock_unlock_fair", "pl_bitlock8_unlock",
		"pl_bitlock8_unlock_fair" };
	/* Other bits set, and even the parked bit: still not locked. */
	bad_word = 0xbf;
	bad_byte = 0xbf;
	for (int i = 0; i < 4; i++) {
		char expect[160];
		snprintf(expect, sizeof(expect),
		    "%s: bit lock %p (bit 0x40) is not locked\n", names[i],
		    i < 2 ? (void *)&bad_word : (void *)&bad_byte);
		tu_expect_abort(unlock_unlocked, (void *)(intptr_t)i, expect);
	}
	bad_word = 0;
	bad_byte = 0;
}

/* ------------------------------------------------------------------ */
/* Turns (lib/twobit.c): a woken waiter that loses its bit lock to a
 * barging thread parks again at its turn, which in a shared word may be
 * behind another lock's waiters that parked before it.  The word holds
 * lock X (TL, TP) and lock Y (bits 0 and 1); the main thread holds both.
 * A waiter of Y parks, then A and B on X: the queue is Y's, A, B.  The
 * main thread wakes A as an unlock of X would and keeps X, as a barging
 * thread that took it first would; A parks again, after Y's waiter and
 * before B.  Then the main thread unlocks X: A must get it before B.
 * Then Y.  In a byte, the same without Y. */

#define TL ((uintptr_t)1 << 5)
#define TP ((uintptr_t)1 << 9)
#define TL8 ((unsigned char)0x40)
#define TP8 ((unsigned char)0x08)

struct turn_ctx {
	uintptr_t word;
	unsigned char byte;
	bool wide;
	unsigned order[3];
	unsigned n;
};

struct turn_arg {
	struct turn_ctx *c;
	unsigned id; /* 0 A, 1 B, 2 the waiter of Y */
};

static void *
turn_waiter(void *arg)
{
	struct turn_arg *a = arg;
	struct turn_ctx *c = a->c;
	if (!c->wide) {
		pl_bitlock8_lock(&c->byte, TL8, TP8);
		c->order[c->n++] = a->id;
		pl_bitlock8_unlock(&c->byte, TL8, TP8);
	} else if (a->id == 2) {
		pl_bitlock_lock(&c->word, 1, 2);
		pl_bitlock_unlock(&c->word, 1, 2);
	} else {
		pl_bitlock_lock(&c->word, TL, TP);
		c->order[c->n++] = a->id;
		pl_bitlock_unlock(&c->word, TL, TP);
	}
	return NULL;
}

static void
turn_round(struct turn_ctx *c, bool wide)
{
	struct turn_arg a[3] = { { c, 0 }, { c, 1 }, { c, 2 } };
	pthread_t w[3];
	void *addr = wide ? (void *)&c->word : (void *)&c->byte;
	size_t n = 0;

	c->wide = wide;
	c->n = 0;
	if (wide) {
		pl_bitlock_lock(&c->word, 1, 2);
		pl_bitlock_lock(&c->word, TL, TP);
		w[2] = tu_spawn(turn_waiter, &a[2]);
		ASSERT_PARKED(addr, ++n);
	} else {
		pl_bitlock8_lock(&c->byte, TL8, TP8);
	}
	for (int i = 0; i < 2; i++) {
		w[i] = tu_spawn(turn_waiter, &a[i]);
		ASSERT_PARKED(addr, ++n);
	}
	if (wide)
		cr_assert(tu_wake_to_lose(
		              addr, sizeof(uintptr_t), TP, false, TL) == 1);
	else
		cr_assert(tu_wake_to_lose(addr, 1, TP8, true, 0) == 1);
	ASSERT_PARKED(addr, n); /* A is back in the queue */
	if (wide)
		pl_bitlock_unlock(&c->word, TL, TP);
	else
		pl_bitlock8_unlock(&c->byte, TL8, TP8);
	tu_join(w[0]);
	tu_join(w[1]);
	cr_assert(c->n == 2);
	cr_assert(c->order[0] == 0,
	    "%s: B got the lock before A, which parked first and lost it once",
	    wide ? "word" : "byte");
	if (wide) {
		ASSERT_PARKED(addr, 1); /* Y's waiter, still behind Y */
		pl_bitlock_unlock(&c->word, 1, 2);
		tu_join(w[2]);
		cr_assert(word_of(&c->word) == 0);
	} else {
		cr_assert(c->byte == 0);
	}
}

Test(bitlock, a_woken_waiter_that_loses_keeps_its_turn, .timeout = 60)
{
	static struct turn_ctx c;
	for (int r = 0; r < 5; r++) {
		turn_round(&c, true);
		turn_round(&c, false);
	}
}

/* The fair unlocks while the waiter an unlock woke to compete has yet to
 * set P again: the waiter still queued must be handed the lock
 * (tu_fair_unlock_while_rearm_pending).  Before, they released it on
 * their fast path. */
enum { RL = 0x10, RP = 0x20 }; /* bits 0x1 and 0x80 are the caller's */
static uintptr_t rearm_word = 0x1;
static unsigned char rearm_byte = 0x80;

static void
rw_lock(void *lk)
{
	pl_bitlock_lock(lk, RL, RP);
}
static void
rw_unlock(void *lk)
{
	pl_bitlock_unlock(lk, RL, RP);
}
static void
rw_unlock_fair(void *lk)
{
	pl_bitlock_unlock_fair(lk, RL, RP);
}
static bool
rw_trylock(void *lk)
{
	return pl_bitlock_trylock(lk, RL, RP);
}
static void
rb_lock(void *lk)
{
	pl_bitlock8_lock(lk, RL, RP);
}
static void
rb_unlock(void *lk)
{
	pl_bitlock8_unlock(lk, RL, RP);
}
static void
rb_unlock_fair(void *lk)
{
	pl_bitlock8_unlock_fair(lk, RL, RP);
}
static bool
rb_trylock(void *lk)
{
	return pl_bitlock8_trylock(lk, RL, RP);
}

Test(bitlock, a_fair_unlock_hands_off_while_a_woken_waiter_has_yet_to_rearm)
{
	struct tu_twobit_ops w = { rw_lock, rw_unlock, rw_unlock_fair,
		rw_trylock, &rearm_word, &rearm_word, sizeof rearm_word, RP };
	struct tu_twobit_ops b = { rb_lock, rb_unlock, rb_unlock_fair,
		rb_trylock, &rearm_byte, &rearm_byte, 1, RP };
	cr_assert(tu_fair_unlock_while_rearm_pending(&w),
	    "pl_bitlock_unlock_fair left the lock free with a waiter queued");
	cr_assert(rearm_word == 0x1 && count_parked(&rearm_word) == 0);
	cr_assert(tu_fair_unlock_while_rearm_pending(&b),
	    "pl_bitlock8_unlock_fair left the lock free with a waiter queued");
	cr_assert(rearm_byte == 0x80 && count_parked(&rearm_byte) == 0);
}
