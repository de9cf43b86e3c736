/* SPDX-License-Identifier: MIT */
/*
 * Prints the tuning in force, public and internal, as one line of
 * name=value pairs; tests/tuning.sh runs it under various environments.
 * Linked with the convenience library to read pli_tuning().
 */
#include <stdio.h>

#include <parkinglot/tuning.h>

#include "internal.h"

int
main(void)
{
	struct pl_tuning t;
	pl_tuning_get(&t);
	const struct pli_tuning *in = pli_tuning();
	printf("spin=%u yield=%u fair=%u poll_ns=%u pauses=%u pause_ns=%u "
	       "adapt=%u\n",
	    t.spin_limit, t.yield_limit, t.fair_interval_us, in->poll_ns,
	    in->pause_per_spin, in->pause_ns, in->adapt);
	return 0;
}
