#!/bin/sh
# SPDX-License-Identifier: MIT
# TAP test: unmodified Debian programs whose own work runs on pthread
# mutexes and condition variables, with their results checked.  On a 64
# MiB file made here (in each MiB, 768 KiB of text, 256 KiB random):
#
#   pigz -p 4     compress; pigz -t; gzip -dc and pigz -dc give the file
#   xz -T4 -1     compress (into several blocks); xz -t; xz -dc gives it
#   zstd -T4      compress (1 MiB jobs); zstd -t; zstd -dc gives it
#   pbzip2 -p4    compress; bzip2 -dc (if there) and pbzip2 -dc give it
#   sysbench      its mutex and threads workloads; their event counts
#
# Each of pigz, xz, zstd and pbzip2 reaches pthread_mutex_lock/unlock and
# pthread_cond_wait (xz through liblzma, zstd through libzstd, both with
# pthread_cond_timedwait or _signal; pigz with _broadcast; pbzip2 all
# three; sysbench's workloads are lock and unlock loops).  A program
# that is not installed is skipped, saying which
# package to install; the others still run.
#
# With DROPIN set to the path of libparkinglot-pthread.so, each run of
# those programs is with LD_PRELOAD="$DROPIN" under tools/parkstat (which
# sets PARKINGLOT_STATS=1), and its report must show parks > 0: the
# program's locks ran on the parking lot.  Without DROPIN they run on
# glibc and only their results count.  Each run's TAP line gives its
# time, to compare the two.
#
# Run from the top of the build directory by `make check`; PARKSTAT
# overrides the path of parkstat.  Every command is under timeout(1) where
# it exists; on a 2-core machine each takes under 6 s on glibc.
set -u
# A sanitizer build's drop-in needs the sanitizer's runtime first in the
# process, which Debian's programs do not have: there these runs belong to
# the plain build (make check without --enable-sanitizer).
case ${PL_SANITIZER:-no} in
no | "") ;;
*)
	echo "1..0 # SKIP the drop-in of a $PL_SANITIZER build cannot be" \
		"preloaded into uninstrumented programs; the plain build runs them"
	exit 0
	;;
esac
parkstat=${PARKSTAT:-tools/parkstat${EXEEXT:-}}
dropin=${DROPIN:-}
limit=60
if command -v timeout >/dev/null 2>&1; then
	limited() { timeout "$limit" "$@"; }
else
	limited() { "$@"; }
fi

tmp=$(mktemp -d "${TMPDIR:-/tmp}/dropin-programs.XXXXXX") || exit 1
trap 'rm -rf "$tmp"' EXIT
trap 'exit 1' INT TERM

n=0
ok() { n=$((n + 1)); echo "ok $n - $1"; }
not_ok() { n=$((n + 1)); echo "not ok $n - $1"; }
skip() { n=$((n + 1)); echo "ok $n # SKIP $1"; }
# check DESCRIPTION COMMAND...: ok if COMMAND succeeds.
check() {
	d=$1
	shift
	if "$@"; then ok "$d"; else not_ok "$d"; fi
}
# Show a file in the log, as TAP comments.
show() { test -s "$1" && sed 's/^/# /' "$1"; }
# A field of the "stats" object of a JSON report of parkstat.
stat_of() { sed -n '/^  "stats": {/,/^  }/p' "$1" |
	sed -n "s/^    \"$2\": \\([0-9]*\\),\\{0,1\\}\$/\\1/p"; }
now_ms() { t=$(date +%s%N 2>/dev/null) && expr "$t" : '[0-9]*$' \
	>/dev/null && echo $((t / 1000000)); }

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
	mode="with the drop-in"
else
	echo "# DROPIN is not set: the programs run on glibc alone"
	mode="on glibc"
fi

# prog DESCRIPTION OUTPUT COMMAND...: one run of a program under test,
# its stdout into the file OUTPUT, stdin /dev/null, stderr into the log;
# with the drop-in under parkstat.  One TAP line for its exit status
# (and its time), and with the drop-in one for parks > 0.
prog() {
	d=$1 output=$2
	shift 2
	start=$(now_ms)
	if test -n "$dropin"; then
		rm -f "$tmp/report.json"
		limited "$parkstat" -j -o "$tmp/report.json" -- env \
		    PARKINGLOT_STATS=1 \
		    LD_PRELOAD="$dropin${LD_PRELOAD:+ $LD_PRELOAD}" \
		    "$@" </dev/null >"$output" 2>"$tmp/err"
	else
		limited "$@" </dev/null >"$output" 2>"$tmp/err"
	fi
	status=$?
	end=$(now_ms)
	took=
	if test -n "$start" -a -n "$end"; then
		took=$(printf '%d.%02d s' $(((end - start) / 1000)) \
		    $(((end - start) % 1000 / 10)))
	fi
	show "$tmp/err"
	if test "$status" -eq 0; then
		ok "$d: exit status 0 $mode${took:+ ($took)}"
	else
		not_ok "$d: exit status $status $mode${took:+ ($took)}"
	fi
	if test -n "$dropin"; then
		parks=$(stat_of "$tmp/report.json" parks)
		if test "${parks:-0}" -gt 0; then
			ok "$d: the drop-in was in effect (parks $parks)"
		else
			show "$tmp/report.json"
			not_ok "$d: the drop-in was in effect (parks ${parks:-none})"
		fi
	fi
}
# same DESCRIPTION FILE: ok if FILE is the input; then removes it.
same() {
	if cmp "$tmp/data" "$2" >"$tmp/cmp" 2>&1; then
		ok "$1"
	else
		show "$tmp/cmp"
		not_ok "$1"
	fi
	rm -f "$2"
}

# The input: in each of its 64 MiB, 768 KiB of numbered lines (which
# compress well) and 256 KiB of random bytes (which do not).
i=0
while test $i -lt 64; do
	seq -f "%.0f: a line of the drop-in workload, part $i" \
	    $((i * 20000)) $((i * 20000 + 19999)) | head -c 786432
	head -c 262144 /dev/urandom
	i=$((i + 1))
done >"$tmp/data"
size=$(wc -c <"$tmp/data")
if test "$size" -ne 67108864; then
	echo "1..1"
	echo "not ok 1 - the input is $size bytes, not 64 MiB"
	exit 0
fi
echo "# input: $tmp/data, $size bytes"

ran=0
missing=

# installed PROGRAM PACKAGE: true if PROGRAM is there; else a SKIP line.
installed() {
	if command -v "$1" >/dev/null 2>&1; then
		ran=$((ran + 1))
		return 0
	fi
	skip "$1 is not installed: apt-get install $2"
	missing="$missing $1"
	return 1
}

if installed pigz pigz; then
	prog "pigz -p 4 -c" "$tmp/data.gz" pigz -p 4 -c "$tmp/data"
	prog "pigz -t" "$tmp/out" pigz -t "$tmp/data.gz"
	gzip -dc "$tmp/data.gz" >"$tmp/out" 2>"$tmp/err"
	show "$tmp/err"
	same "gzip -dc gives back the input" "$tmp/out"
	prog "pigz -p 4 -dc" "$tmp/out" pigz -p 4 -dc "$tmp/data.gz"
	same "pigz -dc gives back the input" "$tmp/out"
	rm -f "$tmp/data.gz"
fi

if installed xz xz-utils; then
	prog "xz -T4 -1 -c" "$tmp/data.xz" xz -T4 -1 -c "$tmp/data"
	blocks=$(xz --robot -l "$tmp/data.xz" 2>/dev/null |
		awk -F '\t' '$1 == "file" { print $3 }')
	check "xz -T4 made several blocks (${blocks:-none}), in threads" \
	    test "${blocks:-0}" -gt 1
	prog "xz -T4 -t" "$tmp/out" xz -T4 -t "$tmp/data.xz"
	prog "xz -T4 -dc" "$tmp/out" xz -T4 -dc "$tmp/data.xz"
	same "xz -dc gives back the input" "$tmp/out"
	rm -f "$tmp/data.xz"
fi

if installed zstd zstd; then
	prog "zstd -T4 -B1MiB -c" "$tmp/data.zst" \
	    zstd -q -T4 -B1MiB -c "$tmp/data"
	prog "zstd -t" "$tmp/out" zstd -q -t "$tmp/data.zst"
	prog "zstd -dc" "$tmp/out" zstd -q -dc "$tmp/data.zst"
	same "zstd -dc gives back the input" "$tmp/out"
	rm -f "$tmp/data.zst"
fi

if installed pbzip2 pbzip2; then
	prog "pbzip2 -p4 -c" "$tmp/data.bz2" pbzip2 -p4 -c "$tmp/data"
	if command -v bzip2 >/dev/null 2>&1; then
		bzip2 -dc "$tmp/data.bz2" >"$tmp/out" 2>"$tmp/err"
		show "$tmp/err"
		same "bzip2 -dc gives back the input" "$tmp/out"
	else
		skip "bzip2 is not installed (apt-get install bzip2): pbzip2's output not checked by bzip2"
	fi
	prog "pbzip2 -p4 -dc" "$tmp/out" pbzip2 -p4 -dc "$tmp/data.bz2"
	same "pbzip2 -dc gives back the input" "$tmp/out"
	rm -f "$tmp/data.bz2"
fi

# sysbench's mutex and threads workloads: 8 threads on one
# pthread_mutex_t, and 8 threads locking one of 4 mutexes, yielding
# and unlocking, 100 times an event; sysbench counts the events.
# events N FILE: sysbench reported N events in all.
events() {
	got=$(sed -n 's/^ *total number of events: *\([0-9]*\)$/\1/p' "$2")
	check "... sysbench counted $1 events (${got:-none})" \
	    test "${got:-0}" -eq "$1"
}
if installed sysbench sysbench; then
	prog "sysbench mutex, 8 threads, one mutex" "$tmp/out" \
	    sysbench mutex --threads=8 --mutex-num=1 --mutex-locks=200000 \
	    --mutex-loops=50 run
	events 8 "$tmp/out"
	prog "sysbench threads, 8 threads, 4 mutexes" "$tmp/out" \
	    sysbench threads --threads=8 --thread-locks=4 --thread-yields=100 \
	    --events=2000 --time=0 run
	events 2000 "$tmp/out"
fi

if test $ran -eq 0; then
	echo "# none of pigz, xz, zstd, pbzip2, sysbench is installed: every" \
	    "test skipped (apt-get install pigz xz-utils zstd pbzip2 sysbench)"
elif test -n "$missing"; then
	echo "# not installed, skipped:$missing"
fi
echo "1..$n"
exit 0
