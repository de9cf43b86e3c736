/* SPDX-License-Identifier: MIT */
/* libparkinglot: everything.  Each part also has its own header. */
#ifndef PARKINGLOT_H
#define PARKINGLOT_H

#include <parkinglot/version.h>
#include <parkinglot/core.h>
#include <parkinglot/mutex.h>
#include <parkinglot/rmutex.h>
#include <parkinglot/cond.h>
#include <parkinglot/rwlock.h>
#include <parkinglot/once.h>
#include <parkinglot/bitlock.h>
#include <parkinglot/deadlock.h>
#include <parkinglot/stats.h>
#include <parkinglot/tuning.h>

#endif /* PARKINGLOT_H */
