/* SPDX-License-Identifier: MIT */
/*
 * Zeroed, cache-line-aligned internal allocations, a few times in the
 * life of a process: the bucket tables and the blocks of per-thread
 * records.
 *
 * A page or more comes straight from mmap with MAP_POPULATE: the kernel
 * hands the pages over zeroed and already mapped, in one system call.
 * Through malloc, the same memory was faulted in one page at a time by
 * the memset that zeroes it, and in a thread's first allocation the
 * allocator also sets up that thread's arena: a block of records took
 * 57 to 307 us that way here, 8 to 43 us this way, and the 32 KiB table
 * of 512 buckets 82 to 150 us against 12 to 27 (doc/BENCHMARKS.md,
 * "Where the growth's time went").  Anything smaller than a page (a
 * block of records where pages are 16 or 64 KiB) stays with
 * posix_memalign.
 */
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "platform.h"

bool (*pli_alloc_fail_hook)(size_t size);

static size_t
rounded(size_t size)
{
	return (size + PLI_CACHELINE - 1) & ~(size_t)(PLI_CACHELINE - 1);
}

static bool
paged(size_t size)
{
	return size >= (size_t)sysconf(_SC_PAGESIZE);
}

void *
pli_alloc_aligned(size_t size)
{
	void *p;
	if (pli_alloc_fail_hook && pli_alloc_fail_hook(size))
		return NULL;
	size = rounded(size);
	if (paged(size)) {
		p = mmap(NULL, size, PROT_READ | PROT_WRITE,
		    MAP_PRIVATE | MAP_ANONYMOUS | MAP_POPULATE, -1, 0);
		return p == MAP_FAILED ? NULL : p;
	}
	if (posix_memalign(&p, PLI_CACHELINE, size) != 0)
		return NULL;
	return memset(p, 0, size);
}

void
pli_free_aligned(void *p, size_t size)
{
	if (p == NULL)
		return;
	size = rounded(size);
	if (paged(size))
		munmap(p, size);
	else
		free(p);
}
