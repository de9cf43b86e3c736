/* SPDX-License-Identifier: MIT */
/*
 * The lock-conformance template of tests/conform.h, instantiated for each
 * lock: pl_mutex_t, pl_rmutex_t, a pl_bitlock in a word whose other bits
 * are a caller's and another bit lock's (held throughout), a pl_bitlock8
 * in a byte with a caller's bits, and pl_rwlock_t's writer side.  One
 * Criterion test per lock and body: conform::mutex_exclusion,
 * conform::bitlock8_no_lost_wakeup, and so on.  What only one lock does
 * stays in its own suite (tests/test_mutex.c and the others).
 */
#include "testutil.h"

#define CONFORM_FAIL(...) cr_assert_fail(__VA_ARGS__)
#include "conform.h"

TU_CRITERION_MAIN_SERIAL()

TestSuite(conform, .timeout = 60);

/* The bit lock under test is not in the lowest bits; the lowest are
 * another bit lock's, which this thread holds while a body runs, and the
 * top bit is the caller's.  The byte lock keeps the caller's low bits. */
#define W_OTHER_L ((uintptr_t)1)
#define W_OTHER_P ((uintptr_t)2)
#define W_CALLER ((uintptr_t)1 << (sizeof(uintptr_t) * 8 - 1))
#define W_LOCKED ((uintptr_t)1 << 5)
#define W_PARKED ((uintptr_t)1 << 9)
#define B_CALLER ((unsigned char)0x25)
#define B_LOCKED ((unsigned char)0x80)
#define B_PARKED ((unsigned char)0x10)

static pl_mutex_t the_mutex;
static pl_rmutex_t the_rmutex;
static uintptr_t the_word;
static unsigned char the_byte;
static pl_rwlock_t the_rwlock;

static struct conform_lock
setup_mutex(void)
{
	pl_mutex_init(&the_mutex);
	return conform_mutex(&the_mutex);
}

static struct conform_lock
setup_rmutex(void)
{
	pl_rmutex_init(&the_rmutex);
	return conform_rmutex(&the_rmutex);
}

static struct conform_lock
setup_bitlock(void)
{
	the_word = W_CALLER;
	pl_bitlock_lock(&the_word, W_OTHER_L, W_OTHER_P);
	return conform_bitlock(&the_word, W_LOCKED, W_PARKED);
}

static struct conform_lock
setup_bitlock8(void)
{
	the_byte = B_CALLER;
	return conform_bitlock8(&the_byte, B_LOCKED, B_PARKED);
}

static struct conform_lock
setup_rwlock_writer(void)
{
	pl_rwlock_init(&the_rwlock);
	return conform_rwlock_writer(&the_rwlock);
}

/* After a body: the lock at rest (as every body leaves it), and the bits
 * that are not the lock's as they were. */
static void
teardown(const struct conform_lock *l)
{
	conform_check_rest(l, "after the body");
	if (l->obj == &the_word) {
		uintptr_t w = __atomic_load_n(&the_word, __ATOMIC_RELAXED);
		cr_assert(w == (W_CALLER | W_OTHER_L),
		    "word %#jx, expected %#jx: other bits changed",
		    (uintmax_t)w, (uintmax_t)(W_CALLER | W_OTHER_L));
		pl_bitlock_unlock(&the_word, W_OTHER_L, W_OTHER_P);
		cr_assert(the_word == W_CALLER);
	} else if (l->obj == &the_byte) {
		cr_assert(the_byte == B_CALLER, "byte %#x, expected %#x",
		    the_byte, B_CALLER);
	}
}

#define CONFORM_TEST(kind, body, ...)                                          \
	Test(conform, kind##_##body)                                           \
	{                                                                      \
		struct conform_lock l = setup_##kind();                        \
		conform_##body(&l, ##__VA_ARGS__);                             \
		teardown(&l);                                                  \
	}

/* The bodies every lock passes. */
#define CONFORM_TESTS(kind)                                                    \
	CONFORM_TEST(kind, exclusion, 8, 200000, 0, 0)                         \
	CONFORM_TEST(kind, mixed, 4, 20000)                                    \
	CONFORM_TEST(kind, trylock)                                            \
	CONFORM_TEST(kind, timedlock)                                          \
	CONFORM_TEST(kind, timed_contended)                                    \
	CONFORM_TEST(kind, no_lost_wakeup)                                     \
	CONFORM_TEST(kind, fairness)

/* And those of a lock with a fair unlock. */
#define CONFORM_FAIR_TESTS(kind)                                               \
	Test(conform, kind##_exclusion_fair)                                   \
	{                                                                      \
		struct conform_lock l = setup_##kind();                        \
		conform_exclusion(&l, 8, 200000, 64, 0);                       \
		teardown(&l);                                                  \
	}                                                                      \
	CONFORM_TEST(kind, handoff)

CONFORM_TESTS(mutex)
CONFORM_FAIR_TESTS(mutex)
CONFORM_TESTS(rmutex)
CONFORM_TESTS(bitlock)
CONFORM_FAIR_TESTS(bitlock)
CONFORM_TESTS(bitlock8)
CONFORM_FAIR_TESTS(bitlock8)
CONFORM_TESTS(rwlock_writer)
