/* SPDX-License-Identifier: MIT */
/*
 * torture: a stress tester for every libparkinglot primitive, in the manner
 * of the Linux kernel's locktorture.  Public API only.
 *
 *   tools/torture [--seconds N] [--threads N] [--primitive NAME[,NAME..]|all]
 *                 [--interval S] [--busted] [--seed N] [--no-fork]
 *                 [--stall-ms N]
 *
 * First a conformance pass: the bodies of tests/conform.h (lighter than in
 * tests/test_conform) for the mutex, the rmutex, a bit lock of each width
 * and the rwlock's writers.  Then --threads workers (default 4) for each
 * primitive hammer shared objects with random operations, holds, deadlines
 * (past, malformed, up to 100 ms away) and fair and plain unlocks.  The
 * mutex, rmutex and bitlock workers run conform_op (nobody else inside, a
 * plain counter checked at the end, ETIMEDOUT never early, EINVAL for
 * malformed deadlines), the rmutex at random recursion depths with EPERM
 * from non-owners, the bit locks two in a word and two in a byte while
 * their other bits are flipped by atomic xor.  cond: a bounded queue whose
 * items arrive exactly once and in order, signal and broadcast phases, an
 * epoch whose waiters must all return.  rwlock: no reader beside a writer,
 * no torn read.  once: fn runs exactly once on fresh pl_once_t objects.
 * park: a counting semaphore with hand-off and a gate opened with
 * pl_unpark_all, on raw pl_park/pl_unpark_*.
 *
 * A churn thread replaces random workers; a fork in the middle (--seconds
 * >= 4; not under ThreadSanitizer, which does not support threads in the
 * child) runs every primitive for 1 s in the child on objects the parent
 * never touched; a monitor flags a wait that lasts --stall-ms (2000;
 * 10000 under TSan) past its due end, and a primitive that completes
 * nothing for as long.  A status line every --interval seconds (5); the
 * last line is "torture: SUCCESS ops=N violations=0" or "torture: FAILURE
 * ops=N violations=M", the exit status 0 or 1; workers that do not stop in
 * time, or a SIGALRM watchdog, end the run in FAILURE.  --busted must fail:
 * the mutex workers use a lock that is not atomic (test, yield, then set),
 * and the conformance pass runs its no-lost-wakeup body on a mutex whose
 * unlock wakes nobody.
 *
 * This file holds the options, main and the harness: running, churn, the
 * monitor and its stall detector, the reports and the final checks.  The
 * workers' operations, their locks and the conformance pass are in
 * tools/torture-workers.c; what both use of the run (options, reports,
 * published waits) is in tools/torture-run.c; tools/torture-run.h declares
 * what they share.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <float.h>
#include <getopt.h>
#include <inttypes.h>
#include <limits.h>
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <parkinglot.h>

#include "toolutil.h"
#include "torture-run.h"

/* Time allowed to stop once the run is over. */
static uint64_t
grace_ns(void)
{
	return 2 * opt.stall_ns + 3 * NS;
}

/* A second set of objects, beside parent_run, that only the fork child
 * uses: nobody in the parent ever touches them, so they are free at the
 * fork. */
static struct run child_run;
static volatile sig_atomic_t in_child;
static int run_child_fd = -1;

static uint64_t
prim_ops(struct run *r, int p)
{
	uint64_t n = 0;
	for (int i = 0; i < MAXTHREADS; i++)
		n += LOAD(&r->slots[p][i].ops);
	return n;
}

static uint64_t
total_ops(struct run *r)
{
	uint64_t n = LOAD(&r->child_ops);
	for (int p = 0; p < NPRIM; p++)
		n += prim_ops(r, p);
	return n;
}

/* ---- workers, churn, monitor -------------------------------------------- */

static void *
worker(void *arg)
{
	struct slot *s = arg;
	me = s;
	while (!stopping(s)) {
		prim_op[s->prim](s);
		STORE(&s->ops, LOAD(&s->ops) + 1);
		uint32_t x = RND(s) % 1000; /* between operations: usually on */
		if (x < 5)
			sleep_ns(1000 + RND(s) % 50000);
		else if (x < 20)
			sched_yield();
	}
	__atomic_store_n(&s->exited, 1, __ATOMIC_RELEASE);
	return NULL;
}

static bool
slot_start(struct slot *s)
{
	s->incarnation++;
	s->rng = conform_splitmix(opt.seed ^
	             conform_splitmix(((uint64_t)s->prim << 40) ^
	                 ((uint64_t)s->index << 24) ^
	                 ((uint64_t)s->incarnation << 1) ^
	                 (uint64_t)s->run->is_child)) |
	    1;
	STORE(&s->stop, 0);
	STORE(&s->exited, 0);
	int e = pthread_create(&s->tid, NULL, worker, s);
	if (e)
		violation(s->run, P_OTHER, "pthread_create: %s", strerror(e));
	return s->started = e == 0;
}

/* Join s's thread, asked to stop at asked (ns), once it has left its
 * loop; if it has not within limit ns of being asked, report it (by: who
 * asked) and abandon it, never to be joined.  Whether it was joined. */
static bool
slot_join(struct slot *s, uint64_t asked, uint64_t limit, const char *by)
{
	while (!__atomic_load_n(&s->exited, __ATOMIC_ACQUIRE)) {
		if (now_ns() <= asked + limit) {
			sleep_ns(1000000);
			continue;
		}
		uint64_t q = LOAD(&s->wseq);
		s->abandoned = true;
		violation(s->run, s->prim,
		    "worker %d did not stop within %.1f s of being asked "
		    "(%s)%s%s",
		    s->index, (double)limit / 1e9, by,
		    (q & 1) ? "; it waits in " : "",
		    (q & 1) ? LOAD(&s->what) : "");
		return false;
	}
	pthread_join(s->tid, NULL);
	s->started = false;
	return true;
}

static void *
churn(void *arg)
{
	struct run *r = arg;
	uint64_t x = conform_splitmix(opt.seed ^ 0xc4u) | 1;
	int enabled[NPRIM], ne = 0;
	for (int p = 0; p < NPRIM; p++)
		if (ENABLED(p))
			enabled[ne++] = p;
	while (!LOAD(&r->stop)) {
		uint64_t t = 20000000 + conform_rng(&x) % 180000000;
		for (uint64_t slept = 0; slept < t && !LOAD(&r->stop);
		     slept += 10000000)
			sleep_ns(10000000);
		struct slot *s = &r->slots[enabled[conform_rng(&x) % ne]]
		                          [conform_rng(&x) % r->nthreads];
		if (LOAD(&r->stop) || !s->started || s->abandoned)
			continue;
		STORE(&s->stop, 1);
		if (s->prim == P_COND)
			cond_kick(r);
		if (!slot_join(s, now_ns(), opt.stall_ns + NS, "by churn"))
			continue;
		FADD(&r->churns, 1);
		slot_start(s);
	}
	return NULL;
}

static void
monitor_slot(struct run *r, struct slot *s, uint64_t t)
{
	uint64_t q = __atomic_load_n(&s->wseq, __ATOMIC_ACQUIRE);
	if (!(q & 1))
		return;
	/* Acquire loads, so that the check of wseq below cannot move above
	 * them (no fence: ThreadSanitizer does not model fences). */
	const char *what = __atomic_load_n(&s->what, __ATOMIC_ACQUIRE);
	uint64_t start = __atomic_load_n(&s->wstart, __ATOMIC_ACQUIRE);
	uint64_t limit = __atomic_load_n(&s->wlimit, __ATOMIC_ACQUIRE);
	const uintptr_t *watch = __atomic_load_n(&s->watch, __ATOMIC_ACQUIRE);
	uintptr_t val = __atomic_load_n(&s->watch_val, __ATOMIC_ACQUIRE);
	if (LOAD(&s->wseq) != q)
		return; /* that wait ended meanwhile */
	if (q != s->m_seq) {
		s->m_seq = q;
		s->m_trig = 0;
		s->m_reported = false;
	}
	if (watch && !s->m_trig && LOAD(watch) != val)
		s->m_trig = t;
	if (s->m_trig && s->m_trig + opt.stall_ns < limit)
		limit = s->m_trig + opt.stall_ns;
	if (t > limit && !s->m_reported) {
		s->m_reported = true;
		violation(r, s->prim,
		    "stall: worker %d has been in %s for "
		    "%.2f s%s",
		    s->index, what, (double)(t - start) / 1e9,
		    s->m_trig ? ", since what it waits for happened" : "");
	}
}

static void *
monitor(void *arg)
{
	struct run *r = arg;
	uint64_t last_ops[NPRIM] = { 0 }, last_change[NPRIM];
	for (int p = 0; p < NPRIM; p++)
		last_change[p] = now_ns();
	while (!LOAD(&r->stop_monitor)) {
		uint64_t t = now_ns();
		for (int p = 0; p < NPRIM; p++) {
			for (int i = 0; ENABLED(p) && i < r->nthreads; i++)
				monitor_slot(r, &r->slots[p][i], t);
			uint64_t ops = prim_ops(r, p);
			if (!ENABLED(p) || ops != last_ops[p] ||
			    LOAD(&r->stop)) {
				last_ops[p] = ops;
				last_change[p] = t;
			} else if (t - last_change[p] > opt.stall_ns) {
				violation(r, p,
				    "no progress: no operation "
				    "completed for %.2f s",
				    (double)(t - last_change[p]) / 1e9);
				last_change[p] = t;
			}
		}
		sleep_ns(20000000);
	}
	return NULL;
}

/* ---- end-of-run checks -------------------------------------------------- */

static uint64_t
cs_sum(struct run *r, int p, int li)
{
	uint64_t n = 0;
	for (int i = 0; i < MAXTHREADS; i++)
		n += r->slots[p][i].cs[li];
	return n;
}

static void
final_checks(struct run *r)
{
	/* The locks of conform_op: counters, at rest; the rwlock's records. */
	for (int p = 0; p < NPRIM; p++) {
		struct lockset *ls = &r->ls[p];
		for (int li = 0; li < NLOCKS && ls->lk[li].obj; li++) {
			const struct conform_lock *l = &ls->lk[li];
			uint64_t want = cs_sum(r, p, li),
			         got = ls->ck[li].value;
			for (int i = 0; p == P_RWLOCK && i < 4; i++)
				if ((got = r->rw[li].data[i]) != want)
					break;
			if (got != want)
				violation(r, p,
				    "%s %d: counter %" PRIu64
				    ", critical sections %" PRIu64,
				    l->name, li, got, want);
			if (l->state(l) != 0)
				violation(r, p, "%s %d: state %#jx at rest",
				    l->name, li, (uintmax_t)l->state(l));
		}
	}
	for (int li = 0; li < 2; li++)
		if (!pl_rmutex_trylock(&r->rmtx[li]) ||
		    pl_rmutex_unlock(&r->rmtx[li]) != 0)
			violation(
			    r, P_RMUTEX, "rmutex %d: no trylock at rest", li);
	struct cond_obj *c = &r->cond;
	uint64_t left = c->count;
	for (; c->count; c->count--, c->head = (c->head + 1) % QCAP)
		cond_check_item(r, c, c->q[c->head]);
	if (c->produced != c->consumed + left)
		violation(r, P_COND,
		    "produced %" PRIu64 ", consumed %" PRIu64 " and %" PRIu64
		    " left",
		    c->produced, c->consumed, left);
	for (int p = 0; p < MAXTHREADS; p++)
		if (c->expect[p] != c->next_seq[p])
			violation(r, P_COND,
			    "producer %d made %" PRIu64 " items, %" PRIu64
			    " consumed in order",
			    p, c->next_seq[p], c->expect[p]);
	if (LOAD(&c->m.state) != 0)
		violation(r, P_COND, "the mutex's state is %#x at rest",
		    LOAD(&c->m.state));
	for (int i = 0; i < ONCE_RING; i++)
		once_check(r, &r->ring[i], "at the end");
	uintptr_t xw = r->init_word;
	unsigned char xb = r->init_byte;
	for (int i = 0; i < MAXTHREADS; i++) {
		xw ^= r->slots[P_BITLOCK][i].xorw;
		xb ^= r->slots[P_BITLOCK][i].xorb;
	}
	if (LOAD(&r->word) != xw || LOAD(&r->byte) != xb)
		violation(r, P_BITLOCK,
		    "the word is %#" PRIxPTR " and the "
		    "byte %#x, expected %#" PRIxPTR " and %#x",
		    LOAD(&r->word), LOAD(&r->byte), xw, xb);
	struct park_obj *pk = &r->park;
	if (LOAD(&pk->sem) != SEM_K * SEM_UNIT)
		violation(r, P_PARK, "the semaphore is %#" PRIxPTR " at rest",
		    LOAD(&pk->sem));
	if (LOAD(&pk->sem_value) != cs_sum(r, P_PARK, 0))
		violation(r, P_PARK,
		    "semaphore: counter %" PRIu64 ", holds %" PRIu64,
		    LOAD(&pk->sem_value), cs_sum(r, P_PARK, 0));
	/* Nothing may be left in a queue.  (Not in the fork child, whose
	 * counters began as a copy of the parent's.) */
	struct pl_stats st;
	pl_stats_get(&st);
	if (!r->is_child && !opt.busted && st.threads_parked_now != 0)
		violation(r, P_OTHER, "%zu threads still parked at the end",
		    st.threads_parked_now);
}

/* ---- a run -------------------------------------------------------------- */

static void
run_init(struct run *r, bool is_child)
{
	r->is_child = is_child;
	r->nthreads = opt.threads;
	for (int p = 0; p < NPRIM; p++)
		for (int i = 0; i < MAXTHREADS; i++)
			r->slots[p][i] =
			    (struct slot){ .run = r, .prim = p, .index = i };
	run_objects_init(r);
}

/* A status line; at the end, also the longest wait past due of each
 * primitive, against the stall bound. */
static void
print_status(struct run *r, uint64_t t, bool end)
{
	char buf[600];
	int n =
	    snprintf(buf, sizeof buf, "torture: %s%6.1f s:", end ? "end " : "",
	        (double)(t - r->start_ns) / 1e9);
	for (int p = 0; p < NPRIM; p++)
		if (ENABLED(p))
			n += snprintf(buf + n, sizeof buf - (size_t)n,
			    " %s %" PRIu64, prim_name[p], prim_ops(r, p));
	n += snprintf(buf + n, sizeof buf - (size_t)n,
	    "; churns %" PRIu64 "; violations %" PRIu64 "%s", LOAD(&r->churns),
	    total_violations(r),
	    end ? "\ntorture: longest waits (stall bound" : "");
	if (end)
		n += snprintf(buf + n, sizeof buf - (size_t)n,
		    " %.1f s):", (double)opt.stall_ns / 1e9);
	for (int p = 0; end && p < NPRIM; p++) {
		uint64_t m = 0;
		for (int i = 0; i < MAXTHREADS; i++)
			if (LOAD(&r->slots[p][i].max_over) > m)
				m = LOAD(&r->slots[p][i].max_over);
		if (ENABLED(p))
			n += snprintf(buf + n, sizeof buf - (size_t)n,
			    " %s %.1f ms", prim_name[p], (double)m / 1e6);
	}
	puts(buf);
}

static void
finish(struct run *r)
{
	uint64_t v = total_violations(r);
	fflush(stderr);
	printf("torture: %s ops=%" PRIu64 " violations=%" PRIu64 "\n",
	    v ? "FAILURE" : "SUCCESS", total_ops(r), v);
	fflush(stdout);
}

/* Stop every worker; a worker that does not stop within the grace ends
 * the process (a hang is a failure, never a hang of the tester). */
static void
stop_all(struct run *r)
{
	STORE(&r->stop, 1);
	cond_kick(r);
	__atomic_fetch_or(&r->park.gate, GATE_CLOSED, __ATOMIC_SEQ_CST);
	pl_unpark_all(&r->park.gate, TOKEN_CLOSED);
	uint64_t asked = now_ns();
	bool stuck = false;
	for (int p = 0; p < NPRIM; p++)
		for (int i = 0; i < r->nthreads; i++) {
			struct slot *s = &r->slots[p][i];
			if (s->started && !s->abandoned)
				slot_join(
				    s, asked, grace_ns(), "the end of a run");
			stuck |= s->abandoned;
		}
	if (stuck && r->is_child)
		_exit(2);
	if (stuck) {
		finish(r);
		_exit(1);
	}
}

static void run_torture(struct run *r, double seconds, bool with_fork);

/* The longest the fork child may take: its 1 s run, twice the grace a
 * run has to stop, and 5 s more.  Its watchdog and the parent both use
 * it. */
static uint64_t
child_bound_ns(void)
{
	return 1 * NS + 2 * grace_ns() + 5 * NS;
}

/* The fork child: only the forking thread exists here.  It runs a short
 * torture of its own on objects the parent never touched (locks held or
 * waited on by the parent's other threads are unusable here), and reports
 * its operations through the pipe and its verdict through its status. */
static pid_t
fork_child(struct run *r, int *fd)
{
	int fds[2];
	fflush(stdout);
	fflush(stderr);
	pid_t pid = pipe(fds) == 0 ? fork() : -1;
	if (pid < 0) {
		violation(r, P_OTHER, "pipe or fork: %s", strerror(errno));
		return -1;
	}
	if (pid == 0) {
		in_child = 1;
		close(fds[0]);
		run_child_fd = fds[1];
		alarm((unsigned)(child_bound_ns() / NS));
		run_init(&child_run, true);
		run_torture(&child_run, 1.0, false);
		uint64_t ops = total_ops(&child_run);
		if (write(run_child_fd, &ops, sizeof ops) != sizeof ops)
			_exit(3);
		_exit(total_violations(&child_run) ? 1 : 0);
	}
	close(fds[1]);
	*fd = fds[0];
	printf("torture: forked child %ld: it runs every primitive for 1 s "
	       "on objects of its own\n",
	    (long)pid);
	return pid;
}

/* Reap the child if it is done (with wait: until it is or limit passed,
 * then kill it); whether it is gone. */
static bool
reap_child(struct run *r, pid_t pid, int fd, bool wait, uint64_t limit)
{
	int st;
	pid_t w;
	uint64_t ops = 0;
	while (
	    (w = waitpid(pid, &st, WNOHANG)) == 0 && wait && now_ns() < limit)
		sleep_ns(10000000);
	if (w == 0 && !wait)
		return false;
	if (w == 0) {
		violation(r, P_OTHER,
		    "the fork child did not finish in "
		    "time: killed");
		kill(pid, SIGKILL);
		waitpid(pid, &st, 0);
	} else if (w < 0) {
		violation(r, P_OTHER, "waitpid: %s", strerror(errno));
	} else if (read(fd, &ops, sizeof ops) == sizeof ops) {
		STORE(&r->child_ops, ops);
	}
	close(fd);
	if (w == pid && WIFEXITED(st) && WEXITSTATUS(st) == 0)
		printf("torture: fork child exited 0 after %" PRIu64 " ops\n",
		    ops);
	else if (w == pid)
		violation(r, P_OTHER,
		    "the fork child ended with status %#x "
		    "(%" PRIu64 " ops)",
		    st, ops);
	return true;
}

/* Run the enabled primitives for the given time on r's objects. */
static void
run_torture(struct run *r, double seconds, bool with_fork)
{
	pthread_t mon, ch_tid;
	pid_t child = -1;
	int fd = -1, e;
	r->start_ns = now_ns();
	for (int p = 0; p < NPRIM; p++)
		for (int i = 0; ENABLED(p) && i < r->nthreads; i++)
			if (!slot_start(&r->slots[p][i]))
				break;
	if ((e = pthread_create(&mon, NULL, monitor, r)) != 0 ||
	    (!r->is_child && (e = pthread_create(&ch_tid, NULL, churn, r)))) {
		fprintf(stderr, "torture: pthread_create: %s\n", strerror(e));
		exit(1);
	}
	uint64_t end = r->start_ns + (uint64_t)(seconds * 1e9), t;
	uint64_t next_status = r->start_ns + (uint64_t)(opt.interval * 1e9);
	uint64_t fork_at =
	    with_fork ? r->start_ns + (end - r->start_ns) / 2 : UINT64_MAX;
	uint64_t child_limit = fork_at + child_bound_ns();
	while ((t = now_ns()) < end) {
		if (!r->is_child && opt.interval > 0 && t >= next_status) {
			print_status(r, t, false);
			next_status += (uint64_t)(opt.interval * 1e9);
		}
		if (t >= fork_at) {
			fork_at = UINT64_MAX;
			child = fork_child(r, &fd);
		}
		if (child > 0 && reap_child(r, child, fd, false, 0))
			child = -1;
		sleep_ns(end - t < 20000000 ? end - t : 20000000);
	}
	STORE(&r->stop, 1);
	if (!r->is_child)
		pthread_join(ch_tid, NULL);
	stop_all(r);
	STORE(&r->stop_monitor, 1);
	pthread_join(mon, NULL);
	if (child > 0)
		reap_child(r, child, fd, true, child_limit);
	final_checks(r);
}

/* ---- the watchdog and main ---------------------------------------------- */

static char *
put_u64(char *p, uint64_t v)
{
	char tmp[24];
	int n = 0;
	do
		tmp[n++] = (char)('0' + v % 10);
	while ((v /= 10) != 0);
	while (n)
		*p++ = tmp[--n];
	return p;
}

/* Async-signal-safe: the last line, and out. */
static void
on_alarm(int sig)
{
	(void)sig;
	if (in_child)
		_exit(4);
	static const char a[] = "torture: watchdog: the run did not end in "
	                        "time\ntorture: FAILURE ops=";
	char buf[160], *p = buf + sizeof a - 1;
	uint64_t v = total_violations(&parent_run);
	memcpy(buf, a, sizeof a - 1);
	p = put_u64(p, total_ops(&parent_run));
	memcpy(p, " violations=", 12);
	p = put_u64(p + 12, v ? v : 1);
	*p++ = '\n';
	if (write(STDOUT_FILENO, buf, (size_t)(p - buf)) < 0)
		_exit(1);
	_exit(1);
}

static void
usage(FILE *f)
{
	fprintf(f,
	    "usage: torture [--seconds N] [--threads N] "
	    "[--primitive NAME[,NAME...]|all]\n"
	    "               [--interval S] [--busted] [--seed N] [--no-fork] "
	    "[--stall-ms N]\n"
	    "  --seconds N     run time (default 20; a fork in the middle "
	    "if >= 4)\n"
	    "  --threads N     workers per primitive, 2..%d (default 4)\n"
	    "  --primitive P   mutex rmutex cond rwlock once bitlock park, "
	    "or all\n"
	    "  --interval S    a status line every S seconds (default 5; 0: "
	    "none)\n"
	    "  --busted        a broken mutex: the run must end in FAILURE\n"
	    "  --stall-ms N    the stall bound (default 2000; 10000 under "
	    "TSan)\n",
	    MAXTHREADS);
}

static bool
parse_prims(const char *arg)
{
	if (strcmp(arg, "all") == 0) {
		opt.prims = (1u << NPRIM) - 1;
		return true;
	}
	opt.prims = 0;
	for (const char *t = arg;; t += strcspn(t, ",") + 1) {
		size_t len = strcspn(t, ",");
		int p = 0;
		while (p < NPRIM &&
		    (strlen(prim_name[p]) != len ||
		        strncmp(t, prim_name[p], len) != 0))
			p++;
		if (p == NPRIM) {
			fprintf(stderr, "torture: unknown primitive '%.*s'\n",
			    (int)len, t);
			return false;
		}
		opt.prims |= 1u << p;
		if (t[len] == '\0')
			return true;
	}
}

int
main(int argc, char **argv)
{
	static const struct option longopts[] = {
		{ "seconds", required_argument, NULL, 's' },
		{ "threads", required_argument, NULL, 't' },
		{ "primitive", required_argument, NULL, 'p' },
		{ "interval", required_argument, NULL, 'i' },
		{ "busted", no_argument, NULL, 'b' },
		{ "seed", required_argument, NULL, 'S' },
		{ "no-fork", no_argument, NULL, 'F' },
		{ "stall-ms", required_argument, NULL, 'm' },
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 },
	};
	bool seeded = false, ok = true;
	long threads = opt.threads, stall_ms = UNDER_TSAN ? 10000 : 2000;
	int c;
	char *endp;

	setvbuf(stdout, NULL, _IOLBF, 0);
	while (ok &&
	    (c = getopt_long(argc, argv, "s:t:p:i:bS:Fm:h", longopts, NULL)) !=
	        -1) {
		if (c == 's') {
			ok = tool_parse_double(optarg, 0, 1e6, &opt.seconds) &&
			    opt.seconds > 0;
		} else if (c == 't') {
			ok = tool_parse_long(optarg, 2, MAXTHREADS, &threads);
		} else if (c == 'p') {
			ok = parse_prims(optarg);
		} else if (c == 'i') {
			ok = tool_parse_double(
			    optarg, 0, DBL_MAX, &opt.interval);
		} else if (c == 'S') {
			opt.seed = strtoull(optarg, &endp, 0);
			ok = *endp == '\0';
			seeded = true;
		} else if (c == 'm') {
			ok = tool_parse_long(optarg, 10, LONG_MAX, &stall_ms);
		} else if (c == 'h') {
			usage(stdout);
			return 0;
		}
		opt.busted |= c == 'b';
		opt.fork &= c != 'F';
		ok = ok && c != '?';
	}
	if (!ok || optind != argc) {
		usage(stderr);
		return 2;
	}
	opt.threads = (int)threads;
	opt.stall_ns = (uint64_t)stall_ms * 1000000;
	if (!seeded)
		opt.seed = conform_splitmix(now_ns() ^ (uint64_t)getpid());
	static const char fork_on[] = "a fork in the middle";
	const char *fork_note = fork_on;
	if (UNDER_TSAN)
		fork_note = "fork phase skipped (ThreadSanitizer does not "
		            "support threads in a forked child)";
	else if (!opt.fork)
		fork_note = "fork phase skipped (--no-fork)";
	else if (opt.seconds < 4)
		fork_note = "fork phase skipped (--seconds < 4)";
	opt.fork = fork_note == fork_on;
	char prims[128] = "";
	for (int p = 0; p < NPRIM; p++)
		if (ENABLED(p))
			strcat(
			    strcat(prims, prims[0] ? "," : ""), prim_name[p]);
	printf("torture: %s for %g s, %d threads each, seed %" PRIu64
	       ", stall bound %.1f s%s\ntorture: %s\n",
	    prims, opt.seconds, opt.threads, opt.seed,
	    (double)opt.stall_ns / 1e9, opt.busted ? ", BUSTED mutex" : "",
	    fork_note);

	struct sigaction sa;
	memset(&sa, 0, sizeof sa);
	sa.sa_handler = on_alarm;
	sigemptyset(&sa.sa_mask);
	sigaction(SIGALRM, &sa, NULL);
	alarm((unsigned)(opt.seconds + 4 * grace_ns() / NS + 60));
	run_init(&parent_run, false);
	conformance_pass();
	run_torture(&parent_run, opt.seconds, opt.fork);
	alarm(0);
	print_status(&parent_run, now_ns(), true);
	finish(&parent_run);
	return total_violations(&parent_run) ? 1 : 0;
}
