#!/bin/sh
# SPDX-License-Identifier: MIT
# model/check.sh: what `make check-model` runs.
#
#   model/check.sh [MODEL-DIR]
#
# Verifies the Promela models of model/ with spin, one run per row of the
# table below: a model as is must give no error (its properties, no
# invalid end state, the clean final state); each BROKEN variant (one step
# of the protocol removed or changed, see the comment at the top of the
# model) must make spin find the counterexample the row names, which
# proves the check can fail.  Exits 0 only if every run came out as
# expected.  Everything happens in a temporary directory; $CC (default cc)
# compiles spin's verifier.
set -u
dir=$(cd "${1:-$(dirname "$0")}" && pwd) || exit 1
CC=${CC:-cc}

# The runs, one a line: model | spin -D options (- for none) | expected |
# what it shows.  expected is "ok" (errors: 0, the search complete), or a
# text that spin's report must contain along with an error, such as
# "invalid end state" or "assertion violated (incs".
rows='
twobit.pml | -                           | ok | the mutex case verifies
twobit.pml | -DBROKEN=1 -DNO_INVARIANT   | invalid end state | a lost wakeup: the woken thread does not re-arm P
twobit.pml | -DBROKEN=2 -DNO_INVARIANT   | invalid end state | a lost wakeup: validate does not set P
twobit.pml | -DBROKEN=3 -DNO_INVARIANT   | invalid end state | a lost wakeup: timed_out clears P, not last
twobit.pml | -DBROKEN=4 -DNO_MISUSE_CHECK | assertion violated (incs | two owners: the hand-off clears L
twobit.pml | -DBROKEN=5 -DNO_INVARIANT   | invalid end state | a lost wakeup: hand-off clears P, waiters left
twobit.pml | -DBROKEN=8 -DNO_INVARIANT   | invalid end state | a lost wakeup: re-armed only when the lock is held
twobit.pml | -DBROKEN=9                  | (turn[q[k]]>turn[w]) | turns: a losing woken thread parks at the tail
twobit.pml | -DBROKEN=10                 | (turn[q[k]]>turn[w]) | turns: a losing woken thread parks at the head
twobit.pml | -DBROKEN=11                 | (passes[q[k]]<=1) | turns: a waiter passed over twice in one park
twobit.pml | -DBROKEN=13                 | (nq[lk]==0) | a fair unlock takes the fast path with a waiter queued behind a re-arm
twobit.pml | -DDIES                      | ok | a thread that ends in its sleep passes its re-arm on
twobit.pml | -DDIES -DBROKEN=12 -DNO_INVARIANT | invalid end state | a lost wakeup: a thread woken to re-arm ends first
twobit.pml | -DSHARED                    | ok | two bit locks in one word verify
twobit.pml | -DSHARED -DBROKEN=6         | assertion violated ((state&5)==0) | a plain store undoes the other release
twobit.pml | -DSHARED -DBROKEN=7         | assertion violated (incs | token ignored: the other lock handed off
twobit.pml | -DSHARED -DBROKEN=1 -DNO_INVARIANT | invalid end state | a lost wakeup: a bit lock woken thread does not re-arm P
twobit.pml | -DSHARED -DBROKEN=13        | (nq[lk]==0) | a fair bit lock unlock takes the fast path with a waiter queued
rwlock.pml | -                           | ok | the model verifies
rwlock.pml | -DBROKEN=1 -DNO_BITS -DNO_P6 | invalid end state | a lost wakeup
rwlock.pml | -DBROKEN=2 -DNO_BITS        | invalid end state | a lost wakeup after a timeout
rwlock.pml | -DBROKEN=3                  | assertion violated ((nw==1) | a reader beside a writer
rwlock.pml | -DBROKEN=4                  | assertion violated (rph<=1) | two reader phases past a writer
rwlock.pml | -DBROKEN=5                  | assertion violated (rblk | a trace left by a timeout
rwlock.pml | -DBROKEN=6                  | assertion violated (rph<=1) | the old timeout rule: readers let in past WWAIT
rwlock.pml | -DARRIVAL                   | ok | arriving readers queue behind a waiting writer
rwlock.pml | -DARRIVAL -DOLD_ENTRY       | late&(1<<me) | the old entry rule: readers enter past a parked writer
rwlock.pml | -DBARGE -DNO_FAIR          | ok | the reader-preferring entry of the drop-in keeps exclusion and wakeups
rwlock.pml | -DBARGE -DNO_FAIR -DBROKEN=7 | assertion violated | a barging reader beside a writer
rwlock.pml | -DBARGE -DNO_FAIR -DBROKEN=8 | assertion violated | a reader barging after its step beside a writer
rwlock.pml | -DBROKEN=9                  | assertion violated ( !(handoff) | a writer handed the lock past the claim of the readers
rwlock.pml | -DBROKEN=12                 | assertion violated (rfirst | the unlock passes the lock to a writer past a reader parked since it looked
rwlock.pml | -DDIES                      | ok | a writer that ends in its park passes on what it was woken for
rwlock.pml | -DDIES -DBROKEN=10 -DNO_BITS | invalid end state | a lost wakeup: a writer woken to compete ends, nobody told
cond.pml   | -                           | ok | the model verifies
cond.pml   | -DBROKEN=1                  | assertion violated (in_wait | the old design touches a mutex nobody waits with
cond.pml   | -DBROKEN=1 -DNO_DEAD_CHECK  | assertion violated (ptok | the old design moves a waiter onto another mutex
cond.pml   | -DBROKEN=2                  | signalled[me]&&(rc!=0) | a signalled timed waiter returns ETIMEDOUT
cond.pml   | -DBROKEN=3                  | invalid end state | a lost wakeup: no PARKED on the held mutex
cond.pml   | -DBROKEN=4                  | invalid end state | a lost wakeup: the byte not set
cond.pml   | -DBROKEN=5                  | invalid end state | a lost wakeup: no PARKED on the free mutex
cond.pml   | -DBROKEN=6                  | invalid end state | a lost wakeup: a woken waiter does not re-arm PARKED
cond.pml   | -DANY                       | ok | waiters of clockwait_any beside a mutex waiter verify
cond.pml   | -DANY -DBROKEN=7            | invalid end state | a lost wakeup: clockwait_any unlocks before it is queued
cond.pml   | -DANY -DBROKEN=8            | invalid end state | a lost wakeup: wake_any clears the byte, waiters left
cond.pml   | -DANY -DBROKEN=9            | assertion violated (in_wait | a requeue taking an ANY_LOCK head touches a mutex nobody waits with
cond.pml   | -DANY -DBROKEN=9 -DNO_DEAD_CHECK | assertion violated (ptok[w]!=3) | a waiter of clockwait_any moved onto a mutex
cond.pml   | -DANY -DBROKEN=10           | assertion violated (owner[3]==(me+1)) | clockwait_any returns without relock after a timeout
cond.pml   | -DMIXED                     | ok | waiters of two mutexes at once verify
cond.pml   | -DANY -DMIXED               | ok | waiters of a mutex and of clockwait_any at once verify
cond.pml   | -DMIXED -DBROKEN=11         | !(since[j]) | a broadcast of one round leaves the other mutex waiter on c
cond.pml   | -DANY -DMIXED -DBROKEN=12   | !(since[j]) | wake_any hides the skipped mutex waiter: the broadcast leaves it on c
once.pml   | -                           | ok | the once of futex.h, as the statistics page uses it, verifies
once.pml   | -DBROKEN=1                  | invalid end state | a lost wakeup: DONE stored, nobody woken
once.pml   | -DBROKEN=2                  | invalid end state | a lost wakeup: the wake before DONE is stored
once.pml   | -DBROKEN=3                  | assertion violated (mapped==1) | the old creation maps a page per thread
once.pml   | -DBROKEN=4                  | assertion violated published | a waiter returns before the page is published
'

if ! command -v spin >/dev/null 2>&1; then
	echo "check-model: spin is not installed: apt-get install spin" >&2
	exit 1
fi
work=$(mktemp -d "${TMPDIR:-/tmp}/check-model.XXXXXX") || exit 1
trap 'rm -rf "$work"' EXIT
trap 'exit 1' INT TERM
cd "$work" || exit 1

# -DSAFETY: safety properties and end states only; -DCOLLAPSE compresses
# the state vector (about 1 GB and 1-2 minutes for the rwlock model, 2.5
# GB for its -DBARGE case: a run may take 3 GB, two lanes 6).
PANFLAGS="-O2 -w -DSAFETY -DCOLLAPSE -DMEMLIM=3072"
status=0
n=0

# verify MODEL NAME SPIN-OPTIONS...: generate and run the verifier; its
# report is in NAME.out.  Returns non-zero if it could not be built.
verify() {
	model=$1
	name=$2
	shift 2
	rm -f pan pan.[bchmpt] ./*.trail
	if ! spin "$@" -a "$model" >"$name.spin" 2>&1; then
		cat "$name.spin" >&2
		return 1
	fi
	if ! $CC $PANFLAGS -o pan pan.c >"$name.cc" 2>&1; then
		cat "$name.cc" >&2
		return 1
	fi
	./pan -m1000000 >"$name.out" 2>&1
	return 0
}

# summary NAME: the verifier's verdict in one line.
summary() {
	awk '/errors:/ { e = $0 } /states, stored/ { s = $1 }
	    /elapsed time/ { t = $4 }
	    END { printf "%s; %s states; %s s\n", e, s, t }' "$1.out" |
		sed 's/^State-vector [0-9]* byte, //'
}

incomplete() {
	grep -q 'max search depth too small\|MEMLIM\|out of memory' "$1.out"
}

# row N MODEL OPTS EXPECT WHAT: run N of the table, in its own directory
# (spin writes its verifier and trail beside the model), its report on
# stdout; fails if the run did not come out as expected.
row() {
	n=$1 model=$2 opts=$3 expect=$4 what=$5
	name=run$n
	echo "check-model: $model${opts:+ $opts} (must give: $expect; $what)"
	if ! test -f "$dir/$model"; then
		echo "  FAIL: no $dir/$model"
		return 1
	fi
	mkdir "$work/$name" && cd "$work/$name" || return 1
	cp "$dir/$model" .
	# $opts is a list of -D flags: split it on purpose.
	# shellcheck disable=SC2086
	if ! verify "$model" "$name" $opts; then
		echo "  FAIL: could not build the verifier"
		return 1
	elif test "$expect" = ok; then
		if grep -q 'errors: 0' "$name.out" && ! incomplete "$name"; then
			echo "  PASS: $(summary "$name")"
			return 0
		fi
		echo "  FAIL: spin found an error, or the search was incomplete:"
		sed 's/^/    /' "$name.out"
		# shellcheck disable=SC2086
		test -f "$model.trail" &&
			spin -t -g $opts "$model" 2>&1 | tail -n 40 |
			sed 's/^/    /'
		return 1
	elif grep -q 'errors: [1-9]' "$name.out" &&
	    grep '^pan:1: ' "$name.out" | grep -qF "$expect"; then
		echo "  PASS: spin found it:" \
		    "$(grep -o 'pan:1: .*(at depth [0-9]*)' "$name.out" |
		        sed 's/^pan:1: //')"
		return 0
	fi
	echo "  FAIL: spin did not find \"$expect\":"
	sed 's/^/    /' "$name.out"
	return 1
}

# lane: run every row that no other lane has claimed yet (mkdir is the
# atomic claim), its report in $work/runN.log, its status in
# $work/runN.st and its wall time in $work/runN.t.
lane() {
	n=0
	while IFS='|' read -r model opts expect what; do
		model=$(echo $model)
		test -n "$model" || continue
		n=$((n + 1))
		mkdir "$work/claim$n" 2>/dev/null || continue
		opts=$(echo $opts)
		test "$opts" = - && opts=
		t0=$(date +%s)
		(row "$n" "$model" "$opts" "$(echo $expect)" "$(echo $what)") \
			>"$work/run$n.log" 2>&1
		echo $? >"$work/run$n.st"
		echo $(($(date +%s) - t0)) >"$work/run$n.t"
	done <<EOF
$rows
EOF
}

# The runs are independent: as many lanes as CPUs (JOBS overrides it);
# the reports come out in the order of the table.
jobs=${JOBS:-$(getconf _NPROCESSORS_ONLN 2>/dev/null || echo 1)}
echo "check-model: spin $(spin -V | sed -n 's/^Spin Version \([^ ]*\).*/\1/p'), models in $dir, $jobs at a time"
i=0
while test "$i" -lt "$jobs"; do
	lane &
	i=$((i + 1))
done
wait
n=1
while test -d "$work/claim$n"; do
	cat "$work/run$n.log"
	echo "  ($(cat "$work/run$n.t") s with the build)"
	test "$(cat "$work/run$n.st" 2>/dev/null)" = 0 || status=1
	n=$((n + 1))
done
test "$n" -gt 1 || status=1

if test "$status" -eq 0; then
	echo "check-model: PASS"
else
	echo "check-model: FAIL"
fi
exit "$status"
