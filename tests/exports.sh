#!/bin/sh
# SPDX-License-Identifier: MIT
# TAP test: the shared object exports pl_* symbols and nothing else (the
# version node PARKINGLOT_0 of lib/libparkinglot.map aside).  Run from the
# build directory by `make check`; NM comes from configure.
set -u
so=lib/.libs/libparkinglot.so
nm=${NM:-nm}

echo "1..2"
if test ! -f "$so"; then
	echo "ok 1 # SKIP $so not built (--disable-shared)"
	echo "ok 2 # SKIP $so not built (--disable-shared)"
	exit 0
fi

# "ADDRESS TYPE NAME[@@VERSION]" -> NAME
syms=$($nm -D --defined-only "$so" | awk 'NF >= 3 { print $3 }' |
	sed 's/@.*//' | sort -u) || {
	echo "not ok 1 - $nm -D failed on $so"
	echo "not ok 2 - $nm -D failed on $so"
	exit 0
}

bad=$(printf '%s\n' "$syms" | grep -v -e '^pl_' -e '^PARKINGLOT_0$' -e '^$')
if test -z "$bad"; then
	echo "ok 1 - only pl_* exported"
else
	echo "not ok 1 - symbols exported that do not start with pl_:"
	printf '%s\n' "$bad" | sed 's/^/#   /'
fi

missing=
for s in pl_park pl_unpark_one pl_unpark_requeue_token pl_mutex_timedlock \
    pl__mutex_lock_slow \
    pl_version pl_rmutex_init pl_rmutex_timedlock pl__rmutex_lock_slow \
    pl__once_slow pl__bitlock_lock_slow pl__bitlock_unlock_slow \
    pl__bitlock_bad_args; do
	printf '%s\n' "$syms" | grep -qx "$s" || missing="$missing $s"
done
if test -z "$missing"; then
	echo "ok 2 - the public functions are exported"
else
	echo "not ok 2 - not exported:$missing"
fi
