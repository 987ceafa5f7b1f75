#!/bin/bash
# A remoted device reports the SVM capabilities crane honours, no more:
# tests/integration/svm_caps (which checks that every capability it is
# told holds, and that what is not told is refused) runs natively, under
# the shim and remoted through a private crane-proxy over the memfd shared
# area, over the unix stream alone (CRANE_SHM_MB=0) and over TCP.  Passes
# when every run passes, the shim reports the vendor's capabilities, and
# each remoted run reports the vendor's coarse-grained bit only
# (docs/remoting.md, "SVM": fine-grained buffers and atomics need the
# program's and the device's bytes to be the same memory, which no
# transport of crane's gives them).
set -u
cd "$(dirname "$0")/../.."

B=${B:-build}
RUN=$B/bin/crane-run
PROXY=$B/bin/crane-proxy
PROG=$B/tests/integration/svm_caps
TMP=$(mktemp -d)
TCP_PID=

. tests/integration/private-proxy.sh
trap '[ -n "$TCP_PID" ] && kill "$TCP_PID" 2>/dev/null; cleanup' EXIT

[ -x "$PROG" ] || fail "$PROG missing (make check builds it)"
start_private_proxy
"$PROXY" --listen tcp:127.0.0.1:0 >"$TMP/tcp.log" 2>&1 &
TCP_PID=$!
PORT=
for _ in $(seq 400); do
    PORT=$(sed -n 's/.*listening on tcp:127.0.0.1:\([0-9]*\).*/\1/p' \
        "$TMP/tcp.log")
    [ -n "$PORT" ] && break
    sleep 0.05
done
[ -n "$PORT" ] || fail "the TCP proxy did not start: $(cat "$TMP/tcp.log")"

# caps MODE CMD...: runs CMD, which must pass; prints its capabilities.
caps() {
    local mode=$1
    shift
    "$@" >"$TMP/out" 2>&1 || fail "$mode: $(grep -v '^CAPS' "$TMP/out" |
        tail -3)"
    grep -q '^PASS svm_caps' "$TMP/out" || fail "$mode: no PASS"
    sed -n 's/^CAPS //p' "$TMP/out"
}
vendor=$(caps native "$PROG") || exit 1
shim=$(caps shim "$RUN" "$PROG") || exit 1
shm=$(caps shm env CRANE_BACKEND="remote:unix:$TMP/proxy.sock" \
    "$RUN" "$PROG") || exit 1
stream=$(caps stream env CRANE_SHM_MB=0 \
    CRANE_BACKEND="remote:unix:$TMP/proxy.sock" "$RUN" "$PROG") || exit 1
tcp=$(caps tcp env CRANE_TLS=none CRANE_BACKEND="remote:tcp:127.0.0.1:$PORT" \
    "$RUN" "$PROG") || exit 1
want=$(printf '0x%x' $((vendor & 0x1)))
echo "vendor $vendor, shim $shim, remoted: shm $shm, stream $stream, tcp $tcp"
[ "$shim" = "$vendor" ] || fail "the shim reports $shim, the vendor $vendor"
for got in "$shm" "$stream" "$tcp"; do
    [ "$got" = "$want" ] || fail "remoted: $got, want $want (of $vendor)"
done
echo "PASS svm-caps"
