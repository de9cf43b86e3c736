/* SPDX-License-Identifier: MIT */
/*
 * Tuning of the contended paths: static defaults, overrides from the
 * environment, the refinement from the topology, pl_tuning_get/set.
 *
 * Where the values come from, and when.  The tuning in force is a static
 * object holding the defaults below from the first instruction on; no
 * lock operation ever waits for anything else.  The first slow path of a
 * process (a lock that spins, or a park) kicks the rest off, once
 * (pli_tuning_kick): it applies the PARKINGLOT_* overrides at once (a
 * getenv each; a malformed one prints its warning there), and starts one
 * short-lived, detached SCHED_IDLE thread that waits REFINE_DELAY_NS,
 * reads the topology (hwloc's takes about 1 ms here), measures the cost
 * of a pause, and stores the refined values, then ends.  Meanwhile the lock
 * operations run on the defaults. pl_tuning_get and pl_tuning_set, which are no
 * lock operations, wait for the refinement (running it themselves when nothing
 * has started it), so that what they show and what they change is final.  If
 * the thread cannot be created, the defaults stay until pl_tuning_get or
 * pl_tuning_set refines them; so too in the child of a fork, which
 * starts no thread.  A process that never contends never reads the
 * topology and never starts the thread.
 *
 * Precedence: pl_tuning_set over the environment over the topology over
 * the static defaults.  The fields are read with relaxed atomic loads by
 * the slow paths and written with relaxed atomic stores: each is a hint
 * on its own, and a thread that reads a mix of old and new values only
 * spins a little more or less once.
 *
 * errno: no call of the library changes it, and the refinement runs much
 * code that may (hwloc's reading of sysfs leaves ENOENT, a warning's
 * fprintf, sysconf, pthread_create): each step restores it.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#include <parkinglot/tuning.h>

#include "wordlock.h"
#include "futex.h"
#include "platform.h"
#include "tuning.h"

#define MAX_SPIN 1000000u
#define MAX_YIELD 1000u
#define MAX_FAIR_US 10000000u

/*
 * Defaults for a machine where other PUs can release a lock meanwhile; see
 * doc/BENCHMARKS.md ("Spinning") for the measurements behind each.
 *
 * A spin round waits about POLL_NS and then looks at the lock once.  The
 * wait is made of pause instructions, counted from the cost of one pause
 * measured at start-up (from a few ns to over 100 ns across x86
 * generations, so a fixed count would mean very different waits).  It is
 * long on purpose: every look pulls the lock's cache line away from its
 * holder, and a holder that keeps the line runs at uncontended speed.
 * Looking after every pause (20 ns here) gave 0.8x glibc's throughput on
 * lockbench W2; looking every 2.5 us, over 2x.
 *
 * DEFAULT_SPIN rounds of pausing come first, then DEFAULT_YIELD rounds
 * that yield the CPU before their wait: a waiter that has not got the lock
 * within a few microseconds lets any other runnable thread of its CPU run
 * (the holder, preempted, or unrelated work; lockbench W4).  The whole
 * spin lasts about 60 us here before the thread parks.
 */
#define DEFAULT_SPIN 2u
#define DEFAULT_YIELD 20u
#define DEFAULT_FAIR_US 1000u
#define DEFAULT_POLL_NS 2500u
#define MAX_POLL_NS 1000000u
#define MAX_PAUSES 100000u

/* Until the cost of a pause is measured: 20 ns, this machine's. */
#define ASSUMED_PAUSE_NS 20u

struct pli_tuning pli_tuning_v = {
	.pub = { .spin_limit = DEFAULT_SPIN,
	    .yield_limit = DEFAULT_YIELD,
	    .fair_interval_us = DEFAULT_FAIR_US },
	.poll_ns = DEFAULT_POLL_NS,
	.pause_per_spin = DEFAULT_POLL_NS / ASSUMED_PAUSE_NS,
	.pause_ns = ASSUMED_PAUSE_NS,
};

/* The refinement (tuning.h): NONE, RUNNING (in the thread, or in a caller
 * of pl_tuning_get/set), DONE, or STALLED (kicked, but no thread could be
 * started: left to pl_tuning_get/set).  Waiters for DONE sleep on the
 * word. */
enum { NONE = PLI_TUNING_NONE, RUNNING, DONE, STALLED };
uint32_t pli_tuning_state;
/* Guarded by publish_lock, as every store into the tuning in force. */
static uint32_t publish_lock; /* a word lock (wordlock.h) */
static bool env_applied;      /* the environment is in force */
/* Whoever does the refinement claims it first: the thread, or a caller of
 * pl_tuning_get/set that comes before the thread has begun. */
static uint32_t claimed;
static bool user_set; /* pl_tuning_set was called: its values win */

static void
store(unsigned *field, unsigned v)
{
	__atomic_store_n(field, v, __ATOMIC_RELAXED);
}

/* PARKINGLOT_<name>: a decimal number in 0..max into *val; else, if warn,
 * a one-line warning, and *val stays.  Whether the variable was valid. */
static bool
env_override(const char *name, unsigned max, unsigned *val, bool warn)
{
	const char *s = getenv(name);
	if (s == NULL)
		return false;
	char *end;
	int saved = errno;
	errno = 0;
	unsigned long v = strtoul(s, &end, 10);
	bool bad =
	    *s < '0' || *s > '9' || *end != '\0' || errno != 0 || v > max;
	if (bad && warn)
		fprintf(stderr,
		    "libparkinglot: ignoring %s=\"%s\": not a whole number "
		    "from 0 to %u (keeping %u)\n",
		    name, s, max, *val);
	errno = saved;
	if (bad)
		return false;
	*val = (unsigned)v;
	return true;
}

/* The four overrides over t, each where it is valid; whether
 * PARKINGLOT_POLL_NS was one. */
static bool
env_apply(struct pli_tuning *t, bool warn)
{
	env_override("PARKINGLOT_SPIN", MAX_SPIN, &t->pub.spin_limit, warn);
	env_override("PARKINGLOT_YIELD", MAX_YIELD, &t->pub.yield_limit, warn);
	env_override(
	    "PARKINGLOT_FAIR_US", MAX_FAIR_US, &t->pub.fair_interval_us, warn);
	return env_override(
	    "PARKINGLOT_POLL_NS", MAX_POLL_NS, &t->poll_ns, warn);
}

static unsigned
pauses_for(unsigned poll_ns, unsigned pause_ns)
{
	unsigned n = poll_ns / pause_ns;
	return n < 1 ? 1 : n > MAX_PAUSES ? MAX_PAUSES : n;
}

/* Publish t over the tuning in force (publish_lock held): every field but
 * those pl_tuning_set has set since. */
static void
publish(const struct pli_tuning *t)
{
	struct pli_tuning *v = &pli_tuning_v;
	if (!user_set) {
		store(&v->pub.spin_limit, t->pub.spin_limit);
		pli_word_lock_spin(t->pub.spin_limit != 0);
		store(&v->pub.yield_limit, t->pub.yield_limit);
		store(&v->pub.fair_interval_us, t->pub.fair_interval_us);
	}
	store(&v->poll_ns, t->poll_ns);
	store(&v->pause_ns, t->pause_ns);
	store(&v->pause_per_spin, t->pause_per_spin);
}

/* What one pause instruction costs here, in ns (at least 1): the best of
 * a few timed batches, so that a preemption inflates none of them.  About
 * 0.1 ms here, once per process. */
static unsigned
pause_cost_ns(void)
{
	uint64_t best = UINT64_MAX;
	for (int round = 0; round < 5; round++) {
		uint64_t t0 = pli_now_ns();
		for (int i = 0; i < 1000; i++)
			pli_cpu_relax();
		uint64_t dt = pli_now_ns() - t0;
		if (dt < best)
			best = dt;
	}
	unsigned ns = (unsigned)(best / 1000);
	return ns > 0 ? ns : 1;
}

/* The refinement itself: the topology's defaults, the environment over
 * them (quietly: its warnings were printed by the kick), the pause cost;
 * then publish, and DONE. */
static void
refine(void)
{
	int saved_errno = errno;
	struct pli_topology topo;
	pli_topology_get(&topo);

	struct pli_tuning t;
	t.pub.fair_interval_us = DEFAULT_FAIR_US;
	t.poll_ns = DEFAULT_POLL_NS;
	if (topo.pus <= 1) {
		/* The holder cannot run while we spin: park at once. */
		t.pub.spin_limit = 0;
		t.pub.yield_limit = 0;
	} else {
		t.pub.spin_limit = DEFAULT_SPIN;
		t.pub.yield_limit = DEFAULT_YIELD;
		/* An SMT sibling shares our pipeline: wait longer so that
		 * spinning steals less of it from the holder (the design
		 * notes' rule; this 2-core machine has no SMT to measure). */
		if (topo.pus_per_core > 1)
			t.poll_ns *= 2;
	}
	env_apply(&t, false);
	/* Measured even where nothing spins: pl_tuning_set may turn
	 * spinning on later. */
	t.pause_ns = pause_cost_ns();
	t.pause_per_spin = pauses_for(t.poll_ns, t.pause_ns);
	if (pli_verbose)
		fprintf(stderr,
		    "libparkinglot: %u PUs, %u cores, %u per core (%s): "
		    "spin %u, yield %u, each round %u pauses of %u ns, "
		    "fair %u us\n",
		    topo.pus, topo.cores, topo.pus_per_core, topo.source,
		    t.pub.spin_limit, t.pub.yield_limit, t.pause_per_spin,
		    t.pause_ns, t.pub.fair_interval_us);
	pli_word_lock(&publish_lock);
	publish(&t);
	pli_word_unlock(&publish_lock);
	__atomic_store_n(&pli_tuning_state, DONE, __ATOMIC_RELEASE);
	pli_futex_wake(&pli_tuning_state, INT_MAX);
	errno = saved_errno;
}

static bool
claim(void)
{
	uint32_t no = 0;
	return __atomic_compare_exchange_n(
	    &claimed, &no, 1, false, __ATOMIC_ACQ_REL, __ATOMIC_RELAXED);
}

/* How long the thread lets the first burst of contention pass before it
 * reads anything: on a machine whose CPUs are all busy, a thread that
 * yields in its spin would hand its CPU to this one until the next tick
 * (measured here: the first contended lock then took 1.2 ms instead of
 * 0.25 ms, 4 times in 10). */
#define REFINE_DELAY_NS 20000000L
#define REFINE_STACK ((size_t)256 * 1024)

static void *
refine_thread(void *arg)
{
	(void)arg;
	/* Below every thread of the program: a woken waiter must never wait
	 * for a CPU this one holds (best effort; errno is its own). */
	struct sched_param param = { 0 };
	pthread_setschedparam(pthread_self(), SCHED_IDLE, &param);
	struct timespec d = { 0, REFINE_DELAY_NS };
	while (nanosleep(&d, &d) != 0 && errno == EINTR)
		;
	if (claim())
		refine();
	return NULL;
}

/* The environment over the defaults, once, by whoever comes first: the
 * kick, or pl_tuning_get/set. */
static void
apply_env_once(void)
{
	int saved_errno = errno;
	pli_word_lock(&publish_lock);
	if (!env_applied) {
		env_applied = true;
		struct pli_tuning t =
		    pli_tuning_v; /* all writers hold the lock */
		if (env_apply(&t, true))
			t.pause_per_spin = pauses_for(t.poll_ns, t.pause_ns);
		publish(&t);
	}
	pli_word_unlock(&publish_lock);
	errno = saved_errno;
}

void
pli_tuning_start(void)
{
	uint32_t none = NONE;
	if (!__atomic_compare_exchange_n(&pli_tuning_state, &none, RUNNING,
	        false, __ATOMIC_ACQUIRE, __ATOMIC_RELAXED))
		return;
	apply_env_once();
	int saved_errno = errno;
	/* The thread takes no signal of the program's: they all stay for
	 * the program's own threads. */
	sigset_t all, old;
	sigfillset(&all);
	pthread_attr_t attr;
	pthread_t t;
	bool started = false;
	if (pthread_attr_init(&attr) == 0) {
		pthread_attr_setdetachstate(&attr, PTHREAD_CREATE_DETACHED);
		/* A small stack of its own: it needs little, and a stack that
		 * the program's threads used before (glibc caches them) would
		 * bring their thread-local storage along, which this thread's
		 * exit then frees (ThreadSanitizer, not seeing glibc's lock on
		 * that cache, reported it as a race). */
		pthread_attr_setstacksize(&attr, REFINE_STACK);
		pthread_sigmask(SIG_SETMASK, &all, &old);
		started = pthread_create(&t, &attr, refine_thread, NULL) == 0;
		pthread_sigmask(SIG_SETMASK, &old, NULL);
		pthread_attr_destroy(&attr);
	}
	if (!started) /* pl_tuning_get or pl_tuning_set will refine */
		__atomic_store_n(&pli_tuning_state, STALLED, __ATOMIC_RELEASE);
	errno = saved_errno;
}

/* For pl_tuning_get/set: the refinement done, by us if nobody runs it. */
static void
refined(void)
{
	uint32_t s = __atomic_load_n(&pli_tuning_state, __ATOMIC_ACQUIRE);
	if ((s == NONE || s == STALLED) &&
	    __atomic_compare_exchange_n(&pli_tuning_state, &s, RUNNING, false,
	        __ATOMIC_ACQUIRE, __ATOMIC_ACQUIRE)) {
		apply_env_once();
		if (claim())
			refine();
	} else if (s == RUNNING && claim()) {
		refine(); /* the thread has not begun: it will find it done */
		return;
	}
	while (
	    (s = __atomic_load_n(&pli_tuning_state, __ATOMIC_ACQUIRE)) != DONE)
		pli_futex_wait(&pli_tuning_state, s, NULL);
}

void
pli_tuning_forked(void)
{
	/* A thread may not be started here: the child of a multithreaded
	 * process may only call async-signal-safe functions until it execs
	 * (and ThreadSanitizer kills a child that starts one).  So a
	 * refinement that has not run, or that the parent's thread was
	 * running, is left to pl_tuning_get/set; the environment, if not yet
	 * applied, is applied now. */
	__atomic_store_n(&publish_lock, 0, __ATOMIC_RELAXED);
	if (__atomic_load_n(&pli_tuning_state, __ATOMIC_RELAXED) != DONE) {
		__atomic_store_n(&pli_tuning_state, STALLED, __ATOMIC_RELAXED);
		__atomic_store_n(&claimed, 0, __ATOMIC_RELAXED);
		apply_env_once();
	}
}

void
pl_tuning_get(struct pl_tuning *out)
{
	refined();
	const struct pli_tuning *t = pli_tuning();
	out->spin_limit = __atomic_load_n(&t->pub.spin_limit, __ATOMIC_RELAXED);
	out->yield_limit =
	    __atomic_load_n(&t->pub.yield_limit, __ATOMIC_RELAXED);
	out->fair_interval_us =
	    __atomic_load_n(&t->pub.fair_interval_us, __ATOMIC_RELAXED);
}

static unsigned
cap(unsigned v, unsigned max)
{
	return v < max ? v : max;
}

void
pl_tuning_set(const struct pl_tuning *in)
{
	refined(); /* a later refinement must not overwrite this */
	pli_word_lock(&publish_lock);
	user_set = true;
	struct pli_tuning *v = &pli_tuning_v;
	store(&v->pub.spin_limit, cap(in->spin_limit, MAX_SPIN));
	pli_word_lock_spin(in->spin_limit != 0);
	store(&v->pub.yield_limit, cap(in->yield_limit, MAX_YIELD));
	store(&v->pub.fair_interval_us, cap(in->fair_interval_us, MAX_FAIR_US));
	pli_word_unlock(&publish_lock);
}
