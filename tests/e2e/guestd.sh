#!/bin/sh
# e2e: crane-guestd in a real guest, driven from the host over its virtio-serial channel as crane-hostd will.
#
# Usage: tests/e2e/guestd.sh [URI]
# Without URI (or $CRANE_E2E_URI) it starts its own libvirtd instance "gd"
# (tests/e2e/libvirtd.sh) and stops it at the end. Boots the guest of
# vmimages/build-guest.sh (crane-guestd with modules = virtio_rng,
# gpu_type = none, gpu_device = /dev/hwrng /dev/crane-gpu0; its log on the
# console) and, with build/bin/cranectl connected to the host end of the
# channel org.crane.guest.0 (the unix socket QEMU listens on):
#   status                       phase idle
#   prepare --offline            virtio_rng unloaded (guest: rng absent)
#   detach-device-alias ua-gpu0  device-removed event
#   attach-device (the rng)      device-added event
#   resume                       virtio_rng loaded, nodes waited for: ok,
#                                phase idle (guest: rng present)
# then the negative: prepare, detach, resume while the GPU is away fails
# after the guest's gpu_wait_ms (5 s) and stays prepared; attach, resume
# again: ok. Prints timings; exits 0 when every step passed, 1 otherwise.
set -u
. "$(dirname "$0")/lib.sh"

DOM=crane-e2e-guestd
TIMEOUT=${CRANE_E2E_TIMEOUT:-30}
URI=${1:-${CRANE_E2E_URI:-}}
OWN=""
WORK=$E2E_DIR/$DOM
EVPID=""
FAILED=0

cleanup() {
    [ -n "$EVPID" ] && kill "$EVPID" 2>/dev/null
    if [ -n "$URI" ]; then
        virsh -q -c "$URI" destroy "$DOM" > /dev/null 2>&1
        virsh -q -c "$URI" undefine "$DOM" > /dev/null 2>&1
    fi
    [ -n "$OWN" ] && "$E2E_ROOT/tests/e2e/libvirtd.sh" stop "$OWN"
}
trap cleanup EXIT
trap 'exit 1' INT TERM

finish() {
    if [ $FAILED = 0 ]; then e2e_log "guestd: PASS"; exit 0; fi
    e2e_log "guestd: FAIL (logs in $WORK: console.log has the daemon's log)"
    exit 1
}
# ctl NAME WANT ARGS...: cranectl over the channel's socket, output in
# WORK/NAME.out; WANT is the exit status wanted (0 done, 1 failed).
ctl() {
    _name=$1 _want=$2
    shift 2
    e2e_ctl "$WORK/guest0.sock" "$WORK/$_name.out" "$_want" "$@" ||
        { fail "cranectl $*: exit status not $_want"; return 1; }
}
expect() { # expect NAME REGEX: a line of WORK/NAME.out matches
    grep -qE "$2" "$WORK/$1.out" || fail "$1: no line matching '$2'"
}
detach() {
    T0=$(e2e_now)
    $V detach-device-alias "$DOM" ua-gpu0 --live > "$WORK/detach.out" 2>&1 ||
        fail "detach-device-alias: $(cat "$WORK/detach.out")"
    step "device-removed event" "$WORK/events.log" "device-removed.*ua-gpu0" "$1"
}
attach() {
    T0=$(e2e_now)
    $V attach-device "$DOM" "$WORK/rng.xml" --live > "$WORK/attach.out" 2>&1 ||
        fail "attach-device: $(cat "$WORK/attach.out")"
    step "device-added event" "$WORK/events.log" "device-added.*ua-gpu0" "$1"
}

[ -x "$E2E_ROOT/build/bin/cranectl" ] ||
    { e2e_log "FAIL: build/bin/cranectl missing (make build/bin/cranectl)"; exit 1; }
e2e_guestd_image || exit 1
if [ -z "$URI" ]; then
    OWN=gd
    T0=$(e2e_now)
    URI=$("$E2E_ROOT/tests/e2e/libvirtd.sh" start "$OWN") || exit 1
    e2e_log "libvirtd $OWN up: $(e2e_since "$T0") s ($URI)"
fi
V="virsh -q -c $URI"

rm -rf "$WORK"
mkdir -p "$WORK"
e2e_domain_xml "$DOM" "$WORK" "$E2E_GUESTD_VM" > "$WORK/domain.xml"
e2e_rng_xml > "$WORK/rng.xml"
$V destroy "$DOM" > /dev/null 2>&1
$V undefine "$DOM" > /dev/null 2>&1
e2e_forget_domains "$URI" "$DOM"
$V define "$WORK/domain.xml" > /dev/null || exit 1
virsh -c "$URI" event --domain "$DOM" --all --loop --timestamp \
    > "$WORK/events.log" 2>&1 &
EVPID=$!

T0=$(e2e_now)
$V start "$DOM" > /dev/null || { fail "start"; finish; }
step "crane-guestd up" "$WORK/console.log" '^CRANE-GUESTD-(UP|FAILED)'
grep -q '^CRANE-GUESTD-UP' "$WORK/console.log" ||
    { fail "$(grep '^CRANE-GUESTD-FAILED' "$WORK/console.log")"; finish; }
step "guest ready marker" "$WORK/console.log" '^CRANE-GUEST-READY'
step "guest sees the rng" "$WORK/console.log" '^CRANE-RNG present'
grep '^CRANE-GUESTD-UP\|^CRANE-GUEST-READY' "$WORK/console.log" | sed 's/^/    /'

# The host end: cranectl connects to the socket QEMU listens on.
ctl status 0 status || finish
expect status '^phase: idle'
grep -q 'host side connected' "$WORK/console.log" ||
    fail "the daemon did not log the host connecting"

ctl prepare 0 prepare --offline
expect prepare '\(phase prepared\)'
expect prepare '^step +modprobe -r virtio_rng +ok'
T0=$(e2e_now)
step "guest sees the rng gone (driver unloaded)" "$WORK/console.log" '^CRANE-RNG absent'
detach 1
attach 1
# Back on the bus, but nothing drives it until the daemon loads the module.
[ "$(grep -c '^CRANE-RNG present' "$WORK/console.log")" = 1 ] ||
    fail "the rng came up before the resume loaded its driver"

ctl resume 0 resume
expect resume '\(phase idle\)'
expect resume '^step +modprobe virtio_rng +ok'
expect resume '^step +wait for the GPU \(device nodes\) +ok'
expect resume '^result: ok'
T0=$(e2e_now)
step "guest sees the rng again (driver loaded)" "$WORK/console.log" '^CRANE-RNG present' 2

# Negative: resume while the GPU is still away. The module loads, its node
# never comes: failed after gpu_wait_ms, the phase stays prepared; once
# the GPU is back, the resume retried succeeds.
ctl prepare2 0 prepare --offline
expect prepare2 '\(phase prepared\)'
T0=$(e2e_now)
step "guest sees the rng gone (driver unloaded)" "$WORK/console.log" '^CRANE-RNG absent' 2
detach 2
ctl resume-nogpu 1 resume
expect resume-nogpu '^result: FAILED.*/dev/crane-gpu0 is missing'
expect resume-nogpu '\(phase prepared\)'
attach 2
T0=$(e2e_now)
step "guest sees the rng (driver already loaded)" "$WORK/console.log" '^CRANE-RNG present' 3
ctl resume2 0 resume
expect resume2 '\(phase idle\)'
ctl status2 0 status
expect status2 '^phase: idle'
expect status2 '^last: resume ok'
finish
