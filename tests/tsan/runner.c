/* SPDX-License-Identifier: MIT */
/*
 * The runner of the ThreadSanitizer stand-in for Criterion (see
 * criterion/criterion.h): runs every registered test in a forked child,
 * kills it after its timeout, and prints TAP on stdout.  Exit status:
 * 0 when every test passed.  Accepts and ignores Criterion's --tap=FILE.
 */
#define _GNU_SOURCE
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <criterion/criterion.h>

static struct pl_shim_test *tests, **tests_tail = &tests;
static struct pl_shim_suite *suites;
static size_t ntests;

void
pl_shim_register(struct pl_shim_test *t)
{
	/* Constructors run in definition order: keep it. */
	t->next = NULL;
	*tests_tail = t;
	tests_tail = &t->next;
	ntests++;
}

void
pl_shim_register_suite(struct pl_shim_suite *s)
{
	s->next = suites;
	suites = s;
}

void
pl_shim_fail(const char *file, int line, const char *fmt, ...)
{
	va_list ap;
	fprintf(stderr, "%s:%d: ", file, line);
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fputc('\n', stderr);
	exit(1);
}

static double
timeout_of(const struct pl_shim_test *t)
{
	if (t->opts.timeout > 0)
		return t->opts.timeout;
	for (struct pl_shim_suite *s = suites; s; s = s->next)
		if (strcmp(s->name, t->suite) == 0 && s->opts.timeout > 0)
			return s->opts.timeout;
	const char *e = getenv("PL_TEST_TIMEOUT");
	return e && atof(e) > 0 ? atof(e) : 60.0;
}

/* Run one test in a child; returns a description of the failure or NULL. */
static const char *
run(const struct pl_shim_test *t, double *secs)
{
	static char why[64];
	struct timespec a, b;
	clock_gettime(CLOCK_MONOTONIC, &a);
	fflush(NULL);
	pid_t pid = fork();
	if (pid < 0)
		return "fork failed";
	if (pid == 0) {
		/* The default action of SIGALRM ends a test that hangs. */
		alarm((unsigned)(timeout_of(t) + 0.999));
		t->fn();
		exit(0); /* exit, not _exit: TSan reports at exit */
	}
	int status;
	while (waitpid(pid, &status, 0) < 0)
		;
	clock_gettime(CLOCK_MONOTONIC, &b);
	*secs = (double)(b.tv_sec - a.tv_sec) +
	    (double)(b.tv_nsec - a.tv_nsec) / 1e9;
	if (WIFEXITED(status) && WEXITSTATUS(status) == 0)
		return NULL;
	if (WIFSIGNALED(status) && WTERMSIG(status) == SIGALRM)
		return "timed out";
	if (WIFSIGNALED(status))
		snprintf(
		    why, sizeof why, "killed by signal %d", WTERMSIG(status));
	else
		snprintf(
		    why, sizeof why, "exit status %d", WEXITSTATUS(status));
	return why;
}

int
main(int argc, char **argv)
{
	const char *filter = NULL;
	for (int i = 1; i < argc; i++)
		if (strncmp(argv[i], "--filter=", 9) == 0)
			filter = argv[i] + 9;
	setvbuf(stdout, NULL, _IOLBF, 0);
	printf("1..%zu\n", ntests);
	int failed = 0;
	size_t n = 0;
	for (struct pl_shim_test *t = tests; t; t = t->next) {
		char full[256];
		snprintf(full, sizeof full, "%s::%s", t->suite, t->name);
		n++;
		if (filter && !strstr(full, filter)) {
			printf("ok %zu - %s # SKIP filtered out\n", n, full);
			continue;
		}
		double secs = 0;
		const char *why = run(t, &secs);
		if (why) {
			failed++;
			printf("not ok %zu - %s (%.2fs): %s\n", n, full, secs,
			    why);
		} else {
			printf("ok %zu - %s (%.2fs)\n", n, full, secs);
		}
	}
	return failed != 0;
}
