# Sourced by the third-party program tests: runs a command natively or in
# one of crane's modes, with a private crane-proxy where the mode needs one.
#
#   mode_parse "$@"     sets MODE (shim | remote | switch) and EVERY from
#                       "shim", "remote" or "switch N"; returns 1 otherwise
#   mode_start          starts the proxy the mode needs (trap mode_stop)
#   "${UNDER[@]}" CMD   the command prefix of the mode
#   mode_bounded QUIET NAME CMD...
#                       CMD under tests/wait.sh's run_bounded: ended after
#                       QUIET s in which neither it nor the mode's proxy
#                       used CPU (cap: QUIET x 10)
#   mode_switches       after a switch run: prints the switches and fails
#                       unless at least one reached the proxy and none
#                       failed (-16, a map or a pending user event, is a
#                       documented refusal)
# Needs B (the build folder) set; uses MODE_TMP for the proxy and report.

. tests/wait.sh
RUN=$PWD/${B:-build}/bin/crane-run
PROXY=$PWD/${B:-build}/bin/crane-proxy
MODE_TMP=$(mktemp -d)
PROXY_PID=

mode_parse() {
    MODE=${1:-}
    EVERY=0
    case "$MODE" in
    shim | remote) [ $# -eq 1 ] ;;
    switch) EVERY=${2:-}; [ $# -eq 2 ] && [[ "$EVERY" =~ ^[1-9][0-9]*$ ]] ;;
    *) return 1 ;;
    esac
}

mode_stop() {
    [ -n "$PROXY_PID" ] && kill "$PROXY_PID" 2>/dev/null &&
        wait "$PROXY_PID" 2>/dev/null
    PROXY_PID=
    rm -rf "$MODE_TMP"
}

# Starts a proxy on a unix socket and waits until it accepts connections.
mode_proxy() {
    SOCK=$MODE_TMP/proxy.sock
    "$PROXY" --listen "unix:$SOCK" >"$MODE_TMP/proxy.log" 2>&1 &
    PROXY_PID=$!
    wait_until -q 10 -p "$PROXY_PID" -e "$PROXY_PID" -n "crane-proxy listens" \
        -- test -S "$SOCK" && return 0
    echo "crane-proxy did not start:"; cat "$MODE_TMP/proxy.log"
    return 1
}

mode_bounded() {
    local quiet=$1 name=$2
    shift 2
    run_bounded -q "$quiet" -n "$name" ${PROXY_PID:+-t "$PROXY_PID"} -- "$@"
}

mode_start() {
    REPORT=$MODE_TMP/rehome
    case "$MODE" in
    shim) UNDER=("$RUN") ;;
    remote)
        mode_proxy || return 1
        UNDER=(env CRANE_BACKEND="remote:unix:$SOCK" "$RUN") ;;
    switch)
        mode_proxy || return 1
        UNDER=(env CRANE_PROXY="unix:$SOCK" CRANE_REHOME_TO=alternate
               CRANE_REHOME_EVERY="$EVERY" CRANE_REHOME_REPORT="$REPORT"
               "$RUN") ;;
    esac
}

# Fails when the proxy the mode runs on has died (a tenant's fault must not
# end it).
mode_proxy_alive() {
    [ -z "$PROXY_PID" ] || kill -0 "$PROXY_PID" 2>/dev/null || {
        echo "crane-proxy died:"; tail -5 "$MODE_TMP/proxy.log"; return 1; }
}

mode_switches() {
    local to_remote to_native bad
    to_remote=$(grep -c 'rc=0 from=native to=remote' "$REPORT" 2>/dev/null)
    to_native=$(grep -c 'rc=0 from=remote to=native' "$REPORT" 2>/dev/null)
    bad=$(grep '^rehome' "$REPORT" 2>/dev/null | grep -v ' rc=0 ' |
          grep -vc ' rc=-16 ')
    echo "switches: ${to_remote:-0} to the proxy, ${to_native:-0} back," \
         "${bad:-0} failed"
    grep '^rehome' "$REPORT" 2>/dev/null | grep -v ' rc=0 ' |
        grep -v ' rc=-16 ' | head -3
    [ "${bad:-0}" -eq 0 ] && [ "${to_remote:-0}" -ge 1 ]
}
