/* SPDX-License-Identifier: MIT */
/*
 * The portable part of the topology: the processing units of the affinity
 * mask (sched_getaffinity, else sysconf).  topology-hwloc.c refines it
 * with cores and SMT siblings; topology-sysconf.c, built without hwloc,
 * takes it as it is.  Leaves errno as it was (sysconf may set it).
 */
#define _GNU_SOURCE
#include <errno.h>
#include <sched.h>
#include <unistd.h>

#include "platform.h"

void
pli_topology_from_affinity(struct pli_topology *t)
{
	cpu_set_t set;
	long n = 0;
	int saved_errno = errno;
	if (sched_getaffinity(0, sizeof set, &set) == 0)
		n = CPU_COUNT(&set);
	if (n <= 0)
		n = sysconf(_SC_NPROCESSORS_ONLN);
	t->pus = n > 0 ? (unsigned)n : 1;
	t->cores = t->pus; /* unknown: every PU a core of its own */
	t->pus_per_core = 1;
	t->source = "sysconf";
	errno = saved_errno;
}
