#!/bin/sh
# SPDX-License-Identifier: MIT
# TAP test: tools/torture (see tools/torture.c).
#
#   1. 20 s over every primitive (with churn and a fork in the middle) must
#      end with "torture: SUCCESS ops=N violations=0" and exit 0;
#   2. 3 s of the mutex with --busted (a lock that is not atomic) must end
#      with "torture: FAILURE ops=N violations=M", M > 0, and exit 1: the
#      proof that the checks catch a broken lock.
#
# Run from the top of the build directory, like tests/examples.sh.  Each
# run is under `timeout` where it exists (the tester bounds itself, but a
# hang must never hang make check).  The output goes into the log as TAP
# comments; TORTURE_SECONDS overrides the 20 s.
set -u
prog=tools/torture${EXEEXT:-}
secs=${TORTURE_SECONDS:-20}
if command -v timeout >/dev/null 2>&1; then
	run_limited() { limit=$1; shift; timeout "$limit" "$@"; }
else
	run_limited() { shift; "$@"; }
fi

echo "1..2"
if test ! -x "$prog"; then
	echo "not ok 1 - torture ($prog not built in $(pwd))"
	echo "not ok 2 - torture --busted ($prog not built in $(pwd))"
	exit 0
fi

tmp=${TMPDIR:-/tmp}/torture-test.$$
trap 'rm -f "$tmp.out" "$tmp.err"' EXIT INT TERM

# run LIMIT ARGS...: run the tester; sets $status and $last (the last
# line of its stdout), and copies both outputs into the log.
run() {
	run_limited "$@" >"$tmp.out" 2>"$tmp.err"
	status=$?
	sed 's/^/# /' "$tmp.out"
	sed 's/^/# stderr: /' "$tmp.err" | head -n 40
	last=$(tail -n 1 "$tmp.out")
}

run $((secs + 60)) "./$prog" --seconds "$secs"
case $last in
"torture: SUCCESS ops="*" violations=0")
	if test "$status" -eq 0; then
		echo "ok 1 - torture --seconds $secs: ${last#torture: }"
	else
		echo "not ok 1 - torture --seconds $secs: exit status $status"
	fi
	;;
*)
	echo "not ok 1 - torture --seconds $secs: exit status $status," \
	    "last line '$last'"
	;;
esac

# The races of the busted lock are deliberate: under ThreadSanitizer, keep
# its reports (and its exit status 66) out of this run.
TSAN_OPTIONS="${TSAN_OPTIONS:+$TSAN_OPTIONS }report_bugs=0"
export TSAN_OPTIONS
run 60 "./$prog" --seconds 3 --busted --primitive mutex
v=${last##*violations=}
case $last in
"torture: FAILURE ops="*" violations="*)
	if test "$status" -eq 1 && test "$v" -gt 0 2>/dev/null; then
		echo "ok 2 - torture --busted is caught: ${last#torture: }"
	else
		echo "not ok 2 - torture --busted: exit status $status," \
		    "last line '$last'"
	fi
	;;
*)
	echo "not ok 2 - torture --busted was not caught: exit status" \
	    "$status, last line '$last'"
	;;
esac
exit 0
