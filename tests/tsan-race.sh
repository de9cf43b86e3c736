#!/bin/sh
# SPDX-License-Identifier: MIT
# TAP test, built and run only under --enable-sanitizer=thread: TSan
# reports no race on data protected by each pl lock, and does report the
# race on the same data without a lock (tests/tsan-race.c).
set -u
prog=tests/tsan-race
modes="mutex rmutex rwlock cond bitlock"
n=0
echo "1..6"
for mode in $modes; do
	n=$((n + 1))
	out=$(TSAN_OPTIONS="exitcode=66 halt_on_error=0" "$prog" "$mode" 2>&1)
	st=$?
	if [ "$st" -eq 0 ] && ! printf '%s\n' "$out" | grep -q 'ThreadSanitizer'; then
		echo "ok $n - no report for data under a pl $mode"
	else
		echo "not ok $n - $mode: exit $st"
		printf '%s\n' "$out" | head -40 | sed 's/^/# /'
	fi
done
n=$((n + 1))
out=$(TSAN_OPTIONS="exitcode=66" "$prog" none 2>&1)
st=$?
if [ "$st" -eq 66 ] && printf '%s\n' "$out" | grep -q 'WARNING: ThreadSanitizer: data race'; then
	echo "ok $n - the same data without a lock is reported as a race"
else
	echo "not ok $n - no race reported without a lock (exit $st)"
	printf '%s\n' "$out" | head -20 | sed 's/^/# /'
fi
