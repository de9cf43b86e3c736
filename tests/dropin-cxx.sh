#!/bin/sh
# SPDX-License-Identifier: MIT
# TAP test: tests/dropin-cxx, the C++17 standard library's locks in a
# program built without libparkinglot, one run per section (std::mutex,
# std::recursive_mutex, std::timed_mutex, std::condition_variable,
# std::shared_mutex, std::call_once), each of which must pass every
# check.
#
# With DROPIN set to the path of libparkinglot-pthread.so, each section
# runs with LD_PRELOAD="$DROPIN" under tools/parkstat (which sets
# PARKINGLOT_STATS=1), and its report must show parks > 0: the locks of
# libstdc++ really ran on the parking lot; and an address of the pthread
# kind that the section's type is built on.  Without DROPIN, the sections
# run on glibc and only their own checks count.
#
# Run from the top of the build directory by `make check`, like
# tests/parkstat.sh.  DROPIN_CXX and PARKSTAT override the paths of the
# program and of parkstat.  Every run is under timeout(1) where it exists
# (the program bounds itself: a thread that hangs 10 s ends it).
set -u
prog=${DROPIN_CXX:-tests/dropin-cxx${EXEEXT:-}}
parkstat=${PARKSTAT:-tools/parkstat${EXEEXT:-}}
dropin=${DROPIN:-}
limit=120
if command -v timeout >/dev/null 2>&1; then
	run() { timeout "$limit" "$@"; }
else
	run() { "$@"; }
fi

tmp=$(mktemp -d "${TMPDIR:-/tmp}/dropin-cxx.XXXXXX") || exit 1
trap 'rm -rf "$tmp"' EXIT
trap 'exit 1' INT TERM

n=0
ok() { n=$((n + 1)); echo "ok $n - $1"; }
not_ok() { n=$((n + 1)); echo "not ok $n - $1"; }
# Show a file in the log, as TAP comments.
show() { test -s "$1" && sed 's/^/# /' "$1"; }
# A field of the "stats" object of a JSON report of parkstat.
stat_of() { sed -n '/^  "stats": {/,/^  }/p' "$1" |
	sed -n "s/^    \"$2\": \\([0-9]*\\),\\{0,1\\}\$/\\1/p"; }

# Whatever is missing is a failure, never a skip: make check builds them.
if test ! -x "$prog"; then
	echo "1..1"
	echo "not ok 1 - $prog not built in $(pwd)"
	exit 0
fi
if test -n "$dropin"; then
	for f in "$dropin" "$parkstat"; do
		if test ! -f "$f"; then
			echo "1..1"
			echo "not ok 1 - DROPIN is set, but $f does not exist" \
			    "(in $(pwd))"
			exit 0
		fi
	done
	echo "# the drop-in: LD_PRELOAD=$dropin, under $parkstat"
else
	echo "# DROPIN is not set: the sections run on glibc alone"
fi

sections=$("$prog" --list)
if test -z "$sections"; then
	echo "1..1"
	echo "not ok 1 - $prog --list printed no section"
	exit 0
fi

for s in $sections; do
	if test -n "$dropin"; then
		run "$parkstat" -j -o "$tmp/$s.json" -- env \
		    PARKINGLOT_STATS=1 \
		    LD_PRELOAD="$dropin${LD_PRELOAD:+ $LD_PRELOAD}" \
		    "$prog" "$s" >"$tmp/out" 2>"$tmp/err"
		status=$?
		how="with the drop-in"
	else
		run "$prog" "$s" >"$tmp/out" 2>"$tmp/err"
		status=$?
		how="on glibc"
	fi
	show "$tmp/out"
	show "$tmp/err"
	if test "$status" -eq 0; then
		ok "$s: every check passed $how"
	else
		not_ok "$s: exit status $status $how"
	fi
	if test -n "$dropin"; then
		parks=$(stat_of "$tmp/$s.json" parks)
		if test "${parks:-0}" -gt 0; then
			ok "$s: the drop-in was in effect (parks $parks)"
		else
			show "$tmp/$s.json"
			not_ok "$s: the drop-in was in effect (parks ${parks:-none})"
		fi
		# The kind the report gives the section's lock.
		case $s in
		recursive_mutex) kind="pthread_mutex recursive" ;;
		condition_variable) kind="pthread_cond" ;;
		shared_mutex) kind="pthread_rwlock" ;;
		call_once) kind="pthread_once" ;;
		*) kind="pthread_mutex" ;;
		esac
		if grep -q "^    {\"rank\": .*\"kind\": \"$kind\"" \
		    "$tmp/$s.json"; then
			ok "$s: an address of kind $kind"
		else
			show "$tmp/$s.json"
			not_ok "$s: an address of kind $kind"
		fi
		# A lock's address counts the times it was taken.
		case $kind in
		pthread_mutex* | pthread_rwlock)
			taken=$(grep "^    {\"rank\": .*\"kind\": \"$kind\"" \
			    "$tmp/$s.json" |
				sed -n 's/.*"taken": \([0-9]*\).*/\1/p' |
				sort -n | tail -n 1)
			if test "${taken:-0}" -gt 0; then
				ok "$s: its address was taken $taken times"
			else
				show "$tmp/$s.json"
				not_ok "$s: its address was taken ${taken:-no} times"
			fi
			;;
		esac
	fi
done
echo "1..$n"
exit 0
