#!/bin/bash
# Maps kept for a program's whole run (tests/programs/mapped, x264's
# habit): every switch must happen (none refused), and a switch that is
# refused must say why.
#
#   maps.sh rehome EVERY MIN PROGRAM [ARGS]
#       re-homed onto the vendor before every EVERY-th call: at least MIN
#       re-homes done, none refused or failed, no SWITCH_REFUSE logged
#   maps.sh switch EVERY MIN PROGRAM [ARGS]
#       switched vendor <-> a private crane-proxy: at least MIN switches
#       done, one each way at least, none refused or failed
#   maps.sh refusals PROGRAM [ARGS]
#       with CRANE_OWN_HOST_ALLOC=0 (the vendor's CL_MEM_ALLOC_HOST_PTR
#       memory, which a switch cannot carry): switches are refused while
#       the map lasts; the program still passes, every refused report line
#       has its reason, and the log has one SWITCH_REFUSE line with the
#       same reason for each
set -u
cd "$(dirname "$0")/../.."

B=${B:-build}
RUN=$B/bin/crane-run
PROXY=$B/bin/crane-proxy
# The shim is under test: an ASan build (B=build-address) may have no proxy.
[ -x "$PROXY" ] || PROXY=build/bin/crane-proxy
TMP=$(mktemp -d)
. tests/integration/private-proxy.sh

# counts REPORT: "done refused failed" of its re-home lines.
counts() {
    local done_ refused failed
    done_=$(grep -c '^rehome .* rc=0 ' "$1" || true)
    refused=$(grep -c '^rehome .* rc=-16 ' "$1" || true)
    failed=$(grep '^rehome ' "$1" | grep -v ' rc=0 ' | grep -vc ' rc=-16 ' ||
             true)
    echo "${done_:-0} ${refused:-0} ${failed:-0}"
}

# run ENV... -- PROGRAM [ARGS]: the program under the shim, its output in
# $TMP/out, its report in $TMP/report, its log in $TMP/shim.log.
run() {
    local envs=()
    while [ "$1" != -- ]; do envs+=("$1"); shift; done
    shift
    env CRANE_LOG_LEVEL=debug "${envs[@]}" CRANE_REHOME_REPORT="$TMP/report" \
        CRANE_LOG_FILE="$TMP/shim.log" "$RUN" "$@" >"$TMP/out" 2>&1 ||
        fail "the program failed"
    grep -q '^PASS' "$TMP/out" || fail "the program did not pass"
}

mode=${1:-}
case $mode in
rehome|switch)
    [ $# -ge 4 ] || { echo "usage: maps.sh $mode EVERY MIN PROGRAM" >&2;
                      exit 2; }
    every=$2 min=$3
    shift 3
    if [ "$mode" = switch ]; then
        start_private_proxy
        run CRANE_PROXY="unix:$TMP/proxy.sock" CRANE_REHOME_TO=alternate \
            CRANE_REHOME_EVERY="$every" -- "$@"
    else
        run CRANE_REHOME_EVERY="$every" -- "$@"
    fi
    read -r done_ refused failed <<<"$(counts "$TMP/report")"
    to_remote=$(grep -c '^rehome .* rc=0 from=native to=remote' \
                "$TMP/report" || true)
    to_native=$(grep -c '^rehome .* rc=0 from=remote to=native' \
                "$TMP/report" || true)
    echo "$mode: $done_ done ($to_remote to the proxy, $to_native back)," \
         "$refused refused, $failed failed"
    [ "$failed" -eq 0 ] || fail "$failed switch(es) failed"
    [ "$refused" -eq 0 ] || fail "$refused switch(es) refused"
    ! grep -q SWITCH_REFUSE "$TMP/shim.log" || fail "a refusal was logged"
    [ "$done_" -ge "$min" ] || fail "only $done_ switches, $min wanted"
    # The buffer under a map for writing whole (the staging buffer) moved
    # no bytes: none read at a stop, none sent with its creation on the
    # proxy (once per switch there) - at most switches, since the map
    # lasts from the program's setup to its end.
    unread=$(grep -c 'under maps for writing whole: none of its bytes read' \
             "$TMP/shim.log" || true)
    unsent=$(grep -c 'none of whose bytes are needed: none sent' \
             "$TMP/shim.log" || true)
    echo "buffers mapped whole: $unread stops read none of their bytes," \
         "$unsent creations on the proxy sent none"
    [ "$unread" -ge 1 ] && [ $((2 * unread)) -ge "$done_" ] ||
        fail "stops read a buffer mapped whole"
    if [ "$mode" = switch ]; then
        [ "$to_remote" -ge 1 ] && [ "$to_native" -ge 1 ] ||
            fail "not one switch each way"
        # Portable maps leave the buffer the vendor's: nothing over host
        # memory is made on the proxy.
        [ "${CRANE_OWN_HOST_ALLOC:-1}" = 0 ] ||
            { [ "$unsent" -ge 1 ] && [ $((2 * unsent)) -ge "$to_remote" ]; } ||
            fail "creations on the proxy sent a buffer mapped whole"
    fi
    ;;
refusals)
    shift
    [ $# -ge 1 ] || { echo "usage: maps.sh refusals PROGRAM" >&2; exit 2; }
    run CRANE_OWN_HOST_ALLOC=0 CRANE_REHOME_EVERY=13 -- "$@"
    read -r done_ refused failed <<<"$(counts "$TMP/report")"
    logged=$(grep -c 'SWITCH_REFUSE (busy, -16): ' "$TMP/shim.log" || true)
    unsaid=$(grep '^rehome .* rc=-16 ' "$TMP/report" | grep -vc \
             ' reason="[^"]*mapped into the vendor.s memory' || true)
    echo "refusals: $done_ done, $refused refused ($logged logged," \
         "$unsaid without their reason), $failed failed"
    [ "$failed" -eq 0 ] || fail "$failed switch(es) failed"
    [ "$refused" -ge 1 ] || fail "nothing refused: this proves nothing"
    [ "$unsaid" -eq 0 ] || fail "$unsaid refusal(s) without the reason"
    [ "$logged" -eq "$refused" ] ||
        fail "$refused refusals reported but $logged logged"
    # The log's reason is the report's.
    why=$(grep -m1 '^rehome .* rc=-16 ' "$TMP/report" |
          sed 's/.* reason="\([^"]*\)".*/\1/')
    grep -qF "$why" "$TMP/shim.log" || fail "the log lacks the reason '$why'"
    ;;
*)
    echo "usage: maps.sh rehome|switch EVERY MIN PROGRAM | refusals PROGRAM" >&2
    exit 2
    ;;
esac
echo "PASS maps $mode"
