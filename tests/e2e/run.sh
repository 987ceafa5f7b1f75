#!/bin/sh
# Runs end-to-end tests (real libvirtd and QEMU) for make check: skips without root or the VM packages, builds the guest images once.
#
# Usage: tests/e2e/run.sh TEST...
# TEST is a script of tests/e2e (hotplug, migrate, guestd, unplug-ignored)
# or a path, optionally followed by its arguments in the same word
# ("hostd.sh migrate"). Exits 77 (skip) with one line saying why when not root or when
# what vmimages/setup-vm-host.sh installs is missing; otherwise builds the
# guest images when missing or stale (build/e2e-vm: the busybox guest;
# build/e2e-vm/guestd: with crane-guestd; the kernel .deb is downloaded once
# into build/e2e-vm/cache), then runs each TEST in turn, each printing its
# own timed steps and PASS or FAIL. Exits 0 when every TEST passed, 1
# otherwise. One run at a time on a machine (a lock in $CRANE_E2E_DIR):
# the tests share libvirtd instance names and the image folder.
set -u
. "$(dirname "$0")/lib.sh"

[ $# -ge 1 ] || { echo "usage: $0 TEST..." >&2; exit 2; }

skip() { echo "e2e: SKIP: $*"; exit 77; }
[ "$(id -u)" = 0 ] || skip "needs root (libvirtd and QEMU run as root)"
missing=""
for c in qemu-system-x86_64 libvirtd virsh busybox depmod modprobe cpio \
    gzip dpkg-deb apt-get unshare setsid flock; do
    command -v "$c" > /dev/null 2>&1 || missing="$missing $c"
done
[ -z "$missing" ] || skip "missing:$missing (run vmimages/setup-vm-host.sh)"
getent passwd libvirt-qemu > /dev/null ||
    skip "no libvirt-qemu user (run vmimages/setup-vm-host.sh)"
ldd /bin/busybox > /dev/null 2>&1 &&
    skip "/bin/busybox is not busybox-static (run vmimages/setup-vm-host.sh)"

mkdir -p "$E2E_DIR"
exec 9> "$E2E_DIR/run.lock"
if ! flock -n 9; then
    e2e_log "e2e: waiting for another run.sh on this machine"
    flock -w "${CRANE_E2E_LOCK_WAIT:-900}" 9 ||
        { e2e_log "e2e: FAIL: another run holds $E2E_DIR/run.lock"; exit 1; }
fi

for b in crane-guestd cranectl; do
    [ -x "$E2E_ROOT/build/bin/$b" ] ||
        { e2e_log "e2e: FAIL: build/bin/$b missing (make build/bin/$b)"; exit 1; }
done
T0=$(e2e_now)
e2e_guest_image || { e2e_log "e2e: FAIL: building $E2E_VM"; exit 1; }
e2e_guestd_image || { e2e_log "e2e: FAIL: building $E2E_GUESTD_VM"; exit 1; }
e2e_log "e2e: guest images ready: $(e2e_since "$T0") s"

failed=""
for t in "$@"; do
    # "SCRIPT ARGS": a test script that runs one named case.
    name=${t%% *}
    args=""
    [ "$name" = "$t" ] || args=${t#* }
    case $name in
    */*) script=$name ;;
    *) script=$E2E_ROOT/tests/e2e/${name%.sh}.sh ;;
    esac
    if [ ! -x "$script" ]; then
        e2e_log "e2e: FAIL: no test $t ($script)"
        failed="$failed $t"
        continue
    fi
    T0=$(e2e_now)
    e2e_log "e2e: $t"
    # shellcheck disable=SC2086
    if "$script" $args < /dev/null 9>&-; then
        e2e_log "e2e: $t passed in $(e2e_since "$T0") s"
    else
        e2e_log "e2e: $t FAILED after $(e2e_since "$T0") s"
        failed="$failed $t"
    fi
done
[ -z "$failed" ] || { e2e_log "e2e: failed:$failed"; exit 1; }
exit 0
