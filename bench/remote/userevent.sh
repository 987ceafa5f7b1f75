#!/bin/bash
# userevent.sh: a user event set on one thread, how soon a thread waiting
# on it (and on a marker behind it) wakes, natively and remoted through a
# private crane-proxy on a unix socket, alternately ROUNDS times in one
# run; prints each run's line and the remote/native ratio of the medians
# and means (issue 21's target: remoted within 2x native).  With
# BASE_LIB=PATH (another build's libcrane.so, say main's before a change)
# the same remoted runs with it too, as "base", in the same rounds.
#   bench/remote/userevent.sh [ITERS [ROUNDS]]   (default 60 and 2;
#   build/ built, make bench; CRANE_SHM_MB=0 for the stream alone)
set -u
cd "$(dirname "$0")/../.."
iters=${1:-60}
rounds=${2:-2}
B=${B:-build}
tmp=$(mktemp -d)
px=
trap '[ -n "$px" ] && kill "$px" 2>/dev/null; rm -rf "$tmp"' EXIT
[ -x $B/bench/userevent ] || { echo "userevent.sh: make bench first" >&2; exit 2; }
$B/bin/crane-proxy --listen "unix:$tmp/proxy.sock" >"$tmp/proxy.log" 2>&1 &
px=$!
for _ in $(seq 200); do
    [ -S "$tmp/proxy.sock" ] && break
    sleep 0.05
done
[ -S "$tmp/proxy.sock" ] || { echo "userevent.sh: no proxy" >&2; exit 1; }
for r in $(seq "$rounds"); do
    for what in user marker; do
        $B/bench/userevent --iters "$iters" "$what" |
            sed "s/^RESULT/native/" | tee -a "$tmp/lines"
        CRANE_BACKEND="remote:unix:$tmp/proxy.sock" $B/bin/crane-run \
            $B/bench/userevent --iters "$iters" "$what" |
            sed "s/^RESULT/remote/" | tee -a "$tmp/lines"
        [ -n "${BASE_LIB:-}" ] &&
            CRANE_LIB="$BASE_LIB" CRANE_BACKEND="remote:unix:$tmp/proxy.sock" \
                $B/bin/crane-run $B/bench/userevent --iters "$iters" "$what" |
            sed "s/^RESULT/base/" | tee -a "$tmp/lines"
    done
done
# The ratio of the medians and of the means over every round.
awk '{ k = $2; m[$1, k] += $5; d[$1, k] += $7; n[$1, k]++; keys[k] = 1 }
     END { for (k in keys) for (s = 0; s < 2; s++) {
         side = s ? "base" : "remote"
         if (!n["native", k] || !n[side, k]) continue
         printf "%s: median %.3f ms native, %.3f %s (%.1fx); " \
                "mean %.3f / %.3f ms (%.1fx); target within 2x\n", k,
             d["native", k] / n["native", k], d[side, k] / n[side, k], side,
             d[side, k] / (d["native", k] > 0 ? d["native", k] : 1e-9),
             m["native", k] / n["native", k], m[side, k] / n[side, k],
             m[side, k] / (m["native", k] > 0 ? m["native", k] : 1e-9) } }
' "$tmp/lines"
