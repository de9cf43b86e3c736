// SPDX-License-Identifier: MIT
//
// The public headers compile as C++11 (-std=c++11 -pedantic -Werror):
// extern "C", no <stdatomic.h>, initializers that C++ accepts; and so does
// <parkinglot.hpp>, whose types link against the shared library.  Prints
// TAP.
//
// With -DHEADERS_CXX_HPP_ONLY, <parkinglot.hpp> alone, every call of its
// types instantiated: what Makefile.am compiles (without linking) with
// -Wconversion -Wold-style-cast -Wshadow, with $(CXX) and with clang++
// where there is one, the warnings that pl_cxx(3) says the header is
// clean of (clang's -Wold-style-cast sees the C headers' casts).
#ifndef HEADERS_CXX_HPP_ONLY
#include <parkinglot.h>
#endif
#include <parkinglot.hpp>

#include <chrono>
#include <cstdio>
#include <cstring>
#include <mutex>

namespace
{

// A clock of the program's own, whose deadlines the header converts.
struct own_clock {
	typedef std::chrono::nanoseconds duration;
	typedef duration::rep rep;
	typedef duration::period period;
	typedef std::chrono::time_point<own_clock> time_point;
	static constexpr bool is_steady = true;

	static time_point
	now() noexcept
	{
		return time_point(std::chrono::duration_cast<duration>(
		    std::chrono::steady_clock::now().time_since_epoch()));
	}
};
static_assert(own_clock::is_steady, "own_clock is steady");

template <class L>
bool
unlocked(L &l, bool got)
{
	if (got)
		l.unlock();
	return got;
}

// Each timed call of an exclusive lock, on a free lock: all succeed.
template <class L>
bool
timed_calls(L &l)
{
	using namespace std::chrono;
	bool ok = unlocked(l, l.try_lock());
	ok = unlocked(l, l.try_lock_for(milliseconds(1))) && ok;
	ok = unlocked(l, l.try_lock_for(duration<double>(1e-3))) && ok;
	ok = unlocked(l, l.try_lock_until(steady_clock::now())) && ok;
	ok = unlocked(l, l.try_lock_until(system_clock::now())) && ok;
	ok = unlocked(l, l.try_lock_until(own_clock::now())) && ok;
	ok = unlocked(l, l.try_lock_until(own_clock::time_point::min())) && ok;
	l.lock();
	l.unlock();
	return ok;
}

} // namespace

// Every call of every type of <parkinglot.hpp> (not static: also
// compiled where nothing calls it).
bool hpp_calls();

bool
hpp_calls()
{
	using namespace std::chrono;
	static pl::mutex m;
	static pl::recursive_mutex r;
	static pl::shared_mutex s;
	static pl::condition_variable cv;
	static pl::once_flag once;

	bool ok = timed_calls(m) && timed_calls(r) && timed_calls(s);
	m.lock();
	m.unlock_fair();
	ok = ok && m.native_handle() != nullptr;

	r.lock();
	ok = unlocked(r, r.try_lock()) && ok;
	r.unlock();

	s.lock_shared();
	ok = s.try_lock_shared() && ok;
	s.unlock_shared();
	ok = s.try_lock_shared_for(milliseconds(1)) && ok;
	s.unlock_shared();
	ok = s.try_lock_shared_until(steady_clock::now()) && ok;
	s.unlock_shared();
	ok = s.try_lock_shared_until(own_clock::now()) && ok;
	s.unlock_shared();
	s.unlock_shared();

	{
		std::unique_lock<pl::mutex> lk(m);
		auto yes = [] { return true; };
		cv.notify_one();
		cv.notify_all();
		cv.wait(lk, yes);
		ok = cv.wait_for(lk, nanoseconds(0)) ==
		        std::cv_status::timeout &&
		    ok;
		ok = cv.wait_until(lk, steady_clock::now()) ==
		        std::cv_status::timeout &&
		    ok;
		ok = cv.wait_until(lk, system_clock::now()) ==
		        std::cv_status::timeout &&
		    ok;
		ok = cv.wait_until(lk, own_clock::now()) ==
		        std::cv_status::timeout &&
		    ok;
		ok = cv.wait_for(lk, milliseconds(1), yes) && ok;
		ok = cv.wait_until(lk, own_clock::now(), yes) && ok;
		ok = lk.owns_lock() && cv.native_handle() != nullptr && ok;
	}

	int runs = 0;
	pl::call_once(
	    once, [&runs](int n) { runs += n; }, 1);
	pl::call_once(
	    once, [&runs](int n) { runs += n; }, 1);
	return ok && runs == 1;
}

#ifndef HEADERS_CXX_HPP_ONLY
static pl_mutex_t c_m = PL_MUTEX_INITIALIZER;

static_assert(sizeof(pl_mutex_t) == 1, "pl_mutex_t is one byte");
static pl::mutex cxx_m;
static pl::once_flag cxx_once;

int
main()
{
	pl_mutex_lock(&c_m);
	bool ok = pl_mutex_is_locked(&c_m) && !pl_mutex_trylock(&c_m);
	pl_mutex_unlock(&c_m);
	ok = ok && !pl_mutex_is_locked(&c_m) &&
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
	ok = ok && runs == 1 && got && hpp_calls();

	std::printf("1..1\n%s 1 - C++11 headers and <parkinglot.hpp>: "
	            "lock/unlock, call_once, version %s\n",
	    ok ? "ok" : "not ok", PL_VERSION_STRING);
	return 0;
}
#endif
