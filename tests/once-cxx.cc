// SPDX-License-Identifier: MIT
//
// A C++ exception thrown by the function of a pl_once leaves the once new
// again, as cancellation does (lib/once.c is built with -fexceptions for
// that): the caller catches it, a waiter parked meanwhile is woken and
// runs the function itself, and nobody stays parked; glibc's pthread_once
// gives the same outcome.  Prints TAP; every wait is bounded (a hang
// prints "not ok" and exits).
#include <parkinglot.h>

#include <pthread.h>

#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <stdexcept>
#include <string>
#include <thread>
#include <unistd.h>

namespace
{

const auto wait_limit = std::chrono::seconds(10);

pl_filter_op_t
count_filter(uintptr_t, void *ctx)
{
	++*static_cast<size_t *>(ctx);
	return PL_FILTER_SKIP;
}

// How many threads are parked on addr (nobody is woken).
size_t
parked_on(const void *addr)
{
	size_t n = 0;
	pl_unpark_filter(addr, count_filter, nullptr, &n);
	return n;
}

// Poll pred until it holds or the limit passes; its last value.
template <class Pred>
bool
wait_for(Pred pred)
{
	auto end = std::chrono::steady_clock::now() + wait_limit;
	while (!pred()) {
		if (std::chrono::steady_clock::now() >= end)
			return pred();
		std::this_thread::sleep_for(std::chrono::microseconds(50));
	}
	return true;
}

int test_no = 0;

void
report(bool ok, const char *what)
{
	std::printf("%s %d - %s\n", ok ? "ok" : "not ok", ++test_no, what);
	std::fflush(stdout);
}

// 1. One thread: the exception reaches the caller, the once is new.
pl_once_t alone = PL_ONCE_INIT;
int alone_calls;

void
alone_fn(void *)
{
	if (alone_calls++ == 0)
		throw std::runtime_error("first run fails");
}

void
throw_alone()
{
	bool caught = false;
	try {
		pl_once(&alone, alone_fn, nullptr);
	} catch (const std::runtime_error &) {
		caught = true;
	}
	bool reset = alone.state == 0;
	report(caught && reset,
	    "the exception reaches the caller, the once is new again");
	if (!reset) { // calling it again would wait forever
		std::printf("Bail out! the once stays running (state %d)\n",
		    alone.state);
		std::fflush(stdout);
		_exit(1);
	}
	pl_once(&alone, alone_fn, nullptr);
	pl_once(&alone, alone_fn, nullptr);
	report(alone_calls == 2 && alone.state == PL_ONCE_DONE,
	    "the same thread runs fn again, once");
}

// 2. A waiter is parked while fn throws: it runs fn itself.
pl_once_t shared = PL_ONCE_INIT;
std::atomic<int> shared_calls{ 0 };
std::atomic<bool> in_fn{ false }, waiter_done{ false };
int value; // plain: written by the run that returns

void
shared_fn(void *)
{
	if (shared_calls.fetch_add(1) != 0) {
		value = 42;
		return;
	}
	in_fn = true;
	bool parked = wait_for([] { return parked_on(&shared) == 1; });
	throw std::runtime_error(parked ? "parked" : "not parked");
}

void
throw_with_waiter()
{
	bool waiter_saw = false;
	std::thread runner([] {
		try {
			pl_once(&shared, shared_fn, nullptr);
		} catch (const std::runtime_error &e) {
			report(std::string(e.what()) == "parked",
			    "fn throws with a waiter parked on the once");
		}
	});
	if (!wait_for([] { return in_fn.load(); })) {
		report(false, "fn started");
		_exit(1);
	}
	std::thread waiter([&waiter_saw] {
		pl_once(&shared, shared_fn, nullptr);
		waiter_saw = value == 42;
		waiter_done = true;
	});
	runner.join();
	if (!wait_for([] { return waiter_done.load(); })) {
		report(false, "the waiter is woken and returns");
		_exit(1);
	}
	waiter.join();
	report(waiter_saw && shared_calls == 2,
	    "the waiter ran fn itself and saw its write");
	report(shared.state == PL_ONCE_DONE && parked_on(&shared) == 0,
	    "the once is done and nobody is parked");
}

// 3. glibc's pthread_once, which pl_once follows, does the same.
pthread_once_t glibc_once = PTHREAD_ONCE_INIT;
int glibc_calls;

extern "C" void
glibc_fn()
{
	if (glibc_calls++ == 0)
		throw std::runtime_error("first run fails");
}

void
throw_glibc()
{
#ifdef __SANITIZE_THREAD__
	// ThreadSanitizer replaces pthread_once with an interceptor of its
	// own, which an exception leaves running: its next call would hang.
	std::printf(
	    "ok %d - glibc's pthread_once # SKIP under TSan\n", ++test_no);
	return;
#endif
	bool caught = false;
	try {
		pthread_once(&glibc_once, glibc_fn);
	} catch (const std::runtime_error &) {
		caught = true;
	}
	pthread_once(&glibc_once, glibc_fn);
	pthread_once(&glibc_once, glibc_fn);
	report(caught && glibc_calls == 2,
	    "glibc's pthread_once: the same outcome");
}

} // namespace

int
main()
{
	std::printf("1..6\n");
	throw_alone();
	throw_with_waiter();
	throw_glibc();
	return 0;
}
