#!/bin/bash
# SPDX-License-Identifier: MIT
# TAP test: the Debian packages of debian/, built, checked and used as a
# user of the distribution would use them.
#
#   bash tests/debian-package.sh     (also `make check-deb`; .ci/run runs it)
#
# 1. exports the committed tree (git archive HEAD) to a temporary
#    directory and builds the binary packages there with
#    `dpkg-buildpackage -us -uc -b`;
# 2. runs lintian on the .changes: an error fails, warnings are listed
#    (debian/README.source says why each one that lintian shows stays);
# 3. checks what each package holds;
# 4. installs them with dpkg -i, builds a C and a C++ program against the
#    installed files with `pkg-config --cflags --libs parkinglot` and runs
#    them, links libparkinglot.a and the drop-in, and runs /usr/bin/parkstat;
# 5. purges the packages again, also when a step failed or the test is
#    interrupted (a trap), so that the machine is left as it was.
#
# It installs system packages, so it needs root (or sudo without a
# password), and it refuses to run when any of the packages is installed
# already: it would replace and then remove it.  Never part of `make
# check`.  The upstream suite does not run in the package build by
# default: .ci/run has just run it on the same sources (set DEB_CHECK=yes
# to run it there too, some 3 minutes more).
#
# Environment:
#   DEB_TREE=worktree  build the files git tracks as the working tree has
#                      them (uncommitted changes too) instead of HEAD
#   DEB_CHECK=yes      run the upstream test suite in the package build
#   DEB_KEEP=DIR       copy the .debs, the .changes, the build log and
#                      lintian's report to DIR
set -u

top=$(cd "$(dirname "$0")/.." && pwd)
pkgs=(libparkinglot0 libparkinglot-pthread0 libparkinglot-dev
	parkinglot-tools)
n=0
failed=0

# ok DESC COMMAND...: one TAP line from the command's status; on failure
# the tail of $log as comments.
log=/dev/null
ok() {
	local desc=$1
	shift
	n=$((n + 1))
	if "$@"; then
		echo "ok $n - $desc"
		return 0
	fi
	echo "not ok $n - $desc"
	failed=$((failed + 1))
	if [ -s "$log" ]; then
		tail -n 40 "$log" | sed 's/^/#   /'
	fi
	return 1
}

# bail REASON: the rest cannot run; the trap cleans up.
bail() {
	echo "not ok $((n + 1)) - $1"
	echo "1..$((n + 1))"
	exit 1
}

# ---------------------------------------------------------------------
# Who may install packages, and what this test needs.

asroot=()
if [ "$(id -u)" -ne 0 ]; then
	if command -v sudo >/dev/null 2>&1 && sudo -n true 2>/dev/null; then
		asroot=(sudo -n)
	else
		echo "1..0 # SKIP installs packages: needs root or sudo -n"
		exit 0
	fi
fi

missing=
for t in git dpkg-buildpackage dh lintian pkg-config cc c++; do
	command -v "$t" >/dev/null 2>&1 || missing="$missing $t"
done
if [ -n "$missing" ]; then
	echo "not ok 1 - missing:$missing (./bootstrap installs them)"
	echo "1..1"
	exit 1
fi

# debian/ is not in the release tarball: the packages build from git.
if ! git -C "$top" rev-parse --verify -q HEAD >/dev/null 2>&1 ||
	[ ! -f "$top/debian/control" ]; then
	echo "1..0 # SKIP not a git checkout with debian/ (a release tarball?)"
	exit 0
fi

# installed PKG: whether dpkg has PKG in any state but "not installed".
installed() {
	local st
	st=$(dpkg-query -W -f='${db:Status-Status}' "$1" 2>/dev/null) ||
		return 1
	[ -n "$st" ] && [ "$st" != not-installed ]
}

already=
for p in "${pkgs[@]}"; do
	installed "$p" && already="$already $p"
done
if [ -n "$already" ]; then
	echo "not ok 1 - installed before the test:$already; this test" \
		"would replace, then purge them: dpkg --purge$already, then" \
		"run it again"
	echo "1..1"
	exit 1
fi

work=$(mktemp -d "${TMPDIR:-/tmp}/parkinglot-deb.XXXXXX")
we_installed=no

# purge: remove every package of ours that dpkg knows, whatever its
# state (a failed dpkg -i can leave some unpacked).
purge() {
	local p present=()
	for p in "${pkgs[@]}"; do
		installed "$p" && present+=("$p")
	done
	[ ${#present[@]} -eq 0 ] ||
		"${asroot[@]}" dpkg --purge "${present[@]}" >"$work/purge.log" 2>&1
}

cleanup() {
	if [ "$we_installed" = yes ]; then
		purge || echo "# purging failed: see dpkg --purge ${pkgs[*]}"
	fi
	rm -rf "$work"
}
trap cleanup EXIT
trap 'exit 130' INT
trap 'exit 143' TERM

# ---------------------------------------------------------------------
# 1. Build.

src=$work/src
mkdir "$src"
log=$work/export.log
if [ "${DEB_TREE:-}" = worktree ]; then
	what="the files git tracks, as in the working tree"
	export_tree() {
		(cd "$top" && git ls-files -z | tar --null -T - -cf -) |
			tar -xf - -C "$src" 2>"$log"
	}
else
	what="the committed tree (git archive HEAD)"
	export_tree() {
		(cd "$top" && git archive --format=tar HEAD) |
			tar -xf - -C "$src" 2>"$log"
	}
fi
ok "export $what" export_tree || bail "no tree to build"

version=$(cd "$src" && dpkg-parsechangelog -S Version 2>/dev/null)
arch=$(dpkg --print-architecture)
multiarch=$(dpkg-architecture -qDEB_HOST_MULTIARCH 2>/dev/null)
echo "# libparkinglot $version for $arch ($multiarch), in $work"

log=$work/build.log
build() {
	local opts=("-j2")
	if [ "${DEB_CHECK:-}" = yes ]; then
		export DEB_BUILD_OPTIONS="${DEB_BUILD_OPTIONS:-}"
	else
		export DEB_BUILD_OPTIONS="${DEB_BUILD_OPTIONS:+$DEB_BUILD_OPTIONS }nocheck"
		opts+=("-Pnocheck")
	fi
	(cd "$src" && dpkg-buildpackage -us -uc -b "${opts[@]}") \
		</dev/null >"$log" 2>&1
}
ok "dpkg-buildpackage -us -uc -b" build || bail "the packages did not build"

debs_present() {
	local p
	for p in "${pkgs[@]}"; do
		[ -f "$work/${p}_${version}_${arch}.deb" ] || {
			echo "no ${p}_${version}_${arch}.deb" >>"$log"
			return 1
		}
	done
}
ok "the packages ${pkgs[*]} were built" debs_present ||
	bail "packages missing"
changes=$work/libparkinglot_${version}_${arch}.changes

# ---------------------------------------------------------------------
# 2. lintian.

log=$work/lintian.log
run_lintian() {
	lintian --fail-on error --info "$changes" >"$log" 2>&1
}
if ok "lintian: no errors" run_lintian; then
	grep -E '^[EWI]: ' "$log" | sed 's/^/#   lintian: /'
fi

# ---------------------------------------------------------------------
# 3. Contents.

# has PKG PATTERN...: each (extended) regular expression matches a path
# in PKG's .deb.
has() {
	local p=$1 re
	shift
	dpkg-deb -c "$work/${p}_${version}_${arch}.deb" |
		awk '{ print $6 }' | sed 's,^\./,/,' >"$work/$p.list"
	for re in "$@"; do
		grep -Eq "^$re\$" "$work/$p.list" || {
			echo "$p: nothing matches $re" >>"$log"
			return 1
		}
	done
}
# lacks PKG PATTERN: no path of PKG's .deb matches.
lacks() {
	! grep -Eq "^$2\$" "$work/$1.list" || {
		echo "$1: has $2" >>"$log"
		return 1
	}
}
log=$work/contents.log
: >"$log"
L=/usr/lib/$multiarch
lib_contents() {
	has libparkinglot0 "$L/libparkinglot\.so\.0" \
		"$L/libparkinglot\.so\.0\.[0-9]+\.[0-9]+" \
		/usr/share/doc/libparkinglot0/copyright &&
		lacks libparkinglot0 "$L/libparkinglot\.so" &&
		lacks libparkinglot0 ".*pthread.*" &&
		lacks libparkinglot0 "/usr/(include|bin|share/man)/.+"
}
dropin_contents() {
	has libparkinglot-pthread0 "$L/libparkinglot-pthread\.so\.0" \
		"$L/libparkinglot-pthread\.so\.0\.[0-9]+\.[0-9]+" &&
		lacks libparkinglot-pthread0 "$L/libparkinglot\.so.*" &&
		lacks libparkinglot-pthread0 "$L/libparkinglot-pthread\.so" &&
		lacks libparkinglot-pthread0 "/usr/(include|bin|share/man)/.+"
}
dev_contents() {
	has libparkinglot-dev /usr/include/parkinglot\.h \
		/usr/include/parkinglot/mutex\.h \
		/usr/include/parkinglot/version\.h \
		"$L/libparkinglot\.so" "$L/libparkinglot\.a" \
		"$L/libparkinglot-pthread\.so" "$L/libparkinglot-pthread\.a" \
		"$L/pkgconfig/parkinglot\.pc" \
		"$L/pkgconfig/parkinglot-pthread\.pc" \
		/usr/share/man/man3/pl_mutex\.3\.gz \
		/usr/share/man/man3/pl_park\.3\.gz \
		/usr/share/man/man7/libparkinglot-pthread\.7\.gz &&
		lacks libparkinglot-dev ".*\.la" &&
		lacks libparkinglot-dev ".*\.so\.0.*"
}
tools_contents() {
	has parkinglot-tools /usr/bin/parkstat \
		/usr/share/man/man1/parkstat\.1\.gz
}
ok "libparkinglot0 holds libparkinglot.so.0 and no development file" \
	lib_contents
ok "libparkinglot-pthread0 holds the drop-in libparkinglot-pthread.so.0" \
	dropin_contents
ok "libparkinglot-dev holds the headers, .so links, .a, .pc and man pages" \
	dev_contents
ok "parkinglot-tools holds parkstat and parkstat(1)" tools_contents

# ---------------------------------------------------------------------
# 4. Install and use.

log=$work/install.log
install_debs() {
	local p debs=()
	for p in "${pkgs[@]}"; do
		debs+=("$work/${p}_${version}_${arch}.deb")
	done
	we_installed=yes
	"${asroot[@]}" dpkg -i "${debs[@]}" </dev/null >"$log" 2>&1
}
ok "dpkg -i ${pkgs[*]}" install_debs || bail "the packages did not install"

# Programs are built in a directory of their own, with none of the
# variables that could point the compiler or the loader elsewhere than
# the installed files.
use=$work/use
mkdir "$use"
cd "$use" || bail "no $use"
unset PKG_CONFIG_PATH PKG_CONFIG_LIBDIR CPATH C_INCLUDE_PATH \
	CPLUS_INCLUDE_PATH LIBRARY_PATH LD_LIBRARY_PATH LD_PRELOAD

cat >use.c <<'EOF'
/* Four threads count under a pl_mutex_t, meet on a pl_cond_t, share a
 * pl_rwlock_t and a pl_once_t: the installed headers and library. */
#include <parkinglot.h>
#include <pthread.h>
#include <stdio.h>
#include <string.h>

enum { THREADS = 4, ROUNDS = 100000 };

static pl_mutex_t lock = PL_MUTEX_INITIALIZER;
static pl_cond_t all_done = PL_COND_INITIALIZER;
static pl_rwlock_t rw = PL_RWLOCK_INITIALIZER;
static pl_once_t once = PL_ONCE_INIT;
static long counter, done, inits, reads;

static void
init(void *arg)
{
	(void)arg;
	inits++;
}

static void *
worker(void *arg)
{
	(void)arg;
	pl_once(&once, init, NULL);
	for (int i = 0; i < ROUNDS; i++) {
		pl_mutex_lock(&lock);
		counter++;
		pl_mutex_unlock(&lock);
	}
	pl_rwlock_rdlock(&rw);
	__atomic_fetch_add(&reads, 1, __ATOMIC_RELAXED);
	pl_rwlock_rdunlock(&rw);
	pl_mutex_lock(&lock);
	done++;
	pl_cond_broadcast(&all_done);
	pl_mutex_unlock(&lock);
	return NULL;
}

int
main(void)
{
	pthread_t t[THREADS];
	for (int i = 0; i < THREADS; i++)
		pthread_create(&t[i], NULL, worker, NULL);
	pl_mutex_lock(&lock);
	while (done < THREADS)
		pl_cond_wait(&all_done, &lock);
	pl_mutex_unlock(&lock);
	for (int i = 0; i < THREADS; i++)
		pthread_join(t[i], NULL);
	pl_rwlock_wrlock(&rw);
	pl_rwlock_wrunlock(&rw);
	printf("%s %ld %ld %ld\n", pl_version(), counter, inits, reads);
	return strcmp(pl_version(), PL_VERSION_STRING) != 0 ||
	    counter != (long)THREADS * ROUNDS || inits != 1 ||
	    reads != THREADS;
}
EOF
want_c="$version $((4 * 100000)) 1 4"

cat >use.cc <<'EOF'
// <parkinglot.hpp>, installed: pl::mutex and pl::recursive_mutex with
// std::lock_guard, std::unique_lock, std::lock and std::thread.
#include <parkinglot.h>
#include <parkinglot.hpp>

#include <cstdio>
#include <mutex>
#include <thread>
#include <vector>

namespace {

using mutex = pl::mutex;
using recursive_mutex = pl::recursive_mutex;

struct counters {
	mutex a, b;
	long under_a = 0, under_both = 0;
	recursive_mutex r;
	long under_r = 0;
};

} // namespace

int
main()
{
	static_assert(sizeof(pl_mutex_t) == 1, "a one-byte mutex");
	counters c;
	std::vector<std::thread> threads;
	for (int i = 0; i < 4; i++)
		threads.emplace_back([&c, i] {
			for (int j = 0; j < 50000; j++) {
				std::lock_guard<mutex> g(c.a);
				c.under_a++;
			}
			for (int j = 0; j < 10000; j++) {
				// Opposite orders: std::lock avoids the deadlock.
				std::unique_lock<mutex> x(i % 2 ? c.a : c.b,
				    std::defer_lock);
				std::unique_lock<mutex> y(i % 2 ? c.b : c.a,
				    std::defer_lock);
				std::lock(x, y);
				c.under_both++;
			}
			for (int j = 0; j < 1000; j++) {
				std::lock_guard<recursive_mutex> outer(c.r);
				std::lock_guard<recursive_mutex> inner(c.r);
				c.under_r++;
			}
		});
	for (auto &t : threads)
		t.join();
	std::printf("%s %ld %ld %ld\n", pl_version(), c.under_a, c.under_both,
	    c.under_r);
	return c.under_a == 4 * 50000 && c.under_both == 4 * 10000 &&
	        c.under_r == 4 * 1000
	    ? 0
	    : 1;
}
EOF
want_cxx="$version $((4 * 50000)) $((4 * 10000)) $((4 * 1000))"

# A program that knows nothing of libparkinglot: which library serves
# its pthread_mutex_lock (libparkinglot-pthread(7), "IS IT ACTIVE?").
cat >plain.c <<'EOF'
#define _GNU_SOURCE
#include <dlfcn.h>
#include <pthread.h>
#include <stdio.h>

static pthread_mutex_t m = PTHREAD_MUTEX_INITIALIZER;

int
main(void)
{
	Dl_info info;
	pthread_mutex_lock(&m);
	pthread_mutex_unlock(&m);
	if (!dladdr((void *)pthread_mutex_lock, &info) || !info.dli_fname)
		return 1;
	printf("%s\n", info.dli_fname);
	return 0;
}
EOF

log=$use/out
# runs WANT CMD...: CMD succeeds and prints WANT exactly; prints RE
# CMD...: what it prints matches the extended regular expression RE whole.
runs() {
	local want=$1 got
	shift
	got=$("$@" 2>"$use/err") || {
		echo "$* failed: $(cat "$use/err")" >"$log"
		return 1
	}
	[ "$got" = "$want" ] || {
		printf '%s printed "%s", not "%s"\n' "$*" "$got" "$want" >"$log"
		return 1
	}
}
prints() {
	local re=$1 got
	shift
	got=$("$@" 2>"$use/err") || {
		echo "$* failed: $(cat "$use/err")" >"$log"
		return 1
	}
	printf '%s\n' "$got" | grep -Eqx "$re" || {
		printf '%s printed "%s", which does not match %s\n' \
			"$*" "$got" "$re" >"$log"
		return 1
	}
}
# builds CMD...: the compiler command succeeds.
builds() {
	"$@" >"$log" 2>&1
}
# The installed libraries' directory as the loader may name it: with
# /usr merged, its cache has /lib/MULTIARCH as well as /usr/lib/MULTIARCH.
Lre="(/usr)?/lib/$multiarch"
# uses PROG LIB: the loader maps the installed LIB for PROG.
uses() {
	ldd "$1" >"$log" 2>&1 && grep -Eq "=> $Lre/$2 " "$log"
}

# Word splitting of $(pkg-config ...) is meant below.
# shellcheck disable=SC2046
build_c() {
	builds cc -std=c11 -pedantic -Wall -Wextra -Werror -O2 -o use-c use.c \
		$(pkg-config --cflags --libs parkinglot) -pthread
}
run_c() {
	uses ./use-c libparkinglot.so.0 && runs "$want_c" ./use-c
}
# shellcheck disable=SC2046
build_cxx() {
	builds c++ -std=c++11 -Wall -Wextra -Werror -O2 -o use-cxx use.cc \
		$(pkg-config --cflags --libs parkinglot) -pthread
}
run_cxx() {
	uses ./use-cxx libparkinglot.so.0 && runs "$want_cxx" ./use-cxx
}
# libparkinglot.a, and what pkg-config --static says it needs.
# shellcheck disable=SC2046
static_c() {
	builds cc -std=c11 -O2 -o use-static use.c \
		$(pkg-config --cflags parkinglot) -Wl,-Bstatic \
		$(pkg-config --static --libs-only-L --libs-only-l parkinglot) \
		-Wl,-Bdynamic $(pkg-config --static --libs-only-other parkinglot) &&
		! uses ./use-static libparkinglot.so.0 &&
		runs "$want_c" ./use-static
}
preloaded() {
	builds cc -O2 -o plain plain.c -pthread -ldl &&
		runs "$L/libparkinglot-pthread.so.0" \
			env LD_PRELOAD="$L/libparkinglot-pthread.so.0" ./plain
}
# shellcheck disable=SC2046
linked_ahead() {
	builds cc -O2 -o plain-linked plain.c \
		$(pkg-config --libs parkinglot-pthread) -pthread -ldl &&
		prints "$Lre/libparkinglot-pthread\.so\.0" ./plain-linked
}
parkstat_help() {
	/usr/bin/parkstat --help >"$log" 2>&1 && grep -q parkstat "$log"
}
# parkstat -- CMD preloads the drop-in from where the package put it
# and reports when CMD exits.
parkstat_run() {
	/usr/bin/parkstat -- true >"$log" 2>&1 &&
		grep -q "exited with status 0" "$log"
}
man_pages() {
	! command -v man >/dev/null 2>&1 ||
		{ man -w pl_mutex >"$log" 2>&1 && man -w parkstat >>"$log" 2>&1; }
}

ok "pkg-config --modversion parkinglot says $version" \
	runs "$version" pkg-config --modversion parkinglot
ok "C: cc -std=c11 -pedantic -Werror use.c \$(pkg-config --cflags --libs parkinglot)" \
	build_c
ok "C: the program runs against the installed libparkinglot.so.0" run_c
ok "C++ (<parkinglot.hpp>): c++ -std=c++11 -Werror use.cc \$(pkg-config --cflags --libs parkinglot)" \
	build_cxx
ok "C++: the program runs against the installed libparkinglot.so.0" run_cxx
ok "C, static: libparkinglot.a linked in (pkg-config --static)" static_c
ok "the drop-in preloaded serves pthread_mutex_lock" preloaded
ok "the drop-in linked ahead of libc (pkg-config --libs parkinglot-pthread)" \
	linked_ahead
ok "/usr/bin/parkstat --help" parkstat_help
ok "/usr/bin/parkstat -- true: a report, exit status 0" parkstat_run
ok "man -w finds pl_mutex(3) and parkstat(1)" man_pages
cd "$work" || true

# ---------------------------------------------------------------------
# 5. Purge, and nothing of ours is left.

log=$work/purge.log
gone() {
	local p
	for p in "${pkgs[@]}"; do
		installed "$p" && {
			echo "$p is still installed" >>"$log"
			return 1
		}
	done
	! ls "$L"/libparkinglot* /usr/include/parkinglot* /usr/bin/parkstat \
		>>"$log" 2>&1
}
purge_all() {
	purge && gone
}
if ok "dpkg --purge ${pkgs[*]}: nothing of them left" purge_all; then
	we_installed=no
fi

if [ -n "${DEB_KEEP:-}" ]; then
	mkdir -p "$DEB_KEEP" &&
		cp "$work"/*.deb "$work"/*.changes "$work"/*.buildinfo \
			"$work"/build.log "$work"/lintian.log "$DEB_KEEP"/ &&
		echo "# kept in $DEB_KEEP"
fi

echo "1..$n"
[ "$failed" -eq 0 ]
