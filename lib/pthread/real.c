/* SPDX-License-Identifier: MIT */
/*
 * glibc's own definitions of the functions this library replaces, for
 * the objects glibc serves (dropin.h), and the report of misuse.
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "dropin.h"

/* The versions this glibc's headers bind the condition variable calls
 * to (older compat versions exist: dlsym alone could find one of
 * them). */
static const char *const cond_versions[] = { "GLIBC_2.3.2", "GLIBC_2.17",
	NULL };

void *
pli_real(const char *name)
{
	void *p = NULL;
	if (strncmp(name, "pthread_cond_", 13) == 0)
		for (size_t i = 0; !p && cond_versions[i]; i++)
			p = dlvsym(RTLD_NEXT, name, cond_versions[i]);
	if (!p)
		p = dlsym(RTLD_NEXT, name);
	if (!p)
		pli_dropin_fatal(
		    "libparkinglot-pthread: glibc's %s not found", name);
	return p;
}

void
pli_dropin_fatal(const char *fmt, ...)
{
	char line[512];
	va_list ap;
	va_start(ap, fmt);
	int n = vsnprintf(line, sizeof line - 1, fmt, ap);
	va_end(ap);
	if (n < 0)
		n = 0;
	if ((size_t)n > sizeof line - 2)
		n = (int)sizeof line - 2;
	line[n++] = '\n';
	/* One write: lines of threads that fail at once do not mix. */
	ssize_t w = write(2, line, (size_t)n);
	(void)w;
	abort();
}
