#!/bin/sh
# SPDX-License-Identifier: MIT
# TAP test of tools/parkstat against tests/contended (a program with one
# hot lock, the global pl_mutex_t hot_lock): running a command (JSON and
# text, exit statuses passed on), attaching to a live process (one report,
# and -i until the process exits or SIGINT), naming its addresses in each
# mode (but for a command killed by a signal), their kinds and contended
# counts, the sampled call sites (symbolized, with source lines), a
# command line that is not UTF-8, -i across a reset, a SIGKILL and a
# truncated object, and each error.
#
# Run by `make check` from the top of the build directory.  The JSON is
# checked with grep and sed (parkstat writes one field, or one address,
# per line), and validated with python3 where it exists.  Every command is
# bounded: by timeout(1) where it exists, and every wait polls with a
# limit.
set -u
PARKSTAT=tools/parkstat${EXEEXT:-}
CONTENDED=tests/contended${EXEEXT:-}
limit=60
if command -v timeout >/dev/null 2>&1; then
	run() { timeout "$limit" "$@"; }
else
	run() { "$@"; }
fi
if command -v python3 >/dev/null 2>&1; then
	have_python=yes
else
	have_python=no
fi

tmp=$(mktemp -d "${TMPDIR:-/tmp}/parkstat-test.XXXXXX") || exit 1
bg_pids=
cleanup() {
	for p in $bg_pids; do kill "$p" 2>/dev/null; done
	exec 3>&- 4>&- 5>&- 2>/dev/null
	rm -rf "$tmp"
}
trap cleanup EXIT
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
show() { test -f "$1" && sed 's/^/# /' "$1"; }

# A field of the "stats" object of a JSON report.
stat_of() { sed -n '/^  "stats": {/,/^  }/p' "$1" |
	sed -n "s/^    \"$2\": \\([0-9]*\\),\\{0,1\\}\$/\\1/p"; }
# A top-level field.
top_of() { sed -n "s/^  \"$2\": \\(.*\\),\$/\\1/p" "$1" | head -n 1; }
# last_of FILE KEY: the same, of the last report in FILE (-i).
last_of() { sed -n "s/^  \"$2\": \\(.*\\),\$/\\1/p" "$1" | tail -n 1; }
# The first address line.
first_addr() { sed -n '/^  "addresses": \[/{n;p;q;}' "$1"; }
json_valid() {
	test $have_python = no && return 0
	python3 -c 'import json, sys
for f in sys.argv[1:]:
    s = open(f).read()
    d = json.JSONDecoder()
    i = 0
    while i < len(s):
        if s[i].isspace():
            i += 1
            continue
        o, i = d.raw_decode(s, i)
        assert isinstance(o, dict)' "$@"
}
# Wait (at most 10 s) until a file exists.
wait_file() {
	i=0
	while test ! -e "$1"; do
		i=$((i + 1))
		test $i -gt 200 && return 1
		sleep 0.05
	done
}
# lines FILE PATTERN: how many lines of FILE match.
lines() { cat "$1" 2>/dev/null | grep -c "$2"; }
# wait_lines FILE PATTERN N: wait (at most 20 s) until N lines match.
wait_lines() {
	i=0
	while test "$(lines "$1" "$2")" -lt "$3"; do
		i=$((i + 1))
		test $i -gt 400 && return 1
		sleep 0.05
	done
}
# await PID: wait (at most 10 s, then SIGKILL) for PID to end; its status.
await() {
	i=0
	while kill -0 "$1" 2>/dev/null; do
		i=$((i + 1))
		if test $i -gt 100; then
			kill -KILL "$1"
			break
		fi
		sleep 0.1
	done
	wait "$1"
}

for prog in "$PARKSTAT" "$CONTENDED"; do
	if test ! -x "$prog"; then
		echo "1..1"
		echo "not ok 1 - $prog not built in $(pwd)"
		exit 0
	fi
done

# ---------------------------------------------------------------------
# parkstat --json -- CMD

run "$PARKSTAT" --json -o "$tmp/run.json" -- "$CONTENDED" 3 \
	>"$tmp/run.out" 2>"$tmp/run.err"
status=$?
show "$tmp/run.json"
show "$tmp/run.out"
show "$tmp/run.err"
check "parkstat -- contended 3 passes on exit status 3 (got $status)" \
	test "$status" -eq 3

missing=
for f in parks unparks timeouts invalid_parks requeues fair_handoffs \
    spin_acquires spin_failures wait_ns_total buckets threads_parked_now \
    max_queue_len; do
	test -n "$(stat_of "$tmp/run.json" $f)" || missing="$missing $f"
done
for f in pid command state elapsed_ns; do
	test -n "$(top_of "$tmp/run.json" $f)" || missing="$missing $f"
done
for f in table tuning queue_length_at_park queue_length_now wait_time \
    addresses; do
	grep -q "^  \"$f\": " "$tmp/run.json" || missing="$missing $f"
done
check "the JSON report has every field${missing:+ (missing:$missing)}" \
	test -z "$missing"

parks=$(stat_of "$tmp/run.json" parks)
check "parks > 0 (${parks:-none})" test "${parks:-0}" -gt 0
check "state is exited with exit_status 3" \
	test "$(top_of "$tmp/run.json" state)" = '"exited"' -a \
	"$(top_of "$tmp/run.json" exit_status)" = 3

top=$(first_addr "$tmp/run.json")
echo "# top address: $top"
case $top in
*'"rank": 1,'*'"symbol": "hot_lock",'*) ok "the top address is hot_lock" ;;
*) not_ok "the top address is hot_lock" ;;
esac
case $top in
*'"object": "'*'/contended'*) ok "... in the object contended" ;;
*) not_ok "... in the object contended" ;;
esac

case $top in
*'"kind": "pl_mutex",'*) ok "... of kind pl_mutex" ;;
*) not_ok "... of kind pl_mutex" ;;
esac
tparks=$(echo "$top" | sed -n 's/.*"parks": \([0-9]*\).*/\1/p')
tcont=$(echo "$top" | sed -n 's/.*"contended": \([0-9]*\).*/\1/p')
# A call that found it taken may park more than once (woken to compete,
# it can lose again): both counts are positive, neither bounds the other.
check "... found taken by ${tcont:-no} calls, with ${tparks:-no} parks" \
	test "${tcont:-0}" -gt 0 -a "${tparks:-0}" -gt 0

# The sampled stacks: 1 park in 8 by default; the site that waited
# longest is hot_lock's, from contended.c's worker.
check "1 park in 8 sampled ($(top_of "$tmp/run.json" sample_every))" \
	test "$(top_of "$tmp/run.json" sample_every)" = 8
site=$(sed -n '/^  "stacks": \[/{n;p;q;}' "$tmp/run.json")
echo "# first call site: $site"
case $site in
*'"rank": 1,'*'"symbol": "hot_lock", "kind": "pl_mutex"'*)
	ok "the first call site is on hot_lock, a pl_mutex" ;;
*) not_ok "the first call site is on hot_lock, a pl_mutex" ;;
esac
case $site in
*'"frames": [{"pc": '*'"function": "worker+0x'*'contended.c", "line": '[1-9]*)
	ok "... its first frame is worker, with its line in contended.c" ;;
*) not_ok "... its first frame is worker, with its line in contended.c" ;;
esac

run "$PARKSTAT" --json --sample 0 -o "$tmp/nosample.json" -- "$CONTENDED" \
	>/dev/null 2>&1
check "--sample 0: nothing sampled, no call site" \
	test "$(top_of "$tmp/nosample.json" sample_every)" = 0 -a \
	"$(sed -n '/^  "stacks": \[/{n;p;q;}' "$tmp/nosample.json")" = "  ],"

# contended printed what pl_stats_get said after joining its workers: the
# report must show exactly the same figures.
diff=
for f in parks unparks timeouts spin_acquires spin_failures fair_handoffs \
    wait_ns_total max_queue_len; do
	mine=$(sed -n "s/.* $f \\([0-9]*\\).*/\\1/p" "$tmp/run.out")
	theirs=$(stat_of "$tmp/run.json" $f)
	test -n "$mine" -a "$mine" = "$theirs" ||
		diff="$diff $f:$mine/$theirs"
done
check "the figures are those of pl_stats_get${diff:+ (differ:$diff)}" \
	test -z "$diff"

if test $have_python = yes; then
	check "the report is valid JSON" json_valid "$tmp/run.json"
else
	skip "python3 not found: JSON not validated"
fi

pid=$(top_of "$tmp/run.json" pid)
check "the object /dev/shm/parkinglot.$pid is removed" \
	test -n "$pid" -a ! -e "/dev/shm/parkinglot.$pid"

# Text, on stderr by default.
run "$PARKSTAT" -- "$CONTENDED" >/dev/null 2>"$tmp/text.err"
status=$?
show "$tmp/text.err"
check "parkstat -- contended: status 0 (got $status), text report" \
	test "$status" -eq 0 -a -s "$tmp/text.err"
sections=0
for h in '^queue length at each park' '^addresses by queue length now' \
    '^time parked per wait' '^most contended addresses' \
    '^call sites that waited longest'; do
	grep -q "$h" "$tmp/text.err" && sections=$((sections + 1))
done
check "the text report has its 5 sections ($sections)" test $sections -eq 5
check "... its first call site on hot_lock, from contended.c" sh -c \
	'grep -A 3 "^call sites that waited" "$1" | grep -q "on hot_lock" &&
	 grep -A 3 "^call sites that waited" "$1" |
	     grep -q "worker+0x.* contended.c:[0-9]"' sh "$tmp/text.err"
check "the text report draws bars" grep -q '  #' "$tmp/text.err"
first=$(grep -A 2 '^most contended addresses' "$tmp/text.err" | tail -n 1)
echo "# first address: $first"
case $first in
*' hot_lock '*) ok "the text report names hot_lock first" ;;
*) not_ok "the text report names hot_lock first" ;;
esac

# Killed by a signal: no exit handlers ran, the figures are still there.
run "$PARKSTAT" --json -o "$tmp/kill.json" -- "$CONTENDED" --kill \
	>/dev/null 2>"$tmp/kill.err"
status=$?
show "$tmp/kill.err"
check "a command killed by SIGKILL gives 137 (got $status)" \
	test "$status" -eq 137
p=$(stat_of "$tmp/kill.json" parks)
check "its report says killed by signal 9, with parks ($p)" \
	test "$(top_of "$tmp/kill.json" state)" = '"killed"' -a \
	"$(top_of "$tmp/kill.json" signal)" = 9 -a "${p:-0}" -gt 0
# (Its names come from the maps parkstat read while it ran, if it ran
# long enough after its first park: not checked, it depends on timing.)
pid=$(top_of "$tmp/kill.json" pid)
check "its object is removed too" \
	test -n "$pid" -a ! -e "/dev/shm/parkinglot.$pid"

run "$PARKSTAT" -- "$tmp/no-such-command" >"$tmp/nf.out" 2>"$tmp/nf.err"
status=$?
show "$tmp/nf.err"
check "a command that cannot be found: 127 (got $status), one line" \
	test "$status" -eq 127 -a "$(wc -l <"$tmp/nf.err")" -eq 1
check "... saying command not found" grep -q 'command not found' "$tmp/nf.err"

printf '#!/bin/sh\n' >"$tmp/not-executable"
chmod 644 "$tmp/not-executable"
run "$PARKSTAT" -- "$tmp/not-executable" >/dev/null 2>"$tmp/nx.err"
status=$?
show "$tmp/nx.err"
check "a command that cannot be run: 126 (got $status)" \
	test "$status" -eq 126

run "$PARKSTAT" --no-preload -- sh -c 'exit 5' >/dev/null 2>"$tmp/nolib.err"
status=$?
show "$tmp/nolib.err"
check "--no-preload, a command without libparkinglot: its status 5 (got $status)," \
	test "$status" -eq 5
check "... and a note that it did not export statistics" \
	grep -q 'did not export statistics' "$tmp/nolib.err"

# Without --no-preload parkstat loads the drop-in (PARKSTAT_DROPIN, the
# build tree's), so that a program never linked with libparkinglot
# reports too.
run "$PARKSTAT" -j -- sh -c 'exit 6' >/dev/null 2>"$tmp/dropin.json"
status=$?
show "$tmp/dropin.json"
check "a command never linked, with the drop-in: its status 6 (got $status)," \
	test "$status" -eq 6
check "... and a report of it" \
	test "$(top_of "$tmp/dropin.json" state)" = '"exited"'

# A command line that is not UTF-8: each invalid sequence is U+FFFD in
# the JSON (a bad first byte, 0xff and one of 5 bytes, 0xf8; a surrogate;
# an overlong 0; beyond U+10FFFF; one cut short), the valid ones pass
# (2, 3 and 4 bytes: e acute, the euro sign, a G clef).
bad=$(printf '\377\200\200 \370\210\200\200 \355\240\200 \300\200 \364\220\200\200 \342\202')
good=$(printf '\303\251\342\202\254\360\235\204\236')
run "$PARKSTAT" -j -o "$tmp/utf8.json" -- sh -c : sh $bad "$good" \
	>/dev/null 2>"$tmp/utf8.err"
status=$?
show "$tmp/utf8.err"
sed -n 's/^  "command": /# /p' "$tmp/utf8.json"
if test $have_python = yes; then
	check "a command line not UTF-8: valid JSON (status $status), invalid bytes U+FFFD" \
		python3 -c 'import json, sys
c = json.loads(sys.stdin.buffer.read().decode("utf-8"))["command"]
w = c.split(" ")[-7:]
assert all(x and x == "\ufffd" * len(x) for x in w[:6]), ascii(c)
assert w[6] == "\u00e9\u20ac\U0001d11e", ascii(c)' <"$tmp/utf8.json"
else
	check "a command line not UTF-8: U+FFFD in the JSON" \
		grep -q '^  "command": .*\\ufffd' "$tmp/utf8.json"
fi

# A static program: one line says why its locks cannot be seen, and it
# runs all the same (Debian's ldconfig is static).
if test -x /sbin/ldconfig && command -v readelf >/dev/null &&
	! readelf -l /sbin/ldconfig | grep -q INTERP
then
	run "$PARKSTAT" -- /sbin/ldconfig -V >/dev/null 2>"$tmp/static.err"
	status=$?
	show "$tmp/static.err"
	check "a static program runs (status $status)" test "$status" -eq 0
	check "... after one line saying it is statically linked" \
		grep -q 'is statically linked' "$tmp/static.err"
else
	skip "no static /sbin/ldconfig here"
	skip "no static /sbin/ldconfig here"
fi

# A drop-in that is not there: one line, and the command still runs.
PARKSTAT_DROPIN=$tmp/none.so run "$PARKSTAT" -- sh -c 'exit 7' \
	>/dev/null 2>"$tmp/nodropin.err"
status=$?
show "$tmp/nodropin.err"
check "a missing drop-in: the command runs (status $status)" \
	test "$status" -eq 7
check "... after one line naming the drop-in" \
	grep -q "none.so: No such file" "$tmp/nodropin.err"

# ---------------------------------------------------------------------
# parkstat -p PID: contended --live runs until its stdin (a FIFO whose
# writing end this script holds) reaches end of file, or 10 s.

mkfifo "$tmp/fifo" || exit 1
PARKINGLOT_STATS=1 "$CONTENDED" --live 10 <"$tmp/fifo" >/dev/null &
live=$!
bg_pids="$bg_pids $live"
exec 3>"$tmp/fifo"
if wait_file "/dev/shm/parkinglot.$live"; then
	ok "PARKINGLOT_STATS=1 creates /dev/shm/parkinglot.$live"
else
	not_ok "PARKINGLOT_STATS=1 creates /dev/shm/parkinglot.$live"
fi
mode=$(stat -c %a "/dev/shm/parkinglot.$live" 2>/dev/null)
check "... with mode 600 (got ${mode:-none})" test "$mode" = 600

# A first report may come before the first park: poll (at most 10 s).
i=0
while :; do
	run "$PARKSTAT" -p "$live" --json >"$tmp/p.json" 2>"$tmp/p.err"
	status=$?
	p=$(stat_of "$tmp/p.json" parks)
	test "$status" -ne 0 -o "${p:-0}" -gt 0 && break
	i=$((i + 1))
	test $i -gt 100 && break
	sleep 0.1
done
show "$tmp/p.err"
check "parkstat -p PID --json: status 0 (got $status)" test "$status" -eq 0
check "... a running process with parks > 0 (${p:-none})" \
	test "$(top_of "$tmp/p.json" state)" = '"running"' -a "${p:-0}" -gt 0
case $(first_addr "$tmp/p.json") in
*'"symbol": "hot_lock",'*) ok "... hot_lock on top" ;;
*) not_ok "... hot_lock on top" ;;
esac
if test $have_python = yes; then
	check "... valid JSON" json_valid "$tmp/p.json"
else
	skip "python3 not found: JSON not validated"
fi
run "$PARKSTAT" -p "$live" >"$tmp/p.txt" 2>"$tmp/p.err"
status=$?
show "$tmp/p.txt"
check "parkstat -p PID: a text report on stdout (status $status)" \
	test "$status" -eq 0 -a -s "$tmp/p.txt"
check "... of a running process" grep -q "^parkstat: process $live running;" "$tmp/p.txt"

# -i until SIGINT, sent once two reports are out (at most 20 s; the
# watcher then gets 10 s to stop, then SIGKILL).
"$PARKSTAT" -p "$live" -i 0.2 >"$tmp/i.txt" 2>"$tmp/i.err" &
watcher=$!
bg_pids="$bg_pids $watcher"
wait_lines "$tmp/i.txt" '^parkstat: process' 2
kill -INT "$watcher"
await "$watcher"
status=$?
show "$tmp/i.err"
reports=$(grep -c '^parkstat: process' "$tmp/i.txt")
check "parkstat -p PID -i 0.2, then SIGINT: status 0 (got $status)" \
	test "$status" -eq 0
check "... with several reports ($reports)" test "$reports" -ge 2
check "... with rates" grep -q 'parks/s' "$tmp/i.txt"

# End of file on its stdin: contended exits normally, and the library
# removes the object.
exec 3>&-
wait "$live"
status=$?
check "contended --live exits 0 when its stdin closes (got $status)" \
	test "$status" -eq 0
check "... and /dev/shm/parkinglot.$live is gone" \
	test ! -e "/dev/shm/parkinglot.$live"

# -i until the process exits by itself (after 2 s).
PARKINGLOT_STATS=1 "$CONTENDED" --live 2 <"$tmp/fifo" >/dev/null &
live=$!
bg_pids="$bg_pids $live"
exec 4>"$tmp/fifo"
wait_file "/dev/shm/parkinglot.$live"
run "$PARKSTAT" -p "$live" -i 0.25 --json >"$tmp/i.json" 2>"$tmp/i.err"
status=$?
show "$tmp/i.err"
reports=$(grep -c '^  "pid": ' "$tmp/i.json")
last=$(last_of "$tmp/i.json" state)
check "parkstat -p PID -i 0.25 --json ends when PID exits: status 0 (got $status)" \
	test "$status" -eq 0
check "... after several reports ($reports), the last one exited ($last)" \
	test "$reports" -ge 3 -a "$last" = '"exited"'
if test $have_python = yes; then
	check "... each a valid JSON object" json_valid "$tmp/i.json"
else
	skip "python3 not found: JSON not validated"
fi
exec 4>&-
wait "$live"

# ---------------------------------------------------------------------
# parkstat -p PID -i across an exec: contended --live 2, then it executes
# contended --live 30 (which exports: parkstat follows it to its object)
# or sleep (which does not: a last report, state "exec", while the
# process still runs).

PARKINGLOT_STATS=1 "$CONTENDED" --live 2 --exec "$CONTENDED" --live 30 \
	<"$tmp/fifo" >/dev/null &
live=$!
bg_pids="$bg_pids $live"
exec 4>"$tmp/fifo"
wait_file "/dev/shm/parkinglot.$live"
"$PARKSTAT" -p "$live" -i 0.2 --json >"$tmp/x.json" 2>"$tmp/x.err" 4>&- &
watcher=$!
bg_pids="$bg_pids $watcher"
wait_lines "$tmp/x.err" 'executed a new program' 1
after=$(lines "$tmp/x.json" '^  "pid": ')
wait_lines "$tmp/x.json" '^  "pid": ' $((after + 2))
exec 4>&-
await "$watcher"
status=$?
wait "$live"
show "$tmp/x.err"
last=$(last_of "$tmp/x.json" state)
check "parkstat -p PID -i across an exec into a program that exports: status 0 (got $status)" \
	test "$status" -eq 0
check "... says once that it follows the new program" \
	test "$(lines "$tmp/x.err" 'executed a new program: its statistics from here on')" -eq 1
check "... reports from it, to its exit ($after reports before, last $last)" \
	test "$after" -ge 1 -a "$last" = '"exited"'

sleep_prog=$(command -v sleep)
PARKINGLOT_STATS=1 "$CONTENDED" --live 2 --exec "$sleep_prog" 30 \
	<"$tmp/fifo" >/dev/null &
live=$!
bg_pids="$bg_pids $live"
exec 4>"$tmp/fifo"
wait_file "/dev/shm/parkinglot.$live"
run "$PARKSTAT" -p "$live" -i 0.2 --json >"$tmp/y.json" 2>"$tmp/y.err" 4>&-
status=$?
show "$tmp/y.err"
last=$(last_of "$tmp/y.json" state)
check "parkstat -p PID -i across an exec into a program without statistics: status 0 (got $status)" \
	test "$status" -eq 0
check "... ends with the state exec ($last) while the process runs on" \
	test "$last" = '"exec"' && kill -0 "$live" 2>/dev/null
kill "$live" 2>/dev/null
exec 4>&-
wait "$live"
rm -f "/dev/shm/parkinglot.$live" # left by contended, which exec ended

# ---------------------------------------------------------------------
# parkstat -p PID -i across what a process can do to its object: a reset,
# SIGKILL, and truncating it.  The reset is made the way pl_stats_reset
# makes it, by this script writing into the object of a process it has
# stopped (SIGSTOP), so that no hook of it follows the reset: the
# counters go to 0, then the resets count changes, while the tables
# still hold the figures from before.

# header_u32 FILE OFFSET: a 32-bit field of the header (lib/export.h).
header_u32() { od -An -t u4 -j "$2" -N 4 "$1" | tr -d ' '; }

# watch_live NAME N: a live contended (live, its object obj, its stdin
# the fifo on fd 5) watched by parkstat -p -i 0.2 (watcher, writing
# $tmp/NAME.txt and .err) until N reports are out.
watch_live() {
	PARKINGLOT_STATS=1 "$CONTENDED" --live 30 <"$tmp/fifo" >/dev/null &
	live=$!
	bg_pids="$bg_pids $live"
	exec 5>"$tmp/fifo"
	obj=/dev/shm/parkinglot.$live
	wait_file "$obj"
	"$PARKSTAT" -p "$live" -i 0.2 >"$tmp/$1.txt" 2>"$tmp/$1.err" &
	watcher=$!
	bg_pids="$bg_pids $watcher"
	wait_lines "$tmp/$1.txt" '^parkstat: process' "$2"
}

watch_live r 2
i=0
while :; do
	run "$PARKSTAT" -p "$live" --json >"$tmp/before.json" 2>/dev/null
	c=$(first_addr "$tmp/before.json" |
		sed -n 's/.*"contended": \([0-9]*\).*/\1/p')
	test "${c:-0}" -gt 0 && break
	i=$((i + 1))
	test $i -gt 100 && break
	sleep 0.1
done
check "before the reset: hot_lock found taken ${c:-no} times" \
	test "${c:-0}" -gt 0
# reset_object: as pl_stats_reset does, in the counters page (its offset
# counters_off at byte 88 of the header, lib/export.h): the stripes and
# max_queue_len (at maxq_off, byte 104) to 0, then the resets count, the
# word after them, to another value.  And a gauge that sums below 0, as
# one read while a thread parks on one CPU and leaves on another can:
# threads_parked_now, -1 in the first stripe (its index: its place among
# the counters of the JSON's stats).
reset_object() {
	coff=$(header_u32 "$obj" 88)
	moff=$(header_u32 "$obj" 104)
	g=$(sed -n '/^  "stats": {/,/^  }/p' "$tmp/before.json" |
		grep -n '"threads_parked_now"' | cut -d: -f1)
	test -n "$coff" -a -n "$moff" -a -n "$g" &&
	dd if=/dev/zero of="$obj" bs=1 seek="$coff" count=$((moff + 8)) \
		conv=notrunc 2>/dev/null &&
	printf '\377\377\377\377\377\377\377\377' |
		dd of="$obj" bs=1 seek=$((coff + moff + 8)) conv=notrunc \
		2>/dev/null &&
	printf '\377\377\377\377\377\377\377\377' |
		dd of="$obj" bs=1 seek=$((coff + 8 * (g - 2))) conv=notrunc \
		2>/dev/null
}
kill -STOP "$live"
check "the process stopped, its statistics reset by hand" reset_object
before=$(lines "$tmp/r.txt" '^parkstat: process')
wait_lines "$tmp/r.txt" '^parkstat: process' $((before + 2))
kill -INT "$watcher"
await "$watcher"
status=$?
show "$tmp/r.err"
grep '^  per second' "$tmp/r.txt" | sed 's/^/# /'
check "-i across a reset: status 0 (got $status), several reports" \
	test "$status" -eq 0 -a "$(lines "$tmp/r.txt" '^parkstat: process')" \
	-ge $((before + 2))
check "... and no rate that counts down through 0" \
	test "$(lines "$tmp/r.txt" '^  per second .*[0-9]\{13\}')" -eq 0

# The tables the process has not cleared yet read as 0: the address's
# figures, and the sampled stacks (none left with a park).
run "$PARKSTAT" -p "$live" --json >"$tmp/reset.json" 2>"$tmp/reset.err"
show "$tmp/reset.err"
top=$(first_addr "$tmp/reset.json")
echo "# top address after the reset: $top"
case $top in
*'"taken": 0, "contended": 0, "parks": 0, "waits": 0, "wait_ns": 0,'*)
	ok "after a reset the address's figures are 0" ;;
*) not_ok "after a reset the address's figures are 0" ;;
esac
check "... and so are the sampled stacks'" \
	test "$(sed -n '/^  "stacks": \[/{n;p;q;}' "$tmp/reset.json")" = "  ],"
g=$(stat_of "$tmp/reset.json" threads_parked_now)
check "threads parked now below 0 shows 0 (got ${g:-none})" test "$g" = 0

# SIGKILL: the object still says running, but the process is gone.
"$PARKSTAT" -p "$live" -i 0.2 --json >"$tmp/k.json" 2>"$tmp/k.err" &
watcher=$!
bg_pids="$bg_pids $watcher"
wait_lines "$tmp/k.json" '^  "pid": ' 1
kill -KILL "$live"
wait "$live" 2>/dev/null
await "$watcher"
status=$?
show "$tmp/k.err"
last=$(last_of "$tmp/k.json" state)
check "-i on a process killed by SIGKILL: status 0 (got $status)," \
	test "$status" -eq 0
check "... its last report not running (state $last)" \
	test -n "$last" -a "$last" != '"running"'
rm -f "$obj"
exec 5>&-

# An object truncated under parkstat: an error, not SIGBUS.
watch_live t 1
kill -STOP "$live"
dd if=/dev/null of="$obj" bs=4096 seek=1 2>/dev/null
await "$watcher"
status=$?
show "$tmp/t.err"
check "-i on an object truncated meanwhile: status 1 (got $status)," \
	test "$status" -eq 1
check "... and one line saying so" \
	test "$(wc -l <"$tmp/t.err")" -eq 1 -a "$(lines "$tmp/t.err" truncated)" -eq 1
kill -KILL "$live"
wait "$live" 2>/dev/null
rm -f "$obj"
exec 5>&-

# ---------------------------------------------------------------------
# Errors: one line on stderr each, status 1 (2 for the command line).

# expect_error DESCRIPTION STATUS PATTERN ARGS...
expect_error() {
	d=$1 want=$2 pat=$3
	shift 3
	run "$PARKSTAT" "$@" >"$tmp/e.out" 2>"$tmp/e.err"
	got=$?
	show "$tmp/e.err"
	if test "$got" -eq "$want" -a "$(wc -l <"$tmp/e.err")" -eq 1 &&
	    grep -q "$pat" "$tmp/e.err" && test ! -s "$tmp/e.out"; then
		ok "$d: status $want, one line"
	else
		not_ok "$d: status $got (want $want), $(wc -l <"$tmp/e.err") lines"
	fi
}

max=$(cat /proc/sys/kernel/pid_max 2>/dev/null || echo 4194304)
expect_error "no such process" 1 "^parkstat: no such process: $((max + 1))\$" \
	-p $((max + 1))

sleep 10 &
sleeper=$!
bg_pids="$bg_pids $sleeper"
expect_error "a process without statistics" 1 \
	"^parkstat: process $sleeper does not export statistics (run it with PARKINGLOT_STATS=1 or under parkstat --)\$" \
	-p $sleeper

# An object of another layout version (here 99): refused in one line.
{ printf 'PLSTATS\000\143\000\000\000'; head -c 4084 /dev/zero; } \
	>"/dev/shm/parkinglot.$sleeper"
expect_error "an object of an unknown layout version" 1 \
	"^parkstat: process $sleeper: /dev/shm/parkinglot.$sleeper: statistics layout version 99 (this parkstat reads version [0-9]*; use the parkstat of the same libparkinglot)\$" \
	-p $sleeper
rm -f "/dev/shm/parkinglot.$sleeper"

if test "$(id -u)" -eq 0; then
	# Root is never denied: ask as nobody, about root's object (0600),
	# with a copy of parkstat that nobody may run wherever the tree is.
	nobody_dir=$(mktemp -d /tmp/parkstat-nobody.XXXXXX)
	chmod 755 "$nobody_dir"
	cp "$PARKSTAT" "$nobody_dir/parkstat" && chmod 755 "$nobody_dir/parkstat"
	: >"/dev/shm/parkinglot.$sleeper" && chmod 600 "/dev/shm/parkinglot.$sleeper"
	printf '#!/bin/sh\nexec setpriv --reuid=65534 --regid=65534 --clear-groups %s "$@"\n' \
	    "$nobody_dir/parkstat" >"$nobody_dir/as-nobody"
	chmod 755 "$nobody_dir/as-nobody"
	saved=$PARKSTAT
	PARKSTAT=$nobody_dir/as-nobody
	expect_error "no permission" 1 "permission denied" -p $sleeper
	PARKSTAT=$saved
	rm -f "/dev/shm/parkinglot.$sleeper"
	rm -rf "$nobody_dir"
else
	# An object this user cannot read stands for another user's.
	: >"/dev/shm/parkinglot.$sleeper" && chmod 000 "/dev/shm/parkinglot.$sleeper"
	expect_error "no permission" 1 "permission denied" -p $sleeper
	rm -f "/dev/shm/parkinglot.$sleeper"
fi
kill $sleeper 2>/dev/null

expect_error "a malformed process id" 2 "invalid process id 'abc'" -p abc
expect_error "an unknown option" 2 "invalid option '--bogus'" --bogus
expect_error "an unknown short option" 2 "invalid option '-z'" -z -p 1
expect_error "an argument to a long option without one" 2 \
	"^parkstat: option '--json' takes no argument" --json=yes -p 1
expect_error "a missing argument" 2 "needs an argument" -p
expect_error "a malformed interval" 2 "invalid interval" -p 1 -i soon
expect_error "a zero interval" 2 "invalid interval" -p 1 -i 0
expect_error "a malformed count" 2 "invalid number" -n many -p 1
expect_error "a malformed sort key" 2 "invalid sort key" -s size -p 1
expect_error "a malformed number of call sites" 2 "invalid number of call sites" \
	--stacks -1 -- true
expect_error "a malformed sampling interval" 2 "invalid sampling interval" \
	--sample often -- true
expect_error "--sample with -p" 2 "is for a command" --sample 4 -p 1
expect_error "--deadlock with -p" 2 "is for a command" --deadlock -p 1
expect_error "--no-preload with -p" 2 "is for a command" -p 1 --no-preload
expect_error "-i without -p" 2 "needs -p" -i 1 -- true
expect_error "-p with a command" 2 "not both" -p 1 -- true
expect_error "nothing to do" 2 "no command"

run "$PARKSTAT" --help >"$tmp/help" 2>&1
status=$?
check "--help: status 0 (got $status) and a usage" \
	grep -q '^Usage: parkstat' "$tmp/help"

echo "1..$n"
exit 0
