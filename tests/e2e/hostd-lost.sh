#!/bin/sh
# e2e: crane-hostd stops with status 1 when its libvirtd goes away, so that the service manager restarts it.
#
# Usage: tests/e2e/hostd-lost.sh
# Starts libvirtd "lost", crane-hostd on it (no GPU, no peers, no HTTP),
# stops that libvirtd, and requires crane-hostd to log the lost connection
# and exit 1 (failing after 15 s in which neither it nor its logs moved);
# then starts libvirtd again and requires a new
# crane-hostd to connect.  Exit 0 PASS, 1 FAIL.
set -u
. "$(dirname "$0")/lib.sh"

NAME=lost
WORK=$E2E_DIR/hostd-lost
PID=""
cleanup() {
    [ -n "$PID" ] && kill "$PID" 2>/dev/null
    "$E2E_ROOT/tests/e2e/libvirtd.sh" stop "$NAME"
}
trap cleanup EXIT
trap 'exit 1' INT TERM
fail() { e2e_log "hostd-lost: FAIL: $*"; exit 1; }

rm -rf "$WORK"
mkdir -p "$WORK"
hostd() {
    "$E2E_ROOT/build/bin/crane-hostd" --uri "$URI" \
        --control "unix:$WORK/hostd.sock" --peer-listen none --peer-key none \
        --http none --history "$WORK/history.db" >> "$WORK/hostd.log" 2>&1 &
    PID=$!
}
URI=$("$E2E_ROOT/tests/e2e/libvirtd.sh" start "$NAME") || exit 1
hostd
e2e_wait_for "$WORK/hostd.log" 'crane-hostd on ' 15 || fail "not up"
T0=$(e2e_now)
"$E2E_ROOT/tests/e2e/libvirtd.sh" stop "$NAME"
wait_until -q 15 -p "$PID" -f "$WORK" -n "crane-hostd exits" -- \
    pid_ended "$PID" || fail "still running after libvirtd stopped"
wait "$PID"
rc=$?
PID=""
[ $rc = 1 ] || fail "exit status $rc, expected 1"
grep -q 'connection .* lost' "$WORK/hostd.log" || fail "no 'connection lost' line"
e2e_log "crane-hostd exited 1 $(e2e_since "$T0") s after libvirtd stopped"
URI=$("$E2E_ROOT/tests/e2e/libvirtd.sh" start "$NAME") || exit 1
hostd
e2e_wait_for "$WORK/hostd.log" 'crane-hostd on ' 15 2 || fail "restart did not connect"
kill -TERM "$PID"
wait "$PID" || fail "restarted crane-hostd exited $? on SIGTERM"
PID=""
e2e_log "hostd-lost: PASS"
