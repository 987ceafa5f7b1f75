#!/bin/bash
# A prepare that meets a long kernel, seen from crane-hostd: a real
# crane-hostd on libvirt's test driver whose VM's guest channel is a
# stand-in crane-guestd (build/tests/hostd-fake-guest) with a program that
# waits for a kernel.  The stand-in serves one connection at a time, as
# QEMU's socket behind a virtio-serial port does: the progress it sends on
# the prepare's own connection (host-daemon/prepare_watch.c) must show
# "pid 4242 (longkernel): waiting for a kernel running for N s" in
# crane-migrate --verbose's lines; the
# refusal's reason must reach crane-migrate's result and exit message; the
# history (/api/migrations/ID) must hold the program's "kernel-wait" step.
#
#   kernel-wait.sh     exit 0 pass, 1 fail, 77 skip
set -u
cd "$(dirname "$0")/../.."
. tests/wait.sh

B=${B:-build}
HOSTD=${HOSTD:-$B/bin/crane-hostd}
MIGRATE=${MIGRATE:-$B/bin/crane-migrate}
GUEST=$B/tests/hostd-fake-guest
for f in "$HOSTD" "$MIGRATE" "$GUEST"; do
    [ -x "$f" ] || { echo "skip: $f not built"; exit 77; }
done
command -v python3 > /dev/null || { echo "skip: python3 missing"; exit 77; }
command -v curl > /dev/null || { echo "skip: curl missing"; exit 77; }

T=$(mktemp -d /tmp/crane-kernel-wait.XXXXXX)
PID=
GPID=
cleanup() {
    [ -n "$PID" ] && kill "$PID" 2>/dev/null && wait "$PID" 2>/dev/null
    [ -n "$GPID" ] && kill "$GPID" 2>/dev/null && wait "$GPID" 2>/dev/null
    if [ "${KEEP:-0}" = 1 ]; then echo "kept $T"; else rm -rf "$T"; fi
}
trap cleanup EXIT
die() {
    echo "FAIL: $*"
    for f in out err hostd.log guest.log; do
        [ -s "$T/$f" ] && { echo "--- $f"; tail -n 30 "$T/$f"; }
    done
    exit 1
}

# A free TCP port for the peer listener (the migration's check asks this
# same daemon as the destination).
PEER_PORT=$(python3 -c 'import socket; s = socket.socket();
s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')

cat > "$T/node.xml" <<XML
<node>
  <domain type='test'>
    <name>holder</name><memory>65536</memory><os><type>hvm</type></os>
    <devices>
      <rng model='virtio'><backend model='random'>/dev/urandom</backend><alias name='ua-gpu0'/></rng>
      <channel type='unix'><source mode='bind' path='$T/chan.sock'/><target type='virtio' name='org.crane.guest.0'/></channel>
    </devices>
  </domain>
</node>
XML
echo "<rng model='virtio'><backend model='random'>/dev/urandom</backend><alias name='ua-gpu0'/></rng>" > "$T/gpu0.xml"
echo "<rng model='virtio'><backend model='random'>/dev/urandom</backend><alias name='ua-gpu1'/></rng>" > "$T/gpu1.xml"
head -c 32 /dev/urandom > "$T/peer.key"

"$GUEST" "$T/chan.sock" "$T/guest.log" 2> "$T/guest.err" &
GPID=$!
"$HOSTD" --uri "test://$T/node.xml" --control "unix:$T/c.sock" \
    --peer-listen "tcp:127.0.0.1:$PEER_PORT" --peer-key "$T/peer.key" \
    --tls none --http 127.0.0.1:0 --history "$T/h.db" --host-name host-a \
    --gpu "gpu0 xml:$T/gpu0.xml" --gpu "gpu1 xml:$T/gpu1.xml" \
    > "$T/hostd.log" 2>&1 &
PID=$!
HTTP_PORT=
serving() {
    HTTP_PORT=$(sed -n 's/.*http: serving on 127\.0\.0\.1 port \([0-9]*\).*/\1/p' \
        "$T/hostd.log")
    [ -n "$HTTP_PORT" ] && [ -S "$T/c.sock" ] && [ -S "$T/chan.sock" ]
}
wait_until -q 10 -p "$PID" -e "$PID" -n "crane-hostd and the guest listen" \
    -- serving
serving || die "crane-hostd or the stand-in guest does not listen"

# The migration: check (this daemon as the destination), then the prepare
# the guest holds while its program waits, refused.
run_bounded -q 180 -p "$PID" -n crane-migrate -- \
    "$MIGRATE" --verbose --connect "unix:$T/c.sock" \
    --peer "tcp:127.0.0.1:$PEER_PORT" holder test:///default \
    > "$T/out" 2> "$T/err"
rc=$?
[ "$rc" = 1 ] || die "crane-migrate exit $rc, expected 1 (rolled back)"

# Said while the prepare waited, from the progress on its own connection.
grep -qE 'pid 4242 \(longkernel\): waiting for a kernel running for [0-9]+ s' \
    "$T/out" || die "no waiting line in crane-migrate's output"
grep -q '^prepare progress 3$' "$T/guest.log" ||
    die "the prepare asked for no progress, or it was not sent"
grep -q '^prepare refused$' "$T/guest.log" || die "the guest saw no prepare"
grep -q '^abort$' "$T/guest.log" || die "the refused prepare was not undone"
# The refusal's reason, in the result and in the one stderr line.
grep -q 'pid 4242 (longkernel): waited [0-9]* s for a kernel running for' \
    "$T/out" || die "the result does not say the refusal's reason"
grep -q 'waited [0-9]* s for a kernel running for' "$T/err" ||
    die "crane-migrate's exit message does not say the reason: $(cat "$T/err")"

ID=$(sed -n 's/.*migration \(m[A-Za-z0-9._-]*\) of holder.*/\1/p' "$T/out" | head -n 1)
[ -n "$ID" ] || die "no migration id in the output"
curl -sf "http://127.0.0.1:$HTTP_PORT/api/migrations/$ID" > "$T/api.json" ||
    die "/api/migrations/$ID"
python3 - "$T/api.json" <<'PY' || die "/api: $(cat "$T/api.json")"
import json, sys
m = json.load(open(sys.argv[1]))
steps = [s for s in m["steps"] if s["phase"] == "kernel-wait"]
assert len(steps) == 1, m["steps"]
s = steps[0]
assert s["pid"] == 4242 and s["program"] == "longkernel", s
# How long the prepare waited for it: within the prepare, a second or more
# (the guest sent three progress frames a second apart while it waited).
p = [x for x in m["steps"] if x["phase"] == "prepare"][0]
assert s["start_offset"] >= p["start_offset"] - 0.001, (s, p)
assert 0.9 <= s["duration"] <= p["duration"] + 0.001, (s, p)
assert m["result"] == "rolled-back", m
assert "waited" in (m["error"] or ""), m
PY
echo "ok: the wait shown, refused with its reason, the step kept"
