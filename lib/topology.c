/* SPDX-License-Identifier: MIT */
/*
 * The topology the spin tuning needs (tuning.c): how many processing
 * units this process may run on, and how many of them share a core.
 *
 * The PUs are those of the process's affinity mask, its main thread's,
 * with the calling thread's (sched_getaffinity; sysconf if that fails).
 * The SMT width is read from Linux's sysfs, as hwloc's Linux backend
 * reads it: the thread siblings of the CPU the caller runs on, counted
 * within the mask (one core stands for all: a machine mixes SMT widths
 * only across core types, and the width only lengthens the spin's pause).
 * That is two system calls and one small file, about 20 us here, where
 * loading hwloc's topology took 1 ms: little enough to run inside the
 * first contended lock of the process, on the thread that contends, with
 * no thread or library of its own.  Nothing here takes a lock or
 * allocates (no stdio), and errno is left as it was.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <sched.h>
#include <unistd.h>

#include "platform.h"

/* "/sys/devices/system/cpu/cpu<N>/topology/thread_siblings_list" */
static void
siblings_path(char *buf, size_t len, unsigned cpu)
{
	static const char head[] = "/sys/devices/system/cpu/cpu";
	static const char tail[] = "/topology/thread_siblings_list";
	char digits[12];
	size_t n = 0, at = 0;
	do
		digits[n++] = (char)('0' + cpu % 10);
	while ((cpu /= 10) != 0);
	if (sizeof head + n + sizeof tail > len) {
		buf[0] = '\0';
		return;
	}
	for (size_t i = 0; head[i]; i++)
		buf[at++] = head[i];
	while (n)
		buf[at++] = digits[--n];
	for (size_t i = 0; i < sizeof tail; i++)
		buf[at++] = tail[i]; /* with its NUL */
}

/* The CPUs of a cpulist ("0-3,8,10-11") that are in set. */
static unsigned
count_in(const char *s, const cpu_set_t *set)
{
	unsigned n = 0;
	while (*s >= '0' && *s <= '9') {
		unsigned long lo = 0, hi;
		while (*s >= '0' && *s <= '9')
			lo = lo * 10 + (unsigned long)(*s++ - '0');
		hi = lo;
		if (*s == '-') {
			hi = 0;
			for (s++; *s >= '0' && *s <= '9'; s++)
				hi = hi * 10 + (unsigned long)(*s - '0');
		}
		for (unsigned long c = lo; c <= hi && c < CPU_SETSIZE; c++)
			n += CPU_ISSET(c, set) != 0;
		if (*s != ',')
			break;
		s++;
	}
	return n;
}

/* PUs of set sharing the core of cpu, 0 if sysfs does not say. */
static unsigned
smt_width(unsigned cpu, const cpu_set_t *set)
{
	char path[96], list[256];
	siblings_path(path, sizeof path, cpu);
	int fd = path[0] ? open(path, O_RDONLY | O_CLOEXEC) : -1;
	if (fd < 0)
		return 0;
	ssize_t got;
	do
		got = read(fd, list, sizeof list - 1);
	while (got < 0 && errno == EINTR);
	close(fd);
	if (got <= 0)
		return 0;
	list[got] = '\0';
	return count_in(list, set);
}

void
pli_topology_get(struct pli_topology *t)
{
	int saved_errno = errno;
	cpu_set_t set, leader;
	long n = 0;
	bool mask = sched_getaffinity(0, sizeof set, &set) == 0;
	/* The process's mask is its main thread's (the thread group
	 * leader's, what taskset -p shows); the caller's may be narrower: a
	 * program that pins each thread to a CPU has its first contended
	 * lock on one of them, while the holder runs on another.  So both,
	 * the caller's too in case the main thread is the narrower. */
	if (mask && sched_getaffinity(getpid(), sizeof leader, &leader) == 0)
		CPU_OR(&set, &set, &leader);
	if (mask)
		n = CPU_COUNT(&set);
	if (n <= 0)
		n = sysconf(_SC_NPROCESSORS_ONLN);
	t->pus = n > 0 ? (unsigned)n : 1;
	t->pus_per_core = 1;
	t->source = "affinity";
	int cpu = mask ? sched_getcpu() : -1;
	unsigned w = cpu >= 0 ? smt_width((unsigned)cpu, &set) : 0;
	if (w > 0) {
		t->pus_per_core = w;
		t->source = "sysfs";
	}
	t->cores = (t->pus + t->pus_per_core - 1) / t->pus_per_core;
	errno = saved_errno;
}
