#!/bin/bash
# crane-hostd on a full and then a read-only disk (a small tmpfs of its
# own): every migration it runs meanwhile is kept in memory, shown as
# "history degraded" by crane-hostctl pool, /metrics and /api/pool, and
# written once the disk takes it again; a read-only history does not stop
# it from starting.  Migrations are prepares of a VM without a guest
# channel on libvirt's test driver (refused, rolled back: each one a
# history row with its steps).
#
#   history-disk.sh     exit 0 pass, 1 fail, 77 skip
set -u
cd "$(dirname "$0")/../.."

B=${B:-build}
HOSTD=${HOSTD:-$B/bin/crane-hostd}
CTL=${HOSTCTL:-$B/bin/crane-hostctl}
for f in "$HOSTD" "$CTL"; do
    [ -x "$f" ] || { echo "FAIL: $f not built"; exit 1; }
done
command -v python3 > /dev/null || { echo "skip: python3 missing"; exit 77; }
[ "$(id -u)" = 0 ] || { echo "skip: mounting a tmpfs needs root"; exit 77; }

T=$(mktemp -d /tmp/crane-history-disk.XXXXXX)
M=$T/disk
PID=
cleanup() {
    [ -n "$PID" ] && kill "$PID" 2>/dev/null && wait "$PID" 2>/dev/null
    mountpoint -q "$M" && umount "$M"
    if [ "${KEEP:-0}" = 1 ]; then echo "kept $T"; else rm -rf "$T"; fi
}
trap cleanup EXIT
die() {
    echo "FAIL: $*"
    for f in out err hostd.log; do
        [ -s "$T/$f" ] && { echo "--- $f"; tail -n 30 "$T/$f"; }
    done
    exit 1
}
mkdir "$M"
mount -t tmpfs -o size=2m,mode=0755 tmpfs "$M" 2>/dev/null ||
    { echo "skip: cannot mount a tmpfs here"; exit 77; }

ctl() {
    _want=$1
    shift
    "$CTL" --connect "unix:$T/c.sock" "$@" > "$T/out" 2> "$T/err"
    _rc=$?
    [ "$_rc" = "$_want" ] || die "crane-hostctl $*: exit $_rc, expected $_want"
}
cat > "$T/node.xml" <<XML
<node>
  <domain type='test'>
    <name>nochan</name><memory>65536</memory><os><type>hvm</type></os>
  </domain>
</node>
XML
echo "<rng model='virtio'><backend model='random'>/dev/urandom</backend><alias name='ua-gpu0'/></rng>" > "$T/gpu0.xml"

# until SECONDS CMD...: CMD until it succeeds; fails after SECONDS (the
# daemon retries every 10 s: a bound, not a wait).
until_ok() {
    _end=$(( $(date +%s) + $1 ))
    shift
    until "$@"; do
        [ "$(date +%s)" -lt "$_end" ] || return 1
        kill -0 "$PID" 2>/dev/null || die "crane-hostd exited"
        sleep 0.2
    done
}
start_hostd() {
    : > "$T/hostd.log"
    "$HOSTD" --uri "test://$T/node.xml" --control "unix:$T/c.sock" \
        --peer-listen none --http 127.0.0.1:0 --history "$M/h.db" \
        --host-name host-a --peer-key none --gpu "gpu0 xml:$T/gpu0.xml" \
        >> "$T/hostd.log" 2>&1 &
    PID=$!
    until_ok 60 test -S "$T/c.sock" || die "crane-hostd does not listen"
    PORT=$(sed -n 's/.*http: serving on 127\.0\.0\.1 port \([0-9]*\).*/\1/p' "$T/hostd.log" | tail -1)
    [ -n "$PORT" ] || die "no http port in the log"
}
stop_hostd() {
    kill "$PID"
    wait "$PID"
    _rc=$?
    PID=
    rm -f "$T/c.sock"
    [ $_rc = 0 ] || die "crane-hostd exit $_rc on SIGTERM"
}
# health FIELD VALUE: crane-hostctl pool's history.FIELD is VALUE (JSON).
health_is() {
    "$CTL" --connect "unix:$T/c.sock" pool --json > "$T/out" 2> "$T/err" || return 1
    python3 - "$T/out" "$1" "$2" <<'PY'
import json, sys
h = json.load(open(sys.argv[1])).get("history")
sys.exit(0 if h is not None and json.dumps(h[sys.argv[2]]) == sys.argv[3] else 1)
PY
}
# migrations N: /api/migrations holds N, each rolled back with its steps.
migrations() {
    python3 - "$PORT" "$1" <<'PY'
import json, sys, urllib.request
base = "http://127.0.0.1:%s" % sys.argv[1]
page = json.load(urllib.request.urlopen(base + "/api/migrations"))
ms = page["migrations"]
if page["total"] != int(sys.argv[2]) or len(ms) != int(sys.argv[2]):
    sys.exit(1)
for m in ms:
    assert m["result"] == "rolled-back", m
    one = json.load(urllib.request.urlopen(base + "/api/migrations/" + m["id"]))
    assert len(one["steps"]) >= 1, one
PY
}
metric() {
    python3 - "$PORT" "$1" <<'PY'
import sys, urllib.request
text = urllib.request.urlopen("http://127.0.0.1:%s/metrics" % sys.argv[1]).read().decode()
for line in text.splitlines():
    if line.startswith(sys.argv[2] + " "):
        print(line.split()[1])
PY
}

# --- a full disk --------------------------------------------------------------
start_hostd
ctl 1 prepare nochan
health_is degraded false || die "healthy at start: $(cat "$T/out")"
dd if=/dev/zero of="$M/fill" bs=4k > /dev/null 2>&1
[ "$(df --output=avail "$M" | tail -1)" -lt 8 ] || die "the tmpfs is not full"
for i in 1 2 3; do
    ctl 1 prepare nochan
    grep -q '^result: rolled-back: nochan has no guest channel' "$T/out" ||
        die "prepare on a full disk: $(cat "$T/out")"
done
health_is degraded true || die "not degraded on a full disk: $(cat "$T/out")"
health_is unsaved 3 || die "not 3 kept in memory: $(cat "$T/out")"
grep -q "migration history is degraded" "$T/err" || die "hostctl pool says nothing on stderr: $(cat "$T/err")"
[ "$(metric crane_history_degraded)" = 1 ] || die "/metrics: not degraded"
[ "$(metric crane_history_unsaved_migrations)" = 3 ] || die "/metrics: unsaved"
grep -q 'history degraded' "$T/hostd.log" || die "the log does not say degraded"
# The disk frees up: the retry writes all three, with their steps.
rm -f "$M/fill"
until_ok 60 health_is degraded false || die "still degraded after the disk freed: $(cat "$T/out")"
until_ok 10 migrations 4 || die "/api/migrations lacks what was kept"
[ "$(metric crane_history_degraded)" = 0 ] || die "/metrics: still degraded"
stop_hostd

# --- a read-only disk ---------------------------------------------------------
mount -o remount,ro "$M" || die "cannot make the tmpfs read-only"
start_hostd
grep -q 'history degraded: .* cannot be written' "$T/hostd.log" || die "no loud line for a read-only history"
health_is read_only true || die "not read-only: $(cat "$T/out")"
migrations 4 || die "a read-only history cannot be read"
ctl 1 prepare nochan
health_is unsaved 1 || die "the prepare is not kept: $(cat "$T/out")"
mount -o remount,rw "$M" || die "cannot make the tmpfs writable"
until_ok 60 health_is degraded false || die "still degraded once writable: $(cat "$T/out")"
until_ok 10 migrations 5 || die "/api/migrations lacks the read-only time's migration"
stop_hostd
echo "PASS: history on a full disk (3 kept, written back) and read-only (started, 1 kept, written back)"
