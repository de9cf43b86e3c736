/* SPDX-License-Identifier: MIT */
/* Topology without hwloc: the affinity mask alone; cores and SMT siblings
 * are unknown. */
#include "platform.h"

void
pli_topology_get(struct pli_topology *t)
{
	pli_topology_from_affinity(t);
}
