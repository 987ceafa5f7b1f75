#!/bin/sh
# e2e: a guest that ignores hot-unplug (acpi_mask_gpe=0x01): no device-removed ever; crane-guestd's abort brings the driver back.
#
# Usage: tests/e2e/unplug-ignored.sh [URI]
# Without URI (or $CRANE_E2E_URI) it starts its own libvirtd instance "ui"
# (tests/e2e/libvirtd.sh) and stops it at the end. Boots the crane-guestd
# guest (vmimages/build-guest.sh) with the kernel argument
# acpi_mask_gpe=0x01: QEMU's ACPI PCI hotplug on q35 raises GPE 1 (seen in
# /sys/firmware/acpi/interrupts/gpe01 of a guest without the mask), so the
# masked guest never runs its eject method. This is crane-hostd's "detach
# timeout" by hand: prepare --offline (virtio_rng unloaded),
# detach-device-alias ua-gpu0 (accepted), no device-removed event within
# CRANE_E2E_UNPLUG_WINDOW s (5; a normal unplug takes 0.1-0.2 s), the rng
# still in the live XML; then `cranectl abort`: the module loaded again,
# the guest drives the rng again, phase idle. Also records what libvirt
# answers to a second detach and to an attach while the unplug is pending.
# Exits 0 when every step passed, 1 otherwise.
set -u
. "$(dirname "$0")/lib.sh"

DOM=crane-e2e-unplug-ignored
TIMEOUT=${CRANE_E2E_TIMEOUT:-30}
WINDOW=${CRANE_E2E_UNPLUG_WINDOW:-5}
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
    if [ $FAILED = 0 ]; then e2e_log "unplug-ignored: PASS"; exit 0; fi
    e2e_log "unplug-ignored: FAIL (logs in $WORK)"
    exit 1
}
ctl() { # ctl NAME WANT ARGS...: cranectl over the channel, WORK/NAME.out
    _name=$1 _want=$2
    shift 2
    e2e_ctl "$WORK/guest0.sock" "$WORK/$_name.out" "$_want" "$@" ||
        { fail "cranectl $*: exit status not $_want"; return 1; }
}
expect() { # expect NAME REGEX: a line of WORK/NAME.out matches
    grep -qE "$2" "$WORK/$1.out" || fail "$1: no line matching '$2'"
}

[ -x "$E2E_ROOT/build/bin/cranectl" ] ||
    { e2e_log "FAIL: build/bin/cranectl missing (make build/bin/cranectl)"; exit 1; }
e2e_guestd_image || exit 1
if [ -z "$URI" ]; then
    OWN=ui
    T0=$(e2e_now)
    URI=$("$E2E_ROOT/tests/e2e/libvirtd.sh" start "$OWN") || exit 1
    e2e_log "libvirtd $OWN up: $(e2e_since "$T0") s ($URI)"
fi
V="virsh -q -c $URI"

rm -rf "$WORK"
mkdir -p "$WORK"
e2e_domain_xml "$DOM" "$WORK" "$E2E_GUESTD_VM" "acpi_mask_gpe=0x01" \
    > "$WORK/domain.xml"
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
grep -q '^CRANE-GUESTD-UP' "$WORK/console.log" || { fail "no crane-guestd"; finish; }
step "guest sees the rng" "$WORK/console.log" '^CRANE-RNG present'

ctl prepare 0 prepare --offline || finish
expect prepare '\(phase prepared\)'
T0=$(e2e_now)
step "guest sees the rng gone (driver unloaded)" "$WORK/console.log" '^CRANE-RNG absent'

T0=$(e2e_now)
if $V detach-device-alias "$DOM" ua-gpu0 --live > "$WORK/detach.out" 2>&1; then
    e2e_log "detach-device-alias accepted: $(e2e_since "$T0") s"
else
    fail "detach-device-alias: $(cat "$WORK/detach.out")"
fi
# A window of fixed length: what must not happen is watched for all of it.
if wait_until -q "$WINDOW" -- _e2e_has "$WORK/events.log" 'device-removed.*ua-gpu0' 1; then
    fail "device-removed after $(e2e_since "$T0") s: the guest did not ignore the unplug"
else
    e2e_log "no device-removed within ${WINDOW} s: the unplug is ignored"
fi
$V dumpxml "$DOM" | grep -q "<alias name='ua-gpu0'/>" ||
    fail "ua-gpu0 left the live XML"
# What crane-hostd will meet next (recorded, not required).
$V detach-device-alias "$DOM" ua-gpu0 --live > "$WORK/detach2.out" 2>&1
e2e_log "a second detach-device-alias: exit $?: $(tr '\n' ' ' < "$WORK/detach2.out")"
$V attach-device "$DOM" "$WORK/rng.xml" --live > "$WORK/attach.out" 2>&1
e2e_log "attach-device meanwhile: exit $?: $(tr '\n' ' ' < "$WORK/attach.out")"

# The host gives up on the unplug and aborts: the driver comes back.
ctl abort 0 abort
expect abort '\(phase idle\)'
expect abort '^step +modprobe virtio_rng +ok'
T0=$(e2e_now)
step "guest drives the rng again" "$WORK/console.log" '^CRANE-RNG present' 2
grep -q 'device-removed.*ua-gpu0' "$WORK/events.log" &&
    fail "device-removed came late"
finish
