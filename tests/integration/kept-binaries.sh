#!/bin/bash
# A compiled + linked program switches back and forth without being
# compiled or linked again (shim/program_cache.c):
# tests/integration/kept_binaries.c switches to a private crane-proxy and
# back ROUNDS times, every word checked on each side; passes when it says
# PASS and every switch's report line shows no program compiled or linked
# (programs_compiled=0) and, for each switch back, every program the
# program expects made from binaries (programs_kept=N).  Modes:
#   kept-binaries.sh         the binaries kept (the default)
#   kept-binaries.sh off     CRANE_BINARY_CACHE=0: each switch back must
#                            compile or link them all (the counters count)
set -u
cd "$(dirname "$0")/../.."

B=${B:-build}
RUN=$B/bin/crane-run
PROXY=$B/bin/crane-proxy
PROG=$B/tests/integration/kept_binaries
TMP=$(mktemp -d)
MODE=${1:-kept}
ROUNDS=${ROUNDS:-3}

. tests/integration/private-proxy.sh

[ -x "$PROG" ] || fail "$PROG missing (make check builds it)"
start_private_proxy

extra=()
case $MODE in
off) extra=(CRANE_BINARY_CACHE=0) ;;
kept) ;;
*) echo "unknown mode $MODE"; exit 2 ;;
esac
env CRANE_PROXY="unix:$TMP/proxy.sock" CRANE_REHOME_TO=alternate \
    CRANE_SOCKET=none CRANE_REHOME_REPORT="$TMP/report" \
    CRANE_LOG_FILE="$TMP/shim.log" CRANE_LOG_LEVEL=info "${extra[@]}" \
    timeout -s KILL 300 "$RUN" "$PROG" "$ROUNDS" >"$TMP/out" 2>&1
rc=$?
cat "$TMP/out" "$TMP/report"
[ $rc -eq 77 ] && { tail -1 "$TMP/out"; exit 77; }
[ $rc -eq 0 ] || fail "kept_binaries exited $rc"
grep -q '^PASS kept_binaries' "$TMP/out" || fail "no PASS from the program"
want=$(sed -n 's/^EXPECT programs=//p' "$TMP/out")
[ -n "$want" ] || fail "the program said nothing to expect"
awk -v want="$want" -v mode="$MODE" -v rounds="$ROUNDS" '
    function fields(a,   i, kv) {
        for (i = 2; i <= NF; i++) { split($i, kv, "="); a[kv[1]] = kv[2] }
    }
    /^rehome / { n++; delete f; fields(f)
        if (f["rc"] != 0) { print "switch " n " failed"; bad = 1 }
        if (!("programs_kept" in f)) { print "no programs_kept="; bad = 1 }
        if (f["to"] == "native") {
            back++
            k = mode == "off" ? 0 : want; c = mode == "off" ? want : 0
            if (f["programs_kept"] != k || f["programs_compiled"] != c) {
                print "switch " n " back: programs_kept=" \
                    f["programs_kept"] " programs_compiled=" \
                    f["programs_compiled"] ", want " k " and " c; bad = 1 }
        } else if (mode != "off" && f["programs_compiled"] != 0) {
            print "switch " n " to the proxy compiled " \
                f["programs_compiled"] " programs"; bad = 1 }
    }
    END { if (n != 2 * rounds || back != rounds) {
              print n " switches, " back " back; want " 2 * rounds; bad = 1 }
          exit bad }
' "$TMP/report" || fail "the report shows programs compiled again"
echo "PASS kept-binaries $MODE"
