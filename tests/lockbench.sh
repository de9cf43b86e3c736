#!/bin/sh
# SPDX-License-Identifier: MIT
# TAP test: tools/lockbench's plumbing, on short runs of W1 and W5b, of
# the C++ workloads and of W2 (the full comparison is `make bench`,
# minutes long):
#
#   1. -n prints the header and the expected duration, runs nothing;
#   2. an unknown workload is an error: exit 2, one line naming it;
#   3. a short run exits 0, prints the targets, and writes the CSV header
#      and the rows of both locks;
#   4. W5b's counts are those of 64 waiters that all slept: at least 64
#      sleeps per broadcast for either lock, and no more switches than
#      sleeps plus preemptions (ctx >= sleeps);
#   5. -w cxx runs W2cxx, W5acxx and W6cxx and nothing else, their checks
#      pass (a failed one exits 1), and the CSV has the throughput of
#      pl:: and std:: with the ratio on the pl:: row (a SKIP where
#      lockbench was built without them: no C++17 compiler);
#   6. -w W2 is W2 alone, not W2cxx too (as -w W5 is W5a and W5b);
#   7. -w W8 runs W8 and W8x16 at 64, 256 and 1024 threads, their checks
#      pass (every lock's counter sums its threads' operations), and the
#      CSV has, for both locks at 1024 threads, the throughput, a longest
#      wait above zero and the starved threads, with the target on the
#      pl row (its result depends on the machine, so it is not asserted);
#   8. in that run's summary, a workload's first missed target is followed
#      by a "why:" line, and no "why:" line follows anything else;
#   9. -w W9 runs each run of W2 in a child process, the fixed policy's
#      with PARKINGLOT_ADAPT=0 in place of the caller's value (a malformed
#      one is reported by the parent and by the adaptive rows' children
#      only), run 1 of both before run 2 of either, and the CSV has both
#      rows with the ratio on the adaptive one;
#  10. a bad --one-run (W9's child) is an error: exit 2, one line;
#  11. with the drop-in preloaded from outside (as tools/parkstat does),
#      the pthread rows are labelled dropin_* and the header says so;
#  12. W8's starved threads are those without an unlock before the stop:
#      in test 7's run, LOCKBENCH_W8_LATE makes thread 0 of every cell
#      take its first lock after the stop, so every cell, of both locks,
#      has at least one (a thread that got the lock only in the drain
#      once counted as fed, and at 64 threads none starve otherwise).
#  13. W4's reason for a missed lock rate is the bound when the run's
#      figures put the goal (1.7x glibc's rate) above twice pl's rate
#      with one lock thread alone, with those figures, and the cache
#      line's otherwise.
#  14. W6's reason for a missed target names, from the run's shares,
#      the cells where glibc's rwlock let its writers do under a quarter
#      of the operations, with those shares and pl's; and says "not
#      attributed" where there are none.
#
# Run from the top of the build directory, like tests/torture.sh, under
# `timeout` where it exists.
set -u
prog=tools/lockbench${EXEEXT:-}
tmp=$(mktemp -d) || exit 1
trap 'rm -rf "$tmp"' EXIT
if command -v timeout >/dev/null 2>&1; then
	run() { timeout 120 "$prog" "$@" >"$tmp/out" 2>"$tmp/err"; }
else
	run() { "$prog" "$@" >"$tmp/out" 2>"$tmp/err"; }
fi

echo "1..14"
if test ! -x "$prog"; then
	for i in 1 2 3 4 5 6 7 8 9 10 11 12 13 14; do
		echo "not ok $i - lockbench ($prog not built in $(pwd))"
	done
	exit 0
fi

# ok DESC COMMAND...: see tests/tap-ok.sh.
. "$(dirname "$0")/tap-ok.sh"

# field WORKLOAD LOCK METRIC COLUMN: one figure of the CSV (columns:
# workload,threads,lock,metric,unit,median,min,max,...).
field() {
	awk -F, -v w="$1" -v l="$2" -v m="$3" -v c="$4" \
		'$1 == w && $3 == l && $4 == m { print $c; exit }' "$tmp/lb.csv"
}

run -n -w W1,W5b
rc=$?
dry_ok() {
	test "$rc" = 0 && grep -q "expected duration" "$tmp/out" &&
		! grep -q "^Targets" "$tmp/out"
}
ok "-n prints the expected duration and runs nothing" dry_ok

run -w W1,W10
rc=$?
bad_ok() {
	test "$rc" = 2 -a "$(wc -l <"$tmp/err")" = 1 -a ! -s "$tmp/out" &&
		grep -q "W10" "$tmp/err"
}
ok "an unknown workload: exit 2 and one line naming it" bad_ok

run -w W1,W5b -l pl,pthread -d 0.05 -r 1 -o "$tmp/lb.csv"
rc=$?
rows_ok() {
	test "$rc" = 0 &&
		grep -q "^Targets (pl against glibc in this run):" "$tmp/out" &&
		sed -n 2p "$tmp/lb.csv" | grep -qx \
			"workload,threads,lock,metric,unit,median,min,max,ratio,target,result" &&
		test -n "$(field W1 pl_mutex ns_per_pair 6)" &&
		test -n "$(field W1 pthread_mutex ns_per_pair 6)" &&
		for l in pl_cond+pl_mutex pthread_cond+mutex; do
			for m in bcast_time bcast_ctxsw bcast_sleeps; do
				test -n "$(field W5b "$l" "$m" 6)" || return 1
			done
		done
}
ok "a short run: exit 0, the targets, the CSV rows of both locks" rows_ok

counts_ok() {
	for l in pl_cond+pl_mutex pthread_cond+mutex; do
		smin=$(field W5b "$l" bcast_sleeps 7)
		sw=$(field W5b "$l" bcast_ctxsw 6)
		sl=$(field W5b "$l" bcast_sleeps 6)
		test -n "$smin" -a -n "$sw" -a -n "$sl" || return 1
		awk -v smin="$smin" -v sw="$sw" -v sl="$sl" \
			'BEGIN { exit !(smin >= 64 && sw >= sl) }' || return 1
	done
}
ok "W5b: every waiter slept, and switches >= sleeps" counts_ok

run -n -w cxx
if test $? = 2 && grep -q "not built" "$tmp/err"; then
	n=$((n + 1))
	echo "ok $n # SKIP lockbench has no C++ workloads: $(cat "$tmp/err")"
else
	run -w cxx -t 2 -d 0.05 -r 1 -o "$tmp/lb.csv"
	rc=$?
	cxx_ok() {
		test "$rc" = 0 && ! grep -q "^W[1-7][ab]*," "$tmp/lb.csv" ||
			return 1
		for w in "W2cxx pl::mutex std::mutex" \
			"W5acxx pl::condition_variable std::condition_variable" \
			"W6cxx pl::shared_mutex std::shared_mutex"; do
			set -- $w
			test -n "$(field "$1" "$2" throughput 9)" &&
				test -n "$(field "$1" "$3" throughput 6)" ||
				return 1
		done
	}
	ok "-w cxx: the C++ workloads alone, checked, both kinds in the CSV" \
		cxx_ok
fi

run -w W2 -t 2 -l pl -d 0.05 -r 1 -o "$tmp/lb.csv"
rc=$?
w2_ok() {
	test "$rc" = 0 && grep -q "^W2,2,pl_mutex,throughput," "$tmp/lb.csv" &&
		! grep -q "^W2cxx," "$tmp/lb.csv"
}
ok "-w W2: W2 alone, not W2cxx" w2_ok

LOCKBENCH_W8_LATE=1 && export LOCKBENCH_W8_LATE
run -w W8 -l pl,pthread -d 0.05 -r 1 -o "$tmp/lb.csv"
rc=$?
unset LOCKBENCH_W8_LATE
w8rc=$rc
cp "$tmp/lb.csv" "$tmp/w8.csv"
w8_ok() {
	test "$rc" = 0 || return 1
	for w in W8 W8x16; do
		for l in pl_mutex pthread_mutex; do
			row=$(grep "^$w,1024,$l,longest_wait," "$tmp/lb.csv")
			test -n "$row" &&
				grep -q "^$w,1024,$l,throughput," "$tmp/lb.csv" &&
				grep -q "^$w,1024,$l,starved," "$tmp/lb.csv" &&
				echo "$row" | awk -F, '{ exit !($6 > 0) }' ||
				return 1
		done
		grep "^$w,1024,pl_mutex,throughput," "$tmp/lb.csv" |
			grep -q ",m[a-z]*\$" || return 1
	done
}
ok "-w W8: W8 and W8x16 at 1024 threads, checked, in the CSV" w8_ok

why_ok() {
	test "$rc" = 0 &&
		awk '/^ +why: / { if (prev !~ /^  MISSED /) exit 1; n++ }
			/^  MISSED / { m++ }
			{ prev = $0 }
			END { exit !(m > 0 ? n > 0 : n == 0) }' "$tmp/out"
}
ok "a missed target's reason follows it, and only then" why_ok

PARKINGLOT_ADAPT=bad run -w W9 -t 2 -d 0.05 -r 2 -o "$tmp/lb.csv"
rc=$?
w9_ok() {
	test "$rc" = 0 &&
		test "$(grep -c 'ignoring PARKINGLOT_ADAPT="bad"' "$tmp/err")" = 3 &&
		grep -o "W9 2 threads pl_mutex[_a-z]* run [12]" "$tmp/err" |
		tr '\n' ';' | grep -qx "W9 2 threads pl_mutex run 1;W9 2 threads pl_mutex_fixed run 1;W9 2 threads pl_mutex run 2;W9 2 threads pl_mutex_fixed run 2;" &&
		field W9 pl_mutex throughput 9 | grep -q "^[0-9]" &&
		field W9 pl_mutex_fixed throughput 6 | grep -q "^[0-9]"
}
ok "-w W9: children with and without PARKINGLOT_ADAPT=0, alternating" w9_ok

run --one-run W2x,2
rc=$?
one_ok() {
	test "$rc" = 2 -a "$(wc -l <"$tmp/err")" = 1 -a ! -s "$tmp/out"
}
ok "a bad --one-run: exit 2 and one line" one_ok

so=lib/.libs/libparkinglot-pthread.so
if test ! -r "$so"; then
	n=$((n + 1))
	echo "ok $n # SKIP no drop-in built at $so"
else
	LD_PRELOAD=$(pwd)/$so run -w W1 -l pl,pthread -d 0.05 -r 1
	rc=$?
	preload_ok() {
		test "$rc" = 0 &&
			grep -q "^lockbench: libparkinglot against the drop-in" \
				"$tmp/out" &&
			grep -q "^dropin_mutex " "$tmp/out" &&
			! grep -q "^pthread_mutex " "$tmp/out"
	}
	ok "the drop-in preloaded from outside: rows labelled dropin_*" \
		preload_ok
fi

late_ok() {
	test "$w8rc" = 0 || return 1
	for w in W8 W8x16; do
		for t in 64 256 1024; do
			for l in pl_mutex pthread_mutex; do
				grep "^$w,$t,$l,starved," "$tmp/w8.csv" |
					awk -F, '{ n++; if (!($7 >= 1)) exit 1 }
						END { exit n != 1 }' || return 1
			done
		done
	done
}
ok "W8: a thread whose first unlock follows the stop is starved" late_ok

run -w W4 -l pl,pthread -d 0.05 -r 1 -o "$tmp/lb.csv"
rc=$?
w4_ok() {
	test "$rc" = 0 || return 1
	g=$(field W4 pthread_mutex lock_rate 6) &&
		a=$(field W4 pl_mutex lock_alone_rate 6) || return 1
	grep -q "^  met     W4:" "$tmp/out" && return 0 # no reason to give
	why=$(grep "^ *why: lock rate" "$tmp/out")
	if awk -v g="$g" -v a="$a" 'BEGIN { exit !(1.7 * g > 2 * a) }'; then
		echo "$why" | grep -q "is above [0-9.]*, twice the rate of one pl"
	else
		echo "$why" | grep -q "^ *why: lock rate: the lock's cache line"
	fi
}
ok "W4: a lock-rate goal above twice one lock thread alone says so" w4_ok

run -w W6 -l pl,pthread -t 8 -d 0.05 -r 1 -o "$tmp/lb.csv"
rc=$?
w6_ok() {
	test "$rc" = 0 || return 1
	grep -q "^  MISSED  W6 8 threads:" "$tmp/out" || return 0 # no reason
	g=$(field W6 pthread_rwlock write_share 6) &&
		p=$(field W6 pl_rwlock write_share 6) || return 1
	why=$(grep "^ *why: throughput" "$tmp/out")
	if awk -v g="$g" 'BEGIN { exit !(g < 25) }'; then
		echo "$why" | grep -qF "pthread_rwlock prefers readers: its \
writers did $(printf %.1f "$g")% of the operations at 8 threads, under \
the quarter each side must have, so its throughput there is mostly \
readers sharing the lock; pl's writers did $(printf %.1f "$p")%"
	else
		test "$why" = "          why: throughput: not attributed"
	fi
}
ok "W6: glibc's writers' share below a quarter is the reason, in figures" \
	w6_ok
exit 0
