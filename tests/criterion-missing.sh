#!/bin/sh
# SPDX-License-Identifier: MIT
# Run by `make check` instead of the Criterion suites when configure did
# not find Criterion: fail, naming the package to install.
echo "make check needs Criterion: apt-get install libcriterion-dev (then run ./configure again)" >&2
echo "Bail out! make check needs Criterion: apt-get install libcriterion-dev"
exit 1
