// SPDX-License-Identifier: MIT
//
// The public headers compile as C++11 (-std=c++11 -pedantic -Werror):
// extern "C", no <stdatomic.h>, initializers that C++ accepts; and so does
// <parkinglot.hpp>, whose types link against the shared library.  Prints
// TAP.
#include <parkinglot.h>
#include <parkinglot.hpp>

#include <cstdio>
#include <cstring>

static pl_mutex_t m = PL_MUTEX_INITIALIZER;

static_assert(sizeof(pl_mutex_t) == 1, "pl_mutex_t is one byte");
static pl::mutex cxx_m;
static pl::once_flag cxx_once;

int
main()
{
	pl_mutex_lock(&m);
	bool ok = pl_mutex_is_locked(&m) && !pl_mutex_trylock(&m);
	pl_mutex_unlock(&m);
	ok = ok && !pl_mutex_is_locked(&m) &&
	    std::strcmp(pl_version(), PL_VERSION_STRING) == 0;
	cxx_m.lock();
	ok = ok && !cxx_m.try_lock() &&
	    pl_mutex_is_locked(cxx_m.native_handle());
	cxx_m.unlock();
	int runs = 0;
	pl::call_once(cxx_once, [&runs] { runs++; });
	pl::call_once(cxx_once, [&runs] { runs++; });
	bool got = cxx_m.try_lock_for(std::chrono::milliseconds(1));
	if (got)
		cxx_m.unlock();
	ok = ok && runs == 1 && got;

	std::printf("1..1\n%s 1 - C++11 headers and <parkinglot.hpp>: "
	            "lock/unlock, call_once, version %s\n",
	    ok ? "ok" : "not ok", PL_VERSION_STRING);
	return 0;
}
