/* SPDX-License-Identifier: MIT */
/*
 * The tuning of the contended paths in force (tuning.c): struct pl_tuning
 * and the spin round it is made of.  Read with relaxed loads, field by
 * field, by every slow path; see tuning.c for where the values come from.
 */
#ifndef PARKINGLOT_TUNING_INTERNAL_H
#define PARKINGLOT_TUNING_INTERNAL_H

#include <stdint.h>

#include <parkinglot/tuning.h>

struct pli_tuning {
	struct pl_tuning pub;
	unsigned poll_ns;        /* wait of a spin round (PARKINGLOT_POLL_NS) */
	unsigned pause_per_spin; /* pause instructions making up that wait */
	unsigned pause_ns;       /* measured cost of one */
	unsigned adapt; /* yielders without a gain before skipping (spin.c) */
};

/* The tuning in force: static defaults until refined (tuning.c). */
extern struct pli_tuning pli_tuning_v;

static inline const struct pli_tuning *
pli_tuning(void)
{
	return &pli_tuning_v;
}

/* The refinement: PLI_TUNING_NONE until the first slow path kicks it. */
#define PLI_TUNING_NONE 0u
extern uint32_t pli_tuning_state;
void pli_tuning_start(void);

/* Called by each slow path before it spins or parks, with no lock held:
 * the first applies the environment and starts the refinement, which
 * nobody waits for.  Then a load and a predicted branch. */
static inline void
pli_tuning_kick(void)
{
	if (__builtin_expect(__atomic_load_n(&pli_tuning_state,
	                         __ATOMIC_RELAXED) == PLI_TUNING_NONE,
	        0))
		pli_tuning_start();
}

/* In a fork child: a refinement not yet done is left to pl_tuning_get/set
 * (the child starts no thread). */
void pli_tuning_forked(void);

#endif /* PARKINGLOT_TUNING_INTERNAL_H */
