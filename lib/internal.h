/* SPDX-License-Identifier: MIT */
/*
 * Every internal interface at once, for the tests that link the
 * convenience library (tests/testutil.h and the suites).  The files of lib/
 * never include it: each includes the headers of what it uses.
 */
#ifndef PARKINGLOT_INTERNAL_H
#define PARKINGLOT_INTERNAL_H

#include "events.h"
#include "lot.h"
#include "platform.h"
#include "spin.h"
#include "stats.h"
#include "tuning.h"

#endif /* PARKINGLOT_INTERNAL_H */
