#!/bin/sh
# SPDX-License-Identifier: MIT
# TAP test: the tuning's defaults from the topology, the PARKINGLOT_*
# overrides, and the one-line error for a malformed value (default kept).
# Run from the build directory by `make check`.
set -u
show=tests/tuning-show
tmp=$(mktemp -d) || exit 1
trap 'rm -rf "$tmp"' EXIT

echo "1..20"

# ok DESC COMMAND...: see tests/tap-ok.sh.
. "$(dirname "$0")/tap-ok.sh"

# field NAME: its value in the last output.
field() {
	sed -n "s/.* *\\<$1=\\([0-9]*\\).*/\\1/p" "$tmp/out"
}

# one_line_error NAME VALUE: stderr is exactly the warning about it.
one_line_error() {
	test "$(wc -l <"$tmp/err")" = 1 &&
		grep -q "^libparkinglot: ignoring $1=\"$2\": not a whole number from 0 to [0-9]* (keeping [0-9]*)\$" \
			"$tmp/err"
}

run() {
	env "$@" "$show" >"$tmp/out" 2>"$tmp/err"
}

ncpu=$(nproc)
run
if test "$ncpu" -gt 1; then
	ok "defaults with $ncpu PUs: spin 2, yield 20" \
		test "$(field spin)" = 2 -a "$(field yield)" = 20
else
	ok "defaults with 1 PU: no spinning" \
		test "$(field spin)" = 0 -a "$(field yield)" = 0
fi
ok "default fairness interval 1000 us" test "$(field fair)" = 1000
ok "default round 2500 ns of measured pauses" \
	test "$(field poll_ns)" = 2500 -a "$(field pause_ns)" -ge 1 -a \
	"$(field pauses)" -ge 1 -a \
	"$(($(field pauses) * $(field pause_ns)))" -le 2500
ok "default adaptive yield rounds: PARKINGLOT_ADAPT 4" \
	test "$(field adapt)" = 4
ok "defaults print nothing" test ! -s "$tmp/err"

# One PU in the affinity mask: the holder cannot run while we spin.
if command -v taskset >/dev/null 2>&1; then
	taskset -c 0 "$show" >"$tmp/out" 2>"$tmp/err"
	ok "one PU in the affinity mask: spin 0, yield 0" \
		test "$(field spin)" = 0 -a "$(field yield)" = 0
else
	ok "one PU: taskset missing # SKIP" true
fi

# The process's PUs, not those of the thread that happens to contend
# first: a program that pins each thread to a CPU has its first contended
# lock on a thread with one PU in its mask, while the holder runs on
# another.  (-t N: that thread on the Nth CPU of the mask; -m N: the main
# thread pinned to the Nth first.)
if test "$ncpu" -gt 1; then
	"$show" -t 0 >"$tmp/out" 2>"$tmp/err"
	ok "first contended lock on a thread pinned to one PU: spin 2, yield 20" \
		test "$(field spin)" = 2 -a "$(field yield)" = 20
	"$show" -m 0 -t 1 >"$tmp/out" 2>"$tmp/err"
	ok "main thread on one PU, first contended lock on another: spin 2" \
		test "$(field spin)" = 2 -a "$(field yield)" = 20
	"$show" -m 0 >"$tmp/out" 2>"$tmp/err"
	ok "main thread, and so the process's mask, on one PU: spin 0" \
		test "$(field spin)" = 0 -a "$(field yield)" = 0
else
	for d in "thread pinned" "main and thread pinned" "main pinned"; do
		ok "$d: needs 2 PUs # SKIP" true
	done
fi

run PARKINGLOT_SPIN=7 PARKINGLOT_YIELD=3 PARKINGLOT_FAIR_US=500 \
	PARKINGLOT_POLL_NS=0 PARKINGLOT_ADAPT=0
ok "overrides taken" test "$(field spin)" = 7 -a "$(field yield)" = 3 -a \
	"$(field fair)" = 500 -a "$(field poll_ns)" = 0 -a "$(field adapt)" = 0
ok "PARKINGLOT_POLL_NS=0: one pause a round" test "$(field pauses)" = 1
ok "overrides print nothing" test ! -s "$tmp/err"

run PARKINGLOT_POLL_NS=1000000
ok "PARKINGLOT_POLL_NS=1000000: 1 ms of pauses a round" \
	test "$(($(field pauses) * $(field pause_ns)))" -gt 500000

# Malformed: one line naming the variable, the value, the range and the
# default kept.
for v in "PARKINGLOT_SPIN=lots" "PARKINGLOT_YIELD=-1" \
	"PARKINGLOT_FAIR_US=10000001" "PARKINGLOT_POLL_NS=2.5" \
	"PARKINGLOT_ADAPT=201"; do
	name=${v%%=*}
	val=${v#*=}
	run "$v"
	ok "$v: reported on one line, default kept" one_line_error "$name" "$val"
done
run PARKINGLOT_SPIN=lots
ok "malformed PARKINGLOT_SPIN keeps the default spin" \
	test "$(field spin)" = "$(run; field spin)"
run PARKINGLOT_ADAPT=201
ok "PARKINGLOT_ADAPT=201 keeps the default 4" test "$(field adapt)" = 4

exit 0
