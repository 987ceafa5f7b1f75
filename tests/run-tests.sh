#!/bin/bash
# Runs every test stage after `make check` has built everything; prints one
# line per case and ends with "N passed, M failed, K skipped".
set -u
cd "$(dirname "$0")/.."

B=build
BA=build-address
RUN=$B/bin/crane-run
PROGS=$B/tests/programs
LOGDIR=$B/test-logs
ASAN_LIB=$(gcc -print-file-name=libasan.so)
mkdir -p "$LOGDIR"
pass=0
fail=0
skip=0
unrun=0
# For developers: CRANE_TEST_ONLY=REGEX runs only the cases whose names
# match (the others are counted as not run, never as passed or skipped).
ONLY=${CRANE_TEST_ONLY:-}

# Every case runs with private state: HOME, TMPDIR and the XDG folders in a
# fresh folder of its own, removed after it, so that third-party programs
# (hashcat's sessions and locks, pyopencl's cache) share nothing with
# another case or another run on the machine; PoCL's kernel cache is this
# checkout's (build/pocl-cache), kept between cases and runs.
POCL_CACHE_DIR=$PWD/$B/pocl-cache
mkdir -p "$POCL_CACHE_DIR"
export POCL_CACHE_DIR
# A case is ended after CASE_TIMEOUT seconds (300) in which neither its log
# nor its private folder changed, or after CASE_CAP seconds (3600) in all;
# tests/wait.sh's waits add a line to the log (CRANE_WAIT_LOG) every 30 s
# while what they wait for moves, so a slow but working case is never cut
# short.
. tests/wait.sh
# The runner: case_, skip_, fuzz_case (and case_run, case_watch under them).
. tests/runner.sh
# What cases run: rehome_case, same_output, ... (exported).
. tests/case-checks.sh
export RUN B BA PROGS

# The case table, stage by stage; each stage prints its "# ..." heading.
. tests/cases-local.sh
. tests/cases-remote.sh
. tests/cases-daemons.sh

total=$((pass + fail + skip))
[ $unrun -eq 0 ] ||
    echo "# CRANE_TEST_ONLY=$ONLY: $unrun cases not run"
echo "$pass passed, $fail failed, $skip skipped (of $total)"
[ $fail -eq 0 ]
