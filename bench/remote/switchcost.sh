#!/bin/bash
# switchcost.sh: what frequent switching costs a small program.  Runs each
# test program under crane-run alone, then switched passthrough <-> a
# local crane-proxy every N calls, and prints the wall time added per
# switch and the mean stoppage of each direction (CRANE_REHOME_REPORT),
# with the proxy's objects kept between switches (CRANE_REMOTE_LINGER_MS=
# 5000, the default) and without (0).
#
#   bench/remote/switchcost.sh [EVERY] [PROGRAM...]   (default 37; kernels
#                                                       buffers events images)
set -u
cd "$(dirname "$0")/../.."
B=${B:-build}
every=${1:-37}
shift || true
progs=${*:-kernels buffers events images}
T=$(mktemp -d)
"$B/bin/crane-proxy" --listen "unix:$T/p.sock" >"$T/proxy.log" 2>&1 &
px=$!
trap 'kill $px 2>/dev/null; wait $px 2>/dev/null; rm -rf "$T"' EXIT
for _ in $(seq 100); do [ -S "$T/p.sock" ] && break; sleep 0.05; done

now() { date +%s.%N; }
mean() {  # mean DIRECTION: mean total stoppage (ms) of successful switches
    grep "^rehome .* rc=0 from=$1 " "$T/rep" | awk '{
        for (i = 1; i <= NF; i++) { split($i, kv, "="); if (kv[1] == "total") s += kv[2] }
        n++ } END { if (n) printf "%.2f", s / n * 1e3; else printf "-" }'
}
printf "%-10s %-10s %9s %9s %9s %12s %12s\n" program linger shim_s \
    switched_s switches ms_per_switch "out/back_ms"
for p in $progs; do
    prog=$B/tests/programs/$p
    t0=$(now)
    CRANE_SOCKET=none "$B/bin/crane-run" "$prog" >/dev/null 2>&1 || {
        echo "$p failed under crane-run"; exit 1; }
    t1=$(now)
    base=$(echo "$t1 - $t0" | bc)
    for linger in 5000 0; do
        rm -f "$T/rep"
        env CRANE_REMOTE_LINGER_MS=$linger \
            CRANE_PROXY="unix:$T/p.sock" CRANE_REHOME_TO=alternate \
            CRANE_REHOME_EVERY="$every" CRANE_REHOME_REPORT="$T/rep" \
            CRANE_SOCKET=none "$B/bin/crane-run" "$prog" >/dev/null 2>&1 || {
            echo "$p failed switched"; exit 1; }
        t2=$(now)
        n=$(grep -c '^rehome .* rc=0 ' "$T/rep")
        wall=$(echo "$t2 - $t1" | bc)
        printf "%-10s %-10s %9.3f %9.3f %9d %12.2f %12s\n" "$p" "$linger" \
            "$base" "$wall" "$n" \
            "$(echo "($wall - $base) * 1000 / ($n + ($n == 0))" | bc -l)" \
            "$(mean native)/$(mean remote)"
        t1=$(now)
    done
done
