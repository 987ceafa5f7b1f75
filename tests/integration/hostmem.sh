#!/bin/bash
# Mapped pointers in the host-memory region of the shared area
# (shim/hostmem.h, proxy-domain/hostmem.h), through a real crane-proxy on a
# unix socket; tests/integration/hostmem.c checks every byte, this script
# reads both logs to see which transfers went in place.
#   hostmem.sh phases    a 1 MiB region: writes and reads of a mapped
#       buffer's pointer, blocking and not, plain and rect, go in place
#       (neither side
#       copies them: the shim's counters say how many bytes); a map that
#       finds no room left and a range half in, half out of the region
#       take the copying path
#   hostmem.sh off       CRANE_SHM_HOST_MB=0: no region, every byte copied
#   hostmem.sh switch    a buffer mapped all along and one mapped each round,
#       switched native <-> proxy every few calls: maps in the region are
#       carried across switches back (never refused), every byte checked
#   hostmem.sh svm       coarse-grained SVM remoted: its host memory is in
#       the region, its maps and copies go in place (tests/integration/svm)
#   hostmem.sh killed    the proxy killed while rounds go in place: an
#       OpenCL error, never success over wrong bytes
set -u
cd "$(dirname "$0")/../.."
. tests/wait.sh

B=${B:-build}
RUN=$B/bin/crane-run
PROXY=$B/bin/crane-proxy
PROG=$B/tests/integration/hostmem
TMP=$(mktemp -d)
PROXY_PID=

cleanup() {
    [ -n "$PROXY_PID" ] && kill "$PROXY_PID" 2>/dev/null && wait "$PROXY_PID"
    rm -rf "$TMP"
}
trap cleanup EXIT

start_proxy() {
    SOCK=$TMP/proxy.sock
    "$PROXY" --listen "unix:$SOCK" --log-level debug >"$TMP/proxy.log" 2>&1 &
    PROXY_PID=$!
    wait_until -q 10 -p "$PROXY_PID" -e "$PROXY_PID" -n "crane-proxy listens" \
        -- test -S "$SOCK" && return 0
    echo "crane-proxy did not start:"; cat "$TMP/proxy.log"
    return 1
}

# has WHAT PATTERN FILE / hasnt WHAT PATTERN FILE: the log must (not) hold
# a line matching PATTERN.
has() {
    grep -q -- "$2" "$3" || { echo "FAIL: $1: no '$2' in $3"; exit 1; }
}
hasnt() {
    ! grep -q -- "$2" "$3" ||
        { echo "FAIL: $1: '$2' in $3:"; grep -- "$2" "$3" | head -3; exit 1; }
}

export CRANE_LOG_LEVEL=debug CRANE_LOG_FILE=$TMP/shim.log
case "${1:-}" in
phases)
    start_proxy || exit 1
    CRANE_SHM_HOST_MB=1 CRANE_BACKEND="remote:unix:$SOCK" "$RUN" "$PROG" \
        phases 1 || exit 1
    px=$TMP/proxy.log
    has "the proxy took the region" 'mapped pointers in 1 MiB of host' "$px"
    for op in write read; do
        for b in blocking non-blocking; do
            has "a $b $op in place" \
                "$op of 393216 bytes in place in host memory at 0 ($b" "$px"
        done
    done
    for op in write read; do
        has "a rect $op in place" "$op (rect) of 3424 bytes in place" "$px"
    done
    # The heap's map and the range half out: copied, as before.
    hasnt "the map in the heap" 'of 720896 bytes in place' "$px"
    hasnt "the range half out" 'of 65536 bytes in place' "$px"
    has "the heap's map" 'no room for 720896 bytes in the host-memory' \
        "$TMP/shim.log"
    # In place, copied by nobody: 2 maps and 2 unmaps, 2 writes and 2
    # reads of the mapped pointer, 393216 bytes each, and the rectangles'
    # 2048 bytes each way.
    has "the shim's count" "$((8 * 393216 + 2 * 2048)) in place in host" \
        "$TMP/shim.log"
    echo "in place: $(grep -c 'bytes in place in host memory at' "$px")" \
        "transfers; $(grep -o 'bulk bytes: .*' "$TMP/shim.log")"
    ;;
off)
    start_proxy || exit 1
    CRANE_SHM_HOST_MB=0 CRANE_BACKEND="remote:unix:$SOCK" "$RUN" "$PROG" \
        phases 0 || exit 1
    has "a shared area" 'bulk bytes go through' "$TMP/shim.log"
    hasnt "no region" 'mapped pointers' "$TMP/proxy.log"
    hasnt "nothing in place" 'in place in host memory' "$TMP/proxy.log"
    ;;
switch)
    start_proxy || exit 1
    report=$TMP/report
    # Remoted from the start, so that the kept map is in the region.
    CRANE_BACKEND="remote:unix:$SOCK" CRANE_REHOME_TO=alternate \
        CRANE_REHOME_EVERY=7 CRANE_REHOME_REPORT="$report" "$RUN" "$PROG" \
        loop 12 || exit 1
    to_remote=$(grep -c 'rc=0 from=native to=remote' "$report")
    to_native=$(grep -c 'rc=0 from=remote to=native' "$report")
    # The vendor's own maps refuse a switch to the proxy once (shim/map.c);
    # maps in the region never refuse one back, nothing else fails.
    refused_back=$(grep -c 'rc=-16 from=remote to=native' "$report")
    bad=$(grep '^rehome' "$report" | grep -v ' rc=0 ' | grep -vc ' rc=-16 ')
    carried=$(grep -c 'in host memory carried across' "$TMP/shim.log")
    echo "switches: $to_remote to the proxy, $to_native back ($carried maps" \
        "in host memory carried), $refused_back refused back, $bad failed"
    [ "$bad" -eq 0 ] && [ "$refused_back" -eq 0 ] && [ "$to_remote" -ge 2 ] &&
        [ "$to_native" -ge 2 ] && [ "$carried" -ge 1 ] || exit 1
    has "transfers in place" 'bytes in place in host memory at' \
        "$TMP/proxy.log"
    ;;
svm)
    # Coarse-grained SVM (tests/integration/svm.c) remoted: its host
    # memory lives in the region, so its maps, unmaps and copies go in
    # place.
    start_proxy || exit 1
    CRANE_BACKEND="remote:unix:$SOCK" "$RUN" "$B/tests/integration/svm" ||
        exit 1
    has "SVM in place" 'in place in host memory at' "$TMP/shim.log"
    grep -o 'bulk bytes: .*' "$TMP/shim.log"
    ;;
killed)
    start_proxy || exit 1
    out=$TMP/out
    CRANE_BACKEND="remote:unix:$SOCK" "$RUN" "$PROG" loop 100000 \
        >"$out" 2>&1 &
    prog=$!
    going=no
    wait_until -q 60 -p "$prog" -t "$PROXY_PID" -f "$out" -e "$prog" \
        -n "round 2" -- grep -q '^round 2 ok' "$out" && going=yes
    kill -9 "$PROXY_PID"
    wait "$PROXY_PID" 2>/dev/null
    PROXY_PID=
    wait "$prog"
    rc=$?
    echo "program exit $rc (rounds going before the kill: $going):"
    tail -2 "$out"
    has "rounds in place" 'bytes in place in host memory at' "$TMP/proxy.log"
    # An OpenCL error, not bytes that differ.
    [ "$going" = yes ] && [ "$rc" -ne 0 ] && ! grep -q '^PASS' "$out" &&
        grep -q 'FAIL hostmem: .*: error -' "$out" && ! grep -q differ "$out"
    ;;
*)
    echo "usage: hostmem.sh phases|off|switch|svm|killed" >&2
    exit 2
    ;;
esac
