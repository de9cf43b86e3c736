#!/bin/sh
# SPDX-License-Identifier: MIT
# The drop-in's conformance suite (tests/test_dropin, built against glibc
# alone) with libparkinglot-pthread preloaded: the same tests, the same
# expected results, and the suite's first test checks that the drop-in is
# what serves pthread_mutex_lock.  $DROPIN is the build tree's library
# (set by make check).
set -u
prog=tests/test_dropin${EXEEXT:-}
if [ -z "${DROPIN:-}" ] || [ ! -r "$DROPIN" ]; then
	echo "1..0 # SKIP no drop-in built (DROPIN='${DROPIN:-}')"
	exit 0
fi
LD_PRELOAD="$DROPIN${LD_PRELOAD:+ $LD_PRELOAD}" DROPIN_EXPECT=1 \
	exec "$prog" --tap=/dev/stdout
