// SPDX-License-Identifier: MIT
//
// dropin-cxx: the locks of the C++17 standard library, as an unmodified
// program uses them.  It includes no header of libparkinglot: libstdc++
// implements these types on pthread_mutex_*, pthread_cond_*,
// pthread_rwlock_* and pthread_once, so run with LD_PRELOAD of
// libparkinglot-pthread.so it runs on the parking lot, and run alone on
// glibc; tests/dropin-cxx.sh runs it both ways.
//
//   dropin-cxx [SECTION...]   run those sections (all by default)
//   dropin-cxx --list         print the section names
//
// Sections: mutex, recursive_mutex, timed_mutex, condition_variable,
// shared_mutex, call_once.  Each runs its threads against one another (4
// at a time, stress loops bounded by a count and by 1 s), and, to make
// sure some thread really waits, lets a thread block on a lock that
// another holds: it waits until that thread sleeps in the kernel (state S
// in /proc/self/task/TID/stat, polled for at most 2 s) before releasing.
// No assertion depends on it having blocked.  A check that fails prints
// one line "dropin-cxx: FAIL section: what"; the exit status is 0 only if
// every check passed (1 otherwise, 2 for a bad command line).  A thread
// that does not finish within 10 s is reported and the program exits 1.
#include <algorithm>
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdio>
#include <cstdlib>
#include <deque>
#include <filesystem>
#include <fstream>
#include <memory>
#include <mutex>
#include <shared_mutex>
#include <stdexcept>
#include <string>
#include <thread>
#include <utility>
#include <vector>

namespace
{

using namespace std::chrono_literals;
using steady = std::chrono::steady_clock;
using sysclock = std::chrono::system_clock;

constexpr int n_threads = 4;
constexpr auto stress_time = 1s;
constexpr auto block_limit = 2s;
constexpr auto join_limit = 10s;
constexpr auto timeout = 50ms;

const char *section = "";
std::atomic<int> n_checks{ 0 };
std::atomic<int> n_failed{ 0 };

void
check(bool ok, const std::string &what)
{
	n_checks.fetch_add(1);
	if (!ok) {
		n_failed.fetch_add(1);
		std::printf("dropin-cxx: FAIL %s: %s\n", section, what.c_str());
		std::fflush(stdout);
	}
}

long long
ms(steady::duration d)
{
	return std::chrono::duration_cast<std::chrono::milliseconds>(d).count();
}

// A stress loop's end: a count of iterations or stress_time, whichever
// comes first.
class Bound
{
public:
	explicit Bound(long max) : max_(max), end_(steady::now() + stress_time)
	{
	}
	bool
	more(long i) const
	{
		return i < max_ && ((i & 255) != 0 || steady::now() < end_);
	}

private:
	long max_;
	steady::time_point end_;
};

// The kernel's id of the calling thread, from /proc/thread-self.
std::string
thread_id()
{
	std::error_code ec;
	auto p = std::filesystem::read_symlink("/proc/thread-self", ec);
	return ec ? std::string() : p.filename().string();
}

// The state letter of a thread of this process ('?' if unknown).
char
thread_state(const std::string &tid)
{
	std::ifstream f("/proc/self/task/" + tid + "/stat");
	std::string line;
	if (!std::getline(f, line))
		return '?';
	auto p = line.rfind(')');
	if (p == std::string::npos || p + 2 >= line.size())
		return '?';
	return line[p + 2];
}

// Poll pred (every 0.2 ms) until it holds or limit passes; its last value.
template <class Pred>
bool
await(Pred pred, steady::duration limit)
{
	auto end = steady::now() + limit;
	while (!pred()) {
		if (steady::now() >= end)
			return pred();
		std::this_thread::sleep_for(200us);
	}
	return true;
}

// A thread of a test, which the test can watch: its id is published
// before its body runs, and whether its body returned.
class Worker
{
public:
	Worker() = default;
	Worker(const Worker &) = delete;
	Worker &operator=(const Worker &) = delete;
	~Worker()
	{
		if (thread_.joinable())
			thread_.join();
	}

	template <class F>
	void
	start(F body)
	{
		thread_ = std::thread([this, body]() mutable {
			tid_ = thread_id();
			published_.store(true, std::memory_order_release);
			body();
			done_.store(true, std::memory_order_release);
		});
	}

	// Wait until the body sleeps in the kernel (blocked on a lock or a
	// condition), at most block_limit, or returns: a chance to block,
	// never an assertion.
	bool
	blocked() const
	{
		auto end = steady::now() + block_limit;
		if (!await([this] { return published_.load(); }, block_limit))
			return false;
		return await(
		           [this] {
			           return done() || thread_state(tid_) == 'S';
		           },
		           end - steady::now()) &&
		    !done();
	}

	bool
	done() const
	{
		return done_.load(std::memory_order_acquire);
	}

	// Join, if the body returns within join_limit; if not, the thread
	// hangs: say so and exit 1.
	void
	join(const char *what)
	{
		if (!await([this] { return done(); }, join_limit)) {
			check(false,
			    std::string(what) + " did not finish in " +
			        std::to_string(ms(join_limit)) + " ms");
			std::fflush(stdout);
			std::_Exit(1);
		}
		thread_.join();
	}

private:
	std::atomic<bool> published_{ false };
	std::atomic<bool> done_{ false };
	std::string tid_;
	std::thread thread_;
};

// ---------------------------------------------------------------------
// std::mutex

void
test_mutex()
{
	std::mutex m;
	long counter = 0;
	std::atomic<int> inside{ 0 }, overlaps{ 0 };
	long counts[n_threads] = {};
	{
		Worker w[n_threads];
		for (int t = 0; t < n_threads; t++)
			w[t].start([&, t] {
				Bound b(200000);
				long i = 0;
				for (; b.more(i); i++) {
					std::lock_guard<std::mutex> g(m);
					if (inside.fetch_add(1) != 0)
						overlaps.fetch_add(1);
					counter++;
					inside.fetch_sub(1);
				}
				counts[t] = i;
			});
		for (auto &x : w)
			x.join("a mutex stress thread");
	}
	long sum = 0;
	for (long c : counts)
		sum += c;
	check(counter == sum,
	    "counter " + std::to_string(counter) + " after " +
	        std::to_string(sum) + " locked increments");
	check(overlaps.load() == 0,
	    std::to_string(overlaps.load()) + " overlaps in the mutex");

	// Held: try_lock from another thread fails, lock blocks until the
	// unlock.
	m.lock();
	std::atomic<int> tried{ -1 };
	std::atomic<bool> got{ false };
	{
		Worker w;
		w.start([&] {
			bool ok = m.try_lock();
			if (ok)
				m.unlock();
			tried.store(ok);
			m.lock();
			got.store(true);
			m.unlock();
		});
		w.blocked();
		check(tried.load() == 0, "try_lock of a held mutex succeeded");
		check(!got.load(), "lock of a held mutex returned");
		m.unlock();
		w.join("the thread blocked in lock");
	}
	check(got.load(), "the blocked lock did not get the mutex");
	bool ok = m.try_lock();
	check(ok, "try_lock of a free mutex failed");
	if (ok)
		m.unlock();
}

// ---------------------------------------------------------------------
// std::recursive_mutex

void
test_recursive_mutex()
{
	std::recursive_mutex m;
	long counter = 0;
	std::atomic<int> inside{ 0 }, overlaps{ 0 }, try_fails{ 0 };
	long counts[n_threads] = {};
	{
		Worker w[n_threads];
		for (int t = 0; t < n_threads; t++)
			w[t].start([&, t] {
				Bound b(100000);
				long i = 0;
				for (; b.more(i); i++) {
					m.lock();
					m.lock();
					if (!m.try_lock())
						try_fails.fetch_add(1);
					else
						m.unlock();
					if (inside.fetch_add(1) != 0)
						overlaps.fetch_add(1);
					counter++;
					inside.fetch_sub(1);
					m.unlock();
					m.unlock();
				}
				counts[t] = i;
			});
		for (auto &x : w)
			x.join("a recursive_mutex stress thread");
	}
	long sum = 0;
	for (long c : counts)
		sum += c;
	check(counter == sum,
	    "counter " + std::to_string(counter) + " after " +
	        std::to_string(sum) + " locked increments");
	check(overlaps.load() == 0,
	    std::to_string(overlaps.load()) + " overlaps in the mutex");
	check(try_fails.load() == 0,
	    std::to_string(try_fails.load()) + " try_lock by the owner failed");

	// Held twice by this thread: another blocks until both unlocks.
	m.lock();
	m.lock();
	std::atomic<int> tried{ -1 };
	std::atomic<bool> got{ false };
	{
		Worker w;
		w.start([&] {
			bool ok = m.try_lock();
			if (ok)
				m.unlock();
			tried.store(ok);
			m.lock();
			got.store(true);
			m.unlock();
		});
		w.blocked();
		check(
		    tried.load() == 0, "try_lock by another thread succeeded");
		m.unlock();
		w.blocked();
		check(!got.load(), "another thread got it, still held once");
		m.unlock();
		w.join("the thread blocked in lock");
	}
	check(got.load(), "the blocked lock did not get the mutex");
}

// ---------------------------------------------------------------------
// std::timed_mutex

void
test_timed_mutex()
{
	std::timed_mutex m;

	// Free: each kind of timed lock gets it, even past its deadline.
	bool ok = m.try_lock_for(10ms);
	check(ok, "try_lock_for of a free timed_mutex failed");
	if (ok)
		m.unlock();
	ok = m.try_lock_until(steady::now() + 10ms);
	check(ok, "try_lock_until(steady_clock) of a free timed_mutex failed");
	if (ok)
		m.unlock();
	ok = m.try_lock_until(sysclock::now() + 10ms);
	check(ok, "try_lock_until(system_clock) of a free timed_mutex failed");
	if (ok)
		m.unlock();
	ok = m.try_lock_until(steady::now() - 1s);
	check(ok, "try_lock_until(a past time) of a free timed_mutex failed");
	if (ok)
		m.unlock();

	// Held: each times out, after its time and not much later.
	m.lock();
	{
		Worker w;
		w.start([&] {
			auto t0 = steady::now();
			bool r = m.try_lock_for(timeout);
			auto e = steady::now() - t0;
			check(
			    !r, "try_lock_for of a held timed_mutex succeeded");
			check(e >= timeout && e < 5s,
			    "try_lock_for(50 ms) returned after " +
			        std::to_string(ms(e)) + " ms");

			auto d = steady::now() + timeout;
			r = m.try_lock_until(d);
			auto late = steady::now() - d;
			check(!r,
			    "try_lock_until(steady_clock) of a held "
			    "timed_mutex succeeded");
			check(late >= 0s && late < 5s,
			    "try_lock_until(steady_clock) returned " +
			        std::to_string(ms(late)) +
			        " ms after its deadline");

			auto ds = sysclock::now() + timeout;
			t0 = steady::now();
			r = m.try_lock_until(ds);
			e = steady::now() - t0;
			check(!r,
			    "try_lock_until(system_clock) of a held "
			    "timed_mutex succeeded");
			check(sysclock::now() >= ds && e < 5s,
			    "try_lock_until(system_clock) returned before its "
			    "deadline or after " +
			        std::to_string(ms(e)) + " ms");
		});
		w.join("the thread timing out on the timed_mutex");
	}

	// Held, then released: a thread blocked in try_lock_for gets it.
	std::atomic<bool> got{ false };
	{
		Worker w;
		w.start([&] {
			if (m.try_lock_for(join_limit)) {
				got.store(true);
				m.unlock();
			}
		});
		w.blocked();
		check(!got.load(), "try_lock_for got a held timed_mutex");
		m.unlock();
		w.join("the thread blocked in try_lock_for");
	}
	check(got.load(),
	    "try_lock_for did not get the timed_mutex released "
	    "while it waited");

	// Contended: timed locks with a long deadline always get it.
	long counter = 0;
	std::atomic<int> inside{ 0 }, overlaps{ 0 }, timeouts{ 0 };
	long counts[n_threads] = {};
	{
		Worker w[n_threads];
		for (int t = 0; t < n_threads; t++)
			w[t].start([&, t] {
				Bound b(100000);
				long i = 0;
				for (; b.more(i); i++) {
					bool r = (i & 1)
					    ? m.try_lock_for(2s)
					    : m.try_lock_until(
					          sysclock::now() + 2s);
					if (!r) {
						timeouts.fetch_add(1);
						continue;
					}
					if (inside.fetch_add(1) != 0)
						overlaps.fetch_add(1);
					counter++;
					inside.fetch_sub(1);
					m.unlock();
				}
				counts[t] = i;
			});
		for (auto &x : w)
			x.join("a timed_mutex stress thread");
	}
	long sum = 0;
	for (long c : counts)
		sum += c;
	check(timeouts.load() == 0,
	    std::to_string(timeouts.load()) + " timed locks of 2 s timed out");
	check(counter == sum - timeouts.load(),
	    "counter " + std::to_string(counter) + " after " +
	        std::to_string(sum) + " locked increments");
	check(overlaps.load() == 0,
	    std::to_string(overlaps.load()) + " overlaps in the mutex");

	// std::recursive_timed_mutex: the owner's timed lock nests, another
	// thread's times out.
	std::recursive_timed_mutex rm;
	rm.lock();
	ok = rm.try_lock_for(10ms);
	check(ok,
	    "try_lock_for by the owner of a recursive_timed_mutex "
	    "failed");
	if (ok)
		rm.unlock();
	{
		Worker w;
		w.start([&] {
			bool r = rm.try_lock_for(timeout);
			check(!r,
			    "try_lock_for of a held recursive_timed_mutex "
			    "succeeded");
			if (r)
				rm.unlock();
		});
		w.join("the thread timing out on the recursive_timed_mutex");
	}
	rm.unlock();
}

// ---------------------------------------------------------------------
// std::condition_variable

void
test_condition_variable()
{
	std::mutex m;
	std::condition_variable cv;

	// wait with a predicate returns once it holds and it is notified.
	bool ready = false;
	std::atomic<bool> woke{ false };
	{
		Worker w;
		w.start([&] {
			std::unique_lock<std::mutex> lk(m);
			cv.wait(lk, [&] { return ready; });
			woke.store(true);
		});
		w.blocked();
		check(!woke.load(), "wait(pred) returned before pred held");
		{
			std::lock_guard<std::mutex> g(m);
			ready = true;
		}
		cv.notify_one();
		w.join("the thread in wait(pred) after notify_one");
	}
	check(woke.load(), "wait(pred) did not return after notify_one");

	// Nobody notifies: wait_for and wait_until (both clocks) time out,
	// after their time (allowing two early returns, spurious wakeups),
	// with the mutex locked again.
	{
		std::unique_lock<std::mutex> lk(m);
		auto t0 = steady::now();
		bool r = cv.wait_for(lk, timeout, [] { return false; });
		auto e = steady::now() - t0;
		check(!r && e >= timeout && e < 5s,
		    "wait_for(50 ms, pred) returned " + std::to_string(r) +
		        " after " + std::to_string(ms(e)) + " ms");

		t0 = steady::now();
		std::cv_status st = std::cv_status::no_timeout;
		for (int i = 0; i < 3 && st == std::cv_status::no_timeout; i++)
			st = cv.wait_for(lk, timeout);
		e = steady::now() - t0;
		check(st == std::cv_status::timeout && e >= timeout && e < 5s,
		    "wait_for(50 ms) did not time out, or after " +
		        std::to_string(ms(e)) + " ms");

		auto d = steady::now() + timeout;
		st = std::cv_status::no_timeout;
		for (int i = 0; i < 3 && st == std::cv_status::no_timeout; i++)
			st = cv.wait_until(lk, d);
		check(st == std::cv_status::timeout && steady::now() >= d,
		    "wait_until(steady_clock) did not time out");

		auto ds = sysclock::now() + timeout;
		st = std::cv_status::no_timeout;
		for (int i = 0; i < 3 && st == std::cv_status::no_timeout; i++)
			st = cv.wait_until(lk, ds);
		check(st == std::cv_status::timeout && sysclock::now() >= ds,
		    "wait_until(system_clock) did not time out");

		std::atomic<int> tried{ -1 };
		Worker w;
		w.start([&] {
			bool ok = m.try_lock();
			if (ok)
				m.unlock();
			tried.store(ok);
		});
		w.join("the thread trying the mutex after wait_for");
		check(tried.load() == 0,
		    "the mutex was not locked after wait_for timed out");
	}

	// notify_one wakes a waiter: two wait for tokens, one at a time.
	{
		int tokens = 0;
		std::atomic<int> taken{ 0 };
		Worker w[2];
		for (auto &x : w)
			x.start([&] {
				std::unique_lock<std::mutex> lk(m);
				cv.wait(lk, [&] { return tokens > 0; });
				tokens--;
				taken.fetch_add(1);
			});
		for (int k = 1; k <= 2; k++) {
			w[0].blocked();
			w[1].blocked();
			{
				std::lock_guard<std::mutex> g(m);
				tokens++;
			}
			cv.notify_one();
			bool ok = await(
			    [&] { return taken.load() == k; }, join_limit);
			check(ok,
			    "notify_one number " + std::to_string(k) +
			        " woke no waiter (" +
			        std::to_string(taken.load()) +
			        " tokens taken)");
		}
		for (auto &x : w)
			x.join("a thread waiting for a token");
	}

	// notify_all wakes every waiter.
	{
		bool open = false;
		int arrived = 0;
		std::atomic<int> passed{ 0 };
		Worker w[3];
		for (auto &x : w)
			x.start([&] {
				std::unique_lock<std::mutex> lk(m);
				arrived++;
				cv.wait(lk, [&] { return open; });
				passed.fetch_add(1);
			});
		for (auto &x : w)
			x.blocked();
		{
			std::lock_guard<std::mutex> g(m);
			open = true;
		}
		cv.notify_all();
		for (auto &x : w)
			x.join("a thread waiting for notify_all");
		check(passed.load() == 3,
		    std::to_string(passed.load()) +
		        " of 3 waiters passed after notify_all");
		check(arrived == 3, std::to_string(arrived) + " of 3 arrived");
	}

	// Producers and consumers on a bounded queue, notify_one each way,
	// notify_all at the end: every item consumed once, each producer's
	// in order.
	{
		constexpr int producers = 2, consumers = 2;
		constexpr long per_producer = 50000;
		constexpr size_t capacity = 16;
		std::condition_variable not_empty, not_full;
		std::deque<std::pair<int, long>> q;
		std::vector<std::vector<unsigned char>> seen(
		    producers, std::vector<unsigned char>(per_producer));
		long produced[producers] = {};
		long consumed[consumers] = {};
		int producers_done = 0;
		std::atomic<int> disorder{ 0 };
		Worker w[producers + consumers];
		for (int p = 0; p < producers; p++)
			w[p].start([&, p] {
				Bound b(per_producer);
				long i = 0;
				for (; b.more(i); i++) {
					std::unique_lock<std::mutex> lk(m);
					not_full.wait(lk, [&] {
						return q.size() < capacity;
					});
					q.emplace_back(p, i);
					lk.unlock();
					not_empty.notify_one();
				}
				std::lock_guard<std::mutex> g(m);
				produced[p] = i;
				producers_done++;
				not_empty.notify_all();
			});
		for (int c = 0; c < consumers; c++)
			w[producers + c].start([&, c] {
				long last[producers];
				std::fill(last, last + producers, -1L);
				std::unique_lock<std::mutex> lk(m);
				for (;;) {
					not_empty.wait(lk, [&] {
						return !q.empty() ||
						    producers_done == producers;
					});
					if (q.empty())
						break;
					auto item = q.front();
					q.pop_front();
					if (item.second <= last[item.first])
						disorder.fetch_add(1);
					last[item.first] = item.second;
					seen[item.first][item.second]++;
					consumed[c]++;
					lk.unlock();
					not_full.notify_one();
					lk.lock();
				}
			});
		for (auto &x : w)
			x.join("a producer or consumer");
		long made = 0, got = 0, bad = 0;
		for (int p = 0; p < producers; p++) {
			made += produced[p];
			for (long i = 0; i < per_producer; i++)
				bad += seen[p][i] != (i < produced[p]);
		}
		for (long c : consumed)
			got += c;
		check(made > 0 && got == made,
		    std::to_string(got) + " items consumed of " +
		        std::to_string(made) + " produced");
		check(bad == 0,
		    std::to_string(bad) + " items not consumed exactly once");
		check(disorder.load() == 0,
		    std::to_string(disorder.load()) +
		        " items of a producer out of order");
	}

	// A barrier on notify_all, round after round, 4 threads: the last to
	// arrive starts the next round (or ends the run after its time).
	{
		long generation = 0;
		int arrived = 0;
		bool stop = false;
		long rounds[n_threads] = {};
		Bound b(10000);
		Worker w[n_threads];
		for (int t = 0; t < n_threads; t++)
			w[t].start([&, t] {
				std::unique_lock<std::mutex> lk(m);
				while (!stop) {
					long g = generation;
					rounds[t]++;
					if (++arrived == n_threads) {
						arrived = 0;
						generation++;
						stop = !b.more(generation);
						cv.notify_all();
					} else {
						cv.wait(lk, [&] {
							return generation != g;
						});
					}
				}
			});
		for (auto &x : w)
			x.join("a thread of the notify_all barrier");
		bool all = true;
		for (long r : rounds)
			all = all && r == generation;
		check(generation > 0 && all,
		    "barrier: " + std::to_string(generation) +
		        " rounds, not all threads passed each");
	}
}

// ---------------------------------------------------------------------
// std::shared_mutex

void
test_shared_mutex()
{
	std::shared_mutex m;

	// Readers and writers: a writer alone, readers among themselves.
	long a = 0, b = 0;
	std::atomic<int> readers{ 0 }, writers{ 0 }, bad{ 0 }, torn{ 0 };
	long writes[n_threads] = {};
	{
		Worker w[n_threads];
		for (int t = 0; t < n_threads; t++)
			w[t].start([&, t] {
				Bound bound(100000);
				for (long i = 0; bound.more(i); i++) {
					if ((i + t) % 8 == 0) {
						std::unique_lock<
						    std::shared_mutex>
						    lk(m);
						if (writers.fetch_add(1) != 0 ||
						    readers.load() != 0)
							bad.fetch_add(1);
						a++;
						b++;
						writes[t]++;
						writers.fetch_sub(1);
					} else {
						std::shared_lock<
						    std::shared_mutex>
						    lk(m);
						readers.fetch_add(1);
						if (writers.load() != 0)
							bad.fetch_add(1);
						if (a != b)
							torn.fetch_add(1);
						readers.fetch_sub(1);
					}
				}
			});
		for (auto &x : w)
			x.join("a shared_mutex stress thread");
	}
	long sum = 0;
	for (long x : writes)
		sum += x;
	check(bad.load() == 0,
	    std::to_string(bad.load()) + " times a writer was not alone");
	check(torn.load() == 0,
	    std::to_string(torn.load()) + " reads saw a write half done");
	check(a == sum && b == sum,
	    "a " + std::to_string(a) + ", b " + std::to_string(b) + " after " +
	        std::to_string(sum) + " writes");

	// Shared ownership is shared: a second reader gets in.
	m.lock_shared();
	{
		std::atomic<bool> got{ false };
		Worker w;
		w.start([&] {
			m.lock_shared();
			got.store(true);
			m.unlock_shared();
		});
		bool ok = await([&] { return got.load(); }, join_limit);
		check(ok, "a second reader did not get in beside the first");
		m.unlock_shared();
		w.join("the second reader");
	}

	// A writer excludes readers and writers.
	m.lock();
	{
		std::atomic<int> tried_shared{ -1 }, tried{ -1 };
		std::atomic<bool> got{ false };
		Worker w;
		w.start([&] {
			bool ok = m.try_lock_shared();
			if (ok)
				m.unlock_shared();
			tried_shared.store(ok);
			ok = m.try_lock();
			if (ok)
				m.unlock();
			tried.store(ok);
			m.lock_shared();
			got.store(true);
			m.unlock_shared();
		});
		w.blocked();
		check(tried_shared.load() == 0,
		    "try_lock_shared succeeded against a writer");
		check(tried.load() == 0, "try_lock succeeded against a writer");
		check(!got.load(), "lock_shared returned against a writer");
		m.unlock();
		w.join("the reader blocked by a writer");
		check(got.load(), "the blocked reader did not get in");
	}

	// A reader excludes writers.
	m.lock_shared();
	{
		std::atomic<int> tried{ -1 };
		std::atomic<bool> got{ false };
		Worker w;
		w.start([&] {
			bool ok = m.try_lock();
			if (ok)
				m.unlock();
			tried.store(ok);
			m.lock();
			got.store(true);
			m.unlock();
		});
		w.blocked();
		check(tried.load() == 0, "try_lock succeeded against a reader");
		check(!got.load(), "lock returned against a reader");
		m.unlock_shared();
		w.join("the writer blocked by a reader");
		check(got.load(), "the blocked writer did not get in");
	}

	// std::shared_timed_mutex: timed locks of each kind time out against
	// the other kind, and get it when free.
	std::shared_timed_mutex tm;
	tm.lock_shared();
	{
		Worker w;
		w.start([&] {
			auto t0 = steady::now();
			bool r = tm.try_lock_for(timeout);
			auto e = steady::now() - t0;
			check(!r && e >= timeout && e < 5s,
			    "try_lock_for against a reader: " +
			        std::to_string(r) + " after " +
			        std::to_string(ms(e)) + " ms");
			auto ds = sysclock::now() + timeout;
			r = tm.try_lock_until(ds);
			check(!r && sysclock::now() >= ds,
			    "try_lock_until(system_clock) against a reader");
		});
		w.join("the timed writer");
	}
	tm.unlock_shared();
	tm.lock();
	{
		Worker w;
		w.start([&] {
			auto t0 = steady::now();
			bool r = tm.try_lock_shared_for(timeout);
			auto e = steady::now() - t0;
			check(!r && e >= timeout && e < 5s,
			    "try_lock_shared_for against a writer: " +
			        std::to_string(r) + " after " +
			        std::to_string(ms(e)) + " ms");
			auto ds = sysclock::now() + timeout;
			r = tm.try_lock_shared_until(ds);
			check(!r && sysclock::now() >= ds,
			    "try_lock_shared_until(system_clock) against a "
			    "writer");
		});
		w.join("the timed reader");
	}
	tm.unlock();
	bool ok = tm.try_lock_for(10ms);
	check(ok, "try_lock_for of a free shared_timed_mutex failed");
	if (ok)
		tm.unlock();
	ok = tm.try_lock_shared_for(10ms);
	check(ok, "try_lock_shared_for of a free shared_timed_mutex failed");
	if (ok)
		tm.unlock_shared();
}

// ---------------------------------------------------------------------
// std::call_once

struct Boom {
};

void
test_call_once()
{
	// Contention: the function runs once, while the others wait (it lets
	// them block), and each caller sees its effect on return.
	{
		std::once_flag flag;
		std::atomic<int> calls{ 0 }, missed{ 0 };
		int value = 0;
		Worker w[n_threads];
		for (int t = 0; t < n_threads; t++)
			w[t].start([&, t] {
				std::call_once(flag, [&] {
					calls.fetch_add(1);
					for (int o = 0; o < n_threads; o++)
						if (o != t)
							w[o].blocked();
					value = 42;
				});
				if (value != 42)
					missed.fetch_add(1);
			});
		for (auto &x : w)
			x.join("a thread in call_once");
		check(calls.load() == 1,
		    "the function ran " + std::to_string(calls.load()) +
		        " times");
		check(missed.load() == 0,
		    std::to_string(missed.load()) +
		        " callers returned before its effect");
	}

	// Many flags, each raced for by 4 threads.
	{
		constexpr int n = 5000;
		std::unique_ptr<std::once_flag[]> flags(new std::once_flag[n]);
		std::unique_ptr<std::atomic<int>[]> calls(
		    new std::atomic<int>[n]);
		std::vector<int> values(n);
		for (int i = 0; i < n; i++)
			calls[i].store(0);
		std::atomic<int> missed{ 0 };
		Worker w[n_threads];
		for (auto &x : w)
			x.start([&] {
				for (int i = 0; i < n; i++) {
					std::call_once(flags[i], [&] {
						calls[i].fetch_add(1);
						values[i] = i + 1;
					});
					if (values[i] != i + 1)
						missed.fetch_add(1);
				}
			});
		for (auto &x : w)
			x.join("a thread racing through once_flags");
		int wrong = 0;
		for (int i = 0; i < n; i++)
			wrong += calls[i].load() != 1;
		check(wrong == 0,
		    std::to_string(wrong) + " of " + std::to_string(n) +
		        " functions did not run exactly once");
		check(missed.load() == 0,
		    std::to_string(missed.load()) +
		        " callers returned before the effect");
	}

	// An exception from the function propagates and leaves the flag
	// unset: the next call runs its function, and only that one.  (In a
	// thread of its own: a pthread_once that stays "running" after the
	// exception hangs the next call.)
	{
		std::once_flag flag;
		bool threw = false;
		int ran = 0;
		Worker w;
		w.start([&] {
			try {
				std::call_once(flag, [] { throw Boom(); });
			} catch (const Boom &) {
				threw = true;
			}
			std::call_once(flag, [&] { ran++; });
			std::call_once(flag, [&] { ran++; });
		});
		w.join("the thread calling call_once after an exception");
		check(threw, "the exception did not reach the caller");
		check(ran == 1,
		    "after an exception, the next two call_once ran " +
		        std::to_string(ran) + " functions, not 1");
	}

	// The same under contention: the first function throws while the
	// others wait; one of them then runs its own, once.
	{
		std::once_flag flag;
		std::atomic<int> attempts{ 0 }, caught{ 0 }, successes{ 0 },
		    missed{ 0 };
		int value = 0;
		Worker w[n_threads];
		for (int t = 0; t < n_threads; t++)
			w[t].start([&, t] {
				auto fn = [&] {
					if (attempts.fetch_add(1) == 0) {
						for (int o = 0; o < n_threads;
						     o++)
							if (o != t)
								w[o].blocked();
						throw Boom();
					}
					value = 7;
					successes.fetch_add(1);
				};
				try {
					std::call_once(flag, fn);
				} catch (const Boom &) {
					caught.fetch_add(1);
					std::call_once(flag, fn);
				}
				if (value != 7)
					missed.fetch_add(1);
			});
		for (auto &x : w)
			x.join("a thread in call_once after an exception");
		check(caught.load() == 1,
		    std::to_string(caught.load()) + " callers caught it");
		check(successes.load() == 1 && attempts.load() == 2,
		    std::to_string(attempts.load()) + " runs, " +
		        std::to_string(successes.load()) + " returned");
		check(missed.load() == 0,
		    std::to_string(missed.load()) +
		        " callers returned before the effect");
	}
}

const std::pair<const char *, void (*)()> sections[] = {
	{ "mutex", test_mutex },
	{ "recursive_mutex", test_recursive_mutex },
	{ "timed_mutex", test_timed_mutex },
	{ "condition_variable", test_condition_variable },
	{ "shared_mutex", test_shared_mutex },
	{ "call_once", test_call_once },
};

} // namespace

int
main(int argc, char **argv)
{
	std::vector<std::pair<const char *, void (*)()>> run;
	for (int i = 1; i < argc; i++) {
		std::string a = argv[i];
		if (a == "--list") {
			for (auto &s : sections)
				std::printf("%s\n", s.first);
			return 0;
		}
		auto s = std::find_if(std::begin(sections), std::end(sections),
		    [&](const auto &x) { return a == x.first; });
		if (s == std::end(sections)) {
			std::fprintf(stderr,
			    "usage: dropin-cxx [--list | SECTION...]: no "
			    "section '%s'\n",
			    argv[i]);
			return 2;
		}
		run.push_back(*s);
	}
	if (run.empty())
		run.assign(std::begin(sections), std::end(sections));
	for (auto &s : run) {
		section = s.first;
		int checks = n_checks.load(), failed = n_failed.load();
		auto t0 = steady::now();
		s.second();
		std::printf("dropin-cxx: %s: %d checks, %d failed, %lld ms\n",
		    s.first, n_checks.load() - checks, n_failed.load() - failed,
		    ms(steady::now() - t0));
	}
	return n_failed.load() == 0 ? 0 : 1;
}
