// SPDX-License-Identifier: MIT
//
// The C++ types of <parkinglot.hpp> with the standard library's lock
// machinery.  Built three times, as tests/test_cxx11, test_cxx17 and
// test_cxx20 (-std=c++11, c++17, c++20, -Wall -Wextra -Werror), each with
// the tests that its standard can express: std::shared_lock from C++14,
// std::scoped_lock from C++17, constinit from C++20.
//
//   types_*            sizes, constexpr construction, no copy or move,
//                      noexcept, native_handle() and the C calls
//   *_std_lock_types   std::lock_guard, std::unique_lock (every
//                      constructor and timed call), std::shared_lock,
//                      std::scoped_lock over several pl locks
//   std_lock_*, std_try_lock_*, scoped_lock_*
//                      std::lock and std::scoped_lock taking two (and
//                      three) pl locks in opposite orders in two threads,
//                      many times: no deadlock; std::try_lock's result
//   *_timed            every timed call of each lock with steady_clock,
//                      system_clock and clocks of the test's own (one
//                      slower than steady_clock, and two whose min() and
//                      max() overflow a plain tp - now): a deadline that
//                      passes returns false, never early; a free lock is
//                      taken whatever the deadline; a waiter with a far
//                      deadline (also "never") gets the lock when freed
//   recursive_mutex_*  recursion, the count's overflow (std::system_error),
//                      and unlock by a thread that does not own it (abort,
//                      in a forked child)
//   cv_*, cv_any_*     pl::condition_variable and std::condition_variable_any
//                      over pl locks: ping-pong, a bounded queue, a
//                      broadcast, timeouts on both clocks (cv_status and
//                      predicate forms), the extreme time points of clocks
//                      of the test's own, a notification before the
//                      deadline returning no_timeout, and a wait without
//                      the lock (abort)
//   call_once_*        arguments and INVOKE, an exception leaving the flag
//                      unset, exactly one returning call under contention,
//                      a recursive call (abort)
//   conform_*          the bodies of tests/conform.h that the C locks pass
//                      (exclusion, mixed, trylock, timedlock,
//                      timed_contended, no_lost_wakeup, fairness, handoff)
//                      over pl::mutex, pl::recursive_mutex and
//                      pl::shared_mutex's writers, through the member
//                      functions
//   checked_*          in the checked build (test_cxx20, built with
//                      -DPL_CHECKED; test_cxx11 and 17 run the plain
//                      inline paths):
//                      the deadlock detector sees each type's lock() as
//                      a blocking lock, and reports an inversion taken
//                      through std::lock_guard
//
// Threads never call cr_assert: they count what they saw and the test's
// thread checks.  Every wait is bounded: threads that do not finish in
// time fail the test and are left behind.  No sleep synchronizes: the
// waits poll a condition (a thread parked, a flag set).
//
// test_cxx20 is a checked build, as a program that looks for lock-order
// inversions is (<parkinglot/deadlock.h>): the hooks cost a load each
// while the detector is off, which it is except in the checked_* tests.
#include <parkinglot.hpp>

#include "testutil.h"

#ifdef PL_CHECKED
// conform.h passes a bit lock's three arguments through one macro,
// which the checked build's pl_bitlock*_timedlock macros cannot take:
// its bit locks (not tested here) call the functions themselves.
#undef pl_bitlock_timedlock
#undef pl_bitlock8_timedlock
#endif
#define CONFORM_FAIL(...) cr_assert_fail(__VA_ARGS__)
#include "conform.h"

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstring>
#include <memory>
#include <mutex>
#include <stdexcept>
#include <string>
#include <system_error>
#include <thread>
#include <type_traits>
#include <vector>
#if __cplusplus >= 201402L
#include <shared_mutex>
#endif

TU_CRITERION_MAIN_SERIAL()

TestSuite(cxx, .timeout = 60);

using std::chrono::duration;
using std::chrono::duration_cast;
using std::chrono::hours;
using std::chrono::microseconds;
using std::chrono::milliseconds;
using std::chrono::nanoseconds;
using std::chrono::seconds;
using std::chrono::steady_clock;
using std::chrono::system_clock;
using std::chrono::time_point;

namespace
{

// ---------------------------------------------------------------------
// Helpers.

// The bound of a wait that only a bug makes long.
const steady_clock::duration wait_limit = seconds(10);
// A timeout that is meant to pass.
const milliseconds short_timeout(20);

template <class Pred>
bool
await(Pred pred, steady_clock::duration limit = wait_limit)
{
	steady_clock::time_point end = steady_clock::now() + limit;
	while (!pred()) {
		if (steady_clock::now() >= end)
			return pred();
		tu_poll_pause();
	}
	return true;
}

long long
ms_since(steady_clock::time_point t0)
{
	return (long long)duration_cast<milliseconds>(steady_clock::now() - t0)
	    .count();
}

// Threads that count themselves done.  finish() joins them if they all
// are within the limit; otherwise it detaches them (the failing test
// ends, leaving them behind) and returns false.  The count is on the
// heap: a thread left behind does not write to a frame that is gone.
class team
{
public:
	team() : done_(std::make_shared<std::atomic<size_t>>(0))
	{
	}
	team(const team &) = delete;
	team &operator=(const team &) = delete;
	~team()
	{
		for (auto &t : threads_)
			t.detach();
	}

	template <class F>
	void
	spawn(F f)
	{
		std::shared_ptr<std::atomic<size_t>> done = done_;
		threads_.emplace_back([done, f]() mutable {
			f();
			done->fetch_add(1);
		});
	}

	bool
	finish(steady_clock::duration limit = seconds(40))
	{
		size_t n = threads_.size();
		bool ok = await([&] { return done_->load() == n; }, limit);
		for (auto &t : threads_)
			if (ok)
				t.join();
			else
				t.detach();
		threads_.clear();
		return ok;
	}

private:
	std::vector<std::thread> threads_;
	std::shared_ptr<std::atomic<size_t>> done_;
};

// Whether another thread's try_lock succeeds now (it unlocks again).
template <class L>
bool
other_thread_can_lock(L &l)
{
	bool ok = false;
	std::thread t([&] {
		ok = l.try_lock();
		if (ok)
			l.unlock();
	});
	t.join();
	return ok;
}

#if __cplusplus >= 201402L
template <class L>
bool
other_thread_can_lock_shared(L &l)
{
	bool ok = false;
	std::thread t([&] {
		ok = l.try_lock_shared();
		if (ok)
			l.unlock_shared();
	});
	t.join();
	return ok;
}
#endif

// A clock of the test's own, which the header must convert:
// steady_clock's time in microseconds, 1000 hours on.
struct offset_clock {
	typedef microseconds duration;
	typedef duration::rep rep;
	typedef duration::period period;
	typedef std::chrono::time_point<offset_clock> time_point;
	static constexpr bool is_steady = true;

	static time_point
	now() noexcept
	{
		return time_point(duration_cast<microseconds>(
		                      steady_clock::now().time_since_epoch()) +
		    hours(1000));
	}
};

// One at half steady_clock's rate: a wait on steady_clock for what is
// left ends before its deadline on this clock, so the header must look
// at this clock again.
struct slow_clock {
	typedef microseconds duration;
	typedef duration::rep rep;
	typedef duration::period period;
	typedef std::chrono::time_point<slow_clock> time_point;
	static constexpr bool is_steady = true;

	static time_point
	now() noexcept
	{
		return time_point(duration_cast<microseconds>(
		                      steady_clock::now().time_since_epoch()) /
		    2);
	}
};

// Two clocks whose extreme time points overflow a plain tp - now: one
// that counts nanoseconds since boot (steady_clock's time), whose min() is
// long past, and one 2^62 ns behind it, whose time is negative, so that
// its max() is further away than any count of nanoseconds.
struct boot_clock {
	typedef nanoseconds duration;
	typedef duration::rep rep;
	typedef duration::period period;
	typedef std::chrono::time_point<boot_clock> time_point;
	static constexpr bool is_steady = true;

	static time_point
	now() noexcept
	{
		return time_point(duration_cast<nanoseconds>(
		    steady_clock::now().time_since_epoch()));
	}
};

struct negative_clock {
	typedef nanoseconds duration;
	typedef duration::rep rep;
	typedef duration::period period;
	typedef std::chrono::time_point<negative_clock> time_point;
	static constexpr bool is_steady = true;

	static time_point
	now() noexcept
	{
		return time_point(boot_clock::now().time_since_epoch() -
		    nanoseconds(INT64_C(1) << 62));
	}
};

// (Which clang's -Wunused-const-variable wants used.)
static_assert(offset_clock::is_steady && slow_clock::is_steady &&
        boot_clock::is_steady && negative_clock::is_steady,
    "the test's clocks are steady");

// The operations of one side of a lock, for the tests that run on both.
struct excl {
	static const char *
	name()
	{
		return "exclusive";
	}
	template <class L>
	static void
	lock(L &l)
	{
		l.lock();
	}
	template <class L>
	static bool
	try_lock(L &l)
	{
		return l.try_lock();
	}
	template <class L, class D>
	static bool
	try_for(L &l, const D &d)
	{
		return l.try_lock_for(d);
	}
	template <class L, class T>
	static bool
	try_until(L &l, const T &t)
	{
		return l.try_lock_until(t);
	}
	template <class L>
	static void
	unlock(L &l)
	{
		l.unlock();
	}
};

struct shared_side {
	static const char *
	name()
	{
		return "shared";
	}
	template <class L>
	static void
	lock(L &l)
	{
		l.lock_shared();
	}
	template <class L>
	static bool
	try_lock(L &l)
	{
		return l.try_lock_shared();
	}
	template <class L, class D>
	static bool
	try_for(L &l, const D &d)
	{
		return l.try_lock_shared_for(d);
	}
	template <class L, class T>
	static bool
	try_until(L &l, const T &t)
	{
		return l.try_lock_shared_until(t);
	}
	template <class L>
	static void
	unlock(L &l)
	{
		l.unlock_shared();
	}
};

// Where the waiters of each lock park, to see that one is blocked.
const void *
park_addr(pl::mutex &m, excl)
{
	return m.native_handle();
}
const void *
park_addr(pl::recursive_mutex &m, excl)
{
	return &m.native_handle()->lock;
}
const void *
park_addr(pl::shared_mutex &m, excl)
{
	return reinterpret_cast<const char *>(m.native_handle()) + 1;
}
const void *
park_addr(pl::shared_mutex &m, shared_side)
{
	return m.native_handle();
}

// Whether a lock reads as held (by anybody), from its C object.
bool
is_held(pl::mutex &m)
{
	return pl_mutex_is_locked(m.native_handle());
}
bool
is_held(pl::recursive_mutex &m)
{
	return pl_mutex_is_locked(&m.native_handle()->lock);
}
bool
is_held(pl::shared_mutex &m)
{
	return __atomic_load_n(&m.native_handle()->state, __ATOMIC_RELAXED) !=
	    0;
}

// A thread that holds l (a static lock) exclusively until release().
// Its flags are on the heap, as the team's count.
template <class L> class holder
{
public:
	explicit holder(L &l) : f_(std::make_shared<flags>())
	{
		std::shared_ptr<flags> f = f_;
		L *lp = &l;
		t_.spawn([f, lp] {
			lp->lock();
			f->held = true;
			await([f] { return f->release.load(); }, seconds(50));
			lp->unlock();
		});
	}
	bool
	holding()
	{
		std::shared_ptr<flags> f = f_;
		return await([f] { return f->held.load(); });
	}
	bool
	release()
	{
		f_->release = true;
		return t_.finish();
	}

private:
	struct flags {
		std::atomic<bool> held, release;
		flags() : held(false), release(false)
		{
		}
	};
	std::shared_ptr<flags> f_;
	team t_;
};

// ---------------------------------------------------------------------
// The types themselves.

static_assert(sizeof(pl::mutex) == 1 && alignof(pl::mutex) == 1, "");
static_assert(sizeof(pl::condition_variable) == 1, "");
static_assert(sizeof(pl::once_flag) == 1, "");
static_assert(sizeof(pl::shared_mutex) == sizeof(void *), "");
static_assert(sizeof(pl::recursive_mutex) == sizeof(pl_rmutex_t), "");
static_assert(std::is_same<pl::timed_mutex, pl::mutex>::value &&
        std::is_same<pl::recursive_timed_mutex, pl::recursive_mutex>::value &&
        std::is_same<pl::shared_timed_mutex, pl::shared_mutex>::value,
    "");

template <class T>
constexpr bool
fixed_in_place()
{
	return std::is_nothrow_default_constructible<T>::value &&
	    std::is_trivially_destructible<T>::value &&
	    !std::is_copy_constructible<T>::value &&
	    !std::is_move_constructible<T>::value &&
	    !std::is_copy_assignable<T>::value &&
	    !std::is_move_assignable<T>::value &&
	    std::is_standard_layout<T>::value;
}
static_assert(fixed_in_place<pl::mutex>(), "pl::mutex");
static_assert(fixed_in_place<pl::recursive_mutex>(), "pl::recursive_mutex");
static_assert(fixed_in_place<pl::shared_mutex>(), "pl::shared_mutex");
static_assert(
    fixed_in_place<pl::condition_variable>(), "pl::condition_variable");
static_assert(fixed_in_place<pl::once_flag>(), "pl::once_flag");

// The constructors are constexpr: constant expressions can make them.
constexpr pl::mutex constexpr_mutex;
constexpr pl::recursive_mutex constexpr_rmutex;
constexpr pl::shared_mutex constexpr_shared;
constexpr pl::condition_variable constexpr_cv;
constexpr pl::once_flag constexpr_once;
static_assert(sizeof(constexpr_mutex) + sizeof(constexpr_rmutex) +
            sizeof(constexpr_shared) + sizeof(constexpr_cv) +
            sizeof(constexpr_once) >
        0,
    "");
#if __cplusplus >= 202002L
constinit pl::mutex constinit_mutex;
constinit pl::recursive_mutex constinit_rmutex;
constinit pl::shared_mutex constinit_shared;
constinit pl::condition_variable constinit_cv;
constinit pl::once_flag constinit_once;
#endif

// noexcept where the standard's types are (and where a call cannot
// fail); recursive_mutex::lock may throw (the count's overflow).
#define m_ref() std::declval<pl::mutex &>()
#define r_ref() std::declval<pl::recursive_mutex &>()
#define s_ref() std::declval<pl::shared_mutex &>()
#define c_ref() std::declval<pl::condition_variable &>()
static_assert(
    noexcept(m_ref().lock()) &&noexcept(m_ref().try_lock()) &&noexcept(
        m_ref().unlock()) &&noexcept(m_ref().native_handle()),
    "");
static_assert(!noexcept(r_ref().lock()) &&noexcept(
                  r_ref().try_lock()) &&noexcept(r_ref().unlock()),
    "");
static_assert(
    noexcept(s_ref().lock()) &&noexcept(s_ref().try_lock()) &&noexcept(
        s_ref().unlock()) &&noexcept(s_ref().lock_shared())
        &&noexcept(s_ref().try_lock_shared()) &&noexcept(
            s_ref().unlock_shared()),
    "");
static_assert(
    noexcept(c_ref().notify_one()) &&noexcept(c_ref().notify_all()), "");
static_assert(
    std::is_same<decltype(m_ref().native_handle()), pl_mutex_t *>::value &&
        std::is_same<decltype(r_ref().native_handle()), pl_rmutex_t *>::value &&
        std::is_same<decltype(s_ref().native_handle()), pl_rwlock_t *>::value &&
        std::is_same<decltype(c_ref().native_handle()), pl_cond_t *>::value,
    "");
#undef m_ref
#undef r_ref
#undef s_ref
#undef c_ref

pl::mutex static_mutex;
pl::recursive_mutex static_rmutex;
pl::shared_mutex static_shared;
pl::condition_variable static_cv;
pl::once_flag static_once;

template <class T>
bool
all_zero(const T &x)
{
	const unsigned char *p = reinterpret_cast<const unsigned char *>(&x);
	for (size_t i = 0; i < sizeof x; i++)
		if (p[i] != 0)
			return false;
	return true;
}

} // namespace

// The conversions of deadlines for the C calls (the header's details):
// rounded up to nanoseconds, "never" past what int64_t nanoseconds hold,
// the epoch for what has passed; and the clocks are the C API's.
Test(cxx, deadline_conversions)
{
	using pl::detail::deadline;
	using pl::detail::deadline_after;
	using pl::detail::deadline_since_epoch;
	using pl::detail::duration_ns;
	typedef std::chrono::duration<long long, std::pico> picoseconds;
	int64_t ns = -1;
	cr_assert(duration_ns(nanoseconds(7), ns) && ns == 7);
	cr_assert(duration_ns(hours(1), ns) && ns == 3600000000000LL);
	cr_assert(duration_ns(picoseconds(1000), ns) && ns == 1);
	cr_assert(duration_ns(picoseconds(1001), ns) && ns == 2,
	    "1001 ps: %lld ns, not rounded up", (long long)ns);
	cr_assert(duration_ns(duration<double>(1.5e-9), ns) && ns == 2);
	cr_assert(duration_ns(duration<double, std::milli>(2.0), ns) &&
	    ns == 2000000);
	cr_assert(duration_ns(seconds(9000000000LL), ns) &&
	    ns == 9000000000000000000LL);
	cr_assert(!duration_ns(seconds(9300000000LL), ns));
	cr_assert(!duration_ns(hours::max(), ns));
	cr_assert(!duration_ns(nanoseconds::max(), ns));
	cr_assert(!duration_ns(duration<double>(1e30), ns));
	cr_assert(!duration_ns(duration<double>(__builtin_nan("")), ns));
	cr_assert(!duration_ns(duration<double>(__builtin_inf()), ns));

	deadline d = deadline_since_epoch(nanoseconds(1234567890123456789LL));
	cr_assert(!d.forever && d.get() == &d.ts && d.ts.tv_sec == 1234567890 &&
	    d.ts.tv_nsec == 123456789);
	d = deadline_since_epoch(nanoseconds(0));
	cr_assert(!d.forever && d.ts.tv_sec == 0 && d.ts.tv_nsec == 0);
	d = deadline_since_epoch(-nanoseconds(5));
	cr_assert(!d.forever && d.ts.tv_sec == 0 && d.ts.tv_nsec == 0);
	d = deadline_since_epoch(hours::max());
	cr_assert(d.forever && d.get() == nullptr);
	d = deadline_since_epoch(duration<double>(2.25));
	cr_assert(d.ts.tv_sec == 2 && d.ts.tv_nsec == 250000000);

	int64_t before = tu_now_ns();
	d = deadline_after(milliseconds(100));
	int64_t after = tu_now_ns();
	int64_t at = tu_ts_to_ns(&d.ts);
	cr_assert(!d.forever && at >= before + 100 * TU_MS &&
	    at <= after + 100 * TU_MS);
	d = deadline_after(-seconds(1));
	cr_assert(!d.forever && d.ts.tv_sec == 0 && d.ts.tv_nsec == 0);
	d = deadline_after(nanoseconds(0));
	cr_assert(!d.forever && d.ts.tv_sec == 0 && d.ts.tv_nsec == 0);
	d = deadline_after(hours::max());
	cr_assert(d.forever);

	// steady_clock reads CLOCK_MONOTONIC and system_clock
	// CLOCK_REALTIME, which the header gives their time points to.
	struct timespec mono, real;
	clock_gettime(CLOCK_MONOTONIC, &mono);
	clock_gettime(CLOCK_REALTIME, &real);
	int64_t steady_ns =
	    duration_cast<nanoseconds>(steady_clock::now().time_since_epoch())
	        .count();
	int64_t system_ns =
	    duration_cast<nanoseconds>(system_clock::now().time_since_epoch())
	        .count();
	cr_assert(steady_ns >= tu_ts_to_ns(&mono) &&
	    steady_ns - tu_ts_to_ns(&mono) < TU_SEC);
	cr_assert(system_ns >= tu_ts_to_ns(&real) - TU_SEC &&
	    system_ns - tu_ts_to_ns(&real) < TU_SEC);
}

Test(cxx, types_are_their_c_objects)
{
	// Static objects are all zero: the C types' unlocked state.
	cr_assert(all_zero(static_mutex) && all_zero(static_rmutex) &&
	    all_zero(static_shared) && all_zero(static_cv) &&
	    all_zero(static_once));
	// native_handle() is the object itself.
	cr_assert(
	    (void *)static_mutex.native_handle() == (void *)&static_mutex);
	cr_assert(
	    (void *)static_rmutex.native_handle() == (void *)&static_rmutex);
	cr_assert(
	    (void *)static_shared.native_handle() == (void *)&static_shared);
	cr_assert((void *)static_cv.native_handle() == (void *)&static_cv);
	cr_assert((void *)static_once.native_handle() == (void *)&static_once);

	// The C calls and the members act on the same lock.
	pl::mutex &m = static_mutex;
	m.lock();
	cr_assert(m.native_handle()->state == PL_MUTEX_LOCKED);
	cr_assert(!pl_mutex_trylock(m.native_handle()));
	pl_mutex_unlock(m.native_handle());
	cr_assert(m.try_lock());
	m.unlock();
	cr_assert(m.native_handle()->state == 0);

	pl::recursive_mutex &r = static_rmutex;
	r.lock();
	pl_rmutex_lock(r.native_handle());
	cr_assert(r.native_handle()->count == 2);
	cr_assert(pl_rmutex_is_owned(r.native_handle()));
	r.unlock();
	cr_assert(pl_rmutex_unlock(r.native_handle()) == 0);
	cr_assert(!pl_rmutex_is_owned(r.native_handle()) && all_zero(r));

	pl::shared_mutex &s = static_shared;
	s.lock_shared();
	cr_assert(s.native_handle()->state == PL_RWLOCK_ONE_READER);
	cr_assert(pl_rwlock_tryrdlock(s.native_handle()));
	cr_assert(!pl_rwlock_trywrlock(s.native_handle()));
	pl_rwlock_rdunlock(s.native_handle());
	s.unlock_shared();
	s.lock();
	cr_assert(s.native_handle()->state == PL_RWLOCK_WRITER);
	s.unlock();
	cr_assert(all_zero(s));

	int runs = 0;
	pl::call_once(static_once, [&] { runs++; });
	cr_assert(static_once.native_handle()->state == PL_ONCE_DONE);
	pl::call_once(static_once, [&] { runs++; });
	cr_assert(runs == 1);

#if __cplusplus >= 202002L
	cr_assert(all_zero(constinit_mutex) && all_zero(constinit_rmutex) &&
	    all_zero(constinit_shared) && all_zero(constinit_cv) &&
	    all_zero(constinit_once));
	constinit_mutex.lock();
	constinit_mutex.unlock();
#endif
}

// ---------------------------------------------------------------------
// The standard's lock types.

namespace
{

// lock_guard and unique_lock over l: each constructor, each member, and
// each timed member with both clocks, free and held by another thread.
template <class L>
void
check_guards(L &l, const char *name)
{
	{
		std::lock_guard<L> g(l);
		cr_assert(is_held(l) && !other_thread_can_lock(l),
		    "%s: lock_guard did not lock", name);
	}
	cr_assert(!is_held(l), "%s: lock_guard did not unlock", name);
	l.lock();
	{
		std::lock_guard<L> g(l, std::adopt_lock);
	}
	cr_assert(!is_held(l), "%s: lock_guard(adopt_lock)", name);

	{
		std::unique_lock<L> u(l, std::defer_lock);
		cr_assert(
		    !u.owns_lock() && !is_held(l), "%s: defer_lock", name);
		u.lock();
		cr_assert(u.owns_lock() && !other_thread_can_lock(l));
		u.unlock();
		cr_assert(!u.owns_lock() && !is_held(l));
		cr_assert(u.try_lock() && u.owns_lock() && is_held(l));
		u.unlock();
		cr_assert(u.try_lock_for(milliseconds(10)) && is_held(l));
		u.unlock();
		cr_assert(u.try_lock_until(steady_clock::now() + seconds(1)));
		u.unlock();
		cr_assert(u.try_lock_until(system_clock::now() + seconds(1)));
		u.unlock();
		cr_assert(u.try_lock_until(offset_clock::now() + seconds(1)));
		L *released = u.release();
		cr_assert(released == &l && is_held(l));
		l.unlock();
	}
	cr_assert(!is_held(l), "%s: unique_lock left it held", name);
	{
		std::unique_lock<L> u(l, std::try_to_lock);
		cr_assert(
		    u.owns_lock(), "%s: try_to_lock of a free lock", name);
		std::unique_lock<L> moved(std::move(u));
		cr_assert(!u.owns_lock() && moved.owns_lock() && is_held(l));
	}
	cr_assert(!is_held(l));
	{
		std::unique_lock<L> u(l, milliseconds(10));
		cr_assert(u.owns_lock(), "%s: unique_lock(l, 10 ms)", name);
	}
	{
		std::unique_lock<L> u(l, system_clock::now() + seconds(1));
		cr_assert(u.owns_lock(), "%s: unique_lock(l, system)", name);
	}

	// Held by another thread: none of them gets it.
	holder<L> h(l);
	cr_assert(h.holding());
	{
		std::unique_lock<L> u(l, std::try_to_lock);
		cr_assert(
		    !u.owns_lock(), "%s: try_to_lock of a held lock", name);
		steady_clock::time_point t0 = steady_clock::now();
		std::unique_lock<L> v(l, short_timeout);
		cr_assert(
		    !v.owns_lock() && steady_clock::now() - t0 >= short_timeout,
		    "%s: unique_lock(l, 20 ms) of a held lock", name);
		system_clock::time_point d =
		    system_clock::now() + short_timeout;
		std::unique_lock<L> w(l, d);
		cr_assert(!w.owns_lock() && system_clock::now() >= d,
		    "%s: unique_lock(l, system_clock) of a held lock", name);
		cr_assert(!u.try_lock() && !u.owns_lock());
	}
	cr_assert(h.release(), "%s: the holder did not finish", name);
	cr_assert(!is_held(l));
}

} // namespace

Test(cxx, mutex_std_lock_types)
{
	static pl::mutex m;
	check_guards(m, "pl::mutex");
}

Test(cxx, recursive_mutex_std_lock_types)
{
	static pl::recursive_mutex r;
	check_guards(r, "pl::recursive_mutex");
	// And nested: the owner takes it again through each type.
	{
		std::lock_guard<pl::recursive_mutex> a(r);
		std::unique_lock<pl::recursive_mutex> b(r);
		std::unique_lock<pl::recursive_mutex> c(r, std::try_to_lock);
		std::unique_lock<pl::recursive_mutex> d(r, milliseconds(1));
		cr_assert(b.owns_lock() && c.owns_lock() && d.owns_lock());
		cr_assert(r.native_handle()->count == 4);
		cr_assert(!other_thread_can_lock(r));
	}
	cr_assert(!is_held(r) && all_zero(r));
}

Test(cxx, shared_mutex_std_lock_types)
{
	static pl::shared_mutex s;
	check_guards(s, "pl::shared_mutex");
#if __cplusplus >= 201402L
	{
		std::shared_lock<pl::shared_mutex> a(s);
		std::shared_lock<pl::shared_mutex> b(s, std::try_to_lock);
		std::shared_lock<pl::shared_mutex> c(s, milliseconds(10));
		std::shared_lock<pl::shared_mutex> d(
		    s, system_clock::now() + seconds(1));
		cr_assert(a.owns_lock() && b.owns_lock() && c.owns_lock() &&
		    d.owns_lock());
		cr_assert(s.native_handle()->state == 4 * PL_RWLOCK_ONE_READER);
		cr_assert(other_thread_can_lock_shared(s),
		    "a reader is kept out by readers");
		cr_assert(!other_thread_can_lock(s), "a writer got in");
		std::unique_lock<pl::shared_mutex> w(s, std::try_to_lock);
		cr_assert(!w.owns_lock());
		b.unlock();
		cr_assert(!b.owns_lock() && b.try_lock_for(milliseconds(1)));
	}
	cr_assert(!is_held(s));
	{
		std::shared_lock<pl::shared_mutex> r(s, std::defer_lock);
		std::unique_lock<pl::shared_mutex> w(s);
		cr_assert(!other_thread_can_lock_shared(s), "a reader got in");
		steady_clock::time_point t0 = steady_clock::now();
		cr_assert(!r.try_lock_for(short_timeout) &&
		        steady_clock::now() - t0 >= short_timeout,
		    "a timed reader got in beside a writer, or not after "
		    "its timeout");
		cr_assert(
		    !r.try_lock_until(system_clock::now() + short_timeout));
		w.unlock();
		cr_assert(r.try_lock() && r.owns_lock());
	}
	cr_assert(!is_held(s));
#endif
}

#if __cplusplus >= 201703L
Test(cxx, scoped_lock_over_several_pl_locks)
{
	static pl::mutex m;
	static pl::recursive_mutex r;
	static pl::shared_mutex s;
	{
		std::scoped_lock all(m, r, s);
		cr_assert(is_held(m) && is_held(r) && is_held(s));
		cr_assert(!other_thread_can_lock(m) &&
		    !other_thread_can_lock(r) && !other_thread_can_lock(s));
		cr_assert(!other_thread_can_lock_shared(s));
		// The owner of r takes it again beside the others.
		std::scoped_lock again(r);
		cr_assert(r.native_handle()->count == 2);
	}
	cr_assert(!is_held(m) && !is_held(r) && !is_held(s));
	{
		std::scoped_lock<pl::mutex> one(m);
		cr_assert(is_held(m) && !other_thread_can_lock(m));
	}
	cr_assert(!is_held(m));
	// adopt_lock: taken before, released by the scoped_lock.
	m.lock();
	s.lock();
	{
		std::scoped_lock both(std::adopt_lock, m, s);
	}
	cr_assert(!is_held(m) && !is_held(s));
}
#endif

// ---------------------------------------------------------------------
// std::lock and std::try_lock: deadlock avoidance over pl locks.

namespace
{

enum { opposite_rounds = 20000 };

// Two threads take the locks of take(0) and take(1), which lock the same
// locks in opposite orders, opposite_rounds times each, and increment a
// counter that only the locks protect.  A deadlock shows as threads that
// do not finish.
template <class Take>
void
opposite_orders(const char *what, Take take)
{
	long counter = 0;
	team t;
	for (int who = 0; who < 2; who++)
		t.spawn([&, who] {
			for (int i = 0; i < opposite_rounds; i++)
				take(who, counter);
		});
	cr_assert(
	    t.finish(), "%s: the threads did not finish: a deadlock?", what);
	cr_assert(counter == 2L * opposite_rounds,
	    "%s: counter %ld, expected %ld: exclusion broken", what, counter,
	    2L * opposite_rounds);
}

pl::mutex dl_a, dl_b;
pl::recursive_mutex dl_r;
pl::shared_mutex dl_s;

} // namespace

Test(cxx, std_lock_avoids_deadlock_over_two_pl_mutexes)
{
	opposite_orders(
	    "std::lock(a, b) / std::lock(b, a)", [](int who, long &counter) {
		    if (who == 0)
			    std::lock(dl_a, dl_b);
		    else
			    std::lock(dl_b, dl_a);
		    counter++;
		    dl_a.unlock();
		    dl_b.unlock();
	    });
	cr_assert(!is_held(dl_a) && !is_held(dl_b));
	cr_assert(conform_parked(&dl_a) == 0 && conform_parked(&dl_b) == 0);
	opposite_orders(
	    "std::lock over unique_locks", [](int who, long &counter) {
		    std::unique_lock<pl::mutex> a(dl_a, std::defer_lock);
		    std::unique_lock<pl::mutex> b(dl_b, std::defer_lock);
		    if (who == 0)
			    std::lock(a, b);
		    else
			    std::lock(b, a);
		    counter++;
	    });
	cr_assert(!is_held(dl_a) && !is_held(dl_b));
}

Test(cxx, std_lock_avoids_deadlock_over_three_pl_locks)
{
	opposite_orders("std::lock(a, r, s) / std::lock(s, r, a)",
	    [](int who, long &counter) {
		    if (who == 0)
			    std::lock(dl_a, dl_r, dl_s);
		    else
			    std::lock(dl_s, dl_r, dl_a);
		    counter++;
		    dl_s.unlock();
		    dl_r.unlock();
		    dl_a.unlock();
	    });
	cr_assert(!is_held(dl_a) && !is_held(dl_r) && !is_held(dl_s));
}

#if __cplusplus >= 201703L
Test(cxx, scoped_lock_avoids_deadlock_over_pl_locks)
{
	opposite_orders("scoped_lock(a, b) / scoped_lock(b, a)",
	    [](int who, long &counter) {
		    if (who == 0) {
			    std::scoped_lock l(dl_a, dl_b);
			    counter++;
		    } else {
			    std::scoped_lock l(dl_b, dl_a);
			    counter++;
		    }
	    });
	opposite_orders("scoped_lock(a, r, s) / scoped_lock(s, a, r)",
	    [](int who, long &counter) {
		    if (who == 0) {
			    std::scoped_lock l(dl_a, dl_r, dl_s);
			    counter++;
		    } else {
			    std::scoped_lock l(dl_s, dl_a, dl_r);
			    counter++;
		    }
	    });
	cr_assert(!is_held(dl_a) && !is_held(dl_b) && !is_held(dl_r) &&
	    !is_held(dl_s));
}
#endif

Test(cxx, std_try_lock_reports_the_lock_it_could_not_take)
{
	static pl::mutex a, b;
	static pl::recursive_mutex r;
	cr_assert(std::try_lock(a, b) == -1 && is_held(a) && is_held(b));
	a.unlock();
	b.unlock();
	{
		holder<pl::mutex> h(b);
		cr_assert(h.holding());
		cr_assert(std::try_lock(a, b) == 1, "b is held elsewhere");
		cr_assert(!is_held(a), "std::try_lock left a locked");
		cr_assert(std::try_lock(b, a) == 0);
		cr_assert(!is_held(a));
		cr_assert(h.release());
	}
	// This thread holds a: not recursive, so its own try fails...
	a.lock();
	cr_assert(std::try_lock(b, a) == 1 && !is_held(b));
	a.unlock();
	// ... but it owns r, which it takes again.
	r.lock();
	cr_assert(std::try_lock(a, r) == -1);
	cr_assert(r.native_handle()->count == 2);
	a.unlock();
	r.unlock();
	r.unlock();
	cr_assert(!is_held(a) && !is_held(b) && !is_held(r));
}

// ---------------------------------------------------------------------
// Timed locks: both clocks, and clocks of the test's own.

namespace
{

// The timed calls of one side of l (Side): free, held by another
// thread, and a waiter with a far deadline that gets l when freed.
template <class Side, class L>
void
check_timed(L &l, const char *lname)
{
	const char *side = Side::name();
	// Free: taken whatever the deadline, past, near or "never".
	int n = 0;
#define TAKEN(call)                                                            \
	do {                                                                   \
		n++;                                                           \
		cr_assert(                                                     \
		    call, "%s, %s side, free: %s failed", lname, side, #call); \
		Side::unlock(l);                                               \
	} while (0)
	TAKEN(Side::try_lock(l));
	TAKEN(Side::try_for(l, milliseconds(10)));
	TAKEN(Side::try_for(l, nanoseconds(0)));
	TAKEN(Side::try_for(l, -seconds(1)));
	TAKEN(Side::try_for(l, hours::max()));
	TAKEN(Side::try_for(l, hours::min()));
	TAKEN(Side::try_for(l, duration<double>(1e30)));
	TAKEN(Side::try_for(l, duration<double>(1e-12)));
	TAKEN(Side::try_until(l, steady_clock::now() + milliseconds(10)));
	TAKEN(Side::try_until(l, steady_clock::time_point()));
	TAKEN(Side::try_until(l, steady_clock::time_point::min()));
	TAKEN(Side::try_until(l, steady_clock::time_point::max()));
	TAKEN(Side::try_until(l, system_clock::now() + milliseconds(10)));
	TAKEN(Side::try_until(l, system_clock::now() - hours(1)));
	TAKEN(Side::try_until(l, system_clock::time_point::max()));
	TAKEN(Side::try_until(l, offset_clock::now() + milliseconds(10)));
	TAKEN(Side::try_until(l, offset_clock::now() - hours(1)));
	TAKEN(Side::try_until(l, slow_clock::now() + milliseconds(10)));
	TAKEN(Side::try_until(
	    l, time_point<system_clock, seconds>(seconds(4000000000LL))));
	TAKEN(Side::try_until(l, boot_clock::time_point::min()));
	TAKEN(Side::try_until(l, boot_clock::time_point::max()));
	TAKEN(Side::try_until(l, negative_clock::time_point::min()));
	TAKEN(Side::try_until(l, negative_clock::time_point::max()));
	TAKEN(Side::try_until(l, time_point<boot_clock, hours>::min()));
	TAKEN(Side::try_until(l, time_point<negative_clock, hours>::max()));
#undef TAKEN
	cr_assert(n > 0 && !is_held(l));

	// Held (exclusively) by another thread: each times out, not before
	// its deadline, and a deadline that has passed at once.
	{
		holder<L> h(l);
		cr_assert(h.holding());
		steady_clock::time_point t0 = steady_clock::now();
		cr_assert(!Side::try_for(l, short_timeout));
		cr_assert(steady_clock::now() - t0 >= short_timeout,
		    "%s, %s: try_for returned after %lld ms", lname, side,
		    ms_since(t0));

		steady_clock::time_point ds =
		    steady_clock::now() + short_timeout;
		cr_assert(!Side::try_until(l, ds));
		cr_assert(steady_clock::now() >= ds,
		    "%s, %s: steady_clock deadline: early", lname, side);

		system_clock::time_point dy =
		    system_clock::now() + short_timeout;
		cr_assert(!Side::try_until(l, dy));
		cr_assert(system_clock::now() >= dy,
		    "%s, %s: system_clock deadline: early", lname, side);

		offset_clock::time_point doff =
		    offset_clock::now() + short_timeout;
		cr_assert(!Side::try_until(l, doff));
		cr_assert(offset_clock::now() >= doff,
		    "%s, %s: a clock of its own: early", lname, side);

		// 10 ms on the slow clock are 20 ms of steady_clock.
		t0 = steady_clock::now();
		slow_clock::time_point dw =
		    slow_clock::now() + milliseconds(10);
		cr_assert(!Side::try_until(l, dw));
		cr_assert(slow_clock::now() >= dw &&
		        steady_clock::now() - t0 >= milliseconds(19),
		    "%s, %s: a slower clock: returned after %lld ms", lname,
		    side, ms_since(t0));

		t0 = steady_clock::now();
		cr_assert(!Side::try_lock(l));
		cr_assert(!Side::try_for(l, nanoseconds(0)));
		cr_assert(!Side::try_for(l, -hours(1)));
		cr_assert(!Side::try_for(l, hours::min()));
		cr_assert(!Side::try_until(l, steady_clock::time_point()));
		cr_assert(!Side::try_until(l, steady_clock::time_point::min()));
		cr_assert(!Side::try_until(l, system_clock::time_point()));
		cr_assert(
		    !Side::try_until(l, system_clock::now() - seconds(1)));
		cr_assert(!Side::try_until(l, offset_clock::now() - hours(1)));
		// Long past, though tp - now overflows: also at once.
		cr_assert(!Side::try_until(l, boot_clock::time_point::min()));
		cr_assert(
		    !Side::try_until(l, time_point<boot_clock, hours>::min()));
		cr_assert(
		    !Side::try_until(l, negative_clock::time_point::min()));
		cr_assert(ms_since(t0) < 1000,
		    "%s, %s: past deadlines took %lld ms", lname, side,
		    ms_since(t0));
		cr_assert(h.release());
	}
	cr_assert(!is_held(l) && conform_parked(park_addr(l, Side())) == 0);
}

// A waiter blocked in wait_fn(l) (a timed call with a far deadline) gets
// l as soon as this thread, which holds it, releases it.
template <class Side, class L, class Wait>
void
check_far_deadline(L &l, const char *lname, const char *what, Wait wait_fn)
{
	std::atomic<int> got(-1);
	std::atomic<long long> took(0);
	l.lock();
	team t;
	t.spawn([&] {
		steady_clock::time_point t0 = steady_clock::now();
		bool ok = wait_fn(l);
		took = ms_since(t0);
		got = ok;
		if (ok)
			Side::unlock(l);
	});
	cr_assert(conform_wait_parked(park_addr(l, Side()), 1),
	    "%s, %s: the waiter did not block", lname, what);
	l.unlock();
	cr_assert(t.finish(wait_limit),
	    "%s, %s: the waiter did not get the freed lock", lname, what);
	cr_assert(got == 1 && took < 5000, "%s, %s: got %d after %lld ms",
	    lname, what, got.load(), took.load());
	cr_assert(!is_held(l));
}

template <class Side, class L>
void
check_far_deadlines(L &l, const char *lname)
{
	check_far_deadline<Side>(l, lname, "for 10 s",
	    [](L &x) { return Side::try_for(x, seconds(10)); });
	check_far_deadline<Side>(l, lname, "for hours::max()",
	    [](L &x) { return Side::try_for(x, hours::max()); });
	check_far_deadline<Side>(l, lname, "until steady + 10 s", [](L &x) {
		return Side::try_until(x, steady_clock::now() + seconds(10));
	});
	check_far_deadline<Side>(l, lname, "until steady max", [](L &x) {
		return Side::try_until(x, steady_clock::time_point::max());
	});
	check_far_deadline<Side>(l, lname, "until system + 10 s", [](L &x) {
		return Side::try_until(x, system_clock::now() + seconds(10));
	});
	check_far_deadline<Side>(
	    l, lname, "until offset_clock + 10 s", [](L &x) {
		    return Side::try_until(
		        x, offset_clock::now() + seconds(10));
	    });
	check_far_deadline<Side>(l, lname, "until slow_clock + 10 s", [](L &x) {
		return Side::try_until(x, slow_clock::now() + seconds(10));
	});
	// Further than any count of nanoseconds: no deadline, though
	// tp - now overflows.
	check_far_deadline<Side>(
	    l, lname, "until negative_clock max", [](L &x) {
		    return Side::try_until(
		        x, negative_clock::time_point::max());
	    });
	check_far_deadline<Side>(l, lname, "until boot_clock max", [](L &x) {
		return Side::try_until(x, boot_clock::time_point::max());
	});
	check_far_deadline<Side>(
	    l, lname, "until boot_clock max in hours", [](L &x) {
		    return Side::try_until(
		        x, time_point<boot_clock, hours>::max());
	    });
}

} // namespace

Test(cxx, mutex_timed)
{
	static pl::mutex m;
	check_timed<excl>(m, "pl::mutex");
	check_far_deadlines<excl>(m, "pl::mutex");
}

Test(cxx, recursive_mutex_timed)
{
	static pl::recursive_mutex r;
	check_timed<excl>(r, "pl::recursive_mutex");
	check_far_deadlines<excl>(r, "pl::recursive_mutex");
	// The owner takes it again whatever the deadline, with both clocks.
	r.lock();
	cr_assert(r.try_lock_for(-seconds(1)));
	cr_assert(r.try_lock_until(system_clock::time_point()));
	cr_assert(r.try_lock_until(steady_clock::time_point()));
	cr_assert(r.try_lock_until(offset_clock::time_point()));
	cr_assert(r.native_handle()->count == 5);
	for (int i = 0; i < 5; i++)
		r.unlock();
	cr_assert(!is_held(r) && all_zero(r));
}

Test(cxx, shared_mutex_timed)
{
	static pl::shared_mutex s;
	check_timed<excl>(s, "pl::shared_mutex");
	check_timed<shared_side>(s, "pl::shared_mutex");
	check_far_deadlines<excl>(s, "pl::shared_mutex");
	check_far_deadlines<shared_side>(s, "pl::shared_mutex");
	// A reader keeps timed writers out, not timed readers.
	s.lock_shared();
	cr_assert(!s.try_lock_for(milliseconds(1)));
	cr_assert(!s.try_lock_until(system_clock::now() + milliseconds(1)));
	cr_assert(s.try_lock_shared_until(system_clock::now()));
	cr_assert(s.try_lock_shared_for(milliseconds(1)));
	s.unlock_shared();
	s.unlock_shared();
	s.unlock_shared();
	cr_assert(!is_held(s));
}

// ---------------------------------------------------------------------
// pl::recursive_mutex: recursion, overflow, misuse.

Test(cxx, recursive_mutex_recursion)
{
	static pl::recursive_mutex r;
	enum { depth = 1000 };
	for (int i = 0; i < depth; i++) {
		switch (i % 4) {
		case 0:
			r.lock();
			break;
		case 1:
			cr_assert(r.try_lock());
			break;
		case 2:
			cr_assert(r.try_lock_for(milliseconds(1)));
			break;
		default:
			cr_assert(r.try_lock_until(system_clock::now()));
		}
	}
	cr_assert(r.native_handle()->count == depth);
	for (int i = 0; i < depth; i++) {
		if (i % 100 == 0 || i == depth - 1)
			cr_assert(!other_thread_can_lock(r),
			    "another thread took it with %d unlocks left",
			    depth - i);
		r.unlock();
	}
	cr_assert(other_thread_can_lock(r) && all_zero(r));
}

Test(cxx, recursive_mutex_count_overflow_throws)
{
	static pl::recursive_mutex r;
	r.lock();
	r.native_handle()->count = UINT_MAX; // as many locks as it holds
	bool threw = false;
	try {
		r.lock();
	} catch (const std::system_error &e) {
		threw = true;
		cr_assert(e.code() == std::errc::resource_unavailable_try_again,
		    "error %d (%s)", e.code().value(), e.what());
	}
	cr_assert(threw, "lock() past the maximum count returned");
	cr_assert(r.native_handle()->count == UINT_MAX);
	cr_assert(!r.try_lock());
	cr_assert(!r.try_lock_for(milliseconds(1)));
	cr_assert(!r.try_lock_until(steady_clock::now() + milliseconds(1)));
	cr_assert(!r.try_lock_until(system_clock::now() + milliseconds(1)));
	cr_assert(r.native_handle()->count == UINT_MAX);
	// Still owned by this thread, as before.
	cr_assert(!other_thread_can_lock(r));
	r.native_handle()->count = 1;
	r.unlock();
	cr_assert(all_zero(r) && other_thread_can_lock(r));
}

namespace
{

pl::recursive_mutex misuse_r;

void
unlock_free_rmutex(void *)
{
	misuse_r.unlock();
}

void
unlock_rmutex_of_another(void *)
{
	std::atomic<bool> held(false);
	std::thread t([&] {
		misuse_r.lock();
		held = true;
		for (;;)
			pause();
	});
	t.detach();
	if (await([&] { return held.load(); }))
		misuse_r.unlock();
	_exit(2);
}

} // namespace

Test(cxx, recursive_mutex_unlock_by_a_non_owner_aborts)
{
	const char *expect = "pl::recursive_mutex::unlock: recursive_mutex %p "
	                     "is not owned by the calling thread\n";
	tu_expect_abortf(unlock_free_rmutex, NULL, expect, (void *)&misuse_r);
	tu_expect_abortf(
	    unlock_rmutex_of_another, NULL, expect, (void *)&misuse_r);
	cr_assert(all_zero(misuse_r), "the parent's mutex changed");
}

// ---------------------------------------------------------------------
// Reader-writer exclusion.

Test(cxx, shared_mutex_readers_and_writers)
{
	static pl::shared_mutex s;
	enum { writers = 2, readers = 2, rounds = 20000 };
	static long a, b; // written by writers only, a == b outside
	std::atomic<long> torn(0), reads(0), together(0);
	std::atomic<int> inside_readers(0), inside_writers(0);
	team t;
	for (int w = 0; w < writers; w++)
		t.spawn([&] {
			for (int i = 0; i < rounds; i++) {
				std::lock_guard<pl::shared_mutex> g(s);
				if (inside_writers.fetch_add(1) != 0 ||
				    inside_readers.load() != 0)
					together++;
				a++;
				if (i % 64 == 0)
					std::this_thread::yield();
				b++;
				inside_writers.fetch_sub(1);
			}
		});
	for (int r = 0; r < readers; r++)
		t.spawn([&] {
			for (int i = 0; i < rounds; i++) {
#if __cplusplus >= 201402L
				std::shared_lock<pl::shared_mutex> g(s);
#else
				s.lock_shared();
#endif
				inside_readers.fetch_add(1);
				if (inside_writers.load() != 0)
					together++;
				if (a != b)
					torn++;
				reads++;
				inside_readers.fetch_sub(1);
#if __cplusplus < 201402L
				s.unlock_shared();
#endif
			}
		});
	cr_assert(t.finish(), "the threads did not finish: a lost wakeup?");
	cr_assert(
	    together == 0, "%ld times a writer was not alone", together.load());
	cr_assert(torn == 0, "%ld reads saw a writer's half-done update",
	    torn.load());
	cr_assert(a == (long)writers * rounds && b == a, "a %ld, b %ld", a, b);
	cr_assert(reads == (long)readers * rounds);
	cr_assert(all_zero(s) && conform_parked(s.native_handle()) == 0 &&
	    conform_parked((const char *)s.native_handle() + 1) == 0);
}

// ---------------------------------------------------------------------
// Condition variables: pl::condition_variable with unique_lock<pl::mutex>
// and std::condition_variable_any with the pl locks.

namespace
{

// Two threads hand a turn back and forth, each waiting for its own.
template <class CV, class M>
void
ping_pong(const char *what)
{
	enum { rounds = 10000 };
	M m;
	CV turn_is[2];
	int turn = 0;
	long seq = 0;
	std::atomic<long> waits(0), bad_order(0);
	team t;
	for (int me = 0; me < 2; me++)
		t.spawn([&, me] {
			for (int i = 0; i < rounds; i++) {
				std::unique_lock<M> lk(m);
				while (turn != me) {
					turn_is[me].wait(lk);
					waits++;
				}
				if (seq != 2L * i + me)
					bad_order++;
				seq++;
				turn = 1 - me;
				turn_is[1 - me].notify_one();
			}
		});
	cr_assert(t.finish(seconds(30)),
	    "%s: the threads did not finish (seq %ld): a lost wakeup?", what,
	    seq);
	cr_assert(seq == 2L * rounds && bad_order == 0, "%s: seq %ld, %ld bad",
	    what, seq, bad_order.load());
	cr_assert(waits > 0, "%s: nobody ever waited: the test is void", what);
	cr_assert(!is_held(m));
}

// Producers and consumers around a bounded queue, with predicate waits.
template <class CV, class M>
void
bounded_queue(const char *what)
{
	enum { producers = 4, consumers = 4, cap = 8, items = 5000 };
	enum { total = producers * items };
	M m;
	CV not_full, not_empty;
	unsigned buf[cap];
	unsigned head = 0, count = 0, taken = 0;
	std::vector<std::atomic<int>> seen(total);
	for (auto &x : seen)
		x = 0;
	std::atomic<long> full_waits(0), empty_waits(0), bad(0);
	team t;
	for (int p = 0; p < producers; p++)
		t.spawn([&, p] {
			for (unsigned i = 0; i < items; i++) {
				std::unique_lock<M> lk(m);
				if (count == cap)
					full_waits++;
				not_full.wait(lk, [&] { return count < cap; });
				buf[(head + count) % cap] = p * items + i;
				count++;
				not_empty.notify_one();
			}
		});
	for (int c = 0; c < consumers; c++)
		t.spawn([&] {
			for (;;) {
				std::unique_lock<M> lk(m);
				if (count == 0 && taken < total)
					empty_waits++;
				not_empty.wait(lk, [&] {
					return count > 0 || taken == total;
				});
				if (count == 0)
					break; // everything was taken
				unsigned item = buf[head];
				head = (head + 1) % cap;
				count--;
				if (++taken == total)
					not_empty
					    .notify_all(); // the others stop
				not_full.notify_one();
				lk.unlock();
				if (item < (unsigned)total)
					seen[item]++;
				else
					bad++;
			}
		});
	cr_assert(t.finish(seconds(40)),
	    "%s: the threads did not finish (%u of %d taken): a lost wakeup?",
	    what, taken, (int)total);
	cr_assert(taken == (unsigned)total && count == 0 && bad == 0);
	for (int i = 0; i < total; i++)
		if (seen[i] != 1)
			cr_assert_fail("%s: item %d consumed %d times", what, i,
			    seen[i].load());
	cr_assert(full_waits + empty_waits > 0,
	    "%s: nobody ever waited: the test is void", what);
	cr_assert(!is_held(m));
}

// Waiters all wait; one notify_all releases every one of them, each
// returning once, with the mutex, one at a time.
template <class CV, class M>
void
broadcast(const char *what, CV &cv, M &m, bool no_spurious)
{
	enum { waiters = 16 };
	bool go = false;
	int waiting = 0, returned = 0;
	std::atomic<int> inside(0), overlaps(0), extra_returns(0), no_lock(0);
	team t;
	for (int i = 0; i < waiters; i++)
		t.spawn([&] {
			std::unique_lock<M> lk(m);
			waiting++;
			int returns = 0;
			while (!go) {
				cv.wait(lk);
				returns++;
			}
			if (returns != 1)
				extra_returns++;
			if (!lk.owns_lock())
				no_lock++;
			if (inside.exchange(1) != 0)
				overlaps++;
			returned++;
			inside = 0;
		});
	// Each waiter counted itself with m held, and released m only in its
	// wait: once this thread has m with all counted, all are waiting.
	cr_assert(await([&] {
		std::lock_guard<M> g(m);
		return waiting == waiters;
	}),
	    "%s: the waiters did not all come", what);
	{
		std::lock_guard<M> g(m);
		go = true;
		cv.notify_all();
	}
	cr_assert(t.finish(seconds(20)),
	    "%s: %d of %d waiters returned after notify_all", what, returned,
	    (int)waiters);
	cr_assert(returned == waiters && overlaps == 0 && no_lock == 0,
	    "%s: %d returned, %d overlaps, %d without the lock", what, returned,
	    overlaps.load(), no_lock.load());
	cr_assert(!no_spurious || extra_returns == 0,
	    "%s: %d waiters returned more than once (spuriously)", what,
	    extra_returns.load());
}

} // namespace

Test(cxx, cv_ping_pong)
{
	ping_pong<pl::condition_variable, pl::mutex>("pl::condition_variable");
}

Test(cxx, cv_any_ping_pong)
{
	ping_pong<std::condition_variable_any, pl::mutex>(
	    "condition_variable_any, pl::mutex");
	ping_pong<std::condition_variable_any, pl::recursive_mutex>(
	    "condition_variable_any, pl::recursive_mutex");
	ping_pong<std::condition_variable_any, pl::shared_mutex>(
	    "condition_variable_any, pl::shared_mutex");
}

Test(cxx, cv_bounded_queue)
{
	bounded_queue<pl::condition_variable, pl::mutex>(
	    "pl::condition_variable");
}

Test(cxx, cv_any_bounded_queue)
{
	bounded_queue<std::condition_variable_any, pl::mutex>(
	    "condition_variable_any, pl::mutex");
	bounded_queue<std::condition_variable_any, pl::shared_mutex>(
	    "condition_variable_any, pl::shared_mutex");
}

Test(cxx, cv_broadcast)
{
	static pl::condition_variable cv;
	static pl::mutex m;
	broadcast("pl::condition_variable", cv, m, true);
	cr_assert(all_zero(cv) && all_zero(m));
	cr_assert(conform_parked(&cv) == 0 && conform_parked(&m) == 0);
}

Test(cxx, cv_any_broadcast)
{
	static std::condition_variable_any cv;
	static pl::mutex m;
	static pl::recursive_mutex r;
	broadcast("condition_variable_any, pl::mutex", cv, m, false);
	broadcast("condition_variable_any, pl::recursive_mutex", cv, r, false);
	cr_assert(all_zero(m) && all_zero(r));
}

#if __cplusplus >= 201402L
Test(cxx, cv_any_with_shared_lock)
{
	// Readers wait with a shared_lock for what a writer publishes.
	enum { readers = 4 };
	static std::condition_variable_any cv;
	static pl::shared_mutex s;
	int published = 0, waiting = 0;
	std::atomic<int> saw(0);
	team t;
	for (int i = 0; i < readers; i++)
		t.spawn([&] {
			std::shared_lock<pl::shared_mutex> lk(s);
			__atomic_fetch_add(&waiting, 1, __ATOMIC_RELAXED);
			if (cv.wait_for(lk, seconds(20),
			        [&] { return published != 0; }) &&
			    lk.owns_lock())
				saw += published;
		});
	cr_assert(await([&] {
		std::unique_lock<pl::shared_mutex> w(s);
		return __atomic_load_n(&waiting, __ATOMIC_RELAXED) == readers;
	}));
	{
		std::unique_lock<pl::shared_mutex> w(s);
		published = 7;
		cv.notify_all();
	}
	cr_assert(t.finish(seconds(30)), "the readers did not return");
	cr_assert(saw == 7 * readers, "the readers saw %d", saw.load());
	cr_assert(!is_held(s));
}
#endif

// ---------------------------------------------------------------------
// Timed waits.

namespace
{

// Whether, with lk's mutex held by this thread, another thread's
// try_lock fails (the wait gave it back).
template <class M>
bool
held_on_return(std::unique_lock<M> &lk)
{
	return lk.owns_lock() && !other_thread_can_lock(*lk.mutex());
}

// Nobody notifies: each timed wait times out, not before its deadline,
// holding the mutex again.
// extremes: also the longest durations and time points (libstdc++'s
// condition_variable_any would overflow on them).
template <class CV, class M>
void
cv_timeouts(const char *what, bool extremes)
{
	CV cv;
	M m;
	std::unique_lock<M> lk(m);
	auto never = [] { return false; };

	steady_clock::time_point t0 = steady_clock::now();
	cr_assert(cv.wait_for(lk, short_timeout) == std::cv_status::timeout);
	cr_assert(steady_clock::now() - t0 >= short_timeout,
	    "%s: wait_for timed out after %lld ms", what, ms_since(t0));
	cr_assert(held_on_return(lk));

	steady_clock::time_point ds = steady_clock::now() + short_timeout;
	cr_assert(cv.wait_until(lk, ds) == std::cv_status::timeout);
	cr_assert(steady_clock::now() >= ds, "%s: steady: early", what);
	cr_assert(held_on_return(lk));

	system_clock::time_point dy = system_clock::now() + short_timeout;
	cr_assert(cv.wait_until(lk, dy) == std::cv_status::timeout);
	cr_assert(system_clock::now() >= dy, "%s: system: early", what);
	cr_assert(held_on_return(lk));

	offset_clock::time_point doff = offset_clock::now() + short_timeout;
	cr_assert(cv.wait_until(lk, doff) == std::cv_status::timeout);
	cr_assert(offset_clock::now() >= doff, "%s: offset: early", what);

	// The predicate forms: false at the deadline.
	t0 = steady_clock::now();
	cr_assert(!cv.wait_for(lk, short_timeout, never));
	cr_assert(steady_clock::now() - t0 >= short_timeout);
	dy = system_clock::now() + short_timeout;
	cr_assert(!cv.wait_until(lk, dy, never));
	cr_assert(system_clock::now() >= dy);
	ds = steady_clock::now() + short_timeout;
	cr_assert(!cv.wait_until(lk, ds, never));
	cr_assert(steady_clock::now() >= ds);
	// 10 ms on the slow clock: a wait on steady_clock ends half-way; the
	// predicate form goes on until the slow clock has passed too.
	t0 = steady_clock::now();
	slow_clock::time_point dw = slow_clock::now() + milliseconds(10);
	cr_assert(!cv.wait_until(lk, dw, never));
	cr_assert(slow_clock::now() >= dw &&
	        steady_clock::now() - t0 >= milliseconds(19),
	    "%s: slow clock: false after %lld ms", what, ms_since(t0));
	cr_assert(held_on_return(lk));

	// Deadlines that have passed: at once.
	t0 = steady_clock::now();
	cr_assert(cv.wait_for(lk, nanoseconds(0)) == std::cv_status::timeout);
	cr_assert(cv.wait_for(lk, -seconds(1)) == std::cv_status::timeout);
	cr_assert(cv.wait_until(lk, steady_clock::time_point()) ==
	    std::cv_status::timeout);
	if (extremes) {
		cr_assert(
		    cv.wait_for(lk, hours::min()) == std::cv_status::timeout);
		cr_assert(cv.wait_until(lk, steady_clock::time_point::min()) ==
		    std::cv_status::timeout);
		cr_assert(cv.wait_until(lk, system_clock::time_point::min()) ==
		    std::cv_status::timeout);
	}
	cr_assert(cv.wait_until(lk, system_clock::time_point()) ==
	    std::cv_status::timeout);
	cr_assert(cv.wait_until(lk, offset_clock::now() - hours(1)) ==
	    std::cv_status::timeout);
	cr_assert(!cv.wait_for(lk, -seconds(1), never));
	cr_assert(cv.wait_for(lk, -seconds(1), [] { return true; }));
	cr_assert(ms_since(t0) < 1000, "%s: past deadlines took %lld ms", what,
	    ms_since(t0));
	cr_assert(held_on_return(lk));
}

// A waiter that calls wait_fn(cv, lk, flag) once, with a far deadline,
// is notified before it: it returns no_timeout (true for the predicate
// forms) soon, with the mutex.
template <class CV, class M, class Wait>
void
cv_notified(const char *what, const char *form, Wait wait_fn)
{
	CV cv;
	M m;
	bool flag = false, ready = false;
	std::atomic<int> result(-1);
	std::atomic<long long> took(0);
	team t;
	t.spawn([&] {
		std::unique_lock<M> lk(m);
		ready = true;
		steady_clock::time_point t0 = steady_clock::now();
		bool ok = wait_fn(cv, lk, flag);
		took = ms_since(t0);
		result = ok && lk.owns_lock();
	});
	// The waiter set ready with m held and releases m only in its wait:
	// once this thread has m and sees ready, the waiter is waiting.
	cr_assert(await([&] {
		std::lock_guard<M> g(m);
		return ready;
	}));
	{
		std::lock_guard<M> g(m);
		flag = true;
		cv.notify_one();
	}
	cr_assert(t.finish(seconds(20)),
	    "%s, %s: the notified waiter did not return", what, form);
	cr_assert(result == 1 && took < 5000,
	    "%s, %s: returned %d after %lld ms", what, form, result.load(),
	    took.load());
	cr_assert(!is_held(m));
}

template <class CV, class M>
void
cv_notifications(const char *what, bool extremes)
{
	typedef std::unique_lock<M> lock;
	cv_notified<CV, M>(what, "wait", [](CV &cv, lock &lk, bool &) {
		cv.wait(lk);
		return true;
	});
	cv_notified<CV, M>(what, "wait(pred)", [](CV &cv, lock &lk, bool &f) {
		cv.wait(lk, [&] { return f; });
		return f;
	});
	cv_notified<CV, M>(what, "wait_for 10 s", [](CV &cv, lock &lk, bool &) {
		return cv.wait_for(lk, seconds(10)) ==
		    std::cv_status::no_timeout;
	});
	if (extremes)
		cv_notified<CV, M>(what, "wait_for hours::max()",
		    [](CV &cv, lock &lk, bool &) {
			    return cv.wait_for(lk, hours::max()) ==
			        std::cv_status::no_timeout;
		    });
	cv_notified<CV, M>(
	    what, "wait_for(pred) 10 s", [](CV &cv, lock &lk, bool &f) {
		    return cv.wait_for(lk, seconds(10), [&] { return f; });
	    });
	cv_notified<CV, M>(
	    what, "wait_until steady + 10 s", [](CV &cv, lock &lk, bool &) {
		    return cv.wait_until(
		               lk, steady_clock::now() + seconds(10)) ==
		        std::cv_status::no_timeout;
	    });
	if (extremes) {
		cv_notified<CV, M>(what, "wait_until steady max",
		    [](CV &cv, lock &lk, bool &) {
			    return cv.wait_until(
			               lk, steady_clock::time_point::max()) ==
			        std::cv_status::no_timeout;
		    });
		cv_notified<CV, M>(what, "wait_until(pred) system max",
		    [](CV &cv, lock &lk, bool &f) {
			    return cv.wait_until(lk,
			        system_clock::time_point::max(),
			        [&] { return f; });
		    });
	}
	cv_notified<CV, M>(
	    what, "wait_until system + 10 s", [](CV &cv, lock &lk, bool &) {
		    return cv.wait_until(
		               lk, system_clock::now() + seconds(10)) ==
		        std::cv_status::no_timeout;
	    });
	cv_notified<CV, M>(what, "wait_until(pred) system + 10 s",
	    [](CV &cv, lock &lk, bool &f) {
		    return cv.wait_until(lk, system_clock::now() + seconds(10),
		        [&] { return f; });
	    });
	cv_notified<CV, M>(what, "wait_until offset_clock + 10 s",
	    [](CV &cv, lock &lk, bool &) {
		    return cv.wait_until(
		               lk, offset_clock::now() + seconds(10)) ==
		        std::cv_status::no_timeout;
	    });
	cv_notified<CV, M>(what, "wait_until(pred) slow_clock + 10 s",
	    [](CV &cv, lock &lk, bool &f) {
		    return cv.wait_until(
		        lk, slow_clock::now() + seconds(10), [&] { return f; });
	    });
}

} // namespace

Test(cxx, cv_timed_waits_time_out)
{
	cv_timeouts<pl::condition_variable, pl::mutex>(
	    "pl::condition_variable", true);
}

Test(cxx, cv_any_timed_waits_time_out)
{
	cv_timeouts<std::condition_variable_any, pl::mutex>(
	    "condition_variable_any, pl::mutex", false);
	cv_timeouts<std::condition_variable_any, pl::shared_mutex>(
	    "condition_variable_any, pl::shared_mutex", false);
}

Test(cxx, cv_notified_before_the_deadline)
{
	cv_notifications<pl::condition_variable, pl::mutex>(
	    "pl::condition_variable", true);
}

Test(cxx, cv_any_notified_before_the_deadline)
{
	cv_notifications<std::condition_variable_any, pl::mutex>(
	    "condition_variable_any, pl::mutex", false);
	cv_notifications<std::condition_variable_any, pl::recursive_mutex>(
	    "condition_variable_any, pl::recursive_mutex", false);
}

// The extreme time points of clocks whose tp - now overflows: min() has
// passed (a timeout at once, with the mutex), max() is no deadline (the
// waiter parks until notified).  In a thread of its own, so that a wait
// that does not time out is bounded: this thread then stops it.
Test(cxx, cv_user_clock_extremes)
{
	// Static: a thread left behind writes to no frame that is gone.
	static pl::condition_variable cv;
	static pl::mutex m;
	static std::atomic<bool> stop(false), flag(false);
	static std::atomic<int> timeouts(0), result(-1);
	team past;
	past.spawn([] {
		std::unique_lock<pl::mutex> lk(m);
		auto stopped = [] { return stop.load(); };
		timeouts += cv.wait_until(lk, boot_clock::time_point::min()) ==
		    std::cv_status::timeout;
		timeouts +=
		    cv.wait_until(lk, time_point<boot_clock, hours>::min()) ==
		    std::cv_status::timeout;
		timeouts +=
		    cv.wait_until(lk, negative_clock::time_point::min()) ==
		    std::cv_status::timeout;
		timeouts +=
		    !cv.wait_until(lk, boot_clock::time_point::min(), stopped);
		timeouts += lk.owns_lock();
	});
	bool in_time = past.finish(wait_limit);
	if (!in_time) {
		stop = true;
		cv.notify_all();
	}
	cr_assert(in_time && timeouts == 5,
	    "past deadlines: %d of 5 timed out at once", timeouts.load());

	team far;
	far.spawn([] {
		std::unique_lock<pl::mutex> lk(m);
		result = cv.wait_until(lk, negative_clock::time_point::max(),
		    [] { return flag.load(); });
	});
	bool parked = conform_wait_parked(cv.native_handle(), 1);
	if (parked) {
		std::lock_guard<pl::mutex> g(m);
		flag = true;
		cv.notify_one();
	} else {
		flag = true; // the waiter may not release m
		cv.notify_all();
	}
	cr_assert(parked, "negative_clock max: the waiter did not wait");
	cr_assert(far.finish(wait_limit) && result == 1,
	    "negative_clock max: returned %d", result.load());
	cr_assert(!is_held(m));
}

Test(cxx, cv_notify_with_nobody_waiting_touches_nothing)
{
	static pl::condition_variable cv;
	static pl::mutex m;
	cv.notify_one();
	cv.notify_all();
	cr_assert(all_zero(cv));
	// A notification is not kept for a later waiter.
	std::unique_lock<pl::mutex> lk(m);
	cr_assert(cv.wait_for(lk, milliseconds(5)) == std::cv_status::timeout);
}

namespace
{

pl::condition_variable misuse_cv;
pl::mutex misuse_m;

void
wait_without_the_lock(void *arg)
{
	std::unique_lock<pl::mutex> lk(misuse_m, std::defer_lock);
	switch ((int)(intptr_t)arg) {
	case 0:
		misuse_cv.wait(lk);
		break;
	case 1:
		misuse_cv.wait_for(lk, seconds(1));
		break;
	default:
		misuse_cv.wait_until(lk, system_clock::now() + seconds(1));
	}
}

} // namespace

Test(cxx, cv_wait_with_a_lock_that_does_not_own_the_mutex_aborts)
{
	const char *fns[] = { "wait", "wait_for", "wait_until" };
	for (int i = 0; i < 3; i++)
		tu_expect_abortf(wait_without_the_lock, (void *)(intptr_t)i,
		    "pl::condition_variable::%s: condition_variable %p waited "
		    "on with a std::unique_lock that does not own its mutex\n",
		    fns[i], (void *)&misuse_cv);
	cr_assert(all_zero(misuse_cv) && all_zero(misuse_m));
}

// ---------------------------------------------------------------------
// call_once.

namespace
{

struct counter {
	int total;
	void
	add(int n)
	{
		total += n;
	}
};

void
add_to(int *p, int n)
{
	*p += n;
}

// A callable that can only be moved, called as an rvalue.
struct move_only_adder {
	std::unique_ptr<int> n;
	explicit move_only_adder(int v) : n(new int(v))
	{
	}
	move_only_adder(move_only_adder &&) = default;
	void
	operator()(int *p) &&
	{
		*p += *n;
	}
};

struct boom : std::runtime_error {
	boom() : std::runtime_error("boom")
	{
	}
};

} // namespace

Test(cxx, call_once_with_arguments)
{
	int x = 0;
	pl::once_flag f1, f2, f3, f4, f5;
	// Arguments are forwarded: by value, by reference, moved.
	std::unique_ptr<int> owned(new int(5));
	pl::call_once(
	    f1,
	    [](int &out, const std::string &s, std::unique_ptr<int> p) {
		    out += (int)s.size() + *p;
	    },
	    x, std::string("abc"), std::move(owned));
	cr_assert(x == 8 && owned == nullptr, "x %d", x);
	pl::call_once(f1, [&] { x = -1; });
	cr_assert(x == 8, "a second call on a done flag ran");
	// INVOKE: a member function with a pointer and with a reference, a
	// function pointer, an rvalue functor.
	counter c = { 0 };
	pl::call_once(f2, &counter::add, &c, 3);
	pl::call_once(f3, &counter::add, std::ref(c), 4);
	cr_assert(c.total == 7, "total %d", c.total);
	pl::call_once(f4, add_to, &x, 10);
	cr_assert(x == 18);
	pl::call_once(f5, move_only_adder(100), &x);
	cr_assert(x == 118);
	// A flag is one byte; its C object is pl_once's.
	pl::once_flag f6;
	pl_once(
	    f6.native_handle(), [](void *p) { *(int *)p += 1; }, &x);
	pl::call_once(f6, [&] { x = -1; });
	cr_assert(x == 119);
}

Test(cxx, call_once_exception_leaves_the_flag_unset)
{
	pl::once_flag flag;
	int runs = 0;
	bool caught = false;
	try {
		pl::call_once(flag, [&] {
			runs++;
			throw boom();
		});
	} catch (const boom &) {
		caught = true;
	}
	cr_assert(
	    caught && runs == 1, "the exception did not reach the caller");
	cr_assert(flag.native_handle()->state == 0,
	    "flag state %d after an exception: not unset",
	    flag.native_handle()->state);
	// The next call is active: it runs its callable, which returns...
	pl::call_once(flag, [&] { runs += 10; });
	cr_assert(runs == 11 && flag.native_handle()->state == PL_ONCE_DONE);
	// ... and the following ones are passive.
	pl::call_once(flag, [&] { runs += 100; });
	cr_assert(runs == 11);

	// A thread waiting while the callable throws is woken and runs its
	// own callable.
	pl::once_flag shared;
	std::atomic<int> phase(0), attempts(0), successes(0);
	std::atomic<bool> runner_caught(false), parked(false);
	int value = 0;
	team t;
	t.spawn([&] {
		try {
			pl::call_once(shared, [&] {
				attempts++;
				phase = 1;
				parked = conform_wait_parked(
				    shared.native_handle(), 1);
				throw boom();
			});
		} catch (const boom &) {
			runner_caught = true;
		}
	});
	cr_assert(await([&] { return phase.load() == 1; }));
	t.spawn([&] {
		pl::call_once(shared, [&] {
			attempts++;
			value = 42;
			successes++;
		});
		if (value != 42)
			successes = -100;
	});
	cr_assert(t.finish(wait_limit * 2), "the waiter was not woken");
	cr_assert(parked, "the second caller did not wait for the first");
	cr_assert(runner_caught && attempts == 2 && successes == 1,
	    "caught %d, %d attempts, %d successes", (int)runner_caught.load(),
	    attempts.load(), successes.load());
	cr_assert(shared.native_handle()->state == PL_ONCE_DONE &&
	    conform_parked(shared.native_handle()) == 0);
}

Test(cxx, call_once_one_returning_call_under_contention)
{
	// Rounds of a fresh flag raced for by 4 threads; the callable throws
	// the first 2 times it runs on a flag, so that exactly one of 3
	// active calls returns, and every caller retries until its call
	// returns.
	enum { rounds = 300, threads = 4, failures = 2 };
	struct round {
		pl::once_flag flag;
		std::atomic<int> runs, returned;
		int value; // written by the run that returns
	};
	std::unique_ptr<round[]> r(new round[rounds]);
	for (int i = 0; i < rounds; i++) {
		r[i].runs = 0;
		r[i].returned = 0;
		r[i].value = 0;
	}
	std::atomic<long> caught(0), missed(0);
	team t;
	for (int k = 0; k < threads; k++)
		t.spawn([&] {
			for (int i = 0; i < rounds; i++) {
				round &x = r[i];
				for (;;) {
					try {
						pl::call_once(x.flag, [&x, i] {
							if (x.runs++ < failures)
								throw boom();
							x.value = i + 1;
							x.returned++;
						});
						break;
					} catch (const boom &) {
						caught++;
					}
				}
				if (x.value != i + 1)
					missed++;
			}
		});
	cr_assert(t.finish(), "the callers did not finish");
	for (int i = 0; i < rounds; i++)
		cr_assert(r[i].returned == 1 && r[i].runs == failures + 1,
		    "round %d: %d runs, %d returned", i, r[i].runs.load(),
		    r[i].returned.load());
	cr_assert(caught == (long)rounds * failures, "%ld exceptions caught",
	    caught.load());
	cr_assert(
	    missed == 0, "%ld calls returned before the effect", missed.load());
}

namespace
{

pl::once_flag recursive_flag;

void
call_once_recursively(void *)
{
	pl::call_once(
	    recursive_flag, [] { pl::call_once(recursive_flag, [] {}); });
}

} // namespace

Test(cxx, call_once_from_its_own_callable_aborts)
{
	tu_expect_abortf(call_once_recursively, NULL,
	    "pl_once: recursive call on once %p from its own init function\n",
	    (void *)recursive_flag.native_handle());
}

// ---------------------------------------------------------------------
// The conformance bodies of tests/conform.h, through the C++ types.

namespace
{

template <class L>
L *
obj(const conform_lock *l)
{
	return static_cast<L *>(l->obj);
}

template <class L>
void
cx_lock(const conform_lock *l)
{
	obj<L>(l)->lock();
}

template <class L>
bool
cx_trylock(const conform_lock *l)
{
	return obj<L>(l)->try_lock();
}

// try_lock_until with the deadline as a steady_clock time point.  The
// C++ calls cannot be given a malformed deadline: refuse one here as the
// C calls do (EINVAL); no deadline is steady_clock's last time point.
template <class L>
int
cx_timedlock(const conform_lock *l, const struct timespec *dl)
{
	steady_clock::time_point tp = steady_clock::time_point::max();
	if (dl != NULL) {
		if (dl->tv_sec < 0 || dl->tv_nsec < 0 ||
		    dl->tv_nsec >= 1000000000)
			return EINVAL;
		tp = steady_clock::time_point(
		    duration_cast<steady_clock::duration>(
		        seconds(dl->tv_sec) + nanoseconds(dl->tv_nsec)));
	}
	return obj<L>(l)->try_lock_until(tp) ? 0 : ETIMEDOUT;
}

template <class L>
void
cx_unlock(const conform_lock *l)
{
	obj<L>(l)->unlock();
}

void
cx_mutex_unlock_fair(const conform_lock *l)
{
	obj<pl::mutex>(l)->unlock_fair();
}

uintptr_t
cx_mutex_state(const conform_lock *l)
{
	return __atomic_load_n(
	    &obj<pl::mutex>(l)->native_handle()->state, __ATOMIC_RELAXED);
}

uintptr_t
cx_rmutex_state(const conform_lock *l)
{
	return __atomic_load_n(
	    &obj<pl::recursive_mutex>(l)->native_handle()->lock.state,
	    __ATOMIC_RELAXED);
}

uintptr_t
cx_shared_state(const conform_lock *l)
{
	return __atomic_load_n(
	    &obj<pl::shared_mutex>(l)->native_handle()->state,
	    __ATOMIC_RELAXED);
}

template <class L>
conform_lock
cx_table(const char *name, L *lock, const void *park_addr, uintptr_t held,
    uintptr_t parked, void (*fair)(const conform_lock *),
    uintptr_t (*state)(const conform_lock *))
{
	conform_lock l;
	std::memset(&l, 0, sizeof l);
	l.name = name;
	l.obj = lock;
	l.park_addr = park_addr;
	l.held_state = held;
	l.parked_state = parked;
	l.lock = cx_lock<L>;
	l.trylock = cx_trylock<L>;
	l.timedlock = cx_timedlock<L>;
	l.unlock = cx_unlock<L>;
	l.unlock_fair = fair;
	l.state = state;
	return l;
}

pl::mutex the_mutex;
pl::recursive_mutex the_rmutex;
pl::shared_mutex the_shared;

conform_lock
setup_mutex()
{
	return cx_table("pl::mutex", &the_mutex, the_mutex.native_handle(),
	    PL_MUTEX_LOCKED, PL_MUTEX_LOCKED | PL_MUTEX_PARKED,
	    cx_mutex_unlock_fair, cx_mutex_state);
}

conform_lock
setup_rmutex()
{
	return cx_table("pl::recursive_mutex", &the_rmutex,
	    &the_rmutex.native_handle()->lock, PL_MUTEX_LOCKED,
	    PL_MUTEX_LOCKED | PL_MUTEX_PARKED, NULL, cx_rmutex_state);
}

conform_lock
setup_shared()
{
	return cx_table("pl::shared_mutex (writers)", &the_shared,
	    (const char *)the_shared.native_handle() + 1, PL_RWLOCK_WRITER,
	    PL_RWLOCK_WRITER | PL_RWLOCK_WRITER_PARKED, NULL, cx_shared_state);
}

} // namespace

#define CXX_CONFORM(kind, body, ...)                                           \
	Test(cxx, conform_##kind##_##body)                                     \
	{                                                                      \
		conform_lock l = setup_##kind();                               \
		conform_##body(&l, ##__VA_ARGS__);                             \
		conform_check_rest(&l, "after the body");                      \
	}

#define CXX_CONFORM_TESTS(kind)                                                \
	CXX_CONFORM(kind, exclusion, 8, 200000, 0, 0)                          \
	CXX_CONFORM(kind, mixed, 4, 20000)                                     \
	CXX_CONFORM(kind, trylock)                                             \
	CXX_CONFORM(kind, timedlock)                                           \
	CXX_CONFORM(kind, timed_contended)                                     \
	CXX_CONFORM(kind, no_lost_wakeup)                                      \
	CXX_CONFORM(kind, fairness)

CXX_CONFORM_TESTS(mutex)
CXX_CONFORM(mutex, handoff)
Test(cxx, conform_mutex_exclusion_fair)
{
	conform_lock l = setup_mutex();
	conform_exclusion(&l, 8, 200000, 64, 0);
	conform_check_rest(&l, "after the body");
}
CXX_CONFORM_TESTS(rmutex)
CXX_CONFORM_TESTS(shared)

// ---------------------------------------------------------------------
// A checked build: the deadlock detector sees each type's lock() as the
// blocking lock it is, and records its lock-order edges.  Not under
// ThreadSanitizer, which reports the inversion itself (tests/test_deadlock
// turns that off for its whole program; this suite keeps it on).

#if defined(PL_CHECKED) && !defined(__SANITIZE_THREAD__)
namespace
{

void
quiet_report(const struct pl_deadlock_cycle *, const char *, void *)
{
}

// The cycles found for a and b taken in one order, then in the other, by
// one thread (which never blocks).
template <class L>
size_t
inversions_found(L &a, L &b)
{
	size_t before = pl_deadlock_cycles(NULL, 0);
	{
		std::lock_guard<L> ga(a);
		std::lock_guard<L> gb(b);
	}
	{
		std::lock_guard<L> gb(b);
		std::lock_guard<L> ga(a);
	}
	return pl_deadlock_cycles(NULL, 0) - before;
}

} // namespace

Test(cxx, checked_lock_records_lock_order)
{
	static pl::mutex m1, m2;
	static pl::recursive_mutex r1, r2;
	static pl::shared_mutex s1, s2;
	cr_assert(pl_deadlock_set(PL_DEADLOCK_REPORT) == 0);
	pl_deadlock_set_handler(quiet_report, NULL);
	size_t found_m = inversions_found(m1, m2);
	size_t found_r = inversions_found(r1, r2);
	size_t found_s = inversions_found(s1, s2);
	// Taken again by its owner: no lock-order edge of its own.
	size_t before = pl_deadlock_cycles(NULL, 0);
	r1.lock();
	r1.lock();
	r1.unlock();
	r1.unlock();
	size_t found_again = pl_deadlock_cycles(NULL, 0) - before;
	pl_deadlock_set(PL_DEADLOCK_OFF);
	pl_deadlock_set_handler(NULL, NULL);
	cr_assert(found_m == 1 && found_r == 1 && found_s == 1,
	    "inversions found: pl::mutex %zu, pl::recursive_mutex %zu, "
	    "pl::shared_mutex %zu",
	    found_m, found_r, found_s);
	cr_assert(found_again == 0, "a recursive lock: %zu", found_again);
	cr_assert(!is_held(r1) && !is_held(r2) && all_zero(r1));
}
#endif
