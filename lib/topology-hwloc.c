/* SPDX-License-Identifier: MIT */
/*
 * Topology with hwloc: the processing units this process is bound to, the
 * cores they belong to, and how many PUs share a core (SMT).  If hwloc
 * cannot load the topology, fall back to the affinity mask alone.
 * Leaves errno as it was: hwloc sets it (ENOENT for the sysfs files this
 * machine lacks) even when the load succeeds.
 */
#include <errno.h>
#include <hwloc.h>

#include "platform.h"

void
pli_topology_get(struct pli_topology *t)
{
	hwloc_topology_t topo;
	hwloc_bitmap_t set;
	int saved_errno = errno;

	pli_topology_from_affinity(t);
	if (hwloc_topology_init(&topo) != 0)
		goto done;
	/* Only cores and PUs matter here, and the load happens in the first
	 * contended lock of the process: skip caches, NUMA details and I/O. */
	hwloc_topology_set_all_types_filter(topo, HWLOC_TYPE_FILTER_KEEP_NONE);
	hwloc_topology_set_type_filter(
	    topo, HWLOC_OBJ_CORE, HWLOC_TYPE_FILTER_KEEP_ALL);
	/* The x86 backend binds the calling thread to every PU in turn to
	 * run CPUID there: slow, and not ours to do inside a lock call.
	 * Linux's sysfs says what we need. */
	hwloc_topology_set_components(
	    topo, HWLOC_TOPOLOGY_COMPONENTS_FLAG_BLACKLIST, "x86");
	set = hwloc_bitmap_alloc();
	if (set == NULL || hwloc_topology_load(topo) != 0 ||
	    hwloc_get_cpubind(topo, set, HWLOC_CPUBIND_PROCESS) != 0)
		goto out;

	unsigned pus = 0, cores = 0, width = 1;
	hwloc_obj_t o = NULL;
	while ((o = hwloc_get_next_obj_by_type(topo, HWLOC_OBJ_PU, o)))
		if (hwloc_bitmap_isset(set, o->os_index))
			pus++;
	o = NULL;
	while ((o = hwloc_get_next_obj_by_type(topo, HWLOC_OBJ_CORE, o))) {
		if (!hwloc_bitmap_intersects(o->cpuset, set))
			continue;
		cores++;
		int w = hwloc_bitmap_weight(o->cpuset);
		if (w > (int)width)
			width = (unsigned)w;
	}
	if (pus > 0) {
		t->pus = pus;
		t->cores = cores ? cores : pus;
		t->pus_per_core = width;
		t->source = "hwloc";
	}
out:
	if (set)
		hwloc_bitmap_free(set);
	hwloc_topology_destroy(topo);
done:
	errno = saved_errno;
}
