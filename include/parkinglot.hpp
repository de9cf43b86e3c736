/* SPDX-License-Identifier: MIT */
/*
 * <parkinglot.hpp>: the locks of libparkinglot as C++ types that meet the
 * standard library's lock requirements, so that std::lock_guard,
 * std::unique_lock, std::scoped_lock, std::shared_lock, std::lock,
 * std::try_lock and std::condition_variable_any take them as they take
 * the standard's own.  Header-only, over the C API: it adds no symbol to
 * libparkinglot, and each type is its C object and nothing else.
 *
 *   pl::mutex               pl_mutex_t, 1 byte: Mutex and TimedMutex
 *                           (BasicLockable, Lockable, TimedLockable)
 *   pl::recursive_mutex     pl_rmutex_t: the same, recursive
 *   pl::shared_mutex        pl_rwlock_t, one word: SharedTimedMutex,
 *                           phase-fair
 *   pl::condition_variable  pl_cond_t, 1 byte: std::condition_variable,
 *                           with std::unique_lock<pl::mutex>
 *   pl::once_flag           pl_once_t, 1 byte, and pl::call_once, which
 *                           is std::call_once
 *
 * pl::timed_mutex, pl::recursive_timed_mutex and pl::shared_timed_mutex
 * name the same types, which are all timed already.
 *
 * Every type has a constexpr, noexcept default constructor (the C type's
 * all-zero state, so that a static object is constant-initialized and
 * safe to use from any other static initializer), a trivial destructor,
 * no copy and no move, and native_handle(), a pointer to its C object,
 * which the C calls of its header accept.  The calls that cannot fail are
 * noexcept, also where the standard's lock() may throw.
 *
 * Deadlines.  A std::chrono::steady_clock time is a CLOCK_MONOTONIC one
 * and a system_clock time a CLOCK_REALTIME one (as with libstdc++ and
 * libc++ on Linux): the timed calls give them to the C API's clock calls
 * (pl_mutex_clocklock, pl_rwlock_clock*lock, pl_cond_clockwait) as they
 * are, so that a system_clock deadline ends the wait when that clock
 * passes it, also when it is set forward meanwhile.  A relative timeout
 * (the _for calls) is measured on CLOCK_MONOTONIC from the call.  Another
 * clock's deadline is waited for on steady_clock, and a timeout is
 * reported only once that clock itself has passed it, as libstdc++ does.
 * Durations are rounded up to whole nanoseconds; a steady_clock or
 * system_clock deadline at or before the clock's epoch has passed, and
 * one too far away to be counted in nanoseconds (about 292 years past the
 * epoch, or from now) is no deadline at all.  For another clock the same
 * holds of what is left, measured on that clock (without overflow: its
 * time_point::min() has passed, its max() is no deadline).
 *
 * Misuse that the standard leaves undefined is reported as the C API
 * reports it, with a one-line message on stderr and abort():
 * pl::mutex::unlock and pl::shared_mutex's unlocks of a lock that is not
 * held (by the C calls), pl::recursive_mutex::unlock by a thread that does
 * not own it, a condition_variable wait with a std::unique_lock that does
 * not own its mutex, and pl::call_once on a flag from inside its own
 * callable.  The man page is pl_cxx(3).
 */
#ifndef PARKINGLOT_HPP
#define PARKINGLOT_HPP

#if !defined(__cplusplus) || __cplusplus < 201103L
#error "<parkinglot.hpp> needs C++11 or later; C includes <parkinglot.h>"
#endif

/* The C headers' inline functions and macros use C casts, which clang's
 * -Wold-style-cast reports wherever they are parsed (g++ does not): off
 * for them, and for them only.  Their inline functions are parsed here,
 * and this header expands none of their casting macros itself. */
#ifdef __clang__
#pragma clang diagnostic push
#pragma clang diagnostic ignored "-Wold-style-cast"
#endif
#include <parkinglot/cond.h>
#include <parkinglot/mutex.h>
#include <parkinglot/once.h>
#include <parkinglot/rmutex.h>
#include <parkinglot/rwlock.h>
#ifdef __clang__
#pragma clang diagnostic pop
#endif

#include <errno.h>
#include <limits.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>
#include <unistd.h>

#include <chrono>
#include <condition_variable>
#include <functional>
#include <mutex>
#include <ratio>
#include <system_error>
#include <type_traits>
#include <utility>

namespace pl
{

class mutex;

namespace detail
{

/* Misuse: "fn: kind 0x... problem" on stderr in a single write(2), then
 * abort(), as the C API does (pl_mutex_unlock of a mutex that is not
 * locked). */
[[noreturn]] inline __attribute__((noinline, cold)) void
misuse(const char *fn, const char *kind, const void *obj,
    const char *problem) noexcept
{
	char line[256];
	int n = snprintf(
	    line, sizeof line, "%s: %s %p %s\n", fn, kind, obj, problem);
	if (n > 0) {
		size_t len = static_cast<size_t>(n) < sizeof line
		    ? static_cast<size_t>(n)
		    : sizeof line - 1;
		ssize_t w = ::write(STDERR_FILENO, line, len);
		(void)w;
	}
	abort();
}

/* An error that the standard reports as std::system_error (without
 * exceptions: a misuse message and abort()). */
[[noreturn]] inline __attribute__((noinline, cold)) void
throw_system_error(std::errc e, const char *fn, const void *obj)
{
#if defined(__cpp_exceptions) || defined(__EXCEPTIONS)
	(void)obj;
	throw std::system_error(std::make_error_code(e), fn);
#else
	misuse(fn, "object", obj, std::make_error_code(e).message().c_str());
#endif
}

/* ------------------------------------------------------------------ */
/* Deadlines for the C API.                                            */

/* An absolute deadline on some clock: a timespec, or none (forever). */
struct deadline {
	struct timespec ts;
	bool forever;

	const struct timespec *
	get() const noexcept
	{
		return forever ? nullptr : &ts;
	}
};

/* The epoch of any clock: a deadline that has passed. */
inline deadline
deadline_passed() noexcept
{
	deadline dl;
	dl.ts.tv_sec = 0;
	dl.ts.tv_nsec = 0;
	dl.forever = false;
	return dl;
}

inline deadline
deadline_never() noexcept
{
	deadline dl = deadline_passed();
	dl.forever = true;
	return dl;
}

inline deadline
deadline_at_ns(int64_t ns) noexcept
{
	deadline dl = deadline_passed();
	dl.ts.tv_sec = static_cast<time_t>(ns / 1000000000);
	dl.ts.tv_nsec = static_cast<long>(ns % 1000000000);
	return dl;
}

/* A positive duration in nanoseconds, rounded up; false when it does not
 * fit in an int64_t (about 292 years) or is not a number.  Checked in long
 * double first, whose 64-bit mantissa holds any such count exactly, so
 * that no integer conversion below can overflow. */
template <class Rep, class Period>
inline bool
duration_ns(const std::chrono::duration<Rep, Period> &d, int64_t &ns)
{
	typedef std::ratio_divide<Period, std::nano> per_tick; /* ns a tick */
	long double x = static_cast<long double>(d.count()) *
	    static_cast<long double>(per_tick::num) /
	    static_cast<long double>(per_tick::den);
	if (!(x < 9.2e18L))
		return false;
	if (std::is_integral<Rep>::value && per_tick::den == 1) {
		ns = static_cast<int64_t>(d.count()) *
		    static_cast<int64_t>(per_tick::num); /* exact */
	} else {
		ns = static_cast<int64_t>(x);
		if (static_cast<long double>(ns) < x)
			ns++;
	}
	return true;
}

/* The deadline time_since_epoch after the epoch of its clock. */
template <class Rep, class Period>
inline deadline
deadline_since_epoch(const std::chrono::duration<Rep, Period> &d)
{
	int64_t ns;
	if (!(d > d.zero()))
		return deadline_passed();
	if (!duration_ns(d, ns))
		return deadline_never();
	return deadline_at_ns(ns);
}

/* The CLOCK_MONOTONIC deadline rel from now; the epoch (a deadline that
 * has passed: the C calls then only try) when rel is not positive. */
template <class Rep, class Period>
inline deadline
deadline_after(const std::chrono::duration<Rep, Period> &rel)
{
	int64_t ns;
	if (!(rel > rel.zero()))
		return deadline_passed();
	if (!duration_ns(rel, ns))
		return deadline_never();
	struct timespec now;
	clock_gettime(CLOCK_MONOTONIC, &now);
	int64_t now_ns = static_cast<int64_t>(now.tv_sec) * 1000000000 +
	    static_cast<int64_t>(now.tv_nsec);
	if (ns > INT64_MAX - now_ns)
		return deadline_never();
	return deadline_at_ns(now_ns + ns);
}

/* The clocks that the C API waits on itself. */
template <class Clock> struct c_clock : std::false_type {
};
template <> struct c_clock<std::chrono::steady_clock> : std::true_type {
	static clockid_t
	id() noexcept
	{
		return CLOCK_MONOTONIC;
	}
};
template <> struct c_clock<std::chrono::system_clock> : std::true_type {
	static clockid_t
	id() noexcept
	{
		return CLOCK_REALTIME;
	}
};

/* d as To, a duration of the same period or a finer one (as
 * std::common_type's), at To's limits where the standard's conversion
 * would overflow. */
template <class To, class Rep, class Period>
inline To
saturate_to(const std::chrono::duration<Rep, Period> &d)
{
	typedef typename To::rep rep;
	typedef std::ratio_divide<Period, typename To::period> k; /* To ticks */
	if (std::is_integral<rep>::value && k::num > 1) {
		const rep c = static_cast<rep>(d.count());
		const rep n = static_cast<rep>(k::num);
		if (c > static_cast<rep>(To::max().count() / n))
			return To::max();
		if (c < static_cast<rep>(To::min().count() / n))
			return To::min();
	}
	return std::chrono::duration_cast<To>(d);
}

/* What is left of Clock's time point tp at its time now: zero once now
 * has reached tp, and the longest duration where tp - now would
 * overflow.  Neither the difference nor the conversion of tp and now to
 * their common type overflows, whatever their durations. */
template <class Clock, class Duration>
inline typename std::common_type<Duration, typename Clock::duration>::type
time_left(const std::chrono::time_point<Clock, Duration> &tp,
    const typename Clock::time_point &now)
{
	typedef
	    typename std::common_type<Duration, typename Clock::duration>::type
	        left_type;
	left_type to = saturate_to<left_type>(tp.time_since_epoch());
	left_type from = saturate_to<left_type>(now.time_since_epoch());
	if (!(from < to))
		return left_type::zero();
	if (from < left_type::zero() && to > left_type::max() + from)
		return left_type::max();
	return to - from;
}

/* Acquire with try_until(clock, deadline), which returns whether it did,
 * by the time rel from now... */
template <class Rep, class Period, class Try>
inline bool
acquire_for(const std::chrono::duration<Rep, Period> &rel, Try try_until)
{
	deadline dl = deadline_after(rel);
	return try_until(CLOCK_MONOTONIC, dl.get());
}

/* ... by the time point tp of a clock that the C API knows ... */
template <class Clock, class Duration, class Try>
inline bool
acquire_until(const std::chrono::time_point<Clock, Duration> &tp, Try try_until,
    std::true_type)
{
	deadline dl = deadline_since_epoch(tp.time_since_epoch());
	return try_until(c_clock<Clock>::id(), dl.get());
}

/* ... or of another clock, which need not run at steady_clock's rate:
 * wait on CLOCK_MONOTONIC for what is left, until Clock itself has passed
 * tp.  A tp that has passed already gets one try, as try_lock. */
template <class Clock, class Duration, class Try>
inline bool
acquire_until(const std::chrono::time_point<Clock, Duration> &tp, Try try_until,
    std::false_type)
{
	typedef
	    typename std::common_type<Duration, typename Clock::duration>::type
	        left_type;
	left_type left = time_left(tp, Clock::now());
	for (;;) {
		if (acquire_for(left, try_until))
			return true;
		left = time_left(tp, Clock::now());
		if (!(left > left_type::zero()))
			return false;
	}
}

/* pl_rmutex_timedlock with the deadline on clock: pl_rmutex_t's inline
 * calls (include/parkinglot/rmutex.h) over pl_mutex_clocklock.  EAGAIN
 * when the count would overflow. */
inline int
rmutex_clocklock(
    pl_rmutex_t *m, clockid_t clock, const struct timespec *deadline)
{
	uintptr_t self = pl__rmutex_self();
	if (__atomic_load_n(&m->owner, __ATOMIC_RELAXED) == self) {
		if (m->count == UINT_MAX)
			return EAGAIN;
		m->count++;
		return 0;
	}
	int rc = pl_mutex_clocklock(&m->lock, clock, deadline);
	if (rc != 0)
		return rc;
	__atomic_store_n(&m->owner, self, __ATOMIC_RELAXED);
	m->count = 1;
	return 0;
}

} // namespace detail

/* ------------------------------------------------------------------ */

/*
 * pl::mutex - pl_mutex_t: one byte, unlocked when zero; not recursive
 * (a thread that locks it again deadlocks) and without an owner (any
 * thread may unlock it, as with the C type).  Uncontended lock and unlock
 * are one inline compare-and-swap each; contended, it spins briefly and
 * parks; eventually fair.  unlock() of a mutex that is not locked aborts.
 */
class mutex
{
public:
	typedef pl_mutex_t *native_handle_type;

	constexpr mutex() noexcept : m_()
	{
	}
	~mutex() = default;
	mutex(const mutex &) = delete;
	mutex &operator=(const mutex &) = delete;

	void
	lock() noexcept
	{
		pl_mutex_lock(&m_);
	}

	bool
	try_lock() noexcept
	{
		return pl_mutex_trylock(&m_);
	}

	template <class Rep, class Period>
	bool
	try_lock_for(const std::chrono::duration<Rep, Period> &rel)
	{
		return detail::acquire_for(rel, clocklock());
	}

	template <class Clock, class Duration>
	bool
	try_lock_until(const std::chrono::time_point<Clock, Duration> &tp)
	{
		return detail::acquire_until(
		    tp, clocklock(), detail::c_clock<Clock>());
	}

	void
	unlock() noexcept
	{
		pl_mutex_unlock(&m_);
	}

	/* Not in the standard: pl_mutex_unlock_fair, which hands the mutex
	 * to the longest-waiting thread, if any. */
	void
	unlock_fair() noexcept
	{
		pl_mutex_unlock_fair(&m_);
	}

	native_handle_type
	native_handle() noexcept
	{
		return &m_;
	}

private:
	struct clocklock_fn {
		pl_mutex_t *m;
		bool
		operator()(clockid_t clock, const struct timespec *dl) const
		{
			return pl_mutex_clocklock(m, clock, dl) == 0;
		}
	};
	clocklock_fn
	clocklock() noexcept
	{
		return clocklock_fn{ &m_ };
	}

	pl_mutex_t m_;
};

/*
 * pl::recursive_mutex - pl_rmutex_t: the thread that owns it may lock it
 * again, and owns it until it has unlocked it as many times.  lock() by
 * the owner when the count is at its maximum (UINT_MAX) throws
 * std::system_error with std::errc::resource_unavailable_try_again, as
 * the standard asks, and try_lock() then returns false.  unlock() by a
 * thread that does not own it (the C call returns EPERM; the standard
 * leaves it undefined) prints "pl::recursive_mutex::unlock:
 * recursive_mutex 0x... is not owned by the calling thread" and aborts.
 */
class recursive_mutex
{
public:
	typedef pl_rmutex_t *native_handle_type;

	constexpr recursive_mutex() noexcept : m_()
	{
	}
	~recursive_mutex() = default;
	recursive_mutex(const recursive_mutex &) = delete;
	recursive_mutex &operator=(const recursive_mutex &) = delete;

	void
	lock()
	{
		/* The owner at the maximum count: the standard's error, where
		 * pl_rmutex_lock would abort.  Otherwise pl_rmutex_lock itself
		 * (not a try first), so that a checked build records the lock
		 * as the blocking one it is, with its lock-order edges. */
		if (PL_UNLIKELY(
		        pl_rmutex_is_owned(&m_) && m_.count == UINT_MAX))
			detail::throw_system_error(
			    std::errc::resource_unavailable_try_again,
			    "pl::recursive_mutex::lock", &m_);
		pl_rmutex_lock(&m_);
	}

	bool
	try_lock() noexcept
	{
		return pl_rmutex_trylock(&m_);
	}

	template <class Rep, class Period>
	bool
	try_lock_for(const std::chrono::duration<Rep, Period> &rel)
	{
		return detail::acquire_for(rel, clocklock());
	}

	template <class Clock, class Duration>
	bool
	try_lock_until(const std::chrono::time_point<Clock, Duration> &tp)
	{
		return detail::acquire_until(
		    tp, clocklock(), detail::c_clock<Clock>());
	}

	void
	unlock() noexcept
	{
		if (PL_UNLIKELY(pl_rmutex_unlock(&m_) != 0))
			detail::misuse("pl::recursive_mutex::unlock",
			    "recursive_mutex", &m_,
			    "is not owned by the calling thread");
	}

	native_handle_type
	native_handle() noexcept
	{
		return &m_;
	}

private:
	struct clocklock_fn {
		pl_rmutex_t *m;
		bool
		operator()(clockid_t clock, const struct timespec *dl) const
		{
			return detail::rmutex_clocklock(m, clock, dl) == 0;
		}
	};
	clocklock_fn
	clocklock() noexcept
	{
		return clocklock_fn{ &m_ };
	}

	pl_rmutex_t m_;
};

/*
 * pl::shared_mutex - pl_rwlock_t, one word: exclusive (lock) and shared
 * (lock_shared) ownership, phase-fair: when a writer unlocks, the readers
 * waiting then all get in before the next writer, and a reader that comes
 * while a writer waits queues behind it (so a thread that takes a shared
 * lock again while a writer waits deadlocks).  try_lock_shared fails
 * while a writer waits.  Unlocking what is not held aborts.
 */
class shared_mutex
{
public:
	typedef pl_rwlock_t *native_handle_type;

	constexpr shared_mutex() noexcept : l_()
	{
	}
	~shared_mutex() = default;
	shared_mutex(const shared_mutex &) = delete;
	shared_mutex &operator=(const shared_mutex &) = delete;

	void
	lock() noexcept
	{
		pl_rwlock_wrlock(&l_);
	}

	bool
	try_lock() noexcept
	{
		return pl_rwlock_trywrlock(&l_);
	}

	template <class Rep, class Period>
	bool
	try_lock_for(const std::chrono::duration<Rep, Period> &rel)
	{
		return detail::acquire_for(rel, clockwrlock());
	}

	template <class Clock, class Duration>
	bool
	try_lock_until(const std::chrono::time_point<Clock, Duration> &tp)
	{
		return detail::acquire_until(
		    tp, clockwrlock(), detail::c_clock<Clock>());
	}

	void
	unlock() noexcept
	{
		pl_rwlock_wrunlock(&l_);
	}

	void
	lock_shared() noexcept
	{
		pl_rwlock_rdlock(&l_);
	}

	bool
	try_lock_shared() noexcept
	{
		return pl_rwlock_tryrdlock(&l_);
	}

	template <class Rep, class Period>
	bool
	try_lock_shared_for(const std::chrono::duration<Rep, Period> &rel)
	{
		return detail::acquire_for(rel, clockrdlock());
	}

	template <class Clock, class Duration>
	bool
	try_lock_shared_until(
	    const std::chrono::time_point<Clock, Duration> &tp)
	{
		return detail::acquire_until(
		    tp, clockrdlock(), detail::c_clock<Clock>());
	}

	void
	unlock_shared() noexcept
	{
		pl_rwlock_rdunlock(&l_);
	}

	native_handle_type
	native_handle() noexcept
	{
		return &l_;
	}

private:
	struct clockwrlock_fn {
		pl_rwlock_t *l;
		bool
		operator()(clockid_t clock, const struct timespec *dl) const
		{
			return pl_rwlock_clockwrlock(l, clock, dl) == 0;
		}
	};
	struct clockrdlock_fn {
		pl_rwlock_t *l;
		bool
		operator()(clockid_t clock, const struct timespec *dl) const
		{
			return pl_rwlock_clockrdlock(l, clock, dl) == 0;
		}
	};
	clockwrlock_fn
	clockwrlock() noexcept
	{
		return clockwrlock_fn{ &l_ };
	}
	clockrdlock_fn
	clockrdlock() noexcept
	{
		return clockrdlock_fn{ &l_ };
	}

	pl_rwlock_t l_;
};

/*
 * pl::condition_variable - pl_cond_t, one byte: std::condition_variable
 * for std::unique_lock<pl::mutex>.  notify_all wakes one waiter and moves
 * the others onto the mutex, where each unlock wakes the next.  As in
 * POSIX, all the threads that wait at one time use the same mutex.
 * Waits do not wake spuriously, but a waiter must check its predicate
 * all the same (the predicate forms do).  The timed waits return
 * std::cv_status::timeout when the deadline passed with no notification,
 * else no_timeout; they are thread cancellation points
 * (pl_cond_clockwait), wait() is not (pl_cond_wait).  Whatever a wait
 * returns, the lock holds the mutex again.  Waiting with a unique_lock
 * that does not own its mutex aborts with a message.
 */
class condition_variable
{
public:
	typedef pl_cond_t *native_handle_type;

	constexpr condition_variable() noexcept : c_()
	{
	}
	~condition_variable() = default;
	condition_variable(const condition_variable &) = delete;
	condition_variable &operator=(const condition_variable &) = delete;

	void
	notify_one() noexcept
	{
		pl_cond_signal(&c_);
	}

	void
	notify_all() noexcept
	{
		pl_cond_broadcast(&c_);
	}

	void
	wait(std::unique_lock<mutex> &lock)
	{
		pl_cond_wait(&c_, held(lock, "pl::condition_variable::wait"));
	}

	template <class Predicate>
	void
	wait(std::unique_lock<mutex> &lock, Predicate pred)
	{
		while (!pred())
			wait(lock);
	}

	template <class Clock, class Duration>
	std::cv_status
	wait_until(std::unique_lock<mutex> &lock,
	    const std::chrono::time_point<Clock, Duration> &tp)
	{
		return until(lock, tp, detail::c_clock<Clock>());
	}

	template <class Clock, class Duration, class Predicate>
	bool
	wait_until(std::unique_lock<mutex> &lock,
	    const std::chrono::time_point<Clock, Duration> &tp, Predicate pred)
	{
		while (!pred())
			if (wait_until(lock, tp) == std::cv_status::timeout)
				return pred();
		return true;
	}

	template <class Rep, class Period>
	std::cv_status
	wait_for(std::unique_lock<mutex> &lock,
	    const std::chrono::duration<Rep, Period> &rel)
	{
		detail::deadline dl = detail::deadline_after(rel);
		return clockwait(lock, CLOCK_MONOTONIC, dl.get(),
		    "pl::condition_variable::wait_for");
	}

	/* The deadline is taken once, at the call. */
	template <class Rep, class Period, class Predicate>
	bool
	wait_for(std::unique_lock<mutex> &lock,
	    const std::chrono::duration<Rep, Period> &rel, Predicate pred)
	{
		detail::deadline dl = detail::deadline_after(rel);
		while (!pred())
			if (clockwait(lock, CLOCK_MONOTONIC, dl.get(),
			        "pl::condition_variable::wait_for") ==
			    std::cv_status::timeout)
				return pred();
		return true;
	}

	native_handle_type
	native_handle() noexcept
	{
		return &c_;
	}

private:
	pl_mutex_t *
	held(std::unique_lock<mutex> &lock, const char *fn) noexcept
	{
		if (PL_UNLIKELY(!lock.owns_lock()))
			detail::misuse(fn, "condition_variable", &c_,
			    "waited on with a std::unique_lock that does not "
			    "own its mutex");
		return lock.mutex()->native_handle();
	}

	std::cv_status
	clockwait(std::unique_lock<mutex> &lock, clockid_t clock,
	    const struct timespec *dl, const char *fn)
	{
		int rc = pl_cond_clockwait(&c_, held(lock, fn), clock, dl);
		return rc == ETIMEDOUT ? std::cv_status::timeout
		                       : std::cv_status::no_timeout;
	}

	template <class Clock, class Duration>
	std::cv_status
	until(std::unique_lock<mutex> &lock,
	    const std::chrono::time_point<Clock, Duration> &tp, std::true_type)
	{
		detail::deadline dl =
		    detail::deadline_since_epoch(tp.time_since_epoch());
		return clockwait(lock, detail::c_clock<Clock>::id(), dl.get(),
		    "pl::condition_variable::wait_until");
	}

	/* Another clock: wait on steady_clock for what is left, and report
	 * a timeout only if Clock has passed tp too (as libstdc++ does). */
	template <class Clock, class Duration>
	std::cv_status
	until(std::unique_lock<mutex> &lock,
	    const std::chrono::time_point<Clock, Duration> &tp, std::false_type)
	{
		typedef typename std::common_type<Duration,
		    typename Clock::duration>::type left_type;
		if (wait_for(lock, detail::time_left(tp, Clock::now())) ==
		    std::cv_status::no_timeout)
			return std::cv_status::no_timeout;
		return detail::time_left(tp, Clock::now()) > left_type::zero()
		    ? std::cv_status::no_timeout
		    : std::cv_status::timeout;
	}

	pl_cond_t c_;
};

/* ------------------------------------------------------------------ */
/* call_once                                                           */

/*
 * pl::once_flag - pl_once_t, one byte: the flag of pl::call_once.  Its C
 * object may also be given to pl_once.
 */
class once_flag
{
public:
	typedef pl_once_t *native_handle_type;

	constexpr once_flag() noexcept : o_()
	{
	}
	~once_flag() = default;
	once_flag(const once_flag &) = delete;
	once_flag &operator=(const once_flag &) = delete;

	native_handle_type
	native_handle() noexcept
	{
		return &o_;
	}

private:
	pl_once_t o_;
};

namespace detail
{

/* What pl_once's function gets: a callable, and how to call it. */
struct once_call {
	void (*run)(void *callable);
	void *callable;
};

template <class Callable>
void
run_callable(void *callable)
{
	(*static_cast<Callable *>(callable))();
}

/* pl_once's function, with the C linkage of its type (so one name for
 * every namespace: a pl_ one, hidden, out of the dynamic symbol table of
 * a program or library that uses it).  An exception thrown by the
 * callable unwinds through pl_once, which is built with -fexceptions and
 * so leaves the flag unset (doc/pl_once.3). */
extern "C" {
inline __attribute__((visibility("hidden"))) void
pl_cxx_once_trampoline(void *arg)
{
	once_call *c = static_cast<once_call *>(arg);
	c->run(c->callable);
}
}

/* INVOKE(f, args...), its result discarded. */
#if __cplusplus >= 201703L
template <class F, class... Args>
inline void
invoke_void(F &&f, Args &&...args)
{
	static_cast<void>(
	    std::invoke(std::forward<F>(f), std::forward<Args>(args)...));
}
#else
/* C++11 and C++14: a pointer to member through std::mem_fn (on an
 * object, a reference, a pointer or a smart pointer), anything else
 * called as it is. */
template <class F, class... Args>
inline void
invoke_member(std::true_type /* member */, F &&f, Args &&...args)
{
	static_cast<void>(std::mem_fn(f)(std::forward<Args>(args)...));
}

template <class F, class... Args>
inline void
invoke_member(std::false_type /* member */, F &&f, Args &&...args)
{
	static_cast<void>(std::forward<F>(f)(std::forward<Args>(args)...));
}

template <class F, class... Args>
inline void
invoke_void(F &&f, Args &&...args)
{
	invoke_member(std::is_member_pointer<typename std::decay<F>::type>(),
	    std::forward<F>(f), std::forward<Args>(args)...);
}
#endif

} // namespace detail

/*
 * pl::call_once - std::call_once on a pl::once_flag: if no call on flag
 * has returned from its callable yet, INVOKE(forward(f), forward(args)...)
 * (an active call), else return at once (a passive one).  Calls that
 * come while an active one runs wait for it.  If the callable throws, the
 * exception reaches this call's caller and flag stays unset: the next
 * call, one that was waiting or a later one, is active in turn.  Once a
 * callable has returned, every call on flag returns at once, and what the
 * callable did happens before that.  A call on flag from inside its own
 * callable aborts with pl_once's message.
 */
template <class Callable, class... Args>
inline void
call_once(once_flag &flag, Callable &&f, Args &&...args)
{
	auto call = [&]() {
		detail::invoke_void(
		    std::forward<Callable>(f), std::forward<Args>(args)...);
	};
	detail::once_call c = { &detail::run_callable<decltype(call)>, &call };
	pl_once(flag.native_handle(), detail::pl_cxx_once_trampoline, &c);
}

/* The standard's timed types are these, which are timed already. */
typedef mutex timed_mutex;
typedef recursive_mutex recursive_timed_mutex;
typedef shared_mutex shared_timed_mutex;

/* Each type is its C object, no more. */
static_assert(sizeof(mutex) == 1, "pl::mutex is one byte");
static_assert(sizeof(recursive_mutex) == sizeof(pl_rmutex_t),
    "pl::recursive_mutex is a pl_rmutex_t");
static_assert(
    sizeof(shared_mutex) == sizeof(uintptr_t), "pl::shared_mutex is one word");
static_assert(
    sizeof(condition_variable) == 1, "pl::condition_variable is one byte");
static_assert(sizeof(once_flag) == 1, "pl::once_flag is one byte");

} // namespace pl

#endif /* PARKINGLOT_HPP */
