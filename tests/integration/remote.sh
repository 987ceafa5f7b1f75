#!/bin/bash
# Remoting tests: the shim's test programs run through a real crane-proxy
# from their start, or switched between passthrough and remoting while they
# run; and a proxy killed under a remoting program.
#
#   remote.sh remote PROGRAM [ARGS]       remoted from the start
#   remote.sh switch EVERY MIN PROGRAM [ARGS]
#       switched native <-> remote before every EVERY-th OpenCL call; at
#       least MIN switches must happen and each must work (or be refused
#       for a documented reason: -16, a map or a pending user event)
#   remote.sh proxy-killed                the proxy dies mid-run: the
#       program must fail with an error, never report PASS on wrong data
set -u
cd "$(dirname "$0")/../.."

B=${B:-build}
RUN=$B/bin/crane-run
PROXY=$B/bin/crane-proxy
TMP=$(mktemp -d)
PROXY_PID=

cleanup() {
    [ -n "$PROXY_PID" ] && kill "$PROXY_PID" 2>/dev/null && wait "$PROXY_PID"
    rm -rf "$TMP"
}
trap cleanup EXIT

# Starts a proxy on a unix socket and waits until it accepts connections.
start_proxy() {
    SOCK=$TMP/proxy.sock
    "$PROXY" --listen "unix:$SOCK" "$@" >"$TMP/proxy.log" 2>&1 &
    PROXY_PID=$!
    for _ in $(seq 200); do
        [ -S "$SOCK" ] && return 0
        kill -0 "$PROXY_PID" 2>/dev/null || break
        sleep 0.05
    done
    echo "crane-proxy did not start:"; cat "$TMP/proxy.log"
    return 1
}

case "${1:-}" in
remote)
    shift
    start_proxy || exit 1
    CRANE_BACKEND="remote:unix:$SOCK" "$RUN" "$@"
    ;;
switch)
    every=$2 min=$3
    shift 3
    start_proxy || exit 1
    report=$TMP/report
    CRANE_PROXY="unix:$SOCK" CRANE_REHOME_TO=alternate \
        CRANE_REHOME_EVERY="$every" CRANE_REHOME_REPORT="$report" \
        "$RUN" "$@" || exit 1
    to_remote=$(grep -c 'rc=0 from=native to=remote' "$report")
    to_native=$(grep -c 'rc=0 from=remote to=native' "$report")
    bad=$(grep '^rehome' "$report" | grep -v ' rc=0 ' | grep -vc ' rc=-16 ')
    echo "switches: $to_remote to the proxy, $to_native back, $bad failed"
    [ "$bad" -eq 0 ] && [ $((to_remote + to_native)) -ge "$min" ] &&
        [ "$to_remote" -ge 1 ]
    ;;
proxy-killed)
    start_proxy || exit 1
    out=$TMP/out
    CRANE_BACKEND="remote:unix:$SOCK" "$RUN" "$B/tests/programs/longrun" \
        1000000 >"$out" 2>&1 &
    prog=$!
    # Kill the proxy once the program is computing through it; a program
    # that never got there tests nothing.
    connected=no
    for _ in $(seq 600); do
        grep -q 'longrun pid [0-9]*): connected' "$TMP/proxy.log" &&
            connected=yes && break
        kill -0 "$prog" 2>/dev/null || break
        sleep 0.05
    done
    kill -9 "$PROXY_PID"
    wait "$PROXY_PID" 2>/dev/null
    PROXY_PID=
    wait "$prog"
    rc=$?
    echo "program exit $rc (connected before the kill: $connected):"
    tail -3 "$out"
    # Errors, not wrong data: the program saw a failing call.
    [ "$connected" = yes ] && [ "$rc" -ne 0 ] && ! grep -q '^PASS' "$out"
    ;;
*)
    sed -n '2,14p' "$0"
    exit 2
    ;;
esac
