# Sourced by the switch tests (nocopy.sh, precopy.sh, prebuild.sh): a
# private crane-proxy on a unix socket in $TMP, killed at exit with $TMP,
# and fail(), which prints the run's files.  Needs TMP and PROXY set.
PROXY_PID=

cleanup() {
    [ -n "$PROXY_PID" ] && kill "$PROXY_PID" 2>/dev/null && wait "$PROXY_PID"
    rm -rf "$TMP"
}
trap cleanup EXIT

fail() {
    echo "FAIL: $*"
    for f in "$TMP/out" "$TMP/report" "$TMP/proxy.log" "$TMP/shim.log"; do
        [ -e "$f" ] && { echo "--- $f"; tail -15 "$f"; }
    done
    exit 1
}

# Starts the proxy (ARGS added) at unix:$TMP/proxy.sock, log in
# $TMP/proxy.log; fails the test if it ends or does not listen (10 s
# without progress, tests/wait.sh).
. tests/wait.sh
start_private_proxy() {
    "$PROXY" --listen "unix:$TMP/proxy.sock" "$@" >"$TMP/proxy.log" 2>&1 &
    PROXY_PID=$!
    wait_until -q 10 -p "$PROXY_PID" -e "$PROXY_PID" -n "crane-proxy listens" \
        -- test -S "$TMP/proxy.sock" && return 0
    fail "crane-proxy did not start"
}
