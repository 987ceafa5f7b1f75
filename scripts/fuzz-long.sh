#!/bin/bash
# The release's long fuzz run (tests/fuzz/README.md, "The long run"): RUNS
# executions (default 10^7) of each TARGET (default: proto frame remote),
# each from a private copy of its corpus, JOBS processes per target
# (default 1; each runs RUNS/JOBS, one PoCL device thread each for
# remote).  Prints each target's executions and rate; exits 1 on the
# first finding (its input under OUT, default a fresh mktemp -d), 2 on bad
# usage.  Build the fuzzers first: make fuzz-frame fuzz-proto fuzz-remote.
#
#   scripts/fuzz-long.sh [TARGET...]
#   RUNS=10000000 JOBS=15 OUT=/var/tmp/fuzz scripts/fuzz-long.sh remote
set -u
cd "$(dirname "$0")/.."

RUNS=${RUNS:-10000000}
JOBS=${JOBS:-1}
OUT=${OUT:-$(mktemp -d /tmp/crane-fuzz-XXXXXX)}
[ $# -gt 0 ] || set -- proto frame remote
case "$RUNS$JOBS" in *[!0-9]*) echo "RUNS and JOBS are counts" >&2; exit 2 ;; esac
[ "$JOBS" -ge 1 ] || { echo "JOBS must be at least 1" >&2; exit 2; }
for t in "$@"; do
    bin=build/fuzz/fuzz_$t
    [ -x "$bin" ] || { echo "$bin missing: make fuzz-$t" >&2; exit 2; }
done
for t in "$@"; do
    dir=$OUT/$t
    mkdir -p "$dir/corpus"
    cp tests/fuzz/corpus/"$t"/* "$dir/corpus/" 2>/dev/null
    start=$(date +%s)
    if [ "$JOBS" -eq 1 ]; then
        build/fuzz/fuzz_"$t" -runs="$RUNS" -rss_limit_mb=2048 \
            -print_final_stats=1 -artifact_prefix="$dir/" "$dir/corpus" \
            >"$dir/fuzz-0.log" 2>&1
        rc=$?
    else
        (cd "$dir" && POCL_MAX_PTHREAD_COUNT=1 \
            "$OLDPWD/build/fuzz/fuzz_$t" -jobs="$JOBS" -workers="$JOBS" \
            -runs=$(((RUNS + JOBS - 1) / JOBS)) -rss_limit_mb=2048 \
            -print_final_stats=1 -artifact_prefix="$dir/" corpus \
            >/dev/null 2>&1)
        rc=$?
    fi
    secs=$(($(date +%s) - start))
    runs=$(cat "$dir"/fuzz-*.log 2>/dev/null |
        sed -n 's/^stat::number_of_executed_units: *//p' |
        awk '{ n += $1 } END { print n + 0 }')
    echo "$t: $runs executions in $secs s ($((runs / (secs > 0 ? secs : 1))) a second, $JOBS jobs); logs in $dir"
    if [ $rc -ne 0 ] || ls "$dir"/crash-* "$dir"/leak-* "$dir"/timeout-* \
        "$dir"/oom-* >/dev/null 2>&1; then
        echo "$t: a finding (exit $rc): $(ls "$dir"/crash-* "$dir"/leak-* \
            "$dir"/timeout-* "$dir"/oom-* 2>/dev/null | head -1)"
        exit 1
    fi
    [ "$runs" -ge "$RUNS" ] || { echo "$t: only $runs of $RUNS"; exit 1; }
done
