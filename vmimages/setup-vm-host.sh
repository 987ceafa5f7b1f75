#!/bin/sh
# Installs what the end-to-end VM tests need (QEMU, libvirtd, busybox) on Debian 12.
#
# Idempotent: installs only the missing packages, creates the libvirt-qemu
# system user only when absent (libvirtd 9.0 refuses to start without it;
# normally libvirt-daemon-system creates it, which we do not need).
# Not part of scripts/setup-debian.sh: `make check` does not need any of this.
# Run as root.
set -eu

PKGS="qemu-system-x86 qemu-utils libvirt-daemon libvirt-daemon-driver-qemu
libvirt-clients libvirt-dev busybox-static kmod cpio gzip xz-utils zstd
iproute2 util-linux xmlstarlet socat python3"

if [ "$(id -u)" != 0 ]; then
    echo "setup-vm-host: must run as root" >&2
    exit 1
fi

missing=""
for p in $PKGS; do
    if ! dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q 'ok installed'; then
        missing="$missing $p"
    fi
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
for v in qemu-system-x86_64 libvirtd virsh busybox depmod cpio; do
    command -v "$v" >/dev/null || { echo "setup-vm-host: $v missing" >&2; exit 1; }
done
echo "setup-vm-host: ok ($(qemu-system-x86_64 --version | head -1); $(libvirtd --version))"
