/* SPDX-License-Identifier: MIT */
/*
 * The first contended lock of a process waits for little but the lock:
 * the tuning's refinement (lib/tuning.c) runs in it, and used to take
 * about 8 ms (hwloc's topology) in front of it.  And it starts no thread.
 *
 * A child process, a fresh image each time (exec'd, so that the tuning is
 * untouched: a fork would inherit the parent's), has its main thread hold a
 * pl_mutex_t while a second thread locks it; the holder unlocks HOLD_US after
 * the locker said it was about to call pl_mutex_lock, and the locker reports
 * how long the call took beyond that.  The best of RUNS children must stay
 * under LIMIT_US.  Prints TAP; with --us, prints the figures of each child
 * instead (doc/BENCHMARKS.md).
 */
#include <inttypes.h>
#include <stdbool.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <parkinglot/mutex.h>
#include <parkinglot/tuning.h>

#define HOLD_US 200
#define RUNS 5
#define LIMIT_US 500

static pl_mutex_t m;
static int about_to_lock;
static uint64_t t_call, t_got;

static uint64_t
now_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

static void *
locker(void *arg)
{
	(void)arg;
	t_call = now_ns();
	__atomic_store_n(&about_to_lock, 1, __ATOMIC_RELEASE);
	pl_mutex_lock(&m);
	t_got = now_ns();
	pl_mutex_unlock(&m);
	return NULL;
}

/* One contended lock: hold m while the locker comes, HOLD_US more, then
 * unlock; returns when the locker is done, with the time of the unlock. */
static uint64_t
contend(void)
{
	pthread_t t;
	pl_mutex_lock(&m);
	if (pthread_create(&t, NULL, locker, NULL) != 0)
		_exit(2);
	while (!__atomic_load_n(&about_to_lock, __ATOMIC_ACQUIRE))
		;
	uint64_t until = now_ns() + HOLD_US * 1000u;
	while (now_ns() < until)
		;
	uint64_t t_unlock = now_ns();
	pl_mutex_unlock(&m);
	pthread_join(t, NULL);
	return t_unlock;
}

/* One fresh process's figure: the lock call's time beyond the hold, in
 * microseconds, written to fd. */
static void
child(int fd)
{
	uint64_t t_unlock = contend();
	int64_t extra = (int64_t)(t_got - t_unlock);
	char buf[64];
	int n = snprintf(buf, sizeof buf, "%" PRId64 " %" PRIu64 "\n",
	    extra / 1000, (t_got - t_call) / 1000);
	if (write(fd, buf, (size_t)n) != n)
		_exit(3);
	_exit(0);
}

/* Shared anonymous mappings of this process (the kernel shows them as
 * "/dev/zero (deleted)", mode "rw-s"). */
static int
shared_anon(void)
{
	FILE *f = fopen("/proc/self/maps", "r");
	char line[512];
	int n = 0;
	while (f && fgets(line, sizeof line, f))
		if (strstr(line, " rw-s ") && strstr(line, "/dev/zero"))
			n++;
	if (f)
		fclose(f);
	return n;
}

static int
threads(void)
{
	FILE *f = fopen("/proc/self/status", "r");
	char line[256];
	int n = -1;
	while (f && fgets(line, sizeof line, f))
		if (sscanf(line, "Threads: %d", &n) == 1)
			break;
	if (f)
		fclose(f);
	return n;
}

static void *
nothing(void *arg)
{
	return arg;
}

/* The costs of a process that does not contend, then does; TAP lines 2
 * and 3 on stdout.  Runs in a fresh image (--quiet-child). */
static void
quiet_child(void)
{
	pl_mutex_t q = PL_MUTEX_INITIALIZER;
	for (int i = 0; i < 1000; i++) {
		pl_mutex_lock(&q);
		pl_mutex_unlock(&q);
	}
	int maps0 = shared_anon(), threads0 = threads();
	printf("%s 2 - uncontended: %d shared mappings, %d threads\n",
	    maps0 == 0 && threads0 == 1 ? "ok" : "not ok", maps0, threads0);
	/* What a thread that was created and joined leaves: nothing with
	 * glibc, a thread of its own with ThreadSanitizer's runtime. */
	pthread_t t;
	if (pthread_create(&t, NULL, nothing, NULL) == 0)
		pthread_join(t, NULL);
	int base = threads();
	(void)contend(); /* the locker is joined */
	int threads1 = threads();
	struct pl_tuning tun;
	pl_tuning_get(&tun); /* the refinement is over */
	int maps1 = shared_anon();
	printf("%s 3 - after one contended lock: %d shared mapping(s), "
	       "%d thread(s), %d before it\n",
	    maps1 == 1 && threads1 == base && threads() == base ? "ok"
	                                                        : "not ok",
	    maps1, threads1, base);
	fflush(stdout);
	_exit(0);
}

int
main(int argc, char **argv)
{
	if (argc > 1 && strcmp(argv[1], "--child") == 0)
		child(1);
	if (argc > 1 && strcmp(argv[1], "--quiet-child") == 0)
		quiet_child();
	bool us = argc > 1 && strcmp(argv[1], "--us") == 0;
	long best = -1;
	if (!us)
		printf("1..3\n");
	for (int i = 0; i < RUNS; i++) {
		int p[2];
		if (pipe(p) != 0)
			return 1;
		pid_t pid = fork();
		if (pid == 0) {
			close(p[0]);
			dup2(p[1], 1);
			execl("/proc/self/exe", "first-lock", "--child",
			    (char *)NULL);
			_exit(4);
		}
		close(p[1]);
		char buf[64] = { 0 };
		ssize_t n = read(p[0], buf, sizeof buf - 1);
		close(p[0]);
		int st;
		waitpid(pid, &st, 0);
		long extra, total;
		if (n <= 0 || sscanf(buf, "%ld %ld", &extra, &total) != 2) {
			printf("not ok 1 - child %d gave no figure\n", i);
			return 0;
		}
		if (us)
			printf("after unlock %ld us, whole call %ld us "
			       "(held %d us)\n",
			    extra, total, HOLD_US);
		else
			printf("# child %d: got the lock %ld us after the "
			       "unlock, the call took %ld us\n",
			    i, extra, total);
		if (best < 0 || total - HOLD_US < best)
			best = total - HOLD_US;
	}
#ifdef PL_TSAN
	/* ThreadSanitizer makes a thread's creation cost milliseconds: the
	 * figure would be its, not the library's.  The plain and ASan builds
	 * check it. */
	if (!us)
		printf(
		    "ok 1 - first contended lock: best %ld us beyond the hold "
		    "# SKIP timing under ThreadSanitizer\n",
		    best);
#else
	if (!us)
		printf("%s 1 - first contended lock of a fresh process: "
		       "best %ld us beyond the hold (limit %d us)\n",
		    best < LIMIT_US ? "ok" : "not ok", best, LIMIT_US);
#endif
	if (!us) {
		fflush(stdout);
		pid_t pid = fork();
		if (pid == 0) {
			execl("/proc/self/exe", "first-lock", "--quiet-child",
			    (char *)NULL);
			_exit(4);
		}
		int st;
		waitpid(pid, &st, 0);
		if (!WIFEXITED(st) || WEXITSTATUS(st) != 0)
			printf("not ok 3 - the quiet child failed\n");
	}
	return 0;
}
