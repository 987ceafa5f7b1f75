#!/bin/sh
# Installs what the end-to-end VM tests need (QEMU 10 and libvirt 11 from bookworm-backports, busybox) on Debian 12.
#
# QEMU and libvirt come from bookworm-backports (QEMU 10.0, libvirt 11.3):
# Debian 12's QEMU 7.2 under TCG corrupts a guest that writes memory while
# it live-migrates (../shared/VM.md), which the live end-to-end test, with
# busy programs in the guest, cannot live with.  The suite is added as
# /etc/apt/sources.list.d/crane-backports.sources and pinned by
# /etc/apt/preferences.d/crane-backports: only qemu-*, libvirt-*,
# libvirt0 and seabios come from it (priority 990); every other package
# stays on bookworm (backports' default priority is 100), so what they
# depend on is taken from bookworm.
#
# Idempotent: writes the two apt files only when they differ, installs only
# missing packages or those older than backports' (Debian 12's QEMU 7.2 and
# libvirt 9.0 are upgraded), creates the libvirt-qemu system user only when
# absent (libvirtd refuses to start without it; normally
# libvirt-daemon-system creates it, which we do not need).
# Not part of `make check`'s needs: the e2e tests skip without it.
# Run as root.
set -eu

# From bookworm-backports (pinned below), with the lowest version wanted.
BPO_PKGS="qemu-system-x86 qemu-utils libvirt-daemon libvirt-daemon-driver-qemu
libvirt-clients libvirt-dev"
QEMU_MIN=1:10.0
LIBVIRT_MIN=11.3
PKGS="$BPO_PKGS busybox-static kmod cpio gzip xz-utils zstd
iproute2 util-linux xmlstarlet socat python3 e2fsprogs strace"
SOURCES=/etc/apt/sources.list.d/crane-backports.sources
PREFS=/etc/apt/preferences.d/crane-backports

if [ "$(id -u)" != 0 ]; then
    echo "setup-vm-host: must run as root" >&2
    exit 1
fi

# write_if_different FILE TEXT
write_if_different() {
    if [ ! -f "$1" ] || [ "$(cat "$1")" != "$2" ]; then
        printf '%s\n' "$2" > "$1"
        echo "setup-vm-host: wrote $1"
    fi
}
write_if_different "$SOURCES" "# crane (vmimages/setup-vm-host.sh): QEMU 10 and libvirt 11 for the VM tests.
Types: deb
URIs: http://deb.debian.org/debian
Suites: bookworm-backports
Components: main
Signed-By: /usr/share/keyrings/debian-archive-keyring.gpg"
write_if_different "$PREFS" "# crane (vmimages/setup-vm-host.sh): only QEMU, libvirt and the firmware
# QEMU 10 wants come from bookworm-backports; every other package stays on
# bookworm (backports' default priority is 100).
Package: qemu-* libvirt-* libvirt0 seabios
Pin: release n=bookworm-backports
Pin-Priority: 990"

version_of() { dpkg-query -W -f='${Version}' "$1" 2>/dev/null || true; }
installed() { dpkg-query -W -f='${Status}' "$1" 2>/dev/null | grep -q 'ok installed'; }
missing=""
for p in $PKGS; do
    installed "$p" || missing="$missing $p"
done
# Installed but older than backports' (Debian 12's QEMU 7.2, libvirt 9.0).
for p in $BPO_PKGS; do
    installed "$p" || continue
    case $p in qemu*) min=$QEMU_MIN ;; *) min=$LIBVIRT_MIN ;; esac
    dpkg --compare-versions "$(version_of "$p")" lt "$min" &&
        missing="$missing $p"
done

if [ -n "$missing" ]; then
    echo "setup-vm-host: installing:$missing"
    export DEBIAN_FRONTEND=noninteractive
    apt-get update -q
    # --no-install-recommends keeps out libvirt-daemon-system (systemd units,
    # default network, apparmor) which we do not want starting anything.
    # shellcheck disable=SC2086
    apt-get install -y -q --no-install-recommends $missing
else
    echo "setup-vm-host: all packages present"
fi

if ! getent group libvirt-qemu >/dev/null; then
    groupadd --system libvirt-qemu
fi
if ! getent passwd libvirt-qemu >/dev/null; then
    useradd --system --no-create-home --home-dir /var/lib/libvirt \
        --shell /usr/sbin/nologin -g libvirt-qemu libvirt-qemu
    echo "setup-vm-host: created user libvirt-qemu"
fi

# The default libvirtd must not be started by anything we installed: the
# tests run their own instances (tests/e2e/libvirtd.sh).
for v in qemu-system-x86_64 libvirtd virsh busybox depmod cpio mkfs.ext4; do
    command -v "$v" >/dev/null || { echo "setup-vm-host: $v missing" >&2; exit 1; }
done
v=$(version_of qemu-system-x86)
dpkg --compare-versions "$v" ge "$QEMU_MIN" ||
    { echo "setup-vm-host: qemu-system-x86 $v is older than $QEMU_MIN" >&2; exit 1; }
v=$(version_of libvirt-daemon)
dpkg --compare-versions "$v" ge "$LIBVIRT_MIN" ||
    { echo "setup-vm-host: libvirt-daemon $v is older than $LIBVIRT_MIN" >&2; exit 1; }
echo "setup-vm-host: ok ($(qemu-system-x86_64 --version | head -1); $(libvirtd --version))"
