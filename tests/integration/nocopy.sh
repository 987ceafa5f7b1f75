#!/bin/bash
# A switch's bytes with no CPU copy (shim/ringstream.c): build/bench/switch
# fills 24 MiB in two device buffers and switches passthrough ->
# crane-proxy -> back over a unix endpoint, whose shared area is made small
# (CRANE_SHM_MB=4: rings of 2 MiB, pieces of 512 KiB) so that each buffer
# goes round the rings many times with several pieces in flight.  Passes
# when every word is right (the program's own check), both switches
# worked, and each moved every streamed byte the no-copy way (the report's
# nocopy= equals its streamed=, all the state); with `nopin`
# (CRANE_SHIM_PIN_RING=0) the same bytes must take the old paths (pinned
# chunks out, the RAM copy back) and none the no-copy way.
#
#   nocopy.sh [nopin]
set -u
cd "$(dirname "$0")/../.."

B=${B:-build}
RUN=$B/bin/crane-run
PROXY=$B/bin/crane-proxy
SWITCH=$B/bench/switch
TMP=$(mktemp -d)
MB=24
PIN=1
[ "${1:-}" = nopin ] && PIN=0

. tests/integration/private-proxy.sh

[ -x "$SWITCH" ] || fail "$SWITCH missing (make bench)"
start_private_proxy

run_bounded -s KILL -q 60 -t "$PROXY_PID" -n "switch" -- \
    env CRANE_PROXY="unix:$TMP/proxy.sock" CRANE_REHOME_TO=alternate \
    CRANE_SOCKET=none CRANE_REHOME_REPORT="$TMP/report" CRANE_SHM_MB=4 \
    CRANE_SHIM_PIN_RING=$PIN CRANE_LOG_FILE="$TMP/shim.log" \
    CRANE_LOG_LEVEL=info \
    "$RUN" "$SWITCH" --mb $MB --buffers 2 >"$TMP/out" 2>&1
rc=$?
cat "$TMP/out" "$TMP/report"
[ $rc -eq 0 ] || fail "switch exited $rc"
awk -v all=$((MB << 20)) -v pin=$PIN '
    function fields(a,   i, kv) {
        for (i = 2; i <= NF; i++) { split($i, kv, "="); a[kv[1]] = kv[2] }
    }
    /^rehome / { n++; delete f; fields(f)
        if (f["rc"] != 0) { print "switch " n " failed"; bad = 1 }
        if (f["transport"] != "shm") {
            print "switch " n ": transport " f["transport"] ", not shm"
            bad = 1 }
        if (pin && (f["streamed"] != all || f["nocopy"] != all)) {
            print "switch " n " streamed " f["streamed"] " and moved " \
                f["nocopy"] " bytes with no CPU copy, want " all; bad = 1 }
        if (!pin && f["nocopy"] != 0) {
            print "switch " n " moved " f["nocopy"] " bytes with no CPU " \
                "copy with CRANE_SHIM_PIN_RING=0"; bad = 1 }
    }
    END { if (n != 2) { print n " switches, want 2"; bad = 1 } exit bad }
' "$TMP/report" || fail "the report does not show the expected path"
echo "PASS nocopy${1:+ $1}"
