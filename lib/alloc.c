/* SPDX-License-Identifier: MIT */
/* Cache-line-aligned, zeroed internal allocations with posix_memalign:
 * the bucket tables and the blocks of per-thread records, a few times in
 * the life of a process. */
#include <stdlib.h>
#include <string.h>

#include "platform.h"

bool (*pli_alloc_fail_hook)(size_t size);

void *
pli_alloc_aligned(size_t size)
{
	void *p;
	if (pli_alloc_fail_hook && pli_alloc_fail_hook(size))
		return NULL;
	size = (size + PLI_CACHELINE - 1) & ~(size_t)(PLI_CACHELINE - 1);
	if (posix_memalign(&p, PLI_CACHELINE, size) != 0)
		return NULL;
	return memset(p, 0, size);
}

void
pli_free_aligned(void *p)
{
	free(p);
}
