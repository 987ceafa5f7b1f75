#!/bin/bash
# e2e: a real OpenCL program (cl_worker on PoCL, under the crane shim) in a real QEMU guest survives a stop-and-copy migration by crane-hostd and crane-migrate.
#
# Usage: tests/e2e/hostd-opencl.sh [cleanup]
# Builds the OpenCL guest when stale (vmimages/build-clguest.sh:
# build/e2e-vm/clguest, a busybox initramfs plus a read-only ext4 disk
# with crane-guest and crane-proxy installed from their .debs, cl_worker
# and PoCL; the running crane-guestd and cl_worker's libcrane.so are
# checked to be the packaged files),
# starts two libvirtd ("osrc", "odst") and two crane-hostd (src, dst; peers
# on loopback with a fresh key, each with one GPU in its pool: the ua-gpu0
# rng), boots the guest on osrc and waits until cl_worker (run by the
# guest's hook vmimages/clguest/70-cl-worker) is registered with
# crane-guestd and has passed its self-checks. Then, without --live:
#   crane-migrate --p2p --persistent --undefinesource --xml DEST.xml \
#       DOM DESTURI tcp://127.0.0.1
# must exit 0 with result ok and cl_worker's stoppage (parked: its
# OpenCL calls held while PoCL is unloaded, the GPU unplugged, the paused
# VM moved, a GPU plugged in on dst; then PoCL reloaded and every object
# rebuilt). On dst (console-dst.log) cl_worker must go on from where it was,
# stop by itself crane.cl_after iterations after its GPU came back, and
# print PASS: every buffer it reads back matched its CPU model, byte for
# byte, before and after the migration. Both crane-hostd must exit 0 on
# SIGTERM. `cleanup` only stops the two libvirtd instances.
#
# Environment: CRANE_E2E_TIMEOUT (60 s without progress per observed step),
# CRANE_E2E_CL_TIMEOUT (120 s without progress for cl_worker's start),
# CRANE_E2E_CL_MEM (guest MiB, 768), CRANE_E2E_CL_AFTER (iterations on dst
# before it stops, 250), CRANE_E2E_CL_WORDS (buffer words, 262144),
# HOSTD (the crane-hostd binary). Exit 0 pass, 1 fail, 77 skip.
set -u
. "$(dirname "$0")/lib.sh"

TIMEOUT=${CRANE_E2E_TIMEOUT:-60}
CL_TIMEOUT=${CRANE_E2E_CL_TIMEOUT:-120}
MEM=${CRANE_E2E_CL_MEM:-768}
AFTER=${CRANE_E2E_CL_AFTER:-250}
WORDS=${CRANE_E2E_CL_WORDS:-262144}
SRC=osrc
DST=odst
DOM=crane-opencl
PORT0=$(e2e_free_ports 10) || { echo "no free ports"; exit 1; }
B=$E2E_ROOT/build
WORK=$E2E_DIR/hostd-opencl
HOSTD_PIDS=""
EVPIDS=""
FAILED=0
LIBVIRTD=$E2E_ROOT/tests/e2e/libvirtd.sh

case "${1:-}" in
cleanup) "$LIBVIRTD" stop "$SRC"; "$LIBVIRTD" stop "$DST"; exit 0 ;;
"") ;;
*) echo "usage: $0 [cleanup]" >&2; exit 2 ;;
esac

skip() { echo "skip: $*"; exit 77; }
[ "$(id -u)" = 0 ] || skip "needs root (libvirtd and QEMU run as root)"
HOSTD=${HOSTD:-$B/bin/crane-hostd}
for bin in "$HOSTD" "$B/bin/crane-migrate" "$B/bin/cranectl" "$B/tests/guest/cl_worker"; do
    [ -x "$bin" ] || skip "$bin not built"
done
for t in dpkg-buildpackage dh; do
    command -v $t > /dev/null || skip "$t missing (the image's .debs: scripts/setup-debian.sh)"
done
[ -f /etc/OpenCL/vendors/pocl.icd ] ||
    skip "PoCL not installed (pocl-opencl-icd, libpocl2, ocl-icd-libopencl1)"
command -v mkfs.ext4 > /dev/null || skip "mkfs.ext4 missing (e2fsprogs)"

# progress NAME FILE MIN: waits for a CRANE-CL-PROGRESS line with at least
# MIN iterations; sets IT to its count.
progress() {
    if IT=$(e2e_wait_count "$2" CRANE-CL-PROGRESS 3 "$3" "$CL_TIMEOUT"); then
        e2e_log "$1: $(e2e_since "$T0") s ($IT iterations)"
    else
        IT=0
        fail "$1: no $3 iterations within ${CL_TIMEOUT}s"
    fi
}
finish() {
    # Both daemons must stop cleanly on SIGTERM.
    e2e_hostd_stop || fail "a crane-hostd did not stop cleanly (above)"
    e2e_log "whole test: $(e2e_since "$TALL") s"
    if [ $FAILED = 0 ]; then e2e_log "hostd-opencl: PASS"; exit 0; fi
    e2e_log "hostd-opencl: FAIL (logs in $WORK)"
    for f in "$WORK"/hostd-*.log; do
        [ -f "$f" ] && { echo "--- $f"; tail -15 "$f"; }
    done
    for f in "$WORK"/console.log "$WORK"/console-dst.log; do
        [ -f "$f" ] && { echo "--- $f"; grep -v '^CRANE-CL-PROGRESS' "$f" | tail -25; }
    done
    exit 1
}
cleanup() {
    for p in $EVPIDS; do kill "$p" 2>/dev/null; done
    for p in $HOSTD_PIDS; do kill "$p" 2>/dev/null; done
    for p in $HOSTD_PIDS; do wait "$p" 2>/dev/null; done
    for u in "${SURI:-}" "${DURI:-}"; do
        [ -n "$u" ] || continue
        virsh -q -c "$u" destroy "$DOM" > /dev/null 2>&1
        virsh -q -c "$u" undefine "$DOM" > /dev/null 2>&1
    done
    "$LIBVIRTD" stop "$SRC" > /dev/null 2>&1
    "$LIBVIRTD" stop "$DST" > /dev/null 2>&1
}
trap cleanup EXIT
trap 'exit 1' INT TERM

TALL=$(e2e_now)
T0=$TALL
e2e_clguest_image || { e2e_log "FAIL: building $E2E_CLGUEST_VM"; exit 1; }
e2e_log "OpenCL guest image ready: $(e2e_since "$T0") s" \
    "(disk $(du -k "$E2E_CLGUEST_VM/cl-root.img" | cut -f1) KiB)"
T0=$(e2e_now)
SURI=$("$LIBVIRTD" start "$SRC") || exit 1
DURI=$("$LIBVIRTD" start "$DST") || exit 1
e2e_log "libvirtd $SRC and $DST up: $(e2e_since "$T0") s"
VS="virsh -q -c $SURI"
VD="virsh -q -c $DURI"

rm -rf "$WORK"
mkdir -p "$WORK"
head -c 32 /dev/urandom > "$WORK/key"
e2e_rng_xml > "$WORK/rng.xml"

# Each crane-hostd: the rng stand-in as its GPU.  A parked program's
# stoppage includes the whole migration: the resume deadline leaves room
# for PoCL reloading under TCG.
E2E_WORK=$WORK
HOSTD_CONF="prepare_deadline_ms = 30000
resume_deadline_ms = 60000"
e2e_hostd src "$SURI" $PORT0 $((PORT0 + 1)) "$HOSTD_CONF"
e2e_hostd dst "$DURI" $((PORT0 + 2)) $((PORT0 + 3)) "$HOSTD_CONF"
T0=$(e2e_now)
step "crane-hostd src up" "$WORK/hostd-src.log" 'crane-hostd on src'
step "crane-hostd dst up" "$WORK/hostd-dst.log" 'crane-hostd on dst'

e2e_cl_domain_xml "$DOM" "$WORK" "$E2E_CLGUEST_VM" "$MEM" \
    "crane.cl_after=$AFTER crane.cl_words=$WORDS" > "$WORK/domain.xml"
e2e_forget_domains "$SURI" "$DOM"
e2e_forget_domains "$DURI" "$DOM"
$VS define "$WORK/domain.xml" > /dev/null || { fail "define"; finish; }
# The destination XML: libvirt's, without the GPU, with new paths for what
# the source QEMU holds open; the read-only disk stays where it is.
$VS dumpxml --migratable "$DOM" | e2e_dest_xml "$WORK" > "$WORK/dest.xml"
virsh -c "$SURI" event --all --loop --timestamp > "$WORK/events-src.log" 2>&1 &
EVPIDS="$EVPIDS $!"
virsh -c "$DURI" event --all --loop --timestamp > "$WORK/events-dst.log" 2>&1 &
EVPIDS="$EVPIDS $!"

T0=$(e2e_now)
$VS start "$DOM" > /dev/null || { fail "start"; finish; }
C=$WORK/console.log
step "crane-guestd up in the guest" "$C" 'CRANE-GUESTD-UP'
step "cl_worker started" "$C" '^CRANE-CL-STARTED'
step "guest ready on src" "$C" '^CRANE-GUEST-READY'
step "guest sees its GPU" "$C" '^CRANE-RNG present'
step "cl_worker registered with crane-guestd" "$C" '^CRANE-CL-REGISTERED' 1 "$CL_TIMEOUT"
e2e_clguest_packaged "$C" "" CL
progress "cl_worker computing (first progress)" "$C" 1
progress "cl_worker passed two self-checks" "$C" 100
grep -q '^CRANE-CL-RESULT' "$C" && { fail "cl_worker ended on src"; finish; }
IT_SRC=$IT

# The migration: stop-and-copy (no --live), as the default of crane-migrate.
T0=$(e2e_now)
"$B/bin/crane-migrate" --connect "unix:$WORK/src-hostd.sock" \
    --peer "tcp:127.0.0.1:$((PORT0 + 2))" --verbose \
    --p2p --persistent --undefinesource --xml "$WORK/dest.xml" \
    "$DOM" "$DURI" tcp://127.0.0.1 > "$WORK/migrate.out" 2>&1
RC=$?
MIGRATE_S=$(e2e_since "$T0")
e2e_log "crane-migrate exit $RC after $MIGRATE_S s"
sed 's/^/    /' "$WORK/migrate.out"
[ $RC = 0 ] || { fail "crane-migrate exit $RC, expected 0"; finish; }
grep -q '^result: ok' "$WORK/migrate.out" || fail "no 'result: ok'"
grep -q 'offline\|stop-and-copy' "$WORK/migrate.out" ||
    fail "crane-migrate did not say the migration was offline"
STOP=$(sed -n 's/^program *\([0-9]*\) *cl_worker *pre *\([0-9.]*\) ms post *\([0-9.]*\) ms.*/pid \1 pre \2 ms post \3 ms/p' \
    "$WORK/migrate.out")
[ -n "$STOP" ] || fail "no stoppage line of cl_worker (program PID cl_worker pre X ms post Y ms)"
grep -q 'device-removed.*ua-gpu0' "$WORK/events-src.log" || fail "no device-removed on src"
T0=$(e2e_now)
step "device-added on dst" "$WORK/events-dst.log" 'device-added.*ua-gpu0'
CD=$WORK/console-dst.log
step "guest on dst sees its GPU" "$CD" '^CRANE-RNG present'
step "cl_worker sees its GPU back" "$CD" '^CRANE-CL-GPU back'
BACK=$(sed -n 's/^CRANE-CL-GPU back [0-9.]* at \([0-9]*\).*/\1/p' "$CD" | tail -n 1)
progress "cl_worker computing again on dst" "$CD" $((${BACK:-0} + 1))
IT_DST=$IT
# crane-guestd on dst has it back in passthrough (asked while it still runs).
"$B/bin/cranectl" --connect "unix:$WORK/guest0-dst.sock" --timeout 20 status \
    > "$WORK/status-dst.out" 2>&1
sed 's/^/    /' "$WORK/status-dst.out"
grep -q '^phase: *idle' "$WORK/status-dst.out" || fail "guest not idle on dst"
grep -qE '^program +[0-9]+ +cl_worker +passthrough' "$WORK/status-dst.out" ||
    fail "crane-guestd on dst does not list cl_worker in passthrough"
step "cl_worker told to stop after $AFTER more iterations" "$CD" '^CRANE-CL-STOP' 1 "$CL_TIMEOUT"
step "cl_worker ended" "$CD" '^CRANE-CL-RESULT' 1 "$CL_TIMEOUT"
RESULT=$(grep '^CRANE-CL-RESULT' "$CD" | tail -n 1)
e2e_log "$RESULT"
case $RESULT in CRANE-CL-RESULT\ PASS*) ;; *) fail "cl_worker did not pass on dst" ;; esac
grep -q '^CRANE-CL-RESULT' "$C" && fail "cl_worker ended on src too"

[ "$($VD domstate "$DOM" 2>/dev/null)" = running ] || fail "not running on dst"
$VS dominfo "$DOM" > /dev/null 2>&1 && fail "still defined on src"
for port in $((PORT0 + 1)) $((PORT0 + 3)); do
    r=$(e2e_newest_result $port 2>/dev/null)
    [ "$r" = ok ] || fail "history on port $port: '$r', not ok"
done

e2e_log "cl_worker: $IT_SRC iterations on src before the migration," \
    "${BACK:-?} when the GPU came back on dst, $IT_DST at its first progress there, $(echo "$RESULT" | sed -n 's/.*iterations=\([0-9]*\).*/\1/p') in all"
e2e_log "cl_worker stoppage: ${STOP:-none}; crane-migrate $MIGRATE_S s" \
    "($(sed -n 's/^total: //p' "$WORK/migrate.out"), $(sed -n 's/^bytes: //p' "$WORK/migrate.out"))"
finish
