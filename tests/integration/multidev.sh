#!/bin/bash
# A program on two devices (tests/programs/multidev: one context over both,
# a context per device, copies between them) on PoCL with two identical
# devices (POCL_DEVICES="pthread pthread"), and each of its devices bound
# to its own twin at every switch, both ways.
#
#   multidev.sh native | shim        run as it is, and under the shim
#   multidev.sh rehome EVERY         re-homed (native to native) before
#       every EVERY-th call: each switch binds device 0:D to 0:D
#   multidev.sh remote               remoted from its start to a proxy
#       with two devices
#   multidev.sh switch EVERY         switched passthrough <-> a proxy with
#       two devices: each way, each device onto its twin, never two onto
#       one
#   multidev.sh proxy-one EVERY      the proxy has one device: both of the
#       program's land on it, and the shim says so (a warning naming the
#       shared device); the program still passes
#   multidev.sh one EVERY            one device (POCL_DEVICES=pthread): two
#       queues of one context and two contexts on it (multidev
#       --one-device), re-homed and switched to a proxy with one device
#       and back; what bench/multigpu/run.sh does on one GPU
set -u
cd "$(dirname "$0")/../.."

B=${B:-build}
. tests/wait.sh
RUN=$B/bin/crane-run
PROXY=$B/bin/crane-proxy
PROG=$B/tests/programs/multidev
PARGS=()
TMP=$(mktemp -d)
PROXY_PID=
export POCL_DEVICES="pthread pthread"

cleanup() {
    [ -n "$PROXY_PID" ] && kill "$PROXY_PID" 2>/dev/null && wait "$PROXY_PID"
    rm -rf "$TMP"
}
trap cleanup EXIT

[ -x "$PROG" ] || { echo "no $PROG (make programs)"; exit 1; }

# start_proxy DEVICES: a proxy on a unix socket whose PoCL has DEVICES.
start_proxy() {
    SOCK=$TMP/proxy.sock
    POCL_DEVICES="$1" "$PROXY" --listen "unix:$SOCK" >"$TMP/proxy.log" 2>&1 &
    PROXY_PID=$!
    wait_until -q 10 -p "$PROXY_PID" -e "$PROXY_PID" -n "crane-proxy listens" \
        -- test -S "$SOCK" && return 0
    echo "crane-proxy did not start:"; cat "$TMP/proxy.log"
    return 1
}

# twins MIN: at least MIN bindings in the shim's log, every one of device
# 0:D onto 0:D, and no two devices sharing one.
twins() {
    local log=$TMP/shim.log n bad
    n=$(grep -c 'devices: device [0-9]*:[0-9]* bound to' "$log")
    bad=$(grep -o 'devices: device [0-9]*:[0-9]* bound to [0-9]*:[0-9]*' \
        "$log" | awk '{ if ($3 != $6) print }' | head -3)
    echo "bindings: $n, onto another device: ${bad:-none}"
    grep 'shares' "$log" | head -3
    [ "$n" -ge "$1" ] && [ -z "$bad" ] && ! grep -q 'shares' "$log"
}

# under ENV...: the program under the shim with ENV, its log in shim.log
# and the re-home report in report.
under() {
    env CRANE_LOG_LEVEL=debug CRANE_LOG_FILE="$TMP/shim.log" \
        CRANE_REHOME_REPORT="$TMP/report" "$@" "$RUN" "$PROG" "${PARGS[@]}"
}

# switched: how many switches worked (the report's rc=0 lines); fails on
# any other than a documented refusal (-16).
switched() {
    local ok bad
    ok=$(grep -c '^rehome.* rc=0 ' "$TMP/report")
    bad=$(grep '^rehome' "$TMP/report" | grep -v ' rc=0 ' | grep -vc ' rc=-16 ')
    echo "switches: $ok worked, $bad failed"
    [ "$bad" -eq 0 ] && [ "$ok" -ge 1 ]
}

case "${1:-}" in
native)
    "$PROG"
    ;;
shim)
    "$RUN" "$PROG"
    ;;
rehome)
    under CRANE_REHOME_EVERY="$2" || exit 1
    switched && twins 4
    ;;
remote)
    start_proxy "pthread pthread" || exit 1
    CRANE_BACKEND="remote:unix:$SOCK" "$RUN" "$PROG"
    ;;
switch)
    start_proxy "pthread pthread" || exit 1
    under CRANE_PROXY="unix:$SOCK" CRANE_REHOME_TO=alternate \
        CRANE_REHOME_EVERY="$2" || exit 1
    switched && twins 4 &&
        grep -q 'rc=0 from=native to=remote' "$TMP/report" &&
        grep -q 'rc=0 from=remote to=native' "$TMP/report" &&
        grep -q 'bound to 0:1 on remote' "$TMP/shim.log" &&
        grep -q 'bound to 0:1 on native' "$TMP/shim.log"
    ;;
proxy-one)
    start_proxy pthread || exit 1
    under CRANE_PROXY="unix:$SOCK" CRANE_REHOME_TO=alternate \
        CRANE_REHOME_EVERY="$2" || exit 1
    switched || exit 1
    grep -m1 'shares .* on remote with another' "$TMP/shim.log" ||
        { echo "no warning that two devices share the proxy's one";
          tail -5 "$TMP/shim.log"; exit 1; }
    ;;
one)
    export POCL_DEVICES=pthread
    PARGS=(--one-device)
    under CRANE_REHOME_EVERY="$2" || exit 1
    switched && twins 2 || exit 1
    rm -f "$TMP/report" "$TMP/shim.log"
    start_proxy pthread || exit 1
    under CRANE_PROXY="unix:$SOCK" CRANE_REHOME_TO=alternate \
        CRANE_REHOME_EVERY="$2" || exit 1
    switched && twins 2 &&
        grep -q 'rc=0 from=remote to=native' "$TMP/report"
    ;;
*)
    sed -n '2,24p' "$0"
    exit 2
    ;;
esac
