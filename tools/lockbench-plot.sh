#!/bin/sh
# SPDX-License-Identifier: MIT
#
# lockbench-plot.sh CSV PNG: draw lockbench's throughput against threads
# for W2 (contended mutex) and W6 (reader-writer), one line per lock
# (median, with min..max of the runs as error bars), side by side in PNG.
#
# CSV is what `tools/lockbench -o CSV` writes (`lockbench --plot PNG` runs
# this script itself).  Needs gnuplot; without it, says so in one line and
# exits 0, so that `make bench` still succeeds.
set -eu

if [ $# -ne 2 ]; then
	echo "usage: $0 CSV PNG" >&2
	exit 2
fi
csv=$1
png=$2
me=lockbench-plot.sh

if ! command -v gnuplot >/dev/null 2>&1; then
	echo "$me: gnuplot not found; no chart drawn (figures in $csv)" >&2
	exit 0
fi
if [ ! -r "$csv" ]; then
	echo "$me: cannot read $csv" >&2
	exit 1
fi

tmp=$(mktemp -d "${TMPDIR:-/tmp}/lockbench-plot.XXXXXX")
trap 'rm -rf "$tmp"' EXIT
trap 'exit 1' HUP INT TERM

# One data file per workload and lock (threads, median, min, max in
# Mops/s), and per workload the list of locks in the order of the CSV.
awk -F, -v dir="$tmp" '
	/^#/ || $1 == "workload" { next }
	($1 == "W2" || $1 == "W6") && $4 == "throughput" {
		f = dir "/" $1 "-" $3 ".dat"
		print $2, $6 / 1e6, $7 / 1e6, $8 / 1e6 >> f
		if (!(f in seen)) {
			seen[f] = 1
			print $3 >> (dir "/" $1 ".locks")
		}
	}' "$csv"

# The gnuplot command for one panel, or an empty panel without data.
panel() { # workload title
	printf "set title '%s'\n" "$2"
	if [ ! -s "$tmp/$1.locks" ]; then
		printf "set label 1 'no %s figures in the CSV' at graph 0.5,0.5 center\n" "$1"
		printf "plot [1:2] [0:1] NaN notitle\nunset label 1\n"
		return
	fi
	sep="plot"
	while IFS= read -r lock; do
		f="$tmp/$1-$lock.dat"
		sort -n -o "$f" "$f"
		printf "%s '%s' using 1:2:3:4 with yerrorlines title '%s'" \
			"$sep" "$f" "$lock"
		sep=", \\
    "
	done <"$tmp/$1.locks"
	printf "\n"
}

if [ ! -s "$tmp/W2.locks" ] && [ ! -s "$tmp/W6.locks" ]; then
	echo "$me: no W2 or W6 throughput in $csv; no chart drawn" >&2
	exit 0
fi

# pngcairo draws nicer lines; the plain png terminal is the fallback.
term=png
if gnuplot -e 'set terminal pngcairo' >/dev/null 2>&1; then
	term=pngcairo
fi
machine=$(sed -n 's/^# machine: \([^;]*\).*/\1/p' "$csv" | head -n 1)

{
	printf "set terminal %s size 1280,520 noenhanced\n" "$term"
	printf "set output '%s'\n" "$png"
	printf 'set multiplot layout 1,2 title "lockbench: throughput against threads (median; bars: min..max of the runs)\\n%s"\n' "$machine"
	printf "set logscale x 2\nset xlabel 'threads'\nset ylabel 'Mops/s'\n"
	printf "set yrange [0:*]\nset grid\nset key inside top left opaque box\n"
	printf "set offsets graph 0.05, graph 0.05, graph 0.45, 0\n"
	panel W2 "W2: contended mutex, short critical section"
	panel W6 "W6: reader-writer, equal readers and writers"
	printf "unset multiplot\n"
} >"$tmp/plot.gp"

gnuplot "$tmp/plot.gp"
echo "$me: chart in $png" >&2
