#!/bin/bash
# connect.sh: what a program's start costs remoted, --isolation none vs
# tenant: N runs of a short program (tests/programs/introspect: connect,
# handshake, a few dozen queries, disconnect) under crane-run against a
# proxy of each mode, alternately; prints the median seconds per run and
# the memory of a spare worker.
#   bench/remote/connect.sh [N]        (default 15; build/ built)
set -u
cd "$(dirname "$0")/../.."
n=${1:-15}
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
for round in 1 2; do
    for mode in none tenant; do
        sock=$tmp/proxy-$mode-$round.sock
        log=$tmp/proxy-$mode-$round.log
        build/bin/crane-proxy --listen "unix:$sock" --isolation "$mode" \
            >"$log" 2>&1 &
        px=$!
        for _ in $(seq 100); do
            grep -q listening "$log" && break
            sleep 0.1
        done
        : >"$tmp/times"
        for _ in $(seq "$n"); do
            s=$(date +%s.%N)
            CRANE_BACKEND="remote:unix:$sock" build/bin/crane-run \
                build/tests/programs/introspect >/dev/null 2>&1 ||
                echo "connect.sh: a run failed (log $log)" >&2
            e=$(date +%s.%N)
            echo "$e - $s" | bc >>"$tmp/times"
        done
        rss=$(for w in $(pgrep -f "listen unix:$sock.*--worker"); do
                  awk '/VmRSS/ {print $2 " kB"}' "/proc/$w/status"
              done | head -1)
        kill "$px"
        wait "$px"
        echo "$mode round $round: median $(sort -n "$tmp/times" |
            awk '{a[NR]=$1} END {print a[int((NR+1)/2)]}') s per run" \
            "${rss:+(spare worker $rss)}"
    done
done
