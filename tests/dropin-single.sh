#!/bin/sh
# SPDX-License-Identifier: MIT
# tests/dropin-single (see its source) against glibc and with the drop-in
# preloaded ($DROPIN, set by make check).  TAP.
set -u
prog=tests/dropin-single${EXEEXT:-}
echo "1..2"
if out=$("$prog" 2>&1); then
	echo "ok 1 - glibc alone"
else
	echo "not ok 1 - glibc alone"
	printf '%s\n' "$out" | sed 's/^/# /'
fi
if [ -z "${DROPIN:-}" ] || [ ! -r "$DROPIN" ]; then
	echo "not ok 2 - no drop-in at DROPIN='${DROPIN:-}'"
	exit 0
fi
if out=$(LD_PRELOAD="$DROPIN${LD_PRELOAD:+ $LD_PRELOAD}" "$prog" 2>&1); then
	echo "ok 2 - with the drop-in preloaded"
else
	echo "not ok 2 - with the drop-in preloaded"
	printf '%s\n' "$out" | sed 's/^/# /'
fi
