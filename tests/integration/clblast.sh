#!/bin/bash
# CLBlast's own tests (Debian's `clblast-tests`) natively and under crane:
# every routine's count of passed, skipped and failed cases must be the
# same, and natively none fails.
#
#   clblast.sh shim | remote | switch EVERY
#
# The routines: axpy and dot (level 1, ~10-15 s each natively on two cores)
# and gemv (level 2, ~60 s), in every precision the device has; each test
# builds CLBlast's kernels, runs them over many sizes, layouts and
# strides and compares every result with the reference BLAS.  gemm (level
# 3) takes 6 minutes natively here and is left out for time.  Exits 77
# without clblast-tests.
set -u
cd "$(dirname "$0")/../.."

B=${B:-build}
. tests/integration/modes.sh
trap mode_stop EXIT
ROUTINES=${CLBLAST_ROUTINES:-"xaxpy xdot xgemv"}

mode_parse "$@" || { sed -n '2,6p' "$0"; exit 2; }
command -v clblast_test_xaxpy >/dev/null || {
    echo "clblast-tests is not installed (apt-get install clblast-tests)"
    exit 77
}
mode_start || exit 1

# The summary of one routine's run: each precision's counts, and the exit
# status (colours stripped).
summary() {
    local out rc
    out=$(mode_bounded 120 clblast nice -n 10 "$@" 2>&1)
    rc=$?
    echo "$out" | sed 's/\x1b\[[0-9;]*m//g' |
        grep -E "Starting tests for|All tests skipped|test\(s\) (passed|skipped|failed)" |
        sed 's/ Legend:$//; s/^[[:space:]]*//'
    echo "exit $rc"
}

ok=1
for r in $ROUTINES; do
    native=$(summary "clblast_test_$r")
    crane=$(summary "${UNDER[@]}" "clblast_test_$r")
    failed=$(echo "$native" | grep -E '^[1-9][0-9]* test\(s\) failed')
    if [ "$native" = "$crane" ] && [ -z "$failed" ] &&
       echo "$native" | grep -q '^exit 0$'; then
        echo "same   $r: $(echo "$native" | grep -c 'Starting tests') routines," \
             "$(echo "$native" | grep 'passed' |
                awk '{s += $1} END {print s}') cases passed"
    else
        ok=0
        echo "DIFFER $r (or failed natively):"
        diff <(echo "$native") <(echo "$crane") | sed 's/^/    /' | head -20
        [ -n "$failed" ] && echo "    natively: $failed"
    fi
    mode_proxy_alive || exit 1
done
[ "$MODE" = switch ] && { mode_switches || ok=0; }
[ "$ok" -eq 1 ]
