#!/bin/bash
# Key holders get in through a pre-authentication flood (issue 22, item 1):
# crane-proxy on TCP with TLS-PSK, 120 connections from 10 other loopback
# addresses (half from one) that idle or trickle a TLS handshake and are re-opened inside
# the handshake deadline (tests/proxy/flood.py), while 6 programs holding
# the key connect at once and compute: every one must pass, the flood must
# have run (100+ connections, closed by the proxy), and the proxy's log
# must show both bounds at work (per peer and in all, the oldest closed).
#
#   flood.sh PROGRAM   (a tests/programs binary that prints PASS)
set -u
cd "$(dirname "$0")/../.."

B=${B:-build}
RUN=$B/bin/crane-run
PROXY=${CRANE_PROXY:-$B/bin/crane-proxy}
PROG=$1
TMP=$(mktemp -d)
PROXY_PID= FLOOD_PID=
N=6

cleanup() {
    [ -n "$FLOOD_PID" ] && kill "$FLOOD_PID" 2>/dev/null
    [ -n "$PROXY_PID" ] && kill "$PROXY_PID" 2>/dev/null && wait "$PROXY_PID"
    rm -rf "$TMP"
}
trap cleanup EXIT
fail() {
    echo "not ok - $*"
    tail -n 20 "$TMP/proxy.log"
    exit 1
}

command -v python3 >/dev/null || { echo "skip: no python3 for the flood"; exit 77; }
head -c 32 /dev/urandom >"$TMP/key"
"$PROXY" --listen tcp:127.0.0.1:0 --auth-key "$TMP/key" \
    --pki-dir "$TMP/none" --handshake-timeout 3 \
    --max-unauthenticated-per-peer 8 --spares "$N" >"$TMP/proxy.log" 2>&1 &
PROXY_PID=$!
PORT=
for _ in $(seq 600); do
    PORT=$(sed -n 's/.*listening on tcp:127.0.0.1:\([0-9]*\).*/\1/p' \
        "$TMP/proxy.log")
    [ -n "$PORT" ] && break
    kill -0 "$PROXY_PID" 2>/dev/null || break
    sleep 0.05
done
[ -n "$PORT" ] || fail "crane-proxy did not start"
grep -q 'TLS psk' "$TMP/proxy.log" || fail "no TLS psk"

python3 tests/proxy/flood.py "$PORT" 120 10 2.5 "$TMP/flood" &
FLOOD_PID=$!
# The flood is on once the proxy has closed connections of a peer over
# its bound (127.0.0.2 opens 60, 8 may wait).
for _ in $(seq 600); do
    grep -q 'max-unauthenticated-per-peer' "$TMP/proxy.log" && break
    sleep 0.05
done
grep -q 'max-unauthenticated-per-peer' "$TMP/proxy.log" ||
    fail "the flood never reached the per-peer bound"

for i in $(seq "$N"); do
    CRANE_BACKEND="remote:tcp:127.0.0.1:$PORT" CRANE_AUTH_KEY="$TMP/key" \
        CRANE_PKI_DIR="$TMP/none" "$RUN" "$PROG" >"$TMP/out.$i" 2>&1 &
    eval "P$i=\$!"
done
passed=0
for i in $(seq "$N"); do
    eval "pid=\$P$i"
    if wait "$pid" && grep -q '^PASS' "$TMP/out.$i"; then
        passed=$((passed + 1))
    else
        echo "# program $i failed:"
        tail -n 5 "$TMP/out.$i"
    fi
done
kill -0 "$FLOOD_PID" 2>/dev/null || fail "the flood ended early"
kill "$FLOOD_PID"
wait "$FLOOD_PID"
FLOOD_PID=
cat "$TMP/flood"
connects=$(sed -n 's/connects=\([0-9]*\).*/\1/p' "$TMP/flood")
closed=$(sed -n 's/.*closed_by_proxy=\([0-9]*\).*/\1/p' "$TMP/flood")
per_peer=$(grep -c 'max-unauthenticated-per-peer)' "$TMP/proxy.log")
all=$(grep -c 'in their handshake (--max-unauthenticated)' "$TMP/proxy.log")
echo "# $passed of $N key holders passed; flood: $connects connections," \
    "$closed closed by the proxy; evicted: $per_peer per peer, $all in all"
[ "$passed" -eq "$N" ] || fail "$passed of $N key holders got in"
[ "${connects:-0}" -ge 100 ] || fail "the flood opened only $connects"
[ "${closed:-0}" -ge 1 ] || fail "the proxy closed no flood connection"
[ "$per_peer" -ge 1 ] && [ "$all" -ge 1 ] || fail "a bound never acted"
[ "$(grep -c 'connected' "$TMP/proxy.log")" -ge "$N" ] ||
    fail "fewer than $N tenants connected"
echo "ok - $N of $N key holders computed through the flood"
