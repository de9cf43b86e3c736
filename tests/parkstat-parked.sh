#!/bin/sh
# SPDX-License-Identifier: MIT
# TAP test of parkstat's list of parked threads against a real deadlock:
# tests/abba, two threads ("abba-1", "abba-2") that take the global
# pl_mutex_t abba_lock_a and abba_lock_b in opposite orders and hang.
# parkstat -p PID, in JSON and in text, must list both threads by tid and
# name, each parked on the lock the other holds (named by its symbol),
# with its kind and a time parked above 0; then the process is killed.
# parkstat -- abba --exit (the command exits while its threads are still
# parked) lists them at the end of its report.
#
# Run by `make check` from the top of the build directory.  No fixed
# sleep synchronizes anything: each wait polls a condition, 10 s at most,
# and every command is bounded by timeout(1) where it exists (abba also
# ends itself after 120 s).
set -u
PARKSTAT=tools/parkstat${EXEEXT:-}
ABBA=tests/abba${EXEEXT:-}
limit=60
if command -v timeout >/dev/null 2>&1; then
	run() { timeout "$limit" "$@"; }
else
	run() { "$@"; }
fi

tmp=$(mktemp -d "${TMPDIR:-/tmp}/parkstat-parked.XXXXXX") || exit 1
hung=
cleanup() {
	test -n "$hung" && kill -KILL "$hung" 2>/dev/null
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
# The "parked" line of thread $2 in the JSON report $1.
parked_of() { sed -n '/^  "parked": \[/,/^  \],/p' "$1" |
	grep "{\"tid\": $2, " | head -n 1; }
# The field $2 (a number) of such a line $1.
num_of() { echo "$1" | sed -n "s/.*\"$2\": \\([0-9]*\\).*/\\1/p"; }

for prog in "$PARKSTAT" "$ABBA"; do
	if test ! -x "$prog"; then
		echo "1..1"
		echo "not ok 1 - $prog not built in $(pwd)"
		exit 0
	fi
done

# ---------------------------------------------------------------------
# parkstat -p PID on a hung process.

PARKINGLOT_STATS=1 "$ABBA" >"$tmp/abba.out" 2>"$tmp/abba.err" &
hung=$!
# Its line comes once its own export lists both threads parked.
i=0
while ! grep -q '^abba: ' "$tmp/abba.out" && kill -0 "$hung" 2>/dev/null &&
	test $i -lt 200; do
	i=$((i + 1))
	sleep 0.05
done
show "$tmp/abba.err"
set -- $(sed -n 's/^abba: \([0-9]*\) \([0-9]*\)$/\1 \2/p' "$tmp/abba.out")
t1=${1:-none} t2=${2:-none}
check "abba deadlocks, threads $t1 and $t2" test "$t1" != none -a "$t2" != none

# Poll (at most 10 s) until the report lists both threads.
i=0
while :; do
	run "$PARKSTAT" -p "$hung" --json >"$tmp/p.json" 2>"$tmp/p.err"
	status=$?
	a=$(parked_of "$tmp/p.json" "$t1")
	b=$(parked_of "$tmp/p.json" "$t2")
	test "$status" -ne 0 -o \( -n "$a" -a -n "$b" \) && break
	i=$((i + 1))
	test $i -gt 100 && break
	sleep 0.1
done
show "$tmp/p.err"
sed -n '/^  "threads_listed"/,/^  \],/p' "$tmp/p.json" | sed 's/^/# /'
check "parkstat -p PID --json: status 0 (got $status)" test "$status" -eq 0
case $a in
*'"name": "abba-1", '*'"symbol": "abba_lock_b", '*'"kind": "pl_mutex", '*)
	ok "abba-1 ($t1) is parked on abba_lock_b, a pl_mutex" ;;
*) not_ok "abba-1 ($t1) is parked on abba_lock_b, a pl_mutex" ;;
esac
case $b in
*'"name": "abba-2", '*'"symbol": "abba_lock_a", '*'"kind": "pl_mutex", '*)
	ok "abba-2 ($t2) is parked on abba_lock_a, a pl_mutex" ;;
*) not_ok "abba-2 ($t2) is parked on abba_lock_a, a pl_mutex" ;;
esac
case $a in
*'"object": "'*'/abba"'*) ok "... in the object abba" ;;
*) not_ok "... in the object abba" ;;
esac
wa=$(num_of "$a" wait_ns)
wb=$(num_of "$b" wait_ns)
check "both have been parked for some time (${wa:-?} ns, ${wb:-?} ns)" \
	test "${wa:-0}" -gt 0 -a "${wb:-0}" -gt 0
check "... and the main thread, not parked, is not listed" \
	test "$(sed -n '/^  "parked": \[/,/^  \],/p' "$tmp/p.json" |
		grep -c '"tid": ')" -eq 2
if command -v python3 >/dev/null 2>&1; then
	check "the report is valid JSON, longest wait first" python3 -c '
import json, sys
d = json.load(open(sys.argv[1]))
w = [t["wait_ns"] for t in d["parked"]]
assert w == sorted(w, reverse=True), w
assert d["threads_listed"] >= 2 and d["threads_unlisted"] == 0' "$tmp/p.json"
else
	ok "# SKIP python3 not found: JSON not validated"
fi

# Wait times grow while the process hangs: a later report waits longer.
run "$PARKSTAT" -p "$hung" --json >"$tmp/p2.json" 2>/dev/null
w2=$(num_of "$(parked_of "$tmp/p2.json" "$t1")" wait_ns)
check "a later report shows a longer wait (${wa:-?} then ${w2:-?} ns)" \
	test "${w2:-0}" -gt "${wa:-0}"

run "$PARKSTAT" -p "$hung" >"$tmp/p.txt" 2>"$tmp/p.err"
status=$?
show "$tmp/p.txt"
check "parkstat -p PID: text, status 0 (got $status)" test "$status" -eq 0
check "... with the section of parked threads" \
	grep -q '^threads parked now in abba, longest first (2 of ' "$tmp/p.txt"
check "... abba-1 on abba_lock_b" grep -q \
	"^  $t1 *abba-1 *[0-9.]* [mun]*s *0x[0-9a-f]* *abba_lock_b *pl_mutex\$" \
	"$tmp/p.txt"
check "... abba-2 on abba_lock_a" grep -q \
	"^  $t2 *abba-2 *[0-9.]* [mun]*s *0x[0-9a-f]* *abba_lock_a *pl_mutex\$" \
	"$tmp/p.txt"

# Killed, it leaves its object behind.
kill -KILL "$hung"
wait "$hung" 2>/dev/null
rm -f "/dev/shm/parkinglot.$hung"
hung=

# ---------------------------------------------------------------------
# parkstat -- abba --exit: the command ends with both threads parked.

run "$PARKSTAT" --no-preload --json -o "$tmp/run.json" -- "$ABBA" --exit \
	>"$tmp/run.out" 2>"$tmp/run.err"
status=$?
show "$tmp/run.err"
set -- $(sed -n 's/^abba: \([0-9]*\) \([0-9]*\)$/\1 \2/p' "$tmp/run.out")
t1=${1:-none} t2=${2:-none}
check "parkstat -- abba --exit: status 0 (got $status)" test "$status" -eq 0
a=$(parked_of "$tmp/run.json" "$t1")
b=$(parked_of "$tmp/run.json" "$t2")
echo "# $a"
echo "# $b"
case $a in
*'"name": null, '*'"symbol": "abba_lock_b", '*) ok "its report lists $t1 on abba_lock_b" ;;
*) not_ok "its report lists $t1 on abba_lock_b" ;;
esac
case $b in
*'"name": null, '*'"symbol": "abba_lock_a", '*) ok "... and $t2 on abba_lock_a" ;;
*) not_ok "... and $t2 on abba_lock_a" ;;
esac

run "$PARKSTAT" --no-preload -- "$ABBA" --exit >/dev/null 2>"$tmp/run.txt"
show "$tmp/run.txt"
check "the text report has them under \"when it ended\"" \
	grep -q '^threads parked when it ended in abba, longest first (2 of ' \
	"$tmp/run.txt"

echo "1..$n"
exit 0
