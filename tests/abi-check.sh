#!/bin/bash
# SPDX-License-Identifier: MIT
# TAP test: the ABI of the built libraries is the one abi/ describes, or
# the libtool version-info says how it changed.  doc/ABI.md states the
# rule; this script is its letter.
#
#   bash tests/abi-check.sh [BUILDDIR]            (make check-abi)
#   bash tests/abi-check.sh --update [BUILDDIR]   (make update-abi)
#   bash tests/abi-check.sh --update --force [BUILDDIR]
#
# BUILDDIR is where the libraries were built (default: the source tree,
# as ./bootstrap builds).  abi/ holds the ABI of the libraries as of the
# -version-info in abi/version-info:
#   abi/libparkinglot.abi          abidw of libparkinglot.so, with the
#                                  public headers (include/) as the only
#                                  public types
#   abi/libparkinglot-pthread.abi  abidw of the drop-in (glibc's types)
#   abi/encodings.txt              what tests/abi-encodings.c prints: the
#                                  lock-word bits, tokens, initializers
#                                  and layouts that the inline fast paths
#                                  compile into programs, and no ELF
#                                  symbol or DWARF type shows
#   abi/version-info               current:revision:age of configure.ac
#                                  when the three were made
#
# The check: the libraries' SONAMEs are those configure.ac's version-info
# gives (the build is current); abidiff finds no change between each
# description and the library's ABI, nor diff between the encodings; and
# configure.ac's current and age are those of abi/version-info (revision
# may differ: it counts releases whose interfaces did not change).  A
# change fails the check in any case, and the message says what to do:
# bump -version-info as the change requires (interfaces only added:
# current+1, revision 0, age+1; any interface removed or changed, a lock
# encoding or a layout changed: current+1, revision 0, age 0), then `make
# update-abi`.  --update rewrites abi/ from the build, and refuses to when
# the ABI changed but configure.ac's version-info is not the one the
# rule gives; --force records whatever the build has (for a description
# that a newer libabigail or compiler writes differently; never to skip a
# bump).  Needs abidw and abidiff (abigail-tools) and a build with debug
# information (-g, as the default CFLAGS have).
set -u

update=no
force=no
while [ $# -gt 0 ]; do
	case $1 in
	--update) update=yes ;;
	--force) force=yes ;;
	-*)
		echo "usage: $0 [--update [--force]] [BUILDDIR]" >&2
		exit 2
		;;
	*) break ;;
	esac
	shift
done
srcdir=$(cd "$(dirname "$0")/.." && pwd)
builddir=$(cd "${1:-$srcdir}" && pwd) || exit 2
abi=$srcdir/abi
# CC as configure found it, which may carry options ("gcc -std=gnu11").
read -r -a cc <<<"${CC:-cc}"

n=0
failed=0
tmp=$(mktemp -d "${TMPDIR:-/tmp}/parkinglot-abi.XXXXXX")
trap 'rm -rf "$tmp"' EXIT

pass() {
	n=$((n + 1))
	echo "ok $n - $*"
}
fail() {
	n=$((n + 1))
	failed=$((failed + 1))
	echo "not ok $n - $*"
}
comment() {
	sed 's/^/#   /'
}
# same DESC, differs DESC: the outcome of a comparison; a test line when
# checking, a comment when updating (what the update goes on to judge).
same() {
	if [ "$update" = yes ]; then echo "# $1"; else pass "$1"; fi
}
differs() {
	if [ "$update" = yes ]; then echo "# $1"; else fail "$1"; fi
}
finish() {
	echo "1..$n"
	[ "$failed" -eq 0 ]
	exit
}

for t in abidw abidiff readelf "${cc[0]}"; do
	if ! command -v "$t" >/dev/null 2>&1; then
		fail "$t not found (abigail-tools, binutils; ./bootstrap installs them)"
		finish
	fi
done

# ---------------------------------------------------------------------
# The version-info: configure.ac's, and the one abi/ was made for.

m4_value() {
	sed -n "s/^m4_define(\[$1\], \[\([0-9]*\)\])\$/\1/p" \
		"$srcdir/configure.ac"
}
cur=$(m4_value pl_lt_current)
rev=$(m4_value pl_lt_revision)
age=$(m4_value pl_lt_age)
if [ -z "$cur" ] || [ -z "$rev" ] || [ -z "$age" ]; then
	fail "no m4_define of pl_lt_current, pl_lt_revision, pl_lt_age in configure.ac"
	finish
fi
vi=$cur:$rev:$age
major=$((cur - age))

have_record=no
if [ -f "$abi/version-info" ]; then
	rec=$(grep -v '^#' "$abi/version-info" | head -n 1)
	IFS=: read -r rcur rrev rage <<<"$rec"
	case $rcur:$rrev:$rage in
	*[!0-9:]* | :* | *::* | *:) ;;
	*) have_record=yes ;;
	esac
fi
if [ "$have_record" = no ] && [ "$update" = no ]; then
	fail "abi/version-info missing or malformed: make update-abi makes it"
	finish
fi

# ---------------------------------------------------------------------
# The built libraries are those of this version-info.

libs=(libparkinglot libparkinglot-pthread)
soname() {
	readelf -d "$1" 2>/dev/null |
		sed -n 's/.*Library soname: \[\(.*\)\].*/\1/p'
}
for lib in "${libs[@]}"; do
	so=$builddir/lib/.libs/$lib.so
	if [ ! -f "$so" ]; then
		echo "1..0 # SKIP $so not built (--disable-shared, or not built yet)"
		exit 0
	fi
	got=$(soname "$so")
	if [ "$got" = "$lib.so.$major" ]; then
		pass "$lib.so is $got, as version-info $vi gives"
	else
		fail "$lib.so is '$got', but version-info $vi gives $lib.so.$major: rebuild (make)"
	fi
	if ! readelf -S "$so" | grep -q '\.debug_info'; then
		fail "$so has no debug information: build with -g (CFLAGS)"
	fi
done
[ "$failed" -eq 0 ] || finish

# ---------------------------------------------------------------------
# The ABI now, as abidw and tests/abi-encodings.c see it.

abidw_common=(--drop-undefined-syms --exported-interfaces-only
	--no-corpus-path --no-comp-dir-path --no-show-locs
	--type-id-style hash)
describe() {
	case $1 in
	libparkinglot)
		abidw "${abidw_common[@]}" --hd "$srcdir/include" \
			--drop-private-types "$2"
		;;
	*)
		abidw "${abidw_common[@]}" "$2"
		;;
	esac
}
for lib in "${libs[@]}"; do
	if ! describe "$lib" "$builddir/lib/.libs/$lib.so" >"$tmp/$lib.abi" \
		2>"$tmp/$lib.err"; then
		fail "abidw $lib.so failed"
		comment <"$tmp/$lib.err"
		finish
	fi
done
if ! "${cc[@]}" -std=c11 -Wall -Wextra -Werror -pthread -I"$srcdir/include" \
	-I"$builddir/include" -o "$tmp/abi-encodings" \
	"$srcdir/tests/abi-encodings.c" >"$tmp/cc.err" 2>&1 ||
	! "$tmp/abi-encodings" >"$tmp/encodings.txt"; then
	fail "tests/abi-encodings.c did not build or run"
	comment <"$tmp/cc.err"
	finish
fi

arch_of() {
	sed -n "1s/.* architecture='\([^']*\)'.*/\1/p" "$1"
}

# ---------------------------------------------------------------------
# Compare.  kind: none, added (interfaces only added) or changed
# (anything else: removed, changed, a lock encoding, a layout).

kind=none
worse() {
	case $1 in
	changed) kind=changed ;;
	added) [ "$kind" = changed ] || kind=added ;;
	esac
}

if [ "$have_record" = yes ]; then
	for lib in "${libs[@]}"; do
		desc=$abi/$lib.abi
		if [ ! -f "$desc" ]; then
			differs "abi/$lib.abi missing: make update-abi makes it"
			worse changed
			continue
		fi
		if [ "$(arch_of "$desc")" != "$(arch_of "$tmp/$lib.abi")" ]; then
			echo "1..0 # SKIP abi/ describes $(arch_of "$desc"), this" \
				"build is $(arch_of "$tmp/$lib.abi")"
			exit 0
		fi
		abidiff "$desc" "$tmp/$lib.abi" >"$tmp/$lib.diff" 2>&1
		st=$?
		if [ "$st" -eq 0 ]; then
			same "$lib: the ABI is as abi/$lib.abi describes"
			continue
		fi
		if [ $((st & 3)) -ne 0 ]; then
			fail "$lib: abidiff failed (status $st)"
			comment <"$tmp/$lib.diff"
			finish
		fi
		# Bit 8: abidiff knows it is incompatible.  Bit 4 alone: only
		# additions are compatible; any removed or changed function,
		# variable or symbol counts as a change.
		if [ $((st & 8)) -eq 0 ] &&
			! grep -Eq '[1-9][0-9]* (Removed|Changed)' "$tmp/$lib.diff" &&
			! grep -qi 'soname\|architecture' "$tmp/$lib.diff" &&
			grep -Eq '[1-9][0-9]* Added' "$tmp/$lib.diff"; then
			what=added
		else
			what=changed
		fi
		worse "$what"
		differs "$lib: the ABI differs from abi/$lib.abi ($what; abidiff status $st)"
		head -n 80 "$tmp/$lib.diff" | comment
	done

	if [ ! -f "$abi/encodings.txt" ]; then
		differs "abi/encodings.txt missing: make update-abi makes it"
		worse changed
	elif diff -u "$abi/encodings.txt" "$tmp/encodings.txt" \
		>"$tmp/encodings.diff"; then
		same "the lock encodings and layouts are those of abi/encodings.txt"
	else
		# New lines alone are new names; a line gone or changed is a
		# value that programs built before have compiled in.
		if grep -q '^-[^-]' "$tmp/encodings.diff"; then
			what=changed
		else
			what=added
		fi
		worse "$what"
		differs "the lock encodings or layouts differ from abi/encodings.txt ($what)"
		comment <"$tmp/encodings.diff"
	fi
fi

# ---------------------------------------------------------------------
# The rule.

if [ "$have_record" = yes ]; then
	case $kind in
	none) expect="$rcur:*:$rage" ;;
	added) expect="$((rcur + 1)):0:$((rage + 1))" ;;
	changed) expect="$((rcur + 1)):0:0" ;;
	esac
	# shellcheck disable=SC2254 # $expect is a pattern: "1:*:0"
	case $vi in
	$expect) rule_ok=yes ;;
	*) rule_ok=no ;;
	esac
fi

case $kind in
none) how="did not change" ;;
added) how="gained interfaces and lost or changed none" ;;
changed) how="changed: an interface removed or changed, or an encoding or layout" ;;
esac

record() {
	mkdir -p "$abi" &&
		cp "$tmp/libparkinglot.abi" "$abi/libparkinglot.abi" &&
		cp "$tmp/libparkinglot-pthread.abi" \
			"$abi/libparkinglot-pthread.abi" &&
		cp "$tmp/encodings.txt" "$abi/encodings.txt" &&
		{
			echo "# The libtool -version-info (current:revision:age) of"
			echo "# configure.ac that the descriptions of abi/ were made"
			echo "# for, by make update-abi (tests/abi-check.sh)."
			echo "$vi"
		} >"$abi/version-info"
}

if [ "$update" = yes ]; then
	if [ "$have_record" = no ] || [ "$force" = yes ]; then
		:
	elif [ "$kind" = none ] && [ "$rcur:$rage" = "$cur:$age" ]; then
		pass "abi/ is up to date (version-info $rec; configure.ac $vi)"
		finish
	elif [ "$rule_ok" = no ] && [ "$kind" != none ]; then
		fail "not recorded: since $rec the ABI $how, so configure.ac's" \
			"-version-info must be $expect, not $vi (doc/ABI.md)"
		finish
	elif [ "$kind" = none ] && [ "$cur" -lt "$rcur" ]; then
		fail "not recorded: version-info $vi goes back from $rec"
		finish
	fi
	if [ "$have_record" = no ]; then
		how="recorded for the first time"
	elif [ "$force" = yes ]; then
		how="recorded with --force; since $rec the ABI $how"
	else
		how="since $rec the ABI $how"
	fi
	if record; then
		pass "abi/ recorded for version-info $vi ($how):" \
			"commit abi/ with configure.ac"
	else
		fail "could not write abi/"
	fi
	finish
fi

if [ "$kind" = none ]; then
	if [ "$rule_ok" = yes ]; then
		pass "version-info $vi: current and age those of abi/ ($rec)"
	else
		fail "version-info $vi, but abi/ was made for $rec and the ABI" \
			"did not change: make update-abi records a bump for a" \
			"change no tool sees (the meaning of a call), else" \
			"configure.ac goes back to $rcur:*:$rage"
	fi
elif [ "$rule_ok" = yes ]; then
	fail "since abi/ ($rec) the ABI $how, and version-info is $vi," \
		"as the rule gives: now make update-abi, and commit abi/"
else
	fail "since abi/ ($rec) the ABI $how: set -version-info to" \
		"$expect in configure.ac (doc/ABI.md), rebuild, then make" \
		"update-abi; it is $vi"
fi
finish
