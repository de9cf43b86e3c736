/* SPDX-License-Identifier: MIT */
/*
 * A stand-in for the part of Criterion that the suites use (Test,
 * TestSuite, cr_assert, cr_assert_fail, cr_assert_str_eq), for
 * ThreadSanitizer builds only.
 *
 * Criterion 2.4.1 cannot start under ThreadSanitizer: its sandbox arena
 * fails to map ("Could not initialize inheritable arena", Criterion issue
 * 274).  With --enable-sanitizer=thread the suites are compiled against
 * this header and tests/tsan/runner.c instead, unchanged, so that the same
 * tests run under TSan.  Each test runs in a forked child with a timeout,
 * as under Criterion, and the runner prints TAP.  A C++ suite
 * (tests/test_cxx.cc) includes it too: the runner's functions keep their
 * C names, and a test's options are designated initializers, which g++
 * accepts in every C++ standard.
 */
#ifndef PL_TSAN_CRITERION_H
#define PL_TSAN_CRITERION_H

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

struct pl_shim_opts {
	double timeout; /* seconds; 0: the suite's, else the default */
};

struct pl_shim_test {
	const char *suite, *name;
	void (*fn)(void);
	struct pl_shim_opts opts;
	struct pl_shim_test *next;
};

struct pl_shim_suite {
	const char *name;
	struct pl_shim_opts opts;
	struct pl_shim_suite *next;
};

#ifdef __cplusplus
extern "C" {
#endif
void pl_shim_register(struct pl_shim_test *t);
void pl_shim_register_suite(struct pl_shim_suite *s);
__attribute__((noreturn, format(printf, 3, 4))) void pl_shim_fail(
    const char *file, int line, const char *fmt, ...);
#ifdef __cplusplus
}
#endif

#define TestSuite(suite, ...)                                                  \
	static struct pl_shim_suite pl_shim_suite_##suite = { #suite,          \
		{ __VA_ARGS__ }, NULL };                                       \
	__attribute__((constructor)) static void pl_shim_suite_reg_##suite(    \
	    void)                                                              \
	{                                                                      \
		pl_shim_register_suite(&pl_shim_suite_##suite);                \
	}

#define Test(suite, name, ...)                                                 \
	static void suite##_##name##_fn(void);                                 \
	static struct pl_shim_test suite##_##name##_desc = { #suite, #name,    \
		suite##_##name##_fn, { __VA_ARGS__ }, NULL };                  \
	__attribute__((constructor)) static void suite##_##name##_reg(void)    \
	{                                                                      \
		pl_shim_register(&suite##_##name##_desc);                      \
	}                                                                      \
	static void suite##_##name##_fn(void)

/* cr_assert(cond) or cr_assert(cond, "format", args...) */
#define cr_assert(cond, ...)                                                   \
	do {                                                                   \
		if (!(cond))                                                   \
			pl_shim_fail(__FILE__, __LINE__,                       \
			    "Assertion failed: " __VA_ARGS__);                 \
	} while (0)

#define cr_assert_fail(...)                                                    \
	pl_shim_fail(__FILE__, __LINE__, "Assertion failed: " __VA_ARGS__)

/* cr_assert_str_eq(a, b): a message of its own is not supported here */
#define cr_assert_str_eq(a, b)                                                 \
	cr_assert(strcmp((a), (b)) == 0, "\"%s\" != \"%s\"", (a), (b))

#endif /* PL_TSAN_CRITERION_H */
