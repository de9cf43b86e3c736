/* SPDX-License-Identifier: MIT */
/*
 * Topology with hwloc: the processing units this process is bound to, the
 * cores they belong to, and how many PUs share a core (SMT).  If hwloc
 * cannot load the topology, fall back to the affinity mask alone.
 */
#include <hwloc.h>

#include "internal.h"

void
pli_topology_get(struct pli_topology *t)
{
	hwloc_topology_t topo;
	hwloc_bitmap_t set;

	pli_topology_from_affinity(t);
	if (hwloc_topology_init(&topo) != 0)
		return;
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
}
