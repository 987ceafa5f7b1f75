#!/bin/bash
# The first switch to the proxy takes the program's objects made there
# ahead (shim/prebuild.c): tests/integration/prebuild.c switches once to a
# private crane-proxy; passes when every word is right (the program's own
# check), the report's twins= and prebuilt= are what the program expects,
# and the proxy held none of the program's objects at its end (none
# leaked ahead).  Modes:
#   prebuild.sh          no stop: every object made ahead is taken
#   prebuild.sh changes  the switch stops between the programs' twins and
#                        the kernels' (CRANE_TEST_STOP_AT=prebuild) while
#                        the program builds one of them again and makes a
#                        new program and kernels: none of these is taken
#                        from what was made before
#   prebuild.sh off      CRANE_PREBUILD=0: nothing made ahead, none taken
set -u
cd "$(dirname "$0")/../.."

B=${B:-build}
RUN=$B/bin/crane-run
PROXY=$B/bin/crane-proxy
PROG=$B/tests/integration/prebuild
TMP=$(mktemp -d)
MODE=${1:-plain}

. tests/integration/private-proxy.sh

[ -x "$PROG" ] || fail "$PROG missing (make check builds it)"
start_private_proxy

extra=()
case $MODE in
changes) extra=(CRANE_TEST_STOP_AT=prebuild
    CRANE_TEST_STOP_FILE="$TMP/stopped") ;;
off) extra=(CRANE_PREBUILD=0) ;;
plain) ;;
*) echo "unknown mode $MODE"; exit 2 ;;
esac
run_bounded -s KILL -q 60 -t "$PROXY_PID" -n "prebuild" -- \
    env CRANE_PROXY="unix:$TMP/proxy.sock" CRANE_REHOME_TO=remote \
    CRANE_SOCKET=none CRANE_REHOME_REPORT="$TMP/report" \
    CRANE_LOG_FILE="$TMP/shim.log" CRANE_LOG_LEVEL=info "${extra[@]}" \
    "$RUN" "$PROG" >"$TMP/out" 2>&1
rc=$?
cat "$TMP/out" "$TMP/report"
[ $rc -eq 77 ] && { tail -1 "$TMP/out"; exit 77; }
[ $rc -eq 0 ] || fail "prebuild exited $rc"
grep -q '^PASS prebuild' "$TMP/out" || fail "no PASS from the program"
want=$(sed -n 's/^EXPECT //p' "$TMP/out")
[ -n "$want" ] || fail "the program said nothing to expect"
[ "$MODE" = off ] && want="prebuilt=0 twins=0"
awk -v want="$want" '
    function fields(a,   i, kv) {
        for (i = 2; i <= NF; i++) { split($i, kv, "="); a[kv[1]] = kv[2] }
    }
    BEGIN { split(want, w, " ")
            for (i in w) { split(w[i], kv, "="); e[kv[1]] = kv[2] } }
    /^rehome / { n++; delete f; fields(f)
        if (f["rc"] != 0 || f["to"] != "remote") {
            print "switch " n " did not reach the proxy"; bad = 1 }
        for (k in e) if (f[k] != e[k]) {
            print "switch " n ": " k "=" f[k] ", want " e[k]; bad = 1 }
    }
    END { if (n != 1) { print n " switches, want 1"; bad = 1 } exit bad }
' "$TMP/report" || fail "the report does not show the objects made ahead"
[ "$MODE" = changes ] && ! grep -q 'test hook: stopped at prebuild' \
    "$TMP/shim.log" && fail "the switch never stopped at prebuild"
# The program released everything, and had the proxy answer a call after
# its releases: the proxy must hold none of its objects at the end, twins
# made ahead included.
wait_until -q 5 -t "$PROXY_PID" -f "$TMP/proxy.log" -n "tenant ended" -- \
    grep -q 'released [0-9]* objects' "$TMP/proxy.log"
left=$(sed -n 's/.*: released \([0-9]*\) objects.*/\1/p' "$TMP/proxy.log")
[ -n "$left" ] || fail "the proxy never ended the program's tenant"
[ "$left" = 0 ] || fail "$left object(s) left on the proxy at the end"
echo "PASS prebuild $MODE"
