#!/bin/bash
# long-kernel.sh: one real run past the default timeouts: a kernel of
# SECONDS (default 40, twice CRANE_PROXY_TIMEOUT_MS's 20 s) natively,
# remoted, and switched to the proxy and back while it runs (the switch
# waits for it: CRANE_SWITCH_KERNEL_WAIT_MS raised past the kernel), every
# result checked (tests/programs/longkernel); prints each mode's wall time
# and its ratio against native in the same run.
#   bench/remote/long-kernel.sh [SECONDS]          (build/ built, make programs)
set -u
cd "$(dirname "$0")/../.."
s=${1:-40}
tmp=$(mktemp -d)
px=
trap '[ -n "$px" ] && kill "$px" 2>/dev/null; rm -rf "$tmp"' EXIT
build/bin/crane-proxy --listen "unix:$tmp/proxy.sock" >"$tmp/proxy.log" 2>&1 &
px=$!
for _ in $(seq 200); do [ -S "$tmp/proxy.sock" ] && break; sleep 0.1; done
unset CRANE_PROXY_TIMEOUT_MS CRANE_PROXY_KEEPALIVE_MS
run() {  # run NAME CMD...: prints NAME, its seconds, PASS or the failure
    local t0 t1 rc
    t0=$(date +%s.%N)
    "${@:2}" >"$tmp/$1.out" 2>&1
    rc=$?
    t1=$(date +%s.%N)
    echo "$1 $(awk -v a="$t0" -v b="$t1" 'BEGIN { printf "%.1f", b - a }') rc=$rc $(grep -E '^(PASS|FAIL)' \
        "$tmp/$1.out") $(grep -c 'heartbeats keep' "$tmp/$1.out") \
        $(grep -c 'crane_rehome returned 0' "$tmp/$1.out")"
}
{
    run native build/tests/programs/longkernel "$s"
    # The same kernel in every mode: native's calibrated steps.
    export LONGKERNEL_STEPS=$(sed -n 's/.*long kernel (\([0-9]*\) steps) ran.*/\1/p' \
        "$tmp/native.out")
    run remote env CRANE_BACKEND="remote:unix:$tmp/proxy.sock" \
        CRANE_LOG_LEVEL=info build/bin/crane-run \
        build/tests/programs/longkernel "$s"
    run switched env CRANE_PROXY="unix:$tmp/proxy.sock" \
        CRANE_REHOME_TO=alternate CRANE_LOG_LEVEL=info \
        CRANE_SWITCH_KERNEL_WAIT_MS=$(( (s * 3 + 30) * 1000 )) \
        build/bin/crane-run build/tests/programs/longkernel "$s" rehome-back
} >"$tmp/rows"
awk '$1 == "native" { n = $2 } { rows[NR] = $0 } END {
    printf "%-9s %9s %7s  %s\n", "mode", "seconds", "ratio", "result";
    for (i = 1; i <= NR; i++) {
        split(rows[i], f, " ");
        printf "%-9s %9.1f %7.2f  %s %s (heartbeat lines %s, switches %s)\n",
            f[1], f[2], f[2] / n, f[3], f[4] " " f[5], f[6], f[7];
    }
}' "$tmp/rows"
! grep -q 'FAIL\|rc=[1-9]' "$tmp/rows"
