#!/bin/sh
# SPDX-License-Identifier: MIT
# TAP test: the first call of each kind in a fresh process leaves errno as
# it was (tests/errno-first.c; its kind topology covers the topology
# reader on its own).  Run from the build directory by `make check`.
set -u
prog=tests/errno-first
tmp=$(mktemp -d) || exit 1
trap 'rm -rf "$tmp"' EXIT

. "$(dirname "$0")/tap-ok.sh"

kinds=$("$prog" --list) || exit 1
echo "1..$(echo "$kinds" | wc -l)"
for k in $kinds; do
	ok "$k leaves errno alone" sh -c \
		'"$1" "$2" >"$3/out" 2>"$3/err"' sh "$prog" "$k" "$tmp"
done
