/* SPDX-License-Identifier: MIT */
/*
 * Linked into every Criterion suite: gives each test that sets no timeout
 * of its own (neither on the Test nor on its TestSuite) a timeout of 60 s,
 * or PL_TEST_TIMEOUT seconds when that is set in the environment (0: no
 * timeout).  A test that hangs then fails as "timed out" in the TAP report
 * instead of hanging `make check`.
 *
 * Criterion 2.4.1 documents --timeout as such a default, but applies it
 * only as a cap on tests that have a timeout already (Criterion issue
 * 279), so the default is set here, in the runner, before any test starts.
 */
#include <stdlib.h>

#include <criterion/criterion.h>
#include <criterion/hooks.h>
#include <criterion/internal/ordered-set.h>

static double
default_timeout(void)
{
	const char *s = getenv("PL_TEST_TIMEOUT");
	char *end;
	double t;

	if (s == NULL || *s == '\0')
		return 60.0;
	t = strtod(s, &end);
	return (*end == '\0' && t >= 0) ? t : 60.0;
}

ReportHook(PRE_ALL)(struct criterion_test_set *set)
{
	double t = default_timeout();

	FOREACH_SET(struct criterion_suite_set * s, set->suites)
	{
		double suite_timeout =
		    s->suite.data != NULL ? s->suite.data->timeout : 0;

		if (suite_timeout > 0)
			continue;
		FOREACH_SET(struct criterion_test * test, s->tests)
		{
			if (test->data != NULL && test->data->timeout <= 0)
				test->data->timeout = t;
		}
	}
}
