#!/bin/sh
# Installs the Debian 12 packages crane needs to build and test, if missing.
#
# As root it first runs vmimages/setup-vm-host.sh: QEMU 10 and libvirt 11
# from bookworm-backports (pinned to those packages only), busybox-static
# and the libvirt-qemu user, for the end-to-end VM tests and `make demo`.
# It goes first so that libvirt-dev below is already backports' 11.3.
set -e
if [ "$(id -u)" = 0 ]; then
    "$(dirname "$0")/../vmimages/setup-vm-host.sh"
fi
PKGS="build-essential pkg-config clang libclang-rt-14-dev valgrind
opencl-headers ocl-icd-opencl-dev pocl-opencl-icd clinfo python3-pyopencl
ffmpeg x264 clpeak piglit clblast-tests hashcat python3-pytest python-pyopencl-doc
libprotobuf-c-dev protobuf-c-compiler libuv1-dev libsqlite3-dev libmicrohttpd-dev
libvirt-dev libxml2-dev libxen-dev chromium curl help2man
libgnutls28-dev gnutls-bin libcrypt-dev openssl prometheus
debhelper devscripts lintian fakeroot"
missing=""
for p in $PKGS; do
    dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "ok installed" ||
        missing="$missing $p"
done
if [ -n "$missing" ]; then
    echo "setup: installing$missing"
    export DEBIAN_FRONTEND=noninteractive
    apt-get update -qq
    apt-get install -y -qq --no-install-recommends $missing
fi
