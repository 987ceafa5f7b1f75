#!/bin/sh
# Builds the e2e test guest with crane-guestd inside: the busybox initramfs guest plus the guest daemon.
#
# Usage: vmimages/build-guest.sh OUTDIR
# Writes OUTDIR/vmlinuz, OUTDIR/initramfs.img and OUTDIR/kernel-version
# (vmimages/build-initramfs.sh; set CRANE_VM_CACHE to share the kernel
# download with another image). Needs build/bin/crane-guestd and
# build/bin/cranectl (`make build/bin/crane-guestd build/bin/cranectl`;
# CRANE_BIN names another folder, e.g. build-address/bin).
#
# In the guest (files from vmimages/guestd/):
#   /usr/bin/crane-guestd, /usr/bin/cranectl and their shared libraries;
#   /etc/crane/guestd.conf: host = the virtio-serial port
#       org.crane.guest.0, modules = virtio_rng, gpu_type = none,
#       gpu_device = /dev/hwrng /dev/crane-gpu0, control on
#       /run/crane/ctl.sock;
#   /usr/sbin/crane-modprobe: busybox modprobe to load, rmmod to unload;
#   /etc/crane-init.d/50-crane-guestd: starts the daemon in the background
#       before CRANE-GUEST-READY, its log on the serial console, and
#       prints CRANE-GUESTD-UP once it answers (CRANE-GUESTD-FAILED if not).
set -eu

usage() { echo "usage: $0 OUTDIR" >&2; exit 2; }
[ $# -eq 1 ] || usage
HERE=$(cd "$(dirname "$0")" && pwd)
TOP=$(cd "$HERE/.." && pwd)
BIN=${CRANE_BIN:-$TOP/build/bin}
FILES=$HERE/guestd

for p in crane-guestd cranectl; do
    [ -x "$BIN/$p" ] || {
        echo "build-guest: $BIN/$p missing (make build/bin/$p)" >&2
        exit 1
    }
done
[ -x "$TOP/build/tests/guest/fake_shim" ] || {
    echo "build-guest: build/tests/guest/fake_shim missing" \
        "(make build/tests/guest/fake_shim)" >&2
    exit 1
}
# A config the daemon would refuse stops the build, not the guest.
"$BIN/crane-guestd" --config "$FILES/guestd.conf" --check-config > /dev/null

CRANE_INITRAMFS_BINS="$BIN/crane-guestd $BIN/cranectl $TOP/build/tests/guest/fake_shim ${CRANE_INITRAMFS_BINS:-}" \
CRANE_INITRAMFS_FILES="$FILES/guestd.conf:/etc/crane/guestd.conf
$FILES/crane-modprobe:/usr/sbin/crane-modprobe
$FILES/50-crane-guestd:/etc/crane-init.d/50-crane-guestd
$FILES/60-stand-in-programs:/etc/crane-init.d/60-stand-in-programs ${CRANE_INITRAMFS_FILES:-}" \
    "$HERE/build-initramfs.sh" "$1"
