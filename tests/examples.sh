#!/bin/sh
# SPDX-License-Identifier: MIT
# TAP test: the examples of tools/examples/ (primitives built on
# <parkinglot/core.h> alone) check themselves and exit 0 on success.
#
# Run by `make check` from the top of the BUILD directory, where the
# programs are (in a VPATH build such as distcheck's, $srcdir holds only
# the sources), so they are found relative to the current directory.  Each
# runs under `timeout 60` where timeout(1) exists: an example that hangs
# (a lost wakeup) fails instead of hanging make check.  Their output goes
# into the log as TAP comments.
set -u
limit=60
if command -v timeout >/dev/null 2>&1; then
	run_limited() { timeout "$limit" "$@"; }
else
	run_limited() { "$@"; }
fi

echo "1..3"
n=0
for name in semaphore event hashtable; do
	n=$((n + 1))
	prog=tools/examples/$name${EXEEXT:-}
	if test ! -x "$prog"; then
		echo "not ok $n - $name ($prog not built in $(pwd))"
		continue
	fi
	out=$(run_limited "./$prog" 2>&1)
	status=$?
	test -n "$out" && printf '%s\n' "$out" | sed 's/^/# /'
	if test "$status" -eq 0; then
		echo "ok $n - $name"
	elif test "$status" -eq 124; then
		echo "not ok $n - $name (exit status $status: timed out after" \
		    "$limit s)"
	else
		echo "not ok $n - $name (exit status $status)"
	fi
done
exit 0
