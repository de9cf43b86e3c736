/* SPDX-License-Identifier: MIT */
/*
 * The public headers compile as strict ISO C11 (-std=c11 -pedantic
 * -Werror, no GNU extensions beyond the __atomic builtins) and work from
 * a program linked to the shared library.  Prints TAP.
 */
#include <parkinglot.h>
#include <stdio.h>
#include <string.h>

static pl_mutex_t m = PL_MUTEX_INITIALIZER;

_Static_assert(sizeof(pl_mutex_t) == 1, "pl_mutex_t is one byte");

int
main(void)
{
	int ok;

	pl_mutex_lock(&m);
	ok = pl_mutex_is_locked(&m) && !pl_mutex_trylock(&m);
	pl_mutex_unlock(&m);
	ok = ok && !pl_mutex_is_locked(&m) &&
	    strcmp(pl_version(), PL_VERSION_STRING) == 0;

	printf("1..1\n%s 1 - C11 headers: lock/unlock, version %s\n",
	    ok ? "ok" : "not ok", PL_VERSION_STRING);
	return 0;
}
