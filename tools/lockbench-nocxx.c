/* SPDX-License-Identifier: MIT */
/*
 * What lockbench links instead of tools/lockbench-cxx.cc when configure
 * found no C++17 compiler (Makefile.am, HAVE_CXX17): cxx_built is false,
 * so that the runner leaves the C++ workloads (W2cxx, W5acxx, W6cxx, the
 * F_CXX entries of work[]) out and refuses them by name, and the thread
 * functions and runs that work[] names are empty and never called.
 */
#define _GNU_SOURCE /* CPU_SETSIZE, in tools/lockbench.h */
#include <stddef.h>

#include "lockbench.h"

const bool cxx_built = false;

void *(*const w2cxx_fn[2])(void *) = { NULL, NULL };
void *(*const w5acxx_fn[2])(void *) = { NULL, NULL };
void *(*const w6cxx_fn[2])(void *) = { NULL, NULL };

void
w2cxx_run(struct run *r)
{
	(void)r;
}

void
w5acxx_run(struct run *r)
{
	(void)r;
}

void
w6cxx_run(struct run *r)
{
	(void)r;
}
