#!/bin/bash
# A tenant's work ends with its tenant (issue 22, item 2): a kernel that
# never ends (tests/integration/spin.c) on a crane-proxy with tenant
# isolation.
#
#   endless.sh killed SPIN PROGRAM   the program is killed while its
#       kernel runs: its worker must be killed by the supervisor
#       (--release-timeout 2), the log saying why, and the proxy then
#       serve PROGRAM (a tests/programs binary that prints PASS)
#   endless.sh max SPIN PROGRAM      --max-kernel-seconds 2: the program's
#       clFinish must fail (spin exits 0 then), its worker be killed with
#       the reason logged, and PROGRAM pass on the same proxy
#
# The waits are bounded generously (a loaded machine); the log lines, not
# the times, say the bounds acted.
set -u
cd "$(dirname "$0")/../.."

B=${B:-build}
RUN=$B/bin/crane-run
PROXY=${CRANE_PROXY:-$B/bin/crane-proxy}
MODE=$1 SPIN=$2 PROG=$3
TMP=$(mktemp -d)
SOCK=$TMP/proxy.sock
PROXY_PID= SPIN_PID=

cleanup() {
    [ -n "$SPIN_PID" ] && kill -9 "$SPIN_PID" 2>/dev/null
    [ -n "$PROXY_PID" ] && kill "$PROXY_PID" 2>/dev/null && wait "$PROXY_PID"
    rm -rf "$TMP"
}
trap cleanup EXIT
fail() {
    echo "not ok - $*"
    tail -n 20 "$TMP/proxy.log"
    [ -f "$TMP/spin.out" ] && tail -n 5 "$TMP/spin.out"
    exit 1
}
# wait_for SECONDS COMMAND...: until COMMAND succeeds, at most SECONDS.
wait_for() {
    local n=$(($1 * 20))
    shift
    for _ in $(seq "$n"); do
        "$@" && return 0
        sleep 0.05
    done
    return 1
}
gone() { ! kill -0 "$1" 2>/dev/null; }

case "$MODE" in
killed) opts=(--release-timeout 2) ;;
max) opts=(--max-kernel-seconds 2) ;;
*) sed -n '2,16p' "$0"; exit 2 ;;
esac
"$PROXY" --listen "unix:$SOCK" --log-level debug "${opts[@]}" \
    >"$TMP/proxy.log" 2>&1 &
PROXY_PID=$!
wait_for 60 grep -q 'listening on' "$TMP/proxy.log" ||
    fail "crane-proxy did not start"

CRANE_BACKEND="remote:unix:$SOCK" "$RUN" "$SPIN" >"$TMP/spin.out" 2>&1 &
SPIN_PID=$!
wait_for 120 grep -q '^spinning' "$TMP/spin.out" || fail "spin never launched"
WORKER=$(sed -n 's/.*(spin pid [0-9]*) handed to worker \([0-9]*\).*/\1/p' \
    "$TMP/proxy.log" | head -1)
[ -n "$WORKER" ] || fail "no worker named for spin"
kill -0 "$WORKER" || fail "worker $WORKER gone before the test"

if [ "$MODE" = killed ]; then
    # Still in its clFinish: the kernel runs.
    gone "$SPIN_PID" && fail "spin ended by itself"
    kill -9 "$SPIN_PID"
    wait "$SPIN_PID" 2>/dev/null
    SPIN_PID=
    start=$(date +%s.%N)
    wait_for 60 gone "$WORKER" || fail "worker $WORKER still there"
    end=$(date +%s.%N)
    echo "# worker $WORKER gone $(echo "$end - $start" | bc) s after its" \
        "program was killed (--release-timeout 2)"
    grep -q "worker $WORKER (tenant [0-9]*, spin pid [0-9]*) killed: .*" \
        "$TMP/proxy.log" || fail "the supervisor did not kill worker $WORKER"
    grep "worker $WORKER .*killed: " "$TMP/proxy.log"
else
    wait_for 60 gone "$SPIN_PID" || fail "spin's clFinish never ended"
    wait "$SPIN_PID"
    rc=$?
    SPIN_PID=
    cat "$TMP/spin.out"
    [ $rc -eq 0 ] || fail "spin exited $rc: its clFinish did not fail"
    grep -q '^clFinish: -' "$TMP/spin.out" || fail "no error from clFinish"
    grep -q 'past --max-kernel-seconds (2 s): ending the tenant' \
        "$TMP/proxy.log" || fail "no log line naming --max-kernel-seconds"
    wait_for 60 gone "$WORKER" || fail "worker $WORKER still there"
    grep -q "worker $WORKER (tenant [0-9]*, spin pid [0-9]*) killed: .*past --max-kernel-seconds" \
        "$TMP/proxy.log" || fail "the supervisor did not kill worker $WORKER"
fi
kill -0 "$PROXY_PID" || fail "crane-proxy ended"
# Another tenant is served, by the same proxy.
CRANE_BACKEND="remote:unix:$SOCK" "$RUN" "$PROG" >"$TMP/prog.out" 2>&1 ||
    { cat "$TMP/prog.out"; fail "$PROG failed after the ended tenant"; }
grep -q '^PASS' "$TMP/prog.out" || fail "$PROG did not pass"
echo "ok - $MODE: the endless tenant ended, the proxy serves on"
