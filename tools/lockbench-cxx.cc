/* SPDX-License-Identifier: MIT */
/*
 * lockbench's C++ workloads (see tools/lockbench.c): W2cxx, W5acxx and
 * W6cxx run the loops and checks of W2, W5a and W6 with the types of
 * <parkinglot.hpp> against the standard library's, as a C++ program
 * writes them: pl::mutex against std::mutex under std::lock_guard,
 * pl::condition_variable with std::unique_lock<pl::mutex> against
 * std::condition_variable with std::unique_lock<std::mutex>, and
 * pl::shared_mutex against std::shared_mutex under std::lock_guard and
 * std::shared_lock.  Kind 0 is pl::, kind 1 std:: (as W5 and W6 number pl
 * and pthread), and a kind's types are the members of pl_kind or
 * std_kind.  The thread bodies are templates over the kind, so that each
 * type runs its own tight loop, as KIND_FNS does for the C workloads.
 * Each run constructs its lock and the data the lock guards afresh (a
 * std::optional of the kind's state, on a cache line of its own), drives
 * the threads with run_go() and run_end() of
 * tools/lockbench-workloads.c, checks what they did as the C twin does,
 * and destroys the state.  work[] there describes the three workloads;
 * this file exports, with C linkage, their thread functions and runs.
 */
#include <condition_variable>
#include <cstdint>
#include <mutex>
#include <optional>
#include <shared_mutex>

#include <parkinglot.hpp>

#include "lockbench.h"

namespace
{

struct pl_kind {
	using mutex = pl::mutex;
	using cond = pl::condition_variable;
	using shared_mutex = pl::shared_mutex;
};

struct std_kind {
	using mutex = std::mutex;
	using cond = std::condition_variable;
	using shared_mutex = std::shared_mutex;
};

/* W2cxx: a mutex and the counter it guards. */
template <class K> struct counter {
	alignas(64) typename K::mutex m;
	unsigned long n = 0;
};

/* W5acxx: W5a's queue of W5_CAP items; c[0] is "not full", c[1] "not
 * empty". */
template <class K> struct queue {
	alignas(64) typename K::mutex m;
	typename K::cond c[2];
	unsigned head = 0, tail = 0, count = 0;
	uint64_t buf[W5_CAP];
};

/* W6cxx: two counters that every write increments together. */
template <class K> struct rwdata {
	alignas(64) typename K::shared_mutex l;
	unsigned long a = 0, b = 0;
};

/* The state of the current run, of the kind that runs. */
template <class K> std::optional<counter<K>> one;
template <class K> std::optional<queue<K>> cvq;
template <class K> std::optional<rwdata<K>> rw;

/* ------------------------------------------------------------------ */
/* The thread bodies. */

template <class K>
void *
w2_body(void *a)
{
	thr *t = static_cast<thr *>(a);
	counter<K> &s = *one<K>;
	uint64_t x = seed(t->idx);
	unsigned long n = 0;
	double cpu0 = thr_begin(t);

	while (!stopping()) {
		x = private_work(x);
		{
			std::lock_guard<typename K::mutex> g(s.m);
			s.n++;
		}
		n++;
	}
	return thr_done(t, n, x, cpu0);
}

/* Role 0 produces, role 1 consumes; sink is the sum of the items. */
template <class K>
void *
w5a_body(void *a)
{
	thr *t = static_cast<thr *>(a);
	queue<K> &q = *cvq<K>;
	uint64_t v = (static_cast<uint64_t>(t->idx) << 40) + 1, sum = 0;
	unsigned long n = 0;
	double cpu0 = thr_begin(t);

	for (;;) {
		std::unique_lock<typename K::mutex> lk(q.m);
		if (t->role == 0) { /* producer */
			while (q.count == W5_CAP && !stopping())
				q.c[0].wait(lk);
			if (stopping())
				break;
			q.buf[q.tail] = v;
			q.tail = (q.tail + 1) % W5_CAP;
			q.count++;
			q.c[1].notify_one();
			lk.unlock();
			sum += v++;
		} else { /* consumer */
			while (q.count == 0 && !stopping())
				q.c[1].wait(lk);
			if (stopping())
				break;
			uint64_t got = q.buf[q.head];
			q.head = (q.head + 1) % W5_CAP;
			q.count--;
			q.c[0].notify_one();
			lk.unlock();
			sum += got;
		}
		n++;
	}
	return thr_done(t, n, sum, cpu0);
}

/* Role 0 reads, role 1 writes. */
template <class K>
void *
w6_body(void *a)
{
	thr *t = static_cast<thr *>(a);
	rwdata<K> &s = *rw<K>;
	uint64_t x = seed(t->idx);
	unsigned long n = 0, bad = 0;
	double cpu0 = thr_begin(t);

	while (!stopping()) {
		x = private_work(x);
		if (t->role) {
			std::lock_guard<typename K::shared_mutex> g(s.l);
			s.a++;
			s.b++;
		} else {
			std::shared_lock<typename K::shared_mutex> g(s.l);
			bad += s.a != s.b;
		}
		n++;
	}
	t->bad = bad;
	return thr_done(t, n, x, cpu0);
}

/* ------------------------------------------------------------------ */
/* Runs: set-up, drive and check, as their C twins'. */

/* W2cxx: the counter is the sum of the increments. */
template <class K>
void
w2_run(run *r)
{
	counter<K> &s = one<K>.emplace();

	run_go(r);
	run_end(r);
	if (s.n != r->ops[0])
		check_failed("counter %lu != %lu increments", s.n, r->ops[0]);
	one<K>.reset();
}

/* W5acxx: timed, the stop flag raised under the mutex and both sides
 * woken; every item produced was consumed or is queued, with the same
 * sum. */
template <class K>
void
w5a_run(run *r)
{
	queue<K> &q = cvq<K>.emplace();
	uint64_t queued = 0;

	run_go(r);
	{
		std::lock_guard<typename K::mutex> g(q.m);
		__atomic_store_n(&flag.stop, 1, __ATOMIC_RELAXED);
		q.c[0].notify_all();
		q.c[1].notify_all();
	}
	run_end(r);
	for (unsigned i = 0; i < q.count; i++)
		queued += q.buf[(q.head + i) % W5_CAP];
	if (r->ops[0] != r->ops[1] + q.count ||
	    r->sink[0] != r->sink[1] + queued)
		check_failed("%lu produced, %lu consumed, %u queued, or the "
		             "sums differ",
		    r->ops[0], r->ops[1], q.count);
	cvq<K>.reset();
}

/* W6cxx: every write counted, and no reader saw half of one. */
template <class K>
void
w6_run(run *r)
{
	rwdata<K> &s = rw<K>.emplace();

	run_go(r);
	run_end(r);
	if (s.a != r->ops[1] || s.b != r->ops[1] || r->bad != 0)
		check_failed("%lu writes counted %lu, %lu torn reads",
		    r->ops[1], s.a, r->bad);
	rw<K>.reset();
}

} // namespace

/* ------------------------------------------------------------------ */
/* What work[] names (declared in tools/lockbench.h, with C linkage). */

const bool cxx_built = true;

void *(*const w2cxx_fn[2])(void *) = { w2_body<pl_kind>, w2_body<std_kind> };
void *(*const w5acxx_fn[2])(void *) = { w5a_body<pl_kind>, w5a_body<std_kind> };
void *(*const w6cxx_fn[2])(void *) = { w6_body<pl_kind>, w6_body<std_kind> };

void
w2cxx_run(struct run *r)
{
	if (r->k == 0)
		w2_run<pl_kind>(r);
	else
		w2_run<std_kind>(r);
}

void
w5acxx_run(struct run *r)
{
	if (r->k == 0)
		w5a_run<pl_kind>(r);
	else
		w5a_run<std_kind>(r);
}

void
w6cxx_run(struct run *r)
{
	if (r->k == 0)
		w6_run<pl_kind>(r);
	else
		w6_run<std_kind>(r);
}
