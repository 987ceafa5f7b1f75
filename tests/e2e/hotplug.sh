#!/bin/sh
# e2e: hot-unplug and re-plug of the stand-in GPU (virtio-rng) through libvirt, with events.
#
# Usage: tests/e2e/hotplug.sh [URI]
# Without URI (or $CRANE_E2E_URI) it starts its own libvirtd instance "hp"
# (tests/e2e/libvirtd.sh) and stops it at the end. Defines and starts a TCG
# domain booting the initramfs guest, waits for the guest's ready marker,
# detaches <rng> alias ua-gpu0 and waits for libvirt's device-removed event
# (and the guest's "CRANE-RNG absent"), re-attaches it and waits for
# device-added (and "CRANE-RNG present"), then shuts the guest down through
# ACPI. Prints timings; exits 0 when every step passed, 1 otherwise.
set -u
. "$(dirname "$0")/lib.sh"

DOM=crane-e2e-hotplug
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


e2e_guest_image || exit 1
if [ -z "$URI" ]; then
    OWN=hp
    T0=$(e2e_now)
    URI=$("$E2E_ROOT/tests/e2e/libvirtd.sh" start "$OWN") || exit 1
    e2e_log "libvirtd $OWN up: $(e2e_since "$T0") s ($URI)"
fi
V="virsh -q -c $URI"

rm -rf "$WORK"
mkdir -p "$WORK"
e2e_domain_xml "$DOM" "$WORK" > "$WORK/domain.xml"
e2e_rng_xml > "$WORK/rng.xml"
$V destroy "$DOM" > /dev/null 2>&1
$V undefine "$DOM" > /dev/null 2>&1
e2e_forget_domains "$URI" "$DOM"
$V define "$WORK/domain.xml" > /dev/null || exit 1

# One event logger for the whole test; steps wait for its lines.
virsh -c "$URI" event --domain "$DOM" --all --loop --timestamp \
    > "$WORK/events.log" 2>&1 &
EVPID=$!

T0=$(e2e_now)
$V start "$DOM" > /dev/null || { fail "start"; exit 1; }
e2e_log "virsh start returned: $(e2e_since "$T0") s"
step "guest ready marker" "$WORK/console.log" '^CRANE-GUEST-READY'
grep -q '^CRANE-PORT org.crane.guest.0' "$WORK/console.log" ||
    fail "guest has no port org.crane.guest.0"
step "guest sees the rng" "$WORK/console.log" '^CRANE-RNG present'
$V dumpxml "$DOM" | grep -q "<alias name='ua-gpu0'/>" || fail "no ua-gpu0 in live XML"

T0=$(e2e_now)
$V detach-device "$DOM" "$WORK/rng.xml" --live > "$WORK/detach.out" 2>&1 ||
    fail "detach-device: $(cat "$WORK/detach.out")"
e2e_log "detach-device returned: $(e2e_since "$T0") s"
step "device-removed event" "$WORK/events.log" "device-removed.*ua-gpu0"
step "guest sees the rng gone" "$WORK/console.log" '^CRANE-RNG absent'
$V dumpxml "$DOM" | grep -q "ua-gpu0" && fail "ua-gpu0 still in live XML"

T0=$(e2e_now)
$V attach-device "$DOM" "$WORK/rng.xml" --live > "$WORK/attach.out" 2>&1 ||
    fail "attach-device: $(cat "$WORK/attach.out")"
e2e_log "attach-device returned: $(e2e_since "$T0") s"
step "device-added event" "$WORK/events.log" "device-added.*ua-gpu0"
# The second "present" line is the re-plug.
step "guest sees the rng again" "$WORK/console.log" '^CRANE-RNG present' 2

T0=$(e2e_now)
$V shutdown "$DOM" > /dev/null || fail "shutdown"
shut_off() { [ "$($V domstate "$DOM" 2>/dev/null)" = "shut off" ]; }
e2e_wait "$WORK/console.log" "$TIMEOUT" shut_off
if [ "$($V domstate "$DOM" 2>/dev/null)" = "shut off" ]; then
    e2e_log "ACPI shutdown: $(e2e_since "$T0") s"
else
    fail "guest did not power off"
fi

if [ $FAILED = 0 ]; then
    e2e_log "hotplug: PASS"
    exit 0
fi
e2e_log "hotplug: FAIL (logs in $WORK)"
exit 1
