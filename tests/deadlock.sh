#!/bin/sh
# SPDX-License-Identifier: MIT
# TAP test of the deadlock detector from outside: PARKINGLOT_DEADLOCK's
# values (report, off, abort, a bad one), the graph's bound, the drop-in
# path (an unmodified pthread program under LD_PRELOAD), parkstat -p on a
# real deadlock of a checked build (it must name the cycle within 2 s, in
# text and JSON), and parkstat --deadlock -- CMD.  The programs are
# tests/dlcheck and tests/abba-checked (-DPL_CHECKED) and tests/dlpthread
# (plain pthreads).
#
# Run by `make check` from the top of the build directory, with DROPIN
# naming the built drop-in.  No fixed sleep synchronizes anything: each
# wait polls a condition with a bound, and every command is bounded by
# timeout(1) where it exists.
set -u
PARKSTAT=tools/parkstat${EXEEXT:-}
DLCHECK=tests/dlcheck${EXEEXT:-}
ABBA=tests/abba-checked${EXEEXT:-}
DLPTHREAD=tests/dlpthread${EXEEXT:-}
DROPIN=${DROPIN:-$(pwd)/lib/.libs/libparkinglot-pthread.so}
limit=60
if command -v timeout >/dev/null 2>&1; then
	run() { timeout "$limit" "$@"; }
else
	run() { "$@"; }
fi

tmp=$(mktemp -d "${TMPDIR:-/tmp}/deadlock.XXXXXX") || exit 1
hung=
cleanup() {
	test -n "$hung" && kill -KILL "$hung" 2>/dev/null
	test -n "$hung" && rm -f "/dev/shm/parkinglot.$hung"
	rm -rf "$tmp"
}
trap cleanup EXIT
trap 'exit 1' INT TERM

n=0
ok() { n=$((n + 1)); echo "ok $n - $1"; }
not_ok() { n=$((n + 1)); echo "not ok $n - $1"; }
check() {
	d=$1
	shift
	if "$@"; then ok "$d"; else not_ok "$d"; fi
}
show() { test -f "$1" && sed 's/^/# /' "$1"; }
count() { grep -c "$1" "$2"; }
now_ms() { echo $(($(date +%s%N) / 1000000)); }

for prog in "$PARKSTAT" "$DLCHECK" "$DLPTHREAD"; do
	if test ! -x "$prog"; then
		echo "1..1"
		echo "not ok 1 - $prog not built in $(pwd)"
		exit 0
	fi
done
unset PARKINGLOT_DEADLOCK PARKINGLOT_DEADLOCK_LOG PARKINGLOT_STATS

# ---------------------------------------------------------------------
# The modes, in a checked build.

PARKINGLOT_DEADLOCK=report run "$DLCHECK" abba 2>"$tmp/r.err"
status=$?
show "$tmp/r.err"
check "report: the program runs to its end (status $status)" test $status -eq 0
check "... with exactly one report" \
	test "$(count '^libparkinglot: lock-order inversion' "$tmp/r.err")" -eq 1
check "... naming both locks" \
	sh -c "grep -q dl_lock_a '$tmp/r.err' && grep -q dl_lock_b '$tmp/r.err'"
check "... and both sites, with their lines" \
	sh -c "grep -q 'take_a_b+0x[0-9a-f]* (.*dlcheck.c:[0-9]*)' '$tmp/r.err' &&
		grep -q 'take_b_a+0x[0-9a-f]* (.*dlcheck.c:[0-9]*)' '$tmp/r.err'"
# Each of the four acquisitions at its line of dlcheck.c, none at a line
# of the header it was inlined from.
check "... every acquisition at its line of the program" \
	sh -c "test \$(grep -c '#0 take_[ab]_[ab]+0x[0-9a-f]* (.*dlcheck.c:[0-9]*)\$' '$tmp/r.err') -eq 4"

for v in off ''; do
	PARKINGLOT_DEADLOCK=$v run "$DLCHECK" abba 2>"$tmp/o.err"
	status=$?
	check "PARKINGLOT_DEADLOCK='$v': no report, status 0 (got $status)" \
		sh -c "test $status -eq 0 && ! test -s '$tmp/o.err'"
done
run "$DLCHECK" abba 2>"$tmp/o.err"
check "no PARKINGLOT_DEADLOCK: no report" test ! -s "$tmp/o.err"

PARKINGLOT_DEADLOCK=bogus run "$DLCHECK" abba 2>"$tmp/b.err"
status=$?
show "$tmp/b.err"
check "a bad value: status 0, the detector off (got $status)" test $status -eq 0
check "... and one line naming the accepted values" sh -c "
	test \$(wc -l <'$tmp/b.err') -eq 1 &&
	grep -qx 'libparkinglot: PARKINGLOT_DEADLOCK=\"bogus\": unknown value (use off, report or abort); the deadlock detector stays off' '$tmp/b.err'"

PARKINGLOT_DEADLOCK=abort run "$DLCHECK" abba 2>"$tmp/a.err"
status=$?
show "$tmp/a.err"
check "abort: killed by SIGABRT (status $status)" test $status -eq 134
check "... after the report" \
	sh -c "grep -q '^libparkinglot: lock-order inversion' '$tmp/a.err' &&
		grep -q 'aborting' '$tmp/a.err'"

# ---------------------------------------------------------------------
# The bound: more distinct locks than the graph may hold.

PARKINGLOT_DEADLOCK=report PARKINGLOT_DEADLOCK_LOCKS=64 \
	run "$DLCHECK" many 1000 >"$tmp/m.out" 2>"$tmp/m.err"
status=$?
show "$tmp/m.err"
show "$tmp/m.out"
check "1000 locks, a bound of 64: status 0 (got $status)" test $status -eq 0
check "... every update kept" grep -q '^dlcheck: 79920 updates under 1000 locks$' "$tmp/m.out"
check "... one warning, once" \
	test "$(count 'more than 64 distinct locks' "$tmp/m.err")" -eq 1
check "... and nothing else" test "$(wc -l <"$tmp/m.err")" -eq 1
PARKINGLOT_DEADLOCK=report PARKINGLOT_DEADLOCK_LOCKS=x \
	run "$DLCHECK" abba 2>"$tmp/x.err"
check "a bad bound: a warning, and the default" sh -c "
	grep -q 'ignoring PARKINGLOT_DEADLOCK_LOCKS=\"x\"' '$tmp/x.err' &&
	test \$(grep -c '^libparkinglot: lock-order inversion' '$tmp/x.err') -eq 1"

# ---------------------------------------------------------------------
# The drop-in: an unmodified pthread program.

if test -r "$DROPIN"; then
	LD_PRELOAD=$DROPIN PARKINGLOT_DEADLOCK=report run "$DLPTHREAD" \
		2>"$tmp/d.err"
	status=$?
	show "$tmp/d.err"
	check "drop-in: status 0 (got $status)" test $status -eq 0
	check "... one report" \
		test "$(count '^libparkinglot: lock-order inversion' "$tmp/d.err")" -eq 1
	check "... naming lock_one and lock_two" \
		sh -c "grep -q 'lock_one (0x' '$tmp/d.err' && grep -q 'lock_two (0x' '$tmp/d.err'"
	check "... and the program's functions" \
		sh -c "grep -q one_then_two '$tmp/d.err' && grep -q two_then_one '$tmp/d.err'"
	LD_PRELOAD=$DROPIN PARKINGLOT_DEADLOCK=report run "$DLPTHREAD" --clean \
		2>"$tmp/dc.err"
	check "drop-in, one order only: no report" test ! -s "$tmp/dc.err"
else
	for i in 1 2 3 4 5; do ok "# SKIP $DROPIN not built"; done
fi

# ---------------------------------------------------------------------
# parkstat -p on a real deadlock of a checked build.

PARKINGLOT_STATS=1 PARKINGLOT_DEADLOCK=report "$ABBA" \
	>"$tmp/h.out" 2>"$tmp/h.err" &
hung=$!
i=0
while ! grep -q '^abba: ' "$tmp/h.out" && kill -0 "$hung" 2>/dev/null &&
	test $i -lt 200; do
	i=$((i + 1))
	sleep 0.05
done
set -- $(sed -n 's/^abba: \([0-9]*\) \([0-9]*\)$/\1 \2/p' "$tmp/h.out")
t1=${1:-none} t2=${2:-none}
check "abba-checked deadlocks, threads $t1 and $t2" test "$t1" != none -a "$t2" != none
start=$(now_ms)
found=no
while test $(($(now_ms) - start)) -lt 2000; do
	run "$PARKSTAT" -p "$hung" >"$tmp/p.txt" 2>"$tmp/p.err"
	if grep -q '^deadlock: 2 threads' "$tmp/p.txt"; then
		found=yes
		break
	fi
done
took=$(($(now_ms) - start))
show "$tmp/p.err"
sed -n '/^deadlock:/,/^$/p' "$tmp/p.txt" | sed 's/^/# /'
check "parkstat -p names the cycle within 2 s (took $took ms)" test $found = yes
check "... abba-1 waits for abba_lock_b, held by abba-2" grep -q \
	"^  thread $t1 (abba-1) waits for abba_lock_b (0x[0-9a-f]*), held by thread $t2, for [0-9.]* [mun]*s\$" \
	"$tmp/p.txt"
check "... abba-2 waits for abba_lock_a, held by abba-1" grep -q \
	"^  thread $t2 (abba-2) waits for abba_lock_a (0x[0-9a-f]*), held by thread $t1, for [0-9.]* [mun]*s\$" \
	"$tmp/p.txt"
check "... each holds its first lock, taken in taker" sh -c "
	grep -q '^    holds abba_lock_a (0x[0-9a-f]*), taken at taker+0x[0-9a-f]* (.*abba.c:[0-9]*)\$' '$tmp/p.txt' &&
	grep -q '^    holds abba_lock_b (0x[0-9a-f]*), taken at taker+0x[0-9a-f]* (.*abba.c:[0-9]*)\$' '$tmp/p.txt'"
run "$PARKSTAT" -p "$hung" --json >"$tmp/p.json" 2>>"$tmp/p.err"
status=$?
grep '"deadlocks"\|"tid": ' "$tmp/p.json" | sed 's/^/# /'
check "parkstat -p --json: status 0 (got $status)" test $status -eq 0
check "... one deadlock of both threads" sh -c "
	grep -q '^    {\"threads\": \[$t1, $t2\]}\$' '$tmp/p.json' ||
	grep -q '^    {\"threads\": \[$t2, $t1\]}\$' '$tmp/p.json'"
check "... each thread held by the other, holding its first lock" sh -c "
	grep '\"tid\": $t1, ' '$tmp/p.json' | grep -q '\"held_by\": $t2, \"deadlock\": 1, \"nheld\": 1, \"holds\": \[{\"address\": \"0x[0-9a-f]*\", \"symbol\": \"abba_lock_a\"' &&
	grep '\"tid\": $t2, ' '$tmp/p.json' | grep -q '\"held_by\": $t1, \"deadlock\": 1, \"nheld\": 1, \"holds\": \[{\"address\": \"0x[0-9a-f]*\", \"symbol\": \"abba_lock_b\"'"
if command -v python3 >/dev/null 2>&1; then
	check "... valid JSON" python3 -c '
import json, sys
d = json.load(open(sys.argv[1]))
assert len(d["deadlocks"]) == 1 and len(d["deadlocks"][0]["threads"]) == 2' "$tmp/p.json"
else
	ok "# SKIP python3 not found: JSON not validated"
fi
check "the detector reported the inversion before the hang" \
	grep -q '^libparkinglot: lock-order inversion' "$tmp/h.err"
kill -KILL "$hung"
wait "$hung" 2>/dev/null
rm -f "/dev/shm/parkinglot.$hung"
hung=

# ---------------------------------------------------------------------
# parkstat --deadlock -- CMD

if test -r "$DROPIN"; then
	PARKSTAT_DROPIN=$DROPIN run "$PARKSTAT" --deadlock -- "$DLPTHREAD" \
		>/dev/null 2>"$tmp/s.txt"
	status=$?
	show "$tmp/s.txt"
	check "parkstat --deadlock, an inversion: status 3 (got $status)" test $status -eq 3
	check "... the report, and the count" sh -c "
		grep -q '^libparkinglot: lock-order inversion' '$tmp/s.txt' &&
		grep -q '^parkstat: 1 lock-order inversion found' '$tmp/s.txt'"
	PARKSTAT_DROPIN=$DROPIN run "$PARKSTAT" --deadlock --json -o "$tmp/s.json" \
		-- "$DLPTHREAD" >/dev/null 2>&1
	check "... in JSON: \"inversions\": 1" grep -q '^  "inversions": 1,$' "$tmp/s.json"
	PARKSTAT_DROPIN=$DROPIN run "$PARKSTAT" --deadlock -- "$DLPTHREAD" --clean \
		>/dev/null 2>"$tmp/c.txt"
	status=$?
	check "parkstat --deadlock, one order only: status 0 (got $status)" test $status -eq 0
	check "... none found" grep -q '^parkstat: 0 lock-order inversions found' "$tmp/c.txt"
else
	for i in 1 2 3 4 5; do ok "# SKIP $DROPIN not built"; done
fi
run "$PARKSTAT" --deadlock -p 1 >/dev/null 2>"$tmp/e.err"
check "--deadlock with -p: a usage error (status 2)" test $? -eq 2

echo "1..$n"
exit 0
