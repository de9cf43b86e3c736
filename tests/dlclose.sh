#!/bin/sh
# SPDX-License-Identifier: MIT
# TAP test: dlopen the shared library of the build tree, use it from
# threads, dlclose it, then let those threads exit (tests/dlclose.c).  Run
# from the build directory by `make check`.
set -u
so=lib/.libs/libparkinglot.so
tmp=$(mktemp -d) || exit 1
trap 'rm -rf "$tmp"' EXIT

. "$(dirname "$0")/tap-ok.sh"

if test ! -f "$so"; then
	echo "1..0 # SKIP no shared library (configured --disable-shared)"
	exit 0
fi
echo "1..1"
ok "threads that used the library exit after its dlclose" sh -c \
	'"$1" "$2" >"$3/out" 2>"$3/err"' sh tests/dlclose "$so" "$tmp"
