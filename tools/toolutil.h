/* SPDX-License-Identifier: MIT */
/*
 * Small helpers that more than one tool needs, as static inline functions
 * so that each tool stays one program of its own: ending with a message,
 * and reading a number from an option's argument.  The whole argument must be
 * the number (no empty argument, nothing after it), it must fit its type, and
 * it must lie in the given range; otherwise the helper returns false and the
 * tool says so in its own words.
 */
#ifndef PL_TOOLUTIL_H
#define PL_TOOLUTIL_H

#include <errno.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>

/* head, the message, tail on stderr; then exit(status). */
static inline void __attribute__((noreturn)) tool_vexit(
    int status, const char *head, const char *tail, const char *fmt, va_list ap)
{
	fputs(head, stderr);
	vfprintf(stderr, fmt, ap);
	fputs(tail, stderr);
	exit(status);
}

/* A decimal integer from min to max, into *v. */
static inline bool
tool_parse_long(const char *s, long min, long max, long *v)
{
	char *end;
	errno = 0;
	long x = strtol(s, &end, 10);
	if (*s == '\0' || *end != '\0' || errno || x < min || x > max)
		return false;
	*v = x;
	return true;
}

/* A floating-point number from min to max (so never a NaN), into *v. */
static inline bool
tool_parse_double(const char *s, double min, double max, double *v)
{
	char *end;
	errno = 0;
	double x = strtod(s, &end);
	if (*s == '\0' || *end != '\0' || errno || !(x >= min && x <= max))
		return false;
	*v = x;
	return true;
}

#endif
