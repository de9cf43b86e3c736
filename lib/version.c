/* SPDX-License-Identifier: MIT */
/* pl_version: the version of the library that is running, which may be
 * newer than the headers a program was compiled with (PL_VERSION_STRING). */
#include <parkinglot/core.h>
#include <parkinglot/version.h>

const char *
pl_version(void)
{
	return PL_VERSION_STRING;
}
