#!/bin/bash
# Pre-copy under a running program: build/bench/switch --hot, where a
# thread rewrites a 1 MiB buffer all through both switches (passthrough ->
# crane-proxy -> back) over 16 MiB written once, with CRANE_PRECOPY_ROUNDS
# on.  Passes when every word is right (the program's own check), both
# switches worked, each ran a pre-copy round, the first switch's stop read
# no more than the hot buffer (the cold bytes went while the program ran,
# the bytes it kept rewriting were read again), and each stop wrote no
# more than that into the new side (the rounds wrote the rest into buffers
# made ahead there), streamed there from the old side's device through the
# pinned shared area with no CPU copy (the report's nocopy=; with
# CRANE_SHIM_PIN_RING=0 through the RAM copy, none so).  No timing
# asserted.
set -u
cd "$(dirname "$0")/../.."

B=${B:-build}
RUN=$B/bin/crane-run
PROXY=$B/bin/crane-proxy
SWITCH=$B/bench/switch
TMP=$(mktemp -d)
HOT_MB=1

. tests/integration/private-proxy.sh

[ -x "$SWITCH" ] || fail "$SWITCH missing (make bench)"
start_private_proxy

run_bounded -s KILL -q 60 -t "$PROXY_PID" -n "switch" -- \
    env CRANE_PROXY="unix:$TMP/proxy.sock" CRANE_REHOME_TO=alternate \
    CRANE_SOCKET=none CRANE_REHOME_REPORT="$TMP/report" \
    CRANE_PRECOPY_ROUNDS=4 CRANE_PRECOPY_STOP_KB=0 \
    "$RUN" "$SWITCH" --mb 16 --hot $HOT_MB >"$TMP/out" 2>&1
rc=$?
cat "$TMP/out" "$TMP/report"
[ $rc -eq 0 ] || fail "switch exited $rc"
grep -q '^PASS .* MiB hot over' "$TMP/out" || fail "no PASS"
awk -v hot=$((HOT_MB << 20)) -v pin="${CRANE_SHIM_PIN_RING:-1}" '
    function fields(a,   i, kv) {
        for (i = 2; i <= NF; i++) { split($i, kv, "="); a[kv[1]] = kv[2] }
    }
    /^rehome / { n++; delete f; fields(f)
        if (f["rc"] != 0) { print "switch " n " failed"; bad = 1 }
        if (f["precopy"] < 1) { print "switch " n ": no pre-copy round"; bad = 1 }
        if (n == 1 && f["bytes_out"] > hot) {
            print "switch 1 read " f["bytes_out"] " bytes at the stop, more " \
                "than the hot " hot; bad = 1 }
        # The new side had the context ahead (the proxy: made by the
        # pre-copy; the vendor: by prewarm): the rounds wrote into it, the
        # stop only what it read.
        # What the stop moved went device -> shared area -> the buffer
        # made ahead, with no CPU copy (shim/ringstream.c; pinned area).
        if (pin && (f["nocopy"] != f["bytes_out"] ||
                    f["streamed"] != f["bytes_out"])) {
            print "switch " n " moved " f["nocopy"] " of its " f["bytes_out"] \
                " stop bytes with no CPU copy (streamed " f["streamed"] ")"
            bad = 1 }
        # CRANE_SHIM_PIN_RING=0: through the RAM copy, as before.
        if (!pin && f["nocopy"] != 0) {
            print "switch " n " moved bytes with no CPU copy, pinning off"
            bad = 1 }
        if (f["bytes_back"] > hot || f["precopy_target"] < 1) {
            print "switch " n " wrote " f["bytes_back"] " bytes at the stop " \
                "(target pre-copy " f["precopy_target"] "), want at most " \
                "the hot " hot; bad = 1 }
    }
    END { if (n != 2) { print n " switches, want 2"; bad = 1 } exit bad }
' "$TMP/report" || fail "the report does not show pre-copy at work"
echo "PASS precopy"
