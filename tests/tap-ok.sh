# SPDX-License-Identifier: MIT
# Sourced by the TAP shell tests: ok DESC COMMAND..., one TAP line from
# a command's status, numbered from $n; on failure the last run's output
# ("$tmp/out" and "$tmp/err", which the test writes) as TAP comments.
n=0
ok() {
	n=$((n + 1))
	desc=$1
	shift
	if "$@"; then
		echo "ok $n - $desc"
	else
		echo "not ok $n - $desc"
		sed 's/^/#   /' "$tmp/out" "$tmp/err"
	fi
}
