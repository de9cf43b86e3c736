// SPDX-License-Identifier: MIT
//
// The public headers compile as C++11 (-std=c++11 -Werror): extern "C",
// no <stdatomic.h>, initializers that C++ accepts.  Prints TAP.
#include <parkinglot.h>

#include <cstdio>
#include <cstring>

static pl_mutex_t m = PL_MUTEX_INITIALIZER;

static_assert(sizeof(pl_mutex_t) == 1, "pl_mutex_t is one byte");

int
main()
{
	pl_mutex_lock(&m);
	bool ok = pl_mutex_is_locked(&m) && !pl_mutex_trylock(&m);
	pl_mutex_unlock(&m);
	ok = ok && !pl_mutex_is_locked(&m) &&
	    std::strcmp(pl_version(), PL_VERSION_STRING) == 0;

	std::printf("1..1\n%s 1 - C++11 headers: lock/unlock, version %s\n",
	    ok ? "ok" : "not ok", PL_VERSION_STRING);
	return 0;
}
