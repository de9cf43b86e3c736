#!/bin/sh
# SPDX-License-Identifier: MIT
# model/check.sh: what `make check-model` runs.
#
#   model/check.sh [MODEL-DIR]
#
# Verifies model/mutex.pml with spin: the model as is must give no error
# (mutual exclusion, the PARKED invariant, no invalid end state, clean
# final state); then each BROKEN variant (one step of the protocol
# removed, see the comment at the top of mutex.pml) must make spin find a
# counterexample: an invalid end state (a thread parked forever with the
# lock free) for BROKEN=1..3, two threads in the critical section for
# BROKEN=4.  That second half proves the check can fail.  Exits 0 only if
# every run came out as expected.  Everything happens in a temporary
# directory; $CC (default cc) compiles spin's verifier.
set -u
dir=${1:-$(dirname "$0")}
model=$(cd "$dir" && pwd)/mutex.pml
CC=${CC:-cc}
if ! command -v spin >/dev/null 2>&1; then
	echo "check-model: spin is not installed: apt-get install spin" >&2
	exit 1
fi
if ! test -f "$model"; then
	echo "check-model: no $model" >&2
	exit 1
fi
work=$(mktemp -d "${TMPDIR:-/tmp}/check-model.XXXXXX") || exit 1
trap 'rm -rf "$work"' EXIT
trap 'exit 1' INT TERM
cd "$work" || exit 1
cp "$model" mutex.pml # spin writes its trail beside the model

# -DSAFETY: safety properties and end states only; -DCOLLAPSE compresses
# the state vector (about 400 MB and 10 s for the full model).
PANFLAGS="-O2 -w -DSAFETY -DCOLLAPSE -DMEMLIM=2048"
status=0

# verify NAME SPIN-OPTIONS...: generate and run the verifier; its report
# is in NAME.out.  Returns non-zero if it could not be built.
verify() {
	name=$1
	shift
	rm -f pan pan.[bchmpt] mutex.pml.trail
	if ! spin "$@" -a mutex.pml >"$name.spin" 2>&1; then
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

echo "check-model: spin $(spin -V | sed -n 's/^Spin Version \([^ ]*\).*/\1/p'), model $model"

echo "check-model: mutex.pml (must verify)"
if ! verify correct; then
	status=1
elif grep -q 'errors: 0' correct.out && ! incomplete correct; then
	echo "  PASS: $(summary correct)"
else
	echo "  FAIL: spin found an error, or the search was incomplete:"
	sed 's/^/    /' correct.out
	test -f mutex.pml.trail &&
		spin -t -g mutex.pml 2>&1 | tail -n 40 | sed 's/^/    /'
	status=1
fi

for b in 1 2 3; do
	echo "check-model: mutex.pml -DBROKEN=$b (must find a lost wakeup)"
	if ! verify broken$b -DBROKEN=$b -DNO_INVARIANT; then
		status=1
	elif grep -q 'errors: [1-9]' broken$b.out &&
	    grep -q 'invalid end state' broken$b.out; then
		echo "  PASS: spin found a lost wakeup:" \
		    "$(grep -o 'invalid end state (at depth [0-9]*)' broken$b.out)"
	else
		echo "  FAIL: spin found no lost wakeup in the broken model:"
		sed 's/^/    /' broken$b.out
		status=1
	fi
done

echo "check-model: mutex.pml -DBROKEN=4 (must find two threads inside)"
if ! verify broken4 -DBROKEN=4 -DNO_MISUSE_CHECK; then
	status=1
elif grep -q 'errors: [1-9]' broken4.out &&
    grep -q 'assertion violated (incs' broken4.out; then
	echo "  PASS: spin found a breach of mutual exclusion:" \
	    "$(grep -o 'assertion violated (incs[^)]*) (at depth [0-9]*)' broken4.out)"
else
	echo "  FAIL: spin found no breach of mutual exclusion in the broken model:"
	sed 's/^/    /' broken4.out
	status=1
fi

if test "$status" -eq 0; then
	echo "check-model: PASS"
else
	echo "check-model: FAIL"
fi
exit "$status"
