/* SPDX-License-Identifier: MIT */
/* Cache-line-aligned, zeroed internal allocations through jemalloc's
 * mallocx (built when configure found jemalloc).  Sizes are rounded to
 * whole cache lines so that no two records share one. */
#include <jemalloc/jemalloc.h>

#include "platform.h"

bool (*pli_alloc_fail_hook)(size_t size);

void *
pli_alloc_aligned(size_t size)
{
	if (pli_alloc_fail_hook && pli_alloc_fail_hook(size))
		return NULL;
	size = (size + PLI_CACHELINE - 1) & ~(size_t)(PLI_CACHELINE - 1);
	return mallocx(size, MALLOCX_ALIGN(PLI_CACHELINE) | MALLOCX_ZERO);
}

void
pli_free_aligned(void *p)
{
	if (p)
		dallocx(p, 0);
}
