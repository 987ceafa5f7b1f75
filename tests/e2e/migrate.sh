#!/bin/sh
# e2e: the crane migration path by hand: unplug the stand-in GPU, live-migrate between two libvirtd instances, re-plug.
#
# Usage: tests/e2e/migrate.sh
# Starts libvirtd instances "msrc" and "mdst" (tests/e2e/libvirtd.sh),
# defines and boots the initramfs guest on msrc, detaches <rng> ua-gpu0
# (device-removed event), runs `virsh migrate --live --p2p --persistent
# --undefinesource` with a destination XML whose unix-socket and console
# paths are renamed (the source QEMU still holds the originals), attaches
# the rng on mdst (device-added event, and the guest reports it on its
# console: proof that it runs there), then shuts it down. Prints timings and
# libvirt's job statistics; exits 0 when every step passed, 1 otherwise.
# The guest is idle: Debian 12's QEMU 7.2 may corrupt a guest that writes
# memory during live migration (../shared/VM.md).
set -u
. "$(dirname "$0")/lib.sh"

DOM=crane-e2e-migrate
TIMEOUT=${CRANE_E2E_TIMEOUT:-30}
WORK=$E2E_DIR/$DOM
SRC=msrc
DST=mdst
SURI=""
DURI=""
EVPIDS=""
FAILED=0

cleanup() {
    for p in $EVPIDS; do kill "$p" 2>/dev/null; done
    for u in "$SURI" "$DURI"; do
        [ -n "$u" ] || continue
        virsh -q -c "$u" destroy "$DOM" > /dev/null 2>&1
        virsh -q -c "$u" undefine "$DOM" > /dev/null 2>&1
    done
    "$E2E_ROOT/tests/e2e/libvirtd.sh" stop "$SRC"
    "$E2E_ROOT/tests/e2e/libvirtd.sh" stop "$DST"
}
trap cleanup EXIT
trap 'exit 1' INT TERM

finish() {
    if [ $FAILED = 0 ]; then e2e_log "migrate: PASS"; exit 0; fi
    e2e_log "migrate: FAIL (logs in $WORK, $E2E_DIR/$SRC/log, $E2E_DIR/$DST/log)"
    exit 1
}

e2e_guest_image || exit 1
T0=$(e2e_now)
SURI=$("$E2E_ROOT/tests/e2e/libvirtd.sh" start "$SRC") || exit 1
DURI=$("$E2E_ROOT/tests/e2e/libvirtd.sh" start "$DST") || exit 1
e2e_log "libvirtd $SRC and $DST up: $(e2e_since "$T0") s"
VS="virsh -q -c $SURI"
VD="virsh -q -c $DURI"

rm -rf "$WORK"
mkdir -p "$WORK"
e2e_domain_xml "$DOM" "$WORK" > "$WORK/domain.xml"
e2e_rng_xml > "$WORK/rng.xml"
e2e_forget_domains "$SURI" "$DOM"
e2e_forget_domains "$DURI" "$DOM"
$VS define "$WORK/domain.xml" > /dev/null || exit 1
virsh -c "$SURI" event --domain "$DOM" --all --loop --timestamp > "$WORK/events-src.log" 2>&1 &
EVPIDS="$EVPIDS $!"
virsh -c "$DURI" event --all --loop --timestamp > "$WORK/events-dst.log" 2>&1 &
EVPIDS="$EVPIDS $!"

T0=$(e2e_now)
$VS start "$DOM" > /dev/null || { fail "start"; finish; }
step "guest ready on $SRC" "$WORK/console.log" '^CRANE-GUEST-READY'
step "guest sees the rng" "$WORK/console.log" '^CRANE-RNG present'

T0=$(e2e_now)
$VS detach-device "$DOM" "$WORK/rng.xml" --live > /dev/null || fail "detach-device"
step "device-removed on $SRC" "$WORK/events-src.log" 'device-removed.*ua-gpu0'
step "guest sees the rng gone" "$WORK/console.log" '^CRANE-RNG absent'

# The destination XML: same domain, new paths for what the source holds open.
$VS dumpxml --migratable "$DOM" | e2e_dest_xml "$WORK" > "$WORK/dest.xml"
grep -q guest0-dst.sock "$WORK/dest.xml" || fail "socket path not renamed"

T0=$(e2e_now)
if $VS migrate --live --p2p --persistent --undefinesource --verbose \
        --xml "$WORK/dest.xml" "$DOM" "$DURI" tcp://127.0.0.1 \
        > "$WORK/migrate.out" 2>&1; then
    e2e_log "virsh migrate --live --p2p: $(e2e_since "$T0") s"
else
    fail "virsh migrate: $(tr '\r' '\n' < "$WORK/migrate.out" | tail -3)"
    finish
fi
$VS domjobinfo "$DOM" --completed 2> /dev/null > "$WORK/jobinfo.txt" ||
    $VD domjobinfo "$DOM" --completed > "$WORK/jobinfo.txt" 2>&1
grep -E 'Time elapsed|Total downtime|Data processed|Memory processed' "$WORK/jobinfo.txt" |
    sed 's/^/    /'
[ "$($VD domstate "$DOM" 2>/dev/null)" = running ] || fail "not running on $DST"
$VS dominfo "$DOM" > /dev/null 2>&1 && fail "still defined on $SRC"
[ -S "$WORK/guest0-dst.sock" ] || fail "no guest channel socket on $DST"

T0=$(e2e_now)
$VD attach-device "$DOM" "$WORK/rng.xml" --live > /dev/null || fail "attach-device on $DST"
step "device-added on $DST" "$WORK/events-dst.log" 'device-added.*ua-gpu0'
# The guest now writes to the renamed console: it runs on the destination.
step "guest on $DST sees the rng" "$WORK/console-dst.log" '^CRANE-RNG present'

T0=$(e2e_now)
$VD shutdown "$DOM" > /dev/null || fail "shutdown"
step "guest powered off on $DST" "$WORK/events-dst.log" "'$DOM'.*Stopped"
finish
