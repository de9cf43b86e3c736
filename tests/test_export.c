/* SPDX-License-Identifier: MIT */
/*
 * The live export of the statistics (pl_stats_export, lib/export.c): the
 * object's name, mode and lifetime, its counters against pl_stats_get
 * (exactly, also while the export is switched on and off under load), the
 * histograms, the per-address table, the maps saved at exit for
 * parkstat to name the addresses with, reset, fork, and that no lock
 * operation waits for the dynamic loader's lock.  tools/parkstat itself
 * (and how it names addresses) is tested by tests/parkstat.sh.
 */
#include <dlfcn.h>
#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>

#include "testutil.h"

#define PLX_LAYOUT_ONLY
#include "../lib/export.h"
#include "../lib/kind.h"

TU_CRITERION_MAIN_SERIAL()

TestSuite(export, .timeout = 60);

pl_mutex_t export_hot_lock;
struct {
	long pad;
	pl_mutex_t m;
} export_struct;

static void
shm_path(char *buf, size_t len, pid_t pid)
{
	snprintf(buf, len, "/dev/shm" PLX_NAME_FMT, (long)pid);
}

/* The object of this process, mapped read-only (as parkstat does). */
static const struct plx_shm *
map_self(void)
{
	char name[64];
	snprintf(name, sizeof name, PLX_NAME_FMT, (long)getpid());
	int fd = shm_open(name, O_RDONLY, 0);
	cr_assert(fd >= 0, "shm_open %s: %s", name, strerror(errno));
	void *m = mmap(NULL, PLX_SIZE, PROT_READ, MAP_SHARED, fd, 0);
	close(fd);
	cr_assert(m != MAP_FAILED);
	return m;
}

static void
unmap(const struct plx_shm *s)
{
	munmap((void *)(uintptr_t)s, PLX_SIZE);
}

/* The counters as parkstat sums them. */
static void
read_counters(const struct plx_shm *s, uint64_t *c, uint64_t *maxq)
{
	const unsigned char *page = (const unsigned char *)s + PLX_COUNTERS_OFF;
	memset(c, 0, PLX_NCOUNTERS * sizeof *c);
	for (unsigned i = 0; i < PLX_NSTRIPES; i++) {
		const uint64_t *st =
		    (const uint64_t *)(page + (size_t)i * PLX_STRIPE_SIZE);
		for (unsigned k = 0; k < PLX_NCOUNTERS; k++)
			c[k] += __atomic_load_n(&st[k], __ATOMIC_RELAXED);
	}
	*maxq = __atomic_load_n(
	    (const uint64_t *)(page + PLX_MAXQ_OFF), __ATOMIC_RELAXED);
}

static void
assert_counters_match(const struct plx_shm *s)
{
	uint64_t c[PLX_NCOUNTERS], maxq;
	struct pl_stats st;
	read_counters(s, c, &maxq);
	pl_stats_get(&st);
	cr_assert(c[PLX_PARKS] == st.parks, "parks %llu vs %llu",
	    (unsigned long long)c[PLX_PARKS], (unsigned long long)st.parks);
	cr_assert(c[PLX_UNPARKS] == st.unparks);
	cr_assert(c[PLX_TIMEOUTS] == st.timeouts);
	cr_assert(c[PLX_INVALID_PARKS] == st.invalid_parks);
	cr_assert(c[PLX_REQUEUES] == st.requeues);
	cr_assert(c[PLX_FAIR_HANDOFFS] == st.fair_handoffs);
	cr_assert(c[PLX_SPIN_ACQUIRES] == st.spin_acquires);
	cr_assert(c[PLX_SPIN_FAILURES] == st.spin_failures);
	cr_assert(c[PLX_WAIT_NS] == st.wait_ns_total);
	cr_assert(c[PLX_PARKED_NOW] == st.threads_parked_now);
	cr_assert(maxq == st.max_queue_len);
	cr_assert(s->h.buckets == st.buckets);
}

static const struct plx_slot *
find_slot(const struct plx_shm *s, const void *addr)
{
	for (size_t i = 0; i < PLX_NSLOTS; i++)
		if (s->slots[i].addr == (uintptr_t)addr)
			return &s->slots[i];
	return NULL;
}

/* 4 threads x rounds lock/unlock of m, yielding inside now and then, with
 * the first park made certain (as in tests/contended.c). */
static pl_mutex_t *hammer_lock;
static long hammer_rounds;

static void *
hammer_main(void *arg)
{
	(void)arg;
	for (long i = 0; i < hammer_rounds; i++) {
		pl_mutex_lock(hammer_lock);
		if (i % 8 == 0)
			sched_yield();
		pl_mutex_unlock(hammer_lock);
	}
	return NULL;
}

static void
hammer(pl_mutex_t *m, long rounds)
{
	pthread_t t[4];
	struct pl_stats st, st0;
	hammer_lock = m;
	hammer_rounds = rounds;
	pl_stats_get(&st0);
	pl_mutex_lock(m);
	for (int i = 0; i < 4; i++)
		t[i] = tu_spawn(hammer_main, NULL);
	int64_t end = tu_now_ns() + TU_WAIT_NS;
	do {
		sched_yield();
		pl_stats_get(&st);
	} while (st.parks == st0.parks && tu_now_ns() < end);
	cr_assert(st.parks > st0.parks, "nobody parked");
	pl_mutex_unlock(m);
	for (int i = 0; i < 4; i++)
		tu_join(t[i]);
}

Test(export, creates_the_object_0600_and_removes_it)
{
	char path[64];
	struct stat st;
	shm_path(path, sizeof path, getpid());
	cr_assert(stat(path, &st) != 0 && errno == ENOENT,
	    "%s exists before the export", path);

	cr_assert(pl_stats_export(true) == 0);
	cr_assert(pl_stats_export(true) == 0, "a second start is a no-op");
	cr_assert(stat(path, &st) == 0, "%s: %s", path, strerror(errno));
	cr_assert((st.st_mode & 07777) == 0600, "mode %o",
	    (unsigned)(st.st_mode & 07777));
	cr_assert(st.st_uid == geteuid());
	cr_assert((size_t)st.st_size == PLX_SIZE);

	const struct plx_shm *s = map_self();
	cr_assert(s->h.magic == PLX_MAGIC);
	cr_assert(s->h.version == PLX_VERSION);
	cr_assert(s->h.shm_size == sizeof(struct plx_shm));
	cr_assert(s->h.pid == getpid());
	cr_assert(s->h.state == PLX_RUNNING);
	cr_assert(s->h.keep == 0);
	cr_assert(s->h.nstripes == PLX_NSTRIPES && s->h.nslots == PLX_NSLOTS);
	cr_assert(s->h.buckets == pli_lot_buckets());
	/* /proc/self/cmdline: under Criterion, its worker's name. */
	cr_assert(s->h.command[0] != '\0');
	unmap(s);

	cr_assert(pl_stats_export(false) == 0);
	cr_assert(stat(path, &st) != 0 && errno == ENOENT,
	    "%s left after pl_stats_export(false)", path);
	cr_assert(pl_stats_export(false) == 0, "a second stop is a no-op");

	/* Again, after a stop. */
	cr_assert(pl_stats_export(true) == 0);
	cr_assert(stat(path, &st) == 0);
	cr_assert(pl_stats_export(false) == 0);
	cr_assert(stat(path, &st) != 0);
}

Test(export, a_stale_object_of_the_same_pid_is_replaced)
{
	char name[64], path[64];
	snprintf(name, sizeof name, PLX_NAME_FMT, (long)getpid());
	shm_path(path, sizeof path, getpid());
	/* What a killed process with this pid would have left. */
	int fd = shm_open(name, O_CREAT | O_EXCL | O_RDWR, 0600);
	cr_assert(fd >= 0);
	cr_assert(ftruncate(fd, 4096) == 0);
	close(fd);
	cr_assert(pl_stats_export(true) == 0);
	const struct plx_shm *s = map_self();
	cr_assert(s->h.magic == PLX_MAGIC && s->h.pid == getpid());
	unmap(s);
	cr_assert(pl_stats_export(false) == 0);
}

Test(export, counters_are_those_of_pl_stats_get)
{
	static char a, b;
	cr_assert(pl_stats_export(true) == 0);
	const struct plx_shm *s = map_self();

	/* A bit of everything: contention, timeouts, invalid parks. */
	hammer(&export_hot_lock, 5000);
	struct timespec past = tu_deadline_in(-TU_MS);
	for (int i = 0; i < 10; i++)
		pl_park(&a, NULL, NULL, NULL, NULL, 0, &past);
	struct timespec bad = { 0, -1 };
	pl_park(&b, NULL, NULL, NULL, NULL, 0, &bad);
	assert_counters_match(s);

	struct pl_stats st;
	pl_stats_get(&st);
	cr_assert(st.timeouts == 10 && st.invalid_parks >= 1);

	/* The histograms count every park and every wait since the start
	 * (this process began with zeroes). */
	uint64_t q = 0, w = 0;
	for (unsigned i = 0; i < PLX_NSTRIPES; i++) {
		for (unsigned k = 0; k < PLX_QBINS; k++)
			q += s->hist[i].queue[k];
		for (unsigned k = 0; k < PLX_WBINS; k++)
			w += s->hist[i].wait[k];
	}
	cr_assert(q == st.parks, "queue histogram %llu, parks %llu",
	    (unsigned long long)q, (unsigned long long)st.parks);
	cr_assert(w == st.unparks + st.timeouts);

	/* The table: the test's thread has a record (it parked). */
	cr_assert(s->h.threads_live == pli_lot_live_threads());
	cr_assert(s->h.threads_peak >= 1);
	cr_assert(s->h.threads_total >= 5);
	cr_assert(s->h.retired_bytes == pli_lot_retired_bytes());
	struct pl_tuning t;
	pl_tuning_get(&t);
	cr_assert(s->h.spin_limit == t.spin_limit);
	cr_assert(s->h.yield_limit == t.yield_limit);
	cr_assert(s->h.fair_interval_us == t.fair_interval_us);

	/* Stopping moves the counters back, exactly. */
	cr_assert(pl_stats_export(false) == 0);
	struct pl_stats after;
	pl_stats_get(&after);
	cr_assert(memcmp(&st, &after, sizeof st) == 0);
	unmap(s);
}

Test(export, addresses_are_counted)
{
	cr_assert(pl_stats_export(true) == 0);
	const struct plx_shm *s = map_self();
	pl_mutex_t *heap = calloc(1, sizeof *heap);
	cr_assert(heap);

	hammer(&export_hot_lock, 5000);
	hammer(&export_struct.m, 2000);
	hammer(heap, 2000);

	const struct plx_slot *sl = find_slot(s, &export_hot_lock);
	cr_assert(sl, "no slot for export_hot_lock");
	cr_assert(sl->parks > 0);
	cr_assert(sl->waits == sl->parks, "waits %llu parks %llu",
	    (unsigned long long)sl->waits, (unsigned long long)sl->parks);
	cr_assert(sl->wait_ns > 0 && sl->max_queue >= 1);
	cr_assert(sl->queued_now == 0);

	cr_assert(
	    find_slot(s, &export_struct.m), "no slot for export_struct.m");
	cr_assert(find_slot(s, heap), "no slot for the heap mutex");
	cr_assert(s->h.maps_len == 0, "maps saved before the exit");

	/* The slots add up to the totals (nothing overflowed here). */
	uint64_t parks = 0, waits = 0, wait_ns = 0;
	for (size_t i = 0; i < PLX_NSLOTS; i++) {
		parks += s->slots[i].parks;
		waits += s->slots[i].waits;
		wait_ns += s->slots[i].wait_ns;
	}
	struct pl_stats st;
	pl_stats_get(&st);
	cr_assert(s->h.overflow_parks == 0);
	cr_assert(parks == st.parks && waits == st.unparks + st.timeouts);
	cr_assert(wait_ns == st.wait_ns_total);
	cr_assert(s->h.slots_used == 3);
	free(heap);
	unmap(s);
	cr_assert(pl_stats_export(false) == 0);
}

/* Condition variable broadcast: the waiters move to the mutex. */
static pl_mutex_t cv_mutex;
static pl_cond_t cv;
static int cv_go, cv_waiting;

static void *
cv_waiter(void *arg)
{
	(void)arg;
	pl_mutex_lock(&cv_mutex);
	__atomic_fetch_add(&cv_waiting, 1, __ATOMIC_RELAXED);
	while (!cv_go)
		pl_cond_wait(&cv, &cv_mutex);
	pl_mutex_unlock(&cv_mutex);
	return NULL;
}

Test(export, requeues_move_the_queue)
{
	cr_assert(pl_stats_export(true) == 0);
	const struct plx_shm *s = map_self();
	pthread_t t[4];
	for (int i = 0; i < 4; i++)
		t[i] = tu_spawn(cv_waiter, NULL);
	cr_assert(wait_parked(&cv, 4, TU_WAIT_NS));
	const struct plx_slot *c = find_slot(s, &cv);
	cr_assert(c && c->queued_now == 4, "queued on cv: %lld",
	    c ? (long long)c->queued_now : -1LL);
	pl_mutex_lock(&cv_mutex);
	cv_go = 1;
	pl_cond_broadcast(&cv);
	pl_mutex_unlock(&cv_mutex);
	for (int i = 0; i < 4; i++)
		tu_join(t[i]);
	struct pl_stats st;
	pl_stats_get(&st);
	cr_assert(c->queued_now == 0);
	if (st.requeues) {
		const struct plx_slot *m = find_slot(s, &cv_mutex);
		cr_assert(m && m->requeued_in == st.requeues);
		cr_assert(m->queued_now == 0);
	}
	assert_counters_match(s);
	unmap(s);
	cr_assert(pl_stats_export(false) == 0);
}

/*
 * No lock operation calls into the dynamic loader.  A constructor of a
 * dlopen()ed object runs with the loader's lock held; if it takes a user
 * mutex M while the thread holding M is inside a lock operation that waits
 * for the loader's lock (as dladdr does), neither goes on.  Here the
 * constructor of tests/dlctor.so takes M, with a deadline, while the
 * thread holding M parks on an address no park has seen before: on a
 * condition variable (pl_cond_timedwait, which releases M only once
 * queued) or on another mutex the constructor holds and releases once
 * that thread is queued.  The constructor must get M: ETIMEDOUT is the
 * deadlock.  Each of those parks samples its stack, so the unwinder is
 * held to the same rule.
 */
static pl_mutex_t dl_m;     /* M */
static pl_mutex_t dl_other; /* held by the constructor's thread */
static pl_cond_t dl_cond;
static int dl_holding;       /* dl_holder holds M */
static int dl_in_ctor;       /* the constructor runs */
static int dl_done;          /* under M: dl_holder may return */
static int dl_ctor_err = -1; /* the constructor's pl_mutex_timedlock */
static bool dl_use_cond;     /* pl_cond_timedwait, else pl_mutex_lock */

void export_dlctor_hook(void);

/* Called by tests/dlctor.so's constructor, with the loader's lock held. */
void
export_dlctor_hook(void)
{
	__atomic_store_n(&dl_in_ctor, 1, __ATOMIC_RELEASE);
	if (!dl_use_cond) {
		wait_parked(&dl_other, 1, TU_WAIT_NS);
		pl_mutex_unlock(&dl_other);
	}
	struct timespec d = tu_deadline_in(2 * TU_SEC);
	int e = pl_mutex_timedlock(&dl_m, &d);
	if (e == 0) {
		dl_done = 1;
		pl_cond_signal(&dl_cond);
		pl_mutex_unlock(&dl_m);
	}
	__atomic_store_n(&dl_ctor_err, e, __ATOMIC_RELEASE);
}

static void *
dl_holder(void *arg)
{
	(void)arg;
	pl_mutex_lock(&dl_m);
	__atomic_store_n(&dl_holding, 1, __ATOMIC_RELEASE);
	int64_t end = tu_now_ns() + TU_WAIT_NS;
	while (!__atomic_load_n(&dl_in_ctor, __ATOMIC_ACQUIRE) &&
	    tu_now_ns() < end)
		sched_yield();
	if (dl_use_cond) {
		struct timespec d = tu_deadline_in(TU_WAIT_NS);
		while (!dl_done && pl_cond_timedwait(&dl_cond, &dl_m, &d) == 0)
			;
	} else {
		pl_mutex_lock(&dl_other);
		pl_mutex_unlock(&dl_other);
	}
	pl_mutex_unlock(&dl_m);
	return NULL;
}

static void
dlopen_while_parking(bool use_cond)
{
	cr_assert(access(DLCTOR_PATH, R_OK) == 0, "%s: %s", DLCTOR_PATH,
	    strerror(errno));
	/* Every park samples its stack: the unwinder must not wait for the
	 * loader's lock either. */
	cr_assert(setenv(PLX_ENV_SAMPLE, "1", 1) == 0);
	cr_assert(pl_stats_export(true) == 0);
	unsetenv(PLX_ENV_SAMPLE);
	dl_use_cond = use_cond;
	if (!use_cond)
		pl_mutex_lock(&dl_other);
	pthread_t t = tu_spawn(dl_holder, NULL);
	int64_t end = tu_now_ns() + TU_WAIT_NS;
	while (!__atomic_load_n(&dl_holding, __ATOMIC_ACQUIRE) &&
	    tu_now_ns() < end)
		sched_yield();
	cr_assert(dl_holding, "the holder never took M");
	void *h = dlopen(DLCTOR_PATH, RTLD_NOW | RTLD_LOCAL);
	cr_assert(h, "dlopen %s: %s", DLCTOR_PATH, dlerror());
	int e = __atomic_load_n(&dl_ctor_err, __ATOMIC_ACQUIRE);
	/* Whatever happened, let the holder go. */
	pl_mutex_lock(&dl_m);
	dl_done = 1;
	pl_cond_signal(&dl_cond);
	pl_mutex_unlock(&dl_m);
	tu_join(t);
	dlclose(h);
	cr_assert(e == 0,
	    "the constructor could not take M (%s): the thread holding M "
	    "waited for the loader's lock inside a lock operation",
	    strerror(e));
	const struct plx_shm *s = map_self();
	cr_assert(s->h.stacks_used > 0, "no park sampled its stack");
	unmap(s);
	cr_assert(pl_stats_export(false) == 0);
}

Test(export, no_loader_lock_in_a_condition_wait)
{
	dlopen_while_parking(true);
}

Test(export, no_loader_lock_in_a_contended_lock)
{
	dlopen_while_parking(false);
}

Test(export, reset_clears_the_exported_figures)
{
	cr_assert(pl_stats_export(true) == 0);
	const struct plx_shm *s = map_self();
	hammer(&export_hot_lock, 2000);
	const struct plx_slot *sl = find_slot(s, &export_hot_lock);
	cr_assert(sl && sl->parks > 0);
	cr_assert(plx_tables_current(s));
	uint64_t start = plx_counter_word(s, PLX_RESET_NS_OFF);
	pl_stats_reset();
	/* The statistics own the reset and never call the export: its
	 * tables read as 0 (export.h) until it follows the reset, ... */
	cr_assert(!plx_tables_current(s));
	cr_assert(plx_counter_word(s, PLX_RESET_NS_OFF) > start);
	assert_counters_match(s);
	/* ... which the lot's next event makes it do. */
	static char a;
	struct timespec past = tu_deadline_in(-TU_MS);
	pl_park(&a, NULL, NULL, NULL, NULL, 0, &past);
	cr_assert(plx_tables_current(s));
	cr_assert(sl->parks == 0 && sl->waits == 0 && sl->wait_ns == 0);
	cr_assert(
	    sl->addr == (uintptr_t)&export_hot_lock, "the slot stays claimed");
	uint64_t q = 0;
	for (unsigned i = 0; i < PLX_NSTRIPES; i++)
		for (unsigned k = 0; k < PLX_QBINS; k++)
			q += s->hist[i].queue[k];
	cr_assert(q == 1, "queue histogram %llu: only the park since",
	    (unsigned long long)q);
	assert_counters_match(s);
	unmap(s);
	cr_assert(pl_stats_export(false) == 0);
}

/* Known counts while the export is switched on and off under load: each
 * thread parks with a deadline already passed, which always counts one
 * park and one timeout.  The switching thread flips the export meanwhile;
 * no count may be lost or doubled.  (Not under TSan: it takes the mmap
 * that puts the object's page under the counters (lib/stats.c) for a
 * plain write of the whole page, racing with the atomic adds that go on
 * meanwhile, which is the very move this test checks is exact.) */
#ifndef PL_TSAN
#define FLIP_THREADS 4
#define FLIP_PARKS 20000

static int flip_stop;

static void *
flip_parker(void *arg)
{
	static char addrs[FLIP_THREADS];
	char *a = &addrs[(intptr_t)arg];
	struct timespec past = tu_deadline_in(-TU_MS);
	for (int i = 0; i < FLIP_PARKS; i++)
		pl_park(a, NULL, NULL, NULL, NULL, 0, &past);
	return NULL;
}

Test(export, switching_under_load_is_exact)
{
	pthread_t t[FLIP_THREADS];
	pl_stats_reset();
	for (intptr_t i = 0; i < FLIP_THREADS; i++)
		t[i] = tu_spawn(flip_parker, (void *)i);
	int flips = 0;
	struct pl_stats st;
	do {
		cr_assert(pl_stats_export(flips % 2 == 0) == 0);
		flips++;
		pl_stats_get(&st);
	} while (
	    st.parks < (uint64_t)FLIP_THREADS * FLIP_PARKS && flips < 100000);
	for (int i = 0; i < FLIP_THREADS; i++)
		tu_join(t[i]);
	(void)flip_stop;
	pl_stats_get(&st);
	cr_assert(st.parks == (uint64_t)FLIP_THREADS * FLIP_PARKS,
	    "parks %llu after %d switches", (unsigned long long)st.parks,
	    flips);
	cr_assert(st.timeouts == (uint64_t)FLIP_THREADS * FLIP_PARKS,
	    "timeouts %llu", (unsigned long long)st.timeouts);
	cr_assert(st.threads_parked_now == 0, "parked now %zu",
	    st.threads_parked_now);
	cr_assert(flips >= 4, "only %d switches", flips);
	if (flips % 2) {
		const struct plx_shm *s = map_self();
		assert_counters_match(s);
		unmap(s);
	}
	pl_stats_export(false);
}
#endif

Test(export, a_forked_child_starts_from_zero_and_exports_its_own)
{
	cr_assert(pl_stats_export(true) == 0);
	hammer(&export_hot_lock, 2000);
	struct pl_stats parent_before;
	pl_stats_get(&parent_before);
	cr_assert(parent_before.parks > 0);

	fflush(NULL);
	pid_t pid = fork();
	cr_assert(pid >= 0);
	if (pid == 0) {
		tu_child_watchdog(30);
		struct pl_stats st;
		pl_stats_get(&st);
		if (st.parks || st.unparks || st.wait_ns_total ||
		    st.threads_parked_now)
			_exit(10);
		char path[64];
		struct stat sb;
		shm_path(path, sizeof path, getpid());
		if (stat(path, &sb) != 0)
			_exit(11);
		/* The child's counts go to its own page and object. */
		struct timespec past = tu_deadline_in(-TU_MS);
		static char a;
		for (int i = 0; i < 100; i++)
			pl_park(&a, NULL, NULL, NULL, NULL, 0, &past);
		pl_stats_get(&st);
		if (st.parks != 100)
			_exit(12);
		exit(0); /* normal exit: removes the child's object */
	}
	int status;
	cr_assert(tu_waitpid_bounded(pid, &status, TU_WAIT_NS));
	cr_assert(WIFEXITED(status) && WEXITSTATUS(status) == 0,
	    "child status %d", status);
	char path[64];
	struct stat sb;
	shm_path(path, sizeof path, pid);
	cr_assert(stat(path, &sb) != 0, "%s left after the child's exit", path);
	struct pl_stats parent_after;
	pl_stats_get(&parent_after);
	cr_assert(parent_after.parks == parent_before.parks,
	    "the child's parks reached the parent");
	const struct plx_shm *s = map_self();
	assert_counters_match(s);
	unmap(s);
	cr_assert(pl_stats_export(false) == 0);
}

/* At exit, a process that keeps its object (as under parkstat) saves the
 * lines of its maps that hold its addresses: all of the executable's for
 * a global, and nothing of the heap's. */
Test(export, exit_saves_the_maps_of_the_addresses)
{
	char exe[4096];
	ssize_t n = readlink("/proc/self/exe", exe, sizeof exe - 1);
	cr_assert(n > 0);
	exe[n] = '\0';
	fflush(NULL);
	pid_t pid = fork();
	cr_assert(pid >= 0);
	if (pid == 0) {
		tu_child_watchdog(30);
		char me[24];
		snprintf(me, sizeof me, "%ld", (long)getpid());
		/* No stacks: their frames' files would be saved too. */
		if (setenv(PLX_ENV_KEEP, me, 1) != 0 ||
		    setenv(PLX_ENV_SAMPLE, "0", 1) != 0 ||
		    pl_stats_export(true) != 0)
			_exit(10);
		static char a;
		pl_mutex_t *heap = calloc(1, sizeof *heap);
		struct timespec past = tu_deadline_in(-TU_MS);
		pl_park(&a, NULL, NULL, NULL, NULL, 0, &past);
		pl_park(heap, NULL, NULL, NULL, NULL, 0, &past);
		exit(0);
	}
	int status;
	cr_assert(tu_waitpid_bounded(pid, &status, TU_WAIT_NS));
	cr_assert(WIFEXITED(status) && WEXITSTATUS(status) == 0,
	    "child status %d", status);
	char name[64];
	snprintf(name, sizeof name, PLX_NAME_FMT, (long)pid);
	int fd = shm_open(name, O_RDONLY, 0);
	cr_assert(fd >= 0, "the child did not keep %s", name);
	const struct plx_shm *s =
	    mmap(NULL, PLX_SIZE, PROT_READ, MAP_SHARED, fd, 0);
	close(fd);
	shm_unlink(name);
	cr_assert(s != MAP_FAILED);
	cr_assert(s->h.state == PLX_EXITED && s->h.slots_used == 2);
	size_t len = s->h.maps_len;
	cr_assert(len > 0 && len <= PLX_MAPSLEN && s->maps[len - 1] == '\n',
	    "maps_len %zu", len);
	char *maps = strndup(s->maps, len);
	cr_assert(maps);
	/* Every line is the executable's, or continues one: anonymous, or
	 * shared (the counters page, mapped over this suite's .bss). */
	size_t exe_lines = 0;
	for (char *l = strtok(maps, "\n"); l; l = strtok(NULL, "\n")) {
		const char *path = strchr(l, '/');
		bool shared = strstr(l, "-s ") != NULL;
		cr_assert(path == NULL || shared || strcmp(path, exe) == 0,
		    "saved a line of another file: %s", l);
		cr_assert(strstr(l, "[heap]") == NULL, "saved the heap: %s", l);
		exe_lines += path != NULL && !shared;
	}
	cr_assert(exe_lines >= 2, "%zu lines of %s", exe_lines, exe);
	free(maps);
	unmap(s);
}

/* The parks of one thread that park_here makes: each times out at once. */
static __attribute__((noinline)) void
park_here(const void *addr, int n)
{
	struct timespec past = tu_deadline_in(-TU_MS);
	for (int i = 0; i < n; i++)
		pl_park(addr, NULL, NULL, NULL, NULL, 0, &past);
	__asm__ volatile("" ::: "memory"); /* no tail call: keep the frame */
}

struct sampled_parker {
	const void *addr;
	int parks;
};

static void *
sampled_parker_thread(void *arg)
{
	const struct sampled_parker *p = arg;
	park_here(p->addr, p->parks);
	return NULL;
}

/* The child of export_child: parks sampled 1 in every on a from
 * park_here, parks of them in the main thread, or in each of threads
 * threads (when not 0), and a condition wait on c that times out; keeps
 * its object for the parent. */
static pid_t
export_child(
    const char *every, const void *a, pl_cond_t *c, int threads, int parks)
{
	fflush(NULL);
	pid_t pid = fork();
	cr_assert(pid >= 0);
	if (pid == 0) {
		tu_child_watchdog(30);
		char me[24];
		snprintf(me, sizeof me, "%ld", (long)getpid());
		if (setenv(PLX_ENV_KEEP, me, 1) != 0 ||
		    setenv(PLX_ENV_SAMPLE, every, 1) != 0 ||
		    pl_stats_export(true) != 0)
			_exit(10);
		if (threads == 0)
			park_here(a, parks);
		struct sampled_parker p = { a, parks };
		for (int i = 0; i < threads; i++) {
			pthread_t t;
			if (pthread_create(
			        &t, NULL, sampled_parker_thread, &p) != 0 ||
			    pthread_join(t, NULL) != 0)
				_exit(12);
		}
		pl_mutex_t m = PL_MUTEX_INITIALIZER;
		pl_mutex_lock(&m);
		struct timespec soon = tu_deadline_in(TU_MS);
		if (pl_cond_timedwait(c, &m, &soon) != ETIMEDOUT)
			_exit(11);
		pl_mutex_unlock(&m);
		exit(0);
	}
	int status;
	cr_assert(tu_waitpid_bounded(pid, &status, TU_WAIT_NS));
	cr_assert(WIFEXITED(status) && WEXITSTATUS(status) == 0,
	    "child status %d", status);
	return pid;
}

static const struct plx_shm *
map_kept(pid_t pid)
{
	char name[64];
	snprintf(name, sizeof name, PLX_NAME_FMT, (long)pid);
	int fd = shm_open(name, O_RDONLY, 0);
	cr_assert(fd >= 0, "the child did not keep %s", name);
	const struct plx_shm *s =
	    mmap(NULL, PLX_SIZE, PROT_READ, MAP_SHARED, fd, 0);
	close(fd);
	shm_unlink(name);
	cr_assert(s != MAP_FAILED);
	cr_assert(s->h.state == PLX_EXITED);
	return s;
}

/* Each slot says what kind of lock parked there, and every park of a
 * thread (sampled 1 in 1) records its stack: the frames of the caller,
 * with the number and time of those parks. */
Test(export, slots_have_kinds_and_sampled_parks_have_stacks)
{
	static char a;
	static pl_cond_t c = PL_COND_INITIALIZER;
	pid_t pid = export_child("1", &a, &c, 0, 5);
	const struct plx_shm *s = map_kept(pid);
	cr_assert(s->h.sample_every == 1 && s->h.nstacks == PLX_NSTACKS &&
	    s->h.depth == PLX_DEPTH);
	const struct plx_slot *sa = find_slot(s, &a), *sc = find_slot(s, &c);
	cr_assert(sa && sc, "slots for a and c");
	cr_assert(sa->kind == PLI_KIND_PARK, "a's kind %u", sa->kind);
	cr_assert(sc->kind == PLI_KIND_PL_COND, "c's kind %u", sc->kind);
	cr_assert_str_eq(pli_kind_label(sc->kind), "pl_cond");

	uint64_t parks = 0, here = (uintptr_t)park_here;
	bool in_park_here = false, cond_stack = false;
	for (size_t i = 0; i < PLX_NSTACKS; i++) {
		const struct plx_stack *st = &s->stacks[i];
		if (st->key == 0)
			continue;
		cr_assert(st->depth > 0 && st->depth <= PLX_DEPTH);
		if (st->addr == (uintptr_t)&c) {
			cond_stack = st->kind == PLI_KIND_PL_COND &&
			    st->parks == 1 && st->wait_ns >= TU_MS / 2;
			continue;
		}
		cr_assert(st->addr == (uintptr_t)&a, "a stack of %#lx",
		    (unsigned long)st->addr);
		cr_assert(st->kind == PLI_KIND_PARK);
		parks += st->parks;
		cr_assert(st->max_ns <= st->wait_ns);
		for (uint32_t f = 0; f < st->depth; f++)
			in_park_here |=
			    st->pcs[f] > here && st->pcs[f] - here < 512;
	}
	cr_assert(parks == 5, "%lu sampled parks on a", (unsigned long)parks);
	cr_assert(in_park_here, "no frame in park_here");
	cr_assert(cond_stack, "no stack of the condition wait");
	cr_assert(s->h.stacks_dropped == 0);
	unmap(s);
}

/* The sampled parks on addr, over the stacks recorded. */
static uint64_t
sampled_parks(const struct plx_shm *s, const void *addr)
{
	uint64_t parks = 0;
	for (size_t i = 0; i < PLX_NSTACKS; i++)
		if (s->stacks[i].addr == (uintptr_t)addr)
			parks += s->stacks[i].parks;
	return parks;
}

/* 1 in every N parks of a thread is sampled; 0 samples none. */
Test(export, sampling_takes_one_park_in_n)
{
	static char a, b;
	static pl_cond_t c = PL_COND_INITIALIZER;
	const struct plx_shm *s = map_kept(export_child("4", &a, &c, 0, 8));
	uint64_t parks = sampled_parks(s, &a);
	cr_assert(parks == 2, "%lu of 8 parks sampled", (unsigned long)parks);
	unmap(s);

	s = map_kept(export_child("0", &b, &c, 0, 8));
	cr_assert(s->h.stacks_used == 0 && s->h.sample_every == 0);
	cr_assert(find_slot(s, &b)->parks == 8);
	unmap(s);
}

/* Each thread starts sampling at a phase of its own: 64 threads that park
 * 4 times each, sampled 1 in 8, have about half of them sampled once and
 * the rest not at all (fewer than 8 or more than 56 sampled has a chance
 * under 1e-6).  With the first park of every thread sampled, as before,
 * all 64 were. */
Test(export, each_thread_samples_from_a_phase_of_its_own)
{
	static char a;
	static pl_cond_t c = PL_COND_INITIALIZER;
	const struct plx_shm *s = map_kept(export_child("8", &a, &c, 64, 4));
	uint64_t parks = sampled_parks(s, &a);
	cr_assert(find_slot(s, &a)->parks == 64 * 4);
	cr_assert(parks >= 8 && parks <= 56, "%lu of 256 parks sampled",
	    (unsigned long)parks);
	unmap(s);
}

/* ---- the table of threads (export.h, plx_thread) ---------------------- */

/* A thread that parks on thr_addr, each time until thr_go reaches the
 * round it parks for; it reports its tid first. */
static char thr_addr;
static int thr_go;
static int thr_ready; /* 1: has its record; the test then sets 2 */
static uint64_t thr_tid;

struct thr_round {
	int round;
};

static bool
thr_not_yet(void *ctx)
{
	const struct thr_round *r = ctx;
	return __atomic_load_n(&thr_go, __ATOMIC_ACQUIRE) < r->round;
}

static void
thr_park(int round)
{
	struct thr_round r = { round };
	while (thr_not_yet(&r))
		pl_park(&thr_addr, thr_not_yet, NULL, NULL, &r, 0, NULL);
}

/* The consistent entry of thread tid in s; false if it has none. */
static bool
thread_entry(const struct plx_shm *s, uint64_t tid, struct plx_thread *out)
{
	for (size_t i = 0; i < PLX_NTHREADS; i++)
		if (plx_thread_read(&s->threads[i], out, 1000) &&
		    out->tid == tid)
			return true;
	return false;
}

/* Poll until thread tid is listed parked on addr (addr 0: listed and not
 * parked); false after TU_WAIT_NS. */
static bool
wait_entry(const struct plx_shm *s, uint64_t tid, const void *addr,
    struct plx_thread *out)
{
	int64_t end = tu_now_ns() + TU_WAIT_NS;
	do {
		if (thread_entry(s, tid, out) && out->addr == (uintptr_t)addr)
			return true;
		tu_poll_pause();
	} while (tu_now_ns() < end);
	return false;
}

static void *
thr_main(void *arg)
{
	(void)arg;
	__atomic_store_n(
	    &thr_tid, (uint64_t)syscall(SYS_gettid), __ATOMIC_RELEASE);
	thr_park(1);
	return NULL;
}

Test(export, a_parked_thread_is_listed_until_it_runs_again)
{
	thr_go = 0;
	thr_tid = 0;
	cr_assert(pl_stats_export(true) == 0);
	const struct plx_shm *s = map_self();
	cr_assert(s->h.nthreads == PLX_NTHREADS && s->h.nheld == PLX_HELD);
	uint64_t listed = s->h.threads_listed;
	uint64_t t0 = (uint64_t)tu_now_ns();
	pthread_t t = tu_spawn(thr_main, NULL);
	ASSERT_PARKED(&thr_addr, 1);
	uint64_t tid = __atomic_load_n(&thr_tid, __ATOMIC_ACQUIRE);
	struct plx_thread e;
	cr_assert(wait_entry(s, tid, &thr_addr, &e),
	    "thread %llu not listed as parked on &thr_addr",
	    (unsigned long long)tid);
	cr_assert(e.kind == PLI_KIND_PARK, "kind %u", e.kind);
	cr_assert(e.start_ns >= t0 && e.start_ns <= (uint64_t)tu_now_ns());
	cr_assert(e.nheld == 0 && e.held[0].addr == 0, "checked mode is off");
	cr_assert(s->h.threads_listed == listed + 1);

	/* Woken, it is listed as parked on nothing, and at its end not at
	 * all. */
	__atomic_store_n(&thr_go, 1, __ATOMIC_RELEASE);
	pl_unpark_all(&thr_addr, 0);
	int64_t end = tu_now_ns() + TU_WAIT_NS;
	while (thread_entry(s, tid, &e) && e.addr != 0 && tu_now_ns() < end)
		tu_poll_pause();
	cr_assert(!thread_entry(s, tid, &e) || e.addr == 0,
	    "thread %llu still listed as parked", (unsigned long long)tid);
	tu_join(t);
	cr_assert(!thread_entry(s, tid, &e), "the entry outlives its thread");
	cr_assert(s->h.threads_listed == listed);
	cr_assert(s->h.threads_unlisted == 0);
	unmap(s);
	cr_assert(pl_stats_export(false) == 0);
}

/* A thread that got its record before the export began (no thread event
 * then) is listed at its first park; after a stop and a new start, in the
 * new object, at its next. */
static void *
thr_early_main(void *arg)
{
	(void)arg;
	static char a;
	struct timespec past = tu_deadline_in(-TU_MS);
	pl_park(&a, NULL, NULL, NULL, NULL, 0, &past); /* gets its record */
	__atomic_store_n(
	    &thr_tid, (uint64_t)syscall(SYS_gettid), __ATOMIC_RELEASE);
	__atomic_store_n(&thr_ready, 1, __ATOMIC_RELEASE);
	int64_t end = tu_now_ns() + TU_WAIT_NS;
	while (__atomic_load_n(&thr_ready, __ATOMIC_ACQUIRE) != 2 &&
	    tu_now_ns() < end)
		sched_yield();
	thr_park(1);
	thr_park(2);
	return NULL;
}

Test(export, a_thread_with_a_record_before_the_export_is_listed)
{
	thr_go = 0;
	thr_tid = 0;
	thr_ready = 0;
	pthread_t t = tu_spawn(thr_early_main, NULL);
	int64_t end = tu_now_ns() + TU_WAIT_NS;
	while (__atomic_load_n(&thr_ready, __ATOMIC_ACQUIRE) != 1 &&
	    tu_now_ns() < end)
		tu_poll_pause();
	cr_assert(thr_ready == 1);
	uint64_t tid = __atomic_load_n(&thr_tid, __ATOMIC_ACQUIRE);

	cr_assert(pl_stats_export(true) == 0);
	__atomic_store_n(&thr_ready, 2, __ATOMIC_RELEASE);
	const struct plx_shm *s = map_self();
	struct plx_thread e;
	ASSERT_PARKED(&thr_addr, 1);
	cr_assert(wait_entry(s, tid, &thr_addr, &e), "not listed");
	unmap(s);

	/* A new object: the entry of the old one is forgotten. */
	cr_assert(pl_stats_export(false) == 0);
	cr_assert(pl_stats_export(true) == 0);
	s = map_self();
	cr_assert(!thread_entry(s, tid, &e), "listed before it parks again");
	__atomic_store_n(&thr_go, 1, __ATOMIC_RELEASE);
	pl_unpark_all(&thr_addr, 0);
	cr_assert(wait_entry(s, tid, &thr_addr, &e),
	    "not listed in the new object at its next park");
	cr_assert(s->h.threads_listed >= 1);
	__atomic_store_n(&thr_go, 2, __ATOMIC_RELEASE);
	pl_unpark_all(&thr_addr, 0);
	tu_join(t);
	cr_assert(!thread_entry(s, tid, &e), "the entry outlives its thread");
	unmap(s);
	cr_assert(pl_stats_export(false) == 0);
}
