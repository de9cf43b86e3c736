#!/bin/sh
# SPDX-License-Identifier: MIT
# LOG_COMPILER of the test programs: runs one of them for automake's TAP
# driver, which reads TAP on stdout.
#
# The Criterion suites (tests/test_*) are asked for their TAP report on
# stdout; Criterion 2.4.1 takes "--tap=FILE" ("--tap" alone or "-" would
# mean stderr) and writes the report when the whole suite has run.  Its
# CRITERION_OUTPUTS variable would do the same, but leaks a string that
# LeakSanitizer then reports, failing every suite under
# --enable-sanitizer=address.  Other programs print TAP themselves and
# run as they are.
prog=$1
shift
case ${prog##*/} in
test_*) exec "$prog" --tap=/dev/stdout "$@" ;;
*) exec "$prog" "$@" ;;
esac
