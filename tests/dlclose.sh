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
# Built with jemalloc, the library needs it loaded at start-up: its
# thread-local storage (initial-exec) cannot come with a dlopen ("cannot
# allocate memory in static TLS block").  Preload it, as a program that
# uses jemalloc has it.
jemalloc=$(ldd "$so" 2>/dev/null |
	sed -n 's/.*libjemalloc[^ ]* => \([^ ]*\).*/\1/p')
echo "1..1"
ok "threads that used the library exit after its dlclose" sh -c \
	'${4:+env LD_PRELOAD="$4"} "$1" "$2" >"$3/out" 2>"$3/err"' \
	sh tests/dlclose "$so" "$tmp" "$jemalloc"
