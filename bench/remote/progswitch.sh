#!/bin/bash
# progswitch.sh: what a switch back to the vendor costs a program built
# with clCompileProgram + clLinkProgram (tests/integration/kept_binaries:
# two units compiled against a header, linked, and a program built from
# source), with its binaries kept (the default) and without
# (CRANE_BINARY_CACHE=0, every program compiled and linked again), in
# alternate runs against one private crane-proxy; prints per mode the
# median stoppage (`total`) and rebuild of the switches back, the programs
# made from binaries and compiled, and the ratio of the stoppages.
#   bench/remote/progswitch.sh [ROUNDS [RUNS]]   (default 5 switches back
#   per run, 2 runs per mode; make check's build of kept_binaries)
# On the H200 (bench/gpu-session.sh first): the issue's 41-52 ms without
# kept binaries against 1-8 ms for other programs.
set -u
cd "$(dirname "$0")/../.."
rounds=${1:-5}
runs=${2:-2}
B=${B:-build}
PROG=$B/tests/integration/kept_binaries
tmp=$(mktemp -d)
px=
trap '[ -n "$px" ] && kill "$px" 2>/dev/null; rm -rf "$tmp"' EXIT
[ -x "$PROG" ] || { echo "progswitch.sh: make $PROG first" >&2; exit 2; }
$B/bin/crane-proxy --listen "unix:$tmp/proxy.sock" >"$tmp/proxy.log" 2>&1 &
px=$!
for _ in $(seq 200); do
    [ -S "$tmp/proxy.sock" ] && break
    sleep 0.05
done
[ -S "$tmp/proxy.sock" ] || { echo "progswitch.sh: no proxy" >&2; exit 1; }
status=0
for r in $(seq "$runs"); do
    for mode in kept off; do
        cache=1
        [ $mode = off ] && cache=0
        env CRANE_PROXY="unix:$tmp/proxy.sock" CRANE_REHOME_TO=alternate \
            CRANE_SOCKET=none CRANE_BINARY_CACHE=$cache \
            CRANE_REHOME_REPORT="$tmp/report-$mode" \
            $B/bin/crane-run "$PROG" "$rounds" >"$tmp/out" 2>&1
        grep -q '^PASS' "$tmp/out" || {
            echo "progswitch.sh: run $r ($mode) failed:"; cat "$tmp/out"
            status=1; }
    done
done
for mode in kept off; do
    [ -s "$tmp/report-$mode" ] || continue
    awk -v mode=$mode '
        function fields(a,   i, kv) {
            for (i = 2; i <= NF; i++) { split($i, kv, "="); a[kv[1]] = kv[2] }
        }
        function median(v, n,   i, j, t) {
            for (i = 1; i <= n; i++) for (j = i + 1; j <= n; j++)
                if (v[j] < v[i]) { t = v[i]; v[i] = v[j]; v[j] = t }
            return n % 2 ? v[(n + 1) / 2] : (v[n / 2] + v[n / 2 + 1]) / 2
        }
        /^rehome / { delete f; fields(f)
            if (f["to"] != "native" || f["rc"] != 0) next
            n++; tot[n] = f["total"] * 1e3; reb[n] = f["rebuild"] * 1e3
            kept += f["programs_kept"]; comp += f["programs_compiled"] }
        END { if (!n) exit
            printf "%s: %d switches back, stoppage median %.3f ms, rebuild " \
                   "%.3f ms; programs from binaries %d, compiled %d\n",
                   mode, n, median(tot, n), median(reb, n), kept, comp
            print "RESULT " mode " " median(tot, n) > "/dev/stderr" }
    ' "$tmp/report-$mode" 2>>"$tmp/medians"
done
awk '$2 == "kept" { k = $3 } $2 == "off" { o = $3 }
     END { if (k > 0 && o > 0)
         printf "switch back: %.3f ms with kept binaries, %.3f ms " \
                "compiling and linking again (%.1fx)\n", k, o, o / k }
' "$tmp/medians"
exit $status
