/* SPDX-License-Identifier: MIT */
/*
 * Helpers of tests/test_dropin.c, the conformance suite of the pthread
 * drop-in (libparkinglot-pthread.so).  The suite runs against plain glibc
 * as the reference, with the drop-in preloaded and with the drop-in
 * linked in, so everything here is plain libc: no parkinglot header.
 *
 * None of these helpers takes a pthread lock: the tests coordinate their
 * threads through atomics that they poll (with sched_yield between polls
 * and a deadline), so that the harness itself does not depend on the
 * locks under test.
 */
#ifndef DROPIN_UTIL_H
#define DROPIN_UTIL_H

#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <sched.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

/* How long any helper below waits for the state it polls for. */
#define DROPIN_WAIT_MS 5000L

#define DROPIN_NS_PER_SEC 1000000000L

/* ------------------------------------------------------------------ */
/* Which object provides pthread_mutex_lock                            */

/* The file name of the object that pthread_mutex_lock resolves to in the
 * global scope, or "?" when that cannot be told. */
static inline const char *
dropin_lock_provider(void)
{
	Dl_info info;
	void *sym = dlsym(RTLD_DEFAULT, "pthread_mutex_lock");

	if (sym == NULL || dladdr(sym, &info) == 0 || info.dli_fname == NULL)
		return "?";
	return info.dli_fname;
}

/* Whether the drop-in is in effect: pthread_mutex_lock resolves to it
 * (preloaded, or linked ahead of libc).  A sanitizer's runtime that
 * comes first (AddressSanitizer linked into the program) defines
 * pthread_mutex_lock itself and calls the next definition, which may be
 * the drop-in's: then the object tells.  glibc's lock of a normal mutex
 * records its owner's thread id in __owner; the drop-in's never writes
 * there. */
static inline bool
dropin_active(void)
{
	const char *p = dropin_lock_provider();
	if (strstr(p, "libparkinglot-pthread") != NULL)
		return true;
	if (strstr(p, "libasan") == NULL && strstr(p, "libtsan") == NULL)
		return false;
	pthread_mutex_t m = PTHREAD_MUTEX_INITIALIZER;
	pthread_mutex_lock(&m);
	bool owner_kept = m.__data.__owner != 0;
	pthread_mutex_unlock(&m);
	return !owner_kept;
}

/* ------------------------------------------------------------------ */
/* Time                                                                */

static inline struct timespec
dropin_now(clockid_t clk)
{
	struct timespec ts;

	clock_gettime(clk, &ts);
	return ts;
}

static inline struct timespec
dropin_ts_add_ms(struct timespec ts, long ms)
{
	ts.tv_sec += ms / 1000;
	ts.tv_nsec += (ms % 1000) * 1000000L;
	if (ts.tv_nsec >= DROPIN_NS_PER_SEC) {
		ts.tv_sec++;
		ts.tv_nsec -= DROPIN_NS_PER_SEC;
	} else if (ts.tv_nsec < 0) {
		ts.tv_sec--;
		ts.tv_nsec += DROPIN_NS_PER_SEC;
	}
	return ts;
}

/* The absolute time ms milliseconds from now on clock clk (ms may be
 * negative: a deadline in the past). */
static inline struct timespec
dropin_deadline(clockid_t clk, long ms)
{
	return dropin_ts_add_ms(dropin_now(clk), ms);
}

/* b - a, in nanoseconds. */
static inline long long
dropin_ts_diff_ns(struct timespec a, struct timespec b)
{
	return (long long)(b.tv_sec - a.tv_sec) * DROPIN_NS_PER_SEC +
	    (b.tv_nsec - a.tv_nsec);
}

/* Whether a is at or after b. */
static inline bool
dropin_ts_ge(struct timespec a, struct timespec b)
{
	return dropin_ts_diff_ns(b, a) >= 0;
}

/* Milliseconds elapsed on clk since start. */
static inline double
dropin_ms_since(clockid_t clk, struct timespec start)
{
	return dropin_ts_diff_ns(start, dropin_now(clk)) / 1e6;
}

static inline bool
dropin_reached(clockid_t clk, struct timespec deadline)
{
	return dropin_ts_ge(dropin_now(clk), deadline);
}

/* ------------------------------------------------------------------ */
/* Threads                                                             */

/* One pause of a polling loop: sched_yield for the first polls, then
 * 50 us sleeps, so that a long wait does not keep a core busy. */
static inline void
dropin_poll_pause(unsigned *polls)
{
	static const struct timespec nap = { 0, 50000L };

	if ((*polls)++ < 2000)
		sched_yield();
	else
		nanosleep(&nap, NULL);
}

/* The calling thread's kernel id, to store where dropin_wait_blocked()
 * can find it. */
static inline void
dropin_record_tid(pid_t *slot)
{
	__atomic_store_n(slot, gettid(), __ATOMIC_RELEASE);
}

/* The state letter of thread tid of this process (R, S, D, T, Z, ...), or
 * 0 when /proc cannot tell (no such thread). */
static inline char
dropin_task_state(pid_t tid)
{
	char path[64], buf[512];
	ssize_t n;
	int fd;

	snprintf(path, sizeof path, "/proc/self/task/%d/stat", (int)tid);
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return 0;
	n = read(fd, buf, sizeof buf - 1);
	close(fd);
	if (n <= 0)
		return 0;
	buf[n] = '\0';
	/* "tid (comm) S ...": comm may hold spaces and parentheses, so the
	 * state follows the last ')'. */
	char *p = strrchr(buf, ')');
	if (p == NULL || p[1] != ' ')
		return 0;
	return p[2];
}

/*
 * Waits (at most DROPIN_WAIT_MS) until the thread whose id is stored in
 * *tidp (0 until the thread stores it) sleeps in the kernel: its state is
 * 'S' on two reads in a row.  The threads store their id just before the
 * call they are to block in, so this tells that they blocked in it.
 * Between reads: sched_yield (then short sleeps, see dropin_poll_pause).
 * False on timeout.
 */
static inline bool
dropin_wait_blocked(const pid_t *tidp)
{
	struct timespec dl = dropin_deadline(CLOCK_MONOTONIC, DROPIN_WAIT_MS);
	unsigned polls = 0;
	int in_a_row = 0;

	for (;;) {
		pid_t tid = __atomic_load_n(tidp, __ATOMIC_ACQUIRE);
		if (tid != 0 && dropin_task_state(tid) == 'S') {
			if (++in_a_row >= 2)
				return true;
		} else {
			in_a_row = 0;
		}
		if (dropin_reached(CLOCK_MONOTONIC, dl))
			return false;
		dropin_poll_pause(&polls);
	}
}

/* Waits at most ms milliseconds until *p >= want.  False on timeout. */
static inline bool
dropin_await_ge_ms(const int *p, int want, long ms)
{
	struct timespec dl = dropin_deadline(CLOCK_MONOTONIC, ms);
	unsigned polls = 0;

	while (__atomic_load_n(p, __ATOMIC_ACQUIRE) < want) {
		if (dropin_reached(CLOCK_MONOTONIC, dl))
			return false;
		dropin_poll_pause(&polls);
	}
	return true;
}

static inline bool
dropin_await_ge(const int *p, int want)
{
	return dropin_await_ge_ms(p, want, DROPIN_WAIT_MS);
}

static inline int
dropin_load(const int *p)
{
	return __atomic_load_n(p, __ATOMIC_ACQUIRE);
}

static inline void
dropin_store(int *p, int v)
{
	__atomic_store_n(p, v, __ATOMIC_RELEASE);
}

static inline int
dropin_inc(int *p)
{
	return __atomic_add_fetch(p, 1, __ATOMIC_ACQ_REL);
}

/* ------------------------------------------------------------------ */
/* Child processes                                                     */

/*
 * Waits at most DROPIN_WAIT_MS for child pid to end and stores its status.
 * On timeout kills it (SIGKILL), reaps it and returns false.
 */
static inline bool
dropin_waitpid(pid_t pid, int *status)
{
	struct timespec dl = dropin_deadline(CLOCK_MONOTONIC, DROPIN_WAIT_MS);
	const struct timespec pause = { 0, 1000000L };

	for (;;) {
		pid_t r = waitpid(pid, status, WNOHANG);
		if (r == pid)
			return true;
		if (r < 0 && errno != EINTR)
			return false;
		if (dropin_reached(CLOCK_MONOTONIC, dl)) {
			kill(pid, SIGKILL);
			while (waitpid(pid, status, 0) < 0 && errno == EINTR)
				;
			return false;
		}
		/* Polling the child's exit, not synchronising with it. */
		nanosleep(&pause, NULL);
	}
}

#endif /* DROPIN_UTIL_H */
